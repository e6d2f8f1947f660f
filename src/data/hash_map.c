/* hash_map.c - open-addressing maps with linear probing (see hash_map.h). */
#include "data/hash_map.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* ---------- u64_map ---------- */

uint64_t *u64_map_get(const u64_map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == key)
            return &m->values[i];
        if (m->keys[i] == U64_MAP_EMPTY)
            return NULL;
    }
}

static int u64_map_grow(u64_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = malloc(cap * sizeof *keys), *values = malloc(cap * sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return -1;
    }
    memset(keys, 0xff, cap * sizeof *keys);
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] == U64_MAP_EMPTY)
            continue;
        size_t j = mix64(m->keys[i]) & (cap - 1);
        while (keys[j] != U64_MAP_EMPTY)
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = cap;
    return 0;
}

uint64_t *u64_map_put(u64_map *m, uint64_t key, int *is_new)
{
    if (key == U64_MAP_EMPTY)
        return NULL;
    if ((m->count + 1) * 4 > m->cap * 3 && u64_map_grow(m))
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = mix64(key) & mask;
    while (m->keys[i] != U64_MAP_EMPTY) {
        if (m->keys[i] == key) {
            if (is_new)
                *is_new = 0;
            return &m->values[i];
        }
        i = (i + 1) & mask;
    }
    m->keys[i] = key;
    m->values[i] = 0;
    m->count++;
    if (is_new)
        *is_new = 1;
    return &m->values[i];
}

void u64_map_free(u64_map *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

/* ---------- bytes_map ---------- */

uint64_t bytes_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0x2545f4914f6cdd1dULL);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9fb21c651e98df25ULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, p, n);
        h = (h ^ w) * 0x9fb21c651e98df25ULL;
    }
    return mix64(h);
}

uint64_t *bytes_map_get_hashed(const bytes_map *m, const uint8_t *key, size_t len, uint64_t hash)
{
    if (!m->index_cap)
        return NULL;
    size_t mask = m->index_cap - 1;
    uint32_t h32 = (uint32_t)(hash >> 32);
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        uint32_t slot = m->index[i];
        if (!slot)
            return NULL;
        bytes_map_entry *e = &m->entries[slot - 1];
        if (e->hash == h32 && e->key_len == len && memcmp(m->arena + e->key_off, key, len) == 0)
            return &e->value;
    }
}

uint64_t *bytes_map_get(const bytes_map *m, const uint8_t *key, size_t len)
{
    return bytes_map_get_hashed(m, key, len, bytes_hash(key, len));
}

static int rebuild_index(bytes_map *m, size_t cap)
{
    uint32_t *index = calloc(cap, sizeof *index);
    if (!index)
        return -1;
    free(m->index);
    m->index = index;
    m->index_cap = cap;
    for (size_t e = 0; e < m->count; e++) {
        /* the stored 32 bits are the high half; the slot uses the low bits of
         * the full hash, which we recompute from the key */
        uint64_t h = bytes_hash(m->arena + m->entries[e].key_off, m->entries[e].key_len);
        size_t i = h & (cap - 1);
        while (index[i])
            i = (i + 1) & (cap - 1);
        index[i] = (uint32_t)(e + 1);
    }
    return 0;
}

uint64_t *bytes_map_put_hashed(bytes_map *m, const uint8_t *key, size_t len, uint64_t hash,
                               int *is_new)
{
    uint64_t *v = bytes_map_get_hashed(m, key, len, hash);
    if (v) {
        if (is_new)
            *is_new = 0;
        return v;
    }
    if (len >= UINT32_MAX || m->count + 1 >= UINT32_MAX)
        return NULL;
    if ((m->count + 1) * 2 > m->index_cap &&
        rebuild_index(m, m->index_cap ? m->index_cap * 2 : 256))
        return NULL;
    if (m->count == m->entries_cap) {
        size_t c = m->entries_cap ? m->entries_cap * 2 : 128;
        bytes_map_entry *e = realloc(m->entries, c * sizeof *e);
        if (!e)
            return NULL;
        m->entries = e;
        m->entries_cap = c;
    }
    if (m->arena_len + len > m->arena_cap) {
        size_t c = m->arena_cap ? m->arena_cap : 4096;
        while (c < m->arena_len + len)
            c *= 2;
        uint8_t *a = realloc(m->arena, c);
        if (!a)
            return NULL;
        m->arena = a;
        m->arena_cap = c;
    }
    if (len)
        memcpy(m->arena + m->arena_len, key, len);
    bytes_map_entry *e = &m->entries[m->count];
    e->key_off = m->arena_len;
    e->key_len = (uint32_t)len;
    e->hash = (uint32_t)(hash >> 32);
    e->value = 0;
    m->arena_len += len;
    size_t mask = m->index_cap - 1;
    size_t i = hash & mask;
    while (m->index[i])
        i = (i + 1) & mask;
    m->index[i] = (uint32_t)(++m->count);
    if (is_new)
        *is_new = 1;
    return &e->value;
}

uint64_t *bytes_map_put(bytes_map *m, const uint8_t *key, size_t len, int *is_new)
{
    return bytes_map_put_hashed(m, key, len, bytes_hash(key, len), is_new);
}

void bytes_map_clear(bytes_map *m)
{
    if (m->index)
        memset(m->index, 0, m->index_cap * sizeof *m->index);
    m->count = 0;
    m->arena_len = 0;
}

void bytes_map_free(bytes_map *m)
{
    free(m->entries);
    free(m->index);
    free(m->arena);
    memset(m, 0, sizeof *m);
}
