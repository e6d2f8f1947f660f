/* test_gemm_bf16.c - the GEMM's bf16 mode (gemm_config.bf16) against a
 * plain reference of the rounded operands.
 *
 * Reference: each operand rounded to bfloat16 as the CPU rounds it (to
 * nearest even; the data here has no denormals or NaNs), the products summed
 * in double. bf16 products are exact in fp32, so the mode's only error is its
 * fp32 sums: |C - C_ref| <= 2 (K + 2) u (sum_k |a'_ik| |b'_kj| + |C0_ij|),
 * u = 2^-24 (test_gemm.c's bound). A missing, doubled or misplaced pair, a
 * wrong half of a pair word or an unrounded operand is far above it: the
 * last is checked directly, the mode's error against the fp32 operands'
 * product must exceed that bound somewhere (the operands were rounded).
 * Shapes cross every edge: odd K (the last pair half zero), K deeper than
 * one slice, M not a multiple of the 24-, 12- and 6-row tiles, N not of 16,
 * all four transposition cases, beta 0 (C NaN-filled) and 1, padded leading
 * dimensions left untouched, on the real blocking and a tiny one (kc 16,
 * mc 12, nc 32); the B packing in units of 32 depth rows shared by two
 * threads, and each thread packing its own columns. Determinism: 1 and 2
 * threads, both splits, give the same bits. Without AVX-512 BF16 the cases
 * are skipped, saying so, and only the refusal is checked. */
#include "test.h"

#include <float.h>
#include <omp.h>
#include <stdint.h>

#include "core/rng.h"
#include "kernels/cpu/gemm.h"

/* x rounded to bf16 (to nearest, ties to even) and back, for finite normal
 * x: the CPU's vcvtne2ps2bf16 on such values. */
static float bf16_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

static float at(const float *X, int ld, int trans, int r, int c)
{
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

static float *alloc_filled(size_t n, rng_state *r)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(2 * rng_uniform(r) - 1);
    return x;
}

/* A bf16 config on the real blocking or the tiny one; 0 (saying skip) on a
 * CPU without AVX-512 BF16. */
static int bf16_config(gemm_config *cfg, int tiny)
{
    cpu_info ci;
    cpu_info_query(&ci);
    if (tiny) {
        ci.l1d_bytes = 2048;   /* kc 16, mc 12, nc 32 (test_gemm.c) */
        ci.l2_bytes = 1536;
        ci.l3_bytes = 8192;
    }
    gemm_config_from_cpu(cfg, &ci, CPU_KERNELS_AVX512);
    tempo_error err;
    if (ci.avx2 && ci.fma && ci.avx512f && gemm_config_set_bf16(cfg, 1, &err) == 0)
        return 1;
    TEST_SKIP("no AVX-512 BF16 on this CPU: the bf16 products not run");
    return 0;
}

/* One case through gemm_f32_with against the rounded reference; also
 * returns, through *rounded, whether some element is off the unrounded
 * operands' product by more than the fp32 bound. */
