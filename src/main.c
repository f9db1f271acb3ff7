/* main.c — the dtune command line: dispatches to one subcommand. */
#include <stdio.h>
#include <string.h>

#include "dtune/cli.h"
#include "dtune/target.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
} command;

static const command commands[] = {
    { "tune", dt_cmd_tune, "tune a whole model (the main job)" },
    { "status", dt_cmd_status, "show a running tuner's status" },
    { "report", dt_cmd_report, "per-task summary of a run, or its HTML report (--html)" },
    { "best", dt_cmd_best, "print a run's best.json" },
    { "compare", dt_cmd_compare, "several runs of one model side by side (table + SVG)" },
    { "models", dt_cmd_models, "list a model's tasks and space sizes" },
    { "import", dt_cmd_import, "an ONNX network's tuning tasks as a model file" },
    { "measure", dt_cmd_measure, "build, check and time one config" },
    { "check", dt_cmd_check, "validate a config and its model" },
    { "export", dt_cmd_export, "a run's tuned kernels as a C library (make test checks them)" },
    { "db", dt_cmd_db, "the tuning database: import, stats, best, export-log" },
    { "machine", dt_cmd_machine, "this machine: fingerprint, FMA peak and memory bandwidths (the bound)" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: dtune COMMAND [ARGS]   (dtune COMMAND --help for each)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].usage);
}

int main(int argc, char **argv)
{
    /* Hidden entry points: the measurement child processes exec this binary. */
    const dt_target_i *runner = argc > 1 ? dt_target_for_runner(argv[1]) : NULL;
    if (runner)
        return runner->runner_main(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "dtune: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
