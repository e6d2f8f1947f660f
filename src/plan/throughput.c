/* throughput.c - the step-time model and its calibration (see throughput.h).
 *
 * Notation (llm.c style): R rows (sequences) per rank per step, T context,
 * C d_model, L layers, H heads, K kv heads, D head dim, F d_ff, V vocab,
 * N = R*T tokens per rank per step, f = 4 bytes (tempo trains in fp32; the
 * chip's train_dtype sets the activation bytes elsewhere).
 * FLOPs follow model_flops_per_token (model/config.c): 2 per multiply-add,
 * backward = 2 x forward for the projections, causal attention counted as
 * half the T x T products (the kernel skips masked tiles). */
#include "plan/throughput.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_train.h"
#include "core/fileio.h"

/* Newton-Schulz FLOPs of one m x n matrix per step (quintic iteration on the
 * smaller side s = min(m, n), large l: A = X X^T (2 s^2 l), B = b A + c A A
 * (2 s^3), X' = a X + B X (2 s^2 l)). */
static double ns_flops(double m, double n, int steps)
{
    double s = m < n ? m : n, l = m < n ? n : m;
    return steps * (4 * s * s * l + 2 * s * s * s);
}

/* The step's sizes in the notation above, per rank. */
typedef struct {
    double R, T, C, L, H, D, K, V, F, N, f;
    double micro;      /* forward/backward passes per step on this rank */
    double pass_rows;  /* rows of one pass */
    double matrix_w;   /* the layers' projection weights */
    double P;          /* every parameter */
    int swiglu;
} step_dims;

static void step_dims_of(const run_config *cfg, int ranks, step_dims *d)
{
    const model_config *mc = &cfg->model;
    double R = (double)cfg->batch_size / ranks, T = mc->context, C = mc->d_model, L = mc->n_layers;
    double H = mc->n_heads, D = C / H, K = mc->n_kv_heads > 0 ? mc->n_kv_heads : H, V = mc->vocab_size;
    double F = mc->d_ff, N = R * T, f = 4;
    int mb = cfg->micro_batch > 0 ? cfg->micro_batch : cfg->batch_size;
    double micro = ceil(R / (mb < R ? mb : R));
    model_layer_params lp = model_config_layer_params(mc);
    double matrix_w = L * (lp.attn + lp.mlp);
    double norm_w = L * lp.norms + C;
    double embed_w = V * C, head_w = mc->tied_head ? 0 : V * C;
    double P = matrix_w + norm_w + embed_w + head_w;
    *d = (step_dims){.R = R, .T = T, .C = C, .L = L, .H = H, .D = D, .K = K, .V = V, .F = F, .N = N, .f = f,
                     .micro = micro, .pass_rows = (double)(mb < R ? mb : R), .matrix_w = matrix_w, .P = P,
                     .swiglu = mc->mlp == MLP_SWIGLU};
}

