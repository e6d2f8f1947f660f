/* gemm_pack.c - portable packing of A blocks and B slices (see gemm_pack.h).
 * Each case walks the source along its stored rows; the zero padding of edge
 * panels lives here too. Loops that are plain copies are written so gcc does
 * not turn them into a memcpy call per few floats. */
#include "kernels/cpu/gemm_pack.h"

#include <stddef.h>

#include "kernels/cpu/gemm_kernel.h"

void gemm_pack_a(int trans_a, const float *A, int lda, int i0, int rows,
                 int k0, int kc, float *restrict dst)
{
    int panels = (rows + GEMM_MR - 1) / GEMM_MR;
    if (trans_a) {
        /* A stored K x M: the MR values for one k are contiguous; panel by
         * panel, so the writes are sequential. */
        for (int r = 0; r < panels; r++) {
            const float *src = A + (size_t)k0 * lda + i0 + r * GEMM_MR;
            float *d = dst + (size_t)r * GEMM_MR * kc;
            int n = rows - r * GEMM_MR;
            for (int k = 0; k < kc; k++) {
                const float *s = src + (size_t)k * lda;
                float *dk = d + (size_t)k * GEMM_MR;
                if (n >= GEMM_MR) {
                    dk[0] = s[0];
                    dk[1] = s[1];
                    dk[2] = s[2];
                    dk[3] = s[3];
                    dk[4] = s[4];
                    dk[5] = s[5];
                } else {
                    for (int i = 0; i < GEMM_MR; i++)
                        dk[i] = i < n ? s[i] : 0;
                }
            }
        }
        return;
    }
    /* A stored M x K: each panel reads its MR rows along k. */
    for (int r = 0; r < panels; r++) {
        float *d = dst + (size_t)r * GEMM_MR * kc;
        int n = rows - r * GEMM_MR;
        for (int i = 0; i < GEMM_MR; i++) {
            if (i < n) {
                const float *src = A + (size_t)(i0 + r * GEMM_MR + i) * lda + k0;
                for (int k = 0; k < kc; k++)
                    d[(size_t)k * GEMM_MR + i] = src[k];
            } else {
                for (int k = 0; k < kc; k++)
                    d[(size_t)k * GEMM_MR + i] = 0;
            }
        }
    }
}

void gemm_pack_b(int trans_b, const float *B, int ldb, int k0, int kc,
                 int k_lo, int k_hi, int j0, int cols, float *restrict dst)
{
    int panels = (cols + GEMM_NR - 1) / GEMM_NR;
    if (!trans_b) {
        /* B stored K x N: row k0+k holds op(B)(k, j0..) contiguously. */
        for (int k = k_lo; k < k_hi; k++) {
            const float *src = B + (size_t)(k0 + k) * ldb + j0;
            for (int p = 0; p < panels; p++) {
                float *d = dst + (size_t)p * GEMM_NR * kc + (size_t)k * GEMM_NR;
                const float *s = src + p * GEMM_NR;
                int n = cols - p * GEMM_NR;
                if (n >= GEMM_NR)
                    for (int j = 0; j < GEMM_NR; j++)
                        d[j] = s[j];
                else
                    for (int j = 0; j < GEMM_NR; j++)
                        d[j] = j < n ? s[j] : 0;
            }
        }
        return;
    }
    /* B stored N x K: column j of op(B) is row j of B, read along k. */
    for (int p = 0; p < panels; p++) {
        float *d = dst + (size_t)p * GEMM_NR * kc;
        int n = cols - p * GEMM_NR;
        for (int j = 0; j < GEMM_NR; j++) {
            if (j < n) {
                const float *src = B + (size_t)(j0 + p * GEMM_NR + j) * ldb + k0;
                for (int k = k_lo; k < k_hi; k++)
                    d[(size_t)k * GEMM_NR + j] = src[k];
            } else {
                for (int k = k_lo; k < k_hi; k++)
                    d[(size_t)k * GEMM_NR + j] = 0;
            }
        }
    }
}
