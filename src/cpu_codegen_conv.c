/* cpu_codegen_conv.c — the blocked form of conv2d and depthwise_conv2d
 * (cpu_codegen.h): channel-blocked layouts with vectors over channels, the
 * tile loops in the plan's order, and the register tiles of the taps that
 * read padding written apart from the rest (split_taps).
 */
#include "cpu_codegen_internal.h"

#include <stdio.h>
#include <string.h>

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

const char *cpu_conv_bound(const char *loop)
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
        cpu_emit_blocked_pack_x(b, p, "1", "CI", 1);
    else
        cpu_emit_blocked_pack_x(b, p, "CIB", "CIO", p->ci_block);
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
        for (int s = 0; s < cpu_s_copies(p); s++) {
            uint64_t used = pixels_inside(p, at->col_tile, s);
            if (!used)
                continue;
            cpu_emit_s_open(b, p, s);
            emit(b, "        for (int cii = 0; cii < CIB; cii++) {\n"
                    "            const float *wv = wt + ((r * KW + s) * CIB + cii) * COB;\n"
                    "            const float *xv = xt + ((r * DH) * WP + s * DW) * CIB + cii;\n");
            cpu_emit_weight_loads(b, cv, "wv");
            cpu_emit_broadcast_fmas_of(b, p->ow_block, used, cv, 'x', 'w', "xv", " * (SW * CIB)");
            emit(b, "        }\n        }\n");
        }
        emit(b, "    }\n    }\n");
        return;
    }
    emit(b, "    const float *restrict xt = xp + ((size_t)ci_o * CIB * HP + oh * SH) * WP + ow_o * OWB * SW;\n"
            "    for (int cii = 0; cii < CIB; cii++)\n"
            "    for (int r = %d; r < %d; r++) {\n", at->r_first, at->r_end);
    for (int s = 0; s < cpu_s_copies(p); s++) {
        uint64_t used = pixels_inside(p, at->col_tile, s);
        if (!used)
            continue;
        cpu_emit_s_open(b, p, s);
        emit(b, "            const float *wv = wt + ((cii * KH + r) * KW + s) * COB;\n"
                "            const float *xv = xt + ((size_t)cii * HP + r * DH) * WP + s * DW;\n");
        cpu_emit_weight_loads(b, cv, "wv");
        cpu_emit_broadcast_fmas_of(b, p->ow_block, used, cv, 'x', 'w', "xv", " * (SW)");
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
    cpu_emit_acc_decl(b, p->ow_block, cv);
    if (!has_ci) {
        cpu_emit_acc_zero(b, p->ow_block, cv);
        emit(b, "    for (int ci_o = 0; ci_o < CIO; ci_o++)\n");
    } else {
        emit(b, "    if (ci_o == 0) {\n");
        cpu_emit_acc_zero(b, p->ow_block, cv);
        emit(b, "    } else {\n");
        cpu_emit_acc_io(b, p->ow_block, cv, "yt", "COB", false);
        emit(b, "    }\n");
    }
    emit_conv_reduction(b, p, at);
    cpu_emit_acc_io(b, p->ow_block, cv, "yt", "COB", true);
    emit(b, "}\n\n");
}

