/* test_transfer.c — transfer between the tasks of one kind.
 *
 * A planted family of similar surfaces: every conv2d task's GFLOPS falls
 * with the distance of each split's inner factor from one preferred log2
 * factor per knob and of each choice from one preferred option, the same
 * preferences for every shape (what transfer assumes of real kernels: a
 * register tile or vector width that is good for one shape of a kind is
 * good for its others). Three sibling shapes are sampled at random into a
 * store; a fourth shape is then tuned with and without transfer.
 *
 * Stated goals: over 3 seeds, chameleon's and autotvm's first round with
 * transfer reaches a best noise-free GFLOPS at least 1.3× that of the first
 * round without (the mean ratio; every seed no worse, and no worse after a
 * second round, where the prior model proposes); with tuner.transfer
 * off, or with only records of another kind (another machine's vector width,
 * another op kind) in the store, the tuner measures exactly the configs in
 * exactly the order it measures without a store; the seeds map a config of
 * a space into itself unchanged; the tuner's memo of scores gives, round
 * after round, exactly the scores of the own model and the prior asked
 * directly.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dtune/costmodel.h"
#include "dtune/transfer.h"
#include "dtune/tuner.h"
#include "dtune/target.h"
#include "tuner_impl.h"

#define SIBLING_RECORDS 300
#define FIRST_ROUND 8
#define SEEDS 3
#define TRACE_MAX 512

/* The family's preferred inner log2 factor per split knob and option per
 * choice knob (knob order). */
static const double preferred_log2[DT_MAX_KNOBS] = { 3.1, 1.2, 2.8, 2.3, 0, 0, 0, 0, 0, 0, 0 };

static double family_gflops(const dt_space *space, const dt_point *p)
{
    double energy = 0;
    for (int k = 0; k < space->nknobs; k++) {
        const dt_knob *kn = &space->knobs[k];
        if (kn->type == DT_KNOB_SPLIT) {
            double d = log2((double)dt_space_get(space, p, kn->name, kn->parts - 1, 1)) - preferred_log2[k];
            energy += 0.35 * d * d;
        } else {
            double d = (double)p->opt[k] - (kn->noptions - 1) * 0.5;
            energy += 0.4 * d * d;
        }
    }
    return 100.0 * exp(-energy);
}

typedef struct trace {
    int n;
    double best;
    uint64_t index[TRACE_MAX];
} trace;

static int family_measure(void *ctx, const dt_space *space, const dt_point *points, int n,
                          dt_measure_result *results, dt_error *err)
{
    (void)err;
    trace *tr = ctx;
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].result = DT_RESULT_OK;
        results[i].gflops = family_gflops(space, &points[i]);
        tr->best = fmax(tr->best, results[i].gflops);
        if (tr->n < TRACE_MAX)
            tr->index[tr->n++] = dt_space_index(space, &points[i]);
    }
    return n;
}

static void conv_space(dt_space *space, int c_in, int hw, int c_out, int max_vec)
{
    dt_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "conv_%d_%d_%d", c_in, hw, c_out);
    t.kind = DT_OP_CONV2D;
    t.count = 1;
    t.conv = (dt_conv_shape){ .n = 1, .c_in = c_in, .h = hw, .w = hw, .c_out = c_out, .kh = 3,
                              .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1 };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    dt_space_opts opts = { .cpu_max_vec = max_vec };
    assert_int_equal(dt_target_space_init_opts(space, &t, DT_TARGET_CPU, &opts, NULL), 0);
}

/* SIBLING_RECORDS random valid configs of space, measured on the family, into x. */
static void sample_into(dt_transfer *x, const dt_space *space, unsigned long seed)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    for (int i = 0; i < SIBLING_RECORDS; i++) {
        dt_point p;
        dt_space_random(space, rng, &p);
        dt_measure_result r = { .result = DT_RESULT_OK, .gflops = family_gflops(space, &p) };
        assert_int_equal(dt_transfer_add(x, space, &p, &r), 0);
    }
    gsl_rng_free(rng);
}

