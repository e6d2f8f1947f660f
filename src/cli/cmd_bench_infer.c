/* cmd_bench_infer.c - `tempo bench infer` (dispatched from cmd_bench.c as
 * bench_infer_main): loads a model, takes the chip's measured limits from
 * the hardware profile, runs bench/bench_infer.c and prints its JSON lines
 * as they come, the summary last. Also the option setup `tempo eval
 * --phase 2` shares. No measuring logic lives here. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/hw_profile.h"
#include "bench/bench_memory.h"
#include "bench/bench_llama_cpp.h"
#include "bench/peak_cuda.h"
#include "kernels/cuda/gpu.h"
#include "cli/cli.h"
#include "run/run_parts.h"
#include "train/run_result.h"
#include "core/fileio.h"
#include "core/number.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo bench infer --model RUN_DIR [--prompt N] [--runs N] [--steps N]\n"
        "                         [--max-batch N] [--threads N] [--vs-llama-cpp] [--device cpu|cuda]\n"
        "  --model RUN_DIR  a run folder, a .safetensors file, or a GGUF file of llama/qwen3 with a\n"
        "                 tempo tokenizer (F32/F16/Q8_0, e.g. from tempo export)\n"
        "  --threads N    measure at N threads only (default: at 1 and at all cores; the\n"
        "                 summary takes the best of each figure and names the count)\n"
        "  --prompt N     prefill prompt tokens (default min(512, context))\n"
        "  --runs N       repetitions of each measurement (default 5; p50/p99 over them)\n"
        "  --steps N      decode steps per run (default min(64, context - 32))\n"
        "  --max-batch N  largest decode batch tried (default 64; powers of 2 from 1)\n"
        "  --vs-llama-cpp also run the model (as F32 GGUF) in llama.cpp at the same threads, prompt\n"
        "                 length, decode position and steps (batch 1 prefill and decode); one\n"
        "                 vs_llama_cpp line per thread count with both and the ratios tempo/llama.cpp.\n"
        "                 llama.cpp comes from the node-llama-cpp npm package (prebuilt CPU\n"
        "                 libraries), fetched and built once by tools/llama_cpp/setup.sh. A hybrid\n"
        "                 run's count memory has no llama.cpp counterpart: both run the transformer.\n"
        "  --device cuda  the transformer on an NVIDIA GPU (fp32; engine.h): one line per measurement,\n"
        "                 the bound from the GPU's fp32 matrix rate and copy bandwidth measured first\n"
        "                 (as tempo bench peak --device cuda). Checked on the CPU emulator only: its\n"
        "                 speed on a GPU is unmeasured. TEMPO_GPU_EMULATOR=1 runs the emulator.\n"
        "JSON lines: prefill (tokens/s, time to first token), decode per batch (tokens/s,\n"
        "per-step p50/p99 ms), bound (weight+KV bytes / bandwidth and FLOPs / measured peak, the\n"
        "ratio decode(batch 1) reaches; the bandwidth is a read of a buffer of those bytes measured\n"
        "now at the same threads when they fit the L3 or it beats DRAM (a cache holds them), else the\n"
        "profile's DRAM triad: bandwidth_source says which), then the summary (the last line).\n"
        "A run with a count memory or a cache (the hybrid model) first prints their cost per token\n"
        "(bench: infer_memory): score_us_per_token (one known token: eval, ICL) and\n"
        "dist_us_per_token (the whole mixed distribution: generation), also under \"memory\" in the\n"
        "summary.\n");
}

static void print_line(void *user, const char *json)
{
    (void)user;
    fputs(json, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

/* The training speed recorded in RUN_DIR/result.json, or 0. */
static double train_speed(const char *model_path)
{
    struct stat st;
    if (stat(model_path, &st) || !S_ISDIR(st.st_mode))
        return 0;
    char p[1100];
    path_join(p, sizeof p, model_path, RUN_RESULT_FILE);
    char *text;
    size_t n;
    tempo_error e;
    if (file_read_all(p, &text, &n, 1 << 20, &e))
        return 0;
    run_result_summary r;
    double x = run_result_read(text, n, &r, &e) == 0 ? r.tokens_per_second : 0;
    free(text);
    return x > 0 ? x : 0;
}

