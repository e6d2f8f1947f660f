/* lm_head_avx2.c - the AVX2 + FMA row passes of the head's softmax
 * cross-entropy (see lm_head_kernel.h): 8 logits at a time, masked tails,
 * exp from simd_avx2.h, tanh from exp, sums in double. Nothing else here. */
#include "kernels/cpu/lm_head_kernel.h"
#include "kernels/cpu/simd_avx2.h"

#include <math.h>

/* Lanes [v, v+8) of z; lanes at or past V read as fill. */
SIMD_AVX2 __m256 load_fill(const float *z, int v, int V, __m256 fill)
{
    if (V - v >= 8)
        return _mm256_loadu_ps(z + v);
    __m256i m = simd_tail_mask(V - v);
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(z + v, m), _mm256_castsi256_ps(m));
}

SIMD_AVX2 void store_part(float *z, int v, int V, __m256 x)
{
    if (V - v >= 8)
        _mm256_storeu_ps(z + v, x);
    else
        _mm256_maskstore_ps(z + v, simd_tail_mask(V - v), x);
}

/* tanh(u) = 1 - 2 / (e^{2u} + 1), with e^{2u} saturating at both ends. */
SIMD_AVX2 __m256 tanh8(__m256 u)
{
    __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    __m256 e = simd_exp256(_mm256_mul_ps(two, u));
    return _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(e, one)));
}

__attribute__((target("avx2,fma")))
static void softcap_avx2(float *z, int V, float cap)
{
    __m256 c = _mm256_set1_ps(cap), inv = _mm256_set1_ps(1.0f / cap), zero = _mm256_setzero_ps();
    for (int v = 0; v < V; v += 8)
        store_part(z, v, V, _mm256_mul_ps(c, tanh8(_mm256_mul_ps(load_fill(z, v, V, zero), inv))));
}

__attribute__((target("avx2,fma")))
static float max_avx2(const float *z, int V)
{
    __m256 ninf = _mm256_set1_ps(-INFINITY), m = ninf;
    for (int v = 0; v < V; v += 8)
        m = _mm256_max_ps(m, load_fill(z, v, V, ninf));
    return simd_hmax256(m);
}

/* The sum of exp(k z[v] - mx) over the row (k z[v] rounded to float, as the
 * scaling stores it, when `scaled`), each exp into out[v] when out is set:
 * lanes past V read as -inf (k > 0 keeps them so), whose exp is 0. `scaled`
 * is a constant at both calls, so the plain sum has no multiply. */
SIMD_AVX2 double exp_sum_row(const float *z, float *out, int V, float k, float mx, int scaled)
{
    __m256 m = _mm256_set1_ps(mx), kv = _mm256_set1_ps(k), ninf = _mm256_set1_ps(-INFINITY);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (int v = 0; v < V; v += 8) {
        __m256 t = load_fill(z, v, V, ninf);
        if (scaled)
            t = _mm256_mul_ps(t, kv);
        __m256 e = simd_exp256(_mm256_sub_ps(t, m));
        if (out)
            store_part(out, v, V, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double lanes[8];
    _mm256_storeu_pd(lanes, s0);
    _mm256_storeu_pd(lanes + 4, s1);
    return lm_head_sum8(lanes);
}

__attribute__((target("avx2,fma")))
static double exp_sum_avx2(float *z, int V, float mx, int store)
{
    return exp_sum_row(z, store ? z : NULL, V, 1.0f, mx, 0);
}

/* exp_sum_avx2(scale_avx2(z, k), mx, 0) without writing z. */
__attribute__((target("avx2,fma")))
static double exp_sum_scaled_avx2(const float *z, int V, float k, float mx)
{
    return exp_sum_row(z, NULL, V, k, mx, 1);
}

__attribute__((target("avx2,fma")))
static void scale_avx2(float *z, int V, float k)
{
    __m256 kv = _mm256_set1_ps(k), zero = _mm256_setzero_ps();
    for (int v = 0; v < V; v += 8)
        store_part(z, v, V, _mm256_mul_ps(load_fill(z, v, V, zero), kv));
}

__attribute__((target("avx2,fma")))
static void cap_grad_avx2(float *z, int V, float lse, float cap, float k)
{
    __m256 l = _mm256_set1_ps(lse), inv = _mm256_set1_ps(1.0f / cap), kv = _mm256_set1_ps(k);
    __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (int v = 0; v < V; v += 8) {
        __m256 t = load_fill(z, v, V, zero), u = _mm256_mul_ps(t, inv);
        __m256 p = simd_exp256(_mm256_sub_ps(t, l));
        store_part(z, v, V, _mm256_mul_ps(_mm256_mul_ps(p, kv), _mm256_fnmadd_ps(u, u, one)));
    }
}

__attribute__((target("avx2,fma")))
static int index_of_avx2(const float *z, int V, float x)
{
    __m256 t = _mm256_set1_ps(x);
    int v = 0;
    for (; v + 8 <= V; v += 8) {
        int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(z + v), t, _CMP_EQ_OQ));
        if (hit)
            return v + __builtin_ctz((unsigned)hit);
    }
    for (; v < V; v++)
        if (z[v] == x)
            return v;
    return V - 1;
}

const lm_head_row_ops lm_head_row_ops_avx2 = {softcap_avx2,  max_avx2,      exp_sum_avx2,
                                              exp_sum_scaled_avx2, scale_avx2, cap_grad_avx2,
                                              index_of_avx2};
