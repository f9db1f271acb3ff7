/* config.c — config.yaml → struct dt_config, through one table of keys.
 *
 * Every key is one row of `keys`: its dotted path ("measure.cv_threshold"),
 * type, place in dt_config, range, the module table its names come from (a
 * choice) and help. The one table drives the loader, dt_config_set, the
 * checks of dt_config_validate and dt_config_print_keys (--help, which shows
 * each key's default read from dt_config_defaults). Defaults are not here:
 * each module's dt_X_params_default() gives its own, run_defaults the run's.
 * What each type means (parse, check, noun for messages) is a second, small
 * table.
 *
 * The file is read by yamldoc (one document, limited depth, no duplicate
 * key), so every node keeps its position. The walk goes through nested mappings: a key whose full path is a
 * row is a value, one that some row's path extends is a section, anything
 * else is unknown. Problems are collected, not stopped at: each is one line
 * "FILE:LINE:COL: message" (libyaml counts from 0, messages from 1). Rules
 * that tie keys together run after the walk and point at the key most likely
 * to be wrong. Relative paths in the file are taken relative to its folder.
 */
#include "dtune/config.h"
#include "dtune/backend.h"
#include "dtune/costmodel.h"
#include "dtune/curve.h"
#include "dtune/scheduler.h"
#include "dtune/server.h"
#include "dtune/tuner.h"
#include "dtune/util.h"
#include "dtune/target.h"
#include "yamldoc.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <yaml.h>

/* ---- the key table --------------------------------------------------------- */

typedef enum key_type {
    KT_DOUBLE, KT_INT, KT_UINT64, KT_BOOL, KT_STRING, KT_CHOICE, KT_ENUM, KT_PATH, KT_LISTEN,
    KT_COUNT
} key_type;

enum {
    F_REQUIRED = 1,   /* must be in the file and not empty */
    F_NONEMPTY = 2,   /* may be left out, never empty */
    F_EXISTS = 4,     /* a file that must exist when set */
    F_OR_EMPTY = 8,   /* KT_CHOICE: "" is a choice too */
    F_OFF = 16        /* KT_PATH: "off" is a value, not a file name */
};

typedef struct key_def {
    const char *path;              /* dotted: "scheduler.belief.walkers" */
    key_type type;
    size_t offset, size;           /* the field in dt_config */
    double min, max;               /* KT_DOUBLE, KT_INT */
    dt_name_at_fn choices;         /* KT_CHOICE (the name), KT_ENUM (its index): the
                                      owning module's table */
    unsigned flags;
    const char *help;
} key_def;

#define FIELD(m) offsetof(dt_config, m), sizeof(((dt_config *)0)->m)
#define K_DBL(p, m, lo, hi, h) { p, KT_DOUBLE, FIELD(m), lo, hi, NULL, 0, h }
#define K_INT(p, m, lo, hi, h) { p, KT_INT, FIELD(m), lo, hi, NULL, 0, h }
#define K_BOOL(p, m, h) { p, KT_BOOL, FIELD(m), 0, 1, NULL, 0, h }
#define K_CHOICE(p, m, names, fl, h) { p, KT_CHOICE, FIELD(m), 0, 0, names, fl, h }
#define K_ENUM(p, m, names, h) { p, KT_ENUM, FIELD(m), 0, 0, names, 0, h }
#define K_TYPED(p, t, m, fl, h) { p, t, FIELD(m), 0, 0, NULL, fl, h }

