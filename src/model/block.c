/* block.c - forward and backward of the attention and MLP halves of a layer
 * (see block.h): RMSNorm, the projections by gemm_f32 (y = x W^T, weights
 * [out, in]), QK-norm, RoPE, attention (its tile products in bf16 where the
 * projections run the GEMM's bf16 mode), activations; residual adds are fused
 * into the output projection (x_in is copied to x_out by the norm's pass over
 * it, then the projection accumulates into x_out, GEMM beta = 1). The
 * backward halves also come split in two lanes (the input gradients' chain,
 * the weight gradients) for a backward on two threads at once (block.h). */
#include "model/block.h"


#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"

#include <omp.h>
#include <string.h>

/* y [N, out] = x [N, in] W^T, W [out, in] */
static void linear(const model_block_dims *d, float *y, const float *x, const float *W, int N,
                   int in, int out, float beta)
{
    OP_PROFILE_TIMED(d->prof, OP_GEMM_FWD,
                     gemm_f32_ctx(&d->gemm[0], 0, 1, N, out, in, x, in, W, in, beta, y, out));
}

/* One weight's share of a backward group: dy [N, out], W [out, in], and
 * its gradient dW [out, in]. */
typedef struct {
    const float *dy, *W;
    float *dW;
    int out;
} lin_grad;

/* dx [N, in] (= when dx_beta is 0, += when 1) sum_i dy_i W_i, on the
 * calling thread (its context is gemm[0]). */
static void input_grads(const model_block_dims *d, float *dx, float dx_beta, int N, int in,
                        const lin_grad *g, int n)
{
    for (int i = 0; i < n; i++)
        gemm_f32_ctx(&d->gemm[0], 0, 0, N, in, g[i].out, g[i].dy, g[i].out, g[i].W, in,
                     i ? 1.0f : dx_beta, dx, in);
}

/* dW_i += dy_i^T x on the calling thread, through ctx: x packed once for
 * the group's products (a thread's replica runs here, inside its region;
 * so does the two-lane backward's weight lane), unless there is no memory
 * for it (the plain products give the same sums). */
static void weight_grads(const model_block_dims *d, gemm_context *ctx, const float *x, int N, int in,
                         const lin_grad *g, int n)
{
    tempo_error err;
    int packed = n > 1 && gemm_packed_b_pack(d->xpack, &ctx->cfg, 0, N, in, x, in, &err) == 0;
    for (int i = 0; i < n; i++) {
        if (packed)
            gemm_f32_packed_b_ctx(ctx, 1, g[i].out, g[i].dy, g[i].out, d->xpack, 1.0f, g[i].dW, in);
        else
            gemm_f32_ctx(ctx, 1, 0, g[i].out, in, N, g[i].dy, g[i].out, x, in, 1.0f, g[i].dW, in);
    }
}

/* The backward of n projections of the same input x [N, in]:
 *   dx [N, in] (= when dx_beta is 0, += when 1) sum_i dy_i W_i,
 *   dW_i += dy_i^T x.
 * With a team of t > 1 threads: x is packed once (the B operand of every
 * dW_i, shared read-only), then each thread computes its own 1/t of dx's
 * rows (the whole chain of products, in order) and its own 1/t of every
 * dW_i's rows, each GEMM on that thread alone: equal shares, one parallel
 * region and no barrier inside. A GEMM's rows do not depend on which other
 * rows are computed with them, nor on the thread count, and the packed-B
 * path sums as the plain one, so the results are bitwise those of the
 * serial order below, which runs on one thread (or inside a parallel
 * region: a thread's replica), x packed once there too unless packing it
 * finds no memory. */
static void linear_backward(const model_block_dims *d, float *dx, float dx_beta, const float *x,
                            int N, int in, const lin_grad *g, int n)
{
    op_mark t0 = op_profile_begin(d->prof);
    int nt = omp_get_level() == 0 ? omp_get_max_threads() : 1;
    nt = nt < d->n_gemm ? nt : d->n_gemm;
    tempo_error err;
    if (nt > 1 && gemm_packed_b_reserve(d->xpack, &d->gemm[0].cfg, 0, N, in, &err) == 0) {
#pragma omp parallel num_threads(nt)
        {
            /* x packed by the team in the region that uses it (one team start, not two) */
            gemm_packed_b_fill_team(d->xpack, &d->gemm[0].cfg, x, in);
            int t = omp_get_thread_num(), team = omp_get_num_threads();
            gemm_context *ctx = &d->gemm[t];
            int r0 = (int)((long)N * t / team), r1 = (int)((long)N * (t + 1) / team);
            for (int i = 0; i < n && r1 > r0; i++) /* dx rows [r0, r1) */
                gemm_f32_ctx(ctx, 0, 0, r1 - r0, in, g[i].out, g[i].dy + (size_t)r0 * g[i].out,
                             g[i].out, g[i].W, in, i ? 1.0f : dx_beta, dx + (size_t)r0 * in, in);
            for (int i = 0; i < n; i++) { /* dW_i rows [o0, o1) += (dy_i^T)[o0..o1) x */
                int o0 = (int)((long)g[i].out * t / team);
                int o1 = (int)((long)g[i].out * (t + 1) / team);
                if (o1 > o0)
                    gemm_f32_packed_b_ctx(ctx, 1, o1 - o0, g[i].dy + o0, g[i].out, d->xpack,
                                          1.0f, g[i].dW + (size_t)o0 * in, in);
            }
        }
    } else {
        input_grads(d, dx, dx_beta, N, in, g, n);
        weight_grads(d, &d->gemm[0], x, N, in, g, n);
    }
    op_profile_end(d->prof, OP_GEMM_BWD, t0);
}

