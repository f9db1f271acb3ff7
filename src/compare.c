/* compare.c — several runs of one model side by side (see compare.h). */
#include "dtune/compare.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtune/tunelog.h"
#include "dtune/util.h"

#define MAX_RUNS DT_COMPARE_MAX_RUNS

typedef struct run_curve {
    const char *dir;
    char group[80];            /* "policy (strategy)": runs that differ only in seed */
    int colour, dash;          /* chart: one colour per group, one dash per seed */
    char label[96];
    char model[DT_NAME_MAX];
    double *t, *ms;            /* elapsed seconds, model latency (ms) per row */
    int n;
} run_curve;

struct dt_compare {
    run_curve runs[MAX_RUNS];
    int n;
    int largest;               /* runs in the largest policy group */
    double level;              /* L*: the highest final latency */
};

/* Reads the number that starts column col (1-based) of line. */
static bool read_field(const char *line, int field, double *out, int *col)
{
    const char *p = line;
    for (int f = 0; f < field; f++) {
        p = strchr(p, ',');
        if (!p) {
            *col = (int)strlen(line) + 1;
            return false;
        }
        p++;
    }
    *col = (int)(p - line) + 1;
    char *end;
    errno = 0;
    *out = strtod(p, &end);
    return end != p && errno == 0 && (*end == ',' || *end == '\n' || *end == '\0') && isfinite(*out);
}

/* RUN_DIR/latency.csv: header, then elapsed_s,slot,task,model_latency_ms,... */
static int load_csv(run_curve *r, dt_error *err)
{
    char path[DT_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/latency.csv", r->dir);
    FILE *f = dt_open_input(path, "latency table", err);
    if (!f)
        return err->code ? err->code : DT_EIO;
    char line[8192];
    int lineno = 0, rc = 0;
    size_t cap = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        if (lineno == 1) {
            static const char head[] = "elapsed_s,slot,task,model_latency_ms";
            if (strncmp(line, head, sizeof head - 1) != 0)
                rc = dt_error_set(err, DT_EPARSE, "%s:1:1: not a dtune latency.csv header", path);
            continue;
        }
        if (line[0] == '\n' || line[0] == '\0')
            continue;
        double t, ms;
        int col;
        if (!read_field(line, 0, &t, &col) || !read_field(line, 3, &ms, &col) || ms <= 0 || t < 0) {
            if (!strchr(line, '\n') && feof(f))
                break;   /* a torn last row of a run still writing */
            rc = dt_error_set(err, DT_EPARSE, "%s:%d:%d: expected elapsed seconds and a positive "
                                              "model latency", path, lineno, col);
            break;
        }
        if ((size_t)r->n == cap) {
            cap = dt_grow_capacity(cap, cap + 1);
            if (cap > INT_MAX || dt_resize(&r->t, cap, sizeof *r->t) != 0
                || dt_resize(&r->ms, cap, sizeof *r->ms) != 0) {
                rc = dt_error_set(err, DT_ENOMEM, "out of memory");
                break;
            }
        }
        r->t[r->n] = t;
        r->ms[r->n] = ms;
        r->n++;
    }
    fclose(f);
    if (rc == 0 && r->n == 0)
        rc = dt_error_set(err, DT_EPARSE, "%s: no latency rows yet", path);
    return rc;
}

/* Stops the replay at the run record, which comes first. */
#define FOUND_RUN 1

static int seed_of(void *ctx, const dt_run_record *rec)
{
    *(uint64_t *)ctx = rec->seed;
    return FOUND_RUN;
}

/* ", seed N" from the run's tuning.jsonl, or "" when it cannot be read. */
static void seed_label(const char *dir, char *buf, size_t len)
{
    char path[DT_PATH_MAX + 32];
    uint64_t seed = 0;
    dt_error err;
    snprintf(path, sizeof path, "%s/tuning.jsonl", dir);
    dt_tunelog_visitor v = { .run = seed_of, .ctx = &seed };
    buf[0] = '\0';
    if (dt_tunelog_replay(path, &v, NULL, &err) == FOUND_RUN)
        snprintf(buf, len, ", seed %llu", (unsigned long long)seed);
}

static int load_run(run_curve *r, dt_error *err)
{
    dt_run_state rs;
    int rc = dt_report_load_best(r->dir, &rs, err);
    if (rc)
        return rc;
    char seed[32];
    seed_label(r->dir, seed, sizeof seed);
    snprintf(r->group, sizeof r->group, "%s (%s)", rs.policy, rs.strategy);
    snprintf(r->label, sizeof r->label, "%s (%s%s)", rs.policy, rs.strategy, seed);
    snprintf(r->model, sizeof r->model, "%s", rs.model);
    dt_run_state_destroy(&rs);
    return load_csv(r, err);
}

