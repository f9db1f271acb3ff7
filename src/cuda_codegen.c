/* cuda_codegen.c — CUDA C for one configuration of conv2d, depthwise_conv2d,
 * dense and batch_matmul (see cuda_codegen.h for the mapping).
 *
 * The source is written by a small emitter (indented lines into a growing
 * buffer). Shapes and tile sizes become enumerators at the top of the
 * translation unit (unused ones draw no NVRTC warnings), so the kernels'
 * index arithmetic folds at compile time. Loop nests are emitted by one
 * function that, given the unroll budget, writes each loop as a plain loop, a
 * `#pragma unroll` loop or (explicit unrolling) one braced block per
 * iteration with the loop variable bound to a constant; register tiles
 * indexed by constants then live in registers. The plans and their checks
 * are cuda_plan.c's.
 */
#include "cuda_codegen.h"
#include "cuda_codegen_internal.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/util.h"

/* ---- the emitter --------------------------------------------------------------- */

typedef struct emitter {
    dt_buf text;
    int indent;
    const dt_cuda_plan *plan;
} emitter;

/* Writes one line: indentation, the formatted text, a newline. */
static void emit(emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void emit(emitter *e, const char *fmt, ...)
{
    static const char spaces[] = "                                ";
    for (size_t pad = (size_t)e->indent * 4; pad > 0;) {
        size_t n = pad < sizeof spaces - 1 ? pad : sizeof spaces - 1;
        dt_buf_append(&e->text, spaces, n);
        pad -= n;
    }
    va_list ap;
    va_start(ap, fmt);
    dt_buf_vprintf(&e->text, fmt, ap);
    va_end(ap);
    dt_buf_append(&e->text, "\n", 1);
}

static void open_block(emitter *e, const char *head)
{
    emit(e, "%s{", head);
    e->indent++;
}

static void close_block(emitter *e)
{
    e->indent--;
    emit(e, "}");
}

/* ---- loop nests ------------------------------------------------------------------ */

typedef struct loop {
    const char *var;
    int extent;
} loop;

typedef void (*body_fn)(emitter *e, const void *ctx);

typedef struct nest {
    const loop *loops;
    int nloops;
    int first_unrolled;    /* loops at this depth and deeper are unrolled */
    body_fn body;
    const void *ctx;
} nest;

/* AutoTVM's auto-unroll rule as cuda_codegen.h states it: walking outward,
 * a loop is unrolled while the innermost iterations under it (body_weight per
 * body) stay within auto_unroll_max_step. */
static int first_unrolled(const dt_cuda_plan *p, const loop *loops, int n, long body_weight)
{
    long steps = body_weight;
    int d = n;
    while (d > 0 && p->unroll_max_step > 0) {
        steps *= loops[d - 1].extent;
        if (steps > p->unroll_max_step)
            break;
        d--;
    }
    return d;
}

static void emit_level(emitter *e, const nest *n, int depth)
{
    if (depth == n->nloops) {
        n->body(e, n->ctx);
        return;
    }
    const loop *l = &n->loops[depth];
    char head[128];
    bool unrolled = depth >= n->first_unrolled;
    if (l->extent == 1 || (unrolled && e->plan->unroll_explicit)) {
        for (int i = 0; i < l->extent; i++) {
            snprintf(head, sizeof head, "{ const int %s = %d; ", l->var, i);
            emit(e, "%s", head);
            e->indent++;
            emit_level(e, n, depth + 1);
            close_block(e);
        }
        return;
    }
    if (unrolled)
        emit(e, "#pragma unroll");
    snprintf(head, sizeof head, "for (int %s = 0; %s < %d; ++%s) ", l->var, l->var, l->extent, l->var);
    open_block(e, head);
    emit_level(e, n, depth + 1);
    close_block(e);
}

static void emit_nest(emitter *e, const loop *loops, int nloops, long body_weight, body_fn body,
                      const void *ctx)
{
    nest n = { loops, nloops, first_unrolled(e->plan, loops, nloops, body_weight), body, ctx };
    emit_level(e, &n, 0);
}

/* ---- shared pieces of every kernel ----------------------------------------------- */

/* Register-tile loops of the three output axes (f, y, x), outer to inner. */
static const loop tile_loops_template[6] = {
    { "vf", 0 }, { "fi", 0 }, { "vy", 0 }, { "yi", 0 }, { "vx", 0 }, { "xi", 0 },
};

static void tile_loops(const dt_cuda_plan *p, loop *out)
{
    memcpy(out, tile_loops_template, sizeof tile_loops_template);
    out[0].extent = p->f[1], out[1].extent = p->f[3];
    out[2].extent = p->y[1], out[3].extent = p->y[3];
    out[4].extent = p->x[1], out[5].extent = p->x[3];
}

static void emit_const(emitter *e, const char *name, long value)
{
    emit(e, "enum { %s = %ld };", name, value);
}

static void emit_tile_consts(emitter *e)
{
    const dt_cuda_plan *p = e->plan;
    static const char *const axes[3][4] = {
        { "NBF", "VF", "TF", "FI" }, { "NBY", "VY", "TY", "YI" }, { "NBX", "VX", "TX", "XI" }
    };
    const int *splits[3] = { p->f, p->y, p->x };
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < 4; i++)
            emit_const(e, axes[a][i], splits[a][i]);
    emit_const(e, "BF", extent(p->f));
    emit_const(e, "BY", extent(p->y));
    emit_const(e, "BX", extent(p->x));
    emit_const(e, "TK", reduction_threads(p));
    emit_const(e, "NT", plan_threads(p));
}

