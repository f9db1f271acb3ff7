/* daemon_internal.h — the run's state (dt_run, and dt_run_task per task),
 * shared by the daemon's files only: daemon.c (the steps of a run),
 * daemon_loop.c (the one run loop: warm-up, slots, the run's end),
 * daemon_run.c (bookkeeping), daemon_setup.c (open, resume, close),
 * daemon_retime.c (the run's end), daemon_publish.c (reports, status
 * line), daemon_belief.c (belief) and daemon_db.c (the tuning database).
 * Not for callers outside the daemon: `dtune tune` goes through daemon.h,
 * and an MPI worker measures from a run_view.h, never from a dt_run. */
#ifndef DTUNE_DAEMON_INTERNAL_H
#define DTUNE_DAEMON_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"
#include "dtune/belief.h"
#include "dtune/config.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/runstate.h"
#include "dtune/scheduler.h"
#include "dtune/server.h"
#include "dtune/space.h"
#include "dtune/transfer.h"
#include "dtune/tunelog.h"
#include "dtune/tuner.h"

/* One task of the run: its space and tuner (alive for the whole run), its
 * statistics and the belief's view of it. */
typedef struct dt_run_task {
    dt_space space;
    dt_tuner *tuner;
    size_t history_bytes;      /* dt_tuner_history_bytes after its last turn */
    int group;                 /* similarity group for the gradient policy */
    int trials;                /* measured, every result class */
    double best_gflops;        /* 0 until a valid measurement */
    uint64_t best_index;
    double min_run_seconds;    /* the runner's least time for an ok measurement (the
                                  first ones also build the task's reference);
                                  0 = none yet */
    int last_improvement;      /* trial number of the last new best */
    double warm_latency_ms;    /* latency of the first valid measurement */
    uint64_t reference_config; /* that measurement's config: the drift reference
                                  (daemon_confirm.c), valid once warm_latency_ms > 0 */
    double peak_gflops;        /* dt_roofline_task_peak_gflops: the belief's
                                  normalisation and the scheduler's ceiling */
    double bound_gbs;          /* the bound's bandwidth (dt_task_bound's: bytes over
                                  their time at the level's streams); 0 = unknown */
    int slots;
    int measured_slots;        /* slots that measured at least one trial */
    int trials_at_close;       /* trials when the last slot (or warm-up) closed */
    bool dead;                 /* failed: no valid config found in warm-up */
    double reference_ms;       /* a failed task's reference implementation */
    int failures[DT_RESULT_COUNT]; /* measurements per result class */
    char last_failure[160];    /* detail of the latest failed measurement */
    double *curve;             /* best-so-far GFLOPS after each trial */
    int ncurve, capcurve;
    int nhistory;
    double latency_history[DT_SCHED_WINDOW];
    dt_belief_forecast pred;   /* belief prediction at the next slot's end */
    bool pred_ok;
    dt_belief_curve fit;       /* the belief's fitted curve, GFLOPS; n = 0: none */
    dt_slot_fit logged;        /* the newest fit and prediction tuning.jsonl holds
                                  for the task */
    double cost_model_gflops;  /* the tuner's cost-model estimate of the best
                                  reachable, as its latest record logged; 0 = none */
    double last_slot_trials;   /* trials of this task's last slot (horizon) */
    int transfer_records;      /* the run's records at the tuner's last transfer */
} dt_run_task;

typedef struct dt_run_ticker dt_run_ticker;

/* Drift readings whose median is the machine's speed. */
#define DT_RUN_DRIFT_WINDOW 5

/* One run in this process. One thread at a time changes it (the daemon's,
 * or a slot thread holding daemon_loop.c's lock); the ticker and the status
 * server read state under its own lock, and the clock's fields (t0,
 * elapsed_base, remote) once set. */
