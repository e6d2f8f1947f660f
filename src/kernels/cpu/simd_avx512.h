/* simd_avx512.h - AVX-512F building blocks shared by the *_avx512.c kernel
 * files: the vectorised exp of simd_avx2.h on 16 lanes, operation for
 * operation, so that each lane's result is bitwise the AVX2 one's, and a
 * 16 x 16 transpose of 32-bit words (the bf16 packings'). Include
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

/* The 16 x 16 transpose of 32-bit words: lane j of out[p] = lane p of r[j].
 * Interleaving words, then word pairs, gives t[4i + c]'s 128-bit lane L =
 * rows 4i..4i+3 at word 4L + c; two lane shuffles gather word p = 4L + c's
 * four lanes from t[c], t[4 + c], t[8 + c], t[12 + c]. */
SIMD_AVX512 void simd_transpose16_epi32(const __m512i r[16], __m512i out[16])
{
    __m512i a[16], t[16];
    for (int i = 0; i < 16; i += 2) {
        a[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        a[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        t[i] = _mm512_unpacklo_epi64(a[i], a[i + 2]);
        t[i + 1] = _mm512_unpackhi_epi64(a[i], a[i + 2]);
        t[i + 2] = _mm512_unpacklo_epi64(a[i + 1], a[i + 3]);
        t[i + 3] = _mm512_unpackhi_epi64(a[i + 1], a[i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        __m512i e0 = _mm512_shuffle_i32x4(t[c], t[4 + c], 0x44);   /* lanes 0, 1 of each */
        __m512i e1 = _mm512_shuffle_i32x4(t[c], t[4 + c], 0xee);   /* lanes 2, 3 */
        __m512i f0 = _mm512_shuffle_i32x4(t[8 + c], t[12 + c], 0x44);
        __m512i f1 = _mm512_shuffle_i32x4(t[8 + c], t[12 + c], 0xee);
        out[c] = _mm512_shuffle_i32x4(e0, f0, 0x88);
        out[4 + c] = _mm512_shuffle_i32x4(e0, f0, 0xdd);
        out[8 + c] = _mm512_shuffle_i32x4(e1, f1, 0x88);
        out[12 + c] = _mm512_shuffle_i32x4(e1, f1, 0xdd);
    }
}

#endif
