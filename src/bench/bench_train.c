/* bench_train.c - the training-step benchmark (see bench_train.h). */
#include "bench/bench_train.h"

#include "core/procfs.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench/bench_timing.h"
#include "bench/sysload.h"
#include "core/rng.h"
#include "core/thread_pin.h"
#include "core/timer.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "train/train_step.h"

/* Uniform random tokens: the step's cost does not depend on their values. */
static void random_batch(void *ctx, int rows, int T, int32_t *inputs, int32_t *targets)
{
    void **p = ctx; /* {rng_state, vocab} */
    rng_state *r = p[0];
    int V = *(const int *)p[1];
    for (int i = 0; i < rows * T; i++) {
        inputs[i] = (int32_t)rng_below(r, (uint64_t)V);
        targets[i] = (int32_t)rng_below(r, (uint64_t)V);
    }
}

/* VmHWM from /proc/self/status in MiB; 0 when unreadable. */
static double peak_rss_mib(void)
{
    return procfs_kb("/proc/self/status", "VmHWM") / 1024.0;
}

static double cpu_seconds(long *minflt)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    *minflt = u.ru_minflt;
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec * 1e-6;
}

typedef struct {
    model *m;
    optimizer opt;
    int opt_ready;
    int32_t *inputs, *targets;
    dist_context *dist;       /* NULL: one process */
    train_reduce reduce;      /* the trainer's mean over the ranks (overlap_comm as configured) */
    int reduce_ready;
    double comm_s;            /* collective seconds, summed over the profiled steps */
    int profiling;
} bench_state;

static void state_free(bench_state *s)
{
    if (s->opt_ready)
        optim_free(&s->opt);
    if (s->reduce_ready)
        train_reduce_free(&s->reduce);
    model_free(s->m);
    free(s->inputs);
    free(s->targets);
}

/* One step as the trainer runs it (with ranks: this rank's rows, then the
 * gradient's all-reduce); returns the loss. */
static double one_step(bench_state *s, const run_config *cfg, void *src, op_profile *prof)
{
    int world = s->dist ? s->dist->world : 1;
    double loss;
    tempo_error e;
    if (train_step_gradient_ranks(s->m, &s->reduce, cfg->batch_size / world, cfg->micro_batch, cfg->model.context,
                                  random_batch, src, s->inputs, s->targets, prof, &loss, &e))
        dist_abort(s->dist, 1);   /* a collective failed: no rank may wait on it */
    size_t n = model_num_params(s->m);
    if (world > 1) {
        double c0 = timer_now();
        if (dist_allreduce_sum_f64(s->dist, &loss, 1, &e))
            dist_abort(s->dist, 1);
        loss /= world;
        if (s->profiling)
            s->comm_s += s->reduce.comm_s + timer_now() - c0;
    }
    op_mark t0 = op_profile_begin(prof);
    double gnorm = optim_grad_norm(model_grads(s->m), n);
    op_profile_end(prof, OP_GRAD_NORM, t0);
    t0 = op_profile_begin(prof);
    optim_step(&s->opt, model_params(s->m), model_grads(s->m), gnorm, 1.0);
    op_profile_end(prof, OP_OPTIMIZER, t0);
    return loss;
}

/* What the timed steps measured. */
typedef struct {
    double wall, best, cpu;   /* seconds: all steps, the best step, process CPU time */
    long faults;              /* minor page faults */
    sysload_report load;
} timed_steps;

/* o->steps profiled steps after the warm-up ones. */
static void run_steps(bench_state *s, const bench_train_options *o, void *src, bench_train_result *r,
                      timed_steps *t)
{
    const run_config *cfg = o->cfg;
    double t0 = timer_now();
    r->loss_first = one_step(s, cfg, src, NULL);
    r->first_step_seconds = timer_now() - t0;
    for (int i = 1; i < o->warmup_steps; i++)
        one_step(s, cfg, src, NULL);

    model_set_profile(s->m, &r->prof);
    s->profiling = 1;
    sysload_sample load0;
    sysload_sample_now(&load0);
    long flt0, flt1;
    double cpu0 = cpu_seconds(&flt0), w0 = timer_now();
    t->best = 1e30;
    for (int i = 0; i < o->steps; i++) {
        double s0 = timer_now();
        r->loss_last = one_step(s, cfg, src, &r->prof);
        double dt = timer_now() - s0;
        t->best = dt < t->best ? dt : t->best;
    }
    t->wall = timer_now() - w0;
    t->cpu = cpu_seconds(&flt1) - cpu0;
    t->faults = flt1 - flt0;
    sysload_since(&load0, &t->load);
    model_set_profile(s->m, NULL);
}

