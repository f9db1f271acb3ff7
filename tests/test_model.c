/* test_model.c — model files: the shipped models, task merging, FLOPs and
 * bytes, bad input with file:line:column, writing a model file back
 * (dt_model_format), and the reference implementation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtune/model.h"

static dt_model *load_ok(const char *path)
{
    dt_model *m = NULL;
    dt_error err;
    int rc = dt_model_load(path, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    return m;
}

static int count_kind(const dt_model *m, dt_op_kind kind)
{
    int n = 0;
    for (int i = 0; i < m->ntasks; i++)
        n += m->tasks[i].kind == kind;
    return n;
}

static void test_resnet18_tasks(void **state)
{
    (void)state;
    dt_model *m = load_ok("models/resnet18.yaml");
    assert_int_equal(m->ntasks, 13);
    assert_int_equal(count_kind(m, DT_OP_CONV2D), 12);
    assert_int_equal(count_kind(m, DT_OP_DENSE), 1);
    int i = dt_model_find_task(m, "layer1_3x3");
    assert_true(i >= 0);
    const dt_task *t = &m->tasks[i];
    assert_int_equal(t->count, 4);
    assert_int_equal(t->conv.oh, 56);
    assert_true(fabs(t->flops - 2.0 * 64 * 56 * 56 * 64 * 9) < 1.0);
    assert_true(fabs(t->bytes - 4.0 * (64 * 56 * 56 * 2 + 64 * 64 * 9)) < 1.0);
    const dt_task *c1 = &m->tasks[dt_model_find_task(m, "conv1")];
    assert_int_equal(c1->conv.oh, 112);
    assert_int_equal(c1->conv.ow, 112);
    const dt_task *l2 = &m->tasks[dt_model_find_task(m, "layer2_3x3")];
    const dt_task *down = &m->tasks[dt_model_find_task(m, "layer2_down")];
    const dt_task *fc = &m->tasks[dt_model_find_task(m, "fc")];
    assert_int_equal(dt_task_similarity_group(t), dt_task_similarity_group(l2));
    assert_int_not_equal(dt_task_similarity_group(t), dt_task_similarity_group(down));
    assert_int_not_equal(dt_task_similarity_group(down), dt_task_similarity_group(fc));
    int sum = 0;
    for (int k = 0; k < m->ntasks; k++)
        sum += m->tasks[k].count;
    assert_int_equal(sum, 22);
    dt_model_free(m);
}

static void test_other_models(void **state)
{
    (void)state;
    dt_model *m = load_ok("models/vgg16.yaml");
    assert_int_equal(count_kind(m, DT_OP_CONV2D), 9);
    assert_int_equal(count_kind(m, DT_OP_DENSE), 3);
    dt_model_free(m);
    m = load_ok("models/squeezenet1_1.yaml");
    assert_int_equal(m->ntasks, 18);
    assert_int_equal(m->tasks[0].conv.oh, 111);
    dt_model_free(m);
    m = load_ok("models/bert_base.yaml");
    assert_int_equal(count_kind(m, DT_OP_DENSE), 5);
    assert_int_equal(count_kind(m, DT_OP_BATCH_MATMUL), 2);
    const dt_task *bmm = &m->tasks[dt_model_find_task(m, "attn_value")];
    assert_int_equal(bmm->mm.b, 12);
    assert_int_equal(bmm->mm.m, 128);
    assert_int_equal(bmm->mm.n, 64);
    assert_int_equal(bmm->mm.k, 128);
    assert_true(fabs(bmm->flops - 2.0 * 12 * 128 * 64 * 128) < 1.0);
    dt_model_free(m);
    /* MobileNetV2: every depthwise shape of the network, and its 300.8 M
     * multiply-adds (Sandler et al. report 300 M) */
    m = load_ok("models/mobilenet_v2.yaml");
    assert_int_equal(m->ntasks, 31);
    assert_int_equal(count_kind(m, DT_OP_CONV2D), 20);
    assert_int_equal(count_kind(m, DT_OP_DEPTHWISE_CONV2D), 10);
    assert_int_equal(count_kind(m, DT_OP_DENSE), 1);
    double flops = 0;
    int layers = 0;
    for (int k = 0; k < m->ntasks; k++) {
        flops += m->tasks[k].count * m->tasks[k].flops;
        layers += m->tasks[k].count;
    }
    assert_true(fabs(flops - 2.0 * 300774272) < 1.0);
    assert_int_equal(layers, 53); /* conv1, 17 x (depthwise + project), 16 expand, conv_last, fc */
    const dt_task *dw = &m->tasks[dt_model_find_task(m, "dw_96_112_s2")];
    assert_int_equal(dw->conv.oh, 56);
    dt_model_free(m);
    m = load_ok("models/tiny.yaml");
    assert_true(m->ntasks >= 2 && m->ntasks <= 3);
    dt_model_free(m);
}

