/* plan.c - the planner's search, its preset text and its explanation (see
 * plan.h). The search is a plain loop over a small grid of shapes: a few
 * thousand candidates, each a closed-form prediction, well under a second. */
#include "plan/plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "memory/ngram_memory.h"

static const int widths[] = {64, 96, 128, 160, 192, 256, 320, 384, 448, 512, 640, 768, 1024, 1280, 1536, 2048};
/* The law (plan/quality.h) is in N and D (and the batch, when it has
 * batch_crit) only, so whatever it cannot see is kept near the runs it was
 * fitted on (batch 2,048-16,384 tokens, context 128-256, head width 64 (32
 * below d_model 128), d_model / n_layers 32-64): context and batch within a
 * factor of 2-4 of it (per rank: N ranks train N times the rows), the aspect
 * ratio d_model / n_layers within [32, 64] and at least 2 layers, the law's
 * grid's own range. The wider range before ([16, 128], 1 layer and up) let the
 * law pick one-layer models that the 10-minute validation found 0.02-0.04 bpb
 * worse than two or three layers of the same width and about the same
 * parameters and tokens: the law counts parameters, not depth. A law with a
 * shape term (quality.h) replaces the aspect window with the aspects and
 * depths the term measured. Inside these bounds the shape is chosen by the
 * law and throughput. */
static const int contexts[] = {128, 256, 512};
static const int batch_tokens[] = {2048, 4096, 8192, 16384};
#define PLAN_MIN_ASPECT 32
#define PLAN_MAX_ASPECT 64
#define PLAN_MIN_LAYERS 2
static const int memory_orders[] = {0, 4, 5};
/* Learning-rate multipliers tried, kept to those the law measured
 * (quality_law's lr_mult_min..lr_mult_max). */
static const double lr_mults[] = {0.5, 0.7071067811865476, 1, 1.4142135623730951, 2};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

double plan_effective_tokens(double seen, double unique)
{
    if (!(unique > 0) || seen <= unique)
        return seen;
    const double r_star = 15.4; /* Muennighoff et al. 2023's fitted decay, in repetitions */
    return unique * (1 + r_star * (1 - exp(-(seen / unique - 1) / r_star)));
}

int plan_same_shape(const plan_candidate *a, const plan_candidate *b)
{
    return a->cfg.model.d_model == b->cfg.model.d_model && a->cfg.model.n_layers == b->cfg.model.n_layers &&
           a->cfg.memory_order == b->cfg.memory_order && a->cfg.model.vocab_size == b->cfg.model.vocab_size;
}

/* Lower predicted bpb; on a tie (a hybrid at its memory's limit, where the
 * transformer's bpb no longer moves the relation) the better transformer,
 * then fewer parameters. */
static int better(const plan_candidate *a, const plan_candidate *b)
{
    if (a->bpb != b->bpb)
        return a->bpb < b->bpb;
    if (a->transformer_bpb != b->transformer_bpb)
        return a->transformer_bpb < b->transformer_bpb;
    return a->step.params < b->step.params;
}

/* Keep r->best sorted by bpb (then fewer parameters), at most PLAN_MAX_KEEP,
 * one entry per (width, depth, memory order, vocabulary): the runners-up are
 * other shapes, not the same shape at another context, batch or learning rate. */
static void keep(plan_result *r, const plan_candidate *c)
{
    for (int j = 0; j < r->n_keep; j++)
        if (plan_same_shape(&r->best[j], c)) {
            if (!better(c, &r->best[j]))
                return;
            memmove(&r->best[j], &r->best[j + 1], sizeof r->best[0] * (size_t)(r->n_keep - j - 1));
            r->n_keep--;
            break;
        }
    int n = r->n_keep, i = n;
    while (i > 0 && better(c, &r->best[i - 1]))
        i--;
    if (i >= PLAN_MAX_KEEP)
        return;
    int last = n < PLAN_MAX_KEEP ? n : PLAN_MAX_KEEP - 1;
    memmove(&r->best[i + 1], &r->best[i], sizeof r->best[0] * (size_t)(last - i));
    r->best[i] = *c;
    if (n < PLAN_MAX_KEEP)
        r->n_keep++;
}

