/* ngram_memory.h - a count memory: token n-gram statistics of orders 1..K
 * and the interpolated modified Kneser-Ney distribution they give
 * (docs/hybrid_model.md). The same structure serves as the memory of the
 * training corpus (built in one parallel pass, then frozen, saved and
 * mapped back) and as the cache of the text being read (grown one token at a
 * time, after that token has been scored).
 *
 * Keys: an n-gram t_1..t_n (oldest first) is the base-V number
 * t_1 V^(n-1) + ... + t_n, so its context (the first n-1 tokens) is key / V
 * and its lower-order suffix key % V^(n-1), while V^n fits 64 bits (V =
 * 4097: n <= 5, the `exact_order`). A memory grown one token at a time (a
 * cache) may go further, up to NGRAM_MAX_ORDER when V <= 16384: above the
 * exact order a context's key is a 49-bit hash of the order below's key and
 * the older token, and the n-gram's key is still context * V + token, so
 * every n-gram belongs to exactly one context and the estimate stays a
 * distribution (two contexts whose hashes collide merely share statistics).
 * A built corpus memory may take one hashed order above the exact ones (its
 * build keeps each top n-gram's exact suffix key beside the count until the
 * lower orders are counted, since a hashed key cannot give it back). Each order has a table of n-gram counts and a
 * table of context statistics; both are split into `shards` tables by the
 * key's hash so that the build runs one thread per shard.
 *
 * Counts: order K holds raw counts c(h w); orders below hold continuation
 * counts N1+(. h w), the number of distinct tokens seen before h w, i.e. of
 * distinct (n+1)-grams with suffix h w (only n-grams preceded by a full
 * history of K-1 tokens are counted, so the first K-1 positions of a stream
 * add nothing). The context statistics of h at order n are derived from the
 * same table: total = sum_w c(h w), n1/n2/n3 = how many w have count 1, 2,
 * >= 3, and `pruned` = the count mass of top-order n-grams dropped by
 * pruning (which goes to the lower orders).
 *
 * Estimator, from order 1 up (p_0 = 1/V, uniform over the whole vocabulary):
 *   p_n(w) = (c(h w) - D_n(c(h w))) / total(h) + gamma(h) p_{n-1}(w)
 *   gamma(h) = (D_n(1) n1(h) + D_n(2) n2(h) + D_n(3+) n3(h) + pruned(h)) / total(h)
 * where a context never seen leaves p_n = p_{n-1}. The discounts come from
 * the order's count-of-counts (Chen and Goodman): Y = n_1 / (n_1 + 2 n_2),
 * D(1) = 1 - 2Y n_2/n_1, D(2) = 2 - 3Y n_3/n_2, D(3+) = 3 - 4Y n_4/n_3,
 * each clamped to [0.05, k] (0.5, 1, 1.5 while a count-of-count is zero), so
 * every p_n sums to exactly 1 over the vocabulary and is never 0. */
#ifndef TEMPO_NGRAM_MEMORY_H
#define TEMPO_NGRAM_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "memory/count_table.h"

#define NGRAM_MAX_ORDER 8
#define NGRAM_MAX_SHARDS 16
#define NGRAM_CTX_WORDS 5   /* total, n1, n2, n3+, pruned */
#define NGRAM_HASHED_MAX_VOCAB 16384  /* hashed orders need key * V + w below 2^64 */
#define NGRAM_HASHED_CTX_BITS 49      /* a hashed context key is below 2^49 (so key * V + w < 2^63) */

