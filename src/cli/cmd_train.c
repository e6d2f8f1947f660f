/* cmd_train.c - `tempo train`: parse flags, install the SIGINT/SIGTERM flag,
 * call train_run, print the result. The only file-scope mutable variable in
 * tempo is the signal flag below: a signal handler can reach nothing else. */
#include <signal.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/hw_profile.h"
#include "bench/peak_cuda.h"
#include "cli/cli.h"
#include "core/number.h"
#include "core/thread_pin.h"
#include "core/timer.h"
#include "proc/self.h"
#include "kernels/cuda/gpu.h"
#include "train/run_result.h"
#include "model/model.h"
#include "train/trainer.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* SIGINT and SIGTERM ask the run to checkpoint and stop (on_signal). */
static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo train --data DATA_DIR --out RUN_DIR (--budget DURATION | --steps N) [options]\n"
        "  --data DIR        output of 'tempo prepare' (train.tok, val.tok, tokenizer.tiktoken)\n"
        "  --out DIR         run folder: model.safetensors, checkpoint.safetensors, metrics.jsonl, result.json\n"
        "  --budget D        wall-clock training budget: 90s, 10m, 1h30m (startup and final eval not charged)\n"
        "  --steps N         stop after N steps; the lr schedule then follows steps, not time (reproducible)\n"
        "  --preset NAME     configs/NAME.conf on top of the defaults (default: none, i.e. cpu-default)\n"
        "  --set key=value   override one config key (repeatable); keys below\n"
        "  --seed N          random seed (default 1)\n"
        "  --threads N       threads (default: all cores)\n"
        "  --pin-threads     bind each thread to its own core (OMP_PROC_BIND=close, OMP_PLACES=cores)\n"
        "  --resume          continue RUN_DIR's checkpoint (same seed/threads => identical weights); one whose\n"
        "                    sha256 does not match (a damaged file) is refused, never trained on\n"
        "  --resume-other-world  --resume a checkpoint written by another number of MPI ranks (not bit-identical)\n"
        "  --memory-store DIR  where runs share one copy of each count memory they build (hard links;\n"
        "                    default DATA_DIR/memory-store; none: the run keeps its own memory.bin). Every run\n"
        "                    still builds its memory in its budget; the same bytes are then kept once. An entry\n"
        "                    no run links any more is removed by the next run that shares.\n"
        "  --eval-stride N   stride of the final val bpb (default: context/2)\n"
        "  --no-eval         skip the final full validation\n"
        "  --val-limit N     score only the first N val tokens (quick experiments; not the official score)\n"
        "  --stop-at-step N  testing: checkpoint and stop after step N, as an interruption would\n"
        "  --inject-nan-at-step N  testing: treat step N's loss as NaN once (divergence guard)\n"
        "  --device cpu|cuda train on the CPU (default) or on an NVIDIA GPU: the steps, evaluations and the\n"
        "                    mixer's fit run there (one process, one GPU; TEMPO_GPU_DEVICE picks it); the\n"
        "                    files are the same. MFU is against the GPU's bf16 (or fp32) matrix rate, measured\n"
        "                    at startup. The CUDA path passed the device check on an H200 on 2026-12-04; the\n"
        "                    kernels changed since have run on the emulator only, and its speed is not yet\n"
        "                    tuned (docs/gpu.md lists both).\n"
        "  --precision bf16|fp32|auto  on a GPU: bf16 operands with fp32 master weights (default; auto), or fp32\n"
        "                    throughout. On a CPU: the config key bf16_products (the preset's when not given;\n"
        "                    cpu-default's is auto): bf16 puts the matrix products' operands (attention's\n"
        "                    too) in bf16 with fp32 sums, on CPUs with AVX-512 BF16 only (elsewhere refused);\n"
        "                    auto does so where the CPU can and runs fp32 elsewhere, saying which; fp32\n"
        "                    never does. result.json's \"precision\" says what ran\n"
        "SIGINT/SIGTERM: the run checkpoints and stops; --resume continues it. A new run checkpoints at step 0\n"
        "  too (before the count memory), so a run killed before its first checkpoint_every resumes from the\n"
        "  start, reusing RUN_DIR/memory.bin when it was built from the same data and settings.\n"
        "A train or --resume removes the NAME.tmp.<pid> files that killed runs left in RUN_DIR, and says how many.\n"
        "Several processes: mpirun -np N tempo train ... (tempo --version says whether MPI is built in): each\n"
        "  rank trains batch_size/N sequences of every global batch, gradients are averaged over the ranks,\n"
        "  rank 0 keeps the clock, builds the count memory, evaluates and writes the run folder; --threads\n"
        "  defaults to the cores divided among the ranks on the machine. Partial: see docs/distributed.md.\n"
        "result.json (also the last line of stdout): val bpb and its parts, tokens/s, MFU, and phase_seconds:\n"
        "  where this session's train_seconds went (steps, val_slices, checkpoints, snapshots, memory_build,\n"
        "  mixer_fit, other), adding up to it.\n"
        "Ranges: budget up to 720h (30 days), steps up to 2^40, threads 1 to 1024, seed 0 to 2^53.\n"
        "config keys (name, default, meaning):\n");
    run_config_print_keys(f);
}

