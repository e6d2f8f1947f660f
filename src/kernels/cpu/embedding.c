/* embedding.c - token embedding lookup and its scatter-add gradient (see
 * embedding.h). */
#include "kernels/cpu/embedding.h"
#include "core/omp_team.h"

#include <stddef.h>
#include <string.h>
#include <omp.h>

void embedding_forward(float *out, const int32_t *tokens, const float *emb, int N, int C)
{
    OMP_TEAM_FOR(omp_team_worth((size_t)N * C, 65536), int, n, N,
                 memcpy(out + (size_t)n * C, emb + (size_t)tokens[n] * C, sizeof(float) * (size_t)C));
}

/* Columns [c0, c1) of every row's gradient added into its token's row. */
static void add_columns(float *demb, const int32_t *tokens, const float *dout, int N, int C, int c0,
                        int c1)
{
    for (int n = 0; n < N; n++) {
        float *d = demb + (size_t)tokens[n] * C;
        const float *g = dout + (size_t)n * C;
        for (int c = c0; c < c1; c++)
            d[c] += g[c];
    }
}

void embedding_backward(float *demb, const int32_t *tokens, const float *dout, int N, int C)
{
    if (!omp_team_worth((size_t)N * C, 65536)) {
        add_columns(demb, tokens, dout, N, C, 0, C);
        return;
    }
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        add_columns(demb, tokens, dout, N, C, (int)((long)C * t / nt), (int)((long)C * (t + 1) / nt));
    }
}

void embedding_backward_ref(float *demb, const int32_t *tokens, const float *dout, int N, int C)
{
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            demb[(size_t)tokens[n] * C + c] += dout[(size_t)n * C + c];
}
