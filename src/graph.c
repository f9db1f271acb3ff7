/* graph.c — a network's tensors and nodes (graph.h): building one tensor and
 * one node at a time with every reference checked as it is added, so a
 * graph is in topological order by construction, and the tuning tasks of its
 * conv and dense nodes. */
#include "dtune/graph.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/util.h"

static const char *const op_names[DT_GRAPH_OP_COUNT] = {
    [DT_GRAPH_CONV] = "conv",
    [DT_GRAPH_DENSE] = "dense",
    [DT_GRAPH_MAX_POOL] = "max_pool",
    [DT_GRAPH_AVG_POOL] = "avg_pool",
    [DT_GRAPH_GLOBAL_AVG_POOL] = "global_avg_pool",
    [DT_GRAPH_ADD] = "add",
    [DT_GRAPH_ACT] = "act",
    [DT_GRAPH_CONCAT] = "concat",
    [DT_GRAPH_FLATTEN] = "flatten",
};

/* Conv and dense nodes run a tuned kernel and have a task and an epilogue. */
static bool runs_kernel(dt_graph_op op)
{
    return op == DT_GRAPH_CONV || op == DT_GRAPH_DENSE;
}

const char *dt_graph_op_name(dt_graph_op op)
{
    return (unsigned)op < DT_GRAPH_OP_COUNT ? op_names[op] : NULL;
}

dt_graph *dt_graph_new(const char *name)
{
    dt_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    snprintf(g->name, sizeof g->name, "%s", name);
    g->input = g->output = -1;
    return g;
}

void dt_graph_free(dt_graph *g)
{
    if (!g)
        return;
    free(g->tensors);
    free(g->nodes);
    free(g->weights);
    free(g);
}

int dt_graph_find_tensor(const dt_graph *g, const char *name)
{
    for (int t = 0; t < g->ntensors; t++)
        if (strcmp(g->tensors[t].name, name) == 0)
            return t;
    return -1;
}

size_t dt_graph_tensor_elements(const dt_graph *g, int t)
{
    size_t n = 1;
    for (int d = 0; d < g->tensors[t].ndims; d++)
        n *= (size_t)g->tensors[t].dims[d];
    return n;
}

const float *dt_graph_constant(const dt_graph *g, int t)
{
    return g->tensors[t].constant ? g->weights + g->tensors[t].offset : NULL;
}

static int check_dims(const char *name, int ndims, const int *dims, dt_error *err)
{
    if (ndims < 1 || ndims > DT_GRAPH_MAX_DIMS)
        return dt_error_set(err, DT_EINVAL, "tensor '%s' has %d dimensions; 1 to %d are supported", name,
                            ndims, DT_GRAPH_MAX_DIMS);
    int64_t n = 1;
    for (int d = 0; d < ndims; d++) {
        if (dims[d] < 1)
            return dt_error_set(err, DT_EINVAL, "tensor '%s': dimension %d is %d; expected at least 1", name,
                                d, dims[d]);
        n *= dims[d];
        if (n > DT_TENSOR_MAX_ELEMENTS)
            return dt_error_set(err, DT_EINVAL, "tensor '%s' has more than %lld elements", name,
                                (long long)DT_TENSOR_MAX_ELEMENTS);
    }
    return 0;
}

static int add_constant(dt_graph *g, dt_graph_tensor *t, const float *data, size_t n, dt_error *err)
{
    if (dt_grow(&g->weights, &g->cap_weights, g->nweights + n, sizeof *g->weights) != 0)
        return dt_error_set(err, DT_ENOMEM, "out of memory for the weights of '%s'", t->name);
    t->constant = true;
    t->offset = g->nweights;
    memcpy(g->weights + g->nweights, data, n * sizeof *data);
    g->nweights += n;
    return 0;
}

int dt_graph_add_tensor(dt_graph *g, const char *name, int ndims, const int *dims,
                        const float *data, dt_error *err)
{
    if (strlen(name) >= DT_NAME_MAX)
        return dt_error_set(err, DT_EINVAL, "tensor name '%.40s...' is longer than %d bytes", name,
                            DT_NAME_MAX - 1);
    if (dt_graph_find_tensor(g, name) >= 0)
        return dt_error_set(err, DT_EINVAL, "tensor '%s' is defined twice", name);
    int rc = check_dims(name, ndims, dims, err);
    if (rc)
        return rc;
    if (dt_grow(&g->tensors, &g->cap_tensors, (size_t)g->ntensors + 1, sizeof *g->tensors) != 0)
        return dt_error_set(err, DT_ENOMEM, "out of memory for tensor '%s'", name);
    dt_graph_tensor t = { .ndims = ndims };
    snprintf(t.name, sizeof t.name, "%s", name);
    memcpy(t.dims, dims, (size_t)ndims * sizeof *dims);
    size_t n = 1;
    for (int d = 0; d < ndims; d++)
        n *= (size_t)dims[d];
    if (data && (rc = add_constant(g, &t, data, n, err)))
        return rc;
    g->tensors[g->ntensors] = t;
    return g->ntensors++;
}

