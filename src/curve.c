/* curve.c — learning-curve families, their sum of squares, and the bounded
 * Levenberg–Marquardt fit.
 *
 * Each family is a row of small functions (value, gradient, monotonicity,
 * bounds, level); the fit is family-agnostic: GSL's multifit_nlinear works
 * in unbounded coordinates u with θ = lo + (hi − lo)(1 + sin u)/2, and the
 * Jacobian is the family's analytic gradient times dθ/du. The GSL workspace
 * is sized for `capacity` rows; shorter histories pad the extra rows with
 * zero residuals and zero Jacobian rows, which change neither the cost nor
 * the step, so one workspace serves every history length up to capacity.
 *
 * The log-power sum of squares is the sampler's inner loop (10 walkers ×
 * 500 steps × every point), so it has a vector path: eight points at a time
 * with GCC vector extensions and a branch-free exp (Cody–Waite reduction to
 * |r| ≤ ln2/2, degree-12 Taylor polynomial by Estrin's scheme, 2^k built in
 * the exponent bits), cloned for AVX-512, AVX2 and baseline x86-64.
 */
#include "curve_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>

#include "dtune/util.h"

/* --- families --------------------------------------------------------------- */

static const char *const family_names[DT_CURVE_COUNT] = {
    "log_power", "pow4", "log_linear",
};

static const int family_params[DT_CURVE_COUNT] = { 3, 4, 2 };

const char *dt_curve_name(dt_curve_family family)
{
    if ((unsigned)family >= DT_CURVE_COUNT)
        return "?";
    return family_names[family];
}

const char *dt_curve_family_at(int i)
{
    return i >= 0 && i < DT_CURVE_COUNT ? family_names[i] : NULL;
}

int dt_curve_parse(const char *name, dt_curve_family *family, dt_error *err)
{
    char known[64];
    for (int f = 0; name && f < DT_CURVE_COUNT; f++) {
        if (strcmp(name, family_names[f]) == 0) {
            *family = (dt_curve_family)f;
            return 0;
        }
    }
    dt_names_join(dt_curve_family_at, known, sizeof known);
    return dt_error_set(err, DT_EINVAL, "curve family '%s' is not one of %s",
                        name ? name : "(null)", known);
}

int dt_curve_param_count(dt_curve_family family)
{
    if ((unsigned)family >= DT_CURVE_COUNT)
        return 0;
    return family_params[family];
}

/* 1 / (1 + e^s) without overflow for large |s|. */
static double inv_one_plus_exp(double s)
{
    if (s > 0) {
        double e = exp(-s);
        return e / (1.0 + e);
    }
    return 1.0 / (1.0 + exp(s));
}

/* f(x | θ) given ln x as well, so callers with precomputed logs skip log(). */
static double eval_at(dt_curve_family family, const double *theta, double x, double log_x)
{
    switch (family) {
    case DT_CURVE_LOG_POWER:
        return theta[0] * inv_one_plus_exp(theta[2] * (log_x - theta[1]));
    case DT_CURVE_POW4: {
        double w = theta[0] * x + theta[1];
        return w > 0 ? theta[2] - exp(-theta[3] * log(w)) : NAN;
    }
    case DT_CURVE_LOG_LINEAR:
        return theta[0] * log_x + theta[1];
    default:
        return NAN;
    }
}

double dt_curve_eval(dt_curve_family family, const double *theta, double x)
{
    return eval_at(family, theta, x, log(x));
}

/* f = a p with p = 1/(1 + e^s), s = c (ln x − b); ∂p/∂s = −p q, q = 1 − p. */
static void log_power_gradient(const double *theta, double log_x, double *grad)
{
    double d = log_x - theta[1];
    double s = theta[2] * d;
    double e = exp(-fabs(s));               /* one exp gives p and q stably */
    double p = s > 0 ? e / (1.0 + e) : 1.0 / (1.0 + e);
    double q = s > 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
    double apq = theta[0] * p * q;
    grad[0] = p;
    grad[1] = apq * theta[2];
    grad[2] = -apq * d;
}

