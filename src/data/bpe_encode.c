/* bpe_encode.c - encoding text to ids (see tokenizer.h): pre-split, then
 * merge within each piece by lowest rank; a per-encoder cache of piece -> ids
 * makes repeated words cost one hash lookup. Two merge loops give the same
 * result: a quadratic scan for short pieces, a heap for long ones (a 1 MB
 * run of letters must not take 10^12 steps). */
#include "data/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

#include "data/pretokenize.h"

#define SHORT_PIECE 64          /* pieces up to this length use the scan and are cached */
#define CACHE_MAX_ENTRIES (1u << 18)
#define CACHE_MAX_IDS (1u << 21)

/* Quadratic merge for short pieces: ranks[i] is the rank of pair (ids[i], ids[i+1]). */
static size_t merge_scan(const tokenizer *t, const uint8_t *p, size_t n, int32_t *ids)
{
    uint32_t ranks_small[SHORT_PIECE];
    uint32_t *ranks = n <= SHORT_PIECE ? ranks_small : malloc(n * sizeof *ranks);
    if (!ranks)
        return 0;
    for (size_t i = 0; i < n; i++)
        ids[i] = p[i];
    for (size_t i = 0; i + 1 < n; i++)
        ranks[i] = tok_pair_rank(t, p[i], p[i + 1]);
    size_t m = n;
    while (m > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < m; i++)
            if (ranks[i] < ranks[best])
                best = i;
        if (ranks[best] == TOK_NO_MERGE)
            break;
        ids[best] = (int32_t)ranks[best];
        memmove(ids + best + 1, ids + best + 2, (m - best - 2) * sizeof *ids);
        if (best + 2 < m)
            memmove(ranks + best + 1, ranks + best + 2, (m - best - 3) * sizeof *ranks);
        m--;
        if (best > 0)
            ranks[best - 1] = tok_pair_rank(t, (uint32_t)ids[best - 1], (uint32_t)ids[best]);
        if (best + 1 < m)
            ranks[best] = tok_pair_rank(t, (uint32_t)ids[best], (uint32_t)ids[best + 1]);
    }
    if (ranks != ranks_small)
        free(ranks);
    return m;
}

/* Min-heap of (rank << 32 | position): the lowest rank first, leftmost on ties. */
static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h[parent] <= v)
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], v = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (v <= h[c])
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
    return top;
}

/* Heap-driven merge: symbols form a linked list over the original positions;
 * stale heap entries are skipped by re-checking the pair's rank on pop. */
static size_t merge_heap(const tokenizer *t, const uint8_t *p, size_t n, int32_t *ids)
{
    if (n >= UINT32_MAX)
        return 0;
    uint32_t *next = malloc(n * sizeof *next), *prev = malloc(n * sizeof *prev);
    int32_t *sym = malloc(n * sizeof *sym);
    uint64_t *heap = malloc(3 * n * sizeof *heap); /* n-1 initial + 2 per merge */
    size_t m = 0;
    if (!next || !prev || !sym || !heap)
        goto done;
    const uint32_t end = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        sym[i] = p[i];
        next[i] = i + 1 < n ? (uint32_t)(i + 1) : end;
        prev[i] = i > 0 ? (uint32_t)(i - 1) : end;
    }
    size_t hn = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        uint32_t r = tok_pair_rank(t, p[i], p[i + 1]);
        if (r != TOK_NO_MERGE) {
            heap[hn++] = (uint64_t)r << 32 | i;
        }
    }
    /* heapify (sift each down from the bottom up) */
    for (size_t k = hn / 2; k-- > 0;) {
        uint64_t v = heap[k];
        size_t i = k;
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= hn) break;
            if (c + 1 < hn && heap[c + 1] < heap[c]) c++;
            if (v <= heap[c]) break;
            heap[i] = heap[c];
            i = c;
        }
        heap[i] = v;
    }
    while (hn) {
        uint64_t top = heap_pop(heap, &hn);
        uint32_t r = (uint32_t)(top >> 32), i = (uint32_t)top;
        /* valid only if i is alive (sym >= 0) with a right neighbour forming rank r */
        if (sym[i] < 0 || next[i] == end)
            continue;
        uint32_t j = next[i];
        if (tok_pair_rank(t, (uint32_t)sym[i], (uint32_t)sym[j]) != r)
            continue;
        sym[i] = (int32_t)r;
        sym[j] = -1;
        next[i] = next[j];
        if (next[j] != end)
            prev[next[j]] = i;
        if (prev[i] != end) {
            uint32_t rl = tok_pair_rank(t, (uint32_t)sym[prev[i]], (uint32_t)sym[i]);
            if (rl != TOK_NO_MERGE) {
                heap_push(heap, &hn, (uint64_t)rl << 32 | prev[i]);
            }
        }
        if (next[i] != end) {
            uint32_t rr = tok_pair_rank(t, (uint32_t)sym[i], (uint32_t)sym[next[i]]);
            if (rr != TOK_NO_MERGE) {
                heap_push(heap, &hn, (uint64_t)rr << 32 | i);
            }
        }
    }
    for (uint32_t i = 0; i != end; i = next[i])
        ids[m++] = sym[i];
