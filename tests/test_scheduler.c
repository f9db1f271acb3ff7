/* test_scheduler.c — slot policies on hand-made task states, and the rows
 * of the replay traces sched_bench reads (bench/trace_format.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/scheduler.h"
#include "../bench/trace_format.h"

static dt_scheduler_params sched_cfg(void)
{
    dt_scheduler_params c;
    memset(&c, 0, sizeof c);
    c.ucb_c = 2.0;
    c.gamma = 1e9;
    c.epsilon = 0.05;
    c.softmax_temperature = 1.0;
    c.finish_after = 200;
    snprintf(c.hazard, sizeof c.hazard, "0.47, 0.21 0.04");
    snprintf(c.prior_hazard, sizeof c.prior_hazard, "%s", c.hazard);
    return c;
}

static dt_scheduler *make(const char *name)
{
    dt_scheduler_params c = sched_cfg();
    dt_scheduler *s = NULL;
    dt_error err;
    if (dt_scheduler_new(name, &c, 42, &s, &err) != 0)
        fail_msg("%s", err.msg);
    return s;
}

static dt_sched_task task(double weight, double gflop, double best, double pred, int slots)
{
    dt_sched_task t;
    memset(&t, 0, sizeof t);
    t.weight = weight;
    t.flops = gflop * 1e9;
    t.best_gflops = best;
    t.pred_gflops = pred;
    t.pred_ok = pred > 0;
    t.slots = slots;
    return t;
}

static void test_expected_reduction(void **state)
{
    (void)state;
    /* 0.2 GFLOP at 20 -> 25 GFLOPS: 10 ms -> 8 ms, times weight 3 = 6 ms */
    dt_sched_task t = task(3, 0.2, 20, 25, 1);
    assert_true(fabs(dt_sched_expected_reduction(&t) - 6.0) < 1e-9);
    t.pred_gflops = 19;  /* a prediction below the best is no reduction */
    assert_true(dt_sched_expected_reduction(&t) == 0.0);
}

static void test_dynatune_ucb(void **state)
{
    (void)state;
    dt_scheduler *s = make("dynatune");
    assert_true(dt_scheduler_needs_belief(s));
    /* latencies 10, 10, 10 ms; r_k 2, 0.476, 0.476 ms once played */
    dt_sched_task tasks[3] = { task(1, 0.2, 20, 25, 4), task(1, 0.2, 20, 21, 4),
                               task(1, 0.1, 10, 30, 0) };
    double scores[3];
    /* an unplayed task scores gamma (+ its latency share 1/3) and goes first */
    assert_int_equal(dt_scheduler_pick(s, 9, tasks, 3, scores), 2);
    assert_true(fabs(scores[2] - (1e9 + 1.0 / 3)) < 1e-6);
    tasks[2].slots = 4;
    tasks[2].pred_gflops = 10.5;
    /* equal play counts: the larger expected reduction (task 0: 2 ms) wins;
     * rewards are divided by the largest (2 ms), so task 0's is 1 */
    assert_int_equal(dt_scheduler_pick(s, 13, tasks, 3, scores), 0);
    double bonus = sqrt(2.0 * log(13.0) / 4);
    assert_true(fabs(scores[0] - (1.0 + bonus)) < 1e-9);
    assert_true(fabs(scores[1] - (0.476190476 / 2 + bonus)) < 1e-6);
    /* a task played once gets a bonus big enough to be explored over one
     * played 40 times: 0.24 + sqrt(2 ln 13) = 2.50 > 1 + sqrt(2 ln 13 / 40) = 1.36 */
    tasks[0].slots = 40;
    tasks[1].slots = 1;
    assert_int_equal(dt_scheduler_pick(s, 13, tasks, 3, scores), 1);
    /* finished tasks are skipped */
    tasks[1].finished = true;
    tasks[2].slots = 40;
    assert_int_equal(dt_scheduler_pick(s, 13, tasks, 3, scores), 0);
    assert_true(isinf(scores[1]) && scores[1] < 0);
    dt_scheduler_free(s);
}

/* The rewards' scale does not matter: the same model a thousand times
 * faster (every r_k / 1000) gets the same picks, where an unscaled UCB would
 * hand every slot to the least played task. */
static void test_dynatune_scale_free(void **state)
{
    (void)state;
    dt_scheduler *s = make("dynatune");
    for (int scale = 0; scale < 2; scale++) {
        double f = scale ? 1e-3 : 1.0;
        /* task 0: 8 ms -> 4 ms predicted (r 4); task 1: 8 -> 7.9 (r 0.1) */
        dt_sched_task tasks[2] = { task(1, 0.2 * f, 25, 50, 6), task(1, 0.2 * f, 25, 25.3165, 3) };
        double scores[2];
        assert_int_equal(dt_scheduler_pick(s, 10, tasks, 2, scores), 0);
        assert_true(fabs(scores[0] - (1.0 + sqrt(2.0 * log(10.0) / 6))) < 1e-9);
    }
    /* unplayed tasks: the larger share of the latency first */
    dt_sched_task fresh[3] = { task(1, 0.1, 20, 0, 0), task(2, 0.1, 20, 0, 0), task(1, 0.3, 20, 0, 0) };
    assert_int_equal(dt_scheduler_pick(s, 1, fresh, 3, NULL), 2);
    fresh[2].slots = 1;
    assert_int_equal(dt_scheduler_pick(s, 2, fresh, 3, NULL), 1);
    dt_scheduler_free(s);
}

