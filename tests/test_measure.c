/* test_measure.c — the CV stopping rule, the CPU runner's result classes
 * with planted kernels (crash, hang, wrong output, compile error and
 * timeout), the runner surviving them, CV stopping on a stable and a noisy
 * kernel, the builder pool, and `dtune measure`'s exit statuses.
 *
 * The runner child is this test binary itself: main hands argv to
 * dt_cpu_runner_main when called as `test_measure __cpu-runner FD`.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "cpu_backend.h"
#include "cpu_codegen.h"
#include "dtune/cli.h"
#include "dtune/config.h"
#include "dtune/measure.h"
#include "cpu_runner_internal.h"
#include "dtune/target.h"
#include "dtune/util.h"
#include "support/run_cmd.h"

typedef struct fixture {
    char dir[64];
    dt_measure_params measure;
    dt_task task;               /* dense 4x16 * 8x16^T */
    void *cpu;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/dtune-test-measure-XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    dt_config cfg;
    dt_config_defaults(&cfg);
    f->measure = cfg.measure;
    f->measure.timeout_seconds = 1.0;
    f->task = (dt_task){ .kind = DT_OP_DENSE, .count = 1, .mm = { .b = 1, .m = 4, .n = 8, .k = 16 } };
    if (dt_task_finish(&f->task, NULL) != 0)
        return -1;
    dt_backend_params params = { .measure = &f->measure, .work_dir = f->dir, .seed = 11 };
    dt_cpu_options opts;
    dt_cpu_backend_default_options(&f->measure, &opts);
    opts.compile_timeout_s = 1.0;
    if (dt_cpu_backend_open(&params, &opts, &f->cpu, NULL) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    dt_cpu_backend.close(f->cpu);
    dt_test_remove_tree(f->dir);
    free(f);
    return 0;
}

/* ---- the CV rule ------------------------------------------------------------- */

static void test_cv_stop_stable_stops_at_min(void **state)
{
    (void)state;
    dt_measure_cv_stop s;
    dt_measure_cv_stop_init(&s, 3, 20, 0.10);
    assert_false(dt_measure_cv_stop_add(&s, 101.3));
    assert_false(dt_measure_cv_stop_add(&s, 99.1));
    assert_true(dt_measure_cv_stop_add(&s, 100.4));
    assert_int_equal(s.n, 3);
    assert_float_equal(dt_measure_cv_stop_mean(&s), (101.3 + 99.1 + 100.4) / 3, 1e-9);
    assert_true(dt_measure_cv_stop_cv(&s) < 0.01);
}

static void test_cv_stop_noisy_runs_to_max(void **state)
{
    (void)state;
    dt_measure_cv_stop s;
    dt_measure_cv_stop_init(&s, 3, 12, 0.10);
    int n = 0;
    bool stop = false;
    while (!stop) {
        stop = dt_measure_cv_stop_add(&s, n % 2 ? 30.7 : 61.9);
        n++;
    }
    assert_int_equal(n, 12);
    /* population CV of two values a, b in equal numbers: |a - b| / (a + b) */
    assert_float_equal(dt_measure_cv_stop_cv(&s), (61.9 - 30.7) / (61.9 + 30.7), 1e-9);
}

/* ---- the output check and the input fill ------------------------------------------ */

static void test_output_check_tolerance(void **state)
{
    (void)state;
    float ref[4] = { 10.0f, -3.5f, 0.0f, 1e-4f };
    float out[4] = { 10.0005f, -3.5001f, 0.00005f, 0.0f };
    assert_int_equal(dt_measure_check_output(out, ref, 4, 1e-3), -1);
    out[1] = -3.51f;   /* relative error 2.9e-3 */
    assert_int_equal(dt_measure_check_output(out, ref, 4, 1e-3), 1);
    out[1] = -3.5f;
    out[2] = 0.02f;    /* above the floor max|ref| / 100 * tol = 1e-4 */
    assert_int_equal(dt_measure_check_output(out, ref, 4, 1e-3), 2);
    out[2] = 0.0f / 0.0f;
    assert_int_equal(dt_measure_check_output(out, ref, 4, 1e-3), 2);
}

/* The same seed gives the same inputs, spread over [-1, 1); a different
 * state gives different ones. */
