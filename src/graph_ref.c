/* graph_ref.c — a network graph checked and run by plain loops (graph_ref.h).
 *
 * The check walks the nodes once and derives each node's output shape from
 * its inputs and attributes, so a faster runner (the network export) can
 * trust every size it reads from the graph. The run gives each activation
 * its own buffer, runs the nodes in order and frees everything: the obvious
 * form, never the fast one.
 */
#include "dtune/graph_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shapes -------------------------------------------------------------------- */

int dt_graph_ref_pool_size(const dt_pool_attr *p, int h, int w, int *oh, int *ow)
{
    const int in[2] = { h, w }, k[2] = { p->kh, p->kw }, s[2] = { p->sh, p->sw };
    const int begin[2] = { p->pad_top, p->pad_left }, end[2] = { p->pad_bottom, p->pad_right };
    int out[2];
    for (int d = 0; d < 2; d++) {
        if (k[d] < 1 || s[d] < 1 || begin[d] < 0 || end[d] < 0 || in[d] + begin[d] + end[d] < k[d])
            return DT_EINVAL;
        int span = in[d] + begin[d] + end[d] - k[d];
        out[d] = (p->ceil_mode ? (span + s[d] - 1) / s[d] : span / s[d]) + 1;
        /* a ceil window starting in the end padding (or past it) is dropped */
        if (p->ceil_mode && (out[d] - 1) * s[d] >= in[d] + begin[d])
            out[d]--;
    }
    *oh = out[0];
    *ow = out[1];
    return 0;
}

static const dt_graph_tensor *tensor(const dt_graph *g, int t)
{
    return &g->tensors[t];
}

/* Whether tensor t has the ndims dims given. */
static bool has_dims(const dt_graph *g, int t, int ndims, const int *dims)
{
    if (tensor(g, t)->ndims != ndims)
        return false;
    for (int d = 0; d < ndims; d++)
        if (tensor(g, t)->dims[d] != dims[d])
            return false;
    return true;
}

static bool same_dims(const dt_graph *g, int a, int b)
{
    return has_dims(g, a, tensor(g, b)->ndims, tensor(g, b)->dims);
}

/* "[1,64,56,56]" into buf. */
static const char *dims_str(const dt_graph *g, int t, char *buf, size_t len)
{
    size_t j = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < tensor(g, t)->ndims && j < len; d++)
        j += (size_t)snprintf(buf + j, len - j, "%s%d", d ? "," : "", tensor(g, t)->dims[d]);
    if (j < len)
        snprintf(buf + j, len - j, "]");
    return buf;
}

static int wrong_shape(const dt_graph *g, const dt_graph_node *node, int t, const char *what,
                       int ndims, const int *want, dt_error *err)
{
    char have[96], expect[96] = "[";
    size_t j = 1;
    for (int d = 0; d < ndims && j < sizeof expect; d++)
        j += (size_t)snprintf(expect + j, sizeof expect - j, "%s%d", d ? "," : "", want[d]);
    if (j < sizeof expect)
        snprintf(expect + j, sizeof expect - j, "]");
    return dt_error_set(err, DT_EINVAL, "node '%s' (%s): %s '%s' is %s; expected %s", node->name,
                        dt_graph_op_name(node->op), what, tensor(g, t)->name,
                        dims_str(g, t, have, sizeof have), expect);
}

static int expect_dims(const dt_graph *g, const dt_graph_node *node, int t, const char *what,
                       int ndims, const int *want, dt_error *err)
{
    return has_dims(g, t, ndims, want) ? 0 : wrong_shape(g, node, t, what, ndims, want, err);
}

static int expect_inputs(const dt_graph_node *node, int lo, int hi, dt_error *err)
{
    if (node->ninputs >= lo && node->ninputs <= hi)
        return 0;
    return dt_error_set(err, DT_EINVAL, "node '%s' (%s) has %d inputs; it takes %d%s", node->name,
                        dt_graph_op_name(node->op), node->ninputs, lo, hi > lo ? " or more" : "");
}

