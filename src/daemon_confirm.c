/* daemon_confirm.c — confirmed figures: a would-be new best is timed again
 * beside its task's best before it counts, and the machine's drift is read
 * from a fixed reference.
 *
 * A task's best used to be the minimum over thousands of short, noisy
 * measurements: the luckiest one, and on a machine whose speed moves, one
 * taken at a fast moment. So when a measurement of a config is faster than
 * its task's best (and the task has one), it does not count yet
 * (dt_run_account leaves the best alone): the candidate and the best are
 * timed measure.confirm_rounds more rounds side by side, in turns, in the
 * same measurement process (daemon_retime.c's dt_run_side_by_side), each
 * timing logged as a "confirm" record. The candidate becomes the best only
 * when its median over the rounds is below the best's; either way both
 * take their medians as their figures (the best's re-measured one too), in
 * the run, the shared state and the task's tuner, and the decision is
 * logged as a "confirmed" record, which a resume applies the same way
 * (dt_run_confirm_apply), so a resumed run has the same bests. A config
 * with no median (fewer than half its timings ok, or a stop cut the rounds)
 * is not shown faster: the best stays.
 *
 * Drift: at each slot's end the slot's task times its reference config (its
 * first valid config, whose first latency was taken in the warm-up, at the
 * run's start) once, a "drift" record. The first latency over the latency
 * now is the machine's speed relative to the start; the median of the
 * newest DT_RUN_DRIFT_WINDOW readings is what /status, /metrics, the page
 * and the live line show. Both run only when measure.confirm_rounds > 0.
 */
#include "daemon_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

void dt_run_confirm_count(dt_run *r, const dt_measure_result *m)
{
    pthread_mutex_lock(&r->state.lock);
    r->state.confirm_ms += dt_run_logged_ms(m);
    pthread_mutex_unlock(&r->state.lock);
}

static int log_confirm(dt_run *r, int k, const dt_point *p, const dt_measure_result *m, int round,
                       void *ctx, dt_error *err)
{
    dt_confirm_record rec;
    memset(&rec, 0, sizeof rec);
    dt_run_name_point(r, k, p, rec.task, sizeof rec.task, &rec.config, rec.knobs,
                      sizeof rec.knobs);
    rec.task_index = k;
    rec.m = *m;
    rec.round = round + 1;
    rec.slot = *(const int *)ctx;
    rec.time = dt_run_elapsed(r);
    int rc = dt_tunelog_append_confirm(r->log, &rec, err);
    if (rc == 0)
        dt_run_confirm_count(r, m);
    return rc;
}

/* rec's figures (dt_confirmed_figures) for task k. */
static void pair_gflops(const dt_run *r, int k, const dt_confirmed_record *rec, double *candidate,
                        double *incumbent)
{
    dt_confirmed_figures(rec, r->model->tasks[k].flops, r->tasks[k].best_gflops, candidate, incumbent);
}

static void set_tuner_figure(dt_run_task *tr, uint64_t index, double gflops)
{
    dt_point p;
    if (index < tr->space.size) {
        dt_space_point(&tr->space, index, &p);
        dt_tuner_set_gflops(tr->tuner, &p, gflops);
    }
}

int dt_run_confirm_apply(dt_run *r, int k, const dt_confirmed_record *rec)
{
    dt_run_task *tr = &r->tasks[k];
    double candidate, incumbent;
    pair_gflops(r, k, rec, &candidate, &incumbent);
    set_tuner_figure(tr, rec->incumbent, incumbent);
    set_tuner_figure(tr, rec->candidate, candidate);  /* live: not recorded yet, no-op */
    double before = tr->best_gflops;
    uint64_t best = rec->accepted ? rec->candidate : rec->incumbent;
    if (best >= tr->space.size)
        return 0;
    tr->best_index = best;
    tr->best_gflops = rec->accepted ? candidate : incumbent;
    if (rec->accepted)
        tr->last_improvement = tr->trials;
    if (tr->ncurve > 0)
        tr->curve[tr->ncurve - 1] = tr->best_gflops;
    int rc = 0;
    dt_point p;
    dt_space_point(&tr->space, best, &p);
    pthread_mutex_lock(&r->state.lock);
    dt_task_state *ts = &r->state.tasks[k];
    r->state.confirmations++;
    r->state.confirmed += rec->accepted != 0;
    ts->best_gflops = tr->best_gflops;
    ts->best_latency_ms = r->model->tasks[k].flops / (tr->best_gflops * 1e9) * 1e3;
    ts->best_config = best;
    dt_space_point_str(&tr->space, &p, ts->best_knobs, sizeof ts->best_knobs);
    dt_task_state_hold_bound(ts);
    if (tr->best_gflops != before) {
        dt_best_step step = { .task = k, .trial = tr->trials, .gflops = tr->best_gflops };
        rc = dt_run_state_add_step(&r->state, &step);
    }
    r->state.latency_ms = dt_run_state_model_latency(&r->state);
    pthread_mutex_unlock(&r->state.lock);
    return rc;
}

