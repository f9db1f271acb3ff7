/* test_cli.c — the dtune command line, run as a real binary: usage and
 * `--help` of every command that `dtune --help` lists, exit statuses,
 * `models` (its table and --json), `check`, `compare`, `export`'s and
 * `machine`'s usage. (tune, status, report,
 * best, measure and export run as real binaries in test_tune, test_server,
 * test_tunelog, test_measure and test_export.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtune/model.h"
#include "dtune/report.h"
#include "dtune/space.h"
#include "dtune/target.h"
#include "support/run_cmd.h"

#define MAX_COMMANDS 32

static char out[1 << 16];

/* The command names under "commands:" in `dtune --help`; returns how many. */
static int listed_commands(const char *help, char names[][32])
{
    const char *p = strstr(help, "\ncommands:\n");
    assert_non_null(p);
    p = strchr(p + 1, '\n') + 1;
    int n = 0;
    while (n < MAX_COMMANDS && sscanf(p, " %31[a-z]", names[n]) == 1 && p[0] == ' ') {
        n++;
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    return n;
}

static void test_usage_and_unknown(void **state)
{
    (void)state;
    assert_int_equal(dt_test_run((char *[]){ "dtune", NULL }, out, sizeof out), 2);
    assert_non_null(strstr(out, "usage: dtune"));
    assert_int_equal(dt_test_run((char *[]){ "dtune", "frobnicate", NULL }, out, sizeof out), 2);
    assert_non_null(strstr(out, "unknown command 'frobnicate'"));
    assert_int_equal(dt_test_run((char *[]){ "dtune", "--help", NULL }, out, sizeof out), 0);
    /* Every listed command answers --help; the list is the program's own. */
    char names[MAX_COMMANDS][32];
    int n = listed_commands(out, names);
    assert_true(n >= 8);
    bool has_compare = false;
    for (int i = 0; i < n; i++) {
        char want[64];
        snprintf(want, sizeof want, "usage: dtune %.31s", names[i]);
        int rc = dt_test_run((char *[]){ "dtune", names[i], "--help", NULL }, out, sizeof out);
        if (rc != 0 || !strstr(out, want))
            fail_msg("dtune %s --help exited %d without '%s': %s", names[i], rc, want, out);
        has_compare |= strcmp(names[i], "compare") == 0;
    }
    assert_true(has_compare);
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
    assert_non_null(strstr(out, "541900800"));  /* layer1_3x3: 84 x 80 x 80 x 7 x 2 x 2 x 6 x 3 x 2 */
    rc = dt_test_run((char *[]){ "dtune", "models", "models/nope.yaml", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "models/nope.yaml"));
    rc = dt_test_run((char *[]){ "dtune", "models", "models/tiny.yaml", "--target", "tpu", NULL }, out,
                     sizeof out);
    assert_int_equal(rc, 2);
}

/* `dtune models --json`: the tasks bench/torch_bench times, with the
 * geometry, FLOPs and bytes dtune derives (tiny.yaml's conv: 2 x 32 x 14 x
 * 14 x 16 x 9 FLOPs; 4 x (16 x 14 x 14 + 32 x 16 x 9 + 32 x 14 x 14) bytes). */
static void test_models_json(void **state)
{
    (void)state;
    int rc = dt_test_run((char *[]){ "dtune", "models", "models/tiny.yaml", "--json", NULL }, out, sizeof out);
    assert_int_equal(rc, 0);
    json_error_t jerr;
    json_t *doc = json_loads(out, 0, &jerr);
    if (!doc)
        fail_msg("not JSON (%s): %s", jerr.text, out);
    assert_string_equal(json_string_value(json_object_get(doc, "model")), "tiny");
    json_t *tasks = json_object_get(doc, "tasks");
    assert_int_equal(json_array_size(tasks), 3);
    json_t *conv = json_array_get(tasks, 0), *fc = json_array_get(tasks, 2);
    assert_string_equal(json_string_value(json_object_get(conv, "kind")), "conv2d");
    assert_int_equal(json_integer_value(json_object_get(conv, "count")), 2);
    json_t *g = json_object_get(conv, "conv");
    assert_int_equal(json_integer_value(json_object_get(g, "c_in")), 16);
    assert_int_equal(json_integer_value(json_object_get(g, "oh")), 14);
    assert_int_equal(json_integer_value(json_object_get(g, "ph")), 1);
    assert_true(fabs(json_number_value(json_object_get(conv, "flops")) - 2.0 * 32 * 14 * 14 * 16 * 9) < 1e-6);
    assert_true(fabs(json_number_value(json_object_get(conv, "bytes")) -
                     4.0 * (16 * 14 * 14 + 32 * 16 * 9 + 32 * 14 * 14)) < 1e-6);
    json_t *mm = json_object_get(fc, "mm");
    assert_int_equal(json_integer_value(json_object_get(mm, "n")), 64);
    assert_int_equal(json_integer_value(json_object_get(mm, "k")), 256);
    json_decref(doc);
}

/* `dtune machine` and `dtune measure --json`'s bad input: exit 2, nothing probed. */
static void test_machine_and_measure_usage(void **state)
{
    (void)state;
    int rc = dt_test_run((char *[]){ "dtune", "machine", "--threads", "0", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--threads '0'"));
    rc = dt_test_run((char *[]){ "dtune", "machine", "--threads", "1,", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    rc = dt_test_run((char *[]){ "dtune", "machine", "--frob", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    rc = dt_test_run((char *[]){ "dtune", "measure", "models/tiny.yaml", "conv", "--json", NULL }, out,
                     sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--json goes with --best"));
    rc = dt_test_run((char *[]){ "dtune", "measure", "models/tiny.yaml", "--best", "/nonexistent_dtune_run",
                                 NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "/nonexistent_dtune_run"));
    rc = dt_test_run((char *[]){ "dtune", "measure", "models/tiny.yaml", "fc", "--config", "tile_m=[1,1] vec=64",
                                 NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "names no config of this space"));
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

/* A run dir of `model` under `policy`: best.json and a latency.csv of rows. */
static void write_run(const char *dir, const char *model, const char *policy, const char *rows)
{
    assert_int_equal(mkdir(dir, 0755), 0);
    dt_run_state rs;
    assert_int_equal(dt_run_state_init_empty(&rs, 1), 0);
    snprintf(rs.run_dir, sizeof rs.run_dir, "%s", dir);
    snprintf(rs.model, sizeof rs.model, "%s", model);
    snprintf(rs.target, sizeof rs.target, "cpu");
    snprintf(rs.policy, sizeof rs.policy, "%s", policy);
    snprintf(rs.strategy, sizeof rs.strategy, "chameleon");
    snprintf(rs.tasks[0].name, sizeof rs.tasks[0].name, "fc");
    snprintf(rs.tasks[0].kind, sizeof rs.tasks[0].kind, "dense");
    dt_error err;
    assert_int_equal(dt_report_write_best(&rs, &err), 0);
    dt_run_state_destroy(&rs);
    char path[512];
    snprintf(path, sizeof path, "%s/latency.csv", dir);
    assert_int_equal(dt_test_write_file(path, "elapsed_s,slot,task,model_latency_ms,fc\n%s", rows), 0);
}

/* A run dir whose best.json holds tiny's fc tuned at `config`, logged as `knobs`. */
static void write_fc_best(const char *run, uint64_t config, const char *knobs)
{
    assert_int_equal(mkdir(run, 0755), 0);
    dt_run_state rs;
    assert_int_equal(dt_run_state_init_empty(&rs, 1), 0);
    snprintf(rs.run_dir, sizeof rs.run_dir, "%s", run);
    snprintf(rs.model, sizeof rs.model, "tiny");
    snprintf(rs.target, sizeof rs.target, "cpu");
    snprintf(rs.tasks[0].name, sizeof rs.tasks[0].name, "fc");
    snprintf(rs.tasks[0].kind, sizeof rs.tasks[0].kind, "dense");
    rs.tasks[0].count = 1;
    rs.tasks[0].best_gflops = 10;
    rs.tasks[0].best_latency_ms = 0.01;
    rs.tasks[0].best_config = config;
    snprintf(rs.tasks[0].best_knobs, sizeof rs.tasks[0].best_knobs, "%s", knobs);
    dt_error err;
    assert_int_equal(dt_report_write_best(&rs, &err), 0);
    dt_run_state_destroy(&rs);
}

/* `dtune measure --best` reads a config by its logged knobs where this
 * space numbers it otherwise (a knob gained a value since the run), and
 * refuses one whose knobs name no config here (a run of another vector
 * width or knob set): exit 2, naming them, nothing measured. */
static void test_measure_best_of_another_space(void **state)
{
    (void)state;
    char dir[64], run[128], knobs[256];
    dt_test_tmpdir(dir, sizeof dir);
    dt_model *model;
    assert_int_equal(dt_model_load("models/tiny.yaml", &model, NULL), 0);
    int k = dt_model_find_task(model, "fc");
    assert_true(k >= 0);
    dt_space space;
    assert_int_equal(dt_target_space_init(&space, &model->tasks[k], DT_TARGET_CPU, NULL), 0);
    dt_point p;
    uint64_t idx = 0;
    do
        dt_space_point(&space, ++idx, &p);
    while (!dt_space_valid(&space, &p));
    dt_space_point_str(&space, &p, knobs, sizeof knobs);
    dt_space_free(&space);
    dt_model_free(model);

    snprintf(run, sizeof run, "%s/renumbered", dir);
    write_fc_best(run, idx - 1, knobs);
    int rc = dt_test_run((char *[]){ "dtune", "measure", "models/tiny.yaml", "fc", "--best", run, NULL },
                         out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    char want[320];
    snprintf(want, sizeof want, "config   %llu: %s", (unsigned long long)idx, knobs);
    assert_non_null(strstr(out, want));

    snprintf(run, sizeof run, "%s/foreign", dir);
    write_fc_best(run, 3, "tile_m=[1,1] vec=64");
    rc = dt_test_run((char *[]){ "dtune", "measure", "models/tiny.yaml", "fc", "--best", run, NULL },
                     out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "was logged as 'tile_m=[1,1] vec=64'"));
    assert_non_null(strstr(out, "another space"));
    assert_null(strstr(out, "gflops"));
    dt_test_remove_tree(dir);
}

static void test_compare(void **state)
{
    (void)state;
    char dir[64], seq[128], dyn[128], other[128], svg[160];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(seq, sizeof seq, "%s/seq", dir);
    snprintf(dyn, sizeof dyn, "%s/dyn", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    snprintf(svg, sizeof svg, "%s/cmp.svg", dir);
    /* sequential reaches its final 2.7 ms at 310 s, dynatune at 124 s */
    write_run(seq, "tiny", "sequential", "5,0,warm-up,4.1,1\n124,1,fc,3.3,1\n310,2,fc,2.7,1\n");
    write_run(dyn, "tiny", "dynatune", "5,0,warm-up,4.1,1\n124,1,fc,2.6,1\n310,2,fc,2.2,1\n");
    write_run(other, "resnet18", "dynatune", "5,0,warm-up,9.3,1\n");
    int rc = dt_test_run((char *[]){ "dtune", "compare", "-o", svg, seq, dyn, NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("dtune compare exited %d: %s", rc, out);
    assert_non_null(strstr(out, "L* = 2.7000 ms"));
    assert_non_null(strstr(out, "2.50"));   /* dynatune reached L* 310/124 times sooner */
    struct stat st;
    assert_int_equal(stat(svg, &st), 0);
    assert_true(st.st_size > 0);
    rc = dt_test_run((char *[]){ "dtune", "compare", "-o", svg, seq, other, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    rc = dt_test_run((char *[]){ "dtune", "compare", "/nonexistent_dtune_run", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "/nonexistent_dtune_run"));
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* Seeds of one policy are summarised together: L_best 2.2 ms; to 1.10 L_best
 * (2.42 ms) dynatune took 310 s and 60 s, sequential never; mean latency
 * over 310 s: (4.1 x 124 + 2.6 x 186) / 310 = 3.2 and (4.1 x 60 + 2.4 x
 * 250) / 310 = 2.729. */
static void test_compare_by_policy(void **state)
{
    (void)state;
    char dir[64], run[4][128], svg[160];
    dt_test_tmpdir(dir, sizeof dir);
    const char *policy[4] = { "sequential", "sequential", "dynatune", "dynatune" };
    const char *rows[4] = { "5,0,warm-up,4.1,1\n124,1,fc,3.3,1\n310,2,fc,2.7,1\n",
                            "5,0,warm-up,4.1,1\n200,1,fc,3.0,1\n310,2,fc,2.9,1\n",
                            "5,0,warm-up,4.1,1\n124,1,fc,2.6,1\n310,2,fc,2.2,1\n",
                            "5,0,warm-up,4.1,1\n60,1,fc,2.4,1\n310,2,fc,2.3,1\n" };
    for (int i = 0; i < 4; i++) {
        snprintf(run[i], sizeof run[i], "%s/run%d", dir, i);
        write_run(run[i], "tiny", policy[i], rows[i]);
    }
    snprintf(svg, sizeof svg, "%s/cmp.svg", dir);
    int rc = dt_test_run((char *[]){ "dtune", "compare", "-o", svg, run[0], run[1], run[2], run[3],
                                     NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("dtune compare exited %d: %s", rc, out);
    assert_non_null(strstr(out, "L_best = 2.2000 ms"));
    const char *dyn = strstr(out, "\ndynatune (chameleon)");
    const char *seq = strstr(out, "\nsequential (chameleon)");
    if (!dyn || !seq)
        fail_msg("no by-policy rows in: %s", out);
    assert_non_null(strstr(dyn, "2.2500 [2.2000, 2.3000]"));
    assert_non_null(strstr(dyn, "185.0 [60.0, 310.0]"));
    assert_non_null(strstr(dyn, "310.0 [310.0, 310.0]"));
    assert_non_null(strstr(dyn, "2.9645 [2.7290, 3.2000]"));
    assert_non_null(strstr(seq, "never [never, never]"));
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* Every option `dtune tune --help` shows is one the command takes (asked
 * without its value, it says the value is missing, not that the option is
 * unknown), and the run-length options are among them. */
static void test_tune_usage_lists_its_options(void **state)
{
    (void)state;
    char help[4096];
    assert_int_equal(dt_test_run((char *[]){ "dtune", "tune", "--help", NULL }, help, sizeof help), 0);
    const char *musts[] = { "[--finish-after N]", "[--slot-trials N]", "[--max-slots N]", "[--db PATH|off]" };
    for (size_t i = 0; i < sizeof musts / sizeof musts[0]; i++)
        if (!strstr(help, musts[i]))
            fail_msg("dtune tune --help lacks %s:\n%s", musts[i], help);
    int seen = 0;
    for (const char *p = help; (p = strstr(p, "[--")) != NULL; p++) {
        char flag[40], want[80];
        size_t n = strcspn(p + 1, " ]");
        if (n >= sizeof flag)
            fail_msg("an option of %zu characters in: %s", n, help);
        memcpy(flag, p + 1, n);
        flag[n] = 0;
        int rc = dt_test_run((char *[]){ "dtune", "tune", flag, NULL }, out, sizeof out);
        snprintf(want, sizeof want, "missing value after '%s'", flag);
        if (rc != 2 || !strstr(out, want))
            fail_msg("dtune tune %s exited %d without '%s': %s", flag, rc, want, out);
        seen++;
    }
    assert_true(seen >= 15);
    /* a config flag last on the line is an error, never ./config.yaml */
    const char *config_flags[] = { "-c", "--config" };
    for (int i = 0; i < 2; i++) {
        int rc = dt_test_run((char *[]){ "dtune", "tune", "--budget", "1", (char *)config_flags[i], NULL }, out,
                             sizeof out);
        if (rc != 2 || !strstr(out, "missing value after"))
            fail_msg("dtune tune --budget 1 %s exited %d: %s", config_flags[i], rc, out);
    }
}

/* `dtune export`'s usage errors (the export itself: test_export). */
static void test_export_usage(void **state)
{
    (void)state;
    int rc = dt_test_run((char *[]){ "dtune", "export", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "RUN_DIR is missing"));
    rc = dt_test_run((char *[]){ "dtune", "export", "a", "b", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "expects one RUN_DIR, not also 'b'"));
    rc = dt_test_run((char *[]){ "dtune", "export", "a", "--frob", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "unknown option '--frob'"));
    rc = dt_test_run((char *[]){ "dtune", "export", "a", "--threads", "0", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--threads takes a count from 1 to 1024, not '0'"));
    rc = dt_test_run((char *[]){ "dtune", "export", "a", "-o", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "missing value after '-o'"));
    rc = dt_test_run((char *[]){ "dtune", "export", "/nonexistent_dtune_run", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "/nonexistent_dtune_run: No such file or directory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_and_unknown),
        cmocka_unit_test(test_models_table),
        cmocka_unit_test(test_models_json),
        cmocka_unit_test(test_machine_and_measure_usage),
        cmocka_unit_test(test_measure_best_of_another_space),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_compare_by_policy),
        cmocka_unit_test(test_export_usage),
        cmocka_unit_test(test_tune_usage_lists_its_options),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
