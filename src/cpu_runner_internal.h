/* cpu_runner_internal.h — private to src/: the measurement process's pid and restart count.
 * cpu_runner.c defines them; the only callers outside it are the tests (built
 * with -Isrc). Not part of dtune's interface. */
#ifndef DTUNE_CPU_RUNNER_INTERNAL_H
#define DTUNE_CPU_RUNNER_INTERNAL_H

#include "cpu_runner.h"

/* Process id of the current child (0 when none runs); times it was replaced. */
int dt_cpu_runner_pid(const dt_cpu_runner *r);
int dt_cpu_runner_restarts(const dt_cpu_runner *r);

#endif
