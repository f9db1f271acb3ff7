/* onnx.c — an ONNX file into a network graph (onnx.h).
 *
 * protobuf-c unpacks the ModelProto (the C comes from onnx.proto at build
 * time). The import then works in three passes over the ONNX nodes (the
 * second one's converters and the import's own graph are onnx_ir.c's):
 *   1. order: every input of every node is tied to the node that writes it,
 *      an initializer or the graph's input (else: a missing initializer or
 *      input), and the nodes are sorted by Kahn's algorithm, keeping the
 *      file's order where it is free (else: a cycle);
 *   2. convert: in that order, each node becomes a node of the import's own
 *      list (ir_node) through one table of converters (ops[]), shapes
 *      inferred as it goes from the input's shape and the initializers;
 *      a batch-norm, bias, ReLU / ReLU6 or residual add that follows a conv
 *      or dense whose output feeds nothing else joins it instead (the
 *      fused form of graph.h), and Dropout and Identity only rename;
 *   3. emit: the list goes into a dt_graph, again by Kahn's algorithm,
 *      since a fused node must wait for its residual, whose producer may
 *      come after the conv in the file; constants are added when a node
 *      first reads them, so the weights block holds only what runs, in run
 *      order.
 * Every refusal names the file, and the node, its op type and the opset.
 */
#include "dtune/onnx.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx_ir.h"

#include "dtune/util.h"

dt_onnx_options dt_onnx_default_options(void)
{
    return (dt_onnx_options){ .input_ndims = 0 };
}

int dt_onnx_parse_shape(const char *text, dt_onnx_options *opts, dt_error *err)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > DT_MODEL_INT_MAX || (*end && *end != ',') || n == DT_GRAPH_MAX_DIMS)
            return dt_error_set(err, DT_EINVAL, "input shape '%s': expected 1 to %d positive integers "
                                "separated by commas, e.g. 1,3,224,224", text, DT_GRAPH_MAX_DIMS);
        opts->input_dims[n++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return dt_error_set(err, DT_EINVAL, "input shape '%s' ends with a comma", text);
    }
    if (n == 0)
        return dt_error_set(err, DT_EINVAL, "input shape is empty; expected e.g. 1,3,224,224");
    opts->input_ndims = n;
    return 0;
}

/* ---- pass 1: order -------------------------------------------------------- */

/* Gives node k its name: its own made [A-Za-z0-9_], or OpType_k; unique. */
static int name_node(importer *im, int k, char *out)
{
    const Onnx__NodeProto *n = im->graph->node[k];
    char base[DT_NAME_MAX - 8];
    dt_onnx_ir_sanitize(n->name ? n->name : "", base, sizeof base);
    if (!base[0])
        snprintf(base, sizeof base, "%.30s_%d", n->op_type && n->op_type[0] ? n->op_type : "node", k);
    snprintf(out, DT_NAME_MAX, "%s", base);
    for (int i = 2; dt_onnx_ir_name_get(&im->node_names, out, -1) >= 0; i++)
        snprintf(out, DT_NAME_MAX, "%.50s_%d", base, i);
    char *copy = strdup(out);
    if (!copy || dt_onnx_ir_name_put(&im->node_names, copy, k)) {
        free(copy);
        return dt_onnx_ir_oom(im);
    }
    return 0;
}

/* Node k's input name: the graph input, an initializer, or some node's
 * output; else an error naming it. */
static int check_source(importer *im, int k, const char *name, const char *input_name_)
{
    if (strcmp(name, input_name_) == 0 || dt_onnx_ir_name_get(&im->initializers, name, -1) >= 0 ||
        dt_onnx_ir_name_get(&im->producers, name, -1) >= 0)
        return 0;
    const Onnx__NodeProto *n = im->graph->node[k];
    for (size_t i = 0; i < im->graph->n_input; i++)
        if (im->graph->input[i]->name && strcmp(im->graph->input[i]->name, name) == 0)
            return dt_error_set(im->err, DT_EINVAL, "%s: node '%s' (%s): input '%s' is a graph input without "
                                "an initializer (a missing initializer?); dtune takes one input, '%s'",
                                im->path, dt_onnx_ir_str(n->name), n->op_type, name, input_name_);
    return dt_error_set(im->err, DT_EINVAL, "%s: node '%s' (%s): input '%s' is no initializer, graph input "
                        "or node output (a missing initializer?)", im->path, dt_onnx_ir_str(n->name), n->op_type, name);
}

