/* attention_avx512.c - the attention table of the AVX-512 path (see
 * attention_kernel.h): the whole tile product on zmm register tiles, and
 * both softmax passes on 16 queries a vector. Column blocks of 32 go as
 * tiles of 6 rows x 2 zmm (12 accumulators, two B loads and six broadcasts
 * per 12 FMAs), the rest as tiles of 12 rows x 1 zmm, a last block of fewer
 * than 16 columns masked (AVX-512 masks cost nothing here, unlike AVX2's
 * maskstore on AMD cores); ragged rows are smaller tiles of the same kind.
 * The causal driver cuts diagonal tiles into blocks of mr = 6 rows (the AVX2
 * table's, so the blocks and the terms they skip are the same), which the
 * 6 x 32 tile takes whole. Every C element is the same fused sum over k in
 * order as the AVX2 tile's, and each softmax lane the AVX2 pass's
 * operations, so the two tables give the same bits. Compiled for AVX-512F
 * by the target attribute only, chosen at run time. */
#include "kernels/cpu/attention_kernel.h"

#include <immintrin.h>

#include "kernels/cpu/simd_avx512.h"

#define ZMM_ONLY __attribute__((target("avx512f"), always_inline)) static inline

/* C[mr x 16 nv] (=, +=) A[mr x k] B[k x 16 nv], the last zmm of each row
 * limited to the lanes of `last`. mr (<= 12 / nv), nv (1 or 2) are constants
 * at every call, so the loops unroll and the accumulators stay in registers. */
ZMM_ONLY void ztile(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b,
                    long ldb, int k, int accumulate, int mr, int nv, __mmask16 last)
{
    __m512 acc[12][2];
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < nv; v++)
            acc[i][v] = _mm512_setzero_ps();
    for (int p = 0; p < k; p++) {
        __m512 bv[2];
        for (int v = 0; v < nv; v++)
            bv[v] = v == nv - 1 ? _mm512_maskz_loadu_ps(last, b + 16 * v)
                                : _mm512_loadu_ps(b + 16 * v);
        const float *ap = a + (long)p * a_cs;
        for (int i = 0; i < mr; i++) {
            __m512 av = _mm512_set1_ps(ap[(long)i * a_rs]);
            for (int v = 0; v < nv; v++)
                acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
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

/* Every row of one column block of 16 nv columns: full tiles of 12 / nv rows,
 * then one tile of the ragged rows. */
ZMM_ONLY void zblock(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b,
                     long ldb, int m, int k, int accumulate, int nv, __mmask16 last)
{
    int tr = 12 / nv, i = 0;
    for (; i + tr <= m; i += tr)
        ztile(c + (long)i * ldc, ldc, a + (long)i * a_rs, a_rs, a_cs, b, ldb, k, accumulate, tr, nv,
              last);
    c += (long)i * ldc;
    a += (long)i * a_rs;
#define ZCASE(r)                                                                      \
    case r:                                                                           \
        ztile(c, ldc, a, a_rs, a_cs, b, ldb, k, accumulate, r, nv, last);             \
        break
    switch (m - i) {
        ZCASE(1); ZCASE(2); ZCASE(3); ZCASE(4); ZCASE(5);
        ZCASE(6); ZCASE(7); ZCASE(8); ZCASE(9); ZCASE(10); ZCASE(11);
    default: break;
    }
#undef ZCASE
}

__attribute__((target("avx512f")))
static void mm_avx512(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b,
                      long ldb, int m, int n, int k, int accumulate)
{
    int j = 0;
    for (; j + 32 <= n; j += 32)
        zblock(c + j, ldc, a, a_rs, a_cs, b + j, ldb, m, k, accumulate, 2, 0xFFFF);
    for (; j + 16 <= n; j += 16)
        zblock(c + j, ldc, a, a_rs, a_cs, b + j, ldb, m, k, accumulate, 1, 0xFFFF);
    if (j < n)
        zblock(c + j, ldc, a, a_rs, a_cs, b + j, ldb, m, k, accumulate, 1,
               simd_tail_mask16(n - j));
}

/* The two softmax passes on 16 queries a vector: each lane runs the AVX2
 * pass's operations in its order (simd_exp512 is simd_exp256 lane for lane),
 * so the bits are the same. */
__attribute__((target("avx512f")))
static void exp_cols_avx512(float *st, int ld, int nk, int nq, const float *mx, float *sum)
{
    for (int i = 0; i < nq; i += 16) {
        __mmask16 k = simd_tail_mask16(nq - i);
        __m512 m = _mm512_maskz_loadu_ps(k, mx + i), s = _mm512_setzero_ps();
        for (int j = 0; j < nk; j++) {
            float *row = st + (long)j * ld + i;
            __m512 e = simd_exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row), m));
            _mm512_mask_storeu_ps(row, k, e);
            s = _mm512_add_ps(s, e);
        }
        _mm512_mask_storeu_ps(sum + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, sum + i), s));
    }
}

__attribute__((target("avx512f")))
static void softmax_grad_avx512(float *st, float *dpt, int ld, int nk, int nq, const float *lse,
                                const float *delta, float scale)
{
    __m512 sc = _mm512_set1_ps(scale);
    for (int i = 0; i < nq; i += 16) {
        __mmask16 k = simd_tail_mask16(nq - i);
        __m512 l = _mm512_maskz_loadu_ps(k, lse + i), dl = _mm512_maskz_loadu_ps(k, delta + i);
        for (int j = 0; j < nk; j++) {
            float *srow = st + (long)j * ld + i, *drow = dpt + (long)j * ld + i;
            __m512 p = simd_exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, srow), l));
            __m512 dp = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, drow), dl);
            _mm512_mask_storeu_ps(srow, k, p);
            _mm512_mask_storeu_ps(drow, k, _mm512_mul_ps(_mm512_mul_ps(p, dp), sc));
        }
    }
}

/* mr: the AVX2 table's 6 (test_attention checks they agree). */
const att_kernels att_kernels_avx512 = {6, mm_avx512, exp_cols_avx512, softmax_grad_avx512};
