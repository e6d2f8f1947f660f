/* bpe_train.c - BPE training (see bpe_train.h): piece counting, then merges
 * with incremental pair counts, per-pair word lists and a lazy max-heap. */
#include "data/bpe_train.h"

#include <stdlib.h>
#include <string.h>

#include "data/hash_map.h"
#include "data/pretokenize.h"

struct tok_trainer {
    bytes_map pieces;    /* piece bytes -> count */
    uint64_t n_bytes;
};

int tok_trainer_new(tok_trainer **out, tempo_error *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : tempo_fail(err, "tokenizer training: out of memory");
}

void tok_trainer_free(tok_trainer *tr)
{
    if (!tr)
        return;
    bytes_map_free(&tr->pieces);
    free(tr);
}

int tok_trainer_add(tok_trainer *tr, const uint8_t *text, size_t len, tempo_error *err)
{
    size_t pos = 0;
    while (pos < len) {
        size_t k = pretok_next(text + pos, len - pos);
        if (k >= 2) {
            uint64_t *v = bytes_map_put(&tr->pieces, text + pos, k, NULL);
            if (!v)
                return tempo_fail(err, "tokenizer training: out of memory");
            (*v)++;
        }
        pos += k;
    }
    tr->n_bytes += len;
    return 0;
}

int tok_trainer_absorb(tok_trainer *into, const tok_trainer *from, tempo_error *err)
{
    for (size_t i = 0; i < from->pieces.count; i++) {
        const bytes_map_entry *e = &from->pieces.entries[i];
        uint64_t *v = bytes_map_put(&into->pieces, bytes_map_key(&from->pieces, i), e->key_len, NULL);
        if (!v)
            return tempo_fail(err, "tokenizer training: out of memory");
        *v += e->value;
    }
    into->n_bytes += from->n_bytes;
    return 0;
}

uint64_t tok_trainer_bytes(const tok_trainer *tr) { return tr->n_bytes; }
size_t tok_trainer_distinct(const tok_trainer *tr) { return tr->pieces.count; }

/* ---------- training state ---------- */

typedef struct {
    size_t start;        /* symbols: syms[start .. start + len) */
    uint32_t len;
    uint32_t stamp;      /* last merge id that visited this word */
    int64_t count;
} word;

typedef struct {
    int64_t count;       /* occurrences over all words (weighted by word count) */
    int64_t pushed;      /* count of the newest heap entry for this pair */
    uint32_t a, b;
    uint32_t *words;     /* words that may hold the pair (stale entries allowed) */
    uint32_t n_words, cap_words;
    uint32_t dirty;      /* last merge id that changed the count */
} pair_rec;

typedef struct {
    int64_t count;
    uint32_t a, b, pair;
} heap_entry;

typedef struct {
    word *words;
    size_t n_words;
    int32_t *syms;
    u64_map pair_index;  /* (a << 32 | b) -> index into pairs */
    pair_rec *pairs;
    size_t n_pairs, cap_pairs;
    heap_entry *heap;
    size_t n_heap, cap_heap;
    uint32_t *dirty;     /* pairs changed by the current merge */
    size_t n_dirty, cap_dirty;
    int oom;
} trainer_state;

/* x comes out of the heap before y: higher count, then smaller (a, b). */
static int heap_before(const heap_entry *x, const heap_entry *y)
{
    if (x->count != y->count)
        return x->count > y->count;
    if (x->a != y->a)
        return x->a < y->a;
    return x->b < y->b;
}

static void heap_push(trainer_state *s, int64_t count, uint32_t pair)
{
    if (s->n_heap == s->cap_heap) {
        size_t c = s->cap_heap ? s->cap_heap * 2 : 1024;
        heap_entry *h = realloc(s->heap, c * sizeof *h);
        if (!h) {
            s->oom = 1;
            return;
        }
        s->heap = h;
        s->cap_heap = c;
    }
    heap_entry v = {count, s->pairs[pair].a, s->pairs[pair].b, pair};
    size_t i = s->n_heap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_before(&v, &s->heap[parent]))
            break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = v;
    s->pairs[pair].pushed = count;
}

