/* test_memory_budget.c - the count memory's share of a budget
 * (memory/memory_budget.h): no cap without a budget or a share, the whole
 * memory when its estimate fits, else the prefix whose estimate equals the
 * allowed seconds, never below the minimum, scaled by the shards; the
 * costs are the medians configs/scaling/hybrid.conf records. */
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory_budget.h"

/* memory_budget.c's seconds per million tokens at orders 5 and 4 */
#define S5 0.1987
#define S4 0.0774

static void test_no_cap(void)
{
    memory_budget_count c = memory_budget_tokens(90000000, 5, 2, 0, 0.5, 0);   /* --steps only */
    CHECK(c.tokens == 90000000 && !c.capped);
    c = memory_budget_tokens(90000000, 5, 2, 20, 0, 0);                        /* share 0: all tokens */
    CHECK(c.tokens == 90000000 && !c.capped);
    CHECK_NEAR(c.predicted_s, 90 * S5, 1e-9);                             /* 2 shards: the figure as measured */
}

static void test_fits(void)
{
    /* 89.5 M tokens at order 5, 2 threads: 18 s; a 10-minute budget's half holds it */
    memory_budget_count c = memory_budget_tokens(89500000, 5, 2, 600, 0.5, 0);
    CHECK(c.tokens == 89500000 && !c.capped);
    CHECK_NEAR(c.allowed_s, 300, 1e-9);
}

static void test_prefix(void)
{
    /* 20 s budget, half of it: 10 s at 0.1987 s per million tokens = 50.33 M tokens */
    memory_budget_count c = memory_budget_tokens(89500000, 5, 2, 20, 0.5, 0);
    CHECK(c.capped);
    CHECK(fabs((double)c.tokens - 10 / (S5 / 1e6)) <= 1);
    CHECK_NEAR(c.tokens * S5 / 1e6, 10, 1e-5);
    /* one thread counts half as fast: half the tokens; four threads twice as many */
    memory_budget_count one = memory_budget_tokens(89500000, 5, 1, 20, 0.5, 0);
    CHECK(llabs((long long)(2 * one.tokens) - (long long)c.tokens) <= 2);
    memory_budget_count two_q = memory_budget_tokens(89500000, 5, 2, 20, 0.25, 0);   /* a quarter: 25 M */
    memory_budget_count four = memory_budget_tokens(89500000, 5, 4, 20, 0.25, 0);
    CHECK(four.capped && llabs((long long)four.tokens - (long long)(2 * two_q.tokens)) <= 2);
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
    CHECK_NEAR(memory_budget_s_per_mtok(5), S5, 1e-12);
    CHECK_NEAR(memory_budget_s_per_mtok(4), S4, 1e-12);
    CHECK_NEAR(memory_budget_s_per_mtok(2), S4, 1e-12);
    CHECK_NEAR(memory_budget_s_per_mtok(7), 4 * S5, 1e-12);
}

/* The trainer's costs are the planner's: configs/scaling/hybrid.conf's build_s_per_mtok.5 and .4 (a
 * re-measure that changes one file and not the other fails here). */
static void test_costs_match_hybrid_conf(void)
{
    FILE *f = fopen("configs/scaling/hybrid.conf", "r");
    CHECK_MSG(f != NULL, "configs/scaling/hybrid.conf not found (tests run from the repository root)");
    if (!f)
        return;
    char line[512];
    int seen = 0;
    while (fgets(line, sizeof line, f)) {
        int k;
        double v;
        if (sscanf(line, "build_s_per_mtok.%d = %lf", &k, &v) == 2 && (k == 4 || k == 5)) {
            CHECK_NEAR(memory_budget_s_per_mtok(k), v, 1e-12);
            seen++;
        }
    }
    fclose(f);
    CHECK(seen == 2);
}

int main(void)
{
    RUN(test_no_cap);
    RUN(test_fits);
    RUN(test_prefix);
    RUN(test_minimum);
    RUN(test_costs);
    RUN(test_costs_match_hybrid_conf);
    return test_summary("test_memory_budget");
}