static void test_fill_is_reproducible(void **state)
{
    (void)state;
    float a[257], b[257];
    uint64_t sa = 41, sb = 41;
    dt_measure_fill(a, 257, &sa);
    dt_measure_fill(b, 257, &sb);
    assert_memory_equal(a, b, sizeof a);
    assert_true(sa == sb && sa != 41);
    float lo = 1, hi = -1;
    for (int i = 0; i < 257; i++) {
        assert_true(a[i] >= -1.0f && a[i] < 1.0f);
        lo = a[i] < lo ? a[i] : lo;
        hi = a[i] > hi ? a[i] : hi;
    }
    assert_true(lo < -0.8f && hi > 0.8f);
    dt_measure_fill(b, 257, &sb);
    assert_true(memcmp(a, b, sizeof a) != 0);
}


/* ---- planted kernels ----------------------------------------------------------- */

/* A correct dense kernel with `body` spliced in before the return; its
 * workspace is WS_FLOATS floats (16 unless the prelude defines it). */
static char *planted(const char *prelude, const char *body)
{
    char *src = NULL;
    int n = asprintf(&src,
        "#include <stddef.h>\n#include <stdlib.h>\n#include <signal.h>\n#include <time.h>\n%s\n"
        "#ifndef WS_FLOATS\n#define WS_FLOATS 16\n#endif\n"
        "size_t dt_kernel_workspace_bytes(void) { return WS_FLOATS * sizeof(float); }\n"
        "void dt_kernel_prepare(const float *w, float *ws) { (void)w; (void)ws; }\n"
        "void dt_kernel(const float *x, const float *w, float *y, float *ws)\n{\n"
        "    (void)ws;\n"
        "    for (int i = 0; i < 4; i++)\n"
        "        for (int j = 0; j < 8; j++) {\n"
        "            float s = 0;\n"
        "            for (int k = 0; k < 16; k++) s += x[i * 16 + k] * w[j * 16 + k];\n"
        "            y[i * 8 + j] = s;\n        }\n"
        "    %s\n}\n", prelude, body);
    return n < 0 ? NULL : src;
}

static dt_measure_result measure_source(fixture *f, const char *prelude, const char *body)
{
    char *src = planted(prelude, body);
    assert_non_null(src);
    dt_artifact a;
    dt_measure_result r;
    memset(&r, 0, sizeof r);
    assert_int_equal(dt_cpu_backend_build_source(f->cpu, src, 1, &a, NULL), 0);
    free(src);
    if (a.result != DT_RESULT_OK) {
        r.result = a.result;
        snprintf(r.detail, sizeof r.detail, "%s", a.detail);
        return r;
    }
    assert_int_equal(dt_cpu_backend_run_artifact(f->cpu, &f->task, &a, &r, NULL), 0);
    return r;
}

/* measure_source with a backend opened on f->measure as the test has just
 * changed it (a backend copies its measurement settings when it opens). */
static dt_measure_result measure_source_reopened(fixture *f, const char *prelude,
                                                 const char *body)
{
    dt_backend_params params = { .measure = &f->measure, .work_dir = f->dir, .seed = 11 };
    dt_cpu_options opts;
    dt_cpu_backend_default_options(&f->measure, &opts);
    void *backend;
    assert_int_equal(dt_cpu_backend_open(&params, &opts, &backend, NULL), 0);
    void *saved = f->cpu;
    f->cpu = backend;
    dt_measure_result r = measure_source(f, prelude, body);
    f->cpu = saved;
    dt_cpu_backend.close(backend);
    return r;
}

static void assert_good_kernel_runs(fixture *f)
{
    dt_measure_result r = measure_source(f, "", "");
    assert_int_equal(r.result, DT_RESULT_OK);
    assert_true(r.gflops > 0);
    assert_true(r.latency_s > 0);
    /* GFLOPS and latency describe the same mean time per call */
    assert_float_equal(r.gflops, f->task.flops / r.latency_s * 1e-9, 1e-9 * r.gflops);
}

static void test_good_kernel_ok(void **state)
{
    fixture *f = *state;
    assert_good_kernel_runs(f);
    assert_true(dt_cpu_runner_pid(dt_cpu_backend_runner(f->cpu)) > 0);
}

