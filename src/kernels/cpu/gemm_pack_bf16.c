/* gemm_pack_bf16.c - packing of A blocks and B slices for the bf16 mode
 * (see gemm_pack.h and gemm_kernel_bf16.c for the layout: pair rows of
 * 32-bit words, two bf16 values of consecutive k each, in the fp32 panel's
 * place). Values are rounded by the CPU's own conversion (vcvtne2ps2bf16:
 * to nearest even, denormals to zero), the same in every case, so a value
 * gets the same bf16 whichever operand it is and whichever thread packs it.
 * Compiled for AVX-512 (F, BW, VL, BF16) by the target attribute only,
 * called only after cpuid said so. */
#include "kernels/cpu/gemm_pack.h"

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/gemm_kernel.h"
#include "kernels/cpu/simd_avx512.h"

#define PACK_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

static inline int min_int(int a, int b) { return a < b ? a : b; }

/* n (0..32) consecutive floats from src, zero past n, as 16 pair words
 * (word q: the values 2q and 2q + 1). Reads nothing past n. */
static inline PACK_TARGET __m512i row_pairs(const float *src, int n)
{
    __mmask16 m0 = (__mmask16)(n >= 16 ? 0xffff : (1u << n) - 1);
    __mmask16 m1 = (__mmask16)(n >= 32 ? 0xffff : n <= 16 ? 0 : (1u << (n - 16)) - 1);
    __m512 lo = _mm512_maskz_loadu_ps(m0, src);
    __m512 hi = _mm512_maskz_loadu_ps(m1, src + 16);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);   /* bf16 element e = value e */
}

/* Values k .. k_end - 1 of one row of op(A) or column of op(B), stored
 * contiguously from src[0] (= value 0), as pair words down a panel: word
 * p goes to d[p * stride] (p = k / 2 ..); zero past k_end. k is even. */
static inline PACK_TARGET void pairs_down(const float *src, int k, int k_end, uint32_t *d, int stride)
{
    for (; k < k_end; k += 32) {
        uint32_t w[16] __attribute__((aligned(64)));
        _mm512_store_si512(w, row_pairs(src + k, min_int(32, k_end - k)));
        int q_end = min_int(16, (k_end - k + 1) / 2);
        uint32_t *dk = d + (size_t)(k / 2) * stride;
        for (int q = 0; q < q_end; q++)
            dk[(size_t)q * stride] = w[q];
    }
}

/* n (0..16) consecutive floats of r0 and of r1 (NULL: zeros), zero past n,
 * as 16 pair words (word j: (r0[j], r1[j])). */
static inline PACK_TARGET __m512i two_rows_pairs(const float *r0, const float *r1, int n)
{
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                                24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                                16, 0);
    __mmask16 m = (__mmask16)(n >= 16 ? 0xffff : (1u << n) - 1);
    __m512 a = _mm512_maskz_loadu_ps(m, r0);
    __m512 b = r1 ? _mm512_maskz_loadu_ps(m, r1) : _mm512_setzero_ps();
    __m512i both = (__m512i)_mm512_cvtne2ps_pbh(b, a);   /* a's 16, then b's 16 */
    return _mm512_permutexvar_epi16(interleave, both);
}

/* Six rows' 16 pair words each (r[i]: row i's pairs p = 0..15) into the
 * panel's order, word p * 6 + i, as 6 zmm stored at d (96 words): output
 * word w of zmm o (w = 16 o + t) is row w % 6's pair w / 6. Each output
 * takes the three row pairs' permutes by one index (pair p, from the pair's
 * second row when i is odd: p + 16) and keeps each lane's pair by mask
 * (rows 2-3, rows 4-5). The tables follow from that rule. */
static const uint32_t PANEL6_IDX[GEMM_MR][16] __attribute__((aligned(64))) = {
    {0, 16, 0, 16, 0, 16, 1, 17, 1, 17, 1, 17, 2, 18, 2, 18},
    {2, 18, 3, 19, 3, 19, 3, 19, 4, 20, 4, 20, 4, 20, 5, 21},
    {5, 21, 5, 21, 6, 22, 6, 22, 6, 22, 7, 23, 7, 23, 7, 23},
    {8, 24, 8, 24, 8, 24, 9, 25, 9, 25, 9, 25, 10, 26, 10, 26},
    {10, 26, 11, 27, 11, 27, 11, 27, 12, 28, 12, 28, 12, 28, 13, 29},
    {13, 29, 13, 29, 14, 30, 14, 30, 14, 30, 15, 31, 15, 31, 15, 31},
};
static const uint16_t PANEL6_ROWS23[GEMM_MR] = {0xc30c, 0x0c30, 0x30c3, 0xc30c, 0x0c30, 0x30c3};
static const uint16_t PANEL6_ROWS45[GEMM_MR] = {0x0c30, 0x30c3, 0xc30c, 0x0c30, 0x30c3, 0xc30c};

