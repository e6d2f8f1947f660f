/* memory_budget.c - the count memory's share of a budget (see memory_budget.h). */
#include "memory/memory_budget.h"

#include <math.h>

double memory_budget_s_per_mtok(int order)
{
    if (order <= 4)
        return 0.0774;
    double s = 0.1987;
    for (int k = 6; k <= order; k++)
        s *= 2;
    return s;
}

memory_budget_count memory_budget_tokens(uint64_t available, int order, int shards, double budget_s, double share,
                                         double s_per_mtok)
{
    memory_budget_count c = {available, 0, 0, 0};
    if (s_per_mtok <= 0)
        s_per_mtok = memory_budget_s_per_mtok(order);
    if (shards < 1)
        shards = 1;
    const double s_per_token = s_per_mtok / 1e6 * 2.0 / shards;
    c.predicted_s = (double)available * s_per_token;
    if (!(budget_s > 0) || !(share > 0))
        return c;
    c.allowed_s = share * budget_s;
    if (c.predicted_s <= c.allowed_s)
        return c;
    double fit = floor(c.allowed_s / s_per_token + 1e-6);   /* 4 s / 40 us is 100,000, not 99,999.99 */
    uint64_t n = fit >= (double)available ? available : (uint64_t)fit;
    if (n < MEMORY_BUDGET_MIN_TOKENS)
        n = available < MEMORY_BUDGET_MIN_TOKENS ? available : MEMORY_BUDGET_MIN_TOKENS;
    c.tokens = n;
    c.capped = n < available;
    return c;
}