static const key_def keys[] = {
    K_TYPED("model", KT_PATH, model, F_REQUIRED | F_EXISTS,
            "model file (models/NAME.yaml, or an ONNX network NAME.onnx), relative to this file's folder"),
    K_ENUM("target", target, dt_target_at, "where the kernels run"),
    K_CHOICE("backend", backend, dt_backend_at, F_OR_EMPTY,
             "measurer; \"\" = the target's own, replay = synthetic (tests, benches)"),
    K_TYPED("seed", KT_UINT64, seed, 0, "seed of every random choice of the run"),
    K_DBL("budget.total_seconds", budget.total_seconds, 1, 1e9, "tuning time of the whole run"),
    K_DBL("budget.slot_seconds", budget.slot_seconds, 0, 1e9,
          "one scheduler slot, when slot_trials is 0"),
    K_INT("budget.slot_trials", budget.slot_trials, 0, 1e8,
          "one slot in measured configs; 0 = use slot_seconds"),
    K_INT("budget.max_slots", budget.max_slots, 0, 1e9,
          "stop after this many slots; 0 = no limit"),
    K_DBL("budget.target_latency_ms", budget.target_latency_ms, 0, 1e9,
          "stop once model latency <= this; 0 = never"),
    K_INT("budget.retime_top", budget.retime_top, 0, DT_TUNER_TOP_MAX,
          "at the run's end, each task's this many best configs re-timed side by side, "
          "the best median kept (time reserved from total_seconds); 0 = none"),
    K_INT("budget.retime_rounds", budget.retime_rounds, 1, 100,
          "rounds of that re-timing"),
    K_CHOICE("scheduler.policy", scheduler.policy, dt_scheduler_policy_at, 0,
             "how the next task is picked"),
    K_DBL("scheduler.ucb_c", scheduler.ucb_c, 0, 1e6, "exploration weight C of the UCB1 score (rewards scaled to 0..1)"),
    K_DBL("scheduler.gamma", scheduler.gamma, 0, 1e300, "score of a task with no slot yet"),
    K_INT("scheduler.finish_after", scheduler.finish_after, 1, 1e9,
          "a task is done after this many trials without improvement"),
    K_DBL("scheduler.epsilon", scheduler.epsilon, 0, 1, "eps_greedy: chance of a random task"),
    K_DBL("scheduler.softmax_temperature", scheduler.softmax_temperature, 1e-6, 1e6,
          "softmax: temperature over task scores"),
    K_TYPED("scheduler.hazard", KT_STRING, scheduler.hazard, F_NONEMPTY,
            "hazard: share of a task's latency its 1st, 2nd, ... measured slot cuts (last holds on)"),
    K_DBL("scheduler.prior_slots", scheduler.prior_slots, 0, 1e9,
          "dynatune: the hazard prior weighs as this many measured slots of the task's own curve; 0 = no prior"),
    K_TYPED("scheduler.prior_hazard", KT_STRING, scheduler.prior_hazard, F_NONEMPTY,
            "dynatune's prior: share of the latency (times the headroom under scheduler.ceiling) its 1st, 2nd, ... measured slot cuts"),
    K_DBL("scheduler.ceiling", scheduler.ceiling, 0, 100,
          "dynatune's prior: efficiency (share of peak) tasks reach; cut shares scale with 1 - efficiency / ceiling; 0 = none (under scheduler.headroom cost_model: the estimate's level alone)"),
    K_DBL("scheduler.bandwidth_gbs", scheduler.bandwidth_gbs, 0, 1e6,
          "dynatune's prior: memory bandwidth (GB/s) of the roofline that caps a task's level at flops / bytes x bandwidth; 0 = the measured bandwidth of the memory level holding the task's working set (the bound's; none where the backend measures none)"),
    K_TYPED("scheduler.staleness", KT_STRING, scheduler.staleness, 0,
            "dynatune's prior: factor on the cut of a task whose best last improved <16, 16-31, 32-63, 64-127, ... trials ago (last holds on); \"\" = none"),
    K_ENUM("scheduler.headroom", scheduler.headroom, dt_sched_headroom_at,
           "dynatune's prior: the level a task's headroom is measured against: roofline, or cost_model (the tuner's cost-model estimate of the best the task can reach, held under the roofline; the roofline where there is no estimate yet)"),
    K_ENUM("scheduler.belief.curve", belief.family, dt_curve_family_at, "learning-curve family"),
    K_INT("scheduler.belief.walkers", belief.walkers, 2, 10000, "MCMC walkers"),
    K_INT("scheduler.belief.steps", belief.steps, 1, 1e7, "MCMC steps per walker"),
    K_INT("scheduler.belief.burn_in", belief.burn_in, 0, 1e7,
          "MCMC steps discarded first (< steps)"),
    K_DBL("scheduler.belief.jump_threshold", belief.jump_threshold, 0.001, 100,
          "relative jump of best-so-far that starts a new segment"),
    K_INT("scheduler.belief.min_segment_points", belief.min_segment_points, 3, 1e6,
          "points the modelled segment keeps at least"),
    K_INT("scheduler.belief.threads", belief.threads, 1, 1024, "curve fits in parallel"),
    K_CHOICE("tuner.strategy", tuner.strategy, dt_tuner_strategy_at, 0, "per-task search"),
    K_INT("tuner.batch_size", tuner.batch_size, 1, DT_TUNER_MAX_BATCH, "configs measured per round"),
    K_DBL("tuner.random_fraction", tuner.random_fraction, 0, 1,
          "autotvm: share of random configs in a batch"),
    K_INT("tuner.neighbours", tuner.neighbours, 0, DT_TUNER_MAX_BATCH,
          "chameleon: the best config's unmeasured one-step neighbours measured each round"),
    K_BOOL("tuner.transfer", tuner.transfer,
           "a task starts from what the run knows of its kind: a prior cost model and mapped best configs"),
    K_DBL("tuner.ppo.learning_rate", tuner.ppo.learning_rate, 1e-9, 1, "Adam step size"),
    K_DBL("tuner.ppo.gamma", tuner.ppo.gamma, 0, 1, "reward discount"),
    K_DBL("tuner.ppo.gae_lambda", tuner.ppo.gae_lambda, 0, 1, "GAE lambda"),
    K_INT("tuner.ppo.epochs", tuner.ppo.epochs, 1, 1000, "PPO epochs per update"),
    K_DBL("tuner.ppo.clip", tuner.ppo.clip, 0.001, 10, "PPO clip range"),
    K_DBL("tuner.ppo.value_coef", tuner.ppo.value_coef, 0, 1000, "weight of the critic loss"),
    K_DBL("tuner.ppo.entropy_coef", tuner.ppo.entropy_coef, 0, 1000,
          "weight of the entropy bonus"),
    K_INT("tuner.ppo.episodes", tuner.ppo.episodes, 1, 1e7, "episodes per round at most"),
    K_INT("tuner.ppo.episodes_per_config", tuner.ppo.episodes_per_config, 0, 1e7,
          "episodes per config the previous round measured; 0 = always episodes"),
    K_INT("tuner.ppo.max_steps", tuner.ppo.max_steps, 1, 1e7, "steps per episode at most"),
    K_INT("tuner.ppo.hidden", tuner.ppo.hidden, 1, 65536, "hidden units of the actor-critic"),
    K_DBL("tuner.sampling.knee_threshold", tuner.sampling.knee_threshold, 1, 1000,
          "k-means knee: stop when threshold x loss >= previous loss"),
    K_INT("tuner.sampling.k_min", tuner.sampling.k_min, 1, 65536,
          "smallest k of k-means (<= batch_size)"),
    K_CHOICE("tuner.cost_model.objective", tuner.cost_model.objective, dt_costmodel_objective_at, 0,
             "XGBoost objective"),
    K_INT("tuner.cost_model.threads", tuner.cost_model.threads, 1, 1024, "XGBoost threads"),
    K_INT("tuner.cost_model.max_depth", tuner.cost_model.max_depth, 1, 64, "tree depth"),
    K_DBL("tuner.cost_model.eta", tuner.cost_model.eta, 1e-6, 1, "XGBoost learning rate"),
    K_INT("tuner.cost_model.rounds", tuner.cost_model.rounds, 1, 1e6, "boosting rounds per fit"),
    K_DBL("measure.cv_threshold", measure.cv_threshold, 0.001, 1,
          "stop timing when std/mean of the estimates is below this"),
    K_INT("measure.min_batches", measure.min_batches, 2, 1e6,
          "micro-batches before the CV test (<= max_repeats)"),
    K_INT("measure.micro_batch", measure.micro_batch, 0, 1e9,
          "kernel calls per micro-batch; 0 = auto"),
    K_INT("measure.max_repeats", measure.max_repeats, 1, 1e6, "micro-batches at most"),
    K_DBL("measure.timeout_seconds", measure.timeout_seconds, 0.01, 1e6,
          "run limit of one candidate"),
    K_DBL("measure.compile_timeout_seconds", measure.compile_timeout_seconds, 0, 1e6,
          "compile limit of one candidate and of a task's reference output; 0 = max(60, 6 x timeout_seconds)"),
    K_INT("measure.builders", measure.builders, 1, 1024, "compile threads"),
    K_INT("measure.cache_mb", measure.cache_mb, 0, 10000000,
          "cpu: size limit of the run's compiled-artifact cache, least recently used pruned; 0 = none"),
    K_INT("measure.threads", measure.threads, 1, 1024, "threads of a CPU kernel"),
    K_BOOL("measure.check_output", measure.check_output,
           "check each candidate's output against the reference"),
    K_DBL("measure.tolerance", measure.tolerance, 0, 1, "relative error the check allows"),
    K_BOOL("measure.flush_l2", measure.flush_l2, "cuda: flush L2 between micro-batches"),
    K_BOOL("measure.cold_weights", measure.cold_weights,
           "cpu: evict the kernel's weights and workspace from the caches before each timed call, "
           "as a layer of a network finds them; false = warm, calls back to back"),
    K_BOOL("measure.spread_input", measure.spread_input,
           "cpu, threads > 1: the kernel's threads rewrite its input and output in turn before each "
           "timed call, as the layer before leaves them in a network; false = as the last call left them"),
    K_INT("measure.cuda_device", measure.cuda_device, 0, 1e6,
          "cuda: device ordinal the runner times on; under mpirun, unset = each worker of a node its own device"),
    K_INT("measure.limit_memory_mb", measure.limit_memory_mb, 0, 1e9,
          "cpu: address space of the measurement process and each compiler; 0 = 3/4 of physical memory"),
    K_DBL("measure.limit_cpu_seconds", measure.limit_cpu_seconds, 0, 1e7,
          "CPU time of one candidate's compile or measurement (SIGXCPU past it); 0 = none"),
    K_INT("measure.limit_open_files", measure.limit_open_files, 0, 1e6,
          "open files of the measurement process and each compiler; 0 = none"),
    K_INT("measure.confirm_rounds", measure.confirm_rounds, 0, DT_CONFIRM_ROUNDS_MAX,
          "a would-be new best is timed this many rounds beside its task's best, and replaces "
          "it only on the paired median; 0 = never"),
    K_TYPED("output.dir", KT_PATH, output_dir, F_NONEMPTY,
            "run folder, relative to this file's folder"),
    K_TYPED("output.warm_start", KT_PATH, warm_start, F_EXISTS,
            "another run's tuning.jsonl to start from; \"\" = none"),
    K_TYPED("server.listen", KT_LISTEN, server_listen, 0,
            "status server HOST:PORT; off = none"),
    K_TYPED("db.path", KT_PATH, db.path, F_OFF,
            "tuning database; \"\" = $DTUNE_DB, else $XDG_DATA_HOME/dtune/dtune.db, else ~/.local/share/dtune/dtune.db; off = none"),
};

