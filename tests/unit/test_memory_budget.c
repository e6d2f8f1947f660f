/* test_memory_budget.c - the count memory's share of a budget
 * (memory/memory_budget.h): no cap without a budget or a share, the whole
 * memory when its estimate fits, else the prefix whose estimate equals the
 * allowed seconds, never below the minimum, scaled by the shards. */
#include "test.h"

#include <math.h>
#include <stdint.h>

#include "memory/memory_budget.h"

static void test_no_cap(void)
{
    memory_budget_count c = memory_budget_tokens(90000000, 5, 2, 0, 0.5, 0);   /* --steps only */
    CHECK(c.tokens == 90000000 && !c.capped);
    c = memory_budget_tokens(90000000, 5, 2, 20, 0, 0);                        /* share 0: all tokens */
    CHECK(c.tokens == 90000000 && !c.capped);
    CHECK_NEAR(c.predicted_s, 90 * 0.2585, 1e-9);                             /* 2 shards: the figure as measured */
}

static void test_fits(void)
{
    /* 89.5 M tokens at order 5, 2 threads: 23 s; a 10-minute budget's half holds it */
    memory_budget_count c = memory_budget_tokens(89500000, 5, 2, 600, 0.5, 0);
    CHECK(c.tokens == 89500000 && !c.capped);
    CHECK_NEAR(c.allowed_s, 300, 1e-9);
}

static void test_prefix(void)
{
    /* 20 s budget, half of it: 10 s at 0.2585 s per million tokens = 38.68 M tokens */
    memory_budget_count c = memory_budget_tokens(89500000, 5, 2, 20, 0.5, 0);
    CHECK(c.capped);
    CHECK(fabs((double)c.tokens - 10 / (0.2585 / 1e6)) <= 1);
    CHECK_NEAR(c.tokens * 0.2585 / 1e6, 10, 1e-5);
    /* one thread counts half as fast: half the tokens; four threads twice as many */
    memory_budget_count one = memory_budget_tokens(89500000, 5, 1, 20, 0.5, 0);
    memory_budget_count four = memory_budget_tokens(89500000, 5, 4, 20, 0.5, 0);
    CHECK(llabs((long long)(2 * one.tokens) - (long long)c.tokens) <= 2);
    CHECK(llabs((long long)four.tokens - (long long)(2 * c.tokens)) <= 2);
    /* a given cost replaces the measured one; order 4 is cheaper than 5 */
    memory_budget_count given = memory_budget_tokens(89500000, 5, 2, 20, 0.5, 100.0);
    CHECK(given.tokens == 100000);   /* exactly: 10 s at 100 us a token */
    given = memory_budget_tokens(89500000, 5, 2, 8, 0.5, 40.0);
    CHECK(given.tokens == 100000);   /* 4 s at 40 us, whose quotient is 99,999.99... in doubles */
    memory_budget_count o4 = memory_budget_tokens(89500000, 4, 2, 20, 0.5, 0);
    CHECK(o4.tokens > c.tokens);
    /* deterministic */
    memory_budget_count again = memory_budget_tokens(89500000, 5, 2, 20, 0.5, 0);
    CHECK(again.tokens == c.tokens);
}

static void test_minimum(void)
{
    memory_budget_count c = memory_budget_tokens(89500000, 5, 2, 1, 0.5, 1e6);   /* 1 token per second */
    CHECK(c.capped && c.tokens == MEMORY_BUDGET_MIN_TOKENS);
    c = memory_budget_tokens(1000, 5, 2, 1, 0.5, 1e6);                           /* fewer than the minimum: all */
    CHECK(!c.capped && c.tokens == 1000);
}

static void test_costs(void)
{
    CHECK_NEAR(memory_budget_s_per_mtok(5), 0.2585, 1e-12);
    CHECK_NEAR(memory_budget_s_per_mtok(4), 0.1134, 1e-12);
    CHECK_NEAR(memory_budget_s_per_mtok(2), 0.1134, 1e-12);
    CHECK_NEAR(memory_budget_s_per_mtok(7), 4 * 0.2585, 1e-12);
}

int main(void)
{
    RUN(test_no_cap);
    RUN(test_fits);
    RUN(test_prefix);
    RUN(test_minimum);
    RUN(test_costs);
    return test_summary("test_memory_budget");
}
