/* cmd_bench_train.c - `tempo bench train`: options, the preset, one
 * bench_train_run per thread count (bench/bench_train.h), and with
 * --vs-torch the PyTorch reference (scripts/torch_reference.py) run after
 * ours in the same invocation; prints JSON lines. No measuring logic here. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_train.h"
#include "model/model.h"
#include "bench/hw_profile.h"
#include "cli/cli.h"
#include "bench/torch_reference.h"
#include "parallel/dist.h"
#include "core/fileio.h"
#include "core/json.h"
#include "run/run_config.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tempo bench train [--preset NAME] [--set KEY=VALUE]... [--vocab N]\n"
            "                         [--threads 1,2] [--steps N] [--warmup N] [--seed N]\n"
            "                         [--vs-torch] [--pin-threads]\n"
            "  Times the training step of a preset exactly as `tempo train` runs it\n"
            "  (forward, backward, gradient norm, optimizer update) on random tokens and\n"
            "  prints one JSON line per thread count: tokens/s, model GFLOP/s, MFU against\n"
            "  the hardware profile's FMA peak (tempo bench peak; with --set\n"
            "  bf16_products=1 its bf16 dot-product peak, \"precision\": \"bf16\"), the time share of each\n"
            "  op, CPU utilisation and the share of the step on one thread, peak RSS,\n"
            "  and page faults per step after warm-up (about 0 when no step allocates).\n"
            "  Then a summary line (the second thread's speed-up when 1 and 2 ran).\n"
            "  With more than one thread, each thread runs the step on its share of the\n"
            "  batch's rows on a replica of the model (thread_replicas, as tempo train does;\n"
            "  \"replicas\" says how many): the op times are then the first thread's.\n"
            "  --set thread_replicas=false shares every op among the threads instead.\n"
            "  --preset   default cpu-default; --vocab: default 4097 (prepare --vocab 4096)\n"
            "  --steps    timed steps (default 5) after --warmup untimed ones (default 1)\n"
            "  --pin-threads  bind each thread to its own core (OMP_PROC_BIND=close,\n"
            "             OMP_PLACES=cores); the lines report \"pinned\" and \"thread_cpus\"\n"
            "  --vs-torch also run scripts/torch_reference.py (Debian's python3-torch, fp32,\n"
            "             AdamW: PyTorch has no Muon) on the same shape at the largest\n"
            "             thread count, and print tempo/torch tokens/s.\n"
            "  Under mpirun (mpirun -np N tempo bench train [--threads T]): every rank runs its\n"
            "  batch_size/N rows of each step and the gradient's all-reduce (a line with ranks and\n"
            "  comm_share), then rank 0 alone runs the same global batch with N x T threads (the\n"
            "  others asleep; its affinity widened to every core), then a summary line with the\n"
            "  scaling efficiency (ranks' tokens/s / one process's). T defaults to the cores / N.\n");
}

/* `bench train` options. */
typedef struct {
    const char *preset;
    const char *sets[64];
    int n_sets, vocab, steps, warmup, seed, vs_torch;
    int threads[BENCH_TRAIN_MAX_THREADS], n_threads;
    int threads_given;
} train_args;

/* -1: go on; else the exit code (0 after --help). */
static int train_parse(int argc, char **argv, train_args *t)
{
    const char *threads = NULL;
    int pin = 0;   /* --pin-threads: set up by main.c before libgomp loads */
    memset(t, 0, sizeof *t);
    t->preset = "cpu-default";
    t->vocab = 4097;
    t->steps = 5;
    t->warmup = 1;
    t->seed = 1;
    const cli_flag flags[] = {
        CLI_F_STRING("--preset", &t->preset),
        CLI_F_LIST("--set", t->sets, &t->n_sets, 64),
        CLI_F_INT("--vocab", &t->vocab, 2, 1 << 20),
        CLI_F_INT("--steps", &t->steps, 1, 100000),
        CLI_F_INT("--warmup", &t->warmup, 1, 100000),
        CLI_F_INT("--seed", &t->seed, 0, 1 << 30),
        CLI_F_STRING("--threads", &threads),
        CLI_F_SWITCH("--vs-torch", &t->vs_torch),
        CLI_F_SWITCH("--pin-threads", &pin),
    };
    int help, bad = cli_parse_flags("bench train", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return 0; }
    t->threads_given = threads != NULL;
    if (threads && (t->n_threads = cli_parse_thread_list(threads, t->threads, BENCH_TRAIN_MAX_THREADS)) < 1)
        return cli_usage_error("bench train: --threads '%s': expected e.g. 1,2", threads);
    if (t->n_threads == 0)
        t->n_threads = cli_default_thread_list(t->threads);
    return -1;
}

/* The preset with the --set pairs and the vocabulary applied. */
static int train_config(const train_args *t, run_config *cfg, tempo_error *err)
{
    return cli_load_preset(t->preset, t->sets, t->n_sets, t->vocab, cfg, err);
}

/* One bench_train_run at thread index k, its line printed and its speed
 * added to the summary. */
