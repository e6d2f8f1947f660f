/* hf_write.c - the Hugging Face folder writer (see hf_write.h): config.json,
 * tokenizer.json and tokenizer_config.json through core/json_write.h (one
 * line each), the weights through core/safetensors.h. */
#include "export/hf_write.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json_write.h"
#include "core/safetensors.h"
#include "core/strbuf.h"
#include "export/bpe_text.h"
#include "export/export_map.h"
#include "export/tensor_encode.h"

/* Rules 1-6 of data/pretokenize.h, in order. Bytes >= 0x80 are letters there;
 * on decoded text every non-ASCII character is. */
const char *const HF_PRESPLIT_REGEX =
    "'(?i:re|ve|ll|[stmd])"
    "| ?[A-Za-z\\x{80}-\\x{10FFFF}]+"
    "| ?[0-9]{1,3}"
    "| ?[^A-Za-z0-9 \\t\\x0B\\f\\r\\n\\x{80}-\\x{10FFFF}]+"
    "|[ \\t\\x0B\\f]+(?=[ ][^ \\t\\x0B\\f\\r\\n])"
    "|[ \\t\\x0B\\f]+"
    "|[\\r\\n]+";

/* A float config value as the shortest decimal that reads back as the same
 * float (1e-05, not 9.999999747378752e-06), whole numbers as 10000.0 (a
 * float to Python, as Hugging Face's own files write them). */
static void field_float(jsonw *w, const char *k, float v)
{
    char t[32];
    if (v == floorf(v) && fabsf(v) < 1e9f)
        snprintf(t, sizeof t, "%.1f", (double)v);
    else
        for (int digits = 1; digits <= 9; digits++) {
            snprintf(t, sizeof t, "%.*g", digits, (double)v);
            if (strtof(t, NULL) == v)
                break;
        }
    jsonw_field_raw(w, k, t);
}

/* The document done: checked, and ended with a newline as a text file is. */
static int finish_file(jsonw *w, const char *name, tempo_error *err)
{
    if (jsonw_finish(w, err))
        return tempo_error_prefix(err, name);
    strbuf_puts(w->out, "\n");
    return 0;
}

static int config_json(strbuf *b, const model_config *c, export_arch arch, export_dtype dt, int sep,
                       tempo_error *err)
{
    jsonw w;
    jsonw_init(&w, b);
    jsonw_object_begin(&w);
    jsonw_key(&w, "architectures");
    jsonw_array_begin(&w);
    jsonw_string(&w, export_arch_hf_class(arch));
    jsonw_array_end(&w);
    jsonw_field_string(&w, "model_type", export_arch_name(arch));
    jsonw_field_int(&w, "vocab_size", c->vocab_size);
    jsonw_field_int(&w, "hidden_size", c->d_model);
    jsonw_field_int(&w, "intermediate_size", c->d_ff);
    jsonw_field_int(&w, "num_hidden_layers", c->n_layers);
    jsonw_field_int(&w, "num_attention_heads", c->n_heads);
    jsonw_field_int(&w, "num_key_value_heads", c->n_kv_heads);
    jsonw_field_int(&w, "head_dim", model_config_head_dim(c));
    jsonw_field_int(&w, "max_position_embeddings", c->context);
    field_float(&w, "rms_norm_eps", c->norm_eps);
    field_float(&w, "rope_theta", c->rope_theta);
    jsonw_field_null(&w, "rope_scaling");
    jsonw_field_string(&w, "hidden_act", "silu");
    jsonw_field_bool(&w, "attention_bias", 0);
    field_float(&w, "attention_dropout", 0.0f);
    if (arch == EXPORT_ARCH_LLAMA) {
        jsonw_field_bool(&w, "mlp_bias", 0);
        jsonw_field_int(&w, "pretraining_tp", 1);
    } else {
        jsonw_field_bool(&w, "use_sliding_window", 0);
        jsonw_field_null(&w, "sliding_window");
        jsonw_field_int(&w, "max_window_layers", c->n_layers);
    }
    jsonw_field_bool(&w, "tie_word_embeddings", c->tied_head);
    jsonw_field_int(&w, "bos_token_id", sep);
    jsonw_field_int(&w, "eos_token_id", sep);
    jsonw_field_string(&w, "torch_dtype", dt == EXPORT_F16 ? "float16" : "float32");
    field_float(&w, "initializer_range", c->init_std);
    jsonw_field_bool(&w, "use_cache", 1);
    jsonw_object_end(&w);
    return finish_file(&w, "config.json", err);
}

/* {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false} */
static void byte_level(jsonw *w)
{
    jsonw_object_begin(w);
    jsonw_field_string(w, "type", "ByteLevel");
    jsonw_field_bool(w, "add_prefix_space", 0);
    jsonw_field_bool(w, "trim_offsets", 0);
    jsonw_field_bool(w, "use_regex", 0);
    jsonw_object_end(w);
}

