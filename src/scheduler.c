/* scheduler.c — slot policies (see scheduler.h for the list).
 *
 * Each policy is a pick function in one table. Policies that keep state (the
 * round-robin cursor, the sequential task) keep it in the dt_scheduler, and
 * each scheduler owns its gsl_rng, so runs are repeatable by seed.
 */
#include "dtune/scheduler.h"
#include "dtune/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

struct dt_scheduler;
typedef int (*pick_fn)(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                       double *scores);

typedef struct policy {
    const char *name;
    pick_fn pick;
    bool needs_belief;
} policy;

struct dt_scheduler {
    const policy *policy;
    dt_scheduler_params cfg;
    gsl_rng *rng;
    int cursor;           /* round robin: last task picked */
    int current;          /* sequential: task being tuned */
    double hazard[DT_SCHED_HAZARD_MAX];   /* h(m), parsed from cfg.hazard */
    int nhazard;
    double prior[DT_SCHED_HAZARD_MAX];    /* dynatune's h'(m), from cfg.prior_hazard */
    double stale[DT_SCHED_HAZARD_MAX];    /* dynatune's g(bucket), from cfg.staleness */
    int nstale;                           /* 0: no staleness factor */
    int nprior;
};

/* ---- helpers ---------------------------------------------------------------- */

static double latency_ms(double flops, double gflops)
{
    return gflops > 0 ? flops / (gflops * 1e9) * 1e3 : INFINITY;
}

double dt_sched_expected_reduction(const dt_sched_task *k)
{
    if (!k->pred_ok || k->best_gflops <= 0 || k->pred_gflops <= k->best_gflops)
        return 0.0;
    return k->weight * (latency_ms(k->flops, k->best_gflops) - latency_ms(k->flops, k->pred_gflops));
}

/* w_k x the task's latency at its best (ms); 0 before any measurement. */
static double task_latency(const dt_sched_task *k)
{
    return k->best_gflops > 0 ? k->weight * latency_ms(k->flops, k->best_gflops) : 0;
}

static bool pickable(const dt_sched_task *k, bool skip_finished)
{
    return !k->exhausted && !(skip_finished && k->finished);
}

static int count_pickable(const dt_sched_task *tasks, int n, bool skip_finished)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += pickable(&tasks[i], skip_finished);
    return c;
}

/* The j-th pickable task (0-based), or -1. */
static int nth_pickable(const dt_sched_task *tasks, int n, bool skip_finished, int j)
{
    for (int i = 0; i < n; i++)
        if (pickable(&tasks[i], skip_finished) && j-- == 0)
            return i;
    return -1;
}

static void clear_scores(double *scores, int n)
{
    for (int i = 0; scores && i < n; i++)
        scores[i] = -INFINITY;
}

static int argmax(const double *v, const dt_sched_task *tasks, int n, bool skip_finished)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (pickable(&tasks[i], skip_finished) && (best < 0 || v[i] > v[best]))
            best = i;
    return best;
}

/* ---- policies --------------------------------------------------------------- */

/* The belief's r_k with its predicted level held under the task's roofline
 * (dt_sched_roofline_level x peak): a curve fitted to a few noisy trials can
 * extrapolate past what the machine can do, and the cut it promises then is
 * one no slot can deliver. Without a level (no ceiling or no peak) r_k. */
static double capped_reduction(const dt_scheduler *s, const dt_sched_task *k)
{
    double level = dt_sched_roofline_level(k, s->cfg.ceiling, s->cfg.bandwidth_gbs);
    if (level <= 0 || k->pred_gflops <= level * k->peak_gflops)
        return dt_sched_expected_reduction(k);
    dt_sched_task capped = *k;
    capped.pred_gflops = fmax(level * k->peak_gflops, k->best_gflops);
    return dt_sched_expected_reduction(&capped);
}

/* DynaTune's predicted cut of task k's next slot. With a prior
 * (cfg.prior_slots m0 > 0) it is the cross-task prior cut
 * dt_sched_prior_share(prior_hazard, ceiling) w_k L_k and the belief's own r_k weighed as a posterior mean with m0 pseudo-slots
 * of prior against the task's m_k measured slots of data:
 *   (m0 h(m_k) w_k L_k + m_k r_k) / (m0 + m_k),
 * so a fresh task follows the prior and a long history its own curve; a
 * task the belief could not model gets the prior alone. Without a prior it
 * is r_k, NAN when the belief has none. */
