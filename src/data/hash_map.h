/* hash_map.h - two small open-addressing hash maps used by the tokenizer:
 *  - u64_map: uint64 key -> uint64 value (token pairs (left << 32 | right));
 *  - bytes_map: byte-string key -> uint64 value (pre-token counts, the
 *    encoder's piece cache, token bytes -> id). Keys are copied into an arena;
 *    entries are kept in insertion order (deterministic iteration).
 * No global state; each map is owned by one thread at a time (lookups on a
 * map nobody modifies may run concurrently). Nothing tokenizer-specific here. */
#ifndef TEMPO_HASH_MAP_H
#define TEMPO_HASH_MAP_H

#include <stddef.h>
#include <stdint.h>

#define U64_MAP_EMPTY UINT64_MAX   /* the one key that cannot be stored */

typedef struct {
    uint64_t *keys;     /* cap slots, U64_MAP_EMPTY when free */
    uint64_t *values;
    size_t cap;         /* power of two (0 before the first insert) */
    size_t count;
} u64_map;

/* Pointer to key's value, or NULL if absent. */
uint64_t *u64_map_get(const u64_map *m, uint64_t key);
/* Pointer to key's value, inserting it with value 0 if absent (*is_new says
 * which); NULL if out of memory. The pointer is valid until the next insert. */
uint64_t *u64_map_put(u64_map *m, uint64_t key, int *is_new);
void u64_map_free(u64_map *m);

typedef struct {
    uint64_t key_off;   /* key bytes: arena[key_off .. key_off + key_len) */
    uint32_t key_len;
    uint32_t hash;
    uint64_t value;
} bytes_map_entry;

typedef struct {
    bytes_map_entry *entries;  /* count of them, insertion order */
    size_t count, entries_cap;
    uint32_t *index;           /* index_cap slots: entry number + 1, 0 when free */
    size_t index_cap;          /* power of two */
    uint8_t *arena;            /* key bytes */
    size_t arena_len, arena_cap;
} bytes_map;

/* Hash of a byte string (the one bytes_map uses). */
uint64_t bytes_hash(const uint8_t *p, size_t n);
/* Pointer to the value of key, or NULL if absent. */
uint64_t *bytes_map_get(const bytes_map *m, const uint8_t *key, size_t len);
/* Same with a precomputed bytes_hash(key). */
uint64_t *bytes_map_get_hashed(const bytes_map *m, const uint8_t *key, size_t len, uint64_t hash);
/* Pointer to key's value, inserting it with value 0 if absent; NULL if out of
 * memory or len >= 2^32. The pointer is valid until the next insert. */
uint64_t *bytes_map_put(bytes_map *m, const uint8_t *key, size_t len, int *is_new);
uint64_t *bytes_map_put_hashed(bytes_map *m, const uint8_t *key, size_t len, uint64_t hash,
                               int *is_new);
/* The key bytes of entry i. */
static inline const uint8_t *bytes_map_key(const bytes_map *m, size_t i)
{
    return m->arena + m->entries[i].key_off;
}
/* Remove every entry, keeping the memory. */
void bytes_map_clear(bytes_map *m);
void bytes_map_free(bytes_map *m);

#endif
