/* mixture.c - reading a stream through the hybrid model, score first, then
 * learn (see mixture.h). */
#include "memory/mixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mixture_stream_init(mixture_stream *s, const mixture_options *o, const mixer *initial, tempo_error *err)
{
    memset(s, 0, sizeof *s);
    s->opt = *o;
    if (o->memory && o->memory->vocab != o->vocab)
        return tempo_fail(err, "mixture: the count memory has %d ids, the model %d", o->memory->vocab, o->vocab);
    if (initial->memory_order != (o->memory ? o->memory->order : 0) || initial->cache_order != o->cache_order ||
        initial->match != (o->match_length > 0))
        return tempo_fail(err, "mixture: the mixer was fitted for memory order %d, cache order %d, match %d; "
                          "the model has %d, %d, %d", initial->memory_order, initial->cache_order, initial->match,
                          o->memory ? o->memory->order : 0, o->cache_order, o->match_length > 0);
    s->present[MIX_MODEL] = 1;
    s->present[MIX_MEMORY] = o->memory != NULL;
    s->present[MIX_CACHE] = o->cache_order > 0;
    s->present[MIX_MATCH] = o->match_length > 0;
    if ((o->cache_order > 0 && ngram_memory_init(&s->cache, o->vocab, o->cache_order, 1, err)) ||
        (o->match_length > 0 && match_model_init(&s->match, o->vocab, o->match_length, err)) ||
        mixer_copy(&s->mx, initial, err)) {
        ngram_memory_free(&s->cache);
        match_model_free(&s->match);
        return -1;
    }
    return 0;
}

void mixture_stream_free(mixture_stream *s)
{
    ngram_memory_free(&s->cache);
    match_model_free(&s->match);
    mixer_free(&s->mx);
}

int mixture_stream_reset(mixture_stream *s, const mixer *initial, tempo_error *err)
{
    mixture_options o = s->opt;
    mixture_stream_free(s);
    return mixture_stream_init(s, &o, initial, err);
}

/* The calibration stage (calibration.h) at one position: which token it
 * reads, and its share. The mixture is p(y) = w_model p_model(y) + R(y),
 * where R(y) is the other components' weighted sum, of total mass wr. When
 * the match model predicts a token y*, the stage reads P = R(y*) / wr and
 * gives p'; then R(y*) becomes wr p' and every other R(y) is scaled by
 * (1 - p') / (1 - P), so the sum is unchanged: still a distribution over
 * the whole vocabulary. The transformer's share is left as it is (its
 * probability of y* is not known when only the true token's is).
 * Everything here is fixed by tokens[0..i) and the state: the scored token
 * is not read. */
/* mem: the corpus memory's answer asked ahead (NULL: ask it here); *late
 * (when late is not NULL) is set when the memory had to be asked here;
 * p_cache_predicted: the cache's probability of the token the match model
 * predicts (the step asks the cache once for all its tokens). */
static calib_point calib_prepare(const mixture_stream *s, const int32_t *tokens, size_t i, const double *w,
                                 const memory_answer *mem, double p_cache_predicted, int *late)
{
    calib_point c = calib_point_none(-1);
    if (!s->present[MIX_MATCH] || !s->mx.calib.rows)
        return c;
    double q = match_model_predict(&s->match, tokens, &c.token);
    if (c.token < 0)
        return c;
    double wr = 0, r = 0;
    for (int k = MIX_MEMORY; k < MIX_N; k++)
        if (s->present[k]) wr += w[k];
    if (s->present[MIX_MEMORY]) {
        if (mem && mem->predicted == c.token) {
            r += w[MIX_MEMORY] * mem->p_predicted;
        } else {
            r += w[MIX_MEMORY] * ngram_memory_prob_of(s->opt.memory, tokens, i, c.token, NULL);
            if (late)
                *late = 1;
        }
    }
    if (s->present[MIX_CACHE]) r += w[MIX_CACHE] * p_cache_predicted;
    r += w[MIX_MATCH] * q;
    if (!(wr > 0) || !(r / wr < 1 - 1e-12))
        return c;   /* nothing left to move */
    return calib_stage_read(&s->mx.calib, match_model_bin(&s->match), c.token, r / wr, wr);
}

