/* test_tuner.c — the per-task tuner on the replay backend.
 *
 * Stated goal: on small spaces that are enumerated to find the optimum,
 * chameleon and autotvm reach 90 % of the optimum's noise-free GFLOPS within
 * REACH_TRIALS = 256 measured trials (autotvm's first 64 are random;
 * chameleon's first round measures the k_min cluster representatives of 64
 * random configs), for 3 seeds on two spaces, tuning in slots of 16 trials so that
 * state is carried between calls; over the three seeds each needs fewer
 * trials in total than random search.
 * Also: chameleon's first round is k_min configs, autotvm's a full batch;
 * batches never exceed the remaining budget and never repeat, invalid
 * or measured configs; every strategy measures a tiny space to exhaustion
 * without a duplicate; resume by add_record; stop flag; error propagation. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dtune/backend.h"
#include "dtune/sampling.h"
#include "tuner_internal.h"
#include "dtune/target.h"
#include "replay_backend.h"

/* Every vector width, so the spaces do not depend on the machine. */
static const dt_space_opts every_width = { .cpu_max_vec = 16 };

#define REPLAY_SEED 11
#define REACH_TRIALS 256
#define SLOT_TRIALS 16
#define LAST_MAX 64
#define ORDER_MAX 512

/* The measure callback's context: replay plus checks on every batch. */
typedef struct bench {
    const dt_space *space;
    uint64_t nonce;
    dt_sampling_set seen;
    int max_batch;          /* largest batch allowed (budget check) */
    int batches, trials;
    int first_batch;        /* size of the first batch measured */
    int fail_with;          /* non-zero: return this error */
    dt_point last[LAST_MAX];  /* the last batch measured (its first LAST_MAX) */
    uint64_t order[ORDER_MAX];  /* config indices in measurement order (the first ORDER_MAX) */
    int last_n;
    atomic_int *stop;       /* non-NULL: set after each batch */
} bench;

static int replay_measure(void *ctx, const dt_space *space, const dt_point *points, int n,
                          dt_measure_result *results, dt_error *err)
{
    bench *b = ctx;
    if (b->fail_with)
        return dt_error_set(err, b->fail_with, "planted measurement failure");
    assert_true(n >= 1 && n <= b->max_batch);
    for (int i = 0; i < n; i++) {
        assert_true(dt_space_valid(space, &points[i]));
        uint64_t idx = dt_space_index(space, &points[i]);
        assert_int_equal(dt_sampling_set_add(&b->seen, idx), 1);
        if (b->trials + i < ORDER_MAX)
            b->order[b->trials + i] = idx;
        dt_replay_backend_measure(space, &points[i], REPLAY_SEED, b->nonce++, &results[i]);
    }
    if (b->batches++ == 0)
        b->first_batch = n;
    b->last_n = n < LAST_MAX ? n : LAST_MAX;
    memcpy(b->last, points, (size_t)b->last_n * sizeof *points);
    if (b->stop)
        *b->stop = 1;
    b->trials += n;
    return n;
}

static void bench_init(bench *b, const dt_space *space, int max_batch)
{
    memset(b, 0, sizeof *b);
    b->space = space;
    b->max_batch = max_batch;
    assert_int_equal(dt_sampling_set_init(&b->seen), 0);
}

static void make_space(dt_space *space, dt_op_kind kind, const int *dims)
{
    dt_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "small");
    t.kind = kind;
    t.count = 1;
    if (kind == DT_OP_DENSE)
        t.mm = (dt_mm_shape){.b = 1, .m = dims[0], .n = dims[1], .k = dims[2]};
    else
        t.conv = (dt_conv_shape){.n = 1, .c_in = dims[0], .h = dims[1], .w = dims[1],
                                 .c_out = dims[2], .kh = 3, .kw = 3, .sh = 1, .sw = 1,
                                 .ph = 1, .pw = 1, .dh = 1, .dw = 1};
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    assert_int_equal(dt_target_space_init_opts(space, &t, DT_TARGET_CPU, &every_width, NULL), 0);
}

static double optimum(const dt_space *space)
{
    double best = 0;
    for (uint64_t i = 0; i < space->size; i++) {
        dt_point p;
        dt_space_point(space, i, &p);
        best = fmax(best, dt_replay_backend_true_gflops(space, &p, REPLAY_SEED));
    }
    return best;
}

