/* compress.c - a text range-coded by the run's whole mixture, and back
 * (see compress.h). */
#include "eval/compress.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_info.h"
#include "core/sha256.h"
#include "core/strbuf.h"
#include "core/timer.h"
#include "data/token_store.h"
#include "eval/hybrid_bpb.h"
#include "eval/predictor.h"
#include "eval/range_coder.h"
#include "kernels/cpu/gemm.h"

#define SEPARATOR_LINE "\x1e\n"
#define PROGRESS_EVERY 256

void compress_float_env_here(compress_float_env *e)
{
    gemm_config g;
    gemm_config_init(&g);
    e->threads = (uint32_t)omp_get_max_threads();
    /* The AVX-512 GEMM gives the AVX2 path's bits (gemm_kernel_avx512.c):
     * one float environment, so a file crosses between the two. */
    e->kernel_path = (uint32_t)(g.path > CPU_KERNELS_AVX2 ? CPU_KERNELS_AVX2 : g.path);
    e->gemm_kc = (uint32_t)g.kc;
}

/* ---- the header ---- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void header_write(const compress_header *h, uint8_t b[COMPRESS_HEADER_BYTES])
{
    memcpy(b, COMPRESS_MAGIC, 8);
    put32(b + 8, h->version);
    put32(b + 12, h->flags);
    put64(b + 16, h->n_bytes);
    put64(b + 24, h->n_tokens);
    memcpy(b + 32, h->sha256, 32);
    memcpy(b + 64, h->model_id, 32);
    put32(b + 96, h->vocab);
    put32(b + 100, h->env.threads);
    put32(b + 104, h->env.kernel_path);
    put32(b + 108, h->env.gemm_kc);
    uint8_t check[32];
    sha256(b, 112, check);
    memcpy(b + 112, check, 8);
}

int compress_header_read(const uint8_t *b, size_t len, const char *what, compress_header *h, tempo_error *err)
{
    memset(h, 0, sizeof *h);
    if (len < 8 || memcmp(b, COMPRESS_MAGIC, 8) != 0)
        return tempo_fail(err, "%s: not a tempo compressed file", what);
    if (len < COMPRESS_HEADER_BYTES)
        return tempo_fail(err, "%s: truncated (%zu bytes, the header alone is %d)", what, len, COMPRESS_HEADER_BYTES);
    uint8_t check[32];
    sha256(b, 112, check);
    h->version = get32(b + 8);
    if (memcmp(check, b + 112, 8) != 0)
        return tempo_fail(err, "%s: damaged header (its checksum does not match)", what);
    if (h->version != COMPRESS_VERSION)
        return tempo_fail(err, "%s: format version %u; this tempo reads version %d", what, h->version,
                          COMPRESS_VERSION);
    h->flags = get32(b + 12);
    h->n_bytes = get64(b + 16);
    h->n_tokens = get64(b + 24);
    memcpy(h->sha256, b + 32, 32);
    memcpy(h->model_id, b + 64, 32);
    h->vocab = get32(b + 96);
    h->env.threads = get32(b + 100);
    h->env.kernel_path = get32(b + 104);
    h->env.gemm_kc = get32(b + 108);
    /* a header written by compress_text never fails these (its check passed: they guard hand-made files) */
    if (h->flags & ~(COMPRESS_DOCUMENTS | COMPRESS_TRAILING_SEPARATOR))
        return tempo_fail(err, "%s: damaged header (flags %#x)", what, h->flags);
    uint64_t no_text = h->flags & COMPRESS_TRAILING_SEPARATOR ? 2 : 0;   /* the bytes of a stream of no document */
    if (h->n_tokens < 1 || (h->n_tokens == 1) != (h->n_bytes == no_text) || h->n_tokens > 2 * h->n_bytes + 2 ||
        h->n_bytes > ((uint64_t)1 << 48))
        return tempo_fail(err, "%s: damaged header (%llu tokens for %llu bytes)", what,
                          (unsigned long long)h->n_tokens, (unsigned long long)h->n_bytes);
    if (h->vocab < 2 || h->vocab > TOK_MAX_VOCAB + 1 || h->env.threads < 1 || h->env.kernel_path > 1)
        return tempo_fail(err, "%s: damaged header (vocabulary %u, %u threads, kernel path %u)", what, h->vocab,
                          h->env.threads, h->env.kernel_path);
    return 0;
}

