/* cpu_codegen.h — C source for one configuration of one CPU task.
 *
 * A configuration (space point) is first read into a dt_cpu_plan: the tile
 * sizes, loop order, unrolling, vector width and weight packing it asks for.
 * dt_cpu_codegen then writes a self-contained C11 (GNU) translation unit that
 * the builders compile with `cc DT_CPU_KERNEL_CFLAGS -shared -fPIC` (plus
 * -fopenmp when plan->threads > 1). The source is the kernel alone: the
 * harness that checks and times it is cpu_runner.c, and `dtune export` writes
 * the same source into a library (export.h).
 *
 * Every generated artifact exports three symbols; dt_cpu_codegen names them
 * as below, dt_cpu_codegen_named puts its own ENTRY in place of dt_kernel
 * (ENTRY_workspace_bytes, ENTRY_prepare, ENTRY):
 *
 *   size_t dt_kernel_workspace_bytes(void);
 *       Floats of scratch the kernel needs (packed weights, padded input,
 *       blocked output). The caller allocates them 64-byte aligned.
 *   void dt_kernel_prepare(const float *weight, float *workspace);
 *       Called once per loaded artifact, outside the timed calls. When the
 *       plan pre-packs weights (pack_weight = 1) it writes them into the
 *       workspace in the kernel's layout, as a deployment that constant-folds
 *       the layout transform (TVM's alter_op_layout, oneDNN's reordered
 *       weights) would; otherwise it does nothing.
 *   void dt_kernel(const float *input, const float *weight, float *output,
 *                  float *workspace);
 *       The timed entry point. Tensors are the task's (model.h): NCHW / OIHW
 *       for convolutions, row-major [B][M][K] x [B][N][K] -> [B][M][N] for
 *       matrix products. Activations are packed inside the call (they change
 *       per inference); weights too when pack_weight = 0.
 *   void dt_kernel_epilogue(const float *input, const float *weight,
 *                           float *output, float *workspace, const float *bias,
 *                           const float *residual, int act);
 *       Only for a task with an epilogue (model.h): dt_kernel's work, and
 *       output = act(output + bias + residual) in the same call: applied
 *       as the blocked forms unpack their output to NCHW, a pass over each
 *       output channel's plane (conv) or row (matrix products) after the
 *       other forms' work.
 *       bias or residual NULL skips that part; act 0 none, 1 relu, 2 relu6
 *       (the parts the task lacks are not generated). A task without an
 *       epilogue gets no such entry and the same source as before.
 *
 * Loop nests. conv2d and depthwise_conv2d in the BLOCKED form (below)
 * vectorise over output channels: the
 * register tile is ow_block output pixels x co_block channels (co_block/vec
 * vectors); the input is zero-padded into the workspace, weights are blocked
 * [co/co_block][ci/ci_block][..][co_block], output accumulates in a blocked
 * buffer and is unpacked to NCHW at the end (both conversions transpose
 * vec x vec squares in registers where the channel block holds whole
 * vectors); the PIXELS form vectorises over output width instead
 * (DT_CPU_FORM_PIXELS), splitting stride-2 rows into their phases by vector
 * shuffles. dense and batch_matmul either
 * vectorise over N on pre-packed weight panels (pack_weight = 1; register
 * tile m_block rows x n_block columns) or over K as dot products on the
 * weights as stored (pack_weight = 0; m_block x n_block accumulators).
 */
#ifndef DTUNE_CPU_CODEGEN_H
#define DTUNE_CPU_CODEGEN_H

#include <stdbool.h>

#include "dtune/error.h"
#include "dtune/model.h"
#include "dtune/space.h"

/* The compiler flags of a kernel source (GNU C for its vector extensions);
 * the builders add -shared -fPIC, an export's Makefile uses them as they are. */
#define DT_CPU_KERNEL_CFLAGS "-std=gnu11 -O3 -march=native -ffp-contract=fast"

