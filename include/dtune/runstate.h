/* runstate.h — a snapshot of a tuning run, shared by the daemon (which fills
 * it after every slot), the report writer and the status server.
 *
 * The daemon owns one dt_run_state and guards it with its mutex; readers take
 * a copy with dt_run_state_copy under that mutex, so a reader never sees a
 * half-written slot.
 */
#ifndef DTUNE_RUNSTATE_H
#define DTUNE_RUNSTATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "dtune/model.h"
#include "dtune/result.h"

typedef struct dt_task_state {
    char name[DT_NAME_MAX];
    char kind[24];
    char shape[128];
    int count;                 /* weight w_k */
    double gflop;              /* one execution */
    double best_gflops;        /* 0 until a valid measurement */
    double best_latency_ms;    /* of one execution; warm-up latency until tuned;
                                  the reference implementation's when failed */
    double peak_gflops;        /* target's roofline peak for this task */
    uint64_t best_config;      /* index in the task's space */
    char best_knobs[256];
    int trials;
    int slots;
    bool finished;
    char failed[DT_REASON_MAX]; /* why no config could run; "" unless failed */
} dt_task_state;

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
    char phase[32];            /* "warm-up", "tuning", "done", ... */
    double elapsed;            /* run seconds, across resumes */
    double budget;             /* total_seconds */
    double target_latency_ms;  /* 0 = none */
    double start_latency_ms;   /* model latency after warm-up */
    double latency_ms;         /* model latency now */
    double reached_at;         /* elapsed when the target was met, -1 if not */
    int slot;
    int current_task;          /* -1 when none */
    int ntasks;
    dt_task_state *tasks;      /* ntasks */
    int npoints, cap_points;
    dt_latency_point *points;  /* latency over time */
} dt_run_state;

/* Allocates tasks for model (names, kinds, shapes, counts, gflop filled) and
 * initialises the mutex. Returns 0 or DT_ENOMEM. */
int dt_run_state_init(dt_run_state *rs, const dt_model *model);
void dt_run_state_destroy(dt_run_state *rs);

/* Appends a latency point (caller holds lock). Returns 0 or DT_ENOMEM. */
int dt_run_state_add_point(dt_run_state *rs, const dt_latency_point *p);

/* Deep copy of src into dst (dst uninitialised; free with
 * dt_run_state_destroy). Takes src->lock. Returns 0 or DT_ENOMEM. */
int dt_run_state_copy(dt_run_state *dst, dt_run_state *src);

/* Start latency / latency now; NAN while either is unknown. */
double dt_run_state_speedup(const dt_run_state *rs);

/* Name of the task holding the slot, or NULL between slots. */
const char *dt_run_state_current_task(const dt_run_state *rs);

/* Model latency = sum_k w_k * best latency of task k (ms). */
double dt_run_state_model_latency(const dt_run_state *rs);

/* Initialises rs with ntasks zeroed task states and no points (current_task
 * and reached_at -1), for readers that rebuild a run state from files rather
 * than from a model (dt_report_load_best). Returns 0 or DT_ENOMEM. */
int dt_run_state_init_empty(dt_run_state *rs, int ntasks);

#endif
