/* optim.cu - the optimizer's elementwise kernels and the reductions on the
 * GPU: the AdamW update (the same float operations in the same order as
 * kernels/cpu/optim_kernels.h, never contracted into FMAs, so the result is
 * bitwise the CPU's), Muon's momentum, the Newton-Schulz iteration's
 * batched gather and norms, and the step from its result (its products are
 * batched GEMMs: gpu_gemm.h), sums
 * of squares and sums in double (fixed chunks, fixed order: deterministic),
 * scaling, and the fp32 -> bf16 conversion of bf16 mode's weight copy.
 * Launches: gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

#define SUM_CHUNK 16384 /* values per block of a sum (gpu_ops.c repeats it) */

#define FOR_EACH(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* optim_kernels.h: gi = g gscale; m = b1 m + (1 - b1) gi; v = b2 v + (1 - b2) gi gi;
 * p = p decay - step m / (sqrt(v inv_bc2) + eps), over several tensors of
 * one buffer in one launch (one a tensor took 2.1 ms of gpt2-small's AdamW
 * step on the H200 for 2.6 GB, about 3.5x its bytes): block (x, t) strides
 * over tensor t, numel[t] floats at offs[t] of p, g, m, v; its group[t]
 * (optimizer.h's GROUP_*, 0..3) picks its step and decay. */
KERNEL adamw_tensors(float *p_base, const float *g_base, float *m_base, float *v_base, const long long *offs,
                     const long long *numel, const int *group, float b1, float b2, float eps, float inv_bc2,
                     float gscale, float s0, float s1, float s2, float s3, float d0, float d1, float d2, float d3)
{
    int t = (int)blockIdx.y, grp = group[t];
    size_t o = (size_t)offs[t], n = (size_t)numel[t];
    float step = grp == 0 ? s0 : grp == 1 ? s1 : grp == 2 ? s2 : s3;
    float decay = grp == 0 ? d0 : grp == 1 ? d1 : grp == 2 ? d2 : d3;
    float *p = p_base + o, *m = m_base + o, *v = v_base + o;
    const float *g = g_base + o;
    float omb1 = tk_sub(1.0f, b1), omb2 = tk_sub(1.0f, b2);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float gi = tk_mul(g[i], gscale);
        float mi = tk_add(tk_mul(b1, m[i]), tk_mul(omb1, gi));
        float vi = tk_add(tk_mul(b2, v[i]), tk_mul(tk_mul(omb2, gi), gi));
        m[i] = mi;
        v[i] = vi;
        p[i] = tk_sub(tk_mul(p[i], decay), tk_div(tk_mul(step, mi), tk_add(tk_sqrt(tk_mul(vi, inv_bc2)), eps)));
    }
}

/* Muon (optimizer.c's muon_tensor) over a batch of same-shape matrices at
 * base + offs[m] floats, in three launches a batch instead of two a matrix
 * (the H200's profile of 2026-12-04: 144 momentum and update launches a
 * gpt2-small step, each about 3.5x its bytes):
 * 1. momentum and the update's sum of squares in one pass: buf = mu buf +
 *    g gscale, upd = g gscale + mu buf (Nesterov), and per chunk of
 *    MUON_CHUNK values the sum of upd^2 in double into partial[m][chunk]
 *    (ns_sumsq_finish adds a matrix's chunks in a fixed order: deterministic);
 * 2. the gather: upd / (|upd| + 1e-7) into X [count][rows * cols] of type T
 *    (fp32, or bf16 mode's bf16), transposed when rows > cols;
 * 3. after the products, the step from X: p = p decay - step x; upd = 0
 *    (v's Muon slots stay zero, as on the CPU).
 * The float operations are the CPU's, in its order. Transposed copies go
 * through a 32 x 32 tile in shared memory so that both sides' accesses are
 * coalesced (element by element, one side was 32 sectors a warp). Element
 * indices are 32-bit (a matrix holds fewer than 2^31). */
#define MUON_CHUNK 4096 /* values per block of the momentum pass (gpu_ops.c repeats it) */

