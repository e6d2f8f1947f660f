/* rope.c - rotary position embedding (see rope.h): the table, the rotation
 * (forward angle +, backward angle -) and a table-free reference. */
#include "kernels/cpu/rope.h"
#include "core/omp_team.h"

#include <math.h>
#include <stddef.h>

void rope_table_init(float *cos_tab, float *sin_tab, int max_pos, int D, float theta)
{
    int half = D / 2;
    for (int p = 0; p < max_pos; p++)
        for (int i = 0; i < half; i++) {
            double freq = pow((double)theta, -2.0 * i / (double)D);
            double a = (double)p * freq;
            cos_tab[(size_t)p * half + i] = (float)cos(a);
            sin_tab[(size_t)p * half + i] = (float)sin(a);
        }
}

/* Row r (position pos0 + r % T) of every head, rotated by sign x its angle. */
static void rotate_row(float *x, int r, int T, int n_heads, int D, int pos0, const float *cos_tab,
                       const float *sin_tab, float sign)
{
    int half = D / 2, pos = pos0 + r % T;
    const float *cs = cos_tab + (size_t)pos * half, *sn = sin_tab + (size_t)pos * half;
    for (int h = 0; h < n_heads; h++) {
        float *a = x + ((size_t)r * n_heads + h) * D, *b = a + half;
        for (int i = 0; i < half; i++) {
            float c = cs[i], s = sign * sn[i];
            float x1 = a[i], x2 = b[i];
            a[i] = x1 * c - x2 * s;
            b[i] = x1 * s + x2 * c;
        }
    }
}

/* Rotates every row by +angle (sign = 1) or -angle (sign = -1). */
static void rotate(float *x, int B, int T, int n_heads, int D, int pos0,
                   const float *cos_tab, const float *sin_tab, float sign)
{
    int rows = B * T;
    OMP_TEAM_FOR(omp_team_worth((size_t)rows * n_heads * D, OMP_TEAM_MIN_STREAM), int, r, rows,
                 rotate_row(x, r, T, n_heads, D, pos0, cos_tab, sin_tab, sign));
}

void rope_forward(float *x, int B, int T, int n_heads, int D, int pos0,
                  const float *cos_tab, const float *sin_tab)
{
    rotate(x, B, T, n_heads, D, pos0, cos_tab, sin_tab, 1.0f);
}

void rope_backward(float *dx, int B, int T, int n_heads, int D, int pos0,
                   const float *cos_tab, const float *sin_tab)
{
    rotate(dx, B, T, n_heads, D, pos0, cos_tab, sin_tab, -1.0f);
}

void rope_forward_ref(float *x, int B, int T, int n_heads, int D, int pos0, float theta)
{
    int half = D / 2;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < n_heads; h++) {
                float *v = x + (((size_t)b * T + t) * n_heads + h) * D;
                for (int i = 0; i < half; i++) {
                    double a = (double)(pos0 + t) * pow((double)theta, -2.0 * i / (double)D);
                    double x1 = v[i], x2 = v[i + half];
                    v[i] = (float)(x1 * cos(a) - x2 * sin(a));
                    v[i + half] = (float)(x1 * sin(a) + x2 * cos(a));
                }
            }
}
