/* measure.c — the measurer: a builder thread pool, the runner (the calling
 * thread), and the CV early-stopping rule shared by every backend.
 *
 * The batch's points are claimed one by one (an atomic counter) by
 * `measure.builders` threads, each calling backend->build; the calling thread
 * times the artifacts one at a time with backend->run. Two schedules:
 *   pipelined — when the machine has more cores than the runner's kernel
 *     threads, the builders are pinned to the cores the runner does not use
 *     (the CPU backend pins its measurement process to the last
 *     `measure.threads` cores), and the runner times artifact i as soon as it
 *     is built while the builders compile the rest of the batch;
 *   two-phase — otherwise, every point is built first and the builders sleep
 *     on a condition variable while the runner times, so no compile ever
 *     shares a core with a timing. The builders share one batch and claim from one
 * counter instead of owning a queue each: the batch is small and uneven in
 * compile time, and a shared counter balances it without stealing logic.
 *
 * CV rule (AdaTune, "Adaptive Evaluator"): after micro-batch i the estimate
 * Perf_i is added; timing stops when i >= min_batches and
 * CV = std({Perf_1..Perf_i}) / avg({Perf_1..Perf_i}) < threshold, else at
 * max_repeats. The backends feed each micro-batch's own GFLOPS as Perf_i (the
 * paper's running i * GFLOP / Time(i) smooths itself and reaches any CV
 * threshold on a noisy kernel; the per-batch figure does not).
 */
#include "dtune/measure.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/util.h"

/* ---- settings ------------------------------------------------------------------ */

dt_measure_params dt_measure_params_default(void)
{
    return (dt_measure_params){
        .cv_threshold = 0.10, .min_batches = 3, .micro_batch = 0, .max_repeats = 20,
        .timeout_seconds = 10, .compile_timeout_seconds = 0, .builders = 2, .cache_mb = 1024,
        .threads = 1,
        .check_output = true, .tolerance = 1e-3, .flush_l2 = false, .cold_weights = true,
        .spread_input = true,
        .limit_memory_mb = 0, .limit_cpu_seconds = 1800, .limit_open_files = 256,
        .cuda_device = 0, .confirm_rounds = 3,
    };
}

double dt_measure_compile_timeout(const dt_measure_params *measure)
{
    if (measure->compile_timeout_seconds > 0)
        return measure->compile_timeout_seconds;
    double t = 6 * measure->timeout_seconds;
    return t > 60 ? t : 60;
}

/* ---- CV early stopping ----------------------------------------------------- */

void dt_measure_cv_stop_init(dt_measure_cv_stop *s, int min_batches, int max_repeats, double cv_threshold)
{
    memset(s, 0, sizeof *s);
    s->min_batches = min_batches < 1 ? 1 : min_batches;
    s->max_repeats = max_repeats < s->min_batches ? s->min_batches : max_repeats;
    s->cv_threshold = cv_threshold;
}

bool dt_measure_cv_stop_add(dt_measure_cv_stop *s, double estimate)
{
    /* Welford's update keeps the variance exact without storing estimates. */
    s->n++;
    double delta = estimate - s->mean;
    s->mean += delta / s->n;
    s->m2 += delta * (estimate - s->mean);
    if (s->n >= s->max_repeats)
        return true;
    return s->n >= s->min_batches && dt_measure_cv_stop_cv(s) < s->cv_threshold;
}

double dt_measure_cv_stop_mean(const dt_measure_cv_stop *s)
{
    return s->mean;
}

double dt_measure_cv_stop_cv(const dt_measure_cv_stop *s)
{
    if (s->n < 2 || s->mean == 0)
        return s->n < 2 ? 0 : INFINITY;
    /* population std, as the paper's std over the i estimates */
    return sqrt(s->m2 / s->n) / fabs(s->mean);
}

/* ---- inputs and the output check ------------------------------------------- */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void dt_measure_fill(float *data, size_t n, uint64_t *state)
{
    for (size_t i = 0; i < n; i++)
        data[i] = (float)((double)(splitmix64(state) >> 11) * 0x1.0p-52 - 1.0);
}

long dt_measure_check_output(const float *output, const float *reference, size_t n,
                             double tolerance)
{
    double peak = 0;
    for (size_t i = 0; i < n; i++)
        peak = fmax(peak, fabs(reference[i]));
    for (size_t i = 0; i < n; i++) {
        double ref = reference[i], bound = tolerance * fmax(fabs(ref), peak / 100);
        if (!(fabs((double)output[i] - ref) <= bound))
            return (long)i;
    }
    return -1;
}

/* ---- the measurer ---------------------------------------------------------- */

