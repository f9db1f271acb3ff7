/* test_db.c — the tuning database: schema and migration, keying, two
 * writers at once, kill -9 during writes, import/export round trips and bad
 * records, and a run's lookup at start through the real binary (replay).
 * Every database lives in a temporary folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "dtune/db.h"
#include "dtune/machine.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/space.h"
#include "dtune/target.h"
#include "dtune/transfer.h"
#include "dtune/tunelog.h"
#include "support/run_cmd.h"

typedef struct fixture {
    char dir[256];
    char db[320];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    dt_test_tmpdir(f->dir, sizeof f->dir);
    snprintf(f->db, sizeof f->db, "%s/sub/dtune.db", f->dir);
    *state = f;
    return f->dir[0] ? 0 : -1;
}

static int teardown(void **state)
{
    fixture *f = *state;
    dt_test_remove_tree(f->dir);
    free(f);
    return 0;
}

/* A single value of a query on the file, through SQLite itself. */
static long long query_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    long long v = -1;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void exec_sql(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* The space of a conv2d on the CPU with the widest vector width vec. */
static void conv_space(dt_space *s, int c_in, int vec)
{
    char sig[DT_DB_SIGNATURE_MAX];
    dt_task t;
    snprintf(sig, sizeof sig, "conv2d n=1 c=%d", c_in);   /* not a signature */
    assert_int_not_equal(dt_db_task_parse(sig, &t, NULL), 0);
    snprintf(sig, sizeof sig, "conv2d n=1 c_in=%d h=14 w=14 c_out=48 kh=3 kw=3 sh=1 sw=1 ph=1 pw=1 dh=1 dw=1",
             c_in);
    assert_int_equal(dt_db_task_parse(sig, &t, NULL), 0);
    dt_space_opts opts = { .cpu_max_vec = vec };
    assert_int_equal(dt_target_space_init_opts(s, &t, DT_TARGET_CPU, &opts, NULL), 0);
}

static dt_measure_record record_of(const dt_space *s, uint64_t config, double gflops, int trial)
{
    dt_measure_record r;
    dt_point p;
    memset(&r, 0, sizeof r);
    snprintf(r.task, sizeof r.task, "conv");
    r.config = config;
    dt_space_point(s, config, &p);
    dt_space_point_str(s, &p, r.knobs, sizeof r.knobs);
    r.m.result = DT_RESULT_OK;
    r.m.gflops = gflops;
    r.m.latency_s = 1e-3;
    r.m.repeats = 3;
    r.trial = trial;
    r.time = trial * 0.37;
    return r;
}

static int64_t run_on(dt_db *db, const char *machine, const char *started)
{
    dt_db_run run = { .seed = 7 };
    int64_t id = -1;
    snprintf(run.machine, sizeof run.machine, "%s", machine);
    snprintf(run.target, sizeof run.target, "cpu");
    snprintf(run.model, sizeof run.model, "models/tiny.yaml");
    snprintf(run.started, sizeof run.started, "%s", started);
    assert_int_equal(dt_db_run_id(db, &run, &id, NULL), 0);
    return id;
}

/* ---- schema ---------------------------------------------------------------------------- */

static void test_fresh_schema(void **state)
{
    fixture *f = *state;
    dt_db *db;
    dt_error err;
    assert_int_equal(dt_db_open(f->db, &db, &err), 0);   /* creates the folder too */
    assert_int_equal(dt_db_version(db), DT_DB_SCHEMA_VERSION);
    dt_db_free(db);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM sqlite_master WHERE name IN "
                               "('machine','space','task','run','measurement','measurement_lookup')"), 6);
    sqlite3 *raw;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(f->db, &raw), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(raw);
}

/* A version-1 file with a record in it is migrated, the record kept; a file
 * from a newer dtune is refused. */
static void test_migration_from_version_1(void **state)
{
    fixture *f = *state;
    dt_db *db;
    dt_space s;
    conv_space(&s, 24, 16);
    assert_int_equal(dt_db_open_version(f->db, 1, &db, NULL), 0);
    assert_int_equal(dt_db_version(db), 1);
    dt_db_free(db);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM pragma_table_info('measurement') WHERE name = 'added'"), 0);
    char hash[24], sig[DT_DB_SIGNATURE_MAX], sql[1024];
    dt_db_space_hash(&s, hash, sizeof hash);
    dt_db_task_signature(&s.task, sig, sizeof sig);
    snprintf(sql, sizeof sql,
             "INSERT INTO machine VALUES(1, 'old box');"
             "INSERT INTO space VALUES(1, 'cpu', 'conv2d', '%s');"
             "INSERT INTO task VALUES(1, '%s');"
             "INSERT INTO run VALUES(1, 1, 'cpu', 'models/tiny.yaml', '7', '2026-01-02T03:04:05Z', '0.16', '');"
             "INSERT INTO measurement VALUES(1, 1, 1, 1, 'conv', 0, 5, '', 'ok', 12.5, 1.0, 3, 0.01,"
             " 10, 20, '', 0, 1, 0.5);", hash, sig);
    exec_sql(f->db, sql);
    assert_int_equal(dt_db_open(f->db, &db, NULL), 0);
    assert_int_equal(dt_db_version(db), DT_DB_SCHEMA_VERSION);
    dt_db_best best;
    assert_int_equal(dt_db_task_best(db, "old box", "cpu", hash, sig, &best, NULL), 0);
    assert_int_equal(best.records, 1);
    assert_true(best.gflops == 12.5);
    assert_string_equal(best.when, "2026-01-02T03:04:05Z");
    dt_db_free(db);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM pragma_table_info('measurement') WHERE name = 'added'"), 1);

    exec_sql(f->db, "PRAGMA user_version = 99");
    dt_error err;
    assert_int_equal(dt_db_open(f->db, &db, &err), DT_EINVAL);
    assert_null(db);
    assert_non_null(strstr(err.msg, "newer"));
    dt_space_free(&s);
}

