/* ngram_memory.c - counting and the Kneser-Ney estimator of ngram_memory.h:
 * the incremental update (caches), the parallel build (corpus memories) and
 * the queries. Saving and mapping a memory lives in memory_file.c. */
#include "memory/ngram_memory.h"

#include "core/timer.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int ngram_max_order(int vocab)
{
    if (vocab < 2)
        return 0;
    /* V^K <= UINT64_MAX - 1 so that every key + 1 fits (count_table stores key + 1). */
    unsigned __int128 p = 1;
    int k = 0;
    while (k < NGRAM_MAX_ORDER && p * (unsigned)vocab <= (unsigned __int128)(UINT64_MAX - 1)) {
        p *= (unsigned)vocab;
        k++;
    }
    return k;
}

int ngram_build_max_order(int vocab)
{
    int k = ngram_max_order(vocab);
    return vocab <= NGRAM_HASHED_MAX_VOCAB && k < NGRAM_MAX_ORDER ? k + 1 : k;
}

void ngram_discounts(const uint64_t coc[5], double d[4])
{
    d[0] = 0;
    if (coc[1] && coc[2] && coc[3] && coc[4]) {
        double n1 = (double)coc[1], n2 = (double)coc[2], n3 = (double)coc[3], n4 = (double)coc[4];
        double y = n1 / (n1 + 2 * n2);
        d[1] = 1 - 2 * y * n2 / n1;
        d[2] = 2 - 3 * y * n3 / n2;
        d[3] = 3 - 4 * y * n4 / n3;
    } else {
        d[1] = 0.5;
        d[2] = 1.0;
        d[3] = 1.5;
    }
    for (int k = 1; k <= 3; k++) {
        if (!(d[k] >= 0.05)) d[k] = 0.05;   /* also catches NaN */
        if (d[k] > k) d[k] = k;
    }
}

int ngram_memory_init(ngram_memory *m, int vocab, int order, int shards, tempo_error *err)
{
    memset(m, 0, sizeof *m);
    if (vocab < 2)
        return tempo_usage(err, "count memory: vocabulary of %d ids (need at least 2)", vocab);
    int kmax = ngram_max_order(vocab);
    int most = vocab <= NGRAM_HASHED_MAX_VOCAB ? NGRAM_MAX_ORDER : kmax;
    if (order < 1 || order > most)
        return tempo_usage(err, "count memory: order %d is outside 1..%d (with %d ids)", order, most, vocab);
    if (shards < 1 || shards > NGRAM_MAX_SHARDS)
        return tempo_usage(err, "count memory: %d shards (1..%d)", shards, NGRAM_MAX_SHARDS);
    m->vocab = vocab;
    m->order = order;
    m->exact_order = order < kmax ? order : kmax;
    m->shards = shards;
    m->prune_min = 1;
    m->pow[0] = 1;
    for (int i = 1; i <= NGRAM_MAX_ORDER; i++)
        m->pow[i] = i <= m->exact_order ? m->pow[i - 1] * (uint64_t)vocab : 0;
    for (int n = 0; n <= NGRAM_MAX_ORDER; n++) {
        ngram_discounts(m->coc[n], m->disc[n]);
        for (int s = 0; s < NGRAM_MAX_SHARDS; s++) {
            m->grams[n][s].words = 1;
            m->ctxs[n][s].words = NGRAM_CTX_WORDS;
        }
    }
    return 0;
}

void ngram_memory_free(ngram_memory *m)
{
    for (int n = 0; n <= NGRAM_MAX_ORDER; n++)
        for (int s = 0; s < NGRAM_MAX_SHARDS; s++) {
            count_table_free(&m->grams[n][s]);
            count_table_free(&m->ctxs[n][s]);
        }
    if (m->map_)
        munmap(m->map_, m->map_len_);
    memset(m, 0, sizeof *m);
}

/* Move a count of an n-gram from old to old + 1 in its context's bins. */
static void ctx_bins_bump(uint32_t *s, uint32_t old)
{
    s[0]++;
    if (old == 0) s[1]++;
    else if (old == 1) { s[1]--; s[2]++; }
    else if (old == 2) { s[2]--; s[3]++; }
}

static void coc_bump(uint64_t *coc, uint32_t old)
{
    if (old >= 1 && old <= 4) coc[old]--;
    if (old + 1 <= 4) coc[old + 1]++;
}

/* Order n's context key (n >= 2) from order n-1's and the token that
 * extends it into the past: the base-V number while V^n fits 64 bits, else
 * a 49-bit hash of the two (so that key * V + w stays below 2^63, V <= 2^14). */
static inline uint64_t extend_context(const ngram_memory *m, uint64_t ctx, int n, int32_t older)
{
    if (n <= m->exact_order)
        return ctx + (uint64_t)older * m->pow[n - 2];
    return count_hash(ctx * 0x9e3779b97f4a7c15ULL + (uint64_t)older + 1) >> (64 - NGRAM_HASHED_CTX_BITS);
}

