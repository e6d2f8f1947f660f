/* test_model.c - the whole model: config validation, parameter layout, init,
 * the forward against a double-precision reference model written from the
 * equations (ref_ops.h), the backward against central finite differences of
 * that reference for EVERY parameter of tiny configs (both MLPs, tied and
 * untied head, QK-norm and soft-cap on and off, GQA), gradient accumulation,
 * batch independence, training/evaluation mode equivalence, determinism, 1 vs
 * 2 threads, zero parameters => log V, bad inputs, FLOP count, and the
 * backward pass's hand-over of finished gradient spans (model_set_grad_ready).
 * Gradient tolerance: |got - fd| <= 1e-6 + 1e-4 |fd| (float model vs double FD). */
#include "test.h"
#include "ref_ops.h"

#include "model/model.h"
#include "model/model_internal.h"   /* lane_buf: whether the two-lane backward ran */

#include <omp.h>

/* ---------------- double-precision reference model ---------------- */

typedef struct {
    const model *m; /* for the config and tensor table only */
    double *p;      /* parameters in the model's layout */
    const int32_t *tokens, *targets;
    int B, T;
    double *token_losses; /* [B*T] out */
} ref_model;

static double *ref_tensor(const ref_model *r, const char *fmt, int layer)
{
    char name[64];
    snprintf(name, sizeof name, fmt, layer);
    int i = model_find_tensor(r->m, name);
    return i < 0 ? NULL : r->p + model_tensor_at(r->m, i)->offset;
}

/* y [N, out] = x [N, in] W^T (+ y when add) */
static void refd_linear(double *y, const double *x, const double *W, int N, int in, int out,
                        int add)
{
    for (int n = 0; n < N; n++)
        for (int o = 0; o < out; o++) {
            double s = 0;
            for (int i = 0; i < in; i++)
                s += x[(size_t)n * in + i] * W[(size_t)o * in + i];
            y[(size_t)n * out + o] = (add ? y[(size_t)n * out + o] : 0) + s;
        }
}

static double ref_forward(void *ctx)
{
    ref_model *r = ctx;
    const model_config *c = model_get_config(r->m);
    int B = r->B, T = r->T, N = B * T, C = c->d_model, H = c->n_heads, Hkv = c->n_kv_heads;
    int D = C / H, F = c->d_ff, V = c->vocab_size;
    double eps = c->norm_eps;
    double *x = malloc(sizeof(double) * N * C), *n1 = malloc(sizeof(double) * N * C);
    double *q = malloc(sizeof(double) * N * H * D), *k = malloc(sizeof(double) * N * Hkv * D);
    double *v = malloc(sizeof(double) * N * Hkv * D), *att = malloc(sizeof(double) * N * H * D);
    double *up = malloc(sizeof(double) * N * F), *gate = malloc(sizeof(double) * N * F);
    double *tmp = malloc(sizeof(double) * N * H * D);
    const double *emb = ref_tensor(r, "tok_emb", 0);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < C; i++)
            x[(size_t)n * C + i] = emb[(size_t)r->tokens[n] * C + i];
    for (int l = 0; l < c->n_layers; l++) {
        refd_rmsnorm(n1, x, ref_tensor(r, "layers.%d.attn_norm", l), N, C, eps);
        refd_linear(q, n1, ref_tensor(r, "layers.%d.wq", l), N, C, H * D, 0);
        refd_linear(k, n1, ref_tensor(r, "layers.%d.wk", l), N, C, Hkv * D, 0);
        refd_linear(v, n1, ref_tensor(r, "layers.%d.wv", l), N, C, Hkv * D, 0);
        if (c->qk_norm) {
            memcpy(tmp, q, sizeof(double) * N * H * D);
            refd_rmsnorm(q, tmp, ref_tensor(r, "layers.%d.q_norm", l), N * H, D, eps);
            memcpy(tmp, k, sizeof(double) * N * Hkv * D);
            refd_rmsnorm(k, tmp, ref_tensor(r, "layers.%d.k_norm", l), N * Hkv, D, eps);
        }
        refd_rope(q, B, T, H, D, 0, c->rope_theta);
        refd_rope(k, B, T, Hkv, D, 0, c->rope_theta);
        refd_attention(att, NULL, q, k, v, B, T, H, Hkv, D);
        refd_linear(x, att, ref_tensor(r, "layers.%d.wo", l), N, H * D, C, 1);
        refd_rmsnorm(n1, x, ref_tensor(r, "layers.%d.mlp_norm", l), N, C, eps);
        refd_linear(up, n1, ref_tensor(r, "layers.%d.w_up", l), N, C, F, 0);
        if (c->mlp == MLP_SWIGLU) {
            refd_linear(gate, n1, ref_tensor(r, "layers.%d.w_gate", l), N, C, F, 0);
            for (int i = 0; i < N * F; i++)
                up[i] = refd_silu(gate[i]) * up[i];
        } else {
            for (int i = 0; i < N * F; i++)
                up[i] = refd_relu2(up[i]);
        }
        refd_linear(x, up, ref_tensor(r, "layers.%d.w_down", l), N, F, C, 1);
    }
    refd_rmsnorm(n1, x, ref_tensor(r, "final_norm", 0), N, C, eps);
    const double *head = c->tied_head ? emb : ref_tensor(r, "head", 0);
    refd_head_loss(r->token_losses, n1, head, r->targets, N, C, V, c->logit_softcap);
    double s = 0;
    for (int n = 0; n < N; n++)
        s += r->token_losses[n];
    free(x); free(n1); free(q); free(k); free(v); free(att); free(up); free(gate); free(tmp);
    return s / N;
}