/* The entry point dt_cpu_codegen names (the runner looks it up by name). */
#define DT_CPU_KERNEL_ENTRY "dt_kernel"

/* The measurement's helper a multi-threaded dt_cpu_codegen source adds:
 *   void dt_kernel_spread(float *const *buffers, const size_t *floats, int n);
 * rewrites each of the n buffers in place (a NULL one is skipped) with the
 * kernel's own OpenMP threads, stripe k of DT_CPU_SPREAD_STRIPE bytes by
 * thread k mod threads: in a network the T threads of the layer before
 * wrote a layer's input with their split of the work, so each of its own
 * threads finds about (T-1)/T of what it reads in another core's cache;
 * the runner calls it before a timed call to put the input there
 * (measure.spread_input). The values are unchanged. The team is the
 * kernel's, so no other thread competes with it for the cores. */
#define DT_CPU_KERNEL_SPREAD DT_CPU_KERNEL_ENTRY "_spread"
#define DT_CPU_SPREAD_STRIPE 1024

/* Registers the register tile may use for accumulators (32 zmm/ymm with
 * AVX-512 VL, minus weight vectors and a broadcast). */
#define DT_CPU_MAX_ACCUMULATORS 28

/* Floats in the widest vector register the compiler targets with
 * -march=native on this machine: 16 with AVX-512F, 8 with AVX, 4 otherwise
 * (SSE, NEON). A wider generic vector is split by the compiler and runs
 * several times slower, so the space offers no wider one. */
int dt_cpu_plan_native_lanes(void);

/* Number of loop orders per op kind (the `order` knob's options are
 * 0 .. DT_CPU_*_ORDERS - 1). */
#define DT_CPU_CONV_ORDERS 6
#define DT_CPU_DEPTHWISE_ORDERS 3
#define DT_CPU_MM_ORDERS 4

/* The two forms of a convolution kernel (the `form` knob). BLOCKED
 * vectorises over output channels in a channel-blocked layout (input and
 * output converted from and to NCHW inside the call). PIXELS vectorises over
 * output width on NCHW as it is: the register tile is co_block channels (a
 * broadcast weight each) x ceil(ow_block / vec) vectors of pixels, the input
 * is copied into zero-padded rows split by stride phase (none for an
 * unpadded stride-1 1x1 convolution, which reads the input in place), the
 * output is stored in NCHW directly. Depthwise PIXELS packs a band of
 * oh_block output rows' input rows per channel tile, so the copy stays in
 * cache. PIXELS conv2d has DT_CPU_CONV_ORDERS loop orders of its own, both
 * reduction orders where the kernel window is larger than 1x1, and ci tiles
 * whose partial sums go through the output; PIXELS depthwise has
 * DT_CPU_PIXELS_DEPTHWISE_ORDERS orders of its band loops and a register
 * tile of row_block output rows, so an input row loaded once feeds every
 * output row whose window holds it. PLANE (depthwise) reads NCHW in place
 * and copies nothing: one channel's plane at a time, vectors of whole output
 * rows (several where a row is narrower than a vector; at most two when
 * strided) or of VEC-column chunks of a row. At stride 1 with same padding
 * every tap is one masked load of consecutive floats (the masks are the zero
 * padding); otherwise it is picked by a two-source permute from at most two
 * masked loads; `unroll` 0 loads a window row once and permutes its other
 * columns out of that load where they lie in it (whole rows a vector), 1
 * loads every column. Window rows (or picked taps) a row group shares with
 * the one below are carried down, chunk by chunk; row_block unrolls the loop
 * over row groups; the tile, order and pack knobs do not apply. */
#define DT_CPU_FORM_BLOCKED 0
#define DT_CPU_FORM_PIXELS 1
#define DT_CPU_FORM_PLANE 2
/* PAIRS (depthwise, stride 2 along rows): like PLANE it reads NCHW in place,
 * but a vector holds VEC / 2 consecutive output columns of two channels
 * (each 128-bit lane two columns of one, then the same two of the next), so
 * the even and odd floats of one load per channel are two window columns
 * and one in-lane shuffle (vshufps) takes them for both channels: no
 * two-source permute per tap. Output rows go down a chunk of columns with
 * the window rows they share carried; row_block unrolls that loop; the
 * tile, order, unroll and pack knobs do not apply. */