typedef struct {
    int vocab;                 /* V: ids 0..V-1 */
    int order;                 /* K */
    int exact_order;           /* orders up to this one have exact keys (min(K, ngram_max_order(V))) */
    int shards;                /* tables per order; a key's shard = count_hash(key) % shards (low bits) */
    int prune_min;             /* top-order n-grams counted fewer times were dropped; 1 = none */
    uint64_t pow[NGRAM_MAX_ORDER + 1];                          /* V^i */
    count_table grams[NGRAM_MAX_ORDER + 1][NGRAM_MAX_SHARDS];   /* [n]: n-gram -> count */
    count_table ctxs[NGRAM_MAX_ORDER + 1][NGRAM_MAX_SHARDS];    /* [n]: (n-1)-gram -> NGRAM_CTX_WORDS */
    uint64_t coc[NGRAM_MAX_ORDER + 1][5];    /* [n][k]: n-grams whose count is k (1..4), before pruning */
    double disc[NGRAM_MAX_ORDER + 1][4];     /* [n][k]: D_n(k) for k = 1, 2, 3+ */
    uint64_t tokens;           /* tokens of the streams counted */
    double build_s[4];         /* the build's passes: top counts, continuations, contexts, compaction */
    uint64_t tokenizer_id;     /* of the tokenizer the ids belong to (ngram_tokenizer_id); 0 = unknown */
    uint8_t data_id[32];       /* sha256 of the data folder's meta.json the tokens came from; all zero = unknown */
    double build_seconds;      /* the build's wall time in the run that made it (a run reusing it is charged it) */
    void *map_;                /* a loaded file's mapping */
    size_t map_len_;
} ngram_memory;

/* What a query found: the longest order whose context was seen (0 = none),
 * that context's total count and how many distinct tokens followed it. */
typedef struct {
    int matched;
    uint32_t total;
    uint32_t distinct;   /* how many different tokens followed that context (n1 + n2 + n3) */
} ngram_match;

/* The largest K for which V^K fits (at most NGRAM_MAX_ORDER). */
int ngram_max_order(int vocab);

/* The largest order a built memory takes: ngram_max_order(vocab), plus one
 * hashed order when vocab <= NGRAM_HASHED_MAX_VOCAB (4,097 ids: 6; 8,193: 5). */
int ngram_build_max_order(int vocab);

/* An empty memory (incremental use: a cache). Errors: vocab < 2, order
 * outside 1..NGRAM_MAX_ORDER (1..ngram_max_order(vocab) when vocab > 16384),
 * shards outside 1..NGRAM_MAX_SHARDS. */
int ngram_memory_init(ngram_memory *m, int vocab, int order, int shards, tempo_error *err);
void ngram_memory_free(ngram_memory *m);  /* tables and any mapping; zeroes *m */

/* Score-then-learn update: count the n-gram ending at tokens[i] (given
 * tokens[i-K+1..i]; nothing when i < K-1) with its continuation cascade and
 * context statistics, and refresh the discounts. One shard only. Returns 0
 * or -1 when out of memory. */
int ngram_memory_add(ngram_memory *m, const int32_t *tokens, size_t i, tempo_error *err);

/* The estimator's p(tokens[i] | tokens[max(0, i-K+1)..i)); match may be NULL. */
double ngram_memory_prob(const ngram_memory *m, const int32_t *tokens, size_t i, ngram_match *match);
/* The same for any token (0..V-1) after tokens[0..i); tokens[i] is not read. */
double ngram_memory_prob_of(const ngram_memory *m, const int32_t *tokens, size_t i, int32_t token, ngram_match *match);
/* ngram_memory_prob_of of each of cand[0..n) (ids 0..V-1) at once, into
 * p[0..n): one walk over the contexts, which every candidate shares, and
 * each order's count asked for each candidate; p[k] is bit for bit the
 * lone query's, and the match (the same for every candidate) its too. */
void ngram_memory_probs_of(const ngram_memory *m, const int32_t *tokens, size_t i, const int32_t *cand, int n,
                           double *p, ngram_match *match);

/* Room for n_tokens more calls of ngram_memory_add without any table
 * growing (each call adds at most one key to each order's tables, and an
 * order's contexts and n-grams cannot outnumber V^(n-1) and V^n): a
 * stream of known length is then counted with no table rebuilt on the way.
 * The counts and every answer are the same with or without it. One shard
 * only. Returns 0, or -1 when out of memory (err set; the lower orders may
 * have their room already, the counts are as they were). */
