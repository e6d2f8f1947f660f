/* test_range_coder.c - the range coder (eval/range_coder.h) against a plain
 * reference: an encoder that keeps the whole code as one big number (bytes,
 * every carry rippled through them by schoolbook addition) must write the
 * same bytes as the coder with its held-back carry bytes; every stream
 * decodes back to its symbols, from exactly the bytes written; its length
 * stays within a bound of the entropy, on random distributions from flat to
 * extreme; and the quantisation keeps every symbol codeable. */
#include "test.h"
#include "core/rng.h"
#include "eval/range_coder.h"

#define MAX_V 4097

/* The plain reference: the code as a big-endian number of 7 + shifts bytes
 * (the coder's 56-bit low, a byte appended at every renormalisation). */
typedef struct {
    uint8_t *b;
    size_t n, cap;
    uint64_t range;
} ref_encoder;

static void ref_append(ref_encoder *r, uint8_t v)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->b = realloc(r->b, r->cap);
    }
    r->b[r->n++] = v;
}

static void ref_init(ref_encoder *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < 7; i++)
        ref_append(r, 0);
    r->range = ((uint64_t)1 << 56) - 1;
}

static void ref_encode(ref_encoder *r, uint32_t cum, uint32_t freq)
{
    uint64_t step = r->range >> RANGE_TOTAL_BITS;
    uint64_t add = step * cum;   /* added at the number's last byte, carries ripple left */
    unsigned carry = 0;
    for (size_t i = r->n; i-- > 0 && (add || carry);) {
        unsigned s = r->b[i] + (unsigned)(add & 0xFF) + carry;
        r->b[i] = (uint8_t)s;
        carry = s >> 8;
        add >>= 8;
    }
    r->range = step * freq;
    while (r->range < ((uint64_t)1 << 48)) {
        r->range <<= 8;
        ref_append(r, 0);
    }
}

static uint64_t seed_counter = 1;

/* A random distribution over V of one of several shapes; p sums to 1. */
static void random_dist(rng_state *g, int V, int shape, double *p)
{
    double sum = 0;
    for (int v = 0; v < V; v++) {
        double u = rng_uniform(g);
        switch (shape) {
        case 0: p[v] = 1; break;                                   /* flat */
        case 1: p[v] = u; break;                                   /* mild */
        case 2: p[v] = pow(u, 30); break;                          /* peaked */
        case 3: p[v] = exp(-60 * u); break;                        /* a few carry everything, tails to e^-60 */
        case 4: p[v] = v == 0 ? 1 : 1e-300 * u; break;             /* one symbol takes it all */
        default: p[v] = u < 0.5 ? 0 : u; break;                    /* exact zeros */
        }
        sum += p[v];
    }
    if (sum == 0) {   /* exact zeros everywhere: one symbol gets it all */
        p[rng_below(g, (uint64_t)V)] = 1;
        sum = 1;
    }
    for (int v = 0; v < V; v++)
        p[v] /= sum;
}

/* Draw a symbol from q (frequencies), or uniformly when `adversarial`
 * (the true symbol is often one the model thought almost impossible). */
static int draw(rng_state *g, const uint32_t *q, int V, int adversarial)
{
    if (adversarial)
        return (int)rng_below(g, (uint64_t)V);
    uint64_t t = rng_below(g, RANGE_TOTAL), c = 0;
    for (int v = 0; v < V; v++)
        if (t < (c += q[v]))
            return v;
    return V - 1;
}

/* One stream of n symbols over V with distributions of `shape`: coded, checked
 * against the reference, decoded, and its length bounded. */