void model_block_attn_forward(const model_block_dims *d, const model_layer_weights *w,
                              model_layer_acts *a, const float *x_in, float *x_out,
                              int B, int T)
{
    int N = B * T, C = d->C, HD = d->H * d->D, KD = d->Hkv * d->D;
    OP_PROFILE_TIMED(d->prof, OP_NORM,
                     rmsnorm_forward_copy(a->xn1, a->rstd1, x_out, x_in, w->attn_norm, N, C, d->eps));
    if (d->qk_norm) {
        linear(d, a->q_raw, a->xn1, w->wq, N, C, HD, 0);
        linear(d, a->k_raw, a->xn1, w->wk, N, C, KD, 0);
        OP_PROFILE_TIMED(d->prof, OP_NORM,
                         rmsnorm_forward(a->q, a->q_rstd, a->q_raw, w->q_norm, N * d->H, d->D, d->eps));
        OP_PROFILE_TIMED(d->prof, OP_NORM,
                         rmsnorm_forward(a->k, a->k_rstd, a->k_raw, w->k_norm, N * d->Hkv, d->D, d->eps));
    } else {
        linear(d, a->q, a->xn1, w->wq, N, C, HD, 0);
        linear(d, a->k, a->xn1, w->wk, N, C, KD, 0);
    }
    linear(d, a->v, a->xn1, w->wv, N, C, KD, 0);
    OP_PROFILE_TIMED(d->prof, OP_ROPE,
                     rope_forward(a->q, B, T, d->H, d->D, 0, d->rope_cos, d->rope_sin));
    OP_PROFILE_TIMED(d->prof, OP_ROPE,
                     rope_forward(a->k, B, T, d->Hkv, d->D, 0, d->rope_cos, d->rope_sin));
    /* attention's tile products in bf16 where the projections' are (the model's bf16_products) */
    OP_PROFILE_TIMED(d->prof, OP_ATTN_FWD,
                     (d->gemm[0].cfg.bf16 ? attention_forward_bf16 : attention_forward)(
                         a->att, a->lse, a->q, a->k, a->v, B, T, d->H, d->Hkv, d->D));
    linear(d, x_out, a->att, w->wo, N, HD, C, 1.0f); /* x_out = x_in (copied above) + ... */
}

void model_block_mlp_forward(const model_block_dims *d, const model_layer_weights *w,
                             model_layer_acts *a, const float *x_in, float *x_out, int N)
{
    int C = d->C, F = d->F;
    size_t n = (size_t)N * F;
    OP_PROFILE_TIMED(d->prof, OP_NORM,
                     rmsnorm_forward_copy(a->xn2, a->rstd2, x_out, x_in, w->mlp_norm, N, C, d->eps));
    linear(d, a->up, a->xn2, w->w_up, N, C, F, 0);
    if (d->mlp == MLP_SWIGLU) {
        linear(d, a->gate, a->xn2, w->w_gate, N, C, F, 0);
        OP_PROFILE_TIMED(d->prof, OP_ACTIVATION, act_swiglu_forward(a->act, a->gate, a->up, n));
    } else {
        OP_PROFILE_TIMED(d->prof, OP_ACTIVATION, act_relu2_forward(a->act, a->up, n));
    }
    linear(d, x_out, a->act, w->w_down, N, F, C, 1.0f); /* x_out = x_in (copied above) + ... */
}

/* Where attention's backward writes dq (or dk): with QK-norm the scratch
 * (its backward then writes out), else out itself. */
static float *attn_grad_at(const model_block_dims *d, float *scratch, float *out)
{
    return d->qk_norm ? scratch : out;
}

/* After attention's backward: RoPE's and QK-norm's, leaving the projections'
 * output gradients in dq_out, dk_out. */
