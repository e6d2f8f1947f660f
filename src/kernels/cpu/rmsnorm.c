/* rmsnorm.c - RMSNorm forward/backward (see rmsnorm.h): the OpenMP drivers,
 * the portable row bodies (rmsnorm_avx2.c has the AVX2 ones, bitwise equal),
 * and the plain reference. The gain gradient is a reduction over rows; to
 * stay deterministic without atomics it is computed in a second pass in which
 * each thread owns a range of columns and walks all rows in order. */
#include "kernels/cpu/rmsnorm.h"
#include "core/omp_team.h"
#include "kernels/cpu/kernel_path.h"
#include "kernels/cpu/rmsnorm_kernel.h"
#include "kernels/cpu/vec.h"

#include <math.h>
#include <stddef.h>
#include <string.h>
#include <omp.h>

/* ---- the portable row bodies (see rmsnorm_kernel.h for the shared order) ---- */

static float forward_row(float *y, const float *x, const float *w, int C, float eps)
{
    float r = 1.0f / sqrtf(vec_dot(x, x, C) / (float)C + eps);
    for (int c = 0; c < C; c++)
        y[c] = x[c] * r * w[c];
    return r;
}

static void backward_row(float *dx, const float *dy, const float *x, const float *w,
                         float r, int C, int accumulate)
{
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= C; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += dy[i + k] * w[i + k] * x[i + k];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < C; i++)
        s += dy[i] * w[i] * x[i];
    float k = s * r * r * r / (float)C;
    if (accumulate)
        for (int c = 0; c < C; c++)
            dx[c] += r * w[c] * dy[c] - x[c] * k;
    else
        for (int c = 0; c < C; c++)
            dx[c] = r * w[c] * dy[c] - x[c] * k;
}

static void dw_columns(float *dw, const float *dy, const float *x, const float *rstd, int N,
                       int C, int c0, int c1)
{
    for (int n = 0; n < N; n++) {
        const float *dyr = dy + (size_t)n * C, *xr = x + (size_t)n * C;
        float r = rstd[n];
        for (int c = c0; c < c1; c++)
            dw[c] += dyr[c] * xr[c] * r;
    }
}

const rmsnorm_row_ops rmsnorm_row_ops_portable = {forward_row, backward_row, dw_columns};

static const rmsnorm_row_ops *row_ops(void)
{
    return kernel_path_avx2() ? &rmsnorm_row_ops_avx2 : &rmsnorm_row_ops_portable;
}

/* ---- the threaded drivers ---- */

void rmsnorm_forward(float *y, float *rstd, const float *x, const float *w,
                     int N, int C, float eps)
{
    const rmsnorm_row_ops *ops = row_ops();
    OMP_TEAM_FOR(omp_team_worth((size_t)N * C, OMP_TEAM_MIN_STREAM), int, n, N,
                 rstd[n] = ops->forward_row(y + (size_t)n * C, x + (size_t)n * C, w, C, eps));
}

void rmsnorm_forward_copy(float *y, float *rstd, float *copy, const float *x, const float *w,
                          int N, int C, float eps)
{
    const rmsnorm_row_ops *ops = row_ops();
    if (!omp_team_worth((size_t)N * C, OMP_TEAM_MIN_STREAM)) {
        rmsnorm_forward(y, rstd, x, w, N, C, eps);
        memcpy(copy, x, sizeof(float) * (size_t)N * C);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * C;
        rstd[n] = ops->forward_row(y + (size_t)n * C, xr, w, C, eps);
        memcpy(copy + (size_t)n * C, xr, sizeof(float) * (size_t)C);
    }
}

void rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x,
                      const float *w, const float *rstd, int N, int C,
                      int accumulate)
{
    const rmsnorm_row_ops *ops = row_ops();
    if (!omp_team_worth((size_t)N * C, OMP_TEAM_MIN_STREAM)) {
        for (int n = 0; n < N; n++)
            ops->backward_row(dx + (size_t)n * C, dy + (size_t)n * C, x + (size_t)n * C, w, rstd[n], C,
                              accumulate);
        ops->dw_columns(dw, dy, x, rstd, N, C, 0, C);
        return;
    }
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (int n = 0; n < N; n++)
            ops->backward_row(dx + (size_t)n * C, dy + (size_t)n * C, x + (size_t)n * C, w,
                              rstd[n], C, accumulate);
        /* dw: thread t owns columns [c0, c1) (whole vectors of 8 where it can)
         * and sums rows 0..N-1 in order: the same sum for any thread count. */
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int c0 = (int)((long)C * t / nt), c1 = (int)((long)C * (t + 1) / nt);
        if (C % 8 == 0) {
            c0 = (int)((long)(C / 8) * t / nt) * 8;
            c1 = (int)((long)(C / 8) * (t + 1) / nt) * 8;
        }
        ops->dw_columns(dw, dy, x, rstd, N, C, c0, c1);
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
