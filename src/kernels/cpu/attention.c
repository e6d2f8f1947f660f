/* attention.c - causal GQA attention (see attention.h): the tiled
 * online-softmax head kernels, the whole-batch OpenMP drivers, and the plain
 * references. Tiles: ATT_BQ query rows share each key tile of ATT_BK rows
 * while it is in cache; only one row of scores (ATT_BK floats) is ever held. */
#include "kernels/cpu/attention.h"
#include "kernels/cpu/vec.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define ATT_BQ 16 /* query rows per tile */
#define ATT_BK 64 /* key rows per tile */

static inline int min_int(int a, int b) { return a < b ? a : b; }

void attention_head_forward(float *o, float *lse, const float *q, const float *k,
                            const float *v, int q_stride, int kv_stride,
                            int Tq, int Tk, int D, float scale)
{
    int off = Tk - Tq; /* position of query row 0 */
    for (int i0 = 0; i0 < Tq; i0 += ATT_BQ) {
        int nq = min_int(ATT_BQ, Tq - i0);
        float m[ATT_BQ], l[ATT_BQ];
        for (int ii = 0; ii < nq; ii++) {
            m[ii] = -INFINITY;
            l[ii] = 0;
            memset(o + (size_t)(i0 + ii) * q_stride, 0, sizeof(float) * (size_t)D);
        }
        int kend = off + i0 + nq; /* keys [0, kend) are visible to some row of the tile */
        for (int j0 = 0; j0 < kend; j0 += ATT_BK) {
            int nk = min_int(ATT_BK, kend - j0);
            for (int ii = 0; ii < nq; ii++) {
                int nvalid = min_int(nk, off + i0 + ii + 1 - j0); /* causal mask */
                if (nvalid <= 0)
                    continue;
                const float *qi = q + (size_t)(i0 + ii) * q_stride;
                float s[ATT_BK];
                float mx = -INFINITY;
                for (int jj = 0; jj < nvalid; jj++) {
                    s[jj] = scale * vec_dot(qi, k + (size_t)(j0 + jj) * kv_stride, D);
                    mx = s[jj] > mx ? s[jj] : mx;
                }
                float mnew = mx > m[ii] ? mx : m[ii];
                float corr = expf(m[ii] - mnew); /* 0 on the first tile (m = -inf) */
                float sum = 0;
                for (int jj = 0; jj < nvalid; jj++) {
                    s[jj] = expf(s[jj] - mnew);
                    sum += s[jj];
                }
                float *oi = o + (size_t)(i0 + ii) * q_stride;
                if (corr != 1.0f)
                    vec_scale(oi, corr, D);
                for (int jj = 0; jj < nvalid; jj++)
                    vec_axpy(oi, s[jj], v + (size_t)(j0 + jj) * kv_stride, D);
                l[ii] = l[ii] * corr + sum;
                m[ii] = mnew;
            }
        }
        for (int ii = 0; ii < nq; ii++) {
            vec_scale(o + (size_t)(i0 + ii) * q_stride, 1.0f / l[ii], D);
            lse[i0 + ii] = m[ii] + logf(l[ii]);
        }
    }
}

void attention_head_backward(float *dq, float *dk, float *dv, const float *dout,
                             const float *q, const float *k, const float *v,
                             const float *o, const float *lse, int q_stride,
                             int kv_stride, int Tq, int Tk, int D, float scale)
{
    int off = Tk - Tq;
    for (int i0 = 0; i0 < Tq; i0 += ATT_BQ) {
        int nq = min_int(ATT_BQ, Tq - i0);
        float delta[ATT_BQ]; /* sum_d dout*o = sum_j p_j dp_j, the softmax backward's row term */
        for (int ii = 0; ii < nq; ii++)
            delta[ii] = vec_dot(dout + (size_t)(i0 + ii) * q_stride,
                                o + (size_t)(i0 + ii) * q_stride, D);
        int kend = off + i0 + nq;
        for (int j0 = 0; j0 < kend; j0 += ATT_BK) {
            int nk = min_int(ATT_BK, kend - j0);
            for (int ii = 0; ii < nq; ii++) {
                int nvalid = min_int(nk, off + i0 + ii + 1 - j0);
                size_t ri = (size_t)(i0 + ii) * q_stride;
                const float *qi = q + ri, *doi = dout + ri;
                float *dqi = dq + ri;
                float li = lse[i0 + ii];
                for (int jj = 0; jj < nvalid; jj++) {
                    size_t rj = (size_t)(j0 + jj) * kv_stride;
                    float p = expf(scale * vec_dot(qi, k + rj, D) - li);
                    float dp = vec_dot(doi, v + rj, D);
                    float ds = p * (dp - delta[ii]) * scale; /* d loss / d (q.k) */
                    vec_axpy(dv + rj, p, doi, D);
                    vec_axpy(dqi, ds, k + rj, D);
                    vec_axpy(dk + rj, ds, qi, D);
                }
            }
        }
    }
}

