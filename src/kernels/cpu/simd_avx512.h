/* simd_avx512.h - AVX-512F building blocks shared by the *_avx512.c kernel
 * files: the vectorised exp of simd_avx2.h on 16 lanes, operation for
 * operation, so that each lane's result is bitwise the AVX2 one's. Include
 * only from files whose functions carry target("avx512f") and are called
 * only on the avx512 kernel path. Header-only (static inline). */
#ifndef TEMPO_SIMD_AVX512_H
#define TEMPO_SIMD_AVX512_H

#include <immintrin.h>

#include "kernels/cpu/simd_avx2.h" /* the exp's constants */

#define SIMD_AVX512 __attribute__((target("avx512f"), always_inline)) static inline

/* e^x for 16 floats: simd_exp256's range reduction, polynomial, clamps and
 * NaN handling, in the same order (see there for the accuracy). */
SIMD_AVX512 __m512 simd_exp512(__m512 x)
{
    const __m512 lo = _mm512_set1_ps(SIMD_EXP_LO), hi = _mm512_set1_ps(SIMD_EXP_HI);
    __mmask16 underflow = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(SIMD_EXP_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(SIMD_EXP_LN2_HI), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(SIMD_EXP_LN2_LO), r);
    __m512 p = _mm512_set1_ps(SIMD_EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SIMD_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SIMD_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SIMD_EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SIMD_EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SIMD_EXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    __m512 y = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
    /* NaN compares false in both clamps' favour: keep it NaN */
    y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x);
    return _mm512_maskz_mov_ps((__mmask16)~underflow, y);
}

/* Mask of the first n (0..16) lanes. */
SIMD_AVX512 __mmask16 simd_tail_mask16(int n)
{
    return (__mmask16)(n >= 16 ? 0xFFFF : (1u << n) - 1);
}

#endif
