/* cmd_generate.c - `tempo generate`: sample text from a trained model with
 * the KV-cache engine, streaming each token's bytes to stdout as it is
 * produced. Flag parsing and printing only; the loop is infer/generate.c. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "run/run_parts.h"
#include "core/json_write.h"
#include "core/number.h"
#include "memory/mixture.h"
#include "infer/generate.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo generate --model RUN_DIR [--prompt TEXT] [--tokens N] [--temperature T]\n"
        "                      [--top-k K] [--top-p P] [--seed S] [--no-stop] [--threads N]\n"
        "                      [--no-memory] [--no-cache] [--device cpu|cuda]\n"
        "  --model RUN_DIR   a run folder, a .safetensors file, or a GGUF file of llama/qwen3 with a\n"
        "                    tempo tokenizer (F32/F16/Q8_0, e.g. from tempo export)\n"
        "  --prompt TEXT     text to continue (default: none, i.e. start a new document)\n"
        "  --tokens N        new tokens at most (default 200)\n"
        "  --temperature T   0 = greedy (default 0.8)\n"
        "  --top-k K         sample among the K most likely tokens (default 0 = all)\n"
        "  --top-p P         sample from the smallest set holding P of the mass (default 1)\n"
        "  --seed S          sampling seed (default 1)\n"
        "  --no-stop         do not stop at the document separator\n"
        "  --no-memory, --no-cache  leave the run's count memory / the cache out of the mixture\n"
        "  --device cuda     the transformer on an NVIDIA GPU (the KV-cache engine in fp32; memory, cache\n"
        "                    and mixer on the CPU); checked on the CPU emulator (TEMPO_GPU_EMULATOR=1) only\n"
        "A run with a count memory or a cache samples from the full mixed distribution: the transformer, the\n"
        "memory and a cache of the text so far (prompt and new tokens), at the run's fitted mixer weights.\n"
        "The model sees the separator token, then the prompt (cut from the left, keeping the\n"
        "separator, so that at least min(N, context/2) tokens fit). Text streams to stdout as it\n"
        "is produced; then a newline and one JSON line with the figures.\n");
}

typedef struct {
    const tokenizer *tok;
    strbuf text;
} stream_state;

static int on_token(void *user, int32_t t)
{
    stream_state *s = user;
    const uint8_t *b;
    size_t n = tok_token_bytes(s->tok, t, &b);
    if (n) {
        fwrite(b, 1, n, stdout);
        fflush(stdout);
        strbuf_append(&s->text, (const char *)b, n);
    }
    return 0;
}

typedef struct {
    const char *model_path, *prompt, *device;
    double temperature, top_p;
    long long seed;
    int tokens, top_k, threads, no_stop, no_memory, no_cache;
} generate_flags;

/* 0, or the exit code of a usage error (already printed); -1: --help was printed. */
static int parse_flags(int argc, char **argv, generate_flags *f)
{
    *f = (generate_flags){.prompt = "", .device = "cpu", .tokens = 200, .temperature = 0.8, .top_p = 1, .seed = 1};
    const cli_flag flags[] = {
        CLI_F_STRING("--model", &f->model_path),
        CLI_F_STRING("--prompt", &f->prompt),
        CLI_F_INT("--tokens", &f->tokens, 1, 1 << 20),
        CLI_F_REAL("--temperature", &f->temperature, 0, 1e6, 0),
        CLI_F_INT("--top-k", &f->top_k, 0, 1 << 20),
        CLI_F_REAL("--top-p", &f->top_p, 0, 1, 1),
        CLI_F_INT64("--seed", &f->seed, 0, NUMBER_MAX_SEED),
        CLI_F_INT("--threads", &f->threads, 1, NUMBER_MAX_THREADS),
        CLI_F_SWITCH("--no-stop", &f->no_stop),
        CLI_F_SWITCH("--no-memory", &f->no_memory),
        CLI_F_SWITCH("--no-cache", &f->no_cache),
        CLI_F_CHOICE("--device", &f->device, "cpu|cuda"),
    };
    int help, bad = cli_parse_flags("generate", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return -1; }
    if (!f->model_path)
        return cli_usage_error("generate: --model RUN_DIR is required");
    return 0;
}

/* What the run used, for the result line. */
typedef struct {
    gen_result res;
    int cut;            /* prompt tokens left out at the front */
    int memory_order, cache_order;
} generate_outcome;

/* Generate from seq[0..n_seq) with the model alone or, when the run has a
 * count memory or a cache, the mixture, streaming through st. */