static double dynatune_cut(const dt_scheduler *s, const dt_sched_task *k)
{
    double m0 = s->cfg.prior_slots, m = k->measured_slots;
    if (m0 <= 0)
        return k->pred_ok ? capped_reduction(s, k) : NAN;
    double prior = dt_sched_prior_share(k, s->prior, s->nprior, s->stale, s->nstale, s->cfg.ceiling,
                                        s->cfg.bandwidth_gbs, s->cfg.headroom) *
                   task_latency(k);
    if (!k->pred_ok)
        return prior;
    return (m0 * prior + m * capped_reduction(s, k)) / (m0 + m);
}

/* UCB1 (Auer et al. 2002) assumes rewards in [0, 1]: r_k is divided by the
 * largest r_j of this decision among the tasks that may be picked, so the
 * exploration term sqrt(C ln t / c_k) meets rewards of its own scale whatever
 * the model's latency (r_k in ms ranges over orders of magnitude between
 * models; unscaled, a bonus near 2 drowns every r_k below a millisecond). */
static int pick_dynatune(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                         double *scores)
{
    double u[n], r[n], rmax = 0, lsum = 0;
    bool prior = s->cfg.prior_slots > 0;
    for (int i = 0; i < n; i++) {
        r[i] = prior || tasks[i].slots > 0 ? dynatune_cut(s, &tasks[i]) : 0;
        if (pickable(&tasks[i], true) && r[i] > rmax)
            rmax = r[i];
        lsum += task_latency(&tasks[i]);
    }
    for (int i = 0; i < n; i++) {
        const dt_sched_task *k = &tasks[i];
        /* A played task without a predicted cut (too few trials yet, a
         * failed fit, no prior) is as unknown as an unplayed one: it gets
         * the largest reward of the decision, 1, and the bonus keeps it
         * from holding every slot. */
        double reward = isnan(r[i]) ? 1.0 : rmax > 0 ? r[i] / rmax : 0;
        /* Without a prior, unplayed tasks all score gamma (the paper);
         * among them the one with the largest share of the model's current
         * latency goes first. With one, an unplayed task has a predicted
         * cut like any other and counts its prior as one play. */
        double plays = k->slots + (prior ? 1 : 0);
        u[i] = plays == 0 ? s->cfg.gamma + (lsum > 0 ? task_latency(k) / lsum : 0)
                          : reward + sqrt(s->cfg.ucb_c * log((double)(t > 1 ? t : 1)) / plays);
        if (scores)
            scores[i] = pickable(k, true) ? u[i] : -INFINITY;
    }
    return argmax(u, tasks, n, true);
}

static int pick_sequential(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                           double *scores)
{
    clear_scores(scores, n);
    if (s->current < 0 || s->current >= n || !pickable(&tasks[s->current], true))
        s->current = nth_pickable(tasks, n, true, 0);
    if (scores && s->current >= 0)
        scores[s->current] = 1.0;
    return s->current;
}

static int round_robin(struct dt_scheduler *s, const dt_sched_task *tasks, int n,
                       double *scores, bool skip_finished)
{
    clear_scores(scores, n);
    for (int step = 1; step <= n; step++) {
        int i = (s->cursor + step) % n;
        if (pickable(&tasks[i], skip_finished)) {
            s->cursor = i;
            if (scores)
                scores[i] = 1.0;
            return i;
        }
    }
    return -1;
}

static int pick_round_robin(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                            double *scores)
{
    return round_robin(s, tasks, n, scores, false);
}

static int pick_da_round_robin(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                               double *scores)
{
    return round_robin(s, tasks, n, scores, true);
}

static int uniform(struct dt_scheduler *s, const dt_sched_task *tasks, int n, double *scores,
                   bool skip_finished)
{
    int c = count_pickable(tasks, n, skip_finished);
    clear_scores(scores, n);
    if (c == 0)
        return -1;
    for (int i = 0; scores && i < n; i++)
        if (pickable(&tasks[i], skip_finished))
            scores[i] = 1.0 / c;
    return nth_pickable(tasks, n, skip_finished, (int)gsl_rng_uniform_int(s->rng, (unsigned long)c));
}

