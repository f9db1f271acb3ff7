/* test_tunelog.c — the durable tuning log and `dtune best`.
 *
 * Round trips of every record type with values that are not round (exact bit
 * equality for doubles, NaN and infinities included), the damaged-file cases
 * (truncated or garbled tail, garbled middle line, bad fields), and a crash
 * test: a child appends records and acks
 * each one through a pipe; the parent SIGKILLs it mid-stream and checks that
 * every acknowledged record comes back intact and in order. Each test works
 * in its own mkdtemp directory under /tmp. Resuming a run from its log (the
 * program's one resume path, in daemon_setup.c) is tested on the real binary
 * in test_tune.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dtune/cli.h"
#include "dtune/tunelog.h"
#include "support/run_cmd.h"

#define MAX_SEEN 16
#define CRASH_RECORDS 20000
#define CRASH_KILL_AFTER 200

typedef struct fixture {
    char dir[64];
    char log[128];
} fixture;

/* ---- fixture and file helpers ----------------------------------------- */

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx)
        return -1;
    snprintf(fx->dir, sizeof fx->dir, "/tmp/dtune-tunelog-XXXXXX");
    if (!mkdtemp(fx->dir)) {
        free(fx);
        return -1;
    }
    snprintf(fx->log, sizeof fx->log, "%s/tuning.jsonl", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    int rc = dt_test_remove_tree(fx->dir);
    free(fx);
    return rc;
}

static void write_text(const char *path, const char *mode, const char *text)
{
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* Reads a whole (small) file into buf. */
static size_t read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n;
    assert_non_null(f);
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

static long file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

/* ---- sample records ----------------------------------------------------- */

static void sample_measure(dt_measure_record *r, const char *task, int task_index, int trial,
                           dt_result_class result, double gflops)
{
    memset(r, 0, sizeof *r);
    snprintf(r->task, sizeof r->task, "%s", task);
    r->task_index = task_index;
    r->config = 12345;
    snprintf(r->knobs, sizeof r->knobs, "tile_y=[1, 8, 7] tile_x=[2, 28]");
    r->m.result = result;
    r->m.gflops = gflops;
    r->m.latency_s = result == DT_RESULT_OK ? 3.0517578125e-5 * 1.0731 : 0.0;
    r->m.repeats = 7;
    r->m.cv = 0.031415926535897934;
    r->m.compile_ms = 412.73910000000001;
    r->m.run_ms = 87.123456789012345;
    r->slot = trial / 3 - 1;
    r->trial = trial;
    r->time = 1.0 / 3.0 + trial * 2.718281828459045;
    r->cost_model_gflops = 187.31415926535897 + trial;
}

static void sample_slot(dt_slot_record *r, int slot, const char *task, int task_index)
{
    memset(r, 0, sizeof *r);
    r->slot = slot;
    snprintf(r->task, sizeof r->task, "%s", task);
    r->task_index = task_index;
    r->time = 60.0 * slot + 0.1 + 1e-9;
    r->model_latency_ms = 17.296381230798213 / (slot + 1);
    r->decision_ms = 0.86602540378443865;
    r->nscores = 3;
    r->scores[0] = 0.125e-3 * (slot + 1.7);
    r->scores[1] = -2.5e-7;
    r->scores[2] = 1.4142135623730951;
}

/* ---- a visitor that keeps what it sees ---------------------------------- */

typedef struct seen {
    char order[3 * MAX_SEEN + 1];
    int nrun, nmeasure, nslot;
    dt_run_record runs[MAX_SEEN];
    dt_measure_record measures[MAX_SEEN];
    dt_slot_record slots[MAX_SEEN];
    int stop_at_measure;   /* 1-based; 0: never stop */
} seen;

static void note(seen *s, char kind)
{
    size_t len = strlen(s->order);
    if (len + 1 < sizeof s->order) {
        s->order[len] = kind;
        s->order[len + 1] = '\0';
    }
}

static int see_run(void *ctx, const dt_run_record *r)
{
    seen *s = ctx;
    note(s, 'r');
    if (s->nrun < MAX_SEEN)
        s->runs[s->nrun++] = *r;
    return 0;
}

static int see_measure(void *ctx, const dt_measure_record *r)
{
    seen *s = ctx;
    note(s, 'm');
    if (s->nmeasure < MAX_SEEN)
        s->measures[s->nmeasure++] = *r;
    return s->nmeasure == s->stop_at_measure ? DT_EFAIL : 0;
}

static int see_slot(void *ctx, const dt_slot_record *r)
{
    seen *s = ctx;
    note(s, 's');
    if (s->nslot < MAX_SEEN)
        s->slots[s->nslot++] = *r;
    return 0;
}

static int replay_into(const char *path, seen *s, dt_tunelog_stats *stats, dt_error *err)
{
    dt_tunelog_visitor v = { .run = see_run, .measure = see_measure, .slot = see_slot, .ctx = s };
    return dt_tunelog_replay(path, &v, stats, err);
}

/* ---- comparisons -------------------------------------------------------- */

/* Bit equality, so that -0.0 and the sign of infinities count; any NaN matches. */
static void assert_same_double(double a, double b)
{
    if (isnan(a)) {
        assert_true(isnan(b));
        return;
    }
    assert_memory_equal(&a, &b, sizeof a);
}

static void assert_same_measure(const dt_measure_record *a, const dt_measure_record *b)
{
    assert_string_equal(a->task, b->task);
    assert_int_equal(a->task_index, b->task_index);
    assert_true(a->config == b->config);
    assert_string_equal(a->knobs, b->knobs);
    assert_int_equal(a->m.result, b->m.result);
    assert_same_double(a->m.gflops, b->m.gflops);
    /* logged in ms: one rounding of relative size 2^-52 at most */
    assert_true(fabs(a->m.latency_s - b->m.latency_s) <= 2.3e-16 * fabs(a->m.latency_s));
    assert_int_equal(a->m.repeats, b->m.repeats);
    assert_same_double(a->m.cv, b->m.cv);
    assert_same_double(a->m.compile_ms, b->m.compile_ms);
    assert_same_double(a->m.run_ms, b->m.run_ms);
    assert_string_equal(a->m.detail, b->m.detail);
    assert_int_equal(a->slot, b->slot);
    assert_int_equal(a->trial, b->trial);
    assert_same_double(a->time, b->time);
    assert_same_double(a->cost_model_gflops, b->cost_model_gflops);
}

static void assert_same_slot(const dt_slot_record *a, const dt_slot_record *b)
{
    assert_int_equal(a->slot, b->slot);
    assert_string_equal(a->task, b->task);
    assert_int_equal(a->task_index, b->task_index);
    assert_same_double(a->time, b->time);
    assert_same_double(a->model_latency_ms, b->model_latency_ms);
    assert_same_double(a->decision_ms, b->decision_ms);
    assert_int_equal(a->nscores, b->nscores);
    for (int i = 0; i < a->nscores; i++)
        assert_same_double(a->scores[i], b->scores[i]);
}

static void assert_same_run(const dt_run_record *a, const dt_run_record *b)
{
    assert_string_equal(a->model, b->model);
    assert_string_equal(a->target, b->target);
    assert_true(a->seed == b->seed);
    assert_string_equal(a->started, b->started);
    assert_string_equal(a->id, b->id);
    assert_string_equal(a->machine, b->machine);
    assert_string_equal(a->dtune_version, b->dtune_version);
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle))
        fail_msg("'%s' does not contain '%s'", haystack, needle);
}

