/* cpu_plan.c — the CPU code generator's plans (cpu_codegen.h): a plan from
 * a point of the CPU space, the default plan, and the checks that say
 * whether the generator can write a plan (each form's own limits are
 * checked in its file, cpu_codegen_internal.h).
 */
#include "cpu_codegen.h"
#include "cpu_codegen_internal.h"

#include <string.h>

/* ---- plans ----------------------------------------------------------------- */

void dt_cpu_plan_default(const dt_task *task, int threads, dt_cpu_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->task = *task;
    plan->threads = threads < 1 ? 1 : threads;
    plan->vec = 1;
    plan->unroll = 1;
    plan->pack_weight = 1;
    plan->co_block = plan->oh_block = plan->ow_block = plan->ci_block = plan->row_block = 1;
    plan->m_block = plan->n_block = plan->k_block = 1;
}

void dt_cpu_plan_from_point(const dt_space *space, const dt_point *point, int threads,
                            dt_cpu_plan *plan)
{
    dt_cpu_plan_default(&space->task, threads, plan);
    const char *co_knob = space->task.kind == DT_OP_DEPTHWISE_CONV2D ? "tile_c" : "tile_co";
    plan->vec = dt_space_get(space, point, "vec", 0, 1);
    plan->order = dt_space_get(space, point, "order", 0, 0);
    plan->pack_weight = dt_space_get(space, point, "pack", 0, 1);
    plan->red_order = dt_space_get(space, point, "red_order", 0, 0);
    plan->form = dt_space_get(space, point, "form", 0, DT_CPU_FORM_BLOCKED);
    plan->row_block = dt_space_get(space, point, "tile_rows", 0, 1);
    if (is_conv(&space->task)) {
        plan->unroll = dt_space_get(space, point, "unroll_kw", 0, 1);
        plan->co_block = dt_space_get(space, point, co_knob, 1, 1);
        plan->oh_block = dt_space_get(space, point, "tile_oh", 1, 1);
        plan->ow_block = dt_space_get(space, point, "tile_ow", 1, 1);
        plan->ci_block = dt_space_get(space, point, "tile_ci", 1, 1);
    } else {
        plan->unroll = dt_space_get(space, point, "unroll_k", 0, 1);
        plan->m_block = dt_space_get(space, point, "tile_m", 1, 1);
        plan->n_block = dt_space_get(space, point, "tile_n", 1, 1);
        plan->k_block = dt_space_get(space, point, "tile_k", 1, 1);
    }
}

int dt_cpu_plan_native_lanes(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return 16;
    if (__builtin_cpu_supports("avx"))
        return 8;
#endif
    return 4;
}

/* Vectors of pixels in a PIXELS register tile row: ow_block rounded up. */
int cpu_pixel_vectors(const dt_cpu_plan *p)
{
    return (p->ow_block + p->vec - 1) / p->vec;
}

/* An unpadded stride-1 1x1 convolution whose register tile holds whole
 * vectors reads its NCHW input in place (no copy, no read past a row). */
bool cpu_pixels_in_place(const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    return p->task.kind == DT_OP_CONV2D && c->kh == 1 && c->kw == 1 && c->sh == 1 &&
           c->sw == 1 && c->ph == 0 && c->pw == 0 && p->ow_block % p->vec == 0;
}

static int check_pixels(const dt_cpu_plan *p, dt_error *err)
{
    const dt_conv_shape *c = &p->task.conv;
    bool dw = p->task.kind == DT_OP_DEPTHWISE_CONV2D;
    int norders = dw ? DT_CPU_PIXELS_DEPTHWISE_ORDERS : DT_CPU_CONV_ORDERS;
    if (p->order < 0 || p->order >= norders)
        return dt_error_set(err, DT_EINVAL, "the pixels form of %s takes orders 0 to %d",
                            dw ? "depthwise" : "conv2d", norders - 1);
    /* one reduction order where there is no kernel window to order */
    if (p->red_order < 0 || p->red_order > (c->kh * c->kw > 1 ? 1 : 0))
        return dt_error_set(err, DT_EINVAL, "red_order %d out of range for the pixels form",
                            p->red_order);
    if (p->row_block < 1 || (!dw && p->row_block != 1) || p->oh_block % p->row_block != 0)
        return dt_error_set(err, DT_EINVAL, "row block %d: depthwise only, dividing the band of %d "
                            "rows", p->row_block, p->oh_block);
    /* the tile's pixel vectors are held besides the accumulators (in
     * depthwise only when a load feeds several rows) */
    int nv = cpu_pixel_vectors(p), acc = p->co_block * p->row_block * nv;
    int regs = acc + (!dw || p->row_block > 1 ? nv : 0);
    if (regs > DT_CPU_MAX_ACCUMULATORS)
        return dt_error_set(err, DT_EINVAL, "register tile of %d vectors exceeds %d", regs,
                            DT_CPU_MAX_ACCUMULATORS);
    return 0;
}

