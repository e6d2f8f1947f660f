/* model_pass.c - the model's forward and backward over a batch (see model.h):
 * embedding, the layers' two halves (block.c), final norm, and the fused head
 * + cross-entropy (lm_head.h), and the backward pass's hand-over of each
 * finished gradient span (model_set_grad_ready). Nothing here allocates. */
#include "model/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/op_profile.h"
#include "core/omp_team.h"

#include "kernels/cpu/embedding.h"
#include "kernels/cpu/lm_head.h"
#include "kernels/cpu/rmsnorm.h"
#include "model/model_cuda.h"

static int ids_ok(const int32_t *ids, int N, int V)
{
    for (int n = 0; n < N; n++)
        if (ids[n] < 0 || ids[n] >= V)
            return 0;
    return 1;
}

/* model_forward on the attached GPU: the batch there, the pass, the
 * per-token outputs back into the host buffers the accessors read. */
static double device_forward(model *m, const int32_t *tokens, const int32_t *targets, int B, int T)
{
    model_cuda *g = m->device;
    tempo_error e;
    int N = B * T;
    model_cuda_set_training(g, m->training);
    model_cuda_set_eval_beta(g, m->head_ws.beta);
    if (model_cuda_set_batch(g, tokens, targets, B, T, targets ? m->head_ws.mix_b : NULL, m->head_ws.mix_a, &e))
        goto failed;
    model_cuda_forward(g);
    if (!targets)
        return gpu_sync(model_cuda_gpu(g), &e) ? (snprintf(m->device_error, sizeof m->device_error, "%s", e.msg), NAN)
                                               : 0.0;
    if (model_cuda_token_outputs(g, m->losses, m->top_logprob, m->training ? NULL : m->top_id,
                                 m->training ? NULL : m->log_norm, &e))
        goto failed;
    memcpy(m->targets, targets, sizeof(int32_t) * (size_t)N);
    m->have_targets = 1;
    double sum = 0;
    for (int n = 0; n < N; n++)
        sum += m->losses[n];
    return sum / N;
failed:
    snprintf(m->device_error, sizeof m->device_error, "%s", e.msg);
    return NAN;
}

double model_forward(model *m, const int32_t *tokens, const int32_t *targets, int B, int T)
{
    const model_config *c = &m->cfg;
    m->have_targets = 0;
    m->head_dw_ready = 0;
    m->head_ws.logits_rows = 0; /* an evaluation head below may set it again */
    if (!tokens || B < 1 || B > m->max_batch || T < 1 || T > c->context)
        return NAN;
    int N = B * T, C = c->d_model, V = c->vocab_size, L = c->n_layers;
    if (!ids_ok(tokens, N, V) || (targets && !ids_ok(targets, N, V)))
        return NAN;
    m->B = B;
    m->T = T;
    memcpy(m->tokens, tokens, sizeof(int32_t) * (size_t)N);
    if (m->device)
        return device_forward(m, tokens, targets, B, T);
    if (m->host_only)
        return NAN; /* built for a GPU that is not attached */
    OP_PROFILE_TIMED(m->prof, OP_EMBEDDING,
                     embedding_forward(model_residual(m, 0), tokens, m->tok_emb, N, C));
    for (int l = 0; l < L; l++) {
        model_block_attn_forward(&m->dims, &m->lw[l], &m->acts[l], model_residual(m, 2 * l),
                                 model_residual(m, 2 * l + 1), B, T);
        model_block_mlp_forward(&m->dims, &m->lw[l], &m->acts[l], model_residual(m, 2 * l + 1),
                                model_residual(m, 2 * l + 2), N);
    }
    OP_PROFILE_TIMED(m->prof, OP_NORM,
          rmsnorm_forward(m->xf, m->rstd_f, model_residual(m, 2 * L), m->final_norm, N, C, c->norm_eps));
    if (!targets)
        return 0.0;
    memcpy(m->targets, targets, sizeof(int32_t) * (size_t)N);
    op_mark t0 = op_profile_begin(m->prof);
    if (m->training) {
        memset(m->head_dw, 0, sizeof(float) * (size_t)V * C);
        lm_head_loss_forward_backward(m->losses, m->dxf, m->head_dw, m->xf, m->head, targets, N,
                                      C, V, c->logit_softcap, 1.0f / (float)N, m->head_scratch,
                                      MODEL_HEAD_CHUNK_ROWS, &m->head_ws);
        m->head_dw_ready = 1;
    } else {
        lm_head_loss_forward(m->losses, m->xf, m->head, targets, N, C, V, c->logit_softcap,
                             m->head_scratch, MODEL_HEAD_CHUNK_ROWS, &m->head_ws);
    }
    op_profile_end(m->prof, OP_HEAD, t0);
    m->have_targets = 1;
    double sum = 0;
    for (int n = 0; n < N; n++)
        sum += m->losses[n];
    return sum / N;
}

