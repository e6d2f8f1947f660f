/* train_data.c - building, caching and verifying the training-only folder
 * handed to submissions (see train_data.h). */
#include "judge/train_data.h"
#include "core/text.h"
#include "core/json_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/sha256.h"
#include "core/strbuf.h"
#include "data/corpus.h"
#include "proc/runner.h"
#include "judge/submission.h"

#define DATA_FORMAT "tempo-judge-data 1"

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

int judge_sha256_file(const char *path, char hex[65], tempo_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tempo_fail(err, "%s: cannot open: %s", path, strerror(errno));
    char *buf = malloc(1 << 20);
    if (!buf) {
        close(fd);
        return tempo_fail(err, "%s: out of memory", path);
    }
    sha256_ctx c;
    sha256_init(&c);
    ssize_t n;
    while ((n = read(fd, buf, 1 << 20)) > 0)
        sha256_update(&c, buf, (size_t)n);
    int e = errno;
    close(fd);
    free(buf);
    if (n < 0)
        return tempo_fail(err, "%s: read failed: %s", path, strerror(e));
    uint8_t d[32];
    sha256_final(&c, d);
    sha256_hex(d, hex);
    return 0;
}

/* Append one document to d->text framed as its format frames it. */
static int docs_append(judge_docs *d, const uint8_t *doc, size_t len, strbuf *sb)
{
    sb->len = 0;
    if (d->jsonl) {
        jsonw w;
        jsonw_init(&w, sb);
        jsonw_object_begin(&w);
        jsonw_key(&w, "text");
        jsonw_string_n(&w, (const char *)doc, len);
        jsonw_object_end(&w);
        if (jsonw_finish(&w, NULL))
            return -1;
        strbuf_puts(sb, "\n");
    } else {
        strbuf_append(sb, (const char *)doc, len);
        if (doc[len - 1] != '\n') /* a last document without its line end */
            strbuf_puts(sb, "\n");
        strbuf_puts(sb, "\x1e\n");
    }
    if (sb->oom)
        return -1;
    if (d->n % 1024 == 0) {
        size_t *e = realloc(d->ends, (d->n + 1024) * sizeof *e);
        if (!e)
            return -1;
        d->ends = e;
    }
    if (d->len + sb->len > d->cap) {
        size_t cap = d->cap ? d->cap : 1 << 16;
        while (cap < d->len + sb->len)
            cap *= 2;
        unsigned char *t = realloc(d->text, cap);
        if (!t)
            return -1;
        d->text = t;
        d->cap = cap;
    }
    memcpy(d->text + d->len, sb->data, sb->len);
    d->len += sb->len;
    d->ends[d->n++] = d->len;
    return 0;
}

int judge_docs_read(const char *path, judge_docs *d, tempo_error *err)
{
    memset(d, 0, sizeof *d);
    char *paths[1] = {(char *)path};
    corpus_reader *r;
    if (corpus_open(&r, paths, 1, err))
        return -1;
    d->jsonl = corpus_file_at(r, 0)->format == CORPUS_JSONL;
    strbuf sb = {0};
    const uint8_t *doc;
    size_t len;
    int got;
    while ((got = corpus_next(r, &doc, &len, err)) == 1)
        if (docs_append(d, doc, len, &sb)) {
            got = tempo_fail(err, "%s: out of memory", path);
            break;
        }
    strbuf_free(&sb);
    corpus_close(r);
    if (got < 0) {
        judge_docs_free(d);
        return -1;
    }
    return 0;
}

void judge_docs_free(judge_docs *d)
{
    free(d->text);
    free(d->ends);
    memset(d, 0, sizeof *d);
}

/* sha256 (hex) of a corpus file's text, decompressed (the corpus reader
 * measures it while reading the documents). */
static int text_sha256(const char *path, char hex[65], tempo_error *err)
{
    char *paths[1] = {(char *)path};
    corpus_reader *r;
    if (corpus_open(&r, paths, 1, err))
        return -1;
    const uint8_t *doc;
    size_t len;
    int got;
    while ((got = corpus_next(r, &doc, &len, err)) == 1)
        ;
    if (got == 0)
        memcpy(hex, corpus_file_at(r, 0)->sha256, 65);
    corpus_close(r);
    return got;
}

