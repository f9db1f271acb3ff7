/* test_mpi.c — `mpirun -np 2 dtune tune` on the replay backend: rank 1
 * measures every config, rank 0 logs and reports them, and the run equals
 * the one-process run of the same command (the replay surface and the
 * random strategy are deterministic); SIGTERM to mpirun stops both ranks
 * with everything logged; a worker that stops answering ends the job with
 * a message and the same command resumes, and so does one whose answer
 * arrives malformed. Skipped, with one
 * line, where dtune was built without MPI or mpirun is not installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cuda_api.h"
#include "dtune/server.h"
#include "dtune/util.h"
#include "support/run_cmd.h"

static char out[1 << 16];

/* Two ranks on this machine: as root too, more ranks than cores allowed,
 * and the ranks talk through shared memory (Open MPI's TCP transport takes
 * its locks in an order ThreadSanitizer reports, in Open MPI's own code). */
#define MPIRUN_OPTIONS "mpirun --allow-run-as-root --oversubscribe --mca btl self,vader"
#define MPIRUN MPIRUN_OPTIONS " -np 2"
#define MPIRUN3 MPIRUN_OPTIONS " -np 3"

/* Whether mpirun is on PATH. */
static bool have_mpirun(void)
{
    return system("command -v mpirun >/dev/null 2>&1") == 0;
}

/* Runs a shell command line with stdout and stderr into out; returns its
 * exit status. */
static int run_shell(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The tuning command on dir: on 2 ranks under mpirun, or one process. */
static int tune(bool two_ranks, const char *dir)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s%s tune --model models/tiny.yaml --backend replay --strategy random --out %s "
             "--listen off --db off --budget 60 --slot-trials 16 --max-slots 4 2>&1",
             two_ranks ? MPIRUN " " : "", dt_test_dtune(),
             dir);
    return run_shell(cmd);
}

/* "task#config#result#gflops" of every measure record of dir's log, in order. */
static json_t *measure_records(const char *dir)
{
    char path[256], line[8192];
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    json_t *list = json_array();
    while (fgets(line, sizeof line, f)) {
        json_error_t jerr;
        json_t *rec = json_loads(line, 0, &jerr);
        assert_non_null(rec);
        if (strcmp(json_string_value(json_object_get(rec, "type")), "measure") == 0) {
            json_t *key = json_pack("[O,O,O,O]", json_object_get(rec, "task"),
                                    json_object_get(rec, "config"), json_object_get(rec, "result"),
                                    json_object_get(rec, "gflops"));
            assert_non_null(key);
            json_array_append_new(list, key);
        }
        json_decref(rec);
    }
    fclose(f);
    return list;
}

/* Skips the test, saying why in one line, where no MPI run can happen. */
static void skip_without_mpi(const char *test)
{
#ifdef DT_HAVE_MPI
    const bool built_with_mpi = true;
#else
    const bool built_with_mpi = false;
#endif
    if (!built_with_mpi) {
        printf("%s: dtune built without MPI (no libopenmpi-dev found); skipping\n", test);
        skip();
    }
    if (!have_mpirun()) {
        printf("%s: mpirun not installed; skipping\n", test);
        skip();
    }
}

/* The timings workers made besides the tuners' measurements: confirmations
 * of would-be new bests, drift readings and the end's re-timing. */
static long confirm_timings(const char *run_dir)
{
    char path[160];
    snprintf(path, sizeof path, "%s/tuning.jsonl", run_dir);
    return dt_test_count_lines(path, "\"type\":\"confirm\"") +
           dt_test_count_lines(path, "\"type\":\"drift\"") +
           dt_test_count_lines(path, "\"type\":\"retime\"");
}

