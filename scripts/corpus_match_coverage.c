/* corpus_match_coverage.c - a measurement, not part of tempo: would a match
 * model over the *training corpus* (the cache's match model, but reaching
 * into the 90 M training tokens) add to the hybrid model? It runs the
 * lpaq-style match (a hash of the last L tokens points at the position after
 * their last occurrence in train; the match extends while it predicts right)
 * over the val stream and prints how many val positions get a prediction at
 * each match length and how often it is right. configs/README.md ("What is
 * left to 1.55") quotes its output.
 *
 *   gcc -O2 -o /tmp/corpus_match scripts/corpus_match_coverage.c
 *   /tmp/corpus_match data/corpus/train.tok data/corpus/val.tok 8
 *
 * Reads .tok files of 16-bit ids (src/data/token_store.h); one thread, about
 * 1 GB and a few seconds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_BITS 27

static uint16_t *load_tok(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    unsigned char h[64];
    if (!f || fread(h, 1, 64, f) != 64 || memcmp(h, "TEMPOTOK", 8)) {
        fprintf(stderr, "%s: not a tempo token file\n", path);
        exit(1);
    }
    uint32_t dtype;
    uint64_t count;
    memcpy(&dtype, h + 16, 4);
    memcpy(&count, h + 24, 8);
    if (dtype != 2) {
        fprintf(stderr, "%s: %u-byte ids (this measurement reads 2-byte ids)\n", path, dtype);
        exit(1);
    }
    uint16_t *ids = malloc(count * 2 + 2);
    if (!ids || fread(ids, 2, count, f) != count) {
        fprintf(stderr, "%s: truncated or out of memory\n", path);
        exit(1);
    }
    fclose(f);
    *n = count;
    return ids;
}

static uint64_t mix64(uint64_t k)
{
    k += 0x9e3779b97f4a7c15ULL;
    k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ULL;
    k = (k ^ (k >> 27)) * 0x94d049bb133111ebULL;
    return k ^ (k >> 31);
}

static uint32_t slot_of(const uint16_t *t, size_t end, int len)
{
    uint64_t h = 0x51ed27;
    for (size_t j = end - (size_t)len; j < end; j++)
        h = mix64(h ^ t[j]);
    return (uint32_t)(h >> (64 - TABLE_BITS));
}

int main(int argc, char **argv)
{
    if (argc != 4 || atoi(argv[3]) < 1 || atoi(argv[3]) > 64) {
        fprintf(stderr, "usage: %s TRAIN.tok VAL.tok L (1..64 tokens a match starts from)\n", argv[0]);
        return 2;
    }
    int L = atoi(argv[3]);
    size_t nt, nv;
    uint16_t *tr = load_tok(argv[1], &nt), *va = load_tok(argv[2], &nv);
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
            if (tr[next] == va[i] && next + 1 < nt) {
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
            if (q >= (size_t)L && !memcmp(tr + q - L, va + i + 1 - L, sizeof(uint16_t) * (size_t)L)) {
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
    free(tr);
    free(va);
    return 0;
}
