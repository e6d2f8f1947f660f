/* test_judge_score.c - judge/score.h (eval line, phase-2 scorecard and the
 * combined formula computed by hand), judge/curves.h (metrics.jsonl reading,
 * thinning, JSON round trip) and judge/plot_svg.h (ticks, the SVG). */
#include <unistd.h>

#include "core/nice_ticks.h"
#include "judge/curves.h"
#include "eval/eval_result.h"
#include "judge/plot_svg.h"
#include "judge/score.h"
#include "test.h"

static void test_parse_eval(void)
{
    bpb_result r;
    tempo_error err;
    CHECK(eval_bpb_read("{\"bpb\":1.25,\"bits\":100,\"bytes\":80,\"tokens\":20,\"context\":64,\"stride\":32,"
                        "\"seconds\":0.5}",
                        &r, &err) == 0);
    CHECK(r.bpb == 1.25 && r.bytes == 80 && r.tokens == 20 && r.stride == 32);
    CHECK(eval_bpb_read("{\"bpb\":null,\"bytes\":80}", &r, &err) == 0 && isnan(r.bpb) && r.tokens == 0);
    CHECK(eval_bpb_read("{\"bits\":3}", &r, &err) == -1 && strstr(err.msg, "no \"bpb\"") != NULL);
    CHECK(eval_bpb_read("evaluating...", &r, &err) == -1 && strstr(err.msg, "not JSON") != NULL);
    CHECK(eval_bpb_read("", &r, &err) == -1);
    CHECK(eval_bpb_read("[1]", &r, &err) == -1);
}

/* A submission's result.json: the numbers read leniently; counts that no
 * integer type holds are unknown (-1), never cast (the sanitized build's
 * float-cast-overflow checks that). */
static void test_parse_run_result(void)
{
    judge_run_record r;
    judge_run_record_init(&r);
    const char *good = "{\"train_seconds\":12.5,\"steps\":40,\"tokens\":163840,\"params\":1234567,"
                       "\"tokens_per_second\":1e4,\"mfu\":0.5}\n";
    judge_parse_run_result(good, strlen(good), &r);
    CHECK(r.train_seconds == 12.5 && r.steps == 40 && r.tokens == 163840 && r.params == 1234567);
    CHECK(r.tokens_per_second == 1e4 && r.mfu == 0.5);
    judge_run_record_init(&r);
    const char *huge = "{\"steps\":1e19,\"tokens\":1e300,\"params\":-1e300,\"train_seconds\":1e300}";
    judge_parse_run_result(huge, strlen(huge), &r);
    CHECK_MSG(r.steps == -1 && r.tokens == -1 && r.params == -1, "%lld %lld %lld", r.steps, r.tokens, r.params);
    CHECK(r.train_seconds == 1e300);
    const char *odd = "{\"steps\":2.5,\"tokens\":9007199254740994,\"params\":9007199254740992}";
    judge_run_record_init(&r);
    judge_parse_run_result(odd, strlen(odd), &r);
    CHECK(r.steps == -1 && r.tokens == -1 && r.params == 9007199254740992LL);
    judge_run_record_init(&r);
    judge_parse_run_result("not json", 8, &r);
    CHECK(r.steps == -1 && isnan(r.train_seconds));
}

