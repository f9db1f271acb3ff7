/* cli_args.c — argument parsing shared by subcommands that take one path. */
#include <stdio.h>
#include <string.h>

#include "dtune/cli.h"

int dt_cli_one_path(int argc, char **argv, const char *cmd, void (*usage)(FILE *to),
                    const char **path)
{
    int i = 1;
    *path = NULL;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        fprintf(stderr, "dtune %s: unknown option '%s'\n", cmd, argv[i]);
        usage(stderr);
        return 2;
    }
    if (argc - i != 1) {
        fprintf(stderr, "dtune %s: %s\n", cmd, argc - i < 1 ? "RUN_DIR is missing" : "expects one RUN_DIR");
        usage(stderr);
        return 2;
    }
    *path = argv[i];
    return -1;
}
