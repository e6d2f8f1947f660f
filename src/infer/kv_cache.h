/* kv_cache.h - the key/value cache of the inference engine: for each of
 * n_slots sequences ("slots"), the rotated keys and the values of every layer
 * at every position filled so far, so that a new token attends to the past
 * without recomputing it. Nothing here computes attention (engine.h does).
 *
 * Layout, per tensor (K and V separately): [slot][layer][position][Hkv*D],
 * i.e. one slot's keys of one layer are `capacity` rows of Hkv*D floats, the
 * row layout the q/k/v projections produce (attention.h reads them with
 * kv_stride = Hkv*D). Each slot has a length: positions [0, len) are valid.
 * Memory: 2 * n_slots * n_layers * capacity * Hkv*D floats, allocated once. */
#ifndef TEMPO_INFER_KV_CACHE_H
#define TEMPO_INFER_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "model/config.h"

struct gpu;

typedef struct {
    int n_slots, capacity;  /* sequences; positions per sequence (<= the model's context) */
    int n_layers, kv_dim;   /* layers; Hkv * D floats per position */
    float *k, *v;           /* [n_slots][n_layers][capacity][kv_dim] */
    int *len;               /* [n_slots] positions filled */
    /* On a GPU (infer_cache_to_device): the same layout in device memory,
     * which the engine then reads and writes instead of k and v. */
    struct gpu *dev;
    uint64_t dk, dv;
} infer_cache;

/* Allocate a cache for n_slots sequences of up to capacity positions of the
 * model cfg (capacity 0 = cfg->context; more than cfg->context is refused).
 * All lengths start at 0. Returns 0, or -1 with err set (bad sizes: code 2;
 * out of memory: code 1). */
int infer_cache_create(infer_cache *c, const model_config *cfg, int n_slots, int capacity,
                       tempo_error *err);
void infer_cache_free(infer_cache *c); /* zeroes c; a zeroed c is fine */

/* Where one slot's rows of one layer start in k and v (and in dk and dv on
 * a GPU): a float offset. */
size_t infer_cache_offset(const infer_cache *c, int slot, int layer);
/* Keys / values of one slot and layer: capacity rows of kv_dim floats. */
float *infer_cache_k(const infer_cache *c, int slot, int layer);
float *infer_cache_v(const infer_cache *c, int slot, int layer);

/* Forget a slot's contents (len = 0). */
void infer_cache_reset(infer_cache *c, int slot);

/* Move the cache to GPU g (the engine of a model on g does this at its first
 * step): device memory of the same layout, holding what the host arrays
 * held; from then on the engine and infer_cache_copy use it, and the host
 * arrays are stale. A cache on g already: nothing; on another GPU: an error.
 * Returns 0, or -1 with err set. */
int infer_cache_to_device(infer_cache *c, struct gpu *g, tempo_error *err);

/* Make slot dst hold exactly what src holds (its first len[src] positions of
 * every layer are copied; dst == src does nothing). Used to branch several
 * continuations off one shared, already computed prefix. */
void infer_cache_copy(infer_cache *c, int dst, int src);

#endif
