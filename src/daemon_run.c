/* daemon_run.c — the run's bookkeeping (see daemon_internal.h): the run's
 * clock, one measurement's and one slot's effect on a task's statistics and
 * on the shared state (under its lock), failed tasks and the model latency.
 * The loop (daemon.c), the resume (daemon_setup.c) and the reports
 * (daemon_publish.c) all account through these, and they call none of those
 * files back.
 */
#include "daemon_internal.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dtune/util.h"

/* ---- time ------------------------------------------------------------------- */

double dt_run_now(const dt_run *r)
{
    return r->remote && r->remote->now ? r->remote->now(r->remote->ctx) : dt_now_seconds();
}

double dt_run_elapsed(const dt_run *r)
{
    return r->elapsed_base + (dt_run_now(r) - r->t0);
}

/* ---- bookkeeping of one measurement ----------------------------------------- */

void dt_run_name_point(const dt_run *r, int k, const dt_point *p, char *task, size_t task_len,
                       uint64_t *config, char *knobs, size_t knobs_len)
{
    const dt_run_task *tr = &r->tasks[k];
    snprintf(task, task_len, "%s", r->model->tasks[k].name);
    *config = dt_space_index(&tr->space, p);
    dt_space_point_str(&tr->space, p, knobs, knobs_len);
}

static int push_curve(dt_run_task *tr, double best)
{
    if (tr->ncurve == tr->capcurve) {
        size_t cap = dt_grow_capacity((size_t)tr->capcurve, (size_t)tr->ncurve + 1);
        if (cap > INT_MAX || dt_resize(&tr->curve, cap, sizeof *tr->curve) != 0)
            return DT_ENOMEM;
        tr->capcurve = (int)cap;
    }
    tr->curve[tr->ncurve++] = best;
    return 0;
}

double dt_run_logged_ms(const dt_measure_result *m)
{
    double ms = (isfinite(m->compile_ms) && m->compile_ms > 0 ? m->compile_ms : 0) +
                (isfinite(m->run_ms) && m->run_ms > 0 ? m->run_ms : 0);
    /* a backend that reports no time (replay): its timed calls */
    if (ms == 0 && isfinite(m->latency_s) && m->latency_s > 0 && m->repeats > 0)
        ms = m->latency_s * 1e3 * m->repeats;
    return ms;
}

bool dt_run_confirms(const dt_run *r, int k)
{
    return r->cfg->measure.confirm_rounds > 0 && !r->raw_bests && r->tasks[k].best_gflops > 0 &&
           !r->tasks[k].dead;
}

/* Updates a task's statistics and the shared run state with one result. */
int dt_run_account(dt_run *r, int k, uint64_t index, const dt_measure_result *m, int trial)
{
    dt_run_task *tr = &r->tasks[k];
    const dt_task *t = &r->model->tasks[k];
    tr->trials = trial;
    if ((int)m->result >= 0 && m->result < DT_RESULT_COUNT)
        tr->failures[m->result]++;
    if (m->result != DT_RESULT_OK)
        snprintf(tr->last_failure, sizeof tr->last_failure, "%s", m->detail);
    /* a would-be new best waits for its confirmation (dt_run_confirm) */
    bool improved = m->result == DT_RESULT_OK && m->gflops > tr->best_gflops &&
                    !dt_run_confirms(r, k);
    double run_s = m->run_ms * 1e-3;
    if (m->result == DT_RESULT_OK && run_s > 0 &&
        (tr->min_run_seconds <= 0 || run_s < tr->min_run_seconds))
        tr->min_run_seconds = run_s;
    if (improved) {
        tr->best_gflops = m->gflops;
        tr->best_index = index;
        tr->last_improvement = trial;
        if (tr->warm_latency_ms <= 0) {
            tr->warm_latency_ms = t->flops / (m->gflops * 1e9) * 1e3;
            tr->reference_config = index;
        }
    }
    if (push_curve(tr, tr->best_gflops))
        return DT_ENOMEM;
    pthread_mutex_lock(&r->state.lock);
    dt_task_state *ts = &r->state.tasks[k];
    ts->trials = trial;
    r->state.measure_ms += dt_run_logged_ms(m);
    if (improved) {
        dt_point p;
        ts->best_gflops = tr->best_gflops;
        ts->best_latency_ms = t->flops / (tr->best_gflops * 1e9) * 1e3;
        ts->best_config = index;
        dt_space_point(&tr->space, index, &p);
        dt_space_point_str(&tr->space, &p, ts->best_knobs, sizeof ts->best_knobs);
        dt_best_step step = { .task = k, .trial = trial, .gflops = tr->best_gflops };
        if (dt_run_state_add_step(&r->state, &step) != 0) {
            pthread_mutex_unlock(&r->state.lock);
            return DT_ENOMEM;
        }
        /* a kernel that beats the bound means the probes read low: the
         * bound follows the kernel (share of the bound stays <= 100 %) and
         * the run says which kernel it was */
        double bound_ms = ts->bound_ms, peak = ts->peak_gflops;
        if (dt_task_state_hold_bound(ts))
            fprintf(stderr, "dtune: warning: task %s config %llu (%s) at %.4f ms, %.1f GFLOPS "
                    "beats the probes' bound (%.4f ms, peak %.1f GFLOPS); the bound follows "
                    "the kernel: the FMA probe or the bandwidth streams read low\n",
                    ts->name, (unsigned long long)index, ts->best_knobs, ts->best_latency_ms,
                    ts->best_gflops, bound_ms, peak);
    }
    r->state.latency_ms = dt_run_state_model_latency(&r->state);
    pthread_mutex_unlock(&r->state.lock);
    return 0;
}