void cpu_emit_conv2d(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    const dt_conv_shape *c = &p->task.conv;
    cpu_emit_conv_defines(b, p);
    emit(b, "#define CIB %d\n#define CIO %d\n#define MULT 1\n\n", p->ci_block, c->c_in / p->ci_block);
    size_t wsz = round16((size_t)c->c_out * c->c_in * c->kh * c->kw);
    size_t xsz = round16((size_t)c->c_in * (c->h + 2 * c->ph) * (c->w + 2 * c->pw));
    size_t ysz = round16((size_t)c->c_out * c->oh * c->ow);
    emit_conv_pack_w(b, p);
    cpu_emit_transpose_macro(b, p);
    emit_conv_pack_x(b, p);
    cpu_emit_unpack_y(b, p);
    const char *const *loops = conv_order_loops[p->order];
    bool inside = loops[4] == NULL;
    emit_tiles(b, p, !inside, emit_conv_tile);
    int nloops = inside ? 4 : 5, omp_at = strcmp(loops[0], "ci_o") == 0 ? 1 : 0;
    const char *bounds[5];
    for (int i = 0; i < nloops; i++)
        bounds[i] = cpu_conv_bound(loops[i]);
    emit(b, "static void compute(const float *restrict wp, const float *restrict xp, float *restrict yb)\n{\n");
    cpu_emit_loops(b, p, loops, bounds, nloops, omp_at,
               inside ? "tile(wp, xp, yb, co_o, oh_o * OHB + oh_i, ow_o);"
                      : "tile(wp, xp, yb, co_o, oh_o * OHB + oh_i, ow_o, ci_o);");
    emit(b, "}\n\n");
    cpu_emit_conv_entry(b, p, entry, wsz, xsz, ysz);
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
    cpu_emit_blocked_pack_x(b, p, "COB", "COO", p->co_block);
}

static void emit_dw_tile(dt_buf *b, const dt_cpu_plan *p, bool has_ci, const char *name,
                         const tile_place *at)
{
    int cv = p->co_block / p->vec;
    emit_tile_open(b, name, has_ci);
    emit(b, "    float *restrict yt = yb + (((size_t)co_o * OH + oh) * OW + ow_o * OWB) * COB;\n"
            "    const float *restrict wt = wp + (size_t)co_o * KH * KW * COB;\n"
            "    const float *restrict xt = xp + (((size_t)co_o * HP + oh * SH) * WP + ow_o * OWB * SW) * COB;\n");
    cpu_emit_acc_decl(b, p->ow_block, cv);
    cpu_emit_acc_zero(b, p->ow_block, cv);
    emit(b, "    for (int r = %d; r < %d; r++) {\n", at->r_first, at->r_end);
    for (int s = 0; s < cpu_s_copies(p); s++) {
        uint64_t used = pixels_inside(p, at->col_tile, s);
        if (!used)
            continue;
        cpu_emit_s_open(b, p, s);
        emit(b, "            const float *wv = wt + (r * KW + s) * COB;\n"
                "            const float *xv = xt + ((r * DH) * WP + s * DW) * COB;\n");
        cpu_emit_weight_loads(b, cv, "wv");
        for (int i = 0; i < p->ow_block; i++)
            for (int j = 0; j < cv; j++)
                if (used >> i & 1)
                    emit(b, "            a%d_%d += w%d * LD(xv + %d * SW * COB + %d * VEC);\n", i, j, j, i, j);
        emit(b, "        }\n");
    }
    emit(b, "    }\n");
    cpu_emit_acc_io(b, p->ow_block, cv, "yt", "COB", true);
    emit(b, "}\n\n");
}

void cpu_emit_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    const dt_conv_shape *c = &p->task.conv;
    cpu_emit_conv_defines(b, p);
    emit(b, "#define MULT %d\n\n", c->c_out / c->c_in);
    size_t wsz = round16((size_t)c->c_out * c->kh * c->kw);
    size_t xsz = round16((size_t)c->c_out * (c->h + 2 * c->ph) * (c->w + 2 * c->pw));
    size_t ysz = round16((size_t)c->c_out * c->oh * c->ow);
    cpu_emit_transpose_macro(b, p);
    emit_dw_packing(b, p);
    cpu_emit_unpack_y(b, p);
    emit_tiles(b, p, false, emit_dw_tile);
    const char *const *loops = dw_order_loops[p->order];
    const char *bounds[4];
    for (int i = 0; i < 4; i++)
        bounds[i] = cpu_conv_bound(loops[i]);
    emit(b, "static void compute(const float *restrict wp, const float *restrict xp, float *restrict yb)\n{\n");
    cpu_emit_loops(b, p, loops, bounds, 4, 0, "tile(wp, xp, yb, co_o, oh_o * OHB + oh_i, ow_o);");
    emit(b, "}\n\n");
    cpu_emit_conv_entry(b, p, entry, wsz, xsz, ysz);
}
