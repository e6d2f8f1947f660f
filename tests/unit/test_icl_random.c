/* test_icl_random.c - the protocol's random draws equal CPython 3.11's
 * `random` module. Expected values were printed by python3 with, e.g.,
 *   random.Random(42).getrandbits(32)
 *   x = list(range(20)); random.Random(1337).shuffle(x)
 *   random.Random(1234 + 5).sample([j for j in range(2117) if j != 5], 10)
 * covering both of sample()'s methods (pool for small populations, set
 * rejection for large), 1- and 2-word seeds, and _randbelow's rejection. */
#include "test.h"

#include "eval/icl_random.h"

static void test_bits_and_seeds(void)
{
    icl_pyrandom r;
    icl_pyrandom_seed(&r, 42);
    CHECK(icl_pyrandom_bits(&r, 32) == 2746317213u);
    CHECK(icl_pyrandom_bits(&r, 32) == 478163327u);
    CHECK(icl_pyrandom_bits(&r, 32) == 107420369u);
    icl_pyrandom_seed(&r, (1ull << 40) + 3);
    CHECK(icl_pyrandom_bits(&r, 32) == 943978446u);
    CHECK(icl_pyrandom_bits(&r, 32) == 261273136u);
    icl_pyrandom_seed(&r, 99);
    uint32_t n[] = {1, 2, 3, 7, 1000, 65536, 65537};
    uint32_t want[] = {0, 1, 0, 4, 183, 30180, 32562};
    for (int i = 0; i < 7; i++)
        CHECK_MSG(icl_pyrandom_below(&r, n[i]) == want[i], "randbelow(%u)", n[i]);
}

static void test_shuffle(void)
{
    int32_t x[20];
    for (int i = 0; i < 20; i++)
        x[i] = i;
    icl_pyrandom r;
    icl_pyrandom_seed(&r, 1337);
    icl_pyrandom_shuffle(&r, x, 20);
    int32_t want[] = {13, 1, 2, 9, 7, 8, 0, 18, 3, 14, 4, 16, 12, 15, 6, 10, 5, 11, 17, 19};
    CHECK(memcmp(x, want, sizeof want) == 0);
    int32_t *y = malloc(sizeof(int32_t) * 5153);
    for (int i = 0; i < 5153; i++)
        y[i] = i;
    icl_pyrandom_seed(&r, 1337);
    icl_pyrandom_shuffle(&r, y, 5153);
    int32_t head[] = {3957, 242, 4196, 452, 4223, 1666, 803, 4536};
    CHECK(memcmp(y, head, sizeof head) == 0);
    CHECK(y[5150] == 2997 && y[5151] == 4368 && y[5152] == 5060);
    free(y);
}

static void test_sample(void)
{
    int32_t pop[10], out[10], scratch[2117];
    for (int i = 0; i < 10; i++)
        pop[i] = i;
    icl_pyrandom r;
    icl_pyrandom_seed(&r, 1234);
    icl_pyrandom_sample(&r, pop, 10, 3, out, scratch);
    CHECK(out[0] == 7 && out[1] == 1 && out[2] == 0);
    /* few-shot draws: large population (set method) */
    icl_fewshot_indices(1234, 5, 2117, 10, out, scratch);
    int32_t w1[] = {306, 1141, 1868, 101, 197, 419, 1955, 1973, 643, 1309};
    CHECK(memcmp(out, w1, sizeof w1) == 0);
    /* pool method (49 <= 85 for k = 10) */
    icl_fewshot_indices(1234, 7, 50, 10, out, scratch);
    int32_t w2[] = {39, 49, 32, 14, 19, 17, 13, 47, 36, 46};
    CHECK(memcmp(out, w2, sizeof w2) == 0);
    icl_fewshot_indices(1234, 0, 1000, 3, out, scratch);
    CHECK(out[0] == 990 && out[1] == 797 && out[2] == 452);
    icl_fewshot_indices(1234, 3, 8, 3, out, scratch);
    CHECK(out[0] == 1 && out[1] == 4 && out[2] == 2);
}

int main(void)
{
    RUN(test_bits_and_seeds);
    RUN(test_shuffle);
    RUN(test_sample);
    return test_summary("test_icl_random");
}
