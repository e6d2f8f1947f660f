/* bench_timing.h - what every benchmark shares: timing a call as the best of
 * repeated runs while sampling how busy the rest of the machine was
 * (bench/sysload.h), and writing figures into JSON lines rounded so they
 * print short. Nothing here knows which kernel it times. */
#ifndef TEMPO_BENCH_TIMING_H
#define TEMPO_BENCH_TIMING_H

#include "core/strbuf.h"

typedef struct {
    double best_s;            /* best repetition, seconds */
    int reps;
    double other_load_cores;  /* others' CPU use meanwhile (bench/sysload.h) */
    int contended;
} bench_timing;

/* fn(ctx) once to warm up, then repeated until min_seconds have passed (at
 * least 3 times, at most 100,000); the best repetition is kept. */
void bench_time_best(void (*fn)(void *ctx), void *ctx, double min_seconds, bench_timing *t);

/* Nearest-rank percentile q in (0, 1] of v[0..n) (sorts v in place). */
double bench_percentile(double *v, int n, double q);

/* v rounded to `digits` decimals, for JSON figures (prints 202.95, not
 * 202.95000000000002). */
double bench_round(double v, int digits);

/* Appends ,"key":v rounded to digits, or ,"key":null when v is not finite. */
void bench_json_num(strbuf *out, const char *key, double v, int digits);

#endif
