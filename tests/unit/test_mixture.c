/* test_mixture.c - the hybrid model's mixing (src/memory/mixer.c,
 * mixture.c): the mixed distribution sums to 1 at random positions; the
 * probability a step scores is the mixed distribution's entry for the true
 * token; causality (changing tokens at and after t leaves every probability
 * before t bit-identical, with the cache and the mixer learning); the mixer
 * learning to trust the component that predicts; the calibration stage
 * (calibration.c: the map, and that it helps when the match model is
 * right and is absent without one); mixer.json's round trip and refusals. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/strbuf.h"
#include "memory/calibration.h"
#include "memory/match_model.h"
#include "memory/mixer.h"
#include "memory/mixture.h"
#include "memory/ngram_memory.h"
#include "test.h"

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static void make_stream(int32_t *x, size_t n, int V, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = lcg(&seed);
        x[i] = (i >= 5 && r % 3) ? x[i - 5] : (int32_t)(r % (uint64_t)V);
    }
}

/* A stand-in transformer: a normalised distribution that depends on the last two tokens only. */
static void model_dist(const int32_t *x, size_t i, int V, double *p)
{
    uint64_t s = 1000003u * (uint64_t)(i >= 1 ? x[i - 1] : 7) + (uint64_t)(i >= 2 ? x[i - 2] : 3);
    double sum = 0;
    for (int w = 0; w < V; w++) {
        p[w] = 0.05 + (double)(lcg(&s) % 1000) / 1000.0;
        sum += p[w];
    }
    for (int w = 0; w < V; w++) p[w] /= sum;
}

static void build_memory(ngram_memory *m, int V, int K, uint64_t seed)
{
    size_t n = 5000;
    int32_t *x = malloc(sizeof(int32_t) * n);
    make_stream(x, n, V, seed);
    tempo_error e;
    ngram_stream s = {x, 4, n};
    CHECK(ngram_memory_init(m, V, K, 2, &e) == 0 && ngram_memory_build(m, &s, 1, &e) == 0);
    free(x);
}

/* With beta != 1 the transformer enters sharpened: the step is given the
 * sharpened probabilities (as the head computes them), the full
 * distribution the transformer's own, and both must agree. */
static void sums_and_consistency(double beta)
{
    const int V = 23;
    ngram_memory mem;
    build_memory(&mem, V, 3, 9);
    mixture_options o = {&mem, V, 3, 1, 4};
    mixer mx;
    tempo_error e;
    CHECK(mixer_init(&mx, 3, 3, 1, 0.05, &e) == 0);
    mx.beta = beta;
    uint64_t r = 17;
    for (int k = 0; k < MIX_TOP_ROWS * CALIB_KNOTS; k++)   /* top-token maps far from the identity */
        mx.calib_top.knots[k] = 0.02 + (double)(lcg(&r) % 960) / 1000.0;
    mixture_stream s;
    CHECK(mixture_stream_init(&s, &o, &mx, &e) == 0);
    size_t n = 3000;
    int32_t *x = malloc(sizeof(int32_t) * n);
    make_stream(x, n, V, 4);
    double *pm = malloc(sizeof(double) * V), *out = malloc(sizeof(double) * V), *tmp = malloc(sizeof(double) * 2 * V);
    double *ps = malloc(sizeof(double) * V);
    double worst_sum = 0, worst_entry = 0, worst_sharp = 0;
    for (size_t i = 1; i < n; i++) {
        model_dist(x, i, V, pm);
        int32_t tid = 0;
        for (int w = 1; w < V; w++) if (pm[w] > pm[tid]) tid = w;
        /* the sharpened distribution from its definition (beta 1: the model's own) */
        double z = 0;
        for (int w = 0; w < V; w++) z += pow(pm[w], beta);
        for (int w = 0; w < V; w++) ps[w] = beta == 1 ? pm[w] : pow(pm[w], beta) / z;
        if (i % 37 == 0) {
            double sh[23], sum_sh = 0;
            mixture_sharpen(pm, V, beta, sh);
            for (int w = 0; w < V; w++) {
                sum_sh += sh[w];
                if (fabs(sh[w] - ps[w]) > worst_sharp) worst_sharp = fabs(sh[w] - ps[w]);
            }
            CHECK(fabs(sum_sh - 1) <= 1e-12);
            mixture_stream_dist(&s, x, i, pm, out, tmp);
            double sum = 0;
            for (int w = 0; w < V; w++) { sum += out[w]; CHECK(out[w] > 0); }
            if (fabs(sum - 1) > worst_sum) worst_sum = fabs(sum - 1);
            double p = mixture_stream_step(&s, x, i, ps[x[i]], ps[tid], tid, NULL, NULL, &e);
            if (fabs(p - out[x[i]]) > worst_entry) worst_entry = fabs(p - out[x[i]]);
        } else {
            mixture_stream_step(&s, x, i, ps[x[i]], ps[tid], tid, NULL, NULL, &e);
        }
    }
    CHECK_MSG(worst_sum <= 1e-9, "beta %g: worst |sum - 1| %g", beta, worst_sum);
    CHECK_MSG(worst_sharp <= 1e-15, "beta %g: mixture_sharpen differs from p^beta / sum by %g", beta, worst_sharp);
    CHECK_MSG(worst_entry <= 1e-15, "beta %g: step and dist differ by %g", beta, worst_entry);
    mixture_stream_free(&s);
    mixer_free(&mx);
    ngram_memory_free(&mem);
    free(x); free(pm); free(out); free(tmp); free(ps);
}

