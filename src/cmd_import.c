/* cmd_import.c — `dtune import MODEL.onnx [-o MODEL.yaml] [--input-shape
 * N,C,H,W]`: an ONNX network's tuning tasks as a model file (docs/import.md).
 * The file is written whole or not at all (dt_write_file_replace); without
 * -o the model goes to stdout.
 */
#include <stdio.h>
#include <string.h>

#include "dtune/cli.h"
#include "dtune/model_file.h"
#include "dtune/util.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: dtune import MODEL.onnx [-o MODEL.yaml] [--input-shape N,C,H,W]\n"
               "Reads an ONNX network (opsets %d to %d) and writes its tuning tasks, the\n"
               "unique shapes of its convolutions and dense layers with their counts, as a\n"
               "model file (models/*.yaml's format) to -o, whole or not at all, or to stdout.\n"
               "--input-shape: the input's shape where the file leaves it dynamic (or to\n"
               "override it). `dtune tune --model MODEL.onnx` reads the network directly.\n"
               "Exit status 2 for a file, operator or shape dtune cannot import; the message\n"
               "names the node, its op type and the opset (docs/import.md).\n",
            DT_ONNX_OPSET_MIN, DT_ONNX_OPSET_MAX);
}

typedef struct import_args {
    const char *onnx, *yaml, *shape;
} import_args;

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, import_args *a)
{
    for (int i = 1; i < argc; i++) {
        bool value = i + 1 < argc;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) && value) {
            a->yaml = argv[++i];
        } else if (strcmp(argv[i], "--input-shape") == 0 && value) {
            a->shape = argv[++i];
        } else if (argv[i][0] == '-' || a->onnx) {
            fprintf(stderr, "dtune import: %s '%s'\n", argv[i][0] == '-' ? "unknown option or missing value"
                    : "one MODEL.onnx only; unexpected", argv[i]);
            usage(stderr);
            return 2;
        } else {
            a->onnx = argv[i];
        }
    }
    if (!a->onnx) {
        fprintf(stderr, "dtune import: MODEL.onnx is missing\n");
        usage(stderr);
        return 2;
    }
    return -1;
}

int dt_cmd_import(int argc, char **argv)
{
    import_args a = { 0 };
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    dt_error err;
    dt_onnx_options opts = dt_onnx_default_options();
    int rc = a.shape ? dt_onnx_parse_shape(a.shape, &opts, &err) : 0;
    if (rc == 0 && !dt_model_file_is_onnx(a.onnx))
        rc = dt_error_set(&err, DT_EINVAL, "%s: not an .onnx file (a model YAML needs no import)", a.onnx);
    dt_model *model = NULL;
    if (rc == 0)
        rc = dt_model_file_load(a.onnx, &opts, NULL, &model, &err);
    dt_buf text = { 0 };
    char comment[DT_PATH_MAX + 128];
    if (rc == 0) {
        snprintf(comment, sizeof comment, "Imported by `dtune import` from %s: %d task%s, batch %d.", a.onnx,
                 model->ntasks, model->ntasks == 1 ? "" : "s", model->batch);
        if (dt_model_format(model, comment, &text) != 0)
            rc = dt_error_set(&err, DT_ENOMEM, "out of memory");
    }
    if (rc == 0 && a.yaml)
        rc = dt_write_file_replace(a.yaml, text.data, text.len, &err);
    else if (rc == 0 && fwrite(text.data, 1, text.len, stdout) != text.len)
        rc = dt_error_set(&err, DT_EIO, "stdout: write failed");
    if (rc == 0 && a.yaml)
        fprintf(stderr, "dtune import: %s: %d tasks of model %s\n", a.yaml, model->ntasks, model->name);
    dt_buf_free(&text);
    dt_model_free(model);
    if (rc) {
        fprintf(stderr, "dtune import: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    return 0;
}
