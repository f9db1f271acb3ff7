/* mpi_bench.c — how a tuning run scales with the ranks of an MPI job, on the
 * replay backend in simulated time.
 *
 * What runs is the daemon of `mpirun -np N dtune tune` (dt_daemon_run_remote
 * with N − 1 workers: the same loop, daemon_loop.c, that drives the MPI
 * workers, slot threads and all), on one process. The remote it is given
 * here is a discrete-event simulation of the workers: a request is measured
 * at once by a replay measurer of this process, and its answer is due at the
 * simulated second when a worker measuring its configs one after another
 * would be done; receive hands back the answer due first (the lowest worker
 * on a tie) and moves the simulated clock, which is the run's clock, to it.
 * Because the daemon acts only when every slot thread waits for an answer,
 * a run is deterministic for a seed. N = 1 is one process measuring itself
 * (one slot in flight, every batch to one simulated worker); N = 2 runs the
 * same loop with the worker on another rank, which in simulated time costs
 * the same, so its speed-up is 1 by construction.
 *
 * Simulated: each config's measurement (compile and timing) costs
 * config_seconds · (0.5 + u) simulated seconds, u in [0, 1) a hash of the
 * task and config (so a config costs the same on any worker, a mean of
 * config_seconds). Not simulated (zero simulated time): rank 0's work
 * (scheduler, beliefs, tuners' models, logging) and the messages; the
 * rank-0 figures are the tuner's and scheduler's real overheads, reported
 * by `dtune tune` at the end of a real run. The tuners' slots end by trials
 * (budget.slot_trials), which simulated time cannot stretch.
 *
 * Per model and seed, each N measures about as many configs: its budget is
 * budget · W / (N − 1) simulated seconds (N = 1: one worker), W the most
 * workers of --ranks, so the one-worker runs have time to come close to
 * where many workers get. L* is the lowest model latency any N reached on
 * that model and seed (printed; it is not the trace oracle). T(N) is the simulated time at
 * which N's curve (the model latency after each measurement, from its log)
 * first reaches 1.05 · L* (inf: not within its budget). Per seed the
 * speed-up T(1) / T(N) is printed where both are finite; the summary's
 * speed-up is median T(1) / median T(N) over seeds (a seed whose N = 1 run
 * never reached the level counts as the slowest), efficiency = speed-up /
 * (N − 1) for N >= 2, and the goal speed-up >= 0.8 · (N − 1) is judged for
 * N <= 5.
 *
 *   bin/mpi_bench [--seeds K] [--budget S] [--config-seconds C]
 *                 [--slot-trials T] [--strategy S] [--ranks 1,2,3,4,5,8]
 *                 [--run-dir DIR] MODEL.yaml...
 */
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/daemon.h"
#include "dtune/backend.h"
#include "dtune/config.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/space.h"
#include "dtune/util.h"
#include "rank_stats.h"

#define MAX_RANKS 16
/* The job sizes run by default: the goal's N <= 5 and the curve up to 8. */
#define DEFAULT_RANKS "1,2,3,4,5,8"
#define MAX_SEEDS 16
#define TARGET_FACTOR 1.05

/* ---- the simulated workers ------------------------------------------------- */

typedef struct pending {
    bool out;                  /* a request is out */
    double due;                /* simulated second its answer is due */
    int measured;
} pending;

typedef struct sim {
    dt_measurer *measurer;
    double config_seconds;
    pthread_mutex_t lock;      /* the clock is read by the daemon's ticker */
    double clock;
    pending workers[MAX_RANKS];
} sim;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Simulated seconds one config of task takes to measure. */
static double config_cost(const sim *s, int task, uint64_t config)
{
    double u = (double)(mix(mix((uint64_t)task) ^ config) >> 11) * 0x1.0p-53;
    return s->config_seconds * (0.5 + u);
}

static double sim_now(void *ctx)
{
    sim *s = ctx;
    pthread_mutex_lock(&s->lock);
    double t = s->clock;
    pthread_mutex_unlock(&s->lock);
    return t;
}

