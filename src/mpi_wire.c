/* mpi_wire.c — the MPI run's messages as bytes (see mpi_wire.h).
 *
 * Writing appends fixed-width little-endian fields to a dt_buf. Reading goes
 * through a cursor over the received bytes: every field read first checks
 * that its bytes are there, and the first failure is kept with the offset it
 * happened at, so a truncated or lying message ends in one clear error and
 * never a read past the end.
 */
#include "dtune/mpi_wire.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

static const char magic[4] = { 'D', 'T', 'M', 'W' };

const char *dt_wire_type_name(dt_wire_type type)
{
    static const char *const names[] = { "?", "HELLO", "MEASURE", "RESULTS", "ERROR", "STOP",
                                         "PROBE", "PROBED" };
    return (int)type >= DT_WIRE_HELLO && type <= DT_WIRE_PROBED ? names[type] : "?";
}

/* ---- writing --------------------------------------------------------------- */

static void put_uint(dt_buf *out, uint64_t v, int bytes)
{
    unsigned char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    dt_buf_append(out, b, (size_t)bytes);
}

static void put_f64(dt_buf *out, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_uint(out, bits, 8);
}

/* Texts are bounded by their field (cap, NUL included), so what is written
 * can always be read back. */
static int put_str(dt_buf *out, const char *s, size_t cap, const char *what, dt_error *err)
{
    size_t n = strnlen(s, cap);
    if (n >= cap)
        return dt_error_set(err, DT_EINVAL, "mpi message: %s is longer than %zu bytes", what, cap - 1);
    put_uint(out, n, 2);
    dt_buf_append(out, s, n);
    return 0;
}

static int check_count(int n, const char *what, dt_error *err)
{
    if (n < 0 || n > DT_WIRE_MAX_CONFIGS)
        return dt_error_set(err, DT_EINVAL, "mpi message: %s count %d is not in 0..%d", what, n,
                            DT_WIRE_MAX_CONFIGS);
    return 0;
}

static int put_result(dt_buf *out, const dt_measure_result *m, dt_error *err)
{
    if ((int)m->result < 0 || m->result >= DT_RESULT_COUNT)
        return dt_error_set(err, DT_EINVAL, "mpi message: result class %d is no class", (int)m->result);
    put_uint(out, (uint64_t)m->result, 1);
    put_f64(out, m->gflops);
    put_f64(out, m->latency_s);
    put_uint(out, (uint32_t)m->repeats, 4);
    put_f64(out, m->cv);
    put_f64(out, m->compile_ms);
    put_f64(out, m->run_ms);
    return put_str(out, m->detail, sizeof m->detail, "a result's detail", err);
}

static int check_probe_kind(dt_wire_probe_kind what, dt_error *err)
{
    if (what != DT_WIRE_PROBE_ROOFLINE && what != DT_WIRE_PROBE_REFERENCE)
        return dt_error_set(err, DT_EINVAL, "mpi message: probe kind %d is no kind", (int)what);
    return 0;
}

static int put_roofline(dt_buf *out, const dt_roofline *r, dt_error *err)
{
    if (r->nlevels < 0 || r->nlevels > DT_ROOFLINE_MAX_LEVELS)
        return dt_error_set(err, DT_EINVAL, "mpi message: level count %d is not in 0..%d",
                            r->nlevels, DT_ROOFLINE_MAX_LEVELS);
    put_f64(out, r->peak_gflops);
    int rc = put_str(out, r->probe, sizeof r->probe, "the peak's probe", err);
    put_uint(out, (uint32_t)r->threads, 4);
    put_uint(out, (uint32_t)r->nlevels, 4);
    for (int i = 0; i < r->nlevels && rc == 0; i++) {
        const dt_mem_level *l = &r->levels[i];
        rc = put_str(out, l->name, sizeof l->name, "a memory level's name", err);
        put_f64(out, l->capacity_bytes);
        put_f64(out, l->probe_bytes);
        put_f64(out, l->read_gbs);
        put_f64(out, l->rw_gbs);
    }
    return rc;
}

