/* scheduler.h — which task gets the next slot.
 *
 * Policies are one table of function pointers in scheduler.c, chosen by name:
 *   dynatune        UCB over the belief model's expected latency reduction
 *                   (DynaTune): u_k = r_k / max_j r_j + sqrt(C ln t / c_k),
 *                   r_k = w_k (flop_k / perf_best_k - flop_k / perf_pred_k);
 *                   the max runs over the tasks that may be picked, so
 *                   rewards lie in [0, 1] as UCB1 assumes; a played task
 *                   without a prediction (pred_ok false) gets reward 1. A task with
 *                   c_k = 0 scores gamma plus its share (0..1) of the model's
 *                   current latency, so unplayed tasks go first, largest first
 *   sequential      AutoTVM: each task until it is finished, in model order
 *   round_robin     static: every task in turn, finished or not
 *   random          static: uniformly random task
 *   linear          static: slots in proportion to each task's w_k * flop_k
 *   da_round_robin  dynamic allocation: round robin over unfinished tasks
 *   da_random       dynamic allocation: random unfinished task
 *   eps_greedy      largest expected reduction, random with probability epsilon
 *   softmax         random with p_k proportional to exp(r_k / (T * max r))
 *   gradient        Ansor's task scheduler (alpha 0.2, beta 2, backward
 *                   window 3, similarity groups by op kind and kernel)
 *   weighted_rr     the task of largest w_k L_k / (c_k + 1)^2.5 (L_k: its
 *                   latency at its best; a task's share of the slots falls
 *                   as it is played, slower for the tasks that weigh most)
 *   hazard          the task of largest predicted cut h(m_k) w_k L_k, where
 *                   h(m) is the share of its latency a task's (m+1)-th
 *                   measured slot cuts on average, learned across tasks
 *                   (scheduler.hazard; the last entry holds for later
 *                   slots) and m_k counts the slots that measured at least
 *                   one trial (a slot that measured nothing taught nothing)
 * dynatune's r_k, with scheduler.prior_slots m0 > 0, is a posterior mean:
 * the cross-task prior dt_sched_prior_share(prior_hazard, ceiling,
 * bandwidth_gbs) w_k L_k with weight m0 and the belief's r_k with weight
 * m_k (its measured slots); unplayed tasks are scored by the prior (no
 * gamma) and the bonus sqrt(C ln t / (c_k + 1)) counts the prior as one
 * play. The prior's cut is scaled by a factor of the task's staleness (the
 * trials measured since its best last improved, scheduler.staleness): a
 * task that has just improved is likely to improve again in its next slot,
 * one that has not for a hundred trials seldom is. The prior's headroom
 * (scheduler.headroom) rests on the roofline, or on the tuner's cost-model
 * estimate of the best the task can reach held under the roofline
 * (dt_sched_headroom_level). With m0 = 0 it is the paper's, as above.
 * Static policies keep handing slots to finished tasks (their time is spent
 * without gain, as in the paper's static allocation); exhausted tasks (every
 * valid point measured) are never picked.
 */
#ifndef DTUNE_SCHEDULER_H
#define DTUNE_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

#include "dtune/error.h"

#define DT_SCHED_WINDOW 8
#define DT_SCHED_HAZARD_MAX 16    /* entries of the hazard table at most */

/* The daemon's warm-up, before the first slot: each task measures batches
 * of DT_WARMUP_BATCH trials until one holds a valid config (a task still
 * without one after DT_WARMUP_MAX_TRIALS fails), so every task enters the
 * slots with a latency. bench/sched_bench replays it the same way. */
#define DT_WARMUP_BATCH 4
#define DT_WARMUP_MAX_TRIALS 64

/* Where dynatune's prior takes the level a task's headroom is measured
 * against (dt_sched_headroom_level); names by dt_sched_headroom_at. */
typedef enum dt_sched_headroom {
    DT_SCHED_HEADROOM_ROOFLINE,     /* "roofline": dt_sched_roofline_level */
    DT_SCHED_HEADROOM_COST_MODEL,   /* "cost_model": the cost model's estimate under it */
    DT_SCHED_HEADROOM_COUNT
} dt_sched_headroom;

/* The i-th headroom source's name, NULL past the last (dt_name_at_fn). */
const char *dt_sched_headroom_at(int i);

/* The scheduler's settings (config keys scheduler.*; the belief model's
 * scheduler.belief.* are dt_belief_params). */
