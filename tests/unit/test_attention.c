/* test_attention.c - causal GQA attention: the tiled kernel against the plain
 * float reference and the double reference (forward, log-sum-exp), the
 * single-head kernel with a KV offset (decode shape), the backward against the
 * float reference and against central finite differences of the double
 * reference, and thread-count independence. Shapes cover T = 1, primes, more
 * than one query tile (16) and key tile (64), and GQA groups of 1, 2, 3 and 4.
 * FD tolerance: |got - want| <= 1e-5 + 1e-3 |want|. */
#include "test.h"
#include "ref_ops.h"

#include "kernels/cpu/attention.h"

#include <omp.h>

typedef struct {
    int B, T, H, Hkv, D;
} att_shape;

typedef struct {
    att_shape s;
    double *q, *k, *v, *r, *o;
} att_ctx;

static double att_objective(void *p)
{
    att_ctx *c = p;
    refd_attention(c->o, NULL, c->q, c->k, c->v, c->s.B, c->s.T, c->s.H, c->s.Hkv, c->s.D);
    size_t n = (size_t)c->s.B * c->s.T * c->s.H * c->s.D;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += c->r[i] * c->o[i];
    return sum;
}

typedef struct {
    size_t nq, nk, nl;
    float *q, *k, *v, *o, *lse, *dout, *dq, *dk, *dv;
} att_bufs;

static att_bufs att_alloc(att_shape s, rng_state *rng)
{
    att_bufs b;
    b.nq = (size_t)s.B * s.T * s.H * s.D;
    b.nk = (size_t)s.B * s.T * s.Hkv * s.D;
    b.nl = (size_t)s.B * s.H * s.T;
    b.q = malloc(sizeof(float) * b.nq);
    b.k = malloc(sizeof(float) * b.nk);
    b.v = malloc(sizeof(float) * b.nk);
    b.o = malloc(sizeof(float) * b.nq);
    b.lse = malloc(sizeof(float) * b.nl);
    b.dout = malloc(sizeof(float) * b.nq);
    b.dq = malloc(sizeof(float) * b.nq);
    b.dk = malloc(sizeof(float) * b.nk);
    b.dv = malloc(sizeof(float) * b.nk);
    /* q, k in [-1.5, 1.5]: scores spread enough for peaked softmax rows */
    fill_uniform(rng, b.q, b.nq, -1.5f, 1.5f);
    fill_uniform(rng, b.k, b.nk, -1.5f, 1.5f);
    fill_uniform(rng, b.v, b.nk, -1, 1);
    fill_uniform(rng, b.dout, b.nq, -1, 1);
    return b;
}

static void att_free(att_bufs *b)
{
    free(b->q); free(b->k); free(b->v); free(b->o); free(b->lse);
    free(b->dout); free(b->dq); free(b->dk); free(b->dv);
}

