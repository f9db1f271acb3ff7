/* tuner_bench.c — chameleon vs autotvm vs random on ResNet-18 conv2d tasks.
 *
 * For each task and seed, each strategy tunes the task from scratch for the
 * same trial budget through the real measurer (dt_measurer over the backend
 * named by --backend). Every measured trial's best-so-far GFLOPS and the wall
 * clock at the end of its batch are traced, so one run gives:
 *
 *   A*            autotvm's final best measured GFLOPS
 *   reach         the first trial (and wall second) at which a strategy's best
 *                 measured GFLOPS is >= A*; for autotvm, when it first got there
 *   trial ratio   autotvm's reach / chameleon's reach   (goal >= 4.45)
 *   wall ratio    the same in wall seconds              (goal > 1)
 *   overhead      the tuner's non-measurement seconds / wall seconds (goal <= 10 %)
 *
 * A run that never reaches A* counts as reaching it one trial after the
 * budget (a bound in the tuner's favour is never used). Ratios are summarised
 * by their geometric mean over tasks and seeds.
 *
 * A* is a maximum of noisy measurements: a strategy that measures many
 * near-optimal configs collects more lucky draws. On the replay backend the
 * truth is known, so a second table repeats the comparison on the noise-free
 * GFLOPS of each strategy's incumbent (its best-measured config).
 *
 * Two more views of that noise. On replay, an oracle that knows the surface
 * measures the truly best configs first (once each, with the same noise) and
 * reports the trials it needs to reach A*: the most trials any tuner can
 * expect to save against a noisy maximum. On every backend, each run's final
 * best config is measured REMEASURE more times after the run (outside its
 * clocks); the mean compares the strategies' finals without the lucky draw,
 * and A* / its own config's mean shows how much of A* is that draw.
 *
 * On the replay backend each run gets its own measurer (same surface seed),
 * so the noise a run draws does not depend on how many trials the runs
 * before it measured: a bench is reproducible, and a change to chameleon no
 * longer moves autotvm's A*. --first-seed picks the seeds (default 1), so a
 * change tuned on seeds 1-3 can be checked on others.
 *
 * On the replay backend measurements cost nothing, so wall ratios would only
 * compare overheads; --sim-measure-seconds S charges S seconds of virtual
 * measurement per trial to every wall clock (and to the overhead's
 * denominator) to model a real target. It is 0 unless given, and the table
 * says when it was used.
 *
 * --sequential tunes two sequences of four tasks (see "the sequential-tasks
 * mode" below). Its real-CPU run takes hours, so it goes in pieces: with
 * --resume each finished piece (one variant and seed of one sequence) is kept
 * in WORK_DIR/pieces and read back instead of run again when the settings and
 * this binary are the same; --stop-after S starts no piece after S seconds and
 * exits with status 3, and the same command goes on later. The tables are
 * printed once every piece is there. --variants LIST runs only the listed
 * variants (pieces of the others are read when kept, never run); without
 * every variant there is no R, so it prints each run's trials, wall seconds
 * and overhead instead (a quick look at the overhead on a real backend).
 * --k-min N sets adaptive sampling's smallest k (a kept piece names it).
 *
 *   bin/tuner_bench [--backend replay|cpu] [--model models/resnet18.yaml]
 *                   [--tasks a,b,c,d] [--trials N] [--seeds N] [--first-seed N] [--batch N]
 *                   [--strategies chameleon,autotvm,random]
 *                   [--sim-measure-seconds S] [--work-dir DIR] [--ppo-episodes N] [--k-min N]
 *                   [--sequential [--resume] [--stop-after S] [--variants LIST]]
 */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtune/backend.h"
#include "dtune/config.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/ppo.h"
#include "dtune/sampling.h"
#include "dtune/space.h"
#include "dtune/transfer.h"
#include "dtune/tuner.h"
#include "dtune/util.h"
#include "dtune/target.h"
#include "remeasure.h"
#include "replay_backend.h"

#define MAX_TASKS 8
#define MAX_SEEDS 16
#define NSTRAT 3
#define REPLAY_SEED 1          /* the measurer's seed: fixes the replay surface */
#define REMEASURE 10           /* re-measurements of each run's final best config */
#define ORACLE_MAX_POINTS (1u << 24)   /* the oracle ranks every point of a space this size */
#define NNEAR 3                /* the summary's shares of A* */
static const double near_share[NNEAR] = { 0.95, 0.98, 0.99 };
/* --sequential */
#define SEQ_TASKS 4            /* tasks of each kind, tuned in order */
#define NVARIANTS 4
#define ALL_VARIANTS "chameleon,chameleon+transfer,autotvm,autotvm+transfer"
#define NTARGETS 2
static const double target_share[NTARGETS] = { 0.95, 0.98 };

typedef struct options {
    char backend[16];
    char model[DT_PATH_MAX];
    char tasks[512];
    char strategies[128];
    char work_dir[DT_PATH_MAX];
    int trials, seeds, first_seed, batch;
    double sim_seconds;
    bool sequential;
    bool resume;               /* --sequential: keep each finished piece, reuse kept ones */
    double stop_after;         /* --sequential: start no piece after this many seconds (0: none) */
    int ppo_episodes;          /* --ppo-episodes: chameleon's episodes a round (0: the default) */
    int k_min;                 /* --k-min: adaptive sampling's smallest k (0: the default) */
    int per_config;            /* --episodes-per-config: chameleon's episodes per config the
                                  previous round measured (-1: the default; 0: off) */
    char variants[128];        /* --sequential --variants: the variants run (default all) */
} options;

/* The trace of one tuning run: best-so-far and wall clock after each trial. */
typedef struct trace {
    dt_measurer *measurer;
    const dt_backend_i *backend;
    int runs;                  /* runs so far: names each CPU run's own work dir */
    bool replay;               /* the surface's noise-free truth is known */
    double started, sim_seconds, best, best_true;
    int n, cap;
    double *best_at, *wall_at;
    double *true_at;           /* replay: noise-free GFLOPS of the incumbent */
} trace;

typedef struct outcome {
    bool ran;
    double final_best;
    int reach_trials;          /* trials to reach A* (budget + 1 if never) */
    int reach_near[NNEAR];     /* trials to reach near_share[i] x A* */
    double reach_wall;
    double final_true;         /* replay: the incumbent's noise-free GFLOPS */
    int reach_true;            /* replay: trials until the incumbent's truth >= autotvm's final */
    double wall, overhead;     /* whole run, with simulated measurement */
    int trials;
    double remeasured;         /* mean GFLOPS of REMEASURE new measurements of the final best */
} outcome;

static const char *const strategy_names[NSTRAT] = { "chameleon", "autotvm", "random" };

