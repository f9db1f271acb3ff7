/* cuda_backend.c — the `cuda` backend: NVRTC builds in the builder threads,
 * timing in a separate measurement process (see cuda_backend.h).
 *
 * Parent and measurement process talk over one AF_UNIX stream socket in
 * fixed-size messages (both ends are the same executable, so the structs are
 * laid out alike): the child says hello with the device it opened; then per
 * candidate the parent sends a request (task, launch geometry, image path,
 * measurement settings), the child answers "ready" once the task's inputs
 * and reference exist (the candidate's timeout starts there) and then the
 * result. The parent kills a child that overruns and starts a new one on the
 * next run; a child whose context was lost exits after answering.
 */
#include "cuda_backend.h"
#include "ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cuda_codegen.h"
#include "cuda_api.h"
#include "cuda_runner.h"
#include "dtune/measure.h"
#include "dtune/proclimit.h"
#include "dtune/util.h"

extern char **environ;

#define MSG_MAGIC 0x64744355u            /* "dtCU" */
#define CHILD_FD 3
#define HELLO_TIMEOUT_S 120.0
#define READY_TIMEOUT_S 600.0            /* naive reference of a large task */
#define EXIT_WAIT_S 5.0

/* ---- the backend's state -------------------------------------------------------- */

typedef struct cuda_backend {
    dt_measure_params measure;
    char work_dir[DT_PATH_MAX];
    char cache_dir[DT_PATH_MAX];
    char runner_exe[DT_PATH_MAX];
    uint64_t seed;
    const dt_nvrtc *nvrtc;
    dt_cuda_device_info device;
    dt_cuda_limits limits;
    int arch;
    bool ptx;
    atomic_ulong tmp_counter;      /* unique temporary names across builders */
    bool build_only;               /* dt_cuda_backend_open_builder's: no device behind it */
    /* the runner thread's: the measurement process */
    pid_t child;
    int sock;
} cuda_backend;

static int runner_path(char *out, size_t len, dt_error *err)
{
    const char *env = getenv("DTUNE_CUDA_RUNNER");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return 0;
    }
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    if (n < 0)
        return dt_error_set(err, DT_EIO, "readlink /proc/self/exe: %s", strerror(errno));
    out[n] = '\0';
    return 0;
}

static void device_limits(const dt_cuda_device_info *d, dt_cuda_limits *l)
{
    dt_cuda_plan_limits_default(l);
    l->max_threads = d->max_threads;
    l->max_shared_bytes = d->max_shared_optin > d->max_shared ? d->max_shared_optin : d->max_shared;
    l->max_grid_yz = d->max_grid_y < d->max_grid_z ? d->max_grid_y : d->max_grid_z;
}

/* Everything but the device probe: b->device is set. */
static int setup(cuda_backend *b, const dt_backend_params *params, dt_error *err)
{
    int rc = dt_cuda_api_nvrtc_load(&b->nvrtc, err);
    if (rc)
        return rc;
    b->arch = dt_cuda_api_nvrtc_pick_arch(b->nvrtc, b->device.cc, &b->ptx);
    if (b->arch < 0)
        return dt_error_set(err, DT_ENOTSUP, "%s cannot compile for compute capability %d.%d",
                            b->nvrtc->path, b->device.cc / 10, b->device.cc % 10);
    device_limits(&b->device, &b->limits);
    b->measure = *params->measure;
    b->seed = params->seed;
    snprintf(b->work_dir, sizeof b->work_dir, "%s", params->work_dir ? params->work_dir : ".");
    snprintf(b->cache_dir, sizeof b->cache_dir, "%.1000s/cuda", b->work_dir);
    if ((rc = dt_mkdir_p(b->cache_dir, err)))
        return rc;
    return runner_path(b->runner_exe, sizeof b->runner_exe, err);
}

