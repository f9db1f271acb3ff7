/* db.h — the tuning database: every measurement of every run on this
 * machine, kept in one SQLite file, for later runs to start from.
 *
 * A run's tuning.jsonl stays its own durable record; the database is a
 * second copy across runs (`db.path`, default $XDG_DATA_HOME/dtune/dtune.db,
 * else ~/.local/share/dtune/dtune.db; the DTUNE_DB environment variable
 * replaces that default; `off` disables it). Each measurement is kept with
 * its keys:
 *   machine   dt_machine_fingerprint (CPU model, family, SIMD flags, cores;
 *             GPU name, compute capability, driver; "replay")
 *   target    cpu or cuda
 *   task      its signature: the op kind and every shape parameter
 *             ("conv2d n=1 c_in=64 h=56 ...", dt_db_task_signature)
 *   space     a hash of the knob schema (dt_db_space_hash), so a changed
 *             space never reads old indices as new configs
 *   run       model, seed, start time and the dtune version that measured it
 * A lookup (dt_db_each) returns only records of one machine, target and
 * space hash: another machine's or another space's records are never used.
 *
 * The file is in WAL mode with a busy timeout, and every write that meets a
 * lock held by another process is retried: two runs writing at once lose
 * nothing. Each insert is one transaction (an import is one for the whole
 * file), so a crash leaves the database whole. The schema carries its
 * version in PRAGMA user_version and is brought up to date by ordered
 * migrations when opened; a newer database than this dtune knows is refused.
 *
 * A handle belongs to one thread at a time.
 */
#ifndef DTUNE_DB_H
#define DTUNE_DB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dtune/error.h"
#include "dtune/model.h"
#include "dtune/result.h"
#include "dtune/space.h"
#include "dtune/tunelog.h"

/* The schema version this dtune writes. */
#define DT_DB_SCHEMA_VERSION 3
/* The environment variable that replaces the per-user default path. */
#define DT_DB_ENV "DTUNE_DB"
/* The path value that disables the database. */
#define DT_DB_OFF "off"
/* A task with records starts by re-measuring this many of its best configs. */
#define DT_DB_REMEASURE 3
/* A task signature, with its NUL, at most. */
#define DT_DB_SIGNATURE_MAX 256

/* The database's settings (config key db.path). */
typedef struct dt_db_params {
    char path[DT_PATH_MAX];    /* "" = the per-user default; "off" = none */
} dt_db_params;

dt_db_params dt_db_params_default(void);

/* The file params names: params->path when set, else $DTUNE_DB when set,
 * else $XDG_DATA_HOME/dtune/dtune.db, else $HOME/.local/share/dtune/dtune.db.
 * Writes "" when the result is "off". Returns 0, or DT_EINVAL when no home
 * folder is known or the path does not fit. */
int dt_db_resolve_path(const dt_db_params *params, char *buf, size_t len, dt_error *err);

typedef struct dt_db dt_db;

/* Opens (creating it and its folder) the database at path and migrates it
 * to DT_DB_SCHEMA_VERSION: for the commands that write (tune, db import).
 * A file that is not empty and not a dtune database (other tables), or that
 * is damaged (SQLite's quick check), is refused before anything is written
 * to it. Returns 0, DT_EINVAL (not a dtune database, damaged, or a newer
 * schema), DT_EIO or DT_ELIB with a message. Free with dt_db_free. */
int dt_db_open(const char *path, dt_db **out, dt_error *err);

/* dt_db_open of a database that must exist already (the commands that only
 * read: db stats, best, export-log, export --db): a missing file is
 * DT_ENOTFOUND and nothing is created. */
int dt_db_open_existing(const char *path, dt_db **out, dt_error *err);

/* dt_db_open that migrates only up to version (<= DT_DB_SCHEMA_VERSION):
 * for tests of the migrations. */
int dt_db_open_version(const char *path, int version, dt_db **out, dt_error *err);

/* Accepts NULL. */
void dt_db_free(dt_db *db);

/* The schema version of the open file. */
int dt_db_version(dt_db *db);

/* The signature of task into buf (at least DT_DB_SIGNATURE_MAX bytes):
 * "KIND name=value ..." with every shape parameter, then " epilogue=PARTS"
 * (dt_task_epilogue_str) when the task has an epilogue, so records of
 * kernels with and without one never mix. dt_db_task_parse reads it back. */
