/* test_icl_engine.c - the engine-backed ICL scorer equals plain full
 * forwards: for groups of requests sharing prefixes (as an item's choices
 * do), lone requests, a group larger than the cache, prefix lengths equal to
 * and below the spans' starts, and steps split by the row limit, every
 * request's summed continuation NLL matches model_forward's per-token losses
 * and its all-argmax flag matches the argmax of a full forward's
 * distribution; with the hybrid model attached, every request's NLL and
 * argmax flag match a recomputation of the mixture from the full forward's
 * distributions, the memory's, a cache and a match model rebuilt for each
 * position, the calibration stage on its predicted token and the top-token
 * stage on the transformer's most probable token; bad requests are refused. */
#include "test.h"

#include "core/rng.h"
#include "eval/icl_engine.h"
#include "memory/calibration.h"
#include "memory/match_model.h"
#include "memory/mixer.h"
#include "memory/mixture.h"
#include "model/model.h"
#include "small_model.h"

#define NREQ 14

static void test_matches_full_forward(void)
{
    model_config c = small_model_config();
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, c.vocab_size, &err) == 0);
    model_init(m, 17);
    model_set_training(m, 0);
    int V = c.vocab_size;
    rng_state r;
    rng_seed(&r, 5);
    /* groups: {0..3} share 20 tokens (starts 20, 20, 22, 25), {4} alone,
     * {5..9} share 12 (5 requests: more than the 3 slots), {10} alone,
     * {11..13} share 30 with starts 31 (the prefix row is not scored) */
    static const int group[NREQ] = {0, 0, 0, 0, 1, 2, 2, 2, 2, 2, 3, 4, 4, 4};
    static const int shared[NREQ] = {20, 20, 20, 20, 0, 12, 12, 12, 12, 12, 0, 30, 30, 30};
    static const int start[NREQ] = {20, 20, 22, 25, 9, 12, 12, 12, 12, 12, 1, 31, 31, 31};
    static const int len[NREQ] = {24, 30, 40, 26, 15, 13, 20, 16, 40, 14, 40, 33, 40, 32};
    int32_t tok[NREQ][40];
    icl_request req[NREQ];
    for (int i = 0; i < NREQ; i++) {
        for (int t = 0; t < len[i]; t++)
            tok[i][t] = (int32_t)rng_below(&r, (uint64_t)V);
        tok[i][0] = V - 1; /* the separator */
        if (i > 0 && group[i] == group[i - 1])
            memcpy(tok[i], tok[i - 1], sizeof(int32_t) * (size_t)shared[i]);
        req[i] = (icl_request){tok[i], len[i], start[i], len[i], group[i]};
    }
    /* make some continuations greedy so all_argmax is true for some */
    double nll[40 * 11];
    int greedy_seen = 0;
    static const int make_greedy[4] = {0, 4, 9, 13};
    for (int g = 0; g < 4; g++) {
        int i = make_greedy[g];
        for (int t = start[i]; t < len[i]; t++) {
            small_model_full_nll(m, tok[i], t, nll);
            int best = 0;
            for (int v = 1; v < V; v++)
                if (nll[(t - 1) * V + v] < nll[(t - 1) * V + best])
                    best = v;
            tok[i][t] = best;
        }
    }
    double want[NREQ];
    int want_arg[NREQ];
    for (int i = 0; i < NREQ; i++) {
        small_model_full_nll(m, tok[i], len[i], nll);
        want[i] = 0;
        want_arg[i] = 1;
        for (int t = start[i] - 1; t < len[i] - 1; t++) {
            want[i] += nll[t * V + tok[i][t + 1]];
            int best = 0;
            for (int v = 1; v < V; v++)
                if (nll[t * V + v] < nll[t * V + best])
                    best = v;
            want_arg[i] &= best == tok[i][t + 1];
        }
        greedy_seen += want_arg[i];
    }
    CHECK(greedy_seen >= 3);
    int configs[3][2] = {{3, 0}, {8, 40}, {0, 0}}; /* slots, max_rows */
    for (int k = 0; k < 3; k++) {
        icl_engine *x;
        CHECK(icl_engine_create(&x, m, V - 1, configs[k][0], configs[k][1], &err) == 0);
        icl_lm lm = icl_engine_lm(x);
        CHECK(lm.context == 40 && lm.sep == V - 1);
        icl_answer ans[NREQ];
        CHECK(lm.score(lm.ctx, req, NREQ, ans, &err) == 0);
        for (int i = 0; i < NREQ; i++) {
            CHECK_MSG(fabs(ans[i].nll_sum - want[i]) < 2e-5 * (1 + fabs(want[i])),
                      "config %d request %d: %.7f vs %.7f", k, i, ans[i].nll_sum, want[i]);
            CHECK_MSG(ans[i].all_argmax == want_arg[i], "config %d request %d argmax", k, i);
        }
        long long total = 0;
        for (int i = 0; i < NREQ; i++)
            total += len[i] - 1;
        CHECK(icl_engine_rows(x) < total); /* prefixes were shared */
        icl_engine_free(x);
    }
    model_free(m);
}

