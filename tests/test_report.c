/* test_report.c — latency.csv (header, rows, resume, torn rows, another
 * model's file), best.json (round trip through jansson, missing and garbled
 * files), latency.svg and multi-curve SVGs drawn by PLplot (valid-looking SVG,
 * title and legend text, no stray output, bad input, several threads at once)
 * and `dtune report`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtune/cli.h"
#include "dtune/report.h"
#include "support/run_cmd.h"

/* ---- helpers -------------------------------------------------------------- */

static char *make_run_dir(void)
{
    char *dir = strdup("/tmp/dtune_test_report_XXXXXX");
    assert_non_null(dir);
    assert_non_null(mkdtemp(dir));
    return dir;
}

static void remove_run_dir(char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    char path[1024];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        assert_int_equal(unlink(path), 0);
    }
    closedir(d);
    assert_int_equal(rmdir(dir), 0);
    free(dir);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void append_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

/* PLplot writes text as character references (&#x72;); turns the ASCII ones
 * back into characters so tests can search for words. */
static char *decode_char_refs(const char *svg)
{
    char *out = malloc(strlen(svg) + 1), *o = out;
    assert_non_null(out);
    while (*svg) {
        unsigned code;
        int used = 0;
        if (sscanf(svg, "&#x%x;%n", &code, &used) == 1 && used > 0 && code < 128) {
            *o++ = (char)code;
            svg += used;
        } else {
            *o++ = *svg++;
        }
    }
    *o = '\0';
    return out;
}

static const char *const task_names[] = { "conv1", "layer1,3x3", "fc" };

/* A three-task run of model "tiny" on cpu, with npoints latency points. */
static void fill_run(dt_run_state *rs, const char *dir, int npoints)
{
    assert_int_equal(dt_run_state_init_empty(rs, 3), 0);
    snprintf(rs->run_dir, sizeof rs->run_dir, "%s", dir);
    snprintf(rs->model, sizeof rs->model, "tiny");
    snprintf(rs->target, sizeof rs->target, "cpu");
    snprintf(rs->policy, sizeof rs->policy, "dynatune");
    snprintf(rs->strategy, sizeof rs->strategy, "chameleon");
    snprintf(rs->phase, sizeof rs->phase, "tuning");
    rs->budget = 3600;
    rs->target_latency_ms = 1.37;
    rs->start_latency_ms = 2.913;
    for (int k = 0; k < 3; k++) {
        dt_task_state *t = &rs->tasks[k];
        snprintf(t->name, sizeof t->name, "%s", task_names[k]);
        snprintf(t->kind, sizeof t->kind, k == 2 ? "dense" : "conv2d");
        snprintf(t->shape, sizeof t->shape, "1x%dx56x56 k3x3 s1 p1 -> 64", 16 + k);
        t->count = k + 1;
        t->gflop = 0.231 * (k + 1);
        t->best_latency_ms = 0.4137 / (k + 1);
        t->peak_gflops = 1234.5;
        t->bound_ms = 0.1871 / (k + 1);
        snprintf(t->bound_level, sizeof t->bound_level, "%s", k == 2 ? "L1" : "L2");
    }
    snprintf(rs->peak_probe, sizeof rs->peak_probe, "fma 512-bit x12 chains, 1 thread");
    rs->tasks[0].best_gflops = 558.31;
    rs->tasks[0].best_config = 9876543210ULL;
    snprintf(rs->tasks[0].best_knobs, sizeof rs->tasks[0].best_knobs, "tile_co=16 vec=8");
    rs->tasks[0].trials = 417;
    rs->tasks[0].slots = 7;
    rs->tasks[0].finished = true;
    for (int i = 0; i < npoints; i++) {
        dt_latency_point p = { 37.25 * (i + 1), i, i % 3, 2.913 - 0.23 * i };
        assert_int_equal(dt_run_state_add_point(rs, &p), 0);
    }
    rs->elapsed = 37.25 * npoints + 3.5;
    rs->slot = npoints - 1;
    rs->latency_ms = npoints ? rs->points[npoints - 1].model_latency_ms : 0;
}