typedef struct dt_run {
    /* what is tuned, and where it is measured */
    const dt_config *cfg;
    dt_model *model;
    dt_run_task *tasks;        /* model->ntasks */
    dt_measurer *measurer;     /* NULL where the remote probes (it times everything) */
    const dt_daemon_remote *remote; /* measures the batches instead of measurer; NULL: none */
    /* the parts the run owns */
    dt_tunelog *log;
    dt_scheduler *sched;
    dt_server *server;
    dt_transfer *transfer;     /* every task's records, for tuner.transfer; NULL when off */
    struct dt_run_db *db;      /* daemon_db.c's link to the tuning database; NULL when none */
    dt_belief_pool *belief;    /* daemon_belief.c's; NULL until the first prediction */
    dt_run_ticker *ticker;     /* daemon_publish.c's once-a-second clock */
    struct dt_run_pool *pool;  /* daemon_loop.c's slots in flight; NULL outside dt_run_loop */
    dt_run_state state;        /* what /status, the reports and the terminal show */
    bool state_ready;
    /* the run's clock and counts */
    double elapsed_base;       /* run seconds before this process started */
    double t0;                 /* monotonic seconds when this process opened the run:
                                  setting up and resuming count as budget too */
    int slot;                  /* last slot number; -1 before warm-up ends */
    int logged_slot;           /* highest slot number of the log's measure records: a slot
                                  a killed run left open has one and no slot record */
    int measured_now;
    int resumed_records;
    bool resumed_run_record;   /* the run's own log held its run record */
    double decision_seconds;   /* scheduling overhead */
    double tuner_overhead;     /* tuner's non-measurement seconds */
    double reports_at;         /* dt_now_seconds() when latency.svg and report.html
                                  were last rewritten; 0: not yet */
    double reports_took;       /* seconds that rewrite took */
    /* confirmed figures (daemon_confirm.c) */
    double drift_ratio[DT_RUN_DRIFT_WINDOW]; /* newest drift readings, a ring */
    int ndrift;                /* readings so far */
    struct dt_run_retimed *retimed; /* a resume's re-timing records, per task; NULL: none */
    bool raw_bests;            /* replaying a warm start: a faster measurement is the
                                  best at once (dt_run_confirms false) */
    /* the process */
    char run_dir[DT_PATH_MAX];
    int lock_fd;               /* RUN_DIR/lock, flock'd; -1 before it is taken */
    bool tty;
    bool pinned;               /* the process was moved off the timing cores */
    cpu_set_t old_cpus;        /* the opening thread's cores before, given
                                  back to it at close */
} dt_run;

/* Opens the run of cfg measured by remote (NULL: by its own measurer; see
 * dt_daemon_run_remote). A stop (*stop set) ends a wait for the run
 * directory's lock with an error. */
int dt_run_open(const dt_config *cfg, const dt_daemon_remote *remote, const atomic_int *stop,
                dt_run **out, dt_error *err);

void dt_run_close(dt_run *r);

/* ---- daemon_loop.c ---- */
/* The steps of a run daemon.c lends to dt_run_loop, which calls back into
 * daemon.c only through them (daemon.c calls it). */
typedef struct dt_run_steps {
    /* one task's warm-up: batches until a valid measurement, or the task
     * failed, a stop or the budget's end */
    int (*warm_task)(dt_run *r, int k, dt_error *err);
    /* whether no warm-up may start (a stop, the budget's end) */
    bool (*warm_up_cut)(const dt_run *r);
    /* after the last warm-up: the warm-up's record, or every task failed */
    int (*end_warm_up)(dt_run *r, dt_error *err);
    dt_stop_reason (*should_stop)(const dt_run *r);
    /* the scheduler's pick among the tasks not held, published as slot
     * r->slot + 1 (r->slot moved to it), every task's row of the decision in
     * rows (ntasks); *k -1: none picked */
    int (*pick)(dt_run *r, const bool *held, int *k, dt_task_score *rows, double *decision_ms,
                dt_error *err);
    /* task k's tuner for slot number slot, its measurements logged */
    int (*run_slot)(dt_run *r, int slot, int k, dt_error *err);
    /* the slot's end: its record (with rows, the decision that started it;
     * NULL: none did), its statistics, the reports */
    int (*write_slot)(dt_run *r, int slot, int k, const dt_task_score *rows, double decision_ms,
                      dt_error *err);
    /* the run's end once no slot is in flight: dt_run_retime through the
     * run's measurer or workers */
    int (*retime)(dt_run *r, dt_error *err);
    /* asks every slot to end after its point in flight, as a signal does */
    void (*stop)(void);
    void (*set_phase)(dt_run *r, const char *phase, int warmup_task);
} dt_run_steps;

/* The run, to a stop (*reason): the warm-up, slots (one in flight per
 * worker of r->remote, else one) and the re-timing at the end. 0 or the
 * first error. */
