/* model.c — loading models/NAME.yaml into tasks, and the task arithmetic.
 *
 * The file is read with libyaml's document loader, so every node keeps its
 * line and column for messages. Each op becomes a dt_task; ops whose kind and
 * geometry are identical merge into the first one and add their counts, which
 * is how AutoTVM extracts tasks from a network.
 */
#include "dtune/model.h"
#include "dtune/util.h"
#include "yamldoc.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

static const char *const kind_names[DT_OP_KIND_COUNT] = {
    "conv2d", "depthwise_conv2d", "dense", "batch_matmul",
};

const char *dt_op_kind_name(dt_op_kind kind)
{
    if ((int)kind < 0 || kind >= DT_OP_KIND_COUNT)
        return NULL;
    return kind_names[kind];
}

/* Parses a kind name; returns 0 or DT_EINVAL. */
static int op_kind_parse(const char *name, dt_op_kind *kind)
{
    for (int i = 0; i < DT_OP_KIND_COUNT; i++) {
        if (strcmp(name, kind_names[i]) == 0) {
            *kind = (dt_op_kind)i;
            return 0;
        }
    }
    return DT_EINVAL;
}

/* ---- task arithmetic ------------------------------------------------------ */

/* Products of four sizes of up to 2^31 fit 128 bits, not 64: multiply with
 * a check. The element count of a, b, c, d, or -1 past DT_TENSOR_MAX_ELEMENTS. */
static long long elements(long long a, long long b, long long c, long long d)
{
    long long factors[4] = { a, b, c, d }, n = 1;
    for (int i = 0; i < 4; i++) {
        if (factors[i] < 0 || (factors[i] > 0 && n > DT_TENSOR_MAX_ELEMENTS / factors[i]))
            return -1;
        n *= factors[i];
    }
    return n;
}

/* True (and err set) when an input, weight or output tensor is too large. */
static bool tensors_too_large(const dt_task *t, dt_error *err)
{
    const dt_conv_shape *c = &t->conv;
    const dt_mm_shape *m = &t->mm;
    bool conv = t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D;
    long long n[3];
    static const char *const what[3] = { "input", "weight", "output" };
    if (conv) {
        n[0] = elements(c->n, c->c_in, c->h, c->w);
        n[1] = elements(c->c_out, t->kind == DT_OP_CONV2D ? c->c_in : 1, c->kh, c->kw);
        n[2] = elements(c->n, c->c_out, c->oh, c->ow);
    } else {
        n[0] = elements(m->b, m->m, m->k, 1);
        n[1] = elements(m->b, m->n, m->k, 1);
        n[2] = elements(m->b, m->m, m->n, 1);
    }
    for (int i = 0; i < 3; i++)
        if (n[i] < 0) {
            dt_error_set(err, DT_EINVAL, "the %s tensor is over %lld elements (kernels index it with int)",
                         what[i], DT_TENSOR_MAX_ELEMENTS);
            return true;
        }
    return false;
}

/* Floor of a / b for b > 0 and any sign of a. */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Ceiling of a / b for b > 0 and any sign of a. */
static int64_t ceil_div(int64_t a, int64_t b)
{
    return -floor_div(-a, b);
}

void dt_conv_taps(int in, int pos, int k, int stride, int pad, int dilation, int *first, int *end)
{
    int64_t origin = (int64_t)pos * stride - pad;   /* input index of tap 0 */
    int64_t lo = origin >= 0 ? 0 : ceil_div(-origin, dilation);
    int64_t hi = ceil_div(in - origin, dilation);
    if (hi > k)
        hi = k;
    if (lo > k)
        lo = k;
    *first = (int)lo;
    *end = (int)(hi > lo ? hi : lo);
}

/* The (output, kernel tap) pairs along one dimension whose input index
 * o * stride - pad + k * dilation lies inside [0, in): the taps a kernel
 * must compute; the others read padding. The sum of dt_conv_taps over the
 * outputs, counted tap by tap (k steps, not out: a degenerate model's row
 * may hold billions of outputs); test_model checks the two agree. */
double dt_conv_taps_inside(int in, int out, int k, int stride, int pad, int dilation)
{
    double n = 0;
    for (int64_t kk = 0; kk < k; kk++) {
        int64_t shift = kk * dilation - pad;   /* input index = o * stride + shift */
        int64_t lo = shift >= 0 ? 0 : floor_div(-shift + stride - 1, stride);
        int64_t hi = floor_div(in - 1 - shift, stride);
        if (hi > out - 1)
            hi = out - 1;
        if (hi >= lo)
            n += (double)(hi - lo + 1);
    }
    return n;
}