/* The top-token stage (mixture.h): after the match calibration, the
 * transformer's most probable token t gets its own learned map. P is the
 * whole mixture's probability of t so far; t gets P' and every other token's
 * probability is scaled by (1 - P') / (1 - P): again a distribution over the
 * whole vocabulary. The map's row is chosen by the transformer's
 * probability of t (eight bins) and what the match model says (nothing, t,
 * or another token). Everything here is fixed by tokens[0..i) and the state. */
int mixture_top_row(double p_model_top, int32_t top, int32_t predicted)
{
    int b = p_model_top >= 1 ? MIX_TOP_CONFIDENCE_BINS - 1
            : p_model_top > 0 ? (int)(p_model_top * MIX_TOP_CONFIDENCE_BINS) : 0;   /* NaN: 0 */
    int match = predicted < 0 ? 0 : predicted == top ? 1 : 2;
    return b * 3 + match;
}

/* rest_top: the other components' weighted probability of top before the
 * match calibration; p_model_top: the transformer's. */
static calib_point top_prepare(const mixture_stream *s, const calib_point *cal, int32_t top, double w_model,
                               double p_model_top, double rest_top)
{
    calib_point t = calib_point_none(top);
    if (top < 0)
        return t;
    double P = w_model * p_model_top + calib_point_apply(cal, top, rest_top);
    if (!(P > 0) || !(P < 1 - 1e-12))
        return t;   /* nothing left to move */
    return calib_stage_read(&s->mx.calib_top, mixture_top_row(p_model_top, top, cal->token), top, P, 1);
}

/* The tokens of {y, a, b} to ask for (a or b below 0: not asked) into cand,
 * y first, for one ngram_memory_probs_of walk; *ka and *kb get the index
 * of a's and of b's answer (0 when not asked). An a or b equal to y shares
 * y's answer; a and b equal to each other are asked twice (rare; the walk
 * answers each candidate alone). Returns how many. */
static int query_tokens(int32_t y, int32_t a, int32_t b, int32_t cand[3], int *ka, int *kb)
{
    int n = 1;
    cand[0] = y;
    *ka = *kb = 0;
    if (a >= 0 && a != y)
        *ka = n, cand[n++] = a;
    if (b >= 0 && b != y)
        *kb = n, cand[n++] = b;
    return n;
}

