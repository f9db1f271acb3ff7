/* cpu_codegen_pairs.c — the pairs and slots forms of stride-2
 * depthwise_conv2d (cpu_codegen.h): the even and odd floats of one load are
 * two window columns; pairs holds two channels in a vector, slots one
 * channel's pairs of lanes.
 */
#include "cpu_codegen_internal.h"

#include <stdio.h>
#include <string.h>

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
void cpu_emit_pairs_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    cpu_emit_inplace_depthwise(b, p, entry, emit_pairs_channel,
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

int cpu_check_slots(const dt_cpu_plan *p, dt_error *err)
{
    const dt_conv_shape *c = &p->task.conv;
    int rc = cpu_check_strided(p, "slots", err);
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
void cpu_emit_slots_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    cpu_emit_inplace_depthwise(b, p, entry, emit_slots_channel,
                           "    for (int co = 0; co < CO; co++)\n"
                           "        slots(x + (size_t)(co / MULT) * H * W, w + (size_t)co * KH * KW,\n"
                           "              y + (size_t)co * OH * OW);\n");
}
