/* test_token_store.c - .tok files: write/read round trip (uint16 and uint32),
 * the SEP d1 SEP ... dn SEP layout, atomicity (nothing under the final name
 * before commit, nothing left after abort), every corruption rejected with a
 * message naming the file, and encoding a text file into the layout. */
#include "test.h"

#include <unistd.h>

#include "core/rng.h"
#include "data/bpe_train.h"
#include "data/token_store.h"

static char tmp_dir[64];

static const char *tmp_path(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    return path;
}

static size_t count_files(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", tmp_dir);
    FILE *p = popen(cmd, "r");
    size_t n = 0;
    if (p) {
        if (fscanf(p, "%zu", &n) != 1)
            n = 999;
        pclose(p);
    }
    return n;
}

static int path_exists_(const char *p) { return access(p, F_OK) == 0; }

/* Write docs of random ids; read back and compare everything. */
static void round_trip(uint32_t vocab)
{
    rng_state r;
    rng_seed(&r, vocab);
    const char *path = tmp_path("rt.tok");
    unlink(path);
    token_writer *w;
    tempo_error err;
    CHECK(token_writer_open(&w, path, vocab, &err) == 0);
    CHECK(!path_exists_(path));
    int32_t *all = malloc(200000 * sizeof *all);
    size_t n_all = 0;
    uint32_t sep = vocab - 1;
    all[n_all++] = (int32_t)sep;
    uint64_t bytes = 0;
    for (int d = 0; d < 50; d++) {
        size_t n = rng_below(&r, d == 7 ? 1 : 3000); /* doc 7 is empty */
        int32_t *ids = all + n_all;
        for (size_t i = 0; i < n; i++)
            ids[i] = (int32_t)rng_below(&r, sep);
        if (n)
            ids[0] = (int32_t)sep - 1; /* the largest regular id */
        CHECK(token_writer_add_doc(w, ids, n, 3 * n + 1, &err) == 0);
        n_all += n;
        all[n_all++] = (int32_t)sep;
        bytes += 3 * n + 1;
    }
    int32_t bad = (int32_t)sep;
    CHECK(token_writer_add_doc(w, &bad, 1, 1, &err) == -1 && strstr(err.msg, "out of range"));
    bad = -1;
    CHECK(token_writer_add_doc(w, &bad, 1, 1, &err) == -1);
    CHECK(token_writer_tokens(w) == n_all && token_writer_docs(w) == 50 && token_writer_bytes(w) == bytes);
    CHECK(token_writer_commit(w, &err) == 0);
    CHECK(count_files() == 1); /* no temp file left */
    token_file tf;
    CHECK_MSG(token_file_open(&tf, path, &err) == 0, "%s", err.msg);
    CHECK(tf.version == 1 && tf.vocab_size == vocab && tf.dtype_bytes == (vocab <= 65536 ? 2u : 4u));
    CHECK(tf.n_tokens == n_all && tf.n_docs == 50 && tf.n_bytes == bytes);
    int same = 1;
    for (size_t i = 0; i < n_all; i++)
        same &= token_file_at(&tf, i) == (uint32_t)all[i];
    CHECK(same);
    int32_t *back = malloc(n_all * sizeof *back);
    token_file_read(&tf, 5, n_all - 5, back);
    CHECK(!memcmp(back, all + 5, (n_all - 5) * sizeof *back));
    free(back);
    token_file_close(&tf);
    CHECK(tf.map_ == NULL);
    token_file_close(&tf); /* twice is fine */
    free(all);
}

static void test_round_trip(void)
{
    round_trip(300);
    round_trip(65536);   /* largest uint16 vocabulary */
    round_trip(65537);   /* uint32 */
}

static void test_abort(void)
{
    const char *path = tmp_path("aborted.tok");
    token_writer *w;
    tempo_error err;
    size_t before = count_files();
    CHECK(token_writer_open(&w, path, 500, &err) == 0);
    int32_t ids[3] = {1, 2, 3};
    CHECK(token_writer_add_doc(w, ids, 3, 3, &err) == 0);
    CHECK(count_files() == before + 1 && !path_exists_(path)); /* only the temp file */
    token_writer_abort(w);
    CHECK(count_files() == before);
    CHECK(token_writer_open(&w, "/nonexistent/dir/x.tok", 500, &err) == -1 && strstr(err.msg, "/nonexistent/dir/x.tok"));
}

