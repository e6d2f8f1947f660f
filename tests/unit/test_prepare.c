/* test_prepare.c - the prepare pipeline end to end on the tiny fixture:
 * outputs decode back to the input text, meta.json figures, determinism over
 * thread counts, the held-out share, caching (reuse, mtime, options, force),
 * the document sampler, bad inputs failing before anything is written, and
 * the temporaries of killed runs removed by the next. */
#include "test.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include "core/fileio.h"
#include "core/json.h"
#include "data/corpus.h"
#include "data/doc_sample.h"
#include "data/prepare.h"
#include "data/token_store.h"
#include "data/tokenizer.h"

static char tmp_dir[64];

static char *tmp_path(const char *name)
{
    static char path[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", tmp_dir, name);
    return path[k];
}

static char *data_path(const char *rel)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_data_dir(), rel);
    return path;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, n, f) == n);
    if (f)
        fclose(f);
}

/* Run prepare; returns rc; meta (if not NULL) gets the parsed meta object. */
static int run(const char *out, char **inputs, int n, const char *val, int vocab, double share, int threads,
               int force, int *reused, json_value **meta, tempo_error *err)
{
    prepare_options o;
    prepare_defaults(&o);
    o.out_dir = out;
    o.inputs = inputs;
    o.n_inputs = n;
    o.val_path = val;
    o.vocab = vocab;
    o.val_share = share;
    o.threads = threads;
    o.force = force;
    strbuf m = {0};
    int r = 0;
    tempo_error_clear(err);
    int rc = prepare_run(&o, &m, &r, err);
    if (reused)
        *reused = r;
    if (meta) {
        *meta = NULL;
        if (rc == 0)
            CHECK(json_parse(m.data, m.len, meta, err) == 0);
    }
    strbuf_free(&m);
    return rc;
}

/* The text of all documents of paths, concatenated (framing removed). */
static void corpus_text(char **paths, int n, strbuf *out)
{
    corpus_reader *r;
    tempo_error err;
    CHECK(corpus_open(&r, paths, n, &err) == 0);
    const uint8_t *doc;
    size_t len;
    while (corpus_next(r, &doc, &len, &err) == 1)
        strbuf_append(out, (const char *)doc, len);
    corpus_close(r);
}

static int files_equal(const char *a, const char *b)
{
    char *x, *y;
    size_t nx, ny;
    tempo_error err;
    if (file_read_all(a, &x, &nx, 0, &err))
        return 0;
    if (file_read_all(b, &y, &ny, 0, &err)) {
        free(x);
        return 0;
    }
    int same = nx == ny && !memcmp(x, y, nx);
    free(x);
    free(y);
    return same;
}

