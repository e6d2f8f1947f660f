/* gemm_kernel_portable.c - the portable C GEMM micro-kernel: the same
 * 6 x 16 tile and summation order as the AVX2 kernel (each element summed
 * over k in increasing order from 0, then stored or added to C), for CPUs
 * without AVX2/FMA and for TEMPO_KERNELS=portable.
 *
 * Written with GCC vector types of 4 floats (SSE on x86-64, NEON on ARM,
 * plain scalars elsewhere), one 6 x 8 half of the tile at a time: 12
 * vector accumulators fit the 16 registers of SSE. Plain nested loops over
 * a 6 x 16 array made gcc spill the accumulators and shuffle: 2 GFLOP/s.
 * Multiply and add stay separate (not fused), so the two paths differ in
 * the last bits. */
#include "kernels/cpu/gemm_kernel.h"

#include <string.h>

typedef float v4f __attribute__((vector_size(16)));

static inline v4f load4(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store4(float *p, v4f v)
{
    memcpy(p, &v, sizeof v);
}

/* Columns 0..7 of the tile starting at b (row stride GEMM_NR) into c. */
static inline void half_tile(int kc, const float *restrict a, const float *restrict b,
                             float *restrict c, long ldc, int accumulate)
{
    v4f acc[GEMM_MR][2];
    for (int i = 0; i < GEMM_MR; i++)
        acc[i][0] = acc[i][1] = (v4f){0, 0, 0, 0};
    for (int k = 0; k < kc; k++) {
        const float *bk = b + (long)k * GEMM_NR, *ak = a + (long)k * GEMM_MR;
        v4f b0 = load4(bk), b1 = load4(bk + 4);
#pragma GCC unroll 6
        for (int i = 0; i < GEMM_MR; i++) {
            v4f ai = {ak[i], ak[i], ak[i], ak[i]};
            acc[i][0] += ai * b0;
            acc[i][1] += ai * b1;
        }
    }
    for (int i = 0; i < GEMM_MR; i++) {
        float *ci = c + i * ldc;
        if (accumulate) {
            acc[i][0] += load4(ci);
            acc[i][1] += load4(ci + 4);
        }
        store4(ci, acc[i][0]);
        store4(ci + 4, acc[i][1]);
    }
}

void gemm_kernel_portable_6x16(int kc, const float *restrict a, const float *restrict b,
                               float *restrict c, long ldc, int accumulate)
{
    half_tile(kc, a, b, c, ldc, accumulate);
    half_tile(kc, a, b + 8, c + 8, ldc, accumulate);
}