static void test_two_ranks_equal_one_process(void **state)
{
    (void)state;
    skip_without_mpi(__func__);
    char mpi_dir[64], one_dir[64], path[128];
    dt_test_tmpdir(mpi_dir, sizeof mpi_dir);
    dt_test_tmpdir(one_dir, sizeof one_dir);
    int rc = tune(true, mpi_dir);
    if (rc != 0)
        fail_msg("mpirun exit %d: %s", rc, out);
    assert_non_null(strstr(out, "dtune: mpi: rank 1 measures (replay seed 1)"));
    assert_non_null(strstr(out, "stopped: max_slots reached after 4 slots"));
    long worker_measured = -1;
    const char *said = strstr(out, "dtune rank 1: measured ");
    assert_non_null(said);
    assert_int_equal(sscanf(said, "dtune rank 1: measured %ld configs", &worker_measured), 1);

    json_t *mpi_recs = measure_records(mpi_dir);
    assert_true(json_array_size(mpi_recs) >= 4 * 16);
    /* the worker also times the run's end: every task's best configs again */
    snprintf(path, sizeof path, "%s/tuning.jsonl", mpi_dir);
    int retimed = dt_test_count_lines(path, "\"type\":\"retime\"");
    assert_true(retimed > 0);
    assert_int_equal((long)json_array_size(mpi_recs) + confirm_timings(mpi_dir), worker_measured);

    rc = tune(false, one_dir);
    if (rc != 0)
        fail_msg("one-process exit %d: %s", rc, out);
    json_t *one_recs = measure_records(one_dir);
    if (!json_equal(mpi_recs, one_recs))
        fail_msg("the 2-rank run measured other configs or speeds than the one-process run");

    snprintf(path, sizeof path, "%s/best.json", mpi_dir);
    json_error_t jerr;
    json_t *best = json_load_file(path, 0, &jerr);
    assert_non_null(best);
    assert_int_equal(json_array_size(json_object_get(best, "tasks")), 3);
    snprintf(path, sizeof path, "%s/best.json", one_dir);
    json_t *one_best = json_load_file(path, 0, &jerr);
    assert_non_null(one_best);
    double mpi_ms = json_number_value(json_object_get(best, "model_latency_ms"));
    assert_true(mpi_ms > 0);
    assert_true(mpi_ms == json_number_value(json_object_get(one_best, "model_latency_ms")));
    json_decref(best);
    json_decref(one_best);
    json_decref(mpi_recs);
    json_decref(one_recs);
    dt_test_remove_tree(mpi_dir);
    dt_test_remove_tree(one_dir);
}

/* Every measure record of dir's log is another (task, config) and each line
 * is whole JSON; returns how many there are. */
static size_t assert_log_whole_without_repeats(const char *dir)
{
    json_t *recs = measure_records(dir);
    size_t n = json_array_size(recs);
    json_t *seen = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(recs, i);
        char key[160];
        snprintf(key, sizeof key, "%s#%lld", json_string_value(json_array_get(r, 0)),
                 (long long)json_integer_value(json_array_get(r, 1)));
        if (json_object_get(seen, key))
            fail_msg("%s measured twice", key);
        json_object_set_new(seen, key, json_true());
    }
    json_decref(seen);
    json_decref(recs);
    return n;
}

/* The slots of dir's log, checked as they run: a task's measure records
 * carry the number of the one slot it holds until that slot's record closes
 * it, and no slot is closed twice. A slot a killed run left open (its
 * measurements logged, never its end) is left behind when its task
 * measures in another slot after the restart; that it closes later would
 * mean the two ran at once. Returns the most slots found open at once. */
