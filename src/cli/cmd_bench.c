/* cmd_bench.c - `tempo bench`: parses options, calls the benchmark library
 * (src/bench/), prints its JSON lines. No measuring logic lives here.
 *
 *   tempo bench peak [--out FILE] [--seconds S]
 *   tempo bench kernels [--kernel gemm] [--presets LIST | --shape MxNxK[:ta:tb]]
 *                       [--threads LIST] [--seconds S]
 *   tempo bench train [--preset NAME] [...]  (cmd_bench_train.c)
 *   tempo bench infer --model RUN_DIR [...]   (cmd_bench_infer.c)
 */
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_gemm.h"
#include "bench/bench_ops.h"
#include "bench/hw_profile.h"
#include "bench/openblas.h"
#include "bench/peak.h"
#include "cli/cli.h"
#include "train/run_config.h"

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: tempo bench peak [--out FILE] [--seconds S]\n"
            "       tempo bench kernels [--kernel gemm|ops|all] [--presets A,B,...] [--vocab N]\n"
            "                           [--shape MxNxK[:ta:tb]] [--threads 1,2] [--seconds S]\n"
            "                           [--no-openblas]\n"
            "  peak     fp32 FMA peak and triad memory bandwidth at 1 and all threads;\n"
            "           writes the hardware profile (default: $TEMPO_HW_PROFILE, else\n"
            "           $XDG_CACHE_HOME/tempo/hardware.json or ~/.cache/tempo/hardware.json)\n"
            "           and prints it as a JSON line. --seconds: total time (default 4).\n"
            "  kernels  one JSON line per kernel, shape and thread count: GFLOP/s and the\n"
            "           share of the profile's FMA peak. --kernel ops: attention, RMSNorm,\n"
            "           activation, RoPE, head + cross-entropy, AdamW at the presets'\n"
            "           shapes, also as GB/s against the triad bandwidth; --kernel gemm:\n"
            "           every GEMM of the presets' steps, then the flop-weighted summary;\n"
            "           all (default): both. --presets: whose step to run (default\n"
            "           cpu-default,cpu-d256,cpu-d512; vocab --vocab, default 4097);\n"
            "           --threads: counts to run (default 1 and all); --seconds: per case\n"
            "           (default 0.3, best repetition kept). When libopenblas is installed,\n"
            "           each line also has cblas_sgemm's figure and the ratio tempo/openblas.\n"
            "       tempo bench train [--preset NAME] [--threads 1,2] [--vs-torch] [...]\n"
            "  train    the preset's whole training step: tokens/s, MFU, each op's time\n"
            "           share, serial share, peak memory; see tempo bench train --help.\n"
            "       tempo bench infer --model RUN_DIR [...]\n"
            "  infer    inference speed of a trained model (prefill, decode per batch, the\n"
            "           chip's bound); see tempo bench infer --help.\n"
            "       mpirun -np N tempo bench allreduce [--sizes ...] [--iters N]\n"
            "  allreduce  the gradient all-reduce's bandwidth by size across the job's ranks\n"
            "           against one rank's memcpy; see tempo bench allreduce --help.\n");
}

/* Finish the JSON value in w and print it as a line on stdout; frees its
 * buffer either way. */
static int print_json(jsonw *w, tempo_error *err)
{
    int rc = jsonw_finish(w, err);
    if (!rc)
        cli_emit_result(w->out, NULL);
    strbuf_free(w->out);
    return rc;
}

static int parse_positive(const char *flag, const char *text, double *v)
{
    return cli_parse_real(flag, text, 0, 1e6, 1, v);
}

static int bench_peak(int argc, char **argv)
{
    const char *out = NULL;
    hw_measure_options o = {.seconds = 4, .bandwidth = 1, .triad_array_bytes = 256u << 20};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            bench_usage(stdout);
            return 0;
        }
        if (i + 1 >= argc)
            return cli_usage_error("bench peak: %s: unknown option or missing value", a);
        if (!strcmp(a, "--out")) {
            out = argv[++i];
        } else if (!strcmp(a, "--seconds")) {
            if (parse_positive("--seconds", argv[++i], &o.seconds))
                return 2;
        } else {
            return cli_usage_error("bench peak: %s: unknown option", a);
        }
    }
    tempo_error err;
    tempo_error_clear(&err);
    char path[1024];
    if (out)
        snprintf(path, sizeof path, "%s", out);
    else if (hw_profile_path(path, sizeof path, &err))
        return cli_report(&err);

    fprintf(stderr, "bench peak: measuring FMA peak and triad bandwidth (~%.0f s)\n", o.seconds);
    hw_profile p;
    if (hw_profile_measure(&p, &o, &err))
        return cli_report(&err);
    if (p.contended)
        fprintf(stderr, "bench peak: other processes used %.2f cores meanwhile: figures are low\n",
                p.other_load_cores);
    if (hw_profile_save(&p, path, &err))
        return cli_report(&err);
    fprintf(stderr, "bench peak: wrote %s\n", path);
    strbuf json = {0};
    jsonw w;
    jsonw_init(&w, &json);
    hw_profile_write(&w, &p);
    return print_json(&w, &err) ? cli_report(&err) : 0;
}