void dt_db_task_signature(const dt_task *task, char *buf, size_t len);

/* A task (name "", count 1, derived fields filled) from its signature.
 * Returns 0 or DT_EINVAL. */
int dt_db_task_parse(const char *signature, dt_task *task, dt_error *err);

/* 16 hex digits: FNV-1a of the target and what makes two spaces of one kind
 * (dt_transfer_same_kind): op kind, each knob's name, type, parts and, for a
 * choice, its values. Axis lengths are the task's, not the schema's. */
void dt_db_space_hash(const dt_space *space, char *buf, size_t len);

/* The run a batch of records belongs to. Runs are told apart by machine,
 * model, seed, start time and the log's run id: adding the same run again
 * (a resume, a second import) finds the first. */
typedef struct dt_db_run {
    char id[24];               /* the run record's id; "" for logs without one */
    char machine[256];
    char target[16];
    char model[DT_PATH_MAX];
    uint64_t seed;
    char started[40];
    char dtune_version[32];    /* "" = this dtune's */
} dt_db_run;

/* The id of run in the database, added when new. Returns 0 or an error. */
int dt_db_run_id(dt_db *db, const dt_db_run *run, int64_t *id, dt_error *err);

/* Adds one measurement of run_id, in a space of its task. A record that is
 * already there (same run, task and trial) is left as it is. Returns 0 or
 * an error (DT_EIO when the database stayed locked through every retry). */
int dt_db_add(dt_db *db, int64_t run_id, const dt_space *space, const dt_measure_record *rec,
              dt_error *err);

/* Brackets many dt_db_add calls in one transaction; rollback undoes them. */
int dt_db_begin(dt_db *db, dt_error *err);
int dt_db_commit(dt_db *db, dt_error *err);
void dt_db_rollback(dt_db *db);

/* One record of a lookup: its task's signature and the measurement. */
typedef struct dt_db_record {
    const char *signature;
    uint64_t config;
    const char *knobs;
    dt_measure_result m;
} dt_db_record;

/* Calls fn for every record of machine, target and space hash, grouped by
 * task signature; within a task the runs' bests first (dt_db_set_best, the
 * best first, so the first record is dt_db_task_best's), then the rest by
 * GFLOPS (failed results last).
 * fn returning non-zero stops with that code. Returns 0 or an error. */
int dt_db_each(dt_db *db, const char *machine, const char *target, const char *space_hash,
               int (*fn)(void *ctx, const dt_db_record *rec), void *ctx, dt_error *err);

/* One task's summary for `dtune db best`. */
typedef struct dt_db_best {
    int records;               /* measurements of the task (every result) */
    double gflops;             /* best valid; 0 when none */
    double latency_ms;         /* that measurement's latency */
    uint64_t config;
    char knobs[256];
    char when[40];             /* the best one's run start (UTC) */
} dt_db_best;

/* The best of task signature for machine, target and space hash: of the
 * runs' bests (dt_db_set_best) the highest GFLOPS (the first run's of
 * equals); when no run has one, the first failed record with gflops 0;
 * records 0 when there is none. Returns 0 or an error. */
int dt_db_task_best(dt_db *db, const char *machine, const char *target, const char *space_hash,
                    const char *signature, dt_db_best *best, dt_error *err);

/* Sets run_id's best of space's task: config (knobs as logged; NULL: as
 * space names it) at gflops, the figure
 * the run decided on (a confirmed median where it confirms, dt_run_confirm),
 * which is not always its fastest measurement. Replaces the run's best of
 * the task from before. Returns 0, DT_EINVAL (gflops not positive) or an
 * error. */
int dt_db_set_best(dt_db *db, int64_t run_id, const dt_space *space, uint64_t config, const char *knobs,
                   double gflops, dt_error *err);

/* Counts for `dtune db stats`, one line per machine and target to f. */
int dt_db_stats(dt_db *db, FILE *f, dt_error *err);

/* Every run and its measurements back to JSONL at path (a new tuning log:
 * per run a run record, its machine and dtune version in the run record,
 * then its measurements). *runs and *records count what was written. */
int dt_db_export_log(dt_db *db, const char *path, int *runs, int *records, dt_error *err);

#endif