static void test_with_val_file(void)
{
    char train_path[1024];
    snprintf(train_path, sizeof train_path, "%s", data_path("tiny/train.txt"));
    char *inputs[] = {train_path};
    char val[1024];
    snprintf(val, sizeof val, "%s", data_path("tiny/val.txt"));
    const char *out = tmp_path("a");
    tempo_error err;
    json_value *m;
    int reused;
    CHECK_MSG(run(out, inputs, 1, val, 512, 0.005, 2, 0, &reused, &m, &err) == 0, "%s", err.msg);
    if (!m)
        return;
    CHECK(reused == 0);
    CHECK(json_get_number(m, "vocab", 0) == 512 && json_get_number(m, "total_vocab", 0) == 513);
    CHECK(json_get_number(m, "sep_id", 0) == 512);
    const json_value *src = json_get(m, "sources");
    CHECK(src && src->type == JSON_ARRAY && src->n == 2);
    if (src && src->n == 2) {
        CHECK(!strcmp(json_get_string(&src->items[0], "sha256"),
                      "813b15dfd522a2f22b2842c50f6afc3c0f8ecdfbf37ea83ddae9911ef85f049f"));
        CHECK(json_get_number(&src->items[0], "documents", 0) == 77);
        CHECK(json_get_number(&src->items[0], "bytes", 0) == 1008021);
        CHECK(!strcmp(json_get_string(&src->items[1], "role"), "val"));
        CHECK(json_get_number(&src->items[1], "documents", 0) == 21);
    }
    const json_value *train = json_get(m, "train"), *valp = json_get(m, "val");
    CHECK(json_get_number(train, "documents", 0) == 77);
    CHECK(json_get_number(train, "bytes", 0) == 1008021 - 2 * 77);
    CHECK(json_get_number(valp, "documents", 0) == 21);
    CHECK(json_get_number(valp, "bytes", 0) == 115485 - 2 * 21);
    CHECK(json_get_number(train, "bytes_per_token", 0) > 1.8);

    /* the token files decode back to the input text, separators where documents end */
    tokenizer *t = NULL;
    CHECK(tok_load(&t, tmp_path("a/tokenizer.tiktoken"), &err) == 0 && tok_n_regular(t) == 512);
    const char *tok_files[2] = {"a/train.tok", "a/val.tok"};
    char *srcs[2] = {inputs[0], val};
    for (int k = 0; k < 2 && t; k++) {
        token_file tf;
        CHECK_MSG(token_file_open(&tf, tmp_path(tok_files[k]), &err) == 0, "%s", err.msg);
        CHECK(tf.vocab_size == 513 && tf.dtype_bytes == 2);
        CHECK((double)tf.n_tokens == json_get_number(k ? valp : train, "tokens", 0));
        int32_t *ids = malloc(tf.n_tokens * sizeof *ids);
        token_file_read(&tf, 0, tf.n_tokens, ids);
        strbuf dec = {0}, want = {0};
        CHECK(tok_decode(t, ids, tf.n_tokens, &dec) == 0);
        corpus_text(&srcs[k], 1, &want);
        CHECK(dec.len == want.len && tf.n_bytes == want.len && !memcmp(dec.data, want.data, dec.len));
        /* every document is followed by a separator: the ids between separators decode to one document */
        corpus_reader *r;
        CHECK(corpus_open(&r, &srcs[k], 1, &err) == 0);
        size_t pos = 1;
        const uint8_t *doc;
        size_t len;
        int docs_ok = 1;
        while (corpus_next(r, &doc, &len, &err) == 1) {
            size_t end = pos;
            while (end < tf.n_tokens && ids[end] != 512)
                end++;
            strbuf one = {0};
            tok_decode(t, ids + pos, end - pos, &one);
            docs_ok &= one.len == len && !memcmp(one.data, doc, len);
            strbuf_free(&one);
            pos = end + 1;
        }
        CHECK(docs_ok && pos == tf.n_tokens);
        corpus_close(r);
        strbuf_free(&dec);
        strbuf_free(&want);
        free(ids);
        token_file_close(&tf);
    }
    tok_free(t);
    json_free(m);

    /* one thread gives identical files */
    CHECK(run(tmp_path("b"), inputs, 1, val, 512, 0.005, 1, 0, NULL, NULL, &err) == 0);
    CHECK(files_equal(tmp_path("a/tokenizer.tiktoken"), tmp_path("b/tokenizer.tiktoken")));
    CHECK(files_equal(tmp_path("a/train.tok"), tmp_path("b/train.tok")));
    CHECK(files_equal(tmp_path("a/val.tok"), tmp_path("b/val.tok")));

    /* the input is also the val file: refused */
    char *same[] = {val};
    CHECK(run(tmp_path("c"), same, 1, val, 512, 0.005, 1, 0, NULL, NULL, &err) == -1);
    CHECK(strstr(err.msg, "is both an input and the --val file") != NULL && err.code == 2);
}

static void test_held_out_share(void)
{
    char *inputs[] = {data_path("tiny/train.txt")};
    tempo_error err;
    json_value *m;
    /* 77 documents at 0.5 %: the share picks none, so the smallest draw is held out */
    CHECK_MSG(run(tmp_path("s1"), inputs, 1, NULL, 300, 0.005, 2, 0, NULL, &m, &err) == 0, "%s", err.msg);
    CHECK(json_get_number(json_get(m, "val"), "documents", 0) == 1);
    CHECK(json_get_number(json_get(m, "train"), "documents", 0) == 76);
    double total = json_get_number(json_get(m, "val"), "bytes", 0) + json_get_number(json_get(m, "train"), "bytes", 0);
    CHECK(total == 1008021 - 2 * 77);
    json_free(m);
    /* a larger share holds out a spread of documents */
    CHECK(run(tmp_path("s2"), inputs, 1, NULL, 300, 0.3, 2, 0, NULL, &m, &err) == 0);
    double v = json_get_number(json_get(m, "val"), "documents", 0);
    CHECK_MSG(v >= 10 && v <= 40, "%g val documents", v);
    CHECK(json_get_number(json_get(m, "train"), "documents", 0) == 77 - v);
    json_free(m);
    /* share 0: no validation documents, val.tok holds the separator only */
    CHECK(run(tmp_path("s3"), inputs, 1, NULL, 300, 0, 2, 0, NULL, &m, &err) == 0);
    CHECK(json_get_number(json_get(m, "val"), "documents", -1) == 0);
    CHECK(json_get_number(json_get(m, "val"), "tokens", -1) == 1);
    json_free(m);
}

