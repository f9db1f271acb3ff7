/* mcmc_internal.h — private to src/: the sampler's shape, a start from explicit positions, and the integrated
 * autocorrelation time of a chain.
 * mcmc.c defines them; the only callers outside it are its tests (built
 * with -Isrc), which check them against finite differences, brute force or
 * known values. Not part of dtune's interface. */
#ifndef DTUNE_MCMC_INTERNAL_H
#define DTUNE_MCMC_INTERNAL_H

#include "dtune/mcmc.h"

/* --- Integrated autocorrelation time ------------------------------------------
 *
 * τ = 1 + 2 Σ_{t=1}^{M} ρ(t), with ρ the normalised autocorrelation function
 * (by FFT) and the window M chosen automatically as the smallest M with
 * M ≥ c τ(M) (Sokal; emcee uses c = 5). */

/* Steps recorded since the last start. */
int dt_mcmc_steps(const dt_mcmc *sampler);

int dt_mcmc_walkers(const dt_mcmc *sampler);

int dt_mcmc_ndim(const dt_mcmc *sampler);

/* Starts from explicit positions (walkers × ndim, row per walker). Clears
 * the chain. 0, or DT_EINVAL when some position has −∞ log probability. */
int dt_mcmc_start(dt_mcmc *sampler, const double *positions,
                  dt_mcmc_log_prob_fn log_prob, void *ctx, dt_error *err);

/* Doubles of scratch dt_mcmc_integrated_time needs for a series of n. */
size_t dt_mcmc_integrated_time_work(int n);

/* τ of series[0], series[stride], ..., series[(n − 1) stride] into *tau.
 * work holds dt_mcmc_integrated_time_work(n) doubles. Returns 0; DT_EINVAL
 * for n < 2 or a constant series; DT_EFAIL, with *tau still set, when
 * n < tol τ, i.e. the chain is too short for the estimate to be trusted
 * (tol 50 is emcee's; tol 0 skips the check). */
int dt_mcmc_integrated_time(const double *series, int n, int stride, double c,
                            double tol, double *work, double *tau, dt_error *err);

/* τ of coordinate `dim` of the sampler's chain after discarding the first
 * `discard` steps: the autocorrelation functions of the walkers are averaged
 * before the window search (emcee's estimator). Uses the sampler's scratch.
 * Return codes as dt_mcmc_integrated_time. */
int dt_mcmc_chain_integrated_time(dt_mcmc *sampler, int dim, int discard, double c,
                                  double tol, double *tau, dt_error *err);

#endif