int ngram_memory_add(ngram_memory *m, const int32_t *tokens, size_t i, tempo_error *err)
{
    const int K = m->order;
    const uint64_t V = (uint64_t)m->vocab;
    if (m->shards != 1)
        return tempo_fail(err, "count memory: incremental counting needs a single shard");
    if (i + 1 < (size_t)K)
        return 0;
    uint64_t ctx[NGRAM_MAX_ORDER + 1];   /* [n]: order n's context key */
    ctx[1] = 0;
    for (int n = 2; n <= K; n++)
        ctx[n] = extend_context(m, ctx[n - 1], n, tokens[i - (size_t)(n - 1)]);
    for (int n = K; n >= 1; n--) {
        int created;
        uint32_t *c = count_table_upsert(&m->grams[n][0], ctx[n] * V + (uint64_t)tokens[i], &created);
        if (!c)
            return tempo_fail(err, "count memory: out of memory");
        uint32_t old = (*c)++;
        uint32_t *s = count_table_upsert(&m->ctxs[n][0], ctx[n], &created);
        if (!s)
            return tempo_fail(err, "count memory: out of memory");
        ctx_bins_bump(s, old);
        coc_bump(m->coc[n], old);
        ngram_discounts(m->coc[n], m->disc[n]);
        if (old != 0)
            break;   /* an n-gram seen before adds no new continuation below */
    }
    m->tokens++;
    return 0;
}

int ngram_memory_reserve(ngram_memory *m, uint64_t n_tokens, tempo_error *err)
{
    if (m->shards != 1)
        return tempo_fail(err, "count memory: incremental counting needs a single shard");
    for (int n = 1; n <= m->order; n++) {
        uint64_t grams = n_tokens, ctxs = n_tokens;   /* pow[k] is 0 (unbounded) past the exact orders */
        if (n <= m->exact_order && m->pow[n] < grams)
            grams = m->pow[n];
        if (n - 1 <= m->exact_order && m->pow[n - 1] < ctxs)
            ctxs = m->pow[n - 1];
        if (count_table_reserve(&m->grams[n][0], grams) || count_table_reserve(&m->ctxs[n][0], ctxs))
            return tempo_fail(err, "count memory: out of memory for the counts of %llu tokens at order %d",
                              (unsigned long long)n_tokens, n);
    }
    return 0;
}

/* One order's step of the estimator: p_n from p_{n-1} given the context stats s and count c. */
static inline double kn_step(const double *d, const uint32_t *s, uint32_t c, double p_lower)
{
    double gnum = d[1] * s[1] + d[2] * s[2] + d[3] * s[3] + (double)s[4];
    double dc = c == 0 ? 0 : c == 1 ? d[1] : c == 2 ? d[2] : d[3];
    return ((double)c - dc + gnum * p_lower) / (double)s[0];
}

static inline const uint32_t *find_ctx(const ngram_memory *m, int n, uint64_t key)
{
    uint64_t h = count_hash(key);
    return count_table_find_hashed(&m->ctxs[n][h % (uint64_t)m->shards], key, h);
}

static inline uint32_t find_count(const ngram_memory *m, int n, uint64_t key)
{
    uint64_t h = count_hash(key);
    const uint32_t *c = count_table_find_hashed(&m->grams[n][h % (uint64_t)m->shards], key, h);
    return c ? *c : 0;
}

/* Orders whose whole context lies in tokens[0..i): 1..min(K, i + 1). */
static inline int usable_orders(const ngram_memory *m, size_t i)
{
    return i + 1 < (size_t)m->order ? (int)i + 1 : m->order;
}

/* The walk every query makes from order 1 up: *ctx holds order n-1's context
 * (0 for order 1's empty one) and becomes order n's by taking one older
 * token; returns that context's statistics, or NULL when it was never seen. */
static inline const uint32_t *next_context(const ngram_memory *m, const int32_t *tokens, size_t i, int n,
                                           uint64_t *ctx)
{
    if (n >= 2)
        *ctx = extend_context(m, *ctx, n, tokens[i - (size_t)(n - 1)]);
    return find_ctx(m, n, *ctx);
}

double ngram_memory_prob(const ngram_memory *m, const int32_t *tokens, size_t i, ngram_match *match)
{
    return ngram_memory_prob_of(m, tokens, i, tokens[i], match);
}

double ngram_memory_prob_of(const ngram_memory *m, const int32_t *tokens, size_t i, int32_t token, ngram_match *match)
{
    double p;
    ngram_memory_probs_of(m, tokens, i, &token, 1, &p, match);
    return p;
}