static void check_case(const gemm_config *cfg, int ta, int tb, int M, int N, int K, float beta, int pad,
                       rng_state *r, int *rounded)
{
    int a_rows = ta ? K : M, a_cols = ta ? M : K, b_rows = tb ? N : K, b_cols = tb ? K : N;
    int lda = a_cols + pad, ldb = b_cols + pad, ldc = N + pad;
    size_t na = (size_t)a_rows * lda, nb = (size_t)b_rows * ldb, nc = (size_t)M * ldc;
    float *A = alloc_filled(na, r), *B = alloc_filled(nb, r), *C0 = alloc_filled(nc, r);
    float *C = malloc(nc * sizeof *C);
    for (size_t i = 0; i < nc; i++)
        C[i] = (beta == 0 && (int)(i % ldc) < N) ? NAN : C0[i];
    gemm_f32_with(cfg, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    const double u = FLT_EPSILON / 2;
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++) {
            size_t o = (size_t)i * ldc + j;
            if (j >= N) {
                bad += memcmp(&C[o], &C0[o], sizeof(float)) != 0;
                continue;
            }
            double s = beta != 0 ? C0[o] : 0, s_exact = s, mag = beta != 0 ? fabs(C0[o]) : 0;
            for (int k = 0; k < K; k++) {
                float a = at(A, lda, ta, i, k), b = at(B, ldb, tb, k, j);
                s += (double)bf16_round(a) * bf16_round(b);
                s_exact += (double)a * b;
                mag += fabs((double)bf16_round(a) * bf16_round(b));
            }
            double tol = 2.0 * (K + 2) * u * mag + 1e-30;
            if (!(fabs(C[o] - s) <= tol)) {
                if (bad < 3)
                    fprintf(stderr, "  bf16 ta%d tb%d %dx%dx%d beta %g pad %d kc %d: C[%d,%d] = %.9g, ref %.9g, tol %.3g\n",
                            ta, tb, M, N, K, beta, pad, cfg->kc, i, j, C[o], s, tol);
                bad++;
            }
            if (fabs(C[o] - s_exact) > tol)
                *rounded = 1;
        }
    CHECK_MSG(bad == 0, "%d bad elements: bf16 ta%d tb%d %dx%dx%d beta %g pad %d kc %d", bad, ta, tb, M, N, K,
              beta, pad, cfg->kc);
    free(A); free(B); free(C0); free(C);
}

typedef struct {
    int M, N, K;
} shape;

static const shape shapes[] = {
    {1, 1, 1},   {1, 17, 5},   {7, 1, 13},   {6, 16, 8},   {24, 16, 2},  {13, 17, 19},
    {2, 3, 97},  {31, 47, 3},  {37, 53, 41}, {49, 71, 33}, {61, 29, 64}, {97, 101, 17},
    {30, 40, 300}, {48, 33, 513},
};

static void test_refused_without_bf16(void)
{
    cpu_info ci;
    cpu_info_query(&ci);
    tempo_error err;
    gemm_config cfg;
    gemm_config_from_cpu(&cfg, &ci, CPU_KERNELS_AVX2);
    CHECK(cfg.bf16 == 0 && cfg.can_bf16 == 0);
    CHECK(gemm_config_set_bf16(&cfg, 1, &err) != 0 && strstr(err.msg, "BF16") && cfg.bf16 == 0);
    CHECK(gemm_config_set_bf16(&cfg, 0, &err) == 0);
    gemm_config_from_cpu(&cfg, &ci, CPU_KERNELS_PORTABLE);
    CHECK(gemm_config_set_bf16(&cfg, 1, &err) != 0);
    gemm_config_from_cpu(&cfg, &ci, CPU_KERNELS_AVX512);
    CHECK(cfg.can_bf16 == (ci.avx512f && ci.avx512bf16) && cfg.bf16 == 0);
}

/* The bf16 mode slices K twice as deep (a word holds two k: the same bytes),
 * up to 1024, and turning it off gives the fp32 slicing back. */
static void test_slice_depth(void)
{
    for (int tiny = 0; tiny < 2; tiny++) {
        gemm_config cfg;
        if (!bf16_config(&cfg, tiny))
            return;
        int want = 2 * cfg.kc_fp32 > 1024 ? 1024 : 2 * cfg.kc_fp32;
        CHECK_MSG(cfg.kc == want && cfg.kc % 8 == 0, "kc %d, fp32 %d", cfg.kc, cfg.kc_fp32);
        tempo_error err;
        CHECK(gemm_config_set_bf16(&cfg, 1, &err) == 0 && cfg.kc == want);   /* twice on: once */
        CHECK(gemm_config_set_bf16(&cfg, 0, &err) == 0 && cfg.kc == cfg.kc_fp32 && cfg.bf16 == 0);
    }
}

static void test_against_reference(void)
{
    for (int tiny = 0; tiny < 2; tiny++) {
        gemm_config cfg;
        if (!bf16_config(&cfg, tiny))
            return;
        rng_state r;
        rng_seed(&r, 40 + (uint64_t)tiny);
        int rounded = 0;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int t = 0; t < 4; t++)
                for (int b = 0; b < 2; b++)
                    check_case(&cfg, t >> 1, t & 1, shapes[s].M, shapes[s].N, shapes[s].K, (float)b,
                               (int)((s + t + b) % 3) * 3, &r, &rounded);
        CHECK_MSG(rounded, "no result shows rounded operands (tiny %d): the mode ran in fp32?", tiny);
    }
}

