/* cuda_plan.c — the CUDA code generator's plans (cuda_codegen.h): a plan
 * from a point of the CUDA space, its launch geometry, and the checks that
 * say whether the generator can write it and the device can run it.
 */
#include "cuda_codegen.h"
#include "cuda_codegen_internal.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- plans ------------------------------------------------------------------ */

void dt_cuda_plan_limits_default(dt_cuda_limits *limits)
{
    limits->max_threads = 1024;
    limits->max_shared_bytes = 48 * 1024;
    limits->max_grid_yz = 65535;
    limits->max_accumulators = DT_CUDA_MAX_ACCUMULATORS;
}

static void read_split(const dt_space *s, const dt_point *p, const char *name, int parts,
                       int axis_len, int *out)
{
    for (int i = 0; i < parts; i++)
        out[i] = dt_space_get(s, p, name, i, 1);
    if (dt_space_knob(s, name) < 0)
        out[0] = axis_len;
}

static bool is_conv(const dt_task *t)
{
    return t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D;
}

void dt_cuda_plan_from_point(const dt_space *space, const dt_point *point, dt_cuda_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->task = space->task;
    const dt_conv_shape *c = &space->task.conv;
    const dt_mm_shape *m = &space->task.mm;
    bool conv = is_conv(&space->task), full = space->task.kind == DT_OP_CONV2D;
    read_split(space, point, "tile_f", 4, conv ? c->c_out : 1, plan->f);
    read_split(space, point, "tile_y", 4, conv ? c->oh : m->m, plan->y);
    read_split(space, point, "tile_x", 4, conv ? c->ow : m->n, plan->x);
    read_split(space, point, "tile_rc", 2, full ? c->c_in : 1, plan->rc);
    read_split(space, point, "tile_ry", 2, conv ? c->kh : 1, plan->ry);
    read_split(space, point, "tile_rx", 2, conv ? c->kw : 1, plan->rx);
    read_split(space, point, "tile_k", 2, conv ? 1 : m->k, plan->k);
    plan->kt = space->task.kind == DT_OP_DEPTHWISE_CONV2D ? 1
                                                          : dt_space_get(space, point, "tile_kt", 0, 1);
    plan->unroll_max_step = dt_space_get(space, point, "auto_unroll_max_step", 0, 0);
    plan->unroll_explicit = dt_space_get(space, point, "unroll_explicit", 0, 0);
}

static int product(const int *parts, int n)
{
    long p = 1;
    for (int i = 0; i < n; i++)
        p = p * parts[i] > INT_MAX ? INT_MAX : p * parts[i];
    return (int)p;
}

int dt_cuda_plan_accumulators(const dt_cuda_plan *plan)
{
    const int *f = plan->f, *y = plan->y, *x = plan->x;
    return f[1] * f[3] * y[1] * y[3] * x[1] * x[3];
}

/* Bytes of the staged tiles of one reduction step. */
static long staged_bytes(const dt_cuda_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    if (p->task.kind != DT_OP_CONV2D)
        return 4L * p->k[DT_SPLIT_STAGED] * (extent(p->y) + extent(p->x));
    long rci = p->rc[1], ryi = p->ry[1], rxi = p->rx[1];
    long in_h = staged_span(extent(p->y), c->sh, (int)ryi, c->dh);
    long in_w = staged_span(extent(p->x), c->sw, (int)rxi, c->dw);
    return 4L * ((long)extent(p->f) * rci * ryi * rxi + rci * in_h * in_w);
}

/* The staged tiles, or with reduction threads the partial sums after them
 * ([accumulators][threads] in the same buffer), whichever is larger. */
static long shared_bytes(const dt_cuda_plan *p)
{
    if (p->task.kind == DT_OP_DEPTHWISE_CONV2D)
        return 0;
    long staged = staged_bytes(p);
    long partials = reduction_threads(p) > 1
                        ? 4L * dt_cuda_plan_accumulators(p) * plan_threads(p) : 0;
    return staged > partials ? staged : partials;
}

static unsigned batch_of(const dt_task *t)
{
    return (unsigned)(is_conv(t) ? t->conv.n : t->mm.b);
}

void dt_cuda_plan_launch(const dt_cuda_plan *plan, dt_cuda_launch *launch)
{
    launch->grid[0] = (unsigned)plan->x[DT_SPLIT_BLOCK];
    launch->grid[1] = (unsigned)plan->y[DT_SPLIT_BLOCK];
    launch->grid[2] = batch_of(&plan->task) * (unsigned)plan->f[DT_SPLIT_BLOCK];
    launch->block[0] = (unsigned)plan_threads(plan);
    launch->block[1] = 1;
    launch->block[2] = 1;
    launch->shared_bytes = (unsigned)shared_bytes(plan);
}

static int check_split(const int *split, int parts, int axis_len, const char *name, dt_error *err)
{
    for (int i = 0; i < parts; i++)
        if (split[i] < 1)
            return dt_error_set(err, DT_EINVAL, "%s has a factor below 1", name);
    if (product(split, parts) != axis_len)
        return dt_error_set(err, DT_EINVAL, "%s factors multiply to %d, not the axis %d", name,
                            product(split, parts), axis_len);
    return 0;
}

