/* model.h — a network description (models/NAME.yaml) and the tuning tasks in it.
 *
 * A model file lists operators; operators of identical kind and shape are one
 * task whose `count` (the weight w_k in DynaTune's reward) is the sum of their
 * counts. All tensors are fp32, NCHW, batch taken from the file.
 *
 * Operator semantics (what every backend computes and the reference checks):
 *   conv2d            Y[n,co,oh,ow] = sum_{ci,r,s} X[n,ci,oh*sh+r*dh-ph, ow*sw+s*dw-pw] * W[co,ci,r,s]
 *   depthwise_conv2d  Y[n,c,oh,ow]  = sum_{r,s}    X[n,c/mult,...] * W[c,0,r,s]   (c_out = c_in * mult)
 *   dense             Y[m,n] = sum_k X[m,k] * W[n,k]           (weight stored [N,K], as nn.dense)
 *   batch_matmul      Y[b,m,n] = sum_k A[b,m,k] * B[b,n,k]     (B stored transposed, as nn.batch_matmul)
 */
#ifndef DTUNE_MODEL_H
#define DTUNE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "dtune/error.h"
#include "dtune/util.h"

typedef enum dt_op_kind {
    DT_OP_CONV2D = 0,
    DT_OP_DEPTHWISE_CONV2D,
    DT_OP_DENSE,
    DT_OP_BATCH_MATMUL,
    DT_OP_KIND_COUNT
} dt_op_kind;

#define DT_NAME_MAX 64
#define DT_PATH_MAX 1024
/* Each size in a model file is at most DT_MODEL_INT_MAX; each tensor of a
 * task (a convolution's padded input included) holds at most
 * DT_TENSOR_MAX_ELEMENTS elements, so every index a kernel computes fits an
 * int; a task's count (the ops merged into it) is at most DT_MODEL_INT_MAX. */
#define DT_MODEL_INT_MAX 1000000000
/* Ops in one model file: the largest networks have a few thousand, and the
 * reader's checks (names, merging) compare each op with the earlier ones. */
#define DT_MODEL_MAX_OPS 10000
#define DT_TENSOR_MAX_ELEMENTS 2147483647LL

/* Convolution geometry (conv2d and depthwise_conv2d). */
typedef struct dt_conv_shape {
    int n, c_in, h, w;      /* input */
    int c_out;              /* output channels (depthwise: c_in * multiplier) */
    int kh, kw;             /* kernel */
    int sh, sw;             /* stride */
    int ph, pw;             /* padding, both sides */
    int dh, dw;             /* dilation */
    int oh, ow;             /* output height and width, derived */
} dt_conv_shape;

/* Matrix-multiply geometry (dense: b = 1). */
typedef struct dt_mm_shape {
    int b, m, n, k;
} dt_mm_shape;

typedef enum dt_act {
    DT_ACT_NONE = 0,
    DT_ACT_RELU,
    DT_ACT_RELU6              /* min(max(x, 0), 6) */
} dt_act;

/* What a conv2d, depthwise_conv2d or dense task applies to its output
 * before storing it (all false / DT_ACT_NONE: nothing, the plain task):
 *   Y = act(op(X, W) + bias[channel] + R)
 * bias is per output channel (conv) or column (dense), R a tensor of Y's
 * shape. A task merged from several ops carries what its ops need at most;
 * its kernel takes bias and R as pointers that may be NULL and the
 * activation as an argument, so one kernel serves ops with less. act is
 * the activation the task is checked and timed with (relu6 over relu: one
 * more operation). */
typedef struct dt_task_epilogue {
    bool bias;
    bool residual;
    dt_act act;
} dt_task_epilogue;

typedef struct dt_task {
    char name[DT_NAME_MAX];  /* the first op's name, e.g. "conv1" */
    dt_op_kind kind;
    int count;               /* occurrences in the model */
    dt_conv_shape conv;      /* valid for conv kinds */
    dt_mm_shape mm;          /* valid for dense and batch_matmul */
    double flops;            /* one execution: 2 * multiply-adds */
    double useful_flops;     /* 2 * the multiply-adds that read the input, not its
                                padding: the least work of any direct kernel (the
                                bound's FLOPs, roofline.h); = flops without padding */
    double bytes;            /* compulsory traffic: inputs + weights + output, fp32 */
    double write_bytes;      /* of which written: the output */
    dt_task_epilogue epilogue; /* not part of the task's identity (dt_model_add_task) */
} dt_task;

typedef struct dt_model {
    char name[DT_NAME_MAX];
    char path[DT_PATH_MAX];
    int batch;
    int ntasks;
    dt_task *tasks;          /* in order of first appearance in the file */
} dt_model;

/* Loads and validates a model file. Every problem is reported with
 * file:line:column. Returns 0, DT_ENOTFOUND (no file), DT_EPARSE (not YAML),
 * DT_EINVAL (bad field) or DT_ENOMEM. *out is owned by the caller. */
