/* cpu_cache.h — housekeeping of the CPU backend's artifact cache
 * (RUN_DIR/cache: KEY.c and KEY.so per compiled candidate, and
 * KEY.tmpPID.SERIAL.* while a compile is in flight). Private to cpu_backend.c. */
#ifndef DTUNE_CPU_CACHE_H
#define DTUNE_CPU_CACHE_H

#include <stdint.h>

/* Entries used within this many seconds are never pruned: they may belong
 * to the batch being built and timed. */
#define DT_CPU_CACHE_KEEP_RECENT_S 120

/* Removes the temporary files of compiles whose process is gone (a killed
 * run's). Returns how many files it removed. */
int dt_cpu_cache_clean_temps(const char *dir);

/* Deletes least-recently-used entries (KEY.so with its KEY.c, by the .so's
 * mtime, which a cache hit refreshes) until the entries take at most
 * limit_bytes, sparing those used in the last DT_CPU_CACHE_KEEP_RECENT_S.
 * limit_bytes 0 = no limit. Returns the bytes freed. */
uint64_t dt_cpu_cache_prune(const char *dir, uint64_t limit_bytes);

/* Marks the entry of sofile as used now (for the LRU order). */
void dt_cpu_cache_touch(const char *sofile);

#endif