static int conv_finish(dt_task *t, dt_error *err)
{
    dt_conv_shape *c = &t->conv;
    if (c->n < 1 || c->c_in < 1 || c->h < 1 || c->w < 1 || c->c_out < 1 || c->kh < 1 ||
        c->kw < 1 || c->sh < 1 || c->sw < 1 || c->ph < 0 || c->pw < 0 || c->dh < 1 || c->dw < 1)
        return dt_error_set(err, DT_EINVAL, "sizes must be positive (padding >= 0)");
    /* 64-bit: a dilation or padding near the reader's limit overflows int */
    int64_t ekh = (int64_t)(c->kh - 1) * c->dh + 1, ekw = (int64_t)(c->kw - 1) * c->dw + 1;
    int64_t hp = c->h + 2 * (int64_t)c->ph, wp = c->w + 2 * (int64_t)c->pw;
    if (hp < ekh || wp < ekw)
        return dt_error_set(err, DT_EINVAL, "kernel %lldx%lld (dilated) does not fit the padded %lldx%lld input",
                            (long long)ekh, (long long)ekw, (long long)hp, (long long)wp);
    if (elements(c->n, c->c_in, c->h, c->w) < 0)
        return dt_error_set(err, DT_EINVAL, "the input tensor [%d, %d, %d, %d] is over %lld elements "
                            "(kernels index it with int)", c->n, c->c_in, c->h, c->w, DT_TENSOR_MAX_ELEMENTS);
    /* kernels copy the input into a padded buffer (depthwise: per output channel) */
    if (elements(c->n, c->c_out > c->c_in ? c->c_out : c->c_in, hp, wp) < 0)
        return dt_error_set(err, DT_EINVAL, "the padded input (%lld x %lld per channel) is over %lld elements",
                            (long long)hp, (long long)wp, DT_TENSOR_MAX_ELEMENTS);
    c->oh = (int)((hp - ekh) / c->sh + 1);
    c->ow = (int)((wp - ekw) / c->sw + 1);
    if (t->kind == DT_OP_DEPTHWISE_CONV2D && c->c_out % c->c_in != 0)
        return dt_error_set(err, DT_EINVAL, "depthwise output channels %d are not a multiple of %d",
                            c->c_out, c->c_in);
    if (tensors_too_large(t, err))
        return DT_EINVAL;
    double out = (double)c->n * c->c_out * c->oh * c->ow;
    double red = (t->kind == DT_OP_CONV2D ? (double)c->c_in : 1.0) * c->kh * c->kw;
    double wsz = (double)c->c_out * (t->kind == DT_OP_CONV2D ? c->c_in : 1) * c->kh * c->kw;
    t->flops = 2.0 * out * red;
    t->useful_flops = 2.0 * c->n * c->c_out * (t->kind == DT_OP_CONV2D ? (double)c->c_in : 1.0) *
                      dt_conv_taps_inside(c->h, c->oh, c->kh, c->sh, c->ph, c->dh) *
                      dt_conv_taps_inside(c->w, c->ow, c->kw, c->sw, c->pw, c->dw);
    t->bytes = 4.0 * ((double)c->n * c->c_in * c->h * c->w + wsz + out);
    t->write_bytes = 4.0 * out;
    return 0;
}

int dt_task_finish(dt_task *task, dt_error *err)
{
    if (task->count < 1)
        return dt_error_set(err, DT_EINVAL, "count must be >= 1");
    if (task->kind == DT_OP_CONV2D || task->kind == DT_OP_DEPTHWISE_CONV2D)
        return conv_finish(task, err);
    dt_mm_shape *m = &task->mm;
    if (m->b < 1 || m->m < 1 || m->n < 1 || m->k < 1)
        return dt_error_set(err, DT_EINVAL, "matrix sizes must be positive");
    if (tensors_too_large(task, err))
        return DT_EINVAL;
    task->flops = 2.0 * m->b * m->m * m->n * m->k;
    task->useful_flops = task->flops;
    task->bytes = 4.0 * m->b * ((double)m->m * m->k + (double)m->n * m->k + (double)m->m * m->n);
    task->write_bytes = 4.0 * m->b * m->m * m->n;
    if (task->kind == DT_OP_DENSE) {
        task->bytes = 4.0 * ((double)m->m * m->k + (double)m->n * m->k + (double)m->m * m->n);
        task->write_bytes = 4.0 * m->m * m->n;
    }
    return 0;
}

/* ---- epilogues -------------------------------------------------------------- */

static const char *const act_names[] = { NULL, "relu", "relu6" };

const char *dt_act_name(dt_act act)
{
    return (unsigned)act <= DT_ACT_RELU6 ? act_names[act] : NULL;
}

bool dt_task_has_epilogue(const dt_task *task)
{
    return task->epilogue.bias || task->epilogue.residual || task->epilogue.act != DT_ACT_NONE;
}

void dt_task_epilogue_merge(dt_task_epilogue *into, const dt_task_epilogue *from)
{
    into->bias = into->bias || from->bias;
    into->residual = into->residual || from->residual;
    if (from->act > into->act)
        into->act = from->act;
}

void dt_task_epilogue_str(const dt_task_epilogue *e, char *buf, size_t len)
{
    const char *act = dt_act_name(e->act);
    snprintf(buf, len, "%s%s%s%s%s", e->bias ? "bias" : "",
             e->bias && e->residual ? "+" : "", e->residual ? "residual" : "",
             act && (e->bias || e->residual) ? "+" : "", act ? act : "");
}

