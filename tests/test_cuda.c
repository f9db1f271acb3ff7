/* test_cuda.c — the cuda backend end to end.
 *
 * Without a device (no libcuda.so.1, no GPU, or every GPU hidden by
 * CUDA_VISIBLE_DEVICES=-1, which these tests set in a child process so they
 * run on a GPU machine too): open fails with DT_ENODEV and "no CUDA device
 * found", `dtune tune --target cuda` exits 1 with that line. Without a GPU
 * every GPU test skips with one line saying why.
 * With a GPU: random configs of every op kind build, pass the output check
 * and time with sane statistics; a kernel with wrong output, one that writes
 * out of bounds, and one that never ends are wrong_output, launch_error and
 * timeout, and the backend measures correctly again after each; configs over
 * the device limits are invalid before launch.
 *
 * Everywhere: the process machinery (start, hello, ready, result, restart
 * after a lost context, kill on timeout, crash) against tests/cuda/
 * fake_libcuda.c, a stand-in driver whose launches misbehave on request; this
 * binary re-runs itself with the fake first on LD_LIBRARY_PATH
 * (--fake-scenario MODE) and reports each result on stdout.
 *
 * The backend starts this very binary as its measurement process, so main
 * dispatches DT_CUDA_RUNNER_ARG first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_rng.h>

#include "cuda_backend.h"
#include "cuda_codegen.h"
#include "dtune/config.h"
#include "cuda_api.h"
#include "dtune/util.h"
#include "dtune/target.h"
#include "support/run_cmd.h"

static char out[1 << 16];

/* The group's state: whether a device is usable. */
typedef struct probe {
    bool device;
    char why[DT_ERROR_MSG_MAX];
} probe;

/* Probes once and prints the one skip line when there is no device. */
static int probe_device(void **state)
{
    probe *pr = calloc(1, sizeof *pr);
    if (!pr)
        return -1;
    dt_cuda_device_info info;
    dt_error err;
    pr->device = dt_cuda_api_device_probe(0, &info, &err) == 0;
    if (pr->device)
        printf("test_cuda: device 0 is %s (compute capability %d.%d)\n", info.name, info.cc / 10,
               info.cc % 10);
    else
        printf("test_cuda: no CUDA device (%s); skipping the GPU tests\n", err.msg);
    snprintf(pr->why, sizeof pr->why, "%s", pr->device ? "" : err.msg);
    *state = pr;
    return 0;
}

static int free_probe(void **state)
{
    free(*state);
    return 0;
}

#define SKIP_WITHOUT_DEVICE(state)                    \
    do {                                              \
        if (!((const probe *)*(state))->device)       \
            skip();                                   \
    } while (0)

typedef struct fixture {
    dt_config cfg;
    char dir[512];
    void *backend;
} fixture;

static void open_backend(fixture *fx, double timeout_s)
{
    dt_config_defaults(&fx->cfg);
    fx->cfg.measure.timeout_seconds = timeout_s;
    dt_test_tmpdir(fx->dir, sizeof fx->dir);
    dt_backend_params params = { &fx->cfg.measure, fx->dir, 5 };
    dt_error err = { 0 };
    int rc = dt_cuda_backend.open(&params, &fx->backend, &err);
    if (rc)
        print_error("open: %s\n", err.msg);
    assert_int_equal(rc, 0);
}

static dt_task conv_task(dt_op_kind kind, int c_in, int hw, int c_out, int k, int stride)
{
    dt_task t = { .kind = kind, .count = 1,
                  .conv = { .n = 1, .c_in = c_in, .h = hw, .w = hw, .c_out = c_out, .kh = k,
                            .kw = k, .sh = stride, .sw = stride, .ph = k / 2, .pw = k / 2,
                            .dh = 1, .dw = 1 } };
    snprintf(t.name, sizeof t.name, "%s_%d", dt_op_kind_name(kind), c_in);
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    return t;
}

