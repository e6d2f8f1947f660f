/* attention_mma.cu - causal grouped-query attention in bf16 on the tensor
 * cores (mma.sync m16n8k16, fp32 accumulation), flash-style, for bf16 mode:
 * the same contracts as attention.cu's plain kernels (kernels/cpu/
 * attention.h: q, o [B, T, H, D], k, v [B, T, Hkv, D], lse [B, H, T]).
 *
 * A block is 4 warps; each warp owns 16 rows (queries in the forward and
 * dq, keys in dk/dv) and keeps their operand fragments in registers. The
 * other side's tiles stream through shared memory in two buffers: the next
 * tile's cp.async copy is in flight while the current one is used. Rows are
 * padded by 8 bf16 (ldmatrix rows fall in distinct banks); the B operands
 * come from them by ldmatrix, transposed by ldmatrix.trans where the
 * product runs along the tile's rows (P V, P^T dO, dS^T Q, dS K), so no
 * transposed copy is stored. The head dim is padded with zeros to DP = 64
 * or 128. The forward keeps an online softmax per row (scores in the log2
 * domain, P rounded to bf16 for its product with V); the backward recomputes
 * P from the saved log-sum-exp: attn_dkdv_mma walks the query tiles at or
 * after its key tile for each head of the group in order (the GQA sum is
 * deterministic), attn_dq_mma the key tiles up to its queries. Fully masked
 * tiles are skipped. Launches: gpu_ops.c (bf16 mode; fp32 mode uses
 * attention.cu). */
#include "kernels/cuda/cuda_dialect.h"

#define MMA_ROWS 64 /* rows per block: 4 warps x 16 */
#define MMA_BK 64   /* keys per tile in the forward */

/* Issues the copy of rows [row0, row0 + rows) of a head slice (D of DP
 * columns used, row stride `stride`) into dst [rows][DP + 8], zeros
 * outside: cp.async in 16-byte pieces when D is a multiple of 8, else plain
 * stores. */
template <int DP>
DEVICE void fetch_tile(bf16_t *dst, const bf16_t *src, int row0, int rows, int Tn, size_t stride, int D)
{
    const int ld = DP + 8;
    int vec = (D & 7) == 0;
    for (int e = threadIdx.x; e < rows * (DP / 8); e += blockDim.x) {
        int r = e / (DP / 8), d = 8 * (e % (DP / 8)), t = row0 + r;
        bf16_t *o = dst + r * ld + d;
        if (vec && t < Tn && d + 8 <= D) {
            tk_cp_async16(o, src + (size_t)t * stride + d);
        } else {
            for (int j = 0; j < 8; j++)
                o[j] = t < Tn && d + j < D ? src[(size_t)t * stride + d + j] : (bf16_t)0;
        }
    }
}

/* the A fragments of 16 rows (r0 + g, r0 + g + 8 per lane) of a head slice,
 * straight from global memory, zero outside */
template <int DP>
DEVICE void load_frags(unsigned (*f)[4], const bf16_t *src, int r0, int Tn, size_t stride, int D)
{
    int lane = threadIdx.x & 31, g = lane >> 2, qd = lane & 3;
    int ra = r0 + g, rb = ra + 8;
    UNROLL
    for (int kk = 0; kk < DP / 16; kk++) {
        int c0 = kk * 16 + 2 * qd, c1 = c0 + 8;
        f[kk][0] = ra < Tn && c0 < D ? tk_ld_bf16x2(src + (size_t)ra * stride + c0) : 0u;
        f[kk][1] = rb < Tn && c0 < D ? tk_ld_bf16x2(src + (size_t)rb * stride + c0) : 0u;
        f[kk][2] = ra < Tn && c1 < D ? tk_ld_bf16x2(src + (size_t)ra * stride + c1) : 0u;
        f[kk][3] = rb < Tn && c1 < D ? tk_ld_bf16x2(src + (size_t)rb * stride + c1) : 0u;
    }
}

/* acc [16][NT * 8] fp32 (C fragments) as the A fragments of k-step kk2 */
DEVICE void acc_to_a(unsigned *a, const float (*acc)[4], int kk2)
{
    a[0] = tk_pack_bf16x2(acc[2 * kk2][0], acc[2 * kk2][1]);
    a[1] = tk_pack_bf16x2(acc[2 * kk2][2], acc[2 * kk2][3]);
    a[2] = tk_pack_bf16x2(acc[2 * kk2 + 1][0], acc[2 * kk2 + 1][1]);
    a[3] = tk_pack_bf16x2(acc[2 * kk2 + 1][2], acc[2 * kk2 + 1][3]);
}

