/* belief.c — segmentation, least-squares start, posterior sampling and the
 * predictive summary of one task's tuning curve (DynaTune §4.3), and the
 * thread pool that runs it for every task between slots.
 *
 * A prediction copies the modelled segment into the workspace (x re-indexed
 * from 1, ln x precomputed for the vectorised sum of squares), fits the
 * curve, builds the start centre (the fit lifted so f(horizon) clears the
 * best observed by 0.1 %, σ from its residuals), samples θ = (curve, σ) and
 * summarises f(horizon | θ) over the post-burn-in chain. The log posterior is
 *   −n ln σ − Σ (y_i − f(x_i | θ))² / (2σ²)   inside the prior's support,
 * −∞ outside it (box, σ ∈ (0, 1], increasing curve, f(horizon) ≥ best).
 */
#include "belief_internal.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "dtune/mcmc.h"
#include "dtune/util.h"

#define LIFT_MARGIN 1e-3    /* the start centre clears the best by this much */
#define INITIAL_CAPACITY 256

struct dt_belief {
    dt_belief_params params;
    int p;                  /* curve parameters; θ has p + 1 with σ last */
    dt_curve_fitter *fitter;
    dt_mcmc *sampler;
    int capacity;
    double *x, *log_x, *y;  /* the segment, x re-indexed from 1 */
    dt_curve_points pts;
    double lo[DT_CURVE_MAX_PARAMS], hi[DT_CURVE_MAX_PARAMS];
    double horizon;         /* in segment x */
    double best;            /* best observed */
    double x_offset;        /* history x = segment x + x_offset */
    double centre[DT_CURVE_MAX_PARAMS + 1], scale[DT_CURVE_MAX_PARAMS + 1];
    double *draws;          /* f(x | θ) of each kept sample, for the curve's quantiles */
    bool has_model;         /* pts, box, horizon and best are set */
    bool has_posterior;     /* the sampler's chain belongs to them */
};

dt_belief_params dt_belief_params_default(void)
{
    return (dt_belief_params){
        .family = DT_CURVE_LOG_POWER, .walkers = 10, .steps = 500, .burn_in = 250,
        .jump_threshold = 0.2, .min_segment_points = 10, .min_points = 5,
        .level_max = 1.0, .ball_scale = 1e-4, .seed = 1, .threads = 2,
    };
}

/* --- pieces usable without a workspace ------------------------------------------- */

int dt_belief_segment_start(const double *y, int n, double jump_threshold,
                            int min_segment_points)
{
    int min_points = min_segment_points > 1 ? min_segment_points : 1;
    for (int i = n - min_points; i >= 1; i--) {
        if (y[i] > (1.0 + jump_threshold) * y[i - 1])
            return i;
    }
    return 0;
}

int dt_belief_normalize(const double *gflops, int n, double peak_gflops, double *y,
                        dt_error *err)
{
    if (!(peak_gflops > 0) || !isfinite(peak_gflops) || n < 0 || (n > 0 && (!gflops || !y)))
        return dt_error_set(err, DT_EINVAL,
                            "belief: peak GFLOPS %g must be positive and finite",
                            peak_gflops);
    double best = 0;
    for (int i = 0; i < n; i++) {
        if (isfinite(gflops[i]) && gflops[i] > best)
            best = gflops[i];
        y[i] = best / peak_gflops;
    }
    return 0;
}

double dt_belief_expected_improvement(double mean, double std, double best)
{
    double gain = mean - best;
    if (!(std > 0))
        return gain > 0 ? gain : 0.0;
    double z = gain / std;
    return gain * gsl_cdf_ugaussian_P(z) + std * gsl_ran_ugaussian_pdf(z);
}

/* --- workspace ----------------------------------------------------------------------- */

