/* test_corpus.c - the corpus reader: separator rules against a whole-buffer
 * reference splitter (random contents, .txt and .xz, documents straddling the
 * 1 MiB read buffer), JSONL rules and errors, folders, xz corruption, and the
 * exact document/byte counts and sha256 of the shared fixture and val split. */
#include "test.h"

#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/rng.h"
#include "data/corpus.h"

static char tmp_dir[64];

static const char *tmp_path(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    return path;
}

static void write_file(const char *name, const void *data, size_t n)
{
    FILE *f = fopen(tmp_path(name), "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}

static void write_xz(const char *name, const void *data, size_t n)
{
    size_t cap = n + n / 2 + 4096, out_len = 0;
    uint8_t *out = malloc(cap);
    CHECK(lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, NULL, data, n, out, &out_len, cap) == LZMA_OK);
    write_file(name, out, out_len);
    free(out);
}

/* The documents of a whole .txt buffer, by the rule in corpus.h: each
 * document ends where a line holding only 0x1E starts. Returns the count and
 * writes document offsets/lengths. */
static size_t reference_split(const uint8_t *s, size_t n, size_t *offs, size_t *lens)
{
    size_t count = 0, start = 0, i = 0;
    while (i < n) {
        int line_start = i == 0 || s[i - 1] == '\n';
        if (line_start && s[i] == 0x1E && (i + 1 == n || s[i + 1] == '\n')) {
            if (i > start) {
                offs[count] = start;
                lens[count++] = i - start;
            }
            start = i + 1 < n ? i + 2 : n;
            i = start;
            continue;
        }
        i++;
    }
    if (n > start) {
        offs[count] = start;
        lens[count++] = n - start;
    }
    return count;
}

/* Read every document of paths; compare with the expected list. */
static void expect_docs(const char *path, const uint8_t *content, size_t n)
{
    size_t *offs = malloc((n + 1) * sizeof *offs), *lens = malloc((n + 1) * sizeof *lens);
    size_t want = reference_split(content, n, offs, lens);
    corpus_reader *r;
    tempo_error err;
    char *paths[] = {(char *)path};
    CHECK(corpus_open(&r, paths, 1, &err) == 0);
    const uint8_t *doc;
    size_t len, got = 0, total = 0;
    int rc;
    while ((rc = corpus_next(r, &doc, &len, &err)) == 1) {
        CHECK(got < want && len == lens[got] && !memcmp(doc, content + offs[got], len));
        total += len;
        got++;
    }
    CHECK_MSG(rc == 0 && got == want, "%s: got %zu docs, want %zu (%s)", path, got, want, err.msg);
    const corpus_file *f = corpus_file_at(r, 0);
    CHECK(f->done && f->bytes == n && f->docs == want && f->doc_bytes == total);
    CHECK(corpus_next(r, &doc, &len, &err) == 0);
    corpus_close(r);
    free(offs);
    free(lens);
}

static void test_separator_rules(void)
{
    struct { const char *text; size_t n_docs; } cases[] = {
        {"a\n\x1e\nb\n\x1e\n", 2},
        {"a\n\x1e\nb\n", 2},          /* last document without separator */
        {"no separators at all", 1},
        {"\x1e\n\x1e\na\n\x1e\n\x1e\n", 1}, /* empty documents skipped */
        {"a\x1e\nb\n", 1},            /* 0x1E not at line start is text */
        {"a\n\x1e\x1e\nb\n", 1},      /* 0x1E not alone on its line is text */
        {"a\n\x1e", 1},               /* separator at end of file without newline */
        {"a\n\x1e\n\n\x1e\n", 2},     /* a document holding only a newline counts */
        {"", 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n = strlen(cases[c].text);
        size_t offs[8], lens[8];
        CHECK_MSG(reference_split((const uint8_t *)cases[c].text, n, offs, lens) == cases[c].n_docs,
                  "case %zu", c);
        write_file("case.txt", cases[c].text, n);
        expect_docs(tmp_path("case.txt"), (const uint8_t *)cases[c].text, n);
        write_xz("case.txt.xz", cases[c].text, n);
        expect_docs(tmp_path("case.txt.xz"), (const uint8_t *)cases[c].text, n);
    }
    /* the document keeps its final newline, drops the framing */
    write_file("one.txt", "hello\n\x1e\n", 8);
    corpus_reader *r;
    tempo_error err;
    char *paths[] = {(char *)tmp_path("one.txt")};
    CHECK(corpus_open(&r, paths, 1, &err) == 0);
    const uint8_t *doc;
    size_t len;
    CHECK(corpus_next(r, &doc, &len, &err) == 1 && len == 6 && !memcmp(doc, "hello\n", 6));
    CHECK(corpus_next(r, &doc, &len, &err) == 0);
    corpus_close(r);
}

/* Random contents over a small alphabet, including ~3 MB ones with
 * separators placed at and around the 1 MiB buffer boundaries. */
static void test_random_contents(void)
{
    rng_state rng;
    rng_seed(&rng, 99);
    const uint8_t alphabet[] = {'a', 'b', '\n', '\n', 0x1E, 0xFF, 0xC3};
    for (int iter = 0; iter < 60; iter++) {
        size_t n = iter < 56 ? rng_below(&rng, 200) : 3u << 20;
        uint8_t *s = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            s[i] = iter < 56 ? alphabet[rng_below(&rng, sizeof alphabet)] : (uint8_t)('a' + i % 26);
        if (iter >= 56) {
            /* separator lines straddling the boundaries of the 1 MiB buffer */
            size_t mib = 1u << 20;
            size_t at[] = {mib - 3, 2 * mib - 3, 2 * mib + mib / 2, 5000, 7000};
            for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
                size_t p = at[k] + (size_t)(iter - 56);
                s[p] = '\n';
                s[p + 1] = 0x1E;
                s[p + 2] = '\n';
            }
            for (int k = 0; k < 200; k++) { /* and random ones */
                size_t p = rng_below(&rng, n - 3);
                s[p] = '\n';
                s[p + 1] = 0x1E;
                s[p + 2] = '\n';
            }
        }
        write_file("rand.txt", s, n);
        expect_docs(tmp_path("rand.txt"), s, n);
        if (iter % 4 == 0 || iter >= 58) {
            write_xz("rand.txt.xz", s, n);
            expect_docs(tmp_path("rand.txt.xz"), s, n);
        }
        free(s);
    }
}

static void test_jsonl(void)
{
    const char *text =
        "{\"text\": \"first \\u00e9\\n\", \"id\": 1}\n"
        "\n"
        "   \r\n"
        "{\"id\": 2, \"text\": \"\"}\n"          /* empty document skipped */
        "{\"text\": \"raw \xff bytes\"}\r\n"
        "{\"text\": \"no newline at end\"}";
    write_file("a.jsonl", text, strlen(text));
    corpus_reader *r;
    tempo_error err;
    char *paths[] = {(char *)tmp_path("a.jsonl")};
    CHECK(corpus_open(&r, paths, 1, &err) == 0);
    const uint8_t *doc;
    size_t len;
    CHECK(corpus_next(r, &doc, &len, &err) == 1 && len == 9 && !memcmp(doc, "first \xc3\xa9\n", 9));
    CHECK(corpus_next(r, &doc, &len, &err) == 1 && len == 11 && !memcmp(doc, "raw \xff bytes", 11));
    CHECK(corpus_next(r, &doc, &len, &err) == 1 && len == 17);
    CHECK(corpus_next(r, &doc, &len, &err) == 0);
    CHECK(corpus_file_at(r, 0)->docs == 3);
    corpus_close(r);

    struct { const char *text; const char *want; } bad[] = {
        {"{\"text\": \"ok\"}\n{\"text\": \"ok\"}\n{\"text\": tru}\n", "bad.jsonl:3: malformed JSON: column 10: "},
        {"{\"text\": \"ok\"}\n[1, 2]\n", "bad.jsonl:2: not a JSON object"},
        {"{\"body\": \"x\"}\n", "bad.jsonl:1: no string field \"text\""},
        {"\n\n{\"text\": 5}\n", "bad.jsonl:3: no string field \"text\""},
        {"{\"text\": \"unterminated}\n{\"text\": \"x\"}\n", "bad.jsonl:1: malformed JSON: column 10: unterminated string"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        write_file("bad.jsonl", bad[c].text, strlen(bad[c].text));
        paths[0] = (char *)tmp_path("bad.jsonl");
        CHECK(corpus_open(&r, paths, 1, &err) == 0);
        int rc;
        while ((rc = corpus_next(r, &doc, &len, &err)) == 1) {
        }
        CHECK(rc == -1);
        CHECK_MSG(strstr(err.msg, bad[c].want) != NULL, "'%s' lacks '%s'", err.msg, bad[c].want);
        tempo_error again;
        CHECK(corpus_next(r, &doc, &len, &again) == -1 && !strcmp(again.msg, err.msg)); /* sticky */
        corpus_close(r);
    }
    /* a line longer than the read buffer, compressed */
    size_t big = (3u << 20) + 123;
    char *line = malloc(big + 32);
    int k = sprintf(line, "{\"text\": \"");
    memset(line + k, 'x', big);
    strcpy(line + k + big, "\"}\n");
    write_xz("big.jsonl.xz", line, strlen(line));
    paths[0] = (char *)tmp_path("big.jsonl.xz");
    CHECK(corpus_open(&r, paths, 1, &err) == 0);
    CHECK(corpus_next(r, &doc, &len, &err) == 1 && len == big && doc[0] == 'x' && doc[big - 1] == 'x');
    CHECK(corpus_next(r, &doc, &len, &err) == 0);
    corpus_close(r);
    free(line);
}

static void test_folders_and_errors(void)
{
    char sub[128];
    snprintf(sub, sizeof sub, "%s/folder", tmp_dir);
    CHECK(mkdir(sub, 0777) == 0);
    write_file("folder/b.txt", "B\n\x1e\n", 4);
    write_file("folder/a.jsonl", "{\"text\": \"A\"}\n", 14);
    write_file("folder/c.txt.xz", "", 0); /* invalid xz (empty) */
    write_file("folder/notes.md", "ignored", 7);
    write_xz("folder/d.txt.xz", "D\n", 2);
    corpus_reader *r;
    tempo_error err;
    char *paths[] = {sub, (char *)tmp_path("one.txt")};
    CHECK(corpus_open(&r, paths, 2, &err) == 0);
    CHECK(corpus_n_files(r) == 5);
    CHECK(strstr(corpus_file_at(r, 0)->path, "folder/a.jsonl") != NULL);
    CHECK(strstr(corpus_file_at(r, 1)->path, "folder/b.txt") != NULL);
    CHECK(strstr(corpus_file_at(r, 2)->path, "folder/c.txt.xz") != NULL);
    CHECK(strstr(corpus_file_at(r, 3)->path, "folder/d.txt.xz") != NULL);
    CHECK(corpus_file_at(r, 0)->format == CORPUS_JSONL && corpus_file_at(r, 3)->xz == 1);
    const uint8_t *doc;
    size_t len;
    CHECK(corpus_next(r, &doc, &len, &err) == 1 && len == 1 && doc[0] == 'A');
    CHECK(strstr(corpus_current_path(r), "a.jsonl") != NULL);
    CHECK(corpus_next(r, &doc, &len, &err) == 1 && len == 2 && doc[0] == 'B');
    CHECK(corpus_next(r, &doc, &len, &err) == -1);
    CHECK_MSG(strstr(err.msg, "c.txt.xz: corrupt xz data") != NULL, "%s", err.msg);
    corpus_close(r);

    /* truncated and corrupted xz */
    char text[5000];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (char)('a' + i * 7 % 26);
    size_t cap = 8000, out_len = 0;
    uint8_t *xz = malloc(cap);
    CHECK(lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, NULL, (uint8_t *)text, sizeof text, xz, &out_len, cap) == LZMA_OK);
    write_file("trunc.txt.xz", xz, out_len / 2);
    xz[out_len / 2] ^= 0x55;
    write_file("flip.txt.xz", xz, out_len);
    free(xz);
    const char *bad_files[] = {"trunc.txt.xz", "flip.txt.xz"};
    for (int i = 0; i < 2; i++) {
        char *p[] = {(char *)tmp_path(bad_files[i])};
        CHECK(corpus_open(&r, p, 1, &err) == 0);
        int rc;
        while ((rc = corpus_next(r, &doc, &len, &err)) == 1) {
        }
        CHECK(rc == -1);
        CHECK_MSG(strstr(err.msg, bad_files[i]) && strstr(err.msg, ": corrupt xz data"), "%s", err.msg);
        corpus_close(r);
    }

    char *missing[] = {(char *)tmp_path("nope.txt")};
    CHECK(corpus_open(&r, missing, 1, &err) == -1);
    CHECK_MSG(strstr(err.msg, "nope.txt: cannot open: No such file or directory") != NULL, "%s", err.msg);
    char empty_dir[128];
    snprintf(empty_dir, sizeof empty_dir, "%s/empty", tmp_dir);
    CHECK(mkdir(empty_dir, 0777) == 0);
    char *empty[] = {empty_dir};
    CHECK(corpus_open(&r, empty, 1, &err) == -1);
    CHECK_MSG(strstr(err.msg, "empty: no .txt, .jsonl, .txt.xz or .jsonl.xz files") != NULL, "%s", err.msg);
    rmdir(empty_dir);
}

/* Figures from the data READMEs: tiny/val.txt has 21 documents; the corpus
 * val split has 257 documents and 5,067,016 text bytes (5,067,530 with framing). */
static void test_shared_data(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny/val.txt", test_data_dir());
    corpus_reader *r;
    tempo_error err;
    char *paths[] = {path};
    CHECK_MSG(corpus_open(&r, paths, 1, &err) == 0, "%s", err.msg);
    const uint8_t *doc;
    size_t len;
    int rc;
    uint64_t docs = 0, bytes = 0;
    while ((rc = corpus_next(r, &doc, &len, &err)) == 1) {
        docs++;
        bytes += len;
        CHECK(doc[len - 1] == '\n');
    }
    CHECK(rc == 0 && docs == 21 && bytes == 115485 - 2 * 21);
    CHECK(!strcmp(corpus_file_at(r, 0)->sha256,
                  "3f233d82c47ab3dafacf616be54993a66bb7eace5d227709981355a4f00ccdd3"));
    corpus_close(r);

    snprintf(path, sizeof path, "%s/corpus/val.txt.xz", test_data_dir());
    CHECK_MSG(corpus_open(&r, paths, 1, &err) == 0, "%s", err.msg);
    docs = bytes = 0;
    while ((rc = corpus_next(r, &doc, &len, &err)) == 1) {
        docs++;
        bytes += len;
    }
    CHECK_MSG(rc == 0, "%s", err.msg);
    CHECK_MSG(docs == 257 && bytes == 5067016, "%llu docs, %llu bytes", (unsigned long long)docs,
              (unsigned long long)bytes);
    const corpus_file *f = corpus_file_at(r, 0);
    CHECK(f->bytes == 5067530 && f->doc_bytes == 5067016 && f->docs == 257);
    CHECK(!strcmp(f->sha256, "8f16a8c182b487bd4208b59a606ca11c70b54afeeb6db4a0cd8e0c5f39b7d4f9"));
    corpus_close(r);
}

int main(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/tempo_test_corpus_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_separator_rules);
    RUN(test_random_contents);
    RUN(test_jsonl);
    RUN(test_folders_and_errors);
    RUN(test_shared_data);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return test_summary("test_corpus");
}