/* B fragments of n-tiles n0/8, n0/8 + 1 and k-step k0/16 from a tile whose
 * rows are B's columns (row n holds B[., n]): r = b0, b1 of the first, b0,
 * b1 of the second */
DEVICE void b_rows_x4(unsigned *r, const bf16_t *tile, int ld, int n0, int k0)
{
    int lane = threadIdx.x & 31, i = lane >> 3;
    tk_ldmatrix_x4(r, tile + (n0 + (i >> 1) * 8 + (lane & 7)) * ld + k0 + (i & 1) * 8);
}

/* the same from a tile whose rows are B's rows (row k holds B[k, .]) */
DEVICE void b_cols_x4(unsigned *r, const bf16_t *tile, int ld, int n0, int k0)
{
    int lane = threadIdx.x & 31, i = lane >> 3;
    tk_ldmatrix_x4_trans(r, tile + (k0 + (i & 1) * 8 + (lane & 7)) * ld + n0 + (i >> 1) * 8);
}

/* acc[2 np + {0,1}] += a * B's n-tiles 2 np, 2 np + 1 */
DEVICE void mma_pair(float (*acc)[4], int np, const unsigned *a, const unsigned *b)
{
    tk_mma_bf16(acc[2 * np], a, b);
    tk_mma_bf16(acc[2 * np + 1], a, b + 2);
}

DEVICE void store_pair(bf16_t *row, int c, float x, float y) { tk_st_bf16x2(row + c, tk_pack_bf16x2(x, y)); }

/* ---- the kernels' parts (always inlined: the kernels compile as if written in one piece) ---- */

/* The K and V tiles of iteration it + 1 (BK keys each) into the other buffer, freed by the last
 * iteration's barrier, and a wait for tile it's; the last iteration waits for its own. */
template <int DP, int BK>
DEVICE_INLINE void fetch_next_kv(bf16_t *sm, const bf16_t *kb, const bf16_t *vb, int it, int n_tiles, int Tn,
                                 size_t ks, int D)
{
    const int LD = DP + 8;
    int k0 = it * BK;
    if (it + 1 < n_tiles) {
        bf16_t *nk = sm + ((it + 1) & 1) * 2 * BK * LD;
        fetch_tile<DP>(nk, kb, k0 + BK, BK, Tn, ks, D);
        fetch_tile<DP>(nk + BK * LD, vb, k0 + BK, BK, Tn, ks, D);
        tk_cp_async_commit();
        tk_cp_async_wait_1();
    } else {
        tk_cp_async_wait_all();
    }
}

/* s [16][N] = A B^T over the head dim: the warp's 16 rows (A fragments a) against the N rows of
 * a tile in shared memory */
template <int DP, int N>
DEVICE_INLINE void mma_rows(float (*s)[4], const unsigned (*a)[4], const bf16_t *tile, int ld)
{
    UNROLL
    for (int nt = 0; nt < N / 8; nt++)
        s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0;
    UNROLL
    for (int kk = 0; kk < DP / 16; kk++)
        UNROLL
        for (int np = 0; np < N / 16; np++) {
            unsigned bf[4];
            b_rows_x4(bf, tile, ld, np * 16, kk * 16);
            mma_pair(s, np, a[kk], bf);
        }
}

/* two such products at once, their mma steps interleaved: s = A1 B1^T, t = A2 B2^T */
template <int DP, int N>
DEVICE_INLINE void mma_rows2(float (*s)[4], const unsigned (*a1)[4], const bf16_t *b1, float (*t)[4],
                             const unsigned (*a2)[4], const bf16_t *b2, int ld)
{
    UNROLL
    for (int nt = 0; nt < N / 8; nt++)
        UNROLL
        for (int i = 0; i < 4; i++)
            s[nt][i] = t[nt][i] = 0;
    UNROLL
    for (int kk = 0; kk < DP / 16; kk++)
        UNROLL
        for (int np = 0; np < N / 16; np++) {
            unsigned bf[4];
            b_rows_x4(bf, b1, ld, np * 16, kk * 16);
            mma_pair(s, np, a1[kk], bf);
            b_rows_x4(bf, b2, ld, np * 16, kk * 16);
            mma_pair(t, np, a2[kk], bf);
        }
}

