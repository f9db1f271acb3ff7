/* measure_bench.c — what the CPU measurer costs and what its kernels reach.
 *
 *   a. CV early stopping (measure defaults: auto micro-batches of ~2 ms,
 *      min 3, CV < 0.10, max 20) against fixed repeats (50 calls x 10
 *      micro-batches = AutoTVM's number=500) on the same random configs of
 *      three ResNet-18 tasks: wall seconds of the run step of each, and
 *      Kendall tau-b between the two GFLOPS rankings.
 *   b. The best of N random configs of each ResNet-18 conv2d task against
 *      oneDNN on the same shape (its preferred blocked layouts, weights and
 *      input reordered outside the timing), and dense against OpenBLAS
 *      sgemm, same thread count, same core, as ratios. Both sides are
 *      re-timed the same way: 10 micro-batches of ~30 ms, mean GFLOPS.
 *   c. The CV of one config timed 20 times with builders idle, busy on the
 *      other cores, and busy on the runner's own core.
 *
 * usage: measure_bench [--parts abc] [--configs-a N] [--configs-b N]
 *                      [--threads T] [--dir DIR]
 * Defaults: all parts, 200 and 500 configs, 1 thread, /tmp/dtune-measure-bench.
 * OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are set to T (by re-executing
 * itself) so the vendors use the same thread count as the kernels.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_rng.h>
#include <oneapi/dnnl/dnnl.h>

#include "cpu_backend.h"
#include "cpu_codegen.h"
#include "dtune/config.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "cpu_runner.h"
#include "dtune/space.h"
#include "dtune/util.h"
#include "dtune/target.h"
#include "rank_stats.h"

/* OpenBLAS: the Fortran symbol, because GSL's CBLAS (linked first) also
 * defines cblas_sgemm. */
void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
            const float *beta, float *c, const int *ldc);
char *openblas_get_corename(void);
char *openblas_get_config(void);

#define BATCH 50
#define FINAL_BATCHES 10
#define FINAL_BATCH_S 0.03

typedef struct bench {
    const char *parts;
    int configs_a, configs_b, threads;
    char dir[512];
    dt_model *model;
    dt_measure_params measure;   /* the defaults, threads applied */
} bench;

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "measure_bench: %s: %s\n", what, msg);
    exit(1);
}

static dt_measurer *open_measurer(const bench *b, const dt_measure_params *cfg)
{
    dt_measurer *m;
    dt_error err;
    if (dt_measurer_new(&dt_cpu_backend, cfg, b->dir, 1, &m, &err) != 0)
        die("measurer", err.msg);
    return m;
}

static void random_points(const dt_space *space, int n, unsigned long seed, dt_point *out)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    for (int i = 0; i < n; i++)
        dt_space_random(space, rng, &out[i]);
    gsl_rng_free(rng);
}

static const dt_task *task_named(const bench *b, const char *name)
{
    int k = dt_model_find_task(b->model, name);
    if (k < 0)
        die("model", name);
    return &b->model->tasks[k];
}

/* ---- a. CV early stopping against fixed repeats ------------------------------------ */

typedef struct part_a_totals {
    double fixed_s, cv_s;
    int pairs;
} part_a_totals;

