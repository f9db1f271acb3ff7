/* belief.h — DynaTune's Bayesian belief model of one task's tuning curve:
 * where will its best-so-far performance be at the end of the next slot?
 *
 * Input: the task's history, x = trial index (1..n), y = best-so-far GFLOPS
 * ÷ the target's peak GFLOPS (0..1), and a horizon (the trial count at the
 * end of the next slot). Steps:
 *   1. segment: a jump is a point whose y exceeds the previous one by more
 *      than jump_threshold (relative); the modelled segment starts at the
 *      latest jump that leaves at least min_segment_points points (itself
 *      included), else at the first point; x is re-indexed from 1 inside it;
 *   2. least squares: the curve family fitted to the segment (curve.h);
 *   3. posterior: θ = (curve parameters, σ) with a Gaussian likelihood of
 *      noise σ, a uniform prior on the curve's box and on σ ∈ (0, 1], and
 *      zero prior where the curve is not increasing or where its value at
 *      the horizon is below the best observed; sampled by the stretch-move
 *      ensemble (mcmc.h) from a tight Gaussian ball around the least-squares
 *      fit (lifted into the prior's support when it falls below the best);
 *   4. prediction: mean and standard deviation of f(horizon | θ) over the
 *      post-burn-in samples (and, for charts, the median and 90 % band of
 *      f(x | θ) from the segment's first trial to the horizon), and the expected improvement over the best
 *      observed, EI = (μ − y*) Φ(Z) + s φ(Z), Z = (μ − y*)/s (AdaTune eq. 1),
 *      of the posterior predictive y(horizon) = f(horizon) + ε: its spread
 *      s = sqrt(std² + E[σ²]) adds the noise σ to the curve's uncertainty
 *      (as Domhan et al.'s learning-curve extrapolation does). A
 *      best-so-far curve is a staircase; σ measures how far its steps
 *      stray from the smooth curve, so a task whose best still jumps gets
 *      the larger EI. On recorded traces this made the predicted reduction
 *      of the chosen task match the true one (ratio 1.07 against 0.44 with
 *      the curve's std alone; bench/sched_bench, bert_base).
 *
 * A dt_belief is one thread's workspace: the fitter, the sampler and the
 * segment buffers, allocated once and grown only when a longer history
 * arrives. dt_belief_pool runs many tasks on several pthreads, one
 * workspace per thread; each task's sampler is seeded from params.seed and
 * the task's `stream`, so results do not depend on the thread count.
 */
#ifndef DTUNE_BELIEF_H
#define DTUNE_BELIEF_H

#include <stdbool.h>
#include <stdint.h>

#include "dtune/curve.h"
#include "dtune/error.h"

/* The model's settings: family .. min_segment_points and threads are config
 * keys (scheduler.belief.*; `dtune check --help` lists their defaults), seed
 * is the run's; the rest are fixed by dt_belief_params_default. */
typedef struct dt_belief_params {
    dt_curve_family family;
    int walkers;
    int steps;                /* per walker */
    int burn_in;              /* steps dropped before the prediction */
    double jump_threshold;    /* a jump is y_i > (1 + jump_threshold) y_{i−1} */
    int min_segment_points;
    int min_points;           /* 5: fewer modelled points → ok = false; raised
                                 to the family's parameters + 2 when below */
    double level_max;         /* 1.0: the curve's level may not pass
                                 max(level_max, 1.5 × best observed) */
    double ball_scale;        /* 1e-4: walker starts spread by N(0, s_i²) with
                                 s_i = ball_scale |θ_i| + 1e-8 (hi_i − lo_i) */
    uint64_t seed;
    int threads;              /* dt_belief_pool's workspaces and threads */
} dt_belief_params;

dt_belief_params dt_belief_params_default(void);

/* Points of a fitted curve (dt_belief_curve): enough for a smooth line on a
 * chart, few enough to log with every decision. */
#define DT_BELIEF_CURVE_POINTS 24

/* The fitted curve over trials: at n points x_i = first + (horizon − first)
 * i / (n − 1), the posterior median of f(x_i | θ) and its 5 % and 95 %
 * quantiles (a 90 % band), lo ≤ median ≤ hi. Values are in the units of the
 * history's y (normalised, as dt_belief_predict fills it) unless the holder
 * says otherwise (dt_task_state keeps it in GFLOPS). n = 0: no fitted curve;
 * otherwise 2 ≤ n ≤ DT_BELIEF_CURVE_POINTS. */
typedef struct dt_belief_curve {
    int n;
    double first;             /* the modelled segment's first trial, history x */
    double horizon;           /* the prediction's horizon, history x */
    double median[DT_BELIEF_CURVE_POINTS];
    double lo[DT_BELIEF_CURVE_POINTS];
    double hi[DT_BELIEF_CURVE_POINTS];
} dt_belief_curve;

/* Trial position of point i of c. */
static inline double dt_belief_curve_x(const dt_belief_curve *c, int i)
{
    return c->n > 1 ? c->first + (c->horizon - c->first) * i / (c->n - 1) : c->first;
}

/* Whether a and b hold the same curve (n, ends and the n points of each). */
bool dt_belief_curve_equal(const dt_belief_curve *a, const dt_belief_curve *b);

/* The belief's prediction of a task's best GFLOPS at a horizon as the run
 * shows and logs it: the predicted best (best so far + expected
 * improvement), its 90 % credible interval, and the trial count it is for.
 * All zero: no prediction. */
