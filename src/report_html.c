/* report_html.c — a run as one self-contained HTML page (see report.h):
 * the headline, latency over time, the allocation timeline, the per-task
 * table and why each slot went where it went. The live page of the status
 * server is the same page with a refresh and the live line on top;
 * RUN_DIR/report.html is the page without them.
 *
 * Charts are inline SVG drawn here from the one snapshot the page is built
 * from, so the headline and the charts cannot disagree, and the file needs
 * nothing else to open: no script, no style sheet, no network.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/report.h"
#include "dtune/tunelog.h"
#include "report_json.h"

/* Chart geometry (SVG user units). */
#define CHART_W 900.0
#define PLOT_X0 120.0
#define PLOT_X1 880.0
#define LAT_H 300.0
#define LAT_Y0 30.0
#define LAT_Y1 260.0
#define BAND_ROW 16.0

void dt_report_html_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Whether the run has a model latency to show (warm-up is over). */
static bool has_latency(const dt_run_state *rs)
{
    return rs->npoints > 0 && rs->latency_ms > 0 && isfinite(rs->latency_ms);
}

static bool warming_up(const dt_run_state *rs)
{
    return strcmp(rs->phase, "warm-up") == 0 && rs->warmup_task >= 0 &&
           rs->warmup_task < rs->ntasks;
}

/* A task's colour in every chart: hues spread over the circle. */
static void task_colour(char *buf, size_t len, int k, int n)
{
    snprintf(buf, len, "hsl(%d,65%%,50%%)", n > 0 ? (int)(360.0 * k / n + 0.5) % 360 : 0);
}

/* ---- the live line and the headline -------------------------------------- */

static void warmup_text(FILE *f, const dt_run_state *rs)
{
    const dt_task_state *t = &rs->tasks[rs->warmup_task];
    fprintf(f, "warming up: task %d of %d (", rs->warmup_task + 1, rs->ntasks);
    dt_report_html_text(f, t->name);
    fprintf(f, "), %d trials", t->trials);
}

/* The slots in flight of a run that keeps several: "; in flight: slot 3
 * conv on worker 1 (2.1 s), ..." (a task's warm-up for slot -1). */
static void flight_html(FILE *f, const dt_run_state *rs)
{
    if (rs->nflight == 0)
        return;
    fputs("; in flight: <span id=\"flight\">", f);
    for (int i = 0; i < rs->nflight; i++) {
        const dt_slot_flight *s = &rs->flight[i];
        if (i)
            fputs(", ", f);
        if (s->slot >= 0)
            fprintf(f, "slot %d ", s->slot);
        else
            fputs("warm-up of ", f);
        dt_report_html_text(f, s->task >= 0 && s->task < rs->ntasks ? rs->tasks[s->task].name : "?");
        fprintf(f, " on worker %d (%.1f s)", s->worker, rs->elapsed - s->started);
    }
    fputs("</span>", f);
}

static void live_line(FILE *f, const dt_run_state *rs)
{
    char elapsed[32], budget[32], left[32], in_slot[32];
    dt_report_format_duration(rs->elapsed, elapsed, sizeof elapsed);
    dt_report_format_duration(rs->budget, budget, sizeof budget);
    dt_report_format_duration(dt_run_state_budget_left(rs), left, sizeof left);
    dt_report_format_duration(rs->slot_started >= 0 ? rs->elapsed - rs->slot_started : -1,
                              in_slot, sizeof in_slot);
    fprintf(f, "<p id=\"live\">phase <b id=\"phase\">");
    dt_report_html_text(f, rs->phase);
    fprintf(f, "</b>; <span id=\"elapsed\">%s</span> of %s, <span id=\"left\">%s</span> left; ",
            elapsed, budget, left);
    if (warming_up(rs)) {
        fputs("<span id=\"warmup\">", f);
        warmup_text(f, rs);
        fputs("</span></p>\n", f);
        return;
    }
    const char *task = dt_run_state_current_task(rs);
    fprintf(f, "slot <b id=\"slot\">%d</b> (%s in), task <b id=\"task\">", rs->slot, in_slot);
    dt_report_html_text(f, task ? task : "-");
    fputs("</b>", f);
    flight_html(f, rs);
    fputs("</p>\n", f);
}

/* The confirmed figures' line: how the machine's speed moved since the
 * run's start (drift readings) and what share of the measurement time the
 * confirmations took. */
