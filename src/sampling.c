/* sampling.c — k-means with the knee meta-search, snapping, mode synthesis.
 *
 * Every buffer sized by the candidate or batch limit is allocated in
 * dt_sampling_new. The knee search runs k-means into a work pair of
 * (centroids, assignment) buffers and swaps it with the kept pair whenever a
 * k is accepted, so the previous k's clustering is still at hand when the
 * loss stops falling fast enough. The breadth-first search for an untaken
 * config keeps its queue and seen-set between calls; they grow only when a
 * search reaches further than any before.
 */
#include "sampling_internal.h"
#include "dtune/util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#define KMEANS_MAX_ITERS 100

/* ---- dt_sampling_set ---------------------------------------------------------- */

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

int dt_sampling_set_init(dt_sampling_set *s)
{
    s->cap = 64;
    s->n = 0;
    s->values = NULL;
    s->slots = calloc(s->cap, sizeof *s->slots);
    return s->slots ? 0 : DT_ENOMEM;
}

int dt_sampling_set_init_values(dt_sampling_set *s)
{
    if (dt_sampling_set_init(s))
        return DT_ENOMEM;
    s->values = calloc(s->cap, sizeof *s->values);
    if (!s->values) {
        dt_sampling_set_free(s);
        return DT_ENOMEM;
    }
    return 0;
}

size_t dt_sampling_set_bytes(const dt_sampling_set *s)
{
    return s->cap * (sizeof *s->slots + (s->values ? sizeof *s->values : 0));
}

void dt_sampling_set_free(dt_sampling_set *s)
{
    if (!s)
        return;
    free(s->slots);
    free(s->values);
    s->slots = NULL;
    s->values = NULL;
    s->cap = s->n = 0;
}

void dt_sampling_set_clear(dt_sampling_set *s)
{
    memset(s->slots, 0, s->cap * sizeof *s->slots);
    s->n = 0;
}

/* The slot holding index, or the empty slot where it would go. */
static size_t find_slot(const dt_sampling_set *s, uint64_t index)
{
    uint64_t key = index + 1;
    size_t i = slot_of(key, s->cap);
    while (s->slots[i] != key && s->slots[i] != 0)
        i = (i + 1) & (s->cap - 1);
    return i;
}

bool dt_sampling_set_has(const dt_sampling_set *s, uint64_t index)
{
    if (!s || !s->slots)
        return false;
    return s->slots[find_slot(s, index)] != 0;
}

bool dt_sampling_set_get(const dt_sampling_set *s, uint64_t index, double *value)
{
    if (!s || !s->slots || !s->values)
        return false;
    size_t i = find_slot(s, index);
    if (s->slots[i] == 0)
        return false;
    *value = s->values[i];
    return true;
}

static int grow_set(dt_sampling_set *s)
{
    dt_sampling_set bigger = { .cap = s->cap * 2, .n = s->n };
    bigger.slots = calloc(bigger.cap, sizeof *bigger.slots);
    if (s->values)
        bigger.values = calloc(bigger.cap, sizeof *bigger.values);
    if (!bigger.slots || (s->values && !bigger.values)) {
        dt_sampling_set_free(&bigger);
        return DT_ENOMEM;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i])
            continue;
        size_t j = find_slot(&bigger, s->slots[i] - 1);
        bigger.slots[j] = s->slots[i];
        if (s->values)
            bigger.values[j] = s->values[i];
    }
    dt_sampling_set_free(s);
    *s = bigger;
    return 0;
}

/* The slot of index, added (with a zero value) when it was not there;
 * *added says which. */
static int add_slot(dt_sampling_set *s, uint64_t index, size_t *slot, bool *added)
{
    size_t i = find_slot(s, index);
    *added = s->slots[i] == 0;
    if (*added) {
        if (2 * (s->n + 1) > s->cap) {
            if (grow_set(s))
                return DT_ENOMEM;
            i = find_slot(s, index);
        }
        s->slots[i] = index + 1;
        if (s->values)
            s->values[i] = 0;
        s->n++;
    }
    *slot = i;
    return 0;
}

int dt_sampling_set_add(dt_sampling_set *s, uint64_t index)
{
    size_t slot;
    bool added;
    if (add_slot(s, index, &slot, &added))
        return DT_ENOMEM;
    return added;
}

