/* gpu_ops.c - launch shapes and argument lists of the GPU's kernels (see
 * gpu_ops.h). The constants repeat the .cu files' (ATT_*, RMS_DW_ROWS,
 * CE_THREADS, CE_REG_*, SUM_CHUNK, MUON_CHUNK, NS_TILE); the emulator tests
 * catch a mismatch. */
#include "kernels/cuda/gpu_ops.h"

#include <string.h>

#define ATT_BQ 64
#define ATT_BK 32
#define ATT_BKV 64
#define ATT_BQB 16
#define MMA_ROWS 64
#define RMS_DW_ROWS 32
#define RMS_FUSED_SMEM GPU_SMEM_DEFAULT /* rmsnorm_bwd_dw's shared memory at most: no opt-in needed */
#define CE_THREADS 256
#define CE_REG_PER 32
#define CE_REG_MAX_THREADS 256
#define SUM_CHUNK 16384
#define MUON_CHUNK 4096
#define NS_TILE 32
#define EW_THREADS 256 /* elementwise kernels' block */

static unsigned cdiv(size_t a, size_t b) { return (unsigned)((a + b - 1) / b); }

/* blocks for a grid-stride elementwise kernel over n values */
static unsigned ew_blocks(const gpu *g, size_t n)
{
    size_t b = (n + EW_THREADS - 1) / EW_THREADS, cap = (size_t)gpu_get_info(g)->sm_count * 16;
    if (b > cap) b = cap;
    return b ? (unsigned)b : 1;
}

static gpu_kernel pick(gpu_dtype t, gpu_kernel f32, gpu_kernel bf16) { return t == GPU_BF16 ? bf16 : f32; }

void cuda_embedding_forward(gpu *g, gpu_ptr out, gpu_ptr tokens, gpu_ptr emb, int N, int C)
{
    void *a[] = {&out, &tokens, &emb, &N, &C};
    gpu_launch(g, GK_embedding_fwd, (unsigned)N, 1, 1, 128, 0, a);
}

int cuda_embedding_segments(const int32_t *tokens, int N, int V, int32_t *order, int32_t *seg,
                            int32_t *seg_token, int32_t *count)
{
    memset(count, 0, sizeof(int32_t) * (size_t)V);
    for (int n = 0; n < N; n++)
        count[tokens[n]]++;
    int n_seg = 0, at = 0;
    for (int v = 0; v < V; v++) {
        if (!count[v])
            continue;
        seg[n_seg] = at;
        seg_token[n_seg] = v;
        int c = count[v];
        count[v] = at; /* now the next free slot of token v */
        at += c;
        n_seg++;
    }
    seg[n_seg] = at;
    for (int n = 0; n < N; n++)
        order[count[tokens[n]]++] = n;
    return n_seg;
}

void cuda_embedding_backward(gpu *g, gpu_ptr demb, gpu_ptr order, gpu_ptr seg, gpu_ptr seg_token, int n_seg,
                             gpu_ptr dout, int C)
{
    if (n_seg <= 0)
        return;
    void *a[] = {&demb, &order, &seg, &seg_token, &dout, &C};
    gpu_launch(g, GK_embedding_bwd, (unsigned)n_seg, cdiv((size_t)C, 128), 1, 128, 0, a);
}

void cuda_rmsnorm_forward(gpu *g, gpu_dtype tin, gpu_dtype tout, gpu_ptr y, gpu_ptr rstd, gpu_ptr copy, gpu_ptr x,
                          gpu_ptr w, int N, int C, float eps)
{
    gpu_kernel k = tin == GPU_BF16 ? GK_rmsnorm_fwd_bf16_bf16
                 : tout == GPU_BF16 ? GK_rmsnorm_fwd_f32_bf16 : GK_rmsnorm_fwd_f32_f32;
    if (tin == GPU_BF16 && tout != GPU_BF16) {
        gpu_set_error(g, "gpu: rmsnorm from bf16 to fp32 is not built");
        return;
    }
    void *a[] = {&y, &rstd, &copy, &x, &w, &N, &C, &eps};
    gpu_launch(g, k, cdiv((size_t)N, 4), 1, 1, 128, 0, a);
}

