/* cuda_bench.c — dtune's tuned CUDA kernels against the vendor libraries, and
 * CV early stopping on the GPU.
 *
 * Part t (the table). For every conv2d, depthwise_conv2d and dense task of a
 * model (ResNet-18 by default) dtune's kernel is either tuned from scratch for
 * a short trial budget through the real measurer and the cuda backend (NVRTC builds, the
 * measurement process, CV-stopped event timing), or, with --best RUN_DIR,
 * the best config of a tuning run's best.json re-measured three times
 * through the same measurer (the median counts, never the log's minimum).
 * The vendor's answer for the same shape is timed in this process with the
 * same method (CUDA events around micro-batches of about a millisecond, the
 * same CV rule):
 *
 *   conv2d  cuDNN: the fastest algorithm cudnnFindConvolutionForwardAlgorithm
 *           returns, run with cudnnConvolutionForward; math mode FMA, i.e.
 *           plain fp32 like dtune's kernels (no TF32 tensor cores);
 *           depthwise_conv2d as a grouped convolution, one group a channel
 *   dense   cuBLAS sgemm (default math: fp32)
 *
 * It prints one row per task (dtune and vendor latency, their ratio), the
 * GPU's name, the median conv2d ratio against the goal (<= 1.2), the median
 * depthwise ratio, and the model's tasks summed as the model runs them
 * (count x latency) for both.
 *
 * Part c (AdaTune's experiment on the GPU). N random configs (--cv-configs,
 * 200) of three ResNet-18 3x3 convolutions (--cv-tasks), each timed by the
 * measurer with the default CV rule (micro-batches of about 1 ms, min 3,
 * CV < 0.10, max 20) and with fixed repeats (10 micro-batches of 50 calls,
 * no CV stop), batches of 50 configs alternating which method goes first;
 * without and with measure.flush_l2 (then a micro-batch is one call after an
 * L2 flush, and the fixed method takes 100 of them; --cv-flush picks one or
 * both). Per task: the run step's wall seconds of each method and Kendall
 * tau-b between the two GFLOPS rankings.
 *
 * cuDNN and cuBLAS are dlopen'ed (libcudnn.so.9, libcublas.so.13 or .12, by
 * the loader's path, $CUDA_HOME/lib64, /usr/local/cuda/lib64, or the files
 * named by $DTUNE_CUDNN / $DTUNE_CUBLAS); a missing one prints "n/a".
 *
 * Without a GPU it says so and exits 0 (nothing to compare; not a failure).
 *
 *   bin/cuda_bench [--parts tc] [--model models/resnet18.yaml] [--best RUN_DIR]
 *                  [--trials 200] [--strategy autotvm|chameleon|random]
 *                  [--batch 32] [--tasks a,b] [--cv-configs 200]
 *                  [--cv-tasks layer2_3x3,layer3_3x3,layer4_3x3] [--cv-flush off|on|both]
 *                  [--builders N] [--work-dir DIR]
 *   bin/cuda_bench --prebuild 90 [--cv-tasks ...] [--cv-configs N] [--builders N] --work-dir DIR
 *
 * --prebuild needs no GPU: it compiles part c's configs for a Hopper card
 * (sm_90) into DIR's cache with NVRTC and times nothing; part c on an H100
 * or H200 with --work-dir DIR then finds them built (NVRTC takes seconds per
 * kernel, minutes of a short GPU lease per task).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_backend.h"
#include "cuda_codegen.h"
#include "dtune/config.h"
#include "cuda_api.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/report.h"
#include "dtune/runstate.h"
#include "dtune/space.h"
#include "dtune/tuner.h"
#include "dtune/target.h"
#include "dtune/util.h"
#include "rank_stats.h"

#include <gsl/gsl_rng.h>

#define MAX_ROWS 64
#define BATCH_SECONDS 1e-3
#define GRAPH_CALLS 100

#define CV_BATCH 50
#define BEST_REPEATS 3

typedef struct options {
    char parts[8];
    char model[DT_PATH_MAX];
    char best[DT_PATH_MAX];          /* --best RUN_DIR; "" = tune from scratch */
    char strategy[32];
    char tasks[512];
    char cv_tasks[512];              /* part c's tasks, comma-separated */
    char cv_flush[8];                /* part c: "off", "on" or "both" */
    char work_dir[DT_PATH_MAX];
    int prebuild_cc;                 /* --prebuild CC: build part c's configs, time nothing */
    int trials, batch, cv_configs, builders;
} options;

/* ---- vendor libraries ---------------------------------------------------------- */

typedef void *handle;

typedef struct cudnn_perf {          /* cudnnConvolutionFwdAlgoPerf_t */
    int algo, status;
    float time;
    size_t memory;
    int determinism, math_type, reserved[3];
} cudnn_perf;

typedef struct vendor {
    void *cudnn_lib, *cublas_lib;
    int (*cudnn_create)(handle *);
    int (*cudnn_destroy)(handle);
    int (*tensor_create)(handle *);
    int (*tensor_set4d)(handle, int format, int type, int n, int c, int h, int w);
    int (*filter_create)(handle *);
    int (*filter_set4d)(handle, int type, int format, int k, int c, int h, int w);
    int (*conv_create)(handle *);
    int (*conv_set2d)(handle, int ph, int pw, int sh, int sw, int dh, int dw, int mode, int type);
    int (*conv_set_math)(handle, int math);
    int (*conv_set_groups)(handle, int groups);
    int (*conv_find)(handle, handle, handle, handle, handle, int, int *, cudnn_perf *);
    int (*conv_forward)(handle, const void *, handle, dt_cu_ptr, handle, dt_cu_ptr, handle, int,
                        dt_cu_ptr, size_t, const void *, handle, dt_cu_ptr);
    int (*cudnn_set_stream)(handle, dt_cu_stream);
    int (*cublas_create)(handle *);
    int (*cublas_set_stream)(handle, dt_cu_stream);
    int (*cublas_destroy)(handle);
    int (*sgemm)(handle, int, int, int, int, int, const float *, dt_cu_ptr, int, dt_cu_ptr, int,
                 const float *, dt_cu_ptr, int);
} vendor;

