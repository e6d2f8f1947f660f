/* test_ops.c - the element-wise and row-wise kernels against their plain
 * references (forward), and their backward passes against central finite
 * differences of double-precision references (ref_ops.h): RMSNorm, RoPE,
 * ReLU^2, SwiGLU, embedding, and the fused head + cross-entropy (soft-cap on
 * and off). Attention has its own file (test_attention.c).
 * Tolerances: float backward vs double FD, |got - want| <= atol + rtol*|want|
 * with atol 1e-5..1e-4 (scaled to the magnitudes) and rtol 1e-3. */
#include "test.h"
#include "ref_ops.h"

#include "kernels/cpu/activation.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_path.h"
#include "kernels/cpu/lm_head.h"
#include "kernels/cpu/lm_head_kernel.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"

#include <omp.h>

#define FD_EPS 1e-5


/* ---------------- RMSNorm ---------------- */

typedef struct {
    int N, C;
    double eps;
    double *x, *w, *r, *y;
} norm_ctx;

static double norm_objective(void *p)
{
    norm_ctx *c = p;
    refd_rmsnorm(c->y, c->x, c->w, c->N, c->C, c->eps);
    double s = 0;
    for (int i = 0; i < c->N * c->C; i++)
        s += c->r[i] * c->y[i];
    return s;
}

static void check_rmsnorm_forward(void)
{
    rng_state rng;
    rng_seed(&rng, 1);
    int shapes[][2] = {{1, 1}, {7, 13}, {33, 64}, {300, 130}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], C = shapes[s][1];
        size_t n = (size_t)N * C;
        float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * C);
        float *y = malloc(sizeof(float) * n), *y2 = malloc(sizeof(float) * n);
        float *rs = malloc(sizeof(float) * N), *rs2 = malloc(sizeof(float) * N);
        double *xd = malloc(sizeof(double) * n), *wd = malloc(sizeof(double) * C);
        double *yd = malloc(sizeof(double) * n);
        fill_uniform(&rng, x, n, -2, 2);
        fill_uniform(&rng, w, C, 0.5f, 1.5f);
        rmsnorm_forward(y, rs, x, w, N, C, 1e-5f);
        rmsnorm_forward_ref(y2, rs2, x, w, N, C, 1e-5f);
        to_double(xd, x, n);
        to_double(wd, w, C);
        refd_rmsnorm(yd, xd, wd, N, C, 1e-5);
        CHECK_MSG(max_abs_diff(y, y2, n) < 1e-5, "N=%d C=%d", N, C);
        CHECK(max_abs_diff(rs, rs2, N) < 1e-5);
        double e = 0;
        for (size_t i = 0; i < n; i++)
            e = fmax(e, fabs(y[i] - yd[i]));
        CHECK_MSG(e < 1e-5, "N=%d C=%d err %g", N, C, e);
        /* in place */
        rmsnorm_forward(x, rs2, x, w, N, C, 1e-5f);
        CHECK(max_abs_diff(x, y, n) == 0);
        free(x); free(w); free(y); free(y2); free(rs); free(rs2); free(xd); free(wd); free(yd);
    }
}

static void check_rmsnorm_backward(void)
{
    rng_state rng;
    rng_seed(&rng, 2);
    int shapes[][2] = {{1, 1}, {5, 7}, {3, 16}, {200, 100}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], C = shapes[s][1];
        size_t n = (size_t)N * C;
        float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * C);
        float *dy = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
        float *rs = malloc(sizeof(float) * N);
        float *dx = malloc(sizeof(float) * n), *dx2 = malloc(sizeof(float) * n);
        float *dw = malloc(sizeof(float) * C), *dw2 = malloc(sizeof(float) * C);
        fill_uniform(&rng, x, n, -2, 2);
        fill_uniform(&rng, w, C, 0.5f, 1.5f);
        fill_uniform(&rng, dy, n, -1, 1);
        rmsnorm_forward(y, rs, x, w, N, C, 1e-5f);
        /* fast vs ref, overwrite and accumulate; dw accumulates onto 0.25 */
        for (int acc = 0; acc <= 1; acc++) {
            for (size_t i = 0; i < n; i++)
                dx[i] = dx2[i] = 0.5f;
            for (int c = 0; c < C; c++)
                dw[c] = dw2[c] = 0.25f;
            rmsnorm_backward(dx, dw, dy, x, w, rs, N, C, acc);
            rmsnorm_backward_ref(dx2, dw2, dy, x, w, rs, N, C, acc);
            CHECK_MSG(max_abs_diff(dx, dx2, n) < 1e-5, "N=%d C=%d acc=%d", N, C, acc);
            CHECK_MSG(max_abs_diff(dw, dw2, C) < 1e-3, "N=%d C=%d acc=%d", N, C, acc);
        }
        if (n <= 100) { /* finite differences through the double reference */
            norm_ctx c = {N, C, 1e-5, malloc(sizeof(double) * n), malloc(sizeof(double) * C),
                          malloc(sizeof(double) * n), malloc(sizeof(double) * n)};
            to_double(c.x, x, n);
            to_double(c.w, w, C);
            to_double(c.r, dy, n);
            double *gx = malloc(sizeof(double) * n), *gw = malloc(sizeof(double) * C);
            fd_grad(gx, c.x, n, norm_objective, &c, FD_EPS);
            fd_grad(gw, c.w, C, norm_objective, &c, FD_EPS);
            for (int i = 0; i < C; i++)
                gw[i] += 0.25; /* dw started at 0.25 and accumulated */
            for (size_t i = 0; i < n; i++)
                gx[i] += 0.5; /* last pass accumulated dx onto 0.5 */
            CHECK(grad_mismatches("rmsnorm dx", dx, gx, n, 1e-5, 1e-3) == 0);
            CHECK(grad_mismatches("rmsnorm dw", dw, gw, C, 1e-5, 1e-3) == 0);
            free(c.x); free(c.w); free(c.r); free(c.y); free(gx); free(gw);
        }
        free(x); free(w); free(dy); free(y); free(rs); free(dx); free(dx2); free(dw); free(dw2);
    }
}

/* Both kernel paths against the references (and the FD checks). */
static void test_rmsnorm_forward(void)
{
    kernel_env env;
    kernel_env_save(&env);
    for (int portable = 0; portable < 2; portable++) {
        kernel_env_set(portable);
        check_rmsnorm_forward();
    }
    kernel_env_restore(&env);
}

static void test_rmsnorm_backward(void)
{
    kernel_env env;
    kernel_env_save(&env);
    for (int portable = 0; portable < 2; portable++) {
        kernel_env_set(portable);
        check_rmsnorm_backward();
    }
    kernel_env_restore(&env);
}

