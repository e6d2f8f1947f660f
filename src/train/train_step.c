/* train_step.c - the optimizer for a model and one step's gradient (see
 * train_step.h). */
#include "train/train_step.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/timer.h"
#include "core/omp_team.h"

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

void train_optim_tensors(const model_tensor *mt, int n, optim_tensor *out)
{
    for (int i = 0; i < n; i++) {
        const model_tensor *t = &mt[i];
        out[i].offset = t->offset;
        out[i].numel = t->numel;
        out[i].rows = t->ndim == 2 ? t->shape[0] : 1;
        out[i].cols = t->ndim == 2 ? t->shape[1] : (int)t->numel;
        out[i].group = group_of(t->kind);
    }
}

int train_optimizer_create_shard(optimizer *opt, const model *m, const optim_config *cfg, int parts, int part,
                                 tempo_error *err)
{
    int n = model_num_tensors(m);
    optim_tensor *ts = malloc(sizeof *ts * (size_t)n);
    if (!ts)
        return tempo_fail(err, "optimizer: out of memory");
    for (int i = 0; i < n; i++)
        train_optim_tensors(model_tensor_at(m, i), 1, &ts[i]);
    int b = 0, e = n;
    int rc = parts > 1 && optim_partition(ts, n, parts, part, &b, &e)
                 ? tempo_fail(err, "optimizer: the model's tensors are not contiguous; cannot shard them")
                 : optim_create_shard(opt, cfg, ts, n, model_num_params(m), b, e, err);
    free(ts);
    /* Muon's Newton-Schulz products in bf16 where the model's are (bf16_products) */
    for (int t = 0; rc == 0 && model_products_bf16(m) && t < opt->n_workers; t++)
        if (gemm_config_set_bf16(&opt->gemm[t].cfg, 1, err))
            rc = -1;
    return rc;
}

static void scale_span(float *g, size_t n, float s)
{
    OMP_TEAM_FOR(omp_team_worth(n, 65536), size_t, i, n, g[i] *= s);
}

/* The k micro-batches; the last one's backward pass hands its finished
 * spans to r (when given), which applies 1/k to each before reducing it. */
static double gradient(model *m, int batch, int micro_batch, int T, train_batch_fn next_batch, void *batch_ctx,
                       int32_t *inputs, int32_t *targets, op_profile *prof, train_reduce *r);

double train_step_gradient(model *m, int batch, int micro_batch, int T, train_batch_fn next_batch,
                           void *batch_ctx, int32_t *inputs, int32_t *targets, op_profile *prof)
{
    return gradient(m, batch, micro_batch, T, next_batch, batch_ctx, inputs, targets, prof, NULL);
}

static void span_ready(void *ctx, size_t off, size_t n)
{
    train_reduce *r = ctx;
    if (r->scale != 1.0f)
        scale_span(model_grads(r->m) + off, n, r->scale);
    double t0 = timer_now();
    dist_overlap_start(&r->ov, off, n);
    r->comm_s += timer_now() - t0;
    r->spans_started++;
}

static double gradient(model *m, int batch, int micro_batch, int T, train_batch_fn next_batch, void *batch_ctx,
                       int32_t *inputs, int32_t *targets, op_profile *prof, train_reduce *r)
{
    int k = batch / micro_batch;
    model_zero_grad(m);
    double loss = 0;
    for (int i = 0; i < k; i++) {
        op_mark t0 = op_profile_begin(prof);
        next_batch(batch_ctx, micro_batch, T, inputs, targets);
        op_profile_end(prof, OP_DATA, t0);
        loss += model_forward(m, inputs, targets, micro_batch, T);
        if (r && i == k - 1) {
            r->m = m;
            r->scale = k > 1 ? 1.0f / (float)k : 1.0f;
            model_set_grad_ready(m, span_ready, r);
        }
        model_backward(m);
    }
    if (r) {
        model_set_grad_ready(m, NULL, NULL);
        return loss / k;
    }
    if (k > 1)
        scale_span(model_grads(m), model_num_params(m), 1.0f / (float)k);
    return loss / k;
}

int train_reduce_init(train_reduce *r, dist_context *d, const model *m, int overlap, const size_t *shard_begin,
                      const size_t *shard_len, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    r->dist = d;
    r->overlap = overlap && d && d->world > 1;
    r->shard_begin = shard_begin;
    r->shard_len = shard_len;
    return r->overlap ? dist_overlap_init(&r->ov, d, model_grad_spans(m), model_num_params(m), err) : 0;
}

static void replicas_free(train_reduce *r)
{
    for (int s = 1; r->rep && s < r->n_rep; s++)
        model_free(r->rep[s]);
    free(r->rep);
    free(r->rep_loss);
    free(r->rep_weight);
    r->rep = NULL;
    r->rep_loss = NULL;
    r->rep_weight = NULL;
    r->n_rep = 0;
}

void train_reduce_free(train_reduce *r)
{
    if (r->overlap)
        dist_overlap_free(&r->ov);
    replicas_free(r);
}