/* The stop flag (SIGINT, SIGTERM) and the progress stream: rank 0's alone. */
static void attach_run(train_options *o, const dist_context *dist)
{
    o->stop_flag = &stop_requested;
    o->progress = dist->rank == 0 ? stderr : NULL;   /* one voice: rank 0's */
    o->progress_tty = isatty(2);
    catch_signals();
}

/* --threads' default (all cores, shared among the ranks on this machine), set
 * for OpenMP; 1 when every thread is bound to a core of its own. */
static int setup_threads(train_options *o, const dist_context *dist, int pin)
{
    if (o->threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        long ranks_here = dist->world > 1 && local ? strtol(local, NULL, 10) : 1;
        if (ranks_here < 1) ranks_here = 1;
        o->threads = n / ranks_here > 0 ? (int)(n / ranks_here) : 1;
    }
    omp_set_num_threads(o->threads);
    int cpus[256];
    int team = thread_pin_read(cpus, 256);
    int pinned = team <= 256 && thread_pin_all_distinct(cpus, team);
    if (pin && !pinned)
        fprintf(stderr, "tempo: note: --pin-threads: the threads are not each bound to their own "
                        "core (OMP_PROC_BIND=%s)\n", getenv("OMP_PROC_BIND") ? getenv("OMP_PROC_BIND") : "unset");
    return pinned;
}

/* The device and the MFU's denominator: on cuda the GPU opened (*g) and its
 * matrix rate measured now; on the CPU the hardware profile's peak. 0, or
 * the exit code after saying why. */
static int setup_device(train_options *o, const char *device, const char *precision, const dist_context *dist,
                        gpu **g, tempo_error *err)
{
    *g = NULL;
    if (!strcmp(device, "cuda")) {
        if (dist->world > 1)
            return cli_usage_error("train --device cuda under mpirun: one process per GPU is not built yet");
        if (gpu_open(g, gpu_backend_from_env(), err))
            return cli_report(err);
        peak_cuda pk;   /* the MFU denominator, measured here and now */
        if (peak_cuda_measure_startup(*g, &pk, err)) {
            gpu_close(*g);
            *g = NULL;
            return cli_report(err);
        }
        o->gpu = *g;
        o->gpu_bf16 = !strcmp(precision, "bf16");
        o->peak_gflops = 1e3 * (o->gpu_bf16 ? pk.bf16_tflops : pk.fp32_tflops);
        fprintf(stderr, "tempo: training on %s (%s; measured %.0f TFLOP/s)\n", gpu_get_info(*g)->name, precision,
                o->peak_gflops / 1e3);
        return 0;
    }
    hw_profile hw;
    if (hw_profile_load_or_measure(&hw, err) == 0)
        o->peak_gflops = hw_profile_matrix_gflops(&hw, o->threads, model_config_products_bf16(&o->cfg.model));
    else
        fprintf(stderr, "tempo: note: no hardware profile (%s); mfu will be null\n", err->msg);
    return 0;
}