/* The result's figures from the timed steps. */
static void fill_figures(const bench_train_options *o, const bench_state *s, const timed_steps *t,
                         bench_train_result *r)
{
    const run_config *cfg = o->cfg;
    r->threads = o->threads;
    r->steps = o->steps;
    r->params = model_num_params(s->m);
    r->tokens_per_step = (double)cfg->batch_size * cfg->model.context;
    r->step_seconds = t->wall / o->steps;
    r->best_step_seconds = t->best;
    r->tokens_per_second = r->tokens_per_step / r->step_seconds;
    r->flops_per_token = model_flops_per_token(&cfg->model, cfg->model.context);
    r->model_gflops = r->tokens_per_second * r->flops_per_token * 1e-9;
    r->peak_gflops = o->peak_gflops;
    r->mfu = o->peak_gflops > 0 ? r->model_gflops / o->peak_gflops : NAN;
    r->cpu_utilisation = t->cpu / (t->wall * o->threads);
    r->serial_share = o->threads > 1
                          ? fmin(1, fmax(0, (o->threads - r->cpu_utilisation * o->threads) /
                                                (o->threads - 1)))
                          : 0;
    r->minor_faults_per_step = (double)t->faults / o->steps;
    r->peak_rss_mib = peak_rss_mib();
    r->model_mib = (2.0 * r->params * sizeof(float) + (double)model_activation_bytes(s->m)) /
                   (1024.0 * 1024.0);
    r->optimizer_mib = (2.0 * r->params + (double)s->opt.ns_work_len) * sizeof(float) /
                       (1024.0 * 1024.0);
    r->other_load_cores = t->load.other_cores;
    r->contended = t->load.contended;
}

int bench_train_run(const bench_train_options *o, bench_train_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    const run_config *cfg = o->cfg;
    if (o->steps < 1 || o->warmup_steps < 1 || o->threads < 1)
        return tempo_usage(err, "bench train: steps, warm-up steps and threads must be >= 1");
    int world = o->dist ? o->dist->world : 1;
    if (cfg->batch_size % world || (cfg->batch_size / world) % cfg->micro_batch)
        return tempo_usage(err, "bench train: batch_size %d does not split into %d ranks of micro-batches of %d",
                           cfg->batch_size, world, cfg->micro_batch);
    int saved_threads = omp_get_max_threads();
    omp_set_num_threads(o->threads);
    int team = thread_pin_read(r->thread_cpus, 16);
    r->pinned = team <= 16 && thread_pin_all_distinct(r->thread_cpus, team);
    bench_state s;
    memset(&s, 0, sizeof s);
    s.dist = world > 1 ? o->dist : NULL;
    int rc = -1;
    if (model_create(&s.m, &cfg->model, cfg->micro_batch, err))
        goto out;
    if (cfg->model.bf16_products == MODEL_PRODUCTS_BF16 && !model_products_bf16(s.m)) {
        tempo_usage(err, "bench train: bf16_products=1 needs a CPU with AVX-512 BF16 and the avx512 kernel path");
        goto out;
    }
    model_init(s.m, o->seed);
    if (train_optimizer_create(&s.opt, s.m, &cfg->optim, err))
        goto out;
    s.opt_ready = 1;
    if (train_reduce_init(&s.reduce, s.dist, s.m, cfg->overlap_comm, NULL, NULL, err))
        goto out;
    s.reduce_ready = 1;
    if (cfg->thread_replicas && train_reduce_replicas(&s.reduce, s.m, o->threads, cfg->micro_batch, err))
        goto out;
    size_t bt = (size_t)cfg->micro_batch * cfg->model.context;
    s.inputs = malloc(sizeof(int32_t) * bt);
    s.targets = malloc(sizeof(int32_t) * bt);
    if (!s.inputs || !s.targets) {
        tempo_fail(err, "bench train: out of memory");
        goto out;
    }
    rng_state rng;
    rng_seed(&rng, o->seed + (unsigned long long)(s.dist ? s.dist->rank : 0));   /* each rank its own rows */
    int V = cfg->model.vocab_size;
    void *src[2] = {&rng, &V};
    timed_steps t;
    run_steps(&s, o, src, r, &t);
    fill_figures(o, &s, &t, r);
    r->ranks = world;
    r->replicas = s.reduce.n_rep;
    r->comm_seconds = s.comm_s / o->steps;
    rc = 0;
out:
    state_free(&s);
    omp_set_num_threads(saved_threads);
    return rc;
}

