/* replay_backend.h — the replay backend's synthetic surface (for tests and
 * benches; the backend's table, dt_replay_backend, is in backend.h).
 *
 * A deterministic performance surface per (task, target, seed): each knob
 * prefers a hidden position, pairs of knobs interact, a seeded tenth of the
 * space is invalid (crash, wrong output or compile error) and every
 * measurement carries a few percent of multiplicative noise.
 */
#ifndef DTUNE_REPLAY_BACKEND_H
#define DTUNE_REPLAY_BACKEND_H

#include <stdint.h>

#include "dtune/backend.h"
#include "dtune/measure.h"
#include "dtune/space.h"

/* Noise-free GFLOPS of point; 0 for points the surface makes invalid. */
double dt_replay_backend_true_gflops(const dt_space *space, const dt_point *point, uint64_t seed);

/* One noisy measurement; `nonce` distinguishes repeated measurements. */
void dt_replay_backend_measure(const dt_space *space, const dt_point *point, uint64_t seed,
                               uint64_t nonce, dt_measure_result *out);

/* Peak GFLOPS the replay surface reports for its roofline. */
double dt_replay_backend_peak_gflops(const dt_task *task);

#endif
