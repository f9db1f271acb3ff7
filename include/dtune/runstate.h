/* runstate.h — a snapshot of a tuning run, shared by the daemon (which fills
 * it as the run goes), the report writer, the terminal line and the status
 * server.
 *
 * The daemon owns one dt_run_state and guards it with its mutex: the tuning
 * thread writes every field under it (each measurement, each slot's start and
 * end, the phase), and the daemon's ticker thread moves `elapsed` at least
 * once a second. Readers take a copy with dt_run_state_copy under that mutex,
 * so the terminal line, /status, /metrics and the page all show one moment
 * and never a half-written slot.
 */
#ifndef DTUNE_RUNSTATE_H
#define DTUNE_RUNSTATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "dtune/belief.h"
#include "dtune/model.h"
#include "dtune/result.h"

typedef struct dt_task_state {
    char name[DT_NAME_MAX];
    char kind[24];
    char shape[128];
    int count;                 /* weight w_k */
    double gflop;              /* one execution */
    double useful_gflop;       /* one execution's useful FLOPs (model.h) x 1e-9: a
                                  kernel that skips the taps on padding computes
                                  only these; 0 where best.json did not say */
    double best_gflops;        /* 0 until a valid measurement */
    double best_latency_ms;    /* of one execution; warm-up latency until tuned;
                                  the reference implementation's when failed */
    double peak_gflops;        /* target's roofline peak for this task (0:
                                  unknown), measured when the run (or its
                                  resume) starts; raised to a kernel's rate
                                  of useful FLOPs when one beats it */
    bool peak_from_kernel;     /* peak_gflops is a kernel's measured rate */
    double bound_ms;           /* the task's bound (dt_roofline_task_bound: FLOPs at
                                  the peak, bytes at the streams of bound_level),
                                  one execution; 0: unknown */
    char bound_level[16];      /* memory level that holds the task's working set
                                  ("L1", "L2", "L3", "DRAM"); "" when no bandwidth
                                  is known */
    bool bound_from_kernel;    /* a kernel beat the probes' bound: bound_ms is its
                                  latency (the probes were wrong) */
    uint64_t best_config;      /* index in the task's space */
    char best_knobs[256];
    double logged_best_ms;     /* the task's latency before the run's end re-timed
                                  its best configs and best_* became the re-timed
                                  winner's median (daemon_retime.c): its confirmed
                                  figure (daemon_confirm.c), or without confirmation
                                  the fastest logged measurement's; 0 = not re-timed */
    int trials;
    int slots;
    bool finished;
    char failed[DT_REASON_MAX]; /* why no config could run; "" unless failed */
    dt_belief_curve fit;       /* the belief's fitted curve of the best GFLOPS, with
                                  its 90 % band, at the last decision; n = 0: none */
} dt_task_state;

/* One task's row of one scheduling decision: the task's score as the policy
 * saw it, and what decided it where the score alone does not say. */
typedef struct dt_task_score {
    double score;              /* the policy's value; -INFINITY: it may not pick the task */
    double cut_ms;             /* the policy's predicted model-latency cut of one
                                  more slot (dt_scheduler_predicted_cut); NAN: none */
    double cut_lo_ms;          /* 90 % credible interval of the belief's cut
                                  (for dynatune with a prior, cut_ms blends the
                                  prior in and may lie outside); NAN: none */
    double cut_hi_ms;
    char note[16];             /* "untried", "finished", "failed", "exhausted",
                                  "no prediction", or "" */
    dt_belief_forecast pred;   /* the belief's best GFLOPS at the end of the task's
                                  next slot, with its 90 % interval; all zero: none */
} dt_task_score;

/* A task's new best: the best-so-far curve is a step at each of these. */
typedef struct dt_best_step {
    int task;
    int trial;                 /* 1-based trial of the task */
    double gflops;
} dt_best_step;

/* Decisions whose every task's row the run state keeps: the newest this
 * many (the ranking /status lists). Older decisions keep the chosen task's
 * row and the runner-up's, so a long run's state grows by one
 * dt_slot_decision a slot, not by a row of every task. */
#define DT_RUN_STATE_RANKED 32

/* One scheduling decision: which task got the slot and when, with the rows
 * of the chosen task and of the runner-up; the newest DT_RUN_STATE_RANKED
 * decisions' ntasks rows are dt_run_state_scores(rs, i). */
