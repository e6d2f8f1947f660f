/* hybrid_bpb.c - bits per byte of the hybrid model (see hybrid_bpb.h). */
#include "eval/hybrid_bpb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/timer.h"

/* Part `part` of `parts` of the transformer's reading: its share of the
 * windows, or with lr > 0 (the learning reader, a sequence) all of them on
 * part 0 and none elsewhere. */
static int model_part(model *m, const int32_t *tokens, size_t n_tokens, uint64_t n_bytes, int stride, int batch,
                      int part, int parts, double lr, const bpb_token_out *out, progress_meter *progress,
                      bpb_result *r, tempo_error *err)
{
    if (lr > 0 && part != 0)
        return 0;   /* the learning reader is one sequence: all of it on part 0 */
    bpb_options o = {.stride = stride, .batch = batch, .part = part, .parts = parts, .lr = lr, .out = out,
                     .progress = progress};
    return bpb_evaluate(m, tokens, n_tokens, n_bytes, &o, r, err);
}

/* The transformer's part over the ranks: each runs its windows into zeroed
 * arrays, which are then summed over the ranks (exact: every entry comes
 * from one rank), and the totals recomputed in token order, as one process
 * sums them. */
static int model_part_ranks(dist_context *dist, model *m, const int32_t *tokens, size_t n_tokens, uint64_t n_bytes,
                            int stride, int batch, double lr, const bpb_token_out *out, progress_meter *progress,
                            bpb_result *r, tempo_error *err)
{
    double *nats = out->nats;
    memset(nats, 0, sizeof(double) * n_tokens);
    memset(out->top, 0, sizeof(float) * n_tokens);
    memset(out->top_id, 0, sizeof(int32_t) * n_tokens);
    memset(out->log_norm, 0, sizeof(float) * n_tokens);
    double t0 = timer_now();
    if (model_part(m, tokens, n_tokens, n_bytes, stride, batch, dist->rank, dist->world, lr, out, progress, r,
                   err) ||
        dist_allreduce_sum_f64(dist, nats, n_tokens, err) || dist_allreduce_sum_f32(dist, out->top, n_tokens, err) ||
        dist_allreduce_sum_f32(dist, out->log_norm, n_tokens, err))
        return -1;
    /* the ids travel as doubles (exact: ids are below 2^20, one rank's entry is non-zero) */
    double *ids = malloc(sizeof(double) * n_tokens);
    if (!ids)
        return tempo_fail(err, "evaluation: out of memory for %zu tokens", n_tokens);
    for (size_t i = 0; i < n_tokens; i++)
        ids[i] = out->top_id[i];
    if (dist_allreduce_sum_f64(dist, ids, n_tokens, err)) {
        free(ids);
        return -1;
    }
    for (size_t i = 0; i < n_tokens; i++)
        out->top_id[i] = (int32_t)ids[i];
    free(ids);
    double sum = 0;
    for (size_t i = 1; i < n_tokens; i++)
        sum += nats[i];
    r->bits = sum / log(2.0);
    r->bpb = r->bits / (double)n_bytes;
    r->tokens = n_tokens - 1;
    r->loss = sum / (double)r->tokens;
    r->seconds = timer_now() - t0;
    return 0;
}

/* What read, in res: the parts (from h), adapt and the transformer's rate. */
static void note_parts(hybrid_bpb_result *res, const hybrid_parts *h, int adapt, double lr)
{
    res->adapt = adapt;
    res->adapt_lr = lr;
    res->memory_order = h->has_memory ? h->memory.order : 0;
    res->cache_order = h->cache_order;
    res->match_length = h->match_length;
    res->mixer_fitted = h->mixer_fitted;
}

/* The whole model's figure from its bits and bpb: the tokens, bytes and
 * windows are the transformer's reading's, seconds the time since t0. */
static void note_whole(hybrid_bpb_result *res, double bits, double bpb, double t0)
{
    bpb_result *w = &res->mixture;
    w->bits = bits;
    w->bpb = bpb;
    w->loss = bits * log(2.0) / (double)res->model.tokens;
    w->bytes = res->model.bytes;
    w->tokens = res->model.tokens;
    w->context = res->model.context;
    w->stride = res->model.stride;
    w->seconds = timer_now() - t0;
}

/* The transformer alone: its own figure, bit for bit, each other component absent. */
static void model_alone(hybrid_bpb_result *res, double t0)
{
    res->bpb_linear = res->model.bpb;
    res->bpb_component[MIX_MODEL] = res->model.bpb;
    res->bpb_component[MIX_MEMORY] = res->bpb_component[MIX_CACHE] = res->bpb_component[MIX_MATCH] = NAN;
    res->mean_weight[MIX_MODEL] = 1;
    res->mean_weight[MIX_MEMORY] = res->mean_weight[MIX_CACHE] = res->mean_weight[MIX_MATCH] = NAN;
    note_whole(res, res->model.bits, res->model.bpb, t0);
}

