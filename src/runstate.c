/* runstate.c — the shared snapshot of a run (see runstate.h). */
#include "dtune/runstate.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/error.h"
#include "dtune/util.h"

int dt_run_state_init(dt_run_state *rs, const dt_model *model)
{
    memset(rs, 0, sizeof *rs);
    rs->tasks = calloc((size_t)model->ntasks, sizeof *rs->tasks);
    rs->flight = calloc((size_t)(model->ntasks > 0 ? model->ntasks : 1), sizeof *rs->flight);
    if (!rs->tasks || !rs->flight) {
        free(rs->tasks);
        free(rs->flight);
        return DT_ENOMEM;
    }
    pthread_mutex_init(&rs->lock, NULL);
    snprintf(rs->model, sizeof rs->model, "%s", model->name);
    rs->ntasks = model->ntasks;
    rs->current_task = -1;
    rs->warmup_task = -1;
    rs->slot_started = -1;
    rs->reached_at = -1;
    for (int i = 0; i < model->ntasks; i++) {
        const dt_task *t = &model->tasks[i];
        dt_task_state *ts = &rs->tasks[i];
        snprintf(ts->name, sizeof ts->name, "%s", t->name);
        snprintf(ts->kind, sizeof ts->kind, "%s", dt_op_kind_name(t->kind));
        dt_task_shape_str(t, ts->shape, sizeof ts->shape);
        ts->count = t->count;
        ts->gflop = t->flops / 1e9;
        ts->useful_gflop = t->useful_flops / 1e9;
    }
    return 0;
}

void dt_run_state_destroy(dt_run_state *rs)
{
    if (!rs)
        return;
    free(rs->tasks);
    free(rs->points);
    free(rs->decisions);
    free(rs->ranked);
    free(rs->steps);
    free(rs->flight);
    pthread_mutex_destroy(&rs->lock);
    rs->tasks = NULL;
    rs->points = NULL;
    rs->decisions = NULL;
    rs->ranked = NULL;
    rs->steps = NULL;
    rs->flight = NULL;
}

void dt_run_state_flight_begin(dt_run_state *rs, const dt_slot_flight *f)
{
    dt_run_state_flight_end(rs, f->worker);
    if (rs->flight && rs->nflight < rs->ntasks)
        rs->flight[rs->nflight++] = *f;
}

void dt_run_state_flight_end(dt_run_state *rs, int worker)
{
    for (int i = 0; i < rs->nflight; i++)
        if (rs->flight[i].worker == worker) {
            memmove(&rs->flight[i], &rs->flight[i + 1],
                    (size_t)(rs->nflight - i - 1) * sizeof *rs->flight);
            rs->nflight--;
            return;
        }
}

int dt_run_state_add_point(dt_run_state *rs, const dt_latency_point *p)
{
    if (rs->npoints == rs->cap_points) {
        size_t cap = dt_grow_capacity((size_t)rs->cap_points, (size_t)rs->npoints + 1);
        if (cap > INT_MAX || dt_resize(&rs->points, cap, sizeof *rs->points) != 0)
            return DT_ENOMEM;
        rs->cap_points = (int)cap;
    }
    rs->points[rs->npoints++] = *p;
    return 0;
}

/* Sort key of a score row: pickable tasks by score, the rest below them. */
static double rank_key(const dt_task_score *row)
{
    return isfinite(row->score) ? row->score : -HUGE_VAL;
}

/* The task second in dt_run_state_rank's order of rows: the first of the
 * highest key other than chosen; -1 when there is none. */
static int runner_up(const dt_task_score *rows, int n, int chosen)
{
    int best = -1;
    for (int k = 0; k < n; k++)
        if (k != chosen && (best < 0 || rank_key(&rows[k]) > rank_key(&rows[best])))
            best = k;
    return best;
}

