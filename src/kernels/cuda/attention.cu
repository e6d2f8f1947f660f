/* attention.cu - causal grouped-query attention on the GPU, flash-style: no
 * T x T matrix exists anywhere; the forward walks key tiles with an online
 * softmax and saves each row's log-sum-exp, the backward recomputes the
 * probabilities from it (kernels/cpu/attention.h is the reference and gives
 * the layouts: q, o [B, T, H, D], k, v [B, T, Hkv, D], lse [B, H, T]).
 *
 * These are the plain kernels of fp32 mode (SIMT, fp32 arithmetic; bf16
 * mode runs attention_mma.cu's tensor-core ones), one thread per query
 * row (forward, dq) or key row (dk, dv), tiles of the other side in shared
 * memory rows padded by one float (no bank conflicts). DMAX is the head dim
 * rounded up to 32, 64 or 128 (registers hold DMAX floats per vector).
 * Fully masked key tiles are skipped: the work is about half of T*T.
 * Backward: attn_bwd_delta (delta = rowsum(dout * o)), then attn_bwd_dkdv
 * (one block per key tile and kv head, the group's query heads in order, so
 * the GQA sum is deterministic) and attn_bwd_dq. Launches: gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

#define ATT_BQ 64  /* query rows per forward / dq block (threads) */
#define ATT_BK 32  /* key rows per tile in the forward / dq loops */
#define ATT_BKV 64 /* key rows per dk/dv block (threads) */
#define ATT_BQB 16 /* query rows per tile in the dk/dv loop */

template <typename T, int DMAX>
DEVICE void load_rows(float *dst, const T *src, int row0, int rows, int T_len, size_t row_stride, int D)
{
    /* dst [rows][DMAX + 1] = src rows row0.. (zero past T_len or D) */
    for (int e = threadIdx.x; e < rows * DMAX; e += blockDim.x) {
        int r = e / DMAX, d = e % DMAX, t = row0 + r;
        dst[r * (DMAX + 1) + d] = (t < T_len && d < D) ? tk_ld(src, (size_t)t * row_stride + d) : 0.0f;
    }
}

/* grid (ceil(T / ATT_BQ), B * H), block ATT_BQ */
template <typename T, int DMAX>
DEVICE void attn_fwd(T *o, float *lse, const T *q, const T *k, const T *v, int B, int Tn, int H, int Hkv, int D)
{
    SHARED_ARRAY(float, Ks, [ATT_BK * (DMAX + 1)]);
    SHARED_ARRAY(float, Vs, [ATT_BK * (DMAX + 1)]);
    int bh = blockIdx.y, b = bh / H, h = bh % H, g = h / (H / Hkv);
    int q0 = blockIdx.x * ATT_BQ, i = q0 + threadIdx.x;
    int valid = i < Tn;
    size_t qs = (size_t)H * D, ks = (size_t)Hkv * D;
    const T *qb = q + (size_t)b * Tn * qs + (size_t)h * D;
    const T *kb = k + (size_t)b * Tn * ks + (size_t)g * D;
    const T *vb = v + (size_t)b * Tn * ks + (size_t)g * D;
    /* scores in the log2 domain: s2 = q.k * scale * log2(e) */
    float c = tk_div(1.0f, tk_sqrt((float)D)) * TK_LOG2E;
    float qr[DMAX], acc[DMAX];
    UNROLL
    for (int d = 0; d < DMAX; d++) {
        qr[d] = (valid && d < D) ? tk_ld(qb, (size_t)i * qs + d) * c : 0.0f;
        acc[d] = 0;
    }
    float m = tk_neg_inf(), l = 0;
    int last = q0 + ATT_BQ - 1 < Tn - 1 ? q0 + ATT_BQ - 1 : Tn - 1;
    for (int k0 = 0; k0 <= last; k0 += ATT_BK) {
        load_rows<T, DMAX>(Ks, kb, k0, ATT_BK, Tn, ks, D);
        load_rows<T, DMAX>(Vs, vb, k0, ATT_BK, Tn, ks, D);
        SYNC();
        if (valid && k0 <= i) {
            float s[ATT_BK], mt = tk_neg_inf();
    UNROLL
            for (int jj = 0; jj < ATT_BK; jj++) {
                float dot = 0;
    UNROLL
                for (int d = 0; d < DMAX; d++)
                    dot += qr[d] * Ks[jj * (DMAX + 1) + d];
                s[jj] = k0 + jj <= i ? dot : tk_neg_inf();
                mt = tk_fmaxf(mt, s[jj]);
            }
            float mn = tk_fmaxf(m, mt), alpha = tk_exp2(m - mn), sum = 0;
    UNROLL
            for (int d = 0; d < DMAX; d++)
                acc[d] *= alpha;
    UNROLL
            for (int jj = 0; jj < ATT_BK; jj++) {
                float p = tk_exp2(s[jj] - mn);
                sum += p;
    UNROLL
                for (int d = 0; d < DMAX; d++)
                    acc[d] += p * Vs[jj * (DMAX + 1) + d];
            }
            l = l * alpha + sum;
            m = mn;
        }
        SYNC();
    }
    if (valid) {
        float inv = tk_div(1.0f, l);
        T *ob = o + (size_t)b * Tn * qs + (size_t)h * D + (size_t)i * qs;
        for (int d = 0; d < D && d < DMAX; d++)
            tk_st(ob, d, acc[d] * inv);
        lse[((size_t)b * H + h) * Tn + i] = (m + tk_log2(l)) * TK_LN2;
    }
}

