/* test_mcmc.c — the stretch-move ensemble sampler against the oracles of
 * emcee's own test suite (normal targets in 1-D and 5-D with 32 walkers and
 * 2000 steps, a uniform K-S test that must fail, the AR(1) autocorrelation
 * time), plus start, seeding, affine invariance and error handling.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "mcmc_internal.h"

#define WALKERS 32
#define STEPS 2000

static double normal_log_prob(const double *theta, void *ctx)
{
    int ndim = *(const int *)ctx;
    double s = 0;
    for (int i = 0; i < ndim; i++)
        s += theta[i] * theta[i];
    return -0.5 * s;
}

static double half_line_log_prob(const double *theta, void *ctx)
{
    (void)ctx;
    return theta[0] > 0 ? -theta[0] : -INFINITY;
}

static double nowhere_log_prob(const double *theta, void *ctx)
{
    (void)theta;
    (void)ctx;
    return -INFINITY;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Kolmogorov–Smirnov statistic of samples (sorted in place) against cdf. */
static double ks_statistic(double *samples, size_t n, double (*cdf)(double))
{
    qsort(samples, n, sizeof *samples, compare_doubles);
    double d = 0;
    for (size_t i = 0; i < n; i++) {
        double f = cdf(samples[i]);
        d = fmax(d, fmax(f - (double)i / n, (double)(i + 1) / n - f));
    }
    return d;
}

static double uniform01_cdf(double x)
{
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

static dt_mcmc *new_sampler(int walkers, int ndim, int steps, uint64_t seed)
{
    dt_mcmc_params p = dt_mcmc_params_default();
    p.walkers = walkers;
    p.ndim = ndim;
    p.max_steps = steps;
    p.seed = seed;
    dt_mcmc *s = NULL;
    dt_error err;
    assert_int_equal(dt_mcmc_new(&p, &s, &err), 0);
    return s;
}

/* Starts from positions drawn by draw(rng) and runs STEPS steps. */
static dt_mcmc *run_normal(int ndim, bool uniform_start, uint64_t seed)
{
    dt_mcmc *s = new_sampler(WALKERS, ndim, STEPS, seed);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1234);
    double start[WALKERS * 5];
    for (int i = 0; i < WALKERS * ndim; i++)
        start[i] = uniform_start ? gsl_rng_uniform(rng) : gsl_ran_gaussian(rng, 1.0);
    gsl_rng_free(rng);
    dt_error err;
    assert_int_equal(dt_mcmc_start(s, start, normal_log_prob, &ndim, &err), 0);
    assert_int_equal(dt_mcmc_run(s, STEPS, normal_log_prob, &ndim, &err), 0);
    assert_int_equal(dt_mcmc_steps(s), STEPS);
    return s;
}

static void assert_acceptance_between(const dt_mcmc *s, double lo, double hi)
{
    for (int k = 0; k < dt_mcmc_walkers(s); k++) {
        double acc = dt_mcmc_acceptance_fraction(s, k);
        assert_true(acc > lo && acc < hi);
    }
}

/* Flat chain coordinate `dim` into out (STEPS × WALKERS values). */
static void flat_coordinate(const dt_mcmc *s, int dim, double *out)
{
    int d = dt_mcmc_ndim(s);
    const double *chain = dt_mcmc_chain(s);
    for (size_t i = 0; i < (size_t)STEPS * WALKERS; i++)
        out[i] = chain[i * d + dim];
}

static void assert_standard_normal(const dt_mcmc *s, int dim, double *flat)
{
    size_t n = (size_t)STEPS * WALKERS;
    flat_coordinate(s, dim, flat);
    double mean = 0, m2 = 0;
    for (size_t i = 0; i < n; i++)
        mean += flat[i] / n;
    for (size_t i = 0; i < n; i++)
        m2 += (flat[i] - mean) * (flat[i] - mean) / n;
    assert_true(fabs(mean) < 0.08);           /* emcee's tolerance */
    assert_true(fabs(sqrt(m2) - 1.0) < 0.05);  /* emcee's tolerance */
}

