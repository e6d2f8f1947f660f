/* test_gemm.c - the blocked GEMM against the plain reference.
 *
 * Every case runs on both kernel paths (AVX2 when the CPU has it, and the
 * portable C one), with the real blocking (from this CPU's caches) and with a
 * tiny blocking (kc 16, mc 12, nc 32, from a fake cpu_info) so that small,
 * fast shapes still cross every block boundary: K > KC, M > MC, N > NC.
 * Shapes: 1, primes, exact tiles, not multiples of the 6 x 16 tile; all four
 * transposition cases; beta 0 with C pre-filled with NaN (proves it is
 * overwritten) and beta 1; leading dimensions larger than the rows, with the
 * padding checked untouched.
 *
 * Tolerance: |C - C_ref| <= 2 (K + 2) u (sum_k |a_ik| |b_kj| + |C0_ij|),
 * u = 2^-24, the worst-case forward error bound of the two fp32 sums (ours
 * and the reference's, in different orders, one fused). A wrong or missing
 * term is of the size of one product, far above it for the K used here.
 * Determinism: 1 and 2 threads, and two identical calls, give the same bits
 * (the blocking, not the threads, fixes each sum's order); so do products
 * over row or column chunks, and products with op(B) packed once
 * (gemm_f32_packed_b) against gemm_f32_with. */
#include "test.h"

#include <float.h>
#include <omp.h>

#include "bench/bench_gemm.h"
#include "model/model.h"
#include "run/run_config.h"
#include "core/json.h"
#include "core/rng.h"
#include "kernels/cpu/gemm.h"

typedef struct {
    int M, N, K;
} shape;

static int min_i(int a, int b) { return a < b ? a : b; }

static float *alloc_filled(size_t n, rng_state *r)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(2 * rng_uniform(r) - 1);
    return x;
}

static void fabs_copy(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = fabsf(src[i]);
}

/* The tiny blocking that makes small shapes cross every block edge. */
static gemm_config tiny_config(cpu_kernel_path path)
{
    cpu_info ci;
    cpu_info_query(&ci);
    ci.l1d_bytes = 2048;      /* kc = 2048 * 0.5 / (16 * 4) = 16 */
    ci.l2_bytes = 1536;       /* mc = 1536 * 0.5 / (16 * 4) = 12 */
    ci.l3_bytes = 8192;       /* nc = 8192 * 0.25 / (16 * 4) = 32 */
    gemm_config cfg;
    gemm_config_from_cpu(&cfg, &ci, path);
    return cfg;
}

static int have_avx2(void)
{
    cpu_info ci;
    cpu_info_query(&ci);
    return ci.avx2 && ci.fma;
}

static int have_avx512(void)
{
    cpu_info ci;
    cpu_info_query(&ci);
    return ci.avx2 && ci.fma && ci.avx512f;
}

/* Whether path can run here; says once per test when it cannot. */
static int path_runs(int path, const char *test)
{
    int ok = path == CPU_KERNELS_PORTABLE || (path == CPU_KERNELS_AVX2 && have_avx2()) ||
             (path == CPU_KERNELS_AVX512 && have_avx512());
    if (!ok)
        TEST_SKIP("%s: no %s on this CPU, its cases not run", test, cpu_kernel_path_name((cpu_kernel_path)path));
    return ok;
}

/* Run one case through gemm_f32_with and check it against the reference.
 * Leading dimensions are the row length + pad; pads must stay untouched.
 * Returns the number of failing elements (also CHECKed). */
static int check_case(const gemm_config *cfg, int ta, int tb, int M, int N, int K,
                      float beta, int pad, rng_state *r)
{
    int a_rows = ta ? K : M, a_cols = ta ? M : K;
    int b_rows = tb ? N : K, b_cols = tb ? K : N;
    int lda = a_cols + pad, ldb = b_cols + pad, ldc = N + pad;
    size_t na = (size_t)a_rows * lda, nb = (size_t)b_rows * ldb, nc = (size_t)M * ldc;
    float *A = alloc_filled(na ? na : 1, r), *B = alloc_filled(nb ? nb : 1, r);
    float *C0 = alloc_filled(nc ? nc : 1, r);
    float *C = malloc((nc ? nc : 1) * sizeof *C), *R = malloc((nc ? nc : 1) * sizeof *R);
    float *absA = malloc((na ? na : 1) * sizeof *absA), *absB = malloc((nb ? nb : 1) * sizeof *absB);
    float *bound = malloc((nc ? nc : 1) * sizeof *bound);

    for (size_t i = 0; i < nc; i++) {
        int col = (int)(i % ldc);
        /* beta 0: NaN in the valid part proves it is overwritten, never read */
        C[i] = (beta == 0 && col < N) ? NAN : C0[i];
        R[i] = C0[i];
        bound[i] = fabsf(C0[i]);
    }
    gemm_f32_with(cfg, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    gemm_f32_ref(ta, tb, M, N, K, A, lda, B, ldb, beta, R, ldc);
    fabs_copy(absA, A, na);
    fabs_copy(absB, B, nb);
    gemm_f32_ref(ta, tb, M, N, K, absA, lda, absB, ldb, beta == 0 ? 0.0f : 1.0f, bound, ldc);

    double u = FLT_EPSILON / 2;
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++) {
            size_t at = (size_t)i * ldc + j;
            if (j >= N) {
                if (memcmp(&C[at], &C0[at], sizeof(float)) != 0)
                    bad++;
                continue;
            }
            double tol = 2.0 * (K + 2) * u * bound[at] + 1e-30;
            if (!(fabs((double)C[at] - R[at]) <= tol)) {
                if (bad < 3)
                    fprintf(stderr, "  %s ta%d tb%d %dx%dx%d beta %g pad %d kc %d mc %d nc %d: "
                            "C[%d,%d] = %.9g, ref %.9g, tol %.3g\n",
                            cpu_kernel_path_name(cfg->path), ta, tb, M, N, K, beta, pad,
                            cfg->kc, cfg->mc, cfg->nc, i, j, C[at], R[at], tol);
                bad++;
            }
        }
    CHECK_MSG(bad == 0, "%d bad elements: %s ta%d tb%d %dx%dx%d beta %g", bad,
              cpu_kernel_path_name(cfg->path), ta, tb, M, N, K, beta);
    free(A); free(B); free(C0); free(C); free(R); free(absA); free(absB); free(bound);
    return bad;
}

static const shape small_shapes[] = {
    {1, 1, 1},   {1, 17, 5},  {7, 1, 13},  {6, 16, 8},  {12, 32, 16}, {13, 17, 19},
    {2, 3, 97},  {31, 47, 3}, {37, 53, 41}, {5, 71, 33}, {61, 29, 64}, {97, 101, 17},
};

/* Every small shape x 4 transposition cases x beta 0/1 x pads, on one config. */
static void run_small_cases(const gemm_config *cfg, uint64_t seed)
{
    rng_state r;
    rng_seed(&r, seed);
    for (size_t s = 0; s < sizeof small_shapes / sizeof small_shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int b = 0; b < 2; b++) {
                const shape *sh = &small_shapes[s];
                int pad = (int)((s + t + b) % 3) * 3;   /* 0, 3 or 6 */
                check_case(cfg, t >> 1, t & 1, sh->M, sh->N, sh->K, (float)b, pad, &r);
            }
}

