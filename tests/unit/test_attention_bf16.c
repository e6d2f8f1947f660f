/* test_attention_bf16.c - attention's bf16 mode (attention_forward_bf16,
 * attention_backward_bf16) and its operations (attention_kernel.h).
 *
 * The operations: the two conversions against a plain rounding (to nearest
 * even; the data has no denormals or NaNs) and the documented word layout,
 * zero padding past an odd end and nothing written past a row's words; the
 * word product against the rounded values' product summed in double, within
 * the fp32 sums' bound 2 (2 kp + 2) u (sum |a| |b| + |C0|), u = 2^-24, over
 * shapes around the register tiles, A read by rows and transposed, overwrite
 * and accumulate.
 *
 * The whole mode: forward (o, lse) and backward (dq, dk, dv) against the
 * double and float references within bf16's tolerance: every operand rounded
 * to 8 bits of mantissa (a relative 2^-9) moves a score by up to ~0.4 % of
 * sum |q_d k_d| / sqrt(D); the bounds below are 4x the largest error seen over
 * these shapes (o and lse 0.005 absolute, gradients 0.010 of their largest
 * magnitude), and a mode that lost a term, paired the wrong halves or skipped
 * a visible key is off by far more (checked: the fp32 result differs, and a
 * tile's worth of missing terms moves o by O(1)). Outputs are poisoned before
 * each call. The same bits on 1 and 2 threads; exactly the fp32 functions'
 * bits where attention_bf16_runs says the mode does not run (odd or too large
 * head dims, TEMPO_KERNELS=portable, a CPU without AVX-512 BF16: then only
 * that is checked, as a skip). */
#include "test.h"
#include "ref_ops.h"

#include <omp.h>
#include <stdint.h>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_kernel.h"
#include "kernels/cpu/kernel_path.h"

/* x rounded to bf16 (nearest, ties to even) as its 16 bits, for finite normal x. */
static uint32_t bf16_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}

static uint32_t word(float lo, float hi)
{
    return bf16_bits(lo) | bf16_bits(hi) << 16;
}

