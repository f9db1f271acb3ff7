/* ppo.c — actor-critic MLP and its PPO update (see ppo.h for the maths).
 *
 * Parameters live in one flat vector θ laid out as W1 (H×K), b1 (H),
 * Wp (3K×H), bp (3K), wv (H), bv (1); the gradient and both Adam moments use
 * the same layout, so an Adam step is one loop. The forward pass of one state
 * fills the agent's scratch (hidden activations, logits, probabilities); the
 * backward pass of the loss accumulates into a gradient vector in that
 * layout. Episodes are stored in a rollout of max_steps rows allocated once.
 *
 * The forward pass reads W1 and Wp through transposed copies (input-major),
 * so that each layer is a sweep of vector adds over its outputs: every
 * output still sums b + w·x in the order of the inputs, the same doubles as
 * a row-at-a-time dot product. The copies are refreshed after each Adam step
 * (and, once θ has been handed out for writing, before every forward pass).
 *
 * The forward pass and the loss are cloned per x86-64 level (PPO_CLONES):
 * the four-double vectors below run as AVX registers where the machine has
 * them and as SSE2 pairs where not. Every operation is element-wise and
 * nothing is contracted into an FMA, so every clone gives the same doubles.
 *
 * dt_ppo_act keeps each step's forward pass (hidden activations,
 * probabilities, log-probabilities; the value is in the rollout). Until the
 * update's first Adam step θ is the one the episode acted with, so the first
 * minibatch copies those instead of recomputing them: the same doubles, and
 * a third of the update's forward passes when an episode fits in one
 * minibatch.
 */
#include "ppo_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "dtune/util.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define ADAM_BETA1 0.9
#define ADAM_BETA2 0.999
#define ADAM_EPS 1e-8

struct dt_ppo {
    dt_ppo_params cfg;
    int nknobs, hidden, nlogits, nparams;
    double *theta, *grad, *adam_m, *adam_v;
    long adam_steps;
    gsl_rng *rng;
    /* rollout, max_steps rows */
    int cap, len;
    double *states, *logp, *values, *adv, *ret;
    int *actions, *perm;
    /* forward and backward scratch */
    double *h, *logits, *probs, *logprobs, *dlogits, *dh;
    /* W1ᵀ (K×H) and Wpᵀ (H×3K); stale after θ changes; theta_shared: θ was
       handed out by dt_ppo_theta, so any forward pass may follow a write */
    double *w1t, *wpt;
    bool transposes_stale, theta_shared;
    /* each rollout step's forward pass as dt_ppo_act computed it (h, probs,
       logprobs; its value is in values), and the Adam steps θ had taken then */
    double *act_h, *act_probs, *act_logprobs;
    long rollout_adam_steps;
    dt_cancel cancel;
    int ask_every;   /* steps of an update between asks of cancel (DT_PPO_ASK_PARAMS) */
};

/* Views into a parameter-shaped vector. */
typedef struct layout {
    double *w1, *b1, *wp, *bp, *wv, *bv;
} layout;

static layout layout_of(const dt_ppo *p, double *base)
{
    layout l;
    l.w1 = base;
    l.b1 = l.w1 + p->hidden * p->nknobs;
    l.wp = l.b1 + p->hidden;
    l.bp = l.wp + p->nlogits * p->hidden;
    l.wv = l.bp + p->nlogits;
    l.bv = l.wv + p->hidden;
    return l;
}

dt_ppo_params dt_ppo_params_default(void)
{
    return (dt_ppo_params){
        .learning_rate = 1e-3, .gamma = 0.9, .gae_lambda = 0.99, .epochs = 3, .clip = 0.3,
        .value_coef = 1.0, .entropy_coef = 0.1, .episodes = 128, .episodes_per_config = 16,
        .max_steps = 500, .hidden = 64,
    };
}