enum { NKEYS = sizeof keys / sizeof keys[0] };
_Static_assert(NKEYS <= DT_CONFIG_KEYS_MAX, "dt_config.given has a flag for every key");

static int find_key(const char *path)
{
    for (int i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].path, path) == 0)
            return i;
    return -1;
}

static void *slot_of(const key_def *k, dt_config *cfg)
{
    return (char *)cfg + k->offset;
}

static const void *cslot_of(const key_def *k, const dt_config *cfg)
{
    return (const char *)cfg + k->offset;
}

/* ---- messages ---------------------------------------------------------------- */

/* Writes "KEY: message" into why; returns DT_EINVAL. */
static int say(char *why, size_t len, const key_def *k, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int say(char *why, size_t len, const key_def *k, const char *fmt, ...)
{
    int n = snprintf(why, len, "%s: ", k->path);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < len)
        vsnprintf(why + n, len - (size_t)n, fmt, ap);
    va_end(ap);
    return DT_EINVAL;
}

/* "a, b, c": k's choices, with "" first when it is one. */
static void choice_list(const key_def *k, char *buf, size_t len)
{
    bool empty = k->flags & F_OR_EMPTY;
    int n = snprintf(buf, len, "%s", empty ? "\"\", " : "");
    if (n >= 0 && (size_t)n < len)
        dt_names_join(k->choices, buf + n, len - (size_t)n);
}

/* ---- types: parse text into a field, check a stored field ------------------- */

typedef struct type_ops {
    const char *noun;    /* for "expected NOUN, got ..."; NULL = one of the choices */
    bool plain_only;     /* a quoted scalar is a string, not this type */
    bool stringy;        /* an empty value (`key:`) means "" */
    int (*parse)(const key_def *k, const char *text, const char *dir, void *slot, char *why,
                 size_t len);
    int (*check)(const key_def *k, const void *slot, char *why, size_t len);
} type_ops;

