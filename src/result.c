/* result.c — names of result classes. */
#include "dtune/result.h"

#include <string.h>

static const char *const result_names[DT_RESULT_COUNT] = {
    "ok", "compile_error", "compile_timeout", "crash", "timeout",
    "wrong_output", "launch_error", "invalid", "runner_error",
};

const char *dt_result_name(dt_result_class r)
{
    if ((int)r < 0 || r >= DT_RESULT_COUNT)
        return "unknown";
    return result_names[r];
}

int dt_result_parse(const char *name, dt_result_class *r)
{
    for (int i = 0; i < DT_RESULT_COUNT; i++) {
        if (strcmp(name, result_names[i]) == 0) {
            *r = (dt_result_class)i;
            return 0;
        }
    }
    return -1;
}