static dt_task mm_task(dt_op_kind kind, int b, int m, int n, int k)
{
    dt_task t = { .kind = kind, .count = 1, .mm = { .b = b, .m = m, .n = n, .k = k } };
    snprintf(t.name, sizeof t.name, "%s_%d", dt_op_kind_name(kind), n);
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    return t;
}

static void measure_point(fixture *fx, const dt_space *s, const dt_point *p, dt_measure_result *r)
{
    dt_artifact art;
    dt_error err = { 0 };
    assert_int_equal(dt_cuda_backend.build(fx->backend, s, p, &art, &err), 0);
    assert_int_equal(dt_cuda_backend.run(fx->backend, s, p, &art, r, &err), 0);
}

/* ---- without a device -------------------------------------------------------------- */

/* Runs the shell command line cmd with its output into text (NUL-ended,
 * truncated to len); returns its exit status (128 when it did not exit). */
static int shell_output(const char *cmd, char *text, size_t len)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(text, 1, len - 1, p);
    text[got] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The environment a child sees no device in: every GPU hidden. */
#define HIDE_DEVICES "CUDA_VISIBLE_DEVICES=-1"

/* Child mode --open-without-device: opens the backend and prints the result. */
static int open_without_device(void)
{
    dt_config cfg;
    dt_config_defaults(&cfg);
    dt_backend_params params = { &cfg.measure, "/tmp", 1 };
    void *backend = (void *)&cfg;
    dt_error err = { 0 };
    int rc = dt_cuda_backend.open(&params, &backend, &err);
    printf("open %s backend %s | %s\n", dt_error_name(rc), backend ? "set" : "null", err.msg);
    if (rc == 0)
        dt_cuda_backend.close(backend);
    return 0;
}

/* Output of this binary run again in mode `mode` with the devices hidden. */
static void run_self_hidden(const char *mode, char *text, size_t len)
{
    char exe[1024], cmd[1200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    snprintf(cmd, sizeof cmd, HIDE_DEVICES " %s %s 2>&1", exe, mode);
    assert_int_equal(shell_output(cmd, text, len), 0);
}

static void test_open_without_device(void **state)
{
    (void)state;
    run_self_hidden("--open-without-device", out, sizeof out);
    /* DT_ENODEV, no backend, and the message says why: the driver's own words */
    const char *want = "open DT_ENODEV backend null | no CUDA device found: ";
    if (strncmp(out, want, strlen(want)) != 0)
        fail_msg("expected '%s...', got:\n%s", want, out);
    assert_true(strlen(out) > strlen(want) + 1);
    assert_int_equal(dt_error_exit_status(DT_ENODEV), 1);
}

static void test_tune_without_device_exits_1(void **state)
{
    (void)state;
    char dir[512], cmd[1200];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd,
             HIDE_DEVICES " %s tune --model models/tiny.yaml --target cuda --out %s --listen off 2>&1",
             dt_test_dtune(), dir);
    int rc = shell_output(cmd, out, sizeof out);
    if (rc != 1 || !strstr(out, "no CUDA device found"))
        print_error("dtune tune --target cuda exited %d:\n%s\n", rc, out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "no CUDA device found"));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_runner_entry_rejects_bad_arguments(void **state)
{
    (void)state;
    assert_int_equal(dt_cuda_backend_runner_main(2, (char *[]){ "x", "__not-the-runner", NULL }), 1);
    assert_int_equal(dt_cuda_backend_runner_main(1, (char *[]){ "x", NULL }), 1);
}

/* A builder opened for a described device compiles into the cache without
 * one (skips without NVRTC); with a GPU, a measurer on the same work dir
 * finds what it built and measures it. */
