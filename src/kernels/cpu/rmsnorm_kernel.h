/* rmsnorm_kernel.h - the per-row bodies of RMSNorm (internal to rmsnorm.c),
 * one table per kernel path. Both paths do the same float operations in the
 * same order (sums of squares and dot products in 8 interleaved partial sums
 * combined as ((0+1)+(2+3))+((4+5)+(6+7)), then the tail; no fused
 * multiply-adds), so their results are bitwise equal. */
#ifndef TEMPO_RMSNORM_KERNEL_H
#define TEMPO_RMSNORM_KERNEL_H

typedef struct {
    /* y [C] = x * r * w with r = 1 / sqrt(sum(x^2) / C + eps); returns r. */
    float (*forward_row)(float *y, const float *x, const float *w, int C, float eps);
    /* dx [C] (= or +=) r w dy - x k, k = (sum dy w x) r^3 / C. */
    void (*backward_row)(float *dx, const float *dy, const float *x, const float *w, float r,
                         int C, int accumulate);
    /* dw[c] += dy[n,c] x[n,c] rstd[n] for rows n = 0..N-1 in order, columns
     * c0 <= c < c1 (rows C floats apart). */
    void (*dw_columns)(float *dw, const float *dy, const float *x, const float *rstd, int N,
                       int C, int c0, int c1);
} rmsnorm_row_ops;

extern const rmsnorm_row_ops rmsnorm_row_ops_portable;
extern const rmsnorm_row_ops rmsnorm_row_ops_avx2; /* only when kernel_path_avx2() */

#endif
