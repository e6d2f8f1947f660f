/* test_attention.c - causal GQA attention: the tiled kernel against the plain
 * float reference and the double reference (forward, log-sum-exp), the
 * single-head kernel with a KV offset (decode shape), the backward against the
 * float reference and against central finite differences of the double
 * reference, and thread-count independence; each on both kernel paths (AVX2
 * and TEMPO_KERNELS=portable). And the tile operations of attention_kernel.h
 * against plain loops. Shapes: see shapes[] below.
 * Tolerances: 1e-5 absolute against the float reference (values are O(1));
 * FD |got - want| <= 1e-5 + 1e-3 |want|; tile products 1e-6 x (k + 1); exp relative 3e-7. */
#include "test.h"
#include "ref_ops.h"

#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_kernel.h"
#include "kernels/cpu/kernel_path.h"

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

/* T = 1, primes, more than one query tile (32) and key tile (64), head dims
 * from 2 to 64 (whole, partial and masked vectors), one above the tiled
 * kernels' limit (256: the row kernels), GQA groups of 1, 2, 3 and 4. */
static const att_shape shapes[] = {
    {1, 1, 1, 1, 2},   {2, 5, 4, 2, 6},  {1, 37, 3, 1, 8},  {2, 70, 6, 2, 16},
    {1, 130, 2, 2, 4}, {3, 17, 4, 4, 10}, {1, 197, 2, 1, 64}, {1, 33, 1, 1, 24},
    {1, 11, 2, 1, 260},
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

/* The tile product against a plain loop: shapes around the register tile
 * (6 x 16) and the vector width, A read by rows and transposed, overwrite and
 * accumulate, strided C. */
static void test_tile_mm(const att_kernels *kern, const char *name)
{
    rng_state rng;
    rng_seed(&rng, 15);
    int dims[] = {1, 2, 5, 6, 7, 8, 9, 13, 16, 17, 23, 32, 37, 64};
    int nd = (int)(sizeof dims / sizeof dims[0]);
    for (int t = 0; t < 60; t++) {
        int m = dims[rng_below(&rng, nd)], n = dims[rng_below(&rng, nd)];
        int k = dims[rng_below(&rng, nd)], trans = t & 1, acc = (t >> 1) & 1;
        long lda = (trans ? m : k) + 3, ldb = n + 5, ldc = n + 2;
        float *a = malloc(sizeof(float) * (size_t)lda * 64), *b = malloc(sizeof(float) * (size_t)ldb * k);
        float *c = malloc(sizeof(float) * (size_t)ldc * m), *want = malloc(sizeof(float) * (size_t)ldc * m);
        fill_uniform(&rng, a, (size_t)lda * 64, -1, 1);
        fill_uniform(&rng, b, (size_t)ldb * k, -1, 1);
        fill_uniform(&rng, c, (size_t)ldc * m, -1, 1);
        memcpy(want, c, sizeof(float) * (size_t)ldc * m);
        long a_rs = trans ? 1 : lda, a_cs = trans ? lda : 1;
        double worst = 0; /* error / (k + 1): terms are at most 1 in size */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s2 = acc ? c[i * ldc + j] : 0;
                for (int p = 0; p < k; p++)
                    s2 += (double)a[i * a_rs + p * a_cs] * b[p * ldb + j];
                want[i * ldc + j] = (float)s2;
            }
        kern->mm(c, ldc, a, a_rs, a_cs, b, ldb, m, n, k, acc);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < ldc; j++) {
                double e = fabs(c[i * ldc + j] - want[i * ldc + j]);
                if (j >= n) /* padding columns untouched */
                    e = c[i * ldc + j] == want[i * ldc + j] ? 0 : 1;
                worst = fmax(worst, e / (double)(k + 1));
            }
        CHECK_MSG(worst < 1e-6, "%s: m=%d n=%d k=%d trans=%d acc=%d err %g", name, m, n, k,
                  trans, acc, worst);
        free(a); free(b); free(c); free(want);
    }
}

