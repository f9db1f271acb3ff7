/* test_mpi_wire.c — the MPI run's messages: every type read back as written,
 * and every malformed message (each truncation, another version, a length
 * that lies, bytes left over, counts and texts past their limits, bad
 * numbers) refused with a message, never read past its end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/mpi_wire.h"

static dt_wire_msg *new_msg(void)
{
    dt_wire_msg *m = calloc(1, sizeof *m);
    assert_non_null(m);
    return m;
}

static void sample_hello(dt_wire_msg *m)
{
    m->type = DT_WIRE_HELLO;
    snprintf(m->u.hello.fingerprint, sizeof m->u.hello.fingerprint,
             "AMD EPYC 9R14, family 25 model 17 stepping 1, avx512f avx2 fma, nproc 2");
    snprintf(m->u.hello.dtune_version, sizeof m->u.hello.dtune_version, "0.18");
    snprintf(m->u.hello.space_version, sizeof m->u.hello.space_version, "9f3a0c17d2e4b5a1");
}

static void sample_measure(dt_wire_msg *m, int n)
{
    m->type = DT_WIRE_MEASURE;
    m->u.measure.request = 70001;
    m->u.measure.task = 3;
    m->u.measure.seconds = 12.375;
    m->u.measure.n = n;
    for (int i = 0; i < n; i++)
        m->u.measure.configs[i] = 0x0123456789abcdefULL - (uint64_t)i * 7919;
}

static void sample_results(dt_wire_msg *m, int n)
{
    m->type = DT_WIRE_RESULTS;
    m->u.results.request = 70001;
    m->u.results.n = n;
    for (int i = 0; i < n; i++) {
        dt_measure_result *r = &m->u.results.results[i];
        r->result = (dt_result_class)(i % DT_RESULT_COUNT);
        r->gflops = r->result == DT_RESULT_OK ? 41.73 + i : 0;
        r->latency_s = r->result == DT_RESULT_OK ? 3.17e-5 : 0;
        r->repeats = 3 + i;
        r->cv = 0.0431;
        r->compile_ms = 211.9;
        r->run_ms = 17.25;
        snprintf(r->detail, sizeof r->detail, i % 2 ? "element %d differs" : "", i);
    }
}

static void sample_error(dt_wire_msg *m)
{
    m->type = DT_WIRE_ERROR;
    m->u.failure.code = DT_EIO;
    snprintf(m->u.failure.message, sizeof m->u.failure.message,
             "cannot start the measurement process: fork: Resource temporarily unavailable");
}

static void sample_probe(dt_wire_msg *m, dt_wire_probe_kind what)
{
    m->type = DT_WIRE_PROBE;
    m->u.probe.request = 90017;
    m->u.probe.task = 11;
    m->u.probe.what = what;
}

/* A worker's roofline: the peak and levels L1 .. DRAM, the last holding any
 * working set (+inf). */
static void sample_probed_roofline(dt_wire_msg *m)
{
    static const char *const names[] = { "L1", "L2", "L3", "DRAM" };
    memset(m, 0, sizeof *m);
    m->type = DT_WIRE_PROBED;
    m->u.probed.request = 90017;
    m->u.probed.what = DT_WIRE_PROBE_ROOFLINE;
    dt_roofline *r = &m->u.probed.roofline;
    r->peak_gflops = 187.31;
    snprintf(r->probe, sizeof r->probe, "fma 512-bit x16 chains, 1 thread");
    r->threads = 1;
    r->nlevels = DT_ROOFLINE_MAX_LEVELS;
    for (int i = 0; i < r->nlevels; i++) {
        snprintf(r->levels[i].name, sizeof r->levels[i].name, "%s", names[i]);
        r->levels[i].capacity_bytes = i + 1 < r->nlevels ? 32768.0 * (1 << (5 * i)) : INFINITY;
        r->levels[i].probe_bytes = 16384.0 * (1 << (5 * i));
        r->levels[i].read_gbs = 311.7 / (i + 1);
        r->levels[i].rw_gbs = 287.3 / (i + 1);
    }
}