static int pick_random(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                       double *scores)
{
    return uniform(s, tasks, n, scores, false);
}

static int pick_da_random(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                          double *scores)
{
    return uniform(s, tasks, n, scores, true);
}

/* Largest deficit between the task's FLOP share and its slot share. */
static int pick_linear(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                       double *scores)
{
    double total = 0, d[n];
    for (int i = 0; i < n; i++)
        total += tasks[i].weight * tasks[i].flops;
    for (int i = 0; i < n; i++) {
        double share = total > 0 ? tasks[i].weight * tasks[i].flops / total : 1.0 / n;
        d[i] = share * t - tasks[i].slots;
        if (scores)
            scores[i] = pickable(&tasks[i], false) ? d[i] : -INFINITY;
    }
    return argmax(d, tasks, n, false);
}

static int pick_eps_greedy(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                           double *scores)
{
    double r[n];
    for (int i = 0; i < n; i++) {
        r[i] = tasks[i].slots == 0 ? s->cfg.gamma : dt_sched_expected_reduction(&tasks[i]);
        if (scores)
            scores[i] = pickable(&tasks[i], true) ? r[i] : -INFINITY;
    }
    if (gsl_rng_uniform(s->rng) < s->cfg.epsilon)
        return uniform(s, tasks, n, NULL, true);
    return argmax(r, tasks, n, true);
}

static int pick_softmax(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                        double *scores)
{
    double r[n], p[n], rmax = 0, sum = 0;
    clear_scores(scores, n);
    for (int i = 0; i < n; i++) {
        if (pickable(&tasks[i], true) && tasks[i].slots == 0) {
            if (scores)
                scores[i] = 1.0;
            return i;  /* every task is tried once before sampling */
        }
        r[i] = dt_sched_expected_reduction(&tasks[i]);
        if (pickable(&tasks[i], true) && r[i] > rmax)
            rmax = r[i];
    }
    double scale = s->cfg.softmax_temperature * (rmax > 0 ? rmax : 1.0);
    for (int i = 0; i < n; i++) {
        p[i] = pickable(&tasks[i], true) ? exp((r[i] - rmax) / scale) : 0.0;
        sum += p[i];
    }
    if (sum <= 0)
        return -1;
    double u = gsl_rng_uniform(s->rng) * sum;
    int pick = -1;
    for (int i = 0; i < n; i++) {
        if (scores && p[i] > 0)
            scores[i] = p[i] / sum;
        if (pick < 0 && p[i] > 0 && (u -= p[i]) <= 0)
            pick = i;
    }
    return pick >= 0 ? pick : argmax(p, tasks, n, true);
}

/* Ansor: df/dt_i = w_i (alpha * backward + (1 - alpha) * forward), where the
 * backward difference is over the last `window` slots and the forward guess is
 * min(-g_i / t_i, beta * C_i / max_{k in N(i)} V_k - g_i); the task with the
 * most negative gradient gets the slot. Untuned tasks go first. */
#define ANSOR_ALPHA 0.2
#define ANSOR_BETA 2.0
#define ANSOR_WINDOW 3

static double ansor_gradient(const dt_sched_task *tasks, int n, int i)
{
    const dt_sched_task *k = &tasks[i];
    double g = k->nhistory ? k->latency_history[k->nhistory - 1] : latency_ms(k->flops, k->best_gflops);
    double backward = 0;
    if (k->nhistory > ANSOR_WINDOW) {
        double old = k->latency_history[k->nhistory - 1 - ANSOR_WINDOW];
        backward = (g - old) / ANSOR_WINDOW;
    }
    double best_speed = 0;  /* max V_k over the group: flop per ms */
    for (int j = 0; j < n; j++) {
        if (tasks[j].group != k->group || tasks[j].best_gflops <= 0)
            continue;
        double v = tasks[j].flops / latency_ms(tasks[j].flops, tasks[j].best_gflops);
        best_speed = v > best_speed ? v : best_speed;
    }
    double forward = -g / (k->slots > 0 ? k->slots : 1);
    if (best_speed > 0) {
        double guess = ANSOR_BETA * k->flops / best_speed - g;
        forward = guess < forward ? guess : forward;
    }
    return k->weight * (ANSOR_ALPHA * backward + (1 - ANSOR_ALPHA) * forward);
}