void plan_shape_of(const plan_candidate *c, int ranks, plan_shape *s)
{
    const model_config *m = &c->cfg.model;
    s->d_model = m->d_model;
    s->n_layers = m->n_layers;
    s->head_dim = m->d_model / m->n_heads;
    s->context = m->context;
    s->batch_tokens = c->cfg.batch_size / ranks * m->context;
    s->memory_order = c->cfg.memory_order;
    s->vocab = m->vocab_size;
    s->lr_mult = c->lr_mult;
}

/* The learning rates of the base preset x the candidate's multiplier. */
static void scale_rates(optim_config *opt, double lr_mult)
{
    opt->lr = (float)(opt->lr * lr_mult);
    opt->lr_embed = (float)(opt->lr_embed * lr_mult);
    opt->lr_head = (float)(opt->lr_head * lr_mult);
    opt->lr_scalar = (float)(opt->lr_scalar * lr_mult);
    opt->lr_muon = (float)(opt->lr_muon * lr_mult);
}

/* The candidate's run config: the base preset with the shape's model, batch, vocabulary, rates
 * and memory. 0 when the shape is no config (a vocabulary the law cannot count, or one that
 * run_config_finish refuses). */
static int candidate_config(const run_config *base, const quality_law *law, const plan_options *o,
                            const plan_shape *s, plan_candidate *c)
{
    c->cfg = *base;
    model_config *m = &c->cfg.model;
    m->vocab_size = s->vocab ? s->vocab : o->vocab_size;
    c->lr_mult = s->lr_mult > 0 ? s->lr_mult : 1;
    scale_rates(&c->cfg.optim, c->lr_mult);
    /* the corpus in this vocabulary's tokens: the same text */
    c->corpus_tokens = o->corpus_tokens;
    if (m->vocab_size != o->vocab_size) {
        const quality_vocab *have = quality_vocab_find(law, o->vocab_size), *want = quality_vocab_find(law, m->vocab_size);
        if (!have || !want)
            return 0;   /* a vocabulary the law cannot count */
        c->corpus_tokens = o->corpus_tokens * have->bytes_per_token / want->bytes_per_token;
    }
    m->d_model = s->d_model;
    m->n_layers = s->n_layers;
    m->n_heads = s->d_model / s->head_dim;
    m->n_kv_heads = 0;
    m->d_ff = 0;
    m->context = s->context;
    c->cfg.batch_size = s->batch_tokens / s->context * o->ranks; /* per rank: data parallel adds rows */
    c->cfg.micro_batch = 0;
    c->cfg.memory_order = s->memory_order;
    if (!s->memory_order) {
        c->cfg.cache_order = 0;
        c->cfg.match_length = 0;
    } else {
        /* the hybrid's parts as tuned for it (the key table's defaults, which are
         * cpu-default's), not a transformer preset's leftovers (cpu-transformer's
         * mixer_lr is 0.02 against the hybrid's 0.3) */
        run_config d;
        run_config_defaults(&d);
        c->cfg.cache_order = d.cache_order;
        c->cfg.match_length = d.match_length;
        c->cfg.mixer_lr = d.mixer_lr;
        c->cfg.mixer_holdout = d.mixer_holdout;
        c->cfg.memory_prune = d.memory_prune;
    }
    /* the law is of the transformer read frozen; the hybrid relation maps that to the mixture as
     * the base preset reads it (the learning reader, adapt_lr, included: its runs read so). A plan
     * without a memory is the law's own quantity, so it reads frozen. */
    if (!s->memory_order)
        c->cfg.adapt_lr = 0;
    tempo_error e;
    return !run_config_finish(&c->cfg, &e);
}

/* The step's time and memory on the chip; past the memory limit, micro-batches: the smallest
 * power-of-two split that fits. 1 when it fits, 0 when no split does, -1 on error. */
