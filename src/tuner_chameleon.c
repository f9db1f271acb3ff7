/* tuner_chameleon.c — the `chameleon` strategy: Chameleon's adaptive
 * exploration (PPO on the cost model) followed by adaptive sampling.
 *
 * The first round, before the cost model has data, samples adaptively from
 * batch_size random configs (the knee of uniform candidates is at k_min, so
 * it measures k_min spread-out configs rather than a full random batch).
 *
 * A round (one batch): `episodes` episodes, alternately starting from one of
 * the best measured configs and from a random valid config. Each step the
 * agent picks decrement / stay / increment per knob; a move past a knob's
 * first or last option leaves the knob where it is, and a move onto an
 * invalid config is refused (the config stays). The episode ends after
 * max_steps or when at least 75 % of the knobs did not move in a step. The
 * reward of a step is the cost model's score of the config it reached,
 * measured from the lowest score of a measured config and divided by the
 * standard deviation of those scores (rank scores have no fixed scale), and
 * floored at 0; the agent is updated with PPO after every episode.
 *
 * Why non-negative: Chameleon's reward is the model's predicted fitness,
 * which is never negative. Standardising around the mean made every config
 * worse than the average measured one cost reward, and an episode can always
 * end itself (let ≥ 75 % of the knobs stay), so the agent learnt to stop at
 * once from such starts: random-start episodes lasted ~6 steps and a round
 * visited ~150 distinct configs. With the floor a step never pays less than
 * stopping, random starts walk as far as the others and a round visits
 * ~1,000–3,000 (replay surface, layer1_3x3).
 *
 * With episodes_per_config set, a round runs that many episodes per config
 * the previous round measured, when that is fewer than `episodes`: adaptive
 * sampling decides how many configs a round measures (with k_min 4 and the
 * incumbent's neighbours all measured, 4), and an explorer of fixed cost per
 * round would cost small rounds the most per measurement (on the real CPU
 * 5.5 % of the wall time with k_min 4 and 128 episodes a round against 3.1 %
 * with k_min 8; README, "Transfer between tasks").
 *
 * Every unmeasured config visited in the round is a candidate; the
 * best-scored DT_TUNER_POOL_PER_BATCH × batch_size of them go, best first, to
 * adaptive sampling (k-means, knee, mode synthesis), which measures the
 * best-scored member of each kept cluster. The agent persists across rounds
 * and calls.
 *
 * Each round then adds up to `neighbours` (tuner.neighbours) of the best
 * measured config's unmeasured one-step neighbours (one knob one option up or
 * down), best-scored first: a local refinement next to the clusters. The
 * clusters spread the batch over the explorer's promising regions, but the
 * trees score many configs next to the incumbent alike, so without this step
 * chameleon can stop one or two knob steps short of the best config for
 * hundreds of trials (tuner_bench; figures in README's results table).
 */
#include "tuner_impl.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/ppo.h"
#include "dtune/util.h"

/* Episodes from measured configs start at one of the best this many. */
#define CHAM_TOP_STARTS 16
/* At most this many distinct visited configs are kept per round. */
#define CHAM_POOL_MAX (1 << 20)

typedef struct scored {
    double score;
    int index;
} scored;

typedef struct cham_state {
    dt_ppo *agent;
    int episodes, max_steps;
    int episodes_per_config;
    int last_round;            /* configs the previous round proposed; 0: none yet */
    dt_point *traj;            /* max_steps */
    double *traj_scores, *rewards;
    int pool_cap, pool_n;      /* every unmeasured config visited this round */
    dt_point *pool;
    double *pool_score;
    scored *ranked;
    dt_point *cands;           /* the best-scored pool entries */
    int cands_cap;
    dt_sampling_set seen;
    int records_cap;           /* per-record workspaces, grown per round */
    int *order;
    double *record_scores;
    double reward_origin, reward_scale;
} cham_state;

static void cham_destroy(void *state)
{
    cham_state *c = state;
    if (!c)
        return;
    dt_ppo_free(c->agent);
    free(c->traj); free(c->traj_scores); free(c->rewards);
    free(c->pool); free(c->pool_score); free(c->ranked); free(c->cands);
    free(c->order); free(c->record_scores);
    dt_sampling_set_free(&c->seen);
    free(c);
}

