/* cpu_space.c — the CPU knob templates, one row per op kind.
 *
 * The knobs are the ones cpu_codegen turns into loop nests (see the table at
 * the top of cpu_codegen.c): register tiles of output channels (the
 * vectorised axis) and width, row and reduction tiles, loop order, reduction
 * order, unrolling, vector width and weight packing. A point is valid exactly
 * when cpu_codegen can generate it (dt_cpu_plan_check): tiles divisible by
 * the vector width and a register tile within the 32 vector registers of
 * AVX-512, so the space and the generator cannot disagree. The vector width
 * knob offers only widths up to the machine's (dt_space_opts): wider
 * generic vectors are valid C but several times slower, so offering them
 * would only spend trials.
 *
 * The `form` knob (DT_CPU_FORM_BLOCKED / DT_CPU_FORM_PIXELS, and for
 * depthwise DT_CPU_FORM_PLANE, valid where each of its taps fits two vector
 * loads, and DT_CPU_FORM_PAIRS and DT_CPU_FORM_SLOTS where the rows' stride
 * is 2; see cpu_codegen.h) is offered where the blocked form's layout conversions
 * dominate: every depthwise convolution, 1x1 convolutions (expansions and
 * projections on large maps with few channels, strided 1x1) and
 * convolutions with at most DT_CPU_PIXELS_MAX_CIN input channels (a
 * network's first layer); depthwise spaces also get `tile_rows`, the output
 * rows of a pixels register tile (1 in the blocked form). Other spaces have
 * neither. The schema hash (db.h) covers a space's knobs, so a space with
 * them never shares a hash, nor its records, with one without. The plane
 * form reads only `vec`, `unroll_kw` and `tile_rows`, the pairs and slots
 * forms `vec` and `tile_rows`; such a point is valid only with the other
 * knobs at their first option (canonical_point), so each of its kernels has
 * one index.
 */
#include <string.h>

#include "cpu_codegen.h"
#include "space_table.h"

static const int vec_widths[] = { 1, 4, 8, 16 };
static const int on_off[] = { 0, 1 };
static const int forms[] = { DT_CPU_FORM_BLOCKED, DT_CPU_FORM_PIXELS };
static const int depthwise_forms[] = { DT_CPU_FORM_BLOCKED, DT_CPU_FORM_PIXELS, DT_CPU_FORM_PLANE,
                                       DT_CPU_FORM_PAIRS, DT_CPU_FORM_SLOTS };
/* The forms at the end of depthwise_forms offered only where the rows'
 * stride is 2 (offers_strided). */
#define STRIDED_FORMS 2
static const int register_rows[] = { 1, 2, 4 };
static const int conv_orders[] = { 0, 1, 2, 3, 4, 5 };
static const int depthwise_orders[] = { 0, 1, 2 };
static const int mm_orders[] = { 0, 1, 2, 3 };
static const int unroll_factors[] = { 1, 2, 4, 8 };

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* conv2d with at most this many input channels gets the form knob. */
#define DT_CPU_PIXELS_MAX_CIN 4

/* The vec knob: the widths in vec_widths up to s->cpu_max_vec (0 = this
 * machine's, written back). */
static int add_vec_knob(dt_space *s)
{
    if (s->cpu_max_vec == 0)
        s->cpu_max_vec = dt_cpu_plan_native_lanes();
    int n = 0;
    while (n < NELEMS(vec_widths) && vec_widths[n] <= s->cpu_max_vec)
        n++;
    return dt_space_add_choice(s, "vec", vec_widths, n);
}

_Static_assert(NELEMS(conv_orders) == DT_CPU_CONV_ORDERS, "conv orders");
_Static_assert(NELEMS(depthwise_orders) == DT_CPU_DEPTHWISE_ORDERS, "depthwise orders");
_Static_assert(NELEMS(mm_orders) == DT_CPU_MM_ORDERS, "mm orders");

static bool offers_pixels(const dt_task *t)
{
    const dt_conv_shape *c = &t->conv;
    return t->kind == DT_OP_DEPTHWISE_CONV2D || (c->kh == 1 && c->kw == 1) ||
           c->c_in <= DT_CPU_PIXELS_MAX_CIN;
}

/* The pairs and slots forms are offered where their checks can pass: stride
 * 2 along rows without dilation, an even channel count for pairs (so the
 * other depthwise spaces keep their schema). */
static bool offers_strided(const dt_task *t)
{
    return t->conv.sw == 2 && t->conv.dw == 1 && t->conv.c_out % 2 == 0;
}

static int add_form_knob(dt_space *s)
{
    if (s->task.kind == DT_OP_DEPTHWISE_CONV2D)
        return dt_space_add_choice(s, "form", depthwise_forms,
                                   NELEMS(depthwise_forms) -
                                       (offers_strided(&s->task) ? 0 : STRIDED_FORMS));
    return offers_pixels(&s->task) ? dt_space_add_choice(s, "form", forms, NELEMS(forms)) : 0;
}

