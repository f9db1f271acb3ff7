/* daemon_loop.c — the run loop (dt_run_loop): the warm-up, slots until a
 * stop rule holds, and the run's end (re-timing). A run keeps one slot in
 * flight per worker of its remote (MPI ranks, mpi_run.c; a simulation,
 * bench/mpi_bench.c) and one slot where it has one worker or measures on
 * its own measurer: one process is the case N = 1 of the cluster run, the
 * same steps in the same order, only with one slot the slot runs on the
 * daemon's thread and a request goes to worker 0 and back at once.
 *
 * With several slots, each slot in flight runs its task's tuner on a slot
 * thread. The daemon's thread (the caller, the only one that calls the
 * remote: on MPI the only MPI caller) decides, starts slots, sends the
 * requests their tuners post and hands each answer back to the thread that
 * posted it. One lock, the pool's, is held by whichever thread runs: a slot
 * thread from its start to its end except while it waits for an answer,
 * the daemon's thread except while it waits for the slot threads. So
 * exactly one thread touches the run (log, beliefs, tuners, curves,
 * transfer store, database) at a time, the tuners' work is serial and the
 * measurements are parallel; and the daemon's thread acts only once every
 * slot thread waits for an answer or has ended, so given the order of
 * answers a run is one sequence of steps (a simulation whose remote
 * answers in simulated time order is deterministic).
 *
 * Steps of the daemon's thread, until no slot is in flight after a stop:
 *  - ended slots are joined; a tuning slot's record is written at its end
 *    (two slots' measure records interleave in the log; a resume counts
 *    trials by task, which a task never being in two slots keeps exact);
 *  - warm-up: each idle worker warms up a task that has no valid
 *    measurement yet, one task per worker, in the model's order; when none
 *    is left and none is in flight, the warm-up ends (dt_run_steps'
 *    end_warm_up: every task failed, or the warm-up's record, slot 0);
 *  - tuning: while a worker is idle and no stop rule holds, the scheduler
 *    picks among the tasks no slot holds (a held task is passed as
 *    exhausted), so the top scores get the slots and a task never holds
 *    two; the slot number is taken at the start (max_slots counts starts);
 *  - the posted requests are sent, and one answer is waited for.
 * At a stop no slot starts; the slots in flight end by their own trials or
 * seconds, by the budget's deadline or by the stop flag (signals), and
 * their results are logged. A remote error ends the slot whose worker
 * failed; every other slot is told to stop, and its answers are still
 * logged. The first error is the run's. Then, unless a signal stopped it or
 * an error ended it, the run's end re-times each task's best configs
 * (daemon_retime.c, which decides whether this run re-times), its requests
 * to worker 0.
 *
 * A task's probes (dt_run_probe: its roofline, a failed task's reference)
 * go the same way as its batches: to the worker of its slot, else worker 0,
 * or to the run's own measurer where the remote has no send_probe.
 */
#include "daemon_internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/util.h"

typedef enum job_state {
    JOB_IDLE,                  /* the worker holds no slot */
    JOB_RUNNING,               /* its thread runs (holds the pool lock) */
    JOB_POSTED,                /* its thread waits; the request is not sent yet */
    JOB_SENT,                  /* its thread waits for the worker's answer */
    JOB_DONE                   /* its thread ended; not joined yet */
} job_state;

typedef struct job {
    struct dt_run_pool *pool;
    int worker;
    int task;                  /* the task held; -1 when idle */
    int slot;                  /* slot number; -1: a task's warm-up */
    job_state state;
    pthread_t thread;
    pthread_cond_t answered;   /* the daemon's thread set answer_rc */
    /* the request posted: a probe (probe set) or a batch */
    dt_daemon_probe *probe;
    const dt_space *space;
    const dt_point *points;
    int n;
    double deadline;
    dt_measure_result *results;
    /* its answer */
    int measured;
    int answer_rc;
    dt_error answer_err;
    /* the slot's outcome and what its record says */
    int rc;
    dt_error err;
    dt_task_score *rows;       /* the decision that started the slot, every task's row */
    double decision_ms;
} job;

