/* test_hybrid_bpb.c - the hybrid model's bits per byte (eval/hybrid_bpb.c)
 * equal a recomputation from full distributions: a small model reads a
 * stream in one window; at each position the reference takes the
 * transformer's whole distribution (one forward per vocabulary entry), the
 * mixture's whole distribution from it (mixture_stream_dist, which
 * sharpens the transformer by the mixer's beta itself) and the true token's
 * entry, then lets the stream learn as the evaluation does. The evaluation
 * gets the sharpened probabilities another way, from the head's per-row
 * -ln sum p^beta (model_token_log_norm), so this proves that path, for beta
 * 1 and beta 1.3; and the transformer's own figure stays the unsharpened
 * one. With model_lr > 0 the transformer's part is the learning reader's
 * (bpb_evaluate with lr > 0, bit for bit), and --no-adapt (adapt 0) reads it
 * frozen. */
#include "test.h"

#include <math.h>

#include "core/rng.h"
#include "eval/bpb.h"
#include "eval/hybrid_bpb.h"
#include "memory/hybrid.h"
#include "memory/mixture.h"
#include "model/model.h"
#include "small_model.h"

enum { V = SMALL_V, T = SMALL_T };

/* p[t * V + v] = p(v | tokens[0..t]) for the T positions of tokens. */
static void full_dist(model *m, const int32_t *tokens, double *p)
{
    small_model_full_nll(m, tokens, T, p);
    for (int k = 0; k < T * V; k++)
        p[k] = exp(-p[k]);
}

static void check_beta(double beta)
{
    model_config c = small_model_config();
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, c.vocab_size, &err) == 0);
    model_init(m, 5);
    model_set_training(m, 0);
    rng_state r;
    rng_seed(&r, 3);
    int32_t stream[2000];
    for (int i = 0; i < 2000; i++)
        stream[i] = i >= 3 && rng_below(&r, 2) ? stream[i - 3] : (int32_t)rng_below(&r, V);
    hybrid_parts h;
    memset(&h, 0, sizeof h);
    ngram_stream st = {stream, 4, 2000};   /* int32 ids */
    CHECK(ngram_memory_init(&h.memory, V, 3, 1, &err) == 0 && ngram_memory_build(&h.memory, &st, 1, &err) == 0);
    h.has_memory = 1;
    h.cache_order = 2;
    h.match_length = 2;
    h.vocab = V;
    CHECK(mixer_init(&h.mx, 3, 2, 1, 0.3, &err) == 0);
    h.mx.beta = beta;
    for (int i = 0; i < MIX_TOP_ROWS * CALIB_KNOTS; i++)   /* a top-token map far from the identity */
        h.mx.calib_top.knots[i] = 0.02 + (double)rng_below(&r, 960) / 1000.0;
    /* the text: T + 1 tokens, so one window of the model's context scores them all */
    int32_t text[T + 1];
    for (int i = 0; i <= T; i++)
        text[i] = stream[500 + i];
    uint64_t n_bytes = 100;
    hybrid_bpb_result res;
    CHECK_MSG(hybrid_bpb_evaluate(NULL, m, &h, 1, text, T + 1, n_bytes, T, 1, NULL, NULL, &res, &err) == 0, "%s", err.msg);
    bpb_result own;
    CHECK(bpb_evaluate(m, text, T + 1, n_bytes, &(bpb_options){.stride = T, .batch = 1}, &own, &err) == 0);
    CHECK_MSG(res.bpb_component[MIX_MODEL] == own.bpb, "beta %g: the transformer alone %.9f, its own figure %.9f",
              beta, res.bpb_component[MIX_MODEL], own.bpb);

    /* the reference: whole distributions at every position, learning as the evaluation does */
    static double p[T * V];
    full_dist(m, text, p);
    mixture_options o = hybrid_parts_options(&h, 1);
    mixture_stream s;
    CHECK(mixture_stream_init(&s, &o, &h.mx, &err) == 0);
    double out[V], tmp[2 * V], sharp[V], bits = 0;
    for (int i = 1; i <= T; i++) {
        const double *pi = p + (size_t)(i - 1) * V;
        mixture_stream_dist(&s, text, (size_t)i, pi, out, tmp);
        bits -= log2(out[text[i]]);
        int32_t top = 0;
        for (int v = 1; v < V; v++) if (pi[v] > pi[top]) top = v;
        mixture_sharpen(pi, V, beta, sharp);
        CHECK(mixture_stream_step(&s, text, (size_t)i, sharp[text[i]], sharp[top], top, NULL, NULL, &err) > 0);
    }
    mixture_stream_free(&s);
    double want = bits / (double)n_bytes;
    CHECK_MSG(fabs(res.mixture.bpb - want) < 1e-5 * want, "beta %g: evaluation %.9f, reference %.9f", beta,
              res.mixture.bpb, want);
    /* the whole model's figure in the transformer's terms: its tokens, bytes and windows */
    CHECK(res.mixture.tokens == own.tokens && res.mixture.bytes == own.bytes && res.mixture.context == own.context &&
          res.mixture.stride == own.stride && res.model.bits == own.bits && res.model.loss == own.loss);
    CHECK(res.mixture.loss == res.mixture.bits * log(2.0) / (double)res.mixture.tokens);
    CHECK(res.cache_order == h.cache_order && res.match_length == h.match_length && res.adapt == 1);
    hybrid_parts_free(&h);
    model_free(m);
}