static int check_conv(const dt_cpu_plan *p, dt_error *err)
{
    const dt_conv_shape *c = &p->task.conv;
    bool dw = p->task.kind == DT_OP_DEPTHWISE_CONV2D;
    int norders = dw ? DT_CPU_DEPTHWISE_ORDERS : DT_CPU_CONV_ORDERS;
    if (!divides(p->co_block, c->c_out) || !divides(p->oh_block, c->oh) ||
        !divides(p->ow_block, c->ow) || (!dw && !divides(p->ci_block, c->c_in)))
        return dt_error_set(err, DT_EINVAL, "a tile does not divide its axis");
    if (p->form == DT_CPU_FORM_PIXELS)
        return check_pixels(p, err);
    if (p->form == DT_CPU_FORM_PLANE)
        return cpu_check_plane(p, err);
    if (p->form == DT_CPU_FORM_PAIRS)
        return cpu_check_pairs(p, err);
    if (p->form == DT_CPU_FORM_SLOTS)
        return cpu_check_slots(p, err);
    if (p->form != DT_CPU_FORM_BLOCKED)
        return dt_error_set(err, DT_EINVAL,
                            "form %d is not %d (blocked), %d (pixels), %d (plane), %d (pairs) or "
                            "%d (slots)", p->form, DT_CPU_FORM_BLOCKED, DT_CPU_FORM_PIXELS,
                            DT_CPU_FORM_PLANE, DT_CPU_FORM_PAIRS, DT_CPU_FORM_SLOTS);
    if (p->row_block != 1)
        return dt_error_set(err, DT_EINVAL, "row block %d: the blocked form has none", p->row_block);
    if (p->co_block % p->vec != 0)
        return dt_error_set(err, DT_EINVAL, "vec %d does not divide the channel tile %d",
                            p->vec, p->co_block);
    if (p->co_block / p->vec * p->ow_block > DT_CPU_MAX_ACCUMULATORS)
        return dt_error_set(err, DT_EINVAL, "register tile of %d vectors exceeds %d",
                            p->co_block / p->vec * p->ow_block, DT_CPU_MAX_ACCUMULATORS);
    if (p->order < 0 || p->order >= norders || p->red_order < 0 || p->red_order > 1)
        return dt_error_set(err, DT_EINVAL, "loop order %d out of range", p->order);
    return 0;
}

static int check_mm(const dt_cpu_plan *p, dt_error *err)
{
    const dt_mm_shape *m = &p->task.mm;
    if (!divides(p->m_block, m->m) || !divides(p->n_block, m->n) || !divides(p->k_block, m->k))
        return dt_error_set(err, DT_EINVAL, "a tile does not divide its axis");
    int vectorised = p->pack_weight ? p->n_block : p->k_block;
    if (vectorised % p->vec != 0)
        return dt_error_set(err, DT_EINVAL, "vec %d does not divide the %s tile %d", p->vec,
                            p->pack_weight ? "n" : "k", vectorised);
    int acc = p->pack_weight ? p->m_block * (p->n_block / p->vec) : p->m_block * p->n_block;
    int limit = p->pack_weight ? DT_CPU_MAX_ACCUMULATORS : DT_CPU_MAX_ACCUMULATORS - 4;
    if (acc > limit)
        return dt_error_set(err, DT_EINVAL, "register tile of %d vectors exceeds %d", acc, limit);
    if (p->order < 0 || p->order >= DT_CPU_MM_ORDERS)
        return dt_error_set(err, DT_EINVAL, "loop order %d out of range", p->order);
    return 0;
}

int dt_cpu_plan_check(const dt_cpu_plan *p, dt_error *err)
{
    if (p->vec != 1 && p->vec != 2 && p->vec != 4 && p->vec != 8 && p->vec != 16)
        return dt_error_set(err, DT_EINVAL, "vector width %d is not 1, 2, 4, 8 or 16", p->vec);
    if (p->threads < 1 || p->unroll < 0 || p->unroll > 64)
        return dt_error_set(err, DT_EINVAL, "threads or unroll out of range");
    if ((int)p->task.kind < 0 || p->task.kind >= DT_OP_KIND_COUNT)
        return dt_error_set(err, DT_EINVAL, "unknown op kind");
    return is_conv(&p->task) ? check_conv(p, err) : check_mm(p, err);
}
