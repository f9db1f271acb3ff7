/* test_costmodel.c — the XGBoost cost model on the replay surface of a small
 * enumerable space: both objectives rank unseen configs well after training
 * on a random sample (noisy measurements, planted failures as label 0), fits
 * are repeatable, and misuse is reported rather than crashing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "dtune/backend.h"
#include "costmodel_internal.h"
#include "dtune/target.h"
#include "replay_backend.h"

/* Every vector width, so the spaces do not depend on the machine. */
static const dt_space_opts every_width = { .cpu_max_vec = 16 };

#define SEED 11

typedef struct fixture {
    dt_space space;
    int nvalid;
    dt_point *valid;          /* every valid point */
    double *truth;            /* noise-free GFLOPS */
    float *features;          /* of every valid point */
} fixture;

/* A conv2d 1x16x14x14 k3 -> 24 on the CPU: enumerable, a few thousand points. */
static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    dt_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "conv_small");
    t.kind = DT_OP_CONV2D;
    t.count = 1;
    t.conv = (dt_conv_shape){.n = 1, .c_in = 16, .h = 14, .w = 14, .c_out = 24, .kh = 3, .kw = 3,
                             .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1};
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    assert_int_equal(dt_target_space_init_opts(&f->space, &t, DT_TARGET_CPU, &every_width, NULL), 0);
    assert_true(f->space.size < 200000);
    f->valid = malloc(f->space.size * sizeof *f->valid);
    f->truth = malloc(f->space.size * sizeof *f->truth);
    f->features = malloc(f->space.size * (size_t)f->space.nfeatures * sizeof *f->features);
    for (uint64_t i = 0; i < f->space.size; i++) {
        dt_point p;
        dt_space_point(&f->space, i, &p);
        if (!dt_space_valid(&f->space, &p))
            continue;
        f->valid[f->nvalid] = p;
        f->truth[f->nvalid] = dt_replay_backend_true_gflops(&f->space, &p, SEED);
        dt_space_features(&f->space, &p, f->features + (size_t)f->nvalid * f->space.nfeatures);
        f->nvalid++;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    dt_space_free(&f->space);
    free(f->valid);
    free(f->truth);
    free(f->features);
    free(f);
    return 0;
}

/* Trains on n random valid points with noisy replay measurements. */
static dt_costmodel *train(fixture *f, const char *objective, int n, uint64_t seed)
{
    dt_costmodel_params cfg;
    cfg = dt_costmodel_params_default();
    snprintf(cfg.objective, sizeof cfg.objective, "%s", objective);
    dt_costmodel *cm = NULL;
    dt_error err;
    assert_int_equal(dt_costmodel_new(&cfg, f->space.nfeatures, seed, &cm, &err), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)seed);
    float *x = malloc((size_t)n * f->space.nfeatures * sizeof *x);
    double *y = malloc((size_t)n * sizeof *y);
    for (int i = 0; i < n; i++) {
        int j = (int)gsl_rng_uniform_int(rng, (unsigned long)f->nvalid);
        dt_measure_result r;
        dt_replay_backend_measure(&f->space, &f->valid[j], SEED, (uint64_t)i, &r);
        y[i] = r.result == DT_RESULT_OK ? r.gflops : 0.0;
        memcpy(x + (size_t)i * f->space.nfeatures, f->features + (size_t)j * f->space.nfeatures,
               (size_t)f->space.nfeatures * sizeof *x);
    }
    int rc = dt_costmodel_fit(cm, x, y, n, &err);
    if (rc)
        print_error("fit: %s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_true(dt_costmodel_trained(cm));
    free(x);
    free(y);
    gsl_rng_free(rng);
    return cm;
}

/* Spearman correlation of predictions with the truth over every valid point. */
static double rank_correlation(fixture *f, dt_costmodel *cm)
{
    double *pred = malloc((size_t)f->nvalid * sizeof *pred);
    double *work = malloc(2 * (size_t)f->nvalid * sizeof *work);
    dt_error err;
    assert_int_equal(dt_costmodel_predict(cm, f->features, f->nvalid, pred, &err), 0);
    double rho = gsl_stats_spearman(pred, 1, f->truth, 1, (size_t)f->nvalid, work);
    print_message("spearman %.3f over %d valid points\n", rho, f->nvalid);
    free(pred);
    free(work);
    return rho;
}

static void test_rank_objective_learns_order(void **state)
{
    fixture *f = *state;
    dt_costmodel *cm = train(f, "rank:pairwise", 300, 5);
    double rho = rank_correlation(f, cm);
    assert_true(rho > 0.6);
    dt_costmodel_free(cm);
}

static void test_regression_objective_learns_normalised_gflops(void **state)
{
    fixture *f = *state;
    dt_costmodel *cm = train(f, "reg:squarederror", 300, 6);
    assert_true(rank_correlation(f, cm) > 0.6);
    /* Labels are GFLOPS / best, so predictions live around [0, 1]. */
    double *pred = malloc((size_t)f->nvalid * sizeof *pred);
    assert_int_equal(dt_costmodel_predict_points(cm, &f->space, f->valid, f->nvalid, pred, NULL), 0);
    double hi = gsl_stats_max(pred, 1, (size_t)f->nvalid);
    double lo = gsl_stats_min(pred, 1, (size_t)f->nvalid);
    assert_true(hi > 0.6 && hi < 1.3 && lo > -0.3);
    free(pred);
    dt_costmodel_free(cm);
}

