/* ppo_internal.h — private to src/: the policy's log-probability of an action vector.
 * ppo.c defines them; the only callers outside it are its tests (built
 * with -Isrc), which check them against finite differences, brute force or
 * known values. Not part of dtune's interface. */
#ifndef DTUNE_PPO_INTERNAL_H
#define DTUNE_PPO_INTERNAL_H

#include "dtune/ppo.h"

/* An update asks its cancel hook once per this many parameters' worth of
 * steps (a step's backward pass streams the whole policy head and its
 * gradient): before every step of a network this wide or wider, before
 * each minibatch's first step only of one 64 times narrower (the default
 * 64 hidden units), where an ask per step would cost more than the step. */
#define DT_PPO_ASK_PARAMS (1 << 18)

/* Log-probability of actions at state under the current policy. */
double dt_ppo_log_prob(dt_ppo *p, const double *state, const int *actions);

/* Steps in the rollout. */
int dt_ppo_episode_length(const dt_ppo *p);

/* The flat parameter vector θ (W1, b1, Wp, bp, wv, bv), owned by the agent;
 * writes through it change the network. */
int dt_ppo_ntheta(const dt_ppo *p);
double *dt_ppo_theta(dt_ppo *p);

#endif
