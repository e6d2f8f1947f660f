/* gpu_gemm.h - matrix products on the GPU through cuBLASLt, with the row-major
 * contract of kernels/cpu/gemm.h's gemm_f32 (its reference):
 *   C [M, N] = alpha op(A) op(B) + beta C,  op(X) = X^T when tX,
 * A [M, K] (or [K, M] when ta) with row stride lda, B [K, N] (or [N, K]) with
 * ldb, C with ldc. Operand types: fp32, or bf16 (A and B the same type);
 * C fp32 or bf16; accumulation always fp32. GPU_MATH_F32 computes fp32
 * products exactly as fp32 (the exact mode); GPU_MATH_TF32 lets fp32
 * operands go through the tensor cores as TF32 (bench peak's TF32 rate).
 * Each distinct shape's descriptors and algorithm are made once and cached.
 * Queued on the compute stream; errors are the context's pending error
 * (gpu.h). In the emulator the product is a plain loop (double
 * accumulation). */
#ifndef TEMPO_GPU_GEMM_H
#define TEMPO_GPU_GEMM_H

#include "kernels/cuda/gpu.h"

typedef enum { GPU_F32 = 0, GPU_BF16 = 1 } gpu_dtype;
typedef enum { GPU_MATH_F32 = 0, GPU_MATH_TF32 = 1 } gpu_math;

typedef struct {
    gpu_ptr p;
    gpu_dtype t;
    int ld;
} gpu_mat;

void gpu_gemm(gpu *g, int ta, int tb, int M, int N, int K, float alpha, gpu_mat A, gpu_mat B, float beta,
              gpu_mat C, gpu_math math);
/* The same with the result written to D (C's type and stride) instead of C:
 * D = alpha op(A) op(B) + beta C. */
void gpu_gemm_d(gpu *g, int ta, int tb, int M, int N, int K, float alpha, gpu_mat A, gpu_mat B, float beta,
                gpu_mat C, gpu_ptr D, gpu_math math);

/* batch products of the same shape at once: product i reads A.p + i *
 * stride_a elements (likewise B, C and D), stride in elements of each
 * operand's type. */
void gpu_gemm_batched(gpu *g, int ta, int tb, int M, int N, int K, float alpha, gpu_mat A, long long stride_a,
                      gpu_mat B, long long stride_b, float beta, gpu_mat C, gpu_ptr D, long long stride_c, int batch,
                      gpu_math math);

/* Frees the cached descriptors (gpu_close calls it). */
void gpu_gemm_cache_free(gpu *g);

#endif