/* Kahn's algorithm on the ONNX nodes, the earliest ready node first. */
static int sort_nodes(importer *im, const char *input)
{
    size_t n = im->graph->n_node;
    int *waiting = calloc(n ? n : 1, sizeof *waiting);
    bool *done = calloc(n ? n : 1, sizeof *done);
    im->order = malloc((n ? n : 1) * sizeof *im->order);
    if (!waiting || !done || !im->order) {
        free(waiting);
        free(done);
        return dt_onnx_ir_oom(im);
    }
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < im->graph->node[k]->n_input; i++)
            if (im->graph->node[k]->input[i][0] && strcmp(im->graph->node[k]->input[i], input) != 0 &&
                dt_onnx_ir_name_get(&im->initializers, im->graph->node[k]->input[i], -1) < 0)
                waiting[k]++;
    int rc = 0;
    for (size_t placed = 0; placed < n && rc == 0; placed++) {
        size_t k = 0;
        while (k < n && (done[k] || waiting[k] > 0))
            k++;
        if (k == n) {
            k = 0;
            while (done[k])
                k++;
            rc = dt_error_set(im->err, DT_EINVAL, "%s: the graph has a cycle: node '%s' (%s) waits on its own "
                              "output through other nodes", im->path, dt_onnx_ir_str(im->graph->node[k]->name),
                              im->graph->node[k]->op_type);
            break;
        }
        done[k] = true;
        im->order[placed] = (int)k;
        const Onnx__NodeProto *p = im->graph->node[k];
        for (size_t o = 0; o < p->n_output; o++)
            for (size_t j = 0; p->output[o][0] && j < n; j++)
                for (size_t i = 0; i < im->graph->node[j]->n_input; i++)
                    if (strcmp(im->graph->node[j]->input[i], p->output[o]) == 0)
                        waiting[j]--;
    }
    free(waiting);
    free(done);
    return rc;
}

/* Producers of every value, every input's source, the run order, and how
 * many nodes read each value (through Identity and Dropout, which only
 * rename). */
static int order_nodes(importer *im, const char *input)
{
    const Onnx__GraphProto *g = im->graph;
    for (size_t k = 0; k < g->n_node; k++)
        for (size_t o = 0; o < g->node[k]->n_output; o++) {
            const char *out = g->node[k]->output[o];
            int other = out[0] ? dt_onnx_ir_name_get(&im->producers, out, -1) : -1;
            bool initializer = out[0] && dt_onnx_ir_name_get(&im->initializers, out, -1) >= 0;
            if (other >= 0 || initializer || (out[0] && strcmp(out, input) == 0))
                return dt_error_set(im->err, DT_EINVAL, "%s: value '%s' is written twice (node '%s' (%s))",
                                    im->path, out, dt_onnx_ir_str(g->node[k]->name), g->node[k]->op_type);
            if (out[0] && dt_onnx_ir_name_put(&im->producers, out, (int)k))
                return dt_onnx_ir_oom(im);
        }
    for (size_t k = 0; k < g->n_node; k++)
        for (size_t i = 0; i < g->node[k]->n_input; i++) {
            int rc = g->node[k]->input[i][0] ? check_source(im, (int)k, g->node[k]->input[i], input) : 0;
            if (rc)
                return rc;
        }
    int rc = sort_nodes(im, input);
    if (rc)
        return rc;
    /* reads, counted on the value an Identity or Dropout chain renames */
    name_map root = { 0 };
    for (size_t j = 0; j < g->n_node && rc == 0; j++) {
        const Onnx__NodeProto *n = g->node[im->order[j]];
        bool renames = dt_onnx_ir_default_domain(n->domain) && (strcmp(n->op_type, "Identity") == 0 ||
                                                      strcmp(n->op_type, "Dropout") == 0);
        for (size_t i = 0; i < n->n_input && rc == 0; i++) {
            if (!n->input[i][0] || (renames && i > 0))
                continue;
            int r = dt_onnx_ir_name_get(&root, n->input[i], -1);
            const char *src = r >= 0 ? g->node[r]->input[0] : n->input[i];
            if (renames && n->n_output > 0 && n->output[0][0])
                rc = dt_onnx_ir_name_put(&root, n->output[0], r >= 0 ? r : im->order[j]);
            else
                rc = dt_onnx_ir_name_put(&im->uses, src, dt_onnx_ir_name_get(&im->uses, src, 0) + 1);
        }
    }
    for (size_t o = 0; o < g->n_output && rc == 0; o++) {
        int r = dt_onnx_ir_name_get(&root, g->output[o]->name, -1);
        const char *src = r >= 0 ? g->node[r]->input[0] : g->output[o]->name;
        rc = dt_onnx_ir_name_put(&im->uses, src, dt_onnx_ir_name_get(&im->uses, src, 0) + 1);
    }
    /* a renamed value's readers are its source's */
    for (size_t k = 0; k < root.cap && rc == 0; k++)
        if (root.keys[k])
            rc = dt_onnx_ir_name_put(&im->uses, root.keys[k],
                                     dt_onnx_ir_name_get(&im->uses, g->node[root.vals[k]]->input[0], 0));
    dt_onnx_ir_name_map_free(&root);
    return rc ? dt_onnx_ir_oom(im) : 0;
}

