/* test_server.c — the status server on loopback: /status as JSON with the
 * run's numbers (and live updates), /metrics in Prometheus text format, /,
 * /latency.svg, 404 and 405, HEAD, concurrent clients, a port in use, bad
 * addresses, and `dtune status` against it; an idle connection cut off, an
 * oversized request refused. Only 127.0.0.1 and ::1 are used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
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
#include "server_internal.h"
#include "support/run_cmd.h"

#define TIMEOUT_MS 3000

typedef struct fixture {
    char dir[64];
    char addr[64];
    dt_run_state rs;
    dt_server *server;
} fixture;

static void fill_state(dt_run_state *rs, const char *dir)
{
    static const char *const names[] = { "conv1", "we\"ird<b>", "fc" };
    assert_int_equal(dt_run_state_init_empty(rs, 3), 0);
    snprintf(rs->run_dir, sizeof rs->run_dir, "%s", dir);
    snprintf(rs->model, sizeof rs->model, "tiny");
    snprintf(rs->target, sizeof rs->target, "cpu");
    snprintf(rs->policy, sizeof rs->policy, "dynatune");
    snprintf(rs->strategy, sizeof rs->strategy, "chameleon");
    snprintf(rs->phase, sizeof rs->phase, "tuning");
    rs->elapsed = 417.25;
    rs->budget = 3600;
    rs->slot = 11;
    rs->history_bytes = 123456;
    rs->current_task = 2;
    rs->start_latency_ms = 5.8125;
    rs->latency_ms = 2.34375;
    rs->target_latency_ms = 2.5;
    rs->reached_at = 390.5;
    for (int k = 0; k < 3; k++) {
        dt_task_state *t = &rs->tasks[k];
        snprintf(t->name, sizeof t->name, "%s", names[k]);
        snprintf(t->kind, sizeof t->kind, "conv2d");
        snprintf(t->shape, sizeof t->shape, "1x%dx28x28 k3x3 s1 p1 -> 32", 8 * (k + 1));
        t->count = k + 1;
        t->best_gflops = 123.4375 * (k + 1);
        t->best_latency_ms = 0.390625 * (k + 1);
        t->peak_gflops = 1500;
        t->bound_ms = 0.0859375 * (k + 1);
        snprintf(t->bound_level, sizeof t->bound_level, "L2");
        t->trials = 64 * (k + 1);
        t->slots = 3 + k;
    }
    for (int i = 0; i < 5; i++) {
        dt_latency_point p = { 80.5 * (i + 1), i, i % 3, 5.8125 - 0.8 * i };
        assert_int_equal(dt_run_state_add_point(rs, &p), 0);
    }
    /* slot 11 went to fc over conv1 and the finished we"ird<b> */
    dt_task_score rows[3] = {
        { .score = 0.8125, .cut_ms = 0.0625, .cut_lo_ms = 0.03125, .cut_hi_ms = 0.125 },
        { .score = -INFINITY, .cut_ms = NAN, .cut_lo_ms = NAN, .cut_hi_ms = NAN, .note = "finished" },
        { .score = 1.4375, .cut_ms = 0.25, .cut_lo_ms = 0.1875, .cut_hi_ms = 0.375 },
    };
    dt_slot_decision d = { .slot = 11, .task = 2, .elapsed = 402.5, .decision_ms = 3.25 };
    assert_int_equal(dt_run_state_add_decision(rs, &d, rows), 0);
    rs->slot_started = 402.5;
    rs->tasks[0].peak_gflops = rs->tasks[0].best_gflops; /* a kernel beat the roofline */
    rs->tasks[0].peak_from_kernel = true;
    rs->tasks[0].bound_ms = rs->tasks[0].best_latency_ms; /* and its bound */
    rs->tasks[0].bound_from_kernel = true;
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/dtune_test_server_XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    fill_state(&fx->rs, fx->dir);
    dt_error err;
    int rc = dt_server_start("127.0.0.1:0", &fx->rs, &fx->server, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_true(dt_server_port(fx->server) > 0);
    snprintf(fx->addr, sizeof fx->addr, "127.0.0.1:%d", dt_server_port(fx->server));
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    char path[128];
    dt_server_stop(fx->server);
    dt_run_state_destroy(&fx->rs);
    snprintf(path, sizeof path, "%s/latency.svg", fx->dir);
    unlink(path);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

static void get(const fixture *fx, const char *method, const char *path, dt_http_reply *reply)
{
    dt_error err;
    int rc = dt_server_request(fx->addr, method, path, TIMEOUT_MS, reply, &err);
    if (rc)
        fail_msg("%s %s: %s", method, path, err.msg);
}

static void assert_header(const dt_http_reply *reply, const char *name, const char *prefix)
{
    char value[256];
    if (dt_server_reply_header(reply, name, value, sizeof value) != 0)
        fail_msg("no %s header in:\n%s", name, reply->headers);
    if (strncmp(value, prefix, strlen(prefix)) != 0)
        fail_msg("%s is '%s', expected '%s...'", name, value, prefix);
}

static void test_status_json(void **state)
{
    fixture *fx = *state;
    dt_http_reply reply;
    get(fx, "GET", "/status", &reply);
    assert_int_equal(reply.status, 200);
    assert_header(&reply, "Content-Type", "application/json");
    json_error_t jerr;
    json_t *st = json_loads(reply.body, 0, &jerr);
    if (!st)
        fail_msg("not JSON: %s\n%s", jerr.text, reply.body);
    assert_true(fabs(json_number_value(json_object_get(st, "model_latency_ms")) - 2.34375) < 1e-12);
    assert_true(fabs(json_number_value(json_object_get(st, "start_latency_ms")) - 5.8125) < 1e-12);
    assert_true(fabs(json_number_value(json_object_get(st, "speedup")) - 5.8125 / 2.34375) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(st, "reached_at_s")) - 390.5) < 1e-12);
    assert_string_equal(json_string_value(json_object_get(st, "model")), "tiny");
    assert_string_equal(json_string_value(json_object_get(st, "policy")), "dynatune");
    assert_string_equal(json_string_value(json_object_get(st, "current_task")), "fc");
    assert_int_equal(json_integer_value(json_object_get(st, "slot")), 11);
    json_t *tasks = json_object_get(st, "tasks");
    assert_int_equal(json_array_size(tasks), 3);
    json_t *t1 = json_array_get(tasks, 1);
    assert_string_equal(json_string_value(json_object_get(t1, "name")), "we\"ird<b>");
    assert_int_equal(json_integer_value(json_object_get(t1, "trials")), 128);
    assert_string_equal(json_string_value(json_object_get(t1, "peak_source")), "roofline");
    json_t *t0 = json_array_get(tasks, 0);
    assert_string_equal(json_string_value(json_object_get(t0, "peak_source")), "best kernel");
    assert_string_equal(json_string_value(json_object_get(t0, "bound_source")), "best kernel");
    assert_string_equal(json_string_value(json_object_get(t1, "bound_level")), "L2");
    assert_true(fabs(json_number_value(json_object_get(t1, "bound_share")) - 0.22) < 1e-12);
    assert_true(fabs(json_number_value(json_object_get(st, "budget_left_s")) - (3600 - 417.25)) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(st, "slot_elapsed_s")) - 14.75) < 1e-9);
    assert_true(json_is_null(json_object_get(st, "warmup")));
    /* why slot 11 went to fc: ranked, chosen first, the finished task last
     * with a null score and its note */
    json_t *d = json_object_get(st, "decision");
    assert_int_equal(json_integer_value(json_object_get(d, "slot")), 11);
    assert_string_equal(json_string_value(json_object_get(d, "task")), "fc");
    json_t *ranking = json_object_get(d, "ranking");
    assert_int_equal(json_array_size(ranking), 3);
    const char *want[3] = { "fc", "conv1", "we\"ird<b>" };
    for (int i = 0; i < 3; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(ranking, i), "task")),
                            want[i]);
    json_t *top = json_array_get(ranking, 0), *last = json_array_get(ranking, 2);
    assert_true(json_is_true(json_object_get(top, "chosen")));
    assert_true(fabs(json_number_value(json_object_get(top, "score")) - 1.4375) < 1e-12);
    assert_true(fabs(json_number_value(json_object_get(top, "cut_lo_ms")) - 0.1875) < 1e-12);
    assert_true(json_is_null(json_object_get(last, "score")));
    assert_string_equal(json_string_value(json_object_get(last, "note")), "finished");
    assert_int_equal(json_array_size(json_object_get(st, "decisions")), 1);
    json_decref(st);
    dt_server_reply_free(&reply);
}