static int check_config(const dt_ppo_params *cfg, int nknobs, dt_error *err)
{
    if (nknobs < 1 || nknobs > 64)
        return dt_error_set(err, DT_EINVAL, "ppo: %d knobs (must be 1..64)", nknobs);
    if (cfg->hidden < 1 || cfg->max_steps < 1 || cfg->epochs < 1 || cfg->episodes < 1)
        return dt_error_set(err, DT_EINVAL, "ppo: hidden %d, max_steps %d, epochs %d, episodes %d "
                            "must be positive", cfg->hidden, cfg->max_steps, cfg->epochs, cfg->episodes);
    if (cfg->episodes_per_config < 0)
        return dt_error_set(err, DT_EINVAL, "ppo: episodes_per_config %d must be >= 0",
                            cfg->episodes_per_config);
    if (!(cfg->learning_rate > 0) || !(cfg->clip > 0) || cfg->gamma < 0 || cfg->gamma > 1 ||
        cfg->gae_lambda < 0 || cfg->gae_lambda > 1 || cfg->value_coef < 0 || cfg->entropy_coef < 0)
        return dt_error_set(err, DT_EINVAL, "ppo: learning rate and clip must be > 0, gamma and "
                            "lambda in [0,1], coefficients >= 0");
    return 0;
}

static void init_block(gsl_rng *rng, double *w, int n, double bound)
{
    for (int i = 0; i < n; i++)
        w[i] = (2 * gsl_rng_uniform(rng) - 1) * bound;
}

/* Uniform ±1/sqrt(fan_in) like common MLP defaults; the policy head ×0.01. */
static void init_weights(dt_ppo *p)
{
    layout l = layout_of(p, p->theta);
    init_block(p->rng, l.w1, p->hidden * p->nknobs, 1 / sqrt(p->nknobs));
    init_block(p->rng, l.wp, p->nlogits * p->hidden, 0.01 / sqrt(p->hidden));
    init_block(p->rng, l.wv, p->hidden, 1 / sqrt(p->hidden));
}

static int alloc_buffers(dt_ppo *p)
{
    size_t np = (size_t)p->nparams, cap = (size_t)p->cap, k = (size_t)p->nknobs;
    p->theta = calloc(np, sizeof(double));
    p->grad = calloc(np, sizeof(double));
    p->adam_m = calloc(np, sizeof(double));
    p->adam_v = calloc(np, sizeof(double));
    p->states = calloc(cap * k, sizeof(double));
    p->actions = calloc(cap * k, sizeof(int));
    p->logp = calloc(cap, sizeof(double));
    p->values = calloc(cap, sizeof(double));
    p->adv = calloc(cap, sizeof(double));
    p->ret = calloc(cap, sizeof(double));
    p->perm = calloc(cap, sizeof(int));
    p->h = calloc((size_t)p->hidden, sizeof(double));
    p->dh = calloc((size_t)p->hidden, sizeof(double));
    p->logits = calloc((size_t)p->nlogits, sizeof(double));
    p->probs = calloc((size_t)p->nlogits, sizeof(double));
    p->logprobs = calloc((size_t)p->nlogits, sizeof(double));
    p->dlogits = calloc((size_t)p->nlogits, sizeof(double));
    p->w1t = calloc((size_t)p->hidden * k, sizeof(double));
    p->wpt = calloc((size_t)p->hidden * p->nlogits, sizeof(double));
    p->act_h = calloc(cap * (size_t)p->hidden, sizeof(double));
    p->act_probs = calloc(cap * (size_t)p->nlogits, sizeof(double));
    p->act_logprobs = calloc(cap * (size_t)p->nlogits, sizeof(double));
    return (p->theta && p->grad && p->adam_m && p->adam_v && p->states && p->actions &&
            p->logp && p->values && p->adv && p->ret && p->perm && p->h && p->dh &&
            p->logits && p->probs && p->logprobs && p->dlogits && p->w1t && p->wpt &&
            p->act_h && p->act_probs && p->act_logprobs) ? 0 : DT_ENOMEM;
}

