/* test_plan_plot.c - `tempo plan --plot` (src/plan/plan_plot.c): the points
 * per chip and budget (skipping budgets too small for any plan), their
 * trend with the budget, the chip list from files and a folder, and the SVG
 * (well-formed, a polyline per chip and series, names escaped). The chips,
 * law and hybrid relation are made in memory (plan_fixture.h). */
#include "test.h"
#include "plan_fixture.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "plan/plan.h"
#include "plan/plan_plot.h"

static const char *law_text = "E = 1.0\nA = 10\nalpha = 0.3\nB = 20\nbeta = 0.25\nresidual_sd = 0.02\n"
                              "n_min = 1e5\nn_max = 1e7\nd_min = 1e5\nd_max = 1e7\nn_runs = 12\n"
                              "boot = 1.0 10 0.3 20 0.25\nboot = 1.1 10 0.3 20 0.25\nboot = 0.9 10 0.3 20 0.25\n";

/* a slow chip (0.2 TFLOP/s) whose name needs escaping in SVG */
static const char *slow_chip = "name = a<b&c\ntrain_dtype = fp32\npeak_tflops_fp32 = 0.2\nmemory_gb = 24\n"
                               "bandwidth_gbs = 17\nsram_mib = 32\ncores = 2\nlink_gbs = 5\n"
                               "eff_compute = 0.5\neff_memory = 0.5\ncall_overhead_us = 20\n";

typedef struct {
    plan_plot_chip chips[2];
    quality_law law;
    quality_hybrid hybrid;
    run_config base;
    plan_options o;
} fixture;

