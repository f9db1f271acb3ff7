/* omp_bench.c — what one OpenMP parallel region costs on this machine.
 *
 * A multi-threaded CPU kernel of dtune is one `#pragma omp parallel for
 * num_threads(T) schedule(static)` (cpu_codegen.c, cpu_emit_omp). Its fork and
 * join are paid on every call, so a kernel whose bound is a few
 * microseconds (the dense layer at two threads: 2.4 us) cannot come near
 * that bound however good its loop body is. This bench times, back to back
 * as the runner times a kernel:
 *   - an empty region (each thread does nothing),
 *   - a region whose T threads each sum 4 KB of floats (a trivial body, so
 *     the threads must all have started and finished),
 * at T = 1, 2, ... up to the cores allowed, and prints the median over 7
 * repeats of the mean time a region (each repeat about 0.2 s of calls).
 *
 * Usage: bin/omp_bench [MAX_THREADS]. Never beside a timing job.
 */
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "dtune/util.h"
#include "rank_stats.h"

#define REPEATS 7
#define BODY_FLOATS 1024

static float data[64][BODY_FLOATS];
static volatile float sink[64];

static void empty_region(int threads)
{
#pragma omp parallel num_threads(threads)
    {
        sink[omp_get_thread_num()] = 0;
    }
}

static void body_region(int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; t++) {
        float s = 0;
        for (int i = 0; i < BODY_FLOATS; i++)
            s += data[t][i];
        sink[t] = s;
    }
}

/* Median over REPEATS of the mean seconds a call of fn(threads). */
static double time_region(void (*fn)(int), int threads)
{
    double per[REPEATS];
    long calls = 1000;
    for (int i = 0; i < 100; i++)
        fn(threads);
    double t0 = dt_now_seconds();
    for (long i = 0; i < calls; i++)
        fn(threads);
    double one = (dt_now_seconds() - t0) / (double)calls;
    calls = (long)(0.2 / (one > 1e-9 ? one : 1e-9)) + 1;
    for (int r = 0; r < REPEATS; r++) {
        t0 = dt_now_seconds();
        for (long i = 0; i < calls; i++)
            fn(threads);
        per[r] = (dt_now_seconds() - t0) / (double)calls;
    }
    return median_sorting(per, REPEATS);
}

int main(int argc, char **argv)
{
    cpu_set_t set;
    int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    int max = cores;
    if (argc > 2 || (argc == 2 && (max = atoi(argv[1])) < 1)) {
        fprintf(stderr, "usage: %s [MAX_THREADS]   (default: the %d cores allowed)\n", argv[0], cores);
        return 2;
    }
    if (max > 64)
        max = 64;
    for (int t = 0; t < 64; t++)
        for (int i = 0; i < BODY_FLOATS; i++)
            data[t][i] = (float)(i % 7);
    printf("omp_bench: one OpenMP parallel region, called back to back; median of %d repeats "
           "of the mean a call (%d cores allowed)\n", REPEATS, cores);
    printf("%8s %14s %22s\n", "threads", "empty (us)", "4 KB a thread (us)");
    for (int t = 1; t <= max; t++)
        printf("%8d %14.3f %22.3f\n", t, 1e6 * time_region(empty_region, t),
               1e6 * time_region(body_region, t));
    return 0;
}