/* ---- the input, the opset, the whole file ---------------------------------- */

static int read_opset(importer *im, const Onnx__ModelProto *model)
{
    im->opset = -1;
    for (size_t i = 0; i < model->n_opset_import; i++)
        if (dt_onnx_ir_default_domain(model->opset_import[i]->domain) && model->opset_import[i]->has_version)
            im->opset = model->opset_import[i]->version;
    if (im->opset < 0)
        return dt_error_set(im->err, DT_EINVAL, "%s: the model imports no opset of the default ONNX domain",
                            im->path);
    if (im->opset < DT_ONNX_OPSET_MIN || im->opset > DT_ONNX_OPSET_MAX)
        return dt_error_set(im->err, DT_EINVAL, "%s: opset %lld of the default ONNX domain; dtune import "
                            "reads opsets %d to %d (convert it with onnx.version_converter)", im->path,
                            (long long)im->opset, DT_ONNX_OPSET_MIN, DT_ONNX_OPSET_MAX);
    return 0;
}

/* The graph's one input that is no initializer, its shape from opts or the
 * file; its value created. */
static int read_input(importer *im, const Onnx__ValueInfoProto *in)
{
    const Onnx__TypeProto__Tensor *tt = in->type ? in->type->tensor_type : NULL;
    if (!tt || (tt->has_elem_type && tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT))
        return dt_error_set(im->err, DT_EINVAL, "%s: input '%s' is not a FLOAT tensor (it is %s)", im->path,
                            in->name, tt ? dt_onnx_ir_type_name(tt->elem_type) : "no tensor");
    int dims[DT_GRAPH_MAX_DIMS], ndims = im->opts->input_ndims;
    const Onnx__TensorShapeProto *shape = tt->shape;
    if (shape && ndims && shape->n_dim != (size_t)ndims)
        return dt_error_set(im->err, DT_EINVAL, "%s: input '%s' has %zu dimensions; --input-shape gives %d",
                            im->path, in->name, shape->n_dim, ndims);
    if (ndims) {
        memcpy(dims, im->opts->input_dims, sizeof dims);
    } else {
        bool known = shape && shape->n_dim >= 1 && shape->n_dim <= DT_GRAPH_MAX_DIMS;
        for (size_t d = 0; known && d < shape->n_dim; d++) {
            known = shape->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                    shape->dim[d]->dim_value >= 1 && shape->dim[d]->dim_value <= DT_MODEL_INT_MAX;
            dims[d] = known ? (int)shape->dim[d]->dim_value : 0;
        }
        if (!known)
            return dt_error_set(im->err, DT_EINVAL, "%s: input '%s' has a dynamic or unknown shape; give it "
                                "with --input-shape N,C,H,W", im->path, in->name);
        ndims = (int)shape->n_dim;
    }
    int v = dt_onnx_ir_new_value(im, in->name, VALUE_ACT, ndims, dims);
    if (v < 0)
        return v;
    im->input = v;
    im->values[v].uses = dt_onnx_ir_uses_of(im, in->name);
    return dt_onnx_ir_bind(im, in->name, v);
}

static int convert_nodes(importer *im)
{
    char name[DT_NAME_MAX];
    for (size_t j = 0; j < im->graph->n_node; j++) {
        int k = im->order[j];
        im->node = im->graph->node[k];
        int rc = name_node(im, k, name);
        if (rc)
            return rc;
        im->node_name = name;
        if ((rc = dt_onnx_ir_convert(im)))
            return rc;
    }
    return 0;
}

/* ---- pass 3: emit ------------------------------------------------------------ */

/* v's tensor in g, added now if it is not there yet (a unique name). */
static int tensor_of(importer *im, dt_graph *g, int v)
{
    value *x = &im->values[v];
    if (x->tensor >= 0)
        return x->tensor;
    char name[DT_NAME_MAX];
    snprintf(name, sizeof name, "%s", x->name[0] ? x->name : "const");
    for (int i = 2; dt_graph_find_tensor(g, name) >= 0; i++)
        snprintf(name, sizeof name, "%.52s_%d", x->name, i);
    int one = 1;
    x->tensor = x->ndims ? dt_graph_add_tensor(g, name, x->ndims, x->dims, x->f, im->err)
                         : dt_graph_add_tensor(g, name, 1, &one, x->f, im->err);
    return x->tensor;
}