void attention_forward(float *o, float *lse, const float *q, const float *k,
                       const float *v, int B, int T, int H, int Hkv, int D)
{
    float scale = 1.0f / sqrtf((float)D);
    int group = H / Hkv;
    size_t qs = (size_t)H * D, ks = (size_t)Hkv * D;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int g = h / group;
            size_t qoff = (size_t)b * T * qs + (size_t)h * D;
            size_t koff = (size_t)b * T * ks + (size_t)g * D;
            attention_head_forward(o + qoff, lse + ((size_t)b * H + h) * T, q + qoff,
                                   k + koff, v + koff, (int)qs, (int)ks, T, T, D, scale);
        }
}

/* Zeroes T rows of D values at the given stride. */
static void zero_rows(float *x, int T, size_t stride, int D)
{
    for (int t = 0; t < T; t++)
        memset(x + (size_t)t * stride, 0, sizeof(float) * (size_t)D);
}

void attention_backward(float *dq, float *dk, float *dv, const float *dout,
                        const float *q, const float *k, const float *v,
                        const float *o, const float *lse, int B, int T, int H,
                        int Hkv, int D)
{
    float scale = 1.0f / sqrtf((float)D);
    int group = H / Hkv;
    size_t qs = (size_t)H * D, ks = (size_t)Hkv * D;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int g = 0; g < Hkv; g++) {
            size_t koff = (size_t)b * T * ks + (size_t)g * D;
            zero_rows(dk + koff, T, ks, D);
            zero_rows(dv + koff, T, ks, D);
            for (int h = g * group; h < (g + 1) * group; h++) {
                size_t qoff = (size_t)b * T * qs + (size_t)h * D;
                zero_rows(dq + qoff, T, qs, D);
                attention_head_backward(dq + qoff, dk + koff, dv + koff, dout + qoff,
                                        q + qoff, k + koff, v + koff, o + qoff,
                                        lse + ((size_t)b * H + h) * T, (int)qs, (int)ks,
                                        T, T, D, scale);
            }
        }
}

void attention_forward_ref(float *o, float *lse, const float *q, const float *k,
                           const float *v, int B, int T, int H, int Hkv, int D)
{
    float scale = 1.0f / sqrtf((float)D);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int g = h / (H / Hkv);
            for (int i = 0; i < T; i++) {
                const float *qi = q + (((size_t)b * T + i) * H + h) * D;
                float *oi = o + (((size_t)b * T + i) * H + h) * D;
                float mx = -INFINITY;
                for (int j = 0; j <= i; j++) {
                    const float *kj = k + (((size_t)b * T + j) * Hkv + g) * D;
                    float s = 0;
                    for (int d = 0; d < D; d++)
                        s += qi[d] * kj[d];
                    mx = fmaxf(mx, s * scale);
                }
                float sum = 0;
                for (int d = 0; d < D; d++)
                    oi[d] = 0;
                for (int j = 0; j <= i; j++) {
                    const float *kj = k + (((size_t)b * T + j) * Hkv + g) * D;
                    const float *vj = v + (((size_t)b * T + j) * Hkv + g) * D;
                    float s = 0;
                    for (int d = 0; d < D; d++)
                        s += qi[d] * kj[d];
                    float p = expf(s * scale - mx);
                    sum += p;
                    for (int d = 0; d < D; d++)
                        oi[d] += p * vj[d];
                }
                for (int d = 0; d < D; d++)
                    oi[d] /= sum;
                lse[((size_t)b * H + h) * T + i] = mx + logf(sum);
            }
        }
}

void attention_backward_ref(float *dq, float *dk, float *dv, const float *dout,
                            const float *q, const float *k, const float *v,
                            const float *o, const float *lse, int B, int T, int H,
                            int Hkv, int D)
{
    float scale = 1.0f / sqrtf((float)D);
    memset(dq, 0, sizeof(float) * (size_t)B * T * H * D);
    memset(dk, 0, sizeof(float) * (size_t)B * T * Hkv * D);
    memset(dv, 0, sizeof(float) * (size_t)B * T * Hkv * D);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int g = h / (H / Hkv);
            for (int i = 0; i < T; i++) {
                size_t qi = (((size_t)b * T + i) * H + h) * D;
                float delta = 0;
                for (int d = 0; d < D; d++)
                    delta += dout[qi + d] * o[qi + d];
                for (int j = 0; j <= i; j++) {
                    size_t kj = (((size_t)b * T + j) * Hkv + g) * D;
                    float s = 0, dp = 0;
                    for (int d = 0; d < D; d++) {
                        s += q[qi + d] * k[kj + d];
                        dp += dout[qi + d] * v[kj + d];
                    }
                    float p = expf(s * scale - lse[((size_t)b * H + h) * T + i]);
                    float ds = p * (dp - delta);
                    for (int d = 0; d < D; d++) {
                        dv[kj + d] += p * dout[qi + d];
                        dq[qi + d] += scale * ds * k[kj + d];
                        dk[kj + d] += scale * ds * q[qi + d];
                    }
                }
            }
        }
}
