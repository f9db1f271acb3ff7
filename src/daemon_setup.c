/* daemon_setup.c — opening a run: model, spaces, tuners, measurer,
 * scheduler, status server; resuming from the run's own tuning.jsonl and
 * warm-starting from another run's; and closing it all again.
 *
 * Resume replays the log through the same bookkeeping as a live run
 * (dt_run_account, dt_run_close_slot) and feeds every measured config to its
 * task's tuner, which retrains its cost model on them and never proposes a
 * visited config again: nothing completed is lost or measured twice.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dtune/db.h"
#include "dtune/machine.h"
#include "daemon.h"
#include "daemon_internal.h"
#include "run_view.h"
#include "dtune/util.h"
#include "dtune/target.h"

/* The model's task spaces, as every rank of the run builds them
 * (run_view.c): r->tasks allocated here. */
static int open_spaces(dt_run *r, dt_error *err)
{
    int n = r->model->ntasks;
    r->tasks = calloc((size_t)n, sizeof *r->tasks);
    if (!r->tasks)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    for (int k = 0; k < n; k++) {
        int rc = dt_run_view_space_init(r->cfg, &r->model->tasks[k], &r->tasks[k].space, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Whether the set-up's probes must stop: a signal, or the budget spent in
 * the set-up (a 2 s budget must not wait for every task's memory streams). */
static bool probes_cut(const dt_run *r, const atomic_int *stop)
{
    return (stop && atomic_load(stop)) || dt_run_elapsed(r) >= r->cfg->budget.total_seconds;
}

static int open_tasks(dt_run *r, const atomic_int *stop, dt_error *err)
{
    int n = r->model->ntasks, unprobed = 0;
    int rc = open_spaces(r, err);
    if (rc == 0 && r->cfg->tuner.transfer)
        rc = dt_transfer_new(&r->transfer, err);
    if (rc)
        return rc;
    for (int k = 0; k < n; k++) {
        dt_run_task *tr = &r->tasks[k];
        const dt_task *t = &r->model->tasks[k];
        rc = dt_tuner_new(&tr->space, &r->cfg->tuner, r->cfg->seed * 1000003u + (uint64_t)k,
                          &tr->tuner, err);
        if (rc)
            return rc;
        tr->group = dt_task_similarity_group(t);
        dt_daemon_probe probe = { .reference = false };
        dt_task_bound bound;
        if (probes_cut(r, stop))
            unprobed++;      /* its bound stays unknown (peak 0) */
        else if ((rc = dt_run_probe(r, k, &probe, err)))
            return rc;
        const dt_roofline roof = probe.roofline;
        dt_roofline_task_bound(&roof, t, &bound);
        tr->peak_gflops = dt_roofline_task_peak_gflops(&roof, t);
        tr->bound_gbs = bound.bandwidth_gbs;
        dt_task_state *ts = &r->state.tasks[k];
        ts->peak_gflops = roof.peak_gflops > 0 ? roof.peak_gflops : 0;
        ts->bound_ms = bound.seconds * 1e3;
        snprintf(ts->bound_level, sizeof ts->bound_level, "%s", bound.level);
        /* "fma 512-bit x16 chains, 1 thread, on mpi rank 1": where a worker
         * probed, the page and reports say which */
        snprintf(r->state.peak_probe, sizeof r->state.peak_probe, "%.*s%s%.24s",
                 (int)(sizeof r->state.peak_probe - 30), roof.probe, probe.where[0] ? ", on " : "",
                 probe.where);
        if (tr->peak_gflops <= 0)
            tr->peak_gflops = 1.0; /* the belief needs a scale */
    }
    if (unprobed)
        fprintf(stderr, "dtune: %s during the set-up's probes: %d of %d tasks have no bound\n",
                stop && atomic_load(stop) ? "stopped" : "budget spent", unprobed, n);
    return 0;
}

/* ---- replaying logs --------------------------------------------------------- */

typedef struct replay_ctx {
    dt_run *run;
    const char *path;
    bool own_log;          /* the run's own log (slots count) or a warm start */
    bool check_only;       /* dtune check: validate every record, change nothing */
    int line;              /* records read so far (1-based number of the current one) */
    dt_error *err;
    /* A warm start's records of tasks this run's model lacks feed transfer:
     * the model the log's current run record names, and its tasks' spaces
     * as this run would build them (NULL: not loaded, its records skipped). */
    dt_model *log_model;
    dt_space *log_spaces;  /* the first nlog_spaces built */
    int nlog_spaces;
    int transferred, skipped;
    int runs;              /* run records read */
} replay_ctx;

/* The model's task that a record names: its task_index when that task has the
 * record's name (the usual case), else the task of that name (a log written
 * before the model's tasks were reordered); -1 when the model has none. */
static int record_task(const dt_model *model, const char *name, int index)
{
    if (index >= 0 && index < model->ntasks && strcmp(model->tasks[index].name, name) == 0)
        return index;
    return dt_model_find_task(model, name);
}

/* Why a log's knobs (NAME=VALUE or NAME=[A,B,..] words) do not match this
 * space: a split whose factors no longer multiply to its axis means the
 * model file changed; a choice value this space lacks (vec=16) means another
 * machine's vector width; anything else another dtune version. */
static void mismatch_cause(const dt_space *s, const char *log_knobs, char *buf, size_t len)
{
    char words[sizeof ((dt_measure_record *)0)->knobs], *save = NULL;
    snprintf(words, sizeof words, "%s", log_knobs);
    for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(w, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const dt_knob *k = NULL;
        for (int i = 0; i < s->nknobs && !k; i++)
            if (strcmp(s->knobs[i].name, w) == 0)
                k = &s->knobs[i];
        if (!k)
            continue;
        if (k->type == DT_KNOB_SPLIT) {
            long long product = 1;
            for (char *p = eq + 1; *p; p++)
                if (*p >= '0' && *p <= '9')
                    product *= strtoll(p, &p, 10), p--;
            if (product != k->axis_len) {
                snprintf(buf, len, "the model file changed since the log was written (task '%s' splits "
                         "an axis of %d by %s here, of %lld in the log)", s->task.name, k->axis_len, w,
                         product);
                return;
            }
        } else {
            long value = strtol(eq + 1, NULL, 10);
            bool offered = false;
            for (int o = 0; o < k->noptions && !offered; o++)
                offered = k->options[o] == value;
            if (!offered) {
                snprintf(buf, len, "the log was written where %s=%ld was offered, which this machine's "
                         "space is not (another vector width)", w, value);
                return;
            }
        }
    }
    snprintf(buf, len, "the log was written by another dtune version's space");
}

/* A hand-edited or damaged number must not reach the run's arithmetic: the
 * log's reader refuses times outside 0 to DT_TUNELOG_TIME_MAX and ok results
 * without a positive finite speed (tunelog.c); a slot number must stay far
 * from INT_MAX (the run counts on from it), checked here. */

static void drop_log_model(replay_ctx *rc)
{
    for (int k = 0; k < rc->nlog_spaces; k++)
        dt_space_free(&rc->log_spaces[k]);
    free(rc->log_spaces);
    dt_model_free(rc->log_model);
    rc->log_spaces = NULL;
    rc->nlog_spaces = 0;
    rc->log_model = NULL;
}

/* A warm start's run record: loads the model it names, so that records of
 * tasks this run lacks can go to transfer. A model that cannot be loaded
 * here (moved, another target) only means its records are skipped. */
static void open_log_model(replay_ctx *rc, const dt_run_record *rec)
{
    dt_run *r = rc->run;
    drop_log_model(rc);
    if (rc->own_log || strcmp(rec->target, dt_target_name(r->cfg->target)) != 0)
        return;
    dt_error why = { 0 };
    if (dt_target_load_model(rec->model, r->cfg->target, &rc->log_model, &why) != 0) {
        rc->log_model = NULL;
        return;
    }
    int n = rc->log_model->ntasks;
    if (!(rc->log_spaces = calloc((size_t)n, sizeof *rc->log_spaces))) {
        drop_log_model(rc);
        return;
    }
    for (int k = 0; k < n; k++, rc->nlog_spaces++)
        if (dt_run_view_space_init(r->cfg, &rc->log_model->tasks[k], &rc->log_spaces[k], &why) != 0) {
            drop_log_model(rc);
            return;
        }
}

/* Whether a warm start's record of this run's task k (found by name) is
 * of the same task: the log's model names a task of that name with the
 * same kind and shape (a record of another model's "conv1" of another
 * shape is another task's). Where the log's model is not loaded, the name
 * decides, and the config check that follows refuses another space. */
static bool same_task(const replay_ctx *rc, int k, const dt_measure_record *rec)
{
    int kl = rc->log_model ? record_task(rc->log_model, rec->task, rec->task_index) : -1;
    if (kl < 0)
        return true;
    char here[DT_DB_SIGNATURE_MAX], there[DT_DB_SIGNATURE_MAX];
    dt_db_task_signature(&rc->run->model->tasks[k], here, sizeof here);
    dt_db_task_signature(&rc->log_model->tasks[kl], there, sizeof there);
    return strcmp(here, there) == 0;
}

/* A warm start's record of a task this run's model lacks: into the transfer
 * store when transfer is on, the log's model has the task and the config
 * means the same in its space as when it was logged; else counted as
 * skipped. dtune check only counts. */
static int transfer_foreign(replay_ctx *rc, const dt_measure_record *rec)
{
    dt_run *r = rc->run;
    int k = rc->log_model ? record_task(rc->log_model, rec->task, rec->task_index) : -1;
    dt_point p;
    if (!r->transfer || k < 0 || !dt_space_point_named(&rc->log_spaces[k], rec->config, rec->knobs, &p)) {
        rc->skipped++;
        return 0;
    }
    if (!rc->check_only && dt_transfer_add(r->transfer, &rc->log_spaces[k], &p, &rec->m) != 0)
        return dt_error_set(rc->err, DT_ENOMEM, "out of memory");
    rc->transferred++;
    return 0;
}

/* The model's tasks in order, "N tasks, HASH" of each one's name, shape
 * with its epilogue (the database's signature) and count: what a resume
 * finds in the run record when the model is the run's. */
static void tasks_hash(const dt_model *m, char *buf, size_t len)
{
    uint64_t h = DT_FNV1A_INIT;
    for (int k = 0; k < m->ntasks; k++) {
        char sig[DT_DB_SIGNATURE_MAX];
        dt_db_task_signature(&m->tasks[k], sig, sizeof sig);
        int32_t count = m->tasks[k].count;
        h = dt_fnv1a(h, m->tasks[k].name, strlen(m->tasks[k].name) + 1);
        h = dt_fnv1a(h, sig, strlen(sig) + 1);
        h = dt_fnv1a(h, &count, sizeof count);
    }
    snprintf(buf, len, "%d tasks, %016" PRIx64, m->ntasks, h);
}

/* The run record this run writes, and what a resume of it must find. */
static void run_identity(dt_run *r, dt_run_record *run)
{
    memset(run, 0, sizeof *run);
    snprintf(run->model, sizeof run->model, "%s", r->cfg->model);
    snprintf(run->target, sizeof run->target, "%s", dt_target_name(r->cfg->target));
    run->seed = r->cfg->seed;
    dt_run_db_stamp(r, run);
    snprintf(run->backend, sizeof run->backend, "%s",
             dt_backend_choose(r->cfg->target, r->cfg->backend)->name);
    snprintf(run->policy, sizeof run->policy, "%s", r->cfg->scheduler.policy);
    snprintf(run->strategy, sizeof run->strategy, "%s", r->cfg->tuner.strategy);
    tasks_hash(r->model, run->tasks, sizeof run->tasks);
}

/* Whether a logged machine key is this run's: a log written before the
 * keys named the conditions holds the bare fingerprint, which is compared
 * with this key's fingerprint alone. */
static bool same_machine(const char *logged, const char *here)
{
    size_t n = strcspn(here, ";");
    if (!strchr(logged, ';'))
        return strlen(logged) == n && strncmp(logged, here, n) == 0;
    return strcmp(logged, here) == 0;
}

/* A resume goes on with the run as it was started: each thing its run
 * record names must be this run's (a field the record lacks is not
 * checked). Another model (a task added, removed or reordered), target,
 * backend, seed, policy, strategy, machine or measurement conditions is
 * refused before anything is measured, both values named. */
static int check_resume(replay_ctx *rc, const dt_run_record *rec)
{
    dt_run_record now;
    run_identity(rc->run, &now);
    if (rec->tasks[0] && strcmp(rec->tasks, now.tasks) != 0)
        return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: the model file changed since the log "
                            "was written (the run's tasks: %s; %s now: %s): a resume goes on with "
                            "the run as it was; restore the model, or use a new output dir", rc->path,
                            rc->line, rec->tasks, rc->run->cfg->model, now.tasks);
    const struct { const char *what, *logged, *here; } f[] = {
        { "target", rec->target, now.target },
        { "backend", rec->backend, now.backend },
        { "scheduler.policy", rec->policy, now.policy },
        { "tuner.strategy", rec->strategy, now.strategy },
    };
    const char *what = NULL, *logged = NULL, *here = NULL;
    char seeds[2][24];
    for (size_t i = 0; i < sizeof f / sizeof f[0] && !what; i++)
        if (f[i].logged[0] && strcmp(f[i].logged, f[i].here) != 0) {
            what = f[i].what;
            logged = f[i].logged;
            here = f[i].here;
        }
    if (!what && rec->seed != now.seed) {
        snprintf(seeds[0], sizeof seeds[0], "%" PRIu64, rec->seed);
        snprintf(seeds[1], sizeof seeds[1], "%" PRIu64, now.seed);
        what = "seed";
        logged = seeds[0];
        here = seeds[1];
    }
    if (!what && rec->machine[0] && now.machine[0] && !same_machine(rec->machine, now.machine)) {
        what = "machine and measurement conditions";
        logged = rec->machine;
        here = now.machine;
    }
    if (!what)
        return 0;
    return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: the run was started with %s '%s', this "
                        "run has '%s' (model %s): a resume goes on with the run as it was; start it "
                        "as it was, or use a new output dir", rc->path, rc->line, what, logged, here,
                        rc->run->cfg->model);
}

/* The backend a log's run record measured with: recorded, else told by
 * its machine (the replay surface's fingerprint names it), else unknown. */
static const char *logged_backend(const dt_run_record *rec)
{
    if (rec->backend[0])
        return rec->backend;
    if (dt_machine_is_replay(rec->machine))
        return dt_replay_backend.name;
    return rec->machine[0] ? rec->target : "";
}

static int replay_run(void *ctx, const dt_run_record *rec)
{
    replay_ctx *rc = ctx;
    rc->line++;
    if (rc->own_log && rc->runs++ > 0)
        return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: a second run record (run %s, started "
                            "%s): a run's log holds one; was another log appended to it?", rc->path,
                            rc->line, rec->id[0] ? rec->id : "?", rec->started);
    if (rc->own_log)
        return check_resume(rc, rec);
    const char *was = logged_backend(rec);
    const char *is = dt_backend_choose(rc->run->cfg->target, rc->run->cfg->backend)->name;
    if (was[0] && strcmp(was, is) != 0)
        return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: a warm start from a run measured "
                            "with backend '%s' into one measured with '%s': its figures are not "
                            "this run's to start from", rc->path, rc->line, was, is);
    open_log_model(rc, rec);
    return 0;
}

static int replay_measure(void *ctx, const dt_measure_record *rec)
{
    replay_ctx *rc = ctx;
    dt_run *r = rc->run;
    rc->line++;
    int k = record_task(r->model, rec->task, rec->task_index);
    if (k < 0 && rc->own_log)
        return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: measurement of task '%s', which model %s does not have",
                            rc->path, rc->line, rec->task, r->model->name);
    if (!rc->own_log && (k < 0 || !same_task(rc, k, rec)))
        return transfer_foreign(rc, rec);
    dt_run_task *tr = &r->tasks[k];
    dt_point p;
    /* An index means a config only in the space it was drawn from: a log of
     * another machine (vector width) or dtune version must not be misread. */
    if (!dt_space_point_named(&tr->space, rec->config, rec->knobs, &p)) {
        char cause[240], knobs[sizeof rec->knobs];
        mismatch_cause(&tr->space, rec->knobs, cause, sizeof cause);
        if (rec->config >= tr->space.size)
            return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: config %llu of task '%s' is outside its space of "
                                "%llu: %s; use a new output dir", rc->path, rc->line,
                                (unsigned long long)rec->config, rec->task, (unsigned long long)tr->space.size,
                                cause);
        dt_space_point_str(&tr->space, &p, knobs, sizeof knobs);
        return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: config %llu of task '%s' is '%s' here but "
                            "the log says '%s': the log was written for another space: %s; use a new "
                            "output dir", rc->path, rc->line, (unsigned long long)rec->config, rec->task,
                            knobs, rec->knobs, cause);
    }
    if (rc->check_only)
        return 0;
    if (dt_tuner_add_record(tr->tuner, &p, &rec->m) != 0
        || (r->transfer && dt_transfer_add(r->transfer, &tr->space, &p, &rec->m) != 0))
        return dt_error_set(rc->err, DT_ENOMEM, "out of memory");
    if (rc->own_log) {
        r->resumed_records++;
        dt_run_retime_forget(r, k);                        /* the run went on after it */
        tr->cost_model_gflops = rec->cost_model_gflops;   /* the latest record's */
        if (rec->slot > r->logged_slot)
            r->logged_slot = rec->slot;
        if (rec->time > r->elapsed_base)
            r->elapsed_base = rec->time;
    }
    return dt_run_account(r, k, rec->config, &rec->m, tr->trials + 1);
}

