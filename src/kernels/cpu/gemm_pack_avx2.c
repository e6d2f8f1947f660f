/* gemm_pack_avx2.c - AVX2 packing (see gemm_pack.h): whole-ymm copies where
 * the source is contiguous, 8 x 8 register transposes where the portable
 * loops gather with strides (op(A) stored row-major, trans_a == 0: 6 rows
 * read along k and interleaved; op(B) stored as rows, trans_b == 1: 16 rows
 * interleaved). Same buffers as gemm_pack.c (packing only moves values), to
 * which partial edge panels are left. Compiled with target("avx2"); called
 * only on the AVX2 path. */
#include "kernels/cpu/gemm_pack.h"

#include <immintrin.h>
#include <stddef.h>

#include "kernels/cpu/gemm_kernel.h"

/* Software prefetch distances for the strided reads (rows of A ahead; floats
 * ahead along the 8 rows of B being transposed). Reads of prefetched lines
 * past the end of a matrix are harmless: prefetches never fault. */
#define PACK_PREFETCH_ROWS 8
#define PACK_PREFETCH_FLOATS 64

/* In place: rows r[0..7] (8 floats each) -> columns (r[q] = old column q). */
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

/* One full A panel from 6 stored rows (trans_a == 0). */
__attribute__((target("avx2")))
static void pack_a_rows6(const float *A, int lda, int i0, int k0, int kc, float *restrict dst)
{
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
        /* Column q holds the 6 values for k + q (and 2 zeros): store 6 as
         * 4 + 2 so nothing past the panel is touched. */
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
void gemm_pack_a_avx2(int trans_a, const float *A, int lda, int i0, int rows,
                      int k0, int kc, float *restrict dst)
{
    int full = rows / GEMM_MR;
    if (trans_a) {
        /* A stored K x M: 6 contiguous values per k and panel, moved as
         * 4 + 2. Groups of GROUP panels take each source row once (GROUP x
         * 24 bytes, a few whole lines): panel by panel, a row stride of a
         * power of two (lda 1024: 4 KiB) maps every row to one L1 set and
         * each line was fetched again for the next panel; all panels at
         * once scatters the writes over too many streams. */
        enum { GROUP = 8 };
        for (int r0 = 0; r0 < full; r0 += GROUP) {
            int g = full - r0 < GROUP ? full - r0 : GROUP;
            const float *src = A + (size_t)k0 * lda + i0 + r0 * GEMM_MR;
            float *d = dst + (size_t)r0 * GEMM_MR * kc;
            for (int k = 0; k < kc; k++) {
                const float *s = src + (size_t)k * lda;
                float *dk = d + (size_t)k * GEMM_MR;
                /* Each row is a new page (no hardware prefetch across pages):
                 * ask for the row PACK_PREFETCH_ROWS ahead. */
                if (k + PACK_PREFETCH_ROWS < kc)
                    for (int b = 0; b < g * GEMM_MR; b += 16)
                        _mm_prefetch((const char *)(s + (size_t)PACK_PREFETCH_ROWS * lda + b),
                                     _MM_HINT_T0);
                for (int r = 0; r < g; r++) {
                    float *dr = dk + (size_t)r * GEMM_MR * kc;
                    _mm_storeu_ps(dr, _mm_loadu_ps(s + r * GEMM_MR));
                    _mm_storel_pi((__m64 *)(dr + 4),
                                  _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(s + r * GEMM_MR + 4)));
                }
            }
        }
    } else {
        for (int r = 0; r < full; r++)
            pack_a_rows6(A, lda, i0 + r * GEMM_MR, k0, kc, dst + (size_t)r * GEMM_MR * kc);
    }
    if (rows > full * GEMM_MR)
        gemm_pack_a(trans_a, A, lda, i0 + full * GEMM_MR, rows - full * GEMM_MR, k0, kc,
                    dst + (size_t)full * GEMM_MR * kc);
}

__attribute__((target("avx2")))
void gemm_pack_b_avx2(int trans_b, const float *B, int ldb, int k0, int kc,
                      int k_lo, int k_hi, int j0, int cols, float *restrict dst)
{
    int full = cols / GEMM_NR;
    if (!trans_b) {
        for (int k = k_lo; k < k_hi; k++) {
            const float *src = B + (size_t)(k0 + k) * ldb + j0;
            float *d = dst + (size_t)k * GEMM_NR;
            for (int p = 0; p < full; p++) {
                float *dp = d + (size_t)p * GEMM_NR * kc;
                _mm256_store_ps(dp, _mm256_loadu_ps(src + p * GEMM_NR));
                _mm256_store_ps(dp + 8, _mm256_loadu_ps(src + p * GEMM_NR + 8));
            }
        }
    } else {
        for (int p = 0; p < full; p++) {
            const float *src = B + (size_t)(j0 + p * GEMM_NR) * ldb + k0;
            float *d = dst + (size_t)p * GEMM_NR * kc;
            /* One 8-row half at a time: 8 source rows in flight fit the 8
             * ways of an L1 set even when ldb is a power of two. */
            int k8 = k_lo + (k_hi - k_lo) / 8 * 8;
            for (int half = 0; half < 2; half++)
                for (int k = k_lo; k < k8; k += 8) {
                    __m256 r[8];
                    if ((k & 15) == 0)
                        for (int j = 0; j < 8; j++)
                            _mm_prefetch((const char *)(src + (size_t)(half * 8 + j) * ldb + k +
                                                        PACK_PREFETCH_FLOATS),
                                         _MM_HINT_T0);
                    for (int j = 0; j < 8; j++)
                        r[j] = _mm256_loadu_ps(src + (size_t)(half * 8 + j) * ldb + k);
                    transpose8(r);
                    for (int q = 0; q < 8; q++)
                        _mm256_store_ps(d + (size_t)(k + q) * GEMM_NR + half * 8, r[q]);
                }
            for (int k = k8; k < k_hi; k++)
                for (int j = 0; j < GEMM_NR; j++)
                    d[(size_t)k * GEMM_NR + j] = src[(size_t)j * ldb + k];
        }
    }
    if (cols > full * GEMM_NR)
        gemm_pack_b(trans_b, B, ldb, k0, kc, k_lo, k_hi, j0 + full * GEMM_NR,
                    cols - full * GEMM_NR, dst + (size_t)full * GEMM_NR * kc);
}
