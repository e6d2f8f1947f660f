/* kv_cache.c - allocation and bookkeeping of the inference KV cache (see
 * kv_cache.h). The engine writes rows and reads them; nothing here computes. */
#include "infer/kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/gpu.h"

int infer_cache_create(infer_cache *c, const model_config *cfg, int n_slots, int capacity,
                       tempo_error *err)
{
    memset(c, 0, sizeof *c);
    if (capacity == 0)
        capacity = cfg->context;
    if (n_slots < 1 || capacity < 1 || capacity > cfg->context)
        return tempo_usage(err, "kv cache: %d slots of %d positions (model context %d)", n_slots,
                           capacity, cfg->context);
    int D = cfg->d_model / cfg->n_heads;
    c->n_slots = n_slots;
    c->capacity = capacity;
    c->n_layers = cfg->n_layers;
    c->kv_dim = cfg->n_kv_heads * D;
    size_t floats = (size_t)n_slots * c->n_layers * capacity * c->kv_dim;
    size_t bytes = (sizeof(float) * floats + 63) / 64 * 64;
    c->k = aligned_alloc(64, bytes);
    c->v = aligned_alloc(64, bytes);
    c->len = calloc((size_t)n_slots, sizeof(int));
    if (!c->k || !c->v || !c->len) {
        infer_cache_free(c);
        return tempo_fail(err, "kv cache: out of memory (%zu MB)", 2 * bytes >> 20);
    }
    return 0;
}

void infer_cache_free(infer_cache *c)
{
    if (!c)
        return;
    if (c->dev) {
        gpu_free(c->dev, c->dk);
        gpu_free(c->dev, c->dv);
    }
    free(c->k);
    free(c->v);
    free(c->len);
    memset(c, 0, sizeof *c);
}

size_t infer_cache_offset(const infer_cache *c, int slot, int layer)
{
    return ((size_t)slot * c->n_layers + layer) * c->capacity * c->kv_dim;
}

float *infer_cache_k(const infer_cache *c, int slot, int layer)
{
    return c->k + infer_cache_offset(c, slot, layer);
}

float *infer_cache_v(const infer_cache *c, int slot, int layer)
{
    return c->v + infer_cache_offset(c, slot, layer);
}

void infer_cache_reset(infer_cache *c, int slot)
{
    c->len[slot] = 0;
}

void infer_cache_copy(infer_cache *c, int dst, int src)
{
    if (dst == src)
        return;
    size_t n = sizeof(float) * (size_t)c->len[src] * c->kv_dim;
    for (int l = 0; l < c->n_layers; l++) {
        if (c->dev) {
            size_t to = sizeof(float) * infer_cache_offset(c, dst, l);
            size_t from = sizeof(float) * infer_cache_offset(c, src, l);
            gpu_copy_async(c->dev, c->dk + to, c->dk + from, n);
            gpu_copy_async(c->dev, c->dv + to, c->dv + from, n);
        } else {
            memcpy(infer_cache_k(c, dst, l), infer_cache_k(c, src, l), n);
            memcpy(infer_cache_v(c, dst, l), infer_cache_v(c, src, l), n);
        }
    }
    c->len[dst] = c->len[src];
}

int infer_cache_to_device(infer_cache *c, struct gpu *g, tempo_error *err)
{
    if (c->dev == g)
        return 0;
    if (c->dev)
        return tempo_usage(err, "kv cache: already on another GPU");
    size_t bytes = sizeof(float) * (size_t)c->n_slots * c->n_layers * c->capacity * c->kv_dim;
    gpu_ptr k = 0, v = 0;
    if (gpu_alloc(g, &k, bytes, "the kv cache's keys", err) || gpu_alloc(g, &v, bytes, "the kv cache's values", err) ||
        gpu_upload(g, k, c->k, bytes, err) || gpu_upload(g, v, c->v, bytes, err)) {
        gpu_free(g, k);
        gpu_free(g, v);
        return -1;
    }
    c->dev = g;
    c->dk = k;
    c->dv = v;
    return 0;
}
