/* cuda_runner.c — check and time one kernel on the GPU (see cuda_runner.h).
 *
 * One candidate: load the module, check the launch fits the compiled kernel
 * (registers limit the threads per block), fill the output with NaN, launch
 * once, synchronise, compare with the reference, then time micro-batches
 * between two CUDA events until the shared CV rule (dt_measure_cv_stop) says stop.
 * With measure.flush_l2 a buffer twice the L2 size is overwritten before each
 * micro-batch (outside the events), and an automatic micro-batch is then one
 * call, so every timed call starts with a cold L2.
 *
 * Errors returned by a synchronisation are sticky (the context is unusable);
 * errors a launch returns at once (too many resources, bad configuration)
 * are not. Either is DT_RESULT_LAUNCH_ERROR for the candidate.
 */
#include "cuda_runner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "dtune/measure.h"

#define NAN_BITS 0x7fc00000u
#define STATIC_SHARED_LIMIT (48 * 1024)

struct dt_cuda_session {
    const dt_cuda_driver *cu;
    dt_cu_device dev;
    dt_cu_context ctx;
    dt_cuda_device_info info;
    dt_cu_event start, stop;
    dt_cu_ptr flush;
    size_t flush_words;
    unsigned flush_round;
    /* the tensors of the last task */
    bool have_task;
    dt_task task;
    uint64_t seed;
    size_t n_in, n_w, n_out;
    float *host_out, *reference;
    dt_cu_ptr d_in, d_w, d_out;
};

/* ---- small helpers ------------------------------------------------------------- */

static int cu_fail(dt_cu_result r, const char *what, dt_error *err)
{
    char text[160];
    dt_cuda_api_status_str(r, text, sizeof text);
    return dt_error_set(err, DT_ELIB, "%s: %s", what, text);
}

static void set_result(dt_measure_result *out, dt_result_class cls, const char *what, dt_cu_result r)
{
    char text[120];
    dt_cuda_api_status_str(r, text, sizeof text);
    out->result = cls;
    snprintf(out->detail, sizeof out->detail, "%s: %s", what, text);
}

/* Whether an error a launch returned at once means the context is gone. */
static bool launch_error_is_sticky(dt_cu_result r)
{
    return r != DT_CU_ERROR_LAUNCH_OUT_OF_RESOURCES && (r >= 700 || r == 999);
}

void dt_cuda_runner_fill_inputs(const dt_task *task, uint64_t seed, float *input, float *weight)
{
    size_t n_in, n_w, n_out;
    dt_task_tensor_sizes(task, &n_in, &n_w, &n_out);
    uint64_t state = seed * 0x2545f4914f6cdd1dULL + (uint64_t)task->kind + 1;
    dt_measure_fill(input, n_in, &state);
    dt_measure_fill(weight, n_w, &state);
}

/* ---- session ------------------------------------------------------------------- */

static int make_context(dt_cuda_session *s, dt_error *err)
{
    const dt_cuda_driver *cu = s->cu;
    dt_cu_result r;
    if ((r = cu->primary_ctx_retain(&s->ctx, s->dev)) != DT_CU_SUCCESS)
        return cu_fail(r, "cuDevicePrimaryCtxRetain", err);
    if ((r = cu->ctx_set_current(s->ctx)) != DT_CU_SUCCESS)
        return cu_fail(r, "cuCtxSetCurrent", err);
    if ((r = cu->event_create(&s->start, 0)) != DT_CU_SUCCESS)
        return cu_fail(r, "cuEventCreate", err);
    if ((r = cu->event_create(&s->stop, 0)) != DT_CU_SUCCESS)
        return cu_fail(r, "cuEventCreate", err);
    size_t l2 = s->info.l2_bytes > 0 ? (size_t)s->info.l2_bytes : 64u << 20;
    s->flush_words = 2 * l2 / sizeof(float);
    if ((r = cu->mem_alloc(&s->flush, s->flush_words * sizeof(float))) != DT_CU_SUCCESS)
        return cu_fail(r, "cuMemAlloc (L2 flush buffer)", err);
    return 0;
}