struct dt_measurer {
    const dt_backend_i *backend;
    void *state;
    int nbuilders;
    pthread_t *threads;
    int nstarted;

    pthread_mutex_t mu;
    pthread_cond_t work_cv;      /* builders wait for a new generation */
    pthread_cond_t done_cv;      /* the runner waits for active == 0 */
    unsigned long generation;
    bool stopping;
    int active;                  /* builders still working on the batch */
    bool pipelined;              /* builders pinned off the runner's cores */
    cpu_set_t builder_cpus;      /* the spare cores: all but the runner's */
    pthread_cond_t ready_cv;     /* the runner waits for artifact i */
    unsigned char *ready;        /* per point: built */

    /* the batch being built */
    const dt_space *space;
    const dt_point *points;
    dt_artifact *artifacts;
    int n;
    atomic_int next;
    const dt_measure_limit *limit; /* when to stop starting points; may be NULL */
    int failure;                 /* first backend error of the batch */
    dt_error failure_err;
};

static void build_one(dt_measurer *m, int i)
{
    dt_artifact *a = &m->artifacts[i];
    memset(a, 0, sizeof *a);
    if (!dt_space_valid(m->space, &m->points[i])) {
        a->result = DT_RESULT_INVALID;
        snprintf(a->detail, sizeof a->detail, "point is not valid on this target");
        return;
    }
    dt_error err;
    dt_error_clear(&err);
    int rc = m->backend->build(m->state, m->space, &m->points[i], a, &err);
    if (rc < 0) {
        pthread_mutex_lock(&m->mu);
        if (m->failure == 0) {
            m->failure = rc;
            m->failure_err = err;
        }
        pthread_mutex_unlock(&m->mu);
    }
}

bool dt_measure_limit_reached(const dt_measure_limit *lim)
{
    return lim && ((lim->stop && atomic_load(lim->stop)) || (lim->deadline > 0 && dt_now_seconds() >= lim->deadline));
}

/* Claims points in order until none is left or the limit is reached, so the
 * built points are always a prefix of the batch. */
static void build_claimed(dt_measurer *m)
{
    for (;;) {
        if (dt_measure_limit_reached(m->limit))
            return;
        int i = atomic_fetch_add(&m->next, 1);
        if (i >= m->n)
            return;
        build_one(m, i);
        if (m->pipelined) {
            pthread_mutex_lock(&m->mu);
            m->ready[i] = 1;
            pthread_cond_broadcast(&m->ready_cv);
            pthread_mutex_unlock(&m->mu);
        }
    }
}

static void *builder_main(void *arg)
{
    dt_measurer *m = arg;
    unsigned long seen = 0;
    if (m->pipelined)
        pthread_setaffinity_np(pthread_self(), sizeof m->builder_cpus, &m->builder_cpus);
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (m->generation == seen && !m->stopping)
            pthread_cond_wait(&m->work_cv, &m->mu);
        if (m->stopping)
            break;
        seen = m->generation;
        pthread_mutex_unlock(&m->mu);
        build_claimed(m);
        pthread_mutex_lock(&m->mu);
        if (--m->active == 0) {
            pthread_cond_signal(&m->done_cv);
            pthread_cond_broadcast(&m->ready_cv);  /* a runner may wait for a point never built */
        }
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int dt_measure_spare_cpus(const dt_measure_params *params, cpu_set_t *set)
{
    cpu_set_t allowed;
    int want = params->threads < 1 ? 1 : params->threads;
    CPU_ZERO(set);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) <= want)
        return 0;
    int skipped = 0;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--) {
        if (!CPU_ISSET(cpu, &allowed))
            continue;
        if (skipped++ >= want)
            CPU_SET(cpu, set);
    }
    return CPU_COUNT(set);
}

/* The spare cores (dt_measure_spare_cpus) are the builders'; the schedule
 * is pipelined when there are builders and spare cores. */
static void choose_schedule(dt_measurer *m, const dt_measure_params *params)
{
    m->pipelined = dt_measure_spare_cpus(params, &m->builder_cpus) > 0 && m->nbuilders > 0;
}

int dt_measurer_spare_cpus(const dt_measurer *m, cpu_set_t *set)
{
    *set = m->builder_cpus;
    return CPU_COUNT(set);
}

/* Builders block every signal: the daemon's handlers run on its own thread. */
static int start_builders(dt_measurer *m, dt_error *err)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = 0;
    for (int i = 0; i < m->nbuilders && rc == 0; i++) {
        rc = pthread_create(&m->threads[i], NULL, builder_main, m);
        if (rc == 0)
            m->nstarted++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return dt_error_set(err, DT_ENOMEM, "cannot start builder thread: %s", strerror(rc));
    return 0;
}

