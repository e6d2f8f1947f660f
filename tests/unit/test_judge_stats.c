/* test_judge_stats.c - judge/stats.h against closed forms and reference
 * values (computed independently with mpmath: betainc and numerical
 * integration of the t density, 30 digits). */
#include "judge/stats.h"
#include "test.h"

static void test_mean_std(void)
{
    double x[] = {1, 2, 3, 4};
    CHECK_NEAR(judge_stats_mean(x, 4), 2.5, 1e-15);
    CHECK_NEAR(judge_stats_std(x, 4), sqrt(5.0 / 3.0), 1e-15); /* sum sq dev 5, n-1 = 3 */
    CHECK(judge_stats_std(x, 1) == 0);
    CHECK(isnan(judge_stats_mean(x, 0)));
    CHECK(isnan(judge_stats_std(x, 0)));
}

static void test_betai(void)
{
    /* closed forms: I_x(a,1) = x^a, I_x(1,b) = 1-(1-x)^b, I_1/2(a,a) = 1/2 */
    CHECK_NEAR(judge_stats_betai(3.5, 1, 0.7), pow(0.7, 3.5), 1e-13);
    CHECK_NEAR(judge_stats_betai(1, 4.25, 0.2), 1 - pow(0.8, 4.25), 1e-13);
    CHECK_NEAR(judge_stats_betai(7.5, 7.5, 0.5), 0.5, 1e-13);
    /* mpmath betainc(a, b, 0, x, regularized=True) */
    CHECK_NEAR(judge_stats_betai(2, 3, 0.4), 0.5248, 1e-13);
    CHECK_NEAR(judge_stats_betai(0.5, 0.5, 0.3), 0.369010119565545375, 1e-12);
    CHECK_NEAR(judge_stats_betai(10, 2.5, 0.9), 0.812186274308855701, 1e-12);
    CHECK_NEAR(judge_stats_betai(1.5, 40, 0.02), 0.346547132150220360, 1e-12);
    CHECK_NEAR(judge_stats_betai(100, 100, 0.52), 0.714032847187741129, 1e-11);
    CHECK(judge_stats_betai(2, 3, 0) == 0);
    CHECK(judge_stats_betai(2, 3, 1) == 1);
    CHECK(isnan(judge_stats_betai(-1, 3, 0.5)));
    CHECK(isnan(judge_stats_betai(2, 3, 1.5)));
}

static void test_t_cdf(void)
{
    /* closed forms: df 1 (Cauchy) and df 2 */
    for (double t = -5; t <= 5; t += 0.37) {
        CHECK_NEAR(judge_stats_t_cdf(t, 1), 0.5 + atan(t) / M_PI, 1e-13);
        CHECK_NEAR(judge_stats_t_cdf(t, 2), 0.5 + t / (2 * sqrt(2 + t * t)), 1e-13);
    }
    /* textbook critical values (one-sided 5 %) and mpmath integrals */
    CHECK_NEAR(judge_stats_t_cdf(2.015048, 5), 0.949999976182542210, 1e-12);
    CHECK_NEAR(judge_stats_t_cdf(1.812461, 10), 0.949999989981124961, 1e-12);
    CHECK_NEAR(judge_stats_t_cdf(6.313752, 1), 0.950000003780485722, 1e-12);
    CHECK_NEAR(judge_stats_t_cdf(1.644854, 1e6), 0.949999881319703638, 1e-9);
    CHECK_NEAR(judge_stats_t_cdf(-1.2, 3.7), 0.150646189075939660, 1e-12);
    CHECK_NEAR(judge_stats_t_cdf(12, 2.2), 0.997608293062241254, 1e-12);
    CHECK_NEAR(judge_stats_t_cdf(2.5, 7.3), 0.980174882667199764, 1e-12);
    CHECK(judge_stats_t_cdf(INFINITY, 3) == 1);
    CHECK(judge_stats_t_cdf(-INFINITY, 3) == 0);
    CHECK_NEAR(judge_stats_t_cdf(0, 4.5), 0.5, 1e-15);
    CHECK(isnan(judge_stats_t_cdf(1, 0)));
    /* far tail: computed without cancellation */
    double p = judge_stats_t_cdf(-40, 3);
    CHECK(p > 0 && p < 1e-4);
}

static void test_welch(void)
{
    /* new {1,2,3}, old {4,5,6}: means 2 and 5, variances 1 and 1,
     * se^2 = 2/3, t = 3 / sqrt(2/3), df = (2/3)^2 / (2 * (1/3)^2 / 2) = 4,
     * p = P(T_4 >= 3.674235) = 0.010655816950473934 (mpmath). */
    double a[] = {1, 2, 3}, b[] = {4, 5, 6};
    judge_welch w;
    CHECK(judge_stats_welch_less(a, 3, b, 3, &w) == 0);
    CHECK_NEAR(w.mean_new, 2, 1e-15);
    CHECK_NEAR(w.mean_old, 5, 1e-15);
    CHECK_NEAR(w.t, 3 / sqrt(2.0 / 3.0), 1e-12);
    CHECK_NEAR(w.df, 4, 1e-12);
    CHECK_NEAR(w.p, 0.0106558169504739344, 1e-7); /* t given to 7 digits above */
    CHECK(w.p < 0.05);
    /* the other direction: the new sample is worse */
    CHECK(judge_stats_welch_less(b, 3, a, 3, &w) == 0);
    CHECK(w.t < 0 && w.p > 0.95);
    /* unequal sizes and variances: df strictly between min(n)-1 and n1+n2-2 */
    double c[] = {2.10, 2.12, 2.11, 2.13, 2.09}, d[] = {2.20, 2.05};
    CHECK(judge_stats_welch_less(c, 5, d, 2, &w) == 0);
    CHECK(w.df > 1 - 1e-12 && w.df < 5);
    CHECK(w.p > 0.05); /* a noisy 2-seed leader is not beaten by 0.015 */
    /* constant samples */
    double e[] = {1, 1}, f[] = {2, 2};
    CHECK(judge_stats_welch_less(e, 2, f, 2, &w) == 0 && w.p == 0);
    CHECK(judge_stats_welch_less(f, 2, e, 2, &w) == 0 && w.p == 1);
    /* not testable */
    CHECK(judge_stats_welch_less(a, 1, b, 3, &w) == -1);
    double g[] = {1, NAN};
    CHECK(judge_stats_welch_less(g, 2, b, 3, &w) == -1);
}

int main(void)
{
    RUN(test_mean_std);
    RUN(test_betai);
    RUN(test_t_cdf);
    RUN(test_welch);
    return test_summary("test_judge_stats");
}
