/* onnx_ir.c — the import's own graph and the converters that fill it
 * (onnx_ir.h): one converter per ONNX operator, in one table (ops[]), each
 * reading its node's inputs and attributes, inferring its output's shape,
 * and either adding a node or joining the conv or dense before it (a
 * batch-norm folded into its weights, a bias, a residual add, ReLU / ReLU6).
 * Constants are read from their initializer or Constant node when a node
 * first needs them.
 */
#include "onnx_ir.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/util.h"

/* ---- names ---------------------------------------------------------------- */

/* A set of strings to int, open addressing; keys point into the proto. */

static size_t name_slot(const name_map *m, const char *key)
{
    size_t i = (size_t)dt_fnv1a(DT_FNV1A_INIT, key, strlen(key)) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & (m->cap - 1);
    return i;
}

int dt_onnx_ir_name_get(const name_map *m, const char *key, int missing)
{
    if (!m->cap)
        return missing;
    size_t i = name_slot(m, key);
    return m->keys[i] ? m->vals[i] : missing;
}

int dt_onnx_ir_name_put(name_map *m, const char *key, int val)
{
    if (2 * (m->n + 1) > m->cap) {
        name_map bigger = { .cap = m->cap ? 2 * m->cap : 64 };
        bigger.keys = calloc(bigger.cap, sizeof *bigger.keys);
        bigger.vals = calloc(bigger.cap, sizeof *bigger.vals);
        if (!bigger.keys || !bigger.vals) {
            free(bigger.keys);
            free(bigger.vals);
            return DT_ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = name_slot(&bigger, m->keys[i]);
                bigger.keys[j] = m->keys[i];
                bigger.vals[j] = m->vals[i];
            }
        bigger.n = m->n;
        free(m->keys);
        free(m->vals);
        *m = bigger;
    }
    size_t i = name_slot(m, key);
    if (!m->keys[i])
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

void dt_onnx_ir_name_map_free(name_map *m)
{
    free(m->keys);
    free(m->vals);
}

/* name made [A-Za-z0-9_]: other runs of bytes become one '_', none leads or
 * trails; cut to fit len. */
void dt_onnx_ir_sanitize(const char *name, char *out, size_t len)
{
    size_t j = 0;
    for (const char *c = name; *c && j + 1 < len; c++) {
        if (isalnum((unsigned char)*c) || *c == '_')
            out[j++] = *c;
        else if (j > 0 && out[j - 1] != '_')
            out[j++] = '_';
    }
    while (j > 0 && out[j - 1] == '_')
        j--;
    out[j] = '\0';
}

/* ---- the import's own graph ----------------------------------------------- */


int dt_onnx_ir_fail(importer *im, int code, const char *fmt, ...)
{
    char msg[DT_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dt_error_set(im->err, code, "%s: node '%s' (%s, opset %lld): %s", im->path, im->node_name,
                        im->node->op_type, (long long)im->opset, msg);
}

/* An optional string of the proto: NULL when absent. */
const char *dt_onnx_ir_str(const char *s)
{
    return s ? s : "";
}

int dt_onnx_ir_oom(importer *im)
{
    return dt_error_set(im->err, DT_ENOMEM, "%s: out of memory", im->path);
}

static void dims_str(const value *v, char *buf, size_t len)
{
    size_t j = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < v->ndims && j < len; d++)
        j += (size_t)snprintf(buf + j, len - j, "%s%d", d ? ", " : "", v->dims[d]);
    if (j < len)
        snprintf(buf + j, len - j, "]");
}

/* A graph tensor name for an ONNX value name: itself when it fits, else its
 * head and a hash of the whole. */
static void fit_name(const char *name, char *out, size_t len)
{
    if (strlen(name) < len) {
        snprintf(out, len, "%s", name);
        return;
    }
    unsigned long long h = (unsigned long long)dt_fnv1a(DT_FNV1A_INIT, name, strlen(name));
    snprintf(out, len, "%.*s~%08llx", (int)(len - 10), name, h & 0xffffffffull);
}

int dt_onnx_ir_new_value(importer *im, const char *name, value_kind kind, int ndims, const int *dims_in)
{
    int dims[DT_GRAPH_MAX_DIMS];   /* dims_in may point into the values about to move */
    memcpy(dims, dims_in, (size_t)ndims * sizeof *dims);
    if (dt_grow(&im->values, &im->cap_values, (size_t)im->nvalues + 1, sizeof *im->values) != 0)
        return dt_onnx_ir_oom(im);
    value *v = &im->values[im->nvalues];
    *v = (value){ .kind = kind, .ndims = ndims, .producer = -1, .tensor = -1, .n = 1 };
    fit_name(name, v->name, sizeof v->name);
    for (int d = 0; d < ndims; d++) {
        v->dims[d] = dims[d];
        v->n *= (size_t)dims[d];
    }
    return im->nvalues++;
}

int dt_onnx_ir_bind(importer *im, const char *name, int v)
{
    return dt_onnx_ir_name_put(&im->bound, name, v) ? dt_onnx_ir_oom(im) : 0;
}

int dt_onnx_ir_uses_of(const importer *im, const char *name)
{
    return dt_onnx_ir_name_get(&im->uses, name, 0);
}

/* ---- constants ------------------------------------------------------------ */

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

const char *dt_onnx_ir_type_name(int32_t t)
{
    static const char *const names[] = { "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
                                         "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
                                         "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16" };
    return t >= 0 && t < (int32_t)(sizeof names / sizeof names[0]) ? names[t] : "an unknown type";
}

/* The shape of tensor proto t (what names it in messages) into v's dims. */
static int tensor_shape(importer *im, const Onnx__TensorProto *t, const char *what, int *ndims,
                        int *dims, size_t *n)
{
    if (t->n_dims > DT_GRAPH_MAX_DIMS)
        return dt_error_set(im->err, DT_EINVAL, "%s: %s has %zu dimensions; at most %d are supported",
                            im->path, what, t->n_dims, DT_GRAPH_MAX_DIMS);
    *n = 1;
    for (size_t d = 0; d < t->n_dims; d++) {
        if (t->dims[d] < 0 || t->dims[d] > DT_MODEL_INT_MAX)
            return dt_error_set(im->err, DT_EINVAL, "%s: %s has dimension %zu of size %lld", im->path, what,
                                d, (long long)t->dims[d]);
        dims[d] = (int)t->dims[d];
        *n *= (size_t)dims[d];
        if (*n > (size_t)DT_TENSOR_MAX_ELEMENTS)
            return dt_error_set(im->err, DT_EINVAL, "%s: %s has over %lld elements", im->path, what,
                                DT_TENSOR_MAX_ELEMENTS);
    }
    *ndims = (int)t->n_dims;
    return 0;
}

static int read_floats(importer *im, const Onnx__TensorProto *t, const char *what, value *v)
{
    if (!(v->f = malloc((v->n ? v->n : 1) * sizeof *v->f)))
        return dt_onnx_ir_oom(im);
    if (t->has_raw_data && t->raw_data.len == 4 * v->n) {
        for (size_t k = 0; k < v->n; k++) {
            uint32_t bits = le32(t->raw_data.data + 4 * k);
            memcpy(&v->f[k], &bits, sizeof bits);
        }
    } else if (!t->has_raw_data && t->n_float_data == v->n) {
        memcpy(v->f, t->float_data, v->n * sizeof *v->f);
    } else {
        return dt_error_set(im->err, DT_EINVAL, "%s: %s holds %zu floats; its shape needs %zu", im->path,
                            what, t->has_raw_data ? t->raw_data.len / 4 : t->n_float_data, v->n);
    }
    return 0;
}

static int read_ints(importer *im, const Onnx__TensorProto *t, const char *what, value *v)
{
    if (!(v->i = malloc((v->n ? v->n : 1) * sizeof *v->i)))
        return dt_onnx_ir_oom(im);
    if (t->has_raw_data && t->raw_data.len == 8 * v->n) {
        for (size_t k = 0; k < v->n; k++) {
            uint64_t u = (uint64_t)le32(t->raw_data.data + 8 * k + 4) << 32 | le32(t->raw_data.data + 8 * k);
            memcpy(&v->i[k], &u, sizeof u);
        }
    } else if (!t->has_raw_data && t->n_int64_data == v->n) {
        memcpy(v->i, t->int64_data, v->n * sizeof *v->i);
    } else {
        return dt_error_set(im->err, DT_EINVAL, "%s: %s holds %zu int64s; its shape needs %zu", im->path,
                            what, t->has_raw_data ? t->raw_data.len / 8 : t->n_int64_data, v->n);
    }
    return 0;
}

/* A constant value from tensor proto t (an initializer or a Constant's
 * value) called name. Returns its index or a negative code. */
static int constant_value(importer *im, const Onnx__TensorProto *t, const char *name, const char *what)
{
    char label[DT_NAME_MAX + 32];
    snprintf(label, sizeof label, "%s '%s'", what, name);
    if (t->n_external_data > 0 ||
        (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return dt_error_set(im->err, DT_EINVAL, "%s: %s keeps its data in an external file; dtune import "
                            "reads weights stored in the model file (onnx.save_model(m, path, "
                            "save_as_external_data=False))", im->path, label);
    int32_t type = t->has_data_type ? t->data_type : 0;
    if (type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
        return dt_error_set(im->err, DT_EINVAL, "%s: %s is of type %s; dtune import reads FLOAT weights "
                            "(and INT64 shapes)", im->path, label, dt_onnx_ir_type_name(type));
    int ndims = 0, dims[DT_GRAPH_MAX_DIMS] = { 0 };
    size_t n;
    int rc = tensor_shape(im, t, label, &ndims, dims, &n);
    if (rc)
        return rc;
    bool is_float = type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    int v = dt_onnx_ir_new_value(im, name, is_float ? VALUE_FLOAT : VALUE_INT, ndims, dims);
    if (v < 0)
        return v;
    rc = is_float ? read_floats(im, t, label, &im->values[v]) : read_ints(im, t, label, &im->values[v]);
    return rc ? rc : v;
}

/* The value of ONNX name: converted already, or an initializer read now. */
static int lookup(importer *im, const char *name)
{
    int v = dt_onnx_ir_name_get(&im->bound, name, -1);
    if (v >= 0)
        return v;
    int k = dt_onnx_ir_name_get(&im->initializers, name, -1);
    if (k < 0)
        return dt_onnx_ir_fail(im, DT_EINVAL, "input '%s' is not known", name);   /* pass 1 prevents it */
    if ((v = constant_value(im, im->graph->initializer[k], name, "initializer")) < 0)
        return v;
    int rc = dt_onnx_ir_bind(im, name, v);
    return rc ? rc : v;
}

/* A float copy of constant v (new name), for a weight changed at import. */
static int copy_constant(importer *im, int v, const char *name)
{
    int c = dt_onnx_ir_new_value(im, name, VALUE_FLOAT, im->values[v].ndims, im->values[v].dims);
    if (c < 0)
        return c;
    value *cv = &im->values[c];
    if (!(cv->f = malloc((cv->n ? cv->n : 1) * sizeof *cv->f)))
        return dt_onnx_ir_oom(im);
    memcpy(cv->f, im->values[v].f, cv->n * sizeof *cv->f);
    return c;
}

/* ---- node inputs, outputs and attributes ---------------------------------- */

static const char *input_name(const Onnx__NodeProto *n, size_t i)
{
    return i < n->n_input && n->input[i][0] ? n->input[i] : NULL;
}

/* Input i as an activation of ndims dimensions (0: any); -1 unless given
 * and required. */
static int act_input(importer *im, size_t i, int ndims)
{
    const char *name = input_name(im->node, i);
    if (!name)
        return dt_onnx_ir_fail(im, DT_EINVAL, "input %zu is missing", i + 1);
    int v = lookup(im, name);
    if (v < 0)
        return v;
    const value *x = &im->values[v];
    if (x->kind != VALUE_ACT)
        return dt_onnx_ir_fail(im, DT_EINVAL, "input '%s' is a constant; dtune import takes an activation there "
                               "(a network computed from one input)", name);
    if (ndims && x->ndims != ndims) {
        char shape[96];
        dims_str(x, shape, sizeof shape);
        return dt_onnx_ir_fail(im, DT_EINVAL, "input '%s' has shape %s; %d dimensions are supported", name, shape,
                               ndims);
    }
    return v;
}

/* Input i as a constant of kind (a float weight, an int64 shape) into *v,
 * -1 when it is absent and optional. Returns 0 or an error. */
static int const_input(importer *im, size_t i, value_kind kind, bool required, int *v)
{
    const char *name = input_name(im->node, i);
    *v = -1;
    if (!name)
        return required ? dt_onnx_ir_fail(im, DT_EINVAL, "input %zu is missing", i + 1) : 0;
    int k = lookup(im, name);
    if (k < 0)
        return k;
    if (im->values[k].kind != kind)
        return dt_onnx_ir_fail(im, DT_EINVAL, "input '%s' must be %s", name,
                               kind == VALUE_FLOAT ? "a FLOAT constant (an initializer or a Constant node's output)"
                               : "an INT64 constant");
    *v = k;
    return 0;
}

/* Outputs past the first (a MaxPool's indices, a Dropout's mask, a
 * batch-norm's running statistics) must be read by nothing. */
static int only_first_output(importer *im)
{
    for (size_t i = 1; i < im->node->n_output; i++)
        if (im->node->output[i][0] && dt_onnx_ir_uses_of(im, im->node->output[i]) > 0)
            return dt_onnx_ir_fail(im, DT_EINVAL, "its output %zu ('%s') is used; dtune import supports only the "
                                   "first", i + 1, im->node->output[i]);
    return 0;
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

/* Refuses any attribute of the node not in known (NULL-terminated): one
 * dtune does not read would change what the op computes. */
static int check_attrs(importer *im, const char *const *known)
{
    for (size_t i = 0; i < im->node->n_attribute; i++) {
        const char *name = im->node->attribute[i]->name ? im->node->attribute[i]->name : "";
        size_t k = 0;
        while (known[k] && strcmp(known[k], name) != 0)
            k++;
        if (!known[k])
            return dt_onnx_ir_fail(im, DT_EINVAL, "attribute '%s' is not supported", name);
    }
    return 0;
}

static int attr_int(importer *im, const char *name, int64_t fallback, int64_t *out)
{
    const Onnx__AttributeProto *a = attr(im->node, name);
    *out = fallback;
    if (!a)
        return 0;
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
        return dt_onnx_ir_fail(im, DT_EINVAL, "attribute '%s' must be an int", name);
    *out = a->i;
    return 0;
}

static int attr_float(importer *im, const char *name, float fallback, float *out)
{
    const Onnx__AttributeProto *a = attr(im->node, name);
    *out = fallback;
    if (!a)
        return 0;
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
        return dt_onnx_ir_fail(im, DT_EINVAL, "attribute '%s' must be a float", name);
    *out = a->f;
    return 0;
}

/* Attribute name, a list of exactly want ints each in [lo, DT_MODEL_INT_MAX],
 * into out; left alone when absent. */
static int attr_ints(importer *im, const char *name, size_t want, int lo, int *out)
{
    const Onnx__AttributeProto *a = attr(im->node, name);
    if (!a)
        return 0;
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS || a->n_ints != want)
        return dt_onnx_ir_fail(im, DT_EINVAL, "attribute '%s' must be a list of %zu ints (2-D spatial)", name, want);
    for (size_t i = 0; i < want; i++) {
        if (a->ints[i] < lo || a->ints[i] > DT_MODEL_INT_MAX)
            return dt_onnx_ir_fail(im, DT_EINVAL, "attribute '%s' holds %lld; expected %d to %d", name,
                                   (long long)a->ints[i], lo, DT_MODEL_INT_MAX);
        out[i] = (int)a->ints[i];
    }
    return 0;
}

/* pads [top, left, bottom, right] of a window kernel x strides x
 * dilations over an input in[0] x in[1]: attribute 'pads', or auto_pad's:
 * VALID none, SAME_UPPER and SAME_LOWER what keeps ceil(in / stride)
 * outputs, an odd one at the end and at the start. */
static int read_pads(importer *im, const int *in, const int *kernel, const int *strides, const int *dil, int *pads)
{
    int rc = attr_ints(im, "pads", 4, 0, pads);
    const Onnx__AttributeProto *a = attr(im->node, "auto_pad");
    if (rc || !a)
        return rc;
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
        return dt_onnx_ir_fail(im, DT_EINVAL, "attribute 'auto_pad' must be a string");
    char mode[16];
    snprintf(mode, sizeof mode, "%.*s", (int)(a->s.len < 15 ? a->s.len : 15), (const char *)a->s.data);
    bool valid = strcmp(mode, "VALID") == 0, upper = strcmp(mode, "SAME_UPPER") == 0;
    if (strcmp(mode, "NOTSET") == 0)
        return 0;
    if (!valid && !upper && strcmp(mode, "SAME_LOWER") != 0)
        return dt_onnx_ir_fail(im, DT_EINVAL, "auto_pad '%s' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER",
                               mode);
    for (int d = 0; d < 2; d++) {
        int64_t out = ((int64_t)in[d] + strides[d] - 1) / strides[d];
        int64_t total = valid ? 0 : (out - 1) * strides[d] + (int64_t)(kernel[d] - 1) * dil[d] + 1 - in[d];
        total = total < 0 ? 0 : total;
        if (total > DT_MODEL_INT_MAX)
            return dt_onnx_ir_fail(im, DT_EINVAL, "auto_pad %s needs %lld pads", mode, (long long)total);
        pads[d] = (int)(upper ? total / 2 : total - total / 2);
        pads[d + 2] = (int)(total - pads[d]);
    }
    return 0;
}

/* ---- building the list ---------------------------------------------------- */

/* A new node of op reading inputs, writing a new activation called after
 * output 0 of the ONNX node with ndims dims. Returns the node's index. */
static int add_node(importer *im, dt_graph_op op, int ninputs, const int *inputs, int ndims, const int *dims)
{
    int out = dt_onnx_ir_new_value(im, im->node->output[0], VALUE_ACT, ndims, dims);
    if (out < 0)
        return out;
    if (dt_grow(&im->nodes, &im->cap_nodes, (size_t)im->nnodes + 1, sizeof *im->nodes) != 0)
        return dt_onnx_ir_oom(im);
    ir_node *n = &im->nodes[im->nnodes];
    *n = (ir_node){ .op = op, .ninputs = ninputs, .output = out, .bias = -1, .residual = -1 };
    snprintf(n->name, sizeof n->name, "%s", im->node_name);
    memcpy(n->inputs, inputs, (size_t)ninputs * sizeof *inputs);
    im->values[out].producer = im->nnodes;
    im->values[out].uses = dt_onnx_ir_uses_of(im, im->node->output[0]);
    int rc = dt_onnx_ir_bind(im, im->node->output[0], out);
    return rc ? rc : im->nnodes++;
}


/* The conv or dense node writing activation v that an op at stage may join:
 * v feeds only that op, and no later stage has joined the node yet. -1 if
 * none. */
static int fusable_producer(const importer *im, int v, join_stage stage)
{
    const value *x = &im->values[v];
    if (x->kind != VALUE_ACT || x->producer < 0 || x->uses != 1)
        return -1;
    const ir_node *p = &im->nodes[x->producer];
    if ((p->op != DT_GRAPH_CONV && p->op != DT_GRAPH_DENSE) || p->act != DT_ACT_NONE ||
        (stage < JOIN_ACT && p->residual >= 0) || (stage == JOIN_BIAS && p->bias >= 0))
        return -1;
    return x->producer;
}

/* The op's output is node p's output from now on. */
static int join(importer *im, int p)
{
    int v = im->nodes[p].output;
    im->values[v].uses = dt_onnx_ir_uses_of(im, im->node->output[0]);
    return dt_onnx_ir_bind(im, im->node->output[0], v);
}

/* ---- converters ----------------------------------------------------------- */

static int op_conv(importer *im)
{
    static const char *const known[] = { "auto_pad", "dilations", "group", "kernel_shape", "pads",
                                         "strides", NULL };
    int x, w, b, rc;
    if ((rc = check_attrs(im, known)))
        return rc;
    if ((x = act_input(im, 0, 4)) < 0)
        return x;
    if ((rc = const_input(im, 1, VALUE_FLOAT, true, &w)) || (rc = const_input(im, 2, VALUE_FLOAT, false, &b)))
        return rc;
    const value *xv = &im->values[x], *wv = &im->values[w];
    if (wv->ndims != 4)
        return dt_onnx_ir_fail(im, DT_EINVAL, "weight '%s' has %d dimensions; a 2-D convolution's has 4", wv->name,
                               wv->ndims);
    int kernel[2] = { wv->dims[2], wv->dims[3] }, strides[2] = { 1, 1 }, dil[2] = { 1, 1 };
    int pads[4] = { 0, 0, 0, 0 };
    int64_t group;
    if ((rc = attr_ints(im, "kernel_shape", 2, 1, kernel)) || (rc = attr_ints(im, "strides", 2, 1, strides)) ||
        (rc = attr_ints(im, "dilations", 2, 1, dil)) ||
        (rc = read_pads(im, xv->dims + 2, kernel, strides, dil, pads)) || (rc = attr_int(im, "group", 1, &group)))
        return rc;
    if (kernel[0] != wv->dims[2] || kernel[1] != wv->dims[3])
        return dt_onnx_ir_fail(im, DT_EINVAL, "kernel_shape %dx%d differs from the weight's %dx%d", kernel[0],
                               kernel[1],
                               wv->dims[2], wv->dims[3]);
    if (pads[0] != pads[2] || pads[1] != pads[3])
        return dt_onnx_ir_fail(im, DT_EINVAL, "asymmetric pads [%d, %d, %d, %d] (top, left, bottom, right); dtune's "
                               "convolutions pad both sides alike", pads[0], pads[1], pads[2], pads[3]);
    int c_in = xv->dims[1], c_out = wv->dims[0];
    dt_task t = { .kind = DT_OP_CONV2D, .count = 1 };
    if (group == 1 && wv->dims[1] == c_in) {
        t.kind = DT_OP_CONV2D;
    } else if (group == c_in && wv->dims[1] == 1 && c_out % c_in == 0) {
        t.kind = DT_OP_DEPTHWISE_CONV2D;
    } else if (group == 1 || group == c_in) {
        return dt_onnx_ir_fail(im, DT_EINVAL, "weight '%s' has %d input channels per group; the input has %d in "
                               "%lld group(s)", wv->name, wv->dims[1], c_in, (long long)group);
    } else {
        return dt_onnx_ir_fail(im, DT_EINVAL, "group %lld: dtune takes group 1 and depthwise convolutions (group = "
                               "input channels = %d)", (long long)group, c_in);
    }
    t.conv = (dt_conv_shape){ .n = xv->dims[0], .c_in = c_in, .h = xv->dims[2], .w = xv->dims[3],
                              .c_out = c_out, .kh = kernel[0], .kw = kernel[1], .sh = strides[0],
                              .sw = strides[1], .ph = pads[0], .pw = pads[1], .dh = dil[0], .dw = dil[1] };
    dt_error sub;
    if (dt_task_finish(&t, &sub) != 0)
        return dt_onnx_ir_fail(im, DT_EINVAL, "%s", sub.msg);
    if (b >= 0 && (im->values[b].ndims != 1 || im->values[b].dims[0] != c_out))
        return dt_onnx_ir_fail(im, DT_EINVAL, "bias '%s' must have %d values, one per output channel",
                               im->values[b].name, c_out);
    int inputs[2] = { x, w }, dims[4] = { t.conv.n, c_out, t.conv.oh, t.conv.ow };
    int k = add_node(im, DT_GRAPH_CONV, 2, inputs, 4, dims);
    if (k < 0)
        return k;
    im->nodes[k].attr.kernel = t;
    im->nodes[k].bias = b;
    return 0;
}

/* A dense node X [m,k] x W^T with W [n,k] (weight value w), bias b or -1. */
static int add_dense(importer *im, int x, int w, int b)
{
    const value *xv = &im->values[x];
    dt_task t = { .kind = DT_OP_DENSE, .count = 1,
                  .mm = { .b = 1, .m = xv->dims[0], .n = im->values[w].dims[0], .k = xv->dims[1] } };
    dt_error sub;
    if (dt_task_finish(&t, &sub) != 0)
        return dt_onnx_ir_fail(im, DT_EINVAL, "%s", sub.msg);
    int inputs[2] = { x, w }, dims[2] = { t.mm.m, t.mm.n };
    int k = add_node(im, DT_GRAPH_DENSE, 2, inputs, 2, dims);
    if (k < 0)
        return k;
    im->nodes[k].attr.kernel = t;
    im->nodes[k].bias = b;
    return 0;
}

/* A weight [k,n] transposed into a new constant [n,k] times scale. */
static int transposed(importer *im, int b, float scale)
{
    char name[DT_NAME_MAX + 8];
    snprintf(name, sizeof name, "%s_T", im->values[b].name);
    int dims[2] = { im->values[b].dims[1], im->values[b].dims[0] };
    int w = dt_onnx_ir_new_value(im, name, VALUE_FLOAT, 2, dims);
    if (w < 0)
        return w;
    value *wv = &im->values[w];
    if (!(wv->f = malloc(wv->n * sizeof *wv->f)))
        return dt_onnx_ir_oom(im);
    for (int i = 0; i < dims[1]; i++)
        for (int j = 0; j < dims[0]; j++)
            wv->f[(size_t)j * dims[1] + i] = scale * im->values[b].f[(size_t)i * dims[0] + j];
    return w;
}

/* A bias for n outputs from constant c ([n], [1,n], or one value), times
 * scale: c itself when it is [n] and scale 1, else a new constant. */
static int bias_of(importer *im, int c, int n, float scale)
{
    const value *cv = &im->values[c];
    bool per_output = cv->n == (size_t)n && (cv->ndims == 1 || (cv->ndims == 2 && cv->dims[0] == 1));
    if (!per_output && cv->n != 1)
        return dt_onnx_ir_fail(im, DT_EINVAL, "bias '%s' must have 1 or %d values ([%d] or [1, %d])", cv->name, n, n,
                               n);
    if (per_output && cv->ndims == 1 && scale == 1.0f)
        return c;
    char name[DT_NAME_MAX + 8];
    snprintf(name, sizeof name, "%s_bias", cv->name);
    int v = dt_onnx_ir_new_value(im, name, VALUE_FLOAT, 1, &n);
    if (v < 0)
        return v;
    value *bv = &im->values[v];
    if (!(bv->f = malloc((size_t)n * sizeof *bv->f)))
        return dt_onnx_ir_oom(im);
    for (int i = 0; i < n; i++)
        bv->f[i] = scale * im->values[c].f[per_output ? i : 0];
    return v;
}

static int op_gemm(importer *im)
{
    static const char *const known[] = { "alpha", "beta", "transA", "transB", NULL };
    int x, b, c, rc;
    int64_t trans_a, trans_b;
    float alpha, beta;
    if ((rc = check_attrs(im, known)) || (rc = attr_int(im, "transA", 0, &trans_a)) ||
        (rc = attr_int(im, "transB", 0, &trans_b)) || (rc = attr_float(im, "alpha", 1.0f, &alpha)) ||
        (rc = attr_float(im, "beta", 1.0f, &beta)))
        return rc;
    if (trans_a)
        return dt_onnx_ir_fail(im, DT_EINVAL, "transA = 1 is not supported (the input must be [M, K])");
    if ((x = act_input(im, 0, 2)) < 0)
        return x;
    if ((rc = const_input(im, 1, VALUE_FLOAT, true, &b)) || (rc = const_input(im, 2, VALUE_FLOAT, false, &c)))
        return rc;
    const value *bv = &im->values[b];
    int k = im->values[x].dims[1];
    if (bv->ndims != 2 || bv->dims[trans_b ? 1 : 0] != k)
        return dt_onnx_ir_fail(im, DT_EINVAL, "weight '%s' does not match an input of %d columns (transB = %lld)",
                               bv->name, k, (long long)trans_b);
    int w = trans_b && alpha == 1.0f ? b : 0;
    if (trans_b && alpha != 1.0f) {
        char name[DT_NAME_MAX];
        snprintf(name, sizeof name, "%.50s_alpha", im->values[b].name);
        int copy = copy_constant(im, b, name);
        if (copy < 0)
            return copy;
        for (size_t i = 0; i < im->values[copy].n; i++)
            im->values[copy].f[i] *= alpha;
        w = copy;
    } else if (!trans_b && (w = transposed(im, b, alpha)) < 0) {
        return w;
    }
    int bias = -1;
    if (c >= 0 && beta != 0.0f && (bias = bias_of(im, c, im->values[w].dims[0], beta)) < 0)
        return bias;
    return add_dense(im, x, w, bias);
}

static int op_matmul(importer *im)
{
    static const char *const known[] = { NULL };
    int x, b, rc;
    if ((rc = check_attrs(im, known)))
        return rc;
    if ((x = act_input(im, 0, 2)) < 0)
        return x;
    if ((rc = const_input(im, 1, VALUE_FLOAT, true, &b)))
        return rc;
    if (im->values[b].ndims != 2 || im->values[b].dims[0] != im->values[x].dims[1])
        return dt_onnx_ir_fail(im, DT_EINVAL, "MatMul takes an input [M, K] and a constant 2-D weight [K, N]; "
                               "weight '%s' does not match K = %d", im->values[b].name, im->values[x].dims[1]);
    int w = transposed(im, b, 1.0f);
    return w < 0 ? w : add_dense(im, x, w, -1);
}

/* Folds y = scale * (x - mean) / sqrt(var + eps) + beta into node p: each
 * output channel's weights times s = scale / sqrt(var + eps), its bias
 * (b - mean) * s + beta, into new constants. */
static int fold_batch_norm(importer *im, int p, const int *bn, float eps)
{
    int channels = im->values[im->nodes[p].output].dims[1];
    for (int i = 0; i < 4; i++)
        if (im->values[bn[i]].n != (size_t)channels)
            return dt_onnx_ir_fail(im, DT_EINVAL, "'%s' has %zu values; the conv before it has %d channels",
                                   im->values[bn[i]].name, im->values[bn[i]].n, channels);
    char name[DT_NAME_MAX + 8];
    snprintf(name, sizeof name, "%.50s_bn", im->values[im->nodes[p].inputs[1]].name);
    int w = copy_constant(im, im->nodes[p].inputs[1], name);
    snprintf(name, sizeof name, "%.50s_bn_bias", im->nodes[p].name);
    int b = w < 0 ? w : dt_onnx_ir_new_value(im, name, VALUE_FLOAT, 1, &channels);
    if (b < 0)
        return b;
    if (!(im->values[b].f = malloc((size_t)channels * sizeof(float))))
        return dt_onnx_ir_oom(im);
    const float *scale = im->values[bn[0]].f, *beta = im->values[bn[1]].f;
    const float *mean = im->values[bn[2]].f, *var = im->values[bn[3]].f;
    const float *old_bias = im->nodes[p].bias >= 0 ? im->values[im->nodes[p].bias].f : NULL;
    size_t per_channel = im->values[w].n / (size_t)channels;
    for (int c = 0; c < channels; c++) {
        double s = (double)scale[c] / sqrt((double)var[c] + (double)eps);
        for (size_t i = 0; i < per_channel; i++)
            im->values[w].f[c * per_channel + i] = (float)(im->values[w].f[c * per_channel + i] * s);
        im->values[b].f[c] = (float)(((old_bias ? old_bias[c] : 0.0) - mean[c]) * s + beta[c]);
    }
    im->nodes[p].inputs[1] = w;
    im->nodes[p].bias = b;
    return join(im, p);
}

static int op_batch_norm(importer *im)
{
    static const char *const known[] = { "epsilon", "momentum", "training_mode", NULL };
    int x, bn[4], rc;
    int64_t training;
    float eps;
    if ((rc = check_attrs(im, known)) || (rc = attr_float(im, "epsilon", 1e-5f, &eps)) ||
        (rc = attr_int(im, "training_mode", 0, &training)) || (rc = only_first_output(im)))
        return rc;
    if (training)
        return dt_onnx_ir_fail(im, DT_EINVAL, "training_mode = 1 is not supported (an inference network)");
    if ((x = act_input(im, 0, 0)) < 0)
        return x;
    for (int i = 0; i < 4; i++)
        if ((rc = const_input(im, (size_t)i + 1, VALUE_FLOAT, true, &bn[i])))
            return rc;
    int p = fusable_producer(im, x, JOIN_BATCH_NORM);
    if (p < 0 || im->values[x].ndims < 2)
        return dt_onnx_ir_fail(im, DT_EINVAL, "a batch-norm is folded into the Conv or Gemm before it, and '%s' "
                               "is not the output of one that feeds only this node (with no activation or add "
                               "between them)", im->values[x].name);
    return fold_batch_norm(im, p, bn, eps);
}

/* ReLU or ReLU6 on activation x: into the conv or dense before it, or a node. */
static int activation(importer *im, int x, dt_act act)
{
    int p = fusable_producer(im, x, JOIN_ACT);
    if (p >= 0) {
        im->nodes[p].act = act;
        return join(im, p);
    }
    int k = add_node(im, DT_GRAPH_ACT, 1, &x, im->values[x].ndims, im->values[x].dims);
    if (k < 0)
        return k;
    im->nodes[k].attr.act = act;
    im->nodes[k].act = DT_ACT_NONE;
    return 0;
}

static int op_relu(importer *im)
{
    static const char *const known[] = { NULL };
    int x, rc;
    if ((rc = check_attrs(im, known)))
        return rc;
    return (x = act_input(im, 0, 0)) < 0 ? x : activation(im, x, DT_ACT_RELU);
}

/* A scalar float constant's value, or NAN. */
static float scalar_of(const importer *im, int v)
{
    return v >= 0 && im->values[v].n == 1 ? im->values[v].f[0] : NAN;
}

static int op_clip(importer *im)
{
    static const char *const known[] = { NULL };
    int x, lo, hi, rc;
    if ((rc = check_attrs(im, known)))
        return rc;
    if ((x = act_input(im, 0, 0)) < 0)
        return x;
    if ((rc = const_input(im, 1, VALUE_FLOAT, false, &lo)) || (rc = const_input(im, 2, VALUE_FLOAT, false, &hi)))
        return rc;
    if (scalar_of(im, lo) != 0.0f || scalar_of(im, hi) != 6.0f)
        return dt_onnx_ir_fail(im, DT_EINVAL, "Clip is read as ReLU6: min must be 0 and max 6 (constants); here "
                               "min %g, max %g", (double)scalar_of(im, lo), (double)scalar_of(im, hi));
    return activation(im, x, DT_ACT_RELU6);
}

/* Add of activation x and constant c: c becomes the bias of the conv or
 * dense writing x. */
static int add_bias(importer *im, int x, int c)
{
    int p = fusable_producer(im, x, JOIN_BIAS);
    if (p < 0)
        return dt_onnx_ir_fail(im, DT_EINVAL, "an Add of constant '%s' is read only as the bias of the Conv, Gemm "
                               "or MatMul right before it", im->values[c].name);
    const value *cv = &im->values[c];
    int n = im->values[x].dims[1];
    bool conv = im->nodes[p].op == DT_GRAPH_CONV;
    bool shaped = conv ? (cv->ndims == 1 || (cv->ndims == 3 && cv->dims[1] == 1 && cv->dims[2] == 1) ||
                          (cv->ndims == 4 && cv->dims[0] == 1 && cv->dims[2] == 1 && cv->dims[3] == 1))
                       : (cv->ndims == 1 || (cv->ndims == 2 && cv->dims[0] == 1));
    if (!shaped || cv->n != (size_t)n)
        return dt_onnx_ir_fail(im, DT_EINVAL, "constant '%s' is not one value per output %s (%d)", cv->name,
                               conv ? "channel" : "column", n);
    int b = cv->ndims == 1 ? c : copy_constant(im, c, cv->name);
    if (b < 0)
        return b;
    im->values[b].ndims = 1;
    im->values[b].dims[0] = n;
    im->nodes[p].bias = b;
    return join(im, p);
}

static int op_add(importer *im)
{
    static const char *const known[] = { NULL };
    int rc, in[2];
    if ((rc = check_attrs(im, known)))
        return rc;
    for (int i = 0; i < 2; i++) {
        const char *name = input_name(im->node, (size_t)i);
        if (!name)
            return dt_onnx_ir_fail(im, DT_EINVAL, "input %d is missing", i + 1);
        if ((in[i] = lookup(im, name)) < 0)
            return in[i];
    }
    value *a = &im->values[in[0]], *b = &im->values[in[1]];
    if (a->kind != VALUE_ACT && b->kind != VALUE_ACT)
        return dt_onnx_ir_fail(im, DT_EINVAL, "both inputs are constants");
    if (a->kind != VALUE_ACT || b->kind != VALUE_ACT)
        return a->kind == VALUE_ACT ? add_bias(im, in[0], in[1]) : add_bias(im, in[1], in[0]);
    char sa[96], sb[96];
    dims_str(a, sa, sizeof sa);
    dims_str(b, sb, sizeof sb);
    if (strcmp(sa, sb) != 0)
        return dt_onnx_ir_fail(im, DT_EINVAL, "inputs of shapes %s and %s: only an Add of two equal shapes is "
                               "supported (no broadcasting)", sa, sb);
    for (int i = 0; i < 2 && in[0] != in[1]; i++) {
        int p = fusable_producer(im, in[i], JOIN_RESIDUAL);
        if (p >= 0) {
            im->nodes[p].residual = in[1 - i];
            return join(im, p);
        }
    }
    int k = add_node(im, DT_GRAPH_ADD, 2, in, im->values[in[0]].ndims, im->values[in[0]].dims);
    return k < 0 ? k : 0;
}

/* Output size of a pooling window along one dimension (graph.h). */
static int pool_out(int in, int k, int s, int pad_begin, int pad_end, bool ceil_mode)
{
    int64_t span = (int64_t)in + pad_begin + pad_end - k;
    if (span < 0)
        return 0;
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= (int64_t)in + pad_begin)
        out--;
    return out > DT_MODEL_INT_MAX ? 0 : (int)out;
}

static int op_pool(importer *im, dt_graph_op op)
{
    static const char *const max_known[] = { "auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
                                             "storage_order", "strides", NULL };
    static const char *const avg_known[] = { "auto_pad", "ceil_mode", "count_include_pad", "kernel_shape",
                                             "pads", "strides", NULL };
    int x, rc, kernel[2] = { 0, 0 }, strides[2] = { 1, 1 }, dil[2] = { 1, 1 }, pads[4] = { 0, 0, 0, 0 };
    int64_t ceil_mode, storage, include_pad;
    if ((rc = check_attrs(im, op == DT_GRAPH_MAX_POOL ? max_known : avg_known)) || (rc = only_first_output(im)))
        return rc;
    if ((x = act_input(im, 0, 4)) < 0)
        return x;
    const value *xv = &im->values[x];
    if ((rc = attr_ints(im, "kernel_shape", 2, 1, kernel)) || (rc = attr_ints(im, "strides", 2, 1, strides)) ||
        (rc = attr_ints(im, "dilations", 2, 1, dil)) ||
        (rc = read_pads(im, xv->dims + 2, kernel, strides, dil, pads)) ||
        (rc = attr_int(im, "ceil_mode", 0, &ceil_mode)) || (rc = attr_int(im, "storage_order", 0, &storage)) ||
        (rc = attr_int(im, "count_include_pad", 0, &include_pad)))
        return rc;
    if (!attr(im->node, "kernel_shape"))
        return dt_onnx_ir_fail(im, DT_EINVAL, "attribute 'kernel_shape' is missing");
    if (dil[0] != 1 || dil[1] != 1 || storage != 0)
        return dt_onnx_ir_fail(im, DT_EINVAL, "dilations and storage_order other than 1 and 0 are not supported");
    dt_pool_attr pool = { .kh = kernel[0], .kw = kernel[1], .sh = strides[0], .sw = strides[1],
                          .pad_top = pads[0], .pad_left = pads[1], .pad_bottom = pads[2], .pad_right = pads[3],
                          .ceil_mode = ceil_mode != 0, .count_include_pad = include_pad != 0 };
    int dims[4] = { xv->dims[0], xv->dims[1],
                    pool_out(xv->dims[2], pool.kh, pool.sh, pool.pad_top, pool.pad_bottom, pool.ceil_mode),
                    pool_out(xv->dims[3], pool.kw, pool.sw, pool.pad_left, pool.pad_right, pool.ceil_mode) };
    if (dims[2] < 1 || dims[3] < 1 || pool.pad_top >= pool.kh || pool.pad_bottom >= pool.kh ||
        pool.pad_left >= pool.kw || pool.pad_right >= pool.kw)
        return dt_onnx_ir_fail(im, DT_EINVAL, "window %dx%d, pads [%d, %d, %d, %d] do not fit the %dx%d input",
                               pool.kh, pool.kw, pads[0], pads[1], pads[2], pads[3], xv->dims[2], xv->dims[3]);
    int k = add_node(im, op, 1, &x, 4, dims);
    if (k < 0)
        return k;
    im->nodes[k].attr.pool = pool;
    return 0;
}

static int op_max_pool(importer *im)
{
    return op_pool(im, DT_GRAPH_MAX_POOL);
}

static int op_avg_pool(importer *im)
{
    return op_pool(im, DT_GRAPH_AVG_POOL);
}

static int op_global_avg_pool(importer *im)
{
    static const char *const known[] = { NULL };
    int x, rc;
    if ((rc = check_attrs(im, known)))
        return rc;
    if ((x = act_input(im, 0, 4)) < 0)
        return x;
    int dims[4] = { im->values[x].dims[0], im->values[x].dims[1], 1, 1 };
    int k = add_node(im, DT_GRAPH_GLOBAL_AVG_POOL, 1, &x, 4, dims);
    return k < 0 ? k : 0;
}

/* x to [dims0, rest]: a flatten node from 4-D, the same value from 2-D. */
static int to_2d(importer *im, int x)
{
    value *xv = &im->values[x];
    if (xv->ndims == 2) {   /* the same value under a new name: its readers are x's too */
        xv->uses += dt_onnx_ir_uses_of(im, im->node->output[0]) - 1;
        return dt_onnx_ir_bind(im, im->node->output[0], x);
    }
    int dims[2] = { xv->dims[0], (int)(xv->n / (size_t)xv->dims[0]) };
    int k = add_node(im, DT_GRAPH_FLATTEN, 1, &x, 2, dims);
    return k < 0 ? k : 0;
}

static int op_flatten(importer *im)
{
    static const char *const known[] = { "axis", NULL };
    int x, rc;
    int64_t axis;
    if ((rc = check_attrs(im, known)) || (rc = attr_int(im, "axis", 1, &axis)))
        return rc;
    if ((x = act_input(im, 0, 0)) < 0)
        return x;
    if (axis < 0)
        axis += im->values[x].ndims;
    if (axis != 1 || (im->values[x].ndims != 2 && im->values[x].ndims != 4))
        return dt_onnx_ir_fail(im, DT_EINVAL, "Flatten of a %d-D input at axis %lld; only [N, ...] to [N, rest] "
                               "(axis 1 of a 2-D or 4-D input) is supported", im->values[x].ndims, (long long)axis);
    return to_2d(im, x);
}

static int op_reshape(importer *im)
{
    static const char *const known[] = { "allowzero", NULL };
    int x, s, rc;
    int64_t allowzero;
    if ((rc = check_attrs(im, known)) || (rc = attr_int(im, "allowzero", 0, &allowzero)))
        return rc;
    if ((x = act_input(im, 0, 0)) < 0)
        return x;
    if ((rc = const_input(im, 1, VALUE_INT, true, &s)))
        return rc;
    const value *xv = &im->values[x], *sv = &im->values[s];
    int64_t want[2] = { 0, 0 };
    for (size_t d = 0; sv->n == 2 && d < 2; d++)
        want[d] = sv->i[d] == 0 && !allowzero ? xv->dims[d] : sv->i[d];
    if (sv->n == 2 && want[1] == -1 && want[0] > 0 && xv->n % (size_t)want[0] == 0)
        want[1] = (int64_t)(xv->n / (size_t)want[0]);
    if (sv->n != 2 || want[0] != xv->dims[0] || want[1] < 1 || (size_t)want[0] * (size_t)want[1] != xv->n ||
        (xv->ndims != 2 && xv->ndims != 4))
        return dt_onnx_ir_fail(im, DT_EINVAL, "only a Reshape of a 2-D or 4-D input [N, ...] to 2-D [N, rest] is "
                               "supported");
    return to_2d(im, x);
}

static int op_concat(importer *im)
{
    static const char *const known[] = { "axis", NULL };
    int rc, in[DT_GRAPH_MAX_INPUTS];
    int64_t axis;
    if ((rc = check_attrs(im, known)) || (rc = attr_int(im, "axis", INT64_MIN, &axis)))
        return rc;
    size_t n = im->node->n_input;
    if (n < 1 || n > DT_GRAPH_MAX_INPUTS)
        return dt_onnx_ir_fail(im, DT_EINVAL, "%zu inputs; 1 to %d are supported", n, DT_GRAPH_MAX_INPUTS);
    int dims[4];
    for (size_t i = 0; i < n; i++) {
        if ((in[i] = act_input(im, i, 4)) < 0)
            return in[i];
        const value *v = &im->values[in[i]];
        if (i == 0)
            memcpy(dims, v->dims, sizeof dims);
        else if (v->dims[0] != dims[0] || v->dims[2] != dims[2] || v->dims[3] != dims[3])
            return dt_onnx_ir_fail(im, DT_EINVAL, "input '%s' differs from the first in batch, height or width",
                                   v->name);
        else
            dims[1] += v->dims[1];
    }
    if (axis != 1 && axis != -3)
        return dt_onnx_ir_fail(im, DT_EINVAL, "Concat along axis %lld; only channels (axis 1) are supported",
                               (long long)axis);
    int k = add_node(im, DT_GRAPH_CONCAT, (int)n, in, 4, dims);
    return k < 0 ? k : 0;
}

/* Identity, and Dropout at inference: the output is the input. */
static int op_identity(importer *im)
{
    static const char *const known[] = { "seed", "ratio", NULL };
    int rc;
    if ((rc = check_attrs(im, known)) || (rc = only_first_output(im)))
        return rc;
    const char *name = input_name(im->node, 0);
    int x = name ? lookup(im, name) : dt_onnx_ir_fail(im, DT_EINVAL, "input 1 is missing");
    return x < 0 ? x : dt_onnx_ir_bind(im, im->node->output[0], x);
}

static int op_constant(importer *im)
{
    static const char *const known[] = { "value", NULL };
    int rc;
    if ((rc = check_attrs(im, known)))
        return rc;
    const Onnx__AttributeProto *a = attr(im->node, "value");
    if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !a->t)
        return dt_onnx_ir_fail(im, DT_EINVAL, "only a Constant given by its 'value' tensor is supported");
    int v = constant_value(im, a->t, im->node->output[0], "constant");
    return v < 0 ? v : dt_onnx_ir_bind(im, im->node->output[0], v);
}

typedef struct onnx_op {
    const char *op_type;
    int (*convert)(importer *im);
} onnx_op;

/* The operators read, by ONNX name (docs/import.md lists them). */
static const onnx_op ops[] = {
    { "Conv", op_conv },
    { "Gemm", op_gemm },
    { "MatMul", op_matmul },
    { "BatchNormalization", op_batch_norm },
    { "Relu", op_relu },
    { "Clip", op_clip },
    { "Add", op_add },
    { "MaxPool", op_max_pool },
    { "AveragePool", op_avg_pool },
    { "GlobalAveragePool", op_global_avg_pool },
    { "Flatten", op_flatten },
    { "Reshape", op_reshape },
    { "Concat", op_concat },
    { "Dropout", op_identity },
    { "Identity", op_identity },
    { "Constant", op_constant },
};

bool dt_onnx_ir_default_domain(const char *domain)
{
    return !domain || !domain[0] || strcmp(domain, "ai.onnx") == 0;
}

static const onnx_op *find_op(const Onnx__NodeProto *n)
{
    for (size_t i = 0; dt_onnx_ir_default_domain(n->domain) && i < sizeof ops / sizeof ops[0]; i++)
        if (n->op_type && strcmp(n->op_type, ops[i].op_type) == 0)
            return &ops[i];
    return NULL;
}

int dt_onnx_ir_convert(importer *im)
{
    const onnx_op *op = find_op(im->node);
    bool other_domain = !dt_onnx_ir_default_domain(im->node->domain);
    if (!op)
        return dt_error_set(im->err, DT_EINVAL, "%s: node '%s': op type '%s'%s%s%s (opset %lld) is not "
                            "supported (docs/import.md lists the ops dtune import reads)", im->path,
                            im->node_name, im->node->op_type, other_domain ? " of domain '" : "",
                            other_domain ? im->node->domain : "", other_domain ? "'" : "", (long long)im->opset);
    if (im->node->n_output < 1 || !im->node->output[0][0])
        return dt_onnx_ir_fail(im, DT_EINVAL, "it has no output");
    return op->convert(im);
}
