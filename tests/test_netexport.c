/* test_netexport.c — the reference executor of a network graph and the
 * network export: every op of graph.h checked against values worked out by
 * hand on tiny inputs (ceil_mode pools and count_include_pad included); a
 * small network built with the graph API (a ResNet-like block with a
 * residual, a ceil_mode max pool, a squeezenet fire module's concat, a
 * depthwise conv with relu6, an average pool, add, act, global average
 * pool, flatten, dense) exported with tuned-style configs (valid points of
 * each task's CPU space), with untuned tasks, on two OpenMP threads and at
 * batch 2, built with cc and make alone, run by its own program and
 * compared with the reference executor; the library's API driven by a program of the
 * test's own (wrong weights files refused with a message, no state kept
 * between calls); graphs and choices the export cannot take refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <gsl/gsl_rng.h>

#include "dtune/graph.h"
#include "dtune/graph_ref.h"
#include "dtune/measure.h"
#include "dtune/netexport.h"
#include "dtune/target.h"
#include "support/run_cmd.h"

static char out[1 << 16];

/* cmd under sh, its output into out; its exit status. */
static int shell(const char *cmd)
{
    return dt_test_shell(cmd, out, sizeof out);
}

/* ---- building graphs ---------------------------------------------------------------- */

static int tensor(dt_graph *g, const char *name, int ndims, const int *dims, const float *data)
{
    dt_error err;
    int t = dt_graph_add_tensor(g, name, ndims, dims, data, &err);
    if (t < 0)
        fail_msg("%s", err.msg);
    return t;
}

static int act4(dt_graph *g, const char *name, int n, int c, int h, int w)
{
    return tensor(g, name, 4, (int[]){ n, c, h, w }, NULL);
}

/* A constant of the dims given, uniform in [-scale, scale) from seed. */
static int random_constant(dt_graph *g, const char *name, int ndims, const int *dims, double scale,
                           uint64_t seed)
{
    size_t n = 1;
    for (int d = 0; d < ndims; d++)
        n *= (size_t)dims[d];
    float *data = malloc(n * sizeof *data);
    assert_non_null(data);
    dt_measure_fill(data, n, &seed);
    for (size_t i = 0; i < n; i++)
        data[i] = (float)(data[i] * scale);
    int t = tensor(g, name, ndims, dims, data);
    free(data);
    return t;
}

static void add_node(dt_graph *g, dt_graph_node *node)
{
    dt_error err;
    if (dt_graph_add_node(g, node, &err) < 0)
        fail_msg("%s", err.msg);
}

static dt_graph_node node_of(const char *name, dt_graph_op op, int output)
{
    dt_graph_node n = { .op = op, .output = output, .epilogue = { .bias = -1, .residual = -1 } };
    snprintf(n.name, sizeof n.name, "%s", name);
    return n;
}

typedef struct conv_spec {
    int c_out, k, stride, pad;
    bool depthwise, bias;
    int residual;        /* tensor, or -1 */
    dt_act act;
} conv_spec;

/* A conv node on x with random weights (and bias); returns its output. */
static int conv(dt_graph *g, const char *name, int x, conv_spec s, uint64_t seed)
{
    const dt_graph_tensor *in = &g->tensors[x];
    dt_graph_node n = node_of(name, DT_GRAPH_CONV, -1);
    dt_conv_shape c = { .n = in->dims[0], .c_in = in->dims[1], .h = in->dims[2], .w = in->dims[3],
                        .c_out = s.c_out, .kh = s.k, .kw = s.k, .sh = s.stride, .sw = s.stride,
                        .ph = s.pad, .pw = s.pad, .dh = 1, .dw = 1 };
    n.attr.kernel = (dt_task){ .kind = s.depthwise ? DT_OP_DEPTHWISE_CONV2D : DT_OP_CONV2D, .conv = c };
    char wname[DT_NAME_MAX + 8];
    snprintf(wname, sizeof wname, "%s.w", name);
    double scale = 1.0 / sqrt((double)(s.depthwise ? 1 : c.c_in) * s.k * s.k);
    int w = random_constant(g, wname, 4, (int[]){ s.c_out, s.depthwise ? 1 : c.c_in, s.k, s.k }, scale,
                            seed);
    if (s.bias) {
        snprintf(wname, sizeof wname, "%s.b", name);
        n.epilogue.bias = random_constant(g, wname, 1, (int[]){ s.c_out }, 0.3, seed ^ 0xb1a5);
    }
    snprintf(wname, sizeof wname, "%s.y", name);
    int oh = (c.h + 2 * s.pad - s.k) / s.stride + 1, ow = (c.w + 2 * s.pad - s.k) / s.stride + 1;
    n.output = act4(g, wname, c.n, s.c_out, oh, ow);
    n.ninputs = 2;
    n.inputs[0] = x;
    n.inputs[1] = w;
    n.epilogue.residual = s.residual;
    n.epilogue.act = s.act;
    add_node(g, &n);
    return n.output;
}