static void part_a_task(const bench *b, const dt_task *task, part_a_totals *tot)
{
    dt_measure_params fixed = b->measure, cv = b->measure;
    fixed.micro_batch = 50;
    fixed.min_batches = fixed.max_repeats = 10;
    fixed.cv_threshold = 0;
    dt_space space;
    dt_error err;
    if (dt_target_space_init(&space, task, DT_TARGET_CPU, &err) != 0)
        die("space", err.msg);
    int n = b->configs_a;
    dt_point *points = calloc((size_t)n, sizeof *points);
    dt_measure_result *rf = calloc((size_t)n, sizeof *rf), *rc = calloc((size_t)n, sizeof *rc);
    double *gf = calloc((size_t)n, sizeof *gf), *gc = calloc((size_t)n, sizeof *gc);
    if (!points || !rf || !rc || !gf || !gc)
        die("part a", "out of memory");
    random_points(&space, n, 42, points);
    dt_measurer *mf = open_measurer(b, &fixed), *mc = open_measurer(b, &cv);
    for (int i = 0; i < n; i += BATCH) {
        int len = n - i < BATCH ? n - i : BATCH;
        dt_measurer *first = (i / BATCH) % 2 ? mc : mf, *second = first == mf ? mc : mf;
        if (dt_measurer_run(first, &space, points + i, len, first == mf ? rf + i : rc + i, &err) ||
            dt_measurer_run(second, &space, points + i, len, second == mf ? rf + i : rc + i, &err))
            die("measure", err.msg);
    }
    double sf = 0, sc = 0;
    int pairs = 0, repeats = 0;
    for (int i = 0; i < n; i++) {
        sf += rf[i].run_ms * 1e-3;
        sc += rc[i].run_ms * 1e-3;
        if (rf[i].result == DT_RESULT_OK && rc[i].result == DT_RESULT_OK) {
            gf[pairs] = rf[i].gflops;
            gc[pairs] = rc[i].gflops;
            repeats += rc[i].repeats;
            pairs++;
        }
    }
    printf("  %-14s configs %d ok %d  fixed %.2f s  cv %.2f s  (%.2fx less)  mean cv repeats %.1f  "
           "tau %.3f\n", task->name, n, pairs, sf, sc, sf / sc, pairs ? (double)repeats / pairs : 0,
           kendall_tau_b(gf, gc, pairs));
    fflush(stdout);
    tot->fixed_s += sf;
    tot->cv_s += sc;
    dt_measurer_free(mf);
    dt_measurer_free(mc);
    dt_space_free(&space);
    free(points);
    free(rf);
    free(rc);
    free(gf);
    free(gc);
}

static void part_a(const bench *b)
{
    static const char *const names[] = { "layer2_down", "layer3_down", "layer4_down" };
    printf("\n(a) CV early stopping vs fixed 500 calls, %d random configs per task\n", b->configs_a);
    part_a_totals tot = { 0 };
    for (int i = 0; i < 3; i++)
        part_a_task(b, task_named(b, names[i]), &tot);
    printf("  total: fixed %.1f s, cv %.1f s: %.2fx less timing time\n", tot.fixed_s, tot.cv_s,
           tot.fixed_s / tot.cv_s);
    printf("  (tau per task above; goal >= 2.5x with tau >= 0.9)\n");
}

/* ---- re-timing both sides the same way ------------------------------------------------- */

typedef void (*call_fn)(void *arg);

/* 10 micro-batches of ~30 ms after a warm-up; mean of the per-batch GFLOPS. */
static double time_in_process(call_fn fn, void *arg, double flops)
{
    fn(arg);
    double t0 = dt_now_seconds();
    fn(arg);
    double one = dt_now_seconds() - t0;
    long calls = (long)ceil(FINAL_BATCH_S / (one > 1e-7 ? one : 1e-7));
    double sum = 0;
    for (int r = 0; r < FINAL_BATCHES; r++) {
        double s = dt_now_seconds();
        for (long c = 0; c < calls; c++)
            fn(arg);
        sum += flops * (double)calls / (dt_now_seconds() - s) * 1e-9;
    }
    return sum / FINAL_BATCHES;
}

/* Our artifact re-timed by the runner with the same batch rule; also returns
 * the runner's cores (to pin the vendor's timing to them). */
