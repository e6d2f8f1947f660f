/* optimizer_cuda.c - the optimizer's step on a GPU (see optimizer_cuda.h),
 * written as optim_step is (optimizer.c): the same per-group rates, the
 * same bias correction in double, the same per-matrix Muon. */
#include "optim/optimizer_cuda.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/gpu_ops.h"

int optim_cuda_create(optim_cuda *o, gpu *g, const optim_config *cfg, const optim_tensor *tensors, int n,
                      size_t n_params, gpu_math ns_math, tempo_error *err)
{
    memset(o, 0, sizeof *o);
    o->g = g;
    o->cfg = *cfg;
    o->n_tensors = n;
    o->n_params = n_params;
    o->ns_math = ns_math;
    o->tensors = malloc(sizeof *tensors * (size_t)(n ? n : 1));
    if (!o->tensors)
        return tempo_fail(err, "optimizer on the GPU: out of memory");
    memcpy(o->tensors, tensors, sizeof *tensors * (size_t)n);
    size_t work = 0;
    for (int i = 0; i < n; i++)
        if (tensors[i].group == GROUP_MATRIX) {
            size_t r = (size_t)(tensors[i].rows < tensors[i].cols ? tensors[i].rows : tensors[i].cols);
            size_t w = 2 * (size_t)tensors[i].rows * tensors[i].cols + 2 * r * r;
            if (w > work) work = w;
        }
    if (gpu_alloc(g, &o->m, n_params * 4, "the optimizer's first moments", err) ||
        gpu_alloc(g, &o->v, n_params * 4, "the optimizer's second moments", err) ||
        gpu_alloc(g, &o->ns_work, (cfg->use_muon ? work : 1) * 4, "Newton-Schulz's scratch", err) ||
        gpu_alloc(g, &o->sum_partial, cuda_sum_partials(n_params) * 8, "a reduction's scratch", err) ||
        gpu_alloc(g, &o->sums, 4 * 8, "a reduction's result", err)) {
        optim_cuda_free(o);
        return tempo_error_prefix(err, "optimizer on the GPU");
    }
    gpu_memset_async(g, o->m, 0, n_params * 4);
    gpu_memset_async(g, o->v, 0, n_params * 4);
    if (gpu_sync(g, err)) {
        optim_cuda_free(o);
        return -1;
    }
    return 0;
}

void optim_cuda_free(optim_cuda *o)
{
    if (o->g) {
        gpu_free(o->g, o->m);
        gpu_free(o->g, o->v);
        gpu_free(o->g, o->ns_work);
        gpu_free(o->g, o->sum_partial);
        gpu_free(o->g, o->sums);
    }
    free(o->tensors);
    memset(o, 0, sizeof *o);
}

int optim_cuda_grad_norm(optim_cuda *o, gpu_ptr grads, double *norm, tempo_error *err)
{
    double s = NAN;
    cuda_sum(o->g, o->sums, o->sum_partial, grads, o->n_params, 1);
    if (gpu_download(o->g, &s, o->sums, sizeof s, err))
        return -1;
    *norm = sqrt(s);
    return 0;
}

static void group_lr_wd(const optim_config *c, optim_group g, float *lr, float *wd)
{
    switch (g) {
    case GROUP_EMBED: *lr = c->lr_embed; *wd = 0; break;
    case GROUP_HEAD: *lr = c->lr_head; *wd = c->weight_decay; break;
    case GROUP_NORM: *lr = c->lr_scalar; *wd = 0; break;
    default: *lr = c->lr; *wd = c->weight_decay; break;
    }
}