static void test_phase2_formula(void)
{
    bpb_result e = {.bpb = 2.0, .bytes = 1000, .tokens = 250};
    judge_phase2 p;
    judge_phase2_init(&p, &e);
    CHECK(!p.available && p.bytes_per_token == 4.0);
    /* decode 500 tokens/s x 4 bytes/token = 2000 B/s = 2 x the reference:
     * speed = 0.05 x log2(2) = 0.05; CORE 0.1 -> 0.1; score = 2 - 0.1 - 0.05 */
    CHECK(judge_phase2_from_scorecard(&p, "{\"core\":0.1,\"decode_tokens_per_s\":500}") == 0);
    CHECK(p.available);
    CHECK_NEAR(p.decode_bytes_per_s, 2000, 1e-9);
    CHECK_NEAR(p.icl_term, 0.1, 1e-12);
    CHECK_NEAR(p.speed_term, 0.05, 1e-12);
    CHECK_NEAR(p.combined, 1.85, 1e-12);
    strbuf d = {0};
    judge_phase2_describe(&p, &d);
    CHECK(d.data && strstr(d.data, "score 1.850000 = bpb 2.000000") != NULL);
    strbuf_free(&d);

    /* the scorecard as eval writes it (eval/eval_result.h owns the keys), and the cap:
     * 1e6 tokens/s is far beyond 2^5 x reference */
    eval_scorecard sc = {.bpb = 2.0, .core = -0.02, .core_entries = 3, .core_of = 22, .decode_tokens_per_s = 1e6,
                         .model = "m"};
    strbuf line = {0};
    tempo_error err;
    CHECK(eval_scorecard_json(&sc, &line, &err) == 0);
    judge_phase2_init(&p, &e);
    CHECK(judge_phase2_from_scorecard(&p, line.data) == 0);
    strbuf_free(&line);
    CHECK_NEAR(p.core, -0.02, 1e-15);
    CHECK_NEAR(p.speed_term, JUDGE_SPEED_TERM_CAP, 1e-12);
    CHECK_NEAR(p.combined, 2.0 + 0.02 - 0.25, 1e-12);
    /* and the other way: 1 token/s -> 4 B/s -> 0.05 log2(0.004) = -0.398 -> capped at -0.25 */
    judge_phase2_init(&p, &e);
    CHECK(judge_phase2_from_scorecard(&p, "{\"core\":0,\"decode_tokens_per_s\":1}") == 0);
    CHECK_NEAR(p.speed_term, -JUDGE_SPEED_TERM_CAP, 1e-12);

    /* missing parts: unavailable with the reason */
    judge_phase2_init(&p, &e);
    CHECK(judge_phase2_from_scorecard(&p, "{\"decode_tokens_per_s\":500}") == -1);
    CHECK(!p.available && strstr(p.reason, "CORE") != NULL && isnan(p.combined));
    judge_phase2_init(&p, &e);
    CHECK(judge_phase2_from_scorecard(&p, "{\"core\":0.3}") == -1 && strstr(p.reason, "decode") != NULL);
    /* one set of key names: other spellings are not guessed at */
    judge_phase2_init(&p, &e);
    CHECK(judge_phase2_from_scorecard(&p, "{\"core_score\":0.3,\"decode_tokens_per_s\":5}") == -1);
    judge_phase2_init(&p, &e);
    CHECK(judge_phase2_from_scorecard(&p, "garbage") == -1 && strstr(p.reason, "not a JSON") != NULL);
    bpb_result no_tokens = {.bpb = 2.0};   /* bytes and tokens 0: not said */
    judge_phase2_init(&p, &no_tokens);
    CHECK(judge_phase2_from_scorecard(&p, "{\"core\":0.3,\"decode_tokens_per_s\":5}") == -1);
    CHECK(strstr(p.reason, "bytes per token") != NULL);
    judge_phase2_unavailable(&p, "phase 2: %s", "not built");
    CHECK(strcmp(p.reason, "phase 2: not built") == 0);
    CHECK(strstr(judge_score_formula(2), "log2") != NULL && strstr(judge_score_formula(1), "bpb") != NULL);
}