static void test_small_tiny_blocking(void)
{
    gemm_config p = tiny_config(CPU_KERNELS_PORTABLE);
    CHECK(p.kc == 16 && p.mc == 12 && p.nc == 32);
    run_small_cases(&p, 1);
    if (path_runs(CPU_KERNELS_AVX2, "small shapes, tiny blocking")) {
        gemm_config a = tiny_config(CPU_KERNELS_AVX2);
        run_small_cases(&a, 2);
    }
    if (path_runs(CPU_KERNELS_AVX512, "small shapes, tiny blocking")) {
        gemm_config a = tiny_config(CPU_KERNELS_AVX512);
        run_small_cases(&a, 9);
    }
}

static void test_small_real_blocking(void)
{
    cpu_info ci;
    cpu_info_query(&ci);
    gemm_config p;
    gemm_config_from_cpu(&p, &ci, CPU_KERNELS_PORTABLE);
    run_small_cases(&p, 3);
    if (path_runs(CPU_KERNELS_AVX2, "small shapes, real blocking")) {
        gemm_config a;
        gemm_config_from_cpu(&a, &ci, CPU_KERNELS_AVX2);
        run_small_cases(&a, 4);
    }
    if (path_runs(CPU_KERNELS_AVX512, "small shapes, real blocking")) {
        gemm_config a;
        gemm_config_from_cpu(&a, &ci, CPU_KERNELS_AVX512);
        run_small_cases(&a, 10);
    }
}

/* The AVX-512 kernels take 4 or 2 of the AVX2 kernel's micro-panels at once
 * and sum in its order: on the same blocking the results are bitwise the
 * AVX2 path's, for row counts that use the 24-row, 12-row and 6-row tiles
 * and every edge, all transpositions, beta 0 and 1, at both thread counts
 * (and each is right against the reference: check_case). */
static void test_avx512_same_bits(void)
{
    if (!path_runs(CPU_KERNELS_AVX512, "AVX-512 against AVX2"))
        return;
    cpu_info ci;
    cpu_info_query(&ci);
    gemm_config real2, real5, packed5;
    gemm_config_from_cpu(&real2, &ci, CPU_KERNELS_AVX2);
    gemm_config_from_cpu(&real5, &ci, CPU_KERNELS_AVX512);
    CHECK(real5.direct_a && !real2.direct_a);
    packed5 = real5;
    packed5.direct_a = 0; /* every A block packed, as before the in-place tiles */
    gemm_config tiny2 = tiny_config(CPU_KERNELS_AVX2), tiny5 = tiny_config(CPU_KERNELS_AVX512);
    CHECK(real5.kc == real2.kc && real5.mc == real2.mc && real5.nc == real2.nc);
    /* AVX-512 with A read in place (real5), AVX-512 packed (packed5), and
     * the tiny blocking, each against AVX2 on the same blocking. */
    const gemm_config *cfg2[3] = {&real2, &real2, &tiny2}, *cfg5[3] = {&real5, &packed5, &tiny5};
    static const char *const names[3] = {"real", "real packed", "tiny"};
    /* Rows past 24 with a ragged end (the in-place tiles, then the 12-row
     * scratch tile for 7-11 rows, then 6-row tiles); columns that are not a
     * multiple of 16 (the in-place tiles' scratch); lda 256 and 512 (ta 0)
     * and 2048 (ta 1) whose rows share cache sets, so the packed copy runs. */
    static const shape shapes[] = {
        {24, 16, 9},  {48, 32, 300}, {12, 16, 5},  {36, 48, 33}, {30, 17, 64}, {53, 35, 41},
        {97, 64, 7},  {6, 16, 3},    {18, 40, 20}, {200, 100, 450}, {343, 70, 90},
        {128, 33, 256}, {56, 16, 512}, {2048, 16, 24}, {79, 50, 128},
    };
    rng_state r;
    rng_seed(&r, 11);
    int saved = omp_get_max_threads(), mism = 0;
    for (int c = 0; c < 3; c++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int t = 0; t < 4; t++) {
                const shape *sh = &shapes[s];
                int ta = t >> 1, tb = t & 1, M = sh->M, N = sh->N, K = sh->K;
                float *A = alloc_filled((size_t)M * K, &r), *B = alloc_filled((size_t)K * N, &r);
                size_t n = (size_t)M * N;
                float *C2 = alloc_filled(n, &r), *C5 = malloc(n * sizeof *C5);
                memcpy(C5, C2, n * sizeof *C5);
                float beta = (float)((s + t) & 1);
                omp_set_num_threads(1 + (int)(s & 1));
                gemm_f32_with(cfg2[c], ta, tb, M, N, K, A, ta ? M : K, B, tb ? K : N, beta, C2, N);
                gemm_f32_with(cfg5[c], ta, tb, M, N, K, A, ta ? M : K, B, tb ? K : N, beta, C5, N);
                if (memcmp(C2, C5, n * sizeof *C5) != 0 && mism++ < 3)
                    fprintf(stderr, "  %s %dx%dx%d ta%d tb%d beta %g: AVX-512 differs from AVX2\n",
                            names[c], M, N, K, ta, tb, beta);
                if (s % 3 == 0 || c == 0)
                    check_case(cfg5[c], ta, tb, M, N, K, beta, (int)s % 4, &r);
                free(A); free(B); free(C2); free(C5);
            }
    omp_set_num_threads(saved);
    CHECK_MSG(mism == 0, "%d products differ between the AVX-512 and AVX2 paths", mism);
}

/* Where each thread owns a column chunk of C and packs its B itself
 * (own_b): the same bits as the shared split at 2 threads and as 1 thread,
 * and right against the reference, on shapes that take it with more than
 * one row block (M > MC), several B panels (N > NC, tiny blocking), a
 * ragged last chunk and last panel, and all four transposes; gemm_split
 * says so (and that a product too small for two threads takes one). */
