/* test_network.c — a network in, a network out, checked against PyTorch:
 * torchvision's resnet18, mobilenet_v2 and squeezenet1_1 (random weights,
 * seed 0) exported to ONNX by Debian's python3-torch together with the
 * eager module's output on a fixed input; each tuned briefly (replay
 * timings, so the configs are the CPU space's and cost no time to find),
 * exported with `dtune export RUN --network`, built with make alone, run by
 * its own program on that input; its output within 1e-4 x max|reference|
 * of PyTorch's. Skipped with a line only where python3-torch is missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "support/run_cmd.h"

/* Debian's interpreter: python3-torch is a Debian package, and the PATH's
 * python3 may be another one. */
/* The tolerance: max|diff| <= TOLERANCE x max|reference|. */
#define TOLERANCE 1e-4
#define CLASSES 1000

static char out[1 << 16];

/* cmd under sh, its output into out; its exit status. */
static int shell(const char *cmd)
{
    return dt_test_shell(cmd, out, sizeof out);
}

static void read_floats(const char *path, float *v, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: cannot open", path);
    size_t got = fread(v, sizeof *v, n, f);
    int extra = fgetc(f);
    fclose(f);
    if (got != n || extra != EOF)
        fail_msg("%s: expected exactly %zu floats", path, n);
}

/* One network through import, tuning, network export, build and run. */
static void network_matches_pytorch(const char *dir, const char *name)
{
    char cmd[2048], onnx[512], run[512], net[512];
    snprintf(onnx, sizeof onnx, "%s/%s.onnx", dir, name);
    snprintf(run, sizeof run, "%s/run_%s", dir, name);
    snprintf(net, sizeof net, "%s/net_%s", dir, name);
    snprintf(cmd, sizeof cmd, DT_TEST_PYTHON " tests/support/make_onnx.py --torchvision-reference %s %s", dir, name);
    if (shell(cmd) != 0)
        fail_msg("%s: %s", cmd, out);
    int rc = dt_test_run((char *[]){ "dtune", "tune", "--model", onnx, "--backend", "replay", "--strategy", "random",
                                     "--budget", "120", "--max-slots", "1", "--retime", "0", "--listen", "off",
                                     "--out", run, NULL },
                         out, sizeof out);
    if (rc != 0)
        fail_msg("%s: tune: exit %d: %s", name, rc, out);
    rc = dt_test_run((char *[]){ "dtune", "export", run, "--network", "-o", net, NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("%s: export --network: exit %d: %s", name, rc, out);
    snprintf(cmd, sizeof cmd, "make -s -C %s", net);
    if (shell(cmd) != 0)
        fail_msg("%s: the export does not build: %s", name, out);
    snprintf(cmd, sizeof cmd, "%s/%s_run %s/%s.weights %s/%s.input.bin %s/%s.got.bin -n 1", net, name, net, name,
             dir, name, dir, name);
    if (shell(cmd) != 0)
        fail_msg("%s: %s: %s", name, cmd, out);
    static float ref[CLASSES], got[CLASSES];
    char path[600];
    snprintf(path, sizeof path, "%s/%s.output.bin", dir, name);
    read_floats(path, ref, CLASSES);
    snprintf(path, sizeof path, "%s/%s.got.bin", dir, name);
    read_floats(path, got, CLASSES);
    double worst = 0, scale = 0;
    for (int i = 0; i < CLASSES; i++) {
        worst = fmax(worst, fabs((double)got[i] - ref[i]));
        scale = fmax(scale, fabs((double)ref[i]));
    }
    print_message("%s: max|diff| %.3g against max|reference| %.3g\n", name, worst, scale);
    assert_true(scale > 0);
    if (!(worst <= TOLERANCE * scale))
        fail_msg("%s: the exported network's output differs from PyTorch's by %.3g (max|reference| %.3g)", name,
                 worst, scale);
}

static void test_torchvision_networks_match_pytorch(void **state)
{
    (void)state;
    if (!dt_test_have_torch()) {
        printf("test_network: python3-torch or python3-torchvision is missing (scripts/setup.sh installs them); "
               "no network is checked against PyTorch\n");
        skip();
    }
    char dir[64];
    dt_test_tmpdir(dir, sizeof dir);
    const char *names[] = { "resnet18", "mobilenet_v2", "squeezenet1_1" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        network_matches_pytorch(dir, names[i]);
    dt_test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torchvision_networks_match_pytorch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
