/* daemon_publish.c — what the run shows after every slot: latency.csv,
 * latency.svg and best.json (through report), and the status line: a live
 * line on a terminal, one plain log line per slot otherwise. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon_internal.h"
#include "dtune/report.h"

static void status_line(dt_run *r, const dt_run_state *s)
{
    char elapsed[32], budget[32];
    dt_report_format_duration(s->elapsed, elapsed, sizeof elapsed);
    dt_report_format_duration(s->budget, budget, sizeof budget);
    const char *task = dt_run_state_current_task(s) ? dt_run_state_current_task(s) : "-";
    double speedup = isfinite(dt_run_state_speedup(s)) ? dt_run_state_speedup(s) : 0;
    char target[48] = "none";
    if (s->target_latency_ms > 0)
        snprintf(target, sizeof target, "%.4f ms%s", s->target_latency_ms,
                 s->reached_at >= 0 ? " (reached)" : "");
    if (r->tty) {
        fprintf(stderr, "\r\033[K[%s / %s] slot %d  task %-14s  model %.4f ms  %.2fx  target %s",
                elapsed, budget, s->slot, task, s->latency_ms, speedup, target);
        fflush(stderr);
    } else {
        printf("elapsed=%.1fs budget=%.0fs slot=%d task=%s model_latency_ms=%.4f speedup=%.3f target=%s\n",
               s->elapsed, s->budget, s->slot, task, s->latency_ms, speedup, target);
        fflush(stdout);
    }
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
        if (rc == 0)
            rc = dt_report_write_svg(&snap, err);
        if (csv_row || r->tty)
            status_line(r, &snap);
        if (!csv_row && r->tty)
            fputc('\n', stderr);
    }
    dt_run_state_destroy(&snap);
    return rc;
}
