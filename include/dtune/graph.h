/* graph.h — a whole network: fp32 tensors and the operators between them.
 *
 * What `dtune import` reads from an ONNX file (onnx.h), what a network's
 * tuning tasks come from (dt_graph_tasks), and what the network export runs.
 * Activations are fp32, NCHW when 4-D and [N, K] when 2-D; constants
 * (weights, biases) live in one block of floats owned by the graph, in the
 * order they were added: the order of the exported weights file.
 *
 * A graph is in fused form: a batch-norm has been folded into the
 * convolution before it, and the bias, the residual add and the activation
 * that follow a conv or dense are that node's epilogue:
 *   Y = act(op(X, W) + bias[channel] + R)      (each part optional)
 * with R a tensor of Y's shape. Nodes are in a topological order: each input
 * is the graph's input, a constant, or the output of an earlier node.
 *
 * Operator semantics beyond model.h's (conv2d, depthwise_conv2d, dense):
 *   max_pool / avg_pool   window kh x kw, stride, pads top/left/bottom/right;
 *                         output size floor (or ceil, ceil_mode) of
 *                         (in + pad_begin + pad_end - k) / stride + 1, a
 *                         ceil window that starts past the padded input
 *                         dropped; padding is -inf for max, and for avg
 *                         counted only with count_include_pad
 *   global_avg_pool       [n,c,h,w] -> [n,c,1,1], the mean over h x w
 *   add                   elementwise, both inputs of the output's shape
 *   act                   relu, or relu6 (min(max(x, 0), 6))
 *   concat                along axis 1 (channels), inputs in order
 *   flatten               [n,c,h,w] -> [n, c*h*w]: the same floats
 */
#ifndef DTUNE_GRAPH_H
#define DTUNE_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "dtune/error.h"
#include "dtune/model.h"

#define DT_GRAPH_MAX_DIMS 4
/* Inputs of one node: a concat's inputs are the most any op here has. */
#define DT_GRAPH_MAX_INPUTS 16

typedef enum dt_graph_op {
    DT_GRAPH_CONV = 0,        /* conv2d or depthwise_conv2d (attr.conv): inputs X, W */
    DT_GRAPH_DENSE,           /* dense (attr.mm): inputs X [m,k], W [n,k] */
    DT_GRAPH_MAX_POOL,        /* attr.pool */
    DT_GRAPH_AVG_POOL,        /* attr.pool */
    DT_GRAPH_GLOBAL_AVG_POOL,
    DT_GRAPH_ADD,             /* inputs A, B */
    DT_GRAPH_ACT,             /* attr.act */
    DT_GRAPH_CONCAT,          /* inputs in order, along channels */
    DT_GRAPH_FLATTEN,
    DT_GRAPH_OP_COUNT
} dt_graph_op;

/* What follows a conv or dense inside its node (tensor indices, -1: none). */
typedef struct dt_epilogue {
    int bias;                 /* constant of Y's channels (conv) or columns (dense) */
    int residual;             /* a tensor of Y's shape, added after the bias */
    dt_act act;               /* applied last */
} dt_epilogue;

typedef struct dt_pool_attr {
    int kh, kw;
    int sh, sw;
    int pad_top, pad_left, pad_bottom, pad_right;
    bool ceil_mode;
    bool count_include_pad;   /* avg_pool only */
} dt_pool_attr;

typedef struct dt_graph_tensor {
    char name[DT_NAME_MAX];
    int ndims;
    int dims[DT_GRAPH_MAX_DIMS];
    bool constant;            /* a weight: its floats are weights[offset ...] */
    size_t offset;
} dt_graph_tensor;

typedef struct dt_graph_node {
    char name[DT_NAME_MAX];   /* the source graph's node name (unique, never empty) */
    dt_graph_op op;
    int ninputs;
    int inputs[DT_GRAPH_MAX_INPUTS];
    int output;
    dt_epilogue epilogue;     /* conv and dense */
    int task;                 /* conv and dense: its task in dt_graph_tasks' model; else -1 */
    union {
        dt_task kernel;       /* conv and dense: kind and geometry (name and count unused) */
        dt_pool_attr pool;
        dt_act act;
    } attr;
} dt_graph_node;

typedef struct dt_graph {
    char name[DT_NAME_MAX];
    int input, output;        /* tensor indices; one input and one output */
    int ntensors, nnodes;
    dt_graph_tensor *tensors;
    dt_graph_node *nodes;
    float *weights;           /* every constant, one block */
    size_t nweights;
    size_t cap_tensors, cap_nodes, cap_weights;
} dt_graph;

/* An empty graph called name; NULL when out of memory. */
dt_graph *dt_graph_new(const char *name);

/* Frees g and everything it holds; accepts NULL. */
void dt_graph_free(dt_graph *g);

/* Adds a tensor of ndims dims (1 to DT_GRAPH_MAX_DIMS, each >= 1); with
 * data non-NULL a constant whose floats are copied into the graph.
 * Returns its index, or DT_EINVAL (bad dims, name too long, a name already
 * used) or DT_ENOMEM, with a message. */
int dt_graph_add_tensor(dt_graph *g, const char *name, int ndims, const int *dims,
                        const float *data, dt_error *err);

/* Appends a copy of node (its inputs and output already added, the output
 * not produced by an earlier node, an input neither the output nor produced
 * later). Returns its index, DT_EINVAL or DT_ENOMEM. */
int dt_graph_add_node(dt_graph *g, const dt_graph_node *node, dt_error *err);

/* Index of the tensor called name, or -1. */
int dt_graph_find_tensor(const dt_graph *g, const char *name);

/* Elements of tensor t. */
size_t dt_graph_tensor_elements(const dt_graph *g, int t);

/* The floats of constant t (NULL for an activation). */
const float *dt_graph_constant(const dt_graph *g, int t);

/* "conv", "dense", "max_pool", ... ; NULL out of range. */
const char *dt_graph_op_name(dt_graph_op op);

/* The graph's tuning tasks: one per unique kind and geometry of its conv and
 * dense nodes, named after the first such node, count = how many nodes
 * share it, in order of first appearance; sets each such node's task.
 * *out (model called g->name, path given) belongs to the caller. Returns 0,
 * DT_EINVAL (a geometry dt_task_finish refuses: the message names the node)
 * or DT_ENOMEM. */
int dt_graph_tasks(dt_graph *g, const char *path, dt_model **out, dt_error *err);

#endif