static int fit_step(plan_candidate *c, const chip_profile *chip, const plan_options *o, tempo_error *err)
{
    if (throughput_predict(&c->cfg, chip, o->ranks, &c->step, err))
        return -1;
    double limit = o->memory_gb > 0 ? o->memory_gb : chip->memory_gb;
    if (c->step.memory_gb > limit) {
        int rows = c->cfg.batch_size / o->ranks;
        for (int mb = rows / 2; mb >= 1 && c->step.memory_gb > limit; mb /= 2) {
            c->cfg.micro_batch = mb * o->ranks;
            throughput_predict(&c->cfg, chip, o->ranks, &c->step, err);
        }
        if (c->step.memory_gb > limit)
            return 0;
    }
    return 1;
}

/* The count memory of the shape's order: 0 when the relation does not know it, the data's
 * vocabulary cannot key it or it does not fit the host; else its build seconds. */
static int memory_buildable(const quality_hybrid *hybrid, const plan_options *o, const plan_shape *s,
                            plan_candidate *c)
{
    double host = o->host_memory_gb > 0 ? o->host_memory_gb : 24;
    if (s->memory_order < 0 || s->memory_order > QUALITY_MAX_ORDER || !(hybrid->limit[s->memory_order] > 0) ||
        (hybrid->vocab > 0 && c->cfg.model.vocab_size != hybrid->vocab) ||   /* the relation's runs' only */
        s->memory_order > ngram_build_max_order(c->cfg.model.vocab_size) ||
        c->corpus_tokens * hybrid->bytes_per_token[s->memory_order] / 1e9 > host)
        return 0;
    c->memory_build_s = throughput_memory_build_s(c->corpus_tokens, hybrid->build_s_per_mtok[s->memory_order]);
    return 1;
}

/* The training seconds the budget leaves after the memory's build and save, and the steps they hold. */
static void budget_steps(const quality_hybrid *hybrid, const plan_options *o, const plan_shape *s,
                         plan_candidate *c)
{
    /* the trainer would count only the prefix whose build fits memory_budget_share of the
     * budget (memory_budget.h); the hybrid relation knows whole-corpus memories only, so a plan
     * with a memory counts every token, and says so in its preset */
    if (s->memory_order && c->memory_build_s > c->cfg.memory_budget_share * o->budget_s)
        c->cfg.memory_budget_share = 0;
    /* memory.bin is written beside the first steps and slows them: the steps'
     * time lost is the write's seconds x the share of speed it takes */
    c->memory_save_lost_s = s->memory_order ? hybrid->save_s_per_gb * c->corpus_tokens *
                                                  hybrid->bytes_per_token[s->memory_order] / 1e9 * hybrid->save_drag
                                            : 0;
    c->train_s = o->budget_s - c->memory_build_s - c->memory_save_lost_s;
    c->steps = floor(c->train_s / c->step.step_s);
}

/* The tokens the steps see and the law's val bpb of them (the point prediction ranks; the
 * interval, from the bootstraps, only for what is kept: plan_interval). */
static void predict_bpb(const quality_law *law, const quality_hybrid *hybrid, const plan_shape *s,
                        plan_candidate *c)
{
    const model_config *m = &c->cfg.model;
    c->tokens_seen = c->steps * c->step.tokens_per_step;
    c->tokens_fresh = plan_effective_tokens(c->tokens_seen, c->corpus_tokens);
    /* the law counts text: tokens of another vocabulary in its own vocabulary's tokens */
    c->tokens_effective = quality_tokens_effective(law, c->step.params,
                                                   quality_tokens_in_law(law, m->vocab_size, c->tokens_fresh),
                                                   quality_tokens_in_law(law, m->vocab_size, c->step.tokens_per_step));
    c->correction = quality_correction(law, m->vocab_size, c->lr_mult, c->steps, (double)m->d_model / m->n_layers,
                                       m->d_model);
    c->transformer_bpb = quality_bpb(&law->fit, c->step.params, c->tokens_effective) + c->correction;
    c->bpb = quality_hybrid_bpb(hybrid, s->memory_order, c->transformer_bpb);
    c->outside_law = c->step.params < law->n_min || c->step.params > law->n_max ||
                     c->tokens_effective < law->d_min || c->tokens_effective > law->d_max;
    c->repeats_data = c->tokens_seen > c->corpus_tokens;
}

