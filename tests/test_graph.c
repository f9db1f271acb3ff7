/* test_graph.c — building a network graph: constants kept in one block in
 * the order added, every reference checked as a node is added (so the
 * nodes are in an order to run them), and the tasks of its conv and dense
 * nodes merged by shape with counts, named after their first node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "dtune/graph.h"

/* A 3x3 conv of 8 channels on [1,8,13,11], pad 1, stride 1. */
static dt_graph_node conv_node(const char *name, int x, int w, int y)
{
    dt_graph_node n = { .op = DT_GRAPH_CONV, .ninputs = 2, .inputs = { x, w }, .output = y,
                        .epilogue = { .bias = -1, .residual = -1, .act = DT_ACT_RELU } };
    snprintf(n.name, sizeof n.name, "%s", name);
    n.attr.kernel = (dt_task){ .kind = DT_OP_CONV2D,
                               .conv = { .n = 1, .c_in = 8, .h = 13, .w = 11, .c_out = 8, .kh = 3, .kw = 3,
                                         .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1 } };
    return n;
}

static int act(dt_graph *g, const char *name, const int *dims)
{
    dt_error err;
    int t = dt_graph_add_tensor(g, name, 4, dims, NULL, &err);
    if (t < 0)
        fail_msg("%s", err.msg);
    return t;
}

static void test_two_convs_one_task(void **state)
{
    dt_graph *g = dt_graph_new("tiny_net");
    assert_non_null(g);
    dt_error err;
    const int adims[4] = { 1, 8, 13, 11 }, wdims[4] = { 8, 8, 3, 3 };
    static float w1[8 * 8 * 9], w2[8 * 8 * 9];
    for (int i = 0; i < 8 * 8 * 9; i++) {
        w1[i] = 0.01f * (float)i;
        w2[i] = -0.5f + 0.003f * (float)i;
    }
    g->input = act(g, "x", adims);
    int tw1 = dt_graph_add_tensor(g, "w1", 4, wdims, w1, &err);
    int tw2 = dt_graph_add_tensor(g, "w2", 4, wdims, w2, &err);
    assert_true(tw1 >= 0 && tw2 >= 0);
    assert_memory_equal(dt_graph_constant(g, tw2), w2, sizeof w2);
    assert_int_equal(g->tensors[tw2].offset, 8 * 8 * 9);
    assert_null(dt_graph_constant(g, g->input));
    int y1 = act(g, "y1", adims), y2 = act(g, "y2", adims);
    dt_graph_node a = conv_node("block.conv_a", g->input, tw1, y1);
    dt_graph_node b = conv_node("block.conv_b", y1, tw2, y2);
    b.epilogue.residual = g->input;
    assert_int_equal(dt_graph_add_node(g, &a, &err), 0);
    assert_int_equal(dt_graph_add_node(g, &b, &err), 1);
    g->output = y2;

    dt_model *m = NULL;
    assert_int_equal(dt_graph_tasks(g, "tiny.onnx", &m, &err), 0);
    assert_int_equal(m->ntasks, 1);
    assert_string_equal(m->tasks[0].name, "block.conv_a");
    assert_int_equal(m->tasks[0].count, 2);
    assert_int_equal(m->tasks[0].conv.oh, 13);
    assert_true(m->tasks[0].flops > 0);
    assert_int_equal(g->nodes[0].task, 0);
    assert_int_equal(g->nodes[1].task, 0);
    assert_string_equal(m->name, "tiny_net");
    dt_model_free(m);
    dt_graph_free(g);
}

static void test_references_checked(void **state)
{
    dt_graph *g = dt_graph_new("bad");
    dt_error err;
    const int adims[4] = { 1, 8, 13, 11 }, wdims[4] = { 8, 8, 3, 3 };
    static float w[8 * 8 * 9];
    g->input = act(g, "x", adims);
    int tw = dt_graph_add_tensor(g, "w", 4, wdims, w, &err);
    int y1 = act(g, "y1", adims), y2 = act(g, "y2", adims);
    assert_int_equal(dt_graph_add_tensor(g, "y1", 4, adims, NULL, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "defined twice"));
    const int zero[2] = { 3, 0 };
    assert_int_equal(dt_graph_add_tensor(g, "z", 2, zero, NULL, &err), DT_EINVAL);

    dt_graph_node later = conv_node("reads_later", y1, tw, y2);   /* y1 not computed yet */
    assert_int_equal(dt_graph_add_node(g, &later, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "reads_later"));
    assert_non_null(strstr(err.msg, "y1"));
    dt_graph_node self = conv_node("self", y1, tw, y1);
    assert_int_equal(dt_graph_add_node(g, &self, &err), DT_EINVAL);
    dt_graph_node to_weight = conv_node("to_weight", g->input, tw, tw);
    assert_int_equal(dt_graph_add_node(g, &to_weight, &err), DT_EINVAL);
    dt_graph_node ok = conv_node("ok", g->input, tw, y1);
    assert_int_equal(dt_graph_add_node(g, &ok, &err), 0);
    dt_graph_node twice = conv_node("twice", g->input, tw, y1);
    assert_int_equal(dt_graph_add_node(g, &twice, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "already written by node 'ok'"));
    assert_int_equal(g->nnodes, 1);

    dt_graph_node pool = { .name = "pool", .op = DT_GRAPH_MAX_POOL, .ninputs = 1, .inputs = { y1 },
                           .output = y2, .task = 7 };
    assert_int_equal(dt_graph_add_node(g, &pool, &err), 1);
    assert_int_equal(g->nodes[1].task, -1);
    assert_string_equal(dt_graph_op_name(g->nodes[1].op), "max_pool");
    assert_null(dt_graph_op_name(DT_GRAPH_OP_COUNT));
    dt_graph_free(g);
}

static void test_bad_geometry_names_node(void **state)
{
    dt_graph *g = dt_graph_new("geom");
    dt_error err;
    const int adims[4] = { 1, 8, 13, 11 }, wdims[4] = { 8, 8, 3, 3 };
    static float w[8 * 8 * 9];
    g->input = act(g, "x", adims);
    int tw = dt_graph_add_tensor(g, "w", 4, wdims, w, &err);
    int y = act(g, "y", adims);
    dt_graph_node n = conv_node("too_big_kernel", g->input, tw, y);
    n.attr.kernel.conv.kh = 40;
    n.attr.kernel.conv.ph = 0;
    assert_int_equal(dt_graph_add_node(g, &n, &err), 0);
    dt_model *m = NULL;
    assert_int_equal(dt_graph_tasks(g, NULL, &m, &err), DT_EINVAL);
    assert_null(m);
    assert_non_null(strstr(err.msg, "too_big_kernel"));
    dt_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_convs_one_task),
        cmocka_unit_test(test_references_checked),
        cmocka_unit_test(test_bad_geometry_names_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
