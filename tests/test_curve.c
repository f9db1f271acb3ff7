/* test_curve.c — curve families (values, analytic gradients, monotonicity,
 * lifting), the vectorised sum of squares, and the bounded least-squares fit
 * recovering known parameters from noisy synthetic data.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "curve_internal.h"

#define MAX_POINTS 600

/* Synthetic data: x = 1..n, y = f(x | θ) + N(0, noise²). */
typedef struct synthetic {
    double x[MAX_POINTS], log_x[MAX_POINTS], y[MAX_POINTS];
    dt_curve_points pts;
} synthetic;

static void make_data(synthetic *d, dt_curve_family family, const double *theta, int n,
                      double noise, unsigned long seed)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    for (int i = 0; i < n; i++) {
        d->x[i] = i + 1;
        d->log_x[i] = log(d->x[i]);
        d->y[i] = dt_curve_eval(family, theta, d->x[i]) + gsl_ran_gaussian(rng, noise);
    }
    gsl_rng_free(rng);
    d->pts = (dt_curve_points){ .n = n, .x = d->x, .log_x = d->log_x, .y = d->y };
}

static double rel_err(double got, double want)
{
    return fabs(got - want) / fabs(want);
}

static void test_names(void **state)
{
    (void)state;
    dt_curve_family f = DT_CURVE_COUNT;
    dt_error err;
    assert_int_equal(dt_curve_parse("pow4", &f, &err), 0);
    assert_int_equal(f, DT_CURVE_POW4);
    assert_string_equal(dt_curve_name(DT_CURVE_LOG_POWER), "log_power");
    assert_int_equal(dt_curve_parse("pow3", &f, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "log_linear"));
    assert_int_equal(dt_curve_param_count(DT_CURVE_LOG_POWER), 3);
    assert_int_equal(dt_curve_param_count(DT_CURVE_POW4), 4);
    assert_int_equal(dt_curve_param_count(DT_CURVE_LOG_LINEAR), 2);
    assert_int_equal(dt_curve_param_count(DT_CURVE_COUNT), 0);
}

/* log power reaches a/2 at x = e^b and tends to a; values by hand:
 * f(7.3 | 0.61, 1.2, −0.85) = 0.61 / (1 + (7.3 / e^1.2)^−0.85). */
static void test_log_power_shape(void **state)
{
    (void)state;
    const double theta[3] = { 0.61, 1.2, -0.85 };
    assert_true(rel_err(dt_curve_eval(DT_CURVE_LOG_POWER, theta, exp(1.2)), 0.305) < 1e-14);
    double want = 0.61 / (1 + pow(7.3 / exp(1.2), -0.85));
    assert_true(rel_err(dt_curve_eval(DT_CURVE_LOG_POWER, theta, 7.3), want) < 1e-14);
    assert_true(rel_err(dt_curve_eval(DT_CURVE_LOG_POWER, theta, 1e12), 0.61) < 1e-9);
    const double pow4[4] = { 0.7, 0.4, 0.55, 0.9 };
    assert_true(rel_err(dt_curve_eval(DT_CURVE_POW4, pow4, 3.1),
                        0.55 - pow(0.7 * 3.1 + 0.4, -0.9)) < 1e-14);
    const double bad_pow4[4] = { -1.0, 0.4, 0.55, 0.9 };
    assert_true(isnan(dt_curve_eval(DT_CURVE_POW4, bad_pow4, 3.1)));
}

/* Analytic gradients against central differences: relative 1e-6, plus the
 * differences' own rounding (100 ε |f| / h) where the slope is tiny. */