static dt_tuner *make_tuner(const dt_space *space, const char *strategy, int batch, uint64_t seed)
{
    dt_tuner_params cfg;
    cfg = dt_tuner_params_default();
    snprintf(cfg.strategy, sizeof cfg.strategy, "%s", strategy);
    cfg.batch_size = batch;
    if (cfg.sampling.k_min > batch)
        cfg.sampling.k_min = batch;
    dt_tuner *t = NULL;
    dt_error err;
    int rc = dt_tuner_new(space, &cfg, seed, &t, &err);
    if (rc)
        print_error("dt_tuner_new: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return t;
}

/* Trials until the best config's noise-free GFLOPS is >= 90 % of the optimum
 * (REACH_TRIALS + 1 if never), tuning in slots of SLOT_TRIALS. */
static int trials_to_90(const dt_space *space, const char *strategy, uint64_t seed, double opt)
{
    dt_tuner *t = make_tuner(space, strategy, 64, seed);
    bench b;
    bench_init(&b, space, SLOT_TRIALS);
    int reached = REACH_TRIALS + 1;
    while (dt_tuner_trials(t) < REACH_TRIALS) {
        dt_tuner_budget budget = {.trials = SLOT_TRIALS};
        dt_tuner_stats st;
        dt_error err;
        assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, &st, &err), 0);
        assert_int_equal(st.trials, SLOT_TRIALS);
        dt_point best;
        double gflops;
        assert_int_equal(dt_tuner_best(t, &best, &gflops), 0);
        if (dt_replay_backend_true_gflops(space, &best, REPLAY_SEED) >= 0.9 * opt) {
            reached = dt_tuner_trials(t);
            break;
        }
    }
    print_message("%-9s seed %llu: 90%% of the optimum after %d trials\n", strategy,
                  (unsigned long long)seed, reached);
    dt_sampling_set_free(&b.seen);
    dt_tuner_free(t);
    return reached;
}

static void check_reach(dt_op_kind kind, const int *dims)
{
    dt_space space;
    make_space(&space, kind, dims);
    double opt = optimum(&space);
    assert_true(opt > 0);
    int sum[3] = {0, 0, 0};
    for (uint64_t seed = 1; seed <= 3; seed++) {
        int chameleon = trials_to_90(&space, "chameleon", seed, opt);
        int autotvm = trials_to_90(&space, "autotvm", seed, opt);
        assert_true(chameleon <= REACH_TRIALS);
        assert_true(autotvm <= REACH_TRIALS);
        sum[0] += chameleon;
        sum[1] += autotvm;
        sum[2] += trials_to_90(&space, "random", seed, opt);
    }
    /* Over the three seeds both model-based strategies beat blind sampling. */
    assert_true(sum[0] < sum[2] && sum[1] < sum[2]);
    dt_space_free(&space);
}

static void test_reach_90_percent_dense(void **state)
{
    (void)state;
    const int dims[3] = {1, 32, 48};   /* 2,880 points */
    check_reach(DT_OP_DENSE, dims);
}

static void test_reach_90_percent_conv(void **state)
{
    (void)state;
    const int dims[3] = {16, 14, 24};  /* 30,720 points */
    check_reach(DT_OP_CONV2D, dims);
}

static void test_batches_respect_budget(void **state)
{
    (void)state;
    const int dims[3] = {1, 32, 48};
    dt_space space;
    make_space(&space, DT_OP_DENSE, dims);
    const char *names[3] = {"chameleon", "autotvm", "random"};
    for (int s = 0; s < 3; s++) {
        dt_tuner *t = make_tuner(&space, names[s], 8, 5);
        bench b;
        bench_init(&b, &space, 8);
        dt_tuner_budget budget = {.trials = 13};
        dt_tuner_stats st;
        assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, &st, NULL), 0);
        assert_int_equal(st.trials, 13);
        assert_int_equal(b.batches, 2);           /* 8 + 5 */
        b.max_batch = 3;
        budget.trials = 3;                          /* a later slot of 3: one batch of 3 */
        assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, &st, NULL), 0);
        assert_int_equal(dt_tuner_trials(t), 16);
        b.max_batch = 8;
        budget.trials = 40;                         /* past the first batch: model-based */
        assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, &st, NULL), 0);
        assert_int_equal(dt_tuner_trials(t), 56);
        assert_true(st.wall_seconds >= st.overhead_seconds + st.measure_seconds - 1e-6);
        assert_true(st.overhead_seconds > 0);
        assert_string_equal(dt_tuner_strategy(t), names[s]);
        dt_sampling_set_free(&b.seen);
        dt_tuner_free(t);
    }
    dt_space_free(&space);
}

