/* rmsnorm.c - RMSNorm forward/backward (see rmsnorm.h): an OpenMP version and
 * the plain reference. The gain gradient is a reduction over rows; to stay
 * deterministic without atomics it is computed in a second pass in which each
 * thread owns a range of columns and walks all rows in order. */
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/vec.h"

#include <math.h>
#include <stddef.h>
#include <omp.h>

static void forward_row(float *y, float *rstd, const float *x, const float *w, int C, float eps)
{
    float r = 1.0f / sqrtf(vec_dot(x, x, C) / (float)C + eps);
    *rstd = r;
    for (int c = 0; c < C; c++)
        y[c] = x[c] * r * w[c];
}

void rmsnorm_forward(float *y, float *rstd, const float *x, const float *w,
                     int N, int C, float eps)
{
#pragma omp parallel for schedule(static) if ((size_t)N * C > 16384)
    for (int n = 0; n < N; n++)
        forward_row(y + (size_t)n * C, rstd + n, x + (size_t)n * C, w, C, eps);
}

static void backward_row(float *dx, const float *dy, const float *x, const float *w,
                         float r, int C, int accumulate)
{
    float s = 0;
    for (int c = 0; c < C; c++)
        s += dy[c] * w[c] * x[c];
    float k = s * r * r * r / (float)C;
    if (accumulate)
        for (int c = 0; c < C; c++)
            dx[c] += r * w[c] * dy[c] - x[c] * k;
    else
        for (int c = 0; c < C; c++)
            dx[c] = r * w[c] * dy[c] - x[c] * k;
}

void rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x,
                      const float *w, const float *rstd, int N, int C,
                      int accumulate)
{
    int big = (size_t)N * C > 16384;
#pragma omp parallel if (big)
    {
#pragma omp for schedule(static) nowait
        for (int n = 0; n < N; n++)
            backward_row(dx + (size_t)n * C, dy + (size_t)n * C, x + (size_t)n * C, w,
                         rstd[n], C, accumulate);
        /* dw: thread t owns columns [c0, c1) and sums rows 0..N-1 in order. */
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = (int)((long)C * t / nt), c1 = (int)((long)C * (t + 1) / nt);
        for (int n = 0; n < N; n++) {
            const float *dyr = dy + (size_t)n * C, *xr = x + (size_t)n * C;
            float r = rstd[n];
            for (int c = c0; c < c1; c++)
                dw[c] += dyr[c] * xr[c] * r;
        }
    }
}

void rmsnorm_forward_ref(float *y, float *rstd, const float *x, const float *w,
                         int N, int C, float eps)
{
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * C;
        float ss = 0;
        for (int c = 0; c < C; c++)
            ss += xr[c] * xr[c];
        float r = 1.0f / sqrtf(ss / (float)C + eps);
        rstd[n] = r;
        for (int c = 0; c < C; c++)
            y[(size_t)n * C + c] = xr[c] * r * w[c];
    }
}

void rmsnorm_backward_ref(float *dx, float *dw, const float *dy, const float *x,
                          const float *w, const float *rstd, int N, int C,
                          int accumulate)
{
    for (int n = 0; n < N; n++) {
        const float *dyr = dy + (size_t)n * C, *xr = x + (size_t)n * C;
        float r = rstd[n];
        float s = 0;
        for (int c = 0; c < C; c++)
            s += dyr[c] * w[c] * xr[c];
        for (int c = 0; c < C; c++) {
            float g = r * w[c] * dyr[c] - xr[c] * s * r * r * r / (float)C;
            float *d = &dx[(size_t)n * C + c];
            *d = accumulate ? *d + g : g;
            dw[c] += dyr[c] * xr[c] * r;
        }
    }
}
