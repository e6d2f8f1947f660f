/* engine_cuda.c - the inference forward on a GPU (see engine_cuda.h): the
 * steps of engine.c's infer_step, each a GPU kernel or a cuBLASLt product
 * on device buffers for max_rows rows, with the weights read in place from
 * the attached model's device parameters (model.h's layout). */
#include "infer/engine_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/rope.h"
#include "kernels/cuda/gpu.h"
#include "kernels/cuda/gpu_gemm.h"
#include "kernels/cuda/gpu_ops.h"
#include "model/model_cuda.h"

#define F4 ((size_t)sizeof(float))

typedef struct {
    gpu_ptr attn_norm, wq, wk, wv, wo, q_norm, k_norm, mlp_norm, w_up, w_gate, w_down;
} layer_ptrs;

struct infer_gpu {
    gpu *g;
    model_config cfg;
    int C, H, Hkv, D, F, HD, KD, V, L, max_rows;
    gpu_ptr params;
    layer_ptrs *lw;
    gpu_ptr tok_emb, final_norm, head, rope_cos, rope_sin;
    /* device scratch for max_rows rows */
    gpu_ptr tokens, pos, kv_off;            /* [R] int32, [R] int32, [L][R] int64 */
    gpu_ptr x, x2, xn, rstd, q, k, v, att;  /* [R, C] x3, [R * H], [R, HD], [R, KD] x2, [R, HD] */
    gpu_ptr q_raw, k_raw;                   /* QK-norm only */
    gpu_ptr up, gate, act, out_x, out_h;    /* [R, F] x3, [R, C] x2 */
    gpu_ptr logits;                         /* [R, V] */
    int32_t *h_pos;                         /* host staging: [R] */
    long long *h_off;                       /* [L][R] */
};

/* A tensor of the model's layout, on the device (0 when the model has none). */
static gpu_ptr tensor(const infer_gpu *e, model *m, const char *name)
{
    int i = model_find_tensor(m, name);
    return i < 0 ? 0 : e->params + F4 * model_tensor_at(m, i)->offset;
}

static gpu_ptr layer_tensor(const infer_gpu *e, model *m, int l, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "layers.%d.%s", l, what);
    return tensor(e, m, name);
}

static void find_weights(infer_gpu *e, model *m)
{
    for (int l = 0; l < e->L; l++) {
        layer_ptrs *w = &e->lw[l];
        w->attn_norm = layer_tensor(e, m, l, "attn_norm");
        w->wq = layer_tensor(e, m, l, "wq");
        w->wk = layer_tensor(e, m, l, "wk");
        w->wv = layer_tensor(e, m, l, "wv");
        w->wo = layer_tensor(e, m, l, "wo");
        w->q_norm = e->cfg.qk_norm ? layer_tensor(e, m, l, "q_norm") : 0;
        w->k_norm = e->cfg.qk_norm ? layer_tensor(e, m, l, "k_norm") : 0;
        w->mlp_norm = layer_tensor(e, m, l, "mlp_norm");
        w->w_up = layer_tensor(e, m, l, "w_up");
        w->w_gate = e->cfg.mlp == MLP_SWIGLU ? layer_tensor(e, m, l, "w_gate") : 0;
        w->w_down = layer_tensor(e, m, l, "w_down");
    }
    e->tok_emb = tensor(e, m, "tok_emb");
    e->final_norm = tensor(e, m, "final_norm");
    e->head = e->cfg.tied_head ? e->tok_emb : tensor(e, m, "head");
}