/* exp_cols on one row with mx = 0 is exp itself: accuracy over the softmax
 * range, an exact zero for -inf (masked scores), next to nothing for deep
 * underflow, and the column sums. */
static void test_tile_exp(const att_kernels *kern, const char *name)
{
    enum { N = 4003 };
    float *x = malloc(sizeof(float) * N), *zero = calloc(N, sizeof(float));
    float *sum = calloc(N, sizeof(float));
    for (int i = 0; i < N; i++)
        x[i] = -87.0f + 87.5f * (float)i / (N - 1); /* [-87, 0.5] */
    x[0] = -INFINITY;
    x[1] = -100.0f;
    float *y = malloc(sizeof(float) * N);
    memcpy(y, x, sizeof(float) * N);
    kern->exp_cols(y, N, 1, N, zero, sum);
    CHECK(y[0] == 0 && y[1] >= 0 && y[1] < 1e-37f);
    double worst = 0;
    for (int i = 2; i < N; i++) {
        double want = exp((double)x[i]);
        worst = fmax(worst, fabs(y[i] - want) / want);
        CHECK(sum[i] == y[i]);
    }
    CHECK_MSG(worst < 3e-7, "%s: exp relative error %g", name, worst);
    free(x); free(zero); free(sum); free(y);
}

static void test_tile_ops(void)
{
    test_tile_mm(&att_kernels_portable, "portable");
    test_tile_exp(&att_kernels_portable, "portable");
    if (kernel_path_avx2()) {
        test_tile_mm(&att_kernels_avx2, "avx2");
        test_tile_exp(&att_kernels_avx2, "avx2");
    } else {
        TEST_SKIP("tile ops: no AVX2 on this CPU, its tile product not run");
    }
    if (kernel_path_select_now() == CPU_KERNELS_AVX512) {
        test_tile_mm(&att_kernels_avx512, "avx512");
        test_tile_exp(&att_kernels_avx512, "avx512");
    } else {
        TEST_SKIP("tile ops: no AVX-512 on this CPU, its tile product not run");
    }
}

/* The AVX-512 table's tile product gives the AVX2 one's bits (each element
 * the same fused sum over k in order), on shapes that use each of its zmm
 * tiles and every remainder, and both cut the causal blocks alike (mr). */