static void test_builder_without_device(void **state)
{
    const dt_nvrtc *nv;
    if (dt_cuda_api_nvrtc_load(&nv, NULL) != 0)
        skip();
    dt_cuda_device_info device;
    bool present = ((const probe *)*state)->device;
    if (present)
        assert_int_equal(dt_cuda_api_device_probe(0, &device, NULL), 0);
    else
        dt_cuda_backend_device_hopper(&device);
    fixture fx;
    dt_config_defaults(&fx.cfg);
    dt_test_tmpdir(fx.dir, sizeof fx.dir);
    dt_backend_params params = { &fx.cfg.measure, fx.dir, 5 };
    void *builder = NULL;
    dt_error err = { 0 };
    assert_int_equal(dt_cuda_backend_open_builder(&device, &params, &builder, &err), 0);
    dt_task t = conv_task(DT_OP_CONV2D, 16, 14, 32, 3, 1);
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    dt_point p = { 0 };
    assert_true(dt_space_valid(&s, &p));
    dt_artifact a, again;
    assert_int_equal(dt_cuda_backend.build(builder, &s, &p, &a, &err), 0);
    assert_int_equal(a.result, DT_RESULT_OK);
    assert_int_equal(access(a.path, R_OK), 0);
    assert_true(a.compile_ms > 0);
    assert_int_equal(dt_cuda_backend.build(builder, &s, &p, &again, &err), 0);
    assert_string_equal(again.path, a.path);
    assert_string_equal(again.detail, "cached");
    /* it runs nothing */
    dt_measure_result r;
    assert_int_equal(dt_cuda_backend.run(builder, &s, &p, &a, &r, &err), DT_ENOTSUP);
    dt_cuda_backend.close(builder);
    /* the described device's limits decide what is invalid */
    dt_cuda_device_info small = device;
    small.max_shared = small.max_shared_optin = 1;   /* the template stages tiles in shared memory */
    assert_int_equal(dt_cuda_backend_open_builder(&small, &params, &builder, &err), 0);
    assert_int_equal(dt_cuda_backend.build(builder, &s, &p, &again, &err), 0);
    assert_int_equal(again.result, DT_RESULT_INVALID);
    assert_non_null(strstr(again.detail, "shared memory"));
    dt_cuda_backend.close(builder);
    if (present) {
        fx.backend = NULL;
        assert_int_equal(dt_cuda_backend.open(&params, &fx.backend, &err), 0);
        assert_int_equal(dt_cuda_backend.build(fx.backend, &s, &p, &again, &err), 0);
        assert_string_equal(again.path, a.path);
        assert_string_equal(again.detail, "cached");
        measure_point(&fx, &s, &p, &r);
        assert_int_equal(r.result, DT_RESULT_OK);
        dt_cuda_backend.close(fx.backend);
    }
    dt_space_free(&s);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx.dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- with a device -------------------------------------------------------------------- */

static void check_random_configs(fixture *fx, const dt_task *task, int configs, uint64_t seed)
{
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, task, DT_TARGET_CUDA, NULL), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    int ok = 0;
    for (int i = 0; i < configs; i++) {
        dt_point p;
        dt_space_random(&s, rng, &p);
        dt_measure_result r;
        measure_point(fx, &s, &p, &r);
        char desc[256];
        dt_space_point_str(&s, &p, desc, sizeof desc);
        /* a config may exceed the registers a block can have: launch_error,
         * never a wrong answer */
        if (r.result != DT_RESULT_OK && r.result != DT_RESULT_LAUNCH_ERROR)
            print_error("%s %s: %s (%s)\n", task->name, desc, dt_result_name(r.result), r.detail);
        assert_true(r.result == DT_RESULT_OK || r.result == DT_RESULT_LAUNCH_ERROR);
        if (r.result != DT_RESULT_OK)
            continue;
        ok++;
        assert_true(r.gflops > 0 && r.latency_s > 0);
        assert_true(r.repeats >= fx->cfg.measure.min_batches && r.repeats <= fx->cfg.measure.max_repeats);
        assert_true(r.cv >= 0);
        assert_true(r.run_ms > 0);
        double implied = task->flops / r.latency_s * 1e-9;
        assert_true(implied > r.gflops * 0.5 && implied < r.gflops * 2);
    }
    assert_true(ok > 0);
    gsl_rng_free(rng);
    dt_space_free(&s);
}

