/* ipc.h — whole-message reads and writes on the sockets between dtune and
 * its measurement processes (CPU runner, CUDA runner). */
#ifndef DTUNE_IPC_H
#define DTUNE_IPC_H

#include <stdbool.h>
#include <stddef.h>

/* Sends all len bytes (retrying on EINTR, never raising SIGPIPE). Returns
 * false when the peer is gone or the socket fails. */
bool dt_ipc_send_all(int fd, const void *buf, size_t len);

/* Reads exactly len bytes, waiting at most timeout_s in all (< 0: no limit).
 * Returns 1 when read, 0 on end of stream or error, -1 on timeout. */
int dt_ipc_recv_all(int fd, void *buf, size_t len, double timeout_s);

#endif