static void *open_library(const char *env, const char *const *names, int nnames)
{
    const char *given = getenv(env), *home = getenv("CUDA_HOME");
    if (given && *given)
        return dlopen(given, RTLD_NOW | RTLD_LOCAL);
    char path[DT_PATH_MAX];
    const char *dirs[] = { NULL, home, "/usr/local/cuda" };
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < nnames; i++) {
            if (d > 0 && !dirs[d])
                continue;
            snprintf(path, sizeof path, d ? "%s/lib64/%s" : "%s%s", d ? dirs[d] : "", names[i]);
            void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (lib)
                return lib;
        }
    return NULL;
}

static bool sym(void *lib, const char *name, void *slot, size_t size)
{
    void *p = lib ? dlsym(lib, name) : NULL;
    if (p)
        memcpy(slot, &p, size);
    return p != NULL;
}

#define SYM(lib, name, field) sym(lib, name, &(field), sizeof(field))

static void load_cudnn(vendor *v)
{
    static const char *const names[] = { "libcudnn.so.9", "libcudnn.so" };
    void *l = v->cudnn_lib = open_library("DTUNE_CUDNN", names, 2);
    bool ok = SYM(l, "cudnnCreate", v->cudnn_create) && SYM(l, "cudnnDestroy", v->cudnn_destroy) &&
              SYM(l, "cudnnCreateTensorDescriptor", v->tensor_create) &&
              SYM(l, "cudnnSetTensor4dDescriptor", v->tensor_set4d) &&
              SYM(l, "cudnnCreateFilterDescriptor", v->filter_create) &&
              SYM(l, "cudnnSetFilter4dDescriptor", v->filter_set4d) &&
              SYM(l, "cudnnCreateConvolutionDescriptor", v->conv_create) &&
              SYM(l, "cudnnSetConvolution2dDescriptor", v->conv_set2d) &&
              SYM(l, "cudnnSetConvolutionMathType", v->conv_set_math) &&
              SYM(l, "cudnnSetConvolutionGroupCount", v->conv_set_groups) &&
              SYM(l, "cudnnFindConvolutionForwardAlgorithm", v->conv_find) &&
              SYM(l, "cudnnConvolutionForward", v->conv_forward) &&
              SYM(l, "cudnnSetStream", v->cudnn_set_stream);
    if (!ok)
        v->conv_forward = NULL;
}

static void load_cublas(vendor *v)
{
    static const char *const names[] = { "libcublas.so.13", "libcublas.so.12", "libcublas.so" };
    void *l = v->cublas_lib = open_library("DTUNE_CUBLAS", names, 3);
    bool ok = SYM(l, "cublasCreate_v2", v->cublas_create) &&
              SYM(l, "cublasDestroy_v2", v->cublas_destroy) && SYM(l, "cublasSgemm_v2", v->sgemm) &&
              SYM(l, "cublasSetStream_v2", v->cublas_set_stream);
    if (!ok)
        v->sgemm = NULL;
}

/* ---- timing in this process ---------------------------------------------------------- */

typedef struct gpu {
    const dt_cuda_driver *cu;
    dt_cu_device dev;
    dt_cu_context ctx;
    dt_cu_event start, stop;
    dt_cu_stream stream;               /* graph capture and launch; NULL: no graphs */
    dt_measure_params measure;
} gpu;

typedef int (*call_fn)(void *arg);     /* one vendor call; 0 on success */

static int gpu_open(gpu *g, const dt_measure_params *m, dt_error *err)
{
    memset(g, 0, sizeof *g);
    g->measure = *m;
    int rc = dt_cuda_api_driver_load(&g->cu, err);
    if (rc)
        return rc;
    const dt_cuda_driver *cu = g->cu;
    if (cu->device_get(&g->dev, 0) || cu->primary_ctx_retain(&g->ctx, g->dev) ||
        cu->ctx_set_current(g->ctx) || cu->event_create(&g->start, 0) ||
        cu->event_create(&g->stop, 0))
        return dt_error_set(err, DT_ELIB, "cannot set up timing on device 0");
    if (cu->graph.stream_create && cu->graph.stream_create(&g->stream, DT_CU_STREAM_NON_BLOCKING))
        g->stream = NULL;
    return 0;
}

static void gpu_close(gpu *g)
{
    if (g->stream && g->cu->graph.stream_destroy(g->stream))
        fprintf(stderr, "cuda_bench: cuStreamDestroy failed\n");
    if (g->start && g->cu->event_destroy(g->start))
        fprintf(stderr, "cuda_bench: cuEventDestroy failed\n");
    if (g->stop && g->cu->event_destroy(g->stop))
        fprintf(stderr, "cuda_bench: cuEventDestroy failed\n");
    if (g->ctx && g->cu->primary_ctx_release(g->dev))
        fprintf(stderr, "cuda_bench: cuDevicePrimaryCtxRelease failed\n");
}

/* Milliseconds of `calls` back-to-back calls, or < 0 on failure. */
static double time_batch(gpu *g, call_fn fn, void *arg, int calls)
{
    const dt_cuda_driver *cu = g->cu;
    if (cu->event_record(g->start, NULL))
        return -1;
    for (int i = 0; i < calls; i++)
        if (fn(arg))
            return -1;
    float ms = 0;
    if (cu->event_record(g->stop, NULL) || cu->event_synchronize(g->stop) ||
        cu->event_elapsed_ms(&ms, g->start, g->stop))
        return -1;
    return ms;
}

/* Seconds per call under the backend's method: a warm-up call, micro-batches
 * of about a millisecond, the CV rule on per-batch GFLOPS. < 0 on failure. */
