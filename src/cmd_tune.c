/* cmd_tune.c — `dtune tune`: the config, command-line overrides, the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtune/cli.h"
#include "dtune/config.h"
#include "dtune/util.h"
#include "daemon.h"
#include "mpi_run.h"

/* Flag -> config key, and what the usage line shows as its value. */
static const struct { const char *flag, *key, *value; } overrides[] = {
    { "--model", "model", "F" },
    { "--target", "target", "T" },
    { "--budget", "budget.total_seconds", "S" },
    { "--target-latency", "budget.target_latency_ms", "MS" },
    { "--policy", "scheduler.policy", "P" },
    { "--strategy", "tuner.strategy", "S" },
    { "--out", "output.dir", "DIR" },
    { "--seed", "seed", "N" },
    { "--backend", "backend", "B" },
    { "--listen", "server.listen", "HOST:PORT|off" },
    { "--slot-seconds", "budget.slot_seconds", "S" },
    { "--slot-trials", "budget.slot_trials", "N" },
    { "--max-slots", "budget.max_slots", "N" },
    { "--finish-after", "scheduler.finish_after", "N" },
    { "--retime", "budget.retime_top", "N" },
    { "--confirm", "measure.confirm_rounds", "N" },
    { "--db", "db.path", "PATH|off" },
};

/* The options wrapped under "usage: dtune tune", one per table row. */
static void usage(FILE *f)
{
    const char *lead = "usage: dtune tune ", *indent = "                  ";
    int col = fprintf(f, "%s[-c config.yaml]", lead);
    for (size_t i = 0; i < sizeof overrides / sizeof overrides[0]; i++) {
        int w = (int)(strlen(overrides[i].flag) + strlen(overrides[i].value)) + 4;
        const char *sep = " ";
        if (col + w > 79) {
            col = fprintf(f, "\n%s", indent) - 1;
            sep = "";
        }
        col += fprintf(f, "%s[%s %s]", sep, overrides[i].flag, overrides[i].value);
    }
    fprintf(f, "\n"
            "Tunes every task of the model until the model latency reaches the target,\n"
            "the budget (seconds) is spent, every task is finished (scheduler.finish_after\n"
            "trials without improvement each), or SIGINT/SIGTERM/SIGHUP. Each option overrides\n"
            "one key of the config (dtune check --help lists the keys).\n"
            "Started again on the same --out directory, it resumes from tuning.jsonl.\n"
            "Reports: OUT/latency.csv, OUT/latency.svg, OUT/best.json; `dtune report OUT`.\n");
}

static const char *override_key(const char *flag)
{
    for (size_t i = 0; i < sizeof overrides / sizeof overrides[0]; i++)
        if (strcmp(flag, overrides[i].flag) == 0)
            return overrides[i].key;
    return NULL;
}

static int load_config(int argc, char **argv, dt_config *cfg)
{
    const char *path = "config.yaml";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") && strcmp(argv[i], "--config"))
            continue;
        if (i + 1 >= argc) {
            fprintf(stderr, "dtune tune: missing value after '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
        path = argv[++i];
    }
    dt_error err;
    int rc = dt_config_load_report(path, cfg, false, stderr, &err);
    if (rc)
        return dt_error_exit_status(rc);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            i++;
            continue;
        }
        const char *key = override_key(argv[i]);
        if (!key || i + 1 >= argc) {
            fprintf(stderr, "dtune tune: %s '%s'\n", key ? "missing value after" : "unknown option", argv[i]);
            usage(stderr);
            return 2;
        }
        if ((rc = dt_config_set(cfg, key, argv[++i], &err))) {
            fprintf(stderr, "dtune tune: %s: %s\n", argv[i - 1], err.msg);
            return 2;
        }
    }
    if ((rc = dt_config_validate(cfg, &err))) {
        fprintf(stderr, "dtune tune: %s\n", err.msg);
        return 2;
    }
    return 0;
}

/* The reports the run wrote into run_dir, named in one line: only the
 * files that are there. */
static void say_reports(const char *run_dir)
{
    static const char *const reports[] = { "report.html", "latency.csv", "latency.svg", "best.json" };
    char list[128] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof reports / sizeof reports[0]; i++) {
        char path[DT_PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/%s", run_dir, reports[i]);
        if (access(path, F_OK) == 0 && used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", reports[i]);
    }
    if (used)
        printf("dtune: reports in %s (%s)\n", run_dir, list);
    else
        printf("dtune: no reports written in %s\n", run_dir);
}

/* Prints how the run ended (or its error); returns the exit status. */
static int say_result(const dt_config *cfg, const dt_daemon_result *res, int rc, const dt_error *err)
{
    if (rc) {
        fprintf(stderr, "dtune tune: %s\n", err->msg);
        return dt_error_exit_status(rc);
    }
    if (isfinite(res->latency_ms))
        printf("dtune: stopped: %s after %d slots, %.1f s; model latency %.4f ms (start %.4f ms, %.2fx)\n",
               dt_stop_reason_name(res->reason), res->slots, res->elapsed, res->latency_ms,
               res->start_latency_ms, res->latency_ms > 0 ? res->start_latency_ms / res->latency_ms : 0.0);
    else {
        printf("dtune: stopped: %s in the warm-up, %.1f s; model latency not known yet (a task has "
               "no measurement); run again on the same --out to resume\n",
               dt_stop_reason_name(res->reason), res->elapsed);
        printf("dtune: without a measurement: %s\n", res->unmeasured);
    }
    if (res->reason == DT_STOP_TARGET)
        printf("dtune: target latency %.4f ms reached\n", cfg->budget.target_latency_ms);
    say_reports(cfg->output_dir);
    return 0;
}

/* The ranks of the MPI job that started this process (Open MPI's mpirun,
 * or a PMI launcher such as Slurm's srun), 0 when none did: then the run is
 * today's one-process run and MPI is never initialised. */
static int mpi_ranks(void)
{
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    if (!size)
        size = getenv("PMI_SIZE");
    return size ? atoi(size) : 0;
}

int dt_cmd_tune(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    }
    dt_config cfg;
    int status = load_config(argc, argv, &cfg);
    if (status)
        return status;
    dt_daemon_result res;
    dt_error err;
    dt_error_clear(&err);
    int rc, ranks = mpi_ranks();
#ifdef DT_HAVE_MPI
    if (ranks > 0) {
        bool worker = false;
        rc = dt_mpi_tune(&cfg, &res, &worker, &err);
        int exit_status = worker ? dt_error_exit_status(rc) : say_result(&cfg, &res, rc, &err);
        dt_mpi_finish();
        return exit_status;
    }
#else
    if (ranks > 1) {
        fprintf(stderr, "dtune tune: started as one of %d MPI ranks, but this dtune was built "
                "without MPI; install libopenmpi-dev and rebuild\n", ranks);
        return 1;
    }
#endif
    rc = dt_daemon_run(&cfg, &res, &err);
    return say_result(&cfg, &res, rc, &err);
}
