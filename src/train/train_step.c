/* train_step.c - the optimizer for a model and one step's gradient (see
 * train_step.h). */
#include "train/train_step.h"

#include <stdlib.h>

static optim_group group_of(tensor_kind k)
{
    switch (k) {
    case TENSOR_EMBEDDING: return GROUP_EMBED;
    case TENSOR_HEAD: return GROUP_HEAD;
    case TENSOR_NORM: return GROUP_NORM;
    default: return GROUP_MATRIX;
    }
}

int train_optimizer_create(optimizer *opt, const model *m, const optim_config *cfg,
                           tempo_error *err)
{
    return train_optimizer_create_shard(opt, m, cfg, 1, 0, err);
}

int train_optimizer_create_shard(optimizer *opt, const model *m, const optim_config *cfg, int parts, int part,
                                 tempo_error *err)
{
    int n = model_num_tensors(m);
    optim_tensor *ts = malloc(sizeof *ts * (size_t)n);
    if (!ts)
        return tempo_fail(err, "optimizer: out of memory");
    for (int i = 0; i < n; i++) {
        const model_tensor *t = model_tensor_at(m, i);
        ts[i].offset = t->offset;
        ts[i].numel = t->numel;
        ts[i].rows = t->ndim == 2 ? t->shape[0] : 1;
        ts[i].cols = t->ndim == 2 ? t->shape[1] : (int)t->numel;
        ts[i].group = group_of(t->kind);
    }
    int b = 0, e = n;
    int rc = parts > 1 && optim_partition(ts, n, parts, part, &b, &e)
                 ? tempo_fail(err, "optimizer: the model's tensors are not contiguous; cannot shard them")
                 : optim_create_shard(opt, cfg, ts, n, model_num_params(m), b, e, err);
    free(ts);
    return rc;
}

double train_step_gradient(model *m, int batch, int micro_batch, int T, train_batch_fn next_batch,
                           void *batch_ctx, int32_t *inputs, int32_t *targets, op_profile *prof)
{
    int k = batch / micro_batch;
    model_zero_grad(m);
    double loss = 0;
    for (int i = 0; i < k; i++) {
        op_mark t0 = op_profile_begin(prof);
        next_batch(batch_ctx, micro_batch, T, inputs, targets);
        op_profile_end(prof, OP_DATA, t0);
        loss += model_forward(m, inputs, targets, micro_batch, T);
        model_backward(m);
    }
    if (k > 1) {
        float *g = model_grads(m);
        size_t n = model_num_params(m);
        float s = 1.0f / (float)k;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) g[i] *= s;
    }
    return loss / k;
}
