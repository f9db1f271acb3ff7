/* test_sampling.c — the index set, k-means and its knee on planted clusters,
 * the mode config, synthesis never handing back a measured config while
 * an unmeasured valid one exists, and selection measuring each cluster at its
 * best-ranked member. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>

#include "sampling_internal.h"
#include "dtune/target.h"

/* Every vector width, so the spaces do not depend on the machine. */
static const dt_space_opts every_width = { .cpu_max_vec = 16 };

/* A dense 1x48 * 32x48^T task on the CPU: 2,880 points, enumerable. */
static void small_space(dt_space *space)
{
    dt_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "dense_small");
    t.kind = DT_OP_DENSE;
    t.count = 1;
    t.mm = (dt_mm_shape){.b = 1, .m = 1, .n = 32, .k = 48};
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    assert_int_equal(dt_target_space_init_opts(space, &t, DT_TARGET_CPU, &every_width, NULL), 0);
}

static dt_sampling *make_sampler(const dt_space *space, int max_candidates, int max_batch)
{
    dt_sampling_params cfg;
    cfg = dt_sampling_params_default();
    cfg.k_min = 8;   /* the planted knees below are sized for it */
    dt_sampling *s = NULL;
    assert_int_equal(dt_sampling_new(space, &cfg, max_candidates, max_batch, 2024, &s, NULL), 0);
    return s;
}

static void test_set_holds_what_was_added(void **state)
{
    (void)state;
    dt_sampling_set set;
    assert_int_equal(dt_sampling_set_init(&set), 0);
    for (uint64_t i = 0; i < 5000; i++)
        assert_int_equal(dt_sampling_set_add(&set, i * 7919 + 3), 1);
    assert_int_equal(dt_sampling_set_add(&set, 3), 0);
    assert_int_equal((int)set.n, 5000);
    for (uint64_t i = 0; i < 5000; i++) {
        assert_true(dt_sampling_set_has(&set, i * 7919 + 3));
        assert_false(dt_sampling_set_has(&set, i * 7919 + 4));
    }
    assert_true(dt_sampling_set_add(&set, 0) == 1 && dt_sampling_set_has(&set, 0));
    dt_sampling_set_clear(&set);
    assert_false(dt_sampling_set_has(&set, 3));
    dt_sampling_set_free(&set);
}

/* A set with values keeps each index's latest value through growth and
 * clearing; a plain set refuses values. */
static void test_set_keeps_values(void **state)
{
    (void)state;
    dt_sampling_set set;
    assert_int_equal(dt_sampling_set_init_values(&set), 0);
    double v = -1;
    assert_false(dt_sampling_set_get(&set, 3, &v));
    for (uint64_t i = 0; i < 5000; i++)
        assert_int_equal(dt_sampling_set_put(&set, i * 7919 + 3, (double)i / 7), 0);
    assert_int_equal(dt_sampling_set_put(&set, 3, 0.5), 0);   /* a new value, no new index */
    assert_int_equal((int)set.n, 5000);
    assert_int_equal(dt_sampling_set_add(&set, 11), 1);       /* added without a value: 0 */
    assert_true(dt_sampling_set_get(&set, 11, &v) && v == 0);
    assert_true(dt_sampling_set_get(&set, 3, &v) && v == 0.5);
    for (uint64_t i = 1; i < 5000; i++) {
        assert_true(dt_sampling_set_get(&set, i * 7919 + 3, &v) && v == (double)i / 7);
        assert_false(dt_sampling_set_get(&set, i * 7919 + 4, &v));
    }
    dt_sampling_set_clear(&set);
    assert_false(dt_sampling_set_get(&set, 3, &v));
    assert_int_equal(dt_sampling_set_put(&set, 3, 2.0), 0);
    assert_true(dt_sampling_set_get(&set, 3, &v) && v == 2.0);
    dt_sampling_set_free(&set);
    dt_sampling_set plain;
    assert_int_equal(dt_sampling_set_init(&plain), 0);
    assert_int_equal(dt_sampling_set_put(&plain, 3, 1.0), DT_EINVAL);
    assert_false(dt_sampling_set_get(&plain, 3, &v));
    dt_sampling_set_free(&plain);
}

/* nclusters well-separated centres, each holding `pairs` (1 or 2) tight
 * Gaussian blobs (σ 0.01) of 23 points in 5 dimensions; a pair's blobs sit
 * 0.1 apart, so they are clusters of their own at a finer scale. */
