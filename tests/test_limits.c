/* test_limits.c — the input limits of issue 21: each hostile file of the
 * issue refused when it is read, with FILE:LINE:COLUMN and exit 2, before
 * anything is allocated for a run (the real binary for the cases),
 * and each limit's edge checked once in-process; the measurement process and
 * the compilers under their resource limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dtune/backend.h"
#include "cpu_backend.h"
#include "dtune/config.h"
#include "dtune/measure.h"
#include "dtune/proclimit.h"
#include "cpu_runner_internal.h"
#include "dtune/model.h"
#include "dtune/report.h"
#include "dtune/runstate.h"
#include "dtune/target.h"
#include "dtune/tunelog.h"
#include "dtune/util.h"
#include "support/run_cmd.h"

static char out[1 << 16];

static void assert_contains(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("'%s' lacks '%s'", text, want);
}

/* The model: a conv2d with input [1, 65536, 65536, 65536]. */
#define HUGE_CONV "name: huge\nbatch: 1\nops:\n" \
                  "  - {name: c, kind: conv2d, input: [1, 65536, 65536, 65536], out_channels: 8, kernel: 3}\n"

/* dir/NAME written with text; its path into path. */
static void write_in(const char *dir, const char *name, const char *text, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    assert_int_equal(dt_test_write_file(path, "%s", text), 0);
}

/* A config for model (a path) on the replay backend, written to dir/cfg.yaml. */
static void write_config(const char *dir, const char *model, char *cfg, size_t len)
{
    char text[512];
    snprintf(text, sizeof text, "model: %s\nbackend: replay\nserver: {listen: \"off\"}\n"
             "output: {dir: %s/run}\n", model, dir);
    write_in(dir, "cfg.yaml", text, cfg, len);
}

/* `dtune models`, `dtune check` and `dtune tune` each refuse the model
 * with exit 2 and want in the message, and tune creates no run directory. */
static void assert_refused_everywhere(const char *dir, const char *model, const char *want)
{
    char cfg[256], run[256];
    write_config(dir, model, cfg, sizeof cfg);
    char *const cmds[][6] = {
        { "dtune", "models", (char *)model, NULL },
        { "dtune", "check", cfg, NULL },
        { "dtune", "tune", "-c", cfg, "--budget", NULL },
    };
    for (size_t i = 0; i < 3; i++) {
        char *argv[8];
        memcpy(argv, cmds[i], sizeof cmds[i]);
        if (i == 2)
            argv[5] = "60", argv[6] = NULL;
        int rc = dt_test_run(argv, out, sizeof out);
        if (rc != 2 || !strstr(out, want))
            fail_msg("dtune %s: exit %d, want 2 and '%s': %s", argv[1], rc, want, out);
    }
    snprintf(run, sizeof run, "%s/run/tuning.jsonl", dir);
    assert_int_not_equal(access(run, F_OK), 0);
}

static void test_huge_tensor_refused_by_every_command(void **state)
{
    (void)state;
    char dir[64], model[128], want[256];
    dt_test_tmpdir(dir, sizeof dir);
    write_in(dir, "huge.yaml", HUGE_CONV, model, sizeof model);
    snprintf(want, sizeof want, "%s:4:5: c: the input tensor [1, 65536, 65536, 65536] is over "
             "2147483647 elements", model);
    assert_refused_everywhere(dir, model, want);
    dt_test_remove_tree(dir);
}

/* Each tensor fits int indexing but the task is more than the target holds:
 * refused against the target's memory, the figure's source named. */