static const att_shape shapes[] = {
    {1, 1, 1, 1, 2},  {2, 5, 4, 2, 6},  {1, 37, 3, 1, 8},
    {2, 70, 6, 2, 16}, {1, 130, 2, 2, 4}, {3, 17, 4, 4, 10},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static void test_forward(void)
{
    rng_state rng;
    rng_seed(&rng, 11);
    for (size_t i = 0; i < N_SHAPES; i++) {
        att_shape s = shapes[i];
        att_bufs b = att_alloc(s, &rng);
        float *o2 = malloc(sizeof(float) * b.nq), *l2 = malloc(sizeof(float) * b.nl);
        attention_forward(b.o, b.lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
        attention_forward_ref(o2, l2, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
        CHECK_MSG(max_abs_diff(b.o, o2, b.nq) < 1e-5, "shape %zu", i);
        CHECK_MSG(max_abs_diff(b.lse, l2, b.nl) < 1e-5, "shape %zu", i);
        double *qd = malloc(sizeof(double) * b.nq), *kd = malloc(sizeof(double) * b.nk);
        double *vd = malloc(sizeof(double) * b.nk), *od = malloc(sizeof(double) * b.nq);
        double *ld = malloc(sizeof(double) * b.nl);
        to_double(qd, b.q, b.nq);
        to_double(kd, b.k, b.nk);
        to_double(vd, b.v, b.nk);
        refd_attention(od, ld, qd, kd, vd, s.B, s.T, s.H, s.Hkv, s.D);
        double eo = 0, el = 0;
        for (size_t j = 0; j < b.nq; j++)
            eo = fmax(eo, fabs(b.o[j] - od[j]));
        for (size_t j = 0; j < b.nl; j++)
            el = fmax(el, fabs(b.lse[j] - ld[j]));
        CHECK_MSG(eo < 1e-5 && el < 1e-5, "shape %zu: o err %g lse err %g", i, eo, el);
        /* row 0 attends only key 0: o = v[0] of its kv head */
        for (int d = 0; d < s.D; d++)
            CHECK(fabs(b.o[d] - b.v[d]) < 1e-6);
        free(qd); free(kd); free(vd); free(od); free(ld); free(o2); free(l2);
        att_free(&b);
    }
}

/* Single-head kernels with Tq < Tk (the last Tq query rows of a Tk-long
 * sequence) must equal those rows of the full forward, and their backward the
 * full backward restricted to those rows' gradients. */
static void test_head_offset(void)
{
    rng_state rng;
    rng_seed(&rng, 12);
    att_shape s = {1, 83, 2, 1, 8};
    att_bufs b = att_alloc(s, &rng);
    attention_forward(b.o, b.lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
    int qs = s.H * s.D, ks = s.Hkv * s.D;
    float scale = 1.0f / sqrtf((float)s.D);
    int tqs[] = {1, 5, 20, 83};
    for (int t = 0; t < 4; t++) {
        int Tq = tqs[t], r0 = s.T - Tq;
        /* q and o share q_stride: the output buffer is strided like q */
        float *o = malloc(sizeof(float) * (size_t)Tq * qs), lse[83];
        for (int h = 0; h < s.H; h++) {
            attention_head_forward(o + h * s.D, lse, b.q + (size_t)r0 * qs + h * s.D, b.k, b.v,
                                   qs, ks, Tq, s.T, s.D, scale);
            double e = 0;
            for (int i = 0; i < Tq; i++) {
                for (int d = 0; d < s.D; d++)
                    e = fmax(e, fabs(o[(size_t)i * qs + h * s.D + d] -
                                     b.o[(size_t)(r0 + i) * qs + h * s.D + d]));
                e = fmax(e, fabs(lse[i] - b.lse[(size_t)h * s.T + r0 + i]));
            }
            CHECK_MSG(e < 1e-6, "Tq=%d h=%d err %g", Tq, h, e);
        }
        free(o);
    }
    /* backward with an offset == full backward with dout zero on the first r0 rows */
    int Tq = 20, r0 = s.T - Tq;
    for (size_t i = 0; i < (size_t)r0 * qs; i++)
        b.dout[i] = 0;
    float *dq2 = malloc(sizeof(float) * b.nq), *dk2 = malloc(sizeof(float) * b.nk);
    float *dv2 = malloc(sizeof(float) * b.nk);
    attention_backward_ref(dq2, dk2, dv2, b.dout, b.q, b.k, b.v, b.o, b.lse, s.B, s.T, s.H, s.Hkv,
                           s.D);
    memset(b.dq, 0, sizeof(float) * b.nq);
    memset(b.dk, 0, sizeof(float) * b.nk);
    memset(b.dv, 0, sizeof(float) * b.nk);
    for (int h = 0; h < s.H; h++) /* both heads share kv head 0 and accumulate into it */
        attention_head_backward(b.dq + (size_t)r0 * qs + h * s.D, b.dk, b.dv,
                                b.dout + (size_t)r0 * qs + h * s.D, b.q + (size_t)r0 * qs + h * s.D,
                                b.k, b.v, b.o + (size_t)r0 * qs + h * s.D,
                                b.lse + (size_t)h * s.T + r0, qs, ks, Tq, s.T, s.D, scale);
    CHECK(max_abs_diff(b.dq, dq2, b.nq) < 1e-5);
    CHECK(max_abs_diff(b.dk, dk2, b.nk) < 1e-5);
    CHECK(max_abs_diff(b.dv, dv2, b.nk) < 1e-5);
    free(dq2); free(dk2); free(dv2);
    att_free(&b);
}

static void test_backward(void)
{
    rng_state rng;
    rng_seed(&rng, 13);
    for (size_t i = 0; i < N_SHAPES; i++) {
        att_shape s = shapes[i];
        att_bufs b = att_alloc(s, &rng);
        attention_forward(b.o, b.lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
        /* garbage in the outputs: the backward overwrites them */
        fill_uniform(&rng, b.dq, b.nq, 5, 6);
        fill_uniform(&rng, b.dk, b.nk, 5, 6);
        fill_uniform(&rng, b.dv, b.nk, 5, 6);
        attention_backward(b.dq, b.dk, b.dv, b.dout, b.q, b.k, b.v, b.o, b.lse, s.B, s.T, s.H,
                           s.Hkv, s.D);
        float *dq2 = malloc(sizeof(float) * b.nq), *dk2 = malloc(sizeof(float) * b.nk);
        float *dv2 = malloc(sizeof(float) * b.nk);
        attention_backward_ref(dq2, dk2, dv2, b.dout, b.q, b.k, b.v, b.o, b.lse, s.B, s.T, s.H,
                               s.Hkv, s.D);
        CHECK_MSG(max_abs_diff(b.dq, dq2, b.nq) < 1e-5, "shape %zu", i);
        CHECK_MSG(max_abs_diff(b.dk, dk2, b.nk) < 1e-5, "shape %zu", i);
        CHECK_MSG(max_abs_diff(b.dv, dv2, b.nk) < 1e-5, "shape %zu", i);
        if (b.nq <= 2400) { /* finite differences through the double reference */
            att_ctx c = {s, malloc(sizeof(double) * b.nq), malloc(sizeof(double) * b.nk),
                         malloc(sizeof(double) * b.nk), malloc(sizeof(double) * b.nq),
                         malloc(sizeof(double) * b.nq)};
            to_double(c.q, b.q, b.nq);
            to_double(c.k, b.k, b.nk);
            to_double(c.v, b.v, b.nk);
            to_double(c.r, b.dout, b.nq);
            double *g = malloc(sizeof(double) * b.nq);
            fd_grad(g, c.q, b.nq, att_objective, &c, 1e-5);
            CHECK_MSG(grad_mismatches("attention dq", b.dq, g, b.nq, 1e-5, 1e-3) == 0, "shape %zu", i);
            fd_grad(g, c.k, b.nk, att_objective, &c, 1e-5);
            CHECK_MSG(grad_mismatches("attention dk", b.dk, g, b.nk, 1e-5, 1e-3) == 0, "shape %zu", i);
            fd_grad(g, c.v, b.nk, att_objective, &c, 1e-5);
            CHECK_MSG(grad_mismatches("attention dv", b.dv, g, b.nk, 1e-5, 1e-3) == 0, "shape %zu", i);
            free(g); free(c.q); free(c.k); free(c.v); free(c.r); free(c.o);
        }
        free(dq2); free(dk2); free(dv2);
        att_free(&b);
    }
}

/* Every (b, h) pair is computed the same way on any thread: bit-identical. */
static void test_threads(void)
{
    rng_state rng;
    rng_seed(&rng, 14);
    att_shape s = {3, 45, 6, 3, 8};
    att_bufs b = att_alloc(s, &rng);
    float *o1 = malloc(sizeof(float) * b.nq), *dq1 = malloc(sizeof(float) * b.nq);
    float *dk1 = malloc(sizeof(float) * b.nk), *dv1 = malloc(sizeof(float) * b.nk);
    omp_set_num_threads(1);
    attention_forward(o1, b.lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
    attention_backward(dq1, dk1, dv1, b.dout, b.q, b.k, b.v, o1, b.lse, s.B, s.T, s.H, s.Hkv, s.D);
    omp_set_num_threads(2);
    attention_forward(b.o, b.lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
    attention_backward(b.dq, b.dk, b.dv, b.dout, b.q, b.k, b.v, b.o, b.lse, s.B, s.T, s.H, s.Hkv,
                       s.D);
    CHECK(memcmp(o1, b.o, sizeof(float) * b.nq) == 0);
    CHECK(memcmp(dq1, b.dq, sizeof(float) * b.nq) == 0);
    CHECK(memcmp(dk1, b.dk, sizeof(float) * b.nk) == 0);
    CHECK(memcmp(dv1, b.dv, sizeof(float) * b.nk) == 0);
    free(o1); free(dq1); free(dk1); free(dv1);
    att_free(&b);
}

int main(void)
{
    omp_set_num_threads(2);
    RUN(test_forward);
    RUN(test_head_offset);
    RUN(test_backward);
    RUN(test_threads);
    return test_summary("test_attention");
}
