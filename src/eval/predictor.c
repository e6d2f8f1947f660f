/* predictor.c - the run's whole distribution at each position of a stream,
 * read in order as eval reads it (see predictor.h). */
#include "eval/predictor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/bpb.h"
#include "infer/engine.h"
#include "memory/mixture.h"

struct predictor {
    model *m;
    int V;
    int mix;                /* the hybrid parts are read (else the transformer alone) */
    double lr;              /* the learning reader's rate; 0: the transformer reads frozen */
    float beta;             /* the head's sharpening in the step's forward, as hybrid_bpb_evaluate gives it */
    int saved;              /* the parameters were set aside (lr > 0) */
    bpb_windows win;
    size_t start, first, end;  /* the current window: inputs from start, targets first..end */
    size_t next;            /* the position predictor_dist expects next */
    size_t learned_end;     /* targets the learning reader has learned from */
    infer_engine *engine;
    infer_cache cache;
    mixture_stream s;
    int have_stream;
    int32_t *in, *tg;       /* [T]: the window of a learning step */
    float *z;               /* [V] the transformer's logits */
    double *p_raw, *sharp, *tmp;   /* [V], [V], [2V] */
};

int predictor_vocab(const predictor *p) { return p->V; }

void predictor_free(predictor *p)
{
    if (!p)
        return;
    infer_engine_free(p->engine);
    infer_cache_free(&p->cache);
    if (p->have_stream)
        mixture_stream_free(&p->s);
    if (p->saved) {
        tempo_error ignored;
        model_params_restore(p->m, &ignored);   /* the model as it was trained */
        model_zero_grad(p->m);
    }
    model_set_training(p->m, 1);
    free(p->in);
    free(p->tg);
    free(p->z);
    free(p->p_raw);
    free(p->sharp);
    free(p->tmp);
    free(p);
}

int predictor_create(predictor **out, model *m, const hybrid_parts *h, int adapt, size_t n_tokens, int stride,
                     tempo_error *err)
{
    *out = NULL;
    const model_config *c = model_get_config(m);
    predictor *p = calloc(1, sizeof *p);
    if (!p)
        return tempo_fail(err, "predictor: out of memory");
    p->m = m;
    p->V = c->vocab_size;
    p->mix = hybrid_parts_any(h);
    p->lr = adapt ? h->model_lr : 0;
    p->next = 1;
    if (!(p->lr >= 0) || !isfinite(p->lr)) {
        double lr = p->lr;
        free(p);
        return tempo_fail(err, "evaluation: the reading learning rate must be a finite number >= 0, not %g", lr);
    }
    if (bpb_windows_init(&p->win, c->context, n_tokens, stride, err)) {
        free(p);
        return -1;
    }
    size_t V = (size_t)p->V, T = (size_t)p->win.T;
    p->in = malloc(sizeof(int32_t) * T);
    p->tg = malloc(sizeof(int32_t) * T);
    p->z = malloc(sizeof(float) * V);
    p->p_raw = malloc(sizeof(double) * V);
    p->sharp = malloc(sizeof(double) * V);
    p->tmp = malloc(sizeof(double) * 2 * V);
    if (!p->in || !p->tg || !p->z || !p->p_raw || !p->sharp || !p->tmp) {
        predictor_free(p);
        return tempo_fail(err, "predictor: out of memory");
    }
    if (infer_cache_create(&p->cache, c, 1, p->win.T, err) || infer_engine_create(&p->engine, m, p->win.T, err)) {
        predictor_free(p);
        return -1;
    }
    if (p->mix) {
        mixture_options o = hybrid_parts_options(h, adapt);
        if (mixture_stream_init(&p->s, &o, &h->mx, err)) {
            predictor_free(p);
            return -1;
        }
        p->have_stream = 1;
    }
    /* the learning reader's steps, as bpb_evaluate takes them with lr > 0: the plain cross-entropy of an
     * evaluation-mode forward, the head's beta as hybrid_bpb_evaluate sets it */
    model_set_training(m, 0);
    p->beta = (float)(p->mix ? h->mx.beta : 1);
    if (p->lr > 0) {
        if (model_params_save(m, err)) {
            predictor_free(p);
            return -1;
        }
        p->saved = 1;
        model_set_mixture(m, NULL, 1);
    }
    *out = p;
    return 0;
}

