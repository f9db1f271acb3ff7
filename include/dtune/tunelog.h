/* tunelog.h — the durable tuning log (RUN_DIR/tuning.jsonl).
 *
 * One JSON object per line, written with jansson. Each append is written,
 * flushed and fsync'd before the call returns, so a record the caller has seen
 * succeed survives a crash or a SIGKILL. Record types:
 *
 *   {"type":"run", "model":..., "target":..., "seed":..., "started":"ISO-8601"}
 *   {"type":"measure", "task":"conv1", "task_index":0, "config":123, "knobs":"...",
 *    "result":"ok", "gflops":..., "latency_ms":..., "repeats":..., "cv":...,
 *    "compile_ms":..., "run_ms":..., "slot":..., "trial":..., "time":...}
 *   {"type":"slot", "slot":..., "task":"conv1", "task_index":0, "time":...,
 *    "model_latency_ms":..., "scores":[...], "decision_ms":...}
 *
 * "time" is seconds of tuning budget elapsed in the run (it continues across
 * resumes). Replay reads the file back: a truncated or garbled last line is
 * reported and skipped (a crash mid-write); a garbled line elsewhere is an
 * error naming path:line.
 */
#ifndef DTUNE_TUNELOG_H
#define DTUNE_TUNELOG_H

#include <stdbool.h>
#include <stdint.h>

#include "dtune/error.h"
#include "dtune/model.h"
#include "dtune/result.h"

typedef struct dt_measure_record {
    char task[DT_NAME_MAX];
    int task_index;
    uint64_t config;           /* index in the task's space */
    char knobs[256];           /* human form of the config (optional) */
    dt_measure_result m;
    int slot;                  /* -1 during warm-up */
    int trial;                 /* 1-based count of this task's measurements */
    double time;               /* run seconds elapsed when it finished */
} dt_measure_record;

#define DT_MAX_SCORES 256

typedef struct dt_slot_record {
    int slot;
    char task[DT_NAME_MAX];
    int task_index;
    double time;
    double model_latency_ms;
    double decision_ms;        /* scheduling overhead of this slot's choice */
    int nscores;
    double scores[DT_MAX_SCORES];
} dt_slot_record;

typedef struct dt_run_record {
    char model[DT_PATH_MAX];
    char target[16];
    uint64_t seed;
    char started[40];
} dt_run_record;

typedef struct dt_tunelog dt_tunelog;

/* Opens path for appending (creates it, mode 0644). */
int dt_tunelog_open(const char *path, dt_tunelog **out, dt_error *err);
/* Each append: one line, write + fflush + fsync before returning. */
int dt_tunelog_append_run(dt_tunelog *log, const dt_run_record *r, dt_error *err);
int dt_tunelog_append_measure(dt_tunelog *log, const dt_measure_record *r, dt_error *err);
int dt_tunelog_append_slot(dt_tunelog *log, const dt_slot_record *r, dt_error *err);
void dt_tunelog_close(dt_tunelog *log);

/* Callbacks for replay; any may be NULL. A callback returning non-zero stops
 * the replay with that code. */
typedef struct dt_tunelog_visitor {
    int (*run)(void *ctx, const dt_run_record *r);
    int (*measure)(void *ctx, const dt_measure_record *r);
    int (*slot)(void *ctx, const dt_slot_record *r);
    void *ctx;
} dt_tunelog_visitor;

typedef struct dt_tunelog_stats {
    int lines;                 /* complete records read */
    bool dropped_tail;         /* last line was truncated or garbled and skipped */
    char tail_message[256];    /* what was wrong with it */
} dt_tunelog_stats;

/* Reads every record in order. DT_ENOTFOUND if the file does not exist,
 * DT_EPARSE (with path:line) for a bad line before the last. */
int dt_tunelog_replay(const char *path, const dt_tunelog_visitor *visitor,
                      dt_tunelog_stats *stats, dt_error *err);

/* One task's measured history, in log order. */
typedef struct dt_history {
    int n, cap;
    dt_measure_record *records;
    int best;                  /* index of the best ok record, -1 if none */
    double best_gflops;
    int last_improvement;      /* trial number of the last new best */
} dt_history;

/* Rebuilds one history per task of model (array of model->ntasks, owned by
 * the caller; free with dt_histories_free). Records naming a task not in the
 * model are an error (DT_EINVAL) naming the line. Also returns the last slot
 * number and elapsed time seen (-1 / 0 when none). */
int dt_tunelog_load_histories(const char *path, const dt_model *model,
                              dt_history **out, int *last_slot, double *elapsed,
                              dt_tunelog_stats *stats, dt_error *err);

/* Appends a record to a history, updating best. Returns 0 or DT_ENOMEM. */
int dt_history_push(dt_history *h, const dt_measure_record *r);
void dt_histories_free(dt_history *h, int n);

#endif
