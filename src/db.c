/* db.c — the tuning database (db.h) on SQLite.
 *
 * Tables: machine (fingerprints), space (target and knob-schema hash), task
 * (signatures), run (machine, model, seed, start, dtune version),
 * measurement (one row per logged measurement, unique per run, task and
 * trial, so a resume or a second import adds nothing twice) and run_best
 * (each run's best of each task, as the run decided it). A lookup joins
 * them on the three keys that make a record usable: machine, target and
 * space hash.
 *
 * Schema versions are the ordered `migrations`: a file at user_version v
 * gets migrations v+1.. each in its own immediate transaction that re-reads
 * the version first, so two processes opening an old file at once migrate
 * it once. Concurrency: WAL (readers never block the writer), a busy
 * timeout for SQLite's own waiting, and around every write transaction a
 * retry loop for SQLITE_BUSY that the timeout does not cover (a lock
 * upgrade is refused at once). synchronous=NORMAL: in WAL mode a crash may
 * lose the last transactions but never corrupts the file, and the run's
 * JSONL log is the durable copy.
 */
#include "dtune/db.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "dtune/target.h"
#include "dtune/util.h"
#include "dtune/version.h"

/* SQLite waits up to this long for another writer's lock... */
#define BUSY_TIMEOUT_MS 5000
/* ...and a write that still meets one is retried this many times. */
#define BUSY_RETRIES 20

/* The space and task ids of recently added records: a run adds thousands
 * of records of a few tasks. */
#define KEY_CACHE 64

typedef struct key_ids {
    char hash[24];
    char signature[DT_DB_SIGNATURE_MAX];
    int64_t space_id, task_id;
} key_ids;

struct dt_db {
    sqlite3 *sql;
    char path[DT_PATH_MAX];
    sqlite3_stmt *insert;      /* the measurement insert, prepared once */
    int nkeys;
    key_ids keys[KEY_CACHE];   /* only ids committed before: filled outside transactions */
};

/* ---- migrations --------------------------------------------------------------- */

static const char *const migrations[DT_DB_SCHEMA_VERSION] = {
    /* 1: the keys and the measurements */
    "CREATE TABLE machine(id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL UNIQUE);"
    "CREATE TABLE space(id INTEGER PRIMARY KEY, target TEXT NOT NULL, kind TEXT NOT NULL,"
    "  hash TEXT NOT NULL, UNIQUE(target, hash));"
    "CREATE TABLE task(id INTEGER PRIMARY KEY, signature TEXT NOT NULL UNIQUE);"
    "CREATE TABLE run(id INTEGER PRIMARY KEY, machine_id INTEGER NOT NULL REFERENCES machine(id),"
    "  target TEXT NOT NULL, model TEXT NOT NULL, seed TEXT NOT NULL, started TEXT NOT NULL,"
    "  dtune_version TEXT NOT NULL, uid TEXT NOT NULL, UNIQUE(machine_id, model, seed, started, uid));"
    "CREATE TABLE measurement(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES run(id),"
    "  space_id INTEGER NOT NULL REFERENCES space(id), task_id INTEGER NOT NULL REFERENCES task(id),"
    "  task_name TEXT NOT NULL, task_index INTEGER NOT NULL, config INTEGER NOT NULL,"
    "  knobs TEXT NOT NULL, result TEXT NOT NULL, gflops REAL, latency_ms REAL, repeats INTEGER,"
    "  cv REAL, compile_ms REAL, run_ms REAL, detail TEXT NOT NULL, slot INTEGER,"
    "  trial INTEGER NOT NULL, time REAL, UNIQUE(run_id, task_id, trial));",
    /* 2: when each record was added, and the lookup's index */
    "ALTER TABLE measurement ADD COLUMN added TEXT;"
    "CREATE INDEX measurement_lookup ON measurement(space_id, task_id, gflops);",
    /* 3: each run's best of each task as the run decided it (a confirmed
     * figure, not the luckiest measurement); a run of an older dtune kept
     * its fastest valid measurement */
    "CREATE TABLE run_best(run_id INTEGER NOT NULL REFERENCES run(id),"
    "  space_id INTEGER NOT NULL REFERENCES space(id), task_id INTEGER NOT NULL REFERENCES task(id),"
    "  config INTEGER NOT NULL, knobs TEXT NOT NULL, gflops REAL NOT NULL, latency_ms REAL NOT NULL,"
    "  PRIMARY KEY(run_id, space_id, task_id));"
    "INSERT INTO run_best SELECT run_id, space_id, task_id, config, knobs, max(gflops), latency_ms"
    "  FROM measurement WHERE result = 'ok' AND gflops > 0 GROUP BY run_id, space_id, task_id;",
};

