/* memory_budget.h - how many training tokens the count memory may count
 * inside a wall-clock budget. Its build is held to a share of the budget by
 * a cost estimate (seconds per million tokens, measured on the project's
 * 2-core machine at 2 threads, scaled by the shards that count in
 * parallel), so a short budget counts a prefix of the training tokens
 * instead of spending the whole budget (or more) on the memory. A pure
 * function of its inputs: the same budget, order and threads give the same
 * count, which a resume relies on to reuse memory.bin. */
#ifndef TEMPO_MEMORY_BUDGET_H
#define TEMPO_MEMORY_BUDGET_H

#include <stdint.h>

/* The fewest tokens a capped memory counts (or all, when fewer exist). */
#define MEMORY_BUDGET_MIN_TOKENS 65536

/* Seconds per million tokens of an order-K build at 2 threads: the medians
 * of the runs in configs/scaling/hybrid.conf (build_s_per_mtok.4 and .5);
 * lower orders take order 4's, higher ones double per order above 5. */
double memory_budget_s_per_mtok(int order);

typedef struct {
    uint64_t tokens;        /* tokens to count: a prefix of the available ones */
    int capped;             /* 1: fewer than available, for the budget */
    double predicted_s;     /* the estimate for counting all available tokens */
    double allowed_s;       /* share x budget (0: no cap) */
} memory_budget_count;

/* Tokens to count of `available` for an order-K memory built by `shards`
 * threads in all, within share x budget_s seconds; s_per_mtok <= 0 takes
 * memory_budget_s_per_mtok(order). budget_s <= 0 or share <= 0: no cap. */
memory_budget_count memory_budget_tokens(uint64_t available, int order, int shards, double budget_s, double share,
                                         double s_per_mtok);

#endif
