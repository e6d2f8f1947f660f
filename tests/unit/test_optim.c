/* test_optim.c - AdamW against its formula, Muon's Newton-Schulz against
 * orthogonality, gradient clipping, the learning-rate schedule shape. */
#include "test.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_info.h"
#include "core/rng.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/optim_kernels.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"

static optim_config base_config(void)
{
    optim_config c = {0};
    c.lr = 0.1f; c.lr_embed = 0.2f; c.lr_head = 0.05f; c.lr_scalar = 0.3f; c.lr_muon = 0.02f;
    c.beta1 = 0.9f; c.beta2 = 0.95f; c.eps = 1e-8f; c.weight_decay = 0.1f;
    c.muon_momentum = 0.95f; c.ns_steps = 5;
    return c;
}

/* AdamW written out in double for one scalar, the reference. */
static void adamw_ref(double *p, double *m, double *v, double g, int t, double lr, double wd,
                      const optim_config *c)
{
    *m = c->beta1 * *m + (1 - c->beta1) * g;
    *v = c->beta2 * *v + (1 - c->beta2) * g * g;
    double mh = *m / (1 - pow(c->beta1, t)), vh = *v / (1 - pow(c->beta2, t));
    *p = *p * (1 - lr * wd) - lr * mh / (sqrt(vh) + c->eps);
}

static void test_adamw_matches_formula(void)
{
    optim_config c = base_config();
    optim_tensor ts[3] = {
        {0, 6, 2, 3, GROUP_EMBED}, {6, 4, 1, 4, GROUP_NORM}, {10, 6, 3, 2, GROUP_MATRIX}};
    optimizer o;
    tempo_error err;
    CHECK(optim_create(&o, &c, ts, 3, 16, &err) == 0);
    float p[16], g[16];
    double pr[16], mr[16] = {0}, vr[16] = {0};
    rng_state r;
    rng_seed(&r, 1);
    for (int i = 0; i < 16; i++) pr[i] = p[i] = (float)rng_normal(&r);
    for (int step = 1; step <= 5; step++) {
        for (int i = 0; i < 16; i++) g[i] = (float)rng_normal(&r);
        double mult = 0.5 + 0.1 * step;
        optim_step(&o, p, g, optim_grad_norm(g, 16), mult);
        for (int i = 0; i < 16; i++) {
            double lr = i < 6 ? c.lr_embed : i < 10 ? c.lr_scalar : c.lr;
            double wd = i < 10 ? 0 : c.weight_decay;
            adamw_ref(&pr[i], &mr[i], &vr[i], g[i], step, lr * mult, wd, &c);
        }
    }
    for (int i = 0; i < 16; i++)
        CHECK_NEAR(p[i], pr[i], 1e-5 * (1 + fabs(pr[i])));
    optim_free(&o);
}

static void test_grad_clip(void)
{
    optim_config c = base_config();
    c.grad_clip = 1.0f;
    c.beta1 = 0; /* m = g: the first update shows the clipped gradient's direction */
    optim_tensor t = {0, 4, 1, 4, GROUP_NORM};
    optimizer o;
    CHECK(optim_create(&o, &c, &t, 1, 4, NULL) == 0);
    float p[4] = {0}, g[4] = {3, 4, 0, 0};
    double norm = optim_grad_norm(g, 4);
    CHECK_NEAR(norm, 5.0, 1e-12);
    optim_step(&o, p, g, norm, 1.0);
    /* clipped g = (0.6, 0.8); Adam's first step is -lr * sign(g) regardless of scale, and m = g*scale */
    CHECK_NEAR(o.m[0], 0.6, 1e-6);
    CHECK_NEAR(o.m[1], 0.8, 1e-6);
    optim_free(&o);
}

