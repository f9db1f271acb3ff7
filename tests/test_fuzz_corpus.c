/* test_fuzz_corpus.c — each fuzz harness (fuzz/fuzz_NAME.c) over every file
 * of its corpus, fuzz/corpus/NAME, once: the part of the fuzzing CI runs,
 * built with the ordinary compiler (`make fuzz` builds the fuzzers with
 * clang). The corpora hold the shipped files and inputs of past findings,
 * so a finding fixed once stays fixed; under `make SAN=1 test` the replay
 * runs under AddressSanitizer and UndefinedBehaviorSanitizer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "support/run_cmd.h"

/* Every file of fuzz/corpus/name through harness; at least `least` files. */
static void replay(const char *name, int (*harness)(const uint8_t *, size_t), size_t least)
{
    char pattern[128];
    glob_t files;
    snprintf(pattern, sizeof pattern, "fuzz/corpus/%s/*", name);
    assert_int_equal(glob(pattern, 0, NULL, &files), 0);
    if (files.gl_pathc < least)
        fail_msg("%s: %zu inputs, expected at least %zu", pattern, files.gl_pathc, least);
    for (size_t i = 0; i < files.gl_pathc; i++) {
        FILE *f = fopen(files.gl_pathv[i], "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        rewind(f);
        uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
        assert_non_null(data);
        assert_int_equal(fread(data, 1, (size_t)size, f), (size_t)size);
        fclose(f);
        if (harness(data, (size_t)size) != 0)
            fail_msg("%s: the harness returned non-zero", files.gl_pathv[i]);
        free(data);
    }
    globfree(&files);
}

static void test_config_corpus(void **state)
{
    (void)state;
    replay("config", dt_fuzz_config, 5);
}

static void test_model_corpus(void **state)
{
    (void)state;
    replay("model", dt_fuzz_model, 5);
}

static void test_log_corpus(void **state)
{
    (void)state;
    replay("log", dt_fuzz_log, 3);
}

static void test_http_corpus(void **state)
{
    (void)state;
    replay("http", dt_fuzz_http, 5);
}

static int remove_scratch(void **state)
{
    (void)state;
    static const char *const names[] = { "config.yaml", "model.yaml", "tuning.jsonl" };
    char path[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "/tmp/dtune-fuzz-%d-%s", (int)getpid(), names[i]);
        unlink(path);
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_corpus),
        cmocka_unit_test(test_model_corpus),
        cmocka_unit_test(test_log_corpus),
        cmocka_unit_test(test_http_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, remove_scratch);
}
