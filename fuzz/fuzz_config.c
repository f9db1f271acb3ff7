/* fuzz_config.c — config.yaml through the config reader (the model file it
 * names is not loaded: paths in a fuzzed file could name anything). */
#include "fuzz.h"

#include <stdlib.h>

#include "dtune/config.h"

int dt_fuzz_config(const uint8_t *data, size_t size)
{
    char path[128];
    if (dt_fuzz_scratch("config.yaml", data, size, path, sizeof path) != 0)
        return 0;
    dt_config *cfg = malloc(sizeof *cfg);     /* large: paths of PATH_MAX */
    dt_error err;
    if (cfg && dt_config_load(path, cfg, false, &err) == 0)
        dt_config_validate(cfg, &err);
    free(cfg);
    return 0;
}

DT_FUZZ_TARGET(dt_fuzz_config)
