/* gemm_pack.h - copying blocks of op(A) and op(B) into the contiguous
 * micro-panel layout the micro-kernels read (internal to the GEMM).
 *
 * All four transposition cases are resolved here, so the kernels only ever
 * see one layout; rows/columns past the matrix edge are written as zeros,
 * so the kernels always compute full tiles and any M, N, K works.
 * Portable C here (gemm_pack.c); the _avx2 variants (gemm_pack_avx2.c) do the
 * strided cases with register transposes and give identical buffers. */
#ifndef TEMPO_GEMM_PACK_H
#define TEMPO_GEMM_PACK_H

/* One A micro-panel: rows i0..i0+rows-1 (rows <= GEMM_MR) of op(A), depth
 * k0..k0+kc-1, into dst[k * GEMM_MR + i] (kc * GEMM_MR floats); rows past
 * `rows` are zero. op(A)(i,k) = trans_a ? A[k*lda + i] : A[i*lda + k]. */
void gemm_pack_a_panel(int trans_a, const float *A, int lda,
                       int i0, int rows, int k0, int kc, float *dst);

/* One B micro-panel: columns j0..j0+cols-1 (cols <= GEMM_NR) of op(B), depth
 * k0..k0+kc-1, into dst[k * GEMM_NR + j] (kc * GEMM_NR floats); columns past
 * `cols` are zero. op(B)(k,j) = trans_b ? B[j*ldb + k] : B[k*ldb + j]. */
void gemm_pack_b_panel(int trans_b, const float *B, int ldb,
                       int k0, int kc, int j0, int cols, float *dst);

/* Same contracts, AVX2 (call only when the CPU has it). dst of the B panel
 * must be 32-byte aligned (it is: panels start at multiples of 64 bytes). */
void gemm_pack_a_panel_avx2(int trans_a, const float *A, int lda,
                            int i0, int rows, int k0, int kc, float *dst);
void gemm_pack_b_panel_avx2(int trans_b, const float *B, int ldb,
                            int k0, int kc, int j0, int cols, float *dst);

#endif