static void test_status_follows_the_run(void **state)
{
    fixture *fx = *state;
    pthread_mutex_lock(&fx->rs.lock);
    fx->rs.latency_ms = 1.953125;
    fx->rs.slot = 12;
    pthread_mutex_unlock(&fx->rs.lock);
    dt_http_reply reply;
    get(fx, "GET", "/status", &reply);
    json_t *st = json_loads(reply.body, 0, NULL);
    assert_non_null(st);
    assert_true(fabs(json_number_value(json_object_get(st, "model_latency_ms")) - 1.953125) < 1e-12);
    assert_int_equal(json_integer_value(json_object_get(st, "slot")), 12);
    json_decref(st);
    dt_server_reply_free(&reply);
}

/* The value of the sample line "name value" in a metrics page. */
static double metric(const char *text, const char *name)
{
    char key[256];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *line = strstr(text, key);
    if (!line)
        fail_msg("no sample %s in:\n%s", name, text);
    return strtod(line + strlen(key), NULL);
}

static void test_metrics(void **state)
{
    fixture *fx = *state;
    dt_http_reply reply;
    get(fx, "GET", "/metrics", &reply);
    assert_int_equal(reply.status, 200);
    assert_header(&reply, "Content-Type", "text/plain; version=0.0.4");
    const char *m = reply.body;
    assert_non_null(strstr(m, "# HELP dtune_model_latency_seconds "));
    assert_non_null(strstr(m, "# TYPE dtune_model_latency_seconds gauge\n"));
    assert_true(fabs(metric(m, "dtune_model_latency_seconds") - 2.34375e-3) < 1e-12);
    assert_true(fabs(metric(m, "dtune_start_latency_seconds") - 5.8125e-3) < 1e-12);
    assert_non_null(strstr(m, "# TYPE dtune_elapsed_seconds_total counter\n"));
    assert_true(fabs(metric(m, "dtune_elapsed_seconds_total") - 417.25) < 1e-9);
    assert_true(fabs(metric(m, "dtune_budget_left_seconds") - (3600 - 417.25)) < 1e-9);
    assert_true(fabs(metric(m, "dtune_slots_total") - 11) < 1e-9);
    assert_true(fabs(metric(m, "dtune_history_bytes") - dt_run_state_history_bytes(&fx->rs)) < 1e-9);
    assert_true(dt_run_state_history_bytes(&fx->rs) == 123456 + fx->rs.npoints * sizeof(dt_latency_point) +
                                                          sizeof(dt_slot_decision));
    assert_non_null(strstr(m, "# TYPE dtune_task_best_flops gauge\n"));
    assert_true(fabs(metric(m, "dtune_task_best_flops{task=\"conv1\"}") - 123.4375e9) < 1e-3);
    assert_true(fabs(metric(m, "dtune_task_bound_seconds{task=\"conv1\"}") - 0.390625e-3) < 1e-12);
    assert_true(fabs(metric(m, "dtune_task_bound_share{task=\"conv1\"}") - 1) < 1e-12);
    assert_true(fabs(metric(m, "dtune_task_best_latency_seconds{task=\"fc\"}") - 1.171875e-3) < 1e-12);
    assert_non_null(strstr(m, "# TYPE dtune_task_trials_total counter\n"));
    assert_true(fabs(metric(m, "dtune_task_trials_total{task=\"fc\"}") - 192) < 1e-9);
    assert_null(strstr(m, "_ms")); /* base units only */
    assert_true(fabs(metric(m, "dtune_task_tuning{task=\"fc\"}") - 1) < 1e-12);
    assert_true(fabs(metric(m, "dtune_task_tuning{task=\"conv1\"}")) < 1e-12);
    assert_non_null(strstr(m, "{task=\"we\\\"ird<b>\"}")); /* quote escaped in the label */
    /* Every sample line belongs to a family announced once by HELP and TYPE;
     * counters, and only they, end in _total. */
    for (const char *line = m; *line; line = strchr(line, '\n') + 1) {
        if (line[0] != '#') {
            char family[64], key[96];
            sscanf(line, "%63[a-z_]", family);
            size_t n = strlen(family);
            bool total = n > 6 && strcmp(family + n - 6, "_total") == 0;
            snprintf(key, sizeof key, "# TYPE %s %s\n", family, total ? "counter" : "gauge");
            const char *type = strstr(m, key);
            assert_non_null(type);
            assert_null(strstr(type + 1, key));
        }
        if (!strchr(line, '\n'))
            break;
    }
    dt_server_reply_free(&reply);
}