size_t judge_split_dev(const judge_docs *d, size_t target, FILE *train_out, FILE *dev_out)
{
    size_t n = d->n;
    if (n < 2) {
        fwrite(d->text, 1, d->len, train_out);
        return 0;
    }
    unsigned char *pick = calloc(n, 1);
    if (!pick)
        return 0;
#define DOC_START(i) ((i) ? d->ends[(i) - 1] : 0)
#define DOC_LEN(i) (d->ends[i] - DOC_START(i))
    /* first documents of at most target/8 (so that the split mixes several
     * sources and no single book dominates it), then any that fit */
    size_t dev_bytes = 0, picked = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t cap = pass == 0 ? target / 8 : target;
        for (size_t i = n; i-- > 0 && dev_bytes < target / 2 && picked + 1 < n;) {
            size_t l = DOC_LEN(i);
            if (!pick[i] && l <= cap && l <= target - dev_bytes) {
                pick[i] = 1;
                dev_bytes += l;
                picked++;
            }
        }
    }
    if (picked == 0) { /* every document is larger than the target: take the smallest of the last ones */
        size_t best = n - 1;
        for (size_t k = 2; k <= 100 && k < n; k++) /* document n - k, never the first */
            if (DOC_LEN(n - k) < DOC_LEN(best))
                best = n - k;
        pick[best] = 1;
        picked = 1;
    }
    for (size_t i = 0; i < n; i++)
        fwrite(d->text + DOC_START(i), 1, DOC_LEN(i), pick[i] ? dev_out : train_out);
#undef DOC_START
#undef DOC_LEN
    free(pick);
    return picked;
}

static int is_train_name(const char *name)
{
    return strncmp(name, "train", 5) == 0 && corpus_is_input_name(name);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The corpus folder's train* files, sorted by name. */
static int list_train_files(const char *dir, char ***names, size_t *n, tempo_error *err)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return tempo_fail(err, "%s: cannot read folder: %s", dir, strerror(errno));
    char **list = NULL;
    size_t count = 0;
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (!is_train_name(de->d_name))
            continue;
        char path[PATH_MAX];
        struct stat st;
        text_fmt(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        char **p = realloc(list, (count + 1) * sizeof *p);
        if (!p || !(p[count] = strdup(de->d_name))) {
            list = p ? p : list;
            rc = tempo_fail(err, "%s: out of memory", dir);
            break;
        }
        list = p;
        count++;
    }
    closedir(d);
    if (rc == 0 && count == 0)
        rc = tempo_fail(err, "%s: no training files (train*.txt, train*.jsonl, optionally .xz)", dir);
    if (rc) {
        judge_tree_free(list, count);
        return -1;
    }
    qsort(list, count, sizeof *list, cmp_str);
    *names = list;
    *n = count;
    return 0;
}

/* sha256sum-style record of every file under dir. */
static int write_sums(const char *dir, const char *sums_path, tempo_error *err)
{
    char **rel;
    size_t n;
    if (judge_tree_files(dir, &rel, &n, err))
        return -1;
    strbuf sb = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char path[PATH_MAX], hex[65];
        text_fmt(path, sizeof path, "%s/%s", dir, rel[i]);
        rc = judge_sha256_file(path, hex, err);
        if (rc == 0)
            strbuf_printf(&sb, "%s  %s\n", hex, rel[i]);
    }
    if (rc == 0 && sb.oom)
        rc = tempo_fail(err, "%s: out of memory", sums_path);
    if (rc == 0)
        rc = file_write_atomic(sums_path, sb.data ? sb.data : "", sb.len, err);
    strbuf_free(&sb);
    judge_tree_free(rel, n);
    return rc;
}

/* Check one record line "<hex>  <name>" against the folder's files (rel, n
 * of them, sorted): the name must be one of them, listed once (seen), and
 * the file's sha256 must match. */
