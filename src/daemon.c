/* daemon.c — the tuning run (see daemon.h): its steps, which the one run
 * loop (daemon_loop.c) takes in order, with one slot in flight or several.
 *
 * The scheduler decides on the daemon's thread. Each task has a space, a tuner whose
 * state lives for the whole run, and its best-so-far curve. The tuner measures
 * through measure_batch, which hands the batch to the measurer (builder pool +
 * runner) and writes every result to the log, fsync'd, before the tuner sees
 * it; so a crash loses at most the batch in flight, and a resume never
 * measures a logged config again (the tuner is fed the log first).
 *
 * Signals only set a flag; the tuner checks it between batches, so the
 * measurement in flight finishes and is logged. A second SIGINT exits at once.
 */
#include "daemon.h"

#include <limits.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dtune/backend.h"
#include "daemon_internal.h"
#include "dtune/measure.h"
#include "dtune/tunelog.h"
#include "dtune/util.h"

/* The only mutable statics: what signal handlers may touch. stop_requested
 * is read by the builder and slot threads too, hence atomic (lock-free, so
 * a handler may store to it). */
static atomic_int stop_requested;
static volatile sig_atomic_t interrupts;

static void on_signal(int sig)
{
    if (sig == SIGINT && interrupts++ > 0)
        _exit(130);
    atomic_store(&stop_requested, 1);
}

const char *dt_stop_reason_name(dt_stop_reason r)
{
    static const char *const names[] = { "none", "target latency reached", "budget spent",
                                         "every task finished", "signal", "max_slots reached" };
    return (int)r >= 0 && r <= DT_STOP_MAX_SLOTS ? names[r] : "?";
}

/* Sets the run's phase and the task being warmed up (-1: none) in the shared
 * state. */
static void set_phase(dt_run *r, const char *phase, int warmup_task)
{
    pthread_mutex_lock(&r->state.lock);
    snprintf(r->state.phase, sizeof r->state.phase, "%s", phase);
    r->state.warmup_task = warmup_task;
    pthread_mutex_unlock(&r->state.lock);
}

/* Logs and accounts task k's measurement *m of p; rec is the record as logged. */
static int log_measurement(dt_run *r, int slot, int k, const dt_point *p,
                           const dt_measure_result *m, dt_measure_record *rec, dt_error *err)
{
    dt_run_task *tr = &r->tasks[k];
    memset(rec, 0, sizeof *rec);
    dt_run_name_point(r, k, p, rec->task, sizeof rec->task, &rec->config, rec->knobs,
                      sizeof rec->knobs);
    rec->task_index = k;
    rec->m = *m;
    rec->slot = slot;
    rec->trial = tr->trials + 1;
    rec->time = dt_run_elapsed(r);
    rec->cost_model_gflops = dt_tuner_cost_model_gflops(tr->tuner);   /* this batch's */
    int rc = dt_tunelog_append_measure(r->log, rec, err);
    if (rc)
        return rc;
    tr->cost_model_gflops = rec->cost_model_gflops;
    r->measured_now++;
    return dt_run_account(r, k, rec->config, m, rec->trial);
}

typedef struct measure_ctx {
    dt_run *run;
    int slot;                  /* the slot measuring (-1: warm-up) */
    int task;
    double deadline;           /* monotonic seconds: the slot's or the budget's end */
} measure_ctx;

/* The budget's seconds for tuning: the total less what the run's end holds
 * back for re-timing the best configs. */
static double tuning_seconds(const dt_run *r)
{
    return r->cfg->budget.total_seconds - dt_run_retime_reserve(r);
}

/* Monotonic seconds at which the run's tuning time is spent. */
static double budget_end(const dt_run *r)
{
    return r->t0 + (tuning_seconds(r) - r->elapsed_base);
}

/* The batch on the remote's workers, in requests of at most max_configs,
 * until one comes back short (the limit ended it): on the worker of the
 * slot holding the task (worker 0 with one slot, or at the run's end). */