int dt_run_loop(dt_run *r, const dt_run_steps *steps, dt_stop_reason *reason, dt_error *err);
/* One request of task k's slot to the remote, called where the slot runs:
 * with several slots, its thread, through the daemon's thread, which sends
 * it to the slot's worker and hands back the answer; else (one slot, or
 * outside the loop) to worker 0 and back at once. *measured results
 * filled; 0 or the remote's error. */
int dt_run_request(dt_run *r, int task, const dt_space *space, const dt_point *points, int n,
                   double deadline, dt_measure_result *results, int *measured, dt_error *err);

/* Task k's probe (probe->reference says which): on the remote's workers
 * where it has send_probe (the worker of the slot holding k, else worker
 * 0), else by the run's own measurer (probe->where then ""). 0 or a DT_E*
 * code. */
int dt_run_probe(dt_run *r, int k, dt_daemon_probe *probe, dt_error *err);

/* ---- daemon_run.c ---- */
/* The run's clock in seconds: the remote's where it has one, else the
 * monotonic clock. */
double dt_run_now(const dt_run *r);
double dt_run_elapsed(const dt_run *r);
/* Task k's latency at its best (its reference's once failed; INFINITY
 * before a valid measurement), and the model's: the sum over tasks of
 * count × latency. */
double dt_run_task_latency(const dt_run *r, int k);
double dt_run_model_latency(const dt_run *r);
int dt_run_account(dt_run *r, int k, uint64_t index, const dt_measure_result *m, int trial);
/* Whether a valid measurement of task k faster than its best must be
 * confirmed before it counts (measure.confirm_rounds > 0 and the task has a
 * best): dt_run_account then leaves the best alone. */
bool dt_run_confirms(const dt_run *r, int k);
/* A result's logged measurement time: compile plus run, ms (a backend that
 * logs neither: latency times repeats). */
double dt_run_logged_ms(const dt_measure_result *m);
/* A log record's task name, config index and knobs for task k's point p. */
void dt_run_name_point(const dt_run *r, int k, const dt_point *p, char *task, size_t task_len,
                       uint64_t *config, char *knobs, size_t knobs_len);
/* Whether task k has gone scheduler.finish_after trials without a new best. */
bool dt_run_task_finished(const dt_run *r, int k);
int dt_run_close_slot(dt_run *r, int slot, int k, double elapsed, double latency_ms);
/* Marks task k failed (reason, reference latency) in the run and its state. */
void dt_run_mark_failed(dt_run *r, int k, const char *reason, double reference_ms);

/* The tuning database (daemon_db.c): at set-up, after the log is open, opens
 * it and starts each task from its records; adds each logged measurement;
 * closes it. A database failure is reported once and never stops the run. */
void dt_run_db_open(dt_run *r);
/* Fills a new log's run record with what the database keys runs by: the
 * machine's fingerprint, a random run id and the dtune version. */
void dt_run_db_stamp(const dt_run *r, dt_run_record *run);
void dt_run_db_add(dt_run *r, int k, const dt_measure_record *rec);
/* Writes task k's best as the run holds it now (dt_db_set_best). */
void dt_run_db_best(dt_run *r, int k);
void dt_run_db_close(dt_run *r);

/* Fills pred / pred_ok / fit of every task from the belief model. */
int dt_run_predict(dt_run *r, dt_error *err);
void dt_run_belief_free(dt_run *r);

/* After a live slot (csv_row true) appends its latency.csv row and rewrites
 * latency.svg and report.html when they are due (REPORT_SECONDS after the
 * last rewrite, and never more than REPORT_SHARE of the run's time); at the
 * run's end (csv_row false) always rewrites them. Always rewrites best.json
 * and prints the status line. */
int dt_run_publish(dt_run *r, bool csv_row, dt_error *err);

/* daemon_retime.c: the run's end. The seconds the budget holds back for
 * re-timing each task's best configs (each task's least run time of an ok
 * measurement times the configs and rounds to time; 0 when the run will not
 * re-time). */
double dt_run_retime_reserve(const dt_run *r);
/* Measures n points of task under limit; returns how many (the first ones)
 * or a negative DT_E* code. */
typedef int (*dt_run_measure_fn)(dt_run *r, int task, const dt_space *space,
                                 const dt_point *points, int n, dt_measure_result *results,
                                 const dt_measure_limit *limit, dt_error *err);
