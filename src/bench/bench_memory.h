/* bench_memory.h - what the hybrid model's count memory and cache cost per
 * token at inference (docs/hybrid_model.md), beside the transformer's figures
 * of `tempo bench infer`: scoring one known token (as eval and ICL do: the
 * memory's and the cache's probability of it, the mixer, the cache's
 * update) and the whole distribution over the vocabulary (as generation
 * does). The stream is drawn from the memory's own distribution, so its
 * contexts match as real text's do. Figures, never pass/fail. */
#ifndef TEMPO_BENCH_MEMORY_H
#define TEMPO_BENCH_MEMORY_H

#include "core/error.h"
#include "core/json_write.h"
#include "memory/hybrid.h"

typedef struct {
    int memory_order, cache_order;
    double memory_bytes;
    int stream_tokens;
    double score_us_per_token;   /* memory + cache probability of the next token, mixer, cache update */
    double dist_us_per_token;    /* the mixed distribution over all V ids */
} bench_memory_result;

/* Nothing to measure (and 0) when h has neither a memory nor a cache. */
int bench_memory_run(const hybrid_parts *h, int stream_tokens, bench_memory_result *r, tempo_error *err);
/* {"bench":"infer_memory","memory_order","cache_order","memory_bytes",
 *  "stream_tokens","score_us_per_token","dist_us_per_token"} as one value
 * into w. */
void bench_memory_json(jsonw *w, const bench_memory_result *r);

#endif