size_t cuda_rmsnorm_partial_floats(int N, int C) { return (size_t)cdiv((size_t)N, RMS_DW_ROWS) * (size_t)C; }

void cuda_rmsnorm_backward(gpu *g, gpu_dtype t, gpu_ptr dx, gpu_ptr dw, gpu_ptr dy, gpu_ptr x, gpu_ptr w,
                           gpu_ptr rstd, int N, int C, int accumulate, gpu_ptr partial, gpu_ptr dx_low)
{
    int runs = (int)cdiv((size_t)N, RMS_DW_ROWS);
    if ((size_t)C * 16 <= RMS_FUSED_SMEM) { /* dx and the partial sums in one pass: 4 warps' rows of C floats */
        void *a[] = {&dx, &dx_low, &partial, &dy, &x, &w, &rstd, &N, &C, &accumulate};
        gpu_launch(g, pick(t, GK_rmsnorm_bwd_dw_f32, GK_rmsnorm_bwd_dw_bf16), (unsigned)runs, 1, 1, 128,
                   (unsigned)C * 16, a);
    } else {
        void *a[] = {&dx, &dy, &x, &w, &rstd, &N, &C, &accumulate};
        gpu_launch(g, pick(t, GK_rmsnorm_bwd_f32, GK_rmsnorm_bwd_bf16), cdiv((size_t)N, 4), 1, 1, 128, 0, a);
        void *b[] = {&partial, &dy, &x, &rstd, &N, &C};
        gpu_launch(g, pick(t, GK_rmsnorm_dw_partial_f32, GK_rmsnorm_dw_partial_bf16), cdiv((size_t)C, 128),
                   (unsigned)runs, 1, 128, 0, b);
        if (dx_low)
            cuda_convert_bf16(g, dx_low, dx, (size_t)N * C);
    }
    void *c[] = {&dw, &partial, &runs, &C};
    gpu_launch(g, GK_rmsnorm_dw_reduce, cdiv((size_t)C, 32), 1, 1, 1024, 0, c);
}

void cuda_rope(gpu *g, gpu_dtype t, gpu_ptr x, int B, int T, int H, int D, int pos0, gpu_ptr cos_tab,
               gpu_ptr sin_tab, int backward)
{
    float dir = backward ? -1.0f : 1.0f;
    /* rope.cu: a block per position (T x B), a thread per two pairs of its heads (per pair for odd D/2) */
    unsigned units = (unsigned)H * (unsigned)((D / 2) % 2 ? D / 2 : D / 4);
    unsigned threads = (units + 31) / 32 * 32;
    if (threads > EW_THREADS)
        threads = EW_THREADS;
    size_t seq_bytes = (size_t)T * H * D * (t == GPU_BF16 ? 2 : 4);
    for (int b0 = 0; b0 < B && T > 0; b0 += 65535) { /* a grid's y extent is at most 65,535 */
        int nb = B - b0 < 65535 ? B - b0 : 65535;
        gpu_ptr xb = x + (gpu_ptr)b0 * seq_bytes;
        void *a[] = {&xb, &T, &H, &D, &pos0, &cos_tab, &sin_tab, &dir};
        gpu_launch(g, pick(t, GK_rope_f32, GK_rope_bf16), (unsigned)T, (unsigned)nb, 1, threads, 0, a);
    }
}

void cuda_relu2_forward(gpu *g, gpu_dtype t, gpu_ptr a_out, gpu_ptr h, size_t n)
{
    void *a[] = {&a_out, &h, &n};
    gpu_launch(g, pick(t, GK_relu2_fwd_f32, GK_relu2_fwd_bf16), ew_blocks(g, n), 1, 1, EW_THREADS, 0, a);
}

void cuda_relu2_backward(gpu *g, gpu_dtype t, gpu_ptr dh, gpu_ptr da, gpu_ptr h, size_t n)
{
    void *a[] = {&dh, &da, &h, &n};
    gpu_launch(g, pick(t, GK_relu2_bwd_f32, GK_relu2_bwd_bf16), ew_blocks(g, n), 1, 1, EW_THREADS, 0, a);
}