static void emit_header(emitter *e)
{
    char desc[256], shape[128];
    dt_cuda_plan_str(e->plan, desc, sizeof desc);
    dt_task_shape_str(&e->plan->task, shape, sizeof shape);
    emit(e, "// dtune: %s %s (%s)", dt_op_kind_name(e->plan->task.kind), e->plan->task.name, shape);
    emit(e, "// %s", desc);
    emit_tile_consts(e);
}

static void emit_kernel_open(emitter *e)
{
    emit(e, "extern \"C\" __global__ void __launch_bounds__(NT)");
    emit(e, "%s(const float *__restrict__ input, const float *__restrict__ weight,",
         DT_CUDA_KERNEL_NAME);
    emit(e, "          float *__restrict__ output)");
    open_block(e, "");
    emit(e, "const int tid = threadIdx.x, tk = tid %% TK, tr = tid / TK;");
    emit(e, "const int tx = tr %% TX, ty = (tr / TX) %% TY, tf = tr / (TX * TY);");
    emit(e, "(void)tf; (void)ty; (void)tk;");
    emit(e, "const int y0 = blockIdx.y * BY, x0 = blockIdx.x * BX;");
    emit(e, "const int n = blockIdx.z / NBF, f0 = (blockIdx.z %% NBF) * BF;");
    emit(e, "(void)f0;");
}

static void body_zero(emitter *e, const void *ctx)
{
    emit(e, "acc[vf * FI + fi][vy * YI + yi][vx * XI + xi] = 0.0f;");
}

static void body_fma(emitter *e, const void *ctx)
{
    emit(e, "acc[vf * FI + fi][vy * YI + yi][vx * XI + xi] = fmaf(wr[vf * FI + fi], "
            "ar[vy * YI + yi][vx * XI + xi], acc[vf * FI + fi][vy * YI + yi][vx * XI + xi]);");
}

/* Index of the register tile's accumulator (vf, fi, vy, yi, vx, xi) among
 * the thread's ACC ones, for the partial sums in shared memory. */
#define ACC_INDEX "(((vf * FI + fi) * (VY * YI) + vy * YI + yi) * (VX * XI) + vx * XI + xi)"

static void body_put_partial(emitter *e, const void *ctx)
{
    emit(e, "part_s[" ACC_INDEX " * NT + tid] = acc[vf * FI + fi][vy * YI + yi][vx * XI + xi];");
}

