/* test_judge_files.c - the judge's file handling: submission fingerprint and
 * copy (judge/submission.h), model checks (judge/model_check.h), the dev
 * split and .xz reading of the training data (judge/train_data.h). */
#include <fcntl.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/safetensors.h"
#include "judge/model_check.h"
#include "judge/submission.h"
#include "judge/train_data.h"
#include "test.h"

static char dir[] = "/tmp/test_judge_files.XXXXXX";

static const char *p(const char *name)
{
    static char buf[8][256];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void test_submission_hash_and_copy(void)
{
    tempo_error err;
    mkdir(p("sub"), 0755);
    mkdir(p("sub/lib"), 0755);
    put(p("sub/manifest.json"), "{}");
    put(p("sub/train.sh"), "#!/bin/sh\necho hi\n");
    chmod(p("sub/train.sh"), 0755);
    put(p("sub/lib/a.txt"), "aaa");
    char h1[65], h2[65];
    uint64_t nf, nb;
    CHECK(judge_submission_hash(p("sub"), h1, &nf, &nb, &err) == 0);
    CHECK(nf == 3 && nb == 2 + 18 + 3);
    CHECK(judge_submission_hash(p("sub"), h2, NULL, NULL, &err) == 0 && !strcmp(h1, h2));
    /* an empty folder changes nothing; a renamed file or changed byte does */
    mkdir(p("sub/empty"), 0755);
    CHECK(judge_submission_hash(p("sub"), h2, NULL, NULL, &err) == 0 && !strcmp(h1, h2));
    put(p("sub/lib/a.txt"), "aab");
    CHECK(judge_submission_hash(p("sub"), h2, NULL, NULL, &err) == 0 && strcmp(h1, h2));
    put(p("sub/lib/a.txt"), "aaa");
    rename(p("sub/lib/a.txt"), p("sub/lib/b.txt"));
    CHECK(judge_submission_hash(p("sub"), h2, NULL, NULL, &err) == 0 && strcmp(h1, h2));
    rename(p("sub/lib/b.txt"), p("sub/lib/a.txt"));

    CHECK(judge_submission_copy(p("sub"), p("copy"), &err) == 0);
    CHECK(judge_submission_hash(p("copy"), h2, NULL, NULL, &err) == 0 && !strcmp(h1, h2));
    struct stat st;
    CHECK(stat(p("copy/train.sh"), &st) == 0 && (st.st_mode & 0111));
    CHECK(stat(p("copy/empty"), &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(judge_submission_copy(p("sub"), p("copy"), &err) == -1 && strstr(err.msg, "already exists"));
    CHECK(judge_submission_copy(p("sub"), p("sub/lib/inside"), &err) == -1 && strstr(err.msg, "inside"));

    CHECK(symlink("/etc/hostname", p("sub/lib/link")) == 0);
    CHECK(judge_submission_hash(p("sub"), h2, NULL, NULL, &err) == -1);
    CHECK(strstr(err.msg, "lib/link: symlinks are not allowed") != NULL);
    CHECK(judge_submission_copy(p("sub"), p("copy2"), &err) == -1);
    unlink(p("sub/lib/link"));
    CHECK(mkfifo(p("sub/fifo"), 0644) == 0);
    CHECK(judge_submission_hash(p("sub"), h2, NULL, NULL, &err) == -1 && strstr(err.msg, "fifo: not a regular"));
    unlink(p("sub/fifo"));
    CHECK(judge_submission_hash(p("missing"), h2, NULL, NULL, &err) == -1);

    char **rel;
    size_t n;
    CHECK(judge_tree_files(p("sub"), &rel, &n, &err) == 0);
    CHECK(n == 3 && !strcmp(rel[0], "lib/a.txt") && !strcmp(rel[1], "manifest.json") && !strcmp(rel[2], "train.sh"));
    judge_tree_free(rel, n);
}

static void write_model(const char *path, float x2, int with_meta)
{
    float w[4] = {0.5f, -1, x2, 3};
    st_write_tensor t = {"w", w, 2, {2, 2}};
    st_meta meta[2] = {{"config", "{\"d_model\":2}"}, {"tokenizer", "tok"}};
    tempo_error err;
    CHECK(safetensors_write(path, &t, 1, meta, with_meta ? 2 : 0, &err) == 0);
}

static void test_model_check(void)
{
    tempo_error err;
    write_model(p("ok.safetensors"), 2, 1);
    CHECK(judge_model_check(p("ok.safetensors"), &err) == JUDGE_MODEL_OK);
    write_model(p("nan.safetensors"), NAN, 1);
    CHECK(judge_model_check(p("nan.safetensors"), &err) == JUDGE_MODEL_NONFINITE);
    CHECK(strstr(err.msg, "non-finite values (tensor w)") != NULL);
    write_model(p("inf.safetensors"), INFINITY, 1);
    CHECK(judge_model_check(p("inf.safetensors"), &err) == JUDGE_MODEL_NONFINITE);
    write_model(p("nometa.safetensors"), 2, 0);
    CHECK(judge_model_check(p("nometa.safetensors"), &err) == JUDGE_MODEL_INVALID);
    CHECK(strstr(err.msg, "not a tempo model") != NULL);
    /* truncated: cut the last 5 bytes */
    char *data;
    size_t n;
    CHECK(file_read_all(p("ok.safetensors"), &data, &n, 0, &err) == 0);
    FILE *f = fopen(p("cut.safetensors"), "wb");
    fwrite(data, 1, n - 5, f);
    fclose(f);
    free(data);
    CHECK(judge_model_check(p("cut.safetensors"), &err) == JUDGE_MODEL_INVALID);
    CHECK(strstr(err.msg, "cut.safetensors") != NULL);
    put(p("text.safetensors"), "hello, I am not a model at all, really not");
    CHECK(judge_model_check(p("text.safetensors"), &err) == JUDGE_MODEL_INVALID);
    CHECK(judge_model_check(p("absent.safetensors"), &err) == JUDGE_MODEL_INVALID);
}

/* Documents of a txt corpus buffer, for comparing splits. */
static int count_docs(const char *s)
{
    int n = 0;
    for (const char *q = s; (q = strstr(q, "\n\x1e\n")); q += 3)
        n++;
    return n;
}

/* Write text (len bytes) as the file name, split it with target, and return
 * the dev document count; *tr / *dv receive the two sides (malloc'd). */
static size_t split(const char *name, const char *text, size_t len, size_t target, char **tr, size_t *tl,
                    char **dv, size_t *dl)
{
    FILE *f = fopen(p(name), "wb");
    fwrite(text, 1, len, f);
    fclose(f);
    judge_docs docs;
    tempo_error err;
    *tr = *dv = NULL;
    FILE *ft = open_memstream(tr, tl), *fd = open_memstream(dv, dl);
    size_t picked = 0;
    if (judge_docs_read(p(name), &docs, &err) == 0) {
        picked = judge_split_dev(&docs, target, ft, fd);
        judge_docs_free(&docs);
    } else {
        CHECK_MSG(0, "%s", err.msg);
    }
    fclose(ft);
    fclose(fd);
    return picked;
}

static void test_split_dev_txt(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    for (int i = 0; i < 40; i++) {
        fprintf(m, "document %d\n", i);
        for (int j = 0; j < (i % 7 == 3 ? 200 : 20); j++)
            fprintf(m, "line %d of document %d with some words\n", j, i);
        fputs("\x1e\n", m);
    }
    fclose(m);
    char *tr, *dv;
    size_t tl, dl;
    size_t target = 4000;
    size_t picked = split("a.txt", text, len, target, &tr, &tl, &dv, &dl);
    CHECK(picked > 0);
    CHECK(tl + dl == len);
    CHECK(dl <= target && dl >= target / 2);
    CHECK(count_docs(dv) == (int)picked && count_docs(tr) == 40 - (int)picked);
    /* every document is in exactly one side, whole */
    for (int i = 0; i < 40; i++) {
        char head[32];
        snprintf(head, sizeof head, "document %d\n", i);
        int in_t = strstr(tr, head) != NULL, in_d = strstr(dv, head) != NULL;
        CHECK(in_t + in_d == 1);
    }
    CHECK(strstr(dv, "document 39\n") != NULL); /* the last ones are preferred */
    free(tr);
    free(dv);

    /* small documents are preferred to one large recent one (a mixed dev set) */
    char mix[4096] = "";
    for (int i = 0; i < 10; i++)
        strcat(mix, "small document with some words in it, short enough here.......................................\n\x1e\n");
    for (int i = 0; i < 4; i++)
        strcat(mix, "the one large last document, four times the size of the others, goes to train; its line.\n");
    strcat(mix, "\x1e\n");
    CHECK(split("mix.txt", mix, strlen(mix), 800, &tr, &tl, &dv, &dl) == 5); /* 5 x 97 >= 400 */
    CHECK(strstr(dv, "large") == NULL && strstr(tr, "large") != NULL && count_docs(dv) == 5);
    free(tr);
    free(dv);

    /* one document only: nothing to split */
    const char *one = "only one\n\x1e\n";
    CHECK(split("one.txt", one, strlen(one), 100, &tr, &tl, &dv, &dl) == 0);
    CHECK(tl == strlen(one) && dl == 0);
    free(tr);
    free(dv);

    /* documents all larger than the target: the smallest recent one goes; a last document
     * without its separator gets one (and a line end) in its side */
    const char *big = "aaaaaaaaaa\n\x1e\nbbbbb\n\x1e\ncccccccc\n\x1e\nlast without separator";
    CHECK(split("big.txt", big, strlen(big), 4, &tr, &tl, &dv, &dl) == 1);
    CHECK(dv && !strcmp(dv, "bbbbb\n\x1e\n"));
    CHECK(tr && !strcmp(tr, "aaaaaaaaaa\n\x1e\ncccccccc\n\x1e\nlast without separator\n\x1e\n"));
    free(tr);
    free(dv);
    free(text);
}

static void test_split_dev_jsonl_and_xz(void)
{
    const char *jl = "{\"text\":\"a\"}\n{\"text\":\"bb\"}\n{\"text\":\"ccc\"}\n{\"text\":\"dddd\"}\n";
    char *tr, *dv;
    size_t tl, dl;
    CHECK(split("a.jsonl", jl, strlen(jl), 34, &tr, &tl, &dv, &dl) == 2);
    CHECK(!strcmp(dv, "{\"text\":\"ccc\"}\n{\"text\":\"dddd\"}\n"));
    CHECK(!strcmp(tr, "{\"text\":\"a\"}\n{\"text\":\"bb\"}\n"));
    free(tr);
    free(dv);

    /* .xz files are decompressed by the corpus reader; a corrupt one is an error naming it */
    const char *plain = "hello xz world\n\x1e\nsecond\n";
    uint8_t out[512];
    size_t pos = 0;
    CHECK(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, (const uint8_t *)plain, strlen(plain), out, &pos,
                                  sizeof out) == LZMA_OK);
    FILE *f = fopen(p("t.txt.xz"), "wb");
    fwrite(out, 1, pos, f);
    fclose(f);
    judge_docs docs;
    tempo_error err;
    CHECK(judge_docs_read(p("t.txt.xz"), &docs, &err) == 0);
    CHECK(docs.n == 2 && !docs.jsonl && docs.len == strlen(plain) + 2 &&
          !memcmp(docs.text, "hello xz world\n\x1e\nsecond\n\x1e\n", docs.len));
    judge_docs_free(&docs);
    out[pos / 2] ^= 0x55;
    f = fopen(p("bad.txt.xz"), "wb");
    fwrite(out, 1, pos, f);
    fclose(f);
    CHECK(judge_docs_read(p("bad.txt.xz"), &docs, &err) == -1 && strstr(err.msg, "bad.txt.xz") != NULL);
    char hex[65];
    CHECK(judge_sha256_file(p("t.txt.xz"), hex, &err) == 0 && strlen(hex) == 64);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    RUN(test_submission_hash_and_copy);
    RUN(test_model_check);
    RUN(test_split_dev_txt);
    RUN(test_split_dev_jsonl_and_xz);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_summary("test_judge_files");
}
