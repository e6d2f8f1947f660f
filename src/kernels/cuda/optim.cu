/* optim.cu - the optimizer's elementwise kernels and the reductions on the
 * GPU: the AdamW update (the same float operations in the same order as
 * kernels/cpu/optim_kernels.h, never contracted into FMAs, so the result is
 * bitwise the CPU's), Muon's momentum and update, the Newton-Schulz
 * iteration's batched gather, norms and scatter (its products are batched
 * GEMMs: gpu_gemm.h), sums
 * of squares and sums in double (fixed chunks, fixed order: deterministic),
 * scaling, and the fp32 -> bf16 conversion of bf16 mode's weight copy.
 * Launches: gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

#define SUM_CHUNK 16384 /* values per block of a sum (gpu_ops.c repeats it) */

#define FOR_EACH(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* optim_kernels.h: gi = g gscale; m = b1 m + (1 - b1) gi; v = b2 v + (1 - b2) gi gi;
 * p = p decay - step m / (sqrt(v inv_bc2) + eps) */
KERNEL adamw(float *p, const float *g, float *m, float *v, size_t n, float b1, float b2, float eps, float step,
             float inv_bc2, float decay, float gscale)
{
    float omb1 = tk_sub(1.0f, b1), omb2 = tk_sub(1.0f, b2);
    FOR_EACH(i, n) {
        float gi = tk_mul(g[i], gscale);
        float mi = tk_add(tk_mul(b1, m[i]), tk_mul(omb1, gi));
        float vi = tk_add(tk_mul(b2, v[i]), tk_mul(tk_mul(omb2, gi), gi));
        m[i] = mi;
        v[i] = vi;
        p[i] = tk_sub(tk_mul(p[i], decay), tk_div(tk_mul(step, mi), tk_add(tk_sqrt(tk_mul(vi, inv_bc2)), eps)));
    }
}

/* Muon (optimizer.c's muon_tensor): buf = mu buf + g gscale (momentum),
 * upd = g gscale + mu buf (Nesterov) */
KERNEL muon_momentum(float *buf, float *upd, const float *g, size_t n, float mu, float gscale)
{
    FOR_EACH(i, n) {
        float gi = tk_mul(g[i], gscale);
        float b = tk_add(tk_mul(mu, buf[i]), gi);
        buf[i] = b;
        upd[i] = tk_add(gi, tk_mul(mu, b));
    }
}

/* p = p decay - step upd; upd = 0 (v's Muon slots stay zero) */
KERNEL muon_apply(float *p, float *upd, size_t n, float step, float decay)
{
    FOR_EACH(i, n) {
        p[i] = tk_sub(tk_mul(p[i], decay), tk_mul(step, upd[i]));
        upd[i] = 0;
    }
}

/* Newton-Schulz over a batch of same-shape matrices at base + offs[m]
 * (floats): their sums of squares (double, by chunks, then the chunks in
 * order), the
 * scaled (and, when rows > cols, transposed) copies X [count][rows * cols],
 * and the results back. */
KERNEL ns_sumsq_partial(double *partial, const float *base, const long long *offs, size_t n)
{
    /* block (c, m): chunk c of matrix m (SUM_CHUNK values) into partial[m][c] */
    TK_SHARED double red[8];
    const float *x = base + offs[blockIdx.y];
    size_t lo = (size_t)blockIdx.x * SUM_CHUNK, hi = lo + SUM_CHUNK < n ? lo + SUM_CHUNK : n;
    double s = 0;
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        double v = x[i];
        s += v * v;
    }
    s = tk_warp_sum_d(s);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = s;
    SYNC();
    if (threadIdx.x == 0) {
        double t = 0;
        for (int k = 0; k < (int)(blockDim.x >> 5); k++)
            t += red[k];
        partial[(size_t)blockIdx.y * gridDim.x + blockIdx.x] = t;
    }
}

KERNEL ns_sumsq_finish(double *out, const double *partial, int chunks)
{
    if (threadIdx.x == 0) {
        double t = 0;
        for (int c = 0; c < chunks; c++)
            t += partial[(size_t)blockIdx.x * chunks + c];
        out[blockIdx.x] = t;
    }
}

/* The gather and scatter: matrix m = blockIdx.y of the batch, its elements
 * f over the x blocks in 32-bit math (a matrix holds fewer than 2^31; the
 * first version's four 64-bit divisions an element cost more than its
 * bytes), X of type T (fp32, or bf16 mode's bf16). */
/* where element f of a rows x cols matrix goes in X: f, or its transpose's place */
DEVICE size_t ns_at(unsigned f, int rows, int cols, int transposed)
{
    if (!transposed)
        return f;
    unsigned i = f / (unsigned)cols, j = f - i * (unsigned)cols;
    return (size_t)j * rows + i;
}

