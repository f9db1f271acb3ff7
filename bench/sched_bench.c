/* sched_bench.c — every scheduler policy replayed on recorded tuning traces.
 *
 * A trace (bench/traces/MODEL-sSEED.csv, written by bench/trace_convert.c
 * from a scripts/record_traces.sh run) holds, for every task of a model, its
 * real chameleon tuning curve: GFLOPS of each trial against the task's own
 * tuning seconds. The replay is the rested-bandit view: tasks tune
 * independently, so a task's tuning advances along its own recorded curve
 * only while it holds the slot. A slot is slot_seconds of that task's tuning
 * time (less when its trace ends; it is exhausted then). Warm-up is the
 * daemon's: each task until its first valid measurement (to the end of that
 * measured batch). Before each slot the bench fills dt_sched_task as the
 * daemon's fill_sched does (weights, FLOPs, similarity group, best, belief
 * prediction = best + EI from dt_belief_pool at horizon trials + last slot's
 * trials, slots, finished after finish_after trials without improvement,
 * latency history) and asks dt_scheduler_pick.
 *
 * Per model it prints, over scheduler seeds × trace seeds, the median and
 * 95 % interval (2.5th–97.5th percentile) of the time each policy needs to
 * reach sequential's final model latency, as a speed-up against sequential
 * and against gradient (Ansor), and its ratio to an oracle that knows the
 * traces (greedy by true latency reduction per slot over the best
 * look-ahead). Budget-limited: sequential again with every task cut to 25 %
 * and 50 % of its trials (AutoTVM with n_trial fitted to a shorter budget),
 * and how much sooner each policy reaches that run's final latency. It
 * prints how late the task curves still improve (each task's last
 * improvement; the share of its whole gain within half its trials). It draws
 * the latency-over-time curves of all policies into
 * bench/out/sched_MODEL.svg, and times the slot decision (belief fits of
 * all tasks + choice) of dynatune on a model of two traces concatenated
 * (≥ 20 tasks) as a share of the slot.
 *
 *   bin/sched_bench [--slot-seconds S] [--seeds K] [--finish-after N] [--threads T]
 *                   [--ucb-c C] [--verbose] [--out DIR] [--overhead A.csv,B.csv] TRACE.csv...
 * Traces of one model (same name before -sSEED) are grouped.
 */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtune/belief.h"
#include "dtune/config.h"
#include "dtune/report.h"
#include "dtune/scheduler.h"
#include "dtune/util.h"

#define MAX_TRACES 32
#define MAX_POLICIES 16
#define BATCH_SIZE 64            /* the daemon's default tuner batch: horizon before any slot */

/* Budget-limited sequential: each task cut to this share of its trials. */
static const double budget_fracs[] = { 0.25, 0.5 };
#define NFRACS ((int)(sizeof budget_fracs / sizeof budget_fracs[0]))

/* ---- traces ------------------------------------------------------------------------ */

typedef struct task_trace {
    char name[64];
    int group, count, n;
    double flops, peak;
    double *seconds, *best;      /* per trial: task's own seconds, best-so-far GFLOPS */
} task_trace;

typedef struct trace {
    char path[512], model[64], machine[256];
    int ntasks;
    task_trace *tasks;
} trace;

static void trace_free(trace *t)
{
    for (int k = 0; t->tasks && k < t->ntasks; k++) {
        free(t->tasks[k].seconds);
        free(t->tasks[k].best);
    }
    free(t->tasks);
    t->tasks = NULL;
}

static int push_row(task_trace *tt, int *cap, double seconds, double best)
{
    if (tt->n == *cap) {
        size_t c = dt_grow_capacity((size_t)*cap, (size_t)tt->n + 1);
        if (c > INT_MAX || dt_resize(&tt->seconds, c, sizeof *tt->seconds) != 0
            || dt_resize(&tt->best, c, sizeof *tt->best) != 0)
            return -1;
        *cap = (int)c;
    }
    tt->seconds[tt->n] = seconds;
    tt->best[tt->n++] = best;
    return 0;
}

static int parse_task_line(trace *t, const char *line)
{
    task_trace tt = { 0 };
    int index;
    char kind[32];
    if (sscanf(line, "#task,%d,%63[^,],%31[^,],%d,%d,%lf,%lf", &index, tt.name, kind, &tt.group,
               &tt.count, &tt.flops, &tt.peak) != 7 || index != t->ntasks)
        return -1;
    if (dt_resize(&t->tasks, (size_t)t->ntasks + 1, sizeof *t->tasks) != 0)
        return -1;
    t->tasks[t->ntasks++] = tt;
    return 0;
}

