/* bench_gemm.h - the GEMM benchmark behind `tempo bench kernels --kernel gemm`:
 * the product shapes of a preset's training step (forward x W^T, backward
 * dx = dy W, weight gradient dW += dy^T x, the chunked output head, Muon's
 * Newton-Schulz products) timed at a given thread count, as GFLOP/s and as a
 * share of the measured FMA peak.
 * Figures, never pass/fail. Printing belongs to the CLI; the JSON line is
 * built here so every caller reports the same fields. */
#ifndef TEMPO_BENCH_GEMM_H
#define TEMPO_BENCH_GEMM_H

#include "bench/bench_timing.h"
#include "core/error.h"
#include "core/json_write.h"
#include "kernels/cpu/gemm.h"
#include "run/run_config.h"

typedef struct {
    int M, N, K, trans_a, trans_b;
    char op[96];   /* what the product is in the model, e.g. "cpu-default fwd wq/wk/wv/wo" */
    char batch_dim; /* 'M' or 'K': the dimension that counts the step's batch rows, which training
                       splits over the threads' replicas; 0: none (a head chunk, a Muon matrix,
                       a --shape) */
} bench_gemm_shape;

/* The distinct GEMM shapes of one training step of cfg (finished: vocab
 * filled in), tagged "<preset> <what>": per layer the forward products
 * (tokens = micro_batch x context rows), their input gradients (dx) and
 * weight gradients (dW); the output head's three products on a chunk of
 * MODEL_HEAD_CHUNK_ROWS rows; Muon's three Newton-Schulz products per matrix
 * shape (when the optimizer is Muon). Products of equal shape and
 * transposition are listed once with their names joined. Writes at most max;
 * returns the count. */
int bench_gemm_preset_shapes(const run_config *cfg, bench_gemm_shape *out, int max);

/* The product one thread of `threads` runs when training runs s: training
 * splits no product between threads (each thread's replica of the model
 * runs its share of the batch's rows, and the optimizer gives each matrix's
 * Newton-Schulz to one thread), so a step product's batch dimension is
 * divided by the threads, and any other product is whole. */
bench_gemm_shape bench_gemm_per_thread(const bench_gemm_shape *s, int threads);

/* Parse "MxNxK" or "MxNxK:ta:tb" (ta, tb 0 or 1; default 0 0). */
int bench_gemm_parse_shape(const char *text, bench_gemm_shape *s, tempo_error *err);

typedef struct {
    double gflops;            /* 2 M N K / best time */
    double best_s;            /* best repetition, seconds */
    int reps;
    double other_load_cores;  /* others' CPU use meanwhile (bench/sysload.h) */
    int contended;
    int threads_used;         /* tempo's GEMM (bench_gemm_measure): the threads it split the
                                 product among (gemm_split); 0 when unknown (another library) */
    int owns_b;               /* ... and whether each owned a column chunk and its part of B */
    int bf16;                 /* tempo's GEMM in its bf16 mode (gemm_config.bf16): operands rounded to
                                 bf16, fp32 sums; 0: fp32 (and any other library's sgemm) */
} bench_gemm_result;

/* One product C = op(A) op(B) (beta 0) of shape s by some implementation;
 * lda/ldb/ldc are the packed row lengths. */
typedef void (*bench_gemm_fn)(void *ctx, const bench_gemm_shape *s, const float *A, int lda,
                              const float *B, int ldb, float *C, int ldc);

/* Time fn on random operands with `threads` OpenMP threads, after one
 * warm-up call: repetitions until min_seconds have passed (at least 3), best
 * kept. Restores the thread count. */
int bench_gemm_time(bench_gemm_fn fn, void *ctx, const bench_gemm_shape *s, int threads,
                    double min_seconds, bench_gemm_result *r, tempo_error *err);

/* Time per_thread as training runs it at `threads` threads: every thread its
 * own product on its own operands (ctxs[t] its fn context), one thread
 * each, back to back inside one parallel region (as a replica's step or the
 * optimizer's matrices run; a region's start, tens of microseconds on this
 * host, is spread over at least a millisecond of products). r->best_s is
 * the best time of one product on every thread at once, r->gflops all
 * threads' FLOPs over it. */
#define BENCH_GEMM_REPLICAS_MAX 4096
int bench_gemm_time_replicas(bench_gemm_fn fn, void *const *ctxs, const bench_gemm_shape *per_thread,
                             int threads, double min_seconds, bench_gemm_result *r, tempo_error *err);
/* bench_gemm_time_replicas of tempo's GEMM, a gemm_context per thread, in
 * the bf16 mode when bf16 is set (-1 with err where the CPU has none). */
