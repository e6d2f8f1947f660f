/* test_memory.c - the count memory (src/memory/): the Kneser-Ney estimator
 * against a brute-force reference that recounts the stream for every query;
 * the parallel build against the incremental one at several thread counts;
 * distributions summing to 1; pruning; the file's round trip and its
 * refusals (truncated, corrupt, foreign); determinism of the build. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "memory/memory_file.h"
#include "memory/ngram_memory.h"
#include "test.h"

/* A stream with structure (a few repeated phrases) and noise, ids < V. */
static void make_stream(int32_t *x, size_t n, int V, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int r = (int)(s >> 33);
        if (i >= 3 && r % 4 != 0)
            x[i] = (x[i - 3] + (r % 3 == 0)) % V;   /* mostly repeats 3 back */
        else
            x[i] = (r >> 4) % V;
    }
}

/* The whole distribution's sum; each entry must be the single query's, bit
 * for bit (the whole one skips the probes it can: ngram_memory_dist). */
static double dist_sum(const ngram_memory *m, const int32_t *x, size_t i, double *p)
{
    ngram_memory_dist(m, x, i, p);
    double s = 0;
    int same = 1;
    for (int w = 0; w < m->vocab; w++) {
        s += p[w];
        same &= p[w] == ngram_memory_prob_of(m, x, i, w, NULL);
    }
    CHECK_MSG(same, "order %d, position %zu: the whole distribution is not the single queries'", m->order, i);
    return s;
}

/* Do two memories give bit-identical probabilities at every position of x[0..n)? */
static int same_probs(const ngram_memory *a, const ngram_memory *b, const int32_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ngram_memory_prob(a, x, i, NULL) != ngram_memory_prob(b, x, i, NULL))
            return 0;
    return 1;
}

/* ---- the reference: counts recomputed from the stream for each query ---- */

typedef struct {
    const int32_t *x;
    size_t n;
    int V, K;
    int A;   /* the stream's ids are below A (0: below V); ids A..V-1 have count 0 */
} ref_lm;

/* Does the K-gram ending at position j (j >= K-1) have the n-gram g (n tokens) as its suffix? */
static int kgram_suffix_is(const ref_lm *r, size_t j, const int32_t *g, int n)
{
    for (int a = 0; a < n; a++)
        if (r->x[j - (size_t)(n - 1 - a)] != g[a])
            return 0;
    return 1;
}

/* Is the m-gram ending at j (j >= K-1) the same as the one ending at k? */
static int same_suffix(const ref_lm *r, size_t j, size_t k, int m)
{
    for (int a = 0; a < m; a++)
        if (r->x[j - (size_t)a] != r->x[k - (size_t)a])
            return 0;
    return 1;
}

/* The count the memory keeps for n-gram g: raw at K, else the number of
 * distinct (n+1)-grams (suffixes of counted K-grams) ending in g. */
static uint32_t ref_count(const ref_lm *r, const int32_t *g, int n)
{
    uint32_t c = 0;
    for (size_t j = (size_t)r->K - 1; j < r->n; j++) {
        if (!kgram_suffix_is(r, j, g, n))
            continue;
        if (n == r->K) { c++; continue; }
        /* count this (n+1)-suffix only at its first occurrence */
        int first = 1;
        for (size_t k = (size_t)r->K - 1; k < j && first; k++)
            if (same_suffix(r, j, k, n + 1)) first = 0;
        c += (uint32_t)first;
    }
    return c;
}

/* Count-of-counts of order n: over the distinct n-grams counted. */
static void ref_coc(const ref_lm *r, int n, uint64_t coc[5])
{
    memset(coc, 0, 5 * sizeof coc[0]);
    for (size_t j = (size_t)r->K - 1; j < r->n; j++) {
        int first = 1;
        for (size_t k = (size_t)r->K - 1; k < j && first; k++)
            if (same_suffix(r, j, k, n)) first = 0;
        if (!first) continue;
        int32_t g[8];
        for (int a = 0; a < n; a++) g[a] = r->x[j - (size_t)(n - 1 - a)];
        uint32_t c = ref_count(r, g, n);
        if (c >= 1 && c <= 4) coc[c]++;
    }
}

static double ref_prob(const ref_lm *r, size_t i, double disc[][4])
{
    double p = 1.0 / r->V;
    for (int n = 1; n <= r->K && (size_t)(n - 1) <= i; n++) {
        int32_t g[8];
        for (int a = 0; a < n - 1; a++) g[a] = r->x[i - (size_t)(n - 1 - a)];
        double total = 0, gnum = 0, cw = 0;
        for (int w = 0; w < (r->A ? r->A : r->V); w++) {
            g[n - 1] = w;
            uint32_t c = ref_count(r, g, n);
            total += c;
            if (c) gnum += disc[n][c >= 3 ? 3 : c];
            if (w == r->x[i]) cw = c;
        }
        if (total == 0) continue;
        double d = cw == 0 ? 0 : disc[n][cw >= 3 ? 3 : (int)cw];
        p = (cw - d + gnum * p) / total;
    }
    return p;
}

