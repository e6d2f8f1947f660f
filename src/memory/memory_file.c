/* memory_file.c - saving and mapping count memories (see memory_file.h). */
#include "memory/memory_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/sha256.h"

#define MAGIC "TEMPOMEM"
#define VERSION_EXACT 1u    /* every order's keys exact */
#define VERSION_HASHED 2u   /* the top order one above them, hashed */
#define VERSION_EXACT_ID 3u    /* 1 with the data id and build seconds */
#define VERSION_HASHED_ID 4u   /* 2 with them */
#define HASHED_CTX_LIMIT (1ULL << NGRAM_HASHED_CTX_BITS)   /* a hashed context key is below this */
#define FIXED_BYTES 712u      /* versions 1 and 2: the directory starts here */
#define ID_BYTES 40u          /* versions 3 and 4: data id (32) and build seconds (8) before it */

/* The fixed part of a version's header: where the directory starts. */
static uint64_t fixed_bytes(uint32_t version)
{
    return version >= VERSION_EXACT_ID ? FIXED_BYTES + ID_BYTES : FIXED_BYTES;
}

static uint64_t header_bytes(uint64_t fixed, int order, int shards)
{
    uint64_t h = fixed + (uint64_t)order * (uint64_t)shards * 2u * 24u;
    return (h + 63) / 64 * 64;
}

/* A table's slots, padded to 8 bytes. */
static uint64_t table_bytes(const count_table *t, int words)
{
    return (t->capacity * count_table_stride(words) + 7) / 8 * 8;
}

static const count_table *table_of(const ngram_memory *m, int n, int s, int kind)
{
    return kind ? &m->ctxs[n][s] : &m->grams[n][s];
}

/* A checksum over 8-byte words (4 lanes, so it runs near memory speed). */
typedef struct {
    uint64_t lane[4];
    int next;
} checksum;

static void checksum_words(checksum *c, const void *words, uint64_t n)
{
    const uint8_t *b = words;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t w;
        memcpy(&w, b + i * 8, 8);
        uint64_t *l = &c->lane[c->next];
        *l = (*l ^ w) * 0x9e3779b97f4a7c15ULL;
        *l ^= *l >> 29;
        c->next = (c->next + 1) & 3;
    }
}

static uint64_t checksum_final(const checksum *c)
{
    return count_hash(c->lane[0] ^ count_hash(c->lane[1] ^ count_hash(c->lane[2] ^ count_hash(c->lane[3]))));
}

/* Feed a table's bytes and zero padding to c, as the file holds them. */
static void checksum_table(checksum *c, const count_table *t, int words)
{
    uint64_t n = t->capacity * count_table_stride(words);
    checksum_words(c, t->slots, n / 8);
    if (n % 8) {
        uint64_t last = 0;
        memcpy(&last, t->slots + n / 8 * 8, n % 8);
        checksum_words(c, &last, 1);
    }
}

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

