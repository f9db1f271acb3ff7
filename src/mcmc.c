/* mcmc.c — the affine-invariant ensemble sampler (Goodman & Weare 2010,
 * stretch move, red/blue split as in emcee) and the integrated
 * autocorrelation time.
 *
 * State: current positions and log probabilities of W walkers, the chain of
 * every recorded step, per-walker acceptance counts, a permutation used to
 * split the ensemble, and one proposal vector. A step shuffles the
 * permutation (optionally), takes its first W/2 entries as the moving half
 * and the rest as the complement, moves each walker of the half against a
 * random complement walker, then swaps the roles. Walkers of one half never
 * read each other, so updating them in place is the same as emcee's
 * all-at-once update.
 *
 * The autocorrelation function comes from GSL's in-place radix-2 real FFT of
 * the mean-subtracted series zero-padded to twice the next power of two (so
 * the circular correlation equals the linear one).
 */
#include "mcmc_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fft_halfcomplex.h>
#include <gsl/gsl_fft_real.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

struct dt_mcmc {
    dt_mcmc_params params;
    gsl_rng *rng;
    double *position;     /* walkers × ndim */
    double *log_prob;     /* walkers */
    double *proposal;     /* ndim */
    int *order;           /* walkers: the split permutation */
    long *accepted;       /* walkers */
    long steps_run;       /* steps since the last start (= steps recorded) */
    bool started;
    double *chain;        /* max_steps × walkers × ndim */
    double *fft;          /* 2 × next_pow2(max_steps) */
    double *acf_sum;      /* max_steps */
};

dt_mcmc_params dt_mcmc_params_default(void)
{
    return (dt_mcmc_params){ .walkers = 32, .ndim = 1, .max_steps = 2000,
                             .stretch = 2.0, .randomize_split = true,
                             .max_start_draws = 1000, .seed = 1 };
}

static size_t next_pow2(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

size_t dt_mcmc_integrated_time_work(int n)
{
    return n > 0 ? 2 * next_pow2((size_t)n) : 2;
}

static int check_params(const dt_mcmc_params *p, dt_error *err)
{
    if (p->ndim < 1 || p->walkers < 4 || p->walkers < 2 * p->ndim)
        return dt_error_set(err, DT_EINVAL,
                            "mcmc: %d walkers for %d dimensions; need at least 4 and "
                            "at least twice the dimensions",
                            p->walkers, p->ndim);
    if (p->max_steps < 1 || !(p->stretch > 1) || p->max_start_draws < 1)
        return dt_error_set(err, DT_EINVAL,
                            "mcmc: max_steps %d, stretch %g, max_start_draws %d: need "
                            "max_steps ≥ 1, stretch > 1, max_start_draws ≥ 1",
                            p->max_steps, p->stretch, p->max_start_draws);
    return 0;
}

/* gsl's mt19937 keeps 32 bits of its seed; fold all 64 in (splitmix64). */
static unsigned long fold_seed(uint64_t seed)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (unsigned long)((z ^ (z >> 32)) & 0xffffffffUL);
}

static bool alloc_buffers(dt_mcmc *s)
{
    size_t w = (size_t)s->params.walkers, d = (size_t)s->params.ndim;
    size_t steps = (size_t)s->params.max_steps;
    s->position = malloc(w * d * sizeof *s->position);
    s->log_prob = malloc(w * sizeof *s->log_prob);
    s->proposal = malloc(d * sizeof *s->proposal);
    s->order = malloc(w * sizeof *s->order);
    s->accepted = calloc(w, sizeof *s->accepted);
    s->chain = malloc(steps * w * d * sizeof *s->chain);
    s->fft = malloc(dt_mcmc_integrated_time_work((int)steps) * sizeof *s->fft);
    s->acf_sum = malloc(steps * sizeof *s->acf_sum);
    return s->position && s->log_prob && s->proposal && s->order && s->accepted &&
           s->chain && s->fft && s->acf_sum;
}

