/* model_cuda.c - the model's forward and backward on a GPU (see
 * model_cuda.h), step for step the CPU's (model_pass.c, block.c): the same
 * ops in the same order, each a kernel of kernels/cuda or a product on
 * cuBLASLt. One device allocation holds every activation (carved like the
 * CPU model's arena); the head's logits are computed in chunks of rows, its
 * gradient (dz, [N, V]) kept from the training forward for the backward. */
#include "model/model_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/rope.h"
#include "kernels/cuda/gpu_gemm.h"
#include "kernels/cuda/gpu_ops.h"

#define NONE ((size_t)-1)
#define HEAD_LOGIT_BYTES ((size_t)256 << 20) /* the logits chunk's fp32 scratch, at most */

/* one layer's tensors: offsets (floats) into the parameter buffer, NONE when absent */
typedef struct {
    size_t attn_norm, wq, wk, wv, wo, q_norm, k_norm, mlp_norm, w_up, w_gate, w_down;
} layer_offsets;

/* one layer's saved activations (model_layer_acts' fields, on the GPU) */
typedef struct {
    gpu_ptr xn1, rstd1, q_raw, k_raw, q_rstd, k_rstd, q, k, v, att, lse, xn2, rstd2, up, gate, act;
} layer_acts;

struct model_cuda {
    gpu *g;
    model_config cfg;
    int max_batch;
    model_cuda_precision prec;
    gpu_dtype act;              /* storage type of the GEMMs' activations */
    int C, H, Hkv, D, HD, KD, F, V, L;
    model_tensor *tensors;
    int n_tensors;
    size_t n_params;
    layer_offsets *lo;
    size_t tok_emb, final_norm, head;  /* head == tok_emb when tied */
    gpu_ptr params, grads, wlow;       /* wlow: the bf16 weight copy (0 in fp32 mode) */
    gpu_ptr saved;                     /* model_cuda_params_save's copy (allocated on first use) */
    gpu_ptr arena;
    size_t arena_bytes;
    gpu_ptr rope_cos, rope_sin;
    gpu_ptr res;                       /* [2L + 1][N_max, C] fp32 */
    layer_acts *acts;
    gpu_ptr d_xn, d_att, dq, dk, dv, dq_raw, dk_raw, d_act, d_up, delta, partial, dres, dres_low;
    gpu_ptr xf, rstd_f, dxf, losses, top_logprob, top_id, log_norm, logits, dz;
    int chunk_rows;
    gpu_ptr tokens, targets, order, seg, seg_token, mix_b;
    gpu_ptr sum_partial, sums;         /* doubles */
    /* pinned host staging of a batch */
    int32_t *h_tokens, *h_targets, *h_order, *h_seg, *h_seg_token, *h_count;
    float *h_mix;
    /* state */
    int training, B, T, has_targets, has_mix, n_seg, dz_ready, batch_set;
    float beta, mix_a;
};

/* ---- layout and allocation ---- */

static size_t find(const model_cuda *m, const char *fmt, int layer)
{
    char name[64];
    snprintf(name, sizeof name, fmt, layer);
    for (int i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name))
            return m->tensors[i].offset;
    return NONE;
}

typedef struct {
    gpu_ptr base; /* 0 while counting */
    size_t used;  /* bytes */
} cursor;

static gpu_ptr take(cursor *c, size_t n, size_t elem)
{
    gpu_ptr p = c->base ? c->base + c->used : 0;
    c->used += (n * elem + 255) / 256 * 256;
    return p;
}