/* ---------------- helpers ---------------- */

static model_config tiny_config(mlp_kind mlp, int tied, int qk, float cap, int H, int Hkv)
{
    model_config c = {
        .vocab_size = 13, .context = 6, .d_model = 8, .n_layers = 2, .n_heads = H,
        .n_kv_heads = Hkv, .d_ff = 12, .mlp = mlp, .qk_norm = qk, .tied_head = tied,
        .logit_softcap = cap, .rope_theta = 10000.0f, .norm_eps = 1e-5f, .init_std = 0.4f,
    };
    return c;
}

static model *make_model(const model_config *c, int max_batch, uint64_t seed)
{
    model *m = NULL;
    tempo_error err;
    tempo_error_clear(&err);
    if (model_create(&m, c, max_batch, &err) != 0) {
        fprintf(stderr, "  model_create: %s\n", err.msg);
        return NULL;
    }
    model_init(m, seed);
    /* norm gains away from 1 so their gradients and uses are exercised */
    rng_state r;
    rng_seed(&r, seed + 99);
    for (int i = 0; i < model_num_tensors(m); i++) {
        const model_tensor *t = model_tensor_at(m, i);
        if (t->kind == TENSOR_NORM)
            fill_uniform(&r, model_params(m) + t->offset, t->numel, 0.6f, 1.4f);
    }
    return m;
}

static void random_ids(rng_state *r, int32_t *ids, int n, int V)
{
    for (int i = 0; i < n; i++)
        ids[i] = (int32_t)rng_below(r, (uint64_t)V);
}

/* A mid-sized shape written out (the model layer has no defaults; the one
 * default configuration is run_config's): d_model 256, 6 layers, 4 heads,
 * context 256, ReLU^2, tied head. */
static model_config mid_config(int V)
{
    model_config c = {
        .vocab_size = V, .context = 256, .d_model = 256, .n_layers = 6, .n_heads = 4,
        .n_kv_heads = 4, .d_ff = 1024, .mlp = MLP_RELU2, .qk_norm = 0, .tied_head = 1,
        .logit_softcap = 0.0f, .rope_theta = 10000.0f, .norm_eps = 1e-5f, .init_std = 0.02f,
    };
    return c;
}

/* ---------------- tests ---------------- */

