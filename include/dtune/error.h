/* error.h — dtune's error codes and the message carrier every fallible call fills.
 *
 * Functions that can fail return 0 or a negative DT_E* code and, when given a
 * non-NULL dt_error, write a human message into it ("models/x.yaml:12:5: ...").
 */
#ifndef DTUNE_ERROR_H
#define DTUNE_ERROR_H

#include <stddef.h>

enum {
    DT_OK = 0,
    DT_EINVAL = -1,   /* bad input: config, model file, log, command line */
    DT_ENOMEM = -2,   /* allocation failed */
    DT_EIO = -3,      /* file or process I/O failed */
    DT_EPARSE = -4,   /* a file could not be parsed */
    DT_ENOTFOUND = -5,/* a named thing (file, task, policy, backend) does not exist */
    DT_ELIB = -6,     /* a library (GSL, XGBoost, CUDA, libyaml) reported failure */
    DT_ENOTSUP = -7,  /* not supported on this target or machine */
    DT_ENODEV = -8,   /* no device (e.g. no CUDA GPU) */
    DT_EFAIL = -9,    /* a computation did not succeed (fit diverged, ...) */
    DT_ECANCELED = -10 /* a long step ended early: a stop request or a deadline */
};

/* Asked between the parts of a long step (PPO update, cost-model training):
 * non-zero means stop now and return DT_ECANCELED. */
typedef struct dt_cancel {
    int (*cancelled)(void *ctx);
    void *ctx;
} dt_cancel;

/* Whether c (may be NULL or empty) says stop. */
int dt_cancel_now(const dt_cancel *c);

#define DT_ERROR_MSG_MAX 1024

typedef struct dt_error {
    int code;
    char msg[DT_ERROR_MSG_MAX];
} dt_error;

/* Sets err (when non-NULL) to code and a printf-style message; returns code,
 * so a caller can write `return dt_error_set(err, DT_EINVAL, "...")`. */
int dt_error_set(dt_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err (when non-NULL). */
void dt_error_clear(dt_error *err);

/* Exit status of the dtune command for an error code: 2 for bad input
 * (DT_EINVAL, DT_EPARSE, DT_ENOTFOUND), 1 for everything else, 0 for DT_OK. */
int dt_error_exit_status(int code);

/* Short name of a code, e.g. "DT_EINVAL". */
const char *dt_error_name(int code);

#endif
