/* belief_bench.c — how long one belief prediction takes, and whether it
 * agrees with emcee on the same model.
 *
 * One task with a 500-point history (best-so-far of a log-power curve with
 * 3 % measurement noise), horizon 564 (a 64-trial slot). dtune: median wall
 * time of dt_belief_predict (segment, least squares, 10 walkers × 500 steps,
 * summary) over 31 runs, and of the least-squares fit alone. emcee: the same
 * segment, prior, start ball, walkers and steps, written to a temp file and
 * run by bench/belief_emcee.py (python3-emcee; `sh scripts/setup.sh --bench`
 * installs it); only its sampler is timed. Ten walkers on four parameters
 * mix slowly, so predictive means are compared as averages over several
 * seeds on each side. Goals: ≤ 10 ms a task, ≥ 50× faster than emcee,
 * predictive mean within 2 % of emcee's.
 *
 *   bin/belief_bench [--runs K]     (K seeds per side, default 8)
 * Environment: DT_PYTHON (interpreter; default /usr/bin/python3 when it
 * exists, else python3), DT_BELIEF_EMCEE (script; default
 * bench/belief_emcee.py).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "dtune/belief.h"
#include "dtune/util.h"

#define HISTORY 500
#define HORIZON 564.0
#define TIMING_RUNS 31
#define MAX_RUNS 64
#define POOL_TASKS 16
#define POOL_THREADS 2

/* One history to predict: n points, horizon, and how it was made. */
typedef struct scenario {
    const char *name;
    int n;
    double horizon;
    double noise;
    unsigned long seed;
    double y[HISTORY];
} scenario;

typedef struct side {
    int runs;
    double ms[MAX_RUNS];      /* per timed run */
    double mean[MAX_RUNS], std[MAX_RUNS], acceptance[MAX_RUNS];
} side;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double sorted[MAX_RUNS > TIMING_RUNS ? MAX_RUNS : TIMING_RUNS];
    memcpy(sorted, v, (size_t)n * sizeof *v);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_doubles);
    return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

static void mean_sd(const double *v, int n, double *mean, double *sd)
{
    double m = 0, m2 = 0;
    for (int i = 0; i < n; i++)
        m += v[i] / n;
    for (int i = 0; i < n; i++)
        m2 += (v[i] - m) * (v[i] - m);
    *mean = m;
    *sd = n > 1 ? sqrt(m2 / (n - 1)) : 0;
}

/* Best-so-far of 0.42 / (1 + (x / e^1.3)^−0.8) × (1 + noise N(0, 1)). */
static void make_history(scenario *sc)
{
    const double truth[3] = { 0.42, 1.3, -0.8 };
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, sc->seed);
    double best = 0;
    for (int i = 0; i < sc->n; i++) {
        double m = dt_curve_eval(DT_CURVE_LOG_POWER, truth, i + 1.0) *
                   (1 + sc->noise * gsl_ran_gaussian(rng, 1.0));
        best = fmax(best, m);
        sc->y[i] = best;
    }
    gsl_rng_free(rng);
}

static int predict(dt_belief *b, const scenario *sc, uint64_t stream,
                   dt_belief_prediction *out)
{
    dt_belief_history h = { .y = sc->y, .n = sc->n, .horizon = sc->horizon,
                            .stream = stream };
    dt_error err;
    int rc = dt_belief_predict(b, &h, out, &err);
    if (rc || !out->ok) {
        fprintf(stderr, "belief_bench: prediction failed: %s\n", out->reason);
        return -1;
    }
    return 0;
}

