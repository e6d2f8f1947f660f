/* test.h - the minimal unit-test harness: CHECK macros and a summary line.
 * Each tests/unit/test_*.c is one program: it calls RUN(fn) for each test
 * function and returns test_summary(). A test function fails when any CHECK
 * in it fails; the program prints "<name>: N passed, N failed" and exits 1 on
 * any failure. A test function a part of which cannot run on this machine
 * (TEST_SKIP: an instruction set the CPU lacks) counts as skipped, not
 * passed, and says why on a "PART SKIPPED: " line, which tests/run_all.sh
 * lists. Counters are per program (static), never shared. */
#ifndef TEMPO_TEST_H
#define TEMPO_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failed_checks_;
static int test_passed_;
static int test_failed_;
static int test_skipped_;
static int test_part_skipped_; /* the running test function called TEST_SKIP */

/* A part of the running test function that cannot run here, and why (printf
 * arguments): the function then counts as skipped unless a check failed. */
#define TEST_SKIP(...)                                                           \
    do {                                                                         \
        printf("PART SKIPPED: ");                                                \
        printf(__VA_ARGS__);                                                     \
        printf("\n");                                                            \
        test_part_skipped_ = 1;                                                  \
    } while (0)

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);   \
            test_failed_checks_++;                                               \
        }                                                                        \
    } while (0)

#define CHECK_MSG(cond, ...)                                                     \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                        \
            fprintf(stderr, "\n");                                               \
            test_failed_checks_++;                                               \
        }                                                                        \
    } while (0)

/* |a-b| <= tol, printing both values on failure. */
#define CHECK_NEAR(a, b, tol)                                                    \
    do {                                                                         \
        double a_ = (double)(a), b_ = (double)(b);                               \
        if (!(fabs(a_ - b_) <= (tol))) {                                         \
            fprintf(stderr, "  FAIL %s:%d: %s=%.9g vs %s=%.9g (tol %g)\n",       \
                    __FILE__, __LINE__, #a, a_, #b, b_, (double)(tol));          \
            test_failed_checks_++;                                               \
        }                                                                        \
    } while (0)

#define RUN(fn)                                                                  \
    do {                                                                         \
        int before_ = test_failed_checks_;                                       \
        test_part_skipped_ = 0;                                                  \
        fn();                                                                    \
        if (test_failed_checks_ == before_ && test_part_skipped_) {              \
            test_skipped_++;                                                     \
            printf("skipped %s (all or part of it cannot run here)\n", #fn);    \
        } else if (test_failed_checks_ == before_) {                             \
            test_passed_++;                                                      \
        } else {                                                                 \
            test_failed_++;                                                      \
            fprintf(stderr, "FAILED %s\n", #fn);                                 \
        }                                                                        \
    } while (0)

static inline int test_summary(const char *name)
{
    if (test_skipped_)
        printf("%s: %d passed, %d failed, %d skipped in part\n", name, test_passed_, test_failed_, test_skipped_);
    else
        printf("%s: %d passed, %d failed\n", name, test_passed_, test_failed_);
    return test_failed_ ? 1 : 0;
}

/* Directory of the shared data (env TEMPO_DATA overrides ../shared/data). */
static inline const char *test_data_dir(void)
{
    const char *d = getenv("TEMPO_DATA");
    return d && *d ? d : "../shared/data";
}

#endif
