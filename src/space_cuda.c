/* space_cuda.c — the CUDA knob templates, shaped like AutoTVM's *.cuda ones.
 *
 * conv2d (direct): tile_f / tile_y / tile_x split output channels, rows and
 * columns 4 ways (block, virtual thread, thread, inner); tile_rc / tile_ry /
 * tile_rx split the reduction 2 ways (outer loop, inner loop staged through
 * shared memory); auto_unroll_max_step and unroll_explicit. Points with more
 * than 1024 threads per block or a shared-memory tile over 48 KiB are invalid.
 */
#include "dtune/space_table.h"

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define MAX_THREADS 1024
#define MAX_SHARED_BYTES (48 * 1024)

static const int conv_unroll_steps[] = { 0, 512, 1500 };
static const int depthwise_unroll_steps[] = { 0, 256, 1500 };
static const int on_off[] = { 0, 1 };

static int add_unroll(dt_space *s, const int *steps, int nsteps)
{
    int rc = dt_space_add_choice(s, "auto_unroll_max_step", steps, nsteps);
    return rc ? rc : dt_space_add_choice(s, "unroll_explicit", on_off, NELEMS(on_off));
}

static int build_conv(dt_space *s)
{
    const dt_conv_shape *c = &s->task.conv;
    int rc;
    if ((rc = dt_space_add_split(s, "tile_f", c->c_out, 4)) ||
        (rc = dt_space_add_split(s, "tile_y", c->oh, 4)) ||
        (rc = dt_space_add_split(s, "tile_x", c->ow, 4)) ||
        (rc = dt_space_add_split(s, "tile_rc", c->c_in, 2)) ||
        (rc = dt_space_add_split(s, "tile_ry", c->kh, 2)) ||
        (rc = dt_space_add_split(s, "tile_rx", c->kw, 2)))
        return rc;
    return add_unroll(s, conv_unroll_steps, NELEMS(conv_unroll_steps));
}

static int block_extent(const dt_space *s, const dt_point *p, const char *knob)
{
    return dt_space_get(s, p, knob, 1, 1) * dt_space_get(s, p, knob, 2, 1) *
           dt_space_get(s, p, knob, 3, 1);
}

static int threads_of(const dt_space *s, const dt_point *p)
{
    return dt_space_get(s, p, "tile_f", 2, 1) * dt_space_get(s, p, "tile_y", 2, 1) *
           dt_space_get(s, p, "tile_x", 2, 1);
}

static bool valid_conv(const dt_space *s, const dt_point *p)
{
    const dt_conv_shape *c = &s->task.conv;
    if (threads_of(s, p) > MAX_THREADS)
        return false;
    int rci = dt_space_get(s, p, "tile_rc", 1, 1), ryi = dt_space_get(s, p, "tile_ry", 1, 1);
    int rxi = dt_space_get(s, p, "tile_rx", 1, 1);
    int in_h = (block_extent(s, p, "tile_y") - 1) * c->sh + (ryi - 1) * c->dh + 1;
    int in_w = (block_extent(s, p, "tile_x") - 1) * c->sw + (rxi - 1) * c->dw + 1;
    long shared = 4L * ((long)block_extent(s, p, "tile_f") * rci * ryi * rxi + (long)rci * in_h * in_w);
    return shared <= MAX_SHARED_BYTES;
}

static int build_depthwise(dt_space *s)
{
    const dt_conv_shape *c = &s->task.conv;
    int rc;
    if ((rc = dt_space_add_split(s, "tile_f", c->c_out, 4)) ||
        (rc = dt_space_add_split(s, "tile_y", c->oh, 4)) ||
        (rc = dt_space_add_split(s, "tile_x", c->ow, 4)))
        return rc;
    return add_unroll(s, depthwise_unroll_steps, NELEMS(depthwise_unroll_steps));
}

static bool valid_depthwise(const dt_space *s, const dt_point *p)
{
    return threads_of(s, p) <= MAX_THREADS;
}

static int build_matmul(dt_space *s)
{
    const dt_mm_shape *m = &s->task.mm;
    int rc;
    if ((rc = dt_space_add_split(s, "tile_y", m->m, 4)) ||
        (rc = dt_space_add_split(s, "tile_x", m->n, 4)) ||
        (rc = dt_space_add_split(s, "tile_k", m->k, 2)))
        return rc;
    return add_unroll(s, conv_unroll_steps, NELEMS(conv_unroll_steps));
}

static bool valid_matmul(const dt_space *s, const dt_point *p)
{
    int threads = dt_space_get(s, p, "tile_y", 2, 1) * dt_space_get(s, p, "tile_x", 2, 1);
    int ki = dt_space_get(s, p, "tile_k", 1, 1);
    long shared = 4L * ki * (block_extent(s, p, "tile_y") + block_extent(s, p, "tile_x"));
    return threads <= MAX_THREADS && shared <= MAX_SHARED_BYTES;
}

const dt_space_template dt_space_cuda_templates[DT_OP_KIND_COUNT] = {
    [DT_OP_CONV2D] = { build_conv, valid_conv },
    [DT_OP_DEPTHWISE_CONV2D] = { build_depthwise, valid_depthwise },
    [DT_OP_DENSE] = { build_matmul, valid_matmul },
    [DT_OP_BATCH_MATMUL] = { build_matmul, valid_matmul },
};
