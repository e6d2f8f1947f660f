/* train_step.h - one optimizer step's pieces, shared by the training loop
 * (trainer.c) and `tempo bench train` (bench/bench_train.c) so that the
 * benchmark measures exactly the step the trainer runs:
 *   - the optimizer built for a model (parameter groups from tensor kinds),
 *   - the gradient of one step: zero, micro-batches (forward + backward),
 *     averaging when there are several.
 * The update itself is optim_step (optim/optimizer.h). Nothing here reads
 * files or keeps time beyond the optional op profile. */
#ifndef TEMPO_TRAIN_STEP_H
#define TEMPO_TRAIN_STEP_H

#include <stdint.h>

#include "core/error.h"
#include "core/op_profile.h"
#include "model/model.h"
#include "optim/optimizer.h"

/* optim_create for m's tensors: embedding -> GROUP_EMBED, untied head ->
 * GROUP_HEAD, norms -> GROUP_NORM, the rest (2-D hidden weights) ->
 * GROUP_MATRIX. */
int train_optimizer_create(optimizer *opt, const model *m, const optim_config *cfg,
                           tempo_error *err);
/* The same, owning only part `part` of `parts` (optim_partition's share-out of
 * whole tensors: ZeRO-1 over ranks). */
int train_optimizer_create_shard(optimizer *opt, const model *m, const optim_config *cfg, int parts, int part,
                                 tempo_error *err);

/* Fills inputs[rows*T] and targets[rows*T] with the next micro-batch. */
typedef void (*train_batch_fn)(void *ctx, int rows, int T, int32_t *inputs, int32_t *targets);

/* The gradient of one step over batch = k * micro_batch sequences of T
 * tokens: zeroes m's gradients, runs k micro-batches (batch from next_batch
 * into inputs/targets, [micro_batch*T] each), and scales the sum by 1/k.
 * Returns the mean loss (nats). prof (may be NULL) gets the batches' time
 * as OP_DATA; the model's ops go to the model's own profile
 * (model_set_profile). */
double train_step_gradient(model *m, int batch, int micro_batch, int T, train_batch_fn next_batch,
                           void *batch_ctx, int32_t *inputs, int32_t *targets, op_profile *prof);

#endif