typedef struct {
    const char *preset;
    int threads;
    double peak, bandwidth;
    int failed;          /* a line could not be written; err says why */
    tempo_error err;
} ops_emit_ctx;

static void emit_op(void *ctx, const bench_op_result *r)
{
    ops_emit_ctx *e = ctx;
    strbuf line = {0};
    jsonw w;
    jsonw_init(&w, &line);
    bench_op_json(&w, e->preset, e->threads, r, e->peak, e->bandwidth);
    if (!e->failed && print_json(&w, &e->err))
        e->failed = 1;
    strbuf_free(&line);
}

static int bench_kernels(int argc, char **argv)
{
    const char *kernel = "all", *presets = "cpu-default,cpu-d256,cpu-d512";
    double seconds = 0.3;
    long vocab = 4097;
    int threads[8], n_threads = 0, have_shape = 0, use_openblas = 1;
    bench_gemm_shape one;
    tempo_error err;
    tempo_error_clear(&err);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            bench_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--no-openblas")) {
            use_openblas = 0;
            continue;
        }
        if (i + 1 >= argc)
            return cli_usage_error("bench kernels: %s: unknown option or missing value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--kernel")) {
            kernel = v;
        } else if (!strcmp(a, "--presets")) {
            presets = v;
        } else if (!strcmp(a, "--vocab")) {
            long long x;
            if (cli_parse_int(a, v, 2, 1 << 20, &x))
                return 2;
            vocab = (long)x;
        } else if (!strcmp(a, "--shape")) {
            if (bench_gemm_parse_shape(v, &one, &err))
                return cli_report(&err);
            have_shape = 1;
        } else if (!strcmp(a, "--threads")) {
            n_threads = cli_parse_thread_list(v, threads, 8);
            if (n_threads < 1)
                return cli_usage_error("bench kernels: --threads '%s': expected e.g. 1,2", v);
        } else if (!strcmp(a, "--seconds")) {
            if (parse_positive("--seconds", v, &seconds))
                return 2;
        } else {
            return cli_usage_error("bench kernels: %s: unknown option", a);
        }
    }
    int run_gemm = !strcmp(kernel, "gemm") || !strcmp(kernel, "all");
    int run_ops = !strcmp(kernel, "ops") || !strcmp(kernel, "all");
    if (!run_gemm && !run_ops)
        return cli_usage_error("bench kernels: --kernel %s: unknown kernel (try: gemm, ops, all)",
                               kernel);
    if (run_ops && have_shape)
        return cli_usage_error("bench kernels: --shape is a GEMM shape; use --kernel gemm");
    enum { MAX_SHAPES = 256, MAX_PRESETS = 8 };
    static bench_gemm_shape shapes[MAX_SHAPES];
    static run_config cfgs[MAX_PRESETS];
    int n_shapes = 0, n_cfgs = 0;
    if (have_shape) {
        shapes[n_shapes++] = one;
    } else {
        char list[512], *save = NULL;
        snprintf(list, sizeof list, "%s", presets);
        for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            if (n_cfgs == MAX_PRESETS)
                return cli_usage_error("bench kernels: --presets: at most %d", MAX_PRESETS);
            run_config *rc = &cfgs[n_cfgs++];
            run_config_defaults(rc);
            if (run_config_load_preset(rc, name, &err))
                return cli_report(&err);
            rc->model.vocab_size = (int)vocab;
            if (run_config_finish(rc, &err))
                return cli_report(&err);
            n_shapes += bench_gemm_preset_shapes(rc, shapes + n_shapes, MAX_SHAPES - n_shapes);
        }
        if (n_shapes == 0)
            return cli_usage_error("bench kernels: --presets '%s': no shapes", presets);
    }
    if (n_threads == 0)
        n_threads = cli_default_thread_list(threads);

    hw_profile prof;
    int have_prof = hw_profile_load_or_measure(&prof, &err) == 0;
    if (!have_prof)
        fprintf(stderr, "tempo: %s (efficiency left null)\n", err.msg);
    else if (prof.contended)
        fprintf(stderr, "bench kernels: the hardware profile was measured on a busy machine; "
                        "efficiencies may read high (re-run 'tempo bench peak')\n");
    if (run_ops) {
        for (int c = 0; c < n_cfgs; c++)
            for (int t = 0; t < n_threads; t++) {
                ops_emit_ctx e = {cfgs[c].preset, threads[t],
                                  have_prof ? hw_profile_peak_gflops(&prof, threads[t]) : 0,
                                  have_prof ? hw_profile_bandwidth_gbs(&prof, threads[t]) : 0, 0, {{0}, 0}};
                if (bench_ops_run(&cfgs[c], threads[t], seconds, emit_op, &e, &err))
                    return cli_report(&err);
                if (e.failed)
                    return cli_report(&e.err);
            }
        if (!run_gemm)
            return 0;
    }
    gemm_context ctx;
    gemm_context_init(&ctx);
    const char *path = cpu_kernel_path_name(ctx.cfg.path);
    fprintf(stderr, "bench kernels: gemm, %s kernel, kc %d mc %d nc %d, %d shapes\n",
            path, ctx.cfg.kc, ctx.cfg.mc, ctx.cfg.nc, n_shapes);

    /* The FMA peak now, per thread count: other tenants of the host can
     * lower it below the profile's, which the efficiency_now figures show. */
    bench_gemm_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.n_threads = n_threads;
    for (int t = 0; t < n_threads; t++) {
        sum.threads[t] = threads[t];
        sum.peak_gflops[t] = have_prof ? hw_profile_peak_gflops(&prof, threads[t]) : 0;
        sum.peak_now_gflops[t] = peak_fma_gflops(ctx.cfg.path, threads[t], 0.3);
    }
    bench_openblas ob;
    int have_ob = use_openblas && bench_openblas_open(&ob) == 0;
    if (have_ob)
        fprintf(stderr, "bench kernels: comparing with OpenBLAS (%s)\n", ob.config);
    /* Pause between implementations: idle pool threads spin for a while
     * (OpenBLAS's up to ~0.1 s) and would steal the other's cores. */
    const struct timespec pause = {0, 150 * 1000 * 1000};

    for (int s = 0; s < n_shapes; s++)
        for (int t = 0; t < n_threads; t++) {
            bench_gemm_result r, rb;
            if (bench_gemm_measure(&ctx, &shapes[s], threads[t], seconds, &r, &err)) {
                gemm_context_free(&ctx);
                return cli_report(&err);
            }
            if (have_ob) {
                nanosleep(&pause, NULL);
                if (bench_openblas_measure(&ob, &shapes[s], threads[t], seconds, &rb, &err)) {
                    gemm_context_free(&ctx);
                    return cli_report(&err);
                }
                nanosleep(&pause, NULL);
            }
            strbuf line = {0};
            jsonw w;
            jsonw_init(&w, &line);
            bench_gemm_json(&w, &shapes[s], threads[t], &r, sum.peak_gflops[t], sum.peak_now_gflops[t], path,
                            have_ob ? &rb : NULL);
            if (print_json(&w, &err)) {
                gemm_context_free(&ctx);
                return cli_report(&err);
            }
            bench_gemm_summary_add(&sum, t, &shapes[s], &r, have_ob ? &rb : NULL);
        }
    if (have_ob)
        bench_openblas_close(&ob);
    gemm_context_free(&ctx);

    /* Summary: per thread count, total FLOPs / total best time. */
    strbuf json = {0};
    jsonw w;
    jsonw_init(&w, &json);
    bench_gemm_summary_json(&w, &sum, path);
    return print_json(&w, &err) ? cli_report(&err) : 0;
}

int cmd_bench(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        bench_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "peak"))
        return bench_peak(argc - 1, argv + 1);
    if (!strcmp(argv[1], "kernels"))
        return bench_kernels(argc - 1, argv + 1);
    if (!strcmp(argv[1], "infer"))
        return bench_infer_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "train"))
        return bench_train_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "allreduce"))
        return bench_allreduce_main(argc - 1, argv + 1);
    return cli_usage_error("bench: %s: unknown benchmark (try: peak, kernels, train, infer, allreduce)",
                           argv[1]);
}
