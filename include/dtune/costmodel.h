/* costmodel.h — the boosted-tree cost model of one task (XGBoost C API).
 *
 * The model learns GFLOPS normalised by the task's best measured GFLOPS from
 * the feature vectors of dt_space_features, with AutoTVM's parameters
 * (max_depth 3, eta 0.3, gamma 1e-4, min_child_weight 1, lambda 1) and the
 * objective rank:pairwise (every row in one query group) or reg:squarederror.
 * Invalid and failed measurements are rows with label 0. Each fit trains a
 * fresh booster on every row given (the tuner refits after each measured
 * batch); each prediction builds a fresh DMatrix and copies the scores out of
 * XGBoost's buffer, so no XGBoost memory outlives a call.
 *
 * Scores are only comparable within one fit: under rank:pairwise they are
 * margins whose scale is arbitrary; under reg:squarederror they approximate
 * GFLOPS ÷ best GFLOPS.
 *
 * Every XGBoost return code is checked; a failure is DT_ELIB with
 * XGBGetLastError's text in the dt_error.
 */
#ifndef DTUNE_COSTMODEL_H
#define DTUNE_COSTMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "dtune/error.h"
#include "dtune/space.h"

/* The model's settings (config keys tuner.cost_model.*). */
typedef struct dt_costmodel_params {
    char objective[32];        /* one of dt_costmodel_objective_at's */
    int threads;               /* XGBoost threads */
    int max_depth;             /* tree depth */
    double eta;                /* XGBoost learning rate */
    int rounds;                /* boosting rounds per fit */
} dt_costmodel_params;

/* The defaults (dtune check --help lists them): the first objective,
 * rank:pairwise, and AutoTVM's depth and learning rate. */
dt_costmodel_params dt_costmodel_params_default(void);

typedef struct dt_costmodel dt_costmodel;

/* The i-th XGBoost objective the model accepts, NULL past the last
 * (a dt_name_at_fn). */
const char *dt_costmodel_objective_at(int i);

/* A model for rows of nfeatures floats. cfg is copied; its objective must be
 * one of dt_costmodel_objective_at's (else DT_EINVAL); threads, max_depth,
 * rounds >= 1, eta > 0. seed makes XGBoost's own randomness repeatable.
 * Returns 0, DT_EINVAL or DT_ENOMEM. Free with dt_costmodel_free. */
int dt_costmodel_new(const dt_costmodel_params *cfg, int nfeatures, uint64_t seed,
                     dt_costmodel **out, dt_error *err);

/* Accepts NULL. */
void dt_costmodel_free(dt_costmodel *cm);

/* Trains a fresh booster on n rows: features is n * nfeatures floats,
 * row-major; gflops[i] is row i's measured GFLOPS (<= 0, NaN or inf for an
 * invalid or failed measurement: label 0). Labels are gflops / max gflops.
 * When no row has positive GFLOPS there is nothing to learn: the previous
 * booster (if any) is kept and 0 is returned. Returns 0, DT_EINVAL (n < 1),
 * DT_ENOMEM or DT_ELIB; on failure the previous booster is kept, except
 * when only freeing it failed (DT_ELIB, the new booster is in place). */
int dt_costmodel_fit(dt_costmodel *cm, const float *features, const double *gflops,
                     int n, dt_error *err);

/* Asked before each boosting round of a fit; when it says stop, the fit
 * ends with DT_ECANCELED and the previous booster is kept. c is copied;
 * NULL removes it. */
void dt_costmodel_set_cancel(dt_costmodel *cm, const dt_cancel *c);

/* Rows of a fit beyond dt_costmodel_fit's: groups of consecutive rows
 * (group_sizes[0..ngroups), summing to n; NULL = one group of all rows), each
 * normalised by its own best GFLOPS and ranked only within itself (rows of
 * several tasks in one fit); and an optional base margin per row (NULL =
 * none), the score the new trees add to (AutoTVM's transfer: a prior
 * model's discounted scores). */
typedef struct dt_costmodel_rows {
    const float *features;     /* n * nfeatures floats, row-major */
    int n;
    const int *group_sizes;
    int ngroups;
    const float *base_margin;
} dt_costmodel_rows;

/* dt_costmodel_fit over rows (same labels, same return codes; DT_EINVAL also
 * when the groups do not partition the rows). Predictions of the result do
 * not include the base margin: a caller that fitted with one adds it. */
int dt_costmodel_fit_rows(dt_costmodel *cm, const dt_costmodel_rows *rows, const double *gflops,
                          dt_error *err);

/* Whether a booster has been trained (predictions mean something). */
bool dt_costmodel_trained(const dt_costmodel *cm);

/* Bytes of cm's workspaces that grow with the rows it is given (labels and
 * feature rows; not XGBoost's booster, whose size the rounds bound); 0 for
 * NULL. */
size_t dt_costmodel_bytes(const dt_costmodel *cm);

/* Scores of n rows (n * nfeatures floats) into scores[0..n). Higher is
 * faster. DT_EINVAL when untrained or n < 0; DT_ELIB on an XGBoost error. */
int dt_costmodel_predict(dt_costmodel *cm, const float *features, int n,
                         double *scores, dt_error *err);

/* The same for n points of space (space->nfeatures must equal the model's
 * nfeatures); features go through a buffer the model owns and grows only when
 * a larger n arrives. */
int dt_costmodel_predict_points(dt_costmodel *cm, const dt_space *space,
                                const dt_point *points, int n, double *scores,
                                dt_error *err);

#endif
