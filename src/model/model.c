/* model.c - model lifecycle (see model.h): the parameter layout (tensor
 * table), the allocation of parameters, gradients and the activation arena,
 * initialisation and accessors. The forward and backward passes are in
 * model_pass.c; the per-layer math in block.c. */
#include "model/model_internal.h"
#include "core/omp_team.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/rng.h"
#include "kernels/cpu/kernel_path.h"
#include "kernels/cpu/lm_head.h"
#include "kernels/cpu/optim_kernels.h"
#include "kernels/cpu/rope.h"
#include "model/model_cuda.h"

/* ---------------- parameter layout ---------------- */

/* The layout as it is built: the table so far and the floats it covers. */
typedef struct {
    model_tensor *t; /* NULL: count only */
    int n, max;
    size_t n_params;
} layout_cursor;

static void add_tensor(layout_cursor *lc, tensor_kind kind, int s0, int s1, const char *fmt, int layer)
{
    size_t numel = (size_t)s0 * (size_t)(s1 > 0 ? s1 : 1);
    if (lc->t && lc->n < lc->max) {
        model_tensor *t = &lc->t[lc->n];
        snprintf(t->name, sizeof t->name, fmt, layer);
        t->kind = kind;
        t->ndim = s1 > 0 ? 2 : 1;
        t->shape[0] = s0;
        t->shape[1] = s1 > 0 ? s1 : 0;
        t->numel = numel;
        t->offset = lc->n_params;
    }
    lc->n++;
    lc->n_params += numel;
}

int model_layout(const model_config *c, model_tensor *tensors, int max, size_t *n_params)
{
    layout_cursor lc = {tensors, 0, max, 0};
    int C = c->d_model, D = model_config_head_dim(c), HD = c->n_heads * D, KD = c->n_kv_heads * D;
    int F = c->d_ff, V = c->vocab_size;
    add_tensor(&lc, TENSOR_EMBEDDING, V, C, "tok_emb", 0);
    for (int l = 0; l < c->n_layers; l++) {
        add_tensor(&lc, TENSOR_NORM, C, 0, "layers.%d.attn_norm", l);
        add_tensor(&lc, TENSOR_MATRIX, HD, C, "layers.%d.wq", l);
        add_tensor(&lc, TENSOR_MATRIX, KD, C, "layers.%d.wk", l);
        add_tensor(&lc, TENSOR_MATRIX, KD, C, "layers.%d.wv", l);
        add_tensor(&lc, TENSOR_MATRIX, C, HD, "layers.%d.wo", l);
        if (c->qk_norm) {
            add_tensor(&lc, TENSOR_NORM, D, 0, "layers.%d.q_norm", l);
            add_tensor(&lc, TENSOR_NORM, D, 0, "layers.%d.k_norm", l);
        }
        add_tensor(&lc, TENSOR_NORM, C, 0, "layers.%d.mlp_norm", l);
        add_tensor(&lc, TENSOR_MATRIX, F, C, "layers.%d.w_up", l);
        if (c->mlp == MLP_SWIGLU)
            add_tensor(&lc, TENSOR_MATRIX, F, C, "layers.%d.w_gate", l);
        add_tensor(&lc, TENSOR_MATRIX, C, F, "layers.%d.w_down", l);
    }
    add_tensor(&lc, TENSOR_NORM, C, 0, "final_norm", 0);
    if (!c->tied_head)
        add_tensor(&lc, TENSOR_HEAD, V, C, "head", 0);
    if (n_params)
        *n_params = lc.n_params;
    return lc.n;
}

/* Fills m->tensors in buffer order (see model.h for names and shapes). */
static void build_layout(model *m)
{
    m->n_tensors = model_layout(&m->cfg, m->tensors, MODEL_MAX_TENSORS(m->cfg.n_layers), &m->n_params);
}

int model_find_tensor(const model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0)
            return i;
    return -1;
}

/* Pointer to tensor `name` (formatted with layer) in buf, NULL if absent. */
static float *tensor_ptr(const model *m, float *buf, const char *fmt, int layer)
{
    char name[64];
    snprintf(name, sizeof name, fmt, layer);
    int i = model_find_tensor(m, name);
    return i < 0 ? NULL : buf + m->tensors[i].offset;
}