static int keep_even(const uint32_t *v, void *ctx)
{
    (void)ctx;
    return v[0] % 2 == 0;
}

/* The table across its allocations: small ones from the heap, large ones
 * (8 MB and up) mapped in huge pages; growth from one kind to the other,
 * compaction and an exact-capacity table keep every key's count. */
static void test_count_table_sizes(void)
{
    enum { N = 1500000 };
    count_table t;
    CHECK(count_table_init(&t, 2, 1000) == 0);   /* 1,444 slots: heap; grows to mapped ones */
    for (uint64_t i = 0; i < N; i++) {
        int created;
        uint32_t *v = count_table_upsert(&t, i * 7919 + 3, &created);
        CHECK(v && created);
        if (!v) break;
        v[0] = (uint32_t)(i % 5 + 1);
        v[1] = (uint32_t)i;
    }
    CHECK(t.count == N && t.capacity * count_table_stride(2) >= ((uint64_t)8 << 20));
    long bad = 0;
    for (uint64_t i = 0; i < N; i++) {
        const uint32_t *v = count_table_find(&t, i * 7919 + 3);
        bad += !v || v[0] != i % 5 + 1 || v[1] != (uint32_t)i;
    }
    bad += count_table_find(&t, 5) != NULL;
    CHECK_MSG(bad == 0, "%ld keys wrong after growth", bad);
    CHECK(count_table_compact_words(&t, 0.7, 1, keep_even, NULL) == 0);   /* drops odd counts and a word */
    bad = 0;
    for (uint64_t i = 0; i < N; i++) {
        const uint32_t *v = count_table_find(&t, i * 7919 + 3);
        bad += (i % 5 + 1) % 2 == 0 ? !v || v[0] != i % 5 + 1 : v != NULL;
    }
    CHECK_MSG(bad == 0 && t.words == 1, "%ld keys wrong after compaction", bad);
    count_table_free(&t);
    CHECK(t.slots == NULL && t.capacity == 0 && t.words == 1);
    count_table e;
    CHECK(count_table_init_capacity(&e, 5, 400000) == 0 && e.capacity == 400000 && e.count == 0);
    uint64_t nonzero = 0;
    for (uint64_t i = 0; i < e.capacity * count_table_stride(5); i++)
        nonzero += e.slots[i] != 0;
    CHECK(nonzero == 0);
    count_table_free(&e);
}

static void test_discounts_formula(void)
{
    uint64_t coc[5] = {0, 100, 40, 20, 10};
    double d[4];
    ngram_discounts(coc, d);
    double y = 100.0 / (100 + 80);
    CHECK_NEAR(d[1], 1 - 2 * y * 40 / 100, 1e-15);
    CHECK_NEAR(d[2], 2 - 3 * y * 20 / 40, 1e-15);
    CHECK_NEAR(d[3], 3 - 4 * y * 10 / 20, 1e-15);
    uint64_t none[5] = {0, 5, 0, 0, 0};
    ngram_discounts(none, d);
    CHECK(d[1] == 0.5 && d[2] == 1.0 && d[3] == 1.5);
    uint64_t odd[5] = {0, 1, 1, 1000, 1};   /* D(2) would be negative: clamped */
    ngram_discounts(odd, d);
    CHECK(d[2] >= 0.05 && d[2] <= 2 && d[1] <= 1 && d[3] <= 3);
}