static void test_gradients_match_differences(void **state)
{
    (void)state;
    const struct { dt_curve_family family; double theta[4]; } cases[] = {
        { DT_CURVE_LOG_POWER, { 0.61, 1.2, -0.85 } },
        { DT_CURVE_LOG_POWER, { 0.33, -2.7, -3.1 } },
        { DT_CURVE_LOG_POWER, { 0.9, 6.1, -0.37 } },
        { DT_CURVE_POW4, { 0.7, 0.4, 0.55, 0.9 } },
        { DT_CURVE_POW4, { 13.0, 2.2, 0.81, 0.23 } },
        { DT_CURVE_LOG_LINEAR, { 0.043, 0.12 } },
    };
    const double xs[] = { 1.0, 3.7, 41.0, 517.0 };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int p = dt_curve_param_count(cases[c].family);
        for (size_t ix = 0; ix < sizeof xs / sizeof xs[0]; ix++) {
            double grad[4];
            dt_curve_gradient(cases[c].family, cases[c].theta, xs[ix], grad);
            for (int j = 0; j < p; j++) {
                double up[4], down[4];
                memcpy(up, cases[c].theta, sizeof up);
                memcpy(down, cases[c].theta, sizeof down);
                double h = 1e-6 * (fabs(cases[c].theta[j]) + 1e-3);
                up[j] += h;
                down[j] -= h;
                double fd = (dt_curve_eval(cases[c].family, up, xs[ix]) -
                             dt_curve_eval(cases[c].family, down, xs[ix])) / (2 * h);
                double f = dt_curve_eval(cases[c].family, cases[c].theta, xs[ix]);
                double rounding = 100 * DBL_EPSILON * fabs(f) / h;
                assert_true(fabs(grad[j] - fd) <= 1e-6 * fabs(fd) + rounding);
            }
        }
    }
}

static void test_increasing(void **state)
{
    (void)state;
    const double rising[3] = { 0.5, 1.0, -0.7 }, falling[3] = { 0.5, 1.0, 0.7 };
    assert_true(dt_curve_increasing(DT_CURVE_LOG_POWER, rising));
    assert_false(dt_curve_increasing(DT_CURVE_LOG_POWER, falling));
    assert_true(dt_curve_eval(DT_CURVE_LOG_POWER, falling, 10) <
                dt_curve_eval(DT_CURVE_LOG_POWER, falling, 2));
    const double pow4_up[4] = { 0.7, 0.4, 0.55, 0.9 }, pow4_down[4] = { 0.7, 0.4, 0.55, -0.9 };
    assert_true(dt_curve_increasing(DT_CURVE_POW4, pow4_up));
    assert_false(dt_curve_increasing(DT_CURVE_POW4, pow4_down));
    const double ll_up[2] = { 0.02, 0.1 }, ll_flat[2] = { 0.0, 0.1 };
    assert_true(dt_curve_increasing(DT_CURVE_LOG_LINEAR, ll_up));
    assert_false(dt_curve_increasing(DT_CURVE_LOG_LINEAR, ll_flat));
}