/* Three sibling shapes of the kind, native width (16). */
static dt_transfer *sibling_store(void)
{
    static const int shapes[3][3] = { { 64, 56, 64 }, { 128, 28, 128 }, { 256, 14, 256 } };
    dt_transfer *x = NULL;
    assert_int_equal(dt_transfer_new(&x, NULL), 0);
    for (int s = 0; s < 3; s++) {
        dt_space sib;
        conv_space(&sib, shapes[s][0], shapes[s][1], shapes[s][2], 16);
        sample_into(x, &sib, 100 + (unsigned long)s);
        dt_space_free(&sib);
    }
    return x;
}

static dt_tuner *new_tuner(const dt_space *space, const char *strategy, bool transfer, uint64_t seed)
{
    dt_tuner_params cfg;
    cfg = dt_tuner_params_default();
    snprintf(cfg.strategy, sizeof cfg.strategy, "%s", strategy);
    cfg.batch_size = 32;
    cfg.transfer = transfer;
    cfg.ppo.episodes = 16;
    cfg.ppo.max_steps = 64;
    cfg.sampling.k_min = FIRST_ROUND;   /* chameleon's first round without a prior */
    dt_tuner *t = NULL;
    dt_error err;
    int rc = dt_tuner_new(space, &cfg, seed, &t, &err);
    if (rc)
        print_error("dt_tuner_new: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return t;
}

/* Runs trials on the family; *tr gets the configs measured in order. */
static void run_trials(dt_tuner *t, int trials, trace *tr)
{
    dt_tuner_budget b = { .trials = trials };
    dt_error err;
    int rc = dt_tuner_run(t, &b, family_measure, tr, NULL, &err);
    if (rc)
        print_error("dt_tuner_run: %s\n", err.msg);
    assert_int_equal(rc, 0);
}

/* The best GFLOPS of the first round of the target task, with or without x;
 * *second the best after one more round of 32 (the prior's model at work). */
static double first_round_best(const dt_space *space, const char *strategy, dt_transfer *x,
                               uint64_t seed, double *second)
{
    dt_tuner *t = new_tuner(space, strategy, x != NULL, seed);
    int used = 0;
    dt_error err;
    assert_int_equal(dt_tuner_transfer(t, x, &used, &err), 0);
    if (x)
        assert_int_equal(used, 3 * SIBLING_RECORDS);
    trace tr = { 0 };
    run_trials(t, FIRST_ROUND, &tr);
    assert_int_equal(tr.n, FIRST_ROUND);
    double first = tr.best;
    run_trials(t, 32, &tr);
    *second = tr.best;
    dt_tuner_free(t);
    return first;
}

static void first_round_improves(const char *strategy)
{
    dt_transfer *x = sibling_store();
    dt_space target;
    conv_space(&target, 96, 42, 192, 16);
    double ratio_sum = 0;
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        double with2, without2;
        double with = first_round_best(&target, strategy, x, seed, &with2);
        double without = first_round_best(&target, strategy, NULL, seed, &without2);
        print_message("%s seed %d: best after round 1 %.2f with transfer, %.2f without; "
                      "after round 2 %.2f, %.2f\n", strategy, (int)seed, with, without, with2,
                      without2);
        assert_true(with >= without);
        assert_true(with2 >= without2);
        ratio_sum += with / without;
    }
    assert_true(ratio_sum / SEEDS >= 1.3);
    dt_space_free(&target);
    dt_transfer_free(x);
}

static void test_first_round_improves_chameleon(void **state)
{
    (void)state;
    first_round_improves("chameleon");
}

static void test_first_round_improves_autotvm(void **state)
{
    (void)state;
    first_round_improves("autotvm");
}

