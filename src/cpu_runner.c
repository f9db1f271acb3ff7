/* cpu_runner.c — the CPU measurement process and its parent-side handle.
 *
 * Parent side: the child is started with posix_spawn (safe in a threaded
 * daemon: no code runs between fork and exec), in its own process group,
 * with default signal dispositions and an empty signal mask. A request is
 * sent; the reply is awaited with poll: first "ready" (inputs and reference
 * exist) within ready_timeout_seconds, then the result within
 * timeout_seconds. A task whose reference ran past its limit is refused at
 * once afterwards, with the same reason: its reference would only run past
 * it again. EOF means the child died:
 * waitpid says how, and the candidate is classed a crash. A timeout kills the
 * child's process group. Wrong output also retires the child, since a kernel
 * that writes wrong values may have written outside its buffers too.
 *
 * Child side: one loop over requests; tensors of the last (task, seed) are
 * kept so consecutive candidates of a task share inputs and the reference.
 * libgomp is loaded once with RTLD_NODELETE before the first OpenMP kernel:
 * unloading it with a kernel would unmap the code its idle threads sleep in.
 */
#include "cpu_runner_internal.h"
#include "ipc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

#include "cpu_codegen.h"
#include "dtune/measure.h"
#include "dtune/util.h"

extern char **environ;

#define MSG_MAGIC 0x64744350u      /* "dtCP" */
#define CHILD_FD 3
#define MAX_PIN_CPUS 64
#define EVICT_LINE 64              /* bytes: the smallest cache line evict() assumes */

enum { MSG_READY = 1, MSG_RESULT = 2 };

typedef struct reply_msg {
    uint32_t magic;
    uint32_t type;
    dt_measure_result result;
} reply_msg;

typedef struct request_msg {
    uint32_t magic;
    dt_cpu_runner_request req;
} request_msg;

/* ---- shared helpers ---------------------------------------------------------- */

void dt_cpu_runner_fill(float *data, size_t n, uint64_t seed)
{
    uint64_t state = seed;
    dt_measure_fill(data, n, &state);
}

/* ---- child side ----------------------------------------------------------------- */

typedef size_t (*workspace_fn)(void);
typedef void (*prepare_fn)(const float *, float *);
typedef void (*kernel_fn)(const float *, const float *, float *, float *);
typedef void (*epilogue_kernel_fn)(const float *, const float *, float *, float *, const float *,
                                   const float *, int);
typedef double (*flops_fn)(void);
typedef void (*spread_fn)(float *const *, const size_t *, int);

typedef struct child_state {
    int fd;
    bool have_data;
    dt_task task;
    uint64_t seed;
    size_t n_in, n_w, n_out, n_bias;   /* n_bias: 0 without a bias */
    float *input, *weight, *reference;
    float *bias, *residual;    /* a task with an epilogue: its other inputs (else NULL) */
    bool gomp_pinned;
    dt_proclimit limits;
} child_state;

typedef struct loaded_kernel {
    void *handle;
    prepare_fn prepare;
    kernel_fn kernel;          /* NULL: the task's reference implementation */
    epilogue_kernel_fn kernel_epilogue;   /* a task with an epilogue: called instead */
    spread_fn spread;          /* DT_CPU_KERNEL_SPREAD: a multi-threaded kernel's, else NULL */
    float *workspace, *output;
    size_t workspace_floats;
    double flops;              /* per call: the request's, or dt_kernel_flops() */
} loaded_kernel;

