/* cpu_codegen.c — writes the C source of one CPU configuration.
 *
 * The generator prints a complete translation unit: constants of the task and
 * plan as macros, packing routines, a register-tile function whose
 * accumulators are named vector variables (a0_0 .. aP_V, so the compiler
 * keeps them in registers), and the tile loops in the order the plan asks
 * for. Vectors are GCC vector extensions of `vec` floats; with
 * -march=native -ffp-contract=fast the compiler turns `acc += w * x` into
 * one broadcast FMA. What each knob changes:
 *
 *   tile_co/tile_c, tile_ow   the register tile (channels x pixels)
 *   tile_oh                   rows per spatial tile (cache blocking); pixels
 *                             depthwise: output rows per packed input band
 *   tile_ci / tile_k          reduction tiles; with a reduction loop outside
 *                             the spatial loops partial sums go to memory
 *   order                     permutation of the tile loops (tables below)
 *   red_order                 conv2d: r,s outside ci (input blocked by ci)
 *                             or ci outside r,s (padded NCHW input)
 *   unroll_kw / unroll_k      kw loop copied in the source / GCC unroll of k
 *   vec                       1, 4, 8 or 16 lanes (scalar, SSE, AVX2, AVX-512)
 *   pack                      weights packed once outside the timed call;
 *                             conv without it packs in every call, matrix
 *                             products without it use dot products over K
 *                             on the weights as stored
 *   form                      convolutions: channel-blocked layout with
 *                             vectors over channels, or NCHW with vectors
 *                             over output width (cpu_codegen.h); in the
 *                             pixels form tile_ow need not be a multiple of
 *                             vec (the last vector is stored in part)
 */
#include "cpu_codegen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/util.h"

/* ---- the text being written ----------------------------------------------- */

static void emit(dt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void emit(dt_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dt_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

/* ---- plans ----------------------------------------------------------------- */

static bool is_conv(const dt_task *t)
{
    return t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D;
}

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

int dt_cpu_native_lanes(void)
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

static bool divides(int part, int whole)
{
    return part >= 1 && whole % part == 0;
}

/* Vectors of pixels in a PIXELS register tile row: ow_block rounded up. */
static int pixel_vectors(const dt_cpu_plan *p)
{
    return (p->ow_block + p->vec - 1) / p->vec;
}

/* An unpadded stride-1 1x1 convolution whose register tile holds whole
 * vectors reads its NCHW input in place (no copy, no read past a row). */
static bool pixels_in_place(const dt_cpu_plan *p)
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
    int nv = pixel_vectors(p), acc = p->co_block * p->row_block * nv;
    int regs = acc + (!dw || p->row_block > 1 ? nv : 0);
    if (regs > DT_CPU_MAX_ACCUMULATORS)
        return dt_error_set(err, DT_EINVAL, "register tile of %d vectors exceeds %d", regs,
                            DT_CPU_MAX_ACCUMULATORS);
    return 0;
}

static int check_plane(const dt_cpu_plan *p, dt_error *err);
static int check_pairs(const dt_cpu_plan *p, dt_error *err);
static int check_slots(const dt_cpu_plan *p, dt_error *err);

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
        return check_plane(p, err);
    if (p->form == DT_CPU_FORM_PAIRS)
        return check_pairs(p, err);
    if (p->form == DT_CPU_FORM_SLOTS)
        return check_slots(p, err);
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

static const char *form_name(int form)
{
    return form == DT_CPU_FORM_PIXELS ? "pixels" : form == DT_CPU_FORM_PLANE ? "plane"
         : form == DT_CPU_FORM_PAIRS ? "pairs" : form == DT_CPU_FORM_SLOTS ? "slots" : "blocked";
}

/* One-line description of plan, e.g. "co=32(v16x2) ow=14 oh=2 ci=16 order=3 ...". */
static void plan_str(const dt_cpu_plan *p, char *buf, size_t len)
{
    if (is_conv(&p->task))
        snprintf(buf, len, "form=%s co=%d ow=%d oh=%d ci=%d vec=%d order=%d red=%d unroll_kw=%d "
                 "pack=%d rows=%d threads=%d", form_name(p->form),
                 p->co_block, p->ow_block, p->oh_block, p->ci_block, p->vec, p->order,
                 p->red_order, p->unroll, p->pack_weight, p->row_block, p->threads);
    else
        snprintf(buf, len, "m=%d n=%d k=%d vec=%d order=%d unroll_k=%d pack=%d threads=%d",
                 p->m_block, p->n_block, p->k_block, p->vec, p->order, p->unroll,
                 p->pack_weight, p->threads);
}

/* ---- shared pieces of generated code --------------------------------------- */

static size_t round16(size_t n)
{
    return (n + 15) / 16 * 16;
}

static void emit_prelude(dt_buf *b, const dt_cpu_plan *p)
{
    char shape[128], plan[256];
    dt_task_shape_str(&p->task, shape, sizeof shape);
    plan_str(p, plan, sizeof plan);
    emit(b, "/* generated by dtune cpu_codegen: %s %s\n * plan: %s */\n",
         dt_op_kind_name(p->task.kind), shape, plan);
    emit(b, "#include <stddef.h>\n#include <string.h>\n\n");
    if (p->vec > 1) {
        emit(b, "typedef float vf __attribute__((vector_size(%d)));\n", 4 * p->vec);
        emit(b, "typedef float vfu __attribute__((vector_size(%d), aligned(4), may_alias));\n",
             4 * p->vec);
    } else {
        emit(b, "typedef float vf;\ntypedef float vfu;\n");
    }
    emit(b, "#define VEC %d\n#define LD(p) (*(const vfu *)(p))\n"
            "#define ST(p, v) (*(vfu *)(p) = (v))\n", p->vec);
    /* SHUF(a, b, lanes...): the lanes of a then b named by index, as GCC's
     * __builtin_shuffle or clang's __builtin_shufflevector has it */
    if (p->vec > 1)
        emit(b, "#ifdef __clang__\n#define SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)\n"
                "#else\ntypedef int vlane __attribute__((vector_size(%d)));\n"
                "#define SHUF(a, b, ...) __builtin_shuffle(a, b, (vlane){ __VA_ARGS__ })\n#endif\n",
             4 * p->vec);
    emit(b, "\n");
}

static void emit_omp(dt_buf *b, const dt_cpu_plan *p, int collapse)
{
    if (p->threads > 1 && collapse > 1)
        emit(b, "#pragma omp parallel for collapse(%d) num_threads(%d) schedule(static)\n",
             collapse, p->threads);
    else if (p->threads > 1)
        emit(b, "#pragma omp parallel for num_threads(%d) schedule(static)\n", p->threads);
}

/* Emits perfectly nested loops (names[i] from 0 to bounds[i]) and the body;
 * the OpenMP pragma goes before loop omp_at, collapsing it with the next. */
static void emit_loops(dt_buf *b, const dt_cpu_plan *p, const char *const *names,
                       const char *const *bounds, int nloops, int omp_at, const char *body)
{
    for (int i = 0; i < nloops; i++) {
        if (i == omp_at)
            emit_omp(b, p, 2);
        emit(b, "    for (int %s = 0; %s < %s; %s++)\n", names[i], names[i], bounds[i], names[i]);
    }
    emit(b, "        %s\n", body);
}

static void emit_acc_decl(dt_buf *b, int rows, int cols)
{
    for (int i = 0; i < rows; i++) {
        emit(b, "    vf");
        for (int j = 0; j < cols; j++)
            emit(b, "%s a%d_%d", j ? "," : "", i, j);
        emit(b, ";\n");
    }
}

static void emit_acc_zero(dt_buf *b, int rows, int cols)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            emit(b, "    a%d_%d = (vf){0};\n", i, j);
}

/* Accumulator (i, j) lives at base + i * row_stride + j * VEC. */
static void emit_acc_io(dt_buf *b, int rows, int cols, const char *base, const char *row_stride,
                        bool store)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            if (store)
                emit(b, "    ST(%s + %d * (%s) + %d * VEC, a%d_%d);\n", base, i, row_stride, j, i, j);
            else
                emit(b, "    a%d_%d = LD(%s + %d * (%s) + %d * VEC);\n", i, j, base, i, row_stride, j);
        }
}

static void emit_weight_loads(dt_buf *b, int cols, const char *base)
{
    for (int j = 0; j < cols; j++)
        emit(b, "            const vf w%d = LD(%s + %d * VEC);\n", j, base, j);
}

/* The broadcast FMAs of a register tile: for each row i (of those whose bit
 * is set in rows_used) a scalar
 * `const float <scalar> = <base>[i<index>]` multiplies the loaded vectors
 * <vector>0 .. <vector>{cols-1}: a{i}_{j} += <vector>j * <scalar>. The
 * direct convolution broadcasts an input pixel over weight vectors, the
 * pixel-vectorised one a weight over pixel vectors, the panel product an
 * element of A over vectors of B. */
static void emit_broadcast_fmas_of(dt_buf *b, int rows, uint64_t rows_used, int cols, char scalar,
                                   char vector, const char *base, const char *index)
{
    for (int i = 0; i < rows; i++) {
        if (!(rows_used >> i & 1))
            continue;
        emit(b, "            { const float %c = %s[%d%s];", scalar, base, i, index);
        for (int j = 0; j < cols; j++)
            emit(b, " a%d_%d += %c%d * %c;", i, j, vector, j, scalar);
        emit(b, " }\n");
    }
}

static void emit_broadcast_fmas(dt_buf *b, int rows, int cols, char scalar, char vector,
                                const char *base, const char *index)
{
    emit_broadcast_fmas_of(b, rows, UINT64_MAX, cols, scalar, vector, base, index);
}

/* The kw loop, either a real loop kept rolled or KW copies with s fixed. */
static void emit_s_open(dt_buf *b, const dt_cpu_plan *p, int s)
{
    if (p->unroll)
        emit(b, "        { const int s = %d;\n", s);
    else
        emit(b, "        _Pragma(\"GCC unroll 1\")\n        for (int s = 0; s < KW; s++) {\n");
}

static int s_copies(const dt_cpu_plan *p)
{
    return p->unroll ? p->task.conv.kw : 1;
}

static void emit_conv_defines(dt_buf *b, const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    emit(b, "#define NB %d\n#define CI %d\n#define CO %d\n#define H %d\n#define W %d\n"
            "#define KH %d\n#define KW %d\n#define SH %d\n#define SW %d\n#define PH %d\n"
            "#define PW %d\n#define DH %d\n#define DW %d\n#define OH %d\n#define OW %d\n",
         c->n, c->c_in, c->c_out, c->h, c->w, c->kh, c->kw, c->sh, c->sw, c->ph, c->pw,
         c->dh, c->dw, c->oh, c->ow);
    emit(b, "#define HP %d\n#define WP %d\n#define COB %d\n#define COO %d\n#define OHB %d\n"
            "#define OHO %d\n#define OWB %d\n#define OWO %d\n#define CV %d\n",
         c->h + 2 * c->ph, c->w + 2 * c->pw, p->co_block, c->c_out / p->co_block, p->oh_block,
         c->oh / p->oh_block, p->ow_block, c->ow / p->ow_block, p->co_block / p->vec);
}

static void emit_entry(dt_buf *b, const dt_cpu_plan *p, const char *entry, size_t ws_floats,
                       const char *image_step)
{
    emit(b, "size_t %s_workspace(void)\n{\n    return %zu;\n}\n\n", entry, ws_floats);
    emit(b, "void %s_prepare(const float *restrict weight, float *restrict ws)\n{\n", entry);
    if (p->pack_weight)
        emit(b, "    pack_w(weight, ws);\n}\n\n");
    else
        emit(b, "    (void)weight;\n    (void)ws;\n}\n\n");
    emit(b, "void %s(const float *restrict input, const float *restrict weight,\n"
            "    float *restrict output, float *restrict ws)\n{\n", entry);
    if (p->pack_weight)
        emit(b, "    (void)weight;\n");
    else
        emit(b, "    pack_w(weight, ws);\n");
    emit(b, "%s}\n", image_step);
}

/* ---- the channel-blocked layout's conversions ------------------------------- */

/* Whether a conversion between NCHW and a layout blocked by `block`
 * channels moves VEC x VEC squares through registers (vectors, and a block of
 * whole vectors; a depthwise input also needs one_to_one). Otherwise each
 * float is copied alone, one channel's row at a time. */
static bool transposes(const dt_cpu_plan *p, int block)
{
    return p->vec > 1 && block % p->vec == 0;
}

/* Whether channel c of a depthwise input block reads input channel c. */
static bool one_to_one(const dt_cpu_plan *p)
{
    return p->task.kind != DT_OP_DEPTHWISE_CONV2D || p->task.conv.c_out == p->task.conv.c_in;
}

/* TRANSPOSE(): the VEC x VEC square in r0 .. r{VEC-1} (row i in ri) becomes
 * its transpose, in log2(VEC) rounds of two-vector shuffles: the round of
 * distance k swaps, inside every 2k x 2k block, the two off-diagonal k x k
 * blocks, so lane l of row i, after the rounds of every bit where i and l
 * differ, lands at lane i of row l. */
static void emit_transpose_macro(dt_buf *b, const dt_cpu_plan *p)
{
    int n = p->vec;
    if (n == 1)
        return;
    emit(b, "#define TRANSPOSE() do {");
    for (int k = n / 2; k >= 1; k /= 2)
        for (int i = 0; i < n; i++) {
            if (i & k)
                continue;
            int j = i + k;
            emit(b, " \\\n    { vf lo = SHUF(r%d, r%d", i, j);
            for (int l = 0; l < n; l++)
                emit(b, ", %d", l & k ? n + l - k : l);
            emit(b, "); vf hi = SHUF(r%d, r%d", i, j);
            for (int l = 0; l < n; l++)
                emit(b, ", %d", l & k ? n + l : l + k);
            emit(b, "); r%d = lo; r%d = hi; }", i, j);
        }
    emit(b, " \\\n} while (0)\n\n");
}

static void emit_vector_names(dt_buf *b, int n, const char *prefix)
{
    for (int i = 0; i < n; i++)
        emit(b, "%s r%d", i ? "," : prefix, i);
}

/* The opening of pack_x(x, OUT), the input's copy in the call, its loop
 * over channels (blocks) shared among the plan's threads. */
static void emit_pack_x_open(dt_buf *b, const dt_cpu_plan *p, const char *out)
{
    emit(b, "static void pack_x(const float *restrict x, float *restrict %s)\n{\n", out);
    if (p->threads > 1)
        emit(b, "#pragma omp parallel for num_threads(%d)\n", p->threads);
}