static int check_params(const dt_belief_params *p, dt_error *err)
{
    if (dt_curve_param_count(p->family) == 0)
        return dt_error_set(err, DT_EINVAL, "belief: unknown curve family %d",
                            (int)p->family);
    if (p->steps < 1 || p->burn_in < 0 || p->burn_in >= p->steps)
        return dt_error_set(err, DT_EINVAL,
                            "belief: burn_in %d must be in [0, steps %d)", p->burn_in,
                            p->steps);
    if (!(p->jump_threshold >= 0) || p->min_segment_points < 1 || p->min_points < 1 ||
        !(p->level_max > 0) || !(p->ball_scale > 0))
        return dt_error_set(err, DT_EINVAL,
                            "belief: need jump_threshold ≥ 0, min_segment_points ≥ 1, "
                            "min_points ≥ 1, level_max > 0, ball_scale > 0");
    return 0;
}

static int grow_buffers(dt_belief *b, int capacity, dt_error *err)
{
    size_t n = (size_t)capacity;
    if (dt_resize(&b->x, n, sizeof *b->x) != 0 || dt_resize(&b->log_x, n, sizeof *b->log_x) != 0
        || dt_resize(&b->y, n, sizeof *b->y) != 0)
        return dt_error_set(err, DT_ENOMEM, "belief: no memory for %d points", capacity);
    b->capacity = capacity;
    return 0;
}