static int assert_slots_never_overlap(const char *dir)
{
    char path[256], line[8192];
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    enum { MAX_TASKS = 64 };
    int open_slot[MAX_TASKS], most = 0;
    for (int k = 0; k < MAX_TASKS; k++)
        open_slot[k] = -1;
    json_t *closed = json_object(), *left = json_object();
    while (fgets(line, sizeof line, f)) {
        json_error_t jerr;
        json_t *rec = json_loads(line, 0, &jerr);
        assert_non_null(rec);
        const char *type = json_string_value(json_object_get(rec, "type"));
        int k = (int)json_integer_value(json_object_get(rec, "task_index"));
        int slot = (int)json_integer_value(json_object_get(rec, "slot"));
        char key[32];
        snprintf(key, sizeof key, "%d", slot);
        if (strcmp(type, "measure") == 0 && slot > 0) {
            assert_true(k >= 0 && k < MAX_TASKS);
            if (open_slot[k] >= 0 && open_slot[k] != slot) {
                char old[32];
                snprintf(old, sizeof old, "%d", open_slot[k]);
                json_object_set_new(left, old, json_integer(slot));
            }
            open_slot[k] = slot;
        } else if (strcmp(type, "slot") == 0 && k >= 0) {
            if (json_object_get(closed, key))
                fail_msg("slot %d closed twice", slot);
            if (json_object_get(left, key))
                fail_msg("slot %d of task %d closed after the task measured in slot %lld", slot, k,
                         (long long)json_integer_value(json_object_get(left, key)));
            json_object_set_new(closed, key, json_true());
            if (open_slot[k] >= 0 && open_slot[k] != slot)
                fail_msg("slot %d of task %d closed while its slot %d was open", slot, k, open_slot[k]);
            open_slot[k] = -1;
        }
        int now_open = 0;
        for (int i = 0; i < MAX_TASKS; i++)
            now_open += open_slot[i] >= 0;
        most = now_open > most ? now_open : most;
        json_decref(rec);
    }
    fclose(f);
    json_decref(closed);
    json_decref(left);
    return most;
}

/* How many configs rank `rank` said it measured in out, -1 when it did not
 * say. */
static long rank_measured(const char *text, int rank)
{
    char said[64];
    long n = -1;
    snprintf(said, sizeof said, "dtune rank %d: measured ", rank);
    const char *at = strstr(text, said);
    if (at)
        sscanf(at + strlen(said), "%ld", &n);
    return n;
}

/* A replay run of tiny in a new folder dir (its config cfg, its run folder
 * run): 60 s, slots of slot_trials trials, random batches of 8, no status
 * server, then the config lines extra. */
static void write_short_config(char dir[64], char cfg[128], char run[96], int slot_trials,
                               const char *extra)
{
    char cwd[512];
    dt_test_tmpdir(dir, 64);
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(cfg, 128, "%s/config.yaml", dir);
    snprintf(run, 96, "%s/run", dir);
    assert_int_equal(dt_test_write_file(cfg, "model: %s/models/tiny.yaml\nbackend: replay\n"
                                        "output: {dir: %s}\nserver: {listen: \"off\"}\n"
                                        "budget: {total_seconds: 60, slot_trials: %d}\n"
                                        "tuner: {strategy: random, batch_size: 8}\n%s", cwd, run,
                                        slot_trials, extra), 0);
}

/* Three ranks: two slots in flight, each on another task and measured by
 * its own worker (batches of 8 in slots of 32 trials, so the records of two
 * slots interleave in the log); both workers measure, every measured config
 * is logged once, the slots of one task never overlap, and the same
 * command with a larger max_slots resumes and measures nothing twice. */
