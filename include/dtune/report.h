/* report.h — what a run leaves in RUN_DIR for people: model latency over
 * time (latency.csv, latency.svg) and the best configuration of every task
 * (best.json), plus SVG line charts of several named curves for the benches.
 *
 * The daemon calls the three writers (CSV, best.json, SVG) after every slot
 * with a snapshot of its run state. latency.svg and best.json are replaced
 * atomically (temporary file in RUN_DIR, fsync, rename), so the status server
 * and `dtune best` never see half a file; latency.csv is appended, flushed and
 * fsync'd.
 *
 * Charts are drawn by PLplot's svg device. PLplot keeps global state, so every
 * chart in the process is drawn under one process-wide mutex; PLplot's own
 * error messages are captured into the dt_error instead of being printed, and
 * its "immediate exit" path is turned into a DT_ELIB return.
 */
#ifndef DTUNE_REPORT_H
#define DTUNE_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "dtune/error.h"
#include "dtune/runstate.h"

/* One named curve of a chart: n points (x[i], y[i]). Borrowed, not owned. */
typedef struct dt_report_curve {
    const char *name;          /* legend text; may be NULL with one curve */
    int n;
    const double *x;
    const double *y;
    int colour;                /* 0: the curve's position picks it; k >= 1: the k-th of
                                  DT_REPORT_COLOURS (curves of one group share one) */
    int dash;                  /* 0: solid; 1 .. DT_REPORT_DASHES - 1: a dash pattern */
} dt_report_curve;

#define DT_REPORT_COLOURS 12   /* distinct curve colours of a chart */
#define DT_REPORT_DASHES 8     /* line patterns (PLplot's, solid first) */

/* Appends one row for the newest latency point of rs to RUN_DIR/latency.csv:
 *   elapsed_s,slot,task,model_latency_ms,<best latency ms of each task>
 * A new (or empty) file first gets the header row with the task names. An
 * existing file is resumed: its header must name the same tasks (else
 * DT_EINVAL), and a torn last row left by a crash is cut off before appending.
 * rs is a snapshot (dt_run_state_copy) or its lock is held by the caller.
 * Returns 0, DT_EINVAL (no latency point yet, other tasks), DT_EIO. */
int dt_report_append_csv(const dt_run_state *rs, dt_error *err);

/* Replaces RUN_DIR/latency.svg: model latency (ms) over elapsed time as a
 * step curve, the target latency as a dashed horizontal line when set, the
 * moment it was reached as a vertical line with a label, and a title naming
 * model, target and policy. A run with no points yet gets empty axes.
 * Returns 0, DT_EIO (file system), DT_ELIB (PLplot failed). */
int dt_report_write_svg(const dt_run_state *rs, dt_error *err);

/* Replaces RUN_DIR/best.json (format: see dt_report_load_best).
 * Returns 0, DT_ENOMEM, DT_EIO. */
int dt_report_write_best(const dt_run_state *rs, dt_error *err);

/* Reads RUN_DIR/best.json into out, which this call initialises (tasks
 * filled, no latency points; free with dt_run_state_destroy; on failure
 * out holds nothing to free). best.json holds:
 *   {"model", "target", "policy", "strategy", "phase", "elapsed_s",
 *    "budget_s", "slot", "model_latency_ms", "start_latency_ms",
 *    "target_latency_ms" (null: none), "reached_at_s" (null: not reached),
 *    "tasks": [{"name", "kind", "shape", "count", "gflop", "best_config"
 *      (null until tuned), "knobs", "best_gflops", "best_latency_ms",
 *      "peak_gflops", "peak_source" (optional), "trials", "slots", "finished"}]}
 * Returns 0, DT_ENOTFOUND (no file), DT_EPARSE (not JSON, or a field
 * missing or of the wrong type; the message names it), DT_ENOMEM. */
int dt_report_load_best(const char *run_dir, dt_run_state *out, dt_error *err);