static heap_entry heap_pop(trainer_state *s)
{
    heap_entry top = s->heap[0], v = s->heap[--s->n_heap];
    size_t i = 0, n = s->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_before(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!heap_before(&s->heap[c], &v))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n)
        s->heap[i] = v;
    return top;
}

/* Index of pair (a, b), created with count 0 if new; SIZE_MAX if out of memory. */
static size_t pair_get(trainer_state *s, uint32_t a, uint32_t b)
{
    int is_new;
    uint64_t *v = u64_map_put(&s->pair_index, (uint64_t)a << 32 | b, &is_new);
    if (!v) {
        s->oom = 1;
        return SIZE_MAX;
    }
    if (!is_new)
        return (size_t)*v;
    if (s->n_pairs == s->cap_pairs) {
        size_t c = s->cap_pairs ? s->cap_pairs * 2 : 4096;
        pair_rec *p = realloc(s->pairs, c * sizeof *p);
        if (!p) {
            s->oom = 1;
            return SIZE_MAX;
        }
        s->pairs = p;
        s->cap_pairs = c;
    }
    pair_rec *r = &s->pairs[s->n_pairs];
    memset(r, 0, sizeof *r);
    r->a = a;
    r->b = b;
    r->dirty = UINT32_MAX;
    *v = s->n_pairs;
    return s->n_pairs++;
}

/* Add delta occurrences of (a, b); if w is not UINT32_MAX, note that word w holds it. */
static void pair_add(trainer_state *s, uint32_t a, uint32_t b, int64_t delta, uint32_t w,
                     uint32_t merge_id)
{
    size_t i = pair_get(s, a, b);
    if (i == SIZE_MAX)
        return;
    pair_rec *r = &s->pairs[i];
    r->count += delta;
    if (r->dirty != merge_id) {
        r->dirty = merge_id;
        if (s->n_dirty == s->cap_dirty) {
            size_t c = s->cap_dirty ? s->cap_dirty * 2 : 1024;
            uint32_t *d = realloc(s->dirty, c * sizeof *d);
            if (!d) {
                s->oom = 1;
                return;
            }
            s->dirty = d;
            s->cap_dirty = c;
        }
        s->dirty[s->n_dirty++] = (uint32_t)i;
    }
    if (w != UINT32_MAX && !(r->n_words && r->words[r->n_words - 1] == w)) {
        if (r->n_words == r->cap_words) {
            uint32_t c = r->cap_words ? r->cap_words * 2 : 4;
            uint32_t *d = realloc(r->words, c * sizeof *d);
            if (!d) {
                s->oom = 1;
                return;
            }
            r->words = d;
            r->cap_words = c;
        }
        r->words[r->n_words++] = w;
    }
}

/* A piece to sort: its bytes and where its count lives. */
typedef struct {
    const uint8_t *key;
    uint32_t len;
    uint32_t entry;
} piece_ref;

/* Sort order of the distinct pieces: by bytes, shorter first on a common prefix. */
static int cmp_pieces(const void *x, const void *y)
{
    const piece_ref *a = x, *b = y;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->key, b->key, n);
    if (c)
        return c;
    return (a->len > b->len) - (a->len < b->len);
}

