/* rmsnorm.cu - RMSNorm with a gain on the GPU (kernels/cpu/rmsnorm.h is the
 * reference and states the math). One warp per row (four columns per lane
 * at a time when the width allows: 16- or 8-byte accesses); math in fp32; the
 * input, output and gradient storage types are template parameters (the
 * residual stream is fp32, the GEMMs' operands bf16 in bf16 mode). The
 * gain's gradient is a sum over rows, kept deterministic without atomics:
 * each block of rmsnorm_bwd_dw (or, for widths past its shared memory,
 * rmsnorm_dw_partial after rmsnorm_bwd) sums a fixed run of RMS_DW_ROWS rows
 * per column, then rmsnorm_dw_reduce adds the runs in order. Launches:
 * gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

/* the forward reads rows up to RMS_REG_COLS wide (4 columns a lane at a
 * time) once, into registers, instead of twice. (The backward's dy and x
 * held so took rmsnorm_bwd_dw to 183 registers a thread at sm_90, 8 warps
 * an SM: it reads them twice, the second time from the cache, as
 * rmsnorm_bwd did at about 1.3x its bytes on the H200.) */
#define RMS_REG_VECS 8
#define RMS_REG_COLS (128 * RMS_REG_VECS)
#define RMS_DW_ROWS 32 /* rows per partial sum of the gain's gradient (gpu_ops.h repeats it) */

/* y [N, C] (Tout), rstd [N] = rmsnorm(x [N, C] (Tin)) * w; copy [N, C] (fp32,
 * may be null) gets x as well. Block of 128 threads: 4 rows. */
template <typename Tin, typename Tout>
DEVICE void rms_fwd(Tout *y, float *rstd, float *copy, const Tin *x, const float *w, int N, int C, float eps)
{
    int lane = threadIdx.x & 31;
    int n = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (n < N && (C & 3) == 0 && ((tk_u64)w & 15) == 0 && C <= RMS_REG_COLS) { /* the row in registers */
        size_t base = (size_t)n * C;
        float ss = 0, v[RMS_REG_VECS][4], o[4], g[4];
        UNROLL
        for (int i = 0; i < RMS_REG_VECS; i++) {
            int c = 4 * lane + 128 * i;
            if (c < C) {
                tk_ld4(x + base + c, v[i]);
                ss += v[i][0] * v[i][0] + v[i][1] * v[i][1] + v[i][2] * v[i][2] + v[i][3] * v[i][3];
            }
        }
        ss = tk_warp_sum(ss);
        float r = tk_div(1.0f, tk_sqrt(ss / (float)C + eps));
        UNROLL
        for (int i = 0; i < RMS_REG_VECS; i++) {
            int c = 4 * lane + 128 * i;
            if (c < C) {
                tk_ld4(w + c, g);
                for (int j = 0; j < 4; j++)
                    o[j] = v[i][j] * r * g[j];
                tk_st4(y + base + c, o);
                if (copy)
                    tk_st4(copy + base + c, v[i]);
            }
        }
        if (lane == 0)
            rstd[n] = r;
    } else if (n < N && (C & 3) == 0 && ((tk_u64)w & 15) == 0) { /* 4 columns per lane: 16- (fp32) or 8-byte (bf16) accesses */
        size_t base = (size_t)n * C;
        float ss = 0, v[4], o[4], g[4];
        for (int c = 4 * lane; c < C; c += 128) {
            tk_ld4(x + base + c, v);
            ss += v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3];
        }
        ss = tk_warp_sum(ss);
        float r = tk_div(1.0f, tk_sqrt(ss / (float)C + eps));
        for (int c = 4 * lane; c < C; c += 128) {
            tk_ld4(x + base + c, v);
            tk_ld4(w + c, g);
            for (int j = 0; j < 4; j++)
                o[j] = v[j] * r * g[j];
            tk_st4(y + base + c, o);
            if (copy)
                tk_st4(copy + base + c, v);
        }
        if (lane == 0)
            rstd[n] = r;
    } else if (n < N) {
        size_t base = (size_t)n * C;
        float ss = 0;
        for (int c = lane; c < C; c += 32) {
            float v = tk_ld(x, base + c);
            ss += v * v;
        }
        ss = tk_warp_sum(ss);
        float r = tk_div(1.0f, tk_sqrt(ss / (float)C + eps));
        for (int c = lane; c < C; c += 32) {
            float v = tk_ld(x, base + c);
            tk_st(y, base + c, v * r * w[c]);
            if (copy)
                copy[base + c] = v;
        }
        if (lane == 0)
            rstd[n] = r;
    }
}

