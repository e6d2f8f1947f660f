/* text.c - bounded formatting (see text.h). */
#include "core/text.h"

#include <stdarg.h>
#include <stdio.h>

int text_fmt(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(dst, n, fmt, ap);
    va_end(ap);
    return k;
}

void text_bytes(uint64_t bytes, char *dst, size_t n)
{
    if (bytes >= (1ull << 30))
        text_fmt(dst, n, "%.2f GiB", (double)bytes / (1ull << 30));
    else if (bytes >= (1ull << 20))
        text_fmt(dst, n, "%.1f MiB", (double)bytes / (1ull << 20));
    else
        text_fmt(dst, n, "%llu KiB", (unsigned long long)(bytes >> 10));
}
