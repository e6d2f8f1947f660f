/* number.c - checked parsing of typed numbers (see number.h). */
#include "core/number.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* strtod accepts what these parsers must not: leading blanks. */
static int starts_badly(const char *text)
{
    return !text || !*text || isspace((unsigned char)text[0]);
}

int number_parse_int(const char *what, const char *text, long long lo, long long hi, long long *out,
                     tempo_error *err)
{
    if (starts_badly(text))
        return tempo_usage(err, "%s: '%s' is not a number (use %lld to %lld)", what, text ? text : "", lo, hi);
    char *end;
    errno = 0;
    long long x = strtoll(text, &end, 10);
    int range_error = errno == ERANGE;
    if (end == text || *end) {
        double d = strtod(text, &end);
        if (end != text && !*end && !isnan(d))
            return tempo_usage(err, "%s: '%s' is not an integer (use %lld to %lld)", what, text, lo, hi);
        return tempo_usage(err, "%s: '%s' is not a number (use %lld to %lld)", what, text, lo, hi);
    }
    if (range_error || x < lo || x > hi)
        return tempo_usage(err, "%s: %s is out of range (%lld to %lld)", what, text, lo, hi);
    *out = x;
    return 0;
}

int number_parse_real(const char *what, const char *text, double lo, double hi, int lo_open, double *out,
                      tempo_error *err)
{
    char *end = NULL;
    double v = starts_badly(text) ? NAN : strtod(text, &end);
    if (starts_badly(text) || end == text || *end || isnan(v))
        return tempo_usage(err, "%s: '%s' is not a number", what, text ? text : "");
    /* an overflow gives inf (out of range below); an underflow a value next to 0 */
    if (!(v >= lo && v <= hi) || (lo_open && v <= lo))
        return tempo_usage(err, "%s: %s is out of range (%s%g to %g)", what, text, lo_open ? "above " : "", lo, hi);
    *out = v;
    return 0;
}

int number_parse_duration(const char *what, const char *text, double max_s, double *out, tempo_error *err)
{
    if (!text || !*text)
        return tempo_usage(err, "%s: empty duration (use e.g. 90s, 10m, 1h30m)", what);
    const char *p = text;
    double total = 0;
    while (*p) {
        if (!(isdigit((unsigned char)*p) || *p == '.'))
            return tempo_usage(err, "%s '%s': not a duration (use e.g. 90s, 10m, 1h30m)", what, text);
        char *end;
        double v = strtod(p, &end);
        if (end == p || isnan(v))
            return tempo_usage(err, "%s '%s': not a duration (use e.g. 90s, 10m, 1h30m)", what, text);
        p = end;
        double unit = 1;
        if (*p == 'h') { unit = 3600; p++; }
        else if (*p == 'm') { unit = 60; p++; }
        else if (*p == 's') { unit = 1; p++; }
        else if (*p != '\0')
            return tempo_usage(err, "%s '%s': unknown unit '%c' (use h, m or s)", what, text, *p);
        total += v * unit; /* inf when huge: caught below */
    }
    if (!(total > 0))
        return tempo_usage(err, "%s '%s': must be greater than zero", what, text);
    if (!(total <= max_s))
        return tempo_usage(err, "%s '%s': out of range (at most %gh, %g days)", what, text, max_s / 3600,
                           max_s / 86400);
    *out = total;
    return 0;
}

/* "8G", "512K", "100" (bytes): the largest unit that divides n. */
static void format_size(char *buf, size_t n, uint64_t bytes)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, n, "%llu", (unsigned long long)bytes);
    else
        snprintf(buf, n, "%llu%c", (unsigned long long)bytes, units[u]);
}

int number_parse_size(const char *what, const char *text, uint64_t lo, uint64_t hi, uint64_t *out,
                      tempo_error *err)
{
    char *end = NULL;
    double v = starts_badly(text) ? NAN : strtod(text, &end);
    double mult = 1;
    if (end && end != text) {
        switch (*end) {
        case 'K': case 'k': mult = 1024.0; end++; break;
        case 'M': case 'm': mult = 1024.0 * 1024; end++; break;
        case 'G': case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
        case 'T': case 't': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
        default: break;
        }
    }
    if (!end || end == text || *end || isnan(v))
        return tempo_usage(err, "%s: '%s' is not a size (use e.g. 512M or 8G)", what, text ? text : "");
    double bytes = v * mult;
    /* 2^64 and above do not fit in uint64_t (and (double)hi may round up to it) */
    if (!(bytes >= (double)lo && bytes <= (double)hi && bytes < 18446744073709551616.0) ||
        (uint64_t)bytes < lo || (uint64_t)bytes > hi) {
        char l[32], h[32];
        format_size(l, sizeof l, lo);
        format_size(h, sizeof h, hi);
        return tempo_usage(err, "%s: %s is out of range (%s to %s)", what, text, l, h);
    }
    *out = (uint64_t)bytes;
    return 0;
}
