/* lm_head.c - fused output head + cross-entropy (see lm_head.h): per chunk of
 * rows, logits by gemm_f32, soft-cap, log-softmax and loss per row (OpenMP over
 * rows, on the row passes of lm_head_kernel.h: the plain C table below or the
 * AVX2 one), then the two gradient products by gemm_f32. And the plain
 * reference. */
#include "kernels/cpu/lm_head.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_path.h"
#include "kernels/cpu/lm_head_kernel.h"

#include <math.h>

size_t lm_head_scratch_floats(int chunk_rows, int V)
{
    return (size_t)chunk_rows * (size_t)V;
}

/* ---- the plain C row passes (the portable table) ---- */

static void softcap_portable(float *z, int V, float cap)
{
    for (int v = 0; v < V; v++)
        z[v] = cap * tanhf(z[v] / cap);
}

static float max_portable(const float *z, int V)
{
    float mx = z[0];
    for (int v = 1; v < V; v++)
        mx = z[v] > mx ? z[v] : mx;
    return mx;
}

static double exp_sum_portable(float *z, int V, float mx, int store)
{
    double sum = 0;
    for (int v = 0; v < V; v++) {
        float e = expf(z[v] - mx);
        if (store)
            z[v] = e;
        sum += e;
    }
    return sum;
}

static void scale_portable(float *z, int V, float k)
{
    for (int v = 0; v < V; v++)
        z[v] *= k;
}

static void cap_grad_portable(float *z, int V, float lse, float cap, float k)
{
    for (int v = 0; v < V; v++) {
        float u = z[v] / cap;
        z[v] = expf(z[v] - lse) * k * (1.0f - u * u); /* d(cap tanh(x/cap))/dx = 1 - u^2 */
    }
}

const lm_head_row_ops lm_head_row_ops_portable = {softcap_portable, max_portable,
                                                  exp_sum_portable, scale_portable,
                                                  cap_grad_portable};

/* One row of logits z [V] (raw x.w): returns the loss; if want_grad, rewrites
 * z in place into scale * (softmax - onehot) * dcap. The loss does not depend
 * on want_grad. */
static float row_loss(const lm_head_row_ops *ops, float *z, int V, int target, float cap,
                      int want_grad, float scale)
{
    if (cap > 0)
        ops->softcap(z, V, cap);
    float mx = ops->max(z, V);
    float zt = z[target];
    double sum = ops->exp_sum(z, V, mx, want_grad && cap == 0); /* keep exp(z - mx) */
    float lse = mx + (float)log(sum);
    if (want_grad && cap == 0) {
        ops->scale(z, V, (float)(1.0 / sum) * scale);
        z[target] -= scale;
    } else if (want_grad) {
        ops->cap_grad(z, V, lse, cap, scale);
        float u = zt / cap;
        z[target] -= scale * (1.0f - u * u);
    }
    return lse - zt;
}

static void head_pass(float *losses, float *dx, float *dw, const float *x,
                      const float *w, const int32_t *targets, int N, int C, int V,
                      float softcap, float grad_scale, float *scratch, int chunk_rows)
{
    int want_grad = dx != NULL;
    const lm_head_row_ops *ops =
        kernel_path_avx2() ? &lm_head_row_ops_avx2 : &lm_head_row_ops_portable;
    for (int n0 = 0; n0 < N; n0 += chunk_rows) {
        int R = N - n0 < chunk_rows ? N - n0 : chunk_rows;
        const float *xc = x + (size_t)n0 * C;
        gemm_f32(0, 1, R, V, C, xc, C, w, C, 0.0f, scratch, V);
#pragma omp parallel for schedule(static)
        for (int r = 0; r < R; r++)
            losses[n0 + r] = row_loss(ops, scratch + (size_t)r * V, V, targets[n0 + r], softcap,
                                      want_grad, grad_scale);
        if (want_grad) {
            gemm_f32(0, 0, R, C, V, scratch, V, w, C, 0.0f, dx + (size_t)n0 * C, C);
            gemm_f32(1, 0, V, C, R, scratch, V, xc, C, 1.0f, dw, C);
        }
    }
}

void lm_head_loss_forward(float *losses, const float *x, const float *w,
                          const int32_t *targets, int N, int C, int V,
                          float softcap, float *scratch, int chunk_rows)
{
    head_pass(losses, NULL, NULL, x, w, targets, N, C, V, softcap, 0.0f, scratch, chunk_rows);
}

void lm_head_loss_forward_backward(float *losses, float *dx, float *dw,
                                   const float *x, const float *w,
                                   const int32_t *targets, int N, int C, int V,
                                   float softcap, float grad_scale, float *scratch,
                                   int chunk_rows)
{
    head_pass(losses, dx, dw, x, w, targets, N, C, V, softcap, grad_scale, scratch, chunk_rows);
}

void lm_head_loss_ref(float *losses, float *dx, float *dw, const float *x,
                      const float *w, const int32_t *targets, int N, int C, int V,
                      float softcap, float grad_scale, float *scratch)
{
    for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * C;
        double mx = -INFINITY;
        for (int v = 0; v < V; v++) {
            double s = 0;
            for (int c = 0; c < C; c++)
                s += (double)xn[c] * w[(size_t)v * C + c];
            if (softcap > 0)
                s = softcap * tanh(s / softcap);
            scratch[v] = (float)s;
            mx = s > mx ? s : mx;
        }
        double sum = 0;
        for (int v = 0; v < V; v++)
            sum += exp(scratch[v] - mx);
        double lse = mx + log(sum);
        losses[n] = (float)(lse - scratch[targets[n]]);
        if (!dx)
            continue;
        for (int c = 0; c < C; c++)
            dx[(size_t)n * C + c] = 0;
        for (int v = 0; v < V; v++) {
            double z = scratch[v];
            double g = exp(z - lse) - (v == targets[n]);
            if (softcap > 0)
                g *= 1.0 - (z / softcap) * (z / softcap);
            g *= grad_scale;
            for (int c = 0; c < C; c++) {
                dx[(size_t)n * C + c] += (float)(g * w[(size_t)v * C + c]);
                dw[(size_t)v * C + c] += (float)(g * xn[c]);
            }
        }
    }
}
