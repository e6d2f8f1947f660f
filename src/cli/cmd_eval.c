/* cmd_eval.c - `tempo eval`: bits per byte of a trained model on the val
 * split of a data folder or on any text file (tokenised with the model's own
 * tokenizer); with --phase 2 the scorecard: bpb (when a text is given), ICL
 * accuracy (CORE) and the inference benchmark in one JSON object. Flag
 * parsing and printing only; the work is eval/eval_run.c (bpb, the
 * scorecard's assembly), eval/icl*.c and bench/bench_infer.c, the documents'
 * keys are eval/eval_result.c's. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "core/fileio.h"
#include "core/number.h"
#include "core/strbuf.h"
#include "core/timer.h"
#include "data/tokenizer.h"
#include "eval/eval_run.h"
#include "eval/icl_engine.h"
#include "memory/hybrid.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo eval --model RUN_DIR (--data DATA_DIR | --text FILE) [--stride N] [--batch N] [--threads N]\n"
        "                  [--no-memory] [--no-cache] [--no-adapt] [--cache-order K] [--match-length N]\n"
        "                  [--adapt-lr R] [--device cpu|cuda] [--precision fp32|bf16]\n"
        "  --model RUN_DIR   a run folder (its model.safetensors), a .safetensors file, or a GGUF file\n"
        "                    of llama/qwen3 with a tempo tokenizer (F32/F16/Q8_0, e.g. from tempo export);\n"
        "                    a .safetensors file's sha256 is checked (a damaged one is refused)\n"
        "  --data DATA_DIR   score DATA_DIR/val.tok (must use the model's tokenizer)\n"
        "  --text FILE       score any .txt/.jsonl(.xz) file: documents as 'tempo prepare' reads them (one\n"
        "                    file: a folder is refused, so a wrong path never scores a pile of other files)\n"
        "  --stride N        sliding-window stride in tokens (default: context/2; context = disjoint windows)\n"
        "  --device cuda     run the transformer's windows (and the learning reader's steps) on an NVIDIA GPU,\n"
        "                    fp32 by default (--precision bf16: bf16 operands); memory, cache and mixer stay on\n"
        "                    the CPU. Correct on an H200 (scripts/device_check.sh); TEMPO_GPU_EMULATOR=1 runs\n"
        "                    it on the CPU emulator\n"
        "  --no-memory       leave out the run's count memory (RUN_DIR/memory.bin) from the mixture\n"
        "  --no-cache        leave out the cache and the match model of the text being read\n"
        "  --cache-order K, --match-length N  use a cache of order K / a match model of N tokens instead of\n"
        "                    the run's own (0 = none); they need no training: any model can read with them\n"
        "                    (the mixer's weights then start equal unless mixer.json was fitted for them)\n"
        "  --no-adapt        freeze the cache (empty), the mixer's weights and the transformer (no learning\n"
        "                    while reading)\n"
        "  --adapt-lr R      the transformer's learning rate while reading instead of the run's adapt_lr\n"
        "                    (0 = frozen): after every context of scored tokens it takes one plain SGD step\n"
        "                    on them (dynamic evaluation; the norms' gains stay as trained); the windows\n"
        "                    then run in order, those between two steps as one batch\n"
        "A run trained with memory_order/cache_order > 0 is a mixture of the transformer, the count memory and\n"
        "the cache (docs/hybrid_model.md); the text is read in order, each token scored before the cache, the\n"
        "mixer and (with adapt_lr > 0) the transformer learn from it. The transformer enters the mixture\n"
        "sharpened, p^beta / sum p^beta (beta: mixer.json's model_beta, else the run's mixer_beta). The JSON\n"
        "gives the mixture's bpb, bpb_linear (the same before the calibration stages: docs/hybrid_model.md),\n"
        "under \"components\" each one's bpb alone (the transformer unsharpened) and its mean weight, adapt_lr\n"
        "(the transformer's rate while it read); model_seconds is the transformer's share of seconds. A reading\n"
        "longer than 10 s says how far it is on stderr every 10 s (tokens scored, time so far, time left).\n"
        "bpb = sum of -log2 p(token | preceding text) over every token / bytes of document text. The stream is\n"
        "SEP d1 SEP d2 ... SEP: the first SEP is given (not scored); later SEPs are predicted and their bits\n"
        "counted although they stand for no bytes.\n"
        "\n"
        "usage: tempo eval --model RUN_DIR --phase 2 [--data DATA_DIR | --text FILE] [--tasks DIR] [--limit N]\n"
        "                  [--out DIR] [--threads N] [--device cpu|cuda]\n"
        "  the phase-2 scorecard, one JSON object: bpb as above (null when neither --data nor --text is\n"
        "  given), ICL accuracy by the CORE protocol over --tasks DIR (default $TEMPO_DATA/icl; --limit N\n"
        "  items per task, see tempo icl --help) and the inference benchmark (tempo bench infer --help;\n"
        "  at --threads N only when given, else at 1 thread and all cores, the best of each figure).\n"
        "  Top-level keys: bpb, core, core_label, core_entries, core_of, decode_tokens_per_s (batch 1),\n"
        "  prefill_tokens_per_s, time_to_first_token_s, best_decode_tokens_per_s; the full figures under\n"
        "  \"bpb_detail\", \"icl\" and \"inference\". --out DIR also writes DIR/result.json.\n"
        "  --device cuda: the transformer on the GPU for all three (ICL and the benchmark's prefill and\n"
        "  decode through the KV-cache engine in fp32, the bound from the GPU's measured rates); the\n"
        "  count memory, cache and mixer on the CPU. The GPU decode is checked on the CPU emulator only:\n"
        "  its speed on a GPU is unmeasured.\n");
}

/* The phase-1 result line of a model on a text or val split, into js. */
static int eval_bpb(const char *model_path, model *m, tokenizer *tok, const run_config *cfg, const char *data_dir,
                    const char *text, int stride, int batch, run_parts_use use, const char *gpu_precision,
                    strbuf *js, double *bpb, tempo_error *err)
{
    hybrid_bpb_result r;
    if (eval_run_bpb(model_path, m, tok, cfg, data_dir, text, stride, batch, use, stderr, &r, err))
        return -1;
    /* on a GPU the products are --precision's; on a CPU the model's bf16_products where the CPU has them */
    r.precision = model_device(m) ? gpu_precision : model_products_bf16(m) ? "bf16" : "fp32";
    if (bpb)
        *bpb = r.mixture.bpb;
    return eval_bpb_json(&r, js, err);
}