static dt_tunelog *open_log(const char *path)
{
    dt_tunelog *log = NULL;
    dt_error err;
    int rc = dt_tunelog_open(path, &log, &err);
    if (rc != 0)
        fail_msg("open: %s", err.msg);
    return log;
}

static void append_measure_ok(dt_tunelog *log, const dt_measure_record *r)
{
    dt_error err;
    if (dt_tunelog_append_measure(log, r, &err) != 0)
        fail_msg("append: %s", err.msg);
}

static void append_slot_ok(dt_tunelog *log, const dt_slot_record *r)
{
    dt_error err;
    if (dt_tunelog_append_slot(log, r, &err) != 0)
        fail_msg("append: %s", err.msg);
}

/* ---- round trips -------------------------------------------------------- */

static void fill_round_trip(dt_run_record run[2], dt_measure_record m[3], dt_slot_record s[2])
{
    memset(run, 0, 2 * sizeof *run);
    snprintf(run[0].model, sizeof run[0].model, "models/tiny net.yaml");
    snprintf(run[0].target, sizeof run[0].target, "cpu");
    run[0].seed = 0x0123456789abcdefULL;
    snprintf(run[0].started, sizeof run[0].started, "2024-05-17T03:14:15+02:00");
    run[1] = run[0];           /* without the optional id, machine and version */
    snprintf(run[0].id, sizeof run[0].id, "00c0ffee12345678");
    snprintf(run[0].machine, sizeof run[0].machine, "AMD EPYC, family 25 model 17 stepping 1, avx2 fma, nproc 2");
    snprintf(run[0].dtune_version, sizeof run[0].dtune_version, "0.17");
    run[1].seed = UINT64_MAX - 6;   /* above INT64_MAX: logged as a string */
    snprintf(run[1].target, sizeof run[1].target, "cuda");

    sample_measure(&m[0], "conv1", 0, 1, DT_RESULT_OK, 123.45678901234567);
    sample_measure(&m[1], "dense2", 1, 4, DT_RESULT_CRASH, 0.0);
    snprintf(m[1].m.detail, sizeof m[1].m.detail,
             "SIGSEGV \"quoted\" back\\slash tab\t nl\n 3.5 \xc2\xb5s");
    m[1].config = (UINT64_C(1) << 53) + 1;
    m[1].knobs[0] = '\0';
    m[1].cost_model_gflops = 0;   /* no estimate: the field is left out */
    sample_measure(&m[2], "bmm3", 2, 9, DT_RESULT_WRONG_OUTPUT, INFINITY);
    m[2].config = UINT64_MAX;
    m[2].m.cv = NAN;
    m[2].m.compile_ms = -0.0;
    m[2].m.run_ms = 4.9406564584124654e-324;   /* smallest subnormal */
    m[2].slot = -1;

    sample_slot(&s[0], 0, "conv1", 0);
    s[0].nscores = 5;
    s[0].scores[3] = -INFINITY;
    s[0].scores[4] = 1.7976931348623157e308;
    sample_slot(&s[1], 1, "dense2", 1);
    s[1].nscores = 0;
}

static void test_round_trip_every_type(void **state)
{
    fixture *fx = *state;
    dt_run_record run[2];
    dt_measure_record m[3];
    dt_slot_record s[2];
    dt_tunelog_stats stats;
    dt_error err;
    seen *got = calloc(1, sizeof *got);
    dt_tunelog *log = open_log(fx->log);
    assert_non_null(got);
    fill_round_trip(run, m, s);
    assert_int_equal(dt_tunelog_append_run(log, &run[0], &err), 0);
    append_measure_ok(log, &m[0]);
    append_slot_ok(log, &s[0]);
    append_measure_ok(log, &m[1]);
    append_measure_ok(log, &m[2]);
    append_slot_ok(log, &s[1]);
    assert_int_equal(dt_tunelog_append_run(log, &run[1], &err), 0);
    dt_tunelog_close(log);

    assert_int_equal(replay_into(fx->log, got, &stats, &err), 0);
    assert_int_equal(stats.lines, 7);
    assert_false(stats.dropped_tail);
    assert_string_equal(got->order, "rmsmmsr");
    for (int i = 0; i < 2; i++)
        assert_same_run(&run[i], &got->runs[i]);
    for (int i = 0; i < 3; i++)
        assert_same_measure(&m[i], &got->measures[i]);
    for (int i = 0; i < 2; i++)
        assert_same_slot(&s[i], &got->slots[i]);
    free(got);
}

/* A measure record written before the cost model's estimate was logged
 * reads back with none (0). */
static void test_measure_without_estimate_reads(void **state)
{
    fixture *fx = *state;
    dt_error err;
    seen *got = calloc(1, sizeof *got);
    assert_non_null(got);
    write_text(fx->log, "w",
               "{\"type\":\"measure\",\"task\":\"conv\",\"task_index\":0,\"config\":1779,"
               "\"result\":\"ok\",\"gflops\":41.372,\"latency_ms\":0.1107,\"repeats\":5,"
               "\"cv\":0.0213,\"compile_ms\":301.7,\"run_ms\":12.9,\"slot\":-1,\"trial\":1,"
               "\"time\":2.053}\n");
    assert_int_equal(replay_into(fx->log, got, NULL, &err), 0);
    assert_int_equal(got->nmeasure, 1);
    assert_true(got->measures[0].cost_model_gflops == 0);
    assert_true(got->measures[0].m.gflops == 41.372);
    free(got);
}

static void test_large_integers_are_written_exactly(void **state)
{
    fixture *fx = *state;
    char text[4096];
    dt_run_record run[2];
    dt_measure_record m[3];
    dt_slot_record s[2];
    dt_tunelog *log = open_log(fx->log);
    fill_round_trip(run, m, s);
    append_measure_ok(log, &m[1]);
    assert_int_equal(dt_tunelog_append_run(log, &run[1], NULL), 0);
    dt_tunelog_close(log);
    read_text(fx->log, text, sizeof text);
    assert_contains(text, "\"config\":9007199254740993");      /* 2^53 + 1, an integer */
    assert_contains(text, "\"seed\":\"18446744073709551609\""); /* 2^64 - 7, a string */
    assert_contains(text, "\"type\":\"measure\"");
    assert_null(strstr(text, "cost_model_gflops"));   /* m[1] has no estimate */
}