int dt_sampling_set_put(dt_sampling_set *s, uint64_t index, double value)
{
    size_t slot;
    bool added;
    if (!s->values)
        return DT_EINVAL;
    if (add_slot(s, index, &slot, &added))
        return DT_ENOMEM;
    s->values[slot] = value;
    return 0;
}

/* ---- the sampler ------------------------------------------------------------------ */

struct dt_sampling {
    const dt_space *space;
    dt_sampling_params cfg;
    int max_candidates, max_batch, dim;
    gsl_rng *rng;
    dt_point *points;            /* distinct valid candidates */
    double *coords;              /* their normalised knob vectors */
    double *d2;                  /* k-means++ distances */
    int *assign, *kept_assign;
    double *centroids, *kept_centroids;
    int *cluster_size;
    int *mode_counts;            /* Σ noptions */
    int mode_offset[DT_MAX_KNOBS];
    dt_sampling_set taken, seen;
    uint64_t *queue;
    size_t queue_cap;
};

dt_sampling_params dt_sampling_params_default(void)
{
    return (dt_sampling_params){ .knee_threshold = 2.5, .k_min = 4 };
}

static int alloc_workspace(dt_sampling *s)
{
    size_t nc = (size_t)s->max_candidates, nb = (size_t)s->max_batch, d = DT_MAX_KNOBS;
    int options = 0;
    for (int i = 0; i < s->space->nknobs; i++) {
        s->mode_offset[i] = options;
        options += s->space->knobs[i].noptions;
    }
    s->points = calloc(nc, sizeof *s->points);
    s->coords = calloc(nc * d, sizeof *s->coords);
    s->d2 = calloc(nc, sizeof *s->d2);
    s->assign = calloc(nc, sizeof *s->assign);
    s->kept_assign = calloc(nc, sizeof *s->kept_assign);
    s->centroids = calloc(nb * d, sizeof *s->centroids);
    s->kept_centroids = calloc(nb * d, sizeof *s->kept_centroids);
    s->cluster_size = calloc(nb, sizeof *s->cluster_size);
    s->mode_counts = calloc((size_t)options + 1, sizeof *s->mode_counts);
    s->queue_cap = 1024;
    s->queue = calloc(s->queue_cap, sizeof *s->queue);
    if (!s->points || !s->coords || !s->d2 || !s->assign || !s->kept_assign || !s->centroids ||
        !s->kept_centroids || !s->cluster_size || !s->mode_counts || !s->queue)
        return DT_ENOMEM;
    if (dt_sampling_set_init(&s->taken) || dt_sampling_set_init(&s->seen))
        return DT_ENOMEM;
    return 0;
}

int dt_sampling_new(const dt_space *space, const dt_sampling_params *cfg, int max_candidates,
                    int max_batch, uint64_t seed, dt_sampling **out, dt_error *err)
{
    *out = NULL;
    if (max_candidates < 1 || max_batch < 1 || cfg->k_min < 1 || !(cfg->knee_threshold > 0) ||
        space->nknobs < 1)
        return dt_error_set(err, DT_EINVAL, "sampling: candidates %d, batch %d, k_min %d, "
                            "threshold %g and knobs %d must be positive", max_candidates,
                            max_batch, cfg->k_min, cfg->knee_threshold, space->nknobs);
    dt_sampling *s = calloc(1, sizeof *s);
    if (!s)
        return dt_error_set(err, DT_ENOMEM, "sampling: out of memory");
    s->space = space;
    s->cfg = *cfg;
    s->max_candidates = max_candidates;
    s->max_batch = max_batch;
    s->dim = space->nknobs;
    s->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!s->rng || alloc_workspace(s)) {
        dt_sampling_free(s);
        return dt_error_set(err, DT_ENOMEM, "sampling: out of memory for %d candidates",
                            max_candidates);
    }
    gsl_rng_set(s->rng, (unsigned long)(seed ^ (seed >> 32)) + 7);
    *out = s;
    return 0;
}

void dt_sampling_free(dt_sampling *s)
{
    if (!s)
        return;
    if (s->rng)
        gsl_rng_free(s->rng);
    free(s->points); free(s->coords); free(s->d2);
    free(s->assign); free(s->kept_assign);
    free(s->centroids); free(s->kept_centroids);
    free(s->cluster_size); free(s->mode_counts); free(s->queue);
    dt_sampling_set_free(&s->taken);
    dt_sampling_set_free(&s->seen);
    free(s);
}

