/* test_export.c - the export module's pieces: F16 and Q8_0 conversions, the
 * RoPE row order, the byte-level BPE text form and merge list, the
 * architecture mapping and its refusals, and GGUF write -> parse -> import
 * round trips (llama and qwen3; F32 bit for bit, F16 and Q8_0 to their
 * precision) with the importer's named refusals (another architecture, an
 * unsupported tensor type, a truncated tensor). The comparison with the real
 * llama.cpp is tests/e2e/export_llama.sh. */
#include "test.h"

#include <unistd.h>

#include "core/fileio.h"
#include "core/strbuf.h"
#include "export/bpe_text.h"
#include "export/export_map.h"
#include "export/gguf_format.h"
#include "run/gguf_import.h"
#include "export/gguf_write.h"
#include "export/tensor_encode.h"

static const char *tmp_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "build/test_tmp_%d_%s", (int)getpid(), name);
    return buf;
}

static void test_f16(void)
{
    CHECK(f32_to_f16(1.0f) == 0x3C00);
    CHECK(f32_to_f16(-2.0f) == 0xC000);
    CHECK(f32_to_f16(65504.0f) == 0x7BFF);
    CHECK(f32_to_f16(65520.0f) == 0x7C00);          /* rounds up to Inf */
    CHECK(f32_to_f16(5.9604645e-8f) == 0x0001);     /* the smallest subnormal */
    CHECK(f32_to_f16(2.0e-8f) == 0x0000);           /* below half of it */
    CHECK(f32_to_f16(1.0f + 1.0f / 2048) == 0x3C00); /* a tie rounds to even */
    CHECK(f32_to_f16(1.0f + 3.0f / 2048) == 0x3C02);
    CHECK((f32_to_f16(NAN) & 0x7C00) == 0x7C00 && (f32_to_f16(NAN) & 0x3FF) != 0);
    int bad = 0;
    for (unsigned h = 0; h < 65536; h++) { /* every non-NaN half survives the round trip */
        float f = f16_to_f32((uint16_t)h);
        if (f == f && f32_to_f16(f) != h)
            bad++;
    }
    CHECK_MSG(bad == 0, "%d halves changed", bad);
}

static void test_q8_0(void)
{
    float x[64], y[64];
    for (int i = 0; i < 64; i++)
        x[i] = sinf(0.7f * (float)i) * (i < 32 ? 1.0f : 1e-3f);
    uint8_t q[2 * Q8_0_BLOCK_BYTES];
    q8_0_encode(q, x, 64);
    q8_0_decode(y, q, 64);
    for (int b = 0; b < 2; b++) {
        float amax = 0;
        for (int i = 0; i < 32; i++)
            amax = fmaxf(amax, fabsf(x[32 * b + i]));
        /* half a step, plus 127 times the F16 rounding of the scale (ggml quantizes with the unrounded 1/d) */
        float d = amax / 127, dh = f16_to_f32(f32_to_f16(d));
        for (int i = 0; i < 32; i++)
            CHECK_NEAR(y[32 * b + i], x[32 * b + i], d / 2 + 127 * fabsf(dh - d) + 1e-9);
    }
    float z[32] = {0};
    q8_0_encode(q, z, 32);
    q8_0_decode(y, q, 32);
    CHECK(y[0] == 0 && y[31] == 0);
}

static void test_rope_rows(void)
{
    enum { H = 2, D = 6, COLS = 3 };
    float src[H * D * COLS], mid[H * D * COLS], back[H * D * COLS];
    for (int i = 0; i < H * D * COLS; i++)
        src[i] = (float)i;
    export_permute_rope_rows(mid, src, H, D, COLS, 1);
    /* head 1, pair i = 2: half-split rows 6 + 2 and 6 + 5 become rows 6 + 4 and 6 + 5 */
    CHECK(mid[(6 + 4) * COLS] == src[(6 + 2) * COLS] && mid[(6 + 5) * COLS] == src[(6 + 5) * COLS]);
    CHECK(mid[1 * COLS] == src[3 * COLS] && mid[2 * COLS + 1] == src[1 * COLS + 1]);
    export_permute_rope_rows(back, mid, H, D, COLS, 0);
    CHECK(memcmp(back, src, sizeof src) == 0);
}