void cuda_swiglu_forward(gpu *g, gpu_dtype t, gpu_ptr a_out, gpu_ptr gate, gpu_ptr up, size_t n)
{
    void *a[] = {&a_out, &gate, &up, &n};
    gpu_launch(g, pick(t, GK_swiglu_fwd_f32, GK_swiglu_fwd_bf16), ew_blocks(g, n), 1, 1, EW_THREADS, 0, a);
}

void cuda_swiglu_backward(gpu *g, gpu_dtype t, gpu_ptr dg, gpu_ptr du, gpu_ptr da, gpu_ptr gate, gpu_ptr up,
                          size_t n)
{
    void *a[] = {&dg, &du, &da, &gate, &up, &n};
    gpu_launch(g, pick(t, GK_swiglu_bwd_f32, GK_swiglu_bwd_bf16), ew_blocks(g, n), 1, 1, EW_THREADS, 0, a);
}

/* ---- attention ---- */

static int att_dmax(int D) { return D <= 32 ? 32 : D <= 64 ? 64 : D <= 128 ? 128 : 0; }

/* fp32 mode's plain kernel of a family for dmax: laid out in
 * gpu_kernels.def as d32, d64, d128 */
static gpu_kernel att_kernel(gpu_kernel first, int dmax)
{
    return (gpu_kernel)(first + (dmax == 32 ? 0 : dmax == 64 ? 1 : 2));
}

/* bf16 mode's tensor-core kernels pad the head dim to 64 or 128; their
 * dynamic shared memory (attention_mma.cu): two buffers of two tiles */
static int mma_dp(int D) { return D <= 64 ? 64 : 128; }
static int mma_tile(int dp) { return dp == 64 ? 64 : 32; } /* the backward's rows per tile */
static int mma_fwd_smem(int dp) { return 4 * 64 * (dp + 8) * 2; }
static int mma_dkdv_smem(int dp) { return 4 * mma_tile(dp) * (dp + 8) * 2 + 4 * mma_tile(dp) * 4; }
static int mma_dq_smem(int dp) { return 4 * mma_tile(dp) * (dp + 8) * 2; }

static int dkdv_smem(int dm) { return ((2 * ATT_BKV + 2 * ATT_BQB) * (dm + 1) + 2 * ATT_BQB) * 4; }
static int dq_smem(int dm) { return (2 * ATT_BQ + 2 * ATT_BK) * (dm + 1) * 4; }

int cuda_attention_prepare(gpu *g, int D, tempo_error *err)
{
    int dm = att_dmax(D);
    if (!dm)
        return tempo_fail(err, "gpu: attention head dim %d: the GPU kernels take at most 128", D);
    int dp = mma_dp(D), d64 = dp == 64;
    return gpu_kernel_smem(g, att_kernel(GK_attn_dkdv_f32_d32, dm), dkdv_smem(dm), err) ||
                   gpu_kernel_smem(g, att_kernel(GK_attn_dq_f32_d32, dm), dq_smem(dm), err) ||
                   gpu_kernel_smem(g, d64 ? GK_attn_fwd_mma_d64 : GK_attn_fwd_mma_d128, mma_fwd_smem(dp), err) ||
                   gpu_kernel_smem(g, d64 ? GK_attn_dkdv_mma_d64 : GK_attn_dkdv_mma_d128, mma_dkdv_smem(dp), err) ||
                   gpu_kernel_smem(g, d64 ? GK_attn_dq_mma_d64 : GK_attn_dq_mma_d128, mma_dq_smem(dp), err)
               ? -1
               : 0;
}