/* Draws ncurves (1..DT_REPORT_MAX_CURVES) line curves into one SVG at path,
 * each in its colour (its own, cycling through DT_REPORT_COLOURS, unless it
 * names one) and dash pattern, named in a legend when there are two or more,
 * with a dashed horizontal line at y = hline labelled "target" when
 * hline > 0. Both axes start at 0 (or below, for negative points). The file
 * is replaced atomically. A curve with n = 0 is only listed in the legend.
 * Safe to call from several threads (charts are drawn one at a time).
 * Returns 0, DT_EINVAL (no curves, too many, a non-finite point), DT_EIO,
 * DT_ELIB. */
int dt_report_svg_curves(const char *path, const char *title, const char *xlabel,
                         const char *ylabel, const dt_report_curve *curves, int ncurves,
                         double hline, dt_error *err);

#define DT_REPORT_MAX_CURVES 24

/* Writes the run as one self-contained HTML page to f: headline (model
 * latency now and after warm-up, target), latency over time and the
 * allocation timeline as inline SVG, the per-task table, each task's best
 * so far with the belief's fitted curve and 90 % band, the newest
 * decision ranked (score, predicted cut and its interval, note) and the
 * earlier decisions (the newest DT_REPORT_DECISIONS). With live, the status
 * server's page: it reloads itself every DT_REPORT_REFRESH_SECONDS, opens
 * with the live line (phase, clock,
 * budget left, slot and task, or "warming up: task i of n") and lists only
 * the last DT_STATUS_DECISIONS decisions. appendix, when not NULL, is HTML
 * placed at the end of the page (the runs compared of `dtune report --html
 * RUN_DIR RUN_DIR...`). Returns 0 or DT_EIO (f failed). */
int dt_report_html(FILE *f, const dt_run_state *rs, bool live, const char *appendix);

#define DT_REPORT_REFRESH_SECONDS 5
/* A task's chart marks the predictions of its newest this many slots; the
 * report's table lists the newest this many decisions (tuning.jsonl keeps
 * them all), so a long run's report stays a few megabytes. */
#define DT_REPORT_PRED_MARKS 64
#define DT_REPORT_DECISIONS 1000

/* Writes s to f with <, >, & and " escaped for HTML text and attributes. */
void dt_report_html_text(FILE *f, const char *s);

/* Replaces RUN_DIR/report.html with dt_report_html(rs, live false).
 * Returns 0, DT_ENOMEM, DT_EIO. */
int dt_report_write_html(const dt_run_state *rs, dt_error *err);

/* Reads a run from its files into out, which this call initialises (free
 * with dt_run_state_destroy; on failure out holds nothing to free):
 * best.json as dt_report_load_best, then every slot of RUN_DIR/tuning.jsonl
 * as a latency point and, past warm-up, a decision with the logged scores
 * and each task's newest logged prediction at that record; each task's fit
 * is the newest fitted curve the log holds for it.
 * Returns what dt_report_load_best returns, or DT_EPARSE / DT_EINVAL for a
 * bad tuning.jsonl (the message names the line). */
int dt_report_load_run(const char *run_dir, dt_run_state *out, dt_error *err);

/* Replaces RUN_DIR/name with len bytes of text, atomically (temporary file,
 * fsync, rename). Returns 0, DT_EINVAL (path too long), DT_EIO. */
int dt_report_replace(const dt_run_state *rs, const char *name, const char *text, size_t len,
                      dt_error *err);

/* The unit of a time axis spanning span seconds: seconds below 5 minutes,
 * minutes below 3 hours, else hours. Returns seconds per unit; *name is
 * "s", "min" or "h". */
double dt_report_time_unit(double span, const char **name);

/* Writes a duration for people: "42.5s", "7m03s", "2h05m00s"; "-" when
 * seconds is negative or not finite. */
void dt_report_format_duration(double seconds, char *buf, size_t len);

#endif
