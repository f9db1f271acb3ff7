/* transfer.c — the store of other tasks' records, and what it gives a task
 * about to be tuned: prior training rows and mapped first candidates.
 *
 * The store keeps one entry per task shape: a rebuilt copy of the task's
 * space (so its option tables outlive the caller's) and the task's measured
 * points and GFLOPS. Prior rows are built on demand in a buffer the store
 * owns. A kind is compared knob by knob (dt_transfer_same_kind), never by a
 * point's index, which means something only in its own space.
 */
#include "dtune/transfer.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/util.h"

typedef struct task_records {
    dt_space space;
    char shape[128];
    int n, cap;
    dt_point *points;
    double *gflops;
} task_records;

struct dt_transfer {
    int ntasks, tasks_cap;
    task_records *tasks;
    int records;
    /* dt_transfer_rows' buffers */
    float *rows;
    double *row_gflops;
    int rows_cap;
    int *group_sizes;
};

int dt_transfer_new(dt_transfer **out, dt_error *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : dt_error_set(err, DT_ENOMEM, "transfer: out of memory");
}

void dt_transfer_free(dt_transfer *x)
{
    if (!x)
        return;
    for (int i = 0; i < x->ntasks; i++) {
        dt_space_free(&x->tasks[i].space);
        free(x->tasks[i].points);
        free(x->tasks[i].gflops);
    }
    free(x->tasks);
    free(x->rows);
    free(x->row_gflops);
    free(x->group_sizes);
    free(x);
}

int dt_transfer_records(const dt_transfer *x)
{
    return x->records;
}

size_t dt_transfer_bytes(const dt_transfer *x)
{
    if (!x)
        return 0;
    size_t bytes = (size_t)x->tasks_cap * sizeof *x->tasks;
    for (int i = 0; i < x->ntasks; i++)
        bytes += (size_t)x->tasks[i].cap * (sizeof *x->tasks[i].points + sizeof *x->tasks[i].gflops);
    /* rows are DT_TRANSFER_MAX_FEATURES wide at most */
    return bytes + (size_t)x->rows_cap * (DT_TRANSFER_MAX_FEATURES * sizeof *x->rows +
                                          sizeof *x->row_gflops);
}

/* ---- kinds and features ----------------------------------------------------------- */

bool dt_transfer_same_kind(const dt_space *a, const dt_space *b)
{
    if (a->target != b->target || a->task.kind != b->task.kind || a->nknobs != b->nknobs)
        return false;
    for (int k = 0; k < a->nknobs; k++) {
        const dt_knob *x = &a->knobs[k], *y = &b->knobs[k];
        if (strcmp(x->name, y->name) != 0 || x->type != y->type || x->parts != y->parts)
            return false;
        if (x->type == DT_KNOB_CHOICE && (x->noptions != y->noptions ||
            memcmp(x->options, y->options, (size_t)x->noptions * sizeof *x->options) != 0))
            return false;
    }
    return true;
}

static bool same_task(const task_records *t, const dt_space *space, const char *shape)
{
    return strcmp(t->shape, shape) == 0 && dt_transfer_same_kind(&t->space, space);
}

int dt_transfer_nfeatures(const dt_space *space)
{
    int n = 0;
    for (int k = 0; k < space->nknobs; k++)
        n += space->knobs[k].type == DT_KNOB_SPLIT ? 2 * space->knobs[k].parts + 1 : 1;
    return n;
}

void dt_transfer_features(const dt_space *space, const dt_point *p, float *out)
{
    int f = 0;
    for (int k = 0; k < space->nknobs; k++) {
        const dt_knob *kn = &space->knobs[k];
        const int *opt = kn->options + (size_t)p->opt[k] * (size_t)kn->parts;
        if (kn->type == DT_KNOB_CHOICE) {
            out[f++] = (float)opt[0];
            continue;
        }
        double axis = log2((double)kn->axis_len);
        for (int i = 0; i < kn->parts; i++) {
            double l = log2((double)opt[i]);
            out[f++] = (float)l;
            out[f++] = (float)(axis > 0 ? l / axis : 0.0);
        }
        out[f++] = (float)axis;
    }
}

/* ---- feeding ------------------------------------------------------------------------- */