/* Median ms of a full prediction and of the least-squares fit alone. */
static int time_dtune(dt_belief *b, const scenario *sc, int segment_start,
                      double *predict_ms, double *fit_ms)
{
    double times[TIMING_RUNS];
    dt_belief_prediction out;
    const double *y = sc->y;
    for (int r = 0; r < TIMING_RUNS + 2; r++) {   /* two warm-up runs */
        double t0 = dt_now_seconds();
        if (predict(b, sc, 0, &out))
            return -1;
        if (r >= 2)
            times[r - 2] = (dt_now_seconds() - t0) * 1e3;
    }
    *predict_ms = median(times, TIMING_RUNS);
    int m = HISTORY - segment_start;
    double x[HISTORY], log_x[HISTORY];
    for (int i = 0; i < m; i++)
        x[i] = i + 1, log_x[i] = log(x[i]);
    dt_curve_points pts = { .n = m, .x = x, .log_x = log_x, .y = y + segment_start };
    dt_curve_fitter *fitter = NULL;
    dt_error err;
    dt_curve_fit_result fit;
    if (dt_curve_fitter_new(DT_CURVE_LOG_POWER, m, NULL, &fitter, &err))
        return -1;
    for (int r = 0; r < TIMING_RUNS; r++) {
        double t0 = dt_now_seconds();
        dt_curve_fit(fitter, &pts, NULL, NULL, &fit, &err);
        times[r] = (dt_now_seconds() - t0) * 1e3;
    }
    dt_curve_fitter_free(fitter);
    *fit_ms = median(times, TIMING_RUNS);
    return 0;
}

static int dtune_seeds(dt_belief *b, const scenario *sc, side *c)
{
    for (int k = 0; k < c->runs; k++) {
        dt_belief_prediction out;
        double t0 = dt_now_seconds();
        if (predict(b, sc, (uint64_t)k, &out))
            return -1;
        c->ms[k] = (dt_now_seconds() - t0) * 1e3;
        c->mean[k] = out.mean;
        c->std[k] = out.std;
        c->acceptance[k] = out.acceptance;
    }
    return 0;
}

/* ms per task when POOL_TASKS such tasks share POOL_THREADS threads. */
static double time_pool(const dt_belief_params *params, const double *y)
{
    dt_belief_pool *pool = NULL;
    dt_error err;
    dt_belief_params shared = *params;
    shared.threads = POOL_THREADS;
    if (dt_belief_pool_new(&shared, &pool, &err))
        return NAN;
    dt_belief_history tasks[POOL_TASKS];
    dt_belief_prediction out[POOL_TASKS];
    for (int k = 0; k < POOL_TASKS; k++)
        tasks[k] = (dt_belief_history){ .y = y, .n = HISTORY, .horizon = HORIZON,
                                        .stream = (uint64_t)k };
    double t0 = dt_now_seconds();
    dt_belief_pool_predict(pool, tasks, POOL_TASKS, out, &err);
    double ms = (dt_now_seconds() - t0) * 1e3 / POOL_TASKS;
    dt_belief_pool_free(pool);
    return ms;
}

static void write_values(FILE *f, const char *name, const double *v, int n)
{
    fprintf(f, "%s", name);
    for (int i = 0; i < n; i++)
        fprintf(f, " %.17g", v[i]);
    fprintf(f, "\n");
}

/* The model as bench/belief_emcee.py reads it. */
static int write_model(const char *path, const dt_belief *b, const dt_belief_params *p,
                       const scenario *sc, const dt_belief_prediction *out, int runs)
{
    double centre[4], scale[4], lo[3], hi[3];
    dt_error err;
    if (dt_belief_sampler_setup(b, centre, scale, lo, hi, &err))
        return -1;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "walkers %d\nsteps %d\nburn_in %d\nruns %d\n", p->walkers, p->steps,
            p->burn_in, runs);
    fprintf(f, "horizon %.17g\nbest %.17g\n", sc->horizon - out->segment_start,
            out->best_observed);
    write_values(f, "lo", lo, 3);
    write_values(f, "hi", hi, 3);
    write_values(f, "centre", centre, 4);
    write_values(f, "scale", scale, 4);
    fprintf(f, "points\n");
    for (int i = out->segment_start; i < sc->n; i++)
        fprintf(f, "%d %.17g\n", i - out->segment_start + 1, sc->y[i]);
    return fclose(f) == 0 ? 0 : -1;
}