/* acc [16][DP] += P B: P [16][N] the C fragments p (rounded to bf16 as A fragments), B the N
 * rows of a tile in shared memory */
template <int DP, int N>
DEVICE_INLINE void mma_cols(float (*acc)[4], const float (*p)[4], const bf16_t *tile, int ld)
{
    UNROLL
    for (int kk2 = 0; kk2 < N / 16; kk2++) {
        unsigned af[4];
        acc_to_a(af, p, kk2);
        UNROLL
        for (int np = 0; np < DP / 16; np++) {
            unsigned bf[4];
            b_cols_x4(bf, tile, ld, np * 16, kk2 * 16);
            mma_pair(acc, np, af, bf);
        }
    }
}

/* two such products at once, interleaved: acc1 += P1 B1, acc2 += P2 B2 */
template <int DP, int N>
DEVICE_INLINE void mma_cols2(float (*acc1)[4], const float (*p1)[4], const bf16_t *b1, float (*acc2)[4],
                             const float (*p2)[4], const bf16_t *b2, int ld)
{
    UNROLL
    for (int kk2 = 0; kk2 < N / 16; kk2++) {
        unsigned a1[4], a2[4];
        acc_to_a(a1, p1, kk2);
        acc_to_a(a2, p2, kk2);
        UNROLL
        for (int np = 0; np < DP / 16; np++) {
            unsigned bf[4];
            b_cols_x4(bf, b1, ld, np * 16, kk2 * 16);
            mma_pair(acc1, np, a1, bf);
            b_cols_x4(bf, b2, ld, np * 16, kk2 * 16);
            mma_pair(acc2, np, a2, bf);
        }
    }
}

/* the C fragments acc of rows r0, r1 (16 of them per warp) into bf16 rows of base, row stride
 * `stride`, D of the DP columns */
template <int DP>
DEVICE_INLINE void store_rows(bf16_t *base, size_t stride, int r0, int r1, int Tn, int D, int qd,
                              const float (*acc)[4])
{
    UNROLL
    for (int nt = 0; nt < DP / 8; nt++) {
        int col = nt * 8 + 2 * qd;
        if (col < D) {
            if (r0 < Tn)
                store_pair(base + (size_t)r0 * stride, col, acc[nt][0], acc[nt][1]);
            if (r1 < Tn)
                store_pair(base + (size_t)r1 * stride, col, acc[nt][2], acc[nt][3]);
        }
    }
}

/* the forward's scores of the key tile from k0, causally masked for rows row0, row1 (MASK 0:
 * the caller knows that every key of the tile is seen by every row of the warp) and scaled by c
 * (log2 domain); *x0, *x1 their maxima over each row (the quad's lanes) */
template <int BK, int MASK>
DEVICE_INLINE void fwd_mask_scores(float (*s)[4], int k0, int row0, int row1, int Tn, int qd, float c, float *x0_out,
                                   float *x1_out)
{
    float x0 = tk_neg_inf(), x1 = tk_neg_inf();
    UNROLL
    for (int nt = 0; nt < BK / 8; nt++)
        UNROLL
        for (int j = 0; j < 2; j++) {
            int key = k0 + nt * 8 + 2 * qd + j;
            s[nt][j] = !MASK || (key <= row0 && key < Tn) ? s[nt][j] * c : tk_neg_inf();
            s[nt][2 + j] = !MASK || (key <= row1 && key < Tn) ? s[nt][2 + j] * c : tk_neg_inf();
            x0 = tk_fmaxf(x0, s[nt][j]);
            x1 = tk_fmaxf(x1, s[nt][2 + j]);
        }
    x0 = tk_fmaxf(x0, tk_shfl_xor(x0, 1));
    x0 = tk_fmaxf(x0, tk_shfl_xor(x0, 2));
    x1 = tk_fmaxf(x1, tk_shfl_xor(x1, 1));
    x1 = tk_fmaxf(x1, tk_shfl_xor(x1, 2));
    *x0_out = x0;
    *x1_out = x1;
}

/* the online softmax's step for the tile's maxima x0, x1: the rows' maxima m and sums l move on,
 * s becomes the tile's probabilities (against the new maxima) and acc is rescaled to them */
