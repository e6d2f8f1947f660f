/* tokenizer_merges.c - the merge list of a rank-ordered (tiktoken-style)
 * vocabulary, for formats that store merges (GGUF "gpt2", Hugging Face BPE):
 * tok_merge_parts (tokenizer.h). Encoding lives in bpe_encode.c. */
#include "data/tokenizer_impl.h"

#include <stdlib.h>

int tok_merge_parts(const tokenizer *t, int32_t id, int32_t *left, int32_t *right)
{
    if (id < 256 || id >= t->n_regular)
        return -1;
    size_t n = t->offsets[id + 1] - t->offsets[id];
    const uint8_t *b = t->bytes + t->offsets[id];
    uint32_t *ids = malloc(sizeof *ids * n);
    if (!ids)
        return -1;
    for (size_t i = 0; i < n; i++)
        ids[i] = b[i];
    /* BPE with only ranks below id: merge the lowest-ranked pair (leftmost on ties) */
    for (;;) {
        uint32_t best = TOK_NO_MERGE;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            uint32_t r = tok_pair_rank(t, ids[i], ids[i + 1]);
            if (r < (uint32_t)id && r < best) {
                best = r;
                at = i;
            }
        }
        if (best == TOK_NO_MERGE)
            break;
        ids[at] = best;
        for (size_t i = at + 1; i + 1 < n; i++)
            ids[i] = ids[i + 1];
        n--;
    }
    int ok = n == 2 && tok_pair_rank(t, ids[0], ids[1]) == (uint32_t)id;
    if (ok) {
        *left = (int32_t)ids[0];
        *right = (int32_t)ids[1];
    }
    free(ids);
    return ok ? 0 : -1;
}