static void layer_views(const model *m, float *buf, model_layer_weights *w, int l)
{
    w->attn_norm = tensor_ptr(m, buf, "layers.%d.attn_norm", l);
    w->wq = tensor_ptr(m, buf, "layers.%d.wq", l);
    w->wk = tensor_ptr(m, buf, "layers.%d.wk", l);
    w->wv = tensor_ptr(m, buf, "layers.%d.wv", l);
    w->wo = tensor_ptr(m, buf, "layers.%d.wo", l);
    w->q_norm = tensor_ptr(m, buf, "layers.%d.q_norm", l);
    w->k_norm = tensor_ptr(m, buf, "layers.%d.k_norm", l);
    w->mlp_norm = tensor_ptr(m, buf, "layers.%d.mlp_norm", l);
    w->w_up = tensor_ptr(m, buf, "layers.%d.w_up", l);
    w->w_gate = tensor_ptr(m, buf, "layers.%d.w_gate", l);
    w->w_down = tensor_ptr(m, buf, "layers.%d.w_down", l);
}

/* ---------------- activation arena ---------------- */

typedef struct {
    float *base; /* NULL while counting */
    size_t used; /* floats */
} arena_cursor;

/* n floats, rounded up to 16 (64 bytes) so every buffer starts aligned. */
static float *take(arena_cursor *a, size_t n)
{
    float *p = a->base ? a->base + a->used : NULL;
    a->used += (n + 15) / 16 * 16;
    return p;
}

/* Carves every activation buffer from a (called once to count, once to assign). */
static void carve(model *m, arena_cursor *a)
{
    const model_config *c = &m->cfg;
    if (m->host_only) { /* the passes run on a GPU: only what they hand back */
        size_t N = (size_t)m->max_batch * c->context;
        m->losses = take(a, N);
        m->top_logprob = take(a, N);
        m->top_id = (int32_t *)(void *)take(a, N);
        m->log_norm = take(a, N);
        m->tokens = (int32_t *)take(a, N);
        m->targets = (int32_t *)take(a, N);
        return;
    }
    size_t N = (size_t)m->max_batch * c->context, C = c->d_model, F = c->d_ff;
    size_t V = c->vocab_size, D = m->dims.D, H = c->n_heads, Hkv = c->n_kv_heads;
    size_t HD = H * D, KD = Hkv * D;
    int qk = c->qk_norm, glu = c->mlp == MLP_SWIGLU;
    m->rope_cos = take(a, (size_t)c->context * D / 2);
    m->rope_sin = take(a, (size_t)c->context * D / 2);
    m->res = take(a, (2 * (size_t)c->n_layers + 1) * N * C);
    for (int l = 0; l < c->n_layers; l++) {
        model_layer_acts *t = &m->acts[l];
        t->xn1 = take(a, N * C);
        t->rstd1 = take(a, N);
        t->q_raw = qk ? take(a, N * HD) : NULL;
        t->k_raw = qk ? take(a, N * KD) : NULL;
        t->q_rstd = qk ? take(a, N * H) : NULL;
        t->k_rstd = qk ? take(a, N * Hkv) : NULL;
        t->q = take(a, N * HD);
        t->k = take(a, N * KD);
        t->v = take(a, N * KD);
        t->att = take(a, N * HD);
        t->lse = take(a, N * H);
        t->xn2 = take(a, N * C);
        t->rstd2 = take(a, N);
        t->up = take(a, N * F);
        t->gate = glu ? take(a, N * F) : NULL;
        t->act = take(a, N * F);
    }
    model_block_scratch *s = &m->scratch;
    s->d_xn = take(a, N * C);
    s->d_att = take(a, N * HD);
    s->dq = take(a, N * HD);
    s->dk = take(a, N * KD);
    s->dv = take(a, N * KD);
    s->dq_raw = qk ? take(a, N * HD) : NULL;
    s->dk_raw = qk ? take(a, N * KD) : NULL;
    s->d_act = take(a, N * F);
    s->d_up = take(a, N * F);
    m->xf = take(a, N * C);
    m->rstd_f = take(a, N);
    m->dxf = take(a, N * C);
    m->dres = take(a, N * C);
    m->losses = take(a, N);
    m->top_logprob = take(a, N);
    m->top_id = (int32_t *)(void *)take(a, N);   /* ints in float-sized slots */
    m->log_norm = take(a, N);
    m->head_scratch = take(a, lm_head_scratch_floats(MODEL_HEAD_CHUNK_ROWS, (int)V));
    m->head_dw = take(a, V * C);
    m->tokens = (int32_t *)take(a, N); /* int32 and float have the same size */
    m->targets = (int32_t *)take(a, N);
}