int dt_task_epilogue_parse(const char *text, dt_task_epilogue *e)
{
    *e = (dt_task_epilogue){ .act = DT_ACT_NONE };
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "+");
        if (n == 4 && strncmp(p, "bias", 4) == 0 && !e->bias)
            e->bias = true;
        else if (n == 8 && strncmp(p, "residual", 8) == 0 && !e->residual)
            e->residual = true;
        else if (n == 4 && strncmp(p, "relu", 4) == 0 && e->act == DT_ACT_NONE)
            e->act = DT_ACT_RELU;
        else if (n == 5 && strncmp(p, "relu6", 5) == 0 && e->act == DT_ACT_NONE)
            e->act = DT_ACT_RELU6;
        else
            return DT_EINVAL;
        p += n;
        if (*p == '+' && !*++p)
            return DT_EINVAL;
    }
    return 0;
}

static void shape_str(const dt_task *t, char *buf, size_t len)
{
    const dt_conv_shape *c = &t->conv;
    const dt_mm_shape *m = &t->mm;
    switch (t->kind) {
    case DT_OP_CONV2D:
    case DT_OP_DEPTHWISE_CONV2D:
        snprintf(buf, len, "%dx%dx%dx%d k%dx%d s%d p%d%s -> %d", c->n, c->c_in, c->h, c->w,
                 c->kh, c->kw, c->sh, c->ph, c->dh > 1 ? " d2+" : "", c->c_out);
        break;
    case DT_OP_DENSE:
        snprintf(buf, len, "%dx%d * %dx%d^T", m->m, m->k, m->n, m->k);
        break;
    case DT_OP_BATCH_MATMUL:
        snprintf(buf, len, "%dx%dx%d * %dx%dx%d^T", m->b, m->m, m->k, m->b, m->n, m->k);
        break;
    default:
        snprintf(buf, len, "?");
    }
}

void dt_task_shape_str(const dt_task *t, char *buf, size_t len)
{
    shape_str(t, buf, len);
    if (!dt_task_has_epilogue(t))
        return;
    char epilogue[64];
    size_t used = strlen(buf);
    dt_task_epilogue_str(&t->epilogue, epilogue, sizeof epilogue);
    if (used < len)
        snprintf(buf + used, len - used, " +%s", epilogue);
}

int dt_task_similarity_group(const dt_task *t)
{
    bool conv = t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D;
    int kernel = conv ? t->conv.kh * 16 + t->conv.kw : 0;
    return (int)t->kind * 4096 + kernel;
}

void dt_task_tensor_sizes(const dt_task *t, size_t *input, size_t *weight, size_t *output)
{
    const dt_conv_shape *c = &t->conv;
    const dt_mm_shape *m = &t->mm;
    if (t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D) {
        size_t per_out = t->kind == DT_OP_CONV2D ? (size_t)c->c_in : 1;
        *input = (size_t)c->n * c->c_in * c->h * c->w;
        *weight = (size_t)c->c_out * per_out * c->kh * c->kw;
        *output = (size_t)c->n * c->c_out * c->oh * c->ow;
    } else {
        *input = (size_t)m->b * m->m * m->k;
        *weight = (size_t)m->b * m->n * m->k;
        *output = (size_t)m->b * m->m * m->n;
    }
}

uint64_t dt_task_memory_bytes(const dt_task *task)
{
    size_t input, weight, output;
    dt_task_tensor_sizes(task, &input, &weight, &output);
    return sizeof(float) * ((uint64_t)input + weight + 2 * (uint64_t)output);
}

static void reference_conv(const dt_task *t, const float *x, const float *w, float *y)
{
    const dt_conv_shape *c = &t->conv;
    bool depthwise = t->kind == DT_OP_DEPTHWISE_CONV2D;
    int mult = depthwise ? c->c_out / c->c_in : 1;
    for (int n = 0; n < c->n; n++)
    for (int co = 0; co < c->c_out; co++)
    for (int oh = 0; oh < c->oh; oh++)
    for (int ow = 0; ow < c->ow; ow++) {
        double acc = 0;
        int ci_lo = depthwise ? co / mult : 0, ci_hi = depthwise ? ci_lo + 1 : c->c_in;
        for (int ci = ci_lo; ci < ci_hi; ci++)
        for (int r = 0; r < c->kh; r++)
        for (int s = 0; s < c->kw; s++) {
            int ih = oh * c->sh + r * c->dh - c->ph, iw = ow * c->sw + s * c->dw - c->pw;
            if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w)
                continue;
            size_t xi = (((size_t)n * c->c_in + ci) * c->h + ih) * c->w + iw;
            size_t wi = depthwise ? ((size_t)co * c->kh + r) * c->kw + s
                                  : (((size_t)co * c->c_in + ci) * c->kh + r) * c->kw + s;
            acc += (double)x[xi] * w[wi];
        }
        y[(((size_t)n * c->c_out + co) * c->oh + oh) * c->ow + ow] = (float)acc;
    }
}