/* DEVICE NULL: probe measure.cuda_device. */
static int open_for(const dt_cuda_device_info *device, const dt_backend_params *params,
                    void **state, dt_error *err)
{
    *state = NULL;
    cuda_backend *b = calloc(1, sizeof *b);
    if (!b)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    b->child = -1;
    b->sock = -1;
    atomic_init(&b->tmp_counter, 0);
    dt_error why;
    int rc = 0;
    b->build_only = device != NULL;
    if (device)
        b->device = *device;
    else if (dt_cuda_api_device_probe(params->measure->cuda_device, &b->device, &why) != 0)
        rc = dt_error_set(err, DT_ENODEV, "no CUDA device found: %s", why.msg);
    if (rc == 0)
        rc = setup(b, params, err);
    if (rc) {
        free(b);
        return rc;
    }
    *state = b;
    return 0;
}

static int cuda_open(const dt_backend_params *params, void **state, dt_error *err)
{
    return open_for(NULL, params, state, err);
}

int dt_cuda_backend_open_builder(const dt_cuda_device_info *device, const dt_backend_params *params,
                                 void **state, dt_error *err)
{
    return open_for(device, params, state, err);
}

void dt_cuda_backend_device_hopper(dt_cuda_device_info *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "compute capability 9.0, not present");
    d->cc = 90;
    d->sms = 132;
    d->max_threads = 1024;
    d->max_shared = 48 * 1024;
    d->max_shared_optin = 227 * 1024;
    d->max_grid_y = d->max_grid_z = 65535;
}

/* ---- build ------------------------------------------------------------------------ */

/* FNV-1a over the plan's description and the task's shape. */
static uint64_t plan_hash(const dt_cuda_plan *plan)
{
    char text[512], shape[160];
    dt_cuda_plan_str(plan, text, sizeof text);
    dt_task_shape_str(&plan->task, shape, sizeof shape);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const char *parts[] = { text, shape, dt_op_kind_name(plan->task.kind) }, **p = parts;
         p < parts + 3; p++)
        for (const unsigned char *c = (const unsigned char *)*p; *c; c++)
            h = (h ^ *c) * 0x100000001b3ULL;
    return h;
}

static void artifact_path(const cuda_backend *b, const dt_cuda_plan *plan, char *out, size_t len)
{
    snprintf(out, len, "%.900s/%s_%016llx_%s%d.%s", b->cache_dir,
             dt_op_kind_name(plan->task.kind), (unsigned long long)plan_hash(plan),
             b->ptx ? "compute_" : "sm_", b->arch, b->ptx ? "ptx" : "cubin");
}

static int write_image(cuda_backend *b, const char *path, const dt_cuda_image *image, dt_error *err)
{
    char tmp[DT_PATH_MAX + 32];
    unsigned long n = atomic_fetch_add(&b->tmp_counter, 1);
    snprintf(tmp, sizeof tmp, "%s.%ld.%lu.tmp", path, (long)getpid(), n);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return dt_error_set(err, DT_EIO, "cannot write %s: %s", tmp, strerror(errno));
    size_t bytes = image->size + (image->ptx ? 1 : 0);
    bool ok = fwrite(image->data, 1, bytes, f) == bytes;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return dt_error_set(err, DT_EIO, "cannot write %s", path);
    }
    return 0;
}

static void artifact_result(dt_artifact *out, dt_result_class cls, const char *detail)
{
    out->result = cls;
    snprintf(out->detail, sizeof out->detail, "%.159s", detail);
}