static int cham_create(dt_tuner *t, void **state, dt_error *err)
{
    cham_state *c = calloc(1, sizeof *c);
    if (!c)
        return dt_error_set(err, DT_ENOMEM, "chameleon: out of memory");
    *state = c;
    int rc = dt_ppo_new(&t->cfg.ppo, t->space->nknobs, t->seed + 2, &c->agent, err);
    if (rc)
        return rc;
    dt_ppo_set_cancel(c->agent, &t->cancel);
    c->episodes = t->cfg.ppo.episodes;
    c->max_steps = t->cfg.ppo.max_steps;
    c->episodes_per_config = t->cfg.ppo.episodes_per_config;
    long long pool_cap = (long long)c->episodes * c->max_steps;
    c->pool_cap = pool_cap < CHAM_POOL_MAX ? (int)pool_cap : CHAM_POOL_MAX;
    c->cands_cap = DT_TUNER_POOL_PER_BATCH * t->cfg.batch_size;
    size_t steps = (size_t)c->max_steps, pool = (size_t)c->pool_cap;
    c->traj = calloc(steps, sizeof *c->traj);
    c->traj_scores = calloc(steps, sizeof *c->traj_scores);
    c->rewards = calloc(steps, sizeof *c->rewards);
    c->pool = calloc(pool, sizeof *c->pool);
    c->pool_score = calloc(pool, sizeof *c->pool_score);
    c->ranked = calloc(pool, sizeof *c->ranked);
    c->cands = calloc((size_t)c->cands_cap, sizeof *c->cands);
    if (!c->traj || !c->traj_scores || !c->rewards || !c->pool || !c->pool_score ||
        !c->ranked || !c->cands || dt_sampling_set_init(&c->seen))
        return dt_error_set(err, DT_ENOMEM, "chameleon: out of memory for %d candidates",
                            c->pool_cap);
    return 0;
}

/* ---- per-round preparation ---------------------------------------------------------- */

static int grow_records(cham_state *c, int n, dt_error *err)
{
    if (n <= c->records_cap)
        return 0;
    size_t cap = dt_grow_capacity((size_t)c->records_cap, (size_t)n);
    if (cap > INT_MAX || dt_resize(&c->order, cap, sizeof *c->order) != 0
        || dt_resize(&c->record_scores, cap, sizeof *c->record_scores) != 0)
        return dt_error_set(err, DT_ENOMEM, "chameleon: out of memory for %d records", n);
    c->records_cap = (int)cap;
    return 0;
}

/* The reward's origin (the lowest model score of a measured config) and
 * scale (1 / the standard deviation of those scores). */
static int reward_normaliser(cham_state *c, dt_tuner *t, dt_error *err)
{
    c->reward_origin = 0;
    c->reward_scale = 1;
    if (t->n == 0)
        return 0;   /* a prior's first round: no measured config to scale by */
    int rc = dt_tuner_score_records(t, c->record_scores, err);
    if (rc)
        return rc;
    double mean = 0, var = 0, lowest = c->record_scores[0];
    for (int i = 0; i < t->n; i++) {
        mean += c->record_scores[i] / t->n;
        lowest = fmin(lowest, c->record_scores[i]);
    }
    for (int i = 0; i < t->n; i++)
        var += (c->record_scores[i] - mean) * (c->record_scores[i] - mean) / t->n;
    c->reward_origin = lowest;
    c->reward_scale = var > 1e-24 ? 1 / sqrt(var) : 1.0;
    return 0;
}

/* ---- one episode ---------------------------------------------------------------------- */

/* Applies actions to p into q; returns whether ≥ 75 % of the knobs stayed. */
static bool apply_actions(const dt_space *sp, const dt_point *p, const int *actions, dt_point *q)
{
    int still = 0;
    *q = *p;
    for (int k = 0; k < sp->nknobs; k++) {
        int v = p->opt[k] + actions[k] - DT_PPO_STAY;
        if (v < 0 || v >= sp->knobs[k].noptions || v == p->opt[k]) {
            still++;
            continue;
        }
        q->opt[k] = (int16_t)v;
    }
    dt_space_canonical(sp, q);
    if (!dt_space_valid(sp, q))
        *q = *p;
    return 4 * still >= 3 * sp->nknobs;
}

