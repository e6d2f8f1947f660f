/* timer.c - monotonic clock and duration parsing (see timer.h). */
#define _POSIX_C_SOURCE 200809L
#include "core/timer.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

double timer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double timer_process_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int timer_parse_duration(const char *text, double *seconds, tempo_error *err)
{
    if (!text || !*text)
        return tempo_usage(err, "budget: empty duration (use e.g. 90s, 10m, 1h30m)");
    const char *p = text;
    double total = 0;
    int parts = 0;
    while (*p) {
        if (!(isdigit((unsigned char)*p) || *p == '.'))
            return tempo_usage(err, "budget '%s': not a duration (use e.g. 90s, 10m, 1h30m)", text);
        char *end;
        double v = strtod(p, &end);
        if (end == p || !isfinite(v))
            return tempo_usage(err, "budget '%s': not a duration (use e.g. 90s, 10m, 1h30m)", text);
        p = end;
        double unit = 1;
        if (*p == 'h') { unit = 3600; p++; }
        else if (*p == 'm') { unit = 60; p++; }
        else if (*p == 's') { unit = 1; p++; }
        else if (*p != '\0')
            return tempo_usage(err, "budget '%s': unknown unit '%c' (use h, m or s)", text, *p);
        total += v * unit;
        parts++;
    }
    if (parts == 0 || !(total > 0))
        return tempo_usage(err, "budget '%s': must be greater than zero", text);
    *seconds = total;
    return 0;
}