int cli_bench_infer_setup(const char *model_path, int threads, bench_infer_options *o, tempo_error *err)
{
    o->n_threads = 0;
    if (threads > 0)
        o->threads[o->n_threads++] = threads;
    else
        o->n_threads = cli_default_thread_list(o->threads);
    hw_profile p;
    if (hw_profile_load_or_measure(&p, err))
        return -1;
    o->l3_bytes = p.l3_bytes;
    o->bandwidth_source = "hardware profile triad";
    for (int k = 0; k < o->n_threads; k++) {
        int t = o->threads[k];
        o->peak_gflops[k] = hw_profile_peak_gflops(&p, t);
        o->bandwidth_gbs[k] = 0;
        for (int i = 0; i < p.n_bandwidth; i++)
            if (p.bandwidth_gbs[i].threads == t)
                o->bandwidth_gbs[k] = p.bandwidth_gbs[i].value;
        if (o->bandwidth_gbs[k] <= 0) {
            fprintf(stderr, "bench infer: no %d-thread bandwidth in the hardware profile (tempo bench peak "
                            "measures it); measuring a quick triad\n", t);
            o->bandwidth_gbs[k] = bench_infer_measure_bandwidth(t, 1.0);
            o->bandwidth_source = "quick triad now";
        }
    }
    o->train_tokens_per_s = train_speed(model_path);
    return 0;
}

/* `bench infer` options. */
typedef struct {
    const char *model_path;
    int threads;           /* 0: 1 and all cores */
    int vs_llama;
    const char *device;    /* "cpu" or "cuda" */
    bench_infer_options o;
} infer_args;

/* -1: go on; else the exit code (0 after --help). */
static int infer_parse(int argc, char **argv, infer_args *p)
{
    memset(p, 0, sizeof *p);
    bench_infer_options_default(&p->o);
    const cli_flag flags[] = {
        CLI_F_STRING("--model", &p->model_path),
        CLI_F_INT("--prompt", &p->o.prompt, 1, 1 << 20),
        CLI_F_INT("--runs", &p->o.runs, 1, 1 << 20),
        CLI_F_INT("--steps", &p->o.decode_steps, 1, 1 << 20),
        CLI_F_INT("--max-batch", &p->o.max_batch, 1, 1 << 20),
        CLI_F_INT("--threads", &p->threads, 1, NUMBER_MAX_THREADS),
        CLI_F_SWITCH("--vs-llama-cpp", &p->vs_llama),
        CLI_F_CHOICE("--device", &p->device, "cpu|cuda"),
    };
    p->device = "cpu";
    int help, bad = cli_parse_flags("bench infer", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return 0; }
    if (!p->model_path)
        return cli_usage_error("bench infer: --model RUN_DIR is required");
    if (strcmp(p->device, "cpu") && (p->vs_llama || p->threads))
        return cli_usage_error("bench infer --device cuda: --vs-llama-cpp and --threads belong to the CPU");
    return -1;
}

int cli_bench_infer_setup_gpu(gpu *g, bench_infer_options *o, tempo_error *err)
{
    peak_cuda pk;
    if (peak_cuda_measure_startup(g, &pk, err))
        return tempo_error_prefix(err, "bench infer on the GPU");
    fprintf(stderr, "bench infer: on %s: fp32 %.1f TFLOP/s, copy %.0f GB/s (measured now)\n", gpu_get_info(g)->name,
            pk.fp32_tflops, pk.copy_gbs);
    o->n_threads = 1;
    o->threads[0] = 1;
    o->peak_gflops[0] = pk.fp32_tflops * 1e3;
    o->bandwidth_gbs[0] = pk.copy_gbs;
    o->bandwidth_source = "the GPU's device copy, measured now";
    o->read_probe_seconds = 0;
    o->l3_bytes = 0;
    return 0;
}

/* The hybrid model's other parts first: their cost per token is a line of
 * its own (mr stays zero when the run has none). */
