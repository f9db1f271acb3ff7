/* replay_backend.c — a synthetic, seeded performance surface per task, so the
 * tuner and scheduler can be tested and benchmarked without hardware.
 *
 * It is NOT a measurement of anything. For each (task, target, seed) a hash
 * fixes, per knob, a preferred position on the knob's normalised option axis
 * and a weight; pairs of neighbouring knobs add a smooth interaction term.
 * GFLOPS = peak * exp(-sum w_i d_i^2) * (1 + interaction), so the surface has
 * one broad optimum plus ridges, like a real schedule space. A hashed tenth of
 * the points fail (compile error, crash or wrong output), and every
 * measurement is multiplied by (1 + 0.03 * N(0,1)) noise drawn from a hash of
 * (point, nonce), so the same call always gives the same answer.
 *
 * The output check is modelled too: each point's output differs from the
 * reference by a planted relative error of 2^-24 * R * (0.5 + u), R the
 * task's reduction length and u a hash of the point in [0, 1) (float
 * rounding grows with the sum's length); with measure.check_output on, a
 * point whose error exceeds measure.tolerance is wrong output. The default
 * tolerance (1e-3) passes every point of the shipped models; tolerance 0
 * fails every point, as on a real CPU. The reference implementation "runs"
 * at REPLAY_REFERENCE_GFLOPS.
 */
#include "replay_backend.h"
#include "dtune/measure.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLAY_PEAK_GFLOPS 100.0
#define REPLAY_NOISE 0.03
#define REPLAY_FAIL_PER_MILLE 100
#define REPLAY_REFERENCE_GFLOPS 0.5

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Uniform in [0, 1) from a hash. */
static double unit(uint64_t h)
{
    return (double)(h >> 11) * 0x1.0p-53;
}

static uint64_t task_hash(const dt_space *space, uint64_t seed)
{
    const dt_task *t = &space->task;
    const int *geo = t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D
                         ? (const int *)&t->conv : (const int *)&t->mm;
    size_t n = t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D
                   ? sizeof t->conv / sizeof(int) : sizeof t->mm / sizeof(int);
    uint64_t h = mix64(seed ^ ((uint64_t)t->kind << 32) ^ (uint64_t)space->target);
    for (size_t i = 0; i < n; i++)
        h = mix64(h ^ (uint64_t)(unsigned)geo[i]);
    return h;
}

double dt_replay_backend_peak_gflops(const dt_task *task)
{
    (void)task;
    return REPLAY_PEAK_GFLOPS;
}

/* Fraction of peak a point reaches, in (0, 1]. */
static double surface(const dt_space *space, const dt_point *point, uint64_t th)
{
    double x[DT_MAX_KNOBS], d[DT_MAX_KNOBS], energy = 0, ridge = 0;
    dt_space_normalised(space, point, x);
    for (int i = 0; i < space->nknobs; i++) {
        double pref = unit(mix64(th ^ (0x100u + (uint64_t)i)));
        double weight = 0.5 + 2.5 * unit(mix64(th ^ (0x200u + (uint64_t)i)));
        d[i] = x[i] - pref;
        energy += weight * d[i] * d[i];
    }
    for (int i = 0; i + 1 < space->nknobs; i++) {
        double phase = 6.283185307179586 * unit(mix64(th ^ (0x300u + (uint64_t)i)));
        ridge += 0.08 * cos(3.0 * (d[i] + d[i + 1]) + phase) * exp(-(d[i] * d[i] + d[i + 1] * d[i + 1]));
    }
    double s = exp(-energy) * (1.0 + ridge) / 1.6;
    return s < 1e-4 ? 1e-4 : (s > 1.0 ? 1.0 : s);
}

/* Which failure class a point has, or DT_RESULT_OK. */
static dt_result_class failure_of(const dt_space *space, const dt_point *point, uint64_t th)
{
    if (!dt_space_valid(space, point))
        return DT_RESULT_INVALID;
    uint64_t h = mix64(th ^ mix64(dt_space_index(space, point)));
    if (h % 1000 >= REPLAY_FAIL_PER_MILLE)
        return DT_RESULT_OK;
    static const dt_result_class kinds[3] = {
        DT_RESULT_COMPILE_ERROR, DT_RESULT_CRASH, DT_RESULT_WRONG_OUTPUT,
    };
    return kinds[(h >> 20) % 3];
}

double dt_replay_backend_true_gflops(const dt_space *space, const dt_point *point, uint64_t seed)
{
    uint64_t th = task_hash(space, seed);
    if (failure_of(space, point, th) != DT_RESULT_OK)
        return 0.0;
    return REPLAY_PEAK_GFLOPS * surface(space, point, th);
}

