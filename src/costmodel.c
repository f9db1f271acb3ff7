/* costmodel.c — XGBoost boosted trees as the per-task cost model.
 *
 * A fit builds one DMatrix of every measured row (labels normalised by the
 * best GFLOPS; for rank:pairwise one "group" holding all rows), creates a
 * booster, sets AutoTVM's parameters plus validate_parameters=1 so a
 * misspelt key is reported, and runs `rounds` boosting iterations. The new
 * booster replaces the old only when every step succeeded. Predictions use a
 * fresh DMatrix per call and copy XGBoost's float buffer into the caller's
 * doubles before the DMatrix is freed.
 */
#include "costmodel_internal.h"
#include "dtune/util.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

/* AutoTVM's fixed XGBoost parameters (xgboost_cost_model.py). */
#define DT_XGB_GAMMA "0.0001"
#define DT_XGB_MIN_CHILD_WEIGHT "1"
#define DT_XGB_LAMBDA "1"
#define DT_XGB_ALPHA "0"
#define DT_XGB_SUBSAMPLE "1"

struct dt_costmodel {
    dt_costmodel_params cfg;
    int nfeatures;
    uint64_t seed;
    BoosterHandle booster;     /* NULL until the first successful fit */
    float *labels;             /* fit workspace, grown on demand */
    int labels_cap;
    float *features;           /* predict_points workspace, grown on demand */
    int features_rows;
    dt_cancel cancel;
};

void dt_costmodel_set_cancel(dt_costmodel *cm, const dt_cancel *c)
{
    cm->cancel = c ? *c : (dt_cancel){ 0 };
}

/* XGBoost objectives the labels (gflops / best) suit: a ranking (the
 * default) or a regression. */
enum { OBJ_RANK, OBJ_REGRESSION, NOBJECTIVES };
static const char *const objectives[NOBJECTIVES] = {
    [OBJ_RANK] = "rank:pairwise", [OBJ_REGRESSION] = "reg:squarederror",
};

/* Turns a failed XGBoost call into DT_ELIB with XGBoost's own message. */
static int xgb_check(int rc, const char *what, dt_error *err)
{
    if (rc == 0)
        return 0;
    const char *msg = XGBGetLastError();
    return dt_error_set(err, DT_ELIB, "xgboost: %s failed: %s", what, msg ? msg : "(no message)");
}

dt_costmodel_params dt_costmodel_params_default(void)
{
    dt_costmodel_params p = { .threads = 1, .max_depth = 3, .eta = 0.3, .rounds = 100 };
    snprintf(p.objective, sizeof p.objective, "%s", objectives[OBJ_RANK]);
    return p;
}


const char *dt_costmodel_objective_at(int i)
{
    return i >= 0 && i < NOBJECTIVES ? objectives[i] : NULL;
}

static bool objective_known(const char *objective)
{
    for (int i = 0; dt_costmodel_objective_at(i); i++)
        if (strcmp(objective, objectives[i]) == 0)
            return true;
    return false;
}

int dt_costmodel_new(const dt_costmodel_params *cfg, int nfeatures, uint64_t seed,
                     dt_costmodel **out, dt_error *err)
{
    *out = NULL;
    if (!objective_known(cfg->objective)) {
        char known[128];
        dt_names_join(dt_costmodel_objective_at, known, sizeof known);
        return dt_error_set(err, DT_EINVAL, "cost model objective '%s' is not one of %s",
                            cfg->objective, known);
    }
    if (cfg->threads < 1 || cfg->max_depth < 1 || cfg->rounds < 1 || !(cfg->eta > 0) || nfeatures < 1)
        return dt_error_set(err, DT_EINVAL,
                            "cost model: threads %d, max_depth %d, rounds %d, eta %g, features %d "
                            "must all be positive", cfg->threads, cfg->max_depth, cfg->rounds,
                            cfg->eta, nfeatures);
    dt_costmodel *cm = calloc(1, sizeof *cm);
    if (!cm)
        return dt_error_set(err, DT_ENOMEM, "cost model: out of memory");
    cm->cfg = *cfg;
    cm->nfeatures = nfeatures;
    cm->seed = seed;
    *out = cm;
    return 0;
}

