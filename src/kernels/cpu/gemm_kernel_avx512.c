/* gemm_kernel_avx512.c - the AVX-512 GEMM micro-kernels: 2 or 4 of the
 * packed 6-row A micro-panels at once against one 16-column B micro-panel,
 * a 12 x 16 or 24 x 16 tile held in 12 or 24 zmm accumulators (one zmm per
 * row). Per k step: one aligned load of the B row, one broadcast of A per
 * row, one FMA per row. They read the AVX2 kernel's packed layouts and keep
 * its summation order (each element from 0 over k in order, fused, then
 * stored or added to C), so they give bitwise the AVX2 kernel's results on
 * the same blocking: only the tile is taller. On a CPU with 512-bit FMA
 * units that doubles the multiply-adds per instruction. Two more 24 x 16
 * kernels read A unpacked, where the caller stores it (rows or columns),
 * with the same loads and order. Compiled for AVX-512F by the target
 * attribute only, called only after cpuid said so. */
#include "kernels/cpu/gemm_kernel.h"

#include <immintrin.h>

#define ROW_FMA(r, ap)                                                       \
    c##r = _mm512_fmadd_ps(_mm512_set1_ps((ap)[k * GEMM_MR + (r) % GEMM_MR]), b0, c##r)

#define ROW_FMA_AT(r) c##r = _mm512_fmadd_ps(_mm512_set1_ps(ak[r]), b0, c##r)

#define ROW_STORE(r)                                                         \
    do {                                                                     \
        float *cr_ = c + (long)(r) * ldc;                                    \
        if (accumulate)                                                      \
            c##r = _mm512_add_ps(_mm512_loadu_ps(cr_), c##r);                \
        _mm512_storeu_ps(cr_, c##r);                                         \
    } while (0)

#define ACCUMULATORS_24                                                          \
    __m512 c0 = _mm512_setzero_ps(), c1 = _mm512_setzero_ps(), c2 = _mm512_setzero_ps();    \
    __m512 c3 = _mm512_setzero_ps(), c4 = _mm512_setzero_ps(), c5 = _mm512_setzero_ps();    \
    __m512 c6 = _mm512_setzero_ps(), c7 = _mm512_setzero_ps(), c8 = _mm512_setzero_ps();    \
    __m512 c9 = _mm512_setzero_ps(), c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps();  \
    __m512 c12 = _mm512_setzero_ps(), c13 = _mm512_setzero_ps(), c14 = _mm512_setzero_ps(); \
    __m512 c15 = _mm512_setzero_ps(), c16 = _mm512_setzero_ps(), c17 = _mm512_setzero_ps(); \
    __m512 c18 = _mm512_setzero_ps(), c19 = _mm512_setzero_ps(), c20 = _mm512_setzero_ps(); \
    __m512 c21 = _mm512_setzero_ps(), c22 = _mm512_setzero_ps(), c23 = _mm512_setzero_ps()

/* The 24 zeroed accumulators, and the tile's rows of C asked for while the
 * sums run (they are read or written once at the end). */
#define TILE24_BEGIN                                                             \
    ACCUMULATORS_24;                                                             \
    for (int r_ = 0; r_ < 4 * GEMM_MR; r_++)                                     \
        _mm_prefetch((const char *)(c + r_ * ldc), _MM_HINT_T0)

#define STORE_24                                                                 \
    ROW_STORE(0); ROW_STORE(1); ROW_STORE(2); ROW_STORE(3); ROW_STORE(4); ROW_STORE(5);       \
    ROW_STORE(6); ROW_STORE(7); ROW_STORE(8); ROW_STORE(9); ROW_STORE(10); ROW_STORE(11);     \
    ROW_STORE(12); ROW_STORE(13); ROW_STORE(14); ROW_STORE(15); ROW_STORE(16); ROW_STORE(17); \
    ROW_STORE(18); ROW_STORE(19); ROW_STORE(20); ROW_STORE(21); ROW_STORE(22); ROW_STORE(23)

__attribute__((target("avx512f")))
void gemm_kernel_avx512_24x16(int kc, const float *restrict a, long a_panel,
                              const float *restrict b, float *restrict c, long ldc,
                              int accumulate)
{
    const float *a0 = a, *a1 = a + a_panel, *a2 = a + 2 * a_panel, *a3 = a + 3 * a_panel;
    TILE24_BEGIN;
#pragma GCC unroll 2
    for (int k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b + (long)k * GEMM_NR);
        ROW_FMA(0, a0); ROW_FMA(1, a0); ROW_FMA(2, a0); ROW_FMA(3, a0); ROW_FMA(4, a0); ROW_FMA(5, a0);
        ROW_FMA(6, a1); ROW_FMA(7, a1); ROW_FMA(8, a1); ROW_FMA(9, a1); ROW_FMA(10, a1); ROW_FMA(11, a1);
        ROW_FMA(12, a2); ROW_FMA(13, a2); ROW_FMA(14, a2); ROW_FMA(15, a2); ROW_FMA(16, a2); ROW_FMA(17, a2);
        ROW_FMA(18, a3); ROW_FMA(19, a3); ROW_FMA(20, a3); ROW_FMA(21, a3); ROW_FMA(22, a3); ROW_FMA(23, a3);
    }
    STORE_24;
}