/* pack_x of the blocked form: NCHW input to zero-padded [NBLK][HP][WP][BLK]
 * rows, channel c of block cb reading input channel c / MULT. The squares
 * of the transposing form run along each channel's plane as one row of H x W
 * pixels (so planes narrower than a vector still go in squares), each pixel's
 * vector stored where its row and column put it. */
static void emit_blocked_pack_x(dt_buf *b, const dt_cpu_plan *p, const char *blk,
                                const char *nblk, int block)
{
    emit_pack_x_open(b, p, "xp");
    emit(b, "    for (int cb = 0; cb < %s; cb++) {\n"
            "    float *blk = xp + (size_t)cb * HP * WP * %s;\n"
            "    for (int hp = 0; hp < HP; hp++) {\n"
            "        float *row = blk + (size_t)hp * WP * %s;\n"
            "        int ih = hp - PH;\n"
            "        if (ih < 0 || ih >= H) { memset(row, 0, WP * %s * sizeof(float)); continue; }\n"
            "        memset(row, 0, PW * %s * sizeof(float));\n"
            "        memset(row + (PW + W) * %s, 0, (WP - PW - W) * %s * sizeof(float));\n",
         nblk, blk, blk, blk, blk, blk, blk);
    if (!transposes(p, block) || !one_to_one(p)) {
        emit(b, "        for (int c = 0; c < %s; c++) {\n"
                "            const float *src = x + ((size_t)((cb * %s + c) / MULT) * H + ih) * W;\n"
                "            for (int iw = 0; iw < W; iw++)\n"
                "                row[(PW + iw) * %s + c] = src[iw];\n        }\n    }\n    }\n}\n\n",
             blk, blk, blk);
        return;
    }
    emit(b, "    }\n"
            "    for (int cv = 0; cv < %s / VEC; cv++) {\n"
            "        const float *src = x + (size_t)(cb * %s + cv * VEC) * H * W;\n"
            "        float *dst = blk + ((size_t)PH * WP + PW) * %s + cv * VEC;\n"
            "        int i = 0;\n"
            "        for (; i + VEC <= H * W; i += VEC) {\n", blk, blk, blk);
    emit_vector_names(b, p->vec, "            vf");
    emit(b, ";\n");
    for (int i = 0; i < p->vec; i++)
        emit(b, "            r%d = LD(src + (size_t)%d * H * W + i);\n", i, i);
    emit(b, "            TRANSPOSE();\n");
    /* pixel q of the channel at padded (q / W, q % W): q + (q / W) * (WP - W),
     * one division a store instead of a division and a remainder */
    for (int i = 0; i < p->vec; i++)
        emit(b, "            ST(dst + ((size_t)(i + %d) + (size_t)((i + %d) / W) * (WP - W)) * %s, r%d);\n",
             i, i, blk, i);
    emit(b, "        }\n"
            "        for (; i < H * W; i++)\n"
            "            for (int c = 0; c < VEC; c++)\n"
            "                dst[((size_t)(i / W) * WP + i %% W) * %s + c] = src[(size_t)c * H * W + i];\n"
            "    }\n    }\n}\n\n", blk);
}

/* unpack_y: the blocked output [CO/COB][OH][OW][COB] to NCHW. */
static void emit_unpack_y(dt_buf *b, const dt_cpu_plan *p)
{
    emit(b, "static void unpack_y(const float *restrict yb, float *restrict y)\n{\n");
    if (!transposes(p, p->co_block)) {
        if (p->threads > 1)
            emit(b, "#pragma omp parallel for num_threads(%d)\n", p->threads);
        emit(b, "    for (int co = 0; co < CO; co++) {\n"
                "        const float *src = yb + (size_t)(co / COB) * OH * OW * COB + co %% COB;\n"
                "        float *dst = y + (size_t)co * OH * OW;\n"
                "        for (int i = 0; i < OH * OW; i++)\n"
                "            dst[i] = src[(size_t)i * COB];\n    }\n}\n\n");
        return;
    }
    emit_omp(b, p, 2);
    emit(b, "    for (int cb = 0; cb < COO; cb++)\n"
            "    for (int cv = 0; cv < CV; cv++) {\n"
            "        const float *src = yb + (size_t)cb * OH * OW * COB + cv * VEC;\n"
            "        float *dst = y + (size_t)(cb * COB + cv * VEC) * OH * OW;\n"
            "        int i = 0;\n"
            "        for (; i + VEC <= OH * OW; i += VEC) {\n");
    emit_vector_names(b, p->vec, "            vf");
    emit(b, ";\n");
    for (int i = 0; i < p->vec; i++)
        emit(b, "            r%d = LD(src + (size_t)(i + %d) * COB);\n", i, i);
    emit(b, "            TRANSPOSE();\n");
    for (int i = 0; i < p->vec; i++)
        emit(b, "            ST(dst + (size_t)%d * OH * OW + i, r%d);\n", i, i);
    emit(b, "        }\n"
            "        for (; i < OH * OW; i++)\n"
            "            for (int c = 0; c < VEC; c++)\n"
            "                dst[(size_t)c * OH * OW + i] = src[(size_t)i * COB + c];\n"
            "    }\n}\n\n");
}

/* The entry of both convolutions: per image, pack the input after the packed
 * weights in the workspace, compute into the packed output, unpack to NCHW. */
static void emit_conv_entry(dt_buf *b, const dt_cpu_plan *p, const char *entry, size_t wsz,
                            size_t xsz, size_t ysz)
{
    char step[512];
    snprintf(step, sizeof step,
             "    for (int n = 0; n < NB; n++) {\n"
             "        pack_x(input + (size_t)n * CI * H * W, ws + %zu);\n"
             "        compute(ws, ws + %zu, ws + %zu);\n"
             "        unpack_y(ws + %zu, output + (size_t)n * CO * OH * OW);\n    }\n",
             wsz, wsz, wsz + xsz, wsz + xsz);
    emit_entry(b, p, entry, wsz + xsz + ysz, step);
}

/* ---- taps that read padding (blocked form) ----------------------------------- */

/* The blocked kernels leave out the kernel taps that read the zero padding
 * (dt_conv_taps), so they compute the task's useful FLOPs. Which taps those
 * are depends on where a tile sits: an output row at the top or bottom edge
 * reads fewer kernel rows, a column tile at the left or right edge has pixels
 * that read padding at some kernel columns. Each such class of rows and of
 * column tiles gets its own copy of the tile with its kernel rows as
 * constants and without those pixels' FMAs (the kw loop unrolled), and
 * tile() picks the copy by switch. The bounds stay constants on purpose: a
 * row loop with bounds read at run time costs GCC registers and spills a
 * full register tile's accumulators. Past TILE_COPIES_MAX copies the column
 * tiles, then the rows, go back to one copy that computes every tap. */

#define ROW_CLASSES_MAX 8
#define EDGE_TILES_MAX 8
#define TILE_COPIES_MAX 12

/* A dimension is split only where its padded taps are at least this share
 * of its taps: each copy of the tile is compiled, and on ResNet-18's 56 x 56
 * planes (1.2 % padded a dimension) nine copies made a 3x3 config's compile
 * 3.2x longer (median 310 -> 987 ms, which halved a run's trials) for a
 * kernel 2.5 % faster; on 28 x 28 (2.4 %) and smaller planes the kernels
 * gained 4-20 %. */
#define SPLIT_MIN_PADDED 0.02

typedef struct tap_split {
    int nrows;                          /* row classes that skip kernel rows */
    int row_first[ROW_CLASSES_MAX];     /* their kernel rows [first, end) */
    int row_end[ROW_CLASSES_MAX];
    bool row_interior;                  /* some output row reads every kernel row */
    int ncols;                          /* column tiles with a pixel on padding */
    int col_tile[EDGE_TILES_MAX];       /* their ow_o */
    bool col_interior;                  /* some column tile has none */
} tap_split;

static uint64_t all_pixels(const dt_cpu_plan *p)
{
    return ((uint64_t)1 << p->ow_block) - 1;
}

/* Bit j: pixel j of column tile t reads the input (not padding) at kernel
 * column s. t < 0: the interior tiles (every pixel). */
static uint64_t pixels_inside(const dt_cpu_plan *p, int t, int s)
{
    if (t < 0)
        return all_pixels(p);
    const dt_conv_shape *c = &p->task.conv;
    uint64_t inside = 0;
    for (int j = 0; j < p->ow_block; j++) {
        int first, end;
        dt_conv_taps(c->w, t * p->ow_block + j, c->kw, c->sw, c->pw, c->dw, &first, &end);
        if (s >= first && s < end)
            inside |= (uint64_t)1 << j;
    }
    return inside;
}

/* The share of one dimension's taps (out positions x k) that read padding. */
static double padded_share(int in, int out, int k, int stride, int pad, int dil)
{
    return 1.0 - dt_conv_taps_inside(in, out, k, stride, pad, dil) / ((double)out * k);
}

static void row_taps(const dt_cpu_plan *p, int oh, int *first, int *end)
{
    const dt_conv_shape *c = &p->task.conv;
    dt_conv_taps(c->h, oh, c->kh, c->sh, c->ph, c->dh, first, end);
}

/* The row classes of the output rows; false when there are more than
 * ROW_CLASSES_MAX. */
static bool split_rows(const dt_cpu_plan *p, tap_split *t)
{
    for (int oh = 0; oh < p->task.conv.oh; oh++) {
        int first, end, i = 0;
        row_taps(p, oh, &first, &end);
        if (first == 0 && end == p->task.conv.kh) {
            t->row_interior = true;
            continue;
        }
        while (i < t->nrows && (t->row_first[i] != first || t->row_end[i] != end))
            i++;
        if (i == ROW_CLASSES_MAX)
            return false;
        if (i == t->nrows) {
            t->row_first[i] = first;
            t->row_end[i] = end;
            t->nrows++;
        }
    }
    return true;
}

/* The column tiles at an edge; false when the kw loop is rolled (pixels
 * cannot be left out) or there are more than EDGE_TILES_MAX. */
static bool split_cols(const dt_cpu_plan *p, tap_split *t)
{
    if (!p->unroll)
        return false;
    for (int ct = 0; ct < p->task.conv.ow / p->ow_block; ct++) {
        bool edge = false;
        for (int s = 0; s < p->task.conv.kw && !edge; s++)
            edge = pixels_inside(p, ct, s) != all_pixels(p);
        if (!edge) {
            t->col_interior = true;
            continue;
        }
        if (t->ncols == EDGE_TILES_MAX)
            return false;
        t->col_tile[t->ncols++] = ct;
    }
    return true;
}

static int tile_copies(const tap_split *t)
{
    return (t->nrows + t->row_interior) * (t->ncols + t->col_interior);
}

static tap_split split_taps(const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    tap_split t = { .nrows = 0 };
    if (padded_share(c->h, c->oh, c->kh, c->sh, c->ph, c->dh) < SPLIT_MIN_PADDED ||
        !split_rows(p, &t))
        t.nrows = 0, t.row_interior = true;       /* every row reads every kernel row */
    if (padded_share(c->w, c->ow, c->kw, c->sw, c->pw, c->dw) < SPLIT_MIN_PADDED ||
        !split_cols(p, &t) || tile_copies(&t) > TILE_COPIES_MAX)
        t.ncols = 0, t.col_interior = true;       /* every pixel at every s */
    if (tile_copies(&t) > TILE_COPIES_MAX)
        t.nrows = 0, t.row_interior = true;
    return t;
}

static void emit_tile_open(dt_buf *b, const char *name, bool has_ci)
{
    emit(b, "static inline __attribute__((always_inline)) void %s(const float *restrict wp,\n"
            "    const float *restrict xp, float *restrict yb, int co_o, int oh, int ow_o%s)\n{\n",
         name, has_ci ? ", int ci_o" : "");
}

/* Where one copy of a tile sits: its kernel rows [r_first, r_end) and its
 * column tile (col_tile < 0: an interior one, every pixel at every s). */
typedef struct tile_place {
    int r_first, r_end, col_tile;
} tile_place;

typedef void (*tile_emitter)(dt_buf *b, const dt_cpu_plan *p, bool has_ci, const char *name,
                             const tile_place *at);

static void copy_name(char *name, size_t len, int row_class, int col)
{
    char rows[16] = "in", cols[16] = "in";
    if (row_class >= 0)
        snprintf(rows, sizeof rows, "%d", row_class);
    if (col >= 0)
        snprintf(cols, sizeof cols, "%d", col);
    snprintf(name, len, "tile_r%s_c%s", rows, cols);
}

/* The switch over ow_o of one row class's copies. */
static void emit_col_switch(dt_buf *b, const tap_split *t, int row_class, const char *args)
{
    char name[48];
    emit(b, "        switch (ow_o) {\n");
    for (int i = 0; i < t->ncols; i++) {
        copy_name(name, sizeof name, row_class, t->col_tile[i]);
        emit(b, "        %scase %d: %s(%s); return;\n",
             !t->col_interior && i == t->ncols - 1 ? "default: " : "", t->col_tile[i], name, args);
    }
    if (t->col_interior) {
        copy_name(name, sizeof name, row_class, -1);
        emit(b, "        default: %s(%s); return;\n", name, args);
    }
    emit(b, "        }\n");
}

/* tile(): the switch over the output row's class, then the column tile. */
static void emit_tile_switch(dt_buf *b, const dt_cpu_plan *p, const tap_split *t, bool has_ci)
{
    const char *args = has_ci ? "wp, xp, yb, co_o, oh, ow_o, ci_o" : "wp, xp, yb, co_o, oh, ow_o";
    emit_tile_open(b, "tile", has_ci);
    emit(b, "    switch (oh) {\n");
    for (int i = 0; i < t->nrows + t->row_interior; i++) {
        bool interior = i == t->nrows, last = i == t->nrows + t->row_interior - 1;
        emit(b, "   ");
        if (interior || last)
            emit(b, " default:");
        for (int oh = 0; oh < p->task.conv.oh && !interior; oh++) {
            int first, end;
            row_taps(p, oh, &first, &end);
            if (first == t->row_first[i] && end == t->row_end[i])
                emit(b, " case %d:", oh);
        }
        emit(b, "\n");
        emit_col_switch(b, t, interior ? -1 : i, args);
    }
    emit(b, "    }\n}\n\n");
}

/* The tile function(s) of a blocked kernel: one `tile` that computes every
 * tap, or a copy per row class and column tile and the `tile` that picks. */
