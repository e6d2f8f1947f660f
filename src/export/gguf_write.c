/* gguf_write.c - the GGUF writer (see gguf_write.h; format in gguf_format.h).
 * The header (metadata and tensor table) is built in memory, then the tensor
 * data is converted and streamed one tensor at a time. */
#include "export/gguf_write.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/strbuf.h"
#include "export/bpe_text.h"
#include "export/export_map.h"
#include "export/gguf_format.h"
#include "export/tensor_encode.h"

int export_dtype_parse(const char *s)
{
    if (strcmp(s, "f32") == 0) return EXPORT_F32;
    if (strcmp(s, "f16") == 0) return EXPORT_F16;
    if (strcmp(s, "q8_0") == 0) return EXPORT_Q8_0;
    return -1;
}

const char *export_dtype_name(export_dtype d)
{
    return d == EXPORT_F16 ? "f16" : d == EXPORT_Q8_0 ? "q8_0" : "f32";
}

/* ---------------- header encoding ---------------- */

static void put_u32(strbuf *b, uint32_t v) { strbuf_append(b, (const char *)&v, 4); }
static void put_u64(strbuf *b, uint64_t v) { strbuf_append(b, (const char *)&v, 8); }

static void put_str(strbuf *b, const char *s, size_t n)
{
    put_u64(b, n);
    strbuf_append(b, s, n);
}

static void key(strbuf *b, const char *arch, const char *k, uint32_t type)
{
    char full[128];
    int n = arch ? snprintf(full, sizeof full, "%s.%s", arch, k) : snprintf(full, sizeof full, "%s", k);
    put_str(b, full, (size_t)n);
    put_u32(b, type);
}

static void kv_u32(strbuf *b, const char *arch, const char *k, uint32_t v)
{
    key(b, arch, k, GGUF_TYPE_UINT32);
    put_u32(b, v);
}

static void kv_f32(strbuf *b, const char *arch, const char *k, float v)
{
    key(b, arch, k, GGUF_TYPE_FLOAT32);
    strbuf_append(b, (const char *)&v, 4);
}

static void kv_bool(strbuf *b, const char *k, int v)
{
    key(b, NULL, k, GGUF_TYPE_BOOL);
    char c = (char)(v != 0);
    strbuf_append(b, &c, 1);
}

static void kv_str(strbuf *b, const char *k, const char *v)
{
    key(b, NULL, k, GGUF_TYPE_STRING);
    v = v ? v : "unknown";
    put_str(b, v, strlen(v));
}

/* tokens, token types, merges; returns the number of keys written or -1 */
static int put_tokenizer(strbuf *b, const tokenizer *tok, tempo_error *err)
{
    int N = tok_n_regular(tok), V = tok_vocab_size(tok);
    kv_str(b, "tokenizer.ggml.model", "gpt2");
    /* tempo's pre-split rule is its own (docs/export.md); "gpt2" is the nearest llama.cpp knows */
    kv_str(b, "tokenizer.ggml.pre", "gpt-2");
    key(b, NULL, "tokenizer.ggml.tokens", GGUF_TYPE_ARRAY);
    put_u32(b, GGUF_TYPE_STRING);
    put_u64(b, (uint64_t)V);
    strbuf text = {0};
    for (int id = 0; id < V; id++) {
        text.len = 0;
        if (id == N)
            strbuf_puts(&text, TOK_SEP_NAME);
        else {
            const uint8_t *bytes;
            size_t n = tok_token_bytes(tok, id, &bytes);
            bpe_text_append(&text, bytes, n);
        }
        put_str(b, text.data, text.len);
    }
    key(b, NULL, "tokenizer.ggml.token_type", GGUF_TYPE_ARRAY);
    put_u32(b, GGUF_TYPE_INT32);
    put_u64(b, (uint64_t)V);
    for (int id = 0; id < V; id++)
        put_u32(b, id == N ? GGUF_TOKEN_CONTROL : GGUF_TOKEN_NORMAL);
    key(b, NULL, "tokenizer.ggml.merges", GGUF_TYPE_ARRAY);
    put_u32(b, GGUF_TYPE_STRING);
    put_u64(b, (uint64_t)(N - 256));
    int rc = 0;
    for (int id = 256; id < N && rc == 0; id++) {
        text.len = 0;
        rc = bpe_merge_text(tok, id, &text, err);
        if (rc == 0)
            put_str(b, text.data, text.len);
    }
    int oom = text.oom;
    strbuf_free(&text);
    if (rc)
        return -1;
    if (oom)
        return tempo_fail(err, "export: out of memory");
    kv_u32(b, NULL, "tokenizer.ggml.bos_token_id", (uint32_t)N);
    kv_u32(b, NULL, "tokenizer.ggml.eos_token_id", (uint32_t)N);
    kv_bool(b, "tokenizer.ggml.add_bos_token", 1);
    kv_bool(b, "tokenizer.ggml.add_eos_token", 0);
    return 9;
}