static int verify_line(const judge_data *d, char *line, char **rel, size_t n, unsigned char *seen,
                       tempo_error *err)
{
    if (strlen(line) < 67 || line[64] != ' ' || line[65] != ' ')
        return tempo_fail(err, "%s: malformed record", d->sums_path);
    const char *name = line + 66;
    char *const *hit = bsearch(&name, rel, n, sizeof *rel, cmp_str);
    char path[PATH_MAX], hex[65];
    text_fmt(path, sizeof path, "%s/%s", d->dir, name);
    if (!hit)
        return tempo_fail(err, "%s: missing (the judge prepared it)", path);
    if (seen[hit - rel]++)
        return tempo_fail(err, "%s: malformed record (%s listed twice)", d->sums_path, name);
    if (judge_sha256_file(path, hex, err))
        return -1;
    if (strncmp(hex, line, 64) != 0)
        return tempo_fail(err, "%s: changed since the judge prepared it", path);
    return 0;
}

int judge_data_verify(const judge_data *d, tempo_error *err)
{
    if (!d->sums_path[0])
        return 0;
    char *text;
    size_t len;
    if (file_read_all(d->sums_path, &text, &len, 1 << 24, err))
        return -1;
    char **rel;
    size_t n;
    if (judge_tree_files(d->dir, &rel, &n, err)) {
        free(text);
        return -1;
    }
    /* every file of the folder listed exactly once (a count alone would let
     * a record list one file twice and another not at all) */
    unsigned char *seen = calloc(n + 1, 1);
    int rc = seen ? 0 : tempo_fail(err, "%s: out of memory", d->sums_path);
    for (char *line = text; rc == 0 && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        rc = verify_line(d, line, rel, n, seen, err);
        line = nl ? nl + 1 : line + strlen(line);
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!seen[i])
            rc = tempo_fail(err, "%s/%s: not prepared by the judge", d->dir, rel[i]);
    free(seen);
    judge_tree_free(rel, n);
    free(text);
    return rc;
}

static void make_read_only(const char *dir)
{
    char **rel;
    size_t n;
    tempo_error e;
    if (judge_tree_files(dir, &rel, &n, &e))
        return;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        text_fmt(path, sizeof path, "%s/%s", dir, rel[i]);
        chmod(path, 0444);
    }
    judge_tree_free(rel, n);
}

/* Best effort: a folder left behind is rebuilt or removed on the next run. */
static void remove_tree(const char *dir)
{
    tempo_error e;
    (void)dir_remove_tree(dir, &e);
}

/* Build the folder at final_dir (through a temporary folder and a rename). */
/* The last training file, decompressed, into train_dir less the dev documents, which go to dev. */
static int split_off_dev(const judge_data_options *o, const char *last, const char *train_dir, const char *dev,
                         const char *build, tempo_error *err)
{
    char from[PATH_MAX], to[PATH_MAX + 64];
    text_fmt(from, sizeof from, "%s/%s", o->corpus_dir, last);
    text_fmt(to, sizeof to, "%s/%s", train_dir, last);
    if (ends_with(to, ".xz"))
        to[strlen(to) - 3] = '\0';
    judge_docs docs = {0};
    int rc = judge_docs_read(from, &docs, err);
    if (rc == 0) {
        FILE *ft = fopen(to, "wb"), *fd = fopen(dev, "wb");
        size_t target = docs.len / 20;
        if (target > 512 << 10)
            target = 512 << 10;
        if (target < 16 << 10)
            target = 16 << 10;
        size_t picked = ft && fd ? judge_split_dev(&docs, target, ft, fd) : 0;
        int bad = !ft || !fd;
        if (ft)
            bad |= fclose(ft) != 0;
        if (fd)
            bad |= fclose(fd) != 0;
        if (bad)
            rc = tempo_fail(err, "%s: cannot write the training split", build);
        else if (picked == 0)
            rc = tempo_fail(err, "%s: needs at least two documents to split off a dev set", from);
    }
    judge_docs_free(&docs);
    return rc;
}

