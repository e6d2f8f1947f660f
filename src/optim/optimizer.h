/* optimizer.h - parameter updates over the model's one contiguous parameter
 * buffer: AdamW (decoupled weight decay, bias correction) for every tensor, or
 * Muon (momentum + Newton-Schulz orthogonalisation) for 2-D hidden matrices
 * with AdamW for the rest (embeddings, head, norms). Gradient-norm clipping.
 * The optimizer knows tensors only as (offset, rows, cols, group); it knows
 * nothing of models or files. Its state is two buffers the size of the
 * parameters (m and v; Muon tensors use m as the momentum buffer), so a
 * checkpoint saves them as two tensors.
 *
 * Sharded (ZeRO-1, for data parallel training over ranks): an optimizer may
 * own only a contiguous run of tensors [t_begin, t_end) (optim_partition
 * shares them out whole, Muon's matrices included); its m and v then hold
 * only that run's span of the flat buffer (state_base .. + state_len) and
 * optim_step updates only those parameters. A tensor's update does not depend
 * on any other tensor's (given the global gradient norm), so the shards'
 * steps together are bit for bit the whole optimizer's step. */
#ifndef TEMPO_OPTIMIZER_H
#define TEMPO_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "kernels/cpu/gemm.h"

typedef enum {
    GROUP_EMBED = 0,   /* token embedding (AdamW, lr_embed) */
    GROUP_HEAD,        /* untied output head (AdamW, lr_head) */
    GROUP_NORM,        /* gains and other scalars/vectors (AdamW, lr_scalar, no decay) */
    GROUP_MATRIX,      /* 2-D hidden weights (Muon when enabled, else AdamW with lr) */
    GROUP_COUNT
} optim_group;

typedef struct {
    size_t offset, numel;
    int rows, cols;      /* 2-D shape ([out, in]); vectors have rows = 1 */
    optim_group group;
} optim_tensor;

typedef struct {
    int use_muon;        /* 0: AdamW everywhere; 1: Muon for GROUP_MATRIX */
    float lr;            /* AdamW lr for GROUP_MATRIX when not Muon */
    float lr_embed, lr_head, lr_scalar;
    float lr_muon;       /* Muon lr (scaled per tensor by sqrt(max(1, rows/cols))) */
    float beta1, beta2, eps;
    float weight_decay;  /* decoupled; applied to MATRIX and HEAD, never EMBED or NORM */
    float muon_momentum; /* e.g. 0.95, Nesterov */
    int ns_steps;        /* Newton-Schulz iterations, e.g. 5 */
    float grad_clip;     /* clip the global gradient L2 norm to this; 0 = off */
} optim_config;

typedef struct {
    optim_config cfg;
    optim_tensor *tensors;
    int n_tensors;
    size_t n_params;
    float *m, *v;        /* state, state_len each: parameters state_base .. state_base + state_len */
    size_t state_base, state_len;
    int t_begin, t_end;  /* the tensors this optimizer updates (all, unless sharded) */
    int64_t t;           /* AdamW steps taken (bias correction) */
    float *ns_work;      /* Newton-Schulz scratch: n_workers slices of ns_work_len
                            floats, each sized for the largest matrix */
    size_t ns_work_len;
    int n_workers;       /* threads that can run Muon matrices side by side
                            (omp_get_max_threads() at optim_create) */
    gemm_context *gemm;  /* [n_workers] one per worker, each sized at optim_create for
                            every matrix (the share-out is dynamic): no CPU query or
                            allocation per Newton-Schulz GEMM, whoever takes what */
    int *muon_order;     /* GROUP_MATRIX tensor indices, largest first */
    int n_muon;
} optimizer;

int optim_create(optimizer *o, const optim_config *cfg, const optim_tensor *tensors, int n_tensors,
                 size_t n_params, tempo_error *err);
/* An optimizer for tensors [t_begin, t_end) only (their spans must be
 * contiguous in the flat buffer: tensors sorted by offset, no gaps). */
int optim_create_shard(optimizer *o, const optim_config *cfg, const optim_tensor *tensors, int n_tensors,
                       size_t n_params, int t_begin, int t_end, tempo_error *err);
void optim_free(optimizer *o);

/* Share tensors out among `parts` owners as contiguous runs of about equal
 * parameter counts (whole tensors: a matrix is never split); part's run is
 * [*t_begin, *t_end), possibly empty. -1 when the tensors are not sorted by
 * offset and contiguous from 0 (then no sharding is possible). */
int optim_partition(const optim_tensor *tensors, int n_tensors, int parts, int part, int *t_begin, int *t_end);

/* The AdamW learning rate and decoupled weight decay of a group (the
 * config's lr_embed, lr_head, lr_scalar or lr; decay for MATRIX and HEAD
 * only). */
void optim_group_lr_wd(const optim_config *c, optim_group g, float *lr, float *wd);

/* L2 norm of the whole gradient (double accumulation, deterministic). */
double optim_grad_norm(const float *grads, size_t n);

/* One update. lr_mult scales every learning rate (the schedule and the
 * divergence guard). If grad_clip > 0 and grad_norm > grad_clip, gradients are
 * scaled by grad_clip / grad_norm first. grads may be modified (Muon's
 * momentum is formed in place).
 * Threads: Muon's matrices are shared out whole among the OpenMP threads (one
 * parallel region for all of them, largest first), each matrix's
 * Newton-Schulz running on one thread; small matrices gain nothing from
 * splitting, and a team's wake-up per GEMM costs more than the GEMM on a
 * virtual machine. Results depend on the thread count only through the
 * reductions' split (as everywhere), not on which thread took which matrix. */
void optim_step(optimizer *o, float *params, float *grads, double grad_norm, double lr_mult);

/* The parameter span [begin, begin + len) of tensors [t_begin, t_end). */
void optim_tensor_span(const optim_tensor *tensors, int t_begin, int t_end, size_t *begin, size_t *len);

/* Newton-Schulz orthogonalisation of G [rows x cols] in place: returns an
 * approximation of U V^T from G = U S V^T (quintic iteration, Muon's
 * coefficients). work must hold optim_ns_work_len floats, r = min(rows, cols),
 * c = max(rows, cols): see optim_ns_work_len. gemm: the context its GEMMs
 * use, or NULL for plain gemm_f32 (same results). */
void optim_newton_schulz(float *G, int rows, int cols, int steps, float *work,
                         gemm_context *gemm);
size_t optim_ns_work_len(int rows, int cols);

#endif
