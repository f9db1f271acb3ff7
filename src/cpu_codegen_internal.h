/* cpu_codegen_internal.h — what the CPU code generator's files share.
 *
 * cpu_codegen.c writes the prelude, the pieces of generated code every form
 * uses (accumulators, broadcast FMAs, the tile loops, the entry points, the
 * channel-blocked layout's conversions) and picks a form; one file per form
 * writes the rest: cpu_codegen_conv.c (the blocked conv2d and
 * depthwise_conv2d), cpu_codegen_pixels.c (the pixels form of both),
 * cpu_codegen_plane.c (the plane form of depthwise_conv2d),
 * cpu_codegen_pairs.c (its stride-2 pairs and slots forms) and
 * cpu_codegen_mm.c (dense and batch_matmul). cpu_plan.c makes and checks
 * the plans. Not for callers outside these files.
 */
#ifndef DTUNE_CPU_CODEGEN_INTERNAL_H
#define DTUNE_CPU_CODEGEN_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_codegen.h"
#include "dtune/util.h"

/* ---- small helpers ------------------------------------------------------- */

/* Appends printf-formatted text to the source being written. */
static inline void emit(dt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void emit(dt_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dt_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

static inline bool is_conv(const dt_task *t)
{
    return t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D;
}

static inline bool divides(int part, int whole)
{
    return part >= 1 && whole % part == 0;
}

static inline size_t round16(size_t n)
{
    return (n + 15) / 16 * 16;
}

/* window rows and columns the plane and pairs forms' tables hold */
#define PLANE_MAX_WINDOW 8

/* ---- cpu_plan.c ---------------------------------------------------------- */

/* Vectors of pixels in a PIXELS register tile row: ow_block rounded up. */
int cpu_pixel_vectors(const dt_cpu_plan *p);

/* An unpadded stride-1 1x1 convolution whose register tile holds whole
 * vectors reads its NCHW input in place (no copy, no read past a row). */
bool cpu_pixels_in_place(const dt_cpu_plan *p);

/* ---- cpu_codegen.c: pieces every form uses ------------------------------- */

/* The OpenMP pragma of a loop nest (nothing when threads == 1). */
void cpu_emit_omp(dt_buf *b, const dt_cpu_plan *p, int collapse);

/* Emits perfectly nested loops (names[i] from 0 to bounds[i]) and the body;
 * the OpenMP pragma goes before loop omp_at, collapsing it with the next. */
void cpu_emit_loops(dt_buf *b, const dt_cpu_plan *p, const char *const *names,
                    const char *const *bounds, int nloops, int omp_at, const char *body);

/* The accumulators a{i}_{j} of a rows x cols register tile: declared, zeroed. */
void cpu_emit_acc_decl(dt_buf *b, int rows, int cols);
void cpu_emit_acc_zero(dt_buf *b, int rows, int cols);

/* Loads (store false) or stores them: accumulator (i, j) lives at base +
 * i * row_stride + j * VEC. */
void cpu_emit_acc_io(dt_buf *b, int rows, int cols, const char *base, const char *row_stride,
                     bool store);

/* Loads the vectors wv0 .. wv{cols-1} from base. */
void cpu_emit_weight_loads(dt_buf *b, int cols, const char *base);

/* The broadcast FMAs of a register tile: for each row i (of those whose bit
 * is set in rows_used) a scalar `const float <scalar> = <base>[i<index>]`
 * multiplies the loaded vectors <vector>0 .. <vector>{cols-1}:
 * a{i}_{j} += <vector>j * <scalar>. cpu_emit_broadcast_fmas uses every row. */
void cpu_emit_broadcast_fmas_of(dt_buf *b, int rows, uint64_t rows_used, int cols, char scalar,
                                char vector, const char *base, const char *index);
void cpu_emit_broadcast_fmas(dt_buf *b, int rows, int cols, char scalar, char vector,
                             const char *base, const char *index);

/* The kw loop, either a real loop kept rolled or KW copies with s fixed;
 * cpu_s_copies says how many copies. */
void cpu_emit_s_open(dt_buf *b, const dt_cpu_plan *p, int s);
int cpu_s_copies(const dt_cpu_plan *p);

/* The task's convolution constants as macros. */
void cpu_emit_conv_defines(dt_buf *b, const dt_cpu_plan *p);

/* The three entry points (workspace size, prepare, the kernel), the kernel
 * running image_step once per image; for a task with an epilogue also the
 * kernel with its epilogue, which runs epilogue_step, a step that applies
 * the epilogue itself (bias, residual, act in scope), or where that is
 * NULL image_step and then a pass over the output. */
void cpu_emit_entry(dt_buf *b, const dt_cpu_plan *p, const char *entry, size_t ws_floats,
                    const char *image_step, const char *epilogue_step);

/* The channel-blocked layout's conversions: TRANSPOSE() of a VEC x VEC
 * square, the opening of pack_x(x, OUT), the blocked pack_x, unpack_y
 * (which applies a task's epilogue as it writes NCHW), and the entry of
 * both blocked convolutions (see cpu_codegen.c). */
void cpu_emit_transpose_macro(dt_buf *b, const dt_cpu_plan *p);
void cpu_emit_pack_x_open(dt_buf *b, const dt_cpu_plan *p, const char *out);
void cpu_emit_blocked_pack_x(dt_buf *b, const dt_cpu_plan *p, const char *blk,
                             const char *nblk, int block);
void cpu_emit_unpack_y(dt_buf *b, const dt_cpu_plan *p);
void cpu_emit_conv_entry(dt_buf *b, const dt_cpu_plan *p, const char *entry, size_t wsz,
                         size_t xsz, size_t ysz);

/* ---- the forms: each writes a whole kernel after the prelude ------------- */

/* cpu_codegen_conv.c: the blocked forms; cpu_conv_bound is a conv2d tile
 * loop's bound macro. */
const char *cpu_conv_bound(const char *loop);
void cpu_emit_conv2d(dt_buf *b, const dt_cpu_plan *p, const char *entry);
void cpu_emit_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry);

/* cpu_codegen_pixels.c */
void cpu_emit_pixels_conv2d(dt_buf *b, const dt_cpu_plan *p, const char *entry);
void cpu_emit_pixels_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry);

/* cpu_codegen_plane.c: the plane form, and what the pairs and slots forms
 * share with it: the checks of a kernel on NCHW as it is (strided: stride 2
 * and no dilation along rows) and its per-channel loop, which calls kernel's
 * function for each channel (`loop`, OpenMP's where threads > 1). The
 * checks return 0 or DT_EINVAL with a message. */
int cpu_check_plane(const dt_cpu_plan *p, dt_error *err);
int cpu_check_strided(const dt_cpu_plan *p, const char *name, dt_error *err);
int cpu_check_pairs(const dt_cpu_plan *p, dt_error *err);
void cpu_emit_inplace_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry,
                                void (*kernel)(dt_buf *, const dt_cpu_plan *), const char *loop);
void cpu_emit_plane_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry);

/* cpu_codegen_pairs.c: the pairs and slots forms of stride-2 depthwise. */
int cpu_check_slots(const dt_cpu_plan *p, dt_error *err);
void cpu_emit_pairs_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry);
void cpu_emit_slots_depthwise(dt_buf *b, const dt_cpu_plan *p, const char *entry);

/* cpu_codegen_mm.c: dense and batch_matmul. */
void cpu_emit_mm(dt_buf *b, const dt_cpu_plan *p, const char *entry);

#endif
