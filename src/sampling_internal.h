/* sampling_internal.h — private to src/: the k-means knee search alone.
 * sampling.c defines them; the only callers outside it are its tests (built
 * with -Isrc), which check them against finite differences, brute force or
 * known values. Not part of dtune's interface. */
#ifndef DTUNE_SAMPLING_INTERNAL_H
#define DTUNE_SAMPLING_INTERNAL_H

#include "dtune/sampling.h"

/* The knee search alone: runs k = k_min, 2·k_min, … ≤ max_k (and ≤ n); returns
 * the k kept and writes its loss. When k_min > max_k, k = max_k is run once. */
int dt_sampling_knee(dt_sampling *s, const double *coords, int n, int dim, int max_k,
                     double *loss);

#endif