template <int DP, int BK>
DEVICE_INLINE void fwd_softmax_step(float (*s)[4], float (*acc)[4], float x0, float x1, float *m0, float *m1,
                                    float *l0, float *l1)
{
    float n0 = tk_fmaxf(*m0, x0), n1 = tk_fmaxf(*m1, x1);
    /* a row with nothing seen yet keeps its zeros (no -inf - -inf) */
    float a0 = n0 == tk_neg_inf() ? 1.0f : tk_exp2(*m0 - n0), a1 = n1 == tk_neg_inf() ? 1.0f : tk_exp2(*m1 - n1);
    float b0 = n0 == tk_neg_inf() ? 0.0f : n0, b1 = n1 == tk_neg_inf() ? 0.0f : n1;
    float sum0 = 0, sum1 = 0;
    UNROLL
    for (int nt = 0; nt < BK / 8; nt++)
        UNROLL
        for (int j = 0; j < 2; j++) {
            s[nt][j] = tk_exp2(s[nt][j] - b0);
            s[nt][2 + j] = tk_exp2(s[nt][2 + j] - b1);
            sum0 += s[nt][j];
            sum1 += s[nt][2 + j];
        }
    *l0 = *l0 * a0 + sum0;
    *l1 = *l1 * a1 + sum1;
    *m0 = n0;
    *m1 = n1;
    UNROLL
    for (int nt = 0; nt < DP / 8; nt++) {
        acc[nt][0] *= a0;
        acc[nt][1] *= a0;
        acc[nt][2] *= a1;
        acc[nt][3] *= a1;
    }
}

/* the forward's output rows row0, row1 of head h of batch b: o = acc / l in bf16 (l summed
 * over the quad's lanes), lse = (m + log2 l) ln 2 */
template <int DP>
DEVICE_INLINE void fwd_store(bf16_t *o, float *lse, int b, int h, int H, size_t qs, int row0, int row1, int Tn, int D,
                             int qd, const float (*acc)[4], float m0, float m1, float l0, float l1)
{
    l0 += tk_shfl_xor(l0, 1);
    l0 += tk_shfl_xor(l0, 2);
    l1 += tk_shfl_xor(l1, 1);
    l1 += tk_shfl_xor(l1, 2);
    float i0 = tk_div(1.0f, l0), i1 = tk_div(1.0f, l1);
    bf16_t *ob = o + (size_t)b * Tn * qs + (size_t)h * D;
    UNROLL
    for (int nt = 0; nt < DP / 8; nt++) {
        int col = nt * 8 + 2 * qd;
        if (col < D) {
            if (row0 < Tn)
                store_pair(ob + (size_t)row0 * qs, col, acc[nt][0] * i0, acc[nt][1] * i0);
            if (row1 < Tn)
                store_pair(ob + (size_t)row1 * qs, col, acc[nt][2] * i1, acc[nt][3] * i1);
        }
    }
    if (qd == 0) {
        float *lb = lse + ((size_t)b * H + h) * Tn;
        if (row0 < Tn)
            lb[row0] = (m0 + tk_log2(l0)) * TK_LN2;
        if (row1 < Tn)
            lb[row1] = (m1 + tk_log2(l1)) * TK_LN2;
    }
}

/* grid (ceil(T / 64), B * H), block 128, dynamic shared memory
 * 4 MMA_BK (DP + 8) bf16 (two K and V buffers) */