/* delta [B, H, T] = sum_d dout * o per row. One warp per (b, t, h) row. */
template <typename T>
DEVICE void attn_delta(float *delta, const T *dout, const T *o, int B, int Tn, int H, int D)
{
    int lane = threadIdx.x & 31;
    size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); /* (b t h) */
    if (row < (size_t)B * Tn * H) {
        float s = 0;
        for (int d = lane; d < D; d += 32)
            s += tk_ld(dout, row * D + d) * tk_ld(o, row * D + d);
        s = tk_warp_sum(s);
        if (lane == 0) {
            int h = (int)(row % H), t = (int)((row / H) % Tn), b = (int)(row / ((size_t)H * Tn));
            delta[((size_t)b * H + h) * Tn + t] = s;
        }
    }
}

/* grid (ceil(T / ATT_BKV), B * Hkv), block ATT_BKV; dynamic shared memory
 * (2 ATT_BKV + 2 ATT_BQB) (DMAX + 1) + 2 ATT_BQB floats. dk, dv overwritten. */
template <typename T, int DMAX>
DEVICE void attn_dkdv(T *dk, T *dv, const T *dout, const T *q, const T *k, const T *v, const float *lse,
                      const float *delta, int B, int Tn, int H, int Hkv, int D)
{
    DYNAMIC_SHARED(float, sm);
    float *Ks = sm, *Vs = Ks + ATT_BKV * (DMAX + 1), *Qs = Vs + ATT_BKV * (DMAX + 1);
    float *Os = Qs + ATT_BQB * (DMAX + 1), *Ls = Os + ATT_BQB * (DMAX + 1), *Ds = Ls + ATT_BQB;
    int bg = blockIdx.y, b = bg / Hkv, g = bg % Hkv, rep = H / Hkv;
    int k0 = blockIdx.x * ATT_BKV, j = k0 + threadIdx.x, valid = j < Tn;
    size_t qs = (size_t)H * D, ks = (size_t)Hkv * D;
    const T *kb = k + (size_t)b * Tn * ks + (size_t)g * D;
    const T *vb = v + (size_t)b * Tn * ks + (size_t)g * D;
    float scale = tk_div(1.0f, tk_sqrt((float)D));
    load_rows<T, DMAX>(Ks, kb, k0, ATT_BKV, Tn, ks, D);
    load_rows<T, DMAX>(Vs, vb, k0, ATT_BKV, Tn, ks, D);
    float dka[DMAX], dva[DMAX];
    UNROLL
    for (int d = 0; d < DMAX; d++)
        dka[d] = dva[d] = 0;
    const float *kr = Ks + threadIdx.x * (DMAX + 1), *vr = Vs + threadIdx.x * (DMAX + 1);
    for (int hh = 0; hh < rep; hh++) {
        int h = g * rep + hh;
        const T *qb = q + (size_t)b * Tn * qs + (size_t)h * D;
        const T *ob = dout + (size_t)b * Tn * qs + (size_t)h * D;
        const float *lb = lse + ((size_t)b * H + h) * Tn, *db = delta + ((size_t)b * H + h) * Tn;
        for (int i0 = k0; i0 < Tn; i0 += ATT_BQB) {
            SYNC(); /* the previous tile's readers are done */
            load_rows<T, DMAX>(Qs, qb, i0, ATT_BQB, Tn, qs, D);
            load_rows<T, DMAX>(Os, ob, i0, ATT_BQB, Tn, qs, D);
            for (int r = threadIdx.x; r < ATT_BQB; r += blockDim.x) {
                Ls[r] = i0 + r < Tn ? lb[i0 + r] : 0.0f;
                Ds[r] = i0 + r < Tn ? db[i0 + r] : 0.0f;
            }
            SYNC();
            if (valid) {
                for (int r = 0; r < ATT_BQB; r++) {
                    int i = i0 + r;
                    if (i < Tn && i >= j) {
                        const float *qr = Qs + r * (DMAX + 1), *orow = Os + r * (DMAX + 1);
                        float s = 0, dp = 0;
    UNROLL
                        for (int d = 0; d < DMAX; d++) {
                            s += qr[d] * kr[d];
                            dp += orow[d] * vr[d];
                        }
                        float p = tk_exp(s * scale - Ls[r]), ds = p * (dp - Ds[r]) * scale;
    UNROLL
                        for (int d = 0; d < DMAX; d++) {
                            dva[d] += p * orow[d];
                            dka[d] += ds * qr[d];
                        }
                    }
                }
            }
        }
    }
    if (valid) {
        T *dkr = dk + (size_t)b * Tn * ks + (size_t)g * D + (size_t)j * ks;
        T *dvr = dv + (size_t)b * Tn * ks + (size_t)g * D + (size_t)j * ks;
        for (int d = 0; d < D && d < DMAX; d++) {
            tk_st(dkr, d, dka[d]);
            tk_st(dvr, d, dva[d]);
        }
    }
}

