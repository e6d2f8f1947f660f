/* test_plan.c - the planner's quality model and search (src/plan/quality.c,
 * plan.c): the law and hybrid readers and their evaluation, the ranking, the
 * preset text, the search's bad-input errors, one shape's prediction, the
 * neighbours --validate trains and its report (plan_validate.c; the runs
 * themselves are tested end to end in tests/e2e/plan_validate.sh). */
#include "test.h"
#include "plan_fixture.h"

#include <math.h>
#include <string.h>

#include "plan/calibrate_gpu.h"
#include "plan/chip.h"
#include "core/json.h"
#include "plan/plan.h"
#include "plan/plan_validate.h"
#include "plan/quality.h"

static const char *law_text = "E = 1.0\nA = 10\nalpha = 0.3\nB = 20\nbeta = 0.25\nresidual_sd = 0.02\n"
                              "n_min = 1e5\nn_max = 1e7\nd_min = 1e5\nd_max = 1e7\nn_runs = 12\n"
                              "boot = 1.0 10 0.3 20 0.25\nboot = 1.1 10 0.3 20 0.25\nboot = 0.9 10 0.3 20 0.25\n";

/* Each {lines, message} appended to law_text is refused with an error
 * naming the file and containing the message. */
static void check_law_refusals(const char *const bad[][2], size_t n)
{
    static quality_law q;
    char text[2048];
    tempo_error err;
    for (size_t i = 0; i < n; i++) {
        snprintf(text, sizeof text, "%s%s", law_text, bad[i][0]);
        CHECK_MSG(quality_law_parse(&q, text, strlen(text), "law.conf", &err) == -1 && strstr(err.msg, bad[i][1]) &&
                      strstr(err.msg, "law.conf"), "case %zu: %s", i, err.msg);
    }
}

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
    CHECK(q.batch_crit == 0 && quality_tokens_effective(&q, 1e6, 1e6, 4096) == 1e6); /* no batch term */
    char with_batch[1024];
    snprintf(with_batch, sizeof with_batch, "%sbatch_crit = 2048\n", law_text);
    CHECK(quality_law_parse(&q, with_batch, strlen(with_batch), "law.conf", &err) == 0 && q.batch_crit == 2048);
    CHECK_NEAR(quality_tokens_effective(&q, 1e6, 3e6, 4096), 1e6, 1e-6); /* 3e6 / (1 + 2) */
    CHECK_NEAR(quality_tokens_effective(&q, 1e6, 3e6, 0), 3e6, 1e-6);
    /* the critical batch grows as the loss falls (Kaplan et al.'s exponent) */
    snprintf(with_batch, sizeof with_batch, "%sbatch_crit = 2048\nbatch_crit_bpb = 2\nbatch_crit_exponent = 4\n",
             law_text);
    CHECK(quality_law_parse(&q, with_batch, strlen(with_batch), "law.conf", &err) == 0);
    CHECK_NEAR(quality_batch_crit(&q, 2), 2048, 1e-9);
    CHECK_NEAR(quality_batch_crit(&q, 1), 2048 * 16, 1e-9);
    double at = quality_bpb(&q.fit, 1e6, 3e6), bc = 2048 * pow(2 / at, 4);
    CHECK_NEAR(quality_tokens_effective(&q, 1e6, 3e6, 4096), 3e6 / (1 + 4096 / bc), 1e-6);
    snprintf(with_batch, sizeof with_batch, "%sbatch_crit_exponent = 4\n", law_text);
    CHECK(quality_law_parse(&q, with_batch, strlen(with_batch), "law.conf", &err) == -1 &&
          strstr(err.msg, "without batch_crit"));
    snprintf(with_batch, sizeof with_batch, "%sbatch_crit = 2048\n", law_text);
    CHECK(quality_law_parse(&q, with_batch, strlen(with_batch), "law.conf", &err) == 0);
    snprintf(with_batch, sizeof with_batch, "%sbatch_crit = 2048\nbatch_crit = 4096\n", law_text);
    CHECK(quality_law_parse(&q, with_batch, strlen(with_batch), "law.conf", &err) == -1 &&
          strstr(err.msg, "batch_crit given twice"));
    snprintf(with_batch, sizeof with_batch, "%sbatch_crit = 0\n", law_text);
    CHECK(quality_law_parse(&q, with_batch, strlen(with_batch), "law.conf", &err) == -1 &&
          strstr(err.msg, "batch_crit"));
    const char *no_e = "A = 1\n";
    CHECK(quality_law_parse(&q, no_e, strlen(no_e), "law.conf", &err) == -1 && strstr(err.msg, "missing E"));
    quality_hybrid h = {.pivot = 2.1, .slope = 0.2};
    h.limit[5] = 1.65;
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 1.9), 1.65 - 0.2 * 0.2, 1e-12);
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 3.0), 1.65, 1e-12);      /* a useless transformer */
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 1.0), 1.0, 1e-12);       /* never worse than the transformer */
    CHECK_NEAR(quality_hybrid_bpb(&h, 4, 1.9), 1.9, 1e-12);       /* order not measured */
    h.calibration_gain = 0.015;                                    /* the calibration stage's share */
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 1.9), 1.65 - 0.2 * 0.2 - 0.015, 1e-12);
    CHECK_NEAR(quality_hybrid_bpb(&h, 4, 1.9), 1.9, 1e-12);
    h.calibration_gain = 0;
    /* the curve: x = pivot - t enters squared too, nothing above the pivot */
    h.curve = 0.25;
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 1.9), 1.65 - 0.2 * 0.2 - 0.25 * 0.2 * 0.2, 1e-12);
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 1.5), 1.65 - 0.2 * 0.6 - 0.25 * 0.6 * 0.6, 1e-12);
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 2.5), 1.65, 1e-12);
    CHECK_NEAR(quality_hybrid_bpb(&h, 5, 1.2), 1.2, 1e-12);       /* still never worse than the transformer */
    h.curve = 0;
    const char *ht = "pivot = 2.1\nslope = 0.2\ncurve = 0.25\nresidual_sd = 0.01\nlimit.5 = 1.65\nbuild_s_per_mtok.5 = 0.7\n"
                     "calibration_gain = 0.02\n"
                     "bytes_per_token.5 = 60\nsave_s_per_gb = 7\nsave_drag = 0.5  # a comment\nvocab = 4097\n";
    CHECK(quality_hybrid_parse(&h, ht, strlen(ht), "h.conf", &err) == 0);
    CHECK(h.pivot == 2.1 && h.curve == 0.25 && h.residual_sd == 0.01 && h.calibration_gain == 0.02 && h.save_s_per_gb == 7 && h.save_drag == 0.5 &&
          h.vocab == 4097 &&
          h.limit[5] == 1.65 && h.build_s_per_mtok[5] == 0.7 && h.bytes_per_token[5] == 60 && h.limit[4] == 0);
    const char *bad_drag = "pivot = 2\nsave_drag = 1\n";
    CHECK(quality_hybrid_parse(&h, bad_drag, strlen(bad_drag), "h.conf", &err) == -1 &&
          strstr(err.msg, "h.conf:2") && strstr(err.msg, "save_drag"));
    const char *bad_vocab = "pivot = 2\nvocab = 40.5\n";
    CHECK(quality_hybrid_parse(&h, bad_vocab, strlen(bad_vocab), "h.conf", &err) == -1 &&
          strstr(err.msg, "h.conf:2") && strstr(err.msg, "whole number"));
    const char *bad_curve = "pivot = 2\ncurve = -0.1\n";   /* a negative curve would bend the mixture back up */
    CHECK(quality_hybrid_parse(&h, bad_curve, strlen(bad_curve), "h.conf", &err) == -1 &&
          strstr(err.msg, "h.conf:2") && strstr(err.msg, "curve"));
    const char *no_pivot = "slope = 0.2\n";
    CHECK(quality_hybrid_parse(&h, no_pivot, strlen(no_pivot), "h.conf", &err) == -1 &&
          strstr(err.msg, "missing pivot"));
}

