/* test_infer.c - the inference engine against the training forward: logits
 * from prefill + one-token decode steps, from ragged multi-sequence steps and
 * from branched (copied) cache slots equal a full model_forward over the same
 * tokens (log-softmax compared at every position, for GQA + QK-norm + SwiGLU
 * + soft-cap + untied head and for the plain tied ReLU^2 shape, across the
 * attention kernel's 64-key tile boundary); generation stops on the
 * separator, the token limit and a full context; bad steps are refused.
 * The same prefill, decode, ragged and branched steps on a model attached to
 * the CPU emulator of a GPU (engine_cuda.h), against the CPU's reference. */
#include "test.h"

#include "core/rng.h"
#include "infer/engine.h"
#include "infer/generate.h"
#include "infer/kv_cache.h"
#include "kernels/cuda/gpu.h"
#include "model/model.h"
#include "model/model_cuda.h"

static model_config config_a(void) /* GQA, QK-norm, SwiGLU, soft-cap, untied */
{
    model_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = 19;
    c.context = 80;
    c.d_model = 16;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.d_ff = 24;
    c.mlp = MLP_SWIGLU;
    c.qk_norm = 1;
    c.tied_head = 0;
    c.logit_softcap = 5.0f;
    c.rope_theta = 10000;
    c.norm_eps = 1e-5f;
    c.init_std = 0.3f;
    return c;
}

static model_config config_b(void) /* plain: MHA, ReLU^2, tied */
{
    model_config c = config_a();
    c.n_kv_heads = 4;
    c.mlp = MLP_RELU2;
    c.qk_norm = 0;
    c.tied_head = 1;
    c.logit_softcap = 0;
    c.d_ff = 32;
    return c;
}

/* ref[t * V + v] = -ln p(v | tokens[0..t]) from model_forward: one forward
 * of V copies of the sequence, copy v with every target v, reading the
 * per-position losses. */
static void reference_nll(model *m, const int32_t *tokens, int T, double *ref)
{
    int V = model_get_config(m)->vocab_size;
    int32_t *in = malloc(sizeof(int32_t) * (size_t)V * T), *tgt = malloc(sizeof(int32_t) * (size_t)V * T);
    for (int v = 0; v < V; v++)
        for (int t = 0; t < T; t++) {
            in[v * T + t] = tokens[t];
            tgt[v * T + t] = v;
        }
    model_set_training(m, 0);
    model_forward(m, in, tgt, V, T);
    const float *l = model_token_losses(m);
    for (int v = 0; v < V; v++)
        for (int t = 0; t < T; t++)
            ref[(size_t)t * V + v] = l[v * T + t];
    free(in);
    free(tgt);
}

/* max over v of |engine nll - reference nll| for one logits row */
static double row_err(const float *z, const double *ref, int V)
{
    double worst = 0;
    for (int v = 0; v < V; v++) {
        double d = fabs(infer_logits_nll(z, V, v, NULL) - ref[v]);
        worst = d > worst ? d : worst;
    }
    return worst;
}

static model *make_model(const model_config *c, uint64_t seed)
{
    model *m;
    tempo_error err;
    if (model_create(&m, c, c->vocab_size, &err))
        return NULL;
    model_init(m, seed);
    return m;
}

static void random_tokens(int32_t *t, int n, int V, uint64_t seed)
{
    rng_state r;
    rng_seed(&r, seed);
    for (int i = 0; i < n; i++)
        t[i] = (int32_t)rng_below(&r, (uint64_t)V);
}

#define TOL 1e-5