void dt_costmodel_free(dt_costmodel *cm)
{
    if (!cm)
        return;
    if (cm->booster)
        (void)XGBoosterFree(cm->booster);  /* a destructor has no one to tell */
    free(cm->labels);
    free(cm->features);
    free(cm);
}

size_t dt_costmodel_bytes(const dt_costmodel *cm)
{
    if (!cm)
        return 0;
    return (size_t)cm->labels_cap * sizeof *cm->labels +
           (size_t)cm->features_rows * (size_t)cm->nfeatures * sizeof *cm->features;
}

int dt_costmodel_nfeatures(const dt_costmodel *cm)
{
    return cm->nfeatures;
}

bool dt_costmodel_trained(const dt_costmodel *cm)
{
    return cm->booster != NULL;
}

/* Fills cm->labels[0..n) with gflops / the best of these n rows; returns
 * that best (0 if none valid). */
static double fill_labels(float *labels, const double *gflops, int n)
{
    double best = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(gflops[i]) && gflops[i] > best)
            best = gflops[i];
    for (int i = 0; i < n; i++) {
        bool ok = best > 0 && isfinite(gflops[i]) && gflops[i] > 0;
        labels[i] = ok ? (float)(gflops[i] / best) : 0.0f;
    }
    return best;
}

/* Labels normalised within each group; returns the largest group best. */
static double fill_group_labels(dt_costmodel *cm, const double *gflops, const dt_costmodel_rows *rows)
{
    if (!rows->group_sizes)
        return fill_labels(cm->labels, gflops, rows->n);
    double best = 0;
    for (int g = 0, first = 0; g < rows->ngroups; first += rows->group_sizes[g++])
        best = fmax(best, fill_labels(cm->labels + first, gflops + first, rows->group_sizes[g]));
    return best;
}

static bool groups_consistent(const dt_costmodel_rows *rows)
{
    if (!rows->group_sizes)
        return true;
    long long total = 0;
    for (int g = 0; g < rows->ngroups; g++) {
        if (rows->group_sizes[g] < 1)
            return false;
        total += rows->group_sizes[g];
    }
    return rows->ngroups >= 1 && total == rows->n;
}

static int grow_labels(dt_costmodel *cm, int n, dt_error *err)
{
    if (n <= cm->labels_cap)
        return 0;
    size_t cap = dt_grow_capacity((size_t)cm->labels_cap, (size_t)n);
    if (cap > INT_MAX || dt_resize(&cm->labels, cap, sizeof *cm->labels) != 0)
        return dt_error_set(err, DT_ENOMEM, "cost model: out of memory for %d labels", n);
    cm->labels_cap = (int)cap;
    return 0;
}

/* Ranking groups: the caller's, or one group of all rows. */
static int set_groups(DMatrixHandle dtrain, const dt_costmodel_rows *rows, dt_error *err)
{
    unsigned all = (unsigned)rows->n;
    if (!rows->group_sizes)
        return xgb_check(XGDMatrixSetUIntInfo(dtrain, "group", &all, 1),
                         "XGDMatrixSetUIntInfo(group)", err);
    unsigned *sizes = malloc((size_t)rows->ngroups * sizeof *sizes);
    if (!sizes)
        return dt_error_set(err, DT_ENOMEM, "cost model: out of memory for %d groups", rows->ngroups);
    for (int g = 0; g < rows->ngroups; g++)
        sizes[g] = (unsigned)rows->group_sizes[g];
    int rc = xgb_check(XGDMatrixSetUIntInfo(dtrain, "group", sizes, (bst_ulong)rows->ngroups),
                       "XGDMatrixSetUIntInfo(group)", err);
    free(sizes);
    return rc;
}