int dt_ppo_new(const dt_ppo_params *cfg, int nknobs, uint64_t seed, dt_ppo **out, dt_error *err)
{
    *out = NULL;
    int rc = check_config(cfg, nknobs, err);
    if (rc)
        return rc;
    dt_ppo *p = calloc(1, sizeof *p);
    if (!p)
        return dt_error_set(err, DT_ENOMEM, "ppo: out of memory");
    p->cfg = *cfg;
    p->nknobs = nknobs;
    p->hidden = cfg->hidden;
    p->nlogits = DT_PPO_NACTIONS * nknobs;
    p->nparams = p->hidden * nknobs + p->hidden + p->nlogits * p->hidden + p->nlogits + p->hidden + 1;
    int every = DT_PPO_ASK_PARAMS / p->nparams;
    p->ask_every = every < 1 ? 1 : every > DT_PPO_MINIBATCH ? DT_PPO_MINIBATCH : every;
    p->cap = cfg->max_steps;
    p->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!p->rng || alloc_buffers(p)) {
        dt_ppo_free(p);
        return dt_error_set(err, DT_ENOMEM, "ppo: out of memory for %d parameters", p->nparams);
    }
    gsl_rng_set(p->rng, (unsigned long)(seed ^ (seed >> 32)) + 1);
    init_weights(p);
    p->transposes_stale = true;
    *out = p;
    return 0;
}

void dt_ppo_free(dt_ppo *p)
{
    if (!p)
        return;
    if (p->rng)
        gsl_rng_free(p->rng);
    free(p->theta); free(p->grad); free(p->adam_m); free(p->adam_v);
    free(p->states); free(p->actions); free(p->logp); free(p->values);
    free(p->adv); free(p->ret); free(p->perm);
    free(p->h); free(p->dh); free(p->logits); free(p->probs); free(p->logprobs); free(p->dlogits);
    free(p->w1t); free(p->wpt);
    free(p->act_h); free(p->act_probs); free(p->act_logprobs);
    free(p);
}

int dt_ppo_ntheta(const dt_ppo *p) { return p->nparams; }
double *dt_ppo_theta(dt_ppo *p)
{
    p->theta_shared = true;
    return p->theta;
}
int dt_ppo_episode_length(const dt_ppo *p) { return p->len; }
void dt_ppo_episode_begin(dt_ppo *p) { p->len = 0; }

/* --- forward ----------------------------------------------------------------- */

/* One 3-way softmax per knob from p->logits into p->probs and p->logprobs
 * (log-sum-exp form: one log per knob, exact for very negative logits). */
static void softmax_per_knob(dt_ppo *p)
{
    for (int k = 0; k < p->nknobs; k++) {
        const double *z = p->logits + DT_PPO_NACTIONS * k;
        double *pr = p->probs + DT_PPO_NACTIONS * k, *lp = p->logprobs + DT_PPO_NACTIONS * k;
        double m = fmax(z[0], fmax(z[1], z[2])), sum = 0;
        for (int j = 0; j < DT_PPO_NACTIONS; j++)
            sum += pr[j] = exp(z[j] - m);
        double lse = m + log(sum);
        for (int j = 0; j < DT_PPO_NACTIONS; j++) {
            pr[j] /= sum;
            lp[j] = z[j] - lse;
        }
    }
}

/* tanh through one exp (libm's tanh goes through the slower expm1); absolute
 * error below 1e-15, and exact ±1 past |z| = 20. */
static double fast_tanh(double z)
{
    if (z > 20)
        return 1;
    if (z < -20)
        return -1;
    return 1 - 2 / (exp(2 * z) + 1);
}

/* Two and four doubles as one value (GCC/Clang vector extensions: one SSE2
 * register, which every x86-64 has, and one AVX register or two SSE2 ones).
 * Element-wise adds and multiplies round exactly as the scalar ones do, so
 * the vector loops below give the same doubles as the scalar loops they
 * replace. */
typedef double v2d __attribute__((vector_size(2 * sizeof(double)), aligned(sizeof(double)), may_alias));
typedef double v4d __attribute__((vector_size(4 * sizeof(double)), aligned(sizeof(double)), may_alias));

#ifdef DT_HAVE_SIMD_CLONES
#define PPO_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define PPO_CLONES
#endif

/* dst[i·rows + j] = src[j·cols + i]. */
static void transpose(const double *src, int rows, int cols, double *dst)
{
    for (int j = 0; j < rows; j++)
        for (int i = 0; i < cols; i++)
            dst[(size_t)i * rows + j] = src[(size_t)j * cols + i];
}

static void refresh_transposes(dt_ppo *p)
{
    if (!p->transposes_stale && !p->theta_shared)
        return;
    layout l = layout_of(p, p->theta);
    transpose(l.w1, p->hidden, p->nknobs, p->w1t);
    transpose(l.wp, p->nlogits, p->hidden, p->wpt);
    p->transposes_stale = false;
}

