/* cli_args.c — argument parsing shared by the subcommands. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "dtune/cli.h"
#include "dtune/config.h"

int dt_cli_options(int argc, char **argv, const char *cmd, void (*usage)(FILE *to),
                   const char *short_opt, const char *long_opt, const char **value, int *first)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        bool named = (short_opt && strcmp(argv[i], short_opt) == 0) ||
                     (long_opt && strcmp(argv[i], long_opt) == 0);
        if (named && i + 1 < argc) {
            *value = argv[++i];
            continue;
        }
        fprintf(stderr, "dtune %s: %s '%s'\n", cmd, named ? "missing value after" : "unknown option",
                argv[i]);
        usage(stderr);
        return 2;
    }
    *first = i;
    return -1;
}

int dt_cli_one_path(int argc, char **argv, const char *cmd, void (*usage)(FILE *to),
                    const char **path)
{
    int i, rc = dt_cli_options(argc, argv, cmd, usage, NULL, NULL, NULL, &i);
    *path = NULL;
    if (rc != -1)
        return rc;
    if (argc - i != 1) {
        fprintf(stderr, "dtune %s: %s\n", cmd, argc - i < 1 ? "RUN_DIR is missing" : "expects one RUN_DIR");
        usage(stderr);
        return 2;
    }
    *path = argv[i];
    return -1;
}

int dt_cli_db_path(const char *db_path, const char *config_path, char *buf, size_t len,
                   dt_error *err)
{
    dt_config cfg;
    dt_config_defaults(&cfg);
    if (config_path) {
        int rc = dt_config_load(config_path, &cfg, false, err);
        if (rc)
            return rc;
    }
    if (db_path)
        snprintf(cfg.db.path, sizeof cfg.db.path, "%s", db_path);
    int rc = dt_db_resolve_path(&cfg.db, buf, len, err);
    if (rc == 0 && !buf[0])
        return dt_error_set(err, DT_EINVAL, "the tuning database is off (db.path: off)");
    return rc;
}
