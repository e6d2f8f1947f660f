/* optimizer.c - AdamW and Muon updates, gradient norm (see optimizer.h).
 * Newton-Schulz runs on gemm_f32; the AdamW update and the gradient's sum of
 * squares are the vectorised kernels of kernels/cpu/optim_kernels.h; Muon's
 * elementwise loops are OpenMP loops here. Static schedules throughout, so
 * results are deterministic per thread count. */
#include "optim/optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/optim_kernels.h"

size_t optim_ns_work_len(int rows, int cols)
{
    size_t r = (size_t)(rows < cols ? rows : cols), c = (size_t)(rows < cols ? cols : rows);
    return 2 * r * c + 2 * r * r;
}

int optim_create(optimizer *o, const optim_config *cfg, const optim_tensor *tensors, int n_tensors,
                 size_t n_params, tempo_error *err)
{
    memset(o, 0, sizeof *o);
    o->cfg = *cfg;
    o->n_tensors = n_tensors;
    o->n_params = n_params;
    o->tensors = malloc(sizeof *tensors * (size_t)(n_tensors ? n_tensors : 1));
    o->m = calloc(n_params ? n_params : 1, sizeof(float));
    o->v = calloc(n_params ? n_params : 1, sizeof(float));
    size_t work = 0;
    for (int i = 0; i < n_tensors; i++)
        if (tensors[i].group == GROUP_MATRIX) {
            size_t w = optim_ns_work_len(tensors[i].rows, tensors[i].cols);
            if (w > work) work = w;
        }
    o->ns_work_len = work;
    o->ns_work = malloc(sizeof(float) * (work ? work : 1));
    if (!o->tensors || !o->m || !o->v || !o->ns_work) {
        optim_free(o);
        return tempo_fail(err, "optimizer: out of memory for %zu parameters", n_params);
    }
    memcpy(o->tensors, tensors, sizeof *tensors * (size_t)n_tensors);
    return 0;
}

void optim_free(optimizer *o)
{
    free(o->tensors);
    free(o->m);
    free(o->v);
    free(o->ns_work);
    memset(o, 0, sizeof *o);
}

double optim_grad_norm(const float *grads, size_t n)
{
    return sqrt(optim_kernel_sum_squares(grads, n));
}

void optim_newton_schulz(float *G, int rows, int cols, int steps, float *work)
{
    const float a = 3.4445f, b = -4.7750f, c = 2.0315f;
    int transposed = rows > cols;
    int r = transposed ? cols : rows, n = transposed ? rows : cols;
    size_t rn = (size_t)r * n, rr = (size_t)r * r;
    float *X = work, *A = X + rn, *AA = A + rr, *Y = AA + rr;
    double ss = 0;
    for (size_t i = 0; i < rn; i++) ss += (double)G[i] * G[i];
    float inv = (float)(1.0 / (sqrt(ss) + 1e-7));
    if (transposed) {
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) X[(size_t)j * n + i] = G[(size_t)i * cols + j] * inv;
    } else {
        for (size_t i = 0; i < rn; i++) X[i] = G[i] * inv;
    }
    for (int s = 0; s < steps; s++) {
        gemm_f32(0, 1, r, r, n, X, n, X, n, 0.0f, A, r);          /* A = X X^T */
        gemm_f32(0, 0, r, r, r, A, r, A, r, 0.0f, AA, r);         /* AA = A A */
        for (size_t i = 0; i < rr; i++) A[i] = b * A[i] + c * AA[i]; /* B = bA + cA^2 */
        gemm_f32(0, 0, r, n, r, A, r, X, n, 0.0f, Y, n);          /* Y = B X */
        for (size_t i = 0; i < rn; i++) X[i] = a * X[i] + Y[i];
    }
    if (transposed) {
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) G[(size_t)i * cols + j] = X[(size_t)j * n + i];
    } else {
        memcpy(G, X, sizeof(float) * rn);
    }
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

static void adamw_range(const optim_config *c, float *p, const float *g, float *m, float *v, size_t n,
                        float lr, float wd, float gscale, double bc1, double bc2)
{
    optim_adamw_coeffs k = {
        .beta1 = c->beta1, .beta2 = c->beta2, .eps = c->eps, .step = (float)(lr / bc1),
        .inv_bc2 = (float)(1.0 / bc2), .decay = 1.0f - lr * wd, .gscale = gscale,
    };
    optim_kernel_adamw(p, g, m, v, n, &k);
}

static void muon_tensor(optimizer *o, const optim_tensor *t, float *p, float *g, float lr, float wd,
                        float gscale)
{
    const optim_config *c = &o->cfg;
    float *buf = o->m + t->offset;
    float *upd = o->v + t->offset; /* Muon tensors have no second moment: reuse v as scratch */
    const float mu = c->muon_momentum;
    size_t n = t->numel;
#pragma omp parallel for schedule(static) if (n > 8192)
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * gscale;
        buf[i] = mu * buf[i] + gi;
        upd[i] = gi + mu * buf[i]; /* Nesterov */
    }
    optim_newton_schulz(upd, t->rows, t->cols, c->ns_steps, o->ns_work);
    float scale = sqrtf(fmaxf(1.0f, (float)t->rows / (float)t->cols));
    const float step = lr * scale, decay = 1.0f - lr * wd;
#pragma omp parallel for schedule(static) if (n > 8192)
    for (size_t i = 0; i < n; i++) {
        p[i] = p[i] * decay - step * upd[i];
        upd[i] = 0; /* keep v's Muon slots at zero so checkpoints are tidy */
    }
}

void optim_step(optimizer *o, float *params, float *grads, double grad_norm, double lr_mult)
{
    const optim_config *c = &o->cfg;
    float gscale = 1.0f;
    if (c->grad_clip > 0 && grad_norm > c->grad_clip)
        gscale = (float)(c->grad_clip / grad_norm);
    o->t++;
    double bc1 = 1.0 - pow(c->beta1, (double)o->t), bc2 = 1.0 - pow(c->beta2, (double)o->t);
    for (int i = 0; i < o->n_tensors; i++) {
        const optim_tensor *t = &o->tensors[i];
        float lr, wd;
        group_lr_wd(c, t->group, &lr, &wd);
        if (t->group == GROUP_MATRIX && c->use_muon) {
            muon_tensor(o, t, params + t->offset, grads + t->offset, (float)(c->lr_muon * lr_mult), wd,
                        gscale);
        } else {
            adamw_range(c, params + t->offset, grads + t->offset, o->m + t->offset, o->v + t->offset,
                        t->numel, (float)(lr * lr_mult), wd, gscale, bc1, bc2);
        }
    }
}
