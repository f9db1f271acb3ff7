/* machine.c — the machine fingerprint and key (machine.h): the replay
 * surface's here, a target's from its row of the target table
 * (cpu_machine.c, cuda_machine.c). */
#include "dtune/machine.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dtune/backend.h"
#include "dtune/measure.h"
#include "dtune/target.h"

/* The target a backend measures on: a backend that names no target
 * measures on the host, the default target's machine. */
static const dt_target_i *target_of(const char *backend)
{
    dt_target target = DT_TARGET_DEFAULT;
    (void)dt_target_parse(backend, &target);
    return dt_target_get(target);
}

int dt_machine_fingerprint(const char *backend, uint64_t seed, int cuda_device, char *buf, size_t len,
                           dt_error *err)
{
    if (strcmp(backend, dt_replay_backend.name) == 0) {
        snprintf(buf, len, "%s seed %" PRIu64, dt_replay_backend.name, seed);
        return 0;
    }
    return target_of(backend)->fingerprint(cuda_device, buf, len, err);
}

bool dt_machine_is_replay(const char *fingerprint)
{
    size_t n = strlen(dt_replay_backend.name);
    return strncmp(fingerprint, dt_replay_backend.name, n) == 0 && fingerprint[n] == ' ';
}

int dt_machine_key(const char *fingerprint, const char *backend, const dt_measure_params *measure,
                   char *buf, size_t len, dt_error *err)
{
    char conditions[DT_MACHINE_MAX] = "";
    if (strcmp(backend, dt_replay_backend.name) != 0)
        target_of(backend)->conditions(measure, conditions, sizeof conditions);
    int n = snprintf(buf, len, "%s%s%s", fingerprint, conditions[0] ? "; " : "", conditions);
    if (n < 0 || (size_t)n >= len)
        return dt_error_set(err, DT_EINVAL, "machine key too long: %.64s...", fingerprint);
    return 0;
}

int dt_machine_local_key(const char *backend, uint64_t seed, const dt_measure_params *measure,
                         char *buf, size_t len, dt_error *err)
{
    char fingerprint[DT_MACHINE_MAX];
    int rc = dt_machine_fingerprint(backend, seed, measure->cuda_device, fingerprint, sizeof fingerprint, err);
    return rc ? rc : dt_machine_key(fingerprint, backend, measure, buf, len, err);
}