/* The sep token as the one added token, and the pre-splitting rules: the
 * regex of data/pretokenize.h, then bytes to characters. */
static void tokenizer_head(jsonw *w, int sep_id)
{
    jsonw_field_string(w, "version", "1.0");
    jsonw_field_null(w, "truncation");
    jsonw_field_null(w, "padding");
    jsonw_key(w, "added_tokens");
    jsonw_array_begin(w);
    jsonw_object_begin(w);
    jsonw_field_int(w, "id", sep_id);
    jsonw_field_string(w, "content", TOK_SEP_NAME);
    jsonw_field_bool(w, "single_word", 0);
    jsonw_field_bool(w, "lstrip", 0);
    jsonw_field_bool(w, "rstrip", 0);
    jsonw_field_bool(w, "normalized", 0);
    jsonw_field_bool(w, "special", 1);
    jsonw_object_end(w);
    jsonw_array_end(w);
    jsonw_field_null(w, "normalizer");
    jsonw_key(w, "pre_tokenizer");
    jsonw_object_begin(w);
    jsonw_field_string(w, "type", "Sequence");
    jsonw_key(w, "pretokenizers");
    jsonw_array_begin(w);
    jsonw_object_begin(w);
    jsonw_field_string(w, "type", "Split");
    jsonw_key(w, "pattern");
    jsonw_object_begin(w);
    jsonw_field_string(w, "Regex", HF_PRESPLIT_REGEX);
    jsonw_object_end(w);
    jsonw_field_string(w, "behavior", "Isolated");
    jsonw_field_bool(w, "invert", 0);
    jsonw_object_end(w);
    byte_level(w);
    jsonw_array_end(w);
    jsonw_object_end(w);
    jsonw_field_null(w, "post_processor");
    jsonw_key(w, "decoder");
    byte_level(w);
}

/* The BPE model: every regular token's text with its id, then the merges. */
static int tokenizer_model(jsonw *w, const tokenizer *tok, tempo_error *err)
{
    int N = tok_n_regular(tok);
    jsonw_object_begin(w);
    jsonw_field_string(w, "type", "BPE");
    jsonw_field_null(w, "dropout");
    jsonw_field_null(w, "unk_token");
    jsonw_field_null(w, "continuing_subword_prefix");
    jsonw_field_null(w, "end_of_word_suffix");
    jsonw_field_bool(w, "fuse_unk", 0);
    jsonw_field_bool(w, "byte_fallback", 0);
    jsonw_field_bool(w, "ignore_merges", 0);
    jsonw_key(w, "vocab");
    jsonw_object_begin(w);
    strbuf text = {0};
    for (int id = 0; id < N; id++) {
        const uint8_t *bytes;
        size_t n = tok_token_bytes(tok, id, &bytes);
        text.len = 0;
        bpe_text_append(&text, bytes, n);
        /* the byte-level text maps every byte to a printable character: no NUL */
        jsonw_key(w, text.data ? text.data : "");
        jsonw_int(w, id);
    }
    jsonw_object_end(w);
    jsonw_key(w, "merges");
    jsonw_array_begin(w);
    int rc = 0;
    for (int id = 256; id < N && rc == 0; id++) {
        text.len = 0;
        rc = bpe_merge_text(tok, id, &text, err);
        jsonw_string_n(w, text.data ? text.data : "", text.len);
    }
    jsonw_array_end(w);
    jsonw_object_end(w);
    strbuf_free(&text);
    return rc;
}

static int tokenizer_json(strbuf *b, const tokenizer *tok, tempo_error *err)
{
    jsonw w;
    jsonw_init(&w, b);
    jsonw_object_begin(&w);
    tokenizer_head(&w, tok_n_regular(tok));
    jsonw_key(&w, "model");
    if (tokenizer_model(&w, tok, err))
        return -1;
    jsonw_object_end(&w);
    return finish_file(&w, "tokenizer.json", err);
}

static int tokenizer_config_json(strbuf *b, const model_config *c, tempo_error *err)
{
    jsonw w;
    jsonw_init(&w, b);
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "tokenizer_class", "PreTrainedTokenizerFast");
    jsonw_field_string(&w, "bos_token", TOK_SEP_NAME);
    jsonw_field_string(&w, "eos_token", TOK_SEP_NAME);
    jsonw_field_bool(&w, "add_bos_token", 0);
    jsonw_field_bool(&w, "add_eos_token", 0);
    jsonw_field_int(&w, "model_max_length", c->context);
    jsonw_field_bool(&w, "clean_up_tokenization_spaces", 0);
    jsonw_object_end(&w);
    return finish_file(&w, "tokenizer_config.json", err);
}

