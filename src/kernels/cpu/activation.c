/* activation.c - ReLU^2 and SwiGLU (see activation.h): the work is cut into
 * fixed chunks shared out to the threads (static), each chunk run by the AVX2
 * body (activation_avx2.c) or the plain loops below, chosen once per call
 * (kernel_path.h). Every element is independent, so results do not depend on
 * the thread count; the two paths differ in the last bits of SwiGLU (the
 * vectorised exp). */
#include "kernels/cpu/activation.h"
#include "core/omp_team.h"
#include "kernels/cpu/activation_kernel.h"
#include "kernels/cpu/kernel_path.h"

#include <math.h>

#define ACT_CHUNK 16384   /* elements per unit of work */

static void relu2_forward(float *a, const float *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float r = h[i] > 0 ? h[i] : 0.0f;
        a[i] = r * r;
    }
}

static void relu2_backward(float *dh, const float *da, const float *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dh[i] = h[i] > 0 ? 2.0f * h[i] * da[i] : 0.0f;
}

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

static void swiglu_forward(float *a, const float *g, const float *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = g[i] * sigmoid(g[i]) * u[i];
}

static void swiglu_backward(float *dg, float *du, const float *da, const float *g,
                            const float *u, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float s = sigmoid(g[i]), d = da[i];
        du[i] = d * g[i] * s;
        dg[i] = d * u[i] * s * (1.0f + g[i] * (1.0f - s));
    }
}

/* Runs BODY(lo, len) over [0, n) in chunks of ACT_CHUNK, in parallel when n is
 * large enough. */
#define FOR_CHUNKS(n, BODY)                                                   \
    do {                                                                      \
        if (!omp_team_worth((n), OMP_TEAM_MIN_STREAM)) { /* one chunk (core/omp_team.h) */ \
            size_t lo = 0, len = (n);                                         \
            BODY;                                                             \
            break;                                                            \
        }                                                                     \
        size_t n_chunks_ = ((n) + ACT_CHUNK - 1) / ACT_CHUNK;                 \
        _Pragma("omp parallel for schedule(static)")                          \
        for (size_t c_ = 0; c_ < n_chunks_; c_++) {                           \
            size_t lo = c_ * ACT_CHUNK;                                       \
            size_t len = (n) - lo < ACT_CHUNK ? (n) - lo : ACT_CHUNK;         \
            BODY;                                                             \
        }                                                                     \
    } while (0)

void act_relu2_forward(float *a, const float *h, size_t n)
{
    int avx2 = kernel_path_avx2();
    FOR_CHUNKS(n, (avx2 ? act_relu2_forward_avx2 : relu2_forward)(a + lo, h + lo, len));
}

void act_relu2_backward(float *dh, const float *da, const float *h, size_t n)
{
    int avx2 = kernel_path_avx2();
    FOR_CHUNKS(n, (avx2 ? act_relu2_backward_avx2 : relu2_backward)(dh + lo, da + lo, h + lo, len));
}

void act_swiglu_forward(float *a, const float *g, const float *u, size_t n)
{
    int avx2 = kernel_path_avx2();
    FOR_CHUNKS(n, (avx2 ? act_swiglu_forward_avx2 : swiglu_forward)(a + lo, g + lo, u + lo, len));
}

void act_swiglu_backward(float *dg, float *du, const float *da, const float *g,
                         const float *u, size_t n)
{
    int avx2 = kernel_path_avx2();
    FOR_CHUNKS(n, (avx2 ? act_swiglu_backward_avx2 : swiglu_backward)(dg + lo, du + lo, da + lo,
                                                                      g + lo, u + lo, len));
}
