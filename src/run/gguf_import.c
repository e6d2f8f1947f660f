/* gguf_import.c - GGUF -> tempo model (see gguf_import.h). */
#include "run/gguf_import.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/strbuf.h"
#include "export/bpe_text.h"
#include "export/gguf_format.h"
#include "export/tensor_encode.h"

static int arch_int(const gguf_file *g, const char *an, const char *k, int required, int64_t dflt, int64_t *out,
                    tempo_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", an, k);
    if (!gguf_find(g, key)) {
        if (required)
            return tempo_fail(err, "%s: metadata %s missing", g->what, key);
        *out = dflt;
        return 0;
    }
    if (gguf_get_int(g, key, out) || *out < 1 || *out > (1 << 24))
        return tempo_fail(err, "%s: metadata %s is not an integer in 1..2^24", g->what, key);
    return 0;
}

static int arch_float(const gguf_file *g, const char *an, const char *k, double dflt, double *out,
                      tempo_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", an, k);
    if (!gguf_find(g, key)) {
        *out = dflt;
        return 0;
    }
    if (gguf_get_float(g, key, out) || !(*out > 0) || !isfinite(*out) || *out > 1e30)
        return tempo_fail(err, "%s: metadata %s is not a positive number", g->what, key);
    return 0;
}

int gguf_import_config(const gguf_file *g, run_config *cfg, export_arch *arch, tempo_error *err)
{
    char an[64], s[64];
    if (gguf_get_str(g, "general.architecture", an, sizeof an))
        return tempo_fail(err, "%s: no general.architecture", g->what);
    int a = export_arch_from_name(an);
    if (a < 0)
        return tempo_fail(err, "%s: architecture '%s' is not one tempo reads (llama, qwen3)", g->what, an);
    *arch = (export_arch)a;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", an);
    if (gguf_get_str(g, key, s, sizeof s) == 0 && strcmp(s, "none") != 0)
        return tempo_fail(err, "%s: RoPE scaling '%s' is not supported", g->what, s);
    int64_t C, L, F, H, Hkv, T, kl, vl, rd;
    double theta, eps;
    if (arch_int(g, an, "embedding_length", 1, 0, &C, err) || arch_int(g, an, "block_count", 1, 0, &L, err) ||
        arch_int(g, an, "feed_forward_length", 1, 0, &F, err) ||
        arch_int(g, an, "attention.head_count", 1, 0, &H, err) ||
        arch_int(g, an, "attention.head_count_kv", 0, H, &Hkv, err) ||
        arch_int(g, an, "context_length", 1, 0, &T, err) ||
        arch_float(g, an, "rope.freq_base", 10000.0, &theta, err) ||
        arch_float(g, an, "attention.layer_norm_rms_epsilon", 1e-5, &eps, err))
        return -1;
    if (C % H)
        return tempo_fail(err, "%s: embedding_length %lld is not a multiple of head_count %lld", g->what,
                          (long long)C, (long long)H);
    int64_t D = C / H;
    if (arch_int(g, an, "attention.key_length", 0, D, &kl, err) ||
        arch_int(g, an, "attention.value_length", 0, D, &vl, err) ||
        arch_int(g, an, "rope.dimension_count", 0, D, &rd, err))
        return -1;
    if (kl != D || vl != D || rd != D)
        return tempo_fail(err, "%s: head size %lld / %lld with RoPE over %lld dimensions; tempo needs all three "
                               "equal to embedding_length / head_count = %lld", g->what, (long long)kl,
                          (long long)vl, (long long)rd, (long long)D);
    const gguf_tensor *emb = gguf_find_tensor(g, "token_embd.weight");
    if (!emb || emb->n_dims != 2 || emb->ne[0] != (uint64_t)C || emb->ne[1] > (1u << 20))
        return tempo_fail(err, "%s: tensor token_embd.weight missing or misshapen", g->what);
    run_config_defaults(cfg);
    model_config *m = &cfg->model;
    m->vocab_size = (int)emb->ne[1];
    m->context = (int)(T < GGUF_IMPORT_MAX_CONTEXT ? T : GGUF_IMPORT_MAX_CONTEXT);
    m->d_model = (int)C;
    m->n_layers = (int)L;
    m->n_heads = (int)H;
    m->n_kv_heads = (int)Hkv;
    m->d_ff = (int)F;
    m->mlp = MLP_SWIGLU;
    m->qk_norm = *arch == EXPORT_ARCH_QWEN3;
    m->tied_head = gguf_find_tensor(g, "output.weight") == NULL;
    m->logit_softcap = 0;
    m->rope_theta = (float)theta;
    m->norm_eps = (float)eps;
    m->bf16_products = MODEL_PRODUCTS_FP32;   /* read in F32, as llama.cpp reads the file */
    cfg->memory_order = cfg->cache_order = cfg->match_length = 0;
    cfg->adapt_lr = 0;   /* a GGUF holds the transformer only, read as llama.cpp reads it: frozen */
    snprintf(cfg->preset, sizeof cfg->preset, "gguf");
    tempo_error e;
    if (run_config_finish(cfg, &e))
        return tempo_fail(err, "%s: %s", g->what, e.msg);
    return 0;
}