/* Generates and compiles; compile problems become the artifact's class. */
static int compile_plan(cuda_backend *b, const dt_cuda_plan *plan, dt_artifact *out, dt_error *err)
{
    char *source = NULL;
    dt_error why;
    int rc = dt_cuda_codegen(plan, &source, &why);
    if (rc) {
        artifact_result(out, DT_RESULT_INVALID, why.msg);
        return rc == DT_ENOMEM ? dt_error_set(err, rc, "%s", why.msg) : 0;
    }
    dt_cuda_image image;
    double start = dt_now_seconds();
    rc = dt_cuda_api_nvrtc_compile(b->nvrtc, source, plan->task.name, b->arch, b->ptx, &image, &why);
    out->compile_ms = (dt_now_seconds() - start) * 1e3;
    free(source);
    if (rc == DT_ENOMEM)
        return dt_error_set(err, rc, "%s", why.msg);
    if (rc) {
        artifact_result(out, DT_RESULT_COMPILE_ERROR, why.msg);
        return 0;
    }
    rc = write_image(b, out->path, &image, err);
    dt_cuda_api_image_free(&image);
    if (rc == 0 && out->compile_ms > dt_measure_compile_timeout(&b->measure) * 1e3)
        artifact_result(out, DT_RESULT_COMPILE_TIMEOUT, "NVRTC ran past the compile limit");
    return rc;
}

static int cuda_build(void *state, const dt_space *space, const dt_point *point, dt_artifact *out,
                      dt_error *err)
{
    cuda_backend *b = state;
    memset(out, 0, sizeof *out);
    dt_cuda_plan plan;
    dt_cuda_plan_from_point(space, point, &plan);
    dt_error why;
    if (dt_cuda_plan_check(&plan, &b->limits, &why) != 0) {
        artifact_result(out, DT_RESULT_INVALID, why.msg);
        return 0;
    }
    artifact_path(b, &plan, out->path, sizeof out->path);
    out->result = DT_RESULT_OK;
    if (access(out->path, R_OK) == 0) {
        snprintf(out->detail, sizeof out->detail, "cached");
        return 0;
    }
    return compile_plan(b, &plan, out, err);
}

/* ---- the measurement process: messages ------------------------------------------- */

typedef struct msg_hello {
    uint32_t magic;
    int32_t status;                /* 0 or a DT_E* code */
    char detail[DT_ERROR_MSG_MAX];
    dt_cuda_device_info device;
} msg_hello;

typedef struct msg_request {
    uint32_t magic;
    dt_task task;
    dt_cuda_launch launch;
    dt_measure_params measure;
    uint64_t seed;
    char image_path[DT_PATH_MAX];
} msg_request;

enum { PHASE_READY = 1, PHASE_RESULT = 2, PHASE_FAILED = 3 };

typedef struct msg_reply {
    uint32_t magic;
    int32_t phase;
    int32_t context_lost;
    dt_measure_result result;
    char error[DT_ERROR_MSG_MAX];  /* PHASE_FAILED: the session's own failure */
} msg_reply;

/* ---- the measurement process: child side ----------------------------------------- */

typedef struct child_ctx {
    int fd;
    bool send_failed;
} child_ctx;

static void announce_ready(void *arg)
{
    child_ctx *c = arg;
    msg_reply ready = { .magic = MSG_MAGIC, .phase = PHASE_READY };
    if (!dt_ipc_send_all(c->fd, &ready, sizeof ready))
        c->send_failed = true;
}

/* Reads the image file named by the request into memory. */
static char *read_image_file(const char *path, char *detail, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(detail, len, "cannot open %.100s: %.40s", path, strerror(errno));
        return NULL;
    }
    char *data = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)size + 1)))
        if (fread(data, 1, (size_t)size, f) != (size_t)size) {
            free(data);
            data = NULL;
        }
    fclose(f);
    if (!data)
        snprintf(detail, len, "cannot read %.140s", path);
    else
        data[size] = '\0';
    return data;
}