static int plant(gsl_rng *rng, int nclusters, int pairs, double *coords)
{
    enum { PER = 23, DIM = 5 };
    int n = 0;
    for (int c = 0; c < nclusters; c++) {
        double centre[DIM];
        for (int d = 0; d < DIM; d++)
            centre[d] = gsl_rng_uniform(rng);
        int axis = (int)gsl_rng_uniform_int(rng, DIM);
        for (int b = 0; b < pairs; b++)
            for (int i = 0; i < PER; i++, n++)
                for (int d = 0; d < DIM; d++)
                    coords[n * DIM + d] = centre[d] + gsl_ran_gaussian(rng, 0.01) +
                                          (pairs > 1 && d == axis ? (b ? 0.05 : -0.05) : 0);
    }
    return n;
}

static void check_knee(int planted, int pairs, int max_k, int expected)
{
    dt_space space;
    small_space(&space);
    dt_sampling *s = make_sampler(&space, 2048, 64);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 31337 + (unsigned long)planted);
    double *coords = malloc(2048 * 5 * sizeof *coords);
    assert_non_null(coords);
    int n = plant(rng, planted, pairs, coords);
    double loss = -1;
    int k = dt_sampling_knee(s, coords, n, 5, max_k, &loss);
    assert_int_equal(k, expected);
    if (expected >= planted * pairs)   /* the kept k separates every blob */
        assert_true(loss >= 0 && loss < n * 5 * 0.01 * 0.01 * 2);
    free(coords);
    gsl_rng_free(rng);
    dt_sampling_free(s);
    dt_space_free(&space);
}

static void test_knee_on_planted_clusters(void **state)
{
    (void)state;
    check_knee(4, 1, 64, 8);     /* fewer clusters than k_min: k_min is the knee */
    check_knee(8, 1, 64, 8);
    check_knee(16, 1, 64, 16);
    check_knee(16, 2, 64, 32);   /* 16 pairs: the loss keeps falling 2.5x to 32 */
    check_knee(16, 2, 16, 16);   /* capped by the batch size */
}

static void test_kmeans_loss_falls_with_k(void **state)
{
    (void)state;
    dt_space space;
    small_space(&space);
    dt_sampling *s = make_sampler(&space, 512, 64);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 77);
    double coords[300 * 3], centroids[64 * 3];
    int assign[300];
    for (int i = 0; i < 300 * 3; i++)
        coords[i] = gsl_rng_uniform(rng);
    double previous = INFINITY;
    for (int k = 1; k <= 64; k *= 2) {
        double loss = dt_sampling_kmeans(s, coords, 300, 3, k, centroids, assign);
        assert_true(loss < previous);
        previous = loss;
        /* Each centroid is the mean of its members. */
        double sum[3] = {0, 0, 0};
        int members = 0;
        for (int i = 0; i < 300; i++)
            if (assign[i] == 0) {
                members++;
                for (int d = 0; d < 3; d++) sum[d] += coords[i * 3 + d];
            }
        assert_true(members > 0);
        for (int d = 0; d < 3; d++)
            assert_true(fabs(sum[d] / members - centroids[d]) < 1e-9);
    }
    gsl_rng_free(rng);
    dt_sampling_free(s);
    dt_space_free(&space);
}

static void test_mode_takes_most_frequent_option(void **state)
{
    (void)state;
    dt_space space;
    small_space(&space);
    dt_sampling *s = make_sampler(&space, 64, 8);
    dt_point c[5];
    memset(c, 0, sizeof c);
    const int knob1[5] = {3, 3, 1, 4, 1};   /* tie 3 vs 1: the lower option wins */
    const int knob2[5] = {2, 0, 2, 2, 1};
    for (int i = 0; i < 5; i++) {
        c[i].opt[1] = (int16_t)knob1[i];
        c[i].opt[2] = (int16_t)knob2[i];
    }
    dt_point mode;
    dt_sampling_mode(s, c, 5, &mode);
    assert_int_equal(mode.opt[0], 0);
    assert_int_equal(mode.opt[1], 1);
    assert_int_equal(mode.opt[2], 2);
    dt_sampling_free(s);
    dt_space_free(&space);
}

