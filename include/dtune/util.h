/* util.h — the small helpers every part uses, written once: the monotonic
 * clock, mkdir -p, write-all, array growth, a growable text buffer and the
 * list of a table's names for messages.
 *
 * Public because the benchmarks in bench/ and the test support use them too.
 */
#ifndef DTUNE_UTIL_H
#define DTUNE_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dtune/error.h"

/* Seconds on CLOCK_MONOTONIC_RAW: system-wide, so a parent and its
 * measurement processes compare stamps; never stepped nor slewed by time
 * synchronisation, so differences are durations, kernel timings included. */
double dt_now_seconds(void);

/* Creates directory path and its missing parents with mode 0755 (less the
 * umask); existing ones are fine. Returns 0, DT_EINVAL for an empty path,
 * DT_ENOMEM, or DT_EIO with "PATH: cannot create directory: REASON" in err. */
int dt_mkdir_p(const char *path, dt_error *err);

/* Opens an input file for reading: path must name a regular file (a FIFO or
 * device would block a reader for ever or never end; a folder is no input).
 * The open does not block. Returns the stream, or NULL with err set:
 * DT_ENOTFOUND "PATH: cannot open WHAT: REASON", or DT_EINVAL
 * "PATH: the WHAT is a FIFO|device|socket|folder, not a regular file". */
FILE *dt_open_input(const char *path, const char *what, dt_error *err);

/* Writes all len bytes of buf to fd, retrying short writes and EINTR.
 * Returns 0, or the errno value of the failing write (EIO when write
 * returned 0). */
int dt_write_all(int fd, const void *buf, size_t len);

/* Replaces the file at path with len bytes whole, or leaves it as it was:
 * they go to a temporary file beside it (mode 0644, as report.c's), fsync'd
 * and renamed over path. Returns 0, or DT_EIO with "PATH: REASON" in err
 * (the temporary file removed). */
int dt_write_file_replace(const char *path, const void *bytes, size_t len, dt_error *err);

/* Array growth. array_ptr is always the address of the array's pointer (of
 * any element type); on failure the old array stays valid and unchanged. */

/* The capacity for at least `need` elements: `cap` when they fit, else
 * doubling from max(cap, 16). Returns 0 when that overflows a size_t. */
size_t dt_grow_capacity(size_t cap, size_t need);

/* Reallocates *array_ptr to n elements of `size` bytes, the product checked
 * for overflow. Returns 0 or DT_ENOMEM. */
int dt_resize(void *array_ptr, size_t n, size_t size);

/* Grows *array_ptr of *cap elements so that at least `need` fit
 * (dt_grow_capacity, dt_resize) and updates *cap. Returns 0 or DT_ENOMEM. */
int dt_grow(void *array_ptr, size_t *cap, size_t need, size_t size);

/* A growable byte buffer that keeps its text NUL-terminated. Zero-initialise
 * it (`dt_buf b = {0};`); after an allocation failure `failed` is set, every
 * later append is ignored, and the caller reports out of memory once. */
typedef struct dt_buf {
    char *data;      /* NULL until the first append; NUL-terminated after it */
    size_t len;      /* bytes held, not counting the terminator */
    size_t cap;      /* bytes allocated */
    bool failed;
} dt_buf;

/* Ensures room for `more` bytes after len plus the terminator. Returns 0, or
 * DT_ENOMEM (and sets failed). */
int dt_buf_reserve(dt_buf *b, size_t more);

/* Appends n bytes. Returns 0 or DT_ENOMEM. */
int dt_buf_append(dt_buf *b, const void *bytes, size_t n);

/* Appends vprintf-formatted text (callers wrap it in their own variadic
 * emitter). Returns 0 or DT_ENOMEM. */
int dt_buf_vprintf(dt_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Frees the buffer's memory and zeroes it; accepts a zeroed buffer. */
void dt_buf_free(dt_buf *b);

/* DT_HAVE_SIMD_CLONES: the compiler can clone a function per x86-64 level
 * (target_clones; an ifunc picks the clone at load time): GCC on x86-64
 * Linux, not under ThreadSanitizer (it instruments the ifunc resolver, which
 * then runs before its runtime and crashes), not with -DDT_NO_SIMD_CLONES
 * (to test the baseline path on any machine). Under -std=c11 GCC contracts
 * no a * b + c into an FMA, so a clone rounds as the baseline does unless
 * the function itself asks for contraction. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__linux__) && !defined(DT_NO_SIMD_CLONES) && !defined(__SANITIZE_THREAD__)
#define DT_HAVE_SIMD_CLONES 1
#endif

/* Limits of every YAML and JSON input (config, model, best.json, a log
 * record): its size in bytes and how deep its collections nest. Real files
 * are kilobytes and nest 4 deep; the limits keep a hostile or broken file
 * from costing more than a linear read. */
#define DT_INPUT_MAX_BYTES (16 << 20)
#define DT_INPUT_MAX_DEPTH 64

/* Reads the whole input file path (dt_open_input's rules) into out (zeroed
 * by the caller, NUL-terminated, freed with dt_buf_free). Returns 0, the
 * codes of dt_open_input, DT_EINVAL "PATH: the WHAT is N bytes; YAML and
 * JSON inputs are at most DT_INPUT_MAX_BYTES" when it is larger, DT_EIO or
 * DT_ENOMEM. */
int dt_read_input(const char *path, const char *what, dt_buf *out, dt_error *err);

/* The byte offset of the first '[' or '{' of JSON text[0..len) nested
 * deeper than max_depth (strings skipped), or -1 when none is: checked
 * before a parse, so a deep document costs one linear scan. */
long dt_json_too_deep(const char *text, size_t len, int max_depth);

/* FNV-1a: the hash h (start from DT_FNV1A_INIT) continued over n bytes; for
 * short texts that must compare equal across processes and machines (a
 * knob schema, a set of spaces), not for security. */
#define DT_FNV1A_INIT 14695981039346656037ull
uint64_t dt_fnv1a(uint64_t h, const void *bytes, size_t n);

/* The i-th name of a module's table (policies, strategies, backends, ...),
 * NULL past the last: how a table tells others its names without a copy. */
typedef const char *(*dt_name_at_fn)(int i);

/* Writes "a, b, c" (name_at(0), name_at(1), ... up to the first NULL) into
 * buf of len > 0 bytes, truncated to fit; for "... is not one of a, b, c". */
void dt_names_join(dt_name_at_fn name_at, char *buf, size_t len);

/* dt_names_join with sep between the names and last before the last one:
 * "a, b or c" for sep ", " and last " or " (for help texts). */
void dt_names_join_sep(dt_name_at_fn name_at, const char *sep, const char *last, char *buf,
                       size_t len);

#endif
