/* attention_bf16.c - the operations of attention's bf16 mode (see
 * attention_kernel.h): operands converted to pair words, two bf16 values of
 * consecutive k in one 32-bit word (the lower half the even k), and the tile
 * product on them by AVX-512 BF16's dot product (vdpbf16ps: per fp32 lane,
 * two bf16 products added to the accumulator), twice the multiply-adds of an
 * fp32 FMA per instruction. Values are rounded by the CPU's conversion
 * (vcvtne2ps2bf16: to nearest even, denormals to zero), as the GEMM's bf16
 * packing rounds them. The register tiles are attention_avx512.c's: 6 rows x
 * 2 zmm or 12 rows x 1 zmm, the last zmm of a row masked. Compiled for
 * AVX-512 (F, BW, VL, BF16) by the target attribute only, called only where
 * kernel_path_bf16_now() says so. */
#include "kernels/cpu/attention_kernel.h"

#include <immintrin.h>
#include <stdint.h>

#include "kernels/cpu/simd_avx512.h"

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define WORD_TILE __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"), always_inline)) static inline

static inline int min_int(int a, int b) { return a < b ? a : b; }

/* Masks of the first n (0..16) lanes. */
static inline __mmask16 lanes(int n)
{
    return (__mmask16)(n >= 16 ? 0xffff : (1u << n) - 1);
}

BF16_TARGET void att_bf16_rows(uint32_t *dst, long dst_ld, const float *src, long src_ld, int rows, int n)
{
    for (int r = 0; r < rows; r++) {
        const float *s = src + (long)r * src_ld;
        uint32_t *d = dst + (long)r * dst_ld;
        for (int k = 0; k < n; k += 32) {
            int left = min_int(32, n - k);
            __m512 lo = _mm512_maskz_loadu_ps(lanes(left), s + k);
            __m512 hi = _mm512_maskz_loadu_ps(lanes(left - 16 > 0 ? left - 16 : 0), s + k + 16);
            /* bf16 element e = value k + e: word q = (value 2q, value 2q + 1) */
            __m512i w = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
            _mm512_mask_storeu_epi32(d + k / 2, lanes((left + 1) / 2), w);
        }
    }
}

BF16_TARGET void att_bf16_pairs(uint32_t *dst, long dst_ld, const float *src, long src_ld, int rows, int n)
{
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                                24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                                16, 0);
    for (int p = 0; 2 * p < rows; p++) {
        const float *r0 = src + (long)(2 * p) * src_ld;
        const float *r1 = 2 * p + 1 < rows ? r0 + src_ld : NULL;
        uint32_t *d = dst + (long)p * dst_ld;
        for (int j = 0; j < n; j += 16) {
            __mmask16 m = lanes(n - j);
            __m512 a = _mm512_maskz_loadu_ps(m, r0 + j);
            __m512 b = r1 ? _mm512_maskz_loadu_ps(m, r1 + j) : _mm512_setzero_ps();
            /* a's 16 values, then b's, as bf16; interleaved: word j = (a_j, b_j) */
            __m512i both = (__m512i)_mm512_cvtne2ps_pbh(b, a);
            _mm512_mask_storeu_epi32(d + j, m, _mm512_permutexvar_epi16(interleave, both));
        }
    }
}

BF16_TARGET void att_bf16_cols(uint32_t *dst, long dst_ld, const float *src, long src_ld, int rows, int n,
                               float mul)
{
    const __m512 mv = _mm512_set1_ps(mul);
    /* 16 rows at a time, 32 values of each a step: each row's 16 pair words, then the 16 x 16 words
     * transposed, each word row stored for the block's rows */
    for (int r0 = 0; r0 < rows; r0 += 16) {
        int nr = min_int(16, rows - r0);
        for (int k = 0; k < n; k += 32) {
            int left = min_int(32, n - k);
            __m512i w[16], t[16];
            for (int j = 0; j < 16; j++) {
                if (j >= nr) {
                    w[j] = _mm512_setzero_si512();
                    continue;
                }
                const float *s = src + (long)(r0 + j) * src_ld + k;
                __m512 lo = _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes(left), s), mv);
                __m512 hi = _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes(left - 16 > 0 ? left - 16 : 0), s + 16), mv);
                w[j] = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);   /* word q = (value 2q, value 2q + 1) */
            }
            simd_transpose16_epi32(w, t);
            for (int q = 0; q < (left + 1) / 2; q++)
                _mm512_mask_storeu_epi32(dst + (long)(k / 2 + q) * dst_ld + r0, lanes(nr), t[q]);
        }
    }
}