int bench_gemm_measure_replicas(const bench_gemm_shape *per_thread, int threads, int bf16, double min_seconds,
                                bench_gemm_result *r, tempo_error *err);

/* A shape measured the way training runs it (threads > 1): the per-thread
 * product, tempo's figure, and the peer's best of its own threading of the
 * whole product and of this way (peer_gflops 0: no peer). */
typedef struct {
    bench_gemm_shape per_thread;
    bench_gemm_result r;
    double peer_gflops;
    const char *peer_way;   /* "its threads" or "a product a thread" */
} bench_gemm_as_trained;

/* bench_gemm_time of gemm_f32_ctx(ctx, ...): the path a hot caller uses
 * (config and packing workspace held, so no per-call query or allocation),
 * in the mode ctx->cfg is set to (r->bf16 says which). */
int bench_gemm_measure(gemm_context *ctx, const bench_gemm_shape *s, int threads,
                       double min_seconds, bench_gemm_result *r, tempo_error *err);

/* {"kernel":"gemm","shape":"MxNxK ta tb","op":...,"threads":t,"gflops":...,
 *  "peak_gflops":...,"efficiency":...,"path":...,"other_load_cores":...,
 *  "contended":...} as one value into w, "precision" ("fp32" or "bf16": r->bf16)
 *  after "threads"; when r->threads_used > 0 also
 *  "threads_used" and "split" ("one thread", "shared B" or "owned columns"). peak_gflops (the hardware
 * profile's) <= 0 leaves efficiency null. peak_now_gflops > 0 (an FMA peak
 * measured in the same run: the host's other tenants can lower it) adds
 * "peak_now_gflops" and "efficiency_now". With a peer result (peer != NULL,
 * e.g. OpenBLAS), also "openblas_gflops":..., "ratio": gflops /
 * openblas_gflops. With at (not NULL), "as_trained": {"split" ("a
 * replica's rows a thread" or "a product a thread"), "shape" (each
 * thread's), "gflops", "efficiency", with a peer "openblas_gflops",
 * "openblas_way", "ratio"}. */
void bench_gemm_json(jsonw *w, const bench_gemm_shape *s, int threads, const bench_gemm_result *r,
                     double peak_gflops, double peak_now_gflops, const char *path,
                     const bench_gemm_result *peer, const bench_gemm_as_trained *at);

#define BENCH_GEMM_MAX_THREADS 8

/* The flop-weighted summary over all shapes, per thread count: total FLOPs
 * / total best time, for tempo and (when measured) the peer. The caller
 * fills n_threads, threads[], peak_gflops[] (the profile's, <= 0 unknown)
 * and peak_now_gflops[], zeroes the rest, then adds every measured pair. */
typedef struct {
    int n_threads;
    int threads[BENCH_GEMM_MAX_THREADS];
    double peak_gflops[BENCH_GEMM_MAX_THREADS];
    double peak_now_gflops[BENCH_GEMM_MAX_THREADS];
    double flops[BENCH_GEMM_MAX_THREADS], seconds[BENCH_GEMM_MAX_THREADS];
    double peer_seconds[BENCH_GEMM_MAX_THREADS];   /* 0: no peer measured */
    /* the shapes as training runs them (bench_gemm_summary_add_trained; 0 when not measured) */
    double at_flops[BENCH_GEMM_MAX_THREADS], at_seconds[BENCH_GEMM_MAX_THREADS];
    double at_peer_seconds[BENCH_GEMM_MAX_THREADS];
    int n_shapes;                                  /* distinct shapes added */
    int bf16;                                      /* tempo's products were bf16 ("precision") */
    int contended;                                 /* any measurement was */
} bench_gemm_summary;

/* Adds the measurement of shape s at thread index t (peer may be NULL). */
void bench_gemm_summary_add(bench_gemm_summary *sum, int t, const bench_gemm_shape *s,
                            const bench_gemm_result *r, const bench_gemm_result *peer);

/* Adds shape s's measurement as training runs it at thread index t: the
 * same FLOPs as s at the speed measured (its peer's best way, when it has one). */
void bench_gemm_summary_add_trained(bench_gemm_summary *sum, int t, const bench_gemm_shape *s,
                                    const bench_gemm_as_trained *at);
/* {"kernel":"gemm","summary":true,"shapes":n,"path":...,"precision":...,"threads":{"<t>":
 *  {"gflops","peak_gflops","efficiency" (null when the peak is unknown),
 *  "peak_now_gflops", with a peer "openblas_gflops","ratio"; where measured
 *  "as_trained": {"gflops","efficiency", with a peer "openblas_gflops",
 *  "ratio"}},...},
 *  "contended":...} as one value into w. */
void bench_gemm_summary_json(jsonw *w, const bench_gemm_summary *sum, const char *path);

#endif
