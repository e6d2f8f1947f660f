/* engine.c - the inference forward over ragged chunks with a KV cache (see
 * engine.h). Per layer, on N packed rows of new tokens:
 *   n = rmsnorm(x); q, k, v = n W^T (one GEMM each over all rows);
 *   [qk-norm]; RoPE at each row's own position; k, v rows -> the cache;
 *   per (chunk, head): attention of the chunk's queries over its slot's
 *   keys 0 .. len+n-1 (attention_head_forward, Tq < Tk allowed);
 *   x += att Wo^T; then x += mlp(rmsnorm(x)).
 * The final RMSNorm runs only on rows whose logits are wanted; the head
 * product only when infer_logits asks. The GEMM configuration is read once
 * (gemm_f32 would re-read sysfs on every call, ~0.1 ms here). */
#include "infer/engine.h"
#include "core/omp_team.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "infer/engine_cuda.h"
#include "model/block.h"

enum { PK_Q, PK_K, PK_V, PK_O, PK_UP, PK_GATE, PK_DOWN, PK_PER_LAYER };

struct infer_engine {
    model *m;
    model_config cfg;
    int C, H, Hkv, D, F, HD, KD, V;
    int max_rows;
    gemm_config gc;
    model_layer_weights *lw; /* [n_layers] views into the model's parameters */
    /* The weight matrices packed once for the GEMM (op(B) = W^T): a decode
     * step then only streams them, instead of re-packing each per product. */
    gemm_packed_b *pk;       /* [n_layers * PK_PER_LAYER + 1]: per layer q k v o up gate down; head */
    const float *tok_emb, *final_norm, *head;
    float *rope_cos, *rope_sin; /* [context, D/2] */

    /* scratch for max_rows rows */
    float *arena;
    int32_t *tokens;            /* [R] packed new tokens */
    float *x, *x2;              /* [R, C] residual stream */
    float *xn, *rstd;           /* [R, C], [R * max(H, 1)] */
    float *q, *k, *v, *att;     /* [R, HD], [R, KD], [R, KD], [R, HD] */
    float *q_raw, *k_raw;       /* [R, HD], [R, KD] (QK-norm only) */
    float *lse;                 /* [R * H] */
    float *up, *gate, *act;     /* [R, F] (gate: SwiGLU only) */
    float *out_x, *out_h;       /* [R, C] rows whose logits are wanted */
    int n_out;
    int *chunk_row;             /* [chunk_cap] first packed row of each chunk */
    int chunk_cap;
    infer_gpu *gpu;             /* a model with a device attached: the steps run there (engine_cuda.h) */
};

static float *weight(model *m, const char *name)
{
    int i = model_find_tensor(m, name);
    return i < 0 ? NULL : model_params(m) + model_tensor_at(m, i)->offset;
}

static float *layer_weight(model *m, int l, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "layers.%d.%s", l, what);
    return weight(m, name);
}

/* Carve n floats off the arena (64-byte multiples keep rows aligned). */
static float *carve(float **p, size_t n)
{
    float *r = *p;
    *p += (n + 15) / 16 * 16;
    return r;
}

/* Pack W [out, in] for y = x W^T. */
static int pack(infer_engine *e, gemm_packed_b *pb, const float *W, int in, int out, tempo_error *err)
{
    return gemm_packed_b_pack(pb, &e->gc, 1, in, out, W, in, err);
}

static int pack_weights(infer_engine *e, tempo_error *err)
{
    int L = e->cfg.n_layers, C = e->C, F = e->F;
    e->pk = calloc((size_t)L * PK_PER_LAYER + 1, sizeof(gemm_packed_b));
    if (!e->pk)
        return tempo_fail(err, "inference engine: out of memory");
    for (int l = 0; l < L; l++) {
        const model_layer_weights *w = &e->lw[l];
        gemm_packed_b *p = e->pk + (size_t)l * PK_PER_LAYER;
        if (pack(e, &p[PK_Q], w->wq, C, e->HD, err) || pack(e, &p[PK_K], w->wk, C, e->KD, err) ||
            pack(e, &p[PK_V], w->wv, C, e->KD, err) || pack(e, &p[PK_O], w->wo, e->HD, C, err) ||
            pack(e, &p[PK_UP], w->w_up, C, F, err) || pack(e, &p[PK_DOWN], w->w_down, F, C, err) ||
            (w->w_gate && pack(e, &p[PK_GATE], w->w_gate, C, F, err)))
            return tempo_error_prefix(err, "inference engine");
    }
    if (pack(e, &e->pk[(size_t)L * PK_PER_LAYER], e->head, C, e->V, err))
        return tempo_error_prefix(err, "inference engine");
    return 0;
}