static int pick_gradient(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                         double *scores)
{
    double neg[n];
    for (int i = 0; i < n; i++) {
        neg[i] = tasks[i].slots == 0 || tasks[i].best_gflops <= 0 ? INFINITY
                                                                  : -ansor_gradient(tasks, n, i);
        if (scores)
            scores[i] = pickable(&tasks[i], true) ? neg[i] : -INFINITY;
    }
    if (gsl_rng_uniform(s->rng) < s->cfg.epsilon)
        return uniform(s, tasks, n, NULL, true);
    return argmax(neg, tasks, n, true);
}

/* A task without a measurement has no latency to weigh: it goes first. */
static double unmeasured_first(const dt_scheduler *s, const dt_sched_task *k, double score)
{
    return k->best_gflops > 0 ? score : s->cfg.gamma;
}

static int pick_weighted_rr(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                            double *scores)
{
    double w[n];
    for (int i = 0; i < n; i++) {
        w[i] = unmeasured_first(s, &tasks[i],
                                task_latency(&tasks[i]) / pow(tasks[i].slots + 1.0, 2.5));
        if (scores)
            scores[i] = pickable(&tasks[i], true) ? w[i] : -INFINITY;
    }
    return argmax(w, tasks, n, true);
}

double dt_sched_roofline_level(const dt_sched_task *k, double ceiling, double bandwidth_gbs)
{
    if (ceiling <= 0 || k->peak_gflops <= 0)
        return 0;
    double level = ceiling, bandwidth = bandwidth_gbs > 0 ? bandwidth_gbs : k->bandwidth_gbs;
    if (bandwidth > 0 && k->bytes > 0)
        level = fmin(level, k->flops / k->bytes * bandwidth / k->peak_gflops);
    return level;
}

static const char *const headroom_names[DT_SCHED_HEADROOM_COUNT] = {
    [DT_SCHED_HEADROOM_ROOFLINE] = "roofline", [DT_SCHED_HEADROOM_COST_MODEL] = "cost_model",
};

const char *dt_sched_headroom_at(int i)
{
    return i >= 0 && i < DT_SCHED_HEADROOM_COUNT ? headroom_names[i] : NULL;
}

double dt_sched_headroom_level(const dt_sched_task *k, double ceiling, double bandwidth_gbs,
                               dt_sched_headroom source)
{
    double roof = dt_sched_roofline_level(k, ceiling, bandwidth_gbs);
    if (source != DT_SCHED_HEADROOM_COST_MODEL || !(k->cost_model_gflops > 0) || k->peak_gflops <= 0)
        return roof;
    double estimate = k->cost_model_gflops / k->peak_gflops;
    return roof > 0 ? fmin(roof, estimate) : estimate;
}

int dt_sched_stale_bucket(int stale_trials)
{
    int b = 0;
    for (long edge = DT_SCHED_STALE_FIRST; stale_trials >= edge; edge *= 2)
        b++;
    return b;
}

double dt_sched_prior_share(const dt_sched_task *k, const double *h, int n, const double *g,
                            int ng, double ceiling, double bandwidth_gbs, dt_sched_headroom source)
{
    if (n <= 0)
        return 0;
    double share = h[k->measured_slots < n ? k->measured_slots : n - 1];
    if (ng > 0) {
        int b = dt_sched_stale_bucket(k->stale_trials);
        share *= g[b < ng ? b : ng - 1];
    }
    double level = dt_sched_headroom_level(k, ceiling, bandwidth_gbs, source);
    if (level <= 0)
        return share;
    return share * fmax(DT_SCHED_HEADROOM_FLOOR, 1 - k->best_gflops / k->peak_gflops / level);
}

double dt_sched_hazard_cut(const dt_sched_task *k, const double *h, int n)
{
    return dt_sched_prior_share(k, h, n, NULL, 0, 0, 0, DT_SCHED_HEADROOM_ROOFLINE) * task_latency(k);
}