static void confirmed_text(FILE *f, const dt_run_state *rs)
{
    if (rs->machine_speed <= 0 && rs->confirmations == 0)
        return;
    fputs("<p class=\"head\">", f);
    if (rs->machine_speed > 0)
        fprintf(f, "machine speed <b id=\"machine-speed\">%.3f</b> of the run's start (%d "
                "readings)%s; ", rs->machine_speed, rs->drift_readings,
                dt_run_state_drifted(rs) ? ", <b>moved more than 5 %</b>" : "");
    fprintf(f, "figures confirmed: %d of %d would-be new bests kept, confirmations took "
            "<b id=\"confirm-share\">%.1f %%</b> of the measurement time</p>\n", rs->confirmed,
            rs->confirmations, 100 * dt_run_state_confirm_share(rs));
}

static void headline(FILE *f, const dt_run_state *rs)
{
    char reached[32];
    dt_report_format_duration(rs->reached_at, reached, sizeof reached);
    if (!has_latency(rs)) {
        fputs("<p class=\"head\">no model latency yet: ", f);
        if (warming_up(rs))
            warmup_text(f, rs);
        else
            fputs("every task needs one valid measurement first", f);
        fputs("</p>\n", f);
        return;
    }
    fprintf(f, "<p class=\"head\">model latency <b id=\"latency\">%.4f</b> ms", rs->latency_ms);
    double speedup = dt_run_state_speedup(rs);
    if (isfinite(speedup))
        fprintf(f, " (%.4f ms after warm-up, %.2f&times; faster)", rs->start_latency_ms, speedup);
    if (rs->target_latency_ms > 0)
        fprintf(f, "; target %.4f ms, %s%s", rs->target_latency_ms,
                rs->reached_at >= 0 ? "reached after " : "not reached yet",
                rs->reached_at >= 0 ? reached : "");
    fputs("</p>\n", f);
    confirmed_text(f, rs);
}

/* ---- latency over time ----------------------------------------------------- */

typedef struct axes {
    double tmax;               /* seconds at the right edge */
    double ymax;               /* ms at the top */
    double unit;               /* seconds per x unit */
    const char *unit_name;
} axes;

static double sx(const axes *a, double seconds)
{
    return PLOT_X0 + (PLOT_X1 - PLOT_X0) * (a->tmax > 0 ? seconds / a->tmax : 0);
}

static double sy(const axes *a, double ms)
{
    return LAT_Y1 - (LAT_Y1 - LAT_Y0) * (a->ymax > 0 ? ms / a->ymax : 0);
}

static axes latency_axes(const dt_run_state *rs)
{
    axes a = { .tmax = rs->elapsed, .ymax = rs->target_latency_ms };
    for (int i = 0; i < rs->npoints; i++) {
        if (rs->points[i].elapsed > a.tmax)
            a.tmax = rs->points[i].elapsed;
        if (isfinite(rs->points[i].model_latency_ms) && rs->points[i].model_latency_ms > a.ymax)
            a.ymax = rs->points[i].model_latency_ms;
    }
    a.tmax = a.tmax > 0 ? a.tmax : 1;
    a.ymax = a.ymax > 0 ? a.ymax * 1.08 : 1;
    a.unit = dt_report_time_unit(a.tmax, &a.unit_name);
    return a;
}

static void axis_ticks(FILE *f, const axes *a, double y_bottom)
{
    for (int i = 0; i <= 5; i++) {
        double t = a->tmax * i / 5, ms = a->ymax * i / 5;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.3g</text>\n",
                sx(a, t), LAT_Y0, sx(a, t), y_bottom, sx(a, t), y_bottom + 14, t / a->unit);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n", PLOT_X0 - 6,
                sy(a, ms) + 4, ms);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time (%s)</text>\n",
            (PLOT_X0 + PLOT_X1) / 2, y_bottom + 30, a->unit_name);
}