/* ---- keying ----------------------------------------------------------------------------- */

static int collect(void *ctx, const dt_db_record *rec)
{
    double *sum = ctx;
    sum[0] += 1;
    sum[1] += rec->m.gflops;
    return 0;
}

/* Records of another machine, another vector width (another space hash)
 * or another target are never returned for this one. */
/* The key figures are filed under: the fingerprint and the target's
 * measurement conditions, which tell threads, cold weights and spread
 * inputs apart (a spread input only where there is more than one thread); the
 * replay surface's is its fingerprint; a key that does not fit is refused. */
static void test_machine_key(void **state)
{
    (void)state;
    dt_measure_params m = dt_measure_params_default();
    char key[DT_MACHINE_MAX], other[DT_MACHINE_MAX], tiny[24];
    dt_error err;
    assert_int_equal(dt_machine_key("AMD EPYC, family 26", "cpu", &m, key, sizeof key, &err), 0);
    assert_string_equal(key, "AMD EPYC, family 26; threads 1, weights cold");
    m.threads = 2;
    m.cold_weights = false;
    assert_int_equal(dt_machine_key("AMD EPYC, family 26", "cpu", &m, other, sizeof other, &err), 0);
    assert_string_equal(other, "AMD EPYC, family 26; threads 2, weights warm, input spread");
    m.spread_input = false;
    assert_int_equal(dt_machine_key("AMD EPYC, family 26", "cpu", &m, other, sizeof other, &err), 0);
    assert_string_equal(other, "AMD EPYC, family 26; threads 2, weights warm");
    assert_int_equal(dt_machine_key("NVIDIA H200, cc 9.0", "cuda", &m, key, sizeof key, &err), 0);
    assert_string_equal(key, "NVIDIA H200, cc 9.0; L2 kept");
    assert_int_equal(dt_machine_key("replay seed 3", "replay", &m, key, sizeof key, &err), 0);
    assert_string_equal(key, "replay seed 3");
    assert_int_equal(dt_machine_key("AMD EPYC, family 26", "cpu", &m, tiny, sizeof tiny, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "machine key too long"));
}