static int parse_double(const key_def *k, const char *text, const char *dir, void *slot,
                        char *why, size_t len)
{
    char *end;
    assert(k->size == sizeof(double));
    double v = strtod(text, &end);
    if (end == text || *end || !strchr("+-.0123456789", text[0]) || strpbrk(text, "xX"))
        return say(why, len, k, "expected a number, got '%s'", text);
    if (!isfinite(v))
        return say(why, len, k, "'%s' is out of range: a number's magnitude is at most %.3g", text, DBL_MAX);
    *(double *)slot = v;
    return 0;
}

static int parse_int(const key_def *k, const char *text, const char *dir, void *slot, char *why,
                     size_t len)
{
    char *end;
    assert(k->size == sizeof(int));
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || !strchr("+-0123456789", text[0]))
        return say(why, len, k, "expected an integer, got '%s'", text);
    if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
        return say(why, len, k, "%s is out of range [%.0f, %.0f]", text, k->min, k->max);
    *(int *)slot = (int)v;
    return 0;
}

static int parse_uint64(const key_def *k, const char *text, const char *dir, void *slot,
                        char *why, size_t len)
{
    char *end;
    assert(k->size == sizeof(uint64_t));
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || *end || !strchr("0123456789", text[0]))
        return say(why, len, k, "expected a non-negative integer, got '%s'", text);
    if (errno == ERANGE)
        return say(why, len, k, "%s is out of range [0, %llu]", text, (unsigned long long)UINT64_MAX);
    *(uint64_t *)slot = (uint64_t)v;
    return 0;
}

static int parse_bool(const key_def *k, const char *text, const char *dir, void *slot, char *why,
                      size_t len)
{
    static const char *const truths[] = { "true", "yes", "on" };
    static const char *const lies[] = { "false", "no", "off" };
    assert(k->size == sizeof(bool));
    for (int i = 0; i < 3; i++) {
        if (strcasecmp(text, truths[i]) == 0 || strcasecmp(text, lies[i]) == 0) {
            *(bool *)slot = strcasecmp(text, truths[i]) == 0;
            return 0;
        }
    }
    return say(why, len, k, "expected true or false, got '%s'", text);
}

/* The index of text among k's choices, or -1. */
static int choice_index(const key_def *k, const char *text)
{
    for (int i = 0; k->choices(i); i++)
        if (strcmp(text, k->choices(i)) == 0)
            return i;
    return -1;
}

static int not_a_choice(const key_def *k, const char *text, char *why, size_t len)
{
    char names[256];
    choice_list(k, names, sizeof names);
    return say(why, len, k, "'%s' is not one of %s", text, names);
}

/* An enum field (its size is an int's) holds the index of its name. */
static int parse_enum(const key_def *k, const char *text, const char *dir, void *slot,
                      char *why, size_t len)
{
    assert(k->size == sizeof(int));
    int i = choice_index(k, text);
    if (i < 0)
        return not_a_choice(k, text, why, len);
    *(int *)slot = i;
    return 0;
}

static int store_text(const key_def *k, const char *prefix, const char *text, void *slot,
                      char *why, size_t len)
{
    int n = snprintf(slot, k->size, "%s%s", prefix, text);
    if (n < 0 || (size_t)n >= k->size)
        return say(why, len, k, "'%.40s...' is longer than %zu characters", text, k->size - 1);
    return 0;
}

static int parse_string(const key_def *k, const char *text, const char *dir, void *slot,
                        char *why, size_t len)
{
    return store_text(k, "", text, slot, why, len);
}

static int check_one_of(const key_def *k, const char *text, char *why, size_t len)
{
    if ((!text[0] && (k->flags & F_OR_EMPTY)) || choice_index(k, text) >= 0)
        return 0;
    return not_a_choice(k, text, why, len);
}

static int parse_choice(const key_def *k, const char *text, const char *dir, void *slot,
                        char *why, size_t len)
{
    int rc = check_one_of(k, text, why, len);
    return rc ? rc : store_text(k, "", text, slot, why, len);
}

/* A relative path is taken relative to dir (the config file's folder; "" = as given). */
static int parse_path(const key_def *k, const char *text, const char *dir, void *slot, char *why,
                      size_t len)
{
    char prefix[DT_PATH_MAX];
    prefix[0] = '\0';
    bool off = (k->flags & F_OFF) && strcmp(text, "off") == 0;
    if (text[0] && text[0] != '/' && dir[0] && !off)
        snprintf(prefix, sizeof prefix, "%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/");
    return store_text(k, prefix, text, slot, why, len);
}

/* Digits that print a bound in full when it is a whole number (1000000, not 1e+06). */
static int precise(double bound)
{
    return bound == floor(bound) && fabs(bound) < 1e15 ? 15 : 6;
}

static int check_range(const key_def *k, double v, char *why, size_t len)
{
    if (v >= k->min && v <= k->max)
        return 0;
    return say(why, len, k, "%.*g is out of range [%.*g, %.*g]", precise(v), v, precise(k->min),
               k->min, precise(k->max), k->max);
}

static int check_double(const key_def *k, const void *slot, char *why, size_t len)
{
    return check_range(k, *(const double *)slot, why, len);
}

static int check_int(const key_def *k, const void *slot, char *why, size_t len)
{
    return check_range(k, *(const int *)slot, why, len);
}

static int check_nothing(const key_def *k, const void *slot, char *why, size_t len)
{
    return 0;
}

static int check_enum(const key_def *k, const void *slot, char *why, size_t len)
{
    int v = *(const int *)slot;
    if (v >= 0 && k->choices(v))
        return 0;
    return say(why, len, k, "%d is not the index of a name", v);
}

static int check_choice(const key_def *k, const void *slot, char *why, size_t len)
{
    return check_one_of(k, slot, why, len);
}

