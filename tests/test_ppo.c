/* test_ppo.c — the PPO agent: analytic gradients against central finite
 * differences (clipped and unclipped samples), GAE against a hand-unrolled
 * recursion, the near-uniform first policy, learning a toy walk, and the
 * update's reuse of the acting forward passes against recomputing them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "ppo_internal.h"

#define NSTEPS 13

static dt_ppo *make_agent(int nknobs, int hidden, int max_steps, uint64_t seed)
{
    dt_ppo_params cfg;
    cfg = dt_ppo_params_default();
    cfg.hidden = hidden;
    cfg.max_steps = max_steps;
    dt_ppo *p = NULL;
    dt_error err;
    assert_int_equal(dt_ppo_new(&cfg, nknobs, seed, &p, &err), 0);
    return p;
}

/* The policy head starts at 0.01 scale; give it weight so probabilities differ. */
static void roughen(dt_ppo *p, gsl_rng *rng)
{
    double *theta = dt_ppo_theta(p);
    for (int i = 0; i < dt_ppo_ntheta(p); i++)
        theta[i] += 0.7 * (gsl_rng_uniform(rng) - 0.5);
}

static void test_gradient_matches_finite_differences(void **state)
{
    (void)state;
    enum { K = 5, H = 7 };
    dt_ppo *p = make_agent(K, H, 64, 17);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 4242);
    roughen(p, rng);
    double states[NSTEPS * K], old_logp[NSTEPS], adv[NSTEPS], ret[NSTEPS];
    int actions[NSTEPS * K];
    /* log π_old offsets put ratios at 1.82, 1.105, 1, 0.905, 0.549: two are
     * outside the clip range [0.7, 1.3], none near its edges. */
    const double offsets[5] = {-0.6, -0.1, 0.0, 0.1, 0.6};
    for (int t = 0; t < NSTEPS; t++) {
        for (int k = 0; k < K; k++) {
            states[t * K + k] = gsl_rng_uniform(rng);
            actions[t * K + k] = (int)gsl_rng_uniform_int(rng, 3);
        }
        old_logp[t] = dt_ppo_log_prob(p, states + t * K, actions + t * K) + offsets[t % 5];
        adv[t] = 2.3 * (gsl_rng_uniform(rng) - 0.45);
        ret[t] = 1.7 * gsl_rng_uniform(rng) - 0.3;
    }
    dt_ppo_batch b = {.n = NSTEPS, .index = NULL, .states = states, .actions = actions,
                      .old_logp = old_logp, .advantages = adv, .returns = ret};
    int np = dt_ppo_ntheta(p);
    double *grad = malloc((size_t)np * sizeof *grad);
    assert_non_null(grad);
    dt_ppo_loss(p, &b, grad, NULL);
    double *theta = dt_ppo_theta(p), h = 1e-6, worst = 0;
    int nonzero = 0;
    for (int i = 0; i < np; i++) {
        double saved = theta[i];
        theta[i] = saved + h;
        double up = dt_ppo_loss(p, &b, NULL, NULL);
        theta[i] = saved - h;
        double down = dt_ppo_loss(p, &b, NULL, NULL);
        theta[i] = saved;
        double fd = (up - down) / (2 * h);
        double rel = fabs(fd - grad[i]) / fmax(fabs(fd), 1e-4);
        worst = fmax(worst, rel);
        nonzero += fabs(grad[i]) > 1e-6;
    }
    assert_true(worst < 1e-5);
    assert_true(nonzero > np / 2);   /* the check covered live gradients */
    free(grad);
    gsl_rng_free(rng);
    dt_ppo_free(p);
}

static void test_gae_matches_recursion(void **state)
{
    (void)state;
    const double r[4] = {0.31, -0.12, 0.57, 0.08}, v[4] = {0.2, 0.45, -0.1, 0.33};
    double adv[4], ret[4], g = 0.9, l = 0.99, last = 0.71;
    dt_ppo_gae(r, v, last, 4, g, l, adv, ret);
    double d3 = r[3] + g * last - v[3];
    double d2 = r[2] + g * v[3] - v[2];
    double d1 = r[1] + g * v[2] - v[1];
    double d0 = r[0] + g * v[1] - v[0];
    double a3 = d3, a2 = d2 + g * l * a3, a1 = d1 + g * l * a2, a0 = d0 + g * l * a1;
    assert_float_equal(adv[3], a3, 1e-12);
    assert_float_equal(adv[2], a2, 1e-12);
    assert_float_equal(adv[1], a1, 1e-12);
    assert_float_equal(adv[0], a0, 1e-12);
    assert_float_equal(ret[0], a0 + v[0], 1e-12);
}