static void emit_tiles(dt_buf *b, const dt_cpu_plan *p, bool has_ci, tile_emitter one)
{
    tap_split t = split_taps(p);
    if (t.nrows == 0 && t.ncols == 0) {
        tile_place all = { 0, p->task.conv.kh, -1 };
        one(b, p, has_ci, "tile", &all);
        return;
    }
    char name[48];
    for (int i = 0; i < t.nrows + t.row_interior; i++)
        for (int j = 0; j < t.ncols + t.col_interior; j++) {
            bool row_in = i == t.nrows, col_in = j == t.ncols;
            tile_place at = { row_in ? 0 : t.row_first[i], row_in ? p->task.conv.kh : t.row_end[i],
                              col_in ? -1 : t.col_tile[j] };
            copy_name(name, sizeof name, row_in ? -1 : i, at.col_tile);
            one(b, p, has_ci, name, &at);
        }
    emit_tile_switch(b, p, &t, has_ci);
}

/* ---- conv2d ------------------------------------------------------------------ */

static const char *const conv_order_loops[DT_CPU_CONV_ORDERS][5] = {
    { "co_o", "oh_o", "ci_o", "oh_i", "ow_o" },
    { "oh_o", "co_o", "ci_o", "oh_i", "ow_o" },
    { "ci_o", "co_o", "oh_o", "oh_i", "ow_o" },
    { "co_o", "oh_o", "oh_i", "ow_o", NULL },   /* reduction inside the register tile */
    { "oh_o", "co_o", "oh_i", "ow_o", NULL },
    { "oh_o", "oh_i", "ow_o", "co_o", NULL },
};

static const char *conv_bound(const char *loop)
{
    static const char *const names[] = { "co_o", "oh_o", "oh_i", "ow_o", "ci_o" };
    static const char *const bounds[] = { "COO", "OHO", "OHB", "OWO", "CIO" };
    for (int i = 0; i < 5; i++)
        if (strcmp(loop, names[i]) == 0)
            return bounds[i];
    return "1";
}

static void emit_conv_pack_w(dt_buf *b, const dt_cpu_plan *p)
{
    if (p->red_order == 0)
        emit(b, "#define WIDX(cox, cix, cii, r, s, c) "
                "((((((size_t)(cox) * CIO + (cix)) * KH + (r)) * KW + (s)) * CIB + (cii)) * COB + (c))\n");
    else
        emit(b, "#define WIDX(cox, cix, cii, r, s, c) "
                "((((((size_t)(cox) * CIO + (cix)) * CIB + (cii)) * KH + (r)) * KW + (s)) * COB + (c))\n");
    emit(b, "static void pack_w(const float *restrict w, float *restrict wp)\n{\n"
            "    for (int co = 0; co < CO; co++)\n"
            "    for (int ci = 0; ci < CI; ci++)\n"
            "    for (int r = 0; r < KH; r++)\n"
            "    for (int s = 0; s < KW; s++)\n"
            "        wp[WIDX(co / COB, ci / CIB, ci %% CIB, r, s, co %% COB)] =\n"
            "            w[(((size_t)co * CI + ci) * KH + r) * KW + s];\n}\n\n");
}

/* The input of a blocked conv2d: padded planes [CI][HP][WP] (red_order 1,
 * a block of one channel) or blocked by CIB (red_order 0). */
static void emit_conv_pack_x(dt_buf *b, const dt_cpu_plan *p)
{
    if (p->red_order == 1)
        emit_blocked_pack_x(b, p, "1", "CI", 1);
    else
        emit_blocked_pack_x(b, p, "CIB", "CIO", p->ci_block);
}

/* The reduction over one ci tile (ci_o) into the register tile, over the
 * kernel rows and (at an edge column tile col_tile >= 0) the pixels that
 * read the input. */
static void emit_conv_reduction(dt_buf *b, const dt_cpu_plan *p, const tile_place *at)
{
    int cv = p->co_block / p->vec;
    emit(b, "    {\n    const float *restrict wt = wp + (size_t)(co_o * CIO + ci_o) * (CIB * KH * KW * COB);\n");
    if (p->red_order == 0) {
        emit(b, "    const float *restrict xt = xp + (((size_t)ci_o * HP + oh * SH) * WP + ow_o * OWB * SW) * CIB;\n"
                "    for (int r = %d; r < %d; r++) {\n", at->r_first, at->r_end);
        for (int s = 0; s < s_copies(p); s++) {
            uint64_t used = pixels_inside(p, at->col_tile, s);
            if (!used)
                continue;
            emit_s_open(b, p, s);
            emit(b, "        for (int cii = 0; cii < CIB; cii++) {\n"
                    "            const float *wv = wt + ((r * KW + s) * CIB + cii) * COB;\n"
                    "            const float *xv = xt + ((r * DH) * WP + s * DW) * CIB + cii;\n");
            emit_weight_loads(b, cv, "wv");
            emit_broadcast_fmas_of(b, p->ow_block, used, cv, 'x', 'w', "xv", " * (SW * CIB)");
            emit(b, "        }\n        }\n");
        }
        emit(b, "    }\n    }\n");
        return;
    }
    emit(b, "    const float *restrict xt = xp + ((size_t)ci_o * CIB * HP + oh * SH) * WP + ow_o * OWB * SW;\n"
            "    for (int cii = 0; cii < CIB; cii++)\n"
            "    for (int r = %d; r < %d; r++) {\n", at->r_first, at->r_end);
    for (int s = 0; s < s_copies(p); s++) {
        uint64_t used = pixels_inside(p, at->col_tile, s);
        if (!used)
            continue;
        emit_s_open(b, p, s);
        emit(b, "            const float *wv = wt + ((cii * KH + r) * KW + s) * COB;\n"
                "            const float *xv = xt + ((size_t)cii * HP + r * DH) * WP + s * DW;\n");
        emit_weight_loads(b, cv, "wv");
        emit_broadcast_fmas_of(b, p->ow_block, used, cv, 'x', 'w', "xv", " * (SW)");
        emit(b, "        }\n");
    }
    emit(b, "    }\n    }\n");
}

/* One copy of the conv2d register tile; has_ci: the reduction over ci tiles
 * is outside (ci_o a parameter, partial sums in the output). */
static void emit_conv_tile(dt_buf *b, const dt_cpu_plan *p, bool has_ci, const char *name,
                           const tile_place *at)
{
    int cv = p->co_block / p->vec;
    emit_tile_open(b, name, has_ci);
    emit(b, "    float *restrict yt = yb + (((size_t)co_o * OH + oh) * OW + ow_o * OWB) * COB;\n");
    emit_acc_decl(b, p->ow_block, cv);
    if (!has_ci) {
        emit_acc_zero(b, p->ow_block, cv);
        emit(b, "    for (int ci_o = 0; ci_o < CIO; ci_o++)\n");
    } else {
        emit(b, "    if (ci_o == 0) {\n");
        emit_acc_zero(b, p->ow_block, cv);
        emit(b, "    } else {\n");
        emit_acc_io(b, p->ow_block, cv, "yt", "COB", false);
        emit(b, "    }\n");
    }
    emit_conv_reduction(b, p, at);
    emit_acc_io(b, p->ow_block, cv, "yt", "COB", true);
    emit(b, "}\n\n");
}

static void emit_conv2d(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    const dt_conv_shape *c = &p->task.conv;
    emit_conv_defines(b, p);
    emit(b, "#define CIB %d\n#define CIO %d\n#define MULT 1\n\n", p->ci_block, c->c_in / p->ci_block);
    size_t wsz = round16((size_t)c->c_out * c->c_in * c->kh * c->kw);
    size_t xsz = round16((size_t)c->c_in * (c->h + 2 * c->ph) * (c->w + 2 * c->pw));
    size_t ysz = round16((size_t)c->c_out * c->oh * c->ow);
    emit_conv_pack_w(b, p);
    emit_transpose_macro(b, p);
    emit_conv_pack_x(b, p);
    emit_unpack_y(b, p);
    const char *const *loops = conv_order_loops[p->order];
    bool inside = loops[4] == NULL;
    emit_tiles(b, p, !inside, emit_conv_tile);
    int nloops = inside ? 4 : 5, omp_at = strcmp(loops[0], "ci_o") == 0 ? 1 : 0;
    const char *bounds[5];
    for (int i = 0; i < nloops; i++)
        bounds[i] = conv_bound(loops[i]);
    emit(b, "static void compute(const float *restrict wp, const float *restrict xp, float *restrict yb)\n{\n");
    emit_loops(b, p, loops, bounds, nloops, omp_at,
               inside ? "tile(wp, xp, yb, co_o, oh_o * OHB + oh_i, ow_o);"
                      : "tile(wp, xp, yb, co_o, oh_o * OHB + oh_i, ow_o, ci_o);");
    emit(b, "}\n\n");
    emit_conv_entry(b, p, entry, wsz, xsz, ysz);
}

/* ---- depthwise_conv2d ---------------------------------------------------------- */

static const char *const dw_order_loops[DT_CPU_DEPTHWISE_ORDERS][4] = {
    { "co_o", "oh_o", "oh_i", "ow_o" },
    { "oh_o", "co_o", "oh_i", "ow_o" },
    { "oh_o", "oh_i", "ow_o", "co_o" },
};

static void emit_dw_packing(dt_buf *b, const dt_cpu_plan *p)
{
    emit(b, "static void pack_w(const float *restrict w, float *restrict wp)\n{\n"
            "    for (int co = 0; co < CO; co++)\n"
            "    for (int rs = 0; rs < KH * KW; rs++)\n"
            "        wp[((size_t)(co / COB) * KH * KW + rs) * COB + co %% COB] = w[(size_t)co * KH * KW + rs];\n"
            "}\n\n");
    emit_blocked_pack_x(b, p, "COB", "COO", p->co_block);
}

static void emit_dw_tile(dt_buf *b, const dt_cpu_plan *p, bool has_ci, const char *name,
                         const tile_place *at)
{
    int cv = p->co_block / p->vec;
    emit_tile_open(b, name, has_ci);
    emit(b, "    float *restrict yt = yb + (((size_t)co_o * OH + oh) * OW + ow_o * OWB) * COB;\n"
            "    const float *restrict wt = wp + (size_t)co_o * KH * KW * COB;\n"
            "    const float *restrict xt = xp + (((size_t)co_o * HP + oh * SH) * WP + ow_o * OWB * SW) * COB;\n");
    emit_acc_decl(b, p->ow_block, cv);
    emit_acc_zero(b, p->ow_block, cv);
    emit(b, "    for (int r = %d; r < %d; r++) {\n", at->r_first, at->r_end);
    for (int s = 0; s < s_copies(p); s++) {
        uint64_t used = pixels_inside(p, at->col_tile, s);
        if (!used)
            continue;
        emit_s_open(b, p, s);
        emit(b, "            const float *wv = wt + (r * KW + s) * COB;\n"
                "            const float *xv = xt + ((r * DH) * WP + s * DW) * COB;\n");
        emit_weight_loads(b, cv, "wv");
        for (int i = 0; i < p->ow_block; i++)
            for (int j = 0; j < cv; j++)
                if (used >> i & 1)
                    emit(b, "            a%d_%d += w%d * LD(xv + %d * SW * COB + %d * VEC);\n", i, j, j, i, j);
        emit(b, "        }\n");
    }
    emit(b, "    }\n");
    emit_acc_io(b, p->ow_block, cv, "yt", "COB", true);
    emit(b, "}\n\n");
}

static void emit_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    const dt_conv_shape *c = &p->task.conv;
    emit_conv_defines(b, p);
    emit(b, "#define MULT %d\n\n", c->c_out / c->c_in);
    size_t wsz = round16((size_t)c->c_out * c->kh * c->kw);
    size_t xsz = round16((size_t)c->c_out * (c->h + 2 * c->ph) * (c->w + 2 * c->pw));
    size_t ysz = round16((size_t)c->c_out * c->oh * c->ow);
    emit_transpose_macro(b, p);
    emit_dw_packing(b, p);
    emit_unpack_y(b, p);
    emit_tiles(b, p, false, emit_dw_tile);
    const char *const *loops = dw_order_loops[p->order];
    const char *bounds[4];
    for (int i = 0; i < 4; i++)
        bounds[i] = conv_bound(loops[i]);
    emit(b, "static void compute(const float *restrict wp, const float *restrict xp, float *restrict yb)\n{\n");
    emit_loops(b, p, loops, bounds, 4, 0, "tile(wp, xp, yb, co_o, oh_o * OHB + oh_i, ow_o);");
    emit(b, "}\n\n");
    emit_conv_entry(b, p, entry, wsz, xsz, ysz);
}

/* ---- the pixels form of both convolutions -------------------------------------- */

/* The tile loops of the pixels conv2d, outermost first (OpenMP shares the
 * first two); depthwise takes the first two as its band loops. */
static const char *const pixels_order_loops[DT_CPU_CONV_ORDERS][4] = {
    { "oh_o", "co_o", "oh_i", "ow_o" },
    { "co_o", "oh_o", "oh_i", "ow_o" },
    { "oh_o", "oh_i", "co_o", "ow_o" },
    { "oh_o", "oh_i", "ow_o", "co_o" },
    { "co_o", "oh_o", "ow_o", "oh_i" },
    { "oh_o", "co_o", "ow_o", "oh_i" },
};

/* Defines of the pixels form: the packed input is [channel][HQ][SW][WQ]
 * rows (row hq of phase ph holds padded columns q * SW + ph), so a vector of
 * output pixels reads consecutive floats at every stride. */
static void emit_pixels_defines(dt_buf *b, const dt_cpu_plan *p, int hq, int wq)
{
    const dt_conv_shape *c = &p->task.conv;
    int nv = pixel_vectors(p);
    emit_conv_defines(b, p);
    emit(b, "#define NV %d\n#define TAIL %d\n#define HQ %d\n#define WQ %d\n#define CIG %d\n"
            "#define MULT %d\n\n", nv, p->ow_block - (nv - 1) * p->vec, hq, wq,
         p->task.kind == DT_OP_CONV2D ? c->c_in : 1, c->c_out / c->c_in);
}

/* Weights [CO/COB][CIG][KH][KW][COB]: a tile's COB broadcasts are adjacent. */
static void emit_pixels_pack_w(dt_buf *b)
{
    emit(b, "static void pack_w(const float *restrict w, float *restrict wp)\n{\n"
            "    for (int co = 0; co < CO; co++)\n"
            "    for (int k = 0; k < CIG * KH * KW; k++)\n"
            "        wp[((size_t)(co / COB) * CIG * KH * KW + k) * COB + co %% COB] =\n"
            "            w[(size_t)co * CIG * KH * KW + k];\n}\n\n");
}