static void test_invalid_utf8_is_replaced(void **state)
{
    fixture *fx = *state;
    dt_measure_record m;
    dt_error err;
    seen *got = calloc(1, sizeof *got);
    dt_tunelog *log = open_log(fx->log);
    assert_non_null(got);
    sample_measure(&m, "conv1", 0, 2, DT_RESULT_COMPILE_ERROR, 0.0);
    snprintf(m.m.detail, sizeof m.m.detail, "error: \xff\xfe bad byte");
    append_measure_ok(log, &m);
    dt_tunelog_close(log);
    assert_int_equal(replay_into(fx->log, got, NULL, &err), 0);
    assert_int_equal(got->nmeasure, 1);
    assert_string_equal(got->measures[0].m.detail, "error: ?? bad byte");
    free(got);
}

static void test_append_rejects_bad_records(void **state)
{
    fixture *fx = *state;
    dt_measure_record m;
    dt_slot_record s;
    dt_error err;
    dt_tunelog *log = open_log(fx->log);
    sample_measure(&m, "conv1", 0, 1, DT_RESULT_OK, 1.5);
    m.m.result = (dt_result_class)42;
    assert_int_equal(dt_tunelog_append_measure(log, &m, &err), DT_EINVAL);
    assert_contains(err.msg, "result");
    sample_slot(&s, 0, "conv1", 0);
    s.nscores = DT_MAX_SCORES + 1;
    assert_int_equal(dt_tunelog_append_slot(log, &s, &err), DT_EINVAL);
    assert_contains(err.msg, "nscores");
    assert_int_equal(dt_tunelog_append_slot(log, &s, NULL), DT_EINVAL);
    const double bad_estimates[] = { -3.5, NAN, INFINITY };
    for (int i = 0; i < 3; i++) {
        sample_measure(&m, "conv1", 0, 1, DT_RESULT_OK, 1.5);
        m.cost_model_gflops = bad_estimates[i];
        assert_int_equal(dt_tunelog_append_measure(log, &m, &err), DT_EINVAL);
        assert_contains(err.msg, "cost_model_gflops");
    }
    dt_tunelog_close(log);
    assert_int_equal(file_size(fx->log), 0);
}

/* ---- damaged files ------------------------------------------------------ */

static void append_samples(const char *path, int n)
{
    dt_tunelog *log = open_log(path);
    for (int i = 1; i <= n; i++) {
        dt_measure_record m;
        sample_measure(&m, "conv1", 0, i, DT_RESULT_OK, 1.1 * i);
        append_measure_ok(log, &m);
    }
    dt_tunelog_close(log);
}

static void test_truncated_tail_is_dropped_and_cut(void **state)
{
    fixture *fx = *state;
    dt_tunelog_stats stats;
    dt_error err;
    dt_measure_record m;
    seen *got = calloc(1, sizeof *got);
    long clean_size;
    assert_non_null(got);
    append_samples(fx->log, 5);
    clean_size = file_size(fx->log);
    write_text(fx->log, "a", "{\"type\":\"measure\",\"task\":\"conv1\",\"task_ind");

    assert_int_equal(replay_into(fx->log, got, &stats, &err), 0);
    assert_int_equal(stats.lines, 5);
    assert_int_equal(got->nmeasure, 5);
    assert_true(stats.dropped_tail);
    assert_contains(stats.tail_message, "line 6");

    /* opening cuts the partial line off; the next record starts a clean line */
    dt_tunelog *log = open_log(fx->log);
    assert_int_equal(file_size(fx->log), clean_size);
    sample_measure(&m, "conv1", 0, 6, DT_RESULT_OK, 6.66);
    append_measure_ok(log, &m);
    dt_tunelog_close(log);
    memset(got, 0, sizeof *got);
    assert_int_equal(replay_into(fx->log, got, &stats, &err), 0);
    assert_int_equal(stats.lines, 6);
    assert_false(stats.dropped_tail);
    assert_same_measure(&m, &got->measures[5]);
    free(got);
}

/* A last record whole but for its newline (the write stopped just before
 * it, or a hand edit) is a record: replay reads it, and opening the log
 * completes it with its newline, so the next record starts a clean line and
 * nothing measured is lost. */
static void test_record_without_newline_is_kept(void **state)
{
    fixture *fx = *state;
    char text[8192];
    dt_tunelog_stats stats;
    dt_error err;
    size_t n;
    append_samples(fx->log, 2);
    n = read_text(fx->log, text, sizeof text);
    assert_true(n > 0 && text[n - 1] == '\n');
    text[n - 1] = '\0';   /* a complete object whose newline never made it */
    write_text(fx->log, "w", text);
    seen *got = calloc(1, sizeof *got);
    assert_non_null(got);
    assert_int_equal(replay_into(fx->log, got, &stats, &err), 0);
    assert_int_equal(stats.lines, 2);
    assert_int_equal(got->nmeasure, 2);
    assert_false(stats.dropped_tail);

    dt_tunelog *log = open_log(fx->log);
    assert_int_equal(file_size(fx->log), (long)n);    /* the newline is back */
    dt_measure_record m;
    sample_measure(&m, "conv1", 0, 3, DT_RESULT_OK, 3.33);
    append_measure_ok(log, &m);
    dt_tunelog_close(log);
    memset(got, 0, sizeof *got);
    assert_int_equal(replay_into(fx->log, got, &stats, &err), 0);
    assert_int_equal(stats.lines, 3);
    assert_int_equal(got->nmeasure, 3);
    assert_same_measure(&m, &got->measures[2]);
    free(got);
}

/* Values no run writes are refused on reading, naming the line and the
 * field: an ok result without a positive latency, a negative latency, a
 * time past DT_TUNELOG_TIME_MAX. */
static void test_impossible_values_refused(void **state)
{
    fixture *fx = *state;
    char text[8192];
    dt_error err;
    append_samples(fx->log, 1);
    size_t n = read_text(fx->log, text, sizeof text);
    assert_true(n > 0);
    const struct { const char *from, *to, *field; } edits[] = {
        { "\"latency_ms\":", "\"latency_ms\":-", "latency_ms" },
        { "\"time\":", "\"time\":1e308,\"x\":", "time" },
    };
    for (int i = 0; i < 2; i++) {
        char *at = strstr(text, edits[i].from);
        assert_non_null(at);
        char edited[8400];
        snprintf(edited, sizeof edited, "%.*s%s%s", (int)(at - text), text, edits[i].to,
                 at + strlen(edits[i].from));
        write_text(fx->log, "w", edited);
        assert_int_equal(dt_tunelog_replay(fx->log, NULL, NULL, &err), DT_EINVAL);
        assert_contains(err.msg, ":1:");
        assert_contains(err.msg, edits[i].field);
    }
}

/* A garbled last line that has its newline was written whole: damage or a
 * hand edit, not a torn write. Replay refuses it naming the line, and
 * opening the log leaves it (and everything else) in place. */