static void sample_probed_reference(dt_wire_msg *m)
{
    memset(m, 0, sizeof *m);
    m->type = DT_WIRE_PROBED;
    m->u.probed.request = 90018;
    m->u.probed.what = DT_WIRE_PROBE_REFERENCE;
    dt_measure_result *r = &m->u.probed.reference;
    r->result = DT_RESULT_OK;
    r->gflops = 0.731;
    r->latency_s = 4.193e-3;
    r->repeats = 3;
    r->run_ms = 12.58;
}

/* Encodes m, checking success, into a fresh buffer. */
static dt_buf encode(const dt_wire_msg *m)
{
    dt_buf b = { 0 };
    dt_error err;
    if (dt_wire_encode(m, &b, &err) != 0)
        fail_msg("encode: %s", err.msg);
    return b;
}

static void assert_result_equal(const dt_measure_result *a, const dt_measure_result *b)
{
    assert_int_equal(a->result, b->result);
    assert_true(a->gflops == b->gflops && a->latency_s == b->latency_s && a->cv == b->cv);
    assert_true(a->compile_ms == b->compile_ms && a->run_ms == b->run_ms);
    assert_int_equal(a->repeats, b->repeats);
    assert_string_equal(a->detail, b->detail);
}

/* Decodes b and checks it equals m field by field. */
static void assert_round_trip(const dt_wire_msg *m)
{
    dt_buf b = encode(m);
    dt_wire_msg *back = new_msg();
    dt_error err;
    if (dt_wire_decode(b.data, b.len, back, &err) != 0)
        fail_msg("decode of %s: %s", dt_wire_type_name(m->type), err.msg);
    assert_int_equal(back->type, m->type);
    switch (m->type) {
    case DT_WIRE_HELLO:
        assert_string_equal(back->u.hello.fingerprint, m->u.hello.fingerprint);
        assert_string_equal(back->u.hello.dtune_version, m->u.hello.dtune_version);
        assert_string_equal(back->u.hello.space_version, m->u.hello.space_version);
        break;
    case DT_WIRE_MEASURE:
        assert_int_equal(back->u.measure.request, m->u.measure.request);
        assert_int_equal(back->u.measure.task, m->u.measure.task);
        assert_true(back->u.measure.seconds == m->u.measure.seconds);
        assert_int_equal(back->u.measure.n, m->u.measure.n);
        assert_memory_equal(back->u.measure.configs, m->u.measure.configs,
                            (size_t)m->u.measure.n * sizeof m->u.measure.configs[0]);
        break;
    case DT_WIRE_RESULTS:
        assert_int_equal(back->u.results.request, m->u.results.request);
        assert_int_equal(back->u.results.n, m->u.results.n);
        for (int i = 0; i < m->u.results.n; i++)
            assert_result_equal(&back->u.results.results[i], &m->u.results.results[i]);
        break;
    case DT_WIRE_ERROR:
        assert_int_equal(back->u.failure.code, m->u.failure.code);
        assert_string_equal(back->u.failure.message, m->u.failure.message);
        break;
    case DT_WIRE_STOP:
        break;
    case DT_WIRE_PROBE:
        assert_int_equal(back->u.probe.request, m->u.probe.request);
        assert_int_equal(back->u.probe.task, m->u.probe.task);
        assert_int_equal(back->u.probe.what, m->u.probe.what);
        break;
    case DT_WIRE_PROBED:
        assert_int_equal(back->u.probed.request, m->u.probed.request);
        assert_int_equal(back->u.probed.what, m->u.probed.what);
        if (m->u.probed.what == DT_WIRE_PROBE_REFERENCE) {
            assert_result_equal(&back->u.probed.reference, &m->u.probed.reference);
            break;
        }
        const dt_roofline *got = &back->u.probed.roofline, *sent = &m->u.probed.roofline;
        assert_true(got->peak_gflops == sent->peak_gflops);
        assert_string_equal(got->probe, sent->probe);
        assert_int_equal(got->threads, sent->threads);
        assert_int_equal(got->nlevels, sent->nlevels);
        for (int i = 0; i < sent->nlevels; i++) {
            assert_string_equal(got->levels[i].name, sent->levels[i].name);
            assert_true(got->levels[i].capacity_bytes == sent->levels[i].capacity_bytes);
            assert_true(got->levels[i].probe_bytes == sent->levels[i].probe_bytes);
            assert_true(got->levels[i].read_gbs == sent->levels[i].read_gbs);
            assert_true(got->levels[i].rw_gbs == sent->levels[i].rw_gbs);
        }
        break;
    }
    free(back);
    dt_buf_free(&b);
}

