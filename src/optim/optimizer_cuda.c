/* optimizer_cuda.c - the optimizer's step on a GPU (see optimizer_cuda.h),
 * written as optim_step is (optimizer.c): the same per-group rates, the
 * same bias correction in double, the same per-matrix Muon. */
#include "optim/optimizer_cuda.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/gpu_ops.h"

_Static_assert(GROUP_COUNT == 4, "cuda_adamw_tensors takes four groups' rates");

int optim_cuda_create(optim_cuda *o, gpu *g, const optim_config *cfg, const optim_tensor *tensors, int n,
                      size_t n_params, gpu_dtype ns_type, tempo_error *err)
{
    memset(o, 0, sizeof *o);
    o->g = g;
    o->cfg = *cfg;
    o->n_tensors = n;
    o->n_params = n_params;
    o->ns_type = ns_type;
    o->tensors = malloc(sizeof *tensors * (size_t)(n ? n : 1));
    if (!o->tensors)
        return tempo_fail(err, "optimizer on the GPU: out of memory");
    memcpy(o->tensors, tensors, sizeof *tensors * (size_t)n);
    /* Muon's matrices grouped by shape, in batches of at most OPTIM_CUDA_NS_BATCH */
    size_t work = 0;
    long long *offs = malloc(sizeof(long long) * (size_t)(n ? n : 1));
    o->batches = malloc(sizeof *o->batches * (size_t)(n ? n : 1));
    char *done = calloc((size_t)(n ? n : 1), 1);
    if (!offs || !o->batches || !done) {
        free(offs);
        free(done);
        optim_cuda_free(o);
        return tempo_fail(err, "optimizer on the GPU: out of memory");
    }
    int n_offs = 0;
    for (int i = 0; cfg->use_muon && i < n; i++) {
        if (tensors[i].group != GROUP_MATRIX || done[i])
            continue;
        optim_cuda_ns_batch *b = NULL;
        for (int j = i; j < n; j++) {
            if (tensors[j].group != GROUP_MATRIX || done[j] || tensors[j].rows != tensors[i].rows ||
                tensors[j].cols != tensors[i].cols)
                continue;
            if (!b || b->count == OPTIM_CUDA_NS_BATCH) {
                b = &o->batches[o->n_batches++];
                b->rows = tensors[i].rows;
                b->cols = tensors[i].cols;
                b->count = 0;
                b->first = n_offs;
            }
            offs[n_offs++] = (long long)tensors[j].offset;
            b->count++;
            done[j] = 1;
        }
    }
    free(done);
    /* AdamW's tensors: every one Muon does not take */
    long long *a_offs = malloc(sizeof(long long) * 2 * (size_t)(n ? n : 1));
    int32_t *a_group = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!a_offs || !a_group) {
        free(offs); free(a_offs); free(a_group);
        optim_cuda_free(o);
        return tempo_fail(err, "optimizer on the GPU: out of memory");
    }
    long long *a_numel = a_offs + n;
    for (int i = 0; i < n; i++) {
        if (cfg->use_muon && tensors[i].group == GROUP_MATRIX)
            continue;
        a_offs[o->n_adam] = (long long)tensors[i].offset;
        a_numel[o->n_adam] = (long long)tensors[i].numel;
        a_group[o->n_adam++] = (int32_t)tensors[i].group;
        if (tensors[i].numel > o->adam_max) o->adam_max = tensors[i].numel;
    }
    if (o->n_adam > 65535) { /* a grid row per tensor */
        int n_adam = o->n_adam;
        free(offs); free(a_offs); free(a_group);
        optim_cuda_free(o);
        return tempo_fail(err, "optimizer on the GPU: %d tensors for AdamW, more than 65,535", n_adam);
    }
    size_t partials = cuda_sum_partials(n_params);
    for (int k = 0; k < o->n_batches; k++) {
        const optim_cuda_ns_batch *b = &o->batches[k];
        size_t r = (size_t)(b->rows < b->cols ? b->rows : b->cols), rc = (size_t)b->rows * b->cols;
        size_t w = (size_t)b->count * (2 * rc + 2 * r * r), np = cuda_muon_partials(rc, b->count);
        if (w > work) work = w;
        if (np > partials) partials = np;
    }
    if (gpu_alloc(g, &o->m, n_params * 4, "the optimizer's first moments", err) ||
        gpu_alloc(g, &o->v, n_params * 4, "the optimizer's second moments", err) ||
        gpu_alloc(g, &o->ns_work, (cfg->use_muon ? work : 1) * 4, "Newton-Schulz's scratch", err) ||
        gpu_alloc(g, &o->sum_partial, partials * 8, "a reduction's scratch", err) ||
        gpu_alloc(g, &o->sums, 4 * 8, "a reduction's result", err) ||
        gpu_alloc(g, &o->ns_offs, sizeof(long long) * (size_t)(n_offs ? n_offs : 1), "Muon's offsets", err) ||
        gpu_alloc(g, &o->ns_sums, sizeof(double) * OPTIM_CUDA_NS_BATCH, "Muon's norms", err) ||
        gpu_alloc(g, &o->adam_offs, sizeof(long long) * (size_t)(o->n_adam ? o->n_adam : 1), "AdamW's offsets", err) ||
        gpu_alloc(g, &o->adam_numel, sizeof(long long) * (size_t)(o->n_adam ? o->n_adam : 1), "AdamW's sizes", err) ||
        gpu_alloc(g, &o->adam_group, sizeof(int32_t) * (size_t)(o->n_adam ? o->n_adam : 1), "AdamW's groups", err)) {
        free(offs); free(a_offs); free(a_group);
        optim_cuda_free(o);
        return tempo_error_prefix(err, "optimizer on the GPU");
    }
    gpu_upload_async(g, GPU_STREAM_COMPUTE, o->ns_offs, offs, sizeof(long long) * (size_t)n_offs);
    gpu_upload_async(g, GPU_STREAM_COMPUTE, o->adam_offs, a_offs, sizeof(long long) * (size_t)o->n_adam);
    gpu_upload_async(g, GPU_STREAM_COMPUTE, o->adam_numel, a_numel, sizeof(long long) * (size_t)o->n_adam);
    gpu_upload_async(g, GPU_STREAM_COMPUTE, o->adam_group, a_group, sizeof(int32_t) * (size_t)o->n_adam);
    gpu_memset_async(g, o->m, 0, n_params * 4);
    gpu_memset_async(g, o->v, 0, n_params * 4);
    int bad = gpu_sync(g, err); /* the uploads are done: their host arrays can go */
    free(offs); free(a_offs); free(a_group);
    if (bad) {
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
        gpu_free(o->g, o->ns_offs);
        gpu_free(o->g, o->ns_sums);
        gpu_free(o->g, o->adam_offs);
        gpu_free(o->g, o->adam_numel);
        gpu_free(o->g, o->adam_group);
    }
    free(o->tensors);
    free(o->batches);
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

