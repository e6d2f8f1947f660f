/* mixture.h - a stream read through the hybrid model: the transformer's
 * probabilities (computed elsewhere), the corpus memory, a cache of the
 * stream itself and the mixer, one position at a time, score first, then
 * learn: the probability of tokens[i] is fixed from tokens[0..i) and the
 * current state, and only then do the cache count tokens[i] and the mixer
 * take its gradient. Nothing at or after position i can change a
 * probability before i (tests/unit/test_mixture.c proves it).
 *
 * The mixture is the mixer's stages in order, each one unit that applies,
 * learns, saves and loads itself (mixer.h): the linear stage (the
 * transformer sharpened by beta, then the weights), then the calibration
 * stage: the token the match model predicts gets the probability the
 * mixer's calibration row maps its share of the non-transformer part to,
 * and the other tokens of that part are scaled to keep the sum. Then the
 * top-token stage: the transformer's most probable token gets the
 * probability a second map (rows by that token's transformer probability
 * and the match model's prediction) gives the whole mixture's probability
 * of it, every other token scaled to keep the sum. Both maps are
 * calibration stages (calibration.h) and learn only after the token; this
 * file reads the stream and hands each stage what it reads there.
 *
 * The transformer's probabilities arrive as numbers, so this file knows
 * nothing of models; eval/hybrid_bpb.c, the ICL engine and generation feed
 * it. The transformer enters sharpened by the mixer's beta (mixer.h): the
 * scoring path is given probabilities already sharpened (the model's head
 * computes the normaliser, model_token_log_norm), the full-distribution
 * path sharpens the distribution it is given (mixture_sharpen). */
#ifndef TEMPO_MIXTURE_H
#define TEMPO_MIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "memory/match_model.h"
#include "memory/mixer.h"
#include "memory/ngram_memory.h"

typedef struct {
    const ngram_memory *memory;  /* the corpus memory, or NULL */
    int vocab;
    int cache_order;             /* 0: no cache */
    int adapt;                   /* 1: the cache counts and the mixer learns as the stream is read */
    int match_length;            /* > 0: the match model, finding matches of this many tokens; 0 = none */
} mixture_options;

typedef struct {
    mixture_options opt;
    ngram_memory cache;          /* of the stream so far (when cache_order > 0) */
    match_model match;           /* of the stream so far (when match_length > 0) */
    mixer mx;                    /* a copy of the initial mixer, updated when adapt */
    int present[MIX_N];
    size_t n_counted;            /* mixture_stream_logits: tokens of the stream the cache holds */
} mixture_stream;

/* Per-component figures over a scored span. */
typedef struct {
    double bits;                 /* -log2 of the mixture */
    double bits_linear;          /* -log2 of the mixture before the calibration stage (mixture.c) */
    double bits_component[MIX_N];/* each component alone (0 for an absent one) */
    uint64_t n_tokens;
    double weight_sum[MIX_N];    /* sum of the weights used, for the mean weight */
    uint64_t late_lookups;       /* positions where the stream itself asked the corpus memory (serially) */
} mixture_totals;

int mixture_stream_init(mixture_stream *s, const mixture_options *o, const mixer *initial, tempo_error *err);
void mixture_stream_free(mixture_stream *s);
/* Forget the stream (an empty cache, the initial mixer): for independent texts such as ICL items. */
int mixture_stream_reset(mixture_stream *s, const mixer *initial, tempo_error *err);

/* The corpus memory's answers at one position, asked ahead of the stream
 * (the memory is read-only, so mixture_score asks it for every position in
 * parallel): the probability of the true token and its match, and the
 * probability of the token the match model will predict there (predicted
 * -1: none), which the calibration stage reads. */
typedef struct {
    double p;
    ngram_match match;
    int32_t predicted;
    double p_predicted;
    int32_t top;                 /* the transformer's most probable token there (-1: not known) */
    double p_top;                /* the memory's probability of it */
} memory_answer;

