/* block.h - the two halves of a transformer layer, forward and backward, on
 * explicit buffers so that the training model (model.c) and a later KV-cache
 * decode path can share them:
 *   attention half:  x_out = x_in + wo(attn(rope(qknorm(wq n)), rope(qknorm(wk n)), wv n)),
 *                    n = rmsnorm(x_in, attn_norm)
 *   MLP half:        x_out = x_in + w_down(act(w_up n [, w_gate n])), n = rmsnorm(x_in, mlp_norm)
 * N = B*T rows; C = d_model, H heads, Hkv kv heads, D head dim, F = d_ff.
 * Nothing here allocates. */
#ifndef TEMPO_MODEL_BLOCK_H
#define TEMPO_MODEL_BLOCK_H

#include "core/lane_signal.h"
#include "core/op_profile.h"
#include "kernels/cpu/gemm.h"
#include "model/config.h"

/* Sizes and constants a block needs, and the model's shared step context:
 * the GEMM context every projection goes through (config + reused packing
 * workspace: no allocation once warm) and an optional op profile. */
typedef struct {
    int C, H, Hkv, D, F;
    mlp_kind mlp;
    int qk_norm;
    float eps;
    const float *rope_cos, *rope_sin; /* [context, D/2] (rope.h) */
    gemm_context *gemm;               /* [n_gemm] (>= 1): [0] for the whole team's GEMMs,
                                         [t] for thread t's when a backward shares rows out */
    int n_gemm;
    gemm_packed_b *xpack;             /* a backward's x packed once for its dW products */
    op_profile *prof;                 /* NULL: not profiling */
} model_block_dims;

/* One layer's weights (or, with the same layout, its gradients); q_norm,
 * k_norm are NULL without QK-norm, w_gate NULL without SwiGLU. */
typedef struct {
    float *attn_norm, *wq, *wk, *wv, *wo, *q_norm, *k_norm;
    float *mlp_norm, *w_up, *w_gate, *w_down;
} model_layer_weights;

/* What the forward of one layer saves for its backward. q_raw, k_raw, q_rstd,
 * k_rstd only with QK-norm; gate only with SwiGLU.
 *   xn1 [N,C], rstd1 [N], q_raw/q [N,H*D], k_raw/k/v [N,Hkv*D], q_rstd [N*H],
 *   k_rstd [N*Hkv], att [N,H*D], lse [B*H*T], xn2 [N,C], rstd2 [N],
 *   up, gate, act [N,F] */
typedef struct {
    float *xn1, *rstd1, *q_raw, *k_raw, *q_rstd, *k_rstd, *q, *k, *v, *att, *lse;
    float *xn2, *rstd2, *up, *gate, *act;
} model_layer_acts;

/* Backward scratch shared by all layers: d_xn [N,C], d_att, dq, dq_raw
 * [N,H*D], dk, dv, dk_raw [N,Hkv*D], d_act, d_up [N,F]. */
typedef struct {
    float *d_xn, *d_att, *dq, *dk, *dv, *dq_raw, *dk_raw, *d_act, *d_up;
} model_block_scratch;

/* x_in, x_out [N, C] (distinct). Saves activations into a. Positions are
 * 0..T-1 within each of the B sequences. */
void model_block_attn_forward(const model_block_dims *d, const model_layer_weights *w,
                              model_layer_acts *a, const float *x_in, float *x_out,
                              int B, int T);
void model_block_mlp_forward(const model_block_dims *d, const model_layer_weights *w,
                             model_layer_acts *a, const float *x_in, float *x_out, int N);

/* dx [N, C] holds d loss / d x_out on entry and d loss / d x_in on return
 * (the residual's identity path plus this block's). Weight gradients are
 * ACCUMULATED into g. x_in is the block's forward input. */
void model_block_attn_backward(const model_block_dims *d, const model_layer_weights *w,
                               const model_layer_weights *g, const model_layer_acts *a,
                               const model_block_scratch *s, const float *x_in, float *dx,
                               int B, int T);
void model_block_mlp_backward(const model_block_dims *d, const model_layer_weights *w,
                              const model_layer_weights *g, const model_layer_acts *a,
                              const model_block_scratch *s, const float *x_in, float *dx,
                              int N);

/* The same two backward halves split in two lanes, for a backward that
 * runs on two threads at once (model/model_backward_lanes.c): the chain of
 * input gradients (..._dx, on the thread whose GEMM context is gemm[0]) and
 * the weight gradients (..._dw, on another thread, through ctx, with
 * d->xpack its own). The chain writes into y what the weight gradients read
 * and posts sig after each stage: the MLP half twice (once w_down's output
 * gradient is copied to y, once d_up and d_gate are there), the attention
 * half three times (wo's output gradient copied, attention's input gradient
 * in s->d_att, dq, dk, dv in y). Attention's backward is shared: the chain
 * runs units [0, units) of its B * Hkv (model_block_attn_backward_units),
 * the weight lane the others, posting `back` when done, which the chain
 * waits for (back_after + 1 posts) before RoPE's backward. ..._dw waits for
 * after + 1, + 2 (+ 3) posts of sig before each of its stages. On one
 * thread the chain's half first, then the weights' (the waits met), except
 * that an attention half's units must then be run in one go: units = B *
 * Hkv. Either way the same bits as the halves above, each product whole on
 * one thread. */
typedef struct {
    float *dy_o, *dq, *dk, *dv;       /* [N, C] wo's output gradient; [N, H*D], [N, Hkv*D] x 2 */
    float *dy_down, *d_up, *d_gate;   /* [N, C] w_down's; [N, F] x 2 (d_gate: SwiGLU only) */
} model_layer_dys;

void model_block_mlp_backward_dx(const model_block_dims *d, const model_layer_weights *w,
                                 const model_layer_weights *g, const model_layer_acts *a,
                                 const model_block_scratch *s, const model_layer_dys *y,
                                 const float *x_in, float *dx, int N, lane_signal *sig);
void model_block_mlp_backward_dw(const model_block_dims *d, gemm_context *ctx, const model_layer_weights *g,
                                 const model_layer_acts *a, const model_layer_dys *y, int N,
                                 lane_signal *sig, int after);
void model_block_attn_backward_units(const model_block_dims *d, const model_layer_acts *a,
                                     const model_block_scratch *s, const model_layer_dys *y, int B, int T,
                                     int u0, int u1);
void model_block_attn_backward_dx(const model_block_dims *d, const model_layer_weights *w,
                                  const model_layer_weights *g, const model_layer_acts *a,
                                  const model_block_scratch *s, const model_layer_dys *y,
                                  const float *x_in, float *dx, int B, int T, int units, lane_signal *sig,
                                  lane_signal *back, int back_after);
void model_block_attn_backward_dw(const model_block_dims *d, gemm_context *ctx, const model_layer_weights *g,
                                  const model_layer_acts *a, const model_block_scratch *s,
                                  const model_layer_dys *y, int B, int T, int units, lane_signal *sig,
                                  int after, lane_signal *back);

#endif