/* Large enough for two threads, both splits; the same bits each time. */
static void test_threads_and_splits(void)
{
    gemm_config cfg;
    if (!bf16_config(&cfg, 0))
        return;
    rng_state r;
    rng_seed(&r, 47);
    int saved = omp_get_max_threads();
    /* dW form (A^T B, shared split) and a square one (each thread its columns) */
    const int cases[2][5] = {{1, 0, 211, 190, 301}, {0, 1, 256, 256, 257}};
    for (int c = 0; c < 2; c++) {
        int ta = cases[c][0], tb = cases[c][1], M = cases[c][2], N = cases[c][3], K = cases[c][4];
        float *A = alloc_filled((size_t)M * K, &r), *B = alloc_filled((size_t)K * N, &r);
        size_t nc = (size_t)M * N;
        float *C[4];
        for (int i = 0; i < 4; i++)
            C[i] = malloc(nc * sizeof(float));
        int lda = ta ? M : K, ldb = tb ? K : N;
        int rounded = 0;
        for (int i = 0; i < 4; i++) {
            gemm_config g = cfg;
            g.own_b = i != 3;   /* the last: B shared, packed in 32-row units by both */
            omp_set_num_threads(i == 0 ? 1 : 2);
            gemm_f32_with(&g, ta, tb, M, N, K, A, lda, B, ldb, 0, C[i], N);
        }
        for (int i = 1; i < 4; i++)
            CHECK_MSG(memcmp(C[0], C[i], nc * sizeof(float)) == 0, "case %d run %d differs from 1 thread", c, i);
        omp_set_num_threads(saved);
        check_case(&cfg, ta, tb, 50, 70, K, 1, 0, &r, &rounded);
        for (int i = 0; i < 4; i++)
            free(C[i]);
        free(A); free(B);
    }
    omp_set_num_threads(saved);
}

/* op(B) packed once in the bf16 mode: the bits of gemm_f32_with's bf16
 * products, both transpositions of B, on 1 and 2 threads. */
static void test_packed_b(void)
{
    gemm_config cfg;
    if (!bf16_config(&cfg, 0))
        return;
    rng_state r;
    rng_seed(&r, 53);
    int saved = omp_get_max_threads();
    int M = 301, N = 197, K = 257;
    float *A = alloc_filled((size_t)M * K, &r), *B = alloc_filled((size_t)K * N, &r);
    float *C1 = malloc((size_t)M * N * sizeof(float)), *C2 = malloc((size_t)M * N * sizeof(float));
    for (int tb = 0; tb < 2; tb++)
        for (int th = 1; th <= 2; th++) {
            omp_set_num_threads(th);
            tempo_error err;
            gemm_packed_b pb = {0};
            CHECK(gemm_packed_b_pack(&pb, &cfg, tb, K, N, B, tb ? K : N, &err) == 0 && pb.bf16 == 1);
            gemm_f32_packed_b(&cfg, 0, M, A, K, &pb, 0, C1, N);
            gemm_f32_with(&cfg, 0, tb, M, N, K, A, K, B, tb ? K : N, 0, C2, N);
            CHECK_MSG(memcmp(C1, C2, (size_t)M * N * sizeof(float)) == 0, "packed B differs: tb %d threads %d", tb,
                      th);
            gemm_packed_b_free(&pb);
        }
    omp_set_num_threads(saved);
    int rounded = 0;
    check_case(&cfg, 0, 1, 37, 45, 129, 0, 1, &r, &rounded);
    free(A); free(B); free(C1); free(C2);
}

int main(void)
{
    RUN(test_refused_without_bf16);
    RUN(test_slice_depth);
    RUN(test_against_reference);
    RUN(test_threads_and_splits);
    RUN(test_packed_b);
    return test_summary("test_gemm_bf16");
}