static void test_garbled_last_line_is_refused_and_kept(void **state)
{
    fixture *fx = *state;
    dt_tunelog_stats stats;
    dt_error err;
    append_samples(fx->log, 3);
    write_text(fx->log, "a", "{\"type\":\"measure\", \x01\x02 oops}\n");
    long size = file_size(fx->log);
    assert_int_equal(dt_tunelog_replay(fx->log, NULL, &stats, &err), DT_EPARSE);
    assert_contains(err.msg, ":4: not JSON");
    dt_tunelog_close(open_log(fx->log));
    assert_int_equal(file_size(fx->log), size);
}

/* One size limit for writing and reading: a line over it is refused with
 * its line number, and a record that would render over it is not written. */
static void test_record_size_limit(void **state)
{
    fixture *fx = *state;
    dt_error err;
    append_samples(fx->log, 2);
    size_t big = DT_TUNELOG_RECORD_MAX + 10;
    char *line = malloc(big + 1);
    assert_non_null(line);
    memset(line, ' ', big);
    memcpy(line, "{\"type\":\"run\"}", 14);
    line[big - 1] = '\n';
    line[big] = '\0';
    write_text(fx->log, "a", line);
    free(line);
    assert_int_equal(dt_tunelog_replay(fx->log, NULL, NULL, &err), DT_EPARSE);
    assert_contains(err.msg, ":3: a record of");
    assert_contains(err.msg, "over the limit");
}

/* Five good records with `garbage` as a whole line after the third. */
static void write_garbled_middle(const char *path, const char *garbage)
{
    char text[8192], out[8192];
    char *after_third = NULL;
    append_samples(path, 5);
    read_text(path, text, sizeof text);
    after_third = text;
    for (int i = 0; i < 3; i++) {
        after_third = strchr(after_third, '\n');
        assert_non_null(after_third);
        after_third++;
    }
    snprintf(out, sizeof out, "%.*s%s%s", (int)(after_third - text), text, garbage,
             after_third);
    write_text(path, "w", out);
}

static void test_garbled_middle_line_is_an_error(void **state)
{
    fixture *fx = *state;
    dt_tunelog_stats stats;
    dt_error err;
    char where[160];
    write_garbled_middle(fx->log, "{\"type\":\"slot\",\"slot\":2,,}\n");
    assert_int_equal(dt_tunelog_replay(fx->log, NULL, &stats, &err), DT_EPARSE);
    snprintf(where, sizeof where, "%s:4:", fx->log);
    assert_contains(err.msg, where);
    assert_int_equal(stats.lines, 3);
    /* an unfinished line cannot be in the middle either */
    write_text(fx->log, "w", "");
    write_garbled_middle(fx->log, "\n");
    assert_int_equal(dt_tunelog_replay(fx->log, NULL, &stats, &err), DT_EPARSE);
    assert_contains(err.msg, where);
}

/* A log whose line 2 is a measure record with `from` replaced by `to`. */
static void write_mutated(const char *path, const char *from, const char *to)
{
    char text[8192], out[8192];
    dt_run_record run;
    dt_measure_record m;
    char *at;
    dt_tunelog *log = open_log(path);
    memset(&run, 0, sizeof run);
    assert_int_equal(dt_tunelog_append_run(log, &run, NULL), 0);
    sample_measure(&m, "conv1", 0, 1, DT_RESULT_OK, 2.5);
    append_measure_ok(log, &m);
    dt_tunelog_close(log);
    read_text(path, text, sizeof text);
    at = strstr(text, from);
    if (!at)
        fail_msg("'%s' is not in the log", from);
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    write_text(path, "w", out);
    append_samples(path, 1);
}

static void test_bad_fields_name_line_and_field(void **state)
{
    static const struct { const char *from, *to, *names; } cases[] = {
        { "\"gflops\":", "\"gflopz\":", "'gflops' is missing" },
        { "\"repeats\":7", "\"repeats\":\"7\"", "'repeats'" },
        { "\"task_index\":0", "\"task_index\":1e3", "'task_index'" },
        { "\"task_index\":0", "\"task_index\":4294967296", "'task_index'" },
        { "\"config\":12345", "\"config\":-5", "'config'" },
        { "\"config\":12345", "\"config\":\"12x\"", "'config'" },
        { "\"result\":\"ok\"", "\"result\":\"fast\"", "'result'" },
        { "\"cv\":", "\"cv\":null,\"x\":", "'cv'" },
        { "\"task\":\"conv1\"", "\"task\":\"" "0123456789012345678901234567890123456789"
                                "0123456789012345678901234567\"", "'task'" },
        { "\"type\":\"measure\",", "", "'type' is missing" },
        { "\"cost_model_gflops\":", "\"cost_model_gflops\":-2.5,\"x\":", "'cost_model_gflops'" },
        { "\"cost_model_gflops\":", "\"cost_model_gflops\":\"inf\",\"x\":", "'cost_model_gflops'" },
        { "\"cost_model_gflops\":", "\"cost_model_gflops\":null,\"x\":", "'cost_model_gflops'" },
        { "\"type\":\"measure\"", "\"type\":\"measurement\"", "'measurement'" },
    };
    fixture *fx = *state;
    dt_error err;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_text(fx->log, "w", "");
        write_mutated(fx->log, cases[i].from, cases[i].to);
        assert_int_equal(dt_tunelog_replay(fx->log, NULL, NULL, &err), DT_EINVAL);
        assert_contains(err.msg, ":2:");
        assert_contains(err.msg, cases[i].names);
    }
}

/* ---- retime records (the run's end) -------------------------------------- */

static int see_retime(void *ctx, const dt_retime_record *r)
{
    dt_retime_record *got = ctx;
    *got = *r;
    return 0;
}

/* A retime record reads back field for field; a bad one names its line and
 * field. */
static void test_retime_records(void **state)
{
    fixture *fx = *state;
    dt_error err;
    dt_run_record run;
    dt_retime_record r, got;
    memset(&run, 0, sizeof run);
    memset(&r, 0, sizeof r);
    memset(&got, 0, sizeof got);
    snprintf(r.task, sizeof r.task, "layer4_3x3");
    snprintf(r.knobs, sizeof r.knobs, "tile_co=[8,64] vec=16");
    r.task_index = 11;
    r.config = 123456789012ULL;
    r.m.result = DT_RESULT_OK;
    r.m.gflops = 117.25;
    r.m.latency_s = 1.7125e-3;
    r.m.repeats = 9;
    r.m.cv = 0.0125;
    r.m.run_ms = 310.5;
    r.round = 3;
    r.time = 1801.25;
    dt_tunelog *log = open_log(fx->log);
    assert_int_equal(dt_tunelog_append_run(log, &run, &err), 0);
    assert_int_equal(dt_tunelog_append_retime(log, &r, &err), 0);
    dt_tunelog_close(log);
    dt_tunelog_visitor v = { .retime = see_retime, .ctx = &got };
    assert_int_equal(dt_tunelog_replay(fx->log, &v, NULL, &err), 0);
    assert_string_equal(got.task, r.task);
    assert_string_equal(got.knobs, r.knobs);
    assert_true(got.task_index == 11 && got.config == r.config && got.round == 3);
    assert_true(got.m.result == DT_RESULT_OK && got.m.gflops == 117.25 && got.m.repeats == 9);
    assert_true(fabs(got.m.latency_s - r.m.latency_s) < 1e-15 && got.m.cv == 0.0125);
    assert_true(got.m.run_ms == 310.5 && got.time == 1801.25);

    char text[4096], *at;
    read_text(fx->log, text, sizeof text);
    at = strstr(text, "\"round\":3");
    assert_non_null(at);
    memcpy(at, "\"ruond\"", 7);
    write_text(fx->log, "w", text);
    assert_int_equal(dt_tunelog_replay(fx->log, NULL, NULL, &err), DT_EINVAL);
    assert_contains(err.msg, ":2:");
    assert_contains(err.msg, "'round' is missing");
}