/* ---- k-means ------------------------------------------------------------------------ */

static double dist2(const double *a, const double *b, int dim)
{
    double d = 0;
    for (int j = 0; j < dim; j++)
        d += (a[j] - b[j]) * (a[j] - b[j]);
    return d;
}

/* k-means++: first centre uniform, each next one with probability ∝ D². */
static void seed_centroids(dt_sampling *s, const double *x, int n, int dim, int k, double *c)
{
    int first = (int)gsl_rng_uniform_int(s->rng, (unsigned long)n);
    memcpy(c, x + (size_t)first * dim, (size_t)dim * sizeof *c);
    for (int i = 0; i < n; i++)
        s->d2[i] = dist2(x + (size_t)i * dim, c, dim);
    for (int j = 1; j < k; j++) {
        double total = 0;
        for (int i = 0; i < n; i++)
            total += s->d2[i];
        int pick = n - 1;
        if (total > 0) {
            double u = gsl_rng_uniform(s->rng) * total, acc = 0;
            for (int i = 0; i < n; i++)
                if ((acc += s->d2[i]) > u) { pick = i; break; }
        } else {
            pick = (int)gsl_rng_uniform_int(s->rng, (unsigned long)n);
        }
        double *cj = c + (size_t)j * dim;
        memcpy(cj, x + (size_t)pick * dim, (size_t)dim * sizeof *c);
        for (int i = 0; i < n; i++)
            s->d2[i] = fmin(s->d2[i], dist2(x + (size_t)i * dim, cj, dim));
    }
}

/* Assigns every row to its nearest centroid; returns (loss, changed?). */
static double assign_rows(const double *x, int n, int dim, int k, const double *c,
                          int *assign, bool *changed)
{
    double loss = 0;
    *changed = false;
    for (int i = 0; i < n; i++) {
        int best = 0;
        double bd = DBL_MAX;
        for (int j = 0; j < k; j++) {
            double d = dist2(x + (size_t)i * dim, c + (size_t)j * dim, dim);
            if (d < bd) { bd = d; best = j; }
        }
        *changed |= assign[i] != best;
        assign[i] = best;
        loss += bd;
    }
    return loss;
}

/* Means of the clusters; an emptied cluster takes the row farthest from its centroid. */
static void update_centroids(dt_sampling *s, const double *x, int n, int dim, int k,
                             double *c, int *assign)
{
    memset(c, 0, (size_t)k * dim * sizeof *c);
    memset(s->cluster_size, 0, (size_t)k * sizeof *s->cluster_size);
    for (int i = 0; i < n; i++) {
        s->cluster_size[assign[i]]++;
        for (int d = 0; d < dim; d++)
            c[(size_t)assign[i] * dim + d] += x[(size_t)i * dim + d];
    }
    for (int j = 0; j < k; j++) {
        if (s->cluster_size[j] == 0) {
            int far = 0;
            for (int i = 1; i < n; i++)
                if (s->d2[i] > s->d2[far]) far = i;
            memcpy(c + (size_t)j * dim, x + (size_t)far * dim, (size_t)dim * sizeof *c);
            s->d2[far] = 0;
            assign[far] = j;
            continue;
        }
        for (int d = 0; d < dim; d++)
            c[(size_t)j * dim + d] /= s->cluster_size[j];
    }
}

double dt_sampling_kmeans(dt_sampling *s, const double *coords, int n, int dim, int k,
                          double *centroids, int *assign)
{
    seed_centroids(s, coords, n, dim, k, centroids);
    for (int i = 0; i < n; i++)
        assign[i] = -1;
    bool changed = true;
    double loss = 0;
    for (int it = 0; it < KMEANS_MAX_ITERS && changed; it++) {
        loss = assign_rows(coords, n, dim, k, centroids, assign, &changed);
        if (!changed)
            break;
        for (int i = 0; i < n; i++)   /* distances for the empty-cluster rule */
            s->d2[i] = dist2(coords + (size_t)i * dim, centroids + (size_t)assign[i] * dim, dim);
        update_centroids(s, coords, n, dim, k, centroids, assign);
    }
    return loss;
}