/* The mixture's p(tokens[i] | tokens[0..i)) given the transformer's p_model
 * of that token, its confidence (its largest probability at i, which
 * selects mixing weights) and top, the token it gives that probability to
 * (-1: not known; then the top-token stage is skipped), p_model and
 * confidence already sharpened by the mixer's beta (mixture_sharpen: the
 * model's head computes them so, model_forward_eval); then, if adapting,
 * learn from it. mem is the
 * corpus memory's answer when already computed, else NULL and it is asked
 * here (an answer whose predicted token is not the stream's own prediction
 * is not used for the calibration: the memory is asked again). totals may
 * be NULL. Returns the probability, or a negative value when the cache runs
 * out of memory (err set). */
double mixture_stream_step(mixture_stream *s, const int32_t *tokens, size_t i, double p_model, double confidence,
                           int32_t top, const memory_answer *mem, mixture_totals *totals, tempo_error *err);

/* The whole mixed distribution after tokens[0..i) given the transformer's
 * own distribution p_model[0..V) (its top token: the first of its largest
 * entries), sharpened here by the mixer's beta, both stages applied: the
 * distribution whose entry for the true token mixture_stream_step returns.
 * tmp holds 2V doubles. Learns nothing. */
void mixture_stream_dist(const mixture_stream *s, const int32_t *tokens, size_t i, const double *p_model,
                         double *out, double *tmp);

/* For generation and ICL, where the transformer gives logits over the whole
 * vocabulary after tokens[0..n): first the cache counts the tokens of
 * tokens[0..n) it has not counted yet (the stream is read forward: calls
 * on one stream give growing n; mixture_stream_reset starts another), then
 * z[0..V) (the transformer's logits) becomes the log of the mixed
 * distribution, so a sampler's softmax(z / T) draws from it. tmp holds 4V
 * doubles. The mixer does not learn here. Returns 0, or -1 when out of
 * memory or n went backwards. */
int mixture_stream_logits(mixture_stream *s, const int32_t *tokens, size_t n, float *z, double *tmp,
                          tempo_error *err);

/* mixture_stream_logits with its scratch, in the shape of generation's
 * logits hook (infer/generate.h: gen_options.adjust). */
typedef struct {
    mixture_stream s;
    double *tmp;
} mixture_sampler;
int mixture_sampler_init(mixture_sampler *ms, const mixture_options *o, const mixer *initial, tempo_error *err);
void mixture_sampler_free(mixture_sampler *ms);
int mixture_sampler_adjust(void *ms, const int32_t *history, int n, float *z, tempo_error *err);

/* out[0..V) = p[v]^beta / sum_u p[u]^beta (out may be p): how the
 * transformer's distribution enters the mixture (mixer.beta). */
void mixture_sharpen(const double *p, int V, double beta, double *out);

/* The row of the top-token stage's map (mixer.h, MIX_TOP_ROWS) for a
 * transformer probability p_model_top of its top token top, the match model
 * predicting `predicted` (-1: nothing). */
int mixture_top_row(double p_model_top, int32_t top, int32_t predicted);

/* Score tokens[1..n) of a stream whose transformer probabilities are
 * p_model[1..n), confidences (largest probabilities) confidence[1..n) and
 * the tokens holding them top[1..n) (index 0 unused; confidence may be
 * NULL: all 0; top may be NULL: not known): a pass of the match
 * model alone finds the token it will predict at each position, the corpus
 * memory is asked in parallel for the true, the predicted and the top token, then the
 * stream is read in order (the result is bit-identical to stepping with the
 * memory asked in the stream). bits_out[i] (may be NULL) gets
 * -log2 p of token i. */
int mixture_score(const mixture_options *o, const mixer *initial, const int32_t *tokens, size_t n,
                  const double *p_model, const double *confidence, const int32_t *top, double *bits_out,
                  mixture_totals *totals, mixer *final_mixer, tempo_error *err);

#endif