double mixture_stream_step(mixture_stream *s, const int32_t *tokens, size_t i, double p_model, double confidence,
                           int32_t top, const memory_answer *mem, mixture_totals *totals, tempo_error *err)
{
    double p[MIX_N] = {p_model, 0, 0, 0};
    mixer_blend bl;
    ngram_match mm = {0, 0, 0}, cm = {0, 0, 0};
    if (s->present[MIX_MEMORY]) {
        if (mem) { p[MIX_MEMORY] = mem->p; mm = mem->match; }
        else p[MIX_MEMORY] = ngram_memory_prob(s->opt.memory, tokens, i, &mm);
    }
    /* the cache asked once, in one walk, for the true token, the transformer's top token and the token the
     * match model predicts (the calibration's), each answer the lone query's bits */
    double pc_top = 0, pc_predicted = 0;
    if (s->present[MIX_CACHE]) {
        int32_t predicted = -1, cand[3];
        if (s->present[MIX_MATCH] && s->mx.calib.rows)
            (void)match_model_predict(&s->match, tokens, &predicted);   /* as calib_prepare will */
        int kt, kp, nc = query_tokens(tokens[i], top >= 0 && top < s->opt.vocab ? top : -1, predicted, cand,
                                      &kt, &kp);
        double q[3];
        ngram_memory_probs_of(&s->cache, tokens, i, cand, nc, q, &cm);
        p[MIX_CACHE] = q[0];
        pc_top = q[kt];
        pc_predicted = q[kp];
    }
    if (s->present[MIX_MATCH])
        p[MIX_MATCH] = match_model_prob(&s->match, tokens, i);
    mixer_context ctx = mixer_select(&s->mx, s->present[MIX_MEMORY] ? &mm : NULL, s->present[MIX_CACHE] ? &cm : NULL,
                                     s->present[MIX_MATCH] ? match_model_bin(&s->match) : 0, confidence);
    mixer_weights(&s->mx, &ctx, s->present, &bl);
    const double *w = bl.w;
    double rest = 0;
    for (int c = MIX_MEMORY; c < MIX_N; c++)
        rest += w[c] * p[c];
    double linear = w[MIX_MODEL] * p_model + rest;
    int late = mem == NULL && s->present[MIX_MEMORY];
    calib_point cal = calib_prepare(s, tokens, i, w, mem, pc_predicted, &late);
    double pm = w[MIX_MODEL] * p_model + calib_point_apply(&cal, tokens[i], rest);
    calib_point tp = calib_point_none(-1);
    if (top >= 0 && top < s->opt.vocab) {
        double rt = 0;
        if (s->present[MIX_MEMORY])
            rt += w[MIX_MEMORY] * (mem && mem->top == top ? mem->p_top
                                                           : ngram_memory_prob_of(s->opt.memory, tokens, i, top, NULL));
        if (s->present[MIX_CACHE])
            rt += w[MIX_CACHE] * pc_top;
        if (s->present[MIX_MATCH])
            rt += w[MIX_MATCH] * match_model_prob_of(&s->match, tokens, top);
        tp = top_prepare(s, &cal, top, w[MIX_MODEL], confidence, rt);
        pm = calib_point_apply(&tp, tokens[i], pm);
    }
    if (totals) {
        totals->bits -= log2(pm);
        totals->bits_linear -= log2(linear);
        for (int c = 0; c < MIX_N; c++)
            if (s->present[c]) {
                totals->bits_component[c] -= log2(p[c]);
                totals->weight_sum[c] += w[c];
            }
        totals->n_tokens++;
        totals->late_lookups += (uint64_t)late;
    }
    /* the probability is fixed: now learn from the token */
    if (s->opt.adapt) {
        mixer_learn(&s->mx, &ctx, s->present, &bl, p);
        calib_point_learn(&cal, tokens[i]);
        calib_point_learn(&tp, tokens[i]);
        if (s->present[MIX_CACHE] && ngram_memory_add(&s->cache, tokens, i, err))
            return -1;
        if (s->present[MIX_MATCH])
            match_model_update(&s->match, tokens, i);
    }
    return pm;
}

void mixture_sharpen(const double *p, int V, double beta, double *out)
{
    if (beta == 1) {
        if (out != p)
            memcpy(out, p, sizeof(double) * (size_t)V);
        return;
    }
    double top = 0, sum = 0;
    for (int v = 0; v < V; v++)
        if (p[v] > top) top = p[v];
    for (int v = 0; v < V; v++)   /* (p / top)^beta: no underflow of the largest terms */
        sum += out[v] = p[v] > 0 ? exp(beta * log(p[v] / top)) : 0;
    for (int v = 0; v < V; v++)
        out[v] /= sum;
}

