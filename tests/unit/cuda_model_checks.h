/* cuda_model_checks.h - the whole training step on a GPU (model_cuda.h,
 * optimizer_cuda.h) against the CPU model and optimizer, for one opened
 * gpu: test_cuda_model runs them on the CPU emulator, test_cuda_device on a
 * real GPU.
 *   - one step in fp32 mode: the loss and the gradient norm to 1e-4
 *     relative, every gradient to 1e-4 (norm-wise), the evaluation outputs
 *     (losses, confidence, top id, -ln sum p^beta);
 *   - k steps of training (AdamW, and Muon with its Newton-Schulz), the
 *     same batches: every step's loss within 1e-3 relative of the CPU's;
 *   - bf16 mode: the loss within 1e-2 and the gradient within 5e-2;
 *   - one Muon step from the CPU's parameters and gradients: the update
 *     within 1e-4 of the CPU's (Newton-Schulz in fp32) or 5e-2 (in bf16,
 *     bf16 mode's), norm-wise.
 * Configurations cover SwiGLU + QK-norm + tied head + GQA (cpu-default's
 * family) and ReLU² + untied head + logit soft-cap + mixture objective.
 * Test-only, header-only; include after cuda_kernel_checks.h. */
#ifndef TEMPO_CUDA_MODEL_CHECKS_H
#define TEMPO_CUDA_MODEL_CHECKS_H

#include "model/model.h"
#include "model/model_cuda.h"
#include "optim/optimizer.h"
#include "optim/optimizer_cuda.h"
#include "train/train_step.h"

static model_config mc_config(int variant)
{
    model_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = 61;
    c.context = 24;
    c.d_model = 32;
    c.n_layers = 2;
    c.rope_theta = 10000;
    c.norm_eps = 1e-5f;
    c.init_std = 0.1f;
    if (variant == 0) { /* cpu-default's family */
        c.n_heads = 4;
        c.n_kv_heads = 2;
        c.d_ff = 64;
        c.mlp = MLP_SWIGLU;
        c.qk_norm = 1;
        c.tied_head = 1;
    } else {
        c.n_heads = 2;
        c.n_kv_heads = 2;
        c.d_ff = 96;
        c.mlp = MLP_RELU2;
        c.tied_head = 0;
        c.logit_softcap = 10;
    }
    return c;
}

static void mc_batch(rng_state *r, int32_t *in, int32_t *tg, int N, int V)
{
    for (int n = 0; n < N; n++) {
        in[n] = (int32_t)rng_below(r, (uint64_t)V);
        tg[n] = (int32_t)((in[n] * 7 + 3 + (int)rng_below(r, 3)) % V); /* learnable */
    }
}

static double mc_rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

/* The CPU model and the GPU one of config `variant` for B rows, the CPU's
 * initialisation (seed) copied to the GPU: 0, or -1 (reported) with neither
 * made. */
static int mc_models(gpu *g, int variant, int B, model_cuda_precision prec, uint64_t seed, model **cpu,
                     model_cuda **gm)
{
    model_config cfg = mc_config(variant);
    tempo_error e;
    *gm = NULL;
    if (model_create(cpu, &cfg, B, &e)) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return -1;
    }
    if (model_cuda_create(gm, g, &cfg, B, prec, &e)) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        model_free(*cpu);
        return -1;
    }
    model_init(*cpu, seed);
    CHECK(model_cuda_num_params(*gm) == model_num_params(*cpu));
    CHECK(model_cuda_set_params(*gm, model_params(*cpu), &e) == 0);
    return 0;
}

