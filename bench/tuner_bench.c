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
 *   bin/tuner_bench [--backend replay|cpu] [--model models/resnet18.yaml]
 *                   [--tasks a,b,c,d] [--trials N] [--seeds N] [--first-seed N] [--batch N]
 *                   [--strategies chameleon,autotvm,random]
 *                   [--sim-measure-seconds S] [--work-dir DIR]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtune/backend.h"
#include "dtune/config.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/space.h"
#include "dtune/tuner.h"
#include "dtune/util.h"

#define MAX_TASKS 8
#define MAX_SEEDS 16
#define NSTRAT 3
#define REPLAY_SEED 1          /* the measurer's seed: fixes the replay surface */
#define REMEASURE 10           /* re-measurements of each run's final best config */
#define ORACLE_MAX_POINTS (1u << 24)   /* the oracle ranks every point of a space this size */
#define NNEAR 3                /* the summary's shares of A* */
static const double near_share[NNEAR] = { 0.95, 0.98, 0.99 };

typedef struct options {
    char backend[16];
    char model[DT_PATH_MAX];
    char tasks[512];
    char strategies[128];
    char work_dir[DT_PATH_MAX];
    int trials, seeds, first_seed, batch;
    double sim_seconds;
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
               "                   [--sim-measure-seconds S] [--work-dir DIR]\n");
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->backend, sizeof o->backend, "replay");
    snprintf(o->model, sizeof o->model, "models/resnet18.yaml");
    snprintf(o->tasks, sizeof o->tasks, "layer1_3x3,layer2_3x3,layer3_3x3,layer4_3x3");
    snprintf(o->strategies, sizeof o->strategies, "chameleon,autotvm,random");
    snprintf(o->work_dir, sizeof o->work_dir, "/tmp/dtune-tuner-bench");
    o->trials = -1;
    o->seeds = 3;
    o->first_seed = 1;
    o->batch = 64;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
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
        else return -1;
    }
    if (o->trials < 0)
        o->trials = strcmp(o->backend, "replay") == 0 ? 1000 : 256;
    if (o->trials < 1 || o->seeds < 1 || o->seeds > MAX_SEEDS || o->first_seed < 1 || o->batch < 1 ||
        o->sim_seconds < 0)
        return -1;
    return 0;
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
                tr->best_true = dt_replay_true_gflops(space, &points[i], REPLAY_SEED);
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
    dt_tuner_config tc = cfg->tuner;
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
            all[n++] = (truth_rank){ dt_replay_true_gflops(space, &p, REPLAY_SEED), i };
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

static void print_header(const options *o)
{
    printf("tuner_bench: backend %s, %d trials per run, batch %d, %d seed(s) from %d\n",
           o->backend, o->trials, o->batch, o->seeds, o->first_seed);
    if (o->sim_seconds > 0)
        printf("wall clocks include %.3f s of simulated measurement per trial\n", o->sim_seconds);
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

/* ---- driver ------------------------------------------------------------------------------ */

static bool strategy_wanted(const options *o, int k)
{
    char list[160];
    snprintf(list, sizeof list, ",%s,", o->strategies);
    char needle[40];
    snprintf(needle, sizeof needle, ",%s,", strategy_names[k]);
    return strstr(list, needle) != NULL;
}

/* Each strategy traces into its own buffers, so A* can be looked up afterwards. */
static int bench_task(const options *o, const dt_config *cfg, const dt_task *task,
                      trace traces[NSTRAT], summary *s, dt_error *err)
{
    /* The replay surface is no machine's: its spaces offer every vector width
     * (as in tests), so replay figures do not depend on the machine. */
    dt_space_opts opts = { .cpu_max_vec = strcmp(o->backend, "replay") == 0 ? 16 : 0 };
    dt_space space;
    int rc = dt_space_init_opts(&space, task, DT_TARGET_CPU, &opts, err);
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
    const dt_backend_i *backend = dt_backend_find(o->backend);
    if (!backend)
        return dt_error_set(err, DT_ENOTFOUND, "backend '%s' is not one of %s", o->backend,
                            dt_backend_names());
    dt_config cfg;
    dt_config_defaults(&cfg);
    dt_model *model = NULL;
    int rc = dt_model_load(o->model, &model, err);
    if (rc)
        return rc;
    trace traces[NSTRAT];
    memset(traces, 0, sizeof traces);
    for (int k = 0; k < NSTRAT; k++) {
        traces[k] = (trace){ .backend = backend, .cap = o->trials,
                             .replay = backend == &dt_backend_replay };
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
    int rc = run_bench(&o, &err);
    if (rc) {
        fprintf(stderr, "tuner_bench: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    return 0;
}