static int cancel_after(void *ctx)
{
    int *left = ctx;
    return (*left)-- <= 0;
}

/* A cancel hook that says stop ends the update early with DT_ECANCELED; the
 * agent stays usable (its next episode starts clean). */
static void test_update_stops_when_cancelled(void **state)
{
    (void)state;
    dt_ppo *p = make_agent(3, 16, 40, 3);
    const double s[3] = {0.21, 0.62, 0.93};
    double rewards[40];
    int a[3];
    int allowed = 1;
    dt_cancel c = { cancel_after, &allowed };
    dt_ppo_set_cancel(p, &c);
    for (int i = 0; i < 40; i++) {
        assert_int_equal(dt_ppo_act(p, s, a), 0);
        rewards[i] = 0.37 * (i % 3);
    }
    assert_int_equal(dt_ppo_episode_end(p, rewards, 0, NULL), DT_ECANCELED);
    assert_int_equal(dt_ppo_episode_length(p), 0);
    dt_ppo_set_cancel(p, NULL);
    assert_int_equal(dt_ppo_act(p, s, a), 0);
    assert_int_equal(dt_ppo_episode_end(p, rewards, 0, NULL), 0);
    dt_ppo_free(p);
}

/* A wide network's update asks the hook before every step, not only
 * between minibatches: 40 steps make one minibatch an epoch, so a stop asked
 * at the eleventh step ends the update inside the first one, and that
 * minibatch takes no Adam step (the policy is the one that acted). A narrow
 * network's update asks once a minibatch: three times for three epochs. */
static void test_update_stops_inside_a_minibatch(void **state)
{
    (void)state;
    dt_ppo *p = make_agent(3, 32768, 40, 5);
    assert_true(dt_ppo_ntheta(p) >= DT_PPO_ASK_PARAMS);
    const double s[3] = {0.21, 0.62, 0.93};
    double rewards[40];
    int a[3], first[3];
    int allowed = 10;
    dt_cancel c = { cancel_after, &allowed };
    dt_ppo_set_cancel(p, &c);
    for (int i = 0; i < 40; i++) {
        assert_int_equal(dt_ppo_act(p, s, a), 0);
        if (i == 0)
            memcpy(first, a, sizeof first);
        rewards[i] = 0.37 * (i % 3) + 0.1 * a[0];
    }
    double before = dt_ppo_log_prob(p, s, first);
    assert_int_equal(dt_ppo_episode_end(p, rewards, 0, NULL), DT_ECANCELED);
    assert_int_equal(allowed, -1);   /* asked 11 times: the eleventh said stop */
    assert_true(dt_ppo_log_prob(p, s, first) == before);
    dt_ppo_free(p);

    p = make_agent(3, 16, 40, 5);
    allowed = 1000;
    dt_ppo_set_cancel(p, &c);
    for (int i = 0; i < 40; i++)
        assert_int_equal(dt_ppo_act(p, s, a), 0);
    assert_int_equal(dt_ppo_episode_end(p, rewards, 0, NULL), 0);
    assert_int_equal(allowed, 1000 - 3);
    dt_ppo_free(p);
}

static void test_first_policy_is_near_uniform(void **state)
{
    (void)state;
    dt_ppo *p = make_agent(6, 64, 8, 3);
    const double s[6] = {0.13, 0.5, 0.77, 0.0, 1.0, 0.41};
    const int stay[6] = {1, 1, 1, 1, 1, 1};
    double lp = dt_ppo_log_prob(p, s, stay);
    assert_true(fabs(lp - 6 * log(1.0 / 3)) < 0.05);
    int a[6];
    for (int i = 0; i < 8; i++)
        assert_int_equal(dt_ppo_act(p, s, a), 0);
    assert_int_equal(dt_ppo_act(p, s, a), DT_EINVAL);   /* rollout full */
    assert_int_equal(dt_ppo_episode_length(p), 8);
    dt_ppo_free(p);
}

static void test_rejects_bad_config(void **state)
{
    (void)state;
    dt_ppo_params cfg;
    cfg = dt_ppo_params_default();
    cfg.clip = 0;
    dt_ppo *p = NULL;
    dt_error err;
    assert_int_equal(dt_ppo_new(&cfg, 4, 1, &p, &err), DT_EINVAL);
    assert_null(p);
    assert_true(strstr(err.msg, "clip") != NULL);
}