static void test_three_ranks_keep_two_slots_in_flight(void **state)
{
    (void)state;
    skip_without_mpi(__func__);
    char dir[64], cfg[128], run[96], cmd[1024];
    write_short_config(dir, cfg, run, 32, "");
    const char *fmt = "timeout 120 " MPIRUN3 " %s tune -c %s --db off --max-slots %d 2>&1";
    snprintf(cmd, sizeof cmd, fmt, dt_test_dtune(), cfg, 8);
    int rc = run_shell(cmd);
    if (rc != 0 || !strstr(out, "stopped: max_slots reached after 8 slots"))
        fail_msg("exit %d, expected a stop at 8 slots: %s", rc, out);
    assert_non_null(strstr(out, "dtune: mpi: rank 2 measures (replay seed 1)"));
    long one = rank_measured(out, 1), two = rank_measured(out, 2);
    if (one <= 0 || two <= 0)
        fail_msg("rank 1 measured %ld, rank 2 %ld configs; expected both to measure: %s", one, two, out);
    size_t before = assert_log_whole_without_repeats(run);
    long timed_before = confirm_timings(run);
    assert_int_equal((long)before + timed_before, one + two);
    assert_true(assert_slots_never_overlap(run) >= 2);
    char log_path[128];
    snprintf(log_path, sizeof log_path, "%s/tuning.jsonl", run);
    assert_int_equal(dt_test_count_lines(log_path, "{\"type\":\"slot\""), 1 + 8);  /* warm-up's + 8 */

    snprintf(cmd, sizeof cmd, fmt, dt_test_dtune(), cfg, 14);
    rc = run_shell(cmd);
    char resumed[256];
    snprintf(resumed, sizeof resumed, "dtune: resuming %s/tuning.jsonl: %zu measurements, 8 slots",
             run, before);
    if (rc != 0 || !strstr(out, resumed) || !strstr(out, "stopped: max_slots reached after 14 slots"))
        fail_msg("exit %d, expected '%s' and a stop at 14 slots: %s", rc, resumed, out);
    assert_int_equal((long)assert_log_whole_without_repeats(run) + confirm_timings(run) -
                         timed_before,
                     (long)before + rank_measured(out, 1) + rank_measured(out, 2));
    assert_slots_never_overlap(run);
    dt_test_remove_tree(dir);
}

/* Three ranks where two of tiny's tasks fail (a tolerance few configs
 * meet): rank 0 times nothing, so each failed task's reference was timed by
 * a worker, the one of its slot, and its failed record says which; the
 * peaks came from rank 1, as best.json's peak probe says. */
static void test_references_and_peaks_timed_on_workers(void **state)
{
    (void)state;
    skip_without_mpi(__func__);
    char dir[64], cfg[128], run[96], cmd[1024], path[160];
    write_short_config(dir, cfg, run, 16, "measure: {tolerance: 2.5e-6}\n");
    snprintf(cmd, sizeof cmd, "timeout 120 " MPIRUN3 " %s tune -c %s --db off --max-slots 4 2>&1",
             dt_test_dtune(), cfg);
    int rc = run_shell(cmd);
    if (rc != 0 || !strstr(out, "stopped: max_slots reached after 4 slots"))
        fail_msg("exit %d, expected a stop at 4 slots: %s", rc, out);
    snprintf(path, sizeof path, "%s/tuning.jsonl", run);
    int failed = dt_test_count_lines(path, "\"type\":\"failed\"");
    assert_true(failed >= 1);
    assert_int_equal(dt_test_count_lines(path, "\"timed_on\":\"mpi rank 1\"") +
                     dt_test_count_lines(path, "\"timed_on\":\"mpi rank 2\""), failed);
    snprintf(path, sizeof path, "%s/best.json", run);
    json_error_t jerr;
    json_t *best = json_load_file(path, 0, &jerr);
    assert_non_null(best);
    const char *probe = json_string_value(json_object_get(best, "peak_probe"));
    if (!probe || !strstr(probe, ", on mpi rank 1"))
        fail_msg("best.json's peak_probe is '%s', expected it timed on rank 1", probe ? probe : "");
    json_decref(best);
    dt_test_remove_tree(dir);
}

/* A CUDA run on workers without a device (this machine): each worker says
 * why it cannot measure, rank 0 ends the run naming rank 1 before anything
 * is measured, and nothing crashes. Where a device answers, the run would
 * tune for real: skipped with one line. */
