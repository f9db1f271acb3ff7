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
 * Static policies keep handing slots to finished tasks (their time is spent
 * without gain, as in the paper's static allocation); exhausted tasks (every
 * valid point measured) are never picked.
 */
#ifndef DTUNE_SCHEDULER_H
#define DTUNE_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

#include "dtune/config.h"
#include "dtune/error.h"

#define DT_SCHED_WINDOW 8

/* What a policy sees of one task before a slot. */
typedef struct dt_sched_task {
    double weight;            /* w_k: occurrences in the model */
    double flops;             /* one execution */
    int group;                /* similarity group (gradient policy) */
    double best_gflops;       /* best measured; 0 when none */
    double pred_gflops;       /* belief: predicted best at the end of the next slot */
    bool pred_ok;             /* the belief model produced pred_gflops */
    int slots;                /* c_k: slots held so far */
    bool finished;            /* no improvement for finish_after trials */
    bool exhausted;           /* nothing left to measure */
    /* Latency (ms, one execution) after each of the task's last slots, newest
     * last, for the gradient policy's backward difference. */
    int nhistory;
    double latency_history[DT_SCHED_WINDOW];
} dt_sched_task;

typedef struct dt_scheduler dt_scheduler;

/* Policy by name (see above); DT_ENOTFOUND lists the names. */
int dt_scheduler_new(const char *policy, const dt_scheduler_config *cfg, uint64_t seed,
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

/* Comma-separated policy names. */
const char *dt_scheduler_policies(void);

/* Whether name is a policy. */
bool dt_scheduler_known(const char *name);

#endif