static void test_cache(void)
{
    /* a private copy so its mtime can change */
    char *text;
    size_t len;
    tempo_error err;
    CHECK(file_read_all(data_path("tiny/val.txt"), &text, &len, 0, &err) == 0);
    char *copy = tmp_path("copy.txt");
    char copy_path[256];
    snprintf(copy_path, sizeof copy_path, "%s", copy);
    write_file(copy_path, text, len);
    free(text);
    char *inputs[] = {copy_path};
    char out[256];
    snprintf(out, sizeof out, "%s", tmp_path("cache"));
    int reused = -1;
    json_value *m1, *m2;
    CHECK(run(out, inputs, 1, NULL, 300, 0.1, 2, 0, &reused, &m1, &err) == 0 && reused == 0);
    CHECK(run(out, inputs, 1, NULL, 300, 0.1, 2, 0, &reused, &m2, &err) == 0 && reused == 1);
    CHECK(m1 && m2 && !strcmp(json_get_string(m1, "cache_key"), json_get_string(m2, "cache_key")));
    json_free(m1);
    json_free(m2);
    CHECK(run(out, inputs, 1, NULL, 300, 0.1, 2, 1, &reused, NULL, &err) == 0 && reused == 0); /* force */
    CHECK(run(out, inputs, 1, NULL, 301, 0.1, 2, 0, &reused, NULL, &err) == 0 && reused == 0); /* vocab */
    CHECK(run(out, inputs, 1, NULL, 301, 0.2, 2, 0, &reused, NULL, &err) == 0 && reused == 0); /* share */
    CHECK(run(out, inputs, 1, NULL, 301, 0.2, 1, 0, &reused, NULL, &err) == 0 && reused == 1); /* threads: same output */
    struct utimbuf times = {1000000000, 1000000000};
    CHECK(utime(copy_path, &times) == 0);
    CHECK(run(out, inputs, 1, NULL, 301, 0.2, 2, 0, &reused, NULL, &err) == 0 && reused == 0); /* mtime */
    CHECK(run(out, inputs, 1, NULL, 301, 0.2, 2, 0, &reused, NULL, &err) == 0 && reused == 1);
    /* a meta.json whose vocab no int holds (damaged or edited) is not reused, and not cast */
    char meta_path[300];
    snprintf(meta_path, sizeof meta_path, "%s/meta.json", out);
    CHECK(file_read_all(meta_path, &text, &len, 0, &err) == 0);
    char *at = strstr(text, "\"vocab\":");
    CHECK(at != NULL);
    if (at) {
        char *num = at + 8, *end = num;
        while (*end >= '0' && *end <= '9')
            end++;
        strbuf edited = {0};
        strbuf_append(&edited, text, (size_t)(num - text));
        strbuf_puts(&edited, "1e300");
        strbuf_puts(&edited, end);
        write_file(meta_path, edited.data, edited.len);
        strbuf_free(&edited);
    }
    free(text);
    CHECK(run(out, inputs, 1, NULL, 301, 0.2, 2, 0, &reused, NULL, &err) == 0 && reused == 0);
    CHECK(run(out, inputs, 1, NULL, 301, 0.2, 2, 0, &reused, NULL, &err) == 0 && reused == 1);
    /* a damaged output is not reused */
    char tok[300];
    snprintf(tok, sizeof tok, "%s/train.tok", out);
    CHECK(truncate(tok, 100) == 0);
    CHECK(run(out, inputs, 1, NULL, 301, 0.2, 2, 0, &reused, NULL, &err) == 0 && reused == 0);
    /* a jsonl input works the same way */
    const char *jl = "{\"text\": \"first document\\n\"}\n\n{\"text\": \"second one\\n\"}\n{\"text\": \"third\\n\"}\n";
    char jpath[256];
    snprintf(jpath, sizeof jpath, "%s", tmp_path("docs.jsonl"));
    write_file(jpath, jl, strlen(jl));
    char *jin[] = {jpath};
    CHECK_MSG(run(tmp_path("jl"), jin, 1, NULL, 260, 0.005, 2, 0, NULL, &m1, &err) == 0, "%s", err.msg);
    CHECK(json_get_number(json_get(m1, "train"), "documents", 0) + json_get_number(json_get(m1, "val"), "documents", 0) == 3);
    json_free(m1);
}

