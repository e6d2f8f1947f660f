/* rng.h - a small deterministic random number generator (xoshiro256**),
 * seeded by splitmix64. The state is an explicit struct so it can be saved in
 * checkpoints and so no global state exists. Not for cryptography. */
#ifndef TEMPO_RNG_H
#define TEMPO_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} rng_state;

void rng_seed(rng_state *r, uint64_t seed);
uint64_t rng_next(rng_state *r);
/* Uniform in [0, n) without modulo bias; n > 0. */
uint64_t rng_below(rng_state *r, uint64_t n);
/* Uniform float in [0, 1). */
double rng_uniform(rng_state *r);
/* Standard normal (Box-Muller, one value per call). */
double rng_normal(rng_state *r);

#endif