static void test_keying(void **state)
{
    fixture *f = *state;
    dt_db *db;
    dt_space wide, narrow, other_shape;
    conv_space(&wide, 24, 16);
    conv_space(&narrow, 24, 8);
    conv_space(&other_shape, 40, 16);
    char h_wide[24], h_narrow[24], h_other[24];
    dt_db_space_hash(&wide, h_wide, sizeof h_wide);
    dt_db_space_hash(&narrow, h_narrow, sizeof h_narrow);
    dt_db_space_hash(&other_shape, h_other, sizeof h_other);
    assert_string_not_equal(h_wide, h_narrow);
    assert_string_equal(h_wide, h_other);       /* one kind, two shapes */

    char sig[DT_DB_SIGNATURE_MAX];
    dt_task back;
    dt_db_task_signature(&wide.task, sig, sizeof sig);
    assert_int_equal(dt_db_task_parse(sig, &back, NULL), 0);
    assert_true(back.flops == wide.task.flops && back.conv.oh == wide.task.conv.oh);
    assert_false(dt_task_has_epilogue(&back));
    assert_null(strstr(sig, "epilogue"));
    /* a task with an epilogue is another task: its own signature, read back */
    dt_task fused = wide.task;
    fused.epilogue = (dt_task_epilogue){ .bias = true, .residual = true, .act = DT_ACT_RELU6 };
    char fused_sig[DT_DB_SIGNATURE_MAX];
    dt_db_task_signature(&fused, fused_sig, sizeof fused_sig);
    assert_string_not_equal(fused_sig, sig);
    assert_non_null(strstr(fused_sig, " epilogue=bias+residual+relu6"));
    assert_int_equal(dt_db_task_parse(fused_sig, &back, NULL), 0);
    assert_true(back.epilogue.bias && back.epilogue.residual && back.epilogue.act == DT_ACT_RELU6);
    strcat(fused_sig, "+relu");
    assert_int_not_equal(dt_db_task_parse(fused_sig, &back, NULL), 0);

    assert_int_equal(dt_db_open(f->db, &db, NULL), 0);
    int64_t here = run_on(db, "this box", "2026-03-01T00:00:00Z");
    int64_t there = run_on(db, "that box", "2026-03-01T00:00:00Z");
    assert_int_not_equal(here, there);
    assert_int_equal(run_on(db, "this box", "2026-03-01T00:00:00Z"), here);   /* found again */
    dt_measure_record r = record_of(&wide, 17, 3.25, 1);
    assert_int_equal(dt_db_add(db, here, &wide, &r, NULL), 0);
    assert_int_equal(dt_db_add(db, here, &wide, &r, NULL), 0);    /* the same trial: kept once */
    r = record_of(&other_shape, 5, 1.5, 1);
    assert_int_equal(dt_db_add(db, here, &other_shape, &r, NULL), 0);
    r = record_of(&wide, 18, 100.0, 2);
    assert_int_equal(dt_db_add(db, there, &wide, &r, NULL), 0);
    r = record_of(&narrow, 19, 200.0, 3);
    assert_int_equal(dt_db_add(db, here, &narrow, &r, NULL), 0);
    /* each run's best, as the run decided it: here's first, then changed */
    assert_int_equal(dt_db_set_best(db, here, &wide, 16, NULL, 3.0, NULL), 0);
    assert_int_equal(dt_db_set_best(db, here, &wide, 17, NULL, 3.25, NULL), 0);
    assert_int_equal(dt_db_set_best(db, there, &wide, 18, NULL, 100.0, NULL), 0);
    assert_int_equal(dt_db_set_best(db, here, &narrow, 19, NULL, 200.0, NULL), 0);
    assert_int_equal(dt_db_set_best(db, here, &wide, 17, NULL, NAN, NULL), DT_EINVAL);

    double sum[2] = { 0, 0 };
    assert_int_equal(dt_db_each(db, "this box", "cpu", h_wide, collect, sum, NULL), 0);
    assert_true(sum[0] == 2 && sum[1] == 3.25 + 1.5);
    sum[0] = sum[1] = 0;
    assert_int_equal(dt_db_each(db, "this box", "cuda", h_wide, collect, sum, NULL), 0);
    assert_true(sum[0] == 0);
    dt_db_best best;
    assert_int_equal(dt_db_task_best(db, "this box", "cpu", h_wide, sig, &best, NULL), 0);
    assert_int_equal(best.records, 1);
    assert_true(best.gflops == 3.25 && best.config == 17);
    dt_db_free(db);
    dt_space_free(&wide);
    dt_space_free(&narrow);
    dt_space_free(&other_shape);
}

/* ---- concurrency and crashes ------------------------------------------------------------ */

#define WRITES 300

/* A child process: WRITES records, each its own transaction. */
static void writer(const char *path, const char *machine)
{
    dt_db *db;
    dt_space s;
    conv_space(&s, 24, 16);
    if (dt_db_open(path, &db, NULL) != 0)
        _exit(3);
    int64_t run = run_on(db, machine, "2026-03-02T00:00:00Z");
    for (int i = 1; i <= WRITES; i++) {
        dt_measure_record r = record_of(&s, (uint64_t)i, i * 0.5, i);
        if (dt_db_add(db, run, &s, &r, NULL) != 0)
            _exit(4);
    }
    dt_db_free(db);
    _exit(0);
}

static void test_two_writers_lose_nothing(void **state)
{
    fixture *f = *state;
    pid_t a = fork();
    if (a == 0)
        writer(f->db, "box a");
    pid_t b = fork();
    if (b == 0)
        writer(f->db, "box b");
    assert_int_equal(dt_test_wait(a), 0);
    assert_int_equal(dt_test_wait(b), 0);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM measurement"), 2 * WRITES);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM run"), 2);
}

#define BATCH 50

/* Writes batches of BATCH records, each batch one transaction, until killed. */
static void endless_writer(const char *path)
{
    dt_db *db;
    dt_space s;
    conv_space(&s, 24, 16);
    if (dt_db_open(path, &db, NULL) != 0)
        _exit(3);
    int64_t run = run_on(db, "box", "2026-03-03T00:00:00Z");
    for (int trial = 1;;) {
        if (dt_db_begin(db, NULL) != 0)
            _exit(4);
        for (int i = 0; i < BATCH; i++, trial++) {
            dt_measure_record r = record_of(&s, (uint64_t)trial % s.size, 1.0 + trial, trial);
            if (dt_db_add(db, run, &s, &r, NULL) != 0)
                _exit(5);
        }
        if (dt_db_commit(db, NULL) != 0)
            _exit(6);
    }
}

