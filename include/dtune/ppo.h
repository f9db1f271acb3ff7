/* ppo.h — Chameleon's search agent: an actor-critic MLP trained with PPO.
 *
 * State: each knob's option index ÷ (options − 1) (dt_space_normalised).
 * Action: per knob one of {decrement, stay, increment}, drawn from a
 * factorised categorical (one 3-way softmax per knob). Network:
 *
 *   h      = tanh(W1 s + b1)                 shared first layer, `hidden` units
 *   logits = Wp h + bp                        policy head, 3 per knob
 *   V(s)   = wv · h + bv                      value head
 *
 * Training is PPO (Schulman et al. 2017) on one episode at a time:
 * advantages by GAE, Â_t = Σ_l (γλ)^l δ_{t+l}, δ_t = r_t + γ V(s_{t+1}) − V(s_t),
 * normalised over the episode; for `epochs` passes over shuffled minibatches
 * the loss
 *
 *   L = mean_t [ −min(ρ_t Â_t, clip(ρ_t, 1−ε, 1+ε) Â_t) + c_v (V(s_t) − R_t)² − c_e H(π(·|s_t)) ]
 *
 * with ρ_t = π(a_t|s_t) / π_old(a_t|s_t) and R_t = Â_t(unnormalised) + V_old(s_t)
 * is minimised by Adam (β 0.9 / 0.999, ε 1e-8) after clipping the global
 * gradient norm to 0.5. Defaults (Chameleon, Table 9): learning rate 1e-3,
 * γ 0.9, λ 0.99, 3 epochs, ε 0.3, c_v 1.0, c_e 0.1.
 *
 * Every buffer (rollout of max_steps, gradients, Adam moments, forward and
 * backward scratch) is allocated in dt_ppo_new; acting and updating never
 * allocate. The agent owns its gsl_rng. Not thread-safe.
 */
#ifndef DTUNE_PPO_H
#define DTUNE_PPO_H

#include <stdbool.h>
#include <stdint.h>

#include "dtune/error.h"

enum { DT_PPO_DECREMENT = 0, DT_PPO_STAY = 1, DT_PPO_INCREMENT = 2, DT_PPO_NACTIONS = 3 };

/* Minibatch size of the PPO update (steps per Adam step). */
#define DT_PPO_MINIBATCH 64
/* Global gradient-norm clip before each Adam step. */
#define DT_PPO_MAX_GRAD_NORM 0.5

/* The agent's settings (config keys tuner.ppo.*). */
typedef struct dt_ppo_params {
    double learning_rate;      /* Adam step size */
    double gamma;              /* reward discount */
    double gae_lambda;
    int epochs;                /* per update */
    double clip;               /* PPO clip range */
    double value_coef;         /* weight of the critic loss */
    double entropy_coef;       /* weight of the entropy bonus */
    int episodes;              /* per round at most */
    int episodes_per_config;   /* per config the previous round measured; 0: always episodes */
    int max_steps;             /* per episode */
    int hidden;                /* hidden units of the actor-critic */
} dt_ppo_params;

/* Chameleon's settings (dtune check --help lists them). */
dt_ppo_params dt_ppo_params_default(void);

typedef struct dt_ppo dt_ppo;

/* An agent for nknobs knobs (1..64). cfg is copied. Weights are initialised
 * from seed (policy head scaled by 0.01, so the first policy is close to
 * uniform). Returns 0, DT_EINVAL or DT_ENOMEM. */
int dt_ppo_new(const dt_ppo_params *cfg, int nknobs, uint64_t seed, dt_ppo **out, dt_error *err);

/* Accepts NULL. */
void dt_ppo_free(dt_ppo *p);

/* --- Acting ---------------------------------------------------------------- */

/* Empties the rollout buffer. */
void dt_ppo_episode_begin(dt_ppo *p);

/* Samples an action per knob for state (nknobs doubles) into actions
 * (nknobs ints, DT_PPO_*) and appends (state, action, log-prob, value) to the
 * rollout. Returns 0, or DT_EINVAL when the rollout already holds max_steps. */
int dt_ppo_act(dt_ppo *p, const double *state, int *actions);

/* The critic's value of a state (used to bootstrap a truncated episode). */
double dt_ppo_value(dt_ppo *p, const double *state);

/* Statistics of one update. */
typedef struct dt_ppo_update_stats {
    int steps;              /* rollout length */
    double mean_reward;
    double policy_loss;     /* of the last minibatch of the last epoch */
    double value_loss;
    double entropy;         /* mean summed per-knob entropy, last minibatch */
} dt_ppo_update_stats;

/* Ends the episode: rewards[t] is the reward of step t (one per act call);
 * last_value is V of the state after the final step (0 when the episode
 * terminated rather than being cut at max_steps). Computes GAE and runs the
 * PPO epochs. stats may be NULL. Returns 0 or DT_EINVAL (no steps). */
int dt_ppo_episode_end(dt_ppo *p, const double *rewards, double last_value,
                       dt_ppo_update_stats *stats);

/* Asked during an update before each minibatch, and in a wide network
 * before each step of it (one step of 65536 hidden units takes
 * milliseconds, a minibatch of them most of a second; the stride follows
 * the network's size). When it says stop, the update ends there: the Adam
 * steps of the minibatches already done are kept, the cut minibatch takes
 * none, and dt_ppo_episode_end returns DT_ECANCELED. c is copied; NULL
 * removes it. */
void dt_ppo_set_cancel(dt_ppo *p, const dt_cancel *c);

/* --- Pieces exposed for tests ---------------------------------------------- */

/* GAE: adv[t] and returns ret[t] = adv[t] + values[t] for t < n, where
 * values has n entries and last_value bootstraps step n. */
void dt_ppo_gae(const double *rewards, const double *values, double last_value, int n,
                double gamma, double lambda, double *adv, double *ret);

/* A batch of steps for the loss. index (may be NULL = 0..n−1) selects rows of
 * states (row length nknobs), actions (nknobs ints per row), old_logp,
 * advantages and returns. */
typedef struct dt_ppo_batch {
    int n;
    const int *index;
    const double *states;
    const int *actions;
    const double *old_logp;
    const double *advantages;
    const double *returns;
} dt_ppo_batch;

/* The PPO loss L above over the batch at the current parameters; when grad is
 * non-NULL it receives dL/dθ (one double per parameter). Breakdown may be NULL. */
double dt_ppo_loss(dt_ppo *p, const dt_ppo_batch *b, double *grad, dt_ppo_update_stats *breakdown);

#endif