static double half(uint32_t w, int upper)
{
    uint32_t u = (upper ? w >> 16 : w & 0xffffu) << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#define SENTINEL 0xdeadbeefu

static void test_convert(void)
{
    if (!kernel_path_bf16_now()) {
        TEST_SKIP("no AVX-512 BF16 on this CPU: the conversions not run");
        return;
    }
    rng_state rng;
    rng_seed(&rng, 31);
    int bad = 0;
    for (int rows = 1; rows <= 7; rows++)
        for (int n = 1; n <= 70; n += (n < 35 ? 1 : 7)) {
            int ld = n + 3, wpr = (n + 1) / 2, dld = 40;   /* dst rows: 40 words, past any row's words */
            float *src = malloc(sizeof(float) * (size_t)rows * ld);
            fill_uniform(&rng, src, (size_t)rows * ld, -2, 2);
            uint32_t *d = malloc(sizeof(uint32_t) * (size_t)(rows + 1) * 80);
            /* rows paired along them */
            for (int i = 0; i < (rows + 1) * 80; i++)
                d[i] = SENTINEL;
            att_bf16_rows(d, 2 * dld, src, ld, rows, n);
            for (int r = 0; r < rows; r++)
                for (int q = 0; q < 2 * dld; q++) {
                    const float *s = src + (size_t)r * ld;
                    uint32_t want = q < wpr ? word(s[2 * q], 2 * q + 1 < n ? s[2 * q + 1] : 0) : SENTINEL;
                    if (d[(size_t)r * 2 * dld + q] != want && bad++ < 3)
                        fprintf(stderr, "  rows: rows %d n %d: row %d word %d %08x, want %08x\n", rows, n, r, q,
                                d[(size_t)r * 2 * dld + q], want);
                }
            /* two rows paired value by value */
            for (int i = 0; i < (rows + 1) * 80; i++)
                d[i] = SENTINEL;
            att_bf16_pairs(d, 80, src, ld, rows, n);
            for (int p = 0; p < (rows + 1) / 2 + 1; p++)
                for (int j = 0; j < 80; j++) {
                    uint32_t want = SENTINEL;
                    if (2 * p < rows && j < n)
                        want = word(src[(size_t)2 * p * ld + j], 2 * p + 1 < rows ? src[(size_t)(2 * p + 1) * ld + j] : 0);
                    if (d[(size_t)p * 80 + j] != want && bad++ < 3)
                        fprintf(stderr, "  pairs: rows %d n %d: pair %d col %d %08x, want %08x\n", rows, n, p, j,
                                d[(size_t)p * 80 + j], want);
                }
            free(src);
            free(d);
        }
    /* rows paired along them, times mul, stored transposed (a query tile's q and dout): up to two
     * blocks of 16 rows, whole and partial */
    const int col_rows[] = {1, 5, 15, 16, 17, 31, 32};
    const float muls[] = {1.0f, 0.125f, 0.3f};
    for (int ri = 0; ri < (int)(sizeof col_rows / sizeof col_rows[0]); ri++)
        for (int n = 1; n <= 70; n += (n < 35 ? 1 : 7)) {
            int rows = col_rows[ri], ld = n + 5, wpr = (n + 1) / 2, dld = 40;
            float mul = muls[(ri + n) % 3];
            float *src = malloc(sizeof(float) * (size_t)rows * ld);
            fill_uniform(&rng, src, (size_t)rows * ld, -2, 2);
            uint32_t *d = malloc(sizeof(uint32_t) * (size_t)(wpr + 1) * dld);
            for (int i = 0; i < (wpr + 1) * dld; i++)
                d[i] = SENTINEL;
            att_bf16_cols(d, dld, src, ld, rows, n, mul);
            for (int q = 0; q < wpr + 1; q++)
                for (int r = 0; r < dld; r++) {
                    const float *sr = src + (size_t)r * ld;
                    uint32_t want = SENTINEL;
                    if (q < wpr && r < rows)
                        want = word(mul * sr[2 * q], 2 * q + 1 < n ? mul * sr[2 * q + 1] : 0);
                    if (d[(size_t)q * dld + r] != want && bad++ < 3)
                        fprintf(stderr, "  cols: rows %d n %d mul %g: word %d row %d %08x, want %08x\n", rows, n,
                                (double)mul, q, r, d[(size_t)q * dld + r], want);
                }
            free(src);
            free(d);
        }
    CHECK_MSG(bad == 0, "%d converted words wrong", bad);
}

static void test_mm(void)
{
    if (!kernel_path_bf16_now()) {
        TEST_SKIP("no AVX-512 BF16 on this CPU: the word product not run");
        return;
    }
    rng_state rng;
    rng_seed(&rng, 32);
    const int ms[] = {1, 5, 6, 7, 12, 13, 25}, ns[] = {1, 9, 16, 17, 32, 33, 64, 70}, kps[] = {1, 2, 7, 32, 40};
    int bad = 0;
    for (size_t im = 0; im < sizeof ms / sizeof ms[0]; im++)
        for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++)
            for (size_t ik = 0; ik < sizeof kps / sizeof kps[0]; ik++)
                for (int trans = 0; trans < 2; trans++)
                    for (int acc = 0; acc < 2; acc++) {
                        int m = ms[im], n = ns[in], kp = kps[ik], ldb = n + 5, ldc = n + 2;
                        long a_rs = trans ? 1 : kp + 1, a_cs = trans ? m + 3 : 1;
                        size_t na = (size_t)(trans ? kp * a_cs : m * a_rs);
                        uint32_t *a = malloc(sizeof(uint32_t) * na), *b = malloc(sizeof(uint32_t) * (size_t)kp * ldb);
                        float *c = malloc(sizeof(float) * (size_t)m * ldc), *c0 = malloc(sizeof(float) * (size_t)m * ldc);
                        for (size_t i = 0; i < na; i++)
                            a[i] = word((float)(2 * rng_uniform(&rng) - 1), (float)(2 * rng_uniform(&rng) - 1));
                        for (size_t i = 0; i < (size_t)kp * ldb; i++)
                            b[i] = word((float)(2 * rng_uniform(&rng) - 1), (float)(2 * rng_uniform(&rng) - 1));
                        fill_uniform(&rng, c0, (size_t)m * ldc, -1, 1);
                        memcpy(c, c0, sizeof(float) * (size_t)m * ldc);
                        if (!acc)
                            for (int i = 0; i < m; i++)
                                for (int j = 0; j < n; j++)
                                    c[(size_t)i * ldc + j] = NAN;   /* overwritten, never read */
                        att_bf16_mm(c, ldc, a, a_rs, a_cs, b, ldb, m, n, kp, acc);
                        for (int i = 0; i < m; i++)
                            for (int j = 0; j < ldc; j++) {
                                double got = c[(size_t)i * ldc + j];
                                if (j >= n) {   /* past n: untouched */
                                    if (got != c0[(size_t)i * ldc + j] && bad++ < 3)
                                        fprintf(stderr, "  mm wrote column %d >= n %d\n", j, n);
                                    continue;
                                }
                                double s = 0, mag = acc ? fabs(c0[(size_t)i * ldc + j]) : 0;
                                for (int p = 0; p < kp; p++) {
                                    uint32_t wa = a[i * a_rs + p * a_cs], wb = b[(size_t)p * ldb + j];
                                    for (int h = 0; h < 2; h++) {
                                        s += half(wa, h) * half(wb, h);
                                        mag += fabs(half(wa, h) * half(wb, h));
                                    }
                                }
                                double want = (acc ? c0[(size_t)i * ldc + j] : 0) + s;
                                double bound = 2.0 * (2 * kp + 2) * ldexp(1, -24) * mag + 1e-30;
                                if (!(fabs(got - want) <= bound) && bad++ < 3)
                                    fprintf(stderr, "  mm m %d n %d kp %d trans %d acc %d: (%d,%d) %.9g want %.9g\n",
                                            m, n, kp, trans, acc, i, j, got, want);
                            }
                        free(a); free(b); free(c); free(c0);
                    }
    CHECK_MSG(bad == 0, "%d products wrong", bad);
}

