/* ref_ops.h - double-precision reference implementations of the model's ops,
 * written as plainly as possible from the math, for the kernel and model
 * tests (finite differences are taken through these), plus small helpers to
 * fill buffers and compare gradients. Test-only; header-only (static inline).
 * Shapes as in the kernels: B batch, T time, C channels, H heads, D head dim. */
#ifndef TEMPO_REF_OPS_H
#define TEMPO_REF_OPS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/rng.h"

/* ---- buffers ---- */

static inline void fill_uniform(rng_state *r, float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)rng_uniform(r);
}

static inline void to_double(double *d, const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = f[i];
}

static inline double max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= m))
            m = e; /* NaN propagates as "largest" */
    }
    return m;
}

/* Compares a float gradient with a double reference gradient element by
 * element: |got - want| <= atol + rtol * |want|. Prints the worst element on
 * failure and returns the number of elements out of tolerance. */
static inline int grad_mismatches(const char *what, const float *got, const double *want,
                                  size_t n, double atol, double rtol)
{
    int bad = 0;
    size_t worst = 0;
    double worst_excess = -1;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        double excess = e - (atol + rtol * fabs(want[i]));
        if (!(excess <= 0))
            bad++;
        if (!(excess <= worst_excess)) {
            worst_excess = excess;
            worst = i;
        }
    }
    if (bad)
        fprintf(stderr, "  %s: %d of %zu elements off; worst [%zu] got %.9g want %.9g\n",
                what, bad, n, worst, got[worst], want[worst]);
    return bad;
}

/* Central finite differences of a scalar objective f(ctx) with respect to each
 * of the n doubles at x (which f reads through ctx): grad[i] = (f(x+eps e_i) -
 * f(x-eps e_i)) / (2 eps). In double precision with eps ~1e-5 the error is
 * ~1e-10 relative, far below the float kernels' rounding. */
typedef double (*objective_fn)(void *ctx);

static inline void fd_grad(double *grad, double *x, size_t n, objective_fn f, void *ctx,
                           double eps)
{
    for (size_t i = 0; i < n; i++) {
        double save = x[i];
        x[i] = save + eps;
        double fp = f(ctx);
        x[i] = save - eps;
        double fm = f(ctx);
        x[i] = save;
        grad[i] = (fp - fm) / (2 * eps);
    }
}

/* ---- kernel path ---- */

/* The TEMPO_KERNELS environment variable (core/cpu_info.h) as a test found
 * it, so that a test can force a path and put things back. */
typedef struct {
    int had;
    char value[64];
} kernel_env;

static inline void kernel_env_save(kernel_env *e)
{
    const char *v = getenv("TEMPO_KERNELS");
    e->had = v != NULL;
    snprintf(e->value, sizeof e->value, "%s", v ? v : "");
}

/* portable = 1 forces the plain C kernels; 0 lets each kernel take the best
 * path the CPU has (AVX2 + FMA here). */
static inline void kernel_env_set(int portable)
{
    if (portable)
        setenv("TEMPO_KERNELS", "portable", 1);
    else
        unsetenv("TEMPO_KERNELS");
}

static inline void kernel_env_restore(const kernel_env *e)
{
    if (e->had)
        setenv("TEMPO_KERNELS", e->value, 1);
    else
        unsetenv("TEMPO_KERNELS");
}

/* ---- ops ---- */

/* x [N, C], w [C] -> y [N, C] */
static inline void refd_rmsnorm(double *y, const double *x, const double *w, int N, int C,
                                double eps)
{
    for (int n = 0; n < N; n++) {
        double ss = 0;
        for (int c = 0; c < C; c++)
            ss += x[(size_t)n * C + c] * x[(size_t)n * C + c];
        double r = 1.0 / sqrt(ss / C + eps);
        for (int c = 0; c < C; c++)
            y[(size_t)n * C + c] = x[(size_t)n * C + c] * r * w[c];
    }
}

/* x [B, T, H, D] rotated in place, half-split pairs (i, i + D/2), position pos0 + t. */
static inline void refd_rope(double *x, int B, int T, int H, int D, int pos0, double theta)
{
    int half = D / 2;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                double *v = x + (((size_t)b * T + t) * H + h) * D;
                for (int i = 0; i < half; i++) {
                    double a = (pos0 + t) * pow(theta, -2.0 * i / D);
                    double x1 = v[i], x2 = v[i + half];
                    v[i] = x1 * cos(a) - x2 * sin(a);
                    v[i + half] = x1 * sin(a) + x2 * cos(a);
                }
            }
}

/* Causal GQA attention, materialising each softmax row. q [B,T,H,D],
 * k, v [B,T,Hkv,D] -> o [B,T,H,D]; lse [B,H,T] if not NULL. */
static inline void refd_attention(double *o, double *lse, const double *q, const double *k,
                                  const double *v, int B, int T, int H, int Hkv, int D)
{
    double *p = malloc(sizeof(double) * (size_t)T);
    double scale = 1.0 / sqrt((double)D);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int g = h / (H / Hkv);
            for (int i = 0; i < T; i++) {
                const double *qi = q + (((size_t)b * T + i) * H + h) * D;
                double mx = -INFINITY;
                for (int j = 0; j <= i; j++) {
                    const double *kj = k + (((size_t)b * T + j) * Hkv + g) * D;
                    double s = 0;
                    for (int d = 0; d < D; d++)
                        s += qi[d] * kj[d];
                    p[j] = s * scale;
                    mx = p[j] > mx ? p[j] : mx;
                }
                double sum = 0;
                for (int j = 0; j <= i; j++)
                    sum += (p[j] = exp(p[j] - mx));
                double *oi = o + (((size_t)b * T + i) * H + h) * D;
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int j = 0; j <= i; j++)
                        acc += p[j] * v[(((size_t)b * T + j) * Hkv + g) * D + d];
                    oi[d] = acc / sum;
                }
                if (lse)
                    lse[((size_t)b * H + h) * T + i] = mx + log(sum);
            }
        }
    free(p);
}

static inline double refd_relu2(double h) { return h > 0 ? h * h : 0; }
static inline double refd_silu(double g) { return g / (1.0 + exp(-g)); }

/* Per-row cross-entropy of the head: x [N, C], w [V, C] -> losses [N] (nats). */
static inline void refd_head_loss(double *losses, const double *x, const double *w,
                                  const int32_t *targets, int N, int C, int V, double cap)
{
    double *z = malloc(sizeof(double) * (size_t)V);
    for (int n = 0; n < N; n++) {
        double mx = -INFINITY;
        for (int v = 0; v < V; v++) {
            double s = 0;
            for (int c = 0; c < C; c++)
                s += x[(size_t)n * C + c] * w[(size_t)v * C + c];
            z[v] = cap > 0 ? cap * tanh(s / cap) : s;
            mx = z[v] > mx ? z[v] : mx;
        }
        double sum = 0;
        for (int v = 0; v < V; v++)
            sum += exp(z[v] - mx);
        losses[n] = mx + log(sum) - z[targets[n]];
    }
    free(z);
}

#endif