static void *alloc_floats(size_t n)
{
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

static void drop_data(child_state *c)
{
    free(c->input);
    free(c->weight);
    free(c->reference);
    free(c->bias);
    free(c->residual);
    c->input = c->weight = c->reference = c->bias = c->residual = NULL;
    c->n_bias = 0;
    c->have_data = false;
}

static int ensure_data(child_state *c, const dt_cpu_runner_request *req)
{
    if (c->have_data && c->seed == req->seed && memcmp(&c->task, &req->task, sizeof c->task) == 0)
        return 0;
    drop_data(c);
    dt_task_tensor_sizes(&req->task, &c->n_in, &c->n_w, &c->n_out);
    c->input = alloc_floats(c->n_in);
    c->weight = alloc_floats(c->n_w);
    if (!c->input || !c->weight)
        return -1;
    dt_cpu_runner_fill(c->input, c->n_in, req->seed);
    dt_cpu_runner_fill(c->weight, c->n_w, req->seed ^ 0x5eedULL);
    const dt_task *t = &req->task;
    if (t->epilogue.bias) {
        bool conv = t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D;
        c->n_bias = conv ? (size_t)t->conv.c_out : (size_t)t->mm.n;
        if (!(c->bias = alloc_floats(c->n_bias)))
            return -1;
        dt_cpu_runner_fill(c->bias, c->n_bias, req->seed ^ 0xb1a5ULL);
    }
    if (t->epilogue.residual) {
        if (!(c->residual = alloc_floats(c->n_out)))
            return -1;
        dt_cpu_runner_fill(c->residual, c->n_out, req->seed ^ 0x2e51ULL);
    }
    c->task = req->task;
    c->seed = req->seed;
    c->have_data = true;
    return 0;
}

static int ensure_reference(child_state *c)
{
    if (c->reference)
        return 0;
    c->reference = alloc_floats(c->n_out);
    if (!c->reference)
        return -1;
    dt_task_reference(&c->task, c->input, c->weight, c->reference);
    dt_task_apply_epilogue(&c->task, c->bias, c->residual, c->task.epilogue.act, c->reference);
    return 0;
}

static int load_kernel(child_state *c, const dt_cpu_runner_request *req, loaded_kernel *k,
                       dt_measure_result *res)
{
    memset(k, 0, sizeof *k);
    if (req->threads > 1 && !c->gomp_pinned)
        c->gomp_pinned = dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE) != NULL;
    k->handle = dlopen(req->artifact, RTLD_NOW | RTLD_LOCAL);
    workspace_fn ws = k->handle ? (workspace_fn)dlsym(k->handle, DT_CPU_KERNEL_ENTRY "_workspace_bytes") : NULL;
    k->prepare = k->handle ? (prepare_fn)dlsym(k->handle, DT_CPU_KERNEL_ENTRY "_prepare") : NULL;
    k->kernel = k->handle ? (kernel_fn)dlsym(k->handle, DT_CPU_KERNEL_ENTRY) : NULL;
    if (k->kernel && dt_task_has_epilogue(&req->task))
        k->kernel_epilogue = (epilogue_kernel_fn)dlsym(k->handle, DT_CPU_KERNEL_ENTRY "_epilogue");
    if (!ws || !k->prepare || !k->kernel ||
        (dt_task_has_epilogue(&req->task) && !k->kernel_epilogue)) {
        const char *why = dlerror();
        res->result = DT_RESULT_RUNNER_ERROR;
        snprintf(res->detail, sizeof res->detail, "cannot load kernel: %s", why ? why : "?");
        return -1;
    }
    k->spread = req->spread ? (spread_fn)dlsym(k->handle, DT_CPU_KERNEL_SPREAD) : NULL;
    flops_fn own_flops = (flops_fn)dlsym(k->handle, "dt_kernel_flops");
    k->flops = own_flops ? own_flops() : req->flops;
    k->workspace_floats = (ws() + sizeof(float) - 1) / sizeof(float);
    k->workspace = alloc_floats(k->workspace_floats);
    k->output = alloc_floats(c->n_out);
    if (!k->workspace || !k->output) {
        res->result = DT_RESULT_RUNNER_ERROR;
        snprintf(res->detail, sizeof res->detail, "out of memory for the workspace");
        return -1;
    }
    return 0;
}

static void unload_kernel(loaded_kernel *k)
{
    free(k->workspace);
    free(k->output);
    if (k->handle)
        dlclose(k->handle);
}

static void call_kernel(const child_state *c, const loaded_kernel *k)
{
    if (k->kernel_epilogue)
        k->kernel_epilogue(c->input, c->weight, k->output, k->workspace, c->bias, c->residual,
                           (int)c->task.epilogue.act);
    else if (k->kernel)
        k->kernel(c->input, c->weight, k->output, k->workspace);
    else {
        dt_task_reference(&c->task, c->input, c->weight, k->output);
        dt_task_apply_epilogue(&c->task, c->bias, c->residual, c->task.epilogue.act, k->output);
    }
}

