/* export.h — the tuned kernels of a model as a C library a program links
 * (`dtune export`).
 *
 * An export is a folder that builds with a plain C compiler and make on a
 * machine without dtune: no dtune header or library, only libc and libm
 * (and libgomp when the kernels run on several threads).
 *
 * CPU (target cpu), for a library called NAME (the model's name as a C
 * identifier) and a task called TASK:
 *   kernels/TASK.c      the task's kernel, the source dtune measured
 *                       (cpu_codegen.h), its entry points named NAME_TASK
 *   NAME_kernels.h      the entry points and a table of every kernel
 *                       (NAME_kernels[]: name, kind, shape, geometry,
 *                       tensor sizes, flops, dtune's measured latency)
 *   NAME_kernels.c      that table
 *   NAME_reference.c    NAME_reference: the plain loops every kernel is
 *                       checked against (model.h's operator semantics)
 *   NAME_test.c         checks every kernel against the reference and times
 *                       it as dtune's runner does (one warm-up call, then
 *                       micro-batches of about DT_CPU_RUNNER_AUTO_BATCH_S until
 *                       the CV rule stops; the mean time per call)
 *   Makefile            `make`: libNAME_kernels.a and NAME_test; `make test`
 *
 * Each kernel has three entry points, all tensors fp32 and laid out as
 * model.h says (NCHW / OIHW; [B][M][K] x [B][N][K] -> [B][M][N]):
 *   size_t NAME_TASK_workspace(void);   floats of scratch, 64-byte aligned
 *   void NAME_TASK_prepare(const float *weight, float *workspace);
 *       packs the weights into the kernel's layout (once per weight set)
 *   void NAME_TASK(const float *input, const float *weight, float *output,
 *                  float *workspace);
 *
 * The choices come from a run (dt_export_read_run: its best.json) or from
 * the tuning database (dt_export_read_db: the best this machine has
 * measured); either way the same writer makes the same library of them.
 *
 * A task without a tuned config (every config failed, the run ended before
 * it was measured, the database has no record of it) is exported only when
 * asked: its entry points then run the reference loops, and the table says
 * so (tuned = 0).
 *
 * CUDA (target cuda): kernels/TASK.cu (the NVRTC source dtune measured), the
 * same source as a string with its launch geometry in NAME_cuda.c, and a
 * small loader (NAME_cuda.h) that reaches the driver API and NVRTC through
 * dlopen, as dtune itself does (cuda_api.h): NAME_cuda_open compiles every
 * kernel for device 0, NAME_cuda_launch runs one on device pointers. The
 * test program NAME_cuda_test.c checks and times them the same way (its
 * micro-batches of about DT_CUDA_AUTO_BATCH_S are timed on the host clock
 * around a synchronisation). An untuned task has no CUDA kernel.
 */
#ifndef DTUNE_EXPORT_H
#define DTUNE_EXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "dtune/db.h"
#include "dtune/error.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/result.h"
#include "dtune/space.h"

/* One task of the export and the config chosen for it. */
typedef struct dt_export_choice {
    dt_task task;              /* as the model file gives it */
    bool tuned;                /* false: no config; the reference is exported */
    uint64_t config;           /* tuned: the config's index in the task's space */
    char knobs[256];           /* tuned: the config as logged ("" = not checked) */
    double latency_ms;         /* dtune's measured latency of it; 0 = unknown */
    char why[DT_REASON_MAX];   /* not tuned: why ("" = not measured yet) */
} dt_export_choice;

/* The settings of an export. */
typedef struct dt_export_params {
    dt_target target;
    /* CPU: kernel threads (measure.threads), the test's tolerance and the
     * CV rule its timing follows; dtune's measure.* settings. */
    dt_measure_params measure;
    /* CPU: the widest vector the space offered (dt_space_opts); 0 = this
     * machine's. A config index means the same kernel only in a space of the
     * same width. */
    int cpu_max_vec;
    const char *source;        /* where the choices came from, for the comments; may be NULL */
} dt_export_params;

/* Target cpu, dtune's measure defaults, this machine's vector width. */
dt_export_params dt_export_params_default(void);

/* Reads a run's choices: RUN_DIR/best.json (per task the best config, its
 * knobs and latency, or why it failed) and the model the run tuned, from
 * model_path or, when NULL, the path RUN_DIR/tuning.jsonl records (as the
 * run was given it, so relative to the folder `dtune tune` ran in). Every
 * task of best.json must be a task of the model with the same kind and
 * shape. Sets params->target and, for the CPU, params->cpu_max_vec to the
 * width whose space reads every tuned config as the knobs best.json logged;
 * params->measure.threads 0 becomes the threads the run timed its kernels
 * at, and any other count than those is refused (DT_EINVAL).
 * On success *choices (malloc'd, n_choices of them, in best.json's order)
 * and model_name belong to the caller. Returns 0, DT_ENOTFOUND (no RUN_DIR,
 * best.json, tuning.jsonl or model file), DT_EPARSE, DT_EINVAL (model and
 * run disagree, the space has changed: the message says how), DT_ENOMEM. */
int dt_export_read_run(const char *run_dir, const char *model_path, dt_export_params *params,
                       char *model_name, size_t name_len, dt_export_choice **choices,
                       int *n_choices, dt_error *err);

/* The model file RUN_DIR/tuning.jsonl's run record names (as the run was
 * given it: relative to where `dtune tune` ran) into path. Returns 0,
 * DT_ENOTFOUND (no log), DT_EINVAL (no run record names one), DT_EPARSE. */
int dt_export_run_model(const char *run_dir, char *path, size_t len, dt_error *err);

/* Reads the choices of the model at model_path from the tuning database db:
 * per task (in the model's order) the best config db holds for machine (a
 * dt_machine_fingerprint), params->target and the task's knob space as this
 * machine offers it (dt_db_task_best: same signature and space hash), read
 * back in that space and required to print as the knobs it was logged with,
 * as dt_export_read_run requires of a run. A task with no valid record is
 * untuned; its why says whether it has none or only failed ones. Sets
 * params->cpu_max_vec to 0 (this machine's width). On success *choices
 * (malloc'd, n_choices of them) and model_name belong to the caller.
 * Returns 0, DT_ENOTFOUND (no model file), DT_EPARSE, DT_EINVAL (a record
 * that does not print as its knobs: the message names the task), DT_EIO,
 * DT_ELIB, DT_ENOMEM. */
int dt_export_read_db(dt_db *db, const char *machine, const char *model_path,
                      dt_export_params *params, char *model_name, size_t name_len,
                      dt_export_choice **choices, int *n_choices, dt_error *err);

/* How a user builds an export for target: a printf format of the export's
 * folder; NULL for a target without an export. */
const char *dt_export_build_hint(dt_target target);

/* Writes the export of n choices, library named after name, into out_dir
 * (created with its parents). An untuned choice gets the reference loops
 * (see above). Returns 0, DT_EINVAL (a config outside its space, a plan
 * the generator refuses, two tasks with the same C name, no choices, an
 * out_dir of DT_PATH_MAX bytes or more), DT_ENOTSUP (a target without an
 * export), DT_EIO, DT_ENOMEM. */
int dt_export_write(const dt_export_params *params, const char *name,
                    const dt_export_choice *choices, int n, const char *out_dir, dt_error *err);

#endif