int dt_measurer_new(const dt_backend_i *backend, const dt_measure_params *cfg,
                    const char *work_dir, uint64_t seed, dt_measurer **out, dt_error *err)
{
    *out = NULL;
    if (!backend || !backend->open || !backend->build || !backend->run)
        return dt_error_set(err, DT_EINVAL, "backend lacks open, build or run");
    dt_measurer *m = calloc(1, sizeof *m);
    if (!m)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    m->backend = backend;
    m->nbuilders = cfg->builders < 0 ? 0 : cfg->builders;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->work_cv, NULL);
    pthread_cond_init(&m->done_cv, NULL);
    pthread_cond_init(&m->ready_cv, NULL);
    dt_backend_params params = { .measure = cfg, .work_dir = work_dir, .seed = seed };
    int rc = backend->open(&params, &m->state, err);
    if (rc < 0)
        goto fail;
    m->threads = calloc((size_t)m->nbuilders + 1, sizeof *m->threads);
    if (!m->threads) {
        rc = dt_error_set(err, DT_ENOMEM, "out of memory");
        goto fail;
    }
    choose_schedule(m, cfg);
    if ((rc = start_builders(m, err)) < 0)
        goto fail;
    *out = m;
    return 0;
fail:
    dt_measurer_free(m);
    return rc;
}

void dt_measurer_free(dt_measurer *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stopping = true;
    pthread_cond_broadcast(&m->work_cv);
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < m->nstarted; i++)
        pthread_join(m->threads[i], NULL);
    if (m->state && m->backend->close)
        m->backend->close(m->state);
    pthread_cond_destroy(&m->work_cv);
    pthread_cond_destroy(&m->done_cv);
    pthread_cond_destroy(&m->ready_cv);
    pthread_mutex_destroy(&m->mu);
    free(m->threads);
    free(m);
}