/* Words from the counted pieces, in sorted order, with their initial pairs. */
static int init_state(trainer_state *s, const bytes_map *pieces)
{
    size_t n = pieces->count, total = 0;
    piece_ref *order = malloc((n ? n : 1) * sizeof *order);
    s->words = malloc((n ? n : 1) * sizeof *s->words);
    for (size_t i = 0; i < n; i++)
        total += pieces->entries[i].key_len;
    s->syms = malloc((total ? total : 1) * sizeof *s->syms);
    if (!order || !s->words || !s->syms || n >= UINT32_MAX - 1) {
        free(order);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        order[i].key = bytes_map_key(pieces, i);
        order[i].len = pieces->entries[i].key_len;
        order[i].entry = (uint32_t)i;
    }
    if (n > 1)
        qsort(order, n, sizeof *order, cmp_pieces);
    size_t off = 0;
    for (size_t k = 0; k < n; k++) {
        const bytes_map_entry *e = &pieces->entries[order[k].entry];
        const uint8_t *key = order[k].key;
        word *w = &s->words[k];
        w->start = off;
        w->len = e->key_len;
        w->count = (int64_t)e->value;
        w->stamp = UINT32_MAX;
        for (uint32_t i = 0; i < e->key_len; i++)
            s->syms[off + i] = key[i];
        off += e->key_len;
        for (uint32_t i = 0; i + 1 < e->key_len; i++)
            pair_add(s, key[i], key[i + 1], w->count, (uint32_t)k, UINT32_MAX);
    }
    s->n_words = n;
    free(order);
    return s->oom ? -1 : 0;
}

/* Replace every (a, b) in the words holding it by new_id, updating pair counts. */
static void apply_merge(trainer_state *s, size_t pair, uint32_t new_id)
{
    uint32_t a = s->pairs[pair].a, b = s->pairs[pair].b;
    uint32_t *list = s->pairs[pair].words, n_list = s->pairs[pair].n_words;
    s->pairs[pair].words = NULL;
    s->pairs[pair].n_words = s->pairs[pair].cap_words = 0;
    s->n_dirty = 0;
    for (uint32_t k = 0; k < n_list && !s->oom; k++) {
        uint32_t wi = list[k];
        word *w = &s->words[wi];
        if (w->stamp == new_id)
            continue;
        w->stamp = new_id;
        int32_t *sy = s->syms + w->start;
        uint32_t len = w->len, i, j;
        for (i = 0; i + 1 < len; i++)
            if ((uint32_t)sy[i] == a && (uint32_t)sy[i + 1] == b)
                break;
        if (i + 1 >= len)
            continue; /* stale list entry */
        for (i = 0; i + 1 < len; i++)
            pair_add(s, (uint32_t)sy[i], (uint32_t)sy[i + 1], -w->count, UINT32_MAX, new_id);
        for (i = 0, j = 0; i < len;) {
            if (i + 1 < len && (uint32_t)sy[i] == a && (uint32_t)sy[i + 1] == b) {
                sy[j++] = (int32_t)new_id;
                i += 2;
            } else {
                sy[j++] = sy[i++];
            }
        }
        w->len = j;
        for (i = 0; i + 1 < j; i++) {
            int holds_new = (uint32_t)sy[i] == new_id || (uint32_t)sy[i + 1] == new_id;
            pair_add(s, (uint32_t)sy[i], (uint32_t)sy[i + 1], w->count, holds_new ? wi : UINT32_MAX,
                     new_id);
        }
    }
    free(list);
    for (size_t d = 0; d < s->n_dirty && !s->oom; d++) {
        pair_rec *r = &s->pairs[s->dirty[d]];
        if (r->count > r->pushed)
            heap_push(s, r->count, s->dirty[d]);
    }
}

static void free_state(trainer_state *s)
{
    for (size_t i = 0; i < s->n_pairs; i++)
        free(s->pairs[i].words);
    free(s->pairs);
    free(s->words);
    free(s->syms);
    free(s->heap);
    free(s->dirty);
    u64_map_free(&s->pair_index);
}

/* The tokens made so far: token i is bytes[off[i] .. off[i + 1]); merge i (token 256 + i) joined
 * pairs[2i] and pairs[2i + 1]. */
typedef struct {
    size_t *off;
    uint8_t *bytes;
    size_t len, cap;
    int32_t *pairs;
    int n;
} token_table;

/* The 256 single bytes. */
static void token_table_bytes(token_table *t)
{
    for (int i = 0; i < 256; i++) {
        t->bytes[i] = (uint8_t)i;
        t->off[i] = (size_t)i;
    }
    t->len = 256;
    t->off[256] = 256;
    t->n = 256;
}

