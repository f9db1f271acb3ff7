/* tuner.h — the per-task tuner: a search strategy over one task's space, a
 * cost model, and the task's measured history, kept between calls.
 *
 * One dt_tuner belongs to one task. dt_tuner_run proposes batches, has the
 * caller's measure function time them, feeds the results back, and returns
 * when the budget (trials, seconds or the stop flag) is spent; everything it
 * learnt (cost model data, the PPO agent, annealing chains, the measured set,
 * the best config) stays in the tuner, so a scheduler can come back to the
 * task later and continue. dt_tuner_add_record feeds logged measurements in
 * on resume.
 *
 * Strategies (chosen by cfg->strategy, a table of function pointers):
 *   chameleon  PPO explorer on the cost model + adaptive sampling (Chameleon)
 *   autotvm    parallel simulated annealing on the same cost model, top batch
 *              by score with AutoTVM's 5 % random tail (AutoTVM's defaults)
 *   random     uniformly random unmeasured valid configs
 * Model-based strategies pick randomly until a first batch (batch_size
 * records, one of them valid) has been measured, as AutoTVM does; from then
 * on the cost model is refit after every measured batch.
 *
 * A batch never exceeds the remaining trial budget, never holds a config
 * twice and never holds a measured or invalid config. Not thread-safe: one
 * thread drives a tuner at a time (different tuners are independent).
 */
#ifndef DTUNE_TUNER_H
#define DTUNE_TUNER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dtune/costmodel.h"
#include "dtune/error.h"
#include "dtune/ppo.h"
#include "dtune/result.h"
#include "dtune/sampling.h"
#include "dtune/space.h"

/* batch_size and neighbours at most. */
#define DT_TUNER_MAX_BATCH 65536

/* The tuner's settings (config keys tuner.*), its parts' with them. */
typedef struct dt_tuner_params {
    char strategy[32];         /* one of dt_tuner_strategy_at's */
    int batch_size;            /* configs measured per round */
    double random_fraction;    /* autotvm's epsilon: random share of a batch */
    int neighbours;            /* chameleon: incumbent's neighbours measured per round */
    bool transfer;             /* start from the run's other tasks of the kind */
    dt_ppo_params ppo;
    dt_sampling_params sampling;
    dt_costmodel_params cost_model;
} dt_tuner_params;

/* The defaults (dtune check --help lists them): the table's first strategy,
 * chameleon, and the ppo, sampling and cost-model defaults. */
dt_tuner_params dt_tuner_params_default(void);

/* Measures a batch: results[i] belongs to points[i]. Returns how many points
 * were measured — n, or fewer (the first ones) when the budget or a stop
 * ended the batch early — or a negative DT_E* code (with err filled) when
 * measuring itself failed; a candidate's own failure is a result class, not
 * an error. The daemon's version also logs each record durably before
 * returning. */
typedef int (*dt_measure_fn)(void *ctx, const dt_space *space, const dt_point *points, int n,
                             dt_measure_result *results, dt_error *err);

typedef struct dt_tuner dt_tuner;

/* A tuner for space (borrowed: it must outlive the tuner) with the strategy
 * named by cfg->strategy (copied). seed fixes every random choice. Returns 0,
 * DT_ENOTFOUND (unknown strategy; the message lists the known ones),
 * DT_EINVAL (bad settings) or DT_ENOMEM. Free with dt_tuner_free. */
int dt_tuner_new(const dt_space *space, const dt_tuner_params *cfg, uint64_t seed,
                 dt_tuner **out, dt_error *err);

/* Accepts NULL. */
void dt_tuner_free(dt_tuner *t);

/* Feeds one measurement (e.g. replayed from the tuning log): marks p visited,
 * updates the best, adds a cost-model row (label 0 unless r->result is ok);
 * the model is refit lazily, before the next proposal. A point already
 * recorded is ignored. Returns 0, DT_EINVAL (p outside the space) or
 * DT_ENOMEM. */
int dt_tuner_add_record(dt_tuner *t, const dt_point *p, const dt_measure_result *r);

/* Sets the recorded GFLOPS of measured point p (a confirmation's median
 * replacing its first figure; 0: not valid) and recomputes the best.
 * Returns 1 when p was recorded, 0 when not (nothing changed). */
int dt_tuner_set_gflops(dt_tuner *t, const dt_point *p, double gflops);

/* Configs to measure before the strategy's own (a tuning database's best
 * configs, re-measured first since machines drift): up to
 * DT_TUNER_MAX_SEEDS of points, each proposed once unless already
 * measured; replaces seeds not yet proposed. Points outside the space are
 * dropped. Transfer's mapped configs (below) do not replace them. */