/* The configs a tuner measures in 3 rounds, after dt_tuner_transfer(x). */
static void measured_order(const dt_space *space, const char *strategy, bool transfer,
                           dt_transfer *x, trace *tr, int *used)
{
    dt_tuner *t = new_tuner(space, strategy, transfer, 7);
    dt_error err;
    assert_int_equal(dt_tuner_transfer(t, x, used, &err), 0);
    memset(tr, 0, sizeof *tr);
    run_trials(t, 3 * 32, tr);
    dt_tuner_free(t);
}

static void assert_same_order(const trace *a, const trace *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++)
        assert_true(a->index[i] == b->index[i]);
}

static void test_switch_off_is_exact(void **state)
{
    (void)state;
    dt_transfer *x = sibling_store();
    dt_space target;
    conv_space(&target, 96, 42, 192, 16);
    const char *strategies[] = { "chameleon", "autotvm" };
    for (int s = 0; s < 2; s++) {
        trace plain, off, on;
        int used = -1;
        measured_order(&target, strategies[s], false, NULL, &plain, &used);
        assert_int_equal(used, 0);
        measured_order(&target, strategies[s], false, x, &off, &used);
        assert_int_equal(used, 0);
        assert_same_order(&plain, &off);
        /* and the switch matters: on, the same seed measures other configs */
        measured_order(&target, strategies[s], true, x, &on, &used);
        assert_int_equal(used, 3 * SIBLING_RECORDS);
        bool differs = false;
        for (int i = 0; i < on.n; i++)
            differs |= on.index[i] != plain.index[i];
        assert_true(differs);
    }
    dt_space_free(&target);
    dt_transfer_free(x);
}

static void test_foreign_space_never_used(void **state)
{
    (void)state;
    dt_transfer *x = NULL;
    assert_int_equal(dt_transfer_new(&x, NULL), 0);
    /* another machine's width: the same shapes with vec up to 8 */
    dt_space narrow, depthwise;
    conv_space(&narrow, 64, 56, 64, 8);
    sample_into(x, &narrow, 5);
    dt_task dw = narrow.task;
    dw.kind = DT_OP_DEPTHWISE_CONV2D;
    dw.conv.c_out = dw.conv.c_in;
    assert_int_equal(dt_task_finish(&dw, NULL), 0);
    dt_space_opts opts = { .cpu_max_vec = 16 };
    assert_int_equal(dt_target_space_init_opts(&depthwise, &dw, DT_TARGET_CPU, &opts, NULL), 0);
    sample_into(x, &depthwise, 6);
    assert_int_equal(dt_transfer_records(x), 2 * SIBLING_RECORDS);

    dt_space target;
    conv_space(&target, 96, 42, 192, 16);
    assert_false(dt_transfer_same_kind(&narrow, &target));
    assert_false(dt_transfer_same_kind(&depthwise, &target));
    dt_point seeds[DT_TRANSFER_SEEDS];
    assert_int_equal(dt_transfer_seeds(x, &target, DT_TRANSFER_SEEDS, seeds), 0);
    trace plain, foreign;
    int used = -1;
    measured_order(&target, "chameleon", true, NULL, &plain, &used);
    measured_order(&target, "chameleon", true, x, &foreign, &used);
    assert_int_equal(used, 0);
    assert_same_order(&plain, &foreign);

    /* a native sibling added: only its records are used */
    dt_space sib;
    conv_space(&sib, 64, 56, 64, 16);
    sample_into(x, &sib, 7);
    measured_order(&target, "chameleon", true, x, &foreign, &used);
    assert_int_equal(used, SIBLING_RECORDS);
    dt_space_free(&sib);
    dt_space_free(&target);
    dt_space_free(&narrow);
    dt_space_free(&depthwise);
    dt_transfer_free(x);
}

