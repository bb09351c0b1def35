/* Errors and diagnostics. */
#include "xf_core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

xf_status xf_error_set(xf_error *e, xf_status status, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        e->status = status;
    }
    return status;
}

void xf_error_prefix(xf_error *e, const char *fmt, ...)
{
    if (!e)
        return;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[sizeof e->msg];
    memcpy(old, e->msg, sizeof old);
    size_t plen = strlen(prefix);
    if (plen > sizeof e->msg - 3)
        plen = sizeof e->msg - 3;
    memcpy(e->msg, prefix, plen);
    memcpy(e->msg + plen, ": ", 2);
    size_t room = sizeof e->msg - plen - 3;
    size_t olen = strnlen(old, room);
    memcpy(e->msg + plen + 2, old, olen);
    e->msg[plen + 2 + olen] = '\0';
}

const char *xf_status_name(xf_status s)
{
    switch (s) {
    case XF_OK: return "ok";
    case XF_ERR_IO: return "I/O error";
    case XF_ERR_PARSE: return "parse error";
    case XF_ERR_INVALID: return "invalid model";
    case XF_ERR_UNSUPPORTED: return "unsupported";
    case XF_ERR_NOMEM: return "out of memory";
    case XF_ERR_LIMIT: return "resource limit";
    case XF_ERR_DEVICE: return "device error";
    }
    return "unknown status";
}

static xf_log_fn log_fn;
static void *log_user;
static int log_max_level = XF_LOG_WARN;

void xf_log_set(xf_log_fn fn, void *user, int max_level)
{
    log_fn = fn;
    log_user = user;
    log_max_level = max_level;
}

void xf_log(int level, const char *fmt, ...)
{
    if (level > log_max_level)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (log_fn) {
        log_fn(level, msg, log_user);
        return;
    }
    static const char *const prefix[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "xflow: %s: %s\n", prefix[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}