static void test_owned_b_same_bits(void)
{
    cpu_info ci;
    cpu_info_query(&ci);
    static const shape shapes[] = {{211, 190, 300}, {400, 150, 150}, {96, 333, 300}};
    rng_state r;
    rng_seed(&r, 12);
    int saved = omp_get_max_threads(), mism = 0, owned = 0;
    for (int path = 0; path <= CPU_KERNELS_AVX512; path++) {
        if (!path_runs(path, __func__))
            continue;
        for (int tiny = 0; tiny < 2; tiny++) {
            gemm_config own;
            if (tiny)
                own = tiny_config((cpu_kernel_path)path);
            else
                gemm_config_from_cpu(&own, &ci, (cpu_kernel_path)path);
            gemm_config shared = own;
            shared.own_b = 0;
            CHECK(own.own_b);
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int t = 0; t < 4; t++) {
                    int ta = t >> 1, tb = t & 1, M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
                    int o2, s2, o1;
                    int n2 = gemm_split(&own, M, N, K, 2, &o2), ns = gemm_split(&shared, M, N, K, 2, &s2);
                    int n1 = gemm_split(&own, M, N, K, 1, &o1);
                    CHECK_MSG(n2 == 2 && o2 && ns == 2 && !s2 && n1 == 1 && !o1,
                              "%dx%dx%d %s tiny %d: not split by owned columns at 2 threads only", M, N, K,
                              cpu_kernel_path_name((cpu_kernel_path)path), tiny);
                    owned++;
                    float *A = alloc_filled((size_t)M * K, &r), *B = alloc_filled((size_t)K * N, &r);
                    size_t n = (size_t)M * N;
                    float *C[3];
                    C[0] = alloc_filled(n, &r);
                    for (int i = 1; i < 3; i++) {
                        C[i] = malloc(n * sizeof(float));
                        memcpy(C[i], C[0], n * sizeof(float));
                    }
                    float beta = (float)(t & 1);
                    const gemm_config *cfgs[3] = {&own, &shared, &own};
                    for (int i = 0; i < 3; i++) {
                        omp_set_num_threads(i < 2 ? 2 : 1);
                        gemm_f32_with(cfgs[i], ta, tb, M, N, K, A, ta ? M : K, B, tb ? K : N, beta, C[i], N);
                    }
                    if ((memcmp(C[0], C[1], n * sizeof(float)) || memcmp(C[0], C[2], n * sizeof(float))) &&
                        mism++ < 3)
                        fprintf(stderr, "  %s tiny %d %dx%dx%d ta%d tb%d: owned columns differ\n",
                                cpu_kernel_path_name((cpu_kernel_path)path), tiny, M, N, K, ta, tb);
                    omp_set_num_threads(2);
                    if (t == 0 || s == 0)
                        check_case(&own, ta, tb, M, N, K, beta, (int)s, &r);
                    for (int i = 0; i < 3; i++)
                        free(C[i]);
                    free(A); free(B);
                }
        }
    }
    omp_set_num_threads(saved);
    CHECK(owned > 0);
    CHECK_MSG(mism == 0, "%d products differ between owned and shared B", mism);
}

/* Shapes past the real blocking: K > KC (two slices), M > MC (two blocks
 * even at one thread), at both thread counts. ~300 keeps ASan fast. */
static void test_larger_than_blocking(void)
{
    cpu_info ci;
    cpu_info_query(&ci);
    gemm_config cfg;
    gemm_config_from_cpu(&cfg, &ci, have_avx2() ? CPU_KERNELS_AVX2 : CPU_KERNELS_PORTABLE);
    int M = cfg.mc + 7, K = cfg.kc + 45, N = 35;
    rng_state r;
    rng_seed(&r, 5);
    int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (int t = 0; t < 4; t++)
            for (int b = 0; b < 2; b++)
                check_case(&cfg, t >> 1, t & 1, M, N, K, (float)b, t, &r);
    }
    gemm_config port = cfg;
    port.path = CPU_KERNELS_PORTABLE;
    check_case(&port, 1, 1, M, N, K, 1, 1, &r);
    omp_set_num_threads(saved);
}

/* N > NC with the real blocking is too big for a unit test; the tiny config
 * crosses NC with the shapes above. These add skinny shapes at both thread
 * counts, so that every way of splitting C into items runs. */
static void test_skinny_tiny_blocking(void)
{
    gemm_config cfg = tiny_config(have_avx2() ? CPU_KERNELS_AVX2 : CPU_KERNELS_PORTABLE);
    cpu_info ci;
    cpu_info_query(&ci);
    gemm_config real;
    gemm_config_from_cpu(&real, &ci, cfg.path);
    rng_state r;
    rng_seed(&r, 6);
    int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        check_case(&cfg, 0, 1, 203, 37, 45, 0, 1, &r);    /* tall: many M blocks */
        check_case(&cfg, 1, 0, 19, 150, 211, 1, 2, &r);   /* short, deep */
        /* with the real blocking, enough work for 2 threads: short and wide
         * (items split over N), and short, narrow and deep (the fallback
         * split down to small column chunks) */
        check_case(&real, 0, 1, 30, 1100, 300, 0, 1, &r);
        check_case(&real, 1, 0, 20, 300, 2000, 1, 0, &r);
    }
    omp_set_num_threads(saved);
}

/* gemm_context_reserve sizes the workspace for a product up front: the
 * product then neither grows nor moves it, from serial code (the team) and
 * inside a parallel region (one thread), for both blockings and transposes;
 * a smaller reservation never shrinks it. */
static void test_context_reserve(void)
{
    static const int shapes[][3] = {{32, 32, 128}, {32, 128, 32}, {203, 37, 45}, {19, 150, 211}, {1, 1, 1}};
    gemm_config cfgs[2] = {tiny_config(have_avx2() ? CPU_KERNELS_AVX2 : CPU_KERNELS_PORTABLE)};
    gemm_config_init(&cfgs[1]);
    rng_state r;
    rng_seed(&r, 9);
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    for (int c = 0; c < 2; c++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int inside = 0; inside < 2; inside++) {
                int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                gemm_context ctx = {.cfg = cfgs[c]};
                CHECK(gemm_context_reserve(&ctx, M, N, K, inside ? 1 : omp_get_max_threads()) == 0);
                float *work = ctx.work;
                size_t floats = ctx.work_floats;
                CHECK(work != NULL && floats > 0);
                float *A = malloc(sizeof(float) * (size_t)M * K), *B = malloc(sizeof(float) * (size_t)K * N);
                float *C = malloc(sizeof(float) * (size_t)M * N);
                for (size_t i = 0; i < (size_t)M * K; i++) A[i] = (float)(rng_uniform(&r) - 0.5);
                for (size_t i = 0; i < (size_t)K * N; i++) B[i] = (float)(rng_uniform(&r) - 0.5);
                for (int ta = 0; ta < 2; ta++)
                    for (int tb = 0; tb < 2; tb++) {
                        if (inside) {
#pragma omp parallel num_threads(1)
                            gemm_f32_ctx(&ctx, ta, tb, M, N, K, A, ta ? M : K, B, tb ? K : N, 0.0f, C, N);
                        } else {
                            gemm_f32_ctx(&ctx, ta, tb, M, N, K, A, ta ? M : K, B, tb ? K : N, 0.0f, C, N);
                        }
                        CHECK_MSG(ctx.work == work && ctx.work_floats == floats,
                                  "%dx%dx%d (trans %d %d, %s, config %d) grew the reserved workspace", M, N, K,
                                  ta, tb, inside ? "inside a region" : "serial", c);
                    }
                CHECK(gemm_context_reserve(&ctx, 1, 1, 1, 1) == 0 && ctx.work == work && ctx.work_floats == floats);
                free(A);
                free(B);
                free(C);
                gemm_context_free(&ctx);
            }
    omp_set_num_threads(saved);
}

/* The public entry point honours TEMPO_KERNELS: its result is bitwise the
 * one of the explicit config on the forced path. */