struct dt_run_pool {
    dt_run *run;
    const dt_run_steps *steps; /* daemon.c's */
    bool threads;              /* several slots: each on its own thread; one
                                  slot runs on the daemon's */
    bool *held;                /* per task: a slot holds it */
    pthread_mutex_t lock;      /* held by the one thread that runs */
    pthread_cond_t quiet;      /* a slot thread waits or ended */
    job *jobs;                 /* one per worker */
    int njobs;
};

/* ---- a slot: on the daemon's thread, or on its own ----------------------------- */

/* Job j's warm-up or slot, to its end. */
static void job_run(job *j)
{
    dt_run *r = j->pool->run;
    const dt_run_steps *steps = j->pool->steps;
    dt_error_clear(&j->err);
    j->rc = j->slot < 0 ? steps->warm_task(r, j->task, &j->err)
                        : steps->run_slot(r, j->slot, j->task, &j->err);
    j->state = JOB_DONE;
}

static void *job_main(void *arg)
{
    job *j = arg;
    pthread_mutex_lock(&j->pool->lock);
    job_run(j);
    pthread_cond_signal(&j->pool->quiet);
    pthread_mutex_unlock(&j->pool->lock);
    return NULL;
}

static job *job_of_task(const struct dt_run_pool *pool, int task)
{
    for (int i = 0; i < pool->njobs; i++)
        if (pool->jobs[i].task == task && pool->jobs[i].state != JOB_IDLE)
            return &pool->jobs[i];
    return NULL;
}

/* Posts the request filled into task's job and waits (the pool lock given
 * up) until the daemon's thread hands back its answer. */
static int post_and_wait(struct dt_run_pool *pool, job *j, int *measured, dt_error *err)
{
    j->state = JOB_POSTED;
    pthread_cond_signal(&pool->quiet);
    while (j->state == JOB_POSTED || j->state == JOB_SENT)
        pthread_cond_wait(&j->answered, &pool->lock);
    if (j->answer_rc) {
        *err = j->answer_err;
        return j->answer_rc;
    }
    *measured = j->measured;
    return 0;
}

/* The running job of the slot holding task, or NULL (err filled). */
static job *running_job(struct dt_run_pool *pool, int task, dt_error *err)
{
    job *j = job_of_task(pool, task);
    if (!j || j->state != JOB_RUNNING) {
        dt_error_set(err, DT_EINVAL, "task %d measures outside its slot", task);
        return NULL;
    }
    return j;
}

int dt_run_request(dt_run *r, int task, const dt_space *space, const dt_point *points, int n,
                   double deadline, dt_measure_result *results, int *measured, dt_error *err)
{
    const dt_daemon_remote *rm = r->remote;
    if (!r->pool || !r->pool->threads) {
        int w = -1;
        int rc = rm->send(rm->ctx, 0, task, space, points, n, deadline, results, err);
        return rc ? rc : rm->receive(rm->ctx, &w, measured, err);
    }
    job *j = running_job(r->pool, task, err);
    if (!j)
        return DT_EINVAL;
    j->probe = NULL;
    j->space = space;
    j->points = points;
    j->n = n;
    j->deadline = deadline;
    j->results = results;
    return post_and_wait(r->pool, j, measured, err);
}

/* A probe of the slot holding task, called on its thread: sent to its
 * worker through the daemon's thread, as dt_run_request sends a
 * batch. 0 or the remote's error. */
static int slots_probe(dt_run *r, int task, dt_daemon_probe *probe, dt_error *err)
{
    job *j = running_job(r->pool, task, err);
    if (!j)
        return DT_EINVAL;
    int answered = 0;
    j->probe = probe;
    int rc = post_and_wait(r->pool, j, &answered, err);
    j->probe = NULL;
    return rc;
}