static int pool(dt_graph *g, const char *name, dt_graph_op op, int x, dt_pool_attr a)
{
    const dt_graph_tensor *in = &g->tensors[x];
    int oh = 1, ow = 1;
    if (op != DT_GRAPH_GLOBAL_AVG_POOL)
        assert_int_equal(dt_graph_ref_pool_size(&a, in->dims[2], in->dims[3], &oh, &ow), 0);
    char yname[DT_NAME_MAX + 8];
    snprintf(yname, sizeof yname, "%s.y", name);
    dt_graph_node n = node_of(name, op, act4(g, yname, in->dims[0], in->dims[1], oh, ow));
    n.ninputs = 1;
    n.inputs[0] = x;
    n.attr.pool = a;
    add_node(g, &n);
    return n.output;
}

/* A node of op on inputs (same shape as the first, or as dims when given). */
static int simple(dt_graph *g, const char *name, dt_graph_op op, int ninputs, const int *inputs,
                  int ndims, const int *dims)
{
    char yname[DT_NAME_MAX + 8];
    snprintf(yname, sizeof yname, "%s.y", name);
    const dt_graph_tensor *x = &g->tensors[inputs[0]];
    dt_graph_node n = node_of(name, op, tensor(g, yname, dims ? ndims : x->ndims, dims ? dims : x->dims,
                                               NULL));
    n.ninputs = ninputs;
    memcpy(n.inputs, inputs, (size_t)ninputs * sizeof *inputs);
    n.attr.act = DT_ACT_RELU;
    add_node(g, &n);
    return n.output;
}

static int dense(dt_graph *g, const char *name, int x, int n_out, uint64_t seed)
{
    int m = g->tensors[x].dims[0], k = g->tensors[x].dims[1];
    dt_graph_node n = node_of(name, DT_GRAPH_DENSE, tensor(g, "logits", 2, (int[]){ m, n_out }, NULL));
    n.attr.kernel = (dt_task){ .kind = DT_OP_DENSE, .mm = { .b = 1, .m = m, .n = n_out, .k = k } };
    n.ninputs = 2;
    n.inputs[0] = x;
    n.inputs[1] = random_constant(g, "fc.w", 2, (int[]){ n_out, k }, 1.0 / sqrt(k), seed);
    n.epilogue.bias = random_constant(g, "fc.b", 1, (int[]){ n_out }, 0.2, seed + 1);
    add_node(g, &n);
    return n.output;
}

/* The small network: every op of graph.h, a residual, a fire module's
 * concat, two nodes of one task. Input [batch,3,29,27], output [batch,10]. */
static dt_graph *mini_network(int batch)
{
    dt_graph *g = dt_graph_new("mini");
    assert_non_null(g);
    g->input = act4(g, "image", batch, 3, 29, 27);
    int c1 = conv(g, "conv1", g->input, (conv_spec){ 16, 3, 2, 1, false, true, -1, DT_ACT_RELU }, 11);
    int p1 = pool(g, "pool1", DT_GRAPH_MAX_POOL, c1,
                  (dt_pool_attr){ .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ceil_mode = true });
    assert_int_equal(g->tensors[p1].dims[2], 7);
    int a = conv(g, "block.conv_a", p1, (conv_spec){ 16, 3, 1, 1, false, true, -1, DT_ACT_RELU }, 12);
    int b = conv(g, "block.conv_b", a, (conv_spec){ 16, 3, 1, 1, false, true, p1, DT_ACT_RELU }, 13);
    int sq = conv(g, "fire.squeeze", b, (conv_spec){ 8, 1, 1, 0, false, true, -1, DT_ACT_RELU }, 14);
    int e1 = conv(g, "fire.expand1", sq, (conv_spec){ 12, 1, 1, 0, false, true, -1, DT_ACT_RELU }, 15);
    int e3 = conv(g, "fire.expand3", sq, (conv_spec){ 12, 3, 1, 1, false, true, -1, DT_ACT_RELU }, 16);
    int cat = simple(g, "fire.concat", DT_GRAPH_CONCAT, 2, (int[]){ e1, e3 }, 4, (int[]){ batch, 24, 7, 7 });
    int dw = conv(g, "dw", cat, (conv_spec){ 24, 3, 2, 1, true, true, -1, DT_ACT_RELU6 }, 17);
    int ap = pool(g, "avg", DT_GRAPH_AVG_POOL, dw,
                  (dt_pool_attr){ .kh = 3, .kw = 3, .sh = 2, .sw = 2, .pad_top = 1, .pad_left = 1,
                                  .pad_bottom = 1, .pad_right = 1, .ceil_mode = true });
    assert_int_equal(g->tensors[ap].dims[2], 3);
    int r = simple(g, "relu", DT_GRAPH_ACT, 1, (int[]){ ap }, 0, NULL);
    int sum = simple(g, "add", DT_GRAPH_ADD, 2, (int[]){ ap, r }, 0, NULL);
    int gap = pool(g, "gap", DT_GRAPH_GLOBAL_AVG_POOL, sum, (dt_pool_attr){ 0 });
    int flat = simple(g, "flatten", DT_GRAPH_FLATTEN, 1, (int[]){ gap }, 2, (int[]){ batch, 24 });
    g->output = dense(g, "fc", flat, 10, 18);
    return g;
}

