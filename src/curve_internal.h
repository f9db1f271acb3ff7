/* curve_internal.h — private to src/: the curves' analytic gradient (the least-squares fit's Jacobian).
 * curve.c defines them; the only callers outside it are its tests (built
 * with -Isrc), which check them against finite differences, brute force or
 * known values. Not part of dtune's interface. */
#ifndef DTUNE_CURVE_INTERNAL_H
#define DTUNE_CURVE_INTERNAL_H

#include "dtune/curve.h"

/* grad[j] = ∂f(x | θ)/∂θ_j, j < dt_curve_param_count(family). */
void dt_curve_gradient(dt_curve_family family, const double *theta, double x,
                       double *grad);

/* Sets *family from its name; 0, or DT_EINVAL (message lists the names). */
int dt_curve_parse(const char *name, dt_curve_family *family, dt_error *err);

#endif