/* The AVX2 bodies do the portable operations in the portable order: outputs
 * are bitwise equal, at 1 and 2 threads, for widths around the vector (1, 7,
 * 8, 9, 33, 64, 130) and row counts on both sides of the parallel threshold.
 * rmsnorm_forward_copy gives rmsnorm_forward's outputs plus an exact copy. */
static void test_rmsnorm_paths_agree(void)
{
    rng_state rng;
    rng_seed(&rng, 7);
    int shapes[][2] = {{3, 1}, {5, 7}, {4, 8}, {6, 9}, {600, 33}, {300, 64}, {257, 130}, {2053, 130}};
    kernel_env env;
    kernel_env_save(&env);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], C = shapes[s][1];
        size_t n = (size_t)N * C;
        float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * C);
        float *dy = malloc(sizeof(float) * n), *out[3][4];
        fill_uniform(&rng, x, n, -2, 2);
        fill_uniform(&rng, w, C, 0.5f, 1.5f);
        fill_uniform(&rng, dy, n, -1, 1);
        for (int r = 0; r < 3; r++) { /* portable 2 threads, avx2 2 threads, avx2 1 thread */
            kernel_env_set(r == 0);
            omp_set_num_threads(r == 2 ? 1 : 2);
            out[r][0] = malloc(sizeof(float) * n);           /* y */
            out[r][1] = malloc(sizeof(float) * N);           /* rstd */
            out[r][2] = malloc(sizeof(float) * n);           /* dx */
            out[r][3] = calloc((size_t)C, sizeof(float));    /* dw */
            rmsnorm_forward(out[r][0], out[r][1], x, w, N, C, 1e-5f);
            /* the fused copy variant: same outputs, and the copy is x */
            float *y2 = malloc(sizeof(float) * n), *r2 = malloc(sizeof(float) * N);
            float *cp = malloc(sizeof(float) * n);
            rmsnorm_forward_copy(y2, r2, cp, x, w, N, C, 1e-5f);
            CHECK(memcmp(y2, out[r][0], sizeof(float) * n) == 0);
            CHECK(memcmp(r2, out[r][1], sizeof(float) * N) == 0);
            CHECK(memcmp(cp, x, sizeof(float) * n) == 0);
            free(y2); free(r2); free(cp);
            for (size_t i = 0; i < n; i++)
                out[r][2][i] = 0.5f;
            rmsnorm_backward(out[r][2], out[r][3], dy, x, w, out[r][1], N, C, 1);
        }
        omp_set_num_threads(2);
        size_t len[4] = {n, (size_t)N, n, (size_t)C};
        for (int r = 1; r < 3; r++)
            for (int j = 0; j < 4; j++)
                CHECK_MSG(memcmp(out[0][j], out[r][j], sizeof(float) * len[j]) == 0,
                          "N=%d C=%d run %d output %d", N, C, r, j);
        for (int r = 0; r < 3; r++)
            for (int j = 0; j < 4; j++)
                free(out[r][j]);
        free(x); free(w); free(dy);
    }
    kernel_env_restore(&env);
}

/* ---------------- RoPE ---------------- */

typedef struct {
    int B, T, H, D, pos0;
    double theta;
    double *x, *r, *y;
} rope_ctx;

static double rope_objective(void *p)
{
    rope_ctx *c = p;
    size_t n = (size_t)c->B * c->T * c->H * c->D;
    for (size_t i = 0; i < n; i++)
        c->y[i] = c->x[i];
    refd_rope(c->y, c->B, c->T, c->H, c->D, c->pos0, c->theta);
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += c->r[i] * c->y[i];
    return s;
}

static void test_rope(void)
{
    rng_state rng;
    rng_seed(&rng, 3);
    int shapes[][5] = {{1, 1, 1, 2, 0}, {2, 5, 3, 8, 0}, {1, 7, 2, 6, 11}, {3, 37, 4, 16, 0}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int B = shapes[s][0], T = shapes[s][1], H = shapes[s][2], D = shapes[s][3];
        int pos0 = shapes[s][4];
        int maxp = pos0 + T;
        size_t n = (size_t)B * T * H * D;
        float *cs = malloc(sizeof(float) * maxp * D / 2), *sn = malloc(sizeof(float) * maxp * D / 2);
        rope_table_init(cs, sn, maxp, D, 10000.0f);
        float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
        float *y2 = malloc(sizeof(float) * n);
        fill_uniform(&rng, x, n, -1, 1);
        memcpy(y, x, sizeof(float) * n);
        memcpy(y2, x, sizeof(float) * n);
        rope_forward(y, B, T, H, D, pos0, cs, sn);
        rope_forward_ref(y2, B, T, H, D, pos0, 10000.0f);
        CHECK_MSG(max_abs_diff(y, y2, n) < 1e-5, "shape %zu", s);
        /* position 0 is the identity */
        if (pos0 == 0)
            for (int i = 0; i < H * D; i++)
                CHECK(y[i] == x[i]);
        /* backward of the forward = inverse: gets x back */
        memcpy(y2, y, sizeof(float) * n);
        rope_backward(y2, B, T, H, D, pos0, cs, sn);
        CHECK(max_abs_diff(y2, x, n) < 1e-5);
        /* finite differences: d(sum r*rope(x))/dx == rope_backward(r) */
        rope_ctx c = {B, T, H, D, pos0, 10000.0, malloc(sizeof(double) * n),
                      malloc(sizeof(double) * n), malloc(sizeof(double) * n)};
        float *r = malloc(sizeof(float) * n);
        fill_uniform(&rng, r, n, -1, 1);
        to_double(c.x, x, n);
        to_double(c.r, r, n);
        double *g = malloc(sizeof(double) * n);
        fd_grad(g, c.x, n, rope_objective, &c, FD_EPS);
        rope_backward(r, B, T, H, D, pos0, cs, sn);
        CHECK(grad_mismatches("rope dx", r, g, n, 1e-5, 1e-3) == 0);
        free(c.x); free(c.r); free(c.y); free(r); free(g);
        free(cs); free(sn); free(x); free(y); free(y2);
    }
}

/* ---------------- activations ---------------- */

typedef struct {
    size_t n;
    int swiglu;
    double *h, *u, *r;
} act_ctx;

static double act_objective(void *p)
{
    act_ctx *c = p;
    double s = 0;
    for (size_t i = 0; i < c->n; i++)
        s += c->r[i] * (c->swiglu ? refd_silu(c->h[i]) * c->u[i] : refd_relu2(c->h[i]));
    return s;
}

