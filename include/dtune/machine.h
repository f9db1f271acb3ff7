/* machine.h — the fingerprint of the machine a measurement was taken on.
 *
 * A measured speed means something only on the machine it was measured on,
 * so the tuning database keys every record by this text, and the trace
 * recorder (scripts/record_traces.sh) writes it into each trace's header.
 * For the CPU it names the processor precisely enough that two CPUs sold
 * under one name differ: "MODEL NAME, family F model M stepping S, SIMD
 * FLAGS, nproc N" (the SIMD flags the kernels use: avx512f, avx2, fma, neon,
 * asimd). For CUDA: "GPU NAME, cc MAJOR.MINOR, driver VERSION". The replay
 * backend's synthetic surface is no machine's and differs with the run's
 * seed: "replay seed N".
 */
#ifndef DTUNE_MACHINE_H
#define DTUNE_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtune/backend.h"
#include "dtune/error.h"

#define DT_MACHINE_MAX 256

/* The fingerprint of the machine that backend (a dt_backend_at name: "cpu",
 * "cuda", "replay") measures on, into buf; seed is the run's (only the
 * replay surface depends on it), cuda_device the ordinal the CUDA backend
 * measures on (measure.cuda_device): its kind (name, compute capability,
 * driver) is described, not its ordinal, so two identical devices agree.
 * Returns 0, or DT_ENODEV (no CUDA device) /
 * DT_EIO (/proc/cpuinfo unreadable) with a message. */
int dt_machine_fingerprint(const char *backend, uint64_t seed, int cuda_device, char *buf, size_t len,
                           dt_error *err);

/* dt_machine_key of this machine's fingerprint (dt_machine_fingerprint of
 * backend, seed and measure->cuda_device) under measure. */
int dt_machine_local_key(const char *backend, uint64_t seed, const dt_measure_params *measure,
                         char *buf, size_t len, dt_error *err);

/* Whether a fingerprint or key is the replay surface's ("replay seed N"). */
bool dt_machine_is_replay(const char *fingerprint);

/* The key the tuning database and a run's log file its figures under:
 * fingerprint (the machine, local or a cluster's workers'), then "; " and
 * the measurement conditions of backend's target under measure ("threads 1,
 * weights cold"), so that figures measured under other settings are never
 * compared; the replay surface's key is its fingerprint. Returns 0, or
 * DT_EINVAL when the key does not fit in len. */
int dt_machine_key(const char *fingerprint, const char *backend, const dt_measure_params *measure,
                   char *buf, size_t len, dt_error *err);

#endif