static void test_fit_is_repeatable(void **state)
{
    fixture *f = *state;
    dt_costmodel *a = train(f, "rank:pairwise", 120, 9), *b = train(f, "rank:pairwise", 120, 9);
    double pa[64], pb[64];
    assert_int_equal(dt_costmodel_predict(a, f->features, 64, pa, NULL), 0);
    assert_int_equal(dt_costmodel_predict(b, f->features, 64, pb, NULL), 0);
    for (int i = 0; i < 64; i++)
        assert_true(pa[i] == pb[i]);
    dt_costmodel_free(a);
    dt_costmodel_free(b);
}

static int always(void *ctx)
{
    (void)ctx;
    return 1;
}

/* A fit asked to stop ends with DT_ECANCELED and keeps the booster it had. */
static void test_fit_stops_when_cancelled(void **state)
{
    fixture *f = *state;
    dt_costmodel *cm = train(f, "rank:pairwise", 120, 9);
    double before[16], after[16], y[40];
    assert_int_equal(dt_costmodel_predict(cm, f->features, 16, before, NULL), 0);
    for (int i = 0; i < 40; i++)
        y[i] = 1.0 + 0.31 * i;
    dt_cancel c = { always, NULL };
    dt_costmodel_set_cancel(cm, &c);
    dt_error err;
    assert_int_equal(dt_costmodel_fit(cm, f->features, y, 40, &err), DT_ECANCELED);
    assert_true(dt_costmodel_trained(cm));
    assert_int_equal(dt_costmodel_predict(cm, f->features, 16, after, NULL), 0);
    for (int i = 0; i < 16; i++)
        assert_true(before[i] == after[i]);
    dt_costmodel_free(cm);
}

/* Rows of two groups, the second's GFLOPS on another scale: each group is
 * normalised by its own best, so the first group's best rows still learn
 * labels near 1 (one normalisation for both would give them < 1/7). A base
 * margin is accepted; groups that do not partition the rows are refused. */
static void test_groups_normalise_separately(void **state)
{
    fixture *f = *state;
    int half = 300, sizes[2] = { half, half }, bad[2] = { half, half - 1 };
    assert_true(f->nvalid >= 2 * half);
    double *gflops = malloc(2 * (size_t)half * sizeof *gflops);
    float *margin = malloc(2 * (size_t)half * sizeof *margin);
    double *pred = malloc((size_t)half * sizeof *pred);
    for (int i = 0; i < 2 * half; i++) {
        gflops[i] = f->truth[i] * (i < half ? 1.0 : 7.3);
        margin[i] = 0.25f;
    }
    dt_costmodel_params cfg;
    cfg = dt_costmodel_params_default();
    snprintf(cfg.objective, sizeof cfg.objective, "reg:squarederror");
    dt_costmodel *cm = NULL;
    dt_error err;
    assert_int_equal(dt_costmodel_new(&cfg, f->space.nfeatures, SEED, &cm, &err), 0);
    dt_costmodel_rows rows = { .features = f->features, .n = 2 * half, .group_sizes = sizes,
                               .ngroups = 2 };
    assert_int_equal(dt_costmodel_fit_rows(cm, &rows, gflops, &err), 0);
    assert_int_equal(dt_costmodel_predict(cm, f->features, half, pred, &err), 0);
    double top = 0;
    for (int i = 0; i < half; i++)
        top = fmax(top, pred[i]);
    assert_true(top > 0.7);
    rows.base_margin = margin;
    assert_int_equal(dt_costmodel_fit_rows(cm, &rows, gflops, &err), 0);
    assert_true(dt_costmodel_trained(cm));
    rows.group_sizes = bad;
    assert_int_equal(dt_costmodel_fit_rows(cm, &rows, gflops, &err), DT_EINVAL);
    assert_int_equal(dt_costmodel_nfeatures(cm), f->space.nfeatures);
    dt_costmodel_free(cm);
    free(gflops);
    free(margin);
    free(pred);
}

static void test_misuse_is_reported(void **state)
{
    fixture *f = *state;
    dt_costmodel_params cfg;
    cfg = dt_costmodel_params_default();
    dt_costmodel *cm = NULL;
    dt_error err;
    snprintf(cfg.objective, sizeof cfg.objective, "binary:logistic");
    assert_int_equal(dt_costmodel_new(&cfg, f->space.nfeatures, 1, &cm, &err), DT_EINVAL);
    assert_true(strstr(err.msg, "binary:logistic") != NULL);
    cfg = dt_costmodel_params_default();
    assert_int_equal(dt_costmodel_new(&cfg, f->space.nfeatures, 1, &cm, &err), 0);
    double score;
    assert_int_equal(dt_costmodel_predict(cm, f->features, 1, &score, &err), DT_EINVAL);
    /* Nothing valid measured yet: nothing to learn, still untrained. */
    double zeros[3] = {0, -1, NAN};
    assert_int_equal(dt_costmodel_fit(cm, f->features, zeros, 3, &err), 0);
    assert_false(dt_costmodel_trained(cm));
    assert_int_equal(dt_costmodel_fit(cm, f->features, zeros, 0, &err), DT_EINVAL);
    dt_costmodel_free(cm);
    dt_costmodel_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_objective_learns_order),
        cmocka_unit_test(test_regression_objective_learns_normalised_gflops),
        cmocka_unit_test(test_fit_is_repeatable),
        cmocka_unit_test(test_fit_stops_when_cancelled),
        cmocka_unit_test(test_groups_normalise_separately),
        cmocka_unit_test(test_misuse_is_reported),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