int plan_predict(const run_config *base, const chip_profile *chip, const quality_law *law,
                 const quality_hybrid *hybrid, const plan_options *o, const plan_shape *s, plan_candidate *c,
                 plan_verdict *verdict, tempo_error *err)
{
    memset(c, 0, sizeof *c);
    *verdict = PLAN_NOT_A_CONFIG;
    if (s->head_dim < 1 || s->d_model % s->head_dim || s->context < 1 || s->batch_tokens < s->context)
        return 0;
    if (!candidate_config(base, law, o, s, c))
        return 0;
    int fits = fit_step(c, chip, o, err);
    if (fits <= 0) {
        if (!fits)
            *verdict = PLAN_TOO_BIG;
        return fits;
    }
    if (s->memory_order && !memory_buildable(hybrid, o, s, c)) {
        *verdict = PLAN_NO_MEMORY;
        return 0;
    }
    budget_steps(hybrid, o, s, c);
    if (c->steps < PLAN_MIN_STEPS) {
        *verdict = PLAN_TOO_FEW_STEPS;
        return 0;
    }
    if (c->lr_mult != 1 && !quality_lr_trusted(law, c->steps))
        return 0;   /* the learning-rate term was not measured for runs this long: the preset's rates */
    predict_bpb(law, hybrid, s, c);
    *verdict = PLAN_OK;
    return 1;
}

double plan_term_scatter_sd(const quality_law *law, const plan_candidate *c)
{
    double lr = c->lr_mult != 1 ? law->lr_sd : 0;   /* the learning-rate term's own scatter */
    double aspect = (double)c->cfg.model.d_model / c->cfg.model.n_layers;
    double depth = quality_has_depth(law) && fabs(aspect / law->depth_aspect_ref - 1) > 1e-9
                       ? law->depth_sd : 0;   /* the shape term's, off its reference */
    double family = law->family_sd;           /* the family term's */
    return sqrt(lr * lr + depth * depth + family * family);
}

void plan_interval(const quality_law *law, const quality_hybrid *hybrid, plan_candidate *k)
{
    quality_predict(law, k->step.params, k->tokens_effective, &k->transformer_bpb, &k->transformer_lo,
                    &k->transformer_hi);
    double spread = 1.645 * plan_term_scatter_sd(law, k);
    k->transformer_bpb += k->correction;
    k->transformer_lo += k->correction - spread;
    k->transformer_hi += k->correction + spread;
    k->bpb = quality_hybrid_bpb(hybrid, k->cfg.memory_order, k->transformer_bpb);
    k->bpb_lo = quality_hybrid_bpb(hybrid, k->cfg.memory_order, k->transformer_lo);
    k->bpb_hi = quality_hybrid_bpb(hybrid, k->cfg.memory_order, k->transformer_hi);
    if (k->cfg.memory_order > 0) { /* and the relation's own scatter */
        k->bpb_lo -= 1.645 * hybrid->residual_sd;
        k->bpb_hi += 1.645 * hybrid->residual_sd;
    }
}

/* The search's head width: 32 below d_model 128, else 64. */
static int head_dim_for(int d) { return d < 128 ? 32 : 64; }