/* A standard normal from two hashes (Box-Muller). */
static double hashed_normal(uint64_t h)
{
    double u1 = unit(mix64(h)) + 1e-12, u2 = unit(mix64(h ^ 0x5bd1e995u));
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void dt_replay_backend_measure(const dt_space *space, const dt_point *point, uint64_t seed,
                               uint64_t nonce, dt_measure_result *out)
{
    memset(out, 0, sizeof *out);
    uint64_t th = task_hash(space, seed);
    out->result = failure_of(space, point, th);
    out->compile_ms = 0.0;
    if (out->result != DT_RESULT_OK) {
        snprintf(out->detail, sizeof out->detail, "replay: planted %s", dt_result_name(out->result));
        return;
    }
    double noise = 1.0 + REPLAY_NOISE * hashed_normal(mix64(dt_space_index(space, point) ^ mix64(nonce ^ th)));
    if (noise < 0.5)
        noise = 0.5;
    out->gflops = REPLAY_PEAK_GFLOPS * surface(space, point, th) * noise;
    out->latency_s = space->task.flops / (out->gflops * 1e9);
    out->repeats = 3;
    out->cv = REPLAY_NOISE;
}

/* Length of the sum behind each output element. */
static double reduction_length(const dt_task *t)
{
    switch (t->kind) {
    case DT_OP_CONV2D:
        return (double)t->conv.c_in * t->conv.kh * t->conv.kw;
    case DT_OP_DEPTHWISE_CONV2D:
        return (double)t->conv.kh * t->conv.kw;
    default:
        return (double)t->mm.k;
    }
}

/* The planted relative output error of point (see the file's comment). */
static double planted_error(const dt_space *space, const dt_point *point, uint64_t th)
{
    double u = unit(mix64(th ^ 0xe77u ^ mix64(dt_space_index(space, point))));
    return 0x1.0p-24 * reduction_length(&space->task) * (0.5 + u);
}

/* ---- the backend table entry ----------------------------------------------- */

typedef struct replay_state {
    uint64_t seed;
    uint64_t nonce;     /* runner-only: one caller at a time */
    bool check;         /* measure.check_output */
    double tolerance;   /* measure.tolerance */
} replay_state;

static int replay_open(const dt_backend_params *params, void **state, dt_error *err)
{
    replay_state *st = calloc(1, sizeof *st);
    if (!st)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    st->seed = params ? params->seed : 0;
    st->check = params && params->measure && params->measure->check_output;
    st->tolerance = params && params->measure ? params->measure->tolerance : 0;
    *state = st;
    return 0;
}

static int replay_build(void *state, const dt_space *space, const dt_point *point,
                        dt_artifact *out, dt_error *err)
{
    replay_state *st = state;
    memset(out, 0, sizeof *out);
    dt_result_class f = failure_of(space, point, task_hash(space, st->seed));
    out->result = f == DT_RESULT_COMPILE_ERROR || f == DT_RESULT_INVALID ? f : DT_RESULT_OK;
    return 0;
}

static int replay_run(void *state, const dt_space *space, const dt_point *point,
                      const dt_artifact *artifact, dt_measure_result *out, dt_error *err)
{
    replay_state *st = state;
    dt_replay_backend_measure(space, point, st->seed, st->nonce++, out);
    if (artifact->result != DT_RESULT_OK)
        out->result = artifact->result;
    double error = planted_error(space, point, task_hash(space, st->seed));
    if (out->result == DT_RESULT_OK && st->check && !(error <= st->tolerance)) {
        memset(out, 0, sizeof *out);
        out->result = DT_RESULT_WRONG_OUTPUT;
        snprintf(out->detail, sizeof out->detail, "replay: relative error %.3g above tolerance %g",
                 error, st->tolerance);
    }
    return 0;
}

static int replay_reference(void *state, const dt_task *task, dt_measure_result *out,
                            dt_error *err)
{
    memset(out, 0, sizeof *out);
    out->result = DT_RESULT_OK;
    out->latency_s = task->flops / (REPLAY_REFERENCE_GFLOPS * 1e9);
    out->repeats = 1;
    return 0;
}

static double replay_peak(void *state, const dt_task *task)
{
    return dt_replay_backend_peak_gflops(task);
}

static void replay_close(void *state)
{
    free(state);
}

const dt_backend_i dt_replay_backend = {
    .name = "replay",
    .target = DT_TARGET_CPU,
    .open = replay_open,
    .build = replay_build,
    .run = replay_run,
    .reference = replay_reference,
    .peak_gflops = replay_peak,
    .close = replay_close,
};