static void test_effective_tokens(void)
{
    CHECK_NEAR(plan_effective_tokens(5e6, 1e7), 5e6, 0);              /* one epoch or less: all fresh */
    CHECK_NEAR(plan_effective_tokens(2e7, 1e7), 1e7 * (1 + 15.4 * (1 - exp(-1 / 15.4))), 1);
    CHECK(plan_effective_tokens(2e7, 1e7) < 2e7);                     /* a second epoch is worth less */
    CHECK(plan_effective_tokens(1e12, 1e7) < 16.4 * 1e7 + 1);         /* and it saturates */
    CHECK(plan_effective_tokens(4e7, 1e7) > plan_effective_tokens(3e7, 1e7));
}

/* law_text with `extra` lines appended, parsed into q (which must succeed). */
static void law_with(quality_law *q, const char *extra)
{
    char text[2048];
    tempo_error err;
    snprintf(text, sizeof text, "%s%s", law_text, extra);
    CHECK_MSG(quality_law_parse(q, text, strlen(text), "law.conf", &err) == 0, "%s", err.msg);
}

/* The search tests' inputs: the fixture chip, law_text, a hybrid relation
 * with no measured order, and the small config. */
static void search_inputs(chip_profile *chip, quality_law *q, quality_hybrid *h, run_config *base)
{
    tempo_error err;
    CHECK(parse(good_chip, chip, &err) == 0);
    CHECK(quality_law_parse(q, law_text, strlen(law_text), "law.conf", &err) == 0);
    *h = (quality_hybrid){.pivot = 2.1, .slope = 0.2};
    *base = small_config();
}