static bool ready(const importer *im, const ir_node *n)
{
    for (int i = 0; i < n->ninputs; i++)
        if (im->values[n->inputs[i]].kind == VALUE_ACT && im->values[n->inputs[i]].tensor < 0)
            return false;
    return n->residual < 0 || im->values[n->residual].tensor >= 0;
}

static int emit_node(importer *im, dt_graph *g, const ir_node *n)
{
    dt_graph_node gn = { .op = n->op, .ninputs = n->ninputs,
                         .epilogue = { .bias = -1, .residual = -1, .act = n->act } };
    snprintf(gn.name, sizeof gn.name, "%s", n->name);
    for (int i = 0; i < n->ninputs; i++) {
        if (im->values[n->inputs[i]].kind == VALUE_INT)
            return dt_error_set(im->err, DT_EINVAL, "%s: node '%s' reads an INT64 constant", im->path, n->name);
        if ((gn.inputs[i] = tensor_of(im, g, n->inputs[i])) < 0)
            return gn.inputs[i];
    }
    if (n->bias >= 0 && (gn.epilogue.bias = tensor_of(im, g, n->bias)) < 0)
        return gn.epilogue.bias;
    if (n->residual >= 0)
        gn.epilogue.residual = im->values[n->residual].tensor;
    if ((gn.output = tensor_of(im, g, n->output)) < 0)
        return gn.output;
    if (n->op == DT_GRAPH_CONV || n->op == DT_GRAPH_DENSE)
        gn.attr.kernel = n->attr.kernel;
    else if (n->op == DT_GRAPH_ACT)
        gn.attr.act = n->attr.act;
    else
        gn.attr.pool = n->attr.pool;
    int rc = dt_graph_add_node(g, &gn, im->err);
    return rc < 0 ? rc : 0;
}

/* Every weight finite: a NaN or Inf (in the file, or from folding a
 * batch-norm whose variance + epsilon is not positive) would poison every
 * output the tuner checks and the network computes. */
static int check_finite(const importer *im, const dt_graph *g)
{
    for (int t = 0; t < g->ntensors; t++) {
        const float *w = dt_graph_constant(g, t);
        size_t n = w ? dt_graph_tensor_elements(g, t) : 0;
        for (size_t i = 0; i < n; i++)
            if (!isfinite(w[i]))
                return dt_error_set(im->err, DT_EINVAL, "%s: weight '%s' holds %g at element %zu (in the file, "
                                    "or from a batch-norm folded into it)", im->path, g->tensors[t].name,
                                    (double)w[i], i);
    }
    return 0;
}

static int emit(importer *im, dt_graph *g)
{
    if ((g->input = tensor_of(im, g, im->input)) < 0)
        return g->input;
    for (int placed = 0; placed < im->nnodes; placed++) {
        int k = 0;
        while (k < im->nnodes && (im->nodes[k].emitted || !ready(im, &im->nodes[k])))
            k++;
        if (k == im->nnodes)   /* fusion only joins a node to inputs that do not depend on it */
            return dt_error_set(im->err, DT_EINVAL, "%s: the fused graph has a cycle", im->path);
        im->nodes[k].emitted = true;
        int rc = emit_node(im, g, &im->nodes[k]);
        if (rc)
            return rc;
    }
    int out = dt_onnx_ir_name_get(&im->bound, im->graph->output[0]->name, -1);
    if (out < 0 || im->values[out].producer < 0)
        return dt_error_set(im->err, DT_EINVAL, "%s: the graph's output '%s' is not computed by any node",
                            im->path, im->graph->output[0]->name);
    g->output = im->values[out].tensor;
    return check_finite(im, g);
}

/* ---- the file ----------------------------------------------------------------- */