static bool check_kernel(child_state *c, const dt_cpu_runner_request *req, loaded_kernel *k,
                         dt_measure_result *res)
{
    for (size_t i = 0; i < c->n_out; i++)
        k->output[i] = NAN;
    call_kernel(c, k);
    long bad = dt_measure_check_output(k->output, c->reference, c->n_out, req->tolerance);
    if (bad < 0)
        return true;
    res->result = DT_RESULT_WRONG_OUTPUT;
    snprintf(res->detail, sizeof res->detail, "element %ld is %.9g, reference %.9g", bad,
             (double)k->output[bad], (double)c->reference[bad]);
    return false;
}

/* The child's watch on its parent: a thread that waits for the parent's end
 * of the socket to close and ends the process then. A daemon killed with
 * SIGKILL, or leaving at once on a second SIGINT, must not leave its runner
 * computing a reference or timing a kernel for minutes on the cores the
 * next (resumed) run times on. */
static void *watch_parent(void *arg)
{
    struct pollfd p = { .fd = *(const int *)arg, .events = POLLRDHUP };
    for (;;)
        if (poll(&p, 1, -1) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            _exit(0);
    return NULL;
}


/* Writes back and invalidates the cache lines of [p, p + bytes) at every
 * level: the next access comes from memory. */
static void evict(const void *p, size_t bytes)
{
    if (!p)
        return;
    const char *at = (const char *)((uintptr_t)p & ~(uintptr_t)(EVICT_LINE - 1));
    const char *end = (const char *)p + bytes;
#if defined(__x86_64__) || defined(__i386__)
    for (; at < end; at += EVICT_LINE)
        _mm_clflush(at);
    _mm_mfence();
#elif defined(__aarch64__)
    for (; at < end; at += EVICT_LINE)
        __asm__ volatile("dc civac, %0" : : "r"(at) : "memory");
    __asm__ volatile("dsb ish" : : : "memory");
#else
#error "evict: no cache line eviction for this architecture"
#endif
}

/* What a network's layer finds cold: its weights, bias and workspace (the
 * packed weights, or scratch). Its input was just written by the layer
 * before and stays warm. */
static void evict_weights(const child_state *c, const loaded_kernel *k)
{
    evict(c->weight, c->n_w * sizeof(float));
    evict(c->bias, c->n_bias * sizeof(float));
    evict(k->workspace, k->workspace_floats * sizeof(float));
}

/* Before a call timed alone: the weights evicted (cold), the activations
 * rewritten by the kernel's threads in turn (spread, DT_CPU_KERNEL_SPREAD). */
static void prepare_lone_call(const child_state *c, const dt_cpu_runner_request *req, const loaded_kernel *k)
{
    if (req->cold)
        evict_weights(c, k);
    if (k->spread) {
        float *const buffers[] = { c->input, c->residual, k->output };
        const size_t floats[] = { c->n_in, c->n_out, c->n_out };
        k->spread(buffers, floats, 3);
    }
}

/* One call alone, prepared first (outside the time); its seconds. */
static double lone_call(const child_state *c, const dt_cpu_runner_request *req, const loaded_kernel *k)
{
    prepare_lone_call(c, req, k);
    double t0 = dt_now_seconds();
    call_kernel(c, k);
    return dt_now_seconds() - t0;
}

/* One warm-up call (timed, to size automatic micro-batches), then the CV
 * loop. Cold or spread (the call as a network's layer finds its data): each
 * call is prepared alone, a micro-batch's time is the sum of its calls' own
 * times, and its size is set by the wall time of a preparation and a call,
 * so that a small kernel with large weights keeps to the batch's length. */
static void time_kernel(child_state *c, const dt_cpu_runner_request *req, loaded_kernel *k,
                        dt_measure_result *res)
{
    bool alone = req->cold || req->spread;
    double t0 = dt_now_seconds();
    if (alone)
        (void)lone_call(c, req, k);
    else
        call_kernel(c, k);
    double first = dt_now_seconds() - t0;
    long calls = req->micro_batch;
    if (calls <= 0) {
        double want = DT_CPU_RUNNER_AUTO_BATCH_S / (first > 1e-9 ? first : 1e-9);
        calls = want < 1 ? 1 : want > DT_CPU_RUNNER_AUTO_BATCH_MAX_CALLS ? DT_CPU_RUNNER_AUTO_BATCH_MAX_CALLS
                                                             : (long)ceil(want);
    }
    dt_measure_cv_stop cv;
    dt_measure_cv_stop_init(&cv, req->min_batches, req->max_repeats, req->cv_threshold);
    double total = 0;
    long total_calls = 0;
    bool stop = false;
    while (!stop) {
        double seconds = 0;
        if (alone)
            for (long i = 0; i < calls; i++)
                seconds += lone_call(c, req, k);
        else {
            double start = dt_now_seconds();
            for (long i = 0; i < calls; i++)
                call_kernel(c, k);
            seconds = dt_now_seconds() - start;
        }
        total += seconds;
        total_calls += calls;
        stop = dt_measure_cv_stop_add(&cv, k->flops * (double)calls / (seconds > 1e-12 ? seconds : 1e-12) * 1e-9);
    }
    res->result = DT_RESULT_OK;
    res->latency_s = total / (double)total_calls;
    res->gflops = k->flops / fmax(res->latency_s, 1e-15) * 1e-9;
    res->repeats = cv.n;
    res->cv = dt_measure_cv_stop_cv(&cv);
}

static int send_reply(int fd, uint32_t type, const dt_measure_result *res)
{
    reply_msg m = { .magic = MSG_MAGIC, .type = type };
    if (res)
        m.result = *res;
    return dt_ipc_send_all(fd, &m, sizeof m) ? 0 : -1;
}

static int serve(child_state *c, const dt_cpu_runner_request *req)
{
    dt_measure_result res;
    memset(&res, 0, sizeof res);
    loaded_kernel k;
    dt_proclimit_cpu_budget(&c->limits);
    if (ensure_data(c, req) < 0 || (req->check && ensure_reference(c) < 0)) {
        char note[128];
        dt_proclimit_memory_note(&c->limits, note, sizeof note);
        res.result = DT_RESULT_RUNNER_ERROR;
        snprintf(res.detail, sizeof res.detail, "out of memory for the tensors%s", note);
        drop_data(c);
        return send_reply(c->fd, MSG_RESULT, &res);
    }
    if (send_reply(c->fd, MSG_READY, NULL) < 0)
        return -1;
    if (req->reference) {
        memset(&k, 0, sizeof k);
        k.flops = req->flops;
        if ((k.output = alloc_floats(c->n_out)))
            time_kernel(c, req, &k, &res);
        else
            snprintf(res.detail, sizeof res.detail, "out of memory for the output");
        res.result = k.output ? DT_RESULT_OK : DT_RESULT_RUNNER_ERROR;
    } else if (load_kernel(c, req, &k, &res) == 0) {
        k.prepare(c->weight, k.workspace);
        if (!req->check || check_kernel(c, req, &k, &res))
            time_kernel(c, req, &k, &res);
    }
    unload_kernel(&k);
    return send_reply(c->fd, MSG_RESULT, &res);
}

static void pin_to(const char *list)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    char *end;
    for (const char *p = list; *p; p = *end ? end + 1 : end) {
        long cpu = strtol(p, &end, 10);
        if (end == p)
            return;
        if (cpu >= 0 && cpu < CPU_SETSIZE)
            CPU_SET((int)cpu, &set);
    }
    if (CPU_COUNT(&set) > 0 && sched_setaffinity(0, sizeof set, &set) != 0)
        perror("dtune runner: sched_setaffinity");
}

