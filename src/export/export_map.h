/* export_map.h - how a tempo model maps onto an architecture that llama.cpp
 * and Hugging Face transformers already implement (docs/export.md has the
 * table and every detail checked): which architecture a config is (or why it
 * is none), the tensor names on each side, and the row order of the query and
 * key projections that llama.cpp's "llama" RoPE needs. Nothing here touches
 * files; the writers (gguf_write.h, hf_write.h) and the reader (gguf_read.h)
 * use it. */
#ifndef TEMPO_EXPORT_MAP_H
#define TEMPO_EXPORT_MAP_H

#include <stddef.h>

#include "core/error.h"
#include "model/config.h"

typedef enum { EXPORT_ARCH_LLAMA = 0, EXPORT_ARCH_QWEN3 = 1 } export_arch;

/* The architecture of cfg: SwiGLU without QK-norm is llama, SwiGLU with
 * QK-norm is qwen3; no logit soft-cap in either. Anything else returns -1
 * with one line naming the keys to change, e.g. "export: mlp=relu2 has no
 * llama.cpp architecture; train with --set mlp=swiglu" (code 1). */
int export_arch_of(const model_config *cfg, export_arch *arch, tempo_error *err);

/* "llama" / "qwen3" (GGUF general.architecture, HF model_type). */
const char *export_arch_name(export_arch a);
/* "LlamaForCausalLM" / "Qwen3ForCausalLM". */
const char *export_arch_hf_class(export_arch a);
/* The architecture named by a GGUF general.architecture, or -1. */
int export_arch_from_name(const char *name);

/* The GGUF ("blk.3.attn_q.weight") or Hugging Face
 * ("model.layers.3.self_attn.q_proj.weight") name of the tempo tensor
 * tempo_name ("layers.3.wq"); 0, or -1 for a name tempo does not have. */
int export_gguf_name(const char *tempo_name, char *out, size_t n);
int export_hf_name(const char *tempo_name, char *out, size_t n);

/* 1 when the GGUF of arch stores the query and key projections in llama.cpp's
 * interleaved RoPE order (llama: rotates pairs (2i, 2i+1)) rather than
 * tempo's half-split order (pairs (i, i + D/2), as qwen3 / NeoX and HF). */
int export_gguf_rope_interleaved(export_arch a);

/* A projection [n_heads * D, cols] (row-major) with its rows reordered within
 * every head: to_interleaved = 1 moves row (j * D/2 + i) to row (2 i + j)
 * (j = 0, 1), tempo -> llama.cpp's llama; 0 is the inverse. dst != src. */
void export_permute_rope_rows(float *dst, const float *src, int n_heads, int D, int cols,
                              int to_interleaved);

#endif
