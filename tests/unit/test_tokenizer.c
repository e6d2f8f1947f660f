/* test_tokenizer.c - pre-splitting rules, BPE training (exact merges on a
 * hand-counted example, tie rule, determinism, thread-split independence,
 * tokens never crossing pieces), encoding (lossless on random/invalid/long
 * inputs, scan == heap, cache == no cache, == the training merges applied in
 * order), the file format (round trip, every malformed case rejected). */
#include "test.h"

#include <unistd.h>

#include "core/rng.h"
#include "data/bpe_train.h"
#include "data/pretokenize.h"
#include "data/tokenizer.h"

/* ---------- helpers ---------- */

static char *read_text(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_data_dir(), rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        *len = 0;
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

static tokenizer *train_on(const char *text, size_t len, int vocab, int32_t **merges)
{
    tok_trainer *tr;
    tempo_error err;
    tokenizer *t = NULL;
    CHECK(tok_trainer_new(&tr, &err) == 0);
    CHECK(tok_trainer_add(tr, (const uint8_t *)text, len, &err) == 0);
    CHECK_MSG(tok_trainer_finish(tr, vocab, &t, merges, &err) == 0, "%s", err.msg);
    tok_trainer_free(tr);
    return t;
}

/* decode(encode(x)) == x, also through an encoder with a cache. */
static int round_trips(const tokenizer *t, const uint8_t *x, size_t n)
{
    int32_t *ids = NULL;
    size_t n_ids = 0, cap = 0;
    tempo_error err;
    int ok = tok_encode(t, x, n, &ids, &n_ids, &cap, &err) == 0 && n_ids <= n;
    strbuf out = {0};
    ok = ok && tok_decode(t, ids, n_ids, &out) == 0 && out.len == n && (n == 0 || !memcmp(out.data, x, n));
    strbuf_free(&out);
    free(ids);
    return ok;
}

/* ---------- pre-splitting ---------- */

static void expect_pieces(const char *text, const char *const *want, size_t n_want)
{
    const uint8_t *s = (const uint8_t *)text;
    size_t n = strlen(text), pos = 0, i = 0;
    while (pos < n) {
        size_t k = pretok_next(s + pos, n - pos);
        CHECK_MSG(k >= 1 && k <= n - pos, "'%s'", text);
        CHECK_MSG(i < n_want && k == strlen(want[i]) && !memcmp(s + pos, want[i], k),
                  "'%s': piece %zu is '%.*s'", text, i, (int)k, s + pos);
        pos += k;
        i++;
    }
    CHECK_MSG(i == n_want, "'%s': %zu pieces, want %zu", text, i, n_want);
}

#define PIECES(text, ...)                                                        \
    do {                                                                         \
        const char *w_[] = {__VA_ARGS__};                                        \
        expect_pieces(text, w_, sizeof w_ / sizeof w_[0]);                       \
    } while (0)

static void test_pretokenize(void)
{
    PIECES("Hello world", "Hello", " world");
    PIECES("I'm here, they'RE", "I", "'m", " here", ",", " they", "'RE");
    PIECES("don't 'sup", "don", "'t", " '", "sup");
    PIECES("   x", "  ", " x");
    PIECES("a   \n b", "a", "   ", "\n", " b");
    PIECES("\t x", "\t", " x");
    PIECES("\t\tx", "\t\t", "x");
    PIECES("1234567 in 2024", "123", "456", "7", " in", " 202", "4");
    PIECES("x=-1.5!!", "x", "=-", "1", ".", "5", "!!");
    PIECES("end.\n\n\nNew", "end", ".", "\n\n\n", "New");
    PIECES("caf\xc3\xa9 \xe2\x80\x9cquoted\xe2\x80\x9d", "caf\xc3\xa9", " \xe2\x80\x9cquoted\xe2\x80\x9d");
    PIECES("\xff\xfe bad", "\xff\xfe", " bad");
    PIECES(" ", " ");
    PIECES("  ", "  ");
    PIECES("a\r\nb", "a", "\r\n", "b");
    PIECES("x\x01\x02y", "x", "\x01\x02", "y");
    /* lossless on random bytes: pieces cover the text exactly once */
    rng_state r;
    rng_seed(&r, 5);
    uint8_t buf[512];
    for (int iter = 0; iter < 200; iter++) {
        size_t n = 1 + rng_below(&r, sizeof buf);
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)rng_next(&r);
        size_t pos = 0, count = 0;
        while (pos < n) {
            size_t k = pretok_next(buf + pos, n - pos);
            CHECK(k >= 1 && k <= n - pos);
            pos += k;
            count++;
        }
        CHECK(pos == n && count == pretok_count(buf, n));
    }
}