/* Configs of one task timed side by side: each round times every side's
 * points back to back, in the same measurement process. */
typedef struct dt_run_side {
    int task;
    dt_point points[DT_TUNER_TOP_MAX];
    int n;
    double *ms;                /* [round * n + i]: latency in ms, NAN when not ok */
} dt_run_side;
/* Logs one result of a side-by-side round (round 0-based). */
typedef int (*dt_run_side_log_fn)(dt_run *r, int k, const dt_point *p, const dt_measure_result *m,
                                  int round, void *ctx, dt_error *err);
/* Up to rounds rounds of sides (nsides) through measure under limit, each
 * result handed to log and kept in its side's ms; *done counts the whole
 * rounds. 0, DT_ECANCELED when the limit (a stop, the deadline) cut a
 * round, or the measurer's or log's error. */
int dt_run_side_by_side(dt_run *r, dt_run_measure_fn measure, dt_run_side *sides, int nsides,
                        int rounds, const dt_measure_limit *limit, dt_run_side_log_fn log,
                        void *ctx, int *done, dt_error *err);
/* The median of point i's ok latencies over rounds (ms), NAN unless more
 * than half are ok. */
double dt_run_side_median(const dt_run_side *t, int i, int rounds);
/* Re-times each task's budget.retime_top best configs side by side for
 * budget.retime_rounds rounds through measure, logs every result and makes
 * each task's best median its result; a stop cuts it and leaves the logged
 * figures. 0 or the measurer's or the log's error. */
int dt_run_retime(dt_run *r, dt_run_measure_fn measure, const atomic_int *stop, dt_error *err);

/* A resume's re-timing records: each task's newest re-timing is kept
 * (dt_run_retime_replay; 0 or DT_ENOMEM), and once the log is read, with
 * apply, the winners of each whole one (budget.retime_rounds rounds)
 * become the tasks' results as at the live run's end; either way what was
 * kept is freed (dt_run_retime_replayed; 0 or DT_ENOMEM). */
int dt_run_retime_replay(dt_run *r, int k, const dt_retime_record *rec);
int dt_run_retime_replayed(dt_run *r, bool apply);
/* A measure record of task k after its re-timing (the run went on): drops
 * what dt_run_retime_replay kept of it. */
void dt_run_retime_forget(dt_run *r, int k);

/* ---- daemon_confirm.c ---- */
/* After task k's measurement *m of candidate (logged and accounted in slot
 * slot): when it would be the task's new best, times it beside the best for
 * measure.confirm_rounds rounds through measure under limit (the slot's:
 * a stop or the deadline cuts the rounds; each timing a "confirm" record), logs the decision ("confirmed") and applies it; *m becomes the
 * candidate's confirmed figure (what its tuner records). 0 or the
 * measurer's or the log's error. */
int dt_run_confirm(dt_run *r, int slot, int k, const dt_point *candidate, dt_measure_result *m,
                   dt_run_measure_fn measure, const dt_measure_limit *limit, dt_error *err);
/* A confirmation's decision into task k's best, its tuner and the shared
 * state, live and on resume alike. 0 or DT_ENOMEM. */
int dt_run_confirm_apply(dt_run *r, int k, const dt_confirmed_record *rec);
/* One confirm timing's time into the shared state's share. */
void dt_run_confirm_count(dt_run *r, const dt_measure_result *m);
/* At slot's end: times task k's reference config once through measure
 * (a "drift" record), and applies it. 0 or the measurer's or the log's
 * error. */
int dt_run_drift(dt_run *r, int slot, int k, dt_run_measure_fn measure,
                 const dt_measure_limit *limit, dt_error *err);
/* A drift reading into the machine's speed, live and on resume alike. */
void dt_run_drift_apply(dt_run *r, int k, const dt_measure_result *m);

/* Starts the ticker thread: at least once a second it moves the shared
 * state's elapsed time and redraws the terminal's live line, so both tick
 * within slots too. Needs r->t0 set. Without a thread (none could be made)
 * the run goes on and the line moves at slot ends only. */
void dt_run_ticker_start(dt_run *r);

/* Stops and joins the ticker; safe when none runs. */
void dt_run_ticker_stop(dt_run *r);

/* On a terminal, prints the newest decision as one compact line: the chosen
 * task and the next two with their scores. */
void dt_run_say_decision(dt_run *r);

#endif