/* out[j] = b[j] + Σ_i wt[i·rows + j] x[i] for j < rows, each sum in the order
 * of i (wt: the layer's weights input-major). Eight outputs at a time stay
 * in registers for the whole sweep over the inputs. */
static inline __attribute__((always_inline)) void layer(const double *wt, const double *b,
                                                        const double *x, int cols, int rows,
                                                        double *out)
{
    int j = 0;
    for (; j + 8 <= rows; j += 8) {
        v4d a0 = *(const v4d *)(b + j), a1 = *(const v4d *)(b + j + 4);
        const double *w = wt + j;
        for (int i = 0; i < cols; i++, w += rows) {
            const double xi = x[i];
            a0 += *(const v4d *)w * xi;
            a1 += *(const v4d *)(w + 4) * xi;
        }
        *(v4d *)(out + j) = a0, *(v4d *)(out + j + 4) = a1;
    }
    for (; j + 2 <= rows; j += 2) {
        v2d a = *(const v2d *)(b + j);
        const double *w = wt + j;
        for (int i = 0; i < cols; i++, w += rows)
            a += *(const v2d *)w * x[i];
        *(v2d *)(out + j) = a;
    }
    for (; j < rows; j++) {
        double a = b[j];
        for (int i = 0; i < cols; i++)
            a += wt[(size_t)i * rows + j] * x[i];
        out[j] = a;
    }
}

/* Fills h, logits and probs for state; returns V(state). */
PPO_CLONES static double forward(dt_ppo *p, const double *state)
{
    refresh_transposes(p);
    layout l = layout_of(p, p->theta);
    layer(p->w1t, l.b1, state, p->nknobs, p->hidden, p->h);
    for (int i = 0; i < p->hidden; i++)
        p->h[i] = fast_tanh(p->h[i]);
    double v = l.bv[0];
    for (int i = 0; i < p->hidden; i++)
        v += l.wv[i] * p->h[i];
    layer(p->wpt, l.bp, p->h, p->hidden, p->nlogits, p->logits);
    softmax_per_knob(p);
    return v;
}

/* log π(actions) after forward. */
static double log_prob_of(const dt_ppo *p, const int *actions)
{
    double lp = 0;
    for (int k = 0; k < p->nknobs; k++)
        lp += p->logprobs[DT_PPO_NACTIONS * k + actions[k]];
    return lp;
}

/* Entropy of knob k's categorical after forward. */
static double knob_entropy(const dt_ppo *p, int k)
{
    const double *pr = p->probs + DT_PPO_NACTIONS * k, *lp = p->logprobs + DT_PPO_NACTIONS * k;
    return -(pr[0] * lp[0] + pr[1] * lp[1] + pr[2] * lp[2]);
}

/* Summed per-knob entropy after forward. */
static double entropy_of(const dt_ppo *p)
{
    double ent = 0;
    for (int k = 0; k < p->nknobs; k++)
        ent += knob_entropy(p, k);
    return ent;
}

double dt_ppo_value(dt_ppo *p, const double *state)
{
    return forward(p, state);
}

double dt_ppo_log_prob(dt_ppo *p, const double *state, const int *actions)
{
    forward(p, state);
    return log_prob_of(p, actions);
}

static int sample_categorical(gsl_rng *rng, const double *pr)
{
    double u = gsl_rng_uniform(rng);
    if (u < pr[0])
        return 0;
    return u < pr[0] + pr[1] ? 1 : 2;
}

int dt_ppo_act(dt_ppo *p, const double *state, int *actions)
{
    if (p->len >= p->cap)
        return DT_EINVAL;
    double v = forward(p, state);
    for (int k = 0; k < p->nknobs; k++)
        actions[k] = sample_categorical(p->rng, p->probs + DT_PPO_NACTIONS * k);
    int t = p->len++;
    size_t nh = (size_t)p->hidden, nl = (size_t)p->nlogits;
    memcpy(p->act_h + t * nh, p->h, nh * sizeof(double));
    memcpy(p->act_probs + t * nl, p->probs, nl * sizeof(double));
    memcpy(p->act_logprobs + t * nl, p->logprobs, nl * sizeof(double));
    p->rollout_adam_steps = p->adam_steps;
    memcpy(p->states + (size_t)t * p->nknobs, state, (size_t)p->nknobs * sizeof(double));
    memcpy(p->actions + (size_t)t * p->nknobs, actions, (size_t)p->nknobs * sizeof(int));
    p->logp[t] = log_prob_of(p, actions);
    p->values[t] = v;
    return 0;
}