/* Muon for one batch of same-shape matrices: momentum into m, the update
 * into v (with its norms), optim_newton_schulz's iteration on the batch at
 * once (the iterates X, A, AA and Y of o->ns_type; bf16: every product's
 * operands and result bf16, its sums fp32), then the step from its result */
static void muon_batch(optim_cuda *o, const optim_cuda_ns_batch *bt, gpu_ptr params, gpu_ptr grads, float gscale,
                       float lr, float wd)
{
    const float a = 3.4445f, b = -4.7750f, c = 2.0315f;
    gpu *g = o->g;
    gpu_dtype t = o->ns_type;
    size_t es = t == GPU_BF16 ? 2 : 4;
    int rows = bt->rows, cols = bt->cols, cnt = bt->count, transposed = rows > cols;
    int r = transposed ? cols : rows, n = transposed ? rows : cols;
    long long rn = (long long)r * n, rr = (long long)r * r;
    gpu_ptr X = o->ns_work, A = X + (size_t)(cnt * rn) * es, AA = A + (size_t)(cnt * rr) * es;
    gpu_ptr Y = AA + (size_t)(cnt * rr) * es;
    gpu_ptr offs = o->ns_offs + (size_t)bt->first * sizeof(long long);
    cuda_muon_momentum_sumsq(g, o->ns_sums, o->sum_partial, o->m, o->v, grads, offs, cnt, (size_t)rn,
                             o->cfg.muon_momentum, gscale);
    cuda_ns_gather(g, t, X, o->v, offs, cnt, rows, cols, o->ns_sums);
    gpu_profile_gemm_label(g, GPU_GEMM_OPTIMIZER);
    for (int s = 0; s < o->cfg.ns_steps; s++) {
        gpu_mat mX = {X, t, n}, mA = {A, t, r};
        gpu_gemm_batched(g, 0, 1, r, r, n, 1.0f, mX, rn, mX, rn, 0.0f, mA, A, rr, cnt, GPU_MATH_F32);  /* A = X X^T */
        gpu_gemm_batched(g, 0, 0, r, r, r, c, mA, rr, mA, rr, b, mA, AA, rr, cnt, GPU_MATH_F32);       /* b A + c A A */
        gpu_mat mB = {AA, t, r};
        gpu_gemm_batched(g, 0, 0, r, n, r, 1.0f, mB, rr, mX, rn, a, mX, Y, rn, cnt, GPU_MATH_F32);    /* a X + B X */
        gpu_ptr tmp = X; X = Y; Y = tmp;
    }
    float scale = sqrtf(fmaxf(1.0f, (float)rows / (float)cols));
    cuda_muon_apply(g, t, params, o->v, X, offs, cnt, rows, cols, lr * scale, 1.0f - lr * wd);
}

void optim_cuda_step(optim_cuda *o, gpu_ptr params, gpu_ptr grads, double grad_norm, double lr_mult)
{
    const optim_config *c = &o->cfg;
    float gscale = 1.0f;
    if (c->grad_clip > 0 && grad_norm > c->grad_clip)
        gscale = (float)(c->grad_clip / grad_norm);
    o->t++;
    double bc1 = 1.0 - pow(c->beta1, (double)o->t), bc2 = 1.0 - pow(c->beta2, (double)o->t);
    if (c->use_muon) { /* the 2-D hidden matrices: Muon, by batches of one shape */
        float lr = (float)(c->lr_muon * lr_mult), wd = c->weight_decay;
        for (int k = 0; k < o->n_batches; k++)
            muon_batch(o, &o->batches[k], params, grads, gscale, lr, wd);
    }
    optim_adamw_coeffs k = {.beta1 = c->beta1, .beta2 = c->beta2, .eps = c->eps, .inv_bc2 = (float)(1.0 / bc2),
                            .gscale = gscale};
    float step[GROUP_COUNT], decay[GROUP_COUNT];
    for (int grp = 0; grp < GROUP_COUNT; grp++) { /* optim_step's rates, group by group */
        float lr0, wd;
        optim_group_lr_wd(c, (optim_group)grp, &lr0, &wd);
        float lr = (float)(lr0 * lr_mult);
        step[grp] = (float)(lr / bc1);
        decay[grp] = 1.0f - lr * wd;
    }
    cuda_adamw_tensors(o->g, params, grads, o->m, o->v, o->adam_offs, o->adam_numel, o->adam_group, o->n_adam,
                       o->adam_max, &k, step, decay);
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
