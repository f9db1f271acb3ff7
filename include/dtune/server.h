/* server.h — the status server of a tuning run (libmicrohttpd), and the small
 * HTTP/1.0 client `dtune status` and the tests use to ask it.
 *
 * The server answers from its own thread, reading the daemon's dt_run_state
 * through dt_run_state_copy (under the state's mutex), and serves
 * RUN_DIR/latency.svg and RUN_DIR/report.html as the report module last
 * wrote them:
 *
 *   GET /             the run's report (dt_report_html) with the live line;
 *                     it reloads itself every DT_REPORT_REFRESH_SECONDS
 *   GET /status       JSON: dt_report_run_json with live (the run, the
 *                     clock, slot and task, the scheduling decisions, the
 *                     tasks)
 *   GET /metrics      Prometheus text exposition format (version 0.0.4)
 *   GET /latency.svg  the chart (404 until the first slot has written it)
 *   GET /report.html  the report as a file (404 until the first slot)
 *
 * HEAD is answered like GET. Other paths get 404, other methods 405 with an
 * "Allow: GET, HEAD" header.
 */
#ifndef DTUNE_SERVER_H
#define DTUNE_SERVER_H

#include <stddef.h>

#include <stdbool.h>

#include "dtune/error.h"
#include "dtune/runstate.h"

typedef struct dt_server dt_server;

#define DT_SERVER_DEFAULT_LISTEN "127.0.0.1:8080"

/* The server's bounds, so no client can hold it: a connection idle this
 * many seconds is closed (a slow-loris client that trickles its request
 * included); each connection's memory (request line, headers and the
 * reply's head; the body is apart) is at most DT_SERVER_CONNECTION_BYTES, a
 * longer request line or header answered 414 or 431 and closed; at most
 * DT_SERVER_MAX_CONNECTIONS at once. */
#define DT_SERVER_IDLE_TIMEOUT_S 10
#define DT_SERVER_CONNECTION_BYTES (16 << 10)
#define DT_SERVER_MAX_CONNECTIONS 64

/* Starts serving rs at listen, "HOST:PORT" (an IPv4 or IPv6 literal, "[::1]:
 * PORT" for IPv6, or a host name), or just "PORT" for 127.0.0.1:PORT. Only
 * that address is bound, so the default is reachable from this machine
 * alone. Port 0 picks a free port (see dt_server_port). listen "off" or ""
 * (or NULL) starts nothing: *out = NULL and 0 is returned. rs must outlive
 * the server. Returns 0, DT_EINVAL (malformed address, unknown host), DT_EIO
 * (address in use or not bindable; the message names it), DT_ELIB,
 * DT_ENOMEM. */
int dt_server_start(const char *listen, dt_run_state *rs, dt_server **out, dt_error *err);

/* Whether listen (server.listen) asks for no server: NULL, "" or "off". */
bool dt_server_listen_off(const char *listen);

/* The port the server listens on; 0 for NULL. */
int dt_server_port(const dt_server *server);

/* Stops answering (waits for the server thread) and frees server; NULL is
 * accepted. */
void dt_server_stop(dt_server *server);

/* One reply of dt_server_request; free with dt_server_reply_free. */
typedef struct dt_http_reply {
    int status;                /* e.g. 200 */
    char *headers;             /* the header lines, "Name: value\r\n" each */
    char *body;                /* NUL-terminated (body_len bytes before it) */
    size_t body_len;
} dt_http_reply;

/* Sends "METHOD PATH HTTP/1.0" to addr ("HOST:PORT" as for
 * dt_server_start) and reads the whole reply, giving up timeout_ms after the
 * call began, whatever the server sends (one deadline for connecting,
 * sending and reading). Returns 0 (any HTTP status),
 * DT_EINVAL (bad address), DT_EIO (cannot connect, timed out, malformed
 * reply; the message names addr), DT_ENOMEM. */
int dt_server_request(const char *addr, const char *method, const char *path, int timeout_ms,
                      dt_http_reply *reply, dt_error *err);

void dt_server_reply_free(dt_http_reply *reply);

#endif
