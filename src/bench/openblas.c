/* openblas.c - cblas_sgemm through dlopen (see openblas.h). */
#include "bench/openblas.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* cblas enum values (cblas.h) */
#define CBLAS_ROW_MAJOR 101
#define CBLAS_NO_TRANS 111
#define CBLAS_TRANS 112

int bench_openblas_open(bench_openblas *ob)
{
    memset(ob, 0, sizeof *ob);
    ob->handle = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!ob->handle)
        ob->handle = dlopen("libopenblas.so", RTLD_NOW | RTLD_LOCAL);
    if (!ob->handle)
        return -1;
    *(void **)&ob->sgemm = dlsym(ob->handle, "cblas_sgemm");
    *(void **)&ob->set_num_threads = dlsym(ob->handle, "openblas_set_num_threads");
    char *(*get_config)(void);
    *(void **)&get_config = dlsym(ob->handle, "openblas_get_config");
    if (get_config)
        snprintf(ob->config, sizeof ob->config, "%s", get_config());
    if (!ob->sgemm) {
        bench_openblas_close(ob);
        return -1;
    }
    return 0;
}

void bench_openblas_close(bench_openblas *ob)
{
    if (ob->handle)
        dlclose(ob->handle);
    memset(ob, 0, sizeof *ob);
}

static void run_openblas(void *ctx, const bench_gemm_shape *s, const float *A, int lda,
                         const float *B, int ldb, float *C, int ldc)
{
    const bench_openblas *ob = ctx;
    ob->sgemm(CBLAS_ROW_MAJOR, s->trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS,
              s->trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS, s->M, s->N, s->K, 1.0f, A, lda, B, ldb,
              0.0f, C, ldc);
}

int bench_openblas_measure(bench_openblas *ob, const bench_gemm_shape *s, int threads,
                           double min_seconds, bench_gemm_result *r, tempo_error *err)
{
    if (ob->set_num_threads)
        ob->set_num_threads(threads);
    return bench_gemm_time(run_openblas, ob, s, threads, min_seconds, r, err);
}

int bench_openblas_compare(gemm_context *ctx, bench_openblas *ob, const bench_gemm_shape *s, int threads,
                           double min_seconds, bench_gemm_result *r, bench_gemm_result *peer,
                           tempo_error *err)
{
    if (bench_gemm_measure(ctx, s, threads, min_seconds, r, err))
        return -1;
    if (!ob || !ob->handle)
        return 0;
    const struct timespec pause = {0, 150 * 1000 * 1000};
    nanosleep(&pause, NULL);
    int rc = bench_openblas_measure(ob, s, threads, min_seconds, peer, err);
    nanosleep(&pause, NULL);
    return rc;
}

int bench_openblas_compare_trained(bench_openblas *ob, const bench_gemm_shape *s, int threads, int bf16,
                                   double min_seconds, const bench_gemm_result *whole,
                                   bench_gemm_as_trained *at, tempo_error *err)
{
    memset(at, 0, sizeof *at);
    at->per_thread = bench_gemm_per_thread(s, threads);
    if (bench_gemm_measure_replicas(&at->per_thread, threads, bf16, min_seconds, &at->r, err))
        return -1;
    if (whole && whole->gflops > 0) {
        at->peer_gflops = whole->gflops;
        at->peer_way = "its threads";
    }
    if (!ob || !ob->handle || !ob->set_num_threads)
        return 0;
    const struct timespec pause = {0, 150 * 1000 * 1000};
    void **ctxs = calloc((size_t)threads, sizeof *ctxs);
    if (!ctxs)
        return tempo_fail(err, "gemm replicas: out of memory");
    for (int t = 0; t < threads; t++)
        ctxs[t] = ob;
    bench_gemm_result rb;
    nanosleep(&pause, NULL);
    ob->set_num_threads(1);   /* each call on its caller's thread */
    int rc = bench_gemm_time_replicas(run_openblas, ctxs, &at->per_thread, threads, min_seconds, &rb, err);
    nanosleep(&pause, NULL);
    free(ctxs);
    if (!rc && rb.gflops > at->peer_gflops) {
        at->peer_gflops = rb.gflops;
        at->peer_way = "a product a thread";
    }
    return rc;
}