/* The node (of the first n) that writes tensor t, or -1. */
static int producer(const dt_graph *g, int n, int t)
{
    for (int i = 0; i < n; i++)
        if (g->nodes[i].output == t)
            return i;
    return -1;
}

/* An input must exist and be the graph's input, a constant or an earlier
 * node's output: the order of the nodes is then an order to run them in. */
static int check_input(const dt_graph *g, const dt_graph_node *node, int t, dt_error *err)
{
    if (t < 0 || t >= g->ntensors)
        return dt_error_set(err, DT_EINVAL, "node '%s': input tensor %d does not exist", node->name, t);
    if (t == node->output)
        return dt_error_set(err, DT_EINVAL, "node '%s' reads its own output '%s'", node->name,
                            g->tensors[t].name);
    if (t != g->input && !g->tensors[t].constant && producer(g, g->nnodes, t) < 0)
        return dt_error_set(err, DT_EINVAL, "node '%s': input '%s' is not computed before it", node->name,
                            g->tensors[t].name);
    return 0;
}

static int check_node(const dt_graph *g, const dt_graph_node *node, dt_error *err)
{
    if (!node->name[0])
        return dt_error_set(err, DT_EINVAL, "a node of op %s has no name",
                            dt_graph_op_name(node->op) ? dt_graph_op_name(node->op) : "?");
    if ((unsigned)node->op >= DT_GRAPH_OP_COUNT)
        return dt_error_set(err, DT_EINVAL, "node '%s': op %d is not a graph op", node->name, (int)node->op);
    if (node->ninputs < 1 || node->ninputs > DT_GRAPH_MAX_INPUTS)
        return dt_error_set(err, DT_EINVAL, "node '%s' has %d inputs; 1 to %d are supported", node->name,
                            node->ninputs, DT_GRAPH_MAX_INPUTS);
    if (node->output < 0 || node->output >= g->ntensors || g->tensors[node->output].constant
        || node->output == g->input)
        return dt_error_set(err, DT_EINVAL, "node '%s': its output is not an activation tensor", node->name);
    if (producer(g, g->nnodes, node->output) >= 0)
        return dt_error_set(err, DT_EINVAL, "node '%s': tensor '%s' is already written by node '%s'",
                            node->name, g->tensors[node->output].name,
                            g->nodes[producer(g, g->nnodes, node->output)].name);
    int rc = 0;
    for (int i = 0; i < node->ninputs && rc == 0; i++)
        rc = check_input(g, node, node->inputs[i], err);
    if (rc == 0 && runs_kernel(node->op) && node->epilogue.bias >= 0
        && !g->tensors[node->epilogue.bias].constant)
        return dt_error_set(err, DT_EINVAL, "node '%s': its bias is not a constant", node->name);
    if (rc == 0 && runs_kernel(node->op) && node->epilogue.residual >= 0)
        rc = check_input(g, node, node->epilogue.residual, err);
    return rc;
}

int dt_graph_add_node(dt_graph *g, const dt_graph_node *node, dt_error *err)
{
    int rc = check_node(g, node, err);
    if (rc)
        return rc;
    if (dt_grow(&g->nodes, &g->cap_nodes, (size_t)g->nnodes + 1, sizeof *g->nodes) != 0)
        return dt_error_set(err, DT_ENOMEM, "out of memory for node '%s'", node->name);
    g->nodes[g->nnodes] = *node;
    if (!runs_kernel(node->op))
        g->nodes[g->nnodes].task = -1;
    return g->nnodes++;
}

static int add_node_task(dt_graph_node *node, dt_model *m, dt_error *err)
{
    dt_task t = node->attr.kernel;
    snprintf(t.name, sizeof t.name, "%s", node->name);
    t.count = 1;
    t.epilogue = (dt_task_epilogue){ .bias = node->epilogue.bias >= 0,
                                     .residual = node->epilogue.residual >= 0,
                                     .act = node->epilogue.act };
    dt_error sub;
    if (dt_task_finish(&t, &sub) != 0)
        return dt_error_set(err, DT_EINVAL, "node '%s': %s", node->name, sub.msg);
    int k = dt_model_add_task(m, &t);
    if (k == DT_EINVAL)
        return dt_error_set(err, DT_EINVAL, "node '%s': more than %d nodes share its shape", node->name,
                            DT_MODEL_INT_MAX);
    if (k < 0)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    node->task = k;
    return 0;
}

int dt_graph_tasks(dt_graph *g, const char *path, dt_model **out, dt_error *err)
{
    dt_model *m = calloc(1, sizeof *m);
    if (!m)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    snprintf(m->name, sizeof m->name, "%s", g->name);
    snprintf(m->path, sizeof m->path, "%s", path ? path : "");
    m->batch = g->input >= 0 ? g->tensors[g->input].dims[0] : 1;
    int rc = 0;
    for (int i = 0; i < g->nnodes && rc == 0; i++)
        if (runs_kernel(g->nodes[i].op))
            rc = add_node_task(&g->nodes[i], m, err);
    if (rc == 0 && m->ntasks == 0)
        rc = dt_error_set(err, DT_EINVAL, "graph %s has no conv or dense node: nothing to tune", g->name);
    if (rc) {
        dt_model_free(m);
        return rc;
    }
    *out = m;
    return 0;
}