/* ---------------- tensors ---------------- */

typedef struct {
    char name[96];
    const model_tensor *t;
    uint32_t type;
    uint64_t ne[2];
    int n_dims;
    uint64_t bytes, offset;
    int permute_heads; /* > 0: rows of wq / wk go to llama.cpp's RoPE order over this many heads */
} out_tensor;

static uint64_t align_up(uint64_t v) { return (v + GGUF_ALIGNMENT - 1) / GGUF_ALIGNMENT * GGUF_ALIGNMENT; }

static int plan_tensors(model *m, export_arch arch, export_dtype dt, out_tensor *out, tempo_error *err)
{
    const model_config *c = model_get_config(m);
    int n = model_num_tensors(m);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const model_tensor *t = model_tensor_at(m, i);
        out_tensor *o = &out[i];
        o->t = t;
        if (export_gguf_name(t->name, o->name, sizeof o->name))
            return tempo_fail(err, "export: tensor %s has no GGUF name", t->name);
        o->n_dims = t->ndim;
        o->ne[0] = (uint64_t)(t->ndim == 2 ? t->shape[1] : t->shape[0]);
        o->ne[1] = t->ndim == 2 ? (uint64_t)t->shape[0] : 1;
        o->type = GGML_TYPE_F32;
        if (t->ndim == 2 && dt == EXPORT_F16)
            o->type = GGML_TYPE_F16;
        if (t->ndim == 2 && dt == EXPORT_Q8_0)
            o->type = o->ne[0] % Q8_0_BLOCK == 0 ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
        size_t count = t->numel;
        o->bytes = o->type == GGML_TYPE_F32 ? 4 * count
                 : o->type == GGML_TYPE_F16 ? 2 * count : count / Q8_0_BLOCK * Q8_0_BLOCK_BYTES;
        o->offset = off;
        off = align_up(off + o->bytes);
        const char *dot = strrchr(t->name, '.');
        o->permute_heads = 0;
        if (export_gguf_rope_interleaved(arch) && dot && strcmp(dot, ".wq") == 0)
            o->permute_heads = c->n_heads;
        if (export_gguf_rope_interleaved(arch) && dot && strcmp(dot, ".wk") == 0)
            o->permute_heads = c->n_kv_heads;
    }
    return 0;
}

static void put_tensor_table(strbuf *b, const out_tensor *ts, int n)
{
    for (int i = 0; i < n; i++) {
        put_str(b, ts[i].name, strlen(ts[i].name));
        put_u32(b, (uint32_t)ts[i].n_dims);
        for (int d = 0; d < ts[i].n_dims; d++)
            put_u64(b, ts[i].ne[d]);
        put_u32(b, ts[i].type);
        put_u64(b, ts[i].offset);
    }
}

/* Converts one tensor (into scratch: floats, bytes) and writes it plus padding. */
static int write_tensor(atomic_file *af, const out_tensor *o, const float *params, int D, float *fscratch,
                        uint8_t *bscratch, tempo_error *err)
{
    const model_tensor *t = o->t;
    const float *src = params + t->offset;
    if (o->permute_heads > 0) {
        export_permute_rope_rows(fscratch, src, o->permute_heads, D, t->shape[1], 1);
        src = fscratch;
    }
    const void *data = src;
    if (o->type == GGML_TYPE_F16) {
        uint16_t *h = (uint16_t *)bscratch;
        for (size_t i = 0; i < t->numel; i++)
            h[i] = f32_to_f16(src[i]);
        data = h;
    } else if (o->type == GGML_TYPE_Q8_0) {
        q8_0_encode(bscratch, src, t->numel);
        data = bscratch;
    }
    static const char zeros[GGUF_ALIGNMENT];
    if (atomic_write(af, data, o->bytes, err))
        return -1;
    return atomic_write(af, zeros, align_up(o->bytes) - o->bytes, err);
}

