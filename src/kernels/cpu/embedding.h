/* embedding.h - token embedding lookup, forward and backward.
 * Nothing else (the output head is lm_head.h). */
#ifndef TEMPO_EMBEDDING_H
#define TEMPO_EMBEDDING_H

#include <stdint.h>

/* tokens [N] (each in [0, V)), emb [V, C] -> out [N, C] = emb[tokens[n], :]. */
void embedding_forward(float *out, const int32_t *tokens, const float *emb, int N, int C);

/* dout [N, C], tokens [N] -> demb [V, C] += scatter: demb[tokens[n], :] += dout[n, :].
 * Deterministic: threads split the C columns, each walks the tokens in order, so
 * repeated tokens are summed in the same order for any thread count. */
void embedding_backward(float *demb, const int32_t *tokens, const float *dout, int N, int C);

/* Plain single-threaded reference of embedding_backward. */
void embedding_backward_ref(float *demb, const int32_t *tokens, const float *dout, int N, int C);

#endif