static void carve(model_cuda *m, cursor *c)
{
    size_t N = (size_t)m->max_batch * m->cfg.context, C = m->C, F = m->F, V = m->V;
    size_t HD = m->HD, KD = m->KD, H = m->H, Hkv = m->Hkv, a = m->act == GPU_BF16 ? 2 : 4;
    int qk = m->cfg.qk_norm, glu = m->cfg.mlp == MLP_SWIGLU;
    m->rope_cos = take(c, (size_t)m->cfg.context * m->D / 2, 4);
    m->rope_sin = take(c, (size_t)m->cfg.context * m->D / 2, 4);
    m->res = take(c, (2 * (size_t)m->L + 1) * N * C, 4);
    for (int l = 0; l < m->L; l++) {
        layer_acts *t = &m->acts[l];
        t->xn1 = take(c, N * C, a);
        t->rstd1 = take(c, N, 4);
        t->q_raw = qk ? take(c, N * HD, a) : 0;
        t->k_raw = qk ? take(c, N * KD, a) : 0;
        t->q_rstd = qk ? take(c, N * H, 4) : 0;
        t->k_rstd = qk ? take(c, N * Hkv, 4) : 0;
        t->q = take(c, N * HD, a);
        t->k = take(c, N * KD, a);
        t->v = take(c, N * KD, a);
        t->att = take(c, N * HD, a);
        t->lse = take(c, N * H, 4);
        t->xn2 = take(c, N * C, a);
        t->rstd2 = take(c, N, 4);
        t->up = take(c, N * F, a);
        t->gate = glu ? take(c, N * F, a) : 0;
        t->act = take(c, N * F, a);
    }
    m->d_xn = take(c, N * C, 4);
    m->d_att = take(c, N * HD, a);
    m->dq = take(c, N * HD, a);
    m->dk = take(c, N * KD, a);
    m->dv = take(c, N * KD, a);
    m->dq_raw = qk ? take(c, N * HD, a) : 0;
    m->dk_raw = qk ? take(c, N * KD, a) : 0;
    m->d_act = take(c, N * F, a);
    m->d_up = take(c, N * F, a);
    m->delta = take(c, N * H, 4);
    size_t p1 = cuda_rmsnorm_partial_floats((int)N, (int)C), p2 = cuda_rmsnorm_partial_floats((int)(N * H), m->D);
    m->partial = take(c, p1 > p2 ? p1 : p2, 4);
    m->dres = take(c, N * C, 4);
    m->dres_low = m->act == GPU_BF16 ? take(c, N * C, 2) : 0;
    m->xf = take(c, N * C, a);
    m->rstd_f = take(c, N, 4);
    m->dxf = take(c, N * C, 4);
    m->losses = take(c, N, 4);
    m->top_logprob = take(c, N, 4);
    m->top_id = take(c, N, 4);
    m->log_norm = take(c, N, 4);
    m->logits = take(c, (size_t)m->chunk_rows * V, 4);
    m->dz = take(c, N * V, a);
    m->tokens = take(c, N, 4);
    m->targets = take(c, N, 4);
    m->order = take(c, N, 4);
    m->seg = take(c, N + 1, 4);
    m->seg_token = take(c, N, 4);
    m->mix_b = take(c, N, 4);
    m->sum_partial = take(c, cuda_sum_partials(N), 8);
    m->sums = take(c, 4, 8);
}

/* Where each tensor lives in the flat parameter buffer. */
static void find_offsets(model_cuda *m)
{
    for (int l = 0; l < m->L; l++) {
        layer_offsets *o = &m->lo[l];
        o->attn_norm = find(m, "layers.%d.attn_norm", l);
        o->wq = find(m, "layers.%d.wq", l);
        o->wk = find(m, "layers.%d.wk", l);
        o->wv = find(m, "layers.%d.wv", l);
        o->wo = find(m, "layers.%d.wo", l);
        o->q_norm = find(m, "layers.%d.q_norm", l);
        o->k_norm = find(m, "layers.%d.k_norm", l);
        o->mlp_norm = find(m, "layers.%d.mlp_norm", l);
        o->w_up = find(m, "layers.%d.w_up", l);
        o->w_gate = find(m, "layers.%d.w_gate", l);
        o->w_down = find(m, "layers.%d.w_down", l);
    }
    m->tok_emb = find(m, "tok_emb", 0);
    m->final_norm = find(m, "final_norm", 0);
    m->head = m->cfg.tied_head ? m->tok_emb : find(m, "head", 0);
}

/* The GPU's buffers: parameters, gradients, bf16 weights (bf16 activations only) and the arena of
 * activations, carved once to size it and once to place them. */
static int alloc_device(model_cuda *m, int max_batch, tempo_error *err)
{
    cursor count = {0, 0};
    carve(m, &count);
    m->arena_bytes = count.used;
    char what[200];
    snprintf(what, sizeof what, "the model's activations (d_model %d, %d layers, batch %d x %d)", m->C, m->L,
             max_batch, m->cfg.context);
    if (gpu_alloc(m->g, &m->params, m->n_params * 4, "the model's parameters", err) ||
        gpu_alloc(m->g, &m->grads, m->n_params * 4, "the model's gradients", err) ||
        (m->act == GPU_BF16 && gpu_alloc(m->g, &m->wlow, m->n_params * 2, "the model's bf16 weights", err)) ||
        gpu_alloc(m->g, &m->arena, m->arena_bytes, what, err))
        return tempo_error_prefix(err, "model on the GPU");
    cursor assign = {m->arena, 0};
    carve(m, &assign);
    return 0;
}

