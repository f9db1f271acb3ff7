/* test_cli.c — the dtune command line, run as a real binary: usage, exit
 * statuses, `models` and `check`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "support/run_cmd.h"

static char out[1 << 16];

static void test_usage_and_unknown(void **state)
{
    (void)state;
    assert_int_equal(dt_test_run((char *[]){ "dtune", NULL }, out, sizeof out), 2);
    assert_non_null(strstr(out, "usage: dtune"));
    assert_int_equal(dt_test_run((char *[]){ "dtune", "--help", NULL }, out, sizeof out), 0);
    assert_int_equal(dt_test_run((char *[]){ "dtune", "frobnicate", NULL }, out, sizeof out), 2);
    assert_non_null(strstr(out, "unknown command 'frobnicate'"));
    const char *cmds[] = { "tune", "status", "report", "best", "models", "measure", "check" };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int rc = dt_test_run((char *[]){ "dtune", (char *)cmds[i], "--help", NULL }, out, sizeof out);
        if (rc != 0)
            fail_msg("dtune %s --help exited %d: %s", cmds[i], rc, out);
        assert_non_null(strstr(out, "usage"));
    }
}

static void test_models_table(void **state)
{
    (void)state;
    int rc = dt_test_run((char *[]){ "dtune", "models", "models/resnet18.yaml", NULL }, out, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "13 tasks"));
    assert_non_null(strstr(out, "layer1_3x3"));
    assert_non_null(strstr(out, "0.2312"));
    rc = dt_test_run((char *[]){ "dtune", "models", "models/resnet18.yaml", "--target", "cuda", NULL },
                     out, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "90316800"));
    rc = dt_test_run((char *[]){ "dtune", "models", "models/nope.yaml", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "models/nope.yaml"));
    rc = dt_test_run((char *[]){ "dtune", "models", "models/tiny.yaml", "--target", "tpu", NULL }, out,
                     sizeof out);
    assert_int_equal(rc, 2);
}

static void test_check(void **state)
{
    (void)state;
    int rc = dt_test_run((char *[]){ "dtune", "check", "config.yaml", NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("%s", out);
    assert_non_null(strstr(out, "ok"));
    char dir[64], path[128];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/bad.yaml", dir);
    assert_int_equal(dt_test_write_file(path, "model: /nonexistent.yaml\nbudget:\n  slot_secs: 3\n"
                                              "measure:\n  cv_threshold: 7\n"), 0);
    rc = dt_test_run((char *[]){ "dtune", "check", path, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, ":3:3: unknown key 'slot_secs'"));
    assert_non_null(strstr(out, ":5:17:"));
    assert_non_null(strstr(out, ":1:8:"));
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_and_unknown),
        cmocka_unit_test(test_models_table),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