static int alloc_buffers(infer_gpu *e, tempo_error *err)
{
    size_t R = (size_t)e->max_rows, C = e->C, HD = e->HD, KD = e->KD, F = e->F, H = e->H;
    size_t half = (size_t)e->cfg.context * (e->D / 2);
    struct {
        gpu_ptr *p;
        size_t bytes;
    } b[] = {
        {&e->tokens, 4 * R},       {&e->pos, 4 * R},       {&e->kv_off, 8 * R * e->L}, {&e->x, F4 * R * C},
        {&e->x2, F4 * R * C},      {&e->xn, F4 * R * C},   {&e->rstd, F4 * R * H},     {&e->q, F4 * R * HD},
        {&e->k, F4 * R * KD},      {&e->v, F4 * R * KD},   {&e->att, F4 * R * HD},     {&e->up, F4 * R * F},
        {&e->gate, F4 * R * F},    {&e->act, F4 * R * F},  {&e->out_x, F4 * R * C},    {&e->out_h, F4 * R * C},
        {&e->logits, F4 * R * e->V}, {&e->rope_cos, F4 * half}, {&e->rope_sin, F4 * half},
        {&e->q_raw, e->cfg.qk_norm ? F4 * R * HD : 0}, {&e->k_raw, e->cfg.qk_norm ? F4 * R * KD : 0},
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (b[i].bytes && gpu_alloc(e->g, b[i].p, b[i].bytes, "the inference engine's scratch", err))
            return -1;
    e->h_pos = malloc(4 * R);
    e->h_off = malloc(8 * R * e->L);
    float *cs = malloc(F4 * half * 2);
    if (!e->h_pos || !e->h_off || !cs) {
        free(cs);
        return tempo_fail(err, "inference engine on the GPU: out of memory");
    }
    rope_table_init(cs, cs + half, e->cfg.context, e->D, e->cfg.rope_theta);
    int rc = gpu_upload(e->g, e->rope_cos, cs, F4 * half, err) || gpu_upload(e->g, e->rope_sin, cs + half, F4 * half, err);
    free(cs);
    return rc ? -1 : 0;
}

int infer_gpu_create(infer_gpu **out, model *m, int max_rows, tempo_error *err)
{
    *out = NULL;
    struct model_cuda *mc = model_device(m);
    const model_config *c = model_get_config(m);
    if (!mc)
        return tempo_usage(err, "inference engine on the GPU: the model has no device attached");
    int D = c->d_model / c->n_heads;
    if (c->context > CUDA_DECODE_MAX_KEYS || D > CUDA_DECODE_MAX_D)
        return tempo_usage(err, "inference engine on the GPU: context %d, head dim %d (at most %d and %d)",
                           c->context, D, CUDA_DECODE_MAX_KEYS, CUDA_DECODE_MAX_D);
    infer_gpu *e = calloc(1, sizeof *e);
    if (!e)
        return tempo_fail(err, "inference engine on the GPU: out of memory");
    e->g = model_cuda_gpu(mc);
    e->cfg = *c;
    e->C = c->d_model;
    e->H = c->n_heads;
    e->Hkv = c->n_kv_heads;
    e->D = D;
    e->F = c->d_ff;
    e->HD = e->H * D;
    e->KD = e->Hkv * D;
    e->V = c->vocab_size;
    e->L = c->n_layers;
    e->max_rows = max_rows;
    e->params = model_cuda_params(mc);
    e->lw = calloc((size_t)e->L, sizeof *e->lw);
    if (!e->lw) {
        infer_gpu_free(e);
        return tempo_fail(err, "inference engine on the GPU: out of memory");
    }
    find_weights(e, m);
    if (alloc_buffers(e, err)) {
        infer_gpu_free(e);
        return -1;
    }
    *out = e;
    return 0;
}

void infer_gpu_free(infer_gpu *e)
{
    if (!e)
        return;
    gpu_ptr bufs[] = {e->tokens, e->pos, e->kv_off, e->x, e->x2, e->xn, e->rstd, e->q, e->k, e->v, e->att,
                      e->up, e->gate, e->act, e->out_x, e->out_h, e->logits, e->rope_cos, e->rope_sin,
                      e->q_raw, e->k_raw};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        gpu_free(e->g, bufs[i]);
    free(e->h_pos);
    free(e->h_off);
    free(e->lw);
    free(e);
}

static gpu_mat mat(gpu_ptr p, int ld) { return (gpu_mat){p, GPU_F32, ld}; }

/* y [N, out] = x [N, in] W^T (+ y when beta = 1), W [out, in] on the device */
static void linear(infer_gpu *e, gpu_ptr y, gpu_ptr x, gpu_ptr W, int N, int in, int out, float beta)
{
    gpu_gemm(e->g, 0, 1, N, out, in, 1.0f, mat(x, in), mat(W, in), beta, mat(y, out), GPU_MATH_F32);
}

/* The attention half of layer l (x -> x2); the rows' keys and values into the cache. */
static void attn_half(infer_gpu *e, infer_cache *c, const infer_chunk *ch, int n_chunks, int N, int l)
{
    const layer_ptrs *w = &e->lw[l];
    int C = e->C, H = e->H, Hkv = e->Hkv, D = e->D, HD = e->HD, KD = e->KD;
    float eps = e->cfg.norm_eps;
    cuda_rmsnorm_forward(e->g, GPU_F32, GPU_F32, e->xn, e->rstd, e->x2, e->x, w->attn_norm, N, C, eps);
    if (e->cfg.qk_norm) {
        linear(e, e->q_raw, e->xn, w->wq, N, C, HD, 0);
        linear(e, e->k_raw, e->xn, w->wk, N, C, KD, 0);
        cuda_rmsnorm_forward(e->g, GPU_F32, GPU_F32, e->q, e->rstd, 0, e->q_raw, w->q_norm, N * H, D, eps);
        cuda_rmsnorm_forward(e->g, GPU_F32, GPU_F32, e->k, e->rstd, 0, e->k_raw, w->k_norm, N * Hkv, D, eps);
    } else {
        linear(e, e->q, e->xn, w->wq, N, C, HD, 0);
        linear(e, e->k, e->xn, w->wk, N, C, KD, 0);
    }
    linear(e, e->v, e->xn, w->wv, N, C, KD, 0);
    for (int i = 0, row = 0; i < n_chunks; i++) {
        int n = ch[i].n, pos0 = c->len[ch[i].slot];
        if (n == 0)
            continue;
        cuda_rope(e->g, GPU_F32, e->q + F4 * row * HD, 1, n, H, D, pos0, e->rope_cos, e->rope_sin, 0);
        cuda_rope(e->g, GPU_F32, e->k + F4 * row * KD, 1, n, Hkv, D, pos0, e->rope_cos, e->rope_sin, 0);
        size_t at = F4 * (infer_cache_offset(c, ch[i].slot, l) + (size_t)pos0 * KD);
        gpu_copy_async(e->g, c->dk + at, e->k + F4 * row * KD, F4 * n * KD);
        gpu_copy_async(e->g, c->dv + at, e->v + F4 * row * KD, F4 * n * KD);
        row += n;
    }
    cuda_attention_decode(e->g, e->att, e->q, c->dk, c->dv, e->kv_off + 8 * (size_t)l * N, e->pos, N, H, Hkv, D,
                          KD);
    linear(e, e->x2, e->att, w->wo, N, HD, C, 1.0f);
}

/* The MLP half of layer l (x2 -> x). */
static void mlp_half(infer_gpu *e, int N, int l)
{
    const layer_ptrs *w = &e->lw[l];
    int C = e->C, F = e->F;
    size_t n = (size_t)N * F;
    cuda_rmsnorm_forward(e->g, GPU_F32, GPU_F32, e->xn, e->rstd, e->x, e->x2, w->mlp_norm, N, C, e->cfg.norm_eps);
    linear(e, e->up, e->xn, w->w_up, N, C, F, 0);
    if (e->cfg.mlp == MLP_SWIGLU) {
        linear(e, e->gate, e->xn, w->w_gate, N, C, F, 0);
        cuda_swiglu_forward(e->g, GPU_F32, e->act, e->gate, e->up, n);
    } else {
        cuda_relu2_forward(e->g, GPU_F32, e->act, e->up, n);
    }
    linear(e, e->x, e->act, w->w_down, N, F, C, 1.0f);
}

/* Each row's position and, per layer, the float offset of its slot's rows in the cache. */
static void upload_rows(infer_gpu *e, const infer_cache *c, const infer_chunk *ch, int n_chunks, int N)
{
    for (int i = 0, row = 0; i < n_chunks; i++)
        for (int t = 0; t < ch[i].n; t++, row++) {
            e->h_pos[row] = c->len[ch[i].slot] + t;
            for (int l = 0; l < e->L; l++)
                e->h_off[(size_t)l * N + row] = (long long)infer_cache_offset(c, ch[i].slot, l);
        }
    for (int i = 0, row = 0; i < n_chunks; i++) {
        if (ch[i].n)
            gpu_upload_async(e->g, GPU_STREAM_COMPUTE, e->tokens + 4 * (size_t)row, ch[i].tokens, 4 * (size_t)ch[i].n);
        row += ch[i].n;
    }
    gpu_upload_async(e->g, GPU_STREAM_COMPUTE, e->pos, e->h_pos, 4 * (size_t)N);
    gpu_upload_async(e->g, GPU_STREAM_COMPUTE, e->kv_off, e->h_off, 8 * (size_t)N * e->L);
}

int infer_gpu_step(infer_gpu *e, infer_cache *c, const infer_chunk *chunks, int n_chunks, int N, int n_out,
                   tempo_error *err)
{
    if (infer_cache_to_device(c, e->g, err))
        return -1;
    int C = e->C;
    upload_rows(e, c, chunks, n_chunks, N);
    cuda_embedding_forward(e->g, e->x, e->tokens, e->tok_emb, N, C);
    for (int l = 0; l < e->L; l++) {
        attn_half(e, c, chunks, n_chunks, N, l);
        mlp_half(e, N, l);
    }
    for (int i = 0, row = 0, o = 0; i < n_chunks; i++) {
        const infer_chunk *k = &chunks[i];
        if (k->n > k->out_from) {
            size_t rows = (size_t)(k->n - k->out_from);
            gpu_copy_async(e->g, e->out_x + F4 * o * C, e->x + F4 * ((size_t)row + k->out_from) * C, F4 * rows * C);
            o += (int)rows;
        }
        row += k->n;
    }
    if (n_out)
        cuda_rmsnorm_forward(e->g, GPU_F32, GPU_F32, e->out_h, e->rstd, 0, e->out_x, e->final_norm, n_out, C,
                             e->cfg.norm_eps);
    /* the host's staging (positions, offsets, tokens) is reused by the next step: wait */
    return gpu_sync(e->g, err) ? tempo_error_prefix(err, "inference step on the GPU") : 0;
}

int infer_gpu_logits(infer_gpu *e, int first, int n, float *logits, tempo_error *err)
{
    if (n <= 0)
        return 0;
    linear(e, e->logits, e->out_h + F4 * (size_t)first * e->C, e->head, n, e->C, e->V, 0);
    return gpu_download(e->g, logits, e->logits, F4 * (size_t)n * e->V, err)
               ? tempo_error_prefix(err, "inference logits on the GPU")
               : 0;
}