/* f = c − g with g = w^(−α), w = a x + b. */
static void pow4_gradient(const double *theta, double x, double *grad)
{
    double w = theta[0] * x + theta[1];
    if (!(w > 0)) {
        for (int j = 0; j < 4; j++)
            grad[j] = NAN;
        return;
    }
    double lw = log(w);
    double g = exp(-theta[3] * lw);
    grad[0] = theta[3] * x * g / w;
    grad[1] = theta[3] * g / w;
    grad[2] = 1.0;
    grad[3] = g * lw;
}

static void gradient_at(dt_curve_family family, const double *theta, double x,
                        double log_x, double *grad)
{
    switch (family) {
    case DT_CURVE_LOG_POWER:
        log_power_gradient(theta, log_x, grad);
        break;
    case DT_CURVE_POW4:
        pow4_gradient(theta, x, grad);
        break;
    case DT_CURVE_LOG_LINEAR:
        grad[0] = log_x;
        grad[1] = 1.0;
        break;
    default:
        break;
    }
}

void dt_curve_gradient(dt_curve_family family, const double *theta, double x,
                       double *grad)
{
    gradient_at(family, theta, x, log(x), grad);
}

int dt_curve_level_param(dt_curve_family family)
{
    static const int level_param[DT_CURVE_COUNT] = { 0, 2, 1 };
    return (unsigned)family < DT_CURVE_COUNT ? level_param[family] : -1;
}

bool dt_curve_increasing(dt_curve_family family, const double *theta)
{
    switch (family) {
    case DT_CURVE_LOG_POWER:
        return theta[0] > 0 && theta[2] < 0;
    case DT_CURVE_POW4:
        return theta[0] > 0 && theta[0] + theta[1] > 0 && theta[3] > 0;
    case DT_CURVE_LOG_LINEAR:
        return theta[0] > 0;
    default:
        return false;
    }
}

void dt_curve_default_bounds(dt_curve_family family, double level_max,
                             double *lo, double *hi)
{
    /* log power: level a, log half-point b (e^b trials), steepness c.
     * pow4: scale a, offset b, level c, exponent α. log linear: slope a,
     * intercept b. Wide enough for any best-so-far curve over 1..1e6 trials. */
    static const double box[DT_CURVE_COUNT][DT_CURVE_MAX_PARAMS][2] = {
        { { 0, 1 }, { -10, 20 }, { -10, 10 }, { 0, 0 } },
        { { 1e-4, 1e3 }, { 0, 1e3 }, { 0, 1 }, { -4, 4 } },
        { { -1, 1 }, { -1, 1 }, { 0, 0 }, { 0, 0 } },
    };
    if ((unsigned)family >= DT_CURVE_COUNT)
        return;
    for (int j = 0; j < family_params[family]; j++) {
        lo[j] = box[family][j][0];
        hi[j] = box[family][j][1];
    }
    hi[dt_curve_level_param(family)] = level_max;
    if (family == DT_CURVE_LOG_LINEAR) {
        lo[0] = -level_max;
        hi[0] = level_max;
        lo[1] = -level_max;
    }
}

/* log power: a up to its bound, then b down (an earlier half-point) with a
 * at its bound: a / (1 + e^(c (ln x − b))) = want  ⇔  b = ln x − ln(a/want − 1)/c. */
static int lift_log_power(double *theta, double x, double want, const double *lo,
                          const double *hi)
{
    double g = inv_one_plus_exp(theta[2] * (log(x) - theta[1]));
    if (g > 0 && want / g <= hi[0]) {
        theta[0] = want / g;
        return 0;
    }
    if (!(theta[2] < 0) || !(want < hi[0]))
        return DT_EFAIL;
    double b = log(x) - log(hi[0] / want - 1.0) / theta[2];
    b -= 1e-9 * (1.0 + fabs(b));
    if (!(b >= lo[1]))
        return DT_EFAIL;
    theta[0] = hi[0];
    theta[1] = b;
    return 0;
}

/* pow4: the level c up to its bound, then the scale a up until
 * (a x + b)^(−α) ≤ c − want. */
static int lift_pow4(double *theta, double x, double want, const double *hi)
{
    double f = dt_curve_eval(DT_CURVE_POW4, theta, x);
    if (theta[2] + (want - f) <= hi[2]) {
        theta[2] += want - f;
        return 0;
    }
    if (!(theta[3] > 0) || !(want < hi[2]))
        return DT_EFAIL;
    double w = pow(hi[2] - want, -1.0 / theta[3]) * (1.0 + 1e-9);
    double a = (w - theta[1]) / x;
    if (!(a >= theta[0] && a <= hi[0]))
        return DT_EFAIL;
    theta[0] = a;
    theta[2] = hi[2];
    return 0;
}

