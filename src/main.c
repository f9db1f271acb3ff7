/* main.c — the dtune command line: dispatches to one subcommand. */
#include <stdio.h>
#include <string.h>

#include "dtune/cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
} command;

static int not_built(const char *name, int argc, char **argv, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: dtune %s\n(not built yet)\n", usage);
            return 0;
        }
    }
    fprintf(stderr, "dtune %s: not built yet\n", name);
    return 1;
}

static int cmd_tune_pending(int argc, char **argv)
{
    return not_built("tune", argc, argv,
                     "tune [-c config.yaml] [--model F] [--target T] [--budget S] "
                     "[--target-latency MS] [--policy P] [--strategy S] [--out DIR] [--seed N]");
}

static int cmd_status_pending(int argc, char **argv)
{
    return not_built("status", argc, argv, "status [--addr HOST:PORT]");
}

static int cmd_report_pending(int argc, char **argv)
{
    return not_built("report", argc, argv, "report RUN_DIR");
}

static int cmd_measure_pending(int argc, char **argv)
{
    return not_built("measure", argc, argv,
                     "measure MODEL.yaml TASK [--target T] [--config INDEX|random] "
                     "[--repeats N] [--cv X]");
}

static int cmd_best_pending(int argc, char **argv)
{
    return not_built("best", argc, argv, "best RUN_DIR");
}

static int cmd_check_pending(int argc, char **argv)
{
    return not_built("check", argc, argv, "check CONFIG.yaml");
}

static const command commands[] = {
    { "tune", cmd_tune_pending, "tune a whole model (the main job)" },
    { "status", cmd_status_pending, "show a running tuner's status" },
    { "report", cmd_report_pending, "per-task summary of a run" },
    { "best", cmd_best_pending, "print a run's best.json" },
    { "models", dt_cmd_models, "list a model's tasks and space sizes" },
    { "measure", cmd_measure_pending, "build, check and time one config" },
    { "check", cmd_check_pending, "validate a config and its model" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: dtune COMMAND [ARGS]   (dtune COMMAND --help for each)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].usage);
}

int main(int argc, char **argv)
{
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
