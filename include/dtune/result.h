/* result.h — the outcome of measuring one configuration.
 *
 * Every candidate ends in exactly one result class; only DT_RESULT_OK carries
 * a speed. Result classes are written to the tuning log by name.
 */
#ifndef DTUNE_RESULT_H
#define DTUNE_RESULT_H

#include <stdbool.h>

typedef enum dt_result_class {
    DT_RESULT_OK = 0,
    DT_RESULT_COMPILE_ERROR,
    DT_RESULT_COMPILE_TIMEOUT,
    DT_RESULT_CRASH,          /* SIGSEGV, SIGBUS, SIGFPE, SIGILL, abort */
    DT_RESULT_TIMEOUT,        /* ran past timeout_seconds and was killed */
    DT_RESULT_WRONG_OUTPUT,   /* differs from the reference */
    DT_RESULT_LAUNCH_ERROR,   /* cuda: launch failed or sticky error */
    DT_RESULT_INVALID,        /* rejected before build (e.g. too many threads) */
    DT_RESULT_RUNNER_ERROR,   /* the measurement process failed for another reason */
    DT_RESULT_COUNT
} dt_result_class;

/* "ok", "compile_error", "compile_timeout", "crash", "timeout",
 * "wrong_output", "launch_error", "invalid", "runner_error". */
const char *dt_result_name(dt_result_class r);

/* Returns 0 and sets *r, or -1 for an unknown name. */
int dt_result_parse(const char *name, dt_result_class *r);

/* Longest reason a task failed for (NUL included), in the log and reports. */
#define DT_REASON_MAX 256

typedef struct dt_measure_result {
    dt_result_class result;
    double gflops;        /* FLOPs / latency_s (AutoTVM's mean cost); 0 unless ok */
    double latency_s;     /* seconds per kernel call; 0 unless ok */
    int repeats;          /* micro-batches timed */
    double cv;            /* std / mean of the micro-batch GFLOPS estimates */
    double compile_ms;
    double run_ms;        /* wall time of the run step: check + timing */
    char detail[160];     /* e.g. compiler's first error line, signal name */
    bool abandoned;       /* stopped by the batch's limit before it was measured (a
                             signal or the budget's end while its task's reference was
                             computed): no result, not logged */
} dt_measure_result;

#endif
