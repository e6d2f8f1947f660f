/* test_compress.c - tempo compress (eval/compress.h, eval/predictor.h) on a
 * whole small hybrid model (compress_fixture.h): texts of every kind (empty,
 * one byte, separator lines canonical or not, bytes that are not UTF-8, a
 * text of many windows with the learning reader's steps) come back byte for
 * byte; the coded distributions give eval's bits (hybrid_bpb_evaluate on the
 * same tokens) to 1e-9, and the code is within 0.5 % of them plus its
 * 7-byte tail; a position's distribution does not depend on the tokens at
 * or after it; another model, a truncated, lengthened or altered file, a
 * header of another version or thread count are refused with one line
 * naming the file. */
#include "test.h"

#include <omp.h>

#include "compress_fixture.h"
#include "core/sha256.h"
#include "eval/predictor.h"
#include "eval/range_coder.h"

static int round_trip(compress_fixture *f, const uint8_t *text, size_t len, compress_result *r, uint8_t **packed,
                      size_t *packed_len)
{
    tempo_error err;
    uint8_t *back = NULL;
    size_t back_len = 0;
    compress_result d;
    if (compress_text(&f->cm, text, len, "t.txt", packed, packed_len, r, &err)) {
        fprintf(stderr, "  compress: %s\n", err.msg);
        return -1;
    }
    if (decompress_data(&f->cm, *packed, *packed_len, "t.txt.tpz", &back, &back_len, &d, &err)) {
        fprintf(stderr, "  decompress: %s\n", err.msg);
        return -1;
    }
    int same = back_len == len && (len == 0 || memcmp(back, text, len) == 0);
    free(back);
    return same ? 0 : -1;
}

typedef struct {
    const char *name;
    const char *text;
    size_t len;
    int as_documents, documents;
} text_case;

static void test_round_trips(void)
{
    compress_fixture f;
    tempo_error err;
    CHECK(compress_fixture_init(&f, 7, 1, &err) == 0);
    f.cm.eval_batch = 4;
#define TEXT(s) s, sizeof(s) - 1
    static const text_case cases[] = {
        {"empty", TEXT(""), 1, 0},
        {"one byte", TEXT("a"), 1, 1},
        {"a separator line alone", TEXT("\x1e\n"), 1, 0},
        {"0x1E at the end", TEXT("\x1e"), 0, 1},
        {"two separator lines", TEXT("\x1e\n\x1e\n"), 0, 1},
        {"three documents", TEXT("the cat.\n\x1e\nsat on\n\x1e\nthe mat"), 1, 3},
        {"three documents and a separator line", TEXT("the cat.\n\x1e\nsat on\n\x1e\nthe mat\n\x1e\n"), 1, 3},
        {"an empty document", TEXT("a\n\x1e\n\x1e\nb\n"), 0, 1},
        {"a separator line first", TEXT("\x1e\nthe cat"), 0, 1},
        {"0x1E inside a line", TEXT("the \x1e\n cat"), 1, 1},
        {"not UTF-8", TEXT("\xff\xfe\x00\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c\xbc\x00\x00\x1e"), 1, 1},
    };
#undef TEXT
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        compress_result r;
        uint8_t *packed = NULL;
        size_t n = 0;
        CHECK_MSG(round_trip(&f, (const uint8_t *)cases[k].text, cases[k].len, &r, &packed, &n) == 0, "%s",
                  cases[k].name);
        CHECK_MSG(r.as_documents == cases[k].as_documents && r.documents == (uint64_t)cases[k].documents,
                  "%s: read as documents %d (%llu of them)", cases[k].name, r.as_documents,
                  (unsigned long long)r.documents);
        free(packed);
    }
    /* every byte value, in a random order */
    rng_state g;
    rng_seed(&g, 11);
    uint8_t noise[600];
    for (size_t i = 0; i < sizeof noise; i++)
        noise[i] = (uint8_t)rng_below(&g, 256);
    compress_result r;
    uint8_t *packed = NULL;
    size_t n = 0;
    CHECK(round_trip(&f, noise, sizeof noise, &r, &packed, &n) == 0);
    free(packed);
    compress_fixture_free(&f);
}

/* A text of many windows: the code is eval's bits (the coded distributions'
 * -log2 p sum to them), with and without the hybrid parts. */
static void check_matches_eval(int with_parts)
{
    compress_fixture f;
    tempo_error err;
    CHECK(compress_fixture_init(&f, 3, with_parts, &err) == 0);
    f.cm.eval_batch = 4;
    strbuf doc = {0}, text = {0};
    compress_fixture_text(42, 700, &doc);
    strbuf_puts(&doc, "\n");
    strbuf_append(&text, doc.data, doc.len);
    strbuf_puts(&text, "\x1e\n");   /* a second document: a copy of the first, the match model's and cache's day */
    strbuf_append(&text, doc.data, doc.len);
    strbuf_free(&doc);
    compress_result r;
    uint8_t *packed = NULL;
    size_t n = 0;
    CHECK(round_trip(&f, (const uint8_t *)text.data, text.len, &r, &packed, &n) == 0);
    CHECK(r.as_documents && r.documents == 2 && r.tokens > 20 * 40);
    double code_bits = 8.0 * (double)(n - COMPRESS_HEADER_BYTES);
    /* the same up to float rounding: the transformer's rows come from the KV cache here, from whole windows there */
    CHECK_MSG(fabs(r.ideal_bits - r.eval_bits) <= 1e-6 * r.eval_bits, "parts %d: coded %.9f bits, eval %.9f",
              with_parts, r.ideal_bits, r.eval_bits);
    CHECK_MSG(code_bits <= r.ideal_bits * 1.0001 + 56 + 8 && code_bits >= r.ideal_bits,
              "parts %d: %g code bits for %g", with_parts, code_bits, r.ideal_bits);
    CHECK(code_bits <= 1.005 * r.eval_bits + 64);
    strbuf_free(&text);
    free(packed);
    compress_fixture_free(&f);
}