int dt_cpu_runner_main(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[1], DT_CPU_RUNNER_ARG) != 0) {
        fprintf(stderr, "usage: %s %s FD [--cpus LIST] (internal: the CPU measurement process)\n",
                argv[0], DT_CPU_RUNNER_ARG);
        return 2;
    }
    child_state c = { .fd = atoi(argv[2]) };
    /* A kernel's fault must kill the child with its own signal, even when a
     * sanitizer or a library installed handlers: the parent names it. */
    static const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        signal(faults[i], SIG_DFL);
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--cpus") == 0 && i + 1 < argc) {
            pin_to(argv[++i]);
        } else if (strcmp(argv[i], "--limits") == 0 && i + 3 < argc) {
            c.limits = (dt_proclimit){ strtoull(argv[i + 1], NULL, 10), strtod(argv[i + 2], NULL),
                                       atoi(argv[i + 3]) };
            i += 3;
            if (dt_proclimit_apply(&c.limits) != 0)
                perror("dtune runner: setrlimit");
        }
    }
    pthread_t watcher;
    if (pthread_create(&watcher, NULL, watch_parent, &c.fd) != 0 || pthread_detach(watcher) != 0)
        perror("dtune runner: the watch on its parent");
    request_msg m;
    while (dt_ipc_recv_all(c.fd, &m, sizeof m, -1) == 1) {
        if (m.magic != MSG_MAGIC || serve(&c, &m.req) < 0)
            break;
    }
    drop_data(&c);
    return 0;
}