static void attn_rope_norm_backward(const model_block_dims *d, const model_layer_weights *w,
                                    const model_layer_weights *g, const model_layer_acts *a,
                                    const model_block_scratch *s, float *dq_out, float *dk_out, int B, int T)
{
    int N = B * T;
    float *dq = attn_grad_at(d, s->dq, dq_out), *dk = attn_grad_at(d, s->dk, dk_out);
    OP_PROFILE_TIMED(d->prof, OP_ROPE, rope_backward(dq, B, T, d->H, d->D, 0, d->rope_cos, d->rope_sin));
    OP_PROFILE_TIMED(d->prof, OP_ROPE, rope_backward(dk, B, T, d->Hkv, d->D, 0, d->rope_cos, d->rope_sin));
    if (d->qk_norm) {
        OP_PROFILE_TIMED(d->prof, OP_NORM,
                         rmsnorm_backward(dq_out, g->q_norm, dq, a->q_raw, w->q_norm, a->q_rstd, N * d->H,
                                          d->D, 0));
        OP_PROFILE_TIMED(d->prof, OP_NORM,
                         rmsnorm_backward(dk_out, g->k_norm, dk, a->k_raw, w->k_norm, a->k_rstd, N * d->Hkv,
                                          d->D, 0));
    }
}

void model_block_attn_backward(const model_block_dims *d, const model_layer_weights *w,
                               const model_layer_weights *g, const model_layer_acts *a,
                               const model_block_scratch *s, const float *x_in, float *dx,
                               int B, int T)
{
    int N = B * T, C = d->C, HD = d->H * d->D, KD = d->Hkv * d->D;
    lin_grad go = {dx, w->wo, g->wo, C};
    linear_backward(d, s->d_att, 0, a->att, N, HD, &go, 1);
    float *dq = d->qk_norm ? s->dq_raw : s->dq, *dk = d->qk_norm ? s->dk_raw : s->dk;
    OP_PROFILE_TIMED(d->prof, OP_ATTN_BWD,
                     (d->gemm[0].cfg.bf16 ? attention_backward_bf16 : attention_backward)(
                         attn_grad_at(d, s->dq, dq), attn_grad_at(d, s->dk, dk), s->dv, s->d_att, a->q, a->k,
                         a->v, a->att, a->lse, B, T, d->H, d->Hkv, d->D));
    attn_rope_norm_backward(d, w, g, a, s, dq, dk, B, T);
    lin_grad gqkv[3] = {{dq, w->wq, g->wq, HD}, {dk, w->wk, g->wk, KD}, {s->dv, w->wv, g->wv, KD}};
    linear_backward(d, s->d_xn, 0, a->xn1, N, C, gqkv, 3);
    OP_PROFILE_TIMED(d->prof, OP_NORM,
                     rmsnorm_backward(dx, g->attn_norm, s->d_xn, x_in, w->attn_norm, a->rstd1, N, C, 1));
}

void model_block_mlp_backward(const model_block_dims *d, const model_layer_weights *w,
                              const model_layer_weights *g, const model_layer_acts *a,
                              const model_block_scratch *s, const float *x_in, float *dx,
                              int N)
{
    int C = d->C, F = d->F;
    size_t n = (size_t)N * F;
    lin_grad gd = {dx, w->w_down, g->w_down, C};
    linear_backward(d, s->d_act, 0, a->act, N, F, &gd, 1);
    if (d->mlp == MLP_SWIGLU) {
        /* d_act becomes d_gate in place */
        OP_PROFILE_TIMED(d->prof, OP_ACTIVATION,
                         act_swiglu_backward(s->d_act, s->d_up, s->d_act, a->gate, a->up, n));
        lin_grad gug[2] = {{s->d_up, w->w_up, g->w_up, F}, {s->d_act, w->w_gate, g->w_gate, F}};
        linear_backward(d, s->d_xn, 0, a->xn2, N, C, gug, 2);
    } else {
        OP_PROFILE_TIMED(d->prof, OP_ACTIVATION, act_relu2_backward(s->d_up, s->d_act, a->up, n));
        lin_grad gu = {s->d_up, w->w_up, g->w_up, F};
        linear_backward(d, s->d_xn, 0, a->xn2, N, C, &gu, 1);
    }
    OP_PROFILE_TIMED(d->prof, OP_NORM,
                     rmsnorm_backward(dx, g->mlp_norm, s->d_xn, x_in, w->mlp_norm, a->rstd2, N, C, 1));
}

/* ---- the same halves in two lanes (block.h: model_layer_dys) ---- */