/* First elapsed time at which the run's latency is at most level; -1 if never. */
static double time_to(const run_curve *r, double level)
{
    for (int i = 0; i < r->n; i++)
        if (r->ms[i] <= level * (1 + 1e-12))
            return r->t[i];
    return -1;
}

static double final_ms(const run_curve *r)
{
    double best = INFINITY;
    for (int i = 0; i < r->n; i++)
        best = fmin(best, r->ms[i]);
    return best;
}

static void print_table(FILE *f, const run_curve *runs, int n, double level)
{
    fprintf(f, "model %s: %d runs; L* = %.4f ms (the highest final latency)\n\n", runs[0].model, n,
           level);
    fprintf(f, "%-4s %-28s %12s %12s %10s %10s %9s  %s\n", "run", "policy (strategy)", "start ms",
           "final ms", "time (s)", "to L* (s)", "x sooner", "dir");
    double ref = time_to(&runs[0], level);
    for (int i = 0; i < n; i++) {
        double to = time_to(&runs[i], level);
        char sooner[32] = "-";
        if (to > 0 && ref >= 0)
            snprintf(sooner, sizeof sooner, "%.2f", ref / to);
        fprintf(f, "%-4d %-28s %12.4f %12.4f %10.1f %10.1f %9s  %s\n", i + 1, runs[i].label,
               runs[i].ms[0], final_ms(&runs[i]), runs[i].t[runs[i].n - 1], to, sooner,
               runs[i].dir);
    }
}

/* Runs of one policy and strategy (seeds of one setting) share a colour and
 * differ in dash; *largest gets the size of the largest group. */
static void assign_groups(run_curve *runs, int n, int *largest)
{
    int ngroups = 0;
    *largest = 1;
    for (int i = 0; i < n; i++) {
        int same = 0, first = -1;
        for (int j = 0; j < i; j++)
            if (strcmp(runs[j].group, runs[i].group) == 0) {
                same++;
                if (first < 0)
                    first = j;
            }
        runs[i].colour = first >= 0 ? runs[first].colour : ngroups++ % DT_REPORT_COLOURS + 1;
        runs[i].dash = same % DT_REPORT_DASHES;
        if (same + 1 > *largest)
            *largest = same + 1;
    }
}

/* Mean model latency (ms) over [0, span]: each row's latency holds until the
 * next; before the first row, the first row's. */
static double mean_ms(const run_curve *r, double span)
{
    double area = 0, t = 0, ms = r->ms[0];
    for (int i = 0; i < r->n && r->t[i] < span; i++) {
        area += ms * (r->t[i] - t);
        t = r->t[i];
        ms = r->ms[i];
    }
    area += ms * (span - t);
    return span > 0 ? area / span : ms;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* "median [min, max]" of v[0..n), sorting v; "never" for an infinite one. */
static void spread(char *buf, size_t len, double *v, int n, const char *fmt)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double x[3] = { n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v[0], v[n - 1] };
    char text[3][32];
    for (int k = 0; k < 3; k++) {
        if (isfinite(x[k]))
            snprintf(text[k], sizeof text[k], fmt, x[k]);
        else
            snprintf(text[k], sizeof text[k], "never");
    }
    snprintf(buf, len, "%s [%s, %s]", text[0], text[1], text[2]);
}

/* One row per policy (strategy): final latency, seconds to 1.10 and 1.05
 * times the lowest final latency of any run, and the anytime figure (mean
 * latency over the shortest run's time), each as median [min, max] over
 * the group's runs. */
static void print_groups(FILE *f, const run_curve *runs, int n)
{
    static const double eps[2] = { 0.10, 0.05 };
    double best = INFINITY, span = INFINITY;
    for (int i = 0; i < n; i++) {
        best = fmin(best, final_ms(&runs[i]));
        span = fmin(span, runs[i].t[runs[i].n - 1]);
    }
    fprintf(f, "\nby policy: median [min, max] over its runs; L_best = %.4f ms (the lowest final "
               "latency);\nmean ms over the first %.1f s (the shortest run)\n", best, span);
    fprintf(f, "%-28s %4s %30s %26s %26s %30s\n", "policy (strategy)", "runs", "final ms",
            "to 1.10 L_best (s)", "to 1.05 L_best (s)", "mean ms");
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(runs[j].group, runs[i].group) == 0;
        if (seen)
            continue;
        double fin[MAX_RUNS], to[2][MAX_RUNS], mean[MAX_RUNS];
        int m = 0;
        for (int j = i; j < n; j++) {
            if (strcmp(runs[j].group, runs[i].group) != 0)
                continue;
            fin[m] = final_ms(&runs[j]);
            for (int e = 0; e < 2; e++) {
                double t = time_to(&runs[j], best * (1 + eps[e]));
                to[e][m] = t < 0 ? INFINITY : t;
            }
            mean[m++] = mean_ms(&runs[j], span);
        }
        char text[4][112];
        spread(text[0], sizeof text[0], fin, m, "%.4f");
        spread(text[1], sizeof text[1], to[0], m, "%.1f");
        spread(text[2], sizeof text[2], to[1], m, "%.1f");
        spread(text[3], sizeof text[3], mean, m, "%.4f");
        fprintf(f, "%-28s %4d %30s %26s %26s %30s\n", runs[i].group, m, text[0], text[1],
                text[2], text[3]);
    }
}