int dt_cuda_runner_session_open(int ordinal, dt_cuda_session **out, dt_cuda_device_info *info,
                                dt_error *err)
{
    *out = NULL;
    dt_cuda_session *s = calloc(1, sizeof *s);
    if (!s)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    int rc = dt_cuda_api_device_probe(ordinal, &s->info, err);
    if (rc == 0)
        rc = dt_cuda_api_device_open(ordinal, &s->cu, &s->dev, NULL, err);
    if (rc == 0)
        rc = make_context(s, err);
    if (rc) {
        dt_cuda_runner_session_close(s);
        return rc;
    }
    if (info)
        *info = s->info;
    *out = s;
    return 0;
}

/* Frees device memory; errors are ignored here only because the context may
 * already be lost, in which case the memory goes with it. */
static void free_device(dt_cuda_session *s, dt_cu_ptr *p)
{
    if (*p && s->cu->mem_free(*p) != DT_CU_SUCCESS)
        fprintf(stderr, "dtune cuda runner: cuMemFree failed\n");
    *p = 0;
}

static void drop_task(dt_cuda_session *s)
{
    free_device(s, &s->d_in);
    free_device(s, &s->d_w);
    free_device(s, &s->d_out);
    free(s->host_out);
    free(s->reference);
    s->host_out = s->reference = NULL;
    s->have_task = false;
}

void dt_cuda_runner_session_close(dt_cuda_session *s)
{
    if (!s)
        return;
    if (s->cu) {
        drop_task(s);
        free_device(s, &s->flush);
        if (s->start && s->cu->event_destroy(s->start) != DT_CU_SUCCESS)
            fprintf(stderr, "dtune cuda runner: cuEventDestroy failed\n");
        if (s->stop && s->cu->event_destroy(s->stop) != DT_CU_SUCCESS)
            fprintf(stderr, "dtune cuda runner: cuEventDestroy failed\n");
        if (s->ctx && s->cu->primary_ctx_release(s->dev) != DT_CU_SUCCESS)
            fprintf(stderr, "dtune cuda runner: cuDevicePrimaryCtxRelease failed\n");
    }
    free(s);
}

/* ---- tensors of a task ----------------------------------------------------------- */

static bool same_task(const dt_cuda_session *s, const dt_task *t, uint64_t seed)
{
    return s->have_task && s->seed == seed && s->task.kind == t->kind &&
           memcmp(&s->task.conv, &t->conv, sizeof t->conv) == 0 &&
           memcmp(&s->task.mm, &t->mm, sizeof t->mm) == 0;
}

static int upload_inputs(dt_cuda_session *s, const float *in, const float *w, dt_error *err)
{
    const dt_cuda_driver *cu = s->cu;
    dt_cu_result r;
    if ((r = cu->mem_alloc(&s->d_in, s->n_in * sizeof(float))) != DT_CU_SUCCESS ||
        (r = cu->mem_alloc(&s->d_w, s->n_w * sizeof(float))) != DT_CU_SUCCESS ||
        (r = cu->mem_alloc(&s->d_out, s->n_out * sizeof(float))) != DT_CU_SUCCESS)
        return cu_fail(r, "cuMemAlloc (task tensors)", err);
    if ((r = cu->memcpy_htod(s->d_in, in, s->n_in * sizeof(float))) != DT_CU_SUCCESS ||
        (r = cu->memcpy_htod(s->d_w, w, s->n_w * sizeof(float))) != DT_CU_SUCCESS)
        return cu_fail(r, "cuMemcpyHtoD", err);
    return 0;
}

static int prepare_task(dt_cuda_session *s, const dt_task *t, uint64_t seed, dt_error *err)
{
    if (same_task(s, t, seed))
        return 0;
    drop_task(s);
    dt_task_tensor_sizes(t, &s->n_in, &s->n_w, &s->n_out);
    float *in = malloc(s->n_in * sizeof *in), *w = malloc(s->n_w * sizeof *w);
    s->host_out = malloc(s->n_out * sizeof(float));
    s->reference = malloc(s->n_out * sizeof(float));
    int rc = 0;
    if (!in || !w || !s->host_out || !s->reference) {
        rc = dt_error_set(err, DT_ENOMEM, "out of memory for the tensors of %s", t->name);
    } else {
        dt_cuda_runner_fill_inputs(t, seed, in, w);
        dt_task_reference(t, in, w, s->reference);
        rc = upload_inputs(s, in, w, err);
    }
    free(in);
    free(w);
    if (rc) {
        drop_task(s);
        return rc;
    }
    s->task = *t;
    s->seed = seed;
    s->have_task = true;
    return 0;
}

