/* tunelog.c — the durable tuning log: JSON lines appended with fsync, replayed on resume.
 *
 * Writing. Each record becomes one compact JSON object (jansson) and a '\n',
 * written to an O_APPEND descriptor by one write() loop and fsync'd before the
 * append returns; a mutex serialises appends from several threads and an
 * exclusive flock keeps a second process from appending to the same file. A
 * write that fails half-way is cut back off the file, so the next record still
 * starts a clean line. Opening a log whose last line lacks its '\n' either
 * completes it, when it parses as one whole JSON object (a record whose
 * write stopped just before its '\n', or a file edited by hand: nothing
 * measured is dropped), or cuts it off (a crash mid-write: the line replay
 * reports as the dropped tail; leaving it would put garbage in the middle
 * of the file).
 *
 * Reading. Lines come from getline. A line that lacks its '\n' can only be
 * the last one: it is read as a record when it parses as one whole JSON
 * object (the same rule the opening applies), else it is the dropped tail
 * (the writer sends the '\n' in the same write, so such a line was never
 * acknowledged); a line that is not a JSON
 * object, or is over DT_TUNELOG_RECORD_MAX, is DT_EPARSE naming path:line
 * wherever it stands: it was written whole, so it is damage or a hand edit,
 * not a crash, and nothing measured may be dropped silently. Fields are decoded strictly through
 * the same tables that encode them: a missing field or a wrong type is
 * DT_EINVAL naming path:line and the field; unknown keys are ignored so that
 * later versions may add fields.
 *
 * Numbers. Doubles are written with 17 significant digits, which reads back
 * bit for bit; NaN and infinities, which JSON lacks, as the strings "nan",
 * "inf" and "-inf". A uint64 up to INT64_MAX is a JSON integer, a larger one
 * a decimal string. latency is logged in milliseconds, so latency_s comes
 * back within one rounding of the value written.
 */
#include "dtune/tunelog.h"
#include "dtune/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))
#define TAIL_CHUNK 4096

struct dt_tunelog {
    int fd;
    bool broken;                   /* a failed fsync or cut-back: refuse appends */
    pthread_mutex_t lock;
    char path[DT_PATH_MAX];
};

/* ---- field tables: one description drives both encoding and decoding ---- */

typedef enum field_kind {
    F_STR,      /* char array of `size` bytes */
    F_INT,      /* int */
    F_U64,      /* uint64_t */
    F_DBL,      /* double */
    F_MS,       /* double seconds in the struct, milliseconds in the log */
    F_RESULT,   /* dt_result_class, by name */
    F_POSITIVE, /* double, optional: 0 = left out, else a positive finite number */
    F_TIME      /* double run seconds, 0 to DT_TUNELOG_TIME_MAX */
} field_kind;

typedef struct field {
    const char *name;
    field_kind kind;
    size_t offset;
    size_t size;                   /* F_STR: capacity including the NUL */
    bool optional;                 /* F_STR: omitted when empty, "" when absent;
                                      F_POSITIVE: omitted when 0, 0 when absent */
} field;

#define MEMBER_SIZE(type, member) sizeof(((type *)0)->member)
#define FIELD(type, key, kind, member) \
    { key, kind, offsetof(type, member), MEMBER_SIZE(type, member), false }
#define OPTIONAL(type, key, member) \
    { key, F_STR, offsetof(type, member), MEMBER_SIZE(type, member), true }
#define OPTIONAL_POSITIVE(type, key, member) \
    { key, F_POSITIVE, offsetof(type, member), MEMBER_SIZE(type, member), true }

static const field run_fields[] = {
    FIELD(dt_run_record, "model", F_STR, model),
    FIELD(dt_run_record, "target", F_STR, target),
    FIELD(dt_run_record, "seed", F_U64, seed),
    FIELD(dt_run_record, "started", F_STR, started),
    OPTIONAL(dt_run_record, "id", id),
    OPTIONAL(dt_run_record, "machine", machine),
    OPTIONAL(dt_run_record, "dtune_version", dtune_version),
    OPTIONAL(dt_run_record, "backend", backend),
    OPTIONAL(dt_run_record, "policy", policy),
    OPTIONAL(dt_run_record, "strategy", strategy),
    OPTIONAL(dt_run_record, "tasks", tasks),
};

/* A measurement of one config of one task: the fields measure and retime
 * records share (their structs name them alike). */
#define MEASUREMENT_FIELDS(type)                          \
    FIELD(type, "task", F_STR, task),                     \
    FIELD(type, "task_index", F_INT, task_index),         \
    FIELD(type, "config", F_U64, config),                 \
    OPTIONAL(type, "knobs", knobs),                       \
    FIELD(type, "result", F_RESULT, m.result),            \
    FIELD(type, "gflops", F_DBL, m.gflops),               \
    FIELD(type, "latency_ms", F_MS, m.latency_s),         \
    FIELD(type, "repeats", F_INT, m.repeats),             \
    FIELD(type, "cv", F_DBL, m.cv),                       \
    FIELD(type, "compile_ms", F_DBL, m.compile_ms),       \
    FIELD(type, "run_ms", F_DBL, m.run_ms),               \
    OPTIONAL(type, "detail", m.detail)

static const field measure_fields[] = {
    MEASUREMENT_FIELDS(dt_measure_record),
    FIELD(dt_measure_record, "slot", F_INT, slot),
    FIELD(dt_measure_record, "trial", F_INT, trial),
    FIELD(dt_measure_record, "time", F_TIME, time),
    OPTIONAL_POSITIVE(dt_measure_record, "cost_model_gflops", cost_model_gflops),
};

/* "scores" and "fits" are arrays and are handled by encode_slot / decode_slot. */
static const field slot_fields[] = {
    FIELD(dt_slot_record, "slot", F_INT, slot),
    FIELD(dt_slot_record, "task", F_STR, task),
    FIELD(dt_slot_record, "task_index", F_INT, task_index),
    FIELD(dt_slot_record, "time", F_TIME, time),
    FIELD(dt_slot_record, "model_latency_ms", F_DBL, model_latency_ms),
    FIELD(dt_slot_record, "decision_ms", F_DBL, decision_ms),
};

static const field failed_fields[] = {
    FIELD(dt_failed_record, "task", F_STR, task),
    FIELD(dt_failed_record, "task_index", F_INT, task_index),
    FIELD(dt_failed_record, "reason", F_STR, reason),
    FIELD(dt_failed_record, "reference_ms", F_MS, reference_s),
    FIELD(dt_failed_record, "time", F_TIME, time),
    OPTIONAL(dt_failed_record, "timed_on", timed_on),
};