/* row_read: whether packed row hq is read by output rows 0 .. rows-1;
 * pack_row: one input row (NULL: a padding row) into its SW phase rows, the
 * phases no kernel column reads left alone. */
static void emit_pack_row(dt_buf *b, const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    unsigned phases = 0;
    for (int s = 0; s < c->kw; s++)
        phases |= 1u << (s * c->dw % c->sw);
    emit(b, "static inline int row_read(int hq, int rows)\n{\n"
            "    for (int r = 0; r < KH; r++) {\n"
            "        int t = hq - r * DH;\n"
            "        if (t >= 0 && t %% SH == 0 && t / SH < rows)\n            return 1;\n    }\n"
            "    return 0;\n}\n\n");
    /* Short spans are zeroed and copied with vector stores, never memset:
     * a variable-length memset of a few floats (rep stos) cost more than the
     * whole row's shuffles and made the pack most of a strided kernel. */
    emit(b, "static inline __attribute__((always_inline)) void zero_span(float *restrict row, int a, int e)\n{\n"
            "    if (e - a >= VEC) {\n"
            "        int q = a;\n"
            "        for (; q + VEC <= e; q += VEC)\n            ST(row + q, (vf){0});\n"
            "        if (q < e)\n            ST(row + e - VEC, (vf){0});\n"
            "    } else {\n"
            "        for (int q = a; q < e; q++)\n            row[q] = 0.0f;\n    }\n}\n\n");
    emit(b, "static inline __attribute__((always_inline)) void pack_row(const float *restrict src,\n"
            "    float *restrict dst)\n{\n"
            "    _Pragma(\"GCC unroll 4\")\n"
            "    for (int ph = 0; ph < SW; ph++) {\n"
            "        float *row = dst + (size_t)ph * WQ;\n"
            "        if (!(0x%xu >> ph & 1u))\n            continue;\n"
            "        if (!src) {\n            zero_span(row, 0, WQ);\n            continue;\n        }\n"
            "        int lo = PW > ph ? (PW - ph + SW - 1) / SW : 0, hi = (W + PW - ph + SW - 1) / SW;\n"
            "        hi = hi < WQ ? hi : WQ;\n        lo = lo < hi ? lo : hi;\n"
            "        zero_span(row, 0, lo);\n        zero_span(row, hi, WQ);\n"
            "        int q = lo;\n", phases);
    if (c->sw == 1 && p->vec > 1) {
        /* whole vectors, the last one ending at the row's end */
        emit(b, "        for (; q + VEC <= hi; q += VEC)\n            ST(row + q, LD(src + q - PW));\n"
                "        if (q < hi && hi - VEC >= lo) {\n"
                "            ST(row + hi - VEC, LD(src + hi - VEC - PW));\n            q = hi;\n        }\n");
    } else if (c->sw == 2 && p->vec > 1) {
        /* a phase's VEC floats are the even lanes of 2 VEC read in order;
         * the last VEC the odd lanes of the 2 VEC that end inside the row */
        emit(b, "        for (; q + VEC <= hi && q * SW + ph - PW + 2 * VEC <= W; q += VEC) {\n"
                "            const float *s = src + q * SW + ph - PW;\n"
                "            ST(row + q, SHUF(LD(s), LD(s + VEC)");
        for (int l = 0; l < p->vec; l++)
            emit(b, ", %d", 2 * l);
        emit(b, "));\n        }\n"
                "        if (q < hi && hi - VEC >= lo && (hi - VEC) * SW + ph - PW - 1 >= 0) {\n"
                "            const float *s = src + (hi - VEC) * SW + ph - PW - 1;\n"
                "            ST(row + hi - VEC, SHUF(LD(s), LD(s + VEC)");
        for (int l = 0; l < p->vec; l++)
            emit(b, ", %d", 2 * l + 1);
        emit(b, "));\n            q = hi;\n        }\n");
    }
    emit(b, "        for (; q < hi; q++)\n"
            "            row[q] = src[q * SW + ph - PW];\n    }\n}\n\n");
}

/* Stores the accumulators to NCHW rows at yt: a(i * rows + k)_j is channel i,
 * output row k, vector j; the last vector keeps TAIL lanes. */
static void emit_pixels_store(dt_buf *b, const dt_cpu_plan *p, int rows)
{
    int nv = pixel_vectors(p), tail = p->ow_block - (nv - 1) * p->vec;
    for (int i = 0; i < p->co_block; i++)
        for (int k = 0; k < rows; k++)
            for (int j = 0; j < nv; j++) {
                int a = i * rows + k;
                if (j < nv - 1 || tail == p->vec)
                    emit(b, "    ST(yt + %d * OH * OW + %d * OW + %d * VEC, a%d_%d);\n", i, k, j, a, j);
                else
                    emit(b, "    { const vf t = a%d_%d; memcpy(yt + %d * OH * OW + %d * OW + %d * VEC, &t, "
                            "TAIL * sizeof(float)); }\n", a, j, i, k, j);
            }
}

/* The reduction of one ci tile: ci outside r, s (red_order 0) or inside. */
static void emit_pixels_conv_reduction(dt_buf *b, const dt_cpu_plan *p)
{
    int nv = pixel_vectors(p);
    if (p->red_order == 0)
        emit(b, "    for (int ci = ci_o * CIB; ci < ci_o * CIB + CIB; ci++)\n    for (int r = 0; r < KH; r++) {\n");
    else
        emit(b, "    for (int r = 0; r < KH; r++)\n    for (int ci = ci_o * CIB; ci < ci_o * CIB + CIB; ci++) {\n");
    emit(b, "        const float *xr = xq + ((size_t)ci * HQ + oh * SH + r * DH) * SW * WQ + ow_o * OWB;\n");
    for (int s = 0; s < s_copies(p); s++) {
        emit_s_open(b, p, s);
        emit(b, "            const float *xv = xr + (s * DW %% SW) * WQ + s * DW / SW;\n"
                "            const float *wv = wt + ((ci * KH + r) * KW + s) * COB;\n");
        for (int j = 0; j < nv; j++)
            emit(b, "            const vf x%d = LD(xv + %d * VEC);\n", j, j);
        emit_broadcast_fmas(b, p->co_block, nv, 'w', 'x', "wv", "");
        emit(b, "        }\n");
    }
    emit(b, "    }\n");
}

/* With more than one ci tile, tiles after the first add to the partial sums
 * already stored in the output. */
static void emit_pixels_conv_tile(dt_buf *b, const dt_cpu_plan *p)
{
    int nv = pixel_vectors(p), tail = p->ow_block - (nv - 1) * p->vec;
    emit(b, "static inline __attribute__((always_inline)) void tile(const float *restrict wp,\n"
            "    const float *restrict xq, float *restrict y, int co_o, int oh, int ow_o, int ci_o)\n{\n"
            "    float *restrict yt = y + ((size_t)co_o * COB * OH + oh) * OW + ow_o * OWB;\n"
            "    const float *restrict wt = wp + (size_t)co_o * CIG * KH * KW * COB;\n");
    emit_acc_decl(b, p->co_block, nv);
    emit_acc_zero(b, p->co_block, nv);
    if (p->ci_block < p->task.conv.c_in) {
        emit(b, "    if (ci_o > 0) {\n");
        for (int i = 0; i < p->co_block; i++)
            for (int j = 0; j < nv; j++) {
                if (j < nv - 1 || tail == p->vec)
                    emit(b, "    a%d_%d = LD(yt + %d * OH * OW + %d * VEC);\n", i, j, i, j);
                else
                    emit(b, "    memcpy(&a%d_%d, yt + %d * OH * OW + %d * VEC, TAIL * sizeof(float));\n",
                         i, j, i, j);
            }
        emit(b, "    }\n");
    }
    emit_pixels_conv_reduction(b, p);
    emit_pixels_store(b, p, 1);
    emit(b, "}\n\n");
}

static void emit_pixels_conv2d(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    const dt_conv_shape *c = &p->task.conv;
    bool in_place = pixels_in_place(p);
    int hq = in_place ? c->h : (c->oh - 1) * c->sh + (c->kh - 1) * c->dh + 1;
    int wq = in_place ? c->w : c->ow - p->ow_block + pixel_vectors(p) * p->vec +
                               (c->kw - 1) * c->dw / c->sw;
    emit_pixels_defines(b, p, hq, wq);
    emit_pixels_pack_w(b);
    size_t wsz = round16((size_t)c->c_out * c->c_in * c->kh * c->kw);
    size_t xsz = in_place ? 0 : round16((size_t)c->c_in * hq * c->sw * wq);
    if (!in_place) {
        emit_pack_row(b, p);
        emit_pack_x_open(b, p, "xq");
        emit(b, "    for (int ci = 0; ci < CI; ci++)\n"
                "    for (int hq = 0; hq < HQ; hq++) {\n"
                "        int ih = hq - PH;\n"
                "        if (row_read(hq, OH))\n"
                "            pack_row(ih >= 0 && ih < H ? x + ((size_t)ci * H + ih) * W : NULL,\n"
                "                     xq + ((size_t)ci * HQ + hq) * SW * WQ);\n    }\n}\n\n");
    }
    emit(b, "#define CIB %d\n#define CIO %d\n\n", p->ci_block, c->c_in / p->ci_block);
    emit_pixels_conv_tile(b, p);
    /* ci tiles outermost: each pass over the output adds one tile's sums */
    const char *loops[5] = { "ci_o" }, *bounds[5];
    for (int i = 0; i < 4; i++)
        loops[i + 1] = pixels_order_loops[p->order][i];
    for (int i = 0; i < 5; i++)
        bounds[i] = conv_bound(loops[i]);
    emit(b, "static void compute(const float *restrict wp, const float *restrict xq, float *restrict y)\n{\n");
    emit_loops(b, p, loops, bounds, 5, 1, "tile(wp, xq, y, co_o, oh_o * OHB + oh_i, ow_o, ci_o);");
    emit(b, "}\n\n");
    char step[512];
    if (in_place)
        snprintf(step, sizeof step, "    for (int n = 0; n < NB; n++)\n"
                 "        compute(ws, input + (size_t)n * CI * H * W, output + (size_t)n * CO * OH * OW);\n");
    else
        snprintf(step, sizeof step, "    for (int n = 0; n < NB; n++) {\n"
                 "        pack_x(input + (size_t)n * CI * H * W, ws + %zu);\n"
                 "        compute(ws, ws + %zu, output + (size_t)n * CO * OH * OW);\n    }\n", wsz, wsz);
    emit_entry(b, p, entry, wsz + xsz, step);
}

/* ROWS output rows of COB channels: each input row of the band is loaded
 * once per kernel column and feeds every output row whose window holds it
 * (row t of the tile's input is kernel row r of output row k when
 * t = k * SH + r * DH), so a vector load serves up to KH FMAs. */
static void emit_pixels_dw_tile(dt_buf *b, const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    int nv = pixel_vectors(p), rows = p->row_block;
    emit(b, "static inline __attribute__((always_inline)) void tile(const float *restrict wp,\n"
            "    const float *restrict xb, float *restrict y, int co_o, int oh_o, int oh_i, int ow_o)\n{\n"
            "    float *restrict yt = y + ((size_t)co_o * COB * OH + oh_o * OHB + oh_i) * OW + ow_o * OWB;\n"
            "    const float *restrict wt = wp + (size_t)co_o * KH * KW * COB;\n");
    emit_acc_decl(b, p->co_block * rows, nv);
    emit_acc_zero(b, p->co_block * rows, nv);
    emit(b, "    {\n");
    int in_rows = (rows - 1) * c->sh + (c->kh - 1) * c->dh + 1;
    for (int s = 0; s < s_copies(p); s++) {
        emit_s_open(b, p, s);
        for (int t = 0; t < in_rows; t++)
            for (int i = 0; i < p->co_block; i++) {
                emit(b, "            { const float *xv = xb + ((size_t)%d * HQ + oh_i * SH + %d) * SW * WQ"
                        " + (s * DW %% SW) * WQ + ow_o * OWB + s * DW / SW;\n", i, t);
                for (int j = 0; j < nv; j++)
                    emit(b, "              const vf x%d = LD(xv + %d * VEC);\n", j, j);
                for (int k = 0; k < rows; k++) {
                    int d = t - k * c->sh;
                    if (d < 0 || d % c->dh != 0 || d / c->dh >= c->kh)
                        continue;
                    emit(b, "              { const float w = wt[(%d * KW + s) * COB + %d];", d / c->dh, i);
                    for (int j = 0; j < nv; j++)
                        emit(b, " a%d_%d += x%d * w;", i * rows + k, j, j);
                    emit(b, " }\n");
                }
                emit(b, "            }\n");
            }
        emit(b, "        }\n");
    }
    emit(b, "    }\n");
    emit_pixels_store(b, p, rows);
    emit(b, "}\n\n");
}

/* Depthwise: per (channel tile, band of OHB output rows) the band's input
 * rows of the tile's channels go to the thread's buffer, then the band. */