int gguf_import_tokenizer(const gguf_file *g, int vocab_size, tokenizer **tok, tempo_error *err)
{
    char s[32];
    *tok = NULL;
    if (gguf_get_str(g, "tokenizer.ggml.model", s, sizeof s) || strcmp(s, "gpt2") != 0)
        return tempo_fail(err, "%s: tokenizer is not byte-level BPE (tokenizer.ggml.model \"gpt2\")", g->what);
    const gguf_kv *tk = gguf_find(g, "tokenizer.ggml.tokens");
    if (!tk || tk->type != GGUF_TYPE_ARRAY || tk->arr_type != GGUF_TYPE_STRING || tk->arr_n != (uint64_t)vocab_size)
        return tempo_fail(err, "%s: tokenizer.ggml.tokens missing or not %d strings", g->what, vocab_size);
    const gguf_kv *tt = gguf_find(g, "tokenizer.ggml.token_type");
    if (tt && (tt->type != GGUF_TYPE_ARRAY || tt->arr_type != GGUF_TYPE_INT32 || tt->arr_n != tk->arr_n))
        return tempo_fail(err, "%s: tokenizer.ggml.token_type is not one int32 per token", g->what);
    int n = vocab_size - 1, rc = 0;
    if (n < TOK_MIN_VOCAB)
        return tempo_fail(err, "%s: %d tokens; tempo's layout needs the 256 bytes and a separator", g->what,
                          vocab_size);
    for (int i = 0; tt && i < vocab_size; i++) {
        int32_t type;
        memcpy(&type, tt->arr + 4 * (size_t)i, 4);
        if ((type == GGUF_TOKEN_CONTROL) != (i == n))
            return tempo_fail(err, "%s: tokenizer is not tempo's layout (token %d is%s a control token; only "
                                   "the last one, the separator, may be)", g->what, i, i == n ? " not" : "");
    }
    uint8_t **bytes = calloc((size_t)n, sizeof *bytes);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    if (!bytes || !lens)
        rc = tempo_fail(err, "%s: out of memory", g->what);
    const uint8_t *p = tk->arr;
    for (int i = 0; !rc && i < n; i++) {
        size_t len;
        const char *text = gguf_next_str(&p, &len);
        bytes[i] = malloc(len ? len : 1);
        long k = bytes[i] ? bpe_text_to_bytes(text, len, bytes[i]) : -1;
        if (k <= 0)
            rc = tempo_fail(err, "%s: tokenizer token %d is not byte-level BPE text", g->what, i);
        else
            lens[i] = (size_t)k;
    }
    if (!rc && tok_from_tokens(tok, (const uint8_t *const *)bytes, lens, n, g->what, err))
        rc = -1;
    for (int i = 0; bytes && i < n; i++)
        free(bytes[i]);
    free(bytes);
    free(lens);
    /* tempo encodes by rank; a merge list must say the same */
    const gguf_kv *mg = gguf_find(g, "tokenizer.ggml.merges");
    if (!rc && mg && (mg->type != GGUF_TYPE_ARRAY || mg->arr_type != GGUF_TYPE_STRING || mg->arr_n != (uint64_t)(n - 256)))
        rc = tempo_fail(err, "%s: tokenizer.ggml.merges is not %d strings", g->what, n - 256);
    strbuf want = {0};
    p = mg ? mg->arr : NULL;
    for (int i = 0; !rc && mg && i < n - 256; i++) {
        size_t len;
        const char *text = gguf_next_str(&p, &len);
        want.len = 0;
        tempo_error e;
        if (bpe_merge_text(*tok, 256 + i, &want, &e) || want.len != len || memcmp(want.data, text, len))
            rc = tempo_fail(err, "%s: tokenizer merge %d does not make token %d (tempo's tokens are in merge order)",
                            g->what, i, 256 + i);
    }
    strbuf_free(&want);
    if (rc && *tok) {
        tok_free(*tok);
        *tok = NULL;
    }
    return rc;
}

