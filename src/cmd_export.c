/* cmd_export.c — `dtune export RUN_DIR [-o DIR]` and `dtune export --db -m
 * MODEL.yaml [-o DIR]`: a model's tuned kernels as a C library (export.h)
 * that builds and checks itself with `make test`, from a run's best.json or
 * from the best configs the tuning database holds for this machine. Both
 * give a list of (task, config) choices to the one writer.
 *
 * A task without a tuned config (all its configs failed, the run ended
 * before it was measured, the database has no record of it) stops the
 * export with exit 2 and a message naming it, unless --allow-untuned asks
 * for its reference loops in its place.
 */
#include "dtune/cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtune/db.h"
#include "dtune/export.h"
#include "dtune/machine.h"
#include "dtune/measure.h"
#include "dtune/netexport.h"
#include "dtune/target.h"
#include "dtune/util.h"

static void usage(FILE *to)
{
    char targets[128];
    dt_names_join_sep(dt_target_at, ", ", " or ", targets, sizeof targets);
    fprintf(to, "usage: dtune export RUN_DIR [-o DIR] [-m MODEL.yaml] [--threads N] [--allow-untuned]\n"
          "       dtune export --db[=PATH] -m MODEL.yaml [-c CONFIG] [--target T] [-o DIR]\n"
          "                    [--threads N] [--allow-untuned]\n"
          "       dtune export RUN_DIR --network [-m MODEL.onnx] [-o DIR] ...\n"
          "\n"
          "Writes the best kernel of every task of a run (RUN_DIR/best.json), or with\n"
          "--db the best config the tuning database holds for each task of MODEL.yaml\n"
          "on this machine (same target and knob space), as a C library that builds\n"
          "without dtune: one source per task under kernels/, a header with each\n"
          "kernel's entry points (NCHW fp32; weights packed by a _prepare function),\n"
          "a Makefile and a test program that checks every kernel against plain\n"
          "reference loops and times it as dtune did. Build and check: `make -C DIR\n"
          "test`. For CUDA: the kernels' sources, launch geometry and a loader\n"
          "(driver API and NVRTC through dlopen).\n"
          "\n"
          "  -o, --output DIR    where to write (default RUN_DIR/export; with --db\n"
          "                      NAME_kernels, NAME the model's name)\n"
          "  -m, --model FILE    the model the run tuned (default: the path the run's\n"
          "                      tuning.jsonl records, relative to where it ran)\n"
          "  --db[=PATH]         from the tuning database: PATH, else db.path of -c\n"
          "                      CONFIG, else $" DT_DB_ENV ", else the per-user default\n"
          "  -c, --config FILE   with --db: take db.path from this config\n"
          "  --target T          with --db: %s (default %s)\n"
          "  --threads N         CPU kernel threads (default: those the run timed them at;\n"
          "                      with --db, 1); a run's export refuses another count\n"
          "  --allow-untuned     export the reference loops for a task without a tuned\n"
          "                      config (failed, or not measured yet) instead of stopping\n"
          "  --network           the whole network (the run's ONNX model, or -m MODEL.onnx)\n"
          "                      as a library around the kernels (docs/network-export.md)\n"
          "  -h, --help          show this help\n", targets, dt_target_name(DT_TARGET_DEFAULT));
}

typedef struct export_args {
    const char *run_dir;
    const char *out_dir;       /* NULL: RUN_DIR/export, or NAME_kernels */
    const char *model;         /* NULL: the run's */
    int threads;
    bool allow_untuned;
    bool network;              /* --network: the whole network of the model */
    bool db;                   /* --db: from the tuning database */
    const char *db_path;       /* --db=PATH; NULL: the configured one */
    const char *config;        /* -c: db.path from here */
    const char *target;        /* --target; NULL: the default */
} export_args;

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "dtune export: %s '%s'\n", what, arg);
    usage(stderr);
    return 2;
}

/* The two forms' own arguments: RUN_DIR, or --db with -m and no RUN_DIR. */
static int check_args(const export_args *a)
{
    const char *problem = NULL;
    if (a->db && a->run_dir)
        problem = "--db exports from the database, not from a RUN_DIR";
    else if (a->db && !a->model)
        problem = "--db needs the model: -m MODEL.yaml";
    else if (!a->db && (a->config || a->target))
        problem = "-c and --target go with --db";
    else if (!a->db && !a->run_dir)
        problem = "RUN_DIR is missing";
    if (!problem)
        return -1;
    fprintf(stderr, "dtune export: %s\n", problem);
    usage(stderr);
    return 2;
}