static const char *python_path(void)
{
    const char *env = getenv("DT_PYTHON");
    if (env && *env)
        return env;
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/* Runs the emcee script on the model file; fills e. Returns 0 or -1. */
static int run_emcee(const char *model_path, side *e, char *version, size_t version_len)
{
    const char *script = getenv("DT_BELIEF_EMCEE");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s %s 2>&1", python_path(),
             script && *script ? script : "bench/belief_emcee.py", model_path);
    FILE *pipe = popen(cmd, "r");
    if (!pipe)
        return -1;
    char line[512];
    int got = 0;
    while (fgets(line, sizeof line, pipe)) {
        int k;
        if (strncmp(line, "emcee ", 6) == 0) {
            snprintf(version, version_len, "%.*s", (int)strcspn(line, "\n"), line);
        } else if (sscanf(line, "run %d %lf %lf %lf %lf", &k, &e->ms[got], &e->mean[got],
                          &e->std[got], &e->acceptance[got]) == 5 && got < e->runs) {
            got++;
        } else {
            fprintf(stderr, "belief_emcee.py: %s", line);
        }
    }
    int status = pclose(pipe);
    return status == 0 && got == e->runs ? 0 : -1;
}

/* One scenario's agreement row; returns |relative difference of the means|
 * or NAN when emcee did not run. */
static double report_agreement(const scenario *sc, const dt_belief_prediction *first,
                               const side *c, const side *e, bool emcee_ran)
{
    double cm, csd, cs, css, ca, cas;
    mean_sd(c->mean, c->runs, &cm, &csd);
    mean_sd(c->std, c->runs, &cs, &css);
    mean_sd(c->acceptance, c->runs, &ca, &cas);
    printf("  %-22s segment %3d  horizon %4.0f  best %.5f\n", sc->name, first->segment_points,
           sc->horizon, first->best_observed);
    printf("    dtune  mean %.6f ± %.6f  std %.6f  acceptance %.3f\n", cm, csd, cs, ca);
    if (!emcee_ran)
        return NAN;
    double em, esd, es, ess, ea, eas;
    mean_sd(e->mean, e->runs, &em, &esd);
    mean_sd(e->std, e->runs, &es, &ess);
    mean_sd(e->acceptance, e->runs, &ea, &eas);
    printf("    emcee  mean %.6f ± %.6f  std %.6f  acceptance %.3f\n", em, esd, es, ea);
    double diff = (cm - em) / em;
    printf("    dtune − emcee: mean %+.3f %% (standard error %.3f %%), std %+.1f %%\n",
           100 * diff, 100 * sqrt(csd * csd / c->runs + esd * esd / e->runs) / em,
           100 * (cs - es) / es);
    return fabs(diff);
}

static void report_goals(double dtune_ms, double emcee_ms, double worst_diff)
{
    double ratio = emcee_ms / dtune_ms;
    printf("\nspeed-up: emcee run_mcmc %.1f ms / dtune whole prediction %.3f ms = %.1f×\n",
           emcee_ms, dtune_ms, ratio);
    printf("goals: ≤ 10 ms a task: %s   ≥ 50× emcee: %s   means within 2 %%: %s "
           "(worst %.3f %%)\n",
           dtune_ms <= 10 ? "met" : "MISSED", ratio >= 50 ? "met" : "MISSED",
           worst_diff <= 0.02 ? "met" : "MISSED", 100 * worst_diff);
}

static int parse_runs(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--runs") == 0) {
        int runs = atoi(argv[2]);
        return runs >= 1 && runs <= MAX_RUNS ? runs : -1;
    }
    return argc == 1 ? 8 : -1;
}

static int compare_with_emcee(const dt_belief *b, const dt_belief_params *p,
                              const scenario *sc, const dt_belief_prediction *first,
                              side *e, char *version, size_t version_len)
{
    char path[] = "/tmp/dtune_belief_bench_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    int rc = write_model(path, b, p, sc, first, e->runs);
    if (!rc)
        rc = run_emcee(path, e, version, version_len);
    unlink(path);
    return rc;
}

/* The histories compared: the timed one, and a short noisy one whose
 * posterior is wide enough for the comparison to bite. */
