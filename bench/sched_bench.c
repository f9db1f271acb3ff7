/* sched_bench.c — every scheduler policy replayed on recorded tuning traces.
 *
 * A trace (bench/traces/MODEL-sSEED.csv, written by bench/trace_convert.c
 * from a scripts/record_traces.sh run) holds, for every task of a model, its
 * real chameleon tuning curve: GFLOPS of each trial against the task's own
 * tuning seconds, and in format v2 (trace_format.h) the tuner's cost-model
 * estimate of the best reachable logged with each trial, which dynatune's
 * prior uses under --headroom cost_model (scheduler.headroom); a v1 trace has
 * none, so every task keeps the roofline there; a v3 trace carries each
 * task's bound as the recording run measured it, the roofline a real run
 * reads with scheduler.bandwidth_gbs 0 (the default). With that bandwidth
 * (or --bandwidth measured, the same) a task of a v1 or v2 trace, which
 * carries no measured bound, takes STANDIN_BANDWIDTH_GBS instead: the
 * recording run measured one, the trace just does not hold it. The replay
 * is the rested-bandit view: tasks tune independently, so a task's tuning
 * advances along its own recorded curve only while it holds the slot. A slot
 * is slot_seconds of that task's tuning time (less when its trace ends; it is
 * exhausted then). Warm-up is the daemon's: batches of DT_WARMUP_BATCH trials
 * until one holds a valid measurement (trace_warm_up_end). Before each slot
 * the bench fills dt_sched_task as the daemon's fill_sched does (weights,
 * FLOPs, similarity group, best, belief prediction = best + EI from
 * dt_belief_pool at horizon trials + last slot's trials, slots, finished
 * after finish_after trials without improvement, latency history) and asks
 * dt_scheduler_pick.
 *
 * L* is sequential's final latency on each trace: every task tuned in model
 * order until finish_after trials without improvement (or its trace's end).
 * Per model it prints, as medians and 2.5-97.5 % intervals over trace seeds
 * x scheduler seeds: the time each policy needs to reach (1 + eps) L* for
 * eps = 10, 5, 2, 1 % as a share of the exact optimum's time
 * (dt_sched_optimum over each task's own slot curve; warm-up included) and
 * of the oracle's (greedy by true latency reduction per slot over the best
 * look-ahead); the anytime figure, mean model latency over the first 25 /
 * 50 / 100 % of sequential's whole time (from the end of warm-up) over the
 * oracle's; and for policies that predict (dt_scheduler_predicts), per
 * decision after every task's first slot, the true cut of the chosen task
 * over the best one (share) and Spearman's rho of predicted against true
 * cuts. A summary over models follows. --csv writes every run's metrics as
 * rows model,trace,policy,seed,metric,value. --lomo fits the hazard table
 * (hazard policy and dynatune's prior) per model on the other models'
 * traces only; --fit-hazard prints the table fitted on all traces given. It
 * prints how late the task curves still improve, draws the latency-over-time
 * curves of all policies into bench/out/sched_MODEL.svg, and with --overhead
 * times every policy's slot decision (belief fits + pick) on traces
 * concatenated (squeezenet1_1 + resnet18: 31 tasks) as a share of the slot.
 *
 *   bin/sched_bench [--slot-seconds S] [--seeds K] [--finish-after N] [--threads T]
 *                   [--ucb-c C] [--prior-slots M0] [--policies A,B] [--hazard H | --lomo]
 *                   [--staleness G | "" | fit (with --lomo: fitted with the prior)]
 *                   [--headroom roofline|cost_model] [--bandwidth GBS|measured]
 *                   [--fit-hazard] [--csv FILE] [--verbose] [--out DIR]
 *                   [--overhead A.csv,B.csv,...] TRACE.csv...
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
#include "dtune/model.h"
#include "dtune/report.h"
#include "dtune/scheduler.h"
#include "dtune/util.h"
#include "trace_format.h"

#define MAX_TRACES 32
#define MAX_POLICIES 16
#define BATCH_SIZE 64            /* the daemon's default tuner batch: horizon before any slot */
/* The roofline bandwidth (GB/s) fitted on the Zen 4 traces, dynatune's
 * default before a run read its own measured roofline: what a task of a
 * trace without a measured bound (v1, v2) takes when the configured
 * bandwidth is 0. */
#define STANDIN_BANDWIDTH_GBS 20.0

/* ---- traces ------------------------------------------------------------------------ */

typedef struct task_trace {
    char name[64];
    int group, count, n;
    double flops, peak;
    double bytes;                /* from the model file the header names; 0 = unknown */
    double bound;                /* v3: FLOPs over the measured bound, GFLOPS; 0 = none */
    double bandwidth;            /* the roofline bandwidth the bound implies (GB/s;
                                    HUGE_VAL: FLOP-bound); 0 = none */
    double *seconds, *best;      /* per trial: task's own seconds, best-so-far GFLOPS */
    double *cost_model;          /* per trial: the cost model's estimate; 0 = none */
} task_trace;

typedef struct trace {
    char path[512], model[64], machine[256], model_path[512];
    int ntasks;
    task_trace *tasks;
} trace;

static void trace_free(trace *t)
{
    for (int k = 0; t->tasks && k < t->ntasks; k++) {
        free(t->tasks[k].seconds);
        free(t->tasks[k].best);
        free(t->tasks[k].cost_model);
    }
    free(t->tasks);
    t->tasks = NULL;
}

static int push_row(task_trace *tt, int *cap, const trace_row *r)
{
    if (tt->n == *cap) {
        size_t c = dt_grow_capacity((size_t)*cap, (size_t)tt->n + 1);
        if (c > INT_MAX || dt_resize(&tt->seconds, c, sizeof *tt->seconds) != 0
            || dt_resize(&tt->best, c, sizeof *tt->best) != 0
            || dt_resize(&tt->cost_model, c, sizeof *tt->cost_model) != 0)
            return -1;
        *cap = (int)c;
    }
    tt->seconds[tt->n] = r->seconds;
    tt->cost_model[tt->n] = r->cost_model;
    tt->best[tt->n++] = r->best;
    return 0;
}

static int parse_task_line(trace *t, const char *line)
{
    trace_task line_task;
    if (trace_parse_task(line, &line_task) != 0 || line_task.index != t->ntasks)
        return -1;
    task_trace tt = { .group = line_task.group, .count = line_task.count,
                      .flops = line_task.flops, .peak = line_task.peak, .bound = line_task.bound };
    snprintf(tt.name, sizeof tt.name, "%s", line_task.name);
    if (dt_resize(&t->tasks, (size_t)t->ntasks + 1, sizeof *t->tasks) != 0)
        return -1;
    t->tasks[t->ntasks++] = tt;
    return 0;
}

/* Each task's compulsory bytes from the model file the trace names (for
 * the roofline of dynatune's prior); left 0 when the file or task is not
 * found. */
static void task_bytes(trace *t)
{
    dt_model *m = NULL;
    dt_error err = { 0 };
    if (!t->model_path[0] || dt_model_load(t->model_path, &m, &err)) {
        fprintf(stderr, "sched_bench: %s: no model file (%s): the prior's roofline is off\n", t->path,
                t->model_path[0] ? err.msg : "not named");
        return;
    }
    for (int k = 0; k < t->ntasks; k++) {
        int i = dt_model_find_task(m, t->tasks[k].name);
        t->tasks[k].bytes = i >= 0 ? m->tasks[i].bytes : 0;
    }
    dt_model_free(m);
}