typedef struct dt_scheduler_params {
    char policy[32];           /* one of dt_scheduler_policy_at's */
    double ucb_c;              /* exploration weight C of the UCB1 score */
    double gamma;              /* score of an unplayed task */
    int finish_after;          /* trials without improvement before a task is finished */
    double epsilon;            /* eps_greedy (and gradient): chance of a random task */
    double softmax_temperature;/* softmax */
    char hazard[160];          /* hazard: next-slot cut shares by measured slot */
    double prior_slots;        /* dynatune: weight of the hazard prior, in slots */
    char prior_hazard[160];    /* dynatune: the prior's cut shares by measured slot */
    double ceiling;            /* dynatune: the prior's efficiency ceiling (share of peak) */
    double bandwidth_gbs;      /* dynatune: the prior's roofline bandwidth; 0 = none */
    char staleness[160];       /* dynatune: the prior's factor by staleness bucket; "" = none */
    dt_sched_headroom headroom;/* dynatune: the level the prior's headroom is measured against */
} dt_scheduler_params;

/* The defaults (dtune check --help lists them): the table's first policy,
 * dynatune, and the hazard and prior tables fitted on bench/traces (README,
 * "Scheduler evaluation"). */
dt_scheduler_params dt_scheduler_params_default(void);

/* What a policy sees of one task before a slot. */
typedef struct dt_sched_task {
    double weight;            /* w_k: occurrences in the model */
    double flops;             /* one execution */
    double peak_gflops;       /* the target's peak for this task; 0 = unknown */
    double bytes;             /* compulsory traffic of one execution; 0 = unknown */
    double bandwidth_gbs;     /* the bound's bandwidth for the task (dt_task_bound's,
                                 roofline.h); 0 = unknown */
    int group;                /* similarity group (gradient policy) */
    double best_gflops;       /* best measured; 0 when none */
    double pred_gflops;       /* belief: predicted best at the end of the next slot */
    bool pred_ok;             /* the belief model produced pred_gflops */
    double cost_model_gflops; /* the tuner's cost-model estimate of the best the
                                 task can reach (dt_tuner_cost_model_gflops);
                                 0 = none */
    int slots;                /* c_k: slots held so far */
    int measured_slots;       /* m_k: those that measured at least one trial */
    int stale_trials;         /* trials measured since its best last improved */
    bool finished;            /* no improvement for finish_after trials */
    bool exhausted;           /* nothing left to measure */
    /* Latency (ms, one execution) after each of the task's last slots, newest
     * last, for the gradient policy's backward difference. */
    int nhistory;
    double latency_history[DT_SCHED_WINDOW];
} dt_sched_task;

typedef struct dt_scheduler dt_scheduler;

/* Policy by name (see above); DT_ENOTFOUND lists the names. */
int dt_scheduler_new(const char *policy, const dt_scheduler_params *cfg, uint64_t seed,
                     dt_scheduler **out, dt_error *err);
void dt_scheduler_free(dt_scheduler *s);

/* Whether the policy reads pred_gflops (so the caller must run the belief
 * model before each pick). */
bool dt_scheduler_needs_belief(const dt_scheduler *s);

/* Picks the task for slot t (1-based count of slots including this one).
 * Writes each task's score to scores (may be NULL; -inf for tasks it may not
 * pick). Returns the task index, or -1 when no task can be picked. */
int dt_scheduler_pick(dt_scheduler *s, int t, const dt_sched_task *tasks, int ntasks,
                      double *scores);

/* Tells the policy that slot went to task k without asking it (a resumed
 * run replaying its log), so stateful policies continue where they were:
 * round robin after k, sequential on k. */
void dt_scheduler_replay(dt_scheduler *s, int k);

/* Expected latency reduction r_k (ms) of one more slot of task k. */
double dt_sched_expected_reduction(const dt_sched_task *task);

/* The latency (ms) the hazard table predicts task's next slot to cut:
 * h(m_k) w_k L_k, h[m] for m < n, h[n - 1] after; 0 before a measurement. */
double dt_sched_hazard_cut(const dt_sched_task *task, const double *h, int n);

/* The share of its latency task's next slot is expected to cut under a
 * prior with a roofline: h(m_k) x max(DT_SCHED_HEADROOM_FLOOR, 1 - e_k / c_k),
 * e_k = best_gflops / peak_gflops (the task's efficiency) and c_k its level,
 * dt_sched_headroom_level: with the roofline,
 * min(ceiling, flops / bytes x bandwidth_gbs / peak_gflops): a task far
 * below the level it can reach gains more, and a memory-bound task's level
 * is its bytes moved at the bandwidth, not the FLOP peak. bandwidth_gbs <= 0:
 * the task's measured bandwidth_gbs (the bound's, roofline.h); neither, or
 * unknown bytes: the FLOP ceiling alone; no level (ceiling <= 0 or no peak,
 * and no cost-model estimate under DT_SCHED_HEADROOM_COST_MODEL): h(m_k)
 * alone. */
