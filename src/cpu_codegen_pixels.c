/* cpu_codegen_pixels.c — the pixels form of conv2d and depthwise_conv2d
 * (cpu_codegen.h): NCHW with vectors over output width, input rows packed
 * per band (or read in place), weights broadcast over pixel vectors.
 */
#include "cpu_codegen_internal.h"

#include <stdio.h>
#include <string.h>

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
    int nv = cpu_pixel_vectors(p);
    cpu_emit_conv_defines(b, p);
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
    int nv = cpu_pixel_vectors(p), tail = p->ow_block - (nv - 1) * p->vec;
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
    int nv = cpu_pixel_vectors(p);
    if (p->red_order == 0)
        emit(b, "    for (int ci = ci_o * CIB; ci < ci_o * CIB + CIB; ci++)\n    for (int r = 0; r < KH; r++) {\n");
    else
        emit(b, "    for (int r = 0; r < KH; r++)\n    for (int ci = ci_o * CIB; ci < ci_o * CIB + CIB; ci++) {\n");
    emit(b, "        const float *xr = xq + ((size_t)ci * HQ + oh * SH + r * DH) * SW * WQ + ow_o * OWB;\n");
    for (int s = 0; s < cpu_s_copies(p); s++) {
        cpu_emit_s_open(b, p, s);
        emit(b, "            const float *xv = xr + (s * DW %% SW) * WQ + s * DW / SW;\n"
                "            const float *wv = wt + ((ci * KH + r) * KW + s) * COB;\n");
        for (int j = 0; j < nv; j++)
            emit(b, "            const vf x%d = LD(xv + %d * VEC);\n", j, j);
        cpu_emit_broadcast_fmas(b, p->co_block, nv, 'w', 'x', "wv", "");
        emit(b, "        }\n");
    }
    emit(b, "    }\n");
}

/* With more than one ci tile, tiles after the first add to the partial sums
 * already stored in the output. */
static void emit_pixels_conv_tile(dt_buf *b, const dt_cpu_plan *p)
{
    int nv = cpu_pixel_vectors(p), tail = p->ow_block - (nv - 1) * p->vec;
    emit(b, "static inline __attribute__((always_inline)) void tile(const float *restrict wp,\n"
            "    const float *restrict xq, float *restrict y, int co_o, int oh, int ow_o, int ci_o)\n{\n"
            "    float *restrict yt = y + ((size_t)co_o * COB * OH + oh) * OW + ow_o * OWB;\n"
            "    const float *restrict wt = wp + (size_t)co_o * CIG * KH * KW * COB;\n");
    cpu_emit_acc_decl(b, p->co_block, nv);
    cpu_emit_acc_zero(b, p->co_block, nv);
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

void cpu_emit_pixels_conv2d(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    const dt_conv_shape *c = &p->task.conv;
    bool in_place = cpu_pixels_in_place(p);
    int hq = in_place ? c->h : (c->oh - 1) * c->sh + (c->kh - 1) * c->dh + 1;
    int wq = in_place ? c->w : c->ow - p->ow_block + cpu_pixel_vectors(p) * p->vec +
                               (c->kw - 1) * c->dw / c->sw;
    emit_pixels_defines(b, p, hq, wq);
    emit_pixels_pack_w(b);
    size_t wsz = round16((size_t)c->c_out * c->c_in * c->kh * c->kw);
    size_t xsz = in_place ? 0 : round16((size_t)c->c_in * hq * c->sw * wq);
    if (!in_place) {
        emit_pack_row(b, p);
        cpu_emit_pack_x_open(b, p, "xq");
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
        bounds[i] = cpu_conv_bound(loops[i]);
    emit(b, "static void compute(const float *restrict wp, const float *restrict xq, float *restrict y)\n{\n");
    cpu_emit_loops(b, p, loops, bounds, 5, 1, "tile(wp, xq, y, co_o, oh_o * OHB + oh_i, ow_o, ci_o);");
    emit(b, "}\n\n");
    char step[512];
    if (in_place)
        snprintf(step, sizeof step, "    for (int n = 0; n < NB; n++)\n"
                 "        compute(ws, input + (size_t)n * CI * H * W, output + (size_t)n * CO * OH * OW);\n");
    else
        snprintf(step, sizeof step, "    for (int n = 0; n < NB; n++) {\n"
                 "        pack_x(input + (size_t)n * CI * H * W, ws + %zu);\n"
                 "        compute(ws, ws + %zu, output + (size_t)n * CO * OH * OW);\n    }\n", wsz, wsz);
    cpu_emit_entry(b, p, entry, wsz + xsz, step, NULL);
}

/* ROWS output rows of COB channels: each input row of the band is loaded
 * once per kernel column and feeds every output row whose window holds it
 * (row t of the tile's input is kernel row r of output row k when
 * t = k * SH + r * DH), so a vector load serves up to KH FMAs. */
static void emit_pixels_dw_tile(dt_buf *b, const dt_cpu_plan *p)
{
    const dt_conv_shape *c = &p->task.conv;
    int nv = cpu_pixel_vectors(p), rows = p->row_block;
    emit(b, "static inline __attribute__((always_inline)) void tile(const float *restrict wp,\n"
            "    const float *restrict xb, float *restrict y, int co_o, int oh_o, int oh_i, int ow_o)\n{\n"
            "    float *restrict yt = y + ((size_t)co_o * COB * OH + oh_o * OHB + oh_i) * OW + ow_o * OWB;\n"
            "    const float *restrict wt = wp + (size_t)co_o * KH * KW * COB;\n");
    cpu_emit_acc_decl(b, p->co_block * rows, nv);
    cpu_emit_acc_zero(b, p->co_block * rows, nv);
    emit(b, "    {\n");
    int in_rows = (rows - 1) * c->sh + (c->kh - 1) * c->dh + 1;
    for (int s = 0; s < cpu_s_copies(p); s++) {
        cpu_emit_s_open(b, p, s);
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
void cpu_emit_pixels_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    const dt_conv_shape *c = &p->task.conv;
    int hq = (p->oh_block - 1) * c->sh + (c->kh - 1) * c->dh + 1;
    int wq = c->ow - p->ow_block + cpu_pixel_vectors(p) * p->vec + (c->kw - 1) * c->dw / c->sw;
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
    cpu_emit_omp(b, p, 2);
    const char *const *outer = pixels_order_loops[p->order];
    for (int i = 0; i < 2; i++)
        emit(b, "    for (int %s = 0; %s < %s; %s++)%s\n", outer[i], outer[i], cpu_conv_bound(outer[i]),
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
    cpu_emit_entry(b, p, entry, wsz + band * (size_t)p->threads, step, NULL);
}