KERNEL muon_momentum_sumsq(double *partial, float *buf_base, float *upd_base, const float *g_base,
                           const long long *offs, unsigned n, float mu, float gscale)
{
    /* block (c, m): chunk c of matrix m; block of 256 threads */
    SHARED_ARRAY(double, red, [8]);
    size_t o = (size_t)offs[blockIdx.y];
    float *buf = buf_base + o, *upd = upd_base + o;
    const float *g = g_base + o;
    unsigned lo = blockIdx.x * MUON_CHUNK, hi = n - lo < MUON_CHUNK ? n : lo + MUON_CHUNK;
    double s = 0;
    for (unsigned i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        float gi = tk_mul(g[i], gscale);
        float b = tk_add(tk_mul(mu, buf[i]), gi);
        float u = tk_add(gi, tk_mul(mu, b));
        buf[i] = b;
        upd[i] = u;
        s += (double)u * u;
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

/* *out = the sum of partial[0..n) by one warp: lane l adds partials l,
 * l + 32, ... in order, then the lanes by a fixed tree (deterministic). One
 * thread adding them one after another waited on each load in turn: 130 us
 * on the H200 for the 5,600 partials of gpt2-small's gradient, on the
 * step's path to the gradient norm. */
DEVICE void warp_finish_sum(double *out, const double *partial, int n)
{
    double t = 0;
    for (int k = (int)threadIdx.x; k < n; k += 32)
        t += partial[k];
    t = tk_warp_sum_d(t);
    if (threadIdx.x == 0)
        *out = t;
}

/* out[m] = the sum of matrix m's chunks (block m, 32 threads) */
KERNEL ns_sumsq_finish(double *out, const double *partial, int chunks)
{
    warp_finish_sum(out + blockIdx.x, partial + (size_t)blockIdx.x * chunks, chunks);
}

/* the scale that normalises matrix m */
DEVICE float ns_inv(const double *sumsq, int m) { return (float)(1.0 / (tk_sqrt_d(sumsq[m]) + 1e-7)); }

/* the step from one value of the result */
DEVICE void muon_step_at(float *p, float *upd, unsigned f, float x, float step, float decay)
{
    p[f] = tk_sub(tk_mul(p[f], decay), tk_mul(step, x));
    upd[f] = 0;
}

/* Untransposed (rows <= cols): X is the matrix itself. grid (blocks over a
 * matrix, count), block 256. */
template <typename T>
DEVICE void ns_gather_flat(T *X, const float *base, const long long *offs, unsigned rc, const double *sumsq)
{
    int m = (int)blockIdx.y;
    float inv = ns_inv(sumsq, m);
    const float *src = base + offs[m];
    T *dst = X + (size_t)m * rc;
    for (unsigned f = blockIdx.x * blockDim.x + threadIdx.x; f < rc; f += gridDim.x * blockDim.x)
        tk_st(dst, f, src[f] * inv);
}

template <typename T>
DEVICE void muon_apply_flat(float *p_base, float *upd_base, const T *X, const long long *offs, unsigned rc,
                            float step, float decay)
{
    int m = (int)blockIdx.y;
    size_t o = (size_t)offs[m];
    const T *src = X + (size_t)m * rc;
    for (unsigned f = blockIdx.x * blockDim.x + threadIdx.x; f < rc; f += gridDim.x * blockDim.x)
        muon_step_at(p_base + o, upd_base + o, f, tk_ld(src, f), step, decay);
}

/* Transposed (rows > cols): X [cols][rows]. Block (bx, by, m) moves the 32 x
 * 32 tile of matrix m at rows 32 by, columns 32 bx; 256 threads: lane tx =
 * thread % 32 walks the fast index, ty = thread / 32 eight rows of the tile
 * at a time. The tile's padding column keeps the transposed reads off one
 * shared-memory bank. */
#define NS_TILE 32
template <typename T>
DEVICE void ns_gather_tiled(T *X, const float *base, const long long *offs, int rows, int cols, const double *sumsq)
{
    SHARED_ARRAY(float, tile, [NS_TILE][NS_TILE + 1]);
    int m = (int)blockIdx.z, tx = (int)(threadIdx.x & 31), ty = (int)(threadIdx.x >> 5);
    int i0 = (int)blockIdx.y * NS_TILE, j0 = (int)blockIdx.x * NS_TILE;
    float inv = ns_inv(sumsq, m);
    const float *src = base + offs[m];
    T *dst = X + (size_t)m * ((unsigned)rows * (unsigned)cols);
    for (int k = ty; k < NS_TILE; k += 8) { /* the matrix's rows i0 + k, columns j0 + tx */
        int i = i0 + k, j = j0 + tx;
        if (i < rows && j < cols)
            tile[k][tx] = src[(unsigned)i * (unsigned)cols + (unsigned)j] * inv;
    }
    SYNC();
    for (int k = ty; k < NS_TILE; k += 8) { /* X's rows j0 + k, columns i0 + tx */
        int j = j0 + k, i = i0 + tx;
        if (i < rows && j < cols)
            tk_st(dst, (unsigned)j * (unsigned)rows + (unsigned)i, tile[tx][k]);
    }
}

template <typename T>
DEVICE void muon_apply_tiled(float *p_base, float *upd_base, const T *X, const long long *offs, int rows, int cols,
                             float step, float decay)
{
    SHARED_ARRAY(float, tile, [NS_TILE][NS_TILE + 1]);
    int m = (int)blockIdx.z, tx = (int)(threadIdx.x & 31), ty = (int)(threadIdx.x >> 5);
    int i0 = (int)blockIdx.y * NS_TILE, j0 = (int)blockIdx.x * NS_TILE;
    size_t o = (size_t)offs[m];
    const T *src = X + (size_t)m * ((unsigned)rows * (unsigned)cols);
    for (int k = ty; k < NS_TILE; k += 8) { /* X's rows j0 + k, columns i0 + tx */
        int j = j0 + k, i = i0 + tx;
        if (i < rows && j < cols)
            tile[k][tx] = tk_ld(src, (unsigned)j * (unsigned)rows + (unsigned)i);
    }
    SYNC();
    for (int k = ty; k < NS_TILE; k += 8) { /* the matrix's rows i0 + k, columns j0 + tx */
        int i = i0 + k, j = j0 + tx;
        if (i < rows && j < cols)
            muon_step_at(p_base + o, upd_base + o, (unsigned)i * (unsigned)cols + (unsigned)j, tile[tx][k], step,
                         decay);
    }
}

KERNEL ns_gather_f32(float *X, const float *base, const long long *offs, unsigned rc, const double *sumsq)
{
    ns_gather_flat(X, base, offs, rc, sumsq);
}
KERNEL ns_gather_bf16(bf16_t *X, const float *base, const long long *offs, unsigned rc, const double *sumsq)
{
    ns_gather_flat(X, base, offs, rc, sumsq);
}
KERNEL ns_gather_t_f32(float *X, const float *base, const long long *offs, int rows, int cols, const double *sumsq)
{
    ns_gather_tiled(X, base, offs, rows, cols, sumsq);
}
KERNEL ns_gather_t_bf16(bf16_t *X, const float *base, const long long *offs, int rows, int cols,
                        const double *sumsq)
{
    ns_gather_tiled(X, base, offs, rows, cols, sumsq);
}
KERNEL muon_apply_f32(float *p, float *upd, const float *X, const long long *offs, unsigned rc, float step,
                      float decay)
{
    muon_apply_flat(p, upd, X, offs, rc, step, decay);
}
KERNEL muon_apply_bf16(float *p, float *upd, const bf16_t *X, const long long *offs, unsigned rc, float step,
                       float decay)
{
    muon_apply_flat(p, upd, X, offs, rc, step, decay);
}
KERNEL muon_apply_t_f32(float *p, float *upd, const float *X, const long long *offs, int rows, int cols,
                        float step, float decay)
{
    muon_apply_tiled(p, upd, X, offs, rows, cols, step, decay);
}
KERNEL muon_apply_t_bf16(float *p, float *upd, const bf16_t *X, const long long *offs, int rows, int cols,
                         float step, float decay)
{
    muon_apply_tiled(p, upd, X, offs, rows, cols, step, decay);
}

/* partial[block] = sum over chunk `block` (SUM_CHUNK values) of x or x^2, in
 * double; block of 256 threads */
KERNEL sum_partial(double *partial, const float *x, size_t n, int square)
{
    SHARED_ARRAY(double, red, [8]);
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

/* out[0] = sum of partial[0..n); one block of 32 threads */
KERNEL sum_finish(double *out, const double *partial, int n) { warp_finish_sum(out, partial, n); }

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
EMU_KERNEL(adamw_tensors)
EMU_KERNEL(muon_momentum_sumsq)
EMU_KERNEL(ns_sumsq_finish)
EMU_KERNEL(ns_gather_f32)
EMU_KERNEL(ns_gather_bf16)
EMU_KERNEL(ns_gather_t_f32)
EMU_KERNEL(ns_gather_t_bf16)
EMU_KERNEL(muon_apply_f32)
EMU_KERNEL(muon_apply_bf16)
EMU_KERNEL(muon_apply_t_f32)
EMU_KERNEL(muon_apply_t_bf16)
EMU_KERNEL(sum_partial)
EMU_KERNEL(sum_finish)
EMU_KERNEL(sgd_f32)
EMU_KERNEL(scale_f32)
EMU_KERNEL(convert_f32_bf16)
EMU_REGISTER_END
