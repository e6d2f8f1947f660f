/* activation_avx2.c - ReLU^2 and SwiGLU over a contiguous range, 8 floats at a
 * time with a masked tail (see activation_kernel.h); sigmoid through the
 * vectorised exp of simd_avx2.h. Memory-bound loops: one read of each input
 * and one write of each output, nothing else. */
#include "kernels/cpu/activation_kernel.h"
#include "kernels/cpu/simd_avx2.h"

/* Lanes [i, i+8) of x, or only the first n - i of them when fewer remain. */
SIMD_AVX2 __m256 load_part(const float *x, size_t i, size_t n)
{
    return n - i >= 8 ? _mm256_loadu_ps(x + i)
                      : _mm256_maskload_ps(x + i, simd_tail_mask((int)(n - i)));
}

SIMD_AVX2 void store_part(float *x, size_t i, size_t n, __m256 v)
{
    if (n - i >= 8)
        _mm256_storeu_ps(x + i, v);
    else
        _mm256_maskstore_ps(x + i, simd_tail_mask((int)(n - i)), v);
}

/* sigmoid(g) = 1 / (1 + e^-g) */
SIMD_AVX2 __m256 sigmoid8(__m256 g)
{
    __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_div_ps(one, _mm256_add_ps(one, simd_exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
}

__attribute__((target("avx2,fma")))
void act_relu2_forward_avx2(float *a, const float *h, size_t n)
{
    __m256 zero = _mm256_setzero_ps();
    for (size_t i = 0; i < n; i += 8) {
        __m256 r = _mm256_max_ps(load_part(h, i, n), zero);
        store_part(a, i, n, _mm256_mul_ps(r, r));
    }
}

__attribute__((target("avx2,fma")))
void act_relu2_backward_avx2(float *dh, const float *da, const float *h, size_t n)
{
    __m256 zero = _mm256_setzero_ps(), two = _mm256_set1_ps(2.0f);
    for (size_t i = 0; i < n; i += 8) {
        __m256 hv = load_part(h, i, n);
        __m256 g = _mm256_mul_ps(_mm256_mul_ps(two, hv), load_part(da, i, n));
        store_part(dh, i, n, _mm256_and_ps(_mm256_cmp_ps(hv, zero, _CMP_GT_OQ), g)); /* 0 where h <= 0 */
    }
}

__attribute__((target("avx2,fma")))
void act_swiglu_forward_avx2(float *a, const float *g, const float *u, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256 gv = load_part(g, i, n), uv = load_part(u, i, n);
        store_part(a, i, n, _mm256_mul_ps(_mm256_mul_ps(gv, sigmoid8(gv)), uv));
    }
}

__attribute__((target("avx2,fma")))
void act_swiglu_backward_avx2(float *dg, float *du, const float *da, const float *g,
                              const float *u, size_t n)
{
    __m256 one = _mm256_set1_ps(1.0f);
    for (size_t i = 0; i < n; i += 8) {
        __m256 gv = load_part(g, i, n), uv = load_part(u, i, n), d = load_part(da, i, n);
        __m256 s = sigmoid8(gv);
        /* da/dg = u s (1 + g (1 - s)) */
        __m256 dgate = _mm256_fmadd_ps(gv, _mm256_sub_ps(one, s), one);
        store_part(du, i, n, _mm256_mul_ps(_mm256_mul_ps(d, gv), s));
        store_part(dg, i, n, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(d, uv), s), dgate));
    }
}
