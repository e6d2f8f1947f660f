/* attention_avx2.c - the AVX2 + FMA table of attention operations (see
 * attention_kernel.h): the tile product as register tiles of 6 rows x 16
 * columns (12 ymm accumulators, enough independent FMA chains for both pipes),
 * with 8-column and masked tails, and the two softmax passes with the
 * vectorised exp of simd_avx2.h. The loops that call these live in
 * attention.c; nothing else here. */
#include "kernels/cpu/attention_kernel.h"
#include "kernels/cpu/simd_avx2.h"

#define MR 6 /* rows of a register tile */

/* One register tile: mr (1..6) rows x nv (1 or 2) vectors of 8 columns; with
 * masked, the single vector holds only the lanes in mask. mr, nv and masked
 * are constants at every call, so the loops unroll and the accumulators stay
 * in registers. */
SIMD_AVX2 void tile(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b,
                    long ldb, int k, int accumulate, int mr, int nv, int masked, __m256i mask)
{
    __m256 acc[MR][2];
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < nv; v++)
            acc[i][v] = _mm256_setzero_ps();
    for (int p = 0; p < k; p++) {
        __m256 bv[2];
        if (masked) {
            bv[0] = _mm256_maskload_ps(b, mask);
        } else {
            bv[0] = _mm256_loadu_ps(b);
            if (nv == 2)
                bv[1] = _mm256_loadu_ps(b + 8);
        }
        const float *ap = a + p * a_cs;
        for (int i = 0; i < mr; i++) {
            __m256 av = _mm256_broadcast_ss(ap + i * a_rs);
            for (int v = 0; v < nv; v++)
                acc[i][v] = _mm256_fmadd_ps(av, bv[v], acc[i][v]);
        }
        b += ldb;
    }
    for (int i = 0; i < mr; i++) {
        float *cr = c + i * ldc;
        if (masked) {
            if (accumulate)
                acc[i][0] = _mm256_add_ps(_mm256_maskload_ps(cr, mask), acc[i][0]);
            _mm256_maskstore_ps(cr, mask, acc[i][0]);
        } else {
            for (int v = 0; v < nv; v++) {
                if (accumulate)
                    acc[i][v] = _mm256_add_ps(_mm256_loadu_ps(cr + 8 * v), acc[i][v]);
                _mm256_storeu_ps(cr + 8 * v, acc[i][v]);
            }
        }
    }
}

/* All m rows of one column block (nv vectors wide, or masked). */
SIMD_AVX2 void column_block(float *c, long ldc, const float *a, long a_rs, long a_cs,
                            const float *b, long ldb, int m, int k, int accumulate, int nv,
                            int masked, __m256i mask)
{
    int i = 0;
    for (; i + MR <= m; i += MR)
        tile(c + i * ldc, ldc, a + i * a_rs, a_rs, a_cs, b, ldb, k, accumulate, MR, nv, masked,
             mask);
    c += i * ldc;
    a += i * a_rs;
    switch (m - i) {
    case 5: tile(c, ldc, a, a_rs, a_cs, b, ldb, k, accumulate, 5, nv, masked, mask); break;
    case 4: tile(c, ldc, a, a_rs, a_cs, b, ldb, k, accumulate, 4, nv, masked, mask); break;
    case 3: tile(c, ldc, a, a_rs, a_cs, b, ldb, k, accumulate, 3, nv, masked, mask); break;
    case 2: tile(c, ldc, a, a_rs, a_cs, b, ldb, k, accumulate, 2, nv, masked, mask); break;
    case 1: tile(c, ldc, a, a_rs, a_cs, b, ldb, k, accumulate, 1, nv, masked, mask); break;
    default: break;
    }
}

__attribute__((target("avx2,fma")))
static void mm_avx2(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b,
                    long ldb, int m, int n, int k, int accumulate)
{
    __m256i none = _mm256_setzero_si256();
    int j = 0;
    for (; j + 16 <= n; j += 16)
        column_block(c + j, ldc, a, a_rs, a_cs, b + j, ldb, m, k, accumulate, 2, 0, none);
    for (; j + 8 <= n; j += 8)
        column_block(c + j, ldc, a, a_rs, a_cs, b + j, ldb, m, k, accumulate, 1, 0, none);
    if (j < n)
        column_block(c + j, ldc, a, a_rs, a_cs, b + j, ldb, m, k, accumulate, 1, 1,
                     simd_tail_mask(n - j));
}

/* Lanes [i, i+8) of a tile row: whole vectors where nq allows (maskstore is
 * slow on AMD cores), masked only at the ragged end. */
SIMD_AVX2 __m256 row_load(const float *row, int full, __m256i mask)
{
    return full ? _mm256_loadu_ps(row) : _mm256_maskload_ps(row, mask);
}

SIMD_AVX2 void row_store(float *row, int full, __m256i mask, __m256 v)
{
    if (full)
        _mm256_storeu_ps(row, v);
    else
        _mm256_maskstore_ps(row, mask, v);
}

__attribute__((target("avx2,fma")))
static void exp_cols_avx2(float *st, int ld, int nk, int nq, const float *mx, float *sum)
{
    for (int i = 0; i < nq; i += 8) {
        int full = nq - i >= 8;
        __m256i mask = simd_tail_mask(full ? 8 : nq - i);
        __m256 m = row_load(mx + i, full, mask);
        __m256 s = _mm256_setzero_ps();
        for (int j = 0; j < nk; j++) {
            float *row = st + (long)j * ld + i;
            __m256 e = simd_exp256(_mm256_sub_ps(row_load(row, full, mask), m));
            row_store(row, full, mask, e);
            s = _mm256_add_ps(s, e);
        }
        row_store(sum + i, full, mask, _mm256_add_ps(row_load(sum + i, full, mask), s));
    }
}

__attribute__((target("avx2,fma")))
static void softmax_grad_avx2(float *st, float *dpt, int ld, int nk, int nq, const float *lse,
                              const float *delta, float scale)
{
    __m256 sc = _mm256_set1_ps(scale);
    for (int i = 0; i < nq; i += 8) {
        int full = nq - i >= 8;
        __m256i mask = simd_tail_mask(full ? 8 : nq - i);
        __m256 l = row_load(lse + i, full, mask), dl = row_load(delta + i, full, mask);
        for (int j = 0; j < nk; j++) {
            float *srow = st + (long)j * ld + i, *drow = dpt + (long)j * ld + i;
            __m256 p = simd_exp256(_mm256_sub_ps(row_load(srow, full, mask), l));
            __m256 dp = _mm256_sub_ps(row_load(drow, full, mask), dl);
            row_store(srow, full, mask, p);
            row_store(drow, full, mask, _mm256_mul_ps(_mm256_mul_ps(p, dp), sc));
        }
    }
}

const att_kernels att_kernels_avx2 = {MR, mm_avx2, exp_cols_avx2, softmax_grad_avx2};