/* ---- confirm, confirmed and drift records ---------------------------------- */

typedef struct seen_confirm {
    int nconfirm, nconfirmed, ndrift;
    dt_confirm_record confirm;
    dt_confirmed_record confirmed;
    dt_drift_record drift;
} seen_confirm;

static int see_confirm(void *ctx, const dt_confirm_record *r)
{
    seen_confirm *s = ctx;
    s->nconfirm++;
    s->confirm = *r;
    return 0;
}

static int see_confirmed(void *ctx, const dt_confirmed_record *r)
{
    seen_confirm *s = ctx;
    s->nconfirmed++;
    s->confirmed = *r;
    return 0;
}

static int see_drift(void *ctx, const dt_drift_record *r)
{
    seen_confirm *s = ctx;
    s->ndrift++;
    s->drift = *r;
    return 0;
}

/* A confirmation's timings, its decision (a rejected candidate's NaN median
 * included) and a drift timing read back field for field; an accepted
 * decision without a finite median is refused, naming its line. */
static void test_confirm_records(void **state)
{
    fixture *fx = *state;
    dt_error err;
    dt_run_record run;
    dt_confirm_record c;
    dt_confirmed_record d;
    dt_drift_record w;
    seen_confirm got;
    memset(&run, 0, sizeof run);
    memset(&c, 0, sizeof c);
    memset(&d, 0, sizeof d);
    memset(&w, 0, sizeof w);
    memset(&got, 0, sizeof got);
    snprintf(c.task, sizeof c.task, "layer2_3x3");
    snprintf(c.knobs, sizeof c.knobs, "tile_co=[4,32] vec=8");
    c.task_index = 5;
    c.config = 98765;
    c.m.result = DT_RESULT_OK;
    c.m.gflops = 203.125;
    c.m.latency_s = 1.2719e-3;
    c.m.repeats = 4;
    c.m.run_ms = 41.5;
    c.round = 2;
    c.slot = 17;
    c.time = 233.75;
    snprintf(d.task, sizeof d.task, "layer2_3x3");
    d.task_index = 5;
    d.candidate = 98765;
    d.incumbent = 4321;
    d.candidate_ms = NAN;
    d.incumbent_ms = 1.2863;
    d.rounds = 3;
    d.accepted = 0;
    d.slot = 17;
    d.time = 234.5;
    snprintf(w.task, sizeof w.task, "conv1");
    w.config = 7;
    w.m = c.m;
    w.slot = 18;
    w.time = 240.125;
    dt_tunelog *log = open_log(fx->log);
    assert_int_equal(dt_tunelog_append_run(log, &run, &err), 0);
    assert_int_equal(dt_tunelog_append_confirm(log, &c, &err), 0);
    assert_int_equal(dt_tunelog_append_confirmed(log, &d, &err), 0);
    assert_int_equal(dt_tunelog_append_drift(log, &w, &err), 0);
    dt_tunelog_close(log);
    dt_tunelog_visitor v = { .confirm = see_confirm, .confirmed = see_confirmed,
                             .drift = see_drift, .ctx = &got };
    assert_int_equal(dt_tunelog_replay(fx->log, &v, NULL, &err), 0);
    assert_true(got.nconfirm == 1 && got.nconfirmed == 1 && got.ndrift == 1);
    assert_string_equal(got.confirm.knobs, c.knobs);
    assert_true(got.confirm.config == 98765 && got.confirm.round == 2 && got.confirm.slot == 17);
    assert_true(got.confirm.m.gflops == 203.125 && got.confirm.time == 233.75);
    assert_true(got.confirmed.candidate == 98765 && got.confirmed.incumbent == 4321);
    assert_true(isnan(got.confirmed.candidate_ms) && got.confirmed.incumbent_ms == 1.2863);
    assert_true(got.confirmed.rounds == 3 && got.confirmed.accepted == 0);
    assert_true(got.drift.config == 7 && got.drift.slot == 18 && got.drift.time == 240.125);

    char text[8192], *at;
    read_text(fx->log, text, sizeof text);
    at = strstr(text, "\"accepted\":0");
    assert_non_null(at);
    at[11] = '1';
    write_text(fx->log, "w", text);
    assert_int_equal(dt_tunelog_replay(fx->log, NULL, NULL, &err), DT_EINVAL);
    assert_contains(err.msg, ":3:");
    assert_contains(err.msg, "candidate_ms");
}

/* ---- a slot record's fitted curves ---------------------------------------- */

/* What a visitor saw of the slot records' fits (the record's array lives
 * only during the call). */
typedef struct seen_fits {
    int nslots;
    int nfits;
    dt_slot_fit fits[DT_MAX_SCORES];
} seen_fits;

static int see_fits(void *ctx, const dt_slot_record *r)
{
    seen_fits *s = ctx;
    s->nslots++;
    s->nfits = r->nfits;
    for (int i = 0; i < r->nfits; i++)
        s->fits[i] = r->fits[i];
    return 0;
}

/* A fit of task k over trials 3..37.5 with n points, lo < median < hi, and
 * with n > 0 a prediction at trial 37.5 above the interval's high end (a
 * mean may lie outside its 5 %..95 % quantiles). */
static dt_slot_fit sample_fit(int k, int n)
{
    dt_slot_fit fit = { .task_index = k, .curve = { .n = n, .first = 3, .horizon = 37.5 } };
    for (int i = 0; i < n; i++) {
        fit.curve.median[i] = 41.3 * (1 - exp(-0.173 * (i + 1))) + k;
        fit.curve.lo[i] = fit.curve.median[i] * 0.917;
        fit.curve.hi[i] = fit.curve.median[i] * 1.0831;
    }
    if (n > 0)
        fit.pred = (dt_belief_forecast){ .gflops = fit.curve.hi[n - 1] * 1.0173,
                                         .lo_gflops = fit.curve.lo[n - 1] * 1.0029,
                                         .hi_gflops = fit.curve.hi[n - 1], .horizon = 37.5 };
    return fit;
}

/* Appends s to the log at path and replays it, the last slot record's fits
 * into got. */
static void log_and_see_fits(const char *path, const dt_slot_record *s, seen_fits *got)
{
    dt_error err;
    dt_tunelog *log = open_log(path);
    append_slot_ok(log, s);
    dt_tunelog_close(log);
    dt_tunelog_visitor v = { .slot = see_fits, .ctx = got };
    assert_int_equal(dt_tunelog_replay(path, &v, NULL, &err), 0);
}

