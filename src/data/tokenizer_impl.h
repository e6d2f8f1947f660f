/* tokenizer_impl.h - the tokenizer's representation, shared by the files that
 * build it (tokenizer.c), encode with it (bpe_encode.c) and train it
 * (bpe_train.c). Not part of the public API: include data/tokenizer.h. */
#ifndef TEMPO_TOKENIZER_IMPL_H
#define TEMPO_TOKENIZER_IMPL_H

#include "data/hash_map.h"
#include "data/tokenizer.h"

struct tokenizer {
    int n_regular;        /* N: ids 0..N-1 are regular tokens, N is the separator */
    uint32_t *offsets;    /* N + 1: token i is bytes[offsets[i] .. offsets[i + 1]) */
    uint8_t *bytes;
    u64_map pairs;        /* (left << 32 | right) -> id of the token whose bytes are
                             bytes(left) + bytes(right), for every such split */
};

#define TOK_NO_MERGE UINT32_MAX

/* Rank (id) of the token spelled bytes(a) + bytes(b), or TOK_NO_MERGE. */
static inline uint32_t tok_pair_rank(const tokenizer *t, uint32_t a, uint32_t b)
{
    const uint64_t *v = u64_map_get(&t->pairs, (uint64_t)a << 32 | b);
    return v ? (uint32_t)*v : TOK_NO_MERGE;
}

#endif