/* Each task of part is the task of whole named the same (less prefix): one
 * shape, kind and count; returns how many tasks part has. */
static int same_tasks(const char *part_path, const char *whole_path, const char *prefix)
{
    dt_model *part = load_ok(part_path), *whole = load_ok(whole_path);
    int n = 0;
    for (int k = 0; k < part->ntasks; k++) {
        const char *name = part->tasks[k].name;
        if (strncmp(name, prefix, strlen(prefix)) != 0)
            continue;
        int w = dt_model_find_task(whole, name + strlen(prefix));
        assert_true(w >= 0);
        const dt_task *a = &part->tasks[k], *b = &whole->tasks[w];
        assert_int_equal(a->kind, b->kind);
        assert_int_equal(a->count, b->count);
        assert_memory_equal(&a->conv, &b->conv, sizeof a->conv);
        assert_true(a->flops == b->flops);
        n++;
    }
    dt_model_free(part);
    dt_model_free(whole);
    return n;
}

/* The small models that time one template alone hold the networks' tasks. */
static void test_template_models(void **state)
{
    (void)state;
    assert_int_equal(same_tasks("models/mbv2_dw.yaml", "models/mobilenet_v2.yaml", ""), 10);
    assert_int_equal(same_tasks("models/mbv2_1x1_large.yaml", "models/mobilenet_v2.yaml", ""), 5);
    assert_int_equal(same_tasks("models/first_convs.yaml", "models/mobilenet_v2.yaml", "mbv2_"), 1);
    assert_int_equal(same_tasks("models/first_convs.yaml", "models/resnet18.yaml", "resnet18_"), 4);
}