static void test_matches_eval(void)
{
    check_matches_eval(1);
    check_matches_eval(0);
}

/* Two streams with the same first half: every distribution of the first half
 * is the same, bit for bit, whatever follows (and the learning reader's
 * steps inside the first half are the same too). */
static void test_causal(void)
{
    compress_fixture f;
    tempo_error err;
    CHECK(compress_fixture_init(&f, 5, 1, &err) == 0);
    enum { N = 400, HALF = 233 };
    int32_t a[N], b[N];
    rng_state g;
    rng_seed(&g, 9);
    const int V = model_get_config(f.m)->vocab_size;
    for (int i = 0; i < N; i++) {
        a[i] = i == 0 ? tok_sep_id(f.tok) : (int32_t)rng_below(&g, (uint64_t)V - 1);
        b[i] = i < HALF ? a[i] : (int32_t)rng_below(&g, (uint64_t)V - 1);
    }
    a[N - 1] = b[N - 1] = tok_sep_id(f.tok);
    predictor *pa, *pb;
    CHECK(predictor_create(&pa, f.m, &f.h, 1, N, f.cm.stride, &err) == 0);
    static double da[N][300], db[300];
    CHECK(V <= 300);
    for (int i = 1; i < N; i++) {
        CHECK(predictor_dist(pa, a, (size_t)i, da[i], &err) == 0);
        CHECK(predictor_learn(pa, a, (size_t)i, &err) == 0);
    }
    predictor_free(pa);
    CHECK(predictor_create(&pb, f.m, &f.h, 1, N, f.cm.stride, &err) == 0);
    int same = 1;
    for (int i = 1; i < HALF; i++) {
        int32_t saved = b[i];
        b[i] = (int32_t)((saved + 1) % V);   /* the token itself is not read either */
        CHECK(predictor_dist(pb, b, (size_t)i, db, &err) == 0);
        b[i] = saved;
        same &= memcmp(db, da[i], sizeof(double) * (size_t)V) == 0;
        CHECK(predictor_learn(pb, b, (size_t)i, &err) == 0);
    }
    CHECK(same);
    predictor_free(pb);
    compress_fixture_free(&f);
}

/* The header's own check over bytes 0..112, after a test changed one. */
static void reseal(uint8_t *packed)
{
    uint8_t d[32];
    sha256(packed, 112, d);
    memcpy(packed + 112, d, 8);
}

static int refused(compress_fixture *f, const uint8_t *data, size_t len, const char *want)
{
    tempo_error err;
    tempo_error_clear(&err);
    uint8_t *back = NULL;
    size_t back_len;
    compress_result r;
    int rc = decompress_data(&f->cm, data, len, "x.tpz", &back, &back_len, &r, &err);
    free(back);
    if (rc == 0) {
        fprintf(stderr, "  accepted, wanted /%s/\n", want);
        return 0;
    }
    int ok = !strncmp(err.msg, "x.tpz: ", 7) && strstr(err.msg, want) && !strchr(err.msg, '\n');
    if (!ok)
        fprintf(stderr, "  error '%s', wanted /%s/\n", err.msg, want);
    return ok;
}

static void test_refusals(void)
{
    compress_fixture f, other;
    tempo_error err;
    CHECK(compress_fixture_init(&f, 7, 1, &err) == 0);
    CHECK(compress_fixture_init(&other, 8, 1, &err) == 0);
    strbuf text = {0};
    compress_fixture_text(4, 60, &text);
    compress_result r;
    uint8_t *packed;
    size_t n;
    CHECK(compress_text(&f.cm, (const uint8_t *)text.data, text.len, "t", &packed, &n, &r, &err) == 0);
    CHECK(refused(&other, packed, n, "compressed with another model"));
    CHECK(refused(&f, (const uint8_t *)text.data, text.len, "not a tempo compressed file"));
    for (size_t cut = 0; cut < n; cut += cut < 8 || cut + 12 > n ? 1 : 9)
        CHECK_MSG(refused(&f, packed, cut, cut < 8 ? "not a tempo" : cut < COMPRESS_HEADER_BYTES ? "truncated" : "truncated"),
                  "cut at %zu of %zu", cut, n);
    uint8_t *copy = malloc(n + 1);
    for (size_t at = 0; at < n; at += at < 8 || at + 12 > n ? 1 : 5) {   /* the ends byte by byte */
        memcpy(copy, packed, n);
        copy[at] ^= 0x10;
        CHECK_MSG(refused(&f, copy, n, at < 8 ? "not a tempo" : at < COMPRESS_HEADER_BYTES ? "damaged header" : ""),
                  "byte %zu changed", at);
    }
    memcpy(copy, packed, n);
    copy[n] = 0;
    CHECK(refused(&f, copy, n + 1, "damaged (1 bytes after the end"));
    memcpy(copy, packed, n);
    copy[8] = 2;   /* version */
    reseal(copy);
    CHECK(refused(&f, copy, n, "format version 2"));
    memcpy(copy, packed, n);
    copy[100] ^= 0x40;   /* threads */
    reseal(copy);
    CHECK(refused(&f, copy, n, "threads"));
    free(copy);
    free(packed);
    strbuf_free(&text);
    compress_fixture_free(&other);
    compress_fixture_free(&f);
}

int main(void)
{
    omp_set_num_threads(1);   /* a model this small spends more in OpenMP's barriers than in its work */
    RUN(test_round_trips);
    RUN(test_matches_eval);
    RUN(test_causal);
    RUN(test_refusals);
    return test_summary("test_compress");
}