static void test_max_order(void)
{
    CHECK(ngram_max_order(4097) == 5);
    CHECK(ngram_max_order(8193) == 4);
    CHECK(ngram_max_order(257) == 7);
    CHECK(ngram_max_order(2) == 8);
    ngram_memory m;
    tempo_error e;
    /* up to 16384 ids, orders above the exact ones are hashed; beyond, refused */
    CHECK(ngram_memory_init(&m, 4097, 9, 1, &e) == -1 && strstr(e.msg, "1..8"));
    CHECK(ngram_memory_init(&m, 16385, 5, 1, &e) == -1 && strstr(e.msg, "1..4"));
    CHECK(ngram_memory_init(&m, 16384, 8, 1, &e) == 0 && m.exact_order == 4);
    ngram_memory_free(&m);
    CHECK(ngram_memory_init(&m, 4097, 5, 1, &e) == 0 && m.exact_order == 5);
    ngram_memory_free(&m);
    CHECK(ngram_memory_init(&m, 4097, 7, 1, &e) == 0 && m.exact_order == 5);
    ngram_memory_free(&m);
    /* a built (saved, mapped) memory takes one hashed order above the exact ones */
    CHECK(ngram_build_max_order(4097) == 6);
    CHECK(ngram_build_max_order(8193) == 5);
    CHECK(ngram_build_max_order(16385) == 4);
    CHECK(ngram_build_max_order(2) == 8);
    int32_t x[16] = {0};
    ngram_stream s = {x, 4, 16};
    CHECK(ngram_memory_init(&m, 4097, 7, 1, &e) == 0);
    CHECK(ngram_memory_build(&m, &s, 1, &e) == -1 && strstr(e.msg, "up to 6"));
    for (size_t i = 0; i < 16; i++) ngram_memory_add(&m, x, i, &e);
    CHECK(memory_file_save(&m, "/tmp/tempo_never_written.bin", &e) == -1 && strstr(e.msg, "hashed"));
    CHECK(access("/tmp/tempo_never_written.bin", F_OK) != 0);
    ngram_memory_free(&m);
}

/* Count x[0..N) (ids below A; A = 0: below V) incrementally at order K and
 * compare with the brute-force reference: every count-of-counts exactly,
 * the probability at every `every`-th position to 1e-13. */
static void check_against_reference(const int32_t *x, size_t N, int V, int K, int A, size_t every, ngram_memory *m)
{
    tempo_error e;
    CHECK(ngram_memory_init(m, V, K, 1, &e) == 0);
    for (size_t i = 0; i < N; i++)
        if (ngram_memory_add(m, x, i, &e)) { CHECK_MSG(0, "%s", e.msg); break; }
    ref_lm r = {x, N, V, K, A};
    double disc[NGRAM_MAX_ORDER + 1][4];
    for (int n = 1; n <= K; n++) {
        uint64_t coc[5];
        ref_coc(&r, n, coc);
        for (int k = 1; k <= 4; k++)
            CHECK_MSG(coc[k] == m->coc[n][k], "K %d order %d coc[%d] %llu vs %llu", K, n, k,
                      (unsigned long long)coc[k], (unsigned long long)m->coc[n][k]);
        ngram_discounts(coc, disc[n]);
    }
    double worst = 0;
    for (size_t i = 0; i < N; i += every) {
        double a = ngram_memory_prob(m, x, i, NULL), b = ref_prob(&r, i, disc);
        if (fabs(a - b) > worst) worst = fabs(a - b);
    }
    CHECK_MSG(worst <= 1e-13, "K %d: worst difference %g", K, worst);
}

/* Orders above the exact ones (hashed context keys, a cache of a long
 * context) against the same reference: ids 0..5 of a 4097-id vocabulary,
 * orders 6 and 7 (exact keys stop at 5); each distribution sums to 1. */
static void test_hashed_orders(void)
{
    const int V = 4097, A = 6;
    const size_t N = 420;
    int32_t *x = malloc(sizeof(int32_t) * N);
    double *p = malloc(sizeof(double) * V);
    make_stream(x, N, A, 21);
    for (int K = 6; K <= 7; K++) {
        ngram_memory m;
        check_against_reference(x, N, V, K, A, 11, &m);
        CHECK(m.exact_order < K);
        for (size_t i = 0; i < N; i += 53)
            CHECK_NEAR(dist_sum(&m, x, i, p), 1.0, 1e-9);
        ngram_memory_free(&m);
    }
    free(p);
    free(x);
}

/* The incremental memory and the reference agree at every position. */
static void test_against_reference(void)
{
    const int V = 6;
    const size_t N = 900;
    int32_t *x = malloc(sizeof(int32_t) * N);
    make_stream(x, N, V, 7);
    for (int K = 1; K <= 4; K++) {
        ngram_memory m;
        check_against_reference(x, N, V, K, 0, 7, &m);
        ngram_memory_free(&m);
    }
    free(x);
}


/* ngram_memory_probs_of answers each candidate bit for bit as a lone
 * ngram_memory_prob_of, with the lone query's match: exact orders (V 37)
 * and hashed ones (V 4097, order 7), one to four candidates at every
 * position, duplicates and the true token among them, and the first
 * positions, where fewer orders are usable. */