/* Serves one request; returns false when the process should exit. */
static bool serve_request(dt_cuda_session *s, child_ctx *c, const msg_request *req)
{
    msg_reply reply = { .magic = MSG_MAGIC, .phase = PHASE_RESULT };
    char *image = read_image_file(req->image_path, reply.result.detail, sizeof reply.result.detail);
    if (!image) {
        announce_ready(c);
        reply.result.result = DT_RESULT_RUNNER_ERROR;
        return dt_ipc_send_all(c->fd, &reply, sizeof reply) && !c->send_failed;
    }
    dt_cuda_job job = { &req->task, &req->launch, image, &req->measure, req->seed, announce_ready, c };
    bool lost = false;
    dt_error err = { 0 };
    int rc = dt_cuda_runner_session_measure(s, &job, &reply.result, &lost, &err);
    free(image);
    if (rc) {
        reply.phase = PHASE_FAILED;
        snprintf(reply.error, sizeof reply.error, "%s", err.msg);
    }
    reply.context_lost = lost;
    bool sent = dt_ipc_send_all(c->fd, &reply, sizeof reply) && !c->send_failed;
    return sent && !lost && rc == 0;
}

static int child_hello(int fd, int ordinal, dt_cuda_session **s)
{
    msg_hello hello = { .magic = MSG_MAGIC };
    dt_error err = { 0 };
    hello.status = dt_cuda_runner_session_open(ordinal, s, &hello.device, &err);
    snprintf(hello.detail, sizeof hello.detail, "%s", hello.status ? err.msg : "");
    bool sent = dt_ipc_send_all(fd, &hello, sizeof hello);
    return sent && hello.status == 0 ? 0 : 1;
}

void dt_cuda_backend_task_memory(dt_model_memory *memory)
{
    dt_cuda_device_info device;
    dt_error why;
    memset(memory, 0, sizeof *memory);
    if (dt_cuda_api_device_probe(dt_measure_params_default().cuda_device, &device, &why) != 0 ||
        !device.memory_bytes)
        return;
    memory->task_bytes = (uint64_t)(DT_CUDA_MEMORY_SHARE * (double)device.memory_bytes);
    snprintf(memory->source, sizeof memory->source, "%g of the %.3g GiB of %.80s",
             DT_CUDA_MEMORY_SHARE, (double)device.memory_bytes / (1 << 30), device.name);
}

int dt_cuda_backend_runner_main(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[1], DT_CUDA_RUNNER_ARG) != 0) {
        fprintf(stderr, "usage: %s %s FD (internal: the CUDA measurement process)\n", argv[0],
                DT_CUDA_RUNNER_ARG);
        return 1;
    }
    /* Ctrl-C reaches the whole process group; the parent stops gracefully
     * and closes the socket, so the measurement process must not die with
     * the candidate in flight (it would be logged as a crash). */
    signal(SIGINT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    int fd = atoi(argv[2]);
    /* CPU time and open files (proclimit.h); the address space stays free:
     * the driver reserves far more of it than the process uses */
    dt_proclimit limits = { 0 };
    if (argc >= 6 && strcmp(argv[3], "--limits") == 0) {
        limits.cpu_seconds = strtod(argv[4], NULL);
        limits.open_files = atoi(argv[5]);
        if (dt_proclimit_apply(&limits) != 0)
            perror("dtune CUDA runner: setrlimit");
    }
    int ordinal = argc >= 8 && strcmp(argv[6], "--device") == 0 ? atoi(argv[7]) : 0;
    dt_cuda_session *s = NULL;
    if (child_hello(fd, ordinal, &s) != 0) {
        dt_cuda_runner_session_close(s);
        return 1;
    }
    child_ctx c = { .fd = fd };
    msg_request req;
    int status = 0;
    while (dt_ipc_recv_all(fd, &req, sizeof req, -1) == 1) {
        if (req.magic != MSG_MAGIC) {
            status = 1;
            break;
        }
        dt_proclimit_cpu_budget(&limits);
        if (!serve_request(s, &c, &req)) {
            status = 3;
            break;
        }
    }
    dt_cuda_runner_session_close(s);
    close(fd);
    return status;
}

/* ---- the measurement process: parent side ----------------------------------------- */

