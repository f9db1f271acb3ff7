/* trace_format.h — the rows of a scheduler trace (bench/traces/MODEL-sSEED.csv), for
 * the tool that writes them (trace_convert) and the one that reads them
 * (sched_bench), and for the tests.
 *
 * A trace opens with "# dtune scheduler trace vN (...)", then comment
 * lines ('#', the "#task,..." lines among them), the column line, and one
 * row per trial. The task lines are
 *   v1, v2: #task,index,name,kind,group,count,flops,peak_gflops,trials
 *   v3:     the same and bound_gflops: the task's FLOPs over the bound the
 *           recording run measured for it (best.json's bound_ms: FLOPs at
 *           the FMA peak or bytes at the bandwidth of the memory level that
 *           holds its working set, the larger); 0 = not measured.
 * The rows:
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

#include "dtune/scheduler.h"

#define TRACE_VERSION 3            /* the version trace_convert writes */
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

/* One task line of a trace's header. */
typedef struct trace_task {
    int index, group, count, trials;
    char name[64], kind[32];
    double flops, peak;            /* FLOPs of one execution; peak GFLOPS */
    double bound;                  /* v3: bound_gflops; 0 = none (and in v1, v2) */
} trace_task;

/* The column comment of the task lines of a trace written now. */
static inline void trace_write_task_columns(FILE *f)
{
    fprintf(f, "#task,index,name,kind,group,count,flops,peak_gflops,trials,bound_gflops\n");
}

static inline void trace_write_task(FILE *f, const trace_task *t)
{
    fprintf(f, "#task,%d,%s,%s,%d,%d,%.17g,%.6g,%d,%.6g\n", t->index, t->name, t->kind, t->group,
            t->count, t->flops, t->peak, t->trials, t->bound);
}

/* A "#task,..." line of any version into *t: 0, or -1 when it is not one
 * (a tenth field, where present, must be a number >= 0). */
static inline int trace_parse_task(const char *line, trace_task *t)
{
    int used = 0;
    *t = (trace_task){ 0 };
    if (sscanf(line, "#task,%d,%63[^,],%31[^,],%d,%d,%lf,%lf,%d%n", &t->index, t->name, t->kind,
               &t->group, &t->count, &t->flops, &t->peak, &t->trials, &used) != 8)
        return -1;
    const char *p = line + used;
    if (*p != ',')
        return *p == '\n' || *p == '\r' || *p == '\0' ? 0 : -1;
    char *end;
    t->bound = strtod(p + 1, &end);
    return end != p + 1 && t->bound >= 0 && isfinite(t->bound) &&
                   (*end == '\n' || *end == '\r' || *end == '\0') ? 0 : -1;
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

/* The last row of a task's warm-up, as the daemon runs it: batches of
 * DT_WARMUP_BATCH trials until one holds a valid one. best[0..n) is the
 * task's best-so-far GFLOPS per row (0 until a valid one); with none valid,
 * every row. */
static inline int trace_warm_up_end(const double *best, int n)
{
    int i = 0;
    while (i < n && !(best[i] > 0))
        i++;
    if (i == n)
        return n - 1;
    int end = (i / DT_WARMUP_BATCH + 1) * DT_WARMUP_BATCH - 1;
    return end < n ? end : n - 1;
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