static void test_config_validate(void)
{
    tempo_error err;
    model_config good = tiny_config(MLP_RELU2, 1, 0, 0, 2, 1);
    CHECK(model_config_validate(&good, &err) == 0);
    model_config d = mid_config(4097);
    CHECK(model_config_validate(&d, &err) == 0);
    struct { model_config c; const char *want; } bad[10];
    for (int i = 0; i < 10; i++)
        bad[i].c = good;
    bad[0].c.d_model = 100, bad[0].c.n_heads = 3, bad[0].want = "d_model 100 not divisible by n_heads 3";
    bad[1].c.vocab_size = 1, bad[1].want = "vocab_size 1";
    bad[2].c.n_kv_heads = 3, bad[2].c.n_heads = 4, bad[2].want = "not divisible by n_kv_heads 3";
    bad[3].c.d_model = 6, bad[3].c.n_heads = 2, bad[3].want = "even";
    bad[4].c.logit_softcap = -1, bad[4].want = "logit_softcap";
    bad[5].c.mlp = (mlp_kind)7, bad[5].want = "mlp";
    bad[6].c.context = 0, bad[6].want = "context";
    bad[7].c.norm_eps = 0, bad[7].want = "norm_eps";
    bad[8].c.bf16_products = 3, bad[8].want = "bf16_products 3";
    bad[9].c.bf16_products = -1, bad[9].want = "bf16_products -1";
    for (int i = 0; i < 10; i++) {
        tempo_error_clear(&err);
        CHECK_MSG(model_config_validate(&bad[i].c, &err) == -1, "case %d", i);
        CHECK_MSG(err.code == 2 && strstr(err.msg, bad[i].want) && strstr(err.msg, "model config"),
                  "case %d: %s", i, err.msg);
        model *m = (model *)&err; /* must be reset to NULL */
        CHECK(model_create(&m, &bad[i].c, 1, &err) == -1 && m == NULL && err.code == 2);
    }
    model *m = NULL;
    tempo_error_clear(&err);
    CHECK(model_create(&m, &good, 0, &err) == -1 && err.code == 2 && strstr(err.msg, "max_batch"));
}

static void test_layout(void)
{
    model_config c = tiny_config(MLP_SWIGLU, 0, 1, 0, 4, 2);
    model *m = make_model(&c, 1, 1);
    CHECK(m != NULL);
    if (!m)
        return;
    const char *names[] = {"tok_emb", "layers.0.attn_norm", "layers.0.wq", "layers.0.wk",
                           "layers.0.wv", "layers.0.wo", "layers.0.q_norm", "layers.0.k_norm",
                           "layers.0.mlp_norm", "layers.0.w_up", "layers.0.w_gate",
                           "layers.0.w_down"};
    int D = 2, F = 12, C = 8;
    int shapes[][2] = {{13, C}, {C, 0}, {4 * D, C}, {2 * D, C}, {2 * D, C}, {C, 4 * D},
                       {D, 0}, {D, 0}, {C, 0}, {F, C}, {F, C}, {C, F}};
    tensor_kind kinds[] = {TENSOR_EMBEDDING, TENSOR_NORM, TENSOR_MATRIX, TENSOR_MATRIX,
                           TENSOR_MATRIX, TENSOR_MATRIX, TENSOR_NORM, TENSOR_NORM, TENSOR_NORM,
                           TENSOR_MATRIX, TENSOR_MATRIX, TENSOR_MATRIX};
    CHECK(model_num_tensors(m) == 1 + 2 * 11 + 2);
    for (int i = 0; i < 12; i++) {
        const model_tensor *t = model_tensor_at(m, i);
        CHECK_MSG(strcmp(t->name, names[i]) == 0, "%d: %s", i, t->name);
        CHECK(t->shape[0] == shapes[i][0] && t->shape[1] == shapes[i][1]);
        CHECK(t->ndim == (shapes[i][1] ? 2 : 1) && t->kind == kinds[i]);
    }
    size_t off = 0;
    for (int i = 0; i < model_num_tensors(m); i++) {
        const model_tensor *t = model_tensor_at(m, i);
        CHECK(t->offset == off);
        off += t->numel;
    }
    CHECK(off == model_num_params(m));
    CHECK(strcmp(model_tensor_at(m, model_num_tensors(m) - 1)->name, "head") == 0);
    CHECK(model_tensor_at(m, model_num_tensors(m) - 1)->kind == TENSOR_HEAD);
    CHECK(model_find_tensor(m, "layers.1.w_down") == 1 + 11 + 10);
    CHECK(model_find_tensor(m, "nope") == -1 && model_tensor_at(m, 999) == NULL);
    CHECK(((uintptr_t)model_params(m) & 63) == 0 && ((uintptr_t)model_grads(m) & 63) == 0);
    CHECK(model_activation_bytes(m) > 0);
    model_free(m);
    /* tied, no QK-norm, ReLU^2: no head, q_norm, k_norm, w_gate */
    c = tiny_config(MLP_RELU2, 1, 0, 0, 2, 1);
    m = make_model(&c, 1, 1);
    CHECK(model_num_tensors(m) == 1 + 2 * 8 + 1);
    CHECK(model_find_tensor(m, "head") < 0 && model_find_tensor(m, "layers.0.q_norm") < 0 &&
          model_find_tensor(m, "layers.0.w_gate") < 0);
    model_free(m);
    model_free(NULL);
}

