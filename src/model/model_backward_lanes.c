/* model_backward_lanes.c - the backward of a short forward (at most one head
 * chunk of rows: the learning reader's step on one window) on two threads
 * at once, as two lanes in one parallel region (lane_signal.h hands the
 * stages over; no barrier, no second region).
 *  - The chain (thread 0): the head's last rows (their row passes, and the
 *    logits of those the forward did not leave), the head's dx, the final
 *    norm, then each layer's halves from the top (block.h: ..._dx) with half
 *    of each attention backward.
 *  - The weights (thread 1): the head's first rows (most of those whose
 *    logits the forward skipped: their logits and row passes), then each
 *    half's weight gradients (..._dw) and the other half of each attention
 *    backward, as soon as the chain has posted their inputs.
 *  - The head's weight gradient, the largest product and the one nothing
 *    waits for, goes in slices to whichever lane is idle: the weight lane
 *    while it waits for the chain, then both once their own work is done.
 * No product is split differently from the serial backward's rows and
 * columns, so the gradients are the serial backward's bits. What it buys
 * over the team's backward (each product group split across the threads in
 * a region of its own, 26 a step) is measured in the lab notebook
 * (2026-12-07, forty-second session). */
#include "model/model_internal.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "kernels/cpu/embedding.h"
#include "kernels/cpu/lm_head.h"
#include "kernels/cpu/rmsnorm.h"

/* The head's weight gradient in this many slices of the vocabulary. */
#define HEAD_DW_SLICES 16

/* The hand-over buffers, for MODEL_HEAD_CHUNK_ROWS rows: 0, or -1 without memory. */
static int lanes_reserve(model *m)
{
    if (m->lane_buf)
        return 0;
    const model_config *c = &m->cfg;
    size_t N = MODEL_HEAD_CHUNK_ROWS, C = c->d_model, F = c->d_ff;
    size_t HD = (size_t)c->n_heads * m->dims.D, KD = (size_t)c->n_kv_heads * m->dims.D;
    size_t per = N * (2 * C + HD + 2 * KD + 2 * F);
    m->lane_dys = calloc((size_t)c->n_layers, sizeof *m->lane_dys);
    m->lane_buf = malloc(sizeof(float) * per * (size_t)c->n_layers);
    if (!m->lane_dys || !m->lane_buf) {
        free(m->lane_dys);
        free(m->lane_buf);
        m->lane_dys = NULL;
        m->lane_buf = NULL;
        return -1;
    }
    float *p = m->lane_buf;
    for (int l = 0; l < c->n_layers; l++) {
        model_layer_dys *y = &m->lane_dys[l];
        y->dy_o = p, p += N * C;
        y->dq = p, p += N * HD;
        y->dk = p, p += N * KD;
        y->dv = p, p += N * KD;
        y->dy_down = p, p += N * C;
        y->d_up = p, p += N * F;
        y->d_gate = p, p += N * F;
    }
    return 0;
}

/* One backward's shared state. */
typedef struct {
    model *m;
    int B, T, N;
    int staged;          /* the forward staged the head's gradients (head_dw, dxf) */
    int fresh;           /* the head rows [0, fresh) whose logits are computed */
    int split;           /* the weight lane's head rows [0, split), the chain's the others */
    int units;           /* the chain's share of each attention backward's units */
    lane_signal chain;   /* posted by the chain: 1 (its head rows' dz), then 5 a layer */
    lane_signal back;    /* posted by the weight lane: 1 (its head rows' dz), then 1 a layer */
    atomic_int slice;    /* the next slice of the head's weight gradient */
} lanes;

/* Takes and runs one slice of the head's weight gradient; 0 when none is left. */
static int head_dw_slice(lanes *ln, gemm_context *ctx)
{
    int i = atomic_fetch_add_explicit(&ln->slice, 1, memory_order_relaxed);
    if (i >= HEAD_DW_SLICES)
        return 0;
    model *m = ln->m;
    int C = m->cfg.d_model, V = m->cfg.vocab_size;
    int v0 = (int)((long)V * i / HEAD_DW_SLICES), v1 = (int)((long)V * (i + 1) / HEAD_DW_SLICES);
    if (ln->staged) {
        for (size_t k = (size_t)v0 * C; k < (size_t)v1 * C; k++)
            m->g_head[k] += m->head_dw[k];
    } else {
        lm_head_dw_rows(m->g_head, m->xf, ln->N, v0, v1, C, V, m->head_scratch, ctx);
    }
    return 1;
}

/* The weight lane's wait for n > 1 of the chain's posts, running slices of
 * the head's weight gradient meanwhile: once the chain's first post says
 * its head rows' dz are there (the lane's own rows came first). */
static void wait_or_slice(lanes *ln, int n, gemm_context *ctx)
{
    lane_signal_wait(&ln->chain, 1);
    while (lane_signal_posted(&ln->chain) < n)
        if (!head_dw_slice(ln, ctx)) {
            lane_signal_wait(&ln->chain, n);
            return;
        }
}