void model_block_mlp_backward_dx(const model_block_dims *d, const model_layer_weights *w,
                                 const model_layer_weights *g, const model_layer_acts *a,
                                 const model_block_scratch *s, const model_layer_dys *y,
                                 const float *x_in, float *dx, int N, lane_signal *sig)
{
    int C = d->C, F = d->F, glu = d->mlp == MLP_SWIGLU;
    size_t n = (size_t)N * F;
    memcpy(y->dy_down, dx, sizeof(float) * (size_t)N * C);
    lane_signal_post(sig);
    float *d_act = glu ? y->d_gate : s->d_act;   /* SwiGLU: d_act becomes d_gate in place */
    lin_grad gd = {dx, w->w_down, NULL, C};
    input_grads(d, d_act, 0, N, F, &gd, 1);
    if (glu)
        act_swiglu_backward(y->d_gate, y->d_up, y->d_gate, a->gate, a->up, n);
    else
        act_relu2_backward(y->d_up, d_act, a->up, n);
    lane_signal_post(sig);
    lin_grad gug[2] = {{y->d_up, w->w_up, NULL, F}, {y->d_gate, w->w_gate, NULL, F}};
    input_grads(d, s->d_xn, 0, N, C, gug, glu ? 2 : 1);
    rmsnorm_backward(dx, g->mlp_norm, s->d_xn, x_in, w->mlp_norm, a->rstd2, N, C, 1);
}

void model_block_mlp_backward_dw(const model_block_dims *d, gemm_context *ctx, const model_layer_weights *g,
                                 const model_layer_acts *a, const model_layer_dys *y, int N,
                                 lane_signal *sig, int after)
{
    int C = d->C, F = d->F, glu = d->mlp == MLP_SWIGLU;
    lane_signal_wait(sig, after + 1);
    lin_grad gd = {y->dy_down, NULL, g->w_down, C};
    weight_grads(d, ctx, a->act, N, F, &gd, 1);
    lane_signal_wait(sig, after + 2);
    lin_grad gug[2] = {{y->d_up, NULL, g->w_up, F}, {y->d_gate, NULL, g->w_gate, F}};
    weight_grads(d, ctx, a->xn2, N, C, gug, glu ? 2 : 1);
}

void model_block_attn_backward_units(const model_block_dims *d, const model_layer_acts *a,
                                     const model_block_scratch *s, const model_layer_dys *y, int B, int T,
                                     int u0, int u1)
{
    attention_backward_part(attn_grad_at(d, s->dq, y->dq), attn_grad_at(d, s->dk, y->dk), y->dv, s->d_att, a->q,
                            a->k, a->v, a->att, a->lse, B, T, d->H, d->Hkv, d->D, d->gemm[0].cfg.bf16, u0, u1);
}

void model_block_attn_backward_dx(const model_block_dims *d, const model_layer_weights *w,
                                  const model_layer_weights *g, const model_layer_acts *a,
                                  const model_block_scratch *s, const model_layer_dys *y,
                                  const float *x_in, float *dx, int B, int T, int units, lane_signal *sig,
                                  lane_signal *back, int back_after)
{
    int N = B * T, C = d->C, HD = d->H * d->D, KD = d->Hkv * d->D;
    memcpy(y->dy_o, dx, sizeof(float) * (size_t)N * C);
    lane_signal_post(sig);
    lin_grad go = {dx, w->wo, NULL, C};
    input_grads(d, s->d_att, 0, N, HD, &go, 1);
    lane_signal_post(sig);
    model_block_attn_backward_units(d, a, s, y, B, T, 0, units);
    lane_signal_wait(back, back_after + 1);   /* the other lane's units */
    attn_rope_norm_backward(d, w, g, a, s, y->dq, y->dk, B, T);
    lane_signal_post(sig);
    lin_grad gqkv[3] = {{y->dq, w->wq, NULL, HD}, {y->dk, w->wk, NULL, KD}, {y->dv, w->wv, NULL, KD}};
    input_grads(d, s->d_xn, 0, N, C, gqkv, 3);
    rmsnorm_backward(dx, g->attn_norm, s->d_xn, x_in, w->attn_norm, a->rstd1, N, C, 1);
}

void model_block_attn_backward_dw(const model_block_dims *d, gemm_context *ctx, const model_layer_weights *g,
                                  const model_layer_acts *a, const model_block_scratch *s,
                                  const model_layer_dys *y, int B, int T, int units, lane_signal *sig,
                                  int after, lane_signal *back)
{
    int N = B * T, C = d->C, HD = d->H * d->D, KD = d->Hkv * d->D;
    lane_signal_wait(sig, after + 2);   /* the chain waits for these units: first */
    model_block_attn_backward_units(d, a, s, y, B, T, units, B * d->Hkv);
    lane_signal_post(back);
    lin_grad go = {y->dy_o, NULL, g->wo, C};   /* posted before d_att */
    weight_grads(d, ctx, a->att, N, HD, &go, 1);
    lane_signal_wait(sig, after + 3);
    lin_grad gqkv[3] = {{y->dq, NULL, g->wq, HD}, {y->dk, NULL, g->wk, KD}, {y->dv, NULL, g->wv, KD}};
    weight_grads(d, ctx, a->xn1, N, C, gqkv, 3);
}