static void test_round_trips(void **state)
{
    (void)state;
    dt_wire_msg *m = new_msg();
    sample_hello(m);
    assert_round_trip(m);
    sample_measure(m, 0);
    assert_round_trip(m);
    sample_measure(m, 5);
    assert_round_trip(m);
    sample_measure(m, DT_WIRE_MAX_CONFIGS);
    assert_round_trip(m);
    sample_results(m, 11);
    assert_round_trip(m);
    sample_error(m);
    assert_round_trip(m);
    memset(m, 0, sizeof *m);
    m->type = DT_WIRE_STOP;
    assert_round_trip(m);
    sample_probe(m, DT_WIRE_PROBE_ROOFLINE);
    assert_round_trip(m);
    sample_probe(m, DT_WIRE_PROBE_REFERENCE);
    assert_round_trip(m);
    sample_probed_roofline(m);
    assert_round_trip(m);
    m->u.probed.roofline.nlevels = 0;     /* a backend with a peak and no bandwidths */
    assert_round_trip(m);
    sample_probed_reference(m);
    assert_round_trip(m);
    free(m);
}

/* The longest RESULTS (every result, every detail at its longest) is within
 * the payload limit, so a full batch always goes through. */
static void test_longest_results_fit(void **state)
{
    (void)state;
    dt_wire_msg *m = new_msg();
    sample_results(m, DT_WIRE_MAX_CONFIGS);
    for (int i = 0; i < DT_WIRE_MAX_CONFIGS; i++) {
        char *d = m->u.results.results[i].detail;
        memset(d, 'x', sizeof m->u.results.results[i].detail - 1);
        d[sizeof m->u.results.results[i].detail - 1] = '\0';
    }
    dt_buf b = encode(m);
    assert_true(b.len - DT_WIRE_HEADER_BYTES <= DT_WIRE_MAX_PAYLOAD);
    assert_round_trip(m);
    dt_buf_free(&b);
    free(m);
}

/* Writes payload length into a message's header. */
static void set_payload_len(unsigned char *bytes, size_t payload)
{
    for (int i = 0; i < 4; i++)
        bytes[8 + i] = (unsigned char)(payload >> (8 * i));
}

/* Every prefix of m's bytes is refused: as sent (the header's length then
 * disagrees) and with the header's length fixed to the prefix (a field is
 * cut short). Each copy is exactly as long as the prefix, so a read past its
 * end shows under AddressSanitizer. */
static void assert_every_truncation_refused(const dt_wire_msg *m)
{
    dt_buf b = encode(m);
    dt_wire_msg *back = new_msg();
    for (size_t len = 0; len < b.len; len++) {
        unsigned char *cut = malloc(len ? len : 1);
        assert_non_null(cut);
        memcpy(cut, b.data, len);
        dt_error err = { 0 };
        assert_int_equal(dt_wire_decode(cut, len, back, &err), DT_EINVAL);
        assert_non_null(strstr(err.msg, "mpi message: "));
        if (len >= DT_WIRE_HEADER_BYTES) {
            set_payload_len(cut, len - DT_WIRE_HEADER_BYTES);
            memset(&err, 0, sizeof err);
            assert_int_equal(dt_wire_decode(cut, len, back, &err), DT_EINVAL);
            assert_non_null(strstr(err.msg, "cut short"));
        }
        free(cut);
    }
    free(back);
    dt_buf_free(&b);
}

static void test_every_truncation_refused(void **state)
{
    (void)state;
    dt_wire_msg *m = new_msg();
    sample_hello(m);
    assert_every_truncation_refused(m);
    sample_measure(m, 4);
    assert_every_truncation_refused(m);
    sample_results(m, 3);
    assert_every_truncation_refused(m);
    sample_error(m);
    assert_every_truncation_refused(m);
    sample_probe(m, DT_WIRE_PROBE_REFERENCE);
    assert_every_truncation_refused(m);
    sample_probed_roofline(m);
    assert_every_truncation_refused(m);
    sample_probed_reference(m);
    assert_every_truncation_refused(m);
    free(m);
}