static void test_init(void)
{
    model_config c = mid_config(301);
    c.n_layers = 2;
    c.context = 8;
    model *a = NULL, *b = NULL;
    tempo_error err;
    CHECK(model_create(&a, &c, 1, &err) == 0 && model_create(&b, &c, 1, &err) == 0);
    size_t n = model_num_params(a);
    model_init(a, 7);
    model_init(b, 7);
    CHECK(memcmp(model_params(a), model_params(b), n * sizeof(float)) == 0);
    model_init(b, 8);
    CHECK(memcmp(model_params(a), model_params(b), n * sizeof(float)) != 0);
    for (int i = 0; i < model_num_tensors(a); i++) {
        const model_tensor *t = model_tensor_at(a, i);
        const float *p = model_params(a) + t->offset;
        double s2 = 0;
        for (size_t j = 0; j < t->numel; j++)
            s2 += (double)p[j] * p[j];
        double rms = sqrt(s2 / t->numel);
        int is_out = strstr(t->name, ".wo") || strstr(t->name, ".w_down");
        double want = t->kind == TENSOR_NORM ? 1.0 : is_out ? 0.02 / sqrt(4.0) : 0.02;
        CHECK_MSG(fabs(rms - want) < 0.05 * want, "%s rms %g want %g", t->name, rms, want);
    }
    model_free(a);
    model_free(b);
}

/* Forward vs the double reference, and every parameter's gradient vs central
 * differences of the double reference. */
static void grad_check(model_config c, int B, int T, const char *label)
{
    model *m = make_model(&c, B + 1, 5); /* max_batch > B and context > T on purpose */
    CHECK(m != NULL);
    if (!m)
        return;
    int N = B * T;
    rng_state rng;
    rng_seed(&rng, 17);
    int32_t *tok = malloc(sizeof(int32_t) * N), *tg = malloc(sizeof(int32_t) * N);
    random_ids(&rng, tok, N, c.vocab_size);
    random_ids(&rng, tg, N, c.vocab_size);
    size_t P = model_num_params(m);
    model_zero_grad(m);
    double loss = model_forward(m, tok, tg, B, T);
    model_backward(m);
    ref_model r = {m, malloc(sizeof(double) * P), tok, tg, B, T, malloc(sizeof(double) * N)};
    to_double(r.p, model_params(m), P);
    double rl = ref_forward(&r);
    CHECK_MSG(fabs(loss - rl) < 1e-5, "%s: loss %.9g ref %.9g", label, loss, rl);
    const float *tl = model_token_losses(m);
    double e = 0;
    for (int n = 0; n < N; n++)
        e = fmax(e, fabs(tl[n] - r.token_losses[n]));
    CHECK_MSG(e < 1e-5, "%s: token loss err %g", label, e);
    double *fd = malloc(sizeof(double) * P);
    fd_grad(fd, r.p, P, ref_forward, &r, 1e-5);
    for (int i = 0; i < model_num_tensors(m); i++) {
        const model_tensor *t = model_tensor_at(m, i);
        char what[128];
        snprintf(what, sizeof what, "%s %s", label, t->name);
        double gmax = 0;
        for (size_t j = 0; j < t->numel; j++)
            gmax = fmax(gmax, fabs(fd[t->offset + j]));
        /* with T = 1 each query sees only itself: q and k cannot matter */
        int no_qk = T == 1 && (strstr(t->name, ".wq") || strstr(t->name, ".wk") ||
                               strstr(t->name, ".q_norm") || strstr(t->name, ".k_norm"));
        if (no_qk)
            CHECK_MSG(gmax < 1e-8, "%s: expected no gradient, fd max %g", what, gmax);
        else
            CHECK_MSG(gmax > 1e-4, "%s: gradient vanishes (the check would be vacuous)", what);
        CHECK_MSG(grad_mismatches(what, model_grads(m) + t->offset, fd + t->offset, t->numel,
                                  1e-6, 1e-4) == 0, "%s", what);
    }
    free(fd); free(r.p); free(r.token_losses); free(tok); free(tg);
    model_free(m);
}

static void test_grad_relu2_tied(void)
{
    grad_check(tiny_config(MLP_RELU2, 1, 0, 0, 2, 1), 2, 5, "relu2/tied/gqa");
}