/* A logged decision back into the run state: the logged scores, each with
 * the task's newest logged prediction (rec's fits already replayed). */
static int replay_decision(dt_run *r, const dt_slot_record *rec)
{
    int n = r->model->ntasks;
    dt_task_score rows[n];
    for (int i = 0; i < n; i++)
        rows[i] = dt_run_state_logged_score(i < rec->nscores ? rec->scores[i] : NAN,
                                            &r->tasks[i].logged.pred);
    pthread_mutex_lock(&r->state.lock);
    /* decided when the slot before it closed */
    double at = r->state.npoints > 0 ? r->state.points[r->state.npoints - 1].elapsed : rec->time;
    dt_slot_decision d = { .slot = rec->slot, .task = rec->task_index, .elapsed = at,
                           .decision_ms = rec->decision_ms };
    int rc = dt_run_state_add_decision(&r->state, &d, rows);
    pthread_mutex_unlock(&r->state.lock);
    return rc;
}

static int replay_slot(void *ctx, const dt_slot_record *rec)
{
    replay_ctx *rc = ctx;
    dt_run *r = rc->run;
    rc->line++;
    if (!rc->own_log)
        return 0;
    int k = -1;   /* task_index -1: the warm-up slot, no task's */
    if (rec->task_index >= 0 && (k = record_task(r->model, rec->task, rec->task_index)) < 0)
        return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: slot %d of task '%s', which model %s does not have",
                            rc->path, rc->line, rec->slot, rec->task, r->model->name);
    if (rec->slot < 0 || rec->slot >= INT_MAX / 2)
        return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: slot number %d is out of range (0 to %d)",
                            rc->path, rc->line, rec->slot, INT_MAX / 2 - 1);
    for (int i = 0; i < rec->nfits; i++) {
        const dt_slot_fit *fit = &rec->fits[i];
        if (fit->task_index >= r->model->ntasks)
            return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: a fitted curve of task %d; model %s has %d tasks",
                                rc->path, rc->line, fit->task_index, r->model->name, r->model->ntasks);
        r->tasks[fit->task_index].fit = fit->curve;
        r->tasks[fit->task_index].logged = *fit;
        pthread_mutex_lock(&r->state.lock);
        r->state.tasks[fit->task_index].fit = fit->curve;
        pthread_mutex_unlock(&r->state.lock);
    }
    if (rec->slot > r->slot)       /* slots run at once end in any order */
        r->slot = rec->slot;
    dt_scheduler_replay(r->sched, k);
    if (rec->time > r->elapsed_base)
        r->elapsed_base = rec->time;
    if (rec->slot == 0)
        r->state.start_latency_ms = rec->model_latency_ms;
    int code = k >= 0 ? replay_decision(r, rec) : 0;
    if (code == 0)
        code = dt_run_close_slot(r, rec->slot, k, rec->time, dt_run_model_latency(r));
    return code ? dt_error_set(rc->err, code, "out of memory") : 0;
}