/* The pinned host memory a batch is staged in (N tokens). */
static int alloc_staging(model_cuda *m, size_t N, tempo_error *err)
{
    size_t pinned = sizeof(int32_t) * (5 * N + 1 + (size_t)m->V) + sizeof(float) * N;
    char *h;
    if (gpu_host_alloc(m->g, (void **)&h, pinned, "a batch's staging", err))
        return -1;
    m->h_tokens = (int32_t *)h;
    m->h_targets = m->h_tokens + N;
    m->h_order = m->h_targets + N;
    m->h_seg = m->h_order + N;
    m->h_seg_token = m->h_seg + N + 1;
    m->h_count = m->h_seg_token + N;
    m->h_mix = (float *)(m->h_count + m->V);
    return 0;
}

/* The RoPE tables as the CPU model's (rope_table_init, in double), uploaded. */
static int upload_rope(model_cuda *m, tempo_error *err)
{
    const model_config *cfg = &m->cfg;
    int D = m->D;
    size_t nt = (size_t)cfg->context * D / 2;
    float *tab = malloc(sizeof(float) * 2 * nt);
    if (!tab)
        return tempo_fail(err, "model on the GPU: out of memory");
    rope_table_init(tab, tab + nt, cfg->context, D, cfg->rope_theta);
    gpu_upload_async(m->g, GPU_STREAM_COMPUTE, m->rope_cos, tab, nt * 4);
    gpu_upload_async(m->g, GPU_STREAM_COMPUTE, m->rope_sin, tab + nt, nt * 4);
    int rc = gpu_sync(m->g, err);
    free(tab);
    return rc;
}

int model_cuda_create(model_cuda **out, gpu *g, const model_config *cfg, int max_batch,
                      model_cuda_precision prec, tempo_error *err)
{
    *out = NULL;
    if (model_config_validate(cfg, err))
        return -1;
    if (max_batch < 1 || (double)max_batch * cfg->context * cfg->n_heads > 2147483647.0)
        return tempo_usage(err, "model on the GPU: max_batch %d out of range", max_batch);
    int D = model_config_head_dim(cfg);
    if (cuda_attention_prepare(g, D, err))
        return -1;
    model_cuda *m = calloc(1, sizeof *m);
    if (!m)
        return tempo_fail(err, "model on the GPU: out of memory");
    m->g = g;
    m->cfg = *cfg;
    m->max_batch = max_batch;
    m->prec = prec;
    m->act = prec == MODEL_CUDA_BF16 ? GPU_BF16 : GPU_F32;
    m->C = cfg->d_model; m->H = cfg->n_heads; m->Hkv = cfg->n_kv_heads; m->D = D;
    m->HD = m->H * D; m->KD = m->Hkv * D; m->F = cfg->d_ff; m->V = cfg->vocab_size; m->L = cfg->n_layers;
    m->training = 1;
    m->beta = 1;
    size_t N = (size_t)max_batch * cfg->context;
    size_t rows = HEAD_LOGIT_BYTES / ((size_t)m->V * 4);
    m->chunk_rows = (int)(rows < 1 ? 1 : rows > N ? N : rows);
    m->tensors = calloc((size_t)MODEL_MAX_TENSORS(m->L), sizeof *m->tensors);
    m->lo = calloc((size_t)m->L, sizeof *m->lo);
    m->acts = calloc((size_t)m->L, sizeof *m->acts);
    if (!m->tensors || !m->lo || !m->acts) {
        model_cuda_free(m);
        return tempo_fail(err, "model on the GPU: out of memory");
    }
    m->n_tensors = model_layout(cfg, m->tensors, MODEL_MAX_TENSORS(m->L), &m->n_params);
    find_offsets(m);
    if (alloc_device(m, max_batch, err) || alloc_staging(m, N, err) || upload_rope(m, err)) {
        model_cuda_free(m);
        return -1;
    }
    model_cuda_zero_grad(m);
    *out = m;
    return 0;
}

void model_cuda_free(model_cuda *m)
{
    if (!m)
        return;
    gpu_free(m->g, m->params);
    gpu_free(m->g, m->grads);
    gpu_free(m->g, m->wlow);
    gpu_free(m->g, m->saved);
    gpu_free(m->g, m->arena);
    gpu_host_free(m->g, m->h_tokens);
    free(m->tensors);
    free(m->lo);
    free(m->acts);
    free(m);
}

