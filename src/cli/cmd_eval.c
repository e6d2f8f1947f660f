/* cmd_eval.c - `tempo eval`: bits per byte of a trained model on the val
 * split of a data folder or on any text file (tokenised with the model's own
 * tokenizer); with --phase 2 the scorecard: bpb (when a text is given), ICL
 * accuracy (CORE) and the inference benchmark in one JSON object. Flag
 * parsing and printing only; the work is eval/bpb.c, eval/icl*.c and
 * bench/bench_infer.c. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/number.h"
#include "core/timer.h"
#include "eval/icl_engine.h"
#include "core/strbuf.h"
#include "data/token_store.h"
#include "data/tokenizer.h"
#include "eval/bpb.h"
#include "eval/hybrid_bpb.h"
#include "memory/hybrid.h"
#include "memory/memory_file.h"
#include "train/checkpoint.h"

static int takes_value(const char *flag)
{
    static const char *const flags[] = {"--model", "--data", "--text", "--stride", "--batch", "--threads",
                                        "--phase", "--tasks", "--limit", "--out", "--cache-order", "--match-length"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (!strcmp(flag, flags[i]))
            return 1;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo eval --model RUN_DIR (--data DATA_DIR | --text FILE) [--stride N] [--batch N] [--threads N]\n"
        "                  [--no-memory] [--no-cache] [--no-adapt] [--cache-order K] [--match-length N]\n"
        "  --model RUN_DIR   a run folder (its model.safetensors), a .safetensors file, or a GGUF file\n"
        "                    of llama/qwen3 with a tempo tokenizer (F32/F16/Q8_0, e.g. from tempo export)\n"
        "  --data DATA_DIR   score DATA_DIR/val.tok (must use the model's tokenizer)\n"
        "  --text FILE       score any .txt/.jsonl(.xz) file: documents as 'tempo prepare' reads them\n"
        "  --stride N        sliding-window stride in tokens (default: context/2; context = disjoint windows)\n"
        "  --no-memory       leave out the run's count memory (RUN_DIR/memory.bin) from the mixture\n"
        "  --no-cache        leave out the cache and the match model of the text being read\n"
        "  --cache-order K, --match-length N  use a cache of order K / a match model of N tokens instead of\n"
        "                    the run's own (0 = none); they need no training: any model can read with them\n"
        "                    (the mixer's weights then start equal unless mixer.json was fitted for them)\n"
        "  --no-adapt        freeze the cache (empty) and the mixer's weights (no learning while reading)\n"
        "A run trained with memory_order/cache_order > 0 is a mixture of the transformer, the count memory and\n"
        "the cache (DESIGN.md section 6); the text is read in order, each token scored before the cache and the\n"
        "mixer learn from it. The JSON gives the mixture's bpb and, under \"components\", each one's bpb alone\n"
        "and its mean weight; model_seconds is the transformer's share of seconds.\n"
        "bpb = sum of -log2 p(token | preceding text) over every token / bytes of document text. The stream is\n"
        "SEP d1 SEP d2 ... SEP: the first SEP is given (not scored); later SEPs are predicted and their bits\n"
        "counted although they stand for no bytes.\n"
        "\n"
        "usage: tempo eval --model RUN_DIR --phase 2 [--data DATA_DIR | --text FILE] [--tasks DIR] [--limit N]\n"
        "                  [--out DIR] [--threads N]\n"
        "  the phase-2 scorecard, one JSON object: bpb as above (null when neither --data nor --text is\n"
        "  given), ICL accuracy by the CORE protocol over --tasks DIR (default $TEMPO_DATA/icl; --limit N\n"
        "  items per task, see tempo icl --help) and the inference benchmark (tempo bench infer --help;\n"
        "  at --threads N only when given, else at 1 thread and all cores, the best of each figure).\n"
        "  Top-level keys: bpb, core, core_label, core_entries, core_of, decode_tokens_per_s (batch 1),\n"
        "  prefill_tokens_per_s, time_to_first_token_s, best_decode_tokens_per_s; the full figures under\n"
        "  \"bpb_detail\", \"icl\" and \"inference\". --out DIR also writes DIR/result.json.\n");
}

/* Which of the hybrid model's components to use (all by default). */
typedef struct {
    int memory, cache, adapt;
    int cache_order, match_length;   /* >= 0: instead of the run's own (components needing no training) */
} eval_parts;