/* One tensor into dst (numel floats), decoded from its type. */
static void decode(float *dst, const gguf_tensor *t)
{
    if (t->type == GGML_TYPE_F32)
        memcpy(dst, t->data, 4 * t->n_elements);
    else if (t->type == GGML_TYPE_F16)
        for (uint64_t i = 0; i < t->n_elements; i++) {
            uint16_t h;
            memcpy(&h, t->data + 2 * i, 2);
            dst[i] = f16_to_f32(h);
        }
    else
        q8_0_decode(dst, t->data, t->n_elements);
}

int gguf_import_weights(const gguf_file *g, export_arch arch, model *m, tempo_error *err)
{
    const model_config *c = model_get_config(m);
    int D = model_config_head_dim(c), used = 0;
    float *params = model_params(m), *scratch = NULL;
    for (int i = 0; i < model_num_tensors(m); i++) {
        const model_tensor *t = model_tensor_at(m, i);
        char name[96];
        if (export_gguf_name(t->name, name, sizeof name))
            return tempo_fail(err, "%s: tensor %s has no GGUF name", g->what, t->name);
        const gguf_tensor *gt = gguf_find_tensor(g, name);
        if (!gt) {
            free(scratch);
            return tempo_fail(err, "%s: tensor %s missing", g->what, name);
        }
        uint64_t rows = t->ndim == 2 ? (uint64_t)t->shape[0] : 1, cols = t->ndim == 2 ? (uint64_t)t->shape[1]
                                                                                      : (uint64_t)t->shape[0];
        if (gt->n_dims != (uint32_t)t->ndim || gt->ne[0] != cols || (t->ndim == 2 && gt->ne[1] != rows)) {
            free(scratch);
            return tempo_fail(err, "%s: tensor %s has the wrong shape for the model config", g->what, name);
        }
        used++;
        const char *dot = strrchr(t->name, '.');
        int heads = !export_gguf_rope_interleaved(arch) || !dot ? 0
                  : strcmp(dot, ".wq") == 0 ? c->n_heads : strcmp(dot, ".wk") == 0 ? c->n_kv_heads : 0;
        if (heads) {
            float *s = realloc(scratch, sizeof(float) * t->numel);
            if (!s) {
                free(scratch);
                return tempo_fail(err, "%s: out of memory", g->what);
            }
            scratch = s;
            decode(scratch, gt);
            export_permute_rope_rows(params + t->offset, scratch, heads, D, t->shape[1], 0);
        } else
            decode(params + t->offset, gt);
    }
    free(scratch);
    if ((size_t)used != g->n_tensors)
        for (size_t i = 0; i < g->n_tensors; i++) {
            int found = 0;
            for (int k = 0; k < model_num_tensors(m) && !found; k++) {
                char name[96];
                found = export_gguf_name(model_tensor_at(m, k)->name, name, sizeof name) == 0 &&
                        strcmp(name, g->tensors[i].name) == 0;
            }
            if (!found)
                return tempo_fail(err, "%s: tensor %s is not part of tempo's %s", g->what, g->tensors[i].name,
                                  export_arch_name(arch));
        }
    for (size_t i = 0; i < model_num_params(m); i++)
        if (!isfinite(params[i]))
            return tempo_fail(err, "%s: weights hold non-finite values", g->what);
    return 0;
}

int gguf_is_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char magic[4];
    int yes = f && fread(magic, 1, 4, f) == 4 && memcmp(magic, GGUF_MAGIC, 4) == 0;
    if (f)
        fclose(f);
    return yes;
}

int gguf_import_model(const char *path, int max_batch, run_config *cfg, model **m, tokenizer **tok,
                      tempo_error *err)
{
    *m = NULL;
    *tok = NULL;
    char *buf;
    size_t len;
    if (file_read_all(path, &buf, &len, 0, err))
        return -1;
    gguf_file g;
    export_arch arch;
    int rc = gguf_parse(&g, (const uint8_t *)buf, len, path, err);
    if (rc) {
        free(buf);
        return -1;
    }
    rc = gguf_import_config(&g, cfg, &arch, err);
    if (!rc)
        rc = gguf_import_tokenizer(&g, cfg->model.vocab_size, tok, err);
    if (!rc && model_create(m, &cfg->model, max_batch, err))
        rc = -1;
    if (!rc)
        rc = gguf_import_weights(&g, arch, *m, err);
    gguf_free(&g);
    free(buf);
    if (rc) {
        model_free(*m);
        tok_free(*tok);
        *m = NULL;
        *tok = NULL;
    }
    return rc;
}