template <int DP>
DEVICE void attn_fwd_mma(bf16_t *o, float *lse, const bf16_t *q, const bf16_t *k, const bf16_t *v, int B, int Tn,
                         int H, int Hkv, int D)
{
    const int LD = DP + 8;
    DYNAMIC_SHARED(bf16_t, sm);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, qd = lane & 3;
    int bh = blockIdx.y, b = bh / H, h = bh % H, gk = h / (H / Hkv);
    int q0 = blockIdx.x * MMA_ROWS, qw = q0 + warp * 16, row0 = qw + g, row1 = row0 + 8;
    size_t qs = (size_t)H * D, ks = (size_t)Hkv * D;
    const bf16_t *qb = q + (size_t)b * Tn * qs + (size_t)h * D;
    const bf16_t *kb = k + (size_t)b * Tn * ks + (size_t)gk * D;
    const bf16_t *vb = v + (size_t)b * Tn * ks + (size_t)gk * D;
    int last = q0 + MMA_ROWS - 1 < Tn - 1 ? q0 + MMA_ROWS - 1 : Tn - 1, n_tiles = last / MMA_BK + 1;
    fetch_tile<DP>(sm, kb, 0, MMA_BK, Tn, ks, D);
    fetch_tile<DP>(sm + MMA_BK * LD, vb, 0, MMA_BK, Tn, ks, D);
    tk_cp_async_commit();
    unsigned qf[DP / 16][4];
    load_frags<DP>(qf, qb, qw, Tn, qs, D);
    float c = tk_div(1.0f, tk_sqrt((float)D)) * TK_LOG2E;
    float acc[DP / 8][4];
    UNROLL
    for (int nt = 0; nt < DP / 8; nt++)
        acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0;
    float m0 = tk_neg_inf(), m1 = tk_neg_inf(), l0 = 0, l1 = 0;
    for (int it = 0; it < n_tiles; it++) {
        int k0 = it * MMA_BK;
        const bf16_t *Ks = sm + (it & 1) * 2 * MMA_BK * LD, *Vs = Ks + MMA_BK * LD;
        fetch_next_kv<DP, MMA_BK>(sm, kb, vb, it, n_tiles, Tn, ks, D);
        SYNC();
        if (k0 <= qw + 15 && qw < Tn) { /* warp-uniform */
            float s[MMA_BK / 8][4], x0, x1;
            mma_rows<DP, MMA_BK>(s, qf, Ks, LD);
            if (k0 + MMA_BK - 1 <= qw && k0 + MMA_BK <= Tn) /* below the diagonal: nothing masked */
                fwd_mask_scores<MMA_BK, 0>(s, k0, row0, row1, Tn, qd, c, &x0, &x1);
            else
                fwd_mask_scores<MMA_BK, 1>(s, k0, row0, row1, Tn, qd, c, &x0, &x1);
            fwd_softmax_step<DP, MMA_BK>(s, acc, x0, x1, &m0, &m1, &l0, &l1);
            mma_cols<DP, MMA_BK>(acc, s, Vs, LD);
        }
        SYNC(); /* this buffer is refilled two iterations on */
    }
    fwd_store<DP>(o, lse, b, h, H, qs, row0, row1, Tn, D, qd, acc, m0, m1, l0, l1);
}

/* Step s of attn_dkdv_mma: head gk * rep + s / n_i, queries from i_start + (s % n_i) BQ, into
 * buffer s & 1: the Q and dO tiles (cp.async, committed) and their log-sum-exp (log2) and delta
 * into fl */
template <int DP, int BQ>
DEVICE_INLINE void dkdv_fetch(bf16_t *sm, float *fl, const bf16_t *q, const bf16_t *dout, const float *lse,
                              const float *delta, int s, int b, int gk, int rep, int n_i, int i_start, int Tn, int H,
                              size_t qs, int D)
{
    const int LD = DP + 8;
    int h_ = gk * rep + s / n_i, i0_ = i_start + (s % n_i) * BQ, bu_ = s & 1;
    fetch_tile<DP>(sm + bu_ * 2 * BQ * LD, q + (size_t)b * Tn * qs + (size_t)h_ * D, i0_, BQ, Tn, qs, D);
    fetch_tile<DP>(sm + bu_ * 2 * BQ * LD + BQ * LD, dout + (size_t)b * Tn * qs + (size_t)h_ * D, i0_, BQ, Tn, qs, D);
    const float *lb_ = lse + ((size_t)b * H + h_) * Tn, *db_ = delta + ((size_t)b * H + h_) * Tn;
    for (int r_ = threadIdx.x; r_ < BQ; r_ += blockDim.x) {
        fl[bu_ * BQ + r_] = i0_ + r_ < Tn ? lb_[i0_ + r_] * TK_LOG2E : 0.0f;
        fl[2 * BQ + bu_ * BQ + r_] = i0_ + r_ < Tn ? db_[i0_ + r_] : 0.0f;
    }
    tk_cp_async_commit();
}

/* P recomputed from the log-sum-exp Ls into st, and dS = P (dP - delta) scale into dp, for the
 * warp's keys key0, key1 against the queries from i0 (a query sees the keys at or before it;
 * MASK 0: the caller knows that every query of the tile sees every key of the warp) */
