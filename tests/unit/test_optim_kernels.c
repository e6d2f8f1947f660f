/* test_optim_kernels.c - the optimizer's elementwise kernels
 * (kernels/cpu/optim_kernels.h): the AdamW update against the formula in
 * double, bitwise equality of the two kernel paths and of 1 and 2 threads;
 * the sum of squares against a double sum, thread-count independence.
 * Sizes: 1, around one vector (7, 8, 9), a prime, and sizes that take the
 * parallel path with ragged chunks. Tolerances: AdamW 1e-6 x (1 + |p|) after
 * three steps (float rounding of a few operations); sum of squares relative
 * 1e-12 (double accumulation of exact float squares). */
#include "test.h"
#include "ref_ops.h"

#include "kernels/cpu/optim_kernels.h"

#include <omp.h>

static const size_t sizes[] = {1, 7, 8, 9, 37, 40001, 100003};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

static optim_adamw_coeffs coeffs(int t, float lr, float wd, float gscale)
{
    const float b1 = 0.9f, b2 = 0.95f;
    optim_adamw_coeffs c = {.beta1 = b1, .beta2 = b2, .eps = 1e-8f,
                            .step = (float)(lr / (1.0 - pow(b1, t))),
                            .inv_bc2 = (float)(1.0 / (1.0 - pow(b2, t))),
                            .decay = 1.0f - lr * wd, .gscale = gscale};
    return c;
}

/* Three steps from random state; returns p, m, v after them. */
static void run_adamw(float *p, float *m, float *v, const float *g0, size_t n, int threads)
{
    omp_set_num_threads(threads);
    for (int t = 1; t <= 3; t++) {
        optim_adamw_coeffs c = coeffs(t, 0.01f * t, 0.1f, t == 2 ? 0.5f : 1.0f);
        optim_kernel_adamw(p, g0 + (size_t)(t - 1) * n, m, v, n, &c);
    }
}

static void test_adamw(void)
{
    rng_state rng;
    rng_seed(&rng, 31);
    kernel_env env;
    kernel_env_save(&env);
    for (size_t s = 0; s < N_SIZES; s++) {
        size_t n = sizes[s];
        float *p0 = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * 3 * n);
        fill_uniform(&rng, p0, n, -1, 1);
        fill_uniform(&rng, g, 3 * n, -2, 2);
        g[0] = 0; /* a zero gradient: m = v = 0 -> the update is decay only */
        float *out[3][3]; /* [portable 1 thread, avx2 1 thread, avx2 2 threads][p, m, v] */
        for (int r = 0; r < 3; r++) {
            for (int j = 0; j < 3; j++)
                out[r][j] = calloc(n, sizeof(float));
            memcpy(out[r][0], p0, sizeof(float) * n);
            kernel_env_set(r == 0);
            run_adamw(out[r][0], out[r][1], out[r][2], g, n, r == 2 ? 2 : 1);
        }
        kernel_env_restore(&env);
        omp_set_num_threads(2);
        for (int r = 1; r < 3; r++)
            for (int j = 0; j < 3; j++)
                CHECK_MSG(memcmp(out[0][j], out[r][j], sizeof(float) * n) == 0,
                          "n=%zu run %d array %d differs from portable", n, r, j);
        /* the formula in double */
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            double p = p0[i], m = 0, v = 0;
            for (int t = 1; t <= 3; t++) {
                double lr = 0.01 * t, gi = g[(size_t)(t - 1) * n + i] * (t == 2 ? 0.5 : 1.0);
                m = 0.9 * m + 0.1 * gi;
                v = 0.95 * v + 0.05 * gi * gi;
                double mh = m / (1 - pow(0.9, t)), vh = v / (1 - pow(0.95, t));
                p = p * (1 - lr * 0.1) - lr * mh / (sqrt(vh) + 1e-8);
            }
            worst = fmax(worst, fabs(out[1][0][i] - p) / (1 + fabs(p)));
        }
        CHECK_MSG(worst < 1e-6, "n=%zu AdamW err %g", n, worst);
        for (int r = 0; r < 3; r++)
            for (int j = 0; j < 3; j++)
                free(out[r][j]);
        free(p0); free(g);
    }
}

static void test_sum_squares(void)
{
    rng_state rng;
    rng_seed(&rng, 32);
    kernel_env env;
    kernel_env_save(&env);
    for (size_t s = 0; s < N_SIZES; s++) {
        size_t n = sizes[s];
        float *x = malloc(sizeof(float) * n);
        fill_uniform(&rng, x, n, -3, 3);
        long double want = 0;
        for (size_t i = 0; i < n; i++)
            want += (long double)x[i] * x[i];
        for (int portable = 0; portable < 2; portable++) {
            kernel_env_set(portable);
            omp_set_num_threads(1);
            double one = optim_kernel_sum_squares(x, n);
            omp_set_num_threads(2);
            double two = optim_kernel_sum_squares(x, n);
            CHECK_MSG(one == two, "n=%zu portable=%d: %.17g vs %.17g", n, portable, one, two);
            CHECK_MSG(fabs(one - (double)want) <= 1e-12 * (double)want, "n=%zu portable=%d",
                      n, portable);
        }
        free(x);
    }
    kernel_env_restore(&env);
    CHECK(optim_kernel_sum_squares(NULL, 0) == 0);
}

int main(void)
{
    omp_set_num_threads(2);
    RUN(test_adamw);
    RUN(test_sum_squares);
    return test_summary("test_optim_kernels");
}