void ngram_memory_probs_of(const ngram_memory *m, const int32_t *tokens, size_t i, const int32_t *cand, int n,
                           double *p, ngram_match *match)
{
    const uint64_t V = (uint64_t)m->vocab;
    for (int k = 0; k < n; k++)
        p[k] = 1.0 / (double)m->vocab;
    uint64_t ctx = 0;
    ngram_match mt = {0, 0, 0};
    for (int o = 1, top = usable_orders(m, i); o <= top; o++) {
        const uint32_t *s = next_context(m, tokens, i, o, &ctx);
        if (!s)
            continue;
        for (int k = 0; k < n; k++)   /* each candidate's steps are a lone query's, in its order */
            p[k] = kn_step(m->disc[o], s, find_count(m, o, ctx * V + (uint64_t)cand[k]), p[k]);
        mt.matched = o;
        mt.total = s[0];
        mt.distinct = s[1] + s[2] + s[3];
    }
    if (match)
        *match = mt;
}

void ngram_memory_prefetch(const ngram_memory *m, const int32_t *tokens, size_t i, const int32_t *cand, int n)
{
    const uint64_t V = (uint64_t)m->vocab, P = (uint64_t)m->shards;
    uint64_t ctx = 0;
    for (int o = 1, top = usable_orders(m, i); o <= top; o++) {
        if (o >= 2)
            ctx = extend_context(m, ctx, o, tokens[i - (size_t)(o - 1)]);
        uint64_t h = count_hash(ctx);
        const count_table *t = &m->ctxs[o][h % P];
        if (t->capacity == 0)
            continue;   /* nothing counted at this order yet */
        count_table_prefetch(t, h);
        for (int k = 0; k < n; k++)
            if (cand[k] >= 0 && (uint64_t)cand[k] < V) {
                uint64_t g = count_hash(ctx * V + (uint64_t)cand[k]);
                const count_table *c = &m->grams[o][g % P];
                if (c->capacity)
                    count_table_prefetch(c, g);
            }
    }
}

double ngram_memory_prob_loo(const ngram_memory *m, const int32_t *tokens, size_t i)
{
    const uint64_t V = (uint64_t)m->vocab;
    const uint64_t w = (uint64_t)tokens[i];
    const int K = m->order;   /* reached only when the full top-order context is there */
    double p = 1.0 / (double)m->vocab;
    uint64_t ctx = 0;
    for (int n = 1, top = usable_orders(m, i); n <= top; n++) {
        const uint32_t *s = next_context(m, tokens, i, n, &ctx);
        if (!s)
            continue;
        uint32_t c = find_count(m, n, ctx * V + w);
        if (n < K) {
            p = kn_step(m->disc[n], s, c, p);
            continue;
        }
        /* this occurrence out: one count fewer in the n-gram, its context and their bins */
        uint32_t st[NGRAM_CTX_WORDS] = {s[0], s[1], s[2], s[3], s[4]};
        if (st[0] <= 1)
            continue;   /* the context was seen only here */
        st[0]--;
        if (c == 0 && st[4] > 0) st[4]--;          /* a pruned n-gram: its mass was in `pruned` */
        else if (c == 1) st[1]--;
        else if (c == 2) { st[2]--; st[1]++; }
        else if (c == 3) { st[3]--; st[2]++; }
        p = kn_step(m->disc[n], st, c > 0 ? c - 1 : 0, p);
    }
    return p;
}

ngram_match ngram_memory_match(const ngram_memory *m, const int32_t *tokens, size_t i)
{
    ngram_match mt = {0, 0, 0};
    uint64_t ctx = 0;
    for (int n = 1, top = usable_orders(m, i); n <= top; n++) {
        const uint32_t *s = next_context(m, tokens, i, n, &ctx);
        if (s) {
            mt.matched = n;
            mt.total = s[0];
            mt.distinct = s[1] + s[2] + s[3];
        }
    }
    return mt;
}

/* One order's step of ngram_memory_dist over the tokens cand[0..nc) (all V
 * when cand is NULL), ascending, every other token taking the step with a
 * count of 0 unprobed: the tokens found in the table go to found[*nf] (when
 * found is not NULL). Stops probing once the context's n1 + n2 + n3 n-grams
 * (the ones in the table: the pruned ones left the table and the bins alike)
 * are found. */
static void dist_order(const ngram_memory *m, int n, uint64_t ctx, const uint32_t *s, const int32_t *cand, size_t nc,
                       double *p, int32_t *found, size_t *nf)
{
    enum { BLOCK = 32 };   /* probes in flight: hash and prefetch a block, then read it */
    const uint64_t V = (uint64_t)m->vocab, P = (uint64_t)m->shards;
    const double *d = m->disc[n];
    uint64_t left = (uint64_t)s[1] + s[2] + s[3], next = 0;   /* tokens below next have taken the step */
    size_t total = cand ? nc : (size_t)V;
    *nf = 0;
    for (size_t k0 = 0; k0 < total && left > 0; k0 += BLOCK) {
        size_t nb = total - k0 < BLOCK ? total - k0 : BLOCK;
        uint64_t h[BLOCK], w[BLOCK];
        for (size_t j = 0; j < nb; j++) {
            w[j] = cand ? (uint64_t)cand[k0 + j] : k0 + j;
            h[j] = count_hash(ctx * V + w[j]);
            count_table_prefetch(&m->grams[n][h[j] % P], h[j]);
        }
        for (size_t j = 0; j < nb; j++) {
            for (; next < w[j]; next++)
                p[next] = kn_step(d, s, 0, p[next]);
            const uint32_t *c = count_table_find_hashed(&m->grams[n][h[j] % P], ctx * V + w[j], h[j]);
            p[w[j]] = kn_step(d, s, c ? *c : 0, p[w[j]]);
            next = w[j] + 1;
            if (c) {
                left -= left > 0;
                if (found)
                    found[(*nf)++] = (int32_t)w[j];
            }
        }
    }
    for (; next < V; next++)
        p[next] = kn_step(d, s, 0, p[next]);
}

