/* optimizer_cuda.h - optimizer.h's update on a GPU: AdamW for every tensor,
 * or Muon (momentum, Newton-Schulz through cuBLASLt products) for the 2-D
 * hidden matrices and AdamW for the rest, gradient clipping, over the
 * model's one flat parameter buffer on the device. The same groups, learning
 * rates, bias correction and order of float operations as optim_step
 * (AdamW's and Muon's elementwise updates are bitwise the CPU's; the
 * Newton-Schulz iteration runs in fp32, exactly, or in bf16 where asked:
 * bf16 operands and iterates, fp32 sums, as Muon is commonly run). Its state
 * (m, v, the step count) is optimizer.h's, so checkpoints move between the
 * two. No sharding: one GPU holds the whole state. */
#ifndef TEMPO_OPTIMIZER_CUDA_H
#define TEMPO_OPTIMIZER_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "kernels/cuda/gpu.h"
#include "kernels/cuda/gpu_gemm.h"
#include "optim/optimizer.h"

/* Muon's matrices in batches of one shape: Newton-Schulz runs on a batch
 * at once (strided batched products), count <= OPTIM_CUDA_NS_BATCH. */
#define OPTIM_CUDA_NS_BATCH 16
typedef struct {
    int rows, cols, count;
    int first;             /* index of its first offset in ns_offs */
} optim_cuda_ns_batch;

typedef struct {
    gpu *g;
    optim_config cfg;
    optim_tensor *tensors;
    int n_tensors;
    size_t n_params;
    gpu_ptr m, v;          /* [n_params] each, fp32 */
    int64_t t;             /* AdamW steps taken */
    gpu_ptr ns_work;       /* Newton-Schulz: X, A, AA, Y for the largest batch */
    optim_cuda_ns_batch *batches;
    int n_batches;
    gpu_ptr ns_offs;       /* int64 [Muon matrices]: each one's offset (floats), batch by batch */
    gpu_ptr ns_sums;       /* doubles [OPTIM_CUDA_NS_BATCH] */
    gpu_ptr sum_partial;   /* doubles */
    gpu_ptr sums;          /* doubles: [0] the gradient's sum of squares, [1] a matrix's */
    gpu_dtype ns_type;
    /* the tensors AdamW updates (all, or all but Muon's), in one launch */
    int n_adam;
    size_t adam_max;       /* the largest one's floats */
    gpu_ptr adam_offs, adam_numel; /* int64 [n_adam] */
    gpu_ptr adam_group;    /* int32 [n_adam] */
} optim_cuda;

/* For tensors [0, n) of a buffer of n_params floats on g; ns_type: the
 * Newton-Schulz iteration's type (GPU_F32: fp32 products, exact; GPU_BF16:
 * bf16 iterates and products with fp32 sums, bf16 mode's: the tensor cores'
 * bf16 rate is about twice their TF32 rate). State starts at zero. */
int optim_cuda_create(optim_cuda *o, gpu *g, const optim_config *cfg, const optim_tensor *tensors, int n,
                      size_t n_params, gpu_dtype ns_type, tempo_error *err);
void optim_cuda_free(optim_cuda *o);

/* The L2 norm of grads [n_params] (double accumulation, deterministic):
 * waits for the GPU. */
int optim_cuda_grad_norm(optim_cuda *o, gpu_ptr grads, double *norm, tempo_error *err);

/* Queues one update (optim_step's contract: lr_mult scales every rate; the
 * gradient is clipped to grad_clip when grad_norm exceeds it; grads may be
 * modified). */
void optim_cuda_step(optim_cuda *o, gpu_ptr params, gpu_ptr grads, double grad_norm, double lr_mult);

/* The state to and from the host (m, v: n_params floats each, the
 * optimizer.h layout of an unsharded optimizer). */
int optim_cuda_get_state(optim_cuda *o, float *m, float *v, int64_t *t, tempo_error *err);
int optim_cuda_set_state(optim_cuda *o, const float *m, const float *v, int64_t t, tempo_error *err);

#endif