static void check_orthogonal(int rows, int cols)
{
    rng_state r;
    rng_seed(&r, (uint64_t)(rows * 1000 + cols));
    size_t n = (size_t)rows * cols;
    float *G = malloc(sizeof(float) * n);
    float *work = malloc(sizeof(float) * optim_ns_work_len(rows, cols));
    for (size_t i = 0; i < n; i++) G[i] = (float)rng_normal(&r);
    /* Through a GEMM context: bitwise the plain path's result. */
    float *G2 = malloc(sizeof(float) * n);
    memcpy(G2, G, sizeof(float) * n);
    gemm_context gc;
    gemm_context_init(&gc);
    optim_newton_schulz(G2, rows, cols, 5, work, &gc);
    gemm_context_free(&gc);
    optim_newton_schulz(G, rows, cols, 5, work, NULL);
    CHECK(memcmp(G, G2, sizeof(float) * n) == 0);
    free(G2);
    /* The smaller Gram matrix should be close to the identity: Muon's quintic
     * iteration only brings singular values into roughly [0.7, 1.2]. */
    int k = rows < cols ? rows : cols;
    double max_diag_err = 0, max_off = 0;
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++) {
            double s = 0;
            if (rows <= cols)
                for (int j = 0; j < cols; j++) s += (double)G[(size_t)a * cols + j] * G[(size_t)b * cols + j];
            else
                for (int i = 0; i < rows; i++) s += (double)G[(size_t)i * cols + a] * G[(size_t)i * cols + b];
            if (a == b) max_diag_err = fmax(max_diag_err, fabs(s - 1));
            else max_off = fmax(max_off, fabs(s));
        }
    CHECK_MSG(max_diag_err < 0.6, "%dx%d diag err %g", rows, cols, max_diag_err);
    CHECK_MSG(max_off < 0.35, "%dx%d off-diag %g", rows, cols, max_off);
    free(G);
    free(work);
}

static void test_newton_schulz_orthogonalises(void)
{
    check_orthogonal(16, 16);
    check_orthogonal(12, 40);
    check_orthogonal(40, 12);
}

/* Newton-Schulz as it was before the half products: every product whole,
 * the elementwise steps over every element; the reference for the bits. */
static void ns_whole_products(float *G, int rows, int cols, int steps, gemm_context *ctx)
{
    const float a = 3.4445f, b = -4.7750f, c = 2.0315f;
    int transposed = rows > cols;
    int r = transposed ? cols : rows, n = transposed ? rows : cols;
    size_t rn = (size_t)r * n, rr = (size_t)r * r;
    float *X = malloc(sizeof(float) * (2 * rn + 2 * rr)), *A = X + rn, *AA = A + rr, *Y = AA + rr;
    float inv = (float)(1.0 / (sqrt(optim_kernel_sum_squares(G, rn)) + 1e-7));
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            if (transposed)
                X[(size_t)j * n + i] = G[(size_t)i * cols + j] * inv;
            else
                X[(size_t)i * n + j] = G[(size_t)i * cols + j] * inv;
    for (int s = 0; s < steps; s++) {
        gemm_f32_ctx(ctx, 0, 1, r, r, n, X, n, X, n, 0.0f, A, r);
        gemm_f32_ctx(ctx, 0, 0, r, r, r, A, r, A, r, 0.0f, AA, r);
        for (size_t i = 0; i < rr; i++)
            A[i] = b * A[i] + c * AA[i];
        gemm_f32_ctx(ctx, 0, 0, r, n, r, A, r, X, n, 0.0f, Y, n);
        for (size_t i = 0; i < rn; i++)
            X[i] = a * X[i] + Y[i];
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            G[(size_t)i * cols + j] = transposed ? X[(size_t)j * n + i] : X[(size_t)i * n + j];
    free(X);
}

/* Newton-Schulz computes the upper triangles of X X^T and A A and copies
 * the lower ones: the same bits as the whole products (they are symmetric
 * bit for bit), on shapes of one, several and ragged 24-row blocks, wide and
 * tall, on every kernel path this CPU runs, with the real blocking and with
 * a tiny one (kc 16: K cut into many slices). */
static void test_newton_schulz_half_products_same_bits(void)
{
    static const int shapes[][2] = {{128, 128}, {128, 352}, {352, 128}, {12, 40}, {40, 12}, {50, 70},
                                    {30, 30}, {100, 300}, {7, 5}, {1, 9}};
    cpu_info ci;
    cpu_info_query(&ci);
    int mism = 0, runs = 0;
    for (int path = 0; path <= CPU_KERNELS_AVX512; path++) {
        if ((path == CPU_KERNELS_AVX2 && !(ci.avx2 && ci.fma)) ||
            (path == CPU_KERNELS_AVX512 && !(ci.avx2 && ci.fma && ci.avx512f))) {
            TEST_SKIP("no %s on this CPU: its cases not run", cpu_kernel_path_name((cpu_kernel_path)path));
            continue;
        }
        for (int tiny = 0; tiny < 2; tiny++) {
            cpu_info c2 = ci;
            if (tiny) {
                c2.l1d_bytes = 2048;   /* kc 16 */
                c2.l2_bytes = 1536;
                c2.l3_bytes = 8192;
            }
            gemm_context ctx;
            gemm_context_init(&ctx);
            gemm_config_from_cpu(&ctx.cfg, &c2, (cpu_kernel_path)path);
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                int rows = shapes[s][0], cols = shapes[s][1];
                size_t n = (size_t)rows * cols;
                rng_state r;
                rng_seed(&r, 77 + s);
                float *G = malloc(sizeof(float) * n), *R = malloc(sizeof(float) * n);
                float *work = malloc(sizeof(float) * optim_ns_work_len(rows, cols));
                for (size_t i = 0; i < n; i++)
                    G[i] = R[i] = (float)rng_normal(&r);
                optim_newton_schulz(G, rows, cols, 5, work, &ctx);
                ns_whole_products(R, rows, cols, 5, &ctx);
                if (memcmp(G, R, sizeof(float) * n) != 0 && mism++ < 3)
                    fprintf(stderr, "  %s%s %dx%d: differs from the whole products\n",
                            cpu_kernel_path_name((cpu_kernel_path)path), tiny ? " tiny" : "", rows, cols);
                runs++;
                free(G); free(R); free(work);
            }
            gemm_context_free(&ctx);
        }
    }
    CHECK_MSG(mism == 0, "%d of %d Newton-Schulz results differ from the whole products'", mism, runs);
    CHECK(runs >= 20);
}

