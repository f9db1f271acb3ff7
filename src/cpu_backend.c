/* cpu_backend.c — the `cpu` backend (see cpu_backend.h).
 *
 * Builders call dt_cpu_backend_build_source concurrently: the cache key is computed
 * from the text, a hit costs one access(2), a miss writes KEY.c and runs the
 * compiler to a private temporary name which is renamed into place, so two
 * builders compiling the same source both end with a complete KEY.so and a
 * reader never sees half an object. The compiler is started with
 * posix_spawn, through /bin/sh's ulimit under the measurement limits
 * (proclimit.h), in a new process group and polled with waitpid(WNOHANG); on
 * timeout the whole group (driver, cc1, as, ld) is killed.
 *
 * The run side is single-threaded by contract but the roofline probes
 * (peak and bandwidths, measured once, in the measurement process on the
 * timing cores) may come from another thread, so both take runner_mu. The set of artifacts already
 * checked is a small sorted array of path hashes.
 *
 * The cache is kept in bounds by cpu_cache.c: opening removes a killed run's
 * temporaries and prunes to measure.cache_mb, and every CACHE_PRUNE_EVERY
 * compiles one builder prunes again (least recently used first).
 */
#include "cpu_backend.h"
#include "dtune/measure.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu_cache.h"
#include "cpu_codegen.h"
#include "dtune/util.h"

extern char **environ;

#define CC_FLAGS DT_CPU_KERNEL_CFLAGS " -shared -fPIC"
/* Compiles between two prunings of the artifact cache. */
#define CACHE_PRUNE_EVERY 32
/* Working-set sizes whose own streams a backend keeps (cpu_roofline); a
 * task of a size past them gets its level's streams. */
#define SIZED_STREAMS_MAX 256

typedef struct cpu_backend {
    dt_measure_params measure;
    dt_cpu_options opts;
    char cache_dir[DT_PATH_MAX];
    char cc[256];
    uint64_t seed;
    atomic_ulong tmp_counter;
    uint64_t cache_limit;        /* bytes; 0 = none */
    dt_proclimit limits;         /* of the runner and each compiler */
    pthread_mutex_t cache_mu;    /* one pruning at a time */

    pthread_mutex_t runner_mu;
    dt_cpu_runner *runner;
    uint64_t *checked;
    size_t nchecked, checked_cap;
    dt_roofline roofline;        /* the probes' figures, once roofline_state > 0; a
                                    level's bandwidths 0 until first asked for */
    int roofline_state;          /* 0 until probed, 1 measured, -1 the FMA probe failed */
    dt_mem_level sized[SIZED_STREAMS_MAX]; /* streams timed at a task's working set
                                    (probe_bytes); name and capacity unused */
    int nsized;
} cpu_backend;