/* ---- parent side -------------------------------------------------------------- */

struct dt_cpu_runner {
    dt_cpu_runner_params params;
    char exe[DT_PATH_MAX];
    char cpu_list[256];
    int cpus[MAX_PIN_CPUS];
    int ncpus;
    pid_t pid;
    int fd;
    int restarts;
    dt_task slow_reference;        /* the last task whose reference ran past the limit */
    bool have_slow_reference;
    const dt_measure_limit *limit; /* the batch's, while one runs (dt_cpu_runner_set_limit) */
};

/* The last `threads` cores of the allowed set, when more than that exist. */
static void choose_cpus(dt_cpu_runner *r)
{
    cpu_set_t set;
    r->ncpus = 0;
    r->cpu_list[0] = '\0';
    if (!r->params.pin || sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    int want = r->params.threads < 1 ? 1 : r->params.threads;
    if (CPU_COUNT(&set) <= want || want > MAX_PIN_CPUS)
        return;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0 && r->ncpus < want; cpu--)
        if (CPU_ISSET(cpu, &set))
            r->cpus[r->ncpus++] = cpu;
    size_t len = 0;
    for (int i = r->ncpus - 1; i >= 0; i--)
        len += (size_t)snprintf(r->cpu_list + len, sizeof r->cpu_list - len, "%s%d",
                                len ? "," : "", r->cpus[i]);
}

int dt_cpu_runner_new(const dt_cpu_runner_params *params, dt_cpu_runner **out, dt_error *err)
{
    *out = NULL;
    dt_cpu_runner *r = calloc(1, sizeof *r);
    if (!r)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    r->params = *params;
    r->params.exe = NULL;
    r->fd = -1;
    const char *exe = params->exe ? params->exe : getenv("DTUNE_CPU_RUNNER");
    if (exe && *exe) {
        snprintf(r->exe, sizeof r->exe, "%s", exe);
    } else {
        ssize_t n = readlink("/proc/self/exe", r->exe, sizeof r->exe - 1);
        if (n <= 0) {
            free(r);
            return dt_error_set(err, DT_EIO, "readlink /proc/self/exe: %s", strerror(errno));
        }
        r->exe[n] = '\0';
    }
    choose_cpus(r);
    *out = r;
    return 0;
}

static void reap(dt_cpu_runner *r, bool kill_first, int *status)
{
    if (r->pid <= 0)
        return;
    if (kill_first)
        kill(-r->pid, SIGKILL);
    int st = 0;
    while (waitpid(r->pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (status)
        *status = st;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    r->pid = 0;
}

static int spawn_attrs(posix_spawnattr_t *attr)
{
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGCHLD);
    if (posix_spawnattr_init(attr) != 0)
        return -1;
    if (posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                 POSIX_SPAWN_SETPGROUP) != 0 ||
        posix_spawnattr_setsigmask(attr, &none) != 0 ||
        posix_spawnattr_setsigdefault(attr, &defaults) != 0 ||
        posix_spawnattr_setpgroup(attr, 0) != 0) {
        posix_spawnattr_destroy(attr);
        return -1;
    }
    return 0;
}

