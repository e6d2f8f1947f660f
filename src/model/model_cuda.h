/* model_cuda.h - the tempo model on a GPU: the same transformer, parameter
 * layout (model_layout) and contracts as model.h, with its parameters,
 * gradients and activations in device memory and every op a GPU kernel
 * (kernels/cuda/gpu_ops.h) or a cuBLASLt product.
 *
 * Precision: MODEL_CUDA_FP32 runs everything in fp32 (the GEMMs too, no
 * TF32): the exact mode the tests compare with the CPU model.
 * MODEL_CUDA_BF16 keeps fp32 master weights, gradients, the residual stream
 * and every reduction, and stores the activations the GEMMs read (and a
 * copy of the weights, refreshed by model_cuda_weights_changed) as bf16:
 * bf16 operands, fp32 accumulation.
 *
 * Work is queued on the GPU's compute stream; a batch's tokens go over the
 * copy stream from pinned host memory. Nothing is read back until
 * model_cuda_loss or model_cuda_token_outputs. Not thread-safe. */
#ifndef TEMPO_MODEL_CUDA_H
#define TEMPO_MODEL_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "kernels/cuda/gpu.h"
#include "model/config.h"
#include "model/model.h"

typedef enum { MODEL_CUDA_FP32 = 0, MODEL_CUDA_BF16 = 1 } model_cuda_precision;

typedef struct model_cuda model_cuda;

/* Validates cfg, then allocates everything on g for up to max_batch
 * sequences of cfg->context tokens. Parameters are not set: call
 * model_cuda_set_params. Errors: a bad config (code 2), a head dim above
 * 128, out of GPU memory ("model on the GPU: out of GPU memory for
 * activations (d_model 768, 12 layers, batch 16 x 1024: 9.1 GB asked, ...)"). */
int model_cuda_create(model_cuda **out, gpu *g, const model_config *cfg, int max_batch,
                      model_cuda_precision prec, tempo_error *err);
void model_cuda_free(model_cuda *m); /* NULL is fine */

const model_config *model_cuda_config(const model_cuda *m);
size_t model_cuda_num_params(const model_cuda *m);
int model_cuda_num_tensors(const model_cuda *m);
const model_tensor *model_cuda_tensor_at(const model_cuda *m, int i);
gpu *model_cuda_gpu(const model_cuda *m);
gpu_ptr model_cuda_params(const model_cuda *m); /* fp32 [n_params] */
gpu_ptr model_cuda_grads(const model_cuda *m);  /* fp32 [n_params] */
model_cuda_precision model_cuda_get_precision(const model_cuda *m);
size_t model_cuda_device_bytes(const model_cuda *m); /* everything it allocated */

/* Host <-> device copies of the whole parameter / gradient buffer
 * (model_num_params floats, model.h's layout). set_params also refreshes
 * the bf16 weight copy. */
int model_cuda_set_params(model_cuda *m, const float *host, tempo_error *err);
int model_cuda_get_params(model_cuda *m, float *host, tempo_error *err);
int model_cuda_get_grads(model_cuda *m, float *host, tempo_error *err);
/* After the parameters changed on the GPU (an optimizer step): queues the
 * bf16 copy's refresh (nothing in fp32 mode). */
void model_cuda_weights_changed(model_cuda *m);

void model_cuda_set_training(model_cuda *m, int training); /* as model_set_training */
void model_cuda_set_eval_beta(model_cuda *m, float beta);  /* the next forwards' beta (model_forward_eval) */

/* The next forward's batch: tokens, targets [B*T] (targets may be NULL),
 * and, to train inside a mixture (model_set_mixture), mix_b [B*T] with
 * mix_a (mix_b NULL: plain cross-entropy). Checked like model_forward's
 * (sizes, ids in range); copied to the GPU over the copy stream. */
int model_cuda_set_batch(model_cuda *m, const int32_t *tokens, const int32_t *targets, int B, int T,
                         const float *mix_b, float mix_a, tempo_error *err);
/* Queues the forward of the batch set (with its targets: the losses and, in
 * training mode, the head's gradient for the backward). */
void model_cuda_forward(model_cuda *m);
/* Queues the backward of the last forward with targets: ADDS the gradient of
 * the mean loss into the gradients. */
void model_cuda_backward(model_cuda *m);
void model_cuda_zero_grad(model_cuda *m);

/* Waits for the GPU; *mean_loss gets the last forward's mean loss (nats).
 * Returns 0, or -1 with the GPU's error. */
int model_cuda_loss(model_cuda *m, double *mean_loss, tempo_error *err);
/* Waits and copies the last forward's per-position figures (each may be
 * NULL; [B*T]): losses, top_logprob, and in evaluation mode top_id and
 * log_norm (model.h's model_token_*). */
int model_cuda_token_outputs(model_cuda *m, float *losses, float *top_logprob, int32_t *top_id,
                             float *log_norm, tempo_error *err);

/* A GPU model for the host model m (its config and max batch), holding m's
 * parameters, attached to m (model_attach_device): every pass of m then
 * runs on g. Free it (after model_attach_device(m, NULL)) with
 * model_cuda_free. */
int model_cuda_attach_new(model *m, gpu *g, model_cuda_precision prec, model_cuda **out, tempo_error *err);

/* The learning reader's step (bpb.h) on the GPU: the norm of the gradient
 * the last backward left (double, deterministic), then, when finite,
 * params -= lr' grads with lr' = lr, times clip / norm above clip. Returns
 * the norm (NaN when not finite: no step), or -1 on a GPU error (err). */
double model_cuda_sgd_step(model_cuda *m, double lr, double clip, tempo_error *err);
/* A copy of the parameters on the GPU, and back (the learning reader
 * restores the trained weights after each text). */
int model_cuda_params_save(model_cuda *m, tempo_error *err);
int model_cuda_params_restore(model_cuda *m, tempo_error *err);

#endif
