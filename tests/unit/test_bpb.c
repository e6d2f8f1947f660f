/* test_bpb.c - bits-per-byte accounting: a uniform model scores exactly
 * tokens*log2(V)/bytes; sliding windows score every token exactly once with
 * the context the definition promises (checked against single-window
 * forwards); bad inputs are errors. The model that learns as it reads
 * (bpb_evaluate with lr > 0): the same windows with plain SGD steps between
 * them, against a reference that steps a second model by hand; causal bit
 * for bit (changing tokens from t on leaves every figure before t as it
 * was); its parameters restored; it learns a repeated text that a frozen
 * model cannot see in its context. */
#include "test.h"

#include <omp.h>

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

/* tiny_config's model with init_std std, initialised from seed, for up to
 * max_batch rows. */
static model *tiny_model(int V, int T, float std, uint64_t seed, int max_batch)
{
    model_config c = tiny_config(V, T);
    c.init_std = std;
    model *m = NULL;
    tempo_error err;
    CHECK_MSG(model_create(&m, &c, max_batch, &err) == 0, "%s", err.msg);
    if (m)
        model_init(m, seed);
    return m;
}

/* t[0..n) uniform over the V ids, from r. */
static void random_tokens(int32_t *t, size_t n, int V, rng_state *r)
{
    for (size_t i = 0; i < n; i++)
        t[i] = (int32_t)rng_below(r, (uint64_t)V);
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
    random_tokens(toks, 100, V, &r);
    for (int stride = 1; stride <= T; stride++) {
        bpb_result res;
        CHECK(bpb_evaluate(m, toks, 100, 250, &(bpb_options){.stride = stride, .batch = 3}, &res, &err) == 0);
        double expect = 99.0 * log2((double)V) / 250.0;
        CHECK_NEAR(res.bpb, expect, 1e-6 * expect);
        CHECK(res.tokens == 99);
        CHECK(res.bytes == 250);
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
    model *m = tiny_model(V, T, 0.3f, 5, 4);
    tempo_error err;
    size_t n = 23;
    int32_t toks[23];
    rng_state r;
    rng_seed(&r, 9);
    random_tokens(toks, n, V, &r);
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
        CHECK(bpb_evaluate(m, toks, n, 40, &(bpb_options){.stride = stride, .batch = 2}, &res, &err) == 0);
        CHECK_NEAR(res.bits, nats / log(2.0), 1e-4 * (nats / log(2.0)));
        CHECK(res.stride == stride && res.context == T);
    }
    /* a stream shorter than the context is scored in one window */
    bpb_result res;
    CHECK(bpb_evaluate(m, toks, 4, 10, &(bpb_options){.stride = 0, .batch = 2}, &res, &err) == 0);
    CHECK(res.tokens == 3 && res.context == 3);
    model_free(m);
}

/* The reference reader: the windows of the definition, each scored by a
 * single-window forward of ref, and after each window whose end is T past
 * the last step's (or the last window), one SGD step of ref on the T targets
 * ending there, by hand, on every tensor but the norms' gains, its gradient's
 * norm clipped to BPB_ADAPT_CLIP. */
static void reference_adaptive(model *ref, const int32_t *toks, size_t n, int T, int stride, double lr, double *nats)
{
    size_t prev = 0, learned = 0;
    float *p = model_params(ref);
    const float *g = model_grads(ref);
    while (prev < n - 1) {
        size_t e = prev == 0 ? (size_t)T : prev + (size_t)stride;
        if (e > n - 1) e = n - 1;
        for (size_t j = prev + 1; j <= e; j++)
            nats[j] = window_loss(ref, toks, T, e - (size_t)T, j);
        prev = e;
        if (prev - learned >= (size_t)T || prev == n - 1) {
            model_zero_grad(ref);
            model_forward(ref, toks + prev - T, toks + prev - T + 1, 1, T);
            model_backward(ref);
            double norm = 0;   /* the gradient's norm, the norms' gains left out, clipped to BPB_ADAPT_CLIP */
            for (int i = 0; i < model_num_tensors(ref); i++) {
                const model_tensor *t = model_tensor_at(ref, i);
                for (size_t k = t->offset; k < t->offset + t->numel && t->kind != TENSOR_NORM; k++)
                    norm += (double)g[k] * g[k];
            }
            norm = sqrt(norm);
            float r = (float)(norm > BPB_ADAPT_CLIP ? lr * BPB_ADAPT_CLIP / norm : lr);
            for (int i = 0; i < model_num_tensors(ref); i++) {
                const model_tensor *t = model_tensor_at(ref, i);
                for (size_t k = t->offset; k < t->offset + t->numel && t->kind != TENSOR_NORM; k++)
                    p[k] -= r * g[k];
            }
            learned = prev;
        }
    }
}