/* ---- the model's id ---- */

static void hash_text(sha256_ctx *c, const char *fmt, double v)
{
    char t[64];
    int n = snprintf(t, sizeof t, fmt, v);
    sha256_update(c, t, (size_t)n);
}

static void hash_int(sha256_ctx *c, long long v)
{
    char t[32];
    int n = snprintf(t, sizeof t, "%lld,", v);
    sha256_update(c, t, (size_t)n);
}

static void hash_doubles(sha256_ctx *c, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        hash_text(c, "%a,", x[i]);
}

void compress_model_id(const compress_model *cm, uint8_t id[32])
{
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, "tempo-compress-model-1\n", 23);
    const model_config *mc = model_get_config(cm->m);
    const long long shape[] = {mc->vocab_size, mc->context, mc->d_model, mc->n_layers, mc->n_heads,
                               mc->n_kv_heads, mc->d_ff, mc->mlp, mc->qk_norm, mc->tied_head};
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++)
        hash_int(&c, shape[i]);
    hash_text(&c, "%a,", mc->logit_softcap);
    hash_text(&c, "%a,", mc->rope_theta);
    hash_text(&c, "%a\n", mc->norm_eps);
    sha256_update(&c, model_params(cm->m), sizeof(float) * model_num_params(cm->m));
    strbuf t = {0};
    tok_serialize(cm->tok, &t);
    if (t.data)
        sha256_update(&c, t.data, t.len);
    strbuf_free(&t);
    const hybrid_parts *h = cm->h;
    hash_int(&c, cm->stride);
    hash_int(&c, cm->adapt);
    hash_text(&c, "%a\n", h->model_lr);
    if (hybrid_parts_any(h)) {
        hash_int(&c, h->cache_order);
        hash_int(&c, h->match_length);
        const mixer *mx = &h->mx;
        hash_int(&c, mx->memory_order);
        hash_int(&c, mx->cache_order);
        hash_int(&c, mx->match);
        hash_int(&c, mx->n_final);
        hash_int(&c, mx->calib.rows);
        hash_doubles(&c, &mx->lr, 1);
        hash_doubles(&c, &mx->lr_final, 1);
        hash_doubles(&c, &mx->beta, 1);
        for (int s = 0; s < MIX_SETS; s++) {
            hash_int(&c, mx->n_buckets[s]);
            hash_doubles(&c, mx->theta[s], (size_t)mx->n_buckets[s] * MIX_N);
        }
        hash_doubles(&c, mx->phi, (size_t)mx->n_final * MIX_SETS);
        hash_doubles(&c, mx->calib.knots, (size_t)mx->calib.rows * CALIB_KNOTS);
        hash_doubles(&c, mx->calib_top.knots, (size_t)mx->calib_top.rows * CALIB_KNOTS);
    }
    if (h->has_memory) {
        const ngram_memory *m = &h->memory;
        const long long sizes[] = {m->vocab, m->order, m->exact_order, m->shards, m->prune_min, (long long)m->tokens,
                                   (long long)m->tokenizer_id, (long long)ngram_memory_entries(m)};
        sha256_update(&c, "memory\n", 7);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            hash_int(&c, sizes[i]);
        for (int n = 0; n <= NGRAM_MAX_ORDER; n++) {
            for (int k = 0; k < 5; k++)
                hash_int(&c, (long long)m->coc[n][k]);
            hash_doubles(&c, m->disc[n], 4);
        }
        sha256_update(&c, m->data_id, 32);
    }
    sha256_final(&c, id);
}