static void path_in(char *buf, size_t len, const char *dir, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

/* ---- latency.csv ---------------------------------------------------------- */

static void test_csv_header_and_rows(void **state)
{
    (void)state;
    char *dir = make_run_dir(), path[1024];
    dt_run_state rs;
    dt_error err;
    fill_run(&rs, dir, 0);
    assert_int_equal(dt_report_append_csv(&rs, &err), DT_EINVAL); /* no point yet */
    dt_run_state_destroy(&rs);
    fill_run(&rs, dir, 1);
    assert_int_equal(dt_report_append_csv(&rs, &err), 0);
    dt_latency_point p = { 81.625, 1, 2, 2.4567 };
    assert_int_equal(dt_run_state_add_point(&rs, &p), 0);
    rs.tasks[2].best_latency_ms = 0.0917;
    assert_int_equal(dt_report_append_csv(&rs, &err), 0);
    path_in(path, sizeof path, dir, "latency.csv");
    char *text = read_text(path);
    assert_string_equal(text, "elapsed_s,slot,task,model_latency_ms,conv1,\"layer1,3x3\",fc\n"
                              "37.250,0,conv1,2.913,0.4137,0.20685,0.1379\n"
                              "81.625,1,fc,2.4567,0.4137,0.20685,0.0917\n");
    free(text);
    dt_run_state_destroy(&rs);
    remove_run_dir(dir);
}

static void test_csv_resume(void **state)
{
    (void)state;
    char *dir = make_run_dir(), path[1024];
    dt_run_state rs;
    dt_error err;
    fill_run(&rs, dir, 2);
    assert_int_equal(dt_report_append_csv(&rs, &err), 0);
    dt_run_state_destroy(&rs);
    path_in(path, sizeof path, dir, "latency.csv");
    append_text(path, "99.1,7,con"); /* torn row: the process died mid-write */
    fill_run(&rs, dir, 3);           /* the resumed run */
    assert_int_equal(dt_report_append_csv(&rs, &err), 0);
    char *text = read_text(path);
    assert_int_equal(count_lines(text), 3);
    assert_null(strstr(text, "99.1"));
    assert_ptr_equal(strstr(text, "elapsed_s"), text);
    assert_null(strstr(text + 1, "elapsed_s")); /* one header only */
    assert_non_null(strstr(text, "\n111.750,2,fc,2.453,"));
    free(text);
    snprintf(rs.tasks[1].name, sizeof rs.tasks[1].name, "other");
    assert_int_equal(dt_report_append_csv(&rs, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "latency.csv"));
    dt_run_state_destroy(&rs);
    remove_run_dir(dir);
}

/* ---- best.json ------------------------------------------------------------ */

static void assert_close(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fabs(want))
        fail_msg("got %.17g, want %.17g", got, want);
}

static void test_best_round_trip(void **state)
{
    (void)state;
    char *dir = make_run_dir(), path[1024];
    dt_run_state rs, back;
    dt_error err;
    fill_run(&rs, dir, 4);
    rs.reached_at = 133.375;
    assert_int_equal(dt_report_write_best(&rs, &err), 0);
    assert_int_equal(dt_report_load_best(dir, &back, &err), 0);
    assert_string_equal(back.model, "tiny");
    assert_string_equal(back.policy, "dynatune");
    assert_int_equal(back.ntasks, 3);
    assert_int_equal(back.slot, 3);
    assert_close(back.elapsed, rs.elapsed);
    assert_close(back.latency_ms, rs.latency_ms);
    assert_close(back.start_latency_ms, 2.913);
    assert_close(back.target_latency_ms, 1.37);
    assert_close(back.reached_at, 133.375);
    for (int k = 0; k < 3; k++) {
        assert_string_equal(back.tasks[k].name, rs.tasks[k].name);
        assert_string_equal(back.tasks[k].shape, rs.tasks[k].shape);
        assert_int_equal(back.tasks[k].count, rs.tasks[k].count);
        assert_close(back.tasks[k].best_latency_ms, rs.tasks[k].best_latency_ms);
        assert_close(back.tasks[k].peak_gflops, 1234.5);
        assert_close(back.tasks[k].bound_ms, rs.tasks[k].bound_ms);
        assert_string_equal(back.tasks[k].bound_level, rs.tasks[k].bound_level);
    }
    assert_string_equal(back.peak_probe, "fma 512-bit x12 chains, 1 thread");
    assert_true(back.tasks[0].best_config == 9876543210ULL);
    assert_string_equal(back.tasks[0].best_knobs, "tile_co=16 vec=8");
    assert_close(back.tasks[0].best_gflops, 558.31);
    assert_int_equal(back.tasks[0].trials, 417);
    assert_int_equal(back.tasks[0].slots, 7);
    assert_true(back.tasks[0].finished);
    assert_false(back.tasks[1].finished);
    dt_run_state_destroy(&back);

    path_in(path, sizeof path, dir, "best.json");
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    assert_non_null(doc);
    json_t *tasks = json_object_get(doc, "tasks");
    assert_int_equal(json_array_size(tasks), 3);
    assert_true(json_is_null(json_object_get(json_array_get(tasks, 1), "best_config")));
    assert_true(json_is_integer(json_object_get(json_array_get(tasks, 0), "best_config")));
    json_decref(doc);
    assert_int_equal(count_files(dir), 1); /* no temporary file left behind */
    dt_run_state_destroy(&rs);
    remove_run_dir(dir);
}