static char *write_temp(const char *text)
{
    static const char tmpl[] = "/tmp/dtune_model_XXXXXX";
    char *path = malloc(sizeof tmpl);
    memcpy(path, tmpl, sizeof tmpl);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_identical_ops_merge(void **state)
{
    (void)state;
    char *path = write_temp(
        "name: m\nbatch: 1\nops:\n"
        "  - {name: a, kind: dense, input: [3, 40], weight: [24, 40], count: 2}\n"
        "  - {name: b, kind: dense, input: [3, 40], weight: [24, 40], count: 5}\n"
        "  - {name: c, kind: dense, input: [3, 40], weight: [25, 40]}\n");
    dt_model *m = load_ok(path);
    assert_int_equal(m->ntasks, 2);
    assert_string_equal(m->tasks[0].name, "a");
    assert_int_equal(m->tasks[0].count, 7);
    assert_int_equal(m->tasks[1].count, 1);
    dt_model_free(m);
    unlink(path);
    free(path);
}

/* The `epilogue` key: tasks merge by kind and geometry alone, a merged
 * task holding what its ops need at most (relu6 over relu); the shape
 * string names it; dt_model_format writes it back; the reference applies
 * it (bias per output channel, residual, relu6 clamp). */
static void test_epilogue_key_and_merge(void **state)
{
    (void)state;
    char *path = write_temp(
        "name: m\nbatch: 1\nops:\n"
        "  - {name: a, kind: conv2d, input: [1, 3, 5, 5], out_channels: 2, kernel: 1, epilogue: [bias, relu]}\n"
        "  - {name: b, kind: conv2d, input: [1, 3, 5, 5], out_channels: 2, kernel: 1, epilogue: [residual, relu6]}\n"
        "  - {name: c, kind: conv2d, input: [1, 3, 5, 5], out_channels: 2, kernel: 1}\n"
        "  - {name: d, kind: dense, input: [3, 40], weight: [24, 40], epilogue: [bias]}\n"
        "  - {name: e, kind: dense, input: [3, 40], weight: [25, 40]}\n");
    dt_model *m = load_ok(path);
    assert_int_equal(m->ntasks, 3);
    assert_int_equal(m->tasks[0].count, 3);
    assert_true(m->tasks[0].epilogue.bias && m->tasks[0].epilogue.residual);
    assert_int_equal(m->tasks[0].epilogue.act, DT_ACT_RELU6);
    assert_true(m->tasks[1].epilogue.bias && !m->tasks[1].epilogue.residual);
    assert_int_equal(m->tasks[1].epilogue.act, DT_ACT_NONE);
    assert_false(dt_task_has_epilogue(&m->tasks[2]));
    char shape[128];
    dt_task_shape_str(&m->tasks[0], shape, sizeof shape);
    assert_string_equal(shape, "1x3x5x5 k1x1 s1 p0 -> 2 +bias+residual+relu6");
    dt_task_shape_str(&m->tasks[2], shape, sizeof shape);
    assert_string_equal(shape, "3x40 * 25x40^T");

    dt_buf text = { 0 };
    assert_int_equal(dt_model_format(m, NULL, &text), 0);
    assert_non_null(strstr(text.data, ", epilogue: [bias, residual, relu6], count: 3}"));
    assert_non_null(strstr(text.data, "weight: [25, 40], count: 1}"));
    char *again = write_temp(text.data);
    dt_model *back = load_ok(again);
    for (int k = 0; k < m->ntasks; k++)
        assert_memory_equal(&back->tasks[k].epilogue, &m->tasks[k].epilogue, sizeof m->tasks[k].epilogue);
    dt_model_free(back);
    dt_buf_free(&text);
    unlink(again);
    free(again);

    float y[50], bias[2] = { 0.5f, -1.25f }, r[50];
    for (int i = 0; i < 50; i++) {
        y[i] = (float)i * 0.3f - 4.1f;
        r[i] = 0.125f * (float)(i % 7);
    }
    float want[50];
    for (int i = 0; i < 50; i++) {
        float v = y[i] + bias[i / 25] + r[i];
        want[i] = v < 0 ? 0 : v > 6 ? 6 : v;
    }
    dt_task_apply_epilogue(&m->tasks[0], bias, r, DT_ACT_RELU6, y);
    for (int i = 0; i < 50; i++)
        assert_float_equal(y[i], want[i], 0);
    dt_model_free(m);
    unlink(path);
    free(path);
}

/* Loads text, expects failure with code and a message holding want. */
static void expect_error(const char *text, int code, const char *want)
{
    char *path = write_temp(text);
    dt_model *m = NULL;
    dt_error err;
    int rc = dt_model_load(path, &m, &err);
    assert_int_equal(rc, code);
    assert_null(m);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' lacks '%s'", err.msg, want);
    assert_non_null(strstr(err.msg, path));
    unlink(path);
    free(path);
}

static void test_bad_models(void **state)
{
    (void)state;
    expect_error("name: m\nops:\n  - {kind: conv3d, input: [1, 3, 8, 8]}\n", DT_EINVAL,
                 ":3:12: kind 'conv3d' is not one of");
    expect_error("name: m\nops:\n  - kind: dense\n    input: [4, 8]\n    weight: [5, 9]\n",
                 DT_EINVAL, ":5:13: weight [N, K] has K = 9");
    expect_error("name: m\nops:\n  - {kind: conv2d, input: [1, 3, 8, 8], kernel: 3}\n",
                 DT_EINVAL, "needs 'out_channels'");
    expect_error("name: m\nops:\n  - {kind: dense, input: [4, x8], weight: [5, 8]}\n",
                 DT_EINVAL, ":3:30: input: expected an integer from 0 to 1000000000, got 'x8'");
    expect_error("name: m\nops: [\n", DT_EPARSE, ":3:1: YAML syntax error: did not find expected node content");
    expect_error("name: m\nopz: []\n", DT_EINVAL, ":2:1: unknown key 'opz'");
    expect_error("name: m\nops:\n  - {kind: conv2d, input: [1, 3, 4, 4], out_channels: 2, kernel: 7}\n",
                 DT_EINVAL, "does not fit");
    expect_error("name: m\nops:\n  - {kind: dense, input: [4, 8], weight: [5, 8], epilogue: [bias, gelu]}\n",
                 DT_EINVAL, ":3:67: epilogue: 'gelu' is not one of bias, residual, relu, relu6");
    expect_error("name: m\nops:\n  - {kind: dense, input: [4, 8], weight: [5, 8], epilogue: [relu, relu6]}\n",
                 DT_EINVAL, "epilogue: 'relu6' comes twice (or a second activation)");
    expect_error("name: m\nops:\n  - {kind: dense, input: [4, 8], weight: [5, 8], epilogue: bias}\n",
                 DT_EINVAL, "epilogue: expected a list");
    expect_error("name: m\nops:\n  - {kind: batch_matmul, a: [2, 4, 8], b: [2, 5, 8], epilogue: [bias]}\n",
                 DT_EINVAL, "batch_matmul takes no epilogue");
}

static void test_missing_file(void **state)
{
    (void)state;
    dt_model *m = NULL;
    dt_error err;
    assert_int_equal(dt_model_load("/nonexistent/dir/x.yaml", &m, &err), DT_ENOTFOUND);
    assert_non_null(strstr(err.msg, "/nonexistent/dir/x.yaml"));
    assert_int_equal(dt_error_exit_status(DT_ENOTFOUND), 2);
}

/* A 1x1x3x4 input, 2 output channels, 2x2 kernel, padding 1, stride 2, by hand. */
static bool same_tasks_exactly(const dt_model *a, const dt_model *b)
{
    if (a->ntasks != b->ntasks || a->batch != b->batch || strcmp(a->name, b->name) != 0)
        return false;
    for (int k = 0; k < a->ntasks; k++) {
        const dt_task *x = &a->tasks[k], *y = &b->tasks[k];
        if (strcmp(x->name, y->name) != 0 || x->kind != y->kind || x->count != y->count ||
            memcmp(&x->conv, &y->conv, sizeof x->conv) != 0 || memcmp(&x->mm, &y->mm, sizeof x->mm) != 0)
            return false;
    }
    return true;
}

/* dt_model_format writes what dt_model_load reads back to the same tasks:
 * every shipped model (conv2d, depthwise with multipliers, dense,
 * batch_matmul), and names that need quoting. */
static void test_format_reads_back(void **state)
{
    static const char *const models[] = { "models/resnet18.yaml", "models/mobilenet_v2.yaml",
                                          "models/bert_base.yaml", "models/mbv2_dw.yaml", "models/tiny.yaml" };
    char path[] = "/tmp/dtune_test_model_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    dt_error err;
    for (size_t i = 0; i < sizeof models / sizeof models[0] + 1; i++) {
        dt_model *m = NULL, *back = NULL;
        bool odd_names = i == sizeof models / sizeof models[0];
        assert_int_equal(dt_model_load(odd_names ? "models/tiny.yaml" : models[i], &m, &err), 0);
        if (odd_names) {
            snprintf(m->name, sizeof m->name, "net \"7\": x");
            snprintf(m->tasks[0].name, sizeof m->tasks[0].name, "-conv #1 \\ tab\t");
        }
        dt_buf text = { 0 };
        assert_int_equal(dt_model_format(m, "written by\ntest_model", &text), 0);
        const char *head = "# written by\n# test_model\nname: ";
        assert_int_equal(strncmp(text.data, head, strlen(head)), 0);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(text.data, 1, text.len, f), text.len);
        fclose(f);
        if (dt_model_load(path, &back, &err) != 0)
            fail_msg("%s: %s\n%s", models[i < 5 ? i : 4], err.msg, text.data);
        assert_true(same_tasks_exactly(m, back));
        dt_buf_free(&text);
        dt_model_free(m);
        dt_model_free(back);
    }
    unlink(path);
}

