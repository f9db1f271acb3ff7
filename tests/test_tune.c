/* test_tune.c — `dtune tune` as a real process on the replay backend: stop
 * conditions, SIGTERM, kill -9 and resume without loss or repeats, the status
 * server while tuning, and dynatune against sequential on resnet18. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_runner.h"
#include "dtune/server.h"
#include "dtune/util.h"
#include "support/run_cmd.h"

static char out[1 << 16];

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Waits until path has at least n lines containing needle (or timeout). */
static bool wait_lines(const char *path, const char *needle, int n, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 50) {
        if (dt_test_count_lines(path, needle) >= n)
            return true;
        sleep_ms(50);
    }
    return false;
}

/* Every measure record of a log: "task#config" strings; fails on duplicates. */
static int measured_configs(const char *log, char ***keys_out)
{
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[8192];
    int n = 0;
    size_t cap = 0;
    char **keys = NULL;
    while (fgets(line, sizeof line, f)) {
        json_error_t jerr;
        json_t *rec = json_loads(line, 0, &jerr);
        if (!rec)
            continue; /* a torn last line after kill -9 */
        if (strcmp(json_string_value(json_object_get(rec, "type")), "measure") == 0) {
            char key[128];
            snprintf(key, sizeof key, "%s#%lld", json_string_value(json_object_get(rec, "task")),
                     (long long)json_integer_value(json_object_get(rec, "config")));
            for (int i = 0; i < n; i++)
                if (strcmp(keys[i], key) == 0)
                    fail_msg("%s measured twice", key);
            assert_int_equal(dt_grow(&keys, &cap, (size_t)n + 1, sizeof *keys), 0);
            keys[n++] = strdup(key);
        }
        json_decref(rec);
    }
    fclose(f);
    *keys_out = keys;
    return n;
}

/* Largest "time" (run seconds) in a log. */
static double last_time(const char *log)
{
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[8192];
    double t = 0;
    while (fgets(line, sizeof line, f)) {
        json_error_t jerr;
        json_t *rec = json_loads(line, 0, &jerr);
        json_t *v = rec ? json_object_get(rec, "time") : NULL;
        if (v && json_number_value(v) > t)
            t = json_number_value(v);
        json_decref(rec);
    }
    fclose(f);
    return t;
}

static void free_keys(char **keys, int n)
{
    for (int i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}

#define TUNE(dir, ...) \
    (char *[]){ "dtune", "tune", "--model", "models/tiny.yaml", "--backend", "replay", \
                "--strategy", "random", "--out", dir, "--listen", "off", __VA_ARGS__, NULL }

/* The real CPU backend end to end: generated kernels compiled, checked and
 * timed, on the tiny model, within 60 s. */
static void test_tiny_on_cpu_end_to_end(void **state)
{
    (void)state;
    char dir[64], path[128];
    dt_test_tmpdir(dir, sizeof dir);
    char *argv[] = { "dtune", "tune", "--model", "models/tiny.yaml", "--out", dir, "--listen", "off",
                     "--budget", "20", "--slot-seconds", "4", NULL };
    int rc = dt_test_run(argv, out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    assert_non_null(strstr(out, "stopped: budget spent"));
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    const char *tasks[] = { "\"task\":\"conv\"", "\"task\":\"depthwise\"", "\"task\":\"fc\"" };
    for (int i = 0; i < 3; i++)
        assert_true(dt_test_count_lines(path, tasks[i]) > 0);
    assert_true(dt_test_count_lines(path, "\"result\":\"ok\"") >= 3);
    assert_int_equal(dt_test_count_lines(path, "\"result\":\"wrong_output\""), 0);
    rc = dt_test_run((char *[]){ "dtune", "report", dir, NULL }, out, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "faster"));
}

/* The pid of parent's runner child (argv[1] is DT_CPU_RUNNER_ARG), or -1. */
static pid_t runner_child(pid_t parent)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    pid_t found = -1;
    struct dirent *e;
    while (found < 0 && (e = readdir(d))) {
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int pid, ppid;
        char st;
        bool child = fscanf(f, "%d (%*[^)]) %c %d", &pid, &st, &ppid) == 3 && ppid == parent;
        fclose(f);
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        if (!child || !(f = fopen(path, "r")))
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        size_t first = strlen(buf) + 1;
        if (first < n && strcmp(buf + first, DT_CPU_RUNNER_ARG) == 0)
            found = pid;
    }
    closedir(d);
    return found;
}

/* Gone or a zombie (exited, not yet reaped by whoever inherited it). */
static bool process_ended(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    char st = '?';
    int got = fscanf(f, "%*d (%*[^)]) %c", &st);
    fclose(f);
    return got == 1 && (st == 'Z' || st == 'X');
}

/* kill -9 of the daemon while its runner times a long measurement: the
 * runner leaves at its next micro-batch instead of timing on for minutes. */
static void test_runner_leaves_with_killed_daemon(void **state)
{
    (void)state;
    char dir[64], cfg[128], log[128], cwd[512];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(cfg, sizeof cfg, "%s/long.yaml", dir);
    snprintf(log, sizeof log, "%s/stdout.txt", dir);
    assert_non_null(getcwd(cwd, sizeof cwd));
    /* a million micro-batches before the CV test: each measurement
     * lasts until the 60 s timeout */
    assert_int_equal(dt_test_write_file(cfg, "model: %s/models/tiny.yaml\nserver: {listen: \"off\"}\n"
                                        "measure: {min_batches: 1000000, max_repeats: 1000000, "
                                        "timeout_seconds: 60}\noutput: {dir: %s/run}\n", cwd, dir), 0);
    pid_t pid = dt_test_spawn((char *[]){ "dtune", "tune", "-c", cfg, "--budget", "120", NULL }, log);
    /* 3 s in: well inside the first (60 s) measurement; the runner is looked
     * up then, since a candidate with wrong output retires a runner */
    sleep_ms(3000);
    pid_t runner = -1;
    for (int waited = 0; runner < 0 && waited < 20000; waited += 50)
        if ((runner = runner_child(pid)) < 0)
            sleep_ms(50);
    if (runner < 0) {
        kill(pid, SIGKILL);
        dt_test_wait(pid);
        fail_msg("no runner child of dtune appeared");
    }
    kill(pid, SIGKILL);
    assert_int_equal(dt_test_wait(pid), 128 + SIGKILL);
    bool ended = false;
    for (int waited = 0; !ended && waited < 3000; waited += 50) {
        sleep_ms(50);
        ended = process_ended(runner);
    }
    if (!ended)
        kill(-runner, SIGKILL); /* do not leave it spinning after the test */
    assert_true(ended);
}

static void test_target_latency_stops(void **state)
{
    (void)state;
    char dir[64];
    dt_test_tmpdir(dir, sizeof dir);
    int rc = dt_test_run(TUNE(dir, "--budget", "60", "--slot-seconds", "1", "--target-latency", "1000"),
                         out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    assert_non_null(strstr(out, "target latency reached"));
    char path[128];
    snprintf(path, sizeof path, "%s/best.json", dir);
    char *best = dt_test_slurp(path);
    assert_non_null(best);
    free(best);
    snprintf(path, sizeof path, "%s/latency.svg", dir);
    char *svg = dt_test_slurp(path);
    assert_non_null(svg);
    assert_non_null(strstr(svg, "<svg"));
    free(svg);
}

static void test_budget_stops_and_reports(void **state)
{
    (void)state;
    char dir[64], path[128];
    dt_test_tmpdir(dir, sizeof dir);
    int rc = dt_test_run(TUNE(dir, "--budget", "3", "--slot-trials", "8", "--finish-after", "1000000"), out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    assert_non_null(strstr(out, "stopped: budget spent"));
    snprintf(path, sizeof path, "%s/latency.csv", dir);
    assert_true(dt_test_count_lines(path, ",") >= 3);
    rc = dt_test_run((char *[]){ "dtune", "report", dir, NULL }, out, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "depthwise"));
    rc = dt_test_run((char *[]){ "dtune", "best", dir, NULL }, out, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "best_gflops"));
}

/* One task's logged and re-timed configs, from a run's log. */
#define RETIME_MAX 64
typedef struct retimed {
    char task[64];
    int nlogged;
    long long logged[RETIME_MAX * 64];
    double logged_gflops[RETIME_MAX * 64], logged_ms[RETIME_MAX * 64];
    int nre;
    long long re_config[RETIME_MAX * 8];
    int re_round[RETIME_MAX * 8];
    double re_ms[RETIME_MAX * 8];
} retimed;