const model_config *model_cuda_config(const model_cuda *m) { return &m->cfg; }
size_t model_cuda_num_params(const model_cuda *m) { return m->n_params; }
int model_cuda_num_tensors(const model_cuda *m) { return m->n_tensors; }
const model_tensor *model_cuda_tensor_at(const model_cuda *m, int i)
{
    return i >= 0 && i < m->n_tensors ? &m->tensors[i] : NULL;
}
gpu *model_cuda_gpu(const model_cuda *m) { return m->g; }
gpu_ptr model_cuda_params(const model_cuda *m) { return m->params; }
gpu_ptr model_cuda_grads(const model_cuda *m) { return m->grads; }
model_cuda_precision model_cuda_get_precision(const model_cuda *m) { return m->prec; }
size_t model_cuda_device_bytes(const model_cuda *m)
{
    return m->arena_bytes + m->n_params * (m->act == GPU_BF16 ? 10 : 8);
}
void model_cuda_set_training(model_cuda *m, int training) { m->training = training != 0; }
void model_cuda_set_eval_beta(model_cuda *m, float beta) { m->beta = beta > 0 ? beta : 1; }

void model_cuda_weights_changed(model_cuda *m)
{
    if (m->act == GPU_BF16)
        cuda_convert_bf16(m->g, m->wlow, m->params, m->n_params);
}

int model_cuda_set_params(model_cuda *m, const float *host, tempo_error *err)
{
    gpu_upload_async(m->g, GPU_STREAM_COMPUTE, m->params, host, m->n_params * 4);
    model_cuda_weights_changed(m);
    return gpu_sync(m->g, err);
}

int model_cuda_get_params(model_cuda *m, float *host, tempo_error *err)
{
    return gpu_download(m->g, host, m->params, m->n_params * 4, err);
}

int model_cuda_get_grads(model_cuda *m, float *host, tempo_error *err)
{
    return gpu_download(m->g, host, m->grads, m->n_params * 4, err);
}

void model_cuda_zero_grad(model_cuda *m) { gpu_memset_async(m->g, m->grads, 0, m->n_params * 4); }

/* ---- pieces ---- */

static gpu_ptr fparam(const model_cuda *m, size_t off) { return m->params + off * 4; }
static gpu_ptr fgrad(const model_cuda *m, size_t off) { return m->grads + off * 4; }
/* a weight as the GEMMs read it: the bf16 copy in bf16 mode */
static gpu_mat weight(const model_cuda *m, size_t off, int ld)
{
    gpu_mat w = {m->act == GPU_BF16 ? m->wlow + off * 2 : m->params + off * 4, m->act, ld};
    return w;
}
static gpu_mat amat(const model_cuda *m, gpu_ptr p, int ld)
{
    gpu_mat a = {p, m->act, ld};
    return a;
}
static gpu_mat fmat(gpu_ptr p, int ld)
{
    gpu_mat a = {p, GPU_F32, ld};
    return a;
}
static gpu_ptr residual(const model_cuda *m, int i)
{
    return m->res + (size_t)i * m->max_batch * m->cfg.context * m->C * 4;
}

/* y [N, out] (type yt) = x [N, in] W^T (+ y when beta is 1) */
static void linear(model_cuda *m, gpu_ptr y, gpu_dtype yt, gpu_ptr x, size_t w, int N, int in, int out, float beta)
{
    gpu_mat Y = {y, yt, out};
    gpu_profile_gemm_label(m->g, GPU_GEMM_FWD);
    gpu_gemm(m->g, 0, 1, N, out, in, 1.0f, amat(m, x, in), weight(m, w, in), beta, Y, GPU_MATH_F32);
}

/* the backward of projections of one input x [N, in]: dx (type dxt, = or +=
 * when dx_beta is 1) = sum_i dy_i W_i; dW_i += dy_i^T x */
typedef struct {
    gpu_ptr dy;
    size_t w;
    int out;
} lin_grad;

static void linear_backward(model_cuda *m, gpu_ptr dx, gpu_dtype dxt, float dx_beta, gpu_ptr x, int N, int in,
                            const lin_grad *gr, int n)
{
    gpu_mat DX = {dx, dxt, in};
    gpu_profile_gemm_label(m->g, GPU_GEMM_BWD);
    for (int i = 0; i < n; i++)
        gpu_gemm(m->g, 0, 0, N, in, gr[i].out, 1.0f, amat(m, gr[i].dy, gr[i].out), weight(m, gr[i].w, in),
                 i ? 1.0f : dx_beta, DX, GPU_MATH_F32);
    for (int i = 0; i < n; i++)
        gpu_gemm(m->g, 1, 0, gr[i].out, in, N, 1.0f, amat(m, gr[i].dy, gr[i].out), amat(m, x, in), 1.0f,
                 fmat(fgrad(m, gr[i].w), in), GPU_MATH_F32);
}

