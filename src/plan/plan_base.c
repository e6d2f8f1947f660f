/* plan_base.c - the planner keeps the base preset's own shape unless a
 * candidate beats it by more than the prediction can tell apart (plan.h,
 * plan_keep_base). The search ranks point predictions, and around the base
 * they are flat: at 10 minutes on this CPU the best ten shapes lie within
 * 0.005 bpb of each other while a prediction's scatter is 0.01-0.02, and the
 * shape the search picked (d 96, 3 layers) measured 0.011 worse than the
 * base preset (docs/planner.md section 6). The base is the one configuration
 * whose figures are measured, not predicted; moving off it on a predicted
 * gain inside the difference's own uncertainty is a guess. */
#include "plan/plan.h"

#include <math.h>
#include <string.h>

/* The predicted bpb of c under one bootstrap replicate of the law. */
static double replicate_bpb(const quality_coef *coef, const quality_hybrid *hybrid, const plan_candidate *c)
{
    double t = quality_bpb(coef, c->step.params, c->tokens_effective) + c->correction;
    return quality_hybrid_bpb(hybrid, c->cfg.memory_order, t);
}

/* d bpb / d t at c: 1 where the plan's bpb is its transformer's (no memory, or the relation's min()
 * takes t: quality_hybrid_bpb), slope + 2 curve (pivot - t) where it mixes, 0 at its limit. */
static double relation_gradient(const quality_hybrid *hybrid, const plan_candidate *c)
{
    double t = c->transformer_bpb;
    if (c->bpb >= t)
        return 1;
    return t < hybrid->pivot ? hybrid->slope + 2 * hybrid->curve * (hybrid->pivot - t) : 0;
}

/* The variance of one candidate's run around its prediction that another
 * shape does not share: the law's terms' scatter (family, shape, learning
 * rate) through the relation, and the relation's own. */
static double own_variance(const quality_law *law, const quality_hybrid *hybrid, const plan_candidate *c)
{
    double g = relation_gradient(hybrid, c), s = plan_term_scatter_sd(law, c);
    double v = g * g * s * s;
    if (c->cfg.memory_order > 0)
        v += hybrid->residual_sd * hybrid->residual_sd;
    return v;
}

double plan_difference_margin(const quality_law *law, const quality_hybrid *hybrid, const plan_candidate *a,
                              const plan_candidate *b)
{
    double var = 0;
    if (law->n_boot >= 2) {   /* the law's own uncertainty, paired: both under each replicate */
        double sum = 0, sum2 = 0;
        for (int i = 0; i < law->n_boot; i++) {
            double d = replicate_bpb(&law->boot[i], hybrid, a) - replicate_bpb(&law->boot[i], hybrid, b);
            sum += d;
            sum2 += d * d;
        }
        double mean = sum / law->n_boot;
        var = fmax(0, (sum2 - law->n_boot * mean * mean) / (law->n_boot - 1));
    }
    var += own_variance(law, hybrid, a) + own_variance(law, hybrid, b);
    return 1.645 * sqrt(var);
}

/* r->best with c first (its own shape's other entry dropped), the rest in their order. */
static void put_first(plan_result *r, const plan_candidate *c)
{
    plan_candidate rest[PLAN_MAX_KEEP];
    int n = 0;
    for (int i = 0; i < r->n_keep && n < PLAN_MAX_KEEP - 1; i++) {
        if (!plan_same_shape(&r->best[i], c))
            rest[n++] = r->best[i];
    }
    r->best[0] = *c;
    memcpy(&r->best[1], rest, sizeof rest[0] * (size_t)n);
    r->n_keep = n + 1;
}

int plan_keep_base(const run_config *base, const chip_profile *chip, const quality_law *law,
                   const quality_hybrid *hybrid, const plan_options *o, plan_result *r, tempo_error *err)
{
    r->base_status = PLAN_BASE_NOT_A_CANDIDATE;
    if (r->n_keep == 0 || base->batch_size % o->ranks)
        return 0;
    plan_candidate c;
    memset(&c, 0, sizeof c);
    c.cfg = *base;
    c.lr_mult = 1;
    plan_shape s;
    plan_shape_of(&c, o->ranks, &s);
    s.vocab = o->vocab_size;
    if (!o->allow_memory)
        s.memory_order = 0;
    plan_verdict v;
    int rc = plan_predict(base, chip, law, hybrid, o, &s, &c, &v, err);
    if (rc <= 0)
        return rc;
    plan_interval(law, hybrid, &c);
    const plan_candidate *best = &r->best[0];
    r->base_bpb = c.bpb;
    r->base_gain = c.bpb - best->bpb;
    r->base_margin = plan_difference_margin(law, hybrid, best, &c);
    if (r->base_gain > r->base_margin) {
        r->base_status = PLAN_BASE_BEATEN;
        return 0;
    }
    r->base_status = PLAN_BASE_KEPT;
    r->searched_best = *best;
    put_first(r, &c);
    return 0;
}
