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
 * best.json. With live, also what only a running tuner knows — /status: run
 * (its directory) first; then current_task, speedup, budget_left_s,
 * slot_elapsed_s (null between slots), warmup ({task, of, name, trials}
 * while warming up, else null), decision (the newest, as
 * dt_report_decision_json; null before the first), decisions_total and
 * decisions (the last DT_STATUS_DECISIONS, newest last); model_latency_ms is
 * null until warm-up has measured every task. Numbers that are not finite
 * are null. New reference, NULL when out of memory. */
json_t *dt_report_run_json(const dt_run_state *rs, bool live);

/* /status lists every decision whose whole ranking the run state keeps. */
#define DT_STATUS_DECISIONS DT_RUN_STATE_RANKED

/* Decision i of rs as JSON: slot, task, elapsed_s, decision_ms and ranking,
 * the tasks as dt_run_state_rank orders them, each {task, score, cut_ms,
 * cut_lo_ms, cut_hi_ms, note, chosen} (null for what the policy did not
 * have). New reference, NULL when out of memory. */
json_t *dt_report_decision_json(const dt_run_state *rs, int i);

#endif
