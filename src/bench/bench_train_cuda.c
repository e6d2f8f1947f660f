/* bench_train_cuda.c - the GPU training step benchmark (see
 * bench_train_cuda.h). */
#include "bench/bench_train_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/timer.h"
#include "optim/optimizer_cuda.h"
#include "train/train_step.h"
#include "train/train_step_cuda.h"

typedef struct {
    rng_state rng;
    int V;
} random_batches;

static void next_random(void *ctx, int rows, int T, int32_t *in, int32_t *tg)
{
    random_batches *b = ctx;
    for (int i = 0; i < rows * T; i++) {
        in[i] = (int32_t)rng_below(&b->rng, (uint64_t)b->V);
        tg[i] = (int32_t)rng_below(&b->rng, (uint64_t)b->V);
    }
}

typedef struct {
    model_cuda *m;
    optim_cuda opt;
    int opt_ready;
    int32_t *in, *tg;
} bench_state;

static void state_free(bench_state *s)
{
    if (s->opt_ready) optim_cuda_free(&s->opt);
    model_cuda_free(s->m);
    free(s->in);
    free(s->tg);
}

static int one_step(bench_state *s, const run_config *cfg, random_batches *rb, double *loss, tempo_error *err)
{
    double gnorm;
    int T = cfg->model.context;
    if (train_step_cuda_gradient(s->m, &s->opt, cfg->batch_size, cfg->micro_batch, T, next_random, rb, NULL, NULL,
                                 s->in, s->tg, loss, &gnorm, err))
        return -1;
    optim_cuda_step(&s->opt, model_cuda_params(s->m), model_cuda_grads(s->m), gnorm, 1.0);
    model_cuda_weights_changed(s->m);
    return 0;
}

/* The model on the GPU with the CPU model's initialisation, its optimizer and the batch buffers;
 * on failure the caller frees what was made (state_free). */
static int bench_setup(gpu *g, const bench_train_cuda_options *o, bench_state *s, tempo_error *err)
{
    const run_config *cfg = o->cfg;
    int T = cfg->model.context, mb = cfg->micro_batch;
    if (model_cuda_create(&s->m, g, &cfg->model, mb, o->precision, err))
        return -1;
    size_t P = model_cuda_num_params(s->m);
    int n = model_cuda_num_tensors(s->m);
    optim_tensor *ts = malloc(sizeof *ts * (size_t)n);
    float *host = malloc(sizeof(float) * P);
    s->in = malloc(sizeof(int32_t) * (size_t)mb * T);
    s->tg = malloc(sizeof(int32_t) * (size_t)mb * T);
    if (!ts || !host || !s->in || !s->tg) {
        free(ts);
        free(host);
        return tempo_fail(err, "bench train: out of memory");
    }
    for (int i = 0; i < n; i++)
        train_optim_tensors(model_cuda_tensor_at(s->m, i), 1, &ts[i]);
    /* the CPU model's initialisation, without its activations: a one-row model */
    model *init;
    int rc = model_create(&init, &cfg->model, 1, err);
    if (!rc) {
        model_init(init, o->seed);
        rc = model_cuda_set_params(s->m, model_params(init), err);
        model_free(init);
    }
    free(host);
    if (!rc) {
        rc = optim_cuda_create(&s->opt, g, &cfg->optim, ts, n, P,
                               o->precision == MODEL_CUDA_BF16 ? GPU_BF16 : GPU_F32, err);
        s->opt_ready = rc == 0;
    }
    free(ts);
    return rc ? -1 : 0;
}

/* The warm-up steps (the first one's seconds and loss kept), then the timed steps: their mean
 * and best seconds and the last loss. */
static int timed_steps(gpu *g, const bench_train_cuda_options *o, bench_state *s, random_batches *rb,
                       bench_train_cuda_result *r, tempo_error *err)
{
    double loss = NAN;
    for (int i = 0; i < o->warmup_steps; i++) {
        double t0 = timer_now();
        if (one_step(s, o->cfg, rb, &loss, err) || gpu_sync(g, err))
            return -1;
        if (i == 0) {
            r->first_step_seconds = timer_now() - t0;
            r->loss_first = loss;
        }
    }
    r->best_step_seconds = INFINITY;
    double t_all = timer_now();
    for (int i = 0; i < o->steps; i++) {
        double t0 = timer_now();
        if (one_step(s, o->cfg, rb, &loss, err))
            return -1;
        double dt = timer_now() - t0; /* the step's gradient norm waited for its backward */
        if (dt < r->best_step_seconds) r->best_step_seconds = dt;
    }
    if (gpu_sync(g, err))
        return -1;
    r->step_seconds = (timer_now() - t_all) / o->steps;
    r->loss_last = loss;
    return 0;
}

/* One more step, each part waited for: where the time goes (forward, backward, the gradient's
 * norm, the optimizer). */
static int step_parts(gpu *g, const run_config *cfg, bench_state *s, random_batches *rb,
                      bench_train_cuda_result *r, tempo_error *err)
{
    int T = cfg->model.context, mb = cfg->micro_batch;
    double t0 = timer_now();
    next_random(rb, mb, T, s->in, s->tg);
    model_cuda_zero_grad(s->m);
    int rc = model_cuda_set_batch(s->m, s->in, s->tg, mb, T, NULL, 1, err);
    model_cuda_forward(s->m);
    rc = rc || gpu_sync(g, err);
    double t1 = timer_now();
    model_cuda_backward(s->m);
    rc = rc || gpu_sync(g, err);
    double t2 = timer_now(), gnorm = 0;
    rc = rc || optim_cuda_grad_norm(&s->opt, model_cuda_grads(s->m), &gnorm, err);
    double t3 = timer_now();
    optim_cuda_step(&s->opt, model_cuda_params(s->m), model_cuda_grads(s->m), gnorm, 1.0);
    model_cuda_weights_changed(s->m);
    rc = rc || gpu_sync(g, err);
    double t4 = timer_now();
    r->forward_ms = (t1 - t0) * 1e3;
    r->backward_ms = (t2 - t1) * 1e3;
    r->norm_ms = (t3 - t2) * 1e3;
    r->optimizer_ms = (t4 - t3) * 1e3;
    return rc;
}