static int put_payload(const dt_wire_msg *msg, dt_buf *out, dt_error *err)
{
    int rc = 0;
    switch (msg->type) {
    case DT_WIRE_HELLO: {
        const dt_wire_hello *h = &msg->u.hello;
        if ((rc = put_str(out, h->fingerprint, sizeof h->fingerprint, "the fingerprint", err)) ||
            (rc = put_str(out, h->dtune_version, sizeof h->dtune_version, "the dtune version", err)))
            return rc;
        return put_str(out, h->space_version, sizeof h->space_version, "the space version", err);
    }
    case DT_WIRE_MEASURE: {
        const dt_wire_measure *q = &msg->u.measure;
        if ((rc = check_count(q->n, "config", err)))
            return rc;
        put_uint(out, q->request, 4);
        put_uint(out, q->task, 4);
        put_f64(out, q->seconds);
        put_uint(out, (uint32_t)q->n, 4);
        for (int i = 0; i < q->n; i++)
            put_uint(out, q->configs[i], 8);
        return 0;
    }
    case DT_WIRE_RESULTS: {
        const dt_wire_results *a = &msg->u.results;
        if ((rc = check_count(a->n, "result", err)))
            return rc;
        put_uint(out, a->request, 4);
        put_uint(out, (uint32_t)a->n, 4);
        for (int i = 0; i < a->n && rc == 0; i++)
            rc = put_result(out, &a->results[i], err);
        return rc;
    }
    case DT_WIRE_ERROR:
        put_uint(out, (uint32_t)msg->u.failure.code, 4);
        return put_str(out, msg->u.failure.message, sizeof msg->u.failure.message,
                       "the error message", err);
    case DT_WIRE_STOP:
        return 0;
    case DT_WIRE_PROBE:
        if ((rc = check_probe_kind(msg->u.probe.what, err)))
            return rc;
        put_uint(out, msg->u.probe.request, 4);
        put_uint(out, msg->u.probe.task, 4);
        put_uint(out, (uint64_t)msg->u.probe.what, 1);
        return 0;
    case DT_WIRE_PROBED: {
        const dt_wire_probed *a = &msg->u.probed;
        if ((rc = check_probe_kind(a->what, err)))
            return rc;
        put_uint(out, a->request, 4);
        put_uint(out, (uint64_t)a->what, 1);
        return a->what == DT_WIRE_PROBE_ROOFLINE ? put_roofline(out, &a->roofline, err)
                                                 : put_result(out, &a->reference, err);
    }
    }
    return dt_error_set(err, DT_EINVAL, "mpi message: type %d is no type", (int)msg->type);
}

int dt_wire_encode(const dt_wire_msg *msg, dt_buf *out, dt_error *err)
{
    size_t start = out->len;
    dt_buf_append(out, magic, sizeof magic);
    put_uint(out, DT_WIRE_VERSION, 2);
    put_uint(out, (uint64_t)msg->type, 2);
    put_uint(out, 0, 4);                    /* payload length, filled below */
    int rc = put_payload(msg, out, err);
    if (rc == 0 && out->failed)
        rc = dt_error_set(err, DT_ENOMEM, "out of memory encoding an mpi message");
    if (rc) {
        out->len = start;
        return rc;
    }
    size_t payload = out->len - start - DT_WIRE_HEADER_BYTES;
    for (int i = 0; i < 4; i++)
        out->data[start + 8 + (size_t)i] = (char)(unsigned char)(payload >> (8 * i));
    return 0;
}

/* ---- reading --------------------------------------------------------------- */

typedef struct cursor {
    const unsigned char *bytes;
    size_t len, at;
    const char *type;          /* for messages: the type being read */
    dt_error *err;
    int rc;                    /* the first failure, 0 while none */
} cursor;

/* Whether n more bytes are there; when not, records the truncation. */
static bool need(cursor *c, size_t n, const char *field)
{
    if (c->rc)
        return false;
    if (c->len - c->at >= n)
        return true;
    c->rc = dt_error_set(c->err, DT_EINVAL,
                         "mpi message: %s payload cut short: %s needs %zu bytes at byte %zu, "
                         "%zu left", c->type, field, n, c->at, c->len - c->at);
    return false;
}

static uint64_t get_uint(cursor *c, int bytes, const char *field)
{
    uint64_t v = 0;
    if (!need(c, (size_t)bytes, field))
        return 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)c->bytes[c->at + (size_t)i] << (8 * i);
    c->at += (size_t)bytes;
    return v;
}

static double get_f64(cursor *c, const char *field)
{
    uint64_t bits = get_uint(c, 8, field);
    double v;
    memcpy(&v, &bits, sizeof v);
    if (c->rc == 0 && !isfinite(v))
        c->rc = dt_error_set(c->err, DT_EINVAL, "mpi message: %s %s is not a finite number",
                             c->type, field);
    return v;
}

/* A capacity: finite and not negative, or +inf (the level that holds any
 * working set). */
static double get_capacity(cursor *c, const char *field)
{
    uint64_t bits = get_uint(c, 8, field);
    double v;
    memcpy(&v, &bits, sizeof v);
    if (c->rc == 0 && (isnan(v) || v < 0))
        c->rc = dt_error_set(c->err, DT_EINVAL, "mpi message: %s %s is not a size", c->type, field);
    return v;
}

