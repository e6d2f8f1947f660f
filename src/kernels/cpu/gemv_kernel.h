/* gemv_kernel.h - the AVX2 + FMA body of gemv (internal to gemv.c, which
 * shares the rows out and picks the path): rows [o0, o1) of gemv.h's
 * product, each row's sum computed alone. Call only when kernel_path_avx2()
 * says so. */
#ifndef TEMPO_GEMV_KERNEL_H
#define TEMPO_GEMV_KERNEL_H

void gemv_rows_avx2(float *y, const float *x, const float *W, int in, int o0, int o1, int accumulate);

#endif