static int train_at(const train_args *t, int k, const run_config *cfg, double peak_gflops,
                    bench_train_summary *sum, tempo_error *err)
{
    int th = t->threads[k];
    bench_train_options o = {.cfg = cfg, .threads = th, .steps = t->steps, .warmup_steps = t->warmup,
                             .seed = (unsigned long long)t->seed, .peak_gflops = peak_gflops};
    fprintf(stderr, "bench train: %s, %d thread%s, %d+%d steps of %d tokens\n", cfg->preset, th,
            th == 1 ? "" : "s", t->warmup, t->steps, cfg->batch_size * cfg->model.context);
    bench_train_result r;
    if (bench_train_run(&o, &r, err))
        return -1;
    sum->threads[sum->n_threads] = th;
    sum->tokens_per_s[sum->n_threads++] = r.tokens_per_second;
    strbuf line = {0};
    jsonw w;
    jsonw_init(&w, &line);
    bench_train_json(&w, cfg, &r);
    return cli_emit_jsonw(&w, err);
}

/* Under mpirun: the step on every rank (each its share of the batch, the
 * gradient's all-reduce), then, in the same invocation, rank 0 alone with
 * every rank's threads, and the scaling efficiency between the two. */
static int train_ranks(const train_args *t, run_config *cfg, dist_context *d, tempo_error *err)
{
    if (t->threads_given && t->n_threads != 1)
        return tempo_usage(err, "bench train under mpirun: give one --threads count (each rank's)");
    int local = cfg->batch_size / d->world;
    if (local > 0 && cfg->micro_batch > local)
        cfg->micro_batch = local;   /* as the trainer caps it */
    int th = t->threads[0];
    if (!t->threads_given) {   /* the cores shared among the ranks on this machine, as tempo train does */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        long here = ls ? strtol(ls, NULL, 10) : 1;
        th = here > 0 && n / here > 0 ? (int)(n / here) : 1;
    }
    bench_train_options o = {.cfg = cfg, .threads = th, .steps = t->steps, .warmup_steps = t->warmup,
                             .seed = (unsigned long long)t->seed, .dist = d};
    if (d->rank == 0)
        fprintf(stderr, "bench train: %s, %d ranks x %d thread%s, %d+%d steps of %d tokens\n", cfg->preset,
                d->world, th, th == 1 ? "" : "s", t->warmup, t->steps, cfg->batch_size * cfg->model.context);
    bench_train_result ranks, one;
    if (bench_train_run(&o, &ranks, err))
        return -1;
    strbuf line = {0};
    jsonw w;
    if (d->rank == 0) {
        jsonw_init(&w, &line);
        bench_train_json(&w, cfg, &ranks);
        if (cli_emit_jsonw(&w, err))
            return -1;
    }
    if (dist_barrier(d, err))
        return -1;
    int rc = 0;
    if (d->rank == 0) {   /* the others wait, asleep, so the one process has the cores */
        /* mpirun binds each rank to its core(s): the one process gets every core of the machine
         * (its new threads inherit the mask), as a process started alone would */
        cpu_set_t bound, all;
        int rebound = sched_getaffinity(0, sizeof bound, &bound) == 0;
        CPU_ZERO(&all);
        for (long c = 0, n = sysconf(_SC_NPROCESSORS_ONLN); c < n && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, &all);
        if (rebound && sched_setaffinity(0, sizeof all, &all) != 0)
            rebound = 0;
        bench_train_options o1 = o;
        o1.dist = NULL;
        o1.threads = th * d->world;
        fprintf(stderr, "bench train: one process, %d threads, the same global batch\n", o1.threads);
        rc = bench_train_run(&o1, &one, err);
        if (!rc) {
            jsonw_init(&w, &line);
            bench_train_json(&w, cfg, &one);
            rc = cli_emit_jsonw(&w, err);
        }
        if (!rc) {
            jsonw_init(&w, &line);
            bench_train_ranks_summary_json(&w, cfg->preset, &ranks, &one);
            rc = cli_emit_jsonw(&w, err);
        }
        if (rebound)
            sched_setaffinity(0, sizeof bound, &bound);
    }
    if (dist_barrier(d, err))
        return -1;
    return rc;
}

int bench_train_main(int argc, char **argv)
{
    train_args t;
    int rc = train_parse(argc, argv, &t);
    if (rc >= 0)
        return rc;
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    if (train_config(&t, &cfg, &err))
        return cli_report(&err);
    if (dist_launched_world() > 1) {
        dist_context d;
        if (dist_init(&d, &argc, &argv, &err))
            return cli_report(&err);
        rc = train_ranks(&t, &cfg, &d, &err) ? (d.rank == 0 || err.code != 2 ? cli_report(&err) : 2) : 0;
        if (rc && err.code != 2)
            dist_abort(&d, rc);
        dist_finalize(&d);
        return rc;
    }
    hw_profile hw;
    int have_hw = hw_profile_load_or_measure(&hw, &err) == 0;
    if (!have_hw)
        fprintf(stderr, "tempo: %s (MFU left null)\n", err.msg);
    bench_train_summary sum;
    memset(&sum, 0, sizeof sum);
    for (int k = 0; k < t.n_threads; k++)
        if (train_at(&t, k, &cfg,
                     have_hw ? hw_profile_matrix_gflops(&hw, t.threads[k], model_config_products_bf16(&cfg.model)) : 0,
                     &sum, &err))
            return cli_report(&err);
    if (t.vs_torch) {
        sum.torch_threads = t.threads[t.n_threads - 1];
        sum.torch_tokens_per_s = torch_reference_cpu(&cfg, sum.torch_threads, t.steps, t.warmup);
    }
    strbuf json = {0};
    jsonw w;
    jsonw_init(&w, &json);
    bench_train_summary_json(&w, cfg.preset, &sum);
    return cli_emit_jsonw(&w, &err) ? cli_report(&err) : 0;
}