/* One forward/backward on both, same parameters; then evaluation outputs. */
static void check_model_step(gpu *g, int variant, model_cuda_precision prec)
{
    model_config cfg = mc_config(variant);
    int B = 3, T = cfg.context, N = B * T;
    model *cpu;
    model_cuda *gm;
    tempo_error e;
    if (mc_models(g, variant, B, prec, 7 + (uint64_t)variant, &cpu, &gm))
        return;
    size_t P = model_num_params(cpu);
    rng_state r;
    rng_seed(&r, 99);
    int32_t *in = malloc(sizeof(int32_t) * N), *tg = malloc(sizeof(int32_t) * N);
    mc_batch(&r, in, tg, N, cfg.vocab_size);
    float *mix = NULL;
    float mix_a = 0.7f;
    if (variant == 1) { /* train inside a mixture */
        mix = malloc(sizeof(float) * N);
        for (int n = 0; n < N; n++) mix[n] = 0.3f * (float)rng_uniform(&r) * 0.05f;
        model_set_mixture(cpu, mix, mix_a);
    }
    model_zero_grad(cpu);
    double lc = model_forward(cpu, in, tg, B, T);
    model_backward(cpu);
    model_cuda_zero_grad(gm);
    CHECK(model_cuda_set_batch(gm, in, tg, B, T, mix, mix_a, &e) == 0);
    model_cuda_forward(gm);
    model_cuda_backward(gm);
    double lg = NAN;
    CHECK(model_cuda_loss(gm, &lg, &e) == 0);
    float *grad = malloc(sizeof(float) * P);
    CHECK(model_cuda_get_grads(gm, grad, &e) == 0);
    const char *pn = prec == MODEL_CUDA_BF16 ? "bf16" : "fp32";
    char name[96];
    double tl = prec == MODEL_CUDA_BF16 ? 1e-2 : 1e-4, tg_ = prec == MODEL_CUDA_BF16 ? 5e-2 : 1e-4;
    snprintf(name, sizeof name, "model step %s loss (config %d)", pn, variant);
    ck_report(name, mc_rel(lg, lc), tl);
    snprintf(name, sizeof name, "model step %s gradient (config %d)", pn, variant);
    ck_report(name, ck_err(grad, model_grads(cpu), P), tg_);
    double nc = optim_grad_norm(model_grads(cpu), P), ng = optim_grad_norm(grad, P);
    snprintf(name, sizeof name, "model step %s gradient norm (config %d)", pn, variant);
    ck_report(name, mc_rel(ng, nc), tg_);
    /* evaluation outputs */
    if (prec == MODEL_CUDA_FP32) {
        model_set_mixture(cpu, NULL, 1);
        model_set_training(cpu, 0);
        model_forward_eval(cpu, in, tg, B, T, 1.15f, NULL);
        model_cuda_set_training(gm, 0);
        model_cuda_set_eval_beta(gm, 1.15f);
        CHECK(model_cuda_set_batch(gm, in, tg, B, T, NULL, 1, &e) == 0);
        model_cuda_forward(gm);
        float *l = malloc(sizeof(float) * N), *tp = malloc(sizeof(float) * N), *ln = malloc(sizeof(float) * N);
        int32_t *id = malloc(sizeof(int32_t) * N);
        CHECK(model_cuda_token_outputs(gm, l, tp, id, ln, &e) == 0);
        snprintf(name, sizeof name, "model eval losses (config %d)", variant);
        ck_report(name, ck_err(l, model_token_losses(cpu), N), 1e-4);
        snprintf(name, sizeof name, "model eval top_logprob (config %d)", variant);
        ck_report(name, ck_err(tp, model_token_top_logprob(cpu), N), 1e-4);
        snprintf(name, sizeof name, "model eval log_norm (config %d)", variant);
        ck_report(name, ck_err(ln, model_token_log_norm(cpu), N), 1e-4);
        int same = !memcmp(id, model_token_top_id(cpu), sizeof(int32_t) * N);
        snprintf(name, sizeof name, "model eval top id (config %d)", variant);
        ck_report(name, same ? 0.0 : 1.0, 0);
        /* a backward after an evaluation-mode forward is the training one */
        model_zero_grad(cpu);
        model_backward(cpu);
        model_cuda_zero_grad(gm);
        model_cuda_backward(gm);
        CHECK(model_cuda_get_grads(gm, grad, &e) == 0);
        snprintf(name, sizeof name, "model backward after eval forward (config %d)", variant);
        ck_report(name, ck_err(grad, model_grads(cpu), P), 1e-4);
        free(l); free(tp); free(ln); free(id);
    }
    free(in); free(tg); free(mix); free(grad);
    model_cuda_free(gm);
    model_free(cpu);
}

/* Two micro-batches, the second staged while the first one's work is still
 * queued (no loss read between them): the gradient is the CPU's sum of both,
 * with the emulator running the copy stream as early and as late as it may
 * (gpu_emulator_order), so that set_batch's waits on the copy stream are
 * needed: without them the second batch's upload overtakes the first's
 * forward, or the staging is rewritten before its copy ran. fp32. */