/* The mixture at one position, recomputed from its parts without mixture.c:
 * the linear mixture of the transformer, the memory, a cache and a match
 * model rebuilt from tok[0..pos), then the calibration stage on the match
 * model's predicted token, then the top-token stage on the transformer's
 * most probable token (the maps read through calibration_read and the row
 * through mixture_top_row, the rest of the arithmetic here). */
static double mixed_nll(const hybrid_parts *h, const int32_t *tok, int pos, const double *nll_row, int V,
                        int *is_argmax)
{
    double pmem[11], pcache[11], rest[11] = {0};
    ngram_memory cache;
    match_model mmod;
    tempo_error err;
    CHECK(ngram_memory_init(&cache, V, h->cache_order, 1, &err) == 0);
    CHECK(match_model_init(&mmod, V, h->match_length, &err) == 0);
    for (int i = 0; i < pos; i++) {
        ngram_memory_add(&cache, tok, (size_t)i, &err);
        match_model_update(&mmod, tok, (size_t)i);
    }
    ngram_memory_dist(&h->memory, tok, (size_t)pos, pmem);
    ngram_memory_dist(&cache, tok, (size_t)pos, pcache);
    ngram_match mm = ngram_memory_match(&h->memory, tok, (size_t)pos);
    ngram_match cm = ngram_memory_match(&cache, tok, (size_t)pos);
    int32_t pred;
    double q = match_model_predict(&mmod, tok, &pred);
    int present[MIX_N] = {1, 1, 1, 1};
    double pt[11], zsum = 0;   /* the transformer as the mixture takes it: sharpened by beta */
    for (int v = 0; v < V; v++) zsum += pt[v] = pow(exp(-nll_row[v]), h->mx.beta);
    for (int v = 0; v < V; v++) pt[v] /= zsum;
    double top = 0;   /* the transformer's confidence selects weights too */
    for (int v = 0; v < V; v++) if (pt[v] > top) top = pt[v];
    mixer_blend bl;
    mixer_context ctx = mixer_select(&h->mx, &mm, &cm, match_model_bin(&mmod), top);
    mixer_weights(&h->mx, &ctx, present, &bl);
    const double *w = bl.w;
    double wr = w[MIX_MEMORY] + w[MIX_CACHE] + w[MIX_MATCH];
    for (int v = 0; v < V; v++)
        rest[v] = w[MIX_MEMORY] * pmem[v] + w[MIX_CACHE] * pcache[v] +
                  w[MIX_MATCH] * (pred < 0 ? 1.0 / V : v == pred ? q : (1 - q) / (V - 1));
    if (pred >= 0 && rest[pred] / wr < 1 - 1e-12) {
        double P = rest[pred] / wr;
        double P2 = calibration_read(h->mx.calib.knots + (size_t)match_model_bin(&mmod) * CALIB_KNOTS, P, NULL);
        for (int v = 0; v < V; v++)
            rest[v] = v == pred ? wr * P2 : rest[v] * (1 - P2) / (1 - P);
    }
    double mix[11] = {0};
    int ttop = 0;
    for (int v = 0; v < V; v++) {
        mix[v] = w[MIX_MODEL] * pt[v] + rest[v];
        if (pt[v] > pt[ttop]) ttop = v;
    }
    if (mix[ttop] > 0 && mix[ttop] < 1 - 1e-12) {
        double P = mix[ttop];
        double P2 = calibration_read(h->mx.calib_top.knots + (size_t)mixture_top_row(top, ttop, pred) * CALIB_KNOTS, P,
                                     NULL);
        for (int v = 0; v < V; v++)
            mix[v] = v == ttop ? P2 : mix[v] * (1 - P2) / (1 - P);
    }
    int best = 0;
    double pbest = -1, ptarget = 0;
    for (int v = 0; v < V; v++) {
        if (mix[v] > pbest) { pbest = mix[v]; best = v; }
        if (v == tok[pos]) ptarget = mix[v];
    }
    ngram_memory_free(&cache);
    match_model_free(&mmod);
    *is_argmax = best == tok[pos];
    return -log(ptarget);
}