static void check_activations(size_t n, rng_state *rng, const char *path)
{
    float *h = malloc(sizeof(float) * n), *u = malloc(sizeof(float) * n);
    float *a = malloc(sizeof(float) * n), *da = malloc(sizeof(float) * n);
    float *dh = malloc(sizeof(float) * n), *du = malloc(sizeof(float) * n);
    fill_uniform(rng, h, n, -3, 3);
    fill_uniform(rng, u, n, -2, 2);
    fill_uniform(rng, da, n, -1, 1);
    h[0] = 0; /* the kink: ReLU^2's gradient there is 0 */
    act_relu2_forward(a, h, n);
    double e = 0;
    for (size_t i = 0; i < n; i++)
        e = fmax(e, fabs(a[i] - refd_relu2(h[i])));
    CHECK_MSG(e < 1e-5, "%s n=%zu relu2 err %g", path, n, e);
    act_swiglu_forward(a, h, u, n);
    e = 0;
    for (size_t i = 0; i < n; i++)
        e = fmax(e, fabs(a[i] - refd_silu(h[i]) * u[i]));
    CHECK_MSG(e < 1e-5, "%s n=%zu swiglu err %g", path, n, e);
    /* in place (a aliases h; dh aliases da) gives the same as out of place */
    float *h2 = malloc(sizeof(float) * n), *da2 = malloc(sizeof(float) * n);
    memcpy(h2, h, sizeof(float) * n);
    act_relu2_forward(h2, h2, n);
    act_relu2_forward(a, h, n);
    CHECK(memcmp(h2, a, sizeof(float) * n) == 0);
    memcpy(da2, da, sizeof(float) * n);
    act_relu2_backward(da2, da2, h, n);
    act_relu2_backward(dh, da, h, n);
    CHECK(memcmp(da2, dh, sizeof(float) * n) == 0);
    CHECK(dh[0] == 0);
    if (n <= 1000) {
        act_ctx c = {n, 0, malloc(sizeof(double) * n), malloc(sizeof(double) * n),
                     malloc(sizeof(double) * n)};
        double *gh = malloc(sizeof(double) * n), *gu = malloc(sizeof(double) * n);
        to_double(c.h, h, n);
        to_double(c.u, u, n);
        to_double(c.r, da, n);
        fd_grad(gh, c.h, n, act_objective, &c, FD_EPS);
        gh[0] = 0; /* FD straddles the kink at h = 0 */
        act_relu2_backward(dh, da, h, n);
        CHECK(grad_mismatches("relu2 dh", dh, gh, n, 1e-5, 1e-3) == 0);
        c.swiglu = 1;
        fd_grad(gh, c.h, n, act_objective, &c, FD_EPS);
        fd_grad(gu, c.u, n, act_objective, &c, FD_EPS);
        act_swiglu_backward(dh, du, da, h, u, n);
        CHECK(grad_mismatches("swiglu dg", dh, gh, n, 1e-5, 1e-3) == 0);
        CHECK(grad_mismatches("swiglu du", du, gu, n, 1e-5, 1e-3) == 0);
        free(c.h); free(c.u); free(c.r); free(gh); free(gu);
    }
    free(h); free(u); free(a); free(da); free(dh); free(du); free(h2); free(da2);
}

/* Sizes: 1, around one AVX2 vector (7, 8, 9), a prime, one under the
 * parallel threshold (OMP_TEAM_MIN_STREAM) and two over it (one not a
 * multiple of the chunk). Both kernel paths. */
static void test_activations(void)
{
    rng_state rng;
    rng_seed(&rng, 4);
    size_t sizes[] = {1, 7, 8, 9, 37, 40000, 270336, 300001};
    kernel_env env;
    kernel_env_save(&env);
    for (int portable = 0; portable < 2; portable++) {
        kernel_env_set(portable);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            check_activations(sizes[s], &rng, portable ? "portable" : "auto");
    }
    kernel_env_restore(&env);
}

/* The two paths agree: ReLU^2 bit for bit (same operations), SwiGLU to the
 * vectorised exp's rounding: 1e-6 x (|value| + 1), absolute near zero where
 * the gate derivative cancels. */
static void test_activation_paths_agree(void)
{
    rng_state rng;
    rng_seed(&rng, 41);
    size_t n = 1003;
    float *h = malloc(sizeof(float) * n), *u = malloc(sizeof(float) * n);
    float *da = malloc(sizeof(float) * n), *out[2][4];
    fill_uniform(&rng, h, n, -20, 20);
    fill_uniform(&rng, u, n, -2, 2);
    fill_uniform(&rng, da, n, -1, 1);
    kernel_env env;
    kernel_env_save(&env);
    for (int p = 0; p < 2; p++) {
        kernel_env_set(p);
        for (int j = 0; j < 4; j++)
            out[p][j] = malloc(sizeof(float) * n);
        act_relu2_forward(out[p][0], h, n);
        act_relu2_backward(out[p][1], da, h, n);
        act_swiglu_forward(out[p][2], h, u, n);
        act_swiglu_backward(out[p][3], out[p][1], da, h, u, n); /* du over relu2's slot */
    }
    kernel_env_restore(&env);
    CHECK(memcmp(out[0][0], out[1][0], sizeof(float) * n) == 0);
    for (int j = 1; j < 4; j++)
        for (size_t i = 0; i < n; i++)
            CHECK_MSG(fabs(out[0][j][i] - out[1][j][i]) <= 1e-6 * (fabs(out[1][j][i]) + 1),
                      "output %d [%zu]: %g vs %g", j, i, out[0][j][i], out[1][j][i]);
    for (int p = 0; p < 2; p++)
        for (int j = 0; j < 4; j++)
            free(out[p][j]);
    free(h); free(u); free(da);
}

/* ---------------- embedding ---------------- */