static double time_calls(gpu *g, call_fn fn, void *arg, double flops)
{
    double first = time_batch(g, fn, arg, 1);
    if (first < 0)
        return -1;
    double wanted = ceil(BATCH_SECONDS / fmax(first * 1e-3, 1e-7));
    int calls = wanted > 1000 ? 1000 : (int)wanted;
    dt_measure_cv_stop cv;
    dt_measure_cv_stop_init(&cv, g->measure.min_batches, g->measure.max_repeats, g->measure.cv_threshold);
    for (;;) {
        double ms = time_batch(g, fn, arg, calls);
        if (ms < 0)
            return -1;
        if (dt_measure_cv_stop_add(&cv, flops / fmax(ms * 1e-3 / calls, 1e-9) * 1e-9))
            break;
    }
    return flops / (dt_measure_cv_stop_mean(&cv) * 1e9);
}

/* Seconds per call with the host's launch cost taken out: GRAPH_CALLS calls
 * captured once into a CUDA graph on g->stream (fn must issue its work on
 * that stream), the graph launched between events until the CV rule stops.
 * < 0 when the driver has no graphs or the capture fails. */
static double graph_seconds(gpu *g, call_fn fn, void *arg, double flops)
{
    const dt_cuda_driver *cu = g->cu;
    if (!g->stream)
        return -1;
    dt_cu_graph graph = NULL;
    dt_cu_graph_exec exec = NULL;
    double seconds = -1;
    if (cu->graph.begin_capture(g->stream, DT_CU_STREAM_CAPTURE_RELAXED))
        return -1;
    int failed = 0;
    for (int i = 0; i < GRAPH_CALLS && !failed; i++)
        failed = fn(arg);
    dt_cu_result ended = cu->graph.end_capture(g->stream, &graph);
    if (failed || ended || !graph || cu->graph.instantiate(&exec, graph, 0))
        goto done;
    /* one launch to warm up, then the CV rule over launches */
    if (cu->graph.launch(exec, g->stream) || cu->event_record(g->stop, g->stream) ||
        cu->event_synchronize(g->stop))
        goto done;
    dt_measure_cv_stop cv;
    dt_measure_cv_stop_init(&cv, g->measure.min_batches, g->measure.max_repeats, g->measure.cv_threshold);
    for (;;) {
        float ms = 0;
        if (cu->event_record(g->start, g->stream) || cu->graph.launch(exec, g->stream) ||
            cu->event_record(g->stop, g->stream) || cu->event_synchronize(g->stop) ||
            cu->event_elapsed_ms(&ms, g->start, g->stop))
            goto done;
        if (dt_measure_cv_stop_add(&cv, flops / fmax(ms * 1e-3 / GRAPH_CALLS, 1e-12) * 1e-9))
            break;
    }
    seconds = flops / (dt_measure_cv_stop_mean(&cv) * 1e9);
done:
    if (exec && cu->graph.exec_destroy(exec))
        fprintf(stderr, "cuda_bench: cuGraphExecDestroy failed\n");
    if (graph && cu->graph.destroy(graph))
        fprintf(stderr, "cuda_bench: cuGraphDestroy failed\n");
    return seconds;
}

/* ---- vendor calls ------------------------------------------------------------------- */

typedef struct buffers {
    dt_cu_ptr in, w, out, workspace;
} buffers;

static int alloc_buffers(gpu *g, const dt_task *t, size_t workspace, buffers *b)
{
    size_t n_in, n_w, n_out;
    dt_task_tensor_sizes(t, &n_in, &n_w, &n_out);
    memset(b, 0, sizeof *b);
    const dt_cuda_driver *cu = g->cu;
    if (cu->mem_alloc(&b->in, n_in * 4) || cu->mem_alloc(&b->w, n_w * 4) ||
        cu->mem_alloc(&b->out, n_out * 4) || (workspace && cu->mem_alloc(&b->workspace, workspace)))
        return -1;
    /* values do not change the time; a fixed pattern avoids denormals */
    if (cu->memset_d32_async(b->in, 0x3f000000u, n_in, NULL) ||
        cu->memset_d32_async(b->w, 0x3e800000u, n_w, NULL) || cu->ctx_synchronize())
        return -1;
    return 0;
}

static void free_buffers(gpu *g, buffers *b)
{
    dt_cu_ptr *all[] = { &b->in, &b->w, &b->out, &b->workspace };
    for (int i = 0; i < 4; i++)
        if (*all[i] && g->cu->mem_free(*all[i]))
            fprintf(stderr, "cuda_bench: cuMemFree failed\n");
}

typedef struct conv_call {
    const vendor *v;
    handle h, x, w, conv, y;
    int algo;
    size_t workspace_bytes;
    buffers *b;
} conv_call;

static int run_conv(void *arg)
{
    conv_call *c = arg;
    const float one = 1, zero = 0;
    return c->v->conv_forward(c->h, &one, c->x, c->b->in, c->w, c->b->w, c->conv, c->algo,
                              c->b->workspace, c->workspace_bytes, &zero, c->y, c->b->out);
}

/* Descriptors of task for cuDNN (NCHW fp32, cross-correlation, FMA math); a
 * depthwise convolution is a grouped one with one group per input channel. */
static bool describe_conv(const vendor *v, const dt_task *t, conv_call *c)
{
    const dt_conv_shape *s = &t->conv;
    int groups = t->kind == DT_OP_DEPTHWISE_CONV2D ? s->c_in : 1;
    return !v->tensor_create(&c->x) && !v->tensor_create(&c->y) && !v->filter_create(&c->w) &&
           !v->conv_create(&c->conv) &&
           !v->tensor_set4d(c->x, 0, 0, s->n, s->c_in, s->h, s->w) &&
           !v->tensor_set4d(c->y, 0, 0, s->n, s->c_out, s->oh, s->ow) &&
           !v->filter_set4d(c->w, 0, 0, s->c_out, s->c_in / groups, s->kh, s->kw) &&
           !v->conv_set2d(c->conv, s->ph, s->pw, s->sh, s->sw, s->dh, s->dw, 1, 0) &&
           !v->conv_set_math(c->conv, 3) && !v->conv_set_groups(c->conv, groups);
}

