/* corpus_match_coverage.c - a measurement, not part of tempo: would a match
 * model over the *training corpus* (the cache's match model, but reaching
 * into the 90 M training tokens) add to the hybrid model? It runs the
 * lpaq-style match (a hash of the last L tokens points at the position after
 * their last occurrence in train; the match extends while it predicts right)
 * over the val stream and prints how many val positions get a prediction at
 * each match length and how often it is right. docs/lab-notebook.md ("What is
 * left to 1.55") quotes its output.
 *
 *   make && gcc -O2 -Isrc -o /tmp/corpus_match scripts/corpus_match_coverage.c build/libtempo.a -lm
 *   /tmp/corpus_match data/corpus/train.tok data/corpus/val.tok 8
 *
 * Reads .tok files with tempo's own reader (src/data/token_store.h) and
 * hashes with the count memories' hash; one thread, about 0.5 GB and a few
 * seconds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "data/token_store.h"
#include "memory/count_table.h"

#define TABLE_BITS 27

static void open_or_exit(token_file *tf, const char *path)
{
    tempo_error err;
    if (token_file_open(tf, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
}

/* The table slot of tokens [end - len, end) of a stream. */
static uint32_t slot_of(const token_file *t, size_t end, int len)
{
    uint64_t h = 0x51ed27;
    for (size_t j = end - (size_t)len; j < end; j++)
        h = count_hash(h ^ token_file_at(t, j));
    return (uint32_t)(h >> (64 - TABLE_BITS));
}

/* 1 when tokens [a_end - len, a_end) of a equal [b_end - len, b_end) of b. */
static int same_tokens(const token_file *a, size_t a_end, const token_file *b, size_t b_end, int len)
{
    for (int j = 1; j <= len; j++)
        if (token_file_at(a, a_end - (size_t)j) != token_file_at(b, b_end - (size_t)j))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 4 || atoi(argv[3]) < 1 || atoi(argv[3]) > 64) {
        fprintf(stderr, "usage: %s TRAIN.tok VAL.tok L (1..64 tokens a match starts from)\n", argv[0]);
        return 2;
    }
    int L = atoi(argv[3]);
    token_file trf, vaf;
    open_or_exit(&trf, argv[1]);
    open_or_exit(&vaf, argv[2]);
    const token_file *tr = &trf, *va = &vaf;
    const size_t nt = trf.n_tokens, nv = vaf.n_tokens;
    uint32_t *table = calloc((size_t)1 << TABLE_BITS, sizeof *table);
    if (!table || nt >= UINT32_MAX) {
        fprintf(stderr, "out of memory or too many tokens\n");
        return 1;
    }
    for (size_t end = (size_t)L; end < nt; end++)
        table[slot_of(tr, end, L)] = (uint32_t)end;
    enum { BINS = 5 };
    static const char *names[BINS] = {"L-7", "8-15", "16-31", "32-63", "64+"};
    long trials[BINS] = {0}, hits[BINS] = {0};
    size_t next = 0;   /* the train position whose token the match predicts; 0 = none */
    int len = 0;
    for (size_t i = (size_t)L; i < nv; i++) {
        if (next) {
            int b = len < 8 ? 0 : len < 16 ? 1 : len < 32 ? 2 : len < 64 ? 3 : 4;
            trials[b]++;
            if (token_file_at(tr, next) == token_file_at(va, i) && next + 1 < nt) {
                hits[b]++;
                next++;
                len++;
            } else {
                next = 0;
                len = 0;
            }
        }
        if (!next) {   /* look for a new match ending at i */
            size_t q = table[slot_of(va, i + 1, L)];
            if (q >= (size_t)L && same_tokens(tr, q, va, i + 1, L)) {
                next = q;
                len = L;
            }
        }
    }
    printf("match from %d tokens: val positions %zu\n", L, nv);
    for (int b = 0; b < BINS; b++)
        if (trials[b])
            printf("  matched %-5s tokens: %8ld predictions (%5.2f %% of val), right %.3f\n", names[b], trials[b],
                   100.0 * (double)trials[b] / (double)nv, (double)hits[b] / (double)trials[b]);
    free(table);
    token_file_close(&trf);
    token_file_close(&vaf);
    return 0;
}