static void one_stream(int V, int n, int shape, int adversarial)
{
    rng_state g;
    rng_seed(&g, seed_counter++);
    double *p = malloc(sizeof(double) * (size_t)V * (size_t)n);
    uint32_t *q = malloc(sizeof(uint32_t) * (size_t)V * (size_t)n);
    int *sym = malloc(sizeof(int) * (size_t)n);
    double ideal_p = 0, ideal_q = 0;
    range_encoder e;
    range_encoder_init(&e);
    ref_encoder ref;
    ref_init(&ref);
    for (int i = 0; i < n; i++) {
        double *pi = p + (size_t)i * V;
        uint32_t *qi = q + (size_t)i * V;
        random_dist(&g, V, shape, pi);
        if (range_quantize(pi, V, qi)) {
            CHECK_MSG(0, "V %d shape %d: not quantised", V, shape);
            n = i;   /* code what was drawn so far */
            break;
        }
        sym[i] = draw(&g, qi, V, adversarial);
        uint32_t cum = 0;
        for (int v = 0; v < sym[i]; v++)
            cum += qi[v];
        range_encode_symbol(&e, qi, V, sym[i]);
        ref_encode(&ref, cum, qi[sym[i]]);
        ideal_q -= log2((double)qi[sym[i]] / RANGE_TOTAL);
        ideal_p -= pi[sym[i]] > 0 ? log2(pi[sym[i]]) : -INFINITY;
    }
    CHECK(range_encoder_finish(&e, NULL) == 0);
    /* the same bytes as the big-number reference */
    CHECK_MSG(e.n == ref.n && (e.n == 0 || memcmp(e.out, ref.b, e.n) == 0), "V %d shape %d: %zu vs %zu bytes", V,
              shape, e.n, ref.n);
    /* length: the quantised model's bits, plus the 7-byte tail and 2^-18 of the width per symbol */
    double bits = 8.0 * (double)e.n;
    CHECK_MSG(bits <= ideal_q + 56 + 1 + 6e-6 * n, "V %d shape %d: %g bits for %g ideal", V, shape, bits, ideal_q);
    /* quantisation: every symbol keeps at least (1 - V / 2^30) of its probability */
    CHECK_MSG(ideal_q <= ideal_p + n * 1.5 * V / (double)RANGE_TOTAL + 1e-9 * n, "V %d shape %d: %g vs %g", V, shape,
              ideal_q, ideal_p);
    /* round trip, reading exactly the bytes written */
    range_decoder d;
    range_decoder_init(&d, e.out, e.n);
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        int s = -1;
        ok = range_decode_symbol(&d, q + (size_t)i * V, V, &s) == 0 && s == sym[i];
    }
    CHECK_MSG(ok, "V %d shape %d: round trip failed", V, shape);
    CHECK(range_decoder_exact(&d));
    range_encoder_free(&e);
    free(ref.b);
    free(p);
    free(q);
    free(sym);
}

static void test_round_trip_random(void)
{
    static const int Vs[] = {1, 2, 3, 257, MAX_V};
    for (size_t k = 0; k < sizeof Vs / sizeof Vs[0]; k++)
        for (int shape = 0; shape < 6; shape++) {
            int n = Vs[k] > 300 ? 400 : 3000;
            one_stream(Vs[k], n, shape, 0);
            one_stream(Vs[k], n / 4, shape, 1);
        }
}

/* Long runs of near-certain symbols make the held-back 0xFF runs and carries
 * that the reference checks: a symbol at the very top of the table (its cum
 * near the total) over and over, then one at the bottom. */
static void test_carries(void)
{
    range_encoder e;
    range_encoder_init(&e);
    ref_encoder ref;
    ref_init(&ref);
    rng_state g;
    rng_seed(&g, 77);
    enum { N = 20000 };
    uint32_t cum[N], freq[N];
    for (int i = 0; i < N; i++) {
        uint32_t f = (uint32_t)(1 + rng_below(&g, i % 3 ? RANGE_TOTAL - 1 : 16));
        uint32_t c = i % 5 == 4 ? 0 : RANGE_TOTAL - f;
        cum[i] = c;
        freq[i] = f;
        range_encode(&e, c, f);
        ref_encode(&ref, c, f);
    }
    CHECK(range_encoder_finish(&e, NULL) == 0);
    CHECK(e.n == ref.n && memcmp(e.out, ref.b, e.n) == 0);
    size_t ff = 0;
    for (size_t i = 0; i + 1 < e.n; i++)
        ff += e.out[i] == 0xFF && e.out[i + 1] == 0xFF;
    CHECK(ff > 0);   /* the test did make runs of 0xFF */
    range_decoder d;
    range_decoder_init(&d, e.out, e.n);
    int ok = 1;
    for (int i = 0; i < N && ok; i++) {
        uint32_t t = range_decode_target(&d);
        ok = t >= cum[i] && t < cum[i] + freq[i];
        range_decode_consume(&d, cum[i], freq[i]);
    }
    CHECK(ok);
    CHECK(range_decoder_exact(&d));
    range_encoder_free(&e);
    free(ref.b);
}

