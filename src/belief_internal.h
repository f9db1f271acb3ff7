/* belief_internal.h — private to src/: the belief model's posterior, read back: the log density, the posterior
 * at another trial index and the pool's memo counts.
 * belief.c defines them; the only callers outside it are its tests (built
 * with -Isrc), which check them against finite differences, brute force or
 * known values. Not part of dtune's interface. */
#ifndef DTUNE_BELIEF_INTERNAL_H
#define DTUNE_BELIEF_INTERNAL_H

#include "dtune/belief.h"

/* The last successful prediction's posterior at another trial index x (in
 * history trials, ≥ the segment's first trial): mean and standard deviation
 * of f(x | θ) over the same samples. DT_EINVAL when there is no posterior. */
int dt_belief_posterior_at(const dt_belief *belief, double x, double *mean,
                           double *std, dt_error *err);

/* Log posterior (up to a constant) of θ = (curve parameters, σ) for the
 * segment and horizon of the last dt_belief_predict call that got as far as
 * the fit; −INFINITY outside the prior. For tests and diagnostics. */
double dt_belief_log_prob(const dt_belief *belief, const double *theta);

/* Predictions answered from the memo and fitted, since the pool was made. */
void dt_belief_pool_stats(const dt_belief_pool *pool, long *hits, long *misses);

#endif
