/* test_mixture_train.c - training the transformer inside the mixture
 * (memory_train_weight): the head's gradient of -ln(a p + b) against
 * central finite differences of a double-precision reference of that
 * objective, at one and two threads; b < 0 leaving the plain cross-entropy
 * untouched; and the memory's leave-one-out probability against a memory
 * counted without the occurrence (the discounts held fixed). */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/lm_head.h"
#include "memory/ngram_memory.h"
#include "test.h"

enum { N = 37, C = 12, V = 23 };

/* The objective in double: mean over rows of -ln(a p_n + b_n), p_n = softmax(x_n . W^T)[target]. */
static double objective(const double *x, const double *w, const int32_t *tg, const float *b, float a)
{
    double J = 0;
    for (int n = 0; n < N; n++) {
        double z[V], mx = -1e300, s = 0;
        for (int v = 0; v < V; v++) {
            z[v] = 0;
            for (int c = 0; c < C; c++) z[v] += x[n * C + c] * w[v * C + c];
            if (z[v] > mx) mx = z[v];
        }
        for (int v = 0; v < V; v++) s += exp(z[v] - mx);
        double p = exp(z[tg[n]] - mx) / s;
        J += b[n] >= 0 ? -log(a * p + b[n]) : -log(p);
    }
    return J / N;
}

/* Every step-th entry of grad against central differences of the objective
 * in the parameter array param (one of xd, wd): the worst relative error of
 * those outside 1e-6 + 1e-3 |fd| (0 when all are inside). */
static double fd_worst(const float *grad, double *param, int n, int step, const double *xd, const double *wd,
                       const int32_t *tg, const float *b, float a)
{
    const double eps = 1e-5;
    double worst = 0;
    for (int i = 0; i < n; i += step) {
        double keep = param[i];
        param[i] = keep + eps;
        double jp = objective(xd, wd, tg, b, a);
        param[i] = keep - eps;
        double jm = objective(xd, wd, tg, b, a);
        param[i] = keep;
        double fd = (jp - jm) / (2 * eps), err = fabs(grad[i] - fd) / (1e-6 + fabs(fd));
        if (fabs(grad[i] - fd) > 1e-6 + 1e-3 * fabs(fd) && err > worst) worst = err;
    }
    return worst;
}

static void check_head(int threads, int plain)
{
    omp_set_num_threads(threads);
    float x[N * C], w[V * C], dx[N * C], dw[V * C], losses[N], b[N];
    double xd[N * C], wd[V * C];
    int32_t tg[N];
    uint64_t s = 99;
    for (int i = 0; i < N * C; i++) { s = s * 6364136223846793005ULL + 1; x[i] = (float)((double)(s >> 40) / (1 << 24) - 0.5); xd[i] = x[i]; }
    for (int i = 0; i < V * C; i++) { s = s * 6364136223846793005ULL + 1; w[i] = (float)((double)(s >> 40) / (1 << 24) - 0.5) * 2; wd[i] = w[i]; }
    for (int n = 0; n < N; n++) { tg[n] = (int32_t)(n * 7 % V); b[n] = plain ? -1.0f : 0.02f * (float)(n % 5); }
    const float a = 0.3f;
    float *scratch = malloc(sizeof(float) * lm_head_scratch_floats(8, V));
    gemm_context gc;
    gemm_context_init(&gc);
    lm_head_workspace ws = {.gemm = &gc};
    ws.mix_b = b;
    ws.mix_a = a;
    memset(dw, 0, sizeof dw);
    lm_head_loss_forward_backward(losses, dx, dw, x, w, tg, N, C, V, 0, 1.0f / N, scratch, 8, &ws);
    double worst = fd_worst(dx, xd, N * C, 3, xd, wd, tg, b, a);
    double worst_w = fd_worst(dw, wd, V * C, 2, xd, wd, tg, b, a);
    if (worst_w > worst) worst = worst_w;
    CHECK_MSG(worst == 0, "threads %d plain %d: worst relative gradient error %g", threads, plain, worst);
    lm_head_workspace_free(&ws);
    gemm_context_free(&gc);
    free(scratch);
}

static void test_head_gradient(void)
{
    check_head(1, 0);
    check_head(2, 0);
    check_head(1, 1);
}

/* Leave-one-out equals a memory that never counted the occurrence, where the
 * occurrence's top-order n-gram is seen elsewhere too (so the lower orders'
 * continuation counts do not change) and the discounts are held fixed. */
static void test_leave_one_out(void)
{
    const int Vm = 7, K = 3;
    const size_t n = 3000;
    int32_t *x = malloc(sizeof(int32_t) * n);
    uint64_t s = 5;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = i >= 2 && (s >> 60) % 2 ? x[i - 2] : (int32_t)((s >> 33) % Vm);
    }
    ngram_memory full;
    tempo_error e;
    CHECK(ngram_memory_init(&full, Vm, K, 1, &e) == 0);
    for (size_t i = 0; i < n; i++) ngram_memory_add(&full, x, i, &e);
    int checked[5] = {0};   /* by the n-gram's count: 2, 3, 4 and more (each moves the bins differently) */
    for (size_t at = 500; at < n; at += 7) {
        uint64_t key = 0;
        for (int j = K - 1; j >= 0; j--) key = key * Vm + (uint64_t)x[at - (size_t)j];
        const uint32_t *c = count_table_find(&full.grams[K][0], key);
        if (!c || *c < 2 || checked[*c > 4 ? 4 : *c] >= 3)
            continue;
        checked[*c > 4 ? 4 : *c]++;
        ngram_memory without;
        CHECK(ngram_memory_init(&without, Vm, K, 1, &e) == 0);
        for (size_t i = 0; i < n; i++)
            if (i != at) ngram_memory_add(&without, x, i, &e);
        memcpy(without.disc, full.disc, sizeof full.disc);
        double want = ngram_memory_prob(&without, x, at, NULL), got = ngram_memory_prob_loo(&full, x, at);
        CHECK_MSG(fabs(got - want) <= 1e-14, "position %zu: %.17g vs %.17g", at, got, want);
        ngram_memory_free(&without);
    }
    CHECK_MSG(checked[2] && checked[3] && checked[4], "counts 2/3/4+ seen %d %d %d", checked[2], checked[3], checked[4]);
    ngram_memory_free(&full);
    free(x);
}

int main(void)
{
    RUN(test_head_gradient);
    RUN(test_leave_one_out);
    return test_summary("test_mixture_train");
}