static int read_file(const char *path, uint8_t **data, size_t *len, dt_error *err)
{
    FILE *f = dt_open_input(path, "ONNX file", err);
    if (!f)
        return err ? err->code : DT_EIO;
    struct stat st;
    int rc = 0;
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0)
        rc = dt_error_set(err, DT_EIO, "%s: cannot read the ONNX file", path);
    else if (st.st_size > INT32_MAX)
        rc = dt_error_set(err, DT_EINVAL, "%s: %lld bytes; a protobuf file is under 2 GiB", path,
                          (long long)st.st_size);
    else if (!(*data = malloc((size_t)st.st_size + 1)))
        rc = dt_error_set(err, DT_ENOMEM, "%s: out of memory", path);
    else if ((*len = fread(*data, 1, (size_t)st.st_size, f)) != (size_t)st.st_size)
        rc = dt_error_set(err, DT_EIO, "%s: cannot read the ONNX file (short read)", path);
    fclose(f);
    if (rc && *data) {
        free(*data);
        *data = NULL;
    }
    return rc;
}

static void stem(const char *path, char *out, size_t len)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char copy[DT_NAME_MAX];
    snprintf(copy, sizeof copy, "%s", base);
    char *dot = strrchr(copy, '.');
    if (dot && dot != copy)
        *dot = '\0';
    dt_onnx_ir_sanitize(copy, out, len);
    if (!out[0])
        snprintf(out, len, "network");
}

static int import_model(importer *im, Onnx__ModelProto *model, dt_graph *g)
{
    int rc = read_opset(im, model);
    if (rc)
        return rc;
    if (!(im->graph = model->graph))
        return dt_error_set(im->err, DT_EINVAL, "%s: the model has no graph", im->path);
    for (size_t k = 0; k < im->graph->n_initializer; k++)
        if (im->graph->initializer[k]->name &&
            dt_onnx_ir_name_put(&im->initializers, im->graph->initializer[k]->name, (int)k))
            return dt_onnx_ir_oom(im);
    for (size_t k = 0; k < im->graph->n_node; k++)
        if (!im->graph->node[k]->op_type)
            return dt_error_set(im->err, DT_EINVAL, "%s: node %zu ('%s') has no op_type", im->path, k + 1,
                                dt_onnx_ir_str(im->graph->node[k]->name));
    if (im->graph->n_output != 1 || !im->graph->output[0]->name)
        return dt_error_set(im->err, DT_EINVAL, "%s: the graph has %zu outputs; dtune imports a network of "
                            "one named output", im->path, im->graph->n_output);
    const Onnx__ValueInfoProto *input = NULL;
    for (size_t i = 0; i < im->graph->n_input && !input; i++)
        if (im->graph->input[i]->name && dt_onnx_ir_name_get(&im->initializers, im->graph->input[i]->name, -1) < 0)
            input = im->graph->input[i];
    if (!input)
        return dt_error_set(im->err, DT_EINVAL, "%s: the graph has no input (every input is an initializer)",
                            im->path);
    if ((rc = order_nodes(im, input->name)) || (rc = read_input(im, input)) || (rc = convert_nodes(im)))
        return rc;
    return emit(im, g);
}

static void importer_free(importer *im)
{
    for (int v = 0; v < im->nvalues; v++) {
        free(im->values[v].f);
        free(im->values[v].i);
    }
    free(im->values);
    free(im->nodes);
    free(im->order);
    dt_onnx_ir_name_map_free(&im->initializers);
    dt_onnx_ir_name_map_free(&im->producers);
    dt_onnx_ir_name_map_free(&im->bound);
    dt_onnx_ir_name_map_free(&im->uses);
    /* node_names' keys are copies */
    for (size_t k = 0; k < im->node_names.cap; k++)
        free((char *)im->node_names.keys[k]);
    dt_onnx_ir_name_map_free(&im->node_names);
}

int dt_onnx_load(const char *path, const dt_onnx_options *opts, dt_graph **out, dt_error *err)
{
    *out = NULL;
    dt_onnx_options defaults = dt_onnx_default_options();
    uint8_t *data = NULL;
    size_t len = 0;
    int rc = read_file(path, &data, &len, err);
    if (rc)
        return rc;
    Onnx__ModelProto *model = onnx__model_proto__unpack(NULL, len, data);
    free(data);
    if (!model)
        return dt_error_set(err, DT_EPARSE, "%s: not an ONNX model: the protobuf does not parse (a truncated "
                            "or damaged file?)", path);
    char name[DT_NAME_MAX];
    stem(path, name, sizeof name);
    dt_graph *g = dt_graph_new(name);
    importer im = { .path = path, .err = err, .opts = opts ? opts : &defaults, .input = -1 };
    rc = g ? import_model(&im, model, g) : dt_error_set(err, DT_ENOMEM, "%s: out of memory", path);
    importer_free(&im);
    onnx__model_proto__free_unpacked(model, NULL);
    if (rc) {
        dt_graph_free(g);
        return rc;
    }
    *out = g;
    return 0;
}