static void put_hparams(strbuf *b, const model_config *c, const char *an, export_dtype dt)
{
    int D = model_config_head_dim(c);
    kv_str(b, "general.architecture", an);
    kv_str(b, "general.name", "tempo");
    kv_u32(b, NULL, "general.file_type", dt == EXPORT_F16 ? GGUF_FILE_MOSTLY_F16
                                         : dt == EXPORT_Q8_0 ? GGUF_FILE_MOSTLY_Q8_0 : GGUF_FILE_ALL_F32);
    kv_u32(b, NULL, "general.quantization_version", 2);
    kv_u32(b, an, "context_length", (uint32_t)c->context);
    kv_u32(b, an, "embedding_length", (uint32_t)c->d_model);
    kv_u32(b, an, "block_count", (uint32_t)c->n_layers);
    kv_u32(b, an, "feed_forward_length", (uint32_t)c->d_ff);
    kv_u32(b, an, "attention.head_count", (uint32_t)c->n_heads);
    kv_u32(b, an, "attention.head_count_kv", (uint32_t)c->n_kv_heads);
    kv_u32(b, an, "attention.key_length", (uint32_t)D);
    kv_u32(b, an, "attention.value_length", (uint32_t)D);
    kv_u32(b, an, "rope.dimension_count", (uint32_t)D);
    kv_f32(b, an, "rope.freq_base", c->rope_theta);
    kv_f32(b, an, "attention.layer_norm_rms_epsilon", c->norm_eps);
    kv_u32(b, an, "vocab_size", (uint32_t)c->vocab_size);
}
#define N_HPARAM_KEYS 16

int gguf_write_model(const char *path, model *m, const tokenizer *tok, export_dtype dtype,
                     const export_provenance *prov, tempo_error *err)
{
    const model_config *c = model_get_config(m);
    export_arch arch;
    if (export_arch_of(c, &arch, err))
        return -1;
    if (tok_vocab_size(tok) != c->vocab_size)
        return tempo_fail(err, "export: tokenizer has %d ids but the model vocabulary is %d",
                          tok_vocab_size(tok), c->vocab_size);
    int nt = model_num_tensors(m), rc = -1;
    out_tensor *ts = calloc((size_t)nt, sizeof *ts);
    strbuf kv = {0}, head = {0};
    float *fscratch = NULL;
    uint8_t *bscratch = NULL;
    if (!ts)
        return tempo_fail(err, "%s: out of memory", path);
    if (plan_tensors(m, arch, dtype, ts, err))
        goto done;
    put_hparams(&kv, c, export_arch_name(arch), dtype);
    int n_kv = N_HPARAM_KEYS, k = put_tokenizer(&kv, tok, err);
    if (k < 0)
        goto done;
    n_kv += k;
    kv_str(&kv, "tempo.config", prov ? prov->config_json : NULL);
    kv_str(&kv, "tempo.data_id", prov ? prov->data_id : NULL);
    kv_str(&kv, "tempo.commit", prov ? prov->commit : NULL);
    kv_str(&kv, "tempo.contents", "transformer only (a count memory or mixer of the run is not exported)");
    n_kv += 4;
    strbuf_append(&head, GGUF_MAGIC, 4);
    put_u32(&head, GGUF_VERSION);
    put_u64(&head, (uint64_t)nt);
    put_u64(&head, (uint64_t)n_kv);
    strbuf_append(&head, kv.data, kv.len);
    put_tensor_table(&head, ts, nt);
    while (head.len % GGUF_ALIGNMENT)
        strbuf_append(&head, "", 1);
    size_t max_numel = 0;
    for (int i = 0; i < nt; i++)
        max_numel = ts[i].t->numel > max_numel ? ts[i].t->numel : max_numel;
    fscratch = malloc(sizeof(float) * max_numel);
    bscratch = malloc(sizeof(uint16_t) * max_numel);
    if (kv.oom || head.oom || !fscratch || !bscratch) {
        tempo_fail(err, "%s: out of memory", path);
        goto done;
    }
    atomic_file af;
    if (atomic_open(&af, path, err))
        goto done;
    int wrc = atomic_write(&af, head.data, head.len, err);
    for (int i = 0; i < nt && wrc == 0; i++)
        wrc = write_tensor(&af, &ts[i], model_params(m), model_config_head_dim(c), fscratch, bscratch, err);
    if (wrc) {
        atomic_abort(&af);
        goto done;
    }
    rc = atomic_commit(&af, err);
done:
    free(ts);
    free(fscratch);
    free(bscratch);
    strbuf_free(&kv);
    strbuf_free(&head);
    return rc;
}