/* ---- bookkeeping of one slot ------------------------------------------------- */

bool dt_run_task_finished(const dt_run *r, int k)
{
    const dt_run_task *tr = &r->tasks[k];
    return tr->trials - tr->last_improvement >= r->cfg->scheduler.finish_after;
}

static void push_latency_history(dt_run_task *tr, double latency_ms)
{
    if (tr->nhistory == DT_SCHED_WINDOW) {
        memmove(tr->latency_history, tr->latency_history + 1,
                (DT_SCHED_WINDOW - 1) * sizeof tr->latency_history[0]);
        tr->nhistory--;
    }
    tr->latency_history[tr->nhistory++] = latency_ms;
}

double dt_run_task_latency(const dt_run *r, int k)
{
    const dt_run_task *tr = &r->tasks[k];
    if (tr->dead && tr->reference_ms > 0)
        return tr->reference_ms;
    return tr->best_gflops > 0 ? r->model->tasks[k].flops / (tr->best_gflops * 1e9) * 1e3 : INFINITY;
}

double dt_run_model_latency(const dt_run *r)
{
    double total = 0;
    for (int k = 0; k < r->model->ntasks; k++)
        total += r->model->tasks[k].count * dt_run_task_latency(r, k);
    return total;
}

/* Bookkeeping after a slot, live or replayed from the log. */
int dt_run_close_slot(dt_run *r, int slot, int k, double elapsed, double latency_ms)
{
    if (k >= 0) {
        dt_run_task *tr = &r->tasks[k];
        tr->slots++;
        tr->measured_slots += tr->trials > tr->trials_at_close;
        tr->trials_at_close = tr->trials;
        push_latency_history(tr, dt_run_task_latency(r, k));
    } else {
        for (int i = 0; i < r->model->ntasks; i++)  /* warm-up's trials are no slot's */
            r->tasks[i].trials_at_close = r->tasks[i].trials;
    }
    pthread_mutex_lock(&r->state.lock);
    r->state.slot = slot;
    r->state.elapsed = elapsed;
    r->state.slot_started = -1;
    r->state.latency_ms = latency_ms;
    if (k >= 0)
        r->state.tasks[k].slots = r->tasks[k].slots;
    for (int i = 0; i < r->model->ntasks; i++)
        r->state.tasks[i].finished = dt_run_task_finished(r, i);
    dt_latency_point pt = { .elapsed = elapsed, .slot = slot, .task = k, .model_latency_ms = latency_ms };
    int rc = dt_run_state_add_point(&r->state, &pt);
    if (r->cfg->budget.target_latency_ms > 0 && latency_ms <= r->cfg->budget.target_latency_ms &&
        r->state.reached_at < 0)
        r->state.reached_at = elapsed;
    pthread_mutex_unlock(&r->state.lock);
    return rc;
}

/* ---- failed tasks ------------------------------------------------------------- */

void dt_run_mark_failed(dt_run *r, int k, const char *reason, double reference_ms)
{
    dt_run_task *tr = &r->tasks[k];
    tr->dead = true;
    tr->reference_ms = reference_ms;
    pthread_mutex_lock(&r->state.lock);
    dt_task_state *ts = &r->state.tasks[k];
    snprintf(ts->failed, sizeof ts->failed, "%s", reason);
    ts->best_latency_ms = reference_ms;
    r->state.latency_ms = dt_run_state_model_latency(&r->state);
    pthread_mutex_unlock(&r->state.lock);
}
