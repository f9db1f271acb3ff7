/* server.c — the run's status server and the small HTTP client that asks it
 * (see server.h).
 *
 * Server. libmicrohttpd runs its own polling thread (MHD_USE_INTERNAL_POLLING_
 * THREAD) bound to the one configured address. Every request is answered on
 * its first callback, before any body is read: the method is checked (GET and
 * HEAD only), the path is looked up in a table of pages, and the page is built
 * from a snapshot of the run state (dt_run_state_copy, so the daemon's lock is
 * held only for the copy). A page is a malloc'd body handed to MHD, which
 * frees it after sending.
 *
 * Client. dt_server_request resolves HOST:PORT, connects without blocking
 * (poll with a timeout), sends an HTTP/1.0 request with "Connection: close"
 * and reads until the server closes, so no chunked decoding is needed.
 */
#include "server_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dtune/report.h"
#include "report_json.h"
#include "dtune/util.h"

struct dt_server {
    struct MHD_Daemon *daemon;
    dt_run_state *rs;
    int port;
};

/* A built page: status, content type and a malloc'd body. */
typedef struct page {
    unsigned status;
    const char *type;
    char *body;
    size_t len;
} page;

typedef int (*page_builder)(const dt_run_state *snap, page *out);

#define MAX_REPLY_BYTES (64u << 20)
#define READ_CHUNK (1u << 14)   /* bytes made room for before each read */

/* ---- addresses ------------------------------------------------------------ */

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* Splits "HOST:PORT", "[V6]:PORT" or "PORT" (host 127.0.0.1). */
static int split_addr(const char *addr, char *host, size_t hlen, char *port, size_t plen,
                      dt_error *err)
{
    const char *colon = strrchr(addr, ':');
    if (all_digits(addr)) {
        snprintf(host, hlen, "127.0.0.1");
        colon = addr - 1;
    } else if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':' || (size_t)(close - addr - 1) >= hlen)
            return dt_error_set(err, DT_EINVAL, "address '%s': expected [IPv6]:PORT", addr);
        snprintf(host, hlen, "%.*s", (int)(close - addr - 1), addr + 1);
        colon = close + 1;
    } else {
        if (!colon || colon == addr || strchr(addr, ':') != colon || (size_t)(colon - addr) >= hlen)
            return dt_error_set(err, DT_EINVAL,
                                "address '%s': expected HOST:PORT (IPv6 as [ADDR]:PORT)", addr);
        snprintf(host, hlen, "%.*s", (int)(colon - addr), addr);
    }
    const char *digits = colon + 1;
    if (!all_digits(digits) || strlen(digits) > 5 || atoi(digits) > 65535)
        return dt_error_set(err, DT_EINVAL, "address '%s': port must be 0 to 65535", addr);
    snprintf(port, plen, "%s", digits);
    return 0;
}

/* Resolves addr; *res is freed by the caller with freeaddrinfo. */
static int resolve(const char *addr, struct addrinfo **res, dt_error *err)
{
    char host[256], port[8];
    int rc = split_addr(addr, host, sizeof host, port, sizeof port, err);
    if (rc)
        return rc;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICSERV };
    int gai = getaddrinfo(host, port, &hints, res);
    if (gai != 0)
        return dt_error_set(err, DT_EINVAL, "address '%s': %s", addr, gai_strerror(gai));
    return 0;
}

/* ---- pages ---------------------------------------------------------------- */

/* Closes the memory stream f that writes *buf and *len, and makes it the page. */
static int page_from_stream(FILE *f, char **buf, size_t *len, page *out)
{
    if (fclose(f) != 0) {
        free(*buf);
        return DT_ENOMEM;
    }
    out->status = MHD_HTTP_OK;
    out->body = *buf;
    out->len = *len;
    return 0;
}

static int build_status(const dt_run_state *rs, page *out)
{
    json_t *doc = dt_report_run_json(rs, true);
    char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                           JSON_REAL_PRECISION(12))
                     : NULL;
    json_decref(doc);
    if (!text)
        return DT_ENOMEM;
    out->status = MHD_HTTP_OK;
    out->type = "application/json";
    out->body = text;
    out->len = strlen(text);
    return 0;
}

/* One Prometheus sample value: Go-style NaN and infinities. */
static void prom_value(FILE *f, double v)
{
    if (isnan(v))
        fputs("NaN", f);
    else if (isinf(v))
        fputs(v > 0 ? "+Inf" : "-Inf", f);
    else
        fprintf(f, "%.12g", v);
}

