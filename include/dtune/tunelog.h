/* tunelog.h — the durable tuning log (RUN_DIR/tuning.jsonl).
 *
 * One JSON object per line, written with jansson. Each append is written,
 * flushed and fsync'd before the call returns, so a record the caller has seen
 * succeed survives a crash or a SIGKILL. Record types:
 *
 *   {"type":"run", "model":..., "target":..., "seed":..., "started":"ISO-8601",
 *    "id":..., "machine":..., "dtune_version":...}   (the last three optional)
 *   {"type":"measure", "task":"conv1", "task_index":0, "config":123, "knobs":"...",
 *    "result":"ok", "gflops":..., "latency_ms":..., "repeats":..., "cv":...,
 *    "compile_ms":..., "run_ms":..., "slot":..., "trial":..., "time":...,
 *    "cost_model_gflops":...}   (the last optional)
 *   {"type":"slot", "slot":..., "task":"conv1", "task_index":0, "time":...,
 *    "model_latency_ms":..., "scores":[...], "decision_ms":...,
 *    "fits":[{"task_index":0, "first":..., "horizon":..., "median":[...],
 *             "lo":[...], "hi":[...], "pred":{"gflops":..., "lo":...,
 *             "hi":..., "horizon":...}}]}   ("fits" and "pred" optional)
 *   {"type":"failed", "task":"conv1", "task_index":0, "reason":"...",
 *    "reference_ms":..., "time":...}
 *   {"type":"retime", measurement fields as "measure"'s, "round":..., "time":...}
 *   {"type":"confirm", measurement fields, "round":..., "slot":..., "time":...}
 *   {"type":"confirmed", "task":"conv1", "task_index":0, "candidate":123,
 *    "incumbent":45, "candidate_ms":..., "incumbent_ms":..., "rounds":...,
 *    "accepted":0|1, "slot":..., "time":...}
 *   {"type":"drift", measurement fields, "slot":..., "time":...}
 *
 * A "confirm" record is one timing of a confirmation (daemon_confirm.c): a
 * measured config that would have become its task's new best timed again
 * beside the task's best, both in each round; the "confirmed" record after
 * a confirmation's "confirm" records holds its decision: each config's
 * median over the rounds (NaN when fewer than half were ok) and whether the
 * candidate became the best. A "drift" record is one timing of a task's
 * fixed reference config, read as the machine's speed.
 *
 * A slot record's "fits" are the tasks whose belief changed since the log's
 * previous slot record: the fitted curve (dt_belief_curve, in GFLOPS) at the
 * slot's end, and the prediction the slot's decision saw ("pred",
 * dt_belief_forecast: best GFLOPS at the horizon with its 90 % interval).
 * An entry holds both whole: empty arrays say the belief holds no fit of
 * that task any more, no "pred" that the decision had no prediction of it.
 * A reader keeps each task's newest entry: its curve is the fit at the last
 * decision, and the prediction of every decision is the newest entry's at
 * that decision's slot record.
 *
 * A measure record's "cost_model_gflops" is the tuner's cost model's
 * estimate, made when it proposed the record's batch, of the best GFLOPS
 * the task can reach (dt_tuner_cost_model_gflops); it is left out when the
 * tuner had no such estimate (no cost model yet, as in the first batch).
 *
 * A "failed" record marks a task that no config of its space could run: the
 * run goes on without it and counts it at its reference implementation's
 * measured time (reference_ms, one execution).
 *
 * "time" is seconds of tuning budget elapsed in the run (it continues across
 * resumes). Replay reads the file back: a last line without its newline is
 * the torn write of a crash, reported and skipped (and cut off by the next
 * open); any other bad line, a newline-terminated last one included, is an
 * error naming path:line, and nothing is deleted. A record, newline
 * included, is at most DT_TUNELOG_RECORD_MAX bytes, for writing and reading
 * alike.
 */
#ifndef DTUNE_TUNELOG_H
#define DTUNE_TUNELOG_H

#include <stdbool.h>
#include <stdint.h>

#include "dtune/belief.h"
#include "dtune/error.h"
#include "dtune/model.h"
#include "dtune/result.h"

#define DT_TUNELOG_RECORD_MAX (1 << 20)
/* A record's "time" (run seconds) is at most this, about three years of
 * tuning: a larger one was not written by a run. */
#define DT_TUNELOG_TIME_MAX 1e8

typedef struct dt_measure_record {
    char task[DT_NAME_MAX];
    int task_index;
    uint64_t config;           /* index in the task's space */
    char knobs[256];           /* human form of the config (optional) */
    dt_measure_result m;
    int slot;                  /* -1 during warm-up */
    int trial;                 /* 1-based count of this task's measurements */
    double time;               /* run seconds elapsed when it finished */
    double cost_model_gflops;  /* the cost model's estimate of the best the task
                                  can reach; 0 = none (not logged). Positive and
                                  finite otherwise, or the append is DT_EINVAL */
} dt_measure_record;