/* Every token the context of order n <= exact_order was followed by also
 * followed its suffix, the context of order n-1: an n-gram enters the table
 * with its continuation below (ngram_memory_add's cascade, the build's
 * distinct left extensions). So an exact order probes only the tokens the
 * order below found; a hashed one (contexts may share a key) probes them all. */
void ngram_memory_dist(const ngram_memory *m, const int32_t *tokens, size_t i, double *p)
{
    const uint64_t V = (uint64_t)m->vocab;
    for (uint64_t w = 0; w < V; w++)
        p[w] = 1.0 / (double)V;
    int32_t *lists = malloc(sizeof(int32_t) * 2 * V);   /* the last order's followers and this one's; */
    int32_t *prev = NULL, *cur = lists;                 /* without them every order probes all V */
    size_t n_prev = 0, n_cur;
    uint64_t ctx = 0;
    for (int n = 1, top = usable_orders(m, i); n <= top; n++) {
        const uint32_t *s = next_context(m, tokens, i, n, &ctx);
        if (!s)
            continue;   /* (an exact order's longer contexts are unseen too) */
        int exact = n <= m->exact_order;
        dist_order(m, n, ctx, s, exact ? prev : NULL, n_prev, p, cur, &n_cur);
        if (lists && exact) {
            prev = cur;
            n_prev = n_cur;
            cur = cur == lists ? lists + V : lists;
        } else {
            prev = NULL;
        }
    }
    free(lists);
}

/* ---- the parallel build ---- */

static inline uint64_t stream_at(const ngram_stream *s, uint64_t i)
{
    return s->dtype_bytes == 2 ? ((const uint16_t *)s->ids)[i] : ((const uint32_t *)s->ids)[i];
}

static uint64_t order_count(const ngram_memory *m, int n)
{
    uint64_t c = 0;
    for (int s = 0; s < m->shards; s++)
        c += m->grams[n][s].count;
    return c;
}

typedef struct {
    int prune_min;
} prune_ctx;

static int keep_unpruned(const uint32_t *v, void *ctx)
{
    return v[0] >= (uint32_t)((prune_ctx *)ctx)->prune_min;
}

/* Keys bound for one shard's table, upserted a chunk at a time with each
 * key's slot prefetched AHEAD keys early (the tables dwarf the caches, and
 * a lone miss per key would leave the core waiting on DRAM). */
enum { CHUNK = 4096, AHEAD = 12 };
typedef struct {
    uint64_t key[CHUNK], h[CHUNK];
    uint64_t suffix[CHUNK];   /* a hashed top order's n-gram: its exact suffix key */
    uint32_t add[CHUNK];
    int n;
} chunk;

/* Queue a key when `take`; 1 when the chunk is full and must be flushed. No
 * branch on take: the scans below visit every slot of every shard's table
 * and keep about one in P at random (an empty slot or another shard's key),
 * a branch the CPU mispredicts about half the time. The entry is written
 * anyway and counted only when taken. */
static inline int chunk_push_if(chunk *c, int take, uint64_t key, uint64_t h, uint32_t add)
{
    c->key[c->n] = key;
    c->h[c->n] = h;
    c->add[c->n] = add;
    c->n += take != 0;
    return c->n == CHUNK;
}

/* The shard of a key of hash h among P (h % P; a mask when P is a power of two, the same shard). */
static inline uint64_t shard_of(uint64_t h, uint64_t P)
{
    return (P & (P - 1)) == 0 ? h & (P - 1) : h % P;
}

/* Distinct n-grams per token in a text of `tokens` tokens, for n = 1..8: what the build sizes its
 * tables by and what the estimate below charges. Measured on the corpus (English, BPE-4096): r at
 * its 90.0 M training tokens; a shorter text repeats less, and its repeated share 1 - r shrinks as a
 * power g of the length (fitted on its prefixes of 2-90 M tokens: within 1 % at n = 4-6, 5 % at 3,
 * 21 % at 2; 7 and 8 assumed like 6). A budget's prefix sized at the whole corpus's r outgrew its
 * tables (25 M tokens: r 0.85 at n = 5, against 0.78). */