static void usage(FILE *f)
{
    fprintf(f, "usage: tuner_bench [--backend replay|cpu] [--model PATH] [--tasks a,b,...]\n"
               "                   [--trials N] [--seeds N] [--first-seed N] [--batch N]\n"
               "                   [--strategies LIST]\n"
               "                   [--sim-measure-seconds S] [--work-dir DIR] [--ppo-episodes N] [--k-min N]\n"
               "                   [--episodes-per-config N]\n"
               "                   [--sequential [--resume] [--stop-after SECONDS] [--variants LIST]]\n");
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->backend, sizeof o->backend, "replay");
    snprintf(o->model, sizeof o->model, "models/resnet18.yaml");
    snprintf(o->tasks, sizeof o->tasks, "layer1_3x3,layer2_3x3,layer3_3x3,layer4_3x3");
    snprintf(o->strategies, sizeof o->strategies, "chameleon,autotvm,random");
    snprintf(o->variants, sizeof o->variants, "%s", ALL_VARIANTS);
    snprintf(o->work_dir, sizeof o->work_dir, "/tmp/dtune-tuner-bench");
    o->trials = -1;
    o->seeds = 3;
    o->first_seed = 1;
    o->batch = 64;
    o->per_config = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--sequential") == 0) {
            o->sequential = true;
            continue;
        }
        if (strcmp(a, "--resume") == 0) {
            o->resume = true;
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (strcmp(a, "--backend") == 0) snprintf(o->backend, sizeof o->backend, "%s", v);
        else if (strcmp(a, "--model") == 0) snprintf(o->model, sizeof o->model, "%s", v);
        else if (strcmp(a, "--tasks") == 0) snprintf(o->tasks, sizeof o->tasks, "%s", v);
        else if (strcmp(a, "--strategies") == 0) snprintf(o->strategies, sizeof o->strategies, "%s", v);
        else if (strcmp(a, "--work-dir") == 0) snprintf(o->work_dir, sizeof o->work_dir, "%s", v);
        else if (strcmp(a, "--trials") == 0) o->trials = atoi(v);
        else if (strcmp(a, "--seeds") == 0) o->seeds = atoi(v);
        else if (strcmp(a, "--first-seed") == 0) o->first_seed = atoi(v);
        else if (strcmp(a, "--batch") == 0) o->batch = atoi(v);
        else if (strcmp(a, "--sim-measure-seconds") == 0) o->sim_seconds = atof(v);
        else if (strcmp(a, "--stop-after") == 0) o->stop_after = atof(v);
        else if (strcmp(a, "--ppo-episodes") == 0) o->ppo_episodes = atoi(v);
        else if (strcmp(a, "--k-min") == 0) o->k_min = atoi(v);
        else if (strcmp(a, "--episodes-per-config") == 0) {
            o->per_config = atoi(v);
            if (o->per_config < 0)
                return -1;
        }
        else if (strcmp(a, "--variants") == 0) snprintf(o->variants, sizeof o->variants, "%s", v);
        else return -1;
    }
    if (o->trials < 0)
        o->trials = strcmp(o->backend, "replay") == 0 ? 1000 : 256;
    if (o->trials < 1 || o->seeds < 1 || o->seeds > MAX_SEEDS || o->first_seed < 1 || o->batch < 1 ||
        o->sim_seconds < 0 || o->stop_after < 0 || o->ppo_episodes < 0 || o->k_min < 0 || (o->resume && !o->sequential) ||
        (!o->sequential && strcmp(o->variants, ALL_VARIANTS) != 0) ||
        (o->stop_after > 0 && !o->resume))
        return -1;
    return 0;
}

/* Whether name is one of the comma-separated list's entries. */
static bool listed(const char *list, const char *name)
{
    char padded[160], needle[48];
    snprintf(padded, sizeof padded, ",%s,", list);
    snprintf(needle, sizeof needle, ",%s,", name);
    return strstr(padded, needle) != NULL;
}

/* ---- one tuning run ---------------------------------------------------------------- */

static int traced_measure(void *ctx, const dt_space *space, const dt_point *points, int n,
                          dt_measure_result *results, dt_error *err)
{
    trace *tr = ctx;
    int rc = dt_measurer_run(tr->measurer, space, points, n, results, err);
    if (rc)
        return rc;
    double wall = dt_now_seconds() - tr->started;
    for (int i = 0; i < n && tr->n < tr->cap; i++) {
        if (results[i].result == DT_RESULT_OK && results[i].gflops > tr->best) {
            tr->best = results[i].gflops;
            if (tr->replay)
                tr->best_true = dt_replay_backend_true_gflops(space, &points[i], REPLAY_SEED);
        }
        tr->best_at[tr->n] = tr->best;
        tr->true_at[tr->n] = tr->best_true;
        tr->wall_at[tr->n] = wall + tr->sim_seconds * (tr->n + 1);
        tr->n++;
    }
    return n;
}

/* First trial (1-based) whose curve value reaches target, or cap + 1. */
static int reach(const trace *tr, const double *curve, double target, double *wall)
{
    for (int i = 0; i < tr->n; i++)
        if (curve[i] >= target && target > 0) {
            if (wall)
                *wall = tr->wall_at[i];
            return i + 1;
        }
    if (wall)
        *wall = tr->n ? tr->wall_at[tr->n - 1] : 0;
    return tr->cap + 1;
}

/* The mean GFLOPS of REMEASURE further measurements of the run's final best
 * config (after the run, outside its clocks): what that config measures at
 * without the luck of the draw that made it the best. 0 if none was ok. */
static int remeasure(dt_measurer *m, const dt_space *space, const dt_tuner *t, double *mean,
                     dt_error *err)
{
    dt_point best;
    *mean = 0;
    if (dt_tuner_best(t, &best, NULL))
        return 0;
    int ok = 0;
    for (int r = 0; r < REMEASURE; r++) {
        dt_measure_result res;
        memset(&res, 0, sizeof res);
        int rc = dt_measurer_run(m, space, &best, 1, &res, err);
        if (rc)
            return rc;
        if (res.result == DT_RESULT_OK && res.gflops > 0) {
            *mean += res.gflops;
            ok++;
        }
    }
    *mean = ok ? *mean / ok : 0;
    return 0;
}

static int tune_once(const options *o, const dt_config *cfg, const dt_space *space, int strategy,
                     uint64_t seed, trace *tr, outcome *out, dt_error *err)
{
    dt_tuner_params tc = cfg->tuner;
    snprintf(tc.strategy, sizeof tc.strategy, "%s", strategy_names[strategy]);
    tc.batch_size = o->batch;
    if (tc.sampling.k_min > tc.batch_size)
        tc.sampling.k_min = tc.batch_size;
    /* Each run gets its own measurer. On replay, so the noise a run sees does
     * not depend on how many trials the runs before it measured; on the CPU,
     * with its own work dir, so no run finds another's configs compiled in
     * the content-addressed cache (the strategies that ran later would). */
    dt_measurer *own = NULL;
    dt_tuner *t = NULL;
    char dir[DT_PATH_MAX + 64];
    if (tr->replay)
        snprintf(dir, sizeof dir, "%s", o->work_dir);
    else
        snprintf(dir, sizeof dir, "%s/%s-%d", o->work_dir, strategy_names[strategy], tr->runs);
    tr->runs++;
    int rc = dt_measurer_new(tr->backend, &cfg->measure, dir, REPLAY_SEED, &own, err);
    if (!rc)
        rc = dt_tuner_new(space, &tc, seed, &t, err);
    if (rc) {
        dt_measurer_free(own);
        return rc;
    }
    tr->measurer = own;
    tr->n = 0;
    tr->best = tr->best_true = 0;
    tr->sim_seconds = o->sim_seconds;
    tr->started = dt_now_seconds();
    dt_tuner_budget b = { .trials = o->trials };
    dt_tuner_stats st;
    rc = dt_tuner_run(t, &b, traced_measure, tr, &st, err);
    if (!rc)
        rc = remeasure(own, space, t, &out->remeasured, err);
    dt_tuner_free(t);
    tr->measurer = NULL;
    dt_measurer_free(own);
    if (rc)
        return rc;
    out->ran = true;
    out->final_best = tr->best;
    out->final_true = tr->best_true;
    out->trials = st.trials;
    out->wall = st.wall_seconds + o->sim_seconds * st.trials;
    out->overhead = out->wall > 0 ? st.overhead_seconds / out->wall : 0;
    return 0;
}

