/* daemon_publish.c — what the run shows: after every slot latency.csv,
 * latency.svg, best.json and report.html (through report); the status line (a live line
 * on a terminal, one plain log line per slot otherwise); on a terminal one
 * line per decision saying why the task was chosen (logs have the scores in
 * tuning.jsonl); and the ticker, a thread that
 * moves the shared state's clock and redraws the live line at least once a
 * second, so neither freezes while a slot runs.
 *
 * Every line is drawn from a snapshot of the shared run state
 * (dt_run_state_copy), the same one /status, /metrics and the page read.
 * Lines from the tuning thread and the ticker hold stderr's stdio lock while
 * they are written, so they never interleave.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_internal.h"
#include "dtune/report.h"
#include "dtune/util.h"

/* Seconds between two ticks: below a second so that the line and /status
 * move at least once a second even when a tick comes late. */
#define TICK_SECONDS 0.5
/* After a slot, latency.svg and report.html are rewritten at most once in
 * REPORT_SECONDS, and at most REPORT_SHARE of the time goes into them: both
 * grow with the run, and a replay run ends several slots a second. The run's
 * end always rewrites them; /status and the live page read the run state. */
#define REPORT_SECONDS 2.0
#define REPORT_SHARE 0.05

struct dt_run_ticker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
};

/* The slots in flight of a run that keeps several, compactly: " in flight
 * 3:conv@1:2.1s, 4:fc@2:0.4s" (slot:task@worker:seconds in; slot "w"
 * for a task's warm-up), sep between entries; "" when none. */
static void flight_text(const dt_run_state *s, const char *lead, const char *sep, char *buf,
                        size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->nflight && used < len; i++) {
        const dt_slot_flight *f = &s->flight[i];
        char slot[16];
        snprintf(slot, sizeof slot, f->slot >= 0 ? "%d" : "w", f->slot);
        used += (size_t)snprintf(buf + used, len - used, "%s%s:%s@%d:%.1fs", i ? sep : lead, slot,
                                 f->task >= 0 && f->task < s->ntasks ? s->tasks[f->task].name : "?",
                                 f->worker, s->elapsed - f->started);
    }
}

static void warmup_line(dt_run *r, const dt_run_state *s, const char *elapsed, const char *budget)
{
    int k = s->warmup_task;
    const dt_task_state *t = k >= 0 && k < s->ntasks ? &s->tasks[k] : NULL;
    if (r->tty && !t && s->nflight > 0) {      /* several tasks warm up at once */
        char flight[512];
        flight_text(s, "", ", ", flight, sizeof flight);
        fprintf(stderr, "\r\033[K[%s / %s] warming up: %s", elapsed, budget, flight);
    }
    if (!r->tty || !t)
        return;
    fprintf(stderr, "\r\033[K[%s / %s] warming up: task %d of %d (%s), %d trials", elapsed,
            budget, k + 1, s->ntasks, t->name, t->trials);
}

static void status_line(dt_run *r, const dt_run_state *s)
{
    char elapsed[32], budget[32], left[32], in_slot[32];
    dt_report_format_duration(s->elapsed, elapsed, sizeof elapsed);
    dt_report_format_duration(s->budget, budget, sizeof budget);
    dt_report_format_duration(dt_run_state_budget_left(s), left, sizeof left);
    dt_report_format_duration(s->slot_started >= 0 ? s->elapsed - s->slot_started : -1, in_slot,
                              sizeof in_slot);
    flockfile(stderr);
    if (strcmp(s->phase, "warm-up") == 0) {
        warmup_line(r, s, elapsed, budget);
        fflush(stderr);
        funlockfile(stderr);
        return;
    }
    const char *task = dt_run_state_current_task(s) ? dt_run_state_current_task(s) : "-";
    char flight[512];
    flight_text(s, r->tty ? "  in flight " : " in_flight=", r->tty ? ", " : ",", flight,
                sizeof flight);
    double speedup = isfinite(dt_run_state_speedup(s)) ? dt_run_state_speedup(s) : 0;
    char target[48] = "none";
    if (s->target_latency_ms > 0)
        snprintf(target, sizeof target, "%.4f ms%s", s->target_latency_ms,
                 s->reached_at >= 0 ? " (reached)" : "");
    /* the machine's speed moved past DT_RUN_STATE_DRIFT_SAY since the start */
    char drift[64] = "";
    if (dt_run_state_drifted(s))
        snprintf(drift, sizeof drift, r->tty ? "  machine %.0f %% %s than at start"
                                             : " machine_speed=%.3f",
                 r->tty ? fabs(s->machine_speed - 1) * 100 : s->machine_speed,
                 s->machine_speed > 1 ? "faster" : "slower");
    if (r->tty) {
        fprintf(stderr, "\r\033[K[%s / %s, %s left] slot %d (%s in) task %-14s  model %.4f ms  "
                        "%.2fx  target %s%s%s",
                elapsed, budget, left, s->slot, in_slot, task, s->latency_ms, speedup, target,
                drift, flight);
    } else {
        printf("elapsed=%.1fs budget=%.0fs slot=%d task=%s model_latency_ms=%.4f speedup=%.3f "
               "target=%s%s%s\n", s->elapsed, s->budget, s->slot, task, s->latency_ms, speedup,
               target, drift, flight);
        fflush(stdout);
    }
    fflush(stderr);
    funlockfile(stderr);
}