#define SCENARIOS 2
static const scenario scenario_specs[SCENARIOS] = {
    { .name = "500 points, 3 % noise", .n = HISTORY, .horizon = HORIZON, .noise = 0.03,
      .seed = 2024 },
    { .name = "60 points, 8 % noise", .n = 60, .horizon = 124, .noise = 0.08, .seed = 7 },
};

/* Runs one scenario on both sides; returns −1 when dtune failed. */
static int run_scenario(dt_belief *b, const dt_belief_params *params, const scenario *sc,
                        side *c, side *e, dt_belief_prediction *first, bool *emcee_ran,
                        char *version, size_t version_len)
{
    if (dtune_seeds(b, sc, c) || predict(b, sc, 0, first))
        return -1;
    *emcee_ran = compare_with_emcee(b, params, sc, first, e, version, version_len) == 0;
    return 0;
}

static int timing(dt_belief *b, const dt_belief_params *params, const scenario *sc,
                  double *predict_ms)
{
    dt_belief_prediction first;
    double fit_ms;
    if (predict(b, sc, 0, &first) || time_dtune(b, sc, first.segment_start, predict_ms, &fit_ms))
        return -1;
    printf("timing, %s (segment %d points, horizon %.0f):\n", sc->name,
           first.segment_points, sc->horizon);
    printf("  dtune  median of %d predictions %.3f ms (least squares alone %.3f ms); "
           "%d tasks on %d threads: %.3f ms a task\n",
           TIMING_RUNS, *predict_ms, fit_ms, POOL_TASKS, POOL_THREADS,
           time_pool(params, sc->y));
    return 0;
}

int main(int argc, char **argv)
{
    int runs = parse_runs(argc, argv);
    if (runs < 0) {
        fprintf(stderr, "usage: belief_bench [--runs 1..%d]\n", MAX_RUNS);
        return 2;
    }
    dt_belief_params params = dt_belief_params_default();
    dt_belief *b = NULL;
    dt_error err;
    if (dt_belief_new(&params, &b, &err)) {
        fprintf(stderr, "belief_bench: %s\n", err.msg);
        return 1;
    }
    scenario *scenarios = malloc(SCENARIOS * sizeof *scenarios);
    if (!scenarios) {
        dt_belief_free(b);
        return 1;
    }
    for (int k = 0; k < SCENARIOS; k++) {
        scenarios[k] = scenario_specs[k];
        make_history(&scenarios[k]);
    }
    printf("belief bench: log power, %d walkers × %d steps, burn-in %d, %d seeds a side\n",
           params.walkers, params.steps, params.burn_in, runs);
    double predict_ms, emcee_ms = NAN, worst = 0;
    char version[128] = "emcee";
    int rc = timing(b, &params, &scenarios[0], &predict_ms);
    printf("\nagreement of the predictive mean and std at the horizon, mean ± sd over "
           "seeds:\n");
    for (int k = 0; !rc && k < SCENARIOS; k++) {
        side c = { .runs = runs }, e = { .runs = runs };
        dt_belief_prediction first;
        bool emcee_ran = false;
        rc = run_scenario(b, &params, &scenarios[k], &c, &e, &first, &emcee_ran, version,
                          sizeof version);
        if (!rc && emcee_ran && k == 0)
            emcee_ms = median(e.ms, e.runs);
        if (!rc)
            worst = fmax(worst, report_agreement(&scenarios[k], &first, &c, &e, emcee_ran));
    }
    if (!rc && isnan(emcee_ms))
        printf("\nemcee not run: %s or bench/belief_emcee.py failed (see above; "
               "`sh scripts/setup.sh --bench` installs python3-emcee)\n", python_path());
    else if (!rc)
        printf("  (%s; emcee's time is run_mcmc alone, dtune's the whole prediction)\n",
               version);
    if (!rc && !isnan(emcee_ms))
        report_goals(predict_ms, emcee_ms, worst);
    free(scenarios);
    dt_belief_free(b);
    return rc ? 1 : 0;
}