void cuda_attention_forward(gpu *g, gpu_dtype t, gpu_ptr o, gpu_ptr lse, gpu_ptr q, gpu_ptr k, gpu_ptr v, int B,
                            int T, int H, int Hkv, int D)
{
    int dm = att_dmax(D);
    if (!dm) {
        gpu_set_error(g, "gpu: attention head dim %d above 128", D);
        return;
    }
    void *a[] = {&o, &lse, &q, &k, &v, &B, &T, &H, &Hkv, &D};
    if (t == GPU_BF16)
        gpu_launch(g, mma_dp(D) == 64 ? GK_attn_fwd_mma_d64 : GK_attn_fwd_mma_d128, cdiv((size_t)T, MMA_ROWS),
                   (unsigned)(B * H), 1, 128, (unsigned)mma_fwd_smem(mma_dp(D)), a);
    else
        gpu_launch(g, att_kernel(GK_attn_fwd_f32_d32, dm), cdiv((size_t)T, ATT_BQ), (unsigned)(B * H), 1, ATT_BQ, 0,
                   a);
}

void cuda_attention_decode(gpu *g, gpu_ptr o, gpu_ptr q, gpu_ptr k, gpu_ptr v, gpu_ptr kv_off, gpu_ptr pos, int N,
                           int H, int Hkv, int D, int kv_stride)
{
    if (D < 1 || D > CUDA_DECODE_MAX_D || Hkv < 1 || H % Hkv) {
        gpu_set_error(g, "gpu: decode attention with head dim %d, %d heads over %d kv heads", D, H, Hkv);
        return;
    }
    if (N < 1)
        return;
    void *a[] = {&o, &q, &k, &v, &kv_off, &pos, &H, &Hkv, &D, &kv_stride};
    gpu_launch(g, GK_attn_decode_f32, (unsigned)N, (unsigned)H, 1, 128, 0, a);
}

void cuda_attention_backward(gpu *g, gpu_dtype t, gpu_ptr dq, gpu_ptr dk, gpu_ptr dv, gpu_ptr dout, gpu_ptr q,
                             gpu_ptr k, gpu_ptr v, gpu_ptr o, gpu_ptr lse, int B, int T, int H, int Hkv, int D,
                             gpu_ptr delta)
{
    int dm = att_dmax(D);
    if (!dm) {
        gpu_set_error(g, "gpu: attention head dim %d above 128", D);
        return;
    }
    /* delta: 16-byte pieces, L lanes a row, where a row is whole pieces that a warp's rows divide
     * (attention.cu: attn_delta_vec; the row starts stay 16-byte aligned), else a warp a row */
    int per = t == GPU_BF16 ? 8 : 4, L = D % per ? 0 : D / per;
    if (L > 0 && L <= 32 && 32 % L == 0 && dout % 16 == 0 && o % 16 == 0) {
        void *a[] = {&delta, &dout, &o, &B, &T, &H, &D, &L};
        gpu_launch(g, pick(t, GK_attn_delta_vec_f32, GK_attn_delta_vec_bf16),
                   cdiv((size_t)B * T * H, (size_t)4 * (32 / L)), 1, 1, 128, 0, a);
    } else {
        void *a[] = {&delta, &dout, &o, &B, &T, &H, &D};
        gpu_launch(g, pick(t, GK_attn_delta_f32, GK_attn_delta_bf16), cdiv((size_t)B * T * H, 4), 1, 1, 128, 0, a);
    }
    void *b[] = {&dk, &dv, &dout, &q, &k, &v, &lse, &delta, &B, &T, &H, &Hkv, &D};
    void *c[] = {&dq, &dout, &q, &k, &v, &lse, &delta, &B, &T, &H, &Hkv, &D};
    if (t == GPU_BF16) {
        int dp = mma_dp(D), d64 = dp == 64;
        gpu_launch(g, d64 ? GK_attn_dkdv_mma_d64 : GK_attn_dkdv_mma_d128, cdiv((size_t)T, MMA_ROWS),
                   (unsigned)(B * Hkv), 1, 128, (unsigned)mma_dkdv_smem(dp), b);
        gpu_launch(g, d64 ? GK_attn_dq_mma_d64 : GK_attn_dq_mma_d128, cdiv((size_t)T, MMA_ROWS), (unsigned)(B * H), 1,
                   128, (unsigned)mma_dq_smem(dp), c);
        return;
    }
    gpu_launch(g, att_kernel(GK_attn_dkdv_f32_d32, dm), cdiv((size_t)T, ATT_BKV), (unsigned)(B * Hkv), 1, ATT_BKV,
               (unsigned)dkdv_smem(dm), b);
    gpu_launch(g, att_kernel(GK_attn_dq_f32_d32, dm), cdiv((size_t)T, ATT_BQ), (unsigned)(B * H), 1, ATT_BQ,
               (unsigned)dq_smem(dm), c);
}