int dt_run_probe(dt_run *r, int k, dt_daemon_probe *probe, dt_error *err)
{
    const dt_daemon_remote *rm = r->remote;
    const dt_task *t = &r->model->tasks[k];
    probe->where[0] = '\0';
    if (!rm || !rm->send_probe) {
        if (probe->reference)
            return dt_measurer_reference(r->measurer, t, &probe->result, err);
        (void)dt_measurer_roofline(r->measurer, t, &probe->roofline);   /* peak 0: unknown */
        return 0;
    }
    if (r->pool && r->pool->threads)
        return slots_probe(r, k, probe, err);
    int w = -1, answered = 0;
    int rc = rm->send_probe(rm->ctx, 0, k, probe, err);
    return rc ? rc : rm->receive(rm->ctx, &w, &answered, err);
}

/* ---- the daemon's thread ------------------------------------------------------- */

static int count_in(const struct dt_run_pool *pool, job_state state)
{
    int n = 0;
    for (int i = 0; i < pool->njobs; i++)
        n += pool->jobs[i].state == state;
    return n;
}

static int busy(const struct dt_run_pool *pool)
{
    return pool->njobs - count_in(pool, JOB_IDLE);
}

/* Hands job j its answer (rc, with e) and lets its thread run. */
static void answer(job *j, int measured, int rc, const dt_error *e)
{
    j->measured = measured;
    j->answer_rc = rc;
    if (rc)
        j->answer_err = *e;
    j->state = JOB_RUNNING;
    pthread_cond_signal(&j->answered);
}

/* Shows job j's slot in flight in the run's state (or, begin false, that
 * it ended): /status, the page and the terminal line list them. */
static void publish_flight(const job *j, bool begin)
{
    dt_run *r = j->pool->run;
    dt_slot_flight f = { .slot = j->slot, .task = j->task, .worker = j->worker + 1,
                         .started = dt_run_elapsed(r) };
    pthread_mutex_lock(&r->state.lock);
    if (begin)
        dt_run_state_flight_begin(&r->state, &f);
    else
        dt_run_state_flight_end(&r->state, f.worker);
    pthread_mutex_unlock(&r->state.lock);
}

/* Starts job j on task k as slot number slot (-1: its warm-up): one slot
 * runs here to its end; several each on a thread, shown in flight in the
 * run's state. Slot threads block signals: the daemon's handlers set the
 * stop flag. */
static int start_job(job *j, int k, int slot, dt_error *err)
{
    struct dt_run_pool *pool = j->pool;
    j->task = k;
    j->slot = slot;
    pool->held[k] = true;
    j->state = JOB_RUNNING;
    if (slot < 0)      /* which task warms up: with several, the flights say */
        pool->steps->set_phase(pool->run, "warm-up", pool->threads ? -1 : k);
    if (!pool->threads) {
        job_run(j);
        return 0;
    }
    publish_flight(j, true);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&j->thread, NULL, job_main, j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        return 0;
    publish_flight(j, false);
    j->pool->held[k] = false;
    j->task = -1;
    j->state = JOB_IDLE;
    return dt_error_set(err, DT_EIO, "could not start a slot thread");
}

/* Joins the ended slots' threads (one slot ran here, with none) and writes
 * each tuning slot's record; the first error (a slot's or a record's) into
 * *first. */
static void reap(struct dt_run_pool *pool, int *first, dt_error *err)
{
    dt_run *r = pool->run;
    for (int i = 0; i < pool->njobs; i++) {
        job *j = &pool->jobs[i];
        if (j->state != JOB_DONE)
            continue;
        if (pool->threads)
            pthread_join(j->thread, NULL);
        int rc = j->rc;
        dt_error e = j->err;
        if (rc == 0 && j->slot >= 0)
            rc = pool->steps->write_slot(r, j->slot, j->task, j->rows, j->decision_ms, &e);
        if (rc && *first == 0) {
            *first = rc;
            *err = e;
        }
        if (pool->threads)
            publish_flight(j, false);
        pool->held[j->task] = false;
        j->task = -1;
        j->state = JOB_IDLE;
    }
}

