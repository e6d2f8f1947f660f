/* optim_kernels_avx2.c - AVX2 bodies of the optimizer kernels (see
 * optim_kernels.h): AdamW 8 parameters at a time with exactly the portable
 * operations (multiplies and adds kept separate, IEEE sqrt and divide, so the
 * result is bitwise the portable one), and a sum of squares in 8 double
 * lanes. Masked tails; nothing else here. */
#include "kernels/cpu/optim_kernels.h"
#include "kernels/cpu/simd_avx2.h"

__attribute__((target("avx2,fma")))
void optim_kernel_adamw_avx2(float *p, const float *g, float *m, float *v, size_t n,
                             const optim_adamw_coeffs *c)
{
    const __m256 b1 = _mm256_set1_ps(c->beta1), b2 = _mm256_set1_ps(c->beta2);
    const __m256 omb1 = _mm256_set1_ps(1 - c->beta1), omb2 = _mm256_set1_ps(1 - c->beta2);
    const __m256 gs = _mm256_set1_ps(c->gscale), decay = _mm256_set1_ps(c->decay);
    const __m256 step = _mm256_set1_ps(c->step), ibc2 = _mm256_set1_ps(c->inv_bc2);
    const __m256 eps = _mm256_set1_ps(c->eps);
    for (size_t i = 0; i < n; i += 8) {
        int full = n - i >= 8;
        __m256i mask = simd_tail_mask(full ? 8 : (int)(n - i));
        __m256 gv = full ? _mm256_loadu_ps(g + i) : _mm256_maskload_ps(g + i, mask);
        __m256 mv = full ? _mm256_loadu_ps(m + i) : _mm256_maskload_ps(m + i, mask);
        __m256 vv = full ? _mm256_loadu_ps(v + i) : _mm256_maskload_ps(v + i, mask);
        __m256 pv = full ? _mm256_loadu_ps(p + i) : _mm256_maskload_ps(p + i, mask);
        gv = _mm256_mul_ps(gv, gs);
        mv = _mm256_add_ps(_mm256_mul_ps(b1, mv), _mm256_mul_ps(omb1, gv));
        vv = _mm256_add_ps(_mm256_mul_ps(b2, vv), _mm256_mul_ps(_mm256_mul_ps(omb2, gv), gv));
        __m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_mul_ps(vv, ibc2)), eps);
        pv = _mm256_sub_ps(_mm256_mul_ps(pv, decay), _mm256_div_ps(_mm256_mul_ps(step, mv), den));
        if (full) {
            _mm256_storeu_ps(m + i, mv);
            _mm256_storeu_ps(v + i, vv);
            _mm256_storeu_ps(p + i, pv);
        } else {
            _mm256_maskstore_ps(m + i, mask, mv);
            _mm256_maskstore_ps(v + i, mask, vv);
            _mm256_maskstore_ps(p + i, mask, pv);
        }
    }
}

__attribute__((target("avx2,fma")))
double optim_kernel_sum_squares_avx2(const float *x, size_t n)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(xv));
        __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1));
        s0 = _mm256_fmadd_pd(lo, lo, s0);
        s1 = _mm256_fmadd_pd(hi, hi, s1);
    }
    double lanes[8];
    _mm256_storeu_pd(lanes, s0);
    _mm256_storeu_pd(lanes + 4, s1);
    double s = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
               ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; i < n; i++)
        s += (double)x[i] * x[i];
    return s;
}
