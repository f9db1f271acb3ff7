/* measure.h — measuring batches of candidates: a builder thread pool, one
 * runner, and the coefficient-of-variation stopping rule (AdaTune).
 *
 * dt_measurer_run builds a batch in parallel on `measure.builders` threads
 * and runs the artifacts one at a time on the runner; builders are paused
 * while the runner times, so compilation never disturbs a timing.
 *
 * The CV rule is shared by every backend: after each micro-batch the GFLOPS
 * estimate is added; timing stops once at least min_batches estimates exist
 * and std/mean < cv_threshold, or at max_repeats.
 */
#ifndef DTUNE_MEASURE_H
#define DTUNE_MEASURE_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtune/backend.h"
#include "dtune/error.h"
#include "dtune/result.h"
#include "dtune/space.h"

/* measure.confirm_rounds at most. */
#define DT_CONFIRM_ROUNDS_MAX 25

/* The measurement settings (config keys measure.*), read by the measurer,
 * the backends and their runners. */
struct dt_measure_params {
    double cv_threshold;       /* stop timing when std/mean of the estimates is below */
    int min_batches;           /* micro-batches before the CV test */
    int micro_batch;           /* kernel calls per micro-batch; 0 = auto */
    int max_repeats;           /* micro-batches at most */
    double timeout_seconds;    /* one candidate's run */
    double compile_timeout_seconds; /* one candidate's compile; 0 = dt_measure_compile_timeout's rule */
    int builders;              /* compile threads */
    int cache_mb;              /* cpu: artifact cache size limit, LRU; 0 = none */
    int threads;               /* threads of a CPU kernel */
    bool check_output;         /* check each output against the reference */
    double tolerance;          /* relative error the check allows */
    bool flush_l2;             /* cuda: flush L2 between micro-batches */
    bool cold_weights;         /* cpu: the kernel's weights, bias and workspace evicted from
                                  every cache level before each timed call, as a network's
                                  layer finds them; false: timed warm, back to back */
    bool spread_input;         /* cpu, threads > 1: the input, residual and output rewritten
                                  by the kernel's threads in turn before each timed call, as the
                                  layer before leaves them in a network; false: as the last
                                  call did */
    int limit_memory_mb;       /* address space of the runner and each compiler (proclimit.h);
                                  0 = DT_PROCESS_MEMORY_SHARE of physical memory */
    double limit_cpu_seconds;  /* CPU time of one candidate's compile or measurement; 0 = none */
    int limit_open_files;      /* descriptors of the runner and each compiler; 0 = none */
    int cuda_device;           /* cuda: ordinal of the device the runner times on and the
                                  device query describes (among CUDA_VISIBLE_DEVICES) */
    int confirm_rounds;        /* the daemon's: rounds a would-be new best is timed beside
                                  its task's best before it replaces it; 0 = never */
};

/* The defaults (dtune check --help lists them). */
dt_measure_params dt_measure_params_default(void);

/* The compile limit of one candidate: compile_timeout_seconds, or when that
 * is 0, max(60 s, 6 x timeout_seconds) (a cold compiler cache or a loaded
 * machine makes the first compiles slow). */
double dt_measure_compile_timeout(const dt_measure_params *measure);

/* --- CV early stopping --- */
typedef struct dt_measure_cv_stop {
    int min_batches;
    int max_repeats;
    double cv_threshold;
    int n;
    double mean, m2;           /* Welford running moments of the estimates */
} dt_measure_cv_stop;

void dt_measure_cv_stop_init(dt_measure_cv_stop *s, int min_batches, int max_repeats, double cv_threshold);
/* Adds one micro-batch estimate; returns true when timing should stop. */
bool dt_measure_cv_stop_add(dt_measure_cv_stop *s, double estimate);
double dt_measure_cv_stop_mean(const dt_measure_cv_stop *s);
double dt_measure_cv_stop_cv(const dt_measure_cv_stop *s);

/* --- Inputs and the output check, the same in every runner --- */

/* Fills data with n values uniform in [-1, 1), drawn by splitmix64 from
 * *state, which is advanced: a kernel's inputs, reproducible from a seed. */
void dt_measure_fill(float *data, size_t n, uint64_t *state);

/* Compares output with reference: element i passes when |out - ref| <=
 * tolerance * max(|ref_i|, max|ref| / 100) (a relative error with a floor, so
 * elements near zero from cancellation do not fail on rounding). Returns the
 * index of the first failing element (NaN fails), or -1. */
long dt_measure_check_output(const float *output, const float *reference, size_t n,
                             double tolerance);

/* --- The measurer --- */
typedef struct dt_measurer dt_measurer;

int dt_measurer_new(const dt_backend_i *backend, const dt_measure_params *cfg,
                    const char *work_dir, uint64_t seed, dt_measurer **out, dt_error *err);
void dt_measurer_free(dt_measurer *m);

/* Measures n points of one space; results[i] belongs to points[i]. Returns 0
 * unless the backend itself failed. */
int dt_measurer_run(dt_measurer *m, const dt_space *space, const dt_point *points,
                    int n, dt_measure_result *results, dt_error *err);

/* When a batch must end early: no point is started (built or timed) once
 * *stop is non-zero or CLOCK_MONOTONIC passes deadline; the point being
 * timed finishes. stop may be NULL, deadline 0 = none. */
typedef struct dt_measure_limit {
    double deadline;
    const atomic_int *stop;   /* set by a signal handler or another thread */
} dt_measure_limit;

/* Whether limit (may be NULL) says stop now. */
bool dt_measure_limit_reached(const dt_measure_limit *limit);

/* dt_measurer_run under limit (may be NULL): returns how many points, the
 * first ones, were measured (results[0..k-1]), or a negative DT_E* code. A
 * point the backend gave up at the limit (abandoned) is not among them. */
int dt_measurer_run_until(dt_measurer *m, const dt_space *space, const dt_point *points,
                          int n, dt_measure_result *results, const dt_measure_limit *limit,
                          dt_error *err);

/* The measured time of task's reference implementation (dt_task_reference
 * or the backend's own), the latency a task that no config of its space can
 * run is counted at: out->result is DT_RESULT_OK and out->latency_s is set,
 * or out->result says why it could not be timed. A backend without a
 * reference slot has dt_task_reference timed in this process. Returns 0
 * unless the backend itself failed. */
int dt_measurer_reference(dt_measurer *m, const dt_task *task, dt_measure_result *out,
                          dt_error *err);

/* The backend's peak GFLOPS for task, or 0 when unknown. */
double dt_measurer_peak_gflops(dt_measurer *m, const dt_task *task);

/* The backend's roofline for task (roofline.h): its probes' peak and the
 * bandwidths of at least the level holding the task's working set (the CPU
 * backend times that level's streams at the working set itself; task NULL:
 * every level at its probe size) where it has them, else its peak alone (no
 * levels; task NULL: none). Returns 0, or -1 when no peak is known. */
int dt_measurer_roofline(dt_measurer *m, const dt_task *task, dt_roofline *out);

/* The allowed cores that timing never uses: all but the last
 * `measure.threads`, the cores the CPU backend pins its measurement process
 * to. Fills *set and returns how many; 0 (set empty) when no core is left to
 * spare. */
int dt_measurer_spare_cpus(const dt_measurer *m, cpu_set_t *set);

/* The same cores for a process with no measurer of its own (an MPI run's
 * rank 0, beside a worker that times on the last `measure.threads`). */
int dt_measure_spare_cpus(const dt_measure_params *params, cpu_set_t *set);

#endif