/* Model latency as a step curve up to now, the target and when it was met. */
static void latency_chart(FILE *f, const dt_run_state *rs)
{
    if (rs->npoints == 0) {
        fputs("<p>The latency chart starts when warm-up has measured every task.</p>\n", f);
        return;
    }
    axes a = latency_axes(rs);
    fprintf(f, "<h2>Model latency over time</h2>\n<svg id=\"latency-chart\" "
               "xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
               "font-size=\"11\" data-points=\"%d\">\n",
            CHART_W, LAT_H + 20, CHART_W, rs->npoints);
    axis_ticks(f, &a, LAT_Y1);
    fprintf(f, "<text x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" "
               "text-anchor=\"middle\">model latency (ms)</text>\n",
            (LAT_Y0 + LAT_Y1) / 2, (LAT_Y0 + LAT_Y1) / 2);
    fputs("<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"", f);
    for (int i = 0; i < rs->npoints; i++) {
        const dt_latency_point *p = &rs->points[i];
        if (i > 0)
            fprintf(f, "%.1f,%.1f ", sx(&a, p->elapsed), sy(&a, rs->points[i - 1].model_latency_ms));
        fprintf(f, "%.1f,%.1f ", sx(&a, p->elapsed), sy(&a, p->model_latency_ms));
    }
    fprintf(f, "%.1f,%.1f\"/>\n", sx(&a, a.tmax), sy(&a, rs->points[rs->npoints - 1].model_latency_ms));
    if (rs->target_latency_ms > 0)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
                   "stroke-dasharray=\"6 4\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"#d62728\" "
                   "text-anchor=\"end\">target %.4g ms</text>\n",
                PLOT_X0, sy(&a, rs->target_latency_ms), PLOT_X1, sy(&a, rs->target_latency_ms),
                PLOT_X1, sy(&a, rs->target_latency_ms) - 4, rs->target_latency_ms);
    if (rs->reached_at >= 0)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#2ca02c\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" fill=\"#2ca02c\">reached</text>\n",
                sx(&a, rs->reached_at), LAT_Y0, sx(&a, rs->reached_at), LAT_Y1,
                sx(&a, rs->reached_at) + 4, LAT_Y0 + 12);
    fputs("</svg>\n", f);
}

/* ---- allocation timeline ---------------------------------------------------- */

static void band(FILE *f, const axes *a, int k, int n, double from, double to, int slot)
{
    char colour[32];
    task_colour(colour, sizeof colour, k, n);
    double w = sx(a, to) - sx(a, from);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
               "<title>slot %d</title></rect>\n",
            sx(a, from), 10 + k * BAND_ROW, w > 0.5 ? w : 0.5, BAND_ROW - 3, colour, slot);
}

/* One row per task; a coloured band for each slot it held. */
static void timeline_chart(FILE *f, const dt_run_state *rs)
{
    if (rs->npoints == 0)
        return;
    axes a = latency_axes(rs);
    double h = 10 + rs->ntasks * BAND_ROW;
    fprintf(f, "<h2>Which task each slot went to</h2>\n<svg id=\"timeline-chart\" "
               "xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
               "font-size=\"11\" data-points=\"%d\">\n",
            CHART_W, h + 40, CHART_W, rs->npoints);
    for (int k = 0; k < rs->ntasks; k++) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", PLOT_X0 - 6,
                10 + k * BAND_ROW + BAND_ROW - 5);
        dt_report_html_text(f, rs->tasks[k].name);
        fputs("</text>\n", f);
    }
    for (int i = 1; i < rs->npoints; i++) {
        const dt_latency_point *p = &rs->points[i];
        if (p->task >= 0 && p->task < rs->ntasks)
            band(f, &a, p->task, rs->ntasks, rs->points[i - 1].elapsed, p->elapsed, p->slot);
    }
    if (rs->slot_started >= 0 && rs->current_task >= 0 && rs->current_task < rs->ntasks)
        band(f, &a, rs->current_task, rs->ntasks, rs->slot_started, rs->elapsed, rs->slot);
    for (int i = 0; i <= 5; i++)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.3g</text>\n",
                sx(&a, a.tmax * i / 5), h + 12, a.tmax * i / 5 / a.unit);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time (%s)</text>\n</svg>\n",
            (PLOT_X0 + PLOT_X1) / 2, h + 28, a.unit_name);
}

/* ---- tasks -------------------------------------------------------------------- */

static const char *task_state(const dt_run_state *rs, int k)
{
    if (rs->tasks[k].failed[0])
        return "failed: ";
    if (rs->tasks[k].finished)
        return "finished";
    if (k == rs->current_task && strcmp(rs->phase, "tuning") == 0)
        return "tuning";
    if (warming_up(rs) && k == rs->warmup_task)
        return "warming up";
    return "";
}