static void test_probs_of(void)
{
    const size_t N = 4000;
    int32_t *x = malloc(sizeof(int32_t) * N);
    struct { int V, A, K; } cases[] = {{37, 37, 4}, {4097, 6, 7}};
    for (int c = 0; c < 2; c++) {
        const int V = cases[c].V;
        make_stream(x, N, cases[c].A, 41 + (uint64_t)c);
        ngram_memory m;
        tempo_error e;
        CHECK(ngram_memory_init(&m, V, cases[c].K, 1, &e) == 0);
        for (size_t i = 0; i < N; i++)
            ngram_memory_add(&m, x, i, &e);
        int differ = 0, checked = 0;
        for (size_t i = 0; i < N; i += i < 16 ? 1 : 7) {
            int32_t cand[4] = {x[i], (int32_t)(i % (size_t)V), x[i > 3 ? i - 3 : 0], x[i]};
            for (int n = 1; n <= 4; n++) {
                double p[4];
                ngram_match mt, lone_mt;
                ngram_memory_probs_of(&m, x, i, cand, n, p, &mt);
                for (int k = 0; k < n; k++) {
                    double lone = ngram_memory_prob_of(&m, x, i, cand[k], &lone_mt);
                    differ += p[k] != lone || memcmp(&mt, &lone_mt, sizeof mt) != 0;
                    checked++;
                }
            }
        }
        CHECK_MSG(differ == 0, "V %d: %d of %d answers differ from the lone queries'", V, differ, checked);
        ngram_memory_free(&m);
    }
    free(x);
}

/* A memory reserved for a stream's length counts it with no table growing
 * (each order's tables keep their slots and capacity through every add),
 * and an order's room is bounded by what it can hold (V^(n-1) contexts,
 * V^n n-grams); prefetches before every query (any position, ids out of
 * range, an empty memory) change nothing: the same counts and the same
 * probabilities, bit for bit, as a memory counted plainly. Exact orders
 * (V 6) and hashed ones (V 4097, orders 6 and 7), on a stream with repeats
 * and on one of distinct n-grams. */
static void test_reserve_and_prefetch(void)
{
    const size_t N = 3000;
    int32_t *x = malloc(sizeof(int32_t) * N);
    /* A 0: uniform ids, nearly every n-gram of order 2 and up new (the tables fill to their bound) */
    struct { int V, A, K; } cases[] = {{6, 6, 4}, {4097, 6, 7}, {4097, 0, 7}};
    for (int c = 0; c < 3; c++) {
        const int V = cases[c].V, K = cases[c].K;
        make_stream(x, N, cases[c].A ? cases[c].A : V, 31 + (uint64_t)c);
        for (size_t i = 0; i < N && !cases[c].A; i++)
            x[i] = (int32_t)((i * 2654435761u + 12345u) % (uint32_t)V);
        ngram_memory plain, r;
        tempo_error e;
        CHECK(ngram_memory_init(&plain, V, K, 1, &e) == 0 && ngram_memory_init(&r, V, K, 1, &e) == 0);
        int32_t odd[4] = {-1, V, INT32_MAX, 0};
        ngram_memory_prefetch(&r, x, 0, odd, 4);   /* empty tables: nothing to fetch */
        ngram_memory_prefetch(&r, x, 5, odd, 4);
        CHECK(ngram_memory_reserve(&r, N, &e) == 0);
        uint8_t *slots[2][NGRAM_MAX_ORDER + 1];
        uint64_t cap[2][NGRAM_MAX_ORDER + 1];
        for (int n = 1; n <= K; n++) {
            slots[0][n] = r.grams[n][0].slots, cap[0][n] = r.grams[n][0].capacity;
            slots[1][n] = r.ctxs[n][0].slots, cap[1][n] = r.ctxs[n][0].capacity;
            CHECK(cap[0][n] > N * 7 / 10 || (n <= r.exact_order && r.pow[n] < N));
        }
        /* the bound: order 1 has one context, order 2 at most V; with V 6 order 1 at most 6 n-grams */
        CHECK(r.ctxs[1][0].capacity <= 32 && r.ctxs[2][0].capacity <= (uint64_t)V * 2 + 16);
        if (V == 6)
            CHECK(r.grams[1][0].capacity <= 32 && r.grams[2][0].capacity <= 80);
        int differ = 0;
        for (size_t i = 0; i < N; i++) {
            int32_t cand[4] = {x[i], (x[i] + 1) % V, -1, V};
            if (i + 1 < N)
                ngram_memory_prefetch(&r, x, i + 1, cand, 4);
            ngram_memory_prefetch(&r, x, i, cand, 4);
            differ += ngram_memory_prob(&r, x, i, NULL) != ngram_memory_prob(&plain, x, i, NULL);
            differ += ngram_memory_prob_of(&r, x, i, cand[1], NULL) != ngram_memory_prob_of(&plain, x, i, cand[1], NULL);
            CHECK(ngram_memory_add(&plain, x, i, &e) == 0 && ngram_memory_add(&r, x, i, &e) == 0);
        }
        CHECK_MSG(differ == 0, "V %d: %d answers differ from the plain memory's", V, differ);
        int grew = 0;
        for (int n = 1; n <= K; n++) {
            grew += r.grams[n][0].slots != slots[0][n] || r.grams[n][0].capacity != cap[0][n];
            grew += r.ctxs[n][0].slots != slots[1][n] || r.ctxs[n][0].capacity != cap[1][n];
            CHECK(r.grams[n][0].count == plain.grams[n][0].count && r.ctxs[n][0].count == plain.ctxs[n][0].count);
            CHECK(memcmp(r.coc[n], plain.coc[n], sizeof r.coc[n]) == 0);
        }
        CHECK_MSG(grew == 0, "V %d: %d tables grew after the reserve", V, grew);
        CHECK(same_probs(&r, &plain, x, N));
        ngram_memory_free(&plain);
        ngram_memory_free(&r);
    }
    /* a sharded memory cannot count incrementally: refused, with a message */
    ngram_memory s;
    tempo_error e;
    CHECK(ngram_memory_init(&s, 37, 3, 2, &e) == 0);
    CHECK(ngram_memory_reserve(&s, 10, &e) == -1 && strstr(e.msg, "single shard"));
    ngram_memory_free(&s);
    free(x);
}

