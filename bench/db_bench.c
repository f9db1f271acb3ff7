/* db_bench.c — how much a run gains from the tuning database: trials to
 * reach 95 % of the best, per task, across runs of one model.
 *
 *   db_bench LABEL=RUN_DIR LABEL=RUN_DIR ...
 *
 * Each run's tuning.jsonl gives, per task, its best-so-far GFLOPS after each
 * of the task's trials (ok results only; trial numbers as logged, so the
 * re-measurements a database run starts with count as trials). The goal of
 * a task is 95 % of the best final GFLOPS any of the given runs reached on
 * it; each run's row is the first trial at which its best-so-far meets the
 * goal ("-" when it never does). The last lines give, per run, how many
 * tasks reached the goal and the median trials over all tasks (a task that
 * never reached it counts as more than any), and the median over tasks of
 * the first run's trials divided by this run's. scripts/db_benefit.sh runs
 * the runs (no database, an earlier run of the model, another model) and
 * calls this.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/model.h"
#include "dtune/tunelog.h"

#define MAX_RUNS 8
#define MAX_TASKS 128
#define GOAL 0.95

typedef struct task_curve {
    char name[DT_NAME_MAX];
    int n, cap;
    double *best;              /* best-so-far after trial i + 1 */
} task_curve;

typedef struct run_curves {
    const char *label, *dir;
    int ntasks;
    task_curve tasks[MAX_TASKS];
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
    task_curve *t = task_named(ctx, rec->task);
    if (!t || rec->trial < 1)
        return t ? 0 : DT_ENOMEM;
    while (t->cap < rec->trial) {
        int cap = t->cap ? 2 * t->cap : 256;
        double *grown = realloc(t->best, (size_t)cap * sizeof *grown);
        if (!grown)
            return DT_ENOMEM;
        t->best = grown;
        t->cap = cap;
    }
    double before = t->n > 0 ? t->best[t->n - 1] : 0;
    for (; t->n < rec->trial - 1; t->n++)
        t->best[t->n] = before;
    bool ok = rec->m.result == DT_RESULT_OK && isfinite(rec->m.gflops);
    t->best[t->n] = ok && rec->m.gflops > before ? rec->m.gflops : before;
    t->n++;
    return 0;
}

static int load(run_curves *r)
{
    char path[DT_PATH_MAX + 16];
    dt_error err;
    snprintf(path, sizeof path, "%s/tuning.jsonl", r->dir);
    dt_tunelog_visitor v = { .measure = on_measure, .ctx = r };
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

static void report(run_curves *runs, int nruns)
{
    const run_curves *first = &runs[0];
    double trials[MAX_RUNS][MAX_TASKS], ratios[MAX_RUNS][MAX_TASKS];
    int reached[MAX_RUNS] = { 0 }, nratio[MAX_RUNS] = { 0 };
    printf("%-20s %10s", "task", "goal");
    for (int j = 0; j < nruns; j++)
        printf(" %14s", runs[j].label);
    printf("\n");
    for (int k = 0; k < first->ntasks; k++) {
        const char *name = first->tasks[k].name;
        double best = 0;
        for (int j = 0; j < nruns; j++) {
            const task_curve *t = find(&runs[j], name);
            if (t && t->n > 0 && t->best[t->n - 1] > best)
                best = t->best[t->n - 1];
        }
        printf("%-20s %10.2f", name, GOAL * best);
        int base = trials_to(&first->tasks[k], GOAL * best);
        for (int j = 0; j < nruns; j++) {
            int n = trials_to(find(&runs[j], name), GOAL * best);
            trials[j][k] = n > 0 ? n : INFINITY;
            reached[j] += n > 0;
            if (n > 0 && base > 0)
                ratios[j][nratio[j]++] = (double)base / n;
            if (n > 0)
                printf(" %14d", n);
            else
                printf(" %14s", "-");
        }
        printf("\n");
    }
    printf("%-31s", "tasks reaching 95 %");
    for (int j = 0; j < nruns; j++)
        printf(" %11d/%-2d", reached[j], first->ntasks);
    printf("\n%-31s", "median trials to 95 %");
    for (int j = 0; j < nruns; j++)
        printf(" %14.1f", median(trials[j], first->ntasks));
    printf("\n%-31s", "median of first/this");
    for (int j = 0; j < nruns; j++)
        printf(" %14.2f", median(ratios[j], nratio[j]));
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
        for (int k = 0; k < runs[j].ntasks; k++)
            free(runs[j].tasks[k].best);
    free(runs);
    return 0;
}