/* C[mr x 16 nv] (=, +=) sum over kp pair rows of A's words by B's, the last
 * zmm of each row limited to the lanes of `last`; mr (<= 12 / nv) and nv (1
 * or 2) are constants at every call, so the accumulators stay in registers. */
WORD_TILE void wtile(float *c, long ldc, const uint32_t *a, long a_rs, long a_cs, const uint32_t *b,
                     long ldb, int kp, int accumulate, int mr, int nv, __mmask16 last)
{
    __m512 acc[12][2];
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < nv; v++)
            acc[i][v] = _mm512_setzero_ps();
    for (int p = 0; p < kp; p++) {
        __m512bh bv[2];
        for (int v = 0; v < nv; v++)
            bv[v] = (__m512bh)(v == nv - 1 ? _mm512_maskz_loadu_epi32(last, b + 16 * v)
                                           : _mm512_loadu_si512(b + 16 * v));
        const uint32_t *ap = a + (long)p * a_cs;
        for (int i = 0; i < mr; i++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)ap[(long)i * a_rs]);
            for (int v = 0; v < nv; v++)
                acc[i][v] = _mm512_dpbf16_ps(acc[i][v], av, bv[v]);
        }
        b += ldb;
    }
    for (int i = 0; i < mr; i++) {
        float *cr = c + (long)i * ldc;
        for (int v = 0; v < nv; v++) {
            __mmask16 mk = v == nv - 1 ? last : 0xFFFF;
            if (accumulate)
                acc[i][v] = _mm512_add_ps(_mm512_maskz_loadu_ps(mk, cr + 16 * v), acc[i][v]);
            _mm512_mask_storeu_ps(cr + 16 * v, mk, acc[i][v]);
        }
    }
}

/* Every row of one column block of 16 nv columns: full tiles of 12 / nv
 * rows, then one tile of the ragged rows. */
WORD_TILE void wblock(float *c, long ldc, const uint32_t *a, long a_rs, long a_cs, const uint32_t *b,
                      long ldb, int m, int kp, int accumulate, int nv, __mmask16 last)
{
    int tr = 12 / nv, i = 0;
    for (; i + tr <= m; i += tr)
        wtile(c + (long)i * ldc, ldc, a + (long)i * a_rs, a_rs, a_cs, b, ldb, kp, accumulate, tr, nv,
              last);
    c += (long)i * ldc;
    a += (long)i * a_rs;
#define WCASE(r)                                                                      \
    case r:                                                                           \
        wtile(c, ldc, a, a_rs, a_cs, b, ldb, kp, accumulate, r, nv, last);            \
        break
    switch (m - i) {
        WCASE(1); WCASE(2); WCASE(3); WCASE(4); WCASE(5);
        WCASE(6); WCASE(7); WCASE(8); WCASE(9); WCASE(10); WCASE(11);
    default: break;
    }
#undef WCASE
}

BF16_TARGET void att_bf16_mm(float *c, long ldc, const uint32_t *a, long a_rs, long a_cs, const uint32_t *b,
                             long ldb, int m, int n, int kp, int accumulate)
{
    int j = 0;
    for (; j + 32 <= n; j += 32)
        wblock(c + j, ldc, a, a_rs, a_cs, b + j, ldb, m, kp, accumulate, 2, 0xFFFF);
    for (; j + 16 <= n; j += 16)
        wblock(c + j, ldc, a, a_rs, a_cs, b + j, ldb, m, kp, accumulate, 1, 0xFFFF);
    if (j < n)
        wblock(c + j, ldc, a, a_rs, a_cs, b + j, ldb, m, kp, accumulate, 1, simd_tail_mask16(n - j));
}