int dt_run_confirm(dt_run *r, int slot, int k, const dt_point *candidate, dt_measure_result *m,
                   dt_run_measure_fn measure, const dt_measure_limit *limit, dt_error *err)
{
    dt_run_task *tr = &r->tasks[k];
    uint64_t index = dt_space_index(&tr->space, candidate);
    if (!dt_run_confirms(r, k) || m->result != DT_RESULT_OK || !(m->gflops > tr->best_gflops) ||
        index == tr->best_index)
        return 0;
    int rounds = r->cfg->measure.confirm_rounds, done = 0;
    double ms[2 * DT_CONFIRM_ROUNDS_MAX];
    dt_run_side side = { .task = k, .n = 2, .ms = ms };
    side.points[0] = *candidate;
    dt_space_point(&tr->space, tr->best_index, &side.points[1]);
    int rc = dt_run_side_by_side(r, measure, &side, 1, rounds, limit, log_confirm, &slot, &done,
                                 err);
    if (rc && rc != DT_ECANCELED)
        return rc;
    dt_confirmed_record rec;
    memset(&rec, 0, sizeof rec);
    snprintf(rec.task, sizeof rec.task, "%s", r->model->tasks[k].name);
    rec.task_index = k;
    rec.candidate = index;
    rec.incumbent = tr->best_index;
    rec.candidate_ms = done > 0 ? dt_run_side_median(&side, 0, done) : NAN;
    rec.incumbent_ms = done > 0 ? dt_run_side_median(&side, 1, done) : NAN;
    rec.rounds = done;
    rec.accepted = isfinite(rec.candidate_ms) &&
                   (!isfinite(rec.incumbent_ms) || rec.candidate_ms < rec.incumbent_ms);
    rec.slot = slot;
    rec.time = dt_run_elapsed(r);
    if ((rc = dt_tunelog_append_confirmed(r->log, &rec, err)))
        return rc;
    double figure, incumbent;
    pair_gflops(r, k, &rec, &figure, &incumbent);
    if ((rc = dt_run_confirm_apply(r, k, &rec)))
        return dt_error_set(err, rc, "out of memory");
    m->gflops = figure;                       /* what the tuner records */
    m->latency_s = r->model->tasks[k].flops / (figure * 1e9);
    return 0;
}

/* ---- drift ------------------------------------------------------------------- */

void dt_run_drift_apply(dt_run *r, int k, const dt_measure_result *m)
{
    const dt_run_task *tr = &r->tasks[k];
    bool reading = m->result == DT_RESULT_OK && m->latency_s > 0 && tr->warm_latency_ms > 0;
    if (reading)
        r->drift_ratio[r->ndrift++ % DT_RUN_DRIFT_WINDOW] = tr->warm_latency_ms /
                                                             (m->latency_s * 1e3);
    int n = r->ndrift < DT_RUN_DRIFT_WINDOW ? r->ndrift : DT_RUN_DRIFT_WINDOW;
    double sorted[DT_RUN_DRIFT_WINDOW];
    memcpy(sorted, r->drift_ratio, (size_t)n * sizeof *sorted);
    gsl_sort(sorted, 1, (size_t)n);
    pthread_mutex_lock(&r->state.lock);
    r->state.drift_ms += dt_run_logged_ms(m);
    r->state.drift_readings++;
    if (n > 0)
        r->state.machine_speed = gsl_stats_median_from_sorted_data(sorted, 1, (size_t)n);
    pthread_mutex_unlock(&r->state.lock);
}

int dt_run_drift(dt_run *r, int slot, int k, dt_run_measure_fn measure,
                 const dt_measure_limit *limit, dt_error *err)
{
    dt_run_task *tr = &r->tasks[k];
    if (r->cfg->measure.confirm_rounds <= 0 || tr->dead || tr->warm_latency_ms <= 0 ||
        *limit->stop || (limit->deadline > 0 && dt_run_now(r) >= limit->deadline))
        return 0;
    dt_drift_record rec;
    memset(&rec, 0, sizeof rec);
    dt_point p;
    dt_space_point(&tr->space, tr->reference_config, &p);
    int got = measure(r, k, &tr->space, &p, 1, &rec.m, limit, err);
    if (got <= 0)
        return got;
    dt_run_name_point(r, k, &p, rec.task, sizeof rec.task, &rec.config, rec.knobs,
                      sizeof rec.knobs);
    rec.task_index = k;
    rec.slot = slot;
    rec.time = dt_run_elapsed(r);
    int rc = dt_tunelog_append_drift(r->log, &rec, err);
    if (rc == 0)
        dt_run_drift_apply(r, k, &rec.m);
    return rc;
}