static double distinct_per_token(int n, double tokens)
{
    static const double r[NGRAM_MAX_ORDER + 1] = {0, 0.0001, 0.0261, 0.224, 0.5449, 0.7794, 0.8935, 0.95, 0.97};
    static const double g[NGRAM_MAX_ORDER + 1] = {0, 0, 0.030, 0.117, 0.212, 0.264, 0.268, 0.268, 0.268};
    const double corpus = 90007058;
    double d = 1 - (1 - r[n]) * pow(tokens > 1 ? tokens / corpus : 1 / corpus, g[n]);
    return d < r[n] * 0.5 ? r[n] * 0.5 : d > 1 ? 1 : d;
}

/* Room for a table a guess sizes: 5 % above it, so that a text a little denser than the measured
 * one still fits below the growth load (growing rehashes every key into a table twice the size). */
#define SIZE_SLACK 1.05

/* A hashed top order's table during the build: each slot holds the count,
 * then the n-gram's exact suffix key (the order below's n-gram key, which
 * a hashed key cannot give back) in two words, dropped by the compaction. */
#define TOP_HASHED_WORDS 3

static inline uint64_t stored_suffix(const uint32_t *v)
{
    return (uint64_t)v[1] | (uint64_t)v[2] << 32;
}

/* counts[key] += add for the chunk's keys; a hashed top order's table
 * also records each new key's suffix. */
static int flush_counts(count_table *t, chunk *c)
{
    if (count_table_reserve(t, (uint64_t)c->n))
        return -1;
    const int keep_suffix = t->words == TOP_HASHED_WORDS;
    for (int j = 0; j < c->n; j++) {
        if (j + AHEAD < c->n)
            count_table_prefetch(t, c->h[j + AHEAD]);
        int created;
        uint32_t *v = count_table_upsert_hashed(t, c->key[j], c->h[j], &created);
        v[0] += c->add[j];
        if (keep_suffix && created) {
            v[1] = (uint32_t)c->suffix[j];
            v[2] = (uint32_t)(c->suffix[j] >> 32);
        }
    }
    c->n = 0;
    return 0;
}

/* Context statistics: each key is a context, add its n-gram's count (top order: below prune_min is pruned). */
static int flush_contexts(count_table *t, chunk *c, uint32_t prune_below)
{
    if (count_table_reserve(t, (uint64_t)c->n))
        return -1;
    for (int j = 0; j < c->n; j++) {
        if (j + AHEAD < c->n)
            count_table_prefetch(t, c->h[j + AHEAD]);
        int created;
        uint32_t *st = count_table_upsert_hashed(t, c->key[j], c->h[j], &created);
        uint32_t n = c->add[j];
        st[0] += n;
        if (n < prune_below) st[4] += n;
        else if (n == 1) st[1]++;
        else if (n == 2) st[2]++;
        else st[3]++;
    }
    c->n = 0;
    return 0;
}

/* Pass A for a hashed top order K = exact_order + 1: a window of the last
 * K-1 tokens gives the exact suffix key, its first K-2 tokens and the
 * token before them the hashed context (as ngram_memory_add's walk does). */
static int count_top_hashed(ngram_memory *m, const ngram_stream *s, int t, chunk *c)
{
    const int K = m->order, P = m->shards;
    const uint64_t V = (uint64_t)m->vocab, top = m->pow[K - 2];
    count_table *tab = &m->grams[K][t];
    c->n = 0;
    uint64_t win = 0;   /* tokens i-K+2..i, base V, oldest first */
    for (uint64_t i = 0; i < s->n; i++) {
        uint64_t id = stream_at(s, i), older = 0;
        if (id >= V)
            return -2;
        if (i >= (uint64_t)K - 1) {
            older = stream_at(s, i - (uint64_t)(K - 1));
            win -= older * top;
        }
        win = win * V + id;
        if (i + 1 < (uint64_t)K)
            continue;
        uint64_t key = extend_context(m, win / V, K, (int32_t)older) * V + id;
        uint64_t h = count_hash(key);
        c->suffix[c->n] = win;
        if (chunk_push_if(c, shard_of(h, (uint64_t)P) == (uint64_t)t, key, h, 1) && flush_counts(tab, c))
            return -1;
    }
    return flush_counts(tab, c);
}