static void test_avx512_same_bits(void)
{
    CHECK(att_kernels_avx512.mr == att_kernels_avx2.mr);
    if (kernel_path_select_now() != CPU_KERNELS_AVX512) {
        TEST_SKIP("AVX-512 tile product against AVX2: no AVX-512 on this CPU");
        return;
    }
    rng_state rng;
    rng_seed(&rng, 21);
    /* rows: whole tiles of 6 and 12, every kind of ragged end; columns:
     * blocks of 32 and 16, a masked end, fewer than 16 in all */
    int ms[] = {12, 24, 13, 30, 64, 5, 6, 1, 11}, ns[] = {16, 32, 17, 64, 40, 8, 1, 63, 48};
    int ks[] = {1, 9, 32, 64, 100};
    int bad = 0;
    for (int t = 0; t < 162; t++) {
        int m = ms[t % 9], n = ns[(t / 9) % 9], k = ks[t % 5], trans = t & 1, acc = (t >> 2) & 1;
        long lda = (trans ? m : k) + 3, ldb = n + 5, ldc = n + 2;
        size_t na = (size_t)lda * (size_t)(trans ? k : m), nb = (size_t)ldb * k, nc = (size_t)ldc * m;
        float *a = malloc(sizeof(float) * na), *b = malloc(sizeof(float) * nb);
        float *c2 = malloc(sizeof(float) * nc), *c5 = malloc(sizeof(float) * nc);
        fill_uniform(&rng, a, na, -1, 1);
        fill_uniform(&rng, b, nb, -1, 1);
        fill_uniform(&rng, c2, nc, -1, 1);
        memcpy(c5, c2, sizeof(float) * nc);
        long a_rs = trans ? 1 : lda, a_cs = trans ? lda : 1;
        att_kernels_avx2.mm(c2, ldc, a, a_rs, a_cs, b, ldb, m, n, k, acc);
        att_kernels_avx512.mm(c5, ldc, a, a_rs, a_cs, b, ldb, m, n, k, acc);
        if (memcmp(c2, c5, sizeof(float) * nc) != 0 && bad++ < 3)
            fprintf(stderr, "  m=%d n=%d k=%d trans=%d acc=%d: AVX-512 differs from AVX2\n", m, n, k,
                    trans, acc);
        free(a); free(b); free(c2); free(c5);
    }
    CHECK_MSG(bad == 0, "%d tile products differ between AVX-512 and AVX2", bad);
    /* the softmax passes: query counts around 8 and 16 lanes, masked (-inf) scores */
    int nqs[] = {1, 7, 8, 9, 15, 16, 17, 32}, nks[] = {1, 5, 64};
    int bad_sm = 0;
    for (size_t a = 0; a < sizeof nqs / sizeof nqs[0]; a++)
        for (size_t b = 0; b < sizeof nks / sizeof nks[0]; b++) {
            int nq = nqs[a], nk = nks[b], ld = 32;
            size_t n = (size_t)nk * ld;
            float *st = malloc(sizeof(float) * n), *dp = malloc(sizeof(float) * n);
            float *s2 = malloc(sizeof(float) * n), *s5 = malloc(sizeof(float) * n);
            float *d2 = malloc(sizeof(float) * n), *d5 = malloc(sizeof(float) * n);
            float mx[32], lse[32], delta[32], sum2[32], sum5[32];
            fill_uniform(&rng, st, n, -12, 2);
            fill_uniform(&rng, dp, n, -1, 1);
            for (size_t i = 0; i < n; i += 7)
                st[i] = -INFINITY;
            fill_uniform(&rng, mx, 32, 0, 2);
            fill_uniform(&rng, lse, 32, 1, 3);
            fill_uniform(&rng, delta, 32, -0.5f, 0.5f);
            fill_uniform(&rng, sum2, 32, 0, 1);
            memcpy(sum5, sum2, sizeof sum2);
            memcpy(s2, st, sizeof(float) * n);
            memcpy(s5, st, sizeof(float) * n);
            att_kernels_avx2.exp_cols(s2, ld, nk, nq, mx, sum2);
            att_kernels_avx512.exp_cols(s5, ld, nk, nq, mx, sum5);
            int ok = memcmp(s2, s5, sizeof(float) * n) == 0 && memcmp(sum2, sum5, sizeof sum2) == 0;
            memcpy(s2, st, sizeof(float) * n);
            memcpy(s5, st, sizeof(float) * n);
            memcpy(d2, dp, sizeof(float) * n);
            memcpy(d5, dp, sizeof(float) * n);
            att_kernels_avx2.softmax_grad(s2, d2, ld, nk, nq, lse, delta, 0.13f);
            att_kernels_avx512.softmax_grad(s5, d5, ld, nk, nq, lse, delta, 0.13f);
            ok = ok && memcmp(s2, s5, sizeof(float) * n) == 0 && memcmp(d2, d5, sizeof(float) * n) == 0;
            if (!ok && bad_sm++ < 3)
                fprintf(stderr, "  nq=%d nk=%d: AVX-512 softmax pass differs from AVX2\n", nq, nk);
            free(st); free(dp); free(s2); free(s5); free(d2); free(d5);
        }
    CHECK_MSG(bad_sm == 0, "%d softmax passes differ between AVX-512 and AVX2", bad_sm);
}

int main(void)
{
    omp_set_num_threads(2);
    kernel_env env;
    kernel_env_save(&env);
    for (int portable = 1; portable >= 0; portable--) {
        kernel_env_set(portable);
        RUN(test_forward);
        RUN(test_head_offset);
        RUN(test_backward);
        RUN(test_threads);
    }
    kernel_env_restore(&env);
    RUN(test_tile_ops);
    RUN(test_avx512_same_bits);
    return test_summary("test_attention");
}