/* ---- the reference executor by hand ------------------------------------------------- */

static const float hand_x[9] = { 1.5f, -2.0f, 0.25f, 3.0f, 0.5f, -1.0f, -0.75f, 2.0f, 1.25f };

/* One node of op on the 1x1x3x3 hand input; returns the graph. */
static dt_graph *hand_graph(dt_graph_op op, dt_pool_attr a)
{
    dt_graph *g = dt_graph_new("hand");
    g->input = act4(g, "x", 1, 1, 3, 3);
    g->output = pool(g, "p", op, g->input, a);
    return g;
}

static void expect_run(const dt_graph *g, const float *input, const float *want, size_t n)
{
    float got[16];
    dt_error err;
    if (dt_graph_ref_run(g, input, got, &err) != 0)
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < n; i++)
        if (fabsf(got[i] - want[i]) > 1e-6f * (1 + fabsf(want[i])))
            fail_msg("element %zu is %.9g, by hand %.9g", i, (double)got[i], (double)want[i]);
}

static void test_reference_pools_by_hand(void **state)
{
    (void)state;
    dt_pool_attr k2s2 = { .kh = 2, .kw = 2, .sh = 2, .sw = 2, .ceil_mode = true };
    /* ceil_mode: the last window holds one row or column of the input */
    dt_graph *g = hand_graph(DT_GRAPH_MAX_POOL, k2s2);
    expect_run(g, hand_x, (float[]){ 3.0f, 0.25f, 2.0f, 1.25f }, 4);
    dt_graph_free(g);
    g = hand_graph(DT_GRAPH_AVG_POOL, k2s2);
    expect_run(g, hand_x, (float[]){ 0.75f, -0.375f, 0.625f, 1.25f }, 4);
    dt_graph_free(g);
    /* count_include_pad: the padding counts, a ceil window past the padded input not */
    k2s2.count_include_pad = true;
    g = hand_graph(DT_GRAPH_AVG_POOL, k2s2);
    expect_run(g, hand_x, (float[]){ 0.75f, -0.375f, 0.625f, 1.25f }, 4);
    dt_graph_free(g);
    dt_pool_attr k3p1 = { .kh = 3, .kw = 3, .sh = 2, .sw = 2, .pad_top = 1, .pad_left = 1,
                          .pad_bottom = 1, .pad_right = 1, .count_include_pad = true };
    g = hand_graph(DT_GRAPH_AVG_POOL, k3p1);
    expect_run(g, hand_x, (float[]){ 3.0f / 9, -2.25f / 9, 4.75f / 9, 2.75f / 9 }, 4);
    dt_graph_free(g);
    k3p1.count_include_pad = false;
    g = hand_graph(DT_GRAPH_AVG_POOL, k3p1);
    expect_run(g, hand_x, (float[]){ 0.75f, -0.5625f, 1.1875f, 0.6875f }, 4);
    dt_graph_free(g);
    g = hand_graph(DT_GRAPH_MAX_POOL, k3p1);
    expect_run(g, hand_x, (float[]){ 3.0f, 0.5f, 3.0f, 2.0f }, 4);
    dt_graph_free(g);
    g = hand_graph(DT_GRAPH_GLOBAL_AVG_POOL, (dt_pool_attr){ 0 });
    expect_run(g, hand_x, (float[]){ 4.75f / 9 }, 1);
    dt_graph_free(g);
    /* the sizes: a ceil window starting in the end padding is dropped */
    int oh, ow;
    dt_pool_attr p = { .kh = 2, .kw = 3, .sh = 2, .sw = 2, .pad_bottom = 1, .ceil_mode = true };
    assert_int_equal(dt_graph_ref_pool_size(&p, 4, 7, &oh, &ow), 0);
    assert_int_equal(oh, 2);   /* ceil(3 / 2) + 1 = 3, but row 4 starts in the padding */
    assert_int_equal(ow, 3);
    p.ceil_mode = false;
    assert_int_equal(dt_graph_ref_pool_size(&p, 4, 7, &oh, &ow), 0);
    assert_int_equal(oh, 2);
    p.kh = 9;
    assert_int_equal(dt_graph_ref_pool_size(&p, 4, 7, &oh, &ow), DT_EINVAL);
}