static void task_table(FILE *f, const dt_run_state *rs)
{
    fputs("<h2>Tasks</h2>\n<table id=\"tasks\"><tr><th>task</th><th>kind</th><th>shape</th>"
          "<th>count</th><th>best GFLOPS</th><th>% bound</th><th>level</th><th>% of model latency</th>"
          "<th>best ms</th><th>trials</th><th>slots</th><th>state</th></tr>\n", f);
    for (int k = 0; k < rs->ntasks; k++) {
        const dt_task_state *t = &rs->tasks[k];
        char colour[32];
        task_colour(colour, sizeof colour, k, rs->ntasks);
        fprintf(f, "<tr><td><span style=\"color:%s\">&#9632;</span> ", colour);
        dt_report_html_text(f, t->name);
        fputs("</td><td>", f);
        dt_report_html_text(f, t->kind);
        fputs("</td><td>", f);
        dt_report_html_text(f, t->shape);
        fprintf(f, "</td><td>%d</td>", t->count);
        if (t->best_gflops > 0) {
            fprintf(f, "<td>%.1f</td>", t->best_gflops);
            if (t->bound_ms > 0)
                fprintf(f, "<td>%.1f%s</td>", 100 * dt_task_state_bound_share(t),
                        t->bound_from_kernel ? "*" : "");
            else
                fputs("<td>-</td>", f);
            fputs("<td>", f);
            dt_report_html_text(f, t->bound_level[0] ? t->bound_level : "-");
            fputs("</td>", f);
            fprintf(f, "<td>%.1f</td><td>%.4g</td>",
                    has_latency(rs) ? 100 * t->count * t->best_latency_ms / rs->latency_ms : 0,
                    t->best_latency_ms);
        } else
            fputs("<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>", f);
        fprintf(f, "<td>%d</td><td>%d</td><td>%s", t->trials, t->slots, task_state(rs, k));
        if (t->failed[0]) {
            dt_report_html_text(f, t->failed);
            fputs(" (counted at its reference implementation's time)", f);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n<p>% bound: the task's bound over its best latency; bound = max(useful "
          "FLOPs / peak, bytes read / read stream, bytes moved / the faster stream of the memory "
          "level (level) that holds the task's working set), from the probes run when the run "
          "(or its resume) started (peak: ", f);
    dt_report_html_text(f, rs->peak_probe[0] ? rs->peak_probe : "unknown");
    fputs("); * a kernel beat the probes' bound, so its own latency is the bound used.</p>\n", f);
}

/* ---- each task's best so far ----------------------------------------------------- */

#define MINI_W 440.0
#define MINI_H 170.0
#define MINI_X0 56.0
#define MINI_X1 430.0
#define MINI_Y0 12.0
#define MINI_Y1 140.0

typedef struct mini_axes {
    double tmax, gmax;         /* trials and GFLOPS at the edges */
} mini_axes;

static double mx(const mini_axes *a, double trial)
{
    return MINI_X0 + (MINI_X1 - MINI_X0) * trial / a->tmax;
}

static double my(const mini_axes *a, double gflops)
{
    return MINI_Y1 - (MINI_Y1 - MINI_Y0) * gflops / a->gmax;
}

/* Task k's predictions to draw, oldest first, into marks (it holds
 * DT_REPORT_PRED_MARKS + 1): the belief's prediction at each decision that
 * gave k a slot (the one that slot then tested), the newest
 * DT_REPORT_PRED_MARKS of them, then the newest decision's prediction for k
 * when it holds one and did not give k its slot. Returns how many. */
static int prediction_marks_of(const dt_run_state *rs, int k, const dt_belief_forecast **marks)
{
    int n = 0;
    for (int i = rs->ndecisions - 1; i >= 0 && n < DT_REPORT_PRED_MARKS; i--)
        if (rs->decisions[i].task == k && dt_belief_forecast_ok(&rs->decisions[i].chosen.pred))
            marks[n++] = &rs->decisions[i].chosen.pred;
    for (int i = 0; i < n / 2; i++) {
        const dt_belief_forecast *t = marks[i];
        marks[i] = marks[n - 1 - i];
        marks[n - 1 - i] = t;
    }
    int newest = rs->ndecisions - 1;
    const dt_task_score *rows = newest >= 0 ? dt_run_state_scores(rs, newest) : NULL;
    if (rows && rs->decisions[newest].task != k && dt_belief_forecast_ok(&rows[k].pred))
        marks[n++] = &rows[k].pred;
    return n;
}

/* Axes that hold the task's trials, best, peak and the predictions drawn. */
static mini_axes task_axes(const dt_run_state *rs, int k)
{
    const dt_task_state *t = &rs->tasks[k];
    mini_axes a = { .tmax = t->trials, .gmax = fmax(t->best_gflops, t->peak_gflops) };
    const dt_belief_forecast *marks[DT_REPORT_PRED_MARKS + 1];
    int n = prediction_marks_of(rs, k, marks);
    for (int i = 0; i < n; i++) {
        a.tmax = fmax(a.tmax, marks[i]->horizon);
        a.gmax = fmax(a.gmax, fmax(marks[i]->hi_gflops, marks[i]->gflops));
    }
    for (int i = 0; i < t->fit.n; i++) {
        a.tmax = fmax(a.tmax, dt_belief_curve_x(&t->fit, i));
        a.gmax = fmax(a.gmax, t->fit.hi[i]);
    }
    a.tmax = a.tmax > 0 ? a.tmax * 1.02 : 1;
    a.gmax = a.gmax > 0 ? a.gmax * 1.08 : 1;
    return a;
}

/* Task k's predictions (prediction_marks_of), one <g class="pred-mark">
 * each, the last in red. */
static void prediction_marks(FILE *f, const dt_run_state *rs, int k, const mini_axes *a)
{
    const dt_belief_forecast *marks[DT_REPORT_PRED_MARKS + 1];
    int n = prediction_marks_of(rs, k, marks);
    for (int i = 0; i < n; i++) {
        const dt_belief_forecast *p = marks[i];
        const char *colour = i == n - 1 ? "#d62728" : "#999";
        fprintf(f, "<g class=\"pred-mark\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                   "y2=\"%.1f\" stroke=\"%s\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" "
                   "fill=\"%s\"/></g>\n",
                mx(a, p->horizon), my(a, p->lo_gflops), mx(a, p->horizon), my(a, p->hi_gflops),
                colour, mx(a, p->horizon), my(a, p->gflops), colour);
    }
}

/* The belief's fitted curve of task k at the last decision: its 90 % band
 * as a translucent polygon (lo from the first trial out, hi back) and its
 * median as a line. */
static void fit_band(FILE *f, const dt_belief_curve *fit, const mini_axes *a)
{
    fputs("<polygon class=\"fit-band\" fill=\"#ff7f0e\" fill-opacity=\"0.25\" "
          "stroke=\"none\" points=\"", f);
    for (int i = 0; i < fit->n; i++)
        fprintf(f, "%.1f,%.1f ", mx(a, dt_belief_curve_x(fit, i)), my(a, fit->lo[i]));
    for (int i = fit->n - 1; i >= 0; i--)
        fprintf(f, "%.1f,%.1f ", mx(a, dt_belief_curve_x(fit, i)), my(a, fit->hi[i]));
    fputs("\"/>\n<polyline class=\"fit-median\" fill=\"none\" stroke=\"#ff7f0e\" "
          "stroke-width=\"1.5\" points=\"", f);
    for (int i = 0; i < fit->n; i++)
        fprintf(f, "%.1f,%.1f ", mx(a, dt_belief_curve_x(fit, i)), my(a, fit->median[i]));
    fputs("\"/>\n", f);
}

/* Task k's best GFLOPS over its trials as steps, its peak dashed, the
 * belief's fitted curve with its band at the last decision, and its
 * predictions. */
static void task_curve(FILE *f, const dt_run_state *rs, int k)
{
    const dt_task_state *t = &rs->tasks[k];
    mini_axes a = task_axes(rs, k);
    int n = 0;
    for (int i = 0; i < rs->nsteps; i++)
        n += rs->steps[i].task == k;
    fputs("<div class=\"mini\"><b>", f);
    dt_report_html_text(f, t->name);
    fputs("</b><br>\n", f);
    if (n == 0) {
        fputs("no valid measurement yet</div>\n", f);
        return;
    }
    if (t->fit.n > 0)
        fprintf(f, "<span class=\"fit-note\">fitted curve and 90 %% band at the last decision, "
                   "trials %.0f to %.0f</span><br>\n", t->fit.first, t->fit.horizon);
    else
        fputs("<span class=\"fit-note\">no fitted curve: the belief has not fitted this task "
              "(untried, or too few trials since its last jump)</span><br>\n", f);
    fprintf(f, "<svg class=\"task-chart\" xmlns=\"http://www.w3.org/2000/svg\" "
               "viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" font-size=\"10\" data-points=\"%d\">\n",
            MINI_W, MINI_H, MINI_W, n);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f trials</text>"
               "<text x=\"4\" y=\"%.1f\">GFLOPS</text>\n",
            MINI_X0 - 4, MINI_Y0 + 4, a.gmax, MINI_X0 - 4, MINI_Y1, MINI_X1, MINI_Y1 + 14,
            a.tmax, MINI_Y1 + 14);
    if (t->peak_gflops > 0)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
                   "stroke-dasharray=\"4 3\"/>\n",
                MINI_X0, my(&a, t->peak_gflops), MINI_X1, my(&a, t->peak_gflops));
    if (t->fit.n > 0)
        fit_band(f, &t->fit, &a);
    fputs("<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"", f);
    double last = 0;
    for (int i = 0; i < rs->nsteps; i++) {
        const dt_best_step *s = &rs->steps[i];
        if (s->task != k)
            continue;
        fprintf(f, "%.1f,%.1f %.1f,%.1f ", mx(&a, s->trial), my(&a, last), mx(&a, s->trial),
                my(&a, s->gflops));
        last = s->gflops;
    }
    fprintf(f, "%.1f,%.1f\"/>\n", mx(&a, t->trials), my(&a, last));
    prediction_marks(f, rs, k, &a);
    fputs("</svg></div>\n", f);
}

