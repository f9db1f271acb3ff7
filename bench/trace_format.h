/* trace_format.h — the rows of a scheduler trace (bench/traces/MODEL-sSEED.csv), for
 * the tool that writes them (trace_convert) and the one that reads them
 * (sched_bench), and for the tests.
 *
 * A trace opens with "# dtune scheduler trace vN (...)", then comment
 * lines ('#', the "#task,..." lines among them), the column line, and one
 * row per trial:
 *   v1: task,trial,seconds,gflops,best_gflops
 *   v2: task,trial,seconds,gflops,best_gflops,cost_model_gflops
 * cost_model_gflops is the tuner's cost-model estimate of the best the task
 * can reach, made when the trial's batch was proposed (the log record's
 * field of that name); empty where the tuner had none (its first batch).
 * A v1 trace reads as it always did (no estimate anywhere).
 */
#ifndef DTUNE_BENCH_TRACE_FORMAT_H
#define DTUNE_BENCH_TRACE_FORMAT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_VERSION 2            /* the version trace_convert writes */
#define TRACE_MAGIC "# dtune scheduler trace v"

typedef struct trace_row {
    int task, trial;
    double seconds;                /* the task's own tuning seconds */
    double gflops;                 /* 0: failed */
    double best;                   /* best-so-far GFLOPS */
    double cost_model;             /* cost_model_gflops; 0 = none (and in v1) */
} trace_row;

/* The version a trace's first line names; -1 when it names none or one
 * this reader does not know. */
static inline int trace_version(const char *first_line)
{
    size_t n = strlen(TRACE_MAGIC);
    if (strncmp(first_line, TRACE_MAGIC, n) != 0)
        return -1;
    char *end;
    long v = strtol(first_line + n, &end, 10);
    return end != first_line + n && (*end == ' ' || *end == '\n' || *end == '\0') && v >= 1 &&
                   v <= TRACE_VERSION ? (int)v : -1;
}

/* The first line, the column comment and the column line of a trace
 * written now. */
static inline void trace_write_magic(FILE *f)
{
    fprintf(f, "%s%d (bench/trace_convert.c)\n", TRACE_MAGIC, TRACE_VERSION);
}

static inline void trace_write_columns(FILE *f)
{
    fprintf(f, "# columns: task,trial,seconds (task's own tuning time),gflops (0: failed),best_gflops,"
               "cost_model_gflops (the tuner's cost-model estimate of the best reachable when the "
               "trial's batch was proposed; empty: none)\n");
    fprintf(f, "task,trial,seconds,gflops,best_gflops,cost_model_gflops\n");
}

static inline void trace_write_row(FILE *f, const trace_row *r)
{
    fprintf(f, "%d,%d,%.3f,%.5g,%.5g,", r->task, r->trial, r->seconds, r->gflops, r->best);
    if (r->cost_model > 0)
        fprintf(f, "%.5g", r->cost_model);
    fputc('\n', f);
}

/* One row of a trace of the given version into *r. 0, or -1 with *column
 * (1-based) where the row goes wrong. */
static inline int trace_parse_row(const char *line, int version, trace_row *r, int *column)
{
    int used = 0;
    *r = (trace_row){ 0 };
    *column = 1;
    if (sscanf(line, "%d,%d,%lf,%lf,%lf%n", &r->task, &r->trial, &r->seconds, &r->gflops,
               &r->best, &used) != 5)
        return -1;
    if (version < 2)
        return 0;                  /* v1: as it was always read */
    const char *p = line + used;
    *column = used + 1;
    if (*p++ != ',')
        return -1;
    if (*p == '\n' || *p == '\r' || *p == '\0')
        return 0;                  /* no estimate */
    char *end;
    r->cost_model = strtod(p, &end);
    *column = (int)(p - line) + 1;
    if (end == p || !(r->cost_model > 0 && isfinite(r->cost_model)) ||
        (*end != '\n' && *end != '\r' && *end != '\0'))
        return -1;
    return 0;
}

#endif