int memory_file_header(const ngram_memory *m, memory_header *hd, const char *path, tempo_error *err)
{
    const int K = m->order, P = m->shards;
    hd->bytes = NULL;
    hd->size = 0;
    if (K > m->exact_order + 1)
        return tempo_fail(err, "%s: a count memory of more than one hashed order (above %d) cannot be saved", path,
                          m->exact_order);
    const uint32_t version = K > m->exact_order ? VERSION_HASHED_ID : VERSION_EXACT_ID;
    uint64_t hb = header_bytes(fixed_bytes(version), K, P);
    uint8_t *h = calloc(1, hb);
    if (!h)
        return tempo_fail(err, "%s: out of memory", path);
    memcpy(h, MAGIC, 8);
    put_u32(h + 8, version);
    put_u32(h + 12, (uint32_t)m->vocab);
    put_u32(h + 16, (uint32_t)K);
    put_u32(h + 20, (uint32_t)P);
    put_u32(h + 24, (uint32_t)m->prune_min);
    put_u32(h + 28, NGRAM_CTX_WORDS);
    put_u64(h + 32, m->tokens);
    put_u64(h + 40, m->tokenizer_id);
    for (int n = 0; n <= NGRAM_MAX_ORDER; n++)
        for (int k = 0; k < 5; k++)
            put_u64(h + 64 + (uint64_t)(n * 5 + k) * 8, m->coc[n][k]);
    for (int n = 0; n <= NGRAM_MAX_ORDER; n++)
        for (int k = 0; k < 4; k++)
            memcpy(h + 424 + (uint64_t)(n * 4 + k) * 8, &m->disc[n][k], 8);
    memcpy(h + FIXED_BYTES, m->data_id, 32);
    memcpy(h + FIXED_BYTES + 32, &m->build_seconds, 8);
    uint64_t off = hb, dir = fixed_bytes(version);
    checksum ck = {{1, 2, 3, 4}, 0};
    for (int n = 1; n <= K; n++)
        for (int s = 0; s < P; s++)
            for (int kind = 0; kind < 2; kind++) {
                const count_table *t = table_of(m, n, s, kind);
                int words = kind ? NGRAM_CTX_WORDS : 1;
                put_u64(h + dir, t->capacity);
                put_u64(h + dir + 8, t->count);
                put_u64(h + dir + 16, off);
                dir += 24;
                off += table_bytes(t, words);
                checksum_table(&ck, t, words);
            }
    put_u64(h + 48, checksum_final(&ck));
    put_u64(h + 56, off);
    hd->bytes = h;
    hd->size = hb;
    return 0;
}

/* The identity of a header (memory_file_identity's digest of a file that begins with it): its
 * sha256 with the build's seconds zeroed (a timing, not the memory), then put back. */
static void header_digest(uint8_t *h, uint64_t hb, uint8_t digest[32])
{
    uint8_t seconds[8];
    int id = get_u32(h + 8) >= VERSION_EXACT_ID;
    if (id) {
        memcpy(seconds, h + FIXED_BYTES + 32, 8);
        memset(h + FIXED_BYTES + 32, 0, 8);
    }
    sha256(h, hb, digest);
    if (id)
        memcpy(h + FIXED_BYTES + 32, seconds, 8);
}

void memory_header_identity(memory_header *hd, uint8_t digest[32])
{
    header_digest(hd->bytes, hd->size, digest);
}

void memory_header_free(memory_header *hd)
{
    free(hd->bytes);
    hd->bytes = NULL;
    hd->size = 0;
}

int memory_file_write(const ngram_memory *m, const memory_header *hd, const char *path, tempo_error *err)
{
    const int K = m->order, P = m->shards;
    atomic_file af;
    int rc = atomic_open_direct(&af, path, err);   /* gigabytes, read back by mapping later */
    if (rc)
        return -1;
    rc = atomic_write(&af, hd->bytes, hd->size, err);
    static const uint8_t zero[8] = {0};
    for (int n = 1; n <= K && !rc; n++)
        for (int s = 0; s < P && !rc; s++)
            for (int kind = 0; kind < 2 && !rc; kind++) {
                const count_table *t = table_of(m, n, s, kind);
                int words = kind ? NGRAM_CTX_WORDS : 1;
                uint64_t b = t->capacity * count_table_stride(words);
                rc = atomic_write(&af, t->slots, b, err);
                if (!rc && b % 8) rc = atomic_write(&af, zero, 8 - b % 8, err);
            }
    if (rc) {
        atomic_abort(&af);
        return -1;
    }
    return atomic_commit(&af, err);
}

int memory_file_save(const ngram_memory *m, const char *path, tempo_error *err)
{
    memory_header hd;
    if (memory_file_header(m, &hd, path, err))
        return -1;
    int rc = memory_file_write(m, &hd, path, err);
    memory_header_free(&hd);
    return rc;
}