/* ---- text <-> tokens ---- */

/* The bytes tokens[1..n) stand for under `flags` into out; -1 when they
 * cannot be a stream compress_tokens made (a separator out of place). */
static int rebuild(const tokenizer *tok, const int32_t *ids, size_t n, uint32_t flags, strbuf *out)
{
    const int32_t sep = tok_sep_id(tok);
    for (size_t i = 1; i < n; i++) {
        if (ids[i] == sep) {
            if (i == n - 1)
                break;
            if (!(flags & COMPRESS_DOCUMENTS) || ids[i - 1] == sep)
                return -1;
            strbuf_append(out, SEPARATOR_LINE, 2);
            continue;
        }
        const uint8_t *b;
        size_t k = tok_token_bytes(tok, ids[i], &b);
        if (!b)
            return -1;
        strbuf_append(out, (const char *)b, k);
    }
    if (n > 1 && ids[n - 1] != sep)
        return -1;
    if (flags & COMPRESS_TRAILING_SEPARATOR)
        strbuf_append(out, SEPARATOR_LINE, 2);
    return out->oom ? -1 : 0;
}

/* The first byte where a and b differ (or the shorter length). */
static size_t first_difference(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t i = 0;
    while (i < na && i < nb && a[i] == b[i])
        i++;
    return i;
}

/* As eval --text reads the bytes: 1 with the documents' stream when it gives them back exactly. */
static int read_as_documents(const tokenizer *tok, const uint8_t *text, size_t len, const char *what, int32_t **ids,
                             size_t *n, uint32_t *flags, uint64_t *n_docs, uint64_t *doc_bytes, tempo_error *err)
{
    FILE *f = fmemopen((void *)text, len, "rb");
    if (!f)
        return tempo_fail(err, "%s: out of memory", what);
    int rc = token_encode_stream(tok, f, what, ids, n, doc_bytes, n_docs, err);
    fclose(f);
    if (rc)
        return -1;
    strbuf back = {0};
    int same = 0;
    for (uint32_t fl = COMPRESS_DOCUMENTS; fl <= (COMPRESS_DOCUMENTS | COMPRESS_TRAILING_SEPARATOR) && !same;
         fl += COMPRESS_TRAILING_SEPARATOR) {
        back.len = 0;
        if (rebuild(tok, *ids, *n, fl, &back) == 0 && back.len == len && memcmp(back.data, text, len) == 0) {
            same = 1;
            *flags = fl;
        }
    }
    int oom = back.oom;
    strbuf_free(&back);
    if (oom)
        return tempo_fail(err, "%s: out of memory", what);
    if (!same) {
        free(*ids);
        *ids = NULL;
    }
    return same;
}

int compress_tokens(const tokenizer *tok, const uint8_t *text, size_t len, const char *what, int32_t **ids, size_t *n,
                    uint32_t *flags, uint64_t *n_docs, uint64_t *doc_bytes, tempo_error *err)
{
    *ids = NULL;
    *n = 0;
    if (len == 0) {   /* no document: the stream is its leading SEP */
        *flags = COMPRESS_DOCUMENTS;
        *n_docs = *doc_bytes = 0;
        return token_encode_text(tok, text, 0, ids, n, err);
    }
    int got = read_as_documents(tok, text, len, what, ids, n, flags, n_docs, doc_bytes, err);
    if (got)
        return got < 0 ? -1 : 0;
    /* the separator lines would not come back: the bytes as one document */
    *flags = 0;
    *n_docs = 1;
    *doc_bytes = len;
    if (token_encode_text(tok, text, len, ids, n, err))
        return -1;
    strbuf back = {0};
    int rc = rebuild(tok, *ids, *n, 0, &back);
    if (!rc && (back.len != len || memcmp(back.data, text, len) != 0))
        rc = tempo_fail(err, "%s: the model's tokenizer does not give these bytes back (they differ from byte %zu)",
                        what, first_difference((const uint8_t *)back.data, back.len, text, len));
    else if (rc)
        rc = tempo_fail(err, "%s: out of memory", what);
    strbuf_free(&back);
    if (rc) {
        free(*ids);
        *ids = NULL;
    }
    return rc;
}

