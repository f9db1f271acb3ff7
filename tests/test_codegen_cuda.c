/* test_codegen_cuda.c — CUDA code generation without a GPU.
 *
 * - launch geometry and shared-memory sizes follow from the knobs;
 * - configs over the thread, shared-memory or register-tile limits are
 *   invalid in the space and rejected by the plan check;
 * - the unroll knobs change the source as cuda_codegen.h says;
 * - the generated kernels compute the task exactly: each is compiled as C++
 *   against a small CPU emulation of the CUDA execution model (one fibre per
 *   thread, __syncthreads as a switch to the block scheduler), under
 *   AddressSanitizer with exact-size buffers, and its output is compared
 *   with dt_task_reference (skipped without a C++ compiler);
 * - NVRTC compiles the source of every op kind for sm_80 and sm_90, also
 *   from two threads at once (skipped when libnvrtc cannot be loaded).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <gsl/gsl_rng.h>

#include "cuda_codegen.h"
#include "cuda_api.h"
#include "cuda_runner.h"
#include "dtune/measure.h"
#include "dtune/space.h"
#include "dtune/target.h"
#include "support/run_cmd.h"

/* ---- tasks -------------------------------------------------------------------- */

static dt_task conv_task(dt_op_kind kind, int n, int c_in, int h, int w, int c_out, int kh, int kw,
                         int sh, int sw, int ph, int pw, int dh, int dw)
{
    dt_task t = { .kind = kind, .count = 1,
                  .conv = { .n = n, .c_in = c_in, .h = h, .w = w, .c_out = c_out, .kh = kh,
                            .kw = kw, .sh = sh, .sw = sw, .ph = ph, .pw = pw, .dh = dh, .dw = dw } };
    snprintf(t.name, sizeof t.name, "%s_%dx%d", dt_op_kind_name(kind), c_in, c_out);
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    return t;
}

static dt_task mm_task(dt_op_kind kind, int b, int m, int n, int k)
{
    dt_task t = { .kind = kind, .count = 1, .mm = { .b = b, .m = m, .n = n, .k = k } };
    snprintf(t.name, sizeof t.name, "%s_%dx%dx%d", dt_op_kind_name(kind), m, n, k);
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    return t;
}

static dt_task resnet_3x3(void)
{
    return conv_task(DT_OP_CONV2D, 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1);
}

/* Sets knob `name` of p to the option whose row is `parts` (split) or value. */
static void set_knob(const dt_space *s, dt_point *p, const char *name, const int *parts)
{
    int i = dt_space_knob(s, name);
    assert_true(i >= 0);
    const dt_knob *k = &s->knobs[i];
    for (int o = 0; o < k->noptions; o++) {
        if (memcmp(k->options + (size_t)o * k->parts, parts, (size_t)k->parts * sizeof(int)) == 0) {
            p->opt[i] = (int16_t)o;
            return;
        }
    }
    fail_msg("knob %s has no such option", name);
}

/* ---- launch geometry ------------------------------------------------------------- */

static int part(const dt_space *s, const dt_point *p, const char *knob, int i)
{
    return dt_space_get(s, p, knob, i, 1);
}

static int inner3(const dt_space *s, const dt_point *p, const char *knob)
{
    return part(s, p, knob, 1) * part(s, p, knob, 2) * part(s, p, knob, 3);
}

/* Shared bytes as the knobs imply them, written independently of codegen. */
static long expected_shared(const dt_space *s, const dt_point *p)
{
    const dt_task *t = &s->task;
    if (t->kind == DT_OP_DEPTHWISE_CONV2D)
        return 0;
    if (t->kind != DT_OP_CONV2D) {
        long staged = 4L * part(s, p, "tile_k", 1) * (inner3(s, p, "tile_y") + inner3(s, p, "tile_x"));
        /* with tile_kt > 1 the partial sums, one per accumulator and thread */
        long kt = part(s, p, "tile_kt", 0);
        long acc = part(s, p, "tile_y", 1) * part(s, p, "tile_y", 3) * part(s, p, "tile_x", 1) *
                   part(s, p, "tile_x", 3);
        long partials = kt > 1 ? 4 * acc * part(s, p, "tile_y", 2) * part(s, p, "tile_x", 2) * kt : 0;
        return staged > partials ? staged : partials;
    }
    const dt_conv_shape *c = &t->conv;
    long rci = part(s, p, "tile_rc", 1), ryi = part(s, p, "tile_ry", 1), rxi = part(s, p, "tile_rx", 1);
    long rows = (inner3(s, p, "tile_y") - 1) * c->sh + (ryi - 1) * c->dh + 1;
    long cols = (inner3(s, p, "tile_x") - 1) * c->sw + (rxi - 1) * c->dw + 1;
    long staged = 4 * (rci * rows * cols + inner3(s, p, "tile_f") * rci * ryi * rxi);
    long kt = part(s, p, "tile_kt", 0);
    long partials = kt > 1 ? 4 * inner3(s, p, "tile_f") * inner3(s, p, "tile_y") *
                                 inner3(s, p, "tile_x") * kt : 0;
    return staged > partials ? staged : partials;
}