static void test_bpe_text(void)
{
    strbuf s = {0};
    uint8_t b[2] = {' ', '\n'};
    bpe_text_append(&s, b, 2);
    CHECK(s.len == 4 && memcmp(s.data, "\xC4\xA0\xC4\x8A", 4) == 0); /* "ĠĊ" */
    s.len = 0;
    uint8_t all[256], back[256 * 2];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    bpe_text_append(&s, all, 256);
    CHECK(bpe_text_to_bytes(s.data, s.len, back) == 256 && memcmp(all, back, 256) == 0);
    CHECK(bpe_text_to_bytes("\xC4\xA0", 2, back) == 1 && back[0] == ' ');
    CHECK(bpe_text_to_bytes("\xC2\xA0", 2, back) == -1); /* U+00A0 is not the image of a byte */
    CHECK(bpe_text_to_bytes("\xE2\x82\xAC", 3, back) == -1);
    strbuf_free(&s);
}

/* 256 bytes, then "ab", "abc", "  ", "c " (ids 256..259). */
static tokenizer *small_tokenizer(void)
{
    uint8_t bytes[256];
    const uint8_t *toks[260];
    size_t lens[260];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (uint8_t)i;
        toks[i] = &bytes[i];
        lens[i] = 1;
    }
    const char *extra[4] = {"ab", "abc", "  ", "c "};
    for (int i = 0; i < 4; i++) {
        toks[256 + i] = (const uint8_t *)extra[i];
        lens[256 + i] = strlen(extra[i]);
    }
    tokenizer *t;
    tempo_error err;
    CHECK(tok_from_tokens(&t, toks, lens, 260, "small", &err) == 0);
    return t;
}

static void test_merges(void)
{
    tokenizer *t = small_tokenizer();
    int32_t l, r;
    CHECK(tok_merge_parts(t, 256, &l, &r) == 0 && l == 'a' && r == 'b');
    CHECK(tok_merge_parts(t, 257, &l, &r) == 0 && l == 256 && r == 'c');
    CHECK(tok_merge_parts(t, 'a', &l, &r) == -1);
    strbuf s = {0};
    tempo_error err;
    CHECK(bpe_merge_text(t, 258, &s, &err) == 0 && strcmp(s.data, "\xC4\xA0 \xC4\xA0") == 0);
    strbuf_free(&s);
    tok_free(t);
}

/* A model config with every field written out (the model layer has no defaults). */
static model_config plain_config(int V)
{
    model_config c = {
        .vocab_size = V, .context = 256, .d_model = 256, .n_layers = 6, .n_heads = 4,
        .n_kv_heads = 4, .d_ff = 1024, .mlp = MLP_RELU2, .tied_head = 1,
        .rope_theta = 10000.0f, .norm_eps = 1e-5f, .init_std = 0.02f,
    };
    return c;
}

static void test_arch(void)
{
    model_config c = plain_config(300);
    export_arch a;
    tempo_error err;
    c.mlp = MLP_RELU2;
    CHECK(export_arch_of(&c, &a, &err) == -1);
    CHECK(strcmp(err.msg, "export: mlp=relu2 has no llama.cpp architecture; train with --set mlp=swiglu") == 0);
    c.mlp = MLP_SWIGLU;
    c.logit_softcap = 15;
    CHECK(export_arch_of(&c, &a, &err) == -1 && strstr(err.msg, "logit_softcap=15") != NULL);
    c.logit_softcap = 0;
    CHECK(export_arch_of(&c, &a, &err) == 0 && a == EXPORT_ARCH_LLAMA);
    c.qk_norm = 1;
    CHECK(export_arch_of(&c, &a, &err) == 0 && a == EXPORT_ARCH_QWEN3);
    char n[96];
    CHECK(export_gguf_name("layers.12.w_gate", n, sizeof n) == 0 && strcmp(n, "blk.12.ffn_gate.weight") == 0);
    CHECK(export_hf_name("layers.3.k_norm", n, sizeof n) == 0 &&
          strcmp(n, "model.layers.3.self_attn.k_norm.weight") == 0);
    CHECK(export_gguf_name("tok_emb", n, sizeof n) == 0 && strcmp(n, "token_embd.weight") == 0);
    CHECK(export_gguf_name("layers.1.w_side", n, sizeof n) == -1);
}