/* Lifting moves the level first, then the rise, and never leaves the box. */
static void test_lift(void **state)
{
    (void)state;
    double lo[4], hi[4];
    dt_curve_default_bounds(DT_CURVE_LOG_POWER, 1.0, lo, hi);
    double theta[3] = { 0.5, 2.0, -0.8 };
    double before = dt_curve_eval(DT_CURVE_LOG_POWER, theta, 100);
    assert_int_equal(dt_curve_lift(DT_CURVE_LOG_POWER, theta, 100, before * 0.9, lo, hi), 0);
    assert_true(theta[0] == 0.5);   /* already above: untouched */
    assert_int_equal(dt_curve_lift(DT_CURVE_LOG_POWER, theta, 100, 0.47, lo, hi), 0);
    assert_true(dt_curve_eval(DT_CURVE_LOG_POWER, theta, 100) >= 0.47);
    assert_true(rel_err(dt_curve_eval(DT_CURVE_LOG_POWER, theta, 100), 0.47) < 1e-9);
    assert_true(theta[1] == 2.0 && theta[2] == -0.8);
    /* 0.99 needs a = 1.06 at this half-point: a goes to 1, b moves earlier */
    assert_int_equal(dt_curve_lift(DT_CURVE_LOG_POWER, theta, 100, 0.99, lo, hi), 0);
    assert_true(theta[0] == 1.0 && theta[1] < 2.0 && theta[2] == -0.8);
    assert_true(rel_err(dt_curve_eval(DT_CURVE_LOG_POWER, theta, 100), 0.99) < 1e-6);
    double kept[3];
    memcpy(kept, theta, sizeof kept);
    assert_int_equal(dt_curve_lift(DT_CURVE_LOG_POWER, theta, 100, 1.01, lo, hi), DT_EFAIL);
    assert_memory_equal(theta, kept, sizeof kept);
    dt_curve_default_bounds(DT_CURVE_POW4, 1.0, lo, hi);
    double pow4[4] = { 0.7, 0.4, 0.55, 0.9 };
    assert_int_equal(dt_curve_lift(DT_CURVE_POW4, pow4, 50, 0.6, lo, hi), 0);
    assert_true(dt_curve_eval(DT_CURVE_POW4, pow4, 50) >= 0.6 && pow4[0] == 0.7);
    assert_int_equal(dt_curve_lift(DT_CURVE_POW4, pow4, 50, 0.995, lo, hi), 0);
    assert_true(dt_curve_eval(DT_CURVE_POW4, pow4, 50) >= 0.995 && pow4[2] == 1.0);
    dt_curve_default_bounds(DT_CURVE_LOG_LINEAR, 1.0, lo, hi);
    double ll[2] = { 0.02, 0.1 };
    assert_int_equal(dt_curve_lift(DT_CURVE_LOG_LINEAR, ll, 50, 0.3, lo, hi), 0);
    assert_true(dt_curve_eval(DT_CURVE_LOG_LINEAR, ll, 50) >= 0.3 && ll[0] == 0.02);
    assert_int_equal(dt_curve_level_param(DT_CURVE_POW4), 2);
}

static double scalar_sse(dt_curve_family family, const double *theta,
                         const dt_curve_points *pts)
{
    double sse = 0;
    for (int i = 0; i < pts->n; i++) {
        double r = pts->y[i] - dt_curve_eval(family, theta, pts->x[i]);
        sse += r * r;
    }
    return sse;
}

/* The vector path agrees with the scalar formula to a relative 1e-13 for
 * every remainder length, and for steep curves that take the scalar path. */
static void test_sse_matches_scalar(void **state)
{
    (void)state;
    synthetic d;
    const double truth[3] = { 0.44, 1.6, -0.75 };
    make_data(&d, DT_CURVE_LOG_POWER, truth, 517, 0.004, 3);
    const double probes[][3] = {
        { 0.44, 1.6, -0.75 }, { 0.51, 0.3, -2.2 }, { 0.2, 9.5, -9.7 }, { 0.3, -9.0, 9.9 },
        { 0.4, 12.0, -80.0 },   /* |c (ln x − b)| > 700: scalar path */
    };
    for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++) {
        for (int n = 1; n <= 517; n += (n < 40 ? 1 : 53)) {
            dt_curve_points pts = d.pts;
            pts.n = n;
            double want = scalar_sse(DT_CURVE_LOG_POWER, probes[k], &pts);
            double got = dt_curve_sse(DT_CURVE_LOG_POWER, probes[k], &pts);
            assert_true(fabs(got - want) <= 1e-13 * want + 1e-300);
        }
    }
    const double ll[2] = { 0.05, 0.1 };
    assert_true(rel_err(dt_curve_sse(DT_CURVE_LOG_LINEAR, ll, &d.pts),
                        scalar_sse(DT_CURVE_LOG_LINEAR, ll, &d.pts)) < 1e-13);
}

static void fit_or_fail(dt_curve_family family, const synthetic *d, const double *lo,
                        const double *hi, dt_curve_fit_result *res)
{
    dt_curve_fitter *fitter = NULL;
    dt_error err;
    assert_int_equal(dt_curve_fitter_new(family, 64, NULL, &fitter, &err), 0);
    int rc = dt_curve_fit(fitter, &d->pts, lo, hi, res, &err);
    if (rc)
        fail_msg("fit failed: %s", err.msg);
    assert_true(res->starts_run >= 1);
    dt_curve_fitter_free(fitter);
}