static void test_sequential_until_finished(void **state)
{
    (void)state;
    dt_scheduler *s = make("sequential");
    dt_sched_task tasks[3] = { task(1, 1, 1, 0, 0), task(1, 1, 1, 0, 0), task(1, 1, 1, 0, 0) };
    for (int t = 1; t <= 5; t++)
        assert_int_equal(dt_scheduler_pick(s, t, tasks, 3, NULL), 0);
    tasks[0].finished = true;
    assert_int_equal(dt_scheduler_pick(s, 6, tasks, 3, NULL), 1);
    tasks[1].exhausted = true;
    assert_int_equal(dt_scheduler_pick(s, 7, tasks, 3, NULL), 2);
    tasks[2].finished = true;
    assert_int_equal(dt_scheduler_pick(s, 8, tasks, 3, NULL), -1);
    dt_scheduler_free(s);
}

static void test_round_robin_static_and_dynamic(void **state)
{
    (void)state;
    dt_sched_task tasks[3] = { task(1, 1, 1, 0, 0), task(1, 1, 1, 0, 0), task(1, 1, 1, 0, 0) };
    tasks[1].finished = true;
    dt_scheduler *rr = make("round_robin"), *da = make("da_round_robin");
    int seq_rr[6], seq_da[6];
    for (int t = 0; t < 6; t++) {
        seq_rr[t] = dt_scheduler_pick(rr, t + 1, tasks, 3, NULL);
        seq_da[t] = dt_scheduler_pick(da, t + 1, tasks, 3, NULL);
    }
    const int want_rr[6] = { 0, 1, 2, 0, 1, 2 }, want_da[6] = { 0, 2, 0, 2, 0, 2 };
    assert_memory_equal(seq_rr, want_rr, sizeof want_rr);
    assert_memory_equal(seq_da, want_da, sizeof want_da);
    tasks[2].exhausted = true;
    assert_int_equal(dt_scheduler_pick(rr, 7, tasks, 3, NULL), 0);
    assert_int_equal(dt_scheduler_pick(rr, 8, tasks, 3, NULL), 1);
    dt_scheduler_free(rr);
    dt_scheduler_free(da);
}

static void test_replay_restores_position(void **state)
{
    (void)state;
    dt_sched_task tasks[3] = { task(1, 1, 1, 0, 0), task(1, 1, 1, 0, 0), task(1, 1, 1, 0, 0) };
    dt_scheduler *rr = make("round_robin"), *seq = make("sequential");
    dt_scheduler_replay(rr, 1);
    dt_scheduler_replay(seq, 2);
    assert_int_equal(dt_scheduler_pick(rr, 5, tasks, 3, NULL), 2);
    assert_int_equal(dt_scheduler_pick(rr, 6, tasks, 3, NULL), 0);
    assert_int_equal(dt_scheduler_pick(seq, 5, tasks, 3, NULL), 2);
    dt_scheduler_free(rr);
    dt_scheduler_free(seq);
}

static void test_linear_follows_flops(void **state)
{
    (void)state;
    dt_scheduler *s = make("linear");
    dt_sched_task tasks[3] = { task(1, 0.6, 1, 0, 0), task(2, 0.1, 1, 0, 0), task(1, 0.2, 1, 0, 0) };
    int counts[3] = { 0 };
    for (int t = 1; t <= 100; t++) {
        int k = dt_scheduler_pick(s, t, tasks, 3, NULL);
        assert_true(k >= 0);
        tasks[k].slots++;
        counts[k]++;
    }
    /* shares 0.6 : 0.2 : 0.2 */
    assert_true(abs(counts[0] - 60) <= 1);
    assert_true(abs(counts[1] - 20) <= 1);
    assert_true(abs(counts[2] - 20) <= 1);
    dt_scheduler_free(s);
}

static void test_random_policies_pick_only_pickable(void **state)
{
    (void)state;
    const char *names[] = { "random", "da_random", "eps_greedy", "softmax", "gradient" };
    for (size_t p = 0; p < sizeof names / sizeof names[0]; p++) {
        dt_scheduler *s = make(names[p]);
        dt_sched_task tasks[4] = { task(1, 0.2, 20, 22, 2), task(1, 0.2, 20, 30, 2),
                                   task(1, 0.2, 20, 25, 2), task(1, 0.2, 20, 40, 2) };
        tasks[3].exhausted = true;
        int seen[4] = { 0 };
        for (int t = 1; t <= 300; t++) {
            int k = dt_scheduler_pick(s, t, tasks, 4, NULL);
            assert_true(k >= 0 && k < 3);
            seen[k]++;
        }
        assert_int_equal(seen[3], 0);
        if (strcmp(names[p], "eps_greedy") == 0)
            assert_true(seen[1] > 250);  /* greedy on the largest reduction */
        if (strcmp(names[p], "random") == 0)
            assert_true(seen[0] > 60 && seen[1] > 60 && seen[2] > 60);
        dt_scheduler_free(s);
    }
}