static void check_launch(const dt_space *s, const dt_point *p)
{
    dt_cuda_plan plan;
    dt_cuda_launch l;
    dt_cuda_plan_from_point(s, p, &plan);
    dt_cuda_plan_launch(&plan, &l);
    bool conv = s->task.kind == DT_OP_CONV2D || s->task.kind == DT_OP_DEPTHWISE_CONV2D;
    unsigned batch = (unsigned)(conv ? s->task.conv.n : s->task.mm.b);
    assert_int_equal(l.grid[0], part(s, p, "tile_x", 0));
    assert_int_equal(l.grid[1], part(s, p, "tile_y", 0));
    assert_int_equal(l.grid[2], batch * (unsigned)(conv ? part(s, p, "tile_f", 0) : 1));
    unsigned threads = (unsigned)(part(s, p, "tile_x", 2) * part(s, p, "tile_y", 2) *
                                  (conv ? part(s, p, "tile_f", 2) : 1) * part(s, p, "tile_kt", 0));
    assert_int_equal(l.block[0] * l.block[1] * l.block[2], threads);
    assert_true(threads <= 1024);
    assert_int_equal(l.shared_bytes, expected_shared(s, p));
    assert_true(l.shared_bytes <= 48 * 1024);
    assert_true(dt_cuda_plan_accumulators(&plan) <= DT_CUDA_MAX_ACCUMULATORS);
    assert_int_equal(dt_cuda_plan_check(&plan, NULL, NULL), 0);
}

static void test_launch_follows_knobs(void **state)
{
    (void)state;
    dt_task tasks[] = {
        resnet_3x3(),
        conv_task(DT_OP_CONV2D, 2, 3, 30, 30, 16, 7, 7, 2, 2, 3, 3, 1, 1),
        conv_task(DT_OP_DEPTHWISE_CONV2D, 1, 32, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, 1),
        mm_task(DT_OP_DENSE, 1, 16, 1000, 512),
        mm_task(DT_OP_BATCH_MATMUL, 12, 128, 64, 128),
    };
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20240607);
    for (size_t t = 0; t < sizeof tasks / sizeof tasks[0]; t++) {
        dt_space s;
        assert_int_equal(dt_target_space_init(&s, &tasks[t], DT_TARGET_CUDA, NULL), 0);
        for (int i = 0; i < 300; i++) {
            dt_point p;
            dt_space_random(&s, rng, &p);
            assert_true(dt_space_valid(&s, &p));
            check_launch(&s, &p);
        }
        dt_space_free(&s);
    }
    gsl_rng_free(rng);
}

/* ---- rejection of configs that cannot launch ------------------------------------- */

