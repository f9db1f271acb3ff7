/* proclimit.h — the resource limits every process that runs a candidate
 * lives under: the CPU measurement process and each compiler.
 *
 * A generated kernel or its compilation may allocate without end, spin, or
 * leak descriptors; under these limits it fails alone, as a failed candidate
 * with a reason, and never takes the machine (or the run) down. The limits
 * are setrlimit's: address space (RLIMIT_AS), CPU time (RLIMIT_CPU, counted
 * per candidate) and open files (RLIMIT_NOFILE); a process over its CPU time
 * gets SIGXCPU, an allocation past its address space fails.
 *
 * The runner applies them to itself when it starts (it is this program), and
 * raises its CPU limit by the budget before each candidate; the CUDA
 * measurement process takes CPU time and open files only (the driver
 * reserves far more address space than it uses). A compiler is
 * started through /bin/sh's ulimit, so the limits hold from its first
 * instruction and pass to cc1, as and ld.
 */
#ifndef DTUNE_PROCLIMIT_H
#define DTUNE_PROCLIMIT_H

#include <stddef.h>
#include <stdint.h>

/* The address space a runner or compiler may take when
 * measure.limit_memory_mb is 0: this share of physical memory (a task's
 * tensors may take DT_CPU_MEMORY_SHARE of it; the rest is code, stacks,
 * allocator arenas). */
#define DT_PROCESS_MEMORY_SHARE 0.75

typedef struct dt_proclimit {
    uint64_t memory_bytes;     /* address space; 0 = none */
    double cpu_seconds;        /* CPU time per candidate; 0 = none */
    int open_files;            /* descriptors; 0 = none */
} dt_proclimit;

/* The limits from the measure.limit_* settings (megabytes, seconds,
 * descriptors; 0 each = the default above for memory, none for the others). */
dt_proclimit dt_proclimit_from_settings(int memory_mb, double cpu_seconds, int open_files);

/* Applies memory and open files to this process, and no core files (a
 * crashing candidate must not leave one in the run's folder). Under
 * AddressSanitizer or ThreadSanitizer the address space is left alone:
 * their shadow memory needs terabytes of it. Returns 0 or an errno. */
int dt_proclimit_apply(const dt_proclimit *limits);

/* Sets this process's CPU soft limit to the CPU time used so far plus
 * limits->cpu_seconds (no-op when 0): called before each candidate, so the
 * budget is per candidate in a long-lived process. Returns 0 or an errno. */
int dt_proclimit_cpu_budget(const dt_proclimit *limits);

/* The argv prefix that runs a program under limits: /bin/sh -c 'ulimit ...;
 * exec "$@"' sh; the program and its arguments follow. Writes at most max
 * entries (the numbers into text, of len bytes) and returns how many, or -1
 * when they do not fit. */
int dt_proclimit_shell_argv(const dt_proclimit *limits, char **argv, int max, char *text,
                            size_t len);

/* Why a process under limits ended with wait status `status`, when a limit
 * explains it (SIGXCPU: "CPU time limit of N s reached
 * (measure.limit_cpu_seconds)", or the inherited limit's when none is set);
 * "" otherwise. */
void dt_proclimit_explain(const dt_proclimit *limits, int status, char *buf, size_t len);

/* Text naming the memory limit for an allocation failure: " (address space
 * limited to N MiB, measure.limit_memory_mb)", or "" without one. */
void dt_proclimit_memory_note(const dt_proclimit *limits, char *buf, size_t len);

#endif