static void test_task_over_the_targets_memory(void **state)
{
    (void)state;
    char dir[64], model[128];
    dt_test_tmpdir(dir, sizeof dir);
    /* 3 tensors of 46000^2 floats and the reference: 31.5 GiB */
    write_in(dir, "big.yaml", "name: big\nops:\n  - {name: fc, kind: dense, input: [46000, 46000], "
             "weight: [46000, 46000]}\n", model, sizeof model);
    dt_model_memory cpu;
    dt_target_task_memory(DT_TARGET_CPU, &cpu);
    if (cpu.task_bytes >= 4ULL * 4 * 46000 * 46000) {
        dt_test_remove_tree(dir);
        skip();     /* a machine with 64 GiB or more holds it */
    }
    assert_refused_everywhere(dir, model, ":3:5: fc: measuring it takes 31.5 GiB of tensors");
    assert_refused_everywhere(dir, model, "of this machine's");
    /* in-process, with a stated capacity: the edge is exact */
    dt_model_memory mem = { .task_bytes = 4 * (64 * 256 + 32 * 256 + 2 * 64 * 32) };
    snprintf(mem.source, sizeof mem.source, "a test's figure");
    write_in(dir, "fc.yaml", "name: m\nops:\n  - {name: fc, kind: dense, input: [64, 256], "
             "weight: [32, 256]}\n", model, sizeof model);
    dt_model *m = NULL;
    dt_error err;
    assert_int_equal(dt_model_load_within(model, &mem, &m, &err), 0);
    assert_int_equal(dt_task_memory_bytes(&m->tasks[0]), mem.task_bytes);
    dt_model_free(m);
    mem.task_bytes--;
    assert_int_equal(dt_model_load_within(model, &mem, &m, &err), DT_EINVAL);
    assert_contains(err.msg, ":3:5: fc: measuring it takes");
    assert_contains(err.msg, "(a test's figure)");
    dt_test_remove_tree(dir);
}

/* On CUDA the capacity is the device's memory: the stand-in driver of
 * tests/cuda reports a 24 GiB "Fake GPU"; without any driver nothing is
 * checked beyond the tensor limits. */
static void test_task_over_the_devices_memory(void **state)
{
    (void)state;
    char dir[64], model[128], cmd[512];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o %s/libcuda.so.1 tests/cuda/fake_libcuda.c", dir);
    if (system(cmd) != 0) {
        dt_test_remove_tree(dir);
        skip();     /* no C compiler */
    }
    write_in(dir, "big.yaml", "name: big\nops:\n  - {name: fc, kind: dense, input: [46000, 46000], "
             "weight: [46000, 46000]}\n", model, sizeof model);
    snprintf(cmd, sizeof cmd, "LD_LIBRARY_PATH=%s %s models --target cuda %s 2>&1", dir, dt_test_dtune(),
             model);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = '\0';
    assert_int_equal(WEXITSTATUS(pclose(p)), 2);
    assert_contains(out, ":3:5: fc: measuring it takes 31.5 GiB of tensors (input, weight, output and its "
                    "reference); the target allows a task 21.6 GiB (0.9 of the 24 GiB of Fake GPU)");
    dt_test_remove_tree(dir);
}

/* 200 KB of '[' after `ops:`: refused at the first level past the limit,
 * at once (the old loader took half a minute), with the limit named. */
