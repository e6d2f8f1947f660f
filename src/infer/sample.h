/* sample.h - choosing the next token from a row of logits: greedy, or a
 * random draw at a temperature, optionally restricted to the top-k tokens
 * and/or the top-p nucleus, from a seeded generator (core/rng.h), so the same
 * seed and logits give the same tokens. Nothing here runs the model.
 *
 *   temperature 0 (or top_k 1): the greedy choice, the first index of the max;
 *   else p = softmax(z / temperature) over all V tokens; top_k > 0 keeps the
 *   k most probable; top_p in (0, 1) then keeps the smallest most-probable
 *   set whose mass reaches top_p of the mass still kept (the nucleus of the
 *   renormalised top-k); a token is drawn from what is kept, in proportion
 *   to p. Ties in probability are ordered by token id. */
#ifndef TEMPO_INFER_SAMPLE_H
#define TEMPO_INFER_SAMPLE_H

#include <stdint.h>

#include "core/error.h"
#include "core/rng.h"

typedef struct {
    float temperature; /* >= 0; 0 = greedy */
    int top_k;         /* 0 = all tokens */
    float top_p;       /* (0, 1]; 1 = no nucleus cut */
    uint64_t seed;
} sample_params;

typedef struct {
    float p;
    int32_t id;
} sample_cand;

typedef struct {
    sample_params p;
    int V;
    rng_state rng;
    float *prob;        /* [V] scratch: unnormalised probabilities */
    int32_t *idx;       /* [V] scratch: ids still in the draw */
    sample_cand *cand;  /* [V] scratch: candidates being ordered */
} sampler;

/* Checks the parameters (temperature >= 0 and finite, top_k >= 0, top_p in
 * (0, 1]) and allocates scratch for V tokens. Returns 0, or -1 with err set
 * (bad parameter: code 2; out of memory: code 1). */
int sampler_init(sampler *s, const sample_params *p, int V, tempo_error *err);
void sampler_free(sampler *s); /* zeroes s */

/* The next token for logits z [V] (z is not modified). */
int32_t sampler_next(sampler *s, const float *z);

#endif
