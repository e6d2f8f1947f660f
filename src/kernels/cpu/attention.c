/* attention.c - causal GQA attention (see attention.h): the tiled head kernels
 * (written once, on the operations of attention_kernel.h), the portable C
 * table of those operations, the whole-batch OpenMP drivers, row-by-row
 * kernels for head dims too large for the tiles' stack buffers and for
 * forwards of one or two queries (decoding), and the plain references.
 *
 * Tiling: ATT_BQ queries at a time (their q, and in the backward dout, packed
 * transposed once per query tile, q pre-multiplied by the scale); for each key
 * tile of up to ATT_BK keys that some query of the tile can see, the scores
 * S^T [keys x queries] = K Qt are one tile product, the softmax works along
 * its rows (one vector lane per query), and the value/gradient products read
 * K, V, Q, dout rows in place. Key tiles past the diagonal are never touched;
 * on the diagonal tile the scores are masked with -inf and the products run
 * by blocks of rows that skip the masked terms. Only ATT_BK x ATT_BQ scores
 * exist at a time. */
#include "kernels/cpu/attention.h"
#include "core/omp_team.h"
#include "kernels/cpu/attention_kernel.h"
#include "kernels/cpu/kernel_path.h"
#include "kernels/cpu/vec.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define ATT_BQ 32     /* queries per tile (columns of a score tile) */
#define ATT_BK 64     /* keys per tile (rows of a score tile) */
#define ATT_MAX_D 256 /* largest head dim of the tiled kernels (stack buffers) */
#define ATT_ROW_BK 64 /* keys per step of the row kernels */
#define ATT_ROWS_MAX_Q 2 /* forwards of this few queries (decoding) use the row
                            kernels: a tile of 1-2 query lanes wastes 6/8 of
                            every vector (27 vs 43 us for one query, 256 keys,
                            4 heads of 64) */

static inline int min_int(int a, int b) { return a < b ? a : b; }

/* ---------------- the portable table ---------------- */

static void mm_portable(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b,
                        long ldb, int m, int n, int k, int accumulate)
{
    enum { CHUNK = 64 };
    for (int j0 = 0; j0 < n; j0 += CHUNK) {
        int nj = min_int(CHUNK, n - j0);
        for (int i = 0; i < m; i++) {
            float acc[CHUNK] = {0};
            for (int p = 0; p < k; p++) {
                float av = a[i * a_rs + p * a_cs];
                const float *bp = b + p * ldb + j0;
                for (int j = 0; j < nj; j++)
                    acc[j] += av * bp[j];
            }
            float *cr = c + i * ldc + j0;
            for (int j = 0; j < nj; j++)
                cr[j] = accumulate ? cr[j] + acc[j] : acc[j];
        }
    }
}

static void exp_cols_portable(float *st, int ld, int nk, int nq, const float *mx, float *sum)
{
    for (int j = 0; j < nk; j++) {
        float *row = st + (size_t)j * ld;
        for (int i = 0; i < nq; i++) {
            row[i] = expf(row[i] - mx[i]);
            sum[i] += row[i];
        }
    }
}

static void softmax_grad_portable(float *st, float *dpt, int ld, int nk, int nq,
                                  const float *lse, const float *delta, float scale)
{
    for (int j = 0; j < nk; j++) {
        float *srow = st + (size_t)j * ld, *drow = dpt + (size_t)j * ld;
        for (int i = 0; i < nq; i++) {
            float p = expf(srow[i] - lse[i]);
            srow[i] = p;
            drow[i] = p * (drow[i] - delta[i]) * scale;
        }
    }
}

const att_kernels att_kernels_portable = {8, mm_portable, exp_cols_portable, softmax_grad_portable};

const att_kernels *att_kernels_select(void)
{
    cpu_kernel_path path = kernel_path_select_now();
    return path == CPU_KERNELS_AVX512 ? &att_kernels_avx512
         : path == CPU_KERNELS_AVX2   ? &att_kernels_avx2
                                      : &att_kernels_portable;
}

/* ---------------- tiled head kernels ---------------- */

/* xt[d * ATT_BQ + i] = mul * x[i * stride + d] for i < n rows, d < D. */
static void pack_transposed(float *xt, const float *x, int stride, int n, int D, float mul)
{
    for (int i = 0; i < n; i++) {
        const float *xr = x + (size_t)i * stride;
        for (int d = 0; d < D; d++)
            xt[d * ATT_BQ + i] = mul * xr[d];
    }
}

/* Asks for rows [r0, r1) of x (D floats each, stride apart) to be brought
 * into cache: issued one query tile ahead, so the next tile's packing and row
 * terms do not wait on memory. */
