/* gpu_gemm.c - row-major GEMMs on cuBLASLt (see gpu_gemm.h), and the
 * emulator's reference loop. cuBLASLt is column-major: the row-major
 * C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so B goes in as
 * cuBLASLt's first operand and A as its second, each with its own flag. */
#include "kernels/cuda/gpu_gemm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/gpu_internal.h"

typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc;
    int at, ct, math;
    int align[4]; /* A, B, C, D pointers' alignment (bytes, up to 256) */
    int batch;    /* 1: one product */
    long long sa, sb, sc; /* batch strides (elements) */
} gemm_key;

typedef struct {
    gemm_key key;
    tk_cublaslt_desc desc;
    tk_cublaslt_layout la, lb, lc;
    tk_cublaslt_algo algo;
} gemm_plan;

struct gpu_gemm_cache {
    gemm_plan *p;
    int n, cap;
};

static int alignment(gpu_ptr p)
{
    int a = 1;
    while (a < 256 && !(p & (gpu_ptr)a))
        a <<= 1;
    return a;
}

static void plan_free(gpu *g, gemm_plan *p)
{
    if (p->lc) g->lt.cublasLtMatrixLayoutDestroy(p->lc);
    if (p->lb) g->lt.cublasLtMatrixLayoutDestroy(p->lb);
    if (p->la) g->lt.cublasLtMatrixLayoutDestroy(p->la);
    if (p->desc) g->lt.cublasLtMatmulDescDestroy(p->desc);
}

void gpu_gemm_cache_free(gpu *g)
{
    struct gpu_gemm_cache *c = g->gemm_cache;
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        plan_free(g, &c->p[i]);
    free(c->p);
    free(c);
    g->gemm_cache = NULL;
}

/* Descriptors and the heuristic's first algorithm for k; 0, or -1 with the
 * context's error set. */
static int plan_make(gpu *g, const gemm_key *k, gemm_plan *p)
{
    memset(p, 0, sizeof *p);
    p->key = *k;
    int ab = k->at == GPU_BF16 ? TK_CUDA_R_16BF : TK_CUDA_R_32F, ct = k->ct == GPU_BF16 ? TK_CUDA_R_16BF : TK_CUDA_R_32F;
    int compute = k->at == GPU_F32 && k->math == GPU_MATH_TF32 ? TK_CUBLAS_COMPUTE_32F_FAST_TF32 : TK_CUBLAS_COMPUTE_32F;
    int opa = k->tb ? TK_CUBLAS_OP_T : TK_CUBLAS_OP_N, opb = k->ta ? TK_CUBLAS_OP_T : TK_CUBLAS_OP_N;
    int st = 0;
    st |= g->lt.cublasLtMatmulDescCreate(&p->desc, compute, TK_CUDA_R_32F);
    if (!st) st |= g->lt.cublasLtMatmulDescSetAttribute(p->desc, TK_CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa);
    if (!st) st |= g->lt.cublasLtMatmulDescSetAttribute(p->desc, TK_CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb);
    /* cuBLASLt's A = our B, column-major: [N, K] (no transpose) or [K, N] */
    if (!st) st |= g->lt.cublasLtMatrixLayoutCreate(&p->la, ab, k->tb ? (uint64_t)k->K : (uint64_t)k->N,
                                                    k->tb ? (uint64_t)k->N : (uint64_t)k->K, k->ldb);
    /* cuBLASLt's B = our A: [K, M] or [M, K] */
    if (!st) st |= g->lt.cublasLtMatrixLayoutCreate(&p->lb, ab, k->ta ? (uint64_t)k->M : (uint64_t)k->K,
                                                    k->ta ? (uint64_t)k->K : (uint64_t)k->M, k->lda);
    if (!st) st |= g->lt.cublasLtMatrixLayoutCreate(&p->lc, ct, (uint64_t)k->N, (uint64_t)k->M, k->ldc);
    if (k->batch > 1) { /* cuBLASLt's A is our B, its B our A */
        int32_t bc = k->batch;
        int64_t s_a = k->sb, s_b = k->sa, s_c = k->sc;
        tk_cublaslt_layout ls[3] = {p->la, p->lb, p->lc};
        int64_t ss[3] = {s_a, s_b, s_c};
        for (int i = 0; i < 3 && !st; i++) {
            st |= g->lt.cublasLtMatrixLayoutSetAttribute(ls[i], TK_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc);
            st |= g->lt.cublasLtMatrixLayoutSetAttribute(ls[i], TK_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &ss[i],
                                                         sizeof ss[i]);
        }
    }
    tk_cublaslt_pref pref = NULL;
    if (!st) st |= g->lt.cublasLtMatmulPreferenceCreate(&pref);
    uint64_t ws = GPU_GEMM_WORKSPACE;
    uint32_t al[4] = {(uint32_t)k->align[1], (uint32_t)k->align[0], (uint32_t)k->align[2], (uint32_t)k->align[3]};
    if (!st) st |= g->lt.cublasLtMatmulPreferenceSetAttribute(pref, TK_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                               sizeof ws);
    for (int i = 0; i < 4 && !st; i++)
        st |= g->lt.cublasLtMatmulPreferenceSetAttribute(pref, TK_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i, &al[i],
                                                          sizeof al[i]);
    tk_cublaslt_heuristic res;
    int found = 0;
    if (!st) st |= g->lt.cublasLtMatmulAlgoGetHeuristic(g->lt_handle, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1,
                                                         &res, &found);
    if (pref) g->lt.cublasLtMatmulPreferenceDestroy(pref);
    if (st || !found) {
        gpu_set_error(g, "cuda: cuBLASLt has no algorithm for %s%s GEMM %dx%dx%d (ta %d, tb %d, ld %d/%d/%d; status %d)",
                      k->at == GPU_BF16 ? "bf16" : "fp32", k->ct == GPU_BF16 ? "->bf16" : "", k->M, k->N, k->K, k->ta,
                      k->tb, k->lda, k->ldb, k->ldc, st);
        plan_free(g, p);
        return -1;
    }
    p->algo = res.algo;
    return 0;
}

