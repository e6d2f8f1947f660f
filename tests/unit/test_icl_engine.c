/* test_icl_engine.c - the engine-backed ICL scorer equals plain full
 * forwards: for groups of requests sharing prefixes (as an item's choices
 * do), lone requests, a group larger than the cache, prefix lengths equal to
 * and below the spans' starts, and steps split by the row limit, every
 * request's summed continuation NLL matches model_forward's per-token losses
 * and its all-argmax flag matches the argmax of a full forward's
 * distribution; bad requests are refused. */
#include "test.h"

#include "core/rng.h"
#include "eval/icl_engine.h"
#include "model/model.h"

static model_config config(void)
{
    model_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = 11; /* small: argmax matches happen */
    c.context = 40;
    c.d_model = 16;
    c.n_layers = 2;
    c.n_heads = 2;
    c.n_kv_heads = 1;
    c.d_ff = 32;
    c.mlp = MLP_RELU2;
    c.tied_head = 1;
    c.rope_theta = 10000;
    c.norm_eps = 1e-5f;
    c.init_std = 0.5f;
    return c;
}

/* nll[t * V + v] = -ln p(v | tokens[0..t]) by one forward of V copies. */
static void full_nll(model *m, const int32_t *tokens, int T, double *nll)
{
    int V = model_get_config(m)->vocab_size;
    int32_t in[11 * 40], tg[11 * 40];
    for (int v = 0; v < V; v++)
        for (int t = 0; t < T; t++) {
            in[v * T + t] = tokens[t];
            tg[v * T + t] = v;
        }
    model_forward(m, in, tg, V, T);
    const float *l = model_token_losses(m);
    for (int v = 0; v < V; v++)
        for (int t = 0; t < T; t++)
            nll[t * V + v] = l[v * T + t];
}

#define NREQ 14

static void test_matches_full_forward(void)
{
    model_config c = config();
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
            full_nll(m, tok[i], t, nll);
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
        full_nll(m, tok[i], len[i], nll);
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

static void test_bad_requests(void)
{
    model_config c = config();
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
    RUN(test_bad_requests);
    return test_summary("test_icl_engine");
}
