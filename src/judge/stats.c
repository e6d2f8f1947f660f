/* stats.c - mean, standard deviation, the t distribution and Welch's test
 * (see stats.h). The incomplete beta function is evaluated with its
 * continued fraction by the modified Lentz method; no tables. */
#include "judge/stats.h"

#include <math.h>

double judge_stats_mean(const double *x, size_t n)
{
    if (n == 0)
        return NAN;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s / (double)n;
}

double judge_stats_std(const double *x, size_t n)
{
    if (n == 0)
        return NAN;
    if (n == 1)
        return 0;
    double m = judge_stats_mean(x, n), s = 0;
    for (size_t i = 0; i < n; i++)
        s += (x[i] - m) * (x[i] - m);
    return sqrt(s / (double)(n - 1));
}

/* The continued fraction of I_x(a,b) (converges fast for x < (a+1)/(a+b+2)):
 *   I_x(a,b) = x^a (1-x)^b / (a B(a,b)) * 1/(1+ d1/(1+ d2/(1+ ...)))
 *   d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1))
 *   d_{2m}   =  m(b-m) x / ((a+2m-1)(a+2m))
 * evaluated as f = a_1/(b_1 + a_2/(b_2 + ...)) with a_1 = 1, a_{k+1} = d_k,
 * all b = 1. */
static double beta_fraction(double a, double b, double x)
{
    const double tiny = 1e-300, eps = 1e-15;
    double f = tiny, c = tiny, d = 0;
    for (int k = 1; k <= 2000; k++) {
        double ak;
        if (k == 1) {
            ak = 1;
        } else {
            int j = k - 1; /* index of d_j */
            int m = j / 2;
            if (j % 2 == 1)
                ak = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
            else
                ak = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
        }
        d = 1 + ak * d;
        if (fabs(d) < tiny)
            d = tiny;
        c = 1 + ak / c;
        if (fabs(c) < tiny)
            c = tiny;
        d = 1 / d;
        double delta = c * d;
        f *= delta;
        if (fabs(delta - 1) < eps)
            break;
    }
    return f;
}

double judge_stats_betai(double a, double b, double x)
{
    if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1))
        return NAN;
    if (x == 0)
        return 0;
    if (x == 1)
        return 1;
    double log_front = a * log(x) + b * log1p(-x) - (lgamma(a) + lgamma(b) - lgamma(a + b));
    if (x < (a + 1) / (a + b + 2))
        return exp(log_front) * beta_fraction(a, b, x) / a;
    return 1 - exp(log_front) * beta_fraction(b, a, 1 - x) / b;
}

double judge_stats_t_cdf(double t, double df)
{
    if (!(df > 0) || isnan(t))
        return NAN;
    if (isinf(t))
        return t > 0 ? 1 : 0;
    /* P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2) */
    double x = df / (df + t * t);
    double tail = 0.5 * judge_stats_betai(df / 2, 0.5, x);
    return t > 0 ? 1 - tail : tail;
}

static int all_finite(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

int judge_stats_welch_less(const double *x_new, size_t n_new, const double *x_old, size_t n_old,
                           judge_welch *w)
{
    if (n_new < 2 || n_old < 2 || !all_finite(x_new, n_new) || !all_finite(x_old, n_old))
        return -1;
    judge_welch r;
    r.mean_new = judge_stats_mean(x_new, n_new);
    r.mean_old = judge_stats_mean(x_old, n_old);
    r.std_new = judge_stats_std(x_new, n_new);
    r.std_old = judge_stats_std(x_old, n_old);
    double v_new = r.std_new * r.std_new / (double)n_new;
    double v_old = r.std_old * r.std_old / (double)n_old;
    double se2 = v_new + v_old;
    if (!(se2 > 0)) {
        r.t = r.mean_new < r.mean_old ? INFINITY : (r.mean_new > r.mean_old ? -INFINITY : 0);
        r.df = INFINITY;
        r.p = r.mean_new < r.mean_old ? 0 : 1;
    } else {
        r.t = (r.mean_old - r.mean_new) / sqrt(se2);
        r.df = se2 * se2 / (v_new * v_new / (double)(n_new - 1) + v_old * v_old / (double)(n_old - 1));
        r.p = judge_stats_t_cdf(-r.t, r.df); /* P(T >= t) by symmetry, exact in the far tail */
    }
    *w = r;
    return 0;
}