#define DT_MAX_SCORES 256

/* One task's belief in a slot record: its fitted curve and the prediction
 * at the slot's decision. */
typedef struct dt_slot_fit {
    int task_index;            /* 0 .. DT_MAX_SCORES - 1 */
    dt_belief_curve curve;     /* GFLOPS; n = 0: the belief holds no fit of the task */
    dt_belief_forecast pred;   /* all zero (not dt_belief_forecast_ok): none */
} dt_slot_fit;

typedef struct dt_slot_record {
    int slot;
    char task[DT_NAME_MAX];
    int task_index;
    double time;
    double model_latency_ms;
    double decision_ms;        /* scheduling overhead of this slot's choice */
    int nscores;
    double scores[DT_MAX_SCORES];
    int nfits;                 /* 0 .. DT_MAX_SCORES */
    const dt_slot_fit *fits;   /* borrowed: the caller's when appending; in replay,
                                  valid until the visitor returns */
} dt_slot_record;

typedef struct dt_failed_record {
    char task[DT_NAME_MAX];
    int task_index;
    char reason[DT_REASON_MAX];  /* why no config could run, for people */
    double reference_s;          /* reference implementation, one execution */
    double time;
    char timed_on[32];           /* who timed the reference ("mpi rank 2");
                                    "" = the run's own process */
} dt_failed_record;

/* One re-timing of one of a task's best configs at the run's end (see
 * daemon_retime.c): the task's top configs are measured again side by side,
 * round after round, and the best median is the task's result. */
typedef struct dt_retime_record {
    char task[DT_NAME_MAX];
    int task_index;
    uint64_t config;           /* index in the task's space */
    char knobs[256];           /* human form of the config (optional) */
    dt_measure_result m;
    int round;                 /* 1-based */
    double time;               /* run seconds elapsed when it finished */
} dt_retime_record;

/* One timing of a confirmation (see the file's comment). */
typedef struct dt_confirm_record {
    char task[DT_NAME_MAX];
    int task_index;
    uint64_t config;           /* the candidate's or the incumbent's index */
    char knobs[256];           /* human form of the config (optional) */
    dt_measure_result m;
    int round;                 /* 1-based */
    int slot;                  /* -1 during warm-up */
    double time;               /* run seconds elapsed when it finished */
} dt_confirm_record;

/* A confirmation's decision. */
typedef struct dt_confirmed_record {
    char task[DT_NAME_MAX];
    int task_index;
    uint64_t candidate;        /* the config that would have become the best */
    uint64_t incumbent;        /* the task's best before */
    double candidate_ms;       /* median over the rounds; NAN: fewer than half ok */
    double incumbent_ms;
    int rounds;                /* rounds timed (fewer than asked when a stop cut them) */
    int accepted;              /* 1: the candidate is the task's best at candidate_ms;
                                  0: the incumbent stays, at incumbent_ms when finite */
    int slot;
    double time;
} dt_confirmed_record;

/* The figures rec decides, in GFLOPS of a task of flops: the incumbent's
 * (its median; before_gflops, its figure before, when it has none) and the
 * candidate's (its median; the incumbent's when it has none, or when it was
 * refused yet its median is the faster). The task's best becomes the
 * candidate at *candidate when rec->accepted, else stays at *incumbent. The
 * run and a replay of its log (resume, db import) decide by this alone. */
void dt_confirmed_figures(const dt_confirmed_record *rec, double flops, double before_gflops,
                          double *candidate, double *incumbent);

/* One timing of a task's fixed reference config for the machine's drift. */
typedef struct dt_drift_record {
    char task[DT_NAME_MAX];
    int task_index;
    uint64_t config;
    char knobs[256];
    dt_measure_result m;
    int slot;
    double time;
} dt_drift_record;

typedef struct dt_run_record {
    char model[DT_PATH_MAX];
    char target[16];
    uint64_t seed;
    char started[40];
    char id[24];               /* random, tells apart runs started in one second;
                                  "" = not recorded */
    char machine[256];         /* dt_machine_key: fingerprint and measurement conditions
                                  (a bare fingerprint before conditions were recorded);
                                  "" = not recorded */
    char dtune_version[32];    /* "" = not recorded */
    /* What a resume must find unchanged ("" = not recorded, unchecked): */
    char backend[16];          /* the backend measured with (dt_backend_i.name) */
    char policy[32];           /* scheduler.policy */
    char strategy[32];         /* tuner.strategy */
    char tasks[48];            /* the model's tasks in order: "N tasks, HASH" of their
                                  names, shapes, epilogues and counts */
} dt_run_record;