static double retime_ours(const bench *b, const dt_task *task, const dt_artifact *a,
                          double latency_s, int *cpus, int *ncpus)
{
    dt_measure_params m = b->measure;
    m.micro_batch = (int)ceil(FINAL_BATCH_S / (latency_s > 1e-7 ? latency_s : 1e-7));
    m.min_batches = m.max_repeats = FINAL_BATCHES;
    m.cv_threshold = 0;
    dt_backend_params params = { .measure = &m, .work_dir = b->dir, .seed = 1 };
    dt_cpu_options opts;
    dt_cpu_backend_default_options(&m, &opts);
    void *cpu;
    dt_error err;
    dt_measure_result r;
    if (dt_cpu_backend_open(&params, &opts, &cpu, &err) != 0 ||
        dt_cpu_backend_run_artifact(cpu, task, a, &r, &err) != 0)
        die("retime", err.msg);
    *ncpus = dt_cpu_runner_cpus(dt_cpu_backend_runner(cpu), cpus, 64);
    dt_cpu_backend.close(cpu);
    return r.result == DT_RESULT_OK ? r.gflops : 0;
}

static void pin_self(const int *cpus, int n, cpu_set_t *saved)
{
    sched_getaffinity(0, sizeof *saved, saved);
    if (n <= 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < n; i++)
        CPU_SET(cpus[i], &set);
    sched_setaffinity(0, sizeof set, &set);
}

/* ---- oneDNN ------------------------------------------------------------------------------- */

typedef struct onednn_conv {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t conv;
    dnnl_memory_t src, wei, dst;
    char impl[64];
} onednn_conv;

#define DNNL_OK(call)                                                \
    do {                                                             \
        dnnl_status_t st_ = (call);                                  \
        if (st_ != dnnl_success)                                     \
            die("oneDNN", #call);                                    \
    } while (0)

/* Memory in the primitive's layout md, filled from plain data (tag). */
static dnnl_memory_t onednn_filled(onednn_conv *o, const dnnl_memory_desc_t *md, int ndims,
                                   const dnnl_dims_t dims, dnnl_format_tag_t tag, float *data)
{
    dnnl_memory_desc_t user_md;
    dnnl_memory_t user, mem;
    DNNL_OK(dnnl_memory_desc_init_by_tag(&user_md, ndims, dims, dnnl_f32, tag));
    DNNL_OK(dnnl_memory_create(&user, &user_md, o->engine, data));
    DNNL_OK(dnnl_memory_create(&mem, md, o->engine, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t reorder;
    DNNL_OK(dnnl_reorder_primitive_desc_create(&rpd, &user_md, o->engine, md, o->engine, NULL));
    DNNL_OK(dnnl_primitive_create(&reorder, rpd));
    dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, user }, { DNNL_ARG_TO, mem } };
    DNNL_OK(dnnl_primitive_execute(reorder, o->stream, 2, args));
    DNNL_OK(dnnl_stream_wait(o->stream));
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(user);
    return mem;
}

static void onednn_setup(onednn_conv *o, const dt_task *t, float *x, float *w)
{
    const dt_conv_shape *c = &t->conv;
    DNNL_OK(dnnl_engine_create(&o->engine, dnnl_cpu, 0));
    DNNL_OK(dnnl_stream_create(&o->stream, o->engine, dnnl_stream_default_flags));
    dnnl_dims_t sd = { c->n, c->c_in, c->h, c->w }, wd = { c->c_out, c->c_in, c->kh, c->kw },
                dd = { c->n, c->c_out, c->oh, c->ow }, strides = { c->sh, c->sw },
                dil = { c->dh - 1, c->dw - 1 }, pad = { c->ph, c->pw };
    dnnl_memory_desc_t smd, wmd, dmd;
    DNNL_OK(dnnl_memory_desc_init_by_tag(&smd, 4, sd, dnnl_f32, dnnl_format_tag_any));
    DNNL_OK(dnnl_memory_desc_init_by_tag(&wmd, 4, wd, dnnl_f32, dnnl_format_tag_any));
    DNNL_OK(dnnl_memory_desc_init_by_tag(&dmd, 4, dd, dnnl_f32, dnnl_format_tag_any));
    dnnl_convolution_desc_t cd;
    DNNL_OK(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
            dnnl_convolution_direct, &smd, &wmd, NULL, &dmd, strides, dil, pad, pad));
    dnnl_primitive_desc_t pd;
    DNNL_OK(dnnl_primitive_desc_create(&pd, &cd, NULL, o->engine, NULL));
    const char *impl = NULL;
    DNNL_OK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    snprintf(o->impl, sizeof o->impl, "%s", impl ? impl : "?");
    o->src = onednn_filled(o, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), 4, sd,
                           dnnl_nchw, x);
    o->wei = onednn_filled(o, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), 4, wd,
                           dnnl_oihw, w);
    DNNL_OK(dnnl_memory_create(&o->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0),
                               o->engine, DNNL_MEMORY_ALLOCATE));
    DNNL_OK(dnnl_primitive_create(&o->conv, pd));
    dnnl_primitive_desc_destroy(pd);
}