static void test_search(void)
{
    chip_profile chip;
    quality_law q;
    quality_hybrid h;
    run_config base;
    tempo_error err;
    search_inputs(&chip, &q, &h, &base);
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

/* The law's vocabulary and learning-rate terms: read and checked, counted in
 * text, and searched: the plan may take another vocabulary (its corpus in
 * its own tokens) and a learning-rate multiplier, and its preset says so. */
static void test_vocab_and_lr(void)
{
    char text[2048];
    snprintf(text, sizeof text, "%svocab_ref = 512\nvocab.512.bytes_per_token = 3\nvocab.512.offset = 0\n"
             "vocab.1024.bytes_per_token = 4\nvocab.1024.offset = -0.05\nvocab.1024.runs = 2\n"
             "lr_b = -0.1\nlr_c = 0.02\nlr_mult_min = 0.5\nlr_mult_max = 2\n", law_text);
    quality_law q;
    tempo_error err;
    CHECK_MSG(quality_law_parse(&q, text, strlen(text), "law.conf", &err) == 0, "%s", err.msg);
    CHECK(q.n_vocabs == 2 && q.vocab_ref == 512 && quality_vocab_find(&q, 1024)->n_runs == 2);
    CHECK_NEAR(quality_tokens_in_law(&q, 1024, 3e6), 4e6, 1e-6);   /* text, in the law's tokens */
    CHECK_NEAR(quality_tokens_in_law(&q, 512, 3e6), 3e6, 0);
    CHECK_NEAR(quality_tokens_in_law(&q, 2048, 3e6), 3e6, 0);        /* unknown: as given */
    CHECK_NEAR(quality_correction(&q, 512, 1, 100, 0, 0), 0, 0);
    CHECK_NEAR(quality_correction(&q, 1024, 2, 100, 0, 0), -0.05 - 0.1 + 0.02, 1e-12);
    CHECK_NEAR(quality_correction(&q, 512, 0.5, 100, 0, 0), 0.1 + 0.02, 1e-12);
    CHECK(quality_lr_trusted(&q, 1) && quality_lr_trusted(&q, 1e9));   /* no step range: any */
    /* the slope in steps: b + b_steps log2(S / S_ref) */
    snprintf(text, sizeof text, "%slr_b = -0.1\nlr_b_steps = 0.05\nlr_steps_ref = 300\nlr_c = 0.02\n"
             "lr_mult_min = 0.5\nlr_mult_max = 2\nlr_steps_min = 150\nlr_steps_max = 400\nlr_sd = 0.03\n", law_text);
    CHECK(quality_law_parse(&q, text, strlen(text), "law.conf", &err) == 0);
    CHECK_NEAR(quality_correction(&q, 512, 2, 600, 0, 0), -0.1 + 0.05 + 0.02, 1e-12);
    CHECK(quality_lr_trusted(&q, 150) && quality_lr_trusted(&q, 400) && !quality_lr_trusted(&q, 401) &&
          !quality_lr_trusted(&q, 149));
    const char *bad[][2] = {
        {"vocab.1024.bytes_per_token = 4\n", "without vocab_ref"},
        {"vocab_ref = 512\nvocab.1024.bytes_per_token = 4\n", "vocab_ref 512 has no"},
        {"vocab_ref = 512\nvocab.512.bytes_per_token = 3\nvocab.512.offset = 0.1\n", "must be 0"},
        {"vocab_ref = 512\nvocab.512.bytes_per_token = 3\nvocab.1024.offset = 0.1\n", "vocab.1024.bytes_per_token missing"},
        {"vocab.x.offset = 1\n", "expected vocab.V"},
        {"vocab.512.size = 1\n", "expected vocab.V"},
        {"lr_b = 0.1\n", "lr_mult_min"},
        {"lr_mult_min = 2\n", "lr_mult_min"},
        {"lr_b_steps = 0.1\n", "lr_steps_ref"},
        {"lr_steps_min = 500\nlr_steps_max = 400\n", "lr_steps_min > lr_steps_max"},
    };
    check_law_refusals(bad, sizeof bad / sizeof bad[0]);
    snprintf(text, sizeof text, "%svocab_ref = 512\nvocab.512.bytes_per_token = 3\n"
             "vocab.1024.bytes_per_token = 4\nvocab.1024.offset = -0.05\n"
             "lr_b = -0.1\nlr_c = 0.02\nlr_mult_min = 0.5\nlr_mult_max = 2\n", law_text);
    CHECK(quality_law_parse(&q, text, strlen(text), "law.conf", &err) == 0);
    chip_profile chip;
    quality_law unused;
    quality_hybrid h;
    run_config base;
    search_inputs(&chip, &unused, &h, &base);
    plan_options o = {.budget_s = 60, .ranks = 1, .corpus_tokens = 1e8, .vocab_size = 512, .search_vocab = 1};
    plan_result r;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    int seen[2] = {0, 0};
    for (int i = 0; i < r.n_keep; i++) {
        const plan_candidate *c = &r.best[i];
        int v = c->cfg.model.vocab_size;
        CHECK(v == 512 || v == 1024);
        seen[v == 1024]++;
        /* corpus and tokens as text; the prediction is the law's plus its terms */
        CHECK_NEAR(c->corpus_tokens, v == 1024 ? 0.75e8 : 1e8, 1e-3);
        CHECK_NEAR(c->correction, quality_correction(&q, v, c->lr_mult, c->steps, (double)c->cfg.model.d_model / c->cfg.model.n_layers,
                                                       c->cfg.model.d_model), 1e-12);
        double law_at = quality_bpb(&q.fit, c->step.params, c->tokens_effective) + c->correction;
        CHECK_NEAR(c->transformer_bpb, law_at, 1e-12);
        CHECK(c->lr_mult >= 0.5 && c->lr_mult <= 2);
    }
    CHECK(seen[1] > 0);   /* the offset of -0.05 makes the larger vocabulary win here */
    const plan_candidate *b = &r.best[0];
    /* lr_b < 0 with a small lr_c: the largest multiplier measured */
    CHECK_NEAR(b->lr_mult, 2, 1e-12);
    CHECK_NEAR(b->cfg.optim.lr_muon, 2 * base.optim.lr_muon, 1e-6);
    strbuf pt = {0};
    plan_preset_text(b, &chip, &o, &pt);
    char want[64];
    snprintf(want, sizeof want, "prepare --vocab %d", b->cfg.model.vocab_size - 1);
    CHECK_MSG(strstr(pt.data, want) != NULL, "%s", pt.data);
    strbuf_free(&pt);
    /* --vocab / --data fix the vocabulary */
    o.search_vocab = 0;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    for (int i = 0; i < r.n_keep; i++)
        CHECK(r.best[i].cfg.model.vocab_size == 512);
    /* learning rates measured only on runs shorter than any candidate: the base's rates */
    snprintf(text, sizeof text, "%svocab_ref = 512\nvocab.512.bytes_per_token = 3\n"
             "lr_b = -0.1\nlr_c = 0.02\nlr_mult_min = 0.5\nlr_mult_max = 2\nlr_steps_min = 1\nlr_steps_max = 10\n",
             law_text);
    CHECK(quality_law_parse(&q, text, strlen(text), "law.conf", &err) == 0);
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    for (int i = 0; i < r.n_keep; i++)
        CHECK(r.best[i].lr_mult == 1);
    /* a law without the terms: one vocabulary, learning rates as the base's */
    o.search_vocab = 1;
    CHECK(plan_search(&base, &chip, &unused, &h, &o, &r, &err) == 0);
    for (int i = 0; i < r.n_keep; i++)
        CHECK(r.best[i].cfg.model.vocab_size == 512 && r.best[i].lr_mult == 1 && r.best[i].correction == 0);
}

/* plan_predict on a candidate's own shape gives the candidate back; the
 * neighbours are one step away in width or depth; --validate's rows and
 * report (with made-up measurements) say the targets right. */
static void test_predict_and_neighbours(void)
{
    chip_profile chip;
    quality_law q;
    quality_hybrid h;
    run_config base;
    tempo_error err;
    search_inputs(&chip, &q, &h, &base);
    plan_options o = {.budget_s = 60, .ranks = 2, .corpus_tokens = 1e8, .vocab_size = 512};
    plan_result r;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    for (int i = 0; i < r.n_keep; i++) {
        plan_shape s;
        plan_candidate c;
        plan_verdict v;
        plan_shape_of(&r.best[i], o.ranks, &s);
        CHECK(plan_predict(&base, &chip, &q, &h, &o, &s, &c, &v, &err) == 1 && v == PLAN_OK);
        CHECK(c.bpb == r.best[i].bpb && c.steps == r.best[i].steps && c.cfg.batch_size == r.best[i].cfg.batch_size);
        /* a memory whose whole build is over the trainer's share is planned whole: its preset says share 0 */
        int over = c.cfg.memory_order > 0 && c.memory_build_s > base.memory_budget_share * o.budget_s;
        CHECK_MSG(c.cfg.memory_budget_share == (over ? 0 : base.memory_budget_share), "build %.1f s, share %.2f",
                  c.memory_build_s, c.cfg.memory_budget_share);
    }
    /* one that is over it: a 60 s budget, half of it 30 s, an order-5 build of 1e8 tokens */
    {
        plan_shape s;
        plan_candidate c;
        plan_verdict v;
        plan_options big = o;
        big.ranks = 1;
        plan_shape_of(&r.best[0], 1, &s);
        s.memory_order = 5;
        h.build_s_per_mtok[5] = 0.31;  /* 31 s: over */
        h.limit[5] = h.limit[5] > 0 ? h.limit[5] : 1.6;
        if (plan_predict(&base, &chip, &q, &h, &big, &s, &c, &v, &err) == 1) {
            CHECK_MSG(c.memory_build_s > 0.5 * big.budget_s && c.cfg.memory_budget_share == 0, "build %.2f s, share %.2f, order %d", c.memory_build_s, c.cfg.memory_budget_share, c.cfg.memory_order);
        } else {
            CHECK_MSG(0, "an order-5 candidate was refused: verdict %d", (int)v);
        }
    }
    plan_shape bad = {.d_model = 100, .n_layers = 1, .head_dim = 32, .context = 128, .batch_tokens = 4096};
    plan_candidate c;
    plan_verdict v;
    CHECK(plan_predict(&base, &chip, &q, &h, &o, &bad, &c, &v, &err) == 0 && v == PLAN_NOT_A_CONFIG);
    bad.d_model = 128;
    bad.batch_tokens = 64; /* below one context */
    CHECK(plan_predict(&base, &chip, &q, &h, &o, &bad, &c, &v, &err) == 0 && v == PLAN_NOT_A_CONFIG);
    o.budget_s = 1e-3;
    bad.batch_tokens = 4096;
    CHECK(plan_predict(&base, &chip, &q, &h, &o, &bad, &c, &v, &err) == 0 && v == PLAN_TOO_FEW_STEPS);
    o.budget_s = 60;

    /* a count memory: its build and its file's write come out of the budget; the
     * hybrid parts are the defaults' (cpu-default's), not the base preset's */
    quality_hybrid hm = {.pivot = 2.1, .slope = 0.2, .residual_sd = 0.01, .save_s_per_gb = 7, .save_drag = 0.5};
    hm.limit[5] = 1.65;
    hm.build_s_per_mtok[5] = 0.1;
    hm.bytes_per_token[5] = 60;
    run_config transformer_base = base;
    transformer_base.mixer_lr = 0.02f;
    transformer_base.cache_order = 0;
    plan_options om = {.budget_s = 600, .ranks = 1, .corpus_tokens = 1e7, .vocab_size = 512, .allow_memory = 1};
    plan_shape ms = {.d_model = 128, .n_layers = 2, .head_dim = 64, .context = 128, .batch_tokens = 4096,
                     .memory_order = 5};
    CHECK(plan_predict(&transformer_base, &chip, &q, &hm, &om, &ms, &c, &v, &err) == 1 && v == PLAN_OK);
    run_config defaults;
    run_config_defaults(&defaults);
    CHECK(c.cfg.mixer_lr == defaults.mixer_lr && c.cfg.cache_order == defaults.cache_order && c.cfg.cache_order > 0);
    CHECK_NEAR(c.memory_build_s, 0.1 * 10, 1e-9);
    CHECK_NEAR(c.memory_save_lost_s, 7 * 1e7 * 60 / 1e9 * 0.5, 1e-9);
    CHECK_NEAR(c.train_s, 600 - 1 - 2.1, 1e-9);
    CHECK(c.tokens_effective == c.tokens_fresh); /* no batch term */
    CHECK(c.tokens_fresh == plan_effective_tokens(c.tokens_seen, om.corpus_tokens));
    quality_law qb;
    char lb[1024];
    snprintf(lb, sizeof lb, "%sbatch_crit = 1024\n", law_text);
    CHECK(quality_law_parse(&qb, lb, strlen(lb), "law.conf", &err) == 0);
    plan_candidate cb;
    CHECK(plan_predict(&transformer_base, &chip, &qb, &hm, &om, &ms, &cb, &v, &err) == 1);
    CHECK_NEAR(cb.tokens_effective, cb.tokens_fresh / (1 + 4096.0 / 1024), 1e-6); /* no exponent: fixed */
    CHECK(cb.transformer_bpb > c.transformer_bpb); /* fewer tokens count: a worse prediction */
    plan_interval(&q, &hm, &c);
    double tlo = c.transformer_lo, thi = c.transformer_hi;
    CHECK_NEAR(c.bpb_lo, quality_hybrid_bpb(&hm, 5, tlo) - 1.645 * 0.01, 1e-12);
    CHECK_NEAR(c.bpb_hi, quality_hybrid_bpb(&hm, 5, thi) + 1.645 * 0.01, 1e-12);

    plan_shape p = {.d_model = 64, .n_layers = 1, .head_dim = 32, .context = 128, .batch_tokens = 2048,
                    .memory_order = 0}, nb[PLAN_NEIGHBOURS];
    const char *lab[PLAN_NEIGHBOURS];
    CHECK(plan_neighbours(&p, nb, lab) == 0);
    CHECK(nb[0].d_model == 32 && nb[1].d_model == 96 && nb[0].n_layers == 1 && nb[1].n_layers == 1);
    CHECK(nb[2].n_layers == 3 && !strcmp(lab[2], "depth++") && nb[3].n_layers == 2 && nb[2].d_model == 64);
    p.d_model = 256;
    p.n_layers = 4;
    p.head_dim = 64;
    CHECK(plan_neighbours(&p, nb, lab) == 0);
    CHECK(nb[0].d_model == 192 && nb[1].d_model == 320 && nb[2].n_layers == 3 && !strcmp(lab[2], "depth-"));
    p.d_model = 192; /* 160 makes no whole heads of 64: the next narrower is 128 */
    CHECK(plan_neighbours(&p, nb, lab) == 0 && nb[0].d_model == 128 && nb[0].head_dim == 64);
    p.d_model = 256;
    CHECK(nb[3].n_layers == 5 && nb[0].head_dim == 64 && nb[3].context == 128 && nb[3].batch_tokens == 2048);
    p.d_model = 100;
    CHECK(plan_neighbours(&p, nb, lab) == -1);
    p.d_model = 2048;
    CHECK(plan_neighbours(&p, nb, lab) == -1);

    o.ranks = 1;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    plan_validate_row rows[PLAN_VALIDATE_ROWS];
    int n = 0;
    CHECK(plan_validate_rows(&base, &chip, &q, &h, &o, &r.best[0], rows, &n, &err) == 0);
    CHECK(n == PLAN_VALIDATE_ROWS && !strcmp(rows[0].label, "plan") && rows[0].pred.bpb == r.best[0].bpb);
    for (int i = 1; i < n; i++)
        CHECK(rows[i].pred.cfg.model.d_model != rows[0].pred.cfg.model.d_model ||
              rows[i].pred.cfg.model.n_layers != rows[0].pred.cfg.model.n_layers);
    /* measurements: the plan at its prediction, one neighbour 0.05 better */
    for (int i = 0; i < n; i++) {
        rows[i].n_runs = rows[i].n_ok = 2;
        rows[i].bpb[0] = rows[i].pred.bpb - 0.01;
        rows[i].bpb[1] = rows[i].pred.bpb + 0.01;
        rows[i].transformer_bpb[0] = rows[i].transformer_bpb[1] = NAN;
        rows[i].tokens_per_s[0] = rows[i].tokens_per_s[1] = 1000;
        rows[i].tokens[0] = rows[i].tokens[1] = 1e6;
    }
    CHECK_NEAR(plan_validate_mean(&rows[0]), rows[0].pred.bpb, 1e-12);
    plan_validate_options vo = {.data_dir = "d", .budget_s = 60, .seeds = 2, .threads = 2};
    strbuf t = {0};
    plan_validate_report(&vo, rows, n, &t);
    CHECK_MSG(strstr(t.data, "target 1 (the plan within 0.02 bpb of its best neighbour)") &&
                  strstr(t.data, ": met") && strstr(t.data, "worst error 0.0000 over 5 configs: met"),
              "%s", t.data);
    CHECK(!strstr(t.data, "transformer p/m:") == !(rows[0].pred.cfg.memory_order > 0 && rows[0].pred.cfg.adapt_lr > 0));
    strbuf_free(&t);
    /* a hybrid plan read by the learning reader: the transformer column is not an error, and the report says so */
    run_config saved = rows[0].pred.cfg;
    rows[0].pred.cfg.memory_order = 4;
    rows[0].pred.cfg.adapt_lr = 0.25f;
    plan_validate_report(&vo, rows, n, &t);
    CHECK_MSG(strstr(t.data, "transformer p/m: the law's frozen prediction") && strstr(t.data, "adapt_lr 0.25)"),
              "%s", t.data);
    strbuf_free(&t);
    rows[0].pred.cfg.adapt_lr = 0;
    plan_validate_report(&vo, rows, n, &t);
    CHECK(!strstr(t.data, "transformer p/m:"));
    strbuf_free(&t);
    rows[0].pred.cfg = saved;
    rows[3].bpb[0] = rows[3].bpb[1] = rows[0].pred.bpb - 0.05; /* a neighbour clearly better */
    rows[2].bpb[1] = NAN;                                      /* one failed seed: the mean of the other */
    snprintf(rows[2].failure, sizeof rows[2].failure, "seed 2: tempo train exited with status 1");
    CHECK_NEAR(plan_validate_mean(&rows[2]), rows[2].pred.bpb - 0.01, 1e-12);
    plan_validate_report(&vo, rows, n, &t);
    CHECK_MSG(strstr(t.data, "NOT met (+0.05") && strstr(t.data, "failed: seed 2: tempo train exited"), "%s", t.data);
    strbuf_free(&t);
    CHECK(plan_validate_json(&vo, rows, n, &t, &err) == 0);
    json_value *j = NULL;
    CHECK(json_parse(t.data, t.len, &j, &err) == 0);
    const json_value *cfgs = j ? json_get(j, "configs") : NULL;
    CHECK(cfgs && cfgs->type == JSON_ARRAY && cfgs->n == (size_t)n);
    if (cfgs && cfgs->n == (size_t)n) {
        const json_value *runs = json_get(&cfgs->items[2], "runs");
        CHECK(runs && runs->n == 2 && json_get(&runs->items[1], "val_bpb")->type == JSON_NULL);
        CHECK(json_get_number(&cfgs->items[0], "predicted_bpb", 0) == rows[0].pred.bpb);
    }
    json_free(j);
    strbuf_free(&t);
}

/* The law's shape term: read and checked; the correction is b x + c x^2 at
 * x = log2(aspect / ref); the search stays inside the aspects and depths
 * measured, and a term that punishes deep-and-narrow shapes moves the plan
 * to a larger aspect than a term that punishes wide-and-shallow ones. */
static void test_depth(void)
{
    char text[2048];
    quality_law q;
    tempo_error err;
    law_with(&q, "depth_b = 0.02\ndepth_c = 0.01\ndepth_sd = 0.005\ndepth_aspect_ref = 32\n"
                 "depth_aspect_min = 16\ndepth_aspect_max = 128\ndepth_layers_min = 1\n");
    CHECK(quality_has_depth(&q));
    CHECK_NEAR(quality_correction(&q, 512, 1, 100, 32, 0), 0, 1e-15);
    CHECK_NEAR(quality_correction(&q, 512, 1, 100, 128, 0), 0.02 * 2 + 0.01 * 4, 1e-12);
    CHECK_NEAR(quality_correction(&q, 512, 1, 100, 16, 0), -0.02 + 0.01, 1e-12);
    CHECK_NEAR(quality_correction(&q, 512, 1, 100, 0, 0), 0, 0);   /* no shape given: no term */
    /* the slope in steps, the steps clamped to those measured */
    law_with(&q, "depth_b = 0.02\ndepth_b_steps = -0.01\ndepth_steps_ref = 300\ndepth_steps_min = 300\n"
                 "depth_steps_max = 1200\ndepth_c = 0.01\ndepth_aspect_ref = 32\n"
                 "depth_aspect_min = 16\ndepth_aspect_max = 128\ndepth_layers_min = 1\n");
    CHECK_NEAR(quality_correction(&q, 512, 1, 600, 128, 0), (0.02 - 0.01) * 2 + 0.01 * 4, 1e-12);
    CHECK_NEAR(quality_correction(&q, 512, 1, 4800, 128, 0), (0.02 - 0.02) * 2 + 0.01 * 4, 1e-12);   /* as 1200 */
    CHECK_NEAR(quality_correction(&q, 512, 1, 10, 64, 0), 0.02 + 0.01, 1e-12);                      /* as 300 */
    CHECK(quality_depth_trusted(&q, 16, 1) && quality_depth_trusted(&q, 128, 1) && quality_depth_trusted(&q, 128.0 / 3, 3));
    CHECK(!quality_depth_trusted(&q, 15.9, 4) && !quality_depth_trusted(&q, 129, 1));
    quality_law none;
    CHECK(quality_law_parse(&none, law_text, strlen(law_text), "law.conf", &err) == 0);
    CHECK(!quality_has_depth(&none) && quality_depth_trusted(&none, 1000, 1));
    const char *bad[][2] = {
        {"depth_b = 0.1\n", "needs depth_aspect_ref"},
        {"depth_aspect_ref = 32\ndepth_aspect_min = 16\ndepth_aspect_max = 64\n", "depth_layers_min"},
        {"depth_aspect_ref = 8\ndepth_aspect_min = 16\ndepth_aspect_max = 64\ndepth_layers_min = 1\n", "outside"},
        {"depth_aspect_ref = 0\n", "depth_aspect_ref"},
        {"depth_c = 0.1\ndepth_c = 0.1\n", "given twice"},
        {"depth_b_steps = 0.1\n", "depth_steps_ref"},
        {"depth_steps_min = 500\ndepth_steps_max = 400\n", "depth_steps_min > depth_steps_max"},
    };
    check_law_refusals(bad, sizeof bad / sizeof bad[0]);
    chip_profile chip;
    quality_law unused;
    quality_hybrid h;
    run_config base;
    search_inputs(&chip, &unused, &h, &base);
    plan_options o = {.budget_s = 60, .ranks = 1, .corpus_tokens = 1e8, .vocab_size = 512};
    double best_aspect[2];
    for (int sign = 0; sign < 2; sign++) {
        /* sign 0: narrow-and-deep costs (b < 0: small aspects worse); sign 1: wide-and-shallow costs */
        snprintf(text, sizeof text, "%sdepth_b = %s0.2\ndepth_aspect_ref = 32\ndepth_aspect_min = 16\n"
                 "depth_aspect_max = 128\ndepth_layers_min = 1\n", law_text, sign ? "" : "-");
        CHECK(quality_law_parse(&q, text, strlen(text), "law.conf", &err) == 0);
        plan_result r;
        CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
        for (int i = 0; i < r.n_keep; i++) {
            const plan_candidate *c = &r.best[i];
            double a = (double)c->cfg.model.d_model / c->cfg.model.n_layers;
            CHECK_MSG(a >= 16 && a <= 128, "aspect %g", a);
            CHECK_NEAR(c->correction, quality_correction(&q, 512, c->lr_mult, c->steps, a, c->cfg.model.d_model), 1e-12);
        }
        best_aspect[sign] = (double)r.best[0].cfg.model.d_model / r.best[0].cfg.model.n_layers;
    }
    CHECK_MSG(best_aspect[0] > best_aspect[1], "aspect %g with deep shapes punished, %g with wide ones",
              best_aspect[0], best_aspect[1]);
}

/* The family term (the planner's models against the law's grid), the law's
 * context (the search keeps to it), the hybrid relation's vocabulary (no
 * hybrid at another) and the reading: a plan with a memory reads as the
 * base preset does (the learning reader), one without reads frozen. */
static void test_family_context_reading(void)
{
    quality_law q;
    tempo_error err;
    law_with(&q, "family_b = -0.02\nfamily_b_steps = -0.01\nfamily_steps_ref = 300\n"
                 "family_steps_min = 300\nfamily_steps_max = 1200\nfamily_sd = 0.004\ncontext = 128\n");
    CHECK_NEAR(quality_family_term(&q, 600, 0), -0.03, 1e-12);
    CHECK_NEAR(quality_family_term(&q, 10, 0), -0.02, 1e-12);     /* as 300 */
    CHECK_NEAR(quality_family_term(&q, 1e5, 0), -0.04, 1e-12);    /* as 1200 */
    CHECK_NEAR(quality_correction(&q, 512, 1, 600, 0, 0), -0.03, 1e-12);
    quality_law none;
    CHECK(quality_law_parse(&none, law_text, strlen(law_text), "law.conf", &err) == 0);
    CHECK(quality_family_term(&none, 600, 0) == 0 && none.context == 0);
    /* the width part: per doubling of d_model from the reference, d_model clamped to the widths measured */
    quality_law w;
    law_with(&w, "family_b = -0.02\nfamily_b_steps = -0.01\nfamily_steps_ref = 300\nfamily_b_width = -0.05\n"
                 "family_width_ref = 128\nfamily_width_min = 64\nfamily_width_max = 256\n");
    CHECK_NEAR(quality_family_term(&w, 600, 128), -0.03, 1e-12);
    CHECK_NEAR(quality_family_term(&w, 600, 256), -0.03 - 0.05, 1e-12);
    CHECK_NEAR(quality_family_term(&w, 600, 96), -0.03 - 0.05 * log2(0.75), 1e-12);
    CHECK_NEAR(quality_family_term(&w, 600, 1024), -0.03 - 0.05, 1e-12);   /* as 256 */
    CHECK_NEAR(quality_family_term(&w, 600, 32), -0.03 + 0.05, 1e-12);     /* as 64 */
    CHECK_NEAR(quality_family_term(&w, 600, 0), -0.03, 1e-12);             /* no width given */
    CHECK_NEAR(quality_correction(&w, 512, 1, 600, 0, 192), -0.03 - 0.05 * log2(1.5), 1e-12);
    const char *bad[][2] = {
        {"family_b_width = -0.05\n", "family_width_ref"},
        {"family_width_min = 256\nfamily_width_max = 128\n", "family_width_min > family_width_max"},
        {"family_b_steps = 0.1\n", "family_steps_ref"},
        {"family_steps_min = 500\nfamily_steps_max = 400\n", "family_steps_min > family_steps_max"},
        {"context = 0\n", "context"},
        {"family_b = 0.1\nfamily_b = 0.1\n", "given twice"},
    };
    check_law_refusals(bad, sizeof bad / sizeof bad[0]);
    chip_profile chip;
    quality_law unused;
    quality_hybrid h;
    run_config base;
    search_inputs(&chip, &unused, &h, &base);
    base.adapt_lr = 0.2f;
    plan_options o = {.budget_s = 60, .ranks = 1, .corpus_tokens = 1e6, .vocab_size = 512, .allow_memory = 1};
    plan_result r;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    for (int i = 0; i < r.n_keep; i++) {
        const plan_candidate *c = &r.best[i];
        CHECK_MSG(c->cfg.model.context == 128, "context %d", c->cfg.model.context);
        CHECK_NEAR(c->correction, quality_correction(&q, 512, c->lr_mult, c->steps, 0, c->cfg.model.d_model) +
                                      quality_shape_term(&q, (double)c->cfg.model.d_model / c->cfg.model.n_layers, c->steps),
                   1e-12);
        CHECK(c->cfg.memory_order == 0 && c->cfg.adapt_lr == 0);   /* no memory measured: frozen */
    }
    /* a relation that knows order 4 at vocabulary 512: hybrids there read as the base does */
    h.limit[4] = 1.5;
    h.build_s_per_mtok[4] = 0.1;
    h.bytes_per_token[4] = 25;
    h.vocab = 512;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    int hybrids = 0;
    for (int i = 0; i < r.n_keep; i++) {
        const plan_candidate *c = &r.best[i];
        hybrids += c->cfg.memory_order == 4;
        CHECK(c->cfg.adapt_lr == (c->cfg.memory_order ? 0.2f : 0.0f));
    }
    CHECK(hybrids > 0);
    h.vocab = 4097;   /* measured at another vocabulary only: no hybrid at this one */
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    for (int i = 0; i < r.n_keep; i++)
        CHECK(r.best[i].cfg.memory_order == 0);
    /* the search gives each candidate its own width's family term */
    CHECK(plan_search(&base, &chip, &w, &h, &o, &r, &err) == 0);
    int off_ref = 0;
    for (int i = 0; i < r.n_keep; i++) {
        const plan_candidate *c = &r.best[i];
        double want = quality_correction(&w, 512, c->lr_mult, c->steps,
                                         (double)c->cfg.model.d_model / c->cfg.model.n_layers, c->cfg.model.d_model);
        CHECK_NEAR(c->correction, want, 1e-12);
        off_ref += c->cfg.model.d_model != 128;
    }
    CHECK(off_ref > 0);
}

/* The base preset's own shape stays the plan unless the search's best beats it
 * by more than plan_difference_margin: with no scatter and the law's
 * replicates differing only in E (which cancels in a paired difference) the
 * margin is 0 and the better shape wins; with a wide family scatter the base
 * is kept, first, its preset the base's own keys, the displaced best said. */
static void test_keep_base(void)
{
    chip_profile chip;
    quality_law q;
    quality_hybrid h;
    run_config base;
    tempo_error err;
    search_inputs(&chip, &q, &h, &base);
    plan_options o = {.budget_s = 60, .ranks = 1, .corpus_tokens = 1e8, .vocab_size = 512};
    static plan_result free_r, r;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &free_r, &err) == 0);
    CHECK(free_r.base_status == PLAN_BASE_NOT_TRIED);
    const plan_candidate *best = &free_r.best[0];
    CHECK(best->cfg.model.d_model != base.model.d_model || best->cfg.model.n_layers != base.model.n_layers);
    o.keep_base = 1;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    CHECK(r.base_status == PLAN_BASE_BEATEN);
    CHECK_NEAR(r.base_margin, 0, 1e-12);   /* paired: E's spread cancels */
    CHECK(r.base_gain > 0 && r.best[0].bpb == best->bpb && r.best[0].cfg.model.d_model == best->cfg.model.d_model);
    CHECK_NEAR(r.base_bpb - r.base_gain, best->bpb, 1e-12);

    /* a scatter of 0.5 bpb per run around the family term: 1.645 sqrt(2) 0.5 apart */
    law_with(&q, "family_sd = 0.5\n");
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    CHECK(r.base_status == PLAN_BASE_KEPT);
    CHECK_NEAR(r.base_margin, 1.645 * sqrt(2) * 0.5, 1e-9);
    const model_config *m = &r.best[0].cfg.model;
    CHECK(m->d_model == base.model.d_model && m->n_layers == base.model.n_layers &&
          m->n_heads == base.model.n_heads && m->context == base.model.context &&
          r.best[0].cfg.batch_size == base.batch_size && r.best[0].lr_mult == 1);
    CHECK_NEAR(r.best[0].bpb, r.base_bpb, 1e-12);
    CHECK(r.searched_best.cfg.model.d_model == best->cfg.model.d_model &&
          r.searched_best.cfg.model.n_layers == best->cfg.model.n_layers);
    CHECK(r.n_keep == PLAN_MAX_KEEP);
    for (int i = 1; i < r.n_keep; i++)   /* the base's shape once, the rest ranked */
        CHECK(r.best[i].cfg.model.d_model != m->d_model || r.best[i].cfg.model.n_layers != m->n_layers);
    for (int i = 2; i < r.n_keep; i++)
        CHECK(r.best[i - 1].bpb <= r.best[i].bpb);

    /* with its memory (a relation that knows order 5 here): the kept plan's preset is the base's */
    h.limit[5] = 1.5;
    h.build_s_per_mtok[5] = 1e-3;
    h.bytes_per_token[5] = 25;
    h.vocab = 512;
    h.residual_sd = 0.3;
    o.allow_memory = 1;
    CHECK(base.memory_order == 5);
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    CHECK(r.base_status == PLAN_BASE_KEPT);
    strbuf want = {0}, got = {0};
    plan_preset_keys(&base, &want);
    plan_preset_keys(&r.best[0].cfg, &got);
    CHECK_MSG(want.len == got.len && !memcmp(want.data, got.data, want.len), "%s\n---\n%s", want.data, got.data);
    strbuf_free(&want);
    strbuf_free(&got);

    /* a base the ranks cannot split is no candidate: the search's best stands */
    o.ranks = 3;
    CHECK(plan_search(&base, &chip, &q, &h, &o, &r, &err) == 0);
    CHECK(r.base_status == PLAN_BASE_NOT_A_CANDIDATE);
}

