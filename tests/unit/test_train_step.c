/* test_train_step.c - one step's gradient on thread replicas (train_step.h):
 * a replica reads its base model's parameters, the replicas' gradient is
 * exactly the rows-weighted sum of each part's own gradient, and it equals
 * one model's gradient over the whole micro-batch up to the order of the
 * sums, with micro-batches, uneven parts and a mixture prior. */
#include "test.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "model/model.h"
#include "train/train_step.h"

enum { V = 37, T = 16 };

static model_config config(void)
{
    model_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = V;
    c.context = T;
    c.d_model = 32;
    c.n_layers = 2;
    c.n_heads = 2;
    c.n_kv_heads = 2;
    c.d_ff = 88;
    c.mlp = MLP_SWIGLU;
    c.qk_norm = 1;
    c.tied_head = 1;
    c.rope_theta = 10000;
    c.norm_eps = 1e-5f;
    c.init_std = 0.3f;
    return c;
}

static model *new_model(int max_batch)
{
    model_config c = config();
    model *m = NULL;
    tempo_error err;
    CHECK_MSG(model_create(&m, &c, max_batch, &err) == 0, "%s", err.msg);
    if (m)
        model_init(m, 7);
    return m;
}

/* The batch source: rows of random tokens from one stream, and (when
 * prior) a mixture prior set on the step's model, as the trainer does. */
typedef struct {
    rng_state rng;
    model *m;
    float *prior;   /* [rows * T] or NULL */
} source;

static void next_batch(void *ctx, int rows, int t, int32_t *in, int32_t *tg)
{
    source *s = ctx;
    for (int i = 0; i < rows * t; i++) {
        in[i] = (int32_t)rng_below(&s->rng, V);
        tg[i] = (int32_t)rng_below(&s->rng, V);
    }
    if (s->prior) {
        for (int i = 0; i < rows * t; i++)
            s->prior[i] = 0.5f * (float)rng_uniform(&s->rng) / V;
        model_set_mixture(s->m, s->prior, 0.5f);
    }
}

/* The largest |a - b| over n, relative to the largest |b|. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        mx = fmax(mx, fabs((double)b[i]));
    }
    return mx > 0 ? d / mx : d;
}

/* A replica computes with its base's parameters, as they are now. */
static void test_replica_reads_base_params(void)
{
    model *base = new_model(4), *rep = NULL;
    tempo_error err;
    CHECK(model_create_replica(&rep, base, 2, &err) == 0);
    if (!base || !rep) {
        model_free(rep);
        model_free(base);
        return;
    }
    CHECK(model_params(rep) == model_params(base));
    CHECK(model_grads(rep) != model_grads(base));
    CHECK(model_max_batch(rep) == 2);
    int32_t in[2 * T], tg[2 * T];
    rng_state r;
    rng_seed(&r, 1);
    for (int i = 0; i < 2 * T; i++) {
        in[i] = (int32_t)rng_below(&r, V);
        tg[i] = (int32_t)rng_below(&r, V);
    }
    for (int round = 0; round < 2; round++) {
        double lb = model_forward(base, in, tg, 2, T), lr = model_forward(rep, in, tg, 2, T);
        CHECK_MSG(lb == lr && isfinite(lb), "round %d: base %.9g, replica %.9g", round, lb, lr);
        float *p = model_params(base);   /* a step taken through the base */
        for (size_t i = 0; i < model_num_params(base); i++)
            p[i] *= 0.9f;
    }
    model_free(rep);   /* leaves the base's parameters alone (ASan would see a double free) */
    CHECK(isfinite(model_forward(base, in, tg, 2, T)));
    model_free(base);
}

/* One step's gradient with `threads` replicas against the plain path on one
 * thread (the same initial weights and batches): the gradient to 1e-5 of
 * its largest element, the loss to 1e-6. */
static void check_against_one_model(int threads, int micro, int k, int prior)
{
    int batch = micro * k;
    model *a = new_model(micro), *b = new_model(micro);
    float *pa = prior ? calloc((size_t)micro * T, sizeof(float)) : NULL;
    float *pb = prior ? calloc((size_t)micro * T, sizeof(float)) : NULL;
    int32_t *in = malloc(sizeof(int32_t) * (size_t)micro * T), *tg = malloc(sizeof(int32_t) * (size_t)micro * T);
    train_reduce r;
    tempo_error err;
    CHECK(train_reduce_init(&r, NULL, a, 0, NULL, NULL, &err) == 0);
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    CHECK(train_reduce_replicas(&r, a, threads, micro, &err) == 0);
    int want = threads < micro ? threads : micro;
    CHECK_MSG(r.n_rep == want, "threads %d, micro %d: %d replicas, %d expected", threads, micro, r.n_rep, want);
    source sa = {.m = a, .prior = pa}, sb = {.m = b, .prior = pb};
    rng_seed(&sa.rng, 11);
    rng_seed(&sb.rng, 11);
    double la = 0;
    CHECK(train_step_gradient_ranks(a, &r, batch, micro, T, next_batch, &sa, in, tg, NULL, &la, &err) == 0);
    omp_set_num_threads(1);
    double lb = train_step_gradient(b, batch, micro, T, next_batch, &sb, in, tg, NULL);
    omp_set_num_threads(saved);
    double dg = rel_diff(model_grads(a), model_grads(b), model_num_params(a));
    CHECK_MSG(dg < 1e-5 && fabs(la - lb) <= 1e-6 * fabs(lb),
              "threads %d, micro %d, k %d, prior %d: gradient off by %.3g, loss %.9g against %.9g", threads, micro,
              k, prior, dg, la, lb);
    train_reduce_free(&r);
    CHECK(r.n_rep == 0 && r.rep == NULL);
    free(in);
    free(tg);
    free(pa);
    free(pb);
    model_free(a);
    model_free(b);
}