static void onednn_call(void *arg)
{
    onednn_conv *o = arg;
    dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, o->src }, { DNNL_ARG_WEIGHTS, o->wei },
                                { DNNL_ARG_DST, o->dst } };
    DNNL_OK(dnnl_primitive_execute(o->conv, o->stream, 3, args));
    DNNL_OK(dnnl_stream_wait(o->stream));
}

static void onednn_free(onednn_conv *o)
{
    dnnl_primitive_destroy(o->conv);
    dnnl_memory_destroy(o->src);
    dnnl_memory_destroy(o->wei);
    dnnl_memory_destroy(o->dst);
    dnnl_stream_destroy(o->stream);
    dnnl_engine_destroy(o->engine);
}

/* ---- OpenBLAS ------------------------------------------------------------------------------ */

typedef struct blas_dense {
    const dt_mm_shape *mm;
    float *x, *w, *y;
} blas_dense;

/* Row-major Y[M][N] = X[M][K] W[N][K]^T is column-major Y^T = W^T' X^T. */
static void blas_call(void *arg)
{
    blas_dense *d = arg;
    const float one = 1, zero = 0;
    sgemm_("T", "N", &d->mm->n, &d->mm->m, &d->mm->k, &one, d->w, &d->mm->k, d->x, &d->mm->k,
           &zero, d->y, &d->mm->n);
}

/* ---- b. best of N random configs against the vendors -------------------------------------------- */

typedef struct best_config {
    double gflops, latency_s;
    dt_point point;
    bool found;
} best_config;

static best_config search_random(const bench *b, const dt_task *task, dt_space *space)
{
    int n = b->configs_b;
    dt_point *points = calloc((size_t)n, sizeof *points);
    dt_measure_result *res = calloc((size_t)n, sizeof *res);
    if (!points || !res)
        die("part b", "out of memory");
    random_points(space, n, 7, points);
    dt_measurer *m = open_measurer(b, &b->measure);
    dt_error err;
    best_config best = { 0 };
    for (int i = 0; i < n; i += BATCH) {
        int len = n - i < BATCH ? n - i : BATCH;
        if (dt_measurer_run(m, space, points + i, len, res + i, &err) != 0)
            die("measure", err.msg);
    }
    for (int i = 0; i < n; i++)
        if (res[i].result == DT_RESULT_OK && res[i].gflops > best.gflops) {
            best = (best_config){ res[i].gflops, res[i].latency_s, points[i], true };
        }
    dt_measurer_free(m);
    free(points);
    free(res);
    return best;
}

static double vendor_gflops(const dt_task *t, const int *cpus, int ncpus, char *impl, size_t len)
{
    size_t ni, nw, no;
    dt_task_tensor_sizes(t, &ni, &nw, &no);
    float *x = malloc(ni * 4), *w = malloc(nw * 4), *y = malloc(no * 4);
    if (!x || !w || !y)
        die("vendor", "out of memory");
    dt_cpu_runner_fill(x, ni, 3);
    dt_cpu_runner_fill(w, nw, 4);
    cpu_set_t saved;
    pin_self(cpus, ncpus, &saved);
    double g;
    if (t->kind == DT_OP_CONV2D) {
        onednn_conv o;
        onednn_setup(&o, t, x, w);
        snprintf(impl, len, "oneDNN %s", o.impl);
        g = time_in_process(onednn_call, &o, t->flops);
        onednn_free(&o);
    } else {
        blas_dense d = { &t->mm, x, w, y };
        snprintf(impl, len, "OpenBLAS sgemm (core %s)", openblas_get_corename());
        g = time_in_process(blas_call, &d, t->flops);
    }
    sched_setaffinity(0, sizeof saved, &saved);
    free(x);
    free(w);
    free(y);
    return g;
}