int dt_model_load(const char *path, dt_model **out, dt_error *err);

/* What a target lets one task's tensors take (dt_target_task_memory fills
 * it): task_bytes (0 = unknown, no check) and where that figure comes from,
 * for messages ("half of this machine's 23.4 GiB"). */
typedef struct dt_model_memory {
    uint64_t task_bytes;
    char source[128];
} dt_model_memory;

/* dt_model_load, and each task's dt_task_memory_bytes checked against
 * memory (NULL: not checked): a task past it is DT_EINVAL at its op's
 * file:line:column, before anything is allocated for it. */
int dt_model_load_within(const char *path, const dt_model_memory *memory, dt_model **out,
                         dt_error *err);

void dt_model_free(dt_model *model);

/* The model as a model file (models/NAME.yaml's format, which
 * dt_model_load reads back to the same tasks): comment (may be NULL) as
 * '#' lines, name, batch and one line per task with its count. Appends to
 * out; returns 0 or DT_ENOMEM. */
int dt_model_format(const dt_model *model, const char *comment, dt_buf *out);

/* Merges t into m's task of the same kind and geometry (adding its count,
 * and widening its epilogue to hold t's: dt_task_epilogue_merge) or appends
 * a copy of it. Returns the task's index, DT_EINVAL (the merged count would
 * pass DT_MODEL_INT_MAX; m unchanged) or DT_ENOMEM. */
int dt_model_add_task(dt_model *m, const dt_task *t);

/* Index of the task called name, or -1. */
int dt_model_find_task(const dt_model *model, const char *name);

/* "conv2d", "depthwise_conv2d", "dense", "batch_matmul"; NULL if out of range. */
const char *dt_op_kind_name(dt_op_kind kind);


/* Fills derived fields (oh, ow, flops, bytes) from the geometry. Returns
 * DT_EINVAL with a message when the geometry is impossible or a tensor is
 * over DT_TENSOR_MAX_ELEMENTS (sizes are multiplied in 64 bits). */
int dt_task_finish(dt_task *task, dt_error *err);

/* Along one dimension of a convolution, the kernel taps [*first, *end) of
 * output position pos whose input index pos * stride - pad + tap * dilation
 * lies inside [0, in); the others read padding. *first == *end when none do.
 * Generated kernels skip the rest (cpu_codegen_conv.c); the sum over positions is
 * what useful_flops counts. */
void dt_conv_taps(int in, int pos, int k, int stride, int pad, int dilation, int *first, int *end);

/* The sum of dt_conv_taps' counts over the out positions of one dimension,
 * in closed form (per tap, O(k)): the taps that read the input. */
double dt_conv_taps_inside(int in, int out, int k, int stride, int pad, int dilation);

/* Whether the task has an epilogue (any part of it). */
bool dt_task_has_epilogue(const dt_task *task);

/* into widened to hold what from needs too: bias or residual if either has
 * it, the stronger activation (none < relu < relu6). */
void dt_task_epilogue_merge(dt_task_epilogue *into, const dt_task_epilogue *from);

/* The epilogue as its parts joined by '+' ("bias+residual+relu"; "" for
 * none): the model file's `epilogue` list, the db signature's field. */
void dt_task_epilogue_str(const dt_task_epilogue *e, char *buf, size_t len);

/* Reads dt_task_epilogue_str's form (parts in any order, each once; ""
 * is none). Returns 0 or DT_EINVAL. */
int dt_task_epilogue_parse(const char *text, dt_task_epilogue *e);

/* "relu", "relu6" (NULL for none or out of range). */
const char *dt_act_name(dt_act act);

/* Human shape, e.g. "1x64x56x56 k3x3 s1 p1 -> 64" or "128x768 * 2304x768^T",
 * followed by " +bias+residual+relu" when the task has an epilogue. */
void dt_task_shape_str(const dt_task *task, char *buf, size_t len);

/* Element counts of the task's tensors: input (X or A), weight (W or B), output. */
void dt_task_tensor_sizes(const dt_task *task, size_t *input, size_t *weight, size_t *output);

/* Bytes a measurement of the task holds: its input, weight and output
 * tensors and the reference output they are checked against (fp32). */
uint64_t dt_task_memory_bytes(const dt_task *task);

/* Similarity group of a task, for Ansor's gradient scheduler: tasks of the
 * same kind (and, for convolutions, the same kernel size) share a group. */
int dt_task_similarity_group(const dt_task *task);

/* Plain, obviously correct reference implementation of the task (the oracle
 * every generated kernel is checked against), without its epilogue. */
void dt_task_reference(const dt_task *task, const float *input, const float *weight, float *output);

/* Applies an epilogue to the task's output in place: output = act(output +
 * bias[channel or column] + residual); bias and residual may be NULL (that
 * part skipped). The reference of a task with an epilogue is
 * dt_task_reference and then this. */
void dt_task_apply_epilogue(const dt_task *task, const float *bias, const float *residual,
                            dt_act act, float *output);

#endif