/* A task that needs its warm-up and that no slot holds, or -1. */
static int task_to_warm(const struct dt_run_pool *pool)
{
    const dt_run *r = pool->run;
    for (int k = 0; k < r->model->ntasks; k++)
        if (r->tasks[k].best_gflops <= 0 && !r->tasks[k].dead && !pool->held[k])
            return k;
    return -1;
}

typedef struct progress {
    bool warming;              /* the warm-up has not ended */
    bool stopping;             /* no slot starts any more */
    dt_stop_reason reason;
} progress;

/* Gives every idle worker a task's warm-up or a slot while the rules allow. */
static int fill(struct dt_run_pool *pool, progress *p, dt_error *err)
{
    dt_run *r = pool->run;
    for (int i = 0; i < pool->njobs && !p->stopping; i++) {
        job *j = &pool->jobs[i];
        if (j->state != JOB_IDLE)
            continue;
        const dt_run_steps *steps = pool->steps;
        int k = -1, rc;
        if (p->warming) {
            if (!steps->warm_up_cut(r) && (k = task_to_warm(pool)) >= 0) {
                if ((rc = start_job(j, k, -1, err)))
                    return rc;
                continue;
            }
            if (busy(pool) > 0)
                return 0;          /* the warm-up ends when its last task does */
            p->warming = false;
            if ((rc = steps->end_warm_up(r, err)))
                return rc;
        }
        if ((p->reason = steps->should_stop(r)) != DT_STOP_NONE) {
            p->stopping = true;
            return 0;
        }
        if ((rc = steps->pick(r, pool->held, &k, j->rows, &j->decision_ms, err)))
            return rc;
        if (k >= 0 && (rc = start_job(j, k, r->slot, err)))
            return rc;
        if (k < 0) {
            if (busy(pool) == 0) {
                p->reason = DT_STOP_FINISHED;
                p->stopping = true;
            }
            return 0;
        }
    }
    return 0;
}

/* Sends every posted request; a request that cannot be sent is its slot's
 * error. */
static void send_posted(struct dt_run_pool *pool)
{
    const dt_daemon_remote *rm = pool->run->remote;
    for (int i = 0; i < pool->njobs; i++) {
        job *j = &pool->jobs[i];
        if (j->state != JOB_POSTED)
            continue;
        dt_error e;
        dt_error_clear(&e);
        int rc = j->probe ? rm->send_probe(rm->ctx, j->worker, j->task, j->probe, &e)
                          : rm->send(rm->ctx, j->worker, j->task, j->space, j->points, j->n,
                                     j->deadline, j->results, &e);
        if (rc)
            answer(j, 0, rc, &e);
        else
            j->state = JOB_SENT;
    }
}

/* Waits for one answer and hands it to its slot. A remote error of one
 * worker ends that slot; one of no worker's ends every slot waiting. Either
 * stops the run. */
static void receive_one(struct dt_run_pool *pool, progress *p)
{
    const dt_daemon_remote *rm = pool->run->remote;
    int w = -1, measured = 0;
    dt_error e;
    dt_error_clear(&e);
    int rc = rm->receive(rm->ctx, &w, &measured, &e);
    bool known = w >= 0 && w < pool->njobs && pool->jobs[w].state == JOB_SENT;
    if (rc == 0 && known) {
        answer(&pool->jobs[w], measured, 0, NULL);
        return;
    }
    if (rc == 0)
        rc = dt_error_set(&e, DT_EINVAL, "worker %d answered with no request out", w);
    for (int i = 0; i < pool->njobs; i++)
        if (pool->jobs[i].state == JOB_SENT && (!known || i == w))
            answer(&pool->jobs[i], 0, rc, &e);
    pool->steps->stop();           /* the other slots end after their point in flight */
    p->stopping = true;
}