static void test_cuda_worker_without_device_stops_the_run(void **state)
{
    (void)state;
    skip_without_mpi(__func__);
    dt_cuda_device_info info;
    if (dt_cuda_api_device_probe(0, &info, NULL) == 0) {
        printf("%s: a CUDA device answers here (%s); skipping\n", __func__, info.name);
        skip();
    }
    char dir[64], cmd[1024], path[128];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "timeout 120 " MPIRUN3 " %s tune --model models/tiny.yaml --target "
             "cuda --out %s/run --listen off --db off --budget 30 2>&1", dt_test_dtune(), dir);
    int rc = run_shell(cmd);
    if (rc == 0 || rc == 124 || rc >= 128 || !strstr(out, "dtune tune: mpi rank 1 could not start: ") ||
        !strstr(out, "dtune rank 1: ") || !strstr(out, "dtune rank 2: "))
        fail_msg("exit %d, expected rank 0 to end the run on rank 1's failure to start: %s", rc, out);
    snprintf(path, sizeof path, "%s/run/tuning.jsonl", dir);
    assert_true(dt_test_count_lines(path, "\"measure\"") <= 0);
    dt_test_remove_tree(dir);
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Starts `mpirun -np NP dtune tune -c cfg --max-slots MAX_SLOTS --db off`
 * with its output in log; returns mpirun's pid. */
static pid_t spawn_mpi_tune(const char *np, const char *cfg, const char *max_slots, const char *log)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execlp("mpirun", "mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl",
               "self,vader", "-np", np, dt_test_dtune(), "tune", "-c", cfg, "--max-slots", max_slots,
               "--db", "off", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Waits up to timeout_ms for pid; its exit status, or -1 when it is still running. */
static int wait_exit(pid_t pid, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 50) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        sleep_ms(50);
    }
    return -1;
}

/* The pid rank `rank` says it runs as in log, 0 until it has said it. */
static pid_t worker_pid(const char *log, int rank)
{
    char *text = dt_test_slurp(log), prefix[64];
    snprintf(prefix, sizeof prefix, "dtune rank %d: measuring for rank 0 (pid ", rank);
    const char *said = text ? strstr(text, prefix) : NULL;
    long pid = 0;
    if (said)
        sscanf(said + strlen(prefix), "%ld", &pid);
    free(text);
    return (pid_t)pid;
}

/* A replay run of tiny with 400-trial slots in dir run, no task finished
 * before thousands of trials (the runs end by a signal or a fault, not by
 * themselves), its status server on listen ("off": none); each config may
 * take 0.25 + 0.25 s, so a batch of 8 is hung after 8 + 5 s. */
static void write_config(const char *cfg, const char *run, const char *listen)
{
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(dt_test_write_file(cfg, "model: %s/models/tiny.yaml\nbackend: replay\n"
                                        "output: {dir: %s}\nserver: {listen: \"%s\"}\n"
                                        "budget: {total_seconds: 300, slot_trials: 400}\n"
                                        "tuner: {strategy: random, batch_size: 8}\n"
                                        "scheduler: {finish_after: 100000}\n"
                                        "measure: {timeout_seconds: 0.25, "
                                        "compile_timeout_seconds: 0.25}\n", cwd, run, listen), 0);
}

/* Waits until log has at least n measure records of mpirun's run; kills
 * mpirun and fails after 120 s (a limit for a run that hangs, not a speed
 * the run must reach). */
static void wait_measured(pid_t mpirun, const char *log, int n)
{
    int have = 0;
    for (int waited = 0; waited < 120000 && (have = dt_test_count_lines(log, "\"measure\"")) < n;
         waited += 20)
        sleep_ms(20);
    if (have < n) {
        kill(mpirun, SIGKILL);
        fail_msg("%s has %d measure records after 120 s, not %d", log, have, n);
    }
}

/* A run of np ranks far from its end in a new folder dir (config cfg,
 * mpirun's output log, run folder run, its tuning.jsonl path), once it has
 * measured 40 configs; returns mpirun's pid. */
static pid_t start_long_run(const char *np, char dir[64], char cfg[128], char log[128],
                            char run[128], char path[160])
{
    dt_test_tmpdir(dir, 64);
    snprintf(cfg, 128, "%s/config.yaml", dir);
    snprintf(log, 128, "%s/mpirun.log", dir);
    snprintf(run, 128, "%s/run", dir);
    write_config(cfg, run, "off");
    pid_t mpirun = spawn_mpi_tune(np, cfg, "1000", log);
    snprintf(path, 160, "%s/tuning.jsonl", run);
    wait_measured(mpirun, path, 40);
    return mpirun;
}

