/* cmd_bench_cuda.c - the GPU's benchmarks, dispatched by cmd_bench when
 * --device cuda is given:
 *   tempo bench peak --device cuda [--n N] [--copy-mb MB] [--reps R]
 *   tempo bench train --device cuda [--preset NAME] [--precision bf16|fp32] [--vs-torch] [...]
 * Options in, library calls (bench/peak_cuda.h, bench/bench_train_cuda.h),
 * JSON lines out. No measuring logic here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_train_cuda.h"
#include "bench/peak_cuda.h"
#include "cli/cli.h"
#include "bench/torch_reference.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/json_write.h"
#include "kernels/cuda/gpu.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tempo bench peak --device cuda [--n N] [--copy-mb MB] [--reps R]\n"
            "  The GPU's measured ceilings: cuBLASLt's rate on an N x N x N product (default\n"
            "  8192; bf16 operands with fp32 accumulation, TF32, exact fp32) on random data and\n"
            "  the device-to-device copy bandwidth of a --copy-mb buffer (default 2048; read +\n"
            "  written bytes), medians of --reps timed runs (default 10). One JSON line.\n"
            "usage: tempo bench train --device cuda [--preset NAME] [--set KEY=VALUE]... [--vocab N]\n"
            "                         [--precision bf16|fp32] [--steps N] [--warmup N] [--seed N]\n"
            "                         [--vs-torch]\n"
            "  The preset's training step on the GPU as `tempo train --device cuda` runs it\n"
            "  (forward, backward, gradient norm, optimizer) on random tokens: tokens/s, model\n"
            "  TFLOP/s, MFU against the matrix rate measured in the same run (bf16 or exact fp32,\n"
            "  as --precision), the split of one synchronised step, device memory. Defaults:\n"
            "  preset gpu-gpt2s, vocab 8192, bf16, 10 steps after 3 warm-up steps.\n"
            "  --vs-torch also runs scripts/torch_reference_cuda.py (PyTorch eager, bf16\n"
            "  autocast, fused attention and AdamW) on the same shape and batch ($TEMPO_PYTHON,\n"
            "  else python3) and prints tempo/torch tokens/s.\n"
            "  Set TEMPO_GPU_EMULATOR=1 to run on the CPU emulator (tiny shapes only).\n"
            "  The CUDA path passed scripts/device_check.sh on an H200 on 2026-12-04; what\n"
            "  changed since has run on the emulator only (docs/gpu.md says what).\n");
}

static int open_gpu(gpu **g, tempo_error *err) { return gpu_open(g, gpu_backend_from_env(), err); }

int bench_peak_cuda_main(int argc, char **argv)
{
    const char *device = "cuda";   /* cmd_bench chose this path by it */
    int n = 8192, copy_mb = 2048, reps = 10;
    const cli_flag flags[] = {
        CLI_F_CHOICE("--device", &device, "cpu|cuda"),
        CLI_F_INT("--n", &n, 64, 32768),
        CLI_F_INT("--copy-mb", &copy_mb, 1, 65536),
        CLI_F_INT("--reps", &reps, 1, 1000),
    };
    int help, bad = cli_parse_flags("bench peak", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return 0; }
    tempo_error err;
    tempo_error_clear(&err);
    gpu *g;
    if (open_gpu(&g, &err))
        return cli_report(&err);
    fprintf(stderr, "bench peak: %s: %dx%dx%d products and a %d MB copy\n", gpu_get_info(g)->name, n, n, n, copy_mb);
    peak_cuda p;
    int rc = peak_cuda_measure(g, n, (size_t)copy_mb << 20, reps, &p, &err);
    gpu_close(g);
    if (rc)
        return cli_report(&err);
    strbuf json = {0};
    jsonw w;
    jsonw_init(&w, &json);
    peak_cuda_write(&w, &p);
    return cli_emit_jsonw(&w, &err) ? cli_report(&err) : 0;
}

/* `bench train --device cuda` options. */
typedef struct {
    const char *preset, *precision, *sets[64];
    int n_sets, vs_torch, vocab, steps, warmup, seed;
} train_cuda_args;