/* The run's config (the defaults, the preset, the --set pairs) and the
 * commit of this tempo (recorded in model.safetensors for exports) into
 * commit, o->commit pointing at it when known. */
static int load_config(train_options *o, const char *preset, const char *const *sets, int n_sets, char *commit,
                       size_t n, tempo_error *err)
{
    char exe[1024];
    tempo_error e;
    if (proc_self_exe(exe, sizeof exe, &e) == 0) {
        proc_git_commit(exe, commit, n);
        o->commit = commit;
    }
    run_config_defaults(&o->cfg);
    if (preset && run_config_load_preset(&o->cfg, preset, err))
        return -1;
    for (int i = 0; i < n_sets; i++)
        if (run_config_set_pair(&o->cfg, sets[i], err))
            return -1;
    if (o->resume && n_sets)
        fprintf(stderr, "tempo: note: --resume uses the checkpoint's config; --set values are ignored\n");
    return 0;
}

/* Rank 0's report of a finished run: the scorecard on stderr, the JSON line
 * on stdout and in RUN_DIR/result.json; 130 for an interrupted run. */
static int report(train_result *r, const train_options *o, int pinned)
{
    tempo_error err;
    tempo_error_clear(&err);
    double cached_peak = r->peak_gflops, mfu = r->mfu;
    if (run_result_drop_impossible_mfu(r))
        fprintf(stderr, "tempo: note: MFU came out at %.0f %% of the cached hardware profile's peak (%.1f GFLOP/s), "
                        "which was measured under load; mfu is null (re-measure with tempo bench peak)\n",
                100 * mfu, cached_peak);
    strbuf js = {0};
    if (run_result_json(r, o, pinned, &js, &err)) {
        strbuf_free(&js);
        return cli_report(&err);
    }
    char card[400];
    run_result_scorecard(r, card, sizeof card);
    fprintf(stderr, "%s\n", card);
    int rc = cli_emit_result(&js, o->out_dir);
    strbuf_free(&js);
    if (rc) return rc;
    if (r->interrupted && stop_requested) {
        fprintf(stderr, "tempo: interrupted: checkpoint saved in %s; continue with --resume\n", o->out_dir);
        return 130;
    }
    return 0;
}

/* Sets *same_everywhere when the exit code is one every rank reaches alike
 * (flags, config, the trainer's setup checks): the job then ends without an
 * abort, which could kill rank 0 before it says why. */
