/* test_bpb.c - bits-per-byte accounting: a uniform model scores exactly
 * tokens*log2(V)/bytes; sliding windows score every token exactly once with
 * the context the definition promises (checked against single-window
 * forwards); bad inputs are errors. */
#include "test.h"

#include "core/rng.h"
#include "data/token_store.h"
#include "data/tokenizer.h"
#include "eval/bpb.h"
#include "model/model.h"

static model_config tiny_config(int V, int T)
{
    model_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = V;
    c.context = T;
    c.d_model = 16;
    c.n_layers = 2;
    c.n_heads = 2;
    c.n_kv_heads = 2;
    c.d_ff = 32;
    c.mlp = MLP_RELU2;
    c.tied_head = 0;
    c.rope_theta = 10000;
    c.norm_eps = 1e-5f;
    c.init_std = 0.3f;
    return c;
}

static void test_uniform_model_exact(void)
{
    int V = 37, T = 8;
    model_config c = tiny_config(V, T);
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, 4, &err) == 0);
    memset(model_params(m), 0, sizeof(float) * model_num_params(m));
    int32_t toks[100];
    rng_state r;
    rng_seed(&r, 3);
    for (int i = 0; i < 100; i++) toks[i] = (int32_t)rng_below(&r, (uint64_t)V);
    for (int stride = 1; stride <= T; stride++) {
        bpb_result res;
        CHECK(bpb_evaluate(m, toks, 100, 250, stride, 3, &res, &err) == 0);
        double expect = 99.0 * log2((double)V) / 250.0;
        CHECK_NEAR(res.bpb, expect, 1e-6 * expect);
        CHECK(res.n_tokens == 99);
        CHECK(res.n_bytes == 250);
    }
    model_free(m);
}

/* Loss of target index j when the window starts at s (inputs s..s+T-1). */
static double window_loss(model *m, const int32_t *toks, int T, size_t s, size_t j)
{
    model_forward(m, toks + s, toks + s + 1, 1, T);
    return model_token_losses(m)[j - s - 1];
}

static void test_windows_match_definition(void)
{
    int V = 11, T = 6;
    model_config c = tiny_config(V, T);
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, 4, &err) == 0);
    model_init(m, 5);
    size_t n = 23;
    int32_t toks[23];
    rng_state r;
    rng_seed(&r, 9);
    for (size_t i = 0; i < n; i++) toks[i] = (int32_t)rng_below(&r, (uint64_t)V);
    for (int stride = 1; stride <= T; stride++) {
        /* Reference: window k ends at e_k = min(n-1, T + k*stride), starts at e_k - T,
         * and scores the targets after e_{k-1}. */
        double nats = 0;
        size_t prev = 0;
        int count = 0;
        while (prev < n - 1) {
            size_t e = prev == 0 ? (size_t)T : prev + (size_t)stride;
            if (e > n - 1) e = n - 1;
            for (size_t j = prev + 1; j <= e; j++) {
                nats += window_loss(m, toks, T, e - (size_t)T, j);
                count++;
            }
            prev = e;
        }
        CHECK(count == (int)n - 1);
        bpb_result res;
        CHECK(bpb_evaluate(m, toks, n, 40, stride, 2, &res, &err) == 0);
        CHECK_NEAR(res.bits, nats / log(2.0), 1e-4 * (nats / log(2.0)));
        CHECK(res.stride == stride && res.context == T);
    }
    /* a stream shorter than the context is scored in one window */
    bpb_result res;
    CHECK(bpb_evaluate(m, toks, 4, 10, 0, 2, &res, &err) == 0);
    CHECK(res.n_tokens == 3 && res.context == 3);
    model_free(m);
}

static void test_bad_inputs(void)
{
    model_config c = tiny_config(5, 4);
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, 1, &err) == 0);
    int32_t toks[3] = {1, 2, 3};
    bpb_result res;
    CHECK(bpb_evaluate(m, toks, 1, 10, 1, 1, &res, &err) == -1);
    CHECK(bpb_evaluate(m, toks, 3, 0, 1, 1, &res, &err) == -1);
    model_free(m);
}

/* Exact byte counts of a stream and its prefixes: the sum of the tokens'
 * byte lengths, separators counting none. */
static void test_count_bytes(void)
{
    uint8_t bytes[256][1];
    const uint8_t *toks[258];
    size_t lens[258];
    for (int i = 0; i < 256; i++) {
        bytes[i][0] = (uint8_t)i;
        toks[i] = bytes[i];
        lens[i] = 1;
    }
    toks[256] = (const uint8_t *)"th";
    lens[256] = 2;
    toks[257] = (const uint8_t *)"the";
    lens[257] = 3;
    tokenizer *tok;
    tempo_error err;
    CHECK(tok_from_tokens(&tok, toks, lens, 258, "test", &err) == 0);
    const char *docs = "the cat\x1e\nthe other\n";
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(token_encode_text(tok, (const uint8_t *)docs, strlen(docs), &ids, &n, &err) == 0);
    /* SEP "the" " " "c" "a" ... SEP: the text is one document here (0x1E is just a byte
     * of it); every byte is counted once, the separators none */
    CHECK(bpb_count_bytes(tok, ids, n) == strlen(docs));
    CHECK(bpb_count_bytes(tok, ids, 2) == 3);
    CHECK(ids[0] == tok_sep_id(tok) && ids[n - 1] == tok_sep_id(tok));
    free(ids);
    tok_free(tok);
}

int main(void)
{
    RUN(test_count_bytes);
    RUN(test_uniform_model_exact);
    RUN(test_windows_match_definition);
    RUN(test_bad_inputs);
    return test_summary("test_bpb");
}
