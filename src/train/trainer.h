/* trainer.h - the budgeted training loop: data in, checkpoints and figures out.
 *
 * The budget covers the loop only (startup: reading data, building the model;
 * and the final full validation are timed and reported separately). The
 * learning rate follows the schedule over progress p = elapsed / budget, or
 * p = step / max_steps when a step limit is given (reproducible runs, tests).
 * The loop predicts the next step's duration and stops before it would cross
 * the budget. A non-finite loss or gradient restores the last good in-memory
 * state and lowers the learning rate (at most max_retries times). Checkpoints
 * are written at step 0 of a new run (before the count memory's build: a
 * run killed before its first periodic one resumes from the start, reusing a
 * memory.bin of the same data), every checkpoint_every seconds, at the end,
 * and when *stop_flag becomes non-zero (the CLI sets it on SIGINT/SIGTERM),
 * the later ones each after model.safetensors (a disk full at the end keeps
 * the model). A metrics line that cannot be written (a full disk) ends the
 * run with that error. */
#ifndef TEMPO_TRAINER_H
#define TEMPO_TRAINER_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "eval/bpb_result.h"
#include "parallel/dist.h"
#include "run/run_config.h"

typedef struct {
    const char *data_dir;
    const char *out_dir;
    const char *memory_store; /* the count memories' shared store (memory_store.h): NULL = DATA_DIR/memory-store,
                               * "none" or "" = none */
    double budget_s;          /* 0 = no wall-clock limit (then max_steps is required) */
    int64_t max_steps;        /* 0 = none */
    int64_t stop_at_step;     /* testing: checkpoint and stop after this step, as if interrupted (0 = off) */
    int64_t inject_nan_step;  /* testing: pretend the loss is NaN at this step (once) to exercise the guard */
    int threads;
    uint64_t seed;
    int resume;
    int resume_other_world;   /* allow resuming a checkpoint written by another number of ranks */
    int eval_stride;          /* final val bpb stride; 0 = context / 2 */
    int final_eval;           /* run the full val evaluation at the end */
    int64_t val_limit;        /* score only the first N val tokens (quick experiments); 0 = all */
    run_config cfg;           /* already with preset and --set applied (vocab filled in by the trainer) */
    double peak_gflops;       /* measured FMA peak at `threads`, for MFU; 0 = unknown */
    volatile sig_atomic_t *stop_flag;
    FILE *progress;           /* human progress (stderr), or NULL */
    /* Data parallel over ranks (NULL or a world of 1: one process). Each
     * rank trains on its share of every global batch (batch_size / world
     * sequences: the same rows a single process would take, rank by rank);
     * the gradients are averaged over ranks before the optimizer's step, so
     * every rank holds the same weights. Rank 0 owns the clock: its stop and
     * schedule decisions and its snapshot times are broadcast each step. The
     * count memory's build, the val slices and the final evaluation's windows
     * are shared out; rank 0 keeps the memory, fits the mixer, reads the val
     * stream through the mixture and writes the files (docs/distributed.md). */
    dist_context *dist;
    int progress_tty;         /* redraw one line instead of printing lines */
    /* Train on a GPU (kernels/cuda/gpu.h, opened by the caller): the steps
     * (forward, backward, optimizer), the periodic and final evaluations and
     * the mixer's fit run there (model_cuda.h); the count memory, the data
     * and the files stay on the host. NULL: the CPU. One process, one GPU.
     * peak_gflops is then the GPU's measured matrix rate for the precision. */
    struct gpu *gpu;
    int gpu_bf16;             /* 1: bf16 operands (model_cuda.h's MODEL_CUDA_BF16); 0: fp32 */
    const char *commit;       /* git commit of this tempo, recorded in model.safetensors; NULL = none */
} train_options;

#define TRAIN_RANK_REPORT_MAX 64

typedef struct {
    hybrid_bpb_result val;            /* the full validation (result.json's val_* figures; the mixture's
                                         bpb and loss, each component's and the weights NaN when not run) */
    double train_seconds, overrun_seconds, startup_seconds;
    double budget_s;
    int64_t steps;
    uint64_t tokens;
    size_t params;
    double tokens_per_second, mfu, flops_per_token, model_gflops;
    double final_train_loss;
    int retries;
    int interrupted;                  /* stopped by the stop flag or stop_at_step */
    double peak_gflops;
    double step_seconds_mean;
    /* the hybrid model (docs/hybrid_model.md); memory_order 0 = no count memory */
    int memory_order, cache_order, match_length;
    double adapt_lr;                /* the transformer's learning rate while it read val (0: frozen) */
    double memory_seconds;            /* building the count memory, charged to the budget */
    double memory_save_seconds;       /* writing memory.bin, in the background while training */
    uint64_t memory_bytes, memory_entries, memory_tokens;
    int memory_budget_capped;         /* 1: the memory counted a prefix, for the budget (memory_budget.h) */
    char memory_store[1200];          /* the store's copy that RUN_DIR/memory.bin links ("": not shared) */
    int memory_store_reused;          /* 1: the store held this memory already; the run's copy was dropped */
    uint64_t mixer_tokens;            /* held-out tokens the mixer was fitted on */
    double mixer_seconds;             /* fitting the mixer on held-out training tokens, charged to the budget */
    /* Where train_seconds went, this session (a resumed run: since the resume):
     * the steps (forward, backward, optimizer, batch assembly), the periodic
     * validation slices, checkpoints, in-memory snapshots for the divergence
     * guard, the count memory's build and the mixer's fit; `other` is the rest
     * (progress, metrics, the schedule, the host). They add up to the session's
     * share of train_seconds. */
    struct {
        double steps, val_slices, checkpoints, snapshots, memory_build, mixer_fit, other;
    } phase_seconds;
    int world_size;                   /* ranks that trained (1 = one process) */
    /* memory per rank (the first TRAIN_RANK_REPORT_MAX ranks): the optimizer
     * state each keeps (shrinks with the ranks under shard_optimizer) and its
     * peak resident set (VmHWM) at the end of training */
    int shard_optimizer;              /* the optimizer state was sharded (ZeRO-1) */
    int overlap_comm;                 /* with ranks: gradients reduced beside the backward pass */
    int n_rank_report;
    double rank_optimizer_bytes[TRAIN_RANK_REPORT_MAX], rank_peak_rss_bytes[TRAIN_RANK_REPORT_MAX];
    int failed_in_setup;              /* the error came before the first collective, the same on every
                                         rank (a multi-rank job can end without an abort) */
    double comm_seconds;              /* of phase_seconds.steps: averaging gradients over ranks */
    char device[160];                 /* "cpu", or the GPU's name */
    const char *precision;            /* the products' operands: "bf16" or "fp32" (the CPU's bf16_products) */
} train_result;

int train_run(const train_options *opt, train_result *res, tempo_error *err);

#endif