static int trace_load(const char *path, trace *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "sched_bench: cannot open %s\n", path);
        return -1;
    }
    char line[1024];
    int caps[1024] = { 0 }, rc = 0, lineno = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        int k, trial;
        double s, g, b;
        if (strncmp(line, "# machine: ", 11) == 0)
            sscanf(line + 11, "%255[^\n]", t->machine);
        else if (strncmp(line, "# model: ", 9) == 0)
            sscanf(line + 9, "%63s", t->model);
        else if (strncmp(line, "#task,", 6) == 0 && strncmp(line, "#task,index,", 12) != 0)
            rc = t->ntasks < 1024 ? parse_task_line(t, line) : -1;
        else if (line[0] == '#' || strncmp(line, "task,", 5) == 0)
            continue;
        else if (sscanf(line, "%d,%d,%lf,%lf,%lf", &k, &trial, &s, &g, &b) == 5 && k >= 0 &&
                 k < t->ntasks)
            rc = push_row(&t->tasks[k], &caps[k], s, b);
        else
            rc = -1;
    }
    fclose(f);
    for (int k = 0; rc == 0 && k < t->ntasks; k++)
        if (t->tasks[k].n == 0 || t->tasks[k].best[t->tasks[k].n - 1] <= 0)
            rc = -1;
    if (rc == 0 && t->ntasks == 0)
        rc = -1;
    if (rc) {
        fprintf(stderr, "sched_bench: %s:%d: not a trace (or a task without a valid trial)\n", path,
                lineno);
        trace_free(t);
    }
    return rc;
}

/* Concatenation of a and b into out (task arrays borrowed, not copied). */
static int trace_concat(const trace *a, const trace *b, trace *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->model, sizeof out->model, "%.30s+%.30s", a->model, b->model);
    out->ntasks = a->ntasks + b->ntasks;
    if (!(out->tasks = malloc((size_t)out->ntasks * sizeof *out->tasks)))
        return -1;
    memcpy(out->tasks, a->tasks, (size_t)a->ntasks * sizeof *out->tasks);
    memcpy(out->tasks + a->ntasks, b->tasks, (size_t)b->ntasks * sizeof *out->tasks);
    return 0;
}

/* ---- the replay -------------------------------------------------------------------- */

typedef struct task_sim {
    int pos;                     /* trials consumed */
    double clock;                /* own tuning seconds consumed */
    double best;
    int last_improvement, slots, last_slot_trials, nhistory;
    double latency_history[DT_SCHED_WINDOW];
    bool pred_ok;
    double pred_gflops;
} task_sim;

typedef struct sim {
    const trace *tr;
    task_sim *ts;
    double clock;                /* run seconds */
    int slot;
    double trial_frac;           /* (0, 1): each task stops after this share of its trials */
} sim;

/* Trials task k may use: all of its trace, or the first trial_frac of them
 * (AutoTVM's n_trial per task fitted to a shorter budget). */
static int task_len(const sim *s, int k)
{
    int n = s->tr->tasks[k].n;
    if (s->trial_frac <= 0 || s->trial_frac >= 1)
        return n;
    int m = (int)ceil(s->trial_frac * n);
    return m < 1 ? 1 : m;
}

static double task_latency_ms(const task_trace *t, double best)
{
    return best > 0 ? t->flops / (best * 1e9) * 1e3 : INFINITY;
}

static double model_latency(const sim *s)
{
    double total = 0;
    for (int k = 0; k < s->tr->ntasks; k++)
        total += s->tr->tasks[k].count * task_latency_ms(&s->tr->tasks[k], s->ts[k].best);
    return total;
}

/* Consumes trials of task k up to own time `until`; returns the seconds spent. */
static double advance(sim *s, int k, double until)
{
    const task_trace *t = &s->tr->tasks[k];
    task_sim *ts = &s->ts[k];
    double start = ts->clock;
    int n = task_len(s, k);
    while (ts->pos < n && t->seconds[ts->pos] <= until) {
        if (t->best[ts->pos] > ts->best) {
            ts->best = t->best[ts->pos];
            ts->last_improvement = ts->pos + 1;
        }
        ts->pos++;
    }
    ts->clock = ts->pos == n ? fmin(until, t->seconds[n - 1]) : until;
    if (ts->clock < start)
        ts->clock = start;
    return ts->clock - start;
}

/* The trial of a task's first valid measurement (its last trial if none). */
static int first_valid(const task_trace *t)
{
    int i = 0;
    while (i < t->n - 1 && t->best[i] <= 0)
        i++;
    return i;
}

static void warm_up(sim *s)
{
    for (int k = 0; k < s->tr->ntasks; k++) {
        const task_trace *t = &s->tr->tasks[k];
        s->clock += advance(s, k, t->seconds[first_valid(t)]);
    }
}

static void push_history(task_sim *ts, double latency_ms)
{
    if (ts->nhistory == DT_SCHED_WINDOW) {
        memmove(ts->latency_history, ts->latency_history + 1,
                (DT_SCHED_WINDOW - 1) * sizeof ts->latency_history[0]);
        ts->nhistory--;
    }
    ts->latency_history[ts->nhistory++] = latency_ms;
}

