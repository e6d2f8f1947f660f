/* cmd_bench.c - `tempo bench`: parses options, calls the benchmark library
 * (src/bench/), prints its JSON lines. No measuring logic lives here.
 *
 *   tempo bench peak [--out FILE] [--seconds S]
 *   tempo bench kernels [--kernel gemm] [--presets LIST | --shape MxNxK[:ta:tb]]
 *                       [--threads LIST] [--seconds S] [--precision fp32|bf16|auto]
 *   tempo bench train [--preset NAME] [...]  (cmd_bench_train.c)
 *   tempo bench infer --model RUN_DIR [...]   (cmd_bench_infer.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_gemm.h"
#include "bench/bench_ops.h"
#include "bench/hw_profile.h"
#include "bench/openblas.h"
#include "bench/peak.h"
#include "cli/cli.h"
#include "run/run_config.h"

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: tempo bench peak [--out FILE] [--seconds S]\n"
            "       tempo bench kernels [--kernel gemm|ops|all] [--presets A,B,...] [--vocab N]\n"
            "                           [--shape MxNxK[:ta:tb]] [--threads 1,2] [--seconds S]\n"
            "                           [--no-openblas] [--precision fp32|bf16|auto]\n"
            "  peak     fp32 FMA peak and triad memory bandwidth at 1 and all threads (and\n"
            "           on AVX-512 BF16 the bf16 dot product's peak, peak_bf16_gflops: what\n"
            "           MFU is against with bf16_products=1);\n"
            "           writes the hardware profile (default: $TEMPO_HW_PROFILE, else\n"
            "           $XDG_CACHE_HOME/tempo/hardware.json or ~/.cache/tempo/hardware.json)\n"
            "           and prints it as a JSON line. --seconds: total time (default 4).\n"
            "           A profile measured under load (\"contended\": others' CPU time, or a\n"
            "           peak short of 0.75 x the physical cores x the one-thread peak) is\n"
            "           measured again whenever MFU next needs it.\n"
            "  kernels  one JSON line per kernel, shape and thread count: GFLOP/s and the\n"
            "           share of the profile's FMA peak. --kernel ops: attention, RMSNorm,\n"
            "           activation, RoPE, head + cross-entropy, AdamW at the presets'\n"
            "           shapes, also as GB/s against the triad bandwidth; --kernel gemm:\n"
            "           every GEMM of the presets' steps (each line: the threads the product\n"
            "           used and how it split them: one thread, shared B, owned columns;\n"
            "           at more than one thread also \"as_trained\": the product as training\n"
            "           runs it, a product a thread on each thread's share of the batch rows\n"
            "           or a whole Muon or head product, against OpenBLAS's better of its own\n"
            "           threads and that way), then the flop-weighted summary;\n"
            "           all (default): both. --presets: whose step to run (default\n"
            "           cpu-default,cpu-d256,cpu-d512; vocab --vocab, default 4097);\n"
            "           --threads: counts to run (default 1 and all); --seconds: per case\n"
            "           (default 0.3, best repetition kept). When libopenblas is installed,\n"
            "           each line also has cblas_sgemm's figure and the ratio tempo/openblas.\n"
            "           --precision: the products of the GEMMs, attention and the head\n"
            "           (default fp32; bf16: as training runs them with bf16_products,\n"
            "           efficiency against the profile's bf16 peak, refused where the CPU has\n"
            "           no AVX-512 BF16; auto: bf16 where the CPU has it). OpenBLAS (Debian's\n"
            "           build has no bf16 GEMM) stays cblas_sgemm, fp32: its ratio is then the\n"
            "           bf16 mode against fp32.\n"
            "       tempo bench peak|train --device cuda [...]\n"
            "  the GPU's ceilings and training step; see tempo bench train --device cuda --help\n"
            "       tempo bench train [--preset NAME] [--threads 1,2] [--vs-torch] [...]\n"
            "  train    the preset's whole training step: tokens/s, MFU, each op's time\n"
            "           share, serial share, peak memory; see tempo bench train --help.\n"
            "       tempo bench infer --model RUN_DIR [...]\n"
            "  infer    inference speed of a trained model (prefill, decode per batch, the\n"
            "           chip's bound); see tempo bench infer --help.\n"
            "       mpirun -np N tempo bench allreduce [--sizes ...] [--iters N]\n"
            "  allreduce  the gradient all-reduce's bandwidth by size across the job's ranks\n"
            "           against one rank's memcpy; see tempo bench allreduce --help.\n"
            "       tempo bench scale [--preset NAME] [--link SPEC] [--step-ms MS] [...]\n"
            "  scale    a projection (not a measurement) of the step over 1-1,024 ranks, with and\n"
            "           without the sharded optimizer and the overlap; see tempo bench scale --help.\n");
}

static int bench_peak(int argc, char **argv)
{
    const char *out = NULL;
    hw_measure_options o = {.seconds = 4, .bandwidth = 1, .triad_array_bytes = 256u << 20};
    const cli_flag flags[] = {
        CLI_F_STRING("--out", &out),
        CLI_F_REAL("--seconds", &o.seconds, 0, 1e6, 1),
    };
    int help, bad = cli_parse_flags("bench peak", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { bench_usage(stdout); return 0; }
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
    return cli_emit_jsonw(&w, &err) ? cli_report(&err) : 0;
}

typedef struct {
    const char *preset;
    int threads;
    double peak, peak_bf16, bandwidth;   /* the FMA and bf16 peaks: a line's by its precision */
    int failed;          /* a line could not be written; err says why */
    tempo_error err;
} ops_emit_ctx;