static void get_str(cursor *c, char *buf, size_t cap, const char *field)
{
    buf[0] = '\0';
    size_t n = (size_t)get_uint(c, 2, field);
    if (c->rc == 0 && n >= cap) {
        c->rc = dt_error_set(c->err, DT_EINVAL, "mpi message: %s %s of %zu bytes is longer than "
                             "its %zu-byte limit", c->type, field, n, cap - 1);
        return;
    }
    if (!need(c, n, field))
        return;
    memcpy(buf, c->bytes + c->at, n);
    buf[n] = '\0';
    c->at += n;
}

static int get_count(cursor *c, const char *field)
{
    uint64_t n = get_uint(c, 4, field);
    if (c->rc == 0 && n > DT_WIRE_MAX_CONFIGS)
        c->rc = dt_error_set(c->err, DT_EINVAL, "mpi message: %s %s %llu is more than %d",
                             c->type, field, (unsigned long long)n, DT_WIRE_MAX_CONFIGS);
    return c->rc ? 0 : (int)n;
}

static void get_result(cursor *c, dt_measure_result *m)
{
    memset(m, 0, sizeof *m);
    uint64_t cls = get_uint(c, 1, "result class");
    if (c->rc == 0 && cls >= DT_RESULT_COUNT)
        c->rc = dt_error_set(c->err, DT_EINVAL, "mpi message: %s result class %llu is no class",
                             c->type, (unsigned long long)cls);
    m->result = (dt_result_class)cls;
    m->gflops = get_f64(c, "gflops");
    m->latency_s = get_f64(c, "latency_s");
    m->repeats = (int)(int32_t)(uint32_t)get_uint(c, 4, "repeats");
    m->cv = get_f64(c, "cv");
    m->compile_ms = get_f64(c, "compile_ms");
    m->run_ms = get_f64(c, "run_ms");
    get_str(c, m->detail, sizeof m->detail, "detail");
}

static dt_wire_probe_kind get_probe_kind(cursor *c)
{
    uint64_t what = get_uint(c, 1, "probe kind");
    if (c->rc == 0 && what != DT_WIRE_PROBE_ROOFLINE && what != DT_WIRE_PROBE_REFERENCE)
        c->rc = dt_error_set(c->err, DT_EINVAL, "mpi message: %s probe kind %llu is no kind",
                             c->type, (unsigned long long)what);
    return (dt_wire_probe_kind)what;
}

static void get_roofline(cursor *c, dt_roofline *r)
{
    memset(r, 0, sizeof *r);
    r->peak_gflops = get_f64(c, "peak_gflops");
    get_str(c, r->probe, sizeof r->probe, "probe");
    r->threads = (int)(int32_t)(uint32_t)get_uint(c, 4, "threads");
    uint64_t n = get_uint(c, 4, "level count");
    if (c->rc == 0 && n > DT_ROOFLINE_MAX_LEVELS)
        c->rc = dt_error_set(c->err, DT_EINVAL, "mpi message: %s level count %llu is more than %d",
                             c->type, (unsigned long long)n, DT_ROOFLINE_MAX_LEVELS);
    for (int i = 0; c->rc == 0 && i < (int)n; i++) {
        dt_mem_level *l = &r->levels[i];
        get_str(c, l->name, sizeof l->name, "level name");
        l->capacity_bytes = get_capacity(c, "capacity_bytes");
        l->probe_bytes = get_f64(c, "probe_bytes");
        l->read_gbs = get_f64(c, "read_gbs");
        l->rw_gbs = get_f64(c, "rw_gbs");
    }
    r->nlevels = c->rc ? 0 : (int)n;
}

static void get_payload(cursor *c, dt_wire_msg *msg)
{
    switch (msg->type) {
    case DT_WIRE_HELLO:
        get_str(c, msg->u.hello.fingerprint, sizeof msg->u.hello.fingerprint, "fingerprint");
        get_str(c, msg->u.hello.dtune_version, sizeof msg->u.hello.dtune_version, "dtune version");
        get_str(c, msg->u.hello.space_version, sizeof msg->u.hello.space_version, "space version");
        return;
    case DT_WIRE_MEASURE: {
        dt_wire_measure *q = &msg->u.measure;
        q->request = (uint32_t)get_uint(c, 4, "request");
        q->task = (uint32_t)get_uint(c, 4, "task");
        q->seconds = get_f64(c, "seconds");
        q->n = get_count(c, "config count");
        for (int i = 0; i < q->n && c->rc == 0; i++)
            q->configs[i] = get_uint(c, 8, "config");
        return;
    }
    case DT_WIRE_RESULTS: {
        dt_wire_results *a = &msg->u.results;
        a->request = (uint32_t)get_uint(c, 4, "request");
        a->n = get_count(c, "result count");
        for (int i = 0; i < a->n && c->rc == 0; i++)
            get_result(c, &a->results[i]);
        return;
    }
    case DT_WIRE_ERROR:
        msg->u.failure.code = (int)(int32_t)(uint32_t)get_uint(c, 4, "code");
        get_str(c, msg->u.failure.message, sizeof msg->u.failure.message, "message");
        return;
    case DT_WIRE_STOP:
        return;
    case DT_WIRE_PROBE:
        msg->u.probe.request = (uint32_t)get_uint(c, 4, "request");
        msg->u.probe.task = (uint32_t)get_uint(c, 4, "task");
        msg->u.probe.what = get_probe_kind(c);
        return;
    case DT_WIRE_PROBED: {
        dt_wire_probed *a = &msg->u.probed;
        a->request = (uint32_t)get_uint(c, 4, "request");
        a->what = get_probe_kind(c);
        if (c->rc == 0 && a->what == DT_WIRE_PROBE_ROOFLINE)
            get_roofline(c, &a->roofline);
        else if (c->rc == 0)
            get_result(c, &a->reference);
        return;
    }
    }
}