static int generate(const generate_flags *f, const run_config *cfg, model *m, const tokenizer *tok,
                    const int32_t *seq, int n_seq, stream_state *st, generate_outcome *out, tempo_error *err)
{
    int ctx = cfg->model.context;
    infer_engine *e = NULL;
    infer_cache kc = {0};
    hybrid_parts h;
    memset(&h, 0, sizeof h);
    mixture_sampler mixs;
    memset(&mixs, 0, sizeof mixs);
    int rc = infer_engine_create(&e, m, ctx, err);
    if (!rc)
        rc = infer_cache_create(&kc, &cfg->model, 1, 0, err);
    if (!rc)
        rc = run_parts_load(f->model_path, cfg, tok, run_parts_frozen(!f->no_memory, !f->no_cache), &h, err);
    int hybrid = !rc && hybrid_parts_any(&h);
    if (hybrid) {
        mixture_options mo = hybrid_parts_options(&h, 0);
        rc = mixture_sampler_init(&mixs, &mo, &h.mx, err);
    }
    if (!rc) {
        gen_options o = {.max_tokens = f->tokens, .stop_at_sep = !f->no_stop, .sep_id = tok_sep_id(tok),
                         .sample = {(float)f->temperature, f->top_k, (float)f->top_p, (uint64_t)f->seed}};
        if (hybrid) {
            o.adjust = mixture_sampler_adjust;
            o.adjust_ctx = &mixs;
        }
        rc = infer_generate(e, &kc, 0, seq, n_seq, &o, on_token, st, &out->res, err);
    }
    out->memory_order = h.has_memory ? h.memory.order : 0;
    out->cache_order = h.cache_order;
    if (hybrid)
        mixture_sampler_free(&mixs);
    hybrid_parts_free(&h);
    infer_cache_free(&kc);
    infer_engine_free(e);
    return rc;
}

/* The figures line after the text. */
static int emit_result(const generate_flags *f, const generate_outcome *g, const strbuf *text)
{
    strbuf js = {0};
    jsonw w;
    jsonw_init(&w, &js);
    jsonw_object_begin(&w);
    jsonw_field_int(&w, "prompt_tokens", g->res.prompt_tokens);
    jsonw_field_int(&w, "prompt_cut", g->cut);
    jsonw_field_int(&w, "new_tokens", g->res.new_tokens);
    jsonw_field_string(&w, "stop", gen_stop_name(g->res.stop));
    jsonw_field_number(&w, "time_to_first_token_s", g->res.prefill_s);
    jsonw_field_number(&w, "decode_tokens_per_s", gen_decode_tokens_per_s(&g->res));
    jsonw_field_number(&w, "temperature", f->temperature);
    jsonw_field_int(&w, "top_k", f->top_k);
    jsonw_field_number(&w, "top_p", f->top_p);
    jsonw_field_uint(&w, "seed", (unsigned long long)f->seed);
    jsonw_field_int(&w, "memory_order", g->memory_order);
    jsonw_field_int(&w, "cache_order", g->cache_order);
    jsonw_key(&w, "text");
    jsonw_string_n(&w, text->data ? text->data : "", text->len);
    jsonw_object_end(&w);
    tempo_error err;
    int rc = jsonw_finish(&w, &err) ? cli_report(&err) : cli_emit_result(&js, NULL);
    strbuf_free(&js);
    return rc;
}

int cmd_generate(int argc, char **argv)
{
    generate_flags f;
    int rc = parse_flags(argc, argv, &f);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (f.threads > 0)
        omp_set_num_threads(f.threads);
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    model *m;
    tokenizer *tok;
    cli_device dev;
    if (cli_load_model("generate", f.model_path, 1, f.device, "fp32", &cfg, &m, &tok, &dev, &err))
        return cli_report(&err);
    int ctx = cfg.model.context, n_seq = 0;
    int32_t *ids = NULL, *seq = NULL;
    size_t n = 0, cap = 0;
    generate_outcome g = {.cut = 0};
    stream_state st = {tok, {0}};
    rc = tok_encode(tok, (const uint8_t *)f.prompt, strlen(f.prompt), &ids, &n, &cap, &err);
    if (!rc)
        rc = gen_prompt_window(ids, (int)n, tok_sep_id(tok), ctx, f.tokens, &seq, &n_seq, &g.cut, &err);
    if (!rc && g.cut)
        fprintf(stderr, "generate: prompt cut to its last %d tokens (context %d)\n", n_seq - 1, ctx);
    if (!rc)
        rc = generate(&f, &cfg, m, tok, seq, n_seq, &st, &g, &err);
    free(seq);
    free(ids);
    if (rc)
        rc = cli_report(&err);
    else {
        fputc('\n', stdout);
        rc = emit_result(&f, &g, &st.text);
    }
    strbuf_free(&st.text);
    cli_free_model(m, tok, &dev);
    return rc;
}