static gemm_plan *plan_get(gpu *g, const gemm_key *k)
{
    struct gpu_gemm_cache *c = g->gemm_cache;
    if (!c && !(c = g->gemm_cache = calloc(1, sizeof *c))) {
        gpu_set_error(g, "cuda: out of memory for a GEMM plan");
        return NULL;
    }
    for (int i = 0; i < c->n; i++)
        if (!memcmp(&c->p[i].key, k, sizeof *k))
            return &c->p[i];
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 32;
        gemm_plan *p = realloc(c->p, sizeof *p * (size_t)cap);
        if (!p) {
            gpu_set_error(g, "cuda: out of memory for a GEMM plan");
            return NULL;
        }
        c->p = p;
        c->cap = cap;
    }
    if (plan_make(g, k, &c->p[c->n]))
        return NULL;
    return &c->p[c->n++];
}

/* ---- the emulator's reference ---- */

static float load(gpu_ptr p, gpu_dtype t, size_t i)
{
    if (t == GPU_F32)
        return ((const float *)(uintptr_t)p)[i];
    uint32_t u = (uint32_t)((const uint16_t *)(uintptr_t)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void store(gpu_ptr p, gpu_dtype t, size_t i, float v)
{
    if (t == GPU_F32) {
        ((float *)(uintptr_t)p)[i] = v;
        return;
    }
    uint32_t u;
    memcpy(&u, &v, 4);
    uint16_t b = (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40u)
                                                  : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    ((uint16_t *)(uintptr_t)p)[i] = b;
}

static void gemm_reference(int ta, int tb, int M, int N, int K, float alpha, gpu_mat A, gpu_mat B, float beta,
                           gpu_mat C, gpu_ptr D)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
                size_t ia = ta ? (size_t)k * A.ld + i : (size_t)i * A.ld + k;
                size_t ib = tb ? (size_t)j * B.ld + k : (size_t)k * B.ld + j;
                s += (double)load(A.p, A.t, ia) * load(B.p, B.t, ib);
            }
            size_t ic = (size_t)i * C.ld + j;
            double c = beta != 0 ? beta * (double)load(C.p, C.t, ic) : 0.0; /* beta 0 ignores C (it may be NaN) */
            store(D, C.t, ic, (float)(alpha * s + c));
        }
}

static size_t esize(gpu_dtype t) { return t == GPU_BF16 ? 2 : 4; }