static void test_env_switch(void)
{
    const char *old = getenv("TEMPO_KERNELS");
    char saved[64] = "";
    if (old)
        snprintf(saved, sizeof saved, "%s", old);
    rng_state r;
    rng_seed(&r, 7);
    int M = 29, N = 45, K = 67;
    float *A = alloc_filled((size_t)M * K, &r), *B = alloc_filled((size_t)K * N, &r);
    float *C1 = malloc((size_t)M * N * sizeof *C1), *C2 = malloc((size_t)M * N * sizeof *C2);
    cpu_info ci;
    cpu_info_query(&ci);
    for (int forced = 0; forced < 2; forced++) {
        if (forced)
            setenv("TEMPO_KERNELS", "portable", 1);
        else
            unsetenv("TEMPO_KERNELS");
        gemm_config cfg;
        gemm_config_from_cpu(&cfg, &ci, forced ? CPU_KERNELS_PORTABLE : cpu_kernel_path_select(&ci));
        gemm_config env_cfg;
        gemm_config_init(&env_cfg);
        CHECK(env_cfg.path == cfg.path && env_cfg.kc == cfg.kc && env_cfg.mc == cfg.mc);
        gemm_f32(0, 0, M, N, K, A, K, B, N, 0, C1, N);
        gemm_f32_with(&cfg, 0, 0, M, N, K, A, K, B, N, 0, C2, N);
        CHECK(memcmp(C1, C2, (size_t)M * N * sizeof *C1) == 0);
        /* and through gemm_f32 it is right, too */
        check_case(&env_cfg, 1, 1, M, N, K, 1, 2, &r);
    }
    if (old)
        setenv("TEMPO_KERNELS", saved, 1);
    else
        unsetenv("TEMPO_KERNELS");
    free(A); free(B); free(C1); free(C2);
}

/* Same bits at 1 and 2 threads and on a repeated call, on shapes big enough
 * that the second thread really takes part, on both paths. */
static void test_determinism(void)
{
    rng_state r;
    rng_seed(&r, 8);
    int M = 211, N = 190, K = 300;   /* 12M multiply-adds: 2 threads engage */
    float *A = alloc_filled((size_t)K * M, &r), *B = alloc_filled((size_t)K * N, &r);
    size_t nc = (size_t)M * N;
    float *C[3];
    for (int i = 0; i < 3; i++)
        C[i] = alloc_filled(nc, &r);
    memcpy(C[1], C[0], nc * sizeof(float));
    memcpy(C[2], C[0], nc * sizeof(float));
    cpu_info ci;
    cpu_info_query(&ci);
    int saved = omp_get_max_threads();
    for (int path = 0; path <= CPU_KERNELS_AVX512; path++) {
        if (!path_runs(path, __func__))
            continue;
        for (int tiny = 0; tiny < 2; tiny++) {
            gemm_config cfg;
            if (tiny)
                cfg = tiny_config((cpu_kernel_path)path);
            else
                gemm_config_from_cpu(&cfg, &ci, (cpu_kernel_path)path);
            for (int beta = 0; beta < 2; beta++) {
                int threads[3] = {1, 2, 2};
                for (int i = 0; i < 3; i++) {
                    omp_set_num_threads(threads[i]);
                    /* weight-gradient form: A^T B, reduction over K */
                    gemm_f32_with(&cfg, 1, 0, M, N, K, A, M, B, N, (float)beta, C[i], N);
                }
                CHECK_MSG(memcmp(C[0], C[1], nc * sizeof(float)) == 0,
                          "1 vs 2 threads differ: %s tiny %d beta %d",
                          cpu_kernel_path_name((cpu_kernel_path)path), tiny, beta);
                CHECK_MSG(memcmp(C[1], C[2], nc * sizeof(float)) == 0,
                          "repeat differs: %s tiny %d beta %d",
                          cpu_kernel_path_name((cpu_kernel_path)path), tiny, beta);
            }
        }
    }
    omp_set_num_threads(saved);
    for (int i = 0; i < 3; i++)
        free(C[i]);
    free(A); free(B);
}

/* Called inside a parallel region, each thread's own product runs on that
 * thread alone and is right (no worksharing leaks into the caller's team):
 * in an active team of two and in an inactive team of one, under the
 * caller's own dynamic worksharing loop, whose every iteration must run
 * (a GEMM's worksharing binding to the caller's region once ended such a
 * loop after its first iteration). */
static void test_inside_parallel(void)
{
    enum { T = 5, M = 45, N = 70, K = 130 };
    rng_state r;
    rng_seed(&r, 9);
    float *A = alloc_filled((size_t)T * M * K, &r), *B = alloc_filled((size_t)K * N, &r);
    float *C = malloc((size_t)T * M * N * sizeof *C), *R = malloc((size_t)T * M * N * sizeof *R);
    float *P = malloc((size_t)T * M * N * sizeof *P);
    gemm_config cfg = tiny_config(have_avx2() ? CPU_KERNELS_AVX2 : CPU_KERNELS_PORTABLE);
    for (int t = 0; t < T; t++)
        gemm_f32_ref(0, 0, M, N, K, A + (size_t)t * M * K, K, B, N, 0, R + (size_t)t * M * N, N);
    for (int team = 1; team <= 2; team++) {
        int nested_ok = 1, ran = 0;
        memset(C, 0, (size_t)T * M * N * sizeof *C);
#pragma omp parallel num_threads(team) reduction(min : nested_ok) reduction(+ : ran)
        {
#pragma omp for schedule(dynamic, 1)
            for (int t = 0; t < T; t++) {
                if (team > 1 && !omp_in_parallel())
                    nested_ok = 0;
                gemm_f32_with(&cfg, 0, 0, M, N, K, A + (size_t)t * M * K, K, B, N, 0,
                              C + (size_t)t * M * N, N);
                /* B packed and multiplied inside the region too (one thread each, no
                 * nested team): the same sums */
                gemm_packed_b pb = {0};
                tempo_error err;
                if (gemm_packed_b_pack(&pb, &cfg, 0, K, N, B, N, &err) == 0) {
                    gemm_f32_packed_b(&cfg, 0, M, A + (size_t)t * M * K, K, &pb, 0,
                                      P + (size_t)t * M * N, N);
                    ran++;
                }
                gemm_packed_b_free(&pb);
                ran++;
            }
        }
        CHECK(nested_ok || omp_get_max_threads() == 1);
        CHECK_MSG(ran == 2 * T, "team of %d ran %d of %d products", team, ran, 2 * T);
        CHECK_MSG(!memcmp(C, P, (size_t)T * M * N * sizeof *C),
                  "team of %d: packed-B products differ from the plain ones", team);
        double worst = 0;
        for (size_t i = 0; i < (size_t)T * M * N; i++) {
            double d = fabs((double)C[i] - R[i]);
            if (!(d <= worst))
                worst = d;
        }
        /* |a|,|b| < 1: sum |a||b| < K, so the bound above is 2 (K+2) u K. */
        CHECK_MSG(worst <= 2.0 * (K + 2) * (FLT_EPSILON / 2) * K, "team %d worst %g", team, worst);
    }
    free(A); free(B); free(C); free(R); free(P);
}

/* A row (column) of C does not depend on which other rows (columns) are
 * computed in the same call: products over token chunks equal the whole
 * product bit for bit (evaluation in any batch layout gives the same
 * figures). */