int dt_run_state_add_decision(dt_run_state *rs, const dt_slot_decision *d,
                              const dt_task_score *rows)
{
    size_t n = (size_t)(rs->ntasks > 0 ? rs->ntasks : 1);
    if (!rs->ranked && !(rs->ranked = calloc(DT_RUN_STATE_RANKED * n, sizeof *rs->ranked)))
        return DT_ENOMEM;
    if (rs->ndecisions == rs->cap_decisions) {
        size_t cap = dt_grow_capacity((size_t)rs->cap_decisions, (size_t)rs->ndecisions + 1);
        if (cap > INT_MAX || dt_resize(&rs->decisions, cap, sizeof *rs->decisions) != 0)
            return DT_ENOMEM;
        rs->cap_decisions = (int)cap;
    }
    dt_slot_decision *e = &rs->decisions[rs->ndecisions];
    *e = *d;
    bool chosen = d->task >= 0 && d->task < rs->ntasks;
    e->runner_up = runner_up(rows, rs->ntasks, d->task);
    e->chosen = chosen ? rows[d->task] : (dt_task_score){ 0 };
    e->second = e->runner_up >= 0 ? rows[e->runner_up] : (dt_task_score){ 0 };
    if (rs->ntasks > 0)
        memcpy(rs->ranked + (size_t)(rs->ndecisions % DT_RUN_STATE_RANKED) * n, rows,
               (size_t)rs->ntasks * sizeof *rows);
    rs->ndecisions++;
    return 0;
}

int dt_run_state_add_step(dt_run_state *rs, const dt_best_step *step)
{
    if (rs->nsteps == rs->cap_steps) {
        size_t cap = dt_grow_capacity((size_t)rs->cap_steps, (size_t)rs->nsteps + 1);
        if (cap > INT_MAX || dt_resize(&rs->steps, cap, sizeof *rs->steps) != 0)
            return DT_ENOMEM;
        rs->cap_steps = (int)cap;
    }
    rs->steps[rs->nsteps++] = *step;
    return 0;
}

dt_task_score dt_run_state_logged_score(double score, const dt_belief_forecast *pred)
{
    dt_task_score row = { .score = score, .cut_ms = NAN, .cut_lo_ms = NAN, .cut_hi_ms = NAN };
    if (pred && dt_belief_forecast_ok(pred))
        row.pred = *pred;
    return row;
}

const dt_task_score *dt_run_state_scores(const dt_run_state *rs, int i)
{
    if (!rs->ranked || i < 0 || i >= rs->ndecisions || rs->ndecisions - i > DT_RUN_STATE_RANKED)
        return NULL;
    return rs->ranked + (size_t)(i % DT_RUN_STATE_RANKED) * (size_t)rs->ntasks;
}

const dt_task_score *dt_run_state_row(const dt_run_state *rs, int i, int k)
{
    const dt_task_score *rows = dt_run_state_scores(rs, i);
    if (k < 0 || k >= rs->ntasks)
        return NULL;
    if (rows)
        return &rows[k];
    const dt_slot_decision *d = &rs->decisions[i];
    return k == d->task ? &d->chosen : k == d->runner_up ? &d->second : NULL;
}