/* The same command as the run of np ranks in cfg that ended with `before`
 * measure records: it resumes from all of them and measures 40 more with
 * none twice; SIGTERM ends it. */
static void assert_resumes(const char *np, const char *cfg, const char *log, const char *run,
                           const char *path, size_t before)
{
    pid_t mpirun = spawn_mpi_tune(np, cfg, "1000", log);
    wait_measured(mpirun, path, (int)before + 40);
    assert_int_equal(kill(mpirun, SIGTERM), 0);
    int rc = wait_exit(mpirun, 30000);
    char *text = dt_test_slurp(log);
    if (rc == -1) {
        kill(mpirun, SIGKILL);
        fail_msg("the restart still runs 30 s after SIGTERM: %s", text);
    }
    char resumed[256];
    snprintf(resumed, sizeof resumed, "dtune: resuming %s/tuning.jsonl: %zu measurements", run, before);
    if (!strstr(text, resumed) || !strstr(text, "dtune: stopped: signal"))
        fail_msg("expected '%s' and a stop on the signal: %s", resumed, text);
    free(text);
    assert_true(assert_log_whole_without_repeats(run) >= before + 40);
}

/* SIGTERM to mpirun (a run far from its end): both ranks stop after the
 * batch in flight, every measured config is logged and rank 0 says how the
 * run ended. */
static void test_sigterm_to_mpirun_stops_both_ranks(void **state)
{
    (void)state;
    skip_without_mpi(__func__);
    char dir[64], cfg[128], log[128], run[128], path[160];
    /* mpirun forwards SIGTERM and kills the ranks odls_base_sigkill_timeout
     * seconds later (1 by default): time for the batch in flight, the log and
     * the reports on a quiet machine, not on a loaded one. What is tested is
     * how the ranks stop, so they get 10 s (mpirun itself waits that long
     * before it exits). */
    assert_int_equal(setenv("OMPI_MCA_odls_base_sigkill_timeout", "10", 1), 0);
    pid_t mpirun = start_long_run("2", dir, cfg, log, run, path);
    unsetenv("OMPI_MCA_odls_base_sigkill_timeout");     /* mpirun has read it */
    assert_int_equal(kill(mpirun, SIGTERM), 0);
    int rc = wait_exit(mpirun, 40000);
    char *text = dt_test_slurp(log);
    if (rc == -1) {
        kill(mpirun, SIGKILL);
        fail_msg("mpirun still runs 40 s after SIGTERM: %s", text);
    }
    if (!strstr(text, "dtune: stopped: signal"))
        fail_msg("rank 0 did not say it stopped on the signal (exit %d): %s", rc, text);
    const char *said = strstr(text, "dtune rank 1: measured ");
    long worker_measured = -1;
    assert_non_null(said);
    assert_int_equal(sscanf(said, "dtune rank 1: measured %ld configs", &worker_measured), 1);
    assert_int_equal((long)assert_log_whole_without_repeats(run) + confirm_timings(run),
                     worker_measured);
    free(text);
    dt_test_remove_tree(dir);
}

/* /status of a run of three ranks (the long run's config, its status server
 * on a free loopback port): once tuning, slots_in_flight lists two slots at
 * once, on two tasks, measured by workers 1 and 2, each with its seconds
 * in; the terminal line lists them too. */