static void check_queued_batches(gpu *g)
{
    model_config cfg = mc_config(0);
    int B = 2, T = cfg.context, N = B * T;
    model *cpu;
    model_cuda *gm;
    tempo_error e;
    if (mc_models(g, 0, B, MODEL_CUDA_FP32, 11, &cpu, &gm))
        return;
    size_t P = model_num_params(cpu);
    rng_state r;
    rng_seed(&r, 5);
    int32_t *in = malloc(sizeof(int32_t) * 2 * N), *tg = malloc(sizeof(int32_t) * 2 * N);
    float *grad = malloc(sizeof(float) * P);
    mc_batch(&r, in, tg, 2 * N, cfg.vocab_size);
    model_zero_grad(cpu);
    for (int k = 0; k < 2; k++) {
        model_forward(cpu, in + k * N, tg + k * N, B, T);
        model_backward(cpu);
    }
    int orders[2] = {GPU_EMU_COPIES_EARLY, GPU_EMU_COPIES_LATE};
    for (int o = 0; o < 2; o++) {
        gpu_emulator_order(g, orders[o]);
        model_cuda_zero_grad(gm);
        for (int k = 0; k < 2; k++) {
            CHECK(model_cuda_set_batch(gm, in + k * N, tg + k * N, B, T, NULL, 1, &e) == 0);
            model_cuda_forward(gm);
            model_cuda_backward(gm);
        }
        CHECK(model_cuda_get_grads(gm, grad, &e) == 0);
        char name[96];
        snprintf(name, sizeof name, "two queued micro-batches' gradient (copies %s)", o ? "late" : "early");
        ck_report(name, ck_err(grad, model_grads(cpu), P), 1e-4);
    }
    gpu_emulator_order(g, GPU_EMU_ALTERNATE);
    free(in); free(tg); free(grad);
    model_cuda_free(gm);
    model_free(cpu);
}

/* The optimizer both sides of a training check run (Muon for the hidden
 * matrices or AdamW throughout), and the CPU model's tensors as the
 * optimizer groups them (malloc'd, model_num_tensors of them). */
static optim_config mc_optim_config(int use_muon)
{
    optim_config oc = {.use_muon = use_muon, .lr = 3e-3f, .lr_embed = 3e-3f, .lr_head = 3e-3f, .lr_scalar = 3e-3f,
                       .lr_muon = 0.02f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.01f,
                       .muon_momentum = 0.95f, .ns_steps = 5, .grad_clip = 1.0f};
    return oc;
}

static optim_tensor *mc_optim_tensors(model *cpu)
{
    int n = model_num_tensors(cpu);
    optim_tensor *ts = malloc(sizeof *ts * (size_t)n);
    for (int i = 0; ts && i < n; i++) train_optim_tensors(model_tensor_at(cpu, i), 1, &ts[i]);
    return ts;
}

/* steps of training with the optimizer on both sides, the same batches */
static void check_training_steps(gpu *g, int variant, int use_muon, int steps)
{
    model_config cfg = mc_config(variant);
    int B = 2, T = cfg.context, N = B * T;
    model *cpu;
    model_cuda *gm;
    tempo_error e;
    if (mc_models(g, variant, B, MODEL_CUDA_FP32, 3, &cpu, &gm))
        return;
    optim_config oc = mc_optim_config(use_muon);
    optimizer opt;
    optim_cuda go;
    int n = model_num_tensors(cpu);
    optim_tensor *ts = mc_optim_tensors(cpu);
    CHECK(train_optimizer_create(&opt, cpu, &oc, &e) == 0);
    CHECK(optim_cuda_create(&go, g, &oc, ts, n, model_num_params(cpu), GPU_F32, &e) == 0);
    rng_state r;
    rng_seed(&r, 5);
    int32_t *in = malloc(sizeof(int32_t) * N), *tg = malloc(sizeof(int32_t) * N);
    double worst = 0, first = 0, last_c = 0, last_g = 0;
    for (int s = 0; s < steps; s++) {
        mc_batch(&r, in, tg, N, cfg.vocab_size);
        model_zero_grad(cpu);
        double lc = model_forward(cpu, in, tg, B, T);
        model_backward(cpu);
        double nc = optim_grad_norm(model_grads(cpu), model_num_params(cpu));
        optim_step(&opt, model_params(cpu), model_grads(cpu), nc, 1.0);
        model_cuda_zero_grad(gm);
        model_cuda_set_batch(gm, in, tg, B, T, NULL, 1, &e);
        model_cuda_forward(gm);
        model_cuda_backward(gm);
        double lg = NAN, ng = NAN;
        model_cuda_loss(gm, &lg, &e);
        optim_cuda_grad_norm(&go, model_cuda_grads(gm), &ng, &e);
        optim_cuda_step(&go, model_cuda_params(gm), model_cuda_grads(gm), ng, 1.0);
        model_cuda_weights_changed(gm);
        double d = isfinite(lg) ? mc_rel(lg, lc) : INFINITY;
        if (d > worst) worst = d;
        if (s == 0) first = lc;
        last_c = lc;
        last_g = lg;
    }
    char name[96];
    snprintf(name, sizeof name, "%d steps %s: losses track the CPU's (config %d)", steps, use_muon ? "Muon" : "AdamW",
             variant);
    ck_report(name, worst, 1e-3);
    printf("      loss %.4f -> CPU %.4f, GPU %.4f\n", first, last_c, last_g);
    CHECK(last_c < first); /* it learned */
    /* the state comes back as optimizer.h's */
    size_t P = model_num_params(cpu);
    float *m1 = malloc(sizeof(float) * P), *v1 = malloc(sizeof(float) * P);
    int64_t t = 0;
    CHECK(optim_cuda_get_state(&go, m1, v1, &t, &e) == 0);
    CHECK(t == opt.t);
    snprintf(name, sizeof name, "%d steps %s: optimizer state (config %d)", steps, use_muon ? "Muon" : "AdamW", variant);
    ck_report(name, ck_err(m1, opt.m, P), 1e-2);
    free(m1); free(v1); free(ts); free(in); free(tg);
    optim_cuda_free(&go);
    optim_free(&opt);
    model_cuda_free(gm);
    model_free(cpu);
}