int dt_mcmc_new(const dt_mcmc_params *params, dt_mcmc **out, dt_error *err)
{
    *out = NULL;
    int rc = check_params(params, err);
    if (rc)
        return rc;
    gsl_set_error_handler_off();
    dt_mcmc *s = calloc(1, sizeof *s);
    if (!s)
        return dt_error_set(err, DT_ENOMEM, "mcmc: out of memory");
    s->params = *params;
    s->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!s->rng || !alloc_buffers(s))
        goto fail;
    dt_mcmc_seed(s, params->seed);
    *out = s;
    return 0;
fail:
    dt_mcmc_free(s);
    return dt_error_set(err, DT_ENOMEM, "mcmc: out of memory for %d walkers × %d steps",
                        params->walkers, params->max_steps);
}

void dt_mcmc_free(dt_mcmc *sampler)
{
    if (!sampler)
        return;
    if (sampler->rng)
        gsl_rng_free(sampler->rng);
    free(sampler->position);
    free(sampler->log_prob);
    free(sampler->proposal);
    free(sampler->order);
    free(sampler->accepted);
    free(sampler->chain);
    free(sampler->fft);
    free(sampler->acf_sum);
    free(sampler);
}

void dt_mcmc_seed(dt_mcmc *sampler, uint64_t seed)
{
    sampler->params.seed = seed;
    gsl_rng_set(sampler->rng, fold_seed(seed));
}

static double safe_log_prob(dt_mcmc_log_prob_fn log_prob, void *ctx, const double *theta)
{
    double lp = log_prob(theta, ctx);
    return isnan(lp) ? -INFINITY : lp;
}

static void reset_chain(dt_mcmc *s)
{
    s->steps_run = 0;
    memset(s->accepted, 0, (size_t)s->params.walkers * sizeof *s->accepted);
    for (int k = 0; k < s->params.walkers; k++)
        s->order[k] = k;
    s->started = true;
}

/* Draws walker k around center until its log probability is finite. */
static bool draw_in_ball(dt_mcmc *s, int k, const double *center, const double *scale,
                         dt_mcmc_log_prob_fn log_prob, void *ctx)
{
    int d = s->params.ndim;
    double *x = s->position + (size_t)k * d;
    for (int draw = 0; draw < s->params.max_start_draws; draw++) {
        for (int i = 0; i < d; i++)
            x[i] = center[i] + scale[i] * gsl_ran_gaussian_ziggurat(s->rng, 1.0);
        s->log_prob[k] = safe_log_prob(log_prob, ctx, x);
        if (s->log_prob[k] > -INFINITY)
            return true;
    }
    return false;
}

int dt_mcmc_start_ball(dt_mcmc *sampler, const double *center, const double *scale,
                       dt_mcmc_log_prob_fn log_prob, void *ctx, dt_error *err)
{
    if (!center || !scale || !log_prob)
        return dt_error_set(err, DT_EINVAL, "mcmc: start needs a centre, scales and a "
                                            "log probability");
    sampler->started = false;
    for (int k = 0; k < sampler->params.walkers; k++) {
        if (!draw_in_ball(sampler, k, center, scale, log_prob, ctx))
            return dt_error_set(err, DT_EFAIL,
                                "mcmc: walker %d found no finite log probability in %d "
                                "draws around the centre",
                                k, sampler->params.max_start_draws);
    }
    reset_chain(sampler);
    return 0;
}

int dt_mcmc_start(dt_mcmc *sampler, const double *positions,
                  dt_mcmc_log_prob_fn log_prob, void *ctx, dt_error *err)
{
    int w = sampler->params.walkers, d = sampler->params.ndim;
    sampler->started = false;
    if (!positions || !log_prob)
        return dt_error_set(err, DT_EINVAL, "mcmc: start needs positions and a log "
                                            "probability");
    memcpy(sampler->position, positions, (size_t)w * d * sizeof *positions);
    for (int k = 0; k < w; k++) {
        sampler->log_prob[k] =
            safe_log_prob(log_prob, ctx, sampler->position + (size_t)k * d);
        if (sampler->log_prob[k] == -INFINITY)
            return dt_error_set(err, DT_EINVAL,
                                "mcmc: walker %d starts where the log probability is -inf",
                                k);
    }
    reset_chain(sampler);
    return 0;
}