static void prefetch_rows(const float *x, int stride, int r0, int r1, int D)
{
    for (int r = r0; r < r1; r++)
        for (int d = 0; d < D; d += 16)
            __builtin_prefetch(x + (size_t)r * stride + d);
}

/* Causal mask of one score tile: key j0 + jj is visible to the query at
 * position qpos0 + ii iff j0 + jj <= qpos0 + ii; hidden scores become -inf
 * and, when dpt is given, hidden entries of dpt become 0 (the products below
 * may have skipped them: they must not hold stale values). */
static void mask_tile(float *st, float *dpt, int nk, int nq, int j0, int qpos0)
{
    for (int jj = 0; jj < nk; jj++) {
        int hidden = min_int(nq, j0 + jj - qpos0); /* queries ii < hidden cannot see it */
        for (int ii = 0; ii < hidden; ii++)
            st[jj * ATT_BQ + ii] = -INFINITY;
        for (int ii = 0; dpt && ii < hidden; ii++)
            dpt[jj * ATT_BQ + ii] = 0;
    }
}

/* The products of a diagonal tile, cut into blocks of kern->mr rows. rel =
 * j0 - qpos0: key jj of the tile is visible to query ii iff jj + rel <= ii.
 * Every skipped term is one the mask makes zero (a hidden score, later -inf,
 * or p = ds = 0 in a sum), so results are those of the whole-tile products. */

/* xt [nk x nq] = A [nk keys x D] Bt [D x nq], skipping each key block's
 * hidden leading columns (rounded down to whole vectors of 8). */
static void scores_diag(const att_kernels *kern, float *xt, const float *a, int ks,
                        const float *bt, int nk, int nq, int D, int rel)
{
    for (int jj = 0; jj < nk; jj += kern->mr) {
        int r = min_int(kern->mr, nk - jj);
        int c0 = (jj + rel > 0 ? jj + rel : 0) & ~7;
        kern->mm(xt + jj * ATT_BQ + c0, ATT_BQ, a + (size_t)jj * ks, ks, 1, bt + c0, ATT_BQ, r,
                 nq - c0, D, 0);
    }
}

/* C [nq x D] (+)= X [nq x nk] B [nk x D], X read from the transposed tile xt:
 * each query block stops at the last key it can see. */
static void queries_diag(const att_kernels *kern, float *c, int cs, const float *xt,
                         const float *b, int ks, int nq, int nk, int D, int rel, int accumulate)
{
    for (int ii = 0; ii < nq; ii += kern->mr) {
        int r = min_int(kern->mr, nq - ii);
        int kend = min_int(nk, ii + r - rel);
        if (kend > 0)
            kern->mm(c + (size_t)ii * cs, cs, xt + ii, 1, ATT_BQ, b, ks, r, D, kend, accumulate);
    }
}

/* C [nk x D] += Xt [nk x nq] B [nq x D]: each key block starts at the first
 * query that can see it. */
static void keys_diag(const att_kernels *kern, float *c, int cs, const float *xt,
                      const float *b, int bs, int nk, int nq, int D, int rel)
{
    for (int jj = 0; jj < nk; jj += kern->mr) {
        int r = min_int(kern->mr, nk - jj);
        int k0 = jj + rel > 0 ? jj + rel : 0;
        kern->mm(c + (size_t)jj * cs, cs, xt + jj * ATT_BQ + k0, ATT_BQ, 1, b + (size_t)k0 * bs,
                 bs, r, D, nq - k0, 1);
    }
}

/* One key tile of the forward's online softmax: the running max m over the
 * tile's scores st, what was summed so far (l, and the output rows ot) scaled
 * down to it when rescale (not the first tile), then st = exp(st - m) with
 * l += its columns' sums. */
static void online_softmax(const att_kernels *kern, float *st, int nk, int nq, float *m, float *l, float *ot,
                           int qs, int D, int rescale)
{
    float mnew[ATT_BQ];
    memcpy(mnew, m, sizeof(float) * (size_t)nq);
    for (int jj = 0; jj < nk; jj++)
        for (int ii = 0; ii < nq; ii++)
            mnew[ii] = st[jj * ATT_BQ + ii] > mnew[ii] ? st[jj * ATT_BQ + ii] : mnew[ii];
    if (rescale)
        for (int ii = 0; ii < nq; ii++) {
            float corr = expf(m[ii] - mnew[ii]);
            l[ii] *= corr;
            if (corr != 1.0f)
                vec_scale(ot + (size_t)ii * qs, corr, D);
        }
    memcpy(m, mnew, sizeof(float) * (size_t)nq);
    kern->exp_cols(st, ATT_BQ, nk, nq, m, l);
}