int dt_belief_new(const dt_belief_params *params, dt_belief **out, dt_error *err)
{
    *out = NULL;
    int rc = check_params(params, err);
    if (rc)
        return rc;
    dt_belief *b = calloc(1, sizeof *b);
    if (!b)
        return dt_error_set(err, DT_ENOMEM, "belief: out of memory");
    b->params = *params;
    b->p = dt_curve_param_count(params->family);
    dt_mcmc_params mp = dt_mcmc_params_default();
    mp.walkers = params->walkers;
    mp.ndim = b->p + 1;
    mp.max_steps = params->steps;
    mp.seed = params->seed;
    rc = dt_curve_fitter_new(params->family, INITIAL_CAPACITY, NULL, &b->fitter, err);
    if (!rc)
        rc = dt_mcmc_new(&mp, &b->sampler, err);
    if (!rc)
        rc = grow_buffers(b, INITIAL_CAPACITY, err);
    size_t kept = (size_t)(params->steps - params->burn_in) * (size_t)params->walkers;
    if (!rc && !(b->draws = malloc(kept * sizeof *b->draws)))
        rc = dt_error_set(err, DT_ENOMEM, "belief: no memory for %zu samples", kept);
    if (rc) {
        dt_belief_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

void dt_belief_free(dt_belief *belief)
{
    if (!belief)
        return;
    dt_curve_fitter_free(belief->fitter);
    dt_mcmc_free(belief->sampler);
    free(belief->x);
    free(belief->log_x);
    free(belief->y);
    free(belief->draws);
    free(belief);
}

/* --- the posterior -------------------------------------------------------------------- */

static double log_posterior(const double *theta, void *ctx)
{
    const dt_belief *b = ctx;
    dt_curve_family family = b->params.family;
    for (int j = 0; j < b->p; j++) {
        if (!(theta[j] >= b->lo[j] && theta[j] <= b->hi[j]))
            return -INFINITY;
    }
    double sigma = theta[b->p];
    if (!(sigma > 0 && sigma <= 1) || !dt_curve_increasing(family, theta))
        return -INFINITY;
    if (!(dt_curve_eval(family, theta, b->horizon) >= b->best))
        return -INFINITY;
    double sse = dt_curve_sse(family, theta, &b->pts);
    return -b->pts.n * log(sigma) - 0.5 * sse / (sigma * sigma);
}

double dt_belief_log_prob(const dt_belief *belief, const double *theta)
{
    if (!belief->has_model)
        return -INFINITY;
    return log_posterior(theta, (void *)belief);
}

/* --- one prediction ------------------------------------------------------------------- */

static void refuse(dt_belief_prediction *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void refuse(dt_belief_prediction *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof out->reason, fmt, ap);
    va_end(ap);
    out->ok = false;
    out->mean = out->best_observed;
    out->std = 0;
    out->predictive_std = 0;
    out->expected_improvement = 0;
    out->curve.n = 0;
}

static int reject_input(dt_belief_prediction *out, dt_error *err, const char *what)
{
    dt_error_set(err, DT_EINVAL, "belief: %s", what);
    refuse(out, "belief: %s", what);
    return DT_EINVAL;
}

static int check_history(const dt_belief_history *h, dt_belief_prediction *out,
                         dt_error *err)
{
    if (!h || !h->y || h->n < 0)
        return reject_input(out, err, "history needs y and n ≥ 0");
    for (int i = 0; i < h->n; i++) {
        if (!isfinite(h->y[i]))
            return reject_input(out, err, "history has a non-finite y");
        if (h->x && (!(h->x[i] >= 1) || !isfinite(h->x[i]) ||
                     (i > 0 && !(h->x[i] > h->x[i - 1]))))
            return reject_input(out, err, "history x must be finite, ≥ 1 and increasing");
    }
    double last_x = h->n == 0 ? 0 : h->x ? h->x[h->n - 1] : h->n;
    if (!isfinite(h->horizon) || h->horizon < last_x)
        return reject_input(out, err, "horizon is before the last trial");
    return 0;
}

static void init_prediction(dt_belief_prediction *out, const dt_belief_history *h)
{
    memset(out, 0, sizeof *out);
    out->horizon = h ? h->horizon : 0;
    for (int i = 0; h && h->y && i < h->n; i++) {
        if (h->y[i] > out->best_observed)
            out->best_observed = h->y[i];
    }
    out->mean = out->best_observed;
}

static double history_x(const dt_belief_history *h, int i)
{
    return h->x ? h->x[i] : (double)(i + 1);
}

/* Copies history[start..n) into the workspace with x re-indexed from 1. */
static int load_segment(dt_belief *b, const dt_belief_history *h, int start,
                        dt_error *err)
{
    int m = h->n - start;
    if (m > b->capacity) {
        int rc = grow_buffers(b, m > 2 * b->capacity ? m : 2 * b->capacity, err);
        if (rc)
            return rc;
    }
    b->x_offset = history_x(h, start) - 1.0;
    for (int i = 0; i < m; i++) {
        b->x[i] = history_x(h, start + i) - b->x_offset;
        b->log_x[i] = log(b->x[i]);
        b->y[i] = h->y[start + i];
    }
    b->pts = (dt_curve_points){ .n = m, .x = b->x, .log_x = b->log_x, .y = b->y };
    b->horizon = h->horizon - b->x_offset;
    double level_hi = fmax(b->params.level_max, 1.5 * b->best);
    dt_curve_default_bounds(b->params.family, level_hi, b->lo, b->hi);
    b->has_model = true;
    return 0;
}

/* The walkers' centre (θ_ls lifted, σ from its residuals) and ball scales.
 * Returns false with out->reason set when no centre lies in the prior. */
static bool start_centre(dt_belief *b, const dt_curve_fit_result *fit,
                         double *centre, double *scale, dt_belief_prediction *out)
{
    int p = b->p;
    memcpy(centre, fit->theta, (size_t)p * sizeof *centre);
    if (!dt_curve_increasing(b->params.family, centre)) {
        refuse(out, "least-squares fit is not increasing");
        return false;
    }
    if (dt_curve_lift(b->params.family, centre, b->horizon, b->best * (1 + LIFT_MARGIN),
                      b->lo, b->hi)) {
        refuse(out, "no curve in the prior reaches the best observed %g at horizon %g",
               b->best, out->horizon);
        return false;
    }
    double dof = b->pts.n > p ? b->pts.n - p : 1;
    double sigma = sqrt(dt_curve_sse(b->params.family, centre, &b->pts) / dof);
    centre[p] = fmin(fmax(sigma, 1e-6 * b->best), 1.0);
    for (int j = 0; j < p; j++)
        scale[j] = b->params.ball_scale * fabs(centre[j]) + 1e-8 * (b->hi[j] - b->lo[j]);
    scale[p] = b->params.ball_scale * centre[p];
    return true;
}

static uint64_t task_seed(uint64_t seed, uint64_t stream)
{
    return seed + stream * 0x9e3779b97f4a7c15ULL;
}

/* Samples the posterior; false with out->reason set when the start fails. */
static bool sample_posterior(dt_belief *b, const double *centre, const double *scale,
                             uint64_t stream, dt_belief_prediction *out)
{
    dt_error err;
    dt_error_clear(&err);
    dt_mcmc_seed(b->sampler, task_seed(b->params.seed, stream));
    int rc = dt_mcmc_start_ball(b->sampler, centre, scale, log_posterior, b, &err);
    if (!rc)
        rc = dt_mcmc_run(b->sampler, b->params.steps, log_posterior, b, &err);
    if (rc) {
        refuse(out, "%s", err.msg);
        return false;
    }
    b->has_posterior = true;
    return true;
}

/* Mean and population standard deviation of f(x | θ) over the kept samples;
 * also the mean of σ when noise is non-NULL. */
static void posterior_summary(const dt_belief *b, double x, double *mean, double *std,
                              double *noise, double *noise2)
{
    int w = b->params.walkers, d = b->p + 1;
    const double *chain = dt_mcmc_chain(b->sampler);
    double m = 0, m2 = 0, sigma_sum = 0, sigma2_sum = 0;
    long count = 0;
    for (int t = b->params.burn_in; t < b->params.steps; t++) {
        for (int k = 0; k < w; k++) {
            const double *theta = chain + ((size_t)t * w + k) * d;
            double v = dt_curve_eval(b->params.family, theta, x);
            double delta = v - m;
            count++;
            m += delta / count;
            m2 += delta * (v - m);
            sigma_sum += theta[b->p];
            sigma2_sum += theta[b->p] * theta[b->p];
        }
    }
    *mean = m;
    *std = count > 0 ? sqrt(m2 / count) : 0;
    if (noise)
        *noise = count > 0 ? sigma_sum / count : 0;
    if (noise2)
        *noise2 = count > 0 ? sigma2_sum / count : 0;
}

/* The posterior's curve from the segment's first trial (segment x = 1) to the
 * horizon: at each point the kept samples' f(x | θ), sorted, give the
 * median and the 5 % and 95 % quantiles. */
static void posterior_curve(dt_belief *b, dt_belief_curve *curve)
{
    int w = b->params.walkers, d = b->p + 1;
    const double *chain = dt_mcmc_chain(b->sampler);
    size_t kept = (size_t)(b->params.steps - b->params.burn_in) * (size_t)w;
    curve->n = DT_BELIEF_CURVE_POINTS;
    curve->first = 1.0 + b->x_offset;
    curve->horizon = b->horizon + b->x_offset;
    for (int i = 0; i < curve->n; i++) {
        double x = dt_belief_curve_x(curve, i) - b->x_offset;
        size_t count = 0;
        for (int t = b->params.burn_in; t < b->params.steps; t++)
            for (int k = 0; k < w; k++)
                b->draws[count++] =
                    dt_curve_eval(b->params.family, chain + ((size_t)t * w + k) * d, x);
        gsl_sort(b->draws, 1, kept);
        curve->lo[i] = gsl_stats_quantile_from_sorted_data(b->draws, 1, kept, 0.05);
        curve->median[i] = gsl_stats_quantile_from_sorted_data(b->draws, 1, kept, 0.5);
        curve->hi[i] = gsl_stats_quantile_from_sorted_data(b->draws, 1, kept, 0.95);
    }
}

bool dt_belief_curve_equal(const dt_belief_curve *a, const dt_belief_curve *b)
{
    size_t bytes = a->n > 0 ? (size_t)a->n * sizeof(double) : 0;
    return a->n == b->n && (a->n == 0 || (a->first == b->first && a->horizon == b->horizon &&
                                          memcmp(a->median, b->median, bytes) == 0 &&
                                          memcmp(a->lo, b->lo, bytes) == 0 &&
                                          memcmp(a->hi, b->hi, bytes) == 0));
}

bool dt_belief_forecast_ok(const dt_belief_forecast *f)
{
    return isfinite(f->gflops) && isfinite(f->lo_gflops) && isfinite(f->hi_gflops) &&
           f->lo_gflops <= f->hi_gflops && isfinite(f->horizon) && f->horizon > 0;
}

static void summarise(dt_belief *b, dt_belief_prediction *out)
{
    double noise2;
    posterior_summary(b, b->horizon, &out->mean, &out->std, &out->noise, &noise2);
    out->predictive_std = sqrt(out->std * out->std + noise2);
    out->samples = (b->params.steps - b->params.burn_in) * b->params.walkers;
    double acceptance = 0;
    for (int k = 0; k < b->params.walkers; k++)
        acceptance += dt_mcmc_acceptance_fraction(b->sampler, k);
    out->acceptance = acceptance / b->params.walkers;
    out->expected_improvement =
        dt_belief_expected_improvement(out->mean, out->predictive_std, out->best_observed);
    posterior_curve(b, &out->curve);
    out->ok = true;
}

/* Segments, loads and fits; false with out->reason set when the data refuse. */
static bool prepare_fit(dt_belief *b, const dt_belief_history *h,
                        dt_curve_fit_result *fit, dt_belief_prediction *out, int *rc,
                        dt_error *err)
{
    const dt_belief_params *p = &b->params;
    int start = dt_belief_segment_start(h->y, h->n, p->jump_threshold,
                                        p->min_segment_points);
    int need = p->min_points > b->p + 2 ? p->min_points : b->p + 2;
    out->segment_start = start;
    out->segment_points = h->n - start;
    if (out->segment_points < need) {
        refuse(out, "%d points to model; need %d", out->segment_points, need);
        return false;
    }
    if (!(out->best_observed > 0)) {
        refuse(out, "no positive observation");
        return false;
    }
    b->best = out->best_observed;
    *rc = load_segment(b, h, start, err);
    if (!*rc)
        *rc = dt_curve_fit(b->fitter, &b->pts, b->lo, b->hi, fit, err);
    if (*rc) {
        refuse(out, "%s", err->msg);
        if (*rc != DT_ENOMEM)
            *rc = 0;
        return false;
    }
    memcpy(out->theta_ls, fit->theta, (size_t)b->p * sizeof *fit->theta);
    return true;
}

int dt_belief_predict(dt_belief *belief, const dt_belief_history *history,
                      dt_belief_prediction *out, dt_error *err)
{
    init_prediction(out, history);
    belief->has_model = false;
    belief->has_posterior = false;
    int rc = check_history(history, out, err);
    if (rc)
        return rc;
    dt_error fit_err;
    dt_error_clear(&fit_err);
    dt_curve_fit_result fit;
    if (!prepare_fit(belief, history, &fit, out, &rc, &fit_err)) {
        if (rc)
            dt_error_set(err, rc, "%s", fit_err.msg);
        return rc;
    }
    if (start_centre(belief, &fit, belief->centre, belief->scale, out) &&
        sample_posterior(belief, belief->centre, belief->scale, history->stream, out))
        summarise(belief, out);
    return 0;
}

int dt_belief_posterior_at(const dt_belief *belief, double x, double *mean, double *std,
                           dt_error *err)
{
    if (!belief->has_posterior)
        return dt_error_set(err, DT_EINVAL, "belief: no posterior yet");
    double x_segment = x - belief->x_offset;
    if (!(x_segment > 0))
        return dt_error_set(err, DT_EINVAL,
                            "belief: trial %g is before the modelled segment", x);
    posterior_summary(belief, x_segment, mean, std, NULL, NULL);
    return 0;
}

int dt_belief_sampler_setup(const dt_belief *belief, double *centre, double *scale,
                            double *lo, double *hi, dt_error *err)
{
    if (!belief->has_posterior)
        return dt_error_set(err, DT_EINVAL, "belief: no posterior yet");
    size_t p = (size_t)belief->p;
    memcpy(centre, belief->centre, (p + 1) * sizeof *centre);
    memcpy(scale, belief->scale, (p + 1) * sizeof *scale);
    memcpy(lo, belief->lo, p * sizeof *lo);
    memcpy(hi, belief->hi, p * sizeof *hi);
    return 0;
}

/* --- the pool ---------------------------------------------------------------------------- */

struct pool_job {
    dt_belief_pool *pool;
    const dt_belief_history *tasks;
    dt_belief_prediction *out;
    const int *todo;          /* task indices to predict */
    int n_todo;
    atomic_int next;
};

struct pool_worker {
    struct pool_job *job;
    dt_belief *belief;
    pthread_t id;
};

/* The last prediction made for one task index, and its exact input. */
struct pool_memo {
    bool valid;
    int n;
    bool has_x;
    double horizon;
    uint64_t stream;
    double *x, *y;            /* copies of the input, n each (x only if has_x) */
    int cap;
    dt_belief_prediction pred;
};

struct dt_belief_pool {
    int threads;
    dt_belief **workers;
    struct pool_worker *slots;
    struct pool_memo *memo;   /* per task index, grown on demand */
    int nmemo;
    int *todo;                /* indices to predict this call */
    int todo_cap;
    long hits, misses;
};

int dt_belief_pool_new(const dt_belief_params *params, dt_belief_pool **out, dt_error *err)
{
    int threads = params->threads;
    *out = NULL;
    if (threads < 1)
        return dt_error_set(err, DT_EINVAL, "belief pool: %d threads; need ≥ 1", threads);
    dt_belief_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return dt_error_set(err, DT_ENOMEM, "belief pool: out of memory");
    pool->workers = calloc((size_t)threads, sizeof *pool->workers);
    pool->slots = calloc((size_t)threads, sizeof *pool->slots);
    int rc = pool->workers && pool->slots
                 ? 0 : dt_error_set(err, DT_ENOMEM, "belief pool: out of memory");
    for (int t = 0; !rc && t < threads; t++, pool->threads++)
        rc = dt_belief_new(params, &pool->workers[t], err);
    if (rc) {
        dt_belief_pool_free(pool);
        return rc;
    }
    *out = pool;
    return 0;
}

void dt_belief_pool_free(dt_belief_pool *pool)
{
    if (!pool)
        return;
    for (int t = 0; pool->workers && t < pool->threads; t++)
        dt_belief_free(pool->workers[t]);
    for (int i = 0; i < pool->nmemo; i++) {
        free(pool->memo[i].x);
        free(pool->memo[i].y);
    }
    free(pool->memo);
    free(pool->todo);
    free(pool->workers);
    free(pool->slots);
    free(pool);
}

static void *pool_worker_main(void *arg)
{
    struct pool_worker *worker = arg;
    struct pool_job *job = worker->job;
    for (;;) {
        int j = atomic_fetch_add(&job->next, 1);
        if (j >= job->n_todo)
            break;
        int i = job->todo[j];
        dt_error err;
        dt_error_clear(&err);
        dt_belief_predict(worker->belief, &job->tasks[i], &job->out[i], &err);
    }
    return NULL;
}

/* Whether h is exactly the input memo m was predicted from. */
static bool memo_matches(const struct pool_memo *m, const dt_belief_history *h)
{
    size_t bytes = (size_t)h->n * sizeof(double);
    return m->valid && m->n == h->n && m->horizon == h->horizon && m->stream == h->stream &&
           m->has_x == (h->x != NULL) && (h->n == 0 || (h->y && memcmp(m->y, h->y, bytes) == 0)) &&
           (!h->x || memcmp(m->x, h->x, bytes) == 0);
}

/* Remembers h and its prediction; a failed allocation only forgets. */
static void memo_store(struct pool_memo *m, const dt_belief_history *h,
                       const dt_belief_prediction *pred)
{
    m->valid = false;
    if (h->n < 0 || !h->y)
        return;
    if (h->n > m->cap) {
        size_t cap = dt_grow_capacity((size_t)m->cap, (size_t)h->n);
        if (cap > INT_MAX || dt_resize(&m->x, cap, sizeof *m->x) != 0
            || dt_resize(&m->y, cap, sizeof *m->y) != 0)
            return;
        m->cap = (int)cap;
    }
    if (h->n > 0) {
        memcpy(m->y, h->y, (size_t)h->n * sizeof *m->y);
        if (h->x)
            memcpy(m->x, h->x, (size_t)h->n * sizeof *m->x);
    }
    m->n = h->n;
    m->has_x = h->x != NULL;
    m->horizon = h->horizon;
    m->stream = h->stream;
    m->pred = *pred;
    m->valid = true;
}

/* Grows the memo and the work list to n tasks; false when out of memory. */
static bool pool_reserve(dt_belief_pool *pool, int n)
{
    if (n > pool->nmemo) {
        if (dt_resize(&pool->memo, (size_t)n, sizeof *pool->memo) != 0)
            return false;
        memset(pool->memo + pool->nmemo, 0, (size_t)(n - pool->nmemo) * sizeof *pool->memo);
        pool->nmemo = n;
    }
    if (n > pool->todo_cap) {
        if (dt_resize(&pool->todo, (size_t)n, sizeof *pool->todo) != 0)
            return false;
        pool->todo_cap = n;
    }
    return true;
}

int dt_belief_pool_predict(dt_belief_pool *pool, const dt_belief_history *tasks,
                           int n_tasks, dt_belief_prediction *out, dt_error *err)
{
    if (!pool || n_tasks < 0 || (n_tasks > 0 && (!tasks || !out)))
        return dt_error_set(err, DT_EINVAL, "belief pool: bad arguments");
    if (!pool_reserve(pool, n_tasks))
        return dt_error_set(err, DT_ENOMEM, "belief pool: out of memory");
    int n_todo = 0;
    for (int i = 0; i < n_tasks; i++) {
        if (memo_matches(&pool->memo[i], &tasks[i])) {
            out[i] = pool->memo[i].pred;
            pool->hits++;
        } else {
            pool->todo[n_todo++] = i;
            pool->misses++;
        }
    }
    struct pool_job job = { .pool = pool, .tasks = tasks, .out = out, .todo = pool->todo,
                            .n_todo = n_todo };
    atomic_init(&job.next, 0);
    int threads = pool->threads < n_todo ? pool->threads : n_todo;
    for (int t = 0; t < pool->threads; t++)
        pool->slots[t] = (struct pool_worker){ .job = &job, .belief = pool->workers[t] };
    if (n_todo > 0) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        int spawned = 1;   /* slot 0 is the caller's thread */
        while (spawned < threads &&
               pthread_create(&pool->slots[spawned].id, NULL, pool_worker_main,
                              &pool->slots[spawned]) == 0)
            spawned++;     /* a failed create leaves the work to fewer threads */
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pool_worker_main(&pool->slots[0]);
        for (int t = 1; t < spawned; t++)
            pthread_join(pool->slots[t].id, NULL);
    }
    for (int j = 0; j < n_todo; j++)
        memo_store(&pool->memo[pool->todo[j]], &tasks[pool->todo[j]], &out[pool->todo[j]]);
    return 0;
}

void dt_belief_pool_stats(const dt_belief_pool *pool, long *hits, long *misses)
{
    *hits = pool ? pool->hits : 0;
    *misses = pool ? pool->misses : 0;
}