static void test_invalid_configs_rejected(void **state)
{
    (void)state;
    dt_task t = resnet_3x3();
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    dt_point p = { 0 };
    dt_cuda_plan plan;
    dt_error err;
    /* 64 x 28 threads = 1792 > 1024 */
    set_knob(&s, &p, "tile_f", (int[]){ 1, 1, 64, 1 });
    set_knob(&s, &p, "tile_y", (int[]){ 2, 1, 28, 1 });
    set_knob(&s, &p, "tile_x", (int[]){ 56, 1, 1, 1 });
    assert_false(dt_space_valid(&s, &p));
    dt_cuda_plan_from_point(&s, &p, &plan);
    assert_int_equal(dt_cuda_plan_check(&plan, NULL, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "1792 threads"));
    /* shared: 64 ci x 58 x 58 input tile = 861 KB */
    set_knob(&s, &p, "tile_f", (int[]){ 64, 1, 1, 1 });
    set_knob(&s, &p, "tile_y", (int[]){ 1, 1, 56, 1 });
    set_knob(&s, &p, "tile_rc", (int[]){ 1, 64 });
    set_knob(&s, &p, "tile_ry", (int[]){ 1, 3 });
    set_knob(&s, &p, "tile_x", (int[]){ 4, 1, 14, 1 });
    assert_false(dt_space_valid(&s, &p));
    dt_cuda_plan_from_point(&s, &p, &plan);
    assert_int_equal(dt_cuda_plan_check(&plan, NULL, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "shared memory"));
    /* the same plan passes under a device limit that allows it */
    dt_cuda_limits big;
    dt_cuda_plan_limits_default(&big);
    big.max_threads = 1024 * 1024;
    big.max_shared_bytes = 1 << 20;
    assert_int_equal(dt_cuda_plan_check(&plan, &big, NULL), 0);
    /* register tile: 64 x 14 x 2 accumulators per thread */
    set_knob(&s, &p, "tile_f", (int[]){ 1, 1, 1, 64 });
    set_knob(&s, &p, "tile_y", (int[]){ 4, 1, 1, 14 });
    set_knob(&s, &p, "tile_x", (int[]){ 28, 1, 1, 2 });
    set_knob(&s, &p, "tile_rc", (int[]){ 64, 1 });
    assert_false(dt_space_valid(&s, &p));
    dt_cuda_plan_from_point(&s, &p, &plan);
    assert_int_equal(dt_cuda_plan_check(&plan, NULL, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "accumulators"));
    /* a plan whose splits do not factor the axis is refused by codegen */
    plan.f[3] = 3;
    char *src = (char *)"unchanged";
    assert_int_equal(dt_cuda_codegen(&plan, &src, &err), DT_EINVAL);
    assert_null(src);
    assert_non_null(strstr(err.msg, "tile_f"));
    dt_space_free(&s);
}

static void test_dense_grid_limits(void **state)
{
    (void)state;
    /* batch_matmul with more batches than grid z allows is invalid everywhere */
    dt_task t = mm_task(DT_OP_BATCH_MATMUL, 70000, 2, 2, 2);
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    dt_point p = { 0 };
    assert_false(dt_space_valid(&s, &p));
    dt_space_free(&s);
}

/* tile_kt threads share a reduction only where they divide the staged K
 * (channels); they multiply the block's threads, and the source adds partial
 * sums. */
static void test_reduction_threads(void **state)
{
    (void)state;
    dt_task t = mm_task(DT_OP_DENSE, 1, 8, 1000, 512);
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    dt_point p = { 0 };
    set_knob(&s, &p, "tile_y", (int[]){ 1, 1, 8, 1 });
    set_knob(&s, &p, "tile_x", (int[]){ 125, 1, 8, 1 });
    set_knob(&s, &p, "tile_k", (int[]){ 64, 8 });
    set_knob(&s, &p, "tile_kt", (int[]){ 16 });
    assert_false(dt_space_valid(&s, &p));
    dt_cuda_plan plan;
    dt_error err;
    dt_cuda_plan_from_point(&s, &p, &plan);
    assert_int_equal(dt_cuda_plan_check(&plan, NULL, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "tile_kt 16 does not divide the staged K 8"));
    set_knob(&s, &p, "tile_kt", (int[]){ 8 });
    assert_true(dt_space_valid(&s, &p));
    dt_cuda_plan_from_point(&s, &p, &plan);
    dt_cuda_launch l;
    dt_cuda_plan_launch(&plan, &l);
    assert_int_equal(l.block[0], 512);     /* 8 x 8 outputs x 8 reduction threads */
    assert_int_equal(l.shared_bytes, 4 * 512);  /* partials [1][512] > staging 8 x (8 + 8) */
    char *src = NULL;
    assert_int_equal(dt_cuda_codegen(&plan, &src, NULL), 0);
    assert_non_null(strstr(src, "enum { TK = 8 };"));
    assert_non_null(strstr(src, "if (tk == 0)"));
    free(src);
    /* tile_kt 1 writes no partial sums */
    set_knob(&s, &p, "tile_kt", (int[]){ 1 });
    dt_cuda_plan_from_point(&s, &p, &plan);
    assert_int_equal(dt_cuda_codegen(&plan, &src, NULL), 0);
    assert_null(strstr(src, "part_s"));
    free(src);
    dt_space_free(&s);
    /* a convolution splits its staged input channels */
    dt_task conv = resnet_3x3();
    assert_int_equal(dt_target_space_init(&s, &conv, DT_TARGET_CUDA, NULL), 0);
    p = (dt_point){ 0 };
    set_knob(&s, &p, "tile_f", (int[]){ 8, 1, 8, 1 });
    set_knob(&s, &p, "tile_y", (int[]){ 56, 1, 1, 1 });
    set_knob(&s, &p, "tile_x", (int[]){ 4, 1, 14, 1 });
    set_knob(&s, &p, "tile_rc", (int[]){ 16, 4 });
    set_knob(&s, &p, "tile_kt", (int[]){ 8 });
    assert_false(dt_space_valid(&s, &p));
    dt_cuda_plan_from_point(&s, &p, &plan);
    assert_int_equal(dt_cuda_plan_check(&plan, NULL, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "tile_kt 8 does not divide the staged channels 4"));
    set_knob(&s, &p, "tile_kt", (int[]){ 4 });
    assert_true(dt_space_valid(&s, &p));
    dt_cuda_plan_from_point(&s, &p, &plan);
    dt_cuda_plan_launch(&plan, &l);
    assert_int_equal(l.block[0], 8 * 14 * 4);
    assert_int_equal(dt_cuda_codegen(&plan, &src, NULL), 0);
    assert_non_null(strstr(src, "const int rc = rcc * TK + tk;"));
    assert_non_null(strstr(src, "if (tk == 0)"));
    free(src);
    dt_space_free(&s);
}

