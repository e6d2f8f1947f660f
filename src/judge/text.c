/* text.c - bounded formatting (see text.h). */
#include "judge/text.h"

#include <stdarg.h>
#include <stdio.h>

int judge_fmt(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(dst, n, fmt, ap);
    va_end(ap);
    return k;
}