static int start_child(dt_cpu_runner *r, dt_error *err)
{
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
        return dt_error_set(err, DT_EIO, "socketpair: %s", strerror(errno));
    /* Keep the child's end off fd CHILD_FD, so dup2 really clears close-on-exec. */
    int child_end = fcntl(ends[1], F_DUPFD_CLOEXEC, 10);
    close(ends[1]);
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    if (child_end < 0 || posix_spawn_file_actions_init(&actions) != 0) {
        close(ends[0]);
        if (child_end >= 0)
            close(child_end);
        return dt_error_set(err, DT_EIO, "cannot prepare the runner's descriptors");
    }
    int rc = posix_spawn_file_actions_adddup2(&actions, child_end, CHILD_FD);
    if (rc == 0)
        rc = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (rc == 0)
        rc = spawn_attrs(&attr) == 0 ? 0 : EINVAL;
    if (rc == 0) {
        char fd_arg[8] = "3", bytes[32], seconds[32], files[16];
        const dt_proclimit *l = &r->params.limits;
        snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)l->memory_bytes);
        snprintf(seconds, sizeof seconds, "%.17g", l->cpu_seconds);
        snprintf(files, sizeof files, "%d", l->open_files);
        char *argv[10] = { r->exe, (char *)DT_CPU_RUNNER_ARG, fd_arg };
        int n = 3;
        if (r->ncpus)
            argv[n++] = (char *)"--cpus", argv[n++] = r->cpu_list;
        argv[n++] = (char *)"--limits", argv[n++] = bytes, argv[n++] = seconds, argv[n++] = files;
        argv[n] = NULL;
        rc = posix_spawn(&r->pid, r->exe, &actions, &attr, argv, environ);
        posix_spawnattr_destroy(&attr);
    }
    posix_spawn_file_actions_destroy(&actions);
    close(child_end);
    if (rc != 0) {
        close(ends[0]);
        r->pid = 0;
        return dt_error_set(err, DT_EIO, "cannot start the runner %s: %s", r->exe, strerror(rc));
    }
    r->fd = ends[0];
    return 0;
}