/* The parallel build equals the incremental count at any thread count; every distribution sums to 1. */
static void test_build_matches_incremental(void)
{
    const int V = 37, K = 4;
    const size_t N = 20000;
    int32_t *x = malloc(sizeof(int32_t) * N);
    uint16_t *x16 = malloc(sizeof(uint16_t) * N);
    make_stream(x, N, V, 11);
    for (size_t i = 0; i < N; i++) x16[i] = (uint16_t)x[i];
    ngram_memory inc;
    tempo_error e;
    CHECK(ngram_memory_init(&inc, V, K, 1, &e) == 0);
    for (size_t i = 0; i < N; i++) ngram_memory_add(&inc, x, i, &e);
    double *p = malloc(sizeof(double) * V);
    for (int threads = 1; threads <= 3; threads++) {
        ngram_memory b;
        CHECK(ngram_memory_init(&b, V, K, threads, &e) == 0);
        ngram_stream s = {x16, 2, N};
        CHECK(ngram_memory_build(&b, &s, 1, &e) == 0);
        CHECK(ngram_memory_entries(&b) == ngram_memory_entries(&inc));
        int same = same_probs(&b, &inc, x, N);
        CHECK_MSG(same, "threads %d: probabilities differ from the incremental count", threads);
        for (size_t i = 0; i < N; i += 997)
            CHECK_NEAR(dist_sum(&b, x, i, p), 1.0, 1e-12);
        ngram_memory_free(&b);
    }
    for (size_t i = 0; i < N; i += 1009)
        CHECK_NEAR(dist_sum(&inc, x, i, p), 1.0, 1e-12);
    /* a context never seen and a stream start: still a distribution, never zero */
    int32_t odd[4] = {36, 36, 36, 36};
    CHECK_NEAR(dist_sum(&inc, odd, 3, p), 1.0, 1e-12);
    CHECK(ngram_memory_prob(&inc, odd, 3, NULL) > 0);
    CHECK_NEAR(dist_sum(&inc, x, 0, p), 1.0, 1e-12);
    free(p);
    ngram_memory_free(&inc);
    free(x);
    free(x16);
}

/* Write n bytes of buf to path (core/fileio's atomic write), checking it worked. */
static void write_file(const char *path, const void *buf, size_t n)
{
    tempo_error e;
    CHECK_MSG(file_write_atomic(path, buf, n, &e) == 0, "%s", e.msg);
}

/* A built memory whose top order is hashed (ids of a 4,097-id vocabulary,
 * order 6, exact keys stop at 5): the same probabilities as the incremental
 * count at every position and thread count, pruned or not; every
 * distribution sums to 1; saved (version 2), mapped back, same answers. */
/* A version 3/4 file as versions 1/2 wrote it (tempo before the data id):
 * the 40 bytes of the data id and build seconds taken out, the directory's
 * offsets and the file size moved with the tables. */
static char *as_version_1_or_2(const char *f, size_t n, size_t *out_n)
{
    uint32_t version, order, shards;
    memcpy(&version, f + 8, 4);
    memcpy(&order, f + 16, 4);
    memcpy(&shards, f + 20, 4);
    size_t dir = (size_t)order * shards * 48;
    size_t hb3 = (752 + dir + 63) / 64 * 64, hb1 = (712 + dir + 63) / 64 * 64;
    *out_n = n - hb3 + hb1;
    char *o = calloc(1, *out_n);
    memcpy(o, f, 712);
    version -= 2;
    memcpy(o + 8, &version, 4);
    uint64_t size = *out_n;
    memcpy(o + 56, &size, 8);
    for (size_t i = 0; i < dir / 24; i++) {
        memcpy(o + 712 + i * 24, f + 752 + i * 24, 24);
        uint64_t off;
        memcpy(&off, f + 752 + i * 24 + 16, 8);
        off = off - hb3 + hb1;
        memcpy(o + 712 + i * 24 + 16, &off, 8);
    }
    memcpy(o + hb1, f + hb3, n - hb3);
    return o;
}