/* A task the run found it cannot tune stays failed, at the reference time
 * measured then; a warm start's failures are found again by this run. */
static int replay_failed(void *ctx, const dt_failed_record *rec)
{
    replay_ctx *rc = ctx;
    dt_run *r = rc->run;
    rc->line++;
    if (!rc->own_log)
        return 0;
    int k = dt_model_find_task(r->model, rec->task);
    if (k < 0)
        return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: failure of task '%s', which model %s does not have",
                            rc->path, rc->line, rec->task, r->model->name);
    if (!(rec->reference_s > 0) || !isfinite(rec->reference_s))
        return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: task '%s' failed with reference_ms %g; "
                            "expected a positive number", rc->path, rc->line, rec->task, rec->reference_s * 1e3);
    dt_run_mark_failed(r, k, rec->reason, rec->reference_s * 1e3);
    if (rec->time > r->elapsed_base)
        r->elapsed_base = rec->time;
    return 0;
}

/* Elapsed time moves to a record of the run's own log. */
static void replay_time(replay_ctx *rc, double time)
{
    if (time > rc->run->elapsed_base)
        rc->run->elapsed_base = time;
}

/* The model's task a record of the run's own log names, or an error. */
static int own_task(replay_ctx *rc, const char *what, const char *name, int index, int *k)
{
    *k = record_task(rc->run->model, name, index);
    if (*k < 0)
        return dt_error_set(rc->err, DT_EINVAL, "%s: record %d: %s of task '%s', which model %s "
                            "does not have", rc->path, rc->line, what, name, rc->run->model->name);
    return 0;
}