/* ---- the replay oracle ---------------------------------------------------------------- */

typedef struct truth_rank {
    double gflops;
    uint64_t index;
} truth_rank;

static int by_truth_desc(const void *a, const void *b)
{
    const truth_rank *x = a, *y = b;
    if (x->gflops != y->gflops)
        return x->gflops < y->gflops ? 1 : -1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The best `max` valid points of a replay space by noise-free GFLOPS, best
 * first, into *out (malloc'd); returns how many, or -1 when out of memory. */
static int oracle_order(const dt_space *space, int max, dt_point **out)
{
    truth_rank *all = malloc((size_t)space->size * sizeof *all);
    *out = malloc((size_t)max * sizeof **out);
    if (!all || !*out) {
        free(all);
        free(*out);
        *out = NULL;
        return -1;
    }
    uint64_t n = 0;
    for (uint64_t i = 0; i < space->size; i++) {
        dt_point p;
        dt_space_point(space, i, &p);
        if (dt_space_valid(space, &p))
            all[n++] = (truth_rank){ dt_replay_backend_true_gflops(space, &p, REPLAY_SEED), i };
    }
    qsort(all, (size_t)n, sizeof *all, by_truth_desc);
    int m = n < (uint64_t)max ? (int)n : max;
    for (int i = 0; i < m; i++)
        dt_space_point(space, all[i].index, &(*out)[i]);
    free(all);
    return m;
}

/* The oracle knows the surface and measures its points best first (each once,
 * through its own measurer, so it draws noise as any run does); returns the
 * trials until its best measured GFLOPS reaches target, or trials + 1. No
 * tuner can expect to reach a noisy maximum sooner than the run that measures
 * the truly best configs first. */
static int oracle_reach(const options *o, const dt_config *cfg, const dt_space *space,
                        const dt_point *order, int n, double target, trace *tr, dt_error *err)
{
    dt_measurer *own = NULL;
    int rc = dt_measurer_new(tr->backend, &cfg->measure, o->work_dir, REPLAY_SEED, &own, err);
    if (rc)
        return -rc;
    dt_measure_result *res = calloc((size_t)o->batch, sizeof *res);
    if (!res) {
        dt_measurer_free(own);
        return -dt_error_set(err, DT_ENOMEM, "out of memory");
    }
    tr->measurer = own;
    tr->n = 0;
    tr->best = tr->best_true = 0;
    tr->sim_seconds = 0;
    tr->started = dt_now_seconds();
    for (int at = 0; !rc && at < n && tr->best < target; at += o->batch) {
        int b = n - at < o->batch ? n - at : o->batch;
        rc = traced_measure(tr, space, order + at, b, res, err);
    }
    tr->measurer = NULL;
    dt_measurer_free(own);
    free(res);
    return rc ? -rc : reach(tr, tr->best_at, target, NULL);
}

/* ---- reporting ------------------------------------------------------------------------ */

typedef struct summary {
    double log_trial_ratio, log_wall_ratio;
    int pairs, reached;
    char truth[8192];          /* replay: the noise-free table, printed last */
    size_t truth_len;
    double log_true_ratio;
    int true_pairs, true_reached;
    double overhead_sum[NSTRAT];
    int overhead_n[NSTRAT];
    double log_oracle_ratio;   /* replay: autotvm's reach / the oracle's */
    int oracle_pairs, oracle_reached;
    double log_near_ratio[NNEAR];
    int near_reached[NNEAR];
    double log_remeasured_ratio, log_luck;   /* chameleon / autotvm re-measured; A* / its re-measure */
    int remeasured_pairs;
} summary;

static void report_seed(const char *task, uint64_t seed, outcome res[NSTRAT], summary *s)
{
    printf("| %-12s | %2llu |", task, (unsigned long long)seed);
    for (int k = 0; k < NSTRAT; k++)
        if (res[k].ran)
            printf(" %8.2f |", res[k].final_best);
        else
            printf(" %8s |", "-");
    const outcome *c = &res[0], *a = &res[1];
    if (c->ran && a->ran) {
        double tr = (double)a->reach_trials / c->reach_trials;
        double wr = c->reach_wall > 0 ? a->reach_wall / c->reach_wall : 0;
        printf(" %5d / %-5d | %7.1f / %-7.1f | %6.2fx | %6.2fx |", c->reach_trials, a->reach_trials,
               c->reach_wall, a->reach_wall, tr, wr);
        s->log_trial_ratio += log(tr);
        s->log_wall_ratio += wr > 0 ? log(wr) : 0;
        s->pairs++;
        s->reached += c->reach_trials <= c->trials;
        for (int i = 0; i < NNEAR; i++) {
            s->log_near_ratio[i] += log((double)a->reach_near[i] / c->reach_near[i]);
            s->near_reached[i] += c->reach_near[i] <= c->trials;
        }
    } else {
        printf(" %13s | %17s | %7s | %7s |", "-", "-", "-", "-");
    }
    for (int k = 0; k < NSTRAT; k++) {
        if (res[k].ran) {
            printf(" %5.1f%% |", 100 * res[k].overhead);
            s->overhead_sum[k] += res[k].overhead;
            s->overhead_n[k]++;
        } else {
            printf(" %6s |", "-");
        }
    }
    if (c->ran && a->ran && c->remeasured > 0 && a->remeasured > 0) {
        printf(" %6.2f / %-6.2f |", c->remeasured, a->remeasured);
        s->log_remeasured_ratio += log(c->remeasured / a->remeasured);
        s->log_luck += log(a->final_best / a->remeasured);
        s->remeasured_pairs++;
    } else {
        printf(" %15s |", "-");
    }
    printf("\n");
    fflush(stdout);
}

/* Replay only: the same comparison on the incumbents' noise-free GFLOPS, which
 * measurement noise cannot flatter (A* above is a maximum of noisy values). */
static void append_truth(const char *task, uint64_t seed, const outcome res[NSTRAT], summary *s)
{
    const outcome *c = &res[0], *a = &res[1], *r = &res[2];
    if (!c->ran || !a->ran || s->truth_len >= sizeof s->truth)
        return;
    double ratio = (double)a->reach_true / c->reach_true;
    s->truth_len += (size_t)snprintf(s->truth + s->truth_len, sizeof s->truth - s->truth_len,
                                     "| %-12s | %2llu | %8.2f | %8.2f | %8.2f | %5d / %-5d | %6.2fx |\n",
                                     task, (unsigned long long)seed, c->final_true, a->final_true,
                                     r->ran ? r->final_true : 0.0, c->reach_true, a->reach_true, ratio);
    s->log_true_ratio += log(ratio);
    s->true_pairs++;
    s->true_reached += c->reach_true <= c->trials;
}

/* The defaults with the options' changes to the tuner. */
static void bench_config(const options *o, dt_config *cfg)
{
    dt_config_defaults(cfg);
    if (o->ppo_episodes > 0)
        cfg->tuner.ppo.episodes = o->ppo_episodes;
    if (o->k_min > 0)
        cfg->tuner.sampling.k_min = o->k_min;
    if (o->per_config >= 0)
        cfg->tuner.ppo.episodes_per_config = o->per_config;
}

/* The header lines both modes share: what the options changed. */
static void print_settings(const options *o)
{
    if (o->sim_seconds > 0)
        printf("wall clocks include %.3f s of simulated measurement per trial\n", o->sim_seconds);
    if (o->ppo_episodes > 0)
        printf("chameleon's PPO episodes a round: %d (default %d)\n", o->ppo_episodes,
               dt_ppo_params_default().episodes);
    if (o->k_min > 0)
        printf("chameleon's adaptive sampling k_min: %d (default %d)\n", o->k_min,
               dt_sampling_params_default().k_min);
    if (o->per_config >= 0)
        printf("chameleon's PPO episodes per config the previous round measured: %d (default %d)\n",
               o->per_config, dt_ppo_params_default().episodes_per_config);
}

static void print_header(const options *o)
{
    printf("tuner_bench: backend %s, %d trials per run, batch %d, %d seed(s) from %d\n",
           o->backend, o->trials, o->batch, o->seeds, o->first_seed);
    print_settings(o);
    printf("\n| task         | seed | cham best | atvm best | rand best | trials to A* cham/atvm "
           "| wall s to A* cham/atvm | trial ratio | wall ratio | ovh cham | ovh atvm | ovh rand "
           "| re-measured cham/atvm |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

static void print_oracle(const summary *s)
{
    if (s->oracle_pairs == 0)
        return;
    printf("\noracle (replay: knows the surface, measures the truly best configs first, one\n"
           "measurement each with the same noise): reached autotvm's final best in %d of %d runs;\n"
           "trial ratio (geomean) autotvm / oracle %.2fx - the most any tuner can expect against\n"
           "this noisy A*\n", s->oracle_reached, s->oracle_pairs,
           exp(s->log_oracle_ratio / s->oracle_pairs));
}

static void print_truth(const summary *s)
{
    if (s->true_pairs == 0)
        return;
    printf("\nnoise-free (replay): true GFLOPS of each strategy's best-measured config, and trials\n"
           "until chameleon's / autotvm's incumbent is truly as fast as autotvm's final one\n\n"
           "| task         | seed | cham true | atvm true | rand true | trials cham/atvm | ratio |\n"
           "|---|---|---|---|---|---|---|\n%s", s->truth);
    printf("\nnoise-free: chameleon matched autotvm's final config in %d of %d runs; "
           "trial ratio (geomean) %.2fx\n", s->true_reached, s->true_pairs,
           exp(s->log_true_ratio / s->true_pairs));
}

static void print_summary(const summary *s)
{
    print_truth(s);
    print_oracle(s);
    if (s->pairs == 0)
        return;
    double tr = exp(s->log_trial_ratio / s->pairs), wr = exp(s->log_wall_ratio / s->pairs);
    printf("\nchameleon reached autotvm's final best in %d of %d runs\n", s->reached, s->pairs);
    for (int i = 0; i < NNEAR; i++)
        printf("to %.0f%% of A*: chameleon reached it in %d of %d runs, trial ratio autotvm / chameleon "
               "%.2fx (geomean)\n", 100 * near_share[i], s->near_reached[i], s->pairs,
               exp(s->log_near_ratio[i] / s->pairs));
    if (s->remeasured_pairs)
        printf("final best configs re-measured %d times each: chameleon / autotvm %.3fx (geomean);\n"
               "A* is %.1f%% above its own config's re-measured mean (geomean): the luck of the draw\n",
               REMEASURE, exp(s->log_remeasured_ratio / s->remeasured_pairs),
               100 * (exp(s->log_luck / s->remeasured_pairs) - 1));
    printf("trial ratio (geomean): %.2fx  goal >= 4.45x: %s\n", tr, tr >= 4.45 ? "met" : "NOT met");
    printf("wall ratio  (geomean): %.2fx  goal > 1x: %s\n", wr, wr > 1 ? "met" : "NOT met");
    for (int k = 0; k < NSTRAT; k++)
        if (s->overhead_n[k])
            printf("overhead %-9s (mean): %.2f%%%s\n", strategy_names[k],
                   100 * s->overhead_sum[k] / s->overhead_n[k],
                   k == 0 ? (s->overhead_sum[k] / s->overhead_n[k] <= 0.10 ? "  goal <= 10%: met"
                                                                           : "  goal <= 10%: NOT met")
                          : "");
}

/* ---- the sequential-tasks mode (--sequential) ----------------------------------------- */

/* The tasks of each kind in the order a scheduler would tune them; every task
 * after the first of its kind can use the earlier ones' records. */
typedef struct sequence {
    const char *model;
    const char *tasks[SEQ_TASKS];
} sequence;

static const sequence sequences[] = {
    { "models/resnet18.yaml", { "layer1_3x3", "layer2_3x3", "layer3_3x3", "layer4_3x3" } },
    { "models/mobilenet_v2.yaml", { "dw_144_56", "dw_192_28", "dw_384_14", "dw_960_7" } },
};
#define NSEQUENCES ((int)(sizeof sequences / sizeof sequences[0]))

typedef struct variant {
    const char *name;
    int strategy;              /* index into strategy_names */
    bool transfer;
} variant;

static const variant variants[NVARIANTS] = {
    { "chameleon", 0, false }, { "chameleon+transfer", 0, true },
    { "autotvm", 1, false },   { "autotvm+transfer", 1, true },
};


typedef struct seq_run {
    incumbent *inc;
    int ninc, trials;
    size_t cap;
    double wall, overhead;
    long long scored;          /* configs the search had the cost model score */
    int reach[NTARGETS];       /* trials until the incumbent re-measures >= share x R */
    double reach_wall[NTARGETS];
} seq_run;

typedef struct seq_ctx {
    dt_measurer *measurer;
    dt_transfer *store;        /* NULL: no transfer */
    seq_run *run;
    double started, sim_seconds, best;
    int trials;
} seq_ctx;

static int seq_measure(void *ctx, const dt_space *space, const dt_point *points, int n,
                       dt_measure_result *results, dt_error *err)
{
    seq_ctx *c = ctx;
    int rc = dt_measurer_run(c->measurer, space, points, n, results, err);
    if (rc)
        return rc;
    double wall = dt_now_seconds() - c->started;
    for (int i = 0; i < n; i++) {
        c->trials++;
        if (c->store && dt_transfer_add(c->store, space, &points[i], &results[i]) != 0)
            return dt_error_set(err, DT_ENOMEM, "out of memory");
        if (results[i].result != DT_RESULT_OK || results[i].gflops <= c->best)
            continue;
        c->best = results[i].gflops;
        seq_run *r = c->run;
        if ((size_t)r->ninc == r->cap && dt_grow(&r->inc, &r->cap, (size_t)r->ninc + 1, sizeof *r->inc) != 0)
            return dt_error_set(err, DT_ENOMEM, "out of memory");
        r->inc[r->ninc++] = (incumbent){ c->trials, wall + c->sim_seconds * c->trials,
                                         dt_space_index(space, &points[i]), results[i].gflops };
    }
    return n;
}

/* One task of one variant and seed, from the store's records of the earlier
 * tasks; the transfer's own fit is inside the run's clocks. */
static int seq_tune(const options *o, const dt_config *cfg, const dt_backend_i *backend,
                    const char *dir, const dt_space *space, const variant *v, uint64_t seed,
                    dt_transfer *store, seq_run *run, dt_error *err)
{
    dt_tuner_params tc = cfg->tuner;
    snprintf(tc.strategy, sizeof tc.strategy, "%s", strategy_names[v->strategy]);
    tc.batch_size = o->batch;
    tc.transfer = v->transfer;
    if (tc.sampling.k_min > tc.batch_size)
        tc.sampling.k_min = tc.batch_size;
    seq_ctx c = { .store = v->transfer ? store : NULL, .run = run, .sim_seconds = o->sim_seconds };
    dt_tuner *t = NULL;
    int rc = dt_measurer_new(backend, &cfg->measure, dir, REPLAY_SEED, &c.measurer, err);
    if (!rc)
        rc = dt_tuner_new(space, &tc, seed, &t, err);
    c.started = dt_now_seconds();
    int used = 0;
    if (!rc)
        rc = dt_tuner_transfer(t, c.store, &used, err);
    double transfer_seconds = dt_now_seconds() - c.started;
    dt_tuner_budget b = { .trials = o->trials };
    dt_tuner_stats st;
    if (!rc)
        rc = dt_tuner_run(t, &b, seq_measure, &c, &st, err);
    if (!rc) {
        run->trials = st.trials;
        run->wall = transfer_seconds + st.wall_seconds + o->sim_seconds * st.trials;
        run->overhead = run->wall > 0 ? (transfer_seconds + st.overhead_seconds) / run->wall : 0;
        run->scored = st.scored;
    }
    dt_tuner_free(t);
    dt_measurer_free(c.measurer);
    return rc;
}

/* R of one task (remeasure.h) from the final incumbents of nruns runs. */
static int target_r(remeasure_cache *cache, seq_run *runs, int nruns, double *r, dt_error *err)
{
    const incumbent *finals[NVARIANTS * MAX_SEEDS];
    for (int i = 0; i < nruns; i++)
        finals[i] = runs[i].ninc > 0 ? &runs[i].inc[runs[i].ninc - 1] : NULL;
    return remeasure_target(cache, finals, nruns, r, err);
}

/* Each threshold's first incumbent that crosses it and re-measures at it. */
static int reach_r(remeasure_cache *cache, seq_run *run, double r, int budget, dt_error *err)
{
    for (int s = 0; s < NTARGETS; s++) {
        int at;
        int rc = remeasure_reach(cache, run->inc, run->ninc, target_share[s] * r, true, &at, err);
        if (rc)
            return rc;
        run->reach[s] = at < 0 ? budget + 1 : run->inc[at].trial;
        run->reach_wall[s] = at < 0 ? run->wall : run->inc[at].seconds;
    }
    return 0;
}

/* Per-task medians over seeds (later tasks feed the summary). */
typedef struct seq_summary {
    double trials[NVARIANTS][NTARGETS][2 * SEQ_TASKS];   /* per later task: median over seeds */
    double wall[NVARIANTS][NTARGETS][2 * SEQ_TASKS];
    double overhead[NVARIANTS][2 * SEQ_TASKS];
    int n;
} seq_summary;

static void print_task(const char *task, int first, seq_run runs[NVARIANTS][MAX_SEEDS], int seeds,
                       int budget, double r, seq_summary *s)
{
    for (int v = 0; v < NVARIANTS; v++) {
        printf("| %-12s | %-18s |", task, variants[v].name);
        double ovh[MAX_SEEDS];
        for (int k = 0; k < NTARGETS; k++) {
            double tr[MAX_SEEDS], wl[MAX_SEEDS];
            int reached = 0;
            for (int i = 0; i < seeds; i++) {
                tr[i] = runs[v][i].reach[k];
                wl[i] = runs[v][i].reach_wall[k];
                reached += runs[v][i].reach[k] <= budget;
            }
            double mt = remeasure_median_of(tr, seeds), mw = remeasure_median_of(wl, seeds);
            printf(" %s%5.0f [%4.0f, %s%4.0f] %d/%d | %7.2f |", mt > budget ? ">" : " ", mt, tr[0],
                   tr[seeds - 1] > budget ? ">" : " ", tr[seeds - 1], reached, seeds, mw);
            if (!first) {
                s->trials[v][k][s->n] = mt;
                s->wall[v][k][s->n] = mw;
            }
        }
        for (int i = 0; i < seeds; i++)
            ovh[i] = runs[v][i].overhead;
        double mo = remeasure_median_of(ovh, seeds);
        printf(" %5.1f%% | %6.2f |\n", 100 * mo, r);
        if (!first)
            s->overhead[v][s->n] = mo;
    }
    if (!first)
        s->n++;
}

static void print_seq_summary(const seq_summary *s, int budget)
{
    if (s->n == 0)
        return;
    printf("\nmedian over the %d tasks after the first of their kind (each a median over seeds;\n"
           "a task never reached counts as %d trials):\n\n"
           "| variant            | trials to 95%% R | trials to 98%% R | wall s to 95%% R | wall s to 98%% R | overhead |\n"
           "|---|---|---|---|---|---|\n", s->n, budget + 1);
    double med[NVARIANTS][NTARGETS];
    for (int v = 0; v < NVARIANTS; v++) {
        double w[NTARGETS], o[2 * SEQ_TASKS];
        for (int k = 0; k < NTARGETS; k++) {
            double t[2 * SEQ_TASKS], wl[2 * SEQ_TASKS];
            memcpy(t, s->trials[v][k], (size_t)s->n * sizeof *t);
            memcpy(wl, s->wall[v][k], (size_t)s->n * sizeof *wl);
            med[v][k] = remeasure_median_of(t, s->n);
            w[k] = remeasure_median_of(wl, s->n);
        }
        memcpy(o, s->overhead[v], (size_t)s->n * sizeof *o);
        printf("| %-18s | %6.0f | %6.0f | %8.2f | %8.2f | %5.1f%% |\n", variants[v].name, med[v][0],
               med[v][1], w[0], w[1], 100 * remeasure_median_of(o, s->n));
    }
    printf("\nto 95%% of R: autotvm / chameleon+transfer %.2fx (goal >= 3x, on the real CPU); "
           "autotvm / chameleon %.2fx (goal >= 2x on replay); autotvm / autotvm+transfer %.2fx\n",
           med[2][0] / med[1][0], med[2][0] / med[0][0], med[2][0] / med[3][0]);
}

static void free_runs(seq_run runs[SEQ_TASKS][NVARIANTS][MAX_SEEDS])
{
    for (int t = 0; t < SEQ_TASKS; t++)
        for (int v = 0; v < NVARIANTS; v++)
            for (int i = 0; i < MAX_SEEDS; i++)
                free(runs[t][v][i].inc);
}

/* The backend called name, or NULL with the known names in err. */
static const dt_backend_i *find_backend(const char *name, dt_error *err)
{
    char known[128];
    const dt_backend_i *backend = dt_backend_find(name);
    if (!backend) {
        dt_names_join(dt_backend_at, known, sizeof known);
        dt_error_set(err, DT_ENOTFOUND, "backend '%s' is not one of %s", name, known);
    }
    return backend;
}

/* ---- pieces (--resume): one variant and seed of a sequence, kept once it finishes ------ */

#define PIECE_VERSION 2
#define PIECE_HEADER_MAX (DT_PATH_MAX + 512)

/* What a kept piece must match to be reused: the settings, the sequence and
 * this binary (its size and modification time, so a rebuilt bench never
 * reads another build's pieces). */
static int piece_header(const options *o, const sequence *sq, char *buf, size_t len, dt_error *err)
{
    struct stat st;
    if (stat("/proc/self/exe", &st) != 0)
        return dt_error_set(err, DT_EIO, "cannot stat /proc/self/exe: %s", strerror(errno));
    snprintf(buf, len, "tuner_bench piece %d backend=%s trials=%d batch=%d sim=%.17g episodes=%d "
             "k_min=%d per_config=%d binary=%lld-%lld model=%s tasks=%s,%s,%s,%s", PIECE_VERSION, o->backend, o->trials,
             o->batch, o->sim_seconds, o->ppo_episodes, o->k_min, o->per_config,
             (long long)st.st_size, (long long)st.st_mtime, sq->model, sq->tasks[0], sq->tasks[1],
             sq->tasks[2], sq->tasks[3]);
    return 0;
}

static void piece_path(const options *o, int q, int v, int seed, char *buf, size_t len)
{
    snprintf(buf, len, "%s/pieces/%d-%s-%d", o->work_dir, q, variants[v].name, seed);
}

/* Writes the piece's runs (one per task) whole, then renames it into place,
 * so a piece file is either complete or absent. */
static int piece_save(const char *path, const char *header, seq_run *const runs[SEQ_TASKS], dt_error *err)
{
    char tmp[DT_PATH_MAX + 160];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return dt_error_set(err, DT_EIO, "%s: %s", tmp, strerror(errno));
    fprintf(f, "%s\n", header);
    for (int t = 0; t < SEQ_TASKS; t++) {
        const seq_run *r = runs[t];
        fprintf(f, "task %d %d %.17g %.17g %lld %d\n", t, r->trials, r->wall, r->overhead, r->scored,
                r->ninc);
        for (int i = 0; i < r->ninc; i++)
            fprintf(f, "%d %.17g %llu %.17g\n", r->inc[i].trial, r->inc[i].seconds,
                    (unsigned long long)r->inc[i].index, r->inc[i].gflops);
    }
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0)
        return dt_error_set(err, DT_EIO, "%s: %s", ok ? path : tmp, strerror(errno));
    return 0;
}

/* Reads a kept piece into runs: 1 when read, 0 when there is none or it was
 * kept under other settings (it is run again), DT_EPARSE naming file:line
 * when it cannot be read. */
static int piece_load(const char *path, const char *header, seq_run *runs[SEQ_TASKS], dt_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 0 : dt_error_set(err, DT_EIO, "%s: %s", path, strerror(errno));
    char line[PIECE_HEADER_MAX];
    int lineno = 1, rc = 0;
    bool same = fgets(line, sizeof line, f) != NULL;
    if (same) {
        line[strcspn(line, "\n")] = '\0';
        same = strcmp(line, header) == 0;
    }
    if (!same) {
        fprintf(stderr, "tuner_bench: %s was kept under other settings or another build; running it again\n",
                path);
        fclose(f);
        return 0;
    }
    for (int t = 0; !rc && t < SEQ_TASKS; t++) {
        seq_run *r = runs[t];
        int task, n;
        lineno++;
        if (!fgets(line, sizeof line, f) ||
            sscanf(line, "task %d %d %lf %lf %lld %d", &task, &r->trials, &r->wall, &r->overhead,
                   &r->scored, &n) != 6 || task != t || n < 0 || n > r->trials || r->scored < 0) {
            rc = dt_error_set(err, DT_EPARSE,
                              "%s:%d: expected 'task %d TRIALS WALL OVERHEAD SCORED INCUMBENTS'",
                              path, lineno, t);
            break;
        }
        if (n > 0 && dt_resize(&r->inc, (size_t)n, sizeof *r->inc) != 0) {
            rc = dt_error_set(err, DT_ENOMEM, "out of memory");
            break;
        }
        r->cap = (size_t)n;
        for (r->ninc = 0; r->ninc < n; r->ninc++) {
            incumbent *c = &r->inc[r->ninc];
            unsigned long long index;
            lineno++;
            if (!fgets(line, sizeof line, f) ||
                sscanf(line, "%d %lf %llu %lf", &c->trial, &c->seconds, &index, &c->gflops) != 4 ||
                c->trial < 1 || c->trial > r->trials) {
                rc = dt_error_set(err, DT_EPARSE, "%s:%d: expected 'TRIAL WALL INDEX GFLOPS'", path, lineno);
                break;
            }
            c->index = index;
        }
    }
    fclose(f);
    return rc ? rc : 1;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

/* A run cut off before its piece was kept left compiled kernels behind; its
 * next attempt starts from an empty cache like every other run. */
static int clear_dir(const char *dir, dt_error *err)
{
    if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        return dt_error_set(err, DT_EIO, "cannot remove %s: %s", dir, strerror(errno));
    return 0;
}

/* One piece: a variant and seed tunes the sequence's tasks in order, each
 * from one store of the earlier tasks' records; on a real backend each run
 * compiles into its own empty cache. */
static int seq_piece(const options *o, const dt_config *cfg, const dt_backend_i *backend, int q,
                     const dt_space spaces[SEQ_TASKS], int v, int seed, seq_run *const piece[SEQ_TASKS],
                     dt_error *err)
{
    bool replay = backend == &dt_replay_backend;
    char dir[DT_PATH_MAX + 96];
    dt_transfer *store = NULL;
    int rc = dt_transfer_new(&store, err);
    for (int t = 0; !rc && t < SEQ_TASKS; t++) {
        snprintf(dir, sizeof dir, replay ? "%s" : "%s/%d-%s-%d-%d", o->work_dir, q, variants[v].name,
                 seed, t);
        if (!replay)
            rc = clear_dir(dir, err);
        if (!rc)
            rc = seq_tune(o, cfg, backend, dir, &spaces[t], &variants[v],
                          (uint64_t)seed * 1000u + (uint64_t)t, store, piece[t], err);
    }
    dt_transfer_free(store);
    return rc;
}

/* With --variants, the runs there are without R (which needs every
 * variant's finals): per task and listed variant, each seed's trials, wall
 * seconds, non-measurement share and configs scored a trial (the search's
 * work, the same on every machine and load). */
static void print_overheads(const options *o, const sequence *sq,
                            seq_run runs[SEQ_TASKS][NVARIANTS][MAX_SEEDS])
{
    printf("\n%s (--variants %s: R needs every variant, so no trials to R)\n\n"
           "| task         | variant            | seed | trials | wall s | overhead | scored a trial |\n"
           "|---|---|---|---|---|---|---|\n", sq->model, o->variants);
    for (int t = 0; t < SEQ_TASKS; t++)
        for (int v = 0; v < NVARIANTS; v++)
            for (int i = 0; i < o->seeds; i++) {
                const seq_run *r = &runs[t][v][i];
                if (r->trials > 0)
                    printf("| %-12s | %-18s | %4d | %6d | %6.1f | %7.2f%% | %14.0f |\n", sq->tasks[t],
                           variants[v].name, o->first_seed + i, r->trials, r->wall, 100 * r->overhead,
                           (double)r->scored / r->trials);
            }
}

/* Every variant and seed tunes the sequence's tasks in order (one store per
 * variant and seed); then, per task, R and each run's reach are measured. */
static int run_sequence(const options *o, const dt_config *cfg, int q, double started,
                        seq_run runs[SEQ_TASKS][NVARIANTS][MAX_SEEDS], seq_summary *s, int *left,
                        int *skipped, dt_error *err)
{
    const sequence *sq = &sequences[q];
    const dt_backend_i *backend = find_backend(o->backend, err);
    bool replay = backend == &dt_replay_backend;
    if (!backend)
        return DT_ENOTFOUND;
    dt_model *model = NULL;
    dt_space spaces[SEQ_TASKS];
    int nspaces = 0, rc = dt_model_load(sq->model, &model, err);
    /* replay: every vector width, as in tests; a real backend: this machine's */
    dt_space_opts opts = { .cpu_max_vec = replay ? 16 : 0 };
    char dir[DT_PATH_MAX + 96];
    for (; !rc && nspaces < SEQ_TASKS; nspaces++) {
        int k = dt_model_find_task(model, sq->tasks[nspaces]);
        if (k < 0) {
            rc = dt_error_set(err, DT_ENOTFOUND, "%s has no task '%s'", sq->model, sq->tasks[nspaces]);
            break;
        }
        rc = dt_target_space_init_opts(&spaces[nspaces], &model->tasks[k], DT_TARGET_CPU, &opts, err);
        if (rc)
            break;
    }
    char header[PIECE_HEADER_MAX], path[DT_PATH_MAX + 128];
    if (!rc && o->resume) {
        snprintf(dir, sizeof dir, "%s/pieces", o->work_dir);
        rc = piece_header(o, sq, header, sizeof header, err);
        if (!rc)
            rc = dt_mkdir_p(dir, err);
    }
    for (int v = 0; !rc && v < NVARIANTS; v++)
        for (int i = 0; !rc && i < o->seeds; i++) {
            int seed = o->first_seed + i, kept = 0;
            seq_run *piece[SEQ_TASKS];
            for (int t = 0; t < SEQ_TASKS; t++)
                piece[t] = &runs[t][v][i];
            if (o->resume) {
                piece_path(o, q, v, seed, path, sizeof path);
                kept = piece_load(path, header, piece, err);
                if (kept < 0)
                    rc = kept;
            }
            if (rc || kept)
                continue;
            if (!listed(o->variants, variants[v].name)) {
                (*skipped)++;
                continue;
            }
            if (o->stop_after > 0 && dt_now_seconds() - started > o->stop_after) {
                (*left)++;
                continue;
            }
            rc = seq_piece(o, cfg, backend, q, spaces, v, seed, piece, err);
            if (!rc && o->resume)
                rc = piece_save(path, header, piece, err);
        }
    if (!rc && *left == 0 && *skipped > 0)
        print_overheads(o, sq, runs);
    if (rc || *left > 0 || *skipped > 0)
        goto out;
    printf("\n%s\n\n| task         | variant            | trials to 95%% R | wall s | "
           "trials to 98%% R | wall s | overhead | R GFLOPS |\n|---|---|---|---|---|---|---|---|\n", sq->model);
    for (int t = 0; !rc && t < SEQ_TASKS; t++) {
        remeasure_cache cache = { .space = &spaces[t] };
        double r = 0;
        snprintf(dir, sizeof dir, replay ? "%s" : "%s/remeasure-%d-%d", o->work_dir, q, t);
        rc = dt_measurer_new(backend, &cfg->measure, dir, REPLAY_SEED, &cache.m, err);
        if (!rc)
            rc = target_r(&cache, &runs[t][0][0], NVARIANTS * MAX_SEEDS, &r, err);
        for (int v = 0; !rc && v < NVARIANTS; v++)
            for (int i = 0; !rc && i < o->seeds; i++)
                rc = reach_r(&cache, &runs[t][v][i], r, o->trials, err);
        if (!rc)
            print_task(sq->tasks[t], t == 0, runs[t], o->seeds, o->trials, r, s);
        dt_measurer_free(cache.m);
        remeasure_cache_free(&cache);
    }
out:
    for (int t = 0; t < nspaces; t++)
        dt_space_free(&spaces[t]);
    dt_model_free(model);
    return rc;
}

/* *left: the pieces --stop-after left to run (the tables are printed only
 * when none is left). */
static int run_sequential(const options *o, int *left, dt_error *err)
{
    double started = dt_now_seconds();
    dt_config cfg;
    bench_config(o, &cfg);
    printf("tuner_bench --sequential: backend %s, %d trials per task, batch %d, seeds %d-%d\n"
           "R = median of %d re-measurements of the best config any run found (highest median of\n"
           "%d); a run reaches a share of R at the first incumbent whose own measurement crosses it\n"
           "and whose median of %d re-measurements (outside the clocks) is at least it. Trials and\n"
           "wall: median [min, max] over seeds, then reached/seeds. Overhead: non-measurement\n"
           "share of the run's wall time (prior fit included)%s.\n",
           o->backend, o->trials, o->batch, o->first_seed, o->first_seed + o->seeds - 1, REMEASURE_R,
           REMEASURE_INCUMBENT, REMEASURE_INCUMBENT,
           o->sim_seconds > 0 ? ", with simulated measurement seconds" : "");
    print_settings(o);
    char list[sizeof o->variants];
    snprintf(list, sizeof list, "%s", o->variants);
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        int v = 0;
        while (v < NVARIANTS && strcmp(variants[v].name, name) != 0)
            v++;
        if (v == NVARIANTS)
            return dt_error_set(err, DT_EINVAL, "--variants: no variant '%s' (%s)", name, ALL_VARIANTS);
    }
    seq_run (*runs)[NVARIANTS][MAX_SEEDS] = calloc(SEQ_TASKS, sizeof *runs);
    seq_summary *s = calloc(1, sizeof *s);
    int rc = runs && s ? 0 : dt_error_set(err, DT_ENOMEM, "out of memory");
    *left = 0;
    int skipped = 0;
    for (int q = 0; !rc && q < NSEQUENCES; q++) {
        memset(runs, 0, SEQ_TASKS * sizeof *runs);
        rc = run_sequence(o, &cfg, q, started, runs, s, left, &skipped, err);
        free_runs(runs);
        fflush(stdout);
    }
    if (!rc && *left == 0 && skipped == 0)
        print_seq_summary(s, o->trials);
    free(runs);
    free(s);
    return rc;
}

/* ---- driver ------------------------------------------------------------------------------ */

static bool strategy_wanted(const options *o, int k)
{
    return listed(o->strategies, strategy_names[k]);
}

/* Each strategy traces into its own buffers, so A* can be looked up afterwards. */
static int bench_task(const options *o, const dt_config *cfg, const dt_task *task,
                      trace traces[NSTRAT], summary *s, dt_error *err)
{
    /* The replay surface is no machine's: its spaces offer every vector width
     * (as in tests), so replay figures do not depend on the machine. */
    dt_space_opts opts = { .cpu_max_vec = strcmp(o->backend, "replay") == 0 ? 16 : 0 };
    dt_space space;
    int rc = dt_target_space_init_opts(&space, task, DT_TARGET_CPU, &opts, err);
    if (rc)
        return rc;
    dt_point *order = NULL;
    int norder = 0;
    bool oracle = traces[1].replay && strategy_wanted(o, 1);
    if (oracle && space.size > ORACLE_MAX_POINTS) {
        printf("(%s: %llu points, more than the oracle ranks; no oracle)\n", task->name,
               (unsigned long long)space.size);
    } else if (oracle) {
        norder = oracle_order(&space, o->trials, &order);
        if (norder < 0)
            rc = dt_error_set(err, DT_ENOMEM, "out of memory ranking %s", task->name);
    }
    for (int seed = o->first_seed; !rc && seed < o->first_seed + o->seeds; seed++) {
        outcome res[NSTRAT];
        memset(res, 0, sizeof res);
        for (int k = 0; !rc && k < NSTRAT; k++)
            if (strategy_wanted(o, k))
                rc = tune_once(o, cfg, &space, k, (uint64_t)seed, &traces[k], &res[k], err);
        if (rc)
            break;
        double target = res[1].ran ? res[1].final_best : 0;   /* A*: autotvm's final best */
        double target_true = res[1].ran ? res[1].final_true : 0;
        for (int k = 0; k < NSTRAT; k++)
            if (res[k].ran) {
                res[k].reach_trials = reach(&traces[k], traces[k].best_at, target, &res[k].reach_wall);
                for (int i = 0; i < NNEAR; i++)
                    res[k].reach_near[i] = reach(&traces[k], traces[k].best_at,
                                                 near_share[i] * target, NULL);
                res[k].reach_true = reach(&traces[k], traces[k].true_at, target_true, NULL);
            }
        report_seed(task->name, (uint64_t)seed, res, s);
        if (traces[0].replay)
            append_truth(task->name, (uint64_t)seed, res, s);
        if (order && res[1].ran) {
            /* the oracle traces into chameleon's buffers, which are read above */
            int r = oracle_reach(o, cfg, &space, order, norder, target, &traces[0], err);
            if (r < 0) {
                rc = -r;
                break;
            }
            s->log_oracle_ratio += log((double)res[1].reach_trials / r);
            s->oracle_pairs++;
            s->oracle_reached += r <= o->trials;
        }
    }
    free(order);
    dt_space_free(&space);
    return rc;
}

static int run_bench(const options *o, dt_error *err)
{
    const dt_backend_i *backend = find_backend(o->backend, err);
    if (!backend)
        return DT_ENOTFOUND;
    dt_config cfg;
    bench_config(o, &cfg);
    dt_model *model = NULL;
    int rc = dt_model_load(o->model, &model, err);
    if (rc)
        return rc;
    trace traces[NSTRAT];
    memset(traces, 0, sizeof traces);
    for (int k = 0; k < NSTRAT; k++) {
        traces[k] = (trace){ .backend = backend, .cap = o->trials,
                             .replay = backend == &dt_replay_backend };
        traces[k].best_at = calloc((size_t)o->trials, sizeof *traces[k].best_at);
        traces[k].wall_at = calloc((size_t)o->trials, sizeof *traces[k].wall_at);
        traces[k].true_at = calloc((size_t)o->trials, sizeof *traces[k].true_at);
        if (!rc && (!traces[k].best_at || !traces[k].wall_at || !traces[k].true_at))
            rc = dt_error_set(err, DT_ENOMEM, "out of memory");
    }
    summary s;
    memset(&s, 0, sizeof s);
    if (!rc)
        print_header(o);
    char list[512];
    snprintf(list, sizeof list, "%s", o->tasks);
    for (char *save = NULL, *name = strtok_r(list, ",", &save); !rc && name;
         name = strtok_r(NULL, ",", &save)) {
        int k = dt_model_find_task(model, name);
        if (k < 0)
            rc = dt_error_set(err, DT_ENOTFOUND, "%s has no task '%s'", o->model, name);
        else
            rc = bench_task(o, &cfg, &model->tasks[k], traces, &s, err);
    }
    if (!rc)
        print_summary(&s);
    for (int k = 0; k < NSTRAT; k++) {
        free(traces[k].best_at);
        free(traces[k].wall_at);
        free(traces[k].true_at);
    }
    dt_model_free(model);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    if (parse_options(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    dt_error err;
    dt_error_clear(&err);
    int left = 0;
    int rc = o.sequential ? run_sequential(&o, &left, &err) : run_bench(&o, &err);
    if (rc) {
        fprintf(stderr, "tuner_bench: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    if (left > 0) {
        fprintf(stderr, "tuner_bench: stopped after %g s with %d of %d pieces still to run (the finished "
                        "ones are kept in %s/pieces); the same command goes on\n",
                o.stop_after, left, NSEQUENCES * NVARIANTS * o.seeds, o.work_dir);
        return 3;
    }
    return 0;
}