static void assert_same_forecast(const dt_belief_forecast *a, const dt_belief_forecast *b)
{
    assert_true(a->gflops == b->gflops && a->lo_gflops == b->lo_gflops &&
                a->hi_gflops == b->hi_gflops && a->horizon == b->horizon);
}

/* Fits round-trip exactly (an empty one says "no fit"); a slot record of
 * the most tasks, each with the most points, stays under the size limit;
 * a line without "fits" (an older log) reads with none. */
static void test_slot_fits_round_trip(void **state)
{
    fixture *fx = *state;
    dt_error err;
    seen_fits *got = calloc(1, sizeof *got);
    dt_slot_fit *fits = calloc(DT_MAX_SCORES, sizeof *fits);
    assert_non_null(got);
    assert_non_null(fits);
    dt_slot_record s;
    sample_slot(&s, 4, "conv1", 0);
    fits[0] = sample_fit(2, DT_BELIEF_CURVE_POINTS);
    fits[1] = sample_fit(0, 0);
    fits[2] = sample_fit(3, 0);                 /* a dropped fit, as a run writes it */
    fits[2].curve.first = fits[2].curve.horizon = 0;
    s.fits = fits;
    s.nfits = 3;
    log_and_see_fits(fx->log, &s, got);
    assert_int_equal(got->nfits, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(got->fits[i].task_index, fits[i].task_index);
        assert_true(dt_belief_curve_equal(&got->fits[i].curve, &fits[i].curve));
        assert_same_forecast(&got->fits[i].pred, &fits[i].pred);
    }
    for (int k = 0; k < DT_MAX_SCORES; k++)
        fits[k] = sample_fit(k, DT_BELIEF_CURVE_POINTS);
    s.nfits = DT_MAX_SCORES;
    s.nscores = DT_MAX_SCORES;
    log_and_see_fits(fx->log, &s, got);
    assert_int_equal(got->nfits, DT_MAX_SCORES);
    assert_true(dt_belief_curve_equal(&got->fits[DT_MAX_SCORES - 1].curve,
                                      &fits[DT_MAX_SCORES - 1].curve));
    assert_same_forecast(&got->fits[DT_MAX_SCORES - 1].pred, &fits[DT_MAX_SCORES - 1].pred);
    write_text(fx->log, "w", "{\"type\":\"slot\",\"slot\":3,\"task\":\"conv1\",\"task_index\":0,"
                             "\"time\":1.5,\"model_latency_ms\":2.25,\"decision_ms\":0.5,"
                             "\"scores\":[0.75]}\n");
    *got = (seen_fits){ 0 };
    got->nfits = -1;
    dt_tunelog_visitor v = { .slot = see_fits, .ctx = got };
    assert_int_equal(dt_tunelog_replay(fx->log, &v, NULL, &err), 0);
    assert_int_equal(got->nslots, 1);
    assert_int_equal(got->nfits, 0);
    /* appending refuses a fit of one point or of too many, or a drawn one
     * whose span its replay would refuse */
    fits[0] = sample_fit(1, DT_BELIEF_CURVE_POINTS);
    fits[0].curve.n = 1;
    s.nfits = 1;
    dt_tunelog *log = open_log(fx->log);
    assert_int_equal(dt_tunelog_append_slot(log, &s, &err), DT_EINVAL);
    fits[0].curve.n = DT_BELIEF_CURVE_POINTS + 1;
    assert_int_equal(dt_tunelog_append_slot(log, &s, &err), DT_EINVAL);
    fits[0] = sample_fit(1, DT_BELIEF_CURVE_POINTS);
    fits[0].curve.first = 0;
    assert_int_equal(dt_tunelog_append_slot(log, &s, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "need 1 <= first <= horizon"));
    dt_tunelog_close(log);
    free(fits);
    free(got);
}

/* A fit's prediction round-trips exactly, with or without a curve; one that
 * is not a prediction (dt_belief_forecast_ok false) is logged as none; an
 * entry without "pred" (a log of an older dtune) reads as none. */
static void test_slot_fit_predictions(void **state)
{
    fixture *fx = *state;
    dt_error err;
    seen_fits *got = calloc(1, sizeof *got);
    assert_non_null(got);
    dt_slot_fit fits[3] = { sample_fit(2, DT_BELIEF_CURVE_POINTS),
                            sample_fit(1, DT_BELIEF_CURVE_POINTS), sample_fit(0, 0) };
    fits[1].pred.gflops = NAN;
    fits[2].pred = fits[0].pred;
    dt_slot_record s;
    sample_slot(&s, 7, "conv1", 0);
    s.fits = fits;
    s.nfits = 3;
    log_and_see_fits(fx->log, &s, got);
    assert_int_equal(got->nfits, 3);
    assert_same_forecast(&got->fits[0].pred, &fits[0].pred);
    assert_same_forecast(&got->fits[1].pred, &(dt_belief_forecast){ 0 });
    assert_true(dt_belief_curve_equal(&got->fits[1].curve, &fits[1].curve));
    assert_int_equal(got->fits[2].curve.n, 0);
    assert_same_forecast(&got->fits[2].pred, &fits[0].pred);
    write_text(fx->log, "w", "{\"type\":\"slot\",\"slot\":3,\"task\":\"conv1\",\"task_index\":0,"
                             "\"time\":1.5,\"model_latency_ms\":2.25,\"decision_ms\":0.5,"
                             "\"scores\":[0.75],\"fits\":[{\"task_index\":0,\"first\":1,"
                             "\"horizon\":9,\"median\":[1.5,2.5],\"lo\":[1,2],\"hi\":[2,3]}]}\n");
    got->fits[0].pred.horizon = 3.7;
    dt_tunelog_visitor v = { .slot = see_fits, .ctx = got };
    assert_int_equal(dt_tunelog_replay(fx->log, &v, NULL, &err), 0);
    assert_int_equal(got->nfits, 1);
    assert_int_equal(got->fits[0].curve.n, 2);
    assert_same_forecast(&got->fits[0].pred, &(dt_belief_forecast){ 0 });
    free(got);
}

/* A malformed "fits" is DT_EINVAL naming the file, the line and the field,
 * never a crash. */
