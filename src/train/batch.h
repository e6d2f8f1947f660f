/* batch.h - training batches: B random windows of T+1 consecutive tokens from
 * the training token stream, drawn with an explicit rng_state (saved in
 * checkpoints, so a resumed run draws the same batches). Inputs are the first
 * T tokens of a window, targets the last T. Windows may cross document
 * separators; that is how the model learns to predict them. */
#ifndef TEMPO_BATCH_H
#define TEMPO_BATCH_H

#include <stdint.h>

#include "core/error.h"
#include "core/rng.h"
#include "data/token_store.h"

/* Fill inputs[B*T] and targets[B*T]. The stream must hold at least T+1 tokens. */
void batch_sample(const token_file *tf, rng_state *rng, int B, int T, int32_t *inputs, int32_t *targets);

/* Advance rng past B windows without reading them: what batch_sample(B)
 * draws, so that a rank can skip the other ranks' rows of a global batch. */
void batch_skip(const token_file *tf, rng_state *rng, int B, int T);

#endif