static int check_tensors(const dt_task *t, dt_error *err)
{
    size_t in, w, out;
    dt_task_tensor_sizes(t, &in, &w, &out);
    if (in > INT_MAX || w > INT_MAX || out > INT_MAX)
        return dt_error_set(err, DT_EINVAL, "a tensor of %s has more than INT_MAX elements", t->name);
    return 0;
}

/* The structural half of dt_cuda_plan_check: what codegen itself needs. */
int cuda_plan_check_structure(const dt_cuda_plan *p, dt_error *err)
{
    const dt_conv_shape *c = &p->task.conv;
    const dt_mm_shape *m = &p->task.mm;
    int rc = check_tensors(&p->task, err);
    if (rc)
        return rc;
    if (!is_conv(&p->task)) {
        if ((rc = check_split(p->y, 4, m->m, "tile_y", err)) ||
            (rc = check_split(p->x, 4, m->n, "tile_x", err)) ||
            (rc = check_split(p->k, 2, m->k, "tile_k", err)))
            return rc;
        if (p->k[DT_SPLIT_STAGED] % reduction_threads(p) != 0)
            return dt_error_set(err, DT_EINVAL, "tile_kt %d does not divide the staged K %d",
                                p->kt, p->k[DT_SPLIT_STAGED]);
        return 0;
    }
    if (p->task.kind == DT_OP_DEPTHWISE_CONV2D && reduction_threads(p) > 1)
        return dt_error_set(err, DT_EINVAL, "tile_kt %d on a depthwise convolution", p->kt);
    if ((rc = check_split(p->f, 4, c->c_out, "tile_f", err)) ||
        (rc = check_split(p->y, 4, c->oh, "tile_y", err)) ||
        (rc = check_split(p->x, 4, c->ow, "tile_x", err)))
        return rc;
    if (p->task.kind == DT_OP_DEPTHWISE_CONV2D)
        return 0;
    if ((rc = check_split(p->rc, 2, c->c_in, "tile_rc", err)) ||
        (rc = check_split(p->ry, 2, c->kh, "tile_ry", err)) ||
        (rc = check_split(p->rx, 2, c->kw, "tile_rx", err)))
        return rc;
    if (p->rc[DT_SPLIT_STAGED] % reduction_threads(p) != 0)
        return dt_error_set(err, DT_EINVAL, "tile_kt %d does not divide the staged channels %d",
                            p->kt, p->rc[DT_SPLIT_STAGED]);
    return 0;
}

int dt_cuda_plan_check(const dt_cuda_plan *plan, const dt_cuda_limits *limits, dt_error *err)
{
    dt_cuda_limits defaults;
    if (!limits) {
        dt_cuda_plan_limits_default(&defaults);
        limits = &defaults;
    }
    int rc = cuda_plan_check_structure(plan, err);
    if (rc)
        return rc;
    dt_cuda_launch l;
    dt_cuda_plan_launch(plan, &l);
    if (plan_threads(plan) > limits->max_threads)
        return dt_error_set(err, DT_EINVAL, "%d threads per block, over %d",
                            plan_threads(plan), limits->max_threads);
    if (shared_bytes(plan) > limits->max_shared_bytes)
        return dt_error_set(err, DT_EINVAL, "%ld bytes of shared memory, over %d",
                            shared_bytes(plan), limits->max_shared_bytes);
    if (l.grid[1] > (unsigned)limits->max_grid_yz || l.grid[2] > (unsigned)limits->max_grid_yz)
        return dt_error_set(err, DT_EINVAL, "grid %ux%ux%u over the y/z limit %d", l.grid[0],
                            l.grid[1], l.grid[2], limits->max_grid_yz);
    if (dt_cuda_plan_accumulators(plan) > limits->max_accumulators)
        return dt_error_set(err, DT_EINVAL, "%d accumulators per thread, over %d",
                            dt_cuda_plan_accumulators(plan), limits->max_accumulators);
    return 0;
}

void dt_cuda_plan_str(const dt_cuda_plan *p, char *buf, size_t len)
{
    const int *f = p->f, *y = p->y, *x = p->x;
    if (is_conv(&p->task))
        snprintf(buf, len,
                 "f=[%d,%d,%d,%d] y=[%d,%d,%d,%d] x=[%d,%d,%d,%d] rc=[%d,%d] ry=[%d,%d] "
                 "rx=[%d,%d] kt=%d unroll=%d explicit=%d",
                 f[0], f[1], f[2], f[3], y[0], y[1], y[2], y[3], x[0], x[1], x[2], x[3], p->rc[0],
                 p->rc[1], p->ry[0], p->ry[1], p->rx[0], p->rx[1], reduction_threads(p),
                 p->unroll_max_step, p->unroll_explicit);
    else
        snprintf(buf, len, "m=[%d,%d,%d,%d] n=[%d,%d,%d,%d] k=[%d,%d] kt=%d unroll=%d explicit=%d",
                 y[0], y[1], y[2], y[3], x[0], x[1], x[2], x[3], p->k[0], p->k[1],
                 reduction_threads(p), p->unroll_max_step, p->unroll_explicit);
}