/* The bandwidth a task's measured bound implies, as the daemon's roofline
 * reads it with scheduler.bandwidth_gbs 0 (dt_sched_task.bandwidth_gbs): a
 * memory-bound task's bound is its bytes at that bandwidth, so bandwidth =
 * bytes x bound GFLOPS / FLOPs; a task bound by the FMA peak (its bound's
 * GFLOPS at the header's peak) is not held by memory at all, HUGE_VAL (the
 * daemon's level then lies between 1 and the ceiling; the replay takes the
 * ceiling). 0 without a bound or bytes. */
static void task_bandwidths(trace *t)
{
    for (int k = 0; k < t->ntasks; k++) {
        task_trace *tt = &t->tasks[k];
        if (!(tt->bound > 0) || !(tt->bytes > 0) || !(tt->flops > 0))
            tt->bandwidth = 0;
        else if (tt->bound >= tt->peak * (1 - 1e-3))
            tt->bandwidth = HUGE_VAL;
        else
            tt->bandwidth = tt->bytes * tt->bound / tt->flops;
    }
}

static int trace_load(const char *path, trace *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s:1:1: cannot open\n", path);
        return 2;
    }
    char line[1024];
    int caps[1024] = { 0 }, rc = 0, lineno = 0, version = 1, column = 1;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        column = 1;
        trace_row row;
        if (lineno == 1 && strncmp(line, TRACE_MAGIC, strlen(TRACE_MAGIC)) == 0 &&
            (version = trace_version(line)) < 0) {
            fclose(f);
            fprintf(stderr, "%s:1:%zu: a trace version this bench does not know (it reads v1 to v%d)\n",
                    path, strlen(TRACE_MAGIC) + 1, TRACE_VERSION);
            trace_free(t);
            return 2;
        }
        if (strncmp(line, "# machine: ", 11) == 0)
            sscanf(line + 11, "%255[^\n]", t->machine);
        else if (strncmp(line, "# model: ", 9) == 0)
            sscanf(line + 9, "%63s (%511[^)])", t->model, t->model_path);
        else if (strncmp(line, "#task,", 6) == 0 && strncmp(line, "#task,index,", 12) != 0)
            rc = t->ntasks < 1024 ? parse_task_line(t, line) : -1;
        else if (line[0] == '#' || strncmp(line, "task,", 5) == 0)
            continue;
        else if (trace_parse_row(line, version, &row, &column) == 0 && row.task >= 0 &&
                 row.task < t->ntasks)
            rc = push_row(&t->tasks[row.task], &caps[row.task], &row);
        else
            rc = -1;
    }
    fclose(f);
    if (rc == 0)
        column = 1;
    for (int k = 0; rc == 0 && k < t->ntasks; k++)
        if (t->tasks[k].n == 0 || t->tasks[k].best[t->tasks[k].n - 1] <= 0)
            rc = -1;
    if (rc == 0 && t->ntasks == 0)
        rc = -1;
    if (rc == 0) {
        task_bytes(t);
        task_bandwidths(t);
    }
    if (rc) {
        fprintf(stderr, "%s:%d:%d: not a trace (or a task without a valid trial)\n", path, lineno, column);
        trace_free(t);
        rc = 2;
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
    if (b->ntasks > 0)
        memcpy(out->tasks + a->ntasks, b->tasks, (size_t)b->ntasks * sizeof *out->tasks);
    return 0;
}

/* ---- the replay -------------------------------------------------------------------- */

typedef struct task_sim {
    int pos;                     /* trials consumed */
    double clock;                /* own tuning seconds consumed */
    double best;
    int last_improvement, slots, measured_slots, last_slot_trials, nhistory;
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
    FILE *decisions;             /* --decisions: one row per task per judged decision, or NULL */
    const char *trace_id, *policy;
    int seed;
    const trace *model_traces;   /* every trace of the model, this one among them (the
                                    expectation oracle reads the others), or NULL */
    int nmodel_traces;
} sim;

static void trace_name(const trace *t, char *buf, size_t len);

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

/* The task's own seconds at the end of its warm-up (trace_warm_up_end). */
static double warm_up_seconds(const task_trace *t)
{
    return t->seconds[trace_warm_up_end(t->best, t->n)];
}

static void warm_up(sim *s)
{
    for (int k = 0; k < s->tr->ntasks; k++)
        s->clock += advance(s, k, warm_up_seconds(&s->tr->tasks[k]));
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
        st[k] = (dt_sched_task){ .weight = t->count, .flops = t->flops, .peak_gflops = t->peak,
                                 .bytes = t->bytes, .bandwidth_gbs = t->bandwidth,
                                 .cost_model_gflops = ts->pos > 0 ? t->cost_model[ts->pos - 1] : 0,
                                 .group = t->group,
                                 .best_gflops = ts->best, .pred_gflops = ts->pred_gflops,
                                 .pred_ok = ts->pred_ok, .slots = ts->slots,
                                 .measured_slots = ts->measured_slots,
                                 .stale_trials = ts->pos - ts->last_improvement,
                                 .finished = ts->pos - ts->last_improvement >= finish_after,
                                 .exhausted = ts->pos >= task_len(s, k), .nhistory = ts->nhistory };
        memcpy(st[k].latency_history, ts->latency_history, sizeof st[k].latency_history);
    }
}

/* The daemon's dt_run_predict: best-so-far per trial ÷ peak, horizon one
 * slot of the task's last slot's trials ahead. */
/* The curve over the task's own tuning seconds instead of trials: one
 * point per measured batch (its trials share a time), x = 1 + seconds, the
 * horizon one slot past the task's clock. Returns the points written. */
static int seconds_history(const task_trace *t, const task_sim *ts, double *x, double *y)
{
    int m = 0;
    for (int i = 0; i < ts->pos; i++)
        if (i == ts->pos - 1 || t->seconds[i + 1] != t->seconds[i]) {
            x[m] = 1 + t->seconds[i];
            y[m++] = t->best[i] / t->peak;
        }
    return m;
}