/* The machine's speed relative to the run's start and the confirmations'
 * share of measurement time, on /status and /metrics. */
static void test_drift_and_confirm_share(void **state)
{
    fixture *fx = *state;
    dt_http_reply reply;
    get(fx, "GET", "/status", &reply);
    json_t *st = json_loads(reply.body, 0, NULL);
    assert_non_null(st);
    assert_true(json_is_null(json_object_get(st, "machine_speed")));   /* no reading yet */
    json_decref(st);
    dt_server_reply_free(&reply);
    pthread_mutex_lock(&fx->rs.lock);
    fx->rs.machine_speed = 0.9296875;
    fx->rs.drift_readings = 7;
    fx->rs.confirmations = 9;
    fx->rs.confirmed = 4;
    fx->rs.measure_ms = 3512.5;
    fx->rs.confirm_ms = 287.25;
    fx->rs.drift_ms = 50.25;
    pthread_mutex_unlock(&fx->rs.lock);
    double share = 287.25 / (3512.5 + 287.25 + 50.25);
    get(fx, "GET", "/status", &reply);
    st = json_loads(reply.body, 0, NULL);
    assert_non_null(st);
    assert_true(json_number_value(json_object_get(st, "machine_speed")) == 0.9296875);
    assert_true(fabs(json_number_value(json_object_get(st, "confirm_share")) - share) < 1e-12);
    assert_int_equal(json_integer_value(json_object_get(st, "confirmations")), 9);
    assert_int_equal(json_integer_value(json_object_get(st, "confirmed")), 4);
    assert_int_equal(json_integer_value(json_object_get(st, "drift_readings")), 7);
    json_decref(st);
    dt_server_reply_free(&reply);
    get(fx, "GET", "/metrics", &reply);
    assert_true(metric(reply.body, "dtune_machine_speed_ratio") == 0.9296875);
    assert_true(fabs(metric(reply.body, "dtune_confirm_time_share") - share) < 1e-12);
    assert_true(metric(reply.body, "dtune_confirmations_total") == 9);
    assert_true(metric(reply.body, "dtune_confirmed_total") == 4);
    dt_server_reply_free(&reply);
    assert_true(dt_run_state_drifted(&fx->rs));   /* 7 % slower: the live line says so */
    fx->rs.machine_speed = 1.0390625;
    assert_false(dt_run_state_drifted(&fx->rs));
}