static void test_sums_and_consistency(void)
{
    sums_and_consistency(1.0);
    sums_and_consistency(1.15);
    sums_and_consistency(0.7);
}

static void score(const ngram_memory *mem, const mixer *mx, const int32_t *x, size_t n, int V, double *bits)
{
    double *pm = malloc(sizeof(double) * n), *top = calloc(n, sizeof(double)), *d = malloc(sizeof(double) * V);
    int32_t *tid = calloc(n, sizeof(int32_t));
    for (size_t i = 1; i < n; i++) {
        model_dist(x, i, V, d);
        pm[i] = d[x[i]];
        for (int w = 0; w < V; w++) if (d[w] > top[i]) { top[i] = d[w]; tid[i] = w; }
    }
    mixture_options o = {mem, V, 3, 1, 4};
    mixture_totals t;
    tempo_error e;
    CHECK(mixture_score(&o, mx, x, n, pm, top, tid, bits, &t, NULL, &e) == 0);
    CHECK(t.n_tokens == n - 1);
    free(pm);
    free(top);
    free(tid);
    free(d);
}

/* Changing the stream at and after t changes nothing before t. */
static void test_causality(void)
{
    const int V = 19;
    ngram_memory mem;
    build_memory(&mem, V, 3, 2);
    mixer mx;
    tempo_error e;
    CHECK(mixer_init(&mx, 3, 3, 1, 0.1, &e) == 0);
    size_t n = 4000;
    int32_t *a = malloc(sizeof(int32_t) * n), *b = malloc(sizeof(int32_t) * n);
    double *ba = malloc(sizeof(double) * n), *bb = malloc(sizeof(double) * n);
    make_stream(a, n, V, 77);
    size_t cuts[] = {1, 2, 500, 2999, 3999};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        size_t t = cuts[c];
        memcpy(b, a, sizeof(int32_t) * n);
        uint64_t s = 5 + t;
        for (size_t i = t; i < n; i++) b[i] = (int32_t)(lcg(&s) % (uint64_t)V);
        score(&mem, &mx, a, n, V, ba);
        score(&mem, &mx, b, n, V, bb);
        int same = 1;
        for (size_t i = 1; i < t; i++)
            if (ba[i] != bb[i]) same = 0;
        CHECK_MSG(same, "a change at %zu moved an earlier probability", t);
        if (t + 1 < n) CHECK(ba[n - 1] != bb[n - 1] || a[n - 1] == b[n - 1]);
    }
    free(a); free(b); free(ba); free(bb);
    mixer_free(&mx);
    ngram_memory_free(&mem);
}

/* x[0..n): a text of `period` random tokens read over and over, one token
 * in change_one_in (0: none) after the first reading drawn afresh; pm[i]:
 * the stand-in transformer's probability of x[i]. */
static void repeated_text(int32_t *x, double *pm, size_t n, int V, size_t period, uint64_t seed, int change_one_in)
{
    for (size_t i = 0; i < n; i++)
        x[i] = i < period || (change_one_in && lcg(&seed) % (uint64_t)change_one_in == 0)
                   ? (int32_t)(lcg(&seed) % (uint64_t)V) : x[i - period];
    double *d = malloc(sizeof(double) * V);
    for (size_t i = 1; i < n; i++) { model_dist(x, i, V, d); pm[i] = d[x[i]]; }
    free(d);
}

/* On a text that repeats, the mixer learns to trust the cache; the mixture beats each component. */
static void test_learning(void)
{
    const int V = 31;
    ngram_memory mem;
    build_memory(&mem, V, 3, 1);
    size_t n = 6000;
    int32_t *x = malloc(sizeof(int32_t) * n);
    double *pm = malloc(sizeof(double) * n);
    repeated_text(x, pm, n, V, 200, 3, 0);   /* a 200-token text read 30 times */
    mixer mx, fitted;
    tempo_error e;
    CHECK(mixer_init(&mx, 3, 3, 1, 0.05, &e) == 0);
    mixture_options o = {&mem, V, 3, 1, 4};
    mixture_totals t;
    CHECK(mixture_score(&o, &mx, x, n, pm, NULL, NULL, NULL, &t, &fitted, &e) == 0);
    CHECK(t.bits < t.bits_component[MIX_MODEL] && t.bits < t.bits_component[MIX_MEMORY]);
    CHECK(t.weight_sum[MIX_CACHE] > t.weight_sum[MIX_MODEL]);
    /* the components that learn the text (cache, match model) carried most of the weight */
    double adaptive = (t.weight_sum[MIX_CACHE] + t.weight_sum[MIX_MATCH]) / (double)t.n_tokens;
    CHECK_MSG(adaptive > 0.6, "mean cache + match weight %g", adaptive);
    /* and the fitted mixer gives them most weight in a long match after a long, frequent context */
    ngram_match mem3 = ngram_memory_match(&mem, x, n - 1), full = {3, 100, 1};
    int present[MIX_N] = {1, 1, 1, 1};
    mixer_blend bl;
    mixer_context ctx = mixer_select(&fitted, &mem3, &full, MATCH_LEN_BINS - 1, 0);
    mixer_weights(&fitted, &ctx, present, &bl);
    const double *w = bl.w;
    CHECK_MSG(w[MIX_CACHE] + w[MIX_MATCH] > 0.8, "cache + match weight %g", w[MIX_CACHE] + w[MIX_MATCH]);
    /* without adaptation nothing is learned: the cache stays empty, the weights equal */
    o.adapt = 0;
    mixture_totals t2;
    CHECK(mixture_score(&o, &mx, x, n, pm, NULL, NULL, NULL, &t2, NULL, &e) == 0);
    CHECK_NEAR(t2.weight_sum[MIX_CACHE] / (double)t2.n_tokens, 1.0 / MIX_N, 1e-12);
    CHECK(t2.bits > t.bits);
    mixer_free(&mx);
    mixer_free(&fitted);
    ngram_memory_free(&mem);
    free(x); free(pm);
}

