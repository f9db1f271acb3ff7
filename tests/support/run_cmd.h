/* run_cmd.h — test support: run the real dtune binary and capture its output. */
#ifndef DTUNE_TEST_RUN_CMD_H
#define DTUNE_TEST_RUN_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Path of the dtune binary under test ($DTUNE_BIN, else bin/dtune). */
const char *dt_test_dtune(void);

/* Runs argv (argv[0] is replaced by the dtune binary), waits, returns its exit
 * status (128 + signal if killed). stdout and stderr together go into out
 * (NUL-terminated, truncated to len). */
int dt_test_run(char *const argv[], char *out, size_t len);

/* Runs cmd under /bin/sh with stdout and stderr together into out
 * (NUL-terminated, truncated to len); returns its exit status (128 when
 * it did not exit). */
int dt_test_shell(const char *cmd, char *out, size_t len);

/* Starts argv in the background with stdout+stderr to log_path; returns the pid. */
pid_t dt_test_spawn(char *const argv[], const char *log_path);

/* Waits for pid; returns its exit status as dt_test_run does. */
int dt_test_wait(pid_t pid);

/* Makes a fresh directory under /tmp; writes its path into buf. */
void dt_test_tmpdir(char *buf, size_t len);

/* Runs an in-process subcommand (e.g. dt_cmd_report) with stdout and stderr
 * captured into out (NUL-terminated, truncated to len); returns its status. */
int dt_test_capture(int (*cmd)(int argc, char **argv), int argc, char **argv, char *out,
                    size_t len);

/* Removes path and everything below it; returns 0 or -1. */
int dt_test_remove_tree(const char *path);

/* Reads a whole file into a malloc'd string (NULL if it cannot). */
char *dt_test_slurp(const char *path);

/* Writes the formatted text to path (replacing it); returns 0 or -1. */
int dt_test_write_file(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Counts lines of path containing needle. */
int dt_test_count_lines(const char *path, const char *needle);

/* Debian's python, which the set-up gives python3-torch and python3-onnx. */
#define DT_TEST_PYTHON "/usr/bin/python3"

/* Whether DT_TEST_PYTHON can import torch and torchvision. */
bool dt_test_have_torch(void);

#endif
