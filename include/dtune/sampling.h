/* sampling.h — Chameleon's adaptive sampling and sample synthesis.
 *
 * From the explorer's candidate configurations, pick the few worth measuring:
 * k-means (k-means++ start from the sampler's own gsl_rng) over the
 * candidates' normalised knob vectors for k = k_min, 2·k_min, … ≤ the batch
 * limit, stopping at the knee of the loss curve: the first k whose loss
 * satisfies `threshold × loss ≥ previous loss` no longer pays for its extra
 * measurements, so the previous k's centroids are the batch (Chameleon,
 * Algorithm 1, threshold 2.5). Candidates come in the caller's order of
 * preference (the tuner passes them best-scored first), and each centroid is
 * snapped to the first valid candidate of its cluster in that order. Snapping
 * to the member nearest the centroid instead (or rounding the centroid per
 * knob, worse still) measures a cluster's middle rather than its best, and
 * tuner_bench's chameleon then reaches autotvm's best in fewer runs and
 * after more trials. A centroid already measured (or already in the batch) is
 * replaced by the mode config — each knob's most frequent option among the
 * candidates — and, if that too is taken or invalid, by the nearest valid
 * untaken config in option-index steps (breadth-first over ±1 moves of each
 * knob, crossing invalid points).
 *
 * Also here: dt_sampling_set, the open-addressing hash set of config indices
 * used for "measured" and "visited" sets, which can also keep a value per
 * index (the tuner's memo of cost-model scores).
 */
#ifndef DTUNE_SAMPLING_H
#define DTUNE_SAMPLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtune/error.h"
#include "dtune/space.h"

/* --- a set of config indices ------------------------------------------------ */

typedef struct dt_sampling_set {
    uint64_t *slots;   /* index + 1; 0 marks an empty slot */
    double *values;    /* one per slot in a set made with values; else NULL */
    size_t cap;        /* power of two */
    size_t n;
} dt_sampling_set;

/* An empty set; returns 0 or DT_ENOMEM. */
int dt_sampling_set_init(dt_sampling_set *s);
/* An empty set that keeps a value per index (dt_sampling_set_put/get);
 * returns 0 or DT_ENOMEM. */
int dt_sampling_set_init_values(dt_sampling_set *s);
void dt_sampling_set_free(dt_sampling_set *s);
void dt_sampling_set_clear(dt_sampling_set *s);
bool dt_sampling_set_has(const dt_sampling_set *s, uint64_t index);
/* Bytes the set holds. */
size_t dt_sampling_set_bytes(const dt_sampling_set *s);
/* 1 when added, 0 when already present, DT_ENOMEM when growing failed. */
int dt_sampling_set_add(dt_sampling_set *s, uint64_t index);
/* In a set made with values: adds index with value (or sets the value of an
 * index already there); 0, DT_ENOMEM, or DT_EINVAL for a set without values. */
int dt_sampling_set_put(dt_sampling_set *s, uint64_t index, double value);
/* In a set made with values: whether index is there, and its value into
 * *value when it is. */
bool dt_sampling_set_get(const dt_sampling_set *s, uint64_t index, double *value);

/* --- the sampler ------------------------------------------------------------ */

/* Search effort for "nearest untaken config": nodes visited before giving up
 * (a space up to this size is searched exhaustively). */
#define DT_SAMPLING_SEARCH_LIMIT (1u << 20)

/* The sampler's settings (config keys tuner.sampling.*). */
typedef struct dt_sampling_params {
    double knee_threshold;     /* k-means knee: stop when threshold x loss >= previous loss */
    int k_min;                 /* smallest k of k-means */
} dt_sampling_params;

/* The defaults (dtune check --help lists them). */
dt_sampling_params dt_sampling_params_default(void);

typedef struct dt_sampling dt_sampling;

/* A sampler for space (borrowed; must outlive the sampler) taking up to
 * max_candidates candidates and returning batches of up to max_batch. cfg is
 * copied. Workspaces are allocated here. Returns 0, DT_EINVAL, DT_ENOMEM. */
int dt_sampling_new(const dt_space *space, const dt_sampling_params *cfg, int max_candidates,
                    int max_batch, uint64_t seed, dt_sampling **out, dt_error *err);
void dt_sampling_free(dt_sampling *s);

typedef struct dt_sampling_info {
    int distinct;          /* distinct valid candidates clustered */
    int k;                 /* clusters kept (the knee) */
    double loss;           /* the kept k's loss (sum of squared distances) */
    int tried;             /* values of k run */
    int synthesised;       /* taken centroids replaced by the mode config */
    int neighbours;        /* replaced by the nearest untaken config */
} dt_sampling_info;

/* Chooses at most max_batch (≤ the max_batch given at creation) configs from
 * n candidates, given best first (more than max_candidates: the first
 * max_candidates are used;
 * invalid or duplicate ones are ignored). out receives *nout distinct valid
 * points, none in `measured`. *nout is smaller than the number of clusters
 * only when no untaken valid config can be found. info may be NULL.
 * Returns 0 or DT_EINVAL. */
int dt_sampling_select(dt_sampling *s, const dt_point *cands, int n,
                       const dt_sampling_set *measured, int max_batch,
                       dt_point *out, int *nout, dt_sampling_info *info, dt_error *err);

/* --- pieces exposed for tests ------------------------------------------------ */

/* Lloyd's k-means with a k-means++ start on n rows of dim doubles. Writes k
 * centroids (k × dim) and each row's cluster (assign, n ints); returns the
 * loss, Σ squared distance to the assigned centroid. Needs 1 ≤ k ≤ n and
 * n ≤ max_candidates; dim ≤ DT_MAX_KNOBS. */
double dt_sampling_kmeans(dt_sampling *s, const double *coords, int n, int dim, int k,
                          double *centroids, int *assign);

/* Mode config of n candidates (each knob's most frequent option; ties to the
 * lower option). */
void dt_sampling_mode(dt_sampling *s, const dt_point *cands, int n, dt_point *out);

/* Synthesises a replacement: the mode of the candidates when it is valid and
 * in neither `measured` nor `taken` (either may be NULL), else the nearest
 * such config. Returns 0, or DT_ENOTFOUND when none exists within
 * DT_SAMPLING_SEARCH_LIMIT nodes (for spaces that small: none exists). */
int dt_sampling_synthesise(dt_sampling *s, const dt_point *cands, int n,
                           const dt_sampling_set *measured, const dt_sampling_set *taken,
                           dt_point *out, bool *was_mode);

/* The nearest valid config to `from` (itself included) that is in neither
 * set, by breadth-first ±1 option moves. Returns 0 or DT_ENOTFOUND. */
int dt_sampling_nearest_untaken(dt_sampling *s, const dt_point *from,
                                const dt_sampling_set *measured, const dt_sampling_set *taken,
                                dt_point *out);

#endif