static void test_normal_1d(void **state)
{
    (void)state;
    dt_mcmc *s = run_normal(1, false, 20240611);
    assert_acceptance_between(s, 0.1, 0.9);
    double *flat = malloc((size_t)STEPS * WALKERS * sizeof *flat);
    assert_standard_normal(s, 0, flat);
    double ks = ks_statistic(flat, (size_t)STEPS * WALKERS, gsl_cdf_ugaussian_P);
    assert_true(ks < 0.05);                   /* emcee's tolerance */
    free(flat);
    dt_mcmc_free(s);
}

static void test_normal_5d(void **state)
{
    (void)state;
    dt_mcmc *s = run_normal(5, false, 7);
    assert_acceptance_between(s, 0.1, 0.9);
    double *flat = malloc((size_t)STEPS * WALKERS * sizeof *flat);
    for (int dim = 0; dim < 5; dim++)
        assert_standard_normal(s, dim, flat);
    free(flat);
    dt_mcmc_free(s);
}

/* Started in U(0, 1) on a normal target, the chain must not look uniform:
 * emcee shuffles the flat chain, keeps every 100th sample and demands a K-S
 * statistic above 0.1 against U(0, 1). */
static void test_uniform_ks_must_fail(void **state)
{
    (void)state;
    dt_mcmc *s = run_normal(1, true, 99);
    assert_acceptance_between(s, 0.1, 0.9);
    size_t n = (size_t)STEPS * WALKERS;
    double *flat = malloc(n * sizeof *flat);
    flat_coordinate(s, 0, flat);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 4321);
    gsl_ran_shuffle(rng, flat, n, sizeof *flat);
    gsl_rng_free(rng);
    size_t kept = 0;
    for (size_t i = 0; i < n; i += 100)
        flat[kept++] = flat[i];
    assert_true(ks_statistic(flat, kept, uniform01_cdf) > 0.1);
    free(flat);
    dt_mcmc_free(s);
}

/* x_i = 0.9 x_{i−1} + U(0, 1) has τ = (1 + 0.9)/(1 − 0.9) = 19; emcee's test
 * demands 20 % relative error on 250 000 steps. */
static void test_autocorr_ar1(void **state)
{
    (void)state;
    const int n = 250000;
    double *x = malloc((size_t)n * sizeof *x);
    double *work = malloc(dt_mcmc_integrated_time_work(n) * sizeof *work);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1234);
    x[0] = 0;
    for (int i = 1; i < n; i++)
        x[i] = 0.9 * x[i - 1] + gsl_rng_uniform(rng);
    double tau = 0;
    dt_error err;
    assert_int_equal(dt_mcmc_integrated_time(x, n, 1, 5.0, 50.0, work, &tau, &err), 0);
    assert_true(fabs(tau - 19.0) / 19.0 < 0.2);
    gsl_rng_free(rng);
    free(work);
    free(x);
}

static void test_autocorr_too_short_and_constant(void **state)
{
    (void)state;
    double x[100], work[256], tau = 0;
    x[0] = 0;
    for (int i = 1; i < 100; i++)
        x[i] = 0.9 * x[i - 1] + (double)((i * 7919) % 101) / 101.0;
    assert_true(dt_mcmc_integrated_time_work(100) <= 256);
    dt_error err;
    assert_int_equal(dt_mcmc_integrated_time(x, 100, 1, 5.0, 50.0, work, &tau, &err),
                     DT_EFAIL);
    assert_true(tau > 2.0);   /* the estimate is still written */
    assert_int_equal(dt_mcmc_integrated_time(x, 100, 1, 5.0, 0.0, work, &tau, &err), 0);
    for (int i = 0; i < 100; i++)
        x[i] = 0.37;
    assert_int_equal(dt_mcmc_integrated_time(x, 100, 1, 5.0, 0.0, work, &tau, &err),
                     DT_EINVAL);
}