/* The daemon's fill_sched. */
static void fill_sched(const sim *s, int finish_after, dt_sched_task *st)
{
    for (int k = 0; k < s->tr->ntasks; k++) {
        const task_trace *t = &s->tr->tasks[k];
        const task_sim *ts = &s->ts[k];
        st[k] = (dt_sched_task){ .weight = t->count, .flops = t->flops, .group = t->group,
                                 .best_gflops = ts->best, .pred_gflops = ts->pred_gflops,
                                 .pred_ok = ts->pred_ok, .slots = ts->slots,
                                 .finished = ts->pos - ts->last_improvement >= finish_after,
                                 .exhausted = ts->pos >= task_len(s, k), .nhistory = ts->nhistory };
        memcpy(st[k].latency_history, ts->latency_history, sizeof st[k].latency_history);
    }
}

/* The daemon's dt_run_predict: best-so-far per trial ÷ peak, horizon one
 * slot of the task's last slot's trials ahead. */
static int predict(sim *s, dt_belief_pool *pool, uint64_t seed_stream, double *ybuf,
                   dt_belief_history *hist, dt_belief_prediction *pred)
{
    int n = s->tr->ntasks, off = 0;
    for (int k = 0; k < n; k++) {
        const task_trace *t = &s->tr->tasks[k];
        const task_sim *ts = &s->ts[k];
        for (int i = 0; i < ts->pos; i++)
            ybuf[off + i] = t->best[i] / t->peak;
        double ahead = ts->last_slot_trials > 0 ? ts->last_slot_trials : BATCH_SIZE;
        hist[k] = (dt_belief_history){ .x = NULL, .y = ybuf + off, .n = ts->pos,
                                       .horizon = ts->pos + ahead,
                                       .stream = dt_belief_task_stream(k, ts->pos) + seed_stream };
        off += ts->pos;
    }
    dt_error err = { 0 };
    if (dt_belief_pool_predict(pool, hist, n, pred, &err)) {
        fprintf(stderr, "sched_bench: belief: %s\n", err.msg);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        s->ts[k].pred_ok = pred[k].ok;
        s->ts[k].pred_gflops = (pred[k].best_observed + pred[k].expected_improvement) * s->tr->tasks[k].peak;
    }
    return 0;
}

/* True latency reduction (ms) of one more slot of task k, from its trace. */
static double true_reduction(const sim *s, int k, double slot_seconds)
{
    const task_trace *t = &s->tr->tasks[k];
    const task_sim *ts = &s->ts[k];
    double b = ts->best;
    for (int i = ts->pos; i < t->n && t->seconds[i] <= ts->clock + slot_seconds; i++)
        b = fmax(b, t->best[i]);
    return t->count * (task_latency_ms(t, ts->best) - task_latency_ms(t, b));
}

/* How well the belief's r_k ranks tasks, over decisions where every task has
 * had a slot: argmax r_k is the task of largest true one-slot reduction
 * (hits), the true reduction of the argmax over the largest one (share), and
 * the sums of predicted and true reductions of the argmax (calibration). */
typedef struct belief_quality {
    int decisions, hits;
    double share_sum, pred_sum, true_sum;
} belief_quality;

static void judge_belief(const sim *s, const dt_sched_task *st, double slot_seconds,
                         belief_quality *q)
{
    int n = s->tr->ntasks, kp = -1, kt = -1;
    double rp = -1, rt = -1;
    for (int k = 0; k < n; k++) {
        if (st[k].slots == 0)
            return;
        if (st[k].exhausted || st[k].finished)
            continue;
        double p = dt_sched_expected_reduction(&st[k]), t = true_reduction(s, k, slot_seconds);
        if (p > rp) {
            rp = p;
            kp = k;
        }
        if (t > rt) {
            rt = t;
            kt = k;
        }
    }
    if (kp < 0 || rt <= 0)
        return;
    double tp = true_reduction(s, kp, slot_seconds);
    q->decisions++;
    q->hits += kp == kt;
    q->share_sum += tp / rt;
    q->pred_sum += rp;
    q->true_sum += tp;
}

/* Oracle: the task whose next m slots (best m) cut the true latency most per slot. */
static int oracle_pick(const sim *s, double slot_seconds)
{
    int best_k = -1;
    double best_rate = -1;
    for (int k = 0; k < s->tr->ntasks; k++) {
        const task_trace *t = &s->tr->tasks[k];
        const task_sim *ts = &s->ts[k];
        if (ts->pos >= t->n)
            continue;
        double now = task_latency_ms(t, ts->best), b = ts->best;
        int i = ts->pos;
        for (int m = 1; i < t->n; m++) {
            double until = ts->clock + m * slot_seconds;
            while (i < t->n && t->seconds[i] <= until)
                b = fmax(b, t->best[i++]);
            double spent = fmin(until, t->seconds[t->n - 1]) - ts->clock;
            double rate = t->count * (now - task_latency_ms(t, b)) / fmax(spent, 1e-9);
            if (rate > best_rate) {
                best_rate = rate;
                best_k = k;
            }
        }
    }
    return best_k;
}