static void emit_pixels_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    const dt_conv_shape *c = &p->task.conv;
    int hq = (p->oh_block - 1) * c->sh + (c->kh - 1) * c->dh + 1;
    int wq = c->ow - p->ow_block + pixel_vectors(p) * p->vec + (c->kw - 1) * c->dw / c->sw;
    emit_pixels_defines(b, p, hq, wq);
    emit_pixels_pack_w(b);
    emit_pack_row(b, p);
    size_t wsz = round16((size_t)c->c_out * c->kh * c->kw);
    size_t band = round16((size_t)p->co_block * hq * c->sw * wq);
    emit(b, "#define BAND %zu\n\n", band);
    emit(b, "static void pack_band(const float *restrict x, float *restrict xb, int co_o, int oh_o)\n{\n"
            "    for (int i = 0; i < COB; i++) {\n"
            "        const float *xc = x + (size_t)((co_o * COB + i) / MULT) * H * W;\n"
            "        for (int hq = 0; hq < HQ; hq++) {\n"
            "            int ih = oh_o * OHB * SH + hq - PH;\n"
            "            if (row_read(hq, OHB))\n"
            "                pack_row(ih >= 0 && ih < H ? xc + (size_t)ih * W : NULL,\n"
            "                         xb + ((size_t)i * HQ + hq) * SW * WQ);\n        }\n    }\n}\n\n");
    emit_pixels_dw_tile(b, p);
    if (p->threads > 1)
        emit(b, "#include <omp.h>\n\n");
    emit(b, "static void compute(const float *restrict wp, const float *restrict x, float *restrict y,\n"
            "    float *restrict bands)\n{\n");
    emit_omp(b, p, 2);
    const char *const *outer = pixels_order_loops[p->order];
    for (int i = 0; i < 2; i++)
        emit(b, "    for (int %s = 0; %s < %s; %s++)%s\n", outer[i], outer[i], conv_bound(outer[i]),
             outer[i], i ? " {" : "");
    emit(b, "        float *xb = bands + (size_t)%s * BAND;\n"
            "        pack_band(x, xb, co_o, oh_o);\n"
            "        for (int oh_i = 0; oh_i < OHB; oh_i += %d)\n"
            "        for (int ow_o = 0; ow_o < OWO; ow_o++)\n"
            "            tile(wp, xb, y, co_o, oh_o, oh_i, ow_o);\n    }\n}\n\n",
         p->threads > 1 ? "omp_get_thread_num()" : "0", p->row_block);
    char step[512];
    snprintf(step, sizeof step, "    for (int n = 0; n < NB; n++)\n"
             "        compute(ws, input + (size_t)n * CI * H * W, output + (size_t)n * CO * OH * OW,\n"
             "                ws + %zu);\n", wsz);
    emit_entry(b, p, entry, wsz + band * (size_t)p->threads, step);
}

/* ---- the plane form of depthwise_conv2d ------------------------------------------ */

/* Window rows loaded once can be carried down to the next row group when
 * stride 1 and same padding make every tap a run of consecutive floats that
 * lines up with the output (lane l reads the float l places on). */
static bool plane_rolls(const dt_conv_shape *c)
{
    return c->sh == 1 && c->sw == 1 && c->dh == 1 && c->dw == 1 && c->oh == c->h &&
           c->ow == c->w;
}

/* How the output plane is cut into vectors: G whole rows a vector where a
 * row fits (lane l is row l / OW, column l % OW), else chunks of VEC columns
 * of one row. */
typedef struct plane_geom {
    int g;       /* output rows a vector */
    int nch;     /* vectors a row (1 where rows fit) */
    int groups;  /* vectors down the plane: ceil(OH / g) */
} plane_geom;

static plane_geom plane_geometry(const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    plane_geom g;
    bool rows = c->ow <= p->vec;
    g.g = rows ? p->vec / c->ow : 1;
    /* where taps are picked, each row of a vector reads its own window */
    if (!plane_rolls(c) && g.g > 2)
        g.g = 2;
    if (g.g > c->oh)
        g.g = c->oh;
    g.nch = rows ? 1 : (c->ow + p->vec - 1) / p->vec;
    g.groups = (c->oh + g.g - 1) / g.g;
    return g;
}

/* Output row (within the group) and column of lane l of chunk ch; false
 * where the lane holds no output. */
static bool plane_lane(const dt_cpu_plan *p, const plane_geom *g, int q, int ch, int l, int *gi,
                       int *col)
{
    const dt_conv_shape *c = &p->task.conv;
    if (c->ow <= p->vec) {
        *gi = l / c->ow;
        *col = l % c->ow;
    } else {
        *gi = 0;
        *col = ch * p->vec + l;
    }
    return *gi < g->g && q * g->g + *gi < c->oh && *col < c->ow;
}

static unsigned plane_used(const dt_cpu_plan *p, const plane_geom *g, int q, int ch)
{
    unsigned m = 0;
    int gi, col;
    for (int l = 0; l < p->vec; l++)
        if (plane_lane(p, g, q, ch, l, &gi, &col))
            m |= 1u << l;
    return m;
}

/* Tap (k, s) of group q, chunk ch: the lanes that read inside the plane and
 * where (pos[lane]), in floats from the start of input row q * G * SH
 * (negative where the window reaches above it). With rows_known false (the
 * loop over middle groups) every row is inside. Returns the mask of those
 * lanes. */
static unsigned plane_tap(const dt_cpu_plan *p, const plane_geom *g, int q, int ch, int k, int s,
                          bool rows_known, int *pos)
{
    const dt_conv_shape *c = &p->task.conv;
    unsigned m = 0;
    int gi, col;
    for (int l = 0; l < p->vec; l++) {
        if (!plane_lane(p, g, rows_known ? q : 0, ch, l, &gi, &col))
            continue;
        int drow = gi * c->sh + k * c->dh - c->ph, icol = col * c->sw + s * c->dw - c->pw;
        int row = q * g->g * c->sh + drow;
        if ((rows_known && (row < 0 || row >= c->h)) || icol < 0 || icol >= c->w)
            continue;
        pos[l] = drow * c->w + icol;
        m |= 1u << l;
    }
    return m;
}

/* A loaded vector of the window path: VEC floats from `base` (relative to
 * the group's first input row), only the lanes some tap takes. */
typedef struct plane_win {
    int base;
    unsigned mask;
} plane_win;

#define PLANE_MAX_WINS 32
/* window rows and columns the generator's tables hold */
#define PLANE_MAX_WINDOW 8

static bool plane_holds(const plane_win *w, int pos, int vec)
{
    return pos >= w->base && pos < w->base + vec;
}

static int plane_add_win(plane_win *wins, int *nwins, int base)
{
    for (int i = 0; i < *nwins; i++)
        if (wins[i].base == base)
            return i;
    if (*nwins == PLANE_MAX_WINS)
        return -1;
    wins[*nwins] = (plane_win){ base, 0 };
    return (*nwins)++;
}

/* Chooses at most two windows that hold every position of a tap: two
 * already loaded if they do, else new ones from its lowest position up.
 * src[i] names each lane's window. Returns false where two cannot hold it. */
static bool plane_cover(const int *pos, unsigned need, int vec, plane_win *wins, int *nwins,
                        int *src)
{
    int lo = -1;
    for (int l = 0; l < vec; l++)
        if (need >> l & 1 && (lo < 0 || pos[l] < pos[lo]))
            lo = l;
    if (lo < 0)
        return true;
    for (int i = 0; i < *nwins; i++)
        for (int j = i; j < *nwins; j++) {
            bool all = true;
            for (int l = 0; l < vec && all; l++)
                if (need >> l & 1)
                    all = plane_holds(&wins[i], pos[l], vec) || plane_holds(&wins[j], pos[l], vec);
            if (!all)
                continue;
            for (int l = 0; l < vec; l++)
                if (need >> l & 1)
                    src[l] = plane_holds(&wins[i], pos[l], vec) ? i : j;
            goto mark;
        }
    {
        int a = plane_add_win(wins, nwins, pos[lo]), hi = -1;
        if (a < 0)
            return false;
        for (int l = 0; l < vec; l++)
            if (need >> l & 1 && !plane_holds(&wins[a], pos[l], vec) && (hi < 0 || pos[l] < pos[hi]))
                hi = l;
        int b = hi < 0 ? a : plane_add_win(wins, nwins, pos[hi]);
        if (b < 0)
            return false;
        for (int l = 0; l < vec; l++) {
            if (!(need >> l & 1))
                continue;
            if (!plane_holds(&wins[a], pos[l], vec) && !plane_holds(&wins[b], pos[l], vec))
                return false;
            src[l] = plane_holds(&wins[a], pos[l], vec) ? a : b;
        }
    }
mark:
    for (int l = 0; l < vec; l++)
        if (need >> l & 1)
            wins[src[l]].mask |= 1u << (pos[l] - wins[src[l]].base);
    return true;
}

/* Middle groups [*qa, *qb): every window row inside the plane, every group full. */
static void plane_middle(const dt_cpu_plan *p, const plane_geom *g, int *qa, int *qb)
{
    const dt_conv_shape *c = &p->task.conv;
    int a = 0;
    while (a < g->groups && a * g->g * c->sh - c->ph < 0)
        a++;
    int b = a;
    while (b < g->groups && (b * g->g + g->g - 1) * c->sh + (c->kh - 1) * c->dh - c->ph <= c->h - 1 &&
           (b + 1) * g->g <= c->oh)
        b++;
    *qa = a;
    *qb = b > a ? b : a;
}

/* Whether every tap of every group of the window path fits two windows. */
static bool plane_windows_fit(const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    plane_geom g = plane_geometry(p);
    int pos[16], src[16];
    for (int q = 0; q < g.groups; q++)
        for (int ch = 0; ch < g.nch; ch++) {
            plane_win wins[PLANE_MAX_WINS];
            int nwins = 0;
            for (int k = 0; k < c->kh; k++)
                for (int i = 0; i < c->kw; i++) {
                    int s = (c->kw / 2 + i) % c->kw;
                    unsigned need = plane_tap(p, &g, q, ch, k, s, true, pos);
                    if (!plane_cover(pos, need, p->vec, wins, &nwins, src))
                        return false;
                }
        }
    return true;
}

/* What the plane and pairs forms (`name`) both need: a depthwise task,
 * vectors of 4 or more lanes, an unroll of 1 to 8 and a window they hold. */
static int check_inplace(const dt_cpu_plan *p, const char *name, dt_error *err)
{
    const dt_conv_shape *c = &p->task.conv;
    if (p->task.kind != DT_OP_DEPTHWISE_CONV2D)
        return dt_error_set(err, DT_EINVAL, "the %s form is for depthwise convolutions", name);
    if (p->vec < 4)
        return dt_error_set(err, DT_EINVAL, "the %s form needs vectors of 4 or more lanes", name);
    if (p->row_block < 1 || p->row_block > 8)
        return dt_error_set(err, DT_EINVAL, "row block %d: the %s form unrolls 1 to 8 row loops",
                            p->row_block, name);
    if (c->kh > PLANE_MAX_WINDOW || c->kw > PLANE_MAX_WINDOW)
        return dt_error_set(err, DT_EINVAL, "the %s form takes windows up to %dx%d, not %dx%d",
                            name, PLANE_MAX_WINDOW, PLANE_MAX_WINDOW, c->kh, c->kw);
    return 0;
}

static int check_plane(const dt_cpu_plan *p, dt_error *err)
{
    int rc = check_inplace(p, "plane", err);
    if (rc)
        return rc;
    if (!plane_rolls(&p->task.conv) && !plane_windows_fit(p))
        return dt_error_set(err, DT_EINVAL, "the plane form at vec %d: a tap's lanes span more "
                            "than two vectors", p->vec);
    return 0;
}

/* The pairs and slots forms also need stride 2 and no dilation along rows
 * (the even and odd floats of one load are two window columns). */
static int check_strided(const dt_cpu_plan *p, const char *name, dt_error *err)
{
    const dt_conv_shape *c = &p->task.conv;
    int rc = check_inplace(p, name, err);
    if (rc)
        return rc;
    if (c->sw != 2 || c->dw != 1)
        return dt_error_set(err, DT_EINVAL, "the %s form needs stride 2 and dilation 1 along "
                            "rows, not %d and %d", name, c->sw, c->dw);
    return 0;
}

/* The pairs form also needs channels in pairs. */
static int check_pairs(const dt_cpu_plan *p, dt_error *err)
{
    const dt_conv_shape *c = &p->task.conv;
    int rc = check_strided(p, "pairs", err);
    if (rc)
        return rc;
    if (c->c_out % 2 != 0)
        return dt_error_set(err, DT_EINVAL, "the pairs form needs an even channel count, not %d",
                            c->c_out);
    return 0;
}

/* Masked loads and stores (AVX-512 and AVX have them, fault suppressed, so a
 * lane past the plane is never read; elsewhere lane by lane) and PICK: the
 * named lanes of two vectors, the others zero. 8 and 4 lanes take AVX-512VL's
 * mask-register forms where the machine has them: AVX's vmaskmovps store is
 * microcoded on AMD (a 7x7 depthwise kernel at 8 lanes ran 6.7x slower). */
static void emit_plane_macros(dt_buf *b)
{
    emit(b, "#include <stdint.h>\n#include <immintrin.h>\n"
            "typedef int vmask __attribute__((vector_size(4 * VEC)));\n"
            "static inline __attribute__((always_inline)) vmask lanes_of(unsigned m)\n{\n"
            "    vmask v;\n    for (int l = 0; l < VEC; l++)\n        v[l] = -(int)(m >> l & 1u);\n    return v;\n}\n"
            "/* the float at x + off, off possibly before x (a masked lane); YAT to store */\n"
            "#define AT(x, off) ((const float *)((uintptr_t)(x) + (intptr_t)(off) * (intptr_t)sizeof(float)))\n"
            "#define YAT(y, off) ((float *)((uintptr_t)(y) + (intptr_t)(off) * (intptr_t)sizeof(float)))\n"
            "#if VEC == 16 && defined(__AVX512F__)\n"
            "#define MLD(m, p) ((vf)_mm512_maskz_loadu_ps((__mmask16)(m), (p)))\n"
            "#define MST(m, p, v) _mm512_mask_storeu_ps((p), (__mmask16)(m), (__m512)(v))\n"
            "#define PICK(m, a, b, ...) ((vf)_mm512_maskz_permutex2var_ps((__mmask16)(m), (__m512)(a), \\\n"
            "    (__m512i)(vmask){ __VA_ARGS__ }, (__m512)(b)))\n"
            "#elif VEC == 8 && defined(__AVX512VL__)\n"
            "#define MLD(m, p) ((vf)_mm256_maskz_loadu_ps((__mmask8)(m), (p)))\n"
            "#define MST(m, p, v) _mm256_mask_storeu_ps((p), (__mmask8)(m), (__m256)(v))\n"
            "#define PICK(m, a, b, ...) ((vf)_mm256_maskz_permutex2var_ps((__mmask8)(m), (__m256)(a), \\\n"
            "    (__m256i)(vmask){ __VA_ARGS__ }, (__m256)(b)))\n"
            "#elif VEC == 4 && defined(__AVX512VL__)\n"
            "#define MLD(m, p) ((vf)_mm_maskz_loadu_ps((__mmask8)(m), (p)))\n"
            "#define MST(m, p, v) _mm_mask_storeu_ps((p), (__mmask8)(m), (__m128)(v))\n"
            "#define PICK(m, a, b, ...) ((vf)_mm_maskz_permutex2var_ps((__mmask8)(m), (__m128)(a), \\\n"
            "    (__m128i)(vmask){ __VA_ARGS__ }, (__m128)(b)))\n"
            "#elif VEC == 8 && defined(__AVX__)\n"
            "#define MLD(m, p) ((vf)_mm256_maskload_ps((p), (__m256i)lanes_of(m)))\n"
            "#define MST(m, p, v) _mm256_maskstore_ps((p), (__m256i)lanes_of(m), (__m256)(v))\n"
            "#elif VEC == 4 && defined(__AVX__)\n"
            "#define MLD(m, p) ((vf)_mm_maskload_ps((p), (__m128i)lanes_of(m)))\n"
            "#define MST(m, p, v) _mm_maskstore_ps((p), (__m128i)lanes_of(m), (__m128)(v))\n"
            "#else\n"
            "static inline __attribute__((always_inline)) vf MLD(unsigned m, const float *p)\n{\n"
            "    vf v = { 0 };\n    for (int l = 0; l < VEC; l++)\n        if (m >> l & 1u)\n            v[l] = p[l];\n"
            "    return v;\n}\n"
            "static inline __attribute__((always_inline)) void MST(unsigned m, float *p, vf v)\n{\n"
            "    for (int l = 0; l < VEC; l++)\n        if (m >> l & 1u)\n            p[l] = v[l];\n}\n"
            "#endif\n"
            "#ifndef PICK\n"
            "#define PICK(m, a, b, ...) ((vf)((vmask)SHUF(a, b, __VA_ARGS__) & lanes_of(m)))\n"
            "#endif\n\n");
}