static int measure_remote(dt_run *r, int task, const dt_space *space, const dt_point *points,
                          int n, dt_measure_result *results, const dt_measure_limit *limit,
                          dt_error *err)
{
    int max = r->remote->max_configs, done = 0;
    while (done < n) {
        if (*limit->stop || (limit->deadline > 0 && dt_run_now(r) >= limit->deadline))
            break;
        int chunk = n - done < max ? n - done : max, got = 0;
        int rc = dt_run_request(r, task, space, points + done, chunk, limit->deadline,
                                results + done, &got, err);
        if (rc)
            return rc;
        done += got;
        if (got < chunk)
            break;
    }
    return done;
}

/* dt_run_measure_fn: task's points on the run's own measurer or its remote
 * workers. */
static int measure_points(dt_run *r, int task, const dt_space *space, const dt_point *points,
                          int n, dt_measure_result *results, const dt_measure_limit *limit,
                          dt_error *err)
{
    return r->remote ? measure_remote(r, task, space, points, n, results, limit, err)
                     : dt_measurer_run_until(r->measurer, space, points, n, results, limit, err);
}

/* dt_measure_fn for the tuners: measure until the slot or the budget ends or
 * a signal asks to stop (the point in flight finishes), then log each result
 * durably; a would-be new best is confirmed (dt_run_confirm) before the next
 * result is logged, and the tuner, transfer and the database take its
 * confirmed figure. */
static int measure_batch(void *ctx, const dt_space *space, const dt_point *points, int n,
                         dt_measure_result *results, dt_error *err)
{
    measure_ctx *mc = ctx;
    dt_measure_limit limit = { .deadline = mc->deadline, .stop = &stop_requested };
    dt_run *r = mc->run;
    int measured = measure_points(r, mc->task, space, points, n, results, &limit, err);
    /* a confirmation may run past the slot's end (it counts in the slot), not
     * past the budget's */
    dt_measure_limit confirm_limit = { .deadline = budget_end(r), .stop = &stop_requested };
    dt_transfer *x = r->transfer;
    const dt_run_task *tr = &r->tasks[mc->task];
    for (int i = 0; measured > 0 && i < measured; i++) {
        dt_measure_record rec;
        uint64_t best_before = tr->best_index;
        double figure_before = tr->best_gflops;
        int rc = log_measurement(r, mc->slot, mc->task, &points[i], &results[i], &rec, err);
        if (!rc)
            rc = dt_run_confirm(r, mc->slot, mc->task, &points[i], &results[i], measure_points,
                                &confirm_limit, err);
        if (!rc) {
            rec.m = results[i];
            dt_run_db_add(r, mc->task, &rec);
            if (tr->best_index != best_before || tr->best_gflops != figure_before)
                dt_run_db_best(r, mc->task);
        }
        if (!rc && x && dt_transfer_add(x, space, &points[i], &results[i]) != 0)
            rc = dt_error_set(err, DT_ENOMEM, "out of memory keeping a record for transfer");
        if (rc)
            return rc;
    }
    return measured;
}

/* ---- one slot ----------------------------------------------------------------- */

static void fill_sched(dt_run *r, dt_sched_task *st)
{
    for (int k = 0; k < r->model->ntasks; k++) {
        dt_run_task *tr = &r->tasks[k];
        dt_sched_task *s = &st[k];
        s->weight = r->model->tasks[k].count;
        s->flops = r->model->tasks[k].flops;
        s->peak_gflops = tr->peak_gflops;
        s->bytes = r->model->tasks[k].bytes;
        s->bandwidth_gbs = tr->bound_gbs;
        s->group = tr->group;
        s->best_gflops = tr->best_gflops;
        s->pred_gflops = tr->pred.gflops;
        s->pred_ok = tr->pred_ok;
        s->cost_model_gflops = tr->cost_model_gflops;
        s->slots = tr->slots;
        s->measured_slots = tr->measured_slots;
        s->stale_trials = tr->trials - tr->last_improvement;
        s->finished = dt_run_task_finished(r, k);
        s->exhausted = tr->dead || dt_tuner_exhausted(tr->tuner);
        s->nhistory = tr->nhistory;
        memcpy(s->latency_history, tr->latency_history, sizeof s->latency_history);
    }
}