/* A re-timing's records: each task's newest whole re-timing makes its
 * result once the log is read, as at the live run's end. */
static int replay_retime(void *ctx, const dt_retime_record *rec)
{
    replay_ctx *rc = ctx;
    rc->line++;
    int k, code;
    if (!rc->own_log || rc->check_only)
        return 0;
    if ((code = own_task(rc, "re-timing", rec->task, rec->task_index, &k)))
        return code;
    replay_time(rc, rec->time);
    code = dt_run_retime_replay(rc->run, k, rec);
    return code ? dt_error_set(rc->err, code, "out of memory") : 0;
}

/* A confirmation's timing counts in the share of measurement time. */
static int replay_confirm(void *ctx, const dt_confirm_record *rec)
{
    replay_ctx *rc = ctx;
    rc->line++;
    if (!rc->own_log || rc->check_only)
        return 0;
    replay_time(rc, rec->time);
    dt_run_confirm_count(rc->run, &rec->m);
    return 0;
}

/* A confirmation's decision, applied as the live run did. */
static int replay_confirmed(void *ctx, const dt_confirmed_record *rec)
{
    replay_ctx *rc = ctx;
    rc->line++;
    int k, code;
    if (!rc->own_log || rc->check_only)
        return 0;
    if ((code = own_task(rc, "confirmation", rec->task, rec->task_index, &k)))
        return code;
    replay_time(rc, rec->time);
    code = dt_run_confirm_apply(rc->run, k, rec);
    return code ? dt_error_set(rc->err, code, "out of memory") : 0;
}

