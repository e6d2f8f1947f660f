/* attention_kernel.h - the small operations the tiled attention (attention.c)
 * is built from, one table per kernel path: a register-blocked tile product
 * and the two softmax passes over a tile of scores. attention.c holds the
 * portable C table and the loops around it; attention_avx2.c the AVX2 + FMA
 * one. Internal to the attention kernels (and their tests).
 *
 * Score tiles are stored transposed, keys by rows and queries by columns,
 *   st[j * ld + i] = scale * q_i . k_j      (j < nk keys, i < nq queries),
 * so that per-query quantities (running max, sum, lse, delta) are vectors
 * along a row and every product below reads its right operand by rows. */
#ifndef TEMPO_ATTENTION_KERNEL_H
#define TEMPO_ATTENTION_KERNEL_H

#include <stdint.h>

typedef struct {
    /* Rows per register tile of mm: the driver cuts diagonal tiles into blocks
     * of this many rows so that each block's product can skip the terms the
     * causal mask makes exact zeros. */
    int mr;
    /* C[m x n] (=, or += when accumulate) A[m x k] B[k x n], where
     * A(i, p) = a[i * a_rs + p * a_cs] (any strides: A may be read transposed),
     * B(p, j) = b[p * ldb + j], C(i, j) = c[i * ldc + j]. Each C element is the
     * sum over p = 0..k-1 in increasing order (then added to C's old value when
     * accumulate), so results depend only on the arguments. k >= 1. */
    void (*mm)(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b,
               long ldb, int m, int n, int k, int accumulate);
    /* Forward softmax pass: st[j*ld+i] = exp(st[j*ld+i] - mx[i]) for j < nk,
     * i < nq, and sum[i] += the new values of column i (in j order). Entries
     * equal to -inf (masked) become 0. */
    void (*exp_cols)(float *st, int ld, int nk, int nq, const float *mx, float *sum);
    /* Backward pass: p = exp(st - lse[i]) into st, and
     * dpt[j*ld+i] = p * (dpt[j*ld+i] - delta[i]) * scale (the score gradient). */
    void (*softmax_grad)(float *st, float *dpt, int ld, int nk, int nq, const float *lse,
                         const float *delta, float scale);
} att_kernels;

/* The tables: plain C for any CPU, AVX2 + FMA (use only when
 * kernel_path_avx2() says so), and AVX-512 (the AVX2 table with the tile
 * product's full 12 x 16 blocks on zmm, the same bits; use only on the
 * avx512 path). */
extern const att_kernels att_kernels_portable;
extern const att_kernels att_kernels_avx2;
extern const att_kernels att_kernels_avx512;

/* The table for the current path (kernel_path.h, honours TEMPO_KERNELS). */
const att_kernels *att_kernels_select(void);

/* The bf16 mode's operations (attention_bf16.c; use only where
 * kernel_path_bf16_now() says so). A pair word holds two bf16 values of
 * consecutive k, the even k in its lower half; a value past the end is 0.
 *   att_bf16_rows:  dst[r * dst_ld + q] = (src[r * src_ld + 2q], src[.. + 2q + 1])
 *                   for r < rows, q < ceil(n / 2): each row's values paired along it;
 *   att_bf16_pairs: dst[p * dst_ld + j] = (src[2p * src_ld + j], src[(2p + 1) * src_ld + j])
 *                   for 2p < rows, j < n: two rows paired value by value;
 *   att_bf16_cols:  dst[q * dst_ld + r] = (mul src[r * src_ld + 2q], mul src[.. + 2q + 1])
 *                   for r < rows, q < ceil(n / 2): att_bf16_rows of mul times the
 *                   rows (each product rounded to fp32 first), stored transposed;
 *   att_bf16_mm:    C[m x n] (=, or += when accumulate) sum over p < kp of
 *                   A(i, p) . B(p, j), A(i, p) = a[i * a_rs + p * a_cs] and
 *                   B(p, j) = b[p * ldb + j] pair words, "." the pair's two
 *                   products (exact in fp32) added to the sum, p in increasing
 *                   order, the sums in fp32. kp >= 1. */
void att_bf16_rows(uint32_t *dst, long dst_ld, const float *src, long src_ld, int rows, int n);
void att_bf16_pairs(uint32_t *dst, long dst_ld, const float *src, long src_ld, int rows, int n);
void att_bf16_cols(uint32_t *dst, long dst_ld, const float *src, long src_ld, int rows, int n, float mul);
void att_bf16_mm(float *c, long ldc, const uint32_t *a, long a_rs, long a_cs, const uint32_t *b, long ldb,
                 int m, int n, int kp, int accumulate);

#endif