/* A batched product, as the emulator's compute stream runs it when its turn comes. */
typedef struct {
    int ta, tb, M, N, K, batch;
    float alpha, beta;
    gpu_mat A, B, C;
    gpu_ptr D;
    long long stride_a, stride_b, stride_c;
} gemm_call;

static void gemm_call_run(void *ctx)
{
    const gemm_call *c = ctx;
    for (int i = 0; i < c->batch; i++) {
        gpu_mat a = c->A, b = c->B, m = c->C;
        a.p += (gpu_ptr)(i * c->stride_a) * esize(c->A.t);
        b.p += (gpu_ptr)(i * c->stride_b) * esize(c->B.t);
        m.p += (gpu_ptr)(i * c->stride_c) * esize(c->C.t);
        gemm_reference(c->ta, c->tb, c->M, c->N, c->K, c->alpha, a, b, c->beta, m,
                       c->D + (gpu_ptr)(i * c->stride_c) * esize(c->C.t));
    }
}

void gpu_gemm_batched(gpu *g, int ta, int tb, int M, int N, int K, float alpha, gpu_mat A, long long stride_a,
                      gpu_mat B, long long stride_b, float beta, gpu_mat C, gpu_ptr D, long long stride_c, int batch,
                      gpu_math math)
{
    if (g->failed || M <= 0 || N <= 0 || batch <= 0)
        return;
    if (A.t != B.t) {
        gpu_set_error(g, "gpu: GEMM operands of different types");
        return;
    }
    double prof_t0 = gpu_profile_begin(g);
    if (g->info.backend == GPU_EMULATOR) {
        gemm_call c = {ta, tb, M, N, K, batch, alpha, beta, A, B, C, D, stride_a, stride_b, stride_c};
        gpu_emu_call(g, "a GEMM", gemm_call_run, &c, sizeof c);
        if (gpu_sync_each_launch(g))
            gpu_emu_run(g, 0);
        gpu_profile_end_gemm(g, prof_t0);
        return;
    }
    gemm_key k;
    memset(&k, 0, sizeof k);
    k.ta = ta; k.tb = tb; k.M = M; k.N = N; k.K = K;
    k.lda = A.ld; k.ldb = B.ld; k.ldc = C.ld;
    k.at = A.t; k.ct = C.t; k.math = math;
    k.align[0] = alignment(A.p); k.align[1] = alignment(B.p); k.align[2] = alignment(C.p); k.align[3] = alignment(D);
    k.batch = batch;
    if (batch > 1) { /* a single product's plan does not depend on strides it never uses */
        k.sa = stride_a; k.sb = stride_b; k.sc = stride_c;
    }
    gemm_plan *p = plan_get(g, &k);
    if (!p)
        return;
    tk_cublas_status st = g->lt.cublasLtMatmul(g->lt_handle, p->desc, &alpha, (const void *)(uintptr_t)B.p, p->la,
                                             (const void *)(uintptr_t)A.p, p->lb, &beta,
                                             (const void *)(uintptr_t)C.p, p->lc, (void *)(uintptr_t)D, p->lc,
                                             &p->algo, (void *)(uintptr_t)g->lt_workspace, GPU_GEMM_WORKSPACE,
                                             g->stream[0]);
    if (st) {
        gpu_set_error(g, "cuda: cuBLASLt matmul %d x %dx%dx%d (%s, ta %d, tb %d) failed with status %d", batch, M, N, K,
                      A.t == GPU_BF16 ? "bf16" : "fp32", ta, tb, st);
    } else if (gpu_sync_each_launch(g)) {
        tempo_error e;
        gpu_sync(g, &e);
    }
    gpu_profile_end_gemm(g, prof_t0);
}

void gpu_gemm_d(gpu *g, int ta, int tb, int M, int N, int K, float alpha, gpu_mat A, gpu_mat B, float beta,
                gpu_mat C, gpu_ptr D, gpu_math math)
{
    gpu_gemm_batched(g, ta, tb, M, N, K, alpha, A, 0, B, 0, beta, C, D, 0, 1, math);
}

void gpu_gemm(gpu *g, int ta, int tb, int M, int N, int K, float alpha, gpu_mat A, gpu_mat B, float beta,
              gpu_mat C, gpu_math math)
{
    gpu_gemm_d(g, ta, tb, M, N, K, alpha, A, B, beta, C, C.p, math);
}