static void test_grad_swiglu_untied_qknorm_softcap(void)
{
    grad_check(tiny_config(MLP_SWIGLU, 0, 1, 3.0f, 2, 2), 2, 5, "swiglu/untied/qknorm/cap");
}

static void test_grad_relu2_untied_qknorm(void)
{
    grad_check(tiny_config(MLP_RELU2, 0, 1, 0, 4, 2), 1, 6, "relu2/untied/qknorm/H4");
}

static void test_grad_swiglu_tied_softcap(void)
{
    grad_check(tiny_config(MLP_SWIGLU, 1, 0, 1.5f, 2, 1), 3, 1, "swiglu/tied/cap/T1");
}

/* Two backward calls = 2x; evaluation mode + backward = training mode;
 * a batch of 2 = the average of its two sequences. */
static void test_accumulation(void)
{
    model_config c = tiny_config(MLP_SWIGLU, 1, 1, 2.0f, 2, 1);
    model *m = make_model(&c, 2, 3);
    size_t P = model_num_params(m);
    int T = 5;
    rng_state rng;
    rng_seed(&rng, 23);
    int32_t tok[10], tg[10];
    random_ids(&rng, tok, 10, c.vocab_size);
    random_ids(&rng, tg, 10, c.vocab_size);
    float *g1 = malloc(sizeof(float) * P), *g2 = malloc(sizeof(float) * P);
    model_zero_grad(m);
    double l1 = model_forward(m, tok, tg, 2, T);
    model_backward(m);
    memcpy(g1, model_grads(m), sizeof(float) * P);
    model_backward(m);
    double gmax = 0;
    for (size_t i = 0; i < P; i++)
        gmax = fmax(gmax, fabs(g1[i]));
    double e = 0;
    for (size_t i = 0; i < P; i++)
        e = fmax(e, fabs(model_grads(m)[i] - 2.0 * g1[i]));
    CHECK_MSG(gmax > 0 && e <= 1e-6 * gmax, "2x backward err %g of %g", e, gmax);
    /* evaluation-mode forward, then backward: same loss, same gradient */
    model_set_training(m, 0);
    model_zero_grad(m);
    double l2 = model_forward(m, tok, tg, 2, T);
    model_backward(m);
    CHECK(l1 == l2);
    e = 0;
    for (size_t i = 0; i < P; i++)
        e = fmax(e, fabs(model_grads(m)[i] - g1[i]));
    CHECK_MSG(e <= 1e-6 * gmax, "eval-mode backward err %g", e);
    model_set_training(m, 1);
    /* sequences are independent: grad(B=2) = (grad(seq 0) + grad(seq 1)) / 2 */
    model_zero_grad(m);
    double la = model_forward(m, tok, tg, 1, T);
    model_backward(m);
    double lb = model_forward(m, tok + T, tg + T, 1, T);
    model_backward(m);
    CHECK_NEAR((la + lb) / 2, l1, 1e-6);
    e = 0;
    for (size_t i = 0; i < P; i++)
        e = fmax(e, fabs(model_grads(m)[i] / 2 - g1[i]));
    CHECK_MSG(e <= 1e-5 * gmax, "batch split err %g", e);
    /* the backward of the first row of a two-row forward is the backward of a forward of that row
     * alone, bit for bit, after a training- or an evaluation-mode forward */
    model_zero_grad(m);
    model_forward(m, tok, tg, 1, T);
    model_backward(m);
    memcpy(g2, model_grads(m), sizeof(float) * P);
    for (int training = 1; training >= 0; training--) {
        model_set_training(m, training);
        model_zero_grad(m);
        model_forward(m, tok, tg, 2, T);
        model_backward_rows(m, 1);
        CHECK_MSG(memcmp(g2, model_grads(m), sizeof(float) * P) == 0, "rows 1 of 2 (training %d)", training);
        model_backward_rows(m, 0);   /* out of range: nothing */
        model_backward_rows(m, 3);
        CHECK(memcmp(g2, model_grads(m), sizeof(float) * P) == 0);
    }
    /* an evaluation that reads only positions t >= from[b]: those losses are the full forward's, the
     * others 0, the mean is theirs, and the first row's backward still has g2's bits (the head computes
     * the logits the forward skipped) */
    float full[10];
    model_forward_eval(m, tok, tg, 2, T, 1.3f, NULL);
    memcpy(full, model_token_losses(m), sizeof full);
    const int32_t from[2] = {2, 4};
    model_zero_grad(m);
    double lr = model_forward_eval(m, tok, tg, 2, T, 1.3f, from);
    const float *ls = model_token_losses(m);
    double sum = 0;
    int bad = 0;
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < T; t++) {
            float want = t >= from[b] ? full[b * T + t] : 0.0f;
            bad += memcmp(&ls[b * T + t], &want, sizeof want) != 0;
            sum += t >= from[b] ? full[b * T + t] : 0;
        }
    CHECK_MSG(bad == 0, "%d positions wrong after score_from", bad);
    CHECK_NEAR(lr, sum / 4, 1e-12);
    model_backward_rows(m, 1);
    CHECK_MSG(memcmp(g2, model_grads(m), sizeof(float) * P) == 0, "rows 1 of 2 after score_from");
    const int32_t none[2] = {T, T};
    CHECK(model_forward_eval(m, tok, tg, 2, T, 1.3f, none) == 0.0);
    model_set_training(m, 1);
    free(g1);
    free(g2);
    model_free(m);
}