/* The margin's scatter goes through the relation's gradient: slope + 2 curve
 * (pivot - t) where it mixes, 1 where the transformer alone is the plan. */
static void test_margin_gradient(void)
{
    quality_law q;
    memset(&q, 0, sizeof q);
    q.family_sd = 0.1;   /* no replicates: the terms' scatter alone */
    quality_hybrid h = {.pivot = 2.1, .slope = 0.2, .curve = 0.25};
    h.limit[5] = 1.65;
    plan_candidate a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.cfg.model.d_model = b.cfg.model.d_model = 128;
    a.cfg.model.n_layers = b.cfg.model.n_layers = 4;
    a.cfg.memory_order = b.cfg.memory_order = 5;
    a.lr_mult = b.lr_mult = 1;
    a.transformer_bpb = 1.7;   /* x 0.4: gradient 0.2 + 2 0.25 0.4 = 0.4 */
    b.transformer_bpb = 1.9;   /* x 0.2: 0.3 */
    a.bpb = quality_hybrid_bpb(&h, 5, a.transformer_bpb);
    b.bpb = quality_hybrid_bpb(&h, 5, b.transformer_bpb);
    CHECK(a.bpb < a.transformer_bpb && b.bpb < b.transformer_bpb);
    CHECK_NEAR(plan_difference_margin(&q, &h, &a, &b), 1.645 * 0.1 * sqrt(0.4 * 0.4 + 0.3 * 0.3), 1e-12);
    h.residual_sd = 0.02;   /* the relation's own scatter, each run's */
    CHECK_NEAR(plan_difference_margin(&q, &h, &a, &b),
               1.645 * sqrt(0.01 * (0.4 * 0.4 + 0.3 * 0.3) + 2 * 0.02 * 0.02), 1e-12);
    h.residual_sd = 0;
    b.cfg.memory_order = 0;   /* the transformer alone: gradient 1 */
    b.bpb = b.transformer_bpb;
    CHECK_NEAR(plan_difference_margin(&q, &h, &a, &b), 1.645 * 0.1 * sqrt(0.4 * 0.4 + 1), 1e-12);
}