/* A stream cut short or lengthened is noticed; no symbols at all is 7 bytes. */
static void test_truncated(void)
{
    rng_state g;
    rng_seed(&g, 5);
    enum { V = 300, N = 500 };
    static double p[V];
    static uint32_t q[V];
    random_dist(&g, V, 1, p);
    CHECK(range_quantize(p, V, q) == 0);
    int sym[N];
    range_encoder e;
    range_encoder_init(&e);
    for (int i = 0; i < N; i++) {
        sym[i] = draw(&g, q, V, 0);
        range_encode_symbol(&e, q, V, sym[i]);
    }
    CHECK(range_encoder_finish(&e, NULL) == 0);
    for (size_t cut = 0; cut <= 2; cut++) {
        range_decoder d;
        range_decoder_init(&d, e.out, e.n - cut);
        int s;
        for (int i = 0; i < N; i++)
            if (range_decode_symbol(&d, q, V, &s))
                break;
        CHECK(range_decoder_exact(&d) == (cut == 0));
    }
    uint8_t *longer = malloc(e.n + 1);
    memcpy(longer, e.out, e.n);
    longer[e.n] = 0;
    range_decoder d;
    range_decoder_init(&d, longer, e.n + 1);
    int s, ok = 1;
    for (int i = 0; i < N; i++)
        ok &= range_decode_symbol(&d, q, V, &s) == 0 && s == sym[i];
    CHECK(ok && !range_decoder_exact(&d));
    /* a changed byte anywhere, the last ones included (their bits no longer change the symbols), is noticed */
    for (size_t at = 0; at < e.n; at++)
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(longer, e.out, e.n);
            longer[at] ^= (uint8_t)(1 << bit);
            range_decoder_init(&d, longer, e.n);
            ok = 1;
            for (int i = 0; i < N && ok; i++)
                ok = range_decode_symbol(&d, q, V, &s) == 0 && s == sym[i];
            CHECK_MSG(!ok || !range_decoder_exact(&d), "byte %zu bit %d changed unnoticed", at, bit);
        }
    free(longer);
    range_encoder_free(&e);
    range_encoder_init(&e);
    CHECK(range_encoder_finish(&e, NULL) == 0 && e.n == 7);
    range_decoder_init(&d, e.out, e.n);
    CHECK(range_decoder_exact(&d));
    range_encoder_free(&e);
}

static void test_quantize(void)
{
    static double p[MAX_V];
    static uint32_t q[MAX_V], q2[MAX_V];
    rng_state g;
    rng_seed(&g, 3);
    for (int shape = 0; shape < 6; shape++) {
        random_dist(&g, MAX_V, shape, p);
        CHECK(range_quantize(p, MAX_V, q) == 0);
        uint64_t sum = 0;
        int min_ok = 1, close = 1;
        for (int v = 0; v < MAX_V; v++) {
            sum += q[v];
            min_ok &= q[v] >= 1;
            double want = p[v] * (RANGE_TOTAL - MAX_V);
            close &= q[v] >= want && q[v] <= want + 1 + MAX_V;   /* the remainder goes to one symbol */
        }
        CHECK(sum == RANGE_TOTAL && min_ok && close);
        /* scaling p changes nothing but the last rounding: still a table */
        for (int v = 0; v < MAX_V; v++)
            p[v] *= 3.0;
        CHECK(range_quantize(p, MAX_V, q2) == 0);
        sum = 0;
        for (int v = 0; v < MAX_V; v++)
            sum += q2[v];
        CHECK(sum == RANGE_TOTAL);
    }
    double one[1] = {0.25};
    CHECK(range_quantize(one, 1, q) == 0 && q[0] == RANGE_TOTAL);
    double bad[3] = {0.5, NAN, 0.5};
    CHECK(range_quantize(bad, 3, q) == -1);
    bad[1] = -1e-30;
    CHECK(range_quantize(bad, 3, q) == -1);
    bad[1] = INFINITY;
    CHECK(range_quantize(bad, 3, q) == -1);
    double zero[2] = {0, 0};
    CHECK(range_quantize(zero, 2, q) == -1);
    CHECK(range_quantize(zero, 0, q) == -1);
}

int main(void)
{
    RUN(test_quantize);
    RUN(test_round_trip_random);
    RUN(test_carries);
    RUN(test_truncated);
    return test_summary("test_range_coder");
}