static void test_best_bad_files(void **state)
{
    (void)state;
    char *dir = make_run_dir(), path[1024];
    dt_run_state back;
    dt_error err;
    assert_int_equal(dt_report_load_best(dir, &back, &err), DT_ENOTFOUND);
    assert_non_null(strstr(err.msg, "best.json"));
    path_in(path, sizeof path, dir, "best.json");
    append_text(path, "{\"model\": \"tiny\",\n \"tasks\": [");
    assert_int_equal(dt_report_load_best(dir, &back, &err), DT_EPARSE);
    assert_non_null(strstr(err.msg, "best.json:"));
    assert_int_equal(unlink(path), 0);
    append_text(path, "{\"model\": \"tiny\", \"tasks\": [{\"name\": 3}]}");
    assert_int_equal(dt_report_load_best(dir, &back, &err), DT_EPARSE);
    assert_non_null(strstr(err.msg, "target")); /* the first missing field is named */
    remove_run_dir(dir);
}

/* ---- SVG ------------------------------------------------------------------ */

static void assert_svg_like(const char *svg)
{
    assert_true(strncmp(svg, "<?xml", 5) == 0 || strncmp(svg, "<svg", 4) == 0);
    assert_non_null(strstr(svg, "<svg"));
    assert_non_null(strstr(svg, "</svg>"));
    assert_true(strstr(svg, "<polyline") != NULL || strstr(svg, "<path") != NULL);
}

/* Runs render with stdout and stderr sent to a file; returns bytes printed. */
static long output_of(int (*render)(const dt_run_state *, dt_error *), const dt_run_state *rs,
                      int *rc, dt_error *err)
{
    char capture[] = "/tmp/dtune_test_report_out_XXXXXX";
    int fd = mkstemp(capture);
    assert_true(fd >= 0);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    assert_true(dup2(fd, 1) >= 0 && dup2(fd, 2) >= 0);
    *rc = render(rs, err);
    fflush(stdout);
    fflush(stderr);
    assert_true(dup2(saved_out, 1) >= 0 && dup2(saved_err, 2) >= 0);
    close(saved_out);
    close(saved_err);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    close(fd);
    unlink(capture);
    return (long)st.st_size;
}

static void test_latency_svg(void **state)
{
    (void)state;
    char *dir = make_run_dir(), path[1024];
    dt_run_state rs;
    dt_error err;
    int rc;
    fill_run(&rs, dir, 6);
    rs.reached_at = 150.5;
    assert_int_equal(output_of(dt_report_write_svg, &rs, &rc, &err), 0); /* PLplot is quiet */
    if (rc)
        fail_msg("%s", err.msg);
    path_in(path, sizeof path, dir, "latency.svg");
    char *svg = read_text(path), *text = decode_char_refs(svg);
    assert_svg_like(svg);
    assert_non_null(strstr(text, "tiny on cpu, policy dynatune"));
    assert_non_null(strstr(text, "target 1.37 ms"));
    assert_non_null(strstr(text, "target reached at"));
    assert_non_null(strstr(text, "model latency (ms)"));
    free(svg);
    free(text);
    assert_int_equal(count_files(dir), 1);

    dt_run_state_destroy(&rs);
    fill_run(&rs, dir, 0); /* before the first slot: empty axes, still a file */
    assert_int_equal(dt_report_write_svg(&rs, &err), 0);
    svg = read_text(path);
    assert_svg_like(svg);
    free(svg);
    dt_run_state_destroy(&rs);
    remove_run_dir(dir);
}