/* plan --calibrate-gpu's reading of a GPU bench line: kernels to ops, the
 * profile's per-call wait taken out, the rest of the step as "other", and
 * one clear error for what it cannot use. */
static void test_calibrate_gpu(void)
{
    static const char chip_text[] = "name = g\ntrain_dtype = bf16\npeak_tflops_bf16 = 800\nmemory_gb = 141\n"
                                    "bandwidth_gbs = 4000\nsram_mib = 50\ncores = 132\nlink_gbs = 450\n"
                                    "eff_compute = 0.6\neff_memory = 0.7\n";
    chip_profile chip;
    tempo_error err;
    CHECK(chip_parse(&chip, chip_text, sizeof chip_text - 1, NULL, &err) == 0);
    const char *head = "{\"bench\":\"train\",\"device\":\"cuda\",\"preset\":\"p\",\"d_model\":256,"
                       "\"n_layers\":2,\"n_heads\":4,\"n_kv_heads\":4,\"d_ff\":1024,\"mlp\":\"relu2\","
                       "\"qk_norm\":0,\"tied_head\":1,\"optimizer\":\"adamw\",\"context\":128,\"vocab\":1000,"
                       "\"batch\":8,\"micro_batch\":8,\"tokens_per_s\":100000,\"step_ms\":10,";
    char line[2048];
    /* 12 ms profiled over 4 calls for a 10 ms step: 0.5 ms of wait per call */
    snprintf(line, sizeof line, "%s\"kernels_ms\":{\"gemm_fwd\":6,\"gemm_bwd\":3,\"attn_fwd_mma_d64\":2,"
             "\"rope_bf16\":1},\"kernel_calls\":{\"gemm_fwd\":1,\"gemm_bwd\":1,\"attn_fwd_mma_d64\":1,"
             "\"rope_bf16\":1}}", head);
    throughput_measurement m;
    CHECK(calibrate_gpu_measurement(line, strlen(line), "b.jsonl", &chip, &m, &err) == 0);
    CHECK_NEAR(m.measured_s[OP_GEMM_FWD], 5.5e-3, 1e-12);
    CHECK_NEAR(m.measured_s[OP_GEMM_BWD], 2.5e-3, 1e-12);
    CHECK_NEAR(m.measured_s[OP_ATTN_FWD], 1.5e-3, 1e-12);
    CHECK_NEAR(m.measured_s[OP_ROPE], 0.5e-3, 1e-12);
    CHECK_NEAR(m.measured_s[OP_COUNT], 0, 1e-12);   /* the step is all covered */
    CHECK(m.roofline_s[OP_GEMM_FWD] > 0 && m.measured_tokens_per_s == 100000);
    CHECK(strstr(m.preset, "adamw") != NULL);
    /* a kernel no op owns, a missing field, another benchmark: one error naming the file */
    snprintf(line, sizeof line, "%s\"kernels_ms\":{\"mystery\":1},\"kernel_calls\":{\"mystery\":1}}", head);
    CHECK(calibrate_gpu_measurement(line, strlen(line), "b.jsonl", &chip, &m, &err) == -1 &&
          strstr(err.msg, "b.jsonl") && strstr(err.msg, "mystery"));
    const char *cpu = "{\"bench\":\"train\",\"threads\":2}";
    CHECK(calibrate_gpu_measurement(cpu, strlen(cpu), "c.jsonl", &chip, &m, &err) == -1 && strstr(err.msg, "c.jsonl"));
    snprintf(line, sizeof line, "%s\"kernels_ms\":{},\"kernel_calls\":{}}", head);
    char *p = strstr(line, "\"d_model\":256");
    memcpy(p, "\"d_model\":-25", 13);
    CHECK_MSG(calibrate_gpu_measurement(line, strlen(line), "d.jsonl", &chip, &m, &err) == -1 && strstr(err.msg, "d_model"), "%s", err.msg);
}