/* The training matrix: rows, labels, the base margin if any and (for
 * ranking) the groups. */
static int make_train_matrix(dt_costmodel *cm, const dt_costmodel_rows *rows,
                             DMatrixHandle *dtrain, dt_error *err)
{
    int n = rows->n;
    int rc = xgb_check(XGDMatrixCreateFromMat(rows->features, (bst_ulong)n, (bst_ulong)cm->nfeatures,
                                              NAN, dtrain), "XGDMatrixCreateFromMat", err);
    if (rc)
        return rc;
    rc = xgb_check(XGDMatrixSetFloatInfo(*dtrain, "label", cm->labels, (bst_ulong)n),
                   "XGDMatrixSetFloatInfo(label)", err);
    if (!rc && rows->base_margin)
        rc = xgb_check(XGDMatrixSetFloatInfo(*dtrain, "base_margin", rows->base_margin, (bst_ulong)n),
                       "XGDMatrixSetFloatInfo(base_margin)", err);
    if (!rc && strcmp(cm->cfg.objective, objectives[OBJ_RANK]) == 0)
        rc = set_groups(*dtrain, rows, err);
    if (rc) {
        (void)XGDMatrixFree(*dtrain);  /* cleanup after the error already reported */
        *dtrain = NULL;
    }
    return rc;
}

static int set_params(dt_costmodel *cm, BoosterHandle booster, dt_error *err)
{
    char depth[16], eta[32], threads[16], seed[32];
    snprintf(depth, sizeof depth, "%d", cm->cfg.max_depth);
    snprintf(eta, sizeof eta, "%.17g", cm->cfg.eta);
    snprintf(threads, sizeof threads, "%d", cm->cfg.threads);
    snprintf(seed, sizeof seed, "%u", (unsigned)(cm->seed & 0x7fffffffu));
    const char *params[][2] = {
        {"validate_parameters", "1"}, {"objective", cm->cfg.objective},
        {"max_depth", depth},         {"eta", eta},
        {"gamma", DT_XGB_GAMMA},      {"min_child_weight", DT_XGB_MIN_CHILD_WEIGHT},
        {"lambda", DT_XGB_LAMBDA},    {"alpha", DT_XGB_ALPHA},
        {"subsample", DT_XGB_SUBSAMPLE}, {"nthread", threads},
        {"seed", seed},
    };
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        char what[96];
        snprintf(what, sizeof what, "XGBoosterSetParam(%s=%s)", params[i][0], params[i][1]);
        int rc = xgb_check(XGBoosterSetParam(booster, params[i][0], params[i][1]), what, err);
        if (rc)
            return rc;
    }
    return 0;
}

static int train_booster(dt_costmodel *cm, DMatrixHandle dtrain, BoosterHandle *out, dt_error *err)
{
    BoosterHandle booster = NULL;
    int rc = xgb_check(XGBoosterCreate(&dtrain, 1, &booster), "XGBoosterCreate", err);
    if (rc)
        return rc;
    rc = set_params(cm, booster, err);
    for (int it = 0; !rc && it < cm->cfg.rounds; it++) {
        if (dt_cancel_now(&cm->cancel))
            rc = dt_error_set(err, DT_ECANCELED, "cost model: training stopped early");
        else
            rc = xgb_check(XGBoosterUpdateOneIter(booster, it, dtrain), "XGBoosterUpdateOneIter", err);
    }
    if (rc) {
        (void)XGBoosterFree(booster);  /* cleanup after the error already reported */
        return rc;
    }
    *out = booster;
    return 0;
}

int dt_costmodel_fit(dt_costmodel *cm, const float *features, const double *gflops,
                     int n, dt_error *err)
{
    dt_costmodel_rows rows = { .features = features, .n = n };
    return dt_costmodel_fit_rows(cm, &rows, gflops, err);
}