/* 300 points, noise σ = 0.003 (about 0.7 % of the level): a within 2 %,
 * b within 0.1, c within 5 %, and the residual variance within 30 % of σ²
 * (its sampling sd is √(2/300) = 8 %). */
static void test_fit_recovers_log_power(void **state)
{
    (void)state;
    synthetic d;
    const double truth[3] = { 0.437, 1.73, -0.91 };
    make_data(&d, DT_CURVE_LOG_POWER, truth, 300, 0.003, 42);
    dt_curve_fit_result res;
    fit_or_fail(DT_CURVE_LOG_POWER, &d, NULL, NULL, &res);
    assert_true(rel_err(res.theta[0], truth[0]) < 0.02);
    assert_true(fabs(res.theta[1] - truth[1]) < 0.1);
    assert_true(rel_err(res.theta[2], truth[2]) < 0.05);
    assert_true(rel_err(res.sse / 300, 0.003 * 0.003) < 0.3);
}

/* pow4's (a, b, α) trade off against each other, so the check is on the
 * curve: 400 points, σ = 0.002; the level c within 3 %, the fitted curve
 * within 0.008 of the truth on 1..400, and the cost no worse than the
 * truth's. */
static void test_fit_recovers_pow4(void **state)
{
    (void)state;
    synthetic d;
    const double truth[4] = { 0.83, 0.52, 0.58, 0.71 };
    make_data(&d, DT_CURVE_POW4, truth, 400, 0.002, 8);
    dt_curve_fit_result res;
    fit_or_fail(DT_CURVE_POW4, &d, NULL, NULL, &res);
    assert_true(rel_err(res.theta[2], truth[2]) < 0.03);
    for (int i = 0; i < 400; i += 7)
        assert_true(fabs(dt_curve_eval(DT_CURVE_POW4, res.theta, d.x[i]) -
                         dt_curve_eval(DT_CURVE_POW4, truth, d.x[i])) < 0.008);
    assert_true(res.sse <= dt_curve_sse(DT_CURVE_POW4, truth, &d.pts) * (1 + 1e-9));
}

/* Linear in (a, b): 200 points, σ = 0.002: both within 0.003 absolute. */
static void test_fit_recovers_log_linear(void **state)
{
    (void)state;
    synthetic d;
    const double truth[2] = { 0.0617, 0.183 };
    make_data(&d, DT_CURVE_LOG_LINEAR, truth, 200, 0.002, 5);
    dt_curve_fit_result res;
    fit_or_fail(DT_CURVE_LOG_LINEAR, &d, NULL, NULL, &res);
    assert_true(fabs(res.theta[0] - truth[0]) < 0.003);
    assert_true(fabs(res.theta[1] - truth[1]) < 0.003);
}

/* Data whose least-squares level (0.8) lies outside the box (level ≤ 0.5):
 * the fit stays inside and ends on the bound. */
static void test_fit_respects_bounds(void **state)
{
    (void)state;
    synthetic d;
    const double truth[3] = { 0.8, 2.5, -0.6 };
    make_data(&d, DT_CURVE_LOG_POWER, truth, 150, 0.002, 9);
    double lo[3], hi[3];
    dt_curve_default_bounds(DT_CURVE_LOG_POWER, 0.5, lo, hi);
    assert_true(hi[0] == 0.5);
    dt_curve_fit_result res;
    fit_or_fail(DT_CURVE_LOG_POWER, &d, lo, hi, &res);
    for (int j = 0; j < 3; j++)
        assert_true(res.theta[j] >= lo[j] && res.theta[j] <= hi[j]);
    assert_true(res.theta[0] > 0.5 * (1 - 1e-4));
}

