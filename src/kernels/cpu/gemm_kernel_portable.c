/* gemm_kernel_portable.c - the portable C GEMM micro-kernel: the same
 * 6 x 16 tile and summation order as the AVX2 kernel, written as plain loops
 * the compiler may vectorize for whatever the build targets. Used on CPUs
 * without AVX2/FMA and when TEMPO_KERNELS=portable. */
#include "kernels/cpu/gemm_kernel.h"

void gemm_kernel_portable_6x16(int kc, const float *restrict a, const float *restrict b,
                               float *restrict c, long ldc, int accumulate)
{
    float acc[GEMM_MR][GEMM_NR] = {{0}};
    for (int k = 0; k < kc; k++) {
        const float *bk = b + (long)k * GEMM_NR;
        for (int i = 0; i < GEMM_MR; i++) {
            float ai = a[(long)k * GEMM_MR + i];
            for (int j = 0; j < GEMM_NR; j++)
                acc[i][j] += ai * bk[j];
        }
    }
    for (int i = 0; i < GEMM_MR; i++) {
        float *ci = c + i * ldc;
        if (accumulate)
            for (int j = 0; j < GEMM_NR; j++)
                ci[j] += acc[i][j];
        else
            for (int j = 0; j < GEMM_NR; j++)
                ci[j] = acc[i][j];
    }
}