/* Draws every run's curve, time in seconds, minutes or hours as the
 * longest run fits. */
static int draw(const run_curve *runs, int n, const char *out, double level, dt_error *err)
{
    dt_report_curve curves[MAX_RUNS];
    double span = 0;
    for (int i = 0; i < n; i++)
        span = fmax(span, runs[i].t[runs[i].n - 1]);
    const char *unit_name;
    double unit = dt_report_time_unit(span, &unit_name);
    double *scaled[MAX_RUNS] = { 0 };
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        scaled[i] = malloc((size_t)runs[i].n * sizeof *scaled[i]);
        if (!scaled[i]) {
            rc = dt_error_set(err, DT_ENOMEM, "out of memory");
            break;
        }
        for (int j = 0; j < runs[i].n; j++)
            scaled[i][j] = runs[i].t[j] / unit;
        curves[i] = (dt_report_curve){ .name = runs[i].label, .n = runs[i].n, .x = scaled[i],
                                       .y = runs[i].ms, .colour = runs[i].colour,
                                       .dash = runs[i].dash };
    }
    char title[DT_NAME_MAX + 64], xlabel[32];
    snprintf(title, sizeof title, "%s: model latency over tuning time", runs[0].model);
    snprintf(xlabel, sizeof xlabel, "tuning time (%s)", unit_name);
    if (rc == 0)
        rc = dt_report_svg_curves(out, title, xlabel, "model latency (ms)", curves, n, level, err);
    for (int i = 0; i < n; i++)
        free(scaled[i]);
    return rc;
}

int dt_compare_open(const char *const *dirs, int n, dt_compare **out, dt_error *err)
{
    *out = NULL;
    if (n < 1 || n > MAX_RUNS)
        return dt_error_set(err, DT_EINVAL, "expects 1 to %d RUN_DIRs, got %d", MAX_RUNS, n);
    dt_compare *c = calloc(1, sizeof *c);
    if (!c)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        c->runs[k].dir = dirs[k];
        c->n = k + 1;
        rc = load_run(&c->runs[k], err);
        if (rc == 0 && k > 0 && strcmp(c->runs[k].model, c->runs[0].model) != 0)
            rc = dt_error_set(err, DT_EINVAL, "%s tuned %s, %s tuned %s; compare runs of one model",
                              dirs[0], c->runs[0].model, dirs[k], c->runs[k].model);
    }
    if (rc) {
        dt_compare_free(c);
        return rc;
    }
    for (int k = 0; k < n; k++)
        c->level = fmax(c->level, final_ms(&c->runs[k]));
    assign_groups(c->runs, n, &c->largest);
    *out = c;
    return 0;
}

void dt_compare_free(dt_compare *c)
{
    if (!c)
        return;
    for (int k = 0; k < c->n; k++) {
        free(c->runs[k].t);
        free(c->runs[k].ms);
    }
    free(c);
}

const char *dt_compare_model(const dt_compare *c)
{
    return c->runs[0].model;
}

void dt_compare_print(FILE *f, const dt_compare *c)
{
    print_table(f, c->runs, c->n, c->level);
    if (c->largest > 1)
        print_groups(f, c->runs, c->n);
}

int dt_compare_svg(const dt_compare *c, const char *path, dt_error *err)
{
    return draw(c->runs, c->n, path, c->level, err);
}

int dt_compare_html(FILE *f, const dt_compare *c, const char *scratch_path, dt_error *err)
{
    dt_buf chart = { 0 };
    int rc = dt_compare_svg(c, scratch_path, err);
    rc = rc ? rc : dt_read_input(scratch_path, "chart", &chart, err);
    unlink(scratch_path);
    if (rc)
        return rc;
    char *svg = chart.data;
    char *table = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&table, &len);
    if (!mem) {
        free(svg);
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    }
    dt_compare_print(mem, c);
    fclose(mem);
    fputs("<pre>", f);
    dt_report_html_text(f, table);
    fputs("</pre>\n", f);
    const char *open = strstr(svg, "<svg");
    fputs(open ? open : "", f);
    fputs("\n", f);
    free(table);
    free(svg);
    return ferror(f) ? dt_error_set(err, DT_EIO, "write failed") : 0;
}
