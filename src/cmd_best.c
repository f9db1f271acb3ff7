/* cmd_best.c — `dtune best RUN_DIR`: prints the run's best.json to stdout.
 *
 * The daemon rewrites RUN_DIR/best.json (best config and latency per task)
 * after each slot; this command copies it byte for byte, so it can be piped
 * into jq. A missing or unusable RUN_DIR, or a best.json that is not one JSON
 * object (changed by hand: dtune writes it whole), is bad input (exit 2); a
 * run that has not written best.json yet, or a failed read or write, exits 1.
 */
#include "dtune/cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Reads in whole into a malloc'd buffer (*len bytes); NULL on failure. */
static char *read_all(FILE *in, size_t *len)
{
    dt_buf b = { 0 };
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
        dt_buf_append(&b, chunk, n);
    if (ferror(in) || b.failed) {
        dt_buf_free(&b);
        return NULL;
    }
    *len = b.len;
    return b.data ? b.data : calloc(1, 1);
}

/* Prints in to stdout byte for byte when it is one JSON object (the file
 * dtune writes whole, by rename); returns the exit status. */
static int copy_to_stdout(FILE *in, const char *path)
{
    size_t len = 0;
    char *text = read_all(in, &len);
    if (!text) {
        fprintf(stderr, "dtune best: %s: read failed: %s\n", path, strerror(errno));
        return 1;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, 0, &jerr);
    if (!doc || !json_is_object(doc)) {
        if (doc)
            fprintf(stderr, "dtune best: %s: not a JSON object; dtune writes it whole, so it was "
                    "changed by hand or by another program\n", path);
        else
            fprintf(stderr, "dtune best: %s:%d:%d: not JSON: %s; dtune writes it whole, so it was "
                    "changed by hand or by another program\n", path, jerr.line, jerr.column, jerr.text);
        json_decref(doc);
        free(text);
        return 2;
    }
    json_decref(doc);
    size_t wrote = fwrite(text, 1, len, stdout);
    free(text);
    if (wrote != len || ferror(stdout) || fflush(stdout) != 0) {
        fprintf(stderr, "dtune best: writing to standard output failed: %s\n", strerror(errno));
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