static void attn_forward(model_cuda *m, int l, gpu_ptr x_in, gpu_ptr x_out, int B, int T)
{
    const layer_offsets *o = &m->lo[l];
    layer_acts *a = &m->acts[l];
    int N = B * T;
    float eps = m->cfg.norm_eps;
    cuda_rmsnorm_forward(m->g, GPU_F32, m->act, a->xn1, a->rstd1, x_out, x_in, fparam(m, o->attn_norm), N, m->C, eps);
    if (m->cfg.qk_norm) {
        linear(m, a->q_raw, m->act, a->xn1, o->wq, N, m->C, m->HD, 0);
        linear(m, a->k_raw, m->act, a->xn1, o->wk, N, m->C, m->KD, 0);
        cuda_rmsnorm_forward(m->g, m->act, m->act, a->q, a->q_rstd, 0, a->q_raw, fparam(m, o->q_norm), N * m->H,
                             m->D, eps);
        cuda_rmsnorm_forward(m->g, m->act, m->act, a->k, a->k_rstd, 0, a->k_raw, fparam(m, o->k_norm), N * m->Hkv,
                             m->D, eps);
    } else {
        linear(m, a->q, m->act, a->xn1, o->wq, N, m->C, m->HD, 0);
        linear(m, a->k, m->act, a->xn1, o->wk, N, m->C, m->KD, 0);
    }
    linear(m, a->v, m->act, a->xn1, o->wv, N, m->C, m->KD, 0);
    cuda_rope(m->g, m->act, a->q, B, T, m->H, m->D, 0, m->rope_cos, m->rope_sin, 0);
    cuda_rope(m->g, m->act, a->k, B, T, m->Hkv, m->D, 0, m->rope_cos, m->rope_sin, 0);
    cuda_attention_forward(m->g, m->act, a->att, a->lse, a->q, a->k, a->v, B, T, m->H, m->Hkv, m->D);
    linear(m, x_out, GPU_F32, a->att, o->wo, N, m->HD, m->C, 1.0f); /* x_out = x_in (copied) + ... */
}

static void mlp_forward(model_cuda *m, int l, gpu_ptr x_in, gpu_ptr x_out, int N)
{
    const layer_offsets *o = &m->lo[l];
    layer_acts *a = &m->acts[l];
    size_t n = (size_t)N * m->F;
    cuda_rmsnorm_forward(m->g, GPU_F32, m->act, a->xn2, a->rstd2, x_out, x_in, fparam(m, o->mlp_norm), N, m->C,
                         m->cfg.norm_eps);
    linear(m, a->up, m->act, a->xn2, o->w_up, N, m->C, m->F, 0);
    if (m->cfg.mlp == MLP_SWIGLU) {
        linear(m, a->gate, m->act, a->xn2, o->w_gate, N, m->C, m->F, 0);
        cuda_swiglu_forward(m->g, m->act, a->act, a->gate, a->up, n);
    } else {
        cuda_relu2_forward(m->g, m->act, a->act, a->up, n);
    }
    linear(m, x_out, GPU_F32, a->act, o->w_down, N, m->F, m->C, 1.0f);
}

/* The head over rows [0, N): logits by chunks, then the row pass: losses,
 * top_logprob, and either dz (training) or the evaluation outputs. */
static void head_pass(model_cuda *m, int N, int want_grad)
{
    float scale = 1.0f / (float)N;
    for (int r0 = 0; r0 < N; r0 += m->chunk_rows) {
        int R = N - r0 < m->chunk_rows ? N - r0 : m->chunk_rows;
        size_t a = m->act == GPU_BF16 ? 2 : 4;
        gpu_profile_gemm_label(m->g, GPU_GEMM_HEAD);
        gpu_gemm(m->g, 0, 1, R, m->V, m->C, 1.0f, amat(m, m->xf + (size_t)r0 * m->C * a, m->C),
                 weight(m, m->head, m->C), 0.0f, fmat(m->logits, m->V), GPU_MATH_F32);
        gpu_ptr dz = want_grad ? m->dz + (size_t)r0 * m->V * a : 0;
        cuda_cross_entropy_rows(m->g, m->act, m->logits, m->targets + (size_t)r0 * 4, m->losses + (size_t)r0 * 4,
                                m->top_logprob + (size_t)r0 * 4, want_grad ? 0 : m->top_id + (size_t)r0 * 4,
                                want_grad ? 0 : m->log_norm + (size_t)r0 * 4, m->beta, dz,
                                want_grad && m->has_mix ? m->mix_b + (size_t)r0 * 4 : 0, m->mix_a, R, m->V,
                                m->cfg.logit_softcap, scale);
    }
}

