/* space_cpu.c — the CPU knob templates, one row per op kind.
 *
 * The knobs are the ones that matter on a CPU core: register tiles of output
 * channels (the vectorised axis) and width, reduction tiling, loop order,
 * unrolling, vector width and weight packing. Validity keeps the register
 * tile within the 32 vector registers of AVX-512 and makes the vector width
 * divide the vectorised tile. codegen_cpu reads these knobs by name.
 */
#include "dtune/space_table.h"

static const int vec_widths[] = { 1, 4, 8, 16 };
static const int on_off[] = { 0, 1 };
static const int conv_orders[] = { 0, 1, 2 };

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define MAX_ACCUMULATORS 28

static int build_conv(dt_space *s)
{
    const dt_conv_shape *c = &s->task.conv;
    int rc;
    if ((rc = dt_space_add_split(s, "tile_co", c->c_out, 2)) ||
        (rc = dt_space_add_split(s, "tile_oh", c->oh, 2)) ||
        (rc = dt_space_add_split(s, "tile_ow", c->ow, 2)) ||
        (rc = dt_space_add_split(s, "tile_ci", c->c_in, 2)) ||
        (rc = dt_space_add_choice(s, "order", conv_orders, NELEMS(conv_orders))) ||
        (rc = dt_space_add_choice(s, "unroll_kw", on_off, NELEMS(on_off))) ||
        (rc = dt_space_add_choice(s, "vec", vec_widths, NELEMS(vec_widths))) ||
        (rc = dt_space_add_choice(s, "pack", on_off, NELEMS(on_off))))
        return rc;
    return 0;
}

/* Register tile: (vectorised inner / vec) x other inner accumulators. */
static bool tile_fits(int vec_inner, int other_inner, int vec)
{
    return vec_inner % vec == 0 && (vec_inner / vec) * other_inner <= MAX_ACCUMULATORS;
}

static bool valid_conv(const dt_space *s, const dt_point *p)
{
    return tile_fits(dt_space_get(s, p, "tile_co", 1, 1), dt_space_get(s, p, "tile_ow", 1, 1),
                     dt_space_get(s, p, "vec", 0, 1));
}

static int build_depthwise(dt_space *s)
{
    const dt_conv_shape *c = &s->task.conv;
    int rc;
    if ((rc = dt_space_add_split(s, "tile_c", c->c_out, 2)) ||
        (rc = dt_space_add_split(s, "tile_oh", c->oh, 2)) ||
        (rc = dt_space_add_split(s, "tile_ow", c->ow, 2)) ||
        (rc = dt_space_add_choice(s, "unroll_kw", on_off, NELEMS(on_off))) ||
        (rc = dt_space_add_choice(s, "vec", vec_widths, NELEMS(vec_widths))))
        return rc;
    return 0;
}

static bool valid_depthwise(const dt_space *s, const dt_point *p)
{
    return tile_fits(dt_space_get(s, p, "tile_ow", 1, 1), dt_space_get(s, p, "tile_oh", 1, 1),
                     dt_space_get(s, p, "vec", 0, 1));
}

static int build_matmul(dt_space *s)
{
    const dt_mm_shape *m = &s->task.mm;
    int rc;
    if ((rc = dt_space_add_split(s, "tile_m", m->m, 2)) ||
        (rc = dt_space_add_split(s, "tile_n", m->n, 2)) ||
        (rc = dt_space_add_split(s, "tile_k", m->k, 2)) ||
        (rc = dt_space_add_choice(s, "order", conv_orders, NELEMS(conv_orders))) ||
        (rc = dt_space_add_choice(s, "unroll_k", on_off, NELEMS(on_off))) ||
        (rc = dt_space_add_choice(s, "vec", vec_widths, NELEMS(vec_widths))) ||
        (rc = dt_space_add_choice(s, "pack", on_off, NELEMS(on_off))))
        return rc;
    return 0;
}

static bool valid_matmul(const dt_space *s, const dt_point *p)
{
    return tile_fits(dt_space_get(s, p, "tile_n", 1, 1), dt_space_get(s, p, "tile_m", 1, 1),
                     dt_space_get(s, p, "vec", 0, 1));
}

const dt_space_template dt_space_cpu_templates[DT_OP_KIND_COUNT] = {
    [DT_OP_CONV2D] = { build_conv, valid_conv },
    [DT_OP_DEPTHWISE_CONV2D] = { build_depthwise, valid_depthwise },
    [DT_OP_DENSE] = { build_matmul, valid_matmul },
    [DT_OP_BATCH_MATMUL] = { build_matmul, valid_matmul },
};