/* Phase 1: every point built, in parallel when there are builders. */
/* Returns how many points (a prefix) were built, or a negative DT_E* code. */
static int build_batch(dt_measurer *m, const dt_space *space, const dt_point *points, int n,
                       dt_artifact *artifacts, const dt_measure_limit *limit, dt_error *err)
{
    pthread_mutex_lock(&m->mu);
    m->limit = limit;
    m->space = space;
    m->points = points;
    m->artifacts = artifacts;
    m->n = n;
    m->failure = 0;
    atomic_store(&m->next, 0);
    if (m->nstarted > 0) {
        m->active = m->nstarted;
        m->generation++;
        pthread_cond_broadcast(&m->work_cv);
        while (m->active > 0)
            pthread_cond_wait(&m->done_cv, &m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    if (m->nstarted == 0)
        build_claimed(m);
    if (m->failure < 0) {
        if (err)
            *err = m->failure_err;
        return m->failure;
    }
    int built = atomic_load(&m->next);
    return built < n ? built : n;
}

/* Phase 2, one point: an artifact that failed to build carries its class. */
static int run_one(dt_measurer *m, const dt_space *space, const dt_point *point,
                   const dt_artifact *a, dt_measure_result *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    if (a->result != DT_RESULT_OK) {
        out->result = a->result;
        snprintf(out->detail, sizeof out->detail, "%s", a->detail);
    } else {
        int rc = m->backend->run(m->state, space, point, a, out, err);
        if (rc < 0)
            return rc;
    }
    out->compile_ms = a->compile_ms;
    return 0;
}

/* Pipelined: builders (pinned off the runner's cores) go through the batch
 * while the runner times each artifact as soon as it is ready. */
static int run_pipelined(dt_measurer *m, const dt_space *space, const dt_point *points, int n,
                         dt_artifact *artifacts, dt_measure_result *results,
                         const dt_measure_limit *limit, dt_error *err)
{
    unsigned char *ready = calloc((size_t)n, 1);
    if (!ready)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    pthread_mutex_lock(&m->mu);
    m->limit = limit;
    m->space = space;
    m->points = points;
    m->artifacts = artifacts;
    m->ready = ready;
    m->n = n;
    m->failure = 0;
    atomic_store(&m->next, 0);
    m->active = m->nstarted;
    m->generation++;
    pthread_cond_broadcast(&m->work_cv);
    int rc = 0, done = 0;
    for (int i = 0; i < n && rc == 0 && !dt_measure_limit_reached(limit); i++) {
        while (!ready[i] && m->failure == 0 && m->active > 0)
            pthread_cond_wait(&m->ready_cv, &m->mu);
        if (!ready[i] && m->failure == 0)
            break;      /* the builders stopped at the limit before point i */
        if (m->failure < 0) {
            rc = m->failure;
            if (err)
                *err = m->failure_err;
            break;
        }
        pthread_mutex_unlock(&m->mu);
        rc = run_one(m, space, &points[i], &artifacts[i], &results[i], err);
        pthread_mutex_lock(&m->mu);
        if (rc == 0 && results[i].abandoned)
            break;
        done += rc == 0;
    }
    atomic_store(&m->next, n);  /* on an error, builders stop claiming */
    while (m->active > 0)
        pthread_cond_wait(&m->done_cv, &m->mu);
    m->ready = NULL;
    m->limit = NULL;
    pthread_mutex_unlock(&m->mu);
    free(ready);
    return rc < 0 ? rc : done;
}

int dt_measurer_run_until(dt_measurer *m, const dt_space *space, const dt_point *points,
                          int n, dt_measure_result *results, const dt_measure_limit *limit,
                          dt_error *err)
{
    if (n <= 0)
        return 0;
    dt_artifact *artifacts = calloc((size_t)n, sizeof *artifacts);
    if (!artifacts)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    int rc;
    if (m->backend->set_limit)
        m->backend->set_limit(m->state, limit);
    if (m->pipelined) {
        rc = run_pipelined(m, space, points, n, artifacts, results, limit, err);
    } else {
        int built = build_batch(m, space, points, n, artifacts, limit, err);
        rc = built < 0 ? built : 0;
        int done = 0;
        for (; rc == 0 && done < built && !dt_measure_limit_reached(limit); done++) {
            rc = run_one(m, space, &points[done], &artifacts[done], &results[done], err);
            if (rc == 0 && results[done].abandoned)
                break;
        }
        m->limit = NULL;
        if (rc == 0)
            rc = done;
    }
    if (m->backend->set_limit)
        m->backend->set_limit(m->state, NULL);
    free(artifacts);
    return rc;
}

int dt_measurer_run(dt_measurer *m, const dt_space *space, const dt_point *points,
                    int n, dt_measure_result *results, dt_error *err)
{
    int rc = dt_measurer_run_until(m, space, points, n, results, NULL, err);
    return rc < 0 ? rc : 0;
}

/* Reference calls timed in this process when the backend has no reference
 * slot: a naive implementation, so a few calls are enough. */
#define LOCAL_REFERENCE_CALLS 3

static int time_reference_here(const dt_task *task, dt_measure_result *out)
{
    size_t n_in, n_w, n_out;
    dt_task_tensor_sizes(task, &n_in, &n_w, &n_out);
    float *in = malloc((n_in ? n_in : 1) * sizeof *in), *w = malloc((n_w ? n_w : 1) * sizeof *w);
    float *o = malloc((n_out ? n_out : 1) * sizeof *o);
    if (in && w && o) {
        uint64_t state = 1;
        dt_measure_fill(in, n_in, &state);
        dt_measure_fill(w, n_w, &state);
        double t0 = dt_now_seconds();
        for (int i = 0; i < LOCAL_REFERENCE_CALLS; i++)
            dt_task_reference(task, in, w, o);
        out->latency_s = (dt_now_seconds() - t0) / LOCAL_REFERENCE_CALLS;
        out->repeats = LOCAL_REFERENCE_CALLS;
        out->result = DT_RESULT_OK;
    } else {
        out->result = DT_RESULT_RUNNER_ERROR;
        snprintf(out->detail, sizeof out->detail, "out of memory for the reference's tensors");
    }
    free(in);
    free(w);
    free(o);
    return 0;
}

int dt_measurer_reference(dt_measurer *m, const dt_task *task, dt_measure_result *out,
                          dt_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = m->backend->reference ? m->backend->reference(m->state, task, out, err)
                                   : time_reference_here(task, out);
    if (rc == 0 && out->result == DT_RESULT_OK && out->latency_s > 0)
        out->gflops = task->flops / out->latency_s * 1e-9;
    return rc;
}

double dt_measurer_peak_gflops(dt_measurer *m, const dt_task *task)
{
    if (!m->backend->peak_gflops)
        return 0;
    double peak = m->backend->peak_gflops(m->state, task);
    return peak > 0 ? peak : 0;
}

int dt_measurer_roofline(dt_measurer *m, const dt_task *task, dt_roofline *out)
{
    memset(out, 0, sizeof *out);
    if (m->backend->roofline)
        return m->backend->roofline(m->state, task ? task->bytes : -1, out) == 0 &&
               out->peak_gflops > 0 ? 0 : -1;
    out->peak_gflops = task ? dt_measurer_peak_gflops(m, task) : 0;
    out->threads = 1;
    snprintf(out->probe, sizeof out->probe, "%s backend's peak", m->backend->name);
    return out->peak_gflops > 0 ? 0 : -1;
}
