/* count_table.c - the open-addressing table of count_table.h: allocation,
 * growth and compaction. Lookup and insertion are inline in the header. */
#include "memory/count_table.h"

#include <stdlib.h>

#define MAX_LOAD 0.7

static uint64_t capacity_for(uint64_t n, double load)
{
    return (uint64_t)((double)n / load) + 16;
}

static int alloc_slots(count_table *t, uint64_t capacity, int words)
{
    uint8_t *slots = calloc(capacity, count_table_stride(words));
    if (!slots)
        return -1;
    t->slots = slots;
    t->capacity = capacity;
    t->count = 0;
    t->words = words;
    t->owned = 1;
    return 0;
}

int count_table_init(count_table *t, int words, uint64_t expected)
{
    memset(t, 0, sizeof *t);
    return alloc_slots(t, capacity_for(expected, MAX_LOAD), words);
}

void count_table_free(count_table *t)
{
    int words = t->words;
    if (t->owned)
        free(t->slots);
    memset(t, 0, sizeof *t);
    t->words = words;
}

/* Place a slot's bytes (its key and t's `words` first values) into a table
 * known to hold neither its key nor too many keys. */
static void place(count_table *t, const uint8_t *slot, uint64_t h)
{
    uint64_t i = count_table_start(t, h);
    while (count_table_stored(t, i) != 0)
        if (++i == t->capacity)
            i = 0;
    memcpy(t->slots + i * count_table_stride(t->words), slot, count_table_stride(t->words));
    t->count++;
}

/* Copy the kept slots into a new table of `capacity` whose slots keep the
 * first `words` values (at most t's). The new table is larger than the
 * caches, so each key's start slot is prefetched AHEAD keys early. */
static int rebuild(count_table *t, uint64_t capacity, int words, int (*keep)(const uint32_t *, void *), void *ctx)
{
    enum { AHEAD = 16 };
    count_table n;
    memset(&n, 0, sizeof n);
    if (alloc_slots(&n, capacity, words))
        return -1;
    const uint64_t stride = count_table_stride(t->words);
    uint64_t pend[AHEAD], pend_h[AHEAD];
    int head = 0, fill = 0;
    for (uint64_t i = 0; i < t->capacity; i++) {
        uint64_t k = count_table_stored(t, i);
        if (!k || (keep && !keep(count_table_values(t, i), ctx)))
            continue;
        if (fill == AHEAD) {
            place(&n, t->slots + pend[head] * stride, pend_h[head]);
            head = (head + 1) % AHEAD;
            fill--;
        }
        uint64_t h = count_hash(k - 1);
        count_table_prefetch(&n, h);
        int at = (head + fill) % AHEAD;
        pend[at] = i;
        pend_h[at] = h;
        fill++;
    }
    for (; fill > 0; fill--, head = (head + 1) % AHEAD)
        place(&n, t->slots + pend[head] * stride, pend_h[head]);
    count_table_free(t);
    *t = n;
    return 0;
}

int count_table_reserve(count_table *t, uint64_t n_more)
{
    if (!t->owned && t->capacity)
        return -1;
    if ((double)(t->count + n_more) <= MAX_LOAD * (double)t->capacity)
        return 0;
    uint64_t cap = t->capacity ? t->capacity * 2 : 16;
    while ((double)(t->count + n_more) > MAX_LOAD * (double)cap)
        cap *= 2;
    return rebuild(t, cap, t->words, NULL, NULL);
}

uint32_t *count_table_upsert(count_table *t, uint64_t key, int *created)
{
    if (count_table_reserve(t, 1))
        return NULL;
    return count_table_upsert_hashed(t, key, count_hash(key), created);
}

int count_table_compact(count_table *t, double load, int (*keep)(const uint32_t *values, void *ctx), void *ctx)
{
    return count_table_compact_words(t, load, t->words, keep, ctx);
}

int count_table_compact_words(count_table *t, double load, int words,
                              int (*keep)(const uint32_t *values, void *ctx), void *ctx)
{
    if (words < 1 || words > t->words)
        return -1;
    uint64_t n = 0;
    for (uint64_t i = 0; i < t->capacity; i++)
        if (count_table_stored(t, i) && (!keep || keep(count_table_values(t, i), ctx)))
            n++;
    return rebuild(t, capacity_for(n, load), words, keep, ctx);
}