static void test_gradient_prefers_steep_descent(void **state)
{
    (void)state;
    dt_scheduler *s = make("gradient");
    dt_sched_task tasks[2] = { task(1, 0.2, 20, 0, 5), task(1, 0.2, 20, 0, 5) };
    tasks[0].group = tasks[1].group = 0;
    /* same latency now (10 ms); task 1 fell from 16 ms over its last 3 slots */
    const double flat[5] = { 10.2, 10.1, 10.1, 10.0, 10.0 }, steep[5] = { 20, 16, 13, 11, 10.0 };
    memcpy(tasks[0].latency_history, flat, sizeof flat);
    memcpy(tasks[1].latency_history, steep, sizeof steep);
    tasks[0].nhistory = tasks[1].nhistory = 5;
    int ones = 0;
    for (int t = 1; t <= 100; t++)
        ones += dt_scheduler_pick(s, t, tasks, 2, NULL) == 1;
    assert_true(ones > 90);
    dt_scheduler_free(s);
}

static void test_unknown_policy(void **state)
{
    (void)state;
    dt_scheduler_params c = sched_cfg();
    dt_scheduler *s = NULL;
    dt_error err;
    assert_int_equal(dt_scheduler_new("bandit", &c, 1, &s, &err), DT_ENOTFOUND);
    assert_null(s);
    assert_non_null(strstr(err.msg, "dynatune"));
    for (int i = 0; dt_scheduler_policy_at(i); i++) {
        assert_int_equal(dt_scheduler_new(dt_scheduler_policy_at(i), &c, 1, &s, &err), 0);
        dt_scheduler_free(s);
    }
}

/* weighted_rr: argmax w L / (c + 1)^2.5. Task 0: 2 x 10 ms, 1 slot -> 20 / 5.657
 * = 3.536; task 1: 1 x 5 ms, 0 slots -> 5; task 2: 3 x 8 ms, 2 slots ->
 * 24 / 15.59 = 1.540. */
static void test_weighted_rr_formula(void **state)
{
    (void)state;
    dt_scheduler *s = make("weighted_rr");
    dt_sched_task t[3] = { task(2, 0.2, 20, 0, 1), task(1, 0.05, 10, 0, 0), task(3, 0.4, 50, 0, 2) };
    double scores[3];
    assert_int_equal(dt_scheduler_pick(s, 4, t, 3, scores), 1);
    assert_true(fabs(scores[0] - 20 / pow(2, 2.5)) < 1e-9 * scores[0]);
    assert_true(fabs(scores[2] - 24 / pow(3, 2.5)) < 1e-9 * scores[2]);
    assert_true(isnan(dt_scheduler_predicted_cut(s, &t[0])));
    t[1].slots = 3;  /* 5 / 32 = 0.156: task 0 leads now */
    assert_int_equal(dt_scheduler_pick(s, 5, t, 3, NULL), 0);
    t[0].finished = true;  /* finished tasks are skipped */
    assert_int_equal(dt_scheduler_pick(s, 6, t, 3, NULL), 2);
    dt_scheduler_free(s);
}

/* hazard: argmax h(m) w L with m the measured slots and h's last entry for
 * later ones: task 0: 0.04 x 20 = 0.8 (m = 5); task 1: 0.21 x 5 = 1.05
 * (m = 1, though 4 slots); task 2: 0.47 x 1.7 = 0.799 (m = 0). */
static void test_hazard_formula(void **state)
{
    (void)state;
    dt_scheduler *s = make("hazard");
    dt_sched_task t[3] = { task(2, 0.2, 20, 0, 5), task(1, 0.05, 10, 0, 4), task(1, 0.017, 10, 0, 0) };
    t[0].measured_slots = 5;
    t[1].measured_slots = 1;
    double scores[3];
    assert_int_equal(dt_scheduler_pick(s, 10, t, 3, scores), 1);
    assert_true(fabs(scores[0] - 0.8) < 1e-9);
    assert_true(fabs(scores[1] - 1.05) < 1e-9);
    assert_true(fabs(scores[2] - 0.799) < 1e-9);
    assert_true(fabs(dt_scheduler_predicted_cut(s, &t[1]) - 1.05) < 1e-9);
    t[1].measured_slots = 2;  /* 0.04 x 5 = 0.2 */
    assert_int_equal(dt_scheduler_pick(s, 11, t, 3, NULL), 0);
    dt_scheduler_free(s);
}

/* dynatune with a prior: the predicted cut is (m0 h(m) w L + m r) / (m0 + m).
 * Task: 2 x 10 ms, belief r = 2 x (10 - 8) = 4 ms. m = 0: the prior alone,
 * 0.47 x 20 = 9.4; m = 1: (3 x 0.21 x 20 + 4) / 4 = 4.15; m = 30: (3 x 0.04
 * x 20 + 30 x 4) / 33 = 3.709. Without a belief prediction, the prior. */