/* Check one mapped table: occupied slots = count < capacity, keys in range, totals positive. */
static int table_valid(const count_table *t, uint64_t key_limit, int ctx)
{
    if (t->capacity == 0)
        return t->count == 0;
    if (t->count >= t->capacity)
        return 0;
    uint64_t occupied = 0;
    for (uint64_t i = 0; i < t->capacity; i++) {
        uint64_t k = count_table_stored(t, i);
        if (!k)
            continue;
        occupied++;
        if (k > key_limit)
            return 0;
        if (ctx && count_table_values(t, i)[0] == 0)
            return 0;
    }
    return occupied == t->count;
}

/* Maps the file read-only: it must be a regular file that can hold a header. */
static int map_file(const char *path, uint8_t **map, uint64_t *size, tempo_error *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return tempo_fail(err, "%s: cannot open the count memory", path);
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return tempo_fail(err, "%s: not a regular file", path);
    }
    *size = (uint64_t)st.st_size;
    if (*size < 64 + FIXED_BYTES) {
        close(fd);
        return tempo_fail(err, "%s: truncated (%llu bytes; not a tempo count memory)", path,
                          (unsigned long long)*size);
    }
    *map = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (*map == MAP_FAILED)
        return tempo_fail(err, "%s: cannot map", path);
    return 0;
}

/* The header's first 64 bytes: magic, version, the memory's shape (m initialised with it), what it
 * was built for (checked against the model's vocabulary and tokenizer when given) and the file's
 * size. Sets the version, where the directory starts and where the tables start. */
static int read_header(ngram_memory *m, const uint8_t *map, uint64_t size, const char *path, int expect_vocab,
                       uint64_t expect_tokenizer, uint32_t *version_out, uint64_t *fixed_out, uint64_t *hb_out,
                       tempo_error *err)
{
    if (memcmp(map, MAGIC, 8))
        return tempo_fail(err, "%s: not a tempo count memory (bad magic)", path);
    uint32_t version = get_u32(map + 8);
    if (version < VERSION_EXACT || version > VERSION_HASHED_ID)
        return tempo_fail(err, "%s: count memory version %u (this tempo reads %u to %u)", path, version,
                          VERSION_EXACT, VERSION_HASHED_ID);
    const uint64_t fixed = fixed_bytes(version);
    if (size < 64 + fixed)
        return tempo_fail(err, "%s: truncated (%llu bytes; not a tempo count memory)", path, (unsigned long long)size);
    int vocab = (int)get_u32(map + 12), order = (int)get_u32(map + 16), shards = (int)get_u32(map + 20);
    int hashed_orders = version == VERSION_HASHED || version == VERSION_HASHED_ID ? 1 : 0;
    if (get_u32(map + 12) > (1u << 24) || ngram_memory_init(m, vocab, order, shards, err) ||
        order - m->exact_order != hashed_orders || get_u32(map + 28) != NGRAM_CTX_WORDS)
        return tempo_fail(err, "%s: corrupt header (vocab %u, order %u, shards %u)", path, get_u32(map + 12),
                          get_u32(map + 16), get_u32(map + 20));
    if (expect_vocab > 0 && vocab != expect_vocab)
        return tempo_fail(err, "%s: count memory of a %d-id vocabulary, the model has %d", path, vocab, expect_vocab);
    m->prune_min = (int)get_u32(map + 24);
    m->tokens = get_u64(map + 32);
    m->tokenizer_id = get_u64(map + 40);
    if (expect_tokenizer && m->tokenizer_id != expect_tokenizer)
        return tempo_fail(err, "%s: count memory of another tokenizer than the model's", path);
    uint64_t hb = header_bytes(fixed, order, shards);
    if (get_u64(map + 56) != size || size < hb)
        return tempo_fail(err, "%s: truncated or padded (header says %llu bytes, file holds %llu)", path,
                          (unsigned long long)get_u64(map + 56), (unsigned long long)size);
    *version_out = version;
    *fixed_out = fixed;
    *hb_out = hb;
    return 0;
}

