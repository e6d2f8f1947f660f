/* vec.h - tiny inline vector helpers shared by the CPU kernels (dot product
 * with a fixed summation order, axpy, scale). Header-only; nothing else. */
#ifndef TEMPO_VEC_H
#define TEMPO_VEC_H

/* sum_i a[i]*b[i], 8 independent partial sums combined in a fixed order, so
 * the compiler can vectorise it and the result is reproducible. */
static inline float vec_dot(const float *a, const float *b, int n)
{
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += a[i + k] * b[i + k];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* y[i] += alpha * x[i] */
static inline void vec_axpy(float *restrict y, float alpha, const float *restrict x, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += alpha * x[i];
}

/* y[i] *= alpha */
static inline void vec_scale(float *y, float alpha, int n)
{
    for (int i = 0; i < n; i++)
        y[i] *= alpha;
}

#endif