/* A query tile's output rows divided by their sums, and their log-sum-exp. */
static void finish_rows(float *ot, int qs, float *lse, const float *m, const float *l, int nq, int D)
{
    for (int ii = 0; ii < nq; ii++) {
        vec_scale(ot + (size_t)ii * qs, 1.0f / l[ii], D);
        lse[ii] = m[ii] + logf(l[ii]);
    }
}

static void head_forward_tiled(const att_kernels *kern, float *o, float *lse, const float *q,
                               const float *k, const float *v, int qs, int ks, int Tq, int Tk,
                               int D, float scale)
{
    float qt[ATT_MAX_D * ATT_BQ], st[ATT_BK * ATT_BQ];
    float m[ATT_BQ], l[ATT_BQ];
    int off = Tk - Tq; /* position of query row 0 */
    for (int i0 = 0; i0 < Tq; i0 += ATT_BQ) {
        int nq = min_int(ATT_BQ, Tq - i0), qpos0 = off + i0;
        float *ot = o + (size_t)i0 * qs;
        pack_transposed(qt, q + (size_t)i0 * qs, qs, nq, D, scale);
        prefetch_rows(q, qs, i0 + nq, min_int(Tq, i0 + nq + ATT_BQ), D);
        for (int ii = 0; ii < nq; ii++) {
            m[ii] = -INFINITY;
            l[ii] = 0;
        }
        int kend = qpos0 + nq; /* keys [0, kend) are visible to some query of the tile */
        for (int j0 = 0; j0 < kend; j0 += ATT_BK) {
            int nk = min_int(ATT_BK, kend - j0), diag = j0 + nk - 1 > qpos0;
            const float *kt = k + (size_t)j0 * ks, *vt = v + (size_t)j0 * ks;
            if (diag) {
                scores_diag(kern, st, kt, ks, qt, nk, nq, D, j0 - qpos0);
                mask_tile(st, NULL, nk, nq, j0, qpos0);
            } else {
                kern->mm(st, ATT_BQ, kt, ks, 1, qt, ATT_BQ, nk, nq, D, 0);
            }
            online_softmax(kern, st, nk, nq, m, l, ot, qs, D, j0 > 0);
            /* O [nq x D] (+)= P [nq x nk] V, P read from the transposed tile */
            if (diag)
                queries_diag(kern, ot, qs, st, vt, ks, nq, nk, D, j0 - qpos0, j0 > 0);
            else
                kern->mm(ot, qs, st, 1, ATT_BQ, vt, ks, nq, D, nk, j0 > 0);
        }
        finish_rows(ot, qs, lse + i0, m, l, nq, D);
    }
}

/* A backward query tile's row terms: delta_i = sum_d dout * o = sum_j p_ij
 * dp_ij (the softmax backward's), and the next tile's q, dout and o rows
 * asked into cache. */
static void backward_rows(const float *q, const float *dout, const float *o, int qs, int i0, int nq, int Tq,
                          int D, float *delta)
{
    size_t r0 = (size_t)i0 * qs;
    int next0 = i0 + nq, next1 = min_int(Tq, i0 + nq + ATT_BQ);
    prefetch_rows(q, qs, next0, next1, D);
    prefetch_rows(dout, qs, next0, next1, D);
    prefetch_rows(o, qs, next0, next1, D);
    for (int ii = 0; ii < nq; ii++)
        delta[ii] = vec_dot(dout + r0 + (size_t)ii * qs, o + r0 + (size_t)ii * qs, D);
}

