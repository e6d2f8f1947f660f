/* gpu_ops.h - the GPU's operations, one C function per kernel family, with
 * the contracts of their CPU references in src/kernels/cpu (named there
 * rmsnorm_forward, attention_forward, ...; here cuda_*). Arguments are
 * device pointers (gpu_ptr) and sizes; `t` is the storage type of the
 * activations the operation reads and writes (GPU_F32, or GPU_BF16 in bf16
 * mode: math is always fp32). Everything is queued on the compute stream
 * (gpu.h); nothing allocates. Where the CPU contract overwrites, so does
 * this one; where it accumulates, this accumulates. */
#ifndef TEMPO_GPU_OPS_H
#define TEMPO_GPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "kernels/cpu/optim_kernels.h"
#include "kernels/cuda/gpu.h"
#include "kernels/cuda/gpu_gemm.h"

/* embedding.h: out [N, C] fp32 = emb[tokens[n]]. tokens: int32 on the GPU. */
void cuda_embedding_forward(gpu *g, gpu_ptr out, gpu_ptr tokens, gpu_ptr emb, int N, int C);
/* The backward's plan, made on the host from the batch's tokens: order [N]
 * (positions sorted by token, ties by position), seg [n_seg + 1], seg_token
 * [n_seg]; count is V ints of scratch. Returns n_seg. */
int cuda_embedding_segments(const int32_t *tokens, int N, int V, int32_t *order, int32_t *seg,
                            int32_t *seg_token, int32_t *count);
/* demb [V, C] += the scatter of dout [N, C] (fp32), in position order per
 * token (deterministic; bitwise embedding_backward's order). */
void cuda_embedding_backward(gpu *g, gpu_ptr demb, gpu_ptr order, gpu_ptr seg, gpu_ptr seg_token, int n_seg,
                             gpu_ptr dout, int C);

/* rmsnorm.h: y [N, C] (tout) and rstd [N] from x (tin); copy [N, C] fp32 (0:
 * none) gets x too. (tin, tout): (F32, F32), (F32, BF16) or (BF16, BF16). */
void cuda_rmsnorm_forward(gpu *g, gpu_dtype tin, gpu_dtype tout, gpu_ptr y, gpu_ptr rstd, gpu_ptr copy, gpu_ptr x,
                          gpu_ptr w, int N, int C, float eps);
/* dx (= or += with accumulate) and dw (+=) as rmsnorm_backward, dy, x, dx all
 * of type t. partial: cuda_rmsnorm_partial_floats(N, C) floats of scratch.
 * dx_low: 0, or [N, C] bf16 that gets dx rounded (t fp32: the residual
 * gradient's copy for bf16 mode's products). */
void cuda_rmsnorm_backward(gpu *g, gpu_dtype t, gpu_ptr dx, gpu_ptr dw, gpu_ptr dy, gpu_ptr x, gpu_ptr w,
                           gpu_ptr rstd, int N, int C, int accumulate, gpu_ptr partial, gpu_ptr dx_low);
size_t cuda_rmsnorm_partial_floats(int N, int C);

/* rope.h: x [B, T, H, D] rotated in place (backward: rotated back); cos,
 * sin: rope_table_init's tables on the GPU. */
void cuda_rope(gpu *g, gpu_dtype t, gpu_ptr x, int B, int T, int H, int D, int pos0, gpu_ptr cos_tab,
               gpu_ptr sin_tab, int backward);

/* activation.h */
void cuda_relu2_forward(gpu *g, gpu_dtype t, gpu_ptr a, gpu_ptr h, size_t n);
void cuda_relu2_backward(gpu *g, gpu_dtype t, gpu_ptr dh, gpu_ptr da, gpu_ptr h, size_t n);
void cuda_swiglu_forward(gpu *g, gpu_dtype t, gpu_ptr a, gpu_ptr gate, gpu_ptr up, size_t n);
void cuda_swiglu_backward(gpu *g, gpu_dtype t, gpu_ptr dg, gpu_ptr du, gpu_ptr da, gpu_ptr gate, gpu_ptr up,
                          size_t n);

/* attention.h's whole-batch contracts. Head dims up to 128. Call
 * cuda_attention_prepare once per head dim first (shared-memory limits). */
int cuda_attention_prepare(gpu *g, int D, tempo_error *err);
void cuda_attention_forward(gpu *g, gpu_dtype t, gpu_ptr o, gpu_ptr lse, gpu_ptr q, gpu_ptr k, gpu_ptr v, int B,
                            int T, int H, int Hkv, int D);
/* dq, dk, dv overwritten; delta: B*H*T floats of scratch. */
void cuda_attention_backward(gpu *g, gpu_dtype t, gpu_ptr dq, gpu_ptr dk, gpu_ptr dv, gpu_ptr dout, gpu_ptr q,
                             gpu_ptr k, gpu_ptr v, gpu_ptr o, gpu_ptr lse, int B, int T, int H, int Hkv, int D,
                             gpu_ptr delta);