static const field retime_fields[] = {
    MEASUREMENT_FIELDS(dt_retime_record),
    FIELD(dt_retime_record, "round", F_INT, round),
    FIELD(dt_retime_record, "time", F_TIME, time),
};

static const field confirm_fields[] = {
    MEASUREMENT_FIELDS(dt_confirm_record),
    FIELD(dt_confirm_record, "round", F_INT, round),
    FIELD(dt_confirm_record, "slot", F_INT, slot),
    FIELD(dt_confirm_record, "time", F_TIME, time),
};

static const field confirmed_fields[] = {
    FIELD(dt_confirmed_record, "task", F_STR, task),
    FIELD(dt_confirmed_record, "task_index", F_INT, task_index),
    FIELD(dt_confirmed_record, "candidate", F_U64, candidate),
    FIELD(dt_confirmed_record, "incumbent", F_U64, incumbent),
    FIELD(dt_confirmed_record, "candidate_ms", F_DBL, candidate_ms),
    FIELD(dt_confirmed_record, "incumbent_ms", F_DBL, incumbent_ms),
    FIELD(dt_confirmed_record, "rounds", F_INT, rounds),
    FIELD(dt_confirmed_record, "accepted", F_INT, accepted),
    FIELD(dt_confirmed_record, "slot", F_INT, slot),
    FIELD(dt_confirmed_record, "time", F_TIME, time),
};