void dt_task_reference(const dt_task *t, const float *input, const float *weight, float *output)
{
    if (t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D) {
        reference_conv(t, input, weight, output);
        return;
    }
    const dt_mm_shape *m = &t->mm;
    for (int b = 0; b < m->b; b++)
    for (int i = 0; i < m->m; i++)
    for (int j = 0; j < m->n; j++) {
        const float *a = input + ((size_t)b * m->m + i) * m->k;
        const float *w = weight + ((size_t)b * m->n + j) * m->k;
        double acc = 0;
        for (int k = 0; k < m->k; k++)
            acc += (double)a[k] * w[k];
        output[((size_t)b * m->m + i) * m->n + j] = (float)acc;
    }
}

void dt_task_apply_epilogue(const dt_task *t, const float *bias, const float *residual,
                            dt_act act, float *output)
{
    bool conv = t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D;
    /* conv: [n][channel][pixels]; matrix products: [rows][column] */
    size_t outer = conv ? (size_t)t->conv.n * t->conv.c_out : (size_t)t->mm.b * t->mm.m;
    size_t inner = conv ? (size_t)t->conv.oh * t->conv.ow : (size_t)t->mm.n;
    for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
        size_t at = o * inner + i;
        float v = output[at];
        if (bias)
            v += conv ? bias[o % (size_t)t->conv.c_out] : bias[i];
        if (residual)
            v += residual[at];
        if (act != DT_ACT_NONE && !(v > 0.0f))
            v = 0.0f;
        if (act == DT_ACT_RELU6 && v > 6.0f)
            v = 6.0f;
        output[at] = v;
    }
}

/* ---- YAML reading ---------------------------------------------------------- */

typedef struct reader {
    const char *path;
    yaml_document_t *doc;
    dt_error *err;
    const dt_model_memory *memory;   /* NULL or task_bytes 0: no check */
} reader;

static int fail_at(reader *rd, const yaml_node_t *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(reader *rd, const yaml_node_t *node, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dt_error_set(rd->err, DT_EINVAL, "%s:%zu:%zu: %s", rd->path,
                        node ? node->start_mark.line + 1 : 1,
                        node ? node->start_mark.column + 1 : 1, msg);
}

static const char *scalar(const yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

/* Offset of the first byte of s[0..len) that breaks UTF-8 (overlong forms,
 * surrogates and code points past U+10FFFF included), or -1 when valid. */
static long utf8_error_at(const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        unsigned c = s[i], cp, min;
        size_t more;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0)
            more = 1, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0)
            more = 2, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0)
            more = 3, cp = c & 0x07, min = 0x10000;
        else
            return (long)i;
        if (len - i <= more)
            return (long)i;
        for (size_t j = 1; j <= more; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return (long)i;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return (long)i;
        i += more + 1;
    }
    return -1;
}

/* Copies a name scalar into dst (cap bytes) whole, or refuses it: names
 * are UTF-8 of at most cap - 1 bytes (they key the log, reports and JSON,
 * so a cut name would no longer match its own records). */
static int read_name(reader *rd, const yaml_node_t *node, const char *what, char *dst, size_t cap)
{
    const char *s = scalar(node);
    if (!s)
        return fail_at(rd, node, "%s must be a string", what);
    size_t len = node->data.scalar.length;
    if (strlen(s) != len)
        return fail_at(rd, node, "%s contains a NUL character", what);
    long bad = utf8_error_at((const unsigned char *)s, len);
    if (bad >= 0)
        return fail_at(rd, node, "%s is not valid UTF-8 (byte %ld)", what, bad + 1);
    if (len >= cap)
        return fail_at(rd, node, "%s is %zu bytes; names are at most %zu bytes of UTF-8", what, len, cap - 1);
    memcpy(dst, s, len + 1);
    return 0;
}

static int read_int(reader *rd, const yaml_node_t *node, const char *key, int *out)
{
    const char *s = scalar(node);
    char *end;
    if (!s)
        return fail_at(rd, node, "%s: expected an integer", key);
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > DT_MODEL_INT_MAX)
        return fail_at(rd, node, "%s: expected an integer from 0 to %d, got '%s'", key, DT_MODEL_INT_MAX, s);
    *out = (int)v;
    return 0;
}

/* A list of exactly `want` integers, or (when scalar_ok) one integer used for all. */
static int read_ints(reader *rd, const yaml_node_t *node, const char *key, int want,
                     bool scalar_ok, int *out)
{
    if (scalar_ok && node->type == YAML_SCALAR_NODE) {
        int v;
        int rc = read_int(rd, node, key, &v);
        for (int i = 0; rc == 0 && i < want; i++)
            out[i] = v;
        return rc;
    }
    if (node->type != YAML_SEQUENCE_NODE)
        return fail_at(rd, node, "%s: expected a list of %d integers", key, want);
    yaml_node_item_t *it = node->data.sequence.items.start;
    int n = (int)(node->data.sequence.items.top - it);
    if (n != want)
        return fail_at(rd, node, "%s: expected %d integers, got %d", key, want, n);
    for (int i = 0; i < n; i++) {
        int rc = read_int(rd, yaml_document_get_node(rd->doc, it[i]), key, &out[i]);
        if (rc)
            return rc;
    }
    return 0;
}

