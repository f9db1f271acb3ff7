/* cmd_export.c — `dtune export RUN_DIR [-o DIR]`: a run's tuned kernels as
 * a C library (export.h) that builds and checks itself with `make test`.
 *
 * A task without a tuned config (all its configs failed, or the run ended
 * before it was measured) stops the export with exit 2 and a message naming
 * it, unless --allow-untuned asks for its reference loops in its place.
 */
#include "dtune/cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/export.h"

static void usage(FILE *to)
{
    fputs("usage: dtune export RUN_DIR [-o DIR] [-m MODEL.yaml] [--threads N] [--allow-untuned]\n"
          "\n"
          "Writes the best kernel of every task of a run (RUN_DIR/best.json) as a C\n"
          "library that builds without dtune: one source per task under kernels/, a\n"
          "header with each kernel's entry points (NCHW fp32; weights packed by a\n"
          "_prepare function), a Makefile and a test program that checks every kernel\n"
          "against plain reference loops and times it as dtune did. Build and check:\n"
          "`make -C DIR test`. For a CUDA run: the kernels' sources, launch geometry\n"
          "and a loader (driver API and NVRTC through dlopen).\n"
          "\n"
          "  -o, --output DIR    where to write (default RUN_DIR/export)\n"
          "  -m, --model FILE    the model the run tuned (default: the path the run's\n"
          "                      tuning.jsonl records, relative to where it ran)\n"
          "  --threads N         CPU kernel threads: the run's measure.threads (default 1)\n"
          "  --allow-untuned     export the reference loops for a task without a tuned\n"
          "                      config (failed, or not measured yet) instead of stopping\n"
          "  -h, --help          show this help\n", to);
}

typedef struct export_args {
    const char *run_dir;
    const char *out_dir;       /* NULL: RUN_DIR/export */
    const char *model;         /* NULL: the run's */
    int threads;
    bool allow_untuned;
} export_args;

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "dtune export: %s '%s'\n", what, arg);
    usage(stderr);
    return 2;
}

/* Returns the exit status: 0 help shown, 2 usage error, -1 go on with a. */
static int parse_args(int argc, char **argv, export_args *a)
{
    memset(a, 0, sizeof *a);
    a->threads = dt_export_params_default().measure.threads;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(arg, "--allow-untuned") == 0) {
            a->allow_untuned = true;
        } else if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) {
            if (!has_value)
                return usage_error("missing value after", arg);
            a->out_dir = argv[++i];
        } else if (strcmp(arg, "-m") == 0 || strcmp(arg, "--model") == 0) {
            if (!has_value)
                return usage_error("missing value after", arg);
            a->model = argv[++i];
        } else if (strcmp(arg, "--threads") == 0) {
            char *end;
            long n = has_value ? strtol(argv[i + 1], &end, 10) : 0;
            if (!has_value || *end || end == argv[i + 1] || n < 1 || n > 1024)
                return usage_error("--threads takes a count from 1 to 1024, not",
                                   has_value ? argv[i + 1] : "");
            a->threads = (int)n;
            i++;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return usage_error("unknown option", arg);
        } else if (a->run_dir) {
            return usage_error("expects one RUN_DIR, not also", arg);
        } else {
            a->run_dir = arg;
        }
    }
    if (!a->run_dir) {
        fputs("dtune export: RUN_DIR is missing\n", stderr);
        usage(stderr);
        return 2;
    }
    return -1;
}

/* Names every untuned task on stderr; returns how many there are. */
static int report_untuned(const dt_export_choice *choices, int n, bool allowed)
{
    int untuned = 0;
    for (int i = 0; i < n; i++)
        if (!choices[i].tuned) {
            fprintf(stderr, "dtune export: task %s has no tuned config (%s)%s\n",
                    choices[i].task.name, choices[i].why,
                    allowed ? "; exporting its reference loops" : "");
            untuned++;
        }
    if (untuned && !allowed)
        fprintf(stderr, "dtune export: nothing written; --allow-untuned exports the reference "
                        "loops for %s\n", untuned == 1 ? "it" : "them");
    return untuned;
}

int dt_cmd_export(int argc, char **argv)
{
    export_args a;
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    dt_export_params params = dt_export_params_default();
    params.measure.threads = a.threads;
    params.source = a.run_dir;
    char model[DT_NAME_MAX], out_dir[DT_PATH_MAX];
    dt_export_choice *choices = NULL;
    int n = 0;
    dt_error err;
    int rc = dt_export_read_run(a.run_dir, a.model, &params, model, sizeof model, &choices, &n, &err);
    if (rc) {
        fprintf(stderr, "dtune export: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    int untuned = report_untuned(choices, n, a.allow_untuned);
    if (untuned && !a.allow_untuned) {
        free(choices);
        return 2;
    }
    if ((size_t)snprintf(out_dir, sizeof out_dir, "%s", a.out_dir ? a.out_dir : a.run_dir) >=
            sizeof out_dir - 8)
        rc = dt_error_set(&err, DT_EINVAL, "%s: path too long", out_dir);
    else if (!a.out_dir)
        strcat(out_dir, "/export");
    rc = rc ? rc : dt_export_write(&params, model, choices, n, out_dir, &err);
    free(choices);
    if (rc) {
        fprintf(stderr, "dtune export: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    printf("dtune: exported %d kernels of %s (%d tuned, %d reference loops) to %s\n", n, model,
           n - untuned, untuned, out_dir);
    fputs("dtune: ", stdout);
    printf(dt_export_build_hint(params.target), out_dir);
    fputc('\n', stdout);
    return 0;
}