static int infer_memory(const infer_args *p, const run_config *cfg, const tokenizer *tok, bench_memory_result *mr,
                        tempo_error *err)
{
    hybrid_parts h;
    memset(mr, 0, sizeof *mr);
    int rc = run_parts_load(p->model_path, cfg, tok, run_parts_frozen(1, 1), &h, err);
    if (!rc && hybrid_parts_any(&h)) {
        if (p->threads > 0)
            omp_set_num_threads(p->threads);
        rc = bench_memory_run(&h, 1024, mr, err);
        if (!rc) {
            strbuf ml = {0};
            jsonw w;
            jsonw_init(&w, &ml);
            bench_memory_json(&w, mr);
            rc = cli_emit_jsonw(&w, err);
        }
    }
    hybrid_parts_free(&h);
    return rc;
}

/* llama.cpp at each thread count of r: a line each, and *best, the one at
 * the thread count of the summary's batch-1 decode. */
static int infer_vs_llama(model *m, const tokenizer *tok, const bench_infer_result *r, bench_llama_cpp_at *vs,
                          int *best, tempo_error *err)
{
    *best = 0;
    if (bench_llama_cpp_run(m, tok, r, vs, err))
        return -1;
    for (int k = 0; k < r->n_at; k++) {
        strbuf l = {0};
        jsonw w;
        jsonw_init(&w, &l);
        bench_llama_cpp_json(&w, r, &vs[k]);
        if (cli_emit_jsonw(&w, err))
            return -1;
        fprintf(stderr, "bench infer: %d thread(s): prefill tempo %.0f vs llama.cpp %.0f tokens/s (x%.2f); "
                        "decode tempo %.0f vs llama.cpp %.0f tokens/s (x%.2f)\n", vs[k].threads,
                vs[k].tempo_prefill_tokens_per_s, vs[k].prefill_tokens_per_s,
                vs[k].tempo_prefill_tokens_per_s / vs[k].prefill_tokens_per_s, vs[k].tempo_decode_tokens_per_s,
                vs[k].decode_tokens_per_s, vs[k].tempo_decode_tokens_per_s / vs[k].decode_tokens_per_s);
        if (r->at[k].threads == r->at[r->best_decode1].threads)
            *best = k;
    }
    return 0;
}

/* The summary line, with the memory's figures (when measured) and the
 * llama.cpp comparison (vs: when made) inside it. */
static int infer_summary(const bench_infer_result *r, const bench_memory_result *mr, const bench_llama_cpp_at *vs,
                         tempo_error *err)
{
    strbuf js = {0};
    jsonw w;
    jsonw_init(&w, &js);
    jsonw_object_begin(&w);
    bench_infer_summary_fields(&w, r);
    if (mr->memory_order || mr->cache_order) {
        jsonw_key(&w, "memory");
        bench_memory_json(&w, mr);
    }
    if (vs) {
        jsonw_key(&w, "vs_llama_cpp");
        bench_llama_cpp_json(&w, r, vs);
    }
    jsonw_object_end(&w);
    return cli_emit_jsonw(&w, err);
}

int bench_infer_main(int argc, char **argv)
{
    infer_args p;
    int rc = infer_parse(argc, argv, &p);
    if (rc >= 0)
        return rc;
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    model *m;
    tokenizer *tok;
    cli_device dev;
    if (cli_load_model("bench infer", p.model_path, 1, p.device, "fp32", &cfg, &m, &tok, &dev, &err))
        return cli_report(&err);
    bench_memory_result mr;
    rc = infer_memory(&p, &cfg, tok, &mr, &err);
    if (!rc)
        rc = dev.g ? cli_bench_infer_setup_gpu(dev.g, &p.o, &err)
                   : cli_bench_infer_setup(p.model_path, p.threads, &p.o, &err);
    p.o.line = print_line;
    bench_infer_result r;
    if (!rc)
        rc = bench_infer_run(m, &p.o, &r, &err);
    bench_llama_cpp_at vs[4];
    int best = 0;
    if (!rc && p.vs_llama)
        rc = infer_vs_llama(m, tok, &r, vs, &best, &err);
    cli_free_model(m, tok, &dev);
    if (rc)
        return cli_report(&err);
    if (r.load.contended)
        fprintf(stderr, "bench infer: other processes used %.2f cores meanwhile: figures are low\n",
                r.load.other_cores);
    return infer_summary(&r, &mr, p.vs_llama ? &vs[best] : NULL, &err) ? cli_report(&err) : 0;
}
