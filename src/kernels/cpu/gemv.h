/* gemv.h - a matrix times one vector, y = W x (+ y), W [out, in] row-major:
 * the batch-1 decode's products (each weight read once per token). The
 * AVX2 + FMA path (gemv_avx2.c) reads each row as one stream into four
 * accumulators; the portable path is vec_dot per row. Rows are shared out
 * to the threads when the matrix is large enough to pay for a parallel
 * region. */
#ifndef TEMPO_GEMV_H
#define TEMPO_GEMV_H

/* y[o] = sum_i W[o * in + i] x[i] (+ y[o] when accumulate), o < out. */
void gemv_f32(float *y, const float *x, const float *W, int in, int out, int accumulate);

/* The same on the portable path alone (the reference the tests hold the AVX2 path to). */
void gemv_f32_portable(float *y, const float *x, const float *W, int in, int out, int accumulate);

#endif