/* The calibration's step overhead (the time no op covers) is weighted as the
 * efficiencies are, relative to each preset's step: a 1 s step with 50 ms
 * uncovered and a 10 ms step with 1 ms give about 1 ms, not their mean's
 * 25.5 ms (which would be two and a half small steps). */
static void test_calibration_step_overhead(void)
{
    throughput_measurement m[2];
    memset(m, 0, sizeof m);
    m[0].measured_s[OP_GEMM_FWD] = 0.95, m[0].roofline_s[OP_GEMM_FWD] = 0.5, m[0].calls[OP_GEMM_FWD] = 10;
    m[0].measured_s[OP_COUNT] = 0.05;
    m[1].measured_s[OP_GEMM_FWD] = 0.009, m[1].roofline_s[OP_GEMM_FWD] = 0.0045, m[1].calls[OP_GEMM_FWD] = 10;
    m[1].measured_s[OP_COUNT] = 0.001;
    strbuf out = {0};
    throughput_calibration_write(m, 2, "# test\n", &out);
    const char *at = out.data ? strstr(out.data, "step_overhead_ms = ") : NULL;
    double ms = at ? atof(at + strlen("step_overhead_ms = ")) : -1;
    double want = 1e3 * (0.05 / 1.0 + 0.001 / 1e-4) / (1 / 1.0 + 1 / 1e-4);   /* weights 1 / step^2 */
    CHECK_MSG(fabs(ms - want) < 1e-3 && ms < 1.01, "step_overhead_ms %g, %g expected", ms, want);
    strbuf_free(&out);
}

int main(void)
{
    RUN(test_quality);
    RUN(test_effective_tokens);
    RUN(test_search);
    RUN(test_vocab_and_lr);
    RUN(test_depth);
    RUN(test_family_context_reading);
    RUN(test_keep_base);
    RUN(test_margin_gradient);
    RUN(test_predict_and_neighbours);
    RUN(test_calibrate_gpu);
    RUN(test_calibration_step_overhead);
    return test_summary("test_plan");
}
