/* mpi_run.c — one tuning run over the ranks of an MPI job (see mpi_run.h).
 *
 * `mpirun -np N dtune tune -c config.yaml` starts N copies of dtune. Rank 0
 * is today's daemon: scheduler, beliefs, tuners, the log, the reports and
 * the status server. Every other rank is a measurement worker: it reads the
 * same config, builds the same model and knob spaces, opens the config's
 * backend (its own builders and runner) on its own machine, says HELLO (its
 * machine fingerprint, dtune version and space version) and then answers
 * each MEASURE (configs of one task) with RESULTS, or with ERROR when its
 * backend fails, until STOP. Rank 1's fingerprint is the run's machine
 * (the log's run record and the database key records by it); rank 0
 * refuses a worker whose fingerprint differs from it, or whose dtune or
 * space version differs from rank 0's own (dt_wire_hello_check). Messages are mpi_wire.c's bytes; here
 * they only travel: MPI_Send, then MPI_Probe + MPI_Recv on one tag of
 * MPI_COMM_WORLD, with MPI errors returned rather than fatal. Only each
 * rank's main thread calls MPI (MPI_THREAD_FUNNELED): on rank 0 the
 * daemon's thread.
 *
 * Rank 0's daemon is given the workers as a dt_daemon_remote: send puts a
 * MEASURE on its way to one worker, receive waits (MPI_Iprobe over every
 * source) for the next RESULTS of any worker with a request out and checks
 * it against that request. The daemon's one loop (daemon_loop.c) keeps a
 * slot in flight per worker: with N = 2 one, on the daemon's thread, and
 * every batch goes to rank 1: the run measures what the one-process run
 * measures, its end's re-timing too. With N > 2 it keeps N − 1 slots in
 * flight, each on another task and measured by its own worker (slot
 * threads, the daemon's thread the only one that calls send and receive,
 * so the only MPI caller), and does not re-time. Rank 0 times nothing itself and opens no backend: each
 * task's roofline (the peak probe) is asked of rank 1 when the run starts
 * or resumes, and a failed task's reference of the worker of its slot, by
 * PROBE, which the worker answers with the measurer calls the one-process
 * run makes (dt_measurer_roofline, dt_measurer_reference); the log's failed
 * record and the reports' peak probe name the rank that timed them.
 *
 * Faults. A worker that does not answer a request within its measurement
 * limit (each config its compile and run limits, none started past the
 * deadline, plus slack) ends the job with a message after everything
 * answered before is logged (the other workers' answers too): rank 0
 * calls MPI_Abort, as MPI cannot finalise beside a rank that hangs. A
 * worker that dies is reported by mpirun, which ends the job; every record
 * was fsync'd before it was used, so the same command resumes from the log
 * with nothing lost or measured twice.
 * SIGTERM to mpirun reaches every rank: a worker ends its batch after the
 * config being timed, rank 0's daemon stops as on one machine (slots in
 * flight end after their point in flight) and sends STOP, and rank 0
 * prints its summary before MPI_Finalize (dt_mpi_finish), inside which
 * mpirun may end the ranks.
 *
 * Devices. On CUDA every worker of a node times on its own GPU: when the
 * run is started, the ranks of each node are found (MPI_Comm_split_type,
 * shared memory) and a worker takes its index among its node's workers
 * modulo the node's device count (dt_cuda_worker_device; rank 0 takes
 * none). A measure.cuda_device set in the config is kept on every worker,
 * and where CUDA_VISIBLE_DEVICES leaves each rank one device (Slurm's
 * --gpus-per-task) the count is 1 and that device is taken. The worker says
 * its device in its log line and its HELLO's fingerprint names the kind.
 */
#include "mpi_run.h"

#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "run_view.h"
#include "dtune/backend.h"
#include "dtune/db.h"
#include "dtune/machine.h"
#include "dtune/model.h"
#include "dtune/model_file.h"
#include "dtune/mpi_wire.h"
#include "dtune/target.h"
#include "dtune/util.h"
#include "dtune/version.h"

/* The one tag every dtune message travels on. */
#define WIRE_TAG 18

