/* peak.c - FMA throughput, triad and read bandwidth measurements (see peak.h).
 * Each measurement repeats a fixed amount of work and keeps the best rate:
 * on a shared machine the best repetition is the one least disturbed. */
#include "bench/peak.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bench/peak_fma.h"
#include "core/timer.h"

/* 12 chains of 4-float GCC vectors (SSE here, NEON on ARM): each chain a
 * dependent multiply then add, 12 x 2 ops in flight covers the 3 + 3 cycle
 * latencies of two multiply and two add pipes. (As plain loops over an
 * array gcc kept the chains in memory and measured half the portable
 * GEMM's own speed.) */
typedef float v4f __attribute__((vector_size(16)));

float peak_fma_loop_portable(long iters)
{
    v4f x[PEAK_FMA_CHAINS];
    for (int i = 0; i < PEAK_FMA_CHAINS; i++)
        x[i] = (v4f){0.01f * i, 0.02f * i, 0.03f * i, 0.04f * i};
    const v4f m = {0.999f, 0.999f, 0.999f, 0.999f}, d = {0.001f, 0.001f, 0.001f, 0.001f};
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 12
        for (int i = 0; i < PEAK_FMA_CHAINS; i++)
            x[i] = x[i] * m + d;
    }
    float s = 0;
    for (int i = 0; i < PEAK_FMA_CHAINS; i++)
        s += x[i][0] + x[i][1] + x[i][2] + x[i][3];
    return s;
}

typedef float (*peak_loop_fn)(long iters);

/* One repetition: every thread runs `iters`; returns the wall time from a
 * common start to the last thread's end. */
static double loop_rep(peak_loop_fn loop, int threads, long iters, float *sink)
{
    double t0 = 0, t1 = 0;
    float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
#pragma omp barrier
#pragma omp master
        t0 = timer_now();
        total += loop(iters);
#pragma omp barrier
#pragma omp master
        t1 = timer_now();
    }
    *sink += total;
    return t1 - t0;
}

/* The best rate of `loop` on `threads` threads within about `seconds`. */
static double loop_gflops(peak_loop_fn loop, double flops_per_iter, int threads, double seconds)
{
    float sink = 0;
    /* Calibrate on the calling thread alone (a team's start-up latency, large
     * on a busy machine, must not shrink the work): grow it until one
     * repetition takes ~1/8 of the time budget, at least 5 ms. */
    double rep_s = seconds / 8 > 0.005 ? seconds / 8 : 0.005;
    long iters = 1000;
    double t;
    for (;;) {
        double t0 = timer_now();
        sink += loop(iters);
        t = timer_now() - t0;
        if (t >= rep_s / 4 || iters >= (1L << 40))
            break;
        iters *= 4;
    }
    if (t > 0)
        iters = (long)(iters * (rep_s / t)) + 1;
    double best = 0, end = timer_now() + seconds;
    for (int rep = 0; rep < 3 || timer_now() < end; rep++) {
        t = loop_rep(loop, threads, iters, &sink);
        double g = t > 0 ? threads * (double)iters * flops_per_iter / t * 1e-9 : 0;
        if (g > best)
            best = g;
        if (rep > 1000)
            break;
    }
    /* sink depends on all the work; the test is never true for finite sums. */
    if (sink != sink)
        best = 0;
    return best;
}

double peak_fma_gflops(cpu_kernel_path path, int threads, double seconds)
{
    /* the widest FMA the path has */
    if (path == CPU_KERNELS_AVX512)
        return loop_gflops(peak_fma_loop_avx512, PEAK_FMA_AVX512_FLOPS_PER_ITER, threads, seconds);
    if (path == CPU_KERNELS_AVX2)
        return loop_gflops(peak_fma_loop_avx2, PEAK_FMA_AVX2_FLOPS_PER_ITER, threads, seconds);
    return loop_gflops(peak_fma_loop_portable, PEAK_FMA_PORTABLE_FLOPS_PER_ITER, threads, seconds);
}

double peak_bf16_gflops(int threads, double seconds)
{
    cpu_info ci = {0};
    cpu_info_query_features(&ci);
    if (!ci.avx512bf16)
        return 0;
    return loop_gflops(peak_bf16_loop_avx512, PEAK_BF16_AVX512_FLOPS_PER_ITER, threads, seconds);
}

int peak_triad_alloc(peak_triad_arrays *t, size_t bytes_per_array, int threads, tempo_error *err)
{
    t->n = bytes_per_array / sizeof(float) / 16 * 16;
    size_t bytes = t->n * sizeof(float);
    t->a = aligned_alloc(64, bytes);
    t->b = aligned_alloc(64, bytes);
    t->c = aligned_alloc(64, bytes);
    if (!t->a || !t->b || !t->c) {
        peak_triad_free(t);
        return tempo_fail(err, "bandwidth: cannot allocate 3 x %zu MiB", bytes >> 20);
    }
    float *a = t->a, *b = t->b, *c = t->c;
    size_t n = t->n;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t i = 0; i < n; i++) {
        a[i] = 0;
        b[i] = 1;
        c[i] = 2;
    }
    return 0;
}

void peak_triad_free(peak_triad_arrays *t)
{
    free(t->a);
    free(t->b);
    free(t->c);
    t->a = t->b = t->c = NULL;
    t->n = 0;
}