static void test_synthesis_never_returns_measured(void **state)
{
    (void)state;
    dt_space space;
    small_space(&space);
    dt_sampling *s = make_sampler(&space, 256, 16);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5150);
    dt_point cands[40];
    for (int i = 0; i < 40; i++)
        dt_space_random(&space, rng, &cands[i]);
    dt_sampling_set measured;
    assert_int_equal(dt_sampling_set_init(&measured), 0);
    int64_t valid = dt_space_count_valid(&space, space.size);
    assert_true(valid > 100);
    /* Measure every valid point in a random order; synthesis must keep
     * returning an unmeasured valid point until none is left. */
    uint64_t *order = malloc(space.size * sizeof *order);
    assert_non_null(order);
    for (uint64_t i = 0; i < space.size; i++)
        order[i] = i;
    gsl_ran_shuffle(rng, order, space.size, sizeof *order);
    int64_t measured_valid = 0;
    for (uint64_t i = 0; i < space.size; i++) {
        dt_point p, out;
        dt_space_point(&space, order[i], &p);
        if (!dt_space_valid(&space, &p))
            continue;
        dt_sampling_set_add(&measured, order[i]);
        measured_valid++;
        int rc = dt_sampling_synthesise(s, cands, 40, &measured, NULL, &out, NULL);
        if (measured_valid == valid) {
            assert_int_equal(rc, DT_ENOTFOUND);
            break;
        }
        assert_int_equal(rc, 0);
        assert_true(dt_space_valid(&space, &out));
        assert_false(dt_sampling_set_has(&measured, dt_space_index(&space, &out)));
    }
    assert_int_equal(measured_valid, valid);
    free(order);
    dt_sampling_set_free(&measured);
    gsl_rng_free(rng);
    dt_sampling_free(s);
    dt_space_free(&space);
}

static void test_select_gives_distinct_unmeasured_valid(void **state)
{
    (void)state;
    dt_space space;
    small_space(&space);
    dt_sampling *s = make_sampler(&space, 512, 64);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 8675309);
    dt_point cands[400], batch[64];
    for (int i = 0; i < 400; i++)
        dt_space_random(&space, rng, &cands[i]);
    dt_sampling_set measured;
    assert_int_equal(dt_sampling_set_init(&measured), 0);
    for (int i = 0; i < 400; i += 3)   /* a third of the candidates already measured */
        dt_sampling_set_add(&measured, dt_space_index(&space, &cands[i]));
    int n = 0;
    dt_sampling_info info;
    assert_int_equal(dt_sampling_select(s, cands, 400, &measured, 64, batch, &n, &info, NULL), 0);
    assert_true(info.k >= 8 && info.k <= 64);
    assert_int_equal(n, info.k);
    dt_sampling_set seen;
    assert_int_equal(dt_sampling_set_init(&seen), 0);
    for (int i = 0; i < n; i++) {
        uint64_t idx = dt_space_index(&space, &batch[i]);
        assert_true(dt_space_valid(&space, &batch[i]));
        assert_false(dt_sampling_set_has(&measured, idx));
        assert_int_equal(dt_sampling_set_add(&seen, idx), 1);
    }
    dt_sampling_set_free(&seen);
    dt_sampling_set_free(&measured);
    gsl_rng_free(rng);
    dt_sampling_free(s);
    dt_space_free(&space);
}

/* Candidates come best first; each cluster is measured at its first member,
 * so the best valid candidate is always in the batch, and (nothing measured)
 * every config of the batch is a candidate. Checked in both orders. */
static bool in_batch(const dt_space *space, const dt_point *p, const dt_point *batch, int n)
{
    for (int i = 0; i < n; i++)
        if (dt_space_index(space, &batch[i]) == dt_space_index(space, p))
            return true;
    return false;
}

static void test_select_measures_each_cluster_at_its_best(void **state)
{
    (void)state;
    dt_space space;
    small_space(&space);
    dt_sampling *s = make_sampler(&space, 512, 64);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 4242);
    dt_point cands[300], reversed[300], batch[64];
    int n = 0;
    for (int i = 0; i < 300; i++) {
        do
            dt_space_random(&space, rng, &cands[n]);
        while (!dt_space_valid(&space, &cands[n]));
        n++;
    }
    for (int i = 0; i < n; i++)
        reversed[i] = cands[n - 1 - i];
    dt_sampling_set measured;
    assert_int_equal(dt_sampling_set_init(&measured), 0);
    const dt_point *orders[2] = { cands, reversed };
    for (int o = 0; o < 2; o++) {
        int nb = 0;
        assert_int_equal(dt_sampling_select(s, orders[o], n, &measured, 64, batch, &nb, NULL, NULL), 0);
        assert_true(nb >= 8);
        assert_true(in_batch(&space, &orders[o][0], batch, nb));
        for (int i = 0; i < nb; i++)
            assert_true(in_batch(&space, &batch[i], orders[o], n));
    }
    dt_sampling_set_free(&measured);
    gsl_rng_free(rng);
    dt_sampling_free(s);
    dt_space_free(&space);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_holds_what_was_added),
        cmocka_unit_test(test_set_keeps_values),
        cmocka_unit_test(test_knee_on_planted_clusters),
        cmocka_unit_test(test_kmeans_loss_falls_with_k),
        cmocka_unit_test(test_mode_takes_most_frequent_option),
        cmocka_unit_test(test_synthesis_never_returns_measured),
        cmocka_unit_test(test_select_gives_distinct_unmeasured_valid),
        cmocka_unit_test(test_select_measures_each_cluster_at_its_best),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
