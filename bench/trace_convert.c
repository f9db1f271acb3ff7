/* trace_convert.c — one recorded tuning run (RUN_DIR/tuning.jsonl) into one
 * compact trace for bench/sched_bench.
 *
 *   trace_convert [--trials N] [--machine S] [--commit S] [--date S] [--note S]
 *                 RUN_DIR OUT.csv
 *
 * The run is scripts/record_traces.sh's: every task tuned in one contiguous
 * slot (after the daemon's warm-up). The trace keeps, per task and trial,
 * the task's own tuning seconds (task_clock.h: from the start of its
 * current stretch of tuning, plus its earlier stretches). So a replay can
 * advance any task along its own curve, whatever order the recording used.
 *
 * Output: comment lines ('#') with machine, commit, date, model, seed,
 * trials, then one "#task,..." line per task (index, name, kind, similarity
 * group as the daemon computes it, count, FLOPs, peak GFLOPS from best.json,
 * trials recorded, and the FLOPs over best.json's measured bound), then
 * "task,trial,seconds,gflops,best_gflops,cost_model_gflops" rows (gflops 0
 * for a failed trial; the last, the tuner's cost-model estimate logged with
 * the trial, empty when it has none): trace format v3 (trace_format.h).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/model.h"
#include "dtune/report.h"
#include "dtune/runstate.h"
#include "dtune/tunelog.h"
#include "dtune/util.h"
#include "task_clock.h"
#include "trace_format.h"

typedef struct task_trace {
    int n, cap;
    trace_row *rows;
    double best;
} task_trace;

typedef struct convert {
    char model_path[DT_PATH_MAX];
    uint64_t seed;
    int ntasks;
    task_trace *tasks;
    task_clock *clocks;        /* per task */
    log_clock clock;
    dt_model *model;
    dt_error *err;
} convert;

static int on_run(void *ctx, const dt_run_record *r)
{
    convert *c = ctx;
    if (c->model)
        return 0; /* a resume: the same model */
    snprintf(c->model_path, sizeof c->model_path, "%s", r->model);
    c->seed = r->seed;
    int rc = dt_model_load(r->model, &c->model, c->err);
    if (rc)
        return rc;
    c->ntasks = c->model->ntasks;
    c->tasks = calloc((size_t)c->ntasks, sizeof *c->tasks);
    c->clocks = calloc((size_t)c->ntasks, sizeof *c->clocks);
    if (!c->tasks || !c->clocks)
        return dt_error_set(c->err, DT_ENOMEM, "out of memory");
    log_clock_init(&c->clock, c->clocks, c->ntasks);
    return 0;
}

static int on_measure(void *ctx, const dt_measure_record *r)
{
    convert *c = ctx;
    int k = c->model ? dt_model_find_task(c->model, r->task) : -1;
    if (k < 0)
        return dt_error_set(c->err, DT_EINVAL, "measure record of unknown task '%s'", r->task);
    task_trace *t = &c->tasks[k];
    if (t->n == t->cap) {
        size_t cap = dt_grow_capacity((size_t)t->cap, (size_t)t->n + 1);
        if (cap > INT_MAX || dt_resize(&t->rows, cap, sizeof *t->rows) != 0)
            return dt_error_set(c->err, DT_ENOMEM, "out of memory");
        t->cap = (int)cap;
    }
    double g = r->m.result == DT_RESULT_OK && isfinite(r->m.gflops) ? r->m.gflops : 0;
    if (g > t->best)
        t->best = g;
    int i = t->n++;
    t->rows[i] = (trace_row){ .task = k, .trial = i + 1,
                              .seconds = task_clock_measure(&c->clock, k, r->time),
                              .gflops = g, .best = t->best, .cost_model = r->cost_model_gflops };
    return 0;
}

static int on_slot(void *ctx, const dt_slot_record *r)
{
    convert *c = ctx;
    if (!c->model)
        return 0;
    task_clock_slot(&c->clock, r->time);
    return 0;
}

/* The daemon's similarity group (daemon_setup.c), for the gradient policy. */
typedef struct options {
    int trials;
    const char *machine, *commit, *date, *note, *run_dir, *out;
} options;