int ngram_memory_reserve(ngram_memory *m, uint64_t n_tokens, tempo_error *err);

/* A hint, no more: the slots that queries at position i for the tokens
 * cand[0..n) (any out of range skipped) will probe first, every usable
 * order's context statistics and counts, fetched towards the cache now so
 * that the queries' misses overlap. Reads no slot and changes nothing. */
void ngram_memory_prefetch(const ngram_memory *m, const int32_t *tokens, size_t i, const int32_t *cand, int n);

/* ngram_memory_prob for a position whose own occurrence was counted (a
 * training token scored against the memory of its own corpus): the top
 * order's count of the n-gram ending at i, its context's total and bins are
 * taken one lower (leave-one-out), so the memory does not simply recall the
 * token. The lower orders' continuation counts are left as they are (one
 * occurrence changes them only when its top-order n-gram was a singleton). */
double ngram_memory_prob_loo(const ngram_memory *m, const int32_t *tokens, size_t i);

/* What the contexts before position i match (independent of tokens[i]). */
ngram_match ngram_memory_match(const ngram_memory *m, const int32_t *tokens, size_t i);

/* The whole distribution after tokens[0..i): p[0..V), summing to 1. */
void ngram_memory_dist(const ngram_memory *m, const int32_t *tokens, size_t i, double *p);

/* A token stream as stored: n ids of `dtype_bytes` (2 or 4) each. */
typedef struct {
    const void *ids;
    int dtype_bytes;
    uint64_t n;
} ngram_stream;

/* Build a corpus memory from a stream with `threads` threads (= shards),
 * of an order up to ngram_build_max_order(vocab),
 * in three passes (top-order counts, continuation counts order by order,
 * context statistics), then drop top-order n-grams counted fewer than
 * prune_min times and compact every table to a load of 0.7. The memory must
 * come from ngram_memory_init with shards = threads and be empty. The result
 * depends on the stream, K, prune_min and threads only. */
int ngram_memory_build(ngram_memory *m, const ngram_stream *s, int prune_min, tempo_error *err);

/* A build split over processes (the ranks of a data-parallel job): this
 * process counts the shards t with t % parts == part (its threads take them
 * in turn), and after each pass the hooks make every table whole in every
 * process. The memory must come from ngram_memory_init with the same shards
 * in every process; the result is then the same as one process's build with
 * that many shards, bit for bit. The hooks are called by one thread, the
 * same in every process, in the same order:
 *   share(ctx, table, owner): make `table` (empty here unless part == owner)
 *     the owner's table, here too; 0 or -1.
 *   sum(ctx, x, n): x[0..n) = its sum over the processes (exact below 2^53);
 *     0 or -1. */
typedef struct {
    int part, parts;
    int (*share)(void *ctx, count_table *table, int owner);
    int (*sum)(void *ctx, uint64_t *x, size_t n);
    void *ctx;
} ngram_build_split;

/* ngram_memory_build with the work split as above; split NULL = one process. */
int ngram_memory_build_split(ngram_memory *m, const ngram_stream *s, int prune_min, const ngram_build_split *split,
                             tempo_error *err);

/* About how many bytes a build of order K over n tokens will hold at its
 * peak, from distinct n-grams per token measured on English BPE text
 * (order 4 over 90 M tokens of vocab 4097: 2.3 GB; order 5: 5.3 GB). A
 * guess for refusing a build that cannot fit, not a promise. */
double ngram_memory_estimate_bytes(int order, uint64_t n_tokens);

/* Slots and bytes the tables take (keys and values). */
uint64_t ngram_memory_entries(const ngram_memory *m);
uint64_t ngram_memory_bytes(const ngram_memory *m);

/* The discounts for a count-of-counts row (see above). */
void ngram_discounts(const uint64_t coc[5], double d[4]);

#endif
