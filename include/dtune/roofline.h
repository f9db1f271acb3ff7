/* roofline.h — the bound a task's kernel cannot beat on the machine it is
 * timed on: max(useful FLOPs / peak, bytes moved / bandwidth of the memory
 * level that holds the task's working set); useful FLOPs leave out a
 * convolution's taps on padding (model.h), and the memory term is the
 * larger of the bytes read at the read stream's rate and all bytes at the
 * faster stream's (dt_roofline_bound).
 *
 * The peak comes from an FMA probe and the bandwidths from read and
 * read+write streams: for a task, streams over a working set of the task's
 * own size, and for the machine as a whole, streams at half of each cache
 * level (the CPU backend measures both in its measurement process, on the
 * timing cores, at measure.threads; cpu_backend.c). This module only holds the figures and
 * the arithmetic, so the report, /status, /metrics, the page, best.json and
 * the scheduler's roofline all compute one bound, here.
 */
#ifndef DTUNE_ROOFLINE_H
#define DTUNE_ROOFLINE_H

#include "dtune/model.h"

#define DT_ROOFLINE_MAX_LEVELS 4
#define DT_ROOFLINE_NAME_MAX 16

/* One level of the memory hierarchy as the bound sees it. */
typedef struct dt_mem_level {
    char name[DT_ROOFLINE_NAME_MAX]; /* "L1", "L2", "L3", "DRAM" */
    double capacity_bytes;     /* working sets up to this size are held here;
                                  the last level (DRAM) holds any */
    double probe_bytes;        /* working set the streams were timed at */
    double read_gbs;           /* read stream, GB/s (1e9 bytes/s) */
    double rw_gbs;             /* read+write stream, bytes read plus written per second */
} dt_mem_level;

typedef struct dt_roofline {
    double peak_gflops;        /* 0: unknown */
    char probe[64];            /* which probe gave the peak, e.g. "fma 512-bit x16" */
    int threads;               /* the probes' thread count */
    int nlevels;               /* 0: no bandwidth known (bound = FLOPs / peak) */
    dt_mem_level levels[DT_ROOFLINE_MAX_LEVELS]; /* smallest first */
} dt_roofline;

/* A task's bound: which level holds its working set, and the time. */
typedef struct dt_task_bound {
    double seconds;            /* 0: unknown (no peak) */
    double compute_s;          /* FLOPs / peak */
    double memory_s;           /* the bytes' time at the level's streams; 0 when none */
    double bandwidth_gbs;      /* bytes / memory_s: the rate the bound allows; 0 when none */
    char level[DT_ROOFLINE_NAME_MAX]; /* the level's name, "" when none */
} dt_task_bound;

/* The level of r that holds a working set of bytes: the smallest whose
 * capacity is at least bytes, the last one past all; NULL when r has no
 * levels. */
const dt_mem_level *dt_roofline_level_for(const dt_roofline *r, double bytes);

/* A level's bandwidth: the faster of its two streams (the rate no mix of
 * reads and writes beats). */
double dt_mem_level_gbs(const dt_mem_level *level);

/* The bound of a task that performs flops and moves bytes, write_bytes of
 * them written (dt_task's flops, bytes and write_bytes). Its memory time is
 * the larger of (bytes - write_bytes) at the level's read stream (reads
 * alone go no faster) and bytes at dt_mem_level_gbs: the read+write stream
 * counts its writes as bytes moved and reads 1.4-2.4x the read stream on
 * these machines, a rate a task that mostly reads (a dense layer's weights)
 * cannot reach. Fills *out; a peak of 0 gives seconds 0 (unknown). */
void dt_roofline_bound(const dt_roofline *r, double flops, double bytes, double write_bytes,
                       dt_task_bound *out);

/* dt_roofline_bound of a model task, with its useful FLOPs (model.h): a
 * convolution's taps that read padding are work a kernel may skip (oneDNN
 * does: its 3x3 convolutions on 7x7 planes, 82 % of the taps inside, read
 * 108-113 % of a bound counting every tap). */
void dt_roofline_task_bound(const dt_roofline *r, const dt_task *task, dt_task_bound *out);

/* The task's GFLOPS as the tuner counts them (every tap, task->flops) of a
 * kernel that runs its useful FLOPs at the peak: peak x flops / useful_flops
 * (the peak itself without padding, or where no tap reads the input). The
 * scale of a task's efficiency, which a kernel that skips the taps on
 * padding can take past 1 against the bare peak. */
double dt_roofline_task_peak_gflops(const dt_roofline *r, const dt_task *task);

/* The CPU's data cache sizes from sysfs (cpu0's L1d, L2, L3) and a DRAM
 * level past them, into levels (capacities and probe sizes set, bandwidths
 * 0); private levels (L1, L2) hold threads times their size. Returns how many
 * levels (at least 1: DRAM). */
int dt_roofline_cpu_levels(int threads, dt_mem_level *levels, int max);

#endif