static void part_b_task(const bench *b, const dt_task *task, double *worst_3x3)
{
    dt_space space;
    dt_error err;
    if (dt_target_space_init(&space, task, DT_TARGET_CPU, &err) != 0)
        die("space", err.msg);
    double t0 = dt_now_seconds();
    best_config best = search_random(b, task, &space);
    double search_s = dt_now_seconds() - t0;
    if (!best.found) {
        printf("  %-14s no valid config measured\n", task->name);
        dt_space_free(&space);
        return;
    }
    dt_cpu_plan plan;
    dt_cpu_plan_from_point(&space, &best.point, b->threads, &plan);
    char *src;
    dt_artifact a;
    if (dt_cpu_codegen(&plan, &src, &err) != 0)
        die("codegen", err.msg);
    void *cpu;
    dt_backend_params params = { .measure = &b->measure, .work_dir = b->dir, .seed = 1 };
    dt_cpu_options opts;
    dt_cpu_backend_default_options(&b->measure, &opts);
    if (dt_cpu_backend_open(&params, &opts, &cpu, &err) != 0 || dt_cpu_backend_build_source(cpu, src, plan.threads, &a, &err) != 0)
        die("build", err.msg);
    dt_cpu_backend.close(cpu);
    free(src);
    int cpus[64], ncpus = 0;
    double ours = retime_ours(b, task, &a, best.latency_s, cpus, &ncpus);
    char impl[128], knobs[512];
    double vendor = vendor_gflops(task, cpus, ncpus, impl, sizeof impl);
    dt_space_point_str(&space, &best.point, knobs, sizeof knobs);
    printf("  %-14s ours %7.1f GFLOPS  vendor %7.1f  ratio %.2f  [%s; search %.0f s]\n"
           "  %-14s   best: %s\n", task->name, ours, vendor, ours / vendor, impl, search_s, "", knobs);
    fflush(stdout);
    if (task->kind == DT_OP_CONV2D && task->conv.kh == 3 && ours / vendor < *worst_3x3)
        *worst_3x3 = ours / vendor;
    dt_space_free(&space);
}

static void part_b(const bench *b)
{
    printf("\n(b) best of %d random configs vs vendor, %d thread(s); OpenBLAS core %s\n",
           b->configs_b, b->threads, openblas_get_corename());
    double worst = INFINITY;
    for (int k = 0; k < b->model->ntasks; k++)
        part_b_task(b, &b->model->tasks[k], &worst);
    printf("  worst ours/vendor over the 3x3 convs: %.2f (space goal: >= 1/1.5 = 0.67)\n", worst);
}

/* ---- c. CV busy vs idle ---------------------------------------------------------------------- */

typedef struct busy_load {
    pthread_t thread;
    atomic_bool stop;
    void *cpu;                   /* its own backend: its own cache directory */
    cpu_set_t cpus;
    const dt_task *task;
    int compiles;
} busy_load;

static void *busy_main(void *arg)
{
    busy_load *l = arg;
    sched_setaffinity(0, sizeof l->cpus, &l->cpus);   /* cc inherits this thread's mask */
    dt_cpu_plan plan;
    dt_cpu_plan_default(l->task, 1, &plan);
    plan.co_block = 16;
    plan.vec = 16;
    plan.ow_block = 7;
    char *src;
    if (dt_cpu_codegen(&plan, &src, NULL) != 0)
        return NULL;
    size_t len = strlen(src);
    char *unique = malloc(len + 64);
    while (unique && !atomic_load(&l->stop)) {
        snprintf(unique, len + 64, "%s/* busy %d */\n", src, l->compiles++);
        dt_artifact a;
        if (dt_cpu_backend_build_source(l->cpu, unique, 1, &a, NULL) != 0)
            break;
    }
    free(unique);
    free(src);
    return NULL;
}