static int check_path(const key_def *k, const void *slot, char *why, size_t len)
{
    const char *path = slot;
    struct stat st;
    if (!path[0])
        return k->flags & (F_REQUIRED | F_NONEMPTY) ? say(why, len, k, "must not be empty") : 0;
    if (!(k->flags & F_EXISTS))
        return 0;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            snprintf(why, len, "%s file '%s' not found", k->path, path);
        else
            snprintf(why, len, "%s file '%s': %s", k->path, path, strerror(errno));
        return DT_ENOTFOUND;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, len, "%s file '%s' is %s, not a regular file", k->path, path,
                 S_ISDIR(st.st_mode) ? "a folder" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket");
        return DT_EINVAL;
    }
    return 0;
}

static bool is_port(const char *s)
{
    size_t n = strspn(s, "0123456789");
    return n >= 1 && n <= 5 && !s[n] && atol(s) <= 65535;
}

static int check_listen(const key_def *k, const void *slot, char *why, size_t len)
{
    const char *addr = slot;
    const char *colon = strrchr(addr, ':');
    if (dt_server_listen_off(addr) || (colon && colon > addr && is_port(colon + 1)))
        return 0;
    return say(why, len, k, "'%s' is not HOST:PORT or off", addr);
}

static const type_ops types[KT_COUNT] = {
    [KT_DOUBLE] = { "a number", true, false, parse_double, check_double },
    [KT_INT] = { "an integer", true, false, parse_int, check_int },
    [KT_UINT64] = { "a non-negative integer", true, false, parse_uint64, check_nothing },
    [KT_BOOL] = { "true or false", true, false, parse_bool, check_nothing },
    [KT_STRING] = { "a string", false, true, parse_string, check_nothing },
    [KT_CHOICE] = { NULL, false, true, parse_choice, check_choice },
    [KT_ENUM] = { NULL, false, false, parse_enum, check_enum },
    [KT_PATH] = { "a path", false, true, parse_path, check_path },
    [KT_LISTEN] = { "HOST:PORT or off", false, true, parse_string, check_listen },
};

static void expected_noun(const key_def *k, char *buf, size_t len)
{
    char names[256];
    if (types[k->type].noun) {
        snprintf(buf, len, "%s", types[k->type].noun);
        return;
    }
    choice_list(k, names, sizeof names);
    snprintf(buf, len, "one of %s", names);
}

/* Parses text into k's field and checks it; the field is unchanged on failure. */
static int set_checked(const key_def *k, const char *text, const char *dir, dt_config *cfg,
                       char *why, size_t len)
{
    char saved[DT_PATH_MAX];
    void *slot = slot_of(k, cfg);
    assert(k->size <= sizeof saved);
    memcpy(saved, slot, k->size);
    int rc = types[k->type].parse(k, text, dir, slot, why, len);
    if (rc == 0)
        rc = types[k->type].check(k, slot, why, len);
    if (rc)
        memcpy(slot, saved, k->size);
    else
        cfg->given[k - keys] = true;
    return rc;
}

/* ---- rules between keys -------------------------------------------------------- */

typedef struct rule {
    const char *blame[2];  /* keys whose position the message takes, first found wins */
    int (*broken)(const dt_config *cfg, char *why, size_t len);  /* nonzero with a message */
} rule;

static int burn_in_below_steps(const dt_config *cfg, char *why, size_t len)
{
    const dt_belief_params *b = &cfg->belief;
    return b->burn_in >= b->steps &&
           snprintf(why, len, "scheduler.belief.burn_in (%d) must be below scheduler.belief.steps (%d)",
                    b->burn_in, b->steps) > 0;
}

static int min_batches_within_repeats(const dt_config *cfg, char *why, size_t len)
{
    const dt_measure_params *m = &cfg->measure;
    return m->min_batches > m->max_repeats &&
           snprintf(why, len, "measure.min_batches (%d) must not exceed measure.max_repeats (%d)",
                    m->min_batches, m->max_repeats) > 0;
}

static int slot_size_set(const dt_config *cfg, char *why, size_t len)
{
    return cfg->budget.slot_seconds <= 0 && cfg->budget.slot_trials <= 0 &&
           snprintf(why, len, "budget: slot_seconds or slot_trials must be above 0") > 0;
}

static int slot_within_total(const dt_config *cfg, char *why, size_t len)
{
    const dt_budget_params *b = &cfg->budget;
    return b->slot_trials == 0 && b->slot_seconds > b->total_seconds &&
           snprintf(why, len, "budget.slot_seconds (%g) exceeds budget.total_seconds (%g)",
                    b->slot_seconds, b->total_seconds) > 0;
}

static int k_min_within_batch(const dt_config *cfg, char *why, size_t len)
{
    const dt_tuner_params *t = &cfg->tuner;
    return t->sampling.k_min > t->batch_size &&
           snprintf(why, len, "tuner.sampling.k_min (%d) exceeds tuner.batch_size (%d)",
                    t->sampling.k_min, t->batch_size) > 0;
}

static int backend_fits_target(const dt_config *cfg, char *why, size_t len)
{
    const char *b = cfg->backend, *target = dt_target_name(cfg->target);
    const char *any = dt_replay_backend.name;  /* measures every target */
    return b[0] && strcmp(b, any) != 0 && strcmp(b, target) != 0 &&
           snprintf(why, len, "backend '%s' cannot measure target '%s' (use \"\", %s or %s)",
                    b, target, target, any) > 0;
}

static int table_broken(const char *key, const char *table, char *why, size_t len)
{
    double h[DT_SCHED_HAZARD_MAX];
    int n;
    dt_error err = { 0 };
    return dt_sched_hazard_parse(table, h, &n, &err) && snprintf(why, len, "%s: %s", key, err.msg) > 0;
}

