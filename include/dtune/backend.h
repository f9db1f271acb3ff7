/* backend.h — the interface every measurement target implements.
 *
 * A backend turns (space, point) into an artifact (build: code generation and
 * compilation, called from several builder threads at once) and times an
 * artifact (run: called by the one runner thread, never concurrently).
 * Problems of a candidate (compile error, crash, wrong output, ...) are result
 * classes in the output, not error returns; an error return means the backend
 * itself failed (cannot start its measurement process, out of memory, ...).
 *
 * Backends are chosen by name from the table in backend.c: "cpu", "cuda",
 * "replay". Optional slots may be NULL.
 */
#ifndef DTUNE_BACKEND_H
#define DTUNE_BACKEND_H

#include <stdint.h>

#include "dtune/error.h"
#include "dtune/result.h"
#include "dtune/roofline.h"
#include "dtune/space.h"

typedef struct dt_measure_params dt_measure_params;  /* measure.h */
struct dt_measure_limit;                              /* measure.h */

typedef struct dt_backend_params {
    const dt_measure_params *measure;  /* timing and checking settings */
    const char *work_dir;              /* artifact cache lives under it */
    uint64_t seed;                     /* input data, replay surface */
} dt_backend_params;

typedef struct dt_artifact {
    dt_result_class result;            /* DT_RESULT_OK when it can be run */
    char path[DT_PATH_MAX];            /* compiled object, if any */
    char detail[160];
    double compile_ms;
} dt_artifact;

typedef struct dt_backend_i {
    const char *name;
    dt_target target;
    int (*open)(const dt_backend_params *params, void **state, dt_error *err);
    /* Thread-safe. */
    int (*build)(void *state, const dt_space *space, const dt_point *point,
                 dt_artifact *out, dt_error *err);
    /* One caller at a time. Fills every field of out. */
    int (*run)(void *state, const dt_space *space, const dt_point *point,
               const dt_artifact *artifact, dt_measure_result *out, dt_error *err);
    /* Times the task's reference implementation, filling out as run does
     * (optional; one caller at a time, like run). */
    int (*reference)(void *state, const dt_task *task, dt_measure_result *out, dt_error *err);
    /* Peak GFLOPS of the target for this task's roofline (optional). */
    double (*peak_gflops)(void *state, const dt_task *task);
    /* The machine's roofline (roofline.h) as the target's probes measure
     * it: the peak once, and at least the bandwidths of the memory level
     * holding working_set_bytes (every level when < 0), each level (or, for
     * a working set, each size: its probe_bytes) measured once; a level not
     * yet asked for has bandwidths 0 (optional). 0, or -1 when the peak
     * cannot be measured. */
    int (*roofline)(void *state, double working_set_bytes, dt_roofline *out);
    /* The limit of the batch dt_measurer_run_until is running (NULL between
     * batches): a run that waits for its task's preparation (the reference
     * output, which may take minutes) gives the point up once the limit is
     * reached, out->abandoned set, instead of finishing it (optional). */
    void (*set_limit)(void *state, const struct dt_measure_limit *limit);
    void (*close)(void *state);
} dt_backend_i;

/* The backend called name, or NULL. */
const dt_backend_i *dt_backend_find(const char *name);

/* The backend a run measures with: the one called name when name is set
 * and not "" (NULL when no backend has that name), else target's own
 * (target.h). */
const dt_backend_i *dt_backend_choose(dt_target target, const char *name);

/* The i-th backend's name in the table, NULL past the last (dt_name_at_fn). */
const char *dt_backend_at(int i);

/* The replay backend: a synthetic performance surface measured on a
 * target's space (replay_backend.c; the surface itself: replay_backend.h). */
extern const dt_backend_i dt_replay_backend;

#endif