static void test_every_kind_measures(void **state)
{
    SKIP_WITHOUT_DEVICE(state);
    fixture fx;
    open_backend(&fx, 10);
    dt_task conv = conv_task(DT_OP_CONV2D, 32, 28, 64, 3, 1);
    dt_task conv_s2 = conv_task(DT_OP_CONV2D, 16, 30, 32, 3, 2);
    dt_task dw = conv_task(DT_OP_DEPTHWISE_CONV2D, 32, 28, 32, 3, 1);
    dt_task dense = mm_task(DT_OP_DENSE, 1, 4, 1000, 512);
    dt_task bmm = mm_task(DT_OP_BATCH_MATMUL, 4, 64, 32, 48);
    check_random_configs(&fx, &conv, 4, 1);
    check_random_configs(&fx, &conv_s2, 3, 2);
    check_random_configs(&fx, &dw, 3, 3);
    check_random_configs(&fx, &dense, 3, 4);
    check_random_configs(&fx, &bmm, 3, 5);
    assert_true(dt_cuda_backend.peak_gflops(fx.backend, &conv) > 100);
    dt_cuda_backend.close(fx.backend);
}

/* Compiles source as a dense kernel's artifact, bypassing codegen. */
static void handmade_artifact(fixture *fx, const char *source, const char *name, dt_artifact *art)
{
    const dt_nvrtc *nv;
    dt_cuda_device_info info;
    assert_int_equal(dt_cuda_api_nvrtc_load(&nv, NULL), 0);
    assert_int_equal(dt_cuda_api_device_probe(0, &info, NULL), 0);
    bool ptx;
    int arch = dt_cuda_api_nvrtc_pick_arch(nv, info.cc, &ptx);
    dt_cuda_image image;
    assert_int_equal(dt_cuda_api_nvrtc_compile(nv, source, name, arch, ptx, &image, NULL), 0);
    memset(art, 0, sizeof *art);
    snprintf(art->path, sizeof art->path, "%s/%s.img", fx->dir, name);
    FILE *f = fopen(art->path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(image.data, 1, image.size + image.ptx, f), image.size + image.ptx);
    assert_int_equal(fclose(f), 0);
    dt_cuda_api_image_free(&image);
}

static const char wrong_source[] =
    "extern \"C\" __global__ void dt_kernel(const float *x, const float *w, float *y)\n"
    "{ y[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }\n";
static const char oob_source[] =
    "extern \"C\" __global__ void dt_kernel(const float *x, const float *w, float *y)\n"
    "{ y[(blockIdx.x * blockDim.x + threadIdx.x) * 1000003 + (1 << 30)] = 1.0f; }\n";
/* Never ends: every iteration is a volatile load and store, which the
 * compiler may not remove (a loop on a volatile local it did remove: on an
 * H100 that kernel returned with y = 2). */
static const char endless_source[] =
    "extern \"C\" __global__ void dt_kernel(const float *x, const float *w, float *y)\n"
    "{ volatile float *v = y; for (;;) v[threadIdx.x] += 1.0f; }\n";

static void expect_bad_then_good(fixture *fx, const char *source, const char *name,
                                 dt_result_class expected)
{
    dt_task t = mm_task(DT_OP_DENSE, 1, 1, 256, 64);
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    dt_point p = { 0 };   /* m=[1,1,1,1] n=[256,1,1,1]: 256 blocks of 1 thread */
    assert_true(dt_space_valid(&s, &p));
    dt_artifact bad;
    handmade_artifact(fx, source, name, &bad);
    dt_measure_result r;
    dt_error err = { 0 };
    assert_int_equal(dt_cuda_backend.run(fx->backend, &s, &p, &bad, &r, &err), 0);
    if (r.result != expected)
        print_error("%s: %s (%s)\n", name, dt_result_name(r.result), r.detail);
    assert_int_equal(r.result, expected);
    assert_true(r.gflops == 0);
    measure_point(fx, &s, &p, &r);   /* the next candidate measures normally */
    assert_int_equal(r.result, DT_RESULT_OK);
    dt_space_free(&s);
}