/* ---------- training ---------- */

static void test_train_exact(void)
{
    /* pieces: "ab" x5, "abc" x2, "bc" x3 (newlines are single-byte pieces).
     * pair counts: ab 7, bc 5 -> merge ab; then (ab,c) 2, (b,c) 3 -> bc; then (ab,c) 2 -> abc. */
    strbuf sb = {0};
    for (int i = 0; i < 5; i++) strbuf_puts(&sb, "ab\n");
    for (int i = 0; i < 2; i++) strbuf_puts(&sb, "abc\n");
    for (int i = 0; i < 3; i++) strbuf_puts(&sb, "bc\n");
    int32_t *merges = NULL;
    tokenizer *t = train_on(sb.data, sb.len, 300, &merges);
    CHECK(t && tok_n_regular(t) == 259 && tok_vocab_size(t) == 260 && tok_sep_id(t) == 259);
    if (t) {
        CHECK(merges[0] == 'a' && merges[1] == 'b');
        CHECK(merges[2] == 'b' && merges[3] == 'c');
        CHECK(merges[4] == 256 && merges[5] == 'c');
        const uint8_t *b;
        CHECK(tok_token_bytes(t, 258, &b) == 3 && !memcmp(b, "abc", 3));
        CHECK(tok_token_bytes(t, 259, &b) == 0 && b != NULL); /* separator: no bytes */
        CHECK(tok_token_bytes(t, 260, &b) == 0 && b == NULL);
        CHECK(tok_token_bytes(t, -1, &b) == 0 && b == NULL);
    }
    free(merges);
    tok_free(t);
    strbuf_free(&sb);
    /* ties go to the smaller (left, right) ids: "uv" before "xy" */
    t = train_on("xy\nuv\n", 6, 400, NULL);
    CHECK(t && tok_n_regular(t) == 258);
    if (t) {
        const uint8_t *b;
        CHECK(tok_token_bytes(t, 256, &b) == 2 && !memcmp(b, "uv", 2));
        CHECK(tok_token_bytes(t, 257, &b) == 2 && !memcmp(b, "xy", 2));
    }
    tok_free(t);
    /* "aaaa" merges left to right, like the encoder */
    t = train_on("aaa\n", 4, 400, &merges);
    CHECK(t && tok_n_regular(t) == 258);
    if (t) {
        int32_t *ids = NULL;
        size_t n = 0, cap = 0;
        tempo_error err;
        CHECK(tok_encode(t, (const uint8_t *)"aaaaa", 5, &ids, &n, &cap, &err) == 0);
        /* aa=256, then (aa,a)=257 "aaa": "aaaaa" -> aa aa a -> (aa,aa) no token, (aa,a) 257 at the right */
        CHECK(n == 2 && ids[0] == 256 && ids[1] == 257);
        free(ids);
    }
    free(merges);
    tok_free(t);
}

static void test_vocab_256_is_bytes(void)
{
    tokenizer *t = train_on("hello hello hello", 17, 256, NULL);
    CHECK(t && tok_n_regular(t) == 256 && tok_vocab_size(t) == 257);
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    tempo_error err;
    const uint8_t text[] = "hello \xff\x00 world";
    CHECK(tok_encode(t, text, sizeof text - 1, &ids, &n, &cap, &err) == 0 && n == sizeof text - 1);
    for (size_t i = 0; i < n; i++)
        CHECK(ids[i] == text[i]);
    free(ids);
    /* an empty text into an empty array adds nothing and touches nothing (the sanitized build
     * caught NULL + 0 here: tests/fuzz/corpus/icl_task/empty_text, an ICL record with an empty field) */
    ids = NULL;
    n = cap = 0;
    CHECK(tok_encode(t, text, 0, &ids, &n, &cap, &err) == 0 && n == 0 && ids == NULL);
    tok_free(t);
    tempo_error e2;
    tok_trainer *tr;
    CHECK(tok_trainer_new(&tr, &e2) == 0);
    CHECK(tok_trainer_finish(tr, 255, &t, NULL, &e2) == -1 && strstr(e2.msg, "vocab 255") != NULL);
    CHECK(tok_trainer_finish(tr, 65537, &t, NULL, &e2) == -1);
    CHECK(tok_trainer_finish(tr, 300, &t, NULL, &e2) == 0 && tok_n_regular(t) == 256); /* no text */
    tok_free(t);
    tok_trainer_free(tr);
}