static void test_row_column_independence(void)
{
    rng_state r;
    rng_seed(&r, 11);
    int M = 233, N = 151, K = 300;
    float *A = alloc_filled((size_t)M * K, &r), *B = alloc_filled((size_t)N * K, &r);
    float *C1 = malloc((size_t)M * N * sizeof *C1), *C2 = malloc((size_t)M * N * sizeof *C2);
    cpu_info ci;
    cpu_info_query(&ci);
    for (int path = 0; path <= CPU_KERNELS_AVX512; path++) {
        if (!path_runs(path, __func__))
            continue;
        gemm_config cfg;
        gemm_config_from_cpu(&cfg, &ci, (cpu_kernel_path)path);
        gemm_f32_with(&cfg, 0, 1, M, N, K, A, K, B, K, 0, C1, N);
        for (int m0 = 0; m0 < M; m0 += 37)
            gemm_f32_with(&cfg, 0, 1, min_i(37, M - m0), N, K, A + (size_t)m0 * K, K, B, K, 0,
                          C2 + (size_t)m0 * N, N);
        CHECK(memcmp(C1, C2, (size_t)M * N * sizeof *C1) == 0);
        for (int n0 = 0; n0 < N; n0 += 29)
            gemm_f32_with(&cfg, 0, 1, M, min_i(29, N - n0), K, A, K, B + (size_t)n0 * K, K, 0,
                          C2 + n0, N);
        CHECK(memcmp(C1, C2, (size_t)M * N * sizeof *C1) == 0);
    }
    free(A); free(B); free(C1); free(C2);
}

/* op(B) packed once gives bitwise the products of gemm_f32_with, for every
 * transposition case, both paths, tiny blocking (N > NC, K > KC) and the
 * real one; repacking reuses the buffer and follows changes of B. */
static void test_packed_b(void)
{
    rng_state r;
    rng_seed(&r, 10);
    const shape shapes[] = {{1, 1, 1}, {13, 17, 19}, {37, 53, 41}, {61, 101, 33}, {7, 200, 300}};
    cpu_info ci;
    cpu_info_query(&ci);
    gemm_packed_b pb = {0};
    tempo_error err;
    tempo_error_clear(&err);
    for (int path = 0; path <= CPU_KERNELS_AVX512; path++) {
        if (!path_runs(path, __func__))
            continue;
        for (int tiny = 0; tiny < 2; tiny++) {
            gemm_config cfg;
            if (tiny)
                cfg = tiny_config((cpu_kernel_path)path);
            else
                gemm_config_from_cpu(&cfg, &ci, (cpu_kernel_path)path);
            gemm_context ctx = {.cfg = cfg};
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int t = 0; t < 4; t++) {
                    int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
                    int ta = t >> 1, tb = t & 1;
                    int lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 3;
                    float *A = alloc_filled((size_t)(ta ? K : M) * lda, &r);
                    float *B = alloc_filled((size_t)(tb ? N : K) * ldb, &r);
                    float *C1 = alloc_filled((size_t)M * ldc, &r);
                    float *C2 = malloc((size_t)M * ldc * sizeof *C2);
                    memcpy(C2, C1, (size_t)M * ldc * sizeof *C2);
                    CHECK(gemm_packed_b_pack(&pb, &cfg, tb, K, N, B, ldb, &err) == 0);
                    float beta = (float)(s & 1);
                    gemm_f32_with(&cfg, ta, tb, M, N, K, A, lda, B, ldb, beta, C1, ldc);
                    gemm_f32_packed_b(&cfg, ta, M, A, lda, &pb, beta, C2, ldc);
                    CHECK_MSG(memcmp(C1, C2, (size_t)M * ldc * sizeof *C1) == 0,
                              "%s tiny %d %dx%dx%d ta%d tb%d", cpu_kernel_path_name(cfg.path),
                              tiny, M, N, K, ta, tb);
                    /* B changes: a repack follows it */
                    B[0] += 1;
                    CHECK(gemm_packed_b_pack(&pb, &cfg, tb, K, N, B, ldb, &err) == 0);
                    gemm_f32_with(&cfg, ta, tb, M, N, K, A, lda, B, ldb, 0, C1, ldc);
                    gemm_f32_packed_b_ctx(&ctx, ta, M, A, lda, &pb, 0, C2, ldc);
                    CHECK(memcmp(C1, C2, (size_t)M * ldc * sizeof *C1) == 0);
                    /* and through a context's reused workspace */
                    for (int i = 0; i < M; i++)   /* the product must overwrite this */
                        for (int c = 0; c < N; c++)
                            C2[(size_t)i * ldc + c] = NAN;
                    gemm_f32_ctx(&ctx, ta, tb, M, N, K, A, lda, B, ldb, 0, C2, ldc);
                    CHECK(memcmp(C1, C2, (size_t)M * ldc * sizeof *C1) == 0);
                    free(A); free(B); free(C1); free(C2);
                }
            gemm_context_free(&ctx);
            CHECK(ctx.work == NULL);
        }
    }
    float *before = pb.data;
    CHECK(gemm_packed_b_pack(&pb, &(gemm_config){0}, 0, 0, 5, NULL, 5, &err) == -1);
    CHECK(pb.data == before);
    gemm_packed_b_free(&pb);
    CHECK(pb.data == NULL);
}

/* op(B) packed in halves (reserve, then fill_team) gives gemm_f32_with's
 * bits: by a team of two sharing the work, by a thread in no team, and
 * (gemm_packed_b_pack) by each thread of a team packing its own B, which
 * must not share its loop with the other thread. Shapes with several K
 * slices and, on the tiny blocking, several panels. */
static void test_packed_b_team(void)
{
    rng_state r;
    rng_seed(&r, 13);
    const shape shapes[] = {{19, 150, 211}, {40, 37, 600}, {5, 3, 2}};
    cpu_info ci;
    cpu_info_query(&ci);
    int saved = omp_get_max_threads(), bad = 0;
    omp_set_num_threads(2);
    for (int tiny = 0; tiny < 2; tiny++) {
        gemm_config cfg;
        if (tiny)
            cfg = tiny_config(have_avx2() ? CPU_KERNELS_AVX2 : CPU_KERNELS_PORTABLE);
        else
            gemm_config_from_cpu(&cfg, &ci, have_avx2() ? CPU_KERNELS_AVX2 : CPU_KERNELS_PORTABLE);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int tb = 0; tb < 2; tb++) {
                int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
                float *A = alloc_filled((size_t)M * K, &r);
                float *B[2] = {alloc_filled((size_t)K * N, &r), alloc_filled((size_t)K * N, &r)};
                size_t nc = (size_t)M * N;
                float *want[2], *got[2];
                for (int i = 0; i < 2; i++) {
                    want[i] = malloc(nc * sizeof(float));
                    got[i] = malloc(nc * sizeof(float));
                    gemm_f32_with(&cfg, 0, tb, M, N, K, A, K, B[i], tb ? K : N, 0, want[i], N);
                }
                int ldb = tb ? K : N;
                gemm_packed_b pb = {0}, own[2] = {{0}, {0}};
                tempo_error err;
                CHECK(gemm_packed_b_reserve(&pb, &cfg, tb, K, N, &err) == 0);
#pragma omp parallel num_threads(2)
                gemm_packed_b_fill_team(&pb, &cfg, B[0], ldb);
                gemm_f32_packed_b(&cfg, 0, M, A, K, &pb, 0, got[0], N);
                bad += memcmp(want[0], got[0], nc * sizeof(float)) != 0;
                CHECK(gemm_packed_b_reserve(&pb, &cfg, tb, K, N, &err) == 0);
                gemm_packed_b_fill_team(&pb, &cfg, B[1], ldb);   /* no team: all of it */
                gemm_f32_packed_b(&cfg, 0, M, A, K, &pb, 0, got[1], N);
                bad += memcmp(want[1], got[1], nc * sizeof(float)) != 0;
                int packed = 0;
#pragma omp parallel num_threads(2) reduction(+ : packed)
                {
                    int t = omp_get_thread_num();
                    tempo_error e;
                    packed += gemm_packed_b_pack(&own[t], &cfg, tb, K, N, B[t], ldb, &e) == 0;
                }
                CHECK(packed == 2);
                for (int i = 0; i < 2; i++) {
                    memset(got[i], 0, nc * sizeof(float));
                    gemm_f32_packed_b(&cfg, 0, M, A, K, &own[i], 0, got[i], N);
                    bad += memcmp(want[i], got[i], nc * sizeof(float)) != 0;
                }
                gemm_packed_b_free(&pb);
                for (int i = 0; i < 2; i++) {
                    gemm_packed_b_free(&own[i]);
                    free(want[i]); free(got[i]); free(B[i]);
                }
                free(A);
            }
    }
    omp_set_num_threads(saved);
    CHECK_MSG(bad == 0, "%d products from a packing in halves or by a team's threads differ", bad);
}