static void expect_crash(fixture *f, const char *body, const char *signame)
{
    dt_cpu_runner *runner = dt_cpu_backend_runner(f->cpu);
    int restarts = dt_cpu_runner_restarts(runner);
    dt_measure_result r = measure_source(f, "", body);
    assert_int_equal(r.result, DT_RESULT_CRASH);
    assert_non_null(strstr(r.detail, signame));
    assert_int_equal(dt_cpu_runner_restarts(runner), restarts + 1);
    assert_int_equal(dt_cpu_runner_pid(runner), 0);
    assert_good_kernel_runs(f);          /* a new child takes over */
}

static void test_crashes_are_classified(void **state)
{
    fixture *f = *state;
    expect_crash(f, "*(volatile int *)(size_t)(y[0] * 0.0f) = 1;", "SEGV");
    expect_crash(f, "abort();", "ABRT");
    expect_crash(f, "volatile int zero = 0; volatile int q = 7 / zero; (void)q;", "FPE");
    expect_crash(f, "raise(SIGBUS);", "BUS");
}

static void test_hang_is_timeout(void **state)
{
    fixture *f = *state;
    dt_measure_result r = measure_source(f, "", "for (volatile int spin = 1; spin;) {}");
    assert_int_equal(r.result, DT_RESULT_TIMEOUT);
    assert_true(r.run_ms >= 900 && r.run_ms < 5000);
    assert_good_kernel_runs(f);
}

static void test_wrong_output(void **state)
{
    fixture *f = *state;
    dt_measure_result r = measure_source(f, "", "y[13] += 0.5f;");
    assert_int_equal(r.result, DT_RESULT_WRONG_OUTPUT);
    assert_non_null(strstr(r.detail, "element 13"));
    r = measure_source(f, "", "y[0] = 0.0f / 0.0f;");      /* NaN */
    assert_int_equal(r.result, DT_RESULT_WRONG_OUTPUT);
    assert_good_kernel_runs(f);
}