/* Swaps the work and kept clusterings. */
static void keep_work(dt_sampling *s)
{
    double *c = s->kept_centroids;
    int *a = s->kept_assign;
    s->kept_centroids = s->centroids;
    s->kept_assign = s->assign;
    s->centroids = c;
    s->assign = a;
}

/* The knee search; leaves the kept clustering in kept_centroids/kept_assign. */
static int knee_search(dt_sampling *s, const double *x, int n, int dim, int max_k,
                       double *loss_out, int *tried)
{
    int limit = max_k < n ? max_k : n;
    int k = s->cfg.k_min <= limit ? s->cfg.k_min : limit, kept = 0;
    double previous = INFINITY, kept_loss = 0;
    *tried = 0;
    for (; k <= limit; k *= 2) {
        double loss = dt_sampling_kmeans(s, x, n, dim, k, s->centroids, s->assign);
        ++*tried;
        if (kept && s->cfg.knee_threshold * loss >= previous)
            break;   /* past the knee: the previous k is kept */
        keep_work(s);
        kept = k;
        kept_loss = previous = loss;
        if (loss == 0)
            break;
    }
    *loss_out = kept_loss;
    return kept;
}

int dt_sampling_knee(dt_sampling *s, const double *coords, int n, int dim, int max_k, double *loss)
{
    int tried;
    if (max_k > s->max_batch)
        max_k = s->max_batch;
    return knee_search(s, coords, n, dim, max_k, loss, &tried);
}

/* ---- mode and nearest untaken ---------------------------------------------------------- */

void dt_sampling_mode(dt_sampling *s, const dt_point *cands, int n, dt_point *out)
{
    const dt_space *sp = s->space;
    memset(out, 0, sizeof *out);
    for (int k = 0; k < sp->nknobs; k++) {
        int *count = s->mode_counts + s->mode_offset[k];
        memset(count, 0, (size_t)sp->knobs[k].noptions * sizeof *count);
        for (int i = 0; i < n; i++)
            count[cands[i].opt[k]]++;
        int best = 0;
        for (int o = 1; o < sp->knobs[k].noptions; o++)
            if (count[o] > count[best])
                best = o;
        out->opt[k] = (int16_t)best;
    }
    dt_space_canonical(sp, out);
}

static bool usable(const dt_sampling *s, const dt_point *p, const dt_sampling_set *measured,
                   const dt_sampling_set *taken)
{
    if (!dt_space_valid(s->space, p))
        return false;
    uint64_t idx = dt_space_index(s->space, p);
    return !dt_sampling_set_has(measured, idx) && !dt_sampling_set_has(taken, idx);
}

static int queue_push(dt_sampling *s, size_t *tail, uint64_t idx)
{
    if (dt_grow(&s->queue, &s->queue_cap, *tail + 1, sizeof *s->queue) != 0)
        return DT_ENOMEM;
    s->queue[(*tail)++] = idx;
    return 0;
}

/* Pushes the unseen ±1 moves of p; returns DT_ENOMEM or 0. */
static int push_moves(dt_sampling *s, const dt_point *p, size_t *tail)
{
    for (int k = 0; k < s->space->nknobs; k++) {
        for (int step = -1; step <= 1; step += 2) {
            int v = p->opt[k] + step;
            if (v < 0 || v >= s->space->knobs[k].noptions)
                continue;
            dt_point q = *p;
            q.opt[k] = (int16_t)v;
            uint64_t idx = dt_space_index(s->space, &q);
            int added = dt_sampling_set_add(&s->seen, idx);
            if (added < 0 || (added == 1 && queue_push(s, tail, idx)))
                return DT_ENOMEM;
        }
    }
    return 0;
}

int dt_sampling_nearest_untaken(dt_sampling *s, const dt_point *from,
                                const dt_sampling_set *measured, const dt_sampling_set *taken,
                                dt_point *out)
{
    dt_sampling_set_clear(&s->seen);
    size_t head = 0, tail = 0;
    uint64_t start = dt_space_index(s->space, from);
    if (dt_sampling_set_add(&s->seen, start) < 0 || queue_push(s, &tail, start))
        return DT_ENOMEM;
    while (head < tail && head < DT_SAMPLING_SEARCH_LIMIT) {
        dt_point p;
        dt_space_point(s->space, s->queue[head++], &p);
        if (usable(s, &p, measured, taken)) {
            *out = p;
            return 0;
        }
        if (push_moves(s, &p, &tail))
            return DT_ENOMEM;
    }
    return DT_ENOTFOUND;
}