typedef struct run_result {
    int npoints, cap;
    double *x, *y;               /* latency over run time, one point per slot */
    int ndecisions;
    double *decision_ms;         /* belief + pick, per slot */
} run_result;

static int add_point(run_result *r, double x, double y, double decision_ms)
{
    if (r->npoints == r->cap) {
        size_t c = dt_grow_capacity((size_t)r->cap, (size_t)r->npoints + 1);
        if (c > INT_MAX || dt_resize(&r->x, c, sizeof *r->x) != 0
            || dt_resize(&r->y, c, sizeof *r->y) != 0
            || dt_resize(&r->decision_ms, c, sizeof *r->decision_ms) != 0)
            return -1;
        r->cap = (int)c;
    }
    r->x[r->npoints] = x;
    r->y[r->npoints++] = y;
    if (decision_ms >= 0)
        r->decision_ms[r->ndecisions++] = decision_ms;
    return 0;
}

static void run_result_free(run_result *r)
{
    free(r->x);
    free(r->y);
    free(r->decision_ms);
    memset(r, 0, sizeof *r);
}

typedef struct bench_opts {
    double slot_seconds;
    int seeds, finish_after, threads;
    double ucb_c;                /* < 0: the config default */
    bool verbose;                /* one line per slot decision of belief policies */
    const char *out_dir, *overhead;
} bench_opts;

static void print_decision(const char *policy, uint64_t seed, const sim *s, const dt_sched_task *st,
                           const double *scores, int k, const dt_belief_prediction *pred)
{
    int ok = 0;
    double rmax = 0;
    for (int i = 0; i < s->tr->ntasks; i++) {
        ok += st[i].pred_ok;
        rmax = fmax(rmax, dt_sched_expected_reduction(&st[i]));
    }
    printf("  [%s seed %llu] slot %d t=%.0fs pick %d r_k=%.4g score=%.4g max r=%.4g pred_ok %d/%d\n",
           policy, (unsigned long long)seed, s->slot + 1, s->clock, k,
           k >= 0 ? dt_sched_expected_reduction(&st[k]) : 0, k >= 0 ? scores[k] : 0, rmax, ok,
           s->tr->ntasks);
    for (int i = 0; i < s->tr->ntasks; i++)
        if (st[i].slots > 0 && !st[i].pred_ok)
            printf("      task %d (%d trials): no prediction: %s\n", i, s->ts[i].pos, pred[i].reason);
}

/* The daemon's belief pool (daemon_belief.c open_pool), seeded by the run seed. */
static int open_pool(const dt_config *cfg, uint64_t seed, int threads, dt_belief_pool **pool)
{
    const dt_belief_config *bc = &cfg->scheduler.belief;
    dt_belief_params p = dt_belief_default_params();
    dt_error err = { 0 };
    int rc = dt_curve_parse(bc->curve, &p.family, &err);
    if (rc == 0) {
        p.walkers = bc->walkers;
        p.steps = bc->steps;
        p.burn_in = bc->burn_in;
        p.jump_threshold = bc->jump_threshold;
        p.min_segment_points = bc->min_segment_points;
        p.seed = seed;
        rc = dt_belief_pool_new(&p, threads, pool, &err);
    }
    if (rc)
        fprintf(stderr, "sched_bench: %s\n", err.msg);
    return rc;
}

