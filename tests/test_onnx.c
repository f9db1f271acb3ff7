/* test_onnx.c — importing ONNX networks (onnx.c, model_file.c, `dtune
 * import`): small files made at test time by tests/support/make_onnx.py
 * (Debian's /usr/bin/python3 with python3-onnx) check the fused graph
 * (batch-norm folded, checked against a hand computation; a residual whose
 * producer comes later in the file; every other operator), the model file
 * written and read back, tune and resume on an ONNX file, and each refusal's
 * exit status 2 and message. With python3-torch, torchvision's resnet18,
 * mobilenet_v2 and squeezenet1_1 are exported and their imported tasks
 * compared with the model files in models/; vgg16 (a 550 MB export) only with
 * DTUNE_SLOW_TESTS=1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtune/graph.h"
#include "dtune/model.h"
#include "dtune/model_file.h"
#include "dtune/onnx.h"
#include "support/run_cmd.h"


static char out[1 << 16];

typedef struct fixture {
    char dir[256];
} fixture;

static int make_files(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    dt_test_tmpdir(f->dir, sizeof f->dir);
    char cmd[512];
    snprintf(cmd, sizeof cmd, DT_TEST_PYTHON " tests/support/make_onnx.py %s", f->dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_onnx: %s failed (python3-onnx missing? scripts/setup.sh installs it)\n", cmd);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int remove_files(void **state)
{
    fixture *f = *state;
    dt_test_remove_tree(f->dir);
    free(f);
    return 0;
}

static void file_in(void **state, const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", ((fixture *)*state)->dir, name);
}

static dt_graph *load(void **state, const char *name)
{
    char path[512];
    file_in(state, name, path, sizeof path);
    dt_graph *g = NULL;
    dt_error err;
    if (dt_onnx_load(path, NULL, &g, &err) != 0)
        fail_msg("%s", err.msg);
    return g;
}

/* The W[i] = 0.01 * (i % 17) - 0.07 of make_onnx.py. */
static double formula_weight(size_t i)
{
    return 0.01 * (double)(i % 17) - 0.07;
}

static void assert_close(double got, double want)
{
    if (fabs(got - want) > 1e-6 * fmax(1.0, fabs(want)))
        fail_msg("got %.9g, want %.9g", got, want);
}

/* Conv (bias) -> BatchNormalization (eps 1e-3) -> Relu is one conv node:
 * W' = W * s, b' = (b - mean) * s + beta with s = scale / sqrt(var + eps). */
static void test_batch_norm_folded(void **state)
{
    dt_graph *g = load(state, "bn_fold.onnx");
    assert_int_equal(g->nnodes, 1);
    const dt_graph_node *n = &g->nodes[0];
    assert_int_equal(n->op, DT_GRAPH_CONV);
    assert_int_equal(n->epilogue.act, DT_ACT_RELU);
    assert_int_equal(n->epilogue.residual, -1);
    assert_true(n->epilogue.bias >= 0);
    const float *w = dt_graph_constant(g, n->inputs[1]), *b = dt_graph_constant(g, n->epilogue.bias);
    assert_non_null(w);
    assert_non_null(b);
    assert_int_equal(dt_graph_tensor_elements(g, n->inputs[1]), 4 * 3 * 3 * 3);
    for (int c = 0; c < 4; c++) {
        double scale = 0.5 + 0.25 * c, beta = -0.2 + 0.1 * c, mean = 0.05 * c, var = 0.3 + 0.2 * c;
        double s = scale / sqrt(var + 1e-3), bias = 0.1 * c - 0.15;
        for (size_t i = 0; i < 27; i++)
            assert_close(w[c * 27 + i], formula_weight(c * 27 + i) * s);
        assert_close(b[c], (bias - mean) * s + beta);
    }
    assert_int_equal(g->tensors[g->output].dims[1], 4);
    assert_int_equal(g->tensors[g->output].dims[2], 11);
    /* only what runs is in the weights block: the folded W and bias */
    assert_int_equal(g->nweights, 4 * 27 + 4);
    dt_graph_free(g);
}

/* Add(conv_b, conv_down) + Relu join conv_b, which then runs after
 * conv_down although it comes before it in the file. */
