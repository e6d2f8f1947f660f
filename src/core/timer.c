/* timer.c - monotonic clock and clock-style formatting (see timer.h). */
#define _POSIX_C_SOURCE 200809L
#include "core/timer.h"

#include <math.h>
#include <stdio.h>
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

void timer_format_clock(char *buf, size_t n, double seconds)
{
    const double max_s = 999999 * 3600.0 + 59 * 60 + 59;
    if (isnan(seconds)) {
        snprintf(buf, n, "--:--");
        return;
    }
    /* clamp before the cast: a double beyond long long's range is undefined behaviour there */
    double s = seconds < 0 ? 0 : seconds > max_s ? max_s : seconds;
    long long t = (long long)(s + 0.5);
    if (t > (long long)max_s)
        t = (long long)max_s;
    if (t >= 3600)
        snprintf(buf, n, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%lld:%02lld", t / 60, t % 60);
}