static void print_line(void *user, const char *json)
{
    (void)user;
    fprintf(stderr, "eval: %s\n", json);
}

/* The scorecard's ICL part: the tasks in `tasks` (limit items each, 0: all), the table on stderr, the summary
 * into *s and its JSON into icl. */
static int eval_icl(const char *model_path, model *m, tokenizer *tok, const run_config *cfg, const char *tasks,
                    int limit, icl_summary *s, strbuf *icl, tempo_error *err)
{
    fprintf(stderr, "eval: ICL tasks in %s%s\n", tasks, limit ? " (limited)" : "");
    icl_options o;
    icl_options_default(&o);
    o.limit = limit;
    cli_icl_progress_state ps;
    cli_icl_progress_init(&ps);
    o.progress = cli_icl_progress;
    o.user = &ps;
    hybrid_parts h;
    icl_task_result *r = NULL;
    int n = 0;
    int rc = run_parts_load(model_path, cfg, tok, run_parts_frozen(1, 1), &h, err);
    if (!rc)
        rc = icl_engine_run(m, &h, tok, tasks, NULL, 0, &o, &r, &n, s, err);
    hybrid_parts_free(&h);
    if (!rc) {
        cli_icl_print_table(stderr, r, n, s);
        icl_summary_json(icl, r, n, s, &o);
    }
    free(r);
    return rc;
}

