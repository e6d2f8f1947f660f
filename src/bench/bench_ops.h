/* bench_ops.h - the non-GEMM kernels of a preset's training step, timed one
 * by one at its shapes (`tempo bench kernels --kernel ops`): fused causal
 * attention forward and backward, RMSNorm forward and backward, the MLP
 * activation forward and backward, RoPE, the fused head + cross-entropy
 * (training pass, through a workspace as the model calls it) and the AdamW
 * update of the embedding. Each gets GFLOP/s (model FLOPs, the accounting
 * MFU uses: attention counts its causal half and not the backward's
 * recomputation) and GB/s (the bytes a call must move at least: every input
 * read and every output written once), so a compute-bound kernel is judged
 * against the FMA peak and a memory-bound one against the triad bandwidth.
 * Figures, never pass/fail. */
#ifndef TEMPO_BENCH_OPS_H
#define TEMPO_BENCH_OPS_H

#include "core/error.h"
#include "core/json_write.h"
#include "run/run_config.h"

typedef struct {
    const char *kernel;      /* "attention_fwd", ... */
    char shape[64];          /* e.g. "B16 T256 H3 Hkv3 D64" */
    double flops, bytes;     /* per call */
    double best_s;           /* best repetition */
    int reps;
    double other_load_cores; /* others' CPU use meanwhile (bench/sysload.h) */
    int contended;
    int bf16;                /* its products ran in bf16 (attention's and the head's, asked for and
                                possible here); the caller's MFU then is against the bf16 peak */
} bench_op_result;

typedef void (*bench_op_emit)(void *ctx, const bench_op_result *r);

/* Times every kernel above at cfg's shapes (micro_batch x context tokens)
 * with `threads` threads, each for at least min_seconds (>= 3 repetitions,
 * after one warm-up call), and calls emit once per kernel. With bf16, the
 * products of attention and the head run in bf16 (attention_forward_bf16,
 * the GEMM's bf16 mode), as a model with bf16 products trains; refused where
 * the CPU has no AVX-512 BF16. Restores the thread count. Fails when out of
 * memory or refused. */
int bench_ops_run(const run_config *cfg, int threads, int bf16, double min_seconds, bench_op_emit emit,
                  void *emit_ctx, tempo_error *err);

/* {"kernel":...,"shape":...,"op":"<preset>","threads":...,"precision":...,"gflops":...,
 *  "peak_gflops":...,"efficiency":...,"gbps":...,"bandwidth_gbs":...,
 *  "bw_efficiency":...,"us":...,"other_load_cores":...,"contended":...} as
 * one value into w; a peak or bandwidth <= 0 is null and so is its
 * efficiency. */
void bench_op_json(jsonw *w, const char *preset, int threads, const bench_op_result *r,
                   double peak_gflops, double bandwidth_gbs);

#endif
