/* cmd_status.c — `dtune status [-c config.yaml | --addr HOST:PORT]`: asks a running
 * `dtune tune` for GET /status over loopback (dt_server_request, plain
 * HTTP/1.0 with a time-out) and prints the JSON as a table: the run, its
 * time and slot, model latency now, at start and the speed-up, the target,
 * and one row per task. With -c the address is the config's server.listen
 * (the file the run was started with); --addr names it directly.
 */
#include "dtune/cli.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/config.h"
#include "dtune/report.h"
#include "dtune/server.h"
#include "dtune/util.h"

/* The whole request, connecting to the last byte of the reply: default and
 * the largest --timeout. */
#define STATUS_TIMEOUT_S 5
#define STATUS_TIMEOUT_MAX_S 3600

#define STR_(x) #x
#define STR(x) STR_(x)

static void usage(FILE *to)
{
    fputs("usage: dtune status [-c config.yaml | --addr HOST:PORT] [--timeout S]\n"
          "\n"
          "Shows a running tuner's progress, read from its status server (GET /status).\n"
          "\n"
          "  -c, --config FILE the config the run was started with: its server.listen\n"
          "  --addr HOST:PORT  the tuner's server.listen address (default " DT_SERVER_DEFAULT_LISTEN
          ")\n"
          "  --timeout S       give up after S seconds in all (default " STR(STATUS_TIMEOUT_S)
          ", at most " STR(STATUS_TIMEOUT_MAX_S) "), exit 1\n"
          "  -h, --help        show this help\n", to);
}

/* server.listen of the config at path into addr; returns -1 or an exit status. */
static int addr_from_config(const char *path, char *addr, size_t len)
{
    dt_config *cfg = malloc(sizeof *cfg);   /* large: paths of PATH_MAX */
    if (!cfg) {
        fprintf(stderr, "dtune status: out of memory\n");
        return 1;
    }
    dt_error err;
    int rc = dt_config_load(path, cfg, false, &err), status = -1;
    if (rc) {
        fprintf(stderr, "dtune status: %s\n", err.msg);
        status = dt_error_exit_status(rc);
    } else if (dt_server_listen_off(cfg->server_listen)) {
        fprintf(stderr, "dtune status: %s sets server.listen off: a run started with it has no "
                        "status server\n", path);
        status = 2;
    } else {
        snprintf(addr, len, "%s", cfg->server_listen);
    }
    free(cfg);
    return status;
}

/* --timeout's value in seconds, or -1 after saying why not. */
static double parse_timeout(const char *text)
{
    char *end;
    double s = strtod(text, &end);
    if (end == text || *end || !(s > 0 && s <= STATUS_TIMEOUT_MAX_S)) {
        fprintf(stderr, "dtune status: --timeout '%s': expected seconds above 0, at most %d\n", text,
                STATUS_TIMEOUT_MAX_S);
        return -1;
    }
    return s;
}

/* Returns the exit status: 0 help shown, 2 usage error, -1 go on with addr
 * and *timeout_s. */