/* Same inputs => bit-identical losses and gradients; 1 vs 2 threads agree. */
static void test_determinism(void)
{
    model_config c = tiny_config(MLP_RELU2, 0, 1, 0, 4, 2);
    c.d_model = 32, c.d_ff = 64, c.context = 40, c.vocab_size = 50;
    model *m = make_model(&c, 3, 4);
    size_t P = model_num_params(m);
    int B = 3, T = 37, N = B * T;
    rng_state rng;
    rng_seed(&rng, 29);
    int32_t *tok = malloc(sizeof(int32_t) * N), *tg = malloc(sizeof(int32_t) * N);
    random_ids(&rng, tok, N, c.vocab_size);
    random_ids(&rng, tg, N, c.vocab_size);
    float *g[3];
    double loss[3];
    int threads[3] = {2, 2, 1};
    for (int run = 0; run < 3; run++) {
        omp_set_num_threads(threads[run]);
        model_zero_grad(m);
        loss[run] = model_forward(m, tok, tg, B, T);
        model_backward(m);
        g[run] = malloc(sizeof(float) * P);
        memcpy(g[run], model_grads(m), sizeof(float) * P);
    }
    omp_set_num_threads(2);
    CHECK(loss[0] == loss[1]);
    CHECK(memcmp(g[0], g[1], sizeof(float) * P) == 0);
    CHECK_NEAR(loss[2], loss[0], 1e-6);
    double gmax = 0, e = 0;
    for (size_t i = 0; i < P; i++) {
        gmax = fmax(gmax, fabs(g[0][i]));
        e = fmax(e, fabs(g[2][i] - g[0][i]));
    }
    CHECK_MSG(e <= 1e-5 * gmax, "1 vs 2 threads: err %g of %g", e, gmax);
    for (int run = 0; run < 3; run++)
        free(g[run]);
    free(tok);
    free(tg);
    model_free(m);
}

/* All parameters zero => uniform prediction => every token loss is log V. */
static void test_zero_params_uniform(void)
{
    for (int tied = 0; tied <= 1; tied++) {
        model_config c = tiny_config(tied ? MLP_RELU2 : MLP_SWIGLU, tied, !tied, 5.0f, 2, 1);
        c.vocab_size = 4097;
        model *m = NULL;
        tempo_error err;
        CHECK(model_create(&m, &c, 2, &err) == 0); /* parameters start at zero */
        int32_t tok[12], tg[12];
        rng_state rng;
        rng_seed(&rng, 31);
        random_ids(&rng, tok, 12, c.vocab_size);
        random_ids(&rng, tg, 12, c.vocab_size);
        double loss = model_forward(m, tok, tg, 2, 6);
        CHECK_NEAR(loss, log(4097.0), 1e-6);
        const float *tl = model_token_losses(m);
        for (int n = 0; n < 12; n++)
            CHECK_NEAR(tl[n], log(4097.0), 1e-6);
        model_free(m);
    }
}

