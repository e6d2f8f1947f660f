/* activation.c - ReLU^2 and SwiGLU (see activation.h). Parallel over elements
 * (static), each element independent, so results do not depend on threads. */
#include "kernels/cpu/activation.h"

#include <math.h>

#define ACT_PAR_MIN 32768 /* below this many elements a parallel region costs more */

void act_relu2_forward(float *a, const float *h, size_t n)
{
#pragma omp parallel for schedule(static) if (n > ACT_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float r = h[i] > 0 ? h[i] : 0;
        a[i] = r * r;
    }
}

void act_relu2_backward(float *dh, const float *da, const float *h, size_t n)
{
#pragma omp parallel for schedule(static) if (n > ACT_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        dh[i] = h[i] > 0 ? 2.0f * h[i] * da[i] : 0.0f;
}

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

void act_swiglu_forward(float *a, const float *g, const float *u, size_t n)
{
#pragma omp parallel for schedule(static) if (n > ACT_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        a[i] = g[i] * sigmoid(g[i]) * u[i];
}

void act_swiglu_backward(float *dg, float *du, const float *da, const float *g,
                         const float *u, size_t n)
{
#pragma omp parallel for schedule(static) if (n > ACT_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float s = sigmoid(g[i]), d = da[i];
        du[i] = d * g[i] * s;
        dg[i] = d * u[i] * s * (1.0f + g[i] * (1.0f - s));
    }
}