static int find_or_add_task(dt_transfer *x, const dt_space *space, task_records **out)
{
    char shape[128];
    dt_task_shape_str(&space->task, shape, sizeof shape);
    for (int i = 0; i < x->ntasks; i++)
        if (same_task(&x->tasks[i], space, shape)) {
            *out = &x->tasks[i];
            return 0;
        }
    if (x->ntasks == x->tasks_cap) {
        size_t cap = dt_grow_capacity((size_t)x->tasks_cap, (size_t)x->ntasks + 1);
        if (cap > INT_MAX || dt_resize(&x->tasks, cap, sizeof *x->tasks) != 0)
            return DT_ENOMEM;
        x->tasks_cap = (int)cap;
    }
    task_records *t = &x->tasks[x->ntasks];
    memset(t, 0, sizeof *t);
    if (dt_space_copy(&t->space, space) != 0)
        return DT_ENOMEM;
    snprintf(t->shape, sizeof t->shape, "%s", shape);
    x->ntasks++;
    *out = t;
    return 0;
}

int dt_transfer_add(dt_transfer *x, const dt_space *space, const dt_point *p,
                    const dt_measure_result *r)
{
    task_records *t;
    if (find_or_add_task(x, space, &t) != 0)
        return DT_ENOMEM;
    if (t->n == t->cap) {
        size_t cap = dt_grow_capacity((size_t)t->cap, (size_t)t->n + 1);
        if (cap > INT_MAX || dt_resize(&t->points, cap, sizeof *t->points) != 0
            || dt_resize(&t->gflops, cap, sizeof *t->gflops) != 0)
            return DT_ENOMEM;
        t->cap = (int)cap;
    }
    bool ok = r->result == DT_RESULT_OK && r->gflops > 0 && isfinite(r->gflops);
    t->points[t->n] = *p;
    t->gflops[t->n++] = ok ? r->gflops : 0.0;
    x->records++;
    return 0;
}

/* Whether task t may serve space (same kind, another task, a valid record). */
static bool serves(const task_records *t, const dt_space *space, const char *shape)
{
    if (!dt_transfer_same_kind(&t->space, space) || strcmp(t->shape, shape) == 0)
        return false;
    for (int i = 0; i < t->n; i++)
        if (t->gflops[i] > 0)
            return true;
    return false;
}

/* ---- prior rows ---------------------------------------------------------------------- */

static int grow_rows(dt_transfer *x, int n, int nf)
{
    if (n <= x->rows_cap)
        return 0;
    size_t cap = dt_grow_capacity((size_t)x->rows_cap, (size_t)n);
    if (cap > INT_MAX / DT_TRANSFER_MAX_FEATURES
        || dt_resize(&x->rows, cap * (size_t)nf, sizeof *x->rows) != 0
        || dt_resize(&x->row_gflops, cap, sizeof *x->row_gflops) != 0)
        return DT_ENOMEM;
    x->rows_cap = (int)cap;
    return 0;
}

int dt_transfer_rows(dt_transfer *x, const dt_space *space, const float **features,
                     const double **gflops, const int **group_sizes, int *ngroups)
{
    char shape[128];
    dt_task_shape_str(&space->task, shape, sizeof shape);
    int nf = dt_transfer_nfeatures(space), n = 0, groups = 0;
    if (dt_resize(&x->group_sizes, (size_t)x->ntasks + 1, sizeof *x->group_sizes) != 0)
        return DT_ENOMEM;
    x->rows_cap = 0;   /* the feature width may differ from the last call's */
    for (int i = 0; i < x->ntasks; i++) {
        const task_records *t = &x->tasks[i];
        if (!serves(t, space, shape))
            continue;
        int take = t->n < DT_TRANSFER_ROWS_PER_TASK ? t->n : DT_TRANSFER_ROWS_PER_TASK;
        if (grow_rows(x, n + take, nf) != 0)
            return DT_ENOMEM;
        for (int j = 0; j < take; j++, n++) {
            dt_transfer_features(&t->space, &t->points[j], x->rows + (size_t)n * (size_t)nf);
            x->row_gflops[n] = t->gflops[j];
        }
        x->group_sizes[groups++] = take;
    }
    *features = x->rows;
    *gflops = x->row_gflops;
    *group_sizes = x->group_sizes;
    *ngroups = groups;
    return n;
}

/* ---- mapping configs between shapes ------------------------------------------------- */

