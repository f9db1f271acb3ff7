/* target.c — the table of targets (see target.h): one row per target,
 * indexed by dt_target, naming its space templates, backend and
 * measurement process. Everything here reads the rows; nothing else in
 * dtune needs to know which targets exist.
 */
#include "dtune/target.h"

#include <stddef.h>
#include <string.h>

#include "cpu_backend.h"
#include "cuda_backend.h"
#include "cpu_runner.h"
#include "export_internal.h"
#include "dtune/model_file.h"
#include "space_table.h"

static const dt_target_i targets[DT_TARGET_COUNT] = {
    [DT_TARGET_CPU] = {
        .spaces = dt_cpu_space_templates,
        .backend = &dt_cpu_backend,
        .runner_arg = DT_CPU_RUNNER_ARG,
        .runner_main = dt_cpu_runner_main,
        .task_memory = dt_cpu_backend_task_memory,
        .fingerprint = dt_cpu_machine_fingerprint,
        .conditions = dt_cpu_machine_conditions,
        .export_form = &dt_cpu_export,
        .epilogues = true,
    },
    [DT_TARGET_CUDA] = {
        .spaces = dt_cuda_space_templates,
        .backend = &dt_cuda_backend,
        .runner_arg = DT_CUDA_RUNNER_ARG,
        .runner_main = dt_cuda_backend_runner_main,
        .task_memory = dt_cuda_backend_task_memory,
        .fingerprint = dt_cuda_machine_fingerprint,
        .conditions = dt_cuda_machine_conditions,
        .worker_device = dt_cuda_machine_worker_device,
        .export_form = &dt_cuda_export,
    },
};

const dt_target_i *dt_target_get(dt_target id)
{
    return (int)id >= 0 && id < DT_TARGET_COUNT ? &targets[id] : NULL;
}

const char *dt_target_name(dt_target target)
{
    const dt_target_i *t = dt_target_get(target);
    return t ? t->backend->name : "?";
}

const char *dt_target_at(int i)
{
    return i >= 0 && i < DT_TARGET_COUNT ? targets[i].backend->name : NULL;
}

int dt_target_parse(const char *name, dt_target *target)
{
    for (int i = 0; i < DT_TARGET_COUNT; i++) {
        if (strcmp(name, targets[i].backend->name) == 0) {
            *target = (dt_target)i;
            return 0;
        }
    }
    return DT_EINVAL;
}

const dt_target_i *dt_target_for_runner(const char *arg)
{
    for (int i = 0; i < DT_TARGET_COUNT; i++)
        if (targets[i].runner_arg && targets[i].runner_main && strcmp(arg, targets[i].runner_arg) == 0)
            return &targets[i];
    return NULL;
}

/* The target whose devices a run of target with backend measures on, or
 * NULL: a named backend is the own backend of the target named after it. */
static const dt_target_i *device_target(dt_target target, const char *backend)
{
    const dt_target_i *t = dt_target_get(target);
    if (backend && backend[0]) {
        dt_target named;
        t = dt_target_parse(backend, &named) == 0 ? dt_target_get(named) : NULL;
    }
    return t && t->worker_device ? t : NULL;
}

bool dt_target_measures_on_device(dt_target target, const char *backend)
{
    return device_target(target, backend) != NULL;
}

int dt_target_worker_device(dt_target target, const char *backend, int node_rank,
                            bool rank0_on_node)
{
    const dt_target_i *t = device_target(target, backend);
    return t ? t->worker_device(node_rank, rank0_on_node) : -1;
}

void dt_target_task_memory(dt_target target, dt_model_memory *memory)
{
    const dt_target_i *t = dt_target_get(target);
    memset(memory, 0, sizeof *memory);
    if (t && t->task_memory)
        t->task_memory(memory);
}

int dt_target_load_model(const char *path, dt_target target, dt_model **out, dt_error *err)
{
    dt_model_memory memory;
    dt_target_task_memory(target, &memory);
    return dt_model_file_load(path, NULL, &memory, out, err);
}

int dt_target_space_init_opts(dt_space *space, const dt_task *task, dt_target target,
                              const dt_space_opts *opts, dt_error *err)
{
    const dt_target_i *t = dt_target_get(target);
    bool known_kind = (int)task->kind >= 0 && task->kind < DT_OP_KIND_COUNT;
    const dt_space_template *tpl = t && known_kind ? &t->spaces[task->kind] : NULL;
    if (t && !t->epilogues && dt_task_has_epilogue(task)) {
        char parts[64];
        dt_task_epilogue_str(&task->epilogue, parts, sizeof parts);
        return dt_error_set(err, DT_ENOTSUP, "task %s: the %s target does not generate a task's "
                            "epilogue (%s) yet; tune it on the cpu target", task->name,
                            dt_target_name(target), parts);
    }
    return dt_space_build(space, task, target, dt_target_name(target), tpl, opts, err);
}

int dt_target_space_init(dt_space *space, const dt_task *task, dt_target target, dt_error *err)
{
    return dt_target_space_init_opts(space, task, target, NULL, err);
}
