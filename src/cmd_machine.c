/* cmd_machine.c — `dtune machine [--threads LIST] [--dir DIR]`: this
 * machine's fingerprint and the roofline a run's bound is taken from (the
 * CPU backend's FMA probe and memory streams, roofline.h), at each thread
 * count of LIST (default 1,2), measured the way a run measures them: in the
 * measurement process, pinned to the timing cores. The probes' artifacts go
 * to DIR/cache (default: config.yaml's output.dir).
 *
 * Exit status: 0, 1 when a probe cannot run, 2 for bad input.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/cli.h"
#include "dtune/config.h"
#include "dtune/machine.h"
#include "dtune/measure.h"
#include "dtune/roofline.h"
#include "dtune/target.h"

#define MAX_THREAD_COUNTS 16

static void usage(FILE *f)
{
    fputs("usage: dtune machine [--threads LIST] [--dir DIR]\n"
          "Prints this machine's fingerprint and, per thread count of LIST\n"
          "(comma-separated, default 1,2), the FMA peak and the read and\n"
          "read+write stream bandwidths at working sets in L1, L2, L3 and DRAM:\n"
          "the figures a run's bound (max of useful FLOPs / peak, bytes read / read\n"
          "stream and bytes moved / the faster stream of the level that holds the\n"
          "task's working set) is taken from.\n"
          "Exit 0, 1 a probe failed, 2 bad input.\n", f);
}

/* "1,2,4" into counts; returns how many, or -1 when not a list of 1..1024. */
static int parse_counts(const char *text, int *counts, int max)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 1 || v > 1024 || n == max || (*end && *end != ','))
            return -1;
        counts[n++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return -1;
    }
    return n > 0 ? n : -1;
}

static void print_roofline(const dt_roofline *r)
{
    printf("threads %d: peak %.1f GFLOPS (%s)\n", r->threads, r->peak_gflops, r->probe);
    printf("  %-5s %12s %12s %12s %12s\n", "level", "holds", "stream at", "read GB/s", "r+w GB/s");
    for (int i = 0; i < r->nlevels; i++) {
        const dt_mem_level *l = &r->levels[i];
        char holds[32];
        if (isinf(l->capacity_bytes))
            snprintf(holds, sizeof holds, "any");
        else
            snprintf(holds, sizeof holds, "%.0f KiB", l->capacity_bytes / 1024);
        printf("  %-5s %12s %8.0f KiB %12.1f %12.1f\n", l->name, holds, l->probe_bytes / 1024,
               l->read_gbs, l->rw_gbs);
    }
}

static int probe_at(dt_config *cfg, const char *dir, int threads)
{
    cfg->measure.threads = threads;
    dt_measurer *m;
    dt_error err = { 0 };
    const dt_backend_i *backend = dt_target_get(DT_TARGET_CPU)->backend;
    if (!backend || dt_measurer_new(backend, &cfg->measure, dir, cfg->seed, &m, &err) != 0) {
        fprintf(stderr, "dtune machine: %s\n", err.msg[0] ? err.msg : "no cpu backend");
        return 1;
    }
    dt_roofline r;
    int rc = dt_measurer_roofline(m, NULL, &r);
    dt_measurer_free(m);
    if (rc != 0) {
        fprintf(stderr, "dtune machine: the FMA probe did not run at %d threads\n", threads);
        return 1;
    }
    print_roofline(&r);
    return 0;
}

int dt_cli_print_machine(const char *backend, uint64_t seed, dt_error *err)
{
    char machine[DT_MACHINE_MAX];
    int rc = dt_machine_fingerprint(backend, seed, dt_measure_params_default().cuda_device, machine,
                                    sizeof machine, err);
    if (rc == 0)
        printf("%s\n", machine);
    return rc;
}

int dt_cmd_machine(int argc, char **argv)
{
    int counts[MAX_THREAD_COUNTS] = { 1, 2 }, ncounts = 2;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (i + 1 < argc && strcmp(argv[i], "--threads") == 0) {
            if ((ncounts = parse_counts(argv[++i], counts, MAX_THREAD_COUNTS)) < 0) {
                fprintf(stderr, "dtune machine: --threads '%s' is not a list of counts 1..1024\n", argv[i]);
                return 2;
            }
        } else if (i + 1 < argc && strcmp(argv[i], "--dir") == 0) {
            dir = argv[++i];
        } else {
            fprintf(stderr, "dtune machine: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    dt_config cfg;
    dt_config_defaults(&cfg);
    dt_error err = { 0 };
    if (dt_cli_print_machine(dt_target_name(DT_TARGET_CPU), cfg.seed, &err) != 0) {
        fprintf(stderr, "dtune machine: %s\n", err.msg);
        return 1;
    }
    int status = 0;
    for (int i = 0; i < ncounts; i++)
        status |= probe_at(&cfg, dir ? dir : cfg.output_dir, counts[i]);
    return status;
}
