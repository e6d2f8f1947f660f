/* config.c - model config validation (see config.h; no defaults here), and the
 * FLOP count per token (declared in model.h, it only needs the config). */
#include "model/config.h"
#include "model/model.h"

#include <math.h>

int model_config_head_dim(const model_config *c)
{
    return c->n_heads > 0 ? c->d_model / c->n_heads : 0;
}

int model_config_validate(const model_config *c, tempo_error *err)
{
    const char *w = "model config";
    if (c->vocab_size < 2)
        return tempo_usage(err, "%s: vocab_size %d < 2", w, c->vocab_size);
    if (c->context < 1)
        return tempo_usage(err, "%s: context %d < 1", w, c->context);
    if (c->d_model < 1 || c->n_layers < 1 || c->n_heads < 1 || c->n_kv_heads < 1 || c->d_ff < 1)
        return tempo_usage(err, "%s: d_model %d, n_layers %d, n_heads %d, n_kv_heads %d, d_ff %d "
                           "must all be >= 1", w, c->d_model, c->n_layers, c->n_heads,
                           c->n_kv_heads, c->d_ff);
    if (c->d_model % c->n_heads != 0)
        return tempo_usage(err, "%s: d_model %d not divisible by n_heads %d", w, c->d_model,
                           c->n_heads);
    if (c->n_heads % c->n_kv_heads != 0)
        return tempo_usage(err, "%s: n_heads %d not divisible by n_kv_heads %d", w, c->n_heads,
                           c->n_kv_heads);
    if ((c->d_model / c->n_heads) % 2 != 0)
        return tempo_usage(err, "%s: head dim %d (d_model / n_heads) must be even for RoPE", w,
                           c->d_model / c->n_heads);
    if (c->mlp != MLP_RELU2 && c->mlp != MLP_SWIGLU)
        return tempo_usage(err, "%s: unknown mlp kind %d", w, (int)c->mlp);
    if ((c->qk_norm != 0 && c->qk_norm != 1) || (c->tied_head != 0 && c->tied_head != 1))
        return tempo_usage(err, "%s: qk_norm and tied_head must be 0 or 1", w);
    if (c->bf16_products < MODEL_PRODUCTS_FP32 || c->bf16_products > MODEL_PRODUCTS_AUTO)
        return tempo_usage(err, "%s: bf16_products %d must be 0 (fp32), 1 (bf16) or 2 (auto)", w,
                           c->bf16_products);
    if (!isfinite(c->logit_softcap) || c->logit_softcap < 0)
        return tempo_usage(err, "%s: logit_softcap %g must be 0 (off) or positive", w,
                           (double)c->logit_softcap);
    if (!isfinite(c->rope_theta) || c->rope_theta <= 0)
        return tempo_usage(err, "%s: rope_theta %g must be positive", w, (double)c->rope_theta);
    if (!isfinite(c->norm_eps) || c->norm_eps <= 0)
        return tempo_usage(err, "%s: norm_eps %g must be positive", w, (double)c->norm_eps);
    if (!isfinite(c->init_std) || c->init_std < 0)
        return tempo_usage(err, "%s: init_std %g must be >= 0", w, (double)c->init_std);
    /* Keep every tensor's element count and every row count of a kernel in int range. */
    double big = 2147483647.0;
    if ((double)c->vocab_size * c->d_model > big || (double)c->d_ff * c->d_model > big ||
        (double)c->context * c->n_heads > big)
        return tempo_usage(err, "%s: a tensor of this shape is too large", w);
    return 0;
}

model_layer_params model_config_layer_params(const model_config *c)
{
    double C = c->d_model, D = model_config_head_dim(c), H = c->n_heads;
    double K = c->n_kv_heads > 0 ? c->n_kv_heads : H;
    model_layer_params p;
    p.attn = C * H * D * 2 + C * K * D * 2;   /* wq, wo; wk, wv */
    p.mlp = C * (double)c->d_ff * (c->mlp == MLP_SWIGLU ? 3 : 2);
    p.norms = 2 * C + (c->qk_norm ? 2 * D : 0);
    return p;
}

/* Training FLOPs per token (the count every MFU of tempo uses), forward + backward = 3 x forward:
 *   6 x (non-embedding matmul params + lm head params)
 *   + 6 x n_layers x T x (n_heads x head_dim)
 * The attention term counts the causal half only: our kernel skips masked key
 * tiles, so the QK^T and PV products cost 2 x 2 x (T/2) x d per token per
 * layer forward (the full-matrix convention would be 12 x L x T x d). The lm
 * head counts V x d_model even when tied (the product happens either way);
 * norms, RoPE, softmax and activations are not counted. */
double model_flops_per_token(const model_config *c, int T)
{
    double C = c->d_model, D = model_config_head_dim(c);
    model_layer_params lp = model_config_layer_params(c);
    double matmul = c->n_layers * (lp.attn + lp.mlp) + (double)c->vocab_size * C;
    return 6.0 * matmul + 6.0 * c->n_layers * (double)T * (c->n_heads * D);
}
