/* stats.h - the statistics the judge reports over seeds: mean, sample
 * standard deviation, Student's t distribution (through the regularized
 * incomplete beta function) and Welch's one-sided two-sample t-test.
 * Pure functions of their arguments; nothing here reads files or the
 * leaderboard (the judge decides which samples to compare). */
#ifndef TEMPO_JUDGE_STATS_H
#define TEMPO_JUDGE_STATS_H

#include <stddef.h>

/* Mean of x[0..n); NaN when n == 0. */
double judge_stats_mean(const double *x, size_t n);

/* Sample standard deviation (divisor n - 1) of x[0..n); 0 when n == 1,
 * NaN when n == 0. */
double judge_stats_std(const double *x, size_t n);

/* Regularized incomplete beta function I_x(a, b) for a > 0, b > 0 and
 * 0 <= x <= 1 (continued fraction, relative accuracy ~1e-12). NaN outside
 * that domain. */
double judge_stats_betai(double a, double b, double x);

/* Student's t distribution with df > 0 degrees of freedom (df need not be
 * an integer): P(T <= t). +-inf give 1 and 0; NaN for df <= 0 or NaN t. */
double judge_stats_t_cdf(double t, double df);

/* Welch's t-test of H0: mean(new) >= mean(old) against H1: mean(new) <
 * mean(old) (lower is better, as bpb). Needs n_new >= 2 and n_old >= 2;
 * the samples' variances are not assumed equal:
 *   se^2 = s_new^2/n_new + s_old^2/n_old,  t = (mean_old - mean_new) / se,
 *   df = se^4 / ((s_new^2/n_new)^2/(n_new-1) + (s_old^2/n_old)^2/(n_old-1)),
 *   p = P(T_df >= t).
 * When se == 0 (both samples constant) p is 0 if mean_new < mean_old and 1
 * otherwise, df is reported as +inf. */
typedef struct {
    double mean_new, mean_old;
    double std_new, std_old;
    double t;        /* positive when the new sample is better (lower) */
    double df;       /* Welch-Satterthwaite degrees of freedom */
    double p;        /* one-sided p-value */
} judge_welch;

/* Returns 0 and fills *w, or -1 when either sample has fewer than 2 values
 * or holds a non-finite value (w is then left untouched). */
int judge_stats_welch_less(const double *x_new, size_t n_new, const double *x_old, size_t n_old,
                           judge_welch *w);

#endif