static int predict(sim *s, dt_belief_pool *pool, bool over_seconds, double slot_seconds,
                   double *xbuf, double *ybuf, dt_belief_history *hist, dt_belief_prediction *pred)
{
    int n = s->tr->ntasks, off = 0;
    for (int k = 0; k < n; k++) {
        const task_trace *t = &s->tr->tasks[k];
        const task_sim *ts = &s->ts[k];
        if (over_seconds) {
            int m = seconds_history(t, ts, xbuf + off, ybuf + off);
            hist[k] = (dt_belief_history){ .x = xbuf + off, .y = ybuf + off, .n = m,
                                           .horizon = 1 + ts->clock + slot_seconds,
                                           .stream = dt_belief_task_stream(k, m) };
            off += m;
            continue;
        }
        for (int i = 0; i < ts->pos; i++)
            ybuf[off + i] = t->best[i] / t->peak;
        double ahead = ts->last_slot_trials > 0 ? ts->last_slot_trials : BATCH_SIZE;
        hist[k] = (dt_belief_history){ .x = NULL, .y = ybuf + off, .n = ts->pos,
                                       .horizon = ts->pos + ahead,
                                       .stream = dt_belief_task_stream(k, ts->pos) };
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

/* Best-so-far GFLOPS of t at its own second c (0: nothing valid yet). */
static double best_at(const task_trace *t, double c)
{
    double b = 0;
    for (int i = 0; i < t->n && t->seconds[i] <= c; i++)
        b = fmax(b, t->best[i]);
    return b;
}

/* The expectation oracle's cut for task k: its latency now times the mean
 * share of its latency the same task's next slot cut in the model's other
 * traces, from the same second of its own tuning time. It knows how this
 * task learns on average (from recordings this run never sees), which is
 * what a learning-curve belief estimates, but not this recording's draw;
 * a reference for belief quality, not a bound (a predictor that reads this
 * recording's own state, such as its staleness, may rank some draws
 * better). Estimated from 2-4 other recordings. 0 when the model has no
 * other trace. */
static double expected_reduction(const sim *s, int k, double slot_seconds)
{
    const task_trace *t = &s->tr->tasks[k];
    const task_sim *ts = &s->ts[k];
    double sum = 0;
    int n = 0;
    for (int j = 0; j < s->nmodel_traces; j++) {
        const trace *o = &s->model_traces[j];
        if (o == s->tr || k >= o->ntasks || strcmp(o->tasks[k].name, t->name) != 0)
            continue;
        double before = best_at(&o->tasks[k], ts->clock);
        double after = best_at(&o->tasks[k], ts->clock + slot_seconds);
        if (before > 0) {
            sum += 1 - before / after;  /* latency share cut: 1 - L(after) / L(before) */
            n++;
        }
    }
    return n && ts->best > 0 ? t->count * task_latency_ms(t, ts->best) * sum / n : 0;
}

/* How well a policy's prediction ranks tasks, over decisions where every
 * task has had a slot: the true one-slot reduction of the task it chose
 * over the largest one (share), and Spearman's rho between predicted and
 * true reductions of the tasks it may pick. */
typedef struct belief_quality {
    int decisions, rho_decisions;
    double share_sum, rho_sum;
    int expect_decisions, expect_rho_decisions; /* the expectation oracle's, at the same decisions */
    double expect_share_sum, expect_rho_sum;
} belief_quality;

/* Ranks of v[0..n) (1-based, ties share their mean rank) into rank. */
static void ranks(const double *v, int n, double *rank)
{
    for (int i = 0; i < n; i++) {
        int below = 0, equal = 0;
        for (int j = 0; j < n; j++) {
            below += v[j] < v[i];
            equal += v[j] == v[i];
        }
        rank[i] = below + (equal + 1) / 2.0;
    }
}

/* Spearman's rho of x and y: Pearson's r of their ranks; NAN when either is constant. */
static double spearman(const double *x, const double *y, int n)
{
    double rx[n], ry[n], mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    ranks(x, n, rx);
    ranks(y, n, ry);
    for (int i = 0; i < n; i++) {
        mx += rx[i] / n;
        my += ry[i] / n;
    }
    for (int i = 0; i < n; i++) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

static void judge_belief(const sim *s, const dt_scheduler *sched, const dt_sched_task *st,
                         int chosen, double slot_seconds, belief_quality *q)
{
    int n = s->tr->ntasks, m = 0, top = -1;
    double pred[n], truth[n], expect[n], rt = 0;
    for (int k = 0; k < n; k++) {
        if (st[k].slots == 0)
            return;
        if (st[k].exhausted || st[k].finished)
            continue;
        pred[m] = dt_scheduler_predicted_cut(sched, &st[k]);
        if (isnan(pred[m]))
            pred[m] = 0;  /* no prediction: no expected cut */
        truth[m] = true_reduction(s, k, slot_seconds);
        expect[m] = expected_reduction(s, k, slot_seconds);
        if (top < 0 || expect[m] > expect[top])
            top = m;
        rt = fmax(rt, truth[m++]);
    }
    for (int k = 0, i = 0; s->decisions && k < n; k++) {
        if (st[k].exhausted || st[k].finished)
            continue;
        const task_trace *t = &s->tr->tasks[k];
        fprintf(s->decisions, "%s,%s,%s,%d,%d,%s,%.6g,%.6g,%d,%d,%d,%.6g,%.6g,%.6g,%d,%.6g\n",
                s->tr->model, s->trace_id, s->policy, s->seed, s->slot + 1, t->name, pred[i], truth[i],
                st[k].measured_slots, st[k].stale_trials, s->ts[k].last_slot_trials,
                t->count * task_latency_ms(t, st[k].best_gflops), st[k].best_gflops,
                t->flops / (t->bytes > 0 ? t->bytes : NAN), k == chosen, expect[i]);
        i++;
    }
    if (chosen < 0 || rt <= 0)
        return;
    q->decisions++;
    q->share_sum += true_reduction(s, chosen, slot_seconds) / rt;
    double rho = m >= 3 ? spearman(pred, truth, m) : NAN;
    if (isfinite(rho)) {
        q->rho_decisions++;
        q->rho_sum += rho;
    }
    if (s->nmodel_traces > 1) {
        q->expect_decisions++;
        q->expect_share_sum += truth[top] / rt;
        double erho = m >= 3 ? spearman(expect, truth, m) : NAN;
        if (isfinite(erho)) {
            q->expect_rho_decisions++;
            q->expect_rho_sum += erho;
        }
    }
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
    double prior_slots;          /* < 0: the config default */
    bool verbose;                /* belief policies: each slot decision, and what the slot measured */
    bool lomo;                   /* hazard table fitted on the other models' traces */
    bool fit_hazard;             /* print the hazard table fitted on all traces */
    const char *csv_path;
    const char *policies;        /* comma-separated; NULL: all */
    const char *out_dir, *overhead;
    const char *hazard;          /* NULL: the config default */
    const char *prior_hazard;    /* NULL: the config default */
    const char *staleness;       /* NULL: the config default; "" none; "fit": fitted (--lomo) */
    double ceiling;              /* < 0: the config default */
    double bandwidth;            /* GB/s; < 0: the config default; 0 (or "measured"): each
                                    task's measured, STANDIN_BANDWIDTH_GBS where none */
    int headroom;                /* dt_sched_headroom; < 0: the config default */
    bool over_seconds;           /* belief curves over tuning seconds, not trials */
    FILE *csv;                   /* rows model,trace,policy,seed,metric,value; may be NULL */
    const char *decisions_path;  /* --decisions FILE */
    FILE *decisions;             /* its rows (DECISION_COLUMNS); may be NULL */
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
    dt_belief_params p = cfg->belief;
    dt_error err = { 0 };
    p.seed = seed;
    p.threads = threads;
    int rc = dt_belief_pool_new(&p, pool, &err);
    if (rc)
        fprintf(stderr, "sched_bench: %s\n", err.msg);
    return rc;
}

/* The scheduler settings a replay runs with: the config's defaults under
 * the command line's options. */
static dt_scheduler_params bench_scheduler_params(const bench_opts *o)
{
    dt_config cfg;
    dt_config_defaults(&cfg);
    dt_scheduler_params p = cfg.scheduler;
    p.finish_after = o->finish_after;
    if (o->hazard)
        snprintf(p.hazard, sizeof p.hazard, "%s", o->hazard);
    if (o->prior_hazard)
        snprintf(p.prior_hazard, sizeof p.prior_hazard, "%s", o->prior_hazard);
    if (o->staleness)
        snprintf(p.staleness, sizeof p.staleness, "%s", o->staleness);
    if (o->ceiling >= 0)
        p.ceiling = o->ceiling;
    if (o->bandwidth >= 0)
        p.bandwidth_gbs = o->bandwidth;
    if (o->headroom >= 0)
        p.headroom = (dt_sched_headroom)o->headroom;
    if (o->ucb_c >= 0)
        p.ucb_c = o->ucb_c;
    if (o->prior_slots >= 0)
        p.prior_slots = o->prior_slots;
    return p;
}

/* One replay of policy (NULL: the oracle) with scheduler seed `seed`. */
static int replay(const trace *tr, const char *policy, uint64_t seed, const bench_opts *o,
                  double trial_frac, const trace *model_traces, int nmodel_traces, run_result *res,
                  belief_quality *quality)
{
    int n = tr->ntasks, rc = 0;
    memset(res, 0, sizeof *res);
    dt_config cfg;
    dt_config_defaults(&cfg);
    cfg.scheduler = bench_scheduler_params(o);
    dt_error err = { 0 };
    dt_scheduler *sched = NULL;
    dt_belief_pool *pool = NULL;
    char trace_id[128];
    trace_name(tr, trace_id, sizeof trace_id);
    sim s = { .tr = tr, .ts = calloc((size_t)n, sizeof(task_sim)), .trial_frac = trial_frac,
              .decisions = policy ? o->decisions : NULL, .trace_id = trace_id, .policy = policy,
              .seed = (int)seed, .model_traces = model_traces,
              .nmodel_traces = nmodel_traces };
    dt_sched_task *st = calloc((size_t)n, sizeof *st);
    double *scores = calloc((size_t)n, sizeof *scores);
    dt_belief_history *hist = calloc((size_t)n, sizeof *hist);
    dt_belief_prediction *pred = calloc((size_t)n, sizeof *pred);
    size_t total = 0;
    for (int k = 0; k < n; k++)
        total += (size_t)tr->tasks[k].n;
    double *ybuf = malloc((total + 1) * sizeof *ybuf), *xbuf = malloc((total + 1) * sizeof *xbuf);
    if (!s.ts || !st || !scores || !hist || !pred || !ybuf || !xbuf) {
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
        double t0 = dt_now_seconds(), decision_ms;
        if (belief && (rc = predict(&s, pool, o->over_seconds, o->slot_seconds, xbuf, ybuf, hist, pred)))
            break;
        int k;
        if (sched) {
            fill_sched(&s, o->finish_after, st);
            k = dt_scheduler_pick(sched, s.slot + 1, st, n, scores);
            decision_ms = (dt_now_seconds() - t0) * 1e3;
            if (quality && dt_scheduler_predicts(sched))
                judge_belief(&s, sched, st, k, o->slot_seconds, quality);
        } else {
            k = oracle_pick(&s, o->slot_seconds);
            decision_ms = (dt_now_seconds() - t0) * 1e3;
        }
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
        if (belief && o->verbose)
            printf("      task %d's slot %d measured %d trials\n", k, ts->slots, ts->last_slot_trials);
        ts->measured_slots += ts->pos > before;
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
    free(xbuf);
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

/* The policies in list (comma-separated; NULL: every policy), sequential
 * always among them (it defines L*). */
static int split_policies(char names[][32], const char *list)
{
    char every[512];
    dt_names_join(dt_scheduler_policy_at, every, sizeof every);
    const char *all = list ? list : every;
    int n = 0;
    if (list && !strstr(list, "sequential"))
        snprintf(names[n++], 32, "sequential");
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
            int first = trace_warm_up_end(tt->best, tt->n), li = 0;
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

/* ---- the exact optimum and the hazard table -------------------------------------- */

/* Task k alone, slot after slot from the end of its warm-up to the end of
 * its trace: after s slots its weighted latency lat[s] (ms), the seconds
 * those slots took cost[s], and the trials slot s measured trials[s]. Each
 * array holds *nslots + 1 entries (trials: *nslots); the caller frees them.
 * *warm gets the task's warm-up seconds. stale (may be NULL) gets each
 * slot's staleness at its start, estimate (may be NULL) the cost model's
 * estimate then (0: none). */
static int task_slots(const trace *tr, int k, double slot_seconds, double **lat, double **cost,
                      int **trials, int **stale, double **estimate, int *nslots, double *warm)
{
    const task_trace *t = &tr->tasks[k];
    task_sim *ts = calloc((size_t)tr->ntasks, sizeof *ts);
    sim s = { .tr = tr, .ts = ts, .trial_frac = 1.0 };
    int cap = (int)ceil(t->seconds[t->n - 1] / slot_seconds) + 2;
    *lat = malloc((size_t)(cap + 1) * sizeof **lat);
    *cost = malloc((size_t)(cap + 1) * sizeof **cost);
    *trials = malloc((size_t)(cap + 1) * sizeof **trials);
    int *st = malloc((size_t)(cap + 1) * sizeof *st);
    double *est = malloc((size_t)(cap + 1) * sizeof *est);
    if (!ts || !*lat || !*cost || !*trials || !st || !est) {
        free(ts);
        free(st);
        free(est);
        return -1;
    }
    *warm = advance(&s, k, warm_up_seconds(t));
    int n = 0;
    (*lat)[0] = t->count * task_latency_ms(t, ts[k].best);
    (*cost)[0] = 0;
    while (ts[k].pos < t->n && n < cap) {
        int before = ts[k].pos;
        st[n] = before - ts[k].last_improvement;
        est[n] = before > 0 ? t->cost_model[before - 1] : 0;
        double spent = advance(&s, k, ts[k].clock + slot_seconds);
        (*trials)[n++] = ts[k].pos - before;
        (*lat)[n] = t->count * task_latency_ms(t, ts[k].best);
        (*cost)[n] = (*cost)[n - 1] + spent;
    }
    *nslots = n;
    free(ts);
    if (stale)
        *stale = st;
    else
        free(st);
    if (estimate)
        *estimate = est;
    else
        free(est);
    return 0;
}

/* Least run seconds (warm-up included) to each target latency: dt_sched_optimum. */
static int optimum_times(const trace *tr, double slot_seconds, const double *targets, int ntargets,
                         double *seconds)
{
    int n = tr->ntasks, rc = 0;
    dt_sched_curve *curves = calloc((size_t)n, sizeof *curves);
    double **lat = calloc((size_t)n, sizeof *lat), **cost = calloc((size_t)n, sizeof *cost);
    int **trials = calloc((size_t)n, sizeof *trials);
    double warm = 0;
    if (!curves || !lat || !cost || !trials)
        rc = -1;
    for (int k = 0; rc == 0 && k < n; k++) {
        double w;
        rc = task_slots(tr, k, slot_seconds, &lat[k], &cost[k], &trials[k], NULL, NULL,
                        &curves[k].nslots, &w);
        curves[k].latency = lat[k];
        curves[k].cost = cost[k];
        warm += w;
    }
    dt_error err = { 0 };
    if (rc == 0 && (rc = dt_sched_optimum(curves, n, targets, ntargets, seconds, &err)))
        fprintf(stderr, "sched_bench: %s\n", err.msg);
    for (int i = 0; rc == 0 && i < ntargets; i++)
        seconds[i] += warm;
    for (int k = 0; k < n && lat && cost && trials; k++) {
        free(lat[k]);
        free(cost[k]);
        free(trials[k]);
    }
    free(curves);
    free(lat);
    free(cost);
    free(trials);
    return rc;
}

#define HAZARD_ENTRIES 8         /* fitted entries; the last averages every later slot */

#define STALE_ENTRIES 5          /* fitted staleness buckets; the last holds for staler tasks */
#define FIT_ROUNDS 50            /* alternating least-squares rounds of the joint fit */

typedef struct cut_sample {
    int entry, bucket;           /* hazard entry (measured slots) and staleness bucket */
    double x, y;                 /* headroom and the share of its latency the slot cut */
} cut_sample;

/* Makes h[0..n) non-increasing by weighted isotonic regression (pool
 * adjacent violators, weights w): the least-squares table under the rule
 * that a task's later slot is not expected to cut a larger share than an
 * earlier one. Later entries rest on few slots (only tasks with many
 * measured slots reach them), and their noise made the fitted table rise
 * again (its 6th entry above its 5th), so dynatune kept going back to
 * tasks that had just cut nothing. */
static void make_non_increasing(double *h, const double *w, int n)
{
    double value[HAZARD_ENTRIES], weight[HAZARD_ENTRIES];
    int count[HAZARD_ENTRIES], blocks = 0;
    for (int e = 0; e < n; e++) {
        value[blocks] = h[e];
        weight[blocks] = w[e] > 0 ? w[e] : 1e-12;
        count[blocks++] = 1;
        while (blocks > 1 && value[blocks - 2] < value[blocks - 1]) {
            double sum = weight[blocks - 2] + weight[blocks - 1];
            value[blocks - 2] = (value[blocks - 2] * weight[blocks - 2] +
                                 value[blocks - 1] * weight[blocks - 1]) / sum;
            weight[blocks - 2] = sum;
            count[blocks - 2] += count[blocks - 1];
            blocks--;
        }
    }
    for (int b = 0, e = 0; b < blocks; b++)
        for (int i = 0; i < count[b]; i++)
            h[e++] = value[b];
}

/* The hazard table from traces (all but those of model `skip`, may be NULL):
 * entry m is the least-squares factor h(m) of y = h(m) x over every task's
 * (m+1)-th slot that measured at least one trial, made non-increasing in m
 * (make_non_increasing), y the share of its
 * latency the slot cut and x its headroom dt_sched_prior_share(h = 1,
 * ceiling, bandwidth, headroom source; the cost model's estimate at the
 * slot's start) (1 without a ceiling: h(m) is then the mean share); into text,
 * comma-separated. With stale_text, y = h(m) g(b) x is fitted instead, b
 * the task's staleness bucket at the slot's start (dt_sched_stale_bucket),
 * by alternating least squares; g is scaled so that its largest entry is 1
 * (h takes the scale) and goes into stale_text. */
static int fit_hazard(const trace *traces, int ntraces, const char *skip, double slot_seconds,
                      double ceiling, double bandwidth, dt_sched_headroom headroom, char *text,
                      size_t len, char *stale_text, size_t stale_len)
{
    cut_sample *smp = NULL;
    size_t ns = 0, cap = 0;
    double one = 1;
    for (int t = 0; t < ntraces; t++) {
        if (skip && strcmp(traces[t].model, skip) == 0)
            continue;
        for (int k = 0; k < traces[t].ntasks; k++) {
            const task_trace *tt = &traces[t].tasks[k];
            double *lat, *cost, *estimate, warm;
            int *trials, *stale, nslots, m = 0;
            if (task_slots(&traces[t], k, slot_seconds, &lat, &cost, &trials, &stale, &estimate,
                           &nslots, &warm)) {
                free(smp);
                return -1;
            }
            for (int j = 0; j < nslots; j++) {
                if (trials[j] == 0)
                    continue;
                dt_sched_task st = { .weight = tt->count, .flops = tt->flops, .peak_gflops = tt->peak,
                                     .bytes = tt->bytes, .bandwidth_gbs = tt->bandwidth,
                                     .cost_model_gflops = estimate[j],
                                     .best_gflops = tt->flops / (lat[j] / tt->count * 1e6) };
                if (ns == cap) {
                    cap = cap ? 2 * cap : 1024;
                    cut_sample *grown = realloc(smp, cap * sizeof *smp);
                    if (!grown) {
                        free(smp);
                        return -1;
                    }
                    smp = grown;
                }
                int b = dt_sched_stale_bucket(stale[j]);
                smp[ns++] = (cut_sample){
                    .entry = m < HAZARD_ENTRIES ? m : HAZARD_ENTRIES - 1,
                    .bucket = b < STALE_ENTRIES ? b : STALE_ENTRIES - 1,
                    .x = dt_sched_prior_share(&st, &one, 1, NULL, 0, ceiling, bandwidth, headroom),
                    .y = (lat[j] - lat[j + 1]) / lat[j],
                };
                m++;
            }
            free(lat);
            free(cost);
            free(trials);
            free(stale);
            free(estimate);
        }
    }
    double h[HAZARD_ENTRIES] = { 0 }, g[STALE_ENTRIES];
    for (int b = 0; b < STALE_ENTRIES; b++)
        g[b] = 1;
    for (int round = 0; round < (stale_text ? FIT_ROUNDS : 1); round++) {
        double xy[HAZARD_ENTRIES] = { 0 }, xx[HAZARD_ENTRIES] = { 0 };
        for (size_t i = 0; i < ns; i++) {
            double x = smp[i].x * g[smp[i].bucket];
            xy[smp[i].entry] += x * smp[i].y;
            xx[smp[i].entry] += x * x;
        }
        for (int e = 0; e < HAZARD_ENTRIES; e++)
            h[e] = xx[e] > 0 ? xy[e] / xx[e] : 0;
        make_non_increasing(h, xx, HAZARD_ENTRIES);
        if (!stale_text)
            break;
        double gy[STALE_ENTRIES] = { 0 }, gx[STALE_ENTRIES] = { 0 }, gmax = 0;
        for (size_t i = 0; i < ns; i++) {
            double x = smp[i].x * h[smp[i].entry];
            gy[smp[i].bucket] += x * smp[i].y;
            gx[smp[i].bucket] += x * x;
        }
        for (int b = 0; b < STALE_ENTRIES; b++)
            gmax = fmax(gmax, g[b] = gx[b] > 0 ? fmax(gy[b] / gx[b], 0) : g[b]);
        for (int b = 0; gmax > 0 && b < STALE_ENTRIES; b++)
            g[b] /= gmax;
    }
    free(smp);
    if (ns == 0 || h[0] <= 0)
        return -1;
    size_t at = 0;
    for (int e = 0; e < HAZARD_ENTRIES && h[e] > 0 && at < len; e++)
        at += (size_t)snprintf(text + at, len - at, "%s%.4f", e ? "," : "", fmin(h[e], 1));
    at = 0;
    for (int b = 0; stale_text && b < STALE_ENTRIES && at < stale_len; b++)
        at += (size_t)snprintf(stale_text + at, stale_len - at, "%s%.4f", b ? "," : "", g[b]);
    return 0;
}

/* ---- metrics ------------------------------------------------------------------------ */

static const double eps_targets[] = { 0.10, 0.05, 0.02, 0.01 };
#define NEPS ((int)(sizeof eps_targets / sizeof eps_targets[0]))
static const double area_fracs[] = { 0.25, 0.5, 1.0 };
#define NAREA ((int)(sizeof area_fracs / sizeof area_fracs[0]))

enum { M_TIME = 0, M_AREA = NEPS, M_SHARE = NEPS + NAREA, M_RHO, M_EXP_SHARE, M_EXP_RHO, NMETRICS };
static const char *const metric_names[NMETRICS] = {
    "time_to_10pct", "time_to_5pct", "time_to_2pct", "time_to_1pct",
    "area_25", "area_50", "area_100", "belief_share", "belief_rho", "expectation_share",
    "expectation_rho",
};

/* Mean latency (ms) of the step curve r over [from, to]; the curve's last
 * value holds past its end. */
static double mean_latency(const run_result *r, double from, double to)
{
    double area = 0;
    for (int i = 0; i < r->npoints; i++) {
        double a = fmax(r->x[i], from), b = i + 1 < r->npoints ? fmin(r->x[i + 1], to) : to;
        if (b > a)
            area += r->y[i] * (b - a);
    }
    return to > from ? area / (to - from) : r->y[0];
}

/* The metrics of one run into m[0..NMETRICS) (NAN where they do not apply). */
static void run_metrics(const run_result *r, double lstar, double warm_end, double seq_end,
                        const belief_quality *q, double *m)
{
    for (int e = 0; e < NEPS; e++)
        m[M_TIME + e] = time_to(r, (1 + eps_targets[e]) * lstar);
    for (int a = 0; a < NAREA; a++)
        m[M_AREA + a] = mean_latency(r, warm_end, warm_end + area_fracs[a] * (seq_end - warm_end));
    m[M_SHARE] = q && q->decisions ? q->share_sum / q->decisions : NAN;
    m[M_RHO] = q && q->rho_decisions ? q->rho_sum / q->rho_decisions : NAN;
    m[M_EXP_SHARE] = q && q->expect_decisions ? q->expect_share_sum / q->expect_decisions : NAN;
    m[M_EXP_RHO] = q && q->expect_rho_decisions ? q->expect_rho_sum / q->expect_rho_decisions : NAN;
}

/* Trace name: the file's base name without .csv. */
static void trace_name(const trace *t, char *buf, size_t len)
{
    const char *slash = strrchr(t->path, '/'), *base = slash ? slash + 1 : t->path;
    size_t n = strlen(base) < len - 1 ? strlen(base) : len - 1;
    memcpy(buf, base, n);
    buf[n] = '\0';
    char *dot = strstr(buf, ".csv");
    if (dot)
        *dot = '\0';
}

/* Median and interval over runs of v[run], skipping NAN; "-" when none. */
static void cell(char *buf, size_t len, const double *v, int nruns, double *scratch)
{
    int n = 0;
    for (int i = 0; i < nruns; i++)
        if (!isnan(v[i]))
            scratch[n++] = v[i];
    if (n == 0)
        snprintf(buf, len, "-");
    else
        format_interval(buf, len, scratch, n);
}

/* Per-model medians kept for the summary over models. */
#define MAX_MODELS 16
typedef struct summary {
    int nmodels, nrows;
    char model[MAX_MODELS][64], rows[MAX_POLICIES + 2][32];
    double median[MAX_MODELS][MAX_POLICIES + 2][NMETRICS];   /* share / ratio, per model */
} summary;

static double median_of(const double *v, int nruns, double *scratch)
{
    int n = 0;
    for (int i = 0; i < nruns; i++)
        if (!isnan(v[i]))
            scratch[n++] = v[i];
    return n ? quantile(scratch, n, 0.5) : NAN;
}

/* vals[(row * NMETRICS + metric) * nruns + run]; rows: policies, oracle, optimum. */
static void print_tables(const char *model, char rows[][32], int nrows, const double *vals, int nruns,
                         summary *sum)
{
    int oracle = nrows - 2, optimum = nrows - 1;
    double *share = malloc((size_t)nruns * 2 * sizeof *share), *scratch = share + nruns;
    int mi = sum->nmodels < MAX_MODELS ? sum->nmodels++ : MAX_MODELS - 1;
    if (!share)
        return;
    snprintf(sum->model[mi], sizeof sum->model[mi], "%s", model);
    sum->nrows = nrows;
    printf("  time to (1 + eps) L*: the exact optimum's time / the policy's (1 = as soon as the\n"
           "  optimum); optimum's seconds in the last row\n  %-15s", "policy");
    for (int e = 0; e < NEPS; e++) {
        char head[32];
        snprintf(head, sizeof head, "eps %g %%", 100 * eps_targets[e]);
        printf(" %22s", head);
    }
    printf("\n");
    for (int p = 0; p < nrows; p++) {
        snprintf(sum->rows[p], sizeof sum->rows[p], "%s", rows[p]);
        printf("  %-15s", rows[p]);
        for (int e = 0; e < NEPS; e++) {
            const double *t = &vals[((size_t)p * NMETRICS + M_TIME + e) * nruns];
            const double *opt = &vals[((size_t)optimum * NMETRICS + M_TIME + e) * nruns];
            for (int r = 0; r < nruns; r++)
                share[r] = p == optimum ? t[r] : isinf(t[r]) ? 0 : opt[r] / t[r];
            char c[64];
            cell(c, sizeof c, share, nruns, scratch);
            printf(" %22s", c);
            sum->median[mi][p][M_TIME + e] = median_of(share, nruns, scratch);
        }
        printf("\n");
    }
    printf("  anytime: mean model latency over the first 25 / 50 / 100 %% of sequential's time,\n"
           "  / the oracle's (oracle's ms in its row)\n  %-15s %22s %22s %22s\n", "policy",
           "area 25 %", "area 50 %", "area 100 %");
    for (int p = 0; p < optimum; p++) {
        printf("  %-15s", rows[p]);
        for (int a = 0; a < NAREA; a++) {
            const double *v = &vals[((size_t)p * NMETRICS + M_AREA + a) * nruns];
            const double *o = &vals[((size_t)oracle * NMETRICS + M_AREA + a) * nruns];
            for (int r = 0; r < nruns; r++)
                share[r] = p == oracle ? v[r] : v[r] / o[r];
            char c[64];
            cell(c, sizeof c, share, nruns, scratch);
            printf(" %22s", c);
            sum->median[mi][p][M_AREA + a] = p == oracle ? 1.0 : median_of(share, nruns, scratch);
        }
        printf("\n");
    }
    printf("  predictions, per decision after every task's first slot (mean per run): share of the\n"
           "  best true one-slot cut that the chosen task made; Spearman's rho predicted vs true;\n"
           "  'expect': the expectation oracle at the same decisions (each task's mean cut over the\n"
           "  model's other traces from the same second of its tuning)\n");
    for (int p = 0; p < nrows; p++) {
        for (int q = M_SHARE; q <= M_EXP_RHO; q++)   /* the oracle and the optimum predict nothing */
            sum->median[mi][p][q] = p < oracle ? median_of(&vals[((size_t)p * NMETRICS + q) * nruns], nruns,
                                                           scratch) : NAN;
        if (p >= oracle)
            continue;
        for (int q = M_SHARE; q <= M_EXP_SHARE; q += M_EXP_SHARE - M_SHARE) {
            if (isnan(sum->median[mi][p][q]))
                continue;
            char a[64], b[64], name[48];
            cell(a, sizeof a, &vals[((size_t)p * NMETRICS + q) * nruns], nruns, scratch);
            cell(b, sizeof b, &vals[((size_t)p * NMETRICS + q + 1) * nruns], nruns, scratch);
            snprintf(name, sizeof name, "%.31s%s", rows[p], q == M_SHARE ? "" : " expect");
            printf("  %-21s share %22s   rho %22s\n", name, a, b);
        }
    }
    free(share);
}

/* Over models: the median and the least of the per-model medians of the
 * time shares, the largest area ratio, mean belief share and rho. */
static void print_summary(const summary *sum)
{
    if (sum->nmodels < 1)
        return;
    printf("\nsummary over %d model(s) (per-model medians): time share of the optimum, median over\n"
           "models / least model; area / oracle's, largest model; belief share and rho, and the\n"
           "expectation oracle's at the same decisions (e.), mean\n",
           sum->nmodels);
    printf("  %-15s %13s %13s %13s %13s %9s %9s %9s %7s %7s %7s %7s\n", "policy", "10 %", "5 %",
           "2 %", "1 %", "area 25", "area 50", "area 100", "share", "rho", "e.share", "e.rho");
    for (int p = 0; p < sum->nrows - 1; p++) {
        printf("  %-15s", sum->rows[p]);
        double v[MAX_MODELS];
        for (int e = 0; e < NEPS; e++) {
            for (int m = 0; m < sum->nmodels; m++)
                v[m] = sum->median[m][p][M_TIME + e];
            double med = quantile(v, sum->nmodels, 0.5), lo = quantile(v, sum->nmodels, 0);
            printf("   %4.2f / %4.2f", med, lo);
        }
        for (int a = 0; a < NAREA; a++) {
            double hi = -INFINITY;
            for (int m = 0; m < sum->nmodels; m++)
                hi = fmax(hi, sum->median[m][p][M_AREA + a]);
            printf(" %9.3f", hi);
        }
        for (int q = M_SHARE; q <= M_EXP_RHO; q++) {
            double mean = 0;
            for (int m = 0; m < sum->nmodels; m++)
                mean += sum->median[m][p][q] / sum->nmodels;
            printf(" %7.2f", mean);
        }
        printf("\n");
    }
}

static void write_csv(FILE *f, const char *model, const char *trace_id, const char *row,
                      uint64_t seed, const double *m)
{
    for (int i = 0; f && i < NMETRICS; i++)
        if (!isnan(m[i]))
            fprintf(f, "%s,%s,%s,%llu,%s,%.6g\n", model, trace_id, row, (unsigned long long)seed,
                    metric_names[i], m[i]);
}

/* All policies, the oracle and the exact optimum on one model's traces;
 * `all` (nall traces) is every trace given, for the leave-one-model-out
 * hazard table. */
static int bench_model(trace *traces, int ntraces, const trace *all, int nall, const bench_opts *o,
                       summary *sum)
{
    char rows[MAX_POLICIES + 2][32];
    int np = split_policies(rows, o->policies);
    int seq = find_policy(rows, np, "sequential");
    snprintf(rows[np], sizeof rows[np], "oracle");
    snprintf(rows[np + 1], sizeof rows[np + 1], "optimum");
    int nrows = np + 2, nruns = ntraces * o->seeds;
    bench_opts mo = *o;
    char hazard[160], prior[160], stale[160];
    if (o->lomo) {
        dt_scheduler_params sp = bench_scheduler_params(o);
        double ceiling = sp.ceiling, bandwidth = sp.bandwidth_gbs;
        dt_sched_headroom headroom = sp.headroom;
        bool with_stale = o->staleness && strcmp(o->staleness, "fit") == 0;
        if (fit_hazard(all, nall, traces[0].model, o->slot_seconds, 0, 0, DT_SCHED_HEADROOM_ROOFLINE,
                       hazard, sizeof hazard, NULL, 0) ||
            fit_hazard(all, nall, traces[0].model, o->slot_seconds, ceiling, bandwidth, headroom,
                       prior, sizeof prior, with_stale ? stale : NULL, sizeof stale)) {
            fprintf(stderr, "sched_bench: --lomo: no other model's traces to fit the hazard table on\n");
            return -1;
        }
        mo.hazard = hazard;
        mo.prior_hazard = prior;
        if (with_stale)
            mo.staleness = stale;
    }
    double *vals = malloc((size_t)nrows * NMETRICS * (size_t)nruns * sizeof *vals);
    run_result first[MAX_POLICIES + 1];
    memset(first, 0, sizeof first);
    int rc = !vals || seq < 0 ? -1 : 0;
    double lstar0 = 0, seq_time0 = 0;
    for (int t = 0; rc == 0 && t < ntraces; t++) {
        char trace_id[128];
        trace_name(&traces[t], trace_id, sizeof trace_id);
        for (int sd = 0; rc == 0 && sd < o->seeds; sd++) {
            int run = t * o->seeds + sd, made = 0;
            run_result rr[MAX_POLICIES + 1];
            belief_quality q[MAX_POLICIES + 1];
            memset(q, 0, sizeof q);
            for (int p = 0; rc == 0 && p <= np; p++, made++)
                rc = replay(&traces[t], p < np ? rows[p] : NULL, (uint64_t)sd + 1, &mo, 1.0, traces,
                            ntraces, &rr[p], &q[p]);
            /* L*: sequential's final latency on this trace (every task tuned
             * until finish_after trials without improvement, in model order). */
            double lstar = rc ? 0 : rr[seq].y[rr[seq].npoints - 1];
            double warm_end = rc ? 0 : rr[seq].x[0], seq_end = rc ? 0 : rr[seq].x[rr[seq].npoints - 1];
            double targets[NEPS], m[NMETRICS];
            for (int e = 0; e < NEPS; e++)
                targets[e] = (1 + eps_targets[e]) * lstar;
            if (rc == 0 && run == 0) {
                lstar0 = lstar;
                seq_time0 = seq_end;
            }
            for (int p = 0; rc == 0 && p <= np; p++) {
                run_metrics(&rr[p], lstar, warm_end, seq_end, &q[p], m);
                for (int i = 0; i < NMETRICS; i++)
                    vals[((size_t)p * NMETRICS + i) * nruns + run] = m[i];
                write_csv(o->csv, traces[t].model, trace_id, rows[p], (uint64_t)sd + 1, m);
            }
            if (rc == 0 && (rc = optimum_times(&traces[t], o->slot_seconds, targets, NEPS, m)) == 0) {
                for (int i = NEPS; i < NMETRICS; i++)
                    m[i] = NAN;
                for (int i = 0; i < NMETRICS; i++)
                    vals[((size_t)(np + 1) * NMETRICS + i) * nruns + run] = m[i];
                write_csv(o->csv, traces[t].model, trace_id, "optimum", (uint64_t)sd + 1, m);
            }
            for (int p = 0; p < made; p++) {
                if (rc == 0 && run == 0)
                    first[p] = rr[p];
                else
                    run_result_free(&rr[p]);
            }
        }
    }
    if (rc == 0) {
        printf("\nmodel %s: %d tasks, %d trace(s), %d scheduler seeds, slot %g s, finish_after %d\n",
               traces[0].model, traces[0].ntasks, ntraces, o->seeds, o->slot_seconds, o->finish_after);
        printf("  machine: %s\n", traces[0].machine);
        printf("  hazard table %s, dynatune's prior %s, staleness %s%s, headroom %s\n",
               mo.hazard ? mo.hazard : "config default",
               mo.prior_hazard ? mo.prior_hazard : "config default",
               !mo.staleness ? "config default" : mo.staleness[0] ? mo.staleness : "none",
               o->lomo ? " (fitted on the other models' traces)" : "",
               o->headroom >= 0 ? dt_sched_headroom_at(o->headroom) : "config default");
        printf("  L* = sequential's final latency on each trace (first trace: %.4f ms at %.0f s);\n"
               "  median [2.5th, 97.5th percentile] over %d runs (trace seeds x scheduler seeds)\n",
               lstar0, seq_time0, nruns);
        print_tables(traces[0].model, rows, nrows, vals, nruns, sum);
        print_curve_shape(traces, ntraces);
        draw_curves(traces[0].model, first, rows, np, o);
    }
    for (int p = 0; p <= np; p++)
        run_result_free(&first[p]);
    free(vals);
    return rc;
}

/* Slot decision time of the policy (belief of every task where it needs
 * one + pick) on traces concatenated (A.csv,B.csv,...; 31 tasks from
 * squeezenet1_1 and resnet18). */
static int overhead_of(const trace *both, const char *policy, const bench_opts *o)
{
    run_result r = { 0 };
    int rc = replay(both, policy, 1, o, 1.0, NULL, 0, &r, NULL);
    if (rc == 0 && r.ndecisions > 0) {
        double med = quantile(r.decision_ms, r.ndecisions, 0.5);
        double p95 = quantile(r.decision_ms, r.ndecisions, 0.95);
        printf("  %-12s %5d decisions: median %8.3f ms, p95 %8.3f ms = %.4f %% / %.4f %% of a %g s "
               "slot\n", policy, r.ndecisions, med, p95, med / (o->slot_seconds * 1e3) * 100,
               p95 / (o->slot_seconds * 1e3) * 100, o->slot_seconds);
    }
    run_result_free(&r);
    return rc;
}

static int bench_overhead(const bench_opts *o)
{
    char list[2048];
    snprintf(list, sizeof list, "%s", o->overhead);
    trace parts[MAX_TRACES], both = { 0 };
    int nparts = 0, rc = 0;
    for (char *save = NULL, *path = strtok_r(list, ",", &save); path && rc == 0;
         path = strtok_r(NULL, ",", &save)) {
        if (nparts == MAX_TRACES || trace_load(path, &parts[nparts]))
            rc = -1;
        else
            nparts++;
    }
    for (int i = 0; rc == 0 && i < nparts; i++) {
        trace joined;
        if (i == 0) {
            rc = trace_concat(&parts[0], &(trace){ 0 }, &joined);
        } else {
            rc = trace_concat(&both, &parts[i], &joined);
            free(both.tasks); /* the task arrays belong to the parts */
        }
        both = joined;
    }
    if (rc == 0) {
        printf("\noverhead: slot decision on %d tasks (%d trace(s) concatenated), %d belief "
               "thread(s); CPU of a shared machine\n", both.ntasks, nparts, o->threads);
        char names[MAX_POLICIES][32];
        int np = split_policies(names, o->policies);
        for (int p = 0; rc == 0 && p < np; p++)
            if (strcmp(names[p], "sequential") != 0)
                rc = overhead_of(&both, names[p], o);
    }
    free(both.tasks);
    for (int i = 0; i < nparts; i++)
        trace_free(&parts[i]);
    return rc;
}

#define HEADROOM_UNKNOWN (-2)

/* --headroom's value: a dt_sched_headroom by its name, HEADROOM_UNKNOWN. */
static int headroom_by_name(const char *name)
{
    for (int i = 0; dt_sched_headroom_at(i); i++)
        if (strcmp(dt_sched_headroom_at(i), name) == 0)
            return i;
    return HEADROOM_UNKNOWN;
}

static int parse_args(int argc, char **argv, bench_opts *o, const char **paths, int *npaths)
{
    *o = (bench_opts){ .slot_seconds = 10, .seeds = 5, .finish_after = 200, .threads = 2,
                       .ucb_c = -1, .prior_slots = -1, .ceiling = -1, .bandwidth = -1, .headroom = -1,
                       .verbose = false, .out_dir = "bench/out", .overhead = NULL };
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
        else if (strcmp(argv[i], "--prior-slots") == 0 && v)
            o->prior_slots = atof(argv[++i]);
        else if (strcmp(argv[i], "--verbose") == 0)
            o->verbose = true;
        else if (strcmp(argv[i], "--overhead") == 0 && v)
            o->overhead = argv[++i];
        else if (strcmp(argv[i], "--hazard") == 0 && v)
            o->hazard = argv[++i];
        else if (strcmp(argv[i], "--prior-hazard") == 0 && v)
            o->prior_hazard = argv[++i];
        else if (strcmp(argv[i], "--staleness") == 0 && v)
            o->staleness = argv[++i];
        else if (strcmp(argv[i], "--ceiling") == 0 && v)
            o->ceiling = atof(argv[++i]);
        else if (strcmp(argv[i], "--belief-seconds") == 0)
            o->over_seconds = true;
        else if (strcmp(argv[i], "--bandwidth") == 0 && v && strcmp(argv[i + 1], "measured") == 0)
            o->bandwidth = 0, i++;
        else if (strcmp(argv[i], "--bandwidth") == 0 && v)
            o->bandwidth = atof(argv[++i]);
        else if (strcmp(argv[i], "--headroom") == 0 && v)
            o->headroom = headroom_by_name(argv[++i]);
        else if (strcmp(argv[i], "--policies") == 0 && v)
            o->policies = argv[++i];
        else if (strcmp(argv[i], "--lomo") == 0)
            o->lomo = true;
        else if (strcmp(argv[i], "--fit-hazard") == 0)
            o->fit_hazard = true;
        else if (strcmp(argv[i], "--csv") == 0 && v)
            o->csv_path = argv[++i];
        else if (strcmp(argv[i], "--decisions") == 0 && v)
            o->decisions_path = argv[++i];
        else if (argv[i][0] != '-' && *npaths < MAX_TRACES)
            paths[(*npaths)++] = argv[i];
        else
            return -1;
    }
    if (o->slot_seconds <= 0 || o->seeds < 1 || o->finish_after < 1 || o->threads < 1)
        return -1;
    if (o->staleness && strcmp(o->staleness, "fit") == 0 && !o->lomo)
        return -1;  /* only --lomo fits tables per model */
    if (o->headroom == HEADROOM_UNKNOWN)
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
                        "[--threads T] [--ucb-c C] [--prior-slots M0] [--verbose] [--out DIR] [--csv FILE] "
                        "[--policies A,B,...] [--hazard H1,H2,...] [--prior-hazard H1,H2,...] [--staleness G1,G2,...|\"\"|fit] [--ceiling C] [--bandwidth GBS|measured] [--headroom roofline|cost_model] [--belief-seconds] [--lomo] [--fit-hazard] "
                        "[--decisions FILE] [--overhead A.csv,B.csv,...] TRACE.csv...\n");
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
    dt_scheduler_params sp = bench_scheduler_params(&o);
    if (rc == 0 && sp.bandwidth_gbs == 0)
        for (int i = 0; i < npaths; i++)
            for (int k = 0; k < traces[i].ntasks; k++)
                if (traces[i].tasks[k].bandwidth == 0)
                    traces[i].tasks[k].bandwidth = STANDIN_BANDWIDTH_GBS;
    if (rc == 0 && o.fit_hazard) {
        char table[160], prior[160], stale[160];
        double ceiling = sp.ceiling, bandwidth = sp.bandwidth_gbs;
        dt_sched_headroom headroom = sp.headroom;
        /* the prior as --lomo fits it: with staleness factors only under --staleness fit */
        bool with_stale = o.staleness && strcmp(o.staleness, "fit") == 0;
        snprintf(stale, sizeof stale, "none");
        if (fit_hazard(traces, npaths, NULL, o.slot_seconds, 0, 0, DT_SCHED_HEADROOM_ROOFLINE, table,
                       sizeof table, NULL, 0) == 0 &&
            fit_hazard(traces, npaths, NULL, o.slot_seconds, ceiling, bandwidth, headroom, prior,
                       sizeof prior, with_stale ? stale : NULL, sizeof stale) == 0)
            printf("fitted on %d trace(s), slot %g s: hazard %s; dynatune's prior (ceiling %g, "
                   "bandwidth %g GB/s) %s, staleness %s\n", npaths, o.slot_seconds, table, ceiling,
                   bandwidth, prior, stale);
    }
    if (rc == 0 && o.decisions_path) {
        if (!(o.decisions = fopen(o.decisions_path, "w"))) {
            fprintf(stderr, "sched_bench: cannot write %s\n", o.decisions_path);
            rc = -1;
        } else {
            fprintf(o.decisions, "model,trace,policy,seed,slot,task,predicted_cut_ms,true_cut_ms,"
                                 "measured_slots,stale_trials,last_slot_trials,latency_ms,"
                                 "best_gflops,flops_per_byte,chosen,expected_cut_ms\n");
        }
    }
    if (rc == 0 && o.csv_path) {
        if (!(o.csv = fopen(o.csv_path, "w"))) {
            fprintf(stderr, "sched_bench: cannot write %s\n", o.csv_path);
            rc = -1;
        } else {
            fprintf(o.csv, "model,trace,policy,seed,metric,value\n");
        }
    }
    static summary sum;
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
        rc = bench_model(group, ng, traces, npaths, &o, &sum);
    }
    if (rc == 0 && npaths > 0)
        print_summary(&sum);
    if (o.decisions && fclose(o.decisions) != 0 && rc == 0) {
        fprintf(stderr, "sched_bench: cannot write %s\n", o.decisions_path);
        rc = -1;
    }
    if (o.csv && fclose(o.csv) != 0 && rc == 0) {
        fprintf(stderr, "sched_bench: cannot write %s\n", o.csv_path);
        rc = -1;
    }
    if (rc == 0 && o.overhead)
        rc = bench_overhead(&o);
    for (int i = 0; i < npaths; i++)
        trace_free(&traces[i]);
    return rc == 2 ? 2 : rc ? 1 : 0;
}