/* The shared fixture: the properties every trained vocabulary must have. */
static void test_train_fixture(void)
{
    size_t len, val_len;
    char *text = read_text("tiny/train.txt", &len);
    char *val = read_text("tiny/val.txt", &val_len);
    CHECK(text && val);
    if (!text || !val) {
        free(text);
        free(val);
        return;
    }
    int vocab = 768;
    int32_t *merges = NULL;
    tokenizer *t = train_on(text, len, vocab, &merges);
    CHECK(t && tok_n_regular(t) == vocab);
    if (!t) {
        free(text);
        free(val);
        return;
    }

    /* deterministic: a second run, and a run split over two trainers, give the same file */
    tokenizer *t2 = train_on(text, len, vocab, NULL);
    tok_trainer *ta, *tb;
    tempo_error err;
    CHECK(tok_trainer_new(&ta, &err) == 0 && tok_trainer_new(&tb, &err) == 0);
    size_t half = len / 2;
    while (half < len && text[half] != '\n') /* cut at a piece boundary */
        half++;
    CHECK(tok_trainer_add(tb, (const uint8_t *)text + half, len - half, &err) == 0);
    CHECK(tok_trainer_add(ta, (const uint8_t *)text, half, &err) == 0);
    CHECK(tok_trainer_absorb(tb, ta, &err) == 0);
    CHECK(tok_trainer_bytes(tb) == len && tok_trainer_distinct(tb) > 1000);
    tokenizer *t3 = NULL;
    CHECK(tok_trainer_finish(tb, vocab, &t3, NULL, &err) == 0);
    tok_trainer_free(ta);
    tok_trainer_free(tb);
    strbuf f1 = {0}, f2 = {0}, f3 = {0};
    CHECK(tok_serialize(t, &f1) == 0 && tok_serialize(t2, &f2) == 0 && tok_serialize(t3, &f3) == 0);
    CHECK(f1.len == f2.len && !memcmp(f1.data, f2.data, f1.len));
    CHECK(f1.len == f3.len && !memcmp(f1.data, f3.data, f1.len));
    tok_free(t2);
    tok_free(t3);

    /* merges never cross pieces: each token's bytes pre-split into one piece,
     * except proper prefixes of a contraction ("'r" of "'re", "'v", "'l") */
    int crossing = 0;
    for (int id = 256; id < vocab; id++) {
        const uint8_t *b;
        size_t n = tok_token_bytes(t, id, &b);
        int contraction_prefix = n == 2 && b[0] == '\'' && strchr("rRvVlL", b[1]);
        if (pretok_next(b, n) != n && !contraction_prefix) {
            crossing++;
            fprintf(stderr, "  token %d '%.*s' crosses a piece boundary\n", id, (int)n, b);
        }
    }
    CHECK(crossing == 0);

    /* save/load round trip */
    tokenizer *back = NULL;
    CHECK(tok_parse(&back, f1.data, f1.len, "mem", &err) == 0);
    strbuf f4 = {0};
    CHECK(back && tok_serialize(back, &f4) == 0 && f4.len == f1.len && !memcmp(f4.data, f1.data, f1.len));
    char path[] = "/tmp/tempo_test_tok_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    tokenizer *loaded = NULL;
    CHECK(tok_save(t, path, &err) == 0);
    CHECK(tok_load(&loaded, path, &err) == 0 && tok_n_regular(loaded) == vocab);
    unlink(path);

    /* encoding: lossless, compresses, equals the reference paths */
    CHECK(round_trips(t, (const uint8_t *)val, val_len));
    int32_t *ids = NULL, *ids_loaded = NULL;
    size_t n_ids = 0, cap = 0, n_loaded = 0, cap_loaded = 0;
    CHECK(tok_encode(t, (const uint8_t *)val, val_len, &ids, &n_ids, &cap, &err) == 0);
    CHECK(tok_encode(loaded, (const uint8_t *)val, val_len, &ids_loaded, &n_loaded, &cap_loaded, &err) == 0);
    CHECK(n_ids == n_loaded && !memcmp(ids, ids_loaded, n_ids * sizeof *ids));
    CHECK_MSG((double)val_len / (double)n_ids > 2.0, "%.3f bytes per token", (double)val_len / (double)n_ids);

    /* piece by piece: scan == heap == cached encoder == training merges applied in order */
    tok_encoder *enc;
    CHECK(tok_encoder_new(&enc, t, &err) == 0);
    int32_t a[256], b2[256], c[256];
    size_t pos = 0, out_pos = 0, ref_len = 20000 < val_len ? 20000 : val_len;
    int mismatches = 0;
    while (pos < ref_len) {
        size_t k = pretok_next((const uint8_t *)val + pos, val_len - pos);
        if (k > 256)
            k = 256; /* still a valid test of the merge loops */
        const uint8_t *p = (const uint8_t *)val + pos;
        size_t na = tok_encode_piece(t, p, k, a, 1);
        size_t nb = tok_encode_piece(t, p, k, b2, 2);
        /* reference: apply every merge in training order */
        size_t nc = k;
        for (size_t i = 0; i < k; i++)
            c[i] = p[i];
        for (int m = 0; m < vocab - 256 && nc > 1; m++) {
            size_t j = 0;
            for (size_t i = 0; i < nc;) {
                if (i + 1 < nc && c[i] == merges[2 * m] && c[i + 1] == merges[2 * m + 1]) {
                    c[j++] = 256 + m;
                    i += 2;
                } else {
                    c[j++] = c[i++];
                }
            }
            nc = j;
        }
        int same = na == nb && na == nc && !memcmp(a, b2, na * sizeof *a) && !memcmp(a, c, na * sizeof *a);
        if (!same && mismatches++ < 5)
            fprintf(stderr, "  piece '%.*s': scan/heap/merges disagree\n", (int)k, p);
        pos += k;
        out_pos += na;
    }
    CHECK(mismatches == 0);
    int32_t *e_ids = NULL;
    size_t e_n = 0, e_cap = 0;
    for (int rep = 0; rep < 2; rep++) { /* second pass hits the cache */
        e_n = 0;
        CHECK(tok_encoder_encode(enc, (const uint8_t *)val, val_len, &e_ids, &e_n, &e_cap, &err) == 0);
        CHECK(e_n == n_ids && !memcmp(e_ids, ids, n_ids * sizeof *ids));
    }
    free(e_ids);
    tok_encoder_free(enc);

    /* lossless on hard inputs */
    rng_state r;
    rng_seed(&r, 77);
    size_t big = 200000;
    uint8_t *x = malloc(big);
    for (int kind = 0; kind < 7; kind++) {
        size_t n = kind < 3 ? big : rng_below(&r, 3000);
        for (size_t i = 0; i < n; i++) {
            switch (kind) {
            case 0: x[i] = ' '; break;                        /* long run of spaces */
            case 1: x[i] = (uint8_t)('0' + i % 10); break;    /* long digit run */
            case 2: x[i] = "ethe"[i % 4]; break;              /* one 200 KB letter piece (heap path) */
            case 3: x[i] = (uint8_t)rng_next(&r); break;      /* random bytes */
            case 4: x[i] = (uint8_t)(0x80 + rng_below(&r, 0x80)); break; /* invalid UTF-8 */
            case 5: x[i] = " e\n'0a."[rng_below(&r, 7)]; break;
            default: x[i] = (uint8_t)val[rng_below(&r, val_len)]; break;
            }
        }
        CHECK_MSG(round_trips(t, x, n), "kind %d", kind);
    }
    CHECK(round_trips(t, x, 0));
    free(x);
    /* decode rejects ids out of range */
    strbuf o = {0};
    int32_t bad_ids[] = {65, tok_sep_id(t), 66, tok_sep_id(t) + 1};
    CHECK(tok_decode(t, bad_ids, 3, &o) == 0 && o.len == 2 && !memcmp(o.data, "AB", 2));
    CHECK(tok_decode(t, bad_ids, 4, &o) == -1);
    int32_t neg = -1;
    CHECK(tok_decode(t, &neg, 1, &o) == -1);
    strbuf_free(&o);

    free(ids);
    free(ids_loaded);
    free(merges);
    strbuf_free(&f1);
    strbuf_free(&f2);
    strbuf_free(&f3);
    strbuf_free(&f4);
    tok_free(back);
    tok_free(loaded);
    tok_free(t);
    free(text);
    free(val);
}