static void test_reference_kernels_by_hand(void **state)
{
    (void)state;
    dt_error err;
    /* conv 1 -> 2 channels, 2x2, bias, relu */
    dt_graph *g = dt_graph_new("hand_conv");
    g->input = act4(g, "x", 1, 1, 3, 3);
    const float w[8] = { 1, 0, 0, -1, 0.5f, 0.5f, 0.5f, 0.5f }, bias[2] = { 0.1f, -1.0f };
    dt_graph_node n = node_of("c", DT_GRAPH_CONV, act4(g, "y", 1, 2, 2, 2));
    n.ninputs = 2;
    n.inputs[0] = g->input;
    n.inputs[1] = tensor(g, "w", 4, (int[]){ 2, 1, 2, 2 }, w);
    n.epilogue.bias = tensor(g, "b", 1, (int[]){ 2 }, bias);
    n.epilogue.act = DT_ACT_RELU;
    n.attr.kernel = (dt_task){ .kind = DT_OP_CONV2D, .conv = { 1, 1, 3, 3, 2, 2, 2, 1, 1, 0, 0, 1, 1 } };
    add_node(g, &n);
    g->output = n.output;
    expect_run(g, hand_x, (float[]){ 1.1f, 0, 1.1f, 0, 0.5f, 0, 1.375f, 0.375f }, 8);
    dt_graph_free(g);

    /* 1x1 conv with a residual: relu(2x + 0.5 + x) */
    g = dt_graph_new("hand_residual");
    g->input = act4(g, "x", 1, 1, 3, 3);
    n = node_of("c", DT_GRAPH_CONV, act4(g, "y", 1, 1, 3, 3));
    n.ninputs = 2;
    n.inputs[0] = g->input;
    n.inputs[1] = tensor(g, "w", 4, (int[]){ 1, 1, 1, 1 }, (float[]){ 2 });
    n.epilogue.bias = tensor(g, "b", 1, (int[]){ 1 }, (float[]){ 0.5f });
    n.epilogue.residual = g->input;
    n.epilogue.act = DT_ACT_RELU;
    n.attr.kernel = (dt_task){ .kind = DT_OP_CONV2D, .conv = { 1, 1, 3, 3, 1, 1, 1, 1, 1, 0, 0, 1, 1 } };
    add_node(g, &n);
    g->output = n.output;
    expect_run(g, hand_x, (float[]){ 5.0f, 0, 1.25f, 9.5f, 2.0f, 0, 0, 6.5f, 4.25f }, 9);
    dt_graph_free(g);

    /* depthwise 1x1 with relu6, then concat with the input, flatten, dense */
    g = dt_graph_new("hand_dense");
    g->input = act4(g, "x", 1, 2, 1, 2);
    n = node_of("dw", DT_GRAPH_CONV, act4(g, "d", 1, 2, 1, 2));
    n.ninputs = 2;
    n.inputs[0] = g->input;
    n.inputs[1] = tensor(g, "w", 4, (int[]){ 2, 1, 1, 1 }, (float[]){ 2.5f, -4.0f });
    n.epilogue.act = DT_ACT_RELU6;
    n.attr.kernel = (dt_task){ .kind = DT_OP_DEPTHWISE_CONV2D,
                               .conv = { 1, 2, 1, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1 } };
    add_node(g, &n);
    int cat = simple(g, "cat", DT_GRAPH_CONCAT, 2, (int[]){ n.output, g->input }, 4, (int[]){ 1, 4, 1, 2 });
    int flat = simple(g, "flat", DT_GRAPH_FLATTEN, 1, (int[]){ cat }, 2, (int[]){ 1, 8 });
    dt_graph_node d = node_of("fc", DT_GRAPH_DENSE, tensor(g, "out", 2, (int[]){ 1, 2 }, NULL));
    d.ninputs = 2;
    d.inputs[0] = flat;
    d.inputs[1] = tensor(g, "fw", 2, (int[]){ 2, 8 },
                         (float[]){ 1, 0, 0, 0, 0, 0, 0, 0, 0.5f, 0.25f, -1, 1, 0, 0, 0, 2 });
    d.epilogue.bias = tensor(g, "fb", 1, (int[]){ 2 }, (float[]){ 0.5f, -0.25f });
    d.attr.kernel = (dt_task){ .kind = DT_OP_DENSE, .mm = { 1, 1, 2, 8 } };
    add_node(g, &d);
    g->output = d.output;
    /* d = relu6(2.5 * [1.5, 3]) = [3.75, 6], relu6(-4 * [0.5, -1]) = [0, 4];
     * flat = [3.75, 6, 0, 4, 1.5, 3, 0.5, -1] */
    const float x[4] = { 1.5f, 3.0f, 0.5f, -1.0f };
    expect_run(g, x, (float[]){ 3.75f + 0.5f, 1.875f + 1.5f - 0 + 4 - 2 - 0.25f }, 2);
    /* add and act */
    int s = simple(g, "sum", DT_GRAPH_ADD, 2, (int[]){ d.output, d.output }, 0, NULL);
    g->output = simple(g, "r", DT_GRAPH_ACT, 1, (int[]){ s }, 0, NULL);
    expect_run(g, x, (float[]){ 8.5f, 10.25f }, 2);
    /* a shape the op does not give is refused, naming the node */
    int bad = act4(g, "bad", 1, 3, 1, 2);
    dt_graph_node wrong = node_of("wrong_pool", DT_GRAPH_MAX_POOL, bad);
    wrong.ninputs = 1;
    wrong.inputs[0] = cat;
    wrong.attr.pool = (dt_pool_attr){ .kh = 1, .kw = 1, .sh = 1, .sw = 1 };
    add_node(g, &wrong);
    assert_int_equal(dt_graph_ref_check(g, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "wrong_pool"));
    assert_non_null(strstr(err.msg, "[1,3,1,2]; expected [1,4,1,2]"));
    dt_graph_free(g);
}