/* On a 1-D normal with 32 walkers, emcee 3.1.4's get_autocorr_time(discard =
 * 100) gives τ = 23.7 ± 1.5 (mean ± sd over seeds 0..7); ours must agree
 * within 25 % (over 3 sd), and 1900 steps exceed 50 τ. */
static void test_chain_autocorr(void **state)
{
    (void)state;
    dt_mcmc *s = run_normal(1, false, 5);
    double tau = 0;
    dt_error err;
    assert_int_equal(dt_mcmc_chain_integrated_time(s, 0, 100, 5.0, 50.0, &tau, &err), 0);
    assert_true(fabs(tau - 23.7) / 23.7 < 0.25);
    assert_int_equal(dt_mcmc_chain_integrated_time(s, 1, 0, 5.0, 50.0, &tau, &err),
                     DT_EINVAL);
    dt_mcmc_free(s);
}

static void test_ball_redraws_outside_support(void **state)
{
    (void)state;
    dt_mcmc *s = new_sampler(8, 1, 10, 3);
    double centre = 0.0, scale = 1.0;
    dt_error err;
    assert_int_equal(dt_mcmc_start_ball(s, &centre, &scale, half_line_log_prob, NULL, &err),
                     0);
    assert_int_equal(dt_mcmc_run(s, 10, half_line_log_prob, NULL, &err), 0);
    const double *chain = dt_mcmc_chain(s);
    for (int i = 0; i < 10 * 8; i++)
        assert_true(chain[i] > 0);
    assert_int_equal(dt_mcmc_start_ball(s, &centre, &scale, nowhere_log_prob, NULL, &err),
                     DT_EFAIL);
    assert_int_equal(dt_mcmc_run(s, 1, half_line_log_prob, NULL, &err), DT_EINVAL);
    dt_mcmc_free(s);
}

static void run_ball(dt_mcmc *s, int ndim, double *copy)
{
    double centre[2] = { 0.3, -0.2 }, scale[2] = { 0.5, 0.5 };
    dt_error err;
    assert_int_equal(dt_mcmc_start_ball(s, centre, scale, normal_log_prob, &ndim, &err), 0);
    assert_int_equal(dt_mcmc_run(s, 50, normal_log_prob, &ndim, &err), 0);
    memcpy(copy, dt_mcmc_chain(s), 50 * 8 * 2 * sizeof *copy);
}

static void test_seed_replays(void **state)
{
    (void)state;
    int ndim = 2;
    double first[800], second[800], third[800];
    dt_mcmc *s = new_sampler(8, 2, 50, 11);
    run_ball(s, ndim, first);
    dt_mcmc_seed(s, 11);
    run_ball(s, ndim, second);
    dt_mcmc_seed(s, 12);
    run_ball(s, ndim, third);
    assert_memory_equal(first, second, sizeof first);
    assert_memory_not_equal(first, third, sizeof first);
    dt_mcmc_free(s);
}

/* The stretch move is affine invariant: on the target N(m, A Aᵀ) started at
 * A x + m, the same random stream gives the chain A x_t + m. Checked to a
 * relative 1e-9 (rounding only). */
struct affine_target {
    double a[2][2], inv[2][2], m[2];
};

static double affine_log_prob(const double *theta, void *ctx)
{
    const struct affine_target *t = ctx;
    double d0 = theta[0] - t->m[0], d1 = theta[1] - t->m[1];
    double u0 = t->inv[0][0] * d0 + t->inv[0][1] * d1;
    double u1 = t->inv[1][0] * d0 + t->inv[1][1] * d1;
    return -0.5 * (u0 * u0 + u1 * u1);
}