static model *small_model(int qk_norm, int tied)
{
    model_config c = plain_config(261);
    c.d_model = 64;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.d_ff = 96;
    c.context = 16;
    c.mlp = MLP_SWIGLU;
    c.qk_norm = qk_norm;
    c.tied_head = tied;
    c.rope_theta = 5000;
    c.norm_eps = 1e-6f;
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, 1, &err) == 0);
    model_init(m, 7);
    float *p = model_params(m); /* norms away from 1, so a swapped norm shows */
    for (size_t i = 0; i < model_num_params(m); i++)
        p[i] += 0.01f * (float)(i % 7);
    return m;
}

static void round_trip(int qk_norm, int tied, export_dtype dt)
{
    char path[256];
    tmp_path(path, sizeof path, "rt.gguf");
    model *m = small_model(qk_norm, tied);
    tokenizer *t = small_tokenizer();
    tempo_error err;
    export_provenance prov = {"{\"d_model\":64}", "data-1", "abc123"};
    CHECK_MSG(gguf_write_model(path, m, t, dt, &prov, &err) == 0, "%s", err.msg);
    run_config cfg;
    model *m2;
    tokenizer *t2;
    CHECK_MSG(gguf_import_model(path, 1, &cfg, &m2, &t2, &err) == 0, "%s", err.msg);
    if (m2) {
        const model_config *a = model_get_config(m), *b = model_get_config(m2);
        CHECK(a->vocab_size == b->vocab_size && a->d_model == b->d_model && a->n_layers == b->n_layers &&
              a->n_heads == b->n_heads && a->n_kv_heads == b->n_kv_heads && a->d_ff == b->d_ff &&
              a->context == b->context && a->qk_norm == b->qk_norm && a->tied_head == b->tied_head &&
              a->mlp == b->mlp && a->rope_theta == b->rope_theta && a->norm_eps == b->norm_eps);
        CHECK(model_num_params(m) == model_num_params(m2));
        const float *p = model_params(m), *q = model_params(m2);
        double worst = 0, pmax = 0; /* F16: relative error; Q8_0: absolute, against the largest weight */
        for (size_t i = 0; i < model_num_params(m); i++)
            pmax = fmax(pmax, fabs(p[i]));
        for (size_t i = 0; i < model_num_params(m); i++)
            worst = fmax(worst, fabs((double)p[i] - q[i]) / (dt == EXPORT_Q8_0 ? pmax : fabs(p[i]) + 1e-4));
        double tol = dt == EXPORT_F32 ? 0 : dt == EXPORT_F16 ? 1e-3 : 0.6 / 127;
        CHECK_MSG(worst <= tol, "worst relative error %g (%s)", worst, export_dtype_name(dt));
        CHECK(tok_n_regular(t2) == 260);
        const uint8_t *b1, *b2;
        size_t n1 = tok_token_bytes(t, 259, &b1), n2 = tok_token_bytes(t2, 259, &b2);
        CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0);
        CHECK(cfg.memory_order == 0 && cfg.cache_order == 0);
        model_free(m2);
        tok_free(t2);
    }
    char *buf;
    size_t len;
    gguf_file g;
    CHECK(file_read_all(path, &buf, &len, 0, &err) == 0);
    CHECK(gguf_parse(&g, (const uint8_t *)buf, len, path, &err) == 0);
    char s[64];
    CHECK(gguf_get_str(&g, "tempo.commit", s, sizeof s) == 0 && strcmp(s, "abc123") == 0);
    CHECK(gguf_get_str(&g, "tempo.data_id", s, sizeof s) == 0 && strcmp(s, "data-1") == 0);
    CHECK(gguf_get_str(&g, "general.architecture", s, sizeof s) == 0 &&
          strcmp(s, qk_norm ? "qwen3" : "llama") == 0);
    CHECK((gguf_find_tensor(&g, "output.weight") != NULL) == !tied);
    gguf_free(&g);
    free(buf);
    unlink(path);
    model_free(m);
    tok_free(t);
}

