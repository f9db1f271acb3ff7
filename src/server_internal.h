/* server_internal.h — private to src/: a header of a reply the status client got.
 * server.c defines them; the only callers outside it are the tests (built
 * with -Isrc). Not part of dtune's interface. */
#ifndef DTUNE_SERVER_INTERNAL_H
#define DTUNE_SERVER_INTERNAL_H

#include "dtune/server.h"

/* Value of the header called name (case-insensitive) in reply, copied into
 * buf; returns 0, or -1 when there is no such header. */
int dt_server_reply_header(const dt_http_reply *reply, const char *name, char *buf,
                           size_t len);

#endif
