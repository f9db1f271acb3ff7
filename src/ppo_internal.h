/* ppo_internal.h — private to src/: the policy's log-probability of an action vector.
 * ppo.c defines them; the only callers outside it are its tests (built
 * with -Isrc), which check them against finite differences, brute force or
 * known values. Not part of dtune's interface. */
#ifndef DTUNE_PPO_INTERNAL_H
#define DTUNE_PPO_INTERNAL_H

#include "dtune/ppo.h"

/* Log-probability of actions at state under the current policy. */
double dt_ppo_log_prob(dt_ppo *p, const double *state, const int *actions);

/* Steps in the rollout. */
int dt_ppo_episode_length(const dt_ppo *p);

/* The flat parameter vector θ (W1, b1, Wp, bp, wv, bv), owned by the agent;
 * writes through it change the network. */
int dt_ppo_ntheta(const dt_ppo *p);
double *dt_ppo_theta(dt_ppo *p);

#endif