static void chain_lane(lanes *ln, lane_signal *back)
{
    model *m = ln->m;
    const model_config *c = &m->cfg;
    int N = ln->N, C = c->d_model, V = c->vocab_size, L = c->n_layers;
    if (!ln->staged) {   /* the rows whose logits the forward left; then dx, the weight lane's rows last */
        lm_head_dz_rows(m->losses, m->xf, m->head, m->targets, ln->split, N, ln->fresh, C, V, c->logit_softcap,
                        1.0f / (float)N, m->head_scratch, &m->head_ws, &m->gemm[0]);
        lane_signal_post(&ln->chain);
        lm_head_dx_rows(m->dxf, m->head, ln->split, N, C, V, m->head_scratch, &m->gemm[0]);
        lane_signal_wait(back, 1);
        lm_head_dx_rows(m->dxf, m->head, 0, ln->split, C, V, m->head_scratch, &m->gemm[0]);
    } else {
        lane_signal_post(&ln->chain);
    }
    rmsnorm_backward(m->dres, m->g_final_norm, m->dxf, model_residual(m, 2 * L), m->final_norm, m->rstd_f, N, C, 0);
    for (int l = L - 1; l >= 0; l--) {
        model_block_mlp_backward_dx(&m->dims, &m->lw[l], &m->lg[l], &m->acts[l], &m->scratch, &m->lane_dys[l],
                                    model_residual(m, 2 * l + 1), m->dres, N, &ln->chain);
        model_block_attn_backward_dx(&m->dims, &m->lw[l], &m->lg[l], &m->acts[l], &m->scratch, &m->lane_dys[l],
                                     model_residual(m, 2 * l), m->dres, ln->B, ln->T, ln->units,
                                     &ln->chain, back, 1 + (L - 1 - l));
    }
}

/* The weight lane's first stage: the head rows the forward skipped, their
 * logits and row passes. */
static void weight_head(lanes *ln, gemm_context *ctx)
{
    model *m = ln->m;
    const model_config *c = &m->cfg;
    if (!ln->staged)
        lm_head_dz_rows(m->losses, m->xf, m->head, m->targets, 0, ln->split, ln->fresh, c->d_model,
                        c->vocab_size, c->logit_softcap, 1.0f / (float)ln->N, m->head_scratch, &m->head_ws, ctx);
    lane_signal_post(&ln->back);
}

/* Then the layers' weight gradients and the other half of each attention backward. */
static void weight_layers(lanes *ln, gemm_context *ctx)
{
    model *m = ln->m;
    int L = m->cfg.n_layers;
    for (int l = L - 1; l >= 0; l--) {
        int after = 1 + 5 * (L - 1 - l);
        wait_or_slice(ln, after + 1, ctx);
        model_block_mlp_backward_dw(&m->dims, ctx, &m->lg[l], &m->acts[l], &m->lane_dys[l], ln->N, &ln->chain,
                                    after);
        wait_or_slice(ln, after + 4, ctx);   /* attention's input gradient */
        model_block_attn_backward_dw(&m->dims, ctx, &m->lg[l], &m->acts[l], &m->scratch, &m->lane_dys[l], ln->B,
                                     ln->T, ln->units, &ln->chain, after + 2, &ln->back);
    }
}

int model_backward_lanes(model *m, int rows)
{
    int T = m->T, N = rows * T;
    if (m->device || m->prof || m->grad_ready || m->n_gemm < 2 || N > MODEL_HEAD_CHUNK_ROWS ||
        omp_get_level() > 0 || omp_get_max_threads() < 2 || lanes_reserve(m))
        return -1;
    lanes ln = {.m = m, .B = rows, .T = T, .N = N};
    /* the forward's staged head gradients cover all its rows (model_backward_rows) */
    ln.staged = m->head_dw_ready && rows == m->B;
    if (!ln.staged && (ln.fresh = lm_head_split_begin(&m->head_ws, N, m->cfg.logit_softcap,
                                                      MODEL_HEAD_CHUNK_ROWS)) < 0)
        return -1;
    /* the weight lane's rows: their logits and row passes take about as long as the chain's row passes
     * and dx of the others when it has 7/8 of the rows to compute (the learning reader's step, where
     * the forward left half the rows' logits: measured, lab notebook 2026-12-07) */
    ln.split = ln.fresh * 7 / 8;
    ln.units = (rows * m->cfg.n_kv_heads + 1) / 2;
    lane_signal_init(&ln.chain);
    lane_signal_init(&ln.back);
    atomic_init(&ln.slice, 0);
#pragma omp parallel num_threads(2)
    {
        int t = omp_get_thread_num();
        gemm_context *ctx = &m->gemm[t];
        if (omp_get_num_threads() < 2) {   /* one thread after all: the stages in an order that needs no wait */
            ln.units = rows * m->cfg.n_kv_heads;   /* the chain runs every attention unit */
            weight_head(&ln, ctx);
            chain_lane(&ln, NULL);
            weight_layers(&ln, ctx);
        } else if (t == 0) {
            chain_lane(&ln, &ln.back);
        } else {
            weight_head(&ln, ctx);
            weight_layers(&ln, ctx);
        }
        while (head_dw_slice(&ln, ctx))
            ;
    }
    /* after both lanes: a tied head's gradient is the embedding's too */
    embedding_backward(m->g_tok_emb, m->tokens, m->dres, N, m->cfg.d_model);
    return 0;
}