static void test_kill_9_leaves_it_whole(void **state)
{
    fixture *f = *state;
    dt_db *db;
    assert_int_equal(dt_db_open(f->db, &db, NULL), 0);   /* schema in place before the race */
    dt_db_free(db);
    for (int round = 0; round < 3; round++) {
        pid_t child = fork();
        if (child == 0)
            endless_writer(f->db);
        struct timespec ts = { 0, 150000000L + 70000000L * round };
        nanosleep(&ts, NULL);
        kill(child, SIGKILL);
        assert_int_equal(dt_test_wait(child), 128 + SIGKILL);
    }
    sqlite3 *raw;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(f->db, &raw), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(raw);
    long long n = query_int(f->db, "SELECT count(*) FROM measurement");
    assert_true(n > 0);
    assert_int_equal(n % BATCH, 0);     /* whole transactions only */
    assert_int_equal(dt_db_open(f->db, &db, NULL), 0);      /* and it opens for the next run */
    dt_db_free(db);
}

/* ---- through the binary -------------------------------------------------------------------- */

static char out[1 << 16];

/* A short tiny-model replay run into run_dir with database db_path. */
static int tiny_run(const char *run_dir, const char *db_path, const char *seed)
{
    char *argv[] = { "dtune", "tune", "--model", "models/tiny.yaml", "--backend", "replay", "--out",
                     (char *)run_dir, "--listen", "off", "--budget", "60", "--slot-trials", "16",
                     "--max-slots", "3", "--seed", (char *)seed, "--db", (char *)db_path, NULL };
    int rc = dt_test_run(argv, out, sizeof out);
    if (rc != 0)
        print_error("dtune tune exited %d:\n%s\n", rc, out);
    return rc;
}

static int db_cmd(const char *db_path, const char *a, const char *b, const char *c)
{
    char *argv[] = { "dtune", "db", "--db", (char *)db_path, (char *)a, (char *)b, (char *)c, NULL };
    return dt_test_run(argv, out, sizeof out);
}

/* Export, import into a second database, export again: the same log. */
static void test_import_export_round_trip(void **state)
{
    fixture *f = *state;
    char run1[400], run2[400], log1[400], log2[400], db2[400];
    snprintf(run1, sizeof run1, "%s/run1", f->dir);
    snprintf(run2, sizeof run2, "%s/run2", f->dir);
    snprintf(log1, sizeof log1, "%s/export1.jsonl", f->dir);
    snprintf(log2, sizeof log2, "%s/export2.jsonl", f->dir);
    snprintf(db2, sizeof db2, "%s/second.db", f->dir);
    assert_int_equal(tiny_run(run1, f->db, "3"), 0);
    assert_int_equal(tiny_run(run2, f->db, "4"), 0);
    int measured;
    char path[420];
    snprintf(path, sizeof path, "%s/tuning.jsonl", run1);
    measured = dt_test_count_lines(path, "\"type\":\"measure\"");
    snprintf(path, sizeof path, "%s/tuning.jsonl", run2);
    measured += dt_test_count_lines(path, "\"type\":\"measure\"");
    assert_true(measured > 0);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM measurement"), measured);

    assert_int_equal(db_cmd(f->db, "import", run1, NULL), 0);       /* already there, live */
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM measurement"), measured);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM run"), 2);
    assert_int_equal(db_cmd(f->db, "export-log", "-o", log1), 0);
    assert_int_equal(dt_test_count_lines(log1, "\"type\":\"measure\""), measured);
    assert_int_equal(db_cmd(db2, "import", log1, NULL), 0);
    assert_non_null(strstr(out, "0 records skipped"));
    assert_int_equal(db_cmd(db2, "import", log1, NULL), 0);          /* twice: nothing added */
    assert_int_equal(query_int(db2, "SELECT count(*) FROM measurement"), measured);
    assert_int_equal(db_cmd(db2, "export-log", "-o", log2), 0);
    char *a = dt_test_slurp(log1), *b = dt_test_slurp(log2);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    free(a);
    free(b);
    assert_int_equal(db_cmd(db2, "export-log", "-o", log2), 2);    /* exists */
    /* a run folder imports as its log */
    char db3[400];
    snprintf(db3, sizeof db3, "%s/third.db", f->dir);
    assert_int_equal(db_cmd(db3, "import", run1, NULL), 0);
    assert_int_equal(query_int(db3, "SELECT count(*) FROM run"), 1);
    /* its bests are the ones the live run wrote, confirmations replayed */
    snprintf(path, sizeof path, "%s/tuning.jsonl", run1);
    assert_true(dt_test_count_lines(path, "\"type\":\"confirmed\"") > 0);
    const char *bests = "SELECT sum(b.task_id * 1000003 + b.config * 7919 + CAST(round(b.gflops * 1e6) AS INTEGER))"
                        " FROM run_best b JOIN run r ON b.run_id = r.id WHERE r.seed = '3'";
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM run_best b JOIN run r ON b.run_id = r.id "
                               "WHERE r.seed = '3'"), 3);
    assert_int_equal(query_int(db3, bests), query_int(f->db, bests));
}

