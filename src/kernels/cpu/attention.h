/* attention.h - causal multi-head attention with grouped-query attention
 * (GQA), forward and backward, scale 1/sqrt(D), no dropout.
 *
 * Layouts (row-major, exactly what the q/k/v projections produce):
 *   q, o, dq, dout: [B, T, H, D]      (row stride H*D)
 *   k, v, dk, dv:   [B, T, Hkv, D]    (row stride Hkv*D)
 *   lse:            [B, H, T]         per-row log-sum-exp of the scaled scores
 * Query head h reads key/value head h / (H / Hkv); Hkv divides H.
 *
 * The forward never materialises probabilities beyond one tile of scores
 * (ATT_BK keys x ATT_BQ queries, attention.c): per (b, h) it walks query tiles
 * and key tiles with an online softmax, skips fully masked key tiles (causal:
 * the work is about half of T*T), and saves the log-sum-exp; the backward
 * recomputes probabilities from it. The tile products and the exp run on the
 * AVX2 + FMA operations when the CPU has them (TEMPO_KERNELS=portable forces
 * plain C; see attention_kernel.h); the two paths differ in the last bits.
 * QK-norm and RoPE are applied by the caller before (rmsnorm.h, rope.h). */
#ifndef TEMPO_ATTENTION_H
#define TEMPO_ATTENTION_H

/* One head of one sequence: the building block (a KV-cache decode step reuses
 * it). Query row i (i < Tq) sits at position Tk - Tq + i and attends keys
 * 0 .. Tk - Tq + i (Tq <= Tk; training has Tq == Tk).
 *   q [Tq rows, stride q_stride, D used], k, v [Tk rows, stride kv_stride]
 *   -> o [Tq rows, stride q_stride] (overwritten), lse [Tq] (contiguous). */
void attention_head_forward(float *o, float *lse, const float *q, const float *k,
                            const float *v, int q_stride, int kv_stride,
                            int Tq, int Tk, int D, float scale);

/* Backward of attention_head_forward. dout, o, lse as saved by the forward.
 * ACCUMULATES (+=) into dq [Tq rows, stride q_stride], dk, dv [Tk rows,
 * stride kv_stride]: the caller zeroes them; GQA heads sharing one kv head add
 * into the same dk, dv. */
void attention_head_backward(float *dq, float *dk, float *dv, const float *dout,
                             const float *q, const float *k, const float *v,
                             const float *o, const float *lse, int q_stride,
                             int kv_stride, int Tq, int Tk, int D, float scale);

/* Whole batch, training shape (Tq == Tk == T). Parallel over (b, h) pairs
 * (dynamic schedule); each pair's result is computed the same way on any
 * thread, so results do not depend on the thread count. */
void attention_forward(float *o, float *lse, const float *q, const float *k,
                       const float *v, int B, int T, int H, int Hkv, int D);

/* Whole-batch backward: dq [B,T,H,D], dk, dv [B,T,Hkv,D] are OVERWRITTEN.
 * Parallel over (b, kv head) pairs; the heads of one group run in order on
 * one thread, so the GQA sum into dk, dv is deterministic without atomics. */
void attention_backward(float *dq, float *dk, float *dv, const float *dout,
                        const float *q, const float *k, const float *v,
                        const float *o, const float *lse, int B, int T, int H,
                        int Hkv, int D);

/* The same contracts with the tile products in bf16, as the GEMM's bf16 mode
 * (gemm.h): q, k, v, dout and each tile of probabilities and score gradients
 * rounded to bfloat16 where a product reads them, the products summed in
 * fp32 by AVX-512 BF16's dot product; the softmax, lse and every sum kept in
 * fp32. Where attention_bf16_runs(T, D) is 0 (no AVX-512 BF16 on this CPU or
 * path, an odd head dim or one above 128, or T <= 2) they are
 * attention_forward and attention_backward, bit for bit. Deterministic and
 * independent of the thread count, as those. */
int attention_bf16_runs(int T, int D);
void attention_forward_bf16(float *o, float *lse, const float *q, const float *k, const float *v, int B,
                            int T, int H, int Hkv, int D);
void attention_backward_bf16(float *dq, float *dk, float *dv, const float *dout, const float *q,
                             const float *k, const float *v, const float *o, const float *lse, int B,
                             int T, int H, int Hkv, int D);

/* Part of a backward on the calling thread alone: units [u0, u1) of the
 * B * Hkv (sequence, kv head) units, unit b * Hkv + g writing only its own
 * columns of dq, dk, dv (those of kv head g and its query heads, in
 * sequence b); bf16 as the _bf16 call (0: attention_backward's products).
 * The units of a call split between two threads this way give the whole
 * call's bits (the model's two-lane backward). */
void attention_backward_part(float *dq, float *dk, float *dv, const float *dout, const float *q,
                             const float *k, const float *v, const float *o, const float *lse, int B,
                             int T, int H, int Hkv, int D, int bf16, int u0, int u1);

/* Plain single-threaded references of the whole-batch contracts: two passes
 * per query row (max, then exp-sum and weighted sum), no tiling. */
void attention_forward_ref(float *o, float *lse, const float *q, const float *k,
                           const float *v, int B, int T, int H, int Hkv, int D);
void attention_backward_ref(float *dq, float *dk, float *dv, const float *dout,
                            const float *q, const float *k, const float *v,
                            const float *o, const float *lse, int B, int T, int H,
                            int Hkv, int D);

#endif