static void emit_op(void *ctx, const bench_op_result *r)
{
    ops_emit_ctx *e = ctx;
    strbuf line = {0};
    jsonw w;
    jsonw_init(&w, &line);
    bench_op_json(&w, e->preset, e->threads, r, r->bf16 ? e->peak_bf16 : e->peak, e->bandwidth);
    if (!e->failed && cli_emit_jsonw(&w, &e->err))
        e->failed = 1;
    strbuf_free(&line);
}

/* `bench kernels` options. */
typedef struct {
    const char *presets;
    double seconds;
    int vocab;
    int threads[BENCH_GEMM_MAX_THREADS], n_threads;
    int run_gemm, run_ops, use_openblas;
    int bf16;              /* --precision: the GEMM's bf16 mode */
    int have_shape;
    bench_gemm_shape one;  /* --shape */
} kernels_args;

/* -1: go on; else the exit code (0 after --help). */
static int kernels_parse(int argc, char **argv, kernels_args *k)
{
    const char *kernel = "all", *shape = NULL, *threads = NULL, *precision = "fp32";
    int no_openblas = 0;
    memset(k, 0, sizeof *k);
    k->presets = "cpu-default,cpu-d256,cpu-d512";
    k->seconds = 0.3;
    k->vocab = 4097;
    const cli_flag flags[] = {
        CLI_F_CHOICE("--kernel", &kernel, "gemm|ops|all"),
        CLI_F_STRING("--presets", &k->presets),
        CLI_F_INT("--vocab", &k->vocab, 2, 1 << 20),
        CLI_F_STRING("--shape", &shape),
        CLI_F_STRING("--threads", &threads),
        CLI_F_REAL("--seconds", &k->seconds, 0, 1e6, 1),
        CLI_F_SWITCH("--no-openblas", &no_openblas),
        CLI_F_CHOICE("--precision", &precision, "fp32|bf16|auto"),
    };
    int help, bad = cli_parse_flags("bench kernels", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { bench_usage(stdout); return 0; }
    k->use_openblas = !no_openblas;
    tempo_error err;
    tempo_error_clear(&err);
    if (shape && bench_gemm_parse_shape(shape, &k->one, &err))
        return cli_report(&err);
    k->have_shape = shape != NULL;
    if (threads && (k->n_threads = cli_parse_thread_list(threads, k->threads, BENCH_GEMM_MAX_THREADS)) < 1)
        return cli_usage_error("bench kernels: --threads '%s': expected e.g. 1,2", threads);
    k->run_gemm = !strcmp(kernel, "gemm") || !strcmp(kernel, "all");
    k->run_ops = !strcmp(kernel, "ops") || !strcmp(kernel, "all");
    if (k->run_ops && k->have_shape)
        return cli_usage_error("bench kernels: --shape is a GEMM shape; use --kernel gemm");
    if (k->n_threads == 0)
        k->n_threads = cli_default_thread_list(k->threads);
    if (strcmp(precision, "fp32")) {
        gemm_config cfg;
        gemm_config_init(&cfg);
        if (!strcmp(precision, "auto"))
            k->bf16 = cfg.can_bf16;
        else if (gemm_config_set_bf16(&cfg, 1, &err))
            return cli_usage_error("bench kernels: --precision bf16: %s", err.msg);
        else
            k->bf16 = 1;
    }
    return -1;
}

/* What to run: the presets' configurations and their GEMM shapes (or the
 * one --shape). Allocated: a run_config is large. */
enum { MAX_SHAPES = 256, MAX_PRESETS = 8 };
typedef struct {
    run_config cfgs[MAX_PRESETS];
    int n_cfgs;
    bench_gemm_shape shapes[MAX_SHAPES];
    int n_shapes;
} kernels_job;

/* -1: go on; else the exit code. */
static int kernels_load(const kernels_args *k, kernels_job *job)
{
    tempo_error err;
    tempo_error_clear(&err);
    if (k->have_shape) {
        job->shapes[job->n_shapes++] = k->one;
        return -1;
    }
    char list[512], *save = NULL;
    snprintf(list, sizeof list, "%s", k->presets);
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        if (job->n_cfgs == MAX_PRESETS)
            return cli_usage_error("bench kernels: --presets: at most %d", MAX_PRESETS);
        run_config *rc = &job->cfgs[job->n_cfgs++];
        if (cli_load_preset(name, NULL, 0, k->vocab, rc, &err))
            return cli_report(&err);
        job->n_shapes += bench_gemm_preset_shapes(rc, job->shapes + job->n_shapes, MAX_SHAPES - job->n_shapes);
    }
    if (job->n_shapes == 0)
        return cli_usage_error("bench kernels: --presets '%s': no shapes", k->presets);
    return -1;
}

