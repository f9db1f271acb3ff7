/* fuzz_model.c — a model file through the model reader, with a fixed
 * memory capacity (so the result does not depend on the machine), then
 * each task's knob space on both targets, as `dtune models` builds them. */
#include "fuzz.h"

#include "dtune/model.h"
#include "dtune/target.h"

int dt_fuzz_model(const uint8_t *data, size_t size)
{
    char path[128];
    if (dt_fuzz_scratch("model.yaml", data, size, path, sizeof path) != 0)
        return 0;
    dt_model_memory memory = { .task_bytes = (uint64_t)1 << 30, .source = "the fuzz harness" };
    dt_model *model = NULL;
    dt_error err;
    if (dt_model_load_within(path, &memory, &model, &err) != 0)
        return 0;
    dt_space_opts opts = { .cpu_max_vec = 16 };
    for (int k = 0; k < model->ntasks; k++) {
        char shape[128];
        dt_task_shape_str(&model->tasks[k], shape, sizeof shape);
        for (int target = 0; target < DT_TARGET_COUNT; target++) {
            dt_space space;
            if (dt_target_space_init_opts(&space, &model->tasks[k], (dt_target)target, &opts, &err) == 0)
                dt_space_free(&space);
        }
    }
    dt_model_free(model);
    return 0;
}

DT_FUZZ_TARGET(dt_fuzz_model)