static int train_command(int argc, char **argv, dist_context *dist, int *same_everywhere)
{
    *same_everywhere = 1;
    train_options o;
    memset(&o, 0, sizeof o);
    o.dist = dist;
    o.seed = 1;
    o.final_eval = 1;
    const char *preset = NULL; /* the built-in defaults are cpu-default */
    const char *sets[256];
    const char *device = "cpu", *precision = NULL;   /* NULL: the device's default */
    int n_sets = 0, pin = 0, other_world = 0, no_eval = 0;
    long long steps = 0, seed = 1, val_limit = 0, stop_at = 0, nan_at = 0;
    tempo_error err;
    tempo_error_clear(&err);
    const cli_flag flags[] = {
        CLI_F_STRING("--data", &o.data_dir),
        CLI_F_STRING("--out", &o.out_dir),
        CLI_F_STRING("--memory-store", &o.memory_store),
        CLI_F_STRING("--preset", &preset),
        CLI_F_LIST("--set", sets, &n_sets, 256),
        CLI_F_DURATION("--budget", &o.budget_s),
        CLI_F_INT64("--steps", &steps, 1, NUMBER_MAX_STEPS),
        CLI_F_INT64("--seed", &seed, 0, NUMBER_MAX_SEED),
        CLI_F_INT("--threads", &o.threads, 1, NUMBER_MAX_THREADS),
        CLI_F_INT("--eval-stride", &o.eval_stride, 1, 1 << 20),
        CLI_F_INT64("--val-limit", &val_limit, 2, NUMBER_MAX_STEPS),
        CLI_F_INT64("--stop-at-step", &stop_at, 1, NUMBER_MAX_STEPS),
        CLI_F_INT64("--inject-nan-at-step", &nan_at, 0, NUMBER_MAX_STEPS),
        CLI_F_CHOICE("--device", &device, "cpu|cuda"),
        CLI_F_CHOICE("--precision", &precision, "bf16|fp32|auto"),
        CLI_F_SWITCH("--resume", &o.resume),
        CLI_F_SWITCH("--resume-other-world", &other_world),
        CLI_F_SWITCH("--no-eval", &no_eval),
        CLI_F_SWITCH("--pin-threads", &pin),   /* set up by main.c before libgomp loads */
    };
    int help, bad = cli_parse_flags("train", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return 0; }
    o.max_steps = steps;
    o.seed = (uint64_t)seed;
    o.val_limit = val_limit;
    o.stop_at_step = stop_at;
    o.inject_nan_step = nan_at;
    if (other_world) o.resume = o.resume_other_world = 1;
    if (no_eval) o.final_eval = 0;
    if (!o.data_dir) return cli_usage_error("train: --data DATA_DIR is required");
    if (!o.out_dir) return cli_usage_error("train: --out RUN_DIR is required");
    if (o.budget_s <= 0 && o.max_steps <= 0 && !o.resume)
        return cli_usage_error("train: --budget DURATION or --steps N is required");
    /* On a CPU --precision is the config key bf16_products, applied after any --set */
    if (precision && strcmp(device, "cuda")) {
        if (n_sets >= 256)
            return cli_usage_error("train: too many --set");
        sets[n_sets++] = !strcmp(precision, "bf16") ? "bf16_products=1"
                         : !strcmp(precision, "fp32") ? "bf16_products=0" : "bf16_products=auto";
    }
    if (!precision || !strcmp(precision, "auto"))
        precision = "bf16";
    char commit[128];
    if (load_config(&o, preset, sets, n_sets, commit, sizeof commit, &err))
        return cli_report(&err);
    if (strcmp(device, "cuda") && o.cfg.model.bf16_products == MODEL_PRODUCTS_BF16 && !model_bf16_available())
        return cli_usage_error("train: bf16_products=1 (--precision bf16) needs a CPU with AVX-512 BF16 and the avx512 "
                               "kernel path; this one has not (leave it at 0)");
    int pinned = setup_threads(&o, dist, pin);
    gpu *g = NULL;
    int rc = setup_device(&o, device, precision, dist, &g, &err);
    if (rc)
        return rc;
    tempo_error_clear(&err);
    attach_run(&o, dist);

    train_result r;
    *same_everywhere = 0;
    rc = train_run(&o, &r, &err);
    gpu_close(g);
    if (rc && r.failed_in_setup)
        *same_everywhere = 1;
    if (rc) {
        if (dist->world > 1) {
            if (err.code == 2 && dist->rank != 0)
                return 2;   /* a usage error is every rank's: rank 0 says it once */
            char who[48];
            snprintf(who, sizeof who, "rank %d of %d", dist->rank, dist->world);
            tempo_error_prefix(&err, who);
        }
        return cli_report(&err);
    }
    if (dist->rank != 0)
        return 0;   /* rank 0 reports for the job */
    return report(&r, &o, pinned);
}

int cmd_train(int argc, char **argv)
{
    dist_context d;
    tempo_error err;
    if (dist_init(&d, &argc, &argv, &err))
        return cli_report(&err);
    int same_everywhere;
    int rc = train_command(argc, argv, &d, &same_everywhere);
    /* A failure may leave the other ranks waiting in a collective: end the whole job; unless
     * every rank failed alike before the first collective (each then ends on its own). */
    if (rc != 0 && rc != 130 && !same_everywhere && d.world > 1)
        dist_abort(&d, rc);
    dist_finalize(&d);
    return rc;
}