/* -1: go on; else the exit code (0 after --help). */
static int train_cuda_parse(int argc, char **argv, train_cuda_args *t)
{
    const char *device = "cuda";   /* cmd_bench chose this path by it */
    *t = (train_cuda_args){.preset = "gpu-gpt2s", .precision = "bf16", .vocab = 8192, .steps = 10, .warmup = 3,
                           .seed = 1};
    const cli_flag flags[] = {
        CLI_F_CHOICE("--device", &device, "cpu|cuda"),
        CLI_F_STRING("--preset", &t->preset),
        CLI_F_LIST("--set", t->sets, &t->n_sets, 64),
        CLI_F_CHOICE("--precision", &t->precision, "bf16|fp32"),
        CLI_F_INT("--vocab", &t->vocab, 2, 1 << 20),
        CLI_F_INT("--steps", &t->steps, 1, 100000),
        CLI_F_INT("--warmup", &t->warmup, 1, 100000),
        CLI_F_INT("--seed", &t->seed, 0, 1 << 30),
        CLI_F_SWITCH("--vs-torch", &t->vs_torch),
    };
    int help, bad = cli_parse_flags("bench train", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return 0; }
    return -1;
}

/* --vs-torch: PyTorch's speed on the same step and the ratio, as a summary line. */
static int train_cuda_vs_torch(const run_config *cfg, const train_cuda_args *t, const bench_train_cuda_result *r,
                               tempo_error *err)
{
    double tps = torch_reference_gpu(cfg, t->steps, t->warmup, t->precision);
    strbuf js = {0};
    jsonw w;
    jsonw_init(&w, &js);
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "bench", "train_summary");
    jsonw_field_string(&w, "device", "cuda");
    jsonw_field_string(&w, "preset", cfg->preset);
    jsonw_field_digits(&w, "tempo_tokens_per_s", r->tokens_per_second, 0);
    if (tps > 0) {
        jsonw_field_digits(&w, "torch_tokens_per_s", tps, 0);
        jsonw_field_digits(&w, "tempo_vs_torch", r->tokens_per_second / tps, 3);
    } else {
        jsonw_field_null(&w, "torch_tokens_per_s");
        jsonw_field_null(&w, "tempo_vs_torch");
    }
    jsonw_field_digits(&w, "mfu", r->mfu, 4);
    jsonw_object_end(&w);
    return cli_emit_jsonw(&w, err);
}

int bench_train_cuda_main(int argc, char **argv)
{
    train_cuda_args t;
    int rc = train_cuda_parse(argc, argv, &t);
    if (rc >= 0)
        return rc;
    const char *precision = t.precision;
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    if (cli_load_preset(t.preset, t.sets, t.n_sets, t.vocab, &cfg, &err))
        return cli_report(&err);
    gpu *g;
    if (open_gpu(&g, &err))
        return cli_report(&err);
    int bf16 = !strcmp(precision, "bf16");
    peak_cuda pk;
    fprintf(stderr, "bench train: measuring the GPU's matrix rate\n");
    if (peak_cuda_measure_startup(g, &pk, &err)) {
        gpu_close(g);
        return cli_report(&err);
    }
    bench_train_cuda_options o = {.cfg = &cfg, .steps = t.steps, .warmup_steps = t.warmup,
                                  .precision = bf16 ? MODEL_CUDA_BF16 : MODEL_CUDA_FP32,
                                  .seed = (unsigned long long)t.seed,
                                  .peak_tflops = bf16 ? pk.bf16_tflops : pk.fp32_tflops};
    fprintf(stderr, "bench train: %s on %s, %s, %d+%d steps of %d tokens\n", cfg.preset, gpu_get_info(g)->name,
            precision, t.warmup, t.steps, cfg.batch_size * cfg.model.context);
    bench_train_cuda_result r;
    rc = bench_train_cuda_run(g, &o, &r, &err);
    gpu_close(g);
    if (rc)
        return cli_report(&err);
    strbuf json = {0};
    jsonw w;
    jsonw_init(&w, &json);
    bench_train_cuda_write(&w, &cfg, &r);
    if (cli_emit_jsonw(&w, &err))
        return cli_report(&err);
    return t.vs_torch && train_cuda_vs_torch(&cfg, &t, &r, &err) ? cli_report(&err) : 0;
}
