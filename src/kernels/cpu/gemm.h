/* gemm.h - fp32 matrix multiply, the one interface every backend implements.
 *
 *   C[M,N] = beta * C + op(A)[M,K] * op(B)[K,N]      (all row-major)
 *
 * op(X) = X when trans_x == 0, X^T when trans_x == 1. When trans_a == 0, A is
 * stored M x K with row stride lda; when 1, it is stored K x M. Likewise B is
 * K x N (trans_b == 0) or N x K (trans_b == 1). beta is 0 (overwrite; C's old
 * contents may be garbage, even NaN) or 1 (accumulate, e.g. weight gradients).
 * Threads: gemm_f32 uses the OpenMP team (all threads) when called from serial
 * code; called inside a parallel region it runs on the calling thread.
 * Results are deterministic for a given thread count. */
#ifndef TEMPO_GEMM_H
#define TEMPO_GEMM_H

void gemm_f32(int trans_a, int trans_b, int M, int N, int K,
              const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc);

/* The plain triple loop, the reference that tests compare against. */
void gemm_f32_ref(int trans_a, int trans_b, int M, int N, int K,
                  const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc);

#endif