/* Moves walker j against walker `partner` (stretch move). */
static void stretch_walker(dt_mcmc *s, int j, int partner, dt_mcmc_log_prob_fn log_prob,
                           void *ctx)
{
    int d = s->params.ndim;
    double a = s->params.stretch;
    double *x = s->position + (size_t)j * d;
    const double *xc = s->position + (size_t)partner * d;
    double root_z = (a - 1.0) * gsl_rng_uniform(s->rng) + 1.0;
    double z = root_z * root_z / a;
    for (int i = 0; i < d; i++)
        s->proposal[i] = xc[i] + z * (x[i] - xc[i]);
    double lp = safe_log_prob(log_prob, ctx, s->proposal);
    double log_accept = (d - 1) * log(z) + lp - s->log_prob[j];
    if (log(gsl_rng_uniform_pos(s->rng)) < log_accept) {
        memcpy(x, s->proposal, (size_t)d * sizeof *x);
        s->log_prob[j] = lp;
        s->accepted[j]++;
    }
}

/* Moves every walker of order[first .. first+count) against order[other ..
 * other+other_count). */
static void move_half(dt_mcmc *s, int first, int count, int other, int other_count,
                      dt_mcmc_log_prob_fn log_prob, void *ctx)
{
    for (int m = 0; m < count; m++) {
        int partner = s->order[other + (int)gsl_rng_uniform_int(s->rng,
                                                                 (unsigned long)other_count)];
        stretch_walker(s, s->order[first + m], partner, log_prob, ctx);
    }
}

static void record_step(dt_mcmc *s)
{
    size_t w = (size_t)s->params.walkers, d = (size_t)s->params.ndim;
    size_t t = (size_t)s->steps_run;
    memcpy(s->chain + t * w * d, s->position, w * d * sizeof *s->chain);
    s->steps_run++;
}

int dt_mcmc_run(dt_mcmc *sampler, int steps, dt_mcmc_log_prob_fn log_prob, void *ctx,
                dt_error *err)
{
    if (!sampler->started || !log_prob)
        return dt_error_set(err, DT_EINVAL, "mcmc: run before start");
    if (steps < 0 || sampler->steps_run + steps > sampler->params.max_steps)
        return dt_error_set(err, DT_EINVAL,
                            "mcmc: %d more steps would pass the chain capacity %d",
                            steps, sampler->params.max_steps);
    int w = sampler->params.walkers, half = w / 2;
    for (int t = 0; t < steps; t++) {
        if (sampler->params.randomize_split)
            gsl_ran_shuffle(sampler->rng, sampler->order, (size_t)w, sizeof(int));
        move_half(sampler, 0, half, half, w - half, log_prob, ctx);
        move_half(sampler, half, w - half, 0, half, log_prob, ctx);
        record_step(sampler);
    }
    return 0;
}

int dt_mcmc_steps(const dt_mcmc *sampler)
{
    return (int)sampler->steps_run;
}

int dt_mcmc_walkers(const dt_mcmc *sampler)
{
    return sampler->params.walkers;
}

int dt_mcmc_ndim(const dt_mcmc *sampler)
{
    return sampler->params.ndim;
}

const double *dt_mcmc_chain(const dt_mcmc *sampler)
{
    return sampler->chain;
}

double dt_mcmc_acceptance_fraction(const dt_mcmc *sampler, int walker)
{
    if (walker < 0 || walker >= sampler->params.walkers || sampler->steps_run == 0)
        return 0.0;
    return (double)sampler->accepted[walker] / (double)sampler->steps_run;
}

/* --- autocorrelation ----------------------------------------------------------------- */

/* Writes the normalised autocorrelation function of the series to acf[0..n).
 * fft holds dt_mcmc_integrated_time_work(n) doubles (acf may alias it).
 * Returns 0, DT_EINVAL for a constant series, DT_ELIB when GSL fails. */