/* Pass A for shard t: raw counts of the top order. Returns 0, -1 (memory) or -2 (an id out of range). */
static int count_top(ngram_memory *m, const ngram_stream *s, int t, chunk *c)
{
    const int K = m->order, P = m->shards;
    const uint64_t V = (uint64_t)m->vocab, top = m->pow[K - 1];
    count_table *tab = &m->grams[K][t];
    uint64_t expect = (uint64_t)((double)s->n / P * distinct_per_token(K, (double)s->n) * SIZE_SLACK) + 2 * CHUNK;
    int hashed = K > m->exact_order;
    if (count_table_init(tab, hashed ? TOP_HASHED_WORDS : 1, expect))
        return -1;
    if (hashed)
        return count_top_hashed(m, s, t, c);
    uint64_t key = 0;
    c->n = 0;
    for (uint64_t i = 0; i < s->n; i++) {
        uint64_t id = stream_at(s, i);
        if (id >= V)
            return -2;
        if (i >= (uint64_t)K)   /* drop the token that leaves the window, shift in the new one */
            key -= stream_at(s, i - (uint64_t)K) * top;
        key = key * V + id;
        if (i + 1 < (uint64_t)K)
            continue;
        uint64_t h = count_hash(key);
        if (chunk_push_if(c, shard_of(h, (uint64_t)P) == (uint64_t)t, key, h, 1) && flush_counts(tab, c))
            return -1;
    }
    return flush_counts(tab, c);
}

/* Pass B for shard t at order n < K: continuation counts from the distinct (n+1)-grams of a text
 * of `tokens` tokens. */
static int count_continuations(ngram_memory *m, int n, uint64_t tokens, int t, chunk *c)
{
    const int P = m->shards;
    count_table *tab = &m->grams[n][t];
    /* the distinct n-grams, about the order above's count times the measured ratio of the two */
    double ratio = distinct_per_token(n, (double)tokens) / distinct_per_token(n + 1, (double)tokens);
    if (count_table_init(tab, 1, (uint64_t)((double)order_count(m, n + 1) / P * ratio * SIZE_SLACK) + 2 * CHUNK))
        return -1;
    c->n = 0;
    const int hashed_up = n + 1 > m->exact_order;   /* its suffixes were kept beside the counts */
    for (int s = 0; s < P; s++) {
        const count_table *up = &m->grams[n + 1][s];
        for (uint64_t j = 0; j < up->capacity; j++) {
            uint64_t k = count_table_stored(up, j);   /* 0: empty, its slot pushed but not taken */
            uint64_t suffix = hashed_up ? stored_suffix(count_table_values(up, j)) : (k - 1) % m->pow[n];
            uint64_t h = count_hash(suffix);
            if (chunk_push_if(c, k != 0 && shard_of(h, (uint64_t)P) == (uint64_t)t, suffix, h, 1) &&
                flush_counts(tab, c))
                return -1;
        }
    }
    return flush_counts(tab, c);
}

/* Pass C for shard t: context statistics of every order (top-order counts
 * below prune_min go to `pruned`), and the count-of-counts of shard t's own n-grams. */
static int count_contexts(ngram_memory *m, int prune_min, int t, uint64_t coc[][5], chunk *c)
{
    const int K = m->order, P = m->shards;
    const uint64_t V = (uint64_t)m->vocab;
    for (int n = 1; n <= K; n++) {
        count_table *tab = &m->ctxs[n][t];
        uint32_t prune_below = n == K ? (uint32_t)prune_min : 0;
        /* contexts of order n are about as many as the (n-1)-grams */
        uint64_t expect = n == 1 ? 1 : order_count(m, n - 1) / (uint64_t)P * 51 / 50 + 2 * CHUNK;
        if (count_table_init(tab, NGRAM_CTX_WORDS, expect))
            return -1;
        c->n = 0;
        for (int s = 0; s < P; s++) {
            const count_table *g = &m->grams[n][s];
            uint64_t own[5] = {0};   /* shard t's count-of-counts ([0]: empty slots and counts above 4) */
            for (uint64_t j = 0; j < g->capacity; j++) {
                uint64_t k = count_table_stored(g, j);   /* 0: empty (count 0), pushed but not taken */
                uint32_t cnt = *count_table_values(g, j);
                own[cnt <= 4 ? cnt : 0]++;
                uint64_t prefix = (k - 1) / V;
                uint64_t h = count_hash(prefix);
                if (chunk_push_if(c, k != 0 && shard_of(h, (uint64_t)P) == (uint64_t)t, prefix, h, cnt) &&
                    flush_contexts(tab, c, prune_below))
                    return -1;
            }
            for (int q = 1; q <= 4 && s == t; q++)
                coc[n][q] += own[q];
        }
        if (flush_contexts(tab, c, prune_below))
            return -1;
    }
    return 0;
}

/* Final pass for shard t: drop pruned n-grams; tables sized by a guess that
 * came out below half full are rebuilt at a load of 0.7 (what a saved file
 * costs), the rest kept as they are. */
static int compact_shard(ngram_memory *m, int prune_min, int t)
{
    prune_ctx pc = {prune_min};
    for (int n = 1; n <= m->order; n++) {
        int prune = n == m->order && prune_min > 1;
        count_table *g = &m->grams[n][t], *c = &m->ctxs[n][t];
        int narrow = g->words > 1;   /* a hashed top order's suffixes go */
        if ((prune || narrow || (double)g->count < 0.5 * (double)g->capacity) &&
            count_table_compact_words(g, 0.7, 1, prune ? keep_unpruned : NULL, &pc))
            return -1;
        if ((double)c->count < 0.5 * (double)c->capacity && count_table_compact(c, 0.7, NULL, NULL))
            return -1;
    }
    return 0;
}