/* Each op's FLOPs, bytes moved and kernel calls in one step. */
static void step_work(const run_config *cfg, const step_dims *d, step_prediction *p)
{
    const model_config *mc = &cfg->model;
    double T = d->T, C = d->C, L = d->L, H = d->H, D = d->D, K = d->K, V = d->V, F = d->F, N = d->N, f = d->f;
    double micro = d->micro, matrix_w = d->matrix_w, P = d->P;
    int swiglu = d->swiglu;
    /* activations in and out of the projections per token per layer (floats) */
    double proj_io = (C + H * D + 2 * K * D) + (H * D + C) + (C + F * (swiglu ? 2 : 1)) + (F + C);
    p->flops[OP_GEMM_FWD] = 2 * N * matrix_w;
    p->bytes[OP_GEMM_FWD] = f * (N * L * proj_io + matrix_w * micro);
    p->calls[OP_GEMM_FWD] = micro * L * (swiglu ? 7 : 6);
    p->flops[OP_GEMM_BWD] = 4 * N * matrix_w;
    p->bytes[OP_GEMM_BWD] = f * (2 * N * L * proj_io + 2 * matrix_w * micro);
    p->calls[OP_GEMM_BWD] = micro * L * (swiglu ? 5 : 4);
    p->flops[OP_ATTN_FWD] = 2 * N * L * T * H * D;
    p->bytes[OP_ATTN_FWD] = f * N * L * (H * D * 2 + 2 * K * D);
    p->calls[OP_ATTN_FWD] = micro * L;
    p->flops[OP_ATTN_BWD] = 4 * N * L * T * H * D;
    p->bytes[OP_ATTN_BWD] = f * N * L * (H * D * 4 + 4 * K * D);
    p->calls[OP_ATTN_BWD] = micro * L;
    p->flops[OP_HEAD] = 6 * N * V * C;
    p->bytes[OP_HEAD] = f * (N * C * 2 + 3 * V * C * micro);
    p->calls[OP_HEAD] = micro;
    /* norms: forward reads x and writes y, backward reads x and dy, writes dx */
    double norms = 2 * L + 1;
    p->bytes[OP_NORM] = f * N * (norms * C * 5 + (mc->qk_norm ? L * (H + K) * D * 5 : 0));
    p->calls[OP_NORM] = micro * 2 * norms;
    p->bytes[OP_ROPE] = f * N * L * (H + K) * D * 4;
    p->calls[OP_ROPE] = micro * L * 4;
    p->bytes[OP_ACTIVATION] = f * N * L * F * (swiglu ? 8 : 5);
    p->calls[OP_ACTIVATION] = micro * L * 2;
    p->bytes[OP_EMBEDDING] = f * N * C * 3;
    p->calls[OP_EMBEDDING] = micro * 2;
    p->bytes[OP_HEAD_GRAD_ADD] = f * V * C * 3;
    p->calls[OP_HEAD_GRAD_ADD] = 1;
    p->bytes[OP_GRAD_NORM] = f * P;
    p->calls[OP_GRAD_NORM] = 1;
    p->bytes[OP_DATA] = 8 * N;
    p->calls[OP_DATA] = micro;
    /* optimizer: AdamW reads p, g, m, v and writes p, m, v (7 floats); Muon
     * matrices read g, m, p and write m, p plus the Newton-Schulz products */
    double adam_params = cfg->optim.use_muon ? P - matrix_w : P;
    p->bytes[OP_OPTIMIZER] = f * (7 * adam_params + (cfg->optim.use_muon ? 8 * matrix_w : 0));
    if (cfg->optim.use_muon) {
        int s = cfg->optim.ns_steps;
        p->flops[OP_OPTIMIZER] = L * (ns_flops(H * D, C, s) + 2 * ns_flops(K * D, C, s) + ns_flops(C, H * D, s) +
                                      (swiglu ? 2 : 1) * ns_flops(F, C, s) + ns_flops(C, F, s));
    }
    p->calls[OP_OPTIMIZER] = 1;
}

/* Each op's seconds on the chip: its roofline over the chip's efficiency for it plus its calls'
 * overhead, summed into the step's seconds and split into compute- and memory-bound time. */
static void op_seconds(const chip_profile *chip, step_prediction *p)
{
    double peak = chip->peak_tflops * 1e12, bw = chip->bandwidth_gbs * 1e9;
    for (int k = 0; k < OP_COUNT; k++) {
        double tc = p->flops[k] / peak, tb = p->bytes[k] / bw;
        p->roofline_s[k] = tc > tb ? tc : tb;
        double over = p->calls[k] * chip->call_overhead_us * 1e-6;
        p->seconds[k] = p->roofline_s[k] / chip->eff[k] + over;
        if (k == OP_OPTIMIZER) {
            /* two phases, not overlapped: the element-wise update streams every
             * parameter like the gradient norm does (its efficiency), then Muon's
             * Newton-Schulz products run at the optimizer's own */
            p->roofline_s[k] = tc;
            p->optimizer_stream_s = tb / chip->eff[OP_GRAD_NORM];
            p->seconds[k] = (tc > 0 ? tc / chip->eff[k] : 0) + p->optimizer_stream_s + over;
        }
        p->overhead_s += over;
        if (tc >= tb)
            p->compute_bound_s += p->seconds[k] - over;
        else
            p->memory_bound_s += p->seconds[k] - over;
        p->step_s += p->seconds[k];
    }
}

/* The trainer's default: the fp32 gradient reduced span by span beside the backward pass, ring
 * all-reduces over the chip's link (plan/comm_model.h); only the part the step waits for counts. */