/* Walks from start; returns the number of steps and whether it terminated. */
static int walk(cham_state *c, dt_tuner *t, const dt_point *start, bool *terminal)
{
    double state[DT_MAX_KNOBS];
    int actions[DT_MAX_KNOBS];
    dt_point p = *start;
    *terminal = false;
    dt_ppo_episode_begin(c->agent);
    int steps = 0;
    /* each act is a forward pass of the policy: a large one must not hold
     * the run past its budget or a stop request */
    while (steps < c->max_steps && !*terminal && !(steps > 0 && dt_tuner_time_up(t))) {
        dt_space_normalised(t->space, &p, state);
        dt_ppo_act(c->agent, state, actions);
        *terminal = apply_actions(t->space, &p, actions, &c->traj[steps]);
        p = c->traj[steps++];
    }
    return steps;
}

/* Adds the unmeasured configs of the trajectory to the round's pool. */
static void collect(cham_state *c, dt_tuner *t, int steps)
{
    for (int s = 0; s < steps && c->pool_n < c->pool_cap; s++) {
        uint64_t idx = dt_space_index(t->space, &c->traj[s]);
        if (dt_sampling_set_has(&t->measured, idx) || dt_sampling_set_add(&c->seen, idx) != 1)
            continue;
        c->pool[c->pool_n] = c->traj[s];
        c->pool_score[c->pool_n++] = c->traj_scores[s];
    }
}

static int episode(cham_state *c, dt_tuner *t, const dt_point *start, dt_error *err)
{
    bool terminal;
    int steps = walk(c, t, start, &terminal);
    int rc = dt_tuner_score(t, c->traj, steps, c->traj_scores, err);
    if (rc)
        return rc;
    for (int s = 0; s < steps; s++)
        c->rewards[s] = fmax(0.0, (c->traj_scores[s] - c->reward_origin) * c->reward_scale);
    double last_value = 0;
    if (!terminal) {
        double state[DT_MAX_KNOBS];
        dt_space_normalised(t->space, &c->traj[steps - 1], state);
        last_value = dt_ppo_value(c->agent, state);
    }
    rc = dt_ppo_episode_end(c->agent, c->rewards, last_value, NULL);
    collect(c, t, steps);
    return rc == DT_ECANCELED ? dt_error_set(err, rc, "chameleon: stopped in a PPO update") : 0;
}

/* ---- the round ------------------------------------------------------------------------- */

static int by_score_desc(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return x->index - y->index;
}

/* The best-scored pool entries into c->cands; returns how many. */
static int best_candidates(cham_state *c)
{
    for (int i = 0; i < c->pool_n; i++)
        c->ranked[i] = (scored){ .score = c->pool_score[i], .index = i };
    qsort(c->ranked, (size_t)c->pool_n, sizeof *c->ranked, by_score_desc);
    int m = c->pool_n < c->cands_cap ? c->pool_n : c->cands_cap;
    for (int i = 0; i < m; i++)
        c->cands[i] = c->pool[c->ranked[i].index];
    return m;
}

/* This round's episodes: `episodes`, or episodes_per_config for each config
 * the previous round proposed when that is fewer. */
static int round_episodes(const cham_state *c)
{
    if (c->episodes_per_config == 0 || c->last_round == 0)
        return c->episodes;
    long long e = (long long)c->episodes_per_config * c->last_round;
    return e < c->episodes ? (int)e : c->episodes;
}

