/* rmsnorm.h - RMSNorm with a learnable gain, forward and backward.
 *
 *   rstd[n] = 1 / sqrt(mean_c(x[n,c]^2) + eps)
 *   y[n,c]  = x[n,c] * rstd[n] * w[c]
 *
 * Rows are independent, so the same functions serve the model's residual norms
 * (N = B*T rows of C = d_model) and QK-norm (N = B*T*H rows of C = head dim).
 * The row bodies have a plain C and an AVX2 version (chosen per call; see
 * rmsnorm_kernel.h), which give bitwise the same results.
 * Nothing else lives here (no residual adds, no attention). */
#ifndef TEMPO_RMSNORM_H
#define TEMPO_RMSNORM_H

/* x [N, C], w [C] -> y [N, C], rstd [N] (saved for the backward).
 * y may alias x (in place). Rows run in parallel (OpenMP, static). */
void rmsnorm_forward(float *y, float *rstd, const float *x, const float *w,
                     int N, int C, float eps);

/* rmsnorm_forward that also copies x into copy [N, C] in the same pass (the
 * residual stream's pass-through, to which a block then adds its output):
 * one read of x instead of two, and the copy runs on every thread. copy must
 * not alias x or y. */
void rmsnorm_forward_copy(float *y, float *rstd, float *copy, const float *x, const float *w,
                          int N, int C, float eps);

/* dy [N, C], x [N, C] (the forward input), w [C], rstd [N] ->
 *   dx [N, C]: overwritten when accumulate == 0, added to (+=) when 1
 *              (the residual stream's gradient accumulates);
 *   dw [C]:    always accumulated (+=), summed over rows in row order, so the
 *              result does not depend on the thread count.
 *   dx[n,c] = rstd*w[c]*dy[n,c] - x[n,c] * rstd^3 / C * sum_j dy[n,j] w[j] x[n,j]
 * dx must not alias dy, x. */
void rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x,
                      const float *w, const float *rstd, int N, int C,
                      int accumulate);

/* Plain single-threaded versions of the same contracts (the references). */
void rmsnorm_forward_ref(float *y, float *rstd, const float *x, const float *w,
                         int N, int C, float eps);
void rmsnorm_backward_ref(float *dx, float *dw, const float *dy, const float *x,
                          const float *w, const float *rstd, int N, int C,
                          int accumulate);

#endif