/* ---------- the file format ---------- */

/* A valid file with 256 byte tokens, then the extra lines, then the special line. */
static void make_file(strbuf *sb, const char *extra, int special_id, int with_special)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    sb->len = 0;
    for (int i = 0; i < 256; i++)
        strbuf_printf(sb, "%c%c== %d\n", b64[i >> 2], b64[(i & 3) << 4], i);
    strbuf_puts(sb, extra);
    if (with_special)
        strbuf_printf(sb, "!special <|sep|> %d\n", special_id);
}

static void expect_reject(const char *text, size_t len, const char *want)
{
    tokenizer *t = NULL;
    tempo_error err;
    tempo_error_clear(&err);
    CHECK_MSG(tok_parse(&t, text, len, "tok.tiktoken", &err) == -1 && t == NULL, "accepted (want '%s')", want);
    CHECK_MSG(strstr(err.msg, want) != NULL, "'%s' lacks '%s'", err.msg, want);
    tok_free(t);
}

static void test_file_format(void)
{
    strbuf sb = {0};
    tokenizer *t = NULL;
    tempo_error err;
    /* "aa" = YWE=, "aaa" = YWFh, "ab" = YWI= */
    make_file(&sb, "YWE= 256\nYWFh 257\n", 258, 1);
    CHECK(tok_parse(&t, sb.data, sb.len, "tok.tiktoken", &err) == 0 && tok_n_regular(t) == 258);
    strbuf again = {0};
    CHECK(t && tok_serialize(t, &again) == 0 && again.len == sb.len && !memcmp(again.data, sb.data, sb.len));
    strbuf_free(&again);
    tok_free(t);
    /* plain bytes only */
    make_file(&sb, "", 256, 1);
    CHECK(tok_parse(&t, sb.data, sb.len, "tok.tiktoken", &err) == 0 && tok_vocab_size(t) == 257);
    tok_free(t);

    make_file(&sb, "YWE= 256\n", 257, 0);
    expect_reject(sb.data, sb.len, "tok.tiktoken:258: truncated (missing the \"!special <|sep|> 257\" line)");
    make_file(&sb, "YWE= 256\n", 257, 1);
    expect_reject(sb.data, sb.len - 1, "tok.tiktoken:258: truncated (the last line has no newline)");
    expect_reject(sb.data, 100 * 7, "truncated");
    make_file(&sb, "YW?= 256\n", 257, 1);
    expect_reject(sb.data, sb.len, "tok.tiktoken:257: bad base64");
    make_file(&sb, "YWF 256\n", 257, 1);
    expect_reject(sb.data, sb.len, "tok.tiktoken:257: bad base64");
    make_file(&sb, "YWF= 256\n", 257, 1); /* non-zero unused bits */
    expect_reject(sb.data, sb.len, "tok.tiktoken:257: bad base64");
    make_file(&sb, "YWE= 256\nYWE= 257\n", 258, 1);
    expect_reject(sb.data, sb.len, "tok.tiktoken:258: duplicate token (same bytes as token 256)");
    make_file(&sb, "YWE= 257\n", 258, 1);
    expect_reject(sb.data, sb.len, "tok.tiktoken:257: rank 257 out of order (expected 256)");
    make_file(&sb, "YWFh 256\n", 257, 1); /* "aaa" before "aa" exists */
    expect_reject(sb.data, sb.len, "tok.tiktoken:257: token cannot be made from two lower-ranked tokens");
    make_file(&sb, "YQ== 256\n", 257, 1); /* single byte as a merged token */
    expect_reject(sb.data, sb.len, "tok.tiktoken:257: a merged token must have at least 2 bytes");
    make_file(&sb, "YWE= 256\n", 258, 1);
    expect_reject(sb.data, sb.len, "tok.tiktoken:258: special token id 258, expected 257");
    make_file(&sb, "YWE= 256\n!special <|endoftext|> 257\n", 0, 0);
    expect_reject(sb.data, sb.len, "tok.tiktoken:258: expected \"!special <|sep|> 257\"");
    make_file(&sb, "YWE= 256\n", 257, 1);
    strbuf_puts(&sb, "YWI= 258\n");
    expect_reject(sb.data, sb.len, "tok.tiktoken:259: unexpected line after the special token");
    make_file(&sb, "YWE=256\n", 257, 1);
    expect_reject(sb.data, sb.len, "tok.tiktoken:257: expected \"<base64> <rank>\"");
    make_file(&sb, "YWE= 25x\n", 257, 1);
    expect_reject(sb.data, sb.len, "tok.tiktoken:257: bad rank");
    make_file(&sb, "YWE=  256\n", 257, 1);
    expect_reject(sb.data, sb.len, "tok.tiktoken:257: bad rank");
    make_file(&sb, "", 256, 1);
    sb.data[0] = 'B'; /* token 0 is not byte 0 */
    expect_reject(sb.data, sb.len, "tok.tiktoken:1: token 0 must be the single byte 0x00");
    expect_reject("", 0, "tok.tiktoken:1: truncated (missing");
    expect_reject("!special <|sep|> 0\n", 19, "only 0 regular tokens");
    strbuf_free(&sb);

    /* tok_load names the file; a missing file is an error too */
    CHECK(tok_load(&t, "/nonexistent/tok.tiktoken", &err) == -1 && strstr(err.msg, "/nonexistent/tok.tiktoken: cannot open"));
}