void mixture_stream_dist(const mixture_stream *s, const int32_t *tokens, size_t i, const double *p_raw,
                         double *out, double *tmp)
{
    const int V = s->opt.vocab;
    double *pmem = tmp, *pcache = tmp + V;
    /* the transformer as the mixture takes it, in out: each entry is read
     * before it is overwritten below */
    mixture_sharpen(p_raw, V, s->mx.beta, out);
    const double *p_model = out;
    double qmatch = 0, confidence = 0;
    mixer_blend bl;
    int32_t predicted = -1;
    ngram_match mm = {0, 0, 0}, cm = {0, 0, 0};
    if (s->present[MIX_MEMORY]) {
        ngram_memory_dist(s->opt.memory, tokens, i, pmem);
        mm = ngram_memory_match(s->opt.memory, tokens, i);
    }
    if (s->present[MIX_CACHE]) {
        ngram_memory_dist(&s->cache, tokens, i, pcache);
        cm = ngram_memory_match(&s->cache, tokens, i);
    }
    if (s->present[MIX_MATCH])   /* q on one id, the rest even: no array needed */
        qmatch = match_model_predict(&s->match, tokens, &predicted);
    int32_t top = 0;   /* the first of the largest entries, as the head finds it from the logits */
    for (int t = 1; t < V; t++)
        if (p_raw[t] > p_raw[top]) top = t;
    confidence = p_model[top];
    mixer_context ctx = mixer_select(&s->mx, s->present[MIX_MEMORY] ? &mm : NULL, s->present[MIX_CACHE] ? &cm : NULL,
                                     s->present[MIX_MATCH] ? match_model_bin(&s->match) : 0, confidence);
    mixer_weights(&s->mx, &ctx, s->present, &bl);
    const double *w = bl.w;
    double pc_predicted = s->present[MIX_CACHE] && predicted >= 0
                          ? ngram_memory_prob_of(&s->cache, tokens, i, predicted, NULL) : 0;
    calib_point cal = calib_prepare(s, tokens, i, w, NULL, pc_predicted, NULL);
    double rest_top = 0;
    for (int t = 0; t < V; t++) {
        double rest = (s->present[MIX_MEMORY] ? w[MIX_MEMORY] * pmem[t] : 0) +
                      (s->present[MIX_CACHE] ? w[MIX_CACHE] * pcache[t] : 0) +
                      (s->present[MIX_MATCH] ? w[MIX_MATCH] * (predicted < 0 ? 1.0 / V
                                                               : t == predicted ? qmatch : (1 - qmatch) / (V - 1)) : 0);
        out[t] = w[MIX_MODEL] * p_model[t] + calib_point_apply(&cal, t, rest);
        if (t == top)
            rest_top = rest;
    }
    calib_point tp = top_prepare(s, &cal, top, w[MIX_MODEL], confidence, rest_top);
    for (int t = 0; t < V; t++)
        out[t] = calib_point_apply(&tp, t, out[t]);
}

int mixture_stream_logits(mixture_stream *s, const int32_t *tokens, size_t n, float *z, double *tmp,
                          tempo_error *err)
{
    const int V = s->opt.vocab;
    if (s->n_counted > n)
        return tempo_fail(err, "mixture: stream read backwards (%zu tokens counted, %zu given)", s->n_counted, n);
    for (; s->n_counted < n; s->n_counted++) {
        if (s->present[MIX_CACHE] && ngram_memory_add(&s->cache, tokens, s->n_counted, err))
            return -1;
        if (s->present[MIX_MATCH])
            match_model_update(&s->match, tokens, s->n_counted);
    }
    double *pm = tmp, *out = tmp + V;
    float top = z[0];
    for (int v = 1; v < V; v++)
        if (z[v] > top) top = z[v];
    double sum = 0;
    for (int v = 0; v < V; v++)
        sum += pm[v] = exp((double)z[v] - top);
    for (int v = 0; v < V; v++)
        pm[v] /= sum;
    mixture_stream_dist(s, tokens, n, pm, out, tmp + 2 * V);
    for (int v = 0; v < V; v++)
        z[v] = (float)log(out[v]);
    return 0;
}

int mixture_sampler_init(mixture_sampler *ms, const mixture_options *o, const mixer *initial, tempo_error *err)
{
    memset(ms, 0, sizeof *ms);
    if (mixture_stream_init(&ms->s, o, initial, err))
        return -1;
    ms->tmp = malloc(sizeof(double) * 4 * (size_t)o->vocab);
    if (!ms->tmp) {
        mixture_stream_free(&ms->s);
        return tempo_fail(err, "mixture: out of memory");
    }
    return 0;
}