template <int BQ, int MASK>
DEVICE_INLINE void dkdv_probs(float (*st)[4], float (*dp)[4], int i0, int key0, int key1, int Tn, int qd,
                              const float *Ls, const float *Ds, float c2, float scale)
{
    UNROLL
    for (int nt = 0; nt < BQ / 8; nt++)
        UNROLL
        for (int j = 0; j < 2; j++) {
            int qi = nt * 8 + 2 * qd + j, qrow = i0 + qi;
            float L = Ls[qi], Dl = Ds[qi];
            float p0 = !MASK || (qrow >= key0 && qrow < Tn && key0 < Tn) ? tk_exp2(st[nt][j] * c2 - L) : 0.0f;
            float p1 = !MASK || (qrow >= key1 && qrow < Tn && key1 < Tn) ? tk_exp2(st[nt][2 + j] * c2 - L) : 0.0f;
            st[nt][j] = p0;
            st[nt][2 + j] = p1;
            dp[nt][j] = p0 * (dp[nt][j] - Dl) * scale;
            dp[nt][2 + j] = p1 * (dp[nt][2 + j] - Dl) * scale;
        }
}

/* the warp's rows key0, key1 of dk and dv (bf16) */
template <int DP>
DEVICE_INLINE void dkdv_store(bf16_t *dkb, bf16_t *dvb, size_t ks, int key0, int key1, int Tn, int D, int qd,
                              const float (*dka)[4], const float (*dva)[4])
{
    UNROLL
    for (int nt = 0; nt < DP / 8; nt++) {
        int col = nt * 8 + 2 * qd;
        if (col < D) {
            if (key0 < Tn) {
                store_pair(dkb + (size_t)key0 * ks, col, dka[nt][0], dka[nt][1]);
                store_pair(dvb + (size_t)key0 * ks, col, dva[nt][0], dva[nt][1]);
            }
            if (key1 < Tn) {
                store_pair(dkb + (size_t)key1 * ks, col, dka[nt][2], dka[nt][3]);
                store_pair(dvb + (size_t)key1 * ks, col, dva[nt][2], dva[nt][3]);
            }
        }
    }
}

/* grid (ceil(T / 64), B * Hkv), block 128; BQ query rows per tile; dynamic
 * shared memory 4 BQ (DP + 8) bf16 + 4 BQ floats (two Q and dO buffers, two
 * of their log-sum-exp and delta). dk, dv overwritten. */
template <int DP, int BQ>
DEVICE void attn_dkdv_mma(bf16_t *dk, bf16_t *dv, const bf16_t *dout, const bf16_t *q, const bf16_t *k,
                          const bf16_t *v, const float *lse, const float *delta, int B, int Tn, int H, int Hkv, int D)
{
    const int LD = DP + 8;
    DYNAMIC_SHARED(bf16_t, sm);
    float *fl = (float *)(sm + 4 * BQ * LD); /* [2][BQ] lse (log2), [2][BQ] delta */
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, qd = lane & 3;
    int bg = blockIdx.y, b = bg / Hkv, gk = bg % Hkv, rep = H / Hkv;
    int k0 = blockIdx.x * MMA_ROWS, kw = k0 + warp * 16, key0 = kw + g, key1 = key0 + 8;
    size_t qs = (size_t)H * D, ks = (size_t)Hkv * D;
    const bf16_t *kb = k + (size_t)b * Tn * ks + (size_t)gk * D;
    const bf16_t *vb = v + (size_t)b * Tn * ks + (size_t)gk * D;
    int i_start = k0 / BQ * BQ, n_i = (Tn - i_start + BQ - 1) / BQ, n_steps = rep * n_i;
    if (n_steps > 0)
        dkdv_fetch<DP, BQ>(sm, fl, q, dout, lse, delta, 0, b, gk, rep, n_i, i_start, Tn, H, qs, D);
    unsigned kf[DP / 16][4], vf[DP / 16][4];
    load_frags<DP>(kf, kb, kw, Tn, ks, D);
    load_frags<DP>(vf, vb, kw, Tn, ks, D);
    float scale = tk_div(1.0f, tk_sqrt((float)D)), c2 = scale * TK_LOG2E;
    float dka[DP / 8][4], dva[DP / 8][4];
    UNROLL
    for (int nt = 0; nt < DP / 8; nt++)
        UNROLL
        for (int i = 0; i < 4; i++)
            dka[nt][i] = dva[nt][i] = 0;
    for (int st_ = 0; st_ < n_steps; st_++) {
        int i0 = i_start + (st_ % n_i) * BQ, bu = st_ & 1;
        if (st_ + 1 < n_steps) {
            dkdv_fetch<DP, BQ>(sm, fl, q, dout, lse, delta, st_ + 1, b, gk, rep, n_i, i_start, Tn, H, qs, D);
            tk_cp_async_wait_1();
        } else {
            tk_cp_async_wait_all();
        }
        SYNC();
        const bf16_t *Qs = sm + bu * 2 * BQ * LD, *Os = Qs + BQ * LD;
        const float *Ls = fl + bu * BQ, *Ds = fl + 2 * BQ + bu * BQ;
        if (i0 + BQ - 1 >= kw && kw < Tn) { /* warp-uniform: some query here sees a key of the warp */
            float st[BQ / 8][4], dp[BQ / 8][4];
            mma_rows2<DP, BQ>(st, kf, Qs, dp, vf, Os, LD);
            if (i0 >= kw + 15 && i0 + BQ <= Tn) /* below the diagonal: nothing masked */
                dkdv_probs<BQ, 0>(st, dp, i0, key0, key1, Tn, qd, Ls, Ds, c2, scale);
            else
                dkdv_probs<BQ, 1>(st, dp, i0, key0, key1, Tn, qd, Ls, Ds, c2, scale);
            mma_cols2<DP, BQ>(dva, st, Os, dka, dp, Qs, LD);
        }
        SYNC();
    }
    dkdv_store<DP>(dk + (size_t)b * Tn * ks + (size_t)gk * D, dv + (size_t)b * Tn * ks + (size_t)gk * D, ks, key0,
                   key1, Tn, D, qd, dka, dva);
}

