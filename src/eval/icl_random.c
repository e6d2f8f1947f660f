/* icl_random.c - Python's MT19937 `random` draws used by the CORE protocol
 * (see icl_random.h): init_by_array seeding from the integer's 32-bit words,
 * genrand_uint32 with tempering, getrandbits(k) = top k bits of one word,
 * _randbelow by rejection, shuffle (Fisher-Yates from the end) and sample
 * (pool method for small populations, else rejection against a set; the
 * switch point is Python's setsize rule). Checked against CPython 3.11 in
 * tests/unit/test_icl_random.c. */
#include "eval/icl_random.h"

#include <math.h>
#include <string.h>

#define MT_N 624
#define MT_M 397

static void init_genrand(icl_pyrandom *r, uint32_t s)
{
    r->mt[0] = s;
    for (int i = 1; i < MT_N; i++)
        r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
    r->mti = MT_N;
}

static void init_by_array(icl_pyrandom *r, const uint32_t *key, int len)
{
    init_genrand(r, 19650218u);
    int i = 1, j = 0;
    for (int k = MT_N > len ? MT_N : len; k; k--) {
        r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1664525u)) + key[j] +
                   (uint32_t)j;
        i++;
        j++;
        if (i >= MT_N) {
            r->mt[0] = r->mt[MT_N - 1];
            i = 1;
        }
        if (j >= len)
            j = 0;
    }
    for (int k = MT_N - 1; k; k--) {
        r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
        i++;
        if (i >= MT_N) {
            r->mt[0] = r->mt[MT_N - 1];
            i = 1;
        }
    }
    r->mt[0] = 0x80000000u;
}

void icl_pyrandom_seed(icl_pyrandom *r, uint64_t seed)
{
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    init_by_array(r, key, key[1] ? 2 : 1);
}

static uint32_t genrand_uint32(icl_pyrandom *r)
{
    static const uint32_t mag01[2] = {0, 0x9908b0dfu};
    if (r->mti >= MT_N) {
        int kk = 0;
        uint32_t y;
        for (; kk < MT_N - MT_M; kk++) {
            y = (r->mt[kk] & 0x80000000u) | (r->mt[kk + 1] & 0x7fffffffu);
            r->mt[kk] = r->mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1];
        }
        for (; kk < MT_N - 1; kk++) {
            y = (r->mt[kk] & 0x80000000u) | (r->mt[kk + 1] & 0x7fffffffu);
            r->mt[kk] = r->mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1];
        }
        y = (r->mt[MT_N - 1] & 0x80000000u) | (r->mt[0] & 0x7fffffffu);
        r->mt[MT_N - 1] = r->mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1];
        r->mti = 0;
    }
    uint32_t y = r->mt[r->mti++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint32_t icl_pyrandom_bits(icl_pyrandom *r, int k)
{
    return genrand_uint32(r) >> (32 - k);
}

uint32_t icl_pyrandom_below(icl_pyrandom *r, uint32_t n)
{
    int k = 0; /* n.bit_length() */
    while (k < 32 && (n >> k))
        k++;
    uint32_t x = icl_pyrandom_bits(r, k);
    while (x >= n)
        x = icl_pyrandom_bits(r, k);
    return x;
}

void icl_pyrandom_shuffle(icl_pyrandom *r, int32_t *x, int n)
{
    for (int i = n - 1; i >= 1; i--) {
        int j = (int)icl_pyrandom_below(r, (uint32_t)i + 1);
        int32_t t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

/* Python's rule: a pool copy when n <= 21 (+ 4^ceil(log4(3k)) for k > 5). */
static int use_pool(int n, int k)
{
    double setsize = 21;
    if (k > 5)
        setsize += pow(4, ceil(log(k * 3.0) / log(4.0)));
    return n <= setsize;
}

/* Element j of the population: x[j], or (x NULL) the j-th of 0..n without skip. */
static int32_t pop_at(const int32_t *x, int skip, int j)
{
    return x ? x[j] : (j < skip ? j : j + 1);
}

static void sample_impl(icl_pyrandom *r, const int32_t *x, int skip, int n, int k, int32_t *out,
                        int32_t *pool)
{
    if (use_pool(n, k)) {
        for (int j = 0; j < n; j++)
            pool[j] = pop_at(x, skip, j);
        for (int i = 0; i < k; i++) {
            int j = (int)icl_pyrandom_below(r, (uint32_t)(n - i));
            out[i] = pool[j];
            pool[j] = pool[n - i - 1];
        }
        return;
    }
    /* the selected set holds positions j; out holds population[j]: keep the
     * positions in out first, then map them (positions are distinct). */
    for (int i = 0; i < k; i++) {
        int j, seen;
        do {
            j = (int)icl_pyrandom_below(r, (uint32_t)n);
            seen = 0;
            for (int t = 0; t < i && !seen; t++)
                seen = out[t] == j;
        } while (seen);
        out[i] = j;
    }
    for (int i = 0; i < k; i++)
        out[i] = pop_at(x, skip, out[i]);
}

void icl_pyrandom_sample(icl_pyrandom *r, const int32_t *x, int n, int k, int32_t *out,
                         int32_t *scratch)
{
    sample_impl(r, x, 0, n, k, out, scratch);
}

void icl_fewshot_indices(uint64_t seed_base, int i, int n, int k, int32_t *out, int32_t *scratch)
{
    icl_pyrandom r;
    icl_pyrandom_seed(&r, seed_base + (uint64_t)i);
    sample_impl(&r, NULL, i, n - 1, k, out, scratch);
}