#define DT_CPU_FORM_PAIRS 3
/* SLOTS (depthwise, stride 2 along rows): reads NCHW in place, one
 * channel's plane and one whole output row at a time, and picks no tap: an
 * input row's full-resolution vectors are multiplied as loaded by weight
 * vectors whose even and odd lanes hold the taps of a pair's two columns,
 * one accumulator per pair offset of the window; the pairs are summed and
 * moved to their output columns once a row (cpu_codegen_pairs.c). Valid where a
 * row's accumulators and weights fit the registers; row_block unrolls the
 * row loop; the tile, order, unroll and pack knobs do not apply. */
#define DT_CPU_FORM_SLOTS 4
#define DT_CPU_PIXELS_DEPTHWISE_ORDERS 2

typedef struct dt_cpu_plan {
    dt_task task;
    int threads;        /* kernel threads; > 1 emits OpenMP */
    int vec;            /* vector lanes: 1, 4, 8 or 16 floats */
    int order;          /* loop order of the tile loops (see cpu_codegen_*.c) */
    int unroll;         /* conv: 1 = kw loop unrolled in the source; mm: GCC unroll factor of k */
    int pack_weight;    /* 1: weights packed once in dt_kernel_prepare */
    int red_order;      /* conv2d: 0 = r,s outside ci (input [ci/cb][h][w][cb]); 1 = ci outside r,s */
    int form;           /* convolutions: DT_CPU_FORM_BLOCKED, _PIXELS; depthwise also _PLANE,
                         * _PAIRS, _SLOTS */
    int row_block;      /* pixels depthwise: output rows per register tile; plane: unroll
                         * of the loop over middle row groups; pairs and slots: of the
                         * loop over output rows; else 1 */
    /* convolutions */
    int co_block, oh_block, ow_block, ci_block;
    /* matrix products */
    int m_block, n_block, k_block;
} dt_cpu_plan;

/* Reads the knobs of point (names as in cpu_space.c: tile_co, tile_oh,
 * tile_ow, tile_ci, tile_m, tile_n, tile_k, order, unroll, vec, pack_weight,
 * red_order, form, tile_rows) into plan; a knob the space lacks takes a safe default. Does not
 * check the plan. */
void dt_cpu_plan_from_point(const dt_space *space, const dt_point *point, int threads,
                            dt_cpu_plan *plan);

/* A plan with every tile 1 and vec 1 except where noted: always valid. */
void dt_cpu_plan_default(const dt_task *task, int threads, dt_cpu_plan *plan);

/* Whether plan can be generated: tiles divide their axes, vector width
 * divides the vectorised tile, the register tile fits the register file.
 * Returns 0 or DT_EINVAL with the reason. */
int dt_cpu_plan_check(const dt_cpu_plan *plan, dt_error *err);

/* Writes the C source of plan into *source (malloc'd, caller frees), the
 * measurement's build: with DT_CPU_KERNEL_SPREAD when plan->threads > 1.
 * Returns 0, DT_EINVAL (plan fails dt_cpu_plan_check) or DT_ENOMEM. */
int dt_cpu_codegen(const dt_cpu_plan *plan, char **source, dt_error *err);

/* dt_cpu_codegen with the entry points named entry, entry_prepare and
 * entry_workspace_bytes, so several kernels can be linked into one program
 * (an export's build: without the measurement's DT_CPU_KERNEL_SPREAD).
 * Returns what dt_cpu_codegen returns; DT_EINVAL too when entry is not a C
 * identifier. */
int dt_cpu_codegen_named(const dt_cpu_plan *plan, const char *entry, char **source,
                         dt_error *err);


#endif