/* log linear: the intercept b up to its bound, then the slope a. */
static int lift_log_linear(double *theta, double x, double want, const double *hi)
{
    double f = dt_curve_eval(DT_CURVE_LOG_LINEAR, theta, x);
    if (theta[1] + (want - f) <= hi[1]) {
        theta[1] += want - f;
        return 0;
    }
    double a = (want - hi[1]) / log(x);
    if (!(log(x) > 0) || !(a <= hi[0]))
        return DT_EFAIL;
    theta[0] = a;
    theta[1] = hi[1];
    return 0;
}

int dt_curve_lift(dt_curve_family family, double *theta, double x, double target,
                  const double *lo, const double *hi)
{
    double f = dt_curve_eval(family, theta, x);
    if (f >= target)
        return 0;
    if (!isfinite(f) || !isfinite(target))
        return DT_EFAIL;
    double want = target + 1e-12 * fabs(target);
    size_t bytes = (size_t)dt_curve_param_count(family) * sizeof *theta;
    double saved[DT_CURVE_MAX_PARAMS];
    memcpy(saved, theta, bytes);
    int rc = family == DT_CURVE_LOG_POWER ? lift_log_power(theta, x, want, lo, hi)
             : family == DT_CURVE_POW4    ? lift_pow4(theta, x, want, hi)
                                          : lift_log_linear(theta, x, want, hi);
    if (rc || !(dt_curve_eval(family, theta, x) >= target)) {
        memcpy(theta, saved, bytes);
        return DT_EFAIL;
    }
    return 0;
}

/* --- sum of squares ----------------------------------------------------------- */

#define VEC_LEN 8
typedef double vec8 __attribute__((vector_size(VEC_LEN * sizeof(double))));
typedef long long ivec8 __attribute__((vector_size(VEC_LEN * sizeof(long long))));

/* One clone per x86-64 level where the compiler can (DT_HAVE_SIMD_CLONES,
 * util.h). The inner loop allows FMA contraction (it only makes the
 * polynomial more accurate) and gains about 30 %. */
#ifdef DT_HAVE_SIMD_CLONES
#define DT_SIMD_CLONES                                                           \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), \
                   optimize("fp-contract=fast")))
#else
#define DT_SIMD_CLONES
#endif

/* *v = e^(*v) for |*v| ≤ 708, relative error below 4e-16. */
static inline __attribute__((always_inline)) void exp_vec8(vec8 *v)
{
    const double round_shift = 0x1.8p52;   /* adding it rounds to an integer */
    const double ln2_hi = 0x1.62e42fee00000p-1, ln2_lo = 0x1.a39ef35793c76p-33;
    vec8 x = *v;
    vec8 k = x * 0x1.71547652b82fep0 + round_shift;
    ivec8 k_bits;
    memcpy(&k_bits, &k, sizeof k_bits);
    k -= round_shift;
    vec8 r = (x - k * ln2_hi) - k * ln2_lo;
    vec8 r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    vec8 p01 = 1.0 + r, p23 = 1.0 / 2 + r * (1.0 / 6);
    vec8 p45 = 1.0 / 24 + r * (1.0 / 120), p67 = 1.0 / 720 + r * (1.0 / 5040);
    vec8 p89 = 1.0 / 40320 + r * (1.0 / 362880);
    vec8 p1011 = 1.0 / 3628800 + r * (1.0 / 39916800);
    vec8 q0 = p01 + r2 * p23, q1 = p45 + r2 * p67, q2 = p89 + r2 * p1011;
    vec8 poly = (q0 + r4 * q1) + r8 * (q2 + r4 * (1.0 / 479001600));
    ivec8 scale_bits = (k_bits + 1023) << 52;   /* low bits of k_bits hold k */
    vec8 scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    *v = poly * scale;
}