/* --- loss and gradient ----------------------------------------------------- */

/* dL/dlogits of one step into p->dlogits; g_logp is dL/d log π, scale = 1/N. */
static void policy_head_grad(dt_ppo *p, const int *actions, double g_logp, double scale)
{
    double ce = p->cfg.entropy_coef;
    for (int k = 0; k < p->nknobs; k++) {
        const double *pr = p->probs + DT_PPO_NACTIONS * k, *lp = p->logprobs + DT_PPO_NACTIONS * k;
        double hk = knob_entropy(p, k);
        for (int j = 0; j < DT_PPO_NACTIONS; j++) {
            double onehot = j == actions[k] ? 1.0 : 0.0;
            /* d log π / dz = onehot − p; d(−c_e H)/dz = c_e p (log p + H) */
            p->dlogits[DT_PPO_NACTIONS * k + j] =
                scale * (g_logp * (onehot - pr[j]) + ce * pr[j] * (lp[j] + hk));
        }
    }
}

/* Backpropagates p->dlogits and dv through the network into grad. The
 * policy head goes four logits at a time and four hidden units per vector:
 * each dh[i] still takes its terms in the order of the logits, so the sums
 * are those of a logit-at-a-time loop. */
static inline __attribute__((always_inline)) void backward(dt_ppo *p, const double *state,
                                                           double dv, double *grad)
{
    layout l = layout_of(p, p->theta), g = layout_of(p, grad);
    const int nh = p->hidden, nv = nh - nh % 4;
    const double *h = p->h;
    double *dh = p->dh;
    for (int i = 0; i < nh; i++)
        dh[i] = l.wv[i] * dv;
    int j = 0;
    for (; j + 4 <= p->nlogits; j += 4) {
        const double d0 = p->dlogits[j], d1 = p->dlogits[j + 1], d2 = p->dlogits[j + 2],
                     d3 = p->dlogits[j + 3];
        const double *r0 = l.wp + (size_t)j * nh, *r1 = r0 + nh, *r2 = r1 + nh, *r3 = r2 + nh;
        double *g0 = g.wp + (size_t)j * nh, *g1 = g0 + nh, *g2 = g1 + nh, *g3 = g2 + nh;
        g.bp[j] += d0, g.bp[j + 1] += d1, g.bp[j + 2] += d2, g.bp[j + 3] += d3;
        int i = 0;
        for (; i < nv; i += 4) {
            const v4d hv = *(const v4d *)(h + i);
            *(v4d *)(g0 + i) += d0 * hv;
            *(v4d *)(g1 + i) += d1 * hv;
            *(v4d *)(g2 + i) += d2 * hv;
            *(v4d *)(g3 + i) += d3 * hv;
            v4d acc = *(v4d *)(dh + i);
            acc += *(const v4d *)(r0 + i) * d0;
            acc += *(const v4d *)(r1 + i) * d1;
            acc += *(const v4d *)(r2 + i) * d2;
            acc += *(const v4d *)(r3 + i) * d3;
            *(v4d *)(dh + i) = acc;
        }
        for (; i < nh; i++) {
            g0[i] += d0 * h[i], g1[i] += d1 * h[i], g2[i] += d2 * h[i], g3[i] += d3 * h[i];
            dh[i] = (((dh[i] + r0[i] * d0) + r1[i] * d1) + r2[i] * d2) + r3[i] * d3;
        }
    }
    for (; j < p->nlogits; j++) {
        const double d = p->dlogits[j];
        const double *row = l.wp + (size_t)j * nh;
        double *grow = g.wp + (size_t)j * nh;
        g.bp[j] += d;
        int i = 0;
        for (; i < nv; i += 4) {
            *(v4d *)(grow + i) += d * *(const v4d *)(h + i);
            *(v4d *)(dh + i) += *(const v4d *)(row + i) * d;
        }
        for (; i < nh; i++) {
            grow[i] += d * h[i];
            dh[i] += row[i] * d;
        }
    }
    g.bv[0] += dv;
    for (int i = 0; i < nh; i++) {
        g.wv[i] += dv * h[i];
        double dz = dh[i] * (1 - h[i] * h[i]);
        double *grow = g.w1 + (size_t)i * p->nknobs;
        g.b1[i] += dz;
        int k = 0;
        for (; k + 4 <= p->nknobs; k += 4)
            *(v4d *)(grow + k) += dz * *(const v4d *)(state + k);
        for (; k < p->nknobs; k++)
            grow[k] += dz * state[k];
    }
}

