/* cpu_codegen_mm.c — dense and batch_matmul (cpu_codegen.h): panels of
 * packed B with broadcast FMAs, or dot products over K on the weights as
 * stored, the tile loops in the plan's order.
 */
#include "cpu_codegen_internal.h"

#include <stdio.h>
#include <string.h>

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
    cpu_emit_acc_decl(b, p->m_block, nv);
    if (inside) {
        cpu_emit_acc_zero(b, p->m_block, nv);
        emit(b, "    for (int k_o = 0; k_o < KO; k_o++) {\n");
    } else {
        emit(b, "    if (k_o == 0) {\n");
        cpu_emit_acc_zero(b, p->m_block, nv);
        emit(b, "    } else {\n");
        cpu_emit_acc_io(b, p->m_block, nv, "yt", "N", false);
        emit(b, "    }\n    {\n");
    }
    emit(b, "    _Pragma(\"GCC unroll %d\")\n"
            "    for (int kk = k_o * KB; kk < k_o * KB + KB; kk++) {\n", p->unroll < 1 ? 1 : p->unroll);
    cpu_emit_weight_loads(b, nv, "(bt + (size_t)kk * NB)");
    cpu_emit_broadcast_fmas(b, p->m_block, nv, 'x', 'w', "at", " * K + kk");
    emit(b, "    }\n    }\n");
    cpu_emit_acc_io(b, p->m_block, nv, "yt", "N", true);
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
    cpu_emit_acc_decl(b, p->m_block, p->n_block);
    cpu_emit_acc_zero(b, p->m_block, p->n_block);
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

void cpu_emit_mm(dt_buf *b, const dt_cpu_plan *p, const char *entry)
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
    cpu_emit_loops(b, p, loops, bounds, nloops, inside ? 1 : 2,
               inside ? "tile(a, w, y, b, m_o, n_o);" : "tile(a, w, y, b, m_o, n_o, k_o);");
    emit(b, "}\n\n");
    size_t wsz = p->pack_weight ? round16((size_t)m->b * m->n * m->k) : 16;
    const char *step = p->pack_weight ? "    compute(input, ws, output);\n"
                                      : "    compute(input, weight, output);\n";
    cpu_emit_entry(b, p, entry, wsz, step, NULL);
}