static int sim_send(void *ctx, int w, int task, const dt_space *space, const dt_point *points, int n,
                    double deadline, dt_measure_result *results, dt_error *err)
{
    sim *s = ctx;
    double t = sim_now(s);
    int started = 0;
    for (; started < n; started++) {
        if (deadline > 0 && t >= deadline)
            break;          /* none started at or past the deadline */
        t += config_cost(s, task, dt_space_index(space, &points[started]));
    }
    int got = started ? dt_measurer_run(s->measurer, space, points, started, results, err) : 0;
    if (got < 0)
        return got;
    s->workers[w] = (pending){ true, t, started };
    return 0;
}

static int sim_receive(void *ctx, int *w, int *measured, dt_error *err)
{
    sim *s = ctx;
    int first = -1;
    for (int i = 0; i < MAX_RANKS; i++)
        if (s->workers[i].out && (first < 0 || s->workers[i].due < s->workers[first].due))
            first = i;
    if (first < 0)
        return dt_error_set(err, DT_EINVAL, "no simulated worker has a request out");
    pthread_mutex_lock(&s->lock);
    s->clock = s->workers[first].due;
    pthread_mutex_unlock(&s->lock);
    s->workers[first].out = false;
    *w = first;
    *measured = s->workers[first].measured;
    return 0;
}

/* ---- one run ------------------------------------------------------------------ */

typedef struct curve {
    double *time, *latency;    /* after each measurement */
    int n;
} curve;

typedef struct options {
    int seeds;
    double budget;
    double config_seconds;
    int slot_trials;
    const char *strategy;
    int ranks[MAX_RANKS];
    int nranks;
    const char *run_dir;       /* the runs' logs and reports (tmpfs: the log fsyncs) */
} options;

/* The model latency after each measure record of dir's log (tasks without
 * a valid measurement yet count at their first one's). */
