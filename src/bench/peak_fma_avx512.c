/* peak_fma_avx512.c - the AVX-512 throughput loops: 12 zmm accumulators,
 * each a dependent chain, two rounds per iteration.
 * - FMA: acc = acc * m + d (the AVX2 loop's chains at twice the width). On a
 *   CPU whose FMA units are 512 bits wide it measures twice the AVX2 loop's
 *   rate; on one that splits a zmm FMA in two (Zen 4), the same.
 * - BF16: acc += a . b (vdpbf16ps: 16 lanes, two bf16 products each, 64
 *   FLOPs an instruction): the rate the GEMM's bf16 mode
 *   (kernels/cpu/gemm_kernel_bf16.c) can reach.
 * Compiled for AVX-512F (and BF16) by target attributes only; chosen at run
 * time. */
#include "bench/peak_fma.h"

#include <immintrin.h>

#define ACCUMULATORS_12                                                                     \
    __m512 x0 = _mm512_set1_ps(0.0f), x1 = _mm512_set1_ps(0.1f), x2 = _mm512_set1_ps(0.2f); \
    __m512 x3 = _mm512_set1_ps(0.3f), x4 = _mm512_set1_ps(0.4f), x5 = _mm512_set1_ps(0.5f); \
    __m512 x6 = _mm512_set1_ps(0.6f), x7 = _mm512_set1_ps(0.7f), x8 = _mm512_set1_ps(0.8f); \
    __m512 x9 = _mm512_set1_ps(0.9f), x10 = _mm512_set1_ps(1.0f), x11 = _mm512_set1_ps(1.1f)

#define ROUNDS(CHAIN)                                                     \
    for (long i = 0; i < iters; i++) {                                    \
        for (int r = 0; r < 2; r++) {                                     \
            CHAIN(x0); CHAIN(x1); CHAIN(x2); CHAIN(x3); CHAIN(x4); CHAIN(x5);   \
            CHAIN(x6); CHAIN(x7); CHAIN(x8); CHAIN(x9); CHAIN(x10); CHAIN(x11); \
        }                                                                 \
    }

#define SUM_12                                                                                    \
    _mm512_reduce_add_ps(_mm512_add_ps(                                                           \
        _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)),                \
                      _mm512_add_ps(_mm512_add_ps(x4, x5), _mm512_add_ps(x6, x7))),               \
        _mm512_add_ps(_mm512_add_ps(x8, x9), _mm512_add_ps(x10, x11))))

#define CHAIN_FMA(x) x = _mm512_fmadd_ps(x, m, d)
#define CHAIN_BF16(x) x = _mm512_dpbf16_ps(x, a, b)

__attribute__((target("avx512f")))
float peak_fma_loop_avx512(long iters)
{
    const __m512 m = _mm512_set1_ps(0.999f), d = _mm512_set1_ps(0.001f);
    ACCUMULATORS_12;
    ROUNDS(CHAIN_FMA)
    return SUM_12;
}

__attribute__((target("avx512f,avx512bf16")))
float peak_bf16_loop_avx512(long iters)
{
    /* bf16 0.00099945 and 1.0: the sums grow by 0.016 an instruction, far from overflow */
    const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3a83), b = (__m512bh)_mm512_set1_epi16(0x3f80);
    ACCUMULATORS_12;
    ROUNDS(CHAIN_BF16)
    return SUM_12;
}
