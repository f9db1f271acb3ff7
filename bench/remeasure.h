/* remeasure.h — a target that noise cannot decide, for the bench tools that
 * compare how soon runs reach a share of the best (tuner_bench --sequential,
 * db_bench).
 *
 * The best single measurement any run logged on a task is a lucky draw: on
 * the CPU it sits several per cent above its own config's typical speed, so
 * a run that measures that config again, or never draws as lucky, may never
 * "reach" a share of it. Instead, R of a task is the median of REMEASURE_R
 * fresh measurements of the best config any run found (the runs' final
 * incumbents, ranked by the median of REMEASURE_INCUMBENT fresh measurements
 * each), and a run reaches a share s of R at its first incumbent whose
 * median of REMEASURE_INCUMBENT fresh measurements is at least s·R. Right
 * after the runs (tuner_bench) only incumbents whose own logged
 * measurement is at least s·R are re-measured; a tool that reads runs
 * recorded hours earlier (db_bench) re-measures every incumbent, since the
 * machine may have drifted between the log and now (on the Zen 5 the same
 * kernels read 4–5 % faster in the evening than in the morning of one day).
 * The fresh measurements run after the runs, outside their clocks, and each
 * config is measured once for all runs.
 */
#ifndef DTUNE_BENCH_REMEASURE_H
#define DTUNE_BENCH_REMEASURE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/measure.h"
#include "dtune/space.h"
#include "dtune/util.h"

#define REMEASURE_R 10         /* measurements of the best config: R is their median */
#define REMEASURE_INCUMBENT 3  /* measurements of an incumbent that crosses a share of R */

/* A run's incumbent from the trial it was found at. */
typedef struct incumbent {
    int trial;
    double seconds;            /* the run's (or the task's own) seconds then */
    uint64_t index;            /* config index in the task's space */
    double gflops;             /* the measurement that made it the incumbent */
} incumbent;

static inline int remeasure_by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorted here); NAN when n is 0. */
static inline double remeasure_median_of(double *v, int n)
{
    if (n == 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, remeasure_by_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The median GFLOPS of `times` (at most REMEASURE_R) fresh measurements of
 * config index; a failed one counts as 0. */
static inline int remeasure_median(dt_measurer *m, const dt_space *space, uint64_t index, int times,
                                   double *median, dt_error *err)
{
    double v[REMEASURE_R];
    dt_point p;
    dt_space_point(space, index, &p);
    for (int i = 0; i < times; i++) {
        dt_measure_result r;
        memset(&r, 0, sizeof r);
        int rc = dt_measurer_run(m, space, &p, 1, &r, err);
        if (rc)
            return rc;
        v[i] = r.result == DT_RESULT_OK ? r.gflops : 0;
    }
    *median = remeasure_median_of(v, times);
    return 0;
}

/* One task's medians of REMEASURE_INCUMBENT, each config measured once. The
 * caller sets m and space; remeasure_cache_free frees the rest. */
typedef struct remeasure_cache {
    dt_measurer *m;
    const dt_space *space;
    struct remeasured { uint64_t index; double median; } *e;
    int n;
    size_t cap;
} remeasure_cache;

static inline void remeasure_cache_free(remeasure_cache *c)
{
    free(c->e);
    c->e = NULL;
    c->n = 0;
    c->cap = 0;
}

static inline int remeasure_median3(remeasure_cache *c, uint64_t index, double *out, dt_error *err)
{
    for (int i = 0; i < c->n; i++)
        if (c->e[i].index == index) {
            *out = c->e[i].median;
            return 0;
        }
    int rc = remeasure_median(c->m, c->space, index, REMEASURE_INCUMBENT, out, err);
    if (rc)
        return rc;
    if ((size_t)c->n == c->cap && dt_grow(&c->e, &c->cap, (size_t)c->n + 1, sizeof *c->e) != 0)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    c->e[c->n++] = (struct remeasured){ index, *out };
    return 0;
}

/* R of one task from the final incumbents of n runs (finals[i]; NULL for a
 * run with none): the median of REMEASURE_R measurements of the one whose
 * median of REMEASURE_INCUMBENT is highest. 0 when no run has one. */
static inline int remeasure_target(remeasure_cache *c, const incumbent *const *finals, int n, double *r,
                                   dt_error *err)
{
    uint64_t best = 0;
    double best_m3 = -1;
    for (int i = 0; i < n; i++) {
        if (!finals[i])
            continue;
        double m3;
        int rc = remeasure_median3(c, finals[i]->index, &m3, err);
        if (rc)
            return rc;
        if (m3 > best_m3)
            best_m3 = m3, best = finals[i]->index;
    }
    *r = 0;
    return best_m3 < 0 ? 0 : remeasure_median(c->m, c->space, best, REMEASURE_R, r, err);
}

/* *at: the first of the n incumbents (in trial order) whose median of
 * REMEASURE_INCUMBENT is at least goal, and with logged_too whose own logged
 * measurement is too; -1 when none. */
static inline int remeasure_reach(remeasure_cache *c, const incumbent *inc, int n, double goal,
                                  bool logged_too, int *at, dt_error *err)
{
    *at = -1;
    for (int i = 0; i < n; i++) {
        if (logged_too && inc[i].gflops < goal)
            continue;
        double m3;
        int rc = remeasure_median3(c, inc[i].index, &m3, err);
        if (rc)
            return rc;
        if (m3 >= goal) {
            *at = i;
            return 0;
        }
    }
    return 0;
}

#endif