static void test_muon_step_direction(void)
{
    /* With a rank-1 gradient, Muon's update is the (scaled) sign-free direction
     * u v^T: every entry has the sign of the gradient's entry. */
    optim_config c = base_config();
    c.use_muon = 1;
    c.weight_decay = 0;
    optim_tensor t = {0, 12, 3, 4, GROUP_MATRIX};
    optimizer o;
    CHECK(optim_create(&o, &c, &t, 1, 12, NULL) == 0);
    float p[12] = {0}, g[12];
    float u[3] = {1, -2, 0.5f}, v[4] = {0.3f, 1, -1, 2};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) g[i * 4 + j] = u[i] * v[j];
    optim_step(&o, p, g, optim_grad_norm(g, 12), 1.0);
    for (int i = 0; i < 12; i++)
        CHECK(p[i] * g[i] < 0);
    optim_free(&o);
}

/* Muon updates every matrix, whatever the thread count: matrices are shared
 * out among threads, and one thread (a team of one) must still do them all.
 * Each matrix's update is computed on one thread, so 1 and 2 threads agree
 * to rounding (the norms' sums split differently). */
static void test_muon_every_matrix_any_threads(void)
{
    enum { NT = 5 };
    int rows[NT] = {16, 8, 24, 8, 3}, cols[NT] = {8, 16, 8, 8, 5};
    optim_tensor ts[NT];
    size_t n = 0;
    for (int i = 0; i < NT; i++) {
        ts[i] = (optim_tensor){n, (size_t)rows[i] * cols[i], rows[i], cols[i], GROUP_MATRIX};
        n += ts[i].numel;
    }
    optim_config c = base_config();
    c.use_muon = 1;
    c.weight_decay = 0;
    rng_state r;
    rng_seed(&r, 5);
    float *g = malloc(sizeof(float) * n), *p[2], *gc = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) g[i] = (float)rng_normal(&r);
    int saved = omp_get_max_threads();
    for (int k = 0; k < 2; k++) {
        omp_set_num_threads(k + 1);
        optimizer o;
        CHECK(optim_create(&o, &c, ts, NT, n, NULL) == 0);
        p[k] = calloc(n, sizeof(float));
        for (int step = 0; step < 2; step++) {
            memcpy(gc, g, sizeof(float) * n);
            optim_step(&o, p[k], gc, optim_grad_norm(gc, n), 1.0);
        }
        for (int i = 0; i < NT; i++) {
            int moved = 0;
            for (size_t j = 0; j < ts[i].numel; j++) moved += p[k][ts[i].offset + j] != 0;
            CHECK_MSG(moved == (int)ts[i].numel, "%d thread(s): matrix %d: %d of %zu entries moved",
                      k + 1, i, moved, ts[i].numel);
        }
        optim_free(&o);
    }
    omp_set_num_threads(saved);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)p[0][i] - p[1][i]));
    CHECK_MSG(worst < 1e-6, "1 vs 2 threads differ by %g", worst);
    free(g); free(gc); free(p[0]); free(p[1]);
}

