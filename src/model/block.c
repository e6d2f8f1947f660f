/* block.c - forward and backward of the attention and MLP halves of a layer
 * (see block.h): RMSNorm, the projections by gemm_f32 (y = x W^T, weights
 * [out, in]), QK-norm, RoPE, attention, activations; residual adds are fused
 * into the output projection (x_in is copied to x_out by the norm's pass over
 * it, then the projection accumulates into x_out, GEMM beta = 1). */
#include "model/block.h"


#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"

/* y [N, out] = x [N, in] W^T, W [out, in] */
static void linear(float *y, const float *x, const float *W, int N, int in, int out, float beta)
{
    gemm_f32(0, 1, N, out, in, x, in, W, in, beta, y, out);
}

/* dx [N, in] (= or +=) dy [N, out] W;  dW [out, in] += dy^T x */
static void linear_backward(float *dx, float dx_beta, float *dW, const float *dy,
                            const float *x, const float *W, int N, int in, int out)
{
    gemm_f32(0, 0, N, in, out, dy, out, W, in, dx_beta, dx, in);
    gemm_f32(1, 0, out, in, N, dy, out, x, in, 1.0f, dW, in);
}

void model_block_attn_forward(const model_block_dims *d, const model_layer_weights *w,
                              model_layer_acts *a, const float *x_in, float *x_out,
                              int B, int T)
{
    int N = B * T, C = d->C, HD = d->H * d->D, KD = d->Hkv * d->D;
    rmsnorm_forward_copy(a->xn1, a->rstd1, x_out, x_in, w->attn_norm, N, C, d->eps);
    if (d->qk_norm) {
        linear(a->q_raw, a->xn1, w->wq, N, C, HD, 0);
        linear(a->k_raw, a->xn1, w->wk, N, C, KD, 0);
        rmsnorm_forward(a->q, a->q_rstd, a->q_raw, w->q_norm, N * d->H, d->D, d->eps);
        rmsnorm_forward(a->k, a->k_rstd, a->k_raw, w->k_norm, N * d->Hkv, d->D, d->eps);
    } else {
        linear(a->q, a->xn1, w->wq, N, C, HD, 0);
        linear(a->k, a->xn1, w->wk, N, C, KD, 0);
    }
    linear(a->v, a->xn1, w->wv, N, C, KD, 0);
    rope_forward(a->q, B, T, d->H, d->D, 0, d->rope_cos, d->rope_sin);
    rope_forward(a->k, B, T, d->Hkv, d->D, 0, d->rope_cos, d->rope_sin);
    attention_forward(a->att, a->lse, a->q, a->k, a->v, B, T, d->H, d->Hkv, d->D);
    linear(x_out, a->att, w->wo, N, HD, C, 1.0f); /* x_out = x_in (copied above) + ... */
}

void model_block_mlp_forward(const model_block_dims *d, const model_layer_weights *w,
                             model_layer_acts *a, const float *x_in, float *x_out, int N)
{
    int C = d->C, F = d->F;
    size_t n = (size_t)N * F;
    rmsnorm_forward_copy(a->xn2, a->rstd2, x_out, x_in, w->mlp_norm, N, C, d->eps);
    linear(a->up, a->xn2, w->w_up, N, C, F, 0);
    if (d->mlp == MLP_SWIGLU) {
        linear(a->gate, a->xn2, w->w_gate, N, C, F, 0);
        act_swiglu_forward(a->act, a->gate, a->up, n);
    } else {
        act_relu2_forward(a->act, a->up, n);
    }
    linear(x_out, a->act, w->w_down, N, F, C, 1.0f); /* x_out = x_in (copied above) + ... */
}

void model_block_attn_backward(const model_block_dims *d, const model_layer_weights *w,
                               const model_layer_weights *g, const model_layer_acts *a,
                               const model_block_scratch *s, const float *x_in, float *dx,
                               int B, int T)
{
    int N = B * T, C = d->C, HD = d->H * d->D, KD = d->Hkv * d->D;
    linear_backward(s->d_att, 0, g->wo, dx, a->att, w->wo, N, HD, C);
    attention_backward(s->dq, s->dk, s->dv, s->d_att, a->q, a->k, a->v, a->att, a->lse, B, T,
                       d->H, d->Hkv, d->D);
    rope_backward(s->dq, B, T, d->H, d->D, 0, d->rope_cos, d->rope_sin);
    rope_backward(s->dk, B, T, d->Hkv, d->D, 0, d->rope_cos, d->rope_sin);
    const float *dq = s->dq, *dk = s->dk;
    if (d->qk_norm) {
        rmsnorm_backward(s->dq_raw, g->q_norm, s->dq, a->q_raw, w->q_norm, a->q_rstd, N * d->H,
                         d->D, 0);
        rmsnorm_backward(s->dk_raw, g->k_norm, s->dk, a->k_raw, w->k_norm, a->k_rstd,
                         N * d->Hkv, d->D, 0);
        dq = s->dq_raw;
        dk = s->dk_raw;
    }
    linear_backward(s->d_xn, 0, g->wq, dq, a->xn1, w->wq, N, C, HD);
    linear_backward(s->d_xn, 1, g->wk, dk, a->xn1, w->wk, N, C, KD);
    linear_backward(s->d_xn, 1, g->wv, s->dv, a->xn1, w->wv, N, C, KD);
    rmsnorm_backward(dx, g->attn_norm, s->d_xn, x_in, w->attn_norm, a->rstd1, N, C, 1);
}

void model_block_mlp_backward(const model_block_dims *d, const model_layer_weights *w,
                              const model_layer_weights *g, const model_layer_acts *a,
                              const model_block_scratch *s, const float *x_in, float *dx,
                              int N)
{
    int C = d->C, F = d->F;
    size_t n = (size_t)N * F;
    linear_backward(s->d_act, 0, g->w_down, dx, a->act, w->w_down, N, F, C);
    if (d->mlp == MLP_SWIGLU) {
        /* d_act becomes d_gate in place */
        act_swiglu_backward(s->d_act, s->d_up, s->d_act, a->gate, a->up, n);
        linear_backward(s->d_xn, 0, g->w_up, s->d_up, a->xn2, w->w_up, N, C, F);
        linear_backward(s->d_xn, 1, g->w_gate, s->d_act, a->xn2, w->w_gate, N, C, F);
    } else {
        act_relu2_backward(s->d_up, s->d_act, a->up, n);
        linear_backward(s->d_xn, 0, g->w_up, s->d_up, a->xn2, w->w_up, N, C, F);
    }
    rmsnorm_backward(dx, g->mlp_norm, s->d_xn, x_in, w->mlp_norm, a->rstd2, N, C, 1);
}