static void test_not_found_and_method(void **state)
{
    fixture *fx = *state;
    dt_http_reply reply;
    get(fx, "GET", "/nope", &reply);
    assert_int_equal(reply.status, 404);
    dt_server_reply_free(&reply);
    get(fx, "POST", "/status", &reply);
    assert_int_equal(reply.status, 405);
    assert_header(&reply, "Allow", "GET");
    dt_server_reply_free(&reply);
    get(fx, "DELETE", "/nope", &reply);
    assert_int_equal(reply.status, 405);
    dt_server_reply_free(&reply);
    get(fx, "HEAD", "/status", &reply);
    assert_int_equal(reply.status, 200);
    assert_int_equal(reply.body_len, 0);
    dt_server_reply_free(&reply);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    *len = (size_t)ftell(f);
    rewind(f);
    char *buf = malloc(*len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

static void test_latency_svg_and_page(void **state)
{
    fixture *fx = *state;
    dt_http_reply reply;
    get(fx, "GET", "/latency.svg", &reply);
    assert_int_equal(reply.status, 404); /* not written yet */
    dt_server_reply_free(&reply);

    dt_error err;
    int rc = dt_report_write_svg(&fx->rs, &err);
    if (rc)
        fail_msg("%s", err.msg);
    char path[128];
    size_t len;
    snprintf(path, sizeof path, "%s/latency.svg", fx->dir);
    char *file = read_file(path, &len);
    get(fx, "GET", "/latency.svg", &reply);
    assert_int_equal(reply.status, 200);
    assert_header(&reply, "Content-Type", "image/svg+xml");
    assert_int_equal(reply.body_len, len);
    assert_memory_equal(reply.body, file, len);
    free(file);
    dt_server_reply_free(&reply);

    get(fx, "GET", "/", &reply);
    assert_int_equal(reply.status, 200);
    assert_header(&reply, "Content-Type", "text/html");
    assert_non_null(strstr(reply.body, "http-equiv=\"refresh\""));
    assert_non_null(strstr(reply.body, "<svg id=\"latency-chart\""));
    assert_non_null(strstr(reply.body, "data-points=\"5\""));
    assert_non_null(strstr(reply.body, "we&quot;ird&lt;b&gt;"));
    assert_null(strstr(reply.body, "<b>\""));
    assert_non_null(strstr(reply.body, "<b id=\"latency\">2.3438</b> ms"));
    assert_non_null(strstr(reply.body, "<b id=\"slot\">11</b> (14.8s in)"));
    assert_non_null(strstr(reply.body, "<td>100.0*</td>")); /* the bound a kernel set */
    assert_non_null(strstr(reply.body, "<td>22.0</td><td>L2</td>")); /* 0.0859375 / 0.390625 */
    /* the ranking: fc (chosen) first, conv1, then the finished task */
    const char *ranking = strstr(reply.body, "<table id=\"ranking\">");
    assert_non_null(ranking);
    const char *fc = strstr(ranking, "fc &#10004;"), *conv = strstr(ranking, "conv1");
    const char *weird = strstr(ranking, "we&quot;ird");
    assert_true(fc && conv && weird && fc < conv && conv < weird);
    dt_server_reply_free(&reply);

    get(fx, "GET", "/report.html", &reply);
    assert_int_equal(reply.status, 404); /* not written yet */
    dt_server_reply_free(&reply);
    assert_int_equal(dt_report_write_html(&fx->rs, &err), 0);
    snprintf(path, sizeof path, "%s/report.html", fx->dir);
    file = read_file(path, &len);
    get(fx, "GET", "/report.html", &reply);
    assert_int_equal(reply.status, 200);
    assert_header(&reply, "Content-Type", "text/html");
    assert_int_equal(reply.body_len, len);
    assert_memory_equal(reply.body, file, len);
    assert_null(strstr(file, "http-equiv=\"refresh\""));
    assert_null(strstr(file, "id=\"live\""));
    assert_null(strstr(file, "src=")); /* self-contained: nothing to fetch */
    free(file);
    dt_server_reply_free(&reply);
}

/* Fetches path and asserts 200; returns how many were fetched (1). */
static int fetch_ok(const fixture *fx, const char *path, const char *where)
{
    dt_http_reply reply;
    get(fx, "GET", path, &reply);
    if (reply.status != 200)
        fail_msg("%s names %s, which answers %d", where, path, reply.status);
    dt_server_reply_free(&reply);
    return 1;
}

/* Fetches every path right after a `prefix` in text (a path: '/' then
 * [a-z./_]*); returns how many. */
static int walk_paths(const fixture *fx, const char *text, const char *prefix, const char *where)
{
    int n = 0;
    for (const char *at = strstr(text, prefix); at; at = strstr(at + 1, prefix)) {
        const char *p = at + strlen(prefix);
        if (*p != '/')
            continue;
        size_t len = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz._/") + 1;
        char path[64];
        snprintf(path, sizeof path, "%.*s", (int)len, p);
        n += fetch_ok(fx, path, where);
    }
    return n;
}

/* The user's guide, which lists the status server's endpoints as `GET /...`. */
#define ENDPOINTS_DOC "docs/guide.md"

/* Every endpoint that the user's guide, config.yaml's comment and the server's
 * own 404 text name exists. */
static void test_documented_endpoints_exist(void **state)
{
    fixture *fx = *state;
    dt_error err;
    assert_int_equal(dt_report_write_svg(&fx->rs, &err), 0);
    assert_int_equal(dt_report_write_html(&fx->rs, &err), 0);
    char *guide = dt_test_slurp(ENDPOINTS_DOC), *config = dt_test_slurp("config.yaml");
    assert_non_null(guide);
    assert_non_null(config);
    assert_true(walk_paths(fx, guide, "`GET ", ENDPOINTS_DOC) >= 5);
    const char *listen = strstr(config, "listen:");
    assert_non_null(listen);
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(listen, "\n"), listen);
    assert_true(walk_paths(fx, line, " ", "config.yaml") + walk_paths(fx, line, "(", "config.yaml") >= 5);
    dt_http_reply reply;
    get(fx, "GET", "/no/such/page", &reply);
    assert_int_equal(reply.status, 404);
    assert_true(walk_paths(fx, reply.body, " ", "the 404 text") >= 5);
    dt_server_reply_free(&reply);
    free(guide);
    free(config);
}

/* During warm-up the page, /status and `dtune status` say which task of how
 * many is being warmed up, and show no latency, no NaN and no chart. */
static void test_warm_up_says_warm_up(void **state)
{
    fixture *fx = *state;
    pthread_mutex_lock(&fx->rs.lock);
    snprintf(fx->rs.phase, sizeof fx->rs.phase, "warm-up");
    fx->rs.warmup_task = 1;
    fx->rs.npoints = 0;
    fx->rs.ndecisions = 0;
    fx->rs.slot = 0;
    fx->rs.slot_started = -1;
    fx->rs.current_task = -1;
    fx->rs.start_latency_ms = 0;
    fx->rs.latency_ms = 0.6171875; /* the tasks measured so far: not a model latency */
    pthread_mutex_unlock(&fx->rs.lock);
    dt_http_reply reply;
    get(fx, "GET", "/", &reply);
    assert_int_equal(reply.status, 200);
    assert_non_null(strstr(reply.body, "warming up: task 2 of 3 (we&quot;ird&lt;b&gt;), 128 trials"));
    assert_null(strstr(reply.body, "<svg"));
    assert_null(strstr(reply.body, "0.6172"));
    assert_null(strstr(reply.body, "NaN"));
    assert_null(strstr(reply.body, "nan"));
    dt_server_reply_free(&reply);
    get(fx, "GET", "/status", &reply);
    json_t *st = json_loads(reply.body, 0, NULL);
    assert_non_null(st);
    json_t *w = json_object_get(st, "warmup");
    assert_int_equal(json_integer_value(json_object_get(w, "task")), 2);
    assert_int_equal(json_integer_value(json_object_get(w, "of")), 3);
    assert_true(json_is_null(json_object_get(st, "model_latency_ms")));
    json_decref(st);
    dt_server_reply_free(&reply);
    char out[4096];
    char *argv[] = { "status", "--addr", fx->addr, NULL };
    assert_int_equal(dt_test_capture(dt_cmd_status, 3, argv, out, sizeof out), 0);
    assert_non_null(strstr(out, "warming up: task 2 of 3"));
    assert_null(strstr(out, "nan"));
}

static void *hammer(void *arg)
{
    const fixture *fx = arg;
    for (int i = 0; i < 15; i++) {
        dt_http_reply reply;
        dt_error err;
        if (dt_server_request(fx->addr, "GET", i % 2 ? "/status" : "/metrics", TIMEOUT_MS, &reply,
                              &err) != 0 ||
            reply.status != 200) {
            return (void *)1;
        }
        dt_server_reply_free(&reply);
    }
    return NULL;
}

static void test_concurrent_clients(void **state)
{
    fixture *fx = *state;
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, hammer, fx), 0);
    for (int i = 0; i < 30; i++) { /* the daemon keeps writing meanwhile */
        pthread_mutex_lock(&fx->rs.lock);
        dt_latency_point p = { 500.0 + i, 20 + i, i % 3, 2.0 - 0.01 * i };
        assert_int_equal(dt_run_state_add_point(&fx->rs, &p), 0);
        fx->rs.latency_ms = p.model_latency_ms;
        pthread_mutex_unlock(&fx->rs.lock);
    }
    for (int i = 0; i < 4; i++) {
        void *failed = (void *)1;
        assert_int_equal(pthread_join(threads[i], &failed), 0);
        assert_null(failed);
    }
}