static void test_build_hashed_top(void)
{
    const int V = 4097, A = 23, K = 6;
    const size_t N = 12000;
    int32_t *x = malloc(sizeof(int32_t) * N);
    make_stream(x, N, A, 17);
    ngram_memory inc;
    tempo_error e;
    CHECK(ngram_memory_init(&inc, V, K, 1, &e) == 0 && inc.exact_order == K - 1);
    for (size_t i = 0; i < N; i++) ngram_memory_add(&inc, x, i, &e);
    double *p = malloc(sizeof(double) * V);
    ngram_stream s = {x, 4, N};
    for (int threads = 1; threads <= 3; threads++) {
        ngram_memory b;
        CHECK(ngram_memory_init(&b, V, K, threads, &e) == 0);
        CHECK_MSG(ngram_memory_build(&b, &s, 1, &e) == 0, "%s", e.msg);
        CHECK(ngram_memory_entries(&b) == ngram_memory_entries(&inc));
        for (int sh = 0; sh < threads; sh++) CHECK(b.grams[K][sh].words == 1);   /* the suffixes are gone */
        for (int n = 1; n <= K; n++)
            for (int k = 1; k <= 4; k++) CHECK(b.coc[n][k] == inc.coc[n][k]);
        int same = same_probs(&b, &inc, x, N);
        CHECK_MSG(same, "threads %d: probabilities differ from the incremental count", threads);
        for (size_t i = 0; i < N; i += 1499)
            CHECK_NEAR(dist_sum(&b, x, i, p), 1.0, 1e-9);
        ngram_memory_free(&b);
    }
    /* pruned: fewer top-order n-grams, still a distribution */
    ngram_memory pr;
    CHECK(ngram_memory_init(&pr, V, K, 2, &e) == 0 && ngram_memory_build(&pr, &s, 2, &e) == 0);
    CHECK(pr.grams[K][0].count + pr.grams[K][1].count + inc.coc[K][1] == inc.grams[K][0].count);
    for (size_t i = 0; i < N; i += 2003)
        CHECK_NEAR(dist_sum(&pr, x, i, p), 1.0, 1e-9);
    /* the file: version 4 (hashed, with the data id), mapped back with the same answers */
    char dir[] = "/tmp/tempo_memhXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/m.bin", dir);
    CHECK_MSG(memory_file_save(&pr, path, &e) == 0, "%s", e.msg);
    char *f;
    size_t nf;
    CHECK(file_read_all(path, &f, &nf, 0, &e) == 0);
    uint32_t version;
    memcpy(&version, f + 8, 4);
    CHECK(version == 4);
    ngram_memory l;
    CHECK_MSG(memory_file_load(&l, path, V, 0, &e) == 0, "%s", e.msg);
    int same = same_probs(&l, &pr, x, N);
    CHECK(same);
    ngram_memory_free(&l);
    /* as version 2 wrote it (before the data id): the same answers, no id */
    size_t n2;
    char *f2 = as_version_1_or_2(f, nf, &n2);
    write_file(path, f2, n2);
    CHECK_MSG(memory_file_load(&l, path, V, 0, &e) == 0 && l.build_seconds == 0 && l.data_id[0] == 0, "%s", e.msg);
    same = same_probs(&l, &pr, x, N);
    CHECK(same);
    ngram_memory_free(&l);
    free(f2);
    /* an exact-keys header (version 3) on hashed tables, and a hashed one (4) on an exact order: refused */
    uint32_t three = 3;
    memcpy(f + 8, &three, 4);
    write_file(path, f, nf);
    CHECK(memory_file_load(&l, path, V, 0, &e) == -1 && strstr(e.msg, "corrupt header"));
    free(f);
    ngram_memory ex;
    CHECK(ngram_memory_init(&ex, V, K - 1, 1, &e) == 0 && ngram_memory_build(&ex, &s, 1, &e) == 0);
    CHECK(memory_file_save(&ex, path, &e) == 0);
    CHECK(file_read_all(path, &f, &nf, 0, &e) == 0);
    memcpy(&version, f + 8, 4);
    CHECK(version == 3);
    f2 = as_version_1_or_2(f, nf, &n2);   /* as version 1 wrote it */
    write_file(path, f2, n2);
    CHECK_MSG(memory_file_load(&l, path, V, 0, &e) == 0, "%s", e.msg);
    same = same_probs(&l, &ex, x, N);
    CHECK(same);
    ngram_memory_free(&l);
    free(f2);
    version = 4;
    memcpy(f + 8, &version, 4);
    write_file(path, f, nf);
    CHECK(memory_file_load(&l, path, V, 0, &e) == -1 && strstr(e.msg, "corrupt header"));
    free(f);
    unlink(path);
    rmdir(dir);
    ngram_memory_free(&ex);
    ngram_memory_free(&pr);
    ngram_memory_free(&inc);
    free(p);
    free(x);
}

