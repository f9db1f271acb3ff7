/* cpu_runner.h — the CPU measurement process: checks and times compiled kernels
 * (cpu_codegen.h's entry points) in a child process, so that a candidate
 * that crashes, hangs or scribbles over memory costs one restart of the
 * child and never the daemon.
 *
 * The child is `EXE __cpu-runner FD [--cpus LIST] [--limits BYTES SECONDS
 * FILES]` (proclimit.h: applied at its start, the CPU time per request): EXE is /proc/self/exe
 * (or $DTUNE_CPU_RUNNER when set), so every program that measures on the
 * CPU (dtune, the tests, the benches) must pass argv to dt_cpu_runner_main when
 * argv[1] is DT_CPU_RUNNER_ARG, before doing anything else. Parent and child
 * exchange fixed-size structs over one AF_UNIX stream socket (fd 3 in the
 * child): request; "ready" once inputs and the reference exist (the
 * candidate's timeout starts there); result.
 *
 * Inside the child, per request: dlopen the artifact, fill inputs with
 * seeded data in [-1, 1), call dt_kernel_prepare once, check the output
 * against dt_task_reference when asked (a task with an epilogue: its
 * dt_kernel_epilogue entry on seeded bias and residual tensors, against the
 * reference with dt_task_apply_epilogue), warm up with one call, then time
 * micro-batches with CLOCK_MONOTONIC_RAW until dt_measure_cv_stop says stop
 * (cold: each call alone, after the weights, bias and workspace were
 * evicted from the caches, as a layer of a network finds them; spread: each
 * call alone, after the kernel's own threads rewrote its input, residual
 * and output in turn, DT_CPU_KERNEL_SPREAD, as a layer at more than one
 * thread finds them). A
 * request with `reference` set times dt_task_reference the same way: the
 * latency a task that no config of its space can run is counted at.
 */
#ifndef DTUNE_CPU_RUNNER_H
#define DTUNE_CPU_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtune/error.h"
#include "dtune/model.h"
#include "dtune/proclimit.h"
#include "dtune/result.h"

struct dt_measure_limit;           /* measure.h */

#define DT_CPU_RUNNER_ARG "__cpu-runner"

/* Seconds one automatic micro-batch aims at (measure.micro_batch = 0), and
 * its most calls. */
#define DT_CPU_RUNNER_AUTO_BATCH_S 0.002
#define DT_CPU_RUNNER_AUTO_BATCH_MAX_CALLS 1000000

typedef struct dt_cpu_runner_request {
    char artifact[DT_PATH_MAX];   /* shared object with the cpu_codegen entry points */
    dt_task task;                 /* geometry: tensor sizes and the reference */
    uint64_t seed;                /* input data */
    double flops;                 /* per kernel call (task.flops, or the peak probe's) */
    bool check;                   /* compare with the reference before timing */
    bool reference;               /* time dt_task_reference itself (artifact unused) */
    double tolerance;             /* relative, see dt_measure_check_output */
    int min_batches, max_repeats; /* CV rule */
    double cv_threshold;
    int micro_batch;              /* kernel calls per micro-batch; 0 = auto */
    int threads;                  /* > 1: the artifact uses OpenMP */
    bool cold;                    /* evict weight, bias and workspace from the caches before
                                     each timed call, and time the calls one by one */
    bool spread;                  /* have the kernel's threads rewrite its input, residual and
                                     output before each timed call (DT_CPU_KERNEL_SPREAD, where
                                     the artifact has it), and time the calls one by one */
} dt_cpu_runner_request;

typedef struct dt_cpu_runner_params {
    const char *exe;              /* NULL: $DTUNE_CPU_RUNNER, else /proc/self/exe */
    int threads;                  /* cores the child keeps for kernels */
    bool pin;                     /* pin the child to the last `threads` allowed cores */
    double timeout_seconds;       /* one candidate, from "ready" to the result */
    double ready_timeout_seconds; /* a new task's inputs and reference output, from the
                                     request to "ready" */
    dt_proclimit limits;          /* the child's resource limits (zero: none) */
} dt_cpu_runner_params;

typedef struct dt_cpu_runner dt_cpu_runner;

/* Creates the runner; the child starts on the first request. Returns 0,
 * DT_ENOMEM or DT_EIO (the executable cannot be found). */
int dt_cpu_runner_new(const dt_cpu_runner_params *params, dt_cpu_runner **out, dt_error *err);

/* Stops the child (EOF, then SIGKILL after a grace period). Accepts NULL. */
void dt_cpu_runner_free(dt_cpu_runner *r);

/* Checks and times one artifact. Every field of out but compile_ms is
 * filled; a candidate's failure (crash, timeout, wrong output, artifact that
 * does not load) is a result class. After a crash, timeout or wrong output
 * the child is replaced before the next request. Returns 0, or DT_EIO when
 * no child can be started at all. */
int dt_cpu_runner_run(dt_cpu_runner *r, const dt_cpu_runner_request *req, dt_measure_result *out,
                      dt_error *err);

/* The limit of the batch being measured (NULL: none): a request whose
 * inputs and reference are being prepared when it is reached is given up,
 * the child stopped and out->abandoned set (measure.h). */
void dt_cpu_runner_set_limit(dt_cpu_runner *r, const struct dt_measure_limit *limit);

/* The cores the child is pinned to; returns how many (0: not pinned). */
int dt_cpu_runner_cpus(const dt_cpu_runner *r, int *cpus, int max);

/* Deterministic values in [-1, 1) from seed. */
void dt_cpu_runner_fill(float *data, size_t n, uint64_t seed);

/* The child's main: argv[1] is DT_CPU_RUNNER_ARG. Returns the exit status. */
int dt_cpu_runner_main(int argc, char **argv);

#endif
