/* bench_ops.c - timing of the step's non-GEMM kernels (see bench_ops.h). */
#include "bench/bench_ops.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_timing.h"
#include "core/rng.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/lm_head.h"
#include "kernels/cpu/optim_kernels.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "model/model.h"

/* Every buffer one run needs, sized for cfg. */
typedef struct {
    int B, T, N, C, H, Hkv, D, F, V;
    mlp_kind mlp;
    float *q, *k, *v, *o, *lse, *dq, *dk, *dv, *dout; /* attention */
    float *x, *y, *dy, *dx, *w, *dw, *rstd;            /* norm [N, C] */
    float *h, *g, *a, *dh, *dg, *da;                   /* activation [N, F] */
    float *cos_tab, *sin_tab;                          /* rope */
    float *head_w, *head_dw, *losses, *head_scratch;   /* head */
    int32_t *targets;
    float *p, *m2, *v2;                                /* AdamW over V x C */
    int bf16;                                          /* attention's products in bf16 */
    gemm_context gemm;
    lm_head_workspace ws;
} op_bufs;

static float *rand_floats(size_t n, rng_state *r, float scale)
{
    float *x = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (x)
        for (size_t i = 0; i < n; i++)
            x[i] = scale * (float)(rng_uniform(r) - 0.5);
    return x;
}

