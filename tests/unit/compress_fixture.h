/* compress_fixture.h - what test_compress.c and the fuzz harness of the
 * compressed-file reader (tests/fuzz/fuzz_compressed.c) share: a whole
 * hybrid model small enough to code a text in milliseconds. A byte-level
 * tokenizer with a few merges, a 2-layer transformer of context 40, a count
 * memory of order 3 built from a made-up English text, a cache, a match
 * model, a mixer whose top-token map is far from the identity, and a
 * transformer that learns as it reads. Deterministic from its seed. */
#ifndef TEMPO_TEST_COMPRESS_FIXTURE_H
#define TEMPO_TEST_COMPRESS_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/strbuf.h"
#include "data/token_store.h"
#include "data/tokenizer.h"
#include "eval/compress.h"
#include "memory/hybrid.h"
#include "model/model.h"

typedef struct {
    tokenizer *tok;
    model *m;
    hybrid_parts h;
    compress_model cm;
} compress_fixture;

/* Made-up English: words of a small list, spaces, full stops, newlines. */
static inline void compress_fixture_text(uint64_t seed, size_t n_words, strbuf *out)
{
    static const char *const words[] = {"the", "then", "they", "in", "on", "a", "cat", "sat", "mat", "ran",
                                        "there", "her", "he", "hat", "and", "to", "into", "tin"};
    rng_state r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n_words; i++) {
        strbuf_puts(out, words[rng_below(&r, sizeof words / sizeof words[0])]);
        uint64_t k = rng_below(&r, 12);
        strbuf_puts(out, k == 0 ? ".\n" : k == 1 ? ". " : " ");
    }
}

/* 0, or -1 (err set). with_parts 0: the transformer alone. */
static inline int compress_fixture_init(compress_fixture *f, uint64_t seed, int with_parts, tempo_error *err)
{
    memset(f, 0, sizeof *f);
    static const char *const merges[] = {"th", "he", "in", "the", " t", "at", "an", "e ", "the "};
    enum { N_MERGES = sizeof merges / sizeof merges[0] };
    uint8_t bytes[256];
    const uint8_t *toks[256 + N_MERGES];
    size_t lens[256 + N_MERGES];
    for (int b = 0; b < 256; b++) {
        bytes[b] = (uint8_t)b;
        toks[b] = bytes + b;
        lens[b] = 1;
    }
    for (int k = 0; k < N_MERGES; k++) {
        toks[256 + k] = (const uint8_t *)merges[k];
        lens[256 + k] = strlen(merges[k]);
    }
    if (tok_from_tokens(&f->tok, toks, lens, 256 + N_MERGES, "fixture", err))
        return -1;
    model_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = tok_vocab_size(f->tok);
    c.context = 40;
    c.d_model = 16;
    c.n_layers = 2;
    c.n_heads = 2;
    c.n_kv_heads = 1;
    c.d_ff = 32;
    c.mlp = MLP_RELU2;
    c.tied_head = 1;
    c.rope_theta = 10000;
    c.norm_eps = 1e-5f;
    c.init_std = 0.3f;
    if (model_create(&f->m, &c, 4, err)) {
        tok_free(f->tok);
        return -1;
    }
    model_init(f->m, seed);
    hybrid_parts *h = &f->h;
    h->vocab = c.vocab_size;
    int rc = 0;
    if (with_parts) {
        strbuf train = {0};
        compress_fixture_text(seed + 100, 3000, &train);
        int32_t *ids = NULL;
        size_t n = 0;
        rc = token_encode_text(f->tok, (const uint8_t *)train.data, train.len, &ids, &n, err);
        strbuf_free(&train);
        ngram_stream st = {ids, 4, n};
        if (!rc)
            rc = ngram_memory_init(&h->memory, c.vocab_size, 3, 1, err) || ngram_memory_build(&h->memory, &st, 1, err);
        free(ids);
        h->has_memory = !rc;
        h->cache_order = 3;
        h->match_length = 3;
        if (!rc)
            rc = mixer_init(&h->mx, 3, 3, 1, 0.2, err);
        if (!rc) {
            h->mx.beta = 1.2;
            rng_state r;
            rng_seed(&r, seed);
            for (int i = 0; i < MIX_TOP_ROWS * CALIB_KNOTS; i++)
                h->mx.calib_top.knots[i] = 0.02 + (double)rng_below(&r, 960) / 1000.0;
        }
    }
    h->model_lr = 0.3;
    if (rc) {
        hybrid_parts_free(h);
        model_free(f->m);
        tok_free(f->tok);
        return -1;
    }
    f->cm.m = f->m;
    f->cm.tok = f->tok;
    f->cm.h = h;
    f->cm.stride = 20;
    f->cm.adapt = 1;
    return 0;
}

static inline void compress_fixture_free(compress_fixture *f)
{
    hybrid_parts_free(&f->h);
    model_free(f->m);
    tok_free(f->tok);
    memset(f, 0, sizeof *f);
}

#endif
