/* cmd_compare.c — `dtune compare [-o OUT.svg|OUT.html] RUN_DIR...`: several
 * runs of one model side by side (the tables and the chart are compare.h's).
 *
 * Runs of different models are refused (exit 2); a malformed latency.csv is
 * reported as file:line:column (exit 2).
 */
#include "dtune/cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "dtune/compare.h"
#include "dtune/util.h"

static void usage(FILE *to)
{
    fputs("usage: dtune compare [-o OUT.svg] RUN_DIR RUN_DIR...\n"
          "\n"
          "Compares runs of one model (e.g. the same budget under two policies).\n"
          "Prints, per run: policy, strategy, model latency at the start and the\n"
          "end, tuning time, and the time to reach L*, the highest of the runs'\n"
          "final latencies (a latency every run reached), with the speed-up to L*\n"
          "against the first RUN_DIR. Runs that repeat a policy and strategy (several\n"
          "seeds) get a table by policy: final latency, seconds to 1.10 and 1.05 x the\n"
          "lowest final latency of any run, and mean latency over the shortest run's\n"
          "time, each as median [min, max]. Draws every run's model latency over time\n"
          "into one SVG (one colour per policy, one dash per seed). Reads\n"
          "RUN_DIR/latency.csv and RUN_DIR/best.json.\n"
          "\n"
          "  -o, --output FILE   the chart (default compare.svg); a FILE ending in .html\n"
          "                      is one self-contained page: the table and the chart\n"
          "  -h, --help          show this help\n", to);
}

static bool ends_with(const char *path, const char *suffix)
{
    size_t n = strlen(path), k = strlen(suffix);
    return n >= k && strcmp(path + n - k, suffix) == 0;
}

/* Whether path names an HTML page (ends in .html). */
static bool is_html(const char *path)
{
    return ends_with(path, ".html");
}

/* The runs as one self-contained page: the tables and the chart inline. */
static int write_page(const dt_compare *c, const char *out, dt_error *err)
{
    FILE *f = fopen(out, "w");
    if (!f)
        return dt_error_set(err, DT_EIO, "%s: cannot write", out);
    char scratch[DT_PATH_MAX + 8];
    snprintf(scratch, sizeof scratch, "%s.svg", out);
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>dtune compare: ", f);
    dt_report_html_text(f, dt_compare_model(c));
    fputs("</title></head><body>\n", f);
    int rc = dt_compare_html(f, c, scratch, err);
    fputs("</body></html>\n", f);
    bool failed = ferror(f) != 0;
    if ((fclose(f) != 0 || failed) && rc == 0)
        rc = dt_error_set(err, DT_EIO, "%s: write failed", out);
    return rc;
}

int dt_cmd_compare(int argc, char **argv)
{
    const char *out = "compare.svg";
    int i, rc = dt_cli_options(argc, argv, "compare", usage, "-o", "--output", &out, &i);
    if (rc != -1)
        return rc;
    int n = argc - i;
    if (!is_html(out) && !ends_with(out, ".svg")) {
        fprintf(stderr, "dtune compare: -o %s: the chart is SVG (a FILE ending in .svg) or a page (.html); "
                "no other format is written\n", out);
        return 2;
    }
    if (n < 1 || n > DT_COMPARE_MAX_RUNS) {
        fprintf(stderr, "dtune compare: expects 1 to %d RUN_DIRs, got %d\n", DT_COMPARE_MAX_RUNS, n);
        usage(stderr);
        return 2;
    }
    dt_compare *c;
    dt_error err;
    dt_error_clear(&err);
    rc = dt_compare_open((const char *const *)argv + i, n, &c, &err);
    if (rc == 0) {
        dt_compare_print(stdout, c);
        rc = is_html(out) ? write_page(c, out, &err) : dt_compare_svg(c, out, &err);
        if (rc == 0)
            printf("\n%s: %s (dashed line: L*)\n", is_html(out) ? "page" : "chart", out);
        else
            fprintf(stderr, "dtune compare: %s: %s\n", out, err.msg);
        dt_compare_free(c);
        return rc ? 1 : 0;
    }
    fprintf(stderr, "dtune compare: %s\n", err.msg);
    return dt_error_exit_status(rc);
}