static void test_bad_slot_fits_name_line(void **state)
{
    static const char *const bad[] = {
        "{}",
        "[1]",
        "[{\"task_index\":-1,\"first\":1,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2],\"hi\":[1,2]}]",
        "[{\"task_index\":0,\"first\":0,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2],\"hi\":[1,2]}]",
        "[{\"task_index\":0,\"first\":10,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2],\"hi\":[1,2]}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,2],\"lo\":[1],\"hi\":[1,2]}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1],\"lo\":[1],\"hi\":[1]}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,\"x\"],\"lo\":[1,2],\"hi\":[1,2]}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,\"nan\"],\"lo\":[1,2],\"hi\":[1,2]}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2.5],\"hi\":[1,3]}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2]}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,2,3,4,5,6,7,8,9,10,11,12,13,"
        "14,15,16,17,18,19,20,21,22,23,24,25],\"lo\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,"
        "18,19,20,21,22,23,24,25],\"hi\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,"
        "22,23,24,25]}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2],\"hi\":[1,2],"
        "\"pred\":1}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2],\"hi\":[1,2],"
        "\"pred\":{\"gflops\":2.5,\"lo\":2,\"hi\":3}}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2],\"hi\":[1,2],"
        "\"pred\":{\"gflops\":2.5,\"lo\":3,\"hi\":2,\"horizon\":9}}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2],\"hi\":[1,2],"
        "\"pred\":{\"gflops\":2.5,\"lo\":2,\"hi\":3,\"horizon\":0}}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2],\"hi\":[1,2],"
        "\"pred\":{\"gflops\":\"nan\",\"lo\":2,\"hi\":3,\"horizon\":9}}]",
        "[{\"task_index\":0,\"first\":1,\"horizon\":9,\"median\":[1,2],\"lo\":[1,2],\"hi\":[1,2],"
        "\"pred\":{\"gflops\":\"x\",\"lo\":2,\"hi\":3,\"horizon\":9}}]",
    };
    fixture *fx = *state;
    dt_error err;
    char line[1024];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(fx->log, "w", "{\"type\":\"slot\",\"slot\":0,\"task\":\"conv1\",\"task_index\":0,"
                                 "\"time\":1,\"model_latency_ms\":2,\"decision_ms\":0.5,"
                                 "\"scores\":[0.75]}\n");
        snprintf(line, sizeof line, "{\"type\":\"slot\",\"slot\":1,\"task\":\"conv1\","
                                    "\"task_index\":0,\"time\":2,\"model_latency_ms\":2,"
                                    "\"decision_ms\":0.5,\"scores\":[0.75],\"fits\":%s}\n", bad[i]);
        write_text(fx->log, "a", line);
        assert_int_equal(dt_tunelog_replay(fx->log, NULL, NULL, &err), DT_EINVAL);
        char where[160];
        snprintf(where, sizeof where, "%s:2:", fx->log);
        assert_contains(err.msg, where);
        assert_contains(err.msg, "'fits'");
    }
}

static void test_empty_and_missing_files(void **state)
{
    fixture *fx = *state;
    dt_tunelog_stats stats;
    dt_error err;
    assert_int_equal(dt_tunelog_replay(fx->log, NULL, &stats, &err), DT_ENOTFOUND);
    assert_contains(err.msg, fx->log);
    write_text(fx->log, "w", "");
    assert_int_equal(dt_tunelog_replay(fx->log, NULL, &stats, &err), 0);
    assert_int_equal(stats.lines, 0);
    assert_false(stats.dropped_tail);
}

static void test_visitor_can_stop_replay(void **state)
{
    fixture *fx = *state;
    dt_error err;
    seen *got = calloc(1, sizeof *got);
    assert_non_null(got);
    append_samples(fx->log, 4);
    got->stop_at_measure = 2;
    assert_int_equal(replay_into(fx->log, got, NULL, &err), DT_EFAIL);
    assert_int_equal(got->nmeasure, 2);
    assert_contains(err.msg, ":2:");
    free(got);
}

static void test_open_errors(void **state)
{
    fixture *fx = *state;
    char path[200];
    dt_tunelog *log = NULL, *second = (dt_tunelog *)&second;
    dt_error err;
    snprintf(path, sizeof path, "%s/no-such-dir/tuning.jsonl", fx->dir);
    assert_int_equal(dt_tunelog_open(path, &log, &err), DT_ENOTFOUND);
    assert_null(log);
    assert_contains(err.msg, path);
    log = open_log(fx->log);
    assert_int_equal(dt_tunelog_open(fx->log, &second, &err), DT_EIO);
    assert_null(second);
    assert_contains(err.msg, "another process");
    dt_tunelog_close(log);
    dt_tunelog_close(open_log(fx->log));   /* the lock went with the close */
    dt_tunelog_close(NULL);
}

/* ---- threads ------------------------------------------------------------ */

typedef struct writer {
    dt_tunelog *log;
    const char *task;
    int failures;
} writer;

static void *write_many(void *arg)
{
    writer *w = arg;
    for (int i = 1; i <= 100; i++) {
        dt_measure_record m;
        sample_measure(&m, w->task, 0, i, DT_RESULT_OK, 0.5 * i);
        if (dt_tunelog_append_measure(w->log, &m, NULL) != 0)
            w->failures++;
    }
    return NULL;
}

static int count_task_order(void *ctx, const dt_measure_record *r)
{
    int *next_trial = ctx;   /* [0]: task "a", [1]: task "b" */
    int k = r->task[0] == 'a' ? 0 : 1;
    return r->trial == ++next_trial[k] ? 0 : DT_EFAIL;
}

static void test_threads_append_whole_lines(void **state)
{
    fixture *fx = *state;
    dt_tunelog *log = open_log(fx->log);
    writer w[2] = { { log, "a", 0 }, { log, "b", 0 } };
    pthread_t t[2];
    int next_trial[2] = { 0, 0 };
    dt_tunelog_visitor v = { .measure = count_task_order, .ctx = next_trial };
    dt_tunelog_stats stats;
    dt_error err;
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, write_many, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    dt_tunelog_close(log);
    assert_int_equal(w[0].failures + w[1].failures, 0);
    assert_int_equal(dt_tunelog_replay(fx->log, &v, &stats, &err), 0);
    assert_int_equal(stats.lines, 200);
    assert_int_equal(next_trial[0], 100);
    assert_int_equal(next_trial[1], 100);
}

/* ---- the crash test ----------------------------------------------------- */

static void crash_record(int i, dt_measure_record *r)
{
    sample_measure(r, i % 2 ? "dense2" : "conv1", i % 2, i + 1,
                   i % 5 == 4 ? DT_RESULT_TIMEOUT : DT_RESULT_OK, 0.7310585786300049 * i + 1e-3);
    r->config = UINT64_C(0x1fffffffffffff) - (uint64_t)i * 7919;
    r->m.cv = 1.0 / (i + 3.0);
}

static void crash_child(const char *path, int ack_fd)
{
    dt_tunelog *log;
    if (dt_tunelog_open(path, &log, NULL) != 0)
        _exit(3);
    for (int i = 0; i < CRASH_RECORDS; i++) {
        dt_measure_record r;
        int acked = i + 1;
        crash_record(i, &r);
        if (dt_tunelog_append_measure(log, &r, NULL) != 0)
            _exit(4);
        if (write(ack_fd, &acked, sizeof acked) != (ssize_t)sizeof acked)
            _exit(5);
    }
    dt_tunelog_close(log);
    _exit(0);
}

