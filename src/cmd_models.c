/* cmd_models.c — `dtune models MODEL.yaml [--target T]`: one row per task. */
#include <stdio.h>
#include <string.h>

#include "dtune/cli.h"
#include "dtune/model.h"
#include "dtune/space.h"
#include "dtune/target.h"
#include "dtune/util.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: dtune models MODEL.yaml [--target cpu|cuda]\n"
               "Prints one row per tuning task: name, kind, shape, count, GFLOP and the\n"
               "size of its knob space on the target (valid points in brackets when the\n"
               "space is small enough to enumerate).\n");
}

static int print_task(const dt_task *t, dt_target target)
{
    char shape[128];
    dt_error err;
    dt_space space;
    dt_task_shape_str(t, shape, sizeof shape);
    int rc = dt_target_space_init(&space, t, target, &err);
    if (rc != 0) {
        fprintf(stderr, "dtune models: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    int64_t valid = dt_space_count_valid(&space, 2000000);
    char vbuf[32] = "";
    if (valid >= 0)
        snprintf(vbuf, sizeof vbuf, " (%lld valid)", (long long)valid);
    printf("%-16s %-17s %-34s %5d %9.4f %12llu%s\n", t->name, dt_op_kind_name(t->kind), shape,
           t->count, t->flops / 1e9, (unsigned long long)space.size, vbuf);
    dt_space_free(&space);
    return 0;
}

int dt_cmd_models(int argc, char **argv)
{
    const char *path = NULL;
    dt_target target = DT_TARGET_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) {
            if (dt_target_parse(argv[++i], &target) != 0) {
                char names[128];
                dt_names_join(dt_target_at, names, sizeof names);
                fprintf(stderr, "dtune models: unknown target '%s' (%s)\n", argv[i], names);
                return 2;
            }
        } else if (argv[i][0] == '-' || path) {
            usage(stderr);
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    dt_model *model;
    dt_error err;
    int rc = dt_model_load_target(path, target, &model, &err);
    if (rc) {
        fprintf(stderr, "dtune models: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    printf("model %s: %d tasks, target %s\n", model->name, model->ntasks, dt_target_name(target));
    printf("%-16s %-17s %-34s %5s %9s %12s\n", "task", "kind", "shape", "count", "GFLOP", "space");
    int status = 0;
    for (int i = 0; i < model->ntasks && status == 0; i++)
        status = print_task(&model->tasks[i], target);
    dt_model_free(model);
    return status;
}