typedef struct dt_slot_decision {
    int slot;
    int task;
    double elapsed;            /* run seconds at the decision */
    double decision_ms;        /* time the policy took */
    int runner_up;             /* second in the ranking (dt_run_state_rank), -1: none;
                                  set by dt_run_state_add_decision, as are the rows */
    dt_task_score chosen;      /* task's row; zero when task is out of range */
    dt_task_score second;      /* runner_up's row; zero when none */
} dt_slot_decision;

/* A slot in flight in a run that keeps several at once (an MPI run's
 * N - 1, one per worker); a task's warm-up there counts as one. */
typedef struct dt_slot_flight {
    int slot;                  /* slot number; -1: the task's warm-up */
    int task;
    int worker;                /* the worker measuring it, from 1 (its MPI rank) */
    double started;            /* run seconds when it began */
} dt_slot_flight;

/* One point of the model-latency-over-time curve (one per slot). */
typedef struct dt_latency_point {
    double elapsed;            /* run seconds */
    int slot;
    int task;                  /* task that held the slot, -1 for warm-up */
    double model_latency_ms;
} dt_latency_point;

typedef struct dt_run_state {
    pthread_mutex_t lock;
    char run_dir[DT_PATH_MAX];
    char model[DT_NAME_MAX];
    char target[16];
    char policy[32];
    char strategy[32];
    int threads;               /* measure.threads the kernels were timed at; 0 = not recorded */
    char phase[32];            /* "starting", "warm-up", "tuning", "done" */
    char peak_probe[64];       /* which probe gave the peak (dt_roofline's probe), "" unknown */
    int warmup_task;           /* task being warmed up, -1 when none */
    double elapsed;            /* run seconds, across resumes */
    double slot_started;       /* elapsed when the current slot began, -1: none */
    double budget;             /* total_seconds */
    double target_latency_ms;  /* 0 = none */
    double start_latency_ms;   /* model latency after warm-up */
    double latency_ms;         /* model latency now */
    double reached_at;         /* elapsed when the target was met, -1 if not */
    double history_bytes;      /* what grows with the records measured: the tuners'
                                  histories and training workspaces and the transfer
                                  store (dt_tuner_history_bytes, dt_transfer_bytes),
                                  as of the last tuner turn; dt_run_state_history_bytes
                                  adds the state's own */
    double measure_ms;         /* logged time (compile + run) of the tuners' measurements */
    double confirm_ms;         /* ... of the confirmations' timings (daemon_confirm.c) */
    double drift_ms;           /* ... of the drift reference's timings */
    int confirmations;         /* would-be new bests timed beside their task's best */
    int confirmed;             /* of them, those that became the best */
    double machine_speed;      /* the machine's speed relative to the run's start (the
                                  median of the newest drift readings: a task's reference
                                  config's first latency over its latency now; 1.05 =
                                  5 % faster); 0 = no reading yet */
    int drift_readings;        /* drift timings so far */
    int slot;
    int current_task;          /* -1 when none; with several slots in flight,
                                  the newest slot's task */
    int nflight;               /* slots in flight; 0 in a run of one slot at a time */
    dt_slot_flight *flight;    /* nflight of ntasks (a task holds one slot at most) */
    int ntasks;
    dt_task_state *tasks;      /* ntasks */
    int npoints, cap_points;
    dt_latency_point *points;  /* latency over time */
    int ndecisions, cap_decisions;
    dt_slot_decision *decisions; /* one per slot the policy decided, oldest first */
    dt_task_score *ranked;     /* DT_RUN_STATE_RANKED x ntasks, a ring: the rows of
                                  decision i at (i % DT_RUN_STATE_RANKED) * ntasks
                                  for the newest DT_RUN_STATE_RANKED; NULL before
                                  the first decision */
    int nsteps, cap_steps;
    dt_best_step *steps;       /* every task's new bests, in order */
} dt_run_state;

/* The confirmations' share of the logged measurement time (0 to 1; 0 when
 * nothing was measured). */
double dt_run_state_confirm_share(const dt_run_state *rs);
/* Whether the machine's speed moved more than DT_RUN_STATE_DRIFT_SAY from
 * the run's start (what the live line says). */
