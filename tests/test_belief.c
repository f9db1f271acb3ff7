/* test_belief.c — segmentation, normalisation, expected improvement, the
 * posterior's support, predictions on synthetic tuning histories, refusals,
 * and the thread pool's agreement with one thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "belief_internal.h"

#define MAX_HISTORY 400

/* Best-so-far of measurements m_i = f(i | truth)(1 + noise N(0, 1)), the
 * shape a tuner's history has: plateaus and small steps. */
static void make_history(double *y, int n, const double *truth, double noise,
                         unsigned long seed)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    double best = 0;
    for (int i = 0; i < n; i++) {
        double m = dt_curve_eval(DT_CURVE_LOG_POWER, truth, i + 1.0) *
                   (1 + noise * gsl_ran_gaussian(rng, 1.0));
        best = fmax(best, m);
        y[i] = best;
    }
    gsl_rng_free(rng);
}

static dt_belief *new_belief(const dt_belief_params *params)
{
    dt_belief *b = NULL;
    dt_error err;
    if (dt_belief_new(params, &b, &err))
        fail_msg("dt_belief_new: %s", err.msg);
    return b;
}

static void predict_ok(dt_belief *b, const dt_belief_history *h, dt_belief_prediction *out)
{
    dt_error err;
    assert_int_equal(dt_belief_predict(b, h, out, &err), 0);
    if (!out->ok)
        fail_msg("prediction refused: %s", out->reason);
}

/* The fitted curve of an accepted prediction: DT_BELIEF_CURVE_POINTS points
 * spanning first..horizon, lo ≤ median ≤ hi at each, every quantile
 * non-decreasing in x (each sampled curve is increasing), the band at the
 * horizon above the best observed (the prior's condition) and its median
 * within three standard deviations of the posterior mean. */
static void assert_band(const dt_belief_prediction *out, double first, double horizon)
{
    const dt_belief_curve *c = &out->curve;
    assert_int_equal(c->n, DT_BELIEF_CURVE_POINTS);
    assert_true(c->first == first && fabs(c->horizon - horizon) <= 1e-12 * horizon);
    assert_true(dt_belief_curve_x(c, 0) == first);
    assert_true(fabs(dt_belief_curve_x(c, c->n - 1) - horizon) <= 1e-12 * horizon);
    for (int i = 0; i < c->n; i++) {
        if (!(c->lo[i] <= c->median[i] && c->median[i] <= c->hi[i]))
            fail_msg("point %d: lo %g, median %g, hi %g out of order", i, c->lo[i],
                     c->median[i], c->hi[i]);
        if (i > 0)
            assert_true(c->lo[i] >= c->lo[i - 1] && c->median[i] >= c->median[i - 1] &&
                        c->hi[i] >= c->hi[i - 1]);
    }
    assert_true(c->lo[c->n - 1] >= out->best_observed);
    assert_true(c->hi[c->n - 1] > c->lo[c->n - 1]);
    assert_true(fabs(c->median[c->n - 1] - out->mean) <= 3 * out->std);
}

static void test_default_params(void **state)
{
    (void)state;
    dt_belief_params p = dt_belief_params_default();
    assert_int_equal(p.family, DT_CURVE_LOG_POWER);
    assert_int_equal(p.walkers, 10);
    assert_int_equal(p.steps, 500);
    assert_int_equal(p.burn_in, 250);
    assert_true(p.jump_threshold == 0.2);
    assert_int_equal(p.min_segment_points, 10);
    p.burn_in = 500;
    dt_belief *b = NULL;
    dt_error err;
    assert_int_equal(dt_belief_new(&p, &b, &err), DT_EINVAL);
    assert_null(b);
    dt_belief_free(NULL);
}