static void test_reference_conv_by_hand(void **state)
{
    (void)state;
    dt_task t = { .kind = DT_OP_CONV2D, .count = 1,
                  .conv = { .n = 1, .c_in = 1, .h = 3, .w = 4, .c_out = 2, .kh = 2, .kw = 2,
                            .sh = 2, .sw = 2, .ph = 1, .pw = 1, .dh = 1, .dw = 1 } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    assert_int_equal(t.conv.oh, 2);
    assert_int_equal(t.conv.ow, 3);
    const float x[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
    const float w[8] = { 1, 2, 3, 4, -1, 0.5f, 0, 2 };
    float y[12];
    dt_task_reference(&t, x, w, y);
    /* channel 0, (0,0): only x[0][0] under w[1][1] = 4 -> 4 */
    assert_float_equal(y[0], 4.0f, 1e-6);
    /* channel 0, (1,1): rows 1..2, cols 1..2: 6*1 + 7*2 + 10*3 + 11*4 = 94 */
    assert_float_equal(y[4], 94.0f, 1e-6);
    /* channel 1, (0,2): row 0 cols 3..4: x=4 under w[1][0]=0, pad -> 0; row -1 pad -> 0 */
    assert_float_equal(y[6 + 2], 0.0f, 1e-6);
    /* channel 1, (1,0): rows 1..2, cols -1..0: 5*0.5 + 9*2 = 20.5 */
    assert_float_equal(y[6 + 3], 20.5f, 1e-6);
}

static void test_reference_matmul_by_hand(void **state)
{
    (void)state;
    dt_task t = { .kind = DT_OP_BATCH_MATMUL, .count = 1, .mm = { .b = 2, .m = 1, .n = 2, .k = 3 } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    const float a[6] = { 1, 2, 3, -1, 0.5f, 2 };
    const float b[12] = { 1, 1, 1, 0, 1, 0, 2, 0, 1, 1, 2, 3 };
    float y[4];
    dt_task_reference(&t, a, b, y);
    assert_float_equal(y[0], 6.0f, 1e-6);
    assert_float_equal(y[1], 2.0f, 1e-6);
    assert_float_equal(y[2], 0.0f, 1e-6);
    assert_float_equal(y[3], 6.0f, 1e-6);
    size_t in, wt, out;
    dt_task_tensor_sizes(&t, &in, &wt, &out);
    assert_int_equal(in, 6);
    assert_int_equal(wt, 12);
    assert_int_equal(out, 4);
}

/* dt_conv_taps against a brute-force scan of every tap, over sizes, strides,
 * paddings (wider than the kernel too) and dilations; and its sum over a
 * task's output positions is the useful_flops dt_task_finish counts. */
static void test_conv_taps(void **state)
{
    (void)state;
    for (int in = 1; in <= 9; in++)
        for (int k = 1; k <= 5; k++)
            for (int stride = 1; stride <= 3; stride++)
                for (int pad = 0; pad <= 4; pad++)
                    for (int dil = 1; dil <= 3; dil++)
                        for (int pos = 0; pos < 8; pos++) {
                            int first, end, lo = k, hi = 0;
                            dt_conv_taps(in, pos, k, stride, pad, dil, &first, &end);
                            for (int tap = 0; tap < k; tap++) {
                                int i = pos * stride - pad + tap * dil;
                                if (i >= 0 && i < in) {
                                    lo = tap < lo ? tap : lo;
                                    hi = tap + 1;
                                }
                            }
                            assert_true(first <= end && end <= k);
                            if (hi == 0)
                                assert_int_equal(end - first, 0);
                            else {
                                assert_int_equal(first, lo);
                                assert_int_equal(end, hi);
                            }
                        }
    dt_task t = { .kind = DT_OP_CONV2D, .count = 1,
                  .conv = { .n = 1, .c_in = 3, .h = 23, .w = 17, .c_out = 5, .kh = 7, .kw = 3,
                            .sh = 2, .sw = 1, .ph = 3, .pw = 2, .dh = 1, .dw = 2 } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    double rows = 0, cols = 0;
    for (int oh = 0; oh < t.conv.oh; oh++) {
        int first, end;
        dt_conv_taps(t.conv.h, oh, t.conv.kh, t.conv.sh, t.conv.ph, t.conv.dh, &first, &end);
        rows += end - first;
    }
    for (int ow = 0; ow < t.conv.ow; ow++) {
        int first, end;
        dt_conv_taps(t.conv.w, ow, t.conv.kw, t.conv.sw, t.conv.pw, t.conv.dw, &first, &end);
        cols += end - first;
    }
    assert_true(fabs(t.useful_flops - 2.0 * 3 * 5 * rows * cols) <= 1e-12 * t.useful_flops);
    assert_true(t.useful_flops < t.flops);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet18_tasks),
        cmocka_unit_test(test_other_models),
        cmocka_unit_test(test_template_models),
        cmocka_unit_test(test_identical_ops_merge),
        cmocka_unit_test(test_epilogue_key_and_merge),
        cmocka_unit_test(test_bad_models),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_format_reads_back),
        cmocka_unit_test(test_reference_conv_by_hand),
        cmocka_unit_test(test_reference_matmul_by_hand),
        cmocka_unit_test(test_conv_taps),
    };
    return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