typedef struct {
    int B, T, H, Hkv, D;
} shape;

typedef struct {
    size_t nq, nk, nl;
    float *q, *k, *v, *dout, *o, *lse, *dq, *dk, *dv;
} bufs;

static double bf(double x)
{
    return half(bf16_bits((float)x), 0);
}

/* The mode's rounding in double: q scaled, then q, k, v, dout rounded to
 * bf16; per query the keys in tiles of 64 (attention.c's ATT_BK) with a
 * running max, each tile's probabilities exp(s - running max) rounded before
 * they weigh v (the sum l of the unrounded ones); the backward's
 * probabilities exp(s - lse) (the mode's own lse) and score gradients
 * p (dp - delta) scale rounded before their products. Sums exact, so the
 * mode differs from it by its fp32 sums and by a rounding the fp32
 * exponential tips the other way now and then (a relative 2^-8 of one
 * term). */
static void ref_rounded(const shape *s, const bufs *b, double *o, double *dq, double *dk, double *dv)
{
    const double scale = 1.0 / sqrt((double)s->D);
    const float fscale = 1.0f / sqrtf((float)s->D);
    int D = s->D, T = s->T, grp = s->H / s->Hkv;
    double *sc = malloc(sizeof(double) * (size_t)T);
    memset(dq, 0, sizeof(double) * b->nq);
    memset(dk, 0, sizeof(double) * b->nk);
    memset(dv, 0, sizeof(double) * b->nk);
    for (int bb = 0; bb < s->B; bb++)
        for (int h = 0; h < s->H; h++)
            for (int i = 0; i < T; i++) {
                size_t qi = (((size_t)bb * T + i) * s->H + h) * D;
                const float *q = b->q + qi, *dout = b->dout + qi;
                double *oi = o + qi;
                for (int j = 0; j <= i; j++) {
                    const float *k = b->k + (((size_t)bb * T + j) * s->Hkv + h / grp) * D;
                    double d = 0;
                    for (int c = 0; c < D; c++)
                        d += bf(fscale * q[c]) * bf(k[c]);
                    sc[j] = d;
                }
                /* forward */
                double m = -INFINITY, l = 0;
                for (int c = 0; c < D; c++)
                    oi[c] = 0;
                for (int j0 = 0; j0 <= i; j0 += 64) {
                    int j1 = j0 + 64 < i + 1 ? j0 + 64 : i + 1;
                    double mn = m;
                    for (int j = j0; j < j1; j++)
                        mn = fmax(mn, sc[j]);
                    double corr = exp(m - mn);
                    l *= corr;
                    for (int c = 0; c < D; c++)
                        oi[c] *= corr;
                    for (int j = j0; j < j1; j++) {
                        const float *v = b->v + (((size_t)bb * T + j) * s->Hkv + h / grp) * D;
                        double p = exp(sc[j] - mn);
                        l += p;
                        for (int c = 0; c < D; c++)
                            oi[c] += bf(p) * bf(v[c]);
                    }
                    m = mn;
                }
                for (int c = 0; c < D; c++)
                    oi[c] /= l;
                /* backward, from the mode's o and lse */
                double lse = b->lse[((size_t)bb * s->H + h) * T + i], delta = 0;
                for (int c = 0; c < D; c++)
                    delta += (double)dout[c] * b->o[qi + c];
                for (int j = 0; j <= i; j++) {
                    size_t kj = (((size_t)bb * T + j) * s->Hkv + h / grp) * D;
                    double dp = 0;
                    for (int c = 0; c < D; c++)
                        dp += bf(b->v[kj + c]) * bf(dout[c]);
                    double p = exp(sc[j] - lse), ds = p * (dp - delta) * scale;
                    for (int c = 0; c < D; c++) {
                        dv[kj + c] += bf(p) * bf(dout[c]);
                        dk[kj + c] += bf(ds) * bf(q[c]);
                        dq[qi + c] += bf(ds) * bf(b->k[kj + c]);
                    }
                }
            }
    free(sc);
}