/* Decodes bytes expecting DT_EINVAL with `needle` in the message. */
static void assert_refused(const void *bytes, size_t len, const char *needle)
{
    dt_wire_msg *back = new_msg();
    dt_error err = { 0 };
    assert_int_equal(dt_wire_decode(bytes, len, back, &err), DT_EINVAL);
    if (!strstr(err.msg, needle))
        fail_msg("expected '%s' in: %s", needle, err.msg);
    free(back);
}

static void test_wrong_version_magic_and_type(void **state)
{
    (void)state;
    dt_wire_msg *m = new_msg();
    sample_measure(m, 2);
    dt_buf b = encode(m);
    unsigned char *bytes = (unsigned char *)b.data;
    char said[64];
    snprintf(said, sizeof said, "version %d, this dtune speaks version %d", DT_WIRE_VERSION - 1,
             DT_WIRE_VERSION);
    bytes[4] = DT_WIRE_VERSION - 1;
    assert_refused(bytes, b.len, said);
    bytes[4] = DT_WIRE_VERSION;
    bytes[6] = 9;
    assert_refused(bytes, b.len, "type 9 is no type");
    bytes[6] = DT_WIRE_MEASURE;
    bytes[0] = 'X';
    assert_refused(bytes, b.len, "does not start with DTMW");
    dt_buf_free(&b);
    free(m);
}

static void test_wrong_lengths(void **state)
{
    (void)state;
    dt_wire_msg *m = new_msg();
    sample_hello(m);
    dt_buf b = encode(m);
    size_t payload = b.len - DT_WIRE_HEADER_BYTES;
    unsigned char *bytes = (unsigned char *)b.data;
    set_payload_len(bytes, payload + 1);
    assert_refused(bytes, b.len, "header says");
    set_payload_len(bytes, payload - 1);
    assert_refused(bytes, b.len, "header says");
    /* one byte more than the fields, with a header that agrees */
    dt_buf_append(&b, "\x07", 1);
    bytes = (unsigned char *)b.data;
    set_payload_len(bytes, payload + 1);
    assert_refused(bytes, b.len, "1 bytes left over");
    /* a text whose length field claims more than its limit */
    set_payload_len(bytes, payload);
    bytes[DT_WIRE_HEADER_BYTES] = 0xff;
    bytes[DT_WIRE_HEADER_BYTES + 1] = 0x01;
    assert_refused(bytes, b.len - 1, "fingerprint of 511 bytes is longer than its 255-byte limit");
    dt_buf_free(&b);
    free(m);
}

static void test_oversize_refused(void **state)
{
    (void)state;
    dt_wire_msg *m = new_msg();
    dt_error err;
    /* encoding a batch past the limit fails and leaves the buffer as it was */
    sample_measure(m, 2);
    m->u.measure.n = DT_WIRE_MAX_CONFIGS + 1;
    dt_buf b = { 0 };
    assert_int_equal(dt_wire_encode(m, &b, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "config count 257"));
    assert_int_equal(b.len, 0);
    dt_buf_free(&b);
    /* a header claiming a payload over the limit */
    m->u.measure.n = 2;
    b = encode(m);
    unsigned char *bytes = (unsigned char *)b.data;
    set_payload_len(bytes, DT_WIRE_MAX_PAYLOAD + 1);
    assert_refused(bytes, b.len, "over the 131072-byte limit");
    /* a count past the limit inside a consistent message */
    set_payload_len(bytes, b.len - DT_WIRE_HEADER_BYTES);
    size_t count_at = DT_WIRE_HEADER_BYTES + 4 + 4 + 8;
    bytes[count_at] = 0x01;
    bytes[count_at + 1] = 0x01;     /* 257 */
    assert_refused(bytes, b.len, "config count 257 is more than 256");
    dt_buf_free(&b);
    free(m);
}

static void test_bad_numbers_refused(void **state)
{
    (void)state;
    dt_wire_msg *m = new_msg();
    sample_results(m, 1);
    dt_buf b = encode(m);
    unsigned char *bytes = (unsigned char *)b.data;
    size_t class_at = DT_WIRE_HEADER_BYTES + 8;
    bytes[class_at] = DT_RESULT_COUNT;
    assert_refused(bytes, b.len, "result class 9 is no class");
    bytes[class_at] = DT_RESULT_OK;
    double nan_value = NAN;
    memcpy(bytes + class_at + 1, &nan_value, 8);   /* gflops; the test machine is little-endian */
    assert_refused(bytes, b.len, "gflops is not a finite number");
    dt_buf_free(&b);
    m->u.results.results[0].result = DT_RESULT_COUNT;
    dt_error err;
    dt_buf empty = { 0 };
    assert_int_equal(dt_wire_encode(m, &empty, &err), DT_EINVAL);
    assert_int_equal(empty.len, 0);
    dt_buf_free(&empty);
    free(m);
}

