/* cpu_backend.h — the `cpu` backend: cpu_codegen + the system C compiler in
 * the builder threads, timing in the runner process (cpu_runner.h).
 *
 * build: the point's plan is generated (cpu_codegen.h) and compiled with
 * `cc -std=gnu11 -O3 -march=native -ffp-contract=fast -shared -fPIC`
 * (+ -fopenmp when measure.threads > 1; $DTUNE_CC replaces cc) into the
 * content-addressed cache WORK_DIR/cache/KEY.so, KEY = 128-bit hash of the
 * source and the compiler command. The compiler runs in its own process
 * group; past the compile timeout the group is killed (compile_timeout).
 * A compile error keeps the compiler's first error line in detail.
 *
 * run: the artifact is checked against the reference the first time it runs
 * in this backend (when measure.check_output) and timed by the runner with
 * the CV rule. peak_gflops: an FMA probe compiled and timed the same way.
 */
#ifndef DTUNE_CPU_BACKEND_H
#define DTUNE_CPU_BACKEND_H

#include <stdbool.h>

#include "dtune/backend.h"
#include "cpu_runner.h"

extern const dt_backend_i dt_cpu_backend;

/* Settings beyond dt_backend_params, for tests and benches. */
typedef struct dt_cpu_options {
    double compile_timeout_s;   /* default dt_measure_compile_timeout(measure) */
    const char *runner_exe;     /* NULL: cpu_runner.h's default */
    bool pin;                   /* pin the runner to its own core(s); default true */
} dt_cpu_options;

void dt_cpu_backend_default_options(const dt_measure_params *measure, dt_cpu_options *opts);

/* dt_cpu_backend.open with explicit options. */
int dt_cpu_backend_open(const dt_backend_params *params, const dt_cpu_options *opts, void **state,
                        dt_error *err);

/* Compiles source (with cpu_codegen's entry points) into the cache; threads
 * > 1 adds -fopenmp. Thread-safe. Candidate problems are out->result;
 * returns < 0 only when the backend itself failed (cannot write the cache,
 * cannot start the compiler). */
int dt_cpu_backend_build_source(void *state, const char *source, int threads, dt_artifact *out,
                                dt_error *err);

/* Checks (first time only, when enabled) and times an artifact for task. */
int dt_cpu_backend_run_artifact(void *state, const dt_task *task, const dt_artifact *artifact,
                                dt_measure_result *out, dt_error *err);

/* The backend's runner (for its pid, restarts and cores). */
dt_cpu_runner *dt_cpu_backend_runner(void *state);

/* The share of physical memory one task's tensors may take on the CPU (the
 * daemon, the compilers and the system need the rest). */
#define DT_CPU_MEMORY_SHARE 0.5

/* The CPU target's task_memory (target.h): DT_CPU_MEMORY_SHARE of physical
 * memory, read with sysconf. */
void dt_cpu_backend_task_memory(dt_model_memory *memory);

/* The CPU target's fingerprint (target.h; cpu_machine.c): "MODEL NAME,
 * family F model M stepping S, SIMD FLAGS, nproc N" of /proc/cpuinfo's first
 * processor; device is not used. Returns 0 or DT_EIO (/proc/cpuinfo
 * unreadable). */
int dt_cpu_machine_fingerprint(int device, char *buf, size_t len, dt_error *err);
/* "threads N, weights cold|warm[, input spread]": the kernel's threads,
 * measure.cold_weights, and measure.spread_input where it acts (threads > 1). */
void dt_cpu_machine_conditions(const dt_measure_params *measure, char *buf, size_t len);

#endif
