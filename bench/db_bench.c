/* db_bench.c — how much a run gains from the tuning database: trials to
 * reach 95 % of R, per task, across runs of one model.
 *
 *   db_bench --model MODEL.yaml [--backend cpu|replay] [--seed N]
 *            [--work-dir DIR] LABEL=RUN_DIR LABEL=RUN_DIR ...
 *
 * Each run's tuning.jsonl gives, per task, its incumbents (each ok
 * measurement that beat the task's best so far: trial number as logged, so
 * the re-measurements a database run starts with count as trials, config
 * and the task's own tuning seconds then, task_clock.h). The goal of a task
 * is 95 % of R, the noise-robust best of remeasure.h: the median of
 * REMEASURE_R fresh measurements of the best config any of the runs found,
 * and a run reaches it at its first incumbent whose median of
 * REMEASURE_INCUMBENT fresh measurements meets it ("-" when none does).
 * Every incumbent is re-measured, not only those whose logged figure meets
 * the goal: the runs may be hours old and the machine may have drifted. The fresh measurements are taken here, after the runs, through
 * the backend the runs used (the cpu backend on the machine they ran on,
 * cores quiet; replay with the runs' seed, which fixes its surface), with
 * the default measurement settings as the runs had them. The last lines give,
 * per run, how many tasks reached the goal, the median trials and seconds
 * over all tasks (a task that never reached it counts as more than any),
 * and the median over tasks of the first run's trials (seconds) divided by
 * this run's. scripts/db_benefit.sh runs the runs (no database, an earlier
 * run of the model, another model) and calls this.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/backend.h"
#include "dtune/config.h"
#include "dtune/model.h"
#include "dtune/target.h"
#include "dtune/tunelog.h"
#include "remeasure.h"
#include "task_clock.h"

#define MAX_RUNS 8
#define MAX_TASKS 128
#define GOAL 0.95

typedef struct task_curve {
    char name[DT_NAME_MAX];
    incumbent *inc;            /* in trial order; seconds: the task's own */
    int ninc;
    size_t cap;
} task_curve;

typedef struct run_curves {
    const char *label, *dir;
    int ntasks;
    task_curve tasks[MAX_TASKS];
    task_clock clocks[MAX_TASKS];
    log_clock clock;
} run_curves;

static task_curve *task_named(run_curves *r, const char *name)
{
    for (int i = 0; i < r->ntasks; i++)
        if (strcmp(r->tasks[i].name, name) == 0)
            return &r->tasks[i];
    if (r->ntasks == MAX_TASKS)
        return NULL;
    task_curve *t = &r->tasks[r->ntasks++];
    snprintf(t->name, sizeof t->name, "%s", name);
    return t;
}

static int on_measure(void *ctx, const dt_measure_record *rec)
{
    run_curves *r = ctx;
    task_curve *t = task_named(r, rec->task);
    if (!t)
        return DT_ENOMEM;
    double seconds = task_clock_measure(&r->clock, (int)(t - r->tasks), rec->time);
    double before = t->ninc > 0 ? t->inc[t->ninc - 1].gflops : 0;
    bool ok = rec->m.result == DT_RESULT_OK && isfinite(rec->m.gflops);
    if (rec->trial < 1 || !ok || !(rec->m.gflops > before))
        return 0;
    if ((size_t)t->ninc == t->cap && dt_grow(&t->inc, &t->cap, (size_t)t->ninc + 1, sizeof *t->inc) != 0)
        return DT_ENOMEM;
    t->inc[t->ninc++] = (incumbent){ rec->trial, seconds, rec->config, rec->m.gflops };
    return 0;
}

static int on_slot(void *ctx, const dt_slot_record *rec)
{
    run_curves *r = ctx;
    task_clock_slot(&r->clock, rec->time);
    return 0;
}