static void test_port_in_use_and_bad_addresses(void **state)
{
    fixture *fx = *state;
    dt_server *other = NULL;
    dt_error err;
    assert_int_equal(dt_server_start(fx->addr, &fx->rs, &other, &err), DT_EIO);
    assert_null(other);
    assert_non_null(strstr(err.msg, fx->addr));
    assert_non_null(strstr(err.msg, "already in use"));
    assert_int_equal(dt_server_start("off", &fx->rs, &other, &err), 0);
    assert_null(other);
    assert_int_equal(dt_server_port(other), 0);
    dt_server_stop(other);
    assert_int_equal(dt_server_start("nonsense", &fx->rs, &other, &err), DT_EINVAL);
    assert_int_equal(dt_server_start("127.0.0.1:99999", &fx->rs, &other, &err), DT_EINVAL);
    assert_int_equal(dt_server_start("::1:8080", &fx->rs, &other, &err), DT_EINVAL);
}

static void test_ipv6_loopback(void **state)
{
    fixture *fx = *state;
    dt_server *v6 = NULL;
    dt_error err;
    if (dt_server_start("[::1]:0", &fx->rs, &v6, &err) != 0) {
        print_message("no IPv6 loopback here (%s); skipped\n", err.msg);
        skip();
    }
    char addr[64];
    snprintf(addr, sizeof addr, "[::1]:%d", dt_server_port(v6));
    dt_http_reply reply;
    assert_int_equal(dt_server_request(addr, "GET", "/status", TIMEOUT_MS, &reply, &err), 0);
    assert_int_equal(reply.status, 200);
    dt_server_reply_free(&reply);
    dt_server_stop(v6);
}