static void head_backward_tiled(const att_kernels *kern, float *dq, float *dk, float *dv,
                                const float *dout, const float *q, const float *k,
                                const float *v, const float *o, const float *lse, int qs,
                                int ks, int Tq, int Tk, int D, float scale)
{
    float qt[ATT_MAX_D * ATT_BQ], dot[ATT_MAX_D * ATT_BQ];
    float st[ATT_BK * ATT_BQ], dpt[ATT_BK * ATT_BQ], delta[ATT_BQ];
    int off = Tk - Tq;
    for (int i0 = 0; i0 < Tq; i0 += ATT_BQ) {
        int nq = min_int(ATT_BQ, Tq - i0), qpos0 = off + i0;
        size_t r0 = (size_t)i0 * qs;
        pack_transposed(qt, q + r0, qs, nq, D, scale);
        pack_transposed(dot, dout + r0, qs, nq, D, 1.0f);
        backward_rows(q, dout, o, qs, i0, nq, Tq, D, delta);
        int kend = qpos0 + nq;
        for (int j0 = 0; j0 < kend; j0 += ATT_BK) {
            int nk = min_int(ATT_BK, kend - j0), rel = j0 - qpos0;
            size_t rk = (size_t)j0 * ks;
            if (j0 + nk - 1 <= qpos0) { /* every key visible to every query */
                kern->mm(st, ATT_BQ, k + rk, ks, 1, qt, ATT_BQ, nk, nq, D, 0);   /* S^T = K Qt */
                kern->mm(dpt, ATT_BQ, v + rk, ks, 1, dot, ATT_BQ, nk, nq, D, 0); /* dP^T = V dOt */
                kern->softmax_grad(st, dpt, ATT_BQ, nk, nq, lse + i0, delta, scale);
                kern->mm(dv + rk, ks, st, ATT_BQ, 1, dout + r0, qs, nk, D, nq, 1); /* dV += P^T dO */
                kern->mm(dk + rk, ks, dpt, ATT_BQ, 1, q + r0, qs, nk, D, nq, 1);   /* dK += dS^T Q */
                kern->mm(dq + r0, qs, dpt, 1, ATT_BQ, k + rk, ks, nq, D, nk, 1);   /* dQ += dS K */
            } else { /* the same products on the diagonal, by row blocks */
                scores_diag(kern, st, k + rk, ks, qt, nk, nq, D, rel);
                scores_diag(kern, dpt, v + rk, ks, dot, nk, nq, D, rel);
                mask_tile(st, dpt, nk, nq, j0, qpos0);
                kern->softmax_grad(st, dpt, ATT_BQ, nk, nq, lse + i0, delta, scale);
                keys_diag(kern, dv + rk, ks, st, dout + r0, qs, nk, nq, D, rel);
                keys_diag(kern, dk + rk, ks, dpt, q + r0, qs, nk, nq, D, rel);
                queries_diag(kern, dq + r0, qs, dpt, k + rk, ks, nq, nk, D, rel, 1);
            }
        }
    }
}

/* ---------------- the bf16 mode's tiled head kernels ---------------- */

/* The loops above with every tile product on pair words (attention_kernel.h,
 * attention_bf16.c): q, k, v, dout and the probability and score-gradient
 * tiles rounded to bf16 as each product needs them, paired along its depth;
 * the softmax passes, the running max and sum, lse and every accumulator in
 * fp32. A key tile's K and V are converted at each visit (no workspace: a
 * query tile's products are 2 x 64 x 32 x D multiply-adds against 2 x 64 x D
 * conversions). Where a product's depth starts or ends on an odd index, the
 * pair's other half is a term the causal mask makes zero (a hidden
 * probability or score gradient) or a padding zero, so no term is added that
 * the fp32 loops skip with a nonzero value. D even and at most
 * ATT_BF16_MAX_D (the stack buffers); att_head_bf16_ok says when. */
#define ATT_BF16_MAX_D 128

static int att_head_bf16_ok(int Tq, int D)
{
    return D % 2 == 0 && D <= ATT_BF16_MAX_D && Tq > ATT_ROWS_MAX_Q;
}

/* st [nk x nq] = K rows kr [nk x Dp words] by the query pairs qtp [Dp x
 * ATT_BQ words], the diagonal tile's key blocks skipping hidden columns. */
static void scores_bf16(float *st, const uint32_t *kr, const uint32_t *qtp, int nk, int nq, int Dp,
                        int mr, int diag, int rel)
{
    if (!diag) {
        att_bf16_mm(st, ATT_BQ, kr, Dp, 1, qtp, ATT_BQ, nk, nq, Dp, 0);
        return;
    }
    for (int jj = 0; jj < nk; jj += mr) {
        int r = min_int(mr, nk - jj);
        int c0 = (jj + rel > 0 ? jj + rel : 0) & ~7;
        att_bf16_mm(st + jj * ATT_BQ + c0, ATT_BQ, kr + (size_t)jj * Dp, Dp, 1, qtp + c0, ATT_BQ, r,
                    nq - c0, Dp, 0);
    }
}

/* C [nq x D] (+)= X [nq x nk] B [nk x D], X's key pairs xp [ceil(nk/2) x
 * ATT_BQ words], B's bp [ceil(nk/2) x D words]; on the diagonal each query
 * block stops at the pair of the last key it can see. */
static void queries_bf16(float *c, int cs, const uint32_t *xp, const uint32_t *bp, int nq, int nk, int D,
                         int mr, int diag, int rel, int accumulate)
{
    if (!diag) {
        att_bf16_mm(c, cs, xp, 1, ATT_BQ, bp, D, nq, D, (nk + 1) / 2, accumulate);
        return;
    }
    for (int ii = 0; ii < nq; ii += mr) {
        int r = min_int(mr, nq - ii);
        int kend = min_int(nk, ii + r - rel);
        if (kend > 0)
            att_bf16_mm(c + (size_t)ii * cs, cs, xp + ii, 1, ATT_BQ, bp, D, r, D, (kend + 1) / 2, accumulate);
    }
}

