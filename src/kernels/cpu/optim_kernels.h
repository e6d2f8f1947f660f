/* optim_kernels.h - the elementwise parts of the optimizer (optim/optimizer.c)
 * as kernels: the AdamW update of a parameter range and the sum of squares
 * behind the gradient norm. Each runs on the OpenMP team and picks the AVX2
 * or plain C body once per call (kernel_path.h, TEMPO_KERNELS). The optimizer
 * logic (groups, learning rates, bias correction, Muon) stays in optim/. */
#ifndef TEMPO_OPTIM_KERNELS_H
#define TEMPO_OPTIM_KERNELS_H

#include <stddef.h>

/* Per-range constants of one AdamW step (t = steps taken, counting this one):
 *   step = lr / (1 - beta1^t), inv_bc2 = 1 / (1 - beta2^t), decay = 1 - lr wd,
 *   gscale = the clipping factor (1 when not clipping). */
typedef struct {
    float beta1, beta2, eps;
    float step, inv_bc2, decay, gscale;
} optim_adamw_coeffs;

/* p, g, m, v [n]: for each i, in this order of float operations,
 *   gi = g*gscale;  m = beta1 m + (1 - beta1) gi;  v = beta2 v + (1 - beta2) gi gi;
 *   p = p decay - step m / (sqrt(v inv_bc2) + eps).
 * The AVX2 body does exactly these operations (no fused multiply-adds), so
 * both paths and every thread count give bitwise the same result. */
void optim_kernel_adamw(float *p, const float *g, float *m, float *v, size_t n,
                        const optim_adamw_coeffs *c);

/* sum_i x[i]^2 in double: fixed chunks of OPTIM_SUMSQ_CHUNK summed in chunk
 * order, so the result does not depend on the thread count (the two paths
 * differ in the last bits: the AVX2 body keeps 8 partial sums per chunk). */
#define OPTIM_SUMSQ_CHUNK 16384
double optim_kernel_sum_squares(const float *x, size_t n);

/* Bodies over one contiguous range (optim_kernels_avx2.c); AVX2 + FMA only. */
void optim_kernel_adamw_avx2(float *p, const float *g, float *m, float *v, size_t n,
                             const optim_adamw_coeffs *c);
double optim_kernel_sum_squares_avx2(const float *x, size_t n);

#endif
