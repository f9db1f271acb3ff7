/* cmd_report.c — `dtune report RUN_DIR`: the per-task summary of a run.
 *
 * Reads RUN_DIR/best.json (rewritten by the daemon after every slot, so this
 * works during a run as well as after it) and prints the model latency now
 * against the start, then one row per task: kind, shape, GFLOP of one run,
 * best GFLOPS, that as a share of the target's peak, the task's share of the
 * model latency (count x best latency / model latency), slots and trials.
 * With --html it writes the run's report page instead (dt_report_html, from
 * best.json and tuning.jsonl) to RUN_DIR/report.html or the -o file; more
 * RUN_DIRs after the first (runs of the same model) add a "runs compared"
 * section: compare.h's tables and chart of every run given.
 */
#include "dtune/cli.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtune/compare.h"
#include "dtune/report.h"

static void usage(FILE *to)
{
    fputs("usage: dtune report RUN_DIR [--html [-o FILE] [RUN_DIR...]]\n"
          "\n"
          "Prints a run's model latency (now and at the start) and, per task: kind,\n"
          "shape, GFLOP, best GFLOPS, the task's bound and the best's share of it\n"
          "(bound = max(useful FLOPs / peak, bytes read / read stream, bytes moved /\n"
          "the faster stream of the memory level that holds the working set)), that\n"
          "level, share of the model\n"
          "latency, slots and trials. Reads RUN_DIR/best.json, which `dtune tune`\n"
          "rewrites after every slot; latency.csv and latency.svg lie beside it.\n"
          "\n"
          "  --html        write the run's report page instead (self-contained HTML:\n"
          "                latency over time, allocation timeline, tasks, why each\n"
          "                slot went where it went), from best.json and tuning.jsonl;\n"
          "                works for a finished run and a running one; more RUN_DIRs\n"
          "                (runs of the same model) add the runs compared: the\n"
          "                tables and the chart of `dtune compare`\n"
          "  -o, --output FILE  where --html writes (default RUN_DIR/report.html;\n"
          "                '-' for standard output)\n"
          "  -h, --help    show this help\n", to);
}

typedef struct report_args {
    const char *run_dir;
    const char *others[DT_COMPARE_MAX_RUNS - 1];  /* --html: runs compared with run_dir */
    int nothers;
    bool html;
    const char *output;        /* NULL: RUN_DIR/report.html */
} report_args;

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "dtune report: %s '%s'\n", what, arg);
    usage(stderr);
    return 2;
}

/* Returns the exit status: 0 help shown, 2 usage error, -1 go on with a. */
static int parse_args(int argc, char **argv, report_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(arg, "--html") == 0) {
            a->html = true;
        } else if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) {
            if (++i == argc)
                return usage_error("missing value after", arg);
            a->output = argv[i];
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return usage_error("unknown option", arg);
        } else if (a->run_dir) {
            if (a->nothers == DT_COMPARE_MAX_RUNS - 1)
                return usage_error("too many RUN_DIRs to compare at", arg);
            a->others[a->nothers++] = arg;
        } else {
            a->run_dir = arg;
        }
    }
    if (!a->run_dir) {
        fputs("dtune report: RUN_DIR is missing\n", stderr);
        usage(stderr);
        return 2;
    }
    if (a->output && !a->html)
        return usage_error("-o is for --html; without it the report goes to standard output, not",
                           a->output);
    if (a->nothers > 0 && !a->html)
        return usage_error("several RUN_DIRs are compared with --html only; not also",
                           a->others[0]);
    return -1;
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
    printf("%-16s %-16s %-34s %8s %11s %10s %6s %-5s %8s %6s %7s\n", "task", "kind", "shape",
           "GFLOP", "best GFLOPS", "bound ms", "%bound", "level", "%latency", "slots", "trials");
    bool from_kernel = false;
    for (int k = 0; k < rs->ntasks; k++) {
        const dt_task_state *t = &rs->tasks[k];
        double share = rs->latency_ms > 0 ? 100 * t->count * t->best_latency_ms / rs->latency_ms
                                          : 0;
        from_kernel |= t->bound_from_kernel;
        printf("%-16s %-16s %-34s %8.4f %11.1f %10.4f %5.1f%%%s%-5s %7.1f%% %6d %7d%s\n", t->name,
               t->kind, t->shape, t->gflop, t->best_gflops, t->bound_ms,
               100 * dt_task_state_bound_share(t), t->bound_from_kernel ? "* " : "  ",
               t->bound_level[0] ? t->bound_level : "-", share, t->slots, t->trials,
               t->failed[0] ? "  FAILED" : t->finished ? "  finished" : "");
    }
    printf("\nbound: max(useful FLOPs / peak, bytes moved / bandwidth of the level that holds the "
           "working set); peak from %s\n", rs->peak_probe[0] ? rs->peak_probe : "no probe");
    if (from_kernel)
        printf("* a kernel beat the probes' bound, so the bound is its own latency: the probes read low\n");
    for (int k = 0; k < rs->ntasks; k++)
        if (rs->tasks[k].failed[0])
            printf("FAILED %s: %s; counted at its reference implementation's %.4f ms\n",
                   rs->tasks[k].name, rs->tasks[k].failed, rs->tasks[k].best_latency_ms);
}