/* One replay of policy (NULL: the oracle) with scheduler seed `seed`. */
static int replay(const trace *tr, const char *policy, uint64_t seed, const bench_opts *o,
                  double trial_frac, run_result *res, belief_quality *quality)
{
    int n = tr->ntasks, rc = 0;
    memset(res, 0, sizeof *res);
    dt_config cfg;
    dt_config_defaults(&cfg);
    cfg.scheduler.finish_after = o->finish_after;
    if (o->ucb_c >= 0)
        cfg.scheduler.ucb_c = o->ucb_c;
    dt_error err = { 0 };
    dt_scheduler *sched = NULL;
    dt_belief_pool *pool = NULL;
    sim s = { .tr = tr, .ts = calloc((size_t)n, sizeof(task_sim)), .trial_frac = trial_frac };
    dt_sched_task *st = calloc((size_t)n, sizeof *st);
    double *scores = calloc((size_t)n, sizeof *scores);
    dt_belief_history *hist = calloc((size_t)n, sizeof *hist);
    dt_belief_prediction *pred = calloc((size_t)n, sizeof *pred);
    size_t total = 0;
    for (int k = 0; k < n; k++)
        total += (size_t)tr->tasks[k].n;
    double *ybuf = malloc((total + 1) * sizeof *ybuf);
    if (!s.ts || !st || !scores || !hist || !pred || !ybuf) {
        rc = -1;
        goto done;
    }
    if (policy && dt_scheduler_new(policy, &cfg.scheduler, seed, &sched, &err)) {
        fprintf(stderr, "sched_bench: %s\n", err.msg);
        rc = -1;
        goto done;
    }
    bool belief = sched && dt_scheduler_needs_belief(sched);
    if (belief && (rc = open_pool(&cfg, seed, o->threads, &pool)))
        goto done;
    warm_up(&s);
    double cap_seconds = s.clock;
    for (int k = 0; k < n; k++)
        cap_seconds += 3 * tr->tasks[k].seconds[tr->tasks[k].n - 1];
    rc = add_point(res, s.clock, model_latency(&s), -1);
    while (rc == 0 && s.clock < cap_seconds) {
        double t0 = dt_now_seconds();
        if (belief && (rc = predict(&s, pool, 0, ybuf, hist, pred)))
            break;
        int k;
        if (sched) {
            fill_sched(&s, o->finish_after, st);
            k = dt_scheduler_pick(sched, s.slot + 1, st, n, scores);
            if (belief && quality)
                judge_belief(&s, st, o->slot_seconds, quality);
        } else {
            k = oracle_pick(&s, o->slot_seconds);
        }
        double decision_ms = (dt_now_seconds() - t0) * 1e3;
        if (belief && o->verbose)
            print_decision(policy, seed, &s, st, scores, k, pred);
        if (k < 0)
            break;
        s.slot++;
        task_sim *ts = &s.ts[k];
        int before = ts->pos;
        s.clock += advance(&s, k, ts->clock + o->slot_seconds);
        ts->last_slot_trials = ts->pos - before;
        ts->slots++;
        push_history(ts, task_latency_ms(&tr->tasks[k], ts->best));
        rc = add_point(res, s.clock, model_latency(&s), decision_ms);
    }
done:
    dt_scheduler_free(sched);
    dt_belief_pool_free(pool);
    free(s.ts);
    free(st);
    free(scores);
    free(hist);
    free(pred);
    free(ybuf);
    return rc;
}

/* First run time the curve is at or below latency (inf: never). */
static double time_to(const run_result *r, double latency)
{
    for (int i = 0; i < r->npoints; i++)
        if (r->y[i] <= latency * (1 + 1e-12))
            return r->x[i];
    return INFINITY;
}

/* ---- statistics and output --------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* p-th quantile (0..1) of v[0..n), linear interpolation; v is sorted. */
static double quantile(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double pos = p * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1)
        return v[n - 1];
    double a = v[i], b = v[i + 1];
    if (isinf(a) || isinf(b))
        return pos - i < 0.5 ? a : b;
    return a + (pos - i) * (b - a);
}

static void format_interval(char *buf, size_t len, double *v, int n)
{
    double lo = quantile(v, n, 0.025), med = quantile(v, n, 0.5), hi = quantile(v, n, 0.975);
    snprintf(buf, len, "%5.2f [%4.2f, %4.2f]", med, lo, hi);
}

static int split_policies(char names[][32])
{
    const char *all = dt_scheduler_policies();
    int n = 0;
    for (const char *p = all; *p && n < MAX_POLICIES;) {
        size_t l = strcspn(p, ", ");
        if (l > 0 && l < 32) {
            memcpy(names[n], p, l);
            names[n++][l] = '\0';
        }
        p += l;
        p += strspn(p, ", ");
    }
    return n;
}