/* C [nk x D] += Xt [nk x nq] B [nq x D], Xt's rows paired along the queries
 * xr [nk x ATT_BQ / 2 words], B's query pairs bp [ceil(nq/2) x D words]; on
 * the diagonal each key block starts at the pair of the first query that can
 * see it. */
static void keys_bf16(float *c, int cs, const uint32_t *xr, const uint32_t *bp, int nk, int nq, int D,
                      int mr, int diag, int rel)
{
    const int w = ATT_BQ / 2, kp = (nq + 1) / 2;
    if (!diag) {
        att_bf16_mm(c, cs, xr, w, 1, bp, D, nk, D, kp, 1);
        return;
    }
    for (int jj = 0; jj < nk; jj += mr) {
        int r = min_int(mr, nk - jj);
        int p0 = (jj + rel > 0 ? jj + rel : 0) / 2;
        att_bf16_mm(c + (size_t)jj * cs, cs, xr + (size_t)jj * w + p0, w, 1, bp + (size_t)p0 * D, D, r, D,
                    kp - p0, 1);
    }
}

static void head_forward_tiled_bf16(const att_kernels *kern, float *o, float *lse, const float *q,
                                    const float *k, const float *v, int qs, int ks, int Tq, int Tk,
                                    int D, float scale)
{
    float st[ATT_BK * ATT_BQ];
    uint32_t qtp[ATT_BF16_MAX_D / 2 * ATT_BQ], kr[ATT_BK * ATT_BF16_MAX_D / 2];
    uint32_t vp[ATT_BK / 2 * ATT_BF16_MAX_D], stp[ATT_BK / 2 * ATT_BQ];
    float m[ATT_BQ], l[ATT_BQ];
    int off = Tk - Tq, Dp = D / 2;
    for (int i0 = 0; i0 < Tq; i0 += ATT_BQ) {
        int nq = min_int(ATT_BQ, Tq - i0), qpos0 = off + i0;
        float *ot = o + (size_t)i0 * qs;
        att_bf16_cols(qtp, ATT_BQ, q + (size_t)i0 * qs, qs, nq, D, scale);
        prefetch_rows(q, qs, i0 + nq, min_int(Tq, i0 + nq + ATT_BQ), D);
        for (int ii = 0; ii < nq; ii++) {
            m[ii] = -INFINITY;
            l[ii] = 0;
        }
        int kend = qpos0 + nq;
        for (int j0 = 0; j0 < kend; j0 += ATT_BK) {
            int nk = min_int(ATT_BK, kend - j0), diag = j0 + nk - 1 > qpos0, rel = j0 - qpos0;
            att_bf16_rows(kr, Dp, k + (size_t)j0 * ks, ks, nk, D);
            att_bf16_pairs(vp, D, v + (size_t)j0 * ks, ks, nk, D);
            scores_bf16(st, kr, qtp, nk, nq, Dp, kern->mr, diag, rel);
            if (diag)
                mask_tile(st, NULL, nk, nq, j0, qpos0);
            online_softmax(kern, st, nk, nq, m, l, ot, qs, D, j0 > 0);
            att_bf16_pairs(stp, ATT_BQ, st, ATT_BQ, nk, nq);
            queries_bf16(ot, qs, stp, vp, nq, nk, D, kern->mr, diag, rel, j0 > 0);
        }
        finish_rows(ot, qs, lse + i0, m, l, nq, D);
    }
}