static int hazard_table_valid(const dt_config *cfg, char *why, size_t len)
{
    return table_broken("scheduler.hazard", cfg->scheduler.hazard, why, len);
}

static int prior_table_valid(const dt_config *cfg, char *why, size_t len)
{
    return table_broken("scheduler.prior_hazard", cfg->scheduler.prior_hazard, why, len);
}

static int staleness_table_valid(const dt_config *cfg, char *why, size_t len)
{
    return cfg->scheduler.staleness[0] &&
           table_broken("scheduler.staleness", cfg->scheduler.staleness, why, len);
}

static const rule rules[] = {
    { { "scheduler.belief.burn_in", "scheduler.belief.steps" }, burn_in_below_steps },
    { { "scheduler.hazard", "scheduler.policy" }, hazard_table_valid },
    { { "scheduler.prior_hazard", "scheduler.policy" }, prior_table_valid },
    { { "scheduler.staleness", "scheduler.policy" }, staleness_table_valid },
    { { "measure.min_batches", "measure.max_repeats" }, min_batches_within_repeats },
    { { "budget.slot_trials", "budget.slot_seconds" }, slot_size_set },
    { { "budget.slot_seconds", "budget.total_seconds" }, slot_within_total },
    { { "tuner.sampling.k_min", "tuner.batch_size" }, k_min_within_batch },
    { { "backend", "target" }, backend_fits_target },
};

/* ---- collecting messages ------------------------------------------------------ */

typedef struct collector {
    const char *path;   /* the file positions refer to */
    dt_error *err;      /* may be NULL */
    FILE *sink;         /* may be NULL */
    int code;           /* the first problem's */
    bool full;          /* err->msg ran out of room */
} collector;

static void append_line(collector *c, const char *line)
{
    dt_error *err = c->err;
    if (!err || c->full)
        return;
    size_t used = strlen(err->msg), room = sizeof err->msg - used;
    int n = snprintf(err->msg + used, room, "%s%s", used ? "\n" : "", line);
    if (n >= 0 && (size_t)n < room)
        return;
    memcpy(err->msg + sizeof err->msg - 4, "...", 4);
    c->full = true;
}

/* Adds one problem; at (may be NULL) is the node or mark it is about. */
static void add(collector *c, int code, const yaml_mark_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add(collector *c, int code, const yaml_mark_t *at, const char *fmt, ...)
{
    char line[DT_ERROR_MSG_MAX + 256];
    int n = 0;
    if (at)
        n = snprintf(line, sizeof line, "%s:%zu:%zu: ", c->path, at->line + 1, at->column + 1);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (c->code == 0)
        c->code = code;
    if (c->err)
        c->err->code = c->code;
    append_line(c, line);
    if (c->sink)
        fprintf(c->sink, "%s\n", line);
}

/* Where a broken rule is reported: its first key written in the file, else
 * fallback (NULL where there is no file). */
static const yaml_mark_t *blame_mark(const rule *r, const yaml_node_t *const *where,
                                     const yaml_mark_t *fallback)
{
    for (int b = 0; b < 2 && where; b++) {
        int i = find_key(r->blame[b]);
        assert(i >= 0 && "a rule blames a key that is not in the table");
        if (where[i])
            return &where[i]->start_mark;
    }
    return fallback;
}

/* Whether a key of the rule was written with a value already reported as
 * wrong; the rule then only repeats that problem. */
static bool blames_rejected(const rule *r, const yaml_node_t *const *where, const bool *present)
{
    for (int b = 0; b < 2 && where; b++) {
        int i = find_key(r->blame[b]);
        if (present[i] && !where[i])
            return true;
    }
    return false;
}

/* Runs every rule; where and present (NULL without a file) say which keys
 * the file wrote and accepted. */
static void check_rules(collector *c, const dt_config *cfg, const yaml_node_t *const *where,
                        const bool *present, const yaml_mark_t *fallback)
{
    char why[512];
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        if (blames_rejected(&rules[i], where, present) || !rules[i].broken(cfg, why, sizeof why))
            continue;
        add(c, DT_EINVAL, blame_mark(&rules[i], where, fallback), "%s", why);
    }
}

/* ---- walking the document ------------------------------------------------------ */

typedef struct loader {
    collector out;
    yaml_document_t doc;
    dt_config *cfg;
    char dir[DT_PATH_MAX];                /* the config file's folder; "" = current */
    const yaml_node_t *where[NKEYS];      /* value node of each key that was accepted */
    bool present[NKEYS];                  /* key written in the file, good or bad */
} loader;

static const yaml_node_t *node_at(loader *ld, int id)
{
    return yaml_document_get_node(&ld->doc, id);
}