static void reap_child(cuda_backend *b, bool kill_first)
{
    if (b->sock >= 0)
        close(b->sock);
    b->sock = -1;
    if (b->child <= 0)
        return;
    if (kill_first)
        kill(b->child, SIGKILL);
    double deadline = dt_now_seconds() + EXIT_WAIT_S;
    int status;
    while (waitpid(b->child, &status, WNOHANG) == 0) {
        if (dt_now_seconds() > deadline) {
            kill(b->child, SIGKILL);
            waitpid(b->child, &status, 0);
            break;
        }
        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    }
    b->child = -1;
}

static int spawn_child(cuda_backend *b, int child_end, dt_error *err)
{
    posix_spawn_file_actions_t actions;
    if (posix_spawn_file_actions_init(&actions) != 0)
        return dt_error_set(err, DT_ENOMEM, "posix_spawn_file_actions_init failed");
    char fd_arg[16];
    snprintf(fd_arg, sizeof fd_arg, "%d", CHILD_FD);
    char seconds[32], files[16], device[16];
    snprintf(seconds, sizeof seconds, "%.17g", b->measure.limit_cpu_seconds);
    snprintf(files, sizeof files, "%d", b->measure.limit_open_files);
    snprintf(device, sizeof device, "%d", b->measure.cuda_device);
    char *argv[] = { b->runner_exe, (char *)DT_CUDA_RUNNER_ARG, fd_arg, "--limits", seconds, files,
                     "--device", device, NULL };
    int rc = posix_spawn_file_actions_adddup2(&actions, child_end, CHILD_FD);
    if (rc == 0)
        rc = posix_spawn(&b->child, b->runner_exe, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        b->child = -1;
        return dt_error_set(err, DT_EIO, "cannot start the CUDA measurement process %s: %s",
                            b->runner_exe, strerror(rc));
    }
    return 0;
}

/* The child's end must not sit on CHILD_FD already: dup2 onto itself would
 * leave close-on-exec set. */
static int make_socket(int ends[2], dt_error *err)
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
        return dt_error_set(err, DT_EIO, "socketpair: %s", strerror(errno));
    if (ends[1] == CHILD_FD) {
        int moved = fcntl(ends[1], F_DUPFD_CLOEXEC, CHILD_FD + 1);
        close(ends[1]);
        ends[1] = moved;
        if (moved < 0) {
            close(ends[0]);
            return dt_error_set(err, DT_EIO, "fcntl: %s", strerror(errno));
        }
    }
    return 0;
}

static int start_child(cuda_backend *b, dt_error *err)
{
    int ends[2];
    int rc = make_socket(ends, err);
    if (rc)
        return rc;
    rc = spawn_child(b, ends[1], err);
    close(ends[1]);
    b->sock = ends[0];
    if (rc) {
        reap_child(b, false);
        return rc;
    }
    msg_hello hello;
    int got = dt_ipc_recv_all(b->sock, &hello, sizeof hello, HELLO_TIMEOUT_S);
    if (got == 1 && hello.magic == MSG_MAGIC && hello.status == 0)
        return 0;
    reap_child(b, true);
    if (got != 1)
        return dt_error_set(err, DT_ENODEV, "the CUDA measurement process %s did not start "
                            "(it must handle '%s')", b->runner_exe, DT_CUDA_RUNNER_ARG);
    return dt_error_set(err, hello.status ? hello.status : DT_EIO, "CUDA measurement process: %s",
                        hello.detail);
}