typedef struct dt_belief_forecast {
    double gflops;
    double lo_gflops;
    double hi_gflops;
    double horizon;           /* trial count, history x */
} dt_belief_forecast;

/* Whether f holds a prediction: every field finite, lo_gflops <= hi_gflops
 * and horizon > 0. */
bool dt_belief_forecast_ok(const dt_belief_forecast *f);

typedef struct dt_belief_prediction {
    bool ok;                  /* false: see reason; then mean = best_observed,
                                 std = 0, expected_improvement = 0 */
    char reason[160];         /* empty when ok */
    double mean;              /* posterior mean of f(horizon), normalised */
    double std;               /* its posterior standard deviation */
    double predictive_std;    /* spread of a new observation at the horizon:
                                 sqrt(std² + E[σ²]), the curve's uncertainty
                                 plus the likelihood's noise */
    double expected_improvement; /* over best_observed, normalised, of
                                 N(mean, predictive_std²) */
    double best_observed;     /* max y of the history */
    double horizon;           /* as given, in history trials */
    int segment_start;        /* 0-based index of the segment's first point */
    int segment_points;
    int samples;              /* posterior samples behind mean and std */
    double noise;             /* posterior mean of σ */
    double acceptance;        /* mean acceptance fraction of the walkers */
    double theta_ls[DT_CURVE_MAX_PARAMS]; /* least-squares fit, segment x */
    dt_belief_curve curve;    /* the posterior's curve from the segment's first
                                 trial to the horizon, DT_BELIEF_CURVE_POINTS
                                 points; n = 0 unless ok */
} dt_belief_prediction;

/* One task's history, borrowed. x may be NULL for x = 1..n; otherwise
 * strictly increasing and ≥ 1. horizon ≥ the last x. */
typedef struct dt_belief_history {
    const double *x;
    const double *y;
    int n;
    double horizon;
    uint64_t stream;          /* mixed into params.seed: pass the task's index */
} dt_belief_history;

/* The stream of task k with n points of history: a function of the task
 * and its history only, so an unchanged history gets the same stream and
 * the pool's memo (dt_belief_pool_predict) answers it without a fit. */
static inline uint64_t dt_belief_task_stream(int k, int n)
{
    return (uint64_t)k * 7919u + (uint64_t)n;
}

typedef struct dt_belief dt_belief;

/* One workspace. 0, DT_EINVAL (bad params, message says which), DT_ENOMEM. */
int dt_belief_new(const dt_belief_params *params, dt_belief **out, dt_error *err);

/* Accepts NULL. */
void dt_belief_free(dt_belief *belief);

/* Predicts one task into *out. Returns 0 whenever a prediction was made or
 * refused for a reason of the data (too few points, no positive value, a
 * failed fit, no start inside the prior): out->ok says which. Returns
 * DT_EINVAL for malformed input (NULL, NaN, x not increasing, horizon before
 * the last trial) and DT_ENOMEM; out->ok is false then too. */
int dt_belief_predict(dt_belief *belief, const dt_belief_history *history,
                      dt_belief_prediction *out, dt_error *err);

/* The last successful prediction's sampler set-up, so another sampler can
 * run the same model (bench/belief_bench.c against emcee): the walkers'
 * centre and spread (curve parameters then σ, p + 1 values each) and the
 * curve parameters' prior box (p values each). DT_EINVAL when there is no
 * posterior. */
int dt_belief_sampler_setup(const dt_belief *belief, double *centre, double *scale,
                            double *lo, double *hi, dt_error *err);

/* Start of the segment that would be modelled (0-based), per the rule above. */
int dt_belief_segment_start(const double *y, int n, double jump_threshold,
                            int min_segment_points);

/* best-so-far of gflops[0..n) divided by peak_gflops, into y; a failed
 * trial counts as 0 GFLOPS. DT_EINVAL unless peak_gflops > 0. */
int dt_belief_normalize(const double *gflops, int n, double peak_gflops, double *y,
                        dt_error *err);

/* AdaTune eq. 1: EI of a prediction N(mean, std²) over best. */
double dt_belief_expected_improvement(double mean, double std, double best);

/* --- many tasks on several threads --------------------------------------------- */

typedef struct dt_belief_pool dt_belief_pool;

/* params->threads workspaces (≥ 1). 0, DT_EINVAL, DT_ENOMEM. */
int dt_belief_pool_new(const dt_belief_params *params, dt_belief_pool **out, dt_error *err);

/* Accepts NULL. */
void dt_belief_pool_free(dt_belief_pool *pool);

/* Predicts tasks[0..n_tasks) into out[0..n_tasks) on up to the pool's
 * thread count of pthreads (the caller's thread is one of them); worker
 * threads block all signals. A task whose input is malformed gets ok = false
 * with the message as its reason; the call itself returns 0, DT_EINVAL for
 * NULL arguments, DT_ENOMEM.
 *
 * The pool remembers, per task index, the last input (x, y, n, horizon,
 * stream) and its prediction: an index whose input is bit-for-bit the same
 * as last time gets the remembered prediction without a fit. A prediction
 * is a function of its input (the stream seeds the sampler), so this changes
 * no number; between two slots only the task that held the slot has a new
 * history, so a slot decision costs one fit instead of one per task. Callers
 * keep this true by deriving the stream from the task and its history, not
 * from the slot count. */
int dt_belief_pool_predict(dt_belief_pool *pool, const dt_belief_history *tasks,
                           int n_tasks, dt_belief_prediction *out, dt_error *err);

#endif
