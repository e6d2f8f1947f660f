/* train_step_cuda.h - one optimizer step's gradient on a GPU, the
 * counterpart of train_step.h's train_step_gradient for model_cuda: zero
 * the gradients, run k micro-batches (batches drawn on the host by the same
 * train_batch_fn, copied over the GPU's copy stream), scale the sum by 1/k,
 * then the loss and the gradient's L2 norm. The update itself is
 * optim_cuda_step followed by model_cuda_weights_changed. Shared by the
 * trainer and `tempo bench train --device cuda`, so the benchmark times the
 * step the trainer runs. One process, one GPU (no ranks). */
#ifndef TEMPO_TRAIN_STEP_CUDA_H
#define TEMPO_TRAIN_STEP_CUDA_H

#include <stdint.h>

#include "core/error.h"
#include "model/model_cuda.h"
#include "optim/optimizer_cuda.h"
#include "train/train_step.h"

/* *loss gets the mean loss (nats), *gnorm the gradient's norm. mix_b (may
 * be NULL) is called after each batch is drawn to give the mixture's prior
 * of its targets (model_cuda_set_batch's mix_b) or NULL. Returns 0, or -1
 * with the GPU's error. */
typedef const float *(*train_mix_fn)(void *ctx, int rows, int T, const int32_t *inputs, const int32_t *targets,
                                     float *mix_a);
int train_step_cuda_gradient(model_cuda *m, optim_cuda *o, int batch, int micro_batch, int T,
                             train_batch_fn next_batch, void *batch_ctx, train_mix_fn mix, void *mix_ctx,
                             int32_t *inputs, int32_t *targets, double *loss, double *gnorm, tempo_error *err);

#endif