__attribute__((target("avx512f")))
void gemm_kernel_avx512_12x16(int kc, const float *restrict a, long a_panel,
                              const float *restrict b, float *restrict c, long ldc,
                              int accumulate)
{
    const float *a0 = a, *a1 = a + a_panel;
    __m512 c0 = _mm512_setzero_ps(), c1 = _mm512_setzero_ps(), c2 = _mm512_setzero_ps();
    __m512 c3 = _mm512_setzero_ps(), c4 = _mm512_setzero_ps(), c5 = _mm512_setzero_ps();
    __m512 c6 = _mm512_setzero_ps(), c7 = _mm512_setzero_ps(), c8 = _mm512_setzero_ps();
    __m512 c9 = _mm512_setzero_ps(), c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps();
    for (int r = 0; r < 2 * GEMM_MR; r++)
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b + (long)k * GEMM_NR);
        ROW_FMA(0, a0); ROW_FMA(1, a0); ROW_FMA(2, a0); ROW_FMA(3, a0); ROW_FMA(4, a0); ROW_FMA(5, a0);
        ROW_FMA(6, a1); ROW_FMA(7, a1); ROW_FMA(8, a1); ROW_FMA(9, a1); ROW_FMA(10, a1); ROW_FMA(11, a1);
    }
    ROW_STORE(0); ROW_STORE(1); ROW_STORE(2); ROW_STORE(3); ROW_STORE(4); ROW_STORE(5);
    ROW_STORE(6); ROW_STORE(7); ROW_STORE(8); ROW_STORE(9); ROW_STORE(10); ROW_STORE(11);
}

/* The 24 x 16 tile with A read where it is stored, not packed: op(A)(r, k)
 * at a[r * lda + k] (trans_a == 0: 24 rows, each read along k) or at
 * a[k * lda + r] (trans_a == 1: 24 contiguous values per k). The same
 * loads, FMAs and order as gemm_kernel_avx512_24x16, so the same bits; what
 * they save is packing the A block. Rows of the trans_a == 0 form go in
 * threes from one pointer each (p, p + lda, p + 2 lda: one index register
 * at scales 1 and 2), eight pointers stepping along k. */
#define ROWS3_FMA(g, r0, r1, r2)                                                 \
    c##r0 = _mm512_fmadd_ps(_mm512_set1_ps(p##g[0]), b0, c##r0);                \
    c##r1 = _mm512_fmadd_ps(_mm512_set1_ps(p##g[lda]), b0, c##r1);              \
    c##r2 = _mm512_fmadd_ps(_mm512_set1_ps(p##g[2 * lda]), b0, c##r2)

__attribute__((target("avx512f")))
void gemm_kernel_avx512_24x16_rows(int kc, const float *restrict a, long lda,
                                   const float *restrict b, float *restrict c, long ldc,
                                   int accumulate)
{
    const float *p0 = a, *p1 = a + 3 * lda, *p2 = a + 6 * lda, *p3 = a + 9 * lda;
    const float *p4 = a + 12 * lda, *p5 = a + 15 * lda, *p6 = a + 18 * lda, *p7 = a + 21 * lda;
    TILE24_BEGIN;
#pragma GCC unroll 2
    for (int k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b + (long)k * GEMM_NR);
        ROWS3_FMA(0, 0, 1, 2); ROWS3_FMA(1, 3, 4, 5); ROWS3_FMA(2, 6, 7, 8);
        ROWS3_FMA(3, 9, 10, 11); ROWS3_FMA(4, 12, 13, 14); ROWS3_FMA(5, 15, 16, 17);
        ROWS3_FMA(6, 18, 19, 20); ROWS3_FMA(7, 21, 22, 23);
        p0++; p1++; p2++; p3++; p4++; p5++; p6++; p7++;
    }
    STORE_24;
}

__attribute__((target("avx512f")))
void gemm_kernel_avx512_24x16_cols(int kc, const float *restrict a, long lda,
                                   const float *restrict b, float *restrict c, long ldc,
                                   int accumulate)
{
    TILE24_BEGIN;
#pragma GCC unroll 2
    for (int k = 0; k < kc; k++) {
        const float *ak = a + k * lda;
        __m512 b0 = _mm512_load_ps(b + (long)k * GEMM_NR);
        ROW_FMA_AT(0); ROW_FMA_AT(1); ROW_FMA_AT(2); ROW_FMA_AT(3); ROW_FMA_AT(4); ROW_FMA_AT(5);
        ROW_FMA_AT(6); ROW_FMA_AT(7); ROW_FMA_AT(8); ROW_FMA_AT(9); ROW_FMA_AT(10); ROW_FMA_AT(11);
        ROW_FMA_AT(12); ROW_FMA_AT(13); ROW_FMA_AT(14); ROW_FMA_AT(15); ROW_FMA_AT(16); ROW_FMA_AT(17);
        ROW_FMA_AT(18); ROW_FMA_AT(19); ROW_FMA_AT(20); ROW_FMA_AT(21); ROW_FMA_AT(22); ROW_FMA_AT(23);
    }
    STORE_24;
}
