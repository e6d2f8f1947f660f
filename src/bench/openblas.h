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

#endif