static void head_backward_tiled_bf16(const att_kernels *kern, float *dq, float *dk, float *dv,
                                     const float *dout, const float *q, const float *k, const float *v,
                                     const float *o, const float *lse, int qs, int ks, int Tq, int Tk,
                                     int D, float scale)
{
    float st[ATT_BK * ATT_BQ], dpt[ATT_BK * ATT_BQ], delta[ATT_BQ];
    uint32_t qtp[ATT_BF16_MAX_D / 2 * ATT_BQ], dotp[ATT_BF16_MAX_D / 2 * ATT_BQ];
    uint32_t qp[ATT_BQ / 2 * ATT_BF16_MAX_D], dop[ATT_BQ / 2 * ATT_BF16_MAX_D];
    uint32_t kr[ATT_BK * ATT_BF16_MAX_D / 2], vr[ATT_BK * ATT_BF16_MAX_D / 2];
    uint32_t kp[ATT_BK / 2 * ATT_BF16_MAX_D];
    uint32_t sr[ATT_BK * ATT_BQ / 2], dsr[ATT_BK * ATT_BQ / 2], dsp[ATT_BK / 2 * ATT_BQ];
    int off = Tk - Tq, Dp = D / 2, mr = kern->mr;
    for (int i0 = 0; i0 < Tq; i0 += ATT_BQ) {
        int nq = min_int(ATT_BQ, Tq - i0), qpos0 = off + i0;
        size_t r0 = (size_t)i0 * qs;
        att_bf16_cols(qtp, ATT_BQ, q + r0, qs, nq, D, scale);
        att_bf16_cols(dotp, ATT_BQ, dout + r0, qs, nq, D, 1.0f);
        att_bf16_pairs(qp, D, q + r0, qs, nq, D);
        att_bf16_pairs(dop, D, dout + r0, qs, nq, D);
        backward_rows(q, dout, o, qs, i0, nq, Tq, D, delta);
        int kend = qpos0 + nq;
        for (int j0 = 0; j0 < kend; j0 += ATT_BK) {
            int nk = min_int(ATT_BK, kend - j0), rel = j0 - qpos0, diag = j0 + nk - 1 > qpos0;
            size_t rk = (size_t)j0 * ks;
            att_bf16_rows(kr, Dp, k + rk, ks, nk, D);
            att_bf16_rows(vr, Dp, v + rk, ks, nk, D);
            att_bf16_pairs(kp, D, k + rk, ks, nk, D);
            scores_bf16(st, kr, qtp, nk, nq, Dp, mr, diag, rel);    /* S^T = K Qt */
            scores_bf16(dpt, vr, dotp, nk, nq, Dp, mr, diag, rel);  /* dP^T = V dOt */
            if (diag)
                mask_tile(st, dpt, nk, nq, j0, qpos0);
            kern->softmax_grad(st, dpt, ATT_BQ, nk, nq, lse + i0, delta, scale);
            att_bf16_rows(sr, ATT_BQ / 2, st, ATT_BQ, nk, nq);
            att_bf16_rows(dsr, ATT_BQ / 2, dpt, ATT_BQ, nk, nq);
            att_bf16_pairs(dsp, ATT_BQ, dpt, ATT_BQ, nk, nq);
            keys_bf16(dv + rk, ks, sr, dop, nk, nq, D, mr, diag, rel);              /* dV += P^T dO */
            keys_bf16(dk + rk, ks, dsr, qp, nk, nq, D, mr, diag, rel);             /* dK += dS^T Q */
            queries_bf16(dq + r0, qs, dsp, kp, nq, nk, D, mr, diag, rel, 1);       /* dQ += dS K */
        }
    }
}

/* ---------------- row kernels (head dims above ATT_MAX_D) ---------------- */

static void head_forward_rows(float *o, float *lse, const float *q, const float *k,
                              const float *v, int qs, int ks, int Tq, int Tk, int D, float scale)
{
    int off = Tk - Tq;
    for (int i = 0; i < Tq; i++) {
        const float *qi = q + (size_t)i * qs;
        float *oi = o + (size_t)i * qs;
        float m = -INFINITY, l = 0;
        memset(oi, 0, sizeof(float) * (size_t)D);
        int kend = off + i + 1;
        for (int j0 = 0; j0 < kend; j0 += ATT_ROW_BK) {
            int nk = min_int(ATT_ROW_BK, kend - j0);
            float s[ATT_ROW_BK], mx = -INFINITY;
            for (int jj = 0; jj < nk; jj++) {
                s[jj] = scale * vec_dot(qi, k + (size_t)(j0 + jj) * ks, D);
                mx = s[jj] > mx ? s[jj] : mx;
            }
            float mnew = mx > m ? mx : m, corr = expf(m - mnew), sum = 0;
            for (int jj = 0; jj < nk; jj++) {
                s[jj] = expf(s[jj] - mnew);
                sum += s[jj];
            }
            if (corr != 1.0f)
                vec_scale(oi, corr, D);
            for (int jj = 0; jj < nk; jj++)
                vec_axpy(oi, s[jj], v + (size_t)(j0 + jj) * ks, D);
            l = l * corr + sum;
            m = mnew;
        }
        vec_scale(oi, 1.0f / l, D);
        lse[i] = m + logf(l);
    }
}

static void head_backward_rows(float *dq, float *dk, float *dv, const float *dout,
                               const float *q, const float *k, const float *v, const float *o,
                               const float *lse, int qs, int ks, int Tq, int Tk, int D,
                               float scale)
{
    int off = Tk - Tq;
    for (int i = 0; i < Tq; i++) {
        size_t ri = (size_t)i * qs;
        const float *qi = q + ri, *doi = dout + ri;
        float delta = vec_dot(doi, o + ri, D);
        for (int j = 0; j <= off + i; j++) {
            size_t rj = (size_t)j * ks;
            float p = expf(scale * vec_dot(qi, k + rj, D) - lse[i]);
            float ds = p * (vec_dot(doi, v + rj, D) - delta) * scale;
            vec_axpy(dv + rj, p, doi, D);
            vec_axpy(dq + ri, ds, k + rj, D);
            vec_axpy(dk + rj, ds, qi, D);
        }
    }
}

