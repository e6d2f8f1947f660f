/* openblas.h - OpenBLAS's cblas_sgemm as a peer in the GEMM benchmark,
 * loaded at run time (dlopen) when the library is installed, so the build
 * never needs it. Nothing else of OpenBLAS is used. */
#ifndef TEMPO_BENCH_OPENBLAS_H
#define TEMPO_BENCH_OPENBLAS_H

#include "bench/bench_gemm.h"

typedef struct {
    void *handle;
    void (*sgemm)(int order, int trans_a, int trans_b, int M, int N, int K, float alpha,
                  const float *A, int lda, const float *B, int ldb, float beta, float *C,
                  int ldc);
    void (*set_num_threads)(int n);   /* may be NULL */
    char config[128];                 /* openblas_get_config(), or "" */
} bench_openblas;

/* Load libopenblas.so.0 (or libopenblas.so). Returns 0 when it is there,
 * -1 when not (ob->handle NULL; not an error for callers). */
int bench_openblas_open(bench_openblas *ob);
void bench_openblas_close(bench_openblas *ob);

/* bench_gemm_time of cblas_sgemm (row-major, beta 0) with OpenBLAS set to
 * `threads` threads. */
int bench_openblas_measure(bench_openblas *ob, const bench_gemm_shape *s, int threads,
                           double min_seconds, bench_gemm_result *r, tempo_error *err);

/* tempo's GEMM (bench_gemm_measure through ctx) on s, then, when ob is
 * open (ob != NULL and ob->handle), OpenBLAS's into *peer with a pause of
 * 0.15 s before and after it: idle pool threads spin for a while after a
 * call (OpenBLAS's up to ~0.1 s) and would steal the next one's cores. */
int bench_openblas_compare(gemm_context *ctx, bench_openblas *ob, const bench_gemm_shape *s, int threads,
                           double min_seconds, bench_gemm_result *r, bench_gemm_result *peer,
                           tempo_error *err);

/* Shape s as training runs it at threads > 1 (bench_gemm_as_trained): tempo's
 * GEMM with a product a thread (bench_gemm_measure_replicas of
 * bench_gemm_per_thread; in its bf16 mode when bf16 is set), then, when ob is open and can be held to one
 * thread a call, OpenBLAS the same way; the peer's figure is the better of
 * that and `whole` (OpenBLAS's own threading of s, measured before; NULL or
 * 0 GFLOP/s: none). Pauses as bench_openblas_compare. */
int bench_openblas_compare_trained(bench_openblas *ob, const bench_gemm_shape *s, int threads, int bf16,
                                   double min_seconds, const bench_gemm_result *whole,
                                   bench_gemm_as_trained *at, tempo_error *err);

#endif
