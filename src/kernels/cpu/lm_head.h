/* lm_head.h - the output head fused with cross-entropy, chunked over tokens
 * so that the [N, V] logits never exist at once (only chunk_rows x V).
 *
 * For each row n of x [N, C], with head weight w [V, C] (row v = output
 * vector of token v; a tied head passes the token embedding):
 *   z[v]    = x[n,:] . w[v,:]                     (gemm_f32, y = x W^T)
 *   z[v]    = cap * tanh(z[v] / cap)              (only when cap > 0)
 *   loss[n] = logsumexp(z) - z[targets[n]]        (nats)
 * The backward needs only softmax(z) - onehot(target), known in the same pass,
 * so the training version computes the gradients while the chunk's logits
 * are in memory: dz = scale * (softmax - onehot) * dcap, dx = dz W, dW += dz^T x.
 * Nothing else here (the final RMSNorm is rmsnorm.h). */
#ifndef TEMPO_LM_HEAD_H
#define TEMPO_LM_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/gemm.h"

/* Floats of scratch the functions below need for a given chunk size (the
 * logits' rows padded to whole 64-byte lines: give it 64-byte aligned). */
size_t lm_head_scratch_floats(int chunk_rows, int V);

/* What a hot caller (the model) keeps between calls so that the head's GEMMs
 * neither query the CPU nor allocate once warm, and pack w once per call
 * instead of once per chunk and product: the caller's GEMM context and w
 * packed for the two products that read it (as w^T for the logits, as w for
 * dx). Start zeroed with gemm set; the packings are (re)made on every call,
 * since w changes between steps. Passing NULL instead of a workspace is
 * allowed (plain gemm_f32 per product, chunk after chunk: slower).
 *
 * With a workspace and more than one OpenMP thread, the chunks are shared
 * out among the threads (contiguous runs, one parallel region per call),
 * each thread running its chunks' GEMMs and row passes alone, with its own
 * GEMM context, logits scratch and, for threads after the first, its own
 * dw partial sum, added to dw at the end in thread order. Losses and dx
 * are bitwise those of the NULL path; dw is summed in a different order
 * (deterministic for a given thread count). The per-thread buffers are
 * allocated on the first call that needs them (or more of them). */
typedef struct {
    gemm_context *gemm;
    gemm_packed_b w_t, w_n;
    int n_threads;              /* threads the buffers below serve */
    gemm_context *thread_gemm;  /* [n_threads] (configs copied from *gemm) */
    float *thread_scratch;      /* [n_threads - 1] x scratch_floats (thread 0: the caller's) */
    float *dw_partial;          /* [n_threads - 1] x partial_floats */
    size_t scratch_floats, partial_floats;
    /* Training inside a mixture (docs/hybrid_model.md): when mix_b is set,
     * row n's objective is -ln(mix_a p_n + mix_b[n]) (p_n the target's
     * probability, mix_b[n] the other components' weighted probability of
     * it), so its gradient is the cross-entropy's scaled by
     * mix_a p_n / (mix_a p_n + mix_b[n]). Losses stay the cross-entropy. */
    const float *mix_b;
    float mix_a;
    /* When set, row n's log of its largest probability, max_v z - logsumexp(z)
     * (after the soft-cap), goes to top_logprob[n]: the model's confidence,
     * which the hybrid model's mixer reads (memory/mixer.h). Costs a store. */
    float *top_logprob;
    /* When set, and only in evaluation (no gradient asked), row n's most
     * probable id (the first of equal largest logits) goes to top_id[n]: the
     * candidate of the hybrid model's top-token calibration (memory/mixture.h).
     * Costs a scan of the row up to that id. */
    int32_t *top_id;
    /* When set, and only in evaluation, row n's -ln sum_v p_v^beta (p its
     * softmax; 0 when beta is 1, or 0 for unset) goes to log_norm[n], so that the sharpened
     * distribution the hybrid model mixes (mixer.h, beta) is
     * p^beta / sum p^beta = exp(beta ln p + log_norm[n]) for any token.
     * Costs a scaling and a second exponential pass of the row. */
    float *log_norm;
    float beta;
    /* Rows of logits (raw x.w) the scratch holds from the last evaluation
     * call with this workspace without a soft-cap: its first chunk's (an
     * evaluation runs its chunks last to first, so the first one's logits
     * stay); 0 after any other call. A training call of one chunk with N <=
     * this many rows and the same scratch takes them as its logits instead
     * of computing them again (the same bits): the learning reader's step
     * on the first window of the batch it scored (eval/bpb.h). The caller
     * sets it to 0 whenever x or w may have changed since (model.c: every
     * forward). Only rows logits_from .. logits_rows - 1 are held when the
     * evaluation skipped the rows before (row_from below): the training call
     * computes rows 0 .. logits_from - 1 itself (a GEMM's rows do not depend
     * on the others computed with them: the same bits). */
    int logits_rows, logits_from;
    /* Evaluation only, when set: the rows come in groups of row_group (the
     * windows of a batch) and row n is wanted when n % row_group >=
     * row_from[n / row_group] (a window's targets scored before are not
     * wanted again). A row not wanted gets no row pass: its loss,
     * top_logprob, top_id and log_norm are written 0. A chunk computes its
     * logits from its first wanted row on (none when it has none), so a
     * row not wanted after a wanted one in the same chunk still costs its
     * product. NULL: every row wanted. */
    const int32_t *row_from;
    int row_group;
} lm_head_workspace;
void lm_head_workspace_free(lm_head_workspace *ws); /* all but *gemm */

