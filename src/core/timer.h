/* timer.h - monotonic wall-clock time in seconds, and duration parsing.
 * Nothing here sleeps or schedules; the training loop owns the budget logic. */
#ifndef TEMPO_TIMER_H
#define TEMPO_TIMER_H

#include "core/error.h"

/* Seconds from an arbitrary fixed point (CLOCK_MONOTONIC). */
double timer_now(void);

/* CPU seconds this process has used, all threads (CLOCK_PROCESS_CPUTIME_ID). */
double timer_process_cpu(void);

/* Parse a duration such as "90s", "10m", "1h30m", "2.5m", "45" (seconds).
 * The result must be > 0. Returns 0 and sets *seconds, or -1 with err set
 * (code 2) naming the text and the problem. */
int timer_parse_duration(const char *text, double *seconds, tempo_error *err);

#endif