/* ---- unroll knobs ------------------------------------------------------------------ */

static char *source_with_unroll(int max_step, int explicit_unroll)
{
    dt_task t = resnet_3x3();
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    dt_point p = { 0 };
    set_knob(&s, &p, "tile_f", (int[]){ 4, 2, 8, 1 });
    set_knob(&s, &p, "tile_y", (int[]){ 14, 1, 2, 2 });
    set_knob(&s, &p, "tile_x", (int[]){ 2, 1, 14, 2 });
    set_knob(&s, &p, "tile_rc", (int[]){ 16, 4 });
    set_knob(&s, &p, "tile_ry", (int[]){ 1, 3 });
    set_knob(&s, &p, "tile_rx", (int[]){ 3, 1 });
    set_knob(&s, &p, "auto_unroll_max_step", &max_step);
    set_knob(&s, &p, "unroll_explicit", &explicit_unroll);
    assert_true(dt_space_valid(&s, &p));
    dt_cuda_plan plan;
    dt_cuda_plan_from_point(&s, &p, &plan);
    char *src = NULL;
    assert_int_equal(dt_cuda_codegen(&plan, &src, NULL), 0);
    dt_space_free(&s);
    return src;
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_unroll_knobs_shape_source(void **state)
{
    (void)state;
    char *plain = source_with_unroll(0, 1), *pragma = source_with_unroll(512, 0);
    char *unrolled = source_with_unroll(512, 1), *deeper = source_with_unroll(1500, 1);
    assert_non_null(strstr(plain, "extern \"C\" __global__"));
    assert_non_null(strstr(plain, DT_CUDA_KERNEL_NAME "("));
    assert_int_equal(count(plain, "#pragma unroll"), 0);
    assert_int_equal(count(plain, "const int fi = 1;"), 0);
    assert_true(count(pragma, "#pragma unroll") >= 4);
    assert_int_equal(count(pragma, "const int xi = 1;"), 0);
    assert_int_equal(count(unrolled, "#pragma unroll"), 0);
    assert_true(count(unrolled, "const int xi = 1;") > 0);
    /* 16 accumulators: 512 steps unroll rc (4, its loop variable rcc) x ry (3) around them */
    assert_int_equal(count(unrolled, "const int rcc = 3;"), 1);
    assert_int_equal(count(unrolled, "const int ry = 2;"), 4);
    assert_true(strlen(deeper) >= strlen(unrolled));
    assert_true(strlen(unrolled) > 4 * strlen(plain));
    free(plain), free(pragma), free(unrolled), free(deeper);
}

/* ---- CPU emulation of the generated kernels ---------------------------------------- */

/* C++ prelude: CUDA's execution model on fibres (ucontext). Every thread of a
 * block is a fibre; __syncthreads returns to the scheduler, which runs each
 * fibre in turn up to its next barrier. Shared memory is a malloc of the
 * exact dynamic size, filled with NaN so unwritten reads poison the output. */
static const char emulator_prelude[] =
    "#include <cmath>\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n"
    "#include <ucontext.h>\n"
    "struct dt_uint3 { unsigned x, y, z; };\n"
    "static dt_uint3 threadIdx, blockIdx;\n"
    "static float *dt_emu_shared;\n"
    "static ucontext_t emu_sched, *emu_fibres;\n"
    "static int emu_current;\n"
    "static bool *emu_done;\n"
    "#define __global__\n#define __launch_bounds__(n)\n"
    "static void __syncthreads() { swapcontext(&emu_fibres[emu_current], &emu_sched); }\n"
    "typedef void (*emu_kernel_fn)(const float *, const float *, float *);\n"
    "static emu_kernel_fn emu_kernel; static const float *emu_in, *emu_w; static float *emu_out;\n"
    "static void emu_entry() { emu_kernel(emu_in, emu_w, emu_out); emu_done[emu_current] = true; }\n"
    "static void emu_block(unsigned nt, char *stacks) {\n"
    "  for (unsigned t = 0; t < nt; t++) {\n"
    "    emu_done[t] = false; getcontext(&emu_fibres[t]);\n"
    "    emu_fibres[t].uc_stack.ss_sp = stacks + (size_t)t * 262144;\n"
    "    emu_fibres[t].uc_stack.ss_size = 262144; emu_fibres[t].uc_link = &emu_sched;\n"
    "    makecontext(&emu_fibres[t], emu_entry, 0);\n  }\n"
    "  for (unsigned left = nt; left > 0;)\n"
    "    for (unsigned t = 0; t < nt; t++) {\n"
    "      if (emu_done[t]) continue;\n"
    "      emu_current = (int)t; threadIdx.x = t; threadIdx.y = threadIdx.z = 0;\n"
    "      swapcontext(&emu_sched, &emu_fibres[t]);\n"
    "      if (emu_done[t]) left--;\n    }\n}\n"
    "static float *emu_read(const char *path, size_t n) {\n"
    "  float *v = (float *)malloc(n * sizeof(float)); FILE *f = fopen(path, \"rb\");\n"
    "  if (!v || !f || fread(v, sizeof(float), n, f) != n) { perror(path); exit(2); }\n"
    "  fclose(f); return v;\n}\n"
    "static void emu_run(emu_kernel_fn k, const unsigned *g, unsigned nt, unsigned shared,\n"
    "                    size_t n_in, size_t n_w, size_t n_out, const char *in_path,\n"
    "                    const char *w_path, const char *out_path) {\n"
    "  float *in = emu_read(in_path, n_in), *w = emu_read(w_path, n_w);\n"
    "  float *out = (float *)malloc(n_out * sizeof(float));\n"
    "  for (size_t i = 0; i < n_out; i++) out[i] = NAN;\n"
    "  size_t sw = shared / 4 ? shared / 4 : 1;\n"
    "  dt_emu_shared = (float *)malloc(sw * sizeof(float));\n"
    "  emu_fibres = new ucontext_t[nt]; emu_done = new bool[nt];\n"
    "  char *stacks = (char *)malloc((size_t)nt * 262144);\n"
    "  emu_kernel = k; emu_in = in; emu_w = w; emu_out = out;\n"
    "  for (unsigned z = 0; z < g[2]; z++) for (unsigned y = 0; y < g[1]; y++)\n"
    "    for (unsigned x = 0; x < g[0]; x++) {\n"
    "      for (size_t i = 0; i < sw; i++) dt_emu_shared[i] = NAN;\n"
    "      blockIdx.x = x; blockIdx.y = y; blockIdx.z = z; emu_block(nt, stacks);\n    }\n"
    "  FILE *f = fopen(out_path, \"wb\");\n"
    "  if (!f || fwrite(out, sizeof(float), n_out, f) != n_out) { perror(out_path); exit(2); }\n"
    "  fclose(f); free(stacks); delete[] emu_fibres; delete[] emu_done;\n"
    "  free(dt_emu_shared); free(in); free(w); free(out);\n}\n";

typedef struct emu_case {
    dt_task task;
    dt_cuda_plan plan;
    dt_cuda_launch launch;
    char *source;
} emu_case;

/* Writes source with `extern __shared__ float dt_smem[];` bound to the
 * emulator's buffer and the kernel renamed to dt_kernel_<index>. */
static void write_kernel(FILE *f, const emu_case *c, int index)
{
    const char *decl = "extern __shared__ float dt_smem[];";
    fprintf(f, "namespace k%d {\n#define dt_kernel dt_kernel_%d\n", index, index);
    const char *at = strstr(c->source, decl);
    if (at) {
        fwrite(c->source, 1, (size_t)(at - c->source), f);
        fprintf(f, "float *dt_smem = dt_emu_shared;%s", at + strlen(decl));
    } else {
        fputs(c->source, f);
    }
    fprintf(f, "#undef dt_kernel\n}\n");
}

static void write_main(FILE *f, const emu_case *cases, int n, const char *dir)
{
    fprintf(f, "int main() {\n");
    for (int i = 0; i < n; i++) {
        const dt_cuda_launch *l = &cases[i].launch;
        size_t in, w, out;
        dt_task_tensor_sizes(&cases[i].task, &in, &w, &out);
        fprintf(f, "  { const unsigned g[3] = { %uu, %uu, %uu };\n", l->grid[0], l->grid[1], l->grid[2]);
        fprintf(f, "    emu_run(k%d::dt_kernel_%d, g, %uu, %uu, %zu, %zu, %zu, \"%s/%d.in\", "
                   "\"%s/%d.w\", \"%s/%d.out\"); }\n",
                i, i, l->block[0], l->shared_bytes, in, w, out, dir, i, dir, i, dir, i);
    }
    fprintf(f, "  return 0;\n}\n");
}

static void write_floats(const char *path, const float *v, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(v, sizeof *v, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void write_inputs(const emu_case *c, int index, const char *dir)
{
    size_t in, w, out;
    dt_task_tensor_sizes(&c->task, &in, &w, &out);
    float *x = malloc(in * sizeof *x), *wt = malloc(w * sizeof *wt);
    dt_cuda_runner_fill_inputs(&c->task, 7, x, wt);
    char path[1100];
    snprintf(path, sizeof path, "%s/%d.in", dir, index);
    write_floats(path, x, in);
    snprintf(path, sizeof path, "%s/%d.w", dir, index);
    write_floats(path, wt, w);
    free(x), free(wt);
}

/* Output of case index against the reference; returns the failing element or -1. */
static long compare_output(const emu_case *c, int index, const char *dir)
{
    size_t in, w, out;
    dt_task_tensor_sizes(&c->task, &in, &w, &out);
    float *x = malloc(in * sizeof *x), *wt = malloc(w * sizeof *wt);
    float *ref = malloc(out * sizeof *ref);
    dt_cuda_runner_fill_inputs(&c->task, 7, x, wt);
    dt_task_reference(&c->task, x, wt, ref);
    char path[1100];
    snprintf(path, sizeof path, "%s/%d.out", dir, index);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    float *got = malloc(out * sizeof *got);
    assert_int_equal(fread(got, sizeof *got, out, f), out);
    fclose(f);
    long bad = dt_measure_check_output(got, ref, out, 1e-4);
    if (bad >= 0)
        print_error("case %d (%s): output[%ld] = %g, reference %g\n", index, c->task.name, bad,
                    (double)got[bad], (double)ref[bad]);
    free(x), free(wt), free(ref), free(got);
    return bad;
}

/* Valid random configs of task, the unroll knobs cycled so every setting
 * occurs, and tile_kt cycled too where the reduction it splits (K, or the
 * input channels) is a multiple of 32: some staged part then divides by
 * each setting. */
static int add_cases(emu_case *cases, int n, const dt_task *task, int per_task, gsl_rng *rng)
{
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, task, DT_TARGET_CUDA, NULL), 0);
    int step = dt_space_knob(&s, "auto_unroll_max_step"), expl = dt_space_knob(&s, "unroll_explicit");
    int kt = dt_space_knob(&s, "tile_kt");
    bool conv = task->kind == DT_OP_CONV2D || task->kind == DT_OP_DEPTHWISE_CONV2D;
    bool cycle_kt = kt >= 0 && (conv ? task->conv.c_in : task->mm.k) % 32 == 0;
    for (int i = 0; i < per_task; i++) {
        dt_point p;
        do {
            dt_space_random(&s, rng, &p);
            p.opt[step] = (int16_t)((n + i) % s.knobs[step].noptions);
            p.opt[expl] = (int16_t)(((n + i) / 3) % 2);
            if (cycle_kt)
                p.opt[kt] = (int16_t)(1 + i % (s.knobs[kt].noptions - 1));
        } while (!dt_space_valid(&s, &p));
        emu_case *c = &cases[n++];
        c->task = *task;
        dt_cuda_plan_from_point(&s, &p, &c->plan);
        dt_cuda_plan_launch(&c->plan, &c->launch);
        assert_int_equal(dt_cuda_codegen(&c->plan, &c->source, NULL), 0);
    }
    dt_space_free(&s);
    return n;
}

static bool have_program(const char *name)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
    return system(cmd) == 0;
}

