/* cpu_codegen_plane.c — the plane form of depthwise_conv2d (cpu_codegen.h):
 * one channel's plane at a time with vectors along the output plane and
 * every tap a masked load; also the per-channel loop and checks the pairs
 * and slots forms share with it.
 */
#include "cpu_codegen_internal.h"

#include <stdio.h>
#include <string.h>

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

int cpu_check_plane(const dt_cpu_plan *p, dt_error *err)
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
int cpu_check_strided(const dt_cpu_plan *p, const char *name, dt_error *err)
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
int cpu_check_pairs(const dt_cpu_plan *p, dt_error *err)
{
    const dt_conv_shape *c = &p->task.conv;
    int rc = cpu_check_strided(p, "pairs", err);
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
void cpu_emit_inplace_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry,
                                void (*kernel)(dt_buf *, const dt_cpu_plan *), const char *loop)
{
    const dt_conv_shape *c = &p->task.conv;
    cpu_emit_conv_defines(b, p);
    emit(b, "#define MULT %d\n\n", c->c_out / c->c_in);
    emit_plane_macros(b);
    emit(b, "static void pack_w(const float *restrict w, float *restrict wp)\n{\n"
            "    (void)w;\n    (void)wp;\n}\n\n");
    kernel(b, p);
    if (p->threads > 1)
        emit(b, "#include <omp.h>\n\n");
    emit(b, "static void compute(const float *restrict w, const float *restrict x,\n"
            "    float *restrict y)\n{\n");
    cpu_emit_omp(b, p, 1);
    emit(b, "%s}\n\n", loop);
    cpu_emit_entry(b, p, entry, 16, "    for (int n = 0; n < NB; n++)\n"
               "        compute(weight, input + (size_t)n * CI * H * W,\n"
               "                output + (size_t)n * CO * OH * OW);\n", NULL);
}

/* Plane form: one channel's plane at a time, vectors along the output plane
 * (plane_geometry), every tap a masked load (stride 1, same padding:
 * consecutive floats, window rows carried to the group below) or picked
 * from at most two masked loads (strided). */
void cpu_emit_plane_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry)
{
    cpu_emit_inplace_depthwise(b, p, entry, emit_plane_channel,
                           "    for (int co = 0; co < CO; co++)\n"
                           "        plane(x + (size_t)(co / MULT) * H * W, w + (size_t)co * KH * KW,\n"
                           "              y + (size_t)co * OH * OW);\n");
}