static int replay_drift(void *ctx, const dt_drift_record *rec)
{
    replay_ctx *rc = ctx;
    rc->line++;
    int k, code;
    if (!rc->own_log || rc->check_only)
        return 0;
    if ((code = own_task(rc, "drift reading", rec->task, rec->task_index, &k)))
        return code;
    replay_time(rc, rec->time);
    dt_run_drift_apply(rc->run, k, &rec->m);
    return 0;
}

static int replay_log(dt_run *r, const char *path, bool own, bool check_only, dt_error *err)
{
    replay_ctx ctx = { .run = r, .path = path, .own_log = own, .check_only = check_only, .err = err };
    dt_tunelog_visitor v = { replay_run,     replay_measure,   replay_slot,
                             &ctx,           replay_failed,    replay_retime,
                             replay_confirm, replay_confirmed, replay_drift };
    dt_tunelog_stats stats;
    dt_error_clear(err);
    /* a warm start's measurements count at their logged figures: its
     * confirmations are not replayed */
    r->raw_bests = !own;
    int rc = dt_tunelog_replay(path, &v, &stats, err);
    r->raw_bests = false;
    if (own)
        r->resumed_run_record = ctx.runs > 0;
    int kept = dt_run_retime_replayed(r, rc == 0 && own && !check_only);
    if (rc == 0 && kept)
        rc = dt_error_set(err, kept, "out of memory");
    drop_log_model(&ctx);
    if (rc == 0 && stats.dropped_tail)
        fprintf(stderr, "dtune: %s: dropped a torn last line (%s)\n", path, stats.tail_message);
    if (rc == 0 && !check_only && ctx.transferred + ctx.skipped > 0)
        fprintf(stderr, "dtune: warm start %s: %d records of tasks model %s lacks went to transfer, "
                "%d skipped (%s)\n", path, ctx.transferred, r->model->name, ctx.skipped,
                r->transfer ? "their model cannot be loaded here, or they do not fit its space"
                            : "tuner.transfer is off");
    return rc;
}

