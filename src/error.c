/* error.c — filling dt_error and mapping codes to exit statuses. */
#include "dtune/error.h"

#include <stdarg.h>
#include <stdio.h>

int dt_error_set(dt_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void dt_error_clear(dt_error *err)
{
    if (err) {
        err->code = DT_OK;
        err->msg[0] = '\0';
    }
}

int dt_error_exit_status(int code)
{
    switch (code) {
    case DT_OK:
        return 0;
    case DT_EINVAL:
    case DT_EPARSE:
    case DT_ENOTFOUND:
        return 2;
    default:
        return 1;
    }
}

const char *dt_error_name(int code)
{
    static const char *const names[] = {
        "DT_OK", "DT_EINVAL", "DT_ENOMEM", "DT_EIO", "DT_EPARSE",
        "DT_ENOTFOUND", "DT_ELIB", "DT_ENOTSUP", "DT_ENODEV", "DT_EFAIL", "DT_ECANCELED",
    };
    if (code > 0 || code < DT_ECANCELED)
        return "DT_E?";
    return names[-code];
}

int dt_cancel_now(const dt_cancel *c)
{
    return c && c->cancelled && c->cancelled(c->ctx);
}
