/* fuzz.h — dtune's fuzz harnesses: one function per reader of untrusted
 * input, each taking the raw bytes of one input.
 *
 * `make fuzz` builds each with clang's libFuzzer under AddressSanitizer and
 * UndefinedBehaviorSanitizer (DT_LIBFUZZER set: DT_FUZZ_TARGET defines
 * LLVMFuzzerTestOneInput); tests/test_fuzz_corpus.c links all of them with
 * the ordinary compiler and replays every file of fuzz/corpus/NAME through
 * its harness once, so CI needs no clang. A harness returns 0; a finding is
 * a crash, a sanitizer report or a hang.
 */
#ifndef DTUNE_FUZZ_H
#define DTUNE_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int dt_fuzz_config(const uint8_t *data, size_t size);   /* config.yaml reader */
int dt_fuzz_model(const uint8_t *data, size_t size);    /* model reader and its spaces */
int dt_fuzz_log(const uint8_t *data, size_t size);      /* tuning.jsonl reader */
int dt_fuzz_http(const uint8_t *data, size_t size);     /* one request to the status server */

/* Writes data to this process's scratch file for `name` (in /tmp, named by
 * pid) and puts its path in path (len bytes). Returns 0 or -1. */
int dt_fuzz_scratch(const char *name, const uint8_t *data, size_t size, char *path, size_t len);

#ifdef DT_LIBFUZZER
#define DT_FUZZ_TARGET(harness)                                                   \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                 \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                  \
    {                                                                             \
        return harness(data, size);                                               \
    }
#else
#define DT_FUZZ_TARGET(harness)
#endif

#endif