/* The transformer's logits for target i into p->z: the first target of a
 * window prefills the window's context, every later one adds the token
 * before it. */
static int transformer_logits(predictor *p, const int32_t *tokens, size_t i, tempo_error *err)
{
    infer_chunk ch;
    if (i > p->end) {
        if (!bpb_windows_next(&p->win, &p->start, &p->first, &p->end) || p->first != i)
            return tempo_fail(err, "predictor: internal error: no window scores token %zu", i);
        infer_cache_reset(&p->cache, 0);
        int n = (int)(i - p->start);   /* inputs start..i-1 */
        ch = (infer_chunk){0, tokens + p->start, n, n - 1};
    } else {
        ch = (infer_chunk){0, tokens + i - 1, 1, 0};
    }
    if (infer_step(p->engine, &p->cache, &ch, 1, err))
        return -1;
    infer_logits(p->engine, 0, 1, p->z);
    return 0;
}

int predictor_dist(predictor *p, const int32_t *tokens, size_t i, double *dist, tempo_error *err)
{
    if (i != p->next || i > p->win.last)
        return tempo_fail(err, "predictor: position %zu asked, %zu expected", i, p->next);
    if (transformer_logits(p, tokens, i, err))
        return -1;
    const int V = p->V;
    float top = p->z[0];
    for (int v = 1; v < V; v++)
        if (p->z[v] > top) top = p->z[v];
    double sum = 0;
    for (int v = 0; v < V; v++)
        sum += p->p_raw[v] = exp((double)p->z[v] - top);
    if (!(sum >= 1) || !isfinite(sum))
        return tempo_fail(err, "predictor: the transformer's logits at token %zu are not finite", i);
    for (int v = 0; v < V; v++)
        p->p_raw[v] /= sum;
    if (p->mix)
        mixture_stream_dist(&p->s, tokens, i, p->p_raw, dist, p->tmp);
    else
        memcpy(dist, p->p_raw, sizeof(double) * (size_t)V);
    return 0;
}

int predictor_learn(predictor *p, const int32_t *tokens, size_t i, tempo_error *err)
{
    if (i != p->next)
        return tempo_fail(err, "predictor: learning token %zu, %zu expected", i, p->next);
    p->next++;
    if (p->mix) {
        /* the mixture's step as eval takes it: the sharpened transformer's probability of the token,
         * of its top token (the first of the largest), and which that is */
        const int V = p->V;
        mixture_sharpen(p->p_raw, V, p->s.mx.beta, p->sharp);
        int32_t top = 0;
        for (int v = 1; v < V; v++)
            if (p->p_raw[v] > p->p_raw[top]) top = v;
        if (mixture_stream_step(&p->s, tokens, i, p->sharp[tokens[i]], p->sharp[top], top, NULL, NULL, err) < 0)
            return -1;
    }
    if (i == p->end && p->lr > 0 && bpb_adapt_due(&p->win, p->learned_end)) {
        /* the window's forward as eval ran it, then its step; the engine's packed weights are stale after */
        const int T = p->win.T;
        memcpy(p->in, tokens + p->start, sizeof(int32_t) * (size_t)T);
        memcpy(p->tg, tokens + p->start + 1, sizeof(int32_t) * (size_t)T);
        const int32_t none = T;   /* every target scored already: the step's backward computes the logits */
        if (!isfinite(model_forward_eval(p->m, p->in, p->tg, 1, T, p->beta, &none)))
            return tempo_fail(err, "predictor: the transformer's loss is not finite at token %zu", i);
        bpb_adapt_step(p->m, p->lr);
        p->learned_end = p->end;
        infer_engine_free(p->engine);
        p->engine = NULL;
        if (infer_engine_create(&p->engine, p->m, T, err))
            return -1;
    }
    return 0;
}
