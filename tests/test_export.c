/* test_export.c — `dtune export` and the export module: a short real CPU run
 * of models/tiny.yaml (into a tuning database) exported, built with cc and
 * make alone (no dtune header or library), every kernel checked against the
 * reference by the export's own test program; the export from the database
 * alone gives the same kernels and never uses another machine's or another
 * space's records; untuned tasks, a changed space and bad run folders
 * refused with exit 2; scripts/export_timing.sh reads them all;
 * the CUDA form written, its loader and test program compiled (and run:
 * without a driver it says so). */
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
#include <unistd.h>

#include <gsl/gsl_rng.h>
#include <jansson.h>

#include "dtune/db.h"
#include "dtune/export.h"
#include "dtune/machine.h"
#include "dtune/measure.h"
#include "dtune/target.h"
#include "support/run_cmd.h"

static char out[1 << 16];
static char run_dir[64];       /* the short real run, shared by the tests */
static char run_db[96];        /* the database it measured into */

/* cmd under sh, its output into out; its exit status. */
static int shell(const char *cmd)
{
    return dt_test_shell(cmd, out, sizeof out);
}

/* The run the tests share; without the end's re-timing, whose results the
 * database does not hold, so that an export from the database can be the
 * run's config for config. */
static int setup_run(void **state)
{
    (void)state;
    dt_test_tmpdir(run_dir, sizeof run_dir);
    snprintf(run_db, sizeof run_db, "%s/dtune.db", run_dir);
    char *argv[] = { "dtune", "tune", "--model", "models/tiny.yaml", "--out", run_dir, "--listen",
                     "off", "--budget", "30", "--slot-trials", "4", "--max-slots", "2", "--db", run_db,
                     "--retime", "0", NULL };
    int rc = dt_test_run(argv, out, sizeof out);
    if (rc != 0)
        fprintf(stderr, "dtune tune exited %d: %s\n", rc, out);
    return rc;
}

static int teardown_run(void **state)
{
    (void)state;
    return dt_test_remove_tree(run_dir);
}

/* A copy of the run's best.json and tuning.jsonl in a new folder, with
 * tasks[task] changed by edit (NULL: unchanged). */
static void copy_run(char *dir, size_t len, int task, void (*edit)(json_t *t))
{
    dt_test_tmpdir(dir, len);
    char src[128], dst[128];
    snprintf(src, sizeof src, "%s/best.json", run_dir);
    json_error_t jerr;
    json_t *doc = json_load_file(src, 0, &jerr);
    assert_non_null(doc);
    if (edit)
        edit(json_array_get(json_object_get(doc, "tasks"), (size_t)task));
    snprintf(dst, sizeof dst, "%s/best.json", dir);
    assert_int_equal(json_dump_file(doc, dst, JSON_INDENT(2)), 0);
    json_decref(doc);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp %s/tuning.jsonl %s/", run_dir, dir);
    assert_int_equal(shell(cmd), 0);
}

