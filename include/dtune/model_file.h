/* model_file.h — a model named by its file, in either format dtune reads:
 * a model YAML (models/NAME.yaml, model.h) or an ONNX network (onnx.h),
 * told apart by the .onnx extension. Every command that takes a model
 * path loads it here (through dt_target_load_model), so `dtune tune --model
 * net.onnx` and a resume of that run read the network the same way.
 */
#ifndef DTUNE_MODEL_FILE_H
#define DTUNE_MODEL_FILE_H

#include <stdbool.h>

#include "dtune/error.h"
#include "dtune/model.h"
#include "dtune/onnx.h"

/* Whether path names an ONNX file (ends in .onnx, any case). */
bool dt_model_file_is_onnx(const char *path);

/* Loads the model at path: a model YAML as dt_model_load_within does, or an
 * ONNX network imported with opts (NULL: the file's input shape) whose conv
 * and dense nodes become the tasks (dt_graph_tasks: unique shapes with
 * counts, named after their first node). memory (NULL: no check) bounds each
 * task as dt_model_load_within does. *out belongs to the caller. Returns 0
 * or the error of the reader (model.h, onnx.h). */
int dt_model_file_load(const char *path, const dt_onnx_options *opts, const dt_model_memory *memory,
                       dt_model **out, dt_error *err);

#endif