/* tempo prepare of the training files with the dev text as validation, into build. */
static int prepare_split(const judge_data_options *o, const char *build, const char *train_dir, const char *dev,
                         const char *final_dir, tempo_error *err)
{
    if (o->progress)
        fprintf(o->progress, "judge: tempo prepare --vocab %d on the training files (once; cached in %s)\n",
                o->vocab, final_dir);
    char vocab[32], log_path[PATH_MAX + 32];
    text_fmt(vocab, sizeof vocab, "%d", o->vocab);
    text_fmt(log_path, sizeof log_path, "%s.prepare.log", final_dir);
    char *argv[] = {(char *)o->tempo_bin, "prepare", "--out", (char *)build, "--vocab", vocab, (char *)train_dir,
                    "--val", (char *)dev, NULL};
    proc_spec s = {0};
    s.argv = argv;
    s.stderr_log = log_path;
    s.log_head_bytes = 1 << 20;
    s.log_tail_bytes = 1 << 16;
    proc_result r;
    if (proc_run(&s, &r, err))
        return -1;
    int rc = 0;
    if (r.exec_errno || !r.exited || r.exit_code != 0) {
        char how[128], line[300];
        proc_describe(&r, how, sizeof how);
        proc_caplog_last_line(&r.err, line, sizeof line);
        rc = tempo_fail(err, "tempo prepare %s (%s); log: %s", how, line[0] ? line : "no message", log_path);
    }
    proc_free(&r);
    return rc;
}

/* The build folder, read-only, renamed to final_dir (kept as it is when another judge got there first). */
static int publish_folder(const char *build, const char *final_dir, tempo_error *err)
{
    make_read_only(build);
    if (rename(build, final_dir) != 0) {
        if (errno == ENOTEMPTY || errno == EEXIST)
            remove_tree(build); /* another judge finished first; both folders hold the same */
        else
            return tempo_fail(err, "%s: cannot rename into place: %s", final_dir, strerror(errno));
    }
    return 0;
}

static int build_folder(const judge_data_options *o, char **names, size_t n_names, const char *final_dir,
                        const char *sums_path, tempo_error *err)
{
    char build[PATH_MAX], text[PATH_MAX + 16], train_dir[PATH_MAX + 32], dev[PATH_MAX + 32];
    text_fmt(build, sizeof build, "%s.build-%d", final_dir, (int)getpid());
    remove_tree(build);
    text_fmt(text, sizeof text, "%s/text", build);
    text_fmt(train_dir, sizeof train_dir, "%s/train", text);
    if (dir_create(train_dir, err))
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i + 1 < n_names; i++) {
        char from[PATH_MAX], to[PATH_MAX + 64];
        text_fmt(from, sizeof from, "%s/%s", o->corpus_dir, names[i]);
        text_fmt(to, sizeof to, "%s/%s", train_dir, names[i]);
        rc = judge_copy_file(from, to, err);
    }
    /* the last file: split off the dev documents (decompressed) */
    const char *last = names[n_names - 1];
    int jsonl = strstr(last, ".jsonl") != NULL;
    text_fmt(dev, sizeof dev, "%s/dev.%s", text, jsonl ? "jsonl" : "txt");
    if (rc == 0)
        rc = split_off_dev(o, last, train_dir, dev, build, err);
    if (rc == 0)
        rc = prepare_split(o, build, train_dir, dev, final_dir, err);
    if (rc == 0)
        rc = write_sums(build, sums_path, err);
    if (rc == 0)
        rc = publish_folder(build, final_dir, err);
    if (rc)
        remove_tree(build);
    return rc;
}

static int check_data_dir(const judge_data_options *o, judge_data *d, tempo_error *err)
{
    char real[PATH_MAX];
    if (!realpath(o->data_dir, real))
        return tempo_fail(err, "%s: %s", o->data_dir, strerror(errno));
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode))
        return tempo_fail(err, "%s: not a folder", o->data_dir);
    char **rel;
    size_t n;
    if (judge_tree_files(real, &rel, &n, err))
        return tempo_error_prefix(err, o->data_dir);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char path[PATH_MAX + 256], hex[65];
        text_fmt(path, sizeof path, "%s/%s", real, rel[i]);
        if (judge_sha256_file(path, hex, err))
            rc = -1;
        else if (!strcmp(hex, d->val_sha256) || !strcmp(hex, d->val_text_sha256))
            rc = tempo_fail(err, "%s: holds the validation text; the judge never hands it to a submission", path);
        else if (!strcmp(rel[i], "meta.json")) {
            char *meta;
            size_t len;
            if (file_read_all(path, &meta, &len, 1 << 26, err))
                rc = -1;
            else {
                if (strstr(meta, d->val_sha256) || strstr(meta, d->val_text_sha256))
                    rc = tempo_fail(err, "%s: was prepared from the validation text (its sha256 is listed)", path);
                free(meta);
            }
        }
    }
    judge_tree_free(rel, n);
    if (rc)
        return -1;
    text_fmt(d->dir, sizeof d->dir, "%s", real);
    text_fmt(d->text_dir, sizeof d->text_dir, "%s/text", real);
    if (!path_exists(d->text_dir))
        d->text_dir[0] = '\0';
    d->sums_path[0] = '\0';
    text_fmt(d->id, sizeof d->id, "dir %.150s", real);
    return 0;
}