static void test_sharpened_matches_full_distributions(void)
{
    check_beta(1.0);
    check_beta(1.3);
}

static void test_learning_reader_wired(void)
{
    model_config c = small_model_config();
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, 4, &err) == 0);
    model_init(m, 6);
    rng_state r;
    rng_seed(&r, 8);
    enum { N = 300 };
    int32_t text[N];
    for (int i = 0; i < N; i++)
        text[i] = i >= 50 && rng_below(&r, 4) ? text[i - 50] : (int32_t)rng_below(&r, V);
    hybrid_parts h;
    memset(&h, 0, sizeof h);
    h.cache_order = 2;
    h.match_length = 2;
    h.vocab = V;
    CHECK(mixer_init(&h.mx, 0, 2, 1, 0.3, &err) == 0);
    h.model_lr = 0.3;
    hybrid_bpb_result learning, frozen;
    bpb_result own, own_frozen;
    CHECK(hybrid_bpb_evaluate(NULL, m, &h, 1, text, N, 500, T / 2, 4, NULL, NULL, &learning, &err) == 0);
    CHECK(hybrid_bpb_evaluate(NULL, m, &h, 0, text, N, 500, T / 2, 4, NULL, NULL, &frozen, &err) == 0);
    CHECK(bpb_evaluate(m, text, N, 500, &(bpb_options){.stride = T / 2, .lr = 0.3}, &own, &err) == 0);
    CHECK(bpb_evaluate(m, text, N, 500, &(bpb_options){.stride = T / 2, .batch = 4}, &own_frozen, &err) == 0);
    CHECK_MSG(learning.bpb_component[MIX_MODEL] == own.bpb, "%.9f against %.9f", learning.bpb_component[MIX_MODEL],
              own.bpb);
    CHECK(frozen.bpb_component[MIX_MODEL] == own_frozen.bpb);
    CHECK(own.bpb < own_frozen.bpb);   /* it learned the repeats */
    CHECK(learning.mixture.bpb < frozen.mixture.bpb);
    CHECK(learning.adapt_lr == 0.3 && frozen.adapt_lr == 0 && !frozen.adapt);
    /* no part beside the transformer: its own figure, bit for bit */
    hybrid_parts none;
    memset(&none, 0, sizeof none);
    none.vocab = V;
    hybrid_bpb_result alone;
    CHECK(hybrid_bpb_evaluate(NULL, m, &none, 0, text, N, 500, T / 2, 4, NULL, NULL, &alone, &err) == 0);
    CHECK(alone.mixture.bpb == own_frozen.bpb && alone.mixture.bits == own_frozen.bits &&
          alone.bpb_linear == own_frozen.bpb && alone.model.bpb == own_frozen.bpb &&
          isnan(alone.bpb_component[MIX_CACHE]));
    hybrid_parts_free(&h);
    model_free(m);
}

int main(void)
{
    RUN(test_sharpened_matches_full_distributions);
    RUN(test_learning_reader_wired);
    return test_summary("test_hybrid_bpb");
}