int dt_sampling_synthesise(dt_sampling *s, const dt_point *cands, int n,
                           const dt_sampling_set *measured, const dt_sampling_set *taken,
                           dt_point *out, bool *was_mode)
{
    dt_point mode;
    dt_sampling_mode(s, cands, n, &mode);
    if (was_mode)
        *was_mode = usable(s, &mode, measured, taken);
    if (usable(s, &mode, measured, taken)) {
        *out = mode;
        return 0;
    }
    return dt_sampling_nearest_untaken(s, &mode, measured, taken, out);
}

/* ---- select ------------------------------------------------------------------------------ */

/* Copies distinct valid candidates into the workspace; returns how many. */
static int gather(dt_sampling *s, const dt_point *cands, int n)
{
    dt_sampling_set_clear(&s->taken);
    int m = 0;
    for (int i = 0; i < n && m < s->max_candidates; i++) {
        if (!dt_space_valid(s->space, &cands[i]))
            continue;
        if (dt_sampling_set_add(&s->taken, dt_space_index(s->space, &cands[i])) != 1)
            continue;
        s->points[m] = cands[i];
        dt_space_normalised(s->space, &cands[i], s->coords + (size_t)m * s->dim);
        m++;
    }
    dt_sampling_set_clear(&s->taken);
    return m;
}

/* Centroid j → a valid config: the first valid member of its cluster in the
 * caller's order (the candidates come best first, so this is the member the
 * cost model rates highest: one measurement per cluster, spent where the
 * cluster looks best). Falls back to the rounded centroid when the cluster
 * has no member. */
static void snap(dt_sampling *s, int j, int m, dt_point *out)
{
    const double *c = s->kept_centroids + (size_t)j * s->dim;
    for (int i = 0; i < m; i++)
        if (s->kept_assign[i] == j) {
            *out = s->points[i];
            return;
        }
    memset(out, 0, sizeof *out);
    for (int k = 0; k < s->dim; k++) {
        int last = s->space->knobs[k].noptions - 1;
        long o = lround(c[k] * last);
        out->opt[k] = (int16_t)(o < 0 ? 0 : o > last ? last : o);
    }
}

/* Adds centroid j's config (or its replacement) to out; returns 1, 0 or < 0. */
static int place(dt_sampling *s, int j, int m, const dt_sampling_set *measured,
                 dt_point *out, dt_sampling_info *info)
{
    dt_point p;
    snap(s, j, m, &p);
    if (!usable(s, &p, measured, &s->taken)) {
        bool was_mode = false;
        int rc = dt_sampling_synthesise(s, s->points, m, measured, &s->taken, &p, &was_mode);
        if (rc == DT_ENOTFOUND)
            return 0;
        if (rc)
            return rc;
        if (was_mode)
            info->synthesised++;
        else
            info->neighbours++;
    }
    if (dt_sampling_set_add(&s->taken, dt_space_index(s->space, &p)) < 0)
        return DT_ENOMEM;
    *out = p;
    return 1;
}

int dt_sampling_select(dt_sampling *s, const dt_point *cands, int n,
                       const dt_sampling_set *measured, int max_batch,
                       dt_point *out, int *nout, dt_sampling_info *info, dt_error *err)
{
    dt_sampling_info local;
    dt_sampling_info *in = info ? info : &local;
    memset(in, 0, sizeof *in);
    *nout = 0;
    if (max_batch < 1 || max_batch > s->max_batch || n < 0)
        return dt_error_set(err, DT_EINVAL, "sampling: batch %d outside 1..%d", max_batch,
                            s->max_batch);
    int m = gather(s, cands, n);
    in->distinct = m;
    if (m == 0)
        return 0;
    in->k = knee_search(s, s->coords, m, s->dim, max_batch, &in->loss, &in->tried);
    for (int j = 0; j < in->k; j++) {
        int rc = place(s, j, m, measured, out + *nout, in);
        if (rc < 0)
            return dt_error_set(err, rc, "sampling: out of memory");
        *nout += rc;
    }
    return 0;
}