static const field drift_fields[] = {
    MEASUREMENT_FIELDS(dt_drift_record),
    FIELD(dt_drift_record, "slot", F_INT, slot),
    FIELD(dt_drift_record, "time", F_TIME, time),
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Where a record came from, for messages. */
typedef struct line_ref {
    const char *path;
    long line;
} line_ref;

/* ---- encoding ----------------------------------------------------------- */

static json_t *encode_double(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static json_t *encode_u64(uint64_t v)
{
    char digits[24];
    if (v <= (uint64_t)LLONG_MAX)
        return json_integer((json_int_t)v);
    snprintf(digits, sizeof digits, "%" PRIu64, v);
    return json_string(digits);
}

/* JSON strings must be UTF-8; compiler messages need not be. Bytes of an
 * invalid string that are not ASCII become '?'. */
static json_t *encode_string(const char *s, size_t cap)
{
    size_t len = strnlen(s, cap - 1);   /* an unterminated array loses its last byte */
    json_t *str = json_stringn(s, len);
    char ascii[DT_PATH_MAX];
    if (str || len >= sizeof ascii)
        return str;
    for (size_t i = 0; i < len; i++)
        ascii[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
    return json_stringn(ascii, len);
}

static json_t *encode_field(const field *f, const void *rec)
{
    const char *p = (const char *)rec + f->offset;
    switch (f->kind) {
    case F_STR:
        return encode_string(p, f->size);
    case F_INT:
        return json_integer(*(const int *)p);
    case F_U64:
        return encode_u64(*(const uint64_t *)p);
    case F_DBL:
    case F_POSITIVE:
    case F_TIME:
        return encode_double(*(const double *)p);
    case F_MS:
        return encode_double(*(const double *)p * 1000.0);
    case F_RESULT:
        return json_string(dt_result_name(*(const dt_result_class *)p));
    }
    return NULL;
}

static bool time_ok(double t)
{
    return t >= 0 && t <= DT_TUNELOG_TIME_MAX;   /* false for NaN */
}

/* A value the log cannot hold: a result class out of range, an optional
 * positive number that is neither 0 (none) nor positive and finite. */
static int check_field(const field *f, const void *rec, dt_error *err)
{
    const char *p = (const char *)rec + f->offset;
    if (f->kind == F_RESULT && (*(const int *)p < 0 || *(const int *)p >= DT_RESULT_COUNT))
        return dt_error_set(err, DT_EINVAL, "field '%s': %d is not a result class",
                            f->name, *(const int *)p);
    double v = f->kind == F_POSITIVE ? *(const double *)p : 0;
    if (v != 0 && !(v > 0 && isfinite(v)))
        return dt_error_set(err, DT_EINVAL, "field '%s': %g is not a positive finite number",
                            f->name, v);
    if (f->kind == F_TIME && !time_ok(*(const double *)p))
        return dt_error_set(err, DT_EINVAL, "field '%s': %g is not a run time of 0 to %g s", f->name,
                            *(const double *)p, DT_TUNELOG_TIME_MAX);
    return 0;
}

/* An optional field with nothing to log. */
static bool field_absent(const field *f, const void *rec)
{
    const char *p = (const char *)rec + f->offset;
    return f->optional && (f->kind == F_POSITIVE ? *(const double *)p == 0 : *p == '\0');
}

/* Adds every field of rec to obj. */
static int encode_fields(json_t *obj, const field *fields, size_t n, const void *rec,
                         dt_error *err)
{
    for (size_t i = 0; i < n; i++) {
        const field *f = &fields[i];
        int rc = check_field(f, rec, err);
        if (rc != 0)
            return rc;
        if (field_absent(f, rec))
            continue;
        if (json_object_set_new(obj, f->name, encode_field(f, rec)) != 0)
            return dt_error_set(err, DT_ENOMEM, "field '%s': out of memory", f->name);
    }
    return 0;
}

/* *out = a new object {"type": type, fields...}. */
static int encode_record(const char *type, const field *fields, size_t n, const void *rec,
                         json_t **out, dt_error *err)
{
    json_t *obj = json_object();
    int rc;
    *out = NULL;
    if (!obj || json_object_set_new(obj, "type", json_string(type)) != 0) {
        json_decref(obj);
        return dt_error_set(err, DT_ENOMEM, "out of memory encoding a %s record", type);
    }
    rc = encode_fields(obj, fields, n, rec, err);
    if (rc != 0) {
        json_decref(obj);
        return rc;
    }
    *out = obj;
    return 0;
}

static json_t *encode_scores(const double *scores, int n)
{
    json_t *array = json_array();
    for (int i = 0; array && i < n; i++) {
        if (json_array_append_new(array, encode_double(scores[i])) != 0) {
            json_decref(array);
            array = NULL;
        }
    }
    return array;
}

/* One entry of "fits"; "pred" only where the fit holds a prediction. NULL
 * when out of memory. */
static json_t *encode_fit(const dt_slot_fit *fit)
{
    const dt_belief_curve *c = &fit->curve;
    const dt_belief_forecast *p = &fit->pred;
    json_t *entry = json_pack("{s:i, s:o, s:o, s:o, s:o, s:o}", "task_index", fit->task_index,
                              "first", encode_double(c->first), "horizon", encode_double(c->horizon),
                              "median", encode_scores(c->median, c->n),
                              "lo", encode_scores(c->lo, c->n), "hi", encode_scores(c->hi, c->n));
    if (!entry || !dt_belief_forecast_ok(p))
        return entry;
    json_t *pred = json_pack("{s:o, s:o, s:o, s:o}", "gflops", encode_double(p->gflops),
                             "lo", encode_double(p->lo_gflops), "hi", encode_double(p->hi_gflops),
                             "horizon", encode_double(p->horizon));
    if (!pred || json_object_set_new(entry, "pred", pred) != 0) {
        json_decref(entry);
        return NULL;
    }
    return entry;
}

/* A curve's span: an empty curve (n 0: the task's fit was dropped) has
 * none to check beyond finite numbers; a drawn one runs from trial first
 * to horizon, 1 <= first <= horizon. The writer and the reader use this
 * one rule, so that no run writes a fit its resume refuses. */
static bool fit_span_ok(const dt_belief_curve *c)
{
    if (c->n == 0)
        return isfinite(c->first) && isfinite(c->horizon);
    return c->first >= 1 && c->first <= c->horizon && isfinite(c->horizon);
}

static int check_fits(const dt_slot_record *r, dt_error *err)
{
    if (r->nfits < 0 || r->nfits > DT_MAX_SCORES || (r->nfits > 0 && !r->fits))
        return dt_error_set(err, DT_EINVAL, "slot record: nfits %d is not in 0..%d",
                            r->nfits, DT_MAX_SCORES);
    for (int i = 0; i < r->nfits; i++) {
        int n = r->fits[i].curve.n, k = r->fits[i].task_index;
        if (k < 0 || k >= DT_MAX_SCORES || n < 0 || n == 1 || n > DT_BELIEF_CURVE_POINTS)
            return dt_error_set(err, DT_EINVAL,
                                "slot record: fit %d (task %d) has %d points; need 0 or "
                                "2..%d, task 0..%d", i, k, n, DT_BELIEF_CURVE_POINTS,
                                DT_MAX_SCORES - 1);
        if (!fit_span_ok(&r->fits[i].curve))
            return dt_error_set(err, DT_EINVAL, "slot record: fit %d (task %d) spans trials %g..%g; "
                                "need 1 <= first <= horizon", i, k, r->fits[i].curve.first,
                                r->fits[i].curve.horizon);
    }
    return 0;
}

static int encode_slot(const dt_slot_record *r, json_t **out, dt_error *err)
{
    int rc;
    *out = NULL;
    if (r->nscores < 0 || r->nscores > DT_MAX_SCORES)
        return dt_error_set(err, DT_EINVAL, "slot record: nscores %d is not in 0..%d",
                            r->nscores, DT_MAX_SCORES);
    if ((rc = check_fits(r, err)))
        return rc;
    rc = encode_record("slot", slot_fields, COUNT(slot_fields), r, out, err);
    if (rc != 0)
        return rc;
    json_t *fits = r->nfits > 0 ? json_array() : NULL;
    for (int i = 0; fits && i < r->nfits; i++) {
        if (json_array_append_new(fits, encode_fit(&r->fits[i])) != 0) {
            json_decref(fits);
            fits = NULL;
        }
    }
    if (json_object_set_new(*out, "scores", encode_scores(r->scores, r->nscores)) != 0 ||
        (r->nfits > 0 && json_object_set_new(*out, "fits", fits) != 0)) {
        json_decref(*out);
        *out = NULL;
        return dt_error_set(err, DT_ENOMEM, "out of memory encoding a slot record");
    }
    return 0;
}

/* ---- writing ------------------------------------------------------------ */

static int fsync_fd(int fd)
{
    while (fsync(fd) != 0) {
        if (errno != EINTR)
            return errno;
    }
    return 0;
}

/* obj as one line ending in '\n', malloc'd. */
static int render_line(const json_t *obj, char **line, size_t *len, dt_error *err)
{
    size_t size = json_dumpb(obj, NULL, 0, DUMP_FLAGS);
    if (size + 1 > DT_TUNELOG_RECORD_MAX)
        return dt_error_set(err, DT_EINVAL, "a log record of %zu bytes is over the limit of %d bytes",
                            size + 1, DT_TUNELOG_RECORD_MAX);
    char *buf = size > 0 ? malloc(size + 1) : NULL;
    if (!buf)
        return dt_error_set(err, DT_ENOMEM, "out of memory rendering a log record");
    if (json_dumpb(obj, buf, size, DUMP_FLAGS) != size) {
        free(buf);
        return dt_error_set(err, DT_ELIB, "jansson could not render a log record");
    }
    buf[size] = '\n';
    *line = buf;
    *len = size + 1;
    return 0;
}

/* Removes a partly written record, so the file again ends on a whole line. */
static void cut_back(dt_tunelog *log, off_t start)
{
    int rc;
    do {
        rc = ftruncate(log->fd, start);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0 || fsync_fd(log->fd) != 0)
        log->broken = true;
}

/* Writes and fsyncs one line; the caller holds log->lock. */
static int sync_parent_dir(const char *path, dt_error *err);

/* Copies every byte of the open log (from) into fd `to`, fsync'd. */
static int copy_log(int from, int to)
{
    char chunk[1 << 16];
    off_t at = 0;
    for (;;) {
        ssize_t n = pread(from, chunk, sizeof chunk, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return fsync_fd(to);
        int e = dt_write_all(to, chunk, (size_t)n);
        if (e != 0)
            return e;
        at += n;
    }
}

/* The log was deleted: writes it back under its name from the open file,
 * which holds every record, and appends there from now on. */
static int restore_deleted(dt_tunelog *log, dt_error *err)
{
    fprintf(stderr, "dtune: %s was deleted during the run; writing it back from the open file\n",
            log->path);
    int fd = open(log->path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int e = fd < 0 ? errno : flock(fd, LOCK_EX | LOCK_NB) != 0 ? errno : copy_log(log->fd, fd);
    if (e == 0 && sync_parent_dir(log->path, err) != 0)
        e = EIO;
    if (e != 0) {
        if (fd >= 0)
            close(fd);
        log->broken = true;
        return dt_error_set(err, DT_EIO, "%s was deleted during the run and cannot be written back "
                            "(%s); stopping", log->path, strerror(e));
    }
    close(log->fd);
    log->fd = fd;
    return 0;
}

/* The log's path must still name the file appended to, or every later record
 * would go to a file nobody can see. Deleted: written back (restore_deleted).
 * Replaced by another file: that file is left alone, the run's own log is
 * saved beside it as PATH.run-PID, and appending stops (DT_EIO). */
static int check_still_there(dt_tunelog *log, dt_error *err)
{
    struct stat mine, there;
    if (fstat(log->fd, &mine) != 0)
        return dt_error_set(err, DT_EIO, "%s: %s", log->path, strerror(errno));
    if (stat(log->path, &there) != 0)
        return errno == ENOENT ? restore_deleted(log, err)
                               : dt_error_set(err, DT_EIO, "%s: %s", log->path, strerror(errno));
    if (there.st_dev == mine.st_dev && there.st_ino == mine.st_ino)
        return 0;
    char saved[DT_PATH_MAX + 32];
    snprintf(saved, sizeof saved, "%s.run-%d", log->path, (int)getpid());
    int fd = open(saved, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int e = fd < 0 ? errno : copy_log(log->fd, fd);
    if (fd >= 0)
        close(fd);
    log->broken = true;
    if (e != 0)
        return dt_error_set(err, DT_EIO, "%s was replaced by another file during the run, and the run's "
                            "own log could not be saved as %s (%s); stopping", log->path, saved, strerror(e));
    return dt_error_set(err, DT_EIO, "%s was replaced by another file during the run; the run's own log "
                        "is saved as %s; stopping (move it back to resume)", log->path, saved);
}

static int write_line_locked(dt_tunelog *log, const char *line, size_t len, dt_error *err)
{
    off_t start;
    int e;
    if (log->broken)
        return dt_error_set(err, DT_EIO, "%s: an earlier write or fsync failed; "
                            "the log accepts no more records", log->path);
    int rc = check_still_there(log, err);
    if (rc)
        return rc;
    start = lseek(log->fd, 0, SEEK_END);
    if (start < 0)
        return dt_error_set(err, DT_EIO, "%s: %s", log->path, strerror(errno));
    e = dt_write_all(log->fd, line, len);
    if (e != 0) {
        cut_back(log, start);
        return dt_error_set(err, DT_EIO, "%s: write failed: %s", log->path, strerror(e));
    }
    e = fsync_fd(log->fd);
    if (e != 0) {
        /* After a failed fsync the kernel may have dropped the dirty pages;
         * nothing later written can be trusted to follow them. */
        log->broken = true;
        return dt_error_set(err, DT_EIO, "%s: fsync failed: %s", log->path, strerror(e));
    }
    return 0;
}

/* Appends obj (consumed) as one durable line. */
static int append_object(dt_tunelog *log, json_t *obj, dt_error *err)
{
    char *line = NULL;
    size_t len = 0;
    int rc = render_line(obj, &line, &len, err);
    json_decref(obj);
    if (rc != 0)
        return rc;
    if (pthread_mutex_lock(&log->lock) != 0) {
        free(line);
        return dt_error_set(err, DT_EIO, "%s: cannot lock the log", log->path);
    }
    rc = write_line_locked(log, line, len, err);
    pthread_mutex_unlock(&log->lock);
    free(line);
    return rc;
}

int dt_tunelog_append_run(dt_tunelog *log, const dt_run_record *r, dt_error *err)
{
    json_t *obj;
    int rc = encode_record("run", run_fields, COUNT(run_fields), r, &obj, err);
    return rc != 0 ? rc : append_object(log, obj, err);
}

int dt_tunelog_append_measure(dt_tunelog *log, const dt_measure_record *r, dt_error *err)
{
    json_t *obj;
    int rc = encode_record("measure", measure_fields, COUNT(measure_fields), r, &obj, err);
    return rc != 0 ? rc : append_object(log, obj, err);
}

int dt_tunelog_append_slot(dt_tunelog *log, const dt_slot_record *r, dt_error *err)
{
    json_t *obj;
    int rc = encode_slot(r, &obj, err);
    return rc != 0 ? rc : append_object(log, obj, err);
}

int dt_tunelog_append_failed(dt_tunelog *log, const dt_failed_record *r, dt_error *err)
{
    json_t *obj;
    int rc = encode_record("failed", failed_fields, COUNT(failed_fields), r, &obj, err);
    return rc != 0 ? rc : append_object(log, obj, err);
}

int dt_tunelog_append_retime(dt_tunelog *log, const dt_retime_record *r, dt_error *err)
{
    json_t *obj;
    int rc = encode_record("retime", retime_fields, COUNT(retime_fields), r, &obj, err);
    return rc != 0 ? rc : append_object(log, obj, err);
}

int dt_tunelog_append_confirm(dt_tunelog *log, const dt_confirm_record *r, dt_error *err)
{
    json_t *obj;
    int rc = encode_record("confirm", confirm_fields, COUNT(confirm_fields), r, &obj, err);
    return rc != 0 ? rc : append_object(log, obj, err);
}

/* GFLOPS of a task of flops at ms; 0 when ms is no latency. */
static double gflops_at(double flops, double ms)
{
    return isfinite(ms) && ms > 0 ? flops / (ms * 1e-3) * 1e-9 : 0;
}

void dt_confirmed_figures(const dt_confirmed_record *rec, double flops, double before_gflops,
                          double *candidate, double *incumbent)
{
    *incumbent = gflops_at(flops, rec->incumbent_ms);
    if (*incumbent <= 0)
        *incumbent = before_gflops;
    *candidate = gflops_at(flops, rec->candidate_ms);
    if (*candidate <= 0 || (!rec->accepted && *candidate > *incumbent))
        *candidate = *incumbent;
}

int dt_tunelog_append_confirmed(dt_tunelog *log, const dt_confirmed_record *r, dt_error *err)
{
    json_t *obj;
    int rc = encode_record("confirmed", confirmed_fields, COUNT(confirmed_fields), r, &obj, err);
    return rc != 0 ? rc : append_object(log, obj, err);
}

int dt_tunelog_append_drift(dt_tunelog *log, const dt_drift_record *r, dt_error *err)
{
    json_t *obj;
    int rc = encode_record("drift", drift_fields, COUNT(drift_fields), r, &obj, err);
    return rc != 0 ? rc : append_object(log, obj, err);
}

/* ---- reading one line --------------------------------------------------- */

/* Whether a last line without its '\n' (len bytes) is a whole JSON object:
 * a record that lacks only its newline, kept by reading and opening alike. */
static bool whole_without_newline(const char *buf, size_t len)
{
    if (len == 0 || len > DT_TUNELOG_RECORD_MAX - 1 || dt_json_too_deep(buf, len, DT_INPUT_MAX_DEPTH) >= 0)
        return false;
    json_error_t jerr;
    json_t *obj = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    bool whole = obj && json_is_object(obj);
    json_decref(obj);
    return whole;
}

/* Parses one line (with its '\n') as a JSON object. NULL and a reason in
 * why when it is unfinished or not a JSON object. */
static json_t *parse_line(const char *buf, size_t len, char *why, size_t whylen)
{
    json_error_t jerr;
    json_t *obj;
    if (len == 0 || buf[len - 1] != '\n') {
        snprintf(why, whylen, "unfinished record (%zu bytes, no newline)", len);
        return NULL;
    }
    long deep = dt_json_too_deep(buf, len - 1, DT_INPUT_MAX_DEPTH);
    if (deep >= 0) {
        snprintf(why, whylen, "not a record: nested deeper than %d levels (column %ld)",
                 DT_INPUT_MAX_DEPTH, deep + 1);
        return NULL;
    }
    obj = json_loadb(buf, len - 1, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj) {
        snprintf(why, whylen, "not JSON: %s (column %d)", jerr.text, jerr.column);
        return NULL;
    }
    if (!json_is_object(obj)) {
        json_decref(obj);
        snprintf(why, whylen, "not a JSON object");
        return NULL;
    }
    return obj;
}

/* ---- opening: cut off an unfinished last line --------------------------- */

static int pread_full(int fd, char *buf, size_t len, off_t at)
{
    while (len > 0) {
        ssize_t n = pread(fd, buf, len, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
        at += n;
    }
    return 0;
}

/* Offset just after the last '\n' before end (0 if none). */
static int line_start(int fd, off_t end, off_t *start)
{
    char chunk[TAIL_CHUNK];
    while (end > 0) {
        off_t from = end > TAIL_CHUNK ? end - TAIL_CHUNK : 0;
        if (pread_full(fd, chunk, (size_t)(end - from), from) != 0)
            return -1;
        for (off_t i = end - from; i > 0; i--) {
            if (chunk[i - 1] == '\n') {
                *start = from + i;
                return 0;
            }
        }
        end = from;
    }
    *start = 0;
    return 0;
}

/* Whether the bytes [start, end) of the log are one whole JSON object. */
static int tail_is_whole(dt_tunelog *log, off_t start, off_t end, bool *whole)
{
    *whole = false;
    if (end - start > DT_TUNELOG_RECORD_MAX)
        return 0;
    char *buf = malloc((size_t)(end - start) + 1);
    if (!buf)
        return -1;
    int rc = pread_full(log->fd, buf, (size_t)(end - start), start);
    if (rc == 0)
        *whole = whole_without_newline(buf, (size_t)(end - start));
    free(buf);
    return rc;
}

/* A last line that lacks its newline is completed when it is a whole record
 * (see whole_without_newline) and cut off otherwise: the writer sends record
 * and '\n' in one write, so such a line was never acknowledged (a torn
 * write). Any other bad line is left for replay to refuse: nothing else is
 * deleted. */
static int trim_tail(dt_tunelog *log, dt_error *err)
{
    struct stat st;
    off_t start;
    char last;
    if (fstat(log->fd, &st) != 0)
        return dt_error_set(err, DT_EIO, "%s: %s", log->path, strerror(errno));
    if (st.st_size == 0)
        return 0;
    if (pread_full(log->fd, &last, 1, st.st_size - 1) != 0)
        return dt_error_set(err, DT_EIO, "%s: cannot read: %s", log->path, strerror(errno));
    if (last == '\n')
        return 0;
    bool whole;
    if (line_start(log->fd, st.st_size - 1, &start) != 0 || tail_is_whole(log, start, st.st_size, &whole) != 0)
        return dt_error_set(err, DT_EIO, "%s: cannot read: %s", log->path, strerror(errno));
    if (whole) {
        if (dt_write_all(log->fd, "\n", 1) != 0 || fsync_fd(log->fd) != 0)
            return dt_error_set(err, DT_EIO, "%s: cannot complete the last record with its newline: %s",
                                log->path, strerror(errno));
        return 0;
    }
    if (ftruncate(log->fd, start) != 0 || fsync_fd(log->fd) != 0)
        return dt_error_set(err, DT_EIO, "%s: cannot cut off the unfinished last line: %s",
                            log->path, strerror(errno));
    return 0;
}

/* Makes the file's directory entry durable (the log may be new). */
static int sync_parent_dir(const char *path, dt_error *err)
{
    char dir[DT_PATH_MAX];
    const char *slash = strrchr(path, '/');
    int fd, e;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash == path ? 1 : slash - path), path);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return dt_error_set(err, DT_EIO, "%s: %s", dir, strerror(errno));
    e = fsync_fd(fd);
    close(fd);
    if (e != 0 && e != EINVAL)   /* EINVAL: the file system cannot sync directories */
        return dt_error_set(err, DT_EIO, "%s: fsync failed: %s", dir, strerror(e));
    return 0;
}

static int open_locked_fd(const char *path, int *fd, dt_error *err)
{
    *fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
        return dt_error_set(err, errno == ENOENT ? DT_ENOTFOUND : DT_EIO,
                            "%s: cannot open for appending: %s", path, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(*fd);
        *fd = -1;
        if (e == EWOULDBLOCK)
            return dt_error_set(err, DT_EIO, "%s: another process is appending to this log",
                                path);
        return dt_error_set(err, DT_EIO, "%s: cannot lock: %s", path, strerror(e));
    }
    return 0;
}

int dt_tunelog_open(const char *path, dt_tunelog **out, dt_error *err)
{
    dt_tunelog *log;
    int rc;
    *out = NULL;
    if (strlen(path) >= DT_PATH_MAX)
        return dt_error_set(err, DT_EINVAL, "log path is longer than %d bytes", DT_PATH_MAX - 1);
    log = calloc(1, sizeof *log);
    if (!log)
        return dt_error_set(err, DT_ENOMEM, "out of memory opening %s", path);
    snprintf(log->path, sizeof log->path, "%s", path);
    rc = open_locked_fd(path, &log->fd, err);
    if (rc != 0)
        goto fail;
    rc = trim_tail(log, err);
    if (rc == 0)
        rc = sync_parent_dir(path, err);
    if (rc == 0 && pthread_mutex_init(&log->lock, NULL) != 0)
        rc = dt_error_set(err, DT_ENOMEM, "cannot create the log's mutex");
    if (rc != 0) {
        close(log->fd);
        goto fail;
    }
    *out = log;
    return 0;
fail:
    free(log);
    return rc;
}

void dt_tunelog_close(dt_tunelog *log)
{
    if (!log)
        return;
    close(log->fd);   /* every record is already fsync'd; close has nothing to lose */
    pthread_mutex_destroy(&log->lock);
    free(log);
}

/* ---- decoding ----------------------------------------------------------- */

static int field_error(const line_ref *at, const char *name, const char *what, dt_error *err)
{
    return dt_error_set(err, DT_EINVAL, "%s:%ld: field '%s' %s", at->path, at->line, name, what);
}

static int decode_u64(const json_t *v, uint64_t *out)
{
    const char *s;
    char *end;
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return -1;
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    s = json_string_value(v);
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno != 0 || *end != '\0' ? -1 : 0;
}

static int decode_double(const json_t *v, double *out)
{
    const char *s = json_string_value(v);
    if (json_is_number(v))
        *out = json_number_value(v);
    else if (s && strcmp(s, "nan") == 0)
        *out = NAN;
    else if (s && strcmp(s, "inf") == 0)
        *out = INFINITY;
    else if (s && strcmp(s, "-inf") == 0)
        *out = -INFINITY;
    else
        return -1;
    return 0;
}

static int decode_string(const json_t *v, char *out, size_t cap, const field *f,
                         const line_ref *at, dt_error *err)
{
    size_t len;
    if (!json_is_string(v))
        return field_error(at, f->name, "must be a string", err);
    len = json_string_length(v);
    if (len >= cap || strlen(json_string_value(v)) != len) {
        char what[64];
        snprintf(what, sizeof what, "must be a string of at most %zu bytes", cap - 1);
        return field_error(at, f->name, what, err);
    }
    memcpy(out, json_string_value(v), len + 1);
    return 0;
}

static int decode_int(const json_t *v, int *out)
{
    json_int_t i;
    if (!json_is_integer(v))
        return -1;
    i = json_integer_value(v);
    if (i < INT_MIN || i > INT_MAX)
        return -1;
    *out = (int)i;
    return 0;
}

static int decode_field(const field *f, const json_t *obj, void *rec, const line_ref *at,
                        dt_error *err)
{
    char *p = (char *)rec + f->offset;
    const json_t *v = json_object_get(obj, f->name);
    if (!v && f->optional)
        return 0;   /* rec is zeroed */
    if (!v)
        return field_error(at, f->name, "is missing", err);
    switch (f->kind) {
    case F_STR:
        return decode_string(v, p, f->size, f, at, err);
    case F_INT:
        return decode_int(v, (int *)p) == 0 ? 0
               : field_error(at, f->name, "must be an integer that fits an int", err);
    case F_U64:
        return decode_u64(v, (uint64_t *)p) == 0 ? 0
               : field_error(at, f->name, "must be a non-negative integer", err);
    case F_TIME:
        if (decode_double(v, (double *)p) != 0 || !time_ok(*(double *)p)) {
            char what[96];
            snprintf(what, sizeof what, "must be a run time in seconds, 0 to %g", DT_TUNELOG_TIME_MAX);
            return field_error(at, f->name, what, err);
        }
        return 0;
    case F_DBL:
    case F_MS:
        if (decode_double(v, (double *)p) != 0)
            return field_error(at, f->name, "must be a number", err);
        if (f->kind == F_MS)
            *(double *)p /= 1000.0;
        return 0;
    case F_POSITIVE:
        if (decode_double(v, (double *)p) != 0 || !(*(double *)p > 0 && isfinite(*(double *)p)))
            return field_error(at, f->name, "must be a positive finite number", err);
        return 0;
    case F_RESULT: {
        const char *name = json_string_value(v);
        if (!name || dt_result_parse(name, (dt_result_class *)p) != 0)
            return field_error(at, f->name, "must name a result class (ok, crash, ...)", err);
        return 0;
    }
    }
    return field_error(at, f->name, "has no decoder", err);
}

static int decode_fields(const field *fields, size_t n, const json_t *obj, void *rec,
                         const line_ref *at, dt_error *err)
{
    for (size_t i = 0; i < n; i++) {
        int rc = decode_field(&fields[i], obj, rec, at, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int decode_scores(const json_t *obj, dt_slot_record *r, const line_ref *at,
                         dt_error *err)
{
    const json_t *scores = json_object_get(obj, "scores");
    if (!scores)
        return field_error(at, "scores", "is missing", err);
    if (!json_is_array(scores) || json_array_size(scores) > DT_MAX_SCORES)
        return field_error(at, "scores", "must be an array of at most 256 numbers", err);
    r->nscores = (int)json_array_size(scores);
    for (int i = 0; i < r->nscores; i++) {
        if (decode_double(json_array_get(scores, (size_t)i), &r->scores[i]) != 0)
            return field_error(at, "scores", "must hold only numbers", err);
    }
    return 0;
}

/* Numbers of one of a fit's arrays into out[0..n); -1 unless every one is a
 * finite number. */
static int decode_points(const json_t *array, double *out, int n)
{
    for (int i = 0; i < n; i++)
        if (decode_double(json_array_get(array, (size_t)i), &out[i]) != 0 || !isfinite(out[i]))
            return -1;
    return 0;
}

/* An entry's "pred", optional (absent: none, all zero): 0, or -1 with what
 * naming the problem. */
static int decode_pred(const json_t *entry, dt_belief_forecast *p, char *what, size_t len)
{
    const json_t *pred = json_object_get(entry, "pred");
    *p = (dt_belief_forecast){ 0 };
    if (!pred)
        return 0;
    if (!json_is_object(pred) || decode_double(json_object_get(pred, "gflops"), &p->gflops) ||
        decode_double(json_object_get(pred, "lo"), &p->lo_gflops) ||
        decode_double(json_object_get(pred, "hi"), &p->hi_gflops) ||
        decode_double(json_object_get(pred, "horizon"), &p->horizon) ||
        !dt_belief_forecast_ok(p)) {
        snprintf(what, len, "needs a pred of finite numbers gflops, lo <= hi and horizon > 0");
        return -1;
    }
    return 0;
}

/* One entry of "fits": 0, or -1 with what naming the problem. */
static int decode_fit(const json_t *entry, dt_slot_fit *fit, char *what, size_t len)
{
    dt_belief_curve *c = &fit->curve;
    const json_t *median = json_object_get(entry, "median"), *lo = json_object_get(entry, "lo"),
                 *hi = json_object_get(entry, "hi");
    if (!json_is_object(entry) || decode_int(json_object_get(entry, "task_index"),
                                             &fit->task_index) != 0 ||
        fit->task_index < 0 || fit->task_index >= DT_MAX_SCORES) {
        snprintf(what, len, "needs a task_index in 0..%d", DT_MAX_SCORES - 1);
        return -1;
    }
    size_t n = json_array_size(median);
    if (!json_is_array(median) || !json_is_array(lo) || !json_is_array(hi) ||
        json_array_size(lo) != n || json_array_size(hi) != n || n == 1 ||
        n > DT_BELIEF_CURVE_POINTS) {
        snprintf(what, len, "needs arrays median, lo and hi of one length, 0 or 2..%d",
                 DT_BELIEF_CURVE_POINTS);
        return -1;
    }
    c->n = (int)n;
    if (decode_double(json_object_get(entry, "first"), &c->first) != 0 ||
        decode_double(json_object_get(entry, "horizon"), &c->horizon) != 0 || !fit_span_ok(c)) {
        snprintf(what, len, "needs numbers first and horizon with 1 <= first <= horizon "
                 "(any finite numbers for an empty curve)");
        return -1;
    }
    if (decode_points(median, c->median, c->n) || decode_points(lo, c->lo, c->n) ||
        decode_points(hi, c->hi, c->n)) {
        snprintf(what, len, "must hold only finite numbers in median, lo and hi");
        return -1;
    }
    for (int i = 0; i < c->n; i++)
        if (!(c->lo[i] <= c->median[i] && c->median[i] <= c->hi[i])) {
            snprintf(what, len, "needs lo <= median <= hi at every point (point %d)", i);
            return -1;
        }
    return decode_pred(entry, &fit->pred, what, len);
}

/* "fits", optional: into a malloc'd array the caller frees. */
static int decode_fits(const json_t *obj, dt_slot_record *r, dt_slot_fit **fits,
                       const line_ref *at, dt_error *err)
{
    const json_t *array = json_object_get(obj, "fits");
    *fits = NULL;
    if (!array)
        return 0;
    if (!json_is_array(array) || json_array_size(array) > DT_MAX_SCORES) {
        char what[64];
        snprintf(what, sizeof what, "must be an array of at most %d fitted curves", DT_MAX_SCORES);
        return field_error(at, "fits", what, err);
    }
    r->nfits = (int)json_array_size(array);
    if (r->nfits == 0)
        return 0;
    if (!(*fits = calloc((size_t)r->nfits, sizeof **fits)))
        return dt_error_set(err, DT_ENOMEM, "%s:%ld: out of memory", at->path, at->line);
    for (int i = 0; i < r->nfits; i++) {
        char what[128];
        if (decode_fit(json_array_get(array, (size_t)i), &(*fits)[i], what, sizeof what))
            return dt_error_set(err, DT_EINVAL, "%s:%ld: field 'fits' entry %d %s", at->path,
                                at->line, i, what);
    }
    r->fits = *fits;
    return 0;
}

/* Calls the visitor; when it fails without filling err, names the line. */
static int visit(int rc, const line_ref *at, dt_error *err)
{
    if (rc != 0 && (!err || err->code != rc))
        dt_error_set(err, rc, "%s:%ld: replay stopped by the caller (%s)",
                     at->path, at->line, dt_error_name(rc));
    return rc;
}

/* An ok result has a positive finite latency and rate; no result has a
 * negative one (hand-edited records are refused, not believed). */
static int check_result(const dt_measure_result *m, const line_ref *at, dt_error *err)
{
    bool ok = m->result == DT_RESULT_OK;
    if (m->latency_s < 0 || (ok && !(m->latency_s > 0 && isfinite(m->latency_s))))
        return field_error(at, "latency_ms", ok ? "of an ok result must be a positive finite number"
                                                : "must not be negative", err);
    if (m->gflops < 0 || (ok && !(m->gflops > 0 && isfinite(m->gflops))))
        return field_error(at, "gflops", ok ? "of an ok result must be a positive finite number"
                                            : "must not be negative", err);
    return 0;
}

static int decode_measure(const json_t *obj, const dt_tunelog_visitor *v,
                          const line_ref *at, dt_error *err)
{
    dt_measure_record r;
    int rc;
    memset(&r, 0, sizeof r);
    rc = decode_fields(measure_fields, COUNT(measure_fields), obj, &r, at, err);
    if (rc == 0)
        rc = check_result(&r.m, at, err);
    if (rc != 0 || !v || !v->measure)
        return rc;
    return visit(v->measure(v->ctx, &r), at, err);
}

static int decode_slot(const json_t *obj, const dt_tunelog_visitor *v, const line_ref *at,
                       dt_error *err)
{
    dt_slot_record r;
    int rc;
    memset(&r, 0, sizeof r);
    dt_slot_fit *fits = NULL;
    rc = decode_fields(slot_fields, COUNT(slot_fields), obj, &r, at, err);
    if (rc == 0)
        rc = decode_scores(obj, &r, at, err);
    if (rc == 0)
        rc = decode_fits(obj, &r, &fits, at, err);
    if (rc == 0 && v && v->slot)
        rc = visit(v->slot(v->ctx, &r), at, err);
    free(fits);
    return rc;
}

static int decode_run(const json_t *obj, const dt_tunelog_visitor *v, const line_ref *at,
                      dt_error *err)
{
    dt_run_record r;
    int rc;
    memset(&r, 0, sizeof r);
    rc = decode_fields(run_fields, COUNT(run_fields), obj, &r, at, err);
    if (rc != 0 || !v || !v->run)
        return rc;
    return visit(v->run(v->ctx, &r), at, err);
}

static int decode_failed(const json_t *obj, const dt_tunelog_visitor *v, const line_ref *at,
                         dt_error *err)
{
    dt_failed_record r;
    memset(&r, 0, sizeof r);
    int rc = decode_fields(failed_fields, COUNT(failed_fields), obj, &r, at, err);
    if (rc != 0 || !v || !v->failed)
        return rc;
    return visit(v->failed(v->ctx, &r), at, err);
}

static int decode_retime(const json_t *obj, const dt_tunelog_visitor *v, const line_ref *at,
                         dt_error *err)
{
    dt_retime_record r;
    memset(&r, 0, sizeof r);
    int rc = decode_fields(retime_fields, COUNT(retime_fields), obj, &r, at, err);
    if (rc == 0)
        rc = check_result(&r.m, at, err);
    if (rc != 0 || !v || !v->retime)
        return rc;
    return visit(v->retime(v->ctx, &r), at, err);
}

static int decode_confirm(const json_t *obj, const dt_tunelog_visitor *v, const line_ref *at,
                          dt_error *err)
{
    dt_confirm_record r;
    memset(&r, 0, sizeof r);
    int rc = decode_fields(confirm_fields, COUNT(confirm_fields), obj, &r, at, err);
    if (rc == 0)
        rc = check_result(&r.m, at, err);
    if (rc != 0 || !v || !v->confirm)
        return rc;
    return visit(v->confirm(v->ctx, &r), at, err);
}

/* A decision's medians are positive where finite; an accepted candidate has one. */
static int decode_confirmed(const json_t *obj, const dt_tunelog_visitor *v, const line_ref *at,
                            dt_error *err)
{
    dt_confirmed_record r;
    memset(&r, 0, sizeof r);
    int rc = decode_fields(confirmed_fields, COUNT(confirmed_fields), obj, &r, at, err);
    if (rc == 0 && (r.candidate_ms <= 0 || isinf(r.candidate_ms) ||
                    (r.accepted && !isfinite(r.candidate_ms))))
        rc = field_error(at, "candidate_ms", "must be a positive finite number or nan "
                         "(and finite when accepted)", err);
    if (rc == 0 && (r.incumbent_ms <= 0 || isinf(r.incumbent_ms)))
        rc = field_error(at, "incumbent_ms", "must be a positive finite number or nan", err);
    if (rc == 0 && (r.rounds < 0 || r.accepted < 0 || r.accepted > 1))
        rc = field_error(at, r.rounds < 0 ? "rounds" : "accepted",
                         r.rounds < 0 ? "must not be negative" : "must be 0 or 1", err);
    if (rc != 0 || !v || !v->confirmed)
        return rc;
    return visit(v->confirmed(v->ctx, &r), at, err);
}

static int decode_drift(const json_t *obj, const dt_tunelog_visitor *v, const line_ref *at,
                        dt_error *err)
{
    dt_drift_record r;
    memset(&r, 0, sizeof r);
    int rc = decode_fields(drift_fields, COUNT(drift_fields), obj, &r, at, err);
    if (rc == 0)
        rc = check_result(&r.m, at, err);
    if (rc != 0 || !v || !v->drift)
        return rc;
    return visit(v->drift(v->ctx, &r), at, err);
}

static int dispatch(const json_t *obj, const dt_tunelog_visitor *v, const line_ref *at,
                    dt_error *err)
{
    const json_t *type = json_object_get(obj, "type");
    const char *name = json_string_value(type);
    if (!type)
        return field_error(at, "type", "is missing", err);
    if (!name)
        return field_error(at, "type", "must be a string", err);
    if (strcmp(name, "measure") == 0)
        return decode_measure(obj, v, at, err);
    if (strcmp(name, "slot") == 0)
        return decode_slot(obj, v, at, err);
    if (strcmp(name, "run") == 0)
        return decode_run(obj, v, at, err);
    if (strcmp(name, "failed") == 0)
        return decode_failed(obj, v, at, err);
    if (strcmp(name, "retime") == 0)
        return decode_retime(obj, v, at, err);
    if (strcmp(name, "confirm") == 0)
        return decode_confirm(obj, v, at, err);
    if (strcmp(name, "confirmed") == 0)
        return decode_confirmed(obj, v, at, err);
    if (strcmp(name, "drift") == 0)
        return decode_drift(obj, v, at, err);
    return dt_error_set(err, DT_EINVAL, "%s:%ld: unknown record type '%s' (expected run, measure, "
                        "slot, failed, retime, confirm, confirmed or drift)", at->path, at->line,
                        name);
}

/* ---- replay ------------------------------------------------------------- */

/* The reading loop. at->line is kept current so that a failing visitor's
 * error can name the line. A line without its newline can only be the last
 * one: the torn write of a crash, reported in st and skipped. Any other bad
 * line, the last one included, is an error naming it. */
static int replay_stream(FILE *f, const dt_tunelog_visitor *v, dt_tunelog_stats *st,
                         line_ref *at, dt_error *err)
{
    char *buf = NULL, why[200] = "";
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    while (rc == 0 && (len = getline(&buf, &cap, f)) >= 0) {
        at->line++;
        if (buf[len - 1] != '\n' && whole_without_newline(buf, (size_t)len)) {
            if (dt_grow(&buf, &cap, (size_t)len + 2, 1) != 0) {
                rc = dt_error_set(err, DT_ENOMEM, "%s:%ld: out of memory", at->path, at->line);
                break;
            }
            buf[len++] = '\n';
            buf[len] = '\0';
        }
        if (buf[len - 1] != '\n') {
            st->dropped_tail = true;
            snprintf(st->tail_message, sizeof st->tail_message,
                     "line %ld: unfinished record (%zd bytes, no newline)", at->line, len);
            break;
        }
        if (len > DT_TUNELOG_RECORD_MAX) {
            rc = dt_error_set(err, DT_EPARSE, "%s:%ld: a record of %zd bytes is over the limit of %d bytes",
                              at->path, at->line, len, DT_TUNELOG_RECORD_MAX);
            break;
        }
        json_t *obj = parse_line(buf, (size_t)len, why, sizeof why);
        if (!obj) {
            rc = dt_error_set(err, DT_EPARSE, "%s:%ld: %s", at->path, at->line, why);
            break;
        }
        rc = dispatch(obj, v, at, err);
        json_decref(obj);
        if (rc == 0)
            st->lines++;
    }
    free(buf);
    if (rc == 0 && ferror(f))
        rc = dt_error_set(err, DT_EIO, "%s: read failed: %s", at->path, strerror(errno));
    return rc;
}

static int replay_at(const char *path, const dt_tunelog_visitor *v, dt_tunelog_stats *stats,
                     line_ref *at, dt_error *err)
{
    dt_tunelog_stats local;
    FILE *f;
    int rc;
    dt_error_clear(err);
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    dt_error open_err;
    f = dt_open_input(path, "tuning log", &open_err);
    if (!f)
        return dt_error_set(err, open_err.code, "%s", open_err.msg);
    at->path = path;
    at->line = 0;
    rc = replay_stream(f, v, stats, at, err);
    fclose(f);
    return rc;
}

int dt_tunelog_replay(const char *path, const dt_tunelog_visitor *visitor,
                      dt_tunelog_stats *stats, dt_error *err)
{
    line_ref at;
    return replay_at(path, visitor, stats, &at, err);
}