static void test_embedding(void)
{
    rng_state rng;
    rng_seed(&rng, 5);
    int V = 11, C = 300, N = 257; /* N*C > the parallel threshold; tokens repeat */
    float *emb = malloc(sizeof(float) * V * C), *out = malloc(sizeof(float) * N * C);
    float *d1 = calloc((size_t)V * C, sizeof(float)), *d2 = calloc((size_t)V * C, sizeof(float));
    int32_t *tok = malloc(sizeof(int32_t) * N);
    fill_uniform(&rng, emb, (size_t)V * C, -1, 1);
    for (int n = 0; n < N; n++)
        tok[n] = (int32_t)rng_below(&rng, (uint64_t)V - 1); /* id V-1 never used */
    embedding_forward(out, tok, emb, N, C);
    int ok = 1;
    for (int n = 0; n < N; n++)
        ok &= memcmp(out + (size_t)n * C, emb + (size_t)tok[n] * C, sizeof(float) * C) == 0;
    CHECK(ok);
    fill_uniform(&rng, out, (size_t)N * C, -1, 1);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        memset(d1, 0, sizeof(float) * V * C);
        embedding_backward(d1, tok, out, N, C);
        memset(d2, 0, sizeof(float) * V * C);
        embedding_backward_ref(d2, tok, out, N, C);
        /* same summation order per element => bit-identical to the reference */
        CHECK(memcmp(d1, d2, sizeof(float) * V * C) == 0);
    }
    omp_set_num_threads(2);
    /* the gradient of an unused row stays 0; of token tok[0] is the sum of its rows */
    for (int c = 0; c < C; c++)
        CHECK(d1[(size_t)(V - 1) * C + c] == 0);
    double s = 0;
    for (int n = 0; n < N; n++)
        if (tok[n] == tok[0])
            s += out[(size_t)n * C + 7];
    CHECK_NEAR(d1[(size_t)tok[0] * C + 7], s, 1e-5);
    free(emb); free(out); free(d1); free(d2); free(tok);
}

/* ---------------- head + cross-entropy ---------------- */

typedef struct {
    int N, C, V;
    double cap, scale;
    double *x, *w, *losses;
    const int32_t *targets;
} head_ctx;

static double head_objective(void *p)
{
    head_ctx *c = p;
    refd_head_loss(c->losses, c->x, c->w, c->targets, c->N, c->C, c->V, c->cap);
    double s = 0;
    for (int n = 0; n < c->N; n++)
        s += c->losses[n];
    return s * c->scale;
}

static void head_case(int N, int C, int V, float cap, int chunk, int fd)
{
    rng_state rng;
    rng_seed(&rng, (uint64_t)(N * 1000 + V));
    size_t nx = (size_t)N * C, nw = (size_t)V * C;
    float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * nw);
    float *l1 = malloc(sizeof(float) * N), *l2 = malloc(sizeof(float) * N);
    float *l3 = malloc(sizeof(float) * N);
    float *dx = malloc(sizeof(float) * nx), *dx2 = malloc(sizeof(float) * nx);
    float *dw = malloc(sizeof(float) * nw), *dw2 = malloc(sizeof(float) * nw);
    float *scratch = malloc(sizeof(float) * lm_head_scratch_floats(chunk, V));
    float *rscratch = malloc(sizeof(float) * V);
    int32_t *tg = malloc(sizeof(int32_t) * N);
    fill_uniform(&rng, x, nx, -1, 1);
    fill_uniform(&rng, w, nw, -1, 1); /* logits up to ~C/3: the soft-cap bends them */
    for (int n = 0; n < N; n++)
        tg[n] = (int32_t)rng_below(&rng, (uint64_t)V);
    float scale = 1.0f / (float)N;
    for (size_t i = 0; i < nw; i++)
        dw[i] = dw2[i] = 0.125f; /* dw accumulates */
    lm_head_loss_forward(l1, x, w, tg, N, C, V, cap, scratch, chunk, NULL);
    lm_head_loss_forward_backward(l2, dx, dw, x, w, tg, N, C, V, cap, scale, scratch, chunk, NULL);
    lm_head_loss_ref(l3, dx2, dw2, x, w, tg, N, C, V, cap, scale, rscratch);
    CHECK(max_abs_diff(l1, l2, N) == 0);
    /* Through a workspace (packed w, reused GEMM buffers, chunks shared out
     * among threads): losses and dx bitwise the same, dw summed in another
     * order (to rounding), and the same bits twice in a row (the second call
     * reuses the packings and buffers). */
    {
        gemm_context gc;
        gemm_context_init(&gc);
        lm_head_workspace ws = {.gemm = &gc};
        float *l4 = malloc(sizeof(float) * N), *dx4 = malloc(sizeof(float) * nx);
        float *dw4 = malloc(sizeof(float) * nw);
        float *dw5 = malloc(sizeof(float) * nw);
        for (int rep = 0; rep < 2; rep++) {
            for (size_t i = 0; i < nw; i++)
                dw4[i] = 0.125f;
            lm_head_loss_forward_backward(l4, dx4, dw4, x, w, tg, N, C, V, cap, scale, scratch,
                                          chunk, &ws);
            CHECK_MSG(max_abs_diff(l4, l2, N) == 0 && max_abs_diff(dx4, dx, nx) == 0,
                      "workspace N=%d V=%d rep %d", N, V, rep);
            CHECK_MSG(max_abs_diff(dw4, dw, nw) < 1e-6, "workspace dw N=%d V=%d", N, V);
            if (rep == 0)
                memcpy(dw5, dw4, sizeof(float) * nw);
            else
                CHECK(max_abs_diff(dw4, dw5, nw) == 0);
            float *top = malloc(sizeof(float) * N), *log_norm = malloc(sizeof(float) * N);
            int32_t *top_id = malloc(sizeof(int32_t) * N);
            for (int n = 0; n < N; n++) top_id[n] = -7, log_norm[n] = -7;
            ws.top_id = top_id;   /* a training call leaves the ids and log_norm alone */
            ws.log_norm = log_norm;
            ws.beta = 1.3f;
            lm_head_loss_forward_backward(l4, dx4, dw4, x, w, tg, N, C, V, cap, scale, scratch, chunk, &ws);
            for (int n = 0; n < N; n++) CHECK(top_id[n] == -7 && log_norm[n] == -7);
            memcpy(dw4, dw5, sizeof(float) * nw);
            ws.top_logprob = top;   /* the confidence output: max z - logsumexp z, per row */
            double beta = rep == 0 ? 1.3 : 1.0;   /* -ln sum p^beta, per row (beta 1: 0) */
            ws.beta = (float)beta;
            lm_head_loss_forward(l4, x, w, tg, N, C, V, cap, scratch, chunk, &ws);
            ws.top_logprob = NULL;
            ws.top_id = NULL;
            ws.log_norm = NULL;
            CHECK(max_abs_diff(l4, l1, N) == 0);   /* the losses are the model's own, whatever beta */
            double worst = 0, worst_id = 0, worst_norm = 0;
            for (int n = 0; n < N; n++) {
                double mx = -INFINITY, sum = 0, *z = malloc(sizeof(double) * V);
                for (int v = 0; v < V; v++) {
                    double d = 0;
                    for (int k = 0; k < C; k++) d += (double)x[(size_t)n * C + k] * w[(size_t)v * C + k];
                    z[v] = cap > 0 ? cap * tanh(d / cap) : d;
                    if (z[v] > mx) mx = z[v];
                }
                double sum_b = 0;
                for (int v = 0; v < V; v++) sum += exp(z[v] - mx), sum_b += exp(beta * (z[v] - mx));
                worst = fmax(worst, fabs(top[n] - (-log(sum))));
                worst_norm = fmax(worst_norm, fabs(log_norm[n] - (beta * log(sum) - log(sum_b))));
                /* the id holds the largest logit (to float rounding: ties may break either way) */
                CHECK(top_id[n] >= 0 && top_id[n] < V);
                if (top_id[n] >= 0 && top_id[n] < V) worst_id = fmax(worst_id, mx - z[top_id[n]]);
                free(z);
            }
            CHECK_MSG(worst < 1e-4, "top_logprob N=%d V=%d cap=%g: error %g", N, V, cap, worst);
            CHECK_MSG(worst_id < 1e-4, "top_id N=%d V=%d cap=%g: logit %g below the largest", N, V, cap, worst_id);
            CHECK_MSG(worst_norm < 1e-4 && (rep == 0 || worst_norm == 0), "log_norm N=%d V=%d cap=%g beta=%g: error %g",
                      N, V, cap, beta, worst_norm);
            free(top);
            free(log_norm);
            free(top_id);
        }
        lm_head_workspace_free(&ws);
        gemm_context_free(&gc);
        free(l4); free(dx4); free(dw4); free(dw5);
    }
    CHECK_MSG(max_abs_diff(l1, l3, N) < 1e-4, "N=%d V=%d cap=%g", N, V, cap);
    CHECK_MSG(max_abs_diff(dx, dx2, nx) < 1e-5, "N=%d V=%d cap=%g", N, V, cap);
    CHECK_MSG(max_abs_diff(dw, dw2, nw) < 1e-5, "N=%d V=%d cap=%g", N, V, cap);
    /* double-precision losses */
    head_ctx c = {N, C, V, cap, scale, malloc(sizeof(double) * nx), malloc(sizeof(double) * nw),
                  malloc(sizeof(double) * N), tg};
    to_double(c.x, x, nx);
    to_double(c.w, w, nw);
    head_objective(&c);
    double e = 0;
    for (int n = 0; n < N; n++)
        e = fmax(e, fabs(l1[n] - c.losses[n]));
    CHECK_MSG(e < 1e-4, "N=%d V=%d cap=%g loss err %g", N, V, cap, e);
    if (fd) {
        double *gx = malloc(sizeof(double) * nx), *gw = malloc(sizeof(double) * nw);
        fd_grad(gx, c.x, nx, head_objective, &c, FD_EPS);
        fd_grad(gw, c.w, nw, head_objective, &c, FD_EPS);
        for (size_t i = 0; i < nw; i++)
            gw[i] += 0.125;
        CHECK(grad_mismatches("head dx", dx, gx, nx, 1e-6, 1e-3) == 0);
        CHECK(grad_mismatches("head dw", dw, gw, nw, 1e-6, 1e-3) == 0);
        free(gx); free(gw);
    }
    free(c.x); free(c.w); free(c.losses);
    free(x); free(w); free(l1); free(l2); free(l3); free(dx); free(dx2); free(dw); free(dw2);
    free(scratch); free(rscratch); free(tg);
}