static void test_failures_are_result_classes(void **state)
{
    SKIP_WITHOUT_DEVICE(state);
    fixture fx;
    open_backend(&fx, 2);
    expect_bad_then_good(&fx, wrong_source, "wrong", DT_RESULT_WRONG_OUTPUT);
    expect_bad_then_good(&fx, oob_source, "oob", DT_RESULT_LAUNCH_ERROR);
    expect_bad_then_good(&fx, endless_source, "endless", DT_RESULT_TIMEOUT);
    dt_cuda_backend.close(fx.backend);
}

static void test_flush_l2_and_invalid(void **state)
{
    SKIP_WITHOUT_DEVICE(state);
    fixture fx;
    open_backend(&fx, 10);
    dt_cuda_backend.close(fx.backend);
    fx.cfg.measure.flush_l2 = true;
    dt_backend_params params = { &fx.cfg.measure, fx.dir, 5 };
    assert_int_equal(dt_cuda_backend.open(&params, &fx.backend, NULL), 0);
    dt_task t = conv_task(DT_OP_CONV2D, 64, 14, 64, 3, 1);
    check_random_configs(&fx, &t, 2, 9);
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    dt_point p = { 0 };
    int f = dt_space_knob(&s, "tile_f");
    /* the last options put whole axes into virtual threads: 64 x 14 accumulators */
    p.opt[f] = (int16_t)(s.knobs[f].noptions - 1);
    p.opt[dt_space_knob(&s, "tile_y")] = (int16_t)(s.knobs[dt_space_knob(&s, "tile_y")].noptions - 1);
    dt_artifact art;
    assert_int_equal(dt_cuda_backend.build(fx.backend, &s, &p, &art, NULL), 0);
    assert_int_equal(art.result, DT_RESULT_INVALID);
    dt_measure_result r;
    assert_int_equal(dt_cuda_backend.run(fx.backend, &s, &p, &art, &r, NULL), 0);
    assert_int_equal(r.result, DT_RESULT_INVALID);
    dt_space_free(&s);
    dt_cuda_backend.close(fx.backend);
}

/* ---- the process machinery against a fake driver -------------------------------- */

/* Runs point 0 of a small dense task `runs` times on a freshly opened
 * backend and prints "run I CLASS repeats=R seconds=S | detail" per run. */
static int fake_runs(bool check_output, int runs)
{
    dt_config cfg;
    dt_config_defaults(&cfg);
    cfg.measure.timeout_seconds = 1;
    cfg.measure.check_output = check_output;
    char dir[512];
    dt_test_tmpdir(dir, sizeof dir);
    dt_backend_params params = { &cfg.measure, dir, 3 };
    void *b = NULL;
    dt_error err = { 0 };
    int rc = dt_cuda_backend.open(&params, &b, &err);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (rc) {
        printf("open %s | %s\n", dt_error_name(rc), err.msg);
        return system(cmd) == 0 ? 0 : 1;
    }
    printf("peak %.0f\n", dt_cuda_backend.peak_gflops(b, NULL));
    dt_task t = mm_task(DT_OP_DENSE, 1, 2, 64, 32);
    dt_space s;
    dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL);
    dt_point p = { 0 };
    dt_artifact art;
    rc = dt_cuda_backend.build(b, &s, &p, &art, &err);
    printf("build %s %s | %s\n", dt_error_name(rc), dt_result_name(art.result), art.detail);
    for (int i = 0; i < runs && rc == 0; i++) {
        dt_measure_result r;
        double start = dt_now_seconds();
        rc = dt_cuda_backend.run(b, &s, &p, &art, &r, &err);
        printf("run %d %s repeats=%d seconds=%.1f | %s%s\n", i, rc ? dt_error_name(rc) :
               dt_result_name(r.result), r.repeats, dt_now_seconds() - start, r.detail, rc ? err.msg : "");
    }
    dt_space_free(&s);
    dt_cuda_backend.close(b);
    return system(cmd) == 0 ? 0 : 1;
}