static int read_curve(const char *dir, const dt_model *model, curve *c)
{
    char path[DT_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int nt = model->ntasks, cap = 1024;
    double best[nt];
    for (int k = 0; k < nt; k++)
        best[k] = 0;
    c->n = 0;
    c->time = malloc(cap * sizeof *c->time);
    c->latency = malloc(cap * sizeof *c->latency);
    char line[8192];
    while (c->time && c->latency && fgets(line, sizeof line, f)) {
        json_error_t jerr;
        json_t *rec = json_loads(line, 0, &jerr);
        if (!rec)
            continue;
        const char *type = json_string_value(json_object_get(rec, "type"));
        int k = (int)json_integer_value(json_object_get(rec, "task_index"));
        double g = json_number_value(json_object_get(rec, "gflops"));
        const char *result = json_string_value(json_object_get(rec, "result"));
        bool ok = result && strcmp(result, "ok") == 0;
        if (type && strcmp(type, "measure") == 0 && k >= 0 && k < nt && ok && g > best[k])
            best[k] = g;
        double total = 0;
        for (int i = 0; i < nt && total < INFINITY; i++)
            total += best[i] > 0 ? model->tasks[i].count * model->tasks[i].flops / (best[i] * 1e9) * 1e3
                                 : INFINITY;
        if (type && strcmp(type, "measure") == 0 && isfinite(total)) {
            if (c->n == cap) {
                cap *= 2;
                c->time = realloc(c->time, cap * sizeof *c->time);
                c->latency = realloc(c->latency, cap * sizeof *c->latency);
                if (!c->time || !c->latency)
                    break;
            }
            c->time[c->n] = json_number_value(json_object_get(rec, "time"));
            c->latency[c->n++] = total;
        }
        json_decref(rec);
    }
    fclose(f);
    return c->time && c->latency ? 0 : -1;
}

/* Runs the daemon on model with `ranks` simulated ranks for budget
 * simulated seconds, its reports and log under o->run_dir (its status lines
 * go nowhere); c: its curve. */
static int run_one(const options *o, const char *model_path, const dt_model *model, int ranks,
                   int seed, double budget, curve *c)
{
    char dir[DT_PATH_MAX], value[64];
    snprintf(dir, sizeof dir, "%s/%s-n%d-s%d", o->run_dir, model->name, ranks, seed);
    char cmd[DT_PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return -1;
    dt_config cfg;
    dt_config_defaults(&cfg);
    dt_error err;
    dt_error_clear(&err);
    int rc = dt_config_set(&cfg, "model", model_path, &err);
    snprintf(value, sizeof value, "%d", seed);
    const char *keys[][2] = { { "backend", "replay" }, { "output.dir", dir }, { "server.listen", "off" },
                              { "db.path", "off" }, { "seed", value }, { "tuner.strategy", o->strategy } };
    for (size_t i = 0; rc == 0 && i < sizeof keys / sizeof keys[0]; i++)
        rc = dt_config_set(&cfg, keys[i][0], keys[i][1], &err);
    cfg.budget.total_seconds = budget;
    cfg.budget.slot_trials = o->slot_trials;
    cfg.budget.slot_seconds = 0;
    if (rc == 0)
        rc = dt_config_validate(&cfg, &err);
    sim *s = calloc(1, sizeof *s);
    if (rc == 0 && !s)
        rc = dt_error_set(&err, DT_ENOMEM, "out of memory");
    if (rc == 0) {
        pthread_mutex_init(&s->lock, NULL);
        s->config_seconds = o->config_seconds;
        rc = dt_measurer_new(dt_backend_choose(cfg.target, "replay"), &cfg.measure, dir, cfg.seed,
                             &s->measurer, &err);
    }
    dt_daemon_result res;
    dt_daemon_remote remote = { .workers = ranks > 1 ? ranks - 1 : 1, .max_configs = 4096,
                                .send = sim_send, .receive = sim_receive, .now = sim_now, .ctx = s };
    if (rc == 0) {
        fflush(stdout);
        int saved = dup(STDOUT_FILENO), quiet = open("/dev/null", O_WRONLY);
        if (saved >= 0 && quiet >= 0)
            dup2(quiet, STDOUT_FILENO);
        rc = dt_daemon_run_remote(&cfg, &remote, &res, &err);
        fflush(stdout);
        if (saved >= 0 && quiet >= 0)
            dup2(saved, STDOUT_FILENO);
        if (saved >= 0)
            close(saved);
        if (quiet >= 0)
            close(quiet);
    }
    if (rc == 0 && read_curve(dir, model, c) != 0)
        rc = dt_error_set(&err, DT_EIO, "%s: cannot read the run's log", dir);
    if (rc)
        fprintf(stderr, "mpi_bench: %s N=%d seed %d: %s\n", model->name, ranks, seed, err.msg);
    if (s) {
        dt_measurer_free(s->measurer);
        pthread_mutex_destroy(&s->lock);
        free(s);
    }
    return rc;
}

/* ---- figures ------------------------------------------------------------------- */

static double time_to(const curve *c, double level)
{
    for (int i = 0; i < c->n; i++)
        if (c->latency[i] <= level)
            return c->time[i];
    return INFINITY;
}

static int bench_model(const options *o, const char *path)
{
    dt_model *model = NULL;
    dt_error err;
    if (dt_model_load(path, &model, &err) != 0) {
        fprintf(stderr, "mpi_bench: %s\n", err.msg);
        return 2;
    }
    double t_reach[MAX_RANKS][MAX_SEEDS];
    printf("\n%s (%d tasks), budget %.0f simulated s x most workers / workers, %g s per config "
           "on average, slots of %d trials, strategy %s\n", model->name, model->ntasks, o->budget,
           o->config_seconds, o->slot_trials, o->strategy);
    printf("%6s %5s %12s %12s %10s\n", "seed", "N", "L* (ms)", "T(N) s", "speed-up");
    int rc = 0;
    for (int s = 0; s < o->seeds && rc == 0; s++) {
        curve c[MAX_RANKS];
        int most = 1;
        for (int i = 0; i < o->nranks; i++)
            most = o->ranks[i] - 1 > most ? o->ranks[i] - 1 : most;
        memset(c, 0, sizeof c);
        double lstar = INFINITY;
        for (int i = 0; i < o->nranks && rc == 0; i++) {
            int workers = o->ranks[i] > 1 ? o->ranks[i] - 1 : 1;
            rc = run_one(o, path, model, o->ranks[i], s + 1, o->budget * most / workers, &c[i]);
            if (rc == 0 && c[i].n > 0 && c[i].latency[c[i].n - 1] < lstar)
                lstar = c[i].latency[c[i].n - 1];
        }
        for (int i = 0; i < o->nranks && rc == 0; i++) {
            t_reach[i][s] = time_to(&c[i], TARGET_FACTOR * lstar);
            char speedup[32] = "-";
            if (isfinite(t_reach[0][s]) && isfinite(t_reach[i][s]))
                snprintf(speedup, sizeof speedup, "%.2f", t_reach[0][s] / t_reach[i][s]);
            printf("%6d %5d %12.4f %12.0f %10s\n", s + 1, o->ranks[i], lstar, t_reach[i][s],
                   speedup);
        }
        for (int i = 0; i < o->nranks; i++) {
            free(c[i].time);
            free(c[i].latency);
        }
    }
    if (rc == 0) {
        printf("median over %d seeds (T to %.2f L*; speed-up: median T(%d) / median T(N)):\n",
               o->seeds, TARGET_FACTOR, o->ranks[0]);
        printf("%5s %8s %12s %10s %11s %s\n", "N", "workers", "T(N) s", "speed-up", "efficiency",
               "goal (N <= 5: speed-up >= 0.8 (N - 1))");
        double t1 = median_sorting(t_reach[0], o->seeds);
        for (int i = 0; i < o->nranks; i++) {
            int n = o->ranks[i];
            double t = median_sorting(t_reach[i], o->seeds), sp = t1 / t;
            char speedup[32] = "-", eff[32] = "-", goal[64] = "-";
            if (isfinite(sp))      /* inf / inf: neither reached the level */
                snprintf(speedup, sizeof speedup, "%.2f", sp);
            if (n >= 2 && isfinite(sp))
                snprintf(eff, sizeof eff, "%.2f", sp / (n - 1));
            if (n >= 2 && n <= 5)
                snprintf(goal, sizeof goal, "%s (>= %.1f)", sp >= 0.8 * (n - 1) ? "met" : "NOT met",
                         0.8 * (n - 1));
            printf("%5d %8d %12.0f %10s %11s %s\n", n, n > 1 ? n - 1 : 1, t, speedup, eff, goal);
        }
    }
    dt_model_free(model);
    return rc ? 1 : 0;
}

static int parse_ranks(const char *text, options *o)
{
    o->nranks = 0;
    for (const char *p = text; *p && o->nranks < MAX_RANKS;) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p || n < 1 || n > MAX_RANKS)
            return -1;
        o->ranks[o->nranks++] = (int)n;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return o->nranks > 0 && o->ranks[0] == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
    options o = { .seeds = 3, .budget = 1000, .config_seconds = 1.0, .slot_trials = 32,
                  .strategy = "random", .run_dir = "/dev/shm/mpi_bench" };
    parse_ranks(DEFAULT_RANKS, &o);
    int first = 1;
    for (; first < argc && strncmp(argv[first], "--", 2) == 0; first++) {
        const char *a = argv[first], *v = first + 1 < argc ? argv[first + 1] : NULL;
        bool bad = !v;
        if (!bad && strcmp(a, "--seeds") == 0)
            bad = (o.seeds = atoi(v)) < 1 || o.seeds > MAX_SEEDS;
        else if (!bad && strcmp(a, "--budget") == 0)
            bad = !((o.budget = atof(v)) >= 1);
        else if (!bad && strcmp(a, "--config-seconds") == 0)
            bad = !((o.config_seconds = atof(v)) > 0);
        else if (!bad && strcmp(a, "--slot-trials") == 0)
            bad = (o.slot_trials = atoi(v)) < 1;
        else if (!bad && strcmp(a, "--strategy") == 0)
            o.strategy = v;
        else if (!bad && strcmp(a, "--ranks") == 0)
            bad = parse_ranks(v, &o) != 0;
        else if (!bad && strcmp(a, "--run-dir") == 0)
            o.run_dir = v;
        else
            bad = true;
        if (bad) {
            fprintf(stderr, "mpi_bench: bad option %s %s (see the header of bench/mpi_bench.c; "
                    "--ranks starts with 1)\n", a, v ? v : "");
            return 2;
        }
        first++;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: mpi_bench [--seeds K] [--budget S] [--config-seconds C] "
                "[--slot-trials T] [--strategy S] [--ranks " DEFAULT_RANKS "] [--run-dir DIR] "
                "MODEL.yaml...\n");
        return 2;
    }
    int rc = 0;
    for (int i = first; i < argc && rc == 0; i++)
        rc = bench_model(&o, argv[i]);
    return rc;
}
