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
} bench_state;

static void state_free(bench_state *s)
{
    if (s->opt_ready)
        optim_free(&s->opt);
    model_free(s->m);
    free(s->inputs);
    free(s->targets);
}

/* One step as the trainer runs it; returns the loss. */
static double one_step(bench_state *s, const run_config *cfg, void *src, op_profile *prof)
{
    double loss = train_step_gradient(s->m, cfg->batch_size, cfg->micro_batch, cfg->model.context,
                                      random_batch, src, s->inputs, s->targets, prof);
    op_mark t0 = op_profile_begin(prof);
    size_t n = model_num_params(s->m);
    double gnorm = optim_grad_norm(model_grads(s->m), n);
    op_profile_end(prof, OP_GRAD_NORM, t0);
    t0 = op_profile_begin(prof);
    optim_step(&s->opt, model_params(s->m), model_grads(s->m), gnorm, 1.0);
    op_profile_end(prof, OP_OPTIMIZER, t0);
    return loss;
}

int bench_train_run(const bench_train_options *o, bench_train_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    const run_config *cfg = o->cfg;
    if (o->steps < 1 || o->warmup_steps < 1 || o->threads < 1)
        return tempo_usage(err, "bench train: steps, warm-up steps and threads must be >= 1");
    int saved_threads = omp_get_max_threads();
    omp_set_num_threads(o->threads);
    int team = thread_pin_read(r->thread_cpus, 16);
    r->pinned = team <= 16 && thread_pin_all_distinct(r->thread_cpus, team);
    bench_state s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    if (model_create(&s.m, &cfg->model, cfg->micro_batch, err))
        goto out;
    model_init(s.m, o->seed);
    if (train_optimizer_create(&s.opt, s.m, &cfg->optim, err))
        goto out;
    s.opt_ready = 1;
    size_t bt = (size_t)cfg->micro_batch * cfg->model.context;
    s.inputs = malloc(sizeof(int32_t) * bt);
    s.targets = malloc(sizeof(int32_t) * bt);
    if (!s.inputs || !s.targets) {
        tempo_fail(err, "bench train: out of memory");
        goto out;
    }
    rng_state rng;
    rng_seed(&rng, o->seed);
    int V = cfg->model.vocab_size;
    void *src[2] = {&rng, &V};

    double t0 = timer_now();
    r->loss_first = one_step(&s, cfg, src, NULL);
    r->first_step_seconds = timer_now() - t0;
    for (int i = 1; i < o->warmup_steps; i++)
        one_step(&s, cfg, src, NULL);

    model_set_profile(s.m, &r->prof);
    sysload_sample load0;
    sysload_sample_now(&load0);
    long flt0, flt1;
    double cpu0 = cpu_seconds(&flt0), best = 1e30;
    double w0 = timer_now();
    for (int i = 0; i < o->steps; i++) {
        double s0 = timer_now();
        r->loss_last = one_step(&s, cfg, src, &r->prof);
        double dt = timer_now() - s0;
        best = dt < best ? dt : best;
    }
    double wall = timer_now() - w0;
    double cpu = cpu_seconds(&flt1) - cpu0;
    sysload_report load;
    sysload_since(&load0, &load);
    model_set_profile(s.m, NULL);

    r->threads = o->threads;
    r->steps = o->steps;
    r->params = model_num_params(s.m);
    r->tokens_per_step = (double)cfg->batch_size * cfg->model.context;
    r->step_seconds = wall / o->steps;
    r->best_step_seconds = best;
    r->tokens_per_second = r->tokens_per_step / r->step_seconds;
    r->flops_per_token = model_flops_per_token(&cfg->model, cfg->model.context);
    r->model_gflops = r->tokens_per_second * r->flops_per_token * 1e-9;
    r->peak_gflops = o->peak_gflops;
    r->mfu = o->peak_gflops > 0 ? r->model_gflops / o->peak_gflops : NAN;
    r->cpu_utilisation = cpu / (wall * o->threads);
    r->serial_share = o->threads > 1
                          ? fmin(1, fmax(0, (o->threads - r->cpu_utilisation * o->threads) /
                                                (o->threads - 1)))
                          : 0;
    r->minor_faults_per_step = (double)(flt1 - flt0) / o->steps;
    r->peak_rss_mib = peak_rss_mib();
    r->model_mib = (2.0 * r->params * sizeof(float) + (double)model_activation_bytes(s.m)) /
                   (1024.0 * 1024.0);
    r->optimizer_mib = (2.0 * r->params + (double)s.opt.ns_work_len) * sizeof(float) /
                       (1024.0 * 1024.0);
    r->other_load_cores = load.other_cores;
    r->contended = load.contended;
    rc = 0;
out:
    state_free(&s);
    omp_set_num_threads(saved_threads);
    return rc;
}