/* Degenerate sizes: nothing to write, or only beta * C. */
static void test_degenerate(void)
{
    gemm_config cfg;
    gemm_config_init(&cfg);
    float A[4] = {1, 2, 3, 4}, B[4] = {1, 2, 3, 4};
    float C[4] = {5, 6, 7, 8};
    gemm_f32_with(&cfg, 0, 0, 0, 2, 2, A, 2, B, 2, 0, C, 2);
    gemm_f32_with(&cfg, 0, 0, 2, 0, 2, A, 2, B, 2, 0, C, 2);
    CHECK(C[0] == 5 && C[3] == 8);
    gemm_f32_with(&cfg, 0, 0, 2, 2, 0, A, 2, B, 2, 1, C, 2);   /* K = 0, beta 1: unchanged */
    CHECK(C[0] == 5 && C[1] == 6 && C[2] == 7 && C[3] == 8);
    C[1] = NAN;
    gemm_f32_with(&cfg, 0, 0, 2, 2, 0, A, 2, B, 2, 0, C, 2);   /* K = 0, beta 0: zeros */
    CHECK(C[0] == 0 && C[1] == 0 && C[2] == 0 && C[3] == 0);
    gemm_f32_with(&cfg, 0, 0, 2, 2, 2, A, 2, B, 2, 0, C, 2);
    CHECK(C[0] == 7 && C[1] == 10 && C[2] == 15 && C[3] == 22);
}

static void test_config_from_caches(void)
{
    cpu_info ci;
    cpu_info_query(&ci);
    gemm_config cfg;
    gemm_config_from_cpu(&cfg, &ci, CPU_KERNELS_AVX2);
    CHECK(cfg.kc % 8 == 0 && cfg.kc >= 16 && cfg.kc <= 1024);
    CHECK(cfg.mc % 6 == 0 && cfg.mc >= 6);
    CHECK(cfg.nc % 16 == 0 && cfg.nc >= 16);
    /* The shares hold: B micro-panel within half of L1d, A block within half of L2. */
    CHECK((long)cfg.kc * 16 * 4 <= ci.l1d_bytes / 2 || cfg.kc == 16);
    CHECK((long)cfg.mc * cfg.kc * 4 <= ci.l2_bytes / 2 || cfg.mc == 6);
    /* A Zen 3 core (32 KiB L1d, 512 KiB L2, 32 MiB L3): kc 256, mc 252, nc 8192. */
    ci.l1d_bytes = 32768;
    ci.l2_bytes = 524288;
    ci.l3_bytes = 32L << 20;
    gemm_config_from_cpu(&cfg, &ci, CPU_KERNELS_AVX2);
    CHECK(cfg.kc == 256 && cfg.mc == 252 && cfg.nc == 8192);
    CHECK(cfg.wide_fma == 0 && cfg.can_bf16 == 0);   /* neither on the AVX2 path */
    /* The second thread's threshold: 4 x the multiply-adds on 512-bit FMA
     * units only. Muon's 128 x 128 x 128 (2 M) takes two threads where zmm
     * FMAs run on 256-bit pipes (Zen 4) and one where they are 512 bits
     * wide (Zen 5); 256 x 256 x 128 (8 M) two either way. */
    int owns;
    ci.avx512f = 1;
    ci.fma512_full = 0;
    gemm_config_from_cpu(&cfg, &ci, CPU_KERNELS_AVX512);
    CHECK(cfg.wide_fma == 0 && gemm_split(&cfg, 128, 128, 128, 2, &owns) == 2);
    ci.fma512_full = 1;
    gemm_config_from_cpu(&cfg, &ci, CPU_KERNELS_AVX512);
    CHECK(cfg.wide_fma == 1 && gemm_split(&cfg, 128, 128, 128, 2, &owns) == 1);
    CHECK(gemm_split(&cfg, 256, 256, 128, 2, &owns) == 2);
    /* what cpuid says here is consistent: no wide FMA without AVX-512 */
    cpu_info_query(&ci);
    CHECK(ci.avx512f || !ci.fma512_full);
    CHECK(ci.avx512f || !ci.avx512bf16);
}

/* The benchmark's shape parsing, shape sets and JSON line (no timing is
 * checked: only that a measurement happened and the line is well formed). */
/* The figure after "key": in a JSON line, as printed: at most `decimals`
 * digits after the point (the benchmarks round so lines print short). */
static int printed_decimals(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    const char *dot = NULL;
    while (*p && *p != ',' && *p != '}') {
        if (*p == '.')
            dot = p;
        if (*p == 'e' || *p == 'E')
            return 99;
        p++;
    }
    return dot ? (int)(p - dot - 1) : 0;
}

/* The flop-weighted summary: two shapes at one thread count, totals over
 * both; with a peer the ratio of the totals; with no peak, efficiency null.
 * Figures as printed are rounded (1/3 s, 2/3 s give long fractions). */