static void test_replicas_equal_one_model(void)
{
    check_against_one_model(2, 4, 1, 0);
    check_against_one_model(2, 4, 2, 1);
    check_against_one_model(3, 5, 1, 1);   /* parts of 1, 2 and 2 rows */
    check_against_one_model(3, 2, 2, 0);   /* fewer rows than threads: 2 replicas */
}

/* With 2 replicas on a micro-batch of 4, bit for bit: 0.5 g(rows 0-1) +
 * 0.5 g(rows 2-3), each part's gradient from a model of its own on one
 * thread (a replica's kernels run alone on their thread, as these do). */
static void test_replicas_exact_sum(void)
{
    const int micro = 4;
    model *a = new_model(micro), *p0 = new_model(2), *p1 = new_model(2);
    int32_t in[4 * T], tg[4 * T];
    train_reduce r;
    tempo_error err;
    CHECK(train_reduce_init(&r, NULL, a, 0, NULL, NULL, &err) == 0);
    CHECK(train_reduce_replicas(&r, a, 2, micro, &err) == 0 && r.n_rep == 2);
    source s = {.m = a};
    rng_seed(&s.rng, 5);
    double loss = 0;
    CHECK(train_step_gradient_ranks(a, &r, micro, micro, T, next_batch, &s, in, tg, NULL, &loss, &err) == 0);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    model_zero_grad(p0);
    model_zero_grad(p1);
    double l0 = model_forward(p0, in, tg, 2, T);
    model_backward(p0);
    double l1 = model_forward(p1, in + 2 * T, tg + 2 * T, 2, T);
    model_backward(p1);
    omp_set_num_threads(saved);
    const float *g = model_grads(a), *g0 = model_grads(p0), *g1 = model_grads(p1);
    size_t bad = 0;
    for (size_t i = 0; i < model_num_params(a); i++)
        bad += g[i] != 0.5f * g0[i] + 0.5f * g1[i];
    CHECK_MSG(bad == 0, "%zu of %zu gradient elements differ from the parts' sum", bad, model_num_params(a));
    CHECK_MSG(loss == 0.5 * l0 + 0.5 * l1, "loss %.17g against %.17g", loss, 0.5 * l0 + 0.5 * l1);
    train_reduce_free(&r);
    model_free(a);
    model_free(p0);
    model_free(p1);
}

/* No replicas where they cannot help: one thread, or one row. */
static void test_no_replicas(void)
{
    model *a = new_model(4);
    train_reduce r;
    tempo_error err;
    CHECK(train_reduce_init(&r, NULL, a, 0, NULL, NULL, &err) == 0);
    CHECK(train_reduce_replicas(&r, a, 1, 4, &err) == 0 && r.n_rep == 0);
    CHECK(train_reduce_replicas(&r, a, 4, 1, &err) == 0 && r.n_rep == 0);
    train_reduce_free(&r);
    model_free(a);
}

/* bf16_products: the model's products and Muon's Newton-Schulz products run
 * in the GEMM's bf16 mode where the CPU has it, its replicas' too; in fp32
 * elsewhere, and then never a half-set optimizer. */
static void test_bf16_products(void)
{
    model_config c = config();
    c.bf16_products = 1;
    model *m = NULL, *r = NULL;
    tempo_error err;
    CHECK_MSG(model_create(&m, &c, 2, &err) == 0, "%s", err.msg);
    if (!m)
        return;
    CHECK(model_products_bf16(m) == model_bf16_available());
    CHECK(model_create_replica(&r, m, 2, &err) == 0 && r && model_products_bf16(r) == model_products_bf16(m));
    optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.use_muon = 1;
    oc.lr = oc.lr_muon = 0.01f;
    oc.beta1 = 0.9f;
    oc.beta2 = 0.95f;
    oc.eps = 1e-8f;
    oc.muon_momentum = 0.95f;
    oc.ns_steps = 5;
    optimizer o;
    CHECK(train_optimizer_create(&o, m, &oc, &err) == 0);
    for (int t = 0; t < o.n_workers; t++)
        CHECK(o.gemm[t].cfg.bf16 == model_products_bf16(m));
    optim_free(&o);
    model_free(r);
    model_free(m);
    c.bf16_products = 0;
    CHECK(model_create(&m, &c, 2, &err) == 0 && m && !model_products_bf16(m));
    model_free(m);
    if (!model_bf16_available())
        TEST_SKIP("no AVX-512 BF16 on this CPU: bf16 products checked to fall back to fp32 only");
}

int main(void)
{
    RUN(test_replica_reads_base_params);
    RUN(test_replicas_equal_one_model);
    RUN(test_replicas_exact_sum);
    RUN(test_no_replicas);
    RUN(test_bf16_products);
    return test_summary("test_train_step");
}