/* The sum over window rows of one partial sum each (taps[k][s] names the
 * tap vector, NULL where it is all zero), then the store of group qs. */
static void emit_plane_sum(dt_buf *b, const dt_cpu_plan *p, const plane_geom *g, int q, int ch,
                           const char *qs, char taps[][PLANE_MAX_WINDOW][24])
{
    const dt_conv_shape *c = &p->task.conv;
    bool any = false;
    for (int k = 0; k < c->kh; k++) {
        bool started = false;
        for (int s = 0; s < c->kw; s++) {
            if (!taps[k][s][0])
                continue;
            emit(b, "            %sp%d %s %s * w%d_%d;\n", started ? "" : "vf ", k,
                 started ? "+=" : "=", taps[k][s], k, s);
            started = true;
        }
        if (started)
            emit(b, "            %sa %s p%d;\n", any ? "" : "vf ", any ? "+=" : "=", k);
        any = any || started;
    }
    if (!any)
        emit(b, "            const vf a = (vf){ 0 };\n");
    unsigned used = plane_used(p, g, q, ch);
    if (used == (1u << p->vec) - 1u)
        emit(b, "            ST(y + %s * %d * OW + %d, a);\n", qs, g->g, ch * p->vec);
    else
        emit(b, "            MST(0x%xu, y + %s * %d * OW + %d, a);\n", used, qs, g->g, ch * p->vec);
}

/* Window rows a group hands to the group below: where a vector's rows
 * advance by fewer input rows than the window has (dilation 1), the lowest
 * window rows of the next group are this one's highest. */
static int plane_carried(const dt_conv_shape *c, const plane_geom *g)
{
    int shift = g->g * c->sh;
    return c->dh == 1 && c->kh > shift ? c->kh - shift : 0;
}

/* unroll_kw 0 in the plane form: window row k of a group in one masked
 * load (its middle column's), the other columns permuted out of it, where
 * they all lie in that load (whole rows a vector; not chunks, whose
 * neighbours hold the columns past the edge). Returns false where they do
 * not, and emits nothing. */
static bool emit_plane_shifted_row(dt_buf *b, const dt_cpu_plan *p, const plane_geom *g, int q,
                                   int ch, int k, const char *qs, char taps[][PLANE_MAX_WINDOW][24])
{
    const dt_conv_shape *c = &p->task.conv;
    bool known = q >= 0;
    int mid = c->kw / 2, pos[PLANE_MAX_WINDOW][16] = { { 0 } };
    unsigned need[PLANE_MAX_WINDOW] = { 0 };
    for (int s = 0; s < c->kw; s++)
        need[s] = plane_tap(p, g, known ? q : 0, ch, k, s, known, pos[s]);
    if (!need[mid])
        return false;
    int base = pos[mid][__builtin_ctz(need[mid])] - __builtin_ctz(need[mid]);
    for (int s = 0; s < c->kw; s++)
        for (int l = 0; l < p->vec; l++)
            if (need[s] >> l & 1 && !(pos[s][l] >= base && pos[s][l] < base + p->vec &&
                                      need[mid] >> (pos[s][l] - base) & 1))
                return false;
    emit(b, "            r%d_%d = MLD(0x%xu, AT(x, %s * %d + %d));\n", k, mid, need[mid], qs,
         g->g * c->w, base);
    for (int s = 0; s < c->kw; s++) {
        snprintf(taps[k][s], sizeof taps[k][s], need[s] ? "r%d_%d" : "", k, s);
        if (s == mid)
            continue;
        if (!need[s]) {
            emit(b, "            r%d_%d = (vf){ 0 };\n", k, s);
            continue;
        }
        emit(b, "            r%d_%d = PICK(0x%xu, r%d_%d, r%d_%d", k, s, need[s], k, mid, k, mid);
        for (int l = 0; l < p->vec; l++)
            emit(b, ", %d", need[s] >> l & 1 ? pos[s][l] - base : 0);
        emit(b, ");\n");
    }
    return true;
}

/* One group of chunk ch where taps roll (plane_rolls): loads the window
 * rows not carried from the group above (all of them for the first group),
 * sums, stores, and shifts the rows the next group shares (r<k>_<s> holds
 * window row k, column s). q < 0: the loop's group `q`. */
static void emit_plane_rolling_group(dt_buf *b, const dt_cpu_plan *p, const plane_geom *g, int q,
                                     int ch, bool first)
{
    const dt_conv_shape *c = &p->task.conv;
    bool known = q >= 0;
    int carried = plane_carried(c, g), pos[16];
    char qs[16], taps[PLANE_MAX_WINDOW][PLANE_MAX_WINDOW][24];
    snprintf(qs, sizeof qs, known ? "%d" : "q", q);
    emit(b, "        {\n");
    for (int k = 0; k < c->kh; k++) {
        if (k < carried && !first) {
            for (int s = 0; s < c->kw; s++)
                snprintf(taps[k][s], sizeof taps[k][s],
                         plane_tap(p, g, known ? q : 0, ch, k, s, known, pos) ? "r%d_%d" : "", k, s);
            continue;
        }
        if (!p->unroll && emit_plane_shifted_row(b, p, g, q, ch, k, qs, taps))
            continue;
        for (int s = 0; s < c->kw; s++) {
            unsigned m = plane_tap(p, g, known ? q : 0, ch, k, s, known, pos);
            snprintf(taps[k][s], sizeof taps[k][s], m ? "r%d_%d" : "", k, s);
            if (m == 0) {
                emit(b, "            r%d_%d = (vf){ 0 };\n", k, s);
                continue;
            }
            int l = __builtin_ctz(m);
            emit(b, "            r%d_%d = MLD(0x%xu, AT(x, %s * %d + %d));\n", k, s, m, qs,
                 g->g * c->w, pos[l] - l);
        }
    }
    emit_plane_sum(b, p, g, known ? q : 0, ch, qs, taps);
    for (int k = 0; k < carried; k++)
        for (int s = 0; s < c->kw; s++)
            emit(b, "            r%d_%d = r%d_%d;\n", k, s, k + g->g, s);
    emit(b, "        }\n");
}

/* One group of chunk ch otherwise: the windows its taps need (plane_cover),
 * each tap picked from at most two of them; taps of the window rows the
 * group above handed down (t<k>_<s>) are not picked again. */
static void emit_plane_window_group(dt_buf *b, const dt_cpu_plan *p, const plane_geom *g, int q,
                                    int ch, bool first)
{
    const dt_conv_shape *c = &p->task.conv;
    bool known = q >= 0;
    int pos[PLANE_MAX_WINDOW][PLANE_MAX_WINDOW][16], src[PLANE_MAX_WINDOW][PLANE_MAX_WINDOW][16];
    int nwins = 0, carried = plane_carried(c, g), from = first ? 0 : carried;
    unsigned need[PLANE_MAX_WINDOW][PLANE_MAX_WINDOW];
    plane_win wins[PLANE_MAX_WINS];
    char qs[16], taps[PLANE_MAX_WINDOW][PLANE_MAX_WINDOW][24];
    snprintf(qs, sizeof qs, known ? "%d" : "q", q);
    /* the middle column first: its windows start where rows start and
     * often hold the other columns' taps too */
    for (int k = 0; k < c->kh; k++)
        for (int i = 0; i < c->kw; i++) {
            int s = (c->kw / 2 + i) % c->kw;
            need[k][s] = plane_tap(p, g, known ? q : 0, ch, k, s, known, pos[k][s]);
            if (k >= from)
                (void)plane_cover(pos[k][s], need[k][s], p->vec, wins, &nwins, src[k][s]);
        }
    emit(b, "        {\n");
    for (int i = 0; i < nwins; i++)
        emit(b, "            const vf v%d = MLD(0x%xu, AT(x, %s * %d + %d));\n", i, wins[i].mask, qs,
             g->g * c->sh * c->w, wins[i].base);
    for (int k = 0; k < c->kh; k++)
        for (int s = 0; s < c->kw; s++) {
            snprintf(taps[k][s], sizeof taps[k][s], need[k][s] ? "t%d_%d" : "", k, s);
            if (k < from)
                continue;
            if (!need[k][s]) {
                emit(b, "            t%d_%d = (vf){ 0 };\n", k, s);
                continue;
            }
            int a = -1, bw = -1;
            for (int l = 0; l < p->vec; l++)
                if (need[k][s] >> l & 1) {
                    if (a < 0)
                        a = src[k][s][l];
                    else if (src[k][s][l] != a)
                        bw = src[k][s][l];
                }
            if (bw < 0)
                bw = a;
            emit(b, "            t%d_%d = PICK(0x%xu, v%d, v%d", k, s, need[k][s], a, bw);
            for (int l = 0; l < p->vec; l++) {
                int idx = 0;
                if (need[k][s] >> l & 1)
                    idx = src[k][s][l] == a ? pos[k][s][l] - wins[a].base
                                            : p->vec + pos[k][s][l] - wins[bw].base;
                emit(b, ", %d", idx);
            }
            emit(b, ");\n");
        }
    emit_plane_sum(b, p, g, known ? q : 0, ch, qs, taps);
    for (int k = 0; k < carried; k++)
        for (int s = 0; s < c->kw; s++)
            emit(b, "            t%d_%d = t%d_%d;\n", k, s, k + g->g * c->sh, s);
    emit(b, "        }\n");
}

/* One channel's plane, chunk by chunk: the groups whose window reaches past
 * the top or bottom written out with their masks, the middle ones in a loop
 * (row_block: its unroll). */
static void emit_plane_channel(dt_buf *b, const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    plane_geom g = plane_geometry(p);
    bool rolls = plane_rolls(c);
    int qa, qb;
    plane_middle(p, &g, &qa, &qb);
    emit(b, "static inline __attribute__((always_inline)) void plane(const float *restrict x,\n"
            "    const float *restrict wc, float *restrict y)\n{\n");
    for (int k = 0; k < c->kh; k++)
        for (int s = 0; s < c->kw; s++)
            emit(b, "    const vf w%d_%d = wc[%d] - (vf){ 0 };\n", k, s, k * c->kw + s);
    for (int ch = 0; ch < g.nch; ch++) {
        emit(b, "    {\n");
        emit(b, "        vf");
        for (int k = 0; k < c->kh; k++)
            for (int s = 0; s < c->kw; s++)
                emit(b, "%s %c%d_%d", k || s ? "," : "", rolls ? 'r' : 't', k, s);
        emit(b, ";\n");
        for (int q = 0; q < g.groups; q++) {
            bool loop = q == qa && qb > qa;
            if (loop)
                emit(b, "        _Pragma(\"GCC unroll %d\")\n"
                        "        for (int q = %d; q < %d; q++)\n", p->row_block, qa, qb);
            if (rolls)
                emit_plane_rolling_group(b, p, &g, loop ? -1 : q, ch, q == 0);
            else
                emit_plane_window_group(b, p, &g, loop ? -1 : q, ch, q == 0);
            if (loop)
                q = qb - 1;
        }
        emit(b, "    }\n");
    }
    emit(b, "}\n\n");
}

/* A depthwise kernel on NCHW as it is (the plane and pairs forms): the
 * per-channel function `kernel` writes, then compute's loop over channels
 * (`loop`, OpenMP's where threads > 1); no copy of the input, no packing of
 * the weights. */
static void emit_inplace_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry,
                                   void (*kernel)(dt_buf *, const dt_cpu_plan *), const char *loop)
{
    const dt_conv_shape *c = &p->task.conv;
    emit_conv_defines(b, p);
    emit(b, "#define MULT %d\n\n", c->c_out / c->c_in);
    emit_plane_macros(b);
    emit(b, "static void pack_w(const float *restrict w, float *restrict wp)\n{\n"
            "    (void)w;\n    (void)wp;\n}\n\n");
    kernel(b, p);
    if (p->threads > 1)
        emit(b, "#include <omp.h>\n\n");
    emit(b, "static void compute(const float *restrict w, const float *restrict x,\n"
            "    float *restrict y)\n{\n");
    emit_omp(b, p, 1);
    emit(b, "%s}\n\n", loop);
    emit_entry(b, p, entry, 16, "    for (int n = 0; n < NB; n++)\n"
               "        compute(weight, input + (size_t)n * CI * H * W,\n"
               "                output + (size_t)n * CO * OH * OW);\n");
}

/* Plane form: one channel's plane at a time, vectors along the output plane
 * (plane_geometry), every tap a masked load (stride 1, same padding:
 * consecutive floats, window rows carried to the group below) or picked
 * from at most two masked loads (strided). */
static void emit_plane_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    emit_inplace_depthwise(b, p, entry, emit_plane_channel,
                           "    for (int co = 0; co < CO; co++)\n"
                           "        plane(x + (size_t)(co / MULT) * H * W, w + (size_t)co * KH * KW,\n"
                           "              y + (size_t)co * OH * OW);\n");
}

/* ---- the pairs form of stride-2 depthwise_conv2d --------------------------------- */