/* The non-GEMM kernels of every preset at every thread count. */
static int kernels_ops(const kernels_args *k, const kernels_job *job, const hw_profile *prof)
{
    tempo_error err;
    tempo_error_clear(&err);
    for (int c = 0; c < job->n_cfgs; c++)
        for (int t = 0; t < k->n_threads; t++) {
            int th = k->threads[t];
            ops_emit_ctx e = {job->cfgs[c].preset, th, prof ? hw_profile_peak_gflops(prof, th) : 0,
                              prof ? hw_profile_matrix_gflops(prof, th, 1) : 0,
                              prof ? hw_profile_bandwidth_gbs(prof, th) : 0, 0, {{0}, 0}};
            if (bench_ops_run(&job->cfgs[c], th, k->bf16, k->seconds, emit_op, &e, &err))
                return cli_report(&err);
            if (e.failed)
                return cli_report(&e.err);
        }
    return 0;
}

/* Every shape at every thread count (beside OpenBLAS when it is there): a
 * line each, then the flop-weighted summary. */
static int kernels_gemm(const kernels_args *k, const kernels_job *job, const hw_profile *prof)
{
    tempo_error err;
    tempo_error_clear(&err);
    gemm_context ctx;
    gemm_context_init(&ctx);
    if (gemm_config_set_bf16(&ctx.cfg, k->bf16, &err)) {   /* kernels_parse checked it can */
        gemm_context_free(&ctx);
        return cli_report(&err);
    }
    const char *path = cpu_kernel_path_name(ctx.cfg.path);
    fprintf(stderr, "bench kernels: gemm, %s kernel, %s products, kc %d mc %d nc %d%s, %d shapes\n", path,
            k->bf16 ? "bf16" : "fp32", ctx.cfg.kc, ctx.cfg.mc, ctx.cfg.nc,
            ctx.cfg.direct_a ? ", A read in place where its rows spread" : "", job->n_shapes);
    /* The FMA peak now, per thread count: other tenants of the host can
     * lower it below the profile's, which the efficiency_now figures show. */
    bench_gemm_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.n_threads = k->n_threads;
    sum.bf16 = k->bf16;
    for (int t = 0; t < k->n_threads; t++) {
        sum.threads[t] = k->threads[t];
        sum.peak_gflops[t] = prof ? hw_profile_matrix_gflops(prof, k->threads[t], k->bf16) : 0;
        sum.peak_now_gflops[t] = k->bf16 ? peak_bf16_gflops(k->threads[t], 0.3)
                                         : peak_fma_gflops(ctx.cfg.path, k->threads[t], 0.3);
    }
    bench_openblas ob;
    int have_ob = k->use_openblas && bench_openblas_open(&ob) == 0;
    if (have_ob)
        fprintf(stderr, "bench kernels: comparing with OpenBLAS (%s)%s\n", ob.config,
                k->bf16 ? ", its sgemm in fp32 (no bf16 GEMM in it)" : "");
    else if (k->use_openblas)
        fprintf(stderr, "bench kernels: no libopenblas.so.0 here: no OpenBLAS figures (Debian: apt-get install "
                        "libopenblas0)\n");
    int rc = 0;
    for (int s = 0; s < job->n_shapes && !rc; s++)
        for (int t = 0; t < k->n_threads && !rc; t++) {
            bench_gemm_result r, rb;
            rc = bench_openblas_compare(&ctx, have_ob ? &ob : NULL, &job->shapes[s], k->threads[t], k->seconds,
                                        &r, &rb, &err);
            if (rc)
                break;
            bench_gemm_as_trained at;   /* more than one thread: also as training runs it */
            int trained = k->threads[t] > 1;
            if (trained && bench_openblas_compare_trained(have_ob ? &ob : NULL, &job->shapes[s], k->threads[t],
                                                          k->bf16, k->seconds, have_ob ? &rb : NULL, &at, &err)) {
                rc = -1;
                break;
            }
            strbuf line = {0};
            jsonw w;
            jsonw_init(&w, &line);
            bench_gemm_json(&w, &job->shapes[s], k->threads[t], &r, sum.peak_gflops[t], sum.peak_now_gflops[t],
                            path, have_ob ? &rb : NULL, trained ? &at : NULL);
            rc = cli_emit_jsonw(&w, &err);
            bench_gemm_summary_add(&sum, t, &job->shapes[s], &r, have_ob ? &rb : NULL);
            if (trained)
                bench_gemm_summary_add_trained(&sum, t, &job->shapes[s], &at);
        }
    if (have_ob)
        bench_openblas_close(&ob);
    gemm_context_free(&ctx);
    if (!rc) {
        strbuf json = {0};
        jsonw w;
        jsonw_init(&w, &json);
        bench_gemm_summary_json(&w, &sum, path);
        rc = cli_emit_jsonw(&w, &err);
    }
    return rc ? cli_report(&err) : 0;
}