int ngram_memory_build(ngram_memory *m, const ngram_stream *s, int prune_min, tempo_error *err)
{
    return ngram_memory_build_split(m, s, prune_min, NULL, err);
}

/* The split build's step between passes (one thread): agree on failure
 * (any process's), then make the tables of orders lo..hi (grams, and the
 * contexts when ctxs) whole everywhere. 0, or -1: a failure somewhere. */
static int split_exchange(ngram_memory *m, const ngram_build_split *x, int *status, int lo, int hi, int ctxs)
{
    uint64_t bad = 0;
    for (int sh = 0; sh < m->shards; sh++)
        bad += status[sh] != 0;
    if (x->sum(x->ctx, &bad, 1))
        return -1;
    if (bad)
        return -1;
    for (int n = lo; n <= hi; n++)
        for (int sh = 0; sh < m->shards; sh++)
            if (x->share(x->ctx, &m->grams[n][sh], sh % x->parts) ||
                (ctxs && x->share(x->ctx, &m->ctxs[n][sh], sh % x->parts)))
                return -1;
    return 0;
}

/* What a build needs: an empty memory whose orders a build can key, 2- or 4-byte tokens that
 * 32-bit counts can count, and a part that is one of the parts. */
static int check_build(const ngram_memory *m, const ngram_stream *s, const ngram_build_split *split,
                       tempo_error *err)
{
    const int K = m->order;
    if (m->tokens || order_count(m, K))
        return tempo_fail(err, "count memory: build needs an empty memory");
    if (K > ngram_build_max_order(m->vocab))
        return tempo_usage(err, "count memory: a built memory of %d ids has orders up to %d (exact keys up to %d, "
                           "one hashed order above): %d asked", m->vocab, ngram_build_max_order(m->vocab),
                           m->exact_order, K);
    if (s->dtype_bytes != 2 && s->dtype_bytes != 4)
        return tempo_fail(err, "count memory: token width %d bytes (2 or 4)", s->dtype_bytes);
    if (s->n >= (uint64_t)UINT32_MAX)
        return tempo_fail(err, "count memory: %llu tokens overflow 32-bit counts", (unsigned long long)s->n);
    if (split && (split->parts < 1 || split->part < 0 || split->part >= split->parts))
        return tempo_fail(err, "count memory: part %d of %d", split->part, split->parts);
    return 0;
}

/* One build, shared by its team of threads: this process's shards are t % parts == part. */
typedef struct {
    ngram_memory *m;
    const ngram_stream *s;
    const ngram_build_split *split;   /* NULL: one process */
    int prune_min, parts, part, n_own;
    int *status;                      /* [shard]: 0, -1 out of memory, -2 a token out of range */
    uint64_t (*coc)[NGRAM_MAX_ORDER + 1][5];   /* [shard] its count-of-counts */
    int failed_split;                 /* an exchange failed (here or, agreed on, elsewhere) */
} build_job;

/* Between two passes (every thread calls it): the split build's exchange of orders lo..hi, by the
 * master thread, the team waiting before and after. */
static inline void team_exchange(build_job *b, int lo, int hi, int ctxs)
{
    #pragma omp barrier
    #pragma omp master
    if (b->split && !b->failed_split)
        b->failed_split = split_exchange(b->m, b->split, b->status, lo, hi, ctxs) != 0;
    #pragma omp barrier
}

/* One thread's part of the build (called inside the parallel region by every thread): the top
 * order, the continuations of each lower order, the contexts, the compaction, each over the
 * thread's shards, with the passes' seconds in m->build_s. A team smaller than asked (nested or
 * limited OpenMP): threads take shards in turn. */