static const char *scalar_of(const yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

static bool is_null(const yaml_node_t *node)
{
    const char *s = scalar_of(node);
    return s && node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (!s[0] || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
            strcmp(s, "NULL") == 0);
}

static const char *shape_of(const yaml_node_t *node)
{
    return node->type == YAML_MAPPING_NODE ? "a mapping" : "a list";
}

/* The text a value node gives key k, or NULL with a message in why. */
static const char *value_text(const key_def *k, const yaml_node_t *node, char *why, size_t len)
{
    char noun[300];
    const type_ops *t = &types[k->type];
    const char *s = scalar_of(node);
    if (s && is_null(node) && t->stringy)
        return "";
    if (s && !is_null(node) && (!t->plain_only || node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE))
        return s;
    expected_noun(k, noun, sizeof noun);
    if (!s)
        say(why, len, k, "expected %s, got %s", noun, shape_of(node));
    else if (is_null(node))
        say(why, len, k, "expected %s, got nothing", noun);
    else
        say(why, len, k, "expected %s, got the quoted string '%s'", noun, s);
    return NULL;
}

static void read_value(loader *ld, int i, const yaml_node_t *node)
{
    char why[DT_ERROR_MSG_MAX];
    const key_def *k = &keys[i];
    const char *text = value_text(k, node, why, sizeof why);
    int rc = text ? set_checked(k, text, ld->dir, ld->cfg, why, sizeof why) : DT_EINVAL;
    ld->present[i] = true;
    if (rc)
        add(&ld->out, rc, &node->start_mark, "%s", why);
    else
        ld->where[i] = node;
}

/* Path of key inside section ("" = top level) into buf; false if it cannot be a key. */
static bool join_path(const char *section, const char *key, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s%s%s", section, section[0] ? "." : "", key);
    return n > 0 && (size_t)n < len && key[0] && !strchr(key, '.');
}

/* The part of path right below section ("budget" in "budget.slot_seconds" for
 * section ""), its length in *n; NULL if path is not inside section. */
static const char *child_name(const char *path, const char *section, size_t *n)
{
    size_t slen = strlen(section);
    if (slen && (strncmp(path, section, slen) != 0 || path[slen] != '.'))
        return NULL;
    const char *rest = slen ? path + slen + 1 : path;
    *n = strcspn(rest, ".");
    return rest;
}

static bool is_section(const char *path)
{
    size_t n;
    for (int i = 0; i < NKEYS; i++)
        if (child_name(keys[i].path, path, &n))
            return true;
    return false;
}

/* "a, b, c": the names right below section, each once, in table order. */
static void known_names(const char *section, char *buf, size_t len)
{
    size_t used = 0, n, m;
    buf[0] = '\0';
    for (int i = 0; i < NKEYS && used < len; i++) {
        const char *name = child_name(keys[i].path, section, &n), *seen = NULL;
        for (int j = 0; name && j < i && !seen; j++) {
            const char *other = child_name(keys[j].path, section, &m);
            seen = other && m == n && strncmp(other, name, n) == 0 ? other : NULL;
        }
        if (!name || seen)
            continue;
        int w = snprintf(buf + used, len - used, "%s%.*s", used ? ", " : "", (int)n, name);
        used += w > 0 ? (size_t)w : 0;
    }
}

static void unknown_key(loader *ld, const yaml_node_t *key, const char *name, const char *section)
{
    char known[512];
    known_names(section, known, sizeof known);
    add(&ld->out, DT_EINVAL, &key->start_mark, "unknown key '%s'%s%s (known: %s)", name,
        section[0] ? " in " : "", section, known);
}

static void walk_mapping(loader *ld, const yaml_node_t *map, const char *section);

static void read_section(loader *ld, const char *path, const yaml_node_t *node)
{
    char known[512];
    if (node->type == YAML_MAPPING_NODE) {
        walk_mapping(ld, node, path);
    } else if (!is_null(node)) {
        known_names(path, known, sizeof known);
        add(&ld->out, DT_EINVAL, &node->start_mark, "%s: expected a mapping of %s, got %s%s%s",
            path, known, scalar_of(node) ? "'" : "", scalar_of(node) ? scalar_of(node) : shape_of(node),
            scalar_of(node) ? "'" : "");
    }
}

static void visit_pair(loader *ld, const yaml_node_t *map, const yaml_node_pair_t *p,
                       const char *section)
{
    char path[128];
    const yaml_node_t *key = node_at(ld, p->key), *value = node_at(ld, p->value);
    const char *name = scalar_of(key);
    if (!name) {
        add(&ld->out, DT_EINVAL, &key->start_mark, "a key must be a name, not %s", shape_of(key));
    } else if (!join_path(section, name, path, sizeof path)) {
        unknown_key(ld, key, name, section);
    } else if (find_key(path) >= 0) {
        read_value(ld, find_key(path), value);
    } else if (is_section(path)) {
        read_section(ld, path, value);
    } else {
        unknown_key(ld, key, name, section);
    }
}

static void walk_mapping(loader *ld, const yaml_node_t *map, const char *section)
{
    for (const yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++)
        visit_pair(ld, map, p, section);
}

/* Walks the root; false when there is nothing to check further. */
static bool read_root(loader *ld)
{
    const yaml_node_t *root = yaml_document_get_root_node(&ld->doc);
    yaml_mark_t start = { 0, 0, 0 };
    if (!root) {
        add(&ld->out, DT_EINVAL, &start, "the file is empty; it needs at least 'model: FILE'");
        return false;
    }
    if (root->type != YAML_MAPPING_NODE) {
        add(&ld->out, DT_EINVAL, &root->start_mark,
            "a config is a mapping of keys (model, target, budget, ...), not %s",
            scalar_of(root) ? "a single value" : shape_of(root));
        return false;
    }
    walk_mapping(ld, root, "");
    return true;
}

static void check_required(loader *ld)
{
    yaml_mark_t start = { 0, 0, 0 };
    for (int i = 0; i < NKEYS; i++)
        if ((keys[i].flags & F_REQUIRED) && !ld->present[i])
            add(&ld->out, DT_EINVAL, &start, "missing required key '%s': %s", keys[i].path,
                keys[i].help);
}

/* Loads the file's one document into ld->doc (yamldoc: depth, duplicate
 * keys, one document). Returns 0 with ld->doc to be deleted by the caller,
 * or an error reported (nothing to delete). */
static int load_document(loader *ld, const char *path)
{
    dt_buf text = {0};
    dt_error read_err;
    int rc = dt_read_input(path, "config file", &text, &read_err);
    if (rc) {
        add(&ld->out, rc, NULL, "%s", read_err.msg);
        return rc;
    }
    dt_yamldoc_problem why;
    rc = dt_yamldoc_load(text.data, text.len, &ld->doc, &why);
    dt_buf_free(&text);
    if (rc)
        add(&ld->out, rc, &why.mark, "%s", why.msg);
    return rc;
}

static void folder_of(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) + (slash == path) : 0;
    snprintf(dir, len, "%.*s", (int)n, path);
}

