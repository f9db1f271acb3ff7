/* config.h — one run's settings, parsed from config.yaml with libyaml.
 *
 * dt_config composes the settings each module owns (dt_scheduler_params,
 * dt_belief_params, dt_tuner_params, dt_measure_params, each with its
 * defaults in its own header) with the run's own (model, target, budget,
 * output, server, seed). Every key but `model` has a default
 * (dt_config_defaults: the modules' defaults, and the run's from the key
 * table). Keys are looked up in one table in config.c (path, type, range,
 * help); an unknown key, a wrong type, a value out of range or a missing file
 * is one message naming file:line:column. All messages are collected, not
 * only the first.
 */
#ifndef DTUNE_CONFIG_H
#define DTUNE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dtune/belief.h"
#include "dtune/db.h"
#include "dtune/error.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/scheduler.h"
#include "dtune/space.h"
#include "dtune/tuner.h"

#define DT_CONFIG_LISTEN_MAX 64    /* server.listen, with its NUL */
#define DT_CONFIG_KEYS_MAX 128     /* keys in config.c's table at most */

/* The run's own settings (config keys budget.*): when the daemon stops. */
typedef struct dt_budget_params {
    double total_seconds;      /* whole run */
    double slot_seconds;       /* one slot (used when slot_trials == 0) */
    int slot_trials;           /* one slot in measured trials; 0 = use seconds */
    int max_slots;             /* stop after this many slots; 0 = no limit */
    double target_latency_ms;  /* stop when model latency <= this; 0 = none */
    int retime_top;            /* at the run's end each task's this many best
                                  configs are re-timed side by side; 0 = none */
    int retime_rounds;         /* rounds of that re-timing (median of them) */
} dt_budget_params;

typedef struct dt_config {
    char path[DT_PATH_MAX];    /* the file it came from ("" for defaults) */
    char model[DT_PATH_MAX];   /* resolved against the config file's folder */
    dt_target target;
    char backend[16];          /* "" = the target's real backend; "replay" for tests */
    dt_budget_params budget;
    dt_scheduler_params scheduler;     /* scheduler.* but scheduler.belief.* */
    dt_belief_params belief;           /* scheduler.belief.*; its seed is the run's */
    dt_tuner_params tuner;
    dt_measure_params measure;
    char output_dir[DT_PATH_MAX];  /* resolved like model */
    char warm_start[DT_PATH_MAX];  /* another run's tuning.jsonl; "" = none; resolved like model */
    char server_listen[DT_CONFIG_LISTEN_MAX]; /* HOST:PORT; "" or "off" = no server */
    dt_db_params db;                   /* db.* */
    uint64_t seed;
    bool given[DT_CONFIG_KEYS_MAX];    /* by key: set by the file or dt_config_set (dt_config_given) */
} dt_config;

/* Fills every default (dtune check --help lists them); model is "". */
void dt_config_defaults(dt_config *cfg);

/* Parses path into cfg (defaults first). Collects every problem; returns 0,
 * DT_ENOTFOUND, DT_EPARSE or DT_EINVAL with all messages, one per line, in
 * err->msg (truncated with "..." if they do not fit). When check_model is
 * true, also loads the model file and reports its problems. */
int dt_config_load(const char *path, dt_config *cfg, bool check_model, dt_error *err);

/* dt_config_load that also writes every message, untruncated, one per line,
 * to messages (when non-NULL) as it is found; `dtune check` prints with it. */
int dt_config_load_report(const char *path, dt_config *cfg, bool check_model, FILE *messages,
                          dt_error *err);

/* Sets one key by its dotted path ("measure.cv_threshold", "target") from the
 * text a user would write in config.yaml, with the same type and range checks
 * as the loader; for command-line overrides. A relative path value is taken
 * as given (relative to the working directory). Returns 0 or DT_EINVAL (cfg
 * unchanged) or DT_ENOTFOUND (a named file is missing; cfg unchanged). */
int dt_config_set(dt_config *cfg, const char *key, const char *value, dt_error *err);

/* Whether key (a dotted path) was set by the config file or dt_config_set
 * rather than left at its default; false for an unknown key. */
bool dt_config_given(const dt_config *cfg, const char *key);

/* Range and consistency checks of a filled config (also after command-line
 * overrides). */
int dt_config_validate(const dt_config *cfg, dt_error *err);

/* Writes the key table to f: each key, its value in values (as it would be
 * written in config.yaml) under the column title heading, and its meaning
 * with its range or names. `dtune check --help` prints the defaults. */
void dt_config_print_keys(FILE *f, const dt_config *values, const char *heading);

#endif
