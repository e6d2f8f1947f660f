/* bench_memory.c - per-token cost of the count memory and the cache (see bench_memory.h). */
#include "bench/bench_memory.h"

#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/timer.h"
#include "memory/mixture.h"

/* tokens[0..n) drawn from the memory (or uniformly without one). */
static void draw_stream(const hybrid_parts *h, int32_t *tokens, int n, double *p)
{
    rng_state r;
    rng_seed(&r, 12345);
    for (int i = 0; i < n; i++) {
        if (!h->has_memory) {
            tokens[i] = (int32_t)rng_below(&r, (uint64_t)h->vocab);
            continue;
        }
        ngram_memory_dist(&h->memory, tokens, (size_t)i, p);
        double u = (double)rng_below(&r, 1u << 30) / (double)(1u << 30), acc = 0;
        int32_t t = h->vocab - 1;
        for (int v = 0; v < h->vocab; v++)
            if ((acc += p[v]) > u) { t = v; break; }
        tokens[i] = t;
    }
}

int bench_memory_run(const hybrid_parts *h, int stream_tokens, bench_memory_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    if (!hybrid_parts_any(h))
        return 0;
    const int V = h->vocab, n = stream_tokens > 16 ? stream_tokens : 16;
    r->memory_order = h->has_memory ? h->memory.order : 0;
    r->cache_order = h->cache_order;
    r->memory_bytes = h->has_memory ? (double)ngram_memory_bytes(&h->memory) : 0;
    r->stream_tokens = n;
    int32_t *tokens = malloc(sizeof(int32_t) * (size_t)n);
    double *tmp = malloc(sizeof(double) * 4 * (size_t)V);
    float *z = calloc((size_t)V, sizeof(float));
    if (!tokens || !tmp || !z) {
        free(tokens); free(tmp); free(z);
        return tempo_fail(err, "bench memory: out of memory");
    }
    draw_stream(h, tokens, n, tmp);
    mixture_options o = hybrid_parts_options(h, 1);
    mixture_stream s;
    int rc = mixture_stream_init(&s, &o, &h->mx, err);
    if (!rc) {
        double t0 = timer_now();
        for (int i = 1; i < n && !rc; i++)
            if (mixture_stream_step(&s, tokens, (size_t)i, 1.0 / V, 1.0 / V, -1, NULL, NULL, err) < 0) rc = -1;
        r->score_us_per_token = (timer_now() - t0) / (n - 1) * 1e6;
        mixture_stream_free(&s);
    }
    /* the whole distribution, as generation asks for it, at the stream's last positions */
    int m = n < 64 ? n : 64;
    if (!rc && !(rc = mixture_stream_init(&s, &o, &h->mx, err))) {
        double t0 = timer_now();
        for (int i = n - m; i < n && !rc; i++)
            rc = mixture_stream_logits(&s, tokens, (size_t)i, z, tmp, err);
        r->dist_us_per_token = (timer_now() - t0) / m * 1e6;
        mixture_stream_free(&s);
    }
    free(tokens); free(tmp); free(z);
    return rc;
}

void bench_memory_json(jsonw *w, const bench_memory_result *r)
{
    jsonw_object_begin(w);
    jsonw_field_string(w, "bench", "infer_memory");
    jsonw_field_int(w, "memory_order", r->memory_order);
    jsonw_field_int(w, "cache_order", r->cache_order);
    jsonw_field_digits(w, "memory_bytes", r->memory_bytes, 0);
    jsonw_field_int(w, "stream_tokens", r->stream_tokens);
    jsonw_field_number(w, "score_us_per_token", r->score_us_per_token);
    jsonw_field_number(w, "dist_us_per_token", r->dist_us_per_token);
    jsonw_object_end(w);
}