/* ---- the export ---------------------------------------------------------------------- */

/* Per task of g a valid random config of its CPU space (this machine's
 * width); tasks from `untuned_from` on get none. */
static dt_export_choice *choices_of(dt_graph *g, int untuned_from, int *n, uint64_t seed)
{
    dt_model *m = NULL;
    dt_error err;
    if (dt_graph_tasks(g, NULL, &m, &err) != 0)
        fail_msg("%s", err.msg);
    dt_export_choice *c = calloc((size_t)m->ntasks, sizeof *c);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    for (int i = 0; i < m->ntasks; i++) {
        c[i].task = m->tasks[i];
        c[i].tuned = i < untuned_from;
        if (!c[i].tuned) {
            snprintf(c[i].why, sizeof c[i].why, "not measured in this test");
            continue;
        }
        dt_space space;
        assert_int_equal(dt_target_space_init(&space, &m->tasks[i], DT_TARGET_CPU, &err), 0);
        dt_point point;
        for (int tries = 0; tries < 1000; tries++) {
            dt_space_random(&space, rng, &point);
            if (dt_space_valid(&space, &point))
                break;
        }
        assert_true(dt_space_valid(&space, &point));
        c[i].config = dt_space_index(&space, &point);
        dt_space_point_str(&space, &point, c[i].knobs, sizeof c[i].knobs);
        dt_space_free(&space);
    }
    gsl_rng_free(rng);
    *n = m->ntasks;
    dt_model_free(m);
    return c;
}

static float *read_raw(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    float *data = malloc(n * sizeof *data);
    assert_int_equal(fread(data, sizeof *data, n, f), n);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
    return data;
}

/* Builds the export in dir, runs `make test`, and compares the run's output
 * with the reference executor's here: max|diff| <= 1e-4 x max|ref|. */
static void build_and_check(const dt_graph *g, const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "grep -rl 'dtune/' %s", dir);
    assert_int_equal(shell(cmd), 1);   /* nothing of dtune named */
    snprintf(cmd, sizeof cmd, "make -C %s CC=cc CFLAGS='-std=gnu11 -O2 -Wall -Wextra -Werror' "
                              "NETFLAGS='-Wall -Wextra -Werror' test", dir);
    if (shell(cmd) != 0)
        fail_msg("make test failed: %s", out);
    assert_non_null(strstr(out, "kernels match the reference"));
    assert_non_null(strstr(out, "check: max|diff|"));
    assert_non_null(strstr(out, ": ok"));
    assert_non_null(strstr(out, "repeat: every call gave the same output"));
    assert_non_null(strstr(out, "mini: median "));
    snprintf(cmd, sizeof cmd, "test -s %s/libmini.a && test -s %s/libmini.so", dir, dir);
    assert_int_equal(shell(cmd), 0);

    size_t n_in = dt_graph_tensor_elements(g, g->input), n_out = dt_graph_tensor_elements(g, g->output);
    char path[256];
    snprintf(path, sizeof path, "%s/mini_test_input.bin", dir);
    float *in = read_raw(path, n_in), *ref = malloc(n_out * sizeof *ref);
    snprintf(path, sizeof path, "%s/mini_test_run_output.bin", dir);
    float *got = read_raw(path, n_out);
    dt_error err;
    assert_int_equal(dt_graph_ref_run(g, in, ref, &err), 0);
    double diff = 0, peak = 0;
    for (size_t i = 0; i < n_out; i++) {
        diff = fmax(diff, fabs((double)got[i] - ref[i]));
        peak = fmax(peak, fabs(ref[i]));
    }
    assert_true(peak > 0);
    if (!(diff <= 1e-4 * peak))
        fail_msg("max|diff| %g > 1e-4 x max|ref| %g", diff, peak);
    free(in);
    free(ref);
    free(got);
}