static int load(run_curves *r)
{
    char path[DT_PATH_MAX + 16];
    dt_error err;
    snprintf(path, sizeof path, "%s/tuning.jsonl", r->dir);
    log_clock_init(&r->clock, r->clocks, MAX_TASKS);
    dt_tunelog_visitor v = { .measure = on_measure, .slot = on_slot, .ctx = r };
    if (dt_tunelog_replay(path, &v, NULL, &err) != 0) {
        fprintf(stderr, "db_bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static const task_curve *find(const run_curves *r, const char *name)
{
    for (int i = 0; i < r->ntasks; i++)
        if (strcmp(r->tasks[i].name, name) == 0)
            return &r->tasks[i];
    return NULL;
}

/* What each run took to reach the goal, over the first run's tasks. */
typedef struct reach {
    double trials[MAX_TASKS], seconds[MAX_TASKS];        /* INFINITY: never */
    double trial_ratio[MAX_TASKS], second_ratio[MAX_TASKS];   /* first run's / this run's */
    int reached, nratio;
} reach;

typedef struct options {
    const char *model, *backend, *work_dir;
    uint64_t seed;
} options;

/* One task's row: R from every run's final incumbent, then each run's first
 * incumbent that re-measures at GOAL·R (at[j], -1: none). */
static int task_row(const options *o, const dt_measure_params *mp, const dt_backend_i *backend,
                    const dt_task *task, const run_curves *runs, int nruns, double *r, int *at,
                    dt_error *err)
{
    dt_space space;
    int rc = dt_target_space_init(&space, task, DT_TARGET_CPU, err);
    if (rc)
        return rc;
    remeasure_cache cache = { .space = &space };
    const incumbent *finals[MAX_RUNS];
    const task_curve *curves[MAX_RUNS];
    for (int j = 0; j < nruns; j++) {
        curves[j] = find(&runs[j], task->name);
        finals[j] = curves[j] && curves[j]->ninc > 0 ? &curves[j]->inc[curves[j]->ninc - 1] : NULL;
        if (finals[j] && finals[j]->index >= space.size)
            rc = dt_error_set(err, DT_EINVAL, "%s: task %s: config %llu is past its space (%llu configs)",
                              runs[j].dir, task->name, (unsigned long long)finals[j]->index,
                              (unsigned long long)space.size);
    }
    if (!rc)
        rc = dt_measurer_new(backend, mp, o->work_dir, o->seed, &cache.m, err);
    if (!rc)
        rc = remeasure_target(&cache, finals, nruns, r, err);
    for (int j = 0; !rc && j < nruns; j++) {
        at[j] = -1;
        if (curves[j] && *r > 0)
            rc = remeasure_reach(&cache, curves[j]->inc, curves[j]->ninc, GOAL * *r, false, &at[j], err);
    }
    dt_measurer_free(cache.m);
    remeasure_cache_free(&cache);
    dt_space_free(&space);
    return rc;
}

static int report(const options *o, const dt_model *model, const run_curves *runs, int nruns,
                  dt_error *err)
{
    const run_curves *first = &runs[0];
    static reach r[MAX_RUNS];
    memset(r, 0, sizeof r);
    const dt_backend_i *backend = dt_backend_find(o->backend);
    if (!backend)
        return dt_error_set(err, DT_EINVAL, "no backend '%s'", o->backend);
    dt_config cfg;
    dt_config_defaults(&cfg);
    printf("%-20s %10s %10s", "task", "R", "goal");
    for (int j = 0; j < nruns; j++)
        printf("  %20s", runs[j].label);
    printf("\n%-42s", "");
    for (int j = 0; j < nruns; j++)
        printf("  %8s %11s", "trials", "seconds");
    printf("\n");
    for (int k = 0; k < first->ntasks; k++) {
        const char *name = first->tasks[k].name;
        int ti = dt_model_find_task(model, name), at[MAX_RUNS];
        if (ti < 0)
            return dt_error_set(err, DT_EINVAL, "%s: task %s is not in %s", first->dir, name, o->model);
        double rr = 0;
        int rc = task_row(o, &cfg.measure, backend, &model->tasks[ti], runs, nruns, &rr, at, err);
        if (rc)
            return rc;
        const task_curve *base = &first->tasks[k];
        printf("%-20s %10.2f %10.2f", name, rr, GOAL * rr);
        for (int j = 0; j < nruns; j++) {
            const task_curve *t = find(&runs[j], name);
            const incumbent *hit = at[j] >= 0 ? &t->inc[at[j]] : NULL;
            r[j].trials[k] = hit ? hit->trial : INFINITY;
            r[j].seconds[k] = hit ? hit->seconds : INFINITY;
            r[j].reached += hit != NULL;
            if (hit && at[0] >= 0) {
                r[j].trial_ratio[r[j].nratio] = (double)base->inc[at[0]].trial / hit->trial;
                r[j].second_ratio[r[j].nratio++] = base->inc[at[0]].seconds / hit->seconds;
            }
            if (hit)
                printf("  %8d %11.1f", hit->trial, hit->seconds);
            else
                printf("  %8s %11s", "-", "-");
        }
        printf("\n");
        fflush(stdout);
    }
    printf("%-42s", "tasks reaching 95 % of R");
    for (int j = 0; j < nruns; j++)
        printf("  %17d/%-2d", r[j].reached, first->ntasks);
    printf("\n%-42s", "median to 95 % of R");
    for (int j = 0; j < nruns; j++)
        printf("  %8.1f %11.1f", remeasure_median_of(r[j].trials, first->ntasks),
               remeasure_median_of(r[j].seconds, first->ntasks));
    printf("\n%-42s", "median of first/this");
    for (int j = 0; j < nruns; j++)
        printf("  %8.2f %11.2f", remeasure_median_of(r[j].trial_ratio, r[j].nratio),
               remeasure_median_of(r[j].second_ratio, r[j].nratio));
    printf("\n");
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: db_bench --model MODEL.yaml [--backend cpu|replay] [--seed N] [--work-dir DIR]\n"
                    "                LABEL=RUN_DIR ... (1 to %d runs; the first is the baseline)\n", MAX_RUNS);
    return 2;
}

int main(int argc, char **argv)
{
    options o = { .backend = "cpu", .work_dir = "/tmp/db_bench", .seed = 1 };
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        char *end = NULL;
        bool ok = true;
        if (strcmp(a, "--model") == 0)
            o.model = v;
        else if (strcmp(a, "--backend") == 0)
            o.backend = v;
        else if (strcmp(a, "--work-dir") == 0)
            o.work_dir = v;
        else if (strcmp(a, "--seed") == 0) {
            o.seed = strtoull(v, &end, 10);
            ok = end != v && !*end;
        } else
            ok = false;
        if (!ok) {
            fprintf(stderr, "db_bench: unknown option or bad value: %s %s\n", a, v);
            return usage();
        }
    }
    int nruns = argc - i;
    if (!o.model || nruns < 1 || nruns > MAX_RUNS)
        return usage();
    dt_error err = { 0 };
    dt_model *model = NULL;
    if (dt_model_load(o.model, &model, &err) != 0) {
        fprintf(stderr, "db_bench: %s\n", err.msg);
        return 2;
    }
    run_curves *runs = calloc(MAX_RUNS, sizeof *runs);
    int rc = runs ? 0 : 1;
    for (int j = 0; !rc && j < nruns; j++) {
        char *eq = strchr(argv[i + j], '=');
        if (!eq || eq == argv[i + j]) {
            fprintf(stderr, "db_bench: '%s' is not LABEL=RUN_DIR\n", argv[i + j]);
            rc = 2;
            break;
        }
        *eq = '\0';
        runs[j].label = argv[i + j];
        runs[j].dir = eq + 1;
        if (load(&runs[j]) != 0)
            rc = 2;
    }
    if (!rc && report(&o, model, runs, nruns, &err) != 0) {
        fprintf(stderr, "db_bench: %s\n", err.msg);
        rc = err.code == DT_EINVAL ? 2 : 1;
    }
    for (int j = 0; runs && j < nruns; j++)
        for (int k = 0; k < runs[j].ntasks; k++)
            free(runs[j].tasks[k].inc);
    free(runs);
    dt_model_free(model);
    return rc;
}