/* The model's weights by layer, read in place. */
static void find_weights(infer_engine *e)
{
    model *m = e->m;
    const model_config *c = &e->cfg;
    for (int l = 0; l < c->n_layers; l++) {
        model_layer_weights *w = &e->lw[l];
        w->attn_norm = layer_weight(m, l, "attn_norm");
        w->wq = layer_weight(m, l, "wq");
        w->wk = layer_weight(m, l, "wk");
        w->wv = layer_weight(m, l, "wv");
        w->wo = layer_weight(m, l, "wo");
        w->q_norm = c->qk_norm ? layer_weight(m, l, "q_norm") : NULL;
        w->k_norm = c->qk_norm ? layer_weight(m, l, "k_norm") : NULL;
        w->mlp_norm = layer_weight(m, l, "mlp_norm");
        w->w_up = layer_weight(m, l, "w_up");
        w->w_gate = c->mlp == MLP_SWIGLU ? layer_weight(m, l, "w_gate") : NULL;
        w->w_down = layer_weight(m, l, "w_down");
    }
    e->tok_emb = weight(m, "tok_emb");
    e->final_norm = weight(m, "final_norm");
    e->head = c->tied_head ? e->tok_emb : weight(m, "head");
}

/* One arena of scratch for max_rows rows (each buffer padded, 64-byte aligned) and the RoPE
 * tables in it. */
static int alloc_scratch(infer_engine *e, tempo_error *err)
{
    const model_config *c = &e->cfg;
    size_t R = (size_t)e->max_rows, C = e->C, HD = e->HD, KD = e->KD, F = e->F, H = e->H;
    size_t half = (size_t)c->context * (e->D / 2);
    size_t pad = 16;
    size_t floats = 2 * (half + pad) + 2 * (R * C + pad) + (R * C + pad) + (R * H + pad) +
                    2 * (R * HD + pad) + 2 * (R * KD + pad) + (R * H + pad) + 3 * (R * F + pad) +
                    2 * (R * C + pad) + (R + pad);
    if (c->qk_norm)
        floats += R * HD + R * KD + 2 * pad;
    e->arena = aligned_alloc(64, sizeof(float) * ((floats + 15) / 16 * 16));
    if (!e->arena)
        return tempo_fail(err, "inference engine: out of memory (%zu MB of scratch)",
                          sizeof(float) * floats >> 20);
    float *p = e->arena;
    e->rope_cos = carve(&p, half);
    e->rope_sin = carve(&p, half);
    e->x = carve(&p, R * C);
    e->x2 = carve(&p, R * C);
    e->xn = carve(&p, R * C);
    e->rstd = carve(&p, R * H);
    e->q = carve(&p, R * HD);
    e->att = carve(&p, R * HD);
    e->k = carve(&p, R * KD);
    e->v = carve(&p, R * KD);
    e->lse = carve(&p, R * H);
    e->up = carve(&p, R * F);
    e->gate = carve(&p, R * F);
    e->act = carve(&p, R * F);
    e->out_x = carve(&p, R * C);
    e->out_h = carve(&p, R * C);
    e->tokens = (int32_t *)carve(&p, R);
    if (c->qk_norm) {
        e->q_raw = carve(&p, R * HD);
        e->k_raw = carve(&p, R * KD);
    }
    rope_table_init(e->rope_cos, e->rope_sin, c->context, e->D, c->rope_theta);
    return 0;
}

int infer_engine_create(infer_engine **out, model *m, int max_rows, tempo_error *err)
{
    *out = NULL;
    if (max_rows < 1)
        return tempo_usage(err, "inference engine: max_rows %d < 1", max_rows);
    infer_engine *e = calloc(1, sizeof *e);
    if (!e)
        return tempo_fail(err, "inference engine: out of memory");
    const model_config *c = model_get_config(m);
    e->m = m;
    e->cfg = *c;
    e->C = c->d_model;
    e->H = c->n_heads;
    e->Hkv = c->n_kv_heads;
    e->D = c->d_model / c->n_heads;
    e->F = c->d_ff;
    e->HD = e->H * e->D;
    e->KD = e->Hkv * e->D;
    e->V = c->vocab_size;
    e->max_rows = max_rows;
    if (model_device(m)) {
        if (infer_gpu_create(&e->gpu, m, max_rows, err)) {
            infer_engine_free(e);
            return -1;
        }
        *out = e;
        return 0;
    }
    gemm_config_init(&e->gc);
    e->lw = calloc((size_t)c->n_layers, sizeof *e->lw);
    if (!e->lw) {
        infer_engine_free(e);
        return tempo_fail(err, "inference engine: out of memory");
    }
    find_weights(e);
    if (pack_weights(e, err) || alloc_scratch(e, err)) {
        infer_engine_free(e);
        return -1;
    }
    *out = e;
    return 0;
}

