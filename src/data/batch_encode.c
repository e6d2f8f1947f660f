/* batch_encode.c - parallel encoding of a batch of documents (see batch_encode.h). */
#include "data/batch_encode.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t off, len;      /* text[off .. off + len) */
    int tag;
    int failed;
    int32_t *ids;         /* kept across batches, reused */
    size_t n_ids, cap_ids;
} batch_doc;

struct batch_encoder {
    const tokenizer *t;
    int n_threads;
    tok_encoder **enc;    /* one per thread */
    uint8_t *text;
    size_t text_len, text_cap;
    batch_doc *docs;
    size_t n_docs, cap_docs;
};

int batch_encoder_new(batch_encoder **out, const tokenizer *t, int n_threads, tempo_error *err)
{
    *out = NULL;
    batch_encoder *b = calloc(1, sizeof *b);
    if (!b)
        return tempo_fail(err, "encoder: out of memory");
    b->t = t;
    b->n_threads = n_threads > 0 ? n_threads : omp_get_max_threads();
    b->enc = calloc((size_t)b->n_threads, sizeof *b->enc);
    if (!b->enc) {
        free(b);
        return tempo_fail(err, "encoder: out of memory");
    }
    for (int i = 0; i < b->n_threads; i++)
        if (tok_encoder_new(&b->enc[i], t, err)) {
            batch_encoder_free(b);
            return -1;
        }
    *out = b;
    return 0;
}

int batch_encoder_add(batch_encoder *b, const uint8_t *doc, size_t len, int tag, tempo_error *err)
{
    if (b->text_len + len > b->text_cap) {
        size_t c = b->text_cap ? b->text_cap : 1u << 20;
        while (c < b->text_len + len)
            c *= 2;
        uint8_t *p = realloc(b->text, c);
        if (!p)
            return tempo_fail(err, "encoder: out of memory");
        b->text = p;
        b->text_cap = c;
    }
    if (b->n_docs == b->cap_docs) {
        size_t c = b->cap_docs ? b->cap_docs * 2 : 256;
        batch_doc *p = realloc(b->docs, c * sizeof *p);
        if (!p)
            return tempo_fail(err, "encoder: out of memory");
        memset(p + b->cap_docs, 0, (c - b->cap_docs) * sizeof *p);
        b->docs = p;
        b->cap_docs = c;
    }
    memcpy(b->text + b->text_len, doc, len);
    batch_doc *d = &b->docs[b->n_docs++];
    d->off = b->text_len;
    d->len = len;
    d->tag = tag;
    d->failed = 0;
    d->n_ids = 0;
    b->text_len += len;
    return 0;
}

size_t batch_encoder_bytes(const batch_encoder *b) { return b->text_len; }
size_t batch_encoder_count(const batch_encoder *b) { return b->n_docs; }

int batch_encoder_run(batch_encoder *b, tempo_error *err)
{
    long n = (long)b->n_docs;
    /* dynamic: documents range from 1 KB to 2.5 MB; the result does not depend on the order */
#pragma omp parallel for schedule(dynamic, 1) num_threads(b->n_threads)
    for (long i = 0; i < n; i++) {
        batch_doc *d = &b->docs[i];
        tempo_error local;
        d->n_ids = 0;
        d->failed = tok_encoder_encode(b->enc[omp_get_thread_num()], b->text + d->off, d->len, &d->ids,
                                       &d->n_ids, &d->cap_ids, &local) != 0;
    }
    for (long i = 0; i < n; i++)
        if (b->docs[i].failed)
            return tempo_fail(err, "encoder: out of memory encoding a %zu-byte document", b->docs[i].len);
    return 0;
}

const int32_t *batch_encoder_result(const batch_encoder *b, size_t i, size_t *n, size_t *len, int *tag)
{
    const batch_doc *d = &b->docs[i];
    *n = d->n_ids;
    if (len)
        *len = d->len;
    if (tag)
        *tag = d->tag;
    return d->ids;
}

void batch_encoder_clear(batch_encoder *b)
{
    /* big buffers (a book's worth of ids) are not kept: over many batches
     * every slot could otherwise hold one */
    for (size_t i = 0; i < b->n_docs; i++)
        if (b->docs[i].cap_ids > (1u << 18)) {
            free(b->docs[i].ids);
            b->docs[i].ids = NULL;
            b->docs[i].cap_ids = 0;
        }
    b->n_docs = 0;
    b->text_len = 0;
}

void batch_encoder_free(batch_encoder *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->n_threads; i++)
        tok_encoder_free(b->enc[i]);
    free(b->enc);
    for (size_t i = 0; i < b->cap_docs; i++)
        free(b->docs[i].ids);
    free(b->docs);
    free(b->text);
    free(b);
}