/* Runs dt_cmd_status with stdout and stderr captured; returns its status. */
static int run_status(const char *addr, char *out, size_t len)
{
    char *argv[] = { "status", "--addr", (char *)addr, NULL };
    return dt_test_capture(dt_cmd_status, 3, argv, out, len);
}

static void test_status_command(void **state)
{
    fixture *fx = *state;
    char out[8192];
    assert_int_equal(run_status(fx->addr, out, sizeof out), 0);
    assert_non_null(strstr(out, "tiny on cpu"));
    assert_non_null(strstr(out, "2.3438 ms now"));
    assert_non_null(strstr(out, "2.48x faster"));
    assert_non_null(strstr(out, "\nconv1 "));
    assert_non_null(strstr(out, "tuning")); /* fc holds the slot */

    /* -c: the address is the config's server.listen */
    char dir[64], cfg[128], cwd[512];
    dt_test_tmpdir(dir, sizeof dir);
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(cfg, sizeof cfg, "%s/run.yaml", dir);
    assert_int_equal(dt_test_write_file(cfg, "model: %s/models/tiny.yaml\nserver: {listen: \"%s\"}\n",
                                        cwd, fx->addr), 0);
    char *with_config[] = { "status", "-c", cfg, NULL };
    assert_int_equal(dt_test_capture(dt_cmd_status, 3, with_config, out, sizeof out), 0);
    assert_non_null(strstr(out, "2.3438 ms now"));
    assert_int_equal(dt_test_write_file(cfg, "model: %s/models/tiny.yaml\nserver: {listen: \"off\"}\n",
                                        cwd), 0);
    assert_int_equal(dt_test_capture(dt_cmd_status, 3, with_config, out, sizeof out), 2);
    assert_non_null(strstr(out, "no status server"));
    assert_int_equal(dt_test_write_file(cfg, "model: %s/models/tiny.yaml\nbogus: 1\n", cwd), 0);
    assert_int_equal(dt_test_capture(dt_cmd_status, 3, with_config, out, sizeof out), 2);
    assert_non_null(strstr(out, "run.yaml:2:1"));
    dt_test_remove_tree(dir);

    dt_server_stop(fx->server); /* nothing listens any more */
    fx->server = NULL;
    assert_int_equal(run_status(fx->addr, out, sizeof out), 1);
    assert_non_null(strstr(out, fx->addr));
    assert_non_null(strstr(out, "cannot connect"));
}