/* Buffers of a huge page or more (the activations' arena: 190 MB for
 * cpu-default's batch; the parameters and gradients) are aligned to 2 MB and
 * advised for transparent huge pages, which these machines give only on
 * request (THP "madvise"): the step streams its activations, and with 4 KB
 * pages every 4 KB of a stream is a TLB entry. Measured on cpu-default's
 * step (Zen 3): RMSNorm 10.6-11.0 against 11.3-12.5 ms, the one-thread step
 * 0.6-0.7 % faster in eight of eight alternations, two threads 2.6 % faster
 * in five and level in four more (lab notebook, 2026-12-07). */
#define HUGE_PAGE ((size_t)2 << 20)

static float *alloc_floats(size_t n)
{
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    float *p;
    if (bytes >= HUGE_PAGE) {
        bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        p = aligned_alloc(HUGE_PAGE, bytes);
#ifdef MADV_HUGEPAGE
        if (p)
            madvise(p, bytes, MADV_HUGEPAGE); /* advice: without it, ordinary pages */
#endif
    } else {
        p = aligned_alloc(64, bytes ? bytes : 64);
    }
    if (p)
        memset(p, 0, bytes); /* after the advice: the first touch faults in huge pages */
    return p;
}

/* ---------------- lifecycle ---------------- */

static int create(model **out, const model_config *cfg, int max_batch, int host_only, float *shared_params,
                  tempo_error *err);

int model_create(model **out, const model_config *cfg, int max_batch, tempo_error *err)
{
    return create(out, cfg, max_batch, 0, NULL, err);
}

int model_create_for_device(model **out, const model_config *cfg, int max_batch, tempo_error *err)
{
    return create(out, cfg, max_batch, 1, NULL, err);
}

int model_create_replica(model **out, model *base, int max_batch, tempo_error *err)
{
    *out = NULL;
    if (base->host_only || base->device)
        return tempo_usage(err, "model: a replica shares parameters in host memory; this model's are on a GPU");
    return create(out, &base->cfg, max_batch, 0, base->params, err);
}

void model_replica_share(int rows, int s, int n, int *first, int *end)
{
    *first = (int)((long)rows * s / n);
    *end = (int)((long)rows * (s + 1) / n);
}