static void test_residual_waits_for_its_producer(void **state)
{
    dt_graph *g = load(state, "residual.onnx");
    assert_int_equal(g->nnodes, 3);
    assert_string_equal(g->nodes[0].name, "conv_a");
    assert_int_equal(g->nodes[0].epilogue.act, DT_ACT_RELU);
    assert_string_equal(g->nodes[1].name, "conv_down");
    assert_int_equal(g->nodes[1].epilogue.act, DT_ACT_NONE);
    assert_string_equal(g->nodes[2].name, "conv_b");
    assert_int_equal(g->nodes[2].epilogue.residual, g->nodes[1].output);
    assert_int_equal(g->nodes[2].epilogue.act, DT_ACT_RELU);
    assert_int_equal(g->output, g->nodes[2].output);
    dt_model *m = NULL;
    dt_error err;
    assert_int_equal(dt_graph_tasks(g, "residual.onnx", &m, &err), 0);
    assert_int_equal(m->ntasks, 3);
    assert_string_equal(m->tasks[2].name, "conv_b");
    dt_model_free(m);
    dt_graph_free(g);
}

/* Depthwise + Clip (ReLU6), MaxPool ceil_mode, Concat, AveragePool,
 * Identity and Dropout (gone), Reshape (a flatten), MatMul + Add bias +
 * Relu, Gemm with alpha 0.5, beta 2 and transB 0. */
static void test_other_ops(void **state)
{
    dt_graph *g = load(state, "ops.onnx");
    static const dt_graph_op want[] = { DT_GRAPH_CONV, DT_GRAPH_MAX_POOL, DT_GRAPH_CONV, DT_GRAPH_CONV,
                                        DT_GRAPH_CONCAT, DT_GRAPH_AVG_POOL, DT_GRAPH_FLATTEN, DT_GRAPH_DENSE,
                                        DT_GRAPH_DENSE };
    assert_int_equal(g->nnodes, (int)(sizeof want / sizeof want[0]));
    for (int i = 0; i < g->nnodes; i++)
        assert_int_equal(g->nodes[i].op, want[i]);
    const dt_graph_node *dw = &g->nodes[0], *pool = &g->nodes[1], *mm = &g->nodes[7], *gemm = &g->nodes[8];
    assert_int_equal(dw->attr.kernel.kind, DT_OP_DEPTHWISE_CONV2D);
    assert_int_equal(dw->attr.kernel.conv.c_out, 16);
    assert_int_equal(dw->epilogue.act, DT_ACT_RELU6);
    assert_true(pool->attr.pool.ceil_mode);
    assert_int_equal(g->tensors[pool->output].dims[2], 4);   /* ceil((8 - 3) / 2) + 1; floor gives 3 */
    assert_int_equal(g->nodes[2].epilogue.act, DT_ACT_RELU);
    assert_int_equal(g->nodes[4].ninputs, 2);
    assert_int_equal(g->tensors[g->nodes[4].output].dims[1], 12);
    assert_int_equal(g->tensors[g->nodes[6].output].dims[1], 48);
    assert_int_equal(mm->attr.kernel.mm.k, 48);
    assert_int_equal(mm->attr.kernel.mm.n, 10);
    assert_int_equal(mm->epilogue.act, DT_ACT_RELU);
    const float *mb = dt_graph_constant(g, mm->epilogue.bias);
    assert_close(mb[7], 0.07);
    /* MatMul's B [48, 10] is stored [10, 48] */
    const float *mw = dt_graph_constant(g, mm->inputs[1]);
    assert_close(mw[3 * 48 + 5], formula_weight(5 * 10 + 3));
    /* Gemm: W [n, k] = alpha * B[k, n], bias = beta * C */
    const float *gw = dt_graph_constant(g, gemm->inputs[1]), *gb = dt_graph_constant(g, gemm->epilogue.bias);
    assert_close(gw[2 * 10 + 7], 0.5 * formula_weight(7 * 3 + 2));
    assert_close(gb[1], 4.0);
    assert_int_equal(gemm->epilogue.act, DT_ACT_NONE);
    assert_int_equal(g->output, gemm->output);
    dt_graph_free(g);
}

/* auto_pad SAME_UPPER: the conv pads 1 on each side, the pool once at the
 * bottom and the right. */