/* The kt = 0 thread adds its TK - 1 neighbours' partial sums (threads tid
 * + 1 ... tid + TK - 1 share its outputs) into its accumulators. */
static void body_add_partials(emitter *e, const void *ctx)
{
    open_block(e, "for (int j = 1; j < TK; ++j) ");
    emit(e, "acc[vf * FI + fi][vy * YI + yi][vx * XI + xi] += part_s[" ACC_INDEX " * NT + tid + j];");
    close_block(e);
}

static void emit_tile_nest(emitter *e, body_fn body);

/* The end of a kernel: with reduction threads, the partial sums meet in
 * shared memory (the staging buffer, free once the reduction is done) and
 * the tk = 0 thread stores; otherwise every thread stores its tile. */
static void emit_reduce_and_store(emitter *e, body_fn store)
{
    if (reduction_threads(e->plan) > 1) {
        emit(e, "float *part_s = dt_smem;        // [ACC][NT], after the staging is done");
        emit(e, "__syncthreads();");
        emit_tile_nest(e, body_put_partial);
        emit(e, "__syncthreads();");
        open_block(e, "if (tk == 0) ");
        emit_tile_nest(e, body_add_partials);
        emit_tile_nest(e, store);
        close_block(e);
    } else {
        emit_tile_nest(e, store);
    }
}

/* Writes the register tile to its NCHW output positions. */
static void body_store_conv(emitter *e, const void *ctx)
{
    emit(e, "output[((n * COUT + f0 + (vf * TF + tf) * FI + fi) * OH + y0 + (vy * TY + ty) * YI + yi)"
            " * OW + x0 + (vx * TX + tx) * XI + xi] = acc[vf * FI + fi][vy * YI + yi][vx * XI + xi];");
}

static void emit_tile_nest(emitter *e, body_fn body)
{
    loop loops[6];
    tile_loops(e->plan, loops);
    emit_nest(e, loops, 6, 1, body, NULL);
}

static void emit_acc_decl(emitter *e)
{
    emit(e, "float acc[VF * FI][VY * YI][VX * XI];");
    emit_tile_nest(e, body_zero);
}

/* A cooperative copy of `size` elements into shared memory: each of the NT
 * threads takes elements tid, tid + NT, ...; body_fn writes element i. */
static void emit_coop_copy(emitter *e, const char *size_name, long size, body_fn body)
{
    long nt = plan_threads(e->plan);
    long iters = (size + nt - 1) / nt;
    loop it = { "it", (int)iters };
    emit(e, "// %s = %ld elements, %ld per thread", size_name, size, iters);
    open_block(e, "");
    emit_nest(e, &it, 1, 1, body, size % nt ? size_name : NULL);
    close_block(e);
}

/* Opens `if (i < size)` when the copy does not divide evenly (ctx = size name). */
static bool open_copy_guard(emitter *e, const void *ctx)
{
    emit(e, "const int i = it * NT + tid;");
    if (!ctx)
        return false;
    char head[64];
    snprintf(head, sizeof head, "if (i < %s) ", (const char *)ctx);
    open_block(e, head);
    return true;
}

/* ---- conv2d ---------------------------------------------------------------------- */

static void emit_conv_consts(emitter *e)
{
    const dt_cuda_plan *p = e->plan;
    const dt_conv_shape *c = &p->task.conv;
    const char *names[] = { "BATCH", "CIN", "H", "W", "COUT", "KH", "KW", "SH",
                            "SW", "PH", "PW", "DH", "DW", "OH", "OW" };
    const int values[] = { c->n, c->c_in, c->h, c->w, c->c_out, c->kh, c->kw, c->sh,
                           c->sw, c->ph, c->pw, c->dh, c->dw, c->oh, c->ow };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        emit_const(e, names[i], values[i]);
    emit_const(e, "MULT", c->c_out / c->c_in);
}