/* One row of the backward (rmsnorm.h) by one warp: dx at base (= or += when
 * accumulate) from dy, x, w and the row's rstd r; dx_low (may be null) gets
 * dx rounded to bf16; acc (may be null) is the warp's row of the gain
 * gradient's sums, dy x r added per column (with vec, column c at
 * (c % 4) C / 4 + c / 4). vec: 4 columns a lane at a time (C a multiple of
 * 4, w 16-byte aligned), else one. */
template <typename T>
DEVICE void rms_bwd_row(T *dx, bf16_t *dx_low, float *acc, const T *dy, const T *x, const float *w, float r,
                        size_t base, int C, int accumulate, int vec)
{
    int lane = threadIdx.x & 31;
    float s = 0;
    if (vec) {
        float d[4], v[4], g[4], o[4];
        for (int c = 4 * lane; c < C; c += 128) {
            tk_ld4(dy + base + c, d);
            tk_ld4(x + base + c, v);
            tk_ld4(w + c, g);
            for (int j = 0; j < 4; j++)
                s += d[j] * g[j] * v[j];
        }
        s = tk_warp_sum(s);
        float k = s * r * r * r / (float)C;
        for (int c = 4 * lane; c < C; c += 128) {
            tk_ld4(dy + base + c, d);
            tk_ld4(x + base + c, v);
            tk_ld4(w + c, g);
            if (accumulate)
                tk_ld4(dx + base + c, o);
            for (int j = 0; j < 4; j++) {
                float q = r * g[j] * d[j] - v[j] * k;
                o[j] = accumulate ? o[j] + q : q;
                if (acc)
                    acc[j * (C >> 2) + (c >> 2)] += d[j] * v[j] * r;
            }
            tk_st4(dx + base + c, o);
            if (dx_low)
                tk_st4(dx_low + base + c, o);
        }
    } else {
        for (int c = lane; c < C; c += 32)
            s += tk_ld(dy, base + c) * w[c] * tk_ld(x, base + c);
        s = tk_warp_sum(s);
        float k = s * r * r * r / (float)C;
        for (int c = lane; c < C; c += 32) {
            float d = tk_ld(dy, base + c), v = tk_ld(x, base + c);
            float g = r * w[c] * d - v * k;
            g = accumulate ? tk_ld(dx, base + c) + g : g;
            tk_st(dx, base + c, g);
            if (dx_low)
                tk_st(dx_low, base + c, g);
            if (acc)
                acc[c] += d * v * r;
        }
    }
}

/* dx [N, C] (= or += when accumulate) from dy, x, w, rstd: a warp a row. */
template <typename T>
DEVICE void rms_bwd(T *dx, const T *dy, const T *x, const float *w, const float *rstd, int N, int C,
                    int accumulate)
{
    int n = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (n < N)
        rms_bwd_row(dx, (bf16_t *)0, (float *)0, dy, x, w, rstd[n], (size_t)n * C, C, accumulate,
                    (C & 3) == 0 && ((tk_u64)w & 15) == 0);
}

/* rms_bwd and rms_dw_partial in one pass over dy and x (the H200's profile
 * of 2026-12-04: the partial sums' own pass re-read both, 1.7 ms of the
 * gpt2-small step): block b takes the run of RMS_DW_ROWS rows from b
 * RMS_DW_ROWS, its warps rows n0 + w, n0 + w + nw, ... in order; each lane
 * adds dy x rstd of the columns it computes into its warp's row of
 * acc [nw][C] (dynamic shared memory, no two lanes on one element; with 4
 * columns a lane, column c at (c % 4) C / 4 + c / 4, so that a warp's 32
 * stores fall in 32 banks), and the block writes partial[b] = the warps'
 * rows added in warp order. dx_low (may be null): dx rounded to bf16 as
 * well, the next products' operand in bf16 mode (a conversion's pass of its
 * own read dx again).
 * grid (runs), block 128, dynamic shared memory 4 C floats. */
template <typename T>
DEVICE void rms_bwd_dw(T *dx, bf16_t *dx_low, float *partial, const T *dy, const T *x, const float *w,
                       const float *rstd, int N, int C, int accumulate)
{
    DYNAMIC_SHARED(float, acc);
    int wp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int c = threadIdx.x; c < nw * C; c += blockDim.x)
        acc[c] = 0;
    SYNC();
    float *mine = acc + wp * C;
    int n0 = blockIdx.x * RMS_DW_ROWS, n1 = n0 + RMS_DW_ROWS < N ? n0 + RMS_DW_ROWS : N;
    int vec = (C & 3) == 0 && ((tk_u64)w & 15) == 0;
    for (int n = n0 + wp; n < n1; n += nw)
        rms_bwd_row(dx, dx_low, mine, dy, x, w, rstd[n], (size_t)n * C, C, accumulate, vec);
    SYNC();
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float t = 0;
        int at = vec ? (c & 3) * (C >> 2) + (c >> 2) : c;
        for (int k = 0; k < nw; k++)
            t += acc[k * C + at];
        partial[(size_t)blockIdx.x * C + c] = t;
    }
}