/* The HELP and TYPE lines of one metric family. */
static void prom_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one sample without labels. */
static void prom_single(FILE *f, const char *name, const char *type, const char *help, double v)
{
    prom_family(f, name, type, help);
    fprintf(f, "%s ", name);
    prom_value(f, v);
    fputc('\n', f);
}

/* A label value with \, " and newline escaped as the exposition format asks. */
static void prom_label(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

typedef double (*task_field)(const dt_task_state *t);

static double task_best_flops(const dt_task_state *t) { return t->best_gflops * 1e9; }
static double task_best_latency(const dt_task_state *t) { return t->best_latency_ms / 1e3; }
static double task_bound(const dt_task_state *t) { return t->bound_ms / 1e3; }
static double task_bound_share(const dt_task_state *t) { return dt_task_state_bound_share(t); }
static double task_trials(const dt_task_state *t) { return t->trials; }
static double task_slots(const dt_task_state *t) { return t->slots; }
static double task_finished(const dt_task_state *t) { return t->finished; }

/* One family with a sample per task, labelled task="NAME". */
static void prom_per_task(FILE *f, const dt_run_state *rs, const char *name, const char *type,
                          const char *help, task_field field)
{
    prom_family(f, name, type, help);
    for (int k = 0; k < rs->ntasks; k++) {
        fprintf(f, "%s{task=\"", name);
        prom_label(f, rs->tasks[k].name);
        fputs("\"} ", f);
        prom_value(f, field(&rs->tasks[k]));
        fputc('\n', f);
    }
}

/* 1 for the task holding the slot (/status's current_task), 0 for the rest. */
static void prom_current_task(FILE *f, const dt_run_state *rs)
{
    prom_family(f, "dtune_task_tuning", "gauge", "1 for the task holding the current slot.");
    for (int k = 0; k < rs->ntasks; k++) {
        fputs("dtune_task_tuning{task=\"", f);
        prom_label(f, rs->tasks[k].name);
        fprintf(f, "\"} %d\n", k == rs->current_task);
    }
}

/* Prometheus conventions: base units (seconds, FLOP/s), counters named
 * _total for what only grows, gauges for the rest, one HELP and TYPE per
 * family. Latencies are NaN until warm-up has measured every task. */
static int build_metrics(const dt_run_state *rs, page *out)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return DT_ENOMEM;
    double latency = rs->npoints > 0 ? rs->latency_ms / 1e3 : NAN;
    double start = rs->start_latency_ms > 0 ? rs->start_latency_ms / 1e3 : NAN;
    prom_single(f, "dtune_model_latency_seconds", "gauge",
                "Model latency now: sum over tasks of count x best latency.", latency);
    prom_single(f, "dtune_start_latency_seconds", "gauge", "Model latency after warm-up.", start);
    prom_single(f, "dtune_target_latency_seconds", "gauge", "Latency target (0: none).",
                rs->target_latency_ms / 1e3);
    prom_single(f, "dtune_target_reached", "gauge", "1 once the model latency met the target.",
                rs->reached_at >= 0);
    prom_single(f, "dtune_elapsed_seconds_total", "counter", "Tuning time spent, across resumes.",
                rs->elapsed);
    prom_single(f, "dtune_budget_seconds", "gauge", "Tuning time budget of the run.", rs->budget);
    prom_single(f, "dtune_budget_left_seconds", "gauge", "Tuning time budget not yet spent.",
                dt_run_state_budget_left(rs));
    prom_single(f, "dtune_slots_total", "counter", "Tuning slots started (the current slot's number).",
                rs->slot > 0 ? rs->slot : 0);
    prom_single(f, "dtune_machine_speed_ratio", "gauge",
                "The machine's speed relative to the run's start, from a fixed reference config "
                "timed at slot ends (1: unchanged; NaN before a reading).",
                rs->machine_speed > 0 ? rs->machine_speed : NAN);
    prom_single(f, "dtune_confirmations_total", "counter",
                "Would-be new bests timed again beside their task's best.", rs->confirmations);
    prom_single(f, "dtune_confirmed_total", "counter",
                "Confirmations whose candidate became the best.", rs->confirmed);
    prom_single(f, "dtune_confirm_time_share", "gauge",
                "The confirmations' share of the logged measurement time.",
                dt_run_state_confirm_share(rs));
    prom_single(f, "dtune_history_bytes", "gauge",
                "Bytes the run keeps as it goes: the tuners' histories and training workspaces, "
                "the transfer store, and the latency curve, decisions and new bests.",
                dt_run_state_history_bytes(rs));
    prom_per_task(f, rs, "dtune_task_best_flops", "gauge",
                  "Best measured FLOP per second of a task (0 until measured).", task_best_flops);
    prom_per_task(f, rs, "dtune_task_best_latency_seconds", "gauge",
                  "Best latency of one run of a task (0 until measured).", task_best_latency);
    prom_per_task(f, rs, "dtune_task_bound_seconds", "gauge",
                  "A task's bound: max(useful FLOPs / peak, bytes read / read stream, bytes moved / "
                  "the faster stream of the level holding its working set) (0: unknown).", task_bound);
    prom_per_task(f, rs, "dtune_task_bound_share", "gauge",
                  "A task's bound over its best latency (0 until measured or with no bound).",
                  task_bound_share);
    prom_per_task(f, rs, "dtune_task_trials_total", "counter", "Configurations measured for a task.",
                  task_trials);
    prom_per_task(f, rs, "dtune_task_slots_total", "counter", "Slots a task has been given.",
                  task_slots);
    prom_per_task(f, rs, "dtune_task_finished", "gauge", "1 once a task's tuning is finished.",
                  task_finished);
    prom_current_task(f, rs);
    out->type = "text/plain; version=0.0.4; charset=utf-8";
    return page_from_stream(f, &buf, &len, out);
}

