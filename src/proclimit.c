/* proclimit.c — resource limits of the runner and the compilers (see
 * proclimit.h). */
#include "dtune/proclimit.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

dt_proclimit dt_proclimit_from_settings(int memory_mb, double cpu_seconds, int open_files)
{
    dt_proclimit l = { (uint64_t)(memory_mb > 0 ? memory_mb : 0) << 20,
                       cpu_seconds > 0 ? cpu_seconds : 0, open_files > 0 ? open_files : 0 };
    if (memory_mb <= 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0)
            l.memory_bytes = (uint64_t)(DT_PROCESS_MEMORY_SHARE * (double)pages * (double)page);
    }
    return l;
}

static int set_both(int resource, rlim_t value)
{
    struct rlimit r = { value, value };
    return setrlimit(resource, &r) == 0 ? 0 : errno;
}

int dt_proclimit_apply(const dt_proclimit *limits)
{
    int rc = set_both(RLIMIT_CORE, 0);
    if (rc == 0 && limits->open_files > 0)
        rc = set_both(RLIMIT_NOFILE, (rlim_t)limits->open_files);
    if (rc == 0 && limits->memory_bytes > 0 && !SANITIZED)
        rc = set_both(RLIMIT_AS, (rlim_t)limits->memory_bytes);
    return rc;
}

int dt_proclimit_cpu_budget(const dt_proclimit *limits)
{
    if (limits->cpu_seconds <= 0)
        return 0;
    struct rusage used;
    struct rlimit r;
    if (getrusage(RUSAGE_SELF, &used) != 0 || getrlimit(RLIMIT_CPU, &r) != 0)
        return errno;
    double spent = (double)used.ru_utime.tv_sec + (double)used.ru_stime.tv_sec +
                   1e-6 * (double)(used.ru_utime.tv_usec + used.ru_stime.tv_usec);
    rlim_t want = (rlim_t)ceil(spent + limits->cpu_seconds);
    r.rlim_cur = r.rlim_max != RLIM_INFINITY && want > r.rlim_max ? r.rlim_max : want;
    return setrlimit(RLIMIT_CPU, &r) == 0 ? 0 : errno;
}

int dt_proclimit_shell_argv(const dt_proclimit *limits, char **argv, int max, char *text,
                            size_t len)
{
    static const char script[] = "ulimit -c 0 && ulimit -v \"$1\" && ulimit -t \"$2\" && "
                                 "ulimit -n \"$3\" && shift 3 && exec \"$@\"";
    char kib[32] = "unlimited", cpu[32] = "unlimited", files[32] = "unlimited";
    if (limits->memory_bytes)
        snprintf(kib, sizeof kib, "%llu", (unsigned long long)(limits->memory_bytes >> 10));
    if (limits->cpu_seconds > 0)
        snprintf(cpu, sizeof cpu, "%.0f", ceil(limits->cpu_seconds));
    if (limits->open_files > 0)
        snprintf(files, sizeof files, "%d", limits->open_files);
    int n = snprintf(text, len, "%s%c%s%c%s", kib, '\0', cpu, '\0', files);
    if (max < 7 || n < 0 || (size_t)n >= len)
        return -1;
    argv[0] = (char *)"/bin/sh";
    argv[1] = (char *)"-c";
    argv[2] = (char *)script;
    argv[3] = (char *)"sh";
    argv[4] = text;
    argv[5] = text + strlen(kib) + 1;
    argv[6] = argv[5] + strlen(cpu) + 1;
    return 7;
}

void dt_proclimit_explain(const dt_proclimit *limits, int status, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGXCPU)
        return;
    if (limits->cpu_seconds > 0)
        snprintf(buf, len, "CPU time limit of %.0f s reached (measure.limit_cpu_seconds)",
                 ceil(limits->cpu_seconds));
    else
        snprintf(buf, len, "CPU time limit reached (the limit dtune was started under, ulimit -t)");
}

void dt_proclimit_memory_note(const dt_proclimit *limits, char *buf, size_t len)
{
    buf[0] = '\0';
    if (limits->memory_bytes && !SANITIZED)
        snprintf(buf, len, " (address space limited to %llu MiB, measure.limit_memory_mb)",
                 (unsigned long long)(limits->memory_bytes >> 20));
}