static void test_curves(void)
{
    char path[] = "/tmp/test_judge_curves.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < 1000; i++) {
        fprintf(f, "{\"step\":%d,\"elapsed_s\":%g,\"train_loss\":%g,\"lr\":0.001}\n", i, i * 0.1, 5.0 - i * 0.001);
        if (i % 100 == 99)
            fprintf(f, "{\"step\":%d,\"elapsed_s\":%g,\"val_bpb_slice\":%g}\n", i, i * 0.1, 3.0 - i * 0.001);
    }
    fputs("not json at all\n{\"elapsed_s\":1}\n{\"elapsed_s\":null,\"train_loss\":3}\n", f);
    for (int i = 0; i < 70000; i++)
        fputc('x', f); /* an over-long line */
    fputs("\n{\"step\":1000,\"elapsed_s\":100,\"val_bpb\":1.5}", f); /* last line, no newline */
    fclose(f);
    judge_curves c;
    tempo_error err;
    CHECK(judge_curves_read(path, &c, &err) == 0);
    CHECK(c.train_loss.n == JUDGE_CURVE_MAX_POINTS);
    CHECK(c.val_bpb.n == 11);
    CHECK(c.lines_skipped == 4);
    /* thinning keeps the ends: the first bucket mean and the exact last point */
    CHECK_NEAR(c.train_loss.t[c.train_loss.n - 1], 99.9, 1e-9);
    CHECK_NEAR(c.train_loss.v[c.train_loss.n - 1], 4.001, 1e-9);
    CHECK(c.train_loss.t[0] < 0.5);
    CHECK_NEAR(c.val_bpb.v[10], 1.5, 0);
    strbuf js = {0};
    judge_curves_to_json(&c, &js);
    judge_curves back;
    CHECK(judge_curves_from_json(js.data, &back, &err) == 0);
    CHECK(back.train_loss.n == c.train_loss.n && back.val_bpb.n == c.val_bpb.n);
    CHECK(back.train_loss.v[7] == c.train_loss.v[7] && back.val_bpb.t[3] == c.val_bpb.t[3]);

    strbuf svg = {0};
    judge_svg_run_plot(&svg, &back, 100, 1.4, "1-1");
    CHECK(svg.data && strncmp(svg.data, "<svg", 4) == 0);
    CHECK(strstr(svg.data, "</svg>") != NULL);
    CHECK(strstr(svg.data, "<polyline") != NULL && strstr(svg.data, JUDGE_SVG_LOSS_COLOR) != NULL);
    CHECK(strstr(svg.data, JUDGE_SVG_BPB_COLOR) != NULL && strstr(svg.data, JUDGE_SVG_JUDGED_COLOR) != NULL);
    CHECK(strstr(svg.data, "<script") == NULL && strstr(svg.data, "nan") == NULL);
    strbuf_free(&svg);
    strbuf_free(&js);
    judge_curves_free(&back);
    judge_curves_free(&c);
    unlink(path);

    CHECK(judge_curves_read("/nonexistent/metrics.jsonl", &c, &err) == 0 && c.train_loss.n == 0);
    /* an empty plot is still a valid element */
    judge_svg_run_plot(&svg, &c, NAN, NAN, "x");
    CHECK(svg.data && strstr(svg.data, "no points") != NULL);
    strbuf_free(&svg);
    /* only the final evaluation (no val slices): the judged point is drawn inside the panel, and no
     * "no points" is written over it (issue 9) */
    for (int i = 0; i < 5; i++)
        judge_series_push(&c.train_loss, 8.0 * i, 5.0 - 0.5 * i);
    judge_svg_run_plot(&svg, &c, 40, 2.5, "y");
    CHECK(svg.data && strstr(svg.data, "no points") == NULL);
    const char *judged = svg.data ? strstr(svg.data, "<circle class=\"judged\"") : NULL;
    double cx = -1, cy = -1;
    CHECK(judged && sscanf(judged, "<circle class=\"judged\" cx=\"%lf\" cy=\"%lf\"", &cx, &cy) == 2);
    /* the val panel's plot area: x from 330 + 52 to 660 - 12, y from 24 to 220 - 36; the one time is its end */
    CHECK_MSG(cx > 382 + 10 && cx <= 648 && cy > 24 && cy < 184, "judged point at (%g, %g)", cx, cy);
    CHECK(strstr(judged ? judged : "", "judged val bpb 2.5000") != NULL);
    strbuf_free(&svg);
    judge_curves_free(&c);

    /* a submission's finite extremes (+-1e308: the range and its pad overflowed to inf) draw no NaN or
     * inf coordinate; the points stay inside the panel (found by tests/fuzz/fuzz_curves.c) */
    judge_series_push(&c.train_loss, 1e308, 1e308);
    judge_series_push(&c.train_loss, -1e308, -1e308);
    judge_series_push(&c.val_bpb, 0, 1.5);
    judge_series_push(&c.val_bpb, 1e300, -1e300);
    judge_svg_run_plot(&svg, &c, 1e308, 1e308, "z");
    CHECK_MSG(svg.data && !strstr(svg.data, "nan") && !strstr(svg.data, "inf"), "%s", svg.data ? svg.data : "");
    const char *pts = svg.data ? strstr(svg.data, "points=\"") : NULL;
    double x0 = -1, y0 = -1, x1 = -1, y1 = -1;
    CHECK(pts && sscanf(pts, "points=\"%lf,%lf %lf,%lf", &x0, &y0, &x1, &y1) == 4);
    CHECK_MSG(x0 >= 52 && x0 <= 318 && x1 >= 52 && x1 <= 318 && y0 >= 24 && y0 <= 184 && y1 >= 24 && y1 <= 184,
              "points (%g, %g) (%g, %g)", x0, y0, x1, y1);
    strbuf_free(&svg);
    judge_curves_free(&c);
}

static void test_thin_and_ticks(void)
{
    judge_series s = {0};
    for (int i = 0; i < 10; i++)
        judge_series_push(&s, i, 2 * i);
    judge_series_thin(&s, 4); /* 3 buckets of the first 9 points (3 each) + the last */
    CHECK(s.n == 4);
    CHECK_NEAR(s.t[0], 1, 1e-12);
    CHECK_NEAR(s.v[1], 8, 1e-12);
    CHECK_NEAR(s.t[2], 7, 1e-12);
    CHECK(s.t[3] == 9 && s.v[3] == 18);
    free(s.t);
    free(s.v);

    double t[8];
    int n = nice_ticks(0, 97, t, 8);
    CHECK(n == 5 && t[0] == 0 && t[1] == 20 && t[4] == 80);
    n = nice_ticks(2.31, 2.58, t, 8);
    CHECK(n >= 3 && n <= 7);
    for (int i = 0; i < n; i++)
        CHECK(t[i] >= 2.31 - 1e-9 && t[i] <= 2.58 + 1e-9);
    CHECK(nice_ticks(1, 1, t, 8) == 1);
    CHECK(nice_ticks(NAN, 1, t, 8) == 0);
}

int main(void)
{
    RUN(test_parse_eval);
    RUN(test_parse_run_result);
    RUN(test_phase2_formula);
    RUN(test_curves);
    RUN(test_thin_and_ticks);
    return test_summary("test_judge_score");
}