/* What happened to a child that stopped answering. */
static void child_gone(cuda_backend *b, dt_measure_result *out)
{
    int status = 0;
    pid_t pid = b->child;
    if (b->sock >= 0)
        close(b->sock);
    b->sock = -1;
    b->child = -1;
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status)) {
        dt_proclimit limits = { .cpu_seconds = b->measure.limit_cpu_seconds };
        out->result = DT_RESULT_CRASH;
        dt_proclimit_explain(&limits, status, out->detail, sizeof out->detail);
        if (!out->detail[0])
            snprintf(out->detail, sizeof out->detail, "measurement process killed by signal %d (%s)",
                     WTERMSIG(status), strsignal(WTERMSIG(status)));
        return;
    }
    out->result = DT_RESULT_RUNNER_ERROR;
    snprintf(out->detail, sizeof out->detail, "measurement process exited (status %d)",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void timed_out(cuda_backend *b, dt_measure_result *out, const char *phase)
{
    reap_child(b, true);
    out->result = DT_RESULT_TIMEOUT;
    snprintf(out->detail, sizeof out->detail, "%s ran past %.1f s", phase,
             b->measure.timeout_seconds);
}

/* Waits for one reply of the given phase. Returns 1, or 0 with out filled
 * (the child is gone), or a negative DT_E* for a session failure. */
static int await(cuda_backend *b, int phase, double timeout_s, msg_reply *reply,
                 dt_measure_result *out, dt_error *err)
{
    int got = dt_ipc_recv_all(b->sock, reply, sizeof *reply, timeout_s);
    if (got < 0) {
        timed_out(b, out, phase == PHASE_READY ? "preparing the task" : "the candidate");
        return 0;
    }
    if (got == 0 || reply->magic != MSG_MAGIC) {
        child_gone(b, out);
        return 0;
    }
    if (reply->phase == PHASE_FAILED) {
        reap_child(b, true);
        return dt_error_set(err, DT_ELIB, "CUDA measurement process: %s", reply->error);
    }
    return reply->phase == phase ? 1 : (child_gone(b, out), 0);
}

static int exchange(cuda_backend *b, const msg_request *req, dt_measure_result *out, dt_error *err)
{
    if (!dt_ipc_send_all(b->sock, req, sizeof *req)) {
        child_gone(b, out);
        return 0;
    }
    msg_reply reply;
    int rc = await(b, PHASE_READY, READY_TIMEOUT_S, &reply, out, err);
    if (rc == 1)
        rc = await(b, PHASE_RESULT, b->measure.timeout_seconds, &reply, out, err);
    if (rc != 1)
        return rc;
    *out = reply.result;
    if (reply.context_lost)
        reap_child(b, false);
    return 0;
}

static int cuda_run(void *state, const dt_space *space, const dt_point *point,
                    const dt_artifact *artifact, dt_measure_result *out, dt_error *err)
{
    cuda_backend *b = state;
    if (b->build_only)
        return dt_error_set(err, DT_ENOTSUP, "a CUDA backend opened for building runs nothing");
    memset(out, 0, sizeof *out);
    out->compile_ms = artifact->compile_ms;
    if (artifact->result != DT_RESULT_OK) {
        out->result = artifact->result;
        snprintf(out->detail, sizeof out->detail, "%s", artifact->detail);
        return 0;
    }
    int rc = b->child > 0 ? 0 : start_child(b, err);
    if (rc)
        return rc;
    msg_request req = { .magic = MSG_MAGIC, .task = space->task, .measure = b->measure,
                        .seed = b->seed };
    dt_cuda_plan plan;
    dt_cuda_plan_from_point(space, point, &plan);
    dt_cuda_plan_launch(&plan, &req.launch);
    snprintf(req.image_path, sizeof req.image_path, "%s", artifact->path);
    double start = dt_now_seconds();
    rc = exchange(b, &req, out, err);
    out->compile_ms = artifact->compile_ms;
    out->run_ms = (dt_now_seconds() - start) * 1e3;
    return rc;
}

static double cuda_peak(void *state, const dt_task *task)
{
    const cuda_backend *b = state;
    return dt_cuda_api_peak_gflops(&b->device);
}

static void cuda_close(void *state)
{
    cuda_backend *b = state;
    if (!b)
        return;
    reap_child(b, false);
    free(b);
}

const dt_backend_i dt_cuda_backend = {
    .name = "cuda",
    .target = DT_TARGET_CUDA,
    .open = cuda_open,
    .build = cuda_build,
    .run = cuda_run,
    .peak_gflops = cuda_peak,
    .close = cuda_close,
};