static double slot_seconds_left(const dt_run *r)
{
    double left = tuning_seconds(r) - dt_run_elapsed(r);
    double slot = r->cfg->budget.slot_trials > 0 ? 0 : r->cfg->budget.slot_seconds;
    if (slot <= 0 || slot > left)
        slot = left;
    return slot > 0.001 ? slot : 0.001;
}

/* A task's turn starts from what the run knows of its kind (tuner.transfer):
 * at its first turn, and again whenever the run's records have doubled
 * since its last refresh. */
static int refresh_transfer(dt_run *r, dt_run_task *tr, dt_error *err)
{
    int records = r->transfer ? dt_transfer_records(r->transfer) : 0;
    if (!r->transfer || (tr->transfer_records > 0 && records < 2 * tr->transfer_records))
        return 0;
    double t0 = dt_now_seconds();
    tr->transfer_records = records;
    int used;
    int rc = dt_tuner_transfer(tr->tuner, r->transfer, &used, err);
    r->tuner_overhead += dt_now_seconds() - t0;
    return rc;
}

static int run_task(dt_run *r, int slot, int k, int trials, double seconds, dt_error *err)
{
    double end = budget_end(r), now = dt_run_now(r);
    if (seconds > 0 && now + seconds < end)
        end = now + seconds;
    measure_ctx mc = { r, slot, k, end };
    seconds = end - now;
    if (seconds <= 0)
        return 0;
    dt_tuner_budget b = { .trials = trials, .seconds = seconds, .stop = &stop_requested };
    dt_tuner_stats stats;
    int before = r->tasks[k].trials;
    int rc = refresh_transfer(r, &r->tasks[k], err);
    if (rc)
        return rc;
    rc = dt_tuner_run(r->tasks[k].tuner, &b, measure_batch, &mc, &stats, err);
    r->tuner_overhead += stats.overhead_seconds;
    r->tasks[k].history_bytes = dt_tuner_history_bytes(r->tasks[k].tuner);
    double held = (double)dt_transfer_bytes(r->transfer);
    for (int i = 0; i < r->model->ntasks; i++)
        held += (double)r->tasks[i].history_bytes;
    pthread_mutex_lock(&r->state.lock);
    r->state.history_bytes = held;
    pthread_mutex_unlock(&r->state.lock);
    if (slot >= 0)
        r->tasks[k].last_slot_trials = r->tasks[k].trials - before;
    return rc;
}

static bool same_forecast(const dt_belief_forecast *a, const dt_belief_forecast *b)
{
    return a->gflops == b->gflops && a->lo_gflops == b->lo_gflops &&
           a->hi_gflops == b->hi_gflops && a->horizon == b->horizon;
}

/* The tasks whose fitted curve, or prediction at rec's decision (rows; NULL
 * when no decision started the slot), changed since the log's previous slot
 * record, into rec (fits holds the model's tasks, up to DT_MAX_SCORES); they
 * count as logged once the append succeeds. A slot no decision started keeps
 * the logged predictions. */
static void changed_fits(dt_run *r, const dt_task_score *rows, dt_slot_fit *fits,
                         dt_slot_record *rec)
{
    int n = r->model->ntasks < DT_MAX_SCORES ? r->model->ntasks : DT_MAX_SCORES;
    rec->nfits = 0;
    rec->fits = fits;
    for (int i = 0; i < n; i++) {
        const dt_slot_fit *logged = &r->tasks[i].logged;
        dt_slot_fit now = { .task_index = i, .curve = r->tasks[i].fit,
                            .pred = rows ? rows[i].pred : logged->pred };
        if (!dt_belief_curve_equal(&now.curve, &logged->curve) ||
            !same_forecast(&now.pred, &logged->pred))
            fits[rec->nfits++] = now;
    }
}