/* The match model against a plain reference: at each position, the most
 * recent earlier occurrence of the last L tokens found by searching the
 * stream, followed while it predicts right, with the hit rate per length bin. */
static void test_match_model(void)
{
    const int V = 13, L = 3;
    size_t n = 3000;
    int32_t *x = malloc(sizeof(int32_t) * n);
    make_stream(x, n, V, 21);
    for (size_t i = 1000; i < 1400; i++) x[i] = x[i - 700];   /* a long repeat */
    match_model mm;
    tempo_error e;
    CHECK(match_model_init(&mm, V, L, &e) == 0);
    size_t ref_next = 0;   /* the reference's predicted position + 1 */
    int ref_len = 0;
    uint32_t hits[MATCH_LEN_BINS] = {0}, trials[MATCH_LEN_BINS] = {0};
    int mismatches = 0, long_matches = 0;
    double *p = malloc(sizeof(double) * V);
    for (size_t i = 0; i < n; i++) {
        int bin = !ref_next ? 0 : ref_len < 4 ? 1 : ref_len < 8 ? 2 : ref_len < 16 ? 3 : ref_len < 32 ? 4 : 5;
        double q = ((double)hits[bin] + 1) / ((double)trials[bin] + 2);
        double want = !ref_next ? 1.0 / V : x[ref_next - 1] == x[i] ? q : (1 - q) / (V - 1);
        if (fabs(match_model_prob(&mm, x, i) - want) > 1e-15 || match_model_bin(&mm) != bin) mismatches++;
        int32_t pred;
        double qq = match_model_predict(&mm, x, &pred), sum = 0;
        for (int w = 0; w < V; w++) sum += pred < 0 ? 1.0 / V : w == pred ? qq : (1 - qq) / (V - 1);
        CHECK_NEAR(sum, 1.0, 1e-12);
        match_model_update(&mm, x, i);
        /* the reference learns the same token */
        if (ref_next) {
            trials[bin]++;
            if (x[ref_next - 1] == x[i]) { hits[bin]++; ref_next++; ref_len++; }
            else { ref_next = 0; ref_len = 0; }
        }
        size_t end = i + 1;
        if (!ref_next && end >= (size_t)L)
            for (size_t q2 = end - 1; q2 >= (size_t)L; q2--)
                if (!memcmp(x + q2 - L, x + end - L, sizeof(int32_t) * L)) { ref_next = q2 + 1; ref_len = 0; break; }
        long_matches += ref_len >= 32;
    }
    CHECK_MSG(mismatches == 0, "%d positions differ from the reference", mismatches);
    CHECK(long_matches > 200);   /* the repeat was found and followed */
    free(p);
    match_model_free(&mm);
    free(x);
}

/* Write text to path (core/fileio's atomic write), checking it worked. */
static void write_text(const char *path, const char *text)
{
    tempo_error e;
    CHECK_MSG(file_write_atomic(path, text, strlen(text), &e) == 0, "%s", e.msg);
}