void infer_engine_free(infer_engine *e)
{
    if (!e)
        return;
    if (e->pk)
        for (int i = 0; i < e->cfg.n_layers * PK_PER_LAYER + 1; i++)
            gemm_packed_b_free(&e->pk[i]);
    free(e->pk);
    free(e->lw);
    free(e->arena);
    free(e->chunk_row);
    infer_gpu_free(e->gpu);
    free(e);
}

const model_config *infer_engine_config(const infer_engine *e) { return &e->cfg; }
int infer_outputs(const infer_engine *e) { return e->n_out; }

/* y [N, out] = x [N, in] W^T (+ y when beta = 1), W [out, in] (also packed in pb).
 * One row goes through gemv (one streaming pass over W): for one row that
 * beats the packed GEMM, whose 6-row micro-tile would do 6x the FMAs per
 * weight loaded. */
static void linear(const infer_engine *e, float *y, const float *x, const float *W,
                   const gemm_packed_b *pb, int N, int in, int out, float beta)
{
    if (N == 1)
        gemv_f32(y, x, W, in, out, beta != 0);
    else
        gemm_f32_packed_b(&e->gc, 0, N, x, in, pb, beta, y, pb->N);
}

static const gemm_packed_b *packed(const infer_engine *e, int l, int which)
{
    return &e->pk[(size_t)l * PK_PER_LAYER + which];
}

static int check_step(const infer_engine *e, const infer_cache *c, const infer_chunk *ch,
                      int n_chunks, tempo_error *err)
{
    if (c->n_layers != e->cfg.n_layers || c->kv_dim != e->KD || c->capacity > e->cfg.context)
        return tempo_usage(err, "inference step: the cache was made for another model shape");
    if (n_chunks < 0)
        return tempo_usage(err, "inference step: %d chunks", n_chunks);
    long rows = 0;
    for (int i = 0; i < n_chunks; i++) {
        const infer_chunk *k = &ch[i];
        if (k->slot < 0 || k->slot >= c->n_slots)
            return tempo_usage(err, "inference step: slot %d out of range (%d slots)", k->slot,
                               c->n_slots);
        if (k->n < 0 || (k->n > 0 && !k->tokens) || k->out_from < 0)
            return tempo_usage(err, "inference step: chunk %d: bad size %d or out_from %d", i,
                               k->n, k->out_from);
        if ((long)c->len[k->slot] + k->n > c->capacity)
            return tempo_usage(err, "inference step: slot %d: %d + %d tokens exceed its %d positions",
                               k->slot, c->len[k->slot], k->n, c->capacity);
        for (int j = 0; j < i; j++)
            if (ch[j].slot == k->slot)
                return tempo_usage(err, "inference step: slot %d appears twice", k->slot);
        for (int t = 0; t < k->n; t++)
            if (k->tokens[t] < 0 || k->tokens[t] >= e->V)
                return tempo_usage(err, "inference step: token %d out of range [0, %d)",
                                   (int)k->tokens[t], e->V);
        rows += k->n;
    }
    if (rows > e->max_rows)
        return tempo_usage(err, "inference step: %ld rows exceed the engine's %d", rows, e->max_rows);
    return 0;
}

/* Attention task t = (chunk t / H, head t % H) of layer l over its slot's keys. */
static void attend(infer_engine *e, const infer_cache *c, const infer_chunk *ch, int l, int t)
{
    int H = e->H, D = e->D, HD = e->HD, KD = e->KD, group = e->H / e->Hkv;
    int i = t / H, h = t % H, n = ch[i].n;
    if (n == 0)
        return;
    int r0 = e->chunk_row[i], len = c->len[ch[i].slot] + n, g = h / group;
    size_t qo = (size_t)r0 * HD + (size_t)h * D;
    attention_head_forward(e->att + qo, e->lse + (size_t)r0 * H + (size_t)h * n, e->q + qo,
                           infer_cache_k(c, ch[i].slot, l) + (size_t)g * D,
                           infer_cache_v(c, ch[i].slot, l) + (size_t)g * D, HD, KD, n, len, D,
                           1.0f / sqrtf((float)D));
}

