/* machine.c — the machine fingerprint (machine.h): the replay surface's
 * here, a target's from its row of the target table (cpu_machine.c,
 * cuda_machine.c). */
#include "dtune/machine.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dtune/backend.h"
#include "dtune/target.h"

int dt_machine_fingerprint(const char *backend, uint64_t seed, int cuda_device, char *buf, size_t len,
                           dt_error *err)
{
    if (strcmp(backend, dt_replay_backend.name) == 0) {
        snprintf(buf, len, "%s seed %" PRIu64, dt_replay_backend.name, seed);
        return 0;
    }
    /* a backend that names no target measures on the host: the default
     * target's machine */
    dt_target target = DT_TARGET_DEFAULT;
    (void)dt_target_parse(backend, &target);
    return dt_target_get(target)->fingerprint(cuda_device, buf, len, err);
}