static void test_hybrid_matches_reference(void)
{
    model_config c = small_model_config();
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, c.vocab_size, &err) == 0);
    model_init(m, 23);
    model_set_training(m, 0);
    const int V = c.vocab_size;
    rng_state r;
    rng_seed(&r, 9);
    /* a memory of a stream with repeats, so that its contexts match */
    int32_t stream[3000];
    for (int i = 0; i < 3000; i++)
        stream[i] = i >= 4 && rng_below(&r, 3) ? stream[i - 4] : (int32_t)rng_below(&r, (uint64_t)V);
    hybrid_parts h;
    memset(&h, 0, sizeof h);
    ngram_stream st = {stream, 4, 3000};
    CHECK(ngram_memory_init(&h.memory, V, 3, 2, &err) == 0 && ngram_memory_build(&h.memory, &st, 1, &err) == 0);
    h.has_memory = 1;
    h.cache_order = 2;
    h.match_length = 2;
    h.vocab = V;
    CHECK(mixer_init(&h.mx, 3, 2, 1, 0.1, &err) == 0);
    h.mx.beta = 1.3;
    for (int i = 0; i < h.mx.calib.rows * CALIB_KNOTS; i++)   /* curves far from the identity */
        h.mx.calib.knots[i] = 0.02 + (double)rng_below(&r, 960) / 1000.0;
    for (int i = 0; i < MIX_TOP_ROWS * CALIB_KNOTS; i++)
        h.mx.calib_top.knots[i] = 0.02 + (double)rng_below(&r, 960) / 1000.0;
    for (int k = 0; k < MIX_SETS; k++)
        for (int i = 0; i < h.mx.n_buckets[k] * MIX_N; i++)
            h.mx.theta[k][i] = (double)rng_below(&r, 400) / 100.0 - 2.0;
    for (int i = 0; i < h.mx.n_final * MIX_SETS; i++)
        h.mx.phi[i] = (double)rng_below(&r, 400) / 100.0 - 2.0;
    enum { N = 6 };
    static const int group[N] = {0, 0, 0, 1, 2, 2}, start[N] = {18, 18, 21, 5, 30, 30}, len[N] = {25, 40, 30, 12, 36, 40};
    int32_t tok[N][40];
    icl_request req[N];
    for (int i = 0; i < N; i++) {
        for (int t = 0; t < len[i]; t++)
            tok[i][t] = stream[100 * i + t];
        tok[i][0] = V - 1;
        if (i > 0 && group[i] == group[i - 1])
            memcpy(tok[i], tok[i - 1], sizeof(int32_t) * 18);
        req[i] = (icl_request){tok[i], len[i], start[i], len[i], group[i]};
    }
    double nll[40 * 11], want[N];
    int want_arg[N], argmax_seen = 0;
    for (int i = 0; i < N; i++) {
        small_model_full_nll(m, tok[i], len[i], nll);
        want[i] = 0;
        want_arg[i] = 1;
        for (int t = start[i] - 1; t < len[i] - 1; t++) {
            int a;
            want[i] += mixed_nll(&h, tok[i], t + 1, nll + t * V, V, &a);
            want_arg[i] &= a;
        }
        argmax_seen += want_arg[i];
    }
    for (int k = 0; k < 2; k++) {
        icl_engine *x;
        CHECK(icl_engine_create(&x, m, V - 1, k ? 2 : 0, 0, &err) == 0);
        CHECK(icl_engine_set_hybrid(x, &h, &err) == 0);
        icl_lm lm = icl_engine_lm(x);
        icl_answer ans[N];
        for (int round = 0; round < 2; round++) {   /* a second call must not see the first's cache */
            CHECK(lm.score(lm.ctx, req, N, ans, &err) == 0);
            for (int i = 0; i < N; i++) {
                CHECK_MSG(fabs(ans[i].nll_sum - want[i]) < 2e-5 * (1 + fabs(want[i])),
                          "slots %d request %d: %.7f vs %.7f", k, i, ans[i].nll_sum, want[i]);
                CHECK_MSG(ans[i].all_argmax == want_arg[i], "slots %d request %d argmax", k, i);
            }
        }
        icl_engine_free(x);
    }
    (void)argmax_seen;
    hybrid_parts_free(&h);
    model_free(m);
}

static void test_bad_requests(void)
{
    model_config c = small_model_config();
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, 1, &err) == 0);
    model_init(m, 1);
    icl_engine *x;
    CHECK(icl_engine_create(&x, m, 10, 4, 0, &err) == 0);
    icl_lm lm = icl_engine_lm(x);
    int32_t tok[41] = {0};
    icl_request bad[] = {{tok, 41, 1, 41, 0}, {tok, 5, 0, 5, 0}, {tok, 5, 5, 5, 0},
                         {tok, 5, 2, 6, 0}, {tok, 1, 1, 1, 0}};
    icl_answer a;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(lm.score(lm.ctx, &bad[i], 1, &a, &err) == -1 && err.code == 2);
    tok[3] = 99; /* token out of the vocabulary: the engine refuses it */
    icl_request oov = {tok, 5, 1, 5, 0};
    CHECK(lm.score(lm.ctx, &oov, 1, &a, &err) == -1);
    icl_engine_free(x);
    model_free(m);
}

int main(void)
{
    RUN(test_matches_full_forward);
    RUN(test_hybrid_matches_reference);
    RUN(test_bad_requests);
    return test_summary("test_icl_engine");
}