/* One Muon step on the GPU from the CPU's parameters and gradients, the
 * Newton-Schulz iteration of type ns (fp32 or bf16 mode's bf16): the
 * parameters' change against the CPU optimizer's, norm-wise, within limit. */
static void check_muon_step(gpu *g, int variant, gpu_dtype ns, double limit)
{
    model_config cfg = mc_config(variant);
    int B = 2, T = cfg.context, N = B * T;
    model *cpu;
    tempo_error e;
    if (model_create(&cpu, &cfg, B, &e)) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return;
    }
    model_init(cpu, 7);
    optim_config oc = mc_optim_config(1);
    size_t P = model_num_params(cpu);
    int n = model_num_tensors(cpu);
    optim_tensor *ts = mc_optim_tensors(cpu);
    rng_state r;
    rng_seed(&r, 9);
    int32_t *in = malloc(sizeof(int32_t) * N), *tg = malloc(sizeof(int32_t) * N);
    mc_batch(&r, in, tg, N, cfg.vocab_size);
    model_zero_grad(cpu);
    model_forward(cpu, in, tg, B, T);
    model_backward(cpu);
    float *p0 = malloc(sizeof(float) * P), *pg = malloc(sizeof(float) * P);
    memcpy(p0, model_params(cpu), sizeof(float) * P);
    gpu_ptr dp = 0, dg = 0;
    optimizer opt;
    optim_cuda go;
    CHECK(train_optimizer_create(&opt, cpu, &oc, &e) == 0);
    CHECK(optim_cuda_create(&go, g, &oc, ts, n, P, ns, &e) == 0);
    CHECK(gpu_alloc(g, &dp, P * 4, "params", &e) == 0 && gpu_alloc(g, &dg, P * 4, "grads", &e) == 0);
    CHECK(gpu_upload(g, dp, p0, P * 4, &e) == 0 && gpu_upload(g, dg, model_grads(cpu), P * 4, &e) == 0);
    double norm = optim_grad_norm(model_grads(cpu), P);
    optim_step(&opt, model_params(cpu), model_grads(cpu), norm, 1.0);
    optim_cuda_step(&go, dp, dg, norm, 1.0);
    CHECK(gpu_download(g, pg, dp, P * 4, &e) == 0);
    for (size_t i = 0; i < P; i++) { /* the changes, as each side made them */
        pg[i] -= p0[i];
        p0[i] = model_params(cpu)[i] - p0[i];
    }
    double moved = 0;
    for (size_t i = 0; i < P; i++) moved += (double)p0[i] * p0[i];
    CHECK(moved > 0);
    char name[96];
    snprintf(name, sizeof name, "Muon step, Newton-Schulz in %s: the update (config %d)", ns == GPU_BF16 ? "bf16" : "fp32",
             variant);
    ck_report(name, ck_err(pg, p0, P), limit);
    gpu_free(g, dp);
    gpu_free(g, dg);
    optim_cuda_free(&go);
    optim_free(&opt);
    free(p0); free(pg); free(ts); free(in); free(tg);
    model_free(cpu);
}

static inline void run_model_checks(gpu *g, int steps)
{
    for (int v = 0; v < 2; v++) {
        check_model_step(g, v, MODEL_CUDA_FP32);
        check_model_step(g, v, MODEL_CUDA_BF16);
    }
    check_queued_batches(g);
    check_training_steps(g, 0, 1, steps);
    check_training_steps(g, 1, 0, steps);
    for (int v = 0; v < 2; v++) {
        check_muon_step(g, v, GPU_F32, 1e-4);
        check_muon_step(g, v, GPU_BF16, 5e-2);
    }
}

#endif
