/* cuda_codegen.h — CUDA C source and launch geometry of one configuration of
 * one task, shaped like AutoTVM's conv2d_nchw.cuda / dense / batch_matmul
 * templates.
 *
 * A configuration (space point) is first read into a dt_cuda_plan: the 4-way
 * splits of the output axes (block, virtual thread, thread, inner), the 2-way
 * splits of the reduction axes (outer loop, inner loop staged through shared
 * memory) and the unrolling knobs. dt_cuda_codegen writes one translation unit
 * for NVRTC holding one kernel, `extern "C" __global__ void dt_kernel(const
 * float *input, const float *weight, float *output)`, over the task's tensors
 * as model.h lays them out (NCHW / OIHW; [B][M][K] x [B][N][K] -> [B][M][N]).
 *
 * Every split is an exact factorisation of its axis, so every tile is full and
 * the kernels need no bounds checks on outputs; only loads of padded input
 * rows and columns are guarded.
 *
 * Mapping (x = output columns or N, y = rows or M, f = output channels):
 *   grid   = (x blocks, y blocks, batch * f blocks)     (matmul: batch in z)
 *   block  = (threads_f * threads_y * threads_x, 1, 1)  one dimension, x fastest
 *   thread = a register tile of (vthread * inner) per axis
 * conv2d stages a [rc_inner][in_h][in_w] input tile and a [block_f][rc_inner]
 * [ry_inner][rx_inner] weight tile in dynamic shared memory per outer
 * reduction step; dense / batch_matmul stage [k_inner][block_m] and
 * [k_inner][block_n]; depthwise_conv2d reads global memory directly (its
 * space has no reduction knobs) and uses no shared memory.
 *
 * dense / batch_matmul may also split each staged k_inner among tile_kt
 * threads (AutoTVM's dense_small_batch rfactor: a batch-1 layer has few
 * outputs and a long reduction): the block holds tile_kt times the threads,
 * thread index kt fastest, each thread sums every tile_kt-th k, and after
 * the reduction the partial sums meet in shared memory ([accumulators][block
 * threads], reusing the staging buffer) where the kt = 0 thread adds them
 * and stores.
 *
 * Unrolling (auto_unroll_max_step, unroll_explicit): a constant-extent loop is
 * unrolled when the number of innermost iterations under it, itself included,
 * is at most auto_unroll_max_step; unrolled loops become `#pragma unroll`
 * loops (unroll_explicit = 0) or are unrolled in the source itself, one block
 * per iteration with the loop variable as a constant (unroll_explicit = 1).
 * With auto_unroll_max_step = 0 the source has plain loops only.
 */
#ifndef DTUNE_CUDA_CODEGEN_H
#define DTUNE_CUDA_CODEGEN_H

#include <stddef.h>

#include "dtune/error.h"
#include "dtune/model.h"
#include "dtune/space.h"

/* Name of the one kernel every generated source defines. */
#define DT_CUDA_KERNEL_NAME "dt_kernel"

/* Indices into a 4-way split: number of blocks, virtual threads, threads,
 * inner (register) iterations. 2-way reduction splits: outer, inner. */
enum { DT_SPLIT_BLOCK = 0, DT_SPLIT_VTHREAD, DT_SPLIT_THREAD, DT_SPLIT_INNER };
enum { DT_SPLIT_OUTER = 0, DT_SPLIT_STAGED };

typedef struct dt_cuda_plan {
    dt_task task;
    int f[4], y[4], x[4];      /* conv kinds: c_out, oh, ow; matmul: y = M, x = N, f unused (1s) */
    int rc[2], ry[2], rx[2];   /* conv2d reduction over c_in, kh, kw */
    int k[2];                  /* dense / batch_matmul reduction over K */
    int kt;                    /* dense / batch_matmul: threads sharing each output's
                                  reduction (k_inner split among them, partial sums
                                  added through shared memory); 1 elsewhere */
    int unroll_max_step;       /* auto_unroll_max_step */
    int unroll_explicit;       /* 1: unroll in the source; 0: #pragma unroll */
} dt_cuda_plan;

/* What a block may use. The defaults hold on every GPU CUDA 11+ supports:
 * 1024 threads, 48 KiB of shared memory without the opt-in attribute,
 * 65535 blocks in grid y and z, and a cap on the per-thread register tile
 * (accumulators) past which a kernel only spills and compiles slowly. */
typedef struct dt_cuda_limits {
    int max_threads;
    int max_shared_bytes;
    int max_grid_yz;
    int max_accumulators;
} dt_cuda_limits;

#define DT_CUDA_MAX_ACCUMULATORS 256

void dt_cuda_plan_limits_default(dt_cuda_limits *limits);

/* Launch geometry of a plan. */
typedef struct dt_cuda_launch {
    unsigned grid[3];
    unsigned block[3];
    unsigned shared_bytes;     /* dynamic shared memory per block */
} dt_cuda_launch;

/* Reads the knobs of point (tile_f, tile_y, tile_x, tile_rc, tile_ry, tile_rx,
 * tile_k, tile_kt, auto_unroll_max_step, unroll_explicit, as in cuda_space.c) into
 * plan; an absent split is all ones except its block part, which takes the
 * whole axis. Does not check the plan. */
void dt_cuda_plan_from_point(const dt_space *space, const dt_point *point, dt_cuda_plan *plan);

/* Grid, block and dynamic shared-memory size of plan. */
void dt_cuda_plan_launch(const dt_cuda_plan *plan, dt_cuda_launch *launch);

/* Accumulators per thread of plan. */
int dt_cuda_plan_accumulators(const dt_cuda_plan *plan);

/* Whether plan can be generated and launched within limits (NULL = the
 * defaults): splits multiply to their axes, threads, shared memory, grid and
 * register tile within bounds, every tensor indexable by int. Returns 0 or
 * DT_EINVAL with the reason. */
int dt_cuda_plan_check(const dt_cuda_plan *plan, const dt_cuda_limits *limits, dt_error *err);

/* Writes the CUDA C source of plan into *source (malloc'd, caller frees).
 * Launch limits are not checked here (the device's may exceed the defaults).
 * Returns 0, DT_EINVAL (a split does not factor its axis, or a tensor is too
 * large for int indexing) or DT_ENOMEM. */
int dt_cuda_codegen(const dt_cuda_plan *plan, char **source, dt_error *err);

/* One-line description, e.g. "f=[2,2,16,1] y=[...] ... unroll=512/1". */
void dt_cuda_plan_str(const dt_cuda_plan *plan, char *buf, size_t len);

#endif
