/* bench_train.h - `tempo bench train`: the training step of a preset timed
 * as the trainer runs it (train/train_step.h + optim_step), on random tokens,
 * with where its time goes: tokens/s, model GFLOP/s and MFU against the
 * measured FMA peak, the time share of each op (core/op_profile.h), how busy
 * the threads were (CPU time / wall time x threads, and the implied share of
 * the step that ran on one thread), peak memory and page faults per step
 * after the first (a step that allocates fresh memory faults pages in).
 * Figures, never pass/fail. The JSON line is built here; printing and the
 * PyTorch comparison belong to the CLI. */
#ifndef TEMPO_BENCH_TRAIN_H
#define TEMPO_BENCH_TRAIN_H

#include <stddef.h>

#include "core/error.h"
#include "core/op_profile.h"
#include "core/json_write.h"
#include "parallel/dist.h"
#include "run/run_config.h"

typedef struct {
    const run_config *cfg;  /* finished (vocab filled in) */
    int threads;
    int steps;              /* timed steps (after warmup_steps untimed ones) */
    int warmup_steps;       /* >= 1: the first step packs, faults pages in */
    double peak_gflops;     /* measured FMA peak at `threads`; <= 0 unknown */
    unsigned long long seed;
    /* Data parallel (under mpirun; NULL or a world of 1: one process): each
     * rank runs batch_size / world rows of every step, then the gradient's
     * all-reduce as the trainer does it; the figures are the job's (the
     * global batch's tokens) and every rank must call bench_train_run. */
    dist_context *dist;
} bench_train_options;

typedef struct {
    int threads, steps;
    size_t params;
    double tokens_per_step;
    double step_seconds;        /* mean over the timed steps */
    double best_step_seconds;
    double tokens_per_second;   /* from the mean */
    double flops_per_token, model_gflops, peak_gflops, mfu;
    double cpu_utilisation;     /* process CPU time / (wall x threads) over the timed steps */
    double serial_share;        /* share of wall time with one thread busy, if the rest
                                   had all busy: (threads - util x threads) / (threads - 1) */
    double minor_faults_per_step;  /* after warm-up; ~0 when nothing allocates */
    double peak_rss_mib;        /* the process's high-water mark (VmHWM) */
    double model_mib;           /* parameters + gradients + activations */
    double optimizer_mib;       /* optimizer state */
    double first_step_seconds;
    double loss_first, loss_last;
    op_profile prof;            /* summed over the timed steps */
    int thread_cpus[16];        /* CPU each thread is bound to, -1 when not bound (core/thread_pin.h) */
    int pinned;                 /* every thread bound to its own CPU */
    double other_load_cores;    /* others' CPU use meanwhile (bench/sysload.h) */
    int contended;
    int ranks;                  /* 1: one process */
    int replicas;               /* thread replicas the step ran on (train_step.h); 0: none */
    double comm_seconds;        /* per step: the gradient's all-reduce (and the wait for the slowest rank) */
} bench_train_result;

int bench_train_run(const bench_train_options *o, bench_train_result *r, tempo_error *err);

/* {"bench":"train","preset":...,"threads":...,"tokens_per_s":...,"mfu":...,
 *  "ops":{"gemm_fwd":{"s_per_step":...,"share":...,"calls_per_step":...,
 *  "threads_busy": process CPU time / wall time over the op},...,"other":{...}},...}
 * as one value into w. */
void bench_train_json(jsonw *w, const run_config *cfg, const bench_train_result *r);

#define BENCH_TRAIN_MAX_THREADS 8

/* Under mpirun: {"bench":"train","summary":true,"preset":...,"ranks":N,
 * "threads_per_rank":t,"tokens_per_s_ranks":...,"one_process_threads":t x N,
 * "tokens_per_s_one_process":...,"scaling_efficiency": ranks / one process,
 * "comm_share": the all-reduce's share of the ranks' step} into w. */
void bench_train_ranks_summary_json(jsonw *w, const char *preset, const bench_train_result *ranks,
                                    const bench_train_result *one);

/* What the summary line compares: tokens/s per thread count, and the
 * PyTorch reference's when it was asked for. */
typedef struct {
    int n_threads;
    int threads[BENCH_TRAIN_MAX_THREADS];
    double tokens_per_s[BENCH_TRAIN_MAX_THREADS];
    int torch_threads;          /* 0: no PyTorch comparison asked for */
    double torch_tokens_per_s;  /* <= 0: the reference failed */
} bench_train_summary;

/* {"bench":"train","summary":true,"preset":...,"tokens_per_s":{"<t>":...},
 *  "second_thread_speedup": tokens/s at 2 / at 1 (when both ran), with
 *  torch_threads: "torch_tokens_per_s" and "ratio_vs_torch" (tempo at the
 *  last thread count / torch; both null when the reference failed)} as one
 * value into w. */
void bench_train_summary_json(jsonw *w, const char *preset, const bench_train_summary *s);

#endif
