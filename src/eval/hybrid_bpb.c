/* hybrid_bpb.c - bits per byte of the hybrid model (see hybrid_bpb.h). */
#include "eval/hybrid_bpb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/timer.h"

int hybrid_bpb_evaluate(model *m, const hybrid_parts *h, int adapt, const int32_t *tokens, size_t n_tokens,
                        uint64_t n_bytes, int stride, int batch, mixer *fitted, hybrid_bpb_result *res,
                        tempo_error *err)
{
    memset(res, 0, sizeof *res);
    double t0 = timer_now();
    double *nats = malloc(sizeof(double) * (n_tokens ? n_tokens : 1));
    float *top = malloc(sizeof(float) * (n_tokens ? n_tokens : 1));
    double *confidence = malloc(sizeof(double) * (n_tokens ? n_tokens : 1));
    if (!nats || !top || !confidence) {
        free(nats); free(top); free(confidence);
        return tempo_fail(err, "evaluation: out of memory for %zu tokens", n_tokens);
    }
    if (bpb_evaluate_tokens(m, tokens, n_tokens, n_bytes, stride, batch, nats, top, &res->model, err)) {
        free(nats); free(top); free(confidence);
        return -1;
    }
    double t1 = timer_now();
    res->present[MIX_MODEL] = 1;
    if (!hybrid_parts_any(h) && !fitted) {
        /* the transformer alone: its own figure, bit for bit */
        free(nats); free(top); free(confidence);
        res->bits = res->model.bits;
        res->bpb = res->model.bpb;
        res->bpb_component[MIX_MODEL] = res->model.bpb;
        res->bpb_component[MIX_MEMORY] = res->bpb_component[MIX_CACHE] = res->bpb_component[MIX_MATCH] = NAN;
        res->mean_weight[MIX_MODEL] = 1;
        res->mean_weight[MIX_MEMORY] = res->mean_weight[MIX_CACHE] = res->mean_weight[MIX_MATCH] = NAN;
        res->adapt = adapt;
        res->seconds = timer_now() - t0;
        return 0;
    }
    for (size_t i = 1; i < n_tokens; i++) {
        nats[i] = exp(-nats[i]);          /* now the transformer's probability of token i */
        confidence[i] = exp((double)top[i]);   /* and its largest probability there */
    }
    free(top);
    mixture_options o = hybrid_parts_options(h, adapt);
    mixture_totals t;
    int rc = mixture_score(&o, &h->mx, tokens, n_tokens, nats, confidence, NULL, &t, fitted, err);
    free(nats);
    free(confidence);
    if (rc)
        return -1;
    res->adapt = adapt;
    res->bits = t.bits;
    res->bpb = t.bits / (double)n_bytes;
    res->present[MIX_MODEL] = 1;
    res->present[MIX_MEMORY] = o.memory != NULL;
    res->present[MIX_CACHE] = o.cache_order > 0;
    res->present[MIX_MATCH] = o.match_length > 0;
    for (int c = 0; c < MIX_N; c++) {
        res->bpb_component[c] = res->present[c] ? t.bits_component[c] / (double)n_bytes : NAN;
        res->mean_weight[c] = t.n_tokens ? t.weight_sum[c] / (double)t.n_tokens : NAN;
    }
    res->mixture_seconds = timer_now() - t1;
    res->seconds = timer_now() - t0;
    if (!isfinite(res->bpb))
        return tempo_fail(err, "evaluation: the mixture produced a non-finite bpb");
    return 0;
}
