/* cuda_codegen_internal.h — what the CUDA code generator's two files share:
 * cuda_plan.c makes and checks the plans, cuda_codegen.c writes their
 * source. Not for callers outside these files.
 */
#ifndef DTUNE_CUDA_CODEGEN_INTERNAL_H
#define DTUNE_CUDA_CODEGEN_INTERNAL_H

#include <limits.h>

#include "cuda_codegen.h"

/* One block's extent along a split axis: vthreads x threads x inner. */
static inline int extent(const int *split)
{
    return split[DT_SPLIT_VTHREAD] * split[DT_SPLIT_THREAD] * split[DT_SPLIT_INNER];
}

/* Threads sharing each output's reduction (a plan written by hand may
 * leave kt 0: one). */
static inline int reduction_threads(const dt_cuda_plan *plan)
{
    return plan->kt > 1 ? plan->kt : 1;
}

/* Threads per block of plan. */
static inline int plan_threads(const dt_cuda_plan *plan)
{
    long t = (long)plan->f[DT_SPLIT_THREAD] * plan->y[DT_SPLIT_THREAD] *
             plan->x[DT_SPLIT_THREAD] * reduction_threads(plan);
    return t > INT_MAX ? INT_MAX : (int)t;
}

/* Input rows (or columns) one block reads per staged reduction step. */
static inline int staged_span(int block_extent, int stride, int taps, int dilation)
{
    return (block_extent - 1) * stride + (taps - 1) * dilation + 1;
}

/* The structural half of dt_cuda_plan_check: what codegen itself needs
 * (every split multiplies to its axis, the reduction threads divide the
 * staged reduction). Returns 0 or DT_EINVAL with a message. */
int cuda_plan_check_structure(const dt_cuda_plan *p, dt_error *err);

#endif
