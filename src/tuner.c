/* tuner.c — the per-task tuner's state, history and run loop.
 *
 * The tuner owns the measured history (points, feature rows, GFLOPS), the
 * measured set, the best record, the cost model and the strategy's state.
 * dt_tuner_run repeats: refit the cost model if records arrived since the
 * last fit; ask the strategy for a batch (random, or the strategy's own
 * model-free pick, until the model has its first data); score the batch
 * for the model's estimate of the best reachable (dt_tuner_cost_model_gflops);
 * call the measure function; record the results. The
 * time spent outside the measure function is the tuner's overhead.
 * Strategies are found by name in one table.
 *
 * Transfer (dt_tuner_transfer) adds a prior: a cost model of the other tasks
 * of the kind, on shape-relative features. As in AutoTVM's transfer
 * learning, the task's own model is then fitted on top of the prior's
 * scores (XGBoost's base margin) discounted by 2^(−n/64) for n own records,
 * so the prior speaks for the first rounds and fades as the task's own data
 * grows; before the first own fit the prior alone scores. The mapped best
 * configs of the other tasks are the first batch. Without a prior every
 * path is the plain tuner's, step for step.
 */
#include "tuner_impl.h"
#include "tuner_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtune/ppo.h"
#include "dtune/util.h"

/* Spaces up to this size are counted (lazily, see count_ahead), so
 * exhaustion is exact; a larger space is exhausted only when a draw runs dry. */
#define DT_TUNER_COUNT_LIMIT (1u << 20)

/* The first is the default. */
static const dt_tuner_strategy_i *const strategies[] = {
    &dt_tuner_chameleon, &dt_tuner_autotvm, &dt_tuner_random,
};
#define NSTRATEGIES ((int)(sizeof strategies / sizeof strategies[0]))

const char *dt_tuner_strategy_at(int i)
{
    return i >= 0 && i < NSTRATEGIES ? strategies[i]->name : NULL;
}

static const dt_tuner_strategy_i *find_strategy(const char *name)
{
    for (int i = 0; i < NSTRATEGIES; i++)
        if (strcmp(strategies[i]->name, name) == 0)
            return strategies[i];
    return NULL;
}

static int tuner_cancelled(void *ctx)
{
    return dt_tuner_time_up(ctx);
}

dt_tuner_params dt_tuner_params_default(void)
{
    dt_tuner_params p = {
        .batch_size = 64, .random_fraction = 0.05, .neighbours = 4, .transfer = true,
        .ppo = dt_ppo_params_default(), .sampling = dt_sampling_params_default(),
        .cost_model = dt_costmodel_params_default(),
    };
    snprintf(p.strategy, sizeof p.strategy, "%s", strategies[0]->name);
    return p;
}

/* ---- lifecycle ------------------------------------------------------------------ */

static int check_config(const dt_tuner_params *cfg, dt_error *err)
{
    if (cfg->batch_size < 1 || cfg->batch_size > DT_TUNER_MAX_BATCH)
        return dt_error_set(err, DT_EINVAL, "tuner: batch_size %d outside 1..%d",
                            cfg->batch_size, DT_TUNER_MAX_BATCH);
    if (!(cfg->random_fraction >= 0 && cfg->random_fraction <= 1))
        return dt_error_set(err, DT_EINVAL, "tuner: random_fraction %g outside [0, 1]",
                            cfg->random_fraction);
    if (cfg->neighbours < 0 || cfg->neighbours > DT_TUNER_MAX_BATCH)
        return dt_error_set(err, DT_EINVAL, "tuner: neighbours %d outside 0..%d", cfg->neighbours,
                            DT_TUNER_MAX_BATCH);
    return 0;
}

static int alloc_parts(dt_tuner *t, dt_error *err)
{
    int rc = dt_costmodel_new(&t->cfg.cost_model, t->space->nfeatures, t->seed, &t->model, err);
    if (rc)
        return rc;
    t->cancel = (dt_cancel){ tuner_cancelled, t };
    dt_costmodel_set_cancel(t->model, &t->cancel);
    int pool = DT_TUNER_POOL_PER_BATCH * t->cfg.batch_size;
    rc = dt_sampling_new(t->space, &t->cfg.sampling, pool, t->cfg.batch_size, t->seed + 1,
                         &t->sampler, err);
    if (rc)
        return rc;
    t->rng = gsl_rng_alloc(gsl_rng_mt19937);
    t->batch = calloc((size_t)t->cfg.batch_size, sizeof *t->batch);
    t->results = calloc((size_t)t->cfg.batch_size, sizeof *t->results);
    t->batch_scores = calloc((size_t)t->cfg.batch_size, sizeof *t->batch_scores);
    if (!t->rng || !t->batch || !t->results || !t->batch_scores ||
        dt_sampling_set_init(&t->measured) || dt_sampling_set_init(&t->batch_taken) ||
        dt_sampling_set_init_values(&t->own_memo) || dt_sampling_set_init_values(&t->prior_memo))
        return dt_error_set(err, DT_ENOMEM, "tuner: out of memory");
    gsl_rng_set(t->rng, (unsigned long)(t->seed ^ (t->seed >> 32)) + 13);
    return 0;
}