static void test_gemm_summary(void)
{
    bench_gemm_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.n_threads = 2;
    sum.threads[0] = 1;
    sum.threads[1] = 2;
    sum.peak_gflops[0] = 3;
    sum.peak_now_gflops[0] = sum.peak_now_gflops[1] = 2.5;
    bench_gemm_shape a = {.M = 1000, .N = 1000, .K = 500}, b = {.M = 1000, .N = 1000, .K = 1000};
    bench_gemm_result ra = {.best_s = 1.0 / 3}, rb = {.best_s = 2.0 / 3, .contended = 1};
    bench_gemm_result pa = {.best_s = 1}, pb = {.best_s = 1};
    bench_gemm_summary_add(&sum, 0, &a, &ra, &pa);
    bench_gemm_summary_add(&sum, 0, &b, &rb, &pb);
    bench_gemm_summary_add(&sum, 1, &a, &ra, NULL);
    bench_gemm_summary_add(&sum, 1, &b, &rb, NULL);
    /* as trained at 2 threads: 1e9 FLOPs at 4 GFLOP/s and 2e9 at 1 (2.25 s): 3e9 / 2.25; OpenBLAS's
     * best ways 2 and 2 (1.5 s): 2; ratio 2 / 3 */
    bench_gemm_as_trained ta = {.r = {.gflops = 4}, .peer_gflops = 2}, tb = {.r = {.gflops = 1}, .peer_gflops = 2};
    bench_gemm_summary_add_trained(&sum, 1, &a, &ta);
    bench_gemm_summary_add_trained(&sum, 1, &b, &tb);
    strbuf line = {0};
    jsonw w;
    jsonw_init(&w, &line);
    sum.bf16 = 1;   /* the products' precision is the caller's to say */
    bench_gemm_summary_json(&w, &sum, "avx2");
    tempo_error err;
    CHECK(jsonw_finish(&w, &err) == 0);
    json_value *v = NULL;
    CHECK(json_parse(line.data, line.len, &v, &err) == 0);
    if (v) {
        /* 2 MNK: 1e9 + 2e9 FLOPs in 1/3 + 2/3 s: 3 GFLOP/s (peak 3: efficiency 1);
         * OpenBLAS the same in 2 s: 1.5, ratio 2 */
        const json_value *t1 = json_get(json_get(v, "threads"), "1"), *t2 = json_get(json_get(v, "threads"), "2");
        CHECK(json_get_number(v, "shapes", 0) == 2 && json_get(v, "contended")->boolean == 1);
        CHECK(strcmp(json_get_string(v, "precision"), "bf16") == 0);
        CHECK(t1 && json_get_number(t1, "gflops", 0) == 3 && json_get_number(t1, "efficiency", 0) == 1);
        CHECK(t1 && json_get_number(t1, "openblas_gflops", 0) == 1.5 && json_get_number(t1, "ratio", 0) == 2);
        CHECK(t2 && json_get(t2, "efficiency")->type == JSON_NULL && json_get(t2, "ratio") == NULL);
        CHECK(t2 && json_get_number(t2, "peak_now_gflops", 0) == 2.5);
        const json_value *at2 = t2 ? json_get(t2, "as_trained") : NULL;
        CHECK(t1 && json_get(t1, "as_trained") == NULL);
        CHECK_MSG(at2 && fabs(json_get_number(at2, "gflops", 0) - 3 / 2.25) < 0.01 &&
                  json_get_number(at2, "openblas_gflops", 0) == 2 && fabs(json_get_number(at2, "ratio", 0) - 1 / 1.5) < 0.01,
                  "as trained: %s", line.data);
        json_free(v);
    }
    strbuf_free(&line);
    /* a line's figures print rounded: 2/3 GFLOP/s as 0.67 */
    bench_gemm_result third = {.gflops = 2.0 / 3, .best_s = 1, .other_load_cores = 1.0 / 7};
    jsonw_init(&w, &line);
    bench_gemm_json(&w, &a, 1, &third, 1.0 / 3, 0, "avx2", NULL, NULL);
    CHECK(jsonw_finish(&w, &err) == 0);
    CHECK_MSG(printed_decimals(line.data, "gflops") == 2 && printed_decimals(line.data, "efficiency") == 0 &&
              printed_decimals(line.data, "other_load_cores") == 2, "%s", line.data);
    strbuf_free(&line);
}