/* Pruning drops top-order singletons, gives their mass to the lower orders, stays normalised. */
static void test_pruning(void)
{
    const int V = 50, K = 3;
    const size_t N = 30000;
    int32_t *x = malloc(sizeof(int32_t) * N);
    make_stream(x, N, V, 5);
    ngram_memory full, pr;
    tempo_error e;
    ngram_stream s = {x, 4, N};
    CHECK(ngram_memory_init(&full, V, K, 2, &e) == 0 && ngram_memory_build(&full, &s, 1, &e) == 0);
    CHECK(ngram_memory_init(&pr, V, K, 2, &e) == 0 && ngram_memory_build(&pr, &s, 2, &e) == 0);
    uint64_t top_full = full.grams[K][0].count + full.grams[K][1].count;
    uint64_t top_pr = pr.grams[K][0].count + pr.grams[K][1].count;
    CHECK(top_pr + full.coc[K][1] == top_full);
    CHECK(ngram_memory_bytes(&pr) < ngram_memory_bytes(&full));
    double *p = malloc(sizeof(double) * V);
    double worst = 0;
    for (size_t i = 0; i < N; i += 613) {
        double d = fabs(dist_sum(&pr, x, i, p) - 1.0);
        if (d > worst) worst = d;
        for (int w = 0; w < V; w++) CHECK(p[w] > 0);
    }
    CHECK_NEAR(worst, 0, 1e-12);
    free(p);
    ngram_memory_free(&full);
    ngram_memory_free(&pr);
    free(x);
}

