/* batch.c - random training windows (see batch.h). */
#include "train/batch.h"

#include <string.h>

void batch_sample(const token_file *tf, rng_state *rng, int B, int T, int32_t *inputs, int32_t *targets)
{
    uint64_t n_starts = tf->n_tokens - (uint64_t)T;  /* last start leaves T+1 tokens */
    int32_t window[T + 1];
    for (int b = 0; b < B; b++) {
        uint64_t start = rng_below(rng, n_starts);
        token_file_read(tf, start, (size_t)T + 1, window);
        memcpy(inputs + (size_t)b * T, window, sizeof(int32_t) * (size_t)T);
        memcpy(targets + (size_t)b * T, window + 1, sizeof(int32_t) * (size_t)T);
    }
}

void batch_skip(const token_file *tf, rng_state *rng, int B, int T)
{
    uint64_t n_starts = tf->n_tokens - (uint64_t)T;
    for (int b = 0; b < B; b++)
        (void)rng_below(rng, n_starts);
}