/* The phase-2 scorecard (see usage). */
static int eval_phase2(const char *model_path, const char *data_dir, const char *text, const char *tasks,
                       int limit, int stride, int batch, int threads, const char *out_dir, const char *device,
                       const char *precision)
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
    cli_device dev;
    if (cli_load_model("eval", model_path, batch, device, precision, &cfg, &m, &tok, &dev, &err))
        return cli_report(&err);
    strbuf bpb = {0}, icl = {0}, inf = {0};
    double bpb_value = NAN;
    int rc = 0;
    if (data_dir || text) {
        fprintf(stderr, "eval: bpb of %s\n", text ? text : data_dir);
        rc = eval_bpb(model_path, m, tok, &cfg, data_dir, text, stride, batch, run_parts_all(), precision, &bpb,
                      &bpb_value, &err);
    }
    icl_summary s;
    if (!rc)
        rc = eval_icl(model_path, m, tok, &cfg, tasks, limit, &s, &icl, &err);
    bench_infer_result b;
    if (!rc) {
        fprintf(stderr, "eval: inference benchmark\n");
        bench_infer_options bo;
        bench_infer_options_default(&bo);
        bo.runs = 3;
        bo.line = print_line;
        rc = dev.g ? cli_bench_infer_setup_gpu(dev.g, &bo, &err)
                   : cli_bench_infer_setup(model_path, threads, &bo, &err);
        if (!rc) rc = bench_infer_run(m, &bo, &b, &err);
        if (!rc) rc = bench_infer_summary_json(&inf, &b, &err);
    }
    cli_free_model(m, tok, &dev);
    if (rc) {
        strbuf_free(&bpb);
        strbuf_free(&icl);
        strbuf_free(&inf);
        return cli_report(&err);
    }
    eval_scorecard sc;
    eval_scorecard_fill(&sc, bpb.data, bpb_value, &s, icl.data, limit, model_path, timer_now() - t0);
    bench_infer_scorecard(&b, inf.data, &sc);
    strbuf js = {0};
    rc = eval_scorecard_json(&sc, &js, &err);
    strbuf_free(&bpb);
    strbuf_free(&icl);
    strbuf_free(&inf);
    if (rc || (out_dir && dir_create(out_dir, &err))) {
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
    const char *device = "cpu", *precision = "fp32";
    run_parts_use use = run_parts_all();
    int stride = 0, batch = 8, threads = 0, phase = 1, limit = 0, no_memory = 0, no_cache = 0, no_adapt = 0;
    const char *phase_s = "1";
    const cli_flag flags[] = {
        CLI_F_STRING("--model", &model_path),
        CLI_F_STRING("--data", &data_dir),
        CLI_F_STRING("--text", &text),
        CLI_F_STRING("--tasks", &tasks),
        CLI_F_STRING("--out", &out_dir),
        CLI_F_CHOICE("--device", &device, "cpu|cuda"),
        CLI_F_CHOICE("--precision", &precision, "bf16|fp32"),
        CLI_F_CHOICE("--phase", &phase_s, "1|2"),
        CLI_F_INT("--limit", &limit, 0, 1 << 30),
        CLI_F_INT("--stride", &stride, 1, 1 << 20),
        CLI_F_INT("--batch", &batch, 1, 1 << 20),
        CLI_F_INT("--threads", &threads, 1, NUMBER_MAX_THREADS),
        CLI_F_REAL("--adapt-lr", &use.adapt_lr, 0, 10, 0),
        CLI_F_INT("--cache-order", &use.cache_order, 0, NGRAM_MAX_ORDER),
        CLI_F_INT("--match-length", &use.match_length, 0, 64),
        CLI_F_SWITCH("--no-memory", &no_memory),
        CLI_F_SWITCH("--no-cache", &no_cache),
        CLI_F_SWITCH("--no-adapt", &no_adapt),
    };
    int help, bad = cli_parse_flags("eval", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return 0; }
    phase = phase_s[0] - '0';
    if (no_memory) use.memory = 0;
    if (no_cache) use.cache = 0;
    if (no_adapt) use.adapt = 0;
    if (!model_path) return cli_usage_error("eval: --model RUN_DIR is required");
    if (data_dir && text) return cli_usage_error("eval: give exactly one of --data DATA_DIR or --text FILE");
    if (phase == 1 && !data_dir && !text) return cli_usage_error("eval: give exactly one of --data DATA_DIR or --text FILE");
    struct stat text_st;
    if (text && stat(text, &text_st) == 0 && S_ISDIR(text_st.st_mode))
        return cli_usage_error("--text %s: is a directory; expected a file", text);
    if (phase == 1 && (tasks || limit || out_dir))
        return cli_usage_error("eval: --tasks, --limit and --out belong to --phase 2");
    if (threads > 0) omp_set_num_threads(threads);
    if (phase == 2)
        return eval_phase2(model_path, data_dir, text, tasks, limit, stride, batch, threads, out_dir, device,
                           precision);
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    model *m;
    tokenizer *tok;
    cli_device dev;
    if (cli_load_model("eval", model_path, batch, device, precision, &cfg, &m, &tok, &dev, &err))
        return cli_report(&err);
    strbuf js = {0};
    int rc = eval_bpb(model_path, m, tok, &cfg, data_dir, text, stride, batch, use, precision, &js, NULL, &err);
    cli_free_model(m, tok, &dev);
    if (rc) {
        strbuf_free(&js);
        return cli_report(&err);
    }
    rc = cli_emit_result(&js, NULL);
    strbuf_free(&js);
    return rc;
}
