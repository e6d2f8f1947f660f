/* gemm.c - fp32 GEMM (see gemm.h). This first version is a straightforward
 * OpenMP loop nest that the kernels work replaces with a packed, blocked,
 * AVX2 micro-kernel implementation behind the same interface. */
#include "kernels/cpu/gemm.h"

#include <stddef.h>

static inline float at(const float *X, int ld, int trans, int r, int c)
{
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

void gemm_f32_ref(int trans_a, int trans_b, int M, int N, int K,
                  const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = 0;
            for (int k = 0; k < K; k++)
                s += at(A, lda, trans_a, i, k) * at(B, ldb, trans_b, k, j);
            float *c = &C[(size_t)i * ldc + j];
            *c = beta != 0 ? beta * *c + s : s;
        }
}

void gemm_f32(int trans_a, int trans_b, int M, int N, int K,
              const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
#pragma omp parallel for schedule(static) if ((size_t)M * N * K > 32768)
    for (int i = 0; i < M; i++) {
        float *crow = &C[(size_t)i * ldc];
        if (beta == 0)
            for (int j = 0; j < N; j++) crow[j] = 0;
        for (int k = 0; k < K; k++) {
            float a = at(A, lda, trans_a, i, k);
            if (!trans_b) {
                const float *brow = &B[(size_t)k * ldb];
                for (int j = 0; j < N; j++) crow[j] += a * brow[j];
            } else {
                for (int j = 0; j < N; j++) crow[j] += a * B[(size_t)j * ldb + k];
            }
        }
    }
}
