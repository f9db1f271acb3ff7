/* cmd_best.c — `dtune best RUN_DIR`: prints the run's best.json to stdout.
 *
 * The daemon rewrites RUN_DIR/best.json (best config and latency per task)
 * after each slot; this command copies it byte for byte, so it can be piped
 * into jq. A missing or unusable RUN_DIR is bad input (exit 2); a run that has
 * not written best.json yet, or a failed read or write, exits 1.
 */
#include "dtune/cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dtune/model.h"
#include "dtune/util.h"

static void usage(FILE *to)
{
    fputs("usage: dtune best RUN_DIR\n"
          "\n"
          "Prints RUN_DIR/best.json, the best configuration and latency of every\n"
          "task found so far, to standard output.\n"
          "\n"
          "  -h, --help   show this help\n", to);
}

/* Returns the exit status: 0 help shown, 2 usage error, -1 go on with *run_dir. */
static int parse_args(int argc, char **argv, const char **run_dir)
{
    return dt_cli_one_path(argc, argv, "best", usage, run_dir);
}

/* Copies in to stdout; returns the exit status. */
static int copy_to_stdout(FILE *in, const char *path)
{
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (fwrite(buf, 1, n, stdout) != n)
            break;
    }
    if (ferror(in)) {
        fprintf(stderr, "dtune best: %s: read failed: %s\n", path, strerror(errno));
        return 1;
    }
    if (ferror(stdout) || fflush(stdout) != 0) {
        fprintf(stderr, "dtune best: writing to standard output failed: %s\n",
                strerror(errno));
        return 1;
    }
    return 0;
}

static int print_best(const char *run_dir)
{
    char path[DT_PATH_MAX + 16];
    struct stat st;
    FILE *in;
    int status;
    if (stat(run_dir, &st) != 0) {
        fprintf(stderr, "dtune best: %s: %s\n", run_dir, strerror(errno));
        return 2;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "dtune best: %s: not a directory\n", run_dir);
        return 2;
    }
    if (snprintf(path, sizeof path, "%s/best.json", run_dir) >= (int)sizeof path) {
        fprintf(stderr, "dtune best: %s: path too long\n", run_dir);
        return 2;
    }
    dt_error err;
    in = dt_open_input(path, "best.json", &err);
    if (!in) {
        fprintf(stderr, "dtune best: %s%s\n", err.msg,
                err.code == DT_ENOTFOUND ? " (the run has not finished a slot yet)" : "");
        return err.code == DT_EINVAL ? 2 : 1;
    }
    status = copy_to_stdout(in, path);
    fclose(in);
    return status;
}

int dt_cmd_best(int argc, char **argv)
{
    const char *run_dir;
    int status = parse_args(argc, argv, &run_dir);
    if (status >= 0)
        return status;
    return print_best(run_dir);
}
