/* bench_timing.h - what every benchmark shares: timing a call as the best of
 * repeated runs while sampling how busy the rest of the machine was
 * (bench/sysload.h), and the nearest-rank percentile. Nothing here knows
 * which kernel it times; the JSON lines are written with core/json_write.h
 * (figures rounded by jsonw_field_digits so they print short). */
#ifndef TEMPO_BENCH_TIMING_H
#define TEMPO_BENCH_TIMING_H

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

#endif
