/* bench_train_cuda.h - `tempo bench train --device cuda`: the training step
 * of a preset on a GPU, timed as the trainer runs it (train_step_cuda.h +
 * optim_cuda_step) on random tokens: tokens/s, model TFLOP/s and MFU against
 * the GPU's measured matrix rate (bench/peak_cuda.h, measured in the same
 * run), where a step's time goes (forward, backward, the gradient's norm,
 * the optimizer; one extra step with a synchronisation between the parts),
 * and the device memory used. Figures, never pass/fail. */
#ifndef TEMPO_BENCH_TRAIN_CUDA_H
#define TEMPO_BENCH_TRAIN_CUDA_H

#include <stddef.h>

#include "core/error.h"
#include "core/json_write.h"
#include "kernels/cuda/gpu.h"
#include "model/model_cuda.h"
#include "run/run_config.h"

typedef struct {
    const run_config *cfg;        /* finished (vocab filled in) */
    int steps, warmup_steps;
    model_cuda_precision precision;
    unsigned long long seed;
    double peak_tflops;           /* the precision's measured matrix rate; <= 0: unknown */
} bench_train_cuda_options;

typedef struct {
    char device[128];
    const char *precision;        /* "bf16" or "fp32" */
    int steps;
    size_t params;
    double tokens_per_step, step_seconds, best_step_seconds, tokens_per_second;
    double flops_per_token, model_tflops, peak_tflops, mfu;
    double forward_ms, backward_ms, norm_ms, optimizer_ms; /* one synchronised step */
    double first_step_seconds;
    double loss_first, loss_last;
    double device_gb;             /* model + optimizer on the GPU */
    /* one more step with every kernel waited for (gpu_profile_enable): the
     * largest totals, milliseconds per step (launch latency included) */
    int n_kernels;
    const char *kernel_name[24];
    double kernel_ms[24];
    int kernel_calls[24];
} bench_train_cuda_result;

int bench_train_cuda_run(gpu *g, const bench_train_cuda_options *o, bench_train_cuda_result *r, tempo_error *err);
void bench_train_cuda_write(jsonw *w, const run_config *cfg, const bench_train_cuda_result *r);

#endif
