/* train_step_cuda.c - a step's gradient on the GPU (see train_step_cuda.h). */
#include "train/train_step_cuda.h"

#include "kernels/cuda/gpu_ops.h"

int train_step_cuda_gradient(model_cuda *m, optim_cuda *o, int batch, int micro_batch, int T,
                             train_batch_fn next_batch, void *batch_ctx, train_mix_fn mix, void *mix_ctx,
                             int32_t *inputs, int32_t *targets, double *loss, double *gnorm, tempo_error *err)
{
    int k = batch / micro_batch;
    model_cuda_zero_grad(m);
    double sum = 0;
    for (int i = 0; i < k; i++) {
        next_batch(batch_ctx, micro_batch, T, inputs, targets);
        float mix_a = 1;
        const float *mb = mix ? mix(mix_ctx, micro_batch, T, inputs, targets, &mix_a) : NULL;
        if (model_cuda_set_batch(m, inputs, targets, micro_batch, T, mb, mix_a, err))
            return -1;
        model_cuda_forward(m);
        model_cuda_backward(m);
        double l;
        if (model_cuda_loss(m, &l, err))
            return -1;
        sum += l;
    }
    if (k > 1)
        cuda_scale(model_cuda_gpu(m), model_cuda_grads(m), model_cuda_num_params(m), 1.0f / (float)k);
    *loss = sum / k;
    return optim_cuda_grad_norm(o, model_cuda_grads(m), gnorm, err);
}