/* dS = P (dP - delta) scale into s, P recomputed from the rows' log-sum-exp L0, L1, for rows
 * row0, row1 against the key tile from k0 (a query sees the keys at or before it; MASK 0: the
 * caller knows that every row of the warp sees every key of the tile) */
template <int BK, int MASK>
DEVICE_INLINE void dq_probs(float (*s)[4], const float (*dp)[4], int k0, int row0, int row1, int Tn, int qd,
                            float L0, float L1, float D0, float D1, float c2, float scale)
{
    UNROLL
    for (int nt = 0; nt < BK / 8; nt++)
        UNROLL
        for (int j = 0; j < 2; j++) {
            int key = k0 + nt * 8 + 2 * qd + j;
            float p0 = !MASK || (key <= row0 && key < Tn && row0 < Tn) ? tk_exp2(s[nt][j] * c2 - L0) : 0.0f;
            float p1 = !MASK || (key <= row1 && key < Tn && row1 < Tn) ? tk_exp2(s[nt][2 + j] * c2 - L1) : 0.0f;
            s[nt][j] = p0 * (dp[nt][j] - D0) * scale;
            s[nt][2 + j] = p1 * (dp[nt][2 + j] - D1) * scale;
        }
}

/* grid (ceil(T / 64), B * H), block 128; BK keys per tile; dynamic shared
 * memory 4 BK (DP + 8) bf16 (two K and V buffers). dq overwritten. */