static retimed *task_of(retimed *t, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(t[i].task, name) == 0)
            return &t[i];
    assert_true(*n < 8);
    snprintf(t[*n].task, sizeof t[*n].task, "%s", name);
    return &t[(*n)++];
}

static int read_retimed(const char *log, retimed *t)
{
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        json_error_t jerr;
        json_t *rec = json_loads(line, 0, &jerr);
        assert_non_null(rec);
        const char *type = json_string_value(json_object_get(rec, "type"));
        bool ok = json_object_get(rec, "result") &&
                  strcmp(json_string_value(json_object_get(rec, "result")), "ok") == 0;
        long long config = json_integer_value(json_object_get(rec, "config"));
        double ms = json_number_value(json_object_get(rec, "latency_ms"));
        if (strcmp(type, "measure") == 0 && ok) {
            retimed *r = task_of(t, &n, json_string_value(json_object_get(rec, "task")));
            assert_true(r->nlogged < RETIME_MAX * 64);
            r->logged[r->nlogged] = config;
            r->logged_ms[r->nlogged] = ms;
            r->logged_gflops[r->nlogged++] = json_number_value(json_object_get(rec, "gflops"));
        } else if (strcmp(type, "retime") == 0) {
            retimed *r = task_of(t, &n, json_string_value(json_object_get(rec, "task")));
            assert_true(ok);   /* the replay surface fails the same points every time */
            assert_true(r->nre < RETIME_MAX * 8);
            r->re_config[r->nre] = config;
            r->re_round[r->nre] = (int)json_integer_value(json_object_get(rec, "round"));
            r->re_ms[r->nre++] = ms;
        }
        json_decref(rec);
    }
    fclose(f);
    return n;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of config's re-timed latencies in r. */
static double retimed_median(const retimed *r, long long config)
{
    double v[8];
    int m = 0;
    for (int i = 0; i < r->nre; i++)
        if (r->re_config[i] == config && m < 8)
            v[m++] = r->re_ms[i];
    assert_true(m > 0);
    qsort(v, (size_t)m, sizeof v[0], by_double);
    return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

/* At the run's end each task's 4 best logged configs are timed again in 5
 * rounds (budget.retime_*'s defaults), and best.json's result is the best
 * median, with the log's fastest beside it; retime_top 0 leaves the logged
 * result. With confirmation off (--confirm 0) the logged figures are the
 * raw ones this test reads back. */
static void test_end_retimes_the_best_configs(void **state)
{
    (void)state;
    char dir[64], path[128];
    dt_test_tmpdir(dir, sizeof dir);
    int rc = dt_test_run(TUNE(dir, "--budget", "3", "--slot-trials", "8", "--finish-after", "1000000",
                              "--confirm", "0"),
                         out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    assert_non_null(strstr(out, "re-timed the best"));
    static retimed t[8];
    memset(t, 0, sizeof t);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    int ntasks = read_retimed(path, t);
    snprintf(path, sizeof path, "%s/best.json", dir);
    json_error_t jerr;
    json_t *best = json_load_file(path, 0, &jerr);
    assert_non_null(best);
    json_t *rows = json_object_get(best, "tasks");
    assert_int_equal((int)json_array_size(rows), ntasks);
    for (int k = 0; k < ntasks; k++) {
        json_t *row = json_array_get(rows, (size_t)k);
        retimed *r = task_of(t, &ntasks, json_string_value(json_object_get(row, "name")));
        int top = r->nlogged < 4 ? r->nlogged : 4;
        assert_true(top >= 1);
        assert_int_equal(r->nre, 5 * top);
        /* the re-timed configs are the top logged ones, each once a round */
        int fastest = 0;
        for (int i = 1; i < r->nlogged; i++)
            if (r->logged_gflops[i] > r->logged_gflops[fastest])
                fastest = i;
        for (int i = 0; i < r->nre; i++) {
            int beaten_by = 0, seen = 0;
            for (int j = 0; j < r->nlogged; j++) {
                if (r->logged[j] == r->re_config[i])
                    seen = j + 1;
            }
            assert_true(seen > 0);
            for (int j = 0; j < r->nlogged; j++)
                beaten_by += r->logged_gflops[j] > r->logged_gflops[seen - 1];
            assert_true(beaten_by < top);
            assert_true(r->re_round[i] == 1 + i / top);
        }
        /* the result: the lowest median, with the logged fastest kept beside it */
        long long config = json_integer_value(json_object_get(row, "best_config"));
        double ms = json_number_value(json_object_get(row, "best_latency_ms"));
        assert_true(fabs(ms - retimed_median(r, config)) <= 1e-9 * ms);
        for (int i = 0; i < r->nre; i++)
            assert_true(retimed_median(r, r->re_config[i]) >= ms * (1 - 1e-9));
        double logged = json_number_value(json_object_get(row, "logged_best_ms"));
        assert_true(fabs(logged - r->logged_ms[fastest]) <= 1e-6 * logged);
    }
    json_decref(best);
    dt_test_remove_tree(dir);

    char cwd[512], cfg[700];
    assert_non_null(getcwd(cwd, sizeof cwd));
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/off.yaml", dir);
    snprintf(cfg, sizeof cfg, "model: %s/models/tiny.yaml\nbudget: {retime_top: 0}\n", cwd);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(cfg, f);
    fclose(f);
    char run_dir[96];
    snprintf(run_dir, sizeof run_dir, "%s/run", dir);
    rc = dt_test_run((char *[]){ "dtune", "tune", "-c", path, "--backend", "replay", "--strategy",
                                 "random", "--out", run_dir, "--listen", "off", "--budget", "3",
                                 "--slot-trials", "8", "--finish-after", "1000000", NULL },
                     out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    assert_null(strstr(out, "re-timed"));
    snprintf(path, sizeof path, "%s/tuning.jsonl", run_dir);
    assert_int_equal(dt_test_count_lines(path, "\"retime\""), 0);
    snprintf(path, sizeof path, "%s/best.json", run_dir);
    char *text = dt_test_slurp(path);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"logged_best_ms\": null"));
    free(text);
    dt_test_remove_tree(dir);
}

/* SIGTERM, and SIGHUP (a closed terminal) alike, end a run as its budget
 * would: exit 0, its records kept, best.json final, and its last line names
 * the reports it wrote. */
static void test_sigterm_is_graceful(void **state)
{
    (void)state;
    const int sigs[] = { SIGTERM, SIGHUP };
    for (size_t s = 0; s < sizeof sigs / sizeof sigs[0]; s++) {
        char dir[64], log[128], path[128], best[128];
        dt_test_tmpdir(dir, sizeof dir);
        snprintf(log, sizeof log, "%s/stdout.txt", dir);
        snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
        snprintf(best, sizeof best, "%s/best.json", dir);
        pid_t pid = dt_test_spawn(TUNE(dir, "--budget", "120", "--slot-trials", "4"), log);
        assert_true(wait_lines(path, "\"type\":\"slot\"", 3, 20000));   /* past the warm-up */
        kill(pid, sigs[s]);
        int rc = dt_test_wait(pid);
        char *text = dt_test_slurp(log);
        if (rc != 0 || !strstr(text, "stopped: signal") ||
            !strstr(text, "(report.html, latency.csv, latency.svg, best.json)"))
            fail_msg("signal %d: exit %d: %s", sigs[s], rc, text);
        free(text);
        text = dt_test_slurp(best);
        assert_non_null(text);
        assert_non_null(strstr(text, "\"phase\": \"done\""));
        free(text);
        char **keys;
        int n = measured_configs(path, &keys);
        assert_true(n > 0);
        free_keys(keys, n);
        assert_int_equal(dt_test_remove_tree(dir), 0);
    }
}

static void test_kill9_and_resume(void **state)
{
    (void)state;
    char dir[64], log[128], path[128];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(log, sizeof log, "%s/stdout.txt", dir);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    pid_t pid = dt_test_spawn(TUNE(dir, "--budget", "120", "--slot-trials", "4"), log);
    assert_true(wait_lines(path, "\"measure\"", 40, 20000));
    kill(pid, SIGKILL);
    assert_int_equal(dt_test_wait(pid), 128 + SIGKILL);
    char **before;
    int nbefore = measured_configs(path, &before);
    char budget[32];
    snprintf(budget, sizeof budget, "%.3f", last_time(path) + 2.0);
    int rc = dt_test_run(TUNE(dir, "--budget", budget, "--slot-trials", "4"), out, sizeof out);
    if (rc != 0)
        fail_msg("resume exit %d: %s", rc, out);
    assert_non_null(strstr(out, "resuming"));
    char **after;
    int nafter = measured_configs(path, &after); /* fails on any config measured twice */
    assert_true(nafter > nbefore);
    for (int i = 0; i < nbefore; i++)
        assert_string_equal(before[i], after[i]);
    free_keys(before, nbefore);
    free_keys(after, nafter);
}

/* best.json's result of each task: config and latency, in the file's order. */
typedef struct best_rows {
    int n;
    char task[8][64];
    long long config[8];
    double ms[8];
    double share;
} best_rows;

static void read_best(const char *dir, best_rows *b)
{
    char path[128];
    snprintf(path, sizeof path, "%s/best.json", dir);
    json_error_t jerr;
    json_t *best = json_load_file(path, 0, &jerr);
    assert_non_null(best);
    json_t *rows = json_object_get(best, "tasks");
    b->n = (int)json_array_size(rows);
    assert_true(b->n > 0 && b->n <= 8);
    for (int k = 0; k < b->n; k++) {
        json_t *row = json_array_get(rows, (size_t)k);
        snprintf(b->task[k], sizeof b->task[k], "%s", json_string_value(json_object_get(row, "name")));
        b->config[k] = json_integer_value(json_object_get(row, "best_config"));
        b->ms[k] = json_number_value(json_object_get(row, "best_latency_ms"));
    }
    b->share = json_number_value(json_object_get(best, "confirm_share"));
    json_decref(best);
}

static void assert_same_bests(const best_rows *a, const best_rows *b)
{
    assert_int_equal(a->n, b->n);
    for (int k = 0; k < a->n; k++) {
        assert_string_equal(a->task[k], b->task[k]);
        if (a->config[k] != b->config[k] || fabs(a->ms[k] - b->ms[k]) > 1e-9 * a->ms[k])
            fail_msg("task %s: config %lld at %.9g ms before the resume, %lld at %.9g ms after",
                     a->task[k], a->config[k], a->ms[k], b->config[k], b->ms[k]);
    }
}

/* A confirmation's pair: its configs' latencies in its "confirm" records,
 * round after round. */
typedef struct pair_times {
    long long config[2];
    double ms[2][32];
    int n[2];
} pair_times;

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], by_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Every would-be new best is timed 3 rounds (measure.confirm_rounds's
 * default) beside its task's best, in turns, and becomes the best only on
 * the lower median: on the replay surface (3 % noise) some candidates are
 * kept and some, whose first time was lucky, are not. best.json holds each
 * task's last decision at its median; a resume reads the confirm records
 * back to the same bests and the same share of time. */