void mixture_sampler_free(mixture_sampler *ms)
{
    mixture_stream_free(&ms->s);
    free(ms->tmp);
    memset(ms, 0, sizeof *ms);
}

int mixture_sampler_adjust(void *ctx, const int32_t *history, int n, float *z, tempo_error *err)
{
    mixture_sampler *ms = ctx;
    return mixture_stream_logits(&ms->s, history, (size_t)n, z, ms->tmp, err);
}

/* The token the stream's match model will predict at each position of
 * tokens[1..n) (-1: none) into mem[i].predicted, found by a match model of
 * its own fed exactly as mixture_stream_step feeds the stream's (it learns
 * only when adapting). */
static int match_predictions(const mixture_options *o, const int32_t *tokens, size_t n, memory_answer *mem,
                             tempo_error *err)
{
    match_model mm;
    if (match_model_init(&mm, o->vocab, o->match_length, err))
        return -1;
    for (size_t i = 1; i < n; i++) {
        match_model_predict(&mm, tokens, &mem[i].predicted);
        if (o->adapt)
            match_model_update(&mm, tokens, i);
    }
    match_model_free(&mm);
    return 0;
}

int mixture_score(const mixture_options *o, const mixer *initial, const int32_t *tokens, size_t n,
                  const double *p_model, const double *confidence, const int32_t *top, double *bits_out,
                  mixture_totals *totals, mixer *final_mixer, tempo_error *err)
{
    memset(totals, 0, sizeof *totals);
    if (n < 2)
        return 0;
    memory_answer *mem = NULL;
    if (o->memory) {
        mem = malloc(sizeof *mem * n);
        if (!mem)
            return tempo_fail(err, "mixture: out of memory for %zu tokens", n);
        for (size_t i = 0; i < n; i++) {
            mem[i].predicted = -1;
            mem[i].top = top ? top[i] : -1;
        }
        /* only the calibration stage reads the predicted token's probability */
        if (o->match_length > 0 && initial->calib.rows && match_predictions(o, tokens, n, mem, err)) {
            free(mem);
            return -1;
        }
        /* the corpus memory is read-only: ask it for every position at once */
        #pragma omp parallel for schedule(static, 4096)
        for (size_t i = 1; i < n; i++) {
            memory_answer *a = &mem[i];
            /* one walk for the true token, the predicted one and the transformer's top, each asked once */
            int32_t cand[3];
            int kp, kt, nc = query_tokens(tokens[i], a->predicted, a->top, cand, &kp, &kt);
            double q[3];
            ngram_memory_probs_of(o->memory, tokens, i, cand, nc, q, &a->match);
            a->p = q[0];
            a->p_predicted = a->predicted < 0 ? 0 : q[kp];
            a->p_top = a->top < 0 ? 0 : q[kt];
        }
    }
    mixture_stream s;
    int rc = mixture_stream_init(&s, o, initial, err);
    /* the cache counts each of the n - 1 tokens once: its tables sized for them now, not doubled on the way */
    if (!rc && s.present[MIX_CACHE] && o->adapt)
        rc = ngram_memory_reserve(&s.cache, n - 1, err);
    for (size_t i = 1; i < n && !rc; i++) {
        if (s.present[MIX_CACHE] && i + 1 < n) {
            /* the cache's next queries, started now: each is a DRAM miss a step would wait for */
            int32_t cand[3] = {tokens[i + 1], top ? top[i + 1] : -1, mem ? mem[i + 1].predicted : -1};
            ngram_memory_prefetch(&s.cache, tokens, i + 1, cand, 3);
        }
        double p = mixture_stream_step(&s, tokens, i, p_model[i], confidence ? confidence[i] : 0,
                                       top ? top[i] : -1, mem ? &mem[i] : NULL, totals, err);
        if (p < 0) rc = -1;
        else if (bits_out) bits_out[i] = -log2(p);
    }
    if (!rc && final_mixer)
        rc = mixer_copy(final_mixer, &s.mx, err);
    mixture_stream_free(&s);
    free(mem);
    return rc;
}
