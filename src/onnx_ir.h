/* onnx_ir.h — private to onnx.c and onnx_ir.c: the import's own graph of
 * values and nodes between the ONNX file and the dt_graph, and the
 * converters that fill it one ONNX node at a time.
 */
#ifndef DTUNE_ONNX_IR_H
#define DTUNE_ONNX_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

#include "dtune/graph.h"
#include "dtune/onnx.h"

/* A map of strings to int (open addressing); keys are not copied. */
typedef struct name_map {
    const char **keys;
    int *vals;
    size_t cap;        /* a power of two, or 0 */
    size_t n;
} name_map;

typedef enum value_kind {
    VALUE_ACT,          /* an activation: the input or a node's output */
    VALUE_FLOAT,        /* a float constant */
    VALUE_INT           /* an int64 constant (a Reshape's shape) */
} value_kind;

typedef struct value {
    char name[DT_NAME_MAX];   /* for the graph's tensor (fitted, not yet unique) */
    value_kind kind;
    int ndims;                /* 0 for a scalar constant */
    int dims[DT_GRAPH_MAX_DIMS];
    size_t n;                 /* elements of a constant */
    float *f;                 /* VALUE_FLOAT */
    int64_t *i;               /* VALUE_INT */
    int producer;             /* the ir_node writing an activation; -1 */
    int uses;                 /* nodes reading it (the graph output counts) */
    int tensor;               /* in the dt_graph once emitted; -1 */
} value;

typedef struct ir_node {
    char name[DT_NAME_MAX];
    dt_graph_op op;
    int ninputs;
    int inputs[DT_GRAPH_MAX_INPUTS];   /* value indices */
    int output;
    int bias, residual;                /* value indices or -1 */
    dt_act act;
    union {
        dt_task kernel;
        dt_pool_attr pool;
        dt_act act;
    } attr;
    bool emitted;
} ir_node;

typedef struct importer {
    const char *path;
    dt_error *err;
    const dt_onnx_options *opts;
    Onnx__GraphProto *graph;
    int64_t opset;
    name_map initializers;    /* name -> index in graph->initializer */
    name_map producers;       /* value name -> ONNX node index */
    name_map bound;           /* value name -> value index, as converted */
    name_map uses;            /* value name -> readers, through Identity and Dropout */
    name_map node_names;      /* sanitized node names taken */
    value *values;
    int nvalues;
    size_t cap_values;
    ir_node *nodes;
    int nnodes;
    size_t cap_nodes;
    int *order;               /* ONNX node indices in run order */
    int input;                /* value index of the graph's input */
    const Onnx__NodeProto *node;   /* being converted, for messages */
    const char *node_name;
    char *scratch;            /* names made up for unnamed nodes, one block */
} importer;

/* What joins a conv or dense, in the epilogue's order: Y = act(op(X, W) +
 * bias + R); a batch-norm changes W and the bias. */
typedef enum join_stage {
    JOIN_BATCH_NORM,
    JOIN_BIAS,
    JOIN_RESIDUAL,
    JOIN_ACT
} join_stage;

/* The value of key in m, or missing. */
int dt_onnx_ir_name_get(const name_map *m, const char *key, int missing);

/* Sets key to val in m. Returns 0 or DT_ENOMEM. */
int dt_onnx_ir_name_put(name_map *m, const char *key, int val);

void dt_onnx_ir_name_map_free(name_map *m);

/* name made [A-Za-z0-9_] into out (len bytes): other runs of bytes become
 * one '_', none leads or trails. */
void dt_onnx_ir_sanitize(const char *name, char *out, size_t len);

/* An optional string of the proto, "" when absent. */
const char *dt_onnx_ir_str(const char *s);

/* "PATH: out of memory"; returns DT_ENOMEM. */
int dt_onnx_ir_oom(importer *im);

/* Sets the error "PATH: node 'NAME' (OP, opset N): message" of the node
 * being converted; returns code. */
int dt_onnx_ir_fail(importer *im, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Whether domain is ONNX's default one ("", "ai.onnx"). */
bool dt_onnx_ir_default_domain(const char *domain);

/* The name of a TensorProto data type, for messages. */
const char *dt_onnx_ir_type_name(int32_t t);

/* A new value (ndims dims, copied) called after name. Returns its index or
 * DT_ENOMEM. */
int dt_onnx_ir_new_value(importer *im, const char *name, value_kind kind, int ndims, const int *dims);

/* ONNX name now stands for value v. Returns 0 or DT_ENOMEM. */
int dt_onnx_ir_bind(importer *im, const char *name, int v);

/* How many nodes (and the graph output) read ONNX name. */
int dt_onnx_ir_uses_of(const importer *im, const char *name);

/* Converts im->node (named im->node_name) through the table of operators:
 * adds its node or joins the one before it, binds its output. Returns 0 or
 * an error naming the node, its op type and the opset (DT_EINVAL for an op
 * or form not supported, DT_ENOMEM). */
int dt_onnx_ir_convert(importer *im);

#endif
