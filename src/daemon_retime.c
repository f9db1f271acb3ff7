/* daemon_retime.c — the run's end: each task's best configs timed again side
 * by side, and the best median kept.
 *
 * A run keeps each config's one measurement, and among hundreds of configs
 * within a percent of each other the fastest is partly the fastest moment of
 * the machine: on the Zen 4 VM resnet18's layer4_3x3 kept a config logged at
 * 1.64 ms that re-measures 1.77–2.08 ms, while configs logged within 1 % of
 * it re-measure 1.65–1.72 in the same minutes
 * (bench/out/retime_l4_r18_t1_zen4_2026-11-28.txt). So when the run stops
 * (budget, target, every task finished, max_slots; not on a signal, which
 * asks to exit at once) the budget.retime_top best configs of every tuned
 * task are measured again for budget.retime_rounds rounds, each round every
 * task's configs back to back, each result logged as a "retime" record. A
 * task's result becomes its config with the lowest median over its ok
 * re-measurements (a config needs ok results in most rounds), at that
 * median; best.json keeps the task's figure from before beside it
 * (logged_best_ms). The tuners, the curves and the database keep the
 * figures from before. A resume applies the logged re-timing the same way
 * (dt_run_retime_replay). Confirmation (daemon_confirm.c) times a would-be
 * new best beside its task's best through the same side-by-side rounds
 * (dt_run_side_by_side). Time for it is held back from the budget: tuning
 * stops early by 1.5 times each task's least run time of a measurement
 * times the configs and rounds (dt_run_retime_reserve). It measures where the run does:
 * its own measurer, or in an MPI run worker 0 once every slot has ended
 * (the workers are machines of one kind), so the one loop ends every run
 * the same way.
 */
#include "daemon_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "dtune/util.h"

/* The re-timing's measurements take longer than each task's fastest one,
 * and the budget's end should not pass: the reserve is this many times the
 * minima's sum (a 60 s resnet18 run on the Zen 4 ended at 60.8 s with the
 * minima alone, at 59.5 s with 1.5 times them). */
#define RETIME_RESERVE_FACTOR 1.5

static bool retimes(const dt_run *r)
{
    return r->cfg->budget.retime_top > 0;
}

double dt_run_retime_reserve(const dt_run *r)
{
    if (!retimes(r))
        return 0;
    double per_round = 0;
    for (int k = 0; k < r->model->ntasks; k++)
        per_round += r->tasks[k].dead ? 0 : r->tasks[k].min_run_seconds;
    return RETIME_RESERVE_FACTOR * per_round * r->cfg->budget.retime_top *
           r->cfg->budget.retime_rounds;
}

static int log_retime(dt_run *r, int k, const dt_point *p, const dt_measure_result *m, int round,
                      void *ctx, dt_error *err)
{
    dt_retime_record rec;
    memset(&rec, 0, sizeof rec);
    dt_run_name_point(r, k, p, rec.task, sizeof rec.task, &rec.config, rec.knobs,
                      sizeof rec.knobs);
    rec.task_index = k;
    rec.m = *m;
    rec.round = round + 1;
    rec.time = dt_run_elapsed(r);
    return dt_tunelog_append_retime(r->log, &rec, err);
}

/* One round: every side's configs, side after side. Returns 0, DT_ECANCELED
 * when stop cut it, or the measurer's or the log's error. */
static int one_round(dt_run *r, dt_run_measure_fn measure, dt_run_side *sides, int nsides,
                     int round, const dt_measure_limit *limit, dt_run_side_log_fn log, void *ctx,
                     dt_error *err)
{
    dt_measure_result res[DT_TUNER_TOP_MAX];
    for (int s = 0; s < nsides; s++) {
        dt_run_side *t = &sides[s];
        if (t->n == 0)
            continue;
        int k = t->task;
        int got = measure(r, k, &r->tasks[k].space, t->points, t->n, res, limit, err);
        if (got < 0)
            return got;
        for (int i = 0; i < got; i++) {
            int rc = log(r, k, &t->points[i], &res[i], round, ctx, err);
            if (rc)
                return rc;
            t->ms[round * t->n + i] = res[i].result == DT_RESULT_OK ? res[i].latency_s * 1e3 : NAN;
        }
        if (got < t->n)
            return DT_ECANCELED;
    }
    return 0;
}