DT_SIMD_CLONES
static double log_power_sse_vec(const double *log_x, const double *y, int n,
                                double a, double b, double c)
{
    vec8 acc = { 0 };
    int i = 0;
    for (; i + VEC_LEN <= n; i += VEC_LEN) {
        vec8 lx, obs;
        memcpy(&lx, log_x + i, sizeof lx);
        memcpy(&obs, y + i, sizeof obs);
        vec8 t = c * (lx - b);
        exp_vec8(&t);
        vec8 r = obs - a / (1.0 + t);
        acc += r * r;
    }
    double sse = 0;
    for (int k = 0; k < VEC_LEN; k++)
        sse += acc[k];
    for (; i < n; i++) {
        double r = y[i] - a * inv_one_plus_exp(c * (log_x[i] - b));
        sse += r * r;
    }
    return sse;
}

static double log_power_sse(const double *theta, const dt_curve_points *pts)
{
    const double *lx = pts->log_x;
    double a = theta[0], b = theta[1], c = theta[2];
    double s_first = fabs(c * (lx[0] - b)), s_last = fabs(c * (lx[pts->n - 1] - b));
    if (fmax(s_first, s_last) <= 700)   /* log_x is increasing, so s is monotone */
        return log_power_sse_vec(lx, pts->y, pts->n, a, b, c);
    double sse = 0;
    for (int i = 0; i < pts->n; i++) {
        double r = pts->y[i] - a * inv_one_plus_exp(c * (lx[i] - b));
        sse += r * r;
    }
    return sse;
}

double dt_curve_sse(dt_curve_family family, const double *theta,
                    const dt_curve_points *pts)
{
    if (pts->n <= 0)
        return 0;
    if (family == DT_CURVE_LOG_POWER)
        return log_power_sse(theta, pts);
    double sse = 0;
    for (int i = 0; i < pts->n; i++) {
        double r = pts->y[i] - eval_at(family, theta, pts->x[i], pts->log_x[i]);
        sse += r * r;
    }
    return isnan(sse) ? INFINITY : sse;
}

/* --- start values --------------------------------------------------------------- */

#define MAX_CANDIDATES 48
#define FIT_RETRIES 3        /* extra LM runs when none has converged */
#define LEVEL_SAMPLE 64      /* points used to solve a candidate's level */

typedef struct candidate_set {
    int count;
    double theta[MAX_CANDIDATES][DT_CURVE_MAX_PARAMS];
    double sse[MAX_CANDIDATES];
} candidate_set;