/* One side's seconds per call: back-to-back calls (the host's launch cost
 * included) and inside a graph (without it); < 0 where not measured. */
typedef struct timing {
    double calls_s, graph_s;
} timing;

/* cuDNN's timing of task (algo: the one cudnnFind chose). */
static timing cudnn_seconds(gpu *g, const vendor *v, const dt_task *t, int *algo)
{
    timing out = { -1, -1 };
    conv_call c = { .v = v };
    cudnn_perf perf[8];
    int found = 0;
    if (!v->conv_forward || v->cudnn_create(&c.h) || !describe_conv(v, t, &c) ||
        v->conv_find(c.h, c.x, c.w, c.conv, c.y, 8, &found, perf) || found < 1 || perf[0].status)
        return out;
    buffers b;
    c.algo = *algo = perf[0].algo;
    c.workspace_bytes = perf[0].memory;
    c.b = &b;
    if (alloc_buffers(g, t, perf[0].memory, &b) == 0) {
        out.calls_s = time_calls(g, run_conv, &c, t->flops);
        if (g->stream && !v->cudnn_set_stream(c.h, g->stream)) {
            out.graph_s = graph_seconds(g, run_conv, &c, t->flops);
            (void)v->cudnn_set_stream(c.h, NULL);
        }
    }
    free_buffers(g, &b);
    v->cudnn_destroy(c.h);
    return out;
}

typedef struct gemm_call {
    const vendor *v;
    handle h;
    const dt_mm_shape *s;
    buffers *b;
} gemm_call;

/* Y[m][n] = X[m][k] W[n][k]^T in row-major is, column-major, Y^T = W X^T. */
static int run_gemm(void *arg)
{
    gemm_call *c = arg;
    const float one = 1, zero = 0;
    const dt_mm_shape *s = c->s;
    return c->v->sgemm(c->h, 1, 0, s->n, s->m, s->k, &one, c->b->w, s->k, c->b->in, s->k, &zero,
                       c->b->out, s->n);
}

static timing cublas_seconds(gpu *g, const vendor *v, const dt_task *t)
{
    timing out = { -1, -1 };
    gemm_call c = { .v = v, .s = &t->mm };
    if (!v->sgemm || t->mm.b != 1 || v->cublas_create(&c.h))
        return out;
    buffers b;
    c.b = &b;
    if (alloc_buffers(g, t, 0, &b) == 0) {
        out.calls_s = time_calls(g, run_gemm, &c, t->flops);
        if (g->stream && !v->cublas_set_stream(c.h, g->stream)) {
            out.graph_s = graph_seconds(g, run_gemm, &c, t->flops);
            (void)v->cublas_set_stream(c.h, NULL);
        }
    }
    free_buffers(g, &b);
    v->cublas_destroy(c.h);
    return out;
}

/* ---- dtune's kernel in this process (graph timing) ------------------------------------ */

typedef struct kernel_call {
    const dt_cuda_driver *cu;
    dt_cu_function fn;
    dt_cuda_launch launch;
    buffers *b;
    dt_cu_stream stream;
} kernel_call;

static int run_kernel(void *arg)
{
    kernel_call *k = arg;
    const dt_cuda_launch *l = &k->launch;
    void *args[] = { &k->b->in, &k->b->w, &k->b->out };
    return k->cu->launch_kernel(k->fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                l->block[1], l->block[2], l->shared_bytes, k->stream, args, NULL);
}

/* Graph seconds per call of config point of space's task, built here as the
 * backend builds it (codegen, NVRTC for the device); < 0 on any failure. */
static double dtune_graph_seconds(gpu *g, int cc, const dt_space *space, const dt_point *point)
{
    const dt_cuda_driver *cu = g->cu;
    const dt_nvrtc *nv;
    dt_cuda_plan plan;
    dt_error err = { 0 };
    char *source = NULL;
    dt_cuda_image image = { 0 };
    dt_cu_module mod = NULL;
    double seconds = -1;
    if (!g->stream || dt_cuda_api_nvrtc_load(&nv, &err))
        return -1;
    bool ptx;
    int arch = dt_cuda_api_nvrtc_pick_arch(nv, cc, &ptx);
    dt_cuda_plan_from_point(space, point, &plan);
    if (arch < 0 || dt_cuda_codegen(&plan, &source, &err) ||
        dt_cuda_api_nvrtc_compile(nv, source, space->task.name, arch, ptx, &image, &err) ||
        cu->module_load_data(&mod, image.data)) {
        fprintf(stderr, "cuda_bench: %s: cannot build the kernel here: %s\n", space->task.name,
                err.msg);
        goto done;
    }
    kernel_call k = { .cu = cu, .stream = g->stream };
    dt_cuda_plan_launch(&plan, &k.launch);
    if (cu->module_get_function(&k.fn, mod, DT_CUDA_KERNEL_NAME) ||
        (k.launch.shared_bytes > 0 &&
         cu->func_set_attribute(k.fn, DT_CU_FUNC_MAX_DYNAMIC_SHARED, (int)k.launch.shared_bytes)))
        goto done;
    buffers b;
    k.b = &b;
    if (alloc_buffers(g, &space->task, 0, &b) == 0)
        seconds = graph_seconds(g, run_kernel, &k, space->task.flops);
    free_buffers(g, &b);
done:
    if (mod && cu->module_unload(mod))
        fprintf(stderr, "cuda_bench: cuModuleUnload failed\n");
    dt_cuda_api_image_free(&image);
    free(source);
    return seconds;
}

/* ---- tuning ----------------------------------------------------------------------------- */

static int measure_batch(void *ctx, const dt_space *space, const dt_point *points, int n,
                         dt_measure_result *results, dt_error *err)
{
    int rc = dt_measurer_run(ctx, space, points, n, results, err);
    return rc < 0 ? rc : n;
}

/* dtune's timing of a fresh tuning of task t: its best config's back-to-back
 * seconds as the tuner measured them, and that config in a graph. */