/* ---- coding ---- */

static void progress(const compress_model *cm, size_t done, size_t total)
{
    if (cm->progress && (done % PROGRESS_EVERY == 0 || done == total))
        cm->progress(cm->user, done, total);
}

static int check_vocab(const compress_model *cm, const char *what, tempo_error *err)
{
    int V = model_get_config(cm->m)->vocab_size;
    if (tok_vocab_size(cm->tok) != V || V > RANGE_MAX_SYMBOLS)
        return tempo_fail(err, "%s: the model has %d ids, its tokenizer %d", what, V, tok_vocab_size(cm->tok));
    return 0;
}

/* Code tokens[1..n) into e. */
static int encode_tokens(const compress_model *cm, const int32_t *ids, size_t n, range_encoder *e, double *ideal,
                         tempo_error *err)
{
    *ideal = 0;
    if (n < 2)
        return 0;
    predictor *p;
    if (predictor_create(&p, cm->m, cm->h, cm->adapt, n, cm->stride, err))
        return -1;
    const int V = predictor_vocab(p);
    double *dist = malloc(sizeof(double) * (size_t)V);
    uint32_t *freq = malloc(sizeof(uint32_t) * (size_t)V);
    int rc = dist && freq ? 0 : tempo_fail(err, "compress: out of memory");
    for (size_t i = 1; i < n && !rc; i++) {
        if (predictor_dist(p, ids, i, dist, err))
            rc = -1;
        else if (range_quantize(dist, V, freq))
            rc = tempo_fail(err, "compress: the mixture at token %zu is not a distribution", i);
        else {
            range_encode_symbol(e, freq, V, ids[i]);
            *ideal -= log2(dist[ids[i]]);
            rc = predictor_learn(p, ids, i, err);
            progress(cm, i, n - 1);
        }
    }
    free(dist);
    free(freq);
    predictor_free(p);
    return rc;
}

int compress_text(const compress_model *cm, const uint8_t *text, size_t len, const char *what, uint8_t **out,
                  size_t *out_len, compress_result *r, tempo_error *err)
{
    *out = NULL;
    *out_len = 0;
    memset(r, 0, sizeof *r);
    r->eval_bits = r->eval_bpb = NAN;
    double t0 = timer_now();
    if (check_vocab(cm, what, err))
        return -1;
    compress_header h;
    memset(&h, 0, sizeof h);
    int32_t *ids;
    size_t n;
    if (compress_tokens(cm->tok, text, len, what, &ids, &n, &h.flags, &r->documents, &r->document_bytes, err))
        return -1;
    h.version = COMPRESS_VERSION;
    h.n_bytes = len;
    h.n_tokens = n;
    sha256(text, len, h.sha256);
    compress_model_id(cm, h.model_id);
    h.vocab = (uint32_t)model_get_config(cm->m)->vocab_size;
    compress_float_env_here(&h.env);
    range_encoder e;
    range_encoder_init(&e);
    int rc = encode_tokens(cm, ids, n, &e, &r->ideal_bits, err);
    if (!rc)
        rc = range_encoder_finish(&e, err);
    r->seconds = timer_now() - t0;
    if (!rc && cm->eval_batch > 0 && n >= 2 && r->document_bytes > 0) {
        hybrid_bpb_result hr;
        rc = hybrid_bpb_evaluate(NULL, cm->m, cm->h, cm->adapt, ids, n, r->document_bytes, cm->stride,
                                 cm->eval_batch, NULL, NULL, &hr, err);
        r->eval_bits = hr.mixture.bits;
        r->eval_bpb = hr.mixture.bpb;
    }
    free(ids);
    if (!rc && !(*out = malloc(COMPRESS_HEADER_BYTES + e.n)))
        rc = tempo_fail(err, "%s: out of memory", what);
    if (!rc) {
        header_write(&h, *out);
        if (e.n)
            memcpy(*out + COMPRESS_HEADER_BYTES, e.out, e.n);
        *out_len = COMPRESS_HEADER_BYTES + e.n;
        r->bytes_in = len;
        r->bytes_out = *out_len;
        r->tokens = n;
        r->as_documents = (h.flags & COMPRESS_DOCUMENTS) != 0;
    }
    range_encoder_free(&e);
    return rc;
}