#define DT_TUNER_MAX_SEEDS 8
void dt_tuner_seed(dt_tuner *t, const dt_point *points, int n);

/* Transfer (cfg->transfer; transfer.h): gives the tuner what x knows of the
 * other tasks of its space's kind — a prior cost model trained on their
 * records, which the tuner's own model is then fitted on top of (AutoTVM's
 * discounted base margin), and, when the tuner has no record yet, their best
 * configs mapped into its space as its first batch. Call it before the
 * task's first dt_tuner_run (again later to refresh the prior). *used is the
 * number of other tasks' records the prior was trained on; 0 (and the tuner
 * unchanged, so it behaves exactly as without transfer) when cfg->transfer
 * is false, x is NULL, the strategy uses no model, or x has no valid record
 * of another task of the kind — a record of another kind (another machine's
 * vector width, another knob table) is never used. Returns 0, DT_ENOMEM or
 * DT_ELIB. */
struct dt_transfer;
int dt_tuner_transfer(dt_tuner *t, struct dt_transfer *x, int *used, dt_error *err);

/* 0 = unlimited for trials and seconds; *stop (may be NULL) ends the call
 * when non-zero. Both the stop flag and the seconds limit are checked
 * between batches and inside the tuner's long steps (cost-model training,
 * each PPO episode and update), which end early when either is hit; a batch
 * the measure function ends early ends the call. */
typedef struct dt_tuner_budget {
    int trials;
    double seconds;
    const atomic_int *stop;   /* set by a signal handler or another thread */
} dt_tuner_budget;

typedef struct dt_tuner_stats {
    int trials;                /* measured in this call */
    double wall_seconds;       /* the whole call */
    double overhead_seconds;   /* everything but the measure callback */
    double measure_seconds;    /* inside the measure callback */
    int improved;              /* new bests found in this call (0 = none) */
    long long scored;          /* configs the search asked the cost model to score (a
                                  chameleon walk step, an annealing move; the same on
                                  every machine, unlike the seconds) */
} dt_tuner_stats;

/* Runs the task until the budget is spent or every valid point is measured.
 * stats (may be NULL) is filled even on failure. Returns 0, the measure
 * function's error, DT_ELIB (cost model) or DT_ENOMEM; the records of a
 * batch whose measurement failed are not kept. */
int dt_tuner_run(dt_tuner *t, const dt_tuner_budget *b, dt_measure_fn measure, void *ctx,
                 dt_tuner_stats *stats, dt_error *err);

/* Best valid measurement so far into p and gflops (either may be NULL);
 * returns 0, or -1 when there is no valid measurement. */
int dt_tuner_best(const dt_tuner *t, dt_point *p, double *gflops);

/* The k best valid measured configs (k <= DT_TUNER_TOP_MAX), fastest first,
 * into out; returns how many (fewer when fewer are valid), or DT_ENOMEM. */
#define DT_TUNER_TOP_MAX 64
int dt_tuner_top(const dt_tuner *t, int k, dt_point *out);

/* The cost model's estimate of the best GFLOPS the task can reach, made
 * when the batch being measured (or the last one) was proposed: the
 * incumbent's measured GFLOPS plus the model's predicted gain of the batch's
 * best-scored config over the incumbent, turned into GFLOPS by the slope of
 * a least-squares line of measured GFLOPS on model score over the valid
 * records (rank:pairwise scores are margins of no fixed scale; the line
 * gives them one, and anchoring at the incumbent's measurement keeps the
 * line's misfit there out of the estimate). Never below the incumbent. 0
 * when there is none: a strategy without a model, no model yet (the first
 * batch), fewer than DT_TUNER_ESTIMATE_MIN_RECORDS valid records, or a
 * slope that is not positive (scores that do not rise with speed). Read it
 * from the measure function to log it with the batch's records. */
#define DT_TUNER_ESTIMATE_MIN_RECORDS 3
double dt_tuner_cost_model_gflops(const dt_tuner *t);

/* Measurements recorded (run and add_record together). */
int dt_tuner_trials(const dt_tuner *t);

/* Bytes t holds that grow with its records: the measured history (points,
 * features, GFLOPS, scores, the set of measured indices), the transfer
 * workspaces and the cost models' training workspaces. */
size_t dt_tuner_history_bytes(const dt_tuner *t);

/* Every valid point has been measured (known by enumeration for spaces of up
 * to 2^20 points; for larger ones, when a search for an unmeasured valid
 * point comes back empty). */
bool dt_tuner_exhausted(const dt_tuner *t);

/* The i-th strategy's name in the table, NULL past the last (dt_name_at_fn). */
const char *dt_tuner_strategy_at(int i);

#endif
