/* count_table.c - the open-addressing table of count_table.h: allocation,
 * growth and compaction. Lookup and insertion are inline in the header. */
#include "memory/count_table.h"

#include <stdlib.h>
#include <sys/mman.h>

#define MAX_LOAD 0.7
#define HUGE_PAGE ((uint64_t)2 << 20)
#define MAPPED_FROM (4 * HUGE_PAGE)   /* tables of this many bytes or more are mapped in huge pages */

/* A table's slots, zeroed. Large tables get their own mapping, aligned to
 * and advised for 2 MB pages: a build touches its gigabytes of slots at
 * random, and with 4 KB pages nearly every probe also misses the TLB and
 * walks the page tables (and a first touch faults once per 4 KB). */
static uint8_t *slots_alloc(uint64_t bytes)
{
    if (bytes < MAPPED_FROM)
        return calloc(1, bytes ? (size_t)bytes : 1);
    uint64_t len = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    uint8_t *p = mmap(NULL, (size_t)(len + HUGE_PAGE), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uint64_t head = (HUGE_PAGE - (uint64_t)(uintptr_t)p % HUGE_PAGE) % HUGE_PAGE;
    if (head)
        munmap(p, (size_t)head);
    munmap(p + head + len, (size_t)(HUGE_PAGE - head));
#ifdef MADV_HUGEPAGE
    madvise(p + head, (size_t)len, MADV_HUGEPAGE);   /* advice: without it, ordinary pages */
#endif
    return p + head;
}

static void slots_free(uint8_t *slots, uint64_t bytes)
{
    if (!slots)
        return;
    if (bytes < MAPPED_FROM)
        free(slots);
    else
        munmap(slots, (size_t)((bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE));
}

static uint64_t capacity_for(uint64_t n, double load)
{
    return (uint64_t)((double)n / load) + 16;
}

static int alloc_slots(count_table *t, uint64_t capacity, int words)
{
    uint8_t *slots = slots_alloc(capacity * count_table_stride(words));
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

int count_table_init_capacity(count_table *t, int words, uint64_t capacity)
{
    memset(t, 0, sizeof *t);
    return alloc_slots(t, capacity, words);
}

void count_table_free(count_table *t)
{
    int words = t->words;
    if (t->owned)
        slots_free(t->slots, t->capacity * count_table_stride(words));
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