template <typename T>
DEVICE void ns_gather(T *X, const float *base, const long long *offs, int rows, int cols, const double *sumsq,
                      int transposed)
{
    int m = (int)blockIdx.y;
    unsigned rc = (unsigned)rows * (unsigned)cols;
    float inv = (float)(1.0 / (tk_sqrt_d(sumsq[m]) + 1e-7));
    const float *src = base + offs[m];
    T *dst = X + (size_t)m * rc;
    for (unsigned f = blockIdx.x * blockDim.x + threadIdx.x; f < rc; f += gridDim.x * blockDim.x)
        tk_st(dst, ns_at(f, rows, cols, transposed), src[f] * inv);
}

template <typename T>
DEVICE void ns_scatter(float *base, const T *X, const long long *offs, int rows, int cols, int transposed)
{
    int m = (int)blockIdx.y;
    unsigned rc = (unsigned)rows * (unsigned)cols;
    float *dst = base + offs[m];
    const T *src = X + (size_t)m * rc;
    for (unsigned f = blockIdx.x * blockDim.x + threadIdx.x; f < rc; f += gridDim.x * blockDim.x)
        dst[f] = tk_ld(src, ns_at(f, rows, cols, transposed));
}

KERNEL ns_gather_f32(float *X, const float *base, const long long *offs, int rows, int cols, const double *sumsq,
                     int transposed)
{
    ns_gather(X, base, offs, rows, cols, sumsq, transposed);
}
KERNEL ns_gather_bf16(bf16_t *X, const float *base, const long long *offs, int rows, int cols, const double *sumsq,
                      int transposed)
{
    ns_gather(X, base, offs, rows, cols, sumsq, transposed);
}
KERNEL ns_scatter_f32(float *base, const float *X, const long long *offs, int rows, int cols, int transposed)
{
    ns_scatter(base, X, offs, rows, cols, transposed);
}
KERNEL ns_scatter_bf16(float *base, const bf16_t *X, const long long *offs, int rows, int cols, int transposed)
{
    ns_scatter(base, X, offs, rows, cols, transposed);
}

/* partial[block] = sum over chunk `block` (SUM_CHUNK values) of x or x^2, in
 * double; block of 256 threads */
KERNEL sum_partial(double *partial, const float *x, size_t n, int square)
{
    TK_SHARED double red[8];
    size_t lo = (size_t)blockIdx.x * SUM_CHUNK, hi = lo + SUM_CHUNK < n ? lo + SUM_CHUNK : n;
    double s = 0;
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        double v = x[i];
        s += square ? v * v : v;
    }
    s = tk_warp_sum_d(s);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0)
        red[w] = s;
    SYNC();
    if (threadIdx.x == 0) {
        double t = 0;
        for (int k = 0; k < (int)(blockDim.x >> 5); k++)
            t += red[k];
        partial[blockIdx.x] = t;
    }
}

/* out[0] = sum of partial[0..n), in order; one block of 32 threads */
KERNEL sum_finish(double *out, const double *partial, int n)
{
    if (threadIdx.x == 0) {
        double t = 0;
        for (int k = 0; k < n; k++)
            t += partial[k];
        out[0] = t;
    }
}

/* p = p - r g (bpb.h's learning reader; the CPU's float operations) */
KERNEL sgd_f32(float *p, const float *g, size_t n, float r)
{
    FOR_EACH(i, n)
        p[i] = tk_sub(p[i], tk_mul(r, g[i]));
}

KERNEL scale_f32(float *x, size_t n, float s)
{
    FOR_EACH(i, n)
        x[i] *= s;
}

/* dst = src rounded to bf16: pieces of 8 (two 16-byte loads, one 16-byte
 * store) where both are 16-byte aligned, then the tail one by one (2-byte
 * stores a value took about 1.5x the bytes' time on the H200) */
KERNEL convert_f32_bf16(bf16_t *dst, const float *src, size_t n)
{
    size_t nv = (((tk_u64)dst | (tk_u64)src) & 15) ? 0 : n / 8;
    FOR_EACH(i, nv) {
        float f[8];
        tk_vec<float>::unpack(tk_ld16(src + 8 * i), f);
        tk_vec<float>::unpack(tk_ld16(src + 8 * i + 4), f + 4);
        tk_st16(dst + 8 * i, tk_vec<bf16_t>::pack(f));
    }
    FOR_EACH(i, n - 8 * nv)
        dst[8 * nv + i] = tk_to_bf16(src[8 * nv + i]);
}

EMU_REGISTER_BEGIN(optim)
EMU_KERNEL(adamw)
EMU_KERNEL(muon_momentum)
EMU_KERNEL(muon_apply)
EMU_KERNEL(ns_sumsq_partial)
EMU_KERNEL(ns_sumsq_finish)
EMU_KERNEL(ns_gather_f32)
EMU_KERNEL(ns_gather_bf16)
EMU_KERNEL(ns_scatter_f32)
EMU_KERNEL(ns_scatter_bf16)
EMU_KERNEL(sum_partial)
EMU_KERNEL(sum_finish)
EMU_KERNEL(sgd_f32)
EMU_KERNEL(scale_f32)
EMU_KERNEL(convert_f32_bf16)
EMU_REGISTER_END
