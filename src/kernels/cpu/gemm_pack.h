/* gemm_pack.h - copying blocks of op(A) and op(B) into the contiguous
 * micro-panel layout the micro-kernels read (internal to the GEMM).
 *
 * All four transposition cases are resolved here, so the kernels only ever
 * see one layout; rows/columns past the matrix edge are written as zeros,
 * so the kernels always compute full tiles and any M, N, K works. Each case
 * reads the source along its stored rows (sequential streams the hardware
 * prefetches), scattering into panels that sit in L1/L2.
 * Portable C in gemm_pack.c; the _avx2 variants (gemm_pack_avx2.c) do the
 * same with ymm moves and register transposes and give identical buffers. */
#ifndef TEMPO_GEMM_PACK_H
#define TEMPO_GEMM_PACK_H

/* A block: rows i0..i0+rows-1 of op(A) (any count >= 1), depth k0..k0+kc-1,
 * as ceil(rows / GEMM_MR) micro-panels; panel r at dst + r * GEMM_MR * kc
 * holds dst[k * GEMM_MR + i] = op(A)(i0 + r*GEMM_MR + i, k0 + k), zero past
 * the last row. op(A)(i,k) = trans_a ? A[k*lda + i] : A[i*lda + k]. */
void gemm_pack_a(int trans_a, const float *A, int lda, int i0, int rows,
                 int k0, int kc, float *dst);

/* Part of a B slice: columns j0..j0+cols-1 of op(B) (any count >= 1) as
 * ceil(cols / GEMM_NR) micro-panels of depth kc (slice rows k0..k0+kc-1);
 * panel p at dst + p * GEMM_NR * kc holds dst[k * GEMM_NR + j] =
 * op(B)(k0 + k, j0 + p*GEMM_NR + j), zero past the last column. Only slice
 * rows k_lo <= k < k_hi are written, so threads can share a slice.
 * op(B)(k,j) = trans_b ? B[j*ldb + k] : B[k*ldb + j]. */
void gemm_pack_b(int trans_b, const float *B, int ldb, int k0, int kc,
                 int k_lo, int k_hi, int j0, int cols, float *dst);

/* Same contracts, AVX2 (call only when the CPU has it); dst 32-byte aligned. */
void gemm_pack_a_avx2(int trans_a, const float *A, int lda, int i0, int rows,
                      int k0, int kc, float *dst);
void gemm_pack_b_avx2(int trans_b, const float *B, int ldb, int k0, int kc,
                      int k_lo, int k_hi, int j0, int cols, float *dst);

/* The bf16 mode's packings (AVX-512 BF16; call only when the CPU has it):
 * the same blocks, in the same places, as pair rows of bf16 words
 * (gemm_kernel_bf16.c): A panel r's word p * GEMM_MR + i holds op(A) at
 * depths 2p and 2p + 1 of its row i, B panel q's word p * GEMM_NR + j
 * op(B) at depths 2p and 2p + 1 of its column j; zero past the edges and
 * past kc. For B, pair rows k_lo / 2 up to (k_hi + 1) / 2 are written:
 * k_lo must be even, and k_hi too unless it is kc. */
void gemm_pack_a_bf16(int trans_a, const float *A, int lda, int i0, int rows,
                      int k0, int kc, float *dst);
void gemm_pack_b_bf16(int trans_b, const float *B, int ldb, int k0, int kc,
                      int k_lo, int k_hi, int j0, int cols, float *dst);

#endif