/* ---- head ---- */

void cuda_cross_entropy_rows(gpu *g, gpu_dtype t, gpu_ptr logits, gpu_ptr targets, gpu_ptr losses,
                             gpu_ptr top_logprob, gpu_ptr top_id, gpu_ptr log_norm, float beta, gpu_ptr dz,
                             gpu_ptr mix_b, float mix_a, int R, int V, float softcap, float grad_scale)
{
    if (R <= 0)
        return;
    void *a[] = {&logits, &targets, &losses, &top_logprob, &top_id, &log_norm, &beta,
                 &dz,     &mix_b,   &mix_a,  &V,           &softcap, &grad_scale};
    if (V <= CE_REG_PER * CE_REG_MAX_THREADS) { /* the row in registers: one read */
        unsigned threads = cdiv(cdiv((size_t)V, CE_REG_PER), 32) * 32;
        gpu_launch(g, pick(t, GK_ce_rows_reg_f32, GK_ce_rows_reg_bf16), (unsigned)R, 1, 1, threads, 0, a);
        return;
    }
    gpu_launch(g, pick(t, GK_ce_rows_f32, GK_ce_rows_bf16), (unsigned)R, 1, 1, CE_THREADS, 0, a);
}

/* ---- optimizer ---- */

void cuda_adamw_tensors(gpu *g, gpu_ptr p, gpu_ptr grad, gpu_ptr m, gpu_ptr v, gpu_ptr offs, gpu_ptr numel,
                        gpu_ptr group, int n, size_t max_numel, const optim_adamw_coeffs *c, const float step[4],
                        const float decay[4])
{
    if (n <= 0)
        return;
    float b1 = c->beta1, b2 = c->beta2, eps = c->eps, ib = c->inv_bc2, gs = c->gscale;
    float s0 = step[0], s1 = step[1], s2 = step[2], s3 = step[3], d0 = decay[0], d1 = decay[1], d2 = decay[2],
          d3 = decay[3];
    void *a[] = {&p,  &grad, &m,  &v,  &offs, &numel, &group, &b1, &b2, &eps, &ib,
                 &gs, &s0,   &s1, &s2, &s3,   &d0,    &d1,    &d2, &d3};
    /* the largest tensor's blocks, about 8 values a thread (the others' extra blocks end at once) */
    unsigned bx = cdiv(max_numel ? max_numel : 1, (size_t)EW_THREADS * 8);
    unsigned cap = (unsigned)gpu_get_info(g)->sm_count * 8;
    gpu_launch(g, GK_adamw_tensors, bx < cap ? bx : cap, (unsigned)n, 1, EW_THREADS, 0, a);
}

/* optim.cu's Muon over a batch: grid (chunks of MUON_CHUNK, count) */
size_t cuda_muon_partials(size_t n, int count) { return (n ? (n + MUON_CHUNK - 1) / MUON_CHUNK : 1) * (size_t)count; }

void cuda_muon_momentum_sumsq(gpu *g, gpu_ptr sumsq, gpu_ptr partial, gpu_ptr buf, gpu_ptr upd, gpu_ptr grad,
                              gpu_ptr offs, int count, size_t n, float mu, float gscale)
{
    if (count <= 0)
        return;
    int chunks = (int)cuda_muon_partials(n, 1);
    unsigned un = (unsigned)n;
    void *a[] = {&partial, &buf, &upd, &grad, &offs, &un, &mu, &gscale};
    gpu_launch(g, GK_muon_momentum_sumsq, (unsigned)chunks, (unsigned)count, 1, 256, 0, a);
    void *b[] = {&sumsq, &partial, &chunks};
    gpu_launch(g, GK_ns_sumsq_finish, (unsigned)count, 1, 1, 32, 0, b);
}