typedef struct op_fields {
    const yaml_node_t *name, *kind, *count, *input, *out_channels, *kernel, *stride,
        *padding, *dilation, *groups, *multiplier, *weight, *a, *b, *epilogue;
} op_fields;

static const char *const op_keys[] = {
    "name", "kind", "count", "input", "out_channels", "kernel", "stride", "padding",
    "dilation", "groups", "multiplier", "weight", "a", "b", "epilogue",
};

static int collect_fields(reader *rd, const yaml_node_t *op, op_fields *f)
{
    const yaml_node_t **slots = (const yaml_node_t **)f;
    memset(f, 0, sizeof *f);
    if (op->type != YAML_MAPPING_NODE)
        return fail_at(rd, op, "an op must be a mapping with kind, shapes and count");
    for (yaml_node_pair_t *p = op->data.mapping.pairs.start; p < op->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(rd->doc, p->key);
        const char *key = scalar(k);
        size_t i = 0, nkeys = sizeof op_keys / sizeof op_keys[0];
        while (key && i < nkeys && strcmp(key, op_keys[i]) != 0)
            i++;
        if (!key || i == nkeys)
            return fail_at(rd, k, "unknown op key '%s' (known: name, kind, count, input, "
                           "out_channels, kernel, stride, padding, dilation, groups, "
                           "multiplier, weight, a, b, epilogue)", key ? key : "?");
        slots[i] = yaml_document_get_node(rd->doc, p->value);
    }
    return 0;
}

static int need(reader *rd, const yaml_node_t *op, const yaml_node_t *field, const char *key,
                const char *kind)
{
    if (!field)
        return fail_at(rd, op, "%s op needs '%s'", kind, key);
    return 0;
}

static int parse_conv(reader *rd, const yaml_node_t *op, const op_fields *f, dt_task *t,
                      int batch)
{
    dt_conv_shape *c = &t->conv;
    const char *kind = dt_op_kind_name(t->kind);
    int in[4], k[2], s[2] = {1, 1}, p[2] = {0, 0}, d[2] = {1, 1}, rc;
    bool dw = t->kind == DT_OP_DEPTHWISE_CONV2D;
    if ((rc = need(rd, op, f->input, "input", kind)) || (rc = need(rd, op, f->kernel, "kernel", kind)) ||
        (!dw && (rc = need(rd, op, f->out_channels, "out_channels", kind))))
        return rc;
    if ((rc = read_ints(rd, f->input, "input", 4, false, in)) ||
        (rc = read_ints(rd, f->kernel, "kernel", 2, true, k)) ||
        (f->stride && (rc = read_ints(rd, f->stride, "stride", 2, true, s))) ||
        (f->padding && (rc = read_ints(rd, f->padding, "padding", 2, true, p))) ||
        (f->dilation && (rc = read_ints(rd, f->dilation, "dilation", 2, true, d))))
        return rc;
    if (in[0] != batch)
        return fail_at(rd, f->input, "input batch %d differs from the model's batch %d", in[0], batch);
    *c = (dt_conv_shape){ .n = in[0], .c_in = in[1], .h = in[2], .w = in[3], .kh = k[0],
                          .kw = k[1], .sh = s[0], .sw = s[1], .ph = p[0], .pw = p[1],
                          .dh = d[0], .dw = d[1] };
    if (dw) {
        int mult = 1;
        if (f->out_channels)
            return fail_at(rd, f->out_channels, "depthwise_conv2d takes 'multiplier', not 'out_channels'");
        if (f->multiplier && (rc = read_int(rd, f->multiplier, "multiplier", &mult)))
            return rc;
        if ((int64_t)c->c_in * mult > DT_MODEL_INT_MAX)
            return fail_at(rd, f->multiplier, "%d input channels x multiplier %d = %lld output channels; "
                           "the limit is %d", c->c_in, mult, (long long)c->c_in * mult, DT_MODEL_INT_MAX);
        c->c_out = c->c_in * mult;
    } else {
        int groups = 1;
        if (f->multiplier)
            return fail_at(rd, f->multiplier, "'multiplier' is only for depthwise_conv2d");
        if (f->groups && (rc = read_int(rd, f->groups, "groups", &groups)))
            return rc;
        if (groups != 1)
            return fail_at(rd, f->groups, "conv2d supports groups = 1 only (use depthwise_conv2d)");
        if ((rc = read_int(rd, f->out_channels, "out_channels", &c->c_out)))
            return rc;
    }
    return 0;
}

