/* tuner_autotvm.c — the `autotvm` strategy: AutoTVM's model-based tuner with
 * its parallel simulated annealing, at AutoTVM's defaults.
 *
 * After each refit, 128 persistent Markov chains walk the space for at most
 * 500 steps on the cost model's scores (a step sets one random knob to a
 * random other option; a move is accepted with probability
 * exp(min((s' − s) / (T + 1e-5), 1)), T falling linearly from 1 to 0), and
 * stop early once 50 steps pass without the heap of the best batch_size
 * unmeasured configs seen changing. The batch is the heap, best first,
 * except that the last ⌊random_fraction × batch_size⌋ places of the plan go
 * to uniformly random unmeasured configs (AutoTVM's epsilon-greedy tail).
 * The chains persist between batches and between calls.
 */
#include "tuner_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SA_CHAINS 128
#define SA_STEPS 500
#define SA_EARLY_STOP 50
#define SA_T0 1.0
#define SA_T1 0.0
#define SA_WALK_TRIES 16

typedef struct sa_state {
    bool started;
    dt_point points[SA_CHAINS], next[SA_CHAINS];
    double scores[SA_CHAINS], next_scores[SA_CHAINS];
    int plan, heap_n;          /* heap of the best `plan` unmeasured configs */
    double *heap_score;
    dt_point *heap_point;
    uint64_t *heap_index;
    dt_point *sorted;          /* the heap, best first */
} sa_state;

static void sa_destroy(void *state)
{
    sa_state *sa = state;
    if (!sa)
        return;
    free(sa->heap_score);
    free(sa->heap_point);
    free(sa->heap_index);
    free(sa->sorted);
    free(sa);
}

static int sa_create(dt_tuner *t, void **state, dt_error *err)
{
    sa_state *sa = calloc(1, sizeof *sa);
    if (!sa)
        return dt_error_set(err, DT_ENOMEM, "autotvm: out of memory");
    sa->plan = t->cfg.batch_size;
    sa->heap_score = calloc((size_t)sa->plan, sizeof *sa->heap_score);
    sa->heap_point = calloc((size_t)sa->plan, sizeof *sa->heap_point);
    sa->heap_index = calloc((size_t)sa->plan, sizeof *sa->heap_index);
    sa->sorted = calloc((size_t)sa->plan, sizeof *sa->sorted);
    if (!sa->heap_score || !sa->heap_point || !sa->heap_index || !sa->sorted) {
        sa_destroy(sa);
        return dt_error_set(err, DT_ENOMEM, "autotvm: out of memory");
    }
    *state = sa;
    return 0;
}

/* ---- a min-heap on score ---------------------------------------------------------- */

static void heap_swap(sa_state *sa, int a, int b)
{
    double s = sa->heap_score[a];
    dt_point p = sa->heap_point[a];
    uint64_t i = sa->heap_index[a];
    sa->heap_score[a] = sa->heap_score[b], sa->heap_point[a] = sa->heap_point[b];
    sa->heap_index[a] = sa->heap_index[b];
    sa->heap_score[b] = s, sa->heap_point[b] = p, sa->heap_index[b] = i;
}