/* The attention half of layer l on the packed rows (x -> x2). */
static void attn_half(infer_engine *e, infer_cache *c, const infer_chunk *ch, int n_chunks,
                      int N, int l)
{
    const model_layer_weights *w = &e->lw[l];
    int C = e->C, H = e->H, Hkv = e->Hkv, D = e->D, HD = e->HD, KD = e->KD;
    float eps = e->cfg.norm_eps;
    rmsnorm_forward(e->xn, e->rstd, e->x, w->attn_norm, N, C, eps);
    if (e->cfg.qk_norm) {
        linear(e, e->q_raw, e->xn, w->wq, packed(e, l, PK_Q), N, C, HD, 0);
        linear(e, e->k_raw, e->xn, w->wk, packed(e, l, PK_K), N, C, KD, 0);
        rmsnorm_forward(e->q, e->rstd, e->q_raw, w->q_norm, N * H, D, eps);
        rmsnorm_forward(e->k, e->rstd, e->k_raw, w->k_norm, N * Hkv, D, eps);
    } else {
        linear(e, e->q, e->xn, w->wq, packed(e, l, PK_Q), N, C, HD, 0);
        linear(e, e->k, e->xn, w->wk, packed(e, l, PK_K), N, C, KD, 0);
    }
    linear(e, e->v, e->xn, w->wv, packed(e, l, PK_V), N, C, KD, 0);
    int row = 0;
    for (int i = 0; i < n_chunks; i++) {
        int n = ch[i].n, pos0 = c->len[ch[i].slot];
        if (n == 0)
            continue;
        rope_forward(e->q + (size_t)row * HD, 1, n, H, D, pos0, e->rope_cos, e->rope_sin);
        rope_forward(e->k + (size_t)row * KD, 1, n, Hkv, D, pos0, e->rope_cos, e->rope_sin);
        size_t at = (size_t)pos0 * KD, bytes = sizeof(float) * (size_t)n * KD;
        memcpy(infer_cache_k(c, ch[i].slot, l) + at, e->k + (size_t)row * KD, bytes);
        memcpy(infer_cache_v(c, ch[i].slot, l) + at, e->v + (size_t)row * KD, bytes);
        row += n;
    }
    /* One task per (chunk, head); each task's result depends only on its own
     * inputs, so any schedule gives the same bits. Dynamic: chunks are ragged.
     * Threads only for enough work (a parallel region's cost: lab notebook, 2026-12-05);
     * a decode step's heads over their keys are a few microseconds. */
    int tasks = n_chunks * H;
    double work = 0;
    for (int i = 0; i < n_chunks; i++)
        work += (double)ch[i].n * (c->len[ch[i].slot] + ch[i].n) * D * H;
    if (work < 262144 || !omp_team_worth((size_t)tasks, 1)) {
        for (int t = 0; t < tasks; t++)
            attend(e, c, ch, l, t);
    } else {
#pragma omp parallel for schedule(dynamic, 1)
        for (int t = 0; t < tasks; t++)
            attend(e, c, ch, l, t);
    }
    memcpy(e->x2, e->x, sizeof(float) * (size_t)N * C);
    linear(e, e->x2, e->att, w->wo, packed(e, l, PK_O), N, HD, C, 1.0f);
}

/* The MLP half of layer l (x2 -> x). */
static void mlp_half(infer_engine *e, int N, int l)
{
    const model_layer_weights *w = &e->lw[l];
    int C = e->C, F = e->F;
    size_t n = (size_t)N * F;
    rmsnorm_forward(e->xn, e->rstd, e->x2, w->mlp_norm, N, C, e->cfg.norm_eps);
    linear(e, e->up, e->xn, w->w_up, packed(e, l, PK_UP), N, C, F, 0);
    if (e->cfg.mlp == MLP_SWIGLU) {
        linear(e, e->gate, e->xn, w->w_gate, packed(e, l, PK_GATE), N, C, F, 0);
        act_swiglu_forward(e->act, e->gate, e->up, n);
    } else {
        act_relu2_forward(e->act, e->up, n);
    }
    memcpy(e->x, e->x2, sizeof(float) * (size_t)N * C);
    linear(e, e->x, e->act, w->w_down, packed(e, l, PK_DOWN), N, F, C, 1.0f);
}

/* infer_step on the GPU side: the rows counted, the work there, then the slots' lengths. */
static int gpu_step(infer_engine *e, infer_cache *c, const infer_chunk *chunks, int n_chunks, tempo_error *err)
{
    int N = 0, n_out = 0;
    for (int i = 0; i < n_chunks; i++) {
        N += chunks[i].n;
        n_out += chunks[i].n > chunks[i].out_from ? chunks[i].n - chunks[i].out_from : 0;
    }
    if (N == 0)
        return 0;
    if (infer_gpu_step(e->gpu, c, chunks, n_chunks, N, n_out, err))
        return -1;
    for (int i = 0; i < n_chunks; i++)
        c->len[chunks[i].slot] += chunks[i].n;
    e->n_out = n_out;
    return 0;
}