static void test_bench_helpers(void)
{
    bench_gemm_shape sh;
    tempo_error err;
    tempo_error_clear(&err);
    CHECK(bench_gemm_parse_shape("8192x256x1024", &sh, &err) == 0);
    CHECK(sh.M == 8192 && sh.N == 256 && sh.K == 1024 && sh.trans_a == 0 && sh.trans_b == 0);
    CHECK(bench_gemm_parse_shape("256x256x8192:1:0", &sh, &err) == 0);
    CHECK(sh.M == 256 && sh.K == 8192 && sh.trans_a == 1 && sh.trans_b == 0);
    const char *bad[] = {"", "8x8", "8x8x0", "8x8x8:2:0", "8x8x8:1", "8x8x8x", "axbxc",
                         "100000x100000x100000", "4294967297x1x1", "99999999999999999999x8x8",
                         "8x8x8:4294967296:0", "8x8x8:1:0:1", "8x8x8:-0:1:", " 8x8x8", "8x8x+"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tempo_error_clear(&err);
        CHECK_MSG(bench_gemm_parse_shape(bad[i], &sh, &err) == -1 && err.code == 2, "%s", bad[i]);
    }
    /* A preset's step: d 64, 4 heads of 16 (q, k, v, o all 64 x 64), d_ff
     * 256, 3 x 32 tokens, vocab 97, Muon. Distinct products: fwd 3 (qkvo,
     * up, down), dx 3, dW 3, head 3, and Muon's: for 64x64, X X^T (0 1) and
     * A A = B X (64x64x64, 0 0); for 64x256, X X^T and B X (A A is again
     * 64x64x64): 4. In all 16. */
    run_config rc;
    run_config_defaults(&rc);
    rc.model.d_model = 64;
    rc.model.n_heads = rc.model.n_kv_heads = 4;
    rc.model.n_layers = 2;
    rc.model.d_ff = 256;
    rc.model.context = 32;
    rc.model.vocab_size = 97;
    rc.batch_size = 6;
    rc.micro_batch = 3;
    rc.optim.use_muon = 1;
    rc.model.mlp = MLP_RELU2; /* two MLP matrices (the default, SwiGLU, has three) */
    snprintf(rc.preset, sizeof rc.preset, "p");
    CHECK(run_config_finish(&rc, &err) == 0);
    bench_gemm_shape set[64];
    int n = bench_gemm_preset_shapes(&rc, set, 64);
    CHECK_MSG(n == 16, "%d shapes", n);
    CHECK(set[0].M == 96 && set[0].N == 64 && set[0].K == 64 && set[0].trans_b == 1);
    CHECK(strcmp(set[0].op, "p fwd wq, fwd wk, fwd wv, fwd wo") == 0);
    int found_dw_up = 0, found_head = 0;
    for (int i = 0; i < n; i++) {
        found_dw_up |= set[i].M == 256 && set[i].N == 64 && set[i].K == 96 && set[i].trans_a;
        found_head |= set[i].M == 97 && set[i].N == 64 && set[i].K == MODEL_HEAD_CHUNK_ROWS;
    }
    CHECK(found_dw_up && found_head);
    CHECK(bench_gemm_preset_shapes(&rc, set, 4) == 4);
    /* as training runs them on 2 threads: a step product's batch rows halved (M of fwd and dx, K of dW),
     * a head chunk and a Muon product whole; 1 thread changes nothing */
    for (int i = 0; i < n; i++) {
        bench_gemm_shape p2 = bench_gemm_per_thread(&set[i], 2), p1 = bench_gemm_per_thread(&set[i], 1);
        int step = strstr(set[i].op, "fwd") || strstr(set[i].op, "dx w") || strstr(set[i].op, "dW w");
        CHECK_MSG(set[i].batch_dim == (!step ? 0 : strstr(set[i].op, "dW") ? 'K' : 'M'), "%s", set[i].op);
        CHECK_MSG(p2.M == (set[i].batch_dim == 'M' ? 48 : set[i].M) && p2.N == set[i].N &&
                  p2.K == (set[i].batch_dim == 'K' ? 48 : set[i].K), "%s: %dx%dx%d", set[i].op, p2.M, p2.N, p2.K);
        CHECK(p1.M == set[i].M && p1.N == set[i].N && p1.K == set[i].K);
    }
    CHECK(bench_gemm_parse_shape("20x30x40:1:1", &sh, &err) == 0 && sh.batch_dim == 0);
    bench_gemm_result rr;
    CHECK(bench_gemm_measure_replicas(&sh, 2, 0, 0.001, &rr, &err) == 0);
    CHECK(rr.gflops > 0 && rr.best_s > 0 && rr.reps >= 3 && rr.threads_used == 1);
    CHECK(bench_gemm_measure_replicas(&sh, 0, 0, 0.001, &rr, &err) == -1 && rr.gflops == 0);
    CHECK(rr.bf16 == 0);
    {
        /* the bf16 mode: measured and said where the CPU has it, refused with the reason where not */
        gemm_context bc;
        gemm_context_init(&bc);
        bench_gemm_result rb;
        if (bc.cfg.can_bf16) {
            CHECK(gemm_config_set_bf16(&bc.cfg, 1, &err) == 0);
            CHECK(bench_gemm_measure(&bc, &sh, 1, 0.001, &rb, &err) == 0 && rb.bf16 == 1 && rb.gflops > 0);
            CHECK(bench_gemm_measure_replicas(&sh, 2, 1, 0.001, &rr, &err) == 0 && rr.bf16 == 1 && rr.gflops > 0);
            strbuf bl = {0};
            jsonw bw;
            jsonw_init(&bw, &bl);
            bench_gemm_json(&bw, &sh, 1, &rb, 100, 0, "avx512", NULL, NULL);
            json_value *bv = NULL;
            CHECK(jsonw_finish(&bw, &err) == 0 && json_parse(bl.data, bl.len, &bv, &err) == 0);
            CHECK(bv && strcmp(json_get_string(bv, "precision"), "bf16") == 0);
            json_free(bv);
            strbuf_free(&bl);
        } else {
            printf("  (no AVX-512 BF16 here: only the bf16 mode's refusal checked)\n");
            CHECK(bench_gemm_measure_replicas(&sh, 2, 1, 0.001, &rr, &err) == -1 && strstr(err.msg, "BF16"));
        }
        gemm_context_free(&bc);
    }

    gemm_context ctx;
    gemm_context_init(&ctx);
    CHECK(bench_gemm_parse_shape("20x30x40:1:1", &sh, &err) == 0);
    bench_gemm_result r, peer = {.gflops = 2, .other_load_cores = 0.5};
    CHECK(bench_gemm_measure(&ctx, &sh, 1, 0.001, &r, &err) == 0);
    gemm_context_free(&ctx);
    CHECK(r.gflops > 0 && r.reps >= 3 && r.best_s > 0);
    strbuf line = {0};
    jsonw w;
    jsonw_init(&w, &line);
    bench_gemm_json(&w, &sh, 1, &r, 100, 50, "avx2", &peer, NULL);
    CHECK(jsonw_finish(&w, &err) == 0);
    json_value *v = NULL;
    CHECK(json_parse(line.data, line.len, &v, &err) == 0);
    CHECK(strcmp(json_get_string(v, "kernel"), "gemm") == 0);
    CHECK(strcmp(json_get_string(v, "shape"), "20x30x40 1 1") == 0);
    CHECK(json_get_number(v, "threads", 0) == 1 && json_get_number(v, "gflops", 0) > 0);
    CHECK(json_get_number(v, "peak_gflops", 0) == 100);
    CHECK(json_get_number(v, "peak_now_gflops", 0) == 50 && json_get_number(v, "efficiency_now", 0) > 0);
    CHECK(json_get_number(v, "openblas_gflops", 0) == 2 && json_get_number(v, "ratio", 0) > 0);
    CHECK(json_get_number(v, "other_load_cores", 0) >= 0.5);
    CHECK(strcmp(json_get_string(v, "precision"), "fp32") == 0);
    /* tempo's product says how it split: one thread here (1 available) */
    CHECK(json_get_number(v, "threads_used", 0) == 1 && strcmp(json_get_string(v, "split"), "one thread") == 0);
    json_free(v);
    strbuf_free(&line);
    int owns;
    int used = gemm_split(&ctx.cfg, 400, 150, 150, 2, &owns);
    const char *want = used == 1 ? "one thread" : owns ? "owned columns" : "shared B";
    r.threads_used = used;
    r.owns_b = owns;
    jsonw_init(&w, &line);
    bench_gemm_json(&w, &sh, 2, &r, 100, 0, "avx2", NULL, NULL);
    CHECK(jsonw_finish(&w, &err) == 0);
    CHECK(json_parse(line.data, line.len, &v, &err) == 0);
    CHECK(json_get_number(v, "threads_used", 0) == used && strcmp(json_get_string(v, "split"), want) == 0);
    json_free(v);
    strbuf_free(&line);
    r.threads_used = 0;   /* another library's figure: nothing said of a split */
    jsonw_init(&w, &line);
    bench_gemm_json(&w, &sh, 1, &r, 0, 0, "avx2", NULL, NULL);   /* no peaks, no peer */
    CHECK(jsonw_finish(&w, &err) == 0);
    CHECK(json_parse(line.data, line.len, &v, &err) == 0);
    CHECK(json_get(v, "efficiency")->type == JSON_NULL && json_get(v, "ratio") == NULL);
    CHECK(json_get(v, "peak_now_gflops") == NULL && json_get(v, "threads_used") == NULL && json_get(v, "split") == NULL);
    CHECK(json_get(v, "as_trained") == NULL);
    json_free(v);
    strbuf_free(&line);
    /* as trained: each thread's shape, its figure against the peak and the peer's best way */
    bench_gemm_as_trained at = {.per_thread = {.M = 10, .N = 30, .K = 40}, .r = {.gflops = 80},
                                .peer_gflops = 64, .peer_way = "a product a thread"};
    sh.batch_dim = 'M';
    jsonw_init(&w, &line);
    bench_gemm_json(&w, &sh, 2, &r, 100, 0, "avx2", NULL, &at);
    CHECK(jsonw_finish(&w, &err) == 0);
    CHECK(json_parse(line.data, line.len, &v, &err) == 0);
    const json_value *a = json_get(v, "as_trained");
    CHECK(a && strcmp(json_get_string(a, "split"), "a replica's rows a thread") == 0);
    CHECK(a && strcmp(json_get_string(a, "shape"), "10x30x40 0 0") == 0 && json_get_number(a, "gflops", 0) == 80);
    CHECK(a && json_get_number(a, "efficiency", 0) == 0.8 && json_get_number(a, "openblas_gflops", 0) == 64);
    CHECK(a && json_get_number(a, "ratio", 0) == 1.25 && !strcmp(json_get_string(a, "openblas_way"), "a product a thread"));
    json_free(v);
    strbuf_free(&line);
    test_gemm_summary();
}

int main(void)
{
    RUN(test_config_from_caches);
    RUN(test_degenerate);
    RUN(test_small_tiny_blocking);
    RUN(test_small_real_blocking);
    RUN(test_larger_than_blocking);
    RUN(test_avx512_same_bits);
    RUN(test_skinny_tiny_blocking);
    RUN(test_env_switch);
    RUN(test_context_reserve);
    RUN(test_determinism);
    RUN(test_owned_b_same_bits);
    RUN(test_inside_parallel);
    RUN(test_packed_b);
    RUN(test_packed_b_team);
    RUN(test_row_column_independence);
    RUN(test_bench_helpers);
    return test_summary("test_gemm");
}
