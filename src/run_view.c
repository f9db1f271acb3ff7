/* run_view.c — the model, spaces and measurer of a run as every rank builds
 * them (see run_view.h). A view is the whole of what an MPI worker keeps:
 * it times what rank 0 asks and holds no tuner, log or schedule. */
#include "run_view.h"

#include <stdlib.h>
#include <string.h>

#include "dtune/backend.h"
#include "dtune/model_file.h"
#include "dtune/target.h"
#include "dtune/util.h"

int dt_run_view_space_init(const dt_config *cfg, const dt_task *task, dt_space *space,
                           dt_error *err)
{
    bool replay = strcmp(cfg->backend, dt_replay_backend.name) == 0;
    dt_space_opts opts = { .cpu_max_vec = replay ? 16 : 0 };
    return dt_target_space_init_opts(space, task, cfg->target, &opts, err);
}

int dt_run_view_measurer_new(const dt_config *cfg, const char *work_dir, dt_measurer **out,
                             dt_error *err)
{
    const char *name = cfg->backend[0] ? cfg->backend : dt_target_name(cfg->target);
    const dt_backend_i *b = dt_backend_choose(cfg->target, cfg->backend);
    if (!b)
        return dt_error_set(err, DT_ENOTSUP, "backend '%s' is not built into this dtune", name);
    return dt_measurer_new(b, &cfg->measure, work_dir, cfg->seed, out, err);
}

static int open_spaces(const dt_config *cfg, dt_run_view *v, dt_error *err)
{
    int n = v->model->ntasks;
    v->spaces = calloc((size_t)(n > 0 ? n : 1), sizeof *v->spaces);
    if (!v->spaces)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    for (; v->nspaces < n; v->nspaces++) {
        int rc = dt_run_view_space_init(cfg, &v->model->tasks[v->nspaces], &v->spaces[v->nspaces],
                                        err);
        if (rc)
            return rc;
    }
    return 0;
}

int dt_run_view_new(const dt_config *cfg, const char *work_dir, dt_run_view **out,
                    dt_error *err)
{
    *out = NULL;
    dt_run_view *v = calloc(1, sizeof *v);
    if (!v)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    int rc = dt_model_file_load(cfg->model, NULL, NULL, &v->model, err);
    if (rc == 0)
        rc = open_spaces(cfg, v, err);
    if (rc == 0 && work_dir && (rc = dt_mkdir_p(work_dir, err)) == 0)
        rc = dt_run_view_measurer_new(cfg, work_dir, &v->measurer, err);
    if (rc)
        goto fail;
    *out = v;
    return 0;
fail:
    dt_run_view_free(v);
    return rc;
}

void dt_run_view_free(dt_run_view *v)
{
    if (!v)
        return;
    dt_measurer_free(v->measurer);
    for (int k = 0; k < v->nspaces; k++)
        dt_space_free(&v->spaces[k]);
    free(v->spaces);
    dt_model_free(v->model);
    free(v);
}
