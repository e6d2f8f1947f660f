/* cmd_generate.c - `tempo generate`: sample text from a trained model with
 * the KV-cache engine, streaming each token's bytes to stdout as it is
 * produced. Flag parsing and printing only; the loop is infer/generate.c. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/number.h"
#include "memory/mixture.h"
#include "infer/generate.h"
#include "train/checkpoint.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo generate --model RUN_DIR [--prompt TEXT] [--tokens N] [--temperature T]\n"
        "                      [--top-k K] [--top-p P] [--seed S] [--no-stop] [--threads N]\n"
        "                      [--no-memory] [--no-cache]\n"
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

/* An integer flag into a double (the options below keep every value as one). */
static int parse_whole(const char *flag, const char *v, long long lo, long long hi, double *out)
{
    long long x;
    if (cli_parse_int(flag, v, lo, hi, &x))
        return 2;
    *out = (double)x;
    return 0;
}

int cmd_generate(int argc, char **argv)
{
    const char *model_path = NULL, *prompt = "";
    double tokens = 200, temperature = 0.8, top_k = 0, top_p = 1, seed = 1, threads = 0;
    int stop = 1, use_memory = 1, use_cache = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--no-stop")) {
            stop = 0;
            continue;
        }
        if (!strcmp(a, "--no-memory") || !strcmp(a, "--no-cache")) {
            *(a[5] == 'm' ? &use_memory : &use_cache) = 0;
            continue;
        }
        int known = !strcmp(a, "--model") || !strcmp(a, "--prompt") || !strcmp(a, "--tokens") ||
                    !strcmp(a, "--temperature") || !strcmp(a, "--top-k") || !strcmp(a, "--top-p") ||
                    !strcmp(a, "--seed") || !strcmp(a, "--threads");
        if (!known)
            return cli_usage_error("%s: unknown option (see tempo generate --help)", a);
        if (!v)
            return cli_usage_error("%s: missing value (see tempo generate --help)", a);
        int rc = 0;
        if (!strcmp(a, "--model")) model_path = v;
        else if (!strcmp(a, "--prompt")) prompt = v;
        else if (!strcmp(a, "--tokens")) rc = parse_whole(a, v, 1, 1 << 20, &tokens);
        else if (!strcmp(a, "--temperature")) rc = cli_parse_real(a, v, 0, 1e6, 0, &temperature);
        else if (!strcmp(a, "--top-k")) rc = parse_whole(a, v, 0, 1 << 20, &top_k);
        else if (!strcmp(a, "--top-p")) rc = cli_parse_real(a, v, 0, 1, 1, &top_p);
        else if (!strcmp(a, "--seed")) rc = parse_whole(a, v, 0, NUMBER_MAX_SEED, &seed);
        else rc = parse_whole(a, v, 1, NUMBER_MAX_THREADS, &threads);
        if (rc)
            return rc;
        i++;
    }
    if (!model_path)
        return cli_usage_error("generate: --model RUN_DIR is required");
    if (threads > 0)
        omp_set_num_threads((int)threads);
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    model *m;
    tokenizer *tok;
    if (checkpoint_load_model(model_path, 1, &cfg, &m, &tok, &err))
        return cli_report(&err);
    int ctx = cfg.model.context, rc = 0;
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    if (tok_encode(tok, (const uint8_t *)prompt, strlen(prompt), &ids, &n, &cap, &err))
        rc = -1;
    /* separator + the prompt's last tokens, leaving room for min(N, ctx/2) new ones */
    int room = (int)tokens < ctx / 2 ? (int)tokens : ctx / 2;
    int keep = ctx - room - 1 > 0 ? ctx - room - 1 : 0;
    int cut = (int)n > keep ? (int)n - keep : 0;
    int32_t *seq = rc ? NULL : malloc(sizeof(int32_t) * ((size_t)n - (size_t)cut + 1));
    if (!rc && !seq)
        rc = tempo_fail(&err, "generate: out of memory");
    infer_engine *e = NULL;
    infer_cache kc = {0};
    gen_result res;
    stream_state st = {tok, {0}};
    if (!rc) {
        seq[0] = tok_sep_id(tok);
        memcpy(seq + 1, ids + cut, sizeof(int32_t) * ((size_t)n - (size_t)cut));
        if (cut)
            fprintf(stderr, "generate: prompt cut to its last %d tokens (context %d)\n", keep, ctx);
        rc = infer_engine_create(&e, m, ctx, &err);
    }
    if (!rc)
        rc = infer_cache_create(&kc, &cfg.model, 1, 0, &err);
    hybrid_parts h;
    memset(&h, 0, sizeof h);
    mixture_sampler mixs;
    memset(&mixs, 0, sizeof mixs);
    if (!rc)
        rc = cli_load_hybrid(model_path, &cfg, tok, use_memory, use_cache, &h, &err);
    int hybrid = !rc && hybrid_parts_any(&h);
    if (hybrid) {
        mixture_options mo = hybrid_parts_options(&h, 0);
        rc = mixture_sampler_init(&mixs, &mo, &h.mx, &err);
    }
    if (!rc) {
        gen_options o = {.max_tokens = (int)tokens, .stop_at_sep = stop, .sep_id = tok_sep_id(tok),
                         .sample = {(float)temperature, (int)top_k, (float)top_p, (uint64_t)seed}};
        if (hybrid) {
            o.adjust = mixture_sampler_adjust;
            o.adjust_ctx = &mixs;
        }
        rc = infer_generate(e, &kc, 0, seq, (int)n - cut + 1, &o, on_token, &st, &res, &err);
    }
    int mem_k = h.has_memory ? h.memory.order : 0, cache_k = h.cache_order;
    if (hybrid)
        mixture_sampler_free(&mixs);
    hybrid_parts_free(&h);
    infer_cache_free(&kc);
    infer_engine_free(e);
    free(seq);
    free(ids);
    model_free(m);
    if (rc) {
        tok_free(tok);
        strbuf_free(&st.text);
        return cli_report(&err);
    }
    fputc('\n', stdout);
    strbuf js = {0};
    strbuf_printf(&js, "{\"prompt_tokens\":%d,\"prompt_cut\":%d,\"new_tokens\":%d,\"stop\":\"%s\","
                       "\"time_to_first_token_s\":",
                  res.prompt_tokens, cut, res.new_tokens, gen_stop_name(res.stop));
    strbuf_json_number(&js, res.prefill_s);
    strbuf_puts(&js, ",\"decode_tokens_per_s\":");
    strbuf_json_number(&js, res.new_tokens > 1 && res.decode_s > 0 ? (res.new_tokens - 1) / res.decode_s : NAN);
    strbuf_puts(&js, ",\"temperature\":");
    strbuf_json_number(&js, temperature);
    strbuf_printf(&js, ",\"top_k\":%d,\"top_p\":", (int)top_k);
    strbuf_json_number(&js, top_p);
    strbuf_printf(&js, ",\"seed\":%.0f,\"memory_order\":%d,\"cache_order\":%d,\"text\":", seed, mem_k, cache_k);
    strbuf_json_string(&js, st.text.data ? st.text.data : "", st.text.len);
    strbuf_puts(&js, "}");
    rc = cli_emit_result(&js, NULL);
    strbuf_free(&js);
    strbuf_free(&st.text);
    tok_free(tok);
    return rc;
}