static int write_slot(dt_run *r, int slot, int k, const dt_task_score *rows, double decision_ms,
                      dt_error *err)
{
    dt_slot_record rec;
    memset(&rec, 0, sizeof rec);
    rec.slot = slot;
    rec.task_index = k;
    snprintf(rec.task, sizeof rec.task, "%s", k >= 0 ? r->model->tasks[k].name : "warm-up");
    rec.time = dt_run_elapsed(r);
    rec.model_latency_ms = dt_run_model_latency(r);
    rec.decision_ms = decision_ms;
    rec.nscores = r->model->ntasks < DT_MAX_SCORES ? r->model->ntasks : DT_MAX_SCORES;
    for (int i = 0; i < rec.nscores; i++)
        rec.scores[i] = rows && isfinite(rows[i].score) ? rows[i].score : 0.0;
    dt_slot_fit *fits = malloc((size_t)(rec.nscores > 0 ? rec.nscores : 1) * sizeof *fits);
    if (!fits)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    changed_fits(r, rows, fits, &rec);
    int rc = dt_tunelog_append_slot(r->log, &rec, err);
    for (int i = 0; !rc && i < rec.nfits; i++)
        r->tasks[fits[i].task_index].logged = fits[i];
    free(fits);
    if (rc)
        return rc;
    if ((rc = dt_run_close_slot(r, slot, k, rec.time, rec.model_latency_ms)))
        return dt_error_set(err, rc, "out of memory");
    return dt_run_publish(r, true, err);
}

/* ---- failed tasks ------------------------------------------------------------- */

/* "no valid config in 64 trials: 64 wrong_output (last: element 3 is ...)" */
static void failure_reason(const dt_run_task *tr, char *buf, size_t len)
{
    int most = DT_RESULT_COMPILE_ERROR;
    for (int c = DT_RESULT_COMPILE_ERROR; c < DT_RESULT_COUNT; c++)
        if (tr->failures[c] > tr->failures[most])
            most = c;
    snprintf(buf, len, "no valid config in %d trials: %d %s (last failure: %s)", tr->trials,
             tr->failures[most], dt_result_name((dt_result_class)most),
             tr->last_failure[0] ? tr->last_failure : "no detail");
}

/* Times task k's reference implementation, logs the failure and marks it:
 * the run goes on without the task and counts it at that time. */
static int fail_task(dt_run *r, int k, dt_error *err)
{
    const dt_task *t = &r->model->tasks[k];
    dt_failed_record rec;
    memset(&rec, 0, sizeof rec);
    failure_reason(&r->tasks[k], rec.reason, sizeof rec.reason);
    dt_daemon_probe probe = { .reference = true };
    int rc = dt_run_probe(r, k, &probe, err);
    if (rc)
        return rc;
    const dt_measure_result ref = probe.result;
    snprintf(rec.timed_on, sizeof rec.timed_on, "%s", probe.where);
    if (ref.result == DT_RESULT_OK && ref.latency_s > 0) {
        rec.reference_s = ref.latency_s;
    } else {
        /* the reference outlived the measurement limit: count it at that */
        rec.reference_s = r->cfg->measure.timeout_seconds;
        size_t used = strlen(rec.reason);
        snprintf(rec.reason + used, sizeof rec.reason - used,
                 "; its reference could not be timed (%s), counted at the %g s limit",
                 dt_result_name(ref.result), r->cfg->measure.timeout_seconds);
    }
    snprintf(rec.task, sizeof rec.task, "%s", t->name);
    rec.task_index = k;
    rec.time = dt_run_elapsed(r);
    if ((rc = dt_tunelog_append_failed(r->log, &rec, err)))
        return rc;
    dt_run_mark_failed(r, k, rec.reason, rec.reference_s * 1e3);
    fprintf(stderr, "dtune: task %s failed: %s; counted at its reference implementation's "
            "%.4g ms\n", t->name, rec.reason, rec.reference_s * 1e3);
    return 0;
}

