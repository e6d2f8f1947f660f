/* train_step.h - one optimizer step's pieces, shared by the training loop
 * (trainer.c) and `tempo bench train` (bench/bench_train.c) so that the
 * benchmark measures exactly the step the trainer runs:
 *   - the optimizer built for a model (parameter groups from tensor kinds),
 *   - the gradient of one step: zero, micro-batches (forward + backward),
 *     averaging when there are several,
 *   - with ranks (data parallel): its mean over the ranks, reduced span by
 *     span while the last micro-batch's backward pass runs, or in one
 *     blocking collective after it;
 *   - with threads in one process (thread replicas): each micro-batch's rows
 *     shared out among the threads, each running forward and backward alone
 *     on a replica of the model, and the replicas' gradients summed.
 * The update itself is optim_step (optim/optimizer.h). Nothing here reads
 * files or keeps time beyond the optional op profile. */
#ifndef TEMPO_TRAIN_STEP_H
#define TEMPO_TRAIN_STEP_H

#include <stdint.h>

#include "core/error.h"
#include "core/op_profile.h"
#include "parallel/dist.h"
#include "model/model.h"
#include "optim/optimizer.h"

/* The optimizer's view of n model tensors (the groups below). */
void train_optim_tensors(const model_tensor *mt, int n, optim_tensor *out);

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

/* A step's gradient averaged over the ranks of a data-parallel job. */
typedef struct {
    dist_context *dist;
    int overlap;                 /* 1: span by span inside the backward pass; 0: one collective after it */
    const size_t *shard_begin;   /* ZeRO-1: each rank gets the mean of its own span only (dist.h); */
    const size_t *shard_len;     /*   NULL: every rank gets the whole mean */
    dist_overlap ov;
    double comm_s;               /* seconds this rank spent inside collectives in the last step */
    /* the step in flight (the backward pass's callback) */
    model *m;
    float scale;                 /* 1/k for k micro-batches */
    int spans_started;
    /* thread replicas (train_reduce_replicas): n_rep models, rep[0] the step's own */
    int n_rep;
    model **rep;
    int rep_rows;                /* the micro-batch's rows they share out */
    float *rep_weight;           /* [n_rep]: rows_s / rep_rows */
    double *rep_loss;            /* [n_rep]: each one's mean loss over its rows */
} train_reduce;

/* Sets r up for m's spans. Returns 0, or -1 when out of memory. */
int train_reduce_init(train_reduce *r, dist_context *d, const model *m, int overlap, const size_t *shard_begin,
                      const size_t *shard_len, tempo_error *err);
void train_reduce_free(train_reduce *r);

/* Thread replicas, for one process on a CPU (no ranks, no GPU): with t =
 * min(threads, micro_batch) > 1, each micro-batch's rows are shared out in
 * t contiguous parts, part s on thread s with model replica s (part 0 on m
 * itself, the others from model_create_replica for their rows), every kernel
 * of a pass then on its thread alone: no synchronisation inside a forward or
 * backward pass, which costs 32-40 us a time on this project's machines
 * (docs/performance.md), and one-thread products, which run nearer the peak.
 * The gradient is then sum_s (rows_s / micro_batch) g_s, in s order, the loss
 * likewise: the mean over the micro-batch as one model computes it, summed
 * in another order (with 2 parts the same sums as 2 ranks of 1 thread).
 * Deterministic for a given thread count. Memory: each replica's gradients
 * and activations for its rows. Does nothing (0) otherwise. Returns 0, or
 * -1 when out of memory. Call after train_reduce_init; freed with it. */
int train_reduce_replicas(train_reduce *r, model *m, int threads, int micro_batch, tempo_error *err);

/* train_step_gradient over this rank's batch rows, then (world > 1) the
 * mean over the ranks as r says; r->comm_s gets the collectives' seconds.
 * *loss gets this rank's mean loss (not reduced). Returns 0, or -1 when a
 * collective failed (err set). The two ways give the same figures up to
 * the order of the sums over ranks (identical with 2 ranks). */
int train_step_gradient_ranks(model *m, train_reduce *r, int batch, int micro_batch, int T,
                              train_batch_fn next_batch, void *batch_ctx, int32_t *inputs, int32_t *targets,
                              op_profile *prof, double *loss, tempo_error *err);

#endif
