/* gemm_kernel.h - the GEMM micro-kernel interface (internal to the GEMM).
 *
 * A micro-kernel multiplies one packed A micro-panel (GEMM_MR rows x kc) by
 * one packed B micro-panel (kc x GEMM_NR columns) and writes the
 * GEMM_MR x GEMM_NR tile into C (the AVX-512 ones 2 or 4 A micro-panels at
 * once, or 24 rows of A read unpacked where it is stored). It is the only
 * architecture-specific part of the GEMM; packing and the loops around it
 * are portable C (gemm.c, gemm_pack.c). Packed layouts (see gemm_pack.h):
 *   a[k * GEMM_MR + i] = op(A)(i, k),   b[k * GEMM_NR + j] = op(B)(k, j).
 * b is 64-byte aligned; a is 4-byte aligned (any micro-panel of a block).
 *
 * Summation order, which every kernel must keep so that results depend only
 * on the blocking: tile(i,j) = sum over k = 0..kc-1 in increasing order,
 * starting from 0, then C(i,j) = tile (accumulate == 0) or C(i,j) + tile
 * (accumulate == 1). Kernels may differ in whether a*b+c is fused. */
#ifndef TEMPO_GEMM_KERNEL_H
#define TEMPO_GEMM_KERNEL_H

#define GEMM_MR 6    /* rows of the register tile */
#define GEMM_NR 16   /* columns of the register tile (two ymm of 8 floats) */

/* c: the tile's top-left element, rows ldc floats apart. kc >= 1. */
typedef void (*gemm_microkernel_fn)(int kc, const float *a, const float *b,
                                    float *c, long ldc, int accumulate);

/* AVX2 + FMA (compiled with target("avx2,fma"); call only when the CPU has both). */
void gemm_kernel_avx2_6x16(int kc, const float *a, const float *b,
                           float *c, long ldc, int accumulate);

/* AVX-512F (target attribute; call only when the CPU has it): 4 or 2
 * consecutive packed A micro-panels (a, a + a_panel, ...: GEMM_MR rows each,
 * a_panel = GEMM_MR * kc floats apart) by one B micro-panel, a 24 x 16 or
 * 12 x 16 tile, every element summed as the AVX2 kernel sums it. */
void gemm_kernel_avx512_24x16(int kc, const float *a, long a_panel, const float *b,
                              float *c, long ldc, int accumulate);
void gemm_kernel_avx512_12x16(int kc, const float *a, long a_panel, const float *b,
                              float *c, long ldc, int accumulate);

/* AVX-512F: the 24 x 16 tile as gemm_kernel_avx512_24x16 computes it (the
 * same bits), with op(A) read in place instead of packed: op(A)(r, k) at
 * a[r * lda + k] (_rows: A stored as op(A), trans_a == 0) or a[k * lda + r]
 * (_cols: A stored transposed, trans_a == 1). */
void gemm_kernel_avx512_24x16_rows(int kc, const float *a, long lda, const float *b,
                                   float *c, long ldc, int accumulate);
void gemm_kernel_avx512_24x16_cols(int kc, const float *a, long lda, const float *b,
                                   float *c, long ldc, int accumulate);

/* AVX-512 BF16 (target attribute; call only when the CPU has it): the bf16
 * mode's tiles, 24 x 16 and 12 x 16 as the AVX-512 ones take their panels,
 * 6 x 16 as the AVX2 one. a and b hold the bf16 pair layout of
 * gemm_kernel_bf16.c (packed by gemm_pack_a_bf16 / gemm_pack_b_bf16) in the
 * fp32 panels' places; kc is the slice's depth in k (odd: the last pair's
 * second value is zero). Each element is summed from 0 over the pairs in
 * order, each pair's two products added by one vdpbf16ps. */
void gemm_kernel_bf16_24x16(int kc, const float *a, long a_panel, const float *b,
                            float *c, long ldc, int accumulate);
void gemm_kernel_bf16_12x16(int kc, const float *a, long a_panel, const float *b,
                            float *c, long ldc, int accumulate);
void gemm_kernel_bf16_6x16(int kc, const float *a, const float *b, float *c, long ldc,
                           int accumulate);

/* Plain C, same shape and order, for any CPU (not fused). */
void gemm_kernel_portable_6x16(int kc, const float *a, const float *b,
                               float *c, long ldc, int accumulate);

#endif