/* What a worker's signal handler may touch: SIGTERM ends its batch after the
 * config being timed; rank 0, whose daemon has its own handlers, then sends
 * STOP. */
static atomic_int worker_stop;

static void on_worker_signal(int sig)
{
    (void)sig;
    atomic_store(&worker_stop, 1);
}

/* ---- MPI ------------------------------------------------------------------- */

static int mpi_failed(int code, const char *what, dt_error *err)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", code);
    return dt_error_set(err, DT_EIO, "mpi: %s: %s", what, text);
}

/* One message to rank dest, encoded into buf (the sender's reusable
 * buffer), all but its last `cut` bytes sent: cut is 0 but under the tests'
 * fault (WORKER_FAULT_ENV). */
static int send_cut(const dt_wire_msg *msg, int dest, dt_buf *buf, size_t cut, dt_error *err)
{
    buf->len = 0;
    int rc = dt_wire_encode(msg, buf, err);
    if (rc)
        return rc;
    rc = MPI_Send(buf->data, (int)(buf->len - cut), MPI_BYTE, dest, WIRE_TAG, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "sending a message", err);
}

/* One whole message to rank dest. */
static int send_msg(const dt_wire_msg *msg, int dest, dt_buf *buf, dt_error *err)
{
    return send_cut(msg, dest, buf, 0, err);
}

/* Waits for a message from rank source until monotonic second give_up (0:
 * for ever): 0 with *st filled, DT_EIO with *hung set when none came, or
 * an MPI failure. */
static int wait_msg(int source, double give_up, MPI_Status *st, bool *hung, dt_error *err)
{
    if (give_up <= 0) {
        int rc = MPI_Probe(source, WIRE_TAG, MPI_COMM_WORLD, st);
        return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "waiting for a message", err);
    }
    double start = dt_now_seconds();
    for (;;) {
        int arrived = 0;
        int rc = MPI_Iprobe(source, WIRE_TAG, MPI_COMM_WORLD, &arrived, st);
        if (rc != MPI_SUCCESS)
            return mpi_failed(rc, "waiting for a message", err);
        if (arrived)
            return 0;
        if (dt_now_seconds() >= give_up) {
            *hung = true;
            return dt_error_set(err, DT_EIO, "mpi rank %d did not answer within %.0f s (its "
                                "measurement limit): it hangs or its machine is gone; what was "
                                "measured before is logged, and running the same command again "
                                "resumes", source, give_up - start);
        }
        struct timespec pause = { 0, 1000000 };     /* 1 ms: answers come per batch */
        nanosleep(&pause, NULL);
    }
}

/* The next message from rank source into *msg, waited for until give_up
 * (see wait_msg); a message longer than any valid one is refused before it
 * is received. */