static void check_model_file(loader *ld)
{
    dt_model *model = NULL;
    dt_error sub;
    int rc = dt_target_load_model(ld->cfg->model, ld->cfg->target, &model, &sub);
    if (rc)
        add(&ld->out, rc, NULL, "%s", sub.msg);
    dt_model_free(model);
}

/* ---- public ------------------------------------------------------------------ */

/* The run's own defaults; the modules give theirs. */
static void run_defaults(dt_config *cfg)
{
    cfg->target = DT_TARGET_DEFAULT;
    cfg->seed = 1;
    cfg->budget = (dt_budget_params){ .total_seconds = 600, .slot_seconds = 10,
                                      .retime_top = 4, .retime_rounds = 5 };
    snprintf(cfg->output_dir, sizeof cfg->output_dir, "runs/latest");
    snprintf(cfg->server_listen, sizeof cfg->server_listen, "%s", DT_SERVER_DEFAULT_LISTEN);
}

void dt_config_defaults(dt_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    run_defaults(cfg);
    cfg->scheduler = dt_scheduler_params_default();
    cfg->belief = dt_belief_params_default();
    cfg->tuner = dt_tuner_params_default();
    cfg->measure = dt_measure_params_default();
    cfg->db = dt_db_params_default();
}

int dt_config_load_report(const char *path, dt_config *cfg, bool check_model, FILE *messages,
                          dt_error *err)
{
    loader ld = { .out = { .path = path, .err = err, .sink = messages }, .cfg = cfg };
    yaml_mark_t start = { 0, 0, 0 };
    dt_config_defaults(cfg);
    dt_error_clear(err);
    snprintf(cfg->path, sizeof cfg->path, "%s", path);
    folder_of(path, ld.dir, sizeof ld.dir);
    if (load_document(&ld, path) != 0)
        return ld.out.code;
    bool walked = read_root(&ld);
    if (walked) {
        check_required(&ld);
        check_rules(&ld.out, cfg, ld.where, ld.present, &start);
    }
    bool model_accepted = walked && ld.where[find_key("model")];
    yaml_document_delete(&ld.doc);
    if (check_model && model_accepted)
        check_model_file(&ld);
    return ld.out.code;
}

int dt_config_load(const char *path, dt_config *cfg, bool check_model, dt_error *err)
{
    return dt_config_load_report(path, cfg, check_model, NULL, err);
}

int dt_config_set(dt_config *cfg, const char *key, const char *value, dt_error *err)
{
    char why[DT_ERROR_MSG_MAX];
    int i = find_key(key);
    if (i < 0) {
        known_names("", why, sizeof why);
        return dt_error_set(err, DT_EINVAL, "unknown config key '%s' (sections and keys: %s; "
                            "dtune check --help lists all)", key, why);
    }
    int rc = set_checked(&keys[i], value, "", cfg, why, sizeof why);
    return rc ? dt_error_set(err, rc, "%s", why) : 0;
}

bool dt_config_given(const dt_config *cfg, const char *key)
{
    int i = find_key(key);
    return i >= 0 && cfg->given[i];
}

int dt_config_validate(const dt_config *cfg, dt_error *err)
{
    char why[DT_ERROR_MSG_MAX];
    collector c = { .path = cfg->path, .err = err };
    dt_error_clear(err);
    for (int i = 0; i < NKEYS; i++) {
        int rc = types[keys[i].type].check(&keys[i], cslot_of(&keys[i], cfg), why, sizeof why);
        if (rc)
            add(&c, rc, NULL, "%s", why);
    }
    check_rules(&c, cfg, NULL, NULL, NULL);
    return c.code;
}

/* v in the fewest digits (15 to 17) that read back to the same double. */
static void format_double(double v, char *buf, size_t len)
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* k's value in cfg, as a user would write it. */
static void describe_value(const key_def *k, const dt_config *cfg, char *buf, size_t len)
{
    const void *slot = cslot_of(k, cfg);
    const char *text = slot;
    if ((k->flags & F_REQUIRED) && !text[0])
        snprintf(buf, len, "(required)");
    else if (k->type == KT_DOUBLE)
        format_double(*(const double *)slot, buf, len);
    else if (k->type == KT_INT)
        snprintf(buf, len, "%d", *(const int *)slot);
    else if (k->type == KT_UINT64)
        snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)slot);
    else if (k->type == KT_BOOL)
        snprintf(buf, len, "%s", *(const bool *)slot ? "true" : "false");
    else if (k->type == KT_ENUM)
        snprintf(buf, len, "%s", k->choices(*(const int *)slot));
    else
        snprintf(buf, len, "%s", text[0] ? text : "\"\"");
}

static void describe_range(const key_def *k, char *buf, size_t len)
{
    char names[256];
    buf[0] = '\0';
    if (k->type == KT_DOUBLE || k->type == KT_INT) {
        snprintf(buf, len, " [%.*g, %.*g]", precise(k->min), k->min, precise(k->max), k->max);
    } else if (k->type == KT_CHOICE || k->type == KT_ENUM) {
        choice_list(k, names, sizeof names);
        snprintf(buf, len, " (%s)", names);
    }
}

void dt_config_print_keys(FILE *f, const dt_config *values, const char *heading)
{
    char value[DT_PATH_MAX], range[300];
    fprintf(f, "%-36s %-15s %s\n", "KEY", heading, "MEANING");
    for (int i = 0; i < NKEYS; i++) {
        describe_value(&keys[i], values, value, sizeof value);
        describe_range(&keys[i], range, sizeof range);
        fprintf(f, "%-36s %-15s %s%s\n", keys[i].path, value, keys[i].help, range);
    }
}