static void task_curves(FILE *f, const dt_run_state *rs)
{
    if (rs->nsteps == 0)
        return;
    fputs("<h2>Each task's best so far</h2>\n<p>Best GFLOPS after each trial (blue), the peak "
          "(dashed), the belief's fitted curve at the last decision (orange: the posterior median "
          "of the curve, with the band holding 90 % of its samples, from the first trial it "
          "modelled to the end of the task's next slot), and at each decision the belief's "
          "prediction for the end of the task's next slot with its 90 % interval (grey; the "
          "newest red): what it expected against what then happened.</p>\n", f);
    for (int k = 0; k < rs->ntasks; k++)
        task_curve(f, rs, k);
}

/* ---- why each task ------------------------------------------------------------ */

static void number_cell(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "<td>%.4g</td>", v);
    else
        fputs("<td>-</td>", f);
}

/* The newest decision ranked: one row per task. */
static void ranking_table(FILE *f, const dt_run_state *rs)
{
    if (rs->ndecisions == 0)
        return;
    int i = rs->ndecisions - 1, order[rs->ntasks > 0 ? rs->ntasks : 1];
    const dt_slot_decision *d = &rs->decisions[i];
    const dt_task_score *rows = dt_run_state_scores(rs, i);
    dt_run_state_rank(rs, i, order);
    fprintf(f, "<h2>Why slot %d went to ", d->slot);
    dt_report_html_text(f, d->task >= 0 ? rs->tasks[d->task].name : "-");
    fprintf(f, "</h2>\n<p>Each task's score as the %s policy saw it", rs->policy);
    fputs(" (higher wins); the predicted cut is the model latency one more slot of the task "
          "would save, with its 90 % credible interval.</p>\n<table id=\"ranking\"><tr>"
          "<th>rank</th><th>task</th><th>score</th><th>predicted cut ms</th><th>90 % from</th>"
          "<th>to</th><th>note</th></tr>\n", f);
    for (int j = 0; j < rs->ntasks; j++) {
        const dt_task_score *row = &rows[order[j]];
        fprintf(f, "<tr%s><td>%d</td><td>", order[j] == d->task ? " class=\"chosen\"" : "", j + 1);
        dt_report_html_text(f, rs->tasks[order[j]].name);
        fputs(order[j] == d->task ? " &#10004;</td>" : "</td>", f);
        number_cell(f, row->score);
        number_cell(f, row->cut_ms);
        number_cell(f, row->cut_lo_ms);
        number_cell(f, row->cut_hi_ms);
        fputs("<td>", f);
        dt_report_html_text(f, row->note);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* Each slot's point in rs->points: ends[slot] its index, -1 while the slot
 * has not ended; nslots entries. A malloc'd array, NULL when out of memory. */
static int *slot_ends(const dt_run_state *rs, int *nslots)
{
    int n = 0;
    for (int j = 0; j < rs->npoints; j++)
        n = rs->points[j].slot >= n ? rs->points[j].slot + 1 : n;
    int *ends = malloc((size_t)(n > 0 ? n : 1) * sizeof *ends);
    for (int s = 0; ends && s < n; s++)
        ends[s] = -1;
    for (int j = 0; ends && j < rs->npoints; j++)
        if (rs->points[j].slot >= 0)
            ends[rs->points[j].slot] = j;
    *nslots = n;
    return ends;
}

/* The model-latency cut a slot actually made (ms): the drop at its point
 * (ends from slot_ends), NAN until it has ended. */
static double actual_cut(const dt_run_state *rs, const int *ends, int nslots, int slot)
{
    int j = ends && slot >= 0 && slot < nslots ? ends[slot] : -1;
    return j >= 1 ? rs->points[j - 1].model_latency_ms - rs->points[j].model_latency_ms : NAN;
}

/* Decisions whose slot has ended, newest first, at most limit of them: the
 * chosen task, its predicted cut against the cut the slot then made, and
 * the runner-up. */
static void decision_history(FILE *f, const dt_run_state *rs, int limit)
{
    /* the newest is still under way while a slot runs */
    int last = rs->ndecisions - (rs->slot_started >= 0 ? 2 : 1);
    if (last < 0)
        return;
    int first = last + 1 > limit ? last + 1 - limit : 0, nslots;
    int *ends = slot_ends(rs, &nslots);
    fputs("<h2>Decisions</h2>\n<p>The chosen task's predicted cut of the model latency "
          "(with its 90 % interval) against the cut its slot then made", f);
    if (first > 0)
        fprintf(f, "; the newest %d of %d (tuning.jsonl holds every one)", last + 1 - first,
                last + 1);
    fputs(".</p>\n<table id=\"decisions\"><tr><th>slot</th><th>at</th><th>chosen</th>"
          "<th>score</th><th>predicted cut ms</th><th>90 % from</th><th>to</th>"
          "<th>actual cut ms</th><th>runner-up</th><th>score</th><th>decision ms</th></tr>\n", f);
    for (int i = last; i >= first; i--) {
        const dt_slot_decision *d = &rs->decisions[i];
        char at[32];
        dt_report_format_duration(d->elapsed, at, sizeof at);
        fprintf(f, "<tr><td>%d</td><td>%s</td><td>", d->slot, at);
        const dt_task_score *chosen = dt_run_state_row(rs, i, d->task);
        dt_report_html_text(f, chosen ? rs->tasks[d->task].name : "-");
        fputs("</td>", f);
        number_cell(f, chosen ? chosen->score : NAN);
        number_cell(f, chosen ? chosen->cut_ms : NAN);
        number_cell(f, chosen ? chosen->cut_lo_ms : NAN);
        number_cell(f, chosen ? chosen->cut_hi_ms : NAN);
        number_cell(f, actual_cut(rs, ends, nslots, d->slot));
        fputs("<td>", f);
        const dt_task_score *second = dt_run_state_row(rs, i, d->runner_up);
        dt_report_html_text(f, second ? rs->tasks[d->runner_up].name : "-");
        fputs("</td>", f);
        number_cell(f, second ? second->score : NAN);
        number_cell(f, d->decision_ms);
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    free(ends);
}

/* ---- the page ---------------------------------------------------------------- */

static void page_head(FILE *f, const dt_run_state *rs, bool live)
{
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">", f);
    if (live)
        fprintf(f, "<meta http-equiv=\"refresh\" content=\"%d\">", DT_REPORT_REFRESH_SECONDS);
    fputs("<title>dtune: ", f);
    dt_report_html_text(f, rs->model);
    if (has_latency(rs))
        fprintf(f, " %.4f ms", rs->latency_ms);
    fputs("</title>\n<style>body{font-family:sans-serif;margin:1.5em;max-width:960px}"
          "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right}"
          "td:first-child,th:first-child,td:nth-child(2){text-align:left}"
          "tr:nth-child(even){background:#f2f2f2}tr.chosen{font-weight:bold}"
          ".head{font-size:120%}svg text{font-family:sans-serif}"
          ".mini{display:inline-block;margin:4px 8px}</style></head><body>\n<h1>dtune: ",
          f);
    dt_report_html_text(f, rs->model);
    fputs(" on ", f);
    dt_report_html_text(f, rs->target);
    fputs("</h1>\n<p>policy ", f);
    dt_report_html_text(f, rs->policy);
    fputs(", strategy ", f);
    dt_report_html_text(f, rs->strategy);
    fputs("</p>\n", f);
}

int dt_report_html(FILE *f, const dt_run_state *rs, bool live, const char *appendix)
{
    page_head(f, rs, live);
    if (live)
        live_line(f, rs);
    headline(f, rs);
    latency_chart(f, rs);
    timeline_chart(f, rs);
    task_table(f, rs);
    task_curves(f, rs);
    ranking_table(f, rs);
    decision_history(f, rs, live ? DT_STATUS_DECISIONS : DT_REPORT_DECISIONS);
    if (live)
        fputs("<p><a href=\"/status\">/status</a> &middot; <a href=\"/metrics\">/metrics</a> "
              "&middot; <a href=\"/latency.svg\">/latency.svg</a> &middot; "
              "<a href=\"/report.html\">/report.html</a></p>\n", f);
    if (appendix)
        fputs(appendix, f);
    fputs("</body></html>\n", f);
    return ferror(f) ? DT_EIO : 0;
}

int dt_report_write_html(const dt_run_state *rs, dt_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    int rc = dt_report_html(f, rs, false, NULL);
    if (fclose(f) != 0 || rc) {
        free(buf);
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    }
    rc = dt_report_replace(rs, "report.html", buf, len, err);
    free(buf);
    return rc;
}

/* ---- a run from its files --------------------------------------------------- */

typedef struct load_ctx {
    dt_run_state *rs;
    double *best;              /* best GFLOPS so far of each task */
    dt_belief_forecast *pred;  /* each task's newest logged prediction */
    const char *path;
    dt_error *err;
} load_ctx;

/* One slot record: its latency point, its fits (each task keeps its newest
 * curve and prediction) and, past warm-up, its decision with the scores and
 * predictions the log kept. */
static int load_slot(void *ctx, const dt_slot_record *rec)
{
    load_ctx *lc = ctx;
    dt_run_state *rs = lc->rs;
    for (int i = 0; i < rec->nfits; i++) {
        if (rec->fits[i].task_index >= rs->ntasks)
            return dt_error_set(lc->err, DT_EINVAL, "%s: slot %d has a fitted curve of task %d; "
                                "the run has %d tasks", lc->path, rec->slot,
                                rec->fits[i].task_index, rs->ntasks);
        rs->tasks[rec->fits[i].task_index].fit = rec->fits[i].curve;
        lc->pred[rec->fits[i].task_index] = rec->fits[i].pred;
    }
    double decided = rs->npoints > 0 ? rs->points[rs->npoints - 1].elapsed : rec->time;
    dt_latency_point p = { .elapsed = rec->time, .slot = rec->slot, .task = rec->task_index,
                           .model_latency_ms = rec->model_latency_ms };
    if (dt_run_state_add_point(rs, &p) != 0)
        return DT_ENOMEM;
    if (rec->task_index < 0 || rec->task_index >= rs->ntasks)
        return 0;
    dt_task_score rows[rs->ntasks];
    for (int i = 0; i < rs->ntasks; i++)
        rows[i] = dt_run_state_logged_score(i < rec->nscores ? rec->scores[i] : NAN, &lc->pred[i]);
    dt_slot_decision d = { .slot = rec->slot, .task = rec->task_index, .elapsed = decided,
                           .decision_ms = rec->decision_ms };
    return dt_run_state_add_decision(rs, &d, rows);
}

/* A measurement that beat its task's best so far is a step of its curve. */
static int load_measure(void *ctx, const dt_measure_record *rec)
{
    load_ctx *lc = ctx;
    int k = rec->task_index;
    if (k < 0 || k >= lc->rs->ntasks || rec->m.result != DT_RESULT_OK ||
        !(rec->m.gflops > lc->best[k]))
        return 0;
    lc->best[k] = rec->m.gflops;
    dt_best_step step = { .task = k, .trial = rec->trial, .gflops = rec->m.gflops };
    return dt_run_state_add_step(lc->rs, &step);
}

int dt_report_load_run(const char *run_dir, dt_run_state *out, dt_error *err)
{
    int rc = dt_report_load_best(run_dir, out, err);
    if (rc)
        return rc;
    char path[DT_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/tuning.jsonl", run_dir);
    size_t n = (size_t)(out->ntasks > 0 ? out->ntasks : 1);
    load_ctx ctx = { out, calloc(n, sizeof *ctx.best), calloc(n, sizeof *ctx.pred), path, err };
    dt_tunelog_visitor v = { .measure = load_measure, .slot = load_slot, .ctx = &ctx };
    rc = ctx.best && ctx.pred ? dt_tunelog_replay(path, &v, NULL, err)
                              : dt_error_set(err, DT_ENOMEM, "out of memory");
    free(ctx.best);
    free(ctx.pred);
    if (rc == DT_ENOTFOUND)
        rc = 0; /* best.json alone: the tables without the time line */
    if (rc)
        dt_run_state_destroy(out);
    return rc;
}
