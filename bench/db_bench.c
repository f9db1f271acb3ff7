/* db_bench.c — how much a run gains from the tuning database: trials to
 * reach 95 % of the best, per task, across runs of one model.
 *
 *   db_bench LABEL=RUN_DIR LABEL=RUN_DIR ...
 *
 * Each run's tuning.jsonl gives, per task, its best-so-far GFLOPS after each
 * of the task's trials (ok results only; trial numbers as logged, so the
 * re-measurements a database run starts with count as trials) and the
 * task's own tuning seconds at each (task_clock.h). The goal of a task is
 * 95 % of the best final GFLOPS any of the given runs reached on it; each
 * run's row gives the first trial at which its best-so-far meets the goal
 * and the task's seconds then ("-" when it never does). The last lines
 * give, per run, how many tasks reached the goal, the median trials and
 * seconds over all tasks (a task that never reached it counts as more than
 * any), and the median over tasks of the first run's trials (seconds)
 * divided by this run's. scripts/db_benefit.sh runs the runs (no database,
 * an earlier run of the model, another model) and calls this.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/model.h"
#include "dtune/tunelog.h"
#include "task_clock.h"

#define MAX_RUNS 8
#define MAX_TASKS 128
#define GOAL 0.95

typedef struct task_curve {
    char name[DT_NAME_MAX];
    int n, cap;
    double *best;              /* best-so-far after trial i + 1 */
    double *seconds;           /* the task's own seconds after trial i + 1 */
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

static int grow(task_curve *t, int n)
{
    while (t->cap < n) {
        int cap = t->cap ? 2 * t->cap : 256;
        double *best = realloc(t->best, (size_t)cap * sizeof *best);
        if (best)
            t->best = best;
        double *seconds = best ? realloc(t->seconds, (size_t)cap * sizeof *seconds) : NULL;
        if (!seconds)
            return DT_ENOMEM;
        t->seconds = seconds;
        t->cap = cap;
    }
    return 0;
}

static int on_measure(void *ctx, const dt_measure_record *rec)
{
    run_curves *r = ctx;
    task_curve *t = task_named(r, rec->task);
    if (!t)
        return DT_ENOMEM;
    double seconds = task_clock_measure(&r->clock, (int)(t - r->tasks), rec->time);
    if (rec->trial < 1)
        return 0;
    if (grow(t, rec->trial) != 0)
        return DT_ENOMEM;
    double before = t->n > 0 ? t->best[t->n - 1] : 0;
    double before_s = t->n > 0 ? t->seconds[t->n - 1] : 0;
    for (; t->n < rec->trial - 1; t->n++) {
        t->best[t->n] = before;
        t->seconds[t->n] = before_s;
    }
    bool ok = rec->m.result == DT_RESULT_OK && isfinite(rec->m.gflops);
    t->best[t->n] = ok && rec->m.gflops > before ? rec->m.gflops : before;
    t->seconds[t->n] = seconds;
    t->n++;
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

/* First trial whose best-so-far reaches goal; 0 when none. */
static int trials_to(const task_curve *t, double goal)
{
    for (int i = 0; t && i < t->n; i++)
        if (t->best[i] >= goal)
            return i + 1;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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

/* The goal of task `name`: GOAL of the best final GFLOPS of any run. */
static double goal_of(const run_curves *runs, int nruns, const char *name)
{
    double best = 0;
    for (int j = 0; j < nruns; j++) {
        const task_curve *t = find(&runs[j], name);
        if (t && t->n > 0 && t->best[t->n - 1] > best)
            best = t->best[t->n - 1];
    }
    return GOAL * best;
}

static void report(const run_curves *runs, int nruns)
{
    const run_curves *first = &runs[0];
    static reach r[MAX_RUNS];
    memset(r, 0, sizeof r);
    printf("%-20s %10s", "task", "goal");
    for (int j = 0; j < nruns; j++)
        printf("  %20s", runs[j].label);
    printf("\n%-31s", "");
    for (int j = 0; j < nruns; j++)
        printf("  %8s %11s", "trials", "seconds");
    printf("\n");
    for (int k = 0; k < first->ntasks; k++) {
        const char *name = first->tasks[k].name;
        double goal = goal_of(runs, nruns, name);
        int base = trials_to(&first->tasks[k], goal);
        printf("%-20s %10.2f", name, goal);
        for (int j = 0; j < nruns; j++) {
            const task_curve *t = find(&runs[j], name);
            int n = trials_to(t, goal);
            r[j].trials[k] = n > 0 ? n : INFINITY;
            r[j].seconds[k] = n > 0 ? t->seconds[n - 1] : INFINITY;
            r[j].reached += n > 0;
            if (n > 0 && base > 0) {
                r[j].trial_ratio[r[j].nratio] = (double)base / n;
                r[j].second_ratio[r[j].nratio++] = first->tasks[k].seconds[base - 1] / t->seconds[n - 1];
            }
            if (n > 0)
                printf("  %8d %11.1f", n, t->seconds[n - 1]);
            else
                printf("  %8s %11s", "-", "-");
        }
        printf("\n");
    }
    printf("%-31s", "tasks reaching 95 %");
    for (int j = 0; j < nruns; j++)
        printf("  %17d/%-2d", r[j].reached, first->ntasks);
    printf("\n%-31s", "median to 95 %");
    for (int j = 0; j < nruns; j++)
        printf("  %8.1f %11.1f", median(r[j].trials, first->ntasks), median(r[j].seconds, first->ntasks));
    printf("\n%-31s", "median of first/this");
    for (int j = 0; j < nruns; j++)
        printf("  %8.2f %11.2f", median(r[j].trial_ratio, r[j].nratio),
               median(r[j].second_ratio, r[j].nratio));
    printf("\n");
}

int main(int argc, char **argv)
{
    int nruns = argc - 1;
    run_curves *runs = calloc(MAX_RUNS, sizeof *runs);
    if (!runs)
        return 1;
    if (nruns < 1 || nruns > MAX_RUNS) {
        fprintf(stderr, "usage: db_bench LABEL=RUN_DIR ... (1 to %d runs; the first is the baseline)\n",
                MAX_RUNS);
        return 2;
    }
    for (int j = 0; j < nruns; j++) {
        char *eq = strchr(argv[j + 1], '=');
        if (!eq || eq == argv[j + 1]) {
            fprintf(stderr, "db_bench: '%s' is not LABEL=RUN_DIR\n", argv[j + 1]);
            return 2;
        }
        *eq = '\0';
        runs[j].label = argv[j + 1];
        runs[j].dir = eq + 1;
        if (load(&runs[j]) != 0)
            return 2;
    }
    report(runs, nruns);
    for (int j = 0; j < nruns; j++)
        for (int k = 0; k < runs[j].ntasks; k++) {
            free(runs[j].tasks[k].best);
            free(runs[j].tasks[k].seconds);
        }
    free(runs);
    return 0;
}