static void test_compile_error_and_timeout(void **state)
{
    fixture *f = *state;
    dt_measure_result r = measure_source(f, "", "int broken = ;");
    assert_int_equal(r.result, DT_RESULT_COMPILE_ERROR);
    assert_non_null(strstr(r.detail, "error"));
    /* An #include of a FIFO nobody writes blocks the compiler forever. */
    char fifo[128], prelude[160];
    snprintf(fifo, sizeof fifo, "%s/never.h", f->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(prelude, sizeof prelude, "#include \"%s\"", fifo);
    r = measure_source(f, prelude, "");
    assert_int_equal(r.result, DT_RESULT_COMPILE_TIMEOUT);
    assert_good_kernel_runs(f);
}

static void test_missing_entry_point(void **state)
{
    fixture *f = *state;
    dt_artifact a;
    dt_measure_result r;
    assert_int_equal(dt_cpu_backend_build_source(f->cpu, "int dt_not_a_kernel = 3;\n", 1, &a, NULL), 0);
    assert_int_equal(a.result, DT_RESULT_OK);
    assert_int_equal(dt_cpu_backend_run_artifact(f->cpu, &f->task, &a, &r, NULL), 0);
    assert_int_equal(r.result, DT_RESULT_RUNNER_ERROR);
    assert_non_null(strstr(r.detail, "dt_kernel"));
}

static void test_cache_hit(void **state)
{
    fixture *f = *state;
    char *src = planted("/* cache */", "");
    dt_artifact a, b;
    assert_int_equal(dt_cpu_backend_build_source(f->cpu, src, 1, &a, NULL), 0);
    assert_int_equal(dt_cpu_backend_build_source(f->cpu, src, 1, &b, NULL), 0);
    free(src);
    assert_int_equal(a.result, DT_RESULT_OK);
    assert_string_equal(a.path, b.path);
    assert_string_equal(b.detail, "cached");
    assert_true(a.compile_ms > 0);
    assert_float_equal(b.compile_ms, 0, 0);
    assert_non_null(strstr(a.path, "/cache/"));
}

/* ---- CV stopping on real kernels ------------------------------------------------- */

/* What is tested is that the runner stops as soon as the CV rule allows, not
 * how quiet the machine is. Each call sleeps 2 ms, so a micro-batch of 4
 * calls lasts 8 ms plus four wake-ups, which busy cores delay by a small part
 * of that; arithmetic of the same length would be preempted for whole time
 * slices and could double a batch. The CV of 0.5 then holds on a loaded
 * machine, while a runner that ignored the rule would still run to
 * max_repeats and fail. */
static void test_stable_kernel_stops_early(void **state)
{
    fixture *f = *state;
    f->measure.cv_threshold = 0.5;
    f->measure.micro_batch = 4;
    dt_measure_result r = measure_source_reopened(f, "/* stable */",
        "struct timespec t = { 0, 2000000 };\n"
        "    nanosleep(&t, NULL);");
    assert_int_equal(r.result, DT_RESULT_OK);
    assert_true(r.repeats >= f->measure.min_batches);
    assert_true(r.repeats < f->measure.max_repeats);
    assert_true(r.cv < f->measure.cv_threshold);
}

/* Each call sleeps 0.05 ms or 2 ms at random: per-batch GFLOPS vary 10x+. */
static void test_noisy_kernel_runs_to_max(void **state)
{
    fixture *f = *state;
    f->measure.micro_batch = 1;
    f->measure.max_repeats = 12;
    dt_measure_result r = measure_source_reopened(f,
        "static unsigned noise_state = 12345u;",
        "noise_state = noise_state * 1103515245u + 12345u;\n"
        "    struct timespec t = { 0, (noise_state >> 16) & 1 ? 2000000 : 50000 };\n"
        "    nanosleep(&t, NULL);");
    assert_int_equal(r.result, DT_RESULT_OK);
    assert_int_equal(r.repeats, 12);
    assert_true(r.cv > 0.10);
}

/* Cold weights: each call is timed alone, after its weights and workspace
 * were evicted, and the eviction is not in the figure. The kernel takes a
 * microsecond; evicting its 64 MB workspace (a million cache lines) takes
 * a millisecond or more, so a figure that held the eviction would be far
 * above the bound; and the micro-batches are sized by the wall time of an
 * eviction and a call, not by the call alone. */
static void test_cold_weights_time_the_call_alone(void **state)
{
    fixture *f = *state;
    f->measure.cold_weights = true;
    f->measure.max_repeats = 6;
    f->measure.timeout_seconds = 10;   /* the first eviction maps the untouched workspace */
    double t0 = dt_now_seconds();
    dt_measure_result r = measure_source_reopened(f, "#define WS_FLOATS (16u << 20)", "");
    double wall = dt_now_seconds() - t0;
    if (r.result != DT_RESULT_OK)
        fail_msg("the cold measurement gave %s: %s", dt_result_name(r.result), r.detail);
    assert_true(r.repeats >= f->measure.min_batches && r.repeats <= 6);
    if (r.latency_s >= 2e-4)
        fail_msg("a 1 us kernel timed cold at %.3f ms: the eviction is in the figure", r.latency_s * 1e3);
    /* sized by the call alone, a batch would be 2 ms of calls: thousands of
     * evictions, seconds per batch */
    if (wall > 20)
        fail_msg("the cold measurement took %.1f s: its batches ignore the eviction's time", wall);
}

/* At more than one thread, measure.spread_input has the runner call the
 * artifact's DT_CPU_KERNEL_SPREAD on the kernel's input and output before
 * each timed call (the check's call comes first, unspread). The planted
 * kernel counts its calls and the spreads and aborts when a timed call was
 * not spread, or a spread was not given the input: with spread_input the
 * measurement is ok; without it (or at one thread) the same artifact gets
 * no spread and aborts, so the test sees the difference. */
#define SPREAD_CHECK \
    "static long calls_, spreads_; static const float *spread_input_;\n" \
    "void " DT_CPU_KERNEL_SPREAD "(float *const *b, const size_t *n, int k)\n" \
    "{ if (k >= 1 && n[0] > 0) spread_input_ = b[0]; spreads_++; }\n"
#define SPREAD_BODY "if (++calls_ > 1 && (spreads_ != calls_ - 1 || spread_input_ != x)) abort();"

static void test_spread_input_rewrites_before_each_timed_call(void **state)
{
    fixture *f = *state;
    const struct { int threads; bool spread; dt_result_class want; } cases[] = {
        { 2, true, DT_RESULT_OK }, { 2, false, DT_RESULT_CRASH }, { 1, true, DT_RESULT_CRASH },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        f->measure.threads = cases[i].threads;
        f->measure.spread_input = cases[i].spread;
        f->measure.cold_weights = false;
        f->measure.max_repeats = 4;
        dt_measure_result r = measure_source_reopened(f, SPREAD_CHECK, SPREAD_BODY);
        if (r.result != cases[i].want)
            fail_msg("threads %d, spread %d: %s (%s), want %s", cases[i].threads, cases[i].spread,
                     dt_result_name(r.result), r.detail, dt_result_name(cases[i].want));
    }
}

/* ---- the measurer with the cpu backend --------------------------------------------- */

static void test_measurer_batch(void **state)
{
    fixture *f = *state;
    dt_task t = { .kind = DT_OP_DENSE, .count = 1, .mm = { .b = 1, .m = 6, .n = 24, .k = 40 } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    dt_space space;
    assert_int_equal(dt_target_space_init(&space, &t, DT_TARGET_CPU, NULL), 0);
    dt_point points[5];
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    for (int i = 0; i < 4; i++)
        dt_space_random(&space, rng, &points[i]);
    gsl_rng_free(rng);
    /* an invalid point (e.g. a vector width that does not divide its tile) */
    uint64_t idx = 0;
    do
        dt_space_point(&space, idx++, &points[4]);
    while (dt_space_valid(&space, &points[4]));
    dt_measurer *m;
    f->measure.builders = 2;
    assert_int_equal(dt_measurer_new(&dt_cpu_backend, &f->measure, f->dir, 3, &m, NULL), 0);
    dt_measure_result res[5];
    assert_int_equal(dt_measurer_run(m, &space, points, 5, res, NULL), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(res[i].result, DT_RESULT_OK);
        assert_true(res[i].gflops > 0 && res[i].repeats >= 1);
    }
    assert_int_equal(res[4].result, DT_RESULT_INVALID);
    double peak = dt_measurer_peak_gflops(m, &t);
    assert_true(peak > 1 && peak < 1e5);
    /* the roofline: the same peak (measured once); the task's level streamed
     * when the task asks, every level when no task does */
    dt_roofline roof, again, other;
    assert_int_equal(dt_measurer_roofline(m, &t, &roof), 0);
    assert_true(roof.peak_gflops == peak);
    assert_non_null(strstr(roof.probe, "fma "));
    const dt_mem_level *held = dt_roofline_level_for(&roof, t.bytes);
    assert_true(dt_mem_level_gbs(held) > 0);
    /* ... with its streams timed at the task's own working set, once */
    assert_true(held->probe_bytes == t.bytes);
    assert_int_equal(dt_measurer_roofline(m, &t, &again), 0);
    held = dt_roofline_level_for(&again, t.bytes);
    assert_true(held->read_gbs == roof.levels[held - again.levels].read_gbs &&
                held->rw_gbs == roof.levels[held - again.levels].rw_gbs);
    /* a task of another size in the same level gets streams of its own size */
    dt_task t2 = t;
    t2.mm.m = 8;
    assert_int_equal(dt_task_finish(&t2, NULL), 0);
    assert_true(t2.bytes != t.bytes);
    assert_int_equal(dt_measurer_roofline(m, &t2, &other), 0);
    assert_true(dt_roofline_level_for(&other, t2.bytes)->probe_bytes == t2.bytes);
    assert_true(dt_mem_level_gbs(dt_roofline_level_for(&other, t2.bytes)) > 0);
    /* the machine's levels stay timed at their own probe sizes */
    assert_int_equal(dt_measurer_roofline(m, NULL, &roof), 0);
    assert_true(roof.peak_gflops == peak);
    assert_true(roof.nlevels >= 1);
    assert_string_equal(roof.levels[roof.nlevels - 1].name, "DRAM");
    dt_mem_level levels[DT_ROOFLINE_MAX_LEVELS];
    assert_int_equal(dt_roofline_cpu_levels(f->measure.threads, levels, DT_ROOFLINE_MAX_LEVELS),
                     roof.nlevels);
    for (int i = 0; i < roof.nlevels; i++) {
        assert_true(roof.levels[i].read_gbs > 0 && roof.levels[i].rw_gbs > 0);
        assert_true(roof.levels[i].probe_bytes == levels[i].probe_bytes);
    }
    dt_measurer_free(m);
    dt_space_free(&space);
}

/* The reference implementation, timed by the runner process for the CPU
 * and in this process for a backend without a reference slot: both give a
 * positive latency whose GFLOPS agree with the task's FLOPs. */
static void test_reference_time(void **state)
{
    fixture *f = *state;
    dt_measurer *m;
    assert_int_equal(dt_measurer_new(&dt_cpu_backend, &f->measure, f->dir, 3, &m, NULL), 0);
    dt_measure_result res;
    assert_int_equal(dt_measurer_reference(m, &f->task, &res, NULL), 0);
    assert_int_equal(res.result, DT_RESULT_OK);
    assert_true(res.latency_s > 0 && res.latency_s < 1.0);
    assert_true(fabs(res.gflops * 1e9 * res.latency_s / f->task.flops - 1) < 1e-9);
    dt_measurer_free(m);
    dt_backend_i bare = dt_replay_backend;
    bare.reference = NULL;
    assert_int_equal(dt_measurer_new(&bare, &f->measure, f->dir, 3, &m, NULL), 0);
    assert_int_equal(dt_measurer_reference(m, &f->task, &res, NULL), 0);
    assert_int_equal(res.result, DT_RESULT_OK);
    assert_true(res.latency_s > 0 && res.latency_s < 1.0);
    dt_measurer_free(m);
}

/* ---- dtune measure ------------------------------------------------------------------- */

static int run_measure(fixture *f, const char *task, const char *config, const char *extra)
{
    char *argv[12];
    int argc = 0;
    argv[argc++] = "measure";
    argv[argc++] = "models/tiny.yaml";
    argv[argc++] = (char *)task;
    argv[argc++] = "--dir";
    argv[argc++] = f->dir;
    argv[argc++] = "--config";
    argv[argc++] = (char *)config;
    argv[argc++] = "--repeats";
    argv[argc++] = "5";
    if (extra)
        argv[argc++] = (char *)extra;
    argv[argc] = NULL;
    fflush(stdout);
    return dt_cmd_measure(argc, argv);
}

/* `dtune measure ... conv --dir DIR FLAG VALUE`. */
static int run_flag(fixture *f, const char *flag, const char *value)
{
    char *argv[] = { "measure", "models/tiny.yaml", "conv", "--dir", f->dir, (char *)flag,
                     (char *)value, NULL };
    fflush(stdout);
    return dt_cmd_measure(7, argv);
}

/* The flags that set config keys take the config's ranges and names. */
static void test_cmd_measure_flags_are_config_keys(void **state)
{
    fixture *f = *state;
    assert_int_equal(run_flag(f, "--cv", "7"), 2);            /* measure.cv_threshold <= 1 */
    assert_int_equal(run_flag(f, "--repeats", "0"), 2);
    assert_int_equal(run_flag(f, "--threads", "2000"), 2);
    assert_int_equal(run_flag(f, "--seed", "-1"), 2);
    assert_int_equal(run_flag(f, "--target", "gpu"), 2);
    assert_int_equal(run_flag(f, "--cold-weights", "sometimes"), 2);
    assert_int_equal(run_flag(f, "--cold-weights", "false"), 0);
    assert_int_equal(run_flag(f, "--repeats", "2"), 0);       /* below min_batches: lowers it */
}

static void test_cmd_measure(void **state)
{
    fixture *f = *state;
    assert_int_equal(run_measure(f, "conv", "random", NULL), 0);
    assert_int_equal(run_measure(f, "2", "random", NULL), 0);          /* task by index */
    assert_int_equal(run_measure(f, "0", "0", NULL), 0);               /* all-ones config */
    assert_int_equal(run_measure(f, "nosuchtask", "random", NULL), 2);
    assert_int_equal(run_measure(f, "3", "random", NULL), 2);          /* 3 tasks */
    assert_int_equal(run_measure(f, "fc", "99999999999", NULL), 2);
    assert_int_equal(run_measure(f, "fc", "random", "--bogus"), 2);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], DT_CPU_RUNNER_ARG) == 0)
        return dt_cpu_runner_main(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cv_stop_stable_stops_at_min),
        cmocka_unit_test(test_cv_stop_noisy_runs_to_max),
        cmocka_unit_test(test_output_check_tolerance),
        cmocka_unit_test(test_fill_is_reproducible),
        cmocka_unit_test_setup_teardown(test_good_kernel_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crashes_are_classified, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hang_is_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compile_error_and_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_entry_point, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stable_kernel_stops_early, setup, teardown),
        cmocka_unit_test_setup_teardown(test_noisy_kernel_runs_to_max, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cold_weights_time_the_call_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spread_input_rewrites_before_each_timed_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_measurer_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reference_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cmd_measure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cmd_measure_flags_are_config_keys, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