static void make_fixture(fixture *f)
{
    tempo_error err;
    memset(f, 0, sizeof *f);
    CHECK_MSG(parse(good_chip, &f->chips[0].profile, &err) == 0, "%s", err.msg);
    CHECK_MSG(parse(slow_chip, &f->chips[1].profile, &err) == 0, "%s", err.msg);
    CHECK(quality_law_parse(&f->law, law_text, strlen(law_text), "law.conf", &err) == 0);
    /* a count memory of order 5 that helps a weak transformer, built at 1 s per million tokens */
    f->hybrid = (quality_hybrid){.pivot = 2.1, .slope = 0.2};
    f->hybrid.limit[5] = 1.45;
    f->hybrid.build_s_per_mtok[5] = 1;
    f->hybrid.bytes_per_token[5] = 1;
    f->base = small_config();
    f->o = (plan_options){.ranks = 1, .corpus_tokens = 1e8, .vocab_size = 512, .allow_memory = 1};
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static void test_points(void)
{
    fixture f;
    make_fixture(&f);
    tempo_error err;
    double budgets[] = {1e-4, 60, 600, 3600}; /* the first too small for 50 steps on any chip */
    plan_plot_point p[16];
    int n = plan_plot_points(&f.base, f.chips, 2, &f.law, &f.hybrid, &f.o, budgets, 4, p, 16, &err);
    CHECK_MSG(n == 6, "n %d: %s", n, err.msg);
    for (int i = 0; i < n && n == 6; i++) {
        CHECK(p[i].chip == i / 3);                  /* chip 0's budgets, then chip 1's */
        CHECK(p[i].budget_s == budgets[1 + i % 3]); /* the too-small budget skipped */
        CHECK(p[i].bpb_lo <= p[i].bpb && p[i].bpb <= p[i].bpb_hi);
        if (p[i].memory_order > 0) /* the hybrid is never worse than its transformer */
            CHECK(p[i].bpb <= p[i].transformer_bpb + 1e-12);
        else
            CHECK_NEAR(p[i].bpb, p[i].transformer_bpb, 1e-12);
    }
    /* a point is the search's plan at that budget */
    plan_options o = f.o;
    o.budget_s = 600;
    plan_result r;
    CHECK(plan_search(&f.base, &f.chips[1].profile, &f.law, &f.hybrid, &o, &r, &err) == 0);
    CHECK_NEAR(p[4].bpb, r.best[0].bpb, 0);
    CHECK_NEAR(p[4].transformer_bpb, r.best[0].transformer_bpb, 0);
    CHECK(p[4].memory_order == r.best[0].cfg.memory_order && p[4].params == r.best[0].step.params);
    /* the fast chip predicts better than the slow one at every budget */
    for (int i = 0; i < 3 && n == 6; i++)
        CHECK(p[i].bpb < p[3 + i].bpb);
    /* the slow chip uses the count memory at some budget (the family differs from the transformer) */
    CHECK(n == 6 && (p[3].memory_order > 0 || p[4].memory_order > 0 || p[5].memory_order > 0));
    /* a chip with no plan at any budget: an error naming it; too few output slots: an error */
    double tiny[] = {1e-4, 1e-3};
    CHECK(plan_plot_points(&f.base, f.chips, 2, &f.law, &f.hybrid, &f.o, tiny, 2, p, 16, &err) == -1);
    CHECK(strstr(err.msg, "too small") && strstr(err.msg, "test-chip"));
    CHECK(plan_plot_points(&f.base, f.chips, 2, &f.law, &f.hybrid, &f.o, budgets, 4, p, 5, &err) == -1);
}

/* More budget never predicts worse: every candidate's steps grow with the
 * budget and the law falls with tokens, and the hybrid relation rises with
 * its transformer's bpb, so the best of a growing set can only fall. */
static void test_monotone_in_budget(void)
{
    fixture f;
    make_fixture(&f);
    tempo_error err;
    double budgets[PLAN_PLOT_MAX_BUDGETS];
    int nb = plan_plot_default_budgets(budgets, PLAN_PLOT_MAX_BUDGETS);
    CHECK(nb == 10 && budgets[0] == 60 && budgets[3] == 600 && budgets[9] == 86400);
    plan_plot_point p[2 * PLAN_PLOT_MAX_BUDGETS];
    int n = plan_plot_points(&f.base, f.chips, 2, &f.law, &f.hybrid, &f.o, budgets, nb, p, 2 * nb, &err);
    CHECK_MSG(n == 2 * nb, "n %d: %s", n, err.msg);
    for (int i = 1; i < n; i++)
        if (p[i].chip == p[i - 1].chip) {
            CHECK(p[i].budget_s > p[i - 1].budget_s);
            CHECK_MSG(p[i].bpb <= p[i - 1].bpb + 1e-9, "%s at %g s: %.6f after %.6f",
                      f.chips[p[i].chip].profile.name, p[i].budget_s, p[i].bpb, p[i - 1].bpb);
        }
    /* and it does fall over the range (the law is not flat) */
    CHECK(n == 2 * nb && p[nb - 1].bpb < p[0].bpb - 0.05 && p[2 * nb - 1].bpb < p[nb].bpb - 0.05);
}

static void test_svg(void)
{
    fixture f;
    make_fixture(&f);
    tempo_error err;
    double budgets[PLAN_PLOT_MAX_BUDGETS];
    int nb = plan_plot_default_budgets(budgets, PLAN_PLOT_MAX_BUDGETS);
    plan_plot_point p[2 * PLAN_PLOT_MAX_BUDGETS];
    int n = plan_plot_points(&f.base, f.chips, 2, &f.law, &f.hybrid, &f.o, budgets, nb, p, 2 * nb, &err);
    strbuf s = {0};
    plan_plot_svg(f.chips, 2, p, n, 600, &s);
    CHECK(s.data && !strncmp(s.data, "<svg ", 5));
    CHECK(s.len > 7 && !strcmp(s.data + s.len - 7, "</svg>\n"));
    CHECK(count(s.data, "<svg") == 1 && count(s.data, "</svg>") == 1);
    CHECK(count(s.data, "<polyline") == 2 * 2);                  /* per chip: the plan and its transformer */
    CHECK(count(s.data, "<polyline class=\"plan\"") == 2);
    CHECK(count(s.data, "<polyline class=\"transformer\"") == 2);
    CHECK(count(s.data, "stroke-dasharray=\"6 4\" points=") == 2); /* the transformer lines dashed */
    CHECK(count(s.data, "<polygon class=\"band\"") == 2);
    CHECK(count(s.data, "<circle") == n);
    CHECK(count(s.data, "<g") == count(s.data, "</g>"));
    CHECK(count(s.data, "<text") == count(s.data, "</text>"));
    CHECK(count(s.data, "<title>") == count(s.data, "</title>"));
    CHECK(strstr(s.data, "a&lt;b&amp;c") && !strstr(s.data, "a<b&c") && strstr(s.data, "test-chip"));
    CHECK(strstr(s.data, "not a measurement") && strstr(s.data, "configs/scaling/"));
    CHECK(strstr(s.data, ">1m</text>") && strstr(s.data, ">10m</text>") && strstr(s.data, ">1h</text>") &&
          strstr(s.data, ">4h</text>") && strstr(s.data, ">24h</text>"));
    CHECK(strstr(s.data, "--budget 10m"));
    CHECK(!strstr(s.data, "<script") && !strstr(s.data, "href") && !strstr(s.data, "url("));
    /* every number drawn is finite */
    CHECK(!strstr(s.data, "nan") && !strstr(s.data, "inf"));
    strbuf_free(&s);
    /* no mark without a budget */
    plan_plot_svg(f.chips, 2, p, n, 0, &s);
    CHECK(s.data && !strstr(s.data, "--budget"));
    strbuf_free(&s);
}

static void test_budget_labels(void)
{
    char b[32];
    double s[] = {30, 60, 90, 600, 3600, 14400, 86400, 7 * 86400};
    const char *want[] = {"30s", "1m", "1.5m", "10m", "1h", "4h", "24h", "7d"};
    for (int i = 0; i < 8; i++) {
        plan_plot_budget_label(s[i], b, sizeof b);
        CHECK_MSG(!strcmp(b, want[i]), "%g s: '%s', want '%s'", s[i], b, want[i]);
    }
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    tempo_error err;
    path_join(path, sizeof path, dir, name);
    CHECK_MSG(file_write_atomic(path, text, strlen(text), &err) == 0, "%s", err.msg);
}

static void test_load_chips(void)
{
    char dir[] = "/tmp/tempo-test-plan-plot.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    plan_plot_chip c[PLAN_PLOT_MAX_CHIPS];
    tempo_error err;
    CHECK(plan_plot_load_chips(NULL, dir, c, PLAN_PLOT_MAX_CHIPS, &err) == -1 && strstr(err.msg, "no chip files"));
    write_file(dir, "z-slow.conf", slow_chip);
    write_file(dir, "b-fast.conf", good_chip);
    write_file(dir, "README.md", "not a chip\n");
    /* the folder: every .conf, sorted by file name */
    int n = plan_plot_load_chips(NULL, dir, c, PLAN_PLOT_MAX_CHIPS, &err);
    CHECK_MSG(n == 2, "%d: %s", n, err.msg);
    CHECK(n == 2 && !strcmp(c[0].profile.name, "test-chip") && !strcmp(c[1].profile.name, "a<b&c"));
    CHECK(n == 2 && strstr(c[0].path, "b-fast.conf"));
    CHECK(plan_plot_load_chips("", dir, c, 1, &err) == -1 && strstr(err.msg, "more than"));
    /* a comma list, in its order */
    char list[2200];
    snprintf(list, sizeof list, "%s/z-slow.conf,%s/b-fast.conf", dir, dir);
    n = plan_plot_load_chips(list, dir, c, PLAN_PLOT_MAX_CHIPS, &err);
    CHECK(n == 2 && !strcmp(c[0].profile.name, "a<b&c") && !strcmp(c[1].profile.name, "test-chip"));
    /* errors: the same chip twice, an empty name, a bad chip file (its own message) */
    snprintf(list, sizeof list, "%s/b-fast.conf,%s/b-fast.conf", dir, dir);
    CHECK(plan_plot_load_chips(list, dir, c, PLAN_PLOT_MAX_CHIPS, &err) == -1 && strstr(err.msg, "two chips named"));
    snprintf(list, sizeof list, "%s/b-fast.conf,", dir);
    CHECK(plan_plot_load_chips(list, dir, c, PLAN_PLOT_MAX_CHIPS, &err) == -1 && strstr(err.msg, "empty"));
    write_file(dir, "c-bad.conf", "name = bad\n");
    CHECK(plan_plot_load_chips(NULL, dir, c, PLAN_PLOT_MAX_CHIPS, &err) == -1 && strstr(err.msg, "c-bad.conf") &&
          err.code == 2);
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/none", dir);
    CHECK(plan_plot_load_chips(NULL, sub, c, PLAN_PLOT_MAX_CHIPS, &err) == -1 && strstr(err.msg, "none"));
    CHECK(dir_remove_tree(dir, &err) == 0);
}

int main(void)
{
    RUN(test_points);
    RUN(test_monotone_in_budget);
    RUN(test_svg);
    RUN(test_budget_labels);
    RUN(test_load_chips);
    return test_summary("test_plan_plot");
}