static int recv_msg(int source, double give_up, bool *hung, dt_buf *buf, dt_wire_msg *msg,
                    dt_error *err)
{
    MPI_Status st;
    int count = 0;
    int rc = wait_msg(source, give_up, &st, hung, err);
    if (rc)
        return rc;
    rc = MPI_Get_count(&st, MPI_BYTE, &count);
    if (rc != MPI_SUCCESS)
        return mpi_failed(rc, "reading a message's length", err);
    if (count < 0 || (size_t)count > DT_WIRE_HEADER_BYTES + (size_t)DT_WIRE_MAX_PAYLOAD)
        return dt_error_set(err, DT_EINVAL, "mpi message from rank %d: %d bytes, over the %u-byte "
                            "limit", source, count, DT_WIRE_HEADER_BYTES + DT_WIRE_MAX_PAYLOAD);
    buf->len = 0;
    if (dt_buf_reserve(buf, (size_t)count))
        return dt_error_set(err, DT_ENOMEM, "out of memory receiving an mpi message");
    rc = MPI_Recv(buf->data, count, MPI_BYTE, source, WIRE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return mpi_failed(rc, "receiving a message", err);
    dt_error why;
    rc = dt_wire_decode(buf->data, (size_t)count, msg, &why);
    return rc ? dt_error_set(err, rc, "mpi rank %d sent a malformed message: %s", source, why.msg) : 0;
}

/* ---- what a rank says in its HELLO ---------------------------------------- */

/* The machine the run's backend measures on (machine.c's fingerprint). */
static int machine_fingerprint(const dt_config *cfg, char *buf, size_t len, dt_error *err)
{
    const dt_backend_i *b = dt_backend_choose(cfg->target, cfg->backend);
    if (!b)
        return dt_error_set(err, DT_ENOTSUP, "backend '%s' is not built into this dtune", cfg->backend);
    return dt_machine_fingerprint(b->name, cfg->seed, cfg->measure.cuda_device, buf, len, err);
}

/* A hash over every task of its signature (kind and shape) and its space's
 * schema hash, the keys the database files records under: a config index
 * names the same config on two ranks only where these agree. */
static void space_version(const dt_run_view *view, char *buf, size_t len)
{
    uint64_t h = DT_FNV1A_INIT;
    for (int k = 0; k < view->model->ntasks; k++) {
        char signature[DT_DB_SIGNATURE_MAX], schema[32];
        dt_db_task_signature(&view->model->tasks[k], signature, sizeof signature);
        dt_db_space_hash(&view->spaces[k], schema, sizeof schema);
        h = dt_fnv1a(h, signature, strlen(signature) + 1);
        h = dt_fnv1a(h, schema, strlen(schema) + 1);
    }
    snprintf(buf, len, "%016llx", (unsigned long long)h);
}

/* ---- the device of each worker ------------------------------------------------ */

/* Where this rank sits on its node: its place among the node's ranks in
 * MPI_COMM_WORLD order and whether rank 0 is one of them. Collective over
 * MPI_COMM_WORLD: every rank calls it once. */
static int node_place(int rank, int *node_rank, bool *rank0_on_node, dt_error *err)
{
    MPI_Comm node;
    int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS)
        return mpi_failed(rc, "MPI_Comm_split_type", err);
    int lowest = rank;
    rc = MPI_Comm_rank(node, node_rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Allreduce(&rank, &lowest, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    if (rc != MPI_SUCCESS)
        return mpi_failed(rc, "MPI_Allreduce (the ranks of a node)", err);
    *rank0_on_node = lowest == 0;
    return 0;
}

/* Whether cfg's backend is the CUDA one (the one that takes a device). */
static bool measures_on_cuda(const dt_config *cfg)
{
    return dt_target_measures_on_device(cfg->target, cfg->backend);
}

/* Sets cfg's measure.cuda_device for a worker at node_rank (see the file's
 * opening): left alone off CUDA, where the config sets it, or where the
 * driver cannot be asked (opening the backend then says why). */
static void choose_device(dt_config *cfg, int node_rank, bool rank0_on_node)
{
    if (!measures_on_cuda(cfg) || dt_config_given(cfg, "measure.cuda_device"))
        return;
    cfg->measure.cuda_device = dt_target_worker_device(cfg->target, cfg->backend, node_rank,
                                                       rank0_on_node);
}

/* The versions a rank says in its HELLO; the fingerprint is left "" (rank
 * 0 measures nothing: the run's machine is rank 1's). */
static void fill_versions(const dt_run_view *view, dt_wire_hello *h)
{
    memset(h, 0, sizeof *h);
    snprintf(h->dtune_version, sizeof h->dtune_version, "%s", DT_VERSION);
    space_version(view, h->space_version, sizeof h->space_version);
}

/* ---- the worker ------------------------------------------------------------ */

/* An ERROR saying why this rank could not answer (rc a DT_E* code). */
static void fill_error(dt_wire_msg *out, int rc, const char *message)
{
    out->type = DT_WIRE_ERROR;
    out->u.failure.code = rc;
    snprintf(out->u.failure.message, sizeof out->u.failure.message, "%s", message);
}

/* Fault injection for the tests: with DTUNE_MPI_WORKER_FAULT=probed in its
 * environment a worker sends every PROBED answer one byte short of the
 * length its header states, so a test can watch rank 0 refuse a malformed
 * message end to end (tests/test_mpi.c). */
#define WORKER_FAULT_ENV "DTUNE_MPI_WORKER_FAULT"

typedef struct worker {
    int rank;
    bool cut_probed;           /* WORKER_FAULT_ENV=probed */
    dt_run_view *view;         /* model, spaces, measurer: all a worker keeps */
    dt_buf buf;
    dt_wire_msg *in, *out;
    dt_point *points;
    long measured;             /* configs measured for rank 0 */
} worker;

/* Answers one MEASURE into w->out: RESULTS, or ERROR for a request that
 * names no task or config of the spaces or a backend that failed. */
static void answer_measure(worker *w, const dt_wire_measure *q)
{
    dt_wire_msg *out = w->out;
    dt_error err;
    dt_error_clear(&err);
    int rc = 0;
    if (q->task >= (uint32_t)w->view->model->ntasks)
        rc = dt_error_set(&err, DT_EINVAL, "mpi rank %d: task %u of a model of %d tasks", w->rank,
                          q->task, w->view->model->ntasks);
    const dt_space *space = rc ? NULL : &w->view->spaces[q->task];
    for (int i = 0; rc == 0 && i < q->n; i++) {
        if (q->configs[i] >= space->size)
            rc = dt_error_set(&err, DT_EINVAL, "mpi rank %d: config %llu of task %u is outside its "
                              "space of %llu", w->rank, (unsigned long long)q->configs[i], q->task,
                              (unsigned long long)space->size);
        else
            dt_space_point(space, q->configs[i], &w->points[i]);
    }
    int measured = 0;
    if (rc == 0) {
        dt_measure_limit limit = { .deadline = q->seconds > 0 ? dt_now_seconds() + q->seconds : 0,
                                   .stop = &worker_stop };
        measured = dt_measurer_run_until(w->view->measurer, space, w->points, q->n,
                                         out->u.results.results, &limit, &err);
        rc = measured < 0 ? measured : 0;
    }
    if (rc) {
        fill_error(out, rc, err.msg);
        return;
    }
    out->type = DT_WIRE_RESULTS;
    out->u.results.request = q->request;
    out->u.results.n = measured;
    w->measured += measured;
}

/* Answers one PROBE into w->out: PROBED with the task's roofline or its
 * reference's time, as the one-process run's measurer gives them, or ERROR
 * for a task the model lacks or a backend that failed. */
static void answer_probe(worker *w, const dt_wire_probe *q)
{
    dt_wire_msg *out = w->out;
    dt_error err;
    dt_error_clear(&err);
    int rc = 0;
    memset(&out->u.probed, 0, sizeof out->u.probed);
    if (q->task >= (uint32_t)w->view->model->ntasks)
        rc = dt_error_set(&err, DT_EINVAL, "mpi rank %d: task %u of a model of %d tasks", w->rank,
                          q->task, w->view->model->ntasks);
    const dt_task *t = rc ? NULL : &w->view->model->tasks[q->task];
    if (t && q->what == DT_WIRE_PROBE_REFERENCE)
        rc = dt_measurer_reference(w->view->measurer, t, &out->u.probed.reference, &err);
    else if (t)
        (void)dt_measurer_roofline(w->view->measurer, t, &out->u.probed.roofline); /* peak 0: unknown */
    if (rc) {
        fill_error(out, rc, err.msg);
        return;
    }
    out->type = DT_WIRE_PROBED;
    out->u.probed.request = q->request;
    out->u.probed.what = q->what;
}

/* Says HELLO (or ERROR when this rank could not open its part), then answers
 * rank 0 until STOP. */
static int worker_loop(worker *w, int open_rc, const dt_error *open_err, dt_error *err)
{
    dt_wire_msg *out = w->out;
    if (open_rc)
        fill_error(out, open_rc, open_err->msg);
    int rc = send_msg(out, 0, &w->buf, err);
    while (rc == 0) {
        bool hung = false;                  /* a worker waits on rank 0 for ever */
        if ((rc = recv_msg(0, 0, &hung, &w->buf, w->in, err)))
            break;
        if (w->in->type == DT_WIRE_STOP)
            return open_rc;
        if (w->in->type != DT_WIRE_MEASURE && w->in->type != DT_WIRE_PROBE) {
            rc = dt_error_set(err, DT_EINVAL, "mpi rank %d: rank 0 sent %s, expected MEASURE, "
                              "PROBE or STOP", w->rank, dt_wire_type_name(w->in->type));
            break;
        }
        if (open_rc)
            out->type = DT_WIRE_ERROR;      /* out still holds the opening's error */
        else if (w->in->type == DT_WIRE_PROBE)
            answer_probe(w, &w->in->u.probe);
        else
            answer_measure(w, &w->in->u.measure);
        if (w->cut_probed && out->type == DT_WIRE_PROBED)
            rc = send_cut(out, 0, &w->buf, 1, err);
        else
            rc = send_msg(out, 0, &w->buf, err);
    }
    return rc;
}

static int run_worker(const dt_config *cfg, int rank, dt_error *err)
{
    const char *fault = getenv(WORKER_FAULT_ENV);
    worker w = { .rank = rank, .cut_probed = fault && strcmp(fault, "probed") == 0 };
    char work_dir[DT_PATH_MAX];
    int len = snprintf(work_dir, sizeof work_dir, "%s/rank-%d", cfg->output_dir, rank);
    w.in = malloc(sizeof *w.in);
    w.out = malloc(sizeof *w.out);
    w.points = calloc(DT_WIRE_MAX_CONFIGS, sizeof *w.points);
    dt_error open_err;
    dt_error_clear(&open_err);
    int open_rc = 0;
    if (!w.in || !w.out || !w.points)
        open_rc = dt_error_set(&open_err, DT_ENOMEM, "out of memory");
    else if (len < 0 || (size_t)len >= sizeof work_dir)
        open_rc = dt_error_set(&open_err, DT_EINVAL, "output.dir is too long for a worker's "
                               "directory below it");
    else
        open_rc = dt_run_view_new(cfg, work_dir, &w.view, &open_err);
    if (open_rc == 0) {
        w.out->type = DT_WIRE_HELLO;
        fill_versions(w.view, &w.out->u.hello);
        open_rc = machine_fingerprint(cfg, w.out->u.hello.fingerprint,
                                      sizeof w.out->u.hello.fingerprint, &open_err);
    }
    if (open_rc)
        fprintf(stderr, "dtune rank %d: %s\n", rank, open_err.msg);
    else if (measures_on_cuda(cfg))
        fprintf(stderr, "dtune rank %d: measuring for rank 0 on CUDA device %d (pid %ld)\n", rank,
                cfg->measure.cuda_device, (long)getpid());
    else
        fprintf(stderr, "dtune rank %d: measuring for rank 0 (pid %ld)\n", rank, (long)getpid());
    signal(SIGTERM, on_worker_signal);
    signal(SIGINT, on_worker_signal);
    int rc;
    if (w.out) {
        rc = worker_loop(&w, open_rc, &open_err, err);
    } else {
        /* no room for the messages: rank 0 still hears why, not a silence */
        dt_wire_msg said;
        fill_error(&said, open_rc, open_err.msg);
        rc = send_msg(&said, 0, &w.buf, err);
        rc = rc ? rc : open_rc;
    }
    if (rc == 0)
        fprintf(stderr, "dtune rank %d: measured %ld configs for rank 0\n", rank, w.measured);
    else if (rc == open_rc)
        *err = open_err;                    /* said above */
    else
        fprintf(stderr, "dtune rank %d: %s\n", rank, err->msg);
    dt_run_view_free(w.view);
    dt_buf_free(&w.buf);
    free(w.in);
    free(w.out);
    free(w.points);
    return rc;
}

/* ---- rank 0 ---------------------------------------------------------------- */

/* What rank 0 waits for from one worker. */
typedef struct peer {
    uint32_t request;          /* the request out; 0: none */
    int n;                     /* configs in it (a probe: 1) */
    double limit_s;            /* how long the worker may take to answer it */
    double give_up;            /* monotonic second after which the worker is hung */
    dt_measure_result *results;/* where a batch's answer goes */
    dt_daemon_probe *probe;    /* where a probe's goes (NULL: the request is a batch) */
} peer;

typedef struct remote {
    int workers;               /* ranks 1 .. workers */
    uint32_t next_request;
    double config_limit;       /* seconds one config may take: compile + run limits */
    char machine[DT_WIRE_FINGERPRINT_MAX]; /* the run's: rank 1's fingerprint */
    bool hung;                 /* a worker did not answer in time */
    dt_buf buf;
    dt_wire_msg *msg;
    peer *peers;               /* peers[w]: rank w + 1 */
} remote;

/* Slack on top of a request's measurement limit for the message and the
 * worker's bookkeeping. */
#define ANSWER_SLACK_SECONDS 5.0
/* How long a probe may take on top of one config's limit: the roofline's
 * FMA and stream probes are several kernels built and timed, and a large
 * task's naive reference runs for minutes. */
#define PROBE_SECONDS 600.0

/* When a worker that has not answered a request of n configs is hung: each
 * config may take the config limit, and none starts past the deadline. */
static double give_up_at(const remote *rm, double deadline, int n)
{
    double end = dt_now_seconds() + n * rm->config_limit;
    if (deadline > 0 && deadline + rm->config_limit < end)
        end = deadline + rm->config_limit;
    return end + ANSWER_SLACK_SECONDS;
}

/* dt_daemon_remote's send: one MEASURE to rank w + 1. */
static int send_remote(void *ctx, int w, int task, const dt_space *space, const dt_point *points,
                       int n, double deadline, dt_measure_result *results, dt_error *err)
{
    remote *rm = ctx;
    dt_wire_measure *q = &rm->msg->u.measure;
    rm->msg->type = DT_WIRE_MEASURE;
    q->request = ++rm->next_request;
    q->task = (uint32_t)task;
    double left = deadline - dt_now_seconds();
    q->seconds = deadline <= 0 ? 0 : left > 1e-6 ? left : 1e-6;   /* 0 would mean no limit */
    q->n = n;
    for (int i = 0; i < n; i++)
        q->configs[i] = dt_space_index(space, &points[i]);
    int rc = send_msg(rm->msg, w + 1, &rm->buf, err);
    if (rc == 0)
        rm->peers[w] = (peer){ q->request, n, n * rm->config_limit + ANSWER_SLACK_SECONDS,
                               give_up_at(rm, deadline, n), results, NULL };
    return rc;
}

/* dt_daemon_remote's send_probe: one PROBE to rank w + 1. */
static int send_probe(void *ctx, int w, int task, dt_daemon_probe *probe, dt_error *err)
{
    remote *rm = ctx;
    dt_wire_probe *q = &rm->msg->u.probe;
    rm->msg->type = DT_WIRE_PROBE;
    q->request = ++rm->next_request;
    q->task = (uint32_t)task;
    q->what = probe->reference ? DT_WIRE_PROBE_REFERENCE : DT_WIRE_PROBE_ROOFLINE;
    int rc = send_msg(rm->msg, w + 1, &rm->buf, err);
    if (rc == 0)
        rm->peers[w] = (peer){ q->request, 1,
                               rm->config_limit + ANSWER_SLACK_SECONDS + PROBE_SECONDS,
                               give_up_at(rm, 0, 1) + PROBE_SECONDS, NULL, probe };
    snprintf(probe->where, sizeof probe->where, "mpi rank %d", w + 1);
    return rc;
}

/* Hands the PROBED in rm->msg, from rank `source`, to the probe its request
 * asked for. */
static int take_probed(remote *rm, int source, uint32_t request, dt_daemon_probe *probe,
                       dt_error *err)
{
    const dt_wire_probed *a = &rm->msg->u.probed;
    dt_wire_probe_kind asked = probe->reference ? DT_WIRE_PROBE_REFERENCE : DT_WIRE_PROBE_ROOFLINE;
    if (rm->msg->type != DT_WIRE_PROBED || a->request != request || a->what != asked)
        return dt_error_set(err, DT_EINVAL, "mpi rank %d answered probe %u (%s) with %s (request "
                            "%u)", source, request, probe->reference ? "reference" : "roofline",
                            dt_wire_type_name(rm->msg->type), a->request);
    if (probe->reference)
        probe->result = a->reference;
    else
        probe->roofline = a->roofline;
    return 0;
}

/* The worker with a request out whose limit passed first, or -1. */
static int hung_worker(const remote *rm)
{
    int late = -1;
    double now = dt_now_seconds();
    for (int w = 0; w < rm->workers; w++)
        if (rm->peers[w].request && now >= rm->peers[w].give_up &&
            (late < 0 || rm->peers[w].give_up < rm->peers[late].give_up))
            late = w;
    return late;
}

/* Waits until a worker with a request out has a message for rank 0: its
 * rank in *source, or DT_EIO naming the worker that did not answer in time
 * (*w set to it). */
static int wait_any(remote *rm, int *source, int *w, dt_error *err)
{
    for (;;) {
        int arrived = 0;
        MPI_Status st;
        int rc = MPI_Iprobe(MPI_ANY_SOURCE, WIRE_TAG, MPI_COMM_WORLD, &arrived, &st);
        if (rc != MPI_SUCCESS)
            return mpi_failed(rc, "waiting for a message", err);
        if (arrived) {
            *source = st.MPI_SOURCE;
            return 0;
        }
        int late = hung_worker(rm);
        if (late >= 0) {
            rm->hung = true;
            *w = late;
            rm->peers[late].request = 0;        /* said once; the others' answers still count */
            return dt_error_set(err, DT_EIO, "mpi rank %d did not answer within %.0f s (its "
                                "measurement limit): it hangs or its machine is gone; what was "
                                "measured before is logged, and running the same command again "
                                "resumes", late + 1, rm->peers[late].limit_s);
        }
        struct timespec pause = { 0, 1000000 };     /* 1 ms: answers come per batch */
        nanosleep(&pause, NULL);
    }
}

/* dt_daemon_remote's receive: the next RESULTS of any worker with a
 * request out, checked against that request. */
static int receive_remote(void *ctx, int *w, int *measured, dt_error *err)
{
    remote *rm = ctx;
    int source = -1;
    *w = -1;
    int rc = wait_any(rm, &source, w, err);
    if (rc)
        return rc;
    bool hung = false;
    rc = recv_msg(source, 0, &hung, &rm->buf, rm->msg, err);
    if (source < 1 || source > rm->workers)
        return rc ? rc : dt_error_set(err, DT_EINVAL, "mpi rank %d is no worker of this run", source);
    *w = source - 1;
    peer *p = &rm->peers[*w];
    uint32_t request = p->request;
    p->request = 0;
    if (rc)
        return rc;
    if (rm->msg->type == DT_WIRE_ERROR)
        return dt_error_set(err, rm->msg->u.failure.code < 0 ? rm->msg->u.failure.code : DT_EIO,
                            "mpi rank %d: %s", source, rm->msg->u.failure.message);
    if (p->probe) {
        *measured = 1;
        return take_probed(rm, source, request, p->probe, err);
    }
    const dt_wire_results *a = &rm->msg->u.results;
    if (rm->msg->type != DT_WIRE_RESULTS || request == 0 || a->request != request || a->n > p->n)
        return dt_error_set(err, DT_EINVAL, "mpi rank %d answered request %u of %d configs with %s "
                            "(request %u, %d results)", source, request, p->n,
                            dt_wire_type_name(rm->msg->type), a->request, a->n);
    memcpy(p->results, a->results, (size_t)a->n * sizeof *p->results);
    *measured = a->n;
    return 0;
}

/* Reads rank `rank`'s HELLO and checks it against the run's (mine: rank 0's
 * versions, and the machine of rank 1, which the first HELLO sets). */
static int greet_worker(remote *rm, int rank, dt_wire_hello *mine, dt_error *err)
{
    bool hung = false;         /* opening a worker is loading a model and building spaces */
    int rc = recv_msg(rank, give_up_at(rm, 0, 1), &hung, &rm->buf, rm->msg, err);
    rm->hung = rm->hung || hung;
    if (rc)
        return rc;
    if (rm->msg->type == DT_WIRE_ERROR)
        return dt_error_set(err, rm->msg->u.failure.code < 0 ? rm->msg->u.failure.code : DT_EIO,
                            "mpi rank %d could not start: %s", rank, rm->msg->u.failure.message);
    if (rm->msg->type != DT_WIRE_HELLO)
        return dt_error_set(err, DT_EINVAL, "mpi rank %d sent %s before its HELLO", rank,
                            dt_wire_type_name(rm->msg->type));
    if (rank == 1)
        snprintf(mine->fingerprint, sizeof mine->fingerprint, "%s", rm->msg->u.hello.fingerprint);
    if ((rc = dt_wire_hello_check(mine, &rm->msg->u.hello, rank, err)))
        return rc;
    fprintf(stderr, "dtune: mpi: rank %d measures (%s)\n", rank, rm->msg->u.hello.fingerprint);
    return 0;
}

/* Every worker's HELLO, checked against the run's; the run's machine (rank
 * 1's fingerprint) into rm->machine. */
static int greet_workers(const dt_config *cfg, remote *rm, dt_error *err)
{
    dt_run_view *view = NULL;
    dt_wire_hello mine;
    int rc = dt_run_view_new(cfg, NULL, &view, err);
    if (rc == 0)
        fill_versions(view, &mine);
    dt_run_view_free(view);
    for (int w = 0; rc == 0 && w < rm->workers; w++)
        rc = greet_worker(rm, w + 1, &mine, err);
    snprintf(rm->machine, sizeof rm->machine, "%s", rc == 0 ? mine.fingerprint : "");
    return rc;
}

static int run_rank0(const dt_config *cfg, int size, dt_daemon_result *res, dt_error *err)
{
    remote rm = { .workers = size - 1, .config_limit = dt_measure_compile_timeout(&cfg->measure) +
                                                       cfg->measure.timeout_seconds };
    rm.msg = malloc(sizeof *rm.msg);
    rm.peers = calloc((size_t)rm.workers, sizeof *rm.peers);
    if (!rm.msg || !rm.peers) {
        free(rm.msg);
        free(rm.peers);
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    }
    int rc = greet_workers(cfg, &rm, err);
    dt_daemon_remote via = { .workers = rm.workers, .max_configs = DT_WIRE_MAX_CONFIGS,
                             .send = send_remote, .receive = receive_remote,
                             .send_probe = send_probe, .machine = rm.machine, .ctx = &rm };
    if (rc == 0)
        rc = dt_daemon_run_remote(cfg, &via, res, err);
    if (rm.hung) {
        /* MPI cannot finalise beside a rank that does not answer: the log is
         * complete, so end the job (mpirun stops every rank) */
        fprintf(stderr, "dtune tune: %s\n", err->msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* every worker waits for STOP whatever happened here; an answer still
     * out (the run ended on another worker's error) is dropped first */
    for (int w = 0; w < rm.workers; w++) {
        bool hung = false;
        dt_error drop_err;
        if (rm.peers[w].request)
            recv_msg(w + 1, give_up_at(&rm, 0, rm.peers[w].n), &hung, &rm.buf, rm.msg, &drop_err);
        dt_error stop_err;
        rm.msg->type = DT_WIRE_STOP;
        int stop_rc = send_msg(rm.msg, w + 1, &rm.buf, &stop_err);
        if (rc == 0 && stop_rc)
            rc = stop_rc, *err = stop_err;
    }
    dt_buf_free(&rm.buf);
    free(rm.msg);
    free(rm.peers);
    return rc;
}

int dt_mpi_tune(const dt_config *cfg, dt_daemon_result *res, bool *is_worker, dt_error *err)
{
    memset(res, 0, sizeof *res);
    *is_worker = false;
    int provided, rank = 0, size = 1;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS)
        return mpi_failed(rc, "MPI_Init_thread", err);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    *is_worker = rank > 0;
    if (size == 1)
        return dt_daemon_run(cfg, res, err);
    int node_rank = 0;
    bool rank0_on_node = false;
    if ((rc = node_place(rank, &node_rank, &rank0_on_node, err)) != 0)
        return rc;
    if (rank == 0)
        return run_rank0(cfg, size, res, err);
    dt_config mine = *cfg;     /* on the stack: a worker that fails here never says HELLO */
    choose_device(&mine, node_rank, rank0_on_node);
    return run_worker(&mine, rank, err);
}

void dt_mpi_finish(void)
{
    /* what the rank said goes out first: an mpirun that was sent SIGTERM
     * may end its ranks inside MPI_Finalize */
    fflush(stdout);
    fflush(stderr);
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    if (initialised && !finalised)
        MPI_Finalize();
}
