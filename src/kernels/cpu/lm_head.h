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

/* Floats of scratch the functions below need for a given chunk size. */
size_t lm_head_scratch_floats(int chunk_rows, int V);

/* Evaluation: x [N, C], w [V, C], targets [N] in [0, V) -> losses [N].
 * scratch: lm_head_scratch_floats(chunk_rows, V) floats. */
void lm_head_loss_forward(float *losses, const float *x, const float *w,
                          const int32_t *targets, int N, int C, int V,
                          float softcap, float *scratch, int chunk_rows);

/* Training: as lm_head_loss_forward, plus, with grad_scale = d(objective) /
 * d(loss[n]) (1/N for a mean):
 *   dx [N, C] = gradient w.r.t. x (OVERWRITTEN),
 *   dw [V, C] += gradient w.r.t. w (ACCUMULATED). */
void lm_head_loss_forward_backward(float *losses, float *dx, float *dw,
                                   const float *x, const float *w,
                                   const int32_t *targets, int N, int C, int V,
                                   float softcap, float grad_scale, float *scratch,
                                   int chunk_rows);

/* Plain reference of lm_head_loss_forward_backward (dx, dw may be NULL for
 * losses only): one row at a time, double accumulators, scratch of V floats. */
void lm_head_loss_ref(float *losses, float *dx, float *dw, const float *x,
                      const float *w, const int32_t *targets, int N, int C, int V,
                      float softcap, float grad_scale, float *scratch);

#endif
