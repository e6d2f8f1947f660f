/* icl_interval.c - bootstrap intervals of ICL accuracies and CORE (see icl_interval.h). */
#include "eval/icl_interval.h"

#include <math.h>
#include <stdlib.h>

#include "core/rng.h"

/* Right items in one resample of n items of which a fraction p is right. */
static int resample(rng_state *r, int n, double p)
{
    int k = 0;
    for (int j = 0; j < n; j++)
        k += rng_uniform(r) < p;
    return k;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The 2.5th and 97.5th percentiles of v[0..n) (sorted here). */
static void percentiles(double *v, int n, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    const double q[2] = {0.025, 0.975};
    double *out[2] = {lo, hi};
    for (int i = 0; i < 2; i++) {
        double at = q[i] * (n - 1);
        int a = (int)floor(at);
        int b = a + 1 < n ? a + 1 : a;
        *out[i] = v[a] + (v[b] - v[a]) * (at - a);
    }
}

void icl_interval_accuracy(int n, int correct, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n <= 0)
        return;
    double v[ICL_BOOTSTRAP_REPLICATES];
    rng_state r;
    rng_seed(&r, ICL_BOOTSTRAP_SEED);
    double p = (double)correct / n;
    for (int b = 0; b < ICL_BOOTSTRAP_REPLICATES; b++)
        v[b] = (double)resample(&r, n, p) / n;
    percentiles(v, ICL_BOOTSTRAP_REPLICATES, lo, hi);
}

void icl_interval_core(const icl_interval_task *t, int n_tasks, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n_tasks <= 0)
        return;
    double v[ICL_BOOTSTRAP_REPLICATES] = {0};
    rng_state r;
    rng_seed(&r, ICL_BOOTSTRAP_SEED);
    for (int i = 0; i < n_tasks; i++) {
        if (t[i].n <= 0)
            return; /* a task with no items has no accuracy, and CORE none either */
        double p = (double)t[i].correct / t[i].n;
        for (int b = 0; b < ICL_BOOTSTRAP_REPLICATES; b++) {
            double acc = (double)resample(&r, t[i].n, p) / t[i].n;
            v[b] += (acc - t[i].baseline) / (1.0 - t[i].baseline) / n_tasks;
        }
    }
    percentiles(v, ICL_BOOTSTRAP_REPLICATES, lo, hi);
}