static int build_html(const dt_run_state *rs, page *out)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return DT_ENOMEM;
    dt_report_html(f, rs, true, NULL);
    out->type = "text/html; charset=utf-8";
    return page_from_stream(f, &buf, &len, out);
}

static int text_page(page *out, unsigned status, const char *text)
{
    out->status = status;
    out->type = "text/plain; charset=utf-8";
    out->body = strdup(text);
    out->len = out->body ? strlen(text) : 0;
    return out->body ? 0 : DT_ENOMEM;
}

/* Waits for events on fd until deadline (dt_now_seconds); returns 0, or -1
 * with errno (ETIMEDOUT once the deadline has passed). One deadline for the
 * whole request: a server that sends a byte now and then cannot hold the
 * client past it. */
static int wait_fd(int fd, short events, double deadline)
{
    struct pollfd pfd = { .fd = fd, .events = events };
    int n;
    do {
        double left_ms = (deadline - dt_now_seconds()) * 1e3;
        n = left_ms <= 0 ? 0 : poll(&pfd, 1, left_ms > 1e9 ? 1000000000 : (int)left_ms + 1);
    } while (n < 0 && errno == EINTR);
    if (n == 0)
        errno = ETIMEDOUT;
    return n > 0 ? 0 : -1;
}

/* Reads fd until its end, or the peer's close for a socket (at most
 * MAX_REPLY_BYTES), into a malloc'd NUL-terminated buffer; NULL on an
 * error, too much, or (sock) no input before deadline. A socket (sock
 * true: the client's, non-blocking) is polled before each read; a file
 * is read as it is. */
static char *read_all(int fd, bool sock, double deadline, size_t *len)
{
    dt_buf buf = { 0 };
    while (buf.len < MAX_REPLY_BYTES && dt_buf_reserve(&buf, READ_CHUNK) == 0) {
        if (sock && wait_fd(fd, POLLIN, deadline) != 0)
            break;
        ssize_t n = read(fd, buf.data + buf.len, buf.cap - buf.len - 1);
        if (n < 0 && (errno == EINTR || (sock && errno == EAGAIN)))
            continue;
        if (n < 0)
            break;
        if (n == 0) {
            buf.data[buf.len] = '\0';
            *len = buf.len;
            return buf.data;
        }
        buf.len += (size_t)n;
    }
    dt_buf_free(&buf);
    return NULL;
}