/* The node's kernel geometry completed (oh, ow, flops) into *task. */
static int kernel_task(const dt_graph_node *node, dt_task *task, dt_error *err)
{
    *task = node->attr.kernel;
    snprintf(task->name, sizeof task->name, "%s", node->name);
    task->count = 1;
    dt_error sub;
    bool conv = node->op == DT_GRAPH_CONV;
    if (conv != (task->kind == DT_OP_CONV2D || task->kind == DT_OP_DEPTHWISE_CONV2D) ||
        (!conv && task->kind != DT_OP_DENSE))
        return dt_error_set(err, DT_EINVAL, "node '%s' (%s): its kernel is a %s", node->name,
                            dt_graph_op_name(node->op),
                            dt_op_kind_name(task->kind) ? dt_op_kind_name(task->kind) : "?");
    if (dt_task_finish(task, &sub) != 0)
        return dt_error_set(err, DT_EINVAL, "node '%s': %s", node->name, sub.msg);
    return 0;
}

static int check_epilogue(const dt_graph *g, const dt_graph_node *node, int channels, dt_error *err)
{
    const dt_epilogue *e = &node->epilogue;
    if (e->bias >= 0 && (e->bias >= g->ntensors || !tensor(g, e->bias)->constant ||
                         dt_graph_tensor_elements(g, e->bias) != (size_t)channels))
        return dt_error_set(err, DT_EINVAL, "node '%s': its bias is not a constant of %d floats",
                            node->name, channels);
    if (e->residual >= 0 && !same_dims(g, e->residual, node->output))
        return wrong_shape(g, node, e->residual, "residual", tensor(g, node->output)->ndims,
                           tensor(g, node->output)->dims, err);
    if ((unsigned)e->act > DT_ACT_RELU6)
        return dt_error_set(err, DT_EINVAL, "node '%s': activation %d is not one of none, relu, relu6",
                            node->name, (int)e->act);
    return 0;
}

static int check_kernel(const dt_graph *g, const dt_graph_node *node, dt_error *err)
{
    dt_task t;
    int rc = expect_inputs(node, 2, 2, err);
    rc = rc ? rc : kernel_task(node, &t, err);
    if (rc)
        return rc;
    int x = node->inputs[0], w = node->inputs[1], y = node->output;
    if (!tensor(g, w)->constant)
        return dt_error_set(err, DT_EINVAL, "node '%s': its weight '%s' is not a constant", node->name,
                            tensor(g, w)->name);
    if (node->op == DT_GRAPH_DENSE) {
        const dt_mm_shape *m = &t.mm;
        rc = expect_dims(g, node, x, "input", 2, (int[]){ m->m, m->k }, err);
        rc = rc ? rc : expect_dims(g, node, w, "weight", 2, (int[]){ m->n, m->k }, err);
        rc = rc ? rc : expect_dims(g, node, y, "output", 2, (int[]){ m->m, m->n }, err);
        return rc ? rc : check_epilogue(g, node, m->n, err);
    }
    const dt_conv_shape *c = &t.conv;
    int per_out = t.kind == DT_OP_CONV2D ? c->c_in : 1;
    rc = expect_dims(g, node, x, "input", 4, (int[]){ c->n, c->c_in, c->h, c->w }, err);
    rc = rc ? rc : expect_dims(g, node, w, "weight", 4, (int[]){ c->c_out, per_out, c->kh, c->kw }, err);
    rc = rc ? rc : expect_dims(g, node, y, "output", 4, (int[]){ c->n, c->c_out, c->oh, c->ow }, err);
    return rc ? rc : check_epilogue(g, node, c->c_out, err);
}