/* The plan: the concat's inputs written in place, the flatten a view, the
 * arena smaller than every activation side by side. */
static void check_plan(const dt_graph *g, const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "grep -c 'y: written in place' %s/mini_net.c", dir);
    assert_int_equal(shell(cmd), 0);
    assert_int_equal(atoi(out), 2);
    snprintf(cmd, sizeof cmd, "grep -c 'the same floats' %s/mini_net.c", dir);
    assert_int_equal(shell(cmd), 0);
    snprintf(cmd, sizeof cmd, "sed -n 's/^#define ARENA_FLOATS ((size_t)\\([0-9]*\\))$/\\1/p' %s/mini_net.c",
             dir);
    assert_int_equal(shell(cmd), 0);
    size_t arena = strtoull(out, NULL, 10), all = 0;
    for (int t = 0; t < g->ntensors; t++)
        if (!g->tensors[t].constant && t != g->input && t != g->output)
            all += dt_graph_tensor_elements(g, t);
    assert_true(arena > 0);
    if (!(arena < all / 2))
        fail_msg("an arena of %zu floats for %zu floats of activations", arena, all);
}

/* The conv and dense nodes of g with an epilogue. */
static int fused_nodes(const dt_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const dt_epilogue *e = &g->nodes[i].epilogue;
        bool kernel = g->nodes[i].op == DT_GRAPH_CONV || g->nodes[i].op == DT_GRAPH_DENSE;
        n += kernel && (e->bias >= 0 || e->residual >= 0 || e->act != DT_ACT_NONE);
    }
    return n;
}

static void test_export_tuned(void **state)
{
    (void)state;
    dt_graph *g = mini_network(1);
    int n;
    dt_export_choice *choices = choices_of(g, INT32_MAX, &n, 41);
    assert_int_equal(n, 7);   /* conv_a and conv_b share a task */
    char dir[64];
    dt_test_tmpdir(dir, sizeof dir);
    dt_netexport_params params = dt_netexport_params_default();
    dt_error err;
    if (dt_netexport_write(&params, g, choices, n, dir, &err) != 0)
        fail_msg("%s", err.msg);
    check_plan(g, dir);
    /* every conv and dense applies its node's epilogue in its own call */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "grep -c '_epilogue(' %s/mini_net.c", dir);
    assert_int_equal(shell(cmd), 0);
    assert_int_equal(atoi(out), fused_nodes(g));
    snprintf(cmd, sizeof cmd, "grep -c '^    epilogue(' %s/mini_net.c", dir);
    assert_int_equal(shell(cmd), 1);
    build_and_check(g, dir);
    assert_int_equal(dt_test_remove_tree(dir), 0);

    /* kernels tuned without an epilogue (a plain model file's tasks): each
     * node's epilogue is a separate pass after its kernel */
    for (int i = 0; i < n; i++)
        choices[i].task.epilogue = (dt_task_epilogue){ .act = DT_ACT_NONE };
    dt_test_tmpdir(dir, sizeof dir);
    if (dt_netexport_write(&params, g, choices, n, dir, &err) != 0)
        fail_msg("%s", err.msg);
    snprintf(cmd, sizeof cmd, "grep -c '^    epilogue(' %s/mini_net.c", dir);
    assert_int_equal(shell(cmd), 0);
    assert_int_equal(atoi(out), fused_nodes(g));
    snprintf(cmd, sizeof cmd, "grep -c '_epilogue(' %s/mini_net.c", dir);
    assert_int_equal(shell(cmd), 1);
    build_and_check(g, dir);
    free(choices);
    dt_graph_free(g);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* Every task untuned: the reference loops stand in; half untuned on two
 * OpenMP threads; a batch of two. */
static void test_export_untuned_and_threads(void **state)
{
    (void)state;
    dt_graph *g = mini_network(1);
    int n;
    dt_export_choice *choices = choices_of(g, 0, &n, 42);
    char dir[64];
    dt_test_tmpdir(dir, sizeof dir);
    dt_netexport_params params = dt_netexport_params_default();
    dt_error err;
    if (dt_netexport_write(&params, g, choices, n, dir, &err) != 0)
        fail_msg("%s", err.msg);
    build_and_check(g, dir);
    assert_int_equal(dt_test_remove_tree(dir), 0);
    free(choices);

    choices = choices_of(g, 4, &n, 43);
    dt_test_tmpdir(dir, sizeof dir);
    params.kernels.measure.threads = 2;
    if (dt_netexport_write(&params, g, choices, n, dir, &err) != 0)
        fail_msg("%s", err.msg);
    build_and_check(g, dir);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "grep -c -- '-fopenmp' %s/Makefile && grep -c 'omp parallel' %s/kernels/*.c",
             dir, dir);
    assert_int_equal(shell(cmd), 0);
    free(choices);
    dt_graph_free(g);
    assert_int_equal(dt_test_remove_tree(dir), 0);

    /* batch 2: the concat copies its inputs (a channel slice is no longer contiguous) */
    g = mini_network(2);
    choices = choices_of(g, INT32_MAX, &n, 46);
    dt_test_tmpdir(dir, sizeof dir);
    params.kernels.measure.threads = 1;
    if (dt_netexport_write(&params, g, choices, n, dir, &err) != 0)
        fail_msg("%s", err.msg);
    snprintf(cmd, sizeof cmd, "grep -c 'concat_part(a' %s/mini_net.c", dir);
    assert_int_equal(shell(cmd), 0);
    assert_int_equal(atoi(out), 2);
    build_and_check(g, dir);
    free(choices);
    dt_graph_free(g);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* A program of the test's own on the library: wrong weights files refused
 * with their reason, NULL arguments refused, and two inputs in turn give
 * each its own output again (nothing kept between calls). */