static void test_schedule_shape(void)
{
    lr_schedule s = {0.1, 0.4, 0.0};
    CHECK(schedule_lr_mult(&s, 0.0) < 0.02);
    CHECK(schedule_lr_mult(&s, 0.05) < schedule_lr_mult(&s, 0.09));
    CHECK_NEAR(schedule_lr_mult(&s, 0.3), 1.0, 1e-12);
    CHECK_NEAR(schedule_lr_mult(&s, 0.6), 1.0, 1e-12);
    CHECK_NEAR(schedule_lr_mult(&s, 0.8), 0.5, 1e-12);
    CHECK_NEAR(schedule_lr_mult(&s, 1.0), 0.0, 1e-12);
    CHECK_NEAR(schedule_lr_mult(&s, 2.0), 0.0, 1e-12);
    lr_schedule f = {0.0, 0.5, 0.1};
    CHECK_NEAR(schedule_lr_mult(&f, 1.0), 0.1, 1e-12);
    CHECK_NEAR(schedule_lr_mult(&f, 0.0), 1.0, 1e-12);
}

/* ZeRO-1: the tensors shared out whole in contiguous runs; every shard's
 * step on its own run, together, is bit for bit the whole optimizer's step
 * (AdamW and Muon, three steps, shards of 1..4), and each shard's state is
 * the whole state's slice. */
static void test_sharded_steps_equal_whole(void)
{
    optim_tensor ts[6] = {
        {0, 48, 12, 4, GROUP_EMBED}, {48, 8, 1, 8, GROUP_NORM}, {56, 96, 8, 12, GROUP_MATRIX},
        {152, 96, 12, 8, GROUP_MATRIX}, {248, 8, 1, 8, GROUP_NORM}, {256, 64, 8, 8, GROUP_MATRIX}};
    const size_t n = 320;
    tempo_error err;
    for (int muon = 0; muon <= 1; muon++) {
        optim_config c = base_config();
        c.use_muon = muon;
        optimizer whole;
        CHECK(optim_create(&whole, &c, ts, 6, n, &err) == 0);
        for (int parts = 1; parts <= 4; parts++) {
            float pw[320], ps[320], g[320], gs[320];
            rng_state r;
            rng_seed(&r, 11);
            for (size_t i = 0; i < n; i++) pw[i] = ps[i] = rng_normal(&r);
            optimizer sh[4];
            int covered = 0;
            for (int k = 0; k < parts; k++) {
                int b, e;
                CHECK(optim_partition(ts, 6, parts, k, &b, &e) == 0);
                CHECK(b == covered && e >= b);   /* contiguous runs in order */
                covered = e;
                CHECK(optim_create_shard(&sh[k], &c, ts, 6, n, b, e, &err) == 0);
            }
            CHECK(covered == 6);
            optim_free(&whole);
            CHECK(optim_create(&whole, &c, ts, 6, n, &err) == 0);
            for (int step = 0; step < 3; step++) {
                for (size_t i = 0; i < n; i++) g[i] = gs[i] = rng_normal(&r);
                double norm = optim_grad_norm(g, n);
                optim_step(&whole, pw, g, norm, 1.0);
                for (int k = 0; k < parts; k++)
                    optim_step(&sh[k], ps, gs, norm, 1.0);
            }
            CHECK_MSG(memcmp(pw, ps, sizeof pw) == 0, "muon %d, %d parts: parameters differ", muon, parts);
            for (int k = 0; k < parts; k++) {
                CHECK(memcmp(sh[k].m, whole.m + sh[k].state_base, sh[k].state_len * sizeof(float)) == 0);
                CHECK(memcmp(sh[k].v, whole.v + sh[k].state_base, sh[k].state_len * sizeof(float)) == 0);
                optim_free(&sh[k]);
            }
        }
        optim_free(&whole);
    }
    /* two parts of the default-like layout: about half the parameters each */
    int b, e;
    CHECK(optim_partition(ts, 6, 2, 0, &b, &e) == 0 && b == 0 && e == 3);
    /* tensors with a gap cannot be sharded */
    optim_tensor gap[2] = {{0, 4, 1, 4, GROUP_NORM}, {5, 4, 1, 4, GROUP_NORM}};
    CHECK(optim_partition(gap, 2, 2, 0, &b, &e) == -1);
    optimizer o;
    CHECK(optim_create_shard(&o, &(optim_config){0}, ts, 6, n, 4, 2, &err) == -1);
}

int main(void)
{
    RUN(test_adamw_matches_formula);
    RUN(test_grad_clip);
    RUN(test_newton_schulz_orthogonalises);
    RUN(test_newton_schulz_half_products_same_bits);
    RUN(test_muon_step_direction);
    RUN(test_muon_every_matrix_any_threads);
    RUN(test_schedule_shape);
    RUN(test_sharded_steps_equal_whole);
    return test_summary("test_optim");
}
