/* peak_fma_avx2.c - the AVX2 FMA throughput loop: 12 ymm accumulators, each
 * a dependent chain acc = acc * m + d, two rounds per iteration. The values
 * converge to d / (1 - m) and stay normal, so no denormal slow path. Compiled
 * for AVX2+FMA by the target attribute only; chosen at run time. */
#include "bench/peak_fma.h"

#include <immintrin.h>

__attribute__((target("avx2,fma")))
float peak_fma_loop_avx2(long iters)
{
    const __m256 m = _mm256_set1_ps(0.999f), d = _mm256_set1_ps(0.001f);
    __m256 x0 = _mm256_set1_ps(0.0f), x1 = _mm256_set1_ps(0.1f), x2 = _mm256_set1_ps(0.2f);
    __m256 x3 = _mm256_set1_ps(0.3f), x4 = _mm256_set1_ps(0.4f), x5 = _mm256_set1_ps(0.5f);
    __m256 x6 = _mm256_set1_ps(0.6f), x7 = _mm256_set1_ps(0.7f), x8 = _mm256_set1_ps(0.8f);
    __m256 x9 = _mm256_set1_ps(0.9f), x10 = _mm256_set1_ps(1.0f), x11 = _mm256_set1_ps(1.1f);
    for (long i = 0; i < iters; i++) {
        for (int r = 0; r < 2; r++) {
            x0 = _mm256_fmadd_ps(x0, m, d);
            x1 = _mm256_fmadd_ps(x1, m, d);
            x2 = _mm256_fmadd_ps(x2, m, d);
            x3 = _mm256_fmadd_ps(x3, m, d);
            x4 = _mm256_fmadd_ps(x4, m, d);
            x5 = _mm256_fmadd_ps(x5, m, d);
            x6 = _mm256_fmadd_ps(x6, m, d);
            x7 = _mm256_fmadd_ps(x7, m, d);
            x8 = _mm256_fmadd_ps(x8, m, d);
            x9 = _mm256_fmadd_ps(x9, m, d);
            x10 = _mm256_fmadd_ps(x10, m, d);
            x11 = _mm256_fmadd_ps(x11, m, d);
        }
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                             _mm256_add_ps(_mm256_add_ps(x4, x5), _mm256_add_ps(x6, x7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(x8, x9), _mm256_add_ps(x10, x11)));
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}
