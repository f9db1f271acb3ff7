/* cmd_tune.c — `dtune tune`: the config, command-line overrides, the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/cli.h"
#include "dtune/config.h"
#include "daemon.h"
#include "mpi_run.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dtune tune [-c config.yaml] [--model F] [--target T] [--budget S]\n"
            "                  [--target-latency MS] [--policy P] [--strategy S] [--out DIR]\n"
            "                  [--seed N] [--backend B] [--listen HOST:PORT|off] [--db PATH|off]\n"
            "Tunes every task of the model until the model latency reaches the target,\n"
            "the budget (seconds) is spent, every task is finished, or SIGINT/SIGTERM.\n"
            "Started again on the same --out directory, it resumes from tuning.jsonl.\n"
            "Reports: OUT/latency.csv, OUT/latency.svg, OUT/best.json; `dtune report OUT`.\n");
}

/* Flag -> config key. */
static const struct { const char *flag, *key; } overrides[] = {
    { "--model", "model" },
    { "--target", "target" },
    { "--budget", "budget.total_seconds" },
    { "--target-latency", "budget.target_latency_ms" },
    { "--policy", "scheduler.policy" },
    { "--strategy", "tuner.strategy" },
    { "--out", "output.dir" },
    { "--seed", "seed" },
    { "--backend", "backend" },
    { "--listen", "server.listen" },
    { "--slot-seconds", "budget.slot_seconds" },
    { "--slot-trials", "budget.slot_trials" },
    { "--max-slots", "budget.max_slots" },
    { "--finish-after", "scheduler.finish_after" },
    { "--db", "db.path" },
};

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
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0)
            path = argv[i + 1];
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
    else
        printf("dtune: stopped: %s in the warm-up, %.1f s; model latency not known yet (a task has "
               "no measurement); run again on the same --out to resume\n",
               dt_stop_reason_name(res->reason), res->elapsed);
    if (res->reason == DT_STOP_TARGET)
        printf("dtune: target latency %.4f ms reached\n", cfg->budget.target_latency_ms);
    printf("dtune: reports in %s (report.html, latency.csv, latency.svg, best.json)\n", cfg->output_dir);
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