static int autocorrelation(const double *series, int n, int stride, double *fft,
                           double *acf)
{
    size_t len = dt_mcmc_integrated_time_work(n);
    double mean = 0;
    bool constant = true;
    for (int t = 0; t < n; t++) {
        mean += series[(size_t)t * stride];
        constant = constant && series[(size_t)t * stride] == series[0];
    }
    if (constant)
        return DT_EINVAL;
    mean /= n;
    for (int t = 0; t < n; t++)
        fft[t] = series[(size_t)t * stride] - mean;
    memset(fft + n, 0, (len - (size_t)n) * sizeof *fft);
    if (gsl_fft_real_radix2_transform(fft, 1, len) != GSL_SUCCESS)
        return DT_ELIB;
    /* halfcomplex layout: re_k at [k] (k ≤ len/2), im_k at [len − k] */
    fft[0] *= fft[0];
    fft[len / 2] *= fft[len / 2];
    for (size_t k = 1; k < len / 2; k++) {
        fft[k] = fft[k] * fft[k] + fft[len - k] * fft[len - k];
        fft[len - k] = 0;
    }
    if (gsl_fft_halfcomplex_radix2_inverse(fft, 1, len) != GSL_SUCCESS)
        return DT_ELIB;
    double c0 = fft[0];
    if (!(c0 > 0))
        return DT_EINVAL;
    for (int t = 0; t < n; t++)
        acf[t] = fft[t] / c0;
    return 0;
}

/* τ(M) = 2 Σ_{t ≤ M} ρ(t) − 1 at the first M with M ≥ c τ(M) (else n − 1). */
static double windowed_tau(const double *acf, int n, double c)
{
    double sum = 0, tau = 1;
    for (int m = 0; m < n; m++) {
        sum += acf[m];
        tau = 2 * sum - 1;
        if (m >= c * tau)
            return tau;
    }
    return tau;
}

static int finish_tau(double tau, int n, double tol, double *out, dt_error *err)
{
    *out = tau;
    if (tol > 0 && n < tol * tau)
        return dt_error_set(err, DT_EFAIL,
                            "autocorrelation: %d steps is shorter than %g times tau %.1f",
                            n, tol, tau);
    return 0;
}

static int acf_error(int rc, dt_error *err)
{
    if (rc == DT_EINVAL)
        return dt_error_set(err, rc, "autocorrelation: the series is constant");
    return dt_error_set(err, rc, "autocorrelation: GSL's FFT failed");
}

int dt_mcmc_integrated_time(const double *series, int n, int stride, double c,
                            double tol, double *work, double *tau, dt_error *err)
{
    if (!series || !work || n < 2 || stride < 1 || !(c > 0))
        return dt_error_set(err, DT_EINVAL,
                            "autocorrelation: need a series of at least 2, stride ≥ 1, "
                            "c > 0 (n %d, stride %d, c %g)",
                            n, stride, c);
    int rc = autocorrelation(series, n, stride, work, work);
    if (rc)
        return acf_error(rc, err);
    return finish_tau(windowed_tau(work, n, c), n, tol, tau, err);
}

int dt_mcmc_chain_integrated_time(dt_mcmc *sampler, int dim, int discard, double c,
                                  double tol, double *tau, dt_error *err)
{
    int w = sampler->params.walkers, d = sampler->params.ndim;
    int n = (int)sampler->steps_run - discard;
    if (dim < 0 || dim >= d || discard < 0 || n < 2 || !(c > 0))
        return dt_error_set(err, DT_EINVAL,
                            "autocorrelation: dim %d, discard %d of %ld steps, c %g",
                            dim, discard, sampler->steps_run, c);
    memset(sampler->acf_sum, 0, (size_t)n * sizeof *sampler->acf_sum);
    for (int k = 0; k < w; k++) {
        const double *series = sampler->chain + ((size_t)discard * w + k) * d + dim;
        int rc = autocorrelation(series, n, w * d, sampler->fft, sampler->fft);
        if (rc)
            return acf_error(rc, err);
        for (int t = 0; t < n; t++)
            sampler->acf_sum[t] += sampler->fft[t] / w;
    }
    return finish_tau(windowed_tau(sampler->acf_sum, n, c), n, tol, tau, err);
}