/* Foreign records are named by FILE:LINE, skipped and counted; a file that
 * cannot be read to its end imports nothing. */
static void test_import_bad_records(void **state)
{
    fixture *f = *state;
    char run1[400], log[420], bad[420];
    snprintf(run1, sizeof run1, "%s/run1", f->dir);
    snprintf(log, sizeof log, "%s/tuning.jsonl", run1);
    snprintf(bad, sizeof bad, "%s/bad.jsonl", f->dir);
    assert_int_equal(tiny_run(run1, f->db, "5"), 0);
    char *text = dt_test_slurp(log);
    assert_non_null(text);
    char *first_measure = strstr(text, "{\"type\":\"measure\"");
    assert_non_null(first_measure);
    char *end = strchr(first_measure, '\n');
    char *run_line_end = strchr(text, '\n');
    assert_int_equal(dt_test_write_file(bad,
        "%.*s\n"                                   /* 1: run */
        "%.*s\n"                                   /* 2: a good measurement */
        "{\"type\":\"measure\",\"task\":\"nope\",\"task_index\":9,\"config\":1,\"result\":\"ok\","
        "\"gflops\":1.5,\"latency_ms\":1,\"repeats\":3,\"cv\":0.01,\"compile_ms\":1,\"run_ms\":1,"
        "\"slot\":0,\"trial\":2,\"time\":1}\n"      /* 3: a task the model lacks */
        "{\"type\":\"measure\",\"task\":\"conv\",\"task_index\":0,\"config\":99999999999,\"result\":\"ok\","
        "\"gflops\":1.5,\"latency_ms\":1,\"repeats\":3,\"cv\":0.01,\"compile_ms\":1,\"run_ms\":1,"
        "\"slot\":0,\"trial\":3,\"time\":1}\n",     /* 4: outside the space */
        (int)(run_line_end - text), text, (int)(end - first_measure), first_measure), 0);
    char db2[400];
    snprintf(db2, sizeof db2, "%s/second.db", f->dir);
    assert_int_equal(db_cmd(db2, "import", bad, NULL), 0);
    char where[480];
    snprintf(where, sizeof where, "%s:3: task 'nope'", bad);
    assert_non_null(strstr(out, where));
    snprintf(where, sizeof where, "%s:4: config 99999999999", bad);
    assert_non_null(strstr(out, where));
    assert_non_null(strstr(out, "1 measurements added or already there, 2 records skipped"));
    assert_int_equal(query_int(db2, "SELECT count(*) FROM measurement"), 1);

    /* a broken line in the middle: the whole file is refused */
    char db3[400];
    snprintf(db3, sizeof db3, "%s/third.db", f->dir);
    assert_int_equal(dt_test_write_file(bad, "%.*s\n%.*s\nnot json\n", (int)(run_line_end - text), text,
                                        (int)(end - first_measure), first_measure), 0);
    assert_int_equal(db_cmd(db3, "import", bad, NULL), 2);
    snprintf(where, sizeof where, "%s:3:", bad);
    assert_non_null(strstr(out, where));
    assert_non_null(strstr(out, "nothing imported"));
    assert_int_equal(query_int(db3, "SELECT count(*) FROM measurement"), 0);
    free(text);
}

/* A task's best in the database is what its run decided: a faster
 * measurement that its confirmation accepted at a slower median is the best
 * at that median, ahead of the incumbent's first, luckier figure; a refused
 * one leaves the incumbent at its re-measured median. */