/* DT_EFAIL naming every task's reason when no task is left to tune. */
static int every_task_failed(dt_run *r, dt_error *err)
{
    char list[DT_ERROR_MSG_MAX];
    size_t used = 0;
    for (int k = 0; k < r->model->ntasks && used < sizeof list; k++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s: %s", k ? "; " : "",
                                 r->model->tasks[k].name, r->state.tasks[k].failed);
    return dt_error_set(err, DT_EFAIL, "every task of model %s failed, nothing to tune (%s)",
                        r->model->name, list);
}

/* ---- warm-up ------------------------------------------------------------------ */

static bool budget_spent(const dt_run *r)
{
    return dt_run_elapsed(r) >= tuning_seconds(r);
}

/* Every task has a latency: a valid measurement, or failed at its reference. */
static bool every_task_known(const dt_run *r)
{
    for (int k = 0; k < r->model->ntasks; k++)
        if (!isfinite(dt_run_task_latency(r, k)))
            return false;
    return true;
}

static int warm_task(dt_run *r, int k, dt_error *err)
{
    dt_run_task *tr = &r->tasks[k];
    int rc = 0;
    while (rc == 0 && tr->best_gflops <= 0 && !tr->dead && !stop_requested && !budget_spent(r)) {
        if (tr->trials >= DT_WARMUP_MAX_TRIALS || dt_tuner_exhausted(tr->tuner))
            rc = fail_task(r, k, err);
        else
            rc = run_task(r, -1, k, DT_WARMUP_BATCH, 0, err);
    }
    return rc;
}

/* Whether a warm-up may not start: a stop or the budget's end cuts it. */
static bool warm_up_cut(const dt_run *r)
{
    return stop_requested || budget_spent(r);
}

/* Once every task's warm-up ended: DT_EFAIL when every task failed (a stop
 * or the budget's end does not excuse that), else the warm-up's record
 * (slot 0) once every task has a latency; the tuning phase. */
static int end_warm_up(dt_run *r, dt_error *err)
{
    int rc = 0, failed = 0;
    for (int k = 0; k < r->model->ntasks; k++)
        failed += r->tasks[k].dead;
    if (failed == r->model->ntasks)
        return every_task_failed(r, err);
    if (r->slot < 0 && every_task_known(r)) {
        r->slot = 0;
        double start = dt_run_model_latency(r);
        pthread_mutex_lock(&r->state.lock);
        r->state.start_latency_ms = start;
        pthread_mutex_unlock(&r->state.lock);
        rc = write_slot(r, r->slot, -1, NULL, 0, err);
    }
    set_phase(r, "tuning", -1);
    return rc;
}

/* ---- the stop rules, the pick, the run's end ---------------------------------- */

static dt_stop_reason should_stop(const dt_run *r)
{
    if (stop_requested)
        return DT_STOP_SIGNAL;
    double target = r->cfg->budget.target_latency_ms;
    if (target > 0 && dt_run_model_latency(r) <= target)
        return DT_STOP_TARGET;
    if (budget_spent(r))
        return DT_STOP_BUDGET;
    if (r->cfg->budget.max_slots > 0 && r->slot >= r->cfg->budget.max_slots)
        return DT_STOP_MAX_SLOTS;
    return DT_STOP_NONE;
}

/* What decided task i at this pick, where the score alone does not say. */
static const char *score_note(const dt_run *r, const dt_sched_task *st, int i)
{
    if (r->tasks[i].dead)
        return "failed";
    if (st[i].exhausted)
        return "exhausted";
    if (st[i].finished)
        return "finished";
    if (st[i].slots == 0)
        return "untried";
    if (dt_scheduler_needs_belief(r->sched) && !st[i].pred_ok)
        return "no prediction";
    return "";
}

