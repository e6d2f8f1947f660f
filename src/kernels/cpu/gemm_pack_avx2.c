/* gemm_pack_avx2.c - AVX2 packing for the cases where the portable loops
 * gather with strides: op(A) rows stored row-major (trans_a == 0: 6 rows read
 * along k, interleaved) and op(B) columns stored as rows (trans_b == 1: 16
 * rows interleaved). Both become 8 x 8 register transposes; contiguous
 * copies use whole ymm moves. Same layouts and results as gemm_pack.c
 * (packing only moves values), to which edge panels are left. Compiled with
 * target("avx2"); called only on the AVX2 path. */
#include "kernels/cpu/gemm_pack.h"

#include <immintrin.h>
#include <stddef.h>

#include "kernels/cpu/gemm_kernel.h"

/* In place: rows r[0..7] (8 floats each) -> columns (r[k] = old column k). */
__attribute__((target("avx2"))) static inline void transpose8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

__attribute__((target("avx2")))
void gemm_pack_a_panel_avx2(int trans_a, const float *A, int lda,
                            int i0, int rows, int k0, int kc, float *restrict dst)
{
    if (trans_a || rows != GEMM_MR) {
        gemm_pack_a_panel(trans_a, A, lda, i0, rows, k0, kc, dst);
        return;
    }
    const float *src[GEMM_MR];
    for (int i = 0; i < GEMM_MR; i++)
        src[i] = A + (size_t)(i0 + i) * lda + k0;
    int k = 0;
    for (; k + 8 <= kc; k += 8) {
        __m256 r[8];
        for (int i = 0; i < GEMM_MR; i++)
            r[i] = _mm256_loadu_ps(src[i] + k);
        r[6] = r[7] = _mm256_setzero_ps();
        transpose8(r);
        /* Column q holds the 6 values for k + q (and 2 zeros): store 6 with
         * a 4 + 2 split so nothing past the panel is touched. */
        float *d = dst + (size_t)k * GEMM_MR;
        for (int q = 0; q < 8; q++) {
            _mm_storeu_ps(d + q * GEMM_MR, _mm256_castps256_ps128(r[q]));
            _mm_storel_pi((__m64 *)(d + q * GEMM_MR + 4), _mm256_extractf128_ps(r[q], 1));
        }
    }
    for (; k < kc; k++)
        for (int i = 0; i < GEMM_MR; i++)
            dst[(size_t)k * GEMM_MR + i] = src[i][k];
}

__attribute__((target("avx2")))
void gemm_pack_b_panel_avx2(int trans_b, const float *B, int ldb,
                            int k0, int kc, int j0, int cols, float *restrict dst)
{
    if (cols != GEMM_NR) {
        gemm_pack_b_panel(trans_b, B, ldb, k0, kc, j0, cols, dst);
        return;
    }
    if (!trans_b) {
        for (int k = 0; k < kc; k++) {
            const float *s = B + (size_t)(k0 + k) * ldb + j0;
            _mm256_store_ps(dst + (size_t)k * GEMM_NR, _mm256_loadu_ps(s));
            _mm256_store_ps(dst + (size_t)k * GEMM_NR + 8, _mm256_loadu_ps(s + 8));
        }
        return;
    }
    const float *src = B + (size_t)j0 * ldb + k0;
    int k = 0;
    for (; k + 8 <= kc; k += 8) {
        for (int half = 0; half < 2; half++) {
            __m256 r[8];
            for (int j = 0; j < 8; j++)
                r[j] = _mm256_loadu_ps(src + (size_t)(half * 8 + j) * ldb + k);
            transpose8(r);
            for (int q = 0; q < 8; q++)
                _mm256_store_ps(dst + (size_t)(k + q) * GEMM_NR + half * 8, r[q]);
        }
    }
    for (; k < kc; k++)
        for (int j = 0; j < GEMM_NR; j++)
            dst[(size_t)k * GEMM_NR + j] = src[(size_t)j * ldb + k];
}