static void sift_up(sa_state *sa, int i)
{
    while (i > 0 && sa->heap_score[(i - 1) / 2] > sa->heap_score[i]) {
        heap_swap(sa, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void sift_down(sa_state *sa, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < sa->heap_n && sa->heap_score[l] < sa->heap_score[m]) m = l;
        if (r < sa->heap_n && sa->heap_score[r] < sa->heap_score[m]) m = r;
        if (m == i)
            return;
        heap_swap(sa, i, m);
        i = m;
    }
}

static bool in_heap(const sa_state *sa, uint64_t index)
{
    for (int i = 0; i < sa->heap_n; i++)
        if (sa->heap_index[i] == index)
            return true;
    return false;
}

/* Offers a scored config to the heap; returns whether the heap changed. */
static bool heap_offer(sa_state *sa, const dt_tuner *t, const dt_point *p, double score)
{
    if (sa->heap_n == sa->plan && score <= sa->heap_score[0])
        return false;
    uint64_t index = dt_space_index(t->space, p);
    if (dt_sampling_set_has(&t->measured, index) || in_heap(sa, index) ||
        !dt_space_valid(t->space, p))
        return false;
    int slot = sa->heap_n < sa->plan ? sa->heap_n++ : 0;
    sa->heap_score[slot] = score, sa->heap_point[slot] = *p, sa->heap_index[slot] = index;
    if (slot == 0 && sa->heap_n == sa->plan)
        sift_down(sa, 0);
    else
        sift_up(sa, slot);
    return true;
}

/* ---- annealing ------------------------------------------------------------------------ */

/* AutoTVM's random walk: one random knob moves to a random other option. */
static void random_walk(dt_tuner *t, const dt_point *from, dt_point *to)
{
    const dt_space *sp = t->space;
    for (int tries = 0; tries < SA_WALK_TRIES; tries++) {
        *to = *from;
        int k = (int)gsl_rng_uniform_int(t->rng, (unsigned long)sp->nknobs);
        int n = sp->knobs[k].noptions;
        if (n < 2)
            continue;
        int o = (int)gsl_rng_uniform_int(t->rng, (unsigned long)(n - 1));
        to->opt[k] = (int16_t)(o >= from->opt[k] ? o + 1 : o);
        dt_space_canonical(sp, to);
        if (dt_space_valid(sp, to))
            return;
    }
    *to = *from;
}

static int start_chains(sa_state *sa, dt_tuner *t, dt_error *err)
{
    if (!sa->started) {
        for (int i = 0; i < SA_CHAINS; i++)
            dt_space_random(t->space, t->rng, &sa->points[i]);
        sa->started = true;
    }
    int rc = dt_tuner_score(t, sa->points, SA_CHAINS, sa->scores, err);
    if (rc)
        return rc;
    sa->heap_n = 0;
    for (int i = 0; i < SA_CHAINS; i++)
        heap_offer(sa, t, &sa->points[i], sa->scores[i]);
    return 0;
}

/* One annealing step of every chain at temperature temp; *changed says whether the heap changed. */
static int anneal_step(sa_state *sa, dt_tuner *t, double temp, bool *changed, dt_error *err)
{
    for (int i = 0; i < SA_CHAINS; i++)
        random_walk(t, &sa->points[i], &sa->next[i]);
    int rc = dt_tuner_score(t, sa->next, SA_CHAINS, sa->next_scores, err);
    if (rc)
        return rc;
    *changed = false;
    for (int i = 0; i < SA_CHAINS; i++) {
        double accept = exp(fmin((sa->next_scores[i] - sa->scores[i]) / (temp + 1e-5), 1.0));
        if (gsl_rng_uniform(t->rng) < accept) {
            sa->points[i] = sa->next[i];
            sa->scores[i] = sa->next_scores[i];
        }
    }
    for (int i = 0; i < SA_CHAINS; i++)
        *changed |= heap_offer(sa, t, &sa->next[i], sa->next_scores[i]);
    return 0;
}

static int anneal(sa_state *sa, dt_tuner *t, dt_error *err)
{
    int rc = start_chains(sa, t, err);
    double temp = SA_T0, cool = (SA_T0 - SA_T1) / (SA_STEPS + 1);
    for (int k = 0, last_change = 0; !rc && k < SA_STEPS && k < last_change + SA_EARLY_STOP; k++) {
        bool changed = false;
        rc = anneal_step(sa, t, temp, &changed, err);
        if (changed)
            last_change = k;
        temp -= cool;
    }
    return rc;
}

static int sa_propose(void *state, dt_tuner *t, int max, dt_point *out, int *n, dt_error *err)
{
    sa_state *sa = state;
    int rc = anneal(sa, t, err);
    if (rc)
        return rc;
    int ranked = sa->heap_n;
    for (int i = ranked - 1; i >= 0; i--) {   /* pop the heap: best first */
        sa->sorted[i] = sa->heap_point[0];
        heap_swap(sa, 0, --sa->heap_n);
        sift_down(sa, 0);
    }
    /* The plan's last ⌊ε·plan⌋ places are random (AutoTVM's epsilon-greedy). */
    int greedy = ranked - (int)(t->cfg.random_fraction * sa->plan);
    *n = 0;
    for (int i = 0; i < greedy && *n < max; i++) {
        if (dt_sampling_set_add(&t->batch_taken, dt_space_index(t->space, &sa->sorted[i])) < 0)
            return dt_error_set(err, DT_ENOMEM, "autotvm: out of memory");
        out[(*n)++] = sa->sorted[i];
    }
    if (*n < max)
        *n += dt_tuner_random_points(t, max - *n, out + *n);
    return 0;
}

const dt_tuner_strategy_i dt_tuner_autotvm = {
    .name = "autotvm",
    .uses_model = true,
    .create = sa_create,
    .propose = sa_propose,
    .destroy = sa_destroy,
};
