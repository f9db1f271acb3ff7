/* roofline.c — the bound of a task (roofline.h): the arithmetic, and the
 * CPU's cache levels read from sysfs for the bandwidth probes. */
#include "dtune/roofline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The DRAM stream's working set: this many times the last cache, at least
 * DRAM_PROBE_MIN_BYTES, so no cache holds a useful share of it. */
#define DRAM_PROBE_CACHE_MULTIPLE 2
#define DRAM_PROBE_MIN_BYTES (64.0 * 1024 * 1024)

const dt_mem_level *dt_roofline_level_for(const dt_roofline *r, double bytes)
{
    if (!r || r->nlevels <= 0)
        return NULL;
    for (int i = 0; i < r->nlevels - 1; i++)
        if (bytes <= r->levels[i].capacity_bytes)
            return &r->levels[i];
    return &r->levels[r->nlevels - 1];
}

double dt_mem_level_gbs(const dt_mem_level *level)
{
    return fmax(level->read_gbs, level->rw_gbs);
}

void dt_roofline_bound(const dt_roofline *r, double flops, double bytes, double write_bytes,
                       dt_task_bound *out)
{
    memset(out, 0, sizeof *out);
    if (!r || !(r->peak_gflops > 0))
        return;
    out->compute_s = flops / (r->peak_gflops * 1e9);
    const dt_mem_level *level = dt_roofline_level_for(r, bytes);
    if (level && dt_mem_level_gbs(level) > 0) {
        out->memory_s = bytes / (dt_mem_level_gbs(level) * 1e9);
        if (level->read_gbs > 0)
            out->memory_s = fmax(out->memory_s, fmax(0, bytes - write_bytes) / (level->read_gbs * 1e9));
        out->bandwidth_gbs = out->memory_s > 0 ? bytes / out->memory_s / 1e9 : dt_mem_level_gbs(level);
        snprintf(out->level, sizeof out->level, "%s", level->name);
    }
    out->seconds = fmax(out->compute_s, out->memory_s);
}

void dt_roofline_task_bound(const dt_roofline *r, const dt_task *task, dt_task_bound *out)
{
    dt_roofline_bound(r, task->useful_flops, task->bytes, task->write_bytes, out);
}

double dt_roofline_task_peak_gflops(const dt_roofline *r, const dt_task *task)
{
    double peak = r ? r->peak_gflops : 0;
    return task->useful_flops > 0 ? peak * task->flops / task->useful_flops : peak;
}

/* "32K", "1024K", "32M" → bytes; 0 when unreadable. */
static double read_size(const char *path)
{
    FILE *f = fopen(path, "r");
    char text[32] = "";
    if (!f)
        return 0;
    if (!fgets(text, sizeof text, f))
        text[0] = '\0';
    fclose(f);
    char *end;
    double n = strtod(text, &end);
    double unit = *end == 'K' ? 1024.0 : *end == 'M' ? 1024.0 * 1024 : *end == 'G' ? 1024.0 * 1024 * 1024 : 1;
    return n > 0 ? n * unit : 0;
}

static int read_int(const char *path)
{
    FILE *f = fopen(path, "r");
    int v = -1;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* cpu0's data or unified cache of level (1, 2, 3) in bytes, 0 when absent. */
static double cache_bytes(int level)
{
    for (int i = 0; i < 16; i++) {
        char path[128], type[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        int l = read_int(path);
        if (l < 0 && i > 3)
            break;
        if (l != level)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(type, sizeof type, f))
                type[0] = '\0';
            fclose(f);
        }
        if (strncmp(type, "Instruction", 11) == 0)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        return read_size(path);
    }
    return 0;
}

int dt_roofline_cpu_levels(int threads, dt_mem_level *levels, int max)
{
    int n = 0, t = threads < 1 ? 1 : threads;
    double last = 0;
    for (int level = 1; level <= 3 && n < max - 1; level++) {
        double bytes = cache_bytes(level);
        if (bytes <= 0)
            continue;
        if (level <= 2)
            bytes *= t; /* private to each core */
        memset(&levels[n], 0, sizeof levels[n]);
        snprintf(levels[n].name, sizeof levels[n].name, "L%d", level);
        levels[n].capacity_bytes = bytes;
        levels[n].probe_bytes = bytes / 2;
        last = bytes;
        n++;
    }
    memset(&levels[n], 0, sizeof levels[n]);
    snprintf(levels[n].name, sizeof levels[n].name, "DRAM");
    levels[n].capacity_bytes = INFINITY;
    levels[n].probe_bytes = fmax(DRAM_PROBE_CACHE_MULTIPLE * last, DRAM_PROBE_MIN_BYTES);
    return n + 1;
}