/* A fitter made for 8 points grows to 500 and finds the same fit (relative
 * 1e-6) as one made for 500. */
static void test_fit_grows(void **state)
{
    (void)state;
    synthetic d;
    const double truth[3] = { 0.29, 0.8, -1.4 };
    make_data(&d, DT_CURVE_LOG_POWER, truth, 500, 0.005, 12);
    dt_curve_fitter *small = NULL, *large = NULL;
    dt_error err;
    assert_int_equal(dt_curve_fitter_new(DT_CURVE_LOG_POWER, 8, NULL, &small, &err), 0);
    assert_int_equal(dt_curve_fitter_new(DT_CURVE_LOG_POWER, 500, NULL, &large, &err), 0);
    dt_curve_fit_result a, b;
    assert_int_equal(dt_curve_fit(small, &d.pts, NULL, NULL, &a, &err), 0);
    assert_int_equal(dt_curve_fit(large, &d.pts, NULL, NULL, &b, &err), 0);
    for (int j = 0; j < 3; j++)
        assert_true(fabs(a.theta[j] - b.theta[j]) <= 1e-6 * fabs(b.theta[j]));
    dt_curve_points shorter = d.pts;   /* and shrinks back: padding rows are zero */
    shorter.n = 37;
    assert_int_equal(dt_curve_fit(small, &shorter, NULL, NULL, &a, &err), 0);
    assert_true(rel_err(a.sse, dt_curve_sse(DT_CURVE_LOG_POWER, a.theta, &shorter)) < 1e-12);
    dt_curve_fitter_free(small);
    dt_curve_fitter_free(large);
}

static void test_fit_reports_bad_input(void **state)
{
    (void)state;
    synthetic d;
    const double truth[3] = { 0.4, 1.0, -1.0 };
    make_data(&d, DT_CURVE_LOG_POWER, truth, 20, 0.001, 1);
    dt_curve_fitter *fitter = NULL;
    dt_error err;
    dt_curve_fit_result res;
    assert_int_equal(dt_curve_fitter_new(DT_CURVE_COUNT, 8, NULL, &fitter, &err), DT_EINVAL);
    assert_int_equal(dt_curve_fitter_new(DT_CURVE_LOG_POWER, 8, NULL, &fitter, &err), 0);
    dt_curve_points two = d.pts;
    two.n = 2;
    assert_int_equal(dt_curve_fit(fitter, &two, NULL, NULL, &res, &err), DT_EINVAL);
    d.y[5] = NAN;
    assert_int_equal(dt_curve_fit(fitter, &d.pts, NULL, NULL, &res, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "point 5"));
    d.y[5] = 0.2;
    d.x[7] = d.x[6];
    assert_int_equal(dt_curve_fit(fitter, &d.pts, NULL, NULL, &res, &err), DT_EINVAL);
    d.x[7] = 8;
    double lo[3] = { 0, -10, -10 }, hi[3] = { 0, 20, 10 };
    assert_int_equal(dt_curve_fit(fitter, &d.pts, lo, hi, &res, &err), DT_EINVAL);
    assert_int_equal(dt_curve_fit(fitter, &d.pts, NULL, NULL, &res, &err), 0);
    dt_curve_fitter_free(fitter);
    dt_curve_fitter_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_log_power_shape),
        cmocka_unit_test(test_gradients_match_differences),
        cmocka_unit_test(test_increasing),
        cmocka_unit_test(test_lift),
        cmocka_unit_test(test_sse_matches_scalar),
        cmocka_unit_test(test_fit_recovers_log_power),
        cmocka_unit_test(test_fit_recovers_pow4),
        cmocka_unit_test(test_fit_recovers_log_linear),
        cmocka_unit_test(test_fit_respects_bounds),
        cmocka_unit_test(test_fit_grows),
        cmocka_unit_test(test_fit_reports_bad_input),
    };
    return cmocka_run_group_tests_name("curve", tests, NULL, NULL);
}
