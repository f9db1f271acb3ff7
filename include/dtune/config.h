/* config.h — one run's settings, parsed from config.yaml with libyaml.
 *
 * Every key but `model` has a default (dt_config_defaults). Keys are looked up
 * in one table in config.c (path, type, range, default, help); an unknown key,
 * a wrong type, a value out of range or a missing file is one message naming
 * file:line:column. All messages are collected, not only the first.
 */
#ifndef DTUNE_CONFIG_H
#define DTUNE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dtune/error.h"
#include "dtune/model.h"
#include "dtune/space.h"

#define DT_CONFIG_LISTEN_MAX 64    /* server.listen, with its NUL */

typedef struct dt_budget_config {
    double total_seconds;      /* whole run; default 600 */
    double slot_seconds;       /* one slot; default 10 (used when slot_trials == 0) */
    int slot_trials;           /* one slot in measured trials; default 0 = use seconds */
    int max_slots;             /* stop after this many slots; default 0 = no limit */
    double target_latency_ms;  /* stop when model latency <= this; 0 = none */
} dt_budget_config;

typedef struct dt_belief_config {
    char curve[16];            /* log_power (default), pow4, log_linear */
    int walkers;               /* default 10 */
    int steps;                 /* default 500 */
    int burn_in;               /* default 250 */
    double jump_threshold;     /* default 0.20 */
    int min_segment_points;    /* default 10 */
    int threads;               /* parallel fits; default 2 */
} dt_belief_config;

typedef struct dt_scheduler_config {
    char policy[32];           /* dynatune (default), sequential, round_robin, ... */
    double ucb_c;              /* default 2 */
    double gamma;              /* score of an unplayed task; default 1e9 */
    int finish_after;          /* trials without improvement; default 200 */
    double epsilon;            /* eps_greedy; default 0.05 */
    double softmax_temperature;/* softmax; default 1 */
    char hazard[160];          /* hazard: next-slot cut shares by measured slot */
    double prior_slots;        /* dynatune: weight of the hazard prior, in slots */
    char prior_hazard[160];    /* dynatune: the prior's cut shares by measured slot */
    double ceiling;            /* dynatune: the prior's efficiency ceiling (share of peak) */
    double bandwidth_gbs;      /* dynatune: the prior's roofline bandwidth; 0 = none */
    dt_belief_config belief;
} dt_scheduler_config;

typedef struct dt_ppo_config {
    double learning_rate;      /* 1e-3 */
    double gamma;              /* 0.9 */
    double gae_lambda;         /* 0.99 */
    int epochs;                /* 3 */
    double clip;               /* 0.3 */
    double value_coef;         /* 1.0 */
    double entropy_coef;       /* 0.1 */
    int episodes;              /* 128 per round */
    int max_steps;             /* 500 */
    int hidden;                /* 64 */
} dt_ppo_config;

typedef struct dt_sampling_config {
    double knee_threshold;     /* 2.5 */
    int k_min;                 /* 8 */
} dt_sampling_config;

typedef struct dt_cost_model_config {
    char objective[32];        /* rank:pairwise (default) or reg:squarederror */
    int threads;               /* 1 */
    int max_depth;             /* 3 */
    double eta;                /* 0.3 */
    int rounds;                /* boosting rounds; 100 */
} dt_cost_model_config;

typedef struct dt_tuner_config {
    char strategy[32];         /* chameleon (default), autotvm, random */
    int batch_size;            /* 64 */
    double random_fraction;    /* autotvm's epsilon; 0.05 */
    int neighbours;            /* chameleon: incumbent's neighbours measured per round; 4 */
    bool transfer;             /* start from the run's other tasks of the kind; true */
    dt_ppo_config ppo;
    dt_sampling_config sampling;
    dt_cost_model_config cost_model;
} dt_tuner_config;

typedef struct dt_measure_config {
    double cv_threshold;       /* 0.10 */
    int min_batches;           /* 3 */
    int micro_batch;           /* kernel calls per micro-batch; 0 = auto */
    int max_repeats;           /* micro-batches at most; 20 */
    double timeout_seconds;    /* one candidate's run; 10 */
    double compile_timeout_seconds; /* one candidate's compile; 0 = dt_measure_compile_timeout's rule */
    int builders;              /* compile threads; 2 */
    int cache_mb;              /* cpu: artifact cache size limit, LRU; 0 = none; 1024 */
    int threads;               /* kernel threads; 1 */
    bool check_output;         /* true */
    double tolerance;          /* relative; 1e-3 */
    bool flush_l2;             /* cuda: flush L2 between micro-batches; false */
} dt_measure_config;

typedef struct dt_config {
    char path[DT_PATH_MAX];    /* the file it came from ("" for defaults) */
    char model[DT_PATH_MAX];   /* resolved against the config file's folder */
    dt_target target;          /* cpu */
    char backend[16];          /* "" = the target's real backend; "replay" for tests */
    dt_budget_config budget;
    dt_scheduler_config scheduler;
    dt_tuner_config tuner;
    dt_measure_config measure;
    char output_dir[DT_PATH_MAX];  /* runs/latest; resolved like model */
    char warm_start[DT_PATH_MAX];  /* another run's tuning.jsonl; "" = none; resolved like model */
    char server_listen[DT_CONFIG_LISTEN_MAX]; /* 127.0.0.1:8080; "" or "off" = no server */
    uint64_t seed;                 /* 1 */
} dt_config;

/* The compile limit of one candidate: compile_timeout_seconds, or when that
 * is 0, max(60 s, 6 x timeout_seconds) (a cold compiler cache or a loaded
 * machine makes the first compiles slow). */
double dt_measure_compile_timeout(const dt_measure_config *measure);

/* Fills every default; model is "". */
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

/* Range and consistency checks of a filled config (also after command-line
 * overrides). */
int dt_config_validate(const dt_config *cfg, dt_error *err);

/* Writes the documented key table (key, default, meaning) to f, for --help and README. */
void dt_config_print_keys(FILE *f);

#endif