static void test_dynatune_prior_blend(void **state)
{
    (void)state;
    dt_scheduler_params c = sched_cfg();
    c.prior_slots = 3;
    dt_scheduler *s = NULL;
    dt_error err;
    assert_int_equal(dt_scheduler_new("dynatune", &c, 3, &s, &err), 0);
    assert_true(dt_scheduler_predicts(s));
    dt_sched_task t = task(2, 0.2, 20, 25, 0);
    assert_true(fabs(dt_scheduler_predicted_cut(s, &t) - 9.4) < 1e-9);
    t.measured_slots = t.slots = 1;
    assert_true(fabs(dt_scheduler_predicted_cut(s, &t) - 4.15) < 1e-9);
    t.measured_slots = t.slots = 30;
    assert_true(fabs(dt_scheduler_predicted_cut(s, &t) - (2.4 + 120) / 33) < 1e-9);
    t.pred_ok = false;
    assert_true(fabs(dt_scheduler_predicted_cut(s, &t) - 0.8) < 1e-9);
    /* With the prior, an unplayed task is no longer forced first: a played
     * task of larger predicted cut wins (ucb_c 0: no bonus). */
    dt_scheduler_free(s);
    c.ucb_c = 0;
    assert_int_equal(dt_scheduler_new("dynatune", &c, 3, &s, &err), 0);
    dt_sched_task two[2] = { task(10, 0.2, 20, 30, 1), task(1, 0.01, 20, 0, 0) };
    two[0].measured_slots = 1;  /* (3 x 0.21 x 100 + 10 x 3.33) / 4 > 0.47 x 0.5 */
    assert_int_equal(dt_scheduler_pick(s, 3, two, 2, NULL), 0);
    dt_scheduler_free(s);
}

/* The prior's share with a roofline: 0.2 GFLOP over 40 MB is 5 flop/byte;
 * at 20 GB/s its level is 100 GFLOPS = 1.0 x the 100 GFLOPS peak, below the
 * ceiling 1.2. At 25 GFLOPS the headroom is 1 - 0.25 = 0.75; without bytes
 * the ceiling rules: 1 - 0.25 / 1.2; near the level the floor 0.05. */
static void test_prior_share_roofline(void **state)
{
    (void)state;
    const double h[2] = { 0.47, 0.21 };
    dt_sched_task t = task(1, 0.2, 25, 0, 0);
    t.peak_gflops = 100;
    t.bytes = 4e7;
    assert_true(fabs(dt_sched_prior_share(&t, h, 2, NULL, 0, 1.2, 20, DT_SCHED_HEADROOM_ROOFLINE)
                     - 0.47 * 0.75) < 1e-12);
    assert_true(fabs(dt_sched_prior_share(&t, h, 2, NULL, 0, 1.2, 0, DT_SCHED_HEADROOM_ROOFLINE)
                     - 0.47 * (1 - 0.25 / 1.2)) < 1e-12);
    assert_true(fabs(dt_sched_prior_share(&t, h, 2, NULL, 0, 0, 20, DT_SCHED_HEADROOM_ROOFLINE)
                     - 0.47) < 1e-12);
    t.best_gflops = 99;
    t.measured_slots = 4;
    assert_true(fabs(dt_sched_prior_share(&t, h, 2, NULL, 0, 1.2, 20, DT_SCHED_HEADROOM_ROOFLINE)
                     - 0.21 * DT_SCHED_HEADROOM_FLOOR) < 1e-12);
    t.peak_gflops = 0;  /* no peak: no headroom */
    assert_true(fabs(dt_sched_prior_share(&t, h, 2, NULL, 0, 1.2, 20, DT_SCHED_HEADROOM_ROOFLINE)
                     - 0.21) < 1e-12);
}

/* The cost model's headroom on the task of test_prior_share_roofline
 * (25 GFLOPS, roofline level 1.0 of a 100 GFLOPS peak: headroom 0.75). An
 * estimate of 30 GFLOPS puts its level at 0.30: headroom 1 - 25 / 30, so
 * dynatune's prior predicts a smaller cut than with the roofline; an
 * estimate above the roofline is held under it, none leaves the roofline,
 * and without a roofline (ceiling 0) the estimate alone sets the level. A
 * task near its estimate then loses the slot to one the roofline ranks
 * lower. */