static int parse_mm(reader *rd, const yaml_node_t *op, const op_fields *f, dt_task *t, int batch)
{
    int rc;
    const char *kind = dt_op_kind_name(t->kind);
    if (t->kind == DT_OP_DENSE) {
        int x[2], w[2];
        if ((rc = need(rd, op, f->input, "input", kind)) || (rc = need(rd, op, f->weight, "weight", kind)) ||
            (rc = read_ints(rd, f->input, "input", 2, false, x)) ||
            (rc = read_ints(rd, f->weight, "weight", 2, false, w)))
            return rc;
        if (x[1] != w[1])
            return fail_at(rd, f->weight, "weight [N, K] has K = %d but input [M, K] has K = %d", w[1], x[1]);
        t->mm = (dt_mm_shape){ .b = 1, .m = x[0], .n = w[0], .k = x[1] };
        (void)batch;
        return 0;
    }
    int a[3], b[3];
    if ((rc = need(rd, op, f->a, "a", kind)) || (rc = need(rd, op, f->b, "b", kind)) ||
        (rc = read_ints(rd, f->a, "a", 3, false, a)) || (rc = read_ints(rd, f->b, "b", 3, false, b)))
        return rc;
    if (a[0] != b[0] || a[2] != b[2])
        return fail_at(rd, f->b, "b [B, N, K] = [%d, %d, %d] does not match a [B, M, K] = [%d, %d, %d]",
                       b[0], b[1], b[2], a[0], a[1], a[2]);
    t->mm = (dt_mm_shape){ .b = a[0], .m = a[1], .n = b[1], .k = a[2] };
    return 0;
}

/* `epilogue: [bias, residual, relu]`: a list of parts, each at most once
 * (one activation); conv2d, depthwise_conv2d and dense only. */
static int parse_epilogue(reader *rd, const yaml_node_t *node, dt_task *t)
{
    if (t->kind == DT_OP_BATCH_MATMUL)
        return fail_at(rd, node, "batch_matmul takes no epilogue (conv2d, depthwise_conv2d and dense do)");
    if (node->type != YAML_SEQUENCE_NODE)
        return fail_at(rd, node, "epilogue: expected a list of bias, residual, relu or relu6");
    for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
        const yaml_node_t *part = yaml_document_get_node(rd->doc, *it);
        const char *name = scalar(part);
        dt_task_epilogue one;
        if (!name || strchr(name, '+') || dt_task_epilogue_parse(name, &one) != 0 || !name[0])
            return fail_at(rd, part, "epilogue: '%s' is not one of bias, residual, relu, relu6",
                           name ? name : "?");
        if ((one.bias && t->epilogue.bias) || (one.residual && t->epilogue.residual) ||
            (one.act != DT_ACT_NONE && t->epilogue.act != DT_ACT_NONE))
            return fail_at(rd, part, "epilogue: '%s' comes twice (or a second activation)", name);
        dt_task_epilogue_merge(&t->epilogue, &one);
    }
    return 0;
}

static int parse_op(reader *rd, const yaml_node_t *op, int index, int batch, dt_task *t)
{
    op_fields f;
    int rc = collect_fields(rd, op, &f);
    if (rc)
        return rc;
    memset(t, 0, sizeof *t);
    t->count = 1;
    if (!f.kind)
        return fail_at(rd, op, "op needs 'kind' (conv2d, depthwise_conv2d, dense, batch_matmul)");
    if (!scalar(f.kind) || op_kind_parse(scalar(f.kind), &t->kind) != 0)
        return fail_at(rd, f.kind, "kind '%s' is not one of conv2d, depthwise_conv2d, dense, batch_matmul",
                       scalar(f.kind) ? scalar(f.kind) : "?");
    if (f.name && (rc = read_name(rd, f.name, "op name", t->name, sizeof t->name)))
        return rc;
    if (!t->name[0])
        snprintf(t->name, sizeof t->name, "%s_%d", dt_op_kind_name(t->kind), index);
    if (f.count && (rc = read_int(rd, f.count, "count", &t->count)))
        return rc;
    if (t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D)
        rc = parse_conv(rd, op, &f, t, batch);
    else
        rc = parse_mm(rd, op, &f, t, batch);
    if (rc == 0 && f.epilogue)
        rc = parse_epilogue(rd, f.epilogue, t);
    if (rc)
        return rc;
    dt_error sub;
    if (dt_task_finish(t, &sub) != 0)
        return fail_at(rd, op, "%s: %s", t->name, sub.msg);
    uint64_t need = dt_task_memory_bytes(t);
    if (rd->memory && rd->memory->task_bytes && need > rd->memory->task_bytes)
        return fail_at(rd, op, "%s: measuring it takes %.3g GiB of tensors (input, weight, output and "
                       "its reference); the target allows a task %.3g GiB (%s)", t->name,
                       (double)need / (1 << 30), (double)rd->memory->task_bytes / (1 << 30),
                       rd->memory->source);
    return 0;
}