/* Token n: a followed by b. -1 when out of memory. */
static int token_table_add(token_table *t, uint32_t a, uint32_t b)
{
    size_t la = t->off[a + 1] - t->off[a], lb = t->off[b + 1] - t->off[b];
    if (t->len + la + lb > t->cap) {
        while (t->len + la + lb > t->cap)
            t->cap *= 2;
        uint8_t *nb = realloc(t->bytes, t->cap);
        if (!nb)
            return -1;
        t->bytes = nb;
    }
    memcpy(t->bytes + t->len, t->bytes + t->off[a], la);
    memcpy(t->bytes + t->len + la, t->bytes + t->off[b], lb);
    t->len += la + lb;
    t->pairs[2 * (t->n - 256)] = (int32_t)a;
    t->pairs[2 * (t->n - 256) + 1] = (int32_t)b;
    t->off[t->n + 1] = t->len;
    return 0;
}

/* Merges the most frequent pair (ties: the smaller pair) until vocab tokens or no pair is left;
 * s->oom on running out of memory. */
static void merge_pairs(trainer_state *s, token_table *t, int vocab)
{
    for (size_t p = 0; p < s->n_pairs; p++)
        heap_push(s, s->pairs[p].count, (uint32_t)p);
    while (t->n < vocab && s->n_heap && !s->oom) {
        heap_entry top = heap_pop(s);
        pair_rec *r = &s->pairs[top.pair];
        if (r->count != top.count) {
            /* stale: a newer entry exists if the count grew; re-queue if it shrank */
            if (r->count > 0 && r->count < top.count && r->pushed == top.count)
                heap_push(s, r->count, top.pair);
            continue;
        }
        if (r->count <= 0)
            continue;
        if (token_table_add(t, r->a, r->b)) {
            s->oom = 1;
            break;
        }
        apply_merge(s, top.pair, (uint32_t)t->n);
        t->n++;
    }
}

/* The tokenizer of the table's tokens. */
static int token_table_tokenizer(const token_table *t, tokenizer **out, tempo_error *err)
{
    const uint8_t **toks = malloc((size_t)t->n * sizeof *toks);
    size_t *lens = malloc((size_t)t->n * sizeof *lens);
    if (!toks || !lens) {
        free(toks);
        free(lens);
        return tempo_fail(err, "tokenizer training: out of memory");
    }
    for (int i = 0; i < t->n; i++) {
        toks[i] = t->bytes + t->off[i];
        lens[i] = t->off[i + 1] - t->off[i];
    }
    int rc = tok_from_tokens(out, toks, lens, t->n, "trained tokenizer", err);
    free(toks);
    free(lens);
    return rc;
}

int tok_trainer_finish(const tok_trainer *tr, int vocab, tokenizer **out, int32_t **merges,
                       tempo_error *err)
{
    *out = NULL;
    if (merges)
        *merges = NULL;
    if (vocab < TOK_MIN_VOCAB || vocab > TOK_MAX_VOCAB)
        return tempo_fail(err, "vocab %d: must be from %d to %d", vocab, TOK_MIN_VOCAB, TOK_MAX_VOCAB);
    trainer_state s;
    memset(&s, 0, sizeof s);
    /* token bytes: the 256 single bytes, then each merge's concatenation */
    token_table t = {.cap = 4096};
    t.off = malloc(((size_t)vocab + 1) * sizeof *t.off);
    t.pairs = malloc(2 * (size_t)vocab * sizeof *t.pairs);
    t.bytes = malloc(t.cap);
    int rc = 0;
    if (!t.off || !t.pairs || !t.bytes || init_state(&s, &tr->pieces)) {
        rc = tempo_fail(err, "tokenizer training: out of memory");
        goto done;
    }
    token_table_bytes(&t);
    merge_pairs(&s, &t, vocab);
    if (s.oom) {
        rc = tempo_fail(err, "tokenizer training: out of memory");
        goto done;
    }
    rc = token_table_tokenizer(&t, out, err);
    if (rc == 0 && merges) {
        *merges = t.pairs;
        t.pairs = NULL;
    }
done:
    free_state(&s);
    free(t.off);
    free(t.bytes);
    free(t.pairs);
    return rc;
}
