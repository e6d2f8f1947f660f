/* prepare.c - the prepare pipeline (see prepare.h): scan, split, tokenizer
 * sample and training, parallel encoding into token files, meta.json and the
 * cache check. Reading, tokenizing and file formats live in their modules. */
#include "data/prepare.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/json_write.h"
#include "core/sha256.h"
#include "core/timer.h"
#include "data/batch_encode.h"
#include "data/bpe_train.h"
#include "data/corpus.h"
#include "data/doc_sample.h"
#include "data/token_store.h"
#include "data/tokenizer.h"

#define FORMAT_VERSION 1
#define VAL_SALT 0x76616cULL     /* "val" */
#define SAMPLE_SALT 0x746f6bULL  /* "tok" */
#define BATCH_BYTES (16u << 20)
#define PROGRESS_EVERY_S 2.0

#define TOKENIZER_FILE "tokenizer.tiktoken"
#define TRAIN_FILE "train.tok"
#define VAL_FILE "val.tok"
#define META_FILE "meta.json"
#define RESULT_FILE "result.json"

void prepare_defaults(prepare_options *o)
{
    memset(o, 0, sizeof *o);
    o->vocab = PREPARE_DEFAULT_VOCAB;
    o->val_share = PREPARE_DEFAULT_VAL_SHARE;
    o->tok_sample_mb = PREPARE_DEFAULT_TOK_SAMPLE_MB;
}