static int check_pool(const dt_graph *g, const dt_graph_node *node, dt_error *err)
{
    int rc = expect_inputs(node, 1, 1, err);
    if (rc)
        return rc;
    const dt_graph_tensor *x = tensor(g, node->inputs[0]);
    if (x->ndims != 4)
        return dt_error_set(err, DT_EINVAL, "node '%s' (%s): input '%s' is not 4-D", node->name,
                            dt_graph_op_name(node->op), x->name);
    int oh = 1, ow = 1;
    if (node->op != DT_GRAPH_GLOBAL_AVG_POOL &&
        dt_graph_ref_pool_size(&node->attr.pool, x->dims[2], x->dims[3], &oh, &ow) != 0)
        return dt_error_set(err, DT_EINVAL, "node '%s' (%s): window %dx%d, stride %dx%d, pads "
                            "%d,%d,%d,%d do not fit its %dx%d input", node->name,
                            dt_graph_op_name(node->op), node->attr.pool.kh, node->attr.pool.kw,
                            node->attr.pool.sh, node->attr.pool.sw, node->attr.pool.pad_top,
                            node->attr.pool.pad_left, node->attr.pool.pad_bottom,
                            node->attr.pool.pad_right, x->dims[2], x->dims[3]);
    return expect_dims(g, node, node->output, "output", 4,
                       (int[]){ x->dims[0], x->dims[1], oh, ow }, err);
}

static int check_concat(const dt_graph *g, const dt_graph_node *node, dt_error *err)
{
    const dt_graph_tensor *y = tensor(g, node->output);
    int channels = 0;
    for (int i = 0; i < node->ninputs; i++) {
        int x = node->inputs[i];
        int want[DT_GRAPH_MAX_DIMS];
        memcpy(want, y->dims, sizeof want);
        want[1] = tensor(g, x)->ndims >= 2 ? tensor(g, x)->dims[1] : 0;
        channels += want[1];
        int rc = y->ndims < 2 ? DT_EINVAL : expect_dims(g, node, x, "input", y->ndims, want, err);
        if (rc)
            return y->ndims < 2 ? dt_error_set(err, rc, "node '%s' (concat): its output has no "
                                               "channel axis", node->name) : rc;
    }
    if (channels != y->dims[1])
        return dt_error_set(err, DT_EINVAL, "node '%s' (concat): its inputs have %d channels, its "
                            "output '%s' %d", node->name, channels, y->name, y->dims[1]);
    return 0;
}

static int check_node_shapes(const dt_graph *g, const dt_graph_node *node, dt_error *err)
{
    int x = node->inputs[0], y = node->output, rc;
    switch (node->op) {
    case DT_GRAPH_CONV:
    case DT_GRAPH_DENSE:
        return check_kernel(g, node, err);
    case DT_GRAPH_MAX_POOL:
    case DT_GRAPH_AVG_POOL:
    case DT_GRAPH_GLOBAL_AVG_POOL:
        return check_pool(g, node, err);
    case DT_GRAPH_ADD:
        rc = expect_inputs(node, 2, 2, err);
        rc = rc ? rc : expect_dims(g, node, x, "input", tensor(g, y)->ndims, tensor(g, y)->dims, err);
        return rc ? rc : expect_dims(g, node, node->inputs[1], "input", tensor(g, y)->ndims,
                                     tensor(g, y)->dims, err);
    case DT_GRAPH_ACT:
        rc = expect_inputs(node, 1, 1, err);
        if (rc == 0 && (unsigned)node->attr.act > DT_ACT_RELU6)
            rc = dt_error_set(err, DT_EINVAL, "node '%s': activation %d is not one of none, relu, "
                              "relu6", node->name, (int)node->attr.act);
        return rc ? rc : expect_dims(g, node, x, "input", tensor(g, y)->ndims, tensor(g, y)->dims, err);
    case DT_GRAPH_CONCAT:
        return check_concat(g, node, err);
    case DT_GRAPH_FLATTEN:
        rc = expect_inputs(node, 1, 1, err);
        if (rc)
            return rc;
        size_t n = dt_graph_tensor_elements(g, x);
        return expect_dims(g, node, y, "output", 2,
                           (int[]){ tensor(g, x)->dims[0], (int)(n / (size_t)tensor(g, x)->dims[0]) },
                           err);
    default:
        return dt_error_set(err, DT_EINVAL, "node '%s': op %d is not a graph op", node->name,
                            (int)node->op);
    }
}