static void test_mixer_file(void)
{
    char path[] = "/tmp/tempo_mixerXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    mixer a, b;
    tempo_error e;
    CHECK(mixer_init(&a, 4, 2, 1, 0.02, &e) == 0);
    a.lr_final = 0.03;
    a.beta = 1.3;
    for (int k = 0; k < MIX_SETS; k++)
        for (int i = 0; i < a.n_buckets[k] * MIX_N; i++) a.theta[k][i] = ((i + k) % 7) * 0.37 - 1.1;
    for (int i = 0; i < a.n_final * MIX_SETS; i++) a.phi[i] = (i % 5) * 0.21 - 0.4;
    CHECK(a.calib.rows == MATCH_LEN_BINS);
    for (int i = 0; i < a.calib.rows * CALIB_KNOTS; i++) a.calib.knots[i] = (i % 11) / 10.0;
    for (int i = 0; i < MIX_TOP_ROWS * CALIB_KNOTS; i++) a.calib_top.knots[i] = (i % 13) / 12.0;
    CHECK(mixer_save(&a, path, &e) == 0);
    CHECK_MSG(mixer_load(&b, path, &e) == 0, "%s", e.msg);
    CHECK(b.memory_order == 4 && b.cache_order == 2 && b.match == 1 && b.n_final == a.n_final && b.lr == a.lr &&
          b.lr_final == a.lr_final && b.beta == a.beta);
    for (int k = 0; k < MIX_SETS; k++)
        CHECK(b.n_buckets[k] == a.n_buckets[k] &&
              !memcmp(a.theta[k], b.theta[k], sizeof(double) * (size_t)a.n_buckets[k] * MIX_N));
    CHECK(!memcmp(a.phi, b.phi, sizeof(double) * (size_t)a.n_final * MIX_SETS));
    CHECK(b.calib.rows == a.calib.rows &&
          !memcmp(a.calib.knots, b.calib.knots, sizeof(double) * CALIB_KNOTS * (size_t)a.calib.rows));
    CHECK(!memcmp(a.calib_top.knots, b.calib_top.knots, sizeof(double) * CALIB_KNOTS * MIX_TOP_ROWS));
    mixer_free(&b);
    /* the smallest layout: orders 0, no match -> buckets [16,4,4], final 4 */
#define HEAD "{\"format\":\"tempo-mixer\",\"version\":3,\"memory_order\":0,\"cache_order\":0,\"match\":0,"
#define ROWS4 "[[0,0,0,0],[0,0,0,0],[0,0,0,0],[1,2,3,4]]"
#define FINAL4 "[[0,0,0],[0,0,0],[0,0,0],[1,2,3]]"
#define ROWS16 "[[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]," \
               "[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0],[1,2,3,4]]"
    const char *good = HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":0.1,\"lr_final\":0.02,"
                       "\"theta\":[" ROWS16 "," ROWS4 "," ROWS4 "],\"final\":" FINAL4 "}";
    write_text(path, good);
    CHECK_MSG(mixer_load(&b, path, &e) == 0, "%s", e.msg);
    CHECK(b.theta[2][15] == 4 && b.phi[11] == 3 && b.calib.rows == 0);
    CHECK(b.beta == 1);   /* no model_beta: written before it existed */
    mixer_free(&b);
    /* with the match model: a file without "calibration" and "calibration_top"
     * (written before they existed) loads the identity; one with them, their rows */
    {
        mixer m;
        CHECK(mixer_init(&m, 0, 0, 1, 0.1, &e) == 0);
        CHECK(mixer_save(&m, path, &e) == 0);
        char *text;
        size_t len;
        CHECK(file_read_all(path, &text, &len, 1 << 20, &e) == 0);
        char *cal = strstr(text, ",\"calibration\"");
        CHECK(cal != NULL);
        size_t room = cal ? strlen(cal) : 0;   /* every replacement below is shorter than the rows it replaces */
        if (cal) {
            strcpy(cal, "}\n");
            write_text(path, text);
            mixer old;
            CHECK_MSG(mixer_load(&old, path, &e) == 0, "%s", e.msg);
            double id[CALIB_KNOTS];
            calibration_identity(id);
            CHECK(old.calib.rows == MATCH_LEN_BINS);
            for (int r = 0; r < old.calib.rows; r++)
                CHECK(!memcmp(old.calib.knots + (size_t)r * CALIB_KNOTS, id, sizeof id));
            for (int r = 0; r < MIX_TOP_ROWS; r++)
                CHECK(!memcmp(old.calib_top.knots + (size_t)r * CALIB_KNOTS, id, sizeof id));
            mixer_free(&old);
            /* a knot outside 0..1, a short row, too few rows: refused */
            const char *bad_cal[] = {
                ",\"calibration\":[[1.5]]}", ",\"calibration\":[[0.5,0.5]]}", ",\"calibration\":[]}",
                ",\"calibration_top\":[[0.5]]}", ",\"calibration_top\":[]}",
            };
            for (size_t i = 0; i < sizeof bad_cal / sizeof bad_cal[0]; i++) {
                CHECK(strlen(bad_cal[i]) < room);
                strcpy(cal, bad_cal[i]);
                write_text(path, text);
                CHECK_MSG(mixer_load(&old, path, &e) == -1 && strstr(e.msg, "calibration"), "calibration case %zu: %s",
                          i, e.msg);
            }
            /* 33 numbers in every row but one out of range */
            strbuf sb = {0};
            strbuf_puts(&sb, ",\"calibration\":[");
            for (int r = 0; r < MATCH_LEN_BINS; r++) {
                strbuf_puts(&sb, r ? ",[" : "[");
                for (int j = 0; j < CALIB_KNOTS; j++)
                    strbuf_puts(&sb, j == 0 ? (r == 3 ? "-0.1" : "0.5") : ",0.5");
                strbuf_puts(&sb, "]");
            }
            strbuf_puts(&sb, "]}");
            CHECK(sb.len < room);
            strcpy(cal, sb.data);
            write_text(path, text);
            CHECK_MSG(mixer_load(&old, path, &e) == -1 && strstr(e.msg, "calibration[3][0]"), "%s", e.msg);
            strbuf_free(&sb);
        }
        free(text);
        mixer_free(&m);
    }
    const char *bad[] = {
        "", "{", "[]", "{\"format\":\"x\",\"version\":3}",
        "{\"format\":\"tempo-mixer\",\"version\":4}",
        /* orders out of range, not integers */
        "{\"format\":\"tempo-mixer\",\"version\":3,\"memory_order\":9,\"cache_order\":0,\"match\":0}",
        "{\"format\":\"tempo-mixer\",\"version\":3,\"memory_order\":0.5,\"cache_order\":0,\"match\":0}",
        /* bucket counts that do not fit the orders */
        HEAD "\"buckets\":[16,4,5],\"final_buckets\":4,\"lr\":0.1,\"lr_final\":0.02,\"theta\":[" ROWS16 "," ROWS4 "," ROWS4 "],\"final\":" FINAL4 "}",
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":3,\"lr\":0.1,\"lr_final\":0.02,\"theta\":[" ROWS16 "," ROWS4 "," ROWS4 "],\"final\":" FINAL4 "}",
        /* a set missing, a row too short, a logit out of range, a bad final */
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":0.1,\"lr_final\":0.02,\"theta\":[" ROWS16 "," ROWS4 "],\"final\":" FINAL4 "}",
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":0.1,\"lr_final\":0.02,\"theta\":[" ROWS16 "," ROWS4 ",[[0,0,0,0],[0,0,0,0],[0,0,0,0],[1,2,3]]],\"final\":" FINAL4 "}",
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":0.1,\"lr_final\":0.02,\"theta\":[" ROWS16 "," ROWS4 ",[[0,0,0,0],[0,0,0,0],[0,0,0,0],[1,2,3,1e300]]],\"final\":" FINAL4 "}",
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":0.1,\"lr_final\":0.02,\"theta\":[" ROWS16 "," ROWS4 "," ROWS4 "],\"final\":[[0,0,0]]}",
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":0.1,\"theta\":[" ROWS16 "," ROWS4 "," ROWS4 "],\"final\":" FINAL4 "}",
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":0.1,\"lr_final\":0.02,\"theta\":[" ROWS16 "," ROWS4 "," ROWS4 "],\"final\":" FINAL4 ",\"calibration\":[]}",
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":-1,\"lr_final\":0.02,\"theta\":[" ROWS16 "," ROWS4 "," ROWS4 "],\"final\":" FINAL4 "}",
        /* a sharpening out of range or not a number */
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":0.1,\"lr_final\":0.02,\"model_beta\":0,\"theta\":[" ROWS16 "," ROWS4 "," ROWS4 "],\"final\":" FINAL4 "}",
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":0.1,\"lr_final\":0.02,\"model_beta\":4.5,\"theta\":[" ROWS16 "," ROWS4 "," ROWS4 "],\"final\":" FINAL4 "}",
        HEAD "\"buckets\":[16,4,4],\"final_buckets\":4,\"lr\":0.1,\"lr_final\":0.02,\"model_beta\":\"2\",\"theta\":[" ROWS16 "," ROWS4 "," ROWS4 "],\"final\":" FINAL4 "}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(path, bad[i]);
        CHECK_MSG(mixer_load(&b, path, &e) == -1 && strstr(e.msg, path), "case %zu: %s", i, e.msg);
    }
    /* versions 1 and 2 (one weight set): refused as an older layout */
    write_text(path, "{\"format\":\"tempo-mixer\",\"version\":1,\"memory_order\":0,\"cache_order\":0,"
                     "\"lr\":0.1,\"buckets\":9,\"theta\":[[0,0,0],[0,0,0],[0,0,0],[0,0,0],[0,0,0],[0,0,0],"
                     "[0,0,0],[0,0,0],[1,2,3]]}");
    CHECK(mixer_load(&b, path, &e) == -2 && strstr(e.msg, "older layout"));
    write_text(path, "{\"format\":\"tempo-mixer\",\"version\":2,\"memory_order\":0,\"cache_order\":0,\"match\":0,"
                     "\"lr\":0.1,\"buckets\":4,\"theta\":[[0,0,0,0],[0,0,0,0],[0,0,0,0],[1,2,3,4]]}");
    CHECK(mixer_load(&b, path, &e) == -2 && strstr(e.msg, "older layout"));
#undef HEAD
#undef ROWS4
#undef FINAL4
#undef ROWS16
    unlink(path);
    mixer_free(&a);
}