static int parse_args(int argc, char **argv, char *addr, size_t len, double *timeout_s)
{
    snprintf(addr, len, "%s", DT_SERVER_DEFAULT_LISTEN);
    *timeout_s = STATUS_TIMEOUT_S;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            if ((*timeout_s = parse_timeout(argv[++i])) < 0)
                return 2;
        } else if (strcmp(argv[i], "--addr") == 0 && i + 1 < argc) {
            snprintf(addr, len, "%s", argv[++i]);
        } else if (strncmp(argv[i], "--addr=", 7) == 0) {
            snprintf(addr, len, "%s", argv[i] + 7);
        } else if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
            int status = addr_from_config(argv[++i], addr, len);
            if (status >= 0)
                return status;
        } else {
            fprintf(stderr, "dtune status: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    return -1;
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "-";
}

/* A number field; NAN when absent or null. */
static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void print_run(json_t *st)
{
    char elapsed[32], budget[32], reached[32];
    dt_report_format_duration(num(st, "elapsed_s"), elapsed, sizeof elapsed);
    dt_report_format_duration(num(st, "budget_s"), budget, sizeof budget);
    dt_report_format_duration(num(st, "reached_at_s"), reached, sizeof reached);
    printf("run %s: %s on %s, policy %s, strategy %s, phase %s\n", str(st, "run"),
           str(st, "model"), str(st, "target"), str(st, "policy"), str(st, "strategy"),
           str(st, "phase"));
    char left[32], in_slot[32];
    dt_report_format_duration(num(st, "budget_left_s"), left, sizeof left);
    dt_report_format_duration(num(st, "slot_elapsed_s"), in_slot, sizeof in_slot);
    printf("elapsed %s of %s (%s left), slot %.0f (%s in), task %s\n", elapsed, budget, left,
           num(st, "slot"), in_slot, str(st, "current_task"));
    json_t *warmup = json_object_get(st, "warmup");
    if (json_is_object(warmup)) {
        printf("warming up: task %.0f of %.0f (%s), %.0f trials\n\n", num(warmup, "task"),
               num(warmup, "of"), str(warmup, "name"), num(warmup, "trials"));
        return;
    }
    printf("model latency %.4f ms now, %.4f ms at start, %.2fx faster",
           num(st, "model_latency_ms"), num(st, "start_latency_ms"), num(st, "speedup"));
    double target = num(st, "target_latency_ms");
    if (isfinite(target))
        printf("; target %.4f ms, %s%s", target,
               isfinite(num(st, "reached_at_s")) ? "reached after " : "not reached",
               isfinite(num(st, "reached_at_s")) ? reached : "");
    printf("\n\n");
}

static void print_tasks(json_t *st)
{
    json_t *tasks = json_object_get(st, "tasks"), *t;
    size_t i;
    const char *current = str(st, "current_task");
    printf("%-16s %-16s %-34s %5s %11s %6s %-5s %10s %7s %6s  %s\n", "task", "kind", "shape",
           "count", "best GFLOPS", "%bound", "level", "best ms", "trials", "slots", "state");
    json_array_foreach(tasks, i, t) {
        double share = num(t, "bound_share"), best = num(t, "best_gflops");
        const char *level = str(t, "bound_level");
        const char *failed = json_string_value(json_object_get(t, "failed"));
        const char *state = failed ? "FAILED (counted at its reference's time)"
                            : json_is_true(json_object_get(t, "finished")) ? "finished"
                            : strcmp(str(t, "name"), current) == 0  ? "tuning"
                                                                    : "";
        printf("%-16s %-16s %-34s %5.0f %11.1f %5.1f%% %-5s %10.4f %7.0f %6.0f  %s\n", str(t, "name"),
               str(t, "kind"), str(t, "shape"), num(t, "count"), best,
               isfinite(share) ? 100 * share : 0, level[0] ? level : "-", num(t, "best_latency_ms"), num(t, "trials"),
               num(t, "slots"), state);
    }
}

int dt_cmd_status(int argc, char **argv)
{
    char addr[DT_CONFIG_LISTEN_MAX];
    double timeout_s;
    int status = parse_args(argc, argv, addr, sizeof addr, &timeout_s);
    if (status >= 0)
        return status;
    dt_http_reply reply;
    dt_error err;
    int rc = dt_server_request(addr, "GET", "/status", (int)(timeout_s * 1e3), &reply, &err);
    if (rc) {
        fprintf(stderr, "dtune status: %s (is `dtune tune` running with server.listen %s?)\n",
                err.msg, addr);
        return rc == DT_EINVAL ? 2 : 1;
    }
    json_error_t jerr;
    bool ok = reply.status == 200 && dt_json_too_deep(reply.body, strlen(reply.body), DT_INPUT_MAX_DEPTH) < 0;
    json_t *st = ok ? json_loads(reply.body, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    if (!json_is_object(st)) {
        fprintf(stderr, "dtune status: %s answered HTTP %d without a dtune status\n", addr,
                reply.status);
        json_decref(st);
        dt_server_reply_free(&reply);
        return 1;
    }
    print_run(st);
    print_tasks(st);
    json_decref(st);
    dt_server_reply_free(&reply);
    return fflush(stdout) == 0 ? 0 : 1;
}