static const char api_program[] =
    "#include <stdio.h>\n#include <string.h>\n#include \"mini.h\"\n\n"
    "static float a[MINI_INPUT_FLOATS], b[MINI_INPUT_FLOATS];\n"
    "static float ya[MINI_OUTPUT_FLOATS], yb[MINI_OUTPUT_FLOATS], ya2[MINI_OUTPUT_FLOATS];\n\n"
    "int main(int argc, char **argv)\n{\n"
    "    mini_net *net = (mini_net *)1;\n"
    "    for (int i = 2; i < argc; i++) {\n"
    "        int rc = mini_net_create(argv[i], &net);\n"
    "        printf(\"refused %d (%s): %s\\n\", rc, mini_net_error(rc), mini_net_last_error());\n"
    "        if (rc == 0 || net)\n            return 1;\n"
    "    }\n"
    "    if (mini_net_create(argv[1], &net) != 0)\n        return 1;\n"
    "    for (size_t i = 0; i < MINI_INPUT_FLOATS; i++) {\n"
    "        a[i] = (float)((i * 37 % 101) / 50.0 - 1);\n"
    "        b[i] = (float)((i * 53 % 89) / 44.0 - 1);\n"
    "    }\n"
    "    if (mini_net_run(net, a, ya) || mini_net_run(net, b, yb) || mini_net_run(net, a, ya2))\n"
    "        return 1;\n"
    "    printf(\"same: %d, differ: %d\\n\", memcmp(ya, ya2, sizeof ya) == 0, memcmp(ya, yb, sizeof ya) != 0);\n"
    "    printf(\"null: %d\\n\", mini_net_run(net, NULL, ya) == MINI_EINVAL && mini_net_create(NULL, &net) == MINI_EINVAL);\n"
    "    mini_net_destroy(net);\n    mini_net_destroy(NULL);\n    return 0;\n}\n";

/* The library from C++: both headers declare C linkage. */
static const char cxx_program[] =
    "#include \"mini.h\"\n#include \"mini_kernels.h\"\n#include <cstdio>\n\n"
    "int main(int argc, char **argv)\n{\n"
    "    static float in[MINI_INPUT_FLOATS], out[MINI_OUTPUT_FLOATS];\n"
    "    mini_net *net = nullptr;\n"
    "    if (argc != 2 || mini_net_create(argv[1], &net) != 0)\n        return 1;\n"
    "    int rc = mini_net_run(net, in, out);\n"
    "    mini_net_destroy(net);\n"
    "    std::printf(\"c++: %d, %d kernels\\n\", rc, MINI_NKERNELS);\n"
    "    return rc;\n}\n";

