/* gemm_kernel_bf16.c - the GEMM micro-kernels of the bf16 mode (gemm.h,
 * gemm_config.bf16): operands rounded to bfloat16, products summed in fp32
 * by AVX-512 BF16's dot product (vdpbf16ps: per fp32 lane, two bf16
 * products added to the accumulator). On a CPU with it (Zen 4, Zen 5,
 * Sapphire Rapids) that is twice the multiply-adds of an fp32 FMA per
 * instruction.
 *
 * Packed layouts (written by gemm_pack_bf16.c): a micro-panel keeps the
 * fp32 panel's place and stride, and holds ceil(kc / 2) pair rows of 32-bit
 * words, each word two bf16 values of consecutive k (the lower half the
 * even k), zero past kc:
 *   A panel: word[p * GEMM_MR + i] = (op(A)(i, 2p), op(A)(i, 2p + 1))
 *   B panel: word[p * GEMM_NR + j] = (op(B)(2p, j), op(B)(2p + 1, j))
 * Per pair row: one load of the B row (16 words), and per row one vdpbf16ps
 * whose memory operand is the A word, broadcast by the load ({1to16}). Each
 * element is summed from 0 over the pair rows in order. Compiled for
 * AVX-512F+BF16 by the target attribute only, called only after cpuid said
 * so. */
#include "kernels/cpu/gemm_kernel.h"

#include <immintrin.h>
#include <stdint.h>

#define BF16_TARGET __attribute__((target("avx512f,avx512bf16")))

/* The tile of `panels` A micro-panels (GEMM_MR rows each, a_panel words
 * apart) by one B micro-panel; panels is 1, 2 or 4 at each call site, so
 * the accumulators unroll into registers. */
static inline __attribute__((always_inline)) BF16_TARGET void
tile_bf16(int panels, int kc, const float *a, long a_panel, const float *b, float *c, long ldc,
          int accumulate)
{
    __m512 acc[4 * GEMM_MR];
    const int rows = panels * GEMM_MR;
#pragma GCC unroll 24
    for (int r = 0; r < rows; r++)
        acc[r] = _mm512_setzero_ps();
    const uint32_t *aw = (const uint32_t *)(const void *)a;
    int pairs = (kc + 1) / 2;
    for (int p = 0; p < pairs; p++) {
        __m512bh bv = (__m512bh)_mm512_load_ps(b + (long)p * GEMM_NR);
#pragma GCC unroll 24
        for (int r = 0; r < rows; r++) {
            const uint32_t *ap = aw + (long)(r / GEMM_MR) * a_panel + (long)p * GEMM_MR + r % GEMM_MR;
            /* the A word as the instruction's broadcast memory operand ({1to16}): the load
             * unit broadcasts it, where a separate vpbroadcastd takes a vector pipe
             * (GCC 12 does not fold the intrinsic's broadcast into vdpbf16ps) */
            __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc[r]) : "v"(bv), "m"(*ap));
        }
    }
#pragma GCC unroll 24
    for (int r = 0; r < rows; r++) {
        float *cr = c + (long)r * ldc;
        __m512 v = acc[r];
        if (accumulate)
            v = _mm512_add_ps(_mm512_loadu_ps(cr), v);
        _mm512_storeu_ps(cr, v);
    }
}

BF16_TARGET void gemm_kernel_bf16_24x16(int kc, const float *a, long a_panel, const float *b,
                                        float *c, long ldc, int accumulate)
{
    tile_bf16(4, kc, a, a_panel, b, c, ldc, accumulate);
}

BF16_TARGET void gemm_kernel_bf16_12x16(int kc, const float *a, long a_panel, const float *b,
                                        float *c, long ldc, int accumulate)
{
    tile_bf16(2, kc, a, a_panel, b, c, ldc, accumulate);
}

BF16_TARGET void gemm_kernel_bf16_6x16(int kc, const float *a, const float *b, float *c, long ldc,
                                       int accumulate)
{
    tile_bf16(1, kc, a, 0, b, c, ldc, accumulate);
}