static inline PACK_TARGET void panel_transpose6(const __m512i r[GEMM_MR], uint32_t *d)
{
#pragma GCC unroll 6
    for (int o = 0; o < GEMM_MR; o++) {
        __m512i idx = _mm512_load_si512(PANEL6_IDX[o]);
        __m512i v = _mm512_permutex2var_epi32(r[0], idx, r[1]);
        v = _mm512_mask_blend_epi32(PANEL6_ROWS23[o], v, _mm512_permutex2var_epi32(r[2], idx, r[3]));
        v = _mm512_mask_blend_epi32(PANEL6_ROWS45[o], v, _mm512_permutex2var_epi32(r[4], idx, r[5]));
        _mm512_storeu_si512(d + 16 * o, v);
    }
}

/* One pair row of A stored K x M (trans_a), 48 values of each of its two
 * rows (r1 NULL: zeros) into 8 whole panels: 3 x 16 pair words (one
 * conversion and one interleave each), then each panel's 6 words gathered
 * from the two vectors they fall in and stored at d + q * panel_words (8
 * words, the last two overwritten by the next pair row; 6, masked, where
 * that would pass the panel: whole == 0). The words of the 256-bit path. */
static inline PACK_TARGET void pair_row_48(const float *r0, const float *r1, uint32_t *d, size_t panel_words,
                                           int whole)
{
    __m512i w[4];
    for (int c = 0; c < 3; c++)
        w[c] = two_rows_pairs(r0 + 16 * c, r1 ? r1 + 16 * c : NULL, 16);
    w[3] = w[2];   /* the 8-word stores' last two words past the 48th: never kept */
#pragma GCC unroll 8
    for (int q = 0; q < 8; q++) {
        int s = 6 * q, lo = s / 16, off = s % 16;
        const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(off),
                                             _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
        __m256i v = _mm512_castsi512_si256(_mm512_permutex2var_epi32(w[lo], idx, w[lo + 1]));
        uint32_t *dq = d + (size_t)q * panel_words;
        if (whole)
            _mm256_storeu_si256((__m256i *)(void *)dq, v);
        else
            _mm256_mask_storeu_epi32(dq, (__mmask8)((1u << GEMM_MR) - 1), v);
    }
}

PACK_TARGET void gemm_pack_a_bf16(int trans_a, const float *A, int lda, int i0, int rows, int k0,
                                  int kc, float *dst)
{
    int panels = (rows + GEMM_MR - 1) / GEMM_MR, pairs = (kc + 1) / 2;
    if (trans_a) {
        /* A stored K x M: rows 2p and 2p + 1 hold every panel's values of
         * one pair, side by side. Each pair row goes to a panel as an 8-word
         * store whose last two words the next pair row overwrites (a 6-word
         * masked store where that would pass the panel's space, 6 kc words:
         * from pair row whole_pairs on). Panels lie 6 kc words apart, a
         * multiple of 4 KiB at kc 512, so they share an L1 set: a run of 8
         * whole panels takes every pair row before the next run (pair_row_48),
         * never more than 8 lines in flight; the panels after the last run go
         * pair by pair, panel by panel, on 256-bit loads of six. */
        const __m256i interleave = _mm256_set_epi16(15, 7, 14, 6, 13, 5, 12, 4, 11, 3, 10, 2, 9, 1, 8, 0);
        const int groups = rows / 48;   /* runs of 8 whole panels, 48 values of each row */
        const int whole_pairs = (GEMM_MR * kc - 2) / GEMM_MR;   /* (p + 1) 6 + 2 <= 6 kc */
        for (int g = 0; g < groups; g++)
            for (int p = 0; p < pairs; p++) {
                const float *r0 = A + (size_t)(k0 + 2 * p) * lda + i0 + 48 * g;
                pair_row_48(r0, 2 * p + 1 < kc ? r0 + lda : NULL,
                            (uint32_t *)(void *)(dst + (size_t)8 * g * GEMM_MR * kc) + (size_t)p * GEMM_MR,
                            (size_t)GEMM_MR * kc, p < whole_pairs);
            }
        for (int p = 0; p < pairs && 8 * groups < panels; p++) {
            const float *r0 = A + (size_t)(k0 + 2 * p) * lda + i0;
            int second = 2 * p + 1 < kc, whole = p < whole_pairs;
            for (int r = 8 * groups; r < panels; r++) {
                int n = min_int(GEMM_MR, rows - r * GEMM_MR);
                const __mmask8 m = (__mmask8)((1u << n) - 1);
                __m256 a = _mm256_maskz_loadu_ps(m, r0 + r * GEMM_MR);
                __m256 b = second ? _mm256_maskz_loadu_ps(m, r0 + lda + r * GEMM_MR) : _mm256_setzero_ps();
                __m256i w = _mm256_permutexvar_epi16(interleave, (__m256i)_mm256_cvtne2ps_pbh(b, a));
                uint32_t *dp = (uint32_t *)(void *)(dst + (size_t)r * GEMM_MR * kc) + (size_t)p * GEMM_MR;
                if (whole)
                    _mm256_storeu_si256((__m256i *)(void *)dp, w);
                else
                    _mm256_mask_storeu_epi32(dp, (__mmask8)((1u << GEMM_MR) - 1), w);
            }
        }
        return;
    }
    for (int r = 0; r < panels; r++) {
        uint32_t *d = (uint32_t *)(void *)(dst + (size_t)r * GEMM_MR * kc);
        int n = min_int(GEMM_MR, rows - r * GEMM_MR);
        /* A stored M x K: each row read along k, 32 values a step; six
         * rows' pairs transposed into the panel's order, 16 pair rows a
         * step while whole, the rest scattered word by word. */
        int k_whole = kc / 32 * 32;
        for (int k = 0; k < k_whole; k += 32) {
            __m512i rows_w[GEMM_MR];
            for (int i = 0; i < GEMM_MR; i++)
                rows_w[i] = i < n ? row_pairs(A + (size_t)(i0 + r * GEMM_MR + i) * lda + k0 + k, 32)
                                  : _mm512_setzero_si512();
            panel_transpose6(rows_w, d + (size_t)(k / 2) * GEMM_MR);
        }
        if (k_whole == kc)
            continue;
        for (int i = 0; i < GEMM_MR; i++) {
            if (i >= n) {
                for (int p = k_whole / 2; p < pairs; p++)
                    d[(size_t)p * GEMM_MR + i] = 0;
                continue;
            }
            pairs_down(A + (size_t)(i0 + r * GEMM_MR + i) * lda + k0, k_whole, kc, d + i, GEMM_MR);
        }
    }
}