/* ---------------- public entry points ---------------- */

static void head_forward_with(const att_kernels *kern, float *o, float *lse, const float *q,
                              const float *k, const float *v, int qs, int ks, int Tq, int Tk,
                              int D, float scale)
{
    if (D <= ATT_MAX_D && Tq > ATT_ROWS_MAX_Q)
        head_forward_tiled(kern, o, lse, q, k, v, qs, ks, Tq, Tk, D, scale);
    else
        head_forward_rows(o, lse, q, k, v, qs, ks, Tq, Tk, D, scale);
}

static void head_backward_with(const att_kernels *kern, float *dq, float *dk, float *dv,
                               const float *dout, const float *q, const float *k,
                               const float *v, const float *o, const float *lse, int qs,
                               int ks, int Tq, int Tk, int D, float scale)
{
    if (D <= ATT_MAX_D)
        head_backward_tiled(kern, dq, dk, dv, dout, q, k, v, o, lse, qs, ks, Tq, Tk, D, scale);
    else
        head_backward_rows(dq, dk, dv, dout, q, k, v, o, lse, qs, ks, Tq, Tk, D, scale);
}

void attention_head_forward(float *o, float *lse, const float *q, const float *k,
                            const float *v, int q_stride, int kv_stride,
                            int Tq, int Tk, int D, float scale)
{
    head_forward_with(att_kernels_select(), o, lse, q, k, v, q_stride, kv_stride, Tq, Tk, D,
                      scale);
}

void attention_head_backward(float *dq, float *dk, float *dv, const float *dout,
                             const float *q, const float *k, const float *v,
                             const float *o, const float *lse, int q_stride,
                             int kv_stride, int Tq, int Tk, int D, float scale)
{
    head_backward_with(att_kernels_select(), dq, dk, dv, dout, q, k, v, o, lse, q_stride,
                       kv_stride, Tq, Tk, D, scale);
}

/* One call's tensors and shapes, shared by its (batch, head) units. */
typedef struct {
    const att_kernels *kern;
    int bf16;          /* the tiled heads' products on pair words (att_head_bf16_ok) */
    float *o, *lse, *dq, *dk, *dv;
    const float *q, *k, *v, *dout, *o_in, *lse_in;  /* o_in, lse_in: the forward's, for the backward */
    int T, H, Hkv, D, group;
    size_t qs, ks;
    float scale;
} att_call;

static att_call att_call_init(int T, int H, int Hkv, int D)
{
    return (att_call){.kern = att_kernels_select(), .T = T, .H = H, .Hkv = Hkv, .D = D,
                      .group = H / Hkv, .qs = (size_t)H * D, .ks = (size_t)Hkv * D,
                      .scale = 1.0f / sqrtf((float)D)};
}

/* Unit u = b * H + h of the forward: query head h of sequence b. */
static void forward_unit(const att_call *a, int u)
{
    int b = u / a->H, h = u % a->H, T = a->T;
    size_t qoff = (size_t)b * T * a->qs + (size_t)h * a->D;
    size_t koff = (size_t)b * T * a->ks + (size_t)(h / a->group) * a->D;
    if (a->bf16)
        head_forward_tiled_bf16(a->kern, a->o + qoff, a->lse + ((size_t)b * a->H + h) * T, a->q + qoff,
                                a->k + koff, a->v + koff, (int)a->qs, (int)a->ks, T, T, a->D, a->scale);
    else
        head_forward_with(a->kern, a->o + qoff, a->lse + ((size_t)b * a->H + h) * T, a->q + qoff,
                          a->k + koff, a->v + koff, (int)a->qs, (int)a->ks, T, T, a->D, a->scale);
}

/* Zeroes T rows of D values at the given stride. */
static void zero_rows(float *x, int T, size_t stride, int D)
{
    for (int t = 0; t < T; t++)
        memset(x + (size_t)t * stride, 0, sizeof(float) * (size_t)D);
}

/* Unit u = b * Hkv + g of the backward: key/value head g of sequence b and
 * the query heads of its group (they add into the same dk, dv). */
