/* run_cmd.c — test support for tests that run the real binary. */
#include "run_cmd.h"

#include <fcntl.h>
#include <stdarg.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dtune/db.h"
#include "dtune/util.h"

const char *dt_test_dtune(void)
{
    const char *bin = getenv("DTUNE_BIN");
    return bin && *bin ? bin : "bin/dtune";
}

static void exec_dtune(char *const argv[])
{
    int n = 0;
    while (argv[n])
        n++;
    char **args = calloc((size_t)n + 1, sizeof *args);
    if (!args)
        _exit(127);
    args[0] = (char *)dt_test_dtune();
    setenv(DT_DB_ENV, DT_DB_OFF, 0);   /* never the user's database, also outside make test */
    for (int i = 1; i < n; i++)
        args[i] = argv[i];
    execv(args[0], args);
    _exit(127);
}

int dt_test_wait(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int dt_test_run(char *const argv[], char *out, size_t len)
{
    char path[] = "/tmp/dtune_out_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        exec_dtune(argv);
    }
    close(fd);
    int status = dt_test_wait(pid);
    char *text = dt_test_slurp(path);
    snprintf(out, len, "%s", text ? text : "");
    free(text);
    unlink(path);
    return status;
}

pid_t dt_test_spawn(char *const argv[], const char *log_path)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        setpgid(0, 0);
        exec_dtune(argv);
    }
    return pid;
}

void dt_test_tmpdir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/dtune_test_XXXXXX");
    if (!mkdtemp(buf))
        buf[0] = '\0';
}

int dt_test_write_file(const char *path, const char *fmt, ...)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(f, fmt, ap);
    va_end(ap);
    return fclose(f) == 0 && n >= 0 ? 0 : -1;
}

char *dt_test_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    dt_buf buf = { 0 };
    size_t got = 1;
    while (got > 0 && dt_buf_reserve(&buf, 4096) == 0) {
        got = fread(buf.data + buf.len, 1, buf.cap - buf.len - 1, f);
        buf.len += got;
        buf.data[buf.len] = '\0';
    }
    fclose(f);
    if (buf.failed)
        dt_buf_free(&buf);
    return buf.data;
}

int dt_test_count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[8192];
    int count = 0;
    while (fgets(line, sizeof line, f))
        count += strstr(line, needle) != NULL;
    fclose(f);
    return count;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int dt_test_remove_tree(const char *path)
{
    return nftw(path, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int dt_test_capture(int (*cmd)(int argc, char **argv), int argc, char **argv, char *out,
                    size_t len)
{
    char capture[] = "/tmp/dtune_test_capture_XXXXXX";
    int fd = mkstemp(capture);
    if (fd < 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    dup2(fd, 1);
    dup2(fd, 2);
    int status = cmd(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    ssize_t n = pread(fd, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(capture);
    return status;
}

int dt_test_shell(const char *cmd, char *out, size_t len)
{
    size_t need = strlen(cmd) + 16;
    char *full = malloc(need);
    if (!full)
        return -1;
    snprintf(full, need, "(%s) 2>&1", cmd);
    FILE *p = popen(full, "r");
    free(full);
    if (!p)
        return -1;
    size_t n = len > 0 ? fread(out, 1, len - 1, p) : 0;
    if (len > 0)
        out[n] = '\0';
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0)
        ;   /* the rest, so the command never blocks on a full pipe */
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

bool dt_test_have_torch(void)
{
    return system(DT_TEST_PYTHON " -c 'import torch, torchvision' >/dev/null 2>&1") == 0;
}
