/* report_json.h — the run state as JSON, shared by best.json (report.c) and
 * the status server's /status (server.c). Private to src/ so that report.h
 * does not bring jansson to everyone who draws a chart. */
#ifndef DTUNE_REPORT_JSON_H
#define DTUNE_REPORT_JSON_H

#include <jansson.h>
#include <stdbool.h>

#include "dtune/runstate.h"

/* The run as a JSON object: model, target, policy, strategy, phase,
 * elapsed_s, budget_s, slot, model_latency_ms, start_latency_ms,
 * target_latency_ms, reached_at_s and tasks (one object per task) —
 * best.json. With live, also what only a running tuner knows: run (its
 * directory) first, current_task and speedup — /status. Numbers that are
 * not finite are null. New reference, NULL when out of memory. */
json_t *dt_report_run_json(const dt_run_state *rs, bool live);

#endif