int dt_graph_ref_check(const dt_graph *g, dt_error *err)
{
    if (g->input < 0 || g->input >= g->ntensors || tensor(g, g->input)->constant)
        return dt_error_set(err, DT_EINVAL, "graph %s has no input tensor", g->name);
    bool written = false;
    for (int i = 0; i < g->nnodes; i++)
        written = written || g->nodes[i].output == g->output;
    if (g->output < 0 || g->output >= g->ntensors || !written)
        return dt_error_set(err, DT_EINVAL, "graph %s: no node writes its output tensor", g->name);
    for (int i = 0; i < g->nnodes; i++) {
        int rc = check_node_shapes(g, &g->nodes[i], err);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- the plain loops ------------------------------------------------------------- */

static float act_of(dt_act act, float v)
{
    if (act == DT_ACT_RELU)
        return v > 0 ? v : 0;
    if (act == DT_ACT_RELU6)
        return v < 0 ? 0 : v > 6 ? 6 : v;
    return v;
}

/* Y = act(Y + bias[channel] + R), in that order; channel = (i / inner) % channels. */
static void run_epilogue(const dt_graph *g, const dt_graph_node *node, float *y, const float *residual)
{
    const dt_graph_tensor *out = tensor(g, node->output);
    size_t n = dt_graph_tensor_elements(g, node->output);
    size_t channels = (size_t)out->dims[1], inner = n / ((size_t)out->dims[0] * channels);
    const float *bias = node->epilogue.bias >= 0 ? dt_graph_constant(g, node->epilogue.bias) : NULL;
    for (size_t i = 0; i < n; i++) {
        float v = y[i];
        if (bias)
            v += bias[i / inner % channels];
        if (residual)
            v += residual[i];
        y[i] = act_of(node->epilogue.act, v);
    }
}

static void run_kernel(const dt_graph *g, const dt_graph_node *node, float *const *buf)
{
    dt_task t;
    kernel_task(node, &t, NULL);   /* checked */
    dt_task_reference(&t, buf[node->inputs[0]], buf[node->inputs[1]], buf[node->output]);
    run_epilogue(g, node, buf[node->output],
                 node->epilogue.residual >= 0 ? buf[node->epilogue.residual] : NULL);
}

/* One plane of a max or average pool. */
static void pool_plane(const dt_pool_attr *p, bool max, const float *x, int h, int w, float *y,
                       int oh, int ow)
{
    for (int i = 0; i < oh; i++)
    for (int j = 0; j < ow; j++) {
        int h0 = i * p->sh - p->pad_top, w0 = j * p->sw - p->pad_left;
        int h1 = h0 + p->kh, w1 = w0 + p->kw;
        /* the padded window, clipped to the padded input: the divisor with padding */
        int ph1 = h1 < h + p->pad_bottom ? h1 : h + p->pad_bottom;
        int pw1 = w1 < w + p->pad_right ? w1 : w + p->pad_right;
        int padded = (ph1 - h0) * (pw1 - w0), inside = 0;
        double acc = max ? -INFINITY : 0;
        for (int r = h0 < 0 ? 0 : h0; r < (h1 < h ? h1 : h); r++)
        for (int s = w0 < 0 ? 0 : w0; s < (w1 < w ? w1 : w); s++) {
            double v = x[(size_t)r * w + s];
            acc = max ? (v > acc ? v : acc) : acc + v;
            inside++;
        }
        if (!max)
            acc = acc / (p->count_include_pad ? padded : inside > 0 ? inside : 1);
        y[(size_t)i * ow + j] = (float)acc;
    }
}

static void run_pool(const dt_graph *g, const dt_graph_node *node, float *const *buf)
{
    const dt_graph_tensor *x = tensor(g, node->inputs[0]), *y = tensor(g, node->output);
    size_t planes = (size_t)x->dims[0] * x->dims[1];
    size_t in_plane = (size_t)x->dims[2] * x->dims[3], out_plane = (size_t)y->dims[2] * y->dims[3];
    const float *in = buf[node->inputs[0]];
    float *out = buf[node->output];
    for (size_t c = 0; c < planes; c++) {
        if (node->op == DT_GRAPH_GLOBAL_AVG_POOL) {
            double sum = 0;
            for (size_t i = 0; i < in_plane; i++)
                sum += in[c * in_plane + i];
            out[c] = (float)(sum / (double)in_plane);
        } else {
            pool_plane(&node->attr.pool, node->op == DT_GRAPH_MAX_POOL, in + c * in_plane,
                       x->dims[2], x->dims[3], out + c * out_plane, y->dims[2], y->dims[3]);
        }
    }
}

static void run_concat(const dt_graph *g, const dt_graph_node *node, float *const *buf)
{
    const dt_graph_tensor *y = tensor(g, node->output);
    size_t outer = (size_t)y->dims[0], total = dt_graph_tensor_elements(g, node->output) / outer;
    size_t offset = 0;
    for (int i = 0; i < node->ninputs; i++) {
        size_t part = dt_graph_tensor_elements(g, node->inputs[i]) / outer;
        for (size_t n = 0; n < outer; n++)
            memcpy(buf[node->output] + n * total + offset, buf[node->inputs[i]] + n * part,
                   part * sizeof(float));
        offset += part;
    }
}

static void run_node(const dt_graph *g, const dt_graph_node *node, float *const *buf)
{
    size_t n = dt_graph_tensor_elements(g, node->output);
    const float *a = buf[node->inputs[0]];
    float *y = buf[node->output];
    switch (node->op) {
    case DT_GRAPH_CONV:
    case DT_GRAPH_DENSE:
        run_kernel(g, node, buf);
        break;
    case DT_GRAPH_MAX_POOL:
    case DT_GRAPH_AVG_POOL:
    case DT_GRAPH_GLOBAL_AVG_POOL:
        run_pool(g, node, buf);
        break;
    case DT_GRAPH_ADD:
        for (size_t i = 0; i < n; i++)
            y[i] = a[i] + buf[node->inputs[1]][i];
        break;
    case DT_GRAPH_ACT:
        for (size_t i = 0; i < n; i++)
            y[i] = act_of(node->attr.act, a[i]);
        break;
    case DT_GRAPH_CONCAT:
        run_concat(g, node, buf);
        break;
    default:   /* flatten: the same floats */
        memcpy(y, a, n * sizeof *y);
        break;
    }
}

int dt_graph_ref_run(const dt_graph *g, const float *input, float *output, dt_error *err)
{
    int rc = dt_graph_ref_check(g, err);
    if (rc)
        return rc;
    float **buf = calloc((size_t)g->ntensors, sizeof *buf);
    if (!buf)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    for (int t = 0; t < g->ntensors; t++)
        if (tensor(g, t)->constant)
            buf[t] = (float *)dt_graph_constant(g, t);
    buf[g->input] = (float *)input;
    for (int i = 0; i < g->nnodes && rc == 0; i++) {
        int y = g->nodes[i].output;
        buf[y] = malloc(dt_graph_tensor_elements(g, y) * sizeof(float));
        if (!buf[y])
            rc = dt_error_set(err, DT_ENOMEM, "out of memory for tensor '%s'", tensor(g, y)->name);
        else
            run_node(g, &g->nodes[i], buf);
    }
    if (rc == 0)
        memcpy(output, buf[g->output], dt_graph_tensor_elements(g, g->output) * sizeof *output);
    for (int i = 0; i < g->nnodes; i++)
        free(buf[g->nodes[i].output]);
    free(buf);
    return rc;
}