/* Write a small valid file, then damage a copy in various ways. */
static void write_bytes(const char *name, const uint8_t *p, size_t n)
{
    FILE *f = fopen(tmp_path(name), "wb");
    CHECK(f && fwrite(p, 1, n, f) == n);
    if (f)
        fclose(f);
}

static void expect_bad(const char *name, const uint8_t *p, size_t n, const char *want)
{
    write_bytes(name, p, n);
    token_file tf;
    tempo_error err;
    tempo_error_clear(&err);
    CHECK_MSG(token_file_open(&tf, tmp_path(name), &err) == -1, "%s accepted", name);
    CHECK_MSG(strstr(err.msg, name) && strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
    CHECK(tf.map_ == NULL);
}

static void test_corruption(void)
{
    const char *path = tmp_path("good.tok");
    token_writer *w;
    tempo_error err;
    CHECK(token_writer_open(&w, path, 1000, &err) == 0);
    int32_t ids[100];
    for (int i = 0; i < 100; i++)
        ids[i] = i * 9;
    CHECK(token_writer_add_doc(w, ids, 100, 400, &err) == 0);
    CHECK(token_writer_add_doc(w, ids, 23, 90, &err) == 0);
    CHECK(token_writer_commit(w, &err) == 0);
    FILE *f = fopen(path, "rb");
    uint8_t good[1024];
    size_t n = fread(good, 1, sizeof good, f);
    fclose(f);
    CHECK(n == 64 + 2 * 126);
    uint8_t bad[1024];

    expect_bad("short.tok", good, 60, "truncated (header of 60 bytes");
    expect_bad("tiny.tok", good, 5, "not a tempo token file");
    memcpy(bad, good, n);
    bad[0] = 'X';
    expect_bad("magic.tok", bad, n, "not a tempo token file");
    expect_bad("trunc.tok", good, n - 7, "truncated (header says 126 tokens, file holds 122)");
    memcpy(bad, good, n);
    bad[n] = 0;
    bad[n + 1] = 0;
    expect_bad("trailing.tok", bad, n + 2, "2 bytes after the 126 tokens");
    memcpy(bad, good, n);
    bad[8] = 2;
    expect_bad("version.tok", bad, n, "unsupported token file version 2");
    memcpy(bad, good, n);
    bad[16] = 4;
    expect_bad("dtype.tok", bad, n, "dtype of 4 bytes does not match vocab size 1000");
    memcpy(bad, good, n);
    bad[64 + 2 * 5] = 0xE8;
    bad[64 + 2 * 5 + 1] = 0x03; /* id 1000 */
    expect_bad("range.tok", bad, n, "token 1000 at position 5 is out of range (vocab 1000)");
    memcpy(bad, good, n);
    bad[40] = 3; /* n_docs */
    expect_bad("docs.tok", bad, n, "header says 3 documents, the stream holds 3 separators (want 4)");
    memcpy(bad, good, n);
    bad[64] = 1;
    bad[65] = 0;
    expect_bad("first.tok", bad, n, "must start and end with the separator 999");
    token_file tf;
    CHECK(token_file_open(&tf, tmp_path("missing.tok"), &err) == -1 && strstr(err.msg, "missing.tok: cannot open"));
}

/* Random header and size damage: open returns 0 with consistent fields or
 * -1 naming the file, never crashes. */
static void test_header_fuzz(void)
{
    const char *path = tmp_path("fuzz_src.tok");
    token_writer *w;
    tempo_error err;
    CHECK(token_writer_open(&w, path, 65537, &err) == 0); /* uint32 */
    int32_t ids[40];
    for (int i = 0; i < 40; i++)
        ids[i] = i * 1600;
    CHECK(token_writer_add_doc(w, ids, 40, 99, &err) == 0);
    CHECK(token_writer_commit(w, &err) == 0);
    FILE *f = fopen(path, "rb");
    uint8_t good[512], bad[600];
    size_t n = fread(good, 1, sizeof good, f);
    fclose(f);
    rng_state r;
    rng_seed(&r, 31);
    int accepted = 0;
    for (int iter = 0; iter < 400; iter++) {
        memcpy(bad, good, n);
        size_t m = n;
        int edits = 1 + (int)rng_below(&r, 3);
        for (int e = 0; e < edits; e++) {
            if (rng_below(&r, 4) == 0)
                m = rng_below(&r, n + 8);
            else
                bad[rng_below(&r, 64 + 8)] ^= (uint8_t)(1u << rng_below(&r, 8));
        }
        if (m > n)
            memset(bad + n, 0, m - n);
        write_bytes("fuzz.tok", bad, m);
        token_file tf;
        tempo_error_clear(&err);
        if (token_file_open(&tf, tmp_path("fuzz.tok"), &err) == 0) {
            accepted++;
            CHECK(64 + tf.n_tokens * tf.dtype_bytes == m && token_file_at(&tf, 0) == tf.vocab_size - 1);
            token_file_close(&tf);
        } else {
            CHECK(strstr(err.msg, "fuzz.tok") != NULL && tf.map_ == NULL);
        }
    }
    CHECK(accepted > 0 && accepted < 400);
}

static void test_encode_file(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny/val.txt", test_data_dir());
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
        return;
    char *text = malloc(200000);
    size_t len = fread(text, 1, 200000, f);
    fclose(f);
    tok_trainer *tr;
    tempo_error err;
    tokenizer *t = NULL;
    CHECK(tok_trainer_new(&tr, &err) == 0 && tok_trainer_add(tr, (uint8_t *)text, len, &err) == 0);
    CHECK(tok_trainer_finish(tr, 300, &t, NULL, &err) == 0);
    tok_trainer_free(tr);

    int32_t *ids;
    size_t n;
    uint64_t n_bytes, n_docs;
    CHECK_MSG(token_encode_file(t, path, &ids, &n, &n_bytes, &n_docs, &err) == 0, "%s", err.msg);
    CHECK(n_docs == 21 && n_bytes == len - 2 * 21);
    int32_t sep = tok_sep_id(t);
    size_t seps = 0;
    for (size_t i = 0; i < n; i++)
        seps += ids[i] == sep;
    CHECK(ids[0] == sep && ids[n - 1] == sep && seps == 22);
    /* decoding gives the text without the "\x1e\n" framing */
    strbuf dec = {0}, want = {0};
    CHECK(tok_decode(t, ids, n, &dec) == 0);
    for (size_t i = 0; i < len; i++) {
        if (text[i] == 0x1E && (i == 0 || text[i - 1] == '\n') && i + 1 < len && text[i + 1] == '\n') {
            i++;
            continue;
        }
        strbuf_append(&want, text + i, 1);
    }
    CHECK(dec.len == n_bytes && want.len == n_bytes && !memcmp(dec.data, want.data, dec.len));
    strbuf_free(&dec);
    strbuf_free(&want);
    /* the same bytes from an open stream (tempo compress reads them so): the same stream */
    FILE *mem = fmemopen(text, len, "rb");
    int32_t *ids2;
    size_t n2;
    uint64_t n_bytes2, n_docs2;
    CHECK(mem && token_encode_stream(t, mem, "mem", &ids2, &n2, &n_bytes2, &n_docs2, &err) == 0);
    CHECK(n2 == n && n_bytes2 == n_bytes && n_docs2 == n_docs && !memcmp(ids2, ids, sizeof(int32_t) * n));
    if (mem)
        fclose(mem);
    free(ids2);
    free(ids);
    CHECK(token_encode_file(t, tmp_path("nope.txt"), &ids, &n, &n_bytes, &n_docs, &err) == -1);
    CHECK(strstr(err.msg, "nope.txt: cannot open") != NULL && ids == NULL);

    CHECK(token_encode_text(t, (const uint8_t *)"hi there", 8, &ids, &n, &err) == 0);
    CHECK(n >= 3 && ids[0] == sep && ids[n - 1] == sep);
    free(ids);
    CHECK(token_encode_text(t, (const uint8_t *)"", 0, &ids, &n, &err) == 0 && n == 1 && ids[0] == sep);
    free(ids);
    tok_free(t);
    free(text);
}

int main(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/tempo_test_tokstore_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_round_trip);
    RUN(test_abort);
    RUN(test_corruption);
    RUN(test_header_fuzz);
    RUN(test_encode_file);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return test_summary("test_token_store");
}