/* Reads one int from the pipe; 0 at end of file. */
static int read_ack(int fd, int *value)
{
    size_t got = 0;
    while (got < sizeof *value) {
        ssize_t n = read(fd, (char *)value + got, sizeof *value - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return 1;
}

typedef struct crash_check {
    int next;
    int mismatches;
} crash_check;

static int check_crash_record(void *ctx, const dt_measure_record *r)
{
    crash_check *c = ctx;
    dt_measure_record want;
    crash_record(c->next++, &want);
    if (r->config != want.config || r->trial != want.trial || strcmp(r->task, want.task) != 0
        || r->m.result != want.m.result || r->m.gflops != want.m.gflops
        || r->m.cv != want.m.cv || r->time != want.time)
        c->mismatches++;
    return 0;
}

/* Kills the child after CRASH_KILL_AFTER acks; returns the last ack it sent. */
static int kill_mid_stream(pid_t pid, int ack_fd, int *status)
{
    int acked = 0, value;
    while (acked < CRASH_KILL_AFTER && read_ack(ack_fd, &value))
        acked = value;
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, status, 0), pid);
    while (read_ack(ack_fd, &value))   /* acks sent before it died */
        acked = value;
    return acked;
}

static void test_sigkill_mid_stream_loses_no_acknowledged_record(void **state)
{
    fixture *fx = *state;
    int fds[2], status = 0, acked;
    crash_check check = { 0, 0 };
    dt_tunelog_visitor v = { .measure = check_crash_record, .ctx = &check };
    dt_tunelog_stats stats;
    dt_error err;
    pid_t pid;
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        crash_child(fx->log, fds[1]);
    }
    close(fds[1]);
    acked = kill_mid_stream(pid, fds[0], &status);
    close(fds[0]);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_true(acked >= CRASH_KILL_AFTER && acked < CRASH_RECORDS);

    assert_int_equal(dt_tunelog_replay(fx->log, &v, &stats, &err), 0);
    assert_int_equal(check.mismatches, 0);
    assert_true(stats.lines >= acked);
    assert_true(stats.lines <= acked + 1);   /* at most the one in flight */
    dt_tunelog_close(open_log(fx->log));     /* cuts any partial line */
    assert_int_equal(dt_tunelog_replay(fx->log, NULL, &stats, &err), 0);
    assert_false(stats.dropped_tail);
    assert_true(stats.lines >= acked);
}

/* ---- dtune best --------------------------------------------------------- */

typedef struct captured {
    int status;
    char out[4096];
    char err[4096];
} captured;

/* Runs `dtune best ARGS` with stdout and stderr sent to files in dir. */
static void run_best(const char *dir, captured *c, int argc, char **argv)
{
    char out_path[128], err_path[128];
    int saved_out, saved_err, fo, fe;
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    fflush(NULL);
    saved_out = dup(1);
    saved_err = dup(2);
    fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(saved_out >= 0 && saved_err >= 0 && fo >= 0 && fe >= 0);
    assert_int_equal(dup2(fo, 1), 1);
    assert_int_equal(dup2(fe, 2), 2);
    c->status = dt_cmd_best(argc, argv);
    fflush(NULL);
    assert_int_equal(dup2(saved_out, 1), 1);
    assert_int_equal(dup2(saved_err, 2), 2);
    close(saved_out);
    close(saved_err);
    close(fo);
    close(fe);
    read_text(out_path, c->out, sizeof c->out);
    read_text(err_path, c->err, sizeof c->err);
}

static void test_best_usage(void **state)
{
    fixture *fx = *state;
    captured c;
    char *help[] = { "best", "--help", NULL };
    char *none[] = { "best", NULL };
    char *bad_option[] = { "best", "-x", fx->dir, NULL };
    char *two[] = { "best", fx->dir, fx->dir, NULL };
    run_best(fx->dir, &c, 2, help);
    assert_int_equal(c.status, 0);
    assert_contains(c.out, "usage: dtune best RUN_DIR");
    run_best(fx->dir, &c, 1, none);
    assert_int_equal(c.status, 2);
    assert_contains(c.err, "RUN_DIR is missing");
    run_best(fx->dir, &c, 3, bad_option);
    assert_int_equal(c.status, 2);
    assert_contains(c.err, "'-x'");
    run_best(fx->dir, &c, 3, two);
    assert_int_equal(c.status, 2);
    assert_string_equal(c.out, "");
}

static void test_best_prints_the_file(void **state)
{
    fixture *fx = *state;
    captured c;
    char run_dir[128], best[160], missing[160];
    const char *json = "{\"tasks\":[{\"task\":\"conv1\",\"config\":9007199254740993,"
                       "\"gflops\":123.45678901234567,\"latency_ms\":0.0327}]}\n";
    char *args[] = { "best", run_dir, NULL };
    char *gone[] = { "best", missing, NULL };
    char *file[] = { "best", best, NULL };
    snprintf(run_dir, sizeof run_dir, "%s/run", fx->dir);
    snprintf(best, sizeof best, "%s/best.json", run_dir);
    snprintf(missing, sizeof missing, "%s/no-such-run", fx->dir);
    assert_int_equal(mkdir(run_dir, 0755), 0);

    run_best(fx->dir, &c, 2, args);            /* no best.json yet */
    assert_int_equal(c.status, 1);
    assert_contains(c.err, best);
    write_text(best, "w", json);
    run_best(fx->dir, &c, 2, args);
    assert_int_equal(c.status, 0);
    assert_string_equal(c.out, json);
    run_best(fx->dir, &c, 2, gone);            /* a RUN_DIR that does not exist */
    assert_int_equal(c.status, 2);
    assert_contains(c.err, missing);
    run_best(fx->dir, &c, 2, file);            /* a RUN_DIR that is a file */
    assert_int_equal(c.status, 2);
    assert_contains(c.err, "not a directory");
    write_text(best, "w", "{\"tasks\":[{\"task\":\"conv1\",");   /* edited by hand: never printed */
    run_best(fx->dir, &c, 2, args);
    assert_int_equal(c.status, 2);
    assert_contains(c.err, "not JSON");
    assert_string_equal(c.out, "");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_round_trip_every_type),
        T(test_large_integers_are_written_exactly),
        T(test_invalid_utf8_is_replaced),
        T(test_append_rejects_bad_records),
        T(test_truncated_tail_is_dropped_and_cut),
        T(test_record_without_newline_is_kept),
        T(test_impossible_values_refused),
        T(test_measure_without_estimate_reads),
        T(test_garbled_last_line_is_refused_and_kept),
        T(test_record_size_limit),
        T(test_garbled_middle_line_is_an_error),
        T(test_bad_fields_name_line_and_field),
        T(test_retime_records),
        T(test_confirm_records),
        T(test_slot_fits_round_trip),
        T(test_slot_fit_predictions),
        T(test_bad_slot_fits_name_line),
        T(test_empty_and_missing_files),
        T(test_visitor_can_stop_replay),
        T(test_open_errors),
        T(test_threads_append_whole_lines),
        T(test_sigkill_mid_stream_loses_no_acknowledged_record),
        T(test_best_usage),
        T(test_best_prints_the_file),
    };
    return cmocka_run_group_tests_name("tunelog", tests, NULL, NULL);
}
