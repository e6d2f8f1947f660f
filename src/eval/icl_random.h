/* icl_random.h - the random draws of the CORE protocol, bit-for-bit those of
 * Python's `random` module (MT19937 seeded from an integer, _randbelow by
 * rejection on getrandbits, sample() and shuffle()), so that tempo picks the
 * same few-shot examples and the same item order as the reference
 * implementation (nanochat core_eval.py / base_eval.py: the order is
 * random.Random(1337).shuffle(data); the shots of item i are
 * random.Random(1234 + i).sample([j for j in range(n) if j != i], k)).
 * Only what the protocol uses is here; general randomness is core/rng.h. */
#ifndef TEMPO_ICL_RANDOM_H
#define TEMPO_ICL_RANDOM_H

#include <stdint.h>

typedef struct {
    uint32_t mt[624];
    int mti;
} icl_pyrandom;

/* random.Random(seed) for a non-negative seed below 2^64. */
void icl_pyrandom_seed(icl_pyrandom *r, uint64_t seed);

/* random.getrandbits(k), 1 <= k <= 32. */
uint32_t icl_pyrandom_bits(icl_pyrandom *r, int k);

/* random._randbelow(n), n >= 1 (n < 2^32). */
uint32_t icl_pyrandom_below(icl_pyrandom *r, uint32_t n);

/* random.shuffle(x) on x[0..n). */
void icl_pyrandom_shuffle(icl_pyrandom *r, int32_t *x, int n);

/* random.sample(population, k) where population = x[0..n) (0 <= k <= n),
 * into out[0..k). scratch: n ints (the pool or the selected-set marks). */
void icl_pyrandom_sample(icl_pyrandom *r, const int32_t *x, int n, int k, int32_t *out,
                         int32_t *scratch);

/* The protocol's few-shot draw for item i of n: k distinct indices != i into
 * out (k <= n - 1), from random.Random(seed_base + i). scratch: n ints. */
void icl_fewshot_indices(uint64_t seed_base, int i, int n, int k, int32_t *out, int32_t *scratch);

#endif