/* mixer_learn's steps are the gradients of the log losses they claim
 * (mixer.h), checked by central differences: each set's logits on the loss
 * of that set's mixture, the final logits on the loss of the whole. */
static void test_mixer_gradient(void)
{
    mixer mx;
    tempo_error e;
    CHECK(mixer_init(&mx, 2, 2, 1, 1.0, &e) == 0);
    mx.lr_final = 1.0;
    ngram_match mm = {2, 7, 3}, cm = {1, 2, 2};
    mixer_context c = mixer_select(&mx, &mm, &cm, 2, 0.6);
    for (int k = 0; k < MIX_SETS; k++) CHECK(c.bucket[k] >= 0 && c.bucket[k] < mx.n_buckets[k]);
    CHECK(c.final >= 0 && c.final < mx.n_final);
    uint64_t r = 11;
    for (int k = 0; k < MIX_SETS; k++)
        for (int i = 0; i < MIX_N; i++)
            mx.theta[k][(size_t)c.bucket[k] * MIX_N + i] = (double)(lcg(&r) % 1000) / 500.0 - 1;
    for (int k = 0; k < MIX_SETS; k++)
        mx.phi[(size_t)c.final * MIX_SETS + k] = (double)(lcg(&r) % 1000) / 500.0 - 1;
    const int present[MIX_N] = {1, 1, 0, 1};   /* an absent component keeps weight 0 and its logit */
    const double p[MIX_N] = {0.05, 0.3, 0.9, 0.01};
    mixer_blend b;
    mixer_weights(&mx, &c, present, &b);
    double wsum = 0;
    for (int i = 0; i < MIX_N; i++) wsum += b.w[i];
    CHECK_NEAR(wsum, 1, 1e-12);
    CHECK(b.w[MIX_CACHE] == 0);
    /* losses as functions of the logits, by finite differences */
    double grad_theta[MIX_SETS][MIX_N], grad_phi[MIX_SETS];
    const double h = 1e-6;
    for (int k = 0; k < MIX_SETS; k++) {
        for (int i = 0; i < MIX_N; i++) {
            double *t = &mx.theta[k][(size_t)c.bucket[k] * MIX_N + i], t0 = *t, lp[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                *t = t0 + (sgn ? -h : h);
                mixer_blend bb;
                mixer_weights(&mx, &c, present, &bb);
                double q = 0;
                for (int j = 0; j < MIX_N; j++) q += bb.set[k][j] * p[j];
                lp[sgn] = -log(q);
            }
            *t = t0;
            grad_theta[k][i] = (lp[0] - lp[1]) / (2 * h);
        }
        double *f = &mx.phi[(size_t)c.final * MIX_SETS + k], f0 = *f, lp[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            *f = f0 + (sgn ? -h : h);
            mixer_blend bb;
            mixer_weights(&mx, &c, present, &bb);
            double q = 0;
            for (int j = 0; j < MIX_N; j++) q += bb.w[j] * p[j];
            lp[sgn] = -log(q);
        }
        *f = f0;
        grad_phi[k] = (lp[0] - lp[1]) / (2 * h);
    }
    mixer before;
    CHECK(mixer_copy(&before, &mx, &e) == 0);
    mixer_learn(&mx, &c, present, &b, p);   /* lr = 1: the step is minus the gradient */
    double worst = 0;
    for (int k = 0; k < MIX_SETS; k++) {
        for (int i = 0; i < MIX_N; i++) {
            size_t at = (size_t)c.bucket[k] * MIX_N + i;
            double step = mx.theta[k][at] - before.theta[k][at];
            if (!present[i]) { CHECK(step == 0); continue; }
            if (fabs(step + grad_theta[k][i]) > worst) worst = fabs(step + grad_theta[k][i]);
        }
        double step = mx.phi[(size_t)c.final * MIX_SETS + k] - before.phi[(size_t)c.final * MIX_SETS + k];
        if (fabs(step + grad_phi[k]) > worst) worst = fabs(step + grad_phi[k]);
    }
    CHECK_MSG(worst < 1e-6, "learning step differs from the gradient by %g", worst);
    mixer_free(&before);
    mixer_free(&mx);
}

