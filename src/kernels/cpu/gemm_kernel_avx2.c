/* gemm_kernel_avx2.c - the AVX2 + FMA GEMM micro-kernel: a 6 x 16 fp32 tile
 * held in 12 ymm accumulators. Per k step: two aligned loads of the B row
 * (16 floats), six broadcasts of A, twelve FMAs - enough independent chains
 * (12 > latency 4 x 2 FMA pipes) to keep both pipes busy. Compiled for
 * AVX2+FMA by the target attribute only (the build is x86-64-v2), and called
 * only after cpuid said so (cpu_info). Nothing but the kernel lives here. */
#include "kernels/cpu/gemm_kernel.h"

#include <immintrin.h>

#define ROW_FMA(r)                                                   \
    do {                                                             \
        __m256 a_ = _mm256_broadcast_ss(a + (r));                    \
        c##r##0 = _mm256_fmadd_ps(a_, b0, c##r##0);                  \
        c##r##1 = _mm256_fmadd_ps(a_, b1, c##r##1);                  \
    } while (0)

#define ROW_STORE(r)                                                          \
    do {                                                                      \
        float *cr_ = c + (r) * ldc;                                           \
        if (accumulate) {                                                     \
            c##r##0 = _mm256_add_ps(_mm256_loadu_ps(cr_), c##r##0);           \
            c##r##1 = _mm256_add_ps(_mm256_loadu_ps(cr_ + 8), c##r##1);       \
        }                                                                     \
        _mm256_storeu_ps(cr_, c##r##0);                                       \
        _mm256_storeu_ps(cr_ + 8, c##r##1);                                   \
    } while (0)

__attribute__((target("avx2,fma")))
void gemm_kernel_avx2_6x16(int kc, const float *restrict a, const float *restrict b,
                           float *restrict c, long ldc, int accumulate)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
    __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
    __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();

    /* Pull the C tile toward L1 while the k loop runs. */
    for (int r = 0; r < GEMM_MR; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + GEMM_NR - 1), _MM_HINT_T0);
    }

#pragma GCC unroll 4
    for (int k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(b);
        __m256 b1 = _mm256_load_ps(b + 8);
        ROW_FMA(0);
        ROW_FMA(1);
        ROW_FMA(2);
        ROW_FMA(3);
        ROW_FMA(4);
        ROW_FMA(5);
        a += GEMM_MR;
        b += GEMM_NR;
    }

    ROW_STORE(0);
    ROW_STORE(1);
    ROW_STORE(2);
    ROW_STORE(3);
    ROW_STORE(4);
    ROW_STORE(5);
}
