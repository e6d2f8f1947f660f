/* generate.h - text generation on the inference engine: prefill a prompt
 * into one cache slot, then decode one token at a time, sampling each
 * (sample.h), handing every new token to a callback as soon as it exists
 * (so a caller can stream it), until the separator token, a token limit,
 * a full context, or the callback says stop. Nothing here tokenizes or
 * prints: the caller turns ids into text. */
#ifndef TEMPO_INFER_GENERATE_H
#define TEMPO_INFER_GENERATE_H

#include <stdint.h>

#include "core/error.h"
#include "infer/engine.h"
#include "infer/sample.h"

typedef struct {
    int max_tokens;       /* new tokens at most, >= 1 */
    int stop_at_sep;      /* 1: producing sep_id ends generation (it is not passed on) */
    int32_t sep_id;
    sample_params sample;
    /* Optional: turn the transformer's logits z after history[0..n) (the
     * prompt and the tokens so far) into the logits to sample from: the
     * hybrid model's mixture (memory/mixture.h). Returns 0 or -1. */
    int (*adjust)(void *ctx, const int32_t *history, int n, float *z, tempo_error *err);
    void *adjust_ctx;
} gen_options;

typedef enum {
    GEN_STOP_TOKENS = 0,  /* max_tokens reached */
    GEN_STOP_SEPARATOR,   /* the separator was produced */
    GEN_STOP_CONTEXT,     /* the slot is full: no room to feed the last token back */
    GEN_STOP_CALLER       /* the callback returned nonzero */
} gen_stop;

const char *gen_stop_name(gen_stop s); /* "tokens", "separator", "context", "caller" */

typedef struct {
    int prompt_tokens;
    int new_tokens;       /* tokens passed to the callback */
    gen_stop stop;
    double prefill_s;     /* prompt forward + first sample: the time to first token */
    double decode_s;      /* everything after it */
} gen_result;

/* Called with each new token; return nonzero to stop after it. */
typedef int (*gen_token_fn)(void *user, int32_t token);

/* Generate from prompt [n_prompt] (1 <= n_prompt <= the cache's capacity;
 * callers that want the separator as a start token put it first) in cache
 * slot `slot`, which is reset first. on_token may be NULL. Returns 0 with res
 * filled, or -1 with err set (bad options or prompt: code 2). */
int infer_generate(infer_engine *e, infer_cache *c, int slot, const int32_t *prompt, int n_prompt,
                   const gen_options *o, gen_token_fn on_token, void *user, gen_result *res,
                   tempo_error *err);

/* The sequence to generate from: the separator, then the prompt's last
 * tokens, cut from the left so that min(max_tokens, context / 2) new tokens
 * fit in the context (at least the separator stays). *seq is malloc'ed and
 * holds *n_seq = 1 + n_prompt - *cut ids; *cut is how many of the prompt's
 * first tokens were left out. -1 with err set on out of memory. */
int gen_prompt_window(const int32_t *prompt, int n_prompt, int32_t sep_id, int context, int max_tokens,
                      int32_t **seq, int *n_seq, int *cut, tempo_error *err);

/* Decode speed: the tokens after the first over the time after it; NaN when
 * fewer than two tokens were produced. */
double gen_decode_tokens_per_s(const gen_result *r);

#endif
