/* test_plan.c - the planner's quality model and search (src/plan/quality.c,
 * plan.c): the law and hybrid readers and their evaluation, the ranking, the
 * preset text, and the search's bad-input errors. */
#include "test.h"
#include "plan_fixture.h"

#include <math.h>
#include <string.h>

#include "plan/chip.h"
#include "plan/plan.h"
#include "plan/quality.h"

static const char *law_text = "E = 1.0\nA = 10\nalpha = 0.3\nB = 20\nbeta = 0.25\nresidual_sd = 0.02\n"
                              "n_min = 1e5\nn_max = 1e7\nd_min = 1e5\nd_max = 1e7\nn_runs = 12\n"
                              "boot = 1.0 10 0.3 20 0.25\nboot = 1.1 10 0.3 20 0.25\nboot = 0.9 10 0.3 20 0.25\n";

static void test_quality(void)
{
    quality_law q;
    tempo_error err;
    CHECK(quality_law_parse(&q, law_text, strlen(law_text), "law.conf", &err) == 0);
    CHECK(q.n_boot == 3 && q.n_runs == 12);
    double want = 1.0 + 10 / pow(1e6, 0.3) + 20 / pow(4e6, 0.25);
    CHECK_NEAR(quality_bpb(&q.fit, 1e6, 4e6), want, 1e-12);
    double b, lo, hi;
    quality_predict(&q, 1e6, 4e6, &b, &lo, &hi);
    CHECK_NEAR(b, want, 1e-12);
    CHECK(lo <= b - 0.1 && hi >= b + 0.1); /* the replicates' E spread (+-0.1) and the residuals */
    char broken[1024];
    snprintf(broken, sizeof broken, "%s", law_text);
    *strstr(broken, "beta") = 'X';
    CHECK(quality_law_parse(&q, broken, strlen(broken), "law.conf", &err) == -1 && strstr(err.msg, "law.conf:5"));
    const char *no_e = "A = 1\n";
    CHECK(quality_law_parse(&q, no_e, strlen(no_e), "law.conf", &err) == -1 && strstr(err.msg, "missing E"));
    quality_hybrid h = {.pivot = 2.1, .slope = 0.2};
    h.limit[5] = 1.65;
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 1.9), 1.65 - 0.2 * 0.2, 1e-12);
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 3.0), 1.65, 1e-12);      /* a useless transformer */
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 1.0), 1.0, 1e-12);       /* never worse than the transformer */
    CHECK_NEAR(quality_hybrid_bpb(&h, 4, 1.9), 1.9, 1e-12);       /* order not measured */
}

static void test_effective_tokens(void)
{
    CHECK_NEAR(plan_effective_tokens(5e6, 1e7), 5e6, 0);              /* one epoch or less: all fresh */
    CHECK_NEAR(plan_effective_tokens(2e7, 1e7), 1e7 * (1 + 15.4 * (1 - exp(-1 / 15.4))), 1);
    CHECK(plan_effective_tokens(2e7, 1e7) < 2e7);                     /* a second epoch is worth less */
    CHECK(plan_effective_tokens(1e12, 1e7) < 16.4 * 1e7 + 1);         /* and it saturates */
    CHECK(plan_effective_tokens(4e7, 1e7) > plan_effective_tokens(3e7, 1e7));
}

static void test_search(void)
{
    chip_profile chip;
    quality_law q;
    tempo_error err;
    CHECK(parse(good_chip, &chip, &err) == 0);
    CHECK(quality_law_parse(&q, law_text, strlen(law_text), "law.conf", &err) == 0);
    quality_hybrid h = {.pivot = 2.1, .slope = 0.2};
    run_config base = small_config();
    plan_options o = {.budget_s = 60, .ranks = 1, .corpus_tokens = 1e8, .vocab_size = 512};
    plan_result r;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    CHECK(r.n_keep == PLAN_MAX_KEEP);
    for (int i = 1; i < r.n_keep; i++) {
        CHECK(r.best[i - 1].bpb <= r.best[i].bpb);
        for (int j = 0; j < i; j++) /* the runners-up are other shapes */
            CHECK(r.best[i].cfg.model.d_model != r.best[j].cfg.model.d_model ||
                  r.best[i].cfg.model.n_layers != r.best[j].cfg.model.n_layers ||
                  r.best[i].cfg.memory_order != r.best[j].cfg.memory_order);
    }
    const plan_candidate *b = &r.best[0];
    CHECK(b->steps >= PLAN_MIN_STEPS && b->bpb_lo <= b->bpb && b->bpb <= b->bpb_hi);
    CHECK_NEAR(b->bpb, quality_bpb(&q.fit, b->step.params, b->tokens_effective), 1e-12);
    /* the preset text reads back as the same model */
    strbuf text = {0};
    plan_preset_text(b, &chip, &o, &text);
    CHECK(strstr(text.data, "d_model = ") && strstr(text.data, "memory_order = 0"));
    strbuf_free(&text);
    o.budget_s = 1e-4;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == -1 && strstr(err.msg, "too small"));
    o.budget_s = 60;
    o.memory_gb = 1e-6;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == -1 && strstr(err.msg, "memory"));
}

int main(void)
{
    RUN(test_quality);
    RUN(test_effective_tokens);
    RUN(test_search);
    return test_summary("test_plan");
}