static void allreduce_seconds(const model_config *mc, const chip_profile *chip, int ranks, double P,
                              step_prediction *p)
{
    double spans[COMM_MAX_SPANS];
    int n_spans = comm_grad_spans(mc, spans, COMM_MAX_SPANS);
    comm_step_parts parts;
    throughput_comm_parts(p, &parts);
    link_model link = {"chip", chip->link_gbs, chip->link_latency_us};
    comm_step cs;
    if (n_spans == 0) {   /* more layers than spans kept: one collective after the pass */
        spans[0] = P;
        comm_project(&parts, spans, 1, ranks, 0, 0, &link, &cs);
    } else {
        comm_project(&parts, spans, n_spans, ranks, 0, 1, &link, &cs);
    }
    p->allreduce_total_s = cs.comm_s;
    p->allreduce_s = cs.exposed_s;
    p->step_s += p->allreduce_s;
}

int throughput_predict(const run_config *cfg, const chip_profile *chip, int ranks, step_prediction *p,
                       tempo_error *err)
{
    memset(p, 0, sizeof *p);
    if (ranks < 1)
        return tempo_usage(err, "throughput: ranks %d (need >= 1)", ranks);
    if (cfg->batch_size % ranks)
        return tempo_usage(err, "throughput: batch_size %d not divisible by %d ranks", cfg->batch_size, ranks);
    step_dims d;
    step_dims_of(cfg, ranks, &d);
    p->params = d.P;
    step_work(cfg, &d, p);
    op_seconds(chip, p);
    p->overhead_s += chip->step_overhead_ms * 1e-3;
    p->step_s += chip->step_overhead_ms * 1e-3;
    p->passes = d.micro;
    p->fixed_s = chip->step_overhead_ms * 1e-3;
    if (ranks > 1)
        allreduce_seconds(&cfg->model, chip, ranks, d.P, p);
    p->tokens_per_step = (double)cfg->batch_size * d.T;
    p->tokens_per_s = p->tokens_per_step / p->step_s;
    /* weights, gradients, two optimizer moments (fp32), activations kept for backward */
    double T = d.T, C = d.C, L = d.L, F = d.F, f = d.f;
    double act = d.pass_rows * T * (L * (10 * C + 3 * F) + 4 * C) * f;
    p->memory_gb = (16 * d.P + act) / 1e9;
    return 0;
}

void throughput_comm_parts(const step_prediction *p, comm_step_parts *out)
{
    double bwd = p->seconds[OP_GEMM_BWD] + p->seconds[OP_ATTN_BWD] +
                 0.5 * (p->seconds[OP_NORM] + p->seconds[OP_ROPE] + p->seconds[OP_ACTIVATION]);
    out->optimizer_s = p->seconds[OP_OPTIMIZER] + p->seconds[OP_GRAD_NORM];
    out->fixed_s = p->fixed_s;
    out->compute_s = p->step_s - p->allreduce_s - out->optimizer_s - out->fixed_s;
    out->last_backward_s = bwd / (p->passes > 0 ? p->passes : 1);
}

double throughput_memory_build_s(double tokens, double s_per_mtok)
{
    return tokens / 1e6 * s_per_mtok;
}

int throughput_measure(const run_config *cfg, const chip_profile *chip, int threads, int steps,
                       throughput_measurement *m, tempo_error *err)
{
    memset(m, 0, sizeof *m);
    step_prediction p;
    if (throughput_predict(cfg, chip, 1, &p, err))
        return -1;
    bench_train_options o = {.cfg = cfg, .threads = threads, .steps = steps, .warmup_steps = 1,
                             .peak_gflops = chip->peak_tflops * 1e3, .seed = 1};
    bench_train_result r;
    if (bench_train_run(&o, &r, err))
        return -1;
    snprintf(m->preset, sizeof m->preset, "%s", cfg->preset);
    m->measured_tokens_per_s = r.tokens_per_second;
    m->predicted_tokens_per_s = p.tokens_per_s;
    double covered = 0;
    for (int k = 0; k < OP_COUNT; k++) {
        m->measured_s[k] = r.prof.seconds[k] / r.steps;
        covered += m->measured_s[k];
        m->roofline_s[k] = p.roofline_s[k];
        m->calls[k] = p.calls[k];
    }
    m->optimizer_stream_roofline_s = p.optimizer_stream_s * chip->eff[OP_GRAD_NORM];
    m->measured_s[OP_COUNT] = fmax(0, r.step_seconds - covered);
    m->other_load_cores = r.other_load_cores;
    return 0;
}

/* A preset's weight in the fits below: 1 / its step time squared, so that each
 * is fitted relative to its step and a small preset counts as much as a big one. */
static double preset_weight(const throughput_measurement *m)
{
    double step = 0;
    for (int k = 0; k <= OP_COUNT; k++)
        step += m->measured_s[k];
    return step > 0 ? 1 / (step * step) : 0;
}