/* ---- the passes ---- */

static int ids_ok(const int32_t *ids, int N, int V)
{
    for (int n = 0; n < N; n++)
        if (ids[n] < 0 || ids[n] >= V)
            return 0;
    return 1;
}

int model_cuda_set_batch(model_cuda *m, const int32_t *tokens, const int32_t *targets, int B, int T,
                         const float *mix_b, float mix_a, tempo_error *err)
{
    m->batch_set = 0;
    if (!tokens || B < 1 || B > m->max_batch || T < 1 || T > m->cfg.context)
        return tempo_usage(err, "model on the GPU: batch %d x %d outside 1..%d x 1..%d", B, T, m->max_batch,
                           m->cfg.context);
    int N = B * T;
    if (!ids_ok(tokens, N, m->V) || (targets && !ids_ok(targets, N, m->V)))
        return tempo_usage(err, "model on the GPU: a token id outside 0..%d", m->V - 1);
    if (gpu_copy_sync(m->g, err)) /* the staging's last copy is done */
        return -1;
    memcpy(m->h_tokens, tokens, sizeof(int32_t) * (size_t)N);
    if (targets)
        memcpy(m->h_targets, targets, sizeof(int32_t) * (size_t)N);
    m->n_seg = cuda_embedding_segments(tokens, N, m->V, m->h_order, m->h_seg, m->h_seg_token, m->h_count);
    if (mix_b)
        memcpy(m->h_mix, mix_b, sizeof(float) * (size_t)N);
    gpu *g = m->g;
    gpu_copy_waits_for_compute(g); /* the last pass has read the device copies */
    gpu_upload_async(g, GPU_STREAM_COPY, m->tokens, m->h_tokens, (size_t)N * 4);
    if (targets)
        gpu_upload_async(g, GPU_STREAM_COPY, m->targets, m->h_targets, (size_t)N * 4);
    gpu_upload_async(g, GPU_STREAM_COPY, m->order, m->h_order, (size_t)N * 4);
    gpu_upload_async(g, GPU_STREAM_COPY, m->seg, m->h_seg, (size_t)(m->n_seg + 1) * 4);
    gpu_upload_async(g, GPU_STREAM_COPY, m->seg_token, m->h_seg_token, (size_t)m->n_seg * 4);
    if (mix_b)
        gpu_upload_async(g, GPU_STREAM_COPY, m->mix_b, m->h_mix, (size_t)N * 4);
    m->B = B;
    m->T = T;
    m->has_targets = targets != NULL;
    m->has_mix = mix_b != NULL;
    m->mix_a = mix_a;
    m->batch_set = 1;
    return 0;
}

void model_cuda_forward(model_cuda *m)
{
    m->dz_ready = 0;
    if (!m->batch_set) {
        gpu_set_error(m->g, "model on the GPU: forward without a batch");
        return;
    }
    int B = m->B, T = m->T, N = B * T;
    gpu_compute_waits_for_copy(m->g);
    cuda_embedding_forward(m->g, residual(m, 0), m->tokens, fparam(m, m->tok_emb), N, m->C);
    for (int l = 0; l < m->L; l++) {
        attn_forward(m, l, residual(m, 2 * l), residual(m, 2 * l + 1), B, T);
        mlp_forward(m, l, residual(m, 2 * l + 1), residual(m, 2 * l + 2), N);
    }
    cuda_rmsnorm_forward(m->g, GPU_F32, m->act, m->xf, m->rstd_f, 0, residual(m, 2 * m->L), fparam(m, m->final_norm),
                         N, m->C, m->cfg.norm_eps);
    if (!m->has_targets)
        return;
    head_pass(m, N, m->training);
    m->dz_ready = m->training;
    cuda_sum(m->g, m->sums, m->sum_partial, m->losses, (size_t)N, 0);
}