static double cv_of_20(void *cpu, const dt_task *task, const dt_artifact *a, double *mean)
{
    double g[20], sum = 0, sq = 0;
    for (int i = 0; i < 20; i++) {
        dt_measure_result r;
        dt_error err;
        if (dt_cpu_backend_run_artifact(cpu, task, a, &r, &err) != 0 || r.result != DT_RESULT_OK)
            die("part c", r.detail);
        g[i] = r.gflops;
        sum += g[i];
    }
    *mean = sum / 20;
    for (int i = 0; i < 20; i++)
        sq += (g[i] - *mean) * (g[i] - *mean);
    return sqrt(sq / 20) / *mean;
}

static void part_c_condition(const bench *b, void *cpu, const dt_task *task, const dt_artifact *a,
                             const char *label, const cpu_set_t *load_cpus)
{
    busy_load load = { .task = task };
    char dir[600];
    snprintf(dir, sizeof dir, "%s/busy", b->dir);
    if (load_cpus) {
        dt_backend_params params = { .measure = &b->measure, .work_dir = dir, .seed = 1 };
        dt_cpu_options opts;
        dt_cpu_backend_default_options(&b->measure, &opts);
        if (dt_cpu_backend_open(&params, &opts, &load.cpu, NULL) != 0)
            die("part c", "cannot open the load's backend");
        load.cpus = *load_cpus;
        atomic_init(&load.stop, false);
        if (pthread_create(&load.thread, NULL, busy_main, &load) != 0)
            die("part c", "pthread_create");
        struct timespec warm = { 0, 300 * 1000 * 1000 };
        nanosleep(&warm, NULL);
    }
    double mean, cv = cv_of_20(cpu, task, a, &mean);
    if (load_cpus) {
        atomic_store(&load.stop, true);
        pthread_join(load.thread, NULL);
        dt_cpu_backend.close(load.cpu);
    }
    printf("  %-34s CV %.4f over 20 measurements (mean %.1f GFLOPS%s)\n", label, cv, mean,
           load_cpus ? "" : "");
    if (load_cpus)
        printf("  %-34s (%d compiles ran meanwhile)\n", "", load.compiles);
    fflush(stdout);
}

static void part_c(const bench *b)
{
    const dt_task *task = task_named(b, "layer2_3x3");
    dt_cpu_plan plan;
    dt_cpu_plan_default(task, b->threads, &plan);
    /* a good config at this machine's width (32 x 16 lanes with AVX-512,
     * 16 x 8 with AVX2; a wider vector would be the slow split kind) */
    plan.vec = dt_cpu_plan_native_lanes();
    plan.co_block = 2 * plan.vec;
    plan.ow_block = 14;
    plan.ci_block = 32;
    plan.order = 3;
    plan.unroll = 1;
    char *src;
    dt_error err;
    dt_artifact a;
    void *cpu;
    dt_backend_params params = { .measure = &b->measure, .work_dir = b->dir, .seed = 1 };
    dt_cpu_options opts;
    dt_cpu_backend_default_options(&b->measure, &opts);
    if (dt_cpu_codegen(&plan, &src, &err) != 0 || dt_cpu_backend_open(&params, &opts, &cpu, &err) != 0 ||
        dt_cpu_backend_build_source(cpu, src, plan.threads, &a, &err) != 0)
        die("part c", err.msg);
    free(src);
    dt_measure_result r;
    if (dt_cpu_backend_run_artifact(cpu, task, &a, &r, &err) != 0)     /* check + start the child */
        die("part c", err.msg);
    int runner[64], nr = dt_cpu_runner_cpus(dt_cpu_backend_runner(cpu), runner, 64);
    cpu_set_t all, same, others;
    sched_getaffinity(0, sizeof all, &all);
    CPU_ZERO(&same);
    others = all;
    for (int i = 0; i < nr; i++) {
        CPU_SET(runner[i], &same);
        CPU_CLR(runner[i], &others);
    }
    printf("\n(c) one config of %s (co=%d v%d ow=14 ci=32 order 3) timed 20 times with default CV "
           "settings; runner on cpu", task->name, plan.co_block, plan.vec);
    for (int i = 0; i < nr; i++)
        printf(" %d", runner[i]);
    printf("\n");
    part_c_condition(b, cpu, task, &a, "builders idle", NULL);
    if (nr > 0 && CPU_COUNT(&others) > 0)
        part_c_condition(b, cpu, task, &a, "builders busy on the other cores", &others);
    if (nr > 0)
        part_c_condition(b, cpu, task, &a, "builders busy on the runner's core", &same);
    dt_cpu_backend.close(cpu);
}

