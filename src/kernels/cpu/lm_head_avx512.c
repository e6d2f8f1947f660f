/* lm_head_avx512.c - the head's row passes on the avx512 path (see
 * lm_head_kernel.h): the max, the exp and its sum, the scaled sum (the
 * mixture's sharpening, once a row in evaluation) and the scaling on 16
 * logits at a time, with masked tails; soft-capping and index_of are the
 * AVX2 table's. Each lane's exp is simd_avx2.h's bit for bit and the sum
 * takes the AVX2 pass's double additions in the same order (lanes 0-3 and
 * 4-7 of every 8 logits into their own four accumulators), so the results
 * are the AVX2 table's bits, in half the instructions. Compiled for
 * AVX-512F by the target attribute only, chosen at run time. */
#include "kernels/cpu/lm_head_kernel.h"
#include "kernels/cpu/simd_avx512.h"

#include <math.h>

__attribute__((target("avx512f")))
static float max_avx512(const float *z, int V)
{
    __m512 m = _mm512_set1_ps(-INFINITY);
    int v = 0;
    for (; v + 16 <= V; v += 16)
        m = _mm512_max_ps(m, _mm512_loadu_ps(z + v));
    if (v < V) {
        __mmask16 tail = simd_tail_mask16(V - v);
        m = _mm512_mask_max_ps(m, tail, m, _mm512_maskz_loadu_ps(tail, z + v));
    }
    return _mm512_reduce_max_ps(m);
}

/* The sum of exp(k z[v] - mx) over the row (k z[v] rounded to float, as
 * the scaling stores it, when `scaled`), each exp into out[v] when out is
 * set; the AVX2 pass's exp_sum_row on 16 lanes. The 8 doubles s0 (lanes
 * 0-3) | s1 (lanes 4-7) of the AVX2 pass: adding the two 8-lane halves of a
 * 16-lane exp in turn is that pass's order. `scaled` is a constant at both
 * calls, so the plain sum has no multiply. */
__attribute__((target("avx512f"), always_inline)) static inline double
exp_sum_row512(const float *z, float *out, int V, float kz, float mx, int scaled)
{
    __m512 m = _mm512_set1_ps(mx), kv = _mm512_set1_ps(kz);
    __m512d s = _mm512_setzero_pd();
    for (int v = 0; v < V; v += 16) {
        __mmask16 k = simd_tail_mask16(V - v);
        /* lanes past V read as -inf (kz > 0 keeps them so): their exp is 0, as in the AVX2 pass */
        __m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, z + v);
        if (scaled)
            x = _mm512_mul_ps(x, kv);
        __m512 e = simd_exp512(_mm512_sub_ps(x, m));
        if (out)
            _mm512_mask_storeu_ps(out + v, k, e);
        s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        if (V - v > 8)
            s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    double lanes[8];
    _mm512_storeu_pd(lanes, s);
    return lm_head_sum8(lanes);
}

__attribute__((target("avx512f")))
static double exp_sum_avx512(float *z, int V, float mx, int store)
{
    return exp_sum_row512(z, store ? z : NULL, V, 1.0f, mx, 0);
}

/* exp_sum_avx512(scale_avx512(z, k), mx, 0) without writing z. */
__attribute__((target("avx512f")))
static double exp_sum_scaled_avx512(const float *z, int V, float k, float mx)
{
    return exp_sum_row512(z, NULL, V, k, mx, 1);
}

__attribute__((target("avx512f")))
static void scale_avx512(float *z, int V, float k)
{
    __m512 kv = _mm512_set1_ps(k);
    for (int v = 0; v < V; v += 16) {
        __mmask16 mk = simd_tail_mask16(V - v);
        _mm512_mask_storeu_ps(z + v, mk, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, z + v), kv));
    }
}

static void softcap_avx512(float *z, int V, float cap)
{
    lm_head_row_ops_avx2.softcap(z, V, cap);
}

static void cap_grad_avx512(float *z, int V, float lse, float cap, float k)
{
    lm_head_row_ops_avx2.cap_grad(z, V, lse, cap, k);
}

static int index_of_avx512(const float *z, int V, float x)
{
    return lm_head_row_ops_avx2.index_of(z, V, x);
}

const lm_head_row_ops lm_head_row_ops_avx512 = {softcap_avx512,        max_avx512,
                                                exp_sum_avx512,        exp_sum_scaled_avx512,
                                                scale_avx512,          cap_grad_avx512,
                                                index_of_avx512};