done:
    free(next);
    free(prev);
    free(sym);
    free(heap);
    return m;
}

size_t tok_encode_piece(const tokenizer *t, const uint8_t *piece, size_t len, int32_t *out,
                        int method)
{
    if (len == 0)
        return 0;
    if (method == 1 || (method == 0 && len <= SHORT_PIECE))
        return merge_scan(t, piece, len, out);
    return merge_heap(t, piece, len, out);
}

/* ---------- the encoder with its cache ---------- */

struct tok_encoder {
    const tokenizer *t;
    bytes_map cache;      /* piece -> (offset into cache_ids << 8 | id count) */
    int32_t *cache_ids;
    size_t cache_n, cache_cap;
};

int tok_encoder_new(tok_encoder **out, const tokenizer *t, tempo_error *err)
{
    tok_encoder *e = calloc(1, sizeof *e);
    *out = e;
    if (!e)
        return tempo_fail(err, "tokenizer: out of memory");
    e->t = t;
    *out = e;
    return 0;
}

void tok_encoder_free(tok_encoder *e)
{
    if (!e)
        return;
    bytes_map_free(&e->cache);
    free(e->cache_ids);
    free(e);
}

static int reserve_ids(int32_t **ids, size_t *n, size_t *cap, size_t extra)
{
    if (*n + extra <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < *n + extra)
        c *= 2;
    int32_t *d = realloc(*ids, c * sizeof *d);
    if (!d)
        return -1;
    *ids = d;
    *cap = c;
    return 0;
}

/* Encode a short piece through the cache; appends to out (room reserved). */
static size_t encode_cached(tok_encoder *e, const uint8_t *p, size_t len, int32_t *out)
{
    uint64_t h = bytes_hash(p, len);
    uint64_t *v = bytes_map_get_hashed(&e->cache, p, len, h);
    if (v) {
        size_t count = *v & 0xFF;
        memcpy(out, e->cache_ids + (*v >> 8), count * sizeof *out);
        return count;
    }
    size_t count = merge_scan(e->t, p, len, out);
    if (e->cache.count >= CACHE_MAX_ENTRIES || e->cache_n + count > CACHE_MAX_IDS) {
        bytes_map_clear(&e->cache);
        e->cache_n = 0;
    }
    if (e->cache_n + count > e->cache_cap) {
        size_t c = e->cache_cap ? e->cache_cap * 2 : 1u << 14;
        while (c < e->cache_n + count)
            c *= 2;
        int32_t *d = realloc(e->cache_ids, c * sizeof *d);
        if (!d)
            return count; /* no room to cache: still a correct result */
        e->cache_ids = d;
        e->cache_cap = c;
    }
    uint64_t *slot = bytes_map_put_hashed(&e->cache, p, len, h, NULL);
    if (slot) {
        memcpy(e->cache_ids + e->cache_n, out, count * sizeof *out);
        *slot = (uint64_t)e->cache_n << 8 | count;
        e->cache_n += count;
    }
    return count;
}

int tok_encoder_encode(tok_encoder *e, const uint8_t *text, size_t len, int32_t **ids, size_t *n,
                       size_t *cap, tempo_error *err)
{
    if (len == 0) /* nothing to add (and *ids may be NULL: no pointer arithmetic on it) */
        return 0;
    /* at most one id per byte */
    if (reserve_ids(ids, n, cap, len))
        return tempo_fail(err, "tokenizer: out of memory encoding %zu bytes", len);
    int32_t *out = *ids + *n;
    size_t pos = 0;
    while (pos < len) {
        size_t k = pretok_next(text + pos, len - pos);
        const uint8_t *p = text + pos;
        if (k == 1) {
            *out++ = p[0];
        } else if (k <= SHORT_PIECE) {
            out += encode_cached(e, p, k, out);
        } else {
            size_t m = merge_heap(e->t, p, k, out);
            if (m == 0)
                return tempo_fail(err, "tokenizer: out of memory encoding a %zu-byte piece", k);
            out += m;
        }
        pos += k;
    }
    *n = (size_t)(out - *ids);
    return 0;
}

int tok_encode(const tokenizer *t, const uint8_t *text, size_t len, int32_t **ids, size_t *n,
               size_t *cap, tempo_error *err)
{
    tok_encoder *e = NULL;
    if (tok_encoder_new(&e, t, err))
        return -1;
    int rc = tok_encoder_encode(e, text, len, ids, n, cap, err);
    tok_encoder_free(e);
    return rc;
}