/* The loss of dt_ppo_loss. at_rollout: b's rows are rollout steps and θ is
 * the θ they were acted with, so each step's forward pass is the one
 * dt_ppo_act kept (the same doubles) and is copied instead of recomputed.
 * cut (NULL: never): the cancel hook is asked before every ask_every-th
 * step, since one step of a wide network streams its whole policy head and
 * gradient (at 65536 hidden units tens of MB, milliseconds; a minibatch of
 * them, most of a second); when it says stop, *cut is set and the loss and
 * grad are partial. */
PPO_CLONES static double loss(dt_ppo *p, const dt_ppo_batch *b, bool at_rollout, double *grad,
                              dt_ppo_update_stats *breakdown, bool *cut)
{
    if (grad)
        memset(grad, 0, (size_t)p->nparams * sizeof *grad);
    double eps = p->cfg.clip, scale = 1.0 / b->n;
    double lpi = 0, lv = 0, ent = 0;
    for (int s = 0; s < b->n; s++) {
        if (cut && s % p->ask_every == 0 && dt_cancel_now(&p->cancel)) {
            *cut = true;
            return NAN;
        }
        int t = b->index ? b->index[s] : s;
        const double *state = b->states + (size_t)t * p->nknobs;
        const int *act = b->actions + (size_t)t * p->nknobs;
        double v, a = b->advantages[t];
        if (at_rollout) {
            size_t nh = (size_t)p->hidden, nl = (size_t)p->nlogits;
            memcpy(p->h, p->act_h + (size_t)t * nh, nh * sizeof(double));
            memcpy(p->probs, p->act_probs + (size_t)t * nl, nl * sizeof(double));
            memcpy(p->logprobs, p->act_logprobs + (size_t)t * nl, nl * sizeof(double));
            v = p->values[t];
        } else {
            v = forward(p, state);
        }
        double ratio = exp(log_prob_of(p, act) - b->old_logp[t]);
        double clipped = fmin(fmax(ratio, 1 - eps), 1 + eps);
        double s1 = ratio * a, s2 = clipped * a;
        double h = entropy_of(p), verr = v - b->returns[t];
        lpi -= fmin(s1, s2);
        lv += verr * verr;
        ent += h;
        if (grad) {
            double g_logp = s1 <= s2 ? -ratio * a : 0;   /* the clipped branch is constant */
            policy_head_grad(p, act, g_logp, scale);
            backward(p, state, scale * 2 * p->cfg.value_coef * verr, grad);
        }
    }
    lpi *= scale, lv *= scale, ent *= scale;
    if (breakdown) {
        breakdown->policy_loss = lpi;
        breakdown->value_loss = lv;
        breakdown->entropy = ent;
    }
    return lpi + p->cfg.value_coef * lv - p->cfg.entropy_coef * ent;
}

double dt_ppo_loss(dt_ppo *p, const dt_ppo_batch *b, double *grad, dt_ppo_update_stats *breakdown)
{
    return loss(p, b, false, grad, breakdown, NULL);
}

/* --- update ------------------------------------------------------------------ */

void dt_ppo_gae(const double *rewards, const double *values, double last_value, int n,
                double gamma, double lambda, double *adv, double *ret)
{
    double next_value = last_value, running = 0;
    for (int t = n - 1; t >= 0; t--) {
        double delta = rewards[t] + gamma * next_value - values[t];
        running = delta + gamma * lambda * running;
        adv[t] = running;
        ret[t] = running + values[t];
        next_value = values[t];
    }
}

static void normalise(double *x, int n)
{
    if (n < 2)
        return;
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
        mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (x[i] - mean) * (x[i] - mean);
    double sd = sqrt(var / (n - 1));
    for (int i = 0; i < n; i++)
        x[i] = (x[i] - mean) / (sd + 1e-8);
}