/* shared_params: NULL, or the parameter buffer to use (a replica's). */
static int create(model **out, const model_config *cfg, int max_batch, int host_only, float *shared_params,
                  tempo_error *err)
{
    *out = NULL;
    if (model_config_validate(cfg, err) != 0)
        return -1;
    if (max_batch < 1)
        return tempo_usage(err, "model: max_batch %d < 1", max_batch);
    if ((double)max_batch * cfg->context * cfg->n_heads > 2147483647.0)
        return tempo_usage(err, "model: max_batch %d x context %d is too large", max_batch,
                           cfg->context);
    model *m = calloc(1, sizeof *m);
    if (!m)
        return tempo_fail(err, "model: out of memory");
    m->cfg = *cfg;
    m->max_batch = max_batch;
    m->training = 1;
    m->host_only = host_only;
    int D = model_config_head_dim(cfg);
    m->dims = (model_block_dims){.C = cfg->d_model, .H = cfg->n_heads, .Hkv = cfg->n_kv_heads,
                                 .D = D, .F = cfg->d_ff, .mlp = cfg->mlp,
                                 .qk_norm = cfg->qk_norm, .eps = cfg->norm_eps,
                                 .xpack = &m->xpack};
    m->n_gemm = omp_get_max_threads() > 1 ? omp_get_max_threads() : 1;
    m->gemm = gemm_context_array_new(m->n_gemm, NULL);
    if (!m->gemm) {
        free(m);
        return tempo_fail(err, "model: out of memory");
    }
    /* bf16 products where the CPU can (model_products_bf16 says whether) */
    for (int t = 0; cfg->bf16_products && t < m->n_gemm; t++) {
        tempo_error ignored;
        if (gemm_config_set_bf16(&m->gemm[t].cfg, 1, &ignored))
            break;
    }
    m->dims.gemm = m->gemm;
    m->dims.n_gemm = m->n_gemm;
    m->head_ws.gemm = &m->gemm[0];
    m->tensors = calloc((size_t)MODEL_MAX_TENSORS(cfg->n_layers), sizeof *m->tensors);
    m->lw = calloc((size_t)cfg->n_layers, sizeof *m->lw);
    m->lg = calloc((size_t)cfg->n_layers, sizeof *m->lg);
    m->acts = calloc((size_t)cfg->n_layers, sizeof *m->acts);
    if (!m->tensors || !m->lw || !m->lg || !m->acts) {
        model_free(m);
        return tempo_fail(err, "model: out of memory");
    }
    build_layout(m);
    arena_cursor count = {NULL, 0};
    carve(m, &count);
    m->arena_floats = count.used;
    m->params_borrowed = shared_params != NULL;
    m->params = shared_params ? shared_params : alloc_floats(m->n_params);
    m->grads = alloc_floats(m->n_params);
    m->arena = alloc_floats(m->arena_floats);
    if (!m->params || !m->grads || !m->arena) {
        size_t mib = (((2 - (size_t)m->params_borrowed) * m->n_params + m->arena_floats) * sizeof(float)) >> 20;
        model_free(m);
        return tempo_fail(err, "model: out of memory allocating %zu MiB", mib);
    }
    arena_cursor assign = {m->arena, 0};
    carve(m, &assign);
    m->head_ws.top_logprob = m->top_logprob;
    m->head_ws.top_id = m->top_id;
    m->head_ws.log_norm = m->log_norm;
    m->head_ws.beta = 1;
    if (!host_only)
        rope_table_init(m->rope_cos, m->rope_sin, cfg->context, D, cfg->rope_theta);
    m->dims.rope_cos = m->rope_cos;
    m->dims.rope_sin = m->rope_sin;
    for (int l = 0; l < cfg->n_layers; l++) {
        layer_views(m, m->params, &m->lw[l], l);
        layer_views(m, m->grads, &m->lg[l], l);
    }
    m->tok_emb = tensor_ptr(m, m->params, "tok_emb", 0);
    m->g_tok_emb = tensor_ptr(m, m->grads, "tok_emb", 0);
    m->final_norm = tensor_ptr(m, m->params, "final_norm", 0);
    m->g_final_norm = tensor_ptr(m, m->grads, "final_norm", 0);
    m->head = cfg->tied_head ? m->tok_emb : tensor_ptr(m, m->params, "head", 0);
    m->g_head = cfg->tied_head ? m->g_tok_emb : tensor_ptr(m, m->grads, "head", 0);
    *out = m;
    return 0;
}

void model_free(model *m)
{
    if (!m)
        return;
    if (!m->params_borrowed)
        free(m->params);
    free(m->grads);
    free(m->arena);
    free(m->tensors);
    free(m->lw);
    free(m->lg);
    free(m->acts);
    free(m->saved_params);
    lm_head_workspace_free(&m->head_ws);
    gemm_context_array_free(m->gemm, m->n_gemm);
    gemm_packed_b_free(&m->xpack);
    free(m->lane_buf);
    free(m->lane_dys);
    free(m);
}

/* ---------------- accessors ---------------- */

const model_config *model_get_config(const model *m) { return &m->cfg; }
int model_max_batch(const model *m) { return m->max_batch; }
size_t model_num_params(const model *m) { return m->n_params; }
float *model_params(model *m) { return m->params; }
float *model_grads(model *m) { return m->grads; }
int model_num_tensors(const model *m) { return m->n_tensors; }
const float *model_token_losses(const model *m) { return m->losses; }
const float *model_token_top_logprob(const model *m) { return m->top_logprob; }
const int32_t *model_token_top_id(const model *m) { return m->top_id; }
const float *model_token_log_norm(const model *m) { return m->log_norm; }
int model_bf16_available(void)
{
    return kernel_path_bf16_now();   /* the GEMM's own rule (its can_bf16), from cpuid alone */
}

int model_config_products_bf16(const model_config *c)
{
    return c->bf16_products != MODEL_PRODUCTS_FP32 && model_bf16_available();
}