/* Both kernel paths (the row passes have an AVX2 version: vocabularies below,
 * at and above one vector, and ragged tails). */
static void test_lm_head(void)
{
    kernel_env env;
    kernel_env_save(&env);
    for (int portable = 0; portable < 2; portable++) {
        kernel_env_set(portable);
        for (int cap = 0; cap <= 1; cap++) {
            float c = cap ? 2.5f : 0.0f;
            head_case(1, 3, 2, c, 4, 1);      /* one row, two-symbol vocabulary */
            head_case(9, 5, 7, c, 4, 1);      /* chunks 4+4+1 */
            head_case(37, 16, 13, c, 16, 1);  /* primes, chunks 16+16+5 */
            head_case(5, 4, 8, c, 3, 1);      /* one whole vector */
            head_case(70, 24, 301, c, 32, 0); /* larger vocab: fast vs reference only */
            head_case(3, 8, 4097, c, 2, 0);   /* the model's vocabulary */
        }
    }
    kernel_env_restore(&env);
}

/* The AVX-512 row passes give the AVX2 ones' bits: the max, the sum of
 * exp(z - max) and the stored exps, the scaled row, for widths around 8 and
 * 16 lanes (ragged tails of every length) and the model's vocabulary, rows
 * spanning underflow (-100) to large logits. */
static void test_lm_head_rows_avx512(void)
{
    if (kernel_path_select_now() != CPU_KERNELS_AVX512) {
        TEST_SKIP("the head's AVX-512 row passes: no AVX-512 on this CPU");
        return;
    }
    rng_state rng;
    rng_seed(&rng, 17);
    const lm_head_row_ops *a = &lm_head_row_ops_avx2, *b = &lm_head_row_ops_avx512;
    int widths[] = {1, 5, 8, 9, 15, 16, 17, 24, 31, 33, 100, 4097};
    int bad = 0;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (int rep = 0; rep < 3; rep++) {
            int V = widths[w];
            float *z = malloc(sizeof(float) * (size_t)V), *za = malloc(sizeof(float) * (size_t)V);
            float *zb = malloc(sizeof(float) * (size_t)V);
            fill_uniform(&rng, z, (size_t)V, rep == 2 ? -100.0f : -8.0f, 8.0f);
            float ma = a->max(z, V), mb = b->max(z, V);
            memcpy(za, z, sizeof(float) * (size_t)V);
            memcpy(zb, z, sizeof(float) * (size_t)V);
            double sa = a->exp_sum(za, V, ma, 1), sb = b->exp_sum(zb, V, mb, 1);
            double sa0 = a->exp_sum(z, V, ma, 0), sb0 = b->exp_sum(z, V, mb, 0);
            int ok = ma == mb && sa == sb && sa0 == sb0 && sa0 == sa &&
                     memcmp(za, zb, sizeof(float) * (size_t)V) == 0;
            double ka = a->exp_sum_scaled(z, V, 1.3f, 1.3f * ma), kb = b->exp_sum_scaled(z, V, 1.3f, 1.3f * mb);
            ok = ok && ka == kb;
            a->scale(za, V, 0.37f);
            b->scale(zb, V, 0.37f);
            ok = ok && memcmp(za, zb, sizeof(float) * (size_t)V) == 0;
            if (!ok && bad++ < 3)
                fprintf(stderr, "  V=%d rep %d: AVX-512 row pass differs from AVX2 (max %g %g, sum %.17g %.17g)\n",
                        V, rep, ma, mb, sa, sb);
            free(z); free(za); free(zb);
        }
    CHECK_MSG(bad == 0, "%d rows differ between the AVX-512 and AVX2 row passes", bad);
}

