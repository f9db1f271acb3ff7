/* backend.c — the measurement backends by name: each target's own (from the
 * target table, in target order), then those of no target (replay). */
#include "dtune/backend.h"
#include "dtune/target.h"

#include <string.h>

static const dt_backend_i *const targetless[] = {
    &dt_replay_backend,
};
#define NTARGETLESS ((int)(sizeof targetless / sizeof targetless[0]))

/* The i-th backend, NULL past the last. */
static const dt_backend_i *backend_at(int i)
{
    if (i >= 0 && i < DT_TARGET_COUNT)
        return dt_target_get((dt_target)i)->backend;
    i -= DT_TARGET_COUNT;
    return i >= 0 && i < NTARGETLESS ? targetless[i] : NULL;
}

const dt_backend_i *dt_backend_find(const char *name)
{
    for (int i = 0; backend_at(i); i++)
        if (strcmp(backend_at(i)->name, name) == 0)
            return backend_at(i);
    return NULL;
}

const char *dt_backend_at(int i)
{
    const dt_backend_i *b = backend_at(i);
    return b ? b->name : NULL;
}

const dt_backend_i *dt_backend_choose(dt_target target, const char *name)
{
    if (name && name[0])
        return dt_backend_find(name);
    const dt_target_i *t = dt_target_get(target);
    return t ? t->backend : NULL;
}