static void adam_step(dt_ppo *p)
{
    double norm = 0;
    for (int i = 0; i < p->nparams; i++)
        norm += p->grad[i] * p->grad[i];
    norm = sqrt(norm);
    double gscale = norm > DT_PPO_MAX_GRAD_NORM ? DT_PPO_MAX_GRAD_NORM / norm : 1.0;
    p->adam_steps++;
    double c1 = 1 - pow(ADAM_BETA1, (double)p->adam_steps);
    double c2 = 1 - pow(ADAM_BETA2, (double)p->adam_steps);
    double lr = p->cfg.learning_rate;
    int i = 0;
#ifdef __SSE2__
    /* two parameters a step: the same operations as the scalar loop below */
    for (; i + 2 <= p->nparams; i += 2) {
        v2d g = *(const v2d *)(p->grad + i) * gscale;
        v2d m = ADAM_BETA1 * *(v2d *)(p->adam_m + i) + (1 - ADAM_BETA1) * g;
        v2d v = ADAM_BETA2 * *(v2d *)(p->adam_v + i) + (1 - ADAM_BETA2) * g * g;
        *(v2d *)(p->adam_m + i) = m;
        *(v2d *)(p->adam_v + i) = v;
        v2d root = (v2d)_mm_sqrt_pd((__m128d)(v / c2));
        *(v2d *)(p->theta + i) -= lr * (m / c1) / (root + ADAM_EPS);
    }
#endif
    for (; i < p->nparams; i++) {
        double g = p->grad[i] * gscale;
        p->adam_m[i] = ADAM_BETA1 * p->adam_m[i] + (1 - ADAM_BETA1) * g;
        p->adam_v[i] = ADAM_BETA2 * p->adam_v[i] + (1 - ADAM_BETA2) * g * g;
        p->theta[i] -= lr * (p->adam_m[i] / c1) / (sqrt(p->adam_v[i] / c2) + ADAM_EPS);
    }
    p->transposes_stale = true;
}

static void shuffle(gsl_rng *rng, int *perm, int n)
{
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)gsl_rng_uniform_int(rng, (unsigned long)i + 1);
        int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
}

void dt_ppo_set_cancel(dt_ppo *p, const dt_cancel *c)
{
    p->cancel = c ? *c : (dt_cancel){ 0 };
}

/* One pass over the rollout in shuffled minibatches; false when cancelled
 * (a minibatch cut short takes no Adam step). */
static bool run_epoch(dt_ppo *p, dt_ppo_update_stats *stats)
{
    shuffle(p->rng, p->perm, p->len);
    for (int start = 0; start < p->len; start += DT_PPO_MINIBATCH) {
        int n = p->len - start < DT_PPO_MINIBATCH ? p->len - start : DT_PPO_MINIBATCH;
        dt_ppo_batch b = {
            .n = n, .index = p->perm + start, .states = p->states, .actions = p->actions,
            .old_logp = p->logp, .advantages = p->adv, .returns = p->ret,
        };
        /* until the first Adam step of the update, θ is the rollout's */
        bool at_rollout = !p->theta_shared && p->adam_steps == p->rollout_adam_steps;
        bool cut = false;
        loss(p, &b, at_rollout, p->grad, stats, &cut);
        if (cut)
            return false;
        adam_step(p);
    }
    return true;
}

int dt_ppo_episode_end(dt_ppo *p, const double *rewards, double last_value,
                       dt_ppo_update_stats *stats)
{
    if (p->len < 1)
        return DT_EINVAL;
    dt_ppo_update_stats local;
    dt_ppo_update_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    st->steps = p->len;
    for (int t = 0; t < p->len; t++)
        st->mean_reward += rewards[t] / p->len;
    dt_ppo_gae(rewards, p->values, last_value, p->len, p->cfg.gamma, p->cfg.gae_lambda,
               p->adv, p->ret);
    normalise(p->adv, p->len);
    bool whole = true;
    for (int e = 0; e < p->cfg.epochs && whole; e++)
        whole = run_epoch(p, st);
    p->len = 0;
    return whole ? 0 : DT_ECANCELED;
}