static int explore(cham_state *c, dt_tuner *t, dt_error *err)
{
    int valid = dt_tuner_best_records(t, c->order);
    int top = valid < CHAM_TOP_STARTS ? valid : CHAM_TOP_STARTS;
    c->pool_n = 0;
    dt_sampling_set_clear(&c->seen);
    int episodes = round_episodes(c);
    for (int e = 0; e < episodes; e++) {
        if (dt_tuner_time_up(t))
            return dt_error_set(err, DT_ECANCELED, "chameleon: stopped between PPO episodes");
        dt_point start;
        if (e % 2 == 0 && top > 0)
            start = t->points[c->order[(e / 2) % top]];
        else
            dt_space_random(t->space, t->rng, &start);
        int rc = episode(c, t, &start, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Marks the chosen batch as taken. */
static int take(dt_tuner *t, const dt_point *batch, int n, dt_error *err)
{
    for (int i = 0; i < n; i++)
        if (dt_sampling_set_add(&t->batch_taken, dt_space_index(t->space, &batch[i])) < 0)
            return dt_error_set(err, DT_ENOMEM, "chameleon: out of memory");
    return 0;
}

/* Appends up to max of the best measured config's unmeasured, untaken valid
 * one-step neighbours to out, best-scored first. */
static int incumbent_neighbours(dt_tuner *t, int max, dt_point *out, int *n, dt_error *err)
{
    dt_point best, near[2 * DT_MAX_KNOBS];
    double score[2 * DT_MAX_KNOBS];
    scored rank[2 * DT_MAX_KNOBS];
    if (max <= 0 || dt_tuner_best(t, &best, NULL))
        return 0;
    int all = dt_space_neighbours(t->space, &best, near), m = 0;
    for (int i = 0; i < all; i++) {
        uint64_t idx = dt_space_index(t->space, &near[i]);
        if (!dt_sampling_set_has(&t->measured, idx) && !dt_sampling_set_has(&t->batch_taken, idx))
            near[m++] = near[i];
    }
    if (m == 0)
        return 0;
    int rc = dt_tuner_score(t, near, m, score, err);
    if (rc)
        return rc;
    for (int i = 0; i < m; i++)
        rank[i] = (scored){ .score = score[i], .index = i };
    qsort(rank, (size_t)m, sizeof *rank, by_score_desc);
    for (int i = 0; i < m && i < max; i++)
        out[(*n)++] = near[rank[i].index];
    return 0;
}

static int cham_propose(void *state, dt_tuner *t, int max, dt_point *out, int *n, dt_error *err)
{
    cham_state *c = state;
    *n = 0;
    int rc = grow_records(c, t->n, err);
    if (!rc)
        rc = reward_normaliser(c, t, err);
    if (!rc)
        rc = explore(c, t, err);
    if (rc)
        return rc;
    int m = best_candidates(c);
    int local = t->cfg.neighbours < max ? t->cfg.neighbours : max - 1;
    rc = dt_sampling_select(t->sampler, c->cands, m, &t->measured, max - local, out, n, NULL, err);
    if (!rc)
        rc = take(t, out, *n, err);
    int sampled = *n;
    if (!rc)
        rc = incumbent_neighbours(t, local, out, n, err);
    c->last_round = *n;
    return rc ? rc : take(t, out + sampled, *n - sampled, err);
}

/* The first round: with no cost model to explore, the candidates are
 * batch_size uniformly random configs, and adaptive sampling measures the
 * representatives of their clusters as it does every round. For uniform
 * candidates the loss falls by far less than the threshold when k doubles, so
 * the knee is at k_min: the first round measures k_min spread-out configs,
 * not a batch_size of random ones, and the model is fitted after it. */
static int cham_propose_untrained(void *state, dt_tuner *t, int max, dt_point *out, int *n,
                                  dt_error *err)
{
    cham_state *c = state;
    *n = 0;
    bool dry;
    int m = dt_tuner_draw_random(t, c->cands_cap, c->cands, &dry);
    dt_sampling_set_clear(&t->batch_taken);
    int rc = dt_sampling_select(t->sampler, c->cands, m, &t->measured, max, out, n, NULL, err);
    if (dry && *n == m)
        t->exhausted = true;    /* every valid point left is in this batch */
    c->last_round = *n;
    return rc ? rc : take(t, out, *n, err);
}

const dt_tuner_strategy_i dt_tuner_chameleon = {
    .name = "chameleon",
    .uses_model = true,
    .create = cham_create,
    .propose = cham_propose,
    .propose_untrained = cham_propose_untrained,
    .destroy = cham_destroy,
};