static int find_policy(char names[][32], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

static void draw_curves(const char *model, run_result *first, char names[][32], int np,
                        const bench_opts *o)
{
    dt_report_curve curves[DT_REPORT_MAX_CURVES];
    int nc = 0;
    for (int p = 0; p <= np && nc < DT_REPORT_MAX_CURVES; p++)
        curves[nc++] = (dt_report_curve){ .name = p < np ? names[p] : "oracle",
                                          .n = first[p].npoints, .x = first[p].x, .y = first[p].y };
    char path[1024], title[256];
    snprintf(path, sizeof path, "%s/sched_%s.svg", o->out_dir, model);
    snprintf(title, sizeof title, "%s: model latency over tuning time (replayed, slot %g s)", model,
             o->slot_seconds);
    dt_error err = { 0 };
    if (dt_report_svg_curves(path, title, "tuning time (s)", "model latency (ms)", curves, nc, 0, &err))
        fprintf(stderr, "sched_bench: %s: %s\n", path, err.msg);
    else
        printf("  curves: %s\n", path);
}

/* Median and interval of num[i] / den[i] over n runs into buf. */
static void ratio_interval(char *buf, size_t len, const double *num, const double *den, int n,
                           double *scratch)
{
    for (int i = 0; i < n; i++)
        scratch[i] = den[i] > 0 ? num[i] / den[i] : INFINITY;
    format_interval(buf, len, scratch, n);
}

static void print_table(const trace *tr, int ntraces, char names[][32], int np, const double *reach,
                        const double *reach5, const double *final_ms, int nruns, const bench_opts *o)
{
    int seq = find_policy(names, np, "sequential"), grad = find_policy(names, np, "gradient");
    double *v = malloc((size_t)nruns * sizeof *v);
    if (!v)
        return;
    printf("  %-15s %9s %22s %22s %22s %22s %9s\n", "policy", "reach (s)", "x sooner: sequential",
           "x sooner: gradient", "time / oracle's", "to 1.05 L*: x seq", "final ms");
    for (int p = 0; p <= np; p++) {
        char a[64], b[64], c[64], d[64];
        const double *rp = &reach[p * nruns], *r5 = &reach5[p * nruns];
        ratio_interval(a, sizeof a, &reach[seq * nruns], rp, nruns, v);
        ratio_interval(b, sizeof b, &reach[grad * nruns], rp, nruns, v);
        ratio_interval(c, sizeof c, rp, &reach[np * nruns], nruns, v);
        ratio_interval(d, sizeof d, &reach5[seq * nruns], r5, nruns, v);
        memcpy(v, rp, (size_t)nruns * sizeof *v);
        double med_reach = quantile(v, nruns, 0.5);
        memcpy(v, &final_ms[p * nruns], (size_t)nruns * sizeof *v);
        printf("  %-15s %9.0f %22s %22s %22s %22s %9.4f\n", p < np ? names[p] : "oracle", med_reach,
               a, b, c, d, quantile(v, nruns, 0.5));
    }
    free(v);
}

/* How late the task curves still improve: the trial of each task's last
 * improvement, and the share of its whole latency gain (from the first valid
 * measurement to the last) reached within half of its trials. The oracle
 * bound follows from the first: L* needs every task's last improvement. */
static void print_curve_shape(const trace *traces, int ntraces)
{
    int total = 0;
    for (int t = 0; t < ntraces; t++)
        total += traces[t].ntasks;
    double *last = malloc((size_t)total * sizeof *last), *half = malloc((size_t)total * sizeof *half);
    if (!last || !half) {
        free(last);
        free(half);
        return;
    }
    int n = 0, nhalf = 0, trials = 0;
    for (int t = 0; t < ntraces; t++)
        for (int k = 0; k < traces[t].ntasks; k++) {
            const task_trace *tt = &traces[t].tasks[k];
            int first = first_valid(tt), li = 0;
            for (int i = first + 1; i < tt->n; i++)
                if (tt->best[i] > tt->best[i - 1])
                    li = i;
            last[n++] = li + 1;
            trials = tt->n > trials ? tt->n : trials;
            if (tt->best[tt->n - 1] > tt->best[first]) {
                double l0 = task_latency_ms(tt, tt->best[first]);
                double lh = task_latency_ms(tt, tt->best[(tt->n - 1) / 2]);
                double lf = task_latency_ms(tt, tt->best[tt->n - 1]);
                half[nhalf++] = (l0 - lh) / (l0 - lf);
            }
        }
    printf("  task curves (%d over %d trace(s)): last improvement at trial %.0f / %.0f / %.0f "
           "(min / median / max) of about %d;\n", n, ntraces, quantile(last, n, 0),
           quantile(last, n, 0.5), quantile(last, n, 1), trials);
    if (nhalf > 0)
        printf("  half of the trials reach %.1f %% (median; 2.5th percentile %.1f %%) of a task's "
               "whole gain\n", 100 * quantile(half, nhalf, 0.5), 100 * quantile(half, nhalf, 0.025));
    free(last);
    free(half);
}

/* Budget-limited comparison: x sooner than the cut sequential, per share. */
static void print_budget_table(char names[][32], int np, const double *seqf, const double *reachf,
                               int nruns)
{
    double *v = malloc((size_t)nruns * sizeof *v);
    if (!v)
        return;
    printf("  budget-limited: sequential with every task cut to a share of its trials (AutoTVM's\n"
           "  n_trial fitted to a shorter budget); x sooner than it to reach its final latency:\n");
    printf("  %-15s", "policy");
    for (int f = 0; f < NFRACS; f++) {
        char head[32];
        snprintf(head, sizeof head, "share %.0f %%", 100 * budget_fracs[f]);
        printf(" %22s", head);
    }
    printf("\n");
    for (int p = 0; p <= np; p++) {
        printf("  %-15s", p < np ? names[p] : "oracle");
        for (int f = 0; f < NFRACS; f++) {
            char cell[64];
            ratio_interval(cell, sizeof cell, &seqf[f * nruns],
                           &reachf[((size_t)f * (size_t)(np + 1) + (size_t)p) * (size_t)nruns],
                           nruns, v);
            printf(" %22s", cell);
        }
        printf("\n");
    }
    free(v);
}

/* All policies and the oracle on one model's traces. */
static int bench_model(trace *traces, int ntraces, const bench_opts *o)
{
    char names[MAX_POLICIES][32];
    int np = split_policies(names);
    int seq = find_policy(names, np, "sequential"), dyn = find_policy(names, np, "dynatune");
    int nruns = ntraces * o->seeds;
    belief_quality quality = { 0 };
    size_t cells = (size_t)(np + 1) * (size_t)nruns;
    double *reach = calloc(cells, sizeof *reach), *reach5 = calloc(cells, sizeof *reach5);
    double *final_ms = calloc(cells, sizeof *final_ms);
    double *seqf = calloc((size_t)NFRACS * (size_t)nruns, sizeof *seqf);
    double *reachf = calloc((size_t)NFRACS * cells, sizeof *reachf);
    run_result first[MAX_POLICIES + 1];
    memset(first, 0, sizeof first);
    int rc = !reach || !reach5 || !final_ms || !seqf || !reachf || seq < 0 || find_policy(names, np, "gradient") < 0 ? -1 : 0;
    double seq_final_ms = 0, seq_time = 0;
    for (int t = 0; rc == 0 && t < ntraces; t++)
        for (int sd = 0; rc == 0 && sd < o->seeds; sd++) {
            int run = t * o->seeds + sd, made = 0;
            run_result rr[MAX_POLICIES + 1];
            for (int p = 0; rc == 0 && p <= np; p++, made++)
                rc = replay(&traces[t], p < np ? names[p] : NULL, (uint64_t)sd + 1, o, 1.0, &rr[p],
                            p == dyn ? &quality : NULL);
            if (rc) {
                for (int p = 0; p < made; p++)
                    run_result_free(&rr[p]);
                break;
            }
            double target = rr[seq].y[rr[seq].npoints - 1];
            if (run == 0) {
                seq_final_ms = target;
                seq_time = time_to(&rr[seq], target);
            }
            /* Budget-limited: sequential with every task cut to a share of
             * its trials; when do the others reach its final latency? */
            for (int f = 0; rc == 0 && f < NFRACS; f++) {
                run_result capped;
                rc = replay(&traces[t], "sequential", (uint64_t)sd + 1, o, budget_fracs[f], &capped,
                            NULL);
                if (rc)
                    break;
                double lf = capped.y[capped.npoints - 1];
                seqf[f * nruns + run] = time_to(&capped, lf);
                for (int p = 0; p <= np; p++)
                    reachf[((size_t)f * (size_t)(np + 1) + (size_t)p) * (size_t)nruns + (size_t)run] =
                        time_to(&rr[p], lf);
                run_result_free(&capped);
            }
            for (int p = 0; p <= np; p++) {
                reach[p * nruns + run] = time_to(&rr[p], target);
                reach5[p * nruns + run] = time_to(&rr[p], 1.05 * target);
                final_ms[p * nruns + run] = rr[p].y[rr[p].npoints - 1];
                if (run == 0)
                    first[p] = rr[p];
                else
                    run_result_free(&rr[p]);
            }
        }
    if (rc == 0) {
        printf("\nmodel %s: %d tasks, %d trace(s), %d scheduler seeds, slot %g s, finish_after %d\n",
               traces[0].model, traces[0].ntasks, ntraces, o->seeds, o->slot_seconds, o->finish_after);
        printf("  machine: %s\n", traces[0].machine);
        printf("  L* = sequential's final latency %.4f ms, reached at %.0f s (first trace, seed 1);\n"
               "  median [2.5th, 97.5th percentile] over %d runs\n", seq_final_ms, seq_time, nruns);
        print_table(traces, ntraces, names, np, reach, reach5, final_ms, nruns, o);
        print_budget_table(names, np, seqf, reachf, nruns);
        print_curve_shape(traces, ntraces);
        if (quality.decisions > 0)
            printf("  dynatune's belief, %d decisions after every task's first slot: argmax r_k is the\n"
                   "  best next slot %.0f %% of the time; its true reduction is %.0f %% of the best one;\n"
                   "  predicted / true reduction of the chosen task: %.2f\n",
                   quality.decisions, 100.0 * quality.hits / quality.decisions,
                   100.0 * quality.share_sum / quality.decisions,
                   quality.true_sum > 0 ? quality.pred_sum / quality.true_sum : INFINITY);
        draw_curves(traces[0].model, first, names, np, o);
    }
    for (int p = 0; p <= np; p++)
        run_result_free(&first[p]);
    free(reach);
    free(reach5);
    free(final_ms);
    free(seqf);
    free(reachf);
    return rc;
}

/* Slot decision time of dynatune (belief of every task + pick) on two
 * traces concatenated. */
static int bench_overhead(const bench_opts *o)
{
    char a_path[512], *comma;
    snprintf(a_path, sizeof a_path, "%s", o->overhead);
    if (!(comma = strchr(a_path, ','))) {
        fprintf(stderr, "sched_bench: --overhead wants A.csv,B.csv\n");
        return -1;
    }
    *comma = '\0';
    trace a, b, both;
    if (trace_load(a_path, &a))
        return -1;
    if (trace_load(comma + 1, &b)) {
        trace_free(&a);
        return -1;
    }
    int rc = trace_concat(&a, &b, &both);
    run_result r = { 0 };
    if (rc == 0)
        rc = replay(&both, "dynatune", 1, o, 1.0, &r, NULL);
    if (rc == 0 && r.ndecisions > 0) {
        double med = quantile(r.decision_ms, r.ndecisions, 0.5);
        double p95 = quantile(r.decision_ms, r.ndecisions, 0.95);
        printf("\noverhead: dynatune on %s (%d tasks), %d slot decisions, %d belief thread(s)\n",
               both.model, both.ntasks, r.ndecisions, o->threads);
        printf("  decision (belief fits of all tasks + pick): median %.1f ms, p95 %.1f ms\n", med, p95);
        printf("  share of a %g s slot: median %.3f %%, p95 %.3f %% (goal <= 0.1 %%)\n", o->slot_seconds,
               med / (o->slot_seconds * 1e3) * 100, p95 / (o->slot_seconds * 1e3) * 100);
    }
    run_result_free(&r);
    free(both.tasks); /* the task arrays belong to a and b */
    trace_free(&a);
    trace_free(&b);
    return rc;
}

static int parse_args(int argc, char **argv, bench_opts *o, const char **paths, int *npaths)
{
    *o = (bench_opts){ .slot_seconds = 10, .seeds = 5, .finish_after = 200, .threads = 2,
                       .ucb_c = -1, .verbose = false, .out_dir = "bench/out", .overhead = NULL };
    *npaths = 0;
    for (int i = 1; i < argc; i++) {
        bool v = i + 1 < argc;
        if (strcmp(argv[i], "--slot-seconds") == 0 && v)
            o->slot_seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--seeds") == 0 && v)
            o->seeds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--finish-after") == 0 && v)
            o->finish_after = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && v)
            o->threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--out") == 0 && v)
            o->out_dir = argv[++i];
        else if (strcmp(argv[i], "--ucb-c") == 0 && v)
            o->ucb_c = atof(argv[++i]);
        else if (strcmp(argv[i], "--verbose") == 0)
            o->verbose = true;
        else if (strcmp(argv[i], "--overhead") == 0 && v)
            o->overhead = argv[++i];
        else if (argv[i][0] != '-' && *npaths < MAX_TRACES)
            paths[(*npaths)++] = argv[i];
        else
            return -1;
    }
    if (o->slot_seconds <= 0 || o->seeds < 1 || o->finish_after < 1 || o->threads < 1)
        return -1;
    return *npaths > 0 || o->overhead ? 0 : -1;
}