static timing tune_task(dt_measurer *m, gpu *g, int cc, const dt_task *t, const options *o,
                        int *valid)
{
    timing out = { -1, -1 };
    dt_space space;
    dt_tuner *tuner = NULL;
    dt_tuner_params tc;
    dt_error err = { 0 };
    double best = 0;
    dt_point point;
    tc = dt_tuner_params_default();
    snprintf(tc.strategy, sizeof tc.strategy, "%s", o->strategy);
    tc.batch_size = o->batch;
    if (dt_target_space_init(&space, t, DT_TARGET_CUDA, &err) || dt_tuner_new(&space, &tc, 1, &tuner, &err)) {
        fprintf(stderr, "cuda_bench: %s: %s\n", t->name, err.msg);
        dt_space_free(&space);
        return out;
    }
    dt_tuner_budget budget = { .trials = o->trials };
    if (dt_tuner_run(tuner, &budget, measure_batch, m, NULL, &err))
        fprintf(stderr, "cuda_bench: %s: %s\n", t->name, err.msg);
    if (dt_tuner_best(tuner, &point, &best) == 0 && best > 0) {
        out.calls_s = t->flops / (best * 1e9);
        out.graph_s = dtune_graph_seconds(g, cc, &space, &point);
        char knobs[512];
        dt_space_point_str(&space, &point, knobs, sizeof knobs);
        printf("  %s best config: %s\n", t->name, knobs);
    }
    *valid = dt_tuner_trials(tuner);
    dt_tuner_free(tuner);
    dt_space_free(&space);
    return out;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* dtune's timing of the run's best config of t (rs: the run's best.json):
 * the median of BEST_REPEATS back-to-back measurements through the
 * measurer, and the config in a graph. */
static timing remeasure_best(dt_measurer *m, gpu *g, int cc, const dt_run_state *rs,
                             const dt_task *t, int *trials)
{
    timing out = { -1, -1 };
    const dt_task_state *ts = NULL;
    for (int j = 0; j < rs->ntasks && !ts; j++)
        if (strcmp(rs->tasks[j].name, t->name) == 0)
            ts = &rs->tasks[j];
    *trials = ts ? ts->trials : 0;
    if (!ts || !(ts->best_gflops > 0) || ts->failed[0])
        return out;
    dt_space space;
    dt_error err = { 0 };
    if (dt_target_space_init(&space, t, DT_TARGET_CUDA, &err) != 0) {
        fprintf(stderr, "cuda_bench: %s: %s\n", t->name, err.msg);
        return out;
    }
    double seconds[BEST_REPEATS];
    int n = 0;
    if (ts->best_config < space.size) {
        dt_point point;
        dt_space_point(&space, ts->best_config, &point);
        for (int i = 0; i < BEST_REPEATS; i++) {
            dt_measure_result r;
            if (dt_measurer_run(m, &space, &point, 1, &r, &err) != 0) {
                fprintf(stderr, "cuda_bench: %s: %s\n", t->name, err.msg);
                break;
            }
            if (r.result != DT_RESULT_OK) {
                fprintf(stderr, "cuda_bench: %s: best config %llu: %s\n", t->name,
                        (unsigned long long)ts->best_config, r.detail);
                break;
            }
            seconds[n++] = r.latency_s;
        }
        if (n == BEST_REPEATS)
            out.graph_s = dtune_graph_seconds(g, cc, &space, &point);
    } else {
        fprintf(stderr, "cuda_bench: %s: config %llu is past the space (%llu)\n", t->name,
                (unsigned long long)ts->best_config, (unsigned long long)space.size);
    }
    dt_space_free(&space);
    if (n == BEST_REPEATS) {
        qsort(seconds, (size_t)n, sizeof seconds[0], compare_doubles);
        out.calls_s = seconds[n / 2];
    }
    return out;
}

/* ---- the table ------------------------------------------------------------------------- */

static bool selected(const options *o, const dt_task *t)
{
    if (t->kind != DT_OP_CONV2D && t->kind != DT_OP_DEPTHWISE_CONV2D && t->kind != DT_OP_DENSE)
        return false;
    if (!o->tasks[0])
        return true;
    char list[sizeof o->tasks + 2];
    char name[DT_NAME_MAX + 2];
    snprintf(list, sizeof list, ",%s,", o->tasks);
    snprintf(name, sizeof name, ",%s,", t->name);
    return strstr(list, name) != NULL;
}

/* "%.1f" of microseconds, or "n/a". */
static void us_str(double seconds, char *buf, size_t len)
{
    if (seconds > 0)
        snprintf(buf, len, "%.1f", seconds * 1e6);
    else
        snprintf(buf, len, "n/a");
}

static void ratio_str(double a, double b, char *buf, size_t len)
{
    if (a > 0 && b > 0)
        snprintf(buf, len, "%.2f", a / b);
    else
        snprintf(buf, len, "n/a");
}

static void print_row(const dt_task *t, timing dtune, timing lib, int trials,
                      const char *vendor_name)
{
    char shape[96], d_us[16], v_us[16], ratio[16], dg_us[16], vg_us[16], g_ratio[16];
    dt_task_shape_str(t, shape, sizeof shape);
    us_str(dtune.calls_s, d_us, sizeof d_us);
    us_str(lib.calls_s, v_us, sizeof v_us);
    ratio_str(dtune.calls_s, lib.calls_s, ratio, sizeof ratio);
    us_str(dtune.graph_s, dg_us, sizeof dg_us);
    us_str(lib.graph_s, vg_us, sizeof vg_us);
    ratio_str(dtune.graph_s, lib.graph_s, g_ratio, sizeof g_ratio);
    printf("%-14s %-34s %6d %9s %8.0f %-7s %9s %6s | %9s %9s %6s\n", t->name, shape, trials, d_us,
           dtune.calls_s > 0 ? t->flops / dtune.calls_s * 1e-9 : 0.0, vendor_name, v_us, ratio,
           dg_us, vg_us, g_ratio);
}

/* Median of the n values of v (sorted here); 0 when n is 0. */
static double median_of(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof v[0], compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The ratios and model sums of one timing method over the table's tasks. */
typedef struct column {
    double ratios[MAX_ROWS], dw_ratios[MAX_ROWS], dtune_sum, vendor_sum;
    int nratios, ndw, summed;
} column;

static void column_add(column *c, const dt_task *t, double dtune_s, double vendor_s)
{
    if (!(dtune_s > 0 && vendor_s > 0))
        return;
    if (t->kind == DT_OP_CONV2D && c->nratios < MAX_ROWS)
        c->ratios[c->nratios++] = dtune_s / vendor_s;
    if (t->kind == DT_OP_DEPTHWISE_CONV2D && c->ndw < MAX_ROWS)
        c->dw_ratios[c->ndw++] = dtune_s / vendor_s;
    c->dtune_sum += t->count * dtune_s;
    c->vendor_sum += t->count * vendor_s;
    c->summed++;
}

static void column_print(column *c, const char *method, int selected_n)
{
    if (c->nratios > 0) {
        double median = median_of(c->ratios, c->nratios);
        printf("%s: median conv2d ratio dtune/cuDNN %.2f over %d tasks (goal <= 1.20: %s)\n", method,
               median, c->nratios, median <= 1.2 ? "met" : "not met");
    }
    if (c->ndw > 0)
        printf("%s: median depthwise_conv2d ratio dtune/cuDNN %.2f over %d tasks\n", method,
               median_of(c->dw_ratios, c->ndw), c->ndw);
    if (c->summed > 0)
        printf("%s: model (sum of count x latency over %d of %d tasks): dtune %.3f ms, vendor "
               "%.3f ms, dtune/vendor %.2f\n", method, c->summed, selected_n, c->dtune_sum * 1e3,
               c->vendor_sum * 1e3, c->dtune_sum / c->vendor_sum);
}

/* Part t. */
static int run_table(const options *o, const dt_model *model, const dt_measure_params *mp,
                     const dt_cuda_device_info *info)
{
    vendor v = { 0 };
    load_cudnn(&v);
    load_cublas(&v);
    gpu g;
    dt_measurer *m = NULL;
    dt_run_state rs;
    bool have_rs = false;
    dt_error err = { 0 };
    if (o->best[0]) {
        if (dt_report_load_best(o->best, &rs, &err) != 0) {
            fprintf(stderr, "cuda_bench: %s\n", err.msg);
            return 2;
        }
        have_rs = true;
    }
    if (gpu_open(&g, mp, &err) || dt_measurer_new(&dt_cuda_backend, mp, o->work_dir, 1, &m, &err)) {
        fprintf(stderr, "cuda_bench: %s\n", err.msg);
        if (have_rs)
            dt_run_state_destroy(&rs);
        return 1;
    }
    printf("GPU: %s (compute capability %d.%d, %d SMs, peak %.0f GFLOPS fp32)\n", info->name,
           info->cc / 10, info->cc % 10, info->sms, dt_cuda_api_peak_gflops(info));
    if (have_rs)
        printf("dtune: the best configs of %s/best.json, each re-measured %d times (median)",
               o->best, BEST_REPEATS);
    else
        printf("dtune: %s, %d trials per task", o->strategy, o->trials);
    printf("; cuDNN: cudnnFind's best, FMA math (no TF32)%s; cuBLAS: sgemm, fp32%s\n",
           v.conv_forward ? "" : " (NOT FOUND)", v.sgemm ? "" : " (NOT FOUND)");
    printf("(calls: back-to-back calls, the host's launch cost included; graph: %d calls in a "
           "CUDA graph, without it%s)\n", GRAPH_CALLS, g.stream ? "" : "; NOT AVAILABLE");
    printf("%-14s %-34s %6s %9s %8s %-7s %9s %6s | %9s %9s %6s\n", "task", "shape", "trials",
           "dtune us", "GFLOPS", "vendor", "vendor us", "ratio", "graph: dt", "vendor", "ratio");
    column calls = { .nratios = 0 }, graph = { .nratios = 0 };
    int selected_n = 0;
    for (int i = 0; i < model->ntasks; i++) {
        const dt_task *t = &model->tasks[i];
        if (!selected(o, t))
            continue;
        selected_n++;
        int trials = 0, algo = -1;
        timing dtune = have_rs ? remeasure_best(m, &g, info->cc, &rs, t, &trials)
                               : tune_task(m, &g, info->cc, t, o, &trials);
        bool conv = t->kind != DT_OP_DENSE;
        timing lib = conv ? cudnn_seconds(&g, &v, t, &algo) : cublas_seconds(&g, &v, t);
        print_row(t, dtune, lib, trials, conv ? "cudnn" : "cublas");
        fflush(stdout);
        column_add(&calls, t, dtune.calls_s, lib.calls_s);
        column_add(&graph, t, dtune.graph_s, lib.graph_s);
    }
    column_print(&calls, "calls", selected_n);
    column_print(&graph, "graph", selected_n);
    dt_measurer_free(m);
    gpu_close(&g);
    if (have_rs)
        dt_run_state_destroy(&rs);
    return 0;
}

/* ---- part c: CV early stopping against fixed repeats ------------------------------------ */

typedef struct cv_totals {
    double fixed_s, cv_s;
} cv_totals;

/* The task's space and its N random configs of the experiment (the same on
 * every machine: the generator's seed is fixed). */
static int cv_points(const dt_task *task, int n, dt_space *space, dt_point *points)
{
    dt_error err = { 0 };
    if (dt_target_space_init(space, task, DT_TARGET_CUDA, &err) != 0) {
        fprintf(stderr, "cuda_bench: %s: %s\n", task->name, err.msg);
        return -1;
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) {
        fprintf(stderr, "cuda_bench: out of memory\n");
        dt_space_free(space);
        return -1;
    }
    gsl_rng_set(rng, 42);
    for (int i = 0; i < n; i++)
        dt_space_random(space, rng, &points[i]);
    gsl_rng_free(rng);
    return 0;
}

static void cv_task(const options *o, const dt_task *task, const dt_measure_params *base,
                    bool flush, cv_totals *tot)
{
    dt_measure_params fixed = *base, cv = *base;
    fixed.flush_l2 = cv.flush_l2 = flush;
    fixed.micro_batch = flush ? 1 : 50;
    fixed.min_batches = fixed.max_repeats = flush ? 100 : 10;
    fixed.cv_threshold = 0;
    dt_space space;
    dt_error err = { 0 };
    int n = o->cv_configs;
    dt_point *points = calloc((size_t)n, sizeof *points);
    dt_measure_result *rf = calloc((size_t)n, sizeof *rf), *rc = calloc((size_t)n, sizeof *rc);
    double *gf = calloc((size_t)n, sizeof *gf), *gc = calloc((size_t)n, sizeof *gc);
    dt_measurer *mf = NULL, *mc = NULL;
    if (!points || !rf || !rc || !gf || !gc) {
        fprintf(stderr, "cuda_bench: out of memory\n");
        goto done;
    }
    if (cv_points(task, n, &space, points) != 0)
        goto done;
    if (dt_measurer_new(&dt_cuda_backend, &fixed, o->work_dir, 1, &mf, &err) ||
        dt_measurer_new(&dt_cuda_backend, &cv, o->work_dir, 1, &mc, &err)) {
        fprintf(stderr, "cuda_bench: %s\n", err.msg);
        goto free_space;
    }
    for (int i = 0; i < n; i += CV_BATCH) {
        int len = n - i < CV_BATCH ? n - i : CV_BATCH;
        dt_measurer *first = (i / CV_BATCH) % 2 ? mc : mf, *second = first == mf ? mc : mf;
        if (dt_measurer_run(first, &space, points + i, len, first == mf ? rf + i : rc + i, &err) ||
            dt_measurer_run(second, &space, points + i, len, second == mf ? rf + i : rc + i, &err)) {
            fprintf(stderr, "cuda_bench: %s: %s\n", task->name, err.msg);
            goto free_space;
        }
    }
    double sf = 0, sc = 0;
    int pairs = 0, repeats = 0;
    for (int i = 0; i < n; i++) {
        if (rf[i].result != DT_RESULT_OK || rc[i].result != DT_RESULT_OK)
            continue;
        sf += rf[i].run_ms * 1e-3;
        sc += rc[i].run_ms * 1e-3;
        gf[pairs] = rf[i].gflops;
        gc[pairs] = rc[i].gflops;
        repeats += rc[i].repeats;
        pairs++;
    }
    printf("  %-14s flush %-3s configs %d ok %d  fixed %.2f s  cv %.2f s  (%.2fx less)  "
           "mean cv repeats %.1f  tau %.3f\n", task->name, flush ? "on" : "off", n, pairs, sf, sc,
           sc > 0 ? sf / sc : 0, pairs ? (double)repeats / pairs : 0, kendall_tau_b(gf, gc, pairs));
    fflush(stdout);
    tot->fixed_s += sf;
    tot->cv_s += sc;
free_space:
    dt_space_free(&space);
done:
    dt_measurer_free(mf);
    dt_measurer_free(mc);
    free(points);
    free(rf);
    free(rc);
    free(gf);
    free(gc);
}

static void run_cv(const options *o, const dt_model *model, const dt_measure_params *mp)
{
    printf("\n(c) CV early stopping vs fixed repeats, %d random configs per task "
           "(run step only: check + timing, both only where both ran)\n", o->cv_configs);
    for (int f = 0; f < 2; f++) {
        if (strcmp(o->cv_flush, "both") != 0 && strcmp(o->cv_flush, f ? "on" : "off") != 0)
            continue;
        cv_totals tot = { 0 };
        char list[sizeof o->cv_tasks];
        snprintf(list, sizeof list, "%s", o->cv_tasks);
        char *save = NULL;
        for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            int k = dt_model_find_task(model, name);
            if (k < 0) {
                fprintf(stderr, "cuda_bench: the model has no task %s\n", name);
                continue;
            }
            cv_task(o, &model->tasks[k], mp, f == 1, &tot);
        }
        printf("  flush %-3s total: fixed %.1f s, cv %.1f s: %.2fx less timing time\n",
               f ? "on" : "off", tot.fixed_s, tot.cv_s, tot.cv_s > 0 ? tot.fixed_s / tot.cv_s : 0);
    }
    printf("  (tau per task above; goal >= 2.5x with tau >= 0.9)\n");
}

/* ---- --prebuild: part c's cubins compiled without a GPU ------------------------------------ */

typedef struct prebuild_job {
    void *state;
    const dt_space *space;
    const dt_point *points;
    int n;
    atomic_int next, ok, invalid, other;
} prebuild_job;

static void *prebuild_worker(void *arg)
{
    prebuild_job *j = arg;
    for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
        dt_artifact a;
        dt_error err = { 0 };
        if (dt_cuda_backend.build(j->state, j->space, &j->points[i], &a, &err) != 0) {
            fprintf(stderr, "cuda_bench: build: %s\n", err.msg);
            atomic_fetch_add(&j->other, 1);
        } else {
            atomic_fetch_add(a.result == DT_RESULT_OK        ? &j->ok
                             : a.result == DT_RESULT_INVALID ? &j->invalid
                                                             : &j->other, 1);
        }
    }
    return NULL;
}

/* Compiles part c's configs of every --cv-tasks task into --work-dir's cache
 * as a measurer on a device of compute capability CC would; a later part c
 * with that work dir on such a device then only times. */
static int run_prebuild(const options *o, const dt_model *model, const dt_measure_params *mp)
{
    dt_cuda_device_info device;
    dt_cuda_backend_device_hopper(&device);
    if (o->prebuild_cc != device.cc) {
        fprintf(stderr, "cuda_bench: --prebuild knows compute capability %d (Hopper) only\n",
                device.cc);
        return 2;
    }
    dt_backend_params params = { .measure = mp, .work_dir = o->work_dir, .seed = 0 };
    void *state = NULL;
    dt_error err = { 0 };
    if (dt_cuda_backend_open_builder(&device, &params, &state, &err) != 0) {
        fprintf(stderr, "cuda_bench: %s\n", err.msg);
        return 1;
    }
    int threads = mp->builders > 0 ? mp->builders : 1, rc = 0;
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    dt_point *points = calloc((size_t)o->cv_configs, sizeof *points);
    char list[sizeof o->cv_tasks];
    snprintf(list, sizeof list, "%s", o->cv_tasks);
    char *save = NULL;
    for (char *name = strtok_r(list, ",", &save); name && tid && points && rc == 0;
         name = strtok_r(NULL, ",", &save)) {
        int k = dt_model_find_task(model, name);
        dt_space space;
        if (k < 0 || cv_points(&model->tasks[k], o->cv_configs, &space, points) != 0) {
            fprintf(stderr, "cuda_bench: no configs for task %s\n", name);
            rc = 2;
            break;
        }
        prebuild_job job = { .state = state, .space = &space, .points = points, .n = o->cv_configs };
        double start = dt_now_seconds();
        int started = 0;
        while (started < threads && pthread_create(&tid[started], NULL, prebuild_worker, &job) == 0)
            started++;
        if (started == 0)
            prebuild_worker(&job);
        for (int t = 0; t < started; t++)
            pthread_join(tid[t], NULL);
        printf("  %-14s %d configs for sm_%d: %d built or cached, %d invalid, %d other (%.0f s, "
               "%d threads)\n", name, o->cv_configs, o->prebuild_cc, atomic_load(&job.ok),
               atomic_load(&job.invalid), atomic_load(&job.other), dt_now_seconds() - start,
               started ? started : 1);
        fflush(stdout);
        dt_space_free(&space);
    }
    if (!tid || !points) {
        fprintf(stderr, "cuda_bench: out of memory\n");
        rc = 1;
    }
    free(tid);
    free(points);
    dt_cuda_backend.close(state);
    return rc;
}

/* ---- command line --------------------------------------------------------------------------- */

static int parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->parts, sizeof o->parts, "t");
    snprintf(o->model, sizeof o->model, "models/resnet18.yaml");
    snprintf(o->strategy, sizeof o->strategy, "autotvm");
    snprintf(o->work_dir, sizeof o->work_dir, "/tmp/dtune_cuda_bench");
    snprintf(o->cv_tasks, sizeof o->cv_tasks, "layer2_3x3,layer3_3x3,layer4_3x3");
    snprintf(o->cv_flush, sizeof o->cv_flush, "both");
    o->trials = 200;
    o->batch = 32;
    o->cv_configs = 200;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val) {
            fprintf(stderr, "cuda_bench: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--model") == 0)
            snprintf(o->model, sizeof o->model, "%s", val);
        else if (strcmp(a, "--parts") == 0 && strlen(val) < sizeof o->parts &&
                 strspn(val, "tc") == strlen(val))
            snprintf(o->parts, sizeof o->parts, "%s", val);
        else if (strcmp(a, "--best") == 0)
            snprintf(o->best, sizeof o->best, "%s", val);
        else if (strcmp(a, "--cv-configs") == 0 && atoi(val) > 0)
            o->cv_configs = atoi(val);
        else if (strcmp(a, "--builders") == 0 && atoi(val) > 0)
            o->builders = atoi(val);
        else if (strcmp(a, "--strategy") == 0)
            snprintf(o->strategy, sizeof o->strategy, "%s", val);
        else if (strcmp(a, "--tasks") == 0)
            snprintf(o->tasks, sizeof o->tasks, "%s", val);
        else if (strcmp(a, "--cv-tasks") == 0 && strlen(val) < sizeof o->cv_tasks)
            snprintf(o->cv_tasks, sizeof o->cv_tasks, "%s", val);
        else if (strcmp(a, "--cv-flush") == 0 &&
                 (!strcmp(val, "off") || !strcmp(val, "on") || !strcmp(val, "both")))
            snprintf(o->cv_flush, sizeof o->cv_flush, "%s", val);
        else if (strcmp(a, "--work-dir") == 0)
            snprintf(o->work_dir, sizeof o->work_dir, "%s", val);
        else if (strcmp(a, "--trials") == 0 && atoi(val) > 0)
            o->trials = atoi(val);
        else if (strcmp(a, "--batch") == 0 && atoi(val) > 0)
            o->batch = atoi(val);
        else if (strcmp(a, "--prebuild") == 0 && atoi(val) > 0)
            o->prebuild_cc = atoi(val);
        else {
            fprintf(stderr, "cuda_bench: unknown option or bad value: %s %s\n", a, val);
            return 2;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], DT_CUDA_RUNNER_ARG) == 0)
        return dt_cuda_backend_runner_main(argc, argv);
    options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    dt_cuda_device_info info;
    dt_error err = { 0 };
    if (o.prebuild_cc == 0 && dt_cuda_api_device_probe(0, &info, &err) != 0) {
        printf("cuda_bench: needs an NVIDIA GPU and its driver (%s); nothing measured\n", err.msg);
        return 0;
    }
    dt_model *model = NULL;
    if (dt_model_load(o.model, &model, &err) != 0) {
        fprintf(stderr, "cuda_bench: %s\n", err.msg);
        return 2;
    }
    dt_config cfg;
    dt_config_defaults(&cfg);
    if (o.builders > 0)
        cfg.measure.builders = o.builders;
    if (o.prebuild_cc)
        rc = run_prebuild(&o, model, &cfg.measure);
    else if (strchr(o.parts, 't'))
        rc = run_table(&o, model, &cfg.measure, &info);
    if (rc == 0 && !o.prebuild_cc && strchr(o.parts, 'c'))
        run_cv(&o, model, &cfg.measure);
    dt_model_free(model);
    return rc;
}