/* max |got - want| / max |want| (want's magnitude at least 1e-3) */
static double rel_err(const float *got, const double *want, size_t n)
{
    double e = 0, mag = 1e-3;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs(got[i] - want[i]));
        mag = fmax(mag, fabs(want[i]));
    }
    return e / mag;
}

/* T from 3 (the row kernels' limit is 2) across query tiles (32) and key
 * tiles (64), odd T, head dims 2 to 128, GQA groups 1 to 4; then three the
 * mode leaves to fp32 (an odd head dim, one above 128, T = 2). */
static const shape shapes[] = {
    {2, 5, 4, 2, 6},  {1, 37, 3, 1, 8},    {2, 70, 6, 2, 16}, {1, 130, 2, 2, 4},  {3, 17, 4, 4, 10},
    {1, 197, 2, 1, 64}, {1, 33, 1, 1, 24}, {2, 256, 2, 2, 64}, {1, 100, 2, 1, 128}, {1, 3, 1, 1, 2},
    {1, 40, 2, 1, 7}, {1, 20, 1, 1, 130}, {2, 2, 2, 1, 8},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])


static bufs alloc_bufs(shape s, rng_state *rng)
{
    bufs b;
    b.nq = (size_t)s.B * s.T * s.H * s.D;
    b.nk = (size_t)s.B * s.T * s.Hkv * s.D;
    b.nl = (size_t)s.B * s.H * s.T;
    float **all[] = {&b.q, &b.dout, &b.o, &b.dq, &b.k, &b.v, &b.dk, &b.dv, &b.lse};
    size_t sizes[] = {b.nq, b.nq, b.nq, b.nq, b.nk, b.nk, b.nk, b.nk, b.nl};
    for (int i = 0; i < 9; i++)
        *all[i] = malloc(sizeof(float) * sizes[i]);
    fill_uniform(rng, b.q, b.nq, -1.5f, 1.5f);
    fill_uniform(rng, b.k, b.nk, -1.5f, 1.5f);
    fill_uniform(rng, b.v, b.nk, -1, 1);
    fill_uniform(rng, b.dout, b.nq, -1, 1);
    return b;
}

