/* bench_allreduce.c - all-reduce bandwidth by size (see bench_allreduce.h). */
#include "bench/bench_allreduce.h"

#include <stdlib.h>
#include <string.h>

#include "bench/bench_timing.h"
#include "core/timer.h"

int bench_allreduce_run(dist_context *d, const size_t *sizes, int n_sizes, int iters, bench_allreduce_row *rows,
                        tempo_error *err)
{
    if (iters < 1)
        iters = 1;
    double *t = malloc(sizeof(double) * (size_t)iters);
    if (!t)
        return tempo_fail(err, "bench allreduce: out of memory");
    int rc = 0;
    for (int s = 0; s < n_sizes && !rc; s++) {
        size_t n = sizes[s] / sizeof(float);
        if (n == 0) n = 1;
        float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
        if (!x || !y) {
            free(x); free(y);
            rc = tempo_fail(err, "bench allreduce: out of memory for %zu bytes", sizes[s]);
            break;
        }
        for (size_t i = 0; i < n; i++) x[i] = y[i] = (float)(i % 7);
        bench_allreduce_row *r = &rows[s];
        memset(r, 0, sizeof *r);
        r->bytes = n * sizeof(float);
        for (int k = -2; k < iters && !rc; k++) {
            rc = dist_barrier(d, err);
            double t0 = timer_now();
            if (!rc) rc = dist_allreduce_sum_f32(d, x, n, err);
            if (k >= 0) t[k] = timer_now() - t0;
        }
        /* the figures are of a correct sum: small integers, so the float sums are exact in any order */
        for (size_t i = 0; i < n && !rc; i++)
            x[i] = (float)(i % 13 + (size_t)d->rank);
        if (!rc) rc = dist_allreduce_sum_f32(d, x, n, err);
        const float base = (float)d->world * (float)(d->world - 1) / 2;
        for (size_t i = 0; i < n && !rc; i++)
            if (x[i] != (float)d->world * (float)(i % 13) + base)
                rc = tempo_fail(err, "bench allreduce: the sum of %zu bytes is wrong at float %zu (%g)", r->bytes, i,
                                (double)x[i]);
        if (!rc) {
            r->seconds = bench_percentile(t, iters, 0.5);
            r->algbw_gbps = (double)r->bytes / r->seconds * 1e-9;
            r->busbw_gbps = r->algbw_gbps * 2.0 * (d->world - 1) / d->world;
            for (int k = -2; k < iters; k++) {
                double t0 = timer_now();
                memcpy(y, x, r->bytes);
                __asm__ volatile("" : : "r"(y) : "memory");   /* keep the copy */
                if (k >= 0) t[k] = timer_now() - t0;
            }
            r->memcpy_gbps = (double)r->bytes / bench_percentile(t, iters, 0.5) * 1e-9;
        }
        free(x);
        free(y);
    }
    free(t);
    return rc;
}

void bench_allreduce_json(jsonw *w, const dist_context *d, const bench_allreduce_row *r)
{
    jsonw_object_begin(w);
    jsonw_field_string(w, "bench", "allreduce");
    jsonw_field_int(w, "ranks", d->world);
    jsonw_field_uint(w, "bytes", r->bytes);
    jsonw_field_digits(w, "seconds", r->seconds, 9);
    jsonw_field_digits(w, "algbw_GBps", r->algbw_gbps, 3);
    jsonw_field_digits(w, "busbw_GBps", r->busbw_gbps, 3);
    jsonw_field_digits(w, "memcpy_GBps", r->memcpy_gbps, 3);
    jsonw_field_digits(w, "busbw_vs_memcpy", r->memcpy_gbps > 0 ? r->busbw_gbps / r->memcpy_gbps : 0, 3);
    jsonw_object_end(w);
}
