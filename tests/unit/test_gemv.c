/* test_gemv.c - the decode's matrix-vector product (kernels/cpu/gemv.h)
 * against a double-precision reference, on both paths, at odd and even row
 * counts and input lengths around the 32- and 8-float steps (masked tails),
 * with and without accumulation; the AVX2 path gives the same bits at 1 and
 * 2 threads (each row's sum is computed alone). */
#include "test.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/cpu/gemv.h"

static void fill(float *a, size_t n, rng_state *r)
{
    for (size_t i = 0; i < n; i++)
        a[i] = (float)(rng_uniform(r) * 2 - 1);
}

static void test_against_reference(void)
{
    rng_state r;
    rng_seed(&r, 11);
    const int ins[] = {1, 3, 7, 8, 9, 16, 64, 128, 341, 384};
    const int outs[] = {1, 2, 3, 4, 5, 7, 8, 128, 385, 4097};
    for (size_t a = 0; a < sizeof ins / sizeof ins[0]; a++)
        for (size_t b = 0; b < sizeof outs / sizeof outs[0]; b++) {
            int in = ins[a], out = outs[b];
            float *W = malloc(sizeof(float) * (size_t)in * out), *x = malloc(sizeof(float) * in);
            float *y0 = malloc(sizeof(float) * out), *y = malloc(sizeof(float) * out);
            float *yp = malloc(sizeof(float) * out);
            fill(W, (size_t)in * out, &r);
            fill(x, (size_t)in, &r);
            fill(y0, (size_t)out, &r);
            for (int acc = 0; acc <= 1; acc++) {
                memcpy(y, y0, sizeof(float) * out);
                memcpy(yp, y0, sizeof(float) * out);
                gemv_f32(y, x, W, in, out, acc);
                gemv_f32_portable(yp, x, W, in, out, acc);
                double worst = 0, worst_p = 0;
                for (int o = 0; o < out; o++) {
                    double ref = acc ? y0[o] : 0, mag = 0;
                    for (int i = 0; i < in; i++) {
                        ref += (double)W[(size_t)o * in + i] * x[i];
                        mag += fabs((double)W[(size_t)o * in + i] * x[i]);
                    }
                    double tol = 1e-6 * (mag + fabs(y0[o])) + 1e-30;
                    worst = fmax(worst, fabs(y[o] - ref) / tol);
                    worst_p = fmax(worst_p, fabs(yp[o] - ref) / tol);
                }
                CHECK_MSG(worst <= 1 && worst_p <= 1, "in %d out %d accumulate %d: %.2f, portable %.2f of the bound",
                          in, out, acc, worst, worst_p);
            }
            free(W); free(x); free(y0); free(y); free(yp);
        }
}

static void test_threads_same_bits(void)
{
    rng_state r;
    rng_seed(&r, 12);
    const int in = 128, out = 4097;   /* the default's head: large enough to be shared out */
    float *W = malloc(sizeof(float) * (size_t)in * out), *x = malloc(sizeof(float) * in);
    float *y1 = malloc(sizeof(float) * out), *y2 = malloc(sizeof(float) * out);
    fill(W, (size_t)in * out, &r);
    fill(x, (size_t)in, &r);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    gemv_f32(y1, x, W, in, out, 0);
    omp_set_num_threads(2);
    gemv_f32(y2, x, W, in, out, 0);
    omp_set_num_threads(saved);
    CHECK(memcmp(y1, y2, sizeof(float) * out) == 0);
    free(W); free(x); free(y1); free(y2);
}

int main(void)
{
    RUN(test_against_reference);
    RUN(test_threads_same_bits);
    return test_summary("test_gemv");
}
