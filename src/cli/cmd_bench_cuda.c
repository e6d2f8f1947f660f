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
            "  The CUDA path has not yet passed scripts/device_check.sh on hardware: until it\n"
            "  has, treat its figures as unverified.\n");
}

static int open_gpu(gpu **g, tempo_error *err) { return gpu_open(g, gpu_backend_from_env(), err); }

int bench_peak_cuda_main(int argc, char **argv)
{
    long long n = 8192, copy_mb = 2048, reps = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--device")) {
            i++;
            continue;
        }
        if (i + 1 >= argc)
            return cli_usage_error("bench peak: %s: unknown option or missing value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--n")) {
            if (cli_parse_int(a, v, 64, 32768, &n)) return 2;
        } else if (!strcmp(a, "--copy-mb")) {
            if (cli_parse_int(a, v, 1, 65536, &copy_mb)) return 2;
        } else if (!strcmp(a, "--reps")) {
            if (cli_parse_int(a, v, 1, 1000, &reps)) return 2;
        } else {
            return cli_usage_error("bench peak: %s: unknown option", a);
        }
    }
    tempo_error err;
    tempo_error_clear(&err);
    gpu *g;
    if (open_gpu(&g, &err))
        return cli_report(&err);
    fprintf(stderr, "bench peak: %s: %lldx%lldx%lld products and a %lld MB copy\n", gpu_get_info(g)->name, n, n, n,
            copy_mb);
    peak_cuda p;
    int rc = peak_cuda_measure(g, (int)n, (size_t)copy_mb << 20, (int)reps, &p, &err);
    gpu_close(g);
    if (rc)
        return cli_report(&err);
    strbuf json = {0};
    jsonw w;
    jsonw_init(&w, &json);
    peak_cuda_write(&w, &p);
    return cli_emit_jsonw(&w, &err) ? cli_report(&err) : 0;
}

int bench_train_cuda_main(int argc, char **argv)
{
    const char *preset = "gpu-gpt2s", *precision = "bf16";
    const char *sets[64];
    int n_sets = 0, vs_torch = 0;
    long long vocab = 8192, steps = 10, warmup = 3, seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--vs-torch")) {
            vs_torch = 1;
            continue;
        }
        if (i + 1 >= argc)
            return cli_usage_error("bench train: %s: unknown option or missing value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--device")) {
            continue;
        } else if (!strcmp(a, "--preset")) {
            preset = v;
        } else if (!strcmp(a, "--set")) {
            if (n_sets == 64)
                return cli_usage_error("bench train: too many --set");
            sets[n_sets++] = v;
        } else if (!strcmp(a, "--precision")) {
            if (strcmp(v, "bf16") && strcmp(v, "fp32"))
                return cli_usage_error("bench train: --precision %s: expected bf16 or fp32", v);
            precision = v;
        } else if (!strcmp(a, "--vocab")) {
            if (cli_parse_int(a, v, 2, 1 << 20, &vocab)) return 2;
        } else if (!strcmp(a, "--steps")) {
            if (cli_parse_int(a, v, 1, 100000, &steps)) return 2;
        } else if (!strcmp(a, "--warmup")) {
            if (cli_parse_int(a, v, 1, 100000, &warmup)) return 2;
        } else if (!strcmp(a, "--seed")) {
            if (cli_parse_int(a, v, 0, 1 << 30, &seed)) return 2;
        } else {
            return cli_usage_error("bench train: %s: unknown option", a);
        }
    }
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    if (cli_load_preset(preset, sets, n_sets, (int)vocab, &cfg, &err))
        return cli_report(&err);
    gpu *g;
    if (open_gpu(&g, &err))
        return cli_report(&err);
    int bf16 = !strcmp(precision, "bf16");
    int emu = gpu_get_info(g)->backend == GPU_EMULATOR;
    peak_cuda pk;
    fprintf(stderr, "bench train: measuring the GPU's matrix rate\n");
    if (peak_cuda_measure(g, emu ? 64 : 8192, emu ? 1 << 20 : (size_t)1 << 30, emu ? 1 : 5, &pk, &err)) {
        gpu_close(g);
        return cli_report(&err);
    }
    bench_train_cuda_options o = {.cfg = &cfg, .steps = (int)steps, .warmup_steps = (int)warmup,
                                  .precision = bf16 ? MODEL_CUDA_BF16 : MODEL_CUDA_FP32,
                                  .seed = (unsigned long long)seed,
                                  .peak_tflops = bf16 ? pk.bf16_tflops : pk.fp32_tflops};
    fprintf(stderr, "bench train: %s on %s, %s, %lld+%lld steps of %d tokens\n", cfg.preset, gpu_get_info(g)->name,
            precision, warmup, steps, cfg.batch_size * cfg.model.context);
    bench_train_cuda_result r;
    int rc = bench_train_cuda_run(g, &o, &r, &err);
    gpu_close(g);
    if (rc)
        return cli_report(&err);
    strbuf json = {0};
    jsonw w;
    jsonw_init(&w, &json);
    bench_train_cuda_write(&w, &cfg, &r);
    if (cli_emit_jsonw(&w, &err))
        return cli_report(&err);
    if (!vs_torch)
        return 0;
    double tps = torch_reference_gpu(&cfg, (int)steps, (int)warmup, precision);
    strbuf js = {0};
    jsonw_init(&w, &js);
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "bench", "train_summary");
    jsonw_field_string(&w, "device", "cuda");
    jsonw_field_string(&w, "preset", cfg.preset);
    jsonw_field_digits(&w, "tempo_tokens_per_s", r.tokens_per_second, 0);
    if (tps > 0) {
        jsonw_field_digits(&w, "torch_tokens_per_s", tps, 0);
        jsonw_field_digits(&w, "tempo_vs_torch", r.tokens_per_second / tps, 3);
    } else {
        jsonw_field_null(&w, "torch_tokens_per_s");
        jsonw_field_null(&w, "tempo_vs_torch");
    }
    jsonw_field_digits(&w, "mfu", r.mfu, 4);
    jsonw_object_end(&w);
    return cli_emit_jsonw(&w, &err) ? cli_report(&err) : 0;
}