static void test_library_api_and_bad_weights(void **state)
{
    (void)state;
    dt_graph *g = mini_network(1);
    int n;
    dt_export_choice *choices = choices_of(g, INT32_MAX, &n, 44);
    char dir[64], cmd[2048], path[128];
    dt_test_tmpdir(dir, sizeof dir);
    dt_netexport_params params = dt_netexport_params_default();
    dt_error err;
    if (dt_netexport_write(&params, g, choices, n, dir, &err) != 0)
        fail_msg("%s", err.msg);
    snprintf(path, sizeof path, "%s/api.c", dir);
    assert_int_equal(dt_test_write_file(path, "%s", api_program), 0);
    /* the wrong files: cut short, one float changed, another network's id,
     * another version, not a weights file, none at all */
    snprintf(cmd, sizeof cmd,
             "cd %s && make -s libmini.a && cc -std=gnu11 -Wall -Wextra -Werror -o api api.c libmini.a -lm && "
             "size=$(wc -c < mini.weights) && head -c $((size - 4)) mini.weights > short.weights && "
             "cp mini.weights damaged.weights && printf '\\177' | dd of=damaged.weights bs=1 seek=$((size - 9)) "
             "conv=notrunc 2>/dev/null && "
             "cp mini.weights other.weights && printf 'X' | dd of=other.weights bs=1 seek=17 conv=notrunc 2>/dev/null && "
             "cp mini.weights version.weights && printf '\\011' | dd of=version.weights bs=1 seek=8 conv=notrunc 2>/dev/null && "
             "echo 'not weights' > text.weights && "
             "./api mini.weights short.weights damaged.weights other.weights version.weights text.weights none.weights",
             dir);
    if (shell(cmd) != 0)
        fail_msg("the API program failed: %s", out);
    assert_non_null(strstr(out, "short.weights: truncated: 6697 of its 6698 floats"));
    assert_non_null(strstr(out, "damaged.weights: checksum mismatch: the file is damaged"));
    assert_non_null(strstr(out, "other.weights: the weights of another network"));
    assert_non_null(strstr(out, "version.weights: weights format version 9; this library reads version 1"));
    assert_non_null(strstr(out, "text.weights: not a dtune weights file"));
    assert_non_null(strstr(out, "none.weights: cannot open the weights file"));
    assert_non_null(strstr(out, "refused -3 (not this network's weights file)"));
    assert_non_null(strstr(out, "same: 1, differ: 1"));
    assert_non_null(strstr(out, "null: 1"));
    snprintf(path, sizeof path, "%s/api_cxx.cc", dir);
    assert_int_equal(dt_test_write_file(path, "%s", cxx_program), 0);
    snprintf(cmd, sizeof cmd, "cd %s && c++ -std=c++17 -Wall -Wextra -Werror -o api_cxx api_cxx.cc libmini.a -lm && "
                              "./api_cxx mini.weights", dir);
    if (shell(cmd) != 0)
        fail_msg("the library does not link from C++: %s", out);
    assert_non_null(strstr(out, "c++: 0, "));
    /* the program says so too, and exits 2 */
    snprintf(cmd, sizeof cmd, "cd %s && make -s mini_run && ./mini_run damaged.weights mini_test_input.bin",
             dir);
    assert_int_equal(shell(cmd), 2);
    assert_non_null(strstr(out, "checksum mismatch"));
    snprintf(cmd, sizeof cmd, "cd %s && ./mini_run mini.weights mini.weights", dir);
    assert_int_equal(shell(cmd), 2);
    assert_non_null(strstr(out, "the input must be 2349 float32 values"));
    free(choices);
    dt_graph_free(g);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* What the export cannot take: a node whose geometry no choice has, a graph
 * the check refuses, a target without a network export, a task named like
 * the network's own symbols; no reader of a network yet, and the command's
 * --network without the model file. */
static void test_refusals(void **state)
{
    (void)state;
    dt_graph *g = mini_network(1);
    int n;
    dt_export_choice *choices = choices_of(g, 0, &n, 45);
    char dir[64];
    dt_test_tmpdir(dir, sizeof dir);
    dt_netexport_params params = dt_netexport_params_default();
    dt_error err;
    assert_int_equal(dt_netexport_write(&params, g, choices, n - 1, dir, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "node 'fc' (dense 1x24 * 10x24^T): no task of the export"));
    /* a task named as the network's own symbols is renamed, not refused */
    snprintf(choices[0].task.name, sizeof choices[0].task.name, "net_create");
    if (dt_netexport_write(&params, g, choices, n, dir, &err) != 0)
        fail_msg("%s", err.msg);
    char header[128];
    snprintf(header, sizeof header, "%s/mini_kernels.h", dir);
    char *text = dt_test_slurp(header);
    assert_non_null(text);
    assert_non_null(strstr(text, "void mini_t_net_create(const float"));
    assert_non_null(strstr(text, "renamed: its C name would clash with another's as net_create"));
    free(text);
    params.kernels.target = DT_TARGET_CUDA;
    assert_int_equal(dt_netexport_write(&params, g, choices, n, dir, &err), DT_ENOTSUP);
    params.kernels.target = DT_TARGET_CPU;
    g->tensors[g->output].dims[1] = 11;
    assert_int_equal(dt_netexport_write(&params, g, choices, n, dir, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "node 'fc'"));
    dt_graph *read = NULL;
    assert_int_equal(dt_netexport_read_graph("models/resnet18.yaml", &read, &err), DT_ENOTSUP);
    assert_null(read);
    assert_non_null(strstr(err.msg, "ONNX"));
    assert_int_equal(dt_netexport_read_graph("no/such/net.onnx", &read, &err), DT_ENOTFOUND);
    assert_null(read);
    /* the command's flag: the network comes from the run, which must be one */
    int rc = dt_test_run((char *[]){ "dtune", "export", dir, "--network", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "best.json"));
    free(choices);
    dt_graph_free(g);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_pools_by_hand),
        cmocka_unit_test(test_reference_kernels_by_hand),
        cmocka_unit_test(test_export_tuned),
        cmocka_unit_test(test_export_untuned_and_threads),
        cmocka_unit_test(test_library_api_and_bad_weights),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