double peak_triad_gbs(const peak_triad_arrays *t, int threads, double seconds)
{
    float *restrict a = t->a;
    const float *restrict b = t->b, *restrict c = t->c;
    size_t n = t->n;
    const float s = 0.5f;
    double best = 0, end = timer_now() + seconds;
    for (int rep = 0; rep < 3 || timer_now() < end; rep++) {
        double t0 = timer_now();
#pragma omp parallel for schedule(static) num_threads(threads)
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
        double dt = timer_now() - t0;
        double g = dt > 0 ? 3.0 * sizeof(float) * (double)n / dt * 1e-9 : 0;
        if (g > best)
            best = g;
        if (rep > 1000)
            break;
    }
    return best;
}

/* ---- read bandwidth ---- */

/* Floats per block of the read loops: one load into each of 8 (256-bit) or
 * 16 (128-bit) accumulators, enough independent adds to keep two loads a
 * cycle in flight. */
#define READ_BLOCK 64

static float read_sum_portable(const float *x, size_t n);

#if defined(__x86_64__) || defined(__i386__)
typedef float v8f __attribute__((vector_size(32)));

/* Sum of x[0..n), n a multiple of READ_BLOCK, with 256-bit loads. */
__attribute__((target("avx2"))) static float read_sum_avx2(const float *x, size_t n)
{
    v8f s[8] = {{0}};
    for (size_t i = 0; i < n; i += READ_BLOCK)
        for (int k = 0; k < 8; k++) {
            v8f v;
            memcpy(&v, x + i + 8 * k, sizeof v);
            s[k] += v;
        }
    v8f t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#else
static float read_sum_avx2(const float *x, size_t n)
{
    return read_sum_portable(x, n);
}
#endif

/* The same with the build target's vectors (128-bit on x86-64-v2). */
static float read_sum_portable(const float *x, size_t n)
{
    v4f s[16] = {{0}};
    for (size_t i = 0; i < n; i += READ_BLOCK)
        for (int k = 0; k < 16; k++) {
            v4f v;
            memcpy(&v, x + i + 4 * k, sizeof v);
            s[k] += v;
        }
    float t = 0;
    for (int k = 0; k < 16; k++)
        t += s[k][0] + s[k][1] + s[k][2] + s[k][3];
    return t;
}

/* Thread t of T's share of n_blocks blocks: [*lo, *hi) in floats. */
static void read_share(size_t n_blocks, int t, int T, size_t *lo, size_t *hi)
{
    *lo = n_blocks * (size_t)t / (size_t)T * READ_BLOCK;
    *hi = n_blocks * (size_t)(t + 1) / (size_t)T * READ_BLOCK;
}

/* One repetition: every thread reads its share `passes` times; the wall
 * time from a common start to the last thread's end. */
static double read_rep(cpu_kernel_path path, const float *x, size_t n_blocks, int threads, long passes,
                       float *sink)
{
    double t0 = 0, t1 = 0;
    float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        size_t lo, hi;
        read_share(n_blocks, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
#pragma omp barrier
#pragma omp master
        t0 = timer_now();
        for (long p = 0; p < passes; p++) {
            total += path >= CPU_KERNELS_AVX2 ? read_sum_avx2(x + lo, hi - lo) : read_sum_portable(x + lo, hi - lo);
            __asm__ volatile("" : : : "memory");   /* each pass reads the buffer again */
        }
#pragma omp barrier
#pragma omp master
        t1 = timer_now();
    }
    *sink += total;
    return t1 - t0;
}

double peak_read_gbs(cpu_kernel_path path, size_t bytes, int threads, double seconds, tempo_error *err)
{
    size_t n_blocks = bytes / (READ_BLOCK * sizeof(float));
    if (n_blocks == 0)
        n_blocks = 1;
    size_t n = n_blocks * READ_BLOCK;
    float *x = aligned_alloc(64, n * sizeof(float));
    if (!x)
        return tempo_fail(err, "read bandwidth: cannot allocate %zu bytes", n * sizeof(float));
#pragma omp parallel num_threads(threads)
    {
        size_t lo, hi;
        read_share(n_blocks, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        for (size_t i = lo; i < hi; i++)
            x[i] = 1.0f / (float)(1 + i % 97);
    }
    /* Passes per repetition: enough for ~1/32 of the time (at least 1 ms), so
     * the team's start and end are a small part of it, and short enough that
     * on a busy machine some repetitions run undisturbed. */
    float sink = 0;
    double rep_s = seconds / 32 > 0.001 ? seconds / 32 : 0.001;
    double t = read_rep(path, x, n_blocks, threads, 1, &sink);
    long passes = t > 0 && t < rep_s ? (long)(rep_s / t) + 1 : 1;
    double best = 0, end = timer_now() + seconds;
    for (int rep = 0; rep < 3 || timer_now() < end; rep++) {
        t = read_rep(path, x, n_blocks, threads, passes, &sink);
        double g = t > 0 ? (double)passes * (double)n * sizeof(float) / t * 1e-9 : 0;
        if (g > best)
            best = g;
        if (rep > 1000)
            break;
    }
    free(x);
    /* sink depends on every read; the test is never true for finite sums. */
    if (sink != sink)
        best = 0;
    return best;
}