/* time_pk = roofline_pk x inv_eff_k + calls_pk x overhead, fitted by weighted
 * least squares over presets p and ops k (weight 1 / preset's step time, so a
 * small preset counts as much as a big one), alternating between the per-op
 * inverse efficiencies (>= 1) and the one per-call overhead (>= 0). The
 * optimizer's measured time is first reduced by its streaming phase. */
static void fit_efficiencies(const throughput_measurement *m, int n, double inv_eff[OP_COUNT], double *overhead_s)
{
    double w2[16], stream[16];
    for (int i = 0; i < n; i++)
        w2[i] = preset_weight(&m[i]);
    for (int k = 0; k < OP_COUNT; k++)
        inv_eff[k] = 1;
    *overhead_s = 0;
    for (int iter = 0; iter < 200; iter++) {
        for (int i = 0; i < n; i++)
            stream[i] = m[i].optimizer_stream_roofline_s * inv_eff[OP_GRAD_NORM];
        for (int k = 0; k < OP_COUNT; k++) {
            double num = 0, den = 0;
            for (int i = 0; i < n; i++) {
                double meas = m[i].measured_s[k] - (k == OP_OPTIMIZER ? stream[i] : 0);
                num += w2[i] * m[i].roofline_s[k] * (meas - m[i].calls[k] * *overhead_s);
                den += w2[i] * m[i].roofline_s[k] * m[i].roofline_s[k];
            }
            inv_eff[k] = den > 0 ? fmax(1, fmin(1e6, num / den)) : 1;
        }
        double num = 0, den = 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < OP_COUNT; k++) {
                double meas = m[i].measured_s[k] - (k == OP_OPTIMIZER ? stream[i] : 0);
                num += w2[i] * m[i].calls[k] * (meas - m[i].roofline_s[k] * inv_eff[k]);
                den += w2[i] * m[i].calls[k] * m[i].calls[k];
            }
        *overhead_s = den > 0 ? fmax(0, num / den) : 0;
    }
}

void throughput_calibration_write(const throughput_measurement *m, int n, const char *header, strbuf *out)
{
    strbuf_puts(out, header);
    /* the time no op covers, weighted as the efficiencies' fit weighs its presets: with thread
     * replicas it is mostly the threads waiting for each other, which a big preset's long steps
     * would otherwise impose on a small one's */
    double other = 0, wsum = 0;
    for (int i = 0; i < n; i++) {
        double w = preset_weight(&m[i]);
        other += w * m[i].measured_s[OP_COUNT];
        wsum += w;
    }
    double inv_eff[OP_COUNT], overhead_s;
    fit_efficiencies(m, n > 16 ? 16 : n, inv_eff, &overhead_s);
    strbuf_printf(out, "call_overhead_us = %.3f\nstep_overhead_ms = %.3f\n", overhead_s * 1e6,
                  wsum > 0 ? 1e3 * other / wsum : 0.0);
    for (int k = 0; k < OP_COUNT; k++) {
        double roof = 0, meas = 0, calls = 0;
        for (int i = 0; i < n; i++) {
            roof += m[i].roofline_s[k];
            meas += m[i].measured_s[k];
            calls += m[i].calls[k];
        }
        strbuf_printf(out, "eff.%s = %.6g    # roofline %.5f s, measured %.5f s, %.0f calls, summed over the presets\n",
                      op_kind_name((op_kind)k), 1 / inv_eff[k], roof, meas, calls);
    }
}

int throughput_chip_refit(const char *chip_path, const throughput_measurement *m, int n, int skip, chip_profile *out,
                          tempo_error *err)
{
    char *text;
    size_t len;
    if (file_read_all(chip_path, &text, &len, 1 << 20, err))
        return -1;
    strbuf s = {0};
    for (char *line = text, *nl; line < text + len; line = nl + 1) {
        nl = memchr(line, '\n', (size_t)(text + len - line));
        if (!nl)
            nl = text + len;
        if (strncmp(line, "efficiencies", 12))
            strbuf_append(&s, line, (size_t)(nl - line) + (nl < text + len));
    }
    strbuf_puts(&s, "\n");
    throughput_measurement rest[16];
    int k = 0;
    for (int i = 0; i < n; i++)
        if (i != skip)
            rest[k++] = m[i];
    throughput_calibration_write(rest, k, "", &s);
    int rc = chip_parse(out, s.data, s.len, chip_path, err);
    strbuf_free(&s);
    free(text);
    return rc;
}