static void test_adaptive_matches_reference(void)
{
    int V = 13, T = 8;
    model *m = tiny_model(V, T, 0.3f, 7, 2), *ref = tiny_model(V, T, 0.3f, 7, 1);
    tempo_error err;
    size_t n = 61;
    int32_t toks[61];
    rng_state r;
    rng_seed(&r, 4);
    random_tokens(toks, n, V, &r);
    for (int stride = 3; stride <= T; stride++) {   /* 3 does not divide T: steps at uneven windows */
        memcpy(model_params(ref), model_params(m), sizeof(float) * model_num_params(m));
        double want[61] = {0}, got[61];
        reference_adaptive(ref, toks, n, T, stride, 0.3, want);
        bpb_token_out out = {got, NULL, NULL, NULL, 0};
        bpb_result res;
        bpb_options o = {.stride = stride, .lr = 0.3, .out = &out};
        CHECK_MSG(bpb_evaluate(m, toks, n, 90, &o, &res, &err) == 0, "%s", err.msg);
        double bits = 0;
        for (size_t i = 1; i < n; i++) {
            CHECK_MSG(fabs(got[i] - want[i]) <= 1e-5 * (1 + want[i]), "stride %d token %zu: %.9f, reference %.9f",
                      stride, i, got[i], want[i]);
            bits += want[i] / log(2.0);
        }
        CHECK_NEAR(res.bits, bits, 1e-5 * bits);
        CHECK(res.tokens == n - 1 && res.stride == stride && res.context == T);
        /* the windows between steps read as one batch (the step's window first): the same bits */
        double got2[61];
        bpb_token_out out2 = {got2, NULL, NULL, NULL, 0};
        bpb_result res2;
        memcpy(model_params(ref), model_params(m), sizeof(float) * model_num_params(m));
        bpb_options o2 = {.stride = stride, .batch = 2, .lr = 0.3, .out = &out2};
        CHECK_MSG(bpb_evaluate(m, toks, n, 90, &o2, &res2, &err) == 0, "%s", err.msg);
        CHECK_MSG(res2.bits == res.bits && memcmp(got + 1, got2 + 1, sizeof(double) * (n - 1)) == 0,
                  "stride %d: batch 2 %.17g, batch 1 %.17g", stride, res2.bits, res.bits);
        CHECK(memcmp(model_params(ref), model_params(m), sizeof(float) * model_num_params(m)) == 0);   /* restored */
        /* the reference did learn: its figures after the first step differ from a frozen reading */
        bpb_result frozen;
        CHECK(bpb_evaluate(m, toks, n, 90, &(bpb_options){.stride = stride, .batch = 2}, &frozen, &err) == 0);
        CHECK(fabs(frozen.bits - res.bits) > 1e-3);
    }
    model_free(m);
    model_free(ref);
}

/* One reading with every per-token output, at `threads` threads. */
static void read_all(model *m, const int32_t *toks, size_t n, int batch, double lr, int threads, double *nats,
                     float *top, int32_t *top_id, float *log_norm, bpb_result *res)
{
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    bpb_token_out out = {nats, top, top_id, log_norm, 1.3f};
    tempo_error err;
    CHECK_MSG(bpb_evaluate(m, toks, n, 200, &(bpb_options){.stride = 3, .batch = batch, .lr = lr, .out = &out}, res,
                           &err) == 0, "%s", err.msg);
    omp_set_num_threads(saved);
}

/* A forward's rows shared out among thread replicas of the model (bpb.c) read
 * the same bits as one model on one thread, frozen and learning, whatever
 * the threads and however the rows divide among them. */