static void test_best_is_the_runs_decision(void **state)
{
    fixture *f = *state;
    char log_path[420], db2[400];
    snprintf(log_path, sizeof log_path, "%s/confirmed.jsonl", f->dir);
    snprintf(db2, sizeof db2, "%s/second.db", f->dir);
    dt_model *model;
    assert_int_equal(dt_model_load("models/tiny.yaml", &model, NULL), 0);
    double flops = model->tasks[0].flops;
    dt_model_free(model);
    dt_tunelog *log;
    assert_int_equal(dt_tunelog_open(log_path, &log, NULL), 0);
    dt_run_record run = { .seed = 7 };
    char fingerprint[DT_MACHINE_MAX];
    dt_measure_params measure = dt_measure_params_default();
    assert_int_equal(dt_machine_fingerprint("cpu", 7, 0, fingerprint, sizeof fingerprint, NULL), 0);
    assert_int_equal(dt_machine_key(fingerprint, "cpu", &measure, run.machine, sizeof run.machine, NULL), 0);
    snprintf(run.target, sizeof run.target, "cpu");
    snprintf(run.model, sizeof run.model, "models/tiny.yaml");
    snprintf(run.started, sizeof run.started, "2026-12-02T08:00:00Z");
    snprintf(run.id, sizeof run.id, "confirmedrun");
    assert_int_equal(dt_tunelog_append_run(log, &run, NULL), 0);
    /* GFLOPS 10 (the first: the best), 11 (accepted at a median of 9.5
     * against the incumbent's 9), 12 (refused, no median; the best stays
     * config 2, re-measured at 9.2) */
    const double raw[3] = { 10, 11, 12 };
    const double cand_gf[3] = { 0, 9.5, NAN }, inc_gf[3] = { 0, 9, 9.2 };
    for (int i = 0; i < 3; i++) {
        dt_measure_record m = { .task_index = 0, .config = (uint64_t)i + 1, .trial = i + 1, .time = i };
        snprintf(m.task, sizeof m.task, "conv");
        m.m.result = DT_RESULT_OK;
        m.m.gflops = raw[i];
        m.m.latency_s = flops / (raw[i] * 1e9);
        m.m.repeats = 3;
        assert_int_equal(dt_tunelog_append_measure(log, &m, NULL), 0);
        if (i == 0)
            continue;
        dt_confirmed_record c = { .task_index = 0, .candidate = (uint64_t)i + 1, .incumbent = (uint64_t)i,
                                  .rounds = 3, .accepted = i == 1, .time = i + 0.5 };
        snprintf(c.task, sizeof c.task, "conv");
        c.candidate_ms = flops / (cand_gf[i] * 1e9) * 1e3;
        c.incumbent_ms = flops / (inc_gf[i] * 1e9) * 1e3;
        assert_int_equal(dt_tunelog_append_confirmed(log, &c, NULL), 0);
    }
    dt_tunelog_close(log);
    assert_int_equal(db_cmd(db2, "import", log_path, NULL), 0);
    const char *task = " FROM run_best b JOIN task t ON b.task_id = t.id WHERE t.signature LIKE 'conv2d %'";
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT b.config%s", task);
    assert_int_equal(query_int(db2, sql), 2);
    snprintf(sql, sizeof sql, "SELECT CAST(round(b.gflops * 1000) AS INTEGER)%s", task);
    assert_int_equal(query_int(db2, sql), 9200);
    assert_int_equal(db_cmd(db2, "best", "models/tiny.yaml", NULL), 0);
    assert_non_null(strstr(out, "9.20 "));
}

static void test_cli_bad_input_exits_2(void **state)
{
    fixture *f = *state;
    assert_int_equal(db_cmd(f->db, "frobnicate", NULL, NULL), 2);
    assert_non_null(strstr(out, "unknown command"));
    assert_int_equal(db_cmd(f->db, "import", "/nonexistent/run", NULL), 2);
    assert_int_equal(db_cmd(f->db, "best", NULL, NULL), 2);
    assert_int_equal(db_cmd(f->db, "stats", "extra", NULL), 2);
    assert_int_equal(db_cmd(f->db, "machine", "--target", "tpu"), 2);
    assert_int_equal(db_cmd("off", "stats", NULL, NULL), 2);
    /* the commands that only read never create the file they are given */
    const char *readers[] = { "stats", "best", "export-log" };
    for (int i = 0; i < 3; i++) {
        char dest[400];
        snprintf(dest, sizeof dest, "%s/exported.jsonl", f->dir);
        int rc = i == 2 ? db_cmd(f->db, "export-log", "-o", dest)
                        : i == 1 ? db_cmd(f->db, "best", "models/tiny.yaml", NULL) : db_cmd(f->db, readers[i], NULL, NULL);
        if (rc != 2 || !strstr(out, "no tuning database there"))
            fail_msg("db %s on a missing file: exit %d: %s", readers[i], rc, out);
        assert_int_not_equal(access(f->db, F_OK), 0);
    }
    dt_db *db = NULL;
    assert_int_equal(dt_db_open(f->db, &db, NULL), 0);
    dt_db_free(db);
    assert_int_equal(db_cmd(f->db, "stats", NULL, NULL), 0);
    assert_non_null(strstr(out, "no runs yet"));
}

/* The bytes of a file (malloc'd, *len of them). */
static char *file_bytes(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    rewind(fp);
    char *buf = malloc(*len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, *len, fp), *len);
    fclose(fp);
    return buf;
}

/* Neither the writing nor the reading commands touch a file that is not a
 * dtune database, nor one that is damaged: exit 2 naming why, the file
 * byte for byte as it was. */