/* The map alone: the identity at the knots, bounded everywhere, and it
 * learns the hit rate it sees at a probability. */
static void test_calibration_map(void)
{
    double row[CALIB_KNOTS];
    calibration_identity(row);
    for (int j = 0; j < CALIB_KNOTS; j++) {
        double p = 1 / (1 + exp(8 - 0.5 * j));
        CHECK_NEAR(calibration_read(row, p, NULL), p < CALIB_MIN ? CALIB_MIN : p, 1e-12);
    }
    double last = 0;
    for (int k = 1; k < 1000; k++) {   /* monotone between the knots, inside the bounds */
        double q = calibration_read(row, k / 1000.0, NULL);
        CHECK(q >= last && q >= CALIB_MIN && q <= 1 - CALIB_MIN);
        last = q;
    }
    const double odd[] = {0, 1, -1, 2, NAN, 1e-300};
    for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
        calib_slot sl;
        double q = calibration_read(row, odd[k], &sl);
        CHECK(q >= CALIB_MIN && q <= 1 - CALIB_MIN && sl.knot >= 0 && sl.knot + 1 < CALIB_KNOTS);
    }
    /* told 0.3 while the prediction comes 9 times in 10: learns about 0.9 */
    uint64_t r = 5;
    for (int k = 0; k < 3000; k++) {
        calib_slot sl;
        calibration_read(row, 0.3, &sl);
        calibration_learn(row, &sl, lcg(&r) % 10 != 0);
    }
    CHECK_MSG(fabs(calibration_read(row, 0.3, NULL) - 0.9) < 0.05, "learned %g", calibration_read(row, 0.3, NULL));
    /* and a prediction that never comes goes to the floor, never below */
    for (int k = 0; k < 20000; k++) {
        calib_slot sl;
        calibration_read(row, 0.6, &sl);
        calibration_learn(row, &sl, 0);
    }
    double q = calibration_read(row, 0.6, NULL);
    CHECK_MSG(q < 0.01 && q >= CALIB_MIN, "after misses %g", q);
    /* a stage: a point keeps its part's mass, learns into the row it read, and nothing moves unread */
    calib_stage st;
    CHECK(calib_stage_init(&st, 3) == 0 && st.rows == 3);
    st.knots[CALIB_KNOTS + 16] = st.knots[CALIB_KNOTS + 17] = 0.9;   /* row 1 far from the identity at p = 0.6 */
    calib_point pt = calib_stage_read(&st, 1, 7, 0.6, 0.5);
    double others = 0.5 * (1 - 0.6) * pt.scale;   /* the part's other tokens, 0.2 of mass before */
    CHECK(pt.active && pt.token == 7 && pt.row == st.knots + CALIB_KNOTS);
    CHECK_NEAR(calib_point_apply(&pt, 7, 0.3) + others, 0.5, 1e-12);
    CHECK(calib_point_apply(&pt, 3, 0.1) == 0.1 * pt.scale);
    double before = st.knots[CALIB_KNOTS + 16];
    calib_point_learn(&pt, 3);   /* another token came: the row read moves down, the others stay */
    double id[CALIB_KNOTS];
    calibration_identity(id);
    CHECK(pt.slot.knot == 16 && st.knots[CALIB_KNOTS + 16] < before && !memcmp(st.knots, id, sizeof id) &&
          !memcmp(st.knots + 2 * CALIB_KNOTS, id, sizeof id));
    calib_point none = calib_point_none(7);
    CHECK(!none.active && calib_point_apply(&none, 7, 0.25) == 0.25);
    calib_point_learn(&none, 7);   /* nothing to learn */
    calib_stage_free(&st);
}