/* The header: magic, version, a known type, and a payload length that is
 * within the limit and is exactly what arrived. */
static int read_header(const unsigned char *b, size_t len, dt_wire_msg *msg, dt_error *err)
{
    if (len < DT_WIRE_HEADER_BYTES)
        return dt_error_set(err, DT_EINVAL, "mpi message: %zu bytes, shorter than its %d-byte "
                            "header", len, DT_WIRE_HEADER_BYTES);
    if (memcmp(b, magic, sizeof magic) != 0)
        return dt_error_set(err, DT_EINVAL, "mpi message: does not start with DTMW (not a dtune "
                            "message)");
    unsigned version = (unsigned)b[4] | (unsigned)b[5] << 8;
    unsigned type = (unsigned)b[6] | (unsigned)b[7] << 8;
    uint32_t payload = (uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 |
                       (uint32_t)b[11] << 24;
    if (version != DT_WIRE_VERSION)
        return dt_error_set(err, DT_EINVAL, "mpi message: version %u, this dtune speaks version "
                            "%d (run the same dtune on every rank)", version, DT_WIRE_VERSION);
    if (type < DT_WIRE_HELLO || type > DT_WIRE_PROBED)
        return dt_error_set(err, DT_EINVAL, "mpi message: type %u is no type", type);
    if (payload > DT_WIRE_MAX_PAYLOAD)
        return dt_error_set(err, DT_EINVAL, "mpi message: %s payload of %u bytes is over the "
                            "%u-byte limit", dt_wire_type_name((dt_wire_type)type), payload,
                            DT_WIRE_MAX_PAYLOAD);
    if (payload != len - DT_WIRE_HEADER_BYTES)
        return dt_error_set(err, DT_EINVAL, "mpi message: %s header says %u payload bytes, %zu "
                            "arrived", dt_wire_type_name((dt_wire_type)type), payload,
                            len - DT_WIRE_HEADER_BYTES);
    msg->type = (dt_wire_type)type;
    return 0;
}

int dt_wire_decode(const void *bytes, size_t len, dt_wire_msg *msg, dt_error *err)
{
    int rc = read_header(bytes, len, msg, err);
    if (rc)
        return rc;
    cursor c = { .bytes = bytes, .len = len, .at = DT_WIRE_HEADER_BYTES,
                 .type = dt_wire_type_name(msg->type), .err = err };
    get_payload(&c, msg);
    if (c.rc)
        return c.rc;
    if (c.at != len)
        return dt_error_set(err, DT_EINVAL, "mpi message: %s payload has %zu bytes left over "
                            "after its last field", c.type, len - c.at);
    return 0;
}

/* ---- the hello check ------------------------------------------------------- */

int dt_wire_hello_check(const dt_wire_hello *mine, const dt_wire_hello *worker, int rank,
                        dt_error *err)
{
    if (strcmp(mine->fingerprint, worker->fingerprint) != 0)
        return dt_error_set(err, DT_EINVAL, "mpi rank %d measures on another kind of machine "
                            "('%s'; rank 1, the run's machine: '%s'): its configs and speeds "
                            "would not mean the same, so it is refused; run every worker on "
                            "identical machines", rank, worker->fingerprint, mine->fingerprint);
    if (strcmp(mine->dtune_version, worker->dtune_version) != 0)
        return dt_error_set(err, DT_EINVAL, "mpi rank %d runs dtune %s, rank 0 runs %s: run the "
                            "same dtune on every rank", rank, worker->dtune_version,
                            mine->dtune_version);
    if (strcmp(mine->space_version, worker->space_version) != 0)
        return dt_error_set(err, DT_EINVAL, "mpi rank %d built other knob spaces (space version "
                            "%s, rank 0: %s): give every rank the same config and model", rank,
                            worker->space_version, mine->space_version);
    return 0;
}
