/* daemon_belief.c — the belief model between slots: every active task's
 * best-so-far curve, normalised by the target's peak, goes to the belief pool
 * (fits in parallel threads); the prediction at the end of the task's next
 * slot becomes best + expected improvement, the perf_pred of DynaTune's
 * reward. */
#include <stdlib.h>
#include <string.h>

#include "dtune/belief.h"
#include "daemon_internal.h"

static int open_pool(dt_run *r, dt_error *err)
{
    dt_belief_params p = r->cfg->belief;
    p.seed = r->cfg->seed;
    dt_belief_pool *pool;
    int rc = dt_belief_pool_new(&p, &pool, err);
    if (rc)
        return rc;
    r->belief = pool;
    return 0;
}

void dt_run_belief_free(dt_run *r)
{
    dt_belief_pool_free(r->belief);
    r->belief = NULL;
}

/* Trials the task's next slot is expected to take. */
static double next_slot_trials(const dt_run *r, const dt_run_task *tr)
{
    if (r->cfg->budget.slot_trials > 0)
        return r->cfg->budget.slot_trials;
    if (tr->last_slot_trials > 0)
        return tr->last_slot_trials;
    return r->cfg->tuner.batch_size;
}

/* 90 % interval of the best GFLOPS at the horizon: the best so far is kept,
 * so it is max(best, f(h)) with f(h) ~ N(mean, predictive_std²); its 5 % and
 * 95 % quantiles are the normal's, raised to the best so far. */
static void credible_interval(const dt_belief_prediction *p, double peak, double *lo, double *hi)
{
    const double z90 = 1.6448536269514722;
    double low = p->mean - z90 * p->predictive_std, high = p->mean + z90 * p->predictive_std;
    *lo = (low > p->best_observed ? low : p->best_observed) * peak;
    *hi = (high > p->best_observed ? high : p->best_observed) * peak;
}

/* The prediction's fitted curve from normalised units to GFLOPS. */
static void fit_gflops(const dt_belief_prediction *p, double peak, dt_belief_curve *fit)
{
    *fit = p->curve;
    for (int i = 0; i < fit->n; i++) {
        fit->median[i] *= peak;
        fit->lo[i] *= peak;
        fit->hi[i] *= peak;
    }
}

int dt_run_predict(dt_run *r, dt_error *err)
{
    int n = r->model->ntasks, rc = 0;
    if (!r->belief && (rc = open_pool(r, err)))
        return rc;
    dt_belief_history *hist = calloc((size_t)n, sizeof *hist);
    dt_belief_prediction *pred = calloc((size_t)n, sizeof *pred);
    double **ys = calloc((size_t)n, sizeof *ys);
    if (!hist || !pred || !ys) {
        rc = dt_error_set(err, DT_ENOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; k < n; k++) {
        dt_run_task *tr = &r->tasks[k];
        if (!(ys[k] = malloc((size_t)(tr->ncurve ? tr->ncurve : 1) * sizeof **ys))) {
            rc = dt_error_set(err, DT_ENOMEM, "out of memory");
            goto done;
        }
        if (tr->ncurve > 0 && (rc = dt_belief_normalize(tr->curve, tr->ncurve, tr->peak_gflops, ys[k], err)))
            goto done;
        hist[k] = (dt_belief_history){ .x = NULL, .y = ys[k], .n = tr->ncurve,
                                       .horizon = tr->ncurve + next_slot_trials(r, tr),
                                       .stream = dt_belief_task_stream(k, tr->ncurve) };
    }
    if ((rc = dt_belief_pool_predict(r->belief, hist, n, pred, err)))
        goto done;
    for (int k = 0; k < n; k++) {
        dt_run_task *tr = &r->tasks[k];
        tr->pred_ok = pred[k].ok;
        tr->pred.gflops = (pred[k].best_observed + pred[k].expected_improvement) * tr->peak_gflops;
        credible_interval(&pred[k], tr->peak_gflops, &tr->pred.lo_gflops, &tr->pred.hi_gflops);
        tr->pred.horizon = hist[k].horizon;
        fit_gflops(&pred[k], tr->peak_gflops, &tr->fit);
    }
done:
    for (int k = 0; ys && k < n; k++)
        free(ys[k]);
    free(ys);
    free(hist);
    free(pred);
    return rc;
}