/* "ops":{"<op>":{...},...,"other":{...}}: each profiled op's time per step,
 * share of the step and how many threads were busy in it; "other" is the
 * step time no op accounts for. */
static void ops_json(jsonw *w, const bench_train_result *r)
{
    double total = r->step_seconds * r->steps, covered = 0;
    jsonw_key(w, "ops");
    jsonw_object_begin(w);
    for (int k = 0; k < OP_COUNT; k++) {
        if (r->prof.calls[k] == 0)
            continue;
        covered += r->prof.seconds[k];
        jsonw_key(w, op_kind_name(k));
        jsonw_object_begin(w);
        jsonw_field_digits(w, "s_per_step", r->prof.seconds[k] / r->steps, 5);
        jsonw_field_digits(w, "share", total > 0 ? r->prof.seconds[k] / total : 0, 4);
        jsonw_field_int(w, "calls_per_step", r->prof.calls[k] / r->steps);
        jsonw_field_digits(w, "threads_busy",
                           r->prof.seconds[k] > 0 ? r->prof.cpu_seconds[k] / r->prof.seconds[k] : 0, 2);
        jsonw_object_end(w);
    }
    double other = total - covered;
    jsonw_key(w, "other");
    jsonw_object_begin(w);
    jsonw_field_digits(w, "s_per_step", other / r->steps, 5);
    jsonw_field_digits(w, "share", total > 0 ? other / total : 0, 4);
    jsonw_object_end(w);
    jsonw_object_end(w);
}

void bench_train_json(jsonw *w, const run_config *cfg, const bench_train_result *r)
{
    const model_config *m = &cfg->model;
    jsonw_object_begin(w);
    jsonw_field_string(w, "bench", "train");
    jsonw_field_string(w, "preset", cfg->preset);
    jsonw_field_int(w, "threads", r->threads);
    jsonw_field_int(w, "d_model", m->d_model);
    jsonw_field_int(w, "n_layers", m->n_layers);
    jsonw_field_int(w, "n_heads", m->n_heads);
    jsonw_field_int(w, "context", m->context);
    jsonw_field_int(w, "batch", cfg->batch_size);
    jsonw_field_int(w, "micro_batch", cfg->micro_batch);
    jsonw_field_int(w, "vocab", m->vocab_size);
    jsonw_field_uint(w, "params", r->params);
    jsonw_field_int(w, "steps", r->steps);
    jsonw_field_digits(w, "step_s", r->step_seconds, 6);
    jsonw_field_digits(w, "best_step_s", r->best_step_seconds, 6);
    jsonw_field_digits(w, "first_step_s", r->first_step_seconds, 6);
    jsonw_field_digits(w, "tokens_per_s", r->tokens_per_second, 1);
    jsonw_field_digits(w, "model_gflops", r->model_gflops, 2);
    jsonw_field_digits(w, "peak_gflops", r->peak_gflops > 0 ? r->peak_gflops : NAN, 2);
    jsonw_field_digits(w, "mfu", r->mfu, 3);
    /* the products' operands, and so which peak the MFU is against */
    jsonw_field_string(w, "precision", model_config_products_bf16(m) ? "bf16" : "fp32");
    jsonw_field_bool(w, "pinned", r->pinned);
    jsonw_key(w, "thread_cpus");
    jsonw_array_begin(w);
    for (int t = 0; t < r->threads && t < 16; t++)
        jsonw_int(w, r->thread_cpus[t]);
    jsonw_array_end(w);
    jsonw_field_digits(w, "cpu_utilisation", r->cpu_utilisation, 3);
    jsonw_field_digits(w, "serial_share", r->serial_share, 3);
    jsonw_field_digits(w, "peak_rss_mib", r->peak_rss_mib, 1);
    jsonw_field_digits(w, "model_mib", r->model_mib, 1);
    jsonw_field_digits(w, "optimizer_mib", r->optimizer_mib, 1);
    jsonw_field_digits(w, "minor_faults_per_step", r->minor_faults_per_step, 1);
    jsonw_field_digits(w, "loss_first", r->loss_first, 4);
    jsonw_field_digits(w, "loss_last", r->loss_last, 4);
    ops_json(w, r);
    jsonw_field_digits(w, "other_load_cores", r->other_load_cores, 2);
    jsonw_field_bool(w, "contended", r->contended);
    jsonw_field_int(w, "ranks", r->ranks);
    jsonw_field_int(w, "replicas", r->replicas);
    jsonw_field_digits(w, "comm_s_per_step", r->comm_seconds, 5);
    jsonw_field_digits(w, "comm_share", r->step_seconds > 0 ? r->comm_seconds / r->step_seconds : 0, 4);
    jsonw_object_end(w);
}