int plan_neighbours(const plan_shape *p, plan_shape out[PLAN_NEIGHBOURS], const char *labels[PLAN_NEIGHBOURS])
{
    int wi = 0;
    while (wi < N_OF(widths) && widths[wi] < p->d_model)
        wi++;
    if (wi == N_OF(widths) || widths[wi] != p->d_model)
        return -1;
    /* the next widths down and up that the search itself can use (whole heads) */
    int narrower = widths[0] / 2, wider = 0;
    for (int k = wi - 1; k >= 0; k--)
        if (widths[k] % head_dim_for(widths[k]) == 0) {
            narrower = widths[k];
            break;
        }
    for (int k = wi + 1; k < N_OF(widths) && !wider; k++)
        if (widths[k] % head_dim_for(widths[k]) == 0)
            wider = widths[k];
    if (!wider)
        return -1;
    static const char *const names[PLAN_NEIGHBOURS] = {"width-", "width+", "depth-", "depth+"};
    for (int k = 0; k < PLAN_NEIGHBOURS; k++) {
        out[k] = *p;
        labels[k] = names[k];
    }
    out[0].d_model = narrower;
    out[0].head_dim = head_dim_for(narrower);
    out[1].d_model = wider;
    out[1].head_dim = head_dim_for(wider);
    if (p->n_layers > 1) {
        out[2].n_layers = p->n_layers - 1;
    } else {
        out[2].n_layers = p->n_layers + 2;
        labels[2] = "depth++";
    }
    out[3].n_layers = p->n_layers + 1;
    return 0;
}

/* Evaluate one shape of the search and keep it when it is a candidate. */
static int evaluate(const run_config *base, const chip_profile *chip, const quality_law *law,
                    const quality_hybrid *hybrid, const plan_options *o, const plan_shape *s, plan_result *r,
                    plan_candidate *c, tempo_error *err)
{
    plan_verdict v;
    int rc = plan_predict(base, chip, law, hybrid, o, s, c, &v, err);
    if (rc < 0)
        return -1;
    if (v != PLAN_NOT_A_CONFIG)
        r->n_searched++;
    if (v == PLAN_TOO_BIG)
        r->n_too_big++;
    else if (v == PLAN_TOO_FEW_STEPS)
        r->n_too_few_steps++;
    if (rc == 1)
        keep(r, c);
    return rc;
}

int plan_search(const run_config *base, const chip_profile *chip, const quality_law *law,
                const quality_hybrid *hybrid, const plan_options *o, plan_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    if (!(o->budget_s > 0) || o->ranks < 1 || o->vocab_size < 2)
        return tempo_usage(err, "plan: budget, ranks and vocabulary must be positive");
    /* the vocabularies and learning rates tried: the law's (its measured range) */
    int vocabs[QUALITY_MAX_VOCABS] = {o->vocab_size}, n_vocabs = 1;
    if (o->search_vocab && quality_vocab_find(law, o->vocab_size))
        for (int i = 0; i < law->n_vocabs; i++)
            if (law->vocabs[i].vocab != o->vocab_size)
                vocabs[n_vocabs++] = law->vocabs[i].vocab;
    double lrs[N_OF(lr_mults)];
    int n_lrs = 0;
    for (int i = 0; i < N_OF(lr_mults); i++)
        if (lr_mults[i] >= law->lr_mult_min * (1 - 1e-9) && lr_mults[i] <= law->lr_mult_max * (1 + 1e-9))
            lrs[n_lrs++] = lr_mults[i];
    if (n_lrs == 0)
        lrs[n_lrs++] = 1;
    /* the shapes tried: within what the law's shape term measured, or without
     * the term the grid's own aspect window */
    int has_depth = quality_has_depth(law);
    int min_layers = has_depth ? (int)law->depth_layers_min : PLAN_MIN_LAYERS;
    plan_candidate c;
    for (int vi = 0; vi < n_vocabs; vi++)
    for (int li = 0; li < n_lrs; li++)
    for (int wi = 0; wi < N_OF(widths); wi++)
        for (int layers = min_layers; layers <= 64; layers++) {
                int d = widths[wi], hd = head_dim_for(d);
                if (d % hd)
                    continue;
                if (has_depth ? !quality_depth_trusted(law, (double)d / layers, layers)
                              : d < PLAN_MIN_ASPECT * layers || d > PLAN_MAX_ASPECT * layers)
                    continue;
                for (int ci = 0; ci < N_OF(contexts); ci++)
                    for (int bi = 0; bi < N_OF(batch_tokens); bi++) {
                        /* the law has no context term: its runs' context only (a shorter one is
                         * faster, and measured worse than the law would credit it) */
                        if (batch_tokens[bi] < contexts[ci] || (law->context > 0 && contexts[ci] != law->context))
                            continue;
                        for (int oi = 0; oi < N_OF(memory_orders); oi++) {
                            if (memory_orders[oi] && !o->allow_memory)
                                continue;
                            plan_shape sh = {d, layers, hd, contexts[ci], batch_tokens[bi], memory_orders[oi],
                                             vocabs[vi], lrs[li]};
                            if (evaluate(base, chip, law, hybrid, o, &sh, r, &c, err) < 0)
                                return -1;
                        }
                    }
            }
    for (int i = 0; i < r->n_keep; i++)
        plan_interval(law, hybrid, &r->best[i]);
    if (r->n_keep > 0 && o->keep_base && plan_keep_base(base, chip, law, hybrid, o, r, err) < 0)
        return -1;
    if (r->n_keep == 0) {
        if (r->n_too_big > 0 && r->n_too_few_steps == 0)
            return tempo_usage(err, "plan: no config fits in %.3g GB of memory per chip",
                               o->memory_gb > 0 ? o->memory_gb : chip->memory_gb);
        return tempo_usage(err, "plan: budget %.3g s is too small: no config reaches %d optimizer steps on %s",
                           o->budget_s, PLAN_MIN_STEPS, chip->name);
    }
    return 0;
}

