/* onnx.h — a network from an ONNX file (`dtune import`, `--model X.onnx`).
 *
 * Reads the ModelProto with protobuf-c (the C generated at build time from
 * the onnx.proto Debian's python3-onnx ships), infers every shape along the
 * graph from the input's shape and the initializers, and builds a dt_graph in
 * fused form (graph.h): batch-norm folded into the convolution before it,
 * bias, residual add and ReLU / ReLU6 in the epilogue of the conv or dense
 * they follow, Dropout and Identity removed. docs/import.md lists the
 * operators and what each error means.
 */
#ifndef DTUNE_ONNX_H
#define DTUNE_ONNX_H

#include "dtune/error.h"
#include "dtune/graph.h"

/* The ONNX default domain's operator sets dt_onnx_load reads. */
#define DT_ONNX_OPSET_MIN 11
#define DT_ONNX_OPSET_MAX 17

typedef struct dt_onnx_options {
    /* The graph input's shape (input_ndims 0: the one the file declares; it
     * must then be fully known). A declared rank must match it. */
    int input_ndims;
    int input_dims[DT_GRAPH_MAX_DIMS];
} dt_onnx_options;

/* No override: the file's own input shape. */
dt_onnx_options dt_onnx_default_options(void);

/* Parses "N,C,H,W" (1 to DT_GRAPH_MAX_DIMS positive integers) into
 * opts->input_dims. Returns 0 or DT_EINVAL with a message. */
int dt_onnx_parse_shape(const char *text, dt_onnx_options *opts, dt_error *err);

/* Reads the ONNX file at path (opts NULL: defaults) into a new graph named
 * after the file (its stem, made [A-Za-z0-9_]); node names are the ONNX node
 * names made [A-Za-z0-9_] and unique (an unnamed node: OpType_INDEX). On
 * success *out belongs to the caller (dt_graph_free). On failure *out is NULL
 * and the message names the file and, where one is to blame, the node, its
 * op type and the opset. Returns 0, DT_ENOTFOUND (no file), DT_EIO,
 * DT_EPARSE (not a ModelProto, truncated), DT_EINVAL (an operator, attribute,
 * type, opset or shape dt_onnx_load does not take; a cycle; a missing
 * initializer or input; a dynamic input shape without opts) or DT_ENOMEM. */
int dt_onnx_load(const char *path, const dt_onnx_options *opts, dt_graph **out, dt_error *err);

#endif