/* Chameleon samples its first, model-free round adaptively: for uniformly
 * random candidates the knee is at k_min, so it measures k_min configs and
 * fits the model after them; autotvm measures a full random batch first. */
static void test_first_round_sizes(void **state)
{
    (void)state;
    const int dims[3] = {16, 14, 24};
    dt_space space;
    make_space(&space, DT_OP_CONV2D, dims);
    const char *names[2] = {"chameleon", "autotvm"};
    dt_tuner_params defaults;
    defaults = dt_tuner_params_default();
    const int expected[2] = {defaults.sampling.k_min, 64};
    for (int s = 0; s < 2; s++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            dt_tuner *t = make_tuner(&space, names[s], 64, seed);
            bench b;
            bench_init(&b, &space, 64);
            dt_tuner_budget budget = {.trials = 96};
            assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, NULL, NULL), 0);
            assert_int_equal(b.first_batch, expected[s]);
            assert_int_equal(b.trials, 96);
            dt_sampling_set_free(&b.seen);
            dt_tuner_free(t);
        }
    }
    dt_space_free(&space);
}

/* The cost model's estimate of the best reachable: none while the first
 * batch is proposed (no model yet) and for random search; from the second
 * batch on, at least the incumbent's GFLOPS for the model-based strategies. */
static void test_cost_model_estimate(void **state)
{
    (void)state;
    const int dims[3] = {16, 14, 24};
    dt_space space;
    make_space(&space, DT_OP_CONV2D, dims);
    double opt = optimum(&space);
    const char *names[3] = {"chameleon", "autotvm", "random"};
    dt_tuner_params defaults = dt_tuner_params_default();
    const int first[3] = {defaults.sampling.k_min, 64, 64};
    for (int s = 0; s < 3; s++) {
        dt_tuner *t = make_tuner(&space, names[s], 64, 5);
        bench b;
        bench_init(&b, &space, 64);
        dt_tuner_budget budget = {.trials = first[s]};
        assert_true(dt_tuner_cost_model_gflops(t) == 0);
        assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, NULL, NULL), 0);
        assert_int_equal(b.batches, 1);
        assert_true(dt_tuner_cost_model_gflops(t) == 0);
        budget.trials = 48;
        assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, NULL, NULL), 0);
        double best, estimate = dt_tuner_cost_model_gflops(t);
        assert_int_equal(dt_tuner_best(t, NULL, &best), 0);
        print_message("%-9s best %.2f GFLOPS, estimate %.2f, optimum %.2f\n", names[s], best,
                      estimate, opt);
        if (s == 2)
            assert_true(estimate == 0);
        else
            assert_true(isfinite(estimate) && estimate >= best && best > 0 && estimate < 2 * opt);
        dt_sampling_set_free(&b.seen);
        dt_tuner_free(t);
    }
    dt_space_free(&space);
}

static void test_every_strategy_exhausts_tiny_space(void **state)
{
    (void)state;
    const int dims[3] = {1, 4, 4};
    dt_space space;
    make_space(&space, DT_OP_DENSE, dims);
    int64_t valid = dt_space_count_valid(&space, space.size);
    assert_true(valid > 20 && valid < 500);
    const char *names[3] = {"chameleon", "autotvm", "random"};
    for (int s = 0; s < 3; s++) {
        dt_tuner *t = make_tuner(&space, names[s], 16, 3);
        bench b;
        bench_init(&b, &space, 16);
        dt_tuner_budget unlimited = {0};
        assert_int_equal(dt_tuner_run(t, &unlimited, replay_measure, &b, NULL, NULL), 0);
        assert_true(dt_tuner_exhausted(t));
        assert_int_equal(dt_tuner_trials(t), valid);   /* each valid point exactly once */
        assert_int_equal(b.trials, valid);
        dt_sampling_set_free(&b.seen);
        dt_tuner_free(t);
    }
    dt_space_free(&space);
}

