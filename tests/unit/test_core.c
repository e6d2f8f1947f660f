/* test_core.c - error formatting, duration parsing, rng determinism. */
#include "test.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"

static void test_durations(void)
{
    tempo_error err;
    double s = 0;
    CHECK(timer_parse_duration("90s", &s, &err) == 0 && s == 90);
    CHECK(timer_parse_duration("10m", &s, &err) == 0 && s == 600);
    CHECK(timer_parse_duration("1h30m", &s, &err) == 0 && s == 5400);
    CHECK(timer_parse_duration("2.5m", &s, &err) == 0 && s == 150);
    CHECK(timer_parse_duration("45", &s, &err) == 0 && s == 45);
    const char *bad[] = {"-5m", "0s", "", "abc", "5x", "m", "1e400", "0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tempo_error_clear(&err);
        CHECK_MSG(timer_parse_duration(bad[i], &s, &err) == -1, "%s", bad[i]);
        CHECK(err.code == 2 && strstr(err.msg, "budget") != NULL);
    }
}

static void test_error_prefix(void)
{
    tempo_error err;
    tempo_error_clear(&err);
    CHECK(tempo_fail(&err, "truncated at byte %d", 12) == -1);
    tempo_error_prefix(&err, "a.bin");
    CHECK(strcmp(err.msg, "a.bin: truncated at byte 12") == 0);
    CHECK(err.code == 1);
}

static void test_rng(void)
{
    rng_state a, b;
    rng_seed(&a, 42);
    rng_seed(&b, 42);
    for (int i = 0; i < 100; i++)
        CHECK(rng_next(&a) == rng_next(&b));
    rng_seed(&b, 43);
    CHECK(rng_next(&a) != rng_next(&b));
    double sum = 0, sum2 = 0;
    int n = 100000;
    for (int i = 0; i < n; i++) {
        double x = rng_normal(&a);
        sum += x;
        sum2 += x * x;
        CHECK(rng_below(&a, 7) < 7);
    }
    CHECK_NEAR(sum / n, 0.0, 0.02);
    CHECK_NEAR(sum2 / n, 1.0, 0.02);
}

int main(void)
{
    RUN(test_durations);
    RUN(test_error_prefix);
    RUN(test_rng);
    return test_summary("test_core");
}
