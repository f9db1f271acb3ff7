/* tuner_search.c — what the search strategies search with: the tuner's
 * best records, random unmeasured points and cost-model scores (with the
 * transfer prior's share). tuner.c's run loop uses the same helpers; they
 * read and grow the tuner's state (tuner_impl.h) and call nothing of
 * tuner.c or of the strategies, so the strategies do not call back into the
 * file that holds their table.
 */
#include "tuner_impl.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "dtune/util.h"

/* Random draws tried before the nearest-unmeasured search takes over. */
#define DT_TUNER_RANDOM_TRIES 64

bool dt_tuner_time_up(const dt_tuner *t)
{
    const dt_tuner_budget *b = t->run_budget;
    if (!b)
        return false;
    if (b->stop && atomic_load(b->stop))
        return true;
    return b->seconds > 0 && dt_now_seconds() - t->run_started >= b->seconds;
}

int dt_tuner_best(const dt_tuner *t, dt_point *p, double *gflops)
{
    if (t->best < 0)
        return -1;
    if (p)
        *p = t->points[t->best];
    if (gflops)
        *gflops = t->best_gflops;
    return 0;
}

int dt_tuner_best_records(const dt_tuner *t, int *order)
{
    /* insertion into a sorted prefix: n is at most a few thousand and this
     * runs once per round */
    int valid = 0;
    for (int i = 0; i < t->n; i++) {
        if (t->gflops[i] <= 0)
            continue;
        int j = valid++;
        while (j > 0 && t->gflops[order[j - 1]] < t->gflops[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    int m = valid;
    for (int i = 0; i < t->n; i++)
        if (t->gflops[i] <= 0)
            order[m++] = i;
    return valid;
}

int dt_tuner_top(const dt_tuner *t, int k, dt_point *out)
{
    int *order = malloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *order);
    if (!order)
        return DT_ENOMEM;
    int valid = dt_tuner_best_records(t, order);
    int m = valid < k ? valid : k;
    m = m < DT_TUNER_TOP_MAX ? m : DT_TUNER_TOP_MAX;
    for (int i = 0; i < m; i++)
        out[i] = t->points[order[i]];
    free(order);
    return m;
}

/* ---- proposing ------------------------------------------------------------------------ */

bool dt_tuner_taken(const dt_tuner *t, const dt_point *p)
{
    uint64_t idx = dt_space_index(t->space, p);
    return dt_sampling_set_has(&t->measured, idx) || dt_sampling_set_has(&t->batch_taken, idx);
}

/* One random unmeasured valid point, or false when none can be found. */
static bool random_point(dt_tuner *t, dt_point *out)
{
    for (int i = 0; i < DT_TUNER_RANDOM_TRIES; i++) {
        dt_space_random(t->space, t->rng, out);
        if (dt_space_valid(t->space, out) && !dt_tuner_taken(t, out))
            return true;
    }
    dt_point from;
    dt_space_random(t->space, t->rng, &from);
    return dt_sampling_nearest_untaken(t->sampler, &from, &t->measured, &t->batch_taken, out) == 0;
}

int dt_tuner_draw_random(dt_tuner *t, int max, dt_point *out, bool *dry)
{
    int n = 0;
    *dry = false;
    while (n < max) {
        if (!random_point(t, &out[n])) {
            *dry = true;
            break;
        }
        if (dt_sampling_set_add(&t->batch_taken, dt_space_index(t->space, &out[n])) < 0)
            break;
        n++;
    }
    return n;
}

int dt_tuner_random_points(dt_tuner *t, int max, dt_point *out)
{
    bool dry;
    int n = dt_tuner_draw_random(t, max, out, &dry);
    if (dry)
        t->exhausted = true;
    return n;
}

static int grow_prior_work(dt_tuner *t, int n, dt_error *err)
{
    if (n <= t->prior_cap)
        return 0;
    size_t cap = dt_grow_capacity((size_t)t->prior_cap, (size_t)n);
    if (cap > INT_MAX / DT_TRANSFER_MAX_FEATURES
        || dt_resize(&t->prior_rows, cap * DT_TRANSFER_MAX_FEATURES, sizeof *t->prior_rows) != 0
        || dt_resize(&t->prior_out, cap, sizeof *t->prior_out) != 0
        || dt_resize(&t->margins, cap, sizeof *t->margins) != 0)
        return dt_error_set(err, DT_ENOMEM, "tuner: out of memory for %d prior rows", n);
    t->prior_cap = (int)cap;
    return 0;
}

static int grow_memo_work(dt_tuner *t, int n, dt_error *err)
{
    if (n <= t->memo_cap)
        return 0;
    size_t cap = dt_grow_capacity((size_t)t->memo_cap, (size_t)n);
    if (cap > INT_MAX
        || dt_resize(&t->memo_keys, cap, sizeof *t->memo_keys) != 0
        || dt_resize(&t->miss_at, cap, sizeof *t->miss_at) != 0
        || dt_resize(&t->miss_points, cap, sizeof *t->miss_points) != 0
        || dt_resize(&t->miss_scores, cap, sizeof *t->miss_scores) != 0)
        return dt_error_set(err, DT_ENOMEM, "tuner: out of memory for %d scores", n);
    t->memo_cap = (int)cap;
    return 0;
}

/* The prior's predictions of n points (on transfer features) into out. */
static int prior_predict(dt_tuner *t, const dt_point *points, int n, double *out, dt_error *err)
{
    int rc = grow_prior_work(t, n, err);
    if (rc)
        return rc;
    size_t nf = (size_t)dt_transfer_nfeatures(t->space);
    for (int i = 0; i < n; i++)
        dt_transfer_features(t->space, &points[i], t->prior_rows + (size_t)i * nf);
    return dt_costmodel_predict(t->prior, t->prior_rows, n, out, err);
}

/* The scores of n points by the own model or the prior into out, through
 * that model's memo: only the configs it has not scored since it was last
 * fitted are predicted (together, in one call). */
static int memo_scores(dt_tuner *t, bool prior, const dt_point *points, int n, double *out,
                       dt_error *err)
{
    dt_sampling_set *memo = prior ? &t->prior_memo : &t->own_memo;
    int rc = grow_memo_work(t, n, err);
    if (rc)
        return rc;
    if (memo->n > DT_TUNER_MEMO_MAX)
        dt_sampling_set_clear(memo);
    int misses = 0;
    for (int i = 0; i < n; i++) {
        t->memo_keys[i] = dt_space_index(t->space, &points[i]);
        if (!dt_sampling_set_get(memo, t->memo_keys[i], &out[i])) {
            t->miss_at[misses] = i;
            t->miss_points[misses++] = points[i];
        }
    }
    if (misses == 0)
        return 0;
    rc = prior ? prior_predict(t, t->miss_points, misses, t->miss_scores, err)
               : dt_costmodel_predict_points(t->model, t->space, t->miss_points, misses,
                                             t->miss_scores, err);
    for (int j = 0; !rc && j < misses; j++) {
        int i = t->miss_at[j];
        out[i] = t->miss_scores[j];
        if (dt_sampling_set_put(memo, t->memo_keys[i], out[i]) != 0)
            rc = dt_error_set(err, DT_ENOMEM, "tuner: out of memory for the score memo");
    }
    return rc;
}

int dt_tuner_prior_scores(dt_tuner *t, const dt_point *points, int n, dt_error *err)
{
    int rc = grow_prior_work(t, n, err);
    return rc ? rc : memo_scores(t, true, points, n, t->prior_out, err);
}

bool dt_tuner_model_ready(const dt_tuner *t)
{
    return t->prior || dt_costmodel_trained(t->model);
}

static int score(dt_tuner *t, const dt_point *points, int n, double *scores, dt_error *err)
{
    if (!t->prior)
        return memo_scores(t, false, points, n, scores, err);
    bool own = dt_costmodel_trained(t->model);
    int rc = own ? memo_scores(t, false, points, n, scores, err) : 0;
    if (!rc)
        rc = dt_tuner_prior_scores(t, points, n, err);
    if (rc)
        return rc;
    for (int i = 0; i < n; i++)
        scores[i] = own ? scores[i] + t->prior_weight * t->prior_out[i] : t->prior_out[i];
    return 0;
}

int dt_tuner_score(dt_tuner *t, const dt_point *points, int n, double *scores, dt_error *err)
{
    t->scored += n;
    return score(t, points, n, scores, err);
}

int dt_tuner_score_records(dt_tuner *t, double *scores, dt_error *err)
{
    if (!t->prior)
        return dt_costmodel_predict(t->model, t->features, t->n, scores, err);
    return score(t, t->points, t->n, scores, err);
}