static void test_prior_share_cost_model(void **state)
{
    (void)state;
    const double h[2] = { 0.47, 0.21 };
    const dt_sched_headroom cm = DT_SCHED_HEADROOM_COST_MODEL;
    dt_sched_task t = task(2, 0.2, 25, 0, 0);
    t.peak_gflops = 100;
    t.bytes = 4e7;
    t.cost_model_gflops = 30;
    assert_string_equal(dt_sched_headroom_at(cm), "cost_model");
    assert_null(dt_sched_headroom_at(DT_SCHED_HEADROOM_COUNT));
    assert_true(fabs(dt_sched_headroom_level(&t, 1.2, 20, cm) - 0.30) < 1e-12);
    assert_true(fabs(dt_sched_headroom_level(&t, 1.2, 20, DT_SCHED_HEADROOM_ROOFLINE) - 1.0) < 1e-12);
    assert_true(fabs(dt_sched_prior_share(&t, h, 2, NULL, 0, 1.2, 20, cm) - 0.47 * (1 - 25.0 / 30))
                < 1e-12);
    t.cost_model_gflops = 150;   /* above the roofline: held at 1.0 */
    assert_true(fabs(dt_sched_prior_share(&t, h, 2, NULL, 0, 1.2, 20, cm) - 0.47 * 0.75) < 1e-12);
    t.cost_model_gflops = 0;     /* no estimate yet: the roofline */
    assert_true(fabs(dt_sched_prior_share(&t, h, 2, NULL, 0, 1.2, 20, cm) - 0.47 * 0.75) < 1e-12);
    t.cost_model_gflops = 40;    /* no roofline: the estimate alone */
    assert_true(fabs(dt_sched_prior_share(&t, h, 2, NULL, 0, 0, 20, cm) - 0.47 * (1 - 25.0 / 40))
                < 1e-12);

    dt_scheduler_params c = sched_cfg();
    c.prior_slots = 30;
    c.ceiling = 1.2;
    c.bandwidth_gbs = 20;
    c.ucb_c = 0;
    dt_scheduler *roof = NULL, *model = NULL;
    dt_error err = { 0 };
    assert_int_equal(dt_scheduler_new("dynatune", &c, 3, &roof, &err), 0);
    c.headroom = cm;
    assert_int_equal(dt_scheduler_new("dynatune", &c, 3, &model, &err), 0);
    t.cost_model_gflops = 30;
    t.slots = t.measured_slots = 1;
    double latency = 2 * 0.2 / 25 * 1e3;   /* w L, ms */
    assert_true(fabs(dt_scheduler_predicted_cut(roof, &t) - 0.21 * 0.75 * latency) < 1e-9);
    assert_true(fabs(dt_scheduler_predicted_cut(model, &t) - 0.21 * (1 - 25.0 / 30) * latency) < 1e-9);
    assert_true(dt_scheduler_predicted_cut(model, &t) < dt_scheduler_predicted_cut(roof, &t));
    /* a: slower, so the roofline gives it the larger cut; its cost model
     * sees it within 4 % of what its space can do (headroom at the floor) */
    dt_sched_task two[2] = { task(1, 0.2, 25, 0, 1), task(1, 0.2, 30, 0, 1) };
    for (int i = 0; i < 2; i++) {
        two[i].peak_gflops = 100;
        two[i].bytes = 4e7;
        two[i].measured_slots = 1;
    }
    two[0].cost_model_gflops = 26;
    assert_int_equal(dt_scheduler_pick(roof, 3, two, 2, NULL), 0);
    assert_int_equal(dt_scheduler_pick(model, 3, two, 2, NULL), 1);
    dt_scheduler_free(roof);
    dt_scheduler_free(model);
    c.headroom = DT_SCHED_HEADROOM_COUNT;
    assert_int_equal(dt_scheduler_new("dynatune", &c, 3, &model, &err), DT_EINVAL);
}

/* Staleness buckets: below 16 trials since the last new best, then one per
 * doubling; the factor of the task's bucket (the last entry for staler
 * ones) scales the prior's share, and a stale task loses to a fresh one of
 * the same size under dynatune's prior. */
static void test_prior_share_staleness(void **state)
{
    (void)state;
    assert_int_equal(dt_sched_stale_bucket(0), 0);
    assert_int_equal(dt_sched_stale_bucket(15), 0);
    assert_int_equal(dt_sched_stale_bucket(16), 1);
    assert_int_equal(dt_sched_stale_bucket(31), 1);
    assert_int_equal(dt_sched_stale_bucket(32), 2);
    assert_int_equal(dt_sched_stale_bucket(127), 3);
    assert_int_equal(dt_sched_stale_bucket(128), 4);
    assert_int_equal(dt_sched_stale_bucket(1 << 30), 27);
    const double h[1] = { 0.5 }, g[3] = { 1, 0.4, 0.2 };
    dt_sched_task t = task(1, 0.2, 25, 0, 0);
    assert_true(fabs(dt_sched_prior_share(&t, h, 1, g, 3, 0, 0, DT_SCHED_HEADROOM_ROOFLINE)
                     - 0.5) < 1e-12);
    t.stale_trials = 20;
    assert_true(fabs(dt_sched_prior_share(&t, h, 1, g, 3, 0, 0, DT_SCHED_HEADROOM_ROOFLINE)
                     - 0.5 * 0.4) < 1e-12);
    t.stale_trials = 1000;  /* bucket 6: the last entry holds */
    assert_true(fabs(dt_sched_prior_share(&t, h, 1, g, 3, 0, 0, DT_SCHED_HEADROOM_ROOFLINE)
                     - 0.5 * 0.2) < 1e-12);
    assert_true(fabs(dt_sched_prior_share(&t, h, 1, NULL, 0, 0, 0, DT_SCHED_HEADROOM_ROOFLINE)
                     - 0.5) < 1e-12);

    dt_scheduler_params c = sched_cfg();
    snprintf(c.staleness, sizeof c.staleness, "1,0.4,0.2");
    c.prior_slots = 30;
    c.ceiling = 0;
    c.ucb_c = 0;
    dt_scheduler *s;
    dt_error err = { 0 };
    assert_int_equal(dt_scheduler_new("dynatune", &c, 3, &s, &err), 0);
    dt_sched_task two[2] = { task(1, 0.2, 20, 0, 0), task(1, 0.2, 20, 0, 0) };
    two[0].slots = two[1].slots = 1;
    two[0].measured_slots = two[1].measured_slots = 1;
    two[0].stale_trials = 100;
    two[1].stale_trials = 3;
    assert_int_equal(dt_scheduler_pick(s, 3, two, 2, NULL), 1);
    two[0].stale_trials = 3;
    two[1].stale_trials = 100;
    assert_int_equal(dt_scheduler_pick(s, 3, two, 2, NULL), 0);
    dt_scheduler_free(s);
    snprintf(c.staleness, sizeof c.staleness, "1,2");
    assert_int_equal(dt_scheduler_new("dynatune", &c, 3, &s, &err), DT_EINVAL);
}