static void test_tiny_export_builds_and_checks(void **state)
{
    (void)state;
    char exp[128], cmd[512];
    snprintf(exp, sizeof exp, "%s/lib", run_dir);
    int rc = dt_test_run((char *[]){ "dtune", "export", run_dir, "-o", exp, NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("dtune export exited %d: %s", rc, out);
    assert_non_null(strstr(out, "exported 3 kernels of tiny (3 tuned, 0 reference loops)"));
    assert_non_null(strstr(out, "build and check them: make -C"));
    /* nothing of dtune is needed: no dtune header named, no include path given */
    snprintf(cmd, sizeof cmd, "grep -rl 'dtune/' %s", exp);
    assert_int_equal(shell(cmd), 1);
    snprintf(cmd, sizeof cmd, "make -C %s CC=cc CFLAGS='-std=gnu11 -O2 -Wall -Wextra -Werror'", exp);
    if (shell(cmd) != 0)
        fail_msg("make failed: %s", out);
    snprintf(cmd, sizeof cmd, "%s/tiny_test --check-only", exp);
    if (shell(cmd) != 0)
        fail_msg("the export's test failed: %s", out);
    assert_non_null(strstr(out, "3 of 3 kernels match the reference"));
    assert_null(strstr(out, "(reference)"));
    /* timed: the mean per call beside dtune's own figure */
    snprintf(cmd, sizeof cmd, "%s/tiny_test fc", exp);
    assert_int_equal(shell(cmd), 0);
    assert_non_null(strstr(out, "dtune_ms"));
    assert_non_null(strstr(out, "1 of 1 kernels match the reference"));
    /* the header declares every task's entry points */
    snprintf(cmd, sizeof cmd, "grep -c 'void tiny_depthwise_prepare(const float \\*weight' %s/tiny_kernels.h", exp);
    assert_int_equal(shell(cmd), 0);
    /* a run timed at two threads (its best.json says so): the same configs,
     * exported on two OpenMP threads without being told, built with -fopenmp */
    char two[64], best[128];
    copy_run(two, sizeof two, 0, NULL);
    snprintf(best, sizeof best, "%s/best.json", two);
    json_error_t jerr;
    json_t *doc = json_load_file(best, 0, &jerr);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "threads")), 1);
    json_object_set_new(doc, "threads", json_integer(2));
    assert_int_equal(json_dump_file(doc, best, JSON_INDENT(2)), 0);
    json_decref(doc);
    snprintf(exp, sizeof exp, "%s/lib2", two);
    rc = dt_test_run((char *[]){ "dtune", "export", two, "-o", exp, NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("the two-thread run's export exited %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "make -C %s && %s/tiny_test --check-only", exp, exp);
    if (shell(cmd) != 0)
        fail_msg("the OpenMP export fails: %s", out);
    assert_non_null(strstr(out, "-fopenmp"));
    assert_non_null(strstr(out, "3 of 3 kernels match the reference"));
    assert_int_equal(dt_test_remove_tree(two), 0);
}

/* scripts/export_timing.sh reads what the export, dtune measure and
 * best.json print: one row per task with three latencies and a ratio. */
static void test_timing_script(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "DTUNE=%s sh scripts/export_timing.sh %s 1", dt_test_dtune(), run_dir);
    if (shell(cmd) != 0)
        fail_msg("export_timing.sh failed: %s", out);
    const char *tasks[] = { "conv", "depthwise", "fc" };
    for (int i = 0; i < 3; i++) {
        const char *row = strstr(out, tasks[i]);
        char name[32];
        double best, dtune_ms, lo, hi, export_ms, lo2, hi2, ratio;
        if (!row || sscanf(row, "%31s %lf %lf [%lf, %lf] %lf [%lf, %lf] %lf", name, &best, &dtune_ms,
                           &lo, &hi, &export_ms, &lo2, &hi2, &ratio) != 9)
            fail_msg("no row for %s: %s", tasks[i], out);
        assert_true(best > 0 && dtune_ms > 0 && export_ms > 0);
        assert_float_equal(ratio, export_ms / dtune_ms, 0.01 * ratio);
    }
}

static void mark_failed(json_t *t)
{
    json_object_set_new(t, "failed", json_string("every config crashed"));
    json_object_set_new(t, "best_config", json_null());
    json_object_set_new(t, "knobs", json_string(""));
}

static void test_untuned_task(void **state)
{
    (void)state;
    char dir[64], exp[128], cmd[512];
    copy_run(dir, sizeof dir, 1, mark_failed);
    snprintf(exp, sizeof exp, "%s/lib", dir);
    int rc = dt_test_run((char *[]){ "dtune", "export", dir, "-o", exp, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "task depthwise has no tuned config (every config crashed)"));
    assert_non_null(strstr(out, "--allow-untuned"));
    assert_int_equal(access(exp, F_OK), -1);
    rc = dt_test_run((char *[]){ "dtune", "export", dir, "-o", exp, "--allow-untuned", NULL }, out,
                     sizeof out);
    if (rc != 0)
        fail_msg("dtune export --allow-untuned exited %d: %s", rc, out);
    assert_non_null(strstr(out, "(2 tuned, 1 reference loops)"));
    snprintf(cmd, sizeof cmd, "make -C %s && %s/tiny_test --check-only", exp, exp);
    if (shell(cmd) != 0)
        fail_msg("the export's test failed: %s", out);
    assert_non_null(strstr(out, "3 of 3 kernels match the reference"));
    assert_non_null(strstr(out, "(reference)"));
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

static void wrong_knobs(json_t *t)
{
    json_object_set_new(t, "knobs", json_string("tile_m=[1,1] vec=3"));
}

static void wrong_shape(json_t *t)
{
    json_object_set_new(t, "shape", json_string("1x512 * 64x512^T"));
}

static void test_run_and_space_must_agree(void **state)
{
    (void)state;
    char dir[64];
    copy_run(dir, sizeof dir, 2, wrong_knobs);
    int rc = dt_test_run((char *[]){ "dtune", "export", dir, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "task fc: config"));
    assert_non_null(strstr(out, "the space changed since the run"));
    assert_int_equal(dt_test_remove_tree(dir), 0);
    copy_run(dir, sizeof dir, 2, wrong_shape);
    rc = dt_test_run((char *[]){ "dtune", "export", dir, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "task fc is dense 1x512 * 64x512^T, but models/tiny.yaml says"));
    /* another model than the run's */
    rc = dt_test_run((char *[]){ "dtune", "export", dir, "-m", "models/resnet18.yaml", NULL }, out,
                     sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "the run tuned model tiny"));
    assert_int_equal(dt_test_remove_tree(dir), 0);
    /* kernels at another thread count than the run timed them at */
    char exp[128];
    snprintf(exp, sizeof exp, "%s/threads2", run_dir);
    rc = dt_test_run((char *[]){ "dtune", "export", run_dir, "--threads", "2", "-o", exp, NULL }, out,
                     sizeof out);
    if (rc != 2 || !strstr(out, "the run timed its kernels at 1 thread, not 2"))
        fail_msg("exit %d: %s", rc, out);
    assert_int_equal(access(exp, F_OK), -1);
    /* an older best.json does not say: the count given is taken */
    copy_run(dir, sizeof dir, 0, NULL);
    char best[128];
    snprintf(best, sizeof best, "%s/best.json", dir);
    json_error_t jerr;
    json_t *doc = json_load_file(best, 0, &jerr);
    assert_non_null(doc);
    assert_int_equal(json_object_del(doc, "threads"), 0);
    assert_int_equal(json_dump_file(doc, best, JSON_INDENT(2)), 0);
    json_decref(doc);
    snprintf(exp, sizeof exp, "%s/threads2", dir);
    rc = dt_test_run((char *[]){ "dtune", "export", dir, "--threads", "2", "-o", exp, NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("an older run's export at 2 threads exited %d: %s", rc, out);
    snprintf(exp, sizeof exp, "%s/threads2/tiny_kernels.h", dir);
    char *header = dt_test_slurp(exp);
    assert_non_null(header);
    assert_non_null(strstr(header, "The kernels run on OpenMP threads."));
    free(header);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

static void test_bad_run_dirs(void **state)
{
    (void)state;
    char dir[64], path[128];
    int rc = dt_test_run((char *[]){ "dtune", "export", "/nonexistent/run", NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "/nonexistent/run: No such file or directory"));
    dt_test_tmpdir(dir, sizeof dir);
    rc = dt_test_run((char *[]){ "dtune", "export", dir, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "best.json"));
    snprintf(path, sizeof path, "%s/best.json", dir);
    assert_int_equal(dt_test_write_file(path, "{\"model\": \"tiny\",\n  \"tasks\": [}\n"), 0);
    rc = dt_test_run((char *[]){ "dtune", "export", dir, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "best.json:2:"));
    rc = dt_test_run((char *[]){ "dtune", "export", path, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "not a run folder"));
    assert_int_equal(dt_test_remove_tree(dir), 0);
    /* the model the log names is not reachable from here */
    copy_run(dir, sizeof dir, 0, NULL);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    char *log = dt_test_slurp(path);
    assert_non_null(log);
    char *model = strstr(log, "models/tiny.yaml");
    assert_non_null(model);
    memcpy(model, "models/tony.yaml", strlen("models/tony.yaml"));
    assert_int_equal(dt_test_write_file(path, "%s", log), 0);
    free(log);
    rc = dt_test_run((char *[]){ "dtune", "export", dir, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "models/tony.yaml"));
    assert_non_null(strstr(out, "the model file the run recorded"));
    assert_int_equal(dt_test_remove_tree(dir), 0);
    /* best.json without the log that names the model */
    copy_run(dir, sizeof dir, 0, NULL);
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    assert_int_equal(unlink(path), 0);
    rc = dt_test_run((char *[]){ "dtune", "export", dir, NULL }, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "give it with -m MODEL.yaml"));
    char exp[128];
    snprintf(exp, sizeof exp, "%s/lib", dir);
    rc = dt_test_run((char *[]){ "dtune", "export", dir, "-m", "models/tiny.yaml", "-o", exp, NULL },
                     out, sizeof out);
    if (rc != 0)
        fail_msg("dtune export -m exited %d: %s", rc, out);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* The CUDA form from choices (a random valid config per task, the last task
 * untuned): sources and launch geometry written, the loader compiles with
 * strict warnings, and its Makefile builds the library. */
static void test_cuda_export_written(void **state)
{
    (void)state;
    dt_model *model;
    dt_error err;
    assert_int_equal(dt_model_load("models/tiny.yaml", &model, &err), 0);
    dt_export_choice choices[8];
    int n = model->ntasks;
    assert_true(n >= 2 && n <= 8);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 17);
    for (int i = 0; i < n; i++) {
        memset(&choices[i], 0, sizeof choices[i]);
        choices[i].task = model->tasks[i];
        choices[i].tuned = i < n - 1;
        dt_space space;
        assert_int_equal(dt_target_space_init(&space, &model->tasks[i], DT_TARGET_CUDA, &err), 0);
        dt_point point;
        dt_space_random(&space, rng, &point);
        choices[i].config = dt_space_index(&space, &point);
        dt_space_point_str(&space, &point, choices[i].knobs, sizeof choices[i].knobs);
        dt_space_free(&space);
    }
    gsl_rng_free(rng);
    dt_export_params params = dt_export_params_default();
    params.target = DT_TARGET_CUDA;
    char dir[64], cmd[512];
    dt_test_tmpdir(dir, sizeof dir);
    int rc = dt_export_write(&params, "tiny", choices, n, dir, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    snprintf(cmd, sizeof cmd, "grep -l 'extern \"C\" __global__' %s/kernels/%s.cu", dir,
             model->tasks[0].name);
    assert_int_equal(shell(cmd), 0);
    snprintf(cmd, sizeof cmd, "test ! -e %s/kernels/%s.cu", dir, model->tasks[n - 1].name);
    assert_int_equal(shell(cmd), 0);
    snprintf(cmd, sizeof cmd, "grep -c '.source = NULL' %s/tiny_cuda.c", dir);
    assert_int_equal(shell(cmd), 0);
    assert_int_equal(atoi(out), 1);
    snprintf(cmd, sizeof cmd, "cd %s && cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra "
                              "-Werror -c tiny_cuda.c -o /dev/null && "
                              "make CFLAGS='-std=gnu11 -O2 -Wall -Wextra -Werror'", dir);
    if (shell(cmd) != 0)
        fail_msg("the CUDA loader does not build: %s", out);
    snprintf(cmd, sizeof cmd, "test -s %s/libtiny_cuda.a", dir);
    assert_int_equal(shell(cmd), 0);
    /* without a driver the test program says so; with a GPU it checks */
    snprintf(cmd, sizeof cmd, "%s/tiny_cuda_test --check-only", dir);
    rc = shell(cmd);
    if (rc == 0)
        assert_non_null(strstr(out, "kernels match the reference"));
    else if (rc != 1 || (!strstr(out, "libcuda.so.1 not found") && !strstr(out, "CUDA driver error")))
        fail_msg("tiny_cuda_test exited %d: %s", rc, out);
    /* a config outside its space is refused, nothing half-written counts */
    choices[0].config = UINT64_MAX;
    assert_int_equal(dt_export_write(&params, "tiny", choices, n, dir, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "outside its space"));
    assert_int_equal(dt_export_write(&params, "tiny", choices, 0, dir, &err), DT_EINVAL);
    dt_model_free(model);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* A CUDA run folder: the short run's best.json with target cuda and, per
 * task, a random valid CUDA config (index and knobs) in place of its own. */
static void test_cuda_run_exported(void **state)
{
    (void)state;
    char dir[64], src[128], dst[128], cmd[512];
    copy_run(dir, sizeof dir, 0, NULL);
    snprintf(src, sizeof src, "%s/best.json", dir);
    json_error_t jerr;
    json_t *doc = json_load_file(src, 0, &jerr);
    assert_non_null(doc);
    json_object_set_new(doc, "target", json_string("cuda"));
    dt_model *model;
    dt_error err;
    assert_int_equal(dt_model_load("models/tiny.yaml", &model, &err), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 23);
    json_t *tasks = json_object_get(doc, "tasks");
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        json_t *t = json_array_get(tasks, i);
        int k = dt_model_find_task(model, json_string_value(json_object_get(t, "name")));
        assert_true(k >= 0);
        dt_space space;
        dt_point point;
        char knobs[256];
        assert_int_equal(dt_target_space_init(&space, &model->tasks[k], DT_TARGET_CUDA, &err), 0);
        dt_space_random(&space, rng, &point);
        dt_space_point_str(&space, &point, knobs, sizeof knobs);
        json_object_set_new(t, "best_config", json_integer((json_int_t)dt_space_index(&space, &point)));
        json_object_set_new(t, "knobs", json_string(knobs));
        dt_space_free(&space);
    }
    gsl_rng_free(rng);
    dt_model_free(model);
    assert_int_equal(json_dump_file(doc, src, JSON_INDENT(2)), 0);
    json_decref(doc);
    snprintf(dst, sizeof dst, "%s/lib", dir);
    int rc = dt_test_run((char *[]){ "dtune", "export", dir, "-o", dst, NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("dtune export of a CUDA run exited %d: %s", rc, out);
    assert_non_null(strstr(out, "build the loader and its test: make -C"));
    snprintf(cmd, sizeof cmd, "ls %s/kernels/*.cu | wc -l && make -C %s", dst, dst);
    if (shell(cmd) != 0)
        fail_msg("the CUDA export does not build: %s", out);
    assert_int_equal(atoi(out), 3);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

/* Two tasks whose names differ only where C names put '_' cannot share a
 * library. */
static void test_clashing_names(void **state)
{
    (void)state;
    dt_model *model;
    dt_error err;
    assert_int_equal(dt_model_load("models/tiny.yaml", &model, &err), 0);
    dt_export_choice choices[4];
    memset(choices, 0, sizeof choices);
    for (int i = 0; i < 4; i++)
        choices[i].task = model->tasks[0];
    snprintf(choices[0].task.name, sizeof choices[0].task.name, "block-1");
    snprintf(choices[1].task.name, sizeof choices[1].task.name, "block.1");
    snprintf(choices[2].task.name, sizeof choices[2].task.name, "block-1-prepare");
    snprintf(choices[3].task.name, sizeof choices[3].task.name, "x */ #error \"y\"\n");
    char dir[64], cmd[256];
    dt_test_tmpdir(dir, sizeof dir);
    dt_export_params params = dt_export_params_default();
    if (dt_export_write(&params, "tiny", choices, 4, dir, &err) != 0)
        fail_msg("%s", err.msg);
    /* every name its own symbol; the renamed ones said so; comments whole */
    snprintf(cmd, sizeof cmd, "cd %s && cat tiny_kernels.h && make -s CFLAGS='-std=gnu11 -O2 -Wall -Wextra -Werror' "
                              "libtiny_kernels.a", dir);
    if (shell(cmd) != 0)
        fail_msg("the library of clashing names does not build: %s", out);
    assert_non_null(strstr(out, "void tiny_block_1(const float"));
    assert_non_null(strstr(out, "void tiny_block_1_2(const float"));
    assert_non_null(strstr(out, "void tiny_block_1_prepare_2(const float"));
    assert_non_null(strstr(out, "renamed: its C name would clash with another's as block_1"));
    assert_non_null(strstr(out, "/* x _/ #error _y__: conv2d"));
    dt_model_free(model);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}


/* ---- from the database --------------------------------------------------------------- */

/* Plants in db_path, for every task of tiny, one record of `gflops` on
 * machine in the CPU space of vector width vec, its run's best: config (knobs as given)
 * when knobs is not NULL, else a random config of the space. */
static void plant(const char *db_path, const char *machine, int vec, double gflops, uint64_t config,
                  const char *knobs, unsigned long seed)
{
    dt_model *model;
    dt_db *db;
    dt_error err;
    assert_int_equal(dt_model_load("models/tiny.yaml", &model, &err), 0);
    assert_int_equal(dt_db_open(db_path, &db, &err), 0);
    dt_db_run run = { .seed = seed };
    snprintf(run.machine, sizeof run.machine, "%s", machine);
    snprintf(run.target, sizeof run.target, "cpu");
    snprintf(run.model, sizeof run.model, "models/tiny.yaml");
    snprintf(run.started, sizeof run.started, "2026-01-01T00:00:%02luZ", seed % 60);
    int64_t run_id;
    assert_int_equal(dt_db_run_id(db, &run, &run_id, &err), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    for (int k = 0; k < model->ntasks; k++) {
        dt_space space;
        dt_space_opts opts = { .cpu_max_vec = vec };
        assert_int_equal(dt_target_space_init_opts(&space, &model->tasks[k], DT_TARGET_CPU, &opts, &err), 0);
        dt_measure_record rec;
        memset(&rec, 0, sizeof rec);
        snprintf(rec.task, sizeof rec.task, "%s", model->tasks[k].name);
        rec.task_index = k;
        rec.config = config;
        if (knobs) {
            snprintf(rec.knobs, sizeof rec.knobs, "%s", knobs);
        } else {
            dt_point p;
            dt_space_random(&space, rng, &p);
            rec.config = dt_space_index(&space, &p);
            dt_space_point_str(&space, &p, rec.knobs, sizeof rec.knobs);
        }
        rec.m.result = DT_RESULT_OK;
        rec.m.gflops = gflops;
        rec.m.latency_s = model->tasks[k].flops / (gflops * 1e9);
        rec.m.repeats = 3;
        rec.trial = 1;
        assert_int_equal(dt_db_add(db, run_id, &space, &rec, &err), 0);
        assert_int_equal(dt_db_set_best(db, run_id, &space, rec.config, rec.knobs, gflops, &err), 0);
        dt_space_free(&space);
    }
    gsl_rng_free(rng);
    dt_db_free(db);
    dt_model_free(model);
}

/* A CPU vector width whose spaces are not this machine's (another hash). */
static int other_width(void)
{
    dt_model *model;
    dt_error err;
    assert_int_equal(dt_model_load("models/tiny.yaml", &model, &err), 0);
    char own[24], hash[24];
    int found = 0;
    for (int vec = 0; vec <= 16 && !found; vec += 4) {
        dt_space space;
        dt_space_opts opts = { .cpu_max_vec = vec };
        assert_int_equal(dt_target_space_init_opts(&space, &model->tasks[0], DT_TARGET_CPU, &opts, &err), 0);
        dt_db_space_hash(&space, vec == 0 ? own : hash, 24);
        dt_space_free(&space);
        if (vec > 0 && strcmp(own, hash) != 0)
            found = vec;
    }
    dt_model_free(model);
    assert_true(found > 0);
    return found;
}

/* The tuned configs of an export's table, one per line, into DIR/configs. */
static void configs_of(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "grep -o '\\.config = \"[^\"]*\"' %s/tiny_kernels.c > %s/configs", dir, dir);
    assert_int_equal(shell(cmd), 0);
}

/* Another machine's, another space's and this machine's under other
 * measurement conditions' records, far faster than any, are never used:
 * the export from the database is the run's, config by config. */
static void test_db_export_is_the_runs(void **state)
{
    (void)state;
    char from_run[96], from_db[96], db_arg[128], cmd[768], machine[DT_MACHINE_MAX];
    dt_error err;
    snprintf(from_run, sizeof from_run, "%s/from_run", run_dir);
    snprintf(from_db, sizeof from_db, "%s/from_db", run_dir);
    snprintf(db_arg, sizeof db_arg, "--db=%s", run_db);
    assert_int_equal(dt_machine_fingerprint("cpu", 1, 0, machine, sizeof machine, &err), 0);
    char other_machine[DT_MACHINE_MAX + 16];
    snprintf(other_machine, sizeof other_machine, "%.200s (another)", machine);
    plant(run_db, other_machine, 0, 1e6, 0, NULL, 31);
    plant(run_db, machine, other_width(), 1e6, 0, NULL, 32);
    /* this machine and space, measured otherwise: an older log's bare
     * fingerprint (conditions unknown), warm weights, two threads */
    plant(run_db, machine, 0, 1e6, 0, NULL, 35);
    dt_measure_params otherwise = dt_measure_params_default();
    char key[DT_MACHINE_MAX];
    otherwise.cold_weights = !otherwise.cold_weights;
    assert_int_equal(dt_machine_key(machine, "cpu", &otherwise, key, sizeof key, &err), 0);
    plant(run_db, key, 0, 1e6, 0, NULL, 36);
    otherwise = dt_measure_params_default();
    otherwise.threads = 2;
    assert_int_equal(dt_machine_key(machine, "cpu", &otherwise, key, sizeof key, &err), 0);
    plant(run_db, key, 0, 1e6, 0, NULL, 37);

    assert_int_equal(dt_test_run((char *[]){ "dtune", "export", run_dir, "-o", from_run, NULL }, out,
                                 sizeof out), 0);
    int rc = dt_test_run((char *[]){ "dtune", "export", db_arg, "-m", "models/tiny.yaml", "-o", from_db,
                                     NULL }, out, sizeof out);
    if (rc != 0)
        fail_msg("dtune export --db exited %d: %s", rc, out);
    assert_non_null(strstr(out, "exported 3 kernels of tiny (3 tuned, 0 reference loops)"));
    configs_of(from_run);
    configs_of(from_db);
    snprintf(cmd, sizeof cmd, "cmp %s/configs %s/configs && wc -l < %s/configs && "
                              "diff -r %s/kernels %s/kernels >/dev/null", from_run, from_db, from_db,
             from_run, from_db);
    if (shell(cmd) != 0)
        fail_msg("the database's export is not the run's: %s", out);
    assert_int_equal(atoi(out), 3);
    snprintf(cmd, sizeof cmd, "make -C %s CFLAGS='-std=gnu11 -O2 -Wall -Wextra -Werror' && "
                              "%s/tiny_test --check-only", from_db, from_db);
    if (shell(cmd) != 0)
        fail_msg("the database's export fails its test: %s", out);
    assert_non_null(strstr(out, "3 of 3 kernels match the reference"));
}

/* A task without a record of this machine, measurement conditions and space stops the export
 * (exit 2, named, nothing written) unless --allow-untuned; a record that
 * does not print as its knobs, a missing database and bad arguments are
 * refused. */
static void test_db_export_refusals(void **state)
{
    (void)state;
    char dir[64], db[96], db_arg[128], exp[128], fingerprint[DT_MACHINE_MAX], machine[DT_MACHINE_MAX];
    dt_error err;
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(db, sizeof db, "%s/foreign.db", dir);
    snprintf(db_arg, sizeof db_arg, "--db=%s", db);
    snprintf(exp, sizeof exp, "%s/lib", dir);
    assert_int_equal(dt_machine_fingerprint("cpu", 1, 0, fingerprint, sizeof fingerprint, &err), 0);
    dt_measure_params defaults = dt_measure_params_default();
    assert_int_equal(dt_machine_key(fingerprint, "cpu", &defaults, machine, sizeof machine, &err), 0);
    plant(db, "another machine", 0, 1e6, 0, NULL, 33);
    plant(db, machine, other_width(), 1e6, 0, NULL, 34);
    char *argv[] = { "dtune", "export", db_arg, "-m", "models/tiny.yaml", "-o", exp, NULL, NULL };
    assert_int_equal(dt_test_run(argv, out, sizeof out), 2);
    assert_non_null(strstr(out, "task conv has no tuned config (no record of it in the tuning "
                                "database for this machine and knob space)"));
    assert_non_null(strstr(out, "task fc has no tuned config"));
    assert_non_null(strstr(out, "nothing written"));
    assert_int_equal(access(exp, F_OK), -1);
    argv[7] = "--allow-untuned";
    int rc = dt_test_run(argv, out, sizeof out);
    if (rc != 0)
        fail_msg("--allow-untuned exited %d: %s", rc, out);
    assert_non_null(strstr(out, "(0 tuned, 3 reference loops)"));
    argv[7] = NULL;
    /* this machine and space, but a config that does not print as its knobs */
    plant(db, machine, 0, 2.5, 0, "tile_m=[1,1] vec=3", 35);
    assert_int_equal(dt_test_run(argv, out, sizeof out), 2);
    assert_non_null(strstr(out, "config 0 is not 'tile_m=[1,1] vec=3' in this dtune's knob space"));
    /* no database there: refused, and none made */
    snprintf(db_arg, sizeof db_arg, "--db=%s/none.db", dir);
    assert_int_equal(dt_test_run(argv, out, sizeof out), 2);
    assert_non_null(strstr(out, "no tuning database there"));
    snprintf(db, sizeof db, "%s/none.db", dir);
    assert_int_equal(access(db, F_OK), -1);
    /* the two forms' arguments */
    assert_int_equal(dt_test_run((char *[]){ "dtune", "export", "--db", NULL }, out, sizeof out), 2);
    assert_non_null(strstr(out, "-m MODEL.yaml"));
    assert_int_equal(dt_test_run((char *[]){ "dtune", "export", run_dir, "--db", "-m", "models/tiny.yaml",
                                             NULL }, out, sizeof out), 2);
    assert_int_equal(dt_test_run((char *[]){ "dtune", "export", run_dir, "--target", "cpu", NULL }, out,
                                 sizeof out), 2);
    assert_int_equal(dt_test_run((char *[]){ "dtune", "export", db_arg, "-m", "models/tiny.yaml",
                                             "--target", "tpu", NULL }, out, sizeof out), 2);
    assert_non_null(strstr(out, "unknown target 'tpu'"));
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_export_builds_and_checks),
        cmocka_unit_test(test_timing_script),
        cmocka_unit_test(test_db_export_is_the_runs),
        cmocka_unit_test(test_db_export_refusals),
        cmocka_unit_test(test_untuned_task),
        cmocka_unit_test(test_run_and_space_must_agree),
        cmocka_unit_test(test_bad_run_dirs),
        cmocka_unit_test(test_cuda_export_written),
        cmocka_unit_test(test_cuda_run_exported),
        cmocka_unit_test(test_clashing_names),
    };
    return cmocka_run_group_tests(tests, setup_run, teardown_run);
}
