/* ipc.c — whole-message socket I/O for the measurement processes. */
#include "ipc.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>

#include "dtune/util.h"

bool dt_ipc_send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

int dt_ipc_recv_all(int fd, void *buf, size_t len, double timeout_s)
{
    char *p = buf;
    double deadline = dt_now_seconds() + timeout_s;
    while (len > 0) {
        int wait_ms = -1;
        if (timeout_s >= 0) {
            double left = deadline - dt_now_seconds();
            if (left <= 0)
                return -1;
            wait_ms = left > INT_MAX / 1000.0 ? INT_MAX : (int)(left * 1e3) + 1;
        }
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int ready = poll(&pfd, 1, wait_ms);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0)
            return 0;
        if (ready == 0)
            continue;
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        p += n;
        len -= (size_t)n;
    }
    return 1;
}