/* ---- decoding ---- */

static void hex16(const uint8_t *id, char out[17])
{
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* Refuse a file of another model or float environment. */
static int check_model(const compress_model *cm, const compress_header *h, const char *what, tempo_error *err)
{
    uint8_t id[32];
    compress_model_id(cm, id);
    if (memcmp(id, h->model_id, 32) != 0) {
        char a[17], b[17];
        hex16(h->model_id, a);
        hex16(id, b);
        return tempo_fail(err, "%s: compressed with another model (id %s..., this model's is %s...)", what, a, b);
    }
    compress_float_env env;
    compress_float_env_here(&env);
    if (memcmp(&env, &h->env, sizeof env) != 0)
        return tempo_fail(err, "%s: compressed with %u threads, %s kernels, GEMM kc %u; here %u, %s, %u: the model's "
                          "floats would differ (decompress with --threads %u on a machine like the compressing one)",
                          what, h->env.threads, cpu_kernel_path_name((cpu_kernel_path)h->env.kernel_path),
                          h->env.gemm_kc, env.threads, cpu_kernel_path_name((cpu_kernel_path)env.kernel_path),
                          env.gemm_kc, h->env.threads);
    return 0;
}

/* Decode the stream's tokens into *ids (grown as they come). A token the
 * encoder could not have written (a separator out of place, more bytes than
 * the header says) stops it as damage. */
static int decode_tokens(const compress_model *cm, const compress_header *h, range_decoder *d, int32_t **ids,
                         const char *what, tempo_error *err)
{
    const size_t n = (size_t)h->n_tokens;
    const int32_t sep = tok_sep_id(cm->tok);
    size_t cap = n < 4096 ? n : 4096;
    *ids = malloc(sizeof(int32_t) * cap);
    if (!*ids)
        return tempo_fail(err, "%s: out of memory", what);
    (*ids)[0] = sep;
    if (n < 2)
        return 0;
    predictor *p;
    if (predictor_create(&p, cm->m, cm->h, cm->adapt, n, cm->stride, err))
        return -1;
    const int V = predictor_vocab(p);
    double *dist = malloc(sizeof(double) * (size_t)V);
    uint32_t *freq = malloc(sizeof(uint32_t) * (size_t)V);
    int rc = dist && freq ? 0 : tempo_fail(err, "%s: out of memory", what);
    uint64_t bytes = 0;
    for (size_t i = 1; i < n && !rc; i++) {
        if (i == cap) {
            size_t c = cap * 2 < n ? cap * 2 : n;
            int32_t *g = realloc(*ids, sizeof(int32_t) * c);
            if (!g) {
                rc = tempo_fail(err, "%s: out of memory", what);
                break;
            }
            *ids = g;
            cap = c;
        }
        int s;
        if (predictor_dist(p, *ids, i, dist, err))
            rc = -1;
        else if (range_quantize(dist, V, freq))
            rc = tempo_fail(err, "%s: the mixture at token %zu is not a distribution", what, i);
        else if (range_decode_symbol(d, freq, V, &s) || d->overrun)
            rc = d->overrun ? tempo_fail(err, "%s: truncated or damaged (the code runs out at token %zu of %zu)", what,
                                         i, n - 1)
                            : tempo_fail(err, "%s: damaged (the code does not decode at token %zu)", what, i);
        else {
            const uint8_t *b;
            bytes += s == sep ? (i < n - 1 ? 2 : 0) : tok_token_bytes(cm->tok, s, &b);
            int misplaced = s == sep ? i < n - 1 && (!(h->flags & COMPRESS_DOCUMENTS) || (*ids)[i - 1] == sep)
                                     : i == n - 1;
            if (misplaced || bytes > h->n_bytes)
                rc = tempo_fail(err, "%s: damaged (token %zu decodes to %s)", what, i,
                                misplaced ? "a separator out of place" : "more bytes than the original had");
            else {
                (*ids)[i] = s;
                rc = predictor_learn(p, *ids, i, err);
                progress(cm, i, n - 1);
            }
        }
    }
    free(dist);
    free(freq);
    predictor_free(p);
    return rc;
}

int decompress_data(const compress_model *cm, const uint8_t *data, size_t len, const char *what, uint8_t **out,
                    size_t *out_len, compress_result *r, tempo_error *err)
{
    *out = NULL;
    *out_len = 0;
    memset(r, 0, sizeof *r);
    r->eval_bits = r->eval_bpb = NAN;
    double t0 = timer_now();
    compress_header h;
    if (compress_header_read(data, len, what, &h, err) || check_vocab(cm, what, err))
        return -1;
    if (h.vocab != (uint32_t)model_get_config(cm->m)->vocab_size)
        return tempo_fail(err, "%s: compressed with a model of %u ids, this one has %d", what, h.vocab,
                          model_get_config(cm->m)->vocab_size);
    if (check_model(cm, &h, what, err))
        return -1;
    range_decoder d;
    range_decoder_init(&d, data + COMPRESS_HEADER_BYTES, len - COMPRESS_HEADER_BYTES);
    int32_t *ids = NULL;
    int rc = decode_tokens(cm, &h, &d, &ids, what, err);
    if (!rc && !range_decoder_exact(&d))
        rc = d.overrun   ? tempo_fail(err, "%s: truncated or damaged (the code is %llu bytes short)", what,
                                      (unsigned long long)d.overrun)
             : d.pos < d.n ? tempo_fail(err, "%s: damaged (%zu bytes after the end of the code)", what, d.n - d.pos)
                           : tempo_fail(err, "%s: damaged (the code does not end where its last token does)", what);
    strbuf back = {0};
    if (!rc && rebuild(cm->tok, ids, (size_t)h.n_tokens, h.flags, &back))
        rc = back.oom ? tempo_fail(err, "%s: out of memory", what)
                      : tempo_fail(err, "%s: damaged (its tokens are not a text compress writes)", what);
    uint8_t sha[32];
    if (!rc) {
        sha256(back.data ? back.data : "", back.len, sha);
        if (back.len != h.n_bytes || memcmp(sha, h.sha256, 32) != 0)
            rc = tempo_fail(err, "%s: the decompressed bytes are not the original (length %zu of %llu, sha256 "
                            "differs): the file is damaged, or this machine's floats differ from the compressing one's",
                            what, back.len, (unsigned long long)h.n_bytes);
    }
    free(ids);
    if (rc) {
        strbuf_free(&back);
        return -1;
    }
    if (!back.data) {   /* the empty text */
        back.data = malloc(1);
        if (!back.data)
            return tempo_fail(err, "%s: out of memory", what);
    }
    *out = (uint8_t *)back.data;
    *out_len = back.len;
    r->bytes_in = len;
    r->bytes_out = back.len;
    r->tokens = h.n_tokens;
    r->as_documents = (h.flags & COMPRESS_DOCUMENTS) != 0;
    r->seconds = timer_now() - t0;
    return 0;
}