/* the flat kernels' grid: (blocks over one matrix, count) */
static unsigned ns_blocks(gpu *g, size_t rc, int count)
{
    unsigned b = ew_blocks(g, rc);
    unsigned cap = (unsigned)gpu_get_info(g)->sm_count * 16 / (unsigned)(count > 0 ? count : 1);
    return b < cap ? b : (cap ? cap : 1);
}

void cuda_ns_gather(gpu *g, gpu_dtype t, gpu_ptr X, gpu_ptr base, gpu_ptr offs, int count, int rows, int cols,
                    gpu_ptr sumsq)
{
    if (count <= 0)
        return;
    if (rows > cols) {
        void *a[] = {&X, &base, &offs, &rows, &cols, &sumsq};
        gpu_launch(g, pick(t, GK_ns_gather_t_f32, GK_ns_gather_t_bf16), (unsigned)(cols + NS_TILE - 1) / NS_TILE,
                   (unsigned)(rows + NS_TILE - 1) / NS_TILE, (unsigned)count, 256, 0, a);
    } else {
        unsigned rc = (unsigned)rows * (unsigned)cols;
        void *a[] = {&X, &base, &offs, &rc, &sumsq};
        gpu_launch(g, pick(t, GK_ns_gather_f32, GK_ns_gather_bf16), ns_blocks(g, rc, count), (unsigned)count, 1,
                   EW_THREADS, 0, a);
    }
}

void cuda_muon_apply(gpu *g, gpu_dtype t, gpu_ptr p, gpu_ptr upd, gpu_ptr X, gpu_ptr offs, int count, int rows,
                     int cols, float step, float decay)
{
    if (count <= 0)
        return;
    if (rows > cols) {
        void *a[] = {&p, &upd, &X, &offs, &rows, &cols, &step, &decay};
        gpu_launch(g, pick(t, GK_muon_apply_t_f32, GK_muon_apply_t_bf16), (unsigned)(cols + NS_TILE - 1) / NS_TILE,
                   (unsigned)(rows + NS_TILE - 1) / NS_TILE, (unsigned)count, 256, 0, a);
    } else {
        unsigned rc = (unsigned)rows * (unsigned)cols;
        void *a[] = {&p, &upd, &X, &offs, &rc, &step, &decay};
        gpu_launch(g, pick(t, GK_muon_apply_f32, GK_muon_apply_bf16), ns_blocks(g, rc, count), (unsigned)count, 1,
                   EW_THREADS, 0, a);
    }
}

size_t cuda_sum_partials(size_t n) { return n ? (n + SUM_CHUNK - 1) / SUM_CHUNK : 1; }

void cuda_sum(gpu *g, gpu_ptr out, gpu_ptr partial, gpu_ptr x, size_t n, int square)
{
    int np = (int)cuda_sum_partials(n);
    if (n) {
        void *a[] = {&partial, &x, &n, &square};
        gpu_launch(g, GK_sum_partial, (unsigned)np, 1, 1, 256, 0, a);
    } else {
        gpu_memset_async(g, partial, 0, sizeof(double));
    }
    void *b[] = {&out, &partial, &np};
    gpu_launch(g, GK_sum_finish, 1, 1, 1, 32, 0, b);
}

void cuda_scale(gpu *g, gpu_ptr x, size_t n, float s)
{
    void *a[] = {&x, &n, &s};
    gpu_launch(g, GK_scale_f32, ew_blocks(g, n), 1, 1, EW_THREADS, 0, a);
}

void cuda_sgd(gpu *g, gpu_ptr p, gpu_ptr grad, size_t n, float r)
{
    void *a[] = {&p, &grad, &n, &r};
    gpu_launch(g, GK_sgd_f32, ew_blocks(g, n), 1, 1, EW_THREADS, 0, a);
}

void cuda_convert_bf16(gpu *g, gpu_ptr dst, gpu_ptr src, size_t n)
{
    void *a[] = {&dst, &src, &n};
    gpu_launch(g, GK_convert_f32_bf16, ew_blocks(g, n / 8 + 1), 1, 1, EW_THREADS, 0, a); /* 8 values a thread */
}