static void test_round_trips(void)
{
    round_trip(0, 0, EXPORT_F32);
    round_trip(1, 1, EXPORT_F32);
    round_trip(0, 1, EXPORT_F16);
    round_trip(1, 0, EXPORT_Q8_0);
}

/* Writes a llama GGUF, lets edit() change its bytes, and returns the import's error. */
static int import_edited(void (*edit)(char *buf, size_t *len), tempo_error *err)
{
    char path[256];
    tmp_path(path, sizeof path, "bad.gguf");
    model *m = small_model(0, 0);
    tokenizer *t = small_tokenizer();
    char *buf;
    size_t len;
    CHECK(gguf_write_model(path, m, t, EXPORT_F32, NULL, err) == 0);
    CHECK(file_read_all(path, &buf, &len, 0, err) == 0);
    edit(buf, &len);
    CHECK(file_write_atomic(path, buf, len, err) == 0);
    run_config cfg;
    model *m2;
    tokenizer *t2;
    int rc = gguf_import_model(path, 1, &cfg, &m2, &t2, err);
    CHECK(rc != 0 || m2 != NULL);
    if (rc == 0) {
        model_free(m2);
        tok_free(t2);
    }
    free(buf);
    unlink(path);
    model_free(m);
    tok_free(t);
    return rc;
}

static char *find(char *buf, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(buf + i, s, n) == 0)
            return buf + i;
    return NULL;
}

static void edit_arch(char *buf, size_t *len)
{
    char *p = find(buf, *len, "general.architecture");
    CHECK(p != NULL);
    if (p)
        memcpy(p + strlen("general.architecture") + 4 + 8, "mamba", 5); /* "llama", same length */
}

static void edit_type(char *buf, size_t *len)
{
    /* the tensor table entry of output_norm.weight: name, n_dims 1, ne[0], type */
    char *p = find(buf, *len, "output_norm.weight");
    CHECK(p != NULL);
    if (p) {
        uint32_t q4k = 12;
        memcpy(p + strlen("output_norm.weight") + 4 + 8, &q4k, 4);
    }
}

static void edit_truncate(char *buf, size_t *len) { (void)buf; *len -= 100; }

static void edit_nothing(char *buf, size_t *len) { (void)buf; (void)len; }

static void test_import_refusals(void)
{
    tempo_error err;
    CHECK(import_edited(edit_nothing, &err) == 0);
    CHECK(import_edited(edit_arch, &err) == -1);
    CHECK_MSG(strstr(err.msg, "bad.gguf: architecture 'mamba' is not one tempo reads (llama, qwen3)"), "%s", err.msg);
    CHECK(import_edited(edit_type, &err) == -1);
    CHECK_MSG(strstr(err.msg, "tensor output_norm.weight has type q4_K, which tempo does not read"), "%s", err.msg);
    CHECK(import_edited(edit_truncate, &err) == -1);
    CHECK_MSG(strstr(err.msg, "bad.gguf: truncated (tensor output.weight ends at byte"), "%s", err.msg);
    gguf_file g;
    CHECK(gguf_parse(&g, (const uint8_t *)"GGUF", 4, "x.gguf", &err) == -1 &&
          strcmp(err.msg, "x.gguf: truncated (in the header)") == 0);
    CHECK(gguf_parse(&g, (const uint8_t *)"GGML....", 8, "x.gguf", &err) == -1 && strstr(err.msg, "not a GGUF"));
}

int main(void)
{
    RUN(test_f16);
    RUN(test_q8_0);
    RUN(test_rope_rows);
    RUN(test_bpe_text);
    RUN(test_merges);
    RUN(test_arch);
    RUN(test_round_trips);
    RUN(test_import_refusals);
    return test_summary("test_export");
}