typedef struct dt_tunelog dt_tunelog;

/* Opens path for appending (creates it, mode 0644) and fsyncs its directory.
 * If the file's last line lacks its newline (a crash mid-write), that line,
 * the one replay reports as the dropped tail, is cut off so the next record
 * starts a clean line; nothing else is ever cut. Holds an exclusive flock until close: a second
 * open of the same file, by any process, fails with DT_EIO. DT_ENOTFOUND when
 * the directory does not exist. */
int dt_tunelog_open(const char *path, dt_tunelog **out, dt_error *err);
/* Each append first checks that the path still names the open file (device
 * and inode): a deleted log is written back from the open file (a message
 * on stderr) and appending goes on there; a replaced one is left alone, the
 * open file is copied to PATH.run-PID and the append fails with DT_EIO.
 * Each append: one line, written by one write() loop on an O_APPEND fd and
 * fsync'd before returning, so a record whose append returned 0 survives a
 * crash. Appends from several threads are serialised. DT_EINVAL for a record
 * that cannot be logged (result class, nscores, nfits or a fit's points
 * out of range; a fit's pred is logged only when dt_belief_forecast_ok; a
 * negative or non-finite cost_model_gflops), DT_EIO when
 * the write or fsync fails: a half-written line is cut back off, and after a
 * failed fsync the log refuses further appends. Doubles round-trip exactly
 * (NaN and infinities as "nan", "inf", "-inf"); latency is logged in ms, so
 * latency_s comes back within one rounding. uint64 values above INT64_MAX are
 * logged as decimal strings. Empty knobs and m.detail are left out of the
 * line; m.detail is logged as "detail". Strings that are not UTF-8 are logged
 * with their non-ASCII bytes replaced by '?'. */
int dt_tunelog_append_run(dt_tunelog *log, const dt_run_record *r, dt_error *err);
int dt_tunelog_append_measure(dt_tunelog *log, const dt_measure_record *r, dt_error *err);
int dt_tunelog_append_slot(dt_tunelog *log, const dt_slot_record *r, dt_error *err);
int dt_tunelog_append_failed(dt_tunelog *log, const dt_failed_record *r, dt_error *err);
int dt_tunelog_append_retime(dt_tunelog *log, const dt_retime_record *r, dt_error *err);
int dt_tunelog_append_confirm(dt_tunelog *log, const dt_confirm_record *r, dt_error *err);
int dt_tunelog_append_confirmed(dt_tunelog *log, const dt_confirmed_record *r, dt_error *err);
int dt_tunelog_append_drift(dt_tunelog *log, const dt_drift_record *r, dt_error *err);
void dt_tunelog_close(dt_tunelog *log);

/* Callbacks for replay; any may be NULL. A callback returning non-zero stops
 * the replay with that code. */
typedef struct dt_tunelog_visitor {
    int (*run)(void *ctx, const dt_run_record *r);
    int (*measure)(void *ctx, const dt_measure_record *r);
    int (*slot)(void *ctx, const dt_slot_record *r);
    void *ctx;
    int (*failed)(void *ctx, const dt_failed_record *r);
    int (*retime)(void *ctx, const dt_retime_record *r);
    int (*confirm)(void *ctx, const dt_confirm_record *r);
    int (*confirmed)(void *ctx, const dt_confirmed_record *r);
    int (*drift)(void *ctx, const dt_drift_record *r);
} dt_tunelog_visitor;

typedef struct dt_tunelog_stats {
    int lines;                 /* complete records read */
    bool dropped_tail;         /* last line lacked its newline and was skipped */
    char tail_message[256];    /* what was wrong with it */
} dt_tunelog_stats;

/* Reads every record in order. DT_ENOTFOUND if the file does not exist,
 * DT_EPARSE (with path:line) for a line that is not a JSON object or is over
 * DT_TUNELOG_RECORD_MAX, wherever it stands. A last line that lacks its
 * newline (never acknowledged by an append) is skipped and reported in
 * stats. A record with a missing field,
 * a field of the wrong type, an optional number that is not a positive
 * finite one, or an unknown "type" is DT_EINVAL naming path:line and the
 * field; unknown keys are ignored. stats may be NULL. A
 * visitor that fails may fill err (through its ctx) itself; otherwise replay
 * writes a message naming the line. */
int dt_tunelog_replay(const char *path, const dt_tunelog_visitor *visitor,
                      dt_tunelog_stats *stats, dt_error *err);

#endif
