/* gemv_avx2.c - rows of y = W x (+ y) with AVX2 + FMA (see gemv_kernel.h):
 * one row at a time, read as one sequential stream into four independent
 * accumulators of 8 (then 8 at a time, then a masked tail of fewer than 8),
 * folded by a fixed tree. One stream matters when the weights come from
 * DRAM: reading four rows side by side, each 8 floats at a time, reached
 * 16-18 GB/s against 28-40 GB/s for one row at a time on this machine (the
 * lab notebook, 2026-12-04), while from the caches the two were within 10 %. */
#include "kernels/cpu/gemv_kernel.h"
#include "kernels/cpu/simd_avx2.h"

#include <stddef.h>

__attribute__((target("avx2,fma")))
void gemv_rows_avx2(float *y, const float *x, const float *W, int in, int o0, int o1, int accumulate)
{
    const int full = in / 8 * 8;
    const __m256i tail = simd_tail_mask(in - full > 0 ? in - full : 1);
    for (int o = o0; o < o1; o++) {
        const float *w = W + (size_t)o * in;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int i = 0;
        for (; i + 32 <= in; i += 32) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
        }
        for (; i < full; i += 8)
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
        if (full < in)
            a1 = _mm256_fmadd_ps(_mm256_maskload_ps(w + full, tail), _mm256_maskload_ps(x + full, tail), a1);
        __m256 a = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
        __m128 r = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        r = _mm_hadd_ps(r, r);
        r = _mm_hadd_ps(r, r);
        float s = _mm_cvtss_f32(r);
        y[o] = accumulate ? y[o] + s : s;
    }
}