/* ---- bounds: idle connections and request size ------------------------------- */

/* A raw TCP connection to the fixture's server. */
static int connect_raw(const fixture *fx)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)dt_server_port(fx->server)) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads what the server sends until it closes (or resets) the connection;
 * the first bytes go to head. Returns the seconds that took, or -1 when it
 * was still open after limit_s. */
static double wait_closed(int fd, char *head, size_t len, double limit_s)
{
    double t0 = seconds_now();
    size_t used = 0;
    head[0] = '\0';
    for (;;) {
        double left = limit_s - (seconds_now() - t0);
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (left <= 0 || poll(&p, 1, (int)(left * 1e3) + 1) == 0)
            return -1;
        char chunk[4096];
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0)
            return seconds_now() - t0;
        size_t take = (size_t)n < len - 1 - used ? (size_t)n : len - 1 - used;
        memcpy(head + used, chunk, take);
        used += take;
        head[used] = '\0';
    }
}

/* A client that sends half a request and then nothing is cut off after
 * DT_SERVER_IDLE_TIMEOUT_S; other clients are answered meanwhile. */
static void test_idle_connection_is_closed(void **state)
{
    fixture *fx = *state;
    char head[256];
    int fd = connect_raw(fx);
    const char *partial = "GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    assert_int_equal(send(fd, partial, strlen(partial), MSG_NOSIGNAL), (ssize_t)strlen(partial));
    dt_http_reply reply;
    get(fx, "GET", "/status", &reply);
    assert_int_equal(reply.status, 200);
    dt_server_reply_free(&reply);
    double took = wait_closed(fd, head, sizeof head, DT_SERVER_IDLE_TIMEOUT_S + 10);
    close(fd);
    if (took < 0)
        fail_msg("an idle connection was still open after %d s", DT_SERVER_IDLE_TIMEOUT_S + 10);
    assert_true(took > DT_SERVER_IDLE_TIMEOUT_S - 2);
    assert_string_equal(head, "");     /* nothing answered to half a request */
}

