/* generate.c - the prefill + sample + decode loop of one sequence (see
 * generate.h). */
#include "infer/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/timer.h"

const char *gen_stop_name(gen_stop s)
{
    switch (s) {
    case GEN_STOP_TOKENS: return "tokens";
    case GEN_STOP_SEPARATOR: return "separator";
    case GEN_STOP_CONTEXT: return "context";
    case GEN_STOP_CALLER: return "caller";
    }
    return "unknown";
}

int gen_prompt_window(const int32_t *prompt, int n_prompt, int32_t sep_id, int context, int max_tokens,
                      int32_t **seq, int *n_seq, int *cut, tempo_error *err)
{
    int room = max_tokens < context / 2 ? max_tokens : context / 2;
    int keep = context - room - 1 > 0 ? context - room - 1 : 0;
    *cut = n_prompt > keep ? n_prompt - keep : 0;
    *n_seq = 1 + n_prompt - *cut;
    *seq = malloc(sizeof(int32_t) * (size_t)*n_seq);
    if (!*seq)
        return tempo_fail(err, "generate: out of memory");
    (*seq)[0] = sep_id;
    if (*n_seq > 1)
        memcpy(*seq + 1, prompt + *cut, sizeof(int32_t) * (size_t)(*n_seq - 1));
    return 0;
}

double gen_decode_tokens_per_s(const gen_result *r)
{
    return r->new_tokens > 1 && r->decode_s > 0 ? (r->new_tokens - 1) / r->decode_s : NAN;
}

int infer_generate(infer_engine *e, infer_cache *c, int slot, const int32_t *prompt, int n_prompt,
                   const gen_options *o, gen_token_fn on_token, void *user, gen_result *res,
                   tempo_error *err)
{
    res->prompt_tokens = n_prompt;
    res->new_tokens = 0;
    res->stop = GEN_STOP_TOKENS;
    res->prefill_s = res->decode_s = 0;
    if (o->max_tokens < 1)
        return tempo_usage(err, "generate: token limit %d < 1", o->max_tokens);
    if (slot < 0 || slot >= c->n_slots)
        return tempo_usage(err, "generate: slot %d out of range", slot);
    if (n_prompt < 1 || n_prompt > c->capacity)
        return tempo_usage(err, "generate: prompt of %d tokens (1 to %d allowed)", n_prompt,
                           c->capacity);
    int V = infer_engine_config(e)->vocab_size;
    sampler s;
    if (sampler_init(&s, &o->sample, V, err))
        return -1;
    float *z = malloc(sizeof(float) * (size_t)V);
    int32_t *hist = o->adjust ? malloc(sizeof(int32_t) * ((size_t)n_prompt + (size_t)o->max_tokens)) : NULL;
    if (!z || (o->adjust && !hist)) {
        free(z);
        free(hist);
        sampler_free(&s);
        return tempo_fail(err, "generate: out of memory");
    }
    int n_hist = 0;
    if (hist) {
        memcpy(hist, prompt, sizeof(int32_t) * (size_t)n_prompt);
        n_hist = n_prompt;
    }
    double t0 = timer_now();
    infer_cache_reset(c, slot);
    infer_chunk ch = {slot, prompt, n_prompt, n_prompt - 1};
    int rc = infer_step(e, c, &ch, 1, err);
    int32_t tok = 0;
    if (!rc) {
        infer_logits(e, 0, 1, z);
        if (o->adjust)
            rc = o->adjust(o->adjust_ctx, hist, n_hist, z, err);
        tok = sampler_next(&s, z);
    }
    double t1 = timer_now();
    res->prefill_s = t1 - t0;
    while (!rc) {
        if (o->stop_at_sep && tok == o->sep_id) {
            res->stop = GEN_STOP_SEPARATOR;
            break;
        }
        res->new_tokens++;
        if (on_token && on_token(user, tok)) {
            res->stop = GEN_STOP_CALLER;
            break;
        }
        if (res->new_tokens >= o->max_tokens) {
            res->stop = GEN_STOP_TOKENS;
            break;
        }
        if (c->len[slot] >= c->capacity) {
            res->stop = GEN_STOP_CONTEXT;
            break;
        }
        ch = (infer_chunk){slot, &tok, 1, 0};
        if ((rc = infer_step(e, c, &ch, 1, err)))
            break;
        infer_logits(e, 0, 1, z);
        if (hist) {
            hist[n_hist++] = tok;
            if ((rc = o->adjust(o->adjust_ctx, hist, n_hist, z, err)))
                break;
        }
        tok = sampler_next(&s, z);
    }
    res->decode_s = timer_now() - t1;
    free(z);
    free(hist);
    sampler_free(&s);
    return rc;
}