/* Serves RUN_DIR/name as the report module last wrote it. */
static int run_file_page(const dt_run_state *rs, const char *name, const char *type, page *out)
{
    char path[DT_PATH_MAX + 32], msg[96];
    snprintf(path, sizeof path, "%s/%s", rs->run_dir[0] ? rs->run_dir : ".", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        snprintf(msg, sizeof msg, "%s is written after the first slot\n", name);
        return text_page(out, MHD_HTTP_NOT_FOUND, msg);
    }
    snprintf(msg, sizeof msg, "%s cannot be read\n", name);
    if (fd < 0)
        return text_page(out, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
    out->body = read_all(fd, false, 0, &out->len);
    close(fd);
    if (!out->body)
        return text_page(out, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
    out->status = MHD_HTTP_OK;
    out->type = type;
    return 0;
}

static int build_svg(const dt_run_state *rs, page *out)
{
    return run_file_page(rs, "latency.svg", "image/svg+xml", out);
}

static int build_report(const dt_run_state *rs, page *out)
{
    return run_file_page(rs, "report.html", "text/html; charset=utf-8", out);
}

static const struct {
    const char *path;
    page_builder build;
} routes[] = {
    { "/", build_html },
    { "/status", build_status },
    { "/metrics", build_metrics },
    { "/latency.svg", build_svg },
    { "/report.html", build_report },
};

/* ---- MHD glue ------------------------------------------------------------- */

/* Hands p to MHD (which frees the body) and queues it. */
static enum MHD_Result send_page(struct MHD_Connection *conn, page *p, const char *allow)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(p->len, p->body,
                                                                MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(p->body);
        return MHD_NO;
    }
    enum MHD_Result ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, p->type);
    if (ok == MHD_YES)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (ok == MHD_YES && allow)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (ok == MHD_YES)
        ok = MHD_queue_response(conn, p->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result serve_route(dt_server *s, struct MHD_Connection *conn, page_builder build)
{
    dt_run_state snap;
    page p = { 0 };
    if (dt_run_state_copy(&snap, s->rs) != 0)
        return MHD_NO;
    int rc = build(&snap, &p);
    dt_run_state_destroy(&snap);
    if (rc != 0)
        return MHD_NO;
    return send_page(conn, &p, NULL);
}

static enum MHD_Result handle_request(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    page p = { 0 };
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        if (text_page(&p, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are answered here\n"))
            return MHD_NO;
        return send_page(conn, &p, "GET, HEAD");
    }
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(url, routes[i].path) == 0)
            return serve_route(cls, conn, routes[i].build);
    char known[256] = "not found; the pages are";
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), " %s", routes[i].path);
    snprintf(known + strlen(known), sizeof known - strlen(known), "\n");
    if (text_page(&p, MHD_HTTP_NOT_FOUND, known))
        return MHD_NO;
    return send_page(conn, &p, NULL);
}

/* Explains why addr cannot be listened on, by trying to bind it. */
static int bind_error(const struct addrinfo *ai, const char *addr, dt_error *err)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    int one = 1, e = 0;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1) != 0)
        e = errno;
    if (fd >= 0)
        close(fd);
    if (e == EADDRINUSE)
        return dt_error_set(err, DT_EIO,
                            "status server: %s is already in use (another dtune running? "
                            "set server.listen to another port, or \"off\")", addr);
    if (e)
        return dt_error_set(err, DT_EIO, "status server: cannot listen on %s: %s", addr,
                            strerror(e));
    return dt_error_set(err, DT_ELIB, "status server: libmicrohttpd could not start on %s", addr);
}

static struct MHD_Daemon *start_daemon(const struct addrinfo *ai, dt_server *s)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    return MHD_start_daemon(flags, 0, NULL, NULL, handle_request, s, MHD_OPTION_SOCK_ADDR,
                            ai->ai_addr, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)DT_SERVER_IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                            (size_t)DT_SERVER_CONNECTION_BYTES, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)DT_SERVER_MAX_CONNECTIONS, MHD_OPTION_END);
}

bool dt_server_listen_off(const char *listen)
{
    return !listen || !listen[0] || strcmp(listen, "off") == 0;
}

int dt_server_start(const char *listen, dt_run_state *rs, dt_server **out, dt_error *err)
{
    *out = NULL;
    if (dt_server_listen_off(listen))
        return 0;
    struct addrinfo *res = NULL;
    int rc = resolve(listen, &res, err);
    if (rc)
        return rc;
    dt_server *s = calloc(1, sizeof *s);
    if (!s) {
        freeaddrinfo(res);
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    }
    s->rs = rs;
    s->daemon = start_daemon(res, s);
    const union MHD_DaemonInfo *info =
        s->daemon ? MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT) : NULL;
    if (!s->daemon)
        rc = bind_error(res, listen, err);
    else if (!info)
        rc = dt_error_set(err, DT_ELIB, "status server: libmicrohttpd reports no port");
    freeaddrinfo(res);
    if (rc) {
        dt_server_stop(s);
        return rc;
    }
    s->port = info->port;
    *out = s;
    return 0;
}

int dt_server_port(const dt_server *server)
{
    return server ? server->port : 0;
}

void dt_server_stop(dt_server *server)
{
    if (!server)
        return;
    if (server->daemon)
        MHD_stop_daemon(server->daemon);
    free(server);
}

/* ---- client --------------------------------------------------------------- */