/* How far option o of knob k in `to` is from the values `want` (parts ints):
 * the inner factors decide, the outermost (the remainder) only breaks ties. */
static double option_distance(const dt_knob *k, int o, const int *want)
{
    const int *have = k->options + (size_t)o * (size_t)k->parts;
    if (k->type == DT_KNOB_CHOICE)
        return fabs((double)have[0] - (double)want[0]);
    double d = 0;
    for (int i = 0; i < k->parts; i++)
        d += (i == 0 ? 1e-3 : 1.0) * fabs(log2((double)have[i]) - log2((double)want[i]));
    return d;
}

void dt_transfer_map(const dt_space *from, const dt_point *p, const dt_space *to, dt_point *out)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < to->nknobs; k++) {
        const dt_knob *src = &from->knobs[k], *dst = &to->knobs[k];
        const int *want = src->options + (size_t)p->opt[k] * (size_t)src->parts;
        int best = 0;
        double best_d = INFINITY;
        for (int o = 0; o < dst->noptions; o++) {
            double d = option_distance(dst, o, want);
            if (d < best_d)
                best_d = d, best = o;
        }
        out->opt[k] = (int16_t)best;
    }
}

/* ---- seeds ------------------------------------------------------------------------------ */

typedef struct ranked_task {
    double distance;
    const task_records *t;
    int *order;        /* the task's valid records, best first */
    int nvalid;
} ranked_task;

static double shape_distance(const dt_space *a, const dt_space *b)
{
    double d = 0;
    for (int k = 0; k < a->nknobs; k++)
        if (a->knobs[k].type == DT_KNOB_SPLIT)
            d += fabs(log2((double)a->knobs[k].axis_len) - log2((double)b->knobs[k].axis_len));
    return d;
}

static int by_distance(const void *a, const void *b)
{
    const ranked_task *x = a, *y = b;
    return (x->distance > y->distance) - (x->distance < y->distance);
}

/* The first `want` valid records of t by GFLOPS, best first, into order;
 * returns how many. */
static int best_records(const task_records *t, int *order, int want)
{
    int m = 0;
    for (int i = 0; i < t->n; i++) {
        if (t->gflops[i] <= 0 || (m == want && t->gflops[order[m - 1]] >= t->gflops[i]))
            continue;
        int j = m < want ? m++ : want - 1;
        while (j > 0 && t->gflops[order[j - 1]] < t->gflops[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    return m;
}

static bool seen_point(const dt_space *space, const dt_point *out, int n, const dt_point *p)
{
    for (int i = 0; i < n; i++)
        if (dt_space_same_point(space, &out[i], p))
            return true;
    return false;
}

int dt_transfer_seeds(const dt_transfer *x, const dt_space *space, int max, dt_point *out)
{
    char shape[128];
    dt_task_shape_str(&space->task, shape, sizeof shape);
    if (max > DT_TRANSFER_SEEDS)
        max = DT_TRANSFER_SEEDS;
    ranked_task *rank = calloc((size_t)x->ntasks + 1, sizeof *rank);
    int *orders = calloc(((size_t)x->ntasks + 1) * DT_TRANSFER_SEEDS, sizeof *orders);
    int nt = 0, n = 0;
    if (!rank || !orders)
        goto done;   /* no seeds is a correct (if poorer) answer */
    for (int i = 0; i < x->ntasks; i++) {
        if (!serves(&x->tasks[i], space, shape))
            continue;
        ranked_task *r = &rank[nt];
        r->t = &x->tasks[i];
        r->distance = shape_distance(&r->t->space, space);
        r->order = orders + (size_t)nt * DT_TRANSFER_SEEDS;
        r->nvalid = best_records(r->t, r->order, DT_TRANSFER_SEEDS);
        nt++;
    }
    qsort(rank, (size_t)nt, sizeof *rank, by_distance);
    for (int depth = 0; depth < DT_TRANSFER_SEEDS && n < max; depth++)
        for (int i = 0; i < nt && n < max; i++) {
            if (depth >= rank[i].nvalid)
                continue;
            dt_point p;
            dt_transfer_map(&rank[i].t->space, &rank[i].t->points[rank[i].order[depth]], space, &p);
            dt_space_canonical(space, &p);
            if (dt_space_valid(space, &p) && !seen_point(space, out, n, &p))
                out[n++] = p;
        }
done:
    free(rank);
    free(orders);
    return n;
}