template <int DP, int BK>
DEVICE void attn_dq_mma(bf16_t *dq, const bf16_t *dout, const bf16_t *q, const bf16_t *k, const bf16_t *v,
                        const float *lse, const float *delta, int B, int Tn, int H, int Hkv, int D)
{
    const int LD = DP + 8;
    DYNAMIC_SHARED(bf16_t, sm);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, qd = lane & 3;
    int bh = blockIdx.y, b = bh / H, h = bh % H, gk = h / (H / Hkv);
    int q0 = blockIdx.x * MMA_ROWS, qw = q0 + warp * 16, row0 = qw + g, row1 = row0 + 8;
    size_t qs = (size_t)H * D, ks = (size_t)Hkv * D;
    const bf16_t *qb = q + (size_t)b * Tn * qs + (size_t)h * D;
    const bf16_t *ob = dout + (size_t)b * Tn * qs + (size_t)h * D;
    const bf16_t *kb = k + (size_t)b * Tn * ks + (size_t)gk * D;
    const bf16_t *vb = v + (size_t)b * Tn * ks + (size_t)gk * D;
    int last = q0 + MMA_ROWS - 1 < Tn - 1 ? q0 + MMA_ROWS - 1 : Tn - 1, n_tiles = last / BK + 1;
    fetch_tile<DP>(sm, kb, 0, BK, Tn, ks, D);
    fetch_tile<DP>(sm + BK * LD, vb, 0, BK, Tn, ks, D);
    tk_cp_async_commit();
    unsigned qf[DP / 16][4], of[DP / 16][4];
    load_frags<DP>(qf, qb, qw, Tn, qs, D);
    load_frags<DP>(of, ob, qw, Tn, qs, D);
    const float *lb = lse + ((size_t)b * H + h) * Tn, *db = delta + ((size_t)b * H + h) * Tn;
    float L0 = row0 < Tn ? lb[row0] * TK_LOG2E : 0.0f, L1 = row1 < Tn ? lb[row1] * TK_LOG2E : 0.0f;
    float D0 = row0 < Tn ? db[row0] : 0.0f, D1 = row1 < Tn ? db[row1] : 0.0f;
    float scale = tk_div(1.0f, tk_sqrt((float)D)), c2 = scale * TK_LOG2E;
    float dqa[DP / 8][4];
    UNROLL
    for (int nt = 0; nt < DP / 8; nt++)
        dqa[nt][0] = dqa[nt][1] = dqa[nt][2] = dqa[nt][3] = 0;
    for (int it = 0; it < n_tiles; it++) {
        int k0 = it * BK;
        const bf16_t *Ks = sm + (it & 1) * 2 * BK * LD, *Vs = Ks + BK * LD;
        fetch_next_kv<DP, BK>(sm, kb, vb, it, n_tiles, Tn, ks, D);
        SYNC();
        if (k0 <= qw + 15 && qw < Tn) {
            float s[BK / 8][4], dp[BK / 8][4];
            mma_rows2<DP, BK>(s, qf, Ks, dp, of, Vs, LD);
            if (k0 + BK - 1 <= qw && qw + 15 < Tn) /* below the diagonal: nothing masked */
                dq_probs<BK, 0>(s, dp, k0, row0, row1, Tn, qd, L0, L1, D0, D1, c2, scale);
            else
                dq_probs<BK, 1>(s, dp, k0, row0, row1, Tn, qd, L0, L1, D0, D1, c2, scale);
            mma_cols<DP, BK>(dqa, s, Ks, LD);
        }
        SYNC();
    }
    store_rows<DP>(dq + (size_t)b * Tn * qs + (size_t)h * D, qs, row0, row1, Tn, D, qd, dqa);
}

#define MMA_INSTANCES(DP, BQ)                                                                                   \
    KERNEL attn_fwd_mma_d##DP(bf16_t *o, float *lse, const bf16_t *q, const bf16_t *k, const bf16_t *v, int B,   \
                              int Tn, int H, int Hkv, int D)                                                    \
    {                                                                                                           \
        attn_fwd_mma<DP>(o, lse, q, k, v, B, Tn, H, Hkv, D);                                                    \
    }                                                                                                           \
    KERNEL attn_dkdv_mma_d##DP(bf16_t *dk, bf16_t *dv, const bf16_t *dout, const bf16_t *q, const bf16_t *k,     \
                               const bf16_t *v, const float *lse, const float *delta, int B, int Tn, int H,     \
                               int Hkv, int D)                                                                  \
    {                                                                                                           \
        attn_dkdv_mma<DP, BQ>(dk, dv, dout, q, k, v, lse, delta, B, Tn, H, Hkv, D);                             \
    }                                                                                                           \
    KERNEL attn_dq_mma_d##DP(bf16_t *dq, const bf16_t *dout, const bf16_t *q, const bf16_t *k, const bf16_t *v,  \
                             const float *lse, const float *delta, int B, int Tn, int H, int Hkv, int D)        \
    {                                                                                                           \
        attn_dq_mma<DP, BQ>(dq, dout, q, k, v, lse, delta, B, Tn, H, Hkv, D);                                   \
    }
MMA_INSTANCES(64, 64)
MMA_INSTANCES(128, 32)

EMU_REGISTER_BEGIN(attention_mma)
EMU_KERNEL(attn_fwd_mma_d64)
EMU_KERNEL(attn_dkdv_mma_d64)
EMU_KERNEL(attn_dq_mma_d64)
EMU_KERNEL(attn_fwd_mma_d128)
EMU_KERNEL(attn_dkdv_mma_d128)
EMU_KERNEL(attn_dq_mma_d128)
EMU_REGISTER_END