/* m's passes on g from now on (g NULL: m stays on the CPU); *gm to free */
static int to_device(model *m, gpu *g, model_cuda **gm)
{
    tempo_error err;
    *gm = NULL;
    if (!g)
        return 0;
    int rc = model_cuda_attach_new(m, g, MODEL_CUDA_FP32, gm, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    return rc;
}

static void free_model(model *m, model_cuda *gm)
{
    if (gm) {
        model_attach_device(m, NULL);
        model_cuda_free(gm);
    }
    model_free(m);
}

/* Prefill the first P tokens, then decode the rest one at a time (on g when
 * not NULL; the reference on the CPU). */
static void check_prefill_decode(const model_config *c, int T, int P, gpu *g)
{
    model *m = make_model(c, 7);
    CHECK(m != NULL);
    if (!m) return;
    int V = c->vocab_size;
    int32_t tok[128];
    random_tokens(tok, T, V, 11);
    double *ref = malloc(sizeof(double) * (size_t)T * V);
    reference_nll(m, tok, T, ref);
    model_cuda *gm;
    if (to_device(m, g, &gm)) {
        free(ref);
        model_free(m);
        return;
    }
    infer_engine *e;
    infer_cache kc;
    tempo_error err;
    CHECK(infer_engine_create(&e, m, 128, &err) == 0);
    CHECK(infer_cache_create(&kc, c, 2, 0, &err) == 0);
    float z[64 * 32];
    infer_chunk ch = {1, tok, P, 0}; /* all rows of the prefill */
    CHECK(infer_step(e, &kc, &ch, 1, &err) == 0);
    CHECK(infer_outputs(e) == P);
    CHECK(kc.len[1] == P);
    double worst = 0;
    for (int t = 0; t < P; t++) {
        infer_logits(e, t, 1, z);
        double d = row_err(z, ref + (size_t)t * V, V);
        worst = d > worst ? d : worst;
    }
    for (int t = P; t < T; t++) {
        ch = (infer_chunk){1, tok + t, 1, 0};
        CHECK(infer_step(e, &kc, &ch, 1, &err) == 0);
        infer_logits(e, 0, 1, z);
        double d = row_err(z, ref + (size_t)t * V, V);
        worst = d > worst ? d : worst;
    }
    CHECK(kc.len[1] == T && kc.len[0] == 0);
    CHECK_MSG(worst < TOL, "prefill %d + decode to %d%s: max nll error %g", P, T, g ? " on the GPU" : "",
              worst);
    infer_cache_free(&kc);
    infer_engine_free(e);
    free(ref);
    free_model(m, gm);
}

static void prefill_decode_equals_forward(gpu *g)
{
    model_config a = config_a(), b = config_b();
    check_prefill_decode(&a, 80, 1, g);  /* decode all the way, past the 64-key tile */
    check_prefill_decode(&a, 80, 70, g); /* prefill across the tile boundary */
    check_prefill_decode(&b, 80, 5, g);
    check_prefill_decode(&b, 33, 33, g); /* prefill only */
}

static void test_prefill_decode_equals_forward(void) { prefill_decode_equals_forward(NULL); }

/* Three sequences in ragged steps: prefill of different lengths together,
 * then batched decode, one slot branched from another by a cache copy. */
static void ragged_batch_and_branch(gpu *g)
{
    model_config c = config_a();
    model *m = make_model(&c, 3);
    CHECK(m != NULL);
    if (!m) return;
    int V = c.vocab_size, T = 40;
    int32_t s0[40], s1[40], s2[40];
    random_tokens(s0, T, V, 1);
    random_tokens(s1, T, V, 2);
    memcpy(s2, s0, sizeof s2);            /* s2 shares s0's first 12 tokens */
    random_tokens(s2 + 12, T - 12, V, 3);
    double *r0 = malloc(sizeof(double) * T * V), *r1 = malloc(sizeof(double) * T * V),
           *r2 = malloc(sizeof(double) * T * V);
    reference_nll(m, s0, T, r0);
    reference_nll(m, s1, T, r1);
    reference_nll(m, s2, T, r2);
    model_cuda *gm;
    if (to_device(m, g, &gm)) {
        free(r0); free(r1); free(r2);
        model_free(m);
        return;
    }
    infer_engine *e;
    infer_cache kc;
    tempo_error err;
    CHECK(infer_engine_create(&e, m, 64, &err) == 0);
    CHECK(infer_cache_create(&kc, &c, 3, 40, &err) == 0);
    float z[8 * 32];
    /* step 1: slot 2 <- s0[0..12) (no outputs), slot 0 <- s1[0..7) (last row) */
    infer_chunk ch[3] = {{2, s0, 12, 12}, {0, s1, 7, 6}};
    CHECK(infer_step(e, &kc, ch, 2, &err) == 0);
    CHECK(infer_outputs(e) == 1);
    infer_logits(e, 0, 1, z);
    double worst = row_err(z, r1 + 6 * V, V);
    /* branch: slot 1 <- copy of slot 2 (s0's prefix = s2's prefix) */
    infer_cache_copy(&kc, 1, 2);
    CHECK(kc.len[1] == 12);
    /* step 2: slot 2 continues s0 by 10, slot 1 continues s2 by 5, slot 0 s1 by 1 */
    ch[0] = (infer_chunk){2, s0 + 12, 10, 0};
    ch[1] = (infer_chunk){1, s2 + 12, 5, 3};
    ch[2] = (infer_chunk){0, s1 + 7, 1, 0};
    CHECK(infer_step(e, &kc, ch, 3, &err) == 0);
    CHECK(infer_outputs(e) == 10 + 2 + 1);
    for (int i = 0; i < 10; i++) {
        infer_logits(e, i, 1, z);
        double d = row_err(z, r0 + (12 + i) * V, V);
        worst = d > worst ? d : worst;
    }
    for (int i = 0; i < 2; i++) {
        infer_logits(e, 10 + i, 1, z);
        double d = row_err(z, r2 + (15 + i) * V, V);
        worst = d > worst ? d : worst;
    }
    infer_logits(e, 12, 1, z);
    double d = row_err(z, r1 + 7 * V, V);
    worst = d > worst ? d : worst;
    /* batched decode of all three to the end */
    int pos[3] = {22, 17, 8};
    const int32_t *seq[3] = {s0, s2, s1};
    const double *ref[3] = {r0, r2, r1};
    int slot[3] = {2, 1, 0};
    for (int step = 0; step < 15; step++) {
        for (int i = 0; i < 3; i++)
            ch[i] = (infer_chunk){slot[i], seq[i] + pos[i], 1, 0};
        CHECK(infer_step(e, &kc, ch, 3, &err) == 0);
        float zz[3 * 32];
        infer_logits(e, 0, 3, zz);
        for (int i = 0; i < 3; i++) {
            d = row_err(zz + i * V, ref[i] + (size_t)pos[i] * V, V);
            worst = d > worst ? d : worst;
            pos[i]++;
        }
    }
    CHECK_MSG(worst < TOL, "ragged/branched steps%s: max nll error %g", g ? " on the GPU" : "", worst);
    infer_cache_free(&kc);
    infer_engine_free(e);
    free(r0);
    free(r1);
    free(r2);
    free_model(m, gm);
}

static void test_ragged_batch_and_branch(void) { ragged_batch_and_branch(NULL); }

/* The GPU engine (the emulator: its logic, not its speed) against the CPU's reference. */
static void test_on_emulated_gpu(void)
{
    gpu *g;
    tempo_error err;
    int rc = gpu_open(&g, GPU_EMULATOR, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc)
        return;
    prefill_decode_equals_forward(g);
    ragged_batch_and_branch(g);
    gpu_close(g);
}

static void test_bad_steps_refused(void)
{
    model_config c = config_b();
    c.context = 16;
    model *m = make_model(&c, 1);
    CHECK(m != NULL);
    if (!m) return;
    infer_engine *e;
    infer_cache kc;
    tempo_error err;
    CHECK(infer_engine_create(&e, m, 8, &err) == 0);
    CHECK(infer_cache_create(&kc, &c, 2, 0, &err) == 0);
    int32_t tok[20] = {0};
    infer_chunk ch[2] = {{0, tok, 9, 9}};
    CHECK(infer_step(e, &kc, ch, 1, &err) == -1 && err.code == 2); /* > max_rows */
    ch[0] = (infer_chunk){2, tok, 1, 0};
    CHECK(infer_step(e, &kc, ch, 1, &err) == -1); /* slot out of range */
    ch[0] = (infer_chunk){0, tok, 4, 0};
    ch[1] = (infer_chunk){0, tok, 1, 0};
    CHECK(infer_step(e, &kc, ch, 2, &err) == -1); /* slot twice */
    tok[2] = c.vocab_size;
    CHECK(infer_step(e, &kc, ch, 1, &err) == -1); /* token out of range */
    tok[2] = 0;
    CHECK(kc.len[0] == 0); /* nothing changed by the refusals */
    for (int i = 0; i < 2; i++) {
        ch[0] = (infer_chunk){0, tok, 8, 8};
        CHECK(infer_step(e, &kc, ch, 1, &err) == 0);
    }
    ch[0] = (infer_chunk){0, tok, 1, 0};
    CHECK(infer_step(e, &kc, ch, 1, &err) == -1); /* slot full (16 of 16) */
    CHECK(kc.len[0] == 16);
    infer_cache kbad;
    CHECK(infer_cache_create(&kbad, &c, 1, 17, &err) == -1); /* beyond the context */
    CHECK(infer_cache_create(&kbad, &c, 0, 0, &err) == -1);
    infer_cache_free(&kc);
    infer_engine_free(e);
    model_free(m);
}

typedef struct {
    int32_t got[64];
    int n, stop_after;
} collect;

static int on_token(void *user, int32_t t)
{
    collect *c = user;
    c->got[c->n++] = t;
    return c->stop_after && c->n >= c->stop_after;
}

/* Greedy generation reproduces the argmax chain of full forwards, and stops
 * for each of its reasons. */
static void test_generate_greedy_and_stops(void)
{
    model_config c = config_a();
    c.context = 24;
    model *m = make_model(&c, 5);
    CHECK(m != NULL);
    if (!m) return;
    int V = c.vocab_size;
    int32_t seq[24];
    random_tokens(seq, 4, V, 9);
    /* the reference chain: argmax of the last row of a full forward */
    double ref[24 * 32];
    for (int t = 4; t < 12; t++) {
        reference_nll(m, seq, t, ref);
        int best = 0;
        for (int v = 1; v < V; v++)
            if (ref[(t - 1) * V + v] < ref[(t - 1) * V + best])
                best = v;
        seq[t] = best;
    }
    infer_engine *e;
    infer_cache kc;
    tempo_error err;
    CHECK(infer_engine_create(&e, m, 32, &err) == 0);
    CHECK(infer_cache_create(&kc, &c, 1, 0, &err) == 0);
    gen_options o = {.max_tokens = 8, .stop_at_sep = 0, .sep_id = V - 1,
                     .sample = {.temperature = 0, .top_k = 0, .top_p = 1, .seed = 1}};
    collect col = {.n = 0};
    gen_result res;
    CHECK(infer_generate(e, &kc, 0, seq, 4, &o, on_token, &col, &res, &err) == 0);
    CHECK(res.stop == GEN_STOP_TOKENS && res.new_tokens == 8 && col.n == 8);
    for (int i = 0; i < 8; i++)
        CHECK_MSG(col.got[i] == seq[4 + i], "token %d: %d vs %d", i, col.got[i], seq[4 + i]);
    /* the separator: call the third greedy token the separator */
    o.stop_at_sep = 1;
    o.sep_id = seq[6];
    int first = seq[4] == o.sep_id ? 0 : seq[5] == o.sep_id ? 1 : 2;
    col.n = 0;
    CHECK(infer_generate(e, &kc, 0, seq, 4, &o, on_token, &col, &res, &err) == 0);
    CHECK(res.stop == GEN_STOP_SEPARATOR && res.new_tokens == first && col.n == first);
    /* the callback */
    o.stop_at_sep = 0;
    col.n = 0;
    col.stop_after = 2;
    CHECK(infer_generate(e, &kc, 0, seq, 4, &o, on_token, &col, &res, &err) == 0);
    CHECK(res.stop == GEN_STOP_CALLER && res.new_tokens == 2);
    /* a full context: prompt of 22 of 24 positions -> 3 tokens (the last is never fed) */
    int32_t longp[22] = {0};
    col.n = 0;
    col.stop_after = 0;
    CHECK(infer_generate(e, &kc, 0, longp, 22, &o, on_token, &col, &res, &err) == 0);
    CHECK(res.stop == GEN_STOP_CONTEXT && res.new_tokens == 3 && kc.len[0] == 24);
    /* bad input */
    CHECK(infer_generate(e, &kc, 0, longp, 0, &o, NULL, NULL, &res, &err) == -1);
    o.max_tokens = 0;
    CHECK(infer_generate(e, &kc, 0, longp, 3, &o, NULL, NULL, &res, &err) == -1);
    o.max_tokens = 4;
    o.sample.top_p = 0;
    CHECK(infer_generate(e, &kc, 0, longp, 3, &o, NULL, NULL, &res, &err) == -1 && err.code == 2);
    infer_cache_free(&kc);
    infer_engine_free(e);
    model_free(m);
}

/* The prompt window: separator first, the prompt cut from the left so that
 * min(N, context/2) new tokens fit; the decode speed leaves the first token out. */
static void test_prompt_window(void)
{
    int32_t p[10] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, *seq = NULL;
    int n_seq = 0, cut = -1;
    tempo_error err;
    /* context 16, 4 new tokens: room for 16 - 4 - 1 = 11 prompt tokens: nothing cut */
    CHECK(gen_prompt_window(p, 10, 99, 16, 4, &seq, &n_seq, &cut, &err) == 0);
    CHECK(cut == 0 && n_seq == 11 && seq[0] == 99 && seq[1] == 10 && seq[10] == 19);
    free(seq);
    /* context 16, 200 new tokens: at most 8 of them count, so 7 prompt tokens stay */
    CHECK(gen_prompt_window(p, 10, 99, 16, 200, &seq, &n_seq, &cut, &err) == 0);
    CHECK(cut == 3 && n_seq == 8 && seq[0] == 99 && seq[1] == 13 && seq[7] == 19);
    free(seq);
    /* no prompt, and a context too small for any: the separator alone */
    CHECK(gen_prompt_window(p, 0, 7, 16, 4, &seq, &n_seq, &cut, &err) == 0);
    CHECK(cut == 0 && n_seq == 1 && seq[0] == 7);
    free(seq);
    CHECK(gen_prompt_window(p, 10, 7, 1, 4, &seq, &n_seq, &cut, &err) == 0);
    CHECK(cut == 10 && n_seq == 1 && seq[0] == 7);
    free(seq);
    gen_result r = {.new_tokens = 5, .decode_s = 2};
    CHECK(gen_decode_tokens_per_s(&r) == 2);
    r.new_tokens = 1;
    CHECK(isnan(gen_decode_tokens_per_s(&r)));
    r = (gen_result){.new_tokens = 3, .decode_s = 0};
    CHECK(isnan(gen_decode_tokens_per_s(&r)));
}

int main(void)
{
    RUN(test_prefill_decode_equals_forward);
    RUN(test_ragged_batch_and_branch);
    RUN(test_on_emulated_gpu);
    RUN(test_bad_steps_refused);
    RUN(test_generate_greedy_and_stops);
    RUN(test_prompt_window);
    return test_summary("test_infer");
}