static void test_status_lists_every_slot_in_flight(void **state)
{
    (void)state;
    skip_without_mpi(__func__);
    char dir[64], cfg[128], log[128], run[128];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(cfg, sizeof cfg, "%s/config.yaml", dir);
    snprintf(log, sizeof log, "%s/mpirun.log", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    write_config(cfg, run, "127.0.0.1:0");
    pid_t mpirun = spawn_mpi_tune("3", cfg, "1000", log);
    int port = 0;
    for (int waited = 0; waited < 30000 && port == 0; waited += 50) {
        char *said = dt_test_slurp(log);
        const char *at = said ? strstr(said, "(port ") : NULL;
        port = at ? atoi(at + 6) : 0;
        free(said);
        sleep_ms(50);
    }
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    bool seen = false;
    char last[4096] = "";
    for (int waited = 0; port > 0 && waited < 30000 && !seen; waited += 100) {
        dt_http_reply reply;
        dt_error err;
        if (dt_server_request(addr, "GET", "/status", 5000, &reply, &err) == 0) {
            json_t *status = json_loads(reply.body, 0, NULL);
            json_t *flight = json_object_get(status, "slots_in_flight");
            json_t *a = json_array_get(flight, 0), *b = json_array_get(flight, 1);
            const char *ta = json_string_value(json_object_get(a, "task"));
            const char *tb = json_string_value(json_object_get(b, "task"));
            seen = json_array_size(flight) == 2 && ta && tb && strcmp(ta, tb) != 0 &&
                   json_integer_value(json_object_get(a, "slot")) > 0 &&
                   json_integer_value(json_object_get(b, "slot")) > 0 &&
                   json_integer_value(json_object_get(a, "worker")) +
                   json_integer_value(json_object_get(b, "worker")) == 1 + 2 &&
                   json_number_value(json_object_get(a, "elapsed_s")) >= 0 &&
                   json_is_string(json_object_get(status, "current_task"));
            snprintf(last, sizeof last, "%s", reply.body);
            json_decref(status);
            dt_server_reply_free(&reply);
        }
        if (!seen)
            sleep_ms(100);
    }
    kill(mpirun, SIGTERM);
    int rc = wait_exit(mpirun, 30000);
    char *text = dt_test_slurp(log);
    if (rc == -1)
        kill(mpirun, SIGKILL);
    if (!seen)
        fail_msg("/status at %s never listed two slots in flight on two tasks; last: %.2000s\n"
                 "mpirun: %s", addr, last, text);
    if (!strstr(text, " in_flight="))
        fail_msg("the terminal line lists no slots in flight: %s", text);
    free(text);
    dt_test_remove_tree(dir);
}

/* A run of np ranks far from its end whose worker `rank` gets sig: mpirun
 * ends (within 40 s) with a failure status and a message containing
 * `said`, everything measured before is logged whole and once, the same
 * command then resumes with nothing lost or repeated, and no two slots of
 * the two runs overlap. what names the fault in the failure messages. */
static void assert_worker_fault_ends_job_and_resumes(const char *np, int rank, int sig,
                                                     const char *what, const char *said)
{
    char dir[64], cfg[128], log[128], run[128], path[160];
    pid_t mpirun = start_long_run(np, dir, cfg, log, run, path);
    pid_t worker = worker_pid(log, rank);
    assert_true(worker > 0);
    assert_int_equal(kill(worker, sig), 0);
    int rc = wait_exit(mpirun, 40000);
    char *text = dt_test_slurp(log);
    if (rc == -1) {
        kill(mpirun, SIGKILL);
        kill(worker, SIGKILL);
        fail_msg("mpirun still runs 40 s after its worker %s: %s", what, text);
    }
    if (rc == 0 || !strstr(text, said))
        fail_msg("exit %d after the worker %s, expected '%s': %s", rc, what, said, text);
    free(text);
    size_t before = assert_log_whole_without_repeats(run);
    assert_true(before >= 40);
    assert_slots_never_overlap(run);
    assert_resumes(np, cfg, log, run, path, before);
    assert_slots_never_overlap(run);
    dt_test_remove_tree(dir);
}

/* A worker that stops answering (SIGSTOP) ends the job within its
 * measurement limit with a message, everything measured before it logged;
 * the same command then resumes with nothing measured twice. The limit is
 * the request's (a batch's, or a confirmation's of two configs), so the
 * seconds the message gives depend on which request the stop caught. */
static void test_hung_worker_ends_the_job_and_the_run_resumes(void **state)
{
    (void)state;
    skip_without_mpi(__func__);
    assert_worker_fault_ends_job_and_resumes("2", 1, SIGSTOP, "stopped",
                                             "mpi rank 1 did not answer within ");
}

/* A worker of three ranks killed (SIGKILL) while its slot runs: mpirun ends
 * the job saying which rank died, everything measured before is logged
 * whole and once, and the same command resumes with nothing lost or
 * repeated. */
static void test_killed_worker_ends_the_job_and_the_run_resumes(void **state)
{
    (void)state;
    skip_without_mpi(__func__);
    assert_worker_fault_ends_job_and_resumes("3", 2, SIGKILL, "was killed", "signal 9");
}

/* A worker whose PROBED answers arrive malformed (one byte short of their
 * header's length; src/mpi_run.c's fault hook) when a run resumes: rank 0
 * refuses the message naming the rank, exits 2, the log keeps exactly what
 * it held, and the same command without the fault resumes from it. */
static void test_malformed_answer_ends_the_job_and_the_run_resumes(void **state)
{
    (void)state;
    skip_without_mpi(__func__);
    char dir[64], cfg[128], log[128], run[128], path[160];
    pid_t mpirun = start_long_run("2", dir, cfg, log, run, path);
    assert_int_equal(kill(mpirun, SIGTERM), 0);
    if (wait_exit(mpirun, 40000) == -1) {
        kill(mpirun, SIGKILL);
        fail_msg("mpirun still runs 40 s after SIGTERM");
    }
    size_t before = assert_log_whole_without_repeats(run);
    assert_int_equal(setenv("DTUNE_MPI_WORKER_FAULT", "probed", 1), 0);
    mpirun = spawn_mpi_tune("2", cfg, "1000", log);
    unsetenv("DTUNE_MPI_WORKER_FAULT");
    int rc = wait_exit(mpirun, 60000);
    char *text = dt_test_slurp(log);
    if (rc == -1) {
        kill(mpirun, SIGKILL);
        fail_msg("mpirun still runs 60 s after its start with a malformed answer: %s", text);
    }
    if (rc != 2 || !strstr(text, "mpi rank 1 sent a malformed message: mpi message: PROBED"))
        fail_msg("exit %d, expected 2 and rank 1's malformed PROBED named: %s", rc, text);
    free(text);
    assert_int_equal(assert_log_whole_without_repeats(run), before);
    assert_resumes("2", cfg, log, run, path, before);
    dt_test_remove_tree(dir);
}

int main(void)
{
    /* Open MPI keeps memory in components it unloads at MPI_Finalize, before
     * LeakSanitizer looks: their frames cannot be named, so not suppressed.
     * The ranks run without leak detection (under AddressSanitizer, every
     * other check stays on; mpi_wire's own test checks its leaks). */
    const char *asan = getenv("ASAN_OPTIONS");
    char options[1024];
    snprintf(options, sizeof options, "%s%sdetect_leaks=0", asan ? asan : "", asan ? ":" : "");
    setenv("ASAN_OPTIONS", options, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_ranks_equal_one_process),
        cmocka_unit_test(test_three_ranks_keep_two_slots_in_flight),
        cmocka_unit_test(test_references_and_peaks_timed_on_workers),
        cmocka_unit_test(test_cuda_worker_without_device_stops_the_run),
        cmocka_unit_test(test_sigterm_to_mpirun_stops_both_ranks),
        cmocka_unit_test(test_status_lists_every_slot_in_flight),
        cmocka_unit_test(test_hung_worker_ends_the_job_and_the_run_resumes),
        cmocka_unit_test(test_killed_worker_ends_the_job_and_the_run_resumes),
        cmocka_unit_test(test_malformed_answer_ends_the_job_and_the_run_resumes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