void plan_preset_text(const plan_candidate *c, const chip_profile *chip, const plan_options *o, strbuf *out)
{
    strbuf_printf(out,
                  "# planned by `tempo plan` for %s, budget %.0f s, %d rank(s): predicted %.0f tokens/s,\n"
                  "# %.3g tokens seen in %.0f steps, %.3g parameters, val bpb %.3f (interval %.3f to %.3f;\n"
                  "# transformer alone %.3f). A prediction from configs/scaling/, not a measurement.\n"
                  "# Vocabulary %d: train on data from `tempo prepare --vocab %d` (the vocabulary is the\n"
                  "# data's, not a key of this file); learning rates x %.3g of the base preset's.\n",
                  chip->name, o->budget_s, o->ranks, c->step.tokens_per_s, c->tokens_seen, c->steps,
                  c->step.params, c->bpb, c->bpb_lo, c->bpb_hi, c->transformer_bpb, c->cfg.model.vocab_size,
                  c->cfg.model.vocab_size - 1, c->lr_mult);
    plan_preset_keys(&c->cfg, out);
}

void plan_preset_keys(const run_config *cfg, strbuf *out)
{
    strbuf json = {0};
    json_value *v = NULL;
    tempo_error e;
    if (run_config_to_json(cfg, &json, &e) == 0 && json_parse(json.data, json.len, &v, &e) == 0 &&
        v->type == JSON_OBJECT) {
        for (size_t i = 0; i < v->n; i++) {
            const json_value *x = &v->items[i];
            if (!strcmp(v->keys[i], "vocab_size") || !strcmp(v->keys[i], "preset"))
                continue; /* from the data; the file's own name */
            strbuf_printf(out, "%s = ", v->keys[i]);
            if (x->type == JSON_STRING)
                strbuf_puts(out, x->string);
            else if (x->type == JSON_BOOL)
                strbuf_puts(out, x->boolean ? "true" : "false");
            else if (x->type == JSON_NUMBER)
                strbuf_printf(out, "%.9g", x->number);
            strbuf_puts(out, "\n");
        }
    }
    json_free(v);
    strbuf_free(&json);
}

static void explain_terms(const plan_candidate *b, const quality_law *law, strbuf *out);