static void test_threads_same_bits(void)
{
    enum { N = 97 };
    int V = 13, T = 8;
    model *m = tiny_model(V, T, 0.3f, 9, 5);
    int32_t toks[N];
    rng_state r;
    rng_seed(&r, 6);
    random_tokens(toks, N, V, &r);
    for (int learn = 0; learn <= 1; learn++) {
        double lr = learn ? 0.3 : 0, nats0[N], nats[N];
        float top0[N], top[N], ln0[N], ln[N];
        int32_t id0[N], id[N];
        bpb_result want, got;
        read_all(m, toks, N, 1, lr, 1, nats0, top0, id0, ln0, &want);
        for (int threads = 2; threads <= 3; threads++)
            for (int batch = 2; batch <= 5; batch++) {
                read_all(m, toks, N, batch, lr, threads, nats, top, id, ln, &got);
                CHECK_MSG(got.bits == want.bits && !memcmp(nats, nats0, sizeof nats) && !memcmp(top, top0, sizeof top) &&
                              !memcmp(id, id0, sizeof id) && !memcmp(ln, ln0, sizeof ln),
                          "lr %g, %d threads, batch %d: %.17g bits against %.17g on one thread", lr, threads, batch,
                          got.bits, want.bits);
            }
    }
    model_free(m);
}

static void test_adaptive_causal_and_restored(void)
{
    int V = 13, T = 8;
    model *m = tiny_model(V, T, 0.3f, 8, 2);
    tempo_error err;
    enum { N = 120, AT = 53 };
    int32_t a[N], b[N];
    rng_state r;
    rng_seed(&r, 6);
    random_tokens(a, N, V, &r);
    memcpy(b, a, sizeof a);
    for (int i = AT; i < N; i++) b[i] = (int32_t)((a[i] + 1 + rng_below(&r, (uint64_t)V - 1)) % V);
    size_t np = model_num_params(m);
    float *before = malloc(sizeof(float) * np);
    memcpy(before, model_params(m), sizeof(float) * np);
    double na[N], nb[N], n0[N];
    float ta[N], tb[N], la[N], lb[N];
    int32_t ia[N], ib[N];
    bpb_token_out oa = {na, ta, ia, la, 0}, ob = {nb, tb, ib, lb, 0}, o0 = {n0, NULL, NULL, NULL, 0};
    bpb_result ra, rb, r0;
    CHECK(bpb_evaluate(m, a, N, 200, &(bpb_options){.stride = 4, .lr = 0.5, .out = &oa}, &ra, &err) == 0);
    CHECK(memcmp(before, model_params(m), sizeof(float) * np) == 0);   /* restored bit for bit */
    for (size_t k = 0; k < np; k++)
        CHECK(model_grads(m)[k] == 0);
    CHECK(bpb_evaluate(m, b, N, 200, &(bpb_options){.stride = 4, .lr = 0.5, .out = &ob}, &rb, &err) == 0);
    CHECK(bpb_evaluate(m, a, N, 200, &(bpb_options){.stride = 4, .lr = 0, .out = &o0}, &r0, &err) == 0);
    int later_differ = 0, learned = 0;
    for (int i = 1; i < N; i++) {
        if (i < AT)
            CHECK_MSG(na[i] == nb[i] && ta[i] == tb[i] && ia[i] == ib[i] && la[i] == lb[i],
                      "token %d before the change at %d moved: %.9g against %.9g", i, AT, na[i], nb[i]);
        else
            later_differ += na[i] != nb[i];
        if (i <= T)
            CHECK(na[i] == n0[i]);   /* the first window is read before any step */
        else
            learned += na[i] != n0[i];
    }
    CHECK(later_differ > 0 && learned > 0);
    /* the same call twice: the same figures (deterministic) */
    double na2[N];
    bpb_token_out oa2 = {na2, NULL, NULL, NULL, 0};
    CHECK(bpb_evaluate(m, a, N, 200, &(bpb_options){.stride = 4, .lr = 0.5, .out = &oa2}, &ra, &err) == 0);
    CHECK(memcmp(na + 1, na2 + 1, sizeof(double) * (N - 1)) == 0);
    /* bad rates are errors, the model untouched */
    CHECK(bpb_evaluate(m, a, N, 200, &(bpb_options){.stride = 4, .lr = -0.1}, &ra, &err) == -1);
    CHECK(bpb_evaluate(m, a, N, 200, &(bpb_options){.stride = 4, .lr = NAN}, &ra, &err) == -1);
    CHECK(strstr(err.msg, "learning rate") != NULL);
    CHECK(memcmp(before, model_params(m), sizeof(float) * np) == 0);
    free(before);
    model_free(m);
}