/* A connected socket to one resolved address, or -1 with errno. */
static int connect_one(const struct addrinfo *ai, double deadline)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
    if (fd < 0)
        return -1;
    int so_error = 0;
    socklen_t len = sizeof so_error;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS || wait_fd(fd, POLLOUT, deadline) != 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0 || so_error != 0) {
            int e = so_error ? so_error : errno;
            close(fd);
            errno = e;
            return -1;
        }
    }
    return fd;
}

static int connect_addr(const char *addr, double deadline, dt_error *err)
{
    struct addrinfo *res = NULL;
    int rc = resolve(addr, &res, err);
    if (rc)
        return rc;
    int fd = -1, e = ECONNREFUSED;
    for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = connect_one(ai, deadline);
        if (fd < 0)
            e = errno;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return dt_error_set(err, DT_EIO, "cannot connect to %s: %s", addr, strerror(e));
    return fd;
}

static int send_all(int fd, const char *buf, size_t len, double deadline)
{
    while (len > 0) {
        if (wait_fd(fd, POLLOUT, deadline) != 0)
            return -1;
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Splits raw ("HTTP/1.x NNN ...\r\nheaders\r\n\r\nbody") into reply. */
static int parse_reply(char *raw, size_t len, dt_http_reply *reply)
{
    char *line_end = strstr(raw, "\r\n");
    char *blank = strstr(raw, "\r\n\r\n");
    int status = 0;
    if (!line_end || !blank || sscanf(raw, "HTTP/%*d.%*d %d", &status) != 1 || status < 100)
        return -1;
    size_t head_len = (size_t)(blank + 2 - (line_end + 2));
    reply->status = status;
    reply->headers = strndup(line_end + 2, head_len);
    reply->body_len = len - (size_t)(blank + 4 - raw);
    reply->body = malloc(reply->body_len + 1);
    if (!reply->headers || !reply->body)
        return -2;
    memcpy(reply->body, blank + 4, reply->body_len);
    reply->body[reply->body_len] = '\0';
    return 0;
}

static int exchange(int fd, const char *addr, const char *request, double deadline,
                    int timeout_ms, dt_http_reply *reply, dt_error *err)
{
    size_t len = 0;
    if (send_all(fd, request, strlen(request), deadline) != 0)
        return errno == ETIMEDOUT
                   ? dt_error_set(err, DT_EIO, "%s: no reply within %.3g s: gave up", addr, timeout_ms / 1e3)
                   : dt_error_set(err, DT_EIO, "%s: sending the request: %s", addr, strerror(errno));
    errno = 0;
    char *raw = read_all(fd, true, deadline, &len);
    if (!raw && errno == ETIMEDOUT)
        return dt_error_set(err, DT_EIO, "%s: no complete reply within %.3g s: gave up", addr,
                            timeout_ms / 1e3);
    if (!raw)
        return dt_error_set(err, DT_EIO, "%s: reading the reply: %s", addr,
                            errno ? strerror(errno) : "too large");
    int rc = parse_reply(raw, len, reply);
    free(raw);
    if (rc == -2)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    if (rc)
        return dt_error_set(err, DT_EIO, "%s: not an HTTP reply", addr);
    return 0;
}

int dt_server_request(const char *addr, const char *method, const char *path, int timeout_ms,
                      dt_http_reply *reply, dt_error *err)
{
    char request[1024];
    memset(reply, 0, sizeof *reply);
    if ((size_t)snprintf(request, sizeof request,
                         "%s %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n"
                         "User-Agent: dtune\r\n\r\n",
                         method, path, addr) >= sizeof request)
        return dt_error_set(err, DT_EINVAL, "request line too long");
    double deadline = dt_now_seconds() + timeout_ms / 1e3;
    int fd = connect_addr(addr, deadline, err);
    if (fd < 0)
        return fd;
    errno = 0;
    int rc = exchange(fd, addr, request, deadline, timeout_ms, reply, err);
    close(fd);
    if (rc)
        dt_server_reply_free(reply);
    return rc;
}

void dt_server_reply_free(dt_http_reply *reply)
{
    if (!reply)
        return;
    free(reply->headers);
    free(reply->body);
    reply->headers = NULL;
    reply->body = NULL;
}

int dt_server_reply_header(const dt_http_reply *reply, const char *name, char *buf, size_t len)
{
    size_t nlen = strlen(name);
    for (const char *line = reply->headers; line && *line;) {
        const char *end = strstr(line, "\r\n");
        if (!end)
            end = line + strlen(line);
        if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            snprintf(buf, len, "%.*s", (int)(end - v), v);
            return 0;
        }
        line = *end ? end + 2 : end;
    }
    return -1;
}