/* Toy walk: two knobs of 11 options; reward is the negative distance of the
 * new position to (8, 2). Returns the mean reward of `episodes` episodes. */
static double run_walk(dt_ppo *p, gsl_rng *rng, int episodes, bool learn)
{
    enum { STEPS = 20, N = 11 };
    double total = 0, rewards[STEPS];
    for (int e = 0; e < episodes; e++) {
        int pos[2] = {(int)gsl_rng_uniform_int(rng, N), (int)gsl_rng_uniform_int(rng, N)};
        dt_ppo_episode_begin(p);
        for (int t = 0; t < STEPS; t++) {
            double s[2] = {pos[0] / 10.0, pos[1] / 10.0};
            int a[2];
            assert_int_equal(dt_ppo_act(p, s, a), 0);
            for (int k = 0; k < 2; k++) {
                pos[k] += a[k] - 1;
                pos[k] = pos[k] < 0 ? 0 : pos[k] >= N ? N - 1 : pos[k];
            }
            rewards[t] = -(abs(pos[0] - 8) + abs(pos[1] - 2)) / 10.0;
            total += rewards[t];
        }
        if (learn) {
            double s[2] = {pos[0] / 10.0, pos[1] / 10.0};
            assert_int_equal(dt_ppo_episode_end(p, rewards, dt_ppo_value(p, s), NULL), 0);
        }
    }
    return total / (episodes * STEPS);
}

static void test_learns_toy_walk(void **state)
{
    (void)state;
    dt_ppo_params cfg;
    cfg = dt_ppo_params_default();
    cfg.max_steps = 20;
    cfg.learning_rate = 3e-3;
    cfg.entropy_coef = 0.01;
    dt_ppo *p = NULL;
    assert_int_equal(dt_ppo_new(&cfg, 2, 11, &p, NULL), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 99);
    double before = run_walk(p, rng, 50, false);
    run_walk(p, rng, 400, true);
    double after = run_walk(p, rng, 50, false);
    assert_true(after > before + 0.15);
    gsl_rng_free(rng);
    dt_ppo_free(p);
}

/* Episodes of 20, 90 (more than a minibatch) and 3 steps; states and
 * rewards follow from the step, the episode and the agent's actions. */
static void drive(dt_ppo *p)
{
    enum { K = 3 };
    const int lengths[3] = {20, 90, 3};
    double rewards[90];
    for (int e = 0; e < 3; e++) {
        dt_ppo_episode_begin(p);
        for (int t = 0; t < lengths[e]; t++) {
            double s[K];
            int a[K];
            for (int k = 0; k < K; k++)
                s[k] = fmod(0.37 * t + 0.11 * (k + 1) * (e + 1), 1.0);
            assert_int_equal(dt_ppo_act(p, s, a), 0);
            rewards[t] = a[0] - 0.5 * a[1] + 0.25 * a[2] + 0.1 * e;
        }
        assert_int_equal(dt_ppo_episode_end(p, rewards, 0.0, NULL), 0);
    }
}

/* The update's first minibatch reuses the forward passes dt_ppo_act kept;
 * an agent whose θ was handed out recomputes every one. Both must end with
 * the same θ, bit for bit, and it must have moved. */
static void test_update_reuses_the_acting_forward_exactly(void **state)
{
    (void)state;
    dt_ppo *kept = make_agent(3, 64, 100, 23), *recomputed = make_agent(3, 64, 100, 23);
    int n = dt_ppo_ntheta(recomputed);
    double *start = malloc((size_t)n * sizeof *start);
    assert_non_null(start);
    memcpy(start, dt_ppo_theta(recomputed), (size_t)n * sizeof *start);
    drive(kept);
    drive(recomputed);
    const double *a = dt_ppo_theta(kept), *b = dt_ppo_theta(recomputed);
    assert_memory_equal(a, b, (size_t)n * sizeof *a);
    assert_memory_not_equal(a, start, (size_t)n * sizeof *a);
    free(start);
    dt_ppo_free(kept);
    dt_ppo_free(recomputed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient_matches_finite_differences),
        cmocka_unit_test(test_gae_matches_recursion),
        cmocka_unit_test(test_first_policy_is_near_uniform),
        cmocka_unit_test(test_rejects_bad_config),
        cmocka_unit_test(test_update_stops_when_cancelled),
        cmocka_unit_test(test_update_stops_inside_a_minibatch),
        cmocka_unit_test(test_learns_toy_walk),
        cmocka_unit_test(test_update_reuses_the_acting_forward_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