/* Task i's row of this decision: the policy's score, its own predicted cut
 * where it makes one (dt_scheduler_predicted_cut) and, for a policy that
 * reads the belief, the belief's prediction with its 90 % interval as GFLOPS
 * and as a cut. */
static void score_row(const dt_run *r, const dt_sched_task *st, const double *scores, int i,
                      dt_task_score *row)
{
    const dt_run_task *tr = &r->tasks[i];
    bool believed = dt_scheduler_needs_belief(r->sched) && st[i].pred_ok && st[i].best_gflops > 0;
    *row = dt_run_state_logged_score(scores[i], believed ? &tr->pred : NULL);
    if (dt_scheduler_predicts(r->sched))
        row->cut_ms = dt_scheduler_predicted_cut(r->sched, &st[i]);
    if (believed) {
        dt_sched_task bound = st[i];
        bound.pred_gflops = tr->pred.lo_gflops;
        row->cut_lo_ms = dt_sched_expected_reduction(&bound);
        bound.pred_gflops = tr->pred.hi_gflops;
        row->cut_hi_ms = dt_sched_expected_reduction(&bound);
    }
    snprintf(row->note, sizeof row->note, "%s", score_note(r, st, i));
}

/* Publishes the start of slot r->slot, given to task k, with the policy's
 * view of every task (rows). Returns 0 or DT_ENOMEM. */
static int start_slot(dt_run *r, int slot, int k, const dt_task_score *rows, double decision_ms)
{
    int n = r->model->ntasks;
    double now = dt_run_elapsed(r);
    dt_slot_decision d = { .slot = slot, .task = k, .elapsed = now, .decision_ms = decision_ms };
    pthread_mutex_lock(&r->state.lock);
    for (int i = 0; i < n; i++)
        r->state.tasks[i].fit = r->tasks[i].fit;
    r->state.slot = slot;
    r->state.current_task = k;
    r->state.elapsed = now;
    r->state.slot_started = now;
    int rc = dt_run_state_add_decision(&r->state, &d, rows);
    pthread_mutex_unlock(&r->state.lock);
    if (rc == 0)
        dt_run_say_decision(r);
    return rc;
}

/* The scheduler's pick among the tasks not held (held NULL: none is),
 * published as slot r->slot + 1: *k the task, or -1 when the policy picks
 * none (no slot starts). */
static int pick_slot(dt_run *r, const bool *held, int *k, dt_task_score *rows,
                     double *decision_ms, dt_error *err)
{
    int n = r->model->ntasks, rc;
    double t0 = dt_now_seconds();
    if (dt_scheduler_needs_belief(r->sched) && (rc = dt_run_predict(r, err)))
        return rc;
    dt_sched_task st[n];
    fill_sched(r, st);
    for (int i = 0; held && i < n; i++)
        st[i].exhausted = st[i].exhausted || held[i];   /* a task never holds two slots */
    double scores[n > 0 ? n : 1];
    *k = dt_scheduler_pick(r->sched, r->slot + 1, st, n, scores);
    *decision_ms = (dt_now_seconds() - t0) * 1e3;
    r->decision_seconds += *decision_ms / 1e3;
    if (*k < 0)
        return 0;
    for (int i = 0; i < n; i++)
        score_row(r, st, scores, i, &rows[i]);
    r->slot++;
    if ((rc = start_slot(r, r->slot, *k, rows, *decision_ms)))
        return dt_error_set(err, rc, "out of memory");
    return 0;
}

/* Task k's tuner for slot number slot, to the slot's trials or seconds,
 * then a reading of the machine's drift on the task's reference config. */
static int run_slot(dt_run *r, int slot, int k, dt_error *err)
{
    int rc = run_task(r, slot, k, r->cfg->budget.slot_trials, slot_seconds_left(r), err);
    dt_measure_limit limit = { .deadline = budget_end(r), .stop = &stop_requested };
    return rc ? rc : dt_run_drift(r, slot, k, measure_points, &limit, err);
}