/* A request line or header over DT_SERVER_CONNECTION_BYTES is refused and
 * its connection closed, without the server reading it all; one well under
 * it is answered; the server goes on answering. */
static void test_request_size_is_limited(void **state)
{
    fixture *fx = *state;
    char head[256];
    size_t big = DT_SERVER_CONNECTION_BYTES + 4096;    /* under libmicrohttpd's own default */
    char *text = malloc(big + 128);
    assert_non_null(text);
    for (int header = 0; header < 2; header++) {
        int fd = connect_raw(fx);
        int n = snprintf(text, 128, header ? "GET /status HTTP/1.1\r\nX-Big: " : "GET /");
        memset(text + n, 'a', big);
        snprintf(text + n + big, 128, header ? "\r\n\r\n" : " HTTP/1.1\r\nHost: x\r\n\r\n");
        /* the server may stop reading (and close) before all of it is sent */
        for (size_t sent = 0, len = strlen(text); sent < len;) {
            ssize_t w = send(fd, text + sent, len - sent, MSG_NOSIGNAL);
            if (w <= 0)
                break;
            sent += (size_t)w;
        }
        double took = wait_closed(fd, head, sizeof head, 10);
        close(fd);
        if (took < 0)
            fail_msg("a %zu-byte %s kept its connection open", big, header ? "header" : "path");
        if (!strstr(head, header ? " 431 " : " 414 "))
            fail_msg("a %zu-byte %s was answered: %.80s", big, header ? "header" : "path", head);
    }
    free(text);
    dt_http_reply reply;
    char path[900 + 2] = "/";          /* as long as dt_server_request sends */
    memset(path + 1, 'b', 900);
    path[901] = '\0';
    get(fx, "GET", path, &reply);
    assert_int_equal(reply.status, 404);
    dt_server_reply_free(&reply);
    get(fx, "GET", "/status", &reply);
    assert_int_equal(reply.status, 200);
    dt_server_reply_free(&reply);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_status_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_follows_the_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drift_and_confirm_share, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_found_and_method, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latency_svg_and_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_clients, setup, teardown),
        cmocka_unit_test_setup_teardown(test_port_in_use_and_bad_addresses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ipv6_loopback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_documented_endpoints_exist, setup, teardown),
        cmocka_unit_test_setup_teardown(test_warm_up_says_warm_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_connection_is_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_size_is_limited, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