/* A PROBED that lies (a kind that is none, more levels than a roofline
 * has, a capacity that is no size, a NaN peak) is refused, and a PROBE of
 * no kind is not written. */
static void test_bad_probes_refused(void **state)
{
    (void)state;
    dt_wire_msg *m = new_msg();
    sample_probed_roofline(m);
    dt_buf b = encode(m);
    unsigned char *bytes = (unsigned char *)b.data;
    size_t kind_at = DT_WIRE_HEADER_BYTES + 4, peak_at = kind_at + 1;
    bytes[kind_at] = 3;
    assert_refused(bytes, b.len, "PROBED probe kind 3 is no kind");
    bytes[kind_at] = DT_WIRE_PROBE_ROOFLINE;
    double nan_value = NAN;
    unsigned char peak[8];
    memcpy(peak, bytes + peak_at, 8);
    memcpy(bytes + peak_at, &nan_value, 8);
    assert_refused(bytes, b.len, "PROBED peak_gflops is not a finite number");
    memcpy(bytes + peak_at, peak, 8);
    size_t probe_len = strlen(m->u.probed.roofline.probe);
    size_t count_at = peak_at + 8 + 2 + probe_len + 4;
    bytes[count_at] = DT_ROOFLINE_MAX_LEVELS + 1;
    assert_refused(bytes, b.len, "level count 5 is more than 4");
    bytes[count_at] = DT_ROOFLINE_MAX_LEVELS;
    size_t capacity_at = count_at + 4 + 2 + strlen(m->u.probed.roofline.levels[0].name);
    double negative = -1.0;
    memcpy(bytes + capacity_at, &negative, 8);
    assert_refused(bytes, b.len, "capacity_bytes is not a size");
    dt_buf_free(&b);
    sample_probe(m, DT_WIRE_PROBE_ROOFLINE);
    m->u.probe.what = (dt_wire_probe_kind)7;
    dt_buf empty = { 0 };
    dt_error err;
    assert_int_equal(dt_wire_encode(m, &empty, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "probe kind 7 is no kind"));
    assert_int_equal(empty.len, 0);
    dt_buf_free(&empty);
    free(m);
}

static void test_hello_check(void **state)
{
    (void)state;
    dt_wire_msg *mine = new_msg(), *worker = new_msg();
    sample_hello(mine);
    sample_hello(worker);
    dt_error err;
    assert_int_equal(dt_wire_hello_check(&mine->u.hello, &worker->u.hello, 1, &err), 0);
    snprintf(worker->u.hello.fingerprint, sizeof worker->u.hello.fingerprint,
             "Intel Xeon Gold 6348, family 6 model 106 stepping 6, avx512f avx2 fma, nproc 56");
    assert_int_equal(dt_wire_hello_check(&mine->u.hello, &worker->u.hello, 3, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "mpi rank 3 measures on another kind of machine"));
    assert_non_null(strstr(err.msg, "Xeon Gold 6348"));
    sample_hello(worker);
    snprintf(worker->u.hello.dtune_version, sizeof worker->u.hello.dtune_version, "0.17");
    assert_int_equal(dt_wire_hello_check(&mine->u.hello, &worker->u.hello, 2, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "rank 2 runs dtune 0.17, rank 0 runs 0.18"));
    sample_hello(worker);
    worker->u.hello.space_version[0] = '0';
    assert_int_equal(dt_wire_hello_check(&mine->u.hello, &worker->u.hello, 1, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "other knob spaces"));
    free(mine);
    free(worker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_longest_results_fit),
        cmocka_unit_test(test_every_truncation_refused),
        cmocka_unit_test(test_wrong_version_magic_and_type),
        cmocka_unit_test(test_wrong_lengths),
        cmocka_unit_test(test_oversize_refused),
        cmocka_unit_test(test_bad_numbers_refused),
        cmocka_unit_test(test_bad_probes_refused),
        cmocka_unit_test(test_hello_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