int model_products_bf16(const model *m)
{
    return m->n_gemm > 0 && m->gemm[0].cfg.bf16;
}

void model_set_training(model *m, int training) { m->training = training != 0; }

void model_set_profile(model *m, op_profile *prof)
{
    m->prof = prof;
    m->dims.prof = prof;
}

const model_tensor *model_tensor_at(const model *m, int i)
{
    return i >= 0 && i < m->n_tensors ? &m->tensors[i] : NULL;
}

size_t model_activation_bytes(const model *m)
{
    return m->arena_floats * sizeof(float);
}

void model_zero_grad(model *m)
{
    if (m->device)
        model_cuda_zero_grad(m->device);
    else
        memset(m->grads, 0, m->n_params * sizeof(float));
}

/* ---------------- a GPU attached ---------------- */

void model_attach_device(model *m, struct model_cuda *gm)
{
    m->device = gm;
    m->device_error[0] = 0;
}

struct model_cuda *model_device(const model *m) { return m->device; }

const char *model_device_error(const model *m) { return m->device_error[0] ? m->device_error : NULL; }

int model_params_to_host(model *m, tempo_error *err)
{
    return m->device ? model_cuda_get_params(m->device, m->params, err) : 0;
}

int model_params_to_device(model *m, tempo_error *err)
{
    return m->device ? model_cuda_set_params(m->device, m->params, err) : 0;
}

double model_sgd_step(model *m, double lr, double clip)
{
    if (m->device) {
        tempo_error e;
        double norm = model_cuda_sgd_step(m->device, lr, clip, &e);
        if (norm < 0) {
            snprintf(m->device_error, sizeof m->device_error, "%s", e.msg);
            return NAN;
        }
        return norm;
    }
    for (int i = 0; i < m->n_tensors; i++)   /* the norms' gains stay as trained (model.h) */
        if (m->tensors[i].kind == TENSOR_NORM)
            memset(m->grads + m->tensors[i].offset, 0, sizeof(float) * m->tensors[i].numel);
    float *p = m->params;
    const float *g = m->grads;
    size_t n = m->n_params;
    double norm = sqrt(optim_kernel_sum_squares(g, n));
    if (!isfinite(norm))
        return NAN;
    if (norm > clip)
        lr *= clip / norm;
    float r = (float)lr;
    OMP_TEAM_FOR(omp_team_worth(n, 65536), size_t, k, n, p[k] -= r * g[k]);
    return norm;
}

int model_params_save(model *m, tempo_error *err)
{
    if (m->device)
        return model_cuda_params_save(m->device, err);
    if (!m->saved_params && !(m->saved_params = malloc(sizeof(float) * (m->n_params ? m->n_params : 1))))
        return tempo_fail(err, "model: out of memory for a copy of the %zu parameters", m->n_params);
    memcpy(m->saved_params, m->params, sizeof(float) * m->n_params);
    return 0;
}

int model_params_restore(model *m, tempo_error *err)
{
    if (m->device)
        return model_cuda_params_restore(m->device, err);
    if (!m->saved_params)
        return tempo_fail(err, "model: no saved parameters to restore");
    memcpy(m->params, m->saved_params, sizeof(float) * m->n_params);
    return 0;
}

/* ---------------- initialisation ---------------- */

void model_init(model *m, uint64_t seed)
{
    float out_std = m->cfg.init_std / sqrtf(2.0f * (float)m->cfg.n_layers);
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        if (t->kind == TENSOR_NORM) {
            for (size_t j = 0; j < t->numel; j++)
                p[j] = 1.0f;
            continue;
        }
        const char *dot = strrchr(t->name, '.');
        int is_out = dot && (strcmp(dot, ".wo") == 0 || strcmp(dot, ".w_down") == 0);
        double std = is_out ? out_std : m->cfg.init_std;
        rng_state r; /* one stream per tensor: a layout change does not shift the others */
        rng_seed(&r, seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1)));
        for (size_t j = 0; j < t->numel; j++)
            p[j] = (float)(std * rng_normal(&r));
    }
}

void model_set_mixture(model *m, const float *b, float a)
{
    m->head_ws.mix_b = b;
    m->head_ws.mix_a = a;
}

void model_mixture(const model *m, const float **b, float *a)
{
    *b = m->head_ws.mix_b;
    *a = m->head_ws.mix_a;
}
