/* hf_write.c - the Hugging Face folder writer (see hf_write.h). */
#include "export/hf_write.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
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

static void json_kv_str(strbuf *b, const char *k, const char *v, int comma)
{
    strbuf_printf(b, "%s\n  \"%s\": ", comma ? "," : "", k);
    strbuf_json_string(b, v, strlen(v));
}

static void json_kv_num(strbuf *b, const char *k, double v)
{
    strbuf_printf(b, ",\n  \"%s\": ", k);
    strbuf_json_number(b, v);
}

/* A float config value as the shortest decimal that reads back as the same
 * float (1e-05, not 9.999999747378752e-06). */
static void json_kv_float(strbuf *b, const char *k, float v)
{
    char t[32];
    if (v == floorf(v) && fabsf(v) < 1e9f)
        snprintf(t, sizeof t, "%.1f", (double)v); /* whole numbers as 10000.0 */
    else
        for (int digits = 1; digits <= 9; digits++) {
            snprintf(t, sizeof t, "%.*g", digits, (double)v);
            if (strtof(t, NULL) == v)
                break;
        }
    strbuf_printf(b, ",\n  \"%s\": %s", k, t);
}

static void config_json(strbuf *b, const model_config *c, export_arch arch, export_dtype dt, int sep)
{
    strbuf_printf(b, "{\n  \"architectures\": [\"%s\"]", export_arch_hf_class(arch));
    json_kv_str(b, "model_type", export_arch_name(arch), 1);
    json_kv_num(b, "vocab_size", c->vocab_size);
    json_kv_num(b, "hidden_size", c->d_model);
    json_kv_num(b, "intermediate_size", c->d_ff);
    json_kv_num(b, "num_hidden_layers", c->n_layers);
    json_kv_num(b, "num_attention_heads", c->n_heads);
    json_kv_num(b, "num_key_value_heads", c->n_kv_heads);
    json_kv_num(b, "head_dim", model_config_head_dim(c));
    json_kv_num(b, "max_position_embeddings", c->context);
    json_kv_float(b, "rms_norm_eps", c->norm_eps);
    json_kv_float(b, "rope_theta", c->rope_theta);
    strbuf_puts(b, ",\n  \"rope_scaling\": null");
    json_kv_str(b, "hidden_act", "silu", 1);
    strbuf_puts(b, ",\n  \"attention_bias\": false,\n  \"attention_dropout\": 0.0");
    if (arch == EXPORT_ARCH_LLAMA)
        strbuf_puts(b, ",\n  \"mlp_bias\": false,\n  \"pretraining_tp\": 1");
    else
        strbuf_printf(b, ",\n  \"use_sliding_window\": false,\n  \"sliding_window\": null,\n"
                         "  \"max_window_layers\": %d", c->n_layers);
    strbuf_printf(b, ",\n  \"tie_word_embeddings\": %s", c->tied_head ? "true" : "false");
    json_kv_num(b, "bos_token_id", sep);
    json_kv_num(b, "eos_token_id", sep);
    json_kv_str(b, "torch_dtype", dt == EXPORT_F16 ? "float16" : "float32", 1);
    json_kv_float(b, "initializer_range", c->init_std);
    strbuf_puts(b, ",\n  \"use_cache\": true\n}\n");
}

static int tokenizer_json(strbuf *b, const tokenizer *tok, tempo_error *err)
{
    int N = tok_n_regular(tok);
    strbuf_printf(b, "{\n\"version\": \"1.0\",\n\"truncation\": null,\n\"padding\": null,\n"
                     "\"added_tokens\": [{\"id\": %d, \"content\": \"%s\", \"single_word\": false, "
                     "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}],\n"
                     "\"normalizer\": null,\n"
                     "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                     "\"pattern\": {\"Regex\": ", N, TOK_SEP_NAME);
    strbuf_json_string(b, HF_PRESPLIT_REGEX, strlen(HF_PRESPLIT_REGEX));
    strbuf_puts(b, "}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", "
                   "\"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false}]},\n"
                   "\"post_processor\": null,\n"
                   "\"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, "
                   "\"use_regex\": false},\n"
                   "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
                   "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, \"fuse_unk\": false, "
                   "\"byte_fallback\": false, \"ignore_merges\": false,\n\"vocab\": {");
    strbuf text = {0};
    for (int id = 0; id < N; id++) {
        const uint8_t *bytes;
        size_t n = tok_token_bytes(tok, id, &bytes);
        text.len = 0;
        bpe_text_append(&text, bytes, n);
        strbuf_puts(b, id ? ",\n" : "\n");
        strbuf_json_string(b, text.data, text.len);
        strbuf_printf(b, ": %d", id);
    }
    strbuf_puts(b, "},\n\"merges\": [");
    int rc = 0;
    for (int id = 256; id < N && rc == 0; id++) {
        text.len = 0;
        rc = bpe_merge_text(tok, id, &text, err);
        strbuf_puts(b, id > 256 ? ",\n" : "\n");
        strbuf_json_string(b, text.data ? text.data : "", text.len);
    }
    strbuf_puts(b, "]}\n}\n");
    strbuf_free(&text);
    return rc;
}

static void tokenizer_config_json(strbuf *b, const model_config *c)
{
    strbuf_printf(b, "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n  \"bos_token\": \"%s\",\n"
                     "  \"eos_token\": \"%s\",\n  \"add_bos_token\": false,\n  \"add_eos_token\": false,\n"
                     "  \"model_max_length\": %d,\n  \"clean_up_tokenization_spaces\": false\n}\n",
                  TOK_SEP_NAME, TOK_SEP_NAME, c->context);
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
    config_json(&cfg, c, arch, dtype, tok_sep_id(tok));
    tokenizer_config_json(&tc, c);
    int rc = tokenizer_json(&tj, tok, err);
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