static void emit_conv2d_consts(emitter *e)
{
    const dt_cuda_plan *p = e->plan;
    const dt_conv_shape *c = &p->task.conv;
    emit_const(e, "RCO", p->rc[0]), emit_const(e, "RCI", p->rc[1]);
    emit_const(e, "RYO", p->ry[0]), emit_const(e, "RYI", p->ry[1]);
    emit_const(e, "RXO", p->rx[0]), emit_const(e, "RXI", p->rx[1]);
    emit_const(e, "IN_H", staged_span(extent(p->y), c->sh, p->ry[1], c->dh));
    emit_const(e, "IN_W", staged_span(extent(p->x), c->sw, p->rx[1], c->dw));
    emit(e, "enum { IN_TILE = RCI * IN_H * IN_W, W_TILE = BF * RCI * RYI * RXI };");
}

static void body_load_input(emitter *e, const void *ctx)
{
    bool guarded = open_copy_guard(e, ctx);
    emit(e, "const int c = i / (IN_H * IN_W), r = (i / IN_W) %% IN_H, s = i %% IN_W;");
    emit(e, "const int gy = y0 * SH + ryo * RYI * DH - PH + r;");
    emit(e, "const int gx = x0 * SW + rxo * RXI * DW - PW + s;");
    emit(e, "in_s[i] = (gy >= 0 && gy < H && gx >= 0 && gx < W)");
    emit(e, "    ? input[((n * CIN + rco * RCI + c) * H + gy) * W + gx] : 0.0f;");
    if (guarded)
        close_block(e);
}

static void body_load_weight(emitter *e, const void *ctx)
{
    bool guarded = open_copy_guard(e, ctx);
    emit(e, "const int f = i / (RCI * RYI * RXI), c = (i / (RYI * RXI)) %% RCI;");
    emit(e, "const int r = (i / RXI) %% RYI, s = i %% RXI;");
    emit(e, "w_s[i] = weight[(((f0 + f) * CIN + rco * RCI + c) * KH + ryo * RYI + r) * KW"
            " + rxo * RXI + s];");
    if (guarded)
        close_block(e);
}

static void body_conv_wr(emitter *e, const void *ctx)
{
    emit(e, "wr[vf * FI + fi] = w_s[((((vf * TF + tf) * FI + fi) * RCI + rc) * RYI + ry) * RXI + rx];");
}

static void body_conv_ar(emitter *e, const void *ctx)
{
    emit(e, "ar[vy * YI + yi][vx * XI + xi] = in_s[(rc * IN_H + ((vy * TY + ty) * YI + yi) * SH"
            " + ry * DH) * IN_W + ((vx * TX + tx) * XI + xi) * SW + rx * DW];");
}

static void body_conv_step(emitter *e, const void *ctx)
{
    const dt_cuda_plan *p = e->plan;
    loop f_loops[2] = { { "vf", p->f[1] }, { "fi", p->f[3] } };
    loop yx_loops[4] = { { "vy", p->y[1] }, { "yi", p->y[3] }, { "vx", p->x[1] }, { "xi", p->x[3] } };
    emit(e, "const int rc = rcc * TK + tk;");
    emit(e, "float wr[VF * FI], ar[VY * YI][VX * XI];");
    emit_nest(e, f_loops, 2, 1, body_conv_wr, NULL);
    emit_nest(e, yx_loops, 4, 1, body_conv_ar, NULL);
    emit_tile_nest(e, body_fma);
}

static void emit_conv2d_reduction(emitter *e)
{
    const dt_cuda_plan *p = e->plan;
    const dt_conv_shape *c = &p->task.conv;
    long in_tile = (long)p->rc[1] * staged_span(extent(p->y), c->sh, p->ry[1], c->dh) *
                   staged_span(extent(p->x), c->sw, p->rx[1], c->dw);
    long w_tile = (long)extent(p->f) * p->rc[1] * p->ry[1] * p->rx[1];
    loop inner[3] = { { "rcc", p->rc[1] / reduction_threads(p) }, { "ry", p->ry[1] },
                      { "rx", p->rx[1] } };
    open_block(e, "for (int rco = 0; rco < RCO; ++rco) ");
    open_block(e, "for (int ryo = 0; ryo < RYO; ++ryo) ");
    open_block(e, "for (int rxo = 0; rxo < RXO; ++rxo) ");
    emit(e, "__syncthreads();");
    emit_coop_copy(e, "IN_TILE", in_tile, body_load_input);
    emit_coop_copy(e, "W_TILE", w_tile, body_load_weight);
    emit(e, "__syncthreads();");
    emit_nest(e, inner, 3, dt_cuda_plan_accumulators(p), body_conv_step, NULL);
    close_block(e), close_block(e), close_block(e);
}

