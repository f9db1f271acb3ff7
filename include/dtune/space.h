/* space.h — the knob space of one task on one target, shaped like AutoTVM's.
 *
 * A knob is a split (every ordered factorisation of an axis of length L into
 * `parts` factors whose product is L) or a choice (a list of integer values).
 * A configuration (dt_point) holds one option index per knob. Its index in the
 * space is the mixed-radix number of those option indices (knob 0 is the least
 * significant digit). Its feature vector is log2 of every split factor and the
 * option index of every choice knob, in knob order.
 *
 * Some points are invalid on a target (e.g. more than 1024 threads per block
 * on CUDA, a vector width that does not divide the register tile on CPU); the
 * space counts them (size includes them) but dt_space_valid says no, and the
 * search never measures them.
 *
 * The knobs per (op kind, target) are one table per target (cpu_space.c,
 * cuda_space.c), reached through the target's table: a space is built with
 * dt_target_space_init (target.h). cpu_codegen and cuda_codegen read knob
 * values by name with dt_space_get.
 */
#ifndef DTUNE_SPACE_H
#define DTUNE_SPACE_H

#include <stdbool.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "dtune/error.h"
#include "dtune/model.h"

typedef enum dt_target {
    DT_TARGET_CPU = 0,
    DT_TARGET_CUDA,
    DT_TARGET_COUNT
} dt_target;

#define DT_MAX_KNOBS 16
#define DT_MAX_PARTS 4
#define DT_MAX_FEATURES (DT_MAX_KNOBS * DT_MAX_PARTS)

typedef enum dt_knob_type {
    DT_KNOB_SPLIT = 0,
    DT_KNOB_CHOICE
} dt_knob_type;

typedef struct dt_knob {
    char name[24];
    dt_knob_type type;
    int parts;          /* split: number of factors; choice: 1 */
    int axis_len;       /* split: length of the axis; choice: 0 */
    int noptions;
    int *options;       /* noptions * parts ints, row-major; a split's rows are
                           sorted so that the innermost factor grows fastest */
} dt_knob;

/* A knob has at most this many options (a point stores an option index in
 * int16_t); a space has fewer than 2^64 points. A task past either is
 * refused when its space is built. */
#define DT_KNOB_MAX_OPTIONS INT16_MAX

/* One configuration: option index of each knob. */
typedef struct dt_point {
    int16_t opt[DT_MAX_KNOBS];
} dt_point;

struct dt_space_template;  /* space_table.h */

typedef struct dt_space {
    dt_target target;
    const struct dt_space_template *tpl;  /* the target's knobs for the task's kind */
    dt_task task;        /* a copy of the task */
    int cpu_max_vec;     /* CPU: the widest `vec` option offered (4, 8 or 16) */
    int nknobs;
    dt_knob knobs[DT_MAX_KNOBS];
    uint64_t size;       /* product of noptions (valid and invalid points) */
    int nfeatures;
} dt_space;

/* What a space depends on beyond its task and target. */
typedef struct dt_space_opts {
    /* CPU: the widest vector width (floats) the `vec` knob offers: 4, 8 or
     * 16; 0 = this machine's (dt_cpu_plan_native_lanes: 16 with AVX-512F, 8 with
     * AVX). Wider generic vectors are valid C but several times slower. The
     * replay surface stands for no machine, so runs and benches on it use 16
     * (every width), as do tests whose counts must not depend on the
     * machine. Because a point's index depends on the knobs' option counts, a
     * tuning log is only valid for spaces of the same width (resume checks
     * each record's knobs). */
    int cpu_max_vec;
} dt_space_opts;

/* A copy of src with its own option tables (free with dt_space_free);
 * returns 0 or DT_ENOMEM (dst then holds nothing to free). */
int dt_space_copy(dt_space *dst, const dt_space *src);
void dt_space_free(dt_space *space);

/* Mixed-radix conversion; index must be < size. */
void dt_space_point(const dt_space *space, uint64_t index, dt_point *point);
uint64_t dt_space_index(const dt_space *space, const dt_point *point);

/* Whether the point can run on the target. */
bool dt_space_valid(const dt_space *space, const dt_point *point);

/* Number of valid points, by enumeration when size <= limit, else -1. */
int64_t dt_space_count_valid(const dt_space *space, uint64_t limit);

/* Writes space->nfeatures floats. */
void dt_space_features(const dt_space *space, const dt_point *point, float *features);

/* Each knob's option index divided by (noptions - 1) (0 when noptions == 1):
 * the PPO state and the k-means coordinates. Writes space->nknobs doubles. */
void dt_space_normalised(const dt_space *space, const dt_point *point, double *coords);

/* Valid neighbours: each knob one step down and one step up its option list.
 * Writes at most 2 * nknobs points to out; returns how many. */
int dt_space_neighbours(const dt_space *space, const dt_point *point, dt_point *out);

/* A uniformly random valid point (rejection sampling, bounded tries; falls
 * back to a random point if none is found). */
void dt_space_random(const dt_space *space, gsl_rng *rng, dt_point *point);

/* Knob index by name, or -1. */
int dt_space_knob(const dt_space *space, const char *name);

/* Value of knob `name` at point: for a split, factor `part` (0 = outermost);
 * for a choice, the chosen value (part ignored). Returns `fallback` when the
 * space has no such knob. */
int dt_space_get(const dt_space *space, const dt_point *point, const char *name, int part, int fallback);

/* "tile_co=[4,16] tile_ow=[7,8] vec=8 ..." into buf. */
void dt_space_point_str(const dt_space *space, const dt_point *point, char *buf, size_t len);

/* Whether index `config` of a record, logged with its knobs in the form
 * above ("" = not logged), names a point of space: the index lies in it and
 * space names the point as the record did (an index of another machine's
 * or version's space is not read as a config of this one). The point into
 * *point. */
bool dt_space_point_named(const dt_space *space, uint64_t config, const char *knobs, dt_point *point);

/* The point that dt_space_point_str prints as knobs (every knob named once,
 * in the space's order and spelling), into *point; false where knobs names
 * no point of space. */
bool dt_space_point_parse(const dt_space *space, const char *knobs, dt_point *point);

/* Whether a and b are the same point of space (every knob's option). */
bool dt_space_same_point(const dt_space *space, const dt_point *a, const dt_point *b);

/* Moves point to the one point of its class that builds the same code
 * (where a form ignores knobs, those knobs at their first option); the only
 * valid point of the class. Every walk through the space (random points,
 * neighbours, a tuner's steps, mode synthesis, transfer) passes its points
 * through this before asking validity. */
void dt_space_canonical(const dt_space *space, dt_point *point);

/* Number of ordered factorisations of n into parts factors. */
int dt_count_factorisations(int n, int parts);

#endif
