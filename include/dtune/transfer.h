/* transfer.h — what a run knows about the tasks it has measured, kept for the
 * tasks it has not tuned yet (AutoTVM's transfer learning, inside one run).
 *
 * A store of measured records of many tasks, fed as they are measured (the
 * daemon's measure callback), from earlier runs' logs (output.warm_start) and
 * from any other source of (space, config, result) records. A record is kept
 * with its space's *kind*: target, op kind and every knob's name, type, part
 * count and (for a choice knob) option values. Two spaces of one kind differ
 * only in their axis lengths; a record is only ever used for a space of its
 * own kind, so a record of another machine's vector width (another `vec`
 * option list) or of another version of the knob table is never used.
 *
 * For a task about to be tuned, the store gives (dt_tuner_transfer):
 *   - a prior cost model: boosted trees trained on the other tasks' records
 *     of the kind, each task a ranking group normalised by its own best, on
 *     shape-relative features (dt_transfer_features), so one model speaks
 *     for every shape of the kind;
 *   - first candidates: the other tasks' best configs, mapped knob by knob
 *     into this task's space (the option whose factors are nearest in log2,
 *     the inner factors first; the nearest choice value).
 * Records of the task itself (same kind and axis lengths) are left out: they
 * belong to its own tuner.
 *
 * Not thread-safe: one thread feeds and reads a store.
 */
#ifndef DTUNE_TRANSFER_H
#define DTUNE_TRANSFER_H

#include "dtune/error.h"
#include "dtune/result.h"
#include "dtune/space.h"

/* Mapped configs a task starts from, at most. */
#define DT_TRANSFER_SEEDS 8
/* Rows one other task contributes to a prior, at most (its first ones). */
#define DT_TRANSFER_ROWS_PER_TASK 1024
/* Features of one row: per split part log2(factor) and log2(factor) /
 * log2(axis), log2(axis) per split, the value per choice. */
#define DT_TRANSFER_MAX_FEATURES (DT_MAX_KNOBS * (2 * DT_MAX_PARTS + 1))

typedef struct dt_transfer dt_transfer;

/* An empty store. Returns 0 or DT_ENOMEM. Free with dt_transfer_free. */
int dt_transfer_new(dt_transfer **out, dt_error *err);

/* Accepts NULL. */
void dt_transfer_free(dt_transfer *x);

/* Keeps one measurement of point p in space (copied; p must lie in space).
 * A failed or invalid result is kept as 0 GFLOPS. Returns 0 or DT_ENOMEM. */
int dt_transfer_add(dt_transfer *x, const dt_space *space, const dt_point *p,
                    const dt_measure_result *r);

/* Records kept, every task together. */
int dt_transfer_records(const dt_transfer *x);

/* Bytes the records and the row workspace hold (its rows counted
 * DT_TRANSFER_MAX_FEATURES wide); 0 for NULL. */
size_t dt_transfer_bytes(const dt_transfer *x);

/* The number of shape-relative features of a row of space (at most
 * DT_TRANSFER_MAX_FEATURES), and the row of p into out. */
int dt_transfer_nfeatures(const dt_space *space);
void dt_transfer_features(const dt_space *space, const dt_point *p, float *out);

/* Training rows for a prior of `space`: the records of the other tasks of
 * its kind, grouped by task (group_sizes, ngroups), with their GFLOPS. The
 * arrays belong to the store and stay valid until the next call on it.
 * Returns the row count (0: nothing to transfer) or DT_ENOMEM. */
int dt_transfer_rows(dt_transfer *x, const dt_space *space, const float **features,
                     const double **gflops, const int **group_sizes, int *ngroups);

/* Up to max (<= DT_TRANSFER_SEEDS) distinct valid configs of space mapped
 * from the other tasks' best records of its kind: each task's best first,
 * then each one's second, ... (tasks nearest in shape first). Returns how
 * many were written to out. */
int dt_transfer_seeds(const dt_transfer *x, const dt_space *space, int max, dt_point *out);

/* Maps a config of `from` into `to` (spaces of one kind) as the seeds are. */
void dt_transfer_map(const dt_space *from, const dt_point *p, const dt_space *to, dt_point *out);

/* Whether two spaces are of one kind (records of one may serve the other). */
bool dt_transfer_same_kind(const dt_space *a, const dt_space *b);

#endif