/* On a stream the match model predicts well the calibration stage wins over
 * the linear mixture; without a match model it is absent (the figures are
 * equal) and the mixer has no rows for it. */
static void test_calibration_stage(void)
{
    const int V = 31;
    ngram_memory mem;
    build_memory(&mem, V, 3, 1);
    size_t n = 6000;
    int32_t *x = malloc(sizeof(int32_t) * n);
    double *pm = malloc(sizeof(double) * n);
    repeated_text(x, pm, n, V, 300, 8, 20);   /* a 300-token text read 20 times, 1 token in 20 changed */
    tempo_error e;
    mixer mx, fitted;
    CHECK(mixer_init(&mx, 3, 3, 1, 0.05, &e) == 0);
    mixture_options o = {&mem, V, 3, 1, 4};
    mixture_totals t;
    CHECK(mixture_score(&o, &mx, x, n, pm, NULL, NULL, NULL, &t, &fitted, &e) == 0);
    CHECK_MSG(t.bits < 0.97 * t.bits_linear, "calibrated %g bits, linear %g", t.bits, t.bits_linear);
    /* the long-match row learned that the prediction is right more often than the mixture says */
    double id[CALIB_KNOTS];
    calibration_identity(id);
    const double *long_row = fitted.calib.knots + (size_t)(MATCH_LEN_BINS - 1) * CALIB_KNOTS;
    CHECK(calibration_read(long_row, 0.5, NULL) > calibration_read(id, 0.5, NULL) + 0.1);
    mixer_free(&fitted);
    mixer_free(&mx);
    CHECK(mixer_init(&mx, 3, 3, 0, 0.05, &e) == 0 && mx.calib.rows == 0);
    o.match_length = 0;
    CHECK(mixture_score(&o, &mx, x, n, pm, NULL, NULL, NULL, &t, NULL, &e) == 0);
    CHECK(t.bits == t.bits_linear);
    mixer_free(&mx);
    ngram_memory_free(&mem);
    free(x); free(pm);
}

/* mixture_score asks the corpus memory ahead, in parallel, for the true
 * token and for the token the match model will predict; reading the same
 * stream one step at a time, the memory asked in the stream, gives the same
 * bits to the last one, learning or not (not learning, the match model
 * never predicts: the ahead pass must not either); and the ahead answers
 * were all used (no late lookups). */