/* Evaluation: x [N, C], w [V, C], targets [N] in [0, V) -> losses [N].
 * scratch: lm_head_scratch_floats(chunk_rows, V) floats. */
void lm_head_loss_forward(float *losses, const float *x, const float *w,
                          const int32_t *targets, int N, int C, int V,
                          float softcap, float *scratch, int chunk_rows,
                          lm_head_workspace *ws);

/* Training: as lm_head_loss_forward, plus, with grad_scale = d(objective) /
 * d(loss[n]) (1/N for a mean):
 *   dx [N, C] = gradient w.r.t. x (OVERWRITTEN),
 *   dw [V, C] += gradient w.r.t. w (ACCUMULATED). */
void lm_head_loss_forward_backward(float *losses, float *dx, float *dw,
                                   const float *x, const float *w,
                                   const int32_t *targets, int N, int C, int V,
                                   float softcap, float grad_scale, float *scratch,
                                   int chunk_rows, lm_head_workspace *ws);

/* One chunk's training pass (N <= chunk_rows rows) in pieces that two
 * threads can share (the model's two-lane backward, model/model_backward_lanes.c),
 * each piece on the calling thread alone, through ctx (that thread's GEMM
 * context, configured as the workspace's):
 *  - lm_head_split_begin, first and once: returns `fresh`, the rows [0,
 *    fresh) whose logits the pass computes (the others are held from an
 *    evaluation: logits_rows above), and forgets the held logits as a
 *    training call does; -1 when the pass cannot be split (no workspace or
 *    GEMM context, N outside 1..chunk_rows): nothing done;
 *  - lm_head_dz_rows: rows [r0, r1): the logits of those below fresh, then
 *    each row's pass: its loss, and its logit gradients dz in scratch in
 *    place of its logits;
 *  - lm_head_dx_rows: dx rows [r0, r1) = dz W (OVERWRITTEN);
 *  - lm_head_dw_rows: rows [v0, v1) of dw += dz^T x over rows [0, N).
 * Each piece writes only its own rows. Over partitions of the rows and of
 * the vocabulary, with a row's dz before its dx and every row's before any
 * dw, they give lm_head_loss_forward_backward's bits. */
int lm_head_split_begin(lm_head_workspace *ws, int N, float softcap, int chunk_rows);
void lm_head_dz_rows(float *losses, const float *x, const float *w, const int32_t *targets, int r0, int r1,
                     int fresh, int C, int V, float softcap, float grad_scale, float *scratch,
                     lm_head_workspace *ws, gemm_context *ctx);
void lm_head_dx_rows(float *dx, const float *w, int r0, int r1, int C, int V, const float *scratch,
                     gemm_context *ctx);
void lm_head_dw_rows(float *dw, const float *x, int N, int v0, int v1, int C, int V, const float *scratch,
                     gemm_context *ctx);

/* Plain reference of lm_head_loss_forward_backward (dx, dw may be NULL for
 * losses only): one row at a time, double accumulators, scratch of V floats. */
void lm_head_loss_ref(float *losses, float *dx, float *dw, const float *x,
                      const float *w, const int32_t *targets, int N, int C, int V,
                      float softcap, float grad_scale, float *scratch);

#endif
