/* compare.h — several runs of one model side by side: the tables and the
 * chart of `dtune compare`, and the "runs compared" section of a report page
 * (`dtune report --html RUN_DIR RUN_DIR...`).
 *
 * Each run directory holds latency.csv (model latency after every slot) and
 * best.json (model, policy, strategy); tuning.jsonl, when readable, gives
 * the seed for the label. The per-run table: policy, strategy, latency at
 * the start and the end, tuning time, and the time to reach L*, the highest
 * of the runs' final latencies (a latency every run reached), with each
 * run's speed-up to L* against the first run. When runs repeat a policy and
 * strategy (seeds of one setting), a second table gives per policy the final
 * latency, the seconds to 1.10 and 1.05 times the lowest final latency of
 * any run, and the mean latency over the shortest run's time, as median
 * [min, max]. The chart has every run's curve: one colour per policy and
 * strategy, one dash per seed, L* dashed.
 */
#ifndef DTUNE_COMPARE_H
#define DTUNE_COMPARE_H

#include <stdio.h>

#include "dtune/error.h"
#include "dtune/report.h"

#define DT_COMPARE_MAX_RUNS DT_REPORT_MAX_CURVES

typedef struct dt_compare dt_compare;

/* Loads n (1..DT_COMPARE_MAX_RUNS) run directories. Returns 0, DT_EINVAL
 * (count, or runs of different models), DT_ENOTFOUND / DT_EPARSE (a missing
 * or malformed best.json or latency.csv; the message names FILE:LINE:COLUMN
 * where there is one), DT_ENOMEM. */
int dt_compare_open(const char *const *dirs, int n, dt_compare **out, dt_error *err);
void dt_compare_free(dt_compare *c);

/* The model the runs tuned. */
const char *dt_compare_model(const dt_compare *c);

/* The per-run table, and the table by policy when a policy repeats. */
void dt_compare_print(FILE *f, const dt_compare *c);

/* The chart as an SVG file at path. Returns 0, DT_EIO, DT_ENOMEM, DT_ELIB. */
int dt_compare_svg(const dt_compare *c, const char *path, dt_error *err);

/* The tables (preformatted) and the chart (inline SVG) as an HTML fragment;
 * scratch_path is where the chart is drawn first (removed after). */
int dt_compare_html(FILE *f, const dt_compare *c, const char *scratch_path, dt_error *err);

#endif