static void test_resume_stop_and_errors(void **state)
{
    (void)state;
    const int dims[3] = {1, 32, 48};
    dt_space space;
    make_space(&space, DT_OP_DENSE, dims);
    dt_tuner *t = make_tuner(&space, "chameleon", 8, 9);
    dt_point p;
    double g;
    assert_int_equal(dt_tuner_best(t, &p, &g), -1);
    /* Resume: ten logged records, two of them failures. */
    dt_sampling_set logged;
    assert_int_equal(dt_sampling_set_init(&logged), 0);
    double best = 0;
    size_t empty = dt_tuner_history_bytes(t);
    for (int i = 0; i < 10; i++) {
        dt_point q;
        dt_space_point(&space, (uint64_t)(i * 97 + 5), &q);
        dt_measure_result r;
        memset(&r, 0, sizeof r);
        r.result = i % 5 == 4 ? DT_RESULT_CRASH : DT_RESULT_OK;
        r.gflops = r.result == DT_RESULT_OK ? 3.5 + i : 0;
        assert_int_equal(dt_tuner_add_record(t, &q, &r), 0);
        assert_int_equal(dt_tuner_add_record(t, &q, &r), 0);   /* duplicates ignored */
        dt_sampling_set_add(&logged, dt_space_index(&space, &q));
        best = r.result == DT_RESULT_OK ? fmax(best, r.gflops) : best;
    }
    assert_int_equal(dt_tuner_trials(t), 10);
    /* the history's bytes grow with its records: a point, a feature row and
     * a GFLOPS figure each at least */
    size_t row = sizeof(dt_point) + (size_t)space.nfeatures * sizeof(float) + sizeof(double);
    assert_true(dt_tuner_history_bytes(t) >= empty + 10 * row);
    assert_int_equal(dt_tuner_best(t, &p, &g), 0);
    assert_float_equal(g, best, 1e-12);
    dt_point outside;
    memset(&outside, 0, sizeof outside);
    outside.opt[0] = 999;
    dt_measure_result ok = {.result = DT_RESULT_OK, .gflops = 1};
    assert_int_equal(dt_tuner_add_record(t, &outside, &ok), DT_EINVAL);
    /* A set stop flag ends the call before any batch. */
    bench b;
    bench_init(&b, &space, 8);
    dt_sampling_set_free(&b.seen);
    b.seen = logged;   /* logged configs count as already measured */
    atomic_int stop = 1;
    dt_tuner_budget budget = {.trials = 8, .stop = &stop};
    dt_tuner_stats st;
    assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, &st, NULL), 0);
    assert_int_equal(st.trials, 0);
    /* A failing measurement is returned and its batch is not recorded. */
    stop = 0;
    b.fail_with = DT_EIO;
    dt_error err;
    assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, &st, &err), DT_EIO);
    assert_true(strstr(err.msg, "planted") != NULL);
    assert_int_equal(dt_tuner_trials(t), 10);
    b.fail_with = 0;
    assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, &st, NULL), 0);
    assert_int_equal(dt_tuner_trials(t), 18);
    dt_sampling_set_free(&b.seen);
    dt_tuner_free(t);
    dt_space_free(&space);
}

/* Whether two points differ by one option of exactly one knob. */
static bool one_step(const dt_space *space, const dt_point *a, const dt_point *b)
{
    int moved = 0;
    for (int k = 0; k < space->nknobs; k++) {
        int d = abs(a->opt[k] - b->opt[k]);
        if (d > 1)
            return false;
        moved += d;
    }
    return moved == 1;
}

/* Whether n is k_min times a power of two, at most batch. */
static bool is_k_min_doubled(int n, int k_min, int batch)
{
    for (int k = k_min; k <= batch; k *= 2)
        if (n == k)
            return true;
    return false;
}

/* After each model-based round's clusters, chameleon measures up to
 * tuner.neighbours unmeasured one-step neighbours of the best config so far;
 * with 0 it measures the clusters' representatives only. */
