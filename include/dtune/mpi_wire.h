/* mpi_wire.h — the messages rank 0 and the measurement workers of an MPI run
 * exchange, as bytes: encoding, checked decoding, and the hello check.
 *
 * Pure C with no MPI call, so every rule is unit-tested without MPI
 * (tests/test_mpi_wire.c); src/mpi_run.c moves the bytes.
 *
 * A message is a 12-byte header and a payload, every integer little-endian:
 *   "DTMW"  u16 version  u16 type  u32 payload bytes
 * Payloads (str = u16 length + bytes, no NUL; f64 = IEEE-754 bits as u64):
 *   HELLO    worker -> 0: str fingerprint, str dtune version, str space version
 *   MEASURE  0 -> worker: u32 request, u32 task, f64 seconds, u32 n, n x u64 config
 *   RESULTS  worker -> 0: u32 request, u32 n, n x (u8 class, f64 gflops,
 *            f64 latency_s, u32 repeats, f64 cv, f64 compile_ms, f64 run_ms,
 *            str detail)
 *   ERROR    worker -> 0: i32 DT_E* code, str message (its backend failed)
 *   STOP     0 -> worker: empty
 *   PROBE    0 -> worker: u32 request, u32 task, u8 what (1 roofline, 2 reference)
 *   PROBED   worker -> 0: u32 request, u8 what, then for a roofline: f64
 *            peak_gflops, str probe, u32 threads, u32 nlevels, nlevels x (str
 *            name, f64 capacity_bytes (+inf: the last level, holds any), f64
 *            probe_bytes, f64 read_gbs, f64 rw_gbs); for a reference: one
 *            result as in RESULTS
 * A message of another version, a payload that does not match its header's
 * length, a field cut short, bytes left over, a count or a text past its
 * limit, an unknown result class or a number that is not finite is refused
 * with a message naming what is wrong; nothing is read past the bytes given.
 */
#ifndef DTUNE_MPI_WIRE_H
#define DTUNE_MPI_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "dtune/error.h"
#include "dtune/result.h"
#include "dtune/roofline.h"
#include "dtune/util.h"

/* The version this dtune writes and the only one it reads. */
#define DT_WIRE_VERSION 2
#define DT_WIRE_HEADER_BYTES 12
/* Configs of one MEASURE (and results of one RESULTS) at most; a longer
 * batch goes as several requests. */
#define DT_WIRE_MAX_CONFIGS 256
/* Payload bytes at most: a full RESULTS with every detail at its longest
 * fits, and a receiver refuses anything longer before allocating it. */
#define DT_WIRE_MAX_PAYLOAD (1u << 17)
/* Longest fingerprint and version texts, NUL included. */
#define DT_WIRE_FINGERPRINT_MAX 256
#define DT_WIRE_VERSION_MAX 64

typedef enum dt_wire_type {
    DT_WIRE_HELLO = 1,
    DT_WIRE_MEASURE,
    DT_WIRE_RESULTS,
    DT_WIRE_ERROR,
    DT_WIRE_STOP,
    DT_WIRE_PROBE,
    DT_WIRE_PROBED
} dt_wire_type;

/* What a PROBE asks a worker to time, as the one-process run's measurer
 * times it: the machine's roofline for a task (dt_measurer_roofline), or a
 * task's reference implementation (dt_measurer_reference). */
typedef enum dt_wire_probe_kind {
    DT_WIRE_PROBE_ROOFLINE = 1,
    DT_WIRE_PROBE_REFERENCE
} dt_wire_probe_kind;

typedef struct dt_wire_hello {
    char fingerprint[DT_WIRE_FINGERPRINT_MAX];  /* the machine it measures on */
    char dtune_version[DT_WIRE_VERSION_MAX];
    char space_version[DT_WIRE_VERSION_MAX];    /* hash of every task's knob space */
} dt_wire_hello;

typedef struct dt_wire_measure {
    uint32_t request;          /* echoed by the RESULTS that answers it */
    uint32_t task;             /* index into the model's tasks */
    double seconds;            /* start no config after this long; 0 = no limit */
    int n;
    uint64_t configs[DT_WIRE_MAX_CONFIGS];  /* indices into the task's space */
} dt_wire_measure;

typedef struct dt_wire_results {
    uint32_t request;
    int n;                     /* the first n configs of the request, measured */
    dt_measure_result results[DT_WIRE_MAX_CONFIGS];
} dt_wire_results;

typedef struct dt_wire_probe {
    uint32_t request;          /* echoed by the PROBED that answers it */
    uint32_t task;
    dt_wire_probe_kind what;
} dt_wire_probe;

typedef struct dt_wire_probed {
    uint32_t request;
    dt_wire_probe_kind what;
    dt_roofline roofline;      /* DT_WIRE_PROBE_ROOFLINE: peak 0 = unknown */
    dt_measure_result reference; /* DT_WIRE_PROBE_REFERENCE */
} dt_wire_probed;

typedef struct dt_wire_failure {
    int code;                  /* a negative DT_E* */
    char message[DT_ERROR_MSG_MAX];
} dt_wire_failure;

typedef struct dt_wire_msg {
    dt_wire_type type;
    union {
        dt_wire_hello hello;
        dt_wire_measure measure;
        dt_wire_results results;
        dt_wire_failure failure;   /* DT_WIRE_ERROR */
        dt_wire_probe probe;
        dt_wire_probed probed;
    } u;
} dt_wire_msg;

/* "HELLO", "MEASURE", ...; "?" for a value that is no type. */
const char *dt_wire_type_name(dt_wire_type type);

/* Appends msg's bytes to out. Returns 0, DT_EINVAL (a count, a text or a
 * result class past its limit: the message could not be read back) or
 * DT_ENOMEM. */
int dt_wire_encode(const dt_wire_msg *msg, dt_buf *out, dt_error *err);

/* Reads one whole message of len bytes into *msg. Returns 0 or DT_EINVAL
 * with a message ("mpi message: ..."); *msg is then unspecified. */
int dt_wire_decode(const void *bytes, size_t len, dt_wire_msg *msg, dt_error *err);

/* Whether the worker of rank `rank` that said `worker` may measure in the
 * run described by `mine`: rank 1's fingerprint (the run's machine: a config
 * index means a config, and a speed means something, on one kind of machine
 * only) and rank 0's dtune version and space version, all the same. Returns
 * 0 or DT_EINVAL naming the difference. */
int dt_wire_hello_check(const dt_wire_hello *mine, const dt_wire_hello *worker, int rank,
                        dt_error *err);

#endif