/* Random edits of a valid file: tok_parse returns 0 or -1 with a message,
 * never crashes (ASan checks the rest); accepted files round-trip. */
static void test_file_fuzz(void)
{
    strbuf good = {0};
    make_file(&good, "YWE= 256\nYWFh 257\nYWI= 258\nYWJh 259\n", 260, 1);
    rng_state r;
    rng_seed(&r, 2024);
    const char alphabet[] = "AYWE=h \n!0123456789+/special<|sep|>";
    char *buf = malloc(good.len + 64);
    int accepted = 0;
    for (int iter = 0; iter < 3000; iter++) {
        size_t n = good.len;
        memcpy(buf, good.data, n);
        int edits = 1 + (int)rng_below(&r, 3);
        for (int e = 0; e < edits; e++) {
            /* mostly near the end, where the merged tokens and the special line are */
            size_t at = rng_below(&r, 4) ? n - 1 - rng_below(&r, n < 60 ? n : 60) : rng_below(&r, n);
            switch (rng_below(&r, 3)) {
            case 0: buf[at] = alphabet[rng_below(&r, sizeof alphabet - 1)]; break;
            case 1: memmove(buf + at, buf + at + 1, n - at - 1); n--; break;
            default: n = at; break;
            }
        }
        tokenizer *t = NULL;
        tempo_error err;
        tempo_error_clear(&err);
        if (tok_parse(&t, buf, n, "fuzz", &err) == 0) {
            accepted++;
            strbuf again = {0};
            CHECK(tok_serialize(t, &again) == 0 && again.len == n && !memcmp(again.data, buf, n));
            strbuf_free(&again);
            CHECK(round_trips(t, (const uint8_t *)"aaba abab", 9));
        } else {
            CHECK(t == NULL && strncmp(err.msg, "fuzz", 4) == 0);
        }
        tok_free(t);
    }
    CHECK(accepted > 0);
    free(buf);
    strbuf_free(&good);
}

int main(void)
{
    RUN(test_pretokenize);
    RUN(test_train_exact);
    RUN(test_vocab_256_is_bytes);
    RUN(test_train_fixture);
    RUN(test_file_format);
    RUN(test_file_fuzz);
    return test_summary("test_tokenizer");
}