/* An evaluation call that takes all rows in one chunk leaves the logits in
 * its scratch (logits_rows), and the next training call on the same x and w
 * takes them instead of the product: the same bits as a training call
 * alone. White box: with x changed but logits_rows kept, the training call's
 * losses and dx are the old x's (so the product really was skipped); the
 * flag is spent by it. A call of several chunks keeps its first chunk's
 * (it runs them last to first), on one thread and on two; one with a
 * soft-cap keeps none. The sharpened sum (beta 1.3, log_norm) must leave z alone. */
static void test_lm_head_reuses_logits(void)
{
    enum { N = 6, C = 8, V = 301, CHUNK = 8 };
    rng_state rng;
    rng_seed(&rng, 23);
    float x[N * C], x2[N * C], *w = malloc(sizeof(float) * V * C);
    fill_uniform(&rng, x, N * C, -1, 1);
    fill_uniform(&rng, w, (size_t)V * C, -1, 1);
    for (int i = 0; i < N * C; i++)
        x2[i] = x[i] + 0.5f;
    int32_t tg[N] = {0, 5, 300, 17, 42, 99};
    float *scratch = malloc(sizeof(float) * lm_head_scratch_floats(CHUNK, V));
    float l0[N], l1[N], l2[N], dx0[N * C], dx1[N * C], dx2[N * C], ln[N];
    float *dw0 = calloc((size_t)V * C, sizeof(float)), *dw1 = calloc((size_t)V * C, sizeof(float));
    float *dw2 = calloc((size_t)V * C, sizeof(float));
    gemm_context gc;
    gemm_context_init(&gc);
    lm_head_workspace ws = {.gemm = &gc};
    omp_set_num_threads(1);
    lm_head_loss_forward_backward(l0, dx0, dw0, x, w, tg, N, C, V, 0.0f, 0.5f, scratch, CHUNK, &ws);
    CHECK(ws.logits_rows == 0);
    ws.log_norm = ln;
    ws.beta = 1.3f;
    lm_head_loss_forward(l1, x, w, tg, N, C, V, 0.0f, scratch, CHUNK, &ws);
    ws.log_norm = NULL;
    ws.beta = 1;
    CHECK(ws.logits_rows == N);
    lm_head_loss_forward_backward(l1, dx1, dw1, x, w, tg, N, C, V, 0.0f, 0.5f, scratch, CHUNK, &ws);
    CHECK(ws.logits_rows == 0);
    CHECK(memcmp(l0, l1, sizeof l0) == 0 && memcmp(dx0, dx1, sizeof dx0) == 0);
    CHECK(memcmp(dw0, dw1, sizeof(float) * V * C) == 0);
    /* white box: the logits of x, the rest of x2 */
    lm_head_loss_forward(l2, x, w, tg, N, C, V, 0.0f, scratch, CHUNK, &ws);
    lm_head_loss_forward_backward(l2, dx2, dw2, x2, w, tg, N, C, V, 0.0f, 0.5f, scratch, CHUNK, &ws);
    CHECK(memcmp(l0, l2, sizeof l0) == 0 && memcmp(dx0, dx2, sizeof dx0) == 0);
    CHECK(memcmp(dw0, dw2, sizeof(float) * V * C) != 0);
    /* several chunks (packed products, 1 and 2 threads): the first chunk's logits are kept, and a
     * training call on those rows takes them, with the bits of one alone; a soft-cap: nothing kept */
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        float l3[N], dx3[N * C];
        float *dw3 = calloc((size_t)V * C, sizeof(float)), *dw4 = calloc((size_t)V * C, sizeof(float));
        lm_head_loss_forward_backward(l3, dx3, dw3, x, w, tg, 2, C, V, 0.0f, 0.5f, scratch, 2, &ws);
        lm_head_loss_forward(l2, x, w, tg, N, C, V, 0.0f, scratch, 2, &ws);
        CHECK_MSG(ws.logits_rows == 2, "%d threads: %d rows kept", threads, ws.logits_rows);
        CHECK(memcmp(l2, l1, sizeof l2) == 0);   /* the order of the chunks changed no loss */
        lm_head_loss_forward_backward(l2, dx2, dw4, x2, w, tg, 2, C, V, 0.0f, 0.5f, scratch, 2, &ws);
        CHECK_MSG(memcmp(l2, l3, 2 * sizeof(float)) == 0 && memcmp(dx2, dx3, 2 * C * sizeof(float)) == 0,
                  "%d threads: the first chunk's kept logits are not the product's", threads);
        lm_head_loss_forward(l2, x, w, tg, N, C, V, 0.0f, scratch, 2, &ws);
        lm_head_loss_forward_backward(l2, dx2, dw4, x, w, tg, 3, C, V, 0.0f, 0.5f, scratch, 2, &ws);
        CHECK(ws.logits_rows == 0);   /* a training call of two chunks computes its own */
        free(dw3); free(dw4);
    }
    omp_set_num_threads(1);
    lm_head_loss_forward(l2, x, w, tg, N, C, V, 2.5f, scratch, CHUNK, &ws);
    CHECK(ws.logits_rows == 0);
    omp_set_num_threads(2);
    lm_head_workspace_free(&ws);
    gemm_context_free(&gc);
    free(w); free(scratch); free(dw0); free(dw1); free(dw2);
}

/* An evaluation that wants only some rows (row_from: windows of 4 rows,
 * their first targets scored before): the wanted rows' loss, top_logprob,
 * top_id and log_norm are the bits of an evaluation of every row, the others
 * 0 (poisoned before); the first chunk's logits are held from its first
 * wanted row only (white box: the scratch before it keeps its poison), and
 * the training call that takes them computes the rows before itself: the
 * bits of a training call alone. One chunk and several (packed products),
 * one thread and two; a window with no wanted row; every row wanted. */
/* A head's inputs for the tests below: x [N, C] then w [V, C] (returned,
 * malloc'd) uniform in [-1, 1) from seed, and targets (n * mul + add) % V. */