static void test_segment_start(void **state)
{
    (void)state;
    double y[60];
    for (int i = 0; i < 60; i++)   /* rises by 1.3 % a step: no jump */
        y[i] = 0.1 + 0.002 * i;
    assert_int_equal(dt_belief_segment_start(y, 60, 0.2, 10), 0);
    for (int i = 30; i < 60; i++)  /* +25 % at 30 */
        y[i] *= 1.25;
    assert_int_equal(dt_belief_segment_start(y, 60, 0.2, 10), 30);
    y[55] = y[54] * 1.5;           /* a later jump leaving 5 points is ignored */
    for (int i = 56; i < 60; i++)
        y[i] = y[55];
    assert_int_equal(dt_belief_segment_start(y, 60, 0.2, 10), 30);
    assert_int_equal(dt_belief_segment_start(y, 60, 0.2, 5), 55);
    double exact[12] = { 0.25, 0.3 };  /* exactly +20 % is not more than 20 % */
    for (int i = 2; i < 12; i++)
        exact[i] = 0.3;
    assert_int_equal(dt_belief_segment_start(exact, 12, 0.2, 10), 0);
    double from_zero[14] = { 0, 0, 0.2 };
    for (int i = 3; i < 14; i++)
        from_zero[i] = 0.21;
    assert_int_equal(dt_belief_segment_start(from_zero, 14, 0.2, 10), 2);
}

static void test_normalize(void **state)
{
    (void)state;
    const double gflops[6] = { 0, 12.5, 10, NAN, 30, 29 };
    double y[6];
    dt_error err;
    assert_int_equal(dt_belief_normalize(gflops, 6, 125.0, y, &err), 0);
    const double want[6] = { 0, 0.1, 0.1, 0.1, 0.24, 0.24 };
    for (int i = 0; i < 6; i++)
        assert_true(fabs(y[i] - want[i]) < 1e-15);
    assert_int_equal(dt_belief_normalize(gflops, 6, 0.0, y, &err), DT_EINVAL);
}

