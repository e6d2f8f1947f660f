/* peak_cuda.c - the GPU's matrix rate and copy bandwidth (see peak_cuda.h). */
#include "bench/peak_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/cuda/gpu_gemm.h"
#include "kernels/cuda/gpu_ops.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* random fp32 values in [-1, 1) into a device buffer of n floats */
static int fill_random(gpu *g, gpu_ptr p, size_t n, uint64_t seed, tempo_error *err)
{
    size_t chunk = (size_t)1 << 22;
    float *h = malloc(sizeof(float) * chunk);
    if (!h)
        return tempo_fail(err, "bench peak: out of memory");
    rng_state r;
    rng_seed(&r, seed);
    for (size_t at = 0; at < n; at += chunk) {
        size_t k = n - at < chunk ? n - at : chunk;
        for (size_t i = 0; i < k; i++)
            h[i] = (float)(2 * rng_uniform(&r) - 1);
        if (gpu_upload(g, p + at * 4, h, k * 4, err)) {
            free(h);
            return -1;
        }
    }
    free(h);
    return 0;
}

/* median TFLOP/s of reps products n^3 of type t (math for fp32) */
static double gemm_rate(gpu *g, int n, gpu_dtype t, gpu_math math, gpu_ptr a, gpu_ptr b, gpu_ptr c, int reps,
                        tempo_error *err)
{
    gpu_mat A = {a, t, n}, B = {b, t, n}, C = {c, t, n};
    for (int i = 0; i < 2; i++)
        gpu_gemm(g, 0, 0, n, n, n, 1.0f, A, B, 0.0f, C, math);
    if (gpu_sync(g, err))
        return -1;
    double *ms = malloc(sizeof(double) * (size_t)reps);
    if (!ms)
        return -1;
    for (int r = 0; r < reps; r++) {
        gpu_timer_start(g);
        gpu_gemm(g, 0, 0, n, n, n, 1.0f, A, B, 0.0f, C, math);
        ms[r] = gpu_timer_stop_ms(g);
    }
    double m = median(ms, reps);
    free(ms);
    if (gpu_sync(g, err) || !(m > 0))
        return -1;
    return 2.0 * n * (double)n * n / (m * 1e-3) / 1e12;
}

int peak_cuda_measure(gpu *g, int n, size_t copy_bytes, int reps, peak_cuda *p, tempo_error *err)
{
    memset(p, 0, sizeof *p);
    snprintf(p->device, sizeof p->device, "%s", gpu_get_info(g)->name);
    p->gemm_n = n;
    p->reps = reps;
    size_t nn = (size_t)n * n;
    gpu_ptr a = 0, b = 0, c = 0, a16 = 0, b16 = 0, c16 = 0, src = 0, dst = 0;
    int rc = -1;
    if (gpu_alloc(g, &a, nn * 4, "the peak's A", err) || gpu_alloc(g, &b, nn * 4, "the peak's B", err) ||
        gpu_alloc(g, &c, nn * 4, "the peak's C", err) || gpu_alloc(g, &a16, nn * 2, "the peak's A", err) ||
        gpu_alloc(g, &b16, nn * 2, "the peak's B", err) || gpu_alloc(g, &c16, nn * 2, "the peak's C", err))
        goto done;
    if (fill_random(g, a, nn, 1, err) || fill_random(g, b, nn, 2, err))
        goto done;
    cuda_convert_bf16(g, a16, a, nn);
    cuda_convert_bf16(g, b16, b, nn);
    if ((p->bf16_tflops = gemm_rate(g, n, GPU_BF16, GPU_MATH_F32, a16, b16, c16, reps, err)) < 0 ||
        (p->tf32_tflops = gemm_rate(g, n, GPU_F32, GPU_MATH_TF32, a, b, c, reps, err)) < 0 ||
        (p->fp32_tflops = gemm_rate(g, n, GPU_F32, GPU_MATH_F32, a, b, c, reps, err)) < 0)
        goto done;
    gpu_free(g, a); gpu_free(g, b); gpu_free(g, c);
    a = b = c = 0;
    p->copy_bytes = copy_bytes;
    if (gpu_alloc(g, &src, copy_bytes, "the copy's source", err) || gpu_alloc(g, &dst, copy_bytes, "the copy's target", err))
        goto done;
    gpu_memset_async(g, src, 0x5a, copy_bytes);
    gpu_copy_async(g, dst, src, copy_bytes);
    double *ms = malloc(sizeof(double) * (size_t)reps);
    if (!ms)
        goto done;
    for (int r = 0; r < reps; r++) {
        gpu_timer_start(g);
        gpu_copy_async(g, dst, src, copy_bytes);
        ms[r] = gpu_timer_stop_ms(g);
    }
    double m = median(ms, reps);
    free(ms);
    if (gpu_sync(g, err) || !(m > 0))
        goto done;
    p->copy_gbs = 2.0 * (double)copy_bytes / (m * 1e-3) / 1e9;
    rc = 0;
done:
    gpu_free(g, a); gpu_free(g, b); gpu_free(g, c); gpu_free(g, a16); gpu_free(g, b16); gpu_free(g, c16);
    gpu_free(g, src); gpu_free(g, dst);
    if (rc && !err->msg[0])
        tempo_fail(err, "bench peak: a measurement failed");
    return rc;
}

void peak_cuda_write(jsonw *w, const peak_cuda *p)
{
    jsonw_object_begin(w);
    jsonw_field_string(w, "device", p->device);
    jsonw_field_int(w, "gemm_n", p->gemm_n);
    jsonw_field_digits(w, "bf16_tflops", p->bf16_tflops, 1);
    jsonw_field_digits(w, "tf32_tflops", p->tf32_tflops, 1);
    jsonw_field_digits(w, "fp32_tflops", p->fp32_tflops, 2);
    jsonw_field_digits(w, "copy_gbs", p->copy_gbs, 0);
    jsonw_field_int(w, "copy_bytes", (long long)p->copy_bytes);
    jsonw_field_int(w, "reps", p->reps);
    jsonw_object_end(w);
}

int peak_cuda_measure_startup(gpu *g, peak_cuda *p, tempo_error *err)
{
    int emu = gpu_get_info(g)->backend == GPU_EMULATOR;
    return peak_cuda_measure(g, emu ? 64 : 8192, emu ? (size_t)1 << 20 : (size_t)1 << 30, emu ? 1 : 5, p, err);
}