static void test_bad_inputs(void)
{
    model_config c = tiny_config(MLP_RELU2, 1, 0, 0, 2, 1);
    model *m = make_model(&c, 2, 6);
    size_t P = model_num_params(m);
    int32_t tok[14] = {0}, tg[14] = {0};
    CHECK(isnan(model_forward(m, tok, tg, 3, 2)));  /* B > max_batch */
    CHECK(isnan(model_forward(m, tok, tg, 1, 7)));  /* T > context */
    CHECK(isnan(model_forward(m, tok, tg, 0, 2)));
    CHECK(isnan(model_forward(m, NULL, tg, 1, 2)));
    tok[3] = 13;
    CHECK(isnan(model_forward(m, tok, tg, 1, 5)));  /* id == V */
    tok[3] = 0;
    tg[1] = -1;
    CHECK(isnan(model_forward(m, tok, tg, 1, 5)));  /* negative target */
    model_zero_grad(m);
    model_backward(m); /* after a failed forward: nothing */
    CHECK(model_forward(m, tok, NULL, 2, 6) == 0.0);
    model_backward(m); /* after a forward without targets: nothing */
    int nonzero = 0;
    for (size_t i = 0; i < P; i++)
        nonzero += model_grads(m)[i] != 0;
    CHECK(nonzero == 0);
    tg[1] = 0;
    CHECK(isfinite(model_forward(m, tok, tg, 2, 6))); /* the model still works */
    model_free(m);
}

static void test_flops(void)
{
    model_config c = mid_config(4097);
    /* per layer: wq, wo 256x256, wk, wv 256x256 (4 kv heads), w_up, w_down 256x1024 */
    double matmul = 6.0 * (4 * 65536.0 + 2 * 262144.0) + 4097.0 * 256;
    double want = 6 * matmul + 6.0 * 6 * 256 * 256;
    CHECK_NEAR(model_flops_per_token(&c, 256), want, 1e-6 * want);
    c.mlp = MLP_SWIGLU;
    c.n_kv_heads = 1;
    matmul = 6.0 * (2 * 65536.0 + 2 * 64.0 * 256 + 3 * 262144.0) + 4097.0 * 256;
    want = 6 * matmul + 6.0 * 6 * 100 * 256;
    CHECK_NEAR(model_flops_per_token(&c, 100), want, 1e-6 * want);
}

/* model_set_grad_ready: the spans come in the backward pass's order (head
 * side first, the layers last to first, the embedding last), are contiguous
 * and cover the buffer once, and each is final when handed over: a copy
 * taken at the hand-over equals the gradient after the pass, bit for bit
 * (the trainer starts reducing a span at that moment). The copies are
 * poisoned first so that a span never handed over shows. */
typedef struct {
    const model *m;
    float *copy;
    size_t next_end;   /* the previous span's offset: spans come from the end down */
    int calls, bad_order;
} span_log;

static void log_span(void *ctx, size_t off, size_t n)
{
    span_log *s = ctx;
    if (off + n != s->next_end)
        s->bad_order++;
    s->next_end = off;
    size_t want_off, want_n;
    model_grad_span(s->m, s->calls, &want_off, &want_n);
    if (want_off != off || want_n != n)
        s->bad_order++;
    memcpy(s->copy + off, model_grads((model *)s->m) + off, sizeof(float) * n);
    s->calls++;
}

static void test_grad_spans(void)
{
    for (int variant = 0; variant < 2; variant++) {
        model_config c = variant ? tiny_config(MLP_SWIGLU, 0, 1, 2.0f, 2, 1) : tiny_config(MLP_RELU2, 1, 0, 0, 2, 2);
        c.n_layers = 3;
        model *m = make_model(&c, 2, 7);
        size_t P = model_num_params(m);
        rng_state rng;
        rng_seed(&rng, 31);
        int32_t tok[12], tg[12];
        random_ids(&rng, tok, 12, c.vocab_size);
        random_ids(&rng, tg, 12, c.vocab_size);
        span_log s = {m, malloc(sizeof(float) * P), P, 0, 0};
        for (size_t i = 0; i < P; i++)
            s.copy[i] = NAN;
        CHECK(model_grad_spans(m) == c.n_layers + 2);
        model_zero_grad(m);
        model_forward(m, tok, tg, 2, 6);
        model_backward(m);   /* a first micro-batch without the hook, as the trainer does */
        model_forward(m, tok + 1, tg + 1, 1, 6);
        model_set_grad_ready(m, log_span, &s);
        model_backward(m);
        model_set_grad_ready(m, NULL, NULL);
        CHECK_MSG(s.calls == c.n_layers + 2 && s.bad_order == 0 && s.next_end == 0,
                  "variant %d: %d spans, %d out of order, last at %zu", variant, s.calls, s.bad_order, s.next_end);
        CHECK_MSG(memcmp(s.copy, model_grads(m), sizeof(float) * P) == 0,
                  "variant %d: a span changed after it was handed over (or was never handed over)", variant);
        /* no hook: nothing is called */
        int before = s.calls;
        model_backward(m);
        CHECK(s.calls == before);
        free(s.copy);
        model_free(m);
    }
}

