/* test_util.c — the shared helpers: the monotonic clock, mkdir -p (nested,
 * existing, blocked by a file), write-all through a pipe larger than its
 * buffer, array growth, the growable text buffer and replacing a file
 * whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtune/util.h"
#include "support/run_cmd.h"

static void test_clock_advances(void **state)
{
    double t0 = dt_now_seconds();
    usleep(20000);
    double dt = dt_now_seconds() - t0;
    assert_true(dt >= 0.019);
    assert_true(dt < 5.0);
}

static void test_mkdir_p(void **state)
{
    char root[200], file[300], deep[512];
    dt_test_tmpdir(root, sizeof root);
    snprintf(deep, sizeof deep, "%s/a/bb/ccc/", root);
    dt_error err = { 0 };
    assert_int_equal(dt_mkdir_p(deep, &err), 0);
    struct stat st;
    assert_int_equal(stat(deep, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(dt_mkdir_p(deep, &err), 0);   /* existing is fine */
    assert_int_equal(dt_mkdir_p("", &err), DT_EINVAL);

    snprintf(file, sizeof file, "%s/a/plain", root);
    assert_int_equal(dt_test_write_file(file, "x"), 0);
    snprintf(deep, sizeof deep, "%s/sub", file);
    assert_int_equal(dt_mkdir_p(deep, &err), DT_EIO);
    assert_non_null(strstr(err.msg, "a/plain/sub: cannot create directory"));
    assert_int_equal(dt_test_remove_tree(root), 0);
}

typedef struct drain {
    int fd;
    size_t got;
    unsigned sum;
} drain;

static void *drain_pipe(void *arg)
{
    drain *d = arg;
    unsigned char buf[4096];
    ssize_t n;
    while ((n = read(d->fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++, d->got++)
            d->sum += buf[i] * (unsigned)(d->got % 7 + 1);
    return NULL;
}

static void test_write_all_pipe(void **state)
{
    /* A pipe holds 64 KiB: a larger write comes back short or blocks, and
     * every byte must still arrive in order. */
    enum { LEN = 1 << 20 };
    unsigned char *data = malloc(LEN);
    assert_non_null(data);
    unsigned want = 0;
    for (size_t i = 0; i < LEN; i++) {
        data[i] = (unsigned char)(i * 2654435761u >> 13);
        want += data[i] * (unsigned)(i % 7 + 1);
    }
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    drain d = { .fd = fds[0] };
    pthread_t reader;
    assert_int_equal(pthread_create(&reader, NULL, drain_pipe, &d), 0);
    assert_int_equal(dt_write_all(fds[1], data, LEN), 0);
    close(fds[1]);
    pthread_join(reader, NULL);
    close(fds[0]);
    assert_int_equal(d.got, LEN);
    assert_int_equal(d.sum, want);

    assert_int_equal(dt_write_all(-1, data, 3), EBADF);
    free(data);
}

static void test_grow(void **state)
{
    assert_int_equal(dt_grow_capacity(0, 1), 16);
    assert_int_equal(dt_grow_capacity(16, 16), 16);
    assert_int_equal(dt_grow_capacity(16, 17), 32);
    assert_int_equal(dt_grow_capacity(5, 100), 128);
    assert_int_equal(dt_grow_capacity(0, SIZE_MAX), 0);

    double *values = NULL;
    size_t cap = 0;
    for (size_t n = 0; n < 1000; n++) {
        assert_int_equal(dt_grow(&values, &cap, n + 1, sizeof *values), 0);
        assert_true(cap >= n + 1);
        values[n] = 0.37 * (double)n;
    }
    assert_int_equal(cap, 1024);
    for (size_t n = 0; n < 1000; n++)
        assert_true(values[n] == 0.37 * (double)n);
    /* An impossible size fails and leaves the array as it was. */
    double *before = values;
    assert_int_equal(dt_resize(&values, SIZE_MAX / 4, sizeof *values), DT_ENOMEM);
    assert_ptr_equal(values, before);
    assert_int_equal(dt_grow(&values, &cap, SIZE_MAX / 2, sizeof *values), DT_ENOMEM);
    assert_int_equal(cap, 1024);
    free(values);
}

static int buf_printf(dt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int buf_printf(dt_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = dt_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

static void test_buf(void **state)
{
    dt_buf b = { 0 };
    assert_int_equal(dt_buf_append(&b, "ab", 2), 0);
    assert_string_equal(b.data, "ab");
    for (int i = 0; i < 3000; i++)
        assert_int_equal(buf_printf(&b, "<%d:%s>", i, i % 2 ? "odd" : "even"), 0);
    assert_int_equal(b.len, strlen(b.data));
    assert_true(b.len < b.cap);
    assert_non_null(strstr(b.data, "ab<0:even><1:odd>"));
    assert_non_null(strstr(b.data, "<2999:odd>"));
    assert_int_equal(strncmp(b.data + b.len - 10, "<2999:odd>", 10), 0);
    char big[5000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    size_t before = b.len;
    assert_int_equal(buf_printf(&b, "%s|", big), 0);
    assert_int_equal(b.len, before + sizeof big);
    assert_int_equal(b.data[b.len - 1], '|');
    assert_false(b.failed);
    dt_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);

    dt_buf bad = { .failed = true };
    assert_int_equal(buf_printf(&bad, "%d", 7), DT_ENOMEM);
    assert_null(bad.data);
}

/* dt_write_file_replace puts the new bytes in place of the old file and
 * leaves no temporary file; where it cannot write, the old file stays. */
static void test_write_file_replace(void **state)
{
    char dir[256], path[300], blocked[300];
    dt_test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.yaml", dir);
    dt_error err;
    assert_int_equal(dt_write_file_replace(path, "old\n", 4, &err), 0);
    assert_int_equal(dt_write_file_replace(path, "new text\n", 9, &err), 0);
    char *text = dt_test_slurp(path);
    assert_string_equal(text, "new text\n");
    free(text);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    snprintf(blocked, sizeof blocked, "%s/no_such_dir/model.yaml", dir);
    assert_int_equal(dt_write_file_replace(blocked, "x", 1, &err), DT_EIO);
    assert_non_null(strstr(err.msg, "no_such_dir/model.yaml"));
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test $(ls %s | wc -l) -eq 1", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(dt_test_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock_advances),
        cmocka_unit_test(test_mkdir_p),
        cmocka_unit_test(test_write_all_pipe),
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_buf),
        cmocka_unit_test(test_write_file_replace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