double model_forward_eval(model *m, const int32_t *tokens, const int32_t *targets, int B, int T, float beta,
                          const int32_t *score_from)
{
    m->head_ws.beta = beta > 0 ? beta : 1;   /* the head's (and the device's) for this forward */
    int skips = score_from && !m->device && !m->training;
    for (int b = 0; skips && b < B; b++)
        if (score_from[b] < 0 || score_from[b] > T)
            skips = 0;   /* out of range: every position, as without */
    if (skips) {
        m->head_ws.row_from = score_from;
        m->head_ws.row_group = T;
    }
    double loss = model_forward(m, tokens, targets, B, T);
    m->head_ws.beta = 1;
    m->head_ws.row_from = NULL;
    if (skips && targets && isfinite(loss)) {   /* the mean of the read positions */
        double sum = 0;
        long n = 0;
        for (int b = 0; b < B; b++)
            for (int t = score_from[b]; t < T; t++, n++)
                sum += m->losses[(size_t)b * T + t];
        loss = n ? sum / (double)n : 0.0;
    }
    return loss;
}

void model_set_grad_ready(model *m, model_grad_ready_fn fn, void *ctx)
{
    m->grad_ready = fn;
    m->grad_ready_ctx = ctx;
}

int model_grad_spans(const model *m) { return m->cfg.n_layers + 2; }

void model_grad_span(const model *m, int i, size_t *offset, size_t *count)
{
    const int L = m->cfg.n_layers;
    /* a layer's first tensor is its attention norm (model.c's layout) */
    size_t fin = (size_t)(m->g_final_norm - m->grads);
    size_t first0 = L > 0 ? (size_t)(m->lg[0].attn_norm - m->grads) : fin;
    size_t a, e;
    if (i <= 0) {
        a = fin;
        e = m->n_params;
    } else if (i > L) {
        a = 0;
        e = first0;
    } else {
        int l = L - i;
        a = (size_t)(m->lg[l].attn_norm - m->grads);
        e = l + 1 < L ? (size_t)(m->lg[l + 1].attn_norm - m->grads) : fin;
    }
    *offset = a;
    *count = e - a;
}

static void span_ready(model *m, int i)
{
    if (!m->grad_ready)
        return;
    size_t off, n;
    model_grad_span(m, i, &off, &n);
    m->grad_ready(m->grad_ready_ctx, off, n);
}

void model_backward(model *m)
{
    model_backward_rows(m, m->B);
}

void model_backward_rows(model *m, int rows)
{
    if (!m->have_targets || rows < 1 || rows > m->B)
        return;
    if (m->device) {   /* the GPU's backward covers the whole forward */
        if (rows == m->B)
            model_cuda_backward(m->device);
        return;
    }
    if (model_backward_lanes(m, rows) == 0)   /* a short forward on two threads */
        return;
    const model_config *c = &m->cfg;
    /* every activation is [B, ...] with the sequences outermost: the first `rows` of them are the
     * first rows * T positions of each buffer, as if the forward had held only them */
    int B = rows, T = m->T, N = B * T, C = c->d_model, V = c->vocab_size, L = c->n_layers;
    op_mark t0 = op_profile_begin(m->prof);
    if (m->head_dw_ready && rows == m->B) {
        size_t n = (size_t)V * C;
        float *g = m->g_head;
        const float *s = m->head_dw;
        OMP_TEAM_FOR(omp_team_worth(n, 65536), size_t, i, n, g[i] += s[i]);
        op_profile_end(m->prof, OP_HEAD_GRAD_ADD, t0);
    } else { /* evaluation-mode forward (or fewer rows than it staged): run the head's training pass
              * now, on the logits that forward left in head_scratch when it could (one chunk) */
        lm_head_loss_forward_backward(m->losses, m->dxf, m->g_head, m->xf, m->head, m->targets,
                                      N, C, V, c->logit_softcap, 1.0f / (float)N,
                                      m->head_scratch, MODEL_HEAD_CHUNK_ROWS, &m->head_ws);
        op_profile_end(m->prof, OP_HEAD, t0);
    }
    OP_PROFILE_TIMED(m->prof, OP_NORM,
                     rmsnorm_backward(m->dres, m->g_final_norm, m->dxf, model_residual(m, 2 * L),
                                       m->final_norm, m->rstd_f, N, C, 0));
    span_ready(m, 0);
    for (int l = L - 1; l >= 0; l--) {
        model_block_mlp_backward(&m->dims, &m->lw[l], &m->lg[l], &m->acts[l], &m->scratch,
                                 model_residual(m, 2 * l + 1), m->dres, N);
        model_block_attn_backward(&m->dims, &m->lw[l], &m->lg[l], &m->acts[l], &m->scratch,
                                  model_residual(m, 2 * l), m->dres, B, T);
        span_ready(m, L - l);
    }
    OP_PROFILE_TIMED(m->prof, OP_EMBEDDING,
                     embedding_backward(m->g_tok_emb, m->tokens, m->dres, N, C));
    span_ready(m, L + 1);
}