/* Probes the fake driver's one device by ordinal: "device0" succeeds,
 * "device1" is past the driver's count. */
static int fake_probe(const char *mode)
{
    dt_cuda_device_info info;
    dt_error err = { 0 };
    int ordinal = atoi(mode + strlen("device"));
    int rc = dt_cuda_api_device_probe(ordinal, &info, &err);
    if (rc == 0)
        printf("probe ok: ordinal %d, %s\n", info.ordinal, info.name);
    else
        printf("probe %s | %s\n", dt_error_name(rc), err.msg);
    return 0;
}

static int fake_scenario(const char *mode)
{
    if (strncmp(mode, "device", 6) == 0)
        return fake_probe(mode);
    if (strcmp(mode, "ok") == 0)
        return fake_runs(true, 1) || fake_runs(false, 2);
    return fake_runs(true, 2);
}

typedef struct fake_env {
    char dir[512];
    char exe[1024];
} fake_env;

/* Builds the fake driver alone; skips without a C compiler. */
static void fake_driver(fake_env *env)
{
    if (system("command -v cc >/dev/null 2>&1") != 0)
        skip();
    dt_test_tmpdir(env->dir, sizeof env->dir);
    ssize_t n = readlink("/proc/self/exe", env->exe, sizeof env->exe - 1);
    assert_true(n > 0);
    env->exe[n] = '\0';
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o %s/libcuda.so.1 tests/cuda/fake_libcuda.c", env->dir);
    int rc = system(cmd);
    if (rc != 0)
        print_error("%s: status %d\n", cmd, rc);
    assert_int_equal(rc, 0);
}

/* Builds the fake driver; skips without a C compiler or NVRTC. */
static void fake_setup(fake_env *env)
{
    const dt_nvrtc *nv;
    if (dt_cuda_api_nvrtc_load(&nv, NULL) != 0)
        skip();
    fake_driver(env);
}

/* Removes the fake driver's folder. */
static void fake_cleanup(const fake_env *env)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", env->dir);
    assert_int_equal(system(cmd), 0);
}

/* Output of this binary's --fake-scenario mode under the fake driver. */
static void fake_run(const fake_env *env, const char *mode, char *text, size_t len)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} FAKE_CUDA_MODE=%s "
             "FAKE_CUDA_LOG=%s/%s.log %s --fake-scenario %s 2>&1",
             env->dir, mode, env->dir, mode, env->exe, mode);
    assert_int_equal(shell_output(cmd, text, len), 0);
}

/* Processes that initialised the fake driver (the parent and each
 * measurement process; NVRTC may initialise it too, in the parent). */
static int distinct_processes(const fake_env *env, const char *mode)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s.log", env->dir, mode);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long pids[64];
    int n = 0;
    long pid;
    while (fscanf(f, "init %ld\n", &pid) == 1) {
        bool seen = false;
        for (int i = 0; i < n; i++)
            seen = seen || pids[i] == pid;
        if (!seen && n < 64)
            pids[n++] = pid;
    }
    fclose(f);
    return n;
}

/* Asserts text contains needle, showing text when it does not. */
static void expect_text(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected '%s' in:\n%s", needle, text);
}

static void test_process_machinery_with_fake_driver(void **state)
{
    (void)state;
    fake_env env;
    fake_setup(&env);
    /* the untouched NaN output is wrong; without the check it times */
    fake_run(&env, "ok", out, sizeof out);
    expect_text(out, "peak 19492");    /* 108 SMs x 64 x 2 x 1.41 GHz */
    expect_text(out, "build DT_OK ok");
    expect_text(out, "run 0 wrong_output");
    expect_text(out, "run 0 ok repeats=");
    expect_text(out, "run 1 ok repeats=");
    /* the parent and one measurement process per opened backend */
    assert_int_equal(distinct_processes(&env, "ok"), 3);
    /* an illegal address: launch_error, and a new process for the next run */
    fake_run(&env, "sticky", out, sizeof out);
    expect_text(out, "run 0 launch_error");
    expect_text(out, "illegal memory access");
    expect_text(out, "run 1 launch_error");
    assert_int_equal(distinct_processes(&env, "sticky"), 3);
    /* a kernel that never ends is killed after timeout_seconds */
    fake_run(&env, "hang", out, sizeof out);
    expect_text(out, "run 0 timeout repeats=0 seconds=1.");
    expect_text(out, "run 1 timeout");
    /* a dying process is a crash, and the next run starts another */
    fake_run(&env, "crash", out, sizeof out);
    expect_text(out, "run 0 crash");
    expect_text(out, "Aborted");
    expect_text(out, "run 1 crash");
    /* a driver without a device */
    fake_run(&env, "nodevice", out, sizeof out);
    expect_text(out, "open DT_ENODEV | no CUDA device found");
    fake_cleanup(&env);
}