/* bpb of the val split or a text file; the phase-1 result object into js. */
static int eval_bpb(const char *model_path, model *m, tokenizer *tok, const run_config *cfg, const char *data_dir,
                    const char *text, int stride, int batch, eval_parts use, strbuf *js, tempo_error *err)
{
    int32_t *ids = NULL;
    size_t n = 0;
    uint64_t n_bytes = 0, n_docs = 0;
    int rc = 0;
    if (text) {
        if (token_encode_file(tok, text, &ids, &n, &n_bytes, &n_docs, err)) rc = -1;
    } else {
        char p[1100];
        token_file tf;
        if (token_file_open(&tf, path_join(p, sizeof p, data_dir, "val.tok"), err)) rc = -1;
        else {
            if (tf.vocab_size != (uint32_t)cfg->model.vocab_size)
                rc = tempo_fail(err, "%s: vocabulary %u does not match the model's %d", p, tf.vocab_size,
                                cfg->model.vocab_size);
            else if (!(ids = malloc(sizeof(int32_t) * (tf.n_tokens ? tf.n_tokens : 1))))
                rc = tempo_fail(err, "%s: out of memory", p);
            else {
                token_file_read(&tf, 0, tf.n_tokens, ids);
                n = tf.n_tokens;
                n_bytes = tf.n_bytes;
                n_docs = tf.n_docs;
            }
            token_file_close(&tf);
        }
    }
    hybrid_parts h;
    memset(&h, 0, sizeof h);
    hybrid_bpb_result hr;
    if (!rc)
        rc = hybrid_parts_load(&h, model_path, cfg->model.vocab_size, ngram_tokenizer_id(tok),
                               use.memory ? cfg->memory_order : 0,
                               !use.cache ? 0 : use.cache_order >= 0 ? use.cache_order : cfg->cache_order,
                               !use.cache ? 0 : use.match_length >= 0 ? use.match_length : cfg->match_length,
                               cfg->mixer_lr, err);
    if (!rc)
        rc = hybrid_bpb_evaluate(m, &h, use.adapt, ids, n, n_bytes, stride ? stride : cfg->model.context / 2, batch,
                                 NULL, &hr, err);
    free(ids);
    int fitted = h.mixer_fitted, mem_k = h.has_memory ? h.memory.order : 0, cache_k = h.cache_order;
    int match_k = h.match_length;
    hybrid_parts_free(&h);
    if (rc) return rc;
    const bpb_result *r = &hr.model;
    strbuf_puts(js, "{\"bpb\":");
    strbuf_json_number(js, hr.bpb);
    strbuf_puts(js, ",\"bits\":");
    strbuf_json_number(js, hr.bits);
    strbuf_puts(js, ",\"loss\":");
    strbuf_json_number(js, hr.bits * log(2.0) / (double)r->n_tokens);
    strbuf_printf(js, ",\"bytes\":%llu,\"tokens\":%llu,\"documents\":%llu,\"context\":%d,\"stride\":%d,\"seconds\":",
                  (unsigned long long)r->n_bytes, (unsigned long long)r->n_tokens, (unsigned long long)n_docs,
                  r->context, r->stride);
    strbuf_json_number(js, hr.seconds);
    strbuf_puts(js, ",\"model_seconds\":");
    strbuf_json_number(js, r->seconds);
    strbuf_puts(js, ",\"mixture_seconds\":");
    strbuf_json_number(js, hr.mixture_seconds);
    strbuf_printf(js, ",\"memory_order\":%d,\"cache_order\":%d,\"match_length\":%d,\"adapt\":%s,\"mixer\":\"%s\","
                  "\"components\":{", mem_k, cache_k, match_k, use.adapt ? "true" : "false", fitted ? "fitted" : "equal");
    for (int c = 0; c < MIX_N; c++) {
        strbuf_printf(js, "%s\"%s\":{\"bpb\":", c ? "," : "", mixer_component_names[c]);
        strbuf_json_number(js, hr.bpb_component[c]);
        strbuf_puts(js, ",\"weight\":");
        strbuf_json_number(js, hr.mean_weight[c]);
        strbuf_puts(js, "}");
    }
    strbuf_puts(js, "}");
    strbuf_puts(js, ",\"first_separator\":\"given\",\"source\":");
    const char *src = text ? text : data_dir;
    strbuf_json_string(js, src, strlen(src));
    strbuf_puts(js, "}");
    return 0;
}

static void print_line(void *user, const char *json)
{
    (void)user;
    fprintf(stderr, "eval: %s\n", json);
}