int dt_run_side_by_side(dt_run *r, dt_run_measure_fn measure, dt_run_side *sides, int nsides,
                        int rounds, const dt_measure_limit *limit, dt_run_side_log_fn log,
                        void *ctx, int *done, dt_error *err)
{
    int rc = 0;
    *done = 0;
    while (rc == 0 && *done < rounds) {
        rc = one_round(r, measure, sides, nsides, *done, limit, log, ctx, err);
        *done += rc == 0;
    }
    return rc;
}

double dt_run_side_median(const dt_run_side *t, int i, int rounds)
{
    double v[100];
    size_t m = 0;
    for (int q = 0; q < rounds && m < sizeof v / sizeof v[0]; q++)
        if (isfinite(t->ms[q * t->n + i]))
            v[m++] = t->ms[q * t->n + i];
    if (2 * (int)m <= rounds)
        return NAN;
    gsl_sort(v, 1, m);
    return gsl_stats_median_from_sorted_data(v, 1, m);
}

/* Task k's result becomes its best median; returns whether its config changed. */
static bool keep_winner(dt_run *r, int k, const dt_run_side *t, int rounds)
{
    int best = -1;
    double best_ms = INFINITY;
    for (int i = 0; i < t->n; i++) {
        double ms = dt_run_side_median(t, i, rounds);
        if (isfinite(ms) && ms < best_ms) {
            best_ms = ms;
            best = i;
        }
    }
    if (best < 0)
        return false;
    dt_run_task *tr = &r->tasks[k];
    const dt_task *task = &r->model->tasks[k];
    uint64_t index = dt_space_index(&tr->space, &t->points[best]);
    bool changed = index != tr->best_index;
    tr->best_gflops = task->flops / (best_ms * 1e-3) * 1e-9;
    tr->best_index = index;
    pthread_mutex_lock(&r->state.lock);
    dt_task_state *ts = &r->state.tasks[k];
    ts->logged_best_ms = ts->best_latency_ms;
    ts->best_gflops = tr->best_gflops;
    ts->best_latency_ms = best_ms;
    ts->best_config = index;
    dt_space_point_str(&tr->space, &t->points[best], ts->best_knobs, sizeof ts->best_knobs);
    dt_task_state_hold_bound(ts);
    r->state.latency_ms = dt_run_state_model_latency(&r->state);
    pthread_mutex_unlock(&r->state.lock);
    return changed;
}

int dt_run_retime(dt_run *r, dt_run_measure_fn measure, const atomic_int *stop, dt_error *err)
{
    if (!retimes(r))
        return 0;
    int ntasks = r->model->ntasks, top = r->cfg->budget.retime_top;
    int rounds = r->cfg->budget.retime_rounds, configs = 0, tasks = 0;
    dt_run_side *rt = calloc((size_t)ntasks, sizeof *rt);
    if (!rt)
        return dt_error_set(err, DT_ENOMEM, "out of memory re-timing the best configs");
    int rc = 0;
    for (int k = 0; k < ntasks && rc == 0; k++) {
        rt[k].task = k;
        if (r->tasks[k].dead)
            continue;
        int n = dt_tuner_top(r->tasks[k].tuner, top, rt[k].points);
        rt[k].n = n > 0 ? n : 0;
        rt[k].ms = rt[k].n ? calloc((size_t)(rt[k].n * rounds), sizeof *rt[k].ms) : NULL;
        if (n < 0 || (rt[k].n && !rt[k].ms))
            rc = dt_error_set(err, DT_ENOMEM, "out of memory re-timing the best configs");
        configs += rt[k].n;
        tasks += rt[k].n > 0;
    }
    double before = dt_run_model_latency(r), t0 = dt_now_seconds();
    int done = 0;
    dt_measure_limit limit = { .deadline = 0, .stop = stop };
    if (rc == 0)
        rc = dt_run_side_by_side(r, measure, rt, ntasks, rounds, &limit, log_retime, NULL, &done,
                                 err);
    int changed = 0;
    if (rc == 0)
        for (int k = 0; k < ntasks; k++)
            changed += rt[k].n > 0 && keep_winner(r, k, &rt[k], rounds);
    if (rc == 0 && tasks > 0)
        printf("dtune: re-timed the best %d configs of %d tasks side by side, %d rounds, %.1f s: "
               "model latency %.4f ms as logged, %.4f ms re-timed (%d tasks keep another config)\n",
               configs, tasks, rounds, dt_now_seconds() - t0, before, dt_run_model_latency(r),
               changed);
    else if (rc == DT_ECANCELED)
        printf("dtune: re-timing stopped after %d of %d rounds; the logged figures stand\n", done,
               rounds);
    fflush(stdout);
    for (int k = 0; k < ntasks; k++)
        free(rt[k].ms);
    free(rt);
    return rc == DT_ECANCELED ? 0 : rc;
}