/* An inference step's attention against a key/value cache (infer/kv_cache.h's
 * layout), fp32: row r of q, o [N, H, D] is a token at position pos[r] of its
 * sequence and attends to keys 0..pos[r] at k and v + kv_off[r] floats (rows
 * of kv_stride floats, head h's kv group at (h / (H / Hkv)) * D); kv_off: N
 * int64, pos: N int32, both on the GPU. pos[r] < 4096, D <= 256. */
void cuda_attention_decode(gpu *g, gpu_ptr o, gpu_ptr q, gpu_ptr k, gpu_ptr v, gpu_ptr kv_off, gpu_ptr pos, int N,
                           int H, int Hkv, int D, int kv_stride);
#define CUDA_DECODE_MAX_KEYS 4096
#define CUDA_DECODE_MAX_D 256

/* The head's row pass over logits [R, V] fp32 (lm_head.h's row math): losses
 * [R]; top_logprob [R] (0: none). Training: dz [R, V] of type t (0:
 * evaluation), mix_b [R] (0: plain cross-entropy). Evaluation: top_id [R],
 * log_norm [R] with beta (each 0: none). The logits are scratch after it
 * (capped in place where V > 8,192 and softcap > 0). */
void cuda_cross_entropy_rows(gpu *g, gpu_dtype t, gpu_ptr logits, gpu_ptr targets, gpu_ptr losses,
                             gpu_ptr top_logprob, gpu_ptr top_id, gpu_ptr log_norm, float beta, gpu_ptr dz,
                             gpu_ptr mix_b, float mix_a, int R, int V, float softcap, float grad_scale);

/* optim_kernels.h's AdamW, bitwise, over n tensors of one buffer in one
 * launch: tensor t is numel[t] floats at offs[t] of p, grad, m, v (int64
 * arrays on the GPU) in group group[t] (int32 on the GPU: optimizer.h's
 * GROUP_*), whose step and decay are step[group], decay[group] (c's own are
 * not read); max_numel: the largest numel. n <= 65,535. */
void cuda_adamw_tensors(gpu *g, gpu_ptr p, gpu_ptr grad, gpu_ptr m, gpu_ptr v, gpu_ptr offs, gpu_ptr numel,
                        gpu_ptr group, int n, size_t max_numel, const optim_adamw_coeffs *c, const float step[4],
                        const float decay[4]);
/* Muon (optimizer.c's muon_tensor) over count same-shape rows x cols
 * matrices at base + offs[m] floats (offs: count int64 on the GPU), in three
 * launches a batch:
 * - the momentum (buf = mu buf + g gscale) and Nesterov update (upd = g gscale
 *   + mu buf) of n = rows * cols values each, with each update's sum of
 *   squares into sumsq [count] doubles (deterministic; partial:
 *   cuda_muon_partials(n, count) doubles of scratch);
 * - the gather: each update scaled by 1 / (sqrt(sumsq) + 1e-7) into X
 *   [count][rows * cols] of type t, transposed when rows > cols
 *   (optim_newton_schulz's X);
 * - after the iteration, the step from X: p = p decay - step x, upd = 0.
 * The float operations are the CPU's, bitwise. */
size_t cuda_muon_partials(size_t n, int count);
void cuda_muon_momentum_sumsq(gpu *g, gpu_ptr sumsq, gpu_ptr partial, gpu_ptr buf, gpu_ptr upd, gpu_ptr grad,
                              gpu_ptr offs, int count, size_t n, float mu, float gscale);
void cuda_ns_gather(gpu *g, gpu_dtype t, gpu_ptr X, gpu_ptr base, gpu_ptr offs, int count, int rows, int cols,
                    gpu_ptr sumsq);
void cuda_muon_apply(gpu *g, gpu_dtype t, gpu_ptr p, gpu_ptr upd, gpu_ptr X, gpu_ptr offs, int count, int rows,
                     int cols, float step, float decay);

/* out[0] (a double on the GPU) = sum of x[0..n) (square: of x^2), in double,
 * deterministic; partial: cuda_sum_partials(n) doubles of scratch. */
void cuda_sum(gpu *g, gpu_ptr out, gpu_ptr partial, gpu_ptr x, size_t n, int square);
size_t cuda_sum_partials(size_t n);

void cuda_scale(gpu *g, gpu_ptr x, size_t n, float s);
/* p -= r g, each a float product and difference (the learning reader's step) */
void cuda_sgd(gpu *g, gpu_ptr p, gpu_ptr grad, size_t n, float r);
void cuda_convert_bf16(gpu *g, gpu_ptr dst, gpu_ptr src, size_t n);

#endif
