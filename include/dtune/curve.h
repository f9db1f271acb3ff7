/* curve.h — learning-curve families and their bounded least-squares fit.
 *
 * A curve f(x | θ) models the best-so-far performance of a task (normalised
 * to 0..1) against its trial index x ≥ 1. Three families, as in the learning
 * curve literature DynaTune draws on:
 *
 *   DT_CURVE_LOG_POWER   f = a / (1 + (x / e^b)^c)        θ = (a, b, c)
 *   DT_CURVE_POW4        f = c − (a x + b)^(−α)           θ = (a, b, c, α)
 *   DT_CURVE_LOG_LINEAR  f = a ln x + b                   θ = (a, b)
 *
 * log power is dtune's default; it rises from 0 to its level a when c < 0
 * and reaches a/2 at x = e^b.
 *
 * The fit minimises Σ (f(x_i) − y_i)² inside a box lo ≤ θ ≤ hi with GSL's
 * multifit_nlinear (Levenberg–Marquardt, analytic Jacobian). LM has no
 * bounds, so it runs in the unbounded coordinates u of
 * θ = lo + (hi − lo)(1 + sin u)/2, which map every u into the box. Start
 * values come from a coarse grid over the shape parameters (40 points for
 * log power) with the level parameter solved in closed form, scored on all
 * points; LM polishes the best (more when it does not converge) and the
 * lowest cost wins. A fit that fails is reported, never
 * aborted: the fitter turns GSL's abort-on-error handler off.
 */
#ifndef DTUNE_CURVE_H
#define DTUNE_CURVE_H

#include <stdbool.h>

#include "dtune/error.h"

typedef enum dt_curve_family {
    DT_CURVE_LOG_POWER = 0,
    DT_CURVE_POW4,
    DT_CURVE_LOG_LINEAR,
    DT_CURVE_COUNT
} dt_curve_family;

#define DT_CURVE_MAX_PARAMS 4

/* "log_power", "pow4", "log_linear"; "?" for an unknown family. */
const char *dt_curve_name(dt_curve_family family);

/* The name of family i, NULL past the last (a dt_name_at_fn). */
const char *dt_curve_family_at(int i);

/* Number of parameters θ of the family (3, 4, 2); 0 for an unknown one. */
int dt_curve_param_count(dt_curve_family family);

/* f(x | θ). x > 0. */
double dt_curve_eval(dt_curve_family family, const double *theta, double x);

/* Index in θ of the family's level parameter, the one dt_curve_lift moves
 * and level_max bounds: 0 (a) for log power, 2 (c) for pow4, 1 (b) for log
 * linear; −1 for an unknown family. */
int dt_curve_level_param(dt_curve_family family);

/* True when f(· | θ) is strictly increasing on x ≥ 1 (log power: a > 0 and
 * c < 0; pow4: a > 0, a + b > 0, α > 0; log linear: a > 0). */
bool dt_curve_increasing(dt_curve_family family, const double *theta);

/* The default prior box of a family for data normalised to 0..1; level_max
 * bounds the level the curve may reach (a for log power, c for pow4).
 * Writes dt_curve_param_count(family) values to lo and hi. The box also holds
 * decreasing curves; callers that need increasing ones test
 * dt_curve_increasing. */
void dt_curve_default_bounds(dt_curve_family family, double level_max,
                             double *lo, double *hi);

/* Moves θ into {f(x | θ) ≥ target} inside the box [lo, hi]: first the level
 * parameter (a for log power, c for pow4, b for log linear), up to its
 * bound; when that is not enough, the level goes to its bound and the curve
 * rises earlier (log power: b down; pow4: a up; log linear: the slope a
 * up). Leaves θ alone when f(x | θ) ≥ target already. Returns 0, or
 * DT_EFAIL when no such move stays in the box (θ is then unchanged). Used
 * to move a least-squares fit into the support of a prior that demands
 * f(horizon) ≥ best observed. */
int dt_curve_lift(dt_curve_family family, double *theta, double x, double target,
                  const double *lo, const double *hi);

/* Observed points, borrowed: x[i] > 0 strictly increasing, log_x[i] = ln x[i]
 * (precomputed once, since log power and log linear use only ln x), y[i]. */
typedef struct dt_curve_points {
    int n;
    const double *x;
    const double *log_x;
    const double *y;
} dt_curve_points;

/* Σ (y_i − f(x_i | θ))². The log-power path is vectorised (8 points at a
 * time, with run-time dispatch to AVX2/AVX-512 on x86-64) because the
 * sampler calls it thousands of times per prediction; it agrees with the
 * scalar formula to a relative 1e-13. */
double dt_curve_sse(dt_curve_family family, const double *theta,
                    const dt_curve_points *pts);

/* --- Least-squares fit ---------------------------------------------------- */

typedef struct dt_curve_fit_params {
    int max_iter;    /* LM iterations per start (100) */
    int starts;      /* LM runs from the best grid points (1); when none of
                        them converges, up to 3 more run from the next ones */
    double xtol;     /* GSL step tolerance (1e-8) */
    double gtol;     /* GSL gradient tolerance (1e-8) */
} dt_curve_fit_params;

dt_curve_fit_params dt_curve_fit_params_default(void);

typedef struct dt_curve_fit_result {
    double theta[DT_CURVE_MAX_PARAMS];
    double sse;          /* Σ residual² at theta */
    int iterations;      /* LM iterations of the winning start */
    int starts_run;      /* LM runs that ended with a finite cost */
    int gsl_status;      /* GSL status of the winning run (GSL_SUCCESS, GSL_EMAXITER, ...) */
} dt_curve_fit_result;

typedef struct dt_curve_fitter dt_curve_fitter;

/* A fitter for one family holding GSL's workspace and residual buffers for
 * up to `capacity` points (grown, rarely, when a longer history arrives).
 * Calls gsl_set_error_handler_off(). 0, DT_EINVAL or DT_ENOMEM. */
int dt_curve_fitter_new(dt_curve_family family, int capacity,
                        const dt_curve_fit_params *params,
                        dt_curve_fitter **out, dt_error *err);

/* Accepts NULL. */
void dt_curve_fitter_free(dt_curve_fitter *fitter);

/* Fits pts inside the box [lo, hi] (NULL for the default box with level_max
 * 1). Needs pts->n ≥ parameter count and finite data. Fills *res and
 * returns 0 when some start reached a finite cost, even if LM stopped at
 * max_iter (res->gsl_status says so); DT_EINVAL for bad input, DT_ENOMEM,
 * DT_EFAIL when no start produced a finite cost. Not thread-safe per fitter;
 * use one fitter per thread. */
int dt_curve_fit(dt_curve_fitter *fitter, const dt_curve_points *pts,
                 const double *lo, const double *hi, dt_curve_fit_result *res,
                 dt_error *err);

#endif
