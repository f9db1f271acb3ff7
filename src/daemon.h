/* daemon.h — one tuning run: `dtune tune`.
 *
 * dt_daemon_run loads the model of cfg, resumes from RUN_DIR/tuning.jsonl if
 * it exists, warms every task up to one valid measurement, then runs slots —
 * the scheduler picks a task, that task's tuner measures for one slot — until
 * the model latency reaches the target, the budget is spent, every task is
 * finished, or SIGINT/SIGTERM arrives. Every measurement is in the log before
 * the next one starts; after every slot latency.csv, latency.svg and best.json
 * are rewritten and the status server (if any) sees the new state.
 */
#ifndef DTUNE_DAEMON_H
#define DTUNE_DAEMON_H

#include <stdbool.h>

#include "dtune/config.h"
#include "dtune/error.h"
#include "dtune/result.h"
#include "dtune/roofline.h"

typedef enum dt_stop_reason {
    DT_STOP_NONE = 0,
    DT_STOP_TARGET,       /* model latency reached target_latency_ms */
    DT_STOP_BUDGET,       /* total_seconds spent */
    DT_STOP_FINISHED,     /* every task finished or exhausted */
    DT_STOP_SIGNAL,       /* SIGINT or SIGTERM */
    DT_STOP_MAX_SLOTS     /* budget.max_slots slots done */
} dt_stop_reason;

typedef struct dt_daemon_result {
    dt_stop_reason reason;
    int slots;                 /* slot count at the end (across resumes) */
    int measurements;          /* measured in this process */
    int resumed_records;       /* measurements read back from the log */
    double elapsed;            /* run seconds at the end (across resumes) */
    double start_latency_ms;
    double latency_ms;
    /* The tasks without a valid measurement at the end, "NAME (why)" each,
     * "; "-separated (why: the reason no config runs, or "not measured
     * yet"); "" when every task has one. Cut short past its size. */
    char unmeasured[1024];
} dt_daemon_result;

/* Runs to a stop. Installs SIGINT/SIGTERM handlers for its duration (a second
 * SIGINT exits the process at once). Returns 0 (see result->reason), or an
 * error: DT_EINVAL for bad input (the log does not match the model, ...),
 * DT_ENODEV (no CUDA device), others for runtime failures. */
int dt_daemon_run(const dt_config *cfg, dt_daemon_result *result, dt_error *err);

/* A task's roofline or its reference implementation, timed by a worker
 * (dt_daemon_remote's send_probe) as the run's own measurer would time it. */
typedef struct dt_daemon_probe {
    bool reference;            /* the reference's time (dt_measurer_reference),
                                  else the roofline (dt_measurer_roofline) */
    dt_measure_result result;  /* reference: filled as dt_measurer_reference fills it */
    dt_roofline roofline;      /* roofline: filled as dt_measurer_roofline fills it */
    char where[32];            /* who timed it, for the log and reports ("mpi rank 1") */
} dt_daemon_probe;

/* Measurers in other processes (MPI workers, mpi_run.c) or simulated ones
 * (bench/mpi_bench.c). The daemon calls send and receive from its own
 * thread only, never two at once. It keeps one slot in flight per worker,
 * each on a different task (daemon_loop.c); with one worker, as on its own
 * measurer, one slot runs on its thread and every batch goes to worker 0. */
typedef struct dt_daemon_remote {
    int workers;               /* slots in flight, one per worker: >= 1 */
    int max_configs;           /* most configs one request may carry: >= 1 */
    /* Hands worker w (idle) n <= max_configs points of task k's space to
     * measure in order, none started at or past deadline (run clock
     * seconds, see now; 0: none); the answer will fill results[0..n).
     * 0 or a DT_E* code with err filled. */
    int (*send)(void *ctx, int w, int task, const dt_space *space, const dt_point *points, int n,
                double deadline, dt_measure_result *results, dt_error *err);
    /* Waits for the next answer of a worker that has a request out: sets
     * *w and *measured (its results filled; fewer than sent when the
     * deadline or a stop ended the request). 0, or a DT_E* code with err
     * filled: a worker that failed, did not answer in time or answered
     * out of turn. */
    int (*receive)(void *ctx, int *w, int *measured, dt_error *err);
    /* Optional: hands worker w (idle) task's probe (probe->reference says
     * which); the answer comes through receive as a request's does
     * (*measured 1) and fills *probe. With it the run opens no measurer of
     * its own and times nothing itself: the roofline is asked of worker 0
     * at the start, a failed task's reference of the worker of its slot.
     * NULL: the run's own measurer times both. */
    int (*send_probe)(void *ctx, int w, int task, dt_daemon_probe *probe, dt_error *err);
    /* The fingerprint (dt_machine_fingerprint) of the machines the workers
     * measure on, which the log's run record and the database key the
     * run's records by; NULL: this process's own. */
    const char *machine;
    /* The run's clock in seconds (NULL: the monotonic clock); a simulation
     * moves it as its measurements end. May be called from any thread. */
    double (*now)(void *ctx);
    void *ctx;
} dt_daemon_remote;

/* dt_daemon_run with every batch measured by remote (NULL: by the run's own
 * measurer; a remote without send_probe leaves the run's own measurer to
 * time failed tasks' references and give peaks). */
int dt_daemon_run_remote(const dt_config *cfg, const dt_daemon_remote *remote,
                         dt_daemon_result *result, dt_error *err);

/* Reads cfg's model, builds every task's knob space and reads
 * output.warm_start (when set) exactly as dt_daemon_run would, measuring
 * nothing: 0, or the error (and message) `dtune tune` would stop with. For
 * `dtune check`. */
int dt_daemon_check_inputs(const dt_config *cfg, dt_error *err);

const char *dt_stop_reason_name(dt_stop_reason r);

#endif
