/* icl_interval.h - 95 % intervals for ICL accuracies and for the CORE score,
 * by the bootstrap over items, so that a small model's "above chance" can be
 * told from noise (100 items at 50 % give about +-10 points).
 *
 * A task's items are resampled with replacement, ICL_BOOTSTRAP_REPLICATES
 * times from a fixed seed (a run's intervals are reproducible), and the
 * interval runs from the 2.5th to the 97.5th percentile of the statistic over
 * the replicates (linear interpolation between order statistics). A resample
 * of n items of which k are right holds Binomial(n, k/n) right ones, so (n, k)
 * per task is all it needs. CORE's replicates resample every task's items
 * independently (the tasks are fixed: CORE's uncertainty is its items') and
 * average the tasks' centered accuracies (acc - base) / (1 - base). */
#ifndef TEMPO_ICL_INTERVAL_H
#define TEMPO_ICL_INTERVAL_H

#include <stdint.h>

#define ICL_BOOTSTRAP_REPLICATES 1000
#define ICL_BOOTSTRAP_SEED 1337

/* One task as the bootstrap sees it. */
typedef struct {
    int n, correct;      /* items evaluated, items right */
    double baseline;     /* random baseline, a fraction in [0, 1) */
} icl_interval_task;

/* The accuracy's interval of a task of n items, `correct` right: [*lo, *hi]
 * (NaN when n <= 0). */
void icl_interval_accuracy(int n, int correct, double *lo, double *hi);

/* CORE's interval over tasks t[0..n_tasks) (NaN when there are none, or
 */
void icl_interval_core(const icl_interval_task *t, int n_tasks, double *lo, double *hi);

#endif
