/* sample.c - greedy / temperature / top-k / top-p sampling (see sample.h).
 * Work per token: one pass for the maximum and the softmax, then only the
 * candidates that can survive the cuts are sorted: top-k keeps a k-sized
 * selection; top-p drops, before sorting, every token with probability below
 * (1 - top_p) / (V - 1), which can never be in the nucleus (if it were, the
 * tokens from it onwards in sorted order, at most V - 1 of them, would hold
 * more than 1 - top_p of the mass with each below that bound). */
#include "infer/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sampler_init(sampler *s, const sample_params *p, int V, tempo_error *err)
{
    memset(s, 0, sizeof *s);
    if (!(p->temperature >= 0) || !isfinite(p->temperature))
        return tempo_usage(err, "sampling: temperature %g must be >= 0", (double)p->temperature);
    if (p->top_k < 0)
        return tempo_usage(err, "sampling: top-k %d must be >= 0", p->top_k);
    if (!(p->top_p > 0 && p->top_p <= 1))
        return tempo_usage(err, "sampling: top-p %g must be in (0, 1]", (double)p->top_p);
    if (V < 1)
        return tempo_usage(err, "sampling: vocabulary %d", V);
    s->p = *p;
    s->V = V;
    rng_seed(&s->rng, p->seed);
    s->prob = malloc(sizeof(float) * (size_t)V);
    s->idx = malloc(sizeof(int32_t) * (size_t)V);
    s->cand = malloc(sizeof(sample_cand) * (size_t)V);
    if (!s->prob || !s->idx || !s->cand) {
        sampler_free(s);
        return tempo_fail(err, "sampling: out of memory");
    }
    return 0;
}

void sampler_free(sampler *s)
{
    free(s->prob);
    free(s->idx);
    free(s->cand);
    memset(s, 0, sizeof *s);
}

/* Descending probability, then ascending id: a total order, so qsort's
 * result does not depend on its algorithm. */
static int cand_cmp(const void *a, const void *b)
{
    const sample_cand *x = a, *y = b;
    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Draw among idx[0..n) in proportion to prob[], whose sum over them is mass. */
static int32_t draw(sampler *s, int n, double mass)
{
    double r = rng_uniform(&s->rng) * mass, acc = 0;
    for (int i = 0; i < n; i++) {
        acc += s->prob[s->idx[i]];
        if (r < acc)
            return s->idx[i];
    }
    return s->idx[n - 1]; /* rounding: r landed at the very end */
}

int32_t sampler_next(sampler *s, const float *z)
{
    int V = s->V;
    int32_t best = 0;
    for (int v = 1; v < V; v++)
        if (z[v] > z[best])
            best = v;
    if (s->p.temperature == 0 || s->p.top_k == 1)
        return best;
    double inv_t = 1.0 / s->p.temperature, sum = 0;
    for (int v = 0; v < V; v++) {
        float e = (float)exp(((double)z[v] - z[best]) * inv_t);
        s->prob[v] = e;
        sum += e;
    }
    if (s->p.top_k > 0 || s->p.top_p < 1) {
        /* Without top-k, tokens below the floor cannot be in the nucleus
         * (see the top of the file); with top-k every token is a candidate. */
        double floor_p = 0;
        if (s->p.top_k == 0 && V > 1)
            floor_p = (1.0 - s->p.top_p) / (V - 1) * sum;
        int n = 0;
        for (int v = 0; v < V; v++)
            if (s->prob[v] >= floor_p) {
                s->cand[n].p = s->prob[v];
                s->cand[n++].id = v;
            }
        qsort(s->cand, (size_t)n, sizeof(sample_cand), cand_cmp);
        int k = s->p.top_k > 0 && s->p.top_k < n ? s->p.top_k : n;
        double base = sum; /* top-p is taken of the top-k mass when top-k is on */
        if (s->p.top_k > 0) {
            base = 0;
            for (int i = 0; i < k; i++)
                base += s->cand[i].p;
        }
        double kept = 0;
        int m = 0;
        while (m < k) {
            kept += s->cand[m].p;
            s->idx[m] = s->cand[m].id;
            m++;
            if (s->p.top_p < 1 && kept >= s->p.top_p * base)
                break;
        }
        return draw(s, m, kept);
    }
    for (int v = 0; v < V; v++)
        s->idx[v] = v;
    return draw(s, V, sum);
}
