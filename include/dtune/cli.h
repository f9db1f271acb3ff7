/* cli.h — the dtune subcommands. Each takes the arguments after its own name
 * (argv[0] is the subcommand name) and returns the process exit status:
 * 0 ok, 1 runtime failure, 2 bad input or usage. */
#ifndef DTUNE_CLI_H
#define DTUNE_CLI_H

int dt_cmd_tune(int argc, char **argv);
int dt_cmd_status(int argc, char **argv);
int dt_cmd_report(int argc, char **argv);
int dt_cmd_best(int argc, char **argv);
int dt_cmd_models(int argc, char **argv);
int dt_cmd_import(int argc, char **argv);
int dt_cmd_measure(int argc, char **argv);
int dt_cmd_check(int argc, char **argv);
int dt_cmd_compare(int argc, char **argv);
int dt_cmd_export(int argc, char **argv);
int dt_cmd_db(int argc, char **argv);
int dt_cmd_machine(int argc, char **argv);

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dtune/error.h"

/* The options before a subcommand's positional arguments: -h/--help (usage
 * on stdout, returns 0), `--` (ends the options), and at most one option
 * with a value, spelt short_opt or long_opt (either may be NULL), whose last
 * value goes to *value. Anything else starting with '-' is a usage error
 * (message and usage on stderr, returns 2). Otherwise returns -1 with *first
 * the index of the first positional argument. */
int dt_cli_options(int argc, char **argv, const char *cmd, void (*usage)(FILE *to),
                   const char *short_opt, const char *long_opt, const char **value, int *first);

/* For subcommands taking `[-h] [--] RUN_DIR`: returns 0 (help shown), 2
 * (usage error, message and usage on stderr) or -1 with *path set. */
int dt_cli_one_path(int argc, char **argv, const char *cmd, void (*usage)(FILE *to),
                    const char **path);

/* The tuning database a subcommand's options name: db_path (--db PATH) when
 * given, else db.path of config_path (-c CONFIG) when given, else the
 * default (dt_db_resolve_path). Returns 0 with the path in buf, or DT_EINVAL
 * (the database is off, a path too long), or the config's error. */
int dt_cli_db_path(const char *db_path, const char *config_path, char *buf, size_t len,
                   dt_error *err);

/* Prints on stdout the fingerprint of the machine backend measures on (seed:
 * the run's, which only the replay surface depends on; CUDA: the default
 * measure.cuda_device): the first line of
 * `dtune machine`, and all that `dtune db machine` prints. Returns 0, or
 * dt_machine_fingerprint's error code with err set. */
int dt_cli_print_machine(const char *backend, uint64_t seed, dt_error *err);

#endif