static void test_auto_pad(void **state)
{
    dt_graph *g = load(state, "same_pads.onnx");
    assert_int_equal(g->nnodes, 2);
    assert_int_equal(g->nodes[0].attr.kernel.conv.ph, 1);
    assert_int_equal(g->nodes[0].attr.kernel.conv.oh, 8);
    const dt_pool_attr *p = &g->nodes[1].attr.pool;
    assert_int_equal(p->pad_top, 0);
    assert_int_equal(p->pad_bottom, 1);
    assert_int_equal(p->pad_right, 1);
    assert_int_equal(g->tensors[g->output].dims[2], 4);
    dt_graph_free(g);
}

static bool same_task(const dt_task *a, const dt_task *b)
{
    if (a->kind != b->kind || a->count != b->count)
        return false;
    if (a->kind == DT_OP_CONV2D || a->kind == DT_OP_DEPTHWISE_CONV2D)
        return memcmp(&a->conv, &b->conv, sizeof a->conv) == 0;
    return memcmp(&a->mm, &b->mm, sizeof a->mm) == 0;
}

/* `dtune import -o` writes a model file dt_model_load reads back to the
 * same tasks; without -o it prints it; `dtune models` takes the ONNX file. */
static void test_import_writes_a_model_file(void **state)
{
    char onnx[512], yaml[512];
    file_in(state, "ops.onnx", onnx, sizeof onnx);
    file_in(state, "ops.yaml", yaml, sizeof yaml);
    int rc = dt_test_run((char *[]){ "dtune", "import", onnx, "-o", yaml, NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    dt_model *direct = NULL, *back = NULL;
    dt_error err;
    assert_int_equal(dt_model_file_load(onnx, NULL, NULL, &direct, &err), 0);
    if (dt_model_load(yaml, &back, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(back->name, "ops");
    assert_int_equal(back->ntasks, direct->ntasks);
    for (int k = 0; k < back->ntasks; k++) {
        assert_string_equal(back->tasks[k].name, direct->tasks[k].name);
        assert_true(same_task(&back->tasks[k], &direct->tasks[k]));
        assert_memory_equal(&back->tasks[k].epilogue, &direct->tasks[k].epilogue,
                            sizeof back->tasks[k].epilogue);
    }
    assert_int_equal(back->tasks[0].kind, DT_OP_DEPTHWISE_CONV2D);
    dt_model_free(direct);
    dt_model_free(back);
    assert_int_equal(dt_test_run((char *[]){ "dtune", "import", onnx, NULL }, out, sizeof out), 0);
    assert_non_null(strstr(out, "name: ops\nbatch: 1\nops:\n"));
    /* the Gemm's bias is its epilogue, written as the model file's key */
    assert_non_null(strstr(out, "{name: gemm, kind: dense, input: [1, 10], weight: [3, 10], "
                                "epilogue: [bias], count: 1}"));
    assert_int_equal(dt_test_run((char *[]){ "dtune", "models", onnx, NULL }, out, sizeof out), 0);
    assert_non_null(strstr(out, "model ops: 5 tasks"));
    assert_non_null(strstr(out, "expand3x3"));
    char cfg[512];
    file_in(state, "ops_config.yaml", cfg, sizeof cfg);
    assert_int_equal(dt_test_write_file(cfg, "model: ops.onnx\n"), 0);
    int status = dt_test_run((char *[]){ "dtune", "check", cfg, NULL }, out, sizeof out);
    if (status != 0)
        fail_msg("check: exit %d: %s", status, out);
    assert_non_null(strstr(out, "ok (model ops, 5 tasks, target cpu)"));
}

/* A dynamic input needs --input-shape, which also sets the batch. */
static void test_input_shape(void **state)
{
    char onnx[512];
    file_in(state, "dynamic.onnx", onnx, sizeof onnx);
    int rc = dt_test_run((char *[]){ "dtune", "import", onnx, "--input-shape", "2,3,8,8", NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    assert_non_null(strstr(out, "batch: 2\n"));
    assert_non_null(strstr(out, "input: [2, 3, 8, 8], out_channels: 4, kernel: 3"));
    rc = dt_test_run((char *[]){ "dtune", "import", onnx, "--input-shape", "2,3,8", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "has 4 dimensions; --input-shape gives 3"));
    rc = dt_test_run((char *[]){ "dtune", "import", onnx, "--input-shape", "2,x", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "input shape '2,x'"));
}

typedef struct refusal {
    const char *file;          /* in the fixture's folder */
    const char *want[3];       /* substrings of the message */
} refusal;

/* Each refusal exits 2 with a message naming what is wrong, and writes no
 * -o file. */
static void test_refusals(void **state)
{
    static const refusal cases[] = {
        { "unsupported.onnx", { "node 'softmax_1'", "op type 'Softmax'", "(opset 13) is not supported" } },
        { "cycle.onnx", { "cycle.onnx: the graph has a cycle", "node 'add' (Add)", NULL } },
        { "missing_init.onnx", { "node 'conv' (Conv): input 'w'", "a missing initializer?", NULL } },
        { "dynamic.onnx", { "input 'x' has a dynamic or unknown shape", "--input-shape N,C,H,W", NULL } },
        { "opset10.onnx", { "opset 10 of the default ONNX domain", "opsets 11 to 17", NULL } },
        { "opset18.onnx", { "opset 18 of the default ONNX domain", "opsets 11 to 17", NULL } },
        { "group2.onnx", { "node 'grouped' (Conv, opset 13): group 2", "depthwise", NULL } },
        { "asym_pads.onnx", { "node 'padded' (Conv, opset 13): asymmetric pads [0, 0, 1, 1]", NULL, NULL } },
        { "same_odd.onnx", { "node 'even' (Conv, opset 13): asymmetric pads [1, 1, 0, 0]", NULL, NULL } },
        { "bn_alone.onnx", { "node 'bn' (BatchNormalization, opset 13)", "folded into the Conv", NULL } },
        { "clip_5.onnx", { "node 'clip' (Clip, opset 13)", "min 0, max 5", NULL } },
        { "int8_weight.onnx", { "initializer 'w' is of type INT8", "FLOAT weights", NULL } },
        { "external.onnx", { "initializer 'w' keeps its data in an external file", NULL, NULL } },
        { "no_such.onnx", { "no_such.onnx: cannot open ONNX file", NULL, NULL } },
        { "truncated.onnx", { "truncated.onnx: not an ONNX model: the protobuf does not parse", NULL, NULL } },
    };
    char path[512], yaml[512], whole[512];
    file_in(state, "ops.onnx", whole, sizeof whole);
    file_in(state, "truncated.onnx", path, sizeof path);
    FILE *in = fopen(whole, "rb"), *cut = fopen(path, "wb");
    assert_non_null(in);
    assert_non_null(cut);
    static char bytes[1 << 16];
    size_t n = fread(bytes, 1, sizeof bytes, in);
    assert_true(n > 200 && n < sizeof bytes);
    assert_int_equal(fwrite(bytes, 1, n / 2, cut), n / 2);
    fclose(in);
    fclose(cut);
    file_in(state, "refused.yaml", yaml, sizeof yaml);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        file_in(state, cases[i].file, path, sizeof path);
        int rc = dt_test_run((char *[]){ "dtune", "import", path, "-o", yaml, NULL }, out, sizeof out);
        if (rc != 2)
            fail_msg("%s: exit %d: %s", cases[i].file, rc, out);
        for (int k = 0; k < 3 && cases[i].want[k]; k++)
            if (!strstr(out, cases[i].want[k]))
                fail_msg("%s: '%s' not in: %s", cases[i].file, cases[i].want[k], out);
        struct stat st;
        assert_int_not_equal(stat(yaml, &st), 0);
    }
}

/* `dtune tune --model X.onnx` runs, its log names the ONNX file, and a
 * resume of the same run reads it again. */
static void test_tune_and_resume(void **state)
{
    char onnx[512], run[512], log[600];
    file_in(state, "residual.onnx", onnx, sizeof onnx);
    file_in(state, "run", run, sizeof run);
    snprintf(log, sizeof log, "%s/tuning.jsonl", run);
    for (int pass = 0; pass < 2; pass++) {
        char *slots = pass == 0 ? "2" : "4";
        int rc = dt_test_run((char *[]){ "dtune", "tune", "--model", onnx, "--backend", "replay", "--strategy",
                                         "random", "--out", run, "--listen", "off", "--budget", "30",
                                         "--slot-trials", "4", "--max-slots", slots, NULL },
                             out, sizeof out);
        if (rc != 0)
            fail_msg("pass %d: exit %d: %s", pass, rc, out);
        if (pass == 1 && !strstr(out, "dtune: resuming "))
            fail_msg("the second run did not resume: %s", out);
    }
    char *text = dt_test_slurp(log);
    assert_non_null(text);
    assert_non_null(strstr(text, "residual.onnx"));
    assert_non_null(strstr(text, "conv_b"));
    free(text);
}

/* Exports torchvision's name into the fixture's folder, imports it and
 * compares its tasks with models/NAME.yaml's (kind, geometry, count, order;
 * names differ), leaving out the yaml's tasks named in extra. */
static void compare_with_yaml(void **state, const char *name, const char *const *extra)
{
    fixture *f = *state;
    char cmd[512], onnx[512], yaml[256];
    snprintf(cmd, sizeof cmd, DT_TEST_PYTHON " tests/support/make_onnx.py --torchvision %s %s", f->dir, name);
    assert_int_equal(system(cmd), 0);
    snprintf(onnx, sizeof onnx, "%s/%s.onnx", f->dir, name);
    snprintf(yaml, sizeof yaml, "models/%s.yaml", name);
    dt_model *imported = NULL, *written = NULL;
    dt_error err;
    if (dt_model_file_load(onnx, NULL, NULL, &imported, &err) != 0 || dt_model_load(yaml, &written, &err) != 0)
        fail_msg("%s", err.msg);
    int k = 0;
    for (int w = 0; w < written->ntasks; w++) {
        bool left_out = false;
        for (int e = 0; extra && extra[e]; e++)
            left_out |= strcmp(written->tasks[w].name, extra[e]) == 0;
        if (left_out)
            continue;
        char a[128], b[128];
        dt_task_shape_str(&written->tasks[w], a, sizeof a);
        if (k >= imported->ntasks)
            fail_msg("%s: %s (%s) is not in the import", name, written->tasks[w].name, a);
        dt_task_shape_str(&imported->tasks[k], b, sizeof b);
        if (!same_task(&written->tasks[w], &imported->tasks[k]))
            fail_msg("%s: task %d: %s has %s x%d; the import's %s has %s x%d", name, k, written->tasks[w].name, a,
                     written->tasks[w].count, imported->tasks[k].name, b, imported->tasks[k].count);
        k++;
    }
    assert_int_equal(k, imported->ntasks);
    assert_int_equal(imported->batch, 1);
    dt_model_free(imported);
    dt_model_free(written);
    unlink(onnx);
}

static void test_torchvision_matches_models(void **state)
{
    if (!dt_test_have_torch()) {
        printf("test_onnx: python3-torch or python3-torchvision is missing (scripts/setup.sh installs them); "
               "torchvision's networks are not compared\n");
        skip();
    }
    /* models/resnet18.yaml has a 1x1 conv 64 -> 64 at 56x56 that torchvision's
     * resnet18 lacks (its layer1 blocks have no downsample). */
    static const char *const resnet18_extra[] = { "layer1_1x1", NULL };
    compare_with_yaml(state, "resnet18", resnet18_extra);
    compare_with_yaml(state, "mobilenet_v2", NULL);
    compare_with_yaml(state, "squeezenet1_1", NULL);
}

static void test_torchvision_vgg16(void **state)
{
    if (!getenv("DTUNE_SLOW_TESTS")) {
        printf("test_onnx: vgg16 is compared only with DTUNE_SLOW_TESTS=1 (its export writes 550 MB and "
               "takes minutes)\n");
        skip();
    }
    if (!dt_test_have_torch()) {
        printf("test_onnx: python3-torch or python3-torchvision is missing; vgg16 is not compared\n");
        skip();
    }
    compare_with_yaml(state, "vgg16", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_norm_folded),
        cmocka_unit_test(test_residual_waits_for_its_producer),
        cmocka_unit_test(test_other_ops),
        cmocka_unit_test(test_auto_pad),
        cmocka_unit_test(test_import_writes_a_model_file),
        cmocka_unit_test(test_input_shape),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_tune_and_resume),
        cmocka_unit_test(test_torchvision_matches_models),
        cmocka_unit_test(test_torchvision_vgg16),
    };
    return cmocka_run_group_tests(tests, make_files, remove_files);
}
