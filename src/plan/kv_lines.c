/* kv_lines.c - reading `key = value` lines (see kv_lines.h). */
#include "plan/kv_lines.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* s without leading and trailing white space (trailing cut in place). */
static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int kv_lines_each(const char *text, size_t len, const char *path, kv_line_fn fn, void *ctx, tempo_error *err)
{
    char line[512];
    int line_no = 0;
    for (size_t pos = 0; pos < len;) {
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        pos += n + 1;
        line_no++;
        char where[1100];
        snprintf(where, sizeof where, "%s:%d", path, line_no);
        if (memchr(start, '\0', n))
            return tempo_usage(err, "%s: a NUL byte (not a text file)", where);
        if (n >= sizeof line)
            return tempo_usage(err, "%s: line longer than %zu characters", where, sizeof line - 1);
        memcpy(line, start, n);
        line[n] = '\0';
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *a = trim(line);
        if (!*a)
            continue;
        char *eq = strchr(a, '=');
        if (!eq)
            return tempo_usage(err, "%s: expected 'key = value'", where);
        *eq = '\0';
        char *key = trim(a), *value = trim(eq + 1);
        if (!*key)
            return tempo_usage(err, "%s: a value without a key", where);
        if (fn(ctx, key, value, where, err))
            return -1;
    }
    return 0;
}