static int open_log(dt_run *r, dt_error *err)
{
    char path[DT_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/tuning.jsonl", r->run_dir);
    int rc;
    if (r->cfg->warm_start[0] && (rc = replay_log(r, r->cfg->warm_start, false, false, err)))
        return rc;
    bool resume = access(path, F_OK) == 0;
    if (resume && (rc = replay_log(r, path, true, false, err)))
        return rc;
    if ((rc = dt_tunelog_open(path, &r->log, err)))
        return rc;
    /* a log that holds nothing yet (a run stopped before its first record)
     * is started anew, with its run record */
    resume = resume && (r->resumed_run_record || r->resumed_records > 0);
    if (resume) {
        fprintf(stderr, "dtune: resuming %s: %d measurements, %d slots, %.0f s elapsed\n", path,
                r->resumed_records, r->slot > 0 ? r->slot : 0, r->elapsed_base);
        return 0;
    }
    dt_run_record run;
    run_identity(r, &run);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(run.started, sizeof run.started, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return dt_tunelog_append_run(r->log, &run, err);
}

/* ---- the run directory's lock ------------------------------------------------------ */

/* RUN_DIR/lock, flock'd for the life of the run. Its descriptor is inherited
 * by the measurement process (and compilers): after a kill -9 of the daemon
 * the lock stays held until the old runner has left too, so a resume never
 * times a kernel beside it. The file holds the daemon's pid, to tell a live
 * run (refused) from an orphaned measurement process (waited for). */
#define LOCK_WAIT_S 120.0
#define LOCK_POLL_MS 50

static bool pid_alive(pid_t pid)
{
    return pid > 0 && pid != getpid() && (kill(pid, 0) == 0 || errno == EPERM);
}

static pid_t lock_owner(int fd)
{
    char text[32] = "";
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    return (pid_t)atol(text);
}

static int take_lock(dt_run *r, int fd, const char *path, const atomic_int *stop, dt_error *err)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    if (errno != EWOULDBLOCK)
        return dt_error_set(err, DT_EIO, "%s: cannot lock: %s", path, strerror(errno));
    pid_t owner = lock_owner(fd);
    if (pid_alive(owner))
        return dt_error_set(err, DT_EFAIL, "%s is in use by another dtune tune (pid %d); stop it "
                            "first or use another output dir", r->run_dir, (int)owner);
    fprintf(stderr, "dtune: %s: waiting for the measurement process of the previous run "
            "(pid %d, gone) to exit before timing anything\n", r->run_dir, (int)owner);
    double until = dt_now_seconds() + LOCK_WAIT_S;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (atomic_load(stop))
            return dt_error_set(err, DT_EFAIL, "%s: stopped while waiting for the previous run's "
                                "process (pid %d)", r->run_dir, (int)owner);
        if (errno != EWOULDBLOCK || dt_now_seconds() > until)
            return dt_error_set(err, DT_EFAIL, "%s: still locked after %.0f s by a process of the "
                                "previous run (see `fuser %s`)", r->run_dir, LOCK_WAIT_S, path);
        struct timespec ts = { 0, LOCK_POLL_MS * 1000000L };
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "dtune: %s: the previous run's processes are gone\n", r->run_dir);
    return 0;
}