static void build_team(build_job *b)
{
    ngram_memory *m = b->m;
    const int K = m->order, parts = b->parts, part = b->part, n_own = b->n_own;
    int *status = b->status;
    int t = omp_get_thread_num();
    int nt = omp_get_num_threads();
    chunk *c = malloc(sizeof *c);
    if (!c)
        for (int j = t; j < n_own; j += nt) status[part + j * parts] = -1;
    double t0 = timer_now();
    for (int j = t; j < n_own; j += nt) {
        int sh = part + j * parts;
        if (!status[sh]) status[sh] = count_top(m, b->s, sh, c);
    }
    for (int n = K - 1; n >= 1; n--) {
        team_exchange(b, n + 1, n + 1, 0);
        if (n == K - 1 && t == 0) m->build_s[0] = timer_now() - t0;
        for (int j = t; j < n_own && !b->failed_split; j += nt) {
            int sh = part + j * parts;
            if (!status[sh]) status[sh] = count_continuations(m, n, b->s->n, sh, c);
        }
    }
    team_exchange(b, 1, 1, 0);   /* order 1 (the last continuation pass, or the top order when K = 1) */
    if (t == 0) m->build_s[1] = timer_now() - t0 - m->build_s[0];
    for (int j = t; j < n_own && !b->failed_split; j += nt) {
        int sh = part + j * parts;
        if (!status[sh]) status[sh] = count_contexts(m, b->prune_min, sh, b->coc[sh], c);
    }
    #pragma omp barrier
    if (t == 0) m->build_s[2] = timer_now() - t0 - m->build_s[0] - m->build_s[1];
    for (int j = t; j < n_own && !b->failed_split; j += nt) {
        int sh = part + j * parts;
        if (!status[sh]) status[sh] = compact_shard(m, b->prune_min, sh);
    }
    team_exchange(b, 1, K, 1);   /* the compacted tables, grams and contexts of every order */
    if (t == 0) m->build_s[3] = timer_now() - t0 - m->build_s[0] - m->build_s[1] - m->build_s[2];
    free(c);
}

/* After the passes: the shards' failures as errors, else the count-of-counts summed over the
 * shards (and the processes) and the discounts of each order. */
static int finish_build(build_job *b, tempo_error *err)
{
    ngram_memory *m = b->m;
    const int K = m->order, P = m->shards;
    for (int sh = 0; sh < P; sh++) {
        if (b->status[sh] == -2)
            return tempo_fail(err, "count memory: a token id is not below the vocabulary size %d", m->vocab);
        if (b->status[sh])
            return tempo_fail(err, "count memory: out of memory building order %d over %llu tokens", K,
                              (unsigned long long)b->s->n);
    }
    if (b->failed_split)
        return tempo_fail(err, "count memory: the split build failed in another process or in an exchange");
    for (int n = 1; n <= K; n++) {
        for (int k = 1; k <= 4; k++)
            for (int sh = 0; sh < P; sh++)
                m->coc[n][k] += b->coc[sh][n][k];
    }
    const ngram_build_split *split = b->split;
    if (split && split->sum(split->ctx, &m->coc[0][0], sizeof m->coc / sizeof m->coc[0][0]))
        return tempo_fail(err, "count memory: summing the count-of-counts over the processes failed");
    for (int n = 1; n <= K; n++)
        ngram_discounts(m->coc[n], m->disc[n]);
    m->prune_min = b->prune_min;
    m->tokens = b->s->n;
    return 0;
}

int ngram_memory_build_split(ngram_memory *m, const ngram_stream *s, int prune_min, const ngram_build_split *split,
                             tempo_error *err)
{
    if (check_build(m, s, split, err))
        return -1;
    if (split && split->parts == 1)
        split = NULL;
    if (prune_min < 1)
        prune_min = 1;
    /* this process's shards: t % parts == part */
    const int P = m->shards, parts = split ? split->parts : 1, part = split ? split->part : 0;
    const int n_own = P > part ? (P - part + parts - 1) / parts : 0;
    uint64_t coc[NGRAM_MAX_SHARDS][NGRAM_MAX_ORDER + 1][5];
    memset(coc, 0, sizeof coc);
    int status[NGRAM_MAX_SHARDS] = {0};
    build_job b = {.m = m, .s = s, .split = split, .prune_min = prune_min, .parts = parts, .part = part,
                   .n_own = n_own, .status = status, .coc = coc, .failed_split = 0};
    #pragma omp parallel num_threads(n_own > 0 ? n_own : 1)
    build_team(&b);
    return finish_build(&b, err);
}

double ngram_memory_estimate_bytes(int order, uint64_t n_tokens)
{
    const double N = (double)n_tokens;
    double bytes = 0;
    for (int n = 1; n <= order && n <= NGRAM_MAX_ORDER; n++) {
        bytes += distinct_per_token(n, N) * N / 0.7 * (double)count_table_stride(1);
        if (n >= 2)   /* contexts of order n: about the (n-1)-grams */
            bytes += distinct_per_token(n - 1, N) * N / 0.7 * (double)count_table_stride(NGRAM_CTX_WORDS);
    }
    return bytes * 1.3;   /* growth and compaction hold two copies of a table for a while */
}

uint64_t ngram_memory_entries(const ngram_memory *m)
{
    uint64_t e = 0;
    for (int n = 1; n <= m->order; n++)
        for (int s = 0; s < m->shards; s++)
            e += m->grams[n][s].count + m->ctxs[n][s].count;
    return e;
}

uint64_t ngram_memory_bytes(const ngram_memory *m)
{
    uint64_t b = 0;
    for (int n = 1; n <= m->order; n++)
        for (int s = 0; s < m->shards; s++) {
            b += m->grams[n][s].capacity * count_table_stride(m->grams[n][s].words);
            b += m->ctxs[n][s].capacity * count_table_stride(m->ctxs[n][s].words);
        }
    return b;
}