int train_reduce_replicas(train_reduce *r, model *m, int threads, int micro_batch, tempo_error *err)
{
    int n = threads < micro_batch ? threads : micro_batch;
    if (n < 2 || r->n_rep || (r->dist && r->dist->world > 1) || model_device(m))
        return 0;
    r->rep = calloc((size_t)n, sizeof *r->rep);
    r->rep_loss = calloc((size_t)n, sizeof *r->rep_loss);
    r->rep_weight = calloc((size_t)n, sizeof *r->rep_weight);
    if (!r->rep || !r->rep_loss || !r->rep_weight) {
        replicas_free(r);
        return tempo_fail(err, "training: out of memory for %d thread replicas", n);
    }
    r->rep[0] = m;
    r->n_rep = n;
    r->rep_rows = micro_batch;
    for (int s = 0; s < n; s++) {
        int a, b;
        model_replica_share(micro_batch, s, n, &a, &b);
        r->rep_weight[s] = (float)(b - a) / (float)micro_batch;
        if (s > 0 && model_create_replica(&r->rep[s], m, b - a, err)) {
            r->n_rep = s;   /* free what was made */
            replicas_free(r);
            return -1;
        }
    }
    return 0;
}

/* g0 = sum_s w_s g_s (then times scale), in s order for every element, in
 * blocks that stay in cache while each replica's gradient is added. */
static void replicas_sum(train_reduce *r, float scale)
{
    enum { BLOCK = 4096 };
    int n = r->n_rep;
    float *g0 = model_grads(r->rep[0]);
    const float *w = r->rep_weight;
    size_t np = model_num_params(r->rep[0]);
#pragma omp parallel for schedule(static) num_threads(n)
    for (size_t i0 = 0; i0 < np; i0 += BLOCK) {
        size_t i1 = np - i0 < BLOCK ? np : i0 + BLOCK;
        for (size_t i = i0; i < i1; i++)
            g0[i] *= w[0];
        for (int s = 1; s < n; s++) {
            const float *gs = model_grads(r->rep[s]);
            for (size_t i = i0; i < i1; i++)
                g0[i] += w[s] * gs[i];
        }
        if (scale != 1.0f)
            for (size_t i = i0; i < i1; i++)
                g0[i] *= scale;
    }
}

/* The step's gradient on the thread replicas: every micro-batch's rows shared
 * out among them (one thread each), then their sum into the model's. */
static double gradient_replicas(train_reduce *r, int batch, int micro_batch, int T, train_batch_fn next_batch,
                                void *batch_ctx, int32_t *inputs, int32_t *targets, op_profile *prof)
{
    int k = batch / micro_batch, n = r->n_rep;
    for (int s = 0; s < n; s++)
        model_zero_grad(r->rep[s]);
    double loss = 0;
    for (int i = 0; i < k; i++) {
        op_mark t0 = op_profile_begin(prof);
        next_batch(batch_ctx, micro_batch, T, inputs, targets);
        op_profile_end(prof, OP_DATA, t0);
        const float *mix_b;
        float mix_a;
        model_mixture(r->rep[0], &mix_b, &mix_a);
#pragma omp parallel num_threads(n)
        for (int s = omp_get_thread_num(); s < n; s += omp_get_num_threads()) {
            int a, b;
            model_replica_share(micro_batch, s, n, &a, &b);
            model *m = r->rep[s];
            if (s > 0)
                model_set_mixture(m, mix_b ? mix_b + (size_t)a * T : NULL, mix_a);
            r->rep_loss[s] = model_forward(m, inputs + (size_t)a * T, targets + (size_t)a * T, b - a, T);
            model_backward(m);
        }
        for (int s = 0; s < n; s++)
            loss += (double)r->rep_weight[s] * r->rep_loss[s];
    }
    replicas_sum(r, k > 1 ? 1.0f / (float)k : 1.0f);
    return loss / k;
}

int train_step_gradient_ranks(model *m, train_reduce *r, int batch, int micro_batch, int T,
                              train_batch_fn next_batch, void *batch_ctx, int32_t *inputs, int32_t *targets,
                              op_profile *prof, double *loss, tempo_error *err)
{
    r->comm_s = 0;
    if (r->n_rep > 1 && r->rep[0] == m && micro_batch == r->rep_rows) {
        *loss = gradient_replicas(r, batch, micro_batch, T, next_batch, batch_ctx, inputs, targets, prof);
        return 0;
    }
    if (!r->dist || r->dist->world <= 1) {
        *loss = train_step_gradient(m, batch, micro_batch, T, next_batch, batch_ctx, inputs, targets, prof);
        return 0;
    }
    float *g = model_grads(m);
    size_t n = model_num_params(m);
    if (!r->overlap) {
        *loss = train_step_gradient(m, batch, micro_batch, T, next_batch, batch_ctx, inputs, targets, prof);
        double t0 = timer_now();
        int rc = r->shard_begin
                     ? dist_reduce_scatter_mean_f32(r->dist, g, r->shard_begin, r->shard_len, err)
                     : dist_allreduce_mean_f32(r->dist, g, n, err);
        r->comm_s = timer_now() - t0;
        return rc;
    }
    dist_overlap_begin(&r->ov, g, n, r->shard_begin, r->shard_len);
    r->spans_started = 0;
    *loss = gradient(m, batch, micro_batch, T, next_batch, batch_ctx, inputs, targets, prof, r);
    /* a backward pass that did not run (a failed forward) handed over nothing: every rank must still
     * start every span, in the same order, or the collectives would not match */
    for (int i = r->spans_started; i < model_grad_spans(m); i++) {
        size_t off, cnt;
        model_grad_span(m, i, &off, &cnt);
        span_ready(r, off, cnt);
    }
    double t0 = timer_now();
    int rc = dist_overlap_finish(&r->ov, err);
    r->comm_s += timer_now() - t0;
    return rc;
}
