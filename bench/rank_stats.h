/* rank_stats.h — order statistics the benches share: Kendall's tau-b of
 * paired samples, for the benches that compare two timing methods'
 * rankings of the same configs (measure_bench's CPU part a, cuda_bench's
 * GPU CV part), and the median of repeats (omp_bench, pipe_bench,
 * mpi_bench).
 */
#ifndef DTUNE_BENCH_RANK_STATS_H
#define DTUNE_BENCH_RANK_STATS_H

#include <math.h>
#include <stdlib.h>

static inline int rank_stats_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n >= 1); sorts v. */
static inline double median_sorting(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, rank_stats_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Kendall tau-b of x[i], y[i], i < n (ties in either counted as tau-b does). */
static inline double kendall_tau_b(const double *x, const double *y, int n)
{
    double concordant = 0, discordant = 0, ties_x = 0, ties_y = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double dx = x[i] - x[j], dy = y[i] - y[j];
            if (dx == 0 && dy == 0)
                continue;
            if (dx == 0)
                ties_x++;
            else if (dy == 0)
                ties_y++;
            else if ((dx > 0) == (dy > 0))
                concordant++;
            else
                discordant++;
        }
    double denom = sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y));
    return denom > 0 ? (concordant - discordant) / denom : 0;
}

#endif