static void free_bufs(bufs *b)
{
    free(b->q); free(b->k); free(b->v); free(b->dout); free(b->o); free(b->lse);
    free(b->dq); free(b->dk); free(b->dv);
}

static double max_abs(const float *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
}

static void poison(bufs *b)
{
    for (size_t i = 0; i < b->nq; i++)
        b->o[i] = b->dq[i] = NAN;
    for (size_t i = 0; i < b->nk; i++)
        b->dk[i] = b->dv[i] = NAN;
    for (size_t i = 0; i < b->nl; i++)
        b->lse[i] = NAN;
}

/* One shape in the mode: *runs whether the bf16 loops ran; the forward and
 * backward checked against the references (when they ran) or against the
 * fp32 functions' bits (when not). */
static void check_shape(shape s, rng_state *rng, int *runs)
{
    bufs b = alloc_bufs(s, rng);
    *runs = attention_bf16_runs(s.T, s.D);
    poison(&b);
    attention_forward_bf16(b.o, b.lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
    attention_backward_bf16(b.dq, b.dk, b.dv, b.dout, b.q, b.k, b.v, b.o, b.lse, s.B, s.T, s.H, s.Hkv, s.D);
    float *o = malloc(sizeof(float) * b.nq), *lse = malloc(sizeof(float) * b.nl);
    float *dq = malloc(sizeof(float) * b.nq), *dk = malloc(sizeof(float) * b.nk), *dv = malloc(sizeof(float) * b.nk);
    if (*runs) {
        /* the forward against the double reference */
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
        CHECK_MSG(eo < 0.02 && el < 0.02, "%dx%dx%dx%dx%d: o err %g, lse err %g", s.B, s.T, s.H, s.Hkv, s.D,
                  eo, el);
        /* the backward against the float reference on the same forward's o and lse */
        attention_backward_ref(dq, dk, dv, b.dout, b.q, b.k, b.v, b.o, b.lse, s.B, s.T, s.H, s.Hkv, s.D);
        double gq = max_abs_diff(b.dq, dq, b.nq) / fmax(max_abs(dq, b.nq), 1e-3);
        double gk = max_abs_diff(b.dk, dk, b.nk) / fmax(max_abs(dk, b.nk), 1e-3);
        double gv = max_abs_diff(b.dv, dv, b.nk) / fmax(max_abs(dv, b.nk), 1e-3);
        if (getenv("ATT_BF16_SHOW"))
            printf("  %dx%dx%dx%dx%d: o %.4g lse %.4g dq %.4g dk %.4g dv %.4g\n", s.B, s.T, s.H, s.Hkv, s.D, eo, el, gq, gk, gv);
        CHECK_MSG(gq < 0.04 && gk < 0.04 && gv < 0.04, "%dx%dx%dx%dx%d: relative errors dq %g dk %g dv %g",
                  s.B, s.T, s.H, s.Hkv, s.D, gq, gk, gv);
        /* against the rounded reference: every term where it belongs */
        double *ro = malloc(sizeof(double) * b.nq), *rq = malloc(sizeof(double) * b.nq);
        double *rk = malloc(sizeof(double) * b.nk), *rv = malloc(sizeof(double) * b.nk);
        ref_rounded(&s, &b, ro, rq, rk, rv);
        double ro_e = rel_err(b.o, ro, b.nq), rq_e = rel_err(b.dq, rq, b.nq);
        double rk_e = rel_err(b.dk, rk, b.nk), rv_e = rel_err(b.dv, rv, b.nk);
        if (getenv("ATT_BF16_SHOW"))
            printf("  rounded ref: o %.3g dq %.3g dk %.3g dv %.3g\n", ro_e, rq_e, rk_e, rv_e);
        CHECK_MSG(ro_e < 1e-3 && rq_e < 1e-3 && rk_e < 1e-3 && rv_e < 1e-3,
                  "%dx%dx%dx%dx%d: against the rounded reference o %g dq %g dk %g dv %g", s.B, s.T, s.H, s.Hkv, s.D,
                  ro_e, rq_e, rk_e, rv_e);
        free(ro); free(rq); free(rk); free(rv);
        /* the mode ran: not the fp32 result */
        attention_forward(o, lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
        CHECK_MSG(memcmp(o, b.o, sizeof(float) * b.nq) != 0, "%dx%dx%dx%dx%d: bf16 gave fp32's bits", s.B, s.T,
                  s.H, s.Hkv, s.D);
        free(qd); free(kd); free(vd); free(od); free(ld);
    } else {
        attention_forward(o, lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
        attention_backward(dq, dk, dv, b.dout, b.q, b.k, b.v, o, lse, s.B, s.T, s.H, s.Hkv, s.D);
        CHECK_MSG(memcmp(o, b.o, sizeof(float) * b.nq) == 0 && memcmp(lse, b.lse, sizeof(float) * b.nl) == 0 &&
                  memcmp(dq, b.dq, sizeof(float) * b.nq) == 0 && memcmp(dk, b.dk, sizeof(float) * b.nk) == 0 &&
                  memcmp(dv, b.dv, sizeof(float) * b.nk) == 0,
                  "%dx%dx%dx%dx%d: not fp32's bits where bf16 does not run", s.B, s.T, s.H, s.Hkv, s.D);
    }
    free(o); free(lse); free(dq); free(dk); free(dv);
    free_bufs(&b);
}

static void test_mode(void)
{
    rng_state rng;
    rng_seed(&rng, 33);
    int ran = 0;
    for (size_t i = 0; i < N_SHAPES; i++) {
        int runs;
        check_shape(shapes[i], &rng, &runs);
        ran += runs;
        if (shapes[i].D % 2 || shapes[i].D > 128 || shapes[i].T <= 2)
            CHECK_MSG(!runs, "T %d, head dim %d: the bf16 loops ran", shapes[i].T, shapes[i].D);
    }
    if (!kernel_path_bf16_now())
        TEST_SKIP("no AVX-512 BF16 on this CPU: attention's bf16 mode checked to fall back to fp32 only");
    else
        CHECK(ran == (int)N_SHAPES - 3);
}

/* TEMPO_KERNELS=portable: no bf16 loops, fp32's bits. */
static void test_portable(void)
{
    kernel_env env;
    kernel_env_save(&env);
    kernel_env_set(1);
    rng_state rng;
    rng_seed(&rng, 34);
    int runs;
    check_shape(shapes[1], &rng, &runs);
    CHECK(!runs);
    kernel_env_restore(&env);
}

/* Every (b, h) unit computed the same way on any thread: the same bits. */
static void test_threads(void)
{
    rng_state rng;
    rng_seed(&rng, 35);
    shape s = {3, 77, 6, 3, 16};
    bufs b = alloc_bufs(s, &rng);
    float *o = malloc(sizeof(float) * b.nq), *dq = malloc(sizeof(float) * b.nq);
    float *dk = malloc(sizeof(float) * b.nk), *dv = malloc(sizeof(float) * b.nk);
    omp_set_num_threads(1);
    attention_forward_bf16(o, b.lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
    attention_backward_bf16(dq, dk, dv, b.dout, b.q, b.k, b.v, o, b.lse, s.B, s.T, s.H, s.Hkv, s.D);
    omp_set_num_threads(2);
    attention_forward_bf16(b.o, b.lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D);
    attention_backward_bf16(b.dq, b.dk, b.dv, b.dout, b.q, b.k, b.v, b.o, b.lse, s.B, s.T, s.H, s.Hkv, s.D);
    CHECK(memcmp(o, b.o, sizeof(float) * b.nq) == 0);
    CHECK(memcmp(dq, b.dq, sizeof(float) * b.nq) == 0);
    CHECK(memcmp(dk, b.dk, sizeof(float) * b.nk) == 0);
    CHECK(memcmp(dv, b.dv, sizeof(float) * b.nk) == 0);
    free(o); free(dq); free(dk); free(dv);
    free_bufs(&b);
}

int main(void)
{
    omp_set_num_threads(2);
    RUN(test_convert);
    RUN(test_mm);
    RUN(test_mode);
    RUN(test_portable);
    RUN(test_threads);
    return test_summary("test_attention_bf16");
}