/* The phase-2 scorecard (see usage). */
static int eval_phase2(const char *model_path, const char *data_dir, const char *text, const char *tasks,
                       int limit, int stride, int batch, int threads, const char *out_dir)
{
    double t0 = timer_now();
    char def[1024];
    if (!tasks || !*tasks) {
        if (cli_icl_default_tasks(def, sizeof def))
            return cli_usage_error("eval --phase 2: give --tasks DIR (or set TEMPO_DATA)");
        tasks = def;
    }
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    model *m;
    tokenizer *tok;
    if (checkpoint_load_model(model_path, batch, &cfg, &m, &tok, &err)) return cli_report(&err);
    strbuf bpb = {0}, icl = {0}, inf = {0};
    int rc = 0;
    if (data_dir || text) {
        fprintf(stderr, "eval: bpb of %s\n", text ? text : data_dir);
        eval_parts all = {1, 1, 1, -1, -1};
        rc = eval_bpb(model_path, m, tok, &cfg, data_dir, text, stride, batch, all, &bpb, &err);
    }
    icl_task_result *r = NULL;
    int n = 0;
    icl_summary s;
    if (!rc) {
        fprintf(stderr, "eval: ICL tasks in %s%s\n", tasks, limit ? " (limited)" : "");
        icl_options o;
        icl_options_default(&o);
        o.limit = limit;
        cli_icl_progress_state ps;
        cli_icl_progress_init(&ps);
        o.progress = cli_icl_progress;
        o.user = &ps;
        hybrid_parts h;
        rc = cli_load_hybrid(model_path, &cfg, tok, 1, 1, &h, &err);
        if (!rc)
            rc = icl_engine_run(m, &h, tok, tasks, NULL, 0, &o, &r, &n, &s, &err);
        hybrid_parts_free(&h);
        if (!rc) {
            cli_icl_print_table(stderr, r, n, &s);
            icl_summary_json(&icl, r, n, &s, &o);
        }
    }
    bench_infer_result b;
    if (!rc) {
        fprintf(stderr, "eval: inference benchmark\n");
        bench_infer_options bo;
        bench_infer_options_default(&bo);
        bo.runs = 3;
        bo.line = print_line;
        rc = cli_bench_infer_setup(model_path, threads, &bo, &err);
        if (!rc) rc = bench_infer_run(m, &bo, &b, &err);
        if (!rc) rc = bench_infer_summary_json(&inf, &b, &err);
    }
    model_free(m);
    tok_free(tok);
    free(r);
    if (rc) {
        strbuf_free(&bpb);
        strbuf_free(&icl);
        strbuf_free(&inf);
        return cli_report(&err);
    }
    strbuf js = {0};
    strbuf_puts(&js, "{\"phase\":2,\"bpb\":");
    if (bpb.data) {
        json_value *v = NULL;
        tempo_error je;
        if (!json_parse(bpb.data, bpb.len, &v, &je)) strbuf_json_number(&js, json_get_number(v, "bpb", NAN));
        else strbuf_puts(&js, "null");
        json_free(v);
    } else {
        strbuf_puts(&js, "null");
    }
    strbuf_puts(&js, ",\"core\":");
    strbuf_json_number(&js, s.core);
    char label[32] = "CORE";
    if (s.n_core != s.n_table) snprintf(label, sizeof label, "CORE-%d", s.n_core);
    strbuf_printf(&js, ",\"core_label\":\"%s\",\"core_entries\":%d,\"core_of\":%d,\"icl_limit\":%d", label,
                  s.n_core, s.n_table, limit);
    const bench_infer_at *bp = &b.at[b.best_prefill], *bd = &b.at[b.best_decode1], *bg = &b.at[b.best_batch_at];
    strbuf_puts(&js, ",\"decode_tokens_per_s\":");
    strbuf_json_number(&js, bd->n_decode ? bd->decode[0].tokens_per_s : NAN);
    strbuf_puts(&js, ",\"prefill_tokens_per_s\":");
    strbuf_json_number(&js, bp->prefill_tokens_per_s);
    strbuf_puts(&js, ",\"time_to_first_token_s\":");
    strbuf_json_number(&js, bp->ttft_p50_s);
    strbuf_printf(&js, ",\"best_batch\":%d,\"best_decode_tokens_per_s\":", bg->best_batch);
    strbuf_json_number(&js, bg->best_tokens_per_s);
    strbuf_puts(&js, ",\"bpb_detail\":");
    strbuf_puts(&js, bpb.data ? bpb.data : "null");
    strbuf_puts(&js, ",\"icl\":");
    strbuf_puts(&js, icl.data ? icl.data : "null");
    strbuf_puts(&js, ",\"inference\":");
    strbuf_puts(&js, inf.data ? inf.data : "null");
    strbuf_puts(&js, ",\"model\":");
    strbuf_json_string(&js, model_path, strlen(model_path));
    strbuf_puts(&js, ",\"seconds\":");
    strbuf_json_number(&js, timer_now() - t0);
    strbuf_puts(&js, "}");
    strbuf_free(&bpb);
    strbuf_free(&icl);
    strbuf_free(&inf);
    if (out_dir && dir_create(out_dir, &err)) {
        strbuf_free(&js);
        return cli_report(&err);
    }
    rc = cli_emit_result(&js, out_dir);
    strbuf_free(&js);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    const char *model_path = NULL, *data_dir = NULL, *text = NULL, *tasks = NULL, *out_dir = NULL;
    eval_parts use = {1, 1, 1, -1, -1};
    int stride = 0, batch = 8, threads = 0, phase = 1, limit = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--no-memory")) { use.memory = 0; continue; }
        if (!strcmp(a, "--no-cache")) { use.cache = 0; continue; }
        if (!strcmp(a, "--no-adapt")) { use.adapt = 0; continue; }
        if (!takes_value(a)) return cli_usage_error("%s: unknown option (see tempo eval --help)", a);
        if (!v) return cli_usage_error("%s: missing value (see tempo eval --help)", a);
        if (!strcmp(a, "--model")) model_path = v;
        else if (!strcmp(a, "--data")) data_dir = v;
        else if (!strcmp(a, "--text")) text = v;
        else if (!strcmp(a, "--tasks")) tasks = v;
        else if (!strcmp(a, "--out")) out_dir = v;
        else if (!strcmp(a, "--phase")) {
            if (strcmp(v, "1") && strcmp(v, "2")) return cli_usage_error("--phase %s: 1 or 2", v);
            phase = v[0] - '0';
        } else if (!strcmp(a, "--limit")) {
            long long x;
            if (cli_parse_int(a, v, 0, 1 << 30, &x)) return 2;
            limit = (int)x;
        } else if (!strcmp(a, "--stride") || !strcmp(a, "--batch") || !strcmp(a, "--threads")) {
            long long x;
            if (cli_parse_int(a, v, 1, a[2] == 't' ? NUMBER_MAX_THREADS : 1 << 20, &x)) return 2;
            if (a[2] == 's') stride = (int)x;
            else if (a[2] == 'b') batch = (int)x;
            else threads = (int)x;
        } else if (!strcmp(a, "--cache-order") || !strcmp(a, "--match-length")) {
            long long x;
            if (cli_parse_int(a, v, 0, a[2] == 'c' ? NGRAM_MAX_ORDER : 64, &x)) return 2;
            *(a[2] == 'c' ? &use.cache_order : &use.match_length) = (int)x;
        } else return cli_usage_error("%s: unknown option (see tempo eval --help)", a);
        i++;
    }
    if (!model_path) return cli_usage_error("eval: --model RUN_DIR is required");
    if (data_dir && text) return cli_usage_error("eval: give exactly one of --data DATA_DIR or --text FILE");
    if (phase == 1 && !data_dir && !text) return cli_usage_error("eval: give exactly one of --data DATA_DIR or --text FILE");
    if (phase == 1 && (tasks || limit || out_dir))
        return cli_usage_error("eval: --tasks, --limit and --out belong to --phase 2");
    if (threads > 0) omp_set_num_threads(threads);
    if (phase == 2) return eval_phase2(model_path, data_dir, text, tasks, limit, stride, batch, threads, out_dir);
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    model *m;
    tokenizer *tok;
    if (checkpoint_load_model(model_path, batch, &cfg, &m, &tok, &err)) return cli_report(&err);
    strbuf js = {0};
    int rc = eval_bpb(model_path, m, tok, &cfg, data_dir, text, stride, batch, use, &js, &err);
    model_free(m);
    tok_free(tok);
    if (rc) {
        strbuf_free(&js);
        return cli_report(&err);
    }
    rc = cli_emit_result(&js, NULL);
    strbuf_free(&js);
    return rc;
}
