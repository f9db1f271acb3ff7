/* report.c — latency.csv, latency.svg and best.json of a run (see report.h).
 *
 * Durability. latency.csv is appended with write(2) and fsync'd; on resume a
 * torn last row (a crash in mid-write) is cut back to the last newline and the
 * header is checked against the run's task names. best.json and every SVG are
 * written to a mkstemp file beside the target, fsync'd and rename(2)d over it,
 * and the directory is fsync'd, so a reader sees the old file or the new one.
 *
 * Charts. PLplot draws through one global stream, so all drawing happens under
 * plot_guard.lock, the one mutable static of this file (STYLE.md allows it for
 * PLplot). Inside the lock PLplot's error text goes to plot_guard.errmsg
 * (plsError) rather than stderr, and plexit(), which would exit the process,
 * calls plot_exit_handler, which longjmps back to render_locked. The output
 * file is created before PLplot opens it, so PLplot never prompts on stdin
 * for another file name.
 */
#include "dtune/report.h"
#include "report_json.h"
#include "dtune/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <plplot.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* PLplot's global state and the escape from plexit(); guarded by lock. */
static struct {
    pthread_mutex_t lock;
    jmp_buf escape;
    char exit_reason[512];
    PLINT errcode;
    char errmsg[4096];
} plot_guard = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A chart: curves plus optional reference lines. */
typedef struct chart {
    const char *title, *xlabel, *ylabel;
    const dt_report_curve *curves;
    int ncurves;
    double hline;              /* > 0: dashed horizontal line */
    const char *hline_label;
    double vline;              /* >= 0 and finite: vertical marker */
    const char *vline_label;
} chart;

typedef struct chart_range {
    double xmin, xmax, ymin, ymax;
} chart_range;

/* ---- files ---------------------------------------------------------------- */