/* A pairs vector holds HALF = VEC / 2 consecutive output columns of two
 * channels, a and b = a + 1, in one output row: each 128-bit lane holds two
 * columns of a, then the same two of b. One load per channel of 2 * HALF
 * floats of an input row holds window columns 2u (its even floats) and
 * 2u + 1 (its odd ones) of every column of the chunk, and a shuffle inside
 * 128-bit lanes (vshufps) takes both channels' evens or odds into that
 * order: no two-source permute per tap, as the plane form needs at stride 2.
 * The weights are shuffled the same way once a pair; the sum is put back in
 * order with one permute a vector and stored in two halves. */

/* Lane l's source in the shuffle of loads a and b: the floats of window
 * column 2u + odd, from a in the lane's first two places, from b (index VEC
 * on) in its last two. */
static int pairs_tap_lane(int vec, int l, int odd)
{
    int lane = l / 4, m = l % 4;
    return m < 2 ? 4 * lane + 2 * m + odd : vec + 4 * lane + 2 * (m - 2) + odd;
}

/* Output lane o after the permute: channel a's columns in the low half, b's
 * in the high half; the lane of the shuffled order it is taken from. */
static int pairs_out_lane(int vec, int o)
{
    int half = vec / 2, i = o < half ? o : o - half;
    return 4 * (i / 2) + (o < half ? 0 : 2) + i % 2;
}

/* The load of window columns 2u, 2u + 1 for the chunk from output column j0:
 * its first input column (relative to 2 * j0 where j0 < 0, a chunk of the
 * loop), and the lanes it reads: those inside the row (every lane in the
 * loop). Lanes past the chunk's last output column are read where they lie
 * in the row: a moved window column takes them. */
static unsigned pairs_load(const dt_cpu_plan *p, int j0, int u, int *base)
{
    const dt_conv_shape *c = &p->task.conv;
    *base = 2 * u - c->pw;
    if (j0 < 0)
        return (1u << p->vec) - 1u;
    *base += 2 * j0;
    unsigned m = 0;
    for (int l = 0; l < p->vec; l++)
        if (*base + l >= 0 && *base + l < c->w)
            m |= 1u << l;
    return m;
}

/* Whether the chunk from column j0 can be one of the loop's: every column
 * an output and every lane of every load inside the row. */
static bool pairs_chunk_full(const dt_cpu_plan *p, int j0)
{
    int base;
    if (j0 + p->vec / 2 > p->task.conv.ow)
        return false;
    for (int u = 0; u < (p->task.conv.kw + 1) / 2; u++)
        if (pairs_load(p, j0, u, &base) != (1u << p->vec) - 1u)
            return false;
    return true;
}

static void emit_pairs_shuffle(dt_buf *b, const dt_cpu_plan *p, const char *ind, int k, int u,
                               int odd)
{
    emit(b, "%st%d_%d = SHUF(a%d_%d, b%d_%d", ind, k, 2 * u + odd, k, u, k, u);
    for (int l = 0; l < p->vec; l++)
        emit(b, ", %d", pairs_tap_lane(p->vec, l, odd));
    emit(b, ");\n");
}

/* One output row of a chunk: loads and shuffles window rows [from, KH) of
 * output row `r` (a number, or the loop's `r` where r < 0), sums, stores,
 * and hands the rows the next output row shares down. j0 < 0: the loop's
 * chunk `j0` (whole vectors). */
static void emit_pairs_row(dt_buf *b, const dt_cpu_plan *p, int r, int j0, int from, int carried)
{
    const dt_conv_shape *c = &p->task.conv;
    int half = p->vec / 2, nu = (c->kw + 1) / 2;
    int n = j0 < 0 ? half : (c->ow - j0 < half ? c->ow - j0 : half);
    bool present[PLANE_MAX_WINDOW];
    char col[32];
    if (j0 < 0)
        snprintf(col, sizeof col, "2 * j0 + ");
    else
        col[0] = '\0';
    emit(b, "            {\n");
    for (int k = 0; k < c->kh; k++) {
        present[k] = true;
        if (k < from)
            continue;
        /* the input row of window row k: known where r is, else checked
         * only where some row of the loop (r from 1) falls outside */
        int lo = (r < 0 ? 1 : r) * c->sh - c->ph + k * c->dh;
        int hi = (r < 0 ? c->oh - 1 : r) * c->sh - c->ph + k * c->dh;
        if (hi < 0 || lo >= c->h) {
            present[k] = r < 0;
            for (int s = 0; s < c->kw; s++)
                emit(b, "                t%d_%d = (vf){ 0 };\n", k, s);
            continue;
        }
        char row[48];
        if (r < 0)
            snprintf(row, sizeof row, "(r * %d + %d)", c->sh, k * c->dh - c->ph);
        else
            snprintf(row, sizeof row, "%d", lo);
        bool check = lo < 0 || hi >= c->h;
        const char *ind = check ? "                    " : "                ";
        if (check)
            emit(b, "                if ((unsigned)%s < %du) {\n", row, c->h);
        for (int u = 0; u < nu; u++) {
            if (u > 0 && n + u <= half) {
                /* window columns 2u, 2u + 1 are columns 0 and 1 of the
                 * output column u on: lanes moved, no load */
                for (int odd = 0; odd < 2 && 2 * u + odd < c->kw; odd++) {
                    emit(b, "%st%d_%d = SHUF(t%d_%d, t%d_%d", ind, k, 2 * u + odd, k, odd, k, odd);
                    for (int l = 0; l < p->vec; l++) {
                        int i = 2 * (l / 4) + l % 2, ch = l % 4 / 2;
                        int from_i = i + u < half ? i + u : half - 1;
                        emit(b, ", %d", 4 * (from_i / 2) + 2 * ch + from_i % 2);
                    }
                    emit(b, ");\n");
                }
                continue;
            }
            int base;
            unsigned m = pairs_load(p, j0, u, &base);
            for (int ch = 0; ch < 2; ch++) {
                const char *x = ch ? "xb" : "xa";
                if (m == (1u << p->vec) - 1u)
                    emit(b, "%sconst vf %c%d_%d = LD(AT(%s, %s * W + %s%d));\n", ind,
                         ch ? 'b' : 'a', k, u, x, row, col, base);
                else
                    emit(b, "%sconst vf %c%d_%d = MLD(0x%xu, AT(%s, %s * W + %s%d));\n", ind,
                         ch ? 'b' : 'a', k, u, m, x, row, col, base);
            }
            for (int odd = 0; odd < 2 && 2 * u + odd < c->kw; odd++)
                emit_pairs_shuffle(b, p, ind, k, u, odd);
        }
        if (check) {
            emit(b, "                } else {\n");
            for (int s = 0; s < c->kw; s++)
                emit(b, "                    t%d_%d = (vf){ 0 };\n", k, s);
            emit(b, "                }\n");
        }
    }
    bool any = false;
    for (int k = 0; k < c->kh; k++) {
        if (!present[k])
            continue;
        for (int s = 0; s < c->kw; s++)
            emit(b, "                %sp%d %s t%d_%d * w%d_%d;\n", s ? "" : "vf ", k,
                 s ? "+=" : "=", k, s, k, s);
        emit(b, "                %sacc %s p%d;\n", any ? "" : "vf ", any ? "+=" : "=", k);
        any = true;
    }
    if (!any)
        emit(b, "                const vf acc = (vf){ 0 };\n");
    bool identity = true;
    for (int o = 0; o < p->vec; o++)
        identity = identity && pairs_out_lane(p->vec, o) == o;
    if (identity) {
        emit(b, "                const vf o = acc;\n");
    } else {
        emit(b, "                const vf o = SHUF(acc, acc");
        for (int o = 0; o < p->vec; o++)
            emit(b, ", %d", pairs_out_lane(p->vec, o));
        emit(b, ");\n");
    }
    unsigned lo_mask = (1u << n) - 1u;
    char jc[16], at[64];
    if (j0 < 0)
        snprintf(jc, sizeof jc, "j0");
    else
        snprintf(jc, sizeof jc, "%d", j0);
    if (r < 0)
        snprintf(at, sizeof at, "r * OW + %s", jc);
    else
        snprintf(at, sizeof at, "%d + %s", r * c->ow, jc);
    emit(b, "                MST(0x%xu, ya + %s, o);\n", lo_mask, at);
    emit(b, "                MST(0x%xu, YAT(yb, %s - %d), o);\n", lo_mask << half, at, half);
    for (int k = 0; k < carried; k++)
        for (int s = 0; s < c->kw; s++)
            emit(b, "                t%d_%d = t%d_%d;\n", k, s, k + c->sh, s);
    emit(b, "            }\n");
}

/* One chunk of a pair's plane (from output column j0, or the loop's j0
 * where j0 < 0): its first output row, then the others in a loop unrolled
 * row_block times; window rows one output row shares with the next are
 * carried, not loaded again. */
static void emit_pairs_chunk(dt_buf *b, const dt_cpu_plan *p, int j0)
{
    const dt_conv_shape *c = &p->task.conv;
    int carried = c->dh == 1 && c->kh > c->sh ? c->kh - c->sh : 0;
    emit(b, "        {\n            vf");
    for (int k = 0; k < c->kh; k++)
        for (int s = 0; s < c->kw; s++)
            emit(b, "%s t%d_%d", k || s ? "," : "", k, s);
    emit(b, ";\n");
    emit_pairs_row(b, p, 0, j0, 0, carried);
    if (c->oh > 1) {
        emit(b, "            _Pragma(\"GCC unroll %d\")\n"
                "            for (int r = 1; r < OH; r++)\n", p->row_block);
        emit_pairs_row(b, p, -1, j0, carried, carried);
    }
    emit(b, "        }\n");
}

static void emit_pairs_channel(dt_buf *b, const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    int half = p->vec / 2;
    emit(b, "static inline __attribute__((always_inline)) void pair(const float *restrict xa,\n"
            "    const float *restrict xb, const float *restrict wa, const float *restrict wb,\n"
            "    float *restrict ya, float *restrict yb)\n{\n");
    for (int k = 0; k < c->kh; k++)
        for (int s = 0; s < c->kw; s++) {
            emit(b, "    const vf w%d_%d = SHUF(wa[%d] - (vf){ 0 }, wb[%d] - (vf){ 0 }", k, s,
                 k * c->kw + s, k * c->kw + s);
            for (int l = 0; l < p->vec; l++)
                emit(b, ", %d", l % 4 < 2 ? l : p->vec + l);
            emit(b, ");\n");
        }
    int nchunks = (c->ow + half - 1) / half;
    for (int t = 0; t < nchunks; t++) {
        int u = t;
        while (u < nchunks && pairs_chunk_full(p, u * half))
            u++;
        if (u - t >= 2) {
            emit(b, "    for (int j0 = %d; j0 < %d; j0 += %d)\n", t * half, u * half, half);
            emit_pairs_chunk(b, p, -1);
            t = u - 1;
            continue;
        }
        emit_pairs_chunk(b, p, t * half);
    }
    emit(b, "}\n\n");
}

/* Pairs form: two channels at a time (emit_pairs_channel). */
static void emit_pairs_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    emit_inplace_depthwise(b, p, entry, emit_pairs_channel,
                           "    for (int co = 0; co < CO; co += 2)\n"
                           "        pair(x + (size_t)(co / MULT) * H * W, x + (size_t)((co + 1) / MULT) * H * W,\n"
                           "             w + (size_t)co * KH * KW, w + (size_t)(co + 1) * KH * KW,\n"
                           "             y + (size_t)co * OH * OW, y + (size_t)(co + 1) * OH * OW);\n");
}

/* Slots form (cpu_codegen.h): window column s of output column j is input
 * column 2j + d, d = s - PW, which is slot d mod 2 of the input pair
 * j + slots_offset(d). A pair's two slots are one pair of lanes of a
 * full-resolution vector of an input row, so each window row's vectors are
 * loaded once, unpicked, and multiplied by a weight vector per pair offset
 * whose even lanes hold the tap of the even slot and odd lanes the tap of
 * the odd one; each offset accumulates apart. After the window rows the
 * pairs are summed (one two-source permute per used slot per two vectors)
 * and each offset's sums are moved to their output columns by its offset
 * (one two-source permute). A whole output row's accumulators are held. */
static int slots_offset(int d)
{
    return d >= 0 ? d / 2 : -((1 - d) / 2);
}

typedef struct slots_geometry {
    int omin, omax, noff; /* pair offsets of the window's taps */
    int ncols, nv, nps;   /* input columns read a row, their vectors, pair-sum vectors */
} slots_geometry;

static slots_geometry slots_geometry_of(const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    slots_geometry g;
    g.omin = slots_offset(-c->pw);
    g.omax = slots_offset(c->kw - 1 - c->pw);
    g.noff = g.omax - g.omin + 1;
    g.ncols = 2 * (c->ow + g.omax);
    if (g.ncols > c->w)
        g.ncols = c->w;
    g.nv = (g.ncols + p->vec - 1) / p->vec;
    g.nps = (g.nv + 1) / 2;
    return g;
}

/* Whether slot (0 even, 1 odd) of pair offset o holds a tap of the window. */
static bool slots_used(const dt_conv_shape *c, int o, int slot)
{
    int s = 2 * o + slot + c->pw;
    return s >= 0 && s < c->kw;
}

static int check_slots(const dt_cpu_plan *p, dt_error *err)
{
    const dt_conv_shape *c = &p->task.conv;
    int rc = check_strided(p, "slots", err);
    if (rc)
        return rc;
    slots_geometry g = slots_geometry_of(p);
    int acc = g.noff * g.nv, weights = g.noff * c->kh;
    if (acc + weights > DT_CPU_MAX_ACCUMULATORS)
        return dt_error_set(err, DT_EINVAL, "the slots form at vec %d holds %d accumulators and "
                            "%d weight vectors a row, more than %d", p->vec, acc, weights,
                            DT_CPU_MAX_ACCUMULATORS);
    return 0;
}

/* The name of vector <prefix><i>_<u> of a row of n, or a zero vector where
 * u is outside the row. */
static void slots_vector(char *buf, size_t len, char prefix, int i, int u, int n)
{
    if (u >= 0 && u < n)
        snprintf(buf, len, "%c%d_%d", prefix, i, u);
    else
        snprintf(buf, len, "(vf){ 0 }");
}

/* The sums of the used slots' pairs of accumulators a<i>_<2u>, a<i>_<2u+1>
 * of offset index i: s<i>_<u>. */