static void emit_conv2d(emitter *e)
{
    emit_conv_consts(e);
    emit_conv2d_consts(e);
    emit_kernel_open(e);
    emit(e, "extern __shared__ float dt_smem[];");
    emit(e, "float *in_s = dt_smem;           // [RCI][IN_H][IN_W]");
    emit(e, "float *w_s = dt_smem + IN_TILE;  // [BF][RCI][RYI][RXI]");
    emit_acc_decl(e);
    emit_conv2d_reduction(e);
    emit_reduce_and_store(e, body_store_conv);
    close_block(e);
}

/* ---- depthwise_conv2d ------------------------------------------------------------ */

static void body_dw_wr(emitter *e, const void *ctx)
{
    emit(e, "wr[vf * FI + fi] = weight[((f0 + (vf * TF + tf) * FI + fi) * KH + r) * KW + s];");
}

static void body_dw_fma(emitter *e, const void *ctx)
{
    emit(e, "const int c = f0 + (vf * TF + tf) * FI + fi;");
    emit(e, "const int gy = (y0 + (vy * TY + ty) * YI + yi) * SH + r * DH - PH;");
    emit(e, "const int gx = (x0 + (vx * TX + tx) * XI + xi) * SW + s * DW - PW;");
    emit(e, "const float v = (gy >= 0 && gy < H && gx >= 0 && gx < W)");
    emit(e, "    ? input[((n * CIN + c / MULT) * H + gy) * W + gx] : 0.0f;");
    emit(e, "acc[vf * FI + fi][vy * YI + yi][vx * XI + xi] = fmaf(v, wr[vf * FI + fi], "
            "acc[vf * FI + fi][vy * YI + yi][vx * XI + xi]);");
}

static void body_dw_tap(emitter *e, const void *ctx)
{
    const dt_cuda_plan *p = e->plan;
    loop f_loops[2] = { { "vf", p->f[1] }, { "fi", p->f[3] } };
    emit(e, "float wr[VF * FI];");
    emit_nest(e, f_loops, 2, 1, body_dw_wr, NULL);
    emit_tile_nest(e, body_dw_fma);
}

static void emit_depthwise(emitter *e)
{
    const dt_conv_shape *c = &e->plan->task.conv;
    loop taps[2] = { { "r", c->kh }, { "s", c->kw } };
    emit_conv_consts(e);
    emit_kernel_open(e);
    emit_acc_decl(e);
    emit_nest(e, taps, 2, dt_cuda_plan_accumulators(e->plan), body_dw_tap, NULL);
    emit_tile_nest(e, body_store_conv);
    close_block(e);
}

/* ---- dense and batch_matmul ----------------------------------------------------- */

static void emit_mm_consts(emitter *e)
{
    const dt_cuda_plan *p = e->plan;
    const dt_mm_shape *m = &p->task.mm;
    emit_const(e, "BATCH", m->b), emit_const(e, "M", m->m);
    emit_const(e, "N", m->n), emit_const(e, "K", m->k);
    emit_const(e, "KO", p->k[0]), emit_const(e, "KI", p->k[1]);
    emit(e, "enum { A_TILE = BY * KI, B_TILE = BX * KI };");
}

static void body_load_a(emitter *e, const void *ctx)
{
    bool guarded = open_copy_guard(e, ctx);
    emit(e, "const int m = i / KI, k = i %% KI;");
    emit(e, "a_s[k * BY + m] = input[(b * M + y0 + m) * K + ko * KI + k];");
    if (guarded)
        close_block(e);
}