/* measure.cuda_device picks the device the probe describes; one past the
 * driver's count is an error naming the ordinal and the count. */
static void test_device_ordinal_with_fake_driver(void **state)
{
    (void)state;
    fake_env env;
    fake_driver(&env);
    fake_run(&env, "device0", out, sizeof out);
    expect_text(out, "probe ok: ordinal 0, Fake GPU");
    fake_run(&env, "device1", out, sizeof out);
    expect_text(out, "measure.cuda_device 1: the driver reports 1 CUDA device (0 to 0)");
    fake_cleanup(&env);
}

/* Each MPI worker's device: its index among its node's workers (rank 0
 * takes none) modulo the device count, unless the user chose one. */
static void test_worker_device_choice(void **state)
{
    (void)state;
    /* four workers on a node of four GPUs beside rank 0: 0, 1, 2, 3 */
    for (int node_rank = 1; node_rank <= 4; node_rank++)
        assert_int_equal(dt_cuda_api_worker_device(node_rank, true, 4, -1), node_rank - 1);
    /* a node without rank 0: its first rank is a worker */
    assert_int_equal(dt_cuda_api_worker_device(0, false, 4, -1), 0);
    assert_int_equal(dt_cuda_api_worker_device(3, false, 4, -1), 3);
    /* more workers than devices: round robin */
    assert_int_equal(dt_cuda_api_worker_device(5, false, 3, -1), 2);
    assert_int_equal(dt_cuda_api_worker_device(7, true, 3, -1), 0);
    assert_int_equal(dt_cuda_api_worker_device(7, false, 3, -1), 1);
    /* one visible device per rank (CUDA_VISIBLE_DEVICES): always that one */
    assert_int_equal(dt_cuda_api_worker_device(6, false, 1, -1), 0);
    /* an explicit measure.cuda_device is kept on every worker */
    assert_int_equal(dt_cuda_api_worker_device(1, true, 4, 3), 3);
    assert_int_equal(dt_cuda_api_worker_device(6, false, 2, 5), 5);
    /* no device known: 0, opening it then says why */
    assert_int_equal(dt_cuda_api_worker_device(3, true, 0, -1), 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], DT_CUDA_RUNNER_ARG) == 0)
        return dt_cuda_backend_runner_main(argc, argv);
    if (argc > 2 && strcmp(argv[1], "--fake-scenario") == 0)
        return fake_scenario(argv[2]);
    if (argc > 1 && strcmp(argv[1], "--open-without-device") == 0)
        return open_without_device();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_without_device),
        cmocka_unit_test(test_tune_without_device_exits_1),
        cmocka_unit_test(test_runner_entry_rejects_bad_arguments),
        cmocka_unit_test(test_process_machinery_with_fake_driver),
        cmocka_unit_test(test_device_ordinal_with_fake_driver),
        cmocka_unit_test(test_worker_device_choice),
        cmocka_unit_test(test_builder_without_device),
        cmocka_unit_test(test_every_kind_measures),
        cmocka_unit_test(test_failures_are_result_classes),
        cmocka_unit_test(test_flush_l2_and_invalid),
    };
    return cmocka_run_group_tests(tests, probe_device, free_probe);
}
