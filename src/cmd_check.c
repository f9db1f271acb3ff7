/* cmd_check.c — `dtune check CONFIG.yaml`: validates a run's config and the
 * model it names without tuning anything.
 *
 * Every problem is printed to stderr as it is found, one per line with
 * FILE:LINE:COLUMN (dt_config_load_report collects them all, so a user fixes a
 * file in one pass); the exit status is 2 when there is any. A valid config
 * gets one line on stdout naming the model, its task count and the target.
 * Every task's knob space is built and an output.warm_start log read exactly
 * as `dtune tune` does, so check refuses what tune would, with its message.
 */
#include <stdio.h>
#include <string.h>

#include "dtune/cli.h"
#include "dtune/config.h"
#include "daemon.h"
#include "dtune/model.h"
#include "dtune/space.h"
#include "dtune/target.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: dtune check CONFIG.yaml\n"
               "Validates a run's config and the model file it names. Prints every\n"
               "problem as FILE:LINE:COLUMN: message and exits 2 if there is any;\n"
               "prints \"CONFIG.yaml: ok (model NAME, N tasks, target T)\" and exits 0\n"
               "otherwise.\n");
}

static void help(void)
{
    dt_config defaults;
    dt_config_defaults(&defaults);
    usage(stdout);
    printf("\nKeys of config.yaml (nested: budget.slot_seconds is slot_seconds under budget:)\n\n");
    dt_config_print_keys(stdout, &defaults, "DEFAULT");
}

/* The config file named on the command line, or NULL after printing why not;
 * *exit_now is set when --help was asked for. */
static const char *parse_args(int argc, char **argv, int *exit_now)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            help();
            *exit_now = 0;
            return NULL;
        }
        if (argv[i][0] == '-' || path) {
            fprintf(stderr, "dtune check: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return NULL;
        }
        path = argv[i];
    }
    if (!path)
        usage(stderr);
    return path;
}

static int summarise(const char *path, const dt_config *cfg)
{
    dt_model *model = NULL;
    dt_error err;
    int rc = dt_target_load_model(cfg->model, cfg->target, &model, &err);
    if (rc == 0 && (rc = dt_daemon_check_inputs(cfg, &err)))
        dt_model_free(model);
    if (rc) {
        fprintf(stderr, "%s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    printf("%s: ok (model %s, %d task%s, target %s)\n", path, model->name, model->ntasks,
           model->ntasks == 1 ? "" : "s", dt_target_name(cfg->target));
    dt_model_free(model);
    return 0;
}

int dt_cmd_check(int argc, char **argv)
{
    int exit_now = 2;
    const char *path = parse_args(argc, argv, &exit_now);
    if (!path)
        return exit_now;
    dt_config cfg;
    dt_error err;
    int rc = dt_config_load_report(path, &cfg, true, stderr, &err);
    if (rc)
        return dt_error_exit_status(rc);
    return summarise(path, &cfg);
}