static void body_load_b(emitter *e, const void *ctx)
{
    bool guarded = open_copy_guard(e, ctx);
    emit(e, "const int j = i / KI, k = i %% KI;");
    emit(e, "b_s[k * BX + j] = weight[(b * N + x0 + j) * K + ko * KI + k];");
    if (guarded)
        close_block(e);
}

static void body_mm_ar(emitter *e, const void *ctx)
{
    emit(e, "ar[vy * YI + yi] = a_s[(kk * TK + tk) * BY + (vy * TY + ty) * YI + yi];");
}

static void body_mm_br(emitter *e, const void *ctx)
{
    emit(e, "br[vx * XI + xi] = b_s[(kk * TK + tk) * BX + (vx * TX + tx) * XI + xi];");
}

static void body_mm_fma(emitter *e, const void *ctx)
{
    emit(e, "acc[0][vy * YI + yi][vx * XI + xi] = fmaf(ar[vy * YI + yi], br[vx * XI + xi], "
            "acc[0][vy * YI + yi][vx * XI + xi]);");
}

static void body_mm_step(emitter *e, const void *ctx)
{
    const dt_cuda_plan *p = e->plan;
    loop y_loops[2] = { { "vy", p->y[1] }, { "yi", p->y[3] } };
    loop x_loops[2] = { { "vx", p->x[1] }, { "xi", p->x[3] } };
    loop all[4] = { y_loops[0], y_loops[1], x_loops[0], x_loops[1] };
    emit(e, "float ar[VY * YI], br[VX * XI];");
    emit_nest(e, y_loops, 2, 1, body_mm_ar, NULL);
    emit_nest(e, x_loops, 2, 1, body_mm_br, NULL);
    emit_nest(e, all, 4, 1, body_mm_fma, NULL);
}

static void body_store_mm(emitter *e, const void *ctx)
{
    emit(e, "output[(b * M + y0 + (vy * TY + ty) * YI + yi) * N + x0 + (vx * TX + tx) * XI + xi]"
            " = acc[vf * FI + fi][vy * YI + yi][vx * XI + xi];");
}

static void emit_matmul(emitter *e)
{
    const dt_cuda_plan *p = e->plan;
    loop k_loop = { "kk", p->k[1] / reduction_threads(p) };
    emit_mm_consts(e);
    emit_kernel_open(e);
    emit(e, "const int b = n;");
    emit(e, "extern __shared__ float dt_smem[];");
    emit(e, "float *a_s = dt_smem;           // [KI][BY]");
    emit(e, "float *b_s = dt_smem + A_TILE;  // [KI][BX]");
    emit_acc_decl(e);
    open_block(e, "for (int ko = 0; ko < KO; ++ko) ");
    emit(e, "__syncthreads();");
    emit_coop_copy(e, "A_TILE", (long)extent(p->y) * p->k[1], body_load_a);
    emit_coop_copy(e, "B_TILE", (long)extent(p->x) * p->k[1], body_load_b);
    emit(e, "__syncthreads();");
    emit_nest(e, &k_loop, 1, dt_cuda_plan_accumulators(p), body_mm_step, NULL);
    close_block(e);
    emit_reduce_and_store(e, body_store_mm);
    close_block(e);
}

/* ---- entry ------------------------------------------------------------------------ */

int dt_cuda_codegen(const dt_cuda_plan *plan, char **source, dt_error *err)
{
    *source = NULL;
    int rc = cuda_plan_check_structure(plan, err);
    if (rc)
        return rc;
    emitter e = { .plan = plan };
    emit_header(&e);
    if (plan->task.kind == DT_OP_CONV2D)
        emit_conv2d(&e);
    else if (plan->task.kind == DT_OP_DEPTHWISE_CONV2D)
        emit_depthwise(&e);
    else
        emit_matmul(&e);
    if (e.text.failed) {
        dt_buf_free(&e.text);
        return dt_error_set(err, DT_ENOMEM, "out of memory writing the CUDA source of %s",
                            plan->task.name);
    }
    *source = e.text.data;
    return 0;
}