int bench_train_cuda_run(gpu *g, const bench_train_cuda_options *o, bench_train_cuda_result *r, tempo_error *err)
{
    const run_config *cfg = o->cfg;
    memset(r, 0, sizeof *r);
    snprintf(r->device, sizeof r->device, "%s", gpu_get_info(g)->name);
    r->precision = o->precision == MODEL_CUDA_BF16 ? "bf16" : "fp32";
    bench_state s;
    memset(&s, 0, sizeof s);
    random_batches rb;
    rng_seed(&rb.rng, o->seed);
    rb.V = cfg->model.vocab_size;
    if (bench_setup(g, o, &s, err) || timed_steps(g, o, &s, &rb, r, err)) {
        state_free(&s);
        return -1;
    }
    int rc = step_parts(g, cfg, &s, &rb, r, err);
    /* and one with every kernel timed */
    double loss = r->loss_last;
    gpu_profile_enable(g, 1);
    rc = rc || one_step(&s, cfg, &rb, &loss, err) || gpu_sync(g, err);
    r->n_kernels = gpu_profile_report(g, r->kernel_name, r->kernel_ms, r->kernel_calls, 24);
    gpu_profile_enable(g, 0);
    int T = cfg->model.context;
    size_t P = model_cuda_num_params(s.m);
    r->steps = o->steps;
    r->params = P;
    r->tokens_per_step = (double)cfg->batch_size * T;
    r->tokens_per_second = r->tokens_per_step / r->step_seconds;
    r->flops_per_token = model_flops_per_token(&cfg->model, T);
    r->model_tflops = r->flops_per_token * r->tokens_per_second / 1e12;
    r->peak_tflops = o->peak_tflops;
    r->mfu = o->peak_tflops > 0 ? r->model_tflops / o->peak_tflops : NAN;
    r->device_gb = (double)(model_cuda_device_bytes(s.m) + 2 * P * 4) / 1e9;
    state_free(&s);
    return rc;
}

void bench_train_cuda_write(jsonw *w, const run_config *cfg, const bench_train_cuda_result *r)
{
    jsonw_object_begin(w);
    jsonw_field_string(w, "bench", "train");
    jsonw_field_string(w, "device", "cuda");
    jsonw_field_string(w, "gpu", r->device);
    jsonw_field_string(w, "preset", cfg->preset);
    jsonw_field_string(w, "precision", r->precision);
    jsonw_field_int(w, "d_model", cfg->model.d_model);
    jsonw_field_int(w, "n_layers", cfg->model.n_layers);
    jsonw_field_int(w, "n_heads", cfg->model.n_heads);
    jsonw_field_int(w, "n_kv_heads", cfg->model.n_kv_heads);
    jsonw_field_int(w, "d_ff", cfg->model.d_ff);
    jsonw_field_string(w, "mlp", cfg->model.mlp == MLP_SWIGLU ? "swiglu" : "relu2");
    jsonw_field_int(w, "qk_norm", cfg->model.qk_norm);
    jsonw_field_int(w, "tied_head", cfg->model.tied_head);
    jsonw_field_string(w, "optimizer", cfg->optim.use_muon ? "muon" : "adamw");
    jsonw_field_int(w, "context", cfg->model.context);
    jsonw_field_int(w, "vocab", cfg->model.vocab_size);
    jsonw_field_int(w, "batch", cfg->batch_size);
    jsonw_field_int(w, "micro_batch", cfg->micro_batch);
    jsonw_field_uint(w, "params", r->params);
    jsonw_field_int(w, "steps", r->steps);
    jsonw_field_digits(w, "tokens_per_s", r->tokens_per_second, 0);
    jsonw_field_digits(w, "step_ms", r->step_seconds * 1e3, 2);
    jsonw_field_digits(w, "best_step_ms", r->best_step_seconds * 1e3, 2);
    jsonw_field_digits(w, "model_tflops", r->model_tflops, 1);
    jsonw_field_digits(w, "peak_tflops", r->peak_tflops, 1);
    jsonw_field_digits(w, "mfu", r->mfu, 4);
    jsonw_field_digits(w, "forward_ms", r->forward_ms, 2);
    jsonw_field_digits(w, "backward_ms", r->backward_ms, 2);
    jsonw_field_digits(w, "norm_ms", r->norm_ms, 2);
    jsonw_field_digits(w, "optimizer_ms", r->optimizer_ms, 2);
    jsonw_field_digits(w, "first_step_s", r->first_step_seconds, 3);
    jsonw_field_digits(w, "loss_first", r->loss_first, 4);
    jsonw_field_digits(w, "loss_last", r->loss_last, 4);
    jsonw_field_digits(w, "device_gb", r->device_gb, 2);
    jsonw_key(w, "kernels_ms");
    jsonw_object_begin(w);
    for (int i = 0; i < r->n_kernels; i++)
        jsonw_field_digits(w, r->kernel_name[i], r->kernel_ms[i], 3);
    jsonw_object_end(w);
    jsonw_key(w, "kernel_calls");
    jsonw_object_begin(w);
    for (int i = 0; i < r->n_kernels; i++)
        jsonw_field_int(w, r->kernel_name[i], r->kernel_calls[i]);
    jsonw_object_end(w);
    jsonw_object_end(w);
}
