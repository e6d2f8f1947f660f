/* strbuf.c - growable strings and JSON value writing (see strbuf.h). */
#include "core/strbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_free(strbuf *sb)
{
    free(sb->data);
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->oom = 0;
}

static int reserve(strbuf *sb, size_t extra)
{
    if (sb->oom)
        return -1;
    if (sb->len + extra + 1 <= sb->cap)
        return 0;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->oom = 1;
        return -1;
    }
    sb->data = p;
    sb->cap = cap;
    return 0;
}

void strbuf_append(strbuf *sb, const char *s, size_t n)
{
    if (reserve(sb, n))
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void strbuf_puts(strbuf *sb, const char *s) { strbuf_append(sb, s, strlen(s)); }

void strbuf_printf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    else if ((c & 0xE0) == 0xC0) { len = 2; min = 0x80; c &= 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; min = 0x800; c &= 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; min = 0x10000; c &= 0x07; }
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    return len;
}

void strbuf_json_string(strbuf *sb, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    strbuf_append(sb, "\"", 1);
    size_t i = 0;
    while (i < n) {
        unsigned char c = u[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\'; esc[1] = (char)c;
            strbuf_append(sb, esc, 2);
            i++;
        } else if (c < 0x20) {
            const char *named = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
            if (named) strbuf_puts(sb, named);
            else { snprintf(esc, sizeof esc, "\\u%04x", c); strbuf_puts(sb, esc); }
            i++;
        } else if (c < 0x80) {
            strbuf_append(sb, (const char *)u + i, 1);
            i++;
        } else {
            size_t l = utf8_len(u + i, n - i);
            if (l) { strbuf_append(sb, (const char *)u + i, l); i += l; }
            else { snprintf(esc, sizeof esc, "\\u%04x", c); strbuf_puts(sb, esc); i++; }
        }
    }
    strbuf_append(sb, "\"", 1);
}

void strbuf_json_number(strbuf *sb, double v)
{
    if (!isfinite(v)) {
        strbuf_puts(sb, "null");
        return;
    }
    /* the magnitude first: casting a double outside long long's range is undefined behaviour */
    if (fabs(v) < 1e15 && v == (double)(long long)v) {
        strbuf_printf(sb, "%lld", (long long)v);
        return;
    }
    char buf[64];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    strbuf_puts(sb, buf);
}

void strbuf_markup(strbuf *sb, const char *s, int replace_controls)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': strbuf_puts(sb, "&amp;"); break;
        case '<': strbuf_puts(sb, "&lt;"); break;
        case '>': strbuf_puts(sb, "&gt;"); break;
        case '"': strbuf_puts(sb, "&quot;"); break;
        case '\'': strbuf_puts(sb, "&#39;"); break;
        default:
            if (replace_controls && ((unsigned char)*s < 0x20 || *s == 0x7f))
                strbuf_puts(sb, "?");
            else
                strbuf_append(sb, s, 1);
        }
    }
}
