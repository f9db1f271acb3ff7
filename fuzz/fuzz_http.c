/* fuzz_http.c — raw bytes sent as one request to a status server on
 * loopback (started once per process, serving a small run state); the
 * reply is read until the server closes. What is fuzzed is the whole path
 * a request takes: libmicrohttpd's parsing, then dtune's routing and pages. */
#include "fuzz.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dtune/runstate.h"
#include "dtune/server.h"

/* A request the server keeps waiting on (it is incomplete, and the server
 * holds a half-closed connection until its idle timeout) is left after
 * this long: the wait costs fuzzing speed and finds nothing. */
#define REPLY_WAIT_MS 50

/* The server and its state live for the whole process. */
typedef struct served {
    dt_run_state rs;
    dt_server *server;
    int port;
} served;

static served the_server;
static pthread_once_t started = PTHREAD_ONCE_INIT;

static void start_server(void)
{
    dt_error err;
    if (dt_run_state_init_empty(&the_server.rs, 2) != 0 ||
        dt_server_start("127.0.0.1:0", &the_server.rs, &the_server.server, &err) != 0) {
        fprintf(stderr, "fuzz_http: cannot start the status server\n");
        abort();
    }
    the_server.port = dt_server_port(the_server.server);
}

/* Reads until the server closes the connection or REPLY_WAIT_MS pass with
 * nothing more; then resets a connection the server still holds, so that
 * held connections do not fill the server's connection limit. */
static void drain(int fd)
{
    char buf[16384];
    struct pollfd p = { .fd = fd, .events = POLLIN };
    ssize_t n = 1;
    while (poll(&p, 1, REPLY_WAIT_MS) > 0 && (n = recv(fd, buf, sizeof buf, 0)) > 0)
        ;
    if (n > 0) {
        struct linger reset = { 1, 0 };
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
}

int dt_fuzz_http(const uint8_t *data, size_t size)
{
    pthread_once(&started, start_server);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)the_server.port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        for (size_t sent = 0; sent < size;) {
            ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
            if (n <= 0)
                break;
            sent += (size_t)n;
        }
        shutdown(fd, SHUT_WR);
        drain(fd);
    }
    close(fd);
    return 0;
}

DT_FUZZ_TARGET(dt_fuzz_http)