static void expect_fail(char **inputs, int n, const char *val, int vocab, double share, const char *want,
                        int code)
{
    tempo_error err;
    const char *out = tmp_path("never");
    CHECK(run(out, inputs, n, val, vocab, share, 2, 0, NULL, NULL, &err) == -1);
    CHECK_MSG(strstr(err.msg, want) != NULL && err.code == code, "'%s' (code %d) lacks '%s'", err.msg, err.code, want);
    CHECK_MSG(!path_exists(out), "%s created", out); /* nothing written */
}

static void test_errors(void)
{
    char missing[256], empty_dir[256], empty_doc[256], bad_jsonl[256], one[256];
    snprintf(missing, sizeof missing, "%s", tmp_path("missing.txt"));
    snprintf(empty_dir, sizeof empty_dir, "%s", tmp_path("emptydir"));
    snprintf(empty_doc, sizeof empty_doc, "%s", tmp_path("empty.txt"));
    snprintf(bad_jsonl, sizeof bad_jsonl, "%s", tmp_path("bad.jsonl"));
    snprintf(one, sizeof one, "%s", tmp_path("one.txt"));
    CHECK(mkdir(empty_dir, 0777) == 0);
    write_file(empty_doc, "\x1e\n\x1e\n", 4);
    write_file(bad_jsonl, "{\"text\": \"ok\"}\n{\"text\": nope}\n", 30);
    write_file(one, "just one document\n", 18);
    char *in[1];
    in[0] = missing;
    expect_fail(in, 1, NULL, 300, 0.005, "missing.txt: cannot open: No such file or directory", 1);
    in[0] = empty_dir;
    expect_fail(in, 1, NULL, 300, 0.005, "emptydir: no .txt, .jsonl, .txt.xz or .jsonl.xz files", 1);
    in[0] = empty_doc;
    expect_fail(in, 1, NULL, 300, 0.005, "empty.txt: no documents", 1);
    char *two[] = {empty_doc, empty_doc};
    expect_fail(two, 2, NULL, 300, 0.005, "inputs: no documents in 2 files", 1);
    in[0] = bad_jsonl;
    expect_fail(in, 1, NULL, 300, 0.005, "bad.jsonl:2: malformed JSON: column 10", 1);
    in[0] = one;
    expect_fail(in, 1, NULL, 300, 0.005, "one.txt: only 1 document", 1);
    expect_fail(in, 1, empty_doc, 300, 0.005, "empty.txt: no documents", 1);
    expect_fail(in, 1, missing, 300, 0.005, "missing.txt: cannot open", 1);
    expect_fail(in, 1, NULL, 255, 0.005, "vocab 255: must be from 256 to 65536", 2);
    expect_fail(in, 1, NULL, 65537, 0.005, "vocab 65537", 2);
    expect_fail(in, 1, NULL, 300, 0.9, "val-share 0.9", 2);
    expect_fail(in, 0, NULL, 300, 0.005, "no INPUT", 2);
    /* a single document is fine with an explicit val file or no val share */
    tempo_error err;
    CHECK(run(tmp_path("one_ok"), in, 1, NULL, 300, 0, 1, 0, NULL, NULL, &err) == 0);
    /* out path that is a file */
    CHECK(run(one, in, 1, NULL, 300, 0, 1, 0, NULL, NULL, &err) == -1 && strstr(err.msg, "is not a folder"));
}

/* The pid of a process that has exited (forked and waited for): nothing
 * runs under it for a good while, since the kernel hands pids out in turn. */
static pid_t dead_pid(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    CHECK(pid > 0 && waitpid(pid, NULL, 0) == pid);
    return pid;
}

/* A prepare killed mid-write leaves NAME.tmp.<pid>; the next run in the same
 * folder removes those of dead processes, whether it rebuilds or reuses, and
 * leaves a live process's (a concurrent run) and anything else alone
 * (issue 9: seven kills left seven of each). */
