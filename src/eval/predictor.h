/* predictor.h - the run's whole next-token distribution at every position
 * of a stream read in order, as `tempo eval` scores the stream
 * (eval/hybrid_bpb.h): the transformer over the same sliding windows, the
 * count memory, the cache and the match model mixed by the same mixer
 * (memory/mixture.h), and the learning reader's steps after the same
 * windows. What tempo compress codes with (eval/compress.h).
 *
 * Unlike eval, which runs each window's forward over all its tokens at once,
 * the transformer here computes a window's positions one at a time with the
 * KV cache (infer/engine.h: the window's context tokens as a prefill, then
 * one token per step), so that the distribution at position i needs only
 * tokens[0..i): a decoder has no more. The probabilities equal eval's up to
 * float rounding (the engine's contract); the learning reader's steps are
 * eval's exactly (the same forward and backward over the same window after
 * its last token), so the transformer learns the same weights.
 *
 * Determinism: the same calls on the same machine (kernel path, cache
 * sizes, thread count) give the same doubles, bit for bit; compress.h
 * records what it depends on. */
#ifndef TEMPO_PREDICTOR_H
#define TEMPO_PREDICTOR_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "memory/hybrid.h"
#include "model/model.h"

typedef struct predictor predictor;

/* A reader of a stream of n_tokens (the stream layout of bpb.h: tokens[0],
 * the leading separator, is given) through model m (on the CPU) and the
 * parts h, adapting as eval does with adapt (the cache, the mixer and, with
 * h->model_lr > 0, the transformer learn), over eval's windows of `stride`.
 * m is changed while the predictor lives (the learning reader's steps) and
 * put back bit for bit by predictor_free. Errors: a stream of fewer than 2
 * tokens, a bad rate, out of memory. */
int predictor_create(predictor **out, model *m, const hybrid_parts *h, int adapt, size_t n_tokens, int stride,
                     tempo_error *err);
void predictor_free(predictor *p);   /* NULL is fine */

int predictor_vocab(const predictor *p);

/* dist[0..V): the distribution of tokens[i] given tokens[0..i), for
 * i = 1, 2, ..., n_tokens - 1 in turn, each after predictor_learn of the
 * one before. tokens[i] and later are not read. Sums to 1 up to rounding;
 * every entry finite and >= 0. */
int predictor_dist(predictor *p, const int32_t *tokens, size_t i, double *dist, tempo_error *err);

/* tokens[i] is known now (after predictor_dist(i)): the cache, the match
 * model and the mixer learn it, and after a window's last token the
 * transformer takes the learning reader's step when it is due. */
int predictor_learn(predictor *p, const int32_t *tokens, size_t i, tempo_error *err);

#endif