/* Indices of up to LEVEL_SAMPLE evenly spread points. */
static int level_sample_step(int n)
{
    return n > LEVEL_SAMPLE ? (n + LEVEL_SAMPLE - 1) / LEVEL_SAMPLE : 1;
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Moves θ strictly inside the box so that asin(·) of it is finite and LM
 * starts with a non-zero derivative in every coordinate. */
static void clamp_inside(int p, double *theta, const double *lo, const double *hi)
{
    for (int j = 0; j < p; j++) {
        double margin = 1e-6 * (hi[j] - lo[j]);
        theta[j] = clamp(theta[j], lo[j] + margin, hi[j] - margin);
    }
}

/* log power: for each (b, c) on a grid, a = Σ y p / Σ p² on a subsample. */
static void log_power_candidates(const dt_curve_points *pts, const double *lo,
                                 const double *hi, candidate_set *set)
{
    static const double steepness[] = { -0.3, -0.6, -1.2, -2.4, -4.8 };
    const int half_points = 8;
    double b_first = -4, b_last = pts->log_x[pts->n - 1] + 1;
    int step = level_sample_step(pts->n);
    for (int ib = 0; ib < half_points; ib++) {
        double b = b_first + (b_last - b_first) * ib / (half_points - 1);
        for (size_t ic = 0; ic < sizeof steepness / sizeof steepness[0]; ic++) {
            double syp = 0, spp = 0;
            for (int i = 0; i < pts->n; i += step) {
                double p = inv_one_plus_exp(steepness[ic] * (pts->log_x[i] - b));
                syp += pts->y[i] * p;
                spp += p * p;
            }
            double *theta = set->theta[set->count++];
            theta[0] = spp > 0 ? syp / spp : hi[0];
            theta[1] = b;
            theta[2] = steepness[ic];
            clamp_inside(3, theta, lo, hi);
        }
    }
}

/* pow4: for each (a, α) on a grid with b = 1, c = mean(y + (a x + b)^(−α)). */
static void pow4_candidates(const dt_curve_points *pts, const double *lo,
                            const double *hi, candidate_set *set)
{
    static const double scales[] = { 0.05, 0.3, 2, 12, 80 };
    static const double exponents[] = { 0.15, 0.4, 1, 2.5 };
    int step = level_sample_step(pts->n);
    for (size_t ia = 0; ia < sizeof scales / sizeof scales[0]; ia++) {
        for (size_t ie = 0; ie < sizeof exponents / sizeof exponents[0]; ie++) {
            double sum = 0;
            int count = 0;
            for (int i = 0; i < pts->n; i += step, count++)
                sum += pts->y[i] + pow(scales[ia] * pts->x[i] + 1, -exponents[ie]);
            double *theta = set->theta[set->count++];
            theta[0] = scales[ia];
            theta[1] = 1;
            theta[2] = sum / count;
            theta[3] = exponents[ie];
            clamp_inside(4, theta, lo, hi);
        }
    }
}

/* log linear: ordinary least squares in ln x. */
static void log_linear_candidates(const dt_curve_points *pts, const double *lo,
                                  const double *hi, candidate_set *set)
{
    double mx = 0, my = 0, sxy = 0, sxx = 0;
    for (int i = 0; i < pts->n; i++) {
        mx += pts->log_x[i];
        my += pts->y[i];
    }
    mx /= pts->n;
    my /= pts->n;
    for (int i = 0; i < pts->n; i++) {
        double dx = pts->log_x[i] - mx;
        sxy += dx * (pts->y[i] - my);
        sxx += dx * dx;
    }
    double *theta = set->theta[set->count++];
    theta[0] = sxx > 0 ? sxy / sxx : 0;
    theta[1] = my - theta[0] * mx;
    clamp_inside(2, theta, lo, hi);
}

static void make_candidates(dt_curve_family family, const dt_curve_points *pts,
                            const double *lo, const double *hi, candidate_set *set)
{
    set->count = 0;
    if (family == DT_CURVE_LOG_POWER)
        log_power_candidates(pts, lo, hi, set);
    else if (family == DT_CURVE_POW4)
        pow4_candidates(pts, lo, hi, set);
    else
        log_linear_candidates(pts, lo, hi, set);
    for (int k = 0; k < set->count; k++)
        set->sse[k] = dt_curve_sse(family, set->theta[k], pts);
}

/* Index of the lowest-cost candidate not yet used, or −1. */
static int take_best_candidate(candidate_set *set)
{
    int best = -1;
    for (int k = 0; k < set->count; k++) {
        if (isfinite(set->sse[k]) && (best < 0 || set->sse[k] < set->sse[best]))
            best = k;
    }
    if (best >= 0)
        set->sse[best] = INFINITY;
    return best;
}

/* --- fitter ------------------------------------------------------------------------ */

struct dt_curve_fitter {
    dt_curve_family family;
    int p;
    int capacity;
    dt_curve_fit_params params;
    gsl_multifit_nlinear_workspace *ws;
    gsl_multifit_nlinear_fdf fdf;
    gsl_vector *u0;
    /* the current fit, read by the GSL callbacks */
    const dt_curve_points *pts;
    double lo[DT_CURVE_MAX_PARAMS], hi[DT_CURVE_MAX_PARAMS];
};

dt_curve_fit_params dt_curve_fit_params_default(void)
{
    return (dt_curve_fit_params){ .max_iter = 100, .starts = 1, .xtol = 1e-8,
                                  .gtol = 1e-8 };
}

static void theta_from_u(const dt_curve_fitter *ft, const gsl_vector *u, double *theta)
{
    for (int j = 0; j < ft->p; j++) {
        double half = 0.5 * (ft->hi[j] - ft->lo[j]);
        theta[j] = ft->lo[j] + half * (1.0 + sin(gsl_vector_get(u, j)));
    }
}

static void u_from_theta(const dt_curve_fitter *ft, const double *theta, gsl_vector *u)
{
    for (int j = 0; j < ft->p; j++) {
        double range = ft->hi[j] - ft->lo[j];
        double s = range > 0 ? 2.0 * (theta[j] - ft->lo[j]) / range - 1.0 : 0.0;
        gsl_vector_set(u, j, asin(clamp(s, -1.0, 1.0)));
    }
}

static int fit_residuals(const gsl_vector *u, void *ctx, gsl_vector *r)
{
    const dt_curve_fitter *ft = ctx;
    double theta[DT_CURVE_MAX_PARAMS];
    theta_from_u(ft, u, theta);
    const dt_curve_points *pts = ft->pts;
    for (int i = 0; i < pts->n; i++) {
        double res = eval_at(ft->family, theta, pts->x[i], pts->log_x[i]) - pts->y[i];
        if (!isfinite(res))
            return GSL_EDOM;
        gsl_vector_set(r, i, res);
    }
    for (int i = pts->n; i < ft->capacity; i++)
        gsl_vector_set(r, i, 0.0);
    return GSL_SUCCESS;
}

static int fit_jacobian(const gsl_vector *u, void *ctx, gsl_matrix *jac)
{
    const dt_curve_fitter *ft = ctx;
    double theta[DT_CURVE_MAX_PARAMS], dtheta_du[DT_CURVE_MAX_PARAMS];
    double grad[DT_CURVE_MAX_PARAMS];
    theta_from_u(ft, u, theta);
    for (int j = 0; j < ft->p; j++)
        dtheta_du[j] = 0.5 * (ft->hi[j] - ft->lo[j]) * cos(gsl_vector_get(u, j));
    gsl_matrix_set_zero(jac);
    for (int i = 0; i < ft->pts->n; i++) {
        gradient_at(ft->family, theta, ft->pts->x[i], ft->pts->log_x[i], grad);
        for (int j = 0; j < ft->p; j++) {
            if (!isfinite(grad[j]))
                return GSL_EDOM;
            gsl_matrix_set(jac, i, j, grad[j] * dtheta_du[j]);
        }
    }
    return GSL_SUCCESS;
}

/* (Re)creates the GSL workspace for `capacity` rows. */
static int fitter_alloc_workspace(dt_curve_fitter *ft, int capacity, dt_error *err)
{
    gsl_multifit_nlinear_parameters gsl_params = gsl_multifit_nlinear_default_parameters();
    gsl_params.trs = gsl_multifit_nlinear_trs_lm;
    /* normal equations by modified Cholesky: a few times cheaper than QR for
     * n ≫ p and still defined when JᵀJ is singular (flat data) */
    gsl_params.solver = gsl_multifit_nlinear_solver_mcholesky;
    gsl_multifit_nlinear_workspace *ws = gsl_multifit_nlinear_alloc(
        gsl_multifit_nlinear_trust, &gsl_params, (size_t)capacity, (size_t)ft->p);
    if (!ws)
        return dt_error_set(err, DT_ENOMEM,
                            "curve fit: no memory for a %d-point workspace", capacity);
    gsl_multifit_nlinear_free(ft->ws);
    ft->ws = ws;
    ft->capacity = capacity;
    ft->fdf.n = (size_t)capacity;
    return 0;
}

int dt_curve_fitter_new(dt_curve_family family, int capacity,
                        const dt_curve_fit_params *params,
                        dt_curve_fitter **out, dt_error *err)
{
    *out = NULL;
    if (dt_curve_param_count(family) == 0 || capacity < 1)
        return dt_error_set(err, DT_EINVAL,
                            "curve fitter: bad family %d or capacity %d", (int)family,
                            capacity);
    gsl_set_error_handler_off();
    dt_curve_fitter *ft = calloc(1, sizeof *ft);
    if (!ft)
        return dt_error_set(err, DT_ENOMEM, "curve fitter: out of memory");
    ft->family = family;
    ft->p = dt_curve_param_count(family);
    ft->params = params ? *params : dt_curve_fit_params_default();
    ft->fdf = (gsl_multifit_nlinear_fdf){ .f = fit_residuals, .df = fit_jacobian,
                                          .p = (size_t)ft->p, .params = ft };
    ft->u0 = gsl_vector_alloc((size_t)ft->p);
    int rc = ft->u0 ? fitter_alloc_workspace(ft, capacity, err)
                    : dt_error_set(err, DT_ENOMEM, "curve fitter: out of memory");
    if (rc) {
        dt_curve_fitter_free(ft);
        return rc;
    }
    *out = ft;
    return 0;
}

void dt_curve_fitter_free(dt_curve_fitter *fitter)
{
    if (!fitter)
        return;
    gsl_multifit_nlinear_free(fitter->ws);
    gsl_vector_free(fitter->u0);
    free(fitter);
}

static int check_points(const dt_curve_fitter *ft, const dt_curve_points *pts,
                        dt_error *err)
{
    if (!pts || !pts->x || !pts->log_x || !pts->y || pts->n < ft->p)
        return dt_error_set(err, DT_EINVAL,
                            "curve fit: need at least %d points with x, log_x and y",
                            ft->p);
    for (int i = 0; i < pts->n; i++) {
        if (!isfinite(pts->y[i]) || !(pts->x[i] > 0) || !isfinite(pts->log_x[i]) ||
            (i > 0 && !(pts->x[i] > pts->x[i - 1])))
            return dt_error_set(err, DT_EINVAL,
                                "curve fit: point %d (x %g, y %g) is not finite, "
                                "positive and increasing in x",
                                i, pts->x[i], pts->y[i]);
    }
    return 0;
}

static int set_box(dt_curve_fitter *ft, const double *lo, const double *hi,
                   dt_error *err)
{
    if (!lo || !hi)
        dt_curve_default_bounds(ft->family, 1.0, ft->lo, ft->hi);
    for (int j = 0; lo && hi && j < ft->p; j++) {
        if (!(lo[j] < hi[j]))
            return dt_error_set(err, DT_EINVAL,
                                "curve fit: bound %d is empty (%g, %g)", j, lo[j], hi[j]);
        ft->lo[j] = lo[j];
        ft->hi[j] = hi[j];
    }
    return 0;
}

/* One LM run from theta; returns the GSL status and fills the end point. */
static int run_lm(dt_curve_fitter *ft, const double *start, double *theta,
                  double *sse, int *iterations)
{
    int info = 0;
    u_from_theta(ft, start, ft->u0);
    *iterations = 0;
    int status = gsl_multifit_nlinear_init(ft->u0, &ft->fdf, ft->ws);
    if (status != GSL_SUCCESS) {
        *sse = INFINITY;
        return status;
    }
    status = gsl_multifit_nlinear_driver((size_t)ft->params.max_iter, ft->params.xtol,
                                         ft->params.gtol, 0.0, NULL, NULL, &info, ft->ws);
    theta_from_u(ft, gsl_multifit_nlinear_position(ft->ws), theta);
    *sse = dt_curve_sse(ft->family, theta, ft->pts);
    *iterations = (int)gsl_multifit_nlinear_niter(ft->ws);
    return status;
}

static void keep_if_better(dt_curve_fit_result *res, const double *theta, double sse,
                           int iterations, int status, int p)
{
    if (!isfinite(sse))
        return;
    res->starts_run++;
    if (res->starts_run > 1 && !(sse < res->sse))
        return;
    memcpy(res->theta, theta, (size_t)p * sizeof *theta);
    res->sse = sse;
    res->iterations = iterations;
    res->gsl_status = status;
}

int dt_curve_fit(dt_curve_fitter *fitter, const dt_curve_points *pts,
                 const double *lo, const double *hi, dt_curve_fit_result *res,
                 dt_error *err)
{
    int rc = check_points(fitter, pts, err);
    if (!rc)
        rc = set_box(fitter, lo, hi, err);
    if (!rc && pts->n > fitter->capacity)
        rc = fitter_alloc_workspace(fitter, pts->n > 2 * fitter->capacity
                                                ? pts->n : 2 * fitter->capacity, err);
    if (rc)
        return rc;
    fitter->pts = pts;
    candidate_set set;
    make_candidates(fitter->family, pts, fitter->lo, fitter->hi, &set);
    memset(res, 0, sizeof *res);
    res->sse = INFINITY;
    bool converged = false;
    for (int runs = 0; runs < fitter->params.starts ||
                       (!converged && runs < fitter->params.starts + FIT_RETRIES);
         runs++) {
        int k = take_best_candidate(&set);
        if (k < 0)
            break;
        double theta[DT_CURVE_MAX_PARAMS], sse;
        int iterations;
        int status = run_lm(fitter, set.theta[k], theta, &sse, &iterations);
        converged = converged || (status == GSL_SUCCESS && isfinite(sse));
        keep_if_better(res, theta, sse, iterations, status, fitter->p);
    }
    fitter->pts = NULL;
    if (res->starts_run == 0)
        return dt_error_set(err, DT_EFAIL,
                            "curve fit (%s, %d points): no start reached a finite cost",
                            dt_curve_name(fitter->family), pts->n);
    return 0;
}
