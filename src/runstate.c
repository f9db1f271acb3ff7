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
    if (!rs->tasks)
        return DT_ENOMEM;
    pthread_mutex_init(&rs->lock, NULL);
    snprintf(rs->model, sizeof rs->model, "%s", model->name);
    rs->ntasks = model->ntasks;
    rs->current_task = -1;
    rs->reached_at = -1;
    for (int i = 0; i < model->ntasks; i++) {
        const dt_task *t = &model->tasks[i];
        dt_task_state *ts = &rs->tasks[i];
        snprintf(ts->name, sizeof ts->name, "%s", t->name);
        snprintf(ts->kind, sizeof ts->kind, "%s", dt_op_kind_name(t->kind));
        dt_task_shape_str(t, ts->shape, sizeof ts->shape);
        ts->count = t->count;
        ts->gflop = t->flops / 1e9;
    }
    return 0;
}

void dt_run_state_destroy(dt_run_state *rs)
{
    if (!rs)
        return;
    free(rs->tasks);
    free(rs->points);
    pthread_mutex_destroy(&rs->lock);
    rs->tasks = NULL;
    rs->points = NULL;
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

int dt_run_state_copy(dt_run_state *dst, dt_run_state *src)
{
    pthread_mutex_lock(&src->lock);
    *dst = *src;
    dst->tasks = malloc((size_t)(src->ntasks ? src->ntasks : 1) * sizeof *dst->tasks);
    dst->points = malloc((size_t)(src->npoints ? src->npoints : 1) * sizeof *dst->points);
    int rc = 0;
    if (!dst->tasks || !dst->points) {
        rc = DT_ENOMEM;
    } else {
        /* memcpy from NULL is undefined even for 0 bytes (no point yet) */
        if (src->ntasks > 0)
            memcpy(dst->tasks, src->tasks, (size_t)src->ntasks * sizeof *dst->tasks);
        if (src->npoints > 0)
            memcpy(dst->points, src->points, (size_t)src->npoints * sizeof *dst->points);
        dst->cap_points = src->npoints;
    }
    pthread_mutex_unlock(&src->lock);
    pthread_mutex_init(&dst->lock, NULL);
    if (rc) {
        free(dst->tasks);
        free(dst->points);
        dst->tasks = NULL;
        dst->points = NULL;
    }
    return rc;
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