static int pick_hazard(struct dt_scheduler *s, int t, const dt_sched_task *tasks, int n,
                       double *scores)
{
    double cut[n];
    for (int i = 0; i < n; i++) {
        cut[i] = unmeasured_first(s, &tasks[i], dt_sched_hazard_cut(&tasks[i], s->hazard, s->nhazard));
        if (scores)
            scores[i] = pickable(&tasks[i], true) ? cut[i] : -INFINITY;
    }
    return argmax(cut, tasks, n, true);
}

int dt_sched_hazard_parse(const char *text, double *h, int *n, dt_error *err)
{
    *n = 0;
    const char *p = text;
    while (*(p += strspn(p, " ,\t"))) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || !(v >= 0 && v <= 1) || (*end && !strchr(" ,\t", *end)))
            return dt_error_set(err, DT_EINVAL,
                                "hazard table '%s': entry %d is not a share in [0, 1]", text,
                                *n + 1);
        if (*n == DT_SCHED_HAZARD_MAX)
            return dt_error_set(err, DT_EINVAL, "hazard table '%s': more than %d entries", text,
                                DT_SCHED_HAZARD_MAX);
        h[(*n)++] = v;
        p = end;
    }
    if (*n == 0)
        return dt_error_set(err, DT_EINVAL, "hazard table is empty");
    return 0;
}

/* The first is the default. */
static const policy policies[] = {
    { "dynatune", pick_dynatune, true },
    { "sequential", pick_sequential, false },
    { "round_robin", pick_round_robin, false },
    { "random", pick_random, false },
    { "linear", pick_linear, false },
    { "da_random", pick_da_random, false },
    { "da_round_robin", pick_da_round_robin, false },
    { "eps_greedy", pick_eps_greedy, true },
    { "softmax", pick_softmax, true },
    { "gradient", pick_gradient, false },
    { "weighted_rr", pick_weighted_rr, false },
    { "hazard", pick_hazard, false },
};

#define NPOLICIES ((int)(sizeof policies / sizeof policies[0]))

dt_scheduler_params dt_scheduler_params_default(void)
{
    dt_scheduler_params p = {
        .ucb_c = 0.05, .gamma = 1e9, .finish_after = 200, .epsilon = 0.05,
        .softmax_temperature = 1, .prior_slots = 100, .ceiling = 1.2, .bandwidth_gbs = 0,
        .headroom = DT_SCHED_HEADROOM_COST_MODEL,
        .hazard = "0.46,0.050,0.015,0.0070,0.0064,0.0064,0.0044,0.0029",
        .prior_hazard = "0.80,0.35,0.092,0.047,0.035,0.035,0.018,0.018",
    };
    snprintf(p.policy, sizeof p.policy, "%s", policies[0].name);
    return p;
}

const char *dt_scheduler_policy_at(int i)
{
    return i >= 0 && i < NPOLICIES ? policies[i].name : NULL;
}

static const policy *find_policy(const char *name)
{
    for (int i = 0; i < NPOLICIES; i++)
        if (strcmp(policies[i].name, name) == 0)
            return &policies[i];
    return NULL;
}

int dt_scheduler_new(const char *name, const dt_scheduler_params *cfg, uint64_t seed,
                     dt_scheduler **out, dt_error *err)
{
    *out = NULL;
    const policy *p = find_policy(name);
    if (!p) {
        char known[512];
        dt_names_join(dt_scheduler_policy_at, known, sizeof known);
        return dt_error_set(err, DT_ENOTFOUND, "unknown scheduler policy '%s' (known: %s)", name,
                            known);
    }
    if ((unsigned)cfg->headroom >= DT_SCHED_HEADROOM_COUNT)
        return dt_error_set(err, DT_EINVAL, "scheduler: headroom source %d is not one of 0..%d",
                            (int)cfg->headroom, DT_SCHED_HEADROOM_COUNT - 1);
    double hazard[DT_SCHED_HAZARD_MAX], prior[DT_SCHED_HAZARD_MAX], stale[DT_SCHED_HAZARD_MAX];
    int nhazard, nprior, nstale = 0, rc = dt_sched_hazard_parse(cfg->hazard, hazard, &nhazard, err);
    if (rc || (rc = dt_sched_hazard_parse(cfg->prior_hazard, prior, &nprior, err)) ||
        (cfg->staleness[0] && (rc = dt_sched_hazard_parse(cfg->staleness, stale, &nstale, err))))
        return rc;
    dt_scheduler *s = calloc(1, sizeof *s);
    if (!s || !(s->rng = gsl_rng_alloc(gsl_rng_mt19937))) {
        free(s);
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    }
    gsl_rng_set(s->rng, (unsigned long)(seed ^ 0x5ced5ced5cedULL));
    s->policy = p;
    s->cfg = *cfg;
    s->cursor = -1;
    s->current = -1;
    memcpy(s->hazard, hazard, sizeof hazard);
    s->nhazard = nhazard;
    memcpy(s->prior, prior, sizeof prior);
    s->nprior = nprior;
    memcpy(s->stale, stale, sizeof stale);
    s->nstale = nstale;
    *out = s;
    return 0;
}

