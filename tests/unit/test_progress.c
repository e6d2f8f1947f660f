/* test_progress.c - the progress meter (core/progress.h): silent without a
 * FILE; no line before every_s seconds and none for short work; the line's
 * parts (the stage, done of total, percent, time, time left); a new stage
 * said at once once lines were shown; one closing line per stage; done past
 * total clamped. The lines go to a temporary file read back. */
#include "test.h"

#include "core/progress.h"

/* What was written to f since it was opened, into buf (n bytes, NUL-ended). */
static const char *written(FILE *f, char *buf, size_t n)
{
    fflush(f);
    long end = ftell(f);
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fseek(f, end, SEEK_SET);
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_silent_without_file(void)
{
    progress_meter p;
    progress_meter_start(&p, NULL, "eval", "tokens", 0);
    progress_meter_update(&p, "a", 1, 10);
    progress_meter_update(&p, "a", 10, 10);
    CHECK(p.lines == 0);
}

static void test_short_work_prints_nothing(void)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    progress_meter p;
    progress_meter_start(&p, f, "eval", "tokens", 1000);
    for (uint64_t i = 0; i <= 100; i++)
        progress_meter_update(&p, "the transformer", i, 100);
    progress_meter_update(&p, "the mixer", 0, 100);   /* nothing shown yet: a new stage is no line */
    progress_meter_update(&p, "the mixer", 100, 100);
    char buf[4096];
    CHECK_MSG(*written(f, buf, sizeof buf) == 0, "printed: %s", buf);
    CHECK(p.lines == 0);
    fclose(f);
}

static void test_lines(void)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    progress_meter p;
    progress_meter_start(&p, f, "eval: bpb of x", "tokens", 0);   /* every update is due */
    progress_meter_update(&p, "the transformer", 5, 20);
    char buf[4096];
    const char *s = written(f, buf, sizeof buf);
    CHECK_MSG(strstr(s, "eval: bpb of x, the transformer: 5 of 20 tokens (25 %) in 0:00, about 0:00 left\n") == s,
              "line: %s", s);
    progress_meter_update(&p, "the transformer", 20, 20);
    progress_meter_update(&p, "the transformer", 20, 20);   /* closed: no second closing line */
    s = written(f, buf, sizeof buf);
    CHECK_MSG(count_lines(s) == 2, "lines: %s", s);
    CHECK_MSG(strstr(s, "20 of 20 tokens (100 %) in 0:00\n") != NULL, "closing line: %s", s);
    CHECK_MSG(strstr(s, "(100 %) in 0:00, about") == NULL, "a closing line has no time left: %s", s);
    /* a new stage once lines were shown: said at once, then closed once */
    p.every_s = 1000;
    progress_meter_update(&p, "the mixer", 0, 7);
    progress_meter_update(&p, "the mixer", 3, 7);   /* not due */
    progress_meter_update(&p, "the mixer", 9, 7);   /* past the total: clamped, so it closes */
    s = written(f, buf, sizeof buf);
    CHECK_MSG(count_lines(s) == 4, "lines: %s", s);
    CHECK_MSG(strstr(s, "eval: bpb of x, the mixer: 0 of 7 tokens (0 %) in 0:00\n") != NULL, "stage line: %s", s);
    CHECK_MSG(strstr(s, "eval: bpb of x, the mixer: 7 of 7 tokens (100 %)") != NULL, "clamped: %s", s);
    CHECK(p.lines == 4);
    /* no stage name: the line has none */
    progress_meter q;
    progress_meter_start(&q, f, "compress", "tokens", 0);
    progress_meter_update(&q, NULL, 1, 4);
    s = written(f, buf, sizeof buf);
    CHECK_MSG(strstr(s, "compress: 1 of 4 tokens (25 %) in 0:00, about 0:00 left\n") != NULL, "unnamed: %s", s);
    fclose(f);
}

int main(void)
{
    RUN(test_silent_without_file);
    RUN(test_short_work_prints_nothing);
    RUN(test_lines);
    return test_summary("test_progress");
}
