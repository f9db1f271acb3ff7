/* ppo_internal.h — private to src/: the policy's log-probability of an action vector.
 * ppo.c defines them; the only callers outside it are its tests (built
 * with -Isrc), which check them against finite differences, brute force or
 * known values. Not part of dtune's interface. */
#ifndef DTUNE_PPO_INTERNAL_H
#define DTUNE_PPO_INTERNAL_H

#include "dtune/ppo.h"

/* An update asks its cancel hook once per this many parameters' worth of
 * steps (a step's backward pass streams the whole policy head and its
 * gradient): before every step of a network with at least this many
 * parameters, only before each minibatch's first step of one with at most
 * a 64th of them (the default 64 hidden units hold a few thousand), where
 * an ask per step would cost a few percent of the step. */
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
