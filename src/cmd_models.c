/* cmd_models.c — `dtune models MODEL.yaml [--target T] [--json]`: one row per
 * task, or the model's tasks as one JSON document (their geometry, count,
 * FLOPs and bytes) for tools that must not derive tasks themselves
 * (bench/torch_bench). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dtune/cli.h"
#include "dtune/model.h"
#include "dtune/space.h"
#include "dtune/target.h"
#include "dtune/util.h"

static void usage(FILE *f)
{
    char targets[128];
    dt_names_join_sep(dt_target_at, "|", "|", targets, sizeof targets);
    fprintf(f, "usage: dtune models MODEL.yaml|MODEL.onnx [--target %s] [--json]\n"
               "Prints one row per tuning task: name, kind, shape, count, GFLOP and the\n"
               "size of its knob space on the target (valid points in brackets when the\n"
               "space is small enough to enumerate). --json: the tasks as one JSON\n"
               "document instead: {model, batch, tasks: [{name, kind, shape, count, flops,\n"
               "bytes, conv: {n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow}\n"
               "or mm: {b, m, n, k}}]}; dense and batch_matmul compute input[b][m][k] x\n"
               "weight[b][n][k] over k.\n", targets);
}

static json_t *task_json(const dt_task *t)
{
    char shape[128];
    dt_task_shape_str(t, shape, sizeof shape);
    const dt_conv_shape *c = &t->conv;
    const dt_mm_shape *m = &t->mm;
    bool conv = t->kind == DT_OP_CONV2D || t->kind == DT_OP_DEPTHWISE_CONV2D;
    json_t *geometry = conv ? json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, "
                                        "s:i, s:i, s:i, s:i}",
                                        "n", c->n, "c_in", c->c_in, "h", c->h, "w", c->w,
                                        "c_out", c->c_out, "kh", c->kh, "kw", c->kw, "sh", c->sh,
                                        "sw", c->sw, "ph", c->ph, "pw", c->pw, "dh", c->dh,
                                        "dw", c->dw, "oh", c->oh, "ow", c->ow)
                            : json_pack("{s:i, s:i, s:i, s:i}", "b", m->b, "m", m->m, "n", m->n,
                                        "k", m->k);
    return json_pack("{s:s, s:s, s:s, s:i, s:f, s:f, s:o}", "name", t->name,
                     "kind", dt_op_kind_name(t->kind), "shape", shape, "count", t->count,
                     "flops", t->flops, "bytes", t->bytes, conv ? "conv" : "mm", geometry);
}

static int print_json(const dt_model *model)
{
    json_t *tasks = json_array();
    json_t *doc = tasks ? json_pack("{s:s, s:i, s:o}", "model", model->name, "batch", model->batch,
                                    "tasks", tasks)
                        : NULL;
    for (int i = 0; doc && i < model->ntasks; i++) {
        json_t *t = task_json(&model->tasks[i]);
        if (!t || json_array_append_new(tasks, t) != 0) {
            json_decref(doc);
            doc = NULL;
        }
    }
    char *text = doc ? json_dumps(doc, JSON_INDENT(1)) : NULL;
    json_decref(doc);
    if (!text) {
        fprintf(stderr, "dtune models: out of memory\n");
        return 1;
    }
    printf("%s\n", text);
    free(text);
    return 0;
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
    bool json = false;
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
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
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
    int rc = dt_target_load_model(path, target, &model, &err);
    if (rc) {
        fprintf(stderr, "dtune models: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    if (json) {
        int status = print_json(model);
        dt_model_free(model);
        return status;
    }
    printf("model %s: %d tasks, target %s\n", model->name, model->ntasks, dt_target_name(target));
    printf("%-16s %-17s %-34s %5s %9s %12s\n", "task", "kind", "shape", "count", "GFLOP", "space");
    int status = 0;
    for (int i = 0; i < model->ntasks && status == 0; i++)
        status = print_task(&model->tasks[i], target);
    dt_model_free(model);
    return status;
}