static void test_score_matches_stream(void)
{
    const int V = 31;
    ngram_memory mem;
    build_memory(&mem, V, 3, 1);
    size_t n = 5000;
    int32_t *x = malloc(sizeof(int32_t) * n);
    double *pm = malloc(sizeof(double) * n), *ahead = malloc(sizeof(double) * n);
    double *conf = malloc(sizeof(double) * n), *d = malloc(sizeof(double) * V);
    int32_t *tid = calloc(n, sizeof(int32_t));
    repeated_text(x, pm, n, V, 250, 5, 15);
    for (size_t i = 1; i < n; i++) {   /* the stand-in transformer's top token and its probability */
        model_dist(x, i, V, d);
        conf[i] = 0;
        for (int w = 0; w < V; w++) if (d[w] > conf[i]) { conf[i] = d[w]; tid[i] = w; }
    }
    tempo_error e;
    for (int adapt = 1; adapt >= 0; adapt--) {
        mixer mx;
        CHECK(mixer_init(&mx, 3, 3, 1, 0.05, &e) == 0 && mx.calib.rows > 0);
        mixture_options o = {&mem, V, 3, adapt, 4};
        mixture_totals ta, ts;
        CHECK(mixture_score(&o, &mx, x, n, pm, conf, tid, ahead, &ta, NULL, &e) == 0);
        CHECK(ta.late_lookups == 0);
        mixture_stream s;
        CHECK(mixture_stream_init(&s, &o, &mx, &e) == 0);
        memset(&ts, 0, sizeof ts);
        size_t differ = 0;
        for (size_t i = 1; i < n; i++) {
            double p = mixture_stream_step(&s, x, i, pm[i], conf[i], tid[i], NULL, &ts, &e);
            differ += -log2(p) != ahead[i];
        }
        CHECK_MSG(differ == 0, "adapt %d: %zu positions differ", adapt, differ);
        CHECK(ts.bits == ta.bits && ts.bits_linear == ta.bits_linear && ts.late_lookups == n - 1);
        if (adapt)   /* the calibration acted: the test reads the predicted token's answer */
            CHECK(ta.bits != ta.bits_linear);
        mixture_stream_free(&s);
        mixer_free(&mx);
    }
    ngram_memory_free(&mem);
    free(x); free(pm); free(ahead); free(conf); free(d); free(tid);
}

/* The top-token stage: its rows (the transformer's probability of its top
 * token in eight bins x what the match model predicts); on a stream where the
 * stand-in transformer's top token comes far more often than the mixture
 * gives it, the stage wins and its row learns the rate; without top tokens
 * the stage is absent and the linear mixture is untouched either way. */
static void test_top_stage(void)
{
    CHECK(mixture_top_row(0, 3, -1) == 0 && mixture_top_row(NAN, 3, -1) == 0 && mixture_top_row(-1, 3, 3) == 1);
    CHECK(mixture_top_row(0.2, 3, 3) == 1 * 3 + 1 && mixture_top_row(0.2, 3, 4) == 1 * 3 + 2);
    CHECK(mixture_top_row(0.99, 3, -1) == 7 * 3 && mixture_top_row(1.0, 3, 5) == MIX_TOP_ROWS - 1);
    const int V = 31;
    ngram_memory mem;
    build_memory(&mem, V, 3, 1);
    size_t n = 6000;
    int32_t *x = malloc(sizeof(int32_t) * n), *tid = malloc(sizeof(int32_t) * n);
    double *pm = malloc(sizeof(double) * n), *conf = malloc(sizeof(double) * n);
    make_stream(x, n, V, 12);
    uint64_t r = 99;
    for (size_t i = 1; i < n; i++) {   /* top token right 6 times in 10, given 0.2 */
        tid[i] = lcg(&r) % 10 < 6 ? x[i] : (int32_t)((x[i] + 1 + (int32_t)(lcg(&r) % (uint64_t)(V - 1))) % V);
        conf[i] = 0.2;
        pm[i] = tid[i] == x[i] ? 0.2 : 0.8 / (V - 1);
    }
    tempo_error e;
    mixer mx, fitted;
    CHECK(mixer_init(&mx, 3, 3, 1, 0.05, &e) == 0);
    mixture_options o = {&mem, V, 3, 1, 4};
    mixture_totals with, without;
    CHECK(mixture_score(&o, &mx, x, n, pm, conf, tid, NULL, &with, &fitted, &e) == 0);
    CHECK(mixture_score(&o, &mx, x, n, pm, conf, NULL, NULL, &without, NULL, &e) == 0);
    CHECK(with.bits_linear == without.bits_linear);
    CHECK_MSG(with.bits < 0.9 * without.bits, "with the stage %g bits, without %g", with.bits, without.bits);
    double learned = 0;   /* the rows of the 0.2 bin learned that the top token comes more often */
    for (int k = 0; k < 3; k++) {
        double q = calibration_read(fitted.calib_top.knots + (size_t)(3 + k) * CALIB_KNOTS, 0.1, NULL);
        if (q > learned) learned = q;
    }
    CHECK_MSG(learned > 0.3, "the 0.2 rows map 0.1 to %g", learned);
    mixer_free(&fitted);
    mixer_free(&mx);
    ngram_memory_free(&mem);
    free(x); free(tid); free(pm); free(conf);
}

int main(void)
{
    RUN(test_sums_and_consistency);
    RUN(test_causality);
    RUN(test_learning);
    RUN(test_match_model);
    RUN(test_mixer_file);
    RUN(test_mixer_gradient);
    RUN(test_calibration_map);
    RUN(test_calibration_stage);
    RUN(test_score_matches_stream);
    RUN(test_top_stage);
    return test_summary("test_mixture");
}
