/* timer.h - monotonic wall-clock time in seconds, and clock-style formatting.
 * Nothing here sleeps or schedules; the training loop owns the budget logic. */
#ifndef TEMPO_TIMER_H
#define TEMPO_TIMER_H

#include <stddef.h>

/* Seconds from an arbitrary fixed point (CLOCK_MONOTONIC). */
double timer_now(void);

/* CPU seconds this process has used, all threads (CLOCK_PROCESS_CPUTIME_ID). */
double timer_process_cpu(void);

/* "m:ss", or "h:mm:ss" from an hour, of a number of seconds rounded to the
 * nearest, for progress lines. Safe for any double: negative is 0:00, NaN
 * "--:--", and anything past 999999:59:59 (or infinite) prints as that. A
 * buffer of 16 bytes always holds it. (Durations are parsed in number.h.) */
void timer_format_clock(char *buf, size_t n, double seconds);

#endif
