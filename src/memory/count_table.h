/* count_table.h - an open-addressing hash table from a 64-bit key to a few
 * 32-bit counters: the storage under the count memories (ngram_memory.h).
 *
 * Keys are any value below UINT64_MAX; a slot stores key + 1 so that an
 * all-zero slot is empty (tables come from calloc, whose pages the OS gives
 * lazily, or from a mapped file). A slot is the key (8 bytes) followed by
 * its `words` uint32 values (1 for n-gram counts, 5 for context
 * statistics), so one probe touches one cache line: the tables are far
 * larger than the caches and every lookup is a DRAM miss. Linear probing
 * from a start slot chosen by multiply-shift over the capacity, so the
 * capacity need not be a power of two and a saved table can be sized to its
 * load exactly. There is no deletion; count_table_compact rebuilds a table
 * without the slots a predicate drops. A table is either owned (growable)
 * or a read-only view of memory it does not own (a mapped file); a zeroed
 * table with `words` set is an empty owned table. Not thread-safe for
 * writers; any number of readers may share a table nobody writes. */
#ifndef TEMPO_COUNT_TABLE_H
#define TEMPO_COUNT_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint8_t *slots;      /* [capacity * count_table_stride(words)] */
    uint64_t capacity;   /* slots */
    uint64_t count;      /* occupied slots */
    int words;           /* uint32 values per slot */
    int owned;           /* 1: slots are malloc'd and the table may grow */
} count_table;

/* The hash every table and shard choice uses (splitmix64's finaliser). */
static inline uint64_t count_hash(uint64_t key)
{
    key += 0x9e3779b97f4a7c15ULL;
    key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ULL;
    key = (key ^ (key >> 27)) * 0x94d049bb133111ebULL;
    return key ^ (key >> 31);
}

static inline uint64_t count_table_stride(int words) { return 8u + 4u * (uint64_t)words; }

/* Slot i's stored key (key + 1; 0 = empty) and values. */
static inline uint64_t count_table_stored(const count_table *t, uint64_t i)
{
    uint64_t k;
    memcpy(&k, t->slots + i * count_table_stride(t->words), 8);
    return k;
}
static inline uint32_t *count_table_values(const count_table *t, uint64_t i)
{
    return (uint32_t *)(void *)(t->slots + i * count_table_stride(t->words) + 8);
}

/* An empty owned table with room for about `expected` keys. Returns 0, or -1
 * when out of memory. */
int count_table_init(count_table *t, int words, uint64_t expected);
/* An empty owned table of exactly `capacity` slots (a table received whole
 * from another process is copied into it). 0, or -1 when out of memory. */
int count_table_init_capacity(count_table *t, int words, uint64_t capacity);
void count_table_free(count_table *t);  /* owned memory only; keeps words, zeroes the rest */

static inline uint64_t count_table_start(const count_table *t, uint64_t h)
{
    return (uint64_t)(((unsigned __int128)h * t->capacity) >> 64);
}

/* The values of key whose count_hash is h, or NULL when absent. */
static inline const uint32_t *count_table_find_hashed(const count_table *t, uint64_t key, uint64_t h)
{
    if (t->capacity == 0)
        return NULL;
    uint64_t stored = key + 1;
    uint64_t i = count_table_start(t, h);
    for (;;) {
        uint64_t k = count_table_stored(t, i);
        if (k == stored)
            return count_table_values(t, i);
        if (k == 0)
            return NULL;
        if (++i == t->capacity)
            i = 0;
    }
}

/* The values of key, or NULL when absent. */
static inline const uint32_t *count_table_find(const count_table *t, uint64_t key)
{
    return count_table_find_hashed(t, key, count_hash(key));
}

/* Make room for n_more new keys without growing (so pointers from
 * count_table_upsert_hashed stay valid across them). Returns 0, or -1 when
 * out of memory or the table is a read-only view. */
int count_table_reserve(count_table *t, uint64_t n_more);

/* Hint the cache about the slot a key of hash h starts probing at. */
static inline void count_table_prefetch(const count_table *t, uint64_t h)
{
    __builtin_prefetch(t->slots + count_table_start(t, h) * count_table_stride(t->words), 1);
}

/* Upsert without a growth check: the caller reserved room. The values of
 * key, inserted as zeros when absent (*created = 1 then). */
static inline uint32_t *count_table_upsert_hashed(count_table *t, uint64_t key, uint64_t h, int *created)
{
    uint64_t stored = key + 1;
    uint64_t i = count_table_start(t, h);
    for (;;) {
        uint64_t k = count_table_stored(t, i);
        if (k == stored) {
            *created = 0;
            return count_table_values(t, i);
        }
        if (k == 0)
            break;
        if (++i == t->capacity)
            i = 0;
    }
    memcpy(t->slots + i * count_table_stride(t->words), &stored, 8);
    t->count++;
    *created = 1;
    return count_table_values(t, i);
}

/* count_table_upsert_hashed with growth past a load of 0.7. NULL when out of
 * memory (the table is then unchanged) or the table is a read-only view. */
uint32_t *count_table_upsert(count_table *t, uint64_t key, int *created);

/* Rebuild t with only the slots keep() accepts, at a capacity holding them at
 * a load of `load` (0 < load < 1). Returns 0 or -1 when out of memory (t is
 * then unchanged). */
int count_table_compact(count_table *t, double load, int (*keep)(const uint32_t *values, void *ctx), void *ctx);

/* count_table_compact keeping only each slot's first `words` values (1..t's
 * words): a table that carried working values through a build drops them.
 * -1 also when words is out of range. */
int count_table_compact_words(count_table *t, double load, int words,
                              int (*keep)(const uint32_t *values, void *ctx), void *ctx);

#endif