static float *head_inputs(uint64_t seed, float *x, int N, int C, int V, int32_t *tg, int mul, int add)
{
    rng_state rng;
    rng_seed(&rng, seed);
    float *w = malloc(sizeof(float) * (size_t)V * C);
    fill_uniform(&rng, x, (size_t)N * C, -1, 1);
    fill_uniform(&rng, w, (size_t)V * C, -1, 1);
    for (int n = 0; n < N; n++)
        tg[n] = (int32_t)((n * mul + add) % V);
    return w;
}

static void test_lm_head_wanted_rows(void)
{
    enum { N = 12, C = 8, V = 301, G = 4 };
    float x[N * C];
    int32_t tg[N];
    float *w = head_inputs(31, x, N, C, V, tg, 37, 5);
    const int32_t froms[3][N / G] = {{2, 1, 3}, {4, 2, 0}, {0, 0, 0}};
    const int chunks[2] = {N, G};   /* one chunk; a chunk a window */
    float *scratch = malloc(sizeof(float) * lm_head_scratch_floats(N, V));
    gemm_context gc;
    gemm_context_init(&gc);
    int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++)
        for (int ci = 0; ci < 2; ci++)
            for (int fi = 0; fi < 3; fi++) {
                omp_set_num_threads(threads);
                int chunk = chunks[ci];
                const int32_t *from = froms[fi];
                float l_all[N], t_all[N], n_all[N], l[N], t[N], ln[N];
                int32_t id_all[N], id[N];
                lm_head_workspace ws = {.gemm = &gc, .beta = 1.3f};
                ws.top_logprob = t_all;
                ws.top_id = id_all;
                ws.log_norm = n_all;
                lm_head_loss_forward(l_all, x, w, tg, N, C, V, 0.0f, scratch, chunk, &ws);
                for (int n = 0; n < N; n++) {
                    l[n] = t[n] = ln[n] = NAN;
                    id[n] = -7;
                }
                ws.top_logprob = t;
                ws.top_id = id;
                ws.log_norm = ln;
                ws.row_from = from;
                ws.row_group = G;
                size_t zf = lm_head_scratch_floats(chunk, V);
                for (size_t i = 0; i < zf; i++)
                    scratch[i] = NAN;
                lm_head_loss_forward(l, x, w, tg, N, C, V, 0.0f, scratch, chunk, &ws);
                int bad = 0;
                for (int n = 0; n < N; n++) {
                    int wanted = n % G >= from[n / G];
                    if (wanted)
                        bad += memcmp(&l[n], &l_all[n], sizeof(float)) || memcmp(&t[n], &t_all[n], sizeof(float)) ||
                               id[n] != id_all[n] || memcmp(&ln[n], &n_all[n], sizeof(float));
                    else
                        bad += l[n] != 0 || t[n] != 0 || id[n] != 0 || ln[n] != 0;
                }
                CHECK_MSG(bad == 0, "%d threads, chunk %d, from %d: %d rows wrong", threads, chunk, fi, bad);
                int first = 0;   /* chunk 0's first wanted row */
                while (first < chunk && first % G < from[first / G])
                    first++;
                CHECK_MSG(ws.logits_rows == chunk && ws.logits_from == first, "held %d from %d, want %d from %d",
                          ws.logits_rows, ws.logits_from, chunk, first);
                int poisoned = 1;   /* (one chunk: several share the scratch, the first last) */
                for (int r = 0; ci == 0 && r < first; r++)
                    poisoned = poisoned && isnan(scratch[(size_t)r * (zf / (size_t)chunk)]);
                CHECK_MSG(poisoned, "chunk %d, from %d: a row before the first wanted one was computed", chunk, fi);
                /* the training call on chunk 0's rows takes the held logits and computes the rest */
                float l1[N], dx1[N * C], l2[N], dx2[N * C];
                float *dw1 = calloc((size_t)V * C, sizeof(float)), *dw2 = calloc((size_t)V * C, sizeof(float));
                ws.row_from = NULL;
                ws.top_logprob = NULL;
                ws.top_id = NULL;
                ws.log_norm = NULL;
                lm_head_loss_forward_backward(l1, dx1, dw1, x, w, tg, chunk, C, V, 0.0f, 0.5f, scratch, chunk, &ws);
                CHECK(ws.logits_rows == 0 && ws.logits_from == 0);
                lm_head_loss_forward_backward(l2, dx2, dw2, x, w, tg, chunk, C, V, 0.0f, 0.5f, scratch, chunk, &ws);
                CHECK_MSG(!memcmp(l1, l2, sizeof(float) * (size_t)chunk) &&
                              !memcmp(dx1, dx2, sizeof(float) * (size_t)chunk * C) &&
                              !memcmp(dw1, dw2, sizeof(float) * (size_t)V * C),
                          "%d threads, chunk %d, from %d: the training call on held logits differs", threads, chunk,
                          fi);
                free(dw1); free(dw2);
                lm_head_workspace_free(&ws);
            }
    omp_set_num_threads(saved);
    gemm_context_free(&gc);
    free(w); free(scratch);
}

/* One chunk's training pass in pieces (lm_head_split_begin, lm_head_dz_rows,
 * lm_head_dx_rows, lm_head_dw_rows), the rows and the vocabulary split at
 * odd places and the pieces run through two GEMM contexts, has the bits of
 * lm_head_loss_forward_backward: with no logits held, with an evaluation's
 * held from its first read row on, and under a soft-cap (which holds none);
 * fp32 and bf16 products. */