static bool same_shape(const dt_task *a, const dt_task *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == DT_OP_CONV2D || a->kind == DT_OP_DEPTHWISE_CONV2D)
        return memcmp(&a->conv, &b->conv, sizeof a->conv) == 0;
    return memcmp(&a->mm, &b->mm, sizeof a->mm) == 0;
}

int dt_model_add_task(dt_model *m, const dt_task *t)
{
    for (int i = 0; i < m->ntasks; i++) {
        if (same_shape(&m->tasks[i], t)) {
            if ((int64_t)m->tasks[i].count + t->count > DT_MODEL_INT_MAX)
                return DT_EINVAL;
            m->tasks[i].count += t->count;
            dt_task_epilogue_merge(&m->tasks[i].epilogue, &t->epilogue);
            return i;
        }
    }
    if (dt_resize(&m->tasks, (size_t)m->ntasks + 1, sizeof *m->tasks) != 0)
        return DT_ENOMEM;
    m->tasks[m->ntasks++] = *t;
    return m->ntasks - 1;
}

static const yaml_node_t *map_get(reader *rd, const yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const char *k = scalar(yaml_document_get_node(rd->doc, p->key));
        if (k && strcmp(k, key) == 0)
            return yaml_document_get_node(rd->doc, p->value);
    }
    return NULL;
}

static int check_top_keys(reader *rd, const yaml_node_t *root)
{
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(rd->doc, p->key);
        const char *key = scalar(k);
        if (!key || (strcmp(key, "name") && strcmp(key, "batch") && strcmp(key, "ops")))
            return fail_at(rd, k, "unknown key '%s' (known: name, batch, ops)", key ? key : "?");
    }
    return 0;
}

/* Adds op (parsed into t) to the model's tasks. */
static int add_op(reader *rd, dt_model *m, const yaml_node_t *op, const dt_task *t)
{
    int rc = dt_model_add_task(m, t);
    if (rc >= 0)
        return 0;
    if (rc == DT_EINVAL)
        return fail_at(rd, op, "op %s has the shape of an earlier op; their counts add up to more than %d",
                       t->name, DT_MODEL_INT_MAX);
    if (rc)
        return dt_error_set(rd->err, rc, "%s: out of memory", rd->path);
    return 0;
}

static int parse_model(reader *rd, dt_model *m)
{
    const yaml_node_t *root = yaml_document_get_root_node(rd->doc);
    if (!root || root->type != YAML_MAPPING_NODE)
        return fail_at(rd, root, "a model file is a mapping with name, batch and ops");
    int rc = check_top_keys(rd, root);
    if (rc)
        return rc;
    const yaml_node_t *name = map_get(rd, root, "name"), *batch = map_get(rd, root, "batch");
    const yaml_node_t *ops = map_get(rd, root, "ops");
    if (!name)
        return fail_at(rd, root, "model needs a 'name' string");
    if ((rc = read_name(rd, name, "model name", m->name, sizeof m->name)))
        return rc;
    m->batch = 1;
    if (batch && (rc = read_int(rd, batch, "batch", &m->batch)))
        return rc;
    if (!ops || ops->type != YAML_SEQUENCE_NODE || ops->data.sequence.items.top == ops->data.sequence.items.start)
        return fail_at(rd, ops ? ops : root, "model needs a non-empty 'ops' list");
    int index = 0;
    size_t nops = (size_t)(ops->data.sequence.items.top - ops->data.sequence.items.start);
    if (nops > DT_MODEL_MAX_OPS)
        return fail_at(rd, ops, "%zu ops; a model has at most %d", nops, DT_MODEL_MAX_OPS);
    /* op names seen so far: a name must say which op it is */
    char (*names)[DT_NAME_MAX] = calloc(nops, sizeof *names);
    if (!names)
        return dt_error_set(rd->err, DT_ENOMEM, "%s: out of memory", rd->path);
    rc = 0;
    for (yaml_node_item_t *it = ops->data.sequence.items.start; rc == 0 && it < ops->data.sequence.items.top; it++) {
        dt_task t;
        const yaml_node_t *op = yaml_document_get_node(rd->doc, *it);
        if ((rc = parse_op(rd, op, index, m->batch, &t)))
            break;
        for (int j = 0; j < index && rc == 0; j++)
            if (strcmp(names[j], t.name) == 0)
                rc = fail_at(rd, op, "op name '%s' is used twice (also op %d of ops); each op needs its own name",
                             t.name, j + 1);
        snprintf(names[index++], DT_NAME_MAX, "%s", t.name);
        if (rc == 0)
            rc = add_op(rd, m, op, &t);
    }
    free(names);
    return rc;
}