/* snprintf that reports truncation instead of warning about it. */
static bool fmt_str(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool fmt_str(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < len;
}

/* FNV-1a over text, from a given offset basis. */
static uint64_t fnv1a(const char *text, uint64_t h)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* splitmix finaliser: makes the second half of the key independent enough. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void cache_key(const char *cmd, const char *source, char key[33])
{
    uint64_t a = fnv1a(source, fnv1a(cmd, 0xcbf29ce484222325ULL));
    uint64_t b = mix(fnv1a(source, fnv1a(cmd, 0x84222325cbf29ce4ULL)) ^ mix(a));
    snprintf(key, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

void dt_cpu_backend_default_options(const dt_measure_params *measure, dt_cpu_options *opts)
{
    opts->compile_timeout_s = measure ? dt_measure_compile_timeout(measure) : 60;
    opts->runner_exe = NULL;
    opts->pin = true;
}

void dt_cpu_backend_task_memory(dt_model_memory *memory)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    memset(memory, 0, sizeof *memory);
    if (pages <= 0 || page <= 0)
        return;
    double total = (double)pages * (double)page;
    memory->task_bytes = (uint64_t)(DT_CPU_MEMORY_SHARE * total);
    snprintf(memory->source, sizeof memory->source, "%g of this machine's %.3g GiB",
             DT_CPU_MEMORY_SHARE, total / (1 << 30));
}

static void cpu_close(void *state);

int dt_cpu_backend_open(const dt_backend_params *params, const dt_cpu_options *opts, void **state,
                        dt_error *err)
{
    *state = NULL;
    cpu_backend *b = calloc(1, sizeof *b);
    if (!b)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    pthread_mutex_init(&b->runner_mu, NULL);
    pthread_mutex_init(&b->cache_mu, NULL);
    b->measure = *params->measure;
    b->opts = *opts;
    b->seed = params->seed;
    const char *cc = getenv("DTUNE_CC");
    snprintf(b->cc, sizeof b->cc, "%s", cc && *cc ? cc : "cc");
    int n = snprintf(b->cache_dir, sizeof b->cache_dir, "%s/cache",
                     params->work_dir && *params->work_dir ? params->work_dir : ".");
    int rc;
    if (n >= (int)sizeof b->cache_dir) {
        rc = dt_error_set(err, DT_EIO, "cannot create the artifact cache %s: path too long",
                          b->cache_dir);
        goto fail;
    }
    if ((rc = dt_mkdir_p(b->cache_dir, err)) < 0)
        goto fail;
    /* a killed run's temporaries, then the oldest entries past the limit */
    dt_cpu_cache_clean_temps(b->cache_dir);
    b->cache_limit = (uint64_t)(b->measure.cache_mb > 0 ? b->measure.cache_mb : 0) << 20;
    dt_cpu_cache_prune(b->cache_dir, b->cache_limit);
    b->limits = dt_proclimit_from_settings(b->measure.limit_memory_mb, b->measure.limit_cpu_seconds,
                                           b->measure.limit_open_files);
    dt_cpu_runner_params rp = { .exe = opts->runner_exe, .threads = b->measure.threads,
                            .pin = opts->pin, .timeout_seconds = b->measure.timeout_seconds,
                            .ready_timeout_seconds = dt_measure_compile_timeout(&b->measure),
                            .limits = b->limits };
    if ((rc = dt_cpu_runner_new(&rp, &b->runner, err)) < 0)
        goto fail;
    *state = b;
    return 0;
fail:
    cpu_close(b);
    return rc;
}

static int cpu_open(const dt_backend_params *params, void **state, dt_error *err)
{
    dt_cpu_options opts;
    dt_cpu_backend_default_options(params->measure, &opts);
    return dt_cpu_backend_open(params, &opts, state, err);
}

static void cpu_close(void *state)
{
    cpu_backend *b = state;
    if (!b)
        return;
    dt_cpu_runner_free(b->runner);
    pthread_mutex_destroy(&b->runner_mu);
    pthread_mutex_destroy(&b->cache_mu);
    free(b->checked);
    free(b);
}

/* ---- compiling ---------------------------------------------------------------- */

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    size_t len = strlen(text);
    int rc = fwrite(text, 1, len, f) == len ? 0 : -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

/* First line of the compiler's messages that says "error", else the first line. */
static void first_error_line(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!out[0] || strstr(line, "error")) {
            (void)fmt_str(out, len, "%s", line);
            if (strstr(line, "error"))
                break;
        }
    }
    fclose(f);
}