/* Save, map back, same answers; the same build twice gives the same bytes; bad files are refused. */
static void test_file_round_trip(void)
{
    const int V = 29, K = 3;
    const size_t N = 8000;
    int32_t *x = malloc(sizeof(int32_t) * N);
    make_stream(x, N, V, 3);
    char dir[] = "/tmp/tempo_memXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char p1[256], p2[256], bad[256];
    snprintf(p1, sizeof p1, "%s/a.bin", dir);
    snprintf(p2, sizeof p2, "%s/b.bin", dir);
    snprintf(bad, sizeof bad, "%s/bad.bin", dir);
    ngram_memory a, b, l;
    tempo_error e;
    ngram_stream s = {x, 4, N};
    CHECK(ngram_memory_init(&a, V, K, 2, &e) == 0 && ngram_memory_build(&a, &s, 2, &e) == 0);
    a.tokenizer_id = 42;
    memset(a.data_id, 0xd1, sizeof a.data_id);   /* what the trainer records: the data, the build's time */
    a.build_seconds = 12.5;
    CHECK(memory_file_save(&a, p1, &e) == 0);
    CHECK(ngram_memory_init(&b, V, K, 2, &e) == 0 && ngram_memory_build(&b, &s, 2, &e) == 0);
    b.tokenizer_id = 42;
    memset(b.data_id, 0xd1, sizeof b.data_id);
    b.build_seconds = 12.5;
    CHECK(memory_file_save(&b, p2, &e) == 0);
    char *f1, *f2;
    size_t n1, n2;
    CHECK(file_read_all(p1, &f1, &n1, 0, &e) == 0 && file_read_all(p2, &f2, &n2, 0, &e) == 0);
    CHECK(n1 == n2 && !memcmp(f1, f2, n1));
    CHECK_MSG(memory_file_load(&l, p1, V, 42, &e) == 0, "%s", e.msg);
    int same = same_probs(&l, &a, x, N);
    CHECK(same);
    CHECK(l.prune_min == 2 && l.tokens == N && l.build_seconds == 12.5 && !memcmp(l.data_id, a.data_id, 32));
    ngram_memory_free(&l);
    /* the store's checks: one identity for one memory whatever its build seconds, every byte verified */
    uint8_t id1[32], id2[32];
    CHECK(memory_file_verify(p1, &e) == 0);
    CHECK(memory_file_identity(p1, id1, &e) == 0 && memory_file_identity(p2, id2, &e) == 0 && !memcmp(id1, id2, 32));
    /* the identity known before any write (the store links a copy it holds instead of writing one) is the
     * file's, whatever the build's seconds; the header in memory keeps its own seconds */
    memory_header hd;
    uint8_t idh[32];
    b.build_seconds = 7.25;
    CHECK(memory_file_header(&b, &hd, p2, &e) == 0 && hd.size < n2 && hd.size % 64 == 0);
    memory_header_identity(&hd, idh);
    CHECK(!memcmp(idh, id1, 32));
    double kept;
    memcpy(&kept, hd.bytes + 744, 8);
    CHECK(kept == 7.25);
    CHECK(!memcmp(hd.bytes, f2, 744) && !memcmp(hd.bytes + 752, f2 + 752, hd.size - 752));
    memory_header_free(&hd);
    b.tokens++;   /* another memory: another identity */
    CHECK(memory_file_header(&b, &hd, p2, &e) == 0);
    memory_header_identity(&hd, idh);
    CHECK(memcmp(idh, id1, 32) != 0);
    memory_header_free(&hd);
    b.tokens--;
    double other_s = 99;
    memcpy(f2 + 744, &other_s, 8);
    write_file(bad, f2, n2);
    CHECK(memory_file_identity(bad, id2, &e) == 0 && !memcmp(id1, id2, 32) && memory_file_verify(bad, &e) == 0);
    f2[n2 - 3] ^= 0x01;   /* a table's byte: the same header, so the same identity, but not the same memory */
    write_file(bad, f2, n2);
    CHECK(memory_file_identity(bad, id2, &e) == 0 && !memcmp(id1, id2, 32));
    CHECK(memory_file_verify(bad, &e) == -1 && strstr(e.msg, "checksum"));
    write_file(bad, f2, n2 / 2);
    CHECK(memory_file_verify(bad, &e) == -1 && strstr(e.msg, bad));
    CHECK(memory_file_identity(bad, id2, &e) == 0 || strstr(e.msg, bad));
    write_file(bad, f2, 100);
    CHECK(memory_file_identity(bad, id2, &e) == -1 && memory_file_verify(bad, &e) == -1);
    /* build seconds that are no duration: refused */
    double bad_s = -1;
    memcpy(f1 + 744, &bad_s, 8);
    write_file(bad, f1, n1);
    CHECK(memory_file_load(&l, bad, V, 42, &e) == -1 && strstr(e.msg, "corrupt header"));
    memcpy(f1 + 744, &a.build_seconds, 8);
    /* foreign vocabulary or tokenizer */
    CHECK(memory_file_load(&l, p1, V + 1, 42, &e) == -1 && strstr(e.msg, "vocabulary"));
    CHECK(memory_file_load(&l, p1, V, 43, &e) == -1 && strstr(e.msg, "tokenizer"));
    /* truncated at several points */
    size_t cuts[] = {0, 10, 700, n1 / 2, n1 - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        write_file(bad, f1, cuts[c]);
        CHECK_MSG(memory_file_load(&l, bad, V, 0, &e) == -1 && strstr(e.msg, bad), "cut %zu", cuts[c]);
    }
    /* one flipped bit anywhere in the tables */
    for (size_t at = n1 - 1; at > 1024; at -= n1 / 7) {
        f1[at] ^= 0x10;
        write_file(bad, f1, n1);
        CHECK_MSG(memory_file_load(&l, bad, V, 0, &e) == -1, "flip at %zu", at);
        f1[at] ^= 0x10;
    }
    /* a directory entry claiming a full table (no empty slot: a probe would never end) */
    uint64_t cap;
    memcpy(&cap, f1 + 752, 8);   /* the directory, after the data id and build seconds */
    memcpy(f1 + 760, &cap, 8);
    write_file(bad, f1, n1);
    CHECK(memory_file_load(&l, bad, V, 0, &e) == -1);
    CHECK(memory_file_load(&l, "/nonexistent/memory.bin", V, 0, &e) == -1 && strstr(e.msg, "/nonexistent"));
    free(f1);
    free(f2);
    unlink(p1); unlink(p2); unlink(bad);
    rmdir(dir);
    ngram_memory_free(&a);
    ngram_memory_free(&b);
    free(x);
}

int main(void)
{
    RUN(test_count_table_sizes);
    RUN(test_discounts_formula);
    RUN(test_max_order);
    RUN(test_against_reference);
    RUN(test_hashed_orders);
    RUN(test_build_matches_incremental);
    RUN(test_reserve_and_prefetch);
    RUN(test_probs_of);
    RUN(test_build_hashed_top);
    RUN(test_pruning);
    RUN(test_file_round_trip);
    return test_summary("test_memory");
}