PACK_TARGET void gemm_pack_b_bf16(int trans_b, const float *B, int ldb, int k0, int kc, int k_lo,
                                  int k_hi, int j0, int cols, float *dst)
{
    int panels = (cols + GEMM_NR - 1) / GEMM_NR;
    int p_lo = k_lo / 2, p_hi = (k_hi + 1) / 2;   /* k_lo is even (gemm_pack.h) */
    if (!trans_b) {
        /* B stored K x N: rows 2p and 2p + 1 interleaved, 16 columns a store. */
        for (int p = p_lo; p < p_hi; p++) {
            const float *r0 = B + (size_t)(k0 + 2 * p) * ldb + j0;
            const float *r1 = 2 * p + 1 < kc ? r0 + ldb : NULL;
            for (int q = 0; q < panels; q++) {
                int n = min_int(GEMM_NR, cols - q * GEMM_NR);
                __m512i w = two_rows_pairs(r0 + q * GEMM_NR, r1 ? r1 + q * GEMM_NR : NULL, n);
                _mm512_store_si512(dst + (size_t)q * GEMM_NR * kc + (size_t)p * GEMM_NR, w);
            }
        }
        return;
    }
    /* B stored N x K: column j of op(B) is row j of B, read along k. A
     * whole panel's 16 rows go 32 values (16 pair words) a step, the 16 x 16
     * words transposed into 16 pair rows; the rest (a partial panel, the
     * last k short of 32) is scattered word by word. */
    for (int q = 0; q < panels; q++) {
        uint32_t *d = (uint32_t *)(void *)(dst + (size_t)q * GEMM_NR * kc);
        const float *bq = B + (size_t)(j0 + q * GEMM_NR) * ldb + k0;
        int n = min_int(GEMM_NR, cols - q * GEMM_NR), k = k_lo;
        if (n == GEMM_NR) {
            for (; k + 32 <= k_hi; k += 32) {
                __m512i r[GEMM_NR];
                for (int j = 0; j < GEMM_NR; j++)
                    r[j] = row_pairs(bq + (size_t)j * ldb + k, 32);
                /* 16 pair rows of the panel: word p * 16 + j = r[j]'s word p */
                __m512i w[GEMM_NR];
                simd_transpose16_epi32(r, w);
                for (int p = 0; p < GEMM_NR; p++)
                    _mm512_storeu_si512(d + (size_t)(k / 2 + p) * GEMM_NR, w[p]);
            }
        }
        if (k == k_hi)
            continue;
        for (int j = 0; j < GEMM_NR; j++) {
            if (j >= n) {
                for (int p = k / 2; p < p_hi; p++)
                    d[(size_t)p * GEMM_NR + j] = 0;
                continue;
            }
            pairs_down(bq + (size_t)j * ldb, k, k_hi, d + j, GEMM_NR);
        }
    }
}