/* The run's end: each task's best configs re-timed where the run measures. */
static int retime(dt_run *r, dt_error *err)
{
    return dt_run_retime(r, measure_points, &stop_requested, err);
}

static void request_stop(void)
{
    stop_requested = 1;
}

static const dt_run_steps steps = {
    .warm_task = warm_task,
    .warm_up_cut = warm_up_cut,
    .end_warm_up = end_warm_up,
    .should_stop = should_stop,
    .pick = pick_slot,
    .run_slot = run_slot,
    .write_slot = write_slot,
    .retime = retime,
    .stop = request_stop,
    .set_phase = set_phase,
};

/* ---- set-up and tear-down -------------------------------------------------------- */

/* The signals that end a run gracefully: SIGINT (a second one exits at
 * once), SIGTERM, and SIGHUP (a closed terminal or ssh session ends a run
 * as SIGTERM would, its reports final, rather than killing it mid-write). */
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define NSTOP_SIGNALS (sizeof stop_signals / sizeof stop_signals[0])

static void install_signals(struct sigaction old[NSTOP_SIGNALS])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    stop_requested = 0;
    interrupts = 0;
    for (size_t i = 0; i < NSTOP_SIGNALS; i++)
        sigaction(stop_signals[i], &sa, &old[i]);
    signal(SIGPIPE, SIG_IGN);
}

static void restore_signals(const struct sigaction old[NSTOP_SIGNALS])
{
    for (size_t i = 0; i < NSTOP_SIGNALS; i++)
        sigaction(stop_signals[i], &old[i], NULL);
}

int dt_daemon_run(const dt_config *cfg, dt_daemon_result *res, dt_error *err)
{
    return dt_daemon_run_remote(cfg, NULL, res, err);
}

/* The tasks without a valid measurement, and why, into buf. */
static void say_unmeasured(dt_run *r, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    pthread_mutex_lock(&r->state.lock);
    for (int k = 0; k < r->state.ntasks && used < len; k++) {
        const dt_task_state *t = &r->state.tasks[k];
        if (t->best_gflops > 0)
            continue;
        int n = snprintf(buf + used, len - used, "%s%s (%s)", used ? "; " : "", t->name,
                         t->failed[0] ? t->failed : "not measured yet");
        used += n > 0 ? (size_t)n : 0;
    }
    pthread_mutex_unlock(&r->state.lock);
}

int dt_daemon_run_remote(const dt_config *cfg, const dt_daemon_remote *remote,
                         dt_daemon_result *res, dt_error *err)
{
    memset(res, 0, sizeof *res);
    /* Before the set-up, which can be long (a big model's tuners, the
     * database, transfer): a signal during it ends the run at the warm-up's
     * first check, like one at any later point, never by the default action. */
    struct sigaction old[NSTOP_SIGNALS];
    install_signals(old);
    dt_run *r = NULL;
    int rc = dt_run_open(cfg, remote, &stop_requested, &r, err);
    if (rc) {
        restore_signals(old);
        return rc;
    }
    if (remote && remote->now)
        r->t0 = remote->now(remote->ctx);   /* the run's clock is the remote's */
    res->resumed_records = r->resumed_records;
    dt_run_ticker_start(r);
    rc = dt_run_loop(r, &steps, &res->reason, err);
    dt_run_ticker_stop(r);
    restore_signals(old);
    res->slots = r->slot;
    res->measurements = r->measured_now;
    res->elapsed = dt_run_elapsed(r);
    pthread_mutex_lock(&r->state.lock);
    res->start_latency_ms = r->state.start_latency_ms;
    pthread_mutex_unlock(&r->state.lock);
    res->latency_ms = dt_run_model_latency(r);
    say_unmeasured(r, res->unmeasured, sizeof res->unmeasured);
    if (rc == 0)
        rc = dt_run_publish(r, false, err);
    dt_run_close(r);
    return rc;
}