static void expect_left_alone(const char *path, const char *why)
{
    size_t n0, n1;
    char *before = file_bytes(path, &n0), run[300];
    snprintf(run, sizeof run, "%s", path);
    *strrchr(run, '/') = '\0';
    const char *cmds[][2] = { { "stats", NULL }, { "import", run } };   /* import opens the database first */
    for (int i = 0; i < 2; i++) {
        int rc = db_cmd(path, cmds[i][0], cmds[i][1], NULL);
        if (rc != 2 || !strstr(out, why))
            fail_msg("db %s on %s: exit %d: %s", cmds[i][0], path, rc, out);
    }
    dt_db *db = NULL;
    dt_error err;
    assert_int_equal(dt_db_open(path, &db, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, why));
    char *after = file_bytes(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
}

static void test_foreign_or_damaged_file_left_alone(void **state)
{
    fixture *f = *state;
    char foreign[400], damaged[400];
    snprintf(foreign, sizeof foreign, "%s/foreign.db", f->dir);
    exec_sql(foreign, "CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT);"
                      "INSERT INTO photos(name) VALUES('a'), ('b');");
    expect_left_alone(foreign, "not a dtune database");

    /* a dtune database of some pages, the header of one in the middle overwritten */
    snprintf(damaged, sizeof damaged, "%s/damaged.db", f->dir);
    dt_db *db = NULL;
    assert_int_equal(dt_db_open(damaged, &db, NULL), 0);
    dt_db_free(db);
    exec_sql(damaged, "PRAGMA journal_mode = DELETE; CREATE TABLE pad(x); "
                      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
                      "INSERT INTO pad SELECT hex(randomblob(40)) || i FROM n;");
    FILE *fp = fopen(damaged, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, 4096L * 7, SEEK_SET), 0);
    for (int i = 0; i < 600; i++)
        fputc(0x5a ^ i, fp);
    fclose(fp);
    expect_left_alone(damaged, "damaged");
}

/* The config of each measurement in log, in order, for task. */
static int configs_of(const char *log, const char *task, uint64_t *configs, int max)
{
    char *text = dt_test_slurp(log), *line = text;
    int n = 0;
    char want[96];
    snprintf(want, sizeof want, "\"type\":\"measure\",\"task\":\"%s\"", task);
    for (; line && *line && n < max; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char *config = strstr(line, "\"config\":");
        if (strncmp(line + 1, want, strlen(want)) == 0 && config)
            configs[n++] = strtoull(config + 9, NULL, 10);
    }
    free(text);
    return n;
}

/* A second run of the model starts each task with the first run's best
 * configs; a run on another machine (replay seed) uses none of them. */
static void test_lookup_at_run_start(void **state)
{
    fixture *f = *state;
    char run1[400], run2[400], run3[400], log[420];
    snprintf(run1, sizeof run1, "%s/run1", f->dir);
    snprintf(run2, sizeof run2, "%s/run2", f->dir);
    snprintf(run3, sizeof run3, "%s/run3", f->dir);
    assert_int_equal(tiny_run(run1, f->db, "6"), 0);
    assert_null(strstr(out, "start from earlier records"));
    assert_int_equal(db_cmd(f->db, "best", "models/tiny.yaml", "--backend"), 2);   /* needs a value */
    char *argv[] = { "dtune", "db", "--db", f->db, "best", "models/tiny.yaml", "--backend", "replay",
                     "--seed", "6", NULL };
    assert_int_equal(dt_test_run(argv, out, sizeof out), 0);
    /* conv's best on replay seed 6 */
    char *conv = strstr(out, "\nconv ");
    assert_non_null(conv);
    char *knobs = strstr(conv, "tile_co=");
    assert_non_null(knobs);
    char best_knobs[256];
    snprintf(best_knobs, sizeof best_knobs, "%.*s", (int)strcspn(knobs, "\n"), knobs);

    assert_int_equal(tiny_run(run2, f->db, "6"), 0);
    assert_non_null(strstr(out, "3 tasks start from earlier records"));
    snprintf(log, sizeof log, "%s/tuning.jsonl", run2);
    char *text = dt_test_slurp(log);
    char *first = strstr(text, "\"task\":\"conv\"");
    assert_non_null(first);
    char *first_knobs = strstr(first, "\"knobs\":\"");
    assert_non_null(first_knobs);
    assert_int_equal(strncmp(first_knobs + 9, best_knobs, strlen(best_knobs)), 0);
    free(text);
    /* nothing measured twice within the run */
    uint64_t configs[512];
    int n = configs_of(log, "conv", configs, 512);
    assert_true(n > DT_DB_REMEASURE);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            assert_true(configs[i] != configs[j]);

    assert_int_equal(tiny_run(run3, f->db, "7"), 0);
    assert_null(strstr(out, "start from earlier records"));
}

/* Two dtune runs on one database at once: every measurement of both is in it.
 * They end after 8 slots, well inside the budget. */