int dt_costmodel_fit_rows(dt_costmodel *cm, const dt_costmodel_rows *rows, const double *gflops,
                          dt_error *err)
{
    int n = rows->n;
    if (n < 1)
        return dt_error_set(err, DT_EINVAL, "cost model: fit needs at least one row");
    if (!groups_consistent(rows))
        return dt_error_set(err, DT_EINVAL, "cost model: %d groups do not partition %d rows",
                            rows->ngroups, n);
    int rc = grow_labels(cm, n, err);
    if (rc)
        return rc;
    if (fill_group_labels(cm, gflops, rows) <= 0)
        return 0;
    DMatrixHandle dtrain = NULL;
    rc = make_train_matrix(cm, rows, &dtrain, err);
    if (rc)
        return rc;
    BoosterHandle booster = NULL;
    rc = train_booster(cm, dtrain, &booster, err);
    int frc = xgb_check(XGDMatrixFree(dtrain), "XGDMatrixFree", rc ? NULL : err);
    if (!rc && frc) {
        (void)XGBoosterFree(booster);  /* the XGDMatrixFree error is the one reported */
        return frc;
    }
    if (rc)
        return rc;
    if (cm->booster)
        rc = xgb_check(XGBoosterFree(cm->booster), "XGBoosterFree", err);
    cm->booster = booster;   /* the new booster is good even if freeing the old failed */
    return rc;
}

int dt_costmodel_predict(dt_costmodel *cm, const float *features, int n,
                         double *scores, dt_error *err)
{
    if (!cm->booster)
        return dt_error_set(err, DT_EINVAL, "cost model: predict before the first fit");
    if (n < 0)
        return dt_error_set(err, DT_EINVAL, "cost model: negative row count %d", n);
    if (n == 0)
        return 0;
    DMatrixHandle dmat = NULL;
    int rc = xgb_check(XGDMatrixCreateFromMat(features, (bst_ulong)n, (bst_ulong)cm->nfeatures,
                                              NAN, &dmat), "XGDMatrixCreateFromMat", err);
    if (rc)
        return rc;
    bst_ulong len = 0;
    const float *result = NULL;
    rc = xgb_check(XGBoosterPredict(cm->booster, dmat, 0, 0, 0, &len, &result),
                   "XGBoosterPredict", err);
    if (!rc && len != (bst_ulong)n)
        rc = dt_error_set(err, DT_ELIB, "xgboost: predicted %llu scores for %d rows",
                          (unsigned long long)len, n);
    if (!rc)
        for (int i = 0; i < n; i++)
            scores[i] = result[i];
    int frc = xgb_check(XGDMatrixFree(dmat), "XGDMatrixFree", rc ? NULL : err);
    return rc ? rc : frc;
}

static int grow_features(dt_costmodel *cm, int n, dt_error *err)
{
    if (n <= cm->features_rows)
        return 0;
    size_t rows = dt_grow_capacity((size_t)cm->features_rows, (size_t)n);
    if (rows > INT_MAX || rows > SIZE_MAX / (size_t)cm->nfeatures
        || dt_resize(&cm->features, rows * (size_t)cm->nfeatures, sizeof *cm->features) != 0)
        return dt_error_set(err, DT_ENOMEM, "cost model: out of memory for %d feature rows", n);
    cm->features_rows = (int)rows;
    return 0;
}

int dt_costmodel_predict_points(dt_costmodel *cm, const dt_space *space,
                                const dt_point *points, int n, double *scores,
                                dt_error *err)
{
    if (space->nfeatures != cm->nfeatures)
        return dt_error_set(err, DT_EINVAL, "cost model: space has %d features, model %d",
                            space->nfeatures, cm->nfeatures);
    int rc = grow_features(cm, n, err);
    if (rc)
        return rc;
    for (int i = 0; i < n; i++)
        dt_space_features(space, &points[i], cm->features + (size_t)i * (size_t)cm->nfeatures);
    return dt_costmodel_predict(cm, cm->features, n, scores, err);
}