/* The count-of-counts and discounts of every order, then (versions 3 and 4) the data id and the
 * build's seconds. */
static int read_statistics(ngram_memory *m, const uint8_t *map, uint32_t version, const char *path, tempo_error *err)
{
    for (int n = 0; n <= NGRAM_MAX_ORDER; n++) {
        for (int k = 0; k < 5; k++)
            m->coc[n][k] = get_u64(map + 64 + (uint64_t)(n * 5 + k) * 8);
        for (int k = 0; k < 4; k++)
            memcpy(&m->disc[n][k], map + 424 + (uint64_t)(n * 4 + k) * 8, 8);
        for (int k = 1; k <= 3; k++)
            if (!(m->disc[n][k] >= 0 && m->disc[n][k] <= k))
                return tempo_fail(err, "%s: corrupt discounts", path);
    }
    if (version >= VERSION_EXACT_ID) {
        memcpy(m->data_id, map + FIXED_BYTES, 32);
        memcpy(&m->build_seconds, map + FIXED_BYTES + 32, 8);
        if (!(m->build_seconds >= 0 && m->build_seconds < 1e9))
            return tempo_fail(err, "%s: corrupt header (build seconds)", path);
    }
    return 0;
}

/* Points every table at its slots in the map, in the directory's order (each right after the
 * one before, the first at hb), checks their keys and the checksum over them all. */
static int map_tables(ngram_memory *m, uint8_t *map, uint64_t size, uint64_t fixed, uint64_t hb,
                      const char *path, tempo_error *err)
{
    uint64_t dir = fixed, expect_off = hb;
    checksum ck = {{1, 2, 3, 4}, 0};
    for (int n = 1; n <= m->order; n++)
        for (int s = 0; s < m->shards; s++)
            for (int kind = 0; kind < 2; kind++) {
                count_table *t = kind ? &m->ctxs[n][s] : &m->grams[n][s];
                int words = kind ? NGRAM_CTX_WORDS : 1;
                uint64_t cap = get_u64(map + dir), cnt = get_u64(map + dir + 8), off = get_u64(map + dir + 16);
                dir += 24;
                if (off != expect_off || off > size || cap > size / 8 || size - off < cap * count_table_stride(words))
                    return tempo_fail(err, "%s: truncated or corrupt (table of order %d ends past the file)", path, n);
                t->slots = map + off;
                t->capacity = cap;
                t->count = cnt;
                t->words = words;
                t->owned = 0;
                expect_off = off + table_bytes(t, words);
                checksum_table(&ck, t, words);
                uint64_t limit = n > m->exact_order ? (kind ? HASHED_CTX_LIMIT : HASHED_CTX_LIMIT * (uint64_t)m->vocab)
                                                    : kind ? m->pow[n - 1] : m->pow[n];
                if (!table_valid(t, limit, kind))
                    return tempo_fail(err, "%s: corrupt table (order %d, shard %d)", path, n, s);
            }
    if (expect_off != size || checksum_final(&ck) != get_u64(map + 48))
        return tempo_fail(err, "%s: corrupt (checksum mismatch)", path);
    return 0;
}

int memory_file_load(ngram_memory *m, const char *path, int expect_vocab, uint64_t expect_tokenizer,
                     tempo_error *err)
{
    memset(m, 0, sizeof *m);
    uint8_t *map = NULL;
    uint64_t size = 0;
    if (map_file(path, &map, &size, err))
        return -1;
    uint32_t version = 0;
    uint64_t fixed = 0, hb = 0;   /* set by read_header */
    if (read_header(m, map, size, path, expect_vocab, expect_tokenizer, &version, &fixed, &hb, err) ||
        read_statistics(m, map, version, path, err) || map_tables(m, map, size, fixed, hb, path, err)) {
        memset(m, 0, sizeof *m);
        munmap(map, size);
        return -1;
    }
    m->map_ = map;
    m->map_len_ = size;
    return 0;
}