static void build_and_run_emulator(emu_case *cases, int n, const char *dir)
{
    char path[1100], cmd[8192];
    snprintf(path, sizeof path, "%s/kernels.cc", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(emulator_prelude, f);
    for (int i = 0; i < n; i++) {
        write_kernel(f, &cases[i], i);
        write_inputs(&cases[i], i, dir);
    }
    write_main(f, cases, n, dir);
    assert_int_equal(fclose(f), 0);
    /* AddressSanitizer when the compiler has it, plain otherwise. */
    snprintf(cmd, sizeof cmd,
             "{ c++ -std=c++17 -O0 -w -fsanitize=address -o %s/emu %s > %s/cc.log 2>&1 || "
             "c++ -std=c++17 -O0 -w -o %s/emu %s >> %s/cc.log 2>&1; } && "
             "ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=0 %s/emu > %s/run.log 2>&1",
             dir, path, dir, dir, path, dir, dir, dir);
    int status = system(cmd);
    if (status != 0) {
        snprintf(cmd, sizeof cmd, "tail -n 30 %s/cc.log %s/run.log >&2", dir, dir);
        assert_int_equal(system(cmd), 0);
    }
    assert_int_equal(status, 0);
}

static void test_kernels_match_reference_emulated(void **state)
{
    (void)state;
    if (!have_program("c++")) {
        printf("test_codegen_cuda: no C++ compiler for the CPU emulation; skipping\n");
        skip();
    }
    dt_task tasks[] = {
        conv_task(DT_OP_CONV2D, 1, 6, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1),
        conv_task(DT_OP_CONV2D, 2, 4, 11, 11, 6, 3, 3, 2, 2, 1, 1, 1, 1),
        conv_task(DT_OP_CONV2D, 1, 5, 6, 7, 4, 3, 2, 1, 2, 2, 1, 2, 1),
        conv_task(DT_OP_DEPTHWISE_CONV2D, 1, 4, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1),
        conv_task(DT_OP_DEPTHWISE_CONV2D, 2, 6, 9, 9, 6, 3, 3, 2, 2, 0, 0, 1, 1),
        mm_task(DT_OP_DENSE, 1, 4, 12, 20),
        mm_task(DT_OP_BATCH_MATMUL, 3, 4, 6, 10),
        conv_task(DT_OP_CONV2D, 1, 32, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1),   /* tile_kt 2 ... 32 */
        mm_task(DT_OP_DENSE, 1, 1, 24, 64),       /* tile_kt 2 ... 32: partial sums */
        mm_task(DT_OP_BATCH_MATMUL, 2, 3, 4, 32),
    };
    enum { PER_TASK = 5, NTASKS = sizeof tasks / sizeof tasks[0] };
    emu_case cases[NTASKS * PER_TASK];
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 31337);
    int n = 0;
    for (int t = 0; t < NTASKS; t++)
        n = add_cases(cases, n, &tasks[t], PER_TASK, rng);
    char dir[512];
    dt_test_tmpdir(dir, sizeof dir);
    build_and_run_emulator(cases, n, dir);
    int failures = 0;
    for (int i = 0; i < n; i++) {
        char desc[256];
        dt_cuda_plan_str(&cases[i].plan, desc, sizeof desc);
        if (compare_output(&cases[i], i, dir) >= 0) {
            print_error("  plan: %s\n", desc);
            failures++;
        }
        free(cases[i].source);
    }
    gsl_rng_free(rng);
    assert_int_equal(failures, 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);   /* kept for inspection when a case fails */
    assert_int_equal(system(cmd), 0);
}