int main(int argc, char **argv)
{
    bench_opts o;
    const char *paths[MAX_TRACES];
    int npaths;
    if (parse_args(argc, argv, &o, paths, &npaths)) {
        fprintf(stderr, "usage: sched_bench [--slot-seconds S] [--seeds K] [--finish-after N] "
                        "[--threads T] [--ucb-c C] [--verbose] [--out DIR] [--overhead A.csv,B.csv] "
                        "TRACE.csv...\n");
        return 2;
    }
    dt_error err;
    if (dt_mkdir_p(o.out_dir, &err) != 0)
        fprintf(stderr, "sched_bench: %s\n", err.msg);
    static trace traces[MAX_TRACES];
    bool used[MAX_TRACES] = { false };
    int rc = 0;
    for (int i = 0; rc == 0 && i < npaths; i++)
        rc = trace_load(paths[i], &traces[i]);
    for (int i = 0; rc == 0 && i < npaths; i++) {
        if (used[i])
            continue;
        trace group[MAX_TRACES];
        int ng = 0;
        for (int j = i; j < npaths; j++)
            if (!used[j] && strcmp(traces[j].model, traces[i].model) == 0 &&
                traces[j].ntasks == traces[i].ntasks) {
                if (strcmp(traces[j].machine, traces[i].machine) != 0) {
                    fprintf(stderr, "sched_bench: %s and %s come from different machines "
                                    "('%s', '%s'); a model's traces must not mix machines\n",
                            traces[i].path, traces[j].path, traces[i].machine, traces[j].machine);
                    rc = 2;
                    break;
                }
                used[j] = true;
                group[ng++] = traces[j];
            }
        if (rc)
            break;
        rc = bench_model(group, ng, &o);
    }
    if (rc == 0 && o.overhead)
        rc = bench_overhead(&o);
    for (int i = 0; i < npaths; i++)
        trace_free(&traces[i]);
    return rc == 2 ? 2 : rc ? 1 : 0;
}