static void test_stale_temporaries(void)
{
    char *inputs[] = {data_path("tiny/val.txt")};
    char out[256], path[512];
    snprintf(out, sizeof out, "%s", tmp_path("stale"));
    CHECK(mkdir(out, 0777) == 0);
    pid_t dead = dead_pid(), live = getppid();
    const char *stale[] = {"train.tok", "val.tok", "tokenizer.tiktoken", "meta.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s.tmp.%d", out, stale[i], (int)dead);
        write_file(path, "partial", 7);
    }
    const char *keep[] = {"train.tok.tmp.x12", "notes.tmp.", "val.tok.tmp.99999999999", ".tmp.1"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", out, keep[i]);
        write_file(path, "other", 5);
    }
    snprintf(path, sizeof path, "%s/val.tok.tmp.%d", out, (int)live);
    write_file(path, "a live writer's", 15);
    snprintf(path, sizeof path, "%s/dir.tmp.%d", out, (int)dead);
    CHECK(mkdir(path, 0777) == 0); /* not a file: not ours */
    tempo_error err;
    int reused = -1;
    CHECK_MSG(run(out, inputs, 1, NULL, 300, 0.1, 1, 0, &reused, NULL, &err) == 0 && reused == 0, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s.tmp.%d", out, stale[i], (int)dead);
        CHECK_MSG(!path_exists(path), "%s was left", path);
        snprintf(path, sizeof path, "%s/%s", out, keep[i]);
        CHECK_MSG(path_exists(path), "%s was removed", path);
    }
    snprintf(path, sizeof path, "%s/val.tok.tmp.%d", out, (int)live);
    CHECK_MSG(path_exists(path), "a live process's %s was removed", path);
    snprintf(path, sizeof path, "%s/dir.tmp.%d", out, (int)dead);
    CHECK(path_exists(path));
    /* a reused folder is cleaned too */
    snprintf(path, sizeof path, "%s/train.tok.tmp.%d", out, (int)dead);
    write_file(path, "partial", 7);
    CHECK(run(out, inputs, 1, NULL, 300, 0.1, 1, 0, &reused, NULL, &err) == 0 && reused == 1);
    CHECK_MSG(!path_exists(path), "%s was left by a reusing run", path);
    /* the function itself: counts what it removed; our own temporaries stay */
    snprintf(path, sizeof path, "%s/a.tmp.%d", out, (int)dead);
    write_file(path, "x", 1);
    snprintf(path, sizeof path, "%s/b.tmp.%d", out, (int)getpid());
    write_file(path, "x", 1);
    CHECK(atomic_remove_stale(out) == 1 && path_exists(path));
    CHECK(atomic_remove_stale(out) == 0);
    CHECK(atomic_remove_stale(tmp_path("no-such-folder")) == 0);
}

/* The bottom-k sample does not depend on the order of offers. */
static void test_sampler(void)
{
    tempo_error err;
    uint8_t text[100];
    memset(text, 'x', sizeof text);
    uint64_t keys[50];
    for (int i = 0; i < 50; i++)
        keys[i] = (uint64_t)(i * 7919 % 101);
    for (int order = 0; order < 2; order++) {
        doc_sampler *s;
        CHECK(doc_sampler_new(&s, 1000, &err) == 0);
        for (int k = 0; k < 50; k++) {
            int i = order ? 49 - k : k;
            CHECK(doc_sampler_offer(s, keys[i], (uint64_t)i, text, 10 + (size_t)i, &err) == 0);
        }
        doc_sampler_finish(s);
        /* expected: indices sorted by key, taken until >= 1000 bytes */
        int chosen[50] = {0}, taken = 0;
        uint64_t bytes = 0;
        for (uint64_t key = 0; key <= 100 && bytes < 1000; key++)
            for (int i = 0; i < 50; i++)
                if (keys[i] == key && bytes < 1000) {
                    chosen[i] = 1;
                    bytes += 10 + (uint64_t)i;
                    taken++;
                }
        CHECK(doc_sampler_count(s) == (size_t)taken && doc_sampler_bytes(s) == bytes);
        uint64_t prev = 0;
        for (size_t j = 0; j < doc_sampler_count(s); j++) {
            size_t len;
            uint64_t index;
            doc_sampler_doc(s, j, &len, &index);
            CHECK(chosen[index] && len == 10 + index && (j == 0 || index > prev));
            prev = index;
        }
        doc_sampler_free(s);
    }
}

int main(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/tempo_test_prepare_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_sampler);
    RUN(test_with_val_file);
    RUN(test_held_out_share);
    RUN(test_cache);
    RUN(test_errors);
    RUN(test_stale_temporaries);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return test_summary("test_prepare");
}