static int bench_kernels(int argc, char **argv)
{
    kernels_args k;
    int rc = kernels_parse(argc, argv, &k);
    if (rc >= 0)
        return rc;
    kernels_job *job = calloc(1, sizeof *job);
    if (!job) {
        fprintf(stderr, "tempo: bench kernels: out of memory\n");
        return 1;
    }
    rc = kernels_load(&k, job);
    if (rc < 0) {
        tempo_error err;
        tempo_error_clear(&err);
        hw_profile prof;
        int have_prof = hw_profile_load_or_measure(&prof, &err) == 0;
        if (!have_prof)
            fprintf(stderr, "tempo: %s (efficiency left null)\n", err.msg);
        else if (prof.contended)
            fprintf(stderr, "bench kernels: the hardware profile was measured on a busy machine; "
                            "efficiencies may read high (re-run 'tempo bench peak')\n");
        rc = k.run_ops ? kernels_ops(&k, job, have_prof ? &prof : NULL) : 0;
        if (!rc && k.run_gemm)
            rc = kernels_gemm(&k, job, have_prof ? &prof : NULL);
    }
    free(job);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        bench_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    int cuda = 0; /* --device cuda: the GPU's benchmarks (cmd_bench_cuda.c) */
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--device")) {
            if (strcmp(argv[i + 1], "cuda") && strcmp(argv[i + 1], "cpu"))
                return cli_usage_error("bench: --device %s: expected cpu or cuda", argv[i + 1]);
            cuda = !strcmp(argv[i + 1], "cuda");
        }
    if (cuda && !strcmp(argv[1], "peak"))
        return bench_peak_cuda_main(argc - 1, argv + 1);
    if (cuda && !strcmp(argv[1], "train"))
        return bench_train_cuda_main(argc - 1, argv + 1);
    if (cuda && strcmp(argv[1], "infer"))
        return cli_usage_error("bench %s: --device cuda: only peak, train and infer run on the GPU so far", argv[1]);
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
    if (!strcmp(argv[1], "scale"))
        return bench_scale_main(argc - 1, argv + 1);
    return cli_usage_error("bench: %s: unknown benchmark (try: peak, kernels, train, infer, allreduce, scale)",
                           argv[1]);
}
