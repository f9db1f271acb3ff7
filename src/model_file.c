/* model_file.c — loading a model from a model YAML or an ONNX file (see
 * model_file.h). It sits above model.c and onnx.c so that neither reads
 * the other: graph.c, below onnx.c, already builds its tasks with model.c.
 */
#include "dtune/model_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dtune/graph.h"

bool dt_model_file_is_onnx(const char *path)
{
    size_t len = strlen(path);
    return len > 5 && strcasecmp(path + len - 5, ".onnx") == 0;
}

/* Each task's tensors within memory, as the YAML reader checks them. */
static int check_memory(const char *path, const dt_model *m, const dt_model_memory *memory, dt_error *err)
{
    for (int k = 0; memory && memory->task_bytes && k < m->ntasks; k++) {
        uint64_t need = dt_task_memory_bytes(&m->tasks[k]);
        if (need > memory->task_bytes)
            return dt_error_set(err, DT_EINVAL, "%s: task %s: measuring it takes %.3g GiB of tensors (input, "
                                "weight, output and its reference); the target allows a task %.3g GiB (%s)",
                                path, m->tasks[k].name, (double)need / (1 << 30),
                                (double)memory->task_bytes / (1 << 30), memory->source);
    }
    return 0;
}

int dt_model_file_load(const char *path, const dt_onnx_options *opts, const dt_model_memory *memory,
                       dt_model **out, dt_error *err)
{
    *out = NULL;
    if (!dt_model_file_is_onnx(path))
        return dt_model_load_within(path, memory, out, err);
    dt_graph *g = NULL;
    dt_model *m = NULL;
    int rc = dt_onnx_load(path, opts, &g, err);
    if (rc == 0 && (rc = dt_graph_tasks(g, path, &m, err)) != 0) {
        char msg[DT_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
        dt_error_set(err, rc, "%s: %s", path, msg);
    }
    dt_graph_free(g);
    if (rc == 0 && (rc = check_memory(path, m, memory, err)) != 0) {
        dt_model_free(m);
        m = NULL;
    }
    *out = m;
    return rc;
}