static int count_substr(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void test_svg_curves(void **state)
{
    (void)state;
    char *dir = make_run_dir(), path[1024];
    double x[4] = { 0, 61.5, 123.25, 300.75 };
    double y1[4] = { 9.81, 7.25, 5.125, 4.0625 }, y2[4] = { 9.81, 8.5, 6.75, 3.3125 };
    dt_report_curve curves[3] = { { .name = "sequential", .n = 4, .x = x, .y = y1 },
                                  { .name = "dynatune", .n = 4, .x = x, .y = y2 },
                                  { .name = "round_#robin" } };
    dt_error err;
    path_in(path, sizeof path, dir, "compare.svg");
    int rc = dt_report_svg_curves(path, "resnet18: policies", "time (s)", "latency (ms)",
                                  curves, 3, 4.5, &err);
    if (rc)
        fail_msg("%s", err.msg);
    char *svg = read_text(path), *text = decode_char_refs(svg);
    assert_svg_like(svg);
    assert_non_null(strstr(text, "resnet18: policies"));
    assert_non_null(strstr(text, "sequential"));
    assert_non_null(strstr(text, "dynatune"));
    assert_non_null(strstr(text, "round_#robin")); /* '#' is not a PLplot escape here */
    free(svg);
    free(text);

    assert_int_equal(dt_report_svg_curves(path, "t", "x", "y", curves, 0, 0, &err), DT_EINVAL);
    double bad[4] = { 1, NAN, 2, 3 };
    dt_report_curve nan_curve = { .name = "nan", .n = 4, .x = x, .y = bad };
    assert_int_equal(dt_report_svg_curves(path, "t", "x", "y", &nan_curve, 1, 0, &err),
                     DT_EINVAL);
    assert_int_equal(dt_report_svg_curves("/nonexistent_dir_dtune/x.svg", "t", "x", "y", curves,
                                          1, 0, &err),
                     DT_EIO);
    /* Two seeds of one policy: one colour, the second dashed; a colour or
     * dash outside the tables is refused. */
    curves[1].colour = curves[0].colour = 3;
    assert_int_equal(dt_report_svg_curves(path, "seeds", "x", "y", curves, 2, 0, &err), 0);
    svg = read_text(path);
    int solid = count_substr(svg, "<polyline");
    free(svg);
    curves[1].dash = 1;  /* PLplot's SVG draws a dashed line as its dashes */
    assert_int_equal(dt_report_svg_curves(path, "seeds", "x", "y", curves, 2, 0, &err), 0);
    svg = read_text(path);
    assert_true(count_substr(svg, "<polyline") > solid + 10);
    free(svg);
    curves[1].dash = DT_REPORT_DASHES;
    assert_int_equal(dt_report_svg_curves(path, "t", "x", "y", curves, 2, 0, &err), DT_EINVAL);
    curves[1].dash = 0;
    curves[1].colour = DT_REPORT_COLOURS + 1;
    assert_int_equal(dt_report_svg_curves(path, "t", "x", "y", curves, 2, 0, &err), DT_EINVAL);
    curves[1].colour = 0;
    /* PLplot is usable again after refusals. */
    assert_int_equal(dt_report_svg_curves(path, "again", "x", "y", curves, 2, 0, &err), 0);
    assert_int_equal(count_files(dir), 1);
    remove_run_dir(dir);
}

typedef struct chart_job {
    char path[1024];
    int rc;
} chart_job;

static void *draw_charts(void *arg)
{
    chart_job *job = arg;
    double x[3] = { 0, 10.5, 20.25 }, y[3] = { 3.5, 2.25, 1.125 };
    dt_report_curve curve = { .name = "a", .n = 3, .x = x, .y = y };
    dt_error err;
    for (int i = 0; i < 4 && job->rc == 0; i++)
        job->rc = dt_report_svg_curves(job->path, "threads", "x", "y", &curve, 1, 0, &err);
    return NULL;
}

static void test_charts_from_threads(void **state)
{
    (void)state;
    char *dir = make_run_dir();
    chart_job jobs[3];
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) {
        snprintf(jobs[i].path, sizeof jobs[i].path, "%s/chart%d.svg", dir, i);
        jobs[i].rc = 0;
        assert_int_equal(pthread_create(&threads[i], NULL, draw_charts, &jobs[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(jobs[i].rc, 0);
        char *svg = read_text(jobs[i].path);
        assert_svg_like(svg);
        free(svg);
    }
    assert_int_equal(count_files(dir), 3);
    remove_run_dir(dir);
}

/* ---- dtune report --------------------------------------------------------- */

/* Runs dtune report with argv, stdout and stderr captured into out. */
static int run_report(char **argv, int argc, char *out, size_t len)
{
    return dt_test_capture(dt_cmd_report, argc, argv, out, len);
}

static void test_report_command(void **state)
{
    (void)state;
    char *dir = make_run_dir(), out[8192];
    char *help[] = { "report", "--help", NULL };
    char *missing[] = { "report", "/nonexistent_dir_dtune", NULL };
    char *run[] = { "report", dir, NULL };
    assert_int_equal(run_report(help, 2, out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: dtune report RUN_DIR"));
    assert_int_equal(run_report(missing, 2, out, sizeof out), 2);
    assert_non_null(strstr(out, "/nonexistent_dir_dtune"));
    assert_int_equal(run_report(run, 2, out, sizeof out), 2); /* no best.json yet */
    assert_non_null(strstr(out, "best.json"));

    dt_run_state rs;
    dt_error err;
    fill_run(&rs, dir, 3);
    rs.latency_ms = 0.4137 * 3; /* each task's share: count x latency / model */
    assert_int_equal(dt_report_write_best(&rs, &err), 0);
    assert_int_equal(run_report(run, 2, out, sizeof out), 0);
    assert_non_null(strstr(out, "tiny on cpu, policy dynatune"));
    assert_non_null(strstr(out, "1.2411 ms now, 2.9130 ms at start (2.35x faster)"));
    assert_non_null(strstr(out, "%latency"));
    const char *conv1 = strstr(out, "\nconv1 ");
    assert_non_null(conv1);
    /* the bound, the best's share of it (0.1871 / 0.4137) and its level */
    assert_non_null(strstr(conv1, "558.3     0.1871  45.2%  L2       33.3%      7     417  finished"));
    assert_non_null(strstr(out, "peak from fma 512-bit x12 chains, 1 thread"));
    assert_non_null(strstr(out, "\nlayer1,3x3 "));
    dt_run_state_destroy(&rs);
    remove_run_dir(dir);
}

/* ---- the belief's fitted curve on each task's chart ----------------------- */

/* Task k's chart of html: from its name to the end of its div, malloc'd. */
static char *task_div(const char *html, const char *name)
{
    char head[96];
    snprintf(head, sizeof head, "<div class=\"mini\"><b>%s</b>", name);
    const char *at = strstr(html, head);
    assert_non_null(at);
    const char *end = strstr(at, "</div>");
    assert_non_null(end);
    return strndup(at, (size_t)(end - at));
}

/* rs's report page (not live), malloc'd. */
static char *report_page(const dt_run_state *rs)
{
    char *html = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&html, &len);
    assert_non_null(f);
    assert_int_equal(dt_report_html(f, rs, false, NULL), 0);
    assert_int_equal(fclose(f), 0);
    return html;
}

/* A fitted task's chart draws the band as one polygon of 2n points, lo out
 * and hi back, inside the chart, with the median as a line; a task with
 * measurements but no fit draws none and says so. */
static void test_html_fit_band(void **state)
{
    (void)state;
    dt_run_state rs;
    fill_run(&rs, "/nonexistent", 3);
    for (int k = 0; k < 2; k++) {
        rs.tasks[k].trials = 37;
        dt_best_step step = { .task = k, .trial = 3, .gflops = 211.7 * (k + 1) };
        assert_int_equal(dt_run_state_add_step(&rs, &step), 0);
    }
    dt_belief_curve *fit = &rs.tasks[0].fit;
    *fit = (dt_belief_curve){ .n = DT_BELIEF_CURVE_POINTS, .first = 3, .horizon = 53 };
    for (int i = 0; i < fit->n; i++) {
        fit->median[i] = 200 + 317.9 * (1 - exp(-0.21 * i));
        fit->lo[i] = 0.83 * fit->median[i];
        fit->hi[i] = 1.19 * fit->median[i];
    }
    char *html = report_page(&rs);
    assert_int_equal(count_substr(html, "class=\"fit-band\""), 1);
    char *fitted = task_div(html, "conv1"), *unfitted = task_div(html, "layer1,3x3");
    const char *band = strstr(fitted, "class=\"fit-band\"");
    assert_non_null(band);
    assert_non_null(strstr(fitted, "class=\"fit-median\""));
    assert_non_null(strstr(fitted, "trials 3 to 53"));
    const char *p = strstr(band, "points=\"") + strlen("points=\"");
    double x, y, first_y = 0, last_lo_y = 0, first_hi_y = 0;
    int n = 0, used;
    while (sscanf(p, "%lf,%lf %n", &x, &y, &used) == 2) {
        assert_true(x > 0 && x < 440 && y > 0 && y < 170);
        if (n == 0)
            first_y = y;
        if (n == DT_BELIEF_CURVE_POINTS - 1)
            last_lo_y = y;
        if (n == DT_BELIEF_CURVE_POINTS)
            first_hi_y = y;
        n++;
        p += used;
    }
    assert_int_equal(n, 2 * DT_BELIEF_CURVE_POINTS);
    assert_true(last_lo_y < first_y);     /* the curve rises: smaller y is higher */
    assert_true(first_hi_y < last_lo_y);  /* hi at the horizon above lo there */
    assert_null(strstr(unfitted, "fit-band"));
    assert_null(strstr(unfitted, "fit-median"));
    assert_non_null(strstr(unfitted, "no fitted curve"));
    free(fitted);
    free(unfitted);
    free(html);
    dt_run_state_destroy(&rs);
}

/* A new run dir holding fill_run's best.json (three tasks, no log yet); its
 * tuning.jsonl's path into log. */
static char *run_dir_with_best(char *log, size_t len)
{
    char *dir = make_run_dir();
    dt_run_state rs;
    dt_error err;
    fill_run(&rs, dir, 0);
    assert_int_equal(dt_report_write_best(&rs, &err), 0);
    dt_run_state_destroy(&rs);
    path_in(log, len, dir, "tuning.jsonl");
    return dir;
}

/* The head of a slot record of task fc (slot, time's whole seconds), for
 * the tests to end with their fields and "}\n". */
#define FC_SLOT_HEAD "{\"type\":\"slot\",\"slot\":%d,\"task\":\"fc\",\"task_index\":2," \
                     "\"time\":%d.5,\"model_latency_ms\":2.5,\"decision_ms\":0.25," \
                     "\"scores\":[1,2,3]"

/* `dtune report --html`'s reader keeps each task's newest fit from the log
 * and refuses a fit of a task the run does not have. */
static void test_load_run_fits(void **state)
{
    (void)state;
    char path[512];
    char *dir = run_dir_with_best(path, sizeof path);
    dt_run_state got;
    dt_error err;
    const char *slot = FC_SLOT_HEAD ",\"fits\":[{\"task_index\":%d,\"first\":1,"
                       "\"horizon\":%d,\"median\":[1.5,2.5],\"lo\":[1,2],\"hi\":[2,3]}]}\n";
    char line[512];
    snprintf(line, sizeof line, slot, 0, 1, 1, 9);
    append_text(path, line);
    snprintf(line, sizeof line, slot, 1, 2, 1, 17);
    append_text(path, line);
    assert_int_equal(dt_report_load_run(dir, &got, &err), 0);
    assert_int_equal(got.tasks[1].fit.n, 2);
    assert_true(got.tasks[1].fit.horizon == 17);
    assert_int_equal(got.tasks[0].fit.n, 0);
    assert_int_equal(got.ndecisions, 2);
    for (int i = 0; i < got.ndecisions; i++)
        for (int k = 0; k < got.ntasks; k++) /* fits without "pred" */
            assert_false(dt_belief_forecast_ok(&dt_run_state_scores(&got, i)[k].pred));
    dt_run_state_destroy(&got);
    snprintf(line, sizeof line, slot, 2, 3, 7, 9);
    append_text(path, line);
    assert_int_equal(dt_report_load_run(dir, &got, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "tuning.jsonl"));
    assert_non_null(strstr(err.msg, "task 7"));
    remove_run_dir(dir);
}

/* The log's predictions back on each decision: a task keeps its newest
 * logged one (an entry without "pred" ends it), and the task's chart draws
 * one mark per slot it was given whose decision held one. */
static void test_load_run_predictions(void **state)
{
    (void)state;
    char path[512], line[768];
    char *dir = run_dir_with_best(path, sizeof path);
    dt_run_state got;
    dt_error err;
    const char *slot = FC_SLOT_HEAD "%s}\n";
    const char *fit = ",\"fits\":[{\"task_index\":2,\"first\":1,\"horizon\":17,"
                      "\"median\":[1.5,2.5],\"lo\":[1,2],\"hi\":[2,3]%s}]";
    char fits[256];
    snprintf(fits, sizeof fits, fit, ",\"pred\":{\"gflops\":314.159,\"lo\":271.828,"
                                     "\"hi\":331.7,\"horizon\":17}");
    snprintf(line, sizeof line, slot, 1, 1, fits);
    append_text(path, line);
    snprintf(line, sizeof line, slot, 2, 2, "");
    append_text(path, line);
    snprintf(fits, sizeof fits, fit, "");
    snprintf(line, sizeof line, slot, 3, 3, fits);
    append_text(path, line);
    assert_int_equal(dt_report_load_run(dir, &got, &err), 0);
    assert_int_equal(got.ndecisions, 3);
    for (int i = 0; i < 3; i++) {
        const dt_task_score *rows = dt_run_state_scores(&got, i);
        assert_false(dt_belief_forecast_ok(&rows[0].pred));
        assert_false(dt_belief_forecast_ok(&rows[1].pred));
        assert_int_equal(dt_belief_forecast_ok(&rows[2].pred), i < 2);
    }
    const dt_belief_forecast *p = &dt_run_state_scores(&got, 1)[2].pred;
    assert_true(p->gflops == 314.159 && p->lo_gflops == 271.828 && p->hi_gflops == 331.7 &&
                p->horizon == 17);
    got.tasks[2].trials = 13;
    dt_best_step step = { .task = 2, .trial = 4, .gflops = 262.5 };
    assert_int_equal(dt_run_state_add_step(&got, &step), 0);
    char *html = report_page(&got);
    char *chart = task_div(html, task_names[2]);
    assert_int_equal(count_substr(chart, "class=\"pred-mark\""), 2);
    assert_int_equal(count_substr(html, "class=\"pred-mark\""), 2);
    free(chart);
    free(html);
    dt_run_state_destroy(&got);
    remove_run_dir(dir);
}

/* Rows of the `id="decisions"` table in html. */
static int decision_rows(const char *html)
{
    const char *at = strstr(html, "<table id=\"decisions\">");
    assert_non_null(at);
    char *table = strndup(at, (size_t)(strstr(at, "</table>") - at));
    int n = count_substr(table, "<tr><td>");
    free(table);
    return n;
}

/* A long run: every decision keeps its chosen and runner-up rows, every
 * task's rows only the newest DT_RUN_STATE_RANKED; a task's chart marks the
 * predictions of its newest DT_REPORT_PRED_MARKS slots and, when the newest
 * decision passed it over, that decision's; the table lists the newest
 * DT_REPORT_DECISIONS decisions. Tasks 0 and 1 take turns, fc is always
 * the runner-up. */
static void test_long_run_stays_small(void **state)
{
    (void)state;
    char *dir = make_run_dir();
    dt_run_state rs;
    fill_run(&rs, dir, 0);
    int n = DT_REPORT_DECISIONS + 2 * DT_REPORT_PRED_MARKS + DT_RUN_STATE_RANKED;
    for (int i = 0; i < n; i++) {
        dt_task_score rows[3];
        for (int k = 0; k < 3; k++) {
            dt_belief_forecast f = { 100.0 + i, 90.0 + i, 110.0 + i, 1.0 + i };
            rows[k] = dt_run_state_logged_score(k == i % 2 ? 10 : k == 2 ? 5 : 1, &f);
        }
        dt_slot_decision d = { .slot = i + 1, .task = i % 2, .elapsed = i };
        assert_int_equal(dt_run_state_add_decision(&rs, &d, rows), 0);
        dt_latency_point p = { i + 0.5, i + 1, i % 2, 3.0 - 1e-3 * i };
        assert_int_equal(dt_run_state_add_point(&rs, &p), 0);
    }
    assert_null(dt_run_state_scores(&rs, n - DT_RUN_STATE_RANKED - 1));
    assert_non_null(dt_run_state_scores(&rs, n - DT_RUN_STATE_RANKED));
    assert_true(dt_run_state_row(&rs, 0, 0)->score == 10);
    assert_true(dt_run_state_row(&rs, 0, 2)->score == 5);
    assert_null(dt_run_state_row(&rs, 0, 1));
    assert_true(dt_run_state_row(&rs, n - 1, 0)->score == 1);
    int order[3];
    dt_run_state_rank(&rs, 0, order);
    assert_true(order[0] == 0 && order[1] == 2 && order[2] == 1);
    dt_run_state_rank(&rs, n - 1, order);
    assert_true(order[0] == 1 && order[1] == 2 && order[2] == 0);
    for (int k = 0; k < 3; k++) {
        rs.tasks[k].trials = n;
        dt_best_step step = { .task = k, .trial = 1, .gflops = 50 };
        assert_int_equal(dt_run_state_add_step(&rs, &step), 0);
    }
    char *html = report_page(&rs);
    static const int marks[3] = { DT_REPORT_PRED_MARKS + 1, DT_REPORT_PRED_MARKS, 1 };
    for (int k = 0; k < 3; k++) {
        char *chart = task_div(html, task_names[k]);
        assert_int_equal(count_substr(chart, "class=\"pred-mark\""), marks[k]);
        assert_int_equal(count_substr(chart, "stroke=\"#d62728\"/><circle"), 1);
        free(chart);
    }
    assert_int_equal(decision_rows(html), DT_REPORT_DECISIONS);
    char note[64];
    snprintf(note, sizeof note, "the newest %d of %d", DT_REPORT_DECISIONS, n);
    assert_non_null(strstr(html, note));
    free(html);
    dt_run_state_destroy(&rs);
    remove_run_dir(dir);
}

/* ---- dtune compare -------------------------------------------------------- */

/* A run dir of model `model` under `policy` whose latency.csv holds rows. */
static char *compare_run(const char *model, const char *policy, const char *rows)
{
    char *dir = make_run_dir(), path[1024];
    dt_run_state rs;
    dt_error err;
    fill_run(&rs, dir, 0);
    snprintf(rs.model, sizeof rs.model, "%s", model);
    snprintf(rs.policy, sizeof rs.policy, "%s", policy);
    assert_int_equal(dt_report_write_best(&rs, &err), 0);
    dt_run_state_destroy(&rs);
    path_in(path, sizeof path, dir, "latency.csv");
    append_text(path, "elapsed_s,slot,task,model_latency_ms,conv1,layer1,fc\n");
    append_text(path, rows);
    return dir;
}

static void test_compare_command(void **state)
{
    (void)state;
    char out[8192], svg[1024];
    /* sequential reaches its final 2.0 ms at 300 s; dynatune gets there at
     * 100 s and on to 1.5 ms, so L* = 2.0 ms and dynatune is 3.00x sooner */
    char *seq = compare_run("tiny", "sequential",
                            "5,0,warm-up,4.0,1,1,1\n100,1,conv1,3.5,1,1,1\n"
                            "200,2,conv1,3.0,1,1,1\n300,3,fc,2.0,1,1,1\n400,4,fc,2.0,1,1,1\n");
    char *dyn = compare_run("tiny", "dynatune",
                            "5,0,warm-up,4.0,1,1,1\n50,1,fc,2.5,1,1,1\n100,2,conv1,1.9,1,1,1\n"
                            "400,3,fc,1.5,1,1,1\n");
    char *other = compare_run("resnet18", "dynatune", "5,0,warm-up,4.0,1,1,1\n");
    char *bad = compare_run("tiny", "dynatune", "5,0,warm-up,4.0,1,1,1\n50,1,fc,fast,1,1,1\n");
    char log[1024];
    path_in(log, sizeof log, dyn, "tuning.jsonl");
    append_text(log, "{\"type\":\"run\",\"model\":\"tiny\",\"target\":\"cpu\",\"seed\":7,"
                     "\"started\":\"2026-11-24T19:00:00Z\"}\n");
    path_in(svg, sizeof svg, seq, "compare.svg");
    char *ok[] = { "compare", "-o", svg, seq, dyn, NULL };
    assert_int_equal(dt_test_capture(dt_cmd_compare, 5, ok, out, sizeof out), 0);
    assert_non_null(strstr(out, "L* = 2.0000 ms"));
    const char *row = strstr(out, "dynatune (chameleon, seed 7)");
    assert_non_null(row);
    assert_non_null(strstr(row, "4.0000       1.5000      400.0      100.0      3.00"));
    row = strstr(out, "sequential (chameleon)");
    assert_non_null(row);
    assert_non_null(strstr(row, "300.0      1.00"));
    char *text = read_text(svg), *plain = decode_char_refs(text);
    assert_non_null(strstr(plain, "sequential (chameleon)"));
    assert_non_null(strstr(plain, "dynatune (chameleon, seed 7)"));
    assert_non_null(strstr(plain, "tuning time (min)")); /* 400 s: minutes */
    free(plain);
    free(text);
    unlink(svg);

    /* a .html output is one page: the table and the chart inline */
    char page[1024];
    path_in(page, sizeof page, seq, "compare.html");
    char *as_page[] = { "compare", "-o", page, seq, dyn, NULL };
    assert_int_equal(dt_test_capture(dt_cmd_compare, 5, as_page, out, sizeof out), 0);
    text = read_text(page);
    assert_non_null(text);
    assert_non_null(strstr(text, "<pre>model tiny: 2 runs"));
    const char *chart = strstr(text, "<svg");
    assert_non_null(chart);
    plain = decode_char_refs(chart);
    assert_non_null(strstr(plain, "dynatune (chameleon, seed 7)"));
    assert_null(strstr(text, "<?xml")); /* inline, not a file */
    free(plain);
    free(text);
    unlink(page);

    char *mixed[] = { "compare", "-o", svg, seq, other, NULL };
    assert_int_equal(dt_test_capture(dt_cmd_compare, 5, mixed, out, sizeof out), 2);
    assert_non_null(strstr(out, "compare runs of one model"));
    char *malformed[] = { "compare", "-o", svg, bad, NULL };
    assert_int_equal(dt_test_capture(dt_cmd_compare, 4, malformed, out, sizeof out), 2);
    assert_non_null(strstr(out, "latency.csv:3:9: expected"));
    char *png[] = { "compare", "-o", "chart.png", seq, dyn, NULL };   /* no format but SVG and HTML */
    assert_int_equal(dt_test_capture(dt_cmd_compare, 5, png, out, sizeof out), 2);
    assert_non_null(strstr(out, "-o chart.png"));
    assert_int_not_equal(access("chart.png", F_OK), 0);
    char *none[] = { "compare", NULL };
    assert_int_equal(dt_test_capture(dt_cmd_compare, 1, none, out, sizeof out), 2);
    assert_non_null(strstr(out, "usage: dtune compare"));
    remove_run_dir(seq);
    remove_run_dir(dyn);
    remove_run_dir(other);
    remove_run_dir(bad);
}

static void test_format_duration(void **state)
{
    (void)state;
    char buf[32];
    dt_report_format_duration(42.46, buf, sizeof buf);
    assert_string_equal(buf, "42.5s");
    dt_report_format_duration(423.4, buf, sizeof buf);
    assert_string_equal(buf, "7m03s");
    dt_report_format_duration(7500.2, buf, sizeof buf);
    assert_string_equal(buf, "2h05m00s");
    dt_report_format_duration(-1, buf, sizeof buf);
    assert_string_equal(buf, "-");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_header_and_rows), cmocka_unit_test(test_csv_resume),
        cmocka_unit_test(test_best_round_trip),     cmocka_unit_test(test_best_bad_files),
        cmocka_unit_test(test_latency_svg),         cmocka_unit_test(test_svg_curves),
        cmocka_unit_test(test_charts_from_threads), cmocka_unit_test(test_report_command),
        cmocka_unit_test(test_html_fit_band),       cmocka_unit_test(test_load_run_fits),
        cmocka_unit_test(test_load_run_predictions),
        cmocka_unit_test(test_long_run_stays_small),
        cmocka_unit_test(test_compare_command),     cmocka_unit_test(test_format_duration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