/* ---- NVRTC -------------------------------------------------------------------------- */

static const dt_nvrtc *nvrtc_or_skip(void)
{
    const dt_nvrtc *nv;
    dt_error err;
    if (dt_cuda_api_nvrtc_load(&nv, &err) != 0) {
        printf("test_codegen_cuda: %s; skipping\n", err.msg);
        skip();
    }
    return nv;
}

/* Compiles `configs` random valid configs of task; unroll >= 0 forces the
 * auto_unroll_max_step option (0 = plain loops, which NVRTC compiles fastest). */
static void compile_random(const dt_nvrtc *nv, const dt_task *task, int configs, int arch,
                           int unroll, uint64_t seed)
{
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, task, DT_TARGET_CUDA, NULL), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    for (int i = 0; i < configs; i++) {
        dt_point p;
        do {
            dt_space_random(&s, rng, &p);
            if (unroll >= 0)
                p.opt[dt_space_knob(&s, "auto_unroll_max_step")] = (int16_t)unroll;
        } while (!dt_space_valid(&s, &p));
        dt_cuda_plan plan;
        dt_cuda_plan_from_point(&s, &p, &plan);
        char *src = NULL;
        assert_int_equal(dt_cuda_codegen(&plan, &src, NULL), 0);
        dt_cuda_image image;
        dt_error err = { 0 };
        int rc = dt_cuda_api_nvrtc_compile(nv, src, task->name, arch, false, &image, &err);
        if (rc)
            print_error("%s\n", err.msg);
        assert_int_equal(rc, 0);
        assert_true(image.size > 256);
        assert_false(image.ptx);
        assert_memory_equal(image.data, "\177ELF", 4);   /* a cubin is an ELF image */
        dt_cuda_api_image_free(&image);
        free(src);
    }
    gsl_rng_free(rng);
    dt_space_free(&s);
}