static int sql_error(dt_db *db, int code, const char *what, dt_error *err)
{
    return dt_error_set(err, code, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->sql));
}

static bool busy(int rc)
{
    return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

static void pause_ms(int ms)
{
    struct timespec ts = { 0, (long)ms * 1000000L };
    nanosleep(&ts, NULL);
}

/* Runs sql (no rows), retrying while another process holds the lock. */
static int exec_retry(dt_db *db, const char *sql, dt_error *err)
{
    int rc = SQLITE_OK;
    for (int i = 0; i <= BUSY_RETRIES; i++) {
        rc = sqlite3_exec(db->sql, sql, NULL, NULL, NULL);
        if (!busy(rc))
            break;
        pause_ms(10 + 10 * i);
    }
    return rc == SQLITE_OK ? 0 : sql_error(db, busy(rc) ? DT_EIO : DT_ELIB, sql, err);
}

static int read_version(dt_db *db, int *version, dt_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->sql, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return sql_error(db, DT_ELIB, "reading the schema version", err);
    int rc = sqlite3_step(st);
    *version = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return busy(rc) ? dt_error_set(err, DT_EIO, "%s: locked by another process", db->path)
                        : sql_error(db, DT_EINVAL, "not a dtune database", err);
    return 0;
}

int dt_db_version(dt_db *db)
{
    int v;
    return read_version(db, &v, NULL) == 0 ? v : -1;
}

/* Applies migration `to` when the file is still below it. */
static int migrate_one(dt_db *db, int to, dt_error *err)
{
    char sql[64];
    int version, rc = exec_retry(db, "BEGIN IMMEDIATE", err);
    if (rc)
        return rc;
    rc = read_version(db, &version, err);
    if (rc == 0 && version < to) {
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", to);
        if (sqlite3_exec(db->sql, migrations[to - 1], NULL, NULL, NULL) != SQLITE_OK)
            rc = sql_error(db, DT_ELIB, "migrating the schema", err);
        else if (sqlite3_exec(db->sql, sql, NULL, NULL, NULL) != SQLITE_OK)
            rc = sql_error(db, DT_ELIB, "setting the schema version", err);
    }
    if (rc == 0)
        return exec_retry(db, "COMMIT", err);
    sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static int migrate(dt_db *db, int target, dt_error *err)
{
    int version, rc = read_version(db, &version, err);
    if (rc)
        return rc;
    if (version > DT_DB_SCHEMA_VERSION)
        return dt_error_set(err, DT_EINVAL, "%s: schema version %d is newer than this dtune's (%d); "
                            "use a newer dtune or another db.path", db->path, version,
                            DT_DB_SCHEMA_VERSION);
    for (int to = version + 1; to <= target && rc == 0; to++)
        rc = migrate_one(db, to, err);
    return rc;
}

/* ---- opening -------------------------------------------------------------------- */

dt_db_params dt_db_params_default(void)
{
    dt_db_params p;
    memset(&p, 0, sizeof p);
    return p;
}

int dt_db_resolve_path(const dt_db_params *params, char *buf, size_t len, dt_error *err)
{
    const char *env = getenv(DT_DB_ENV), *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    int n;
    if (params->path[0])
        n = snprintf(buf, len, "%s", params->path);
    else if (env && env[0])
        n = snprintf(buf, len, "%s", env);
    else if (xdg && xdg[0] == '/')
        n = snprintf(buf, len, "%s/dtune/dtune.db", xdg);
    else if (home && home[0])
        n = snprintf(buf, len, "%s/.local/share/dtune/dtune.db", home);
    else
        return dt_error_set(err, DT_EINVAL, "db.path: no home folder to keep the tuning database "
                            "in; set db.path or %s", DT_DB_ENV);
    if (n < 0 || (size_t)n >= len)
        return dt_error_set(err, DT_EINVAL, "db.path: the path is longer than %zu bytes", len - 1);
    if (strcmp(buf, DT_DB_OFF) == 0)
        buf[0] = '\0';
    return 0;
}

static int make_folder(const char *path, dt_error *err)
{
    char dir[DT_PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return dt_mkdir_p(dir, err);
}

static const char insert_sql[] =
    "INSERT OR IGNORE INTO measurement(run_id, space_id, task_id, task_name, task_index, config,"
    " knobs, result, gflops, latency_ms, repeats, cv, compile_ms, run_ms, detail, slot, trial,"
    " time, added) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
    " ?17, ?18, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))";

/* The schema version and the number of tables, read in one statement so
 * that both come from one snapshot (another process may be creating the
 * schema meanwhile). */
static int read_schema(dt_db *db, int *version, int64_t *tables, dt_error *err)
{
    static const char sql[] = "SELECT (SELECT user_version FROM pragma_user_version),"
                              " (SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%')";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_error(db, busy(sqlite3_errcode(db->sql)) ? DT_EIO : DT_EINVAL,
                         "not a dtune database (its schema cannot be read); left as it is", err);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *version = sqlite3_column_int(st, 0);
        *tables = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return 0;
    return busy(rc) ? dt_error_set(err, DT_EIO, "%s: locked by another process", db->path)
                    : sql_error(db, DT_EINVAL, "not a dtune database (its schema cannot be read); left as it is",
                                err);
}

/* Before anything is written to the file: it must be empty (a new
 * database) or dtune's, and whole. A SQLite file of other tables (user
 * version 0, its own tables) is not dtune's; a damaged one fails SQLite's
 * quick check. Either is refused and left exactly as it was. */
static int check_file(dt_db *db, dt_error *err)
{
    int version = 0;
    int64_t tables = 0;
    int rc = read_schema(db, &version, &tables, err);
    if (rc)
        return rc;
    if (version == 0 && tables > 0)
        return dt_error_set(err, DT_EINVAL, "%s: a SQLite file of other tables, not a dtune database; left "
                            "as it is (db.path, $%s or --db=PATH names another file)", db->path, DT_DB_ENV);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->sql, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK)
        return sql_error(db, DT_EINVAL, "damaged; nothing is written to it", err);
    rc = sqlite3_step(st);
    const char *said = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    bool whole = said && strcmp(said, "ok") == 0;
    if (!whole)
        dt_error_set(err, busy(rc) ? DT_EIO : DT_EINVAL, "%s: damaged (%s); nothing is written to it", db->path,
                     said ? said : sqlite3_errmsg(db->sql));
    sqlite3_finalize(st);
    return whole ? 0 : (busy(rc) ? DT_EIO : DT_EINVAL);
}

static int configure(dt_db *db, int version, dt_error *err)
{
    sqlite3_busy_timeout(db->sql, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(db->sql, 1);
    int rc = check_file(db, err);
    if (rc == 0)
        rc = exec_retry(db, "PRAGMA journal_mode = WAL", err);
    if (rc == 0)
        rc = exec_retry(db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON", err);
    if (rc == 0)
        rc = migrate(db, version, err);
    if (rc == 0 && version == DT_DB_SCHEMA_VERSION &&
        sqlite3_prepare_v2(db->sql, insert_sql, -1, &db->insert, NULL) != SQLITE_OK)
        rc = sql_error(db, DT_ELIB, "preparing the insert", err);
    return rc;
}

static int open_at(const char *path, int version, bool create, dt_db **out, dt_error *err)
{
    *out = NULL;
    if (version < 1 || version > DT_DB_SCHEMA_VERSION)
        return dt_error_set(err, DT_EINVAL, "schema version %d is not in 1..%d", version,
                            DT_DB_SCHEMA_VERSION);
    dt_db *db = calloc(1, sizeof *db);
    if (!db)
        return dt_error_set(err, DT_ENOMEM, "out of memory opening %s", path);
    snprintf(db->path, sizeof db->path, "%s", path);
    int rc = 0;
    if (!create && access(path, F_OK) != 0) {
        rc = dt_error_set(err, DT_ENOTFOUND, "%s: no tuning database there (db.path, $%s or --db=PATH names "
                          "the file; `dtune tune` and `dtune db import` create it)", path, DT_DB_ENV);
        goto fail;
    }
    if (create && (rc = make_folder(path, err)))
        goto fail;
    if (sqlite3_open_v2(path, &db->sql, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), NULL)
        != SQLITE_OK) {
        rc = db->sql ? sql_error(db, DT_EIO, "cannot open", err)
                     : dt_error_set(err, DT_ENOMEM, "out of memory opening %s", path);
        goto fail;
    }
    rc = configure(db, version, err);
    if (rc)
        goto fail;
    *out = db;
    return 0;
fail:
    dt_db_free(db);
    return rc;
}

int dt_db_open_version(const char *path, int version, dt_db **out, dt_error *err)
{
    return open_at(path, version, true, out, err);
}

int dt_db_open(const char *path, dt_db **out, dt_error *err)
{
    return dt_db_open_version(path, DT_DB_SCHEMA_VERSION, out, err);
}

int dt_db_open_existing(const char *path, dt_db **out, dt_error *err)
{
    return open_at(path, DT_DB_SCHEMA_VERSION, false, out, err);
}

void dt_db_free(dt_db *db)
{
    if (!db)
        return;
    sqlite3_finalize(db->insert);
    sqlite3_close(db->sql);
    free(db);
}

/* ---- keys ------------------------------------------------------------------------ */

typedef struct shape_field {
    const char *name;
    size_t offset;             /* of an int in dt_task */
} shape_field;

#define CONV(m) { #m, offsetof(dt_task, conv.m) }
#define MM(m) { #m, offsetof(dt_task, mm.m) }
static const shape_field conv_fields[] = {
    CONV(n), CONV(c_in), CONV(h), CONV(w), CONV(c_out), CONV(kh), CONV(kw), CONV(sh), CONV(sw),
    CONV(ph), CONV(pw), CONV(dh), CONV(dw),
};
static const shape_field mm_fields[] = { MM(b), MM(m), MM(n), MM(k) };
#define NFIELDS(a) (int)(sizeof(a) / sizeof((a)[0]))

static const shape_field *fields_of(dt_op_kind kind, int *n)
{
    bool conv = kind == DT_OP_CONV2D || kind == DT_OP_DEPTHWISE_CONV2D;
    *n = conv ? NFIELDS(conv_fields) : NFIELDS(mm_fields);
    return conv ? conv_fields : mm_fields;
}

void dt_db_task_signature(const dt_task *task, char *buf, size_t len)
{
    int n, used = snprintf(buf, len, "%s", dt_op_kind_name(task->kind));
    const shape_field *f = fields_of(task->kind, &n);
    for (int i = 0; i < n && used > 0 && (size_t)used < len; i++)
        used += snprintf(buf + used, len - (size_t)used, " %s=%d", f[i].name,
                         *(const int *)((const char *)task + f[i].offset));
    if (dt_task_has_epilogue(task) && used > 0 && (size_t)used < len) {
        char parts[64];
        dt_task_epilogue_str(&task->epilogue, parts, sizeof parts);
        snprintf(buf + used, len - (size_t)used, " epilogue=%s", parts);
    }
}

int dt_db_task_parse(const char *signature, dt_task *task, dt_error *err)
{
    char kind[32];
    int at = 0;
    memset(task, 0, sizeof *task);
    task->count = 1;
    if (sscanf(signature, "%31s%n", kind, &at) != 1)
        return dt_error_set(err, DT_EINVAL, "task signature '%s' names no op kind", signature);
    task->kind = DT_OP_KIND_COUNT;
    for (int k = 0; k < DT_OP_KIND_COUNT; k++)
        if (strcmp(dt_op_kind_name((dt_op_kind)k), kind) == 0)
            task->kind = (dt_op_kind)k;
    if (task->kind == DT_OP_KIND_COUNT)
        return dt_error_set(err, DT_EINVAL, "task signature '%s': unknown op kind", signature);
    int n;
    const shape_field *f = fields_of(task->kind, &n);
    const char *p = signature + at;
    for (int i = 0; i < n; i++) {
        char name[16];
        int value, used = 0;
        if (sscanf(p, " %15[a-z_]=%d%n", name, &value, &used) != 2 || strcmp(name, f[i].name) != 0)
            return dt_error_set(err, DT_EINVAL, "task signature '%s': expected %s=N", signature, f[i].name);
        *(int *)((char *)task + f[i].offset) = value;
        p += used;
    }
    char parts[64];
    int used = 0;
    if (sscanf(p, " epilogue=%63[a-z0-9+]%n", parts, &used) == 1) {
        if (dt_task_epilogue_parse(parts, &task->epilogue) != 0 || !dt_task_has_epilogue(task))
            return dt_error_set(err, DT_EINVAL, "task signature '%s': bad epilogue '%s'", signature, parts);
        p += used;
    }
    if (p[strspn(p, " ")])
        return dt_error_set(err, DT_EINVAL, "task signature '%s': text after the shape", signature);
    return dt_task_finish(task, err);
}

void dt_db_space_hash(const dt_space *space, char *buf, size_t len)
{
    uint64_t h = DT_FNV1A_INIT;
    const char *target = dt_target_name(space->target), *kind = dt_op_kind_name(space->task.kind);
    h = dt_fnv1a(h, target, strlen(target) + 1);
    h = dt_fnv1a(h, kind, strlen(kind) + 1);
    for (int k = 0; k < space->nknobs; k++) {
        const dt_knob *knob = &space->knobs[k];
        int32_t head[2] = { (int32_t)knob->type, knob->parts };
        h = dt_fnv1a(h, knob->name, strlen(knob->name) + 1);
        h = dt_fnv1a(h, head, sizeof head);
        for (int o = 0; knob->type == DT_KNOB_CHOICE && o < knob->noptions; o++) {
            int32_t v = knob->options[o];
            h = dt_fnv1a(h, &v, sizeof v);
        }
    }
    snprintf(buf, len, "%016" PRIx64, h);
}

/* ---- statements --------------------------------------------------------------------- */

/* Steps st to its end (a write), retrying while locked; resets it. */
static int step_done(dt_db *db, sqlite3_stmt *st, const char *what, dt_error *err)
{
    int rc = SQLITE_OK;
    for (int i = 0; i <= BUSY_RETRIES; i++) {
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (!busy(rc))
            break;
        pause_ms(10 + 10 * i);
    }
    return rc == SQLITE_DONE ? 0 : sql_error(db, busy(rc) ? DT_EIO : DT_ELIB, what, err);
}

/* The id of the row that `insert` (INSERT OR IGNORE, text parameters
 * 1..n) adds or finds through `select` (the same parameters). */
static int id_of(dt_db *db, const char *insert, const char *select, const char *const *values,
                 int n, int64_t *id, dt_error *err)
{
    sqlite3_stmt *ins = NULL, *sel = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db->sql, insert, -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db->sql, select, -1, &sel, NULL) != SQLITE_OK)
        rc = sql_error(db, DT_ELIB, "preparing a key", err);
    for (int i = 0; rc == 0 && i < n; i++) {
        sqlite3_bind_text(ins, i + 1, values[i], -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(sel, i + 1, values[i], -1, SQLITE_TRANSIENT);
    }
    if (rc == 0)
        rc = step_done(db, ins, "adding a key", err);
    if (rc == 0) {
        int s = sqlite3_step(sel);
        if (s == SQLITE_ROW)
            *id = sqlite3_column_int64(sel, 0);
        else
            rc = sql_error(db, busy(s) ? DT_EIO : DT_ELIB, "finding a key", err);
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(sel);
    return rc;
}

int dt_db_run_id(dt_db *db, const dt_db_run *run, int64_t *id, dt_error *err)
{
    int64_t machine;
    const char *m[] = { run->machine };
    int rc = id_of(db, "INSERT OR IGNORE INTO machine(fingerprint) VALUES(?1)",
                   "SELECT id FROM machine WHERE fingerprint = ?1", m, 1, &machine, err);
    if (rc)
        return rc;
    char machine_id[24], seed[24];
    snprintf(machine_id, sizeof machine_id, "%" PRId64, machine);
    snprintf(seed, sizeof seed, "%" PRIu64, run->seed);
    const char *v[] = { machine_id, run->target, run->model, seed, run->started,
                        run->dtune_version[0] ? run->dtune_version : DT_VERSION, run->id };
    return id_of(db, "INSERT OR IGNORE INTO run(machine_id, target, model, seed, started, dtune_version, uid)"
                 " VALUES(CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?7)",
                 "SELECT id FROM run WHERE machine_id = CAST(?1 AS INTEGER) AND model = ?3 AND seed = ?4"
                 " AND started = ?5 AND uid = ?7 AND ?2 = ?2 AND ?6 = ?6", v, 7, id, err);
}

static int space_and_task(dt_db *db, const dt_space *space, int64_t *space_id, int64_t *task_id,
                          dt_error *err)
{
    char hash[24], signature[DT_DB_SIGNATURE_MAX];
    dt_db_space_hash(space, hash, sizeof hash);
    dt_db_task_signature(&space->task, signature, sizeof signature);
    for (int i = 0; i < db->nkeys; i++) {
        const key_ids *k = &db->keys[i];
        if (strcmp(k->hash, hash) == 0 && strcmp(k->signature, signature) == 0) {
            *space_id = k->space_id;
            *task_id = k->task_id;
            return 0;
        }
    }
    const char *s[] = { dt_target_name(space->target), dt_op_kind_name(space->task.kind), hash };
    int rc = id_of(db, "INSERT OR IGNORE INTO space(target, kind, hash) VALUES(?1, ?2, ?3)",
                   "SELECT id FROM space WHERE target = ?1 AND hash = ?3 AND ?2 = ?2", s, 3, space_id, err);
    const char *t[] = { signature };
    if (rc == 0)
        rc = id_of(db, "INSERT OR IGNORE INTO task(signature) VALUES(?1)",
                   "SELECT id FROM task WHERE signature = ?1", t, 1, task_id, err);
    /* ids made inside a transaction vanish with its rollback: not kept */
    if (rc == 0 && sqlite3_get_autocommit(db->sql) && db->nkeys < KEY_CACHE) {
        key_ids *k = &db->keys[db->nkeys++];
        snprintf(k->hash, sizeof k->hash, "%s", hash);
        snprintf(k->signature, sizeof k->signature, "%s", signature);
        k->space_id = *space_id;
        k->task_id = *task_id;
    }
    return rc;
}

/* NaN goes in as NULL (SQLite keeps no NaN) and comes back as NaN. */
static void bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static double column_real(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

int dt_db_add(dt_db *db, int64_t run_id, const dt_space *space, const dt_measure_record *rec,
              dt_error *err)
{
    int64_t space_id, task_id;
    int rc = space_and_task(db, space, &space_id, &task_id, err);
    if (rc)
        return rc;
    sqlite3_stmt *st = db->insert;
    const dt_measure_result *m = &rec->m;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, space_id);
    sqlite3_bind_int64(st, 3, task_id);
    sqlite3_bind_text(st, 4, rec->task, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, rec->task_index);
    sqlite3_bind_int64(st, 6, (int64_t)rec->config);
    sqlite3_bind_text(st, 7, rec->knobs, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, dt_result_name(m->result), -1, SQLITE_STATIC);
    bind_real(st, 9, m->gflops);
    bind_real(st, 10, m->latency_s * 1e3);
    sqlite3_bind_int(st, 11, m->repeats);
    bind_real(st, 12, m->cv);
    bind_real(st, 13, m->compile_ms);
    bind_real(st, 14, m->run_ms);
    sqlite3_bind_text(st, 15, m->detail, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 16, rec->slot);
    sqlite3_bind_int(st, 17, rec->trial);
    bind_real(st, 18, rec->time);
    rc = step_done(db, st, "adding a measurement", err);
    sqlite3_clear_bindings(st);
    return rc;
}

int dt_db_begin(dt_db *db, dt_error *err)
{
    return exec_retry(db, "BEGIN IMMEDIATE", err);
}

int dt_db_commit(dt_db *db, dt_error *err)
{
    return exec_retry(db, "COMMIT", err);
}

void dt_db_rollback(dt_db *db)
{
    sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- reading -------------------------------------------------------------------------- */

/* The measurement columns every reader selects, in this order, after its own. */
#define RESULT_COLUMNS "m.config, m.knobs, m.result, m.gflops, m.latency_ms, m.repeats, m.cv," \
                       " m.compile_ms, m.run_ms, m.detail"

static void read_result(sqlite3_stmt *st, int at, uint64_t *config, dt_measure_result *m)
{
    memset(m, 0, sizeof *m);
    *config = (uint64_t)sqlite3_column_int64(st, at);
    const char *result = (const char *)sqlite3_column_text(st, at + 2);
    if (!result || dt_result_parse(result, &m->result) != 0)
        m->result = DT_RESULT_COUNT;    /* not a class this dtune knows */
    m->gflops = column_real(st, at + 3);
    m->latency_s = column_real(st, at + 4) / 1e3;
    m->repeats = sqlite3_column_int(st, at + 5);
    m->cv = column_real(st, at + 6);
    m->compile_ms = column_real(st, at + 7);
    m->run_ms = column_real(st, at + 8);
    const char *detail = (const char *)sqlite3_column_text(st, at + 9);
    snprintf(m->detail, sizeof m->detail, "%s", detail ? detail : "");
}

static int prepare(dt_db *db, const char *sql, sqlite3_stmt **st, dt_error *err)
{
    return sqlite3_prepare_v2(db->sql, sql, -1, st, NULL) == SQLITE_OK ? 0
           : sql_error(db, DT_ELIB, "preparing a query", err);
}

/* Steps a query: SQLITE_ROW, SQLITE_DONE, or a DT_E* code with a message. */
static int next_row(dt_db *db, sqlite3_stmt *st, dt_error *err)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        return rc;
    return sql_error(db, busy(rc) ? DT_EIO : DT_ELIB, "reading", err);
}

#define KEY_TABLES " FROM measurement m JOIN run r ON m.run_id = r.id JOIN machine mc ON r.machine_id = mc.id" \
                   " JOIN space s ON m.space_id = s.id JOIN task t ON m.task_id = t.id"
#define KEY_WHERE " WHERE mc.fingerprint = ?1 AND s.target = ?2 AND s.hash = ?3"
#define KEY_JOIN KEY_TABLES KEY_WHERE
/* KEY_JOIN with b, the run's best of the task where m's config is it. */
#define KEY_JOIN_BESTS KEY_TABLES " LEFT JOIN run_best b ON b.run_id = m.run_id AND b.space_id = m.space_id" \
                       " AND b.task_id = m.task_id AND b.config = m.config" KEY_WHERE

int dt_db_each(dt_db *db, const char *machine, const char *target, const char *space_hash,
               int (*fn)(void *ctx, const dt_db_record *rec), void *ctx, dt_error *err)
{
    sqlite3_stmt *st;
    int rc = prepare(db, "SELECT t.signature, " RESULT_COLUMNS KEY_JOIN_BESTS
                     " ORDER BY t.signature, b.gflops IS NOT NULL DESC, b.gflops DESC, m.result = 'ok' DESC,"
                     " m.gflops DESC, m.id", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, machine, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, target, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, space_hash, -1, SQLITE_STATIC);
    while ((rc = next_row(db, st, err)) == SQLITE_ROW) {
        dt_db_record rec = { .signature = (const char *)sqlite3_column_text(st, 0),
                             .knobs = (const char *)sqlite3_column_text(st, 2) };
        read_result(st, 1, &rec.config, &rec.m);
        if (!rec.signature || !rec.knobs)
            continue;
        if ((rc = fn(ctx, &rec)) != 0)
            break;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : rc;
}

/* Prepares sql with ?1..?4 bound to machine, target, space hash, signature. */
static int prepare_key(dt_db *db, const char *sql, const char *const key[4], sqlite3_stmt **st,
                       dt_error *err)
{
    int rc = prepare(db, sql, st, err);
    for (int i = 0; rc == 0 && i < 4; i++)
        sqlite3_bind_text(*st, i + 1, key[i], -1, SQLITE_STATIC);
    return rc;
}

/* Runs sql (prepare_key) and reads its one integer. */
static int key_count(dt_db *db, const char *sql, const char *const key[4], int *n, dt_error *err)
{
    sqlite3_stmt *st;
    int rc = prepare_key(db, sql, key, &st, err);
    if (rc)
        return rc;
    rc = next_row(db, st, err);
    *n = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

int dt_db_task_best(dt_db *db, const char *machine, const char *target, const char *space_hash,
                    const char *signature, dt_db_best *best, dt_error *err)
{
    sqlite3_stmt *st;
    const char *const key[4] = { machine, target, space_hash, signature };
    memset(best, 0, sizeof *best);
    int rc = key_count(db, "SELECT count(*)" KEY_JOIN " AND t.signature = ?4", key, &best->records, err);
    if (rc || best->records == 0)
        return rc;
    rc = prepare_key(db, "SELECT r.started, b.config, b.knobs, b.gflops, b.latency_ms FROM run_best b"
                     " JOIN run r ON b.run_id = r.id JOIN machine mc ON r.machine_id = mc.id"
                     " JOIN space s ON b.space_id = s.id JOIN task t ON b.task_id = t.id"
                     " WHERE mc.fingerprint = ?1 AND s.target = ?2 AND s.hash = ?3 AND t.signature = ?4"
                     " ORDER BY b.gflops DESC, r.id LIMIT 1", key, &st, err);
    if (rc)
        return rc;
    rc = next_row(db, st, err);
    if (rc == SQLITE_DONE) {
        /* no valid result: the task's first failed record names what failed */
        sqlite3_finalize(st);
        rc = prepare_key(db, "SELECT r.started, m.config, m.knobs, 0, 0" KEY_JOIN " AND t.signature = ?4"
                         " ORDER BY m.id LIMIT 1", key, &st, err);
        if (rc)
            return rc;
        rc = next_row(db, st, err);
    }
    if (rc == SQLITE_ROW) {
        snprintf(best->when, sizeof best->when, "%s", (const char *)sqlite3_column_text(st, 0));
        best->config = (uint64_t)sqlite3_column_int64(st, 1);
        snprintf(best->knobs, sizeof best->knobs, "%s", (const char *)sqlite3_column_text(st, 2));
        best->gflops = sqlite3_column_double(st, 3);
        best->latency_ms = sqlite3_column_double(st, 4);
    }
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

int dt_db_set_best(dt_db *db, int64_t run_id, const dt_space *space, uint64_t config, const char *knobs,
                   double gflops, dt_error *err)
{
    if (!(isfinite(gflops) && gflops > 0))
        return dt_error_set(err, DT_EINVAL, "a run's best needs positive finite GFLOPS (got %g)", gflops);
    char named[256];
    if (!knobs) {
        if (config >= space->size)
            return dt_error_set(err, DT_EINVAL, "a run's best: config %llu is outside its space of %llu",
                                (unsigned long long)config, (unsigned long long)space->size);
        dt_point p;
        dt_space_point(space, config, &p);
        dt_space_point_str(space, &p, named, sizeof named);
        knobs = named;
    }
    int64_t space_id, task_id;
    int rc = space_and_task(db, space, &space_id, &task_id, err);
    sqlite3_stmt *st;
    if (rc || (rc = prepare(db, "INSERT INTO run_best(run_id, space_id, task_id, config, knobs, gflops,"
                            " latency_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(run_id, space_id, task_id) DO UPDATE SET"
                            " config = excluded.config, knobs = excluded.knobs, gflops = excluded.gflops,"
                            " latency_ms = excluded.latency_ms", &st, err)))
        return rc;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, space_id);
    sqlite3_bind_int64(st, 3, task_id);
    sqlite3_bind_int64(st, 4, (int64_t)config);
    sqlite3_bind_text(st, 5, knobs, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 6, gflops);
    sqlite3_bind_double(st, 7, space->task.flops / (gflops * 1e9) * 1e3);
    rc = step_done(db, st, "setting a run's best", err);
    sqlite3_finalize(st);
    return rc;
}

int dt_db_stats(dt_db *db, FILE *f, dt_error *err)
{
    sqlite3_stmt *st;
    int rc = prepare(db, "SELECT mc.fingerprint, r.target, count(DISTINCT r.id), count(DISTINCT m.task_id),"
                     " count(m.id), sum(m.result = 'ok'), min(r.started), max(r.started),"
                     " group_concat(DISTINCT r.dtune_version)"
                     " FROM run r JOIN machine mc ON r.machine_id = mc.id"
                     " LEFT JOIN measurement m ON m.run_id = r.id GROUP BY mc.id, r.target ORDER BY mc.id",
                     &st, err);
    if (rc)
        return rc;
    fprintf(f, "database %s (schema %d)\n", db->path, dt_db_version(db));
    int groups = 0;
    while ((rc = next_row(db, st, err)) == SQLITE_ROW) {
        groups++;
        fprintf(f, "machine %s\n  target %s: %d runs, %d tasks, %d measurements (%d ok), "
                "runs started %s .. %s, dtune %s\n",
                (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
                sqlite3_column_int(st, 2), sqlite3_column_int(st, 3), sqlite3_column_int(st, 4),
                sqlite3_column_int(st, 5), (const char *)sqlite3_column_text(st, 6),
                (const char *)sqlite3_column_text(st, 7), (const char *)sqlite3_column_text(st, 8));
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE && groups == 0)
        fprintf(f, "no runs yet\n");
    return rc == SQLITE_DONE ? 0 : rc;
}

/* ---- export back to JSONL ---------------------------------------------------------------- */

static int export_run(dt_db *db, sqlite3_stmt *runs, dt_tunelog *log, int *records, dt_error *err)
{
    dt_run_record run;
    memset(&run, 0, sizeof run);
    int64_t id = sqlite3_column_int64(runs, 0);
    snprintf(run.machine, sizeof run.machine, "%s", (const char *)sqlite3_column_text(runs, 1));
    snprintf(run.target, sizeof run.target, "%s", (const char *)sqlite3_column_text(runs, 2));
    snprintf(run.model, sizeof run.model, "%s", (const char *)sqlite3_column_text(runs, 3));
    run.seed = strtoull((const char *)sqlite3_column_text(runs, 4), NULL, 10);
    snprintf(run.started, sizeof run.started, "%s", (const char *)sqlite3_column_text(runs, 5));
    snprintf(run.dtune_version, sizeof run.dtune_version, "%s", (const char *)sqlite3_column_text(runs, 6));
    snprintf(run.id, sizeof run.id, "%s", (const char *)sqlite3_column_text(runs, 7));
    int rc = dt_tunelog_append_run(log, &run, err);
    sqlite3_stmt *st;
    if (rc || (rc = prepare(db, "SELECT m.task_name, m.task_index, m.slot, m.trial, m.time, " RESULT_COLUMNS
                            " FROM measurement m WHERE m.run_id = ?1 ORDER BY m.id", &st, err)))
        return rc;
    sqlite3_bind_int64(st, 1, id);
    while (rc == 0 && (rc = next_row(db, st, err)) == SQLITE_ROW) {
        dt_measure_record rec;
        memset(&rec, 0, sizeof rec);
        snprintf(rec.task, sizeof rec.task, "%s", (const char *)sqlite3_column_text(st, 0));
        rec.task_index = sqlite3_column_int(st, 1);
        rec.slot = sqlite3_column_int(st, 2);
        rec.trial = sqlite3_column_int(st, 3);
        rec.time = column_real(st, 4);
        read_result(st, 5, &rec.config, &rec.m);
        snprintf(rec.knobs, sizeof rec.knobs, "%s", (const char *)sqlite3_column_text(st, 6));
        rc = dt_tunelog_append_measure(log, &rec, err);
        *records += rc == 0;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : rc;
}

int dt_db_export_log(dt_db *db, const char *path, int *runs, int *records, dt_error *err)
{
    dt_tunelog *log;
    sqlite3_stmt *st;
    *runs = *records = 0;
    int rc = prepare(db, "SELECT r.id, mc.fingerprint, r.target, r.model, r.seed, r.started, r.dtune_version, r.uid"
                     " FROM run r JOIN machine mc ON r.machine_id = mc.id ORDER BY r.id", &st, err);
    if (rc)
        return rc;
    if ((rc = dt_tunelog_open(path, &log, err))) {
        sqlite3_finalize(st);
        return rc;
    }
    while (rc == 0 && (rc = next_row(db, st, err)) == SQLITE_ROW) {
        rc = export_run(db, st, log, records, err);
        *runs += rc == 0;
    }
    sqlite3_finalize(st);
    dt_tunelog_close(log);
    return rc == SQLITE_DONE ? 0 : rc;
}