static void backward_unit(const att_call *a, int u)
{
    int b = u / a->Hkv, g = u % a->Hkv, T = a->T;
    size_t koff = (size_t)b * T * a->ks + (size_t)g * a->D;
    zero_rows(a->dk + koff, T, a->ks, a->D);
    zero_rows(a->dv + koff, T, a->ks, a->D);
    for (int h = g * a->group; h < (g + 1) * a->group; h++) {
        size_t qoff = (size_t)b * T * a->qs + (size_t)h * a->D;
        zero_rows(a->dq + qoff, T, a->qs, a->D);
        (a->bf16 ? head_backward_tiled_bf16 : head_backward_with)(
            a->kern, a->dq + qoff, a->dk + koff, a->dv + koff, a->dout + qoff, a->q + qoff, a->k + koff,
            a->v + koff, a->o_in + qoff, a->lse_in + ((size_t)b * a->H + h) * T, (int)a->qs, (int)a->ks, T, T,
            a->D, a->scale);
    }
}

/* Units [0, units) of one call. Dynamic: each unit writes only its own rows
 * and is computed the same way on any thread, so results stay
 * deterministic, and a thread slowed by the host (shared vCPUs) does not
 * hold up a fixed half. A team only when worth it (core/omp_team.h). */
static void run_units(const att_call *a, int units, void (*unit)(const att_call *, int))
{
    if (!omp_team_worth((size_t)units, 1)) {
        for (int u = 0; u < units; u++)
            unit(a, u);
        return;
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int u = 0; u < units; u++)
        unit(a, u);
}

/* The bf16 loops where asked for and possible: this CPU and path have
 * AVX-512 BF16 and the heads suit them. */
static int call_bf16(int bf16, int T, int D)
{
    return bf16 && att_head_bf16_ok(T, D) && kernel_path_bf16_now();
}

static void forward_call(float *o, float *lse, const float *q, const float *k, const float *v, int B, int T,
                         int H, int Hkv, int D, int bf16)
{
    att_call a = att_call_init(T, H, Hkv, D);
    a.o = o, a.lse = lse, a.q = q, a.k = k, a.v = v;
    a.bf16 = call_bf16(bf16, T, D);
    run_units(&a, B * H, forward_unit);
}

/* A backward's call: its B * Hkv units run by backward_unit. */
static att_call backward_att_call(float *dq, float *dk, float *dv, const float *dout, const float *q,
                                  const float *k, const float *v, const float *o, const float *lse, int T, int H,
                                  int Hkv, int D, int bf16)
{
    att_call a = att_call_init(T, H, Hkv, D);
    a.dq = dq, a.dk = dk, a.dv = dv, a.dout = dout, a.q = q, a.k = k, a.v = v, a.o_in = o;
    a.lse_in = lse;
    a.bf16 = call_bf16(bf16, T, D);
    return a;
}

static void backward_call(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                          const float *v, const float *o, const float *lse, int B, int T, int H, int Hkv,
                          int D, int bf16)
{
    att_call a = backward_att_call(dq, dk, dv, dout, q, k, v, o, lse, T, H, Hkv, D, bf16);
    run_units(&a, B * Hkv, backward_unit);
}

void attention_backward_part(float *dq, float *dk, float *dv, const float *dout, const float *q,
                             const float *k, const float *v, const float *o, const float *lse, int B,
                             int T, int H, int Hkv, int D, int bf16, int u0, int u1)
{
    att_call a = backward_att_call(dq, dk, dv, dout, q, k, v, o, lse, T, H, Hkv, D, bf16);
    for (int u = u0 < 0 ? 0 : u0; u < u1 && u < B * Hkv; u++)
        backward_unit(&a, u);
}

void attention_forward(float *o, float *lse, const float *q, const float *k,
                       const float *v, int B, int T, int H, int Hkv, int D)
{
    forward_call(o, lse, q, k, v, B, T, H, Hkv, D, 0);
}

void attention_backward(float *dq, float *dk, float *dv, const float *dout,
                        const float *q, const float *k, const float *v,
                        const float *o, const float *lse, int B, int T, int H,
                        int Hkv, int D)
{
    backward_call(dq, dk, dv, dout, q, k, v, o, lse, B, T, H, Hkv, D, 0);
}

int attention_bf16_runs(int T, int D)
{
    return call_bf16(1, T, D);
}

void attention_forward_bf16(float *o, float *lse, const float *q, const float *k, const float *v, int B,
                            int T, int H, int Hkv, int D)
{
    forward_call(o, lse, q, k, v, B, T, H, Hkv, D, 1);
}

void attention_backward_bf16(float *dq, float *dk, float *dv, const float *dout, const float *q,
                             const float *k, const float *v, const float *o, const float *lse, int B,
                             int T, int H, int Hkv, int D)
{
    backward_call(dq, dk, dv, dout, q, k, v, o, lse, B, T, H, Hkv, D, 1);
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