void plan_explain(const plan_result *r, const chip_profile *chip, const quality_law *law, const plan_options *o,
                  strbuf *out)
{
    const plan_candidate *b = &r->best[0];
    const step_prediction *s = &b->step;
    double ops = s->compute_bound_s + s->memory_bound_s;
    strbuf_printf(out, "searched %ld configs: %ld over the memory limit, %ld under %d steps in the budget\n",
                  r->n_searched, r->n_too_big, r->n_too_few_steps, PLAN_MIN_STEPS);
    strbuf_printf(out, "step %.4g s: FLOP-bound ops %.0f %%, byte-bound ops %.0f %%, fixed overheads %.0f %%%s\n",
                  s->step_s, 100 * s->compute_bound_s / s->step_s, 100 * s->memory_bound_s / s->step_s,
                  100 * s->overhead_s / s->step_s, s->allreduce_s > 0 ? "" : " (one rank: no all-reduce)");
    if (s->allreduce_total_s > 0)
        strbuf_printf(out, "all-reduce of %.3g MB of gradients over %d ranks: %.0f %% of the step waits for it "
                      "(%.0f %% more hides behind the backward pass)\n", 4 * s->params / 1e6, o->ranks,
                      100 * s->allreduce_s / s->step_s, 100 * (s->allreduce_total_s - s->allreduce_s) / s->step_s);
    strbuf_printf(out, "limit: %s", s->compute_bound_s >= s->memory_bound_s ? "compute" : "memory bandwidth");
    strbuf_printf(out, " (%.0f %% of the op time is FLOP-bound at %.3g TFLOP/s %s)\n",
                  ops > 0 ? 100 * s->compute_bound_s / ops : 0, chip->peak_tflops, chip->train_dtype);
    strbuf_printf(out, "memory: %.3g GB per chip of %.3g GB%s\n", s->memory_gb,
                  o->memory_gb > 0 ? o->memory_gb : chip->memory_gb,
                  b->cfg.micro_batch && b->cfg.micro_batch < b->cfg.batch_size ? " (micro-batches needed)" : "");
    double dn = law->fit.A * law->fit.alpha / pow(s->params, law->fit.alpha);
    double dd = law->fit.B * law->fit.beta / pow(b->tokens_effective, law->fit.beta);
    strbuf_printf(out,
                  "shape: the law's marginal gains at the plan: d bpb / d ln N = %.3f, d bpb / d ln D = %.3f; "
                  "the best split of the budget between size and tokens makes them about equal\n",
                  -dn, -dd);
    strbuf_printf(out, "data: %.3g tokens seen of %.3g in the corpus%s", b->tokens_seen, b->corpus_tokens,
                  b->repeats_data ? "" : "\n");
    if (b->repeats_data)
        strbuf_printf(out, ": %.1f epochs, worth %.3g fresh tokens by Muennighoff et al.'s data-constrained "
                           "rule (not fitted here): data-limited\n",
                      b->tokens_seen / b->corpus_tokens, b->tokens_fresh);
    const quality_vocab *qv = quality_vocab_find(law, b->cfg.model.vocab_size);
    if (qv && law->n_vocabs > 1)
        strbuf_printf(out, "vocabulary %d (%.3g bytes per token; the law counts text, and adds %+.3f bpb for it, "
                           "the mean residual of %d grid run(s))%s; tried: %d vocabularies%s\n",
                      b->cfg.model.vocab_size, qv->bytes_per_token, qv->offset, qv->n_runs,
                      b->cfg.memory_order && b->cfg.model.vocab_size != law->vocab_ref
                          ? "; the hybrid relation was measured at the law's own vocabulary only: assumed to hold"
                          : "",
                      o->search_vocab ? law->n_vocabs : 1, o->search_vocab ? "" : " (fixed by --vocab or --data)");
    if (law->lr_mult_max > law->lr_mult_min)
        strbuf_printf(out, "learning rates x %.3g of the base preset's (the law's term %+.3f bpb; measured "
                           "x %.3g..%.3g on runs of %.0f-%.0f steps, and searched only there: %s)\n",
                      b->lr_mult, quality_lr_term(law, b->lr_mult, b->steps), law->lr_mult_min, law->lr_mult_max,
                      law->lr_steps_min, law->lr_steps_max,
                      quality_lr_trusted(law, b->steps) ? "this plan's steps are in that range"
                                                        : "this plan runs longer, so it keeps the preset's rates");
    if (law->batch_crit > 0)
        strbuf_printf(out, "batch: %.0f tokens per step against a critical batch of %.0f at this loss: the law "
                           "counts %.3g of the tokens (D / (1 + batch / critical)); a smaller batch counts more per "
                           "token but runs smaller, slower matrix products\n",
                      b->step.tokens_per_step,
                      quality_batch_crit(law, quality_bpb(&law->fit, b->step.params, b->tokens_fresh)),
                      b->tokens_effective);
    if (b->cfg.memory_order)
        strbuf_printf(out, "count memory of order %d: built in %.0f s of the budget over the whole corpus, "
                           "its file's write beside the first steps costs them %.0f s; the hybrid's bpb from "
                           "the transformer's by the relation in configs/scaling/\n",
                      b->cfg.memory_order, b->memory_build_s, b->memory_save_lost_s);
    if (b->outside_law)
        strbuf_printf(out, "outside the runs the law was fitted on (N %.3g..%.3g, effective D %.3g..%.3g): an extrapolation\n",
                      law->n_min, law->n_max, law->d_min, law->d_max);
    explain_terms(b, law, out);
}