static void test_lm_head_split_pieces(void)
{
    enum { N = 12, C = 8, V = 301, G = 6 };
    float x[N * C];
    int32_t tg[N];
    float *w = head_inputs(37, x, N, C, V, tg, 53, 11);
    const int32_t from[N / G] = {3, 2};   /* an evaluation that reads rows 3.. and 8.. */
    size_t zf = lm_head_scratch_floats(N, V);
    float *scratch = malloc(sizeof(float) * zf), *ev = malloc(sizeof(float) * N);
    float *dw1 = malloc(sizeof(float) * V * C), *dw2 = malloc(sizeof(float) * V * C);
    if (!kernel_path_bf16_now())
        TEST_SKIP("the head's pieces with bf16 products: no AVX-512 BF16 on this CPU");
    for (int bf16 = 0; bf16 <= kernel_path_bf16_now(); bf16++) {
        gemm_context gc[2];
        tempo_error err;
        for (int k = 0; k < 2; k++) {
            gemm_context_init(&gc[k]);
            if (bf16)
                CHECK(gemm_config_set_bf16(&gc[k].cfg, 1, &err) == 0);
        }
        for (int held = 0; held < 3; held++) {   /* none; an evaluation's from row 3; a soft-cap */
            float cap = held == 2 ? 4.0f : 0.0f;
            float l1[N], dx1[N * C], l2[N], dx2[N * C];
            int fresh = -2;
            for (int way = 0; way < 2; way++) {
                lm_head_workspace ws = {.gemm = &gc[0], .beta = 1};
                if (held) {   /* what the evaluation leaves in the scratch */
                    ws.row_from = from;
                    ws.row_group = G;
                    lm_head_loss_forward(ev, x, w, tg, N, C, V, cap, scratch, N, &ws);
                    ws.row_from = NULL;
                }
                float *dw = way ? dw2 : dw1, *l = way ? l2 : l1, *dx = way ? dx2 : dx1;
                for (size_t i = 0; i < (size_t)V * C; i++)
                    dw[i] = 0.25f;   /* accumulated into */
                if (!way) {
                    lm_head_loss_forward_backward(l, dx, dw, x, w, tg, N, C, V, cap, 0.5f, scratch, N, &ws);
                } else {
                    fresh = lm_head_split_begin(&ws, N, cap, N);
                    CHECK(ws.logits_rows == 0 && ws.logits_from == 0);
                    int s = 5;   /* thread 1's rows [0, 5), thread 0's [5, N) */
                    lm_head_dz_rows(l, x, w, tg, s, N, fresh, C, V, cap, 0.5f, scratch, &ws, &gc[0]);
                    lm_head_dz_rows(l, x, w, tg, 0, s, fresh, C, V, cap, 0.5f, scratch, &ws, &gc[1]);
                    lm_head_dx_rows(dx, w, s, N, C, V, scratch, &gc[0]);
                    lm_head_dx_rows(dx, w, 0, s, C, V, scratch, &gc[1]);
                    lm_head_dw_rows(dw, x, N, 0, 97, C, V, scratch, &gc[1]);
                    lm_head_dw_rows(dw, x, N, 97, 250, C, V, scratch, &gc[0]);
                    lm_head_dw_rows(dw, x, N, 250, V, C, V, scratch, &gc[1]);
                }
                lm_head_workspace_free(&ws);
            }
            int want_fresh = held == 1 ? 3 : N;   /* the first read row of the evaluation's first window */
            CHECK_MSG(fresh == want_fresh, "bf16 %d, held %d: fresh %d, want %d", bf16, held, fresh, want_fresh);
            CHECK_MSG(!memcmp(l1, l2, sizeof l1) && !memcmp(dx1, dx2, sizeof dx1) &&
                          !memcmp(dw1, dw2, sizeof(float) * V * C),
                      "bf16 %d, held %d: the pieces differ from the whole pass", bf16, held);
        }
        lm_head_workspace no_gemm = {0};
        CHECK(lm_head_split_begin(&no_gemm, N, 0, N) == -1);
        lm_head_workspace ws = {.gemm = &gc[0]};
        CHECK(lm_head_split_begin(&ws, N + 1, 0, N) == -1 && lm_head_split_begin(&ws, 0, 0, N) == -1);
        CHECK(lm_head_split_begin(NULL, N, 0, N) == -1);
        for (int k = 0; k < 2; k++)
            gemm_context_free(&gc[k]);
    }
    free(w); free(scratch); free(ev); free(dw1); free(dw2);
}

/* exp_sum_scaled (the sharpened sum of the mixture's log_norm) gives the bits
 * of scaling the row and summing it, and leaves the row alone, on every
 * table this CPU runs. */
static void test_lm_head_scaled_sum(void)
{
    const lm_head_row_ops *tables[3] = {&lm_head_row_ops_portable, NULL, NULL};
    cpu_kernel_path path = kernel_path_select_now();
    if (path >= CPU_KERNELS_AVX2)
        tables[1] = &lm_head_row_ops_avx2;
    else
        TEST_SKIP("the scaled sum's AVX2 table: no AVX2 on this CPU");
    if (path == CPU_KERNELS_AVX512)
        tables[2] = &lm_head_row_ops_avx512;
    else
        TEST_SKIP("the scaled sum's AVX-512 table: no AVX-512 on this CPU");
    rng_state rng;
    rng_seed(&rng, 29);
    int widths[] = {1, 7, 8, 9, 17, 4097};
    for (int t = 0; t < 3; t++) {
        if (!tables[t])
            continue;
        for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
            int V = widths[i];
            float *z = malloc(sizeof(float) * (size_t)V), *z2 = malloc(sizeof(float) * (size_t)V);
            fill_uniform(&rng, z, (size_t)V, -9, 9);
            memcpy(z2, z, sizeof(float) * (size_t)V);
            float mx = tables[t]->max(z, V), k = 1.15f;
            double fused = tables[t]->exp_sum_scaled(z, V, k, k * mx);
            CHECK(memcmp(z, z2, sizeof(float) * (size_t)V) == 0);
            tables[t]->scale(z2, V, k);
            double apart = tables[t]->exp_sum(z2, V, k * mx, 0);
            CHECK_MSG(fused == apart, "table %d V=%d: %.17g against %.17g", t, V, fused, apart);
            free(z); free(z2);
        }
    }
}

/* Zero input => uniform softmax => every loss is log V. */
static void test_lm_head_uniform(void)
{
    int N = 5, C = 4, V = 97;
    float x[20] = {0}, *w = malloc(sizeof(float) * V * C), l[5];
    float *scratch = malloc(sizeof(float) * lm_head_scratch_floats(2, V));
    rng_state rng;
    rng_seed(&rng, 6);
    fill_uniform(&rng, w, (size_t)V * C, -1, 1);
    int32_t tg[5] = {0, 1, 50, 96, 3};
    lm_head_loss_forward(l, x, w, tg, N, C, V, 0.0f, scratch, 2, NULL);
    for (int n = 0; n < N; n++)
        CHECK_NEAR(l[n], log(97.0), 1e-6);
    free(w);
    free(scratch);
}

int main(void)
{
    omp_set_num_threads(2);
    RUN(test_rmsnorm_forward);
    RUN(test_rmsnorm_backward);
    RUN(test_rmsnorm_paths_agree);
    RUN(test_rope);
    RUN(test_activations);
    RUN(test_activation_paths_agree);
    RUN(test_embedding);
    RUN(test_lm_head);
    RUN(test_lm_head_rows_avx512);
    RUN(test_lm_head_reuses_logits);
    RUN(test_lm_head_wanted_rows);
    RUN(test_lm_head_split_pieces);
    RUN(test_lm_head_scaled_sum);
    RUN(test_lm_head_uniform);
    return test_summary("test_ops");
}