/* The cached folder d->dir when it matches its record; else rebuilt (with a
 * note naming what changed). A changed folder that cannot be removed is
 * refused, and the rebuilt folder is checked against its new record before
 * it is handed over: a changed folder is never used. */
static int reuse_or_build(const judge_data_options *o, judge_data *d, char **names, size_t n, tempo_error *err)
{
    tempo_error e;
    if (path_exists(d->dir)) {
        if (!path_exists(d->sums_path))
            tempo_fail(&e, "%s: no record of its files (%s is missing)", d->dir, d->sums_path);
        else if (judge_data_verify(d, &e) == 0)
            return 0;
        if (o->progress)
            fprintf(o->progress, "judge: rebuilding the training folder: %s\n", e.msg);
        remove_tree(d->dir);
        if (path_exists(d->dir))
            return tempo_fail(err, "%s: changed since the judge prepared it and cannot be removed (%s); "
                              "remove it and judge again", d->dir, e.msg);
    }
    if (build_folder(o, names, n, d->dir, d->sums_path, err))
        return -1;
    if (judge_data_verify(d, &e))
        return tempo_fail(err, "training folder %s, just built, does not match its record: %s", d->dir, e.msg);
    return 0;
}

int judge_data_prepare(const judge_data_options *o, judge_data *d, tempo_error *err)
{
    memset(d, 0, sizeof *d);
    if (judge_sha256_file(o->val_path, d->val_sha256, err))
        return -1;
    if (text_sha256(o->val_path, d->val_text_sha256, err))
        return -1;
    uint8_t dg[32];
    if (o->data_dir)
        return check_data_dir(o, d, err);

    char **names;
    size_t n;
    if (list_train_files(o->corpus_dir, &names, &n, err))
        return -1;
    /* the cache key: format, vocab, and each file's name, size and mtime */
    sha256_ctx c;
    sha256_init(&c);
    char line[PATH_MAX + 128];
    int k = text_fmt(line, sizeof line, "%s\nvocab %d\n", DATA_FORMAT, o->vocab);
    sha256_update(&c, line, (size_t)k);
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        struct stat st;
        text_fmt(path, sizeof path, "%s/%s", o->corpus_dir, names[i]);
        stat(path, &st);
        k = text_fmt(line, sizeof line, "%s %lld %lld.%09ld\n", names[i], (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        sha256_update(&c, line, (size_t)k);
    }
    sha256_final(&c, dg);
    char key[65];
    sha256_hex(dg, key);
    key[16] = '\0';
    char rel_base[PATH_MAX], base[PATH_MAX];
    text_fmt(rel_base, sizeof rel_base, "%s/data", o->work_dir);
    int rc = dir_create(rel_base, err);
    /* absolute: the folder is handed to submissions, which run in folders of their own */
    if (rc == 0 && !realpath(rel_base, base))
        rc = tempo_fail(err, "%s: %s", rel_base, strerror(errno));
    if (rc == 0) {
        text_fmt(d->dir, sizeof d->dir, "%s/v%d-%s", base, o->vocab, key);
        text_fmt(d->sums_path, sizeof d->sums_path, "%s.sha256", d->dir);
        text_fmt(d->text_dir, sizeof d->text_dir, "%s/text", d->dir);
        text_fmt(d->id, sizeof d->id, "corpus v%d %s", o->vocab, key);
        rc = reuse_or_build(o, d, names, n, err);
    }
    judge_tree_free(names, n);
    return rc;
}