/* The belief's curve is held under the same roofline: with peak 100 GFLOPS
 * and a level of 1.0 (5 flop/byte at 20 GB/s) a belief promising 400 GFLOPS
 * for a 2 x 0.2 GFLOP task at 25 GFLOPS cuts at most 2 x (8 - 2) = 12 ms,
 * not 2 x (8 - 0.5) = 15; without prior (m0 = 0) the cut is that r_k. A
 * prediction under the level is left alone. */
static void test_dynatune_curve_under_roofline(void **state)
{
    (void)state;
    dt_scheduler_params c = sched_cfg();
    c.prior_slots = 0;
    c.ceiling = 1.2;
    c.bandwidth_gbs = 20;
    dt_scheduler *s = NULL;
    dt_error err;
    assert_int_equal(dt_scheduler_new("dynatune", &c, 3, &s, &err), 0);
    dt_sched_task t = task(2, 0.2, 25, 400, 1);
    t.peak_gflops = 100;
    t.bytes = 4e7;
    assert_true(fabs(dt_sched_roofline_level(&t, 1.2, 20) - 1.0) < 1e-12);
    /* bandwidth_gbs 0: the task's measured bandwidth (the bound's level);
     * a configured one wins over it; neither: the FLOP ceiling */
    t.bandwidth_gbs = 12.5;
    assert_true(fabs(dt_sched_roofline_level(&t, 1.2, 0) - 0.625) < 1e-12);
    assert_true(fabs(dt_sched_roofline_level(&t, 1.2, 20) - 1.0) < 1e-12);
    t.bandwidth_gbs = 0;
    assert_true(fabs(dt_sched_roofline_level(&t, 1.2, 0) - 1.2) < 1e-12);
    assert_true(fabs(dt_scheduler_predicted_cut(s, &t) - 12) < 1e-9);
    t.pred_gflops = 50;
    assert_true(fabs(dt_scheduler_predicted_cut(s, &t) - 2 * (8 - 4)) < 1e-9);
    t.bytes = 0;  /* no bytes: the FLOP ceiling 1.2 x 100 rules */
    t.pred_gflops = 400;
    assert_true(fabs(dt_scheduler_predicted_cut(s, &t) - 2 * (8 - 0.2 / 120 * 1e3)) < 1e-9);
    dt_scheduler_free(s);
}