static void test_deep_nesting_refused_at_the_limit(void **state)
{
    (void)state;
    char dir[64], model[128], want[256];
    dt_test_tmpdir(dir, sizeof dir);
    size_t n = 200000;
    char *text = malloc(n + 64);
    assert_non_null(text);
    int head = snprintf(text, 64, "name: deep\nbatch: 1\nops: ");
    memset(text + head, '[', n);
    strcpy(text + head + n, "\n");
    write_in(dir, "deep.yaml", text, model, sizeof model);
    /* the '[' that opens level DT_INPUT_MAX_DEPTH + 1 (the root mapping is level 1) */
    snprintf(want, sizeof want, "%s:3:%d: collections nested deeper than %d levels", model,
             6 + DT_INPUT_MAX_DEPTH - 1, DT_INPUT_MAX_DEPTH);
    assert_refused_everywhere(dir, model, want);
    /* a config nested as deep is refused the same way */
    char cfg[128];
    memcpy(text, "seed: ", 6);
    memset(text + 6, '[', n);
    strcpy(text + 6 + n, "\n");
    write_in(dir, "deepcfg.yaml", text, cfg, sizeof cfg);
    int rc = dt_test_run((char *[]){ "dtune", "check", cfg, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_contains(out, "deepcfg.yaml:1:");
    assert_contains(out, "nested deeper than 64 levels");
    free(text);
    dt_test_remove_tree(dir);
}

/* `kernel: 3` and `kernel: 5` in one op: the second named, with the first. */
static void test_duplicate_keys_refused(void **state)
{
    (void)state;
    char dir[64], model[128], want[256];
    dt_test_tmpdir(dir, sizeof dir);
    write_in(dir, "dup.yaml", "name: dup\nbatch: 1\nops:\n  - kind: conv2d\n    input: [1, 16, 14, 14]\n"
             "    out_channels: 8\n    kernel: 3\n    kernel: 5\n", model, sizeof model);
    snprintf(want, sizeof want, "%s:8:5: duplicate key 'kernel' (first at 7:5)", model);
    assert_refused_everywhere(dir, model, want);
    write_in(dir, "dup2.yaml", "name: a\nbatch: 1\nbatch: 2\nname: b\nops:\n  - {kind: dense, "
             "input: [1, 4], weight: [2, 4]}\n", model, sizeof model);
    int rc = dt_test_run((char *[]){ "dtune", "models", model, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    /* of two keys written twice in a mapping, the earlier second occurrence */
    assert_contains(out, "dup2.yaml:3:1: duplicate key 'batch' (first at 2:1)");
    dt_test_remove_tree(dir);
}

/* Anchors, aliases, a second document, too many ops, a file over the size
 * limit: each refused at its place. */
static void test_other_yaml_limits(void **state)
{
    (void)state;
    char dir[64], model[128];
    dt_model *m = NULL;
    dt_error err;
    dt_test_tmpdir(dir, sizeof dir);
    write_in(dir, "alias.yaml", "name: a\nops:\n  - &op {kind: dense, input: [1, 4], weight: [2, 4]}\n"
             "  - *op\n", model, sizeof model);
    assert_int_equal(dt_model_load(model, &m, &err), DT_EINVAL);
    assert_contains(err.msg, ":3:5: anchor 'op': anchors and aliases are not supported");
    write_in(dir, "two.yaml", "name: a\nops: [{kind: dense, input: [1, 4], weight: [2, 4]}]\n---\n"
             "name: b\n", model, sizeof model);
    assert_int_equal(dt_model_load(model, &m, &err), DT_EINVAL);
    assert_contains(err.msg, ":3:1: a second YAML document");
    dt_buf text = {0};
    dt_buf_append(&text, "name: many\nops:\n", 16);
    for (int i = 0; i <= DT_MODEL_MAX_OPS; i++)
        dt_buf_append(&text, "  - {kind: dense, input: [1, 4], weight: [2, 4]}\n", 49);
    assert_false(text.failed);
    write_in(dir, "many.yaml", text.data, model, sizeof model);
    assert_int_equal(dt_model_load(model, &m, &err), DT_EINVAL);
    assert_contains(err.msg, ":3:3: 10001 ops; a model has at most 10000");
    /* past DT_INPUT_MAX_BYTES: a comment is enough */
    while (text.len <= DT_INPUT_MAX_BYTES)
        dt_buf_append(&text, "# padding padding padding padding padding padding padding padding\n", 66);
    assert_false(text.failed);
    write_in(dir, "large.yaml", text.data, model, sizeof model);
    assert_int_equal(dt_model_load(model, &m, &err), DT_EINVAL);
    assert_contains(err.msg, "large.yaml: the model file is over 16777216 bytes; YAML and JSON "
                    "inputs are at most 16 MiB");
    assert_null(m);
    dt_buf_free(&text);
    dt_test_remove_tree(dir);
}

/* A log record and best.json nested past the limit: refused by line, and
 * a key twice in best.json too. */
static void test_json_depth_and_duplicates(void **state)
{
    (void)state;
    char dir[64], path[128];
    dt_error err;
    dt_test_tmpdir(dir, sizeof dir);
    char deep[DT_INPUT_MAX_DEPTH * 2 + 64];
    int n = snprintf(deep, sizeof deep, "{\"type\":\"slot\",\"x\":");   /* 19 bytes */
    for (int i = 0; i < DT_INPUT_MAX_DEPTH; i++)
        deep[n++] = '[';
    for (int i = 0; i < DT_INPUT_MAX_DEPTH; i++)
        deep[n++] = ']';
    snprintf(deep + n, sizeof deep - (size_t)n, "}\n");
    write_in(dir, "tuning.jsonl", deep, path, sizeof path);
    dt_tunelog_stats stats;
    assert_int_equal(dt_tunelog_replay(path, NULL, &stats, &err), DT_EPARSE);
    assert_contains(err.msg, "tuning.jsonl:1: ");
    assert_contains(err.msg, "nested deeper than 64 levels (column 83)");
    /* the 64 levels of the array alone are within the limit; brackets in strings do not count */
    assert_int_equal(dt_json_too_deep(deep + 19, 2 * DT_INPUT_MAX_DEPTH, DT_INPUT_MAX_DEPTH), -1);
    assert_int_equal(dt_json_too_deep(deep + 19, 2 * DT_INPUT_MAX_DEPTH, DT_INPUT_MAX_DEPTH - 1), 63);
    const char *quoted = "[\"[[[[\", {\"\\\"[[\": []}]";
    assert_int_equal(dt_json_too_deep(quoted, strlen(quoted), 3), -1);
    assert_int_equal(dt_json_too_deep(quoted, strlen(quoted), 2), 18);
    assert_int_equal(dt_json_too_deep("[[[]]]", 6, 2), 2);
    write_in(dir, "best.json", deep, path, sizeof path);
    dt_run_state rs;
    assert_int_equal(dt_report_load_best(dir, &rs, &err), DT_EPARSE);
    assert_contains(err.msg, "best.json: byte 83: nested deeper than 64 levels");
    write_in(dir, "best.json", "{\"tasks\": [], \"tasks\": []}", path, sizeof path);
    assert_int_equal(dt_report_load_best(dir, &rs, &err), DT_EPARSE);
    assert_contains(err.msg, "duplicate object key");
    dt_test_remove_tree(dir);
}

/* ---- the runner and compilers under resource limits --------------------------------- */

/* The soft and hard values of one limit ("Max open files") of pid, as text. */
static void limit_of(pid_t pid, const char *name, char *buf, size_t len)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/limits", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    buf[0] = '\0';
    while (fgets(line, sizeof line, f))
        if (strncmp(line, name, strlen(name)) == 0)
            snprintf(buf, len, "%.100s", line + 26);
    fclose(f);
}

/* A task whose naive reference output takes many seconds (2048^3). */
#define SLOW_DENSE "name: c\nops: [{kind: dense, input: [2048, 2048], weight: [2048, 2048]}]\n"

static dt_cpu_runner_request reference_request(const char *model_text, const char *dir)
{
    char path[128];
    dt_model *m = NULL;
    dt_error err;
    write_in(dir, "m.yaml", model_text, path, sizeof path);
    if (dt_model_load(path, &m, &err) != 0)
        fail_msg("%s", err.msg);
    dt_cpu_runner_request req = { .task = m->tasks[0], .seed = 5, .flops = m->tasks[0].flops,
                              .reference = true, .min_batches = 1, .max_repeats = 1,
                              .cv_threshold = 1, .micro_batch = 1, .threads = 1 };
    dt_model_free(m);
    return req;
}

/* The measurement process lives under the limits: they show in
 * /proc/PID/limits; a task past its address space fails as "out of memory
 * ... measure.limit_memory_mb", one past its CPU time as "CPU time limit
 * ... reached", each a failed measurement, and the next request runs. */
static void test_runner_limits(void **state)
{
    (void)state;
    char dir[64], text[128];
    dt_test_tmpdir(dir, sizeof dir);
    dt_cpu_runner_params params = { .threads = 1, .timeout_seconds = 60, .ready_timeout_seconds = 60,
                                .limits = dt_proclimit_from_settings(512, 1, 40) };
    dt_cpu_runner *r;
    dt_error err;
    dt_measure_result res;
    assert_int_equal(dt_cpu_runner_new(&params, &r, &err), 0);
    dt_cpu_runner_request small = reference_request("name: s\nops: [{kind: dense, input: [4, 64], "
                                                "weight: [8, 64]}]\n", dir);
    assert_int_equal(dt_cpu_runner_run(r, &small, &res, &err), 0);
    assert_int_equal(res.result, DT_RESULT_OK);
    limit_of(dt_cpu_runner_pid(r), "Max open files", text, sizeof text);
    assert_contains(text, "40                   40");
    limit_of(dt_cpu_runner_pid(r), "Max core file size", text, sizeof text);
    assert_contains(text, "0                    0");
    char note[128];
    dt_proclimit_memory_note(&params.limits, note, sizeof note);
    if (note[0]) {     /* not under a sanitizer, whose shadow memory needs the address space */
        limit_of(dt_cpu_runner_pid(r), "Max address space", text, sizeof text);
        assert_contains(text, "536870912            536870912");
        /* 1 GiB per tensor */
        dt_cpu_runner_request big = reference_request("name: b\nops: [{kind: dense, input: [16384, 16384], "
                                                  "weight: [16384, 16384]}]\n", dir);
        assert_int_equal(dt_cpu_runner_run(r, &big, &res, &err), 0);
        assert_int_equal(res.result, DT_RESULT_RUNNER_ERROR);
        assert_contains(res.detail, "out of memory for the tensors (address space limited to 512 MiB, "
                        "measure.limit_memory_mb)");
    }
    /* a naive 2048^3 reference takes far more than 1 s of CPU */
    dt_cpu_runner_request slow = reference_request(SLOW_DENSE, dir);
    assert_int_equal(dt_cpu_runner_run(r, &slow, &res, &err), 0);
    assert_int_equal(res.result, DT_RESULT_CRASH);
    assert_string_equal(res.detail, "CPU time limit of 1 s reached (measure.limit_cpu_seconds)");
    assert_int_equal(dt_cpu_runner_run(r, &small, &res, &err), 0);
    assert_int_equal(res.result, DT_RESULT_OK);
    dt_cpu_runner_free(r);
    dt_test_remove_tree(dir);
}

/* A task whose reference output takes longer than a task's preparation may
 * (ready_timeout_seconds) is a timeout naming that limit, the process is
 * replaced, and the task's next candidate is refused at once for the same
 * reason instead of computing the reference again; another task runs. */
static void test_reference_past_its_limit(void **state)
{
    (void)state;
    char dir[64];
    dt_test_tmpdir(dir, sizeof dir);
    dt_cpu_runner_params params = { .threads = 1, .timeout_seconds = 60, .ready_timeout_seconds = 0.5 };
    dt_cpu_runner *r;
    dt_error err;
    dt_measure_result res;
    assert_int_equal(dt_cpu_runner_new(&params, &r, &err), 0);
    /* a naive 2048^3 reference: seconds */
    dt_cpu_runner_request slow = reference_request(SLOW_DENSE, dir);
    slow.check = true;                 /* a candidate's: checked against the reference */
    double t0 = dt_now_seconds();
    assert_int_equal(dt_cpu_runner_run(r, &slow, &res, &err), 0);
    assert_int_equal(res.result, DT_RESULT_TIMEOUT);
    assert_contains(res.detail, "the task's reference output took longer than 0.5 s");
    int restarts = dt_cpu_runner_restarts(r);
    assert_true(restarts >= 1);
    assert_int_equal(dt_cpu_runner_run(r, &slow, &res, &err), 0);
    assert_int_equal(res.result, DT_RESULT_TIMEOUT);
    assert_contains(res.detail, "measure.compile_timeout_seconds");
    assert_int_equal(dt_cpu_runner_restarts(r), restarts);   /* refused, not run */
    if (dt_now_seconds() - t0 > 30)
        fail_msg("the refusals took %.1f s: the reference ran again", dt_now_seconds() - t0);
    dt_cpu_runner_request small = reference_request("name: s\nops: [{kind: dense, input: [4, 64], "
                                                "weight: [8, 64]}]\n", dir);
    assert_int_equal(dt_cpu_runner_run(r, &small, &res, &err), 0);
    assert_int_equal(res.result, DT_RESULT_OK);
    dt_cpu_runner_free(r);
    dt_test_remove_tree(dir);
}

/* A batch's limit reached while a task's reference output is computed (a
 * signal, the budget's end) gives the point up within a fraction of a
 * second: abandoned, not a result, the process replaced; a measurer's batch
 * (a run's) then counts no point for it. */
static void test_limit_during_the_reference(void **state)
{
    (void)state;
    char dir[64], model[128];
    dt_test_tmpdir(dir, sizeof dir);
    dt_cpu_runner_params params = { .threads = 1, .timeout_seconds = 60, .ready_timeout_seconds = 600 };
    dt_cpu_runner *r;
    dt_error err;
    dt_measure_result res;
    assert_int_equal(dt_cpu_runner_new(&params, &r, &err), 0);
    dt_cpu_runner_request slow = reference_request(SLOW_DENSE, dir);
    slow.check = true;
    dt_measure_limit limit = { .deadline = dt_now_seconds() + 0.3 };
    dt_cpu_runner_set_limit(r, &limit);
    double t0 = dt_now_seconds();
    assert_int_equal(dt_cpu_runner_run(r, &slow, &res, &err), 0);
    double took = dt_now_seconds() - t0;
    assert_true(res.abandoned);
    assert_contains(res.detail, "stopped while its task's reference output was computed");
    assert_int_equal(dt_cpu_runner_restarts(r), 1);
    if (took > 5)
        fail_msg("the limit took %.1f s to give the point up", took);
    dt_cpu_runner_set_limit(r, NULL);
    dt_cpu_runner_free(r);

    /* a batch of the measurer (as a run measures) under a deadline that
     * passes while the first point's reference is computed: no point */
    dt_model *m = NULL;
    write_in(dir, "m.yaml", SLOW_DENSE,
             model, sizeof model);
    assert_int_equal(dt_model_load(model, &m, &err), 0);
    dt_space space;
    assert_int_equal(dt_target_space_init(&space, &m->tasks[0], DT_TARGET_CPU, &err), 0);
    dt_point point;
    dt_space_point(&space, 0, &point);
    dt_measure_params measure = dt_measure_params_default();
    measure.builders = 1;
    dt_measurer *mr;
    assert_int_equal(dt_measurer_new(&dt_cpu_backend, &measure, dir, 3, &mr, &err), 0);
    dt_measure_result results[1];
    limit.deadline = dt_now_seconds() + 2;   /* past the compile, inside the reference */
    t0 = dt_now_seconds();
    int done = dt_measurer_run_until(mr, &space, &point, 1, results, &limit, &err);
    took = dt_now_seconds() - t0;
    if (done != 0 || took > 10)
        fail_msg("the batch measured %d points in %.1f s under a 2 s deadline", done, took);
    dt_measurer_free(mr);
    dt_space_free(&space);
    dt_model_free(m);
    dt_test_remove_tree(dir);
}

/* The measurement process of a parent that died (kill -9 while it computes
 * a reference of many seconds) leaves within a few seconds instead of
 * computing on the cores the next run will time on. */
static void test_orphaned_runner_leaves(void **state)
{
    (void)state;
    char dir[64], model[128], log[128], path[64], stat[256];
    dt_test_tmpdir(dir, sizeof dir);
    write_in(dir, "m.yaml", SLOW_DENSE,
             model, sizeof model);
    snprintf(log, sizeof log, "%s/measure.txt", dir);
    pid_t parent = dt_test_spawn((char *[]){ "dtune", "measure", model, "0", "--dir", dir, NULL }, log);
    /* the runner: a process whose parent is the measure command */
    pid_t child = 0;
    for (int i = 0; i < 600 && !child; i++) {
        char cmd[160];
        snprintf(cmd, sizeof cmd, "pgrep -P %d -f __cpu-runner", (int)parent);
        FILE *p = popen(cmd, "r");
        if (p) {
            int pid = 0;
            if (fscanf(p, "%d", &pid) == 1)
                child = pid;
            pclose(p);
        }
        if (!child)
            usleep(50 * 1000);
    }
    if (!child) {
        kill(parent, SIGKILL);
        dt_test_wait(parent);
        fail_msg("no measurement process appeared under dtune measure");
    }
    usleep(300 * 1000);              /* inside the reference by now */
    kill(parent, SIGKILL);
    dt_test_wait(parent);
    snprintf(path, sizeof path, "/proc/%d/stat", (int)child);
    bool gone = false;
    for (int i = 0; i < 100 && !gone; i++) {
        FILE *f = fopen(path, "r");
        /* gone, or a zombie waiting for its new parent to reap it */
        gone = !f || (fgets(stat, sizeof stat, f) && strstr(stat, ") Z "));
        if (f)
            fclose(f);
        if (!gone)
            usleep(50 * 1000);
    }
    if (!gone) {
        kill(child, SIGKILL);
        fail_msg("the orphaned measurement process %d still runs 5 s after its parent died", (int)child);
    }
    dt_test_remove_tree(dir);
}

/* A whole run whose every candidate passes the address space: each is a
 * failed measurement naming the limit, the task is marked failed with that
 * reason, and the run ends with exit 1 and the reason, not a crash or the
 * kernel's out-of-memory killer. */
static void test_run_past_the_memory_limit(void **state)
{
    (void)state;
    dt_proclimit probe = dt_proclimit_from_settings(200, 0, 0);
    char note[128], dir[64], model[128], cfg[128], text[512];
    dt_proclimit_memory_note(&probe, note, sizeof note);
    if (!note[0])
        skip();     /* a sanitizer build leaves the runner's address space free */
    dt_test_tmpdir(dir, sizeof dir);
    /* a 256 MiB weight */
    write_in(dir, "oom.yaml", "name: oom\nops:\n  - {name: fc, kind: dense, input: [256, 8192], "
             "weight: [8192, 8192]}\n", model, sizeof model);
    snprintf(text, sizeof text, "model: %s\nserver: {listen: \"off\"}\noutput: {dir: %s/run}\n"
             "measure: {limit_memory_mb: 200}\ntuner: {strategy: random}\n", model, dir);
    write_in(dir, "cfg.yaml", text, cfg, sizeof cfg);
    int rc = dt_test_run((char *[]){ "dtune", "tune", "-c", cfg, "--budget", "120", "--slot-trials", "8",
                                     NULL }, out, sizeof out);
    if (rc != 1)
        fail_msg("exit %d, want 1: %s", rc, out);
    assert_contains(out, "task fc failed: no valid config in 64 trials: 64 runner_error (last failure: "
                    "out of memory for the tensors (address space limited to 200 MiB, "
                    "measure.limit_memory_mb))");
    snprintf(text, sizeof text, "%s/run/tuning.jsonl", dir);
    assert_int_equal(dt_test_count_lines(text, "\"result\":\"runner_error\""), 64);
    dt_test_remove_tree(dir);
}

/* Each compiler starts under the limits (a stand-in cc records its
 * ulimits, then runs the real one); a compiler that cannot start is no
 * failed candidate but an error of the run. */
static void test_compiler_limits(void **state)
{
    (void)state;
    char dir[64], script[128], seen[128], body[512];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(seen, sizeof seen, "%s/seen", dir);
    snprintf(body, sizeof body, "#!/bin/sh\necho \"$(ulimit -v) $(ulimit -t) $(ulimit -n) $(ulimit -c)\" "
             "> %s\nexec cc \"$@\"\n", seen);
    write_in(dir, "cc.sh", body, script, sizeof script);
    assert_int_equal(chmod(script, 0755), 0);
    setenv("DTUNE_CC", script, 1);
    dt_measure_params measure = dt_measure_params_default();
    measure.limit_memory_mb = 3000;
    measure.limit_cpu_seconds = 41.5;
    measure.limit_open_files = 77;
    dt_backend_params params = { .measure = &measure, .work_dir = dir, .seed = 1 };
    dt_cpu_options opts;
    dt_cpu_backend_default_options(&measure, &opts);
    void *cpu;
    dt_error err;
    assert_int_equal(dt_cpu_backend_open(&params, &opts, &cpu, &err), 0);
    dt_artifact art;
    assert_int_equal(dt_cpu_backend_build_source(cpu, "int dt_limits_probe;\n", 1, &art, &err), 0);
    assert_int_equal(art.result, DT_RESULT_OK);
    char *got = dt_test_slurp(seen);
    assert_non_null(got);
    assert_string_equal(got, "3072000 42 77 0\n");
    free(got);
    dt_backend_i const *be = dt_backend_find("cpu");
    assert_non_null(be);
    be->close(cpu);
    setenv("DTUNE_CC", "/nonexistent/cc", 1);
    assert_int_equal(dt_cpu_backend_open(&params, &opts, &cpu, &err), 0);
    assert_int_equal(dt_cpu_backend_build_source(cpu, "int dt_limits_probe2;\n", 1, &art, &err), DT_EIO);
    assert_contains(err.msg, "cannot run the C compiler '/nonexistent/cc'");
    be->close(cpu);
    unsetenv("DTUNE_CC");
    dt_test_remove_tree(dir);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], DT_CPU_RUNNER_ARG) == 0)
        return dt_cpu_runner_main(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_tensor_refused_by_every_command),
        cmocka_unit_test(test_task_over_the_targets_memory),
        cmocka_unit_test(test_task_over_the_devices_memory),
        cmocka_unit_test(test_deep_nesting_refused_at_the_limit),
        cmocka_unit_test(test_duplicate_keys_refused),
        cmocka_unit_test(test_other_yaml_limits),
        cmocka_unit_test(test_json_depth_and_duplicates),
        cmocka_unit_test(test_runner_limits),
        cmocka_unit_test(test_reference_past_its_limit),
        cmocka_unit_test(test_orphaned_runner_leaves),
        cmocka_unit_test(test_limit_during_the_reference),
        cmocka_unit_test(test_compiler_limits),
        cmocka_unit_test(test_run_past_the_memory_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
