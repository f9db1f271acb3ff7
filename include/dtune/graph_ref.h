/* graph_ref.h — a network graph (graph.h) checked and run by plain loops.
 *
 * The reference every faster form of a network is compared with: the
 * network export (netexport.h) runs it on its test input and writes the
 * output it gives; the tests compare an exported network with it. Each
 * conv and dense node runs dt_task_reference (model.h's semantics,
 * accumulating in double), then its epilogue in graph.h's order: + bias,
 * + residual, act. Pools follow graph.h (PyTorch's and ONNX's semantics:
 * a ceil_mode window that would start in the right or bottom padding is
 * dropped; an average pool counts the padding only with count_include_pad,
 * and never the part of a ceil_mode window past the padded input).
 */
#ifndef DTUNE_GRAPH_REF_H
#define DTUNE_GRAPH_REF_H

#include "dtune/error.h"
#include "dtune/graph.h"

/* Output height and width of pool p over an h x w input (graph.h's rule,
 * ceil_mode included). Returns 0, or DT_EINVAL when the window, stride or
 * pads are out of range or no window fits. */
int dt_graph_ref_pool_size(const dt_pool_attr *p, int h, int w, int *oh, int *ow);

/* Checks that g can run: one input and one output, the output written by a
 * node; every node with the inputs its op takes, of the shapes its op and
 * attributes give its output (a conv's or dense's geometry as
 * dt_task_finish completes it, its weight, bias and residual included).
 * Returns 0 or DT_EINVAL with a message naming the node. */
int dt_graph_ref_check(const dt_graph *g, dt_error *err);

/* Runs g (dt_graph_ref_check first) on input (the graph input's elements)
 * into output (the graph output's elements). Allocates a buffer per
 * activation and frees them before returning. Returns 0, DT_EINVAL or
 * DT_ENOMEM. */
int dt_graph_ref_run(const dt_graph *g, const float *input, float *output, dt_error *err);

#endif
