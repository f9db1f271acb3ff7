/* cuda_runner.h — checking and timing one compiled kernel on the GPU, inside
 * the process that owns the CUDA context (the cuda backend's measurement
 * process, or a bench that times in-process).
 *
 * A session holds the primary context of device 0, two timing events, the
 * L2-flush buffer and the tensors of the last task measured (inputs drawn
 * once per task and seed, reference output from dt_task_reference), so
 * consecutive candidates of one task reuse them.
 */
#ifndef DTUNE_CUDA_RUNNER_H
#define DTUNE_CUDA_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_api.h"
#include "cuda_codegen.h"
#include "dtune/measure.h"
#include "dtune/result.h"

/* An automatic micro-batch (measure.micro_batch = 0) aims at this many
 * seconds of launches, at most this many calls. */
#define DT_CUDA_AUTO_BATCH_S 1e-3
#define DT_CUDA_AUTO_BATCH_MAX_CALLS 1000

typedef struct dt_cuda_session dt_cuda_session;

/* Makes device `ordinal`'s (measure.cuda_device) primary context current on
 * this thread and fills info. Returns 0, DT_ENODEV (no such device: see
 * dt_cuda_api_device_open) or DT_ELIB (a driver call failed; message names it). */
int dt_cuda_runner_session_open(int ordinal, dt_cuda_session **out, dt_cuda_device_info *info,
                                dt_error *err);

/* Releases everything, the context last. Accepts NULL. */
void dt_cuda_runner_session_close(dt_cuda_session *s);

/* One candidate. */
typedef struct dt_cuda_job {
    const dt_task *task;
    const dt_cuda_launch *launch;
    const void *image;         /* cubin or NUL-terminated PTX */
    const dt_measure_params *measure;
    uint64_t seed;             /* input data */
    /* Called once the inputs and the reference are ready, before the first
     * launch: the caller's timeout for the candidate starts here. May be NULL. */
    void (*on_ready)(void *arg);
    void *ready_arg;
} dt_cuda_job;

/* Checks and times job; every field of out is filled (compile_ms and run_ms
 * are left 0 for the caller). *context_lost is set when a sticky error
 * (illegal address, launch failure) poisoned the context: the session must
 * then be closed and the process should exit. Returns 0, or DT_ENOMEM /
 * DT_ELIB when the session itself failed (not the candidate). */
int dt_cuda_runner_session_measure(dt_cuda_session *s, const dt_cuda_job *job, dt_measure_result *out,
                                   bool *context_lost, dt_error *err);

/* Deterministic inputs in [-1, 1) for (task, seed); the backend and benches
 * use the same ones. */
void dt_cuda_runner_fill_inputs(const dt_task *task, uint64_t seed, float *input, float *weight);

#endif