static void test_confirmed_figures_and_resume(void **state)
{
    (void)state;
    char dir[64], path[128], line[8192];
    dt_test_tmpdir(dir, sizeof dir);
    /* chameleon's neighbours come close to the best: some are not kept */
    char *argv[] = { "dtune", "tune", "--model", "models/tiny.yaml", "--backend", "replay",
                     "--out", dir, "--listen", "off", "--db", "off", "--budget", "600",
                     "--slot-trials", "16", "--max-slots", "6", "--retime", "0", NULL };
    int rc = dt_test_run(argv, out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    best_rows before, after;
    read_best(dir, &before);
    assert_true(before.share > 0 && before.share < 1);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    pair_times pair;
    memset(&pair, 0, sizeof pair);
    int accepted = 0, rejected = 0, drift = 0;
    long long winner[8];
    double winner_ms[8];
    for (int k = 0; k < 8; k++)
        winner[k] = -1;
    while (fgets(line, sizeof line, f)) {
        json_error_t jerr;
        json_t *rec = json_loads(line, 0, &jerr);
        assert_non_null(rec);
        const char *type = json_string_value(json_object_get(rec, "type"));
        long long config = json_integer_value(json_object_get(rec, "config"));
        if (strcmp(type, "confirm") == 0) {
            int side = pair.n[0] == 0 || pair.config[0] == config ? 0 : 1;
            pair.config[side] = config;
            assert_true(pair.n[side] < 32);
            assert_int_equal(json_integer_value(json_object_get(rec, "round")), pair.n[side] + 1);
            pair.ms[side][pair.n[side]++] = json_number_value(json_object_get(rec, "latency_ms"));
        } else if (strcmp(type, "confirmed") == 0) {
            long long cand = json_integer_value(json_object_get(rec, "candidate"));
            long long inc = json_integer_value(json_object_get(rec, "incumbent"));
            double cand_ms = json_number_value(json_object_get(rec, "candidate_ms"));
            double inc_ms = json_number_value(json_object_get(rec, "incumbent_ms"));
            bool kept = json_integer_value(json_object_get(rec, "accepted")) == 1;
            assert_int_equal(json_integer_value(json_object_get(rec, "rounds")), 3);
            assert_true(pair.n[0] == 3 && pair.n[1] == 3);
            assert_true(pair.config[0] == cand && pair.config[1] == inc);
            assert_true(fabs(median_of(pair.ms[0], 3) - cand_ms) <= 1e-12 * cand_ms);
            assert_true(fabs(median_of(pair.ms[1], 3) - inc_ms) <= 1e-12 * inc_ms);
            assert_true(kept == (cand_ms < inc_ms));
            accepted += kept;
            rejected += !kept;
            int k = (int)json_integer_value(json_object_get(rec, "task_index"));
            assert_true(k >= 0 && k < 8);
            winner[k] = kept ? cand : inc;
            winner_ms[k] = kept ? cand_ms : inc_ms;
            memset(&pair, 0, sizeof pair);
        } else if (strcmp(type, "drift") == 0) {
            drift++;
        }
        json_decref(rec);
    }
    fclose(f);
    print_message("%d candidates kept, %d not, %d drift readings\n", accepted, rejected, drift);
    assert_true(accepted > 0 && rejected > 0 && drift > 0);
    for (int k = 0; k < before.n; k++)
        if (winner[k] >= 0) {
            assert_true(before.config[k] == winner[k]);
            assert_true(fabs(before.ms[k] - winner_ms[k]) <= 1e-9 * winner_ms[k]);
        }
    /* max_slots reached: the resume measures nothing and reads the bests back */
    int records = dt_test_count_lines(path, "\"type\"");
    rc = dt_test_run(argv, out, sizeof out);
    if (rc != 0)
        fail_msg("resume exit %d: %s", rc, out);
    assert_int_equal(dt_test_count_lines(path, "\"type\""), records);
    read_best(dir, &after);
    assert_same_bests(&before, &after);
    assert_true(fabs(before.share - after.share) <= 1e-9 * before.share);
    dt_test_remove_tree(dir);

    /* the end's re-timing chose each task's result; a resume keeps it */
    dt_test_tmpdir(dir, sizeof dir);
    rc = dt_test_run(TUNE(dir, "--budget", "3", "--slot-trials", "8", "--finish-after", "1000000"),
                     out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    assert_non_null(strstr(out, "re-timed the best"));
    read_best(dir, &before);
    /* its budget is spent: the resume measures nothing, not even a re-timing */
    rc = dt_test_run(TUNE(dir, "--budget", "2", "--slot-seconds", "1"), out, sizeof out);
    if (rc != 0)
        fail_msg("resume exit %d: %s", rc, out);
    assert_null(strstr(out, "re-timed the best"));
    read_best(dir, &after);
    assert_same_bests(&before, &after);
    dt_test_remove_tree(dir);
}

/* The CUDA target follows the same rule (on the replay surface here): its
 * would-be new bests are confirmed, its slots read the drift, and a resume
 * reads them back to the same bests. */
static void test_cuda_confirms_on_replay(void **state)
{
    (void)state;
    char dir[64], path[128];
    dt_test_tmpdir(dir, sizeof dir);
    char *argv[] = { "dtune", "tune", "--model", "models/tiny.yaml", "--target", "cuda",
                     "--backend", "replay", "--out", dir, "--listen", "off", "--budget", "600",
                     "--slot-trials", "8", "--max-slots", "6", "--retime", "0", NULL };
    int rc = dt_test_run(argv, out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    assert_true(dt_test_count_lines(path, "\"type\":\"confirmed\"") > 0);
    assert_true(dt_test_count_lines(path, "\"type\":\"confirm\"") > 0);
    assert_true(dt_test_count_lines(path, "\"type\":\"drift\"") > 0);
    best_rows before, after;
    read_best(dir, &before);
    rc = dt_test_run(argv, out, sizeof out);   /* max_slots reached: measures nothing */
    if (rc != 0)
        fail_msg("resume exit %d: %s", rc, out);
    read_best(dir, &after);
    assert_same_bests(&before, &after);
    dt_test_remove_tree(dir);
}

/* A new run warm-started from another run's log starts from its bests and
 * never measures its configs again. */
static void test_warm_start(void **state)
{
    (void)state;
    char first[64], second[64], cfg[160], log1[160], log2[160], cwd[512];
    dt_test_tmpdir(first, sizeof first);
    dt_test_tmpdir(second, sizeof second);
    int rc = dt_test_run(TUNE(first, "--budget", "60", "--slot-trials", "8", "--max-slots", "6"), out,
                         sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    snprintf(log1, sizeof log1, "%s/tuning.jsonl", first);
    snprintf(cfg, sizeof cfg, "%s/warm.yaml", second);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(dt_test_write_file(cfg, "model: %s/models/tiny.yaml\nbackend: replay\n"
                                        "server: {listen: \"off\"}\ntuner: {strategy: random}\n"
                                        "output: {dir: %s/run, warm_start: %s}\n", cwd, second, log1), 0);
    rc = dt_test_run((char *[]){ "dtune", "tune", "-c", cfg, "--budget", "60", "--slot-trials", "8",
                                 "--max-slots", "3", NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("warm-started run exit %d: %s", rc, out);
    snprintf(log2, sizeof log2, "%s/run/tuning.jsonl", second);
    char **a, **b;
    int na = measured_configs(log1, &a), nb = measured_configs(log2, &b);
    assert_true(na > 0 && nb > 0);
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (strcmp(a[i], b[j]) == 0)
                fail_msg("%s measured again after warm start", a[i]);
    /* the warm-started run needs no warm-up measurements: slot 0 comes first */
    assert_true(dt_test_count_lines(log2, "\"slot\":-1") == 0);
    free_keys(a, na);
    free_keys(b, nb);
}

/* Warm-starts a run of a model of `ops` (model file lines, in a new
 * directory) from log with tuner.transfer set to `transfer`; expects exit 0
 * and `want` in what it printed. */
static void warm_case(const char *ops, const char *log, bool transfer, const char *want)
{
    char dir[64], cfg[160], model[160];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(model, sizeof model, "%s/other.yaml", dir);
    assert_int_equal(dt_test_write_file(model, "name: other\nbatch: 1\nops:\n%s", ops), 0);
    snprintf(cfg, sizeof cfg, "%s/warm.yaml", dir);
    assert_int_equal(dt_test_write_file(cfg, "model: %s\nbackend: replay\nserver: {listen: \"off\"}\n"
                                        "tuner: {strategy: random, transfer: %s}\n"
                                        "output: {dir: %s/run, warm_start: %s}\n", model,
                                        transfer ? "true" : "false", dir, log), 0);
    int rc = dt_test_run((char *[]){ "dtune", "tune", "-c", cfg, "--budget", "60", "--slot-trials", "8",
                                     "--max-slots", "2", NULL }, out, sizeof out);
    if (rc != 0 || !strstr(out, want))
        fail_msg("warm-started run exit %d without '%s': %s", rc, want, out);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* A warm start from another model's log: the records of tasks this model
 * lacks (and of a task of the same name but another shape) go to the
 * transfer store instead of ending the run; with transfer off, or where the
 * log's model cannot be loaded, they are counted as skipped. */
static void test_warm_start_from_other_model(void **state)
{
    (void)state;
    char first[64], log1[160], tiny[160], want[160];
    dt_test_tmpdir(first, sizeof first);
    /* the first run's model is a copy, so the test can take it away */
    snprintf(tiny, sizeof tiny, "%s/tiny.yaml", first);
    char *text = dt_test_slurp("models/tiny.yaml");
    assert_non_null(text);
    assert_int_equal(dt_test_write_file(tiny, "%s", text), 0);
    free(text);
    int rc = dt_test_run((char *[]){ "dtune", "tune", "--model", tiny, "--backend", "replay", "--strategy",
                                     "random", "--out", first, "--listen", "off", "--budget", "60",
                                     "--slot-trials", "8", "--max-slots", "4", NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    snprintf(log1, sizeof log1, "%s/tuning.jsonl", first);
    int records = dt_test_count_lines(log1, "\"type\":\"measure\"");
    assert_true(records > 3);

    /* "conv" here is another shape than tiny's; depthwise and fc are not here */
    const char *conv_fc2 =
        "  - {name: conv, kind: conv2d, input: [1, 8, 14, 14], out_channels: 16, kernel: 3, padding: 1}\n"
        "  - {name: fc2, kind: dense, input: [1, 128], weight: [32, 128]}\n";
    const char *fc2 = "  - {name: fc2, kind: dense, input: [1, 128], weight: [32, 128]}\n";
    snprintf(want, sizeof want, "%d records of tasks model other lacks went to transfer, 0 skipped", records);
    warm_case(conv_fc2, log1, true, want);
    snprintf(want, sizeof want, "0 records of tasks model other lacks went to transfer, %d skipped "
             "(tuner.transfer is off)", records);
    warm_case(fc2, log1, false, want);
    assert_int_equal(remove(tiny), 0);
    snprintf(want, sizeof want, "0 records of tasks model other lacks went to transfer, %d skipped", records);
    warm_case(fc2, log1, true, want);
    assert_int_equal(dt_test_remove_tree(first), 0);
}

/* Runs three short slots into dir and returns its tuning.jsonl (at path),
 * for the tests that then edit the log and resume. */
static char *short_run_log(char *dir, const char *path)
{
    int rc = dt_test_run(TUNE(dir, "--budget", "20", "--slot-trials", "4", "--max-slots", "3"), out,
                         sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    char *log = dt_test_slurp(path);
    assert_non_null(log);
    return log;
}

/* A log whose knobs do not match this space's reading of a config index (a
 * log of another machine's vector width, another dtune version) is refused
 * with exit 2 naming the record, and is left exactly as it was. */
static void test_resume_refuses_another_space(void **state)
{
    (void)state;
    char dir[64], path[128];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    char *log = short_run_log(dir, path);
    char *knobs = strstr(log, "\"knobs\":\"");
    assert_non_null(knobs);
    knobs[strlen("\"knobs\":\"")] = 'X'; /* "tile_..." -> "Xile_..." */
    assert_int_equal(dt_test_write_file(path, "%s", log), 0);
    int rc = dt_test_run(TUNE(dir, "--budget", "40", "--slot-trials", "4", "--max-slots", "6"), out,
                     sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "tuning.jsonl: record"));
    assert_non_null(strstr(out, "another space"));
    char *after = dt_test_slurp(path);
    assert_non_null(after);
    assert_string_equal(after, log);
    free(after);
    free(log);
}

/* text with the first (or every, with all) occurrence of from replaced by to;
 * malloc'd. Fails the test when from does not occur. */
static char *replaced(const char *text, const char *from, const char *to, bool all)
{
    dt_buf buf = { 0 };
    const char *p = text, *at;
    int n = 0;
    while ((at = strstr(p, from)) && (all || n == 0)) {
        assert_int_equal(dt_buf_append(&buf, p, (size_t)(at - p)), 0);
        assert_int_equal(dt_buf_append(&buf, to, strlen(to)), 0);
        p = at + strlen(from);
        n++;
    }
    if (n == 0)
        fail_msg("'%s' is not in the log", from);
    assert_int_equal(dt_buf_append(&buf, p, strlen(p)), 0);
    return buf.data;
}

/* Resumes the log text of dir with argv and expects exit 2 naming each of
 * want (NULL-ended), the log left exactly as written. */
static void resume_refused_with(const char *path, const char *text, char **argv, const char *const *want)
{
    assert_int_equal(dt_test_write_file(path, "%s", text), 0);
    int rc = dt_test_run(argv, out, sizeof out);
    for (int i = 0; want[i]; i++)
        if (rc != 2 || !strstr(out, want[i]))
            fail_msg("exit %d without '%s': %s", rc, want[i], out);
    char *after = dt_test_slurp(path);
    assert_non_null(after);
    assert_string_equal(after, text);
    free(after);
}

/* Writes text as the run's log, resumes, and expects exit 2 naming the
 * record and `what`, with the log left exactly as written. */
static void assert_resume_refused(char *dir, const char *path, const char *text,
                                  const char *what)
{
    resume_refused_with(path, text, TUNE(dir, "--budget", "40", "--slot-trials", "4", "--max-slots", "6"),
                        (const char *const[]){ "tuning.jsonl: record", what, NULL });
}

/* Resume, the program's one path (daemon_setup.c): a record whose task_index
 * is stale is matched to its task by name; a measure or slot record of a
 * task the model does not have is refused (exit 2, naming the record). */
static void test_resume_matches_tasks_by_name(void **state)
{
    (void)state;
    char dir[64], path[128], want[64];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    char *log = short_run_log(dir, path);
    int measures = dt_test_count_lines(path, "\"type\":\"measure\"");
    assert_true(measures > 3);

    char *text = replaced(log, "\"task\":\"fc\",\"task_index\":2", "\"task\":\"fc9\",\"task_index\":2",
                          false);
    assert_resume_refused(dir, path, text, "fc9");
    free(text);
    text = replaced(log, "\"type\":\"slot\",\"slot\":1,\"task\":\"conv\"",
                    "\"type\":\"slot\",\"slot\":1,\"task\":\"conv9\"", false);
    assert_resume_refused(dir, path, text, "slot 1 of task 'conv9'");
    free(text);

    /* every conv record claims task 2 (fc's index): still conv's */
    text = replaced(log, "\"task\":\"conv\",\"task_index\":0", "\"task\":\"conv\",\"task_index\":2", true);
    assert_int_equal(dt_test_write_file(path, "%s", text), 0);
    int rc = dt_test_run(TUNE(dir, "--budget", "40", "--slot-trials", "4", "--max-slots", "6"), out,
                     sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    snprintf(want, sizeof want, "%d measurements", measures);
    assert_non_null(strstr(out, "resuming"));
    assert_non_null(strstr(out, want));
    free(text);
    free(log);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* A resume goes on with the run as it was started: another seed, policy,
 * strategy or model (a task added) is refused before anything is measured
 * (exit 2, both values named, the log untouched), as is a log that holds
 * its run twice (appended to itself). A log that holds nothing yet is
 * started anew with its run record. */
static void test_resume_refuses_another_run(void **state)
{
    (void)state;
    char dir[64], path[128], model[128];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    char *log = short_run_log(dir, path);
    assert_non_null(strstr(log, "\"policy\":\"dynatune\",\"strategy\":\"random\",\"tasks\":\"3 tasks, "));

    resume_refused_with(path, log, TUNE(dir, "--budget", "40", "--seed", "2"),
                        (const char *const[]){ "the run was started with seed '1', this run has '2'", NULL });
    resume_refused_with(path, log, TUNE(dir, "--budget", "40", "--policy", "round_robin"),
                        (const char *const[]){ "scheduler.policy 'dynatune'", "'round_robin'", NULL });
    resume_refused_with(path, log, TUNE(dir, "--budget", "40", "--strategy", "autotvm"),
                        (const char *const[]){ "tuner.strategy 'random'", "'autotvm'", NULL });
    snprintf(model, sizeof model, "%s/tiny_plus.yaml", dir);
    char *tiny = dt_test_slurp("models/tiny.yaml");
    assert_non_null(tiny);
    assert_int_equal(dt_test_write_file(model, "%s  - {name: fc2, kind: dense, input: [1, 128], "
                                        "weight: [32, 128]}\n", tiny), 0);
    free(tiny);
    resume_refused_with(path, log, TUNE(dir, "--budget", "40", "--model", model),
                        (const char *const[]){ "the model file changed since the log was written",
                                               "the run's tasks: 3 tasks, ", "now: 4 tasks, ", NULL });

    size_t n = strlen(log);
    char *twice = malloc(2 * n + 1);
    assert_non_null(twice);
    memcpy(twice, log, n);
    memcpy(twice + n, log, n + 1);
    resume_refused_with(path, twice, TUNE(dir, "--budget", "40"),
                        (const char *const[]){ "a second run record", NULL });
    free(twice);

    /* an empty log: a new run, which writes its run record first */
    assert_int_equal(dt_test_write_file(path, "%s", ""), 0);
    int rc = dt_test_run(TUNE(dir, "--budget", "20", "--slot-trials", "4", "--max-slots", "1"), out,
                         sizeof out);
    if (rc != 0)
        fail_msg("exit %d on an empty log: %s", rc, out);
    char *fresh = dt_test_slurp(path);
    assert_non_null(fresh);
    if (strncmp(fresh, "{\"type\":\"run\",", strlen("{\"type\":\"run\",")) != 0)
        fail_msg("the log of a run started on an empty log begins: %.200s", fresh);
    free(fresh);
    free(log);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* A warm start from a log measured with another backend (here a real CPU
 * run's into a replay run) is refused: its figures are no start for it. */
static void test_warm_start_refuses_another_backend(void **state)
{
    (void)state;
    char dir[64], path[128], cfg[160], log2[160], cwd[512];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    char *log = short_run_log(dir, path);
    char *cpu = replaced(log, "\"backend\":\"replay\"", "\"backend\":\"cpu\"", false);
    snprintf(log2, sizeof log2, "%s/cpu.jsonl", dir);
    assert_int_equal(dt_test_write_file(log2, "%s", cpu), 0);
    snprintf(cfg, sizeof cfg, "%s/warm.yaml", dir);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(dt_test_write_file(cfg, "model: %s/models/tiny.yaml\nbackend: replay\n"
                                        "server: {listen: \"off\"}\ntuner: {strategy: random}\n"
                                        "output: {dir: %s/run, warm_start: %s}\n", cwd, dir, log2), 0);
    int rc = dt_test_run((char *[]){ "dtune", "tune", "-c", cfg, "--budget", "20", NULL }, out, sizeof out);
    if (rc != 2 || !strstr(out, "a warm start from a run measured with backend 'cpu' into one "
                                "measured with 'replay'"))
        fail_msg("exit %d: %s", rc, out);
    free(cpu);
    free(log);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

static void test_status_server_while_tuning(void **state)
{
    (void)state;
    char dir[64], log[128];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(log, sizeof log, "%s/stdout.txt", dir);
    char *argv[] = { "dtune", "tune", "--model", "models/tiny.yaml", "--backend", "replay",
                     "--strategy", "random", "--out", dir, "--listen", "127.0.0.1:0",
                     "--budget", "60", "--slot-trials", "4", NULL };
    pid_t pid = dt_test_spawn(argv, log);
    assert_true(wait_lines(log, "(port ", 1, 20000));
    char *text = dt_test_slurp(log);
    int port = atoi(strstr(text, "(port ") + 6);
    free(text);
    assert_true(port > 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    snprintf(out, sizeof out, "%s/tuning.jsonl", dir);
    assert_true(wait_lines(out, "\"slot\"", 2, 20000));
    dt_http_reply reply;
    dt_error err;
    assert_int_equal(dt_server_request(addr, "GET", "/status", 2000, &reply, &err), 0);
    assert_int_equal(reply.status, 200);
    json_error_t jerr;
    json_t *status = json_loads(reply.body, 0, &jerr);
    assert_non_null(status);
    assert_string_equal(json_string_value(json_object_get(status, "model")), "tiny");
    json_decref(status);
    dt_server_reply_free(&reply);
    assert_int_equal(dt_server_request(addr, "GET", "/metrics", 2000, &reply, &err), 0);
    assert_non_null(strstr(reply.body, "dtune_model_latency_seconds "));
    dt_server_reply_free(&reply);
    kill(pid, SIGTERM);
    assert_int_equal(dt_test_wait(pid), 0);
}

/* Starts a replay run with a status server on a free port; writes its address
 * into addr and returns the pid. extra: more arguments, NULL-terminated. */
static pid_t spawn_with_server(char *dir, size_t dlen, char *addr, size_t alen, char *const *extra)
{
    char log[128];
    dt_test_tmpdir(dir, dlen);
    snprintf(log, sizeof log, "%s/stdout.txt", dir);
    char *argv[32] = { "dtune", "tune", "--model", "models/tiny.yaml", "--backend", "replay",
                       "--strategy", "random", "--out", dir, "--listen", "127.0.0.1:0" };
    int n = 12;
    for (int i = 0; extra[i] && n < 31; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = dt_test_spawn(argv, log);
    assert_true(wait_lines(log, "(port ", 1, 20000));
    char *text = dt_test_slurp(log);
    int port = atoi(strstr(text, "(port ") + 6);
    free(text);
    assert_true(port > 0);
    snprintf(addr, alen, "127.0.0.1:%d", port);
    return pid;
}

static json_t *get_json(const char *addr, const char *path)
{
    dt_http_reply reply;
    dt_error err;
    assert_int_equal(dt_server_request(addr, "GET", path, 5000, &reply, &err), 0);
    assert_int_equal(reply.status, 200);
    json_error_t jerr;
    json_t *doc = json_loads(reply.body, 0, &jerr);
    dt_server_reply_free(&reply);
    assert_non_null(doc);
    return doc;
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("%s is not a number", key);
    return json_number_value(v);
}

/* /status once a slot is under way (slot_elapsed_s set), or NULL on time-out. */
static json_t *status_in_slot(const char *addr)
{
    for (int waited = 0; waited < 30000; waited += 100) {
        json_t *st = get_json(addr, "/status");
        if (json_is_number(json_object_get(st, "slot_elapsed_s")))
            return st;
        json_decref(st);
        sleep_ms(100);
    }
    return NULL;
}

/* Within one long slot the clock, the budget left and the slot's own time
 * move; slot, task and the decision that chose it agree with each other and
 * with /metrics. */
static void test_status_ticks_within_a_slot(void **state)
{
    (void)state;
    char dir[64], addr[64];
    pid_t pid = spawn_with_server(dir, sizeof dir, addr, sizeof addr,
                                  (char *[]){ "--budget", "60", "--slot-seconds", "5",
                                              "--finish-after", "1000000", NULL });
    int tries = 0;
    json_t *a, *b;
    do { /* both readings inside one slot; a slot end in between takes another pair */
        a = status_in_slot(addr);
        assert_non_null(a);
        sleep_ms(1200);
        b = get_json(addr, "/status");
        if (num(a, "slot") == num(b, "slot"))
            break;
        json_decref(a);
        json_decref(b);
    } while (++tries < 5);
    assert_true(tries < 5);
    assert_true(num(b, "elapsed_s") - num(a, "elapsed_s") > 0.6);
    assert_true(num(b, "slot_elapsed_s") - num(a, "slot_elapsed_s") > 0.6);
    assert_true(num(b, "budget_left_s") < num(a, "budget_left_s") - 0.6);
    assert_float_equal(num(b, "budget_left_s") + num(b, "elapsed_s"), 60.0, 1e-6);
    json_t *d = json_object_get(b, "decision");
    assert_float_equal(num(d, "slot"), num(b, "slot"), 0);
    assert_string_equal(json_string_value(json_object_get(d, "task")),
                        json_string_value(json_object_get(b, "current_task")));
    json_t *ranking = json_object_get(d, "ranking");
    assert_int_equal(json_array_size(ranking), 3);
    assert_true(json_is_true(json_object_get(json_array_get(ranking, 0), "chosen")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(ranking, 0), "task")),
                        json_string_value(json_object_get(b, "current_task")));
    assert_int_equal(num(b, "decisions_total"), num(b, "slot"));
    /* /metrics, read while /status still shows the same slot, agrees */
    bool checked = false;
    for (int i = 0; i < 5 && !checked; i++) {
        dt_http_reply reply;
        dt_error err;
        assert_int_equal(dt_server_request(addr, "GET", "/metrics", 5000, &reply, &err), 0);
        json_t *c = get_json(addr, "/status");
        if (num(c, "slot") == num(b, "slot")) {
            char want[128];
            snprintf(want, sizeof want, "\ndtune_slots_total %.0f\n", num(b, "slot"));
            assert_non_null(strstr(reply.body, want));
            snprintf(want, sizeof want, "\ndtune_task_tuning{task=\"%s\"} 1\n",
                     json_string_value(json_object_get(b, "current_task")));
            assert_non_null(strstr(reply.body, want));
            checked = true;
        }
        json_decref(c);
        dt_server_reply_free(&reply);
    }
    assert_true(checked);
    json_decref(a);
    json_decref(b);
    kill(pid, SIGTERM);
    assert_int_equal(dt_test_wait(pid), 0);
}

/* The daemon's threads (tuning, status server, ticker, builders) stay off
 * the last allowed core, where the CPU backend's measurement process times
 * kernels. */
static void test_threads_stay_off_the_timing_core(void **state)
{
    (void)state;
    cpu_set_t mine;
    assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
    if (CPU_COUNT(&mine) < 2)
        skip(); /* one core: nothing to keep the threads off */
    int timing = CPU_SETSIZE - 1;
    while (!CPU_ISSET(timing, &mine))
        timing--;
    char dir[64], addr[64], tasks[64];
    pid_t pid = spawn_with_server(dir, sizeof dir, addr, sizeof addr,
                                  (char *[]){ "--budget", "60", "--slot-seconds", "2", NULL });
    json_t *st = status_in_slot(addr);
    assert_non_null(st);
    json_decref(st);
    snprintf(tasks, sizeof tasks, "/proc/%d/task", (int)pid);
    DIR *d = opendir(tasks);
    assert_non_null(d);
    int threads = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        cpu_set_t set;
        if (sched_getaffinity(atoi(e->d_name), sizeof set, &set) != 0)
            continue; /* the thread ended meanwhile */
        if (CPU_ISSET(timing, &set))
            fail_msg("thread %s of dtune may run on core %d, the timing core", e->d_name, timing);
        threads++;
    }
    closedir(d);
    assert_true(threads >= 3); /* tuning, status server, ticker at least */
    kill(pid, SIGTERM);
    assert_int_equal(dt_test_wait(pid), 0);
}

static int count_substr(const char *text, const char *needle)
{
    int n = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle))
        n++;
    return n;
}

/* On a terminal each decision is one line: the chosen task, then the next
 * two, each with its score and its note; a cut without an interval (the
 * prior's alone) prints none, so no number reads "nan". */
static void test_terminal_says_why(void **state)
{
    (void)state;
    char dir[64], text[1 << 16];
    dt_test_tmpdir(dir, sizeof dir);
    int terminal;
    pid_t pid = forkpty(&terminal, NULL, NULL, NULL);
    assert_true(pid >= 0);
    if (pid == 0) {
        char **argv = TUNE(dir, "--db", "off", "--budget", "60", "--slot-trials", "4",
                           "--max-slots", "3");
        argv[0] = (char *)dt_test_dtune();
        execv(argv[0], argv);
        _exit(127);
    }
    size_t used = 0;
    for (;;) {
        ssize_t n = read(terminal, text + used, sizeof text - 1 - used);
        if (n > 0)
            used += (size_t)n;
        else if (n == 0 || errno != EINTR)
            break;  /* EIO: the child closed the terminal */
    }
    text[used] = '\0';
    close(terminal);
    assert_int_equal(dt_test_wait(pid), 0);
    assert_int_equal(count_substr(text, "why slot "), 3);
    const char *first = strstr(text, "why slot 1: ");
    assert_non_null(first);
    assert_non_null(strstr(first, " over "));
    assert_non_null(strstr(first, "[untried]"));
    assert_null(strstr(text, "nan"));
}

/* Value of the first `data-points="N"` after marker in html, or -1. */
static int chart_points(const char *html, const char *marker)
{
    const char *at = strstr(html, marker);
    at = at ? strstr(at, "data-points=\"") : NULL;
    return at ? atoi(at + strlen("data-points=\"")) : -1;
}

/* The data-points of every per-task chart in html, as "n,n,...". */
static void task_chart_points(const char *html, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const char *at = strstr(html, "class=\"task-chart\""); at;
         at = strstr(at + 1, "class=\"task-chart\""))
        used += (size_t)snprintf(buf + used, len - used, "%d,",
                                 atoi(strstr(at, "data-points=\"") + strlen("data-points=\"")));
}

/* Each per-task chart of html as one letter: B with the belief's band and
 * fitted median, N saying it has no fitted curve (and drawing none), ? for
 * anything else, - with no valid measurement. */
static void task_fit_bands(const char *html, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const char *at = strstr(html, "<div class=\"mini\">"); at && used + 1 < len;
         at = strstr(at + 1, "<div class=\"mini\">")) {
        const char *end = strstr(at, "</div>");
        size_t n = end ? (size_t)(end - at) : strlen(at);
        char *div = strndup(at, n);
        assert_non_null(div);
        bool band = strstr(div, "class=\"fit-band\"") && strstr(div, "class=\"fit-median\"");
        bool none = strstr(div, "no fitted curve") && !strstr(div, "fit-band") &&
                    !strstr(div, "fit-median");
        buf[used++] = !strstr(div, "<svg") ? '-' : band ? 'B' : none ? 'N' : '?';
        buf[used] = '\0';
        free(div);
    }
}

/* Every run leaves report.html; `dtune report --html` rebuilds the same
 * charts from the run's files. */
static void test_report_html_stays(void **state)
{
    (void)state;
    char dir[64], path[128], other[128];
    dt_test_tmpdir(dir, sizeof dir);
    int rc = dt_test_run(TUNE(dir, "--budget", "60", "--slot-trials", "4", "--max-slots", "5"), out,
                         sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    snprintf(path, sizeof path, "%s/report.html", dir);
    char *html = dt_test_slurp(path);
    assert_non_null(html);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    int slots = dt_test_count_lines(path, "\"type\":\"slot\"");
    assert_true(slots >= 2);
    assert_int_equal(chart_points(html, "id=\"latency-chart\""), slots);
    assert_int_equal(chart_points(html, "id=\"timeline-chart\""), slots);
    assert_non_null(strstr(html, "<table id=\"ranking\">"));
    assert_null(strstr(html, "src="));
    assert_null(strstr(html, "http-equiv"));
    snprintf(other, sizeof other, "%s/again.html", dir);
    rc = dt_test_run((char *[]){ "dtune", "report", dir, "--html", "-o", other, NULL }, out,
                     sizeof out);
    if (rc != 0)
        fail_msg("dtune report --html: exit %d: %s", rc, out);
    char *again = dt_test_slurp(other);
    assert_non_null(again);
    assert_int_equal(chart_points(again, "id=\"latency-chart\""), slots);
    assert_int_equal(chart_points(again, "id=\"timeline-chart\""), slots);
    assert_non_null(strstr(again, "<table id=\"ranking\">"));
    /* one best-so-far chart per task, the same steps live and from the log */
    char live_steps[256], log_steps[256];
    task_chart_points(html, live_steps, sizeof live_steps);
    task_chart_points(again, log_steps, sizeof log_steps);
    assert_int_equal(dt_test_count_lines(path, "\"type\":\"slot\""), slots);
    assert_true(strlen(live_steps) >= 6); /* three tasks */
    assert_string_equal(live_steps, log_steps);
    /* the belief's band where it fitted a task, none where it did not, the
     * same from the log as live */
    char live_bands[16], log_bands[16];
    task_fit_bands(html, live_bands, sizeof live_bands);
    task_fit_bands(again, log_bands, sizeof log_bands);
    assert_non_null(strchr(live_bands, 'B'));
    assert_non_null(strchr(live_bands, 'N'));
    assert_null(strchr(live_bands, '?'));
    assert_string_equal(live_bands, log_bands);
    /* the belief's prediction at each decision, as many marks from the log
     * as live */
    int marks = count_substr(html, "class=\"pred-mark\"");
    assert_true(marks > 0);
    assert_int_equal(count_substr(again, "class=\"pred-mark\""), marks);
    free(again);
    free(html);
    rc = dt_test_run((char *[]){ "dtune", "report", dir, "-o", other, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    /* More RUN_DIRs: the page ends with the runs compared (the run twice:
     * one policy twice, so the table by policy too), its chart inline. */
    rc = dt_test_run((char *[]){ "dtune", "report", dir, "--html", "-o", other, dir, NULL }, out,
                     sizeof out);
    if (rc != 0)
        fail_msg("dtune report --html RUN RUN: exit %d: %s", rc, out);
    again = dt_test_slurp(other);
    assert_non_null(again);
    const char *compared = strstr(again, "<h2>Runs compared</h2>");
    assert_non_null(compared);
    assert_non_null(strstr(compared, "by policy"));
    assert_non_null(strstr(compared, "<svg"));
    assert_non_null(strstr(again, "id=\"latency-chart\""));
    free(again);
    rc = dt_test_run((char *[]){ "dtune", "report", dir, dir, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    rc = dt_test_run((char *[]){ "dtune", "report", dir, "--html", "-o", other,
                                 "/nonexistent_dtune_run", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "/nonexistent_dtune_run"));
}

/* Prediction marks in dir's report.html, and in `dtune report --html`'s page
 * of dir (into *from_log). */
static int prediction_marks(const char *dir, int *from_log)
{
    char path[128], other[128];
    snprintf(path, sizeof path, "%s/report.html", dir);
    snprintf(other, sizeof other, "%s/again.html", dir);
    int rc = dt_test_run((char *[]){ "dtune", "report", (char *)dir, "--html", "-o", other, NULL },
                         out, sizeof out);
    if (rc != 0)
        fail_msg("dtune report --html: exit %d: %s", rc, out);
    char *live = dt_test_slurp(path), *again = dt_test_slurp(other);
    assert_non_null(live);
    assert_non_null(again);
    int marks = count_substr(live, "class=\"pred-mark\"");
    *from_log = count_substr(again, "class=\"pred-mark\"");
    free(live);
    free(again);
    return marks;
}

/* A resumed run's report keeps the predictions its first part made: its
 * report.html draws as many marks as the whole log holds. */
static void test_resumed_report_keeps_predictions(void **state)
{
    (void)state;
    char dir[64];
    dt_test_tmpdir(dir, sizeof dir);
    int rc = dt_test_run(TUNE(dir, "--budget", "60", "--slot-trials", "4", "--max-slots", "3"), out,
                         sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    int first_log, first = prediction_marks(dir, &first_log);
    assert_true(first > 0);
    assert_int_equal(first_log, first);
    rc = dt_test_run(TUNE(dir, "--budget", "60", "--slot-trials", "4", "--max-slots", "6"), out,
                     sizeof out);
    if (rc != 0)
        fail_msg("resume exit %d: %s", rc, out);
    assert_non_null(strstr(out, "resuming"));
    int whole_log, whole = prediction_marks(dir, &whole_log);
    assert_true(whole > first);
    assert_int_equal(whole, whole_log);
}

/* Headless Chromium's DOM of url, or NULL when it could not load it. */
static char *browser_dom(const char *url, const char *dir)
{
    char cmd[1024], path[128];
    snprintf(path, sizeof path, "%s/dom.html", dir);
    snprintf(cmd, sizeof cmd,
             "timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run "
             "--user-data-dir=%s/chromium --dump-dom '%s' > %s 2>/dev/null", dir, url, path);
    if (system(cmd) != 0)
        return NULL;
    return dt_test_slurp(path);
}

/* The text of the element that opens with `open` in html, or "" (into buf). */
static const char *element_text(const char *html, const char *open, char *buf, size_t len)
{
    const char *at = strstr(html, open);
    buf[0] = '\0';
    if (at) {
        at += strlen(open);
        snprintf(buf, len, "%.*s", (int)strcspn(at, "<"), at);
    }
    return buf;
}

/* Asserts every chart in html has points, and that there are two. */
static void assert_charts_have_data(const char *html)
{
    int charts = 0;
    for (const char *at = strstr(html, "<svg"); at; at = strstr(at + 1, "<svg")) {
        const char *points = strstr(at, "data-points=\"");
        assert_non_null(points);
        assert_true(atoi(points + strlen("data-points=\"")) > 0);
        charts++;
    }
    assert_true(charts >= 2); /* latency, timeline, then one per task */
}

/* Whether the page's latency text is the latency of st as the page prints it. */
static bool same_latency(const char *shown, const json_t *st)
{
    char want[32];
    snprintf(want, sizeof want, "%.4f", num(st, "model_latency_ms"));
    return strcmp(shown, want) == 0;
}

/* A real browser shows what /status says at that moment, during a run and in
 * report.html after it, with data in every chart. */
static void test_browser_shows_the_status(void **state)
{
    (void)state;
    if (system("command -v chromium >/dev/null 2>&1") != 0)
        skip(); /* scripts/setup.sh installs it (Debian package chromium) */
    char dir[64], addr[64], url[128];
    pid_t pid = spawn_with_server(dir, sizeof dir, addr, sizeof addr,
                                  (char *[]){ "--budget", "120", "--slot-seconds", "6",
                                              "--finish-after", "1000000", NULL });
    snprintf(url, sizeof url, "http://%s/", addr);
    bool seen = false;
    /* new bests come often early in the run and each look costs a browser
     * start (seconds on 2 cores): enough looks for a quiet one */
    for (int tries = 0; tries < 16 && !seen; tries++) {
        json_t *before = status_in_slot(addr);
        assert_non_null(before);
        char *dom = browser_dom(url, dir);
        assert_non_null(dom);
        json_t *after = get_json(addr, "/status");
        char slot[32], task[64], latency[32];
        element_text(dom, "<b id=\"slot\">", slot, sizeof slot);
        element_text(dom, "<b id=\"task\">", task, sizeof task);
        element_text(dom, "<b id=\"latency\">", latency, sizeof latency);
        /* the page was built between the two readings: when they agree, it
         * must agree with them; a slot end or a new best in between takes
         * another look */
        char want_before[32], want_after[32];
        snprintf(want_before, sizeof want_before, "%.4f", num(before, "model_latency_ms"));
        snprintf(want_after, sizeof want_after, "%.4f", num(after, "model_latency_ms"));
        if (num(before, "slot") == num(after, "slot") && strcmp(want_before, want_after) == 0) {
            assert_int_equal(atoi(slot), num(before, "slot"));
            assert_string_equal(task, json_string_value(json_object_get(before, "current_task")));
            assert_true(same_latency(latency, before));
            assert_charts_have_data(dom);
            seen = true;
        }
        free(dom);
        json_decref(before);
        json_decref(after);
    }
    assert_true(seen);
    kill(pid, SIGTERM);
    assert_int_equal(dt_test_wait(pid), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/best.json", dir);
    json_error_t jerr;
    json_t *best = json_load_file(path, 0, &jerr);
    assert_non_null(best);
    snprintf(url, sizeof url, "file://%s/report.html", dir);
    char *dom = browser_dom(url, dir), latency[32];
    assert_non_null(dom);
    assert_true(same_latency(element_text(dom, "<b id=\"latency\">", latency, sizeof latency), best));
    assert_charts_have_data(dom);
    free(dom);
    json_decref(best);
}

/* Prometheus's own checker finds nothing to flag in a live /metrics. */
static void test_metrics_pass_promtool(void **state)
{
    (void)state;
    if (system("command -v promtool >/dev/null 2>&1") != 0)
        skip(); /* scripts/setup.sh installs it (Debian package prometheus) */
    char dir[64], addr[64], path[128], cmd[512];
    pid_t pid = spawn_with_server(dir, sizeof dir, addr, sizeof addr,
                                  (char *[]){ "--budget", "60", "--slot-seconds", "1", NULL });
    json_t *st = status_in_slot(addr);
    assert_non_null(st);
    json_decref(st);
    dt_http_reply reply;
    dt_error err;
    assert_int_equal(dt_server_request(addr, "GET", "/metrics", 5000, &reply, &err), 0);
    assert_int_equal(reply.status, 200);
    snprintf(path, sizeof path, "%s/metrics.txt", dir);
    assert_int_equal(dt_test_write_file(path, "%s", reply.body), 0);
    dt_server_reply_free(&reply);
    kill(pid, SIGTERM);
    assert_int_equal(dt_test_wait(pid), 0);
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s > %s/promtool.txt 2>&1", path, dir);
    int rc = system(cmd);
    snprintf(path, sizeof path, "%s/promtool.txt", dir);
    char *findings = dt_test_slurp(path);
    assert_non_null(findings);
    if (rc != 0 || findings[0])
        fail_msg("promtool check metrics (exit %d):\n%s", rc, findings);
    free(findings);
}

/* Latency after the first slot at which latency.csv's model latency is <= level. */
static int slot_reaching(const char *csv, double level)
{
    FILE *f = fopen(csv, "r");
    assert_non_null(f);
    char line[8192];
    int found = -1;
    fgets(line, sizeof line, f);  /* header */
    while (found < 0 && fgets(line, sizeof line, f)) {
        double elapsed, lat;
        int slot;
        char task[64];
        if (sscanf(line, "%lf,%d,%63[^,],%lf", &elapsed, &slot, task, &lat) == 4 && lat <= level)
            found = slot;
    }
    fclose(f);
    return found;
}

static double final_latency(const char *csv)
{
    FILE *f = fopen(csv, "r");
    assert_non_null(f);
    char line[8192];
    double lat = -1;
    while (fgets(line, sizeof line, f)) {
        double elapsed, v;
        int slot;
        char task[64];
        if (sscanf(line, "%lf,%d,%63[^,],%lf", &elapsed, &slot, task, &v) == 4)
            lat = v;
    }
    fclose(f);
    return lat;
}

static void test_dynatune_beats_sequential_on_replay(void **state)
{
    (void)state;
    char dyn[64], seq[64], csv_dyn[128], csv_seq[128];
    dt_test_tmpdir(dyn, sizeof dyn);
    dt_test_tmpdir(seq, sizeof seq);
    const char *policies[2] = { "dynatune", "sequential" };
    char *dirs[2] = { dyn, seq };
    for (int i = 0; i < 2; i++) {
        char *argv[] = { "dtune", "tune", "--model", "models/resnet18.yaml", "--backend", "replay",
                         "--strategy", "random", "--out", dirs[i], "--listen", "off",
                         "--policy", (char *)policies[i], "--budget", "300", "--slot-trials", "16",
                         "--max-slots", "60", "--finish-after", "64", NULL };
        int rc = dt_test_run(argv, out, sizeof out);
        if (rc != 0)
            fail_msg("%s exit %d: %s", policies[i], rc, out);
    }
    snprintf(csv_dyn, sizeof csv_dyn, "%s/latency.csv", dyn);
    snprintf(csv_seq, sizeof csv_seq, "%s/latency.csv", seq);
    double level = final_latency(csv_seq);
    int s_dyn = slot_reaching(csv_dyn, level), s_seq = slot_reaching(csv_seq, level);
    print_message("sequential's final latency %.3f ms: dynatune at slot %d, sequential at slot %d\n",
                  level, s_dyn, s_seq);
    assert_true(s_dyn > 0);
    assert_true(s_dyn < s_seq);
}

/* The one-process run measures the configs it always measured, in the same
 * order: tests/data/tiny_replay_configs.txt ("task config" per measure
 * record) holds the one-slot run's sequence for this command; a change of
 * the daemon that moves a tuner's, the scheduler's or the log's sequence
 * for a fixed seed shows here (a change of a space or a tuner that moves it
 * on purpose rewrites the file). */
static void test_one_process_measures_the_same_configs(void **state)
{
    (void)state;
    char dir[64], path[128], line[8192];
    dt_test_tmpdir(dir, sizeof dir);
    char *argv[] = { "dtune", "tune", "--model", "models/tiny.yaml", "--backend", "replay",
                     "--out", dir, "--listen", "off", "--db", "off", "--budget", "600",
                     "--slot-trials", "16", "--max-slots", "6", NULL };
    int rc = dt_test_run(argv, out, sizeof out);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, out);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    FILE *f = fopen(path, "r");
    FILE *golden = fopen("tests/data/tiny_replay_configs.txt", "r");
    assert_non_null(f);
    assert_non_null(golden);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        json_error_t jerr;
        json_t *rec = json_loads(line, 0, &jerr);
        assert_non_null(rec);
        if (strcmp(json_string_value(json_object_get(rec, "type")), "measure") == 0) {
            char want[256], got[256];
            snprintf(got, sizeof got, "%s %lld\n", json_string_value(json_object_get(rec, "task")),
                     (long long)json_integer_value(json_object_get(rec, "config")));
            if (!fgets(want, sizeof want, golden) || strcmp(want, got) != 0)
                fail_msg("measure record %d is '%.*s', the one-process run measured '%s'", n + 1,
                         (int)strlen(got) - 1, got, want);
            n++;
        }
        json_decref(rec);
    }
    char extra[256];
    if (fgets(extra, sizeof extra, golden))
        fail_msg("the run measured %d configs, fewer than before (next: %s)", n, extra);
    assert_true(n > 6 * 16);
    fclose(f);
    fclose(golden);
    dt_test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_process_measures_the_same_configs),
        cmocka_unit_test(test_tiny_on_cpu_end_to_end),
        cmocka_unit_test(test_runner_leaves_with_killed_daemon),
        cmocka_unit_test(test_target_latency_stops),
        cmocka_unit_test(test_budget_stops_and_reports),
        cmocka_unit_test(test_end_retimes_the_best_configs),
        cmocka_unit_test(test_confirmed_figures_and_resume),
        cmocka_unit_test(test_cuda_confirms_on_replay),
        cmocka_unit_test(test_sigterm_is_graceful),
        cmocka_unit_test(test_kill9_and_resume),
        cmocka_unit_test(test_resumed_report_keeps_predictions),
        cmocka_unit_test(test_warm_start),
        cmocka_unit_test(test_warm_start_from_other_model),
        cmocka_unit_test(test_resume_refuses_another_space),
        cmocka_unit_test(test_resume_refuses_another_run),
        cmocka_unit_test(test_warm_start_refuses_another_backend),
        cmocka_unit_test(test_resume_matches_tasks_by_name),
        cmocka_unit_test(test_status_server_while_tuning),
        cmocka_unit_test(test_status_ticks_within_a_slot),
        cmocka_unit_test(test_metrics_pass_promtool),
        cmocka_unit_test(test_report_html_stays),
        cmocka_unit_test(test_terminal_says_why),
        cmocka_unit_test(test_threads_stay_off_the_timing_core),
        cmocka_unit_test(test_browser_shows_the_status),
        cmocka_unit_test(test_dynatune_beats_sequential_on_replay),
    };
    return cmocka_run_group_tests_name("tune", tests, NULL, NULL);
}