/* The stream read through the mixture from the transformer's per-token
 * outputs (out, its nats overwritten), into res. */
static int read_mixture(const hybrid_parts *h, int adapt, const int32_t *tokens, size_t n_tokens, uint64_t n_bytes,
                        const bpb_token_out *out, double *confidence, mixer *fitted, hybrid_bpb_result *res,
                        tempo_error *err)
{
    double t1 = timer_now();
    double beta = out->beta;   /* as the head has it */
    double *p_model = out->nats;
    for (size_t i = 1; i < n_tokens; i++) {
        /* now the sharpened transformer's probability of token i, and of its top token */
        p_model[i] = exp(-beta * out->nats[i] + (double)out->log_norm[i]);
        confidence[i] = exp(beta * (double)out->top[i] + (double)out->log_norm[i]);
    }
    mixture_options o = hybrid_parts_options(h, adapt);
    mixture_totals t;
    if (mixture_score(&o, &h->mx, tokens, n_tokens, p_model, confidence, out->top_id, NULL, &t, fitted, err))
        return -1;
    res->bpb_linear = t.bits_linear / (double)n_bytes;
    res->present[MIX_MODEL] = 1;
    res->present[MIX_MEMORY] = o.memory != NULL;
    res->present[MIX_CACHE] = o.cache_order > 0;
    res->present[MIX_MATCH] = o.match_length > 0;
    for (int c = 0; c < MIX_N; c++) {
        res->bpb_component[c] = res->present[c] ? t.bits_component[c] / (double)n_bytes : NAN;
        res->mean_weight[c] = t.n_tokens ? t.weight_sum[c] / (double)t.n_tokens : NAN;
    }
    res->bpb_component[MIX_MODEL] = res->model.bpb;   /* the transformer alone, not sharpened */
    res->mixture_seconds = timer_now() - t1;
    res->mixture.bits = t.bits;   /* note_whole's, once the seconds are counted */
    return 0;
}

int hybrid_bpb_evaluate(dist_context *dist, model *m, const hybrid_parts *h, int adapt, const int32_t *tokens,
                        size_t n_tokens, uint64_t n_bytes, int stride, int batch, mixer *fitted,
                        progress_meter *progress, hybrid_bpb_result *res, tempo_error *err)
{
    if (dist && dist->world <= 1)
        dist = NULL;
    memset(res, 0, sizeof *res);
    double t0 = timer_now();
    double lr = adapt ? h->model_lr : 0;   /* the transformer learning as it reads */
    note_parts(res, h, adapt, lr);
    size_t na = n_tokens ? n_tokens : 1;
    bpb_token_out out = {malloc(sizeof(double) * na), malloc(sizeof(float) * na), malloc(sizeof(int32_t) * na),
                         malloc(sizeof(float) * na), 0};
    double *confidence = malloc(sizeof(double) * na);
#define FREE_ALL() (free(out.nats), free(out.top), free(out.top_id), free(out.log_norm), free(confidence))
    if (!out.nats || !out.top || !out.top_id || !out.log_norm || !confidence) {
        FREE_ALL();
        return tempo_fail(err, "evaluation: out of memory for %zu tokens", n_tokens);
    }
    /* the transformer as the mixture takes it: sharpened by the mixer's beta */
    out.beta = (float)(hybrid_parts_any(h) || fitted ? h->mx.beta : 1);
    int rc = dist ? model_part_ranks(dist, m, tokens, n_tokens, n_bytes, stride, batch, lr, &out, progress,
                                     &res->model, err)
                  : model_part(m, tokens, n_tokens, n_bytes, stride, batch, 0, 1, lr, &out, progress, &res->model,
                               err);
    if (rc) {
        FREE_ALL();
        return -1;
    }
    if (dist && dist->rank != 0) {   /* the mixture is rank 0's */
        FREE_ALL();
        res->bpb_linear = res->model.bpb;
        note_whole(res, res->model.bits, res->model.bpb, t0);
        return 0;
    }
    res->present[MIX_MODEL] = 1;
    if (!hybrid_parts_any(h) && !fitted) {
        FREE_ALL();
        model_alone(res, t0);
        return 0;
    }
    static const char mixing[] = "the count memory, cache and mixer";
    uint64_t targets = n_tokens > 0 ? n_tokens - 1 : 0;
    if (progress)
        progress_meter_update(progress, mixing, 0, targets);
    rc = read_mixture(h, adapt, tokens, n_tokens, n_bytes, &out, confidence, fitted, res, err);
    if (progress && !rc)
        progress_meter_update(progress, mixing, targets, targets);
    FREE_ALL();
#undef FREE_ALL
    if (rc)
        return -1;
    note_whole(res, res->mixture.bits, res->mixture.bits / (double)n_bytes, t0);
    if (!isfinite(res->mixture.bpb))
        return tempo_fail(err, "evaluation: the mixture produced a non-finite bpb");
    return 0;
}
