/* export_map.c - tempo config -> llama / qwen3, tensor names, RoPE row order
 * (see export_map.h). */
#include "export/export_map.h"

#include <stdio.h>
#include <string.h>

int export_arch_of(const model_config *cfg, export_arch *arch, tempo_error *err)
{
    if (cfg->mlp != MLP_SWIGLU && cfg->logit_softcap != 0)
        return tempo_fail(err, "export: mlp=relu2 and logit_softcap=%g have no llama.cpp architecture; train "
                               "with --set mlp=swiglu --set logit_softcap=0", (double)cfg->logit_softcap);
    if (cfg->mlp != MLP_SWIGLU)
        return tempo_fail(err, "export: mlp=relu2 has no llama.cpp architecture; train with --set mlp=swiglu");
    if (cfg->logit_softcap != 0)
        return tempo_fail(err, "export: logit_softcap=%g has no llama.cpp architecture (llama, qwen3); train "
                               "with --set logit_softcap=0", (double)cfg->logit_softcap);
    *arch = cfg->qk_norm ? EXPORT_ARCH_QWEN3 : EXPORT_ARCH_LLAMA;
    return 0;
}

const char *export_arch_name(export_arch a) { return a == EXPORT_ARCH_QWEN3 ? "qwen3" : "llama"; }

const char *export_arch_hf_class(export_arch a)
{
    return a == EXPORT_ARCH_QWEN3 ? "Qwen3ForCausalLM" : "LlamaForCausalLM";
}

int export_arch_from_name(const char *name)
{
    if (strcmp(name, "llama") == 0)
        return EXPORT_ARCH_LLAMA;
    if (strcmp(name, "qwen3") == 0)
        return EXPORT_ARCH_QWEN3;
    return -1;
}

int export_gguf_rope_interleaved(export_arch a) { return a == EXPORT_ARCH_LLAMA; }

/* tempo per-layer suffix -> GGUF, HF */
static const char *const layer_map[][3] = {
    {"attn_norm", "attn_norm", "input_layernorm"},
    {"wq", "attn_q", "self_attn.q_proj"},
    {"wk", "attn_k", "self_attn.k_proj"},
    {"wv", "attn_v", "self_attn.v_proj"},
    {"wo", "attn_output", "self_attn.o_proj"},
    {"q_norm", "attn_q_norm", "self_attn.q_norm"},
    {"k_norm", "attn_k_norm", "self_attn.k_norm"},
    {"mlp_norm", "ffn_norm", "post_attention_layernorm"},
    {"w_gate", "ffn_gate", "mlp.gate_proj"},
    {"w_up", "ffn_up", "mlp.up_proj"},
    {"w_down", "ffn_down", "mlp.down_proj"},
};

/* tempo global tensor -> GGUF, HF */
static const char *const global_map[][3] = {
    {"tok_emb", "token_embd.weight", "model.embed_tokens.weight"},
    {"final_norm", "output_norm.weight", "model.norm.weight"},
    {"head", "output.weight", "lm_head.weight"},
};

static int map_name(const char *tempo_name, char *out, size_t n, int side)
{
    for (size_t i = 0; i < sizeof global_map / sizeof global_map[0]; i++)
        if (strcmp(tempo_name, global_map[i][0]) == 0)
            return snprintf(out, n, "%s", global_map[i][side]) < (int)n ? 0 : -1;
    int layer, used = 0;
    if (sscanf(tempo_name, "layers.%d.%n", &layer, &used) != 1 || used == 0 || layer < 0)
        return -1;
    const char *suffix = tempo_name + used;
    for (size_t i = 0; i < sizeof layer_map / sizeof layer_map[0]; i++) {
        if (strcmp(suffix, layer_map[i][0]) != 0)
            continue;
        int w = side == 1 ? snprintf(out, n, "blk.%d.%s.weight", layer, layer_map[i][1])
                          : snprintf(out, n, "model.layers.%d.%s.weight", layer, layer_map[i][2]);
        return w > 0 && (size_t)w < n ? 0 : -1;
    }
    return -1;
}

int export_gguf_name(const char *tempo_name, char *out, size_t n) { return map_name(tempo_name, out, n, 1); }
int export_hf_name(const char *tempo_name, char *out, size_t n) { return map_name(tempo_name, out, n, 2); }

void export_permute_rope_rows(float *dst, const float *src, int n_heads, int D, int cols, int to_interleaved)
{
    int half = D / 2;
    for (int h = 0; h < n_heads; h++)
        for (int j = 0; j < 2; j++)
            for (int i = 0; i < half; i++) {
                size_t split = (size_t)h * D + (size_t)j * half + i; /* tempo, HF, NeoX */
                size_t inter = (size_t)h * D + 2 * (size_t)i + j;    /* llama.cpp llama */
                size_t from = to_interleaved ? split : inter, to = to_interleaved ? inter : split;
                memcpy(dst + to * cols, src + from * cols, sizeof(float) * (size_t)cols);
            }
}