void bench_train_json(strbuf *out, const run_config *cfg, const bench_train_result *r)
{
    const model_config *m = &cfg->model;
    strbuf_puts(out, "{\"bench\":\"train\",\"preset\":");
    strbuf_json_string(out, cfg->preset, strlen(cfg->preset));
    strbuf_printf(out, ",\"threads\":%d,\"d_model\":%d,\"n_layers\":%d,\"n_heads\":%d,"
                       "\"context\":%d,\"batch\":%d,\"micro_batch\":%d,\"vocab\":%d,"
                       "\"params\":%zu,\"steps\":%d",
                  r->threads, m->d_model, m->n_layers, m->n_heads, m->context, cfg->batch_size,
                  cfg->micro_batch, m->vocab_size, r->params, r->steps);
    bench_json_num(out, "step_s", r->step_seconds, 4);
    bench_json_num(out, "best_step_s", r->best_step_seconds, 4);
    bench_json_num(out, "first_step_s", r->first_step_seconds, 4);
    bench_json_num(out, "tokens_per_s", r->tokens_per_second, 1);
    bench_json_num(out, "model_gflops", r->model_gflops, 2);
    bench_json_num(out, "peak_gflops", r->peak_gflops > 0 ? r->peak_gflops : NAN, 2);
    bench_json_num(out, "mfu", r->mfu, 3);
    strbuf_printf(out, ",\"pinned\":%s,\"thread_cpus\":[", r->pinned ? "true" : "false");
    for (int t = 0; t < r->threads && t < 16; t++)
        strbuf_printf(out, "%s%d", t ? "," : "", r->thread_cpus[t]);
    strbuf_puts(out, "]");
    bench_json_num(out, "cpu_utilisation", r->cpu_utilisation, 3);
    bench_json_num(out, "serial_share", r->serial_share, 3);
    bench_json_num(out, "peak_rss_mib", r->peak_rss_mib, 1);
    bench_json_num(out, "model_mib", r->model_mib, 1);
    bench_json_num(out, "optimizer_mib", r->optimizer_mib, 1);
    bench_json_num(out, "minor_faults_per_step", r->minor_faults_per_step, 1);
    bench_json_num(out, "loss_first", r->loss_first, 4);
    bench_json_num(out, "loss_last", r->loss_last, 4);
    double total = r->step_seconds * r->steps, covered = 0;
    strbuf_puts(out, ",\"ops\":{");
    int first = 1;
    for (int k = 0; k < OP_COUNT; k++) {
        if (r->prof.calls[k] == 0)
            continue;
        covered += r->prof.seconds[k];
        strbuf_printf(out, "%s\"%s\":{\"s_per_step\":", first ? "" : ",", op_kind_name(k));
        strbuf_json_number(out, bench_round(r->prof.seconds[k] / r->steps, 5));
        strbuf_puts(out, ",\"share\":");
        strbuf_json_number(out, bench_round(total > 0 ? r->prof.seconds[k] / total : 0, 4));
        strbuf_printf(out, ",\"calls_per_step\":%ld,\"threads_busy\":", r->prof.calls[k] / r->steps);
        strbuf_json_number(out, bench_round(r->prof.seconds[k] > 0
                                                ? r->prof.cpu_seconds[k] / r->prof.seconds[k]
                                                : 0, 2));
        strbuf_puts(out, "}");
        first = 0;
    }
    double other = total - covered;
    strbuf_printf(out, "%s\"other\":{\"s_per_step\":", first ? "" : ",");
    strbuf_json_number(out, bench_round(other / r->steps, 5));
    strbuf_puts(out, ",\"share\":");
    strbuf_json_number(out, bench_round(total > 0 ? other / total : 0, 4));
    strbuf_puts(out, "}}");
    bench_json_num(out, "other_load_cores", r->other_load_cores, 2);
    strbuf_printf(out, ",\"contended\":%s}", r->contended ? "true" : "false");
}