static int load_document(const char *path, yaml_document_t *doc, dt_error *err)
{
    dt_buf text = {0};
    int rc = dt_read_input(path, "model file", &text, err);
    if (rc)
        return rc;
    dt_yamldoc_problem why;
    rc = dt_yamldoc_load(text.data, text.len, doc, &why);
    dt_buf_free(&text);
    if (rc)
        return dt_error_set(err, why.code, "%s:%zu:%zu: %s", path, why.mark.line + 1,
                            why.mark.column + 1, why.msg);
    if (!yaml_document_get_root_node(doc)) {
        yaml_document_delete(doc);
        return dt_error_set(err, DT_EINVAL, "%s:1:1: the file is empty", path);
    }
    return 0;
}

int dt_model_load(const char *path, dt_model **out, dt_error *err)
{
    return dt_model_load_within(path, NULL, out, err);
}

int dt_model_load_within(const char *path, const dt_model_memory *memory, dt_model **out,
                         dt_error *err)
{
    *out = NULL;
    yaml_document_t doc;
    int rc = load_document(path, &doc, err);
    if (rc)
        return rc;
    dt_model *m = calloc(1, sizeof *m);
    if (!m) {
        yaml_document_delete(&doc);
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    }
    snprintf(m->path, sizeof m->path, "%s", path);
    reader rd = { path, &doc, err, memory };
    rc = parse_model(&rd, m);
    yaml_document_delete(&doc);
    if (rc) {
        dt_model_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void dt_model_free(dt_model *model)
{
    if (!model)
        return;
    free(model->tasks);
    free(model);
}

int dt_model_find_task(const dt_model *model, const char *name)
{
    for (int i = 0; i < model->ntasks; i++)
        if (strcmp(model->tasks[i].name, name) == 0)
            return i;
    return -1;
}

/* ---- writing a model file -------------------------------------------------- */

static void put(dt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(dt_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dt_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

/* name as a YAML scalar: plain when it is [A-Za-z0-9_.-] starting with a
 * letter, digit or '_', else double-quoted with escapes. */
static void put_name(dt_buf *b, const char *name)
{
    bool plain = name[0] && (isalnum((unsigned char)name[0]) || name[0] == '_');
    for (const char *c = name; plain && *c; c++)
        plain = isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-';
    if (plain) {
        put(b, "%s", name);
        return;
    }
    put(b, "\"");
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        if (*c == '"' || *c == '\\')
            put(b, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7f)
            put(b, "\\x%02x", *c);
        else
            put(b, "%c", *c);
    }
    put(b, "\"");
}

/* "key: v" for a pair of equal values, "key: [a, b]" otherwise. */
static void put_pair(dt_buf *b, const char *key, int a, int c)
{
    if (a == c)
        put(b, ", %s: %d", key, a);
    else
        put(b, ", %s: [%d, %d]", key, a, c);
}

static void put_task(dt_buf *b, const dt_task *t)
{
    put(b, "  - {name: ");
    put_name(b, t->name);
    put(b, ", kind: %s", dt_op_kind_name(t->kind));
    const dt_conv_shape *c = &t->conv;
    const dt_mm_shape *m = &t->mm;
    switch (t->kind) {
    case DT_OP_CONV2D:
    case DT_OP_DEPTHWISE_CONV2D:
        put(b, ", input: [%d, %d, %d, %d]", c->n, c->c_in, c->h, c->w);
        if (t->kind == DT_OP_CONV2D)
            put(b, ", out_channels: %d", c->c_out);
        else if (c->c_out != c->c_in)
            put(b, ", multiplier: %d", c->c_out / c->c_in);
        put_pair(b, "kernel", c->kh, c->kw);
        put_pair(b, "stride", c->sh, c->sw);
        put_pair(b, "padding", c->ph, c->pw);
        if (c->dh != 1 || c->dw != 1)
            put_pair(b, "dilation", c->dh, c->dw);
        break;
    case DT_OP_DENSE:
        put(b, ", input: [%d, %d], weight: [%d, %d]", m->m, m->k, m->n, m->k);
        break;
    default:
        put(b, ", a: [%d, %d, %d], b: [%d, %d, %d]", m->b, m->m, m->k, m->b, m->n, m->k);
        break;
    }
    if (dt_task_has_epilogue(t)) {
        char parts[64];
        dt_task_epilogue_str(&t->epilogue, parts, sizeof parts);
        for (char *at = parts; *at; at++)
            if (*at == '+')
                *at = ',';
        put(b, ", epilogue: [");
        char *save = NULL;
        for (char *part = strtok_r(parts, ",", &save); part; part = strtok_r(NULL, ",", &save))
            put(b, "%s%s", part == parts ? "" : ", ", part);
        put(b, "]");
    }
    put(b, ", count: %d}\n", t->count);
}

int dt_model_format(const dt_model *model, const char *comment, dt_buf *out)
{
    for (const char *line = comment; line && *line;) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        put(out, "#%s%.*s\n", len ? " " : "", len, line);
        line = end ? end + 1 : line + len;
    }
    put(out, "name: ");
    put_name(out, model->name);
    put(out, "\nbatch: %d\nops:\n", model->batch);
    for (int k = 0; k < model->ntasks; k++)
        put_task(out, &model->tasks[k]);
    return out->failed ? DT_ENOMEM : 0;
}