static void test_map_and_own_records(void **state)
{
    (void)state;
    dt_space a, b;
    conv_space(&a, 96, 42, 192, 16);
    conv_space(&b, 96, 42, 192, 16);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (int i = 0; i < 200; i++) {
        dt_point p, q;
        dt_space_random(&a, rng, &p);
        dt_transfer_map(&a, &p, &b, &q);
        assert_true(dt_space_index(&a, &p) == dt_space_index(&b, &q));
    }
    gsl_rng_free(rng);
    /* the task's own records (same shape) are not its prior */
    dt_transfer *x = NULL;
    assert_int_equal(dt_transfer_new(&x, NULL), 0);
    sample_into(x, &a, 9);
    const float *rows;
    const double *gflops;
    const int *groups;
    int ngroups;
    assert_int_equal(dt_transfer_rows(x, &b, &rows, &gflops, &groups, &ngroups), 0);
    assert_int_equal(ngroups, 0);
    assert_true(dt_transfer_nfeatures(&b) <= DT_TRANSFER_MAX_FEATURES);
    dt_transfer_free(x);
    dt_space_free(&a);
    dt_space_free(&b);
}

/* The score a tuner gives p, asked of its models without the memo. */
static double direct_score(dt_tuner *t, const dt_point *p)
{
    dt_error err;
    double own = 0, prior = 0;
    if (dt_costmodel_trained(t->model))
        assert_int_equal(dt_costmodel_predict_points(t->model, t->space, p, 1, &own, &err), 0);
    float rows[DT_TRANSFER_MAX_FEATURES];
    dt_transfer_features(t->space, p, rows);
    assert_int_equal(dt_costmodel_predict(t->prior, rows, 1, &prior, &err), 0);
    return dt_costmodel_trained(t->model) ? own + t->prior_weight * prior : prior;
}

/* Scores through the memo (each point asked twice in one call, and again in
 * a second call) equal the models' own after every round: a memo that
 * outlived a fit of the own model or of the prior would differ. */
static void test_score_memo_is_exact(void **state)
{
    (void)state;
    enum { POINTS = 24 };
    dt_transfer *x = sibling_store();
    dt_space target;
    conv_space(&target, 96, 42, 192, 16);
    dt_tuner *t = new_tuner(&target, "chameleon", true, 5);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 21);
    dt_point pts[2 * POINTS];
    for (int i = 0; i < POINTS; i++) {
        dt_space_random(&target, rng, &pts[i]);
        pts[POINTS + i] = pts[i];
    }
    gsl_rng_free(rng);
    dt_error err;
    int used = 0;
    trace tr = { 0 };
    for (int round = 0; round < 4; round++) {
        if (round == 2) {   /* a new prior over a fourth sibling's records too */
            dt_space sib;
            conv_space(&sib, 32, 112, 64, 16);
            sample_into(x, &sib, 77);
            dt_space_free(&sib);
            assert_int_equal(dt_tuner_transfer(t, x, &used, &err), 0);
            assert_int_equal(used, 4 * SIBLING_RECORDS);
        } else if (round == 0) {
            assert_int_equal(dt_tuner_transfer(t, x, &used, &err), 0);
        }
        double scores[2 * POINTS], again[2 * POINTS];
        assert_int_equal(dt_tuner_score(t, pts, 2 * POINTS, scores, &err), 0);
        assert_int_equal(dt_tuner_score(t, pts, POINTS, again, &err), 0);
        for (int i = 0; i < POINTS; i++) {
            double want = direct_score(t, &pts[i]);
            assert_true(scores[i] == want && scores[POINTS + i] == want && again[i] == want);
        }
        run_trials(t, 32, &tr);
    }
    assert_true(dt_costmodel_trained(t->model));
    dt_tuner_free(t);
    dt_space_free(&target);
    dt_transfer_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_round_improves_chameleon),
        cmocka_unit_test(test_first_round_improves_autotvm),
        cmocka_unit_test(test_switch_off_is_exact),
        cmocka_unit_test(test_foreign_space_never_used),
        cmocka_unit_test(test_map_and_own_records),
        cmocka_unit_test(test_score_memo_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