uint64_t ngram_tokenizer_id(const tokenizer *tok)
{
    uint64_t h = 0x7e4d0ULL;
    int v = tok_vocab_size(tok);
    for (int32_t id = 0; id < v; id++) {
        const uint8_t *b;
        size_t n = tok_token_bytes(tok, id, &b);
        h = count_hash(h ^ (uint64_t)n ^ ((uint64_t)id << 32));
        for (size_t i = 0; i < n; i++)
            h = count_hash(h ^ b[i]);
    }
    return h ? h : 1;
}

int memory_file_identity(const char *path, uint8_t digest[32], tempo_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tempo_fail(err, "%s: cannot open the count memory", path);
    uint8_t fixed[FIXED_BYTES + ID_BYTES];
    size_t got = fread(fixed, 1, sizeof fixed, f);
    uint32_t version = got >= 12 ? get_u32(fixed + 8) : 0;
    if (got < FIXED_BYTES || memcmp(fixed, MAGIC, 8) || version < VERSION_EXACT || version > VERSION_HASHED_ID ||
        got < fixed_bytes(version)) {
        fclose(f);
        return tempo_fail(err, "%s: not a tempo count memory (or truncated)", path);
    }
    uint32_t order = get_u32(fixed + 16), shards = get_u32(fixed + 20);
    if (order < 1 || order > NGRAM_MAX_ORDER || shards < 1 || shards > NGRAM_MAX_SHARDS) {
        fclose(f);
        return tempo_fail(err, "%s: corrupt header (order %u, shards %u)", path, order, shards);
    }
    uint64_t hb = header_bytes(fixed_bytes(version), (int)order, (int)shards);
    uint8_t *h = malloc(hb);
    int bad = !h || fseek(f, 0, SEEK_SET) || fread(h, 1, hb, f) != hb;
    fclose(f);
    if (bad) {
        free(h);
        return tempo_fail(err, "%s: truncated header", path);
    }
    header_digest(h, hb, digest);
    free(h);
    return 0;
}

int memory_file_verify(const char *path, tempo_error *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return tempo_fail(err, "%s: cannot open the count memory", path);
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < 64 + FIXED_BYTES) {
        close(fd);
        return tempo_fail(err, "%s: not a count memory (or truncated)", path);
    }
    uint64_t size = (uint64_t)st.st_size;
    uint8_t *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return tempo_fail(err, "%s: cannot map", path);
    madvise(map, size, MADV_SEQUENTIAL);
    uint32_t version = get_u32(map + 8);
    int rc = 0;
    uint64_t hb = 0;
    if (memcmp(map, MAGIC, 8) || version < VERSION_EXACT || version > VERSION_HASHED_ID ||
        size < 64 + fixed_bytes(version) || get_u32(map + 16) < 1 || get_u32(map + 16) > NGRAM_MAX_ORDER ||
        get_u32(map + 20) < 1 || get_u32(map + 20) > NGRAM_MAX_SHARDS)
        rc = tempo_fail(err, "%s: not a tempo count memory (bad header)", path);
    else if ((hb = header_bytes(fixed_bytes(version), (int)get_u32(map + 16), (int)get_u32(map + 20))) > size ||
             get_u64(map + 56) != size || (size - hb) % 8)
        rc = tempo_fail(err, "%s: truncated or padded", path);
    if (!rc) {
        checksum ck = {{1, 2, 3, 4}, 0};
        checksum_words(&ck, map + hb, (size - hb) / 8);
        if (checksum_final(&ck) != get_u64(map + 48))
            rc = tempo_fail(err, "%s: corrupt (checksum mismatch)", path);
    }
    munmap(map, size);
    return rc;
}