/* A text that repeats a random sequence longer than the context: a frozen
 * model cannot copy it from its window; one that learns as it reads does. */
static void test_adaptive_learns_repeats(void)
{
    int V = 17, T = 8;
    model *m = tiny_model(V, T, 0.1f, 9, 2);
    tempo_error err;
    enum { PERIOD = 24, N = 24 * 40 };
    int32_t toks[N];
    rng_state r;
    rng_seed(&r, 10);
    random_tokens(toks, PERIOD, V, &r);
    for (int i = PERIOD; i < N; i++) toks[i] = toks[i - PERIOD];
    double nf[N], nl[N];
    bpb_token_out of = {nf, NULL, NULL, NULL, 0}, ol = {nl, NULL, NULL, NULL, 0};
    bpb_result rf, rl;
    CHECK(bpb_evaluate(m, toks, N, N, &(bpb_options){.stride = 4, .lr = 0, .out = &of}, &rf, &err) == 0);
    CHECK(bpb_evaluate(m, toks, N, N, &(bpb_options){.stride = 4, .lr = 0.5, .out = &ol}, &rl, &err) == 0);
    double last_f = 0, last_l = 0;
    for (int i = N - 4 * PERIOD; i < N; i++) {
        last_f += nf[i];
        last_l += nl[i];
    }
    last_f /= 4 * PERIOD;
    last_l /= 4 * PERIOD;
    CHECK_MSG(last_l < 0.5 * last_f, "last repeats: %.4f nats per token learning, %.4f frozen", last_l, last_f);
    model_free(m);
}

/* An untrained model read at the largest rate allowed: its gradients are
 * large, and without the clip the steps run away (bpb 3e7); with it every
 * figure stays finite and bounded. */
static void test_adaptive_stays_finite(void)
{
    int V = 29, T = 8;
    model *m = tiny_model(V, T, 1.0f, 11, 1);
    tempo_error err;
    enum { N = 400 };
    int32_t toks[N];
    rng_state r;
    rng_seed(&r, 12);
    random_tokens(toks, N, V, &r);
    double nats[N];
    bpb_token_out out = {nats, NULL, NULL, NULL, 0};
    bpb_result res;
    bpb_options o = {.stride = 4, .lr = 10.0, .out = &out};
    CHECK_MSG(bpb_evaluate(m, toks, N, N, &o, &res, &err) == 0, "%s", err.msg);
    double worst = 0;
    for (int i = 1; i < N; i++) {
        CHECK(isfinite(nats[i]));
        worst = nats[i] > worst ? nats[i] : worst;
    }
    bpb_result frozen;
    CHECK(bpb_evaluate(m, toks, N, N, &(bpb_options){.stride = 4, .batch = 1}, &frozen, &err) == 0);
    /* clipped steps keep it bounded (about 50x the frozen figure at this absurd rate; unclipped, 3e6x) */
    CHECK_MSG(res.bpb < 100 * frozen.bpb, "learning %g bpb (worst token %g nats), frozen %g", res.bpb, worst,
              frozen.bpb);
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
    CHECK(bpb_evaluate(m, toks, 1, 10, &(bpb_options){.stride = 1, .batch = 1}, &res, &err) == -1);
    CHECK(bpb_evaluate(m, toks, 3, 0, &(bpb_options){.stride = 1, .batch = 1}, &res, &err) == -1);
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
    RUN(test_adaptive_matches_reference);
    RUN(test_threads_same_bits);
    RUN(test_adaptive_causal_and_restored);
    RUN(test_adaptive_learns_repeats);
    RUN(test_adaptive_stays_finite);
    RUN(test_bad_inputs);
    return test_summary("test_bpb");
}