/* Returns the exit status: 0 help shown, 2 usage error, -1 go on with a. */
static int parse_args(int argc, char **argv, export_args *a)
{
    memset(a, 0, sizeof *a);
    a->threads = 0;             /* the run's; with --db, the default */
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(arg, "--allow-untuned") == 0) {
            a->allow_untuned = true;
        } else if (strcmp(arg, "--network") == 0) {
            a->network = true;
        } else if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) {
            if (!has_value)
                return usage_error("missing value after", arg);
            a->out_dir = argv[++i];
        } else if (strcmp(arg, "-m") == 0 || strcmp(arg, "--model") == 0) {
            if (!has_value)
                return usage_error("missing value after", arg);
            a->model = argv[++i];
        } else if (strcmp(arg, "--db") == 0 || strncmp(arg, "--db=", 5) == 0) {
            a->db = true;
            a->db_path = arg[4] == '=' ? arg + 5 : NULL;
            if (a->db_path && !a->db_path[0])
                return usage_error("--db= names no file:", arg);
        } else if (strcmp(arg, "-c") == 0 || strcmp(arg, "--config") == 0) {
            if (!has_value)
                return usage_error("missing value after", arg);
            a->config = argv[++i];
        } else if (strcmp(arg, "--target") == 0) {
            if (!has_value)
                return usage_error("missing value after", arg);
            a->target = argv[++i];
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
    return check_args(a);
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

/* The database's choices for the model of a (this machine, a's target,
 * measured at the export's threads with the default conditions). */
static int read_db(const export_args *a, dt_export_params *params, char *source, size_t source_len,
                   char *model, size_t model_len, dt_export_choice **choices, int *n, dt_error *err)
{
    char machine[DT_MACHINE_MAX];
    dt_db *db = NULL;
    int rc = 0;
    if (a->target && dt_target_parse(a->target, &params->target) != 0) {
        char names[128];
        dt_names_join(dt_target_at, names, sizeof names);
        return dt_error_set(err, DT_EINVAL, "unknown target '%s' (%s)", a->target, names);
    }
    rc = dt_cli_db_path(a->db_path, a->config, source, source_len, err);
    rc = rc ? rc : dt_machine_local_key(dt_target_name(params->target), 0, &params->measure, machine,
                                        sizeof machine, err);
    rc = rc ? rc : dt_db_open_existing(source, &db, err);
    params->source = source;
    rc = rc ? rc : dt_export_read_db(db, machine, a->model, params, model, model_len, choices, n, err);
    dt_db_free(db);
    return rc;
}

/* --network: the graph of a->model around the kernels of the choices. */
static int export_network(const export_args *a, const dt_export_params *params,
                          const dt_export_choice *choices, int n, const char *out_dir, dt_error *err)
{
    dt_graph *g = NULL;
    char recorded[DT_PATH_MAX];
    const char *model = a->model;
    int rc = model ? 0 : dt_export_run_model(a->run_dir, recorded, sizeof recorded, err);
    if (!model)
        model = recorded;
    rc = rc ? rc : dt_netexport_read_graph(model, &g, err);
    dt_netexport_params np = dt_netexport_params_default();
    np.kernels = *params;
    rc = rc ? rc : dt_netexport_write(&np, g, choices, n, out_dir, err);
    if (rc == 0)
        printf("dtune: exported network %s (%d nodes) to %s\ndtune: build and check it: make -C %s "
               "test\n", g->name, g->nnodes, out_dir, out_dir);
    dt_graph_free(g);
    return rc;
}

int dt_cmd_export(int argc, char **argv)
{
    export_args a;
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    dt_export_params params = dt_export_params_default();
    params.measure.threads = a.threads ? a.threads : a.db ? dt_export_params_default().measure.threads : 0;
    params.source = a.run_dir;
    char model[DT_NAME_MAX], out_dir[DT_PATH_MAX], db_path[DT_PATH_MAX];
    dt_export_choice *choices = NULL;
    int n = 0;
    dt_error err;
    int rc = a.db ? read_db(&a, &params, db_path, sizeof db_path, model, sizeof model, &choices, &n, &err)
                  : dt_export_read_run(a.run_dir, a.model, &params, model, sizeof model, &choices, &n,
                                       &err);
    if (rc) {
        fprintf(stderr, "dtune export: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    int untuned = report_untuned(choices, n, a.allow_untuned);
    if (untuned && !a.allow_untuned) {
        free(choices);
        return 2;
    }
    int len = a.out_dir ? snprintf(out_dir, sizeof out_dir, "%s", a.out_dir)
              : a.db    ? snprintf(out_dir, sizeof out_dir, "%s_%s", model, a.network ? "network" : "kernels")
                        : snprintf(out_dir, sizeof out_dir, "%s/%s", a.run_dir, a.network ? "network" : "export");
    if (len < 0 || (size_t)len >= sizeof out_dir)
        rc = dt_error_set(&err, DT_EINVAL, "%.64s...: path too long", out_dir);
    if (rc == 0)
        rc = a.network ? export_network(&a, &params, choices, n, out_dir, &err)
                       : dt_export_write(&params, model, choices, n, out_dir, &err);
    free(choices);
    if (rc) {
        fprintf(stderr, "dtune export: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    if (a.network)
        return 0;
    printf("dtune: exported %d kernels of %s (%d tuned, %d reference loops) to %s\n", n, model,
           n - untuned, untuned, out_dir);
    fputs("dtune: ", stdout);
    printf(dt_export_build_hint(params.target), out_dir);
    fputc('\n', stdout);
    return 0;
}