void bench_train_ranks_summary_json(jsonw *w, const char *preset, const bench_train_result *ranks,
                                    const bench_train_result *one)
{
    jsonw_object_begin(w);
    jsonw_field_string(w, "bench", "train");
    jsonw_field_bool(w, "summary", 1);
    jsonw_field_string(w, "preset", preset);
    jsonw_field_int(w, "ranks", ranks->ranks);
    jsonw_field_int(w, "threads_per_rank", ranks->threads);
    jsonw_field_digits(w, "tokens_per_s_ranks", ranks->tokens_per_second, 1);
    jsonw_field_int(w, "one_process_threads", one->threads);
    jsonw_field_digits(w, "tokens_per_s_one_process", one->tokens_per_second, 1);
    jsonw_field_digits(w, "scaling_efficiency",
                       one->tokens_per_second > 0 ? ranks->tokens_per_second / one->tokens_per_second : NAN, 3);
    jsonw_field_digits(w, "comm_share", ranks->step_seconds > 0 ? ranks->comm_seconds / ranks->step_seconds : 0,
                       4);
    jsonw_object_end(w);
}

void bench_train_summary_json(jsonw *w, const char *preset, const bench_train_summary *s)
{
    jsonw_object_begin(w);
    jsonw_field_string(w, "bench", "train");
    jsonw_field_bool(w, "summary", 1);
    jsonw_field_string(w, "preset", preset);
    jsonw_key(w, "tokens_per_s");
    jsonw_object_begin(w);
    int i1 = -1, i2 = -1;
    for (int t = 0; t < s->n_threads; t++) {
        char key[16];
        snprintf(key, sizeof key, "%d", s->threads[t]);
        jsonw_field_digits(w, key, s->tokens_per_s[t], 1);
        if (s->threads[t] == 1) i1 = t;
        if (s->threads[t] == 2) i2 = t;
    }
    jsonw_object_end(w);
    if (i1 >= 0 && i2 >= 0 && s->tokens_per_s[i1] > 0)
        jsonw_field_digits(w, "second_thread_speedup", s->tokens_per_s[i2] / s->tokens_per_s[i1], 3);
    if (s->torch_threads > 0) {
        int ok = s->torch_tokens_per_s > 0 && s->n_threads > 0;
        jsonw_field_int(w, "torch_threads", s->torch_threads);
        jsonw_field_digits(w, "torch_tokens_per_s", ok ? s->torch_tokens_per_s : NAN, 1);
        jsonw_field_digits(w, "ratio_vs_torch",
                           ok ? s->tokens_per_s[s->n_threads - 1] / s->torch_tokens_per_s : NAN, 3);
    }
    jsonw_object_end(w);
}
