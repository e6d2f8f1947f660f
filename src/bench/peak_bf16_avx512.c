/* peak_bf16_avx512.c - the AVX-512 BF16 dot-product throughput loop: 12 zmm
 * accumulators, each a dependent chain acc += a . b (vdpbf16ps: 16 lanes,
 * two bf16 products each, 64 FLOPs an instruction), two rounds per
 * iteration: the rate the GEMM's bf16 mode (kernels/cpu/gemm_kernel_bf16.c)
 * can reach. Compiled for AVX-512F+BF16 by the target attribute only;
 * called only when cpuid says so. */
#include "bench/peak_fma.h"

#include <immintrin.h>

#define CHAIN(x) x = _mm512_dpbf16_ps(x, a, b)

__attribute__((target("avx512f,avx512bf16")))
float peak_bf16_loop_avx512(long iters)
{
    /* bf16 0.00099945 and 1.0: the sums grow by 0.016 an instruction, far from overflow */
    const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3a83), b = (__m512bh)_mm512_set1_epi16(0x3f80);
    __m512 x0 = _mm512_set1_ps(0.0f), x1 = _mm512_set1_ps(0.1f), x2 = _mm512_set1_ps(0.2f);
    __m512 x3 = _mm512_set1_ps(0.3f), x4 = _mm512_set1_ps(0.4f), x5 = _mm512_set1_ps(0.5f);
    __m512 x6 = _mm512_set1_ps(0.6f), x7 = _mm512_set1_ps(0.7f), x8 = _mm512_set1_ps(0.8f);
    __m512 x9 = _mm512_set1_ps(0.9f), x10 = _mm512_set1_ps(1.0f), x11 = _mm512_set1_ps(1.1f);
    for (long i = 0; i < iters; i++) {
        for (int r = 0; r < 2; r++) {
            CHAIN(x0); CHAIN(x1); CHAIN(x2); CHAIN(x3); CHAIN(x4); CHAIN(x5);
            CHAIN(x6); CHAIN(x7); CHAIN(x8); CHAIN(x9); CHAIN(x10); CHAIN(x11);
        }
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)),
                             _mm512_add_ps(_mm512_add_ps(x4, x5), _mm512_add_ps(x6, x7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(x8, x9), _mm512_add_ps(x10, x11)));
    return _mm512_reduce_add_ps(s);
}
