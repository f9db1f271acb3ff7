/* tuner_impl.h — internal to the tuner: the tuner's state, the strategy
 * interface the files tuner_chameleon.c, tuner_autotvm.c and tuner_random.c
 * implement, and the helpers of tuner_search.c they search with. Not for
 * callers outside the tuner. */
#ifndef DTUNE_TUNER_IMPL_H
#define DTUNE_TUNER_IMPL_H

#include <gsl/gsl_rng.h>

#include "dtune/costmodel.h"
#include "dtune/sampling.h"
#include "dtune/transfer.h"
#include "dtune/tuner.h"

/* A search strategy. propose writes up to max (≥ 1) distinct, valid,
 * unmeasured points to out and their number to *n; it is called only once the
 * cost model is trained when uses_model is true. Before that the tuner calls
 * propose_untrained, with the same contract, or picks max random points when
 * that slot is NULL; the model is first fitted once a batch_size of records
 * is in, or any record when propose_untrained is set (its batches may be
 * smaller). Returning *n = 0 makes the tuner fall back to random points. */
typedef struct dt_tuner_strategy_i {
    const char *name;
    bool uses_model;
    int (*create)(dt_tuner *t, void **state, dt_error *err);
    int (*propose)(void *state, dt_tuner *t, int max, dt_point *out, int *n, dt_error *err);
    int (*propose_untrained)(void *state, dt_tuner *t, int max, dt_point *out, int *n,
                             dt_error *err);
    void (*destroy)(void *state);
} dt_tuner_strategy_i;

/* Chameleon's candidate pool (the explorer's best-scored unmeasured configs
 * handed to adaptive sampling) holds this many configs per batch slot. */
#define DT_TUNER_POOL_PER_BATCH 1

/* A score memo (own_memo, prior_memo) is emptied past this many configs, so a
 * long task's memo stays within a few megabytes. */
#define DT_TUNER_MEMO_MAX (1 << 16)

extern const dt_tuner_strategy_i dt_tuner_chameleon;
extern const dt_tuner_strategy_i dt_tuner_autotvm;
extern const dt_tuner_strategy_i dt_tuner_random;

struct dt_tuner {
    const dt_space *space;
    dt_tuner_params cfg;
    uint64_t seed;
    gsl_rng *rng;
    const dt_tuner_strategy_i *strategy;
    void *state;
    /* measured history (the cost model's training data) */
    int n, cap;
    dt_point *points;
    float *features;           /* n × space->nfeatures */
    double *gflops;            /* 0 for failed measurements */
    dt_sampling_set measured;
    int best;                  /* record index, -1 if none valid */
    double best_gflops;
    int64_t valid_total;       /* valid points in the space, -1 not yet known */
    int valid_measured;
    uint64_t count_next;       /* the space's points before this index are counted */
    int64_t valid_seen;        /* valid points among them */
    bool exhausted;
    /* cost model */
    dt_costmodel *model;
    bool model_stale;          /* records added since the last fit */
    /* transfer (dt_tuner_transfer): a prior model on shape-relative
     * features whose scores, discounted by prior_weight, the model's own
     * scores add to; and mapped configs to measure first */
    dt_costmodel *prior;       /* NULL: no transfer */
    double prior_weight;
    int nseeds;
    dt_point seeds[DT_TUNER_MAX_SEEDS];   /* >= DT_TRANSFER_SEEDS */
    int prior_cap;             /* rows of the workspaces below */
    float *prior_rows;
    double *prior_out;
    float *margins;            /* one per record, for fits on the prior */
    /* A model's score of a config is fixed until the model is fitted again,
     * and chameleon's walks and autotvm's annealing come back to the same
     * configs many times a round: scores by config index, own_memo emptied
     * at each fit of the own model, prior_memo when the prior is replaced. */
    dt_sampling_set own_memo, prior_memo;
    int memo_cap;              /* entries of the miss workspaces below */
    uint64_t *memo_keys;       /* config index of each point scored */
    int *miss_at;              /* the points not in the memo ... */
    dt_point *miss_points;
    double *miss_scores;       /* ... and their predicted scores */
    /* helpers and batch buffers */
    dt_sampling *sampler;      /* also finds unmeasured points */
    dt_sampling_set batch_taken;
    dt_point *batch;
    dt_measure_result *results;
    double *batch_scores;      /* batch_size: the cost model's scores of t->batch */
    double *record_scores;     /* cap: its scores of the records */
    double cost_model_gflops;  /* dt_tuner_cost_model_gflops; 0 = none */
    long long scored;          /* configs dt_tuner_score was asked for, memo hits included */
    /* the budget of the dt_tuner_run in progress (NULL outside one) */
    const dt_tuner_budget *run_budget;
    double run_started;
    dt_cancel cancel;          /* asks dt_tuner_time_up; for the long steps */
};

/* ---- tuner_search.c ---- */

/* Whether the running call's stop flag is set or its seconds are spent:
 * long steps (PPO episodes and updates, cost-model training) end early. */
bool dt_tuner_time_up(const dt_tuner *t);

/* Adds up to max random distinct unmeasured valid points to out (skipping
 * those already in t->batch_taken, and adding the new ones to it); returns
 * how many; *dry says whether the draw stopped because none was left. */
int dt_tuner_draw_random(dt_tuner *t, int max, dt_point *out, bool *dry);

/* Whether p is measured or already in the batch being drawn. */
bool dt_tuner_taken(const dt_tuner *t, const dt_point *p);

/* dt_tuner_draw_random that also sets t->exhausted when the draw ran dry:
 * for strategies that measure every point they draw. */
int dt_tuner_random_points(dt_tuner *t, int max, dt_point *out);

/* The cost model's scores of n points (higher is faster): the tuner's own
 * model, plus the prior's discounted scores under transfer, or the prior's
 * alone before the own model's first fit. Callable when dt_tuner_model_ready.
 * The search's requests: n is added to t->scored. Returns 0, DT_ENOMEM or
 * DT_ELIB. */
int dt_tuner_score(dt_tuner *t, const dt_point *points, int n, double *scores, dt_error *err);

/* The transfer prior's scores of n points into t->prior_out (its feature
 * workspaces grown as needed). Returns 0, DT_ENOMEM or DT_ELIB. */
int dt_tuner_prior_scores(dt_tuner *t, const dt_point *points, int n, dt_error *err);

/* dt_tuner_score of every record, in record order (t->n scores); not
 * counted in t->scored. */
int dt_tuner_score_records(dt_tuner *t, double *scores, dt_error *err);

/* Whether dt_tuner_score means something: the own model or a prior is in. */
bool dt_tuner_model_ready(const dt_tuner *t);

/* Indices of the records sorted by measured GFLOPS, best first, into order
 * (t->n ints); returns how many have positive GFLOPS. */
int dt_tuner_best_records(const dt_tuner *t, int *order);

#endif