static void bufs_free(op_bufs *b)
{
    float **all[] = {&b->q, &b->k, &b->v, &b->o, &b->lse, &b->dq, &b->dk, &b->dv, &b->dout,
                     &b->x, &b->y, &b->dy, &b->dx, &b->w, &b->dw, &b->rstd, &b->h, &b->g,
                     &b->a, &b->dh, &b->dg, &b->da, &b->cos_tab, &b->sin_tab, &b->head_w,
                     &b->head_dw, &b->losses, &b->head_scratch, &b->p, &b->m2, &b->v2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
    free(b->targets);
    lm_head_workspace_free(&b->ws);
    gemm_context_free(&b->gemm);
}

static int bufs_init(op_bufs *b, const run_config *cfg)
{
    const model_config *c = &cfg->model;
    memset(b, 0, sizeof *b);
    b->B = cfg->micro_batch;
    b->T = c->context;
    b->N = b->B * b->T;
    b->C = c->d_model;
    b->H = c->n_heads;
    b->Hkv = c->n_kv_heads;
    b->D = model_config_head_dim(c);
    b->F = c->d_ff;
    b->V = c->vocab_size;
    b->mlp = c->mlp;
    rng_state r;
    rng_seed(&r, 7);
    size_t nq = (size_t)b->N * b->H * b->D, nk = (size_t)b->N * b->Hkv * b->D;
    size_t nc = (size_t)b->N * b->C, nf = (size_t)b->N * b->F, nv = (size_t)b->V * b->C;
    b->q = rand_floats(nq, &r, 1); b->k = rand_floats(nk, &r, 1); b->v = rand_floats(nk, &r, 1);
    b->o = rand_floats(nq, &r, 1); b->lse = rand_floats((size_t)b->B * b->H * b->T, &r, 1);
    b->dq = rand_floats(nq, &r, 1); b->dk = rand_floats(nk, &r, 1); b->dv = rand_floats(nk, &r, 1);
    b->dout = rand_floats(nq, &r, 1);
    b->x = rand_floats(nc, &r, 2); b->y = rand_floats(nc, &r, 1); b->dy = rand_floats(nc, &r, 1);
    b->dx = rand_floats(nc, &r, 1); b->w = rand_floats((size_t)b->C, &r, 1);
    b->dw = rand_floats((size_t)b->C, &r, 1); b->rstd = rand_floats((size_t)b->N, &r, 1);
    b->h = rand_floats(nf, &r, 2); b->g = rand_floats(nf, &r, 2); b->a = rand_floats(nf, &r, 1);
    b->dh = rand_floats(nf, &r, 1); b->dg = rand_floats(nf, &r, 1); b->da = rand_floats(nf, &r, 1);
    b->cos_tab = rand_floats((size_t)b->T * (b->D / 2), &r, 1);
    b->sin_tab = rand_floats((size_t)b->T * (b->D / 2), &r, 1);
    b->head_w = rand_floats(nv, &r, 0.1f); b->head_dw = rand_floats(nv, &r, 0);
    b->losses = rand_floats((size_t)b->N, &r, 1);
    b->head_scratch = rand_floats(lm_head_scratch_floats(MODEL_HEAD_CHUNK_ROWS, b->V), &r, 1);
    b->p = rand_floats(nv, &r, 1); b->m2 = rand_floats(nv, &r, 0); b->v2 = rand_floats(nv, &r, 0);
    b->targets = malloc(sizeof(int32_t) * (size_t)b->N);
    if (!b->q || !b->k || !b->v || !b->o || !b->lse || !b->dq || !b->dk || !b->dv || !b->dout ||
        !b->x || !b->y || !b->dy || !b->dx || !b->w || !b->dw || !b->rstd || !b->h || !b->g ||
        !b->a || !b->dh || !b->dg || !b->da || !b->cos_tab || !b->sin_tab || !b->head_w ||
        !b->head_dw || !b->losses || !b->head_scratch || !b->p || !b->m2 || !b->v2 || !b->targets)
        return -1;
    for (int i = 0; i < b->N; i++)
        b->targets[i] = (int32_t)rng_below(&r, (uint64_t)b->V);
    rope_table_init(b->cos_tab, b->sin_tab, b->T, b->D, 10000.0f);
    gemm_context_init(&b->gemm);
    b->ws.gemm = &b->gemm;
    return 0;
}

typedef void (*op_fn)(op_bufs *b);

static void run_attn_fwd(op_bufs *b)
{
    (b->bf16 ? attention_forward_bf16 : attention_forward)(b->o, b->lse, b->q, b->k, b->v, b->B, b->T, b->H,
                                                           b->Hkv, b->D);
}
static void run_attn_bwd(op_bufs *b)
{
    (b->bf16 ? attention_backward_bf16 : attention_backward)(b->dq, b->dk, b->dv, b->dout, b->q, b->k, b->v,
                                                             b->o, b->lse, b->B, b->T, b->H, b->Hkv, b->D);
}
static void run_norm_fwd(op_bufs *b)
{
    rmsnorm_forward(b->y, b->rstd, b->x, b->w, b->N, b->C, 1e-5f);
}
static void run_norm_bwd(op_bufs *b)
{
    rmsnorm_backward(b->dx, b->dw, b->dy, b->x, b->w, b->rstd, b->N, b->C, 1);
}
static void run_act_fwd(op_bufs *b)
{
    size_t n = (size_t)b->N * b->F;
    if (b->mlp == MLP_SWIGLU)
        act_swiglu_forward(b->a, b->g, b->h, n);
    else
        act_relu2_forward(b->a, b->h, n);
}
static void run_act_bwd(op_bufs *b)
{
    size_t n = (size_t)b->N * b->F;
    if (b->mlp == MLP_SWIGLU)
        act_swiglu_backward(b->dg, b->dh, b->da, b->g, b->h, n);
    else
        act_relu2_backward(b->dh, b->da, b->h, n);
}
static void run_rope(op_bufs *b)
{
    rope_forward(b->q, b->B, b->T, b->H, b->D, 0, b->cos_tab, b->sin_tab);
}
static void run_head(op_bufs *b)
{
    lm_head_loss_forward_backward(b->losses, b->dx, b->head_dw, b->x, b->head_w, b->targets,
                                  b->N, b->C, b->V, 0.0f, 1.0f / (float)b->N, b->head_scratch,
                                  MODEL_HEAD_CHUNK_ROWS, &b->ws);
}
static void run_adamw(op_bufs *b)
{
    optim_adamw_coeffs k = {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .step = 1e-9f,
                            .inv_bc2 = 1.0f, .decay = 1.0f, .gscale = 1.0f};
    optim_kernel_adamw(b->p, b->head_w, b->m2, b->v2, (size_t)b->V * b->C, &k);
}

/* One kernel on its buffers, as bench_time_best calls it. */
typedef struct {
    op_bufs *b;
    op_fn fn;
} op_call;

static void run_call(void *p)
{
    const op_call *c = p;
    c->fn(c->b);
}

static void time_op(op_bufs *b, op_fn fn, double min_seconds, bench_op_result *r)
{
    op_call call = {b, fn};
    bench_timing t;
    bench_time_best(run_call, &call, min_seconds, &t);
    r->best_s = t.best_s;
    r->reps = t.reps;
    r->other_load_cores = t.other_load_cores;
    r->contended = t.contended;
}

int bench_ops_run(const run_config *cfg, int threads, int bf16, double min_seconds, bench_op_emit emit,
                  void *emit_ctx, tempo_error *err)
{
    op_bufs b;
    if (bufs_init(&b, cfg)) {
        bufs_free(&b);
        return tempo_fail(err, "bench kernels: out of memory for the %s shapes", cfg->preset);
    }
    if (gemm_config_set_bf16(&b.gemm.cfg, bf16, err)) {
        bufs_free(&b);
        return -1;
    }
    b.bf16 = bf16 != 0;
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    double B = b.B, T = b.T, N = b.N, C = b.C, H = b.H, Hkv = b.Hkv, D = b.D, F = b.F, V = b.V;
    double att = 2.0 * B * H * T * T * D; /* the forward's two products, causal half */
    double qo = 4.0 * N * H * D, kv = 4.0 * N * Hkv * D, nf = 4.0 * N * F, nc = 4.0 * N * C;
    int swiglu = b.mlp == MLP_SWIGLU;
    struct {
        const char *name;
        op_fn fn;
        double flops, bytes;
        int shape; /* 0 attention, 1 rows x C, 2 rows x F, 3 rope, 4 head, 5 V x C */
    } ops[] = {
        {"attention_fwd", run_attn_fwd, att, 2 * qo + 2 * kv, 0},
        {"attention_bwd", run_attn_bwd, 2 * att, 4 * qo + 4 * kv, 0},
        {"rmsnorm_fwd", run_norm_fwd, 4 * N * C, 2 * nc, 1},
        {"rmsnorm_bwd", run_norm_bwd, 8 * N * C, 4 * nc, 1},
        {swiglu ? "swiglu_fwd" : "relu2_fwd", run_act_fwd, (swiglu ? 6 : 2) * N * F,
         (swiglu ? 3 : 2) * nf, 2},
        {swiglu ? "swiglu_bwd" : "relu2_bwd", run_act_bwd, (swiglu ? 10 : 3) * N * F,
         (swiglu ? 5 : 3) * nf, 2},
        {"rope_fwd", run_rope, 3 * N * H * D, 2 * qo, 3}, /* per pair: 4 mul + 2 add */
        {"head_xent_train", run_head, 6 * N * V * C, 4 * (2 * N * C + 2 * V * C), 4},
        {"adamw", run_adamw, 12 * V * C, 4 * 7 * V * C, 5},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        bench_op_result r;
        memset(&r, 0, sizeof r);
        r.kernel = ops[i].name;
        r.flops = ops[i].flops;
        r.bytes = ops[i].bytes;
        r.bf16 = (ops[i].shape == 0 && b.bf16 && attention_bf16_runs(b.T, b.D)) ||
                 (ops[i].shape == 4 && b.bf16);
        switch (ops[i].shape) {
        case 0: snprintf(r.shape, sizeof r.shape, "B%d T%d H%d Hkv%d D%d", b.B, b.T, b.H, b.Hkv, b.D); break;
        case 1: snprintf(r.shape, sizeof r.shape, "N%d C%d", b.N, b.C); break;
        case 2: snprintf(r.shape, sizeof r.shape, "N%d F%d", b.N, b.F); break;
        case 3: snprintf(r.shape, sizeof r.shape, "B%d T%d H%d D%d", b.B, b.T, b.H, b.D); break;
        case 4: snprintf(r.shape, sizeof r.shape, "N%d C%d V%d chunk%d", b.N, b.C, b.V,
                         MODEL_HEAD_CHUNK_ROWS); break;
        default: snprintf(r.shape, sizeof r.shape, "n%d", b.V * b.C); break;
        }
        time_op(&b, ops[i].fn, min_seconds, &r);
        emit(emit_ctx, &r);
    }
    omp_set_num_threads(saved);
    bufs_free(&b);
    return 0;
}

void bench_op_json(jsonw *w, const char *preset, int threads, const bench_op_result *r,
                   double peak_gflops, double bandwidth_gbs)
{
    double gflops = r->best_s > 0 ? r->flops / r->best_s * 1e-9 : 0;
    double gbps = r->best_s > 0 ? r->bytes / r->best_s * 1e-9 : 0;
    jsonw_object_begin(w);
    jsonw_field_string(w, "kernel", r->kernel);
    jsonw_field_string(w, "shape", r->shape);
    jsonw_field_string(w, "op", preset);
    jsonw_field_int(w, "threads", threads);
    jsonw_field_string(w, "precision", r->bf16 ? "bf16" : "fp32");
    jsonw_field_digits(w, "gflops", gflops, 2);
    jsonw_field_digits(w, "peak_gflops", peak_gflops > 0 ? peak_gflops : NAN, 2);
    jsonw_field_digits(w, "efficiency", peak_gflops > 0 ? gflops / peak_gflops : NAN, 3);
    jsonw_field_digits(w, "gbps", gbps, 2);
    jsonw_field_digits(w, "bandwidth_gbs", bandwidth_gbs > 0 ? bandwidth_gbs : NAN, 2);
    jsonw_field_digits(w, "bw_efficiency", bandwidth_gbs > 0 ? gbps / bandwidth_gbs : NAN, 3);
    jsonw_field_digits(w, "us", r->best_s * 1e6, 1);
    jsonw_field_digits(w, "other_load_cores", r->other_load_cores, 2);
    jsonw_field_bool(w, "contended", r->contended);
    jsonw_object_end(w);
}