static void pool_free(struct dt_run_pool *pool)
{
    for (int i = 0; pool->jobs && i < pool->njobs; i++) {
        pthread_cond_destroy(&pool->jobs[i].answered);
        free(pool->jobs[i].rows);
    }
    free(pool->jobs);
    free(pool->held);
    pthread_cond_destroy(&pool->quiet);
    pthread_mutex_destroy(&pool->lock);
}

static int pool_init(struct dt_run_pool *pool, dt_run *r, const dt_run_steps *steps,
                     dt_error *err)
{
    memset(pool, 0, sizeof *pool);
    pool->run = r;
    pool->steps = steps;
    pool->njobs = r->remote && r->remote->workers > 1 ? r->remote->workers : 1;
    pool->threads = pool->njobs > 1;
    pool->held = calloc((size_t)r->model->ntasks, sizeof *pool->held);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->quiet, NULL);
    pool->jobs = calloc((size_t)pool->njobs, sizeof *pool->jobs);
    for (int i = 0; pool->jobs && i < pool->njobs; i++) {
        job *j = &pool->jobs[i];
        j->pool = pool;
        j->worker = i;
        j->task = -1;
        pthread_cond_init(&j->answered, NULL);
        j->rows = calloc((size_t)(r->model->ntasks > 0 ? r->model->ntasks : 1), sizeof *j->rows);
        if (!j->rows) {
            pool->njobs = i + 1;
            break;
        }
    }
    if (pool->held && pool->jobs && pool->jobs[pool->njobs - 1].rows)
        return 0;
    pool_free(pool);
    return dt_error_set(err, DT_ENOMEM, "out of memory");
}

/* Warm-up and slots until a stop (*reason) with no slot in flight. */
static int run_slots(struct dt_run_pool *pool, dt_stop_reason *reason, dt_error *err)
{
    const dt_run_steps *steps = pool->steps;
    int rc = 0;
    progress p = { .warming = true, .stopping = false, .reason = DT_STOP_NONE };
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (count_in(pool, JOB_RUNNING) > 0)
            pthread_cond_wait(&pool->quiet, &pool->lock);
        reap(pool, &rc, err);
        if (rc)
            p.stopping = true, steps->stop();
        if (!p.stopping) {
            int started = busy(pool);
            dt_error e;
            int fill_rc = fill(pool, &p, &e);
            if (fill_rc && rc == 0)
                rc = fill_rc, *err = e;
            if (fill_rc)
                p.stopping = true, steps->stop();
            if (busy(pool) > started)
                continue;          /* the new slots run up to their first request */
        }
        if (busy(pool) == 0)
            break;
        send_posted(pool);
        if (count_in(pool, JOB_SENT) > 0)
            receive_one(pool, &p);
    }
    pthread_mutex_unlock(&pool->lock);
    *reason = p.reason;
    return rc;
}

/* A resume whose log ends at or past the budget (its latest record of any
 * kind: measure, slot, failure or re-timing) measures nothing, not even the
 * re-timing: the run it continues spent the budget (README, "Resume rule"). */
static bool spent_before_start(const dt_run *r)
{
    return r->elapsed_base >= r->cfg->budget.total_seconds;
}

int dt_run_loop(dt_run *r, const dt_run_steps *steps, dt_stop_reason *reason, dt_error *err)
{
    bool spent = spent_before_start(r);
    struct dt_run_pool pool;
    int rc = pool_init(&pool, r, steps, err);
    if (rc)
        return rc;
    r->pool = &pool;
    /* slots of a killed run that were open keep their numbers where several
     * ran at once; one slot numbers on from the last slot record (the open
     * slot, which has none, is numbered again), as it always did */
    if (pool.threads && r->slot >= 0 && r->logged_slot > r->slot)
        r->slot = r->logged_slot;
    rc = run_slots(&pool, reason, err);
    r->pool = NULL;
    pool_free(&pool);
    if (rc == 0 && *reason != DT_STOP_SIGNAL && !spent) {
        steps->set_phase(r, "re-timing", -1);
        rc = steps->retime(r, err);
    }
    steps->set_phase(r, "done", -1);
    return rc;
}