static void write_trace(FILE *f, const convert *c, const dt_run_state *best, const options *o)
{
    trace_write_magic(f);
    fprintf(f, "# machine: %s\n# commit: %s\n# date: %s\n", o->machine, o->commit, o->date);
    fprintf(f, "# model: %s (%s)\n# seed: %llu\n", c->model->name, c->model_path,
            (unsigned long long)c->seed);
    fprintf(f, "# trials: %d per task (tuner chameleon, policy round_robin, one slot per task)\n",
            o->trials);
    if (o->note)
        fprintf(f, "# note: %s\n", o->note);
    trace_write_task_columns(f);
    for (int k = 0; k < c->ntasks; k++) {
        const dt_task *t = &c->model->tasks[k];
        double peak = 0, bound = 0;
        for (int i = 0; best && i < best->ntasks; i++)
            if (strcmp(best->tasks[i].name, t->name) == 0) {
                peak = best->tasks[i].peak_gflops;
                if (best->tasks[i].bound_ms > 0)
                    bound = t->flops / (best->tasks[i].bound_ms * 1e6);
            }
        trace_task line = { .index = k, .group = dt_task_similarity_group(t), .count = t->count,
                            .trials = c->tasks[k].n, .flops = t->flops,
                            .peak = peak > 0 ? peak : 1.0, .bound = bound };
        snprintf(line.name, sizeof line.name, "%s", t->name);
        snprintf(line.kind, sizeof line.kind, "%s", dt_op_kind_name(t->kind));
        trace_write_task(f, &line);
    }
    trace_write_columns(f);
    for (int k = 0; k < c->ntasks; k++)
        for (int i = 0; i < c->tasks[k].n; i++)
            trace_write_row(f, &c->tasks[k].rows[i]);
}

static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){ .trials = 0, .machine = "unknown", .commit = "unknown", .date = "unknown" };
    int pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--trials") == 0 && has_value)
            o->trials = atoi(argv[++i]);
        else if (strcmp(a, "--machine") == 0 && has_value)
            o->machine = argv[++i];
        else if (strcmp(a, "--commit") == 0 && has_value)
            o->commit = argv[++i];
        else if (strcmp(a, "--date") == 0 && has_value)
            o->date = argv[++i];
        else if (strcmp(a, "--note") == 0 && has_value)
            o->note = argv[++i];
        else if (a[0] != '-' && pos == 0 && ++pos)
            o->run_dir = a;
        else if (a[0] != '-' && pos == 1 && ++pos)
            o->out = a;
        else
            return -1;
    }
    return pos == 2 ? 0 : -1;
}

int main(int argc, char **argv)
{
    options o;
    if (parse_options(argc, argv, &o)) {
        fprintf(stderr, "usage: trace_convert [--trials N] [--machine S] [--commit S] [--date S] "
                        "[--note S] RUN_DIR OUT.csv\n");
        return 2;
    }
    dt_error err = { 0 };
    convert c = { .err = &err };
    dt_tunelog_visitor v = { .run = on_run, .measure = on_measure, .slot = on_slot, .ctx = &c };
    char path[DT_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/tuning.jsonl", o.run_dir);
    int rc = dt_tunelog_replay(path, &v, NULL, &err);
    dt_run_state best;
    bool have_best = false;
    if (rc == 0 && !c.model)
        rc = dt_error_set(&err, DT_EINVAL, "%s: no run record", path);
    if (rc == 0) {
        dt_error berr = { 0 };
        have_best = dt_report_load_best(o.run_dir, &best, &berr) == 0;
        if (!have_best)
            fprintf(stderr, "trace_convert: %s; peak GFLOPS written as 1\n", berr.msg);
    }
    FILE *f = NULL;
    if (rc == 0 && !(f = fopen(o.out, "w")))
        rc = dt_error_set(&err, DT_EIO, "%s: cannot write", o.out);
    if (rc == 0) {
        write_trace(f, &c, have_best ? &best : NULL, &o);
        if (fclose(f) != 0)
            rc = dt_error_set(&err, DT_EIO, "%s: write failed", o.out);
    }
    if (have_best)
        dt_run_state_destroy(&best);
    for (int k = 0; k < c.ntasks; k++)
        free(c.tasks[k].rows);
    free(c.tasks);
    free(c.clocks);
    dt_model_free(c.model);
    if (rc) {
        fprintf(stderr, "trace_convert: %s\n", err.msg);
        return 1;
    }
    return 0;
}