#define DT_SCHED_HEADROOM_FLOOR 0.05
/* A task's roofline level as a share of its peak: min(ceiling, flops / bytes
 * x bandwidth / peak_gflops), bandwidth the configured bandwidth_gbs when > 0,
 * else the task's measured one (the level the bound uses, roofline.h); the
 * FLOP ceiling alone when neither is known or bytes are unknown; 0 (no
 * level) when ceiling <= 0 or no peak.
 * dynatune bounds both its prior's headroom and its own curve's predicted
 * level by it. */
double dt_sched_roofline_level(const dt_sched_task *task, double ceiling, double bandwidth_gbs);
/* The level the prior's headroom is measured against, as a share of peak.
 * DT_SCHED_HEADROOM_ROOFLINE: dt_sched_roofline_level. _COST_MODEL: the
 * tuner's estimate of the best this task's space can reach,
 * cost_model_gflops / peak_gflops, held under the roofline level where
 * there is one (min of the two: the roofline bounds every config of every
 * space, the estimate is of this space from what the task measured, so a
 * task whose space cannot approach its roofline shows the headroom it
 * really has; an estimate above the roofline is one no config can meet).
 * Without an estimate (0: no cost model yet) or a peak, the roofline
 * level. */
double dt_sched_headroom_level(const dt_sched_task *task, double ceiling, double bandwidth_gbs,
                               dt_sched_headroom source);
/* The staleness factor, g[dt_sched_stale_bucket(stale_trials)] (the last
 * entry for later buckets), multiplies the share when ng > 0. */
double dt_sched_prior_share(const dt_sched_task *task, const double *h, int n, const double *g,
                            int ng, double ceiling, double bandwidth_gbs, dt_sched_headroom source);

/* The staleness bucket of a task that has measured stale_trials trials
 * since its best last improved: 0 below DT_SCHED_STALE_FIRST trials, then
 * one bucket per doubling (16-31, 32-63, 64-127, ...). */
#define DT_SCHED_STALE_FIRST 16
int dt_sched_stale_bucket(int stale_trials);

/* Parses a hazard table (shares in [0, 1], separated by spaces or commas,
 * 1..DT_SCHED_HAZARD_MAX of them) into h; *n gets the count. DT_EINVAL with
 * a message naming the bad entry. */
int dt_sched_hazard_parse(const char *text, double *h, int *n, dt_error *err);

/* The policy's own prediction of the latency (ms) task's next slot cuts:
 * the belief's r_k for belief policies (dynatune's blended with its prior),
 * the hazard cut for hazard; NAN for policies that predict nothing and for
 * a task dynatune has no prediction of. For displays (next to the scores of
 * dt_scheduler_pick) and for judging beliefs. */
bool dt_scheduler_predicts(const dt_scheduler *s);
double dt_scheduler_predicted_cut(const dt_scheduler *s, const dt_sched_task *task);

/* --- the exact optimum of a replay ------------------------------------------------
 * Tasks advance independently along their own curves, so a schedule's state
 * after any number of slots depends only on how many slots each task had.
 * Task k after s slots has latency latency[s] (w_k L_k, ms) and has spent
 * cost[s] seconds, s = 0..nslots. */
typedef struct dt_sched_curve {
    int nslots;
    const double *latency;
    const double *cost;
} dt_sched_curve;

/* The least seconds any schedule needs to bring the summed latency to or
 * below each of targets[0..ntargets) (INFINITY when none can), into
 * min_seconds. A dynamic programme over the total slot count S keeps, per S,
 * the allocation (s_1..s_n, sum S) of least summed latency (ties: least
 * cost); the answer is min over S whose latency meets the target of that
 * allocation's cost. Exact over slot counts when cost[s] is proportional to
 * s; where a curve's last slot is shorter (its trace ends inside it) the
 * reported cost is still the allocation's real one. O(n S_max max nslots).
 * 0, DT_EINVAL (negative nslots), DT_ENOMEM. */
int dt_sched_optimum(const dt_sched_curve *tasks, int ntasks, const double *targets,
                     int ntargets, double *min_seconds, dt_error *err);

/* The i-th policy's name in the table, NULL past the last (dt_name_at_fn). */
const char *dt_scheduler_policy_at(int i);

#endif
