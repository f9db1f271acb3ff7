/* target.h — where kernels run, as one part per target behind one table.
 *
 * A target (cpu, cuda) is a group of files named after it, TARGET_*.c in
 * src/ with their private headers: its knob space (TARGET_space.c), its
 * code generator (TARGET_codegen*.c, the CPU's plans in cpu_plan.c), its
 * measurement backend (TARGET_backend.c, which calls the code generator),
 * the measurement process its backend starts (TARGET_runner.c), the machine
 * it measures on (TARGET_machine.c) and its form of an export
 * (TARGET_export.c). struct dt_target_i holds what the rest of
 * dtune needs of those, like ggml's backend interface: the daemon, the
 * commands and the settings reach a target only through its table, found by
 * its dt_target id or its name, and never switch on which target it is.
 * Adding a target is its files and one row in target.c's table (the
 * backends by name, backend.c, list each target's own from it).
 *
 * A target is named after its backend (dt_backend_i.name), so the name is
 * written once; `backend: replay` (backend.h) measures a synthetic surface
 * on a target's space instead of its own backend.
 */
#ifndef DTUNE_TARGET_H
#define DTUNE_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include "dtune/backend.h"
#include "dtune/error.h"
#include "dtune/model.h"
#include "dtune/space.h"

struct dt_space_template;  /* space_table.h: one op kind's knobs on one target */
struct dt_export_form;     /* export_internal.h: how a target's export is written */

typedef struct dt_target_i {
    /* The knobs and validity of each op kind, DT_OP_KIND_COUNT rows; a row
     * without build has no space on this target. */
    const struct dt_space_template *spaces;
    /* Builds and measures real kernels; its name is the target's. */
    const dt_backend_i *backend;
    /* The measurement process: executables re-run themselves with argv[1]
     * == runner_arg and must then call runner_main (optional: both NULL for
     * a target measured in process). */
    const char *runner_arg;
    int (*runner_main)(int argc, char **argv);
    /* What one task's tensors may take on this target (optional: NULL, or
     * task_bytes left 0, means unknown and unchecked). */
    void (*task_memory)(dt_model_memory *memory);
    /* The fingerprint of the machine this target measures on (machine.h)
     * into buf; device is the ordinal measure.cuda_device names (a target
     * without devices ignores it). Returns 0 or a DT_E* with a message. */
    int (*fingerprint)(int device, char *buf, size_t len, dt_error *err);
    /* The measurement settings its figures depend on beside the machine,
     * as text into buf (dt_machine_key appends them to the fingerprint). */
    void (*conditions)(const dt_measure_params *measure, char *buf, size_t len);
    /* Devices: the ordinal a measurement worker of a cluster run measures
     * on, node_rank and rank0_on_node as dt_cuda_api_worker_device takes them
     * (optional: NULL for a target that measures on the host). */
    int (*worker_device)(int node_rank, bool rank0_on_node);
    /* How the tuned kernels are exported for this target (optional: NULL
     * for a target without an export). */
    const struct dt_export_form *export_form;
    /* Whether its kernels apply a task's epilogue (model.h); a task with
     * one has no space on a target without (DT_ENOTSUP). */
    bool epilogues;
} dt_target_i;

/* The target of a run, a model listing or a database query that names none. */
#define DT_TARGET_DEFAULT DT_TARGET_CPU

/* The table of target id, or NULL when id is none. */
const dt_target_i *dt_target_get(dt_target id);

/* "cpu" / "cuda" ("?" for no target); dt_target_parse returns 0 or DT_EINVAL. */
const char *dt_target_name(dt_target target);
int dt_target_parse(const char *name, dt_target *target);
/* The name of target i, NULL past the last (a dt_name_at_fn). */
const char *dt_target_at(int i);

/* The target whose measurement process argv[1] == arg starts, or NULL;
 * targets without one are skipped. Every executable that measures calls
 * its runner_main with argv when this is not NULL, before anything else. */
const dt_target_i *dt_target_for_runner(const char *arg);

/* Whether a run of target with backend (measure.backend: a backend's name,
 * or NULL or "" for the target's own) measures on a device: the backend is
 * the own backend of a target with devices (worker_device). */
bool dt_target_measures_on_device(dt_target target, const char *backend);

/* The device a measurement worker of a cluster run of target with backend
 * measures on (that target's worker_device), or -1 where the run measures
 * on no device. */
int dt_target_worker_device(dt_target target, const char *backend, int node_rank,
                            bool rank0_on_node);

/* Fills *memory with what one task's tensors may take on target (its
 * table's task_memory; zero, unchecked, when it has none): call it once per
 * command, it may probe a device. */
void dt_target_task_memory(dt_target target, dt_model_memory *memory);

/* dt_model_file_load (a model YAML, or an ONNX network with its own input
 * shape) with target's dt_target_task_memory: a task too large for the
 * target is refused (in a YAML, at its op's file:line:column). */
int dt_target_load_model(const char *path, dt_target target, dt_model **out, dt_error *err);

/* Builds the space of task on target with opts (NULL: every option 0) from
 * the target's row for the task's kind. Returns 0, DT_EINVAL (bad opts),
 * DT_ENOTSUP (no row for the kind, or a task with an epilogue on a target
 * whose kernels apply none: the CUDA target today) or DT_ENOMEM. Free with dt_space_free. */
int dt_target_space_init_opts(dt_space *space, const dt_task *task, dt_target target,
                              const dt_space_opts *opts, dt_error *err);

/* dt_target_space_init_opts with the defaults: the space for this machine. */
int dt_target_space_init(dt_space *space, const dt_task *task, dt_target target,
                         dt_error *err);

#endif