/* ---- main ----------------------------------------------------------------------------------- */

static void parse(int argc, char **argv, bench *b)
{
    b->parts = "abc";
    b->configs_a = 200;
    b->configs_b = 500;
    b->threads = 1;
    snprintf(b->dir, sizeof b->dir, "/tmp/dtune-measure-bench");
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--parts") == 0)
            b->parts = argv[i + 1];
        else if (strcmp(argv[i], "--configs-a") == 0)
            b->configs_a = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--configs-b") == 0)
            b->configs_b = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--threads") == 0)
            b->threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--dir") == 0)
            snprintf(b->dir, sizeof b->dir, "%s", argv[i + 1]);
        else
            die("unknown option", argv[i]);
    }
    if (b->configs_a < 2 || b->configs_b < 1 || b->threads < 1)
        die("options", "counts must be positive");
}

/* The vendors read their thread counts from the environment at load time. */
static void ensure_thread_env(int threads, char **argv)
{
    char want[16];
    snprintf(want, sizeof want, "%d", threads);
    const char *omp = getenv("OMP_NUM_THREADS"), *blas = getenv("OPENBLAS_NUM_THREADS");
    if (omp && blas && strcmp(omp, want) == 0 && strcmp(blas, want) == 0)
        return;
    setenv("OMP_NUM_THREADS", want, 1);
    setenv("OPENBLAS_NUM_THREADS", want, 1);
    execv("/proc/self/exe", argv);
    die("execv", "cannot re-execute with the thread environment");
}

static void print_machine(const bench *b)
{
    char line[256], model[256] = "?";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (f)
        fclose(f);
    const dnnl_version_t *v = dnnl_version();
    printf("machine: %s, %ld cpus; kernel threads %d; oneDNN %d.%d.%d; %s\n", model,
           sysconf(_SC_NPROCESSORS_ONLN), b->threads, v->major, v->minor, v->patch,
           openblas_get_config());
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], DT_CPU_RUNNER_ARG) == 0)
        return dt_cpu_runner_main(argc, argv);
    bench b;
    parse(argc, argv, &b);
    ensure_thread_env(b.threads, argv);
    dt_config cfg;
    dt_config_defaults(&cfg);
    b.measure = cfg.measure;
    b.measure.threads = b.threads;
    dt_error err;
    if (dt_model_load("models/resnet18.yaml", &b.model, &err) != 0)
        die("model (run from the repository root)", err.msg);
    print_machine(&b);
    double t0 = dt_now_seconds();
    if (strchr(b.parts, 'c'))
        part_c(&b);
    if (strchr(b.parts, 'a'))
        part_a(&b);
    if (strchr(b.parts, 'b'))
        part_b(&b);
    printf("\nbench wall time %.0f s\n", dt_now_seconds() - t0);
    dt_model_free(b.model);
    return 0;
}
