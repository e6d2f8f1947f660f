/* bench_timing.c - best-of timing and the percentile (see bench_timing.h). */
#include "bench/bench_timing.h"

#include <math.h>
#include <stdlib.h>

#include "bench/sysload.h"
#include "core/timer.h"

void bench_time_best(void (*fn)(void *ctx), void *ctx, double min_seconds, bench_timing *t)
{
    fn(ctx);
    sysload_sample start;
    sysload_sample_now(&start);
    double best = 1e30, end = timer_now() + min_seconds;
    int reps = 0;
    do {
        double t0 = timer_now();
        fn(ctx);
        double dt = timer_now() - t0;
        if (dt < best)
            best = dt;
        reps++;
    } while ((reps < 3 || timer_now() < end) && reps < 100000);
    sysload_report load;
    sysload_since(&start, &load);
    t->best_s = best;
    t->reps = reps;
    t->other_load_cores = load.other_cores;
    t->contended = load.contended;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_percentile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    int k = (int)ceil(q * n) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}