/* --explain's lines on the law's shape and family terms, the reading and what the law does not see. */
static void explain_terms(const plan_candidate *b, const quality_law *law, strbuf *out)
{
    if (quality_has_depth(law)) {
        double aspect = (double)b->cfg.model.d_model / b->cfg.model.n_layers;
        double shape = quality_shape_term(law, aspect, b->steps);
        strbuf_printf(out, "depth against width: d_model / n_layers %.3g costs %+.3f bpb against %.3g at the same "
                           "parameters, tokens and %.0f steps (the law's shape term, measured for aspects %.3g-%.3g, "
                           "%.0f layers or more and %.0f-%.0f steps; the search stays within those aspects and depths)\n",
                      aspect, shape, law->depth_aspect_ref, b->steps, law->depth_aspect_min, law->depth_aspect_max,
                      law->depth_layers_min, law->depth_steps_min, law->depth_steps_max);
    }
    if (law->family_b != 0 || law->family_b_steps != 0 || law->family_b_width != 0)
        strbuf_printf(out, "family: SwiGLU and QK-norm (the base preset's) against the law's grid (ReLU^2, no QK-norm, "
                           "on a val slice): %+.3f bpb at %.0f steps and d_model %d (the law's family term, measured on "
                           "the full val set for %.0f-%.0f steps and widths %.0f-%.0f, %+.3f per doubling of the "
                           "width; scatter %.3f)\n",
                      quality_family_term(law, b->steps, b->cfg.model.d_model), b->steps, b->cfg.model.d_model,
                      law->family_steps_min, law->family_steps_max, law->family_width_min, law->family_width_max,
                      law->family_b_width, law->family_sd);
    strbuf_printf(out, "reading: %s\n", b->cfg.memory_order
                      ? "the mixture reads as the base preset does (the learning reader, adapt_lr): the hybrid "
                        "relation's runs read so, and its t is their transformer read frozen"
                      : "frozen (adapt_lr 0): the law's own quantity");
    char ctx[64];
    if (law->context > 0)
        snprintf(ctx, sizeof ctx, "context %.0f (the law's runs' only)", law->context);
    else
        snprintf(ctx, sizeof ctx, "context 128-512");
    strbuf_printf(out, "context, heads%s%s enter only through throughput (the law has no term for them), within "
                       "bounds around the grid: %s, batch 2,048-16,384 tokens, head width 64%s\n",
                  quality_has_depth(law) ? "" : ", depth against width", law->batch_crit > 0 ? "" : " and batch",
                  ctx, quality_has_depth(law) ? "" : ", d_model / n_layers 32-64");
}