static void test_affine_invariance(void **state)
{
    (void)state;
    struct affine_target t = { .a = { { 2.5, 0.0 }, { 1.7, 0.03 } }, .m = { 4.2, -1.3 } };
    double det = t.a[0][0] * t.a[1][1] - t.a[0][1] * t.a[1][0];
    t.inv[0][0] = t.a[1][1] / det, t.inv[0][1] = -t.a[0][1] / det;
    t.inv[1][0] = -t.a[1][0] / det, t.inv[1][1] = t.a[0][0] / det;
    int ndim = 2;
    double start[16], mapped[16];
    for (int k = 0; k < 8; k++) {
        start[2 * k] = 0.1 * k - 0.35, start[2 * k + 1] = 0.05 * (k % 3) + 0.2;
        for (int i = 0; i < 2; i++)
            mapped[2 * k + i] = t.a[i][0] * start[2 * k] + t.a[i][1] * start[2 * k + 1] + t.m[i];
    }
    dt_mcmc *plain = new_sampler(8, 2, 200, 77), *affine = new_sampler(8, 2, 200, 77);
    dt_error err;
    assert_int_equal(dt_mcmc_start(plain, start, normal_log_prob, &ndim, &err), 0);
    assert_int_equal(dt_mcmc_start(affine, mapped, affine_log_prob, &t, &err), 0);
    assert_int_equal(dt_mcmc_run(plain, 200, normal_log_prob, &ndim, &err), 0);
    assert_int_equal(dt_mcmc_run(affine, 200, affine_log_prob, &t, &err), 0);
    const double *x = dt_mcmc_chain(plain), *y = dt_mcmc_chain(affine);
    for (int i = 0; i < 200 * 8; i++) {
        for (int r = 0; r < 2; r++) {
            double want = t.a[r][0] * x[2 * i] + t.a[r][1] * x[2 * i + 1] + t.m[r];
            assert_true(fabs(y[2 * i + r] - want) <= 1e-9 * (fabs(want) + 1.0));
        }
    }
    dt_mcmc_free(plain);
    dt_mcmc_free(affine);
}

static void test_bad_input(void **state)
{
    (void)state;
    dt_mcmc_params p = dt_mcmc_params_default();
    p.walkers = 6;
    p.ndim = 4;
    dt_mcmc *s = NULL;
    dt_error err;
    assert_int_equal(dt_mcmc_new(&p, &s, &err), DT_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err.msg, "twice"));
    p.walkers = 8;
    p.stretch = 1.0;
    assert_int_equal(dt_mcmc_new(&p, &s, &err), DT_EINVAL);
    s = new_sampler(4, 1, 5, 1);
    int ndim = 1;
    double start[4] = { 0.1, NAN, 0.3, 0.4 };
    assert_int_equal(dt_mcmc_start(s, start, normal_log_prob, &ndim, &err), DT_EINVAL);
    start[1] = 0.2;
    assert_int_equal(dt_mcmc_start(s, start, normal_log_prob, &ndim, &err), 0);
    assert_int_equal(dt_mcmc_run(s, 6, normal_log_prob, &ndim, &err), DT_EINVAL);
    assert_int_equal(dt_mcmc_run(s, 5, normal_log_prob, &ndim, &err), 0);
    assert_int_equal(dt_mcmc_run(s, 1, normal_log_prob, &ndim, &err), DT_EINVAL);
    dt_mcmc_free(s);
    dt_mcmc_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normal_1d),
        cmocka_unit_test(test_normal_5d),
        cmocka_unit_test(test_uniform_ks_must_fail),
        cmocka_unit_test(test_autocorr_ar1),
        cmocka_unit_test(test_autocorr_too_short_and_constant),
        cmocka_unit_test(test_chain_autocorr),
        cmocka_unit_test(test_ball_redraws_outside_support),
        cmocka_unit_test(test_seed_replays),
        cmocka_unit_test(test_affine_invariance),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests_name("mcmc", tests, NULL, NULL);
}