static void test_nvrtc_compiles_every_kind(void **state)
{
    (void)state;
    const dt_nvrtc *nv = nvrtc_or_skip();
    dt_task conv = resnet_3x3();
    dt_task conv1 = conv_task(DT_OP_CONV2D, 1, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3, 1, 1);
    dt_task dw = conv_task(DT_OP_DEPTHWISE_CONV2D, 1, 32, 112, 112, 32, 3, 3, 1, 1, 1, 1, 1, 1);
    dt_task dense = mm_task(DT_OP_DENSE, 1, 1, 1000, 512);
    dt_task bmm = mm_task(DT_OP_BATCH_MATMUL, 12, 128, 128, 64);
    compile_random(nv, &conv, 2, 80, 0, 1);
    compile_random(nv, &conv, 1, 90, 1, 3);
    compile_random(nv, &conv1, 1, 90, 0, 2);
    compile_random(nv, &dw, 1, 80, 0, 3);
    compile_random(nv, &dense, 1, 90, 0, 4);
    compile_random(nv, &bmm, 1, 80, 0, 5);
}

static void test_nvrtc_ptx_and_arch_choice(void **state)
{
    (void)state;
    const dt_nvrtc *nv = nvrtc_or_skip();
    dt_task dense = mm_task(DT_OP_DENSE, 1, 8, 64, 32);
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &dense, DT_TARGET_CUDA, NULL), 0);
    dt_cuda_plan plan;
    dt_cuda_plan_from_point(&s, &(dt_point){ 0 }, &plan);
    char *src = NULL;
    assert_int_equal(dt_cuda_codegen(&plan, &src, NULL), 0);
    dt_cuda_image image;
    assert_int_equal(dt_cuda_api_nvrtc_compile(nv, src, "dense", 80, true, &image, NULL), 0);
    assert_true(image.ptx);
    assert_non_null(strstr(image.data, ".entry " DT_CUDA_KERNEL_NAME));
    assert_int_equal(strlen(image.data), image.size - (image.data[image.size - 1] == '\0'));
    dt_cuda_api_image_free(&image);
    free(src);
    dt_space_free(&s);
    bool ptx;
    assert_int_equal(dt_cuda_api_nvrtc_pick_arch(nv, 90, &ptx), 90);
    assert_false(ptx);
    /* a future architecture falls back to PTX of the newest known one */
    int arch = dt_cuda_api_nvrtc_pick_arch(nv, 990, &ptx);
    assert_true(arch >= 80 && arch < 990);
    assert_true(ptx);
}