static int lock_run_dir(dt_run *r, const atomic_int *stop, dt_error *err)
{
    char path[DT_PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/lock", r->run_dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);     /* inherited on purpose: no O_CLOEXEC */
    if (fd < 0)
        return dt_error_set(err, DT_EIO, "%s: cannot open: %s", path, strerror(errno));
    /* above the runner's fixed descriptors, which its spawn overwrites */
    r->lock_fd = fcntl(fd, F_DUPFD, 10);
    close(fd);
    if (r->lock_fd < 0)
        return dt_error_set(err, DT_EIO, "%s: %s", path, strerror(errno));
    int rc = take_lock(r, r->lock_fd, path, stop, err);
    if (rc)
        return rc;
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(r->lock_fd, 0) != 0 || pwrite(r->lock_fd, pid, (size_t)len, 0) != len)
        return dt_error_set(err, DT_EIO, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}

/* ---- open / close ---------------------------------------------------------------- */

static void fill_state_header(dt_run *r)
{
    dt_run_state *s = &r->state;
    const dt_config *c = r->cfg;
    snprintf(s->run_dir, sizeof s->run_dir, "%s", r->run_dir);
    snprintf(s->target, sizeof s->target, "%s", dt_target_name(c->target));
    snprintf(s->policy, sizeof s->policy, "%s", c->scheduler.policy);
    s->threads = c->measure.threads;
    snprintf(s->strategy, sizeof s->strategy, "%s", c->tuner.strategy);
    snprintf(s->phase, sizeof s->phase, "starting");
    s->budget = c->budget.total_seconds;
    s->target_latency_ms = c->budget.target_latency_ms;
}

/* Moves every thread of the process off the cores that time kernels, before
 * the tuning thread starts the status server, the ticker and the belief
 * fits: threads inherit their creator's cores, so none of them ever runs
 * beside a timing, and threads that started earlier (the builders, a
 * sanitizer's or a library's own) are moved too. The measurement process
 * pins itself to its own cores. */
static void pin_off_timing(dt_run *r)
{
    cpu_set_t spare;
    int nspare = r->measurer ? dt_measurer_spare_cpus(r->measurer, &spare)
                             : dt_measure_spare_cpus(&r->cfg->measure, &spare);
    if (nspare == 0 ||
        pthread_getaffinity_np(pthread_self(), sizeof r->old_cpus, &r->old_cpus) != 0)
        return;
    r->pinned = pthread_setaffinity_np(pthread_self(), sizeof spare, &spare) == 0;
    DIR *tasks = opendir("/proc/self/task");
    for (struct dirent *e; tasks && (e = readdir(tasks));)
        if (e->d_name[0] != '.')
            sched_setaffinity((pid_t)atoi(e->d_name), sizeof spare, &spare);
    if (tasks)
        closedir(tasks);
}

static int open_server(dt_run *r, dt_error *err)
{
    const char *listen = r->cfg->server_listen;
    if (dt_server_listen_off(listen))
        return 0;
    int rc = dt_server_start(listen, &r->state, &r->server, err);
    if (rc == 0)
        fprintf(stderr, "dtune: status at http://%s/ (port %d)\n", listen, dt_server_port(r->server));
    return rc;
}

int dt_run_open(const dt_config *cfg, const dt_daemon_remote *remote, const atomic_int *stop,
                dt_run **out, dt_error *err)
{
    *out = NULL;
    dt_run *r = calloc(1, sizeof *r);
    if (!r)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    r->cfg = cfg;
    r->remote = remote;
    r->t0 = dt_now_seconds();
    r->slot = -1;
    r->tty = isatty(STDERR_FILENO);
    snprintf(r->run_dir, sizeof r->run_dir, "%s", cfg->output_dir);
    r->lock_fd = -1;
    int rc = dt_mkdir_p(r->run_dir, err);
    if (rc == 0)
        rc = lock_run_dir(r, stop, err);
    r->t0 = dt_now_seconds();       /* waiting for a previous run's process is no tuning time */
    if (rc == 0)
        rc = dt_target_load_model(cfg->model, cfg->target, &r->model, err);
    if (rc == 0 && dt_run_state_init(&r->state, r->model) != 0)
        rc = dt_error_set(err, DT_ENOMEM, "out of memory");
    if (rc == 0) {
        r->state_ready = true;
        fill_state_header(r);
        /* a remote that probes times everything on its workers: this
         * process needs no backend (on a cluster rank 0 may have no GPU) */
        if (!remote || !remote->send_probe)
            rc = dt_run_view_measurer_new(cfg, r->run_dir, &r->measurer, err);
    }
    if (rc == 0)
        pin_off_timing(r);
    if (rc == 0)
        rc = open_tasks(r, stop, err);
    if (rc == 0)
        rc = dt_scheduler_new(cfg->scheduler.policy, &cfg->scheduler, cfg->seed, &r->sched, err);
    if (rc == 0)
        rc = open_log(r, err);
    if (rc == 0)
        dt_run_db_open(r);
    if (rc == 0)
        rc = open_server(r, err);
    if (rc) {
        dt_run_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

void dt_run_close(dt_run *r)
{
    if (!r)
        return;
    dt_run_ticker_stop(r);
    dt_server_stop(r->server);
    dt_run_retime_replayed(r, false);
    for (int k = 0; r->tasks && k < r->model->ntasks; k++) {
        dt_tuner_free(r->tasks[k].tuner);
        dt_space_free(&r->tasks[k].space);
        free(r->tasks[k].curve);
    }
    free(r->tasks);
    dt_scheduler_free(r->sched);
    dt_measurer_free(r->measurer);
    dt_tunelog_close(r->log);
    dt_run_db_close(r);
    if (r->state_ready)
        dt_run_state_destroy(&r->state);
    dt_model_free(r->model);
    dt_run_belief_free(r);
    if (r->lock_fd >= 0)
        close(r->lock_fd);          /* after the measurer: its runner has left */
    if (r->pinned)
        pthread_setaffinity_np(pthread_self(), sizeof r->old_cpus, &r->old_cpus);
    dt_transfer_free(r->transfer);
    free(r);
}

int dt_daemon_check_inputs(const dt_config *cfg, dt_error *err)
{
    dt_run r = { .cfg = cfg, .slot = -1 };
    int rc = dt_target_load_model(cfg->model, cfg->target, &r.model, err);
    if (rc == 0)
        rc = open_spaces(&r, err);
    if (rc == 0 && cfg->warm_start[0])
        rc = replay_log(&r, cfg->warm_start, false, true, err);
    for (int k = 0; r.tasks && k < r.model->ntasks; k++)
        dt_space_free(&r.tasks[k].space);
    free(r.tasks);
    dt_model_free(r.model);
    return rc;
}