/* ---- one candidate ------------------------------------------------------------------ */

/* Loads the module and checks the launch fits the compiled kernel. Returns
 * false with out filled when it does not. */
static bool load_kernel(dt_cuda_session *s, const dt_cuda_job *job, dt_cu_module *mod,
                        dt_cu_function *fn, dt_measure_result *out)
{
    const dt_cuda_driver *cu = s->cu;
    const dt_cuda_launch *l = job->launch;
    dt_cu_result r = cu->module_load_data(mod, job->image);
    if (r != DT_CU_SUCCESS) {
        *mod = NULL;
        set_result(out, DT_RESULT_LAUNCH_ERROR, "cuModuleLoadData", r);
        return false;
    }
    int max_threads = 0, regs = 0;
    if ((r = cu->module_get_function(fn, *mod, DT_CUDA_KERNEL_NAME)) != DT_CU_SUCCESS ||
        (r = cu->func_get_attribute(&max_threads, DT_CU_FUNC_MAX_THREADS_PER_BLOCK, *fn)) != DT_CU_SUCCESS ||
        (r = cu->func_get_attribute(&regs, DT_CU_FUNC_NUM_REGS, *fn)) != DT_CU_SUCCESS) {
        set_result(out, DT_RESULT_LAUNCH_ERROR, "kernel lookup", r);
        return false;
    }
    unsigned threads = l->block[0] * l->block[1] * l->block[2];
    if (threads > (unsigned)max_threads) {
        out->result = DT_RESULT_LAUNCH_ERROR;
        snprintf(out->detail, sizeof out->detail,
                 "%u threads per block, the kernel allows %d (%d registers per thread)", threads,
                 max_threads, regs);
        return false;
    }
    if (l->shared_bytes <= STATIC_SHARED_LIMIT)
        return true;
    if (l->shared_bytes > (unsigned)s->info.max_shared_optin) {
        out->result = DT_RESULT_LAUNCH_ERROR;
        snprintf(out->detail, sizeof out->detail, "%u bytes of shared memory, the device has %d",
                 l->shared_bytes, s->info.max_shared_optin);
        return false;
    }
    r = cu->func_set_attribute(*fn, DT_CU_FUNC_MAX_DYNAMIC_SHARED, (int)l->shared_bytes);
    if (r != DT_CU_SUCCESS) {
        set_result(out, DT_RESULT_LAUNCH_ERROR, "cuFuncSetAttribute (shared memory)", r);
        return false;
    }
    return true;
}

static dt_cu_result launch(const dt_cuda_session *s, dt_cu_function fn, const dt_cuda_launch *l)
{
    dt_cu_ptr in = s->d_in, w = s->d_w, o = s->d_out;
    void *args[] = { &in, &w, &o };
    return s->cu->launch_kernel(fn, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                                l->block[2], l->shared_bytes, NULL, args, NULL);
}

/* The checked first launch. Returns true when timing may follow. */
static bool check_run(dt_cuda_session *s, const dt_cuda_job *job, dt_cu_function fn,
                      dt_measure_result *out, bool *lost)
{
    const dt_cuda_driver *cu = s->cu;
    dt_cu_result r = cu->memset_d32_async(s->d_out, NAN_BITS, s->n_out, NULL);
    if (r == DT_CU_SUCCESS && (r = launch(s, fn, job->launch)) != DT_CU_SUCCESS) {
        *lost = launch_error_is_sticky(r);
        set_result(out, DT_RESULT_LAUNCH_ERROR, "cuLaunchKernel", r);
        return false;
    }
    if (r != DT_CU_SUCCESS || (r = cu->ctx_synchronize()) != DT_CU_SUCCESS ||
        (r = cu->memcpy_dtoh(s->host_out, s->d_out, s->n_out * sizeof(float))) != DT_CU_SUCCESS) {
        *lost = true;
        set_result(out, DT_RESULT_LAUNCH_ERROR, "kernel execution", r);
        return false;
    }
    if (!job->measure->check_output)
        return true;
    long bad = dt_measure_check_output(s->host_out, s->reference, s->n_out, job->measure->tolerance);
    if (bad < 0)
        return true;
    out->result = DT_RESULT_WRONG_OUTPUT;
    snprintf(out->detail, sizeof out->detail, "output[%ld] = %g, reference %g", bad,
             (double)s->host_out[bad], (double)s->reference[bad]);
    return false;
}