void dt_scheduler_free(dt_scheduler *s)
{
    if (!s)
        return;
    gsl_rng_free(s->rng);
    free(s);
}

void dt_scheduler_replay(dt_scheduler *s, int k)
{
    if (k < 0)
        return;
    s->cursor = k;
    s->current = k;
}

bool dt_scheduler_predicts(const dt_scheduler *s)
{
    return s->policy->needs_belief || s->policy->pick == pick_hazard;
}

double dt_scheduler_predicted_cut(const dt_scheduler *s, const dt_sched_task *task)
{
    if (s->policy->pick == pick_hazard)
        return dt_sched_hazard_cut(task, s->hazard, s->nhazard);
    if (s->policy->pick == pick_dynatune)
        return dynatune_cut(s, task);
    return s->policy->needs_belief ? dt_sched_expected_reduction(task) : NAN;
}

int dt_sched_optimum(const dt_sched_curve *tasks, int ntasks, const double *targets,
                     int ntargets, double *min_seconds, dt_error *err)
{
    int total = 0;
    for (int k = 0; k < ntasks; k++) {
        if (tasks[k].nslots < 0)
            return dt_error_set(err, DT_EINVAL, "optimum: task %d has %d slots", k, tasks[k].nslots);
        total += tasks[k].nslots;
    }
    /* lat[S], cost[S]: best allocation of S slots over the tasks so far. */
    double *lat = malloc((size_t)(total + 1) * 4 * sizeof *lat);
    if (!lat)
        return dt_error_set(err, DT_ENOMEM, "optimum: out of memory");
    double *cost = lat + total + 1, *nlat = cost + total + 1, *ncost = nlat + total + 1;
    lat[0] = cost[0] = 0;
    int reach = 0;  /* largest S so far */
    for (int k = 0; k < ntasks; k++) {
        const dt_sched_curve *c = &tasks[k];
        for (int S = 0; S <= reach + c->nslots; S++)
            nlat[S] = ncost[S] = INFINITY;
        for (int S = 0; S <= reach; S++)
            for (int j = 0; j <= c->nslots; j++) {
                double l = lat[S] + c->latency[j], t = cost[S] + c->cost[j];
                if (l < nlat[S + j] || (l == nlat[S + j] && t < ncost[S + j])) {
                    nlat[S + j] = l;
                    ncost[S + j] = t;
                }
            }
        reach += c->nslots;
        memcpy(lat, nlat, (size_t)(reach + 1) * sizeof *lat);
        memcpy(cost, ncost, (size_t)(reach + 1) * sizeof *cost);
    }
    for (int i = 0; i < ntargets; i++) {
        min_seconds[i] = INFINITY;
        for (int S = 0; S <= reach; S++)
            if (lat[S] <= targets[i] * (1 + 1e-12) && cost[S] < min_seconds[i])
                min_seconds[i] = cost[S];
    }
    free(lat);
    return 0;
}

bool dt_scheduler_needs_belief(const dt_scheduler *s)
{
    return s->policy->needs_belief;
}

int dt_scheduler_pick(dt_scheduler *s, int t, const dt_sched_task *tasks, int ntasks,
                      double *scores)
{
    if (ntasks <= 0)
        return -1;
    return s->policy->pick(s, t, tasks, ntasks, scores);
}
