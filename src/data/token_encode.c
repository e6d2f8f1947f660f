/* token_encode.c - text (a file or a buffer) -> ids in the stream layout of
 * token_store.h (SEP d1 SEP ... dn SEP). Single-threaded; the prepare
 * pipeline has its own parallel batch encoder. */
#include "data/token_store.h"

#include <stdlib.h>

#include "data/corpus.h"

static int push_sep(const tokenizer *t, int32_t **ids, size_t *n, size_t *cap, tempo_error *err)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 1024;
        int32_t *d = realloc(*ids, c * sizeof *d);
        if (!d)
            return tempo_fail(err, "tokenizer: out of memory");
        *ids = d;
        *cap = c;
    }
    (*ids)[(*n)++] = tok_sep_id(t);
    return 0;
}

/* Every document of r, encoded in the stream layout; r is closed. */
static int encode_reader(const tokenizer *t, corpus_reader *r, int32_t **ids, size_t *n, uint64_t *n_bytes,
                         uint64_t *n_docs, tempo_error *err)
{
    *ids = NULL;
    *n = 0;
    *n_bytes = *n_docs = 0;
    size_t cap = 0;
    tok_encoder *enc = NULL;
    int rc = tok_encoder_new(&enc, t, err);
    if (rc == 0)
        rc = push_sep(t, ids, n, &cap, err);
    const uint8_t *doc;
    size_t len;
    while (rc == 0) {
        int got = corpus_next(r, &doc, &len, err);
        if (got <= 0) {
            rc = got;
            break;
        }
        rc = tok_encoder_encode(enc, doc, len, ids, n, &cap, err);
        if (rc == 0)
            rc = push_sep(t, ids, n, &cap, err);
        *n_bytes += len;
        ++*n_docs;
    }
    tok_encoder_free(enc);
    corpus_close(r);
    if (rc) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

int token_encode_file(const tokenizer *t, const char *path, int32_t **ids, size_t *n,
                      uint64_t *n_bytes, uint64_t *n_docs, tempo_error *err)
{
    *ids = NULL;
    *n = 0;
    *n_bytes = *n_docs = 0;
    corpus_reader *r;
    char *paths[] = {(char *)path};
    if (corpus_open(&r, paths, 1, err))
        return -1;
    return encode_reader(t, r, ids, n, n_bytes, n_docs, err);
}

int token_encode_stream(const tokenizer *t, FILE *f, const char *name, int32_t **ids, size_t *n, uint64_t *n_bytes,
                        uint64_t *n_docs, tempo_error *err)
{
    *ids = NULL;
    *n = 0;
    *n_bytes = *n_docs = 0;
    corpus_reader *r;
    if (corpus_open_stream(&r, f, name, err))
        return -1;
    return encode_reader(t, r, ids, n, n_bytes, n_docs, err);
}

int token_encode_text(const tokenizer *t, const uint8_t *text, size_t len, int32_t **ids,
                      size_t *n, tempo_error *err)
{
    *ids = NULL;
    *n = 0;
    size_t cap = 0;
    int rc = push_sep(t, ids, n, &cap, err);
    if (rc == 0 && len > 0) {
        rc = tok_encode(t, text, len, ids, n, &cap, err);
        if (rc == 0)
            rc = push_sep(t, ids, n, &cap, err);
    }
    if (rc) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}
