/* simd_avx2.h - AVX2 + FMA building blocks shared by the *_avx2.c kernel files:
 * a vectorised exp, tail masks for partial vectors, and horizontal sums.
 * Include only from files whose functions carry target("avx2,fma") and are
 * called only after kernel_path.h said the CPU has AVX2 and FMA. Header-only
 * (static inline); nothing else lives here. */
#ifndef TEMPO_SIMD_AVX2_H
#define TEMPO_SIMD_AVX2_H

#include <immintrin.h>
#include <stdint.h>

#define SIMD_AVX2 __attribute__((target("avx2,fma"), always_inline)) static inline

/* The exp's constants, shared with simd_avx512.h's 16-lane copy (which must
 * stay operation for operation this one, so that both give the same bits). */
#define SIMD_EXP_LO (-87.33f)
#define SIMD_EXP_HI 88.3f
#define SIMD_EXP_LOG2E 1.44269504088896341f
#define SIMD_EXP_LN2_HI 0.693359375f
#define SIMD_EXP_LN2_LO (-2.12194440e-4f)
#define SIMD_EXP_P0 1.9875691500e-4f
#define SIMD_EXP_P1 1.3981999507e-3f
#define SIMD_EXP_P2 8.3334519073e-3f
#define SIMD_EXP_P3 4.1665795894e-2f
#define SIMD_EXP_P4 1.6666665459e-1f
#define SIMD_EXP_P5 5.0000001201e-1f

/* e^x for 8 floats. x = n ln2 + r with |r| <= ln2/2 (ln2 split in two parts so
 * n ln2 is exact), e^r by a degree-6 polynomial (1 + r + r^2/2 + ...; the
 * classic minimax coefficients for this interval), 2^n built in the exponent
 * bits. Relative error below 2e-7 for x in [-87, 88]; x < -87.3 (including
 * -inf) gives exactly 0, x > 88.3 gives e^88.3 (about 2e38, not inf); NaN in,
 * NaN out. */
SIMD_AVX2 __m256 simd_exp256(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(SIMD_EXP_LO), hi = _mm256_set1_ps(SIMD_EXP_HI);
    __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(SIMD_EXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(SIMD_EXP_LN2_HI), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(SIMD_EXP_LN2_LO), r);
    __m256 p = _mm256_set1_ps(SIMD_EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SIMD_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SIMD_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SIMD_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SIMD_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SIMD_EXP_P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    /* NaN compares false in both clamps' favour: keep it NaN */
    y = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    return _mm256_andnot_ps(underflow, y);
}

/* Mask with the first n (0..8) lanes set, for maskload/maskstore. */
SIMD_AVX2 __m256i simd_tail_mask(int n)
{
    static const int32_t bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(bits + 8 - n));
}

/* Sum of the 8 lanes, in a fixed order. */
SIMD_AVX2 float simd_hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Max of the 8 lanes. */
SIMD_AVX2 float simd_hmax256(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#endif
