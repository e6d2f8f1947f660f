/* error.c - formatting of tempo_error values (see error.h). */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void tempo_error_clear(tempo_error *err)
{
    if (err) {
        err->msg[0] = '\0';
        err->code = 0;
    }
}

static int vfail(tempo_error *err, int code, const char *fmt, va_list ap)
{
    if (err) {
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        err->code = code;
    }
    return -1;
}

int tempo_fail(tempo_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(err, 1, fmt, ap);
    va_end(ap);
    return -1;
}

int tempo_usage(tempo_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(err, 2, fmt, ap);
    va_end(ap);
    return -1;
}

int tempo_error_prefix(tempo_error *err, const char *what)
{
    if (!err)
        return -1;
    char old[sizeof err->msg];
    memcpy(old, err->msg, sizeof old);
    size_t n = strlen(what);
    if (n > sizeof err->msg - 3)
        n = sizeof err->msg - 3;
    memcpy(err->msg, what, n);
    err->msg[n] = ':';
    err->msg[n + 1] = ' ';
    size_t room = sizeof err->msg - n - 2;
    size_t m = strlen(old);
    if (m > room - 1)
        m = room - 1;
    memcpy(err->msg + n + 2, old, m);
    err->msg[n + 2 + m] = '\0';
    if (err->code == 0)
        err->code = 1;
    return -1;
}
