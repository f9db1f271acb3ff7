/* cpu_cache.c — temporary-file cleanup and LRU pruning of the CPU artifact
 * cache (see cpu_cache.h).
 *
 * A compile writes KEY.tmpPID.SERIAL.{c,so,err} and renames the results to
 * KEY.c and KEY.so; a process killed mid-compile leaves its temporaries, which
 * the next run removes when their PID is gone. An entry's last use is its
 * .so's mtime: set by the compile, refreshed on every cache hit (the file
 * system's atime cannot be trusted under relatime or noatime). Pruning lists
 * the entries, sorts them oldest first and deletes until the total fits.
 */
#include "cpu_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dtune/util.h"

#define KEY_LEN 32

/* The PID in NAME = KEY.tmpPID.SERIAL..., or -1 when name is no temporary. */
static long temp_owner(const char *name)
{
    if (strlen(name) < KEY_LEN + 5 || strncmp(name + KEY_LEN, ".tmp", 4) != 0)
        return -1;
    char *end;
    long pid = strtol(name + KEY_LEN + 4, &end, 10);
    return end != name + KEY_LEN + 4 && *end == '.' && pid > 0 ? pid : -1;
}

int dt_cpu_cache_clean_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = temp_owner(e->d_name);
        if (pid < 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        removed += unlinkat(dirfd(d), e->d_name, 0) == 0;
    }
    closedir(d);
    return removed;
}

typedef struct entry {
    char key[KEY_LEN + 1];
    time_t used;
    uint64_t bytes;            /* .so and .c together */
} entry;

static int older_first(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return x->used < y->used ? -1 : x->used > y->used;
}

/* The cache's entries (KEY.so files with their KEY.c), in *out. */
static size_t list_entries(DIR *d, entry **out)
{
    entry *list = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        struct stat so, c;
        if (len != KEY_LEN + 3 || strcmp(e->d_name + KEY_LEN, ".so") != 0 ||
            fstatat(dirfd(d), e->d_name, &so, 0) != 0 || dt_grow(&list, &cap, n + 1, sizeof *list) != 0)
            continue;
        entry *en = &list[n++];
        memcpy(en->key, e->d_name, KEY_LEN);
        en->key[KEY_LEN] = '\0';
        char cname[KEY_LEN + 3];
        snprintf(cname, sizeof cname, "%s.c", en->key);
        en->used = so.st_mtime;
        en->bytes = (uint64_t)so.st_size + (fstatat(dirfd(d), cname, &c, 0) == 0 ? (uint64_t)c.st_size : 0);
    }
    *out = list;
    return n;
}

uint64_t dt_cpu_cache_prune(const char *dir, uint64_t limit_bytes)
{
    if (limit_bytes == 0)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    entry *list;
    size_t n = list_entries(d, &list);
    uint64_t total = 0, freed = 0;
    for (size_t i = 0; i < n; i++)
        total += list[i].bytes;
    if (n > 1)
        qsort(list, n, sizeof *list, older_first);
    time_t spare_after = time(NULL) - DT_CPU_CACHE_KEEP_RECENT_S;
    for (size_t i = 0; i < n && total > limit_bytes && list[i].used < spare_after; i++) {
        char name[KEY_LEN + 4];
        snprintf(name, sizeof name, "%s.so", list[i].key);
        unlinkat(dirfd(d), name, 0);
        snprintf(name, sizeof name, "%s.c", list[i].key);
        unlinkat(dirfd(d), name, 0);
        total -= list[i].bytes;
        freed += list[i].bytes;
    }
    free(list);
    closedir(d);
    return freed;
}

void dt_cpu_cache_touch(const char *sofile)
{
    utimensat(AT_FDCWD, sofile, NULL, 0);
}
