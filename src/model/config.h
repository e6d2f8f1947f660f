/* config.h - the shape of a tempo model (a decoder-only transformer) and its
 * validation. Nothing here allocates; the model itself is model.h. No
 * defaults either: the one default configuration is run_config_defaults
 * (src/run/run_config.h, the cpu-default preset). */
#ifndef TEMPO_MODEL_CONFIG_H
#define TEMPO_MODEL_CONFIG_H

#include "core/error.h"

typedef enum { MLP_RELU2 = 0, MLP_SWIGLU = 1 } mlp_kind;

typedef struct {
    int vocab_size;      /* total ids incl. separator */
    int context;         /* T max */
    int d_model, n_layers, n_heads, n_kv_heads, d_ff;
    mlp_kind mlp;
    int qk_norm;         /* bool: RMSNorm over the head dim on q and k (learnable gains), before RoPE */
    int tied_head;       /* bool: head weight = token embedding */
    float logit_softcap; /* 0 = off; else logits = c*tanh(z/c) */
    float rope_theta;    /* e.g. 10000 */
    float norm_eps;      /* e.g. 1e-5 */
    float init_std;      /* e.g. 0.02; wo and w_down use init_std / sqrt(2 * n_layers) */
    int bf16_products;   /* MODEL_PRODUCTS_*: the blocks' and head's matrix products (and in
                            training Muon's) on bf16 operands (gemm.h's bf16 mode), attention's
                            tile products too (attention_forward_bf16), where the CPU has
                            AVX-512 BF16; fp32 elsewhere */
} model_config;

/* bf16_products' values. Every one but FP32 runs bf16 where the CPU can and fp32
 * elsewhere; BF16 asks for it, and training refuses it where the CPU cannot; AUTO
 * takes what the CPU has, without a word. */
enum { MODEL_PRODUCTS_FP32 = 0, MODEL_PRODUCTS_BF16 = 1, MODEL_PRODUCTS_AUTO = 2 };

/* Checks every field: vocab >= 2, context >= 1, positive sizes, d_model
 * divisible by n_heads, n_kv_heads dividing n_heads, an even head dim (RoPE),
 * a known mlp kind, bools 0/1, finite non-negative soft-cap and init_std,
 * positive rope_theta and norm_eps. Returns 0, or -1 with a message such as
 * "model config: d_model 100 not divisible by n_heads 3" (code 2). */
int model_config_validate(const model_config *c, tempo_error *err);

/* d_model / n_heads. */
int model_config_head_dim(const model_config *c);

/* One layer's parameters (floats) by group: the attention's four
 * projections, the MLP's matrices (three with SwiGLU, else two) and the
 * norms' gains (two RMSNorms, and the q/k norms with qk_norm). n_kv_heads 0
 * counts as n_heads. The one count the FLOP estimate, the throughput model
 * and the communication model share. */
typedef struct {
    double attn, mlp, norms;
} model_layer_params;
model_layer_params model_config_layer_params(const model_config *c);

#endif