static int write_weights(const char *path, model *m, export_dtype dt, const export_provenance *prov,
                         tempo_error *err)
{
    int nt = model_num_tensors(m);
    st_write_tensor *ts = calloc((size_t)nt, sizeof *ts);
    char (*names)[96] = calloc((size_t)nt, sizeof *names);
    const uint16_t **f16 = calloc((size_t)nt, sizeof *f16);
    uint16_t *half = dt == EXPORT_F16 ? malloc(sizeof(uint16_t) * model_num_params(m)) : NULL;
    int rc = -1;
    if (!ts || !names || !f16 || (dt == EXPORT_F16 && !half)) {
        tempo_fail(err, "%s: out of memory", path);
        goto done;
    }
    const float *params = model_params(m);
    for (int i = 0; i < nt; i++) {
        const model_tensor *t = model_tensor_at(m, i);
        if (export_hf_name(t->name, names[i], sizeof names[i])) {
            tempo_fail(err, "export: tensor %s has no Hugging Face name", t->name);
            goto done;
        }
        ts[i].name = names[i];
        ts[i].data = params + t->offset;
        ts[i].ndim = t->ndim;
        for (int d = 0; d < t->ndim; d++)
            ts[i].shape[d] = t->shape[d];
        if (half) {
            for (size_t j = 0; j < t->numel; j++)
                half[t->offset + j] = f32_to_f16(params[t->offset + j]);
            f16[i] = half + t->offset;
        }
    }
    st_meta meta[4] = {{"format", "pt"},
                       {"tempo.config", prov && prov->config_json ? prov->config_json : "unknown"},
                       {"tempo.data_id", prov && prov->data_id ? prov->data_id : "unknown"},
                       {"tempo.commit", prov && prov->commit ? prov->commit : "unknown"}};
    rc = safetensors_write_f16(path, ts, f16, nt, meta, 4, err);
done:
    free(ts);
    free(names);
    free((void *)f16);
    free(half);
    return rc;
}

static int write_text(const char *dir, const char *name, const strbuf *b, tempo_error *err)
{
    char p[1200];
    if (b->oom)
        return tempo_fail(err, "%s: out of memory", name);
    return file_write_atomic(path_join(p, sizeof p, dir, name), b->data, b->len, err);
}

static void remove_tree(const char *dir)
{
    const char *names[] = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"};
    char p[1200];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(path_join(p, sizeof p, dir, names[i]));
    rmdir(dir);
}

int hf_write_model(const char *out_arg, model *m, const tokenizer *tok, export_dtype dtype,
                   const export_provenance *prov, tempo_error *err)
{
    char out_dir[1024]; /* "first-hf/" names the folder first-hf */
    if (snprintf(out_dir, sizeof out_dir, "%s", out_arg) >= (int)sizeof out_dir)
        return tempo_fail(err, "%s: path too long", out_arg);
    for (size_t n = strlen(out_dir); n > 1 && out_dir[n - 1] == '/'; n--)
        out_dir[n - 1] = '\0';
    const model_config *c = model_get_config(m);
    export_arch arch;
    if (export_arch_of(c, &arch, err))
        return -1;
    if (dtype != EXPORT_F32 && dtype != EXPORT_F16)
        return tempo_usage(err, "export: the Hugging Face folder takes f32 or f16");
    if (path_exists(out_dir))
        return tempo_fail(err, "%s: already exists (tempo export does not overwrite a folder)", out_dir);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out_dir, (long)getpid());
    if (mkdir(tmp, 0777) != 0)
        return tempo_fail(err, "%s: cannot create the folder: %s", out_dir, strerror(errno));
    strbuf cfg = {0}, tj = {0}, tc = {0};
    char p[1200];
    int rc = config_json(&cfg, c, arch, dtype, tok_sep_id(tok), err);
    if (!rc)
        rc = tokenizer_config_json(&tc, c, err);
    if (!rc)
        rc = tokenizer_json(&tj, tok, err);
    if (!rc)
        rc = write_weights(path_join(p, sizeof p, tmp, "model.safetensors"), m, dtype, prov, err);
    if (!rc)
        rc = write_text(tmp, "config.json", &cfg, err);
    if (!rc)
        rc = write_text(tmp, "tokenizer.json", &tj, err);
    if (!rc)
        rc = write_text(tmp, "tokenizer_config.json", &tc, err);
    if (!rc && rename(tmp, out_dir) != 0)
        rc = tempo_fail(err, "%s: cannot rename into place: %s", out_dir, strerror(errno));
    if (rc)
        remove_tree(tmp);
    strbuf_free(&cfg);
    strbuf_free(&tj);
    strbuf_free(&tc);
    return rc;
}