static void test_two_runs_at_once(void **state)
{
    fixture *f = *state;
    char run[2][400], err_log[2][420], seed[2][8];
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
        snprintf(run[i], sizeof run[i], "%s/run%d", f->dir, i);
        snprintf(err_log[i], sizeof err_log[i], "%s/out%d.txt", f->dir, i);
        snprintf(seed[i], sizeof seed[i], "%d", 11 + i);
        char *argv[] = { "dtune", "tune", "--model", "models/resnet18.yaml", "--backend", "replay", "--out",
                         run[i], "--listen", "off", "--budget", "60", "--slot-trials", "24", "--max-slots",
                         "8", "--seed", seed[i], "--db", f->db, NULL };
        pid[i] = dt_test_spawn(argv, err_log[i]);
        assert_true(pid[i] > 0);
    }
    int measured = 0;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(dt_test_wait(pid[i]), 0);
        char *text = dt_test_slurp(err_log[i]);
        assert_null(strstr(text, "goes on without it"));
        free(text);
        char log[sizeof run + 16];
        snprintf(log, sizeof log, "%s/tuning.jsonl", run[i]);
        measured += dt_test_count_lines(log, "\"type\":\"measure\"");
    }
    assert_true(measured > 100);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM measurement"), measured);
}

/* A model that shares no task with the database's runs gets their records
 * of its kinds for transfer. */
static void test_other_model_transfers(void **state)
{
    fixture *f = *state;
    char run1[400], run2[400], model[400];
    snprintf(run1, sizeof run1, "%s/run1", f->dir);
    snprintf(run2, sizeof run2, "%s/run2", f->dir);
    snprintf(model, sizeof model, "%s/other.yaml", f->dir);
    assert_int_equal(dt_test_write_file(model, "name: other\nbatch: 1\nops:\n"
        "  - {name: wide, kind: conv2d, input: [1, 24, 14, 14], out_channels: 40, kernel: 3, padding: 1}\n"), 0);
    assert_int_equal(tiny_run(run1, f->db, "9"), 0);
    char *argv[] = { "dtune", "tune", "--model", model, "--backend", "replay", "--out", run2, "--listen", "off",
                     "--budget", "60", "--slot-trials", "16", "--max-slots", "2", "--seed", "9", "--db", f->db,
                     NULL };
    int rc = dt_test_run(argv, out, sizeof out);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "0 tasks start from earlier records"));
    char *n = strstr(out, "as history), ");
    assert_non_null(n);
    assert_true(atoi(n + strlen("as history), ")) > 0);     /* the tiny run's conv records */
    assert_non_null(strstr(out, "records of other tasks for transfer, "));
}

/* The transfer store gets at most DT_TRANSFER_ROWS_PER_TASK records of one
 * task signature from the database, its best: a shape measured more often
 * than that gives no more. */
static void test_transfer_cap(void **state)
{
    fixture *f = *state;
    char run1[400];
    snprintf(run1, sizeof run1, "%s/run1", f->dir);
    dt_db *db;
    dt_space s;
    conv_space(&s, 24, 16);                /* the replay run's width; no task of tiny */
    int planted = DT_TRANSFER_ROWS_PER_TASK + 37;
    assert_true(s.size > (uint64_t)planted);
    assert_int_equal(dt_db_open(f->db, &db, NULL), 0);
    int64_t run = run_on(db, "replay seed 9", "2026-01-02T03:04:05Z");
    assert_int_equal(dt_db_begin(db, NULL), 0);
    for (int i = 0; i < planted; i++) {
        dt_measure_record r = record_of(&s, (uint64_t)i * (s.size / (uint64_t)planted), 1.0 + 0.01 * i, i + 1);
        assert_int_equal(dt_db_add(db, run, &s, &r, NULL), 0);
    }
    assert_int_equal(dt_db_commit(db, NULL), 0);
    dt_db_free(db);
    dt_space_free(&s);
    assert_int_equal(tiny_run(run1, f->db, "9"), 0);
    char want[96];
    snprintf(want, sizeof want, ", %d records of other tasks for transfer, ", DT_TRANSFER_ROWS_PER_TASK);
    if (!strstr(out, want))
        fail_msg("expected '%s' in:\n%s", want, out);
}

/* A database that cannot be opened costs the run nothing. */
static void test_broken_database_never_stops_a_run(void **state)
{
    fixture *f = *state;
    char run1[400], blocker[400], path[440];
    snprintf(run1, sizeof run1, "%s/run1", f->dir);
    snprintf(blocker, sizeof blocker, "%s/file", f->dir);
    assert_int_equal(dt_test_write_file(blocker, "not a folder\n"), 0);
    snprintf(path, sizeof path, "%s/dtune.db", blocker);
    assert_int_equal(tiny_run(run1, path, "8"), 0);
    assert_non_null(strstr(out, "the run goes on without it"));
    snprintf(path, sizeof path, "%s/tuning.jsonl", run1);
    assert_true(dt_test_count_lines(path, "\"type\":\"measure\"") > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fresh_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration_from_version_1, setup, teardown),
        cmocka_unit_test(test_machine_key),
        cmocka_unit_test_setup_teardown(test_keying, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_writers_lose_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill_9_leaves_it_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_export_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_bad_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_best_is_the_runs_decision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_bad_input_exits_2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_or_damaged_file_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookup_at_run_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_runs_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_model_transfers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transfer_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broken_database_never_stops_a_run, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
