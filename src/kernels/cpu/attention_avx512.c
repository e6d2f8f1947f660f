/* attention_avx512.c - the attention table of the AVX-512 path (see
 * attention_kernel.h): the tile product's full 12-row x 16-column blocks as
 * zmm register tiles (one zmm per row, 12 accumulators), the rest of each
 * product and both softmax passes by the AVX2 table. Every C element is the
 * same fused sum over k in order as the AVX2 tile's, so the two tables give
 * the same bits; the tile rows (mr) stay the AVX2 table's, so the driver's
 * causal blocks are the same too. Compiled for AVX-512F by the target
 * attribute only, chosen at run time. */
#include "kernels/cpu/attention_kernel.h"

#include <immintrin.h>

#define ZR 12 /* rows of a zmm register tile */

#define ROW_FMA(r) acc##r = _mm512_fmadd_ps(_mm512_set1_ps(ap[(r) * a_rs]), bv, acc##r)
#define ROW_STORE(r)                                                        \
    do {                                                                    \
        float *cr_ = c + (long)(r) * ldc;                                   \
        if (accumulate)                                                     \
            acc##r = _mm512_add_ps(_mm512_loadu_ps(cr_), acc##r);           \
        _mm512_storeu_ps(cr_, acc##r);                                      \
    } while (0)

/* C[12 x 16] (=, +=) A[12 x k] B[k x 16]. */
__attribute__((target("avx512f")))
static void tile12x16(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b,
                      long ldb, int k, int accumulate)
{
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps(), acc2 = _mm512_setzero_ps();
    __m512 acc3 = _mm512_setzero_ps(), acc4 = _mm512_setzero_ps(), acc5 = _mm512_setzero_ps();
    __m512 acc6 = _mm512_setzero_ps(), acc7 = _mm512_setzero_ps(), acc8 = _mm512_setzero_ps();
    __m512 acc9 = _mm512_setzero_ps(), acc10 = _mm512_setzero_ps(), acc11 = _mm512_setzero_ps();
    for (int p = 0; p < k; p++) {
        __m512 bv = _mm512_loadu_ps(b + (long)p * ldb);
        const float *ap = a + (long)p * a_cs;
        ROW_FMA(0); ROW_FMA(1); ROW_FMA(2); ROW_FMA(3); ROW_FMA(4); ROW_FMA(5);
        ROW_FMA(6); ROW_FMA(7); ROW_FMA(8); ROW_FMA(9); ROW_FMA(10); ROW_FMA(11);
    }
    ROW_STORE(0); ROW_STORE(1); ROW_STORE(2); ROW_STORE(3); ROW_STORE(4); ROW_STORE(5);
    ROW_STORE(6); ROW_STORE(7); ROW_STORE(8); ROW_STORE(9); ROW_STORE(10); ROW_STORE(11);
}

static void mm_avx512(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b,
                      long ldb, int m, int n, int k, int accumulate)
{
    int m12 = m / ZR * ZR, n16 = n / 16 * 16;
    for (int j = 0; j < n16; j += 16)
        for (int i = 0; i < m12; i += ZR)
            tile12x16(c + (long)i * ldc + j, ldc, a + (long)i * a_rs, a_rs, a_cs, b + j, ldb, k,
                      accumulate);
    if (m12 < m && n16 > 0)   /* the last rows of the 16-column blocks */
        att_kernels_avx2.mm(c + (long)m12 * ldc, ldc, a + (long)m12 * a_rs, a_rs, a_cs, b, ldb,
                            m - m12, n16, k, accumulate);
    if (n16 < n)              /* the last columns, every row */
        att_kernels_avx2.mm(c + n16, ldc, a, a_rs, a_cs, b + n16, ldb, m, n - n16, k, accumulate);
}

static void exp_cols_avx512(float *st, int ld, int nk, int nq, const float *mx, float *sum)
{
    att_kernels_avx2.exp_cols(st, ld, nk, nq, mx, sum);
}

static void softmax_grad_avx512(float *st, float *dpt, int ld, int nk, int nq, const float *lse,
                                const float *delta, float scale)
{
    att_kernels_avx2.softmax_grad(st, dpt, ld, nk, nq, lse, delta, scale);
}

/* mr: the AVX2 table's 6 (test_attention checks they agree). */
const att_kernels att_kernels_avx512 = {6, mm_avx512, exp_cols_avx512, softmax_grad_avx512};
