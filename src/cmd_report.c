/* cmd_report.c — `dtune report RUN_DIR`: the per-task summary of a run.
 *
 * Reads RUN_DIR/best.json (rewritten by the daemon after every slot, so this
 * works during a run as well as after it) and prints the model latency now
 * against the start, then one row per task: kind, shape, GFLOP of one run,
 * best GFLOPS, that as a share of the target's peak, the task's share of the
 * model latency (count x best latency / model latency), slots and trials.
 */
#include "dtune/cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dtune/report.h"

static void usage(FILE *to)
{
    fputs("usage: dtune report RUN_DIR\n"
          "\n"
          "Prints a run's model latency (now and at the start) and, per task: kind,\n"
          "shape, GFLOP, best GFLOPS, share of the target's peak, share of the model\n"
          "latency, slots and trials. Reads RUN_DIR/best.json, which `dtune tune`\n"
          "rewrites after every slot; latency.csv and latency.svg lie beside it.\n"
          "\n"
          "  -h, --help   show this help\n", to);
}

/* Returns the exit status: 0 help shown, 2 usage error, -1 go on with *run_dir. */
static int parse_args(int argc, char **argv, const char **run_dir)
{
    return dt_cli_one_path(argc, argv, "report", usage, run_dir);
}

static void print_header(const dt_run_state *rs)
{
    char elapsed[32], budget[32], reached[32];
    dt_report_format_duration(rs->elapsed, elapsed, sizeof elapsed);
    dt_report_format_duration(rs->budget, budget, sizeof budget);
    dt_report_format_duration(rs->reached_at, reached, sizeof reached);
    printf("run %s: %s on %s, policy %s, strategy %s, phase %s\n", rs->run_dir, rs->model,
           rs->target, rs->policy, rs->strategy, rs->phase);
    printf("tuning time %s of %s, slot %d\n", elapsed, budget, rs->slot);
    printf("model latency %.4f ms now, %.4f ms at start", rs->latency_ms, rs->start_latency_ms);
    double speedup = dt_run_state_speedup(rs);
    if (isfinite(speedup))
        printf(" (%.2fx faster)", speedup);
    if (rs->target_latency_ms > 0)
        printf("; target %.4f ms, %s%s", rs->target_latency_ms,
               rs->reached_at >= 0 ? "reached after " : "not reached",
               rs->reached_at >= 0 ? reached : "");
    printf("\n\n");
}

static void print_tasks(const dt_run_state *rs)
{
    printf("%-16s %-16s %-34s %8s %11s %6s %8s %6s %7s\n", "task", "kind", "shape", "GFLOP",
           "best GFLOPS", "%peak", "%latency", "slots", "trials");
    for (int k = 0; k < rs->ntasks; k++) {
        const dt_task_state *t = &rs->tasks[k];
        double peak = t->peak_gflops > 0 ? 100 * t->best_gflops / t->peak_gflops : 0;
        double share = rs->latency_ms > 0 ? 100 * t->count * t->best_latency_ms / rs->latency_ms
                                          : 0;
        printf("%-16s %-16s %-34s %8.4f %11.1f %5.1f%% %7.1f%% %6d %7d%s\n", t->name, t->kind,
               t->shape, t->gflop, t->best_gflops, peak, share, t->slots, t->trials,
               t->failed[0] ? "  FAILED" : t->finished ? "  finished" : "");
    }
    for (int k = 0; k < rs->ntasks; k++)
        if (rs->tasks[k].failed[0])
            printf("FAILED %s: %s; counted at its reference implementation's %.4f ms\n",
                   rs->tasks[k].name, rs->tasks[k].failed, rs->tasks[k].best_latency_ms);
}

int dt_cmd_report(int argc, char **argv)
{
    const char *run_dir = NULL;
    int status = parse_args(argc, argv, &run_dir);
    if (status >= 0)
        return status;
    struct stat st;
    if (stat(run_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "dtune report: '%s' is not a directory (give the run's output dir)\n",
                run_dir);
        return 2;
    }
    dt_run_state rs;
    dt_error err;
    int rc = dt_report_load_best(run_dir, &rs, &err);
    if (rc == DT_ENOTFOUND) {
        fprintf(stderr, "dtune report: %s has no best.json: not a dtune run directory, or the "
                        "run has not finished its first slot yet\n", run_dir);
        return 2;
    }
    if (rc) {
        fprintf(stderr, "dtune report: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    print_header(&rs);
    print_tasks(&rs);
    dt_run_state_destroy(&rs);
    if (fflush(stdout) != 0) {
        perror("dtune report: standard output");
        return 1;
    }
    return 0;
}
