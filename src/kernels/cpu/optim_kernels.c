/* optim_kernels.c - AdamW update and sum of squares (see optim_kernels.h):
 * the plain C bodies and the threaded drivers. Work is cut into fixed chunks
 * (static schedule); the AVX2 bodies live in optim_kernels_avx2.c. */
#include "kernels/cpu/optim_kernels.h"
#include "kernels/cpu/kernel_path.h"
#include "core/omp_team.h"

#include <math.h>
#include <stdlib.h>

#define ADAMW_CHUNK 16384     /* elements per unit of work */
#define ADAMW_PAR_MIN 32768   /* below this a parallel region costs more (core/omp_team.h) */

static void adamw_portable(float *p, const float *g, float *m, float *v, size_t n,
                           const optim_adamw_coeffs *c)
{
    const float b1 = c->beta1, b2 = c->beta2, omb1 = 1 - b1, omb2 = 1 - b2;
    const float gscale = c->gscale, decay = c->decay, step = c->step;
    const float inv_bc2 = c->inv_bc2, eps = c->eps;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * gscale;
        float mi = b1 * m[i] + omb1 * gi;
        float vi = b2 * v[i] + omb2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * decay - step * mi / (sqrtf(vi * inv_bc2) + eps);
    }
}

void optim_kernel_adamw(float *p, const float *g, float *m, float *v, size_t n,
                        const optim_adamw_coeffs *c)
{
    int avx2 = kernel_path_avx2();
    size_t n_chunks = (n + ADAMW_CHUNK - 1) / ADAMW_CHUNK;
    OMP_TEAM_FOR(omp_team_worth(n, ADAMW_PAR_MIN), size_t, k, n_chunks,
                 size_t lo = k * ADAMW_CHUNK, len = n - lo < ADAMW_CHUNK ? n - lo : ADAMW_CHUNK;
                 (avx2 ? optim_kernel_adamw_avx2 : adamw_portable)(p + lo, g + lo, m + lo, v + lo, len, c));
}

static double sum_squares_portable(const float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return s;
}

double optim_kernel_sum_squares(const float *x, size_t n)
{
    /* Chunk sums in a stack block (no allocation: the training step calls
     * this every step), added in chunk order, so the result does not depend
     * on the thread count. */
    enum { BLOCK = 256 };
    double partial[BLOCK];
    int avx2 = kernel_path_avx2();
    size_t n_chunks = (n + OPTIM_SUMSQ_CHUNK - 1) / OPTIM_SUMSQ_CHUNK;
    double total = 0;
    int team = omp_team_worth(n, ADAMW_PAR_MIN);
    for (size_t k0 = 0; k0 < n_chunks; k0 += BLOCK) {
        size_t nb = n_chunks - k0 < BLOCK ? n_chunks - k0 : BLOCK;
        OMP_TEAM_FOR(team, size_t, k, nb,
                     size_t lo = (k0 + k) * OPTIM_SUMSQ_CHUNK;
                     size_t len = n - lo < OPTIM_SUMSQ_CHUNK ? n - lo : OPTIM_SUMSQ_CHUNK;
                     partial[k] = (avx2 ? optim_kernel_sum_squares_avx2 : sum_squares_portable)(x + lo, len));
        for (size_t k = 0; k < nb; k++)
            total += partial[k];
    }
    return total;
}