/* grid (ceil(T / ATT_BQ), B * H), block ATT_BQ; dynamic shared memory
 * (2 ATT_BQ + 2 ATT_BK) (DMAX + 1) floats. dq overwritten. */
template <typename T, int DMAX>
DEVICE void attn_dq(T *dq, const T *dout, const T *q, const T *k, const T *v, const float *lse,
                    const float *delta, int B, int Tn, int H, int Hkv, int D)
{
    DYNAMIC_SHARED(float, sm);
    float *Qs = sm, *Os = Qs + ATT_BQ * (DMAX + 1), *Ks = Os + ATT_BQ * (DMAX + 1), *Vs = Ks + ATT_BK * (DMAX + 1);
    int bh = blockIdx.y, b = bh / H, h = bh % H, g = h / (H / Hkv);
    int q0 = blockIdx.x * ATT_BQ, i = q0 + threadIdx.x, valid = i < Tn;
    size_t qs = (size_t)H * D, ks = (size_t)Hkv * D;
    const T *qb = q + (size_t)b * Tn * qs + (size_t)h * D;
    const T *ob = dout + (size_t)b * Tn * qs + (size_t)h * D;
    const T *kb = k + (size_t)b * Tn * ks + (size_t)g * D;
    const T *vb = v + (size_t)b * Tn * ks + (size_t)g * D;
    float scale = tk_div(1.0f, tk_sqrt((float)D));
    load_rows<T, DMAX>(Qs, qb, q0, ATT_BQ, Tn, qs, D);
    load_rows<T, DMAX>(Os, ob, q0, ATT_BQ, Tn, qs, D);
    float L = valid ? lse[((size_t)b * H + h) * Tn + i] : 0.0f;
    float Dl = valid ? delta[((size_t)b * H + h) * Tn + i] : 0.0f;
    float dqa[DMAX];
    UNROLL
    for (int d = 0; d < DMAX; d++)
        dqa[d] = 0;
    const float *qr = Qs + threadIdx.x * (DMAX + 1), *orow = Os + threadIdx.x * (DMAX + 1);
    int last = q0 + ATT_BQ - 1 < Tn - 1 ? q0 + ATT_BQ - 1 : Tn - 1;
    for (int k0 = 0; k0 <= last; k0 += ATT_BK) {
        SYNC();
        load_rows<T, DMAX>(Ks, kb, k0, ATT_BK, Tn, ks, D);
        load_rows<T, DMAX>(Vs, vb, k0, ATT_BK, Tn, ks, D);
        SYNC();
        if (valid && k0 <= i) {
            for (int jj = 0; jj < ATT_BK; jj++) {
                if (k0 + jj <= i) {
                    const float *kr = Ks + jj * (DMAX + 1), *vr = Vs + jj * (DMAX + 1);
                    float s = 0, dp = 0;
    UNROLL
                    for (int d = 0; d < DMAX; d++) {
                        s += qr[d] * kr[d];
                        dp += orow[d] * vr[d];
                    }
                    float p = tk_exp(s * scale - L), ds = p * (dp - Dl) * scale;
    UNROLL
                    for (int d = 0; d < DMAX; d++)
                        dqa[d] += ds * kr[d];
                }
            }
        }
    }
    if (valid) {
        T *dqr = dq + (size_t)b * Tn * qs + (size_t)h * D + (size_t)i * qs;
        for (int d = 0; d < D && d < DMAX; d++)
            tk_st(dqr, d, dqa[d]);
    }
}