/* The backward of a short forward on two threads (model_backward_lanes.c:
 * the chain of input gradients and the weight gradients as two lanes, the
 * attention units and the head's rows and weight gradient shared) has the
 * serial backward's bits: each configuration, fp32 and bf16 products, each
 * way the forward may leave the head (a training forward's staged
 * gradients; an evaluation's logits for every row, for the rows it read,
 * or none under a soft-cap), one sequence of two and both. */
static void test_backward_lanes_bits(void)
{
    struct {
        mlp_kind mlp;
        int tied, qk;
        float cap;
        int H, Hkv;
    } cfgs[] = {{MLP_SWIGLU, 1, 1, 0, 2, 2}, {MLP_RELU2, 0, 0, 0, 2, 2}, {MLP_SWIGLU, 0, 1, 0, 4, 1},
                {MLP_RELU2, 1, 0, 5.0f, 4, 2}};
    enum { T = 40 };
    if (!model_bf16_available())
        TEST_SKIP("the two lanes with bf16 products: no AVX-512 BF16 on this CPU");
    for (int k = 0; k < (int)(sizeof cfgs / sizeof cfgs[0]); k++)
        for (int bf16 = 0; bf16 <= model_bf16_available(); bf16++) {
            model_config c = tiny_config(cfgs[k].mlp, cfgs[k].tied, cfgs[k].qk, cfgs[k].cap, cfgs[k].H, cfgs[k].Hkv);
            c.context = T;
            c.d_model = 16;
            c.bf16_products = bf16;
            model *m = make_model(&c, 2, 40 + k);
            size_t P = model_num_params(m);
            rng_state rng;
            rng_seed(&rng, 50 + k);
            int32_t tok[2 * T], tg[2 * T];
            random_ids(&rng, tok, 2 * T, c.vocab_size);
            random_ids(&rng, tg, 2 * T, c.vocab_size);
            const int32_t from[2] = {7, 21};
            float *g1 = malloc(sizeof(float) * P), *l1 = malloc(sizeof(float) * 2 * T);
            for (int mode = 0; mode < 3; mode++)   /* training forward; evaluation; evaluation from `from` */
                for (int rows = 1; rows <= 2; rows++) {
                    int bad_g = 0, bad_l = 0;
                    for (int threads = 1; threads <= 2; threads++) {
                        omp_set_num_threads(threads);
                        model_set_training(m, mode == 0);
                        if (mode == 0)
                            model_forward(m, tok, tg, 2, T);
                        else
                            model_forward_eval(m, tok, tg, 2, T, 1.0f, mode == 2 ? from : NULL);
                        model_zero_grad(m);
                        model_backward_rows(m, rows);
                        if (threads == 1) {
                            memcpy(g1, model_grads(m), sizeof(float) * P);
                            memcpy(l1, model_token_losses(m), sizeof(float) * 2 * T);
                        } else {
                            bad_g = memcmp(g1, model_grads(m), sizeof(float) * P) != 0;
                            bad_l = memcmp(l1, model_token_losses(m), sizeof(float) * rows * T) != 0;
                        }
                    }
                    CHECK_MSG(!bad_g && !bad_l, "config %d, bf16 %d, mode %d, rows %d: %s differ on two threads", k,
                              bf16, mode, rows, bad_g ? "gradients" : "losses");
                }
            CHECK_MSG(m->lane_buf != NULL, "config %d: the two-lane backward never ran", k);
            model_set_training(m, 1);
            free(g1);
            free(l1);
            model_free(m);
        }
    omp_set_num_threads(2);
}

int main(void)
{
    omp_set_num_threads(2);
    RUN(test_config_validate);
    RUN(test_layout);
    RUN(test_init);
    RUN(test_grad_relu2_tied);
    RUN(test_grad_swiglu_untied_qknorm_softcap);
    RUN(test_grad_relu2_untied_qknorm);
    RUN(test_grad_swiglu_tied_softcap);
    RUN(test_accumulation);
    RUN(test_grad_spans);
    RUN(test_determinism);
    RUN(test_backward_lanes_bits);
    RUN(test_zero_params_uniform);
    RUN(test_bad_inputs);
    RUN(test_flops);
    return test_summary("test_model");
}
