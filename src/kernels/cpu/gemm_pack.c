/* gemm_pack.c - packing of A and B micro-panels (see gemm_pack.h). Each case
 * walks the source in its storage order (rows of the stored matrix) so that
 * reads are sequential; the zero padding of edge panels lives here too. */
#include "kernels/cpu/gemm_pack.h"

#include <stddef.h>

#include "kernels/cpu/gemm_kernel.h"

void gemm_pack_a_panel(int trans_a, const float *A, int lda,
                       int i0, int rows, int k0, int kc, float *restrict dst)
{
    if (trans_a) {
        /* A stored K x M: the MR values for one k are contiguous. */
        for (int k = 0; k < kc; k++) {
            const float *src = A + (size_t)(k0 + k) * lda + i0;
            float *d = dst + (size_t)k * GEMM_MR;
            int i = 0;
            for (; i < rows; i++)
                d[i] = src[i];
            for (; i < GEMM_MR; i++)
                d[i] = 0;
        }
        return;
    }
    /* A stored M x K: read each of the MR rows along k. */
    if (rows == GEMM_MR) {
        const float *r0 = A + (size_t)(i0 + 0) * lda + k0;
        const float *r1 = A + (size_t)(i0 + 1) * lda + k0;
        const float *r2 = A + (size_t)(i0 + 2) * lda + k0;
        const float *r3 = A + (size_t)(i0 + 3) * lda + k0;
        const float *r4 = A + (size_t)(i0 + 4) * lda + k0;
        const float *r5 = A + (size_t)(i0 + 5) * lda + k0;
        for (int k = 0; k < kc; k++) {
            float *d = dst + (size_t)k * GEMM_MR;
            d[0] = r0[k];
            d[1] = r1[k];
            d[2] = r2[k];
            d[3] = r3[k];
            d[4] = r4[k];
            d[5] = r5[k];
        }
        return;
    }
    for (int i = 0; i < GEMM_MR; i++) {
        if (i < rows) {
            const float *src = A + (size_t)(i0 + i) * lda + k0;
            for (int k = 0; k < kc; k++)
                dst[(size_t)k * GEMM_MR + i] = src[k];
        } else {
            for (int k = 0; k < kc; k++)
                dst[(size_t)k * GEMM_MR + i] = 0;
        }
    }
}

void gemm_pack_b_panel(int trans_b, const float *B, int ldb,
                       int k0, int kc, int j0, int cols, float *restrict dst)
{
    if (!trans_b) {
        /* B stored K x N: the NR values for one k are contiguous. */
        for (int k = 0; k < kc; k++) {
            const float *src = B + (size_t)(k0 + k) * ldb + j0;
            float *d = dst + (size_t)k * GEMM_NR;
            if (cols == GEMM_NR) {
                for (int j = 0; j < GEMM_NR; j++)   /* (memcpy's call costs more) */
                    d[j] = src[j];
            } else {
                int j = 0;
                for (; j < cols; j++)
                    d[j] = src[j];
                for (; j < GEMM_NR; j++)
                    d[j] = 0;
            }
        }
        return;
    }
    /* B stored N x K: column j of op(B) is row j of B, read along k. */
    for (int j = 0; j < GEMM_NR; j++) {
        if (j < cols) {
            const float *src = B + (size_t)(j0 + j) * ldb + k0;
            for (int k = 0; k < kc; k++)
                dst[(size_t)k * GEMM_NR + j] = src[k];
        } else {
            for (int k = 0; k < kc; k++)
                dst[(size_t)k * GEMM_NR + j] = 0;
        }
    }
}