#define ATT_INSTANCES(T, sfx, DM)                                                                        \
    KERNEL attn_fwd_##sfx##_d##DM(T *o, float *lse, const T *q, const T *k, const T *v, int B, int Tn,   \
                                  int H, int Hkv, int D)                                                 \
    {                                                                                                    \
        attn_fwd<T, DM>(o, lse, q, k, v, B, Tn, H, Hkv, D);                                              \
    }                                                                                                    \
    KERNEL attn_dkdv_##sfx##_d##DM(T *dk, T *dv, const T *dout, const T *q, const T *k, const T *v,     \
                                   const float *lse, const float *delta, int B, int Tn, int H, int Hkv, \
                                   int D)                                                                \
    {                                                                                                    \
        attn_dkdv<T, DM>(dk, dv, dout, q, k, v, lse, delta, B, Tn, H, Hkv, D);                           \
    }                                                                                                    \
    KERNEL attn_dq_##sfx##_d##DM(T *dq, const T *dout, const T *q, const T *k, const T *v,              \
                                 const float *lse, const float *delta, int B, int Tn, int H, int Hkv,   \
                                 int D)                                                                  \
    {                                                                                                    \
        attn_dq<T, DM>(dq, dout, q, k, v, lse, delta, B, Tn, H, Hkv, D);                                 \
    }
ATT_INSTANCES(float, f32, 32)
ATT_INSTANCES(float, f32, 64)
ATT_INSTANCES(float, f32, 128)

KERNEL attn_delta_f32(float *delta, const float *dout, const float *o, int B, int Tn, int H, int D)
{
    attn_delta(delta, dout, o, B, Tn, H, D);
}
KERNEL attn_delta_bf16(float *delta, const bf16_t *dout, const bf16_t *o, int B, int Tn, int H, int D)
{
    attn_delta(delta, dout, o, B, Tn, H, D);
}

/* The same sums with 16-byte loads: L = D / (16 / sizeof(T)) lanes a row
 * (L divides 32: 32 / L rows a warp), one 16-byte piece of dout and of o a
 * lane, summed over the row's L lanes. Where D allows it (gpu_ops.c): the
 * one-warp-a-row version moves 2- or 4-byte pieces, a few per lane, and
 * reduces over 32 lanes for 64 values. */
template <typename T>
DEVICE void attn_delta_vec(float *delta, const T *dout, const T *o, int B, int Tn, int H, int D, int L)
{
    int lane = threadIdx.x & 31, per = 16 / (int)sizeof(T);
    size_t rows = (size_t)B * Tn * H;
    size_t row = ((size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * (size_t)(32 / L) + lane / L;
    float s = 0;
    if (row < rows) {
        float a[8], b[8];
        size_t at = row * D + (size_t)(lane % L) * per;
        tk_vec<T>::unpack(tk_ld16(dout + at), a);
        tk_vec<T>::unpack(tk_ld16(o + at), b);
        for (int j = 0; j < per; j++)
            s += a[j] * b[j];
    }
    for (int m = L / 2; m > 0; m >>= 1) /* every lane, in or past the rows: a shuffle is the whole warp's */
        s += tk_shfl_xor(s, m);
    if (row < rows && lane % L == 0) {
        unsigned r32 = (unsigned)(row % ((size_t)Tn * H)), h = r32 % (unsigned)H, t = r32 / (unsigned)H;
        size_t b = row / ((size_t)Tn * H);
        delta[(b * H + h) * Tn + t] = s;
    }
}
KERNEL attn_delta_vec_f32(float *delta, const float *dout, const float *o, int B, int Tn, int H, int D, int L)
{
    attn_delta_vec(delta, dout, o, B, Tn, H, D, L);
}
KERNEL attn_delta_vec_bf16(float *delta, const bf16_t *dout, const bf16_t *o, int B, int Tn, int H, int D, int L)
{
    attn_delta_vec(delta, dout, o, B, Tn, H, D, L);
}

#define ATT_EMU(sfx, DM) EMU_KERNEL(attn_fwd_##sfx##_d##DM) EMU_KERNEL(attn_dkdv_##sfx##_d##DM) EMU_KERNEL(attn_dq_##sfx##_d##DM)
EMU_REGISTER_BEGIN(attention)
ATT_EMU(f32, 32)
ATT_EMU(f32, 64)
ATT_EMU(f32, 128)
EMU_KERNEL(attn_delta_f32)
EMU_KERNEL(attn_delta_bf16)
EMU_KERNEL(attn_delta_vec_f32)
EMU_KERNEL(attn_delta_vec_bf16)
EMU_REGISTER_END