/* fsyncs the directory holding path so a rename in it is durable. */
static int fsync_parent(const char *path)
{
    char dir[DT_PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    if (rc != 0 && (errno == EINVAL || errno == EROFS))
        rc = 0; /* file systems that cannot sync a directory */
    close(fd);
    return rc;
}

/* Creates an empty temporary file beside path; fills tmp, returns its fd. */
static int temp_beside(const char *path, char *tmp, size_t len, dt_error *err)
{
    if ((size_t)snprintf(tmp, len, "%s.XXXXXX", path) >= len)
        return dt_error_set(err, DT_EINVAL, "%s: path too long", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return dt_error_set(err, DT_EIO, "%s: cannot create a temporary file: %s", path,
                            strerror(errno));
    if (fchmod(fd, 0644) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return dt_error_set(err, DT_EIO, "%s: chmod: %s", tmp, strerror(e));
    }
    return fd;
}

/* fsyncs and closes fd (the file tmp), then renames tmp over path. On any
 * failure tmp is removed. */
static int commit_temp(int fd, const char *tmp, const char *path, dt_error *err)
{
    int rc = fsync(fd);
    int e = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        e = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        return dt_error_set(err, DT_EIO, "%s: %s", path, strerror(e));
    }
    if (fsync_parent(path) != 0)
        return dt_error_set(err, DT_EIO, "%s: syncing its directory: %s", path, strerror(errno));
    return 0;
}

static int run_file(const dt_run_state *rs, const char *name, char *buf, size_t len,
                    dt_error *err)
{
    if ((size_t)snprintf(buf, len, "%s/%s", rs->run_dir[0] ? rs->run_dir : ".", name) >= len)
        return dt_error_set(err, DT_EINVAL, "run directory path too long");
    return 0;
}

int dt_report_replace(const dt_run_state *rs, const char *name, const char *text, size_t len,
                      dt_error *err)
{
    char path[DT_PATH_MAX + 32], tmp[DT_PATH_MAX + 48];
    int rc = run_file(rs, name, path, sizeof path, err);
    if (rc)
        return rc;
    int fd = temp_beside(path, tmp, sizeof tmp, err);
    if (fd < 0)
        return fd;
    int e = dt_write_all(fd, text, len);
    if (e != 0) {
        close(fd);
        unlink(tmp);
        return dt_error_set(err, DT_EIO, "%s: %s", tmp, strerror(e));
    }
    return commit_temp(fd, tmp, path, err);
}

/* ---- latency.csv ---------------------------------------------------------- */

/* Writes s as one CSV field, quoted when it holds a comma, quote or newline. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static char *csv_header(const dt_run_state *rs, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    fputs("elapsed_s,slot,task,model_latency_ms", f);
    for (int k = 0; k < rs->ntasks; k++) {
        fputc(',', f);
        csv_field(f, rs->tasks[k].name);
    }
    fputc('\n', f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void csv_number(FILE *f, double v)
{
    if (isfinite(v) && v > 0)
        fprintf(f, "%.6g", v);
}

static char *csv_row(const dt_run_state *rs, const dt_latency_point *p, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    fprintf(f, "%.3f,%d,", p->elapsed, p->slot);
    csv_field(f, p->task >= 0 && p->task < rs->ntasks ? rs->tasks[p->task].name : "warm-up");
    fputc(',', f);
    csv_number(f, p->model_latency_ms);
    for (int k = 0; k < rs->ntasks; k++) {
        fputc(',', f);
        csv_number(f, rs->tasks[k].best_latency_ms);
    }
    fputc('\n', f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Offset just past the last '\n' in the first size bytes of fd (0 if none). */
static off_t end_of_last_line(int fd, off_t size)
{
    char chunk[4096];
    off_t end = size;
    while (end > 0) {
        off_t start = end > (off_t)sizeof chunk ? end - (off_t)sizeof chunk : 0;
        ssize_t n = pread(fd, chunk, (size_t)(end - start), start);
        if (n != end - start)
            return -1;
        for (ssize_t i = n - 1; i >= 0; i--)
            if (chunk[i] == '\n')
                return start + i + 1;
        end = start;
    }
    return 0;
}

/* Prepares an existing latency.csv for appending; *need_header when empty. */
static int csv_resume(int fd, const char *path, const char *header, size_t hlen,
                      bool *need_header, dt_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return dt_error_set(err, DT_EIO, "%s: %s", path, strerror(errno));
    off_t keep = end_of_last_line(fd, st.st_size);
    if (keep < 0)
        return dt_error_set(err, DT_EIO, "%s: read failed", path);
    if (keep != st.st_size && ftruncate(fd, keep) != 0)
        return dt_error_set(err, DT_EIO, "%s: cutting a torn last row: %s", path,
                            strerror(errno));
    *need_header = keep == 0;
    if (keep == 0)
        return 0;
    char *have = malloc(hlen);
    if (!have)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    bool same = pread(fd, have, hlen, 0) == (ssize_t)hlen && memcmp(have, header, hlen) == 0;
    free(have);
    if (!same)
        return dt_error_set(err, DT_EINVAL,
                            "%s: its header names other tasks than this run's model "
                            "(another run's directory?)", path);
    return 0;
}

static int csv_append(int fd, const char *path, const dt_run_state *rs, dt_error *err)
{
    size_t hlen = 0, rlen = 0;
    char *header = csv_header(rs, &hlen);
    char *row = csv_row(rs, &rs->points[rs->npoints - 1], &rlen);
    bool need_header = false;
    int rc = 0;
    if (!header || !row)
        rc = dt_error_set(err, DT_ENOMEM, "out of memory");
    if (rc == 0)
        rc = csv_resume(fd, path, header, hlen, &need_header, err);
    if (rc == 0 && lseek(fd, 0, SEEK_END) < 0)
        rc = dt_error_set(err, DT_EIO, "%s: %s", path, strerror(errno));
    if (rc == 0 && ((need_header && dt_write_all(fd, header, hlen) != 0) ||
                    dt_write_all(fd, row, rlen) != 0 || fsync(fd) != 0))
        rc = dt_error_set(err, DT_EIO, "%s: write failed: %s", path, strerror(errno));
    if (rc == 0 && need_header && fsync_parent(path) != 0) /* a new file's name */
        rc = dt_error_set(err, DT_EIO, "%s: syncing its directory: %s", path, strerror(errno));
    free(header);
    free(row);
    return rc;
}

int dt_report_append_csv(const dt_run_state *rs, dt_error *err)
{
    if (rs->npoints < 1)
        return dt_error_set(err, DT_EINVAL, "latency.csv: the run has no latency point yet");
    char path[DT_PATH_MAX + 32];
    int rc = run_file(rs, "latency.csv", path, sizeof path, err);
    if (rc)
        return rc;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return dt_error_set(err, DT_EIO, "%s: %s", path, strerror(errno));
    rc = csv_append(fd, path, rs, err);
    if (close(fd) != 0 && rc == 0)
        rc = dt_error_set(err, DT_EIO, "%s: %s", path, strerror(errno));
    return rc;
}

/* ---- best.json ------------------------------------------------------------ */

/* A JSON number, or null for values JSON cannot hold (NaN, infinities). */
static json_t *number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* Sets obj[key] = value (stolen); returns 1 on failure so callers can OR. */
static int put(json_t *obj, const char *key, json_t *value)
{
    return json_object_set_new(obj, key, value) != 0;
}

/* One task's state as a JSON object (best.json's and /status's task rows):
 * name, kind, shape, count, gflop, useful_gflop, best_config (null until tuned), knobs,
 * best_gflops, best_latency_ms, logged_best_ms (null unless the run's end re-timed
 * the task), peak_gflops, the bound (bound_ms, its memory
 * level, its source and the best's share of it), trials, slots, finished. New
 * reference, NULL when out of memory. */
static json_t *task_json(const dt_task_state *t)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    bool tuned = t->best_gflops > 0;
    int bad = put(o, "name", json_string(t->name)) | put(o, "kind", json_string(t->kind)) |
              put(o, "shape", json_string(t->shape)) | put(o, "count", json_integer(t->count)) |
              put(o, "gflop", number_or_null(t->gflop)) |
              put(o, "useful_gflop", number_or_null(t->useful_gflop)) |
              put(o, "best_config", tuned ? json_integer((json_int_t)t->best_config)
                                          : json_null()) |
              put(o, "knobs", json_string(tuned ? t->best_knobs : "")) |
              put(o, "best_gflops", number_or_null(t->best_gflops)) |
              put(o, "best_latency_ms", number_or_null(t->best_latency_ms)) |
              put(o, "logged_best_ms", t->logged_best_ms > 0 ? json_real(t->logged_best_ms)
                                                             : json_null()) |
              put(o, "peak_gflops", number_or_null(t->peak_gflops)) |
              put(o, "peak_source", json_string(t->peak_gflops <= 0 ? "unknown"
                                                : t->peak_from_kernel ? "best kernel"
                                                                      : "roofline")) |
              put(o, "bound_ms", t->bound_ms > 0 ? json_real(t->bound_ms) : json_null()) |
              put(o, "bound_level", json_string(t->bound_level)) |
              put(o, "bound_source", json_string(t->bound_ms <= 0 ? "unknown"
                                                 : t->bound_from_kernel ? "best kernel"
                                                                        : "probes")) |
              put(o, "bound_share", tuned && t->bound_ms > 0
                                        ? json_real(dt_task_state_bound_share(t)) : json_null()) |
              put(o, "trials", json_integer(t->trials)) | put(o, "slots", json_integer(t->slots)) |
              put(o, "finished", json_boolean(t->finished)) |
              put(o, "failed", t->failed[0] ? json_string(t->failed) : json_null());
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Ranked rows of decision i: task, score (null where the policy could not
 * pick it), cut_ms with cut_lo_ms / cut_hi_ms (null where the policy reads no
 * prediction), note, chosen. */
static json_t *ranking_json(const dt_run_state *rs, int i)
{
    json_t *rows = json_array();
    int order[rs->ntasks > 0 ? rs->ntasks : 1];
    dt_run_state_rank(rs, i, order);
    for (int j = 0; rows && j < rs->ntasks; j++) {
        const dt_task_score *sc = dt_run_state_row(rs, i, order[j]);
        if (!sc)
            break;            /* an older decision keeps its first two rows */
        json_t *row = json_object();
        int bad = !row || put(row, "task", json_string(rs->tasks[order[j]].name)) |
                              put(row, "score", number_or_null(sc->score)) |
                              put(row, "cut_ms", number_or_null(sc->cut_ms)) |
                              put(row, "cut_lo_ms", number_or_null(sc->cut_lo_ms)) |
                              put(row, "cut_hi_ms", number_or_null(sc->cut_hi_ms)) |
                              put(row, "note", json_string(sc->note)) |
                              put(row, "chosen", json_boolean(order[j] == rs->decisions[i].task));
        if (bad || json_array_append_new(rows, row) != 0) {
            json_decref(rows);
            return NULL;
        }
    }
    return rows;
}

json_t *dt_report_decision_json(const dt_run_state *rs, int i)
{
    const dt_slot_decision *d = &rs->decisions[i];
    json_t *o = json_object();
    int k = d->task;
    int bad = !o || put(o, "slot", json_integer(d->slot)) |
                        put(o, "task", k >= 0 && k < rs->ntasks ? json_string(rs->tasks[k].name)
                                                               : json_null()) |
                        put(o, "elapsed_s", number_or_null(d->elapsed)) |
                        put(o, "decision_ms", number_or_null(d->decision_ms)) |
                        put(o, "ranking", ranking_json(rs, i));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The last DT_STATUS_DECISIONS decisions, newest last. */
static json_t *decisions_json(const dt_run_state *rs)
{
    json_t *list = json_array();
    int first = rs->ndecisions > DT_STATUS_DECISIONS ? rs->ndecisions - DT_STATUS_DECISIONS : 0;
    for (int i = first; list && i < rs->ndecisions; i++) {
        if (json_array_append_new(list, dt_report_decision_json(rs, i)) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* While warming up: which task of how many, and its trials; else null. */
static json_t *warmup_json(const dt_run_state *rs)
{
    int k = rs->warmup_task;
    if (strcmp(rs->phase, "warm-up") != 0 || k < 0 || k >= rs->ntasks)
        return json_null();
    return json_pack("{s:i, s:i, s:s, s:i}", "task", k + 1, "of", rs->ntasks, "name",
                     rs->tasks[k].name, "trials", rs->tasks[k].trials);
}

/* The slots in flight of a run that keeps several: slot (null for a task's
 * warm-up), task, worker (its MPI rank) and seconds in; [] otherwise. */
static json_t *flight_json(const dt_run_state *rs)
{
    json_t *list = json_array();
    for (int i = 0; list && i < rs->nflight; i++) {
        const dt_slot_flight *f = &rs->flight[i];
        const char *task = f->task >= 0 && f->task < rs->ntasks ? rs->tasks[f->task].name : "?";
        json_t *one = json_pack("{s:o, s:s, s:i, s:o}", "slot",
                                f->slot >= 0 ? json_integer(f->slot) : json_null(), "task", task,
                                "worker", f->worker, "elapsed_s",
                                number_or_null(rs->elapsed - f->started));
        if (!one || json_array_append_new(list, one) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* What only a running tuner knows (the /status additions). */
static int put_live(json_t *o, const dt_run_state *rs)
{
    const char *current = dt_run_state_current_task(rs);
    return put(o, "current_task", current ? json_string(current) : json_null()) |
           put(o, "speedup", number_or_null(dt_run_state_speedup(rs))) |
           put(o, "budget_left_s", number_or_null(dt_run_state_budget_left(rs))) |
           put(o, "slot_elapsed_s", rs->slot_started >= 0
                                        ? number_or_null(rs->elapsed - rs->slot_started)
                                        : json_null()) |
           put(o, "warmup", warmup_json(rs)) |
           put(o, "slots_in_flight", flight_json(rs)) |
           put(o, "decision", rs->ndecisions > 0 ? dt_report_decision_json(rs, rs->ndecisions - 1)
                                                 : json_null()) |
           put(o, "decisions_total", json_integer(rs->ndecisions)) |
           put(o, "decisions", decisions_json(rs));
}

/* Confirmed figures (daemon_confirm.c): the machine's speed relative to the
 * run's start (null before a drift reading) and the measurement time the
 * confirmations took. */
static int put_confirmed(json_t *o, const dt_run_state *rs)
{
    return put(o, "machine_speed", rs->machine_speed > 0 ? number_or_null(rs->machine_speed)
                                                         : json_null()) |
           put(o, "drift_readings", json_integer(rs->drift_readings)) |
           put(o, "confirmations", json_integer(rs->confirmations)) |
           put(o, "confirmed", json_integer(rs->confirmed)) |
           put(o, "measure_ms", number_or_null(rs->measure_ms)) |
           put(o, "confirm_ms", number_or_null(rs->confirm_ms)) |
           put(o, "drift_ms", number_or_null(rs->drift_ms)) |
           put(o, "confirm_share", number_or_null(dt_run_state_confirm_share(rs)));
}

json_t *dt_report_run_json(const dt_run_state *rs, bool live)
{
    json_t *o = json_object(), *tasks = json_array();
    if (!o || !tasks) {
        json_decref(o);
        json_decref(tasks);
        return NULL;
    }
    int bad = (live && put(o, "run", json_string(rs->run_dir))) |
              put(o, "model", json_string(rs->model)) | put(o, "target", json_string(rs->target)) |
              put(o, "policy", json_string(rs->policy)) |
              put(o, "strategy", json_string(rs->strategy)) |
              put(o, "threads", json_integer(rs->threads)) |
              put(o, "phase", json_string(rs->phase)) |
              put(o, "peak_probe", json_string(rs->peak_probe)) |
              put(o, "elapsed_s", number_or_null(rs->elapsed)) |
              put(o, "budget_s", number_or_null(rs->budget)) | put(o, "slot", json_integer(rs->slot)) |
              /* null until warm-up has measured every task (no point yet) */
              put(o, "model_latency_ms", rs->npoints > 0 || !live ? number_or_null(rs->latency_ms)
                                                                  : json_null()) |
              put(o, "start_latency_ms", number_or_null(rs->start_latency_ms)) |
              put(o, "target_latency_ms", rs->target_latency_ms > 0
                                              ? number_or_null(rs->target_latency_ms)
                                              : json_null()) |
              put(o, "reached_at_s", rs->reached_at >= 0 ? number_or_null(rs->reached_at)
                                                         : json_null()) |
              put_confirmed(o, rs) | (live && put_live(o, rs)) | put(o, "tasks", tasks);
    for (int k = 0; k < rs->ntasks && !bad; k++)
        bad = json_array_append_new(tasks, task_json(&rs->tasks[k])) != 0;
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int dt_report_write_best(const dt_run_state *rs, dt_error *err)
{
    char path[DT_PATH_MAX + 32], tmp[DT_PATH_MAX + 48];
    int rc = run_file(rs, "best.json", path, sizeof path, err);
    if (rc)
        return rc;
    json_t *doc = dt_report_run_json(rs, false);
    if (!doc)
        return dt_error_set(err, DT_ENOMEM, "best.json: out of memory");
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(doc);
    if (!text)
        return dt_error_set(err, DT_ENOMEM, "best.json: out of memory");
    int fd = temp_beside(path, tmp, sizeof tmp, err);
    if (fd < 0) {
        free(text);
        return fd;
    }
    if (dt_write_all(fd, text, strlen(text)) != 0 || dt_write_all(fd, "\n", 1) != 0) {
        int e = errno;
        free(text);
        close(fd);
        unlink(tmp);
        return dt_error_set(err, DT_EIO, "%s: write failed: %s", tmp, strerror(e));
    }
    free(text);
    return commit_temp(fd, tmp, path, err);
}

/* ---- reading best.json ---------------------------------------------------- */

typedef struct json_reader {
    const char *path;
    char where[64];            /* "" or "tasks[3]." */
    dt_error *err;
} json_reader;

static int field_error(const json_reader *r, const char *key, const char *want)
{
    return dt_error_set(r->err, DT_EPARSE, "%s: %s%s: expected %s", r->path, r->where, key, want);
}

static int read_string(const json_reader *r, json_t *o, const char *key, char *dst, size_t len)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return field_error(r, key, "a string");
    snprintf(dst, len, "%s", json_string_value(v));
    return 0;
}

/* A number; null reads as null_value when null_ok. */
static int read_number(const json_reader *r, json_t *o, const char *key, double *dst,
                       bool null_ok, double null_value)
{
    json_t *v = json_object_get(o, key);
    if (null_ok && json_is_null(v)) {
        *dst = null_value;
        return 0;
    }
    if (!json_is_number(v))
        return field_error(r, key, null_ok ? "a number or null" : "a number");
    *dst = json_number_value(v);
    return 0;
}

static int read_int(const json_reader *r, json_t *o, const char *key, int *dst)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < INT_MIN || json_integer_value(v) > INT_MAX)
        return field_error(r, key, "an integer that fits an int");
    *dst = (int)json_integer_value(v);
    return 0;
}

static int read_task(json_reader *r, json_t *o, int k, dt_task_state *t)
{
    snprintf(r->where, sizeof r->where, "tasks[%d].", k);
    if (!json_is_object(o))
        return dt_error_set(r->err, DT_EPARSE, "%s: tasks[%d]: expected an object", r->path, k);
    json_t *config = json_object_get(o, "best_config");
    json_t *finished = json_object_get(o, "finished");
    json_t *failed = json_object_get(o, "failed");
    int rc = read_string(r, o, "name", t->name, sizeof t->name);
    rc = rc ? rc : read_string(r, o, "kind", t->kind, sizeof t->kind);
    rc = rc ? rc : read_string(r, o, "shape", t->shape, sizeof t->shape);
    rc = rc ? rc : read_string(r, o, "knobs", t->best_knobs, sizeof t->best_knobs);
    rc = rc ? rc : read_int(r, o, "count", &t->count);
    rc = rc ? rc : read_int(r, o, "trials", &t->trials);
    rc = rc ? rc : read_int(r, o, "slots", &t->slots);
    rc = rc ? rc : read_number(r, o, "gflop", &t->gflop, true, 0);
    rc = rc ? rc : read_number(r, o, "best_gflops", &t->best_gflops, true, 0);
    rc = rc ? rc : read_number(r, o, "best_latency_ms", &t->best_latency_ms, true, 0);
    rc = rc ? rc : read_number(r, o, "peak_gflops", &t->peak_gflops, true, 0);
    if (rc == 0 && !json_is_null(config) && !json_is_integer(config))
        rc = field_error(r, "best_config", "an integer or null");
    if (rc == 0 && !json_is_boolean(finished))
        rc = field_error(r, "finished", "true or false");
    /* "failed" is absent in the best.json of older runs */
    if (rc == 0 && failed && !json_is_null(failed))
        rc = read_string(r, o, "failed", t->failed, sizeof t->failed);
    if (rc == 0) {
        t->best_config = json_is_integer(config) ? (uint64_t)json_integer_value(config) : 0;
        t->finished = json_is_true(finished);
        /* optional: best.json of older runs has no peak_source, nor a bound */
        const char *source = json_string_value(json_object_get(o, "peak_source"));
        t->peak_from_kernel = source && strcmp(source, "best kernel") == 0;
        const char *level = json_string_value(json_object_get(o, "bound_level"));
        snprintf(t->bound_level, sizeof t->bound_level, "%s", level ? level : "");
        source = json_string_value(json_object_get(o, "bound_source"));
        t->bound_from_kernel = source && strcmp(source, "best kernel") == 0;
    }
    if (rc == 0 && json_object_get(o, "bound_ms"))
        rc = read_number(r, o, "bound_ms", &t->bound_ms, true, 0);
    /* optional: best.json of older runs re-timed nothing */
    if (rc == 0 && json_object_get(o, "logged_best_ms"))
        rc = read_number(r, o, "logged_best_ms", &t->logged_best_ms, true, 0);
    /* optional: best.json of older runs counts no useful FLOPs */
    if (rc == 0 && json_object_get(o, "useful_gflop"))
        rc = read_number(r, o, "useful_gflop", &t->useful_gflop, true, 0);
    return rc;
}

static int read_run(const json_reader *r, json_t *o, dt_run_state *rs)
{
    int rc = read_string(r, o, "model", rs->model, sizeof rs->model);
    rc = rc ? rc : read_string(r, o, "target", rs->target, sizeof rs->target);
    rc = rc ? rc : read_string(r, o, "policy", rs->policy, sizeof rs->policy);
    rc = rc ? rc : read_string(r, o, "strategy", rs->strategy, sizeof rs->strategy);
    rc = rc ? rc : read_string(r, o, "phase", rs->phase, sizeof rs->phase);
    /* optional: best.json of older runs does not name the probe */
    if (rc == 0 && json_object_get(o, "peak_probe"))
        rc = read_string(r, o, "peak_probe", rs->peak_probe, sizeof rs->peak_probe);
    rc = rc ? rc : read_number(r, o, "elapsed_s", &rs->elapsed, false, 0);
    rc = rc ? rc : read_number(r, o, "budget_s", &rs->budget, true, 0);
    rc = rc ? rc : read_int(r, o, "slot", &rs->slot);
    rc = rc ? rc : read_number(r, o, "model_latency_ms", &rs->latency_ms, true, 0);
    rc = rc ? rc : read_number(r, o, "start_latency_ms", &rs->start_latency_ms, true, 0);
    rc = rc ? rc : read_number(r, o, "target_latency_ms", &rs->target_latency_ms, true, 0);
    rc = rc ? rc : read_number(r, o, "reached_at_s", &rs->reached_at, true, -1);
    /* optional: best.json of older runs has no confirmed figures */
    static const char *const confirmed_keys[] = { "machine_speed", "measure_ms", "confirm_ms",
                                                  "drift_ms" };
    double *confirmed_at[] = { &rs->machine_speed, &rs->measure_ms, &rs->confirm_ms, &rs->drift_ms };
    for (size_t i = 0; rc == 0 && i < sizeof confirmed_keys / sizeof *confirmed_keys; i++)
        if (json_object_get(o, confirmed_keys[i]))
            rc = read_number(r, o, confirmed_keys[i], confirmed_at[i], true, 0);
    if (rc == 0 && json_object_get(o, "confirmations"))
        rc = read_int(r, o, "confirmations", &rs->confirmations);
    if (rc == 0 && json_object_get(o, "confirmed"))
        rc = read_int(r, o, "confirmed", &rs->confirmed);
    /* optional: best.json of older runs does not say its threads */
    if (rc == 0 && json_object_get(o, "threads"))
        rc = read_int(r, o, "threads", &rs->threads);
    return rc;
}

static int load_doc(json_t *doc, const char *path, const char *run_dir, dt_run_state *out,
                    dt_error *err)
{
    json_reader r = { .path = path, .where = "", .err = err };
    json_t *tasks = json_object_get(doc, "tasks");
    if (!json_is_object(doc))
        return dt_error_set(err, DT_EPARSE, "%s: expected a JSON object", path);
    if (!json_is_array(tasks))
        return field_error(&r, "tasks", "an array");
    if (dt_run_state_init_empty(out, (int)json_array_size(tasks)) != 0)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    snprintf(out->run_dir, sizeof out->run_dir, "%s", run_dir);
    int rc = read_run(&r, doc, out);
    for (int k = 0; k < out->ntasks && rc == 0; k++)
        rc = read_task(&r, json_array_get(tasks, (size_t)k), k, &out->tasks[k]);
    if (rc)
        dt_run_state_destroy(out);
    return rc;
}

int dt_report_load_best(const char *run_dir, dt_run_state *out, dt_error *err)
{
    char path[DT_PATH_MAX + 32];
    memset(out, 0, sizeof *out);
    if ((size_t)snprintf(path, sizeof path, "%s/best.json", run_dir) >= sizeof path)
        return dt_error_set(err, DT_EINVAL, "%s: path too long", run_dir);
    dt_buf text = {0};
    int rc = dt_read_input(path, "best.json", &text, err);
    if (rc)
        return rc;
    long deep = dt_json_too_deep(text.data, text.len, DT_INPUT_MAX_DEPTH);
    json_error_t jerr;
    json_t *doc = deep < 0 ? json_loadb(text.data, text.len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    dt_buf_free(&text);
    if (deep >= 0)
        return dt_error_set(err, DT_EPARSE, "%s: byte %ld: nested deeper than %d levels", path,
                            deep + 1, DT_INPUT_MAX_DEPTH);
    if (!doc)
        return dt_error_set(err, DT_EPARSE, "%s:%d:%d: %s", path, jerr.line, jerr.column,
                            jerr.text);
    rc = load_doc(doc, path, run_dir, out, err);
    json_decref(doc);
    return rc;
}

/* ---- charts --------------------------------------------------------------- */

enum { COL_BG, COL_INK, COL_GRID, COL_TARGET, COL_MARK, COL_CURVE0, COL_COUNT };

static const unsigned char palette[COL_CURVE0 + DT_REPORT_COLOURS][3] = {
    { 255, 255, 255 }, { 0, 0, 0 },      { 215, 215, 215 }, { 110, 110, 110 },
    { 0, 128, 0 },     { 31, 119, 180 }, { 255, 127, 14 },  { 44, 160, 44 },
    { 214, 39, 40 },   { 148, 103, 189 },{ 140, 86, 75 },   { 227, 119, 194 },
    { 127, 127, 127 }, { 188, 189, 34 }, { 23, 190, 207 },  { 0, 0, 128 },
    { 90, 60, 20 },
};

/* Copies text for PLplot, whose escape character '#' must be doubled. */
static void plot_text(const char *in, char *out, size_t len)
{
    size_t j = 0;
    for (; in && *in && j + 2 < len; in++) {
        if (*in == '#')
            out[j++] = '#';
        out[j++] = *in;
    }
    out[j] = '\0';
}

/* PLplot colour-map entry and line style of curve i. */
static PLINT curve_colour(const dt_report_curve *cv, int i)
{
    int k = cv->colour > 0 ? cv->colour - 1 : i;
    return COL_CURVE0 + k % DT_REPORT_COLOURS;
}

static PLINT curve_style(const dt_report_curve *cv)
{
    return 1 + cv->dash;
}

static int chart_check(const chart *c, dt_error *err)
{
    if (c->ncurves < 1 || c->ncurves > DT_REPORT_MAX_CURVES)
        return dt_error_set(err, DT_EINVAL, "a chart takes 1 to %d curves, not %d",
                            DT_REPORT_MAX_CURVES, c->ncurves);
    for (int i = 0; i < c->ncurves; i++) {
        const dt_report_curve *cv = &c->curves[i];
        if (cv->n < 0 || (cv->n > 0 && (!cv->x || !cv->y)))
            return dt_error_set(err, DT_EINVAL, "curve %d has no points array", i);
        if (cv->colour < 0 || cv->colour > DT_REPORT_COLOURS || cv->dash < 0
            || cv->dash >= DT_REPORT_DASHES)
            return dt_error_set(err, DT_EINVAL, "curve %d: colour %d or dash %d out of range", i,
                                cv->colour, cv->dash);
        for (int j = 0; j < cv->n; j++)
            if (!isfinite(cv->x[j]) || !isfinite(cv->y[j]))
                return dt_error_set(err, DT_EINVAL, "curve '%s' point %d is not finite",
                                    cv->name ? cv->name : "", j);
    }
    return 0;
}

/* Axes spanning every point and reference line, from 0 on both axes. */
static chart_range chart_span(const chart *c)
{
    chart_range r = { INFINITY, -INFINITY, 0, 0 };
    for (int i = 0; i < c->ncurves; i++) {
        for (int j = 0; j < c->curves[i].n; j++) {
            r.xmin = fmin(r.xmin, c->curves[i].x[j]);
            r.xmax = fmax(r.xmax, c->curves[i].x[j]);
            r.ymin = fmin(r.ymin, c->curves[i].y[j]);
            r.ymax = fmax(r.ymax, c->curves[i].y[j]);
        }
    }
    if (!(r.xmin <= r.xmax))
        r.xmin = r.xmax = 0;
    r.xmin = fmin(r.xmin, 0); /* time axes start at the start of the run */
    if (isfinite(c->vline) && c->vline >= 0)
        r.xmax = fmax(r.xmax, c->vline);
    if (c->hline > 0 && isfinite(c->hline))
        r.ymax = fmax(r.ymax, c->hline);
    if (r.xmax - r.xmin <= 0)
        r.xmax = r.xmin + 1;
    double height = r.ymax - r.ymin;
    r.ymax += height > 0 ? 0.08 * height : 1;
    if (r.ymin < 0)
        r.ymin -= 0.05 * height;
    return r;
}

static void draw_frame(const chart *c, const chart_range *r)
{
    char title[512], xlabel[256], ylabel[256];
    pladv(0);
    plvsta();
    plwind(r->xmin, r->xmax, r->ymin, r->ymax);
    plcol0(COL_GRID);
    plbox("g", 0, 0, "g", 0, 0);
    plcol0(COL_INK);
    plbox("bcnst", 0, 0, "bcnstv", 0, 0);
    plot_text(c->title, title, sizeof title);
    plot_text(c->xlabel, xlabel, sizeof xlabel);
    plot_text(c->ylabel, ylabel, sizeof ylabel);
    pllab(xlabel, ylabel, title);
}

static void draw_reference_lines(const chart *c, const chart_range *r)
{
    char label[256];
    double dy = 0.015 * (r->ymax - r->ymin), dx = 0.01 * (r->xmax - r->xmin);
    pllsty(2);
    if (c->hline > 0 && isfinite(c->hline)) {
        plcol0(COL_TARGET);
        pljoin(r->xmin, c->hline, r->xmax, c->hline);
        plot_text(c->hline_label, label, sizeof label);
        plptex(r->xmin + dx, c->hline + dy, 1, 0, 0, label);
    }
    if (isfinite(c->vline) && c->vline >= 0) {
        bool left = c->vline > r->xmin + 0.7 * (r->xmax - r->xmin);
        plcol0(COL_MARK);
        pljoin(c->vline, r->ymin, c->vline, r->ymax);
        plot_text(c->vline_label, label, sizeof label);
        plptex(c->vline + (left ? -dx : dx), r->ymax - 4 * dy, 1, 0, left ? 1 : 0, label);
    }
    pllsty(1);
}

static void draw_legend(const chart *c)
{
    PLINT opts[DT_REPORT_MAX_CURVES], colors[DT_REPORT_MAX_CURVES], styles[DT_REPORT_MAX_CURVES];
    PLFLT widths[DT_REPORT_MAX_CURVES], legend_w, legend_h;
    char names[DT_REPORT_MAX_CURVES][96];
    const char *text[DT_REPORT_MAX_CURVES];
    for (int i = 0; i < c->ncurves; i++) {
        opts[i] = PL_LEGEND_LINE;
        colors[i] = curve_colour(&c->curves[i], i);
        styles[i] = curve_style(&c->curves[i]);
        widths[i] = 2.0;
        plot_text(c->curves[i].name ? c->curves[i].name : "", names[i], sizeof names[i]);
        text[i] = names[i];
    }
    plcol0(COL_INK);
    pllegend(&legend_w, &legend_h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             PL_POSITION_TOP | PL_POSITION_RIGHT | PL_POSITION_INSIDE, 0.02, 0.02, 0.08,
             COL_BG, COL_INK, 1, 0, 0, c->ncurves, opts, 1.0, 0.8, 2.0, 0.0, colors, text,
             NULL, NULL, NULL, NULL, colors, styles, widths, NULL, NULL, NULL, NULL);
}

static void draw_chart(const char *file, const chart *c, const chart_range *r)
{
    plsdev("svg");
    plsfnam(file);
    plspage(0, 0, 900, 560, 0, 0);
    plscmap0n(COL_CURVE0 + DT_REPORT_COLOURS);
    for (int i = 0; i < COL_CURVE0 + DT_REPORT_COLOURS; i++)
        plscol0(i, palette[i][0], palette[i][1], palette[i][2]);
    plinit();
    plschr(0, 0.85);
    draw_frame(c, r);
    draw_reference_lines(c, r);
    plwidth(2.0);
    for (int i = 0; i < c->ncurves; i++) {
        plcol0(curve_colour(&c->curves[i], i));
        pllsty(curve_style(&c->curves[i]));
        if (c->curves[i].n > 0)
            plline(c->curves[i].n, c->curves[i].x, c->curves[i].y);
    }
    pllsty(1);
    plwidth(1.0);
    if (c->ncurves > 1)
        draw_legend(c);
    plend();
}

/* Called by plexit() instead of exiting the process. */
static int plot_exit_handler(const char *message)
{
    snprintf(plot_guard.exit_reason, sizeof plot_guard.exit_reason, "%s", message);
    longjmp(plot_guard.escape, 1);
}

/* Draws c into file; plot_guard.lock is held. */
static int render_locked(const char *file, const chart *c, const chart_range *r, dt_error *err)
{
    plot_guard.errcode = 0;
    plot_guard.errmsg[0] = '\0';
    plot_guard.exit_reason[0] = '\0';
    plsexit(plot_exit_handler);
    plsError(&plot_guard.errcode, plot_guard.errmsg);
    if (setjmp(plot_guard.escape) != 0) {
        if (setjmp(plot_guard.escape) == 0)
            plend(); /* leave PLplot reusable; a second escape is ignored */
        plsexit(NULL);
        return dt_error_set(err, DT_ELIB, "PLplot: %s", plot_guard.exit_reason);
    }
    draw_chart(file, c, r);
    plsexit(NULL);
    if (plot_guard.errcode != 0) {
        plot_guard.errmsg[strcspn(plot_guard.errmsg, "\n")] = '\0';
        return dt_error_set(err, DT_ELIB, "PLplot: %s", plot_guard.errmsg);
    }
    return 0;
}

static int render_chart(const char *path, const chart *c, dt_error *err)
{
    char tmp[DT_PATH_MAX + 48];
    int rc = chart_check(c, err);
    if (rc)
        return rc;
    chart_range r = chart_span(c);
    int fd = temp_beside(path, tmp, sizeof tmp, err);
    if (fd < 0)
        return fd;
    pthread_mutex_lock(&plot_guard.lock);
    rc = render_locked(tmp, c, &r, err);
    pthread_mutex_unlock(&plot_guard.lock);
    if (rc) {
        close(fd);
        unlink(tmp);
        return rc;
    }
    /* PLplot wrote through its own FILE; fd still names the same file. */
    return commit_temp(fd, tmp, path, err);
}

int dt_report_svg_curves(const char *path, const char *title, const char *xlabel,
                         const char *ylabel, const dt_report_curve *curves, int ncurves,
                         double hline, dt_error *err)
{
    char hline_label[64];
    snprintf(hline_label, sizeof hline_label, "target %.4g", hline);
    chart c = { .title = title, .xlabel = xlabel, .ylabel = ylabel, .curves = curves,
                .ncurves = ncurves, .hline = hline, .hline_label = hline_label,
                .vline = NAN, .vline_label = "" };
    return render_chart(path, &c, err);
}

/* ---- latency.svg ---------------------------------------------------------- */

double dt_report_time_unit(double span, const char **name)
{
    if (span < 300) {
        *name = "s";
        return 1;
    }
    if (span < 3 * 3600) {
        *name = "min";
        return 60;
    }
    *name = "h";
    return 3600;
}

/* Model latency as a step curve: each slot's latency holds until the next,
 * and the last one until rs->elapsed. x and y hold 2 * npoints + 1. */
static int latency_steps(const dt_run_state *rs, double unit, double *x, double *y)
{
    int n = 0;
    for (int i = 0; i < rs->npoints; i++) {
        const dt_latency_point *p = &rs->points[i];
        if (n > 0) {
            x[n] = p->elapsed / unit;
            y[n] = y[n - 1];
            n++;
        }
        x[n] = p->elapsed / unit;
        y[n] = p->model_latency_ms;
        n++;
    }
    if (n > 0 && rs->elapsed / unit > x[n - 1]) {
        x[n] = rs->elapsed / unit;
        y[n] = y[n - 1];
        n++;
    }
    return n;
}

static void latency_labels(const dt_run_state *rs, const char *unit_name, double unit,
                           char *title, char *xlabel, char *hlabel, char *vlabel, size_t len)
{
    snprintf(title, len, "%s on %s, policy %s: %.4g ms", rs->model, rs->target, rs->policy,
             rs->latency_ms);
    if (isfinite(dt_run_state_speedup(rs)))
        snprintf(title + strlen(title), len - strlen(title), " (%.2fx faster than %.4g ms)",
                 dt_run_state_speedup(rs), rs->start_latency_ms);
    snprintf(xlabel, len, "tuning time (%s)", unit_name);
    snprintf(hlabel, len, "target %.4g ms", rs->target_latency_ms);
    snprintf(vlabel, len, "target reached at %.3g %s", rs->reached_at / unit, unit_name);
}

int dt_report_write_svg(const dt_run_state *rs, dt_error *err)
{
    char path[DT_PATH_MAX + 32], title[256], xlabel[256], hlabel[256], vlabel[256];
    int rc = run_file(rs, "latency.svg", path, sizeof path, err);
    if (rc)
        return rc;
    double span = rs->npoints ? fmax(rs->elapsed, rs->points[rs->npoints - 1].elapsed) : 0;
    const char *unit_name;
    double unit = dt_report_time_unit(span, &unit_name);
    double *x = malloc((size_t)(2 * rs->npoints + 1) * sizeof *x);
    double *y = malloc((size_t)(2 * rs->npoints + 1) * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return dt_error_set(err, DT_ENOMEM, "latency.svg: out of memory");
    }
    latency_labels(rs, unit_name, unit, title, xlabel, hlabel, vlabel, sizeof title);
    dt_report_curve curve = { .name = "model latency", .n = latency_steps(rs, unit, x, y),
                              .x = x, .y = y };
    chart c = { .title = title, .xlabel = xlabel, .ylabel = "model latency (ms)",
                .curves = &curve, .ncurves = 1, .hline = rs->target_latency_ms,
                .hline_label = hlabel, .vline = rs->reached_at >= 0 ? rs->reached_at / unit : NAN,
                .vline_label = vlabel };
    rc = render_chart(path, &c, err);
    free(x);
    free(y);
    return rc;
}

void dt_report_format_duration(double seconds, char *buf, size_t len)
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(buf, len, "-");
        return;
    }
    if (seconds < 60) {
        snprintf(buf, len, "%.1fs", seconds);
        return;
    }
    long s = (long)(seconds + 0.5);
    if (s < 3600)
        snprintf(buf, len, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, len, "%ldh%02ldm%02lds", s / 3600, s / 60 % 60, s % 60);
}