/* partial [ceil(N / RMS_DW_ROWS), C]: row run b's sum of dy x rstd per
 * column. grid (ceil(C / blockDim), runs). */
template <typename T>
DEVICE void rms_dw_partial(float *partial, const T *dy, const T *x, const float *rstd, int N, int C)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
    if (c < C) {
        int n0 = b * RMS_DW_ROWS, n1 = n0 + RMS_DW_ROWS < N ? n0 + RMS_DW_ROWS : N;
        float acc = 0;
        for (int n = n0; n < n1; n++)
            acc += tk_ld(dy, (size_t)n * C + c) * tk_ld(x, (size_t)n * C + c) * rstd[n];
        partial[(size_t)b * C + c] = acc;
    }
}

/* dw [C] += sum over runs of partial, in a fixed order: a block of 1,024
 * threads takes 32 columns, its 32 warps the runs g, g + 32, g + 64, ... in
 * order, then the 32 warps' sums are added in warp order. (One thread a
 * column over every run took 28 us a call on the H200 for 1.5 MB: 6 blocks
 * for d_model 768.) */
KERNEL rmsnorm_dw_reduce(float *dw, const float *partial, int runs, int C)
{
    SHARED_ARRAY(float, red, [32][33]);
    int col = threadIdx.x & 31, grp = threadIdx.x >> 5, c = blockIdx.x * 32 + col;
    float acc = 0;
    if (c < C)
        for (int b = grp; b < runs; b += 32)
            acc += partial[(size_t)b * C + c];
    red[grp][col] = acc;
    SYNC();
    if (grp == 0 && c < C) {
        float s = 0;
        for (int w = 0; w < 32; w++)
            s += red[w][col];
        dw[c] += s;
    }
}

#define FWD(Tin, Tout, sfx)                                                                           \
    KERNEL rmsnorm_fwd_##sfx(Tout *y, float *rstd, float *copy, const Tin *x, const float *w, int N, \
                             int C, float eps)                                                        \
    {                                                                                                 \
        rms_fwd(y, rstd, copy, x, w, N, C, eps);                                                      \
    }
FWD(float, float, f32_f32)
FWD(float, bf16_t, f32_bf16)
FWD(bf16_t, bf16_t, bf16_bf16)

#define BWD(T, sfx)                                                                                   \
    KERNEL rmsnorm_bwd_##sfx(T *dx, const T *dy, const T *x, const float *w, const float *rstd, int N, \
                             int C, int accumulate)                                                   \
    {                                                                                                 \
        rms_bwd(dx, dy, x, w, rstd, N, C, accumulate);                                                \
    }                                                                                                 \
    KERNEL rmsnorm_dw_partial_##sfx(float *partial, const T *dy, const T *x, const float *rstd, int N, \
                                    int C)                                                            \
    {                                                                                                 \
        rms_dw_partial(partial, dy, x, rstd, N, C);                                                   \
    }                                                                                                 \
    KERNEL rmsnorm_bwd_dw_##sfx(T *dx, bf16_t *dx_low, float *partial, const T *dy, const T *x,       \
                                const float *w, const float *rstd, int N, int C, int accumulate)      \
    {                                                                                                 \
        rms_bwd_dw(dx, dx_low, partial, dy, x, w, rstd, N, C, accumulate);                            \
    }
BWD(float, f32)
BWD(bf16_t, bf16)

EMU_REGISTER_BEGIN(rmsnorm)
EMU_KERNEL(rmsnorm_fwd_f32_f32)
EMU_KERNEL(rmsnorm_fwd_f32_bf16)
EMU_KERNEL(rmsnorm_fwd_bf16_bf16)
EMU_KERNEL(rmsnorm_bwd_f32)
EMU_KERNEL(rmsnorm_bwd_bf16)
EMU_KERNEL(rmsnorm_dw_partial_f32)
EMU_KERNEL(rmsnorm_dw_partial_bf16)
EMU_KERNEL(rmsnorm_bwd_dw_f32)
EMU_KERNEL(rmsnorm_bwd_dw_bf16)
EMU_KERNEL(rmsnorm_dw_reduce)
EMU_REGISTER_END