/* AdaTune eq. 1 on hand cases (Φ, φ values from tables, 16 digits). */
static void test_expected_improvement(void **state)
{
    (void)state;
    const struct { double mean, std, best, want; } cases[] = {
        { 0.5, 0.0, 0.4, 0.1 },
        { 0.3, 0.0, 0.4, 0.0 },
        { 0.4, 0.1, 0.4, 0.1 * 0.3989422804014327 },
        { 0.6, 0.2, 0.4, 0.2 * 0.8413447460685429 + 0.2 * 0.2419707245191434 },
        { 0.35, 0.1, 0.4, -0.05 * 0.3085375387259869 + 0.1 * 0.3520653267642995 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        double ei = dt_belief_expected_improvement(cases[k].mean, cases[k].std, cases[k].best);
        assert_true(fabs(ei - cases[k].want) <= 1e-14 + 1e-12 * cases[k].want);
    }
}

/* A 200-trial history of a log-power task: the prediction 64 trials ahead
 * is above the best, within 10 % of it, with a positive spread, and its EI
 * is eq. 1 of its own mean and std. */
static void test_predict_synthetic(void **state)
{
    (void)state;
    double y[MAX_HISTORY];
    const double truth[3] = { 0.47, 1.9, -0.7 };
    make_history(y, 200, truth, 0.03, 17);
    dt_belief_params p = dt_belief_params_default();
    dt_belief *b = new_belief(&p);
    dt_belief_history h = { .y = y, .n = 200, .horizon = 264 };
    dt_belief_prediction out;
    predict_ok(b, &h, &out);
    assert_true(out.best_observed == y[199]);
    assert_true(out.mean >= out.best_observed);
    assert_true(out.mean < 1.1 * out.best_observed);
    assert_true(out.std > 0);
    assert_int_equal(out.samples, 250 * 10);
    assert_true(out.acceptance > 0.1 && out.acceptance < 0.9);
    assert_true(out.noise > 0 && out.noise < 0.05);
    assert_true(out.predictive_std >= out.std);
    assert_true(fabs(out.predictive_std * out.predictive_std - out.std * out.std) >=
                out.noise * out.noise * (1 - 1e-9)); /* E[σ²] ≥ E[σ]² */
    double ei = dt_belief_expected_improvement(out.mean, out.predictive_std, out.best_observed);
    assert_true(fabs(out.expected_improvement - ei) <= 1e-15);
    assert_true(out.expected_improvement >= out.mean - out.best_observed);
    assert_int_equal(out.segment_start + out.segment_points, 200);
    assert_band(&out, out.segment_start + 1, 264);
    dt_belief_free(b);
}

/* Every posterior curve is increasing and clears the best at the horizon,
 * so on any history the predicted mean is ≥ the best observed and the
 * posterior mean is non-decreasing in the trial index. */
static void test_predictions_never_decrease(void **state)
{
    (void)state;
    double y[5][MAX_HISTORY];
    const double rising[3] = { 0.62, 2.4, -0.55 }, steep[3] = { 0.2, -1.0, -3.0 };
    make_history(y[0], 300, rising, 0.05, 2);
    make_history(y[1], 120, steep, 0.01, 3);   /* saturated early: long plateau */
    for (int i = 0; i < 40; i++)
        y[2][i] = 0.31;                        /* flat: never improved */
    make_history(y[3], 150, rising, 0.2, 4);   /* very noisy */
    make_history(y[4], 12, rising, 0.03, 5);   /* short */
    const int n[5] = { 300, 120, 40, 150, 12 };
    dt_belief_params p = dt_belief_params_default();
    dt_belief *b = new_belief(&p);
    for (int k = 0; k < 5; k++) {
        dt_belief_history h = { .y = y[k], .n = n[k], .horizon = n[k] + 40.0 };
        dt_belief_prediction out;
        predict_ok(b, &h, &out);
        assert_true(out.mean >= out.best_observed);
        double previous = 0, mean, std;
        const double later[4] = { 0, 1, 10, 1000 };
        for (int j = 0; j < 4; j++) {
            dt_error err;
            assert_int_equal(dt_belief_posterior_at(b, h.horizon + later[j], &mean, &std,
                                                    &err), 0);
            assert_true(mean >= previous);
            assert_true(j > 0 || mean == out.mean);   /* same samples as the prediction */
            previous = mean;
        }
    }
    dt_belief_free(b);
}

/* The log posterior: finite inside the support and −∞ outside each of its
 * walls; its σ dependence is −n ln σ − SSE / (2σ²) (relative 1e-12). */
static void test_log_prob_support(void **state)
{
    (void)state;
    double y[MAX_HISTORY];
    const double truth[3] = { 0.47, 1.9, -0.7 };
    make_history(y, 100, truth, 0.03, 21);
    dt_belief_params p = dt_belief_params_default();
    dt_belief *b = new_belief(&p);
    dt_belief_history h = { .y = y, .n = 100, .horizon = 150 };
    dt_belief_prediction out;
    predict_ok(b, &h, &out);
    double horizon = h.horizon - out.segment_start;   /* segment x of the horizon */
    double theta[4] = { out.theta_ls[0], out.theta_ls[1], out.theta_ls[2], 0.01 };
    double lo[3], hi[3];
    dt_curve_default_bounds(DT_CURVE_LOG_POWER, 1.0, lo, hi);
    assert_int_equal(dt_curve_lift(DT_CURVE_LOG_POWER, theta, horizon,
                                   1.01 * out.best_observed, lo, hi), 0);
    double inside = dt_belief_log_prob(b, theta);
    assert_true(isfinite(inside));
    double lower[4];
    memcpy(lower, theta, sizeof lower);
    lower[3] = 0.02;
    double x[MAX_HISTORY], log_x[MAX_HISTORY];
    int m = out.segment_points;
    for (int i = 0; i < m; i++)
        x[i] = i + 1, log_x[i] = log(x[i]);
    dt_curve_points pts = { .n = m, .x = x, .log_x = log_x, .y = y + out.segment_start };
    double sse = dt_curve_sse(DT_CURVE_LOG_POWER, theta, &pts);
    double want = -m * log(0.01 / 0.02) - 0.5 * sse * (1 / 1e-4 - 1 / 4e-4);
    assert_true(fabs((inside - dt_belief_log_prob(b, lower)) - want) <= 1e-12 * fabs(want));
    double wall[4];
    const struct { int j; double value; } walls[] = {
        { 3, 0.0 }, { 3, 1.5 }, { 3, -0.01 },   /* σ outside (0, 1] */
        { 2, 0.4 },                             /* c > 0: decreasing */
        { 0, 1.7 },                             /* level above its bound */
        { 0, 0.5 * out.best_observed },         /* below the best at the horizon */
    };
    for (size_t k = 0; k < sizeof walls / sizeof walls[0]; k++) {
        memcpy(wall, theta, sizeof wall);
        wall[walls[k].j] = walls[k].value;
        assert_true(dt_belief_log_prob(b, wall) == -INFINITY);
    }
    dt_belief_free(b);
}

/* A +40 % jump at trial 41 of 100 starts a 60-point segment re-indexed
 * from 1; the posterior is not defined before it. */
static void test_segment_reindexed(void **state)
{
    (void)state;
    double y[MAX_HISTORY];
    const double truth[3] = { 0.3, 1.0, -0.9 };
    make_history(y, 100, truth, 0.02, 6);
    for (int i = 40; i < 100; i++)
        y[i] = 1.4 * y[i] + 0.01 * (i - 40) / 60.0;
    dt_belief_params p = dt_belief_params_default();
    dt_belief *b = new_belief(&p);
    dt_belief_history h = { .y = y, .n = 100, .horizon = 130 };
    dt_belief_prediction out;
    predict_ok(b, &h, &out);
    assert_int_equal(out.segment_start, 40);
    assert_int_equal(out.segment_points, 60);
    assert_true(out.mean >= y[99]);
    assert_band(&out, 41, 130);
    double mean, std;
    dt_error err;
    assert_int_equal(dt_belief_posterior_at(b, 40.0, &mean, &std, &err), DT_EINVAL);
    assert_int_equal(dt_belief_posterior_at(b, 41.0, &mean, &std, &err), 0);
    dt_belief_free(b);
}

/* Trial indices with gaps (every third trial kept) work like 1..n. */
static void test_explicit_x(void **state)
{
    (void)state;
    double y[MAX_HISTORY], x[MAX_HISTORY];
    const double truth[3] = { 0.55, 2.0, -0.8 };
    make_history(y, 90, truth, 0.03, 8);
    for (int i = 0; i < 90; i++)
        x[i] = 3.0 * i + 1;
    dt_belief_params p = dt_belief_params_default();
    dt_belief *b = new_belief(&p);
    dt_belief_history h = { .x = x, .y = y, .n = 90, .horizon = 300 };
    dt_belief_prediction out;
    predict_ok(b, &h, &out);
    assert_true(out.mean >= out.best_observed);
    assert_band(&out, x[out.segment_start], 300);
    dt_belief_free(b);
}

static void expect_refusal(dt_belief *b, const dt_belief_history *h, int rc,
                           const char *reason)
{
    dt_belief_prediction out;
    dt_error err;
    assert_int_equal(dt_belief_predict(b, h, &out, &err), rc);
    assert_false(out.ok);
    assert_non_null(strstr(out.reason, reason));
    assert_true(out.mean == out.best_observed && out.std == 0 &&
                out.expected_improvement == 0);
    assert_int_equal(out.curve.n, 0);
}

static void test_refusals(void **state)
{
    (void)state;
    dt_belief_params p = dt_belief_params_default();
    dt_belief *b = new_belief(&p);
    double y[20] = { 0.1, 0.12, 0.13 };
    dt_belief_history h = { .y = y, .n = 3, .horizon = 10 };
    expect_refusal(b, &h, 0, "points");
    double zeros[20] = { 0 };
    h = (dt_belief_history){ .y = zeros, .n = 20, .horizon = 30 };
    expect_refusal(b, &h, 0, "no positive");
    for (int i = 3; i < 20; i++)
        y[i] = 0.13 + 0.001 * i;
    y[7] = NAN;
    h = (dt_belief_history){ .y = y, .n = 20, .horizon = 30 };
    expect_refusal(b, &h, DT_EINVAL, "non-finite");
    y[7] = 0.137;
    h.horizon = 19;
    expect_refusal(b, &h, DT_EINVAL, "horizon");
    double x[20];
    for (int i = 0; i < 20; i++)
        x[i] = 20 - i;
    h = (dt_belief_history){ .x = x, .y = y, .n = 20, .horizon = 30 };
    expect_refusal(b, &h, DT_EINVAL, "increasing");
    double mean, std;
    dt_error err;
    assert_int_equal(dt_belief_posterior_at(b, 25, &mean, &std, &err), DT_EINVAL);
    dt_belief_free(b);
}

/* Same input, same stream → same numbers; another stream → other draws. */
static void test_deterministic_streams(void **state)
{
    (void)state;
    double y[MAX_HISTORY];
    const double truth[3] = { 0.47, 1.9, -0.7 };
    make_history(y, 150, truth, 0.03, 31);
    dt_belief_params p = dt_belief_params_default();
    dt_belief *b = new_belief(&p);
    dt_belief_history h = { .y = y, .n = 150, .horizon = 200, .stream = 3 };
    dt_belief_prediction first, second, other;
    predict_ok(b, &h, &first);
    predict_ok(b, &h, &second);
    h.stream = 4;
    predict_ok(b, &h, &other);
    assert_true(first.mean == second.mean && first.std == second.std);
    assert_true(first.mean != other.mean);
    dt_belief_free(b);
}

/* The other families predict through the same path. */
static void test_other_families(void **state)
{
    (void)state;
    double y[MAX_HISTORY];
    const double truth[3] = { 0.47, 1.9, -0.7 };
    make_history(y, 120, truth, 0.03, 41);
    const dt_curve_family families[2] = { DT_CURVE_POW4, DT_CURVE_LOG_LINEAR };
    for (int k = 0; k < 2; k++) {
        dt_belief_params p = dt_belief_params_default();
        p.family = families[k];
        p.steps = 300;
        p.burn_in = 150;
        dt_belief *b = new_belief(&p);
        dt_belief_history h = { .y = y, .n = 120, .horizon = 160 };
        dt_belief_prediction out;
        predict_ok(b, &h, &out);
        assert_true(out.mean >= out.best_observed);
        assert_true(out.mean < 1.5 * out.best_observed);
        dt_belief_free(b);
    }
}

/* Six tasks on three threads give exactly the one-thread answers; a
 * malformed task is refused without disturbing the others. */
static void test_pool_matches_one_thread(void **state)
{
    (void)state;
    double y[6][MAX_HISTORY];
    dt_belief_history tasks[6];
    for (int k = 0; k < 6; k++) {
        const double truth[3] = { 0.2 + 0.07 * k, 1.0 + 0.3 * k, -0.6 - 0.1 * k };
        int n = 60 + 37 * k;
        make_history(y[k], n, truth, 0.03, 100 + k);
        tasks[k] = (dt_belief_history){ .y = y[k], .n = n, .horizon = n + 64.0,
                                        .stream = (uint64_t)k };
    }
    tasks[4].horizon = 1;   /* malformed */
    dt_belief_params p = dt_belief_params_default();
    dt_belief_pool *one = NULL, *three = NULL;
    dt_error err;
    p.threads = 1;
    assert_int_equal(dt_belief_pool_new(&p, &one, &err), 0);
    p.threads = 3;
    assert_int_equal(dt_belief_pool_new(&p, &three, &err), 0);
    dt_belief_prediction a[6], b[6];
    assert_int_equal(dt_belief_pool_predict(one, tasks, 6, a, &err), 0);
    assert_int_equal(dt_belief_pool_predict(three, tasks, 6, b, &err), 0);
    for (int k = 0; k < 6; k++) {
        assert_int_equal(a[k].ok, k != 4);
        assert_int_equal(b[k].ok, k != 4);
        assert_true(a[k].mean == b[k].mean && a[k].std == b[k].std &&
                    a[k].expected_improvement == b[k].expected_improvement);
    }
    assert_non_null(strstr(b[4].reason, "horizon"));
    assert_int_equal(dt_belief_pool_predict(three, NULL, 2, b, &err), DT_EINVAL);
    dt_belief_pool_free(three);
    dt_belief_pool_free(one);
    dt_belief_pool_free(NULL);
    p.threads = 0;
    assert_int_equal(dt_belief_pool_new(&p, &one, &err), DT_EINVAL);
    assert_null(one);
}

/* A second call with the same inputs answers from the memo with the same
 * numbers; a changed value, horizon or stream of one task refits that task
 * only, and its answer equals a fresh pool's. */
static void test_pool_memo(void **state)
{
    (void)state;
    double y[4][MAX_HISTORY];
    dt_belief_history tasks[4];
    for (int k = 0; k < 4; k++) {
        const double truth[3] = { 0.3 + 0.05 * k, 1.2, -0.5 };
        int n = 80 + 20 * k;
        make_history(y[k], n, truth, 0.02, 300 + k);
        tasks[k] = (dt_belief_history){ .y = y[k], .n = n, .horizon = n + 64.0,
                                        .stream = (uint64_t)k };
    }
    dt_belief_params p = dt_belief_params_default();
    dt_belief_pool *pool = NULL, *fresh = NULL;
    dt_error err;
    long hits, misses;
    p.threads = 2;
    assert_int_equal(dt_belief_pool_new(&p, &pool, &err), 0);
    dt_belief_prediction a[4], b[4], c[4];
    assert_int_equal(dt_belief_pool_predict(pool, tasks, 4, a, &err), 0);
    dt_belief_pool_stats(pool, &hits, &misses);
    assert_int_equal(hits, 0);
    assert_int_equal(misses, 4);
    assert_int_equal(dt_belief_pool_predict(pool, tasks, 4, b, &err), 0);
    dt_belief_pool_stats(pool, &hits, &misses);
    assert_int_equal(hits, 4);
    assert_int_equal(misses, 4);
    for (int k = 0; k < 4; k++)
        assert_memory_equal(&a[k], &b[k], sizeof a[k]);

    y[1][tasks[1].n - 1] += 0.01;   /* a new best in task 1 */
    tasks[2].horizon += 10;         /* a longer slot ahead for task 2 */
    tasks[3].stream = 99;
    assert_int_equal(dt_belief_pool_predict(pool, tasks, 4, b, &err), 0);
    dt_belief_pool_stats(pool, &hits, &misses);
    assert_int_equal(hits, 5);
    assert_int_equal(misses, 7);
    assert_memory_equal(&a[0], &b[0], sizeof a[0]);
    assert_true(b[1].best_observed > a[1].best_observed);
    assert_true(b[2].horizon == a[2].horizon + 10);
    p.threads = 1;
    assert_int_equal(dt_belief_pool_new(&p, &fresh, &err), 0);
    assert_int_equal(dt_belief_pool_predict(fresh, tasks, 4, c, &err), 0);
    for (int k = 0; k < 4; k++)
        assert_true(b[k].mean == c[k].mean && b[k].std == c[k].std &&
                    b[k].expected_improvement == c[k].expected_improvement);

    /* Fewer tasks, then more again: the memo of the others stays. */
    assert_int_equal(dt_belief_pool_predict(pool, tasks, 2, b, &err), 0);
    dt_belief_pool_stats(pool, &hits, &misses);
    assert_int_equal(hits, 7);
    dt_belief_pool_free(fresh);
    dt_belief_pool_free(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_params),
        cmocka_unit_test(test_segment_start),
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_expected_improvement),
        cmocka_unit_test(test_predict_synthetic),
        cmocka_unit_test(test_predictions_never_decrease),
        cmocka_unit_test(test_log_prob_support),
        cmocka_unit_test(test_segment_reindexed),
        cmocka_unit_test(test_explicit_x),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_deterministic_streams),
        cmocka_unit_test(test_other_families),
        cmocka_unit_test(test_pool_matches_one_thread),
        cmocka_unit_test(test_pool_memo),
    };
    return cmocka_run_group_tests_name("belief", tests, NULL, NULL);
}