/* The "runs compared" section of the page: every RUN_DIR given, run_dir
 * first; NULL (and *rc 0) without others. */
static char *compared_runs(const report_args *a, int *rc, dt_error *err)
{
    *rc = 0;
    if (a->nothers == 0)
        return NULL;
    const char *dirs[DT_COMPARE_MAX_RUNS] = { a->run_dir };
    memcpy(dirs + 1, a->others, (size_t)a->nothers * sizeof *dirs);
    dt_compare *c;
    if ((*rc = dt_compare_open(dirs, a->nothers + 1, &c, err)) != 0)
        return NULL;
    char *html = NULL, scratch[DT_PATH_MAX + 32];
    size_t len = 0;
    FILE *mem = open_memstream(&html, &len);
    if (!mem) {
        *rc = dt_error_set(err, DT_ENOMEM, "out of memory");
    } else {
        snprintf(scratch, sizeof scratch, "%s/.compare-%d.svg", a->run_dir, (int)getpid());
        fputs("<h2>Runs compared</h2>\n", mem);
        *rc = dt_compare_html(mem, c, scratch, err);
        if (fclose(mem) != 0 && *rc == 0)
            *rc = dt_error_set(err, DT_ENOMEM, "out of memory");
    }
    dt_compare_free(c);
    if (*rc) {
        free(html);
        html = NULL;
    }
    return html;
}

/* Writes the HTML report of rs, with appendix, to file ("-": standard
 * output; NULL: RUN_DIR/report.html, replaced atomically). */
static int write_html(const dt_run_state *rs, const char *appendix, const char *file)
{
    dt_error err;
    dt_error_clear(&err);
    char *page = NULL;
    size_t len = 0;
    FILE *f = !file ? open_memstream(&page, &len)
              : strcmp(file, "-") == 0 ? stdout : fopen(file, "w");
    int rc = f ? dt_report_html(f, rs, false, appendix) : DT_EIO;
    if (f && f != stdout && fclose(f) != 0)
        rc = DT_EIO;
    else if (f == stdout && fflush(stdout) != 0)
        rc = DT_EIO;
    if (rc)
        dt_error_set(&err, rc, "%s: %s", file ? file : "report.html",
                     file ? strerror(errno) : "out of memory");
    else if (!file)
        rc = dt_report_replace(rs, "report.html", page, len, &err);
    free(page);
    if (rc) {
        fprintf(stderr, "dtune report: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    if (!file)
        fprintf(stderr, "dtune report: wrote %s/report.html\n", rs->run_dir);
    else if (strcmp(file, "-") != 0)
        fprintf(stderr, "dtune report: wrote %s\n", file);
    return 0;
}

int dt_cmd_report(int argc, char **argv)
{
    report_args args;
    int status = parse_args(argc, argv, &args);
    if (status >= 0)
        return status;
    const char *run_dir = args.run_dir;
    struct stat st;
    if (stat(run_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "dtune report: '%s' is not a directory (give the run's output dir)\n",
                run_dir);
        return 2;
    }
    dt_run_state rs;
    dt_error err;
    int rc = args.html ? dt_report_load_run(run_dir, &rs, &err)
                       : dt_report_load_best(run_dir, &rs, &err);
    if (rc == DT_ENOTFOUND) {
        fprintf(stderr, "dtune report: %s has no best.json: not a dtune run directory, or the "
                        "run has not finished its first slot yet\n", run_dir);
        return 2;
    }
    if (rc) {
        fprintf(stderr, "dtune report: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    if (args.html) {
        snprintf(rs.run_dir, sizeof rs.run_dir, "%s", run_dir);
        char *appendix = compared_runs(&args, &rc, &err);
        status = rc ? dt_error_exit_status(rc) : write_html(&rs, appendix, args.output);
        if (rc)
            fprintf(stderr, "dtune report: %s\n", err.msg);
        free(appendix);
        dt_run_state_destroy(&rs);
        if (status)
            return status;
        return fflush(stdout) == 0 ? 0 : 1;
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