/* dres in the GEMMs' type: in bf16 mode its bf16 copy, which every write
 * of dres (the residual norms' backward, residual_norm_backward) rewrites */
static gpu_ptr dres_operand(model_cuda *m) { return m->act == GPU_BF16 ? m->dres_low : m->dres; }

/* dres (= or +=) from a residual norm's backward, and its bf16 copy */
static void residual_norm_backward(model_cuda *m, gpu_ptr dw, gpu_ptr dy, gpu_ptr x, gpu_ptr w, gpu_ptr rstd, int N,
                                   int accumulate)
{
    cuda_rmsnorm_backward(m->g, GPU_F32, m->dres, dw, dy, x, w, rstd, N, m->C, accumulate, m->partial,
                          m->act == GPU_BF16 ? m->dres_low : 0);
}

static void mlp_backward(model_cuda *m, int l, gpu_ptr x_in, int N)
{
    const layer_offsets *o = &m->lo[l];
    layer_acts *a = &m->acts[l];
    size_t n = (size_t)N * m->F;
    lin_grad gd = {dres_operand(m), o->w_down, m->C};
    linear_backward(m, m->d_act, m->act, 0, a->act, N, m->F, &gd, 1);
    if (m->cfg.mlp == MLP_SWIGLU) {
        cuda_swiglu_backward(m->g, m->act, m->d_act, m->d_up, m->d_act, a->gate, a->up, n); /* d_act -> d_gate */
        lin_grad gug[2] = {{m->d_up, o->w_up, m->F}, {m->d_act, o->w_gate, m->F}};
        linear_backward(m, m->d_xn, GPU_F32, 0, a->xn2, N, m->C, gug, 2);
    } else {
        cuda_relu2_backward(m->g, m->act, m->d_up, m->d_act, a->up, n);
        lin_grad gu = {m->d_up, o->w_up, m->F};
        linear_backward(m, m->d_xn, GPU_F32, 0, a->xn2, N, m->C, &gu, 1);
    }
    residual_norm_backward(m, fgrad(m, o->mlp_norm), m->d_xn, x_in, fparam(m, o->mlp_norm), a->rstd2, N, 1);
}

static void attn_backward(model_cuda *m, int l, gpu_ptr x_in, int B, int T)
{
    const layer_offsets *o = &m->lo[l];
    layer_acts *a = &m->acts[l];
    int N = B * T;
    lin_grad go = {dres_operand(m), o->wo, m->C};
    linear_backward(m, m->d_att, m->act, 0, a->att, N, m->HD, &go, 1);
    cuda_attention_backward(m->g, m->act, m->dq, m->dk, m->dv, m->d_att, a->q, a->k, a->v, a->att, a->lse, B, T,
                            m->H, m->Hkv, m->D, m->delta);
    cuda_rope(m->g, m->act, m->dq, B, T, m->H, m->D, 0, m->rope_cos, m->rope_sin, 1);
    cuda_rope(m->g, m->act, m->dk, B, T, m->Hkv, m->D, 0, m->rope_cos, m->rope_sin, 1);
    gpu_ptr dq = m->dq, dk = m->dk;
    if (m->cfg.qk_norm) {
        cuda_rmsnorm_backward(m->g, m->act, m->dq_raw, fgrad(m, o->q_norm), m->dq, a->q_raw, fparam(m, o->q_norm),
                              a->q_rstd, N * m->H, m->D, 0, m->partial, 0);
        cuda_rmsnorm_backward(m->g, m->act, m->dk_raw, fgrad(m, o->k_norm), m->dk, a->k_raw, fparam(m, o->k_norm),
                              a->k_rstd, N * m->Hkv, m->D, 0, m->partial, 0);
        dq = m->dq_raw;
        dk = m->dk_raw;
    }
    lin_grad g3[3] = {{dq, o->wq, m->HD}, {dk, o->wk, m->KD}, {m->dv, o->wv, m->KD}};
    linear_backward(m, m->d_xn, GPU_F32, 0, a->xn1, N, m->C, g3, 3);
    residual_norm_backward(m, fgrad(m, o->attn_norm), m->d_xn, x_in, fparam(m, o->attn_norm), a->rstd1, N, 1);
}