#define DT_RUN_STATE_DRIFT_SAY 0.05
bool dt_run_state_drifted(const dt_run_state *rs);

/* Allocates tasks for model (names, kinds, shapes, counts, gflop filled) and
 * initialises the mutex. Returns 0 or DT_ENOMEM. */
int dt_run_state_init(dt_run_state *rs, const dt_model *model);
void dt_run_state_destroy(dt_run_state *rs);

/* Appends a latency point (caller holds lock). Returns 0 or DT_ENOMEM. */
int dt_run_state_add_point(dt_run_state *rs, const dt_latency_point *p);

/* Appends a decision and its ntasks score rows (caller holds lock): d's
 * runner_up, chosen and second are filled from rows. Returns 0 or
 * DT_ENOMEM. */
int dt_run_state_add_decision(dt_run_state *rs, const dt_slot_decision *d,
                              const dt_task_score *rows);

/* A slot in flight begins (*f) or worker's ends (caller holds lock). */
void dt_run_state_flight_begin(dt_run_state *rs, const dt_slot_flight *f);
void dt_run_state_flight_end(dt_run_state *rs, int worker);

/* Appends a task's new best (caller holds lock). Returns 0 or DT_ENOMEM. */
int dt_run_state_add_step(dt_run_state *rs, const dt_best_step *step);

/* A score row as tuning.jsonl keeps it: the score and, where pred holds one
 * (dt_belief_forecast_ok), the belief's prediction; no predicted cut. pred
 * may be NULL: none. */
dt_task_score dt_run_state_logged_score(double score, const dt_belief_forecast *pred);

/* The ntasks score rows of decision i (0 <= i < ndecisions), or NULL when
 * it is older than the newest DT_RUN_STATE_RANKED. */
const dt_task_score *dt_run_state_scores(const dt_run_state *rs, int i);

/* Task k's row of decision i: from its rows while kept, else the chosen
 * task's or the runner-up's; NULL for another task of an older decision. */
const dt_task_score *dt_run_state_row(const dt_run_state *rs, int i, int k);

/* Task indices of decision i ranked as the policy ranked them: the chosen
 * task first, then by score, highest first, tasks it could not pick last;
 * for a decision whose rows are gone, the chosen task, the runner-up, then
 * the rest in index order. order holds ntasks. */
void dt_run_state_rank(const dt_run_state *rs, int i, int *order);

/* Bytes the run is meant to keep as it goes: history_bytes and the state's
 * latency points, decisions and new bests (those of a slot, some 200 bytes,
 * are all that grows with slots). */
double dt_run_state_history_bytes(const dt_run_state *rs);

/* Budget seconds left (0 once spent). */
double dt_run_state_budget_left(const dt_run_state *rs);

/* Deep copy of src into dst (dst uninitialised; free with
 * dt_run_state_destroy). Takes src->lock. Returns 0 or DT_ENOMEM. */
int dt_run_state_copy(dt_run_state *dst, dt_run_state *src);

/* Start latency / latency now; NAN while either is unknown. */
double dt_run_state_speedup(const dt_run_state *rs);

/* Name of the task holding the slot, or NULL between slots. */
const char *dt_run_state_current_task(const dt_run_state *rs);

/* Task t's best latency as a share of its bound: bound_ms / best_latency_ms,
 * in (0, 1]; 0 while untuned or the bound is unknown. */
double dt_task_state_bound_share(const dt_task_state *t);

/* The guard that keeps shares at most 1: when t's best beats its bound (its
 * latency below bound_ms, or its rate above peak_gflops), lowers the bound to
 * the kernel's latency (bound_from_kernel) and raises the peak to its rate
 * (peak_from_kernel). Returns true when it changed either: the probes read
 * below what a kernel reaches, which the caller reports. */
bool dt_task_state_hold_bound(dt_task_state *t);

/* Model latency = sum_k w_k * best latency of task k (ms). */
double dt_run_state_model_latency(const dt_run_state *rs);

/* Initialises rs with ntasks zeroed task states and no points (current_task
 * and reached_at -1), for readers that rebuild a run state from files rather
 * than from a model (dt_report_load_best). Returns 0 or DT_ENOMEM. */
int dt_run_state_init_empty(dt_run_state *rs, int ntasks);

#endif