static int build_conv(dt_space *s)
{
    const dt_conv_shape *c = &s->task.conv;
    int rc;
    if ((rc = dt_space_add_split(s, "tile_co", c->c_out, 2)) ||
        (rc = dt_space_add_split(s, "tile_oh", c->oh, 2)) ||
        (rc = dt_space_add_split(s, "tile_ow", c->ow, 2)) ||
        (rc = dt_space_add_split(s, "tile_ci", c->c_in, 2)) ||
        (rc = dt_space_add_choice(s, "order", conv_orders, NELEMS(conv_orders))) ||
        (rc = dt_space_add_choice(s, "red_order", on_off, NELEMS(on_off))) ||
        (rc = dt_space_add_choice(s, "unroll_kw", on_off, NELEMS(on_off))) ||
        (rc = add_vec_knob(s)) ||
        (rc = dt_space_add_choice(s, "pack", on_off, NELEMS(on_off))) ||
        (rc = add_form_knob(s)))
        return rc;
    return 0;
}

static int build_depthwise(dt_space *s)
{
    const dt_conv_shape *c = &s->task.conv;
    int rc;
    if ((rc = dt_space_add_split(s, "tile_c", c->c_out, 2)) ||
        (rc = dt_space_add_split(s, "tile_oh", c->oh, 2)) ||
        (rc = dt_space_add_split(s, "tile_ow", c->ow, 2)) ||
        (rc = dt_space_add_choice(s, "order", depthwise_orders, NELEMS(depthwise_orders))) ||
        (rc = dt_space_add_choice(s, "unroll_kw", on_off, NELEMS(on_off))) ||
        (rc = add_vec_knob(s)) ||
        (rc = dt_space_add_choice(s, "pack", on_off, NELEMS(on_off))) ||
        (rc = add_form_knob(s)) ||
        (rc = dt_space_add_choice(s, "tile_rows", register_rows, NELEMS(register_rows))))
        return rc;
    return 0;
}

static int build_matmul(dt_space *s)
{
    const dt_mm_shape *m = &s->task.mm;
    int rc;
    if ((rc = dt_space_add_split(s, "tile_m", m->m, 2)) ||
        (rc = dt_space_add_split(s, "tile_n", m->n, 2)) ||
        (rc = dt_space_add_split(s, "tile_k", m->k, 2)) ||
        (rc = dt_space_add_choice(s, "order", mm_orders, NELEMS(mm_orders))) ||
        (rc = dt_space_add_choice(s, "unroll_k", unroll_factors, NELEMS(unroll_factors))) ||
        (rc = add_vec_knob(s)) ||
        (rc = dt_space_add_choice(s, "pack", on_off, NELEMS(on_off))))
        return rc;
    return 0;
}

/* The knobs the plane, pairs and slots forms read (cpu_codegen.h); each
 * builds one kernel for every value of the others. */
static const char *const plane_knobs[] = { "form", "vec", "unroll_kw", "tile_rows", NULL };
static const char *const strided_knobs[] = { "form", "vec", "tile_rows", NULL };

/* The knobs a form reads where it ignores the others; NULL where it reads all. */
static const char *const *form_reads(int form)
{
    if (form == DT_CPU_FORM_PLANE)
        return plane_knobs;
    if (form == DT_CPU_FORM_PAIRS || form == DT_CPU_FORM_SLOTS)
        return strided_knobs;
    return NULL;
}

static bool reads(const char *const *knobs, const char *name)
{
    for (int i = 0; knobs[i]; i++)
        if (strcmp(name, knobs[i]) == 0)
            return true;
    return false;
}

/* A plane-, pairs- or slots-form point: the knobs the form does not read at
 * their first option. */
static void canonical_point(const dt_space *s, dt_point *p)
{
    const char *const *knobs = form_reads(dt_space_get(s, p, "form", 0, -1));
    if (!knobs)
        return;
    for (int k = 0; k < s->nknobs; k++)
        if (!reads(knobs, s->knobs[k].name))
            p->opt[k] = 0;
}

/* Valid when the generator accepts the plan the point reads as and the
 * point is its kernel's one point (canonical_point). */
static bool valid_plan(const dt_space *s, const dt_point *p)
{
    dt_cpu_plan plan;
    dt_cpu_plan_from_point(s, p, 1, &plan);
    if (dt_cpu_plan_check(&plan, NULL) != 0)
        return false;
    if (!form_reads(plan.form))
        return true;
    dt_point q = *p;
    canonical_point(s, &q);
    return dt_space_same_point(s, &q, p);
}

const dt_space_template dt_cpu_space_templates[DT_OP_KIND_COUNT] = {
    [DT_OP_CONV2D] = { build_conv, valid_plan },
    [DT_OP_DEPTHWISE_CONV2D] = { build_depthwise, valid_plan, canonical_point },
    [DT_OP_DENSE] = { build_matmul, valid_plan },
    [DT_OP_BATCH_MATMUL] = { build_matmul, valid_plan },
};