/* Times `calls` launches between the two events; *ms is their total. */
static bool time_batch(dt_cuda_session *s, const dt_cuda_job *job, dt_cu_function fn, int calls,
                       float *ms, dt_measure_result *out, bool *lost)
{
    const dt_cuda_driver *cu = s->cu;
    dt_cu_result r = DT_CU_SUCCESS;
    if (job->measure->flush_l2)
        r = cu->memset_d32_async(s->flush, ++s->flush_round, s->flush_words, NULL);
    if (r == DT_CU_SUCCESS)
        r = cu->event_record(s->start, NULL);
    for (int i = 0; i < calls && r == DT_CU_SUCCESS; i++)
        r = launch(s, fn, job->launch);
    if (r == DT_CU_SUCCESS && (r = cu->event_record(s->stop, NULL)) == DT_CU_SUCCESS &&
        (r = cu->event_synchronize(s->stop)) == DT_CU_SUCCESS &&
        (r = cu->event_elapsed_ms(ms, s->start, s->stop)) == DT_CU_SUCCESS)
        return true;
    *lost = true;
    set_result(out, DT_RESULT_LAUNCH_ERROR, "timed launches", r);
    return false;
}

/* Calls per micro-batch: the configured number, one under an L2 flush, or
 * enough for about a millisecond judged from one timed call. */
static bool batch_calls(dt_cuda_session *s, const dt_cuda_job *job, dt_cu_function fn, int *calls,
                        dt_measure_result *out, bool *lost)
{
    float ms = 0;
    *calls = job->measure->micro_batch;
    if (*calls > 0)
        return true;
    *calls = 1;
    if (job->measure->flush_l2)
        return true;
    if (!time_batch(s, job, fn, 1, &ms, out, lost))
        return false;
    double per_call = fmax(ms * 1e-3, 1e-7);
    double wanted = ceil(DT_CUDA_AUTO_BATCH_S / per_call);
    *calls = wanted > DT_CUDA_AUTO_BATCH_MAX_CALLS ? DT_CUDA_AUTO_BATCH_MAX_CALLS : (int)wanted;
    return true;
}

static void time_kernel(dt_cuda_session *s, const dt_cuda_job *job, dt_cu_function fn,
                        dt_measure_result *out, bool *lost)
{
    const dt_measure_params *m = job->measure;
    int calls;
    if (!batch_calls(s, job, fn, &calls, out, lost))
        return;
    dt_measure_cv_stop cv;
    dt_measure_cv_stop_init(&cv, m->min_batches, m->max_repeats, m->cv_threshold);
    double seconds = 0;
    long total_calls = 0;
    int limit = m->max_repeats > 0 ? m->max_repeats : 1;
    for (int batch = 0; batch < limit; batch++) {
        float ms;
        if (!time_batch(s, job, fn, calls, &ms, out, lost))
            return;
        double per_call = fmax(ms * 1e-3 / calls, 1e-9);
        seconds += ms * 1e-3;
        total_calls += calls;
        if (dt_measure_cv_stop_add(&cv, job->task->flops / per_call * 1e-9))
            break;
    }
    out->result = DT_RESULT_OK;
    out->cv = dt_measure_cv_stop_cv(&cv);
    out->repeats = cv.n;
    out->latency_s = seconds / (double)total_calls;
    out->gflops = job->task->flops / fmax(out->latency_s, 1e-15) * 1e-9;
    snprintf(out->detail, sizeof out->detail, "%d calls per micro-batch", calls);
}

int dt_cuda_runner_session_measure(dt_cuda_session *s, const dt_cuda_job *job, dt_measure_result *out,
                                   bool *context_lost, dt_error *err)
{
    memset(out, 0, sizeof *out);
    *context_lost = false;
    int rc = prepare_task(s, job->task, job->seed, err);
    if (rc)
        return rc;
    if (job->on_ready)
        job->on_ready(job->ready_arg);
    dt_cu_module mod = NULL;
    dt_cu_function fn = NULL;
    if (load_kernel(s, job, &mod, &fn, out) && check_run(s, job, fn, out, context_lost))
        time_kernel(s, job, fn, out, context_lost);
    if (mod && !*context_lost) {
        dt_cu_result r = s->cu->module_unload(mod);
        if (r != DT_CU_SUCCESS)
            return cu_fail(r, "cuModuleUnload", err);
    }
    return 0;
}
