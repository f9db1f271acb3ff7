/* util.c — the small helpers every part uses: the monotonic clock, mkdir -p,
 * write-all, array growth and a growable text buffer (see util.h). */
#include "dtune/util.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DT_DIR_MODE 0755
#define MIN_CAPACITY 16

double dt_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int make_dir(const char *path, dt_error *err)
{
    if (mkdir(path, DT_DIR_MODE) != 0 && errno != EEXIST)
        return dt_error_set(err, DT_EIO, "%s: cannot create directory: %s", path, strerror(errno));
    return 0;
}

int dt_mkdir_p(const char *path, dt_error *err)
{
    size_t n = strlen(path);
    if (n == 0)
        return dt_error_set(err, DT_EINVAL, "cannot create a directory with an empty name");
    char *buf = malloc(n + 1);
    if (!buf)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    memcpy(buf, path, n + 1);
    int rc = 0;
    for (char *p = buf + 1; *p && rc == 0; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        rc = make_dir(buf, err);
        *p = '/';
    }
    if (rc == 0)
        rc = make_dir(buf, err);
    free(buf);
    return rc;
}

int dt_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

size_t dt_grow_capacity(size_t cap, size_t need)
{
    if (need <= cap)
        return cap;
    size_t grown = cap > MIN_CAPACITY ? cap : MIN_CAPACITY;
    while (grown < need) {
        if (grown > SIZE_MAX / 2)
            return 0;
        grown *= 2;
    }
    return grown;
}

int dt_resize(void *array_ptr, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return DT_ENOMEM;
    /* The caller's pointer has its own element type; copy its bytes rather
     * than write it through a void ** of another type. */
    void *old;
    memcpy(&old, array_ptr, sizeof old);
    void *p = realloc(old, n * size);
    if (!p && n * size > 0)
        return DT_ENOMEM;
    memcpy(array_ptr, &p, sizeof p);
    return 0;
}

int dt_grow(void *array_ptr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t grown = dt_grow_capacity(*cap, need);
    if (grown == 0 || dt_resize(array_ptr, grown, size) != 0)
        return DT_ENOMEM;
    *cap = grown;
    return 0;
}

int dt_buf_reserve(dt_buf *b, size_t more)
{
    if (b->failed)
        return DT_ENOMEM;
    if (more > SIZE_MAX - b->len - 1 || dt_grow(&b->data, &b->cap, b->len + more + 1, 1) != 0) {
        b->failed = true;
        return DT_ENOMEM;
    }
    return 0;
}

int dt_buf_append(dt_buf *b, const void *bytes, size_t n)
{
    if (dt_buf_reserve(b, n) != 0)
        return DT_ENOMEM;
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int dt_buf_vprintf(dt_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = b->failed ? -1 : vsnprintf(b->data ? b->data + b->len : NULL,
                                       b->data ? b->cap - b->len : 0, fmt, ap);
    if (n >= 0 && b->data && b->len + (size_t)n < b->cap) {
        b->len += (size_t)n;
    } else if (n < 0 || dt_buf_reserve(b, (size_t)n) != 0) {
        b->failed = true;
    } else {
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
    return b->failed ? DT_ENOMEM : 0;
}

void dt_buf_free(dt_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* What a file that is not regular is, for messages. */
static const char *file_kind(mode_t mode)
{
    return S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) || S_ISBLK(mode) ? "a device"
         : S_ISSOCK(mode) ? "a socket" : S_ISDIR(mode) ? "a folder" : "not a plain file";
}

FILE *dt_open_input(const char *path, const char *what, dt_error *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        dt_error_set(err, errno == ENOENT || errno == ENOTDIR ? DT_ENOTFOUND : DT_EIO,
                     "%s: cannot open %s: %s", path, what, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        dt_error_set(err, DT_EIO, "%s: cannot read the %s: %s", path, what, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        dt_error_set(err, DT_EINVAL, "%s: the %s is %s, not a regular file", path, what,
                     file_kind(st.st_mode));
        close(fd);
        return NULL;
    }
    int flags = fcntl(fd, F_GETFL);
    FILE *f = flags >= 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        dt_error_set(err, DT_EIO, "%s: cannot read the %s: %s", path, what, strerror(errno));
        close(fd);
    }
    return f;
}

int dt_write_file_replace(const char *path, const void *bytes, size_t len, dt_error *err)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= sizeof tmp)
        return dt_error_set(err, DT_EIO, "%s: path too long", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return dt_error_set(err, DT_EIO, "%s: cannot create a temporary file beside it: %s", path,
                            strerror(errno));
    int e = fchmod(fd, 0644) != 0 ? errno : dt_write_all(fd, bytes, len);   /* mkstemp gives 0600 */
    if (e == 0 && fsync(fd) != 0)
        e = errno;
    if (close(fd) != 0 && e == 0)
        e = errno;
    if (e == 0 && rename(tmp, path) != 0)
        e = errno;
    if (e != 0) {
        unlink(tmp);
        return dt_error_set(err, DT_EIO, "%s: %s", path, strerror(e));
    }
    return 0;
}

int dt_read_input(const char *path, const char *what, dt_buf *out, dt_error *err)
{
    FILE *f = dt_open_input(path, what, err);
    if (!f)
        return err ? err->code : DT_EIO;
    char chunk[65536];
    size_t n;
    int rc = 0;
    while (rc == 0 && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (out->len + n > DT_INPUT_MAX_BYTES)
            rc = dt_error_set(err, DT_EINVAL, "%s: the %s is over %d bytes; YAML and JSON inputs are "
                              "at most %d MiB", path, what, DT_INPUT_MAX_BYTES, DT_INPUT_MAX_BYTES >> 20);
        else if (dt_buf_append(out, chunk, n) != 0)
            rc = dt_error_set(err, DT_ENOMEM, "%s: out of memory", path);
    }
    if (rc == 0 && ferror(f))
        rc = dt_error_set(err, DT_EIO, "%s: cannot read the %s: %s", path, what, strerror(errno));
    if (rc == 0 && dt_buf_reserve(out, 0) != 0)
        rc = dt_error_set(err, DT_ENOMEM, "%s: out of memory", path);
    else if (rc == 0)
        out->data[out->len] = '\0';     /* an empty file too */
    fclose(f);
    if (rc)
        dt_buf_free(out);
    return rc;
}

long dt_json_too_deep(const char *text, size_t len, int max_depth)
{
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth)
                return (long)i;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return -1;
}

void dt_names_join(dt_name_at_fn name_at, char *buf, size_t len)
{
    dt_names_join_sep(name_at, ", ", ", ", buf, len);
}

void dt_names_join_sep(dt_name_at_fn name_at, const char *sep, const char *last, char *buf,
                       size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; name_at(i) && used < len; i++) {
        const char *before = i == 0 ? "" : name_at(i + 1) ? sep : last;
        int n = snprintf(buf + used, len - used, "%s%s", before, name_at(i));
        used += n > 0 ? (size_t)n : 0;
    }
}

uint64_t dt_fnv1a(uint64_t h, const void *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= ((const unsigned char *)bytes)[i];
        h *= 1099511628211ull;
    }
    return h;
}