/* Exhaustion asks only whether a valid point is left unmeasured, so the space
 * is enumerated in index order just far enough to have seen one valid point
 * more than have been measured; reaching its end gives the exact count. The
 * work follows the trials (about trials / valid fraction points), not the
 * space's size, so a run starts without walking every task's space. */
static void count_ahead(dt_tuner *t)
{
    const dt_space *s = t->space;
    if (t->valid_total >= 0 || s->size > DT_TUNER_COUNT_LIMIT)
        return;
    dt_point p;
    while (t->valid_seen <= t->valid_measured && t->count_next < s->size) {
        dt_space_point(s, t->count_next++, &p);
        t->valid_seen += dt_space_valid(s, &p);
    }
    if (t->count_next == s->size)
        t->valid_total = t->valid_seen;
}

int dt_tuner_new(const dt_space *space, const dt_tuner_params *cfg, uint64_t seed,
                 dt_tuner **out, dt_error *err)
{
    *out = NULL;
    const dt_tuner_strategy_i *strategy = find_strategy(cfg->strategy);
    if (!strategy) {
        char known[128];
        dt_names_join(dt_tuner_strategy_at, known, sizeof known);
        return dt_error_set(err, DT_ENOTFOUND, "tuner strategy '%s' is not one of %s",
                            cfg->strategy, known);
    }
    int rc = check_config(cfg, err);
    if (rc)
        return rc;
    dt_tuner *t = calloc(1, sizeof *t);
    if (!t)
        return dt_error_set(err, DT_ENOMEM, "tuner: out of memory");
    t->space = space;
    t->cfg = *cfg;
    t->seed = seed;
    t->strategy = strategy;
    t->best = -1;
    t->valid_total = -1;
    count_ahead(t);
    rc = alloc_parts(t, err);
    if (!rc)
        rc = strategy->create(t, &t->state, err);
    if (rc) {
        dt_tuner_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

void dt_tuner_free(dt_tuner *t)
{
    if (!t)
        return;
    if (t->state)
        t->strategy->destroy(t->state);
    dt_costmodel_free(t->model);
    dt_costmodel_free(t->prior);
    free(t->prior_rows);
    free(t->prior_out);
    free(t->margins);
    dt_sampling_free(t->sampler);
    if (t->rng)
        gsl_rng_free(t->rng);
    dt_sampling_set_free(&t->measured);
    dt_sampling_set_free(&t->batch_taken);
    dt_sampling_set_free(&t->own_memo);
    dt_sampling_set_free(&t->prior_memo);
    free(t->memo_keys);
    free(t->miss_at);
    free(t->miss_points);
    free(t->miss_scores);
    free(t->points);
    free(t->features);
    free(t->gflops);
    free(t->batch);
    free(t->results);
    free(t->batch_scores);
    free(t->record_scores);
    free(t);
}

/* ---- history ------------------------------------------------------------------------ */

static int grow_history(dt_tuner *t)
{
    if (t->n < t->cap)
        return 0;
    size_t cap = dt_grow_capacity((size_t)t->cap, (size_t)t->n + 1);
    size_t nf = (size_t)t->space->nfeatures;
    if (cap > INT_MAX || (nf && cap > SIZE_MAX / nf)
        || dt_resize(&t->points, cap, sizeof *t->points) != 0
        || dt_resize(&t->features, cap * nf, sizeof *t->features) != 0
        || dt_resize(&t->gflops, cap, sizeof *t->gflops) != 0
        || dt_resize(&t->record_scores, cap, sizeof *t->record_scores) != 0)
        return DT_ENOMEM;
    t->cap = (int)cap;
    return 0;
}

static bool in_space(const dt_space *space, const dt_point *p)
{
    for (int k = 0; k < space->nknobs; k++)
        if (p->opt[k] < 0 || p->opt[k] >= space->knobs[k].noptions)
            return false;
    return true;
}

/* Records one measurement; returns 1 for a new best, 0, or a DT_E* code. */
static int record(dt_tuner *t, const dt_point *p, const dt_measure_result *r)
{
    if (!in_space(t->space, p))
        return DT_EINVAL;
    uint64_t idx = dt_space_index(t->space, p);
    if (dt_sampling_set_has(&t->measured, idx))
        return 0;
    if (grow_history(t) || dt_sampling_set_add(&t->measured, idx) < 0)
        return DT_ENOMEM;
    int i = t->n++;
    t->points[i] = *p;
    dt_space_features(t->space, p, t->features + (size_t)i * (size_t)t->space->nfeatures);
    bool ok = r->result == DT_RESULT_OK && r->gflops > 0;
    t->gflops[i] = ok ? r->gflops : 0.0;
    if (dt_space_valid(t->space, p)) {
        t->valid_measured++;
        count_ahead(t);
    }
    t->model_stale = true;
    if (ok && r->gflops > t->best_gflops) {
        t->best = i;
        t->best_gflops = r->gflops;
        return 1;
    }
    return 0;
}

int dt_tuner_add_record(dt_tuner *t, const dt_point *p, const dt_measure_result *r)
{
    int rc = record(t, p, r);
    return rc < 0 ? rc : 0;
}

int dt_tuner_set_gflops(dt_tuner *t, const dt_point *p, double gflops)
{
    if (!in_space(t->space, p) || !dt_sampling_set_has(&t->measured, dt_space_index(t->space, p)))
        return 0;
    uint64_t idx = dt_space_index(t->space, p);
    int found = 0;
    for (int i = 0; i < t->n && !found; i++)
        if (dt_space_index(t->space, &t->points[i]) == idx) {
            t->gflops[i] = gflops > 0 && isfinite(gflops) ? gflops : 0.0;
            found = 1;
        }
    t->best = -1;
    t->best_gflops = 0;
    for (int i = 0; i < t->n; i++)
        if (t->gflops[i] > t->best_gflops) {
            t->best = i;
            t->best_gflops = t->gflops[i];
        }
    t->model_stale = t->model_stale || found;
    return found;
}

int dt_tuner_trials(const dt_tuner *t) { return t->n; }

size_t dt_tuner_history_bytes(const dt_tuner *t)
{
    size_t row = sizeof *t->points + (size_t)t->space->nfeatures * sizeof *t->features +
                 sizeof *t->gflops + sizeof *t->record_scores;
    size_t prior_row = DT_TRANSFER_MAX_FEATURES * sizeof *t->prior_rows + sizeof *t->prior_out +
                       sizeof *t->margins;
    size_t memo_row = sizeof *t->memo_keys + sizeof *t->miss_at + sizeof *t->miss_points +
                      sizeof *t->miss_scores;
    return (size_t)t->cap * row + (size_t)t->prior_cap * prior_row +
           (size_t)t->memo_cap * memo_row + dt_sampling_set_bytes(&t->own_memo) +
           dt_sampling_set_bytes(&t->prior_memo) +
           dt_sampling_set_bytes(&t->measured) + dt_sampling_set_bytes(&t->batch_taken) +
           dt_costmodel_bytes(t->model) + dt_costmodel_bytes(t->prior);
}
double dt_tuner_cost_model_gflops(const dt_tuner *t) { return t->cost_model_gflops; }
const char *dt_tuner_strategy(const dt_tuner *t) { return t->strategy->name; }

bool dt_tuner_exhausted(const dt_tuner *t)
{
    return t->exhausted || (t->valid_total >= 0 && t->valid_measured >= t->valid_total);
}

/* ---- transfer ---------------------------------------------------------------------------- */

/* AutoTVM's discount of the prior after n own records. */
static double prior_discount(int n)
{
    return pow(2.0, -n / 64.0);
}

/* Fits the own model on the records over the prior's discounted scores. */
static int fit_on_prior(dt_tuner *t, dt_error *err)
{
    int rc = dt_tuner_prior_scores(t, t->points, t->n, err);
    if (rc)
        return rc;
    double weight = prior_discount(t->n);
    for (int i = 0; i < t->n; i++)
        t->margins[i] = (float)(weight * t->prior_out[i]);
    dt_costmodel_rows rows = { .features = t->features, .n = t->n, .base_margin = t->margins };
    rc = dt_costmodel_fit_rows(t->model, &rows, t->gflops, err);
    if (!rc)
        t->prior_weight = weight;
    return rc;
}

int dt_tuner_transfer(dt_tuner *t, dt_transfer *x, int *used, dt_error *err)
{
    *used = 0;
    if (!t->cfg.transfer || !x || !t->strategy->uses_model)
        return 0;
    const float *rows;
    const double *gflops;
    const int *groups;
    int ngroups, n = dt_transfer_rows(x, t->space, &rows, &gflops, &groups, &ngroups);
    if (n < 0)
        return dt_error_set(err, n, "tuner: out of memory gathering transfer rows");
    if (n == 0)
        return 0;
    dt_costmodel *prior = NULL;
    dt_costmodel_rows fit = { .features = rows, .n = n, .group_sizes = groups, .ngroups = ngroups };
    int rc = dt_costmodel_new(&t->cfg.cost_model, dt_transfer_nfeatures(t->space), t->seed + 3,
                              &prior, err);
    if (!rc)
        rc = dt_costmodel_fit_rows(prior, &fit, gflops, err);
    if (rc || !dt_costmodel_trained(prior)) {
        dt_costmodel_free(prior);
        return rc;
    }
    dt_costmodel_free(t->prior);
    t->prior = prior;
    t->prior_weight = 1.0;
    dt_sampling_set_clear(&t->prior_memo);
    int max = t->cfg.batch_size < DT_TRANSFER_SEEDS ? t->cfg.batch_size : DT_TRANSFER_SEEDS;
    if (t->nseeds == 0)     /* a database's seeds go first */
        t->nseeds = t->n == 0 ? dt_transfer_seeds(x, t->space, max, t->seeds) : 0;
    t->model_stale = t->n > 0;
    *used = n;
    return 0;
}

_Static_assert(DT_TUNER_MAX_SEEDS >= DT_TRANSFER_SEEDS, "transfer seeds fit the seed list");

void dt_tuner_seed(dt_tuner *t, const dt_point *points, int n)
{
    t->nseeds = 0;
    for (int i = 0; i < n && t->nseeds < DT_TUNER_MAX_SEEDS; i++)
        if (in_space(t->space, &points[i]))
            t->seeds[t->nseeds++] = points[i];
}

static int refit(dt_tuner *t, dt_error *err)
{
    int first_fit = t->strategy->propose_untrained || t->prior ? 1 : t->cfg.batch_size;
    if (!t->model_stale || t->n < first_fit || t->best < 0)
        return 0;
    int rc = t->prior ? fit_on_prior(t, err)
                      : dt_costmodel_fit(t->model, t->features, t->gflops, t->n, err);
    dt_sampling_set_clear(&t->own_memo);   /* a failed fit may have changed the model too */
    if (!rc)
        t->model_stale = false;
    return rc;
}

/* The transfer seeds not yet measured into t->batch (up to max); *n is how
 * many. Those that do not fit wait for the next batch. */
static int propose_seeds(dt_tuner *t, int max, int *n)
{
    int kept = 0;
    for (int i = 0; i < t->nseeds; i++) {
        if (dt_tuner_taken(t, &t->seeds[i]))
            continue;
        if (*n == max) {
            t->seeds[kept++] = t->seeds[i];
            continue;
        }
        if (dt_sampling_set_add(&t->batch_taken, dt_space_index(t->space, &t->seeds[i])) < 0)
            return DT_ENOMEM;
        t->batch[(*n)++] = t->seeds[i];
    }
    t->nseeds = kept;
    return 0;
}

/* Fills t->batch with up to max points; *n is how many. */
static int propose_batch(dt_tuner *t, int max, int *n, dt_error *err)
{
    *n = 0;
    dt_sampling_set_clear(&t->batch_taken);
    if (t->nseeds > 0) {
        if (propose_seeds(t, max, n) != 0)
            return dt_error_set(err, DT_ENOMEM, "tuner: out of memory");
        if (*n > 0)
            return 0;
    }
    if (t->strategy->uses_model) {
        int rc = refit(t, err);
        if (rc)
            return rc;
    }
    if (!t->strategy->uses_model || dt_tuner_model_ready(t)) {
        int rc = t->strategy->propose(t->state, t, max, t->batch, n, err);
        if (rc)
            return rc;
    } else if (t->strategy->propose_untrained) {
        int rc = t->strategy->propose_untrained(t->state, t, max, t->batch, n, err);
        if (rc)
            return rc;
    }
    if (*n == 0) {
        dt_sampling_set_clear(&t->batch_taken);
        *n = dt_tuner_random_points(t, max, t->batch);
    }
    return 0;
}

/* ---- the cost model's estimate of the best reachable ----------------------------------- */

/* Slope of the least-squares line of measured GFLOPS on model score over
 * the valid records; 0 when there are too few or the scores do not vary. */
static double score_slope(const dt_tuner *t)
{
    double ms = 0, mg = 0, sgs = 0, sss = 0;
    int valid = 0;
    for (int i = 0; i < t->n; i++)
        if (t->gflops[i] > 0) {
            valid++;
            ms += t->record_scores[i];
            mg += t->gflops[i];
        }
    if (valid < DT_TUNER_ESTIMATE_MIN_RECORDS)
        return 0;
    ms /= valid;
    mg /= valid;
    for (int i = 0; i < t->n; i++)
        if (t->gflops[i] > 0) {
            sgs += (t->record_scores[i] - ms) * (t->gflops[i] - mg);
            sss += (t->record_scores[i] - ms) * (t->record_scores[i] - ms);
        }
    return sss > 0 ? sgs / sss : 0;
}

/* dt_tuner_cost_model_gflops of the batch t->batch[0..n) just proposed. */
static int estimate_best(dt_tuner *t, int n, dt_error *err)
{
    t->cost_model_gflops = 0;
    if (!t->strategy->uses_model || !dt_tuner_model_ready(t) || t->best < 0 || n < 1)
        return 0;
    int rc = dt_tuner_score_records(t, t->record_scores, err);
    if (!rc)
        rc = dt_tuner_score(t, t->batch, n, t->batch_scores, err);
    if (rc)
        return rc;
    double slope = score_slope(t), top = t->batch_scores[0];
    for (int i = 1; i < n; i++)
        top = fmax(top, t->batch_scores[i]);
    double gain = slope * (top - t->record_scores[t->best]);
    if (slope > 0 && isfinite(gain))
        t->cost_model_gflops = t->best_gflops + fmax(0, gain);
    return 0;
}

/* ---- the run loop ------------------------------------------------------------------------ */

static bool budget_left(const dt_tuner *t, const dt_tuner_budget *b, const dt_tuner_stats *s)
{
    if (dt_tuner_time_up(t))
        return false;
    if (b->trials > 0 && s->trials >= b->trials)
        return false;
    return !dt_tuner_exhausted(t);
}

/* Records a measured batch; returns the number of new bests or DT_ENOMEM. */
static int record_batch(dt_tuner *t, int n)
{
    int improved = 0;
    for (int i = 0; i < n; i++) {
        int rc = record(t, &t->batch[i], &t->results[i]);
        if (rc < 0)
            return rc;
        improved += rc;
    }
    return improved;
}

int dt_tuner_run(dt_tuner *t, const dt_tuner_budget *b, dt_measure_fn measure, void *ctx,
                 dt_tuner_stats *stats, dt_error *err)
{
    dt_tuner_stats local;
    dt_tuner_stats *s = stats ? stats : &local;
    memset(s, 0, sizeof *s);
    double started = dt_now_seconds();
    long long scored = t->scored;
    t->run_budget = b;
    t->run_started = started;
    int rc = 0;
    while (!rc && budget_left(t, b, s)) {
        int max = t->cfg.batch_size, n = 0;
        if (b->trials > 0 && b->trials - s->trials < max)
            max = b->trials - s->trials;
        double t0 = dt_now_seconds();
        rc = propose_batch(t, max, &n, err);
        if (!rc)
            rc = estimate_best(t, n, err);
        double t1 = dt_now_seconds();
        s->overhead_seconds += t1 - t0;
        if (rc == DT_ECANCELED)
            dt_error_clear(err);   /* a long step ended at the budget: not an error */
        if (rc == DT_ECANCELED || rc || n == 0) {
            rc = rc == DT_ECANCELED ? 0 : rc;
            break;
        }
        memset(t->results, 0, (size_t)n * sizeof *t->results);
        int measured = measure(ctx, t->space, t->batch, n, t->results, err);
        double t2 = dt_now_seconds();
        s->measure_seconds += t2 - t1;
        if (measured < 0) {
            rc = measured;
            break;
        }
        int improved = record_batch(t, measured < n ? measured : n);
        if (improved < 0)
            rc = dt_error_set(err, improved, "tuner: out of memory recording a batch");
        else
            s->improved += improved, s->trials += measured;
        s->overhead_seconds += dt_now_seconds() - t2;
        if (measured < n)
            break;                 /* the measure function ended the batch early */
    }
    t->run_budget = NULL;
    s->scored = t->scored - scored;
    s->wall_seconds = dt_now_seconds() - started;
    return rc;
}
