/* cuda_space.c — the CUDA knob templates, shaped like AutoTVM's *.cuda ones.
 *
 * conv2d (direct): tile_f / tile_y / tile_x split output channels, rows and
 * columns 4 ways (block, virtual thread, thread, inner); tile_rc / tile_ry /
 * tile_rx split the reduction 2 ways (outer loop, inner loop staged through
 * shared memory); tile_kt threads (1 to 32) may share each output's
 * reduction, splitting the staged channels; auto_unroll_max_step and
 * unroll_explicit. depthwise_conv2d
 * has the three output splits and the unroll knobs; dense and batch_matmul
 * split M (tile_y) and N (tile_x) 4 ways and K (tile_k) 2 ways, batch on grid
 * z, and tile_kt threads (1 to 32) may share each output's reduction.
 * Validity is cuda_codegen's plan check under the default limits: more than
 * 1024 threads per block, a shared-memory tile over 48 KiB, a grid y/z over
 * 65535, a register tile over DT_CUDA_MAX_ACCUMULATORS or a tile_kt that does
 * not divide the staged K (channels) is invalid.
 */
#include "cuda_codegen.h"
#include "space_table.h"

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const int conv_unroll_steps[] = { 0, 512, 1500 };
static const int depthwise_unroll_steps[] = { 0, 256, 1500 };
static const int on_off[] = { 0, 1 };
static const int reduction_threads[] = { 1, 2, 4, 8, 16, 32 };

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
        (rc = dt_space_add_split(s, "tile_rx", c->kw, 2)) ||
        (rc = dt_space_add_choice(s, "tile_kt", reduction_threads, NELEMS(reduction_threads))))
        return rc;
    return add_unroll(s, conv_unroll_steps, NELEMS(conv_unroll_steps));
}

/* One validity rule for every kind, shared with the backend: the plan
 * cuda_codegen would generate must fit the default limits (1024 threads,
 * 48 KiB of shared memory, grid y/z <= 65535, a bounded register tile). */
static bool valid_plan(const dt_space *s, const dt_point *p)
{
    dt_cuda_plan plan;
    dt_cuda_plan_from_point(s, p, &plan);
    return dt_cuda_plan_check(&plan, NULL, NULL) == 0;
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

static int build_matmul(dt_space *s)
{
    const dt_mm_shape *m = &s->task.mm;
    int rc;
    if ((rc = dt_space_add_split(s, "tile_y", m->m, 4)) ||
        (rc = dt_space_add_split(s, "tile_x", m->n, 4)) ||
        (rc = dt_space_add_split(s, "tile_k", m->k, 2)) ||
        (rc = dt_space_add_choice(s, "tile_kt", reduction_threads, NELEMS(reduction_threads))))
        return rc;
    return add_unroll(s, conv_unroll_steps, NELEMS(conv_unroll_steps));
}

const dt_space_template dt_cuda_space_templates[DT_OP_KIND_COUNT] = {
    [DT_OP_CONV2D] = { build_conv, valid_plan },
    [DT_OP_DEPTHWISE_CONV2D] = { build_depthwise, valid_plan },
    [DT_OP_DENSE] = { build_matmul, valid_plan },
    [DT_OP_BATCH_MATMUL] = { build_matmul, valid_plan },
};