static void emit_slots_pair_sums(dt_buf *b, const dt_cpu_plan *p, const slots_geometry *g)
{
    const dt_conv_shape *c = &p->task.conv;
    for (int i = 0; i < g->noff; i++)
        for (int u = 0; u < g->nps; u++) {
            char hi[32];
            slots_vector(hi, sizeof hi, 'a', i, 2 * u + 1, g->nv);
            emit(b, "        const vf s%d_%d =", i, u);
            const char *plus = "";
            for (int slot = 0; slot < 2; slot++) {
                if (!slots_used(c, g->omin + i, slot))
                    continue;
                emit(b, "%s SHUF(a%d_%d, %s", plus, i, 2 * u, hi);
                for (int l = 0; l < p->vec; l++)
                    emit(b, ", %d", 2 * l + slot);
                emit(b, ")");
                plus = " +";
            }
            emit(b, ";\n");
        }
}

/* Output columns t*VEC.. of row r: each offset's pair sums moved by it. */
static void emit_slots_output(dt_buf *b, const dt_cpu_plan *p, const slots_geometry *g, int t)
{
    const dt_conv_shape *c = &p->task.conv;
    emit(b, "        {\n            vf o = (vf){ 0 };\n");
    for (int i = 0; i < g->noff; i++) {
        int o = g->omin + i;
        if (o == 0) {
            if (t < g->nps)
                emit(b, "            o += s%d_%d;\n", i, t);
            continue;
        }
        /* pair t*VEC + l + o: from sum vector t - 1 and t (o < 0) or t and t + 1 */
        int first = o < 0 ? t - 1 : t;
        char lo[32], hi[32];
        slots_vector(lo, sizeof lo, 's', i, first, g->nps);
        slots_vector(hi, sizeof hi, 's', i, first + 1, g->nps);
        emit(b, "            o += SHUF(%s, %s", lo, hi);
        for (int l = 0; l < p->vec; l++)
            emit(b, ", %d", (o < 0 ? p->vec : 0) + l + o);
        emit(b, ");\n");
    }
    int n = c->ow - t * p->vec < p->vec ? c->ow - t * p->vec : p->vec;
    if (n == p->vec)
        emit(b, "            ST(y + r * OW + %d, o);\n        }\n", t * p->vec);
    else
        emit(b, "            MST(0x%xu, y + r * OW + %d, o);\n        }\n", (1u << n) - 1u,
             t * p->vec);
}

static void emit_slots_channel(dt_buf *b, const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    slots_geometry g = slots_geometry_of(p);
    emit(b, "static inline __attribute__((always_inline)) void slots(const float *restrict x,\n"
            "    const float *restrict w, float *restrict y)\n{\n");
    for (int k = 0; k < c->kh; k++)
        for (int i = 0; i < g.noff; i++) {
            emit(b, "    const vf c%d_%d = (vf){", k, i);
            for (int l = 0; l < p->vec; l++) {
                int slot = l % 2, s = 2 * (g.omin + i) + slot + c->pw;
                if (slots_used(c, g.omin + i, slot))
                    emit(b, "%s w[%d]", l ? "," : "", k * c->kw + s);
                else
                    emit(b, "%s 0.0f", l ? "," : "");
            }
            emit(b, " };\n");
        }
    emit(b, "    _Pragma(\"GCC unroll %d\")\n    for (int r = 0; r < OH; r++) {\n", p->row_block);
    for (int i = 0; i < g.noff; i++)
        for (int v = 0; v < g.nv; v++)
            emit(b, "        vf a%d_%d = (vf){ 0 };\n", i, v);
    for (int k = 0; k < c->kh; k++) {
        int off = k * c->dh - c->ph;
        int lo = off, hi = (c->oh - 1) * c->sh + off;
        if (hi < 0 || lo >= c->h)
            continue;
        bool check = lo < 0 || hi >= c->h;
        const char *ind = check ? "            " : "        ";
        if (check)
            emit(b, "        if ((unsigned)(r * %d + %d) < %du) {\n", c->sh, off, c->h);
        emit(b, "%s{\n%s    const float *xr = x + (r * %d + %d) * W;\n", ind, ind, c->sh, off);
        for (int v = 0; v < g.nv; v++) {
            int n = g.ncols - v * p->vec < p->vec ? g.ncols - v * p->vec : p->vec;
            if (n == p->vec)
                emit(b, "%s    const vf t%d = LD(xr + %d);\n", ind, v, v * p->vec);
            else
                emit(b, "%s    const vf t%d = MLD(0x%xu, xr + %d);\n", ind, v, (1u << n) - 1u,
                     v * p->vec);
            for (int i = 0; i < g.noff; i++)
                emit(b, "%s    a%d_%d += t%d * c%d_%d;\n", ind, i, v, v, k, i);
        }
        emit(b, "%s}\n", ind);
        if (check)
            emit(b, "        }\n");
    }
    emit_slots_pair_sums(b, p, &g);
    for (int t = 0; t * p->vec < c->ow; t++)
        emit_slots_output(b, p, &g, t);
    emit(b, "    }\n}\n\n");
}

/* Slots form: one channel's plane at a time (emit_slots_channel). */
static void emit_slots_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    emit_inplace_depthwise(b, p, entry, emit_slots_channel,
                           "    for (int co = 0; co < CO; co++)\n"
                           "        slots(x + (size_t)(co / MULT) * H * W, w + (size_t)co * KH * KW,\n"
                           "              y + (size_t)co * OH * OW);\n");
}

/* ---- dense and batch_matmul ------------------------------------------------------ */

static const char *const mm_order_loops[DT_CPU_MM_ORDERS][4] = {
    { "b", "m_o", "n_o", NULL },               /* reduction inside the register tile */
    { "b", "n_o", "m_o", NULL },
    { "b", "k_o", "m_o", "n_o" },              /* partial sums through the output */
    { "b", "k_o", "n_o", "m_o" },
};

static const char *mm_bound(const char *loop)
{
    return strcmp(loop, "b") == 0 ? "BATCH" : strcmp(loop, "m_o") == 0 ? "MO"
         : strcmp(loop, "n_o") == 0 ? "NO" : "KO";
}

/* Panel form: B packed [BATCH][N/NB][K][NB], vectorised over n. */
static void emit_mm_panel_tile(dt_buf *b, const dt_cpu_plan *p, bool inside)
{
    int nv = p->n_block / p->vec;
    emit(b, "static void pack_w(const float *restrict w, float *restrict bp)\n{\n"
            "    for (int b = 0; b < BATCH; b++)\n    for (int n = 0; n < N; n++)\n"
            "    for (int k = 0; k < K; k++)\n"
            "        bp[(((size_t)b * NO + n / NB) * K + k) * NB + n %% NB] = w[((size_t)b * N + n) * K + k];\n}\n\n");
    emit(b, "static inline __attribute__((always_inline)) void tile(const float *restrict a,\n"
            "    const float *restrict bp, float *restrict y, int b, int m_o, int n_o%s)\n{\n",
         inside ? "" : ", int k_o");
    emit(b, "    const float *restrict at = a + ((size_t)b * M + m_o * MB) * K;\n"
            "    const float *restrict bt = bp + ((size_t)b * NO + n_o) * K * NB;\n"
            "    float *restrict yt = y + ((size_t)b * M + m_o * MB) * N + n_o * NB;\n");
    emit_acc_decl(b, p->m_block, nv);
    if (inside) {
        emit_acc_zero(b, p->m_block, nv);
        emit(b, "    for (int k_o = 0; k_o < KO; k_o++) {\n");
    } else {
        emit(b, "    if (k_o == 0) {\n");
        emit_acc_zero(b, p->m_block, nv);
        emit(b, "    } else {\n");
        emit_acc_io(b, p->m_block, nv, "yt", "N", false);
        emit(b, "    }\n    {\n");
    }
    emit(b, "    _Pragma(\"GCC unroll %d\")\n"
            "    for (int kk = k_o * KB; kk < k_o * KB + KB; kk++) {\n", p->unroll < 1 ? 1 : p->unroll);
    emit_weight_loads(b, nv, "(bt + (size_t)kk * NB)");
    emit_broadcast_fmas(b, p->m_block, nv, 'x', 'w', "at", " * K + kk");
    emit(b, "    }\n    }\n");
    emit_acc_io(b, p->m_block, nv, "yt", "N", true);
    emit(b, "}\n\n");
}

/* Dot form: B as stored, vectorised over k, horizontal sums at the end. */
static void emit_mm_dot_tile(dt_buf *b, const dt_cpu_plan *p, bool inside)
{
    emit(b, "static void pack_w(const float *restrict w, float *restrict bp)\n{\n"
            "    (void)w;\n    (void)bp;\n}\n\n");
    if (p->vec > 1)
        emit(b, "static inline float hsum(vf v)\n{\n    float s = 0;\n"
                "    for (int l = 0; l < VEC; l++)\n        s += v[l];\n    return s;\n}\n\n");
    else
        emit(b, "static inline float hsum(vf v)\n{\n    return v;\n}\n\n");
    emit(b, "static inline __attribute__((always_inline)) void tile(const float *restrict a,\n"
            "    const float *restrict bw, float *restrict y, int b, int m_o, int n_o%s)\n{\n",
         inside ? "" : ", int k_o");
    emit(b, "    const float *restrict at = a + ((size_t)b * M + m_o * MB) * K;\n"
            "    const float *restrict bt = bw + ((size_t)b * N + n_o * NB) * K;\n"
            "    float *restrict yt = y + ((size_t)b * M + m_o * MB) * N + n_o * NB;\n");
    emit_acc_decl(b, p->m_block, p->n_block);
    emit_acc_zero(b, p->m_block, p->n_block);
    emit(b, "    %s{\n", inside ? "for (int k_o = 0; k_o < KO; k_o++) " : "");
    emit(b, "    _Pragma(\"GCC unroll %d\")\n"
            "    for (int kk = k_o * KB; kk < k_o * KB + KB; kk += VEC) {\n", p->unroll < 1 ? 1 : p->unroll);
    for (int i = 0; i < p->m_block; i++)
        emit(b, "        const vf x%d = LD(at + %d * K + kk);\n", i, i);
    for (int j = 0; j < p->n_block; j++)
        emit(b, "        const vf w%d = LD(bt + %d * K + kk);\n", j, j);
    for (int i = 0; i < p->m_block; i++)
        for (int j = 0; j < p->n_block; j++)
            emit(b, "        a%d_%d += x%d * w%d;\n", i, j, i, j);
    emit(b, "    }\n    }\n");
    for (int i = 0; i < p->m_block; i++)
        for (int j = 0; j < p->n_block; j++)
            if (inside)
                emit(b, "    yt[%d * N + %d] = hsum(a%d_%d);\n", i, j, i, j);
            else
                emit(b, "    yt[%d * N + %d] = (k_o == 0 ? 0.0f : yt[%d * N + %d]) + hsum(a%d_%d);\n",
                     i, j, i, j, i, j);
    emit(b, "}\n\n");
}

static void emit_mm(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    const dt_mm_shape *m = &p->task.mm;
    emit(b, "#define BATCH %d\n#define M %d\n#define N %d\n#define K %d\n#define MB %d\n"
            "#define NB %d\n#define KB %d\n#define MO %d\n#define NO %d\n#define KO %d\n\n",
         m->b, m->m, m->n, m->k, p->m_block, p->n_block, p->k_block, m->m / p->m_block,
         m->n / p->n_block, m->k / p->k_block);
    const char *const *loops = mm_order_loops[p->order];
    bool inside = loops[3] == NULL;
    if (p->pack_weight)
        emit_mm_panel_tile(b, p, inside);
    else
        emit_mm_dot_tile(b, p, inside);
    const char *bounds[4];
    int nloops = inside ? 3 : 4;
    for (int i = 0; i < nloops; i++)
        bounds[i] = mm_bound(loops[i]);
    emit(b, "static void compute(const float *restrict a, const float *restrict w, float *restrict y)\n{\n");
    emit_loops(b, p, loops, bounds, nloops, inside ? 1 : 2,
               inside ? "tile(a, w, y, b, m_o, n_o);" : "tile(a, w, y, b, m_o, n_o, k_o);");
    emit(b, "}\n\n");
    size_t wsz = p->pack_weight ? round16((size_t)m->b * m->n * m->k) : 16;
    const char *step = p->pack_weight ? "    compute(input, ws, output);\n"
                                      : "    compute(input, weight, output);\n";
    emit_entry(b, p, entry, wsz, step);
}

/* Whether name can stand as a C identifier (and a prefix of one). */
static bool is_identifier(const char *name)
{
    if (!name || !(name[0] == '_' || (name[0] >= 'a' && name[0] <= 'z') ||
                   (name[0] >= 'A' && name[0] <= 'Z')))
        return false;
    for (const char *c = name; *c; c++)
        if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9')))
            return false;
    return strlen(name) < 200;
}

int dt_cpu_codegen(const dt_cpu_plan *plan, char **source, dt_error *err)
{
    return dt_cpu_codegen_named(plan, DT_CPU_KERNEL_ENTRY, source, err);
}

int dt_cpu_codegen_named(const dt_cpu_plan *plan, const char *entry, char **source,
                         dt_error *err)
{
    *source = NULL;
    if (!is_identifier(entry))
        return dt_error_set(err, DT_EINVAL, "entry name '%s' is not a C identifier",
                            entry ? entry : "(null)");
    int rc = dt_cpu_plan_check(plan, err);
    if (rc < 0)
        return rc;
    dt_buf b = { 0 };
    emit_prelude(&b, plan);
    bool pixels = is_conv(&plan->task) && plan->form == DT_CPU_FORM_PIXELS;
    if (plan->task.kind == DT_OP_CONV2D)
        (pixels ? emit_pixels_conv2d : emit_conv2d)(&b, plan, entry);
    else if (plan->task.kind == DT_OP_DEPTHWISE_CONV2D && plan->form == DT_CPU_FORM_PLANE)
        emit_plane_depthwise(&b, plan, entry);
    else if (plan->task.kind == DT_OP_DEPTHWISE_CONV2D && plan->form == DT_CPU_FORM_PAIRS)
        emit_pairs_depthwise(&b, plan, entry);
    else if (plan->task.kind == DT_OP_DEPTHWISE_CONV2D && plan->form == DT_CPU_FORM_SLOTS)
        emit_slots_depthwise(&b, plan, entry);
    else if (plan->task.kind == DT_OP_DEPTHWISE_CONV2D)
        (pixels ? emit_pixels_depthwise : emit_depthwise)(&b, plan, entry);
    else
        emit_mm(&b, plan, entry);
    if (b.failed) {
        dt_buf_free(&b);
        return dt_error_set(err, DT_ENOMEM, "out of memory writing kernel source");
    }
    *source = b.data;
    return 0;
}
