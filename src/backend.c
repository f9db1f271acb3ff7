/* backend.c — the table of measurement backends, chosen by name. */
#include "dtune/backend.h"
#include "dtune/backend_cpu.h"
#include "dtune/backend_cuda.h"

#include <string.h>

static const dt_backend_i *const backends[] = {
    &dt_backend_cpu,
    &dt_backend_cuda,
    &dt_backend_replay,
};

const dt_backend_i *dt_backend_find(const char *name)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

const char *dt_backend_at(int i)
{
    return i >= 0 && i < (int)(sizeof backends / sizeof backends[0]) ? backends[i]->name : NULL;
}