/* ---- a resume's re-timing records --------------------------------------------- */

#define RETIME_ROUNDS_MAX 100   /* budget.retime_rounds at most */

/* One task's newest re-timing as the log holds it. */
typedef struct dt_run_retimed {
    dt_point points[DT_TUNER_TOP_MAX];
    uint64_t configs[DT_TUNER_TOP_MAX];
    int n;
    int rounds;                /* highest round seen */
    double *ms;                /* [round * DT_TUNER_TOP_MAX + i], NAN: none */
} dt_run_retimed;

static void retimed_reset(dt_run_retimed *t)
{
    t->n = 0;
    t->rounds = 0;
    for (int i = 0; t->ms && i < RETIME_ROUNDS_MAX * DT_TUNER_TOP_MAX; i++)
        t->ms[i] = NAN;
}

void dt_run_retime_forget(dt_run *r, int k)
{
    if (r->retimed)
        retimed_reset(&r->retimed[k]);
}

int dt_run_retime_replay(dt_run *r, int k, const dt_retime_record *rec)
{
    if (rec->round < 1 || rec->round > RETIME_ROUNDS_MAX || rec->config >= r->tasks[k].space.size)
        return 0;
    if (!r->retimed && !(r->retimed = calloc((size_t)r->model->ntasks, sizeof *r->retimed)))
        return DT_ENOMEM;
    dt_run_retimed *t = &r->retimed[k];
    if (!t->ms) {
        if (!(t->ms = malloc(RETIME_ROUNDS_MAX * DT_TUNER_TOP_MAX * sizeof *t->ms)))
            return DT_ENOMEM;
        retimed_reset(t);
    }
    int i = 0;
    while (i < t->n && t->configs[i] != rec->config)
        i++;
    if (rec->round == 1 && (t->rounds > 1 || i < t->n)) {   /* a later re-timing */
        retimed_reset(t);
        i = 0;
    }
    if (i == t->n) {
        if (t->n == DT_TUNER_TOP_MAX)
            return 0;
        t->configs[t->n] = rec->config;
        dt_space_point(&r->tasks[k].space, rec->config, &t->points[t->n++]);
    }
    if (rec->round > t->rounds)
        t->rounds = rec->round;
    t->ms[(rec->round - 1) * DT_TUNER_TOP_MAX + i] =
        rec->m.result == DT_RESULT_OK ? rec->m.latency_s * 1e3 : NAN;
    return 0;
}

/* Task k's whole re-timing (every round the config asks for) into its
 * result, as keep_winner did at the live run's end. */
static int apply_retimed(dt_run *r, int k, const dt_run_retimed *t)
{
    int rounds = r->cfg->budget.retime_rounds;
    if (t->n == 0 || t->rounds < rounds || r->tasks[k].dead)
        return 0;
    dt_run_side *side = calloc(1, sizeof *side);
    double *ms = malloc((size_t)(rounds * t->n) * sizeof *ms);
    if (!side || !ms) {
        free(side);
        free(ms);
        return DT_ENOMEM;
    }
    side->task = k;
    side->n = t->n;
    side->ms = ms;
    memcpy(side->points, t->points, (size_t)t->n * sizeof *t->points);
    for (int q = 0; q < rounds; q++)
        for (int i = 0; i < t->n; i++)
            ms[q * t->n + i] = t->ms[q * DT_TUNER_TOP_MAX + i];
    keep_winner(r, k, side, rounds);
    free(ms);
    free(side);
    return 0;
}

int dt_run_retime_replayed(dt_run *r, bool apply)
{
    int rc = 0;
    for (int k = 0; r->retimed && k < r->model->ntasks; k++) {
        if (apply && rc == 0)
            rc = apply_retimed(r, k, &r->retimed[k]);
        free(r->retimed[k].ms);
    }
    free(r->retimed);
    r->retimed = NULL;
    return rc;
}
