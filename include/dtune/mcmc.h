/* mcmc.h — Goodman & Weare's affine-invariant ensemble sampler (stretch move)
 * and the integrated autocorrelation time of its chains.
 *
 * The ensemble of W walkers is split in two halves each step (a fresh random
 * split, as emcee does by default); every walker X_j of one half proposes
 *   Y = X_k + z (X_j − X_k),  X_k drawn from the other half,
 *   z = ((a − 1) u + 1)² / a,  u ~ U(0, 1)   (density g(z) ∝ 1/√z on [1/a, a]),
 * and accepts with probability min(1, z^(ndim − 1) p(Y) / p(X_j)). The first
 * half moves against the second, then the second against the updated first.
 *
 * A sampler owns one gsl_rng and every buffer it needs (positions, chain,
 * log probabilities, acceptance counts, autocorrelation scratch), all
 * allocated by dt_mcmc_new; a step allocates nothing. One sampler per
 * thread.
 */
#ifndef DTUNE_MCMC_H
#define DTUNE_MCMC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtune/error.h"

/* Log of the (unnormalised) target density at theta[0..ndim-1]; −INFINITY
 * outside its support. NaN is treated as −INFINITY. Must not keep theta. */
typedef double (*dt_mcmc_log_prob_fn)(const double *theta, void *ctx);

typedef struct dt_mcmc_params {
    int walkers;          /* ≥ 4 and ≥ 2 ndim (32) */
    int ndim;             /* parameters per walker, ≥ 1 (1) */
    int max_steps;        /* chain capacity in steps (2000) */
    double stretch;       /* a of the stretch move, > 1 (2) */
    bool randomize_split; /* draw a new red/blue split each step (true) */
    int max_start_draws;  /* ball draws per walker before giving up (1000) */
    uint64_t seed;        /* seeds the sampler's gsl_rng (1) */
} dt_mcmc_params;

dt_mcmc_params dt_mcmc_params_default(void);

typedef struct dt_mcmc dt_mcmc;

/* Allocates a sampler and all its buffers; calls gsl_set_error_handler_off().
 * 0, DT_EINVAL (bad params, message says which) or DT_ENOMEM. */
int dt_mcmc_new(const dt_mcmc_params *params, dt_mcmc **out, dt_error *err);

/* Accepts NULL. */
void dt_mcmc_free(dt_mcmc *sampler);

/* Reseeds the sampler's generator; the next start then replays exactly. */
void dt_mcmc_seed(dt_mcmc *sampler, uint64_t seed);

/* Starts (or restarts) the ensemble in a Gaussian ball: walker k gets
 * center[i] + scale[i] N(0, 1) in each coordinate i; a draw with −∞ log
 * probability is redrawn, up to max_start_draws times. Clears the chain and
 * the acceptance counts. 0, DT_EINVAL, or DT_EFAIL when some walker found no
 * finite log probability. */
int dt_mcmc_start_ball(dt_mcmc *sampler, const double *center, const double *scale,
                       dt_mcmc_log_prob_fn log_prob, void *ctx, dt_error *err);

/* Advances the ensemble `steps` steps and appends them to the chain.
 * 0, or DT_EINVAL when not started or the chain would pass max_steps. */
int dt_mcmc_run(dt_mcmc *sampler, int steps, dt_mcmc_log_prob_fn log_prob,
                void *ctx, dt_error *err);

/* The chain, borrowed until the next start: element (step t, walker k,
 * coordinate i) at [(t * walkers + k) * ndim + i]. */
const double *dt_mcmc_chain(const dt_mcmc *sampler);

/* Accepted proposals of walker k divided by the steps run (0 before any). */
double dt_mcmc_acceptance_fraction(const dt_mcmc *sampler, int walker);

#endif