static void test_hazard_table_parse(void **state)
{
    (void)state;
    double h[DT_SCHED_HAZARD_MAX];
    int n;
    dt_error err;
    assert_int_equal(dt_sched_hazard_parse(" 0.5,0.25  0.125 ", h, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_true(h[2] == 0.125);
    assert_int_equal(dt_sched_hazard_parse("0.5 1.5", h, &n, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "entry 2"));
    assert_int_equal(dt_sched_hazard_parse("0.5 x", h, &n, &err), DT_EINVAL);
    assert_int_equal(dt_sched_hazard_parse("", h, &n, &err), DT_EINVAL);
    dt_scheduler_params c = sched_cfg();
    snprintf(c.hazard, sizeof c.hazard, "0.3 -0.1");
    dt_scheduler *s = NULL;
    assert_int_equal(dt_scheduler_new("hazard", &c, 1, &s, &err), DT_EINVAL);
    assert_null(s);
}

/* The optimum against every allocation of slots on four small tasks with
 * costs that are not whole slots at a trace's end. */
#define OPT_TASKS 4
#define OPT_SLOTS 4
static void test_optimum_matches_brute_force(void **state)
{
    (void)state;
    double lat[OPT_TASKS][OPT_SLOTS + 1], cost[OPT_TASKS][OPT_SLOTS + 1];
    int nslots[OPT_TASKS] = { 4, 3, 4, 2 };
    dt_sched_curve c[OPT_TASKS];
    srand(7);
    for (int k = 0; k < OPT_TASKS; k++) {
        lat[k][0] = 3.7 + k * 1.3;
        cost[k][0] = 0;
        for (int j = 1; j <= nslots[k]; j++) {
            lat[k][j] = lat[k][j - 1] * (0.35 + 0.6 * rand() / (double)RAND_MAX);
            cost[k][j] = 10.0 * j;
        }
        c[k] = (dt_sched_curve){ .nslots = nslots[k], .latency = lat[k], .cost = cost[k] };
    }
    double targets[5] = { 16.9, 12.3, 8.1, 5.5, 0.01 }, got[5], want[5];
    for (int i = 0; i < 5; i++)
        want[i] = INFINITY;
    int s[OPT_TASKS];
    for (s[0] = 0; s[0] <= nslots[0]; s[0]++)
        for (s[1] = 0; s[1] <= nslots[1]; s[1]++)
            for (s[2] = 0; s[2] <= nslots[2]; s[2]++)
                for (s[3] = 0; s[3] <= nslots[3]; s[3]++) {
                    double l = 0, t = 0;
                    for (int k = 0; k < OPT_TASKS; k++) {
                        l += lat[k][s[k]];
                        t += cost[k][s[k]];
                    }
                    for (int i = 0; i < 5; i++)
                        if (l <= targets[i] && t < want[i])
                            want[i] = t;
                }
    dt_error err;
    assert_int_equal(dt_sched_optimum(c, OPT_TASKS, targets, 5, got, &err), 0);
    for (int i = 0; i < 5; i++) {
        if (isinf(want[i]))
            assert_true(isinf(got[i]));
        else
            assert_true(fabs(got[i] - want[i]) < 1e-9);
    }
    assert_true(isinf(got[4]) && isfinite(got[0]) && got[0] < got[3]);
}

/* ---- the traces' rows (bench/trace_format.h) ------------------------------------- */

static void test_trace_version(void **state)
{
    (void)state;
    assert_int_equal(trace_version("# dtune scheduler trace v1 (bench/trace_convert.c)\n"), 1);
    assert_int_equal(trace_version("# dtune scheduler trace v2 (bench/trace_convert.c)\n"), 2);
    assert_int_equal(trace_version("# dtune scheduler trace v3 (bench/trace_convert.c)\n"), 3);
    assert_int_equal(trace_version("# dtune scheduler trace v4 (bench/trace_convert.c)\n"), -1);
    assert_int_equal(trace_version("# dtune scheduler trace v2x\n"), -1);
    assert_int_equal(trace_version("# dtune scheduler trace v\n"), -1);
    assert_int_equal(trace_version("task,trial,seconds,gflops,best_gflops\n"), -1);
}

/* What trace_convert writes (v3 rows are v2 rows) reads back: the estimate where there is
 * one (%.5g: these values are exact at five digits), none as 0. */
static void test_trace_rows_round_trip(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    const trace_row rows[3] = {
        { .task = 0, .trial = 1, .seconds = 2.054, .gflops = 2.7829, .best = 2.7829 },
        { .task = 0, .trial = 5, .seconds = 31.725, .gflops = 12.484, .best = 23.217,
          .cost_model = 47.913 },
        { .task = 12, .trial = 404, .seconds = 612.5, .gflops = 0, .best = 9.0312,
          .cost_model = 9.0312 },
    };
    trace_write_magic(f);
    trace_write_columns(f);
    for (int i = 0; i < 3; i++)
        trace_write_row(f, &rows[i]);
    assert_int_equal(fclose(f), 0);
    char *line = text, *next;
    int version = 0, parsed = 0, column;
    for (int lineno = 1; *line; line = next + 1, lineno++) {
        next = strchr(line, '\n');
        assert_non_null(next);
        if (lineno == 1)
            version = trace_version(line);
        if (line[0] == '#' || strncmp(line, "task,", 5) == 0)
            continue;
        trace_row r;
        assert_int_equal(trace_parse_row(line, version, &r, &column), 0);
        const trace_row *w = &rows[parsed++];
        assert_true(r.task == w->task && r.trial == w->trial);
        assert_true(r.seconds == w->seconds && r.gflops == w->gflops && r.best == w->best);
        assert_true(r.cost_model == w->cost_model);
    }
    assert_int_equal(version, TRACE_VERSION);
    assert_int_equal(parsed, 3);
    assert_non_null(strstr(text, "task,trial,seconds,gflops,best_gflops,cost_model_gflops\n"));
    assert_non_null(strstr(text, "0,1,2.054,2.7829,2.7829,\n"));   /* no estimate: empty */
    free(text);
}

/* A task line written now (v3) reads back with its bound; a v1/v2 line
 * (nine fields) reads with no bound; a bad bound or a short line is refused. */
static void test_trace_task_lines(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    trace_task w = { .index = 4, .group = 4147, .count = 2, .trials = 404, .flops = 7225344,
                     .peak = 117.537, .bound = 64.3688, .name = "dw_32_112",
                     .kind = "depthwise_conv2d" };
    trace_write_task(f, &w);
    assert_int_equal(fclose(f), 0);
    assert_string_equal(text, "#task,4,dw_32_112,depthwise_conv2d,4147,2,7225344,117.537,404,64.3688\n");
    trace_task t;
    assert_int_equal(trace_parse_task(text, &t), 0);
    assert_true(t.index == 4 && t.group == 4147 && t.count == 2 && t.trials == 404);
    assert_string_equal(t.name, "dw_32_112");
    assert_string_equal(t.kind, "depthwise_conv2d");
    assert_true(t.flops == 7225344 && t.peak == 117.537 && t.bound == 64.3688);
    free(text);
    assert_int_equal(trace_parse_task("#task,0,conv1,conv2d,51,1,21676032,75.2,404\n", &t), 0);
    assert_true(t.bound == 0 && t.peak == 75.2 && t.trials == 404);
    assert_int_equal(trace_parse_task("#task,0,conv1,conv2d,51,1,21676032,75.2,404,-3\n", &t), -1);
    assert_int_equal(trace_parse_task("#task,0,conv1,conv2d,51,1,21676032,75.2,404,fast\n", &t), -1);
    assert_int_equal(trace_parse_task("#task,0,conv1,conv2d,51,1,21676032,75.2,404,5x\n", &t), -1);
    assert_int_equal(trace_parse_task("#task,0,conv1,conv2d,51,1,21676032,75.2\n", &t), -1);
}

/* A bad estimate is refused at its column; a v2 row must have its sixth
 * column (empty or a positive number); a v1 row reads as it always did,
 * anything after its fifth column ignored. */
static void test_trace_rows_refused(void **state)
{
    (void)state;
    trace_row r;
    int column;
    assert_int_equal(trace_parse_row("3,7,10.5,4.25,4.5,-1\n", 2, &r, &column), -1);
    assert_int_equal(column, 19);
    assert_int_equal(trace_parse_row("3,7,10.5,4.25,4.5,fast\n", 2, &r, &column), -1);
    assert_int_equal(column, 19);
    assert_int_equal(trace_parse_row("3,7,10.5,4.25,4.5,5.5x\n", 2, &r, &column), -1);
    assert_int_equal(trace_parse_row("3,7,10.5,4.25,4.5\n", 2, &r, &column), -1);
    assert_int_equal(column, 18);
    assert_int_equal(trace_parse_row("3,7,10.5\n", 2, &r, &column), -1);
    assert_int_equal(column, 1);
    assert_int_equal(trace_parse_row("3,7,10.5,4.25,4.5\n", 1, &r, &column), 0);
    assert_true(r.task == 3 && r.trial == 7 && r.best == 4.5 && r.cost_model == 0);
    assert_int_equal(trace_parse_row("3,7,10.5,4.25,4.5,5.5\n", 1, &r, &column), 0);
    assert_true(r.cost_model == 0);
    assert_int_equal(trace_parse_row("3,7,10.5,4.25,4.5,5.5\r\n", 2, &r, &column), 0);
    assert_true(r.cost_model == 5.5);
}

/* Every row of a committed v1 trace still parses, as many as its header
 * lists, none with an estimate. */
static void test_trace_v1_committed(void **state)
{
    (void)state;
    FILE *f = fopen("bench/traces/resnet18-s1.csv", "r");
    if (!f)
        skip();   /* run from elsewhere than the repository's root */
    char line[1024];
    int version = -1, lineno = 0, rows = 0, listed = 0, column;
    while (fgets(line, sizeof line, f)) {
        int index, trials;
        if (++lineno == 1)
            version = trace_version(line);
        if (sscanf(line, "#task,%d,%*[^,],%*[^,],%*d,%*d,%*f,%*f,%d", &index, &trials) == 2)
            listed += trials;
        if (line[0] == '#' || strncmp(line, "task,", 5) == 0)
            continue;
        trace_row r;
        if (trace_parse_row(line, version, &r, &column) != 0)
            fail_msg("bench/traces/resnet18-s1.csv:%d:%d: not a row", lineno, column);
        assert_true(r.cost_model == 0 && r.best > 0);
        rows++;
    }
    fclose(f);
    assert_int_equal(version, 1);
    assert_true(rows > 0);
    assert_int_equal(rows, listed);
}

/* The warm-up ends with the batch of DT_WARMUP_BATCH trials that holds
 * the first valid one, not at that trial (the daemon measures the whole
 * batch before it looks). */
static void test_trace_warm_up_end(void **state)
{
    (void)state;
    const double first[] = { 25, 25, 33, 59, 84, 84 };
    assert_int_equal(trace_warm_up_end(first, 6), DT_WARMUP_BATCH - 1);
    const double later[] = { 0, 0, 0, 0, 0, 41, 41, 41, 41, 50 };
    assert_int_equal(trace_warm_up_end(later, 10), 2 * DT_WARMUP_BATCH - 1);
    const double cut[] = { 0, 0, 0, 0, 0, 12 };
    assert_int_equal(trace_warm_up_end(cut, 6), 5);
    const double none[] = { 0, 0, 0 };
    assert_int_equal(trace_warm_up_end(none, 3), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expected_reduction),
        cmocka_unit_test(test_dynatune_ucb),
        cmocka_unit_test(test_prior_share_staleness),
        cmocka_unit_test(test_dynatune_scale_free),
        cmocka_unit_test(test_sequential_until_finished),
        cmocka_unit_test(test_round_robin_static_and_dynamic),
        cmocka_unit_test(test_replay_restores_position),
        cmocka_unit_test(test_linear_follows_flops),
        cmocka_unit_test(test_random_policies_pick_only_pickable),
        cmocka_unit_test(test_gradient_prefers_steep_descent),
        cmocka_unit_test(test_unknown_policy),
        cmocka_unit_test(test_weighted_rr_formula),
        cmocka_unit_test(test_hazard_formula),
        cmocka_unit_test(test_hazard_table_parse),
        cmocka_unit_test(test_prior_share_roofline),
        cmocka_unit_test(test_prior_share_cost_model),
        cmocka_unit_test(test_dynatune_prior_blend),
        cmocka_unit_test(test_dynatune_curve_under_roofline),
        cmocka_unit_test(test_optimum_matches_brute_force),
        cmocka_unit_test(test_trace_version),
        cmocka_unit_test(test_trace_rows_round_trip),
        cmocka_unit_test(test_trace_task_lines),
        cmocka_unit_test(test_trace_rows_refused),
        cmocka_unit_test(test_trace_v1_committed),
        cmocka_unit_test(test_trace_warm_up_end),
    };
    return cmocka_run_group_tests_name("scheduler", tests, NULL, NULL);
}