static void test_chameleon_measures_incumbent_neighbours(void **state)
{
    (void)state;
    const int dims[3] = {16, 14, 24};
    dt_space space;
    make_space(&space, DT_OP_CONV2D, dims);
    const int wanted[2] = {4, 0};
    for (int w = 0; w < 2; w++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            dt_tuner_params cfg;
            cfg = dt_tuner_params_default();
            cfg.batch_size = 32;
            cfg.neighbours = wanted[w];
            dt_tuner *t = NULL;
            assert_int_equal(dt_tuner_new(&space, &cfg, seed, &t, NULL), 0);
            bench b;
            bench_init(&b, &space, 32);
            atomic_int stop = 0;
            b.stop = &stop;
            for (int round = 0; round < 4; round++) {
                dt_point best;
                bool have = dt_tuner_best(t, &best, NULL) == 0;
                stop = 0;
                dt_tuner_budget one = {.trials = 64, .stop = &stop};   /* one batch */
                assert_int_equal(dt_tuner_run(t, &one, replay_measure, &b, NULL, NULL), 0);
                assert_int_equal(b.batches, round + 1);
                if (!have)
                    continue;
                int near = 0;
                for (int i = 0; i < b.last_n; i++)
                    near += one_step(&space, &best, &b.last[i]);
                if (wanted[w] > 0)
                    assert_true(near >= wanted[w]);
                else    /* the clusters only: k is k_min doubled, at most to the batch */
                    assert_true(is_k_min_doubled(b.last_n, cfg.sampling.k_min, cfg.batch_size));
                print_message("neighbours %d seed %llu round %d: %d of %d one step from the best\n",
                              wanted[w], (unsigned long long)seed, round, near, b.last_n);
            }
            dt_sampling_set_free(&b.seen);
            dt_tuner_free(t);
        }
    }
    dt_space_free(&space);
}

/* Chameleon with tuner.ppo.episodes_per_config: a round runs that many
 * episodes per config the previous round measured when that is fewer than
 * tuner.ppo.episodes. Set so high that it never is, the run is the one with
 * it off (the same configs in the same order, the same walk steps scored);
 * at 2 a round after one of 4–8 configs runs 8–16 episodes, not 128, and
 * the search asks the cost model for far fewer configs. */
static void test_chameleon_episodes_follow_the_round(void **state)
{
    (void)state;
    const int dims[3] = {16, 14, 24};
    dt_space space;
    make_space(&space, DT_OP_CONV2D, dims);
    const int per_config[3] = {0, 1000, 2};
    enum { TRIALS = 40 };
    for (uint64_t seed = 1; seed <= 2; seed++) {
        uint64_t order[3][TRIALS];
        long long scored[3];
        for (int v = 0; v < 3; v++) {
            dt_tuner_params cfg;
            cfg = dt_tuner_params_default();
            cfg.ppo.episodes_per_config = per_config[v];
            dt_tuner *t = NULL;
            assert_int_equal(dt_tuner_new(&space, &cfg, seed, &t, NULL), 0);
            bench b;
            bench_init(&b, &space, cfg.batch_size);
            dt_tuner_budget budget = {.trials = TRIALS};
            dt_tuner_stats st;
            assert_int_equal(dt_tuner_run(t, &budget, replay_measure, &b, &st, NULL), 0);
            assert_int_equal(b.trials, TRIALS);
            memcpy(order[v], b.order, sizeof order[v]);
            scored[v] = st.scored;
            print_message("seed %llu episodes_per_config %d: %lld configs scored\n",
                          (unsigned long long)seed, per_config[v], st.scored);
            dt_sampling_set_free(&b.seen);
            dt_tuner_free(t);
        }
        assert_true(scored[0] > 0);
        assert_memory_equal(order[0], order[1], sizeof order[0]);
        assert_true(scored[1] == scored[0]);
        assert_true(4 * scored[2] < scored[0]);
    }
    dt_space_free(&space);
}

static void test_unknown_strategy(void **state)
{
    (void)state;
    const int dims[3] = {1, 4, 4};
    dt_space space;
    make_space(&space, DT_OP_DENSE, dims);
    dt_tuner_params cfg;
    cfg = dt_tuner_params_default();
    snprintf(cfg.strategy, sizeof cfg.strategy, "annealing");
    dt_tuner *t = NULL;
    dt_error err;
    assert_int_equal(dt_tuner_new(&space, &cfg, 1, &t, &err), DT_ENOTFOUND);
    assert_null(t);
    assert_true(strstr(err.msg, "chameleon, autotvm, random") != NULL);
    dt_tuner_free(NULL);
    dt_space_free(&space);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reach_90_percent_dense),
        cmocka_unit_test(test_reach_90_percent_conv),
        cmocka_unit_test(test_batches_respect_budget),
        cmocka_unit_test(test_first_round_sizes),
        cmocka_unit_test(test_cost_model_estimate),
        cmocka_unit_test(test_every_strategy_exhausts_tiny_space),
        cmocka_unit_test(test_resume_stop_and_errors),
        cmocka_unit_test(test_chameleon_measures_incumbent_neighbours),
        cmocka_unit_test(test_chameleon_episodes_follow_the_round),
        cmocka_unit_test(test_unknown_strategy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
