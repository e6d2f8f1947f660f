/* rmsnorm_avx2.c - the AVX2 RMSNorm row bodies (see rmsnorm_kernel.h): 8
 * columns per vector, lane k holding partial sum k, exactly the portable
 * operations in the same order (no FMA), so results are bitwise the
 * portable ones. Nothing else here. */
#include "kernels/cpu/rmsnorm_kernel.h"
#include "kernels/cpu/simd_avx2.h"

#include <math.h>

/* ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), the order of vec_dot. */
SIMD_AVX2 float lanes_sum(__m256 v)
{
    float l[8];
    _mm256_storeu_ps(l, v);
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

__attribute__((target("avx2,fma")))
static float forward_row_avx2(float *y, const float *x, const float *w, int C, float eps)
{
    __m256 acc = _mm256_setzero_ps();
    int c = 0;
    for (; c + 8 <= C; c += 8) {
        __m256 xv = _mm256_loadu_ps(x + c);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(xv, xv));
    }
    float s = lanes_sum(acc);
    for (int t = c; t < C; t++)
        s += x[t] * x[t];
    float r = 1.0f / sqrtf(s / (float)C + eps);
    __m256 rv = _mm256_set1_ps(r);
    for (c = 0; c + 8 <= C; c += 8)
        _mm256_storeu_ps(y + c, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + c), rv),
                                              _mm256_loadu_ps(w + c)));
    for (; c < C; c++)
        y[c] = x[c] * r * w[c];
    return r;
}

__attribute__((target("avx2,fma")))
static void backward_row_avx2(float *dx, const float *dy, const float *x, const float *w,
                              float r, int C, int accumulate)
{
    __m256 acc = _mm256_setzero_ps();
    int c = 0;
    for (; c + 8 <= C; c += 8)
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(dy + c),
                                                             _mm256_loadu_ps(w + c)),
                                               _mm256_loadu_ps(x + c)));
    float s = lanes_sum(acc);
    for (int t = c; t < C; t++)
        s += dy[t] * w[t] * x[t];
    float k = s * r * r * r / (float)C;
    __m256 rv = _mm256_set1_ps(r), kv = _mm256_set1_ps(k);
    for (c = 0; c + 8 <= C; c += 8) {
        __m256 g = _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(rv, _mm256_loadu_ps(w + c)),
                                               _mm256_loadu_ps(dy + c)),
                                 _mm256_mul_ps(_mm256_loadu_ps(x + c), kv));
        if (accumulate)
            g = _mm256_add_ps(_mm256_loadu_ps(dx + c), g);
        _mm256_storeu_ps(dx + c, g);
    }
    for (; c < C; c++) {
        float g = r * w[c] * dy[c] - x[c] * k;
        dx[c] = accumulate ? dx[c] + g : g;
    }
}

__attribute__((target("avx2,fma")))
static void dw_columns_avx2(float *dw, const float *dy, const float *x, const float *rstd,
                            int N, int C, int c0, int c1)
{
    int c = c0;
    for (; c + 32 <= c1; c += 32) { /* four vectors of columns at a time, rows in order */
        __m256 a0 = _mm256_loadu_ps(dw + c), a1 = _mm256_loadu_ps(dw + c + 8);
        __m256 a2 = _mm256_loadu_ps(dw + c + 16), a3 = _mm256_loadu_ps(dw + c + 24);
        for (int n = 0; n < N; n++) {
            const float *dyr = dy + (size_t)n * C + c, *xr = x + (size_t)n * C + c;
            __m256 r = _mm256_set1_ps(rstd[n]);
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(dyr), _mm256_loadu_ps(xr)), r));
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(dyr + 8), _mm256_loadu_ps(xr + 8)), r));
            a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(dyr + 16), _mm256_loadu_ps(xr + 16)), r));
            a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(dyr + 24), _mm256_loadu_ps(xr + 24)), r));
        }
        _mm256_storeu_ps(dw + c, a0);
        _mm256_storeu_ps(dw + c + 8, a1);
        _mm256_storeu_ps(dw + c + 16, a2);
        _mm256_storeu_ps(dw + c + 24, a3);
    }
    for (; c + 8 <= c1; c += 8) {
        __m256 a = _mm256_loadu_ps(dw + c);
        for (int n = 0; n < N; n++)
            a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(dy + (size_t)n * C + c),
                                                             _mm256_loadu_ps(x + (size_t)n * C + c)),
                                               _mm256_set1_ps(rstd[n])));
        _mm256_storeu_ps(dw + c, a);
    }
    for (; c < c1; c++) {
        float a = dw[c];
        for (int n = 0; n < N; n++)
            a += dy[(size_t)n * C + c] * x[(size_t)n * C + c] * rstd[n];
        dw[c] = a;
    }
}

const rmsnorm_row_ops rmsnorm_row_ops_avx2 = {forward_row_avx2, backward_row_avx2,
                                              dw_columns_avx2};