static void class_of_death(const dt_cpu_runner *r, int status, dt_measure_result *out)
{
    out->result = DT_RESULT_CRASH;
    dt_proclimit_explain(&r->params.limits, status, out->detail, sizeof out->detail);
    if (out->detail[0])
        return;
    if (WIFSIGNALED(status))
        snprintf(out->detail, sizeof out->detail, "killed by SIG%s",
                 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
    else
        snprintf(out->detail, sizeof out->detail, "runner exited with status %d",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* Sends req, starting (or restarting once) the child as needed. */
static int send_request(dt_cpu_runner *r, const dt_cpu_runner_request *req, dt_error *err)
{
    request_msg m = { .magic = MSG_MAGIC, .req = *req };
    for (int attempt = 0; attempt < 2; attempt++) {
        if (r->pid <= 0) {
            int rc = start_child(r, err);
            if (rc < 0)
                return rc;
        }
        if (dt_ipc_send_all(r->fd, &m, sizeof m))
            return 0;
        reap(r, true, NULL);
        r->restarts++;
    }
    return dt_error_set(err, DT_EIO, "the runner %s does not take requests (does it handle %s?)",
                        r->exe, DT_CPU_RUNNER_ARG);
}

#define LIMIT_POLL_S 0.05          /* how often a wait on "ready" looks at the batch's limit */

/* Waits up to timeout_s for the child's socket to be readable, looking at
 * the batch's limit every LIMIT_POLL_S: the seconds left, or -1 once the
 * limit is reached (then the child is stopped and out says so). */
static double wait_ready_or_limit(dt_cpu_runner *r, double timeout_s, dt_measure_result *out)
{
    double until = dt_now_seconds() + timeout_s;
    for (;;) {
        double left = until - dt_now_seconds();
        struct pollfd p = { .fd = r->fd, .events = POLLIN };
        int slice_ms = (int)(1e3 * (left < LIMIT_POLL_S ? left : LIMIT_POLL_S));
        if (left <= 0 || poll(&p, 1, slice_ms > 0 ? slice_ms : 0) != 0)
            return left > 0 ? until - dt_now_seconds() : 0;
        if (dt_measure_limit_reached(r->limit)) {
            reap(r, true, NULL);
            r->restarts++;
            out->result = DT_RESULT_RUNNER_ERROR;
            out->abandoned = true;
            snprintf(out->detail, sizeof out->detail, "stopped while its task's reference output "
                     "was computed");
            return -1;
        }
    }
}

/* Awaits one message of the given type; fills out's class on death or
 * timeout. While a batch runs, a wait for "ready" gives up at its limit. */
static int await(dt_cpu_runner *r, uint32_t type, double timeout_s, reply_msg *m,
                 dt_measure_result *out)
{
    double wait_s = timeout_s;
    if (type == MSG_READY && r->limit && (wait_s = wait_ready_or_limit(r, timeout_s, out)) < 0)
        return 1;
    int got = dt_ipc_recv_all(r->fd, m, sizeof *m, wait_s > 0 ? wait_s : 1e-3);
    if (got == 1 && m->magic == MSG_MAGIC && m->type == type)
        return 0;
    if (got == 1 && m->magic == MSG_MAGIC && m->type == MSG_RESULT) {
        *out = m->result;        /* the child answered early (e.g. out of memory) */
        return 1;
    }
    int status = 0;
    if (got == -1) {
        reap(r, true, NULL);
        out->result = DT_RESULT_TIMEOUT;
        snprintf(out->detail, sizeof out->detail, "ran past %.3g s and was killed", timeout_s);
    } else {
        reap(r, got == 1, &status);
        if (got == 1) {
            out->result = DT_RESULT_RUNNER_ERROR;
            snprintf(out->detail, sizeof out->detail, "garbled reply from the runner");
        } else {
            class_of_death(r, status, out);
        }
    }
    r->restarts++;
    return 1;
}

/* The result of a candidate of a task whose reference ran past its limit. */
static void slow_reference(const dt_cpu_runner *r, dt_measure_result *out)
{
    out->result = DT_RESULT_TIMEOUT;
    snprintf(out->detail, sizeof out->detail, "the task's reference output took longer than %.3g s "
             "(the limit of a task's preparation, measure.compile_timeout_seconds), so no candidate "
             "can be checked", r->params.ready_timeout_seconds);
}

int dt_cpu_runner_run(dt_cpu_runner *r, const dt_cpu_runner_request *req, dt_measure_result *out,
                      dt_error *err)
{
    memset(out, 0, sizeof *out);
    if (r->have_slow_reference && memcmp(&r->slow_reference, &req->task, sizeof req->task) == 0) {
        slow_reference(r, out);
        return 0;
    }
    double t0 = dt_now_seconds();
    int rc = send_request(r, req, err);
    if (rc < 0)
        return rc;
    reply_msg m;
    if (await(r, MSG_READY, r->params.ready_timeout_seconds, &m, out) == 0) {
        if (await(r, MSG_RESULT, r->params.timeout_seconds, &m, out) == 0)
            *out = m.result;
    } else if (out->result == DT_RESULT_TIMEOUT) {
        r->slow_reference = req->task;
        r->have_slow_reference = true;
        slow_reference(r, out);
    }
    out->compile_ms = 0;
    out->run_ms = (dt_now_seconds() - t0) * 1e3;
    if (out->result == DT_RESULT_WRONG_OUTPUT && r->pid > 0) {
        reap(r, true, NULL);
        r->restarts++;
    }
    return 0;
}

void dt_cpu_runner_free(dt_cpu_runner *r)
{
    if (!r)
        return;
    if (r->pid > 0) {
        close(r->fd);              /* EOF: the child leaves its loop */
        r->fd = -1;
        for (int i = 0; i < 100; i++) {
            if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
                r->pid = 0;
                break;
            }
            struct timespec ms = { 0, 10 * 1000 * 1000 };
            nanosleep(&ms, NULL);
        }
        reap(r, true, NULL);
    }
    free(r);
}

void dt_cpu_runner_set_limit(dt_cpu_runner *r, const dt_measure_limit *limit)
{
    r->limit = limit;
}

int dt_cpu_runner_pid(const dt_cpu_runner *r)
{
    return r->pid;
}

int dt_cpu_runner_restarts(const dt_cpu_runner *r)
{
    return r->restarts;
}

int dt_cpu_runner_cpus(const dt_cpu_runner *r, int *cpus, int max)
{
    int n = r->ncpus < max ? r->ncpus : max;
    for (int i = 0; i < n; i++)
        cpus[i] = r->cpus[i];
    return n;
}