int infer_step(infer_engine *e, infer_cache *c, const infer_chunk *chunks, int n_chunks,
               tempo_error *err)
{
    e->n_out = 0;
    if (check_step(e, c, chunks, n_chunks, err))
        return -1;
    if (n_chunks > e->chunk_cap) {
        int *p = realloc(e->chunk_row, sizeof(int) * (size_t)n_chunks);
        if (!p)
            return tempo_fail(err, "inference step: out of memory");
        e->chunk_row = p;
        e->chunk_cap = n_chunks;
    }
    if (e->gpu)
        return gpu_step(e, c, chunks, n_chunks, err);
    int N = 0;
    for (int i = 0; i < n_chunks; i++) {
        e->chunk_row[i] = N;
        if (chunks[i].n)
            memcpy(e->tokens + N, chunks[i].tokens, sizeof(int32_t) * (size_t)chunks[i].n);
        N += chunks[i].n;
    }
    if (N == 0)
        return 0;
    int C = e->C;
    embedding_forward(e->x, e->tokens, e->tok_emb, N, C);
    for (int l = 0; l < e->cfg.n_layers; l++) {
        attn_half(e, c, chunks, n_chunks, N, l);
        mlp_half(e, N, l);
    }
    int row = 0, n_out = 0;
    for (int i = 0; i < n_chunks; i++) {
        const infer_chunk *k = &chunks[i];
        for (int t = k->out_from; t < k->n; t++)
            memcpy(e->out_x + (size_t)(n_out++) * C, e->x + (size_t)(row + t) * C,
                   sizeof(float) * (size_t)C);
        row += k->n;
        c->len[k->slot] += k->n;
    }
    if (n_out)
        rmsnorm_forward(e->out_h, e->rstd, e->out_x, e->final_norm, n_out, C, e->cfg.norm_eps);
    e->n_out = n_out;
    return 0;
}

void infer_logits(infer_engine *e, int first, int n, float *logits)
{
    int V = e->V, C = e->C;
    tempo_error err;
    if (!e->gpu)
        linear(e, logits, e->out_h + (size_t)first * C, e->head,
               &e->pk[(size_t)e->cfg.n_layers * PK_PER_LAYER], n, C, V, 0.0f);
    else if (infer_gpu_logits(e->gpu, first, n, logits, &err))
        for (size_t i = 0; i < (size_t)n * V; i++)
            logits[i] = NAN;   /* the GPU's error stays: the next step returns it */
    float cap = e->cfg.logit_softcap;
    if (cap > 0) {
        size_t total = (size_t)n * V;
        OMP_TEAM_FOR(omp_team_worth(total, 65536), size_t, i, total,
                     logits[i] = cap * tanhf(logits[i] / cap));
    }
}

int32_t infer_argmax(const float *z, int V)
{
    int32_t best = 0;
    for (int v = 1; v < V; v++)
        if (z[v] > z[best])
            best = v;
    return best;
}

double infer_logits_nll(const float *z, int V, int32_t target, int *is_argmax)
{
    int32_t best = infer_argmax(z, V);
    double mx = z[best], sum = 0;
    for (int v = 0; v < V; v++)
        sum += exp((double)z[v] - mx);
    if (is_argmax)
        *is_argmax = best == target;
    return mx + log(sum) - (double)z[target];
}

size_t infer_engine_weight_bytes(const infer_engine *e)
{
    const model_config *c = &e->cfg;
    size_t C = e->C, F = e->F, HD = e->HD, KD = e->KD;
    size_t per_layer = 2 * C + HD * C + 2 * KD * C + C * HD + (c->mlp == MLP_SWIGLU ? 3 : 2) * C * F;
    if (c->qk_norm)
        per_layer += 2 * (size_t)e->D;
    return sizeof(float) * (per_layer * c->n_layers + C + (size_t)e->V * C);
}

double infer_flops_per_token(const model_config *c, int pos)
{
    double C = c->d_model, F = c->d_ff, D = (double)c->d_model / c->n_heads;
    double HD = c->n_heads * D, KD = c->n_kv_heads * D;
    double mats = HD * C + 2 * KD * C + C * HD + (c->mlp == MLP_SWIGLU ? 3 : 2) * C * F;
    return 2.0 * (mats * c->n_layers + (double)c->vocab_size * C) +
           4.0 * c->n_layers * (pos + 1.0) * C;
}