/* optim_newton_schulz on upd [rows, cols] in place, on the GPU */
static void newton_schulz(optim_cuda *o, gpu_ptr G, int rows, int cols)
{
    const float a = 3.4445f, b = -4.7750f, c = 2.0315f;
    gpu *g = o->g;
    int transposed = rows > cols;
    int r = transposed ? cols : rows, n = transposed ? rows : cols;
    size_t rn = (size_t)r * n, rr = (size_t)r * r;
    gpu_ptr X = o->ns_work, A = X + rn * 4, AA = A + rr * 4, Y = AA + rr * 4;
    gpu_ptr sumsq = o->sums + 8;
    cuda_sum(g, sumsq, o->sum_partial, G, rn, 1);
    cuda_ns_start(g, X, G, rows, cols, sumsq, transposed);
    for (int s = 0; s < o->cfg.ns_steps; s++) {
        gpu_mat mX = {X, GPU_F32, n}, mA = {A, GPU_F32, r};
        gpu_gemm(g, 0, 1, r, r, n, 1.0f, mX, mX, 0.0f, mA, o->ns_math);              /* A = X X^T */
        gpu_gemm_d(g, 0, 0, r, r, r, c, mA, mA, b, mA, AA, o->ns_math);                /* B = b A + c A A */
        gpu_mat mB = {AA, GPU_F32, r};
        gpu_gemm_d(g, 0, 0, r, n, r, 1.0f, mB, mX, a, mX, Y, o->ns_math);              /* X' = a X + B X */
        gpu_ptr t = X; X = Y; Y = t;
    }
    cuda_ns_finish(g, G, X, rows, cols, transposed);
}

void optim_cuda_step(optim_cuda *o, gpu_ptr params, gpu_ptr grads, double grad_norm, double lr_mult)
{
    const optim_config *c = &o->cfg;
    float gscale = 1.0f;
    if (c->grad_clip > 0 && grad_norm > c->grad_clip)
        gscale = (float)(c->grad_clip / grad_norm);
    o->t++;
    double bc1 = 1.0 - pow(c->beta1, (double)o->t), bc2 = 1.0 - pow(c->beta2, (double)o->t);
    for (int i = 0; i < o->n_tensors; i++) {
        const optim_tensor *t = &o->tensors[i];
        gpu_ptr p = params + t->offset * 4, gr = grads + t->offset * 4;
        gpu_ptr m = o->m + t->offset * 4, v = o->v + t->offset * 4;
        if (t->group == GROUP_MATRIX && c->use_muon) {
            float lr = (float)(c->lr_muon * lr_mult), wd = c->weight_decay;
            cuda_muon_momentum(o->g, m, v, gr, t->numel, c->muon_momentum, gscale); /* v holds the update */
            newton_schulz(o, v, t->rows, t->cols);
            float scale = sqrtf(fmaxf(1.0f, (float)t->rows / (float)t->cols));
            cuda_muon_apply(o->g, p, v, t->numel, lr * scale, 1.0f - lr * wd);
            continue;
        }
        float lr0, wd;
        group_lr_wd(c, t->group, &lr0, &wd);
        float lr = (float)(lr0 * lr_mult);
        optim_adamw_coeffs k = {
            .beta1 = c->beta1, .beta2 = c->beta2, .eps = c->eps, .step = (float)(lr / bc1),
            .inv_bc2 = (float)(1.0 / bc2), .decay = 1.0f - lr * wd, .gscale = gscale,
        };
        cuda_adamw(o->g, p, gr, m, v, t->numel, &k);
    }
}

int optim_cuda_get_state(optim_cuda *o, float *m, float *v, int64_t *t, tempo_error *err)
{
    gpu_download_async(o->g, GPU_STREAM_COMPUTE, m, o->m, o->n_params * 4);
    gpu_download_async(o->g, GPU_STREAM_COMPUTE, v, o->v, o->n_params * 4);
    *t = o->t;
    return gpu_sync(o->g, err);
}

int optim_cuda_set_state(optim_cuda *o, const float *m, const float *v, int64_t t, tempo_error *err)
{
    gpu_upload_async(o->g, GPU_STREAM_COMPUTE, o->m, m, o->n_params * 4);
    gpu_upload_async(o->g, GPU_STREAM_COMPUTE, o->v, v, o->n_params * 4);
    o->t = t;
    return gpu_sync(o->g, err);
}