/* One ranked entry of a decision: "NAME SCORE" and the predicted cut. */
static void decision_entry(FILE *f, const dt_run_state *s, const dt_task_score *row, int k)
{
    fprintf(f, "%s ", s->tasks[k].name);
    if (isfinite(row->score))
        fprintf(f, "%.3g", row->score);
    else
        fputs("-", f);
    if (isfinite(row->cut_ms) && isfinite(row->cut_lo_ms) && isfinite(row->cut_hi_ms))
        fprintf(f, " (cut %.3g ms, 90%% %.3g-%.3g)", row->cut_ms, row->cut_lo_ms, row->cut_hi_ms);
    else if (isfinite(row->cut_ms))   /* a cut from the prior alone has no interval */
        fprintf(f, " (cut %.3g ms)", row->cut_ms);
    if (row->note[0])
        fprintf(f, " [%s]", row->note);
}

/* The newest decision as one line: the chosen task, then the next two. */
static void decision_line(FILE *f, const dt_run_state *s)
{
    int i = s->ndecisions - 1, order[s->ntasks > 0 ? s->ntasks : 1];
    const dt_task_score *rows = dt_run_state_scores(s, i);
    dt_run_state_rank(s, i, order);
    fprintf(f, "why slot %d: ", s->decisions[i].slot);
    for (int j = 0; j < s->ntasks && j < 3; j++) {
        fputs(j == 0 ? "" : j == 1 ? " over " : ", ", f);
        decision_entry(f, s, &rows[order[j]], order[j]);
    }
    if (s->ntasks > 3)
        fprintf(f, ", %d more", s->ntasks - 3);
}

void dt_run_say_decision(dt_run *r)
{
    dt_run_state snap;
    if (!r->tty || dt_run_state_copy(&snap, &r->state) != 0)
        return;
    if (snap.ndecisions > 0) {
        flockfile(stderr);
        fputs("\r\033[K", stderr);
        decision_line(stderr, &snap);
        fputc('\n', stderr);
        fflush(stderr);
        funlockfile(stderr);
    }
    dt_run_state_destroy(&snap);
}

int dt_run_publish(dt_run *r, bool csv_row, dt_error *err)
{
    pthread_mutex_lock(&r->state.lock);
    r->state.elapsed = dt_run_elapsed(r);
    r->state.latency_ms = dt_run_model_latency(r);
    pthread_mutex_unlock(&r->state.lock);
    dt_run_state snap;
    if (dt_run_state_copy(&snap, &r->state) != 0)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    int rc = 0;
    if (snap.npoints > 0) {
        if (csv_row)
            rc = dt_report_append_csv(&snap, err);
        if (rc == 0)
            rc = dt_report_write_best(&snap, err);
        double now = dt_now_seconds();
        bool due = !csv_row || r->reports_at <= 0 ||
                   now - r->reports_at >= fmax(REPORT_SECONDS, r->reports_took / REPORT_SHARE);
        if (rc == 0 && due) {
            rc = dt_report_write_svg(&snap, err);
            if (rc == 0)
                rc = dt_report_write_html(&snap, err);
            r->reports_at = dt_now_seconds();
            r->reports_took = r->reports_at - now;
        }
        if (csv_row || r->tty)
            status_line(r, &snap);
        if (!csv_row && r->tty)
            fputc('\n', stderr);
    }
    dt_run_state_destroy(&snap);
    return rc;
}

/* ---- the ticker ----------------------------------------------------------------- */

static void tick(dt_run *r)
{
    pthread_mutex_lock(&r->state.lock);
    r->state.elapsed = dt_run_elapsed(r);
    pthread_mutex_unlock(&r->state.lock);
    if (!r->tty)
        return;
    dt_run_state snap;
    if (dt_run_state_copy(&snap, &r->state) != 0)
        return;
    status_line(r, &snap);
    dt_run_state_destroy(&snap);
}

static void *ticker_main(void *arg)
{
    dt_run *r = arg;
    dt_run_ticker *t = r->ticker;
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(TICK_SECONDS * 1e9);
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        while (!t->stop && pthread_cond_timedwait(&t->wake, &t->lock, &until) == 0)
            ;
        if (t->stop)
            break;
        pthread_mutex_unlock(&t->lock);
        tick(r);
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Creates the ticker's thread with every signal blocked (the tuning thread
 * handles them). */
static int start_thread(dt_run *r)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&r->ticker->thread, NULL, ticker_main, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void dt_run_ticker_start(dt_run *r)
{
    dt_run_ticker *t = calloc(1, sizeof *t);
    pthread_condattr_t attr;
    if (!t || pthread_condattr_init(&attr) != 0) {
        free(t);
        return;
    }
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&t->lock, NULL);
    r->ticker = t;
    if (start_thread(r) != 0) {
        pthread_cond_destroy(&t->wake);
        pthread_mutex_destroy(&t->lock);
        free(t);
        r->ticker = NULL;
    }
}

void dt_run_ticker_stop(dt_run *r)
{
    dt_run_ticker *t = r->ticker;
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    free(t);
    r->ticker = NULL;
}
