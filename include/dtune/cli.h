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
int dt_cmd_measure(int argc, char **argv);
int dt_cmd_check(int argc, char **argv);
int dt_cmd_compare(int argc, char **argv);

#include <stdio.h>

/* For subcommands taking `[-h] [--] RUN_DIR`: returns 0 (help shown), 2
 * (usage error, message and usage on stderr) or -1 with *path set. */
int dt_cli_one_path(int argc, char **argv, const char *cmd, void (*usage)(FILE *to),
                    const char **path);

#endif
