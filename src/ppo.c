/* ppo.c — actor-critic MLP and its PPO update (see ppo.h for the maths).
 *
 * Parameters live in one flat vector θ laid out as W1 (H×K), b1 (H),
 * Wp (3K×H), bp (3K), wv (H), bv (1); the gradient and both Adam moments use
 * the same layout, so an Adam step is one loop. The forward pass of one state
 * fills the agent's scratch (hidden activations, logits, probabilities); the
 * backward pass of the loss accumulates into a gradient vector in that
 * layout. Episodes are stored in a rollout of max_steps rows allocated once.
 */
#include "ppo_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

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
    dt_cancel cancel;
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
        .value_coef = 1.0, .entropy_coef = 0.1, .episodes = 128, .max_steps = 500, .hidden = 64,
    };
}

static int check_config(const dt_ppo_params *cfg, int nknobs, dt_error *err)
{
    if (nknobs < 1 || nknobs > 64)
        return dt_error_set(err, DT_EINVAL, "ppo: %d knobs (must be 1..64)", nknobs);
    if (cfg->hidden < 1 || cfg->max_steps < 1 || cfg->epochs < 1 || cfg->episodes < 1)
        return dt_error_set(err, DT_EINVAL, "ppo: hidden %d, max_steps %d, epochs %d, episodes %d "
                            "must be positive", cfg->hidden, cfg->max_steps, cfg->epochs, cfg->episodes);
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
    return (p->theta && p->grad && p->adam_m && p->adam_v && p->states && p->actions &&
            p->logp && p->values && p->adv && p->ret && p->perm && p->h && p->dh &&
            p->logits && p->probs && p->logprobs && p->dlogits) ? 0 : DT_ENOMEM;
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
    p->cap = cfg->max_steps;
    p->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!p->rng || alloc_buffers(p)) {
        dt_ppo_free(p);
        return dt_error_set(err, DT_ENOMEM, "ppo: out of memory for %d parameters", p->nparams);
    }
    gsl_rng_set(p->rng, (unsigned long)(seed ^ (seed >> 32)) + 1);
    init_weights(p);
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
    free(p);
}

int dt_ppo_ntheta(const dt_ppo *p) { return p->nparams; }
double *dt_ppo_theta(dt_ppo *p) { return p->theta; }
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

/* out[j] = b[j] + Σ_i w[j·cols + i] x[i], each sum in the order of i. Four
 * rows go together, so their four sums are independent chains rather than
 * one chain of dependent adds (the same operations in the same order: the
 * same doubles as a row at a time). */
static void affine(const double *w, const double *b, const double *x, int rows, int cols, double *out)
{
    int j = 0;
    for (; j + 4 <= rows; j += 4) {
        const double *r0 = w + (size_t)j * cols, *r1 = r0 + cols, *r2 = r1 + cols, *r3 = r2 + cols;
        double z0 = b[j], z1 = b[j + 1], z2 = b[j + 2], z3 = b[j + 3];
        for (int i = 0; i < cols; i++) {
            z0 += r0[i] * x[i];
            z1 += r1[i] * x[i];
            z2 += r2[i] * x[i];
            z3 += r3[i] * x[i];
        }
        out[j] = z0, out[j + 1] = z1, out[j + 2] = z2, out[j + 3] = z3;
    }
    for (; j < rows; j++) {
        const double *row = w + (size_t)j * cols;
        double z = b[j];
        for (int i = 0; i < cols; i++)
            z += row[i] * x[i];
        out[j] = z;
    }
}

/* Fills h, logits and probs for state; returns V(state). */
static double forward(dt_ppo *p, const double *state)
{
    layout l = layout_of(p, p->theta);
    affine(l.w1, l.b1, state, p->hidden, p->nknobs, p->h);
    for (int i = 0; i < p->hidden; i++)
        p->h[i] = fast_tanh(p->h[i]);
    double v;
    affine(l.wv, l.bv, p->h, 1, p->hidden, &v);
    affine(l.wp, l.bp, p->h, p->nlogits, p->hidden, p->logits);
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

/* Backpropagates p->dlogits and dv through the network into grad. */
static void backward(dt_ppo *p, const double *state, double dv, double *grad)
{
    layout l = layout_of(p, p->theta), g = layout_of(p, grad);
    for (int i = 0; i < p->hidden; i++)
        p->dh[i] = l.wv[i] * dv;
    for (int j = 0; j < p->nlogits; j++) {
        double d = p->dlogits[j];
        const double *row = l.wp + j * p->hidden;
        double *grow = g.wp + j * p->hidden;
        g.bp[j] += d;
        for (int i = 0; i < p->hidden; i++) {
            grow[i] += d * p->h[i];
            p->dh[i] += row[i] * d;
        }
    }
    g.bv[0] += dv;
    for (int i = 0; i < p->hidden; i++) {
        g.wv[i] += dv * p->h[i];
        double dz = p->dh[i] * (1 - p->h[i] * p->h[i]);
        double *grow = g.w1 + i * p->nknobs;
        g.b1[i] += dz;
        for (int k = 0; k < p->nknobs; k++)
            grow[k] += dz * state[k];
    }
}

double dt_ppo_loss(dt_ppo *p, const dt_ppo_batch *b, double *grad, dt_ppo_update_stats *breakdown)
{
    if (grad)
        memset(grad, 0, (size_t)p->nparams * sizeof *grad);
    double eps = p->cfg.clip, scale = 1.0 / b->n;
    double lpi = 0, lv = 0, ent = 0;
    for (int s = 0; s < b->n; s++) {
        int t = b->index ? b->index[s] : s;
        const double *state = b->states + (size_t)t * p->nknobs;
        const int *act = b->actions + (size_t)t * p->nknobs;
        double v = forward(p, state), a = b->advantages[t];
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
    for (int i = 0; i < p->nparams; i++) {
        double g = p->grad[i] * gscale;
        p->adam_m[i] = ADAM_BETA1 * p->adam_m[i] + (1 - ADAM_BETA1) * g;
        p->adam_v[i] = ADAM_BETA2 * p->adam_v[i] + (1 - ADAM_BETA2) * g * g;
        p->theta[i] -= lr * (p->adam_m[i] / c1) / (sqrt(p->adam_v[i] / c2) + ADAM_EPS);
    }
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

/* One pass over the rollout in shuffled minibatches; false when cancelled. */
static bool run_epoch(dt_ppo *p, dt_ppo_update_stats *stats)
{
    shuffle(p->rng, p->perm, p->len);
    for (int start = 0; start < p->len; start += DT_PPO_MINIBATCH) {
        if (dt_cancel_now(&p->cancel))
            return false;
        int n = p->len - start < DT_PPO_MINIBATCH ? p->len - start : DT_PPO_MINIBATCH;
        dt_ppo_batch b = {
            .n = n, .index = p->perm + start, .states = p->states, .actions = p->actions,
            .old_logp = p->logp, .advantages = p->adv, .returns = p->ret,
        };
        dt_ppo_loss(p, &b, p->grad, stats);
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