void dt_run_state_rank(const dt_run_state *rs, int i, int *order)
{
    const dt_task_score *rows = dt_run_state_scores(rs, i);
    const dt_slot_decision *d = &rs->decisions[i];
    int chosen = d->task, n = 0;
    if (chosen >= 0 && chosen < rs->ntasks)
        order[n++] = chosen;
    if (!rows) {
        if (d->runner_up >= 0 && d->runner_up < rs->ntasks)
            order[n++] = d->runner_up;
        for (int k = 0; k < rs->ntasks; k++)
            if (k != chosen && k != d->runner_up)
                order[n++] = k;
        return;
    }
    for (int k = 0; k < rs->ntasks; k++) {
        if (k == chosen)
            continue;
        int j = n++;
        /* insertion sort: ntasks is small and the order must be stable */
        while (j > 0 && order[j - 1] != chosen && rank_key(&rows[order[j - 1]]) < rank_key(&rows[k])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }
}

double dt_run_state_history_bytes(const dt_run_state *rs)
{
    return rs->history_bytes + (double)rs->npoints * sizeof *rs->points +
           (double)rs->ndecisions * sizeof *rs->decisions + (double)rs->nsteps * sizeof *rs->steps;
}

double dt_run_state_budget_left(const dt_run_state *rs)
{
    return rs->budget > rs->elapsed ? rs->budget - rs->elapsed : 0;
}

/* A malloc'd copy of n items of size bytes at src (one item when n is 0, as
 * memcpy from NULL is undefined even for 0 bytes). */
static void *copy_items(const void *src, int n, size_t size)
{
    void *dst = malloc((size_t)(n > 0 ? n : 1) * size);
    if (dst && n > 0)
        memcpy(dst, src, (size_t)n * size);
    return dst;
}

int dt_run_state_copy(dt_run_state *dst, dt_run_state *src)
{
    pthread_mutex_lock(&src->lock);
    *dst = *src;
    dst->tasks = copy_items(src->tasks, src->ntasks, sizeof *dst->tasks);
    dst->points = copy_items(src->points, src->npoints, sizeof *dst->points);
    dst->decisions = copy_items(src->decisions, src->ndecisions, sizeof *dst->decisions);
    bool ranked = src->ranked != NULL;
    dst->ranked = ranked ? copy_items(src->ranked, DT_RUN_STATE_RANKED * src->ntasks,
                                           sizeof *dst->ranked)
                              : NULL;
    dst->steps = copy_items(src->steps, src->nsteps, sizeof *dst->steps);
    dst->flight = copy_items(src->flight, src->nflight, sizeof *dst->flight);
    dst->cap_points = src->npoints;
    dst->cap_decisions = src->ndecisions;
    dst->cap_steps = src->nsteps;
    pthread_mutex_unlock(&src->lock);
    pthread_mutex_init(&dst->lock, NULL);
    if (!dst->tasks || !dst->points || !dst->decisions || (ranked && !dst->ranked) || !dst->steps ||
        !dst->flight) {
        dt_run_state_destroy(dst);
        return DT_ENOMEM;
    }
    return 0;
}

double dt_run_state_model_latency(const dt_run_state *rs)
{
    double total = 0;
    for (int i = 0; i < rs->ntasks; i++)
        total += rs->tasks[i].count * rs->tasks[i].best_latency_ms;
    return total;
}

int dt_run_state_init_empty(dt_run_state *rs, int ntasks)
{
    memset(rs, 0, sizeof *rs);
    rs->tasks = calloc((size_t)(ntasks > 0 ? ntasks : 1), sizeof *rs->tasks);
    if (!rs->tasks)
        return DT_ENOMEM;
    pthread_mutex_init(&rs->lock, NULL);
    rs->ntasks = ntasks;
    rs->current_task = -1;
    rs->warmup_task = -1;
    rs->slot_started = -1;
    rs->reached_at = -1;
    return 0;
}

double dt_run_state_speedup(const dt_run_state *rs)
{
    return rs->latency_ms > 0 && rs->start_latency_ms > 0 ? rs->start_latency_ms / rs->latency_ms
                                                           : NAN;
}

const char *dt_run_state_current_task(const dt_run_state *rs)
{
    int k = rs->current_task;
    return k >= 0 && k < rs->ntasks ? rs->tasks[k].name : NULL;
}

double dt_task_state_bound_share(const dt_task_state *t)
{
    if (!(t->bound_ms > 0) || !(t->best_gflops > 0) || !(t->best_latency_ms > 0))
        return 0;
    return fmin(1, t->bound_ms / t->best_latency_ms);
}

bool dt_task_state_hold_bound(dt_task_state *t)
{
    bool changed = false;
    if (!(t->best_gflops > 0))
        return false;
    double useful_gflops = t->best_latency_ms > 0 ? t->useful_gflop / (t->best_latency_ms * 1e-3) : 0;
    if (t->peak_gflops > 0 && useful_gflops > t->peak_gflops) {
        t->peak_gflops = useful_gflops;
        t->peak_from_kernel = true;
        changed = true;
    }
    if (t->bound_ms > 0 && t->best_latency_ms < t->bound_ms) {
        t->bound_ms = t->best_latency_ms;
        t->bound_from_kernel = true;
        changed = true;
    }
    return changed;
}

double dt_run_state_confirm_share(const dt_run_state *rs)
{
    double total = rs->measure_ms + rs->confirm_ms + rs->drift_ms;
    return total > 0 ? rs->confirm_ms / total : 0;
}

bool dt_run_state_drifted(const dt_run_state *rs)
{
    return rs->machine_speed > 0 && fabs(rs->machine_speed - 1) > DT_RUN_STATE_DRIFT_SAY;
}