static int spawn_compiler(const cpu_backend *b, char *const argv[], const char *errfile,
                          pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return ENOMEM;
    if (posix_spawnattr_init(&attr) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return ENOMEM;
    }
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    sigdelset(&defaults, SIGKILL);
    sigdelset(&defaults, SIGSTOP);
    int rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_addopen(&fa, 2, errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (rc == 0)
        rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    if (rc == 0)
        rc = posix_spawnattr_setsigmask(&attr, &none);
    if (rc == 0)
        rc = posix_spawnattr_setsigdefault(&attr, &defaults);
    if (rc == 0)
        rc = posix_spawn(pid, argv[0], &fa, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* Waits for the compiler; returns its wait status, or -1 after killing it. */
static int wait_compiler(pid_t pid, double timeout_s)
{
    double deadline = dt_now_seconds() + timeout_s;
    long sleep_ns = 1000000;
    for (;;) {
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return status;
        if (w < 0 && errno != EINTR)
            return -2;
        if (dt_now_seconds() > deadline) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        struct timespec ts = { 0, sleep_ns };
        nanosleep(&ts, NULL);
        if (sleep_ns < 10000000)
            sleep_ns *= 2;
    }
}

/* Compiles cfile to sofile (via a temporary name); fills out's class. */
static int run_compiler(cpu_backend *b, const char *cfile, const char *sofile, int threads,
                        const char *tmp_base, dt_artifact *out, dt_error *err)
{
    char tmp_so[DT_PATH_MAX + 16], errfile[DT_PATH_MAX + 16];
    (void)fmt_str(tmp_so, sizeof tmp_so, "%s.so", tmp_base);
    (void)fmt_str(errfile, sizeof errfile, "%s.err", tmp_base);
    char *cc_argv[] = { b->cc, "-std=gnu11", "-O3", "-march=native", "-ffp-contract=fast",
                        "-shared", "-fPIC", threads > 1 ? "-fopenmp" : "-w", "-o", tmp_so,
                        (char *)cfile, NULL };
    /* the compiler runs under the limits, through the shell's ulimit */
    char *argv[32], numbers[96];
    int n = dt_proclimit_shell_argv(&b->limits, argv, 32, numbers, sizeof numbers);
    for (size_t i = 0; n > 0 && i < sizeof cc_argv / sizeof cc_argv[0]; i++)
        argv[n++] = cc_argv[i];
    pid_t pid;
    double t0 = dt_now_seconds();
    int rc = n > 0 ? spawn_compiler(b, argv, errfile, &pid) : E2BIG;
    if (rc != 0) {
        unlink(errfile);
        return dt_error_set(err, DT_EIO, "cannot run the C compiler '%s': %s", b->cc, strerror(rc));
    }
    int status = wait_compiler(pid, b->opts.compile_timeout_s);
    out->compile_ms = (dt_now_seconds() - t0) * 1e3;
    if (status >= 0 && WIFEXITED(status) && (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127)) {
        /* the shell could not start the compiler: no candidate can build */
        char why[256];
        first_error_line(errfile, why, sizeof why);
        rc = dt_error_set(err, DT_EIO, "cannot run the C compiler '%s': %s", b->cc, why);
    } else if (status == -1) {
        out->result = DT_RESULT_COMPILE_TIMEOUT;
        snprintf(out->detail, sizeof out->detail, "compiler killed after %.3g s",
                 b->opts.compile_timeout_s);
    } else if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        out->result = DT_RESULT_COMPILE_ERROR;
        dt_proclimit_explain(&b->limits, status < 0 ? 0 : status, out->detail, sizeof out->detail);
        if (!out->detail[0])
            first_error_line(errfile, out->detail, sizeof out->detail);
    } else if (rename(tmp_so, sofile) != 0) {
        rc = dt_error_set(err, DT_EIO, "rename %s: %s", tmp_so, strerror(errno));
    } else {
        out->result = DT_RESULT_OK;
        (void)fmt_str(out->path, sizeof out->path, "%s", sofile);
    }
    unlink(tmp_so);
    unlink(errfile);
    return rc < 0 ? rc : 0;
}

int dt_cpu_backend_build_source(void *state, const char *source, int threads, dt_artifact *out,
                                dt_error *err)
{
    cpu_backend *b = state;
    memset(out, 0, sizeof *out);
    char cmd[512], key[33];
    snprintf(cmd, sizeof cmd, "%s " CC_FLAGS "%s", b->cc, threads > 1 ? " -fopenmp" : "");
    cache_key(cmd, source, key);
    char sofile[DT_PATH_MAX + 64], cfile[DT_PATH_MAX + 64], tmp_base[DT_PATH_MAX + 64];
    snprintf(sofile, sizeof sofile, "%s/%s.so", b->cache_dir, key);
    if (access(sofile, R_OK) == 0) {
        dt_cpu_cache_touch(sofile);
        out->result = DT_RESULT_OK;
        (void)fmt_str(out->path, sizeof out->path, "%s", sofile);
        snprintf(out->detail, sizeof out->detail, "cached");
        return 0;
    }
    unsigned long serial = atomic_fetch_add(&b->tmp_counter, 1);
    snprintf(tmp_base, sizeof tmp_base, "%s/%s.tmp%ld.%lu", b->cache_dir, key, (long)getpid(), serial);
    (void)fmt_str(cfile, sizeof cfile, "%s.c", tmp_base);
    if (write_file(cfile, source) != 0)
        return dt_error_set(err, DT_EIO, "cannot write %s: %s", cfile, strerror(errno));
    int rc = run_compiler(b, cfile, sofile, threads, tmp_base, out, err);
    char keep[DT_PATH_MAX + 64];
    (void)fmt_str(keep, sizeof keep, "%s/%s.c", b->cache_dir, key);
    if (rename(cfile, keep) != 0)      /* the source stays next to its object */
        unlink(cfile);
    if (serial % CACHE_PRUNE_EVERY == CACHE_PRUNE_EVERY - 1 && pthread_mutex_trylock(&b->cache_mu) == 0) {
        dt_cpu_cache_prune(b->cache_dir, b->cache_limit);
        pthread_mutex_unlock(&b->cache_mu);
    }
    return rc;
}

static int cpu_build(void *state, const dt_space *space, const dt_point *point,
                     dt_artifact *out, dt_error *err)
{
    cpu_backend *b = state;
    memset(out, 0, sizeof *out);
    dt_cpu_plan plan;
    dt_cpu_plan_from_point(space, point, b->measure.threads, &plan);
    char *source = NULL;
    dt_error why;
    int rc = dt_cpu_codegen(&plan, &source, &why);
    if (rc == DT_EINVAL) {
        out->result = DT_RESULT_INVALID;
        (void)fmt_str(out->detail, sizeof out->detail, "%s", why.msg);
        return 0;
    }
    if (rc < 0) {
        if (err)
            *err = why;
        return rc;
    }
    rc = dt_cpu_backend_build_source(b, source, plan.threads, out, err);
    free(source);
    return rc;
}

/* ---- running -------------------------------------------------------------------- */

static bool was_checked(const cpu_backend *b, uint64_t key)
{
    size_t lo = 0, hi = b->nchecked;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (b->checked[mid] == key)
            return true;
        if (b->checked[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static void mark_checked(cpu_backend *b, uint64_t key)
{
    if (was_checked(b, key))
        return;
    if (dt_grow(&b->checked, &b->checked_cap, b->nchecked + 1, sizeof *b->checked) != 0)
        return;                 /* it will be checked again: slower, still right */
    size_t i = b->nchecked++;
    for (; i > 0 && b->checked[i - 1] > key; i--)
        b->checked[i] = b->checked[i - 1];
    b->checked[i] = key;
}

static void fill_request(const cpu_backend *b, const dt_task *task, const char *path,
                         dt_cpu_runner_request *req)
{
    memset(req, 0, sizeof *req);
    (void)fmt_str(req->artifact, sizeof req->artifact, "%s", path);
    req->task = *task;
    req->seed = b->seed;
    req->flops = task->flops;
    req->tolerance = b->measure.tolerance;
    req->min_batches = b->measure.min_batches;
    req->max_repeats = b->measure.max_repeats;
    req->cv_threshold = b->measure.cv_threshold;
    req->micro_batch = b->measure.micro_batch;
    req->threads = b->measure.threads;
    req->cold = b->measure.cold_weights;
    req->spread = b->measure.spread_input && b->measure.threads > 1;
}

int dt_cpu_backend_run_artifact(void *state, const dt_task *task, const dt_artifact *artifact,
                                dt_measure_result *out, dt_error *err)
{
    cpu_backend *b = state;
    dt_cpu_runner_request req;
    fill_request(b, task, artifact->path, &req);
    uint64_t key = mix(fnv1a(artifact->path, 0xcbf29ce484222325ULL));
    pthread_mutex_lock(&b->runner_mu);
    req.check = b->measure.check_output && !was_checked(b, key);
    int rc = dt_cpu_runner_run(b->runner, &req, out, err);
    if (rc == 0 && req.check && out->result == DT_RESULT_OK)
        mark_checked(b, key);
    pthread_mutex_unlock(&b->runner_mu);
    out->compile_ms = artifact->compile_ms;
    return rc;
}

static int cpu_run(void *state, const dt_space *space, const dt_point *point,
                   const dt_artifact *artifact, dt_measure_result *out, dt_error *err)
{
    return dt_cpu_backend_run_artifact(state, &space->task, artifact, out, err);
}

/* The naive reference, timed by the runner like a candidate; a few calls
 * are enough for a latency that only stands in for a task that failed. */
static int cpu_reference(void *state, const dt_task *task, dt_measure_result *out, dt_error *err)
{
    cpu_backend *b = state;
    dt_cpu_runner_request req;
    fill_request(b, task, "", &req);
    req.reference = true;
    req.min_batches = 1;
    req.max_repeats = 3;
    req.micro_batch = 1;
    pthread_mutex_lock(&b->runner_mu);
    int rc = dt_cpu_runner_run(b->runner, &req, out, err);
    pthread_mutex_unlock(&b->runner_mu);
    return rc;
}

/* ---- the roofline: an FMA probe and memory streams ----------------------------------- */

/* The peak probes, the best kept: FMA chains per thread at least latency x
 * pipes (4 x 2 on Zen 4 and 5 and recent Intel cores) so the pipes never
 * wait, 12 and 16 of them at the widest vector (512 bits; the compiler
 * splits it where the target is narrower), and the narrower widths (256,
 * 128 bits) at 16. */
static const struct { int lanes, chains; } probe_fma[] = { { 16, 12 }, { 16, 16 }, { 8, 16 }, { 4, 16 } };
/* Rounds of all variants: stop when the best has not moved by more than
 * PROBE_STABLE_GAIN for PROBE_STABLE_ROUNDS rounds, or after PROBE_MAX_ROUNDS. */
#define PROBE_STABLE_GAIN 0.005
#define PROBE_STABLE_ROUNDS 2
#define PROBE_MAX_ROUNDS 8
/* Accumulators of the read stream (add latency x pipes, with room). */
#define STREAM_ACCUMULATORS 12
/* Bytes each thread streams per call at least: a working set that fits a
 * cache is swept again and again within the call, so the call's fixed costs
 * (the OpenMP fork and join above all, microseconds against the
 * nanoseconds one sweep of an L1 takes) stay a small share of its time. */
#define STREAM_CALL_BYTES (32.0 * 1024 * 1024)

/* FLOPs each thread of the FMA probe does per call: about half a millisecond
 * at a Zen 4 core's peak, so the fork and join of a 2-thread call (a few
 * microseconds) costs well under 1 % of it; at 2.1 MFLOP a call the
 * 2-thread probe read 226 GFLOPS on the Zen 4 where oneDNN's layer4_3x3
 * ran at 257. */
#define FMA_CALL_FLOPS (64.0 * 1000 * 1000)

/* The OpenMP lines of a probe: header, parallel pragma, thread number. */
static const char *omp_include(int threads) { return threads > 1 ? "#include <omp.h>\n" : ""; }
static const char *omp_parallel(int threads)
{
    return threads > 1 ? "#pragma omp parallel num_threads(THREADS)\n" : "";
}
static const char *omp_thread(int threads)
{
    return threads > 1 ? "        t = omp_get_thread_num();\n" : "";
}

/* `chains` independent FMA chains of `lanes`-float vectors per thread; it
 * reports its own flops through dt_kernel_flops. */
static char *fma_probe_source(int threads, int lanes, int chains)
{
    const char *fmt =
        "#include <stddef.h>\n%s"
        "#define LANES %d\n#define CHAINS %d\n#define THREADS %d\n#define ITER %ld\n"
        "typedef float vf __attribute__((vector_size(LANES * 4)));\n"
        "double dt_kernel_flops(void) { return 2.0 * CHAINS * LANES * ITER * THREADS; }\n"
        "size_t dt_kernel_workspace_bytes(void) { return 16 * 64 * sizeof(float); }\n"
        "void dt_kernel_prepare(const float *w, float *ws) { (void)w; (void)ws; }\n"
        "void dt_kernel(const float *in, const float *w, float *out, float *ws)\n{\n"
        "    (void)in; (void)w; (void)out;\n"
        "%s"
        "    {\n        vf a[CHAINS], m = (vf){0} + 0.999999f, c = (vf){0} + 1e-7f;\n"
        "        for (int j = 0; j < CHAINS; j++) a[j] = (vf){0} + (float)j;\n"
        "        for (long i = 0; i < ITER; i++) {\n"
        "            _Pragma(\"GCC unroll 16\")\n"
        "            for (int j = 0; j < CHAINS; j++) a[j] = a[j] * m + c;\n        }\n"
        "        vf s = (vf){0};\n        for (int j = 0; j < CHAINS; j++) s += a[j];\n"
        "        int t = 0;\n%s"
        "        ws[(t %% 16) * 64] = s[0];\n    }\n}\n";
    long iter = (long)ceil(FMA_CALL_FLOPS / (2.0 * chains * lanes));
    char *src = NULL;
    if (asprintf(&src, fmt, omp_include(threads), lanes, chains, threads, iter, omp_parallel(threads),
                 omp_thread(threads)) < 0)
        return NULL;
    return src;
}

/* A stream over a working set of `floats` floats split among the threads:
 * reads it (summing into STREAM_ACCUMULATORS vectors) or, with write set,
 * reads and writes it back scaled, each thread sweeping its part REPS times
 * (STREAM_CALL_BYTES a call), each sweep ended by a compiler barrier (without
 * it GCC's -O3 turns the read+write sweeps inside out, one load and store an
 * element for all of them, and reads twice the store bandwidth). Its
 * "flops" are the bytes it moves per call, so the runner's rate is GB/s. */
static char *stream_probe_source(int threads, long floats, bool write)
{
    double per_thread = (double)floats * sizeof(float) / threads;
    long reps = per_thread > 0 ? (long)ceil(STREAM_CALL_BYTES / per_thread) : 1;
    const char *fmt =
        "#include <stddef.h>\n%s"
        "#if defined(__AVX512F__)\n#define LANES 16\n#elif defined(__AVX__)\n#define LANES 8\n"
        "#else\n#define LANES 4\n#endif\n"
        "typedef float vf __attribute__((vector_size(LANES * 4)));\n"
        "/* each sweep goes to memory: no loop interchange keeps an element in a\n"
        "   register across sweeps */\n"
        "#define SWEEP_END() __asm__ __volatile__(\"\" : : : \"memory\")\n"
        "#define THREADS %d\n#define ACC %d\n#define WRITE %d\n#define REPS %ldL\n"
        "#define VECS (%ldL / LANES / ACC / THREADS * ACC)\n"
        "#define FLOATS (VECS * LANES * THREADS)\n"
        "double dt_kernel_flops(void) { return (WRITE ? 8.0 : 4.0) * FLOATS * REPS; }\n"
        "size_t dt_kernel_workspace_bytes(void) { return (FLOATS + 64 * (THREADS + 1)) * sizeof(float); }\n"
        "void dt_kernel_prepare(const float *w, float *ws)\n{\n    (void)w;\n"
        "    for (long i = 0; i < FLOATS; i++) ws[i] = (float)(i %% 7) * 0.125f;\n"
        "    ws[FLOATS] = 1.0f;\n}\n"
        "void dt_kernel(const float *in, const float *w, float *out, float *ws)\n{\n"
        "    (void)in; (void)w; (void)out;\n"
        "%s"
        "    {\n        int t = 0;\n%s"
        "        vf *v = (vf *)ws + (size_t)t * VECS;\n"
        "        if (WRITE) {\n"
        "            vf scale = (vf){0} + ws[FLOATS];\n"
        "            for (long r = 0; r < REPS; r++) {\n"
        "                for (long i = 0; i < VECS; i++) v[i] = v[i] * scale;\n"
        "                SWEEP_END();\n            }\n"
        "        } else {\n"
        "            vf acc[ACC];\n"
        "            for (int j = 0; j < ACC; j++) acc[j] = (vf){0};\n"
        "            for (long r = 0; r < REPS; r++) {\n"
        "                for (long i = 0; i < VECS; i += ACC) {\n"
        "                    _Pragma(\"GCC unroll 16\")\n"
        "                    for (int j = 0; j < ACC; j++) acc[j] += v[i + j];\n                }\n"
        "                SWEEP_END();\n            }\n"
        "            vf s = (vf){0};\n            for (int j = 0; j < ACC; j++) s += acc[j];\n"
        "            ws[FLOATS + 64 * (t + 1)] = s[0];\n        }\n    }\n}\n";
    char *src = NULL;
    if (asprintf(&src, fmt, omp_include(threads), threads, STREAM_ACCUMULATORS, write ? 1 : 0, reps,
                 floats, omp_parallel(threads), omp_thread(threads)) < 0)
        return NULL;
    return src;
}

/* A task for the probes' runner requests: they read no input, so the
 * smallest one. */
static const dt_task probe_task = {
    .name = "probe", .kind = DT_OP_DENSE, .count = 1, .mm = { 1, 1, 1, 1 }, .flops = 2, .bytes = 12,
};

/* Builds src (freed) and times it once at the probe's rules; the rate, or
 * -1 when it does not build or run. */
static double run_probe(cpu_backend *b, char *src, int threads)
{
    dt_artifact a;
    dt_measure_result res = { 0 };
    int rc = src ? dt_cpu_backend_build_source(b, src, threads, &a, NULL) : -1;
    free(src);
    if (rc != 0 || a.result != DT_RESULT_OK)
        return -1;
    dt_cpu_runner_request req;
    fill_request(b, &probe_task, a.path, &req);
    req.min_batches = 3;
    req.max_repeats = 10;
    req.cv_threshold = 0.01;
    req.micro_batch = 0;
    req.cold = false;          /* a probe measures the machine at its working set */
    req.spread = false;
    pthread_mutex_lock(&b->runner_mu);
    rc = dt_cpu_runner_run(b->runner, &req, &res, NULL);
    pthread_mutex_unlock(&b->runner_mu);
    return rc == 0 && res.result == DT_RESULT_OK ? res.gflops : -1;
}

/* The best rate of nvariants probes over at most max_rounds rounds, until it is stable;
 * source(threads, i, floats) makes the i-th probe's source (floats: the
 * streams' working set); the best one's index goes to *which. */
typedef char *(*probe_source_fn)(int threads, int variant, long floats);

static double best_of_rounds(cpu_backend *b, int threads, probe_source_fn source, int nvariants,
                             long floats, int max_rounds, int *which)
{
    double best = -1;
    int stable = 0;
    *which = -1;
    for (int round = 0; round < max_rounds && stable < PROBE_STABLE_ROUNDS; round++) {
        double before = best;
        for (int v = 0; v < nvariants; v++) {
            double rate = run_probe(b, source(threads, v, floats), threads);
            if (rate > best) {
                best = rate;
                *which = v;
            }
        }
        stable = best > 0 && best <= before * (1 + PROBE_STABLE_GAIN) ? stable + 1 : 0;
        if (best <= 0)
            break; /* no variant runs: no point in more rounds */
    }
    return best;
}

#define NFMA (int)(sizeof probe_fma / sizeof probe_fma[0])

static char *fma_variant(int threads, int v, long floats)
{
    (void)floats;
    return fma_probe_source(threads, probe_fma[v].lanes, probe_fma[v].chains);
}

static char *stream_variant(int threads, int v, long floats)
{
    return stream_probe_source(threads, floats, false);
}

static char *read_write_variant(int threads, int v, long floats)
{
    return stream_probe_source(threads, floats, true);
}

/* The peak at b's measure.threads, and the cache levels (bandwidths not yet
 * measured), into r; 0, or -1 when the FMA probe cannot run. */
static int probe_peak(cpu_backend *b, dt_roofline *r)
{
    int threads = b->measure.threads < 1 ? 1 : b->measure.threads, which;
    memset(r, 0, sizeof *r);
    r->threads = threads;
    double peak = best_of_rounds(b, threads, fma_variant, NFMA, 0, PROBE_MAX_ROUNDS, &which);
    if (!(peak > 0))
        return -1;
    r->peak_gflops = peak;
    snprintf(r->probe, sizeof r->probe, "fma %d-bit x%d chains, %d thread%s", probe_fma[which].lanes * 32,
             probe_fma[which].chains, threads, threads > 1 ? "s" : "");
    r->nlevels = dt_roofline_cpu_levels(threads, r->levels, DT_ROOFLINE_MAX_LEVELS);
    return 0;
}

/* Level l's two streams at b's measure.threads, into l: each the best of
 * runs (a run is itself micro-batches until the CV rule stops) under the
 * peak's rounds rule: one slow run would leave the bound loose enough for a
 * kernel to beat it. */
static void probe_level(cpu_backend *b, dt_mem_level *l)
{
    int threads = b->measure.threads < 1 ? 1 : b->measure.threads, which;
    long floats = (long)(l->probe_bytes / sizeof(float));
    l->read_gbs = fmax(0, best_of_rounds(b, threads, stream_variant, 1, floats, PROBE_MAX_ROUNDS,
                                         &which));
    l->rw_gbs = fmax(0, best_of_rounds(b, threads, read_write_variant, 1, floats, PROBE_MAX_ROUNDS,
                                       &which));
}

/* The index of b's streams timed at a working set of exactly bytes, -1
 * when none; the caller holds runner_mu. */
static int sized_index(const cpu_backend *b, double bytes)
{
    for (int i = 0; i < b->nsized; i++)
        if (b->sized[i].probe_bytes == bytes)
            return i;
    return -1;
}

/* The streams timed at a working set of exactly bytes, from b's table or,
 * the first time, measured and kept there; false when they cannot be (the
 * stream does not run, or the table is full and they are not in it). */
static bool sized_streams(cpu_backend *b, double bytes, dt_mem_level *out)
{
    pthread_mutex_lock(&b->runner_mu);
    int i = sized_index(b, bytes);
    if (i >= 0)
        *out = b->sized[i];
    bool room = b->nsized < SIZED_STREAMS_MAX;
    pthread_mutex_unlock(&b->runner_mu);
    if (i >= 0)
        return true;
    if (!room)
        return false;
    memset(out, 0, sizeof *out);
    out->probe_bytes = bytes;
    probe_level(b, out);
    if (dt_mem_level_gbs(out) <= 0)
        return false;
    pthread_mutex_lock(&b->runner_mu);   /* another caller may have timed the same size meanwhile */
    if (sized_index(b, bytes) < 0 && b->nsized < SIZED_STREAMS_MAX)
        b->sized[b->nsized++] = *out;
    pthread_mutex_unlock(&b->runner_mu);
    return true;
}

/* The roofline slot: the peak once; for a working set, the level that holds
 * it with its streams timed at that working set itself (a stream at half a
 * level says little about a set that fills most of it or a small part; one
 * at least the DRAM probe's size gets the DRAM level's streams); with no
 * working set (< 0) every level's streams at its probe size. Each size and
 * each level is timed once and kept, so only the sizes a run's tasks have
 * are timed. */
static int cpu_roofline(void *state, double working_set_bytes, dt_roofline *out)
{
    cpu_backend *b = state;
    pthread_mutex_lock(&b->runner_mu);
    int known = b->roofline_state;
    dt_roofline r = b->roofline;
    pthread_mutex_unlock(&b->runner_mu);
    if (known < 0 || (known == 0 && probe_peak(b, &r) != 0)) {
        pthread_mutex_lock(&b->runner_mu);
        b->roofline_state = -1;
        pthread_mutex_unlock(&b->runner_mu);
        memset(out, 0, sizeof *out);
        return -1;
    }
    const dt_mem_level *holder = working_set_bytes > 0 ? dt_roofline_level_for(&r, working_set_bytes) : NULL;
    int h = holder ? (int)(holder - r.levels) : -1;
    dt_mem_level own;
    bool sized = h >= 0 && (h < r.nlevels - 1 || working_set_bytes < holder->probe_bytes) &&
                 sized_streams(b, working_set_bytes, &own);
    for (int i = 0; i < r.nlevels; i++)
        if ((working_set_bytes < 0 || (i == h && !sized)) && dt_mem_level_gbs(&r.levels[i]) <= 0)
            probe_level(b, &r.levels[i]);
    pthread_mutex_lock(&b->runner_mu);
    for (int i = 0; known && i < r.nlevels; i++) /* keep what another caller measured meanwhile */
        if (dt_mem_level_gbs(&r.levels[i]) <= 0)
            r.levels[i] = b->roofline.levels[i];
    b->roofline = r;
    b->roofline_state = 1;
    pthread_mutex_unlock(&b->runner_mu);
    *out = r;
    if (sized) {
        out->levels[h].probe_bytes = own.probe_bytes;
        out->levels[h].read_gbs = own.read_gbs;
        out->levels[h].rw_gbs = own.rw_gbs;
    }
    return 0;
}

static double cpu_peak_gflops(void *state, const dt_task *task)
{
    dt_roofline r;
    return cpu_roofline(state, task ? task->bytes : -1, &r) == 0 ? r.peak_gflops : 0;
}

static void cpu_set_limit(void *state, const struct dt_measure_limit *limit)
{
    cpu_backend *b = state;
    pthread_mutex_lock(&b->runner_mu);
    dt_cpu_runner_set_limit(b->runner, limit);
    pthread_mutex_unlock(&b->runner_mu);
}

dt_cpu_runner *dt_cpu_backend_runner(void *state)
{
    return ((cpu_backend *)state)->runner;
}

const dt_backend_i dt_cpu_backend = {
    .name = "cpu",
    .target = DT_TARGET_CPU,
    .open = cpu_open,
    .build = cpu_build,
    .run = cpu_run,
    .reference = cpu_reference,
    .peak_gflops = cpu_peak_gflops,
    .roofline = cpu_roofline,
    .set_limit = cpu_set_limit,
    .close = cpu_close,
};