void model_cuda_backward(model_cuda *m)
{
    if (!m->batch_set || !m->has_targets)
        return;
    int B = m->B, T = m->T, N = B * T;
    if (!m->dz_ready) /* an evaluation-mode forward: run the head's training pass now */
        head_pass(m, N, 1);
    /* dxf = dz W_head; g_head += dz^T xf */
    gpu_profile_gemm_label(m->g, GPU_GEMM_HEAD);
    gpu_gemm(m->g, 0, 0, N, m->C, m->V, 1.0f, amat(m, m->dz, m->V), weight(m, m->head, m->C), 0.0f,
             fmat(m->dxf, m->C), GPU_MATH_F32);
    gpu_gemm(m->g, 1, 0, m->V, m->C, N, 1.0f, amat(m, m->dz, m->V), amat(m, m->xf, m->C), 1.0f,
             fmat(fgrad(m, m->head), m->C), GPU_MATH_F32);
    residual_norm_backward(m, fgrad(m, m->final_norm), m->dxf, residual(m, 2 * m->L), fparam(m, m->final_norm),
                           m->rstd_f, N, 0);
    for (int l = m->L - 1; l >= 0; l--) {
        mlp_backward(m, l, residual(m, 2 * l + 1), N);
        attn_backward(m, l, residual(m, 2 * l), B, T);
    }
    cuda_embedding_backward(m->g, fgrad(m, m->tok_emb), m->order, m->seg, m->seg_token, m->n_seg, m->dres, m->C);
}

int model_cuda_loss(model_cuda *m, double *mean_loss, tempo_error *err)
{
    *mean_loss = NAN;
    if (!m->batch_set || !m->has_targets)
        return tempo_fail(err, "model on the GPU: no forward with targets");
    double s;
    if (gpu_download(m->g, &s, m->sums, sizeof s, err))
        return -1;
    *mean_loss = s / ((double)m->B * m->T);
    return 0;
}

int model_cuda_token_outputs(model_cuda *m, float *losses, float *top_logprob, int32_t *top_id, float *log_norm,
                             tempo_error *err)
{
    size_t n = (size_t)m->B * m->T * 4;
    if (losses) gpu_download_async(m->g, GPU_STREAM_COMPUTE, losses, m->losses, n);
    if (top_logprob) gpu_download_async(m->g, GPU_STREAM_COMPUTE, top_logprob, m->top_logprob, n);
    if (top_id) gpu_download_async(m->g, GPU_STREAM_COMPUTE, top_id, m->top_id, n);
    if (log_norm) gpu_download_async(m->g, GPU_STREAM_COMPUTE, log_norm, m->log_norm, n);
    return gpu_sync(m->g, err);
}

double model_cuda_sgd_step(model_cuda *m, double lr, double clip, tempo_error *err)
{
    for (int i = 0; i < m->n_tensors; i++)   /* the norms' gains stay as trained (model.h) */
        if (m->tensors[i].kind == TENSOR_NORM)
            gpu_memset_async(m->g, fgrad(m, m->tensors[i].offset), 0, m->tensors[i].numel * 4);
    cuda_sum(m->g, m->sums + 8, m->sum_partial, m->grads, m->n_params, 1);
    double ss;
    if (gpu_download(m->g, &ss, m->sums + 8, sizeof ss, err))
        return -1;
    double norm = sqrt(ss);
    if (!isfinite(norm))
        return NAN; /* nothing to learn from a step that overflowed */
    if (norm > clip)
        lr *= clip / norm;
    cuda_sgd(m->g, m->params, m->grads, m->n_params, (float)lr);
    model_cuda_weights_changed(m);
    return norm;
}

int model_cuda_params_save(model_cuda *m, tempo_error *err)
{
    if (!m->saved && gpu_alloc(m->g, &m->saved, m->n_params * 4, "a copy of the parameters", err))
        return -1;
    gpu_copy_async(m->g, m->saved, m->params, m->n_params * 4);
    return gpu_sync(m->g, err);
}

int model_cuda_params_restore(model_cuda *m, tempo_error *err)
{
    if (!m->saved)
        return tempo_fail(err, "model on the GPU: no saved parameters to restore");
    gpu_copy_async(m->g, m->params, m->saved, m->n_params * 4);
    model_cuda_weights_changed(m);
    return gpu_sync(m->g, err);
}

int model_cuda_attach_new(model *m, gpu *g, model_cuda_precision prec, model_cuda **out, tempo_error *err)
{
    *out = NULL;
    model_cuda *gm;
    if (model_cuda_create(&gm, g, model_get_config(m), model_max_batch(m), prec, err))
        return -1;
    if (model_cuda_set_params(gm, model_params(m), err)) {
        model_cuda_free(gm);
        return -1;
    }
    model_attach_device(m, gm);
    *out = gm;
    return 0;
}