static void test_nvrtc_reports_compile_errors(void **state)
{
    (void)state;
    const dt_nvrtc *nv = nvrtc_or_skip();
    dt_cuda_image image;
    dt_error err = { 0 };
    const char *broken = "extern \"C\" __global__ void dt_kernel(float *o) { o[0] = undefined_name; }\n";
    assert_int_equal(dt_cuda_api_nvrtc_compile(nv, broken, "broken", 80, false, &image, &err), DT_EFAIL);
    assert_non_null(strstr(err.msg, "undefined_name"));
    assert_null(image.data);
}

typedef struct compile_job {
    const dt_nvrtc *nv;
    dt_task task;
    uint64_t seed;
} compile_job;

static void *compile_thread(void *arg)
{
    compile_job *job = arg;
    compile_random(job->nv, &job->task, 1, 80, 0, job->seed);
    return NULL;
}

static void test_nvrtc_from_two_threads(void **state)
{
    (void)state;
    const dt_nvrtc *nv = nvrtc_or_skip();
    compile_job jobs[2] = { { nv, resnet_3x3(), 11 }, { nv, mm_task(DT_OP_DENSE, 1, 4, 1000, 512), 12 } };
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, compile_thread, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_follows_knobs),
        cmocka_unit_test(test_invalid_configs_rejected),
        cmocka_unit_test(test_dense_grid_limits),
        cmocka_unit_test(test_reduction_threads),
        cmocka_unit_test(test_unroll_knobs_shape_source),
        cmocka_unit_test(test_kernels_match_reference_emulated),
        cmocka_unit_test(test_nvrtc_compiles_every_kind),
        cmocka_unit_test(test_nvrtc_ptx_and_arch_choice),
        cmocka_unit_test(test_nvrtc_reports_compile_errors),
        cmocka_unit_test(test_nvrtc_from_two_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