const char *prepare_sample_rule(void)
{
    return "the training documents with the smallest hash of their index (splitmix64), "
           "taken until they hold --tok-sample-mb MB of text (the whole corpus if it is smaller); "
           "deterministic and independent of input order";
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* u(i) in [0, 1): the validation draw of document i. */
static double val_draw(uint64_t i) { return (double)(splitmix64(i ^ VAL_SALT) >> 11) * 0x1.0p-53; }

typedef struct {
    const prepare_options *o;
    int threads;
    corpus_file *inputs;     /* training inputs as listed, then measured by the scan */
    size_t n_inputs;
    corpus_file *vals;       /* the --val file(s) */
    size_t n_vals;
    char **input_abs;        /* absolute paths, for meta.json and the cache key */
    char **val_abs;
    char key_hex[65];

    /* scan results */
    uint64_t n_docs, n_val_docs;
    int64_t forced_val;      /* document held out because the share picked none, or -1 */
    doc_sampler *sample;
    size_t sample_docs;
    uint64_t sample_bytes;
    size_t distinct;
    tokenizer *tok;

    /* outputs */
    uint64_t out_docs[2], out_bytes[2], out_tokens[2];  /* [0] train, [1] val */
    double t_scan, t_tok, t_encode;
    double progress_at, progress_start;
    uint64_t progress_bytes;
} prep;

static void say(prep *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(prep *p, const char *fmt, ...)
{
    if (!p->o->progress)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    p->o->progress(p->o->progress_ctx, line);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* A progress line at most every PROGRESS_EVERY_S seconds. */
static void tick(prep *p, const char *phase, uint64_t bytes, const char *path)
{
    double now = timer_now();
    if (now - p->progress_at < PROGRESS_EVERY_S)
        return;
    p->progress_at = now;
    double mb = (double)bytes / 1e6;
    say(p, "%s: %.1f MB read (%.1f MB/s), %s", phase, mb, mb / (now - p->progress_start + 1e-9),
        base_name(path));
}

/* ---------- inputs, options and the cache key ---------- */

static char **absolute_paths(const corpus_file *files, size_t n, tempo_error *err)
{
    char **abs = calloc(n ? n : 1, sizeof *abs);
    if (!abs)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char buf[PATH_MAX];
        abs[i] = strdup(realpath(files[i].path, buf) ? buf : files[i].path);
        if (!abs[i]) {
            for (size_t k = 0; k < i; k++)
                free(abs[k]);
            free(abs);
            tempo_fail(err, "prepare: out of memory");
            return NULL;
        }
    }
    return abs;
}

static void free_paths(char **p, size_t n)
{
    if (!p)
        return;
    for (size_t i = 0; i < n; i++)
        free(p[i]);
    free(p);
}

static int check_options(const prepare_options *o, tempo_error *err)
{
    if (!o->out_dir || !*o->out_dir)
        return tempo_usage(err, "prepare: no output folder (--out DATA_DIR)");
    if (o->n_inputs < 1)
        return tempo_usage(err, "prepare: no INPUT given (files or folders of .txt, .jsonl, .txt.xz, .jsonl.xz)");
    if (o->vocab < TOK_MIN_VOCAB || o->vocab > TOK_MAX_VOCAB)
        return tempo_usage(err, "vocab %d: must be from %d to %d", o->vocab, TOK_MIN_VOCAB, TOK_MAX_VOCAB);
    if (!(o->val_share >= 0 && o->val_share <= PREPARE_MAX_VAL_SHARE))
        return tempo_usage(err, "val-share %g: must be from 0 to %g", o->val_share, PREPARE_MAX_VAL_SHARE);
    if (!(o->tok_sample_mb > 0 && o->tok_sample_mb <= 1e6))
        return tempo_usage(err, "tok-sample-mb %g: must be above 0 (and at most 1000000)", o->tok_sample_mb);
    if (o->threads < 0 || o->threads > 1024)
        return tempo_usage(err, "threads %d: must be from 1 to 1024", o->threads);
    struct stat st;
    if (stat(o->out_dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return tempo_fail(err, "%s: exists and is not a folder", o->out_dir);
    return 0;
}

/* sha256 over the format version, the output-changing options and each
 * input's absolute path, size and mtime. */
static void compute_cache_key(prep *p)
{
    const prepare_options *o = p->o;
    strbuf k = {0};
    strbuf_printf(&k, "tempo-prepare %d\nvocab %d\ntok_sample_mb %.17g\n", FORMAT_VERSION, o->vocab,
                  o->tok_sample_mb);
    if (!o->val_path)
        strbuf_printf(&k, "val_share %.17g\n", o->val_share);
    for (size_t i = 0; i < p->n_inputs; i++)
        strbuf_printf(&k, "input\t%s\t%llu\t%lld\n", p->input_abs[i],
                      (unsigned long long)p->inputs[i].file_size, (long long)p->inputs[i].mtime_ns);
    for (size_t i = 0; i < p->n_vals; i++)
        strbuf_printf(&k, "val\t%s\t%llu\t%lld\n", p->val_abs[i], (unsigned long long)p->vals[i].file_size,
                      (long long)p->vals[i].mtime_ns);
    uint8_t d[32];
    sha256(k.data ? k.data : "", k.len, d);
    sha256_hex(d, p->key_hex);
    strbuf_free(&k);
}

/* 1 if out_dir already holds the outputs of this exact run (meta appended). */
static int try_reuse(prep *p, strbuf *meta)
{
    char path[4096];
    char *text = NULL;
    size_t len;
    json_value *m = NULL;
    tokenizer *t = NULL;
    token_file tf[2];
    memset(tf, 0, sizeof tf);
    int ok = 0;
    path_join(path, sizeof path, p->o->out_dir, META_FILE);
    if (file_read_all(path, &text, &len, 64u << 20, NULL) || json_parse(text, len, &m, NULL))
        goto done;
    const char *key = json_get_string(m, "cache_key");
    if (!key || strcmp(key, p->key_hex) != 0 || !json_get_string(m, "content_id"))
        goto done;   /* a folder from before the content id is prepared again, to gain one */
    path_join(path, sizeof path, p->o->out_dir, TOKENIZER_FILE);
    /* compared as doubles: the file's number may be beyond an int (casting it would be undefined) */
    if (tok_load(&t, path, NULL) || (double)tok_n_regular(t) != json_get_number(m, "vocab", -1))
        goto done;
    const char *names[2] = {TRAIN_FILE, VAL_FILE}, *parts[2] = {"train", "val"};
    for (int i = 0; i < 2; i++) {
        path_join(path, sizeof path, p->o->out_dir, names[i]);
        if (token_file_open(&tf[i], path, NULL))
            goto done;
        const json_value *part = json_get(m, parts[i]);
        if ((double)tf[i].n_tokens != json_get_number(part, "tokens", -1) ||
            tf[i].vocab_size != (uint32_t)tok_vocab_size(t))
            goto done;
    }
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
        len--;
    strbuf_append(meta, text, len);
    ok = 1;
done:
    token_file_close(&tf[0]);
    token_file_close(&tf[1]);
    tok_free(t);
    json_free(m);
    free(text);
    return ok;
}

/* ---------- step 1: scan ---------- */

/* Same file list and, once measured, same content as the first listing. */
static int check_same_files(const corpus_file *want, size_t n_want, const corpus_reader *r, int measured,
                            tempo_error *err)
{
    if (corpus_n_files(r) != n_want)
        return tempo_fail(err, "inputs: changed while prepare was running (%zu files, now %zu)", n_want,
                          corpus_n_files(r));
    for (size_t i = 0; i < n_want; i++) {
        const corpus_file *f = corpus_file_at(r, i);
        if (strcmp(f->path, want[i].path) != 0)
            return tempo_fail(err, "%s: inputs changed while prepare was running", want[i].path);
        if (measured && (f->bytes != want[i].bytes || f->docs != want[i].docs ||
                         strcmp(f->sha256, want[i].sha256) != 0))
            return tempo_fail(err, "%s: changed while prepare was running", f->path);
    }
    return 0;
}

/* Read all of paths, measuring each file into files[]; docs are handed to
 * on_doc (NULL: just measure). */
static int read_all(prep *p, const char *phase, char *const *paths, int n_paths, corpus_file *files,
                    size_t n_files, int (*on_doc)(prep *, const uint8_t *, size_t, tempo_error *),
                    uint64_t *n_docs, tempo_error *err)
{
    corpus_reader *r;
    if (corpus_open(&r, paths, n_paths, err))
        return -1;
    int rc = check_same_files(files, n_files, r, 0, err);
    const uint8_t *doc;
    size_t len;
    uint64_t docs = 0;
    while (rc == 0) {
        int got = corpus_next(r, &doc, &len, err);
        if (got <= 0) {
            rc = got;
            break;
        }
        docs++;
        if (on_doc)
            rc = on_doc(p, doc, len, err);
        p->progress_bytes += len;
        tick(p, phase, p->progress_bytes, corpus_current_path(r));
    }
    if (rc == 0) {
        for (size_t i = 0; i < n_files; i++) {
            const corpus_file *f = corpus_file_at(r, i);
            files[i].bytes = f->bytes;
            files[i].docs = f->docs;
            files[i].doc_bytes = f->doc_bytes;
            memcpy(files[i].sha256, f->sha256, sizeof f->sha256);
            files[i].done = f->done;
        }
        *n_docs = docs;
    }
    corpus_close(r);
    return rc;
}

static int scan_doc(prep *p, const uint8_t *doc, size_t len, tempo_error *err)
{
    uint64_t i = p->n_docs++;
    if (!p->o->val_path) {
        double u = val_draw(i);
        if (u < p->o->val_share) {
            p->n_val_docs++;
            return 0;
        }
    }
    return doc_sampler_offer(p->sample, splitmix64(i ^ SAMPLE_SALT), i, doc, len, err);
}

static int scan(prep *p, tempo_error *err)
{
    const prepare_options *o = p->o;
    double t0 = timer_now();
    p->progress_start = p->progress_at = t0;
    p->progress_bytes = 0;
    uint64_t budget = (uint64_t)(o->tok_sample_mb * 1e6);
    if (doc_sampler_new(&p->sample, budget ? budget : 1, err))
        return -1;
    uint64_t docs;
    if (read_all(p, "scan", o->inputs, o->n_inputs, p->inputs, p->n_inputs, scan_doc, &docs, err))
        return -1;
    if (p->n_docs == 0) {
        if (o->n_inputs == 1)
            return tempo_fail(err, "%s: no documents", o->inputs[0]);
        return tempo_fail(err, "inputs: no documents in %zu files", p->n_inputs);
    }
    p->forced_val = -1;
    if (o->val_path) {
        char *vp[] = {(char *)o->val_path};
        uint64_t val_docs;
        if (read_all(p, "scan", vp, 1, p->vals, p->n_vals, NULL, &val_docs, err))
            return -1;
        if (val_docs == 0)
            return tempo_fail(err, "%s: no documents", o->val_path);
        p->n_val_docs = val_docs;
    } else if (o->val_share > 0) {
        if (p->n_val_docs == 0) {
            if (p->n_docs == 1)
                return tempo_fail(err, "%s: only 1 document, so none can be held out for validation "
                                  "(give --val FILE or --val-share 0)", o->inputs[0]);
            /* the document with the smallest draw */
            double best = 2;
            for (uint64_t i = 0; i < p->n_docs; i++)
                if (val_draw(i) < best) {
                    best = val_draw(i);
                    p->forced_val = (int64_t)i;
                }
            doc_sampler_remove(p->sample, (uint64_t)p->forced_val);
            p->n_val_docs = 1;
        }
        if (p->n_val_docs >= p->n_docs)
            return tempo_fail(err, "inputs: all %llu documents fell into the validation share %g "
                              "(give more documents, a smaller --val-share, or --val FILE)",
                              (unsigned long long)p->n_docs, o->val_share);
    }
    doc_sampler_finish(p->sample);
    p->sample_docs = doc_sampler_count(p->sample);
    p->sample_bytes = doc_sampler_bytes(p->sample);
    p->t_scan = timer_now() - t0;
    double mb = (double)p->progress_bytes / 1e6;
    say(p, "scan: %.1f MB, %llu input documents (%.1f s, %.1f MB/s); validation: %llu documents%s", mb,
        (unsigned long long)p->n_docs, p->t_scan, mb / (p->t_scan + 1e-9), (unsigned long long)p->n_val_docs,
        o->val_path ? " (the --val file)" : "");
    return 0;
}

static int is_val_doc(const prep *p, uint64_t i)
{
    if (p->o->val_path || p->o->val_share <= 0)
        return 0;
    return val_draw(i) < p->o->val_share || (int64_t)i == p->forced_val;
}

/* ---------- step 3: the tokenizer ---------- */

static int train_tokenizer(prep *p, const char *path, tempo_error *err)
{
    double t0 = timer_now();
    int T = p->threads;
    tok_trainer **tr = calloc((size_t)T, sizeof *tr);
    int rc = tr ? 0 : tempo_fail(err, "tokenizer: out of memory");
    for (int t = 0; t < T && rc == 0; t++)
        rc = tok_trainer_new(&tr[t], err);
    if (rc == 0) {
        long n = (long)p->sample_docs;
        int failed = 0;
        /* counts are sums, and training sorts the pieces: any split over threads gives the same result */
#pragma omp parallel for schedule(dynamic, 1) num_threads(T) reduction(| : failed)
        for (long i = 0; i < n; i++) {
            size_t len;
            const uint8_t *doc = doc_sampler_doc(p->sample, (size_t)i, &len, NULL);
            failed |= tok_trainer_add(tr[omp_get_thread_num()], doc, len, NULL) != 0;
        }
        if (failed)
            rc = tempo_fail(err, "tokenizer: out of memory counting the sample");
        for (int t = 1; t < T && rc == 0; t++)
            rc = tok_trainer_absorb(tr[0], tr[t], err);
    }
    doc_sampler_free(p->sample); /* the sample text is no longer needed */
    p->sample = NULL;
    if (rc == 0) {
        p->distinct = tok_trainer_distinct(tr[0]);
        say(p, "tokenizer: %zu distinct pieces in the %.1f MB sample (%zu documents); training %d tokens",
            p->distinct, (double)p->sample_bytes / 1e6, p->sample_docs, p->o->vocab);
        rc = tok_trainer_finish(tr[0], p->o->vocab, &p->tok, NULL, err);
    }
    for (int t = 0; tr && t < T; t++)
        tok_trainer_free(tr[t]);
    free(tr);
    if (rc == 0)
        rc = tok_save(p->tok, path, err);
    p->t_tok = timer_now() - t0;
    if (rc == 0)
        say(p, "tokenizer: %d tokens + separator in %.1f s%s", tok_n_regular(p->tok), p->t_tok,
            tok_n_regular(p->tok) < p->o->vocab ? " (the sample ran out of pairs to merge first)" : "");
    return rc;
}

/* ---------- step 4: encoding ---------- */

typedef struct {
    batch_encoder *be;
    token_writer *w[2];      /* train, val */
    uint64_t doc_index;
    int all_val;             /* documents of the --val file */
} encode_state;

/* Encode the queued batch and append it, in order, to the writers. */
static int flush_batch(encode_state *s, tempo_error *err)
{
    if (batch_encoder_count(s->be) == 0)
        return 0;
    if (batch_encoder_run(s->be, err))
        return -1;
    for (size_t i = 0; i < batch_encoder_count(s->be); i++) {
        size_t n, len;
        int tag;
        const int32_t *ids = batch_encoder_result(s->be, i, &n, &len, &tag);
        if (token_writer_add_doc(s->w[tag], ids, n, len, err))
            return -1;
    }
    batch_encoder_clear(s->be);
    return 0;
}

static int encode_pass(prep *p, encode_state *s, char *const *paths, int n_paths, corpus_file *files,
                       size_t n_files, tempo_error *err)
{
    corpus_reader *r;
    if (corpus_open(&r, paths, n_paths, err))
        return -1;
    int rc = check_same_files(files, n_files, r, 0, err);
    const uint8_t *doc;
    size_t len;
    while (rc == 0) {
        int got = corpus_next(r, &doc, &len, err);
        if (got <= 0) {
            rc = got;
            break;
        }
        int tag = s->all_val ? 1 : is_val_doc(p, s->doc_index);
        s->doc_index++;
        rc = batch_encoder_add(s->be, doc, len, tag, err);
        if (rc == 0 && batch_encoder_bytes(s->be) >= BATCH_BYTES)
            rc = flush_batch(s, err);
        p->progress_bytes += len;
        tick(p, "encode", p->progress_bytes, corpus_current_path(r));
    }
    if (rc == 0)
        rc = flush_batch(s, err);
    if (rc == 0)
        rc = check_same_files(files, n_files, r, 1, err);
    corpus_close(r);
    return rc;
}

static int encode_all(prep *p, tempo_error *err)
{
    const prepare_options *o = p->o;
    double t0 = timer_now();
    p->progress_start = p->progress_at = t0;
    p->progress_bytes = 0;
    encode_state s;
    memset(&s, 0, sizeof s);
    char path[2][4096];
    path_join(path[0], sizeof path[0], o->out_dir, TRAIN_FILE);
    path_join(path[1], sizeof path[1], o->out_dir, VAL_FILE);
    uint32_t vocab = (uint32_t)tok_vocab_size(p->tok);
    int rc = batch_encoder_new(&s.be, p->tok, p->threads, err);
    if (rc == 0)
        rc = token_writer_open(&s.w[0], path[0], vocab, err);
    if (rc == 0)
        rc = token_writer_open(&s.w[1], path[1], vocab, err);
    if (rc == 0)
        rc = encode_pass(p, &s, o->inputs, o->n_inputs, p->inputs, p->n_inputs, err);
    if (rc == 0 && o->val_path) {
        char *vp[] = {(char *)o->val_path};
        s.all_val = 1;
        rc = encode_pass(p, &s, vp, 1, p->vals, p->n_vals, err);
    }
    for (int k = 0; k < 2 && rc == 0; k++) {
        p->out_docs[k] = token_writer_docs(s.w[k]);
        p->out_bytes[k] = token_writer_bytes(s.w[k]);
        p->out_tokens[k] = token_writer_tokens(s.w[k]);
        token_writer *w = s.w[k];
        s.w[k] = NULL;
        rc = token_writer_commit(w, err);
    }
    token_writer_abort(s.w[0]);
    token_writer_abort(s.w[1]);
    batch_encoder_free(s.be);
    p->t_encode = timer_now() - t0;
    if (rc == 0) {
        double mb = (double)p->progress_bytes / 1e6;
        say(p, "encode: %.1f MB -> %llu train + %llu val tokens (%.1f s, %.1f MB/s)", mb,
            (unsigned long long)p->out_tokens[0], (unsigned long long)p->out_tokens[1], p->t_encode,
            mb / (p->t_encode + 1e-9));
    }
    return rc;
}

/* ---------- step 5: meta.json ---------- */

/* Integers are written exactly (a double would round mtime_ns). */
static void json_sources(jsonw *w, const corpus_file *files, char **abs, size_t n, const char *role)
{
    for (size_t i = 0; i < n; i++) {
        jsonw_object_begin(w);
        jsonw_field_string(w, "path", abs[i]);
        jsonw_field_string(w, "role", role);
        jsonw_field_int(w, "size", (long long)files[i].file_size);
        jsonw_field_int(w, "mtime_ns", (long long)files[i].mtime_ns);
        jsonw_field_int(w, "bytes", (long long)files[i].bytes);
        jsonw_field_string(w, "sha256", files[i].sha256);
        jsonw_field_int(w, "documents", (long long)files[i].docs);
        jsonw_field_int(w, "text_bytes", (long long)files[i].doc_bytes);
        jsonw_object_end(w);
    }
}

static void json_part(jsonw *w, const char *name, const char *file, uint64_t docs, uint64_t bytes,
                      uint64_t tokens)
{
    jsonw_key(w, name);
    jsonw_object_begin(w);
    jsonw_field_string(w, "file", file);
    jsonw_field_int(w, "documents", (long long)docs);
    jsonw_field_int(w, "bytes", (long long)bytes);
    jsonw_field_int(w, "tokens", (long long)tokens);
    uint64_t doc_tokens = tokens - docs - 1;
    jsonw_field_digits(w, "bytes_per_token", doc_tokens ? (double)bytes / (double)doc_tokens : 0, 4);
    jsonw_object_end(w);
}

/* The data's content id: sha256 over what decides the outputs byte for byte
 * (the format, the options, each source's role and decompressed content in
 * order), not where the sources lie or when they were touched, so a folder
 * prepared again from the same text has the same id (the trainer's data id,
 * memory.bin's and the count-memory store's key). */
static void content_id(const prep *p, char hex[65])
{
    const prepare_options *o = p->o;
    strbuf k = {0};
    strbuf_printf(&k, "tempo-data %d\nvocab %d\ntok_sample_mb %.17g\nval_share %.17g\n", FORMAT_VERSION, o->vocab,
                  o->tok_sample_mb, o->val_path ? 0 : o->val_share);
    for (size_t i = 0; i < p->n_inputs; i++)
        strbuf_printf(&k, "train %s %llu\n", p->inputs[i].sha256, (unsigned long long)p->inputs[i].bytes);
    for (size_t i = 0; i < p->n_vals; i++)
        strbuf_printf(&k, "val %s %llu\n", p->vals[i].sha256, (unsigned long long)p->vals[i].bytes);
    uint8_t d[32];
    sha256(k.data ? k.data : "", k.len, d);
    sha256_hex(d, hex);
    strbuf_free(&k);
}

/* meta.json: one object, no newline (try_reuse reads "cache_key", "vocab"
 * and each part's "tokens" back; the trainer "content_id"). */
static int build_meta(const prep *p, double total_s, strbuf *sb, tempo_error *err)
{
    const prepare_options *o = p->o;
    int n = tok_n_regular(p->tok);
    jsonw w;
    jsonw_init(&w, sb);
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "format", "tempo-data");
    jsonw_field_int(&w, "format_version", FORMAT_VERSION);
    jsonw_field_int(&w, "vocab", n);
    jsonw_field_int(&w, "total_vocab", n + 1);
    jsonw_field_int(&w, "sep_id", n);
    jsonw_field_string(&w, "sep_token", TOK_SEP_NAME);
    jsonw_key(&w, "options");
    jsonw_object_begin(&w);
    jsonw_field_int(&w, "vocab", o->vocab);
    jsonw_field_string(&w, "val", o->val_path ? p->val_abs[0] : NULL);
    jsonw_field_number(&w, "val_share", o->val_path ? 0 : o->val_share);
    jsonw_field_number(&w, "tok_sample_mb", o->tok_sample_mb);
    jsonw_object_end(&w);
    jsonw_key(&w, "sources");
    jsonw_array_begin(&w);
    json_sources(&w, p->inputs, p->input_abs, p->n_inputs, "train");
    json_sources(&w, p->vals, p->val_abs, p->n_vals, "val");
    jsonw_array_end(&w);
    json_part(&w, "train", TRAIN_FILE, p->out_docs[0], p->out_bytes[0], p->out_tokens[0]);
    json_part(&w, "val", VAL_FILE, p->out_docs[1], p->out_bytes[1], p->out_tokens[1]);
    jsonw_key(&w, "tokenizer");
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "file", TOKENIZER_FILE);
    char rule[512];
    snprintf(rule, sizeof rule, "%s (%g MB)", prepare_sample_rule(), o->tok_sample_mb);
    jsonw_field_string(&w, "sample", rule);
    jsonw_field_int(&w, "sample_documents", (long long)p->sample_docs);
    jsonw_field_int(&w, "sample_bytes", (long long)p->sample_bytes);
    jsonw_field_int(&w, "distinct_pieces", (long long)p->distinct);
    jsonw_object_end(&w);
    jsonw_key(&w, "seconds");
    jsonw_object_begin(&w);
    jsonw_field_digits(&w, "scan", p->t_scan, 2);
    jsonw_field_digits(&w, "tokenizer", p->t_tok, 2);
    jsonw_field_digits(&w, "encode", p->t_encode, 2);
    jsonw_field_digits(&w, "total", total_s, 2);
    jsonw_object_end(&w);
    jsonw_field_int(&w, "threads", p->threads);
    jsonw_field_string(&w, "cache_key", p->key_hex);
    char id[65];
    content_id(p, id);
    jsonw_field_string(&w, "content_id", id);
    jsonw_object_end(&w);
    return jsonw_finish(&w, err) ? tempo_error_prefix(err, "prepare: meta.json") : 0;
}

/* ---------- the run ---------- */

static void remove_output(const char *dir, const char *name)
{
    char path[4096];
    path_join(path, sizeof path, dir, name);
    unlink(path);
}

int prepare_run(const prepare_options *o, strbuf *meta, int *reused, tempo_error *err)
{
    double t0 = timer_now();
    *reused = 0;
    if (check_options(o, err))
        return -1;
    prep p;
    memset(&p, 0, sizeof p);
    p.o = o;
    p.threads = o->threads > 0 ? o->threads : omp_get_max_threads();
    int rc = corpus_list_files(o->inputs, o->n_inputs, &p.inputs, &p.n_inputs, err);
    if (rc == 0 && o->val_path) {
        char *vp[] = {(char *)o->val_path};
        rc = corpus_list_files(vp, 1, &p.vals, &p.n_vals, err);
    }
    if (rc == 0) {
        p.input_abs = absolute_paths(p.inputs, p.n_inputs, err);
        p.val_abs = absolute_paths(p.vals, p.n_vals, err);
        if (!p.input_abs || !p.val_abs)
            rc = tempo_fail(err, "prepare: out of memory");
    }
    for (size_t i = 0; rc == 0 && i < p.n_vals; i++)
        for (size_t k = 0; k < p.n_inputs; k++)
            if (!strcmp(p.val_abs[i], p.input_abs[k])) {
                rc = tempo_usage(err, "%s: is both an input and the --val file", o->val_path);
                break;
            }
    if (rc == 0) {
        /* temporaries of runs killed mid-write (their pid is gone): nobody else removes them */
        int stale = atomic_remove_stale(o->out_dir);
        if (stale)
            say(&p, "removed %d temporary file%s left in %s by killed runs", stale, stale > 1 ? "s" : "", o->out_dir);
        compute_cache_key(&p);
        if (!o->force && try_reuse(&p, meta)) {
            *reused = 1;
            say(&p, "%s is up to date (same inputs and options): reusing it (--force rebuilds)", o->out_dir);
            goto done;
        }
    }
    /* the scan writes nothing: bad or empty inputs leave DATA_DIR untouched */
    if (rc == 0)
        rc = scan(&p, err);
    if (rc == 0)
        rc = dir_create(o->out_dir, err);
    if (rc == 0) {
        /* from here on the folder is being rewritten: it must not look finished */
        remove_output(o->out_dir, META_FILE);
        remove_output(o->out_dir, RESULT_FILE);
        char path[4096];
        path_join(path, sizeof path, o->out_dir, TOKENIZER_FILE);
        rc = train_tokenizer(&p, path, err);
    }
    if (rc == 0)
        rc = encode_all(&p, err);
    if (rc == 0) {
        strbuf m = {0};
        rc = build_meta(&p, timer_now() - t0, &m, err);
        if (rc == 0) {
            strbuf_puts(&m, "\n");
            char path[4096];
            path_join(path, sizeof path, o->out_dir, META_FILE);
            rc = m.oom ? tempo_fail(err, "prepare: out of memory") : file_write_atomic(path, m.data, m.len, err);
        }
        if (rc == 0)
            strbuf_append(meta, m.data, m.len - 1);
        strbuf_free(&m);
    }
done:
    doc_sampler_free(p.sample);
    tok_free(p.tok);
    free_paths(p.input_abs, p.n_inputs);
    free_paths(p.val_abs, p.n_vals);
    corpus_files_free(p.inputs, p.n_inputs);
    corpus_files_free(p.vals, p.n_vals);
    return rc;
}
