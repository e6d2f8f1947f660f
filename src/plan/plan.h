/* plan.h - `tempo plan`'s search: for a chip, a wall-clock budget, a number
 * of ranks and a memory limit, every candidate shape (width, depth, head
 * width, context, batch, count-memory order, vocabulary, learning-rate
 * multiplier) gets a predicted step time
 * (plan/throughput.h), tokens seen in the budget, and a predicted val bpb
 * with an interval (plan/quality.h); candidates are ranked by predicted bpb.
 * What limits the best one (compute, bandwidth, memory capacity, data, the
 * law's range) is said in plan_result. Writing a preset and printing belong
 * to the CLI, except the preset text itself (plan_preset_text). */
#ifndef TEMPO_PLAN_PLAN_H
#define TEMPO_PLAN_PLAN_H

#include "core/error.h"
#include "core/strbuf.h"
#include "plan/chip.h"
#include "plan/quality.h"
#include "plan/throughput.h"
#include "run/run_config.h"

typedef struct {
    double budget_s;
    int ranks;
    double memory_gb;        /* limit per chip (0: the chip's memory_gb) */
    double host_memory_gb;   /* limit for the count memory on the host (0: 24 GB) */
    double corpus_tokens;    /* training tokens available (the prepared corpus) */
    int vocab_size;          /* from the data (4097 for prepare --vocab 4096); corpus_tokens are in its tokens */
    int search_vocab;        /* 1: try every vocabulary the law has (else vocab_size only) */
    int allow_memory;        /* consider the hybrid model (count memory) */
    int keep_base;           /* 1: the base preset's own shape stays the plan unless beaten by more
                                than the difference's uncertainty (plan_keep_base) */
} plan_options;

typedef struct {
    run_config cfg;          /* a complete, finished config (loadable as a preset) */
    step_prediction step;
    double train_s;          /* budget left to the transformer's steps */
    double memory_build_s;   /* the count memory's build (0: none) */
    double memory_save_lost_s; /* steps' time lost to memory.bin's write beside them (0: none) */
    double tokens_seen;      /* tokens trained on */
    double tokens_fresh;     /* tokens_seen, less repeated epochs' worth */
    double tokens_effective; /* D in the law: tokens_fresh / (1 + batch / the law's batch_crit) */
    double steps;
    double lr_mult;          /* every learning rate of the base preset times this */
    double correction;       /* the law's vocabulary and learning-rate terms at this candidate */
    double corpus_tokens;    /* the corpus in this candidate's tokens */
    double transformer_bpb, transformer_lo, transformer_hi;
    double bpb, bpb_lo, bpb_hi; /* the model as planned (hybrid when memory_order > 0) */
    int outside_law;         /* N or D outside the grid's range */
    int repeats_data;        /* D above the corpus: the law knows no repetition */
} plan_candidate;

#define PLAN_MAX_KEEP 11

typedef enum {
    PLAN_BASE_NOT_TRIED,        /* keep_base off */
    PLAN_BASE_NOT_A_CANDIDATE,  /* the base's shape does not fit the chip or the budget */
    PLAN_BASE_BEATEN,           /* the search's best beats it by more than the margin */
    PLAN_BASE_KEPT              /* best[0] is the base's shape: nothing beat it by more than the margin */
} plan_base_status;

typedef struct {
    int n_keep;
    plan_candidate best[PLAN_MAX_KEEP];   /* [0] the plan, then the runners-up */
    long n_searched, n_too_big, n_too_few_steps;
    plan_base_status base_status;
    double base_bpb;          /* the base's shape, predicted (when a candidate) */
    double base_gain;         /* base_bpb less the search's best's: what moving off the base is predicted to gain */
    double base_margin;       /* that difference's one-sided 95 % uncertainty (plan_difference_margin) */
    plan_candidate searched_best;   /* when kept: the search's best, which it displaced */
} plan_result;

/* One shape of the search space. batch_tokens is per rank; vocab 0 means
 * plan_options' vocab_size, lr_mult 0 means 1. */
typedef struct {
    int d_model, n_layers, head_dim, context, batch_tokens, memory_order;
    int vocab;
    double lr_mult;
} plan_shape;

typedef enum {
    PLAN_OK,            /* a candidate */
    PLAN_NOT_A_CONFIG,  /* the shape makes no valid config (head width, context above the batch) */
    PLAN_TOO_BIG,       /* over the memory limit even with micro-batches */
    PLAN_NO_MEMORY,     /* a count-memory order with no measured relation, over the host's memory,
                           or above the exact-key orders of the vocabulary */
    PLAN_TOO_FEW_STEPS  /* under PLAN_MIN_STEPS in the budget */
} plan_verdict;

/* Predict one shape (what the search does for each): 1 with *c filled when
 * it is a candidate (the point prediction only: plan_interval adds the
 * interval), 0 when it is not (*verdict says why), -1 on an error. */
int plan_predict(const run_config *base, const chip_profile *chip, const quality_law *law,
                 const quality_hybrid *hybrid, const plan_options *o, const plan_shape *s, plan_candidate *c,
                 plan_verdict *verdict, tempo_error *err);

/* Fill c's bpb interval (the law's bootstrap replicates, widened by its
 * residual spread) and the hybrid's. */
void plan_interval(const quality_law *law, const quality_hybrid *hybrid, plan_candidate *c);

/* The standard deviation of a candidate's transformer bpb around the law that
 * the law's correction terms add off their references: the family's, the
 * shape term's (aspect off its reference), the learning rate's (multiplier
 * off 1); the runs' scatter around each term. */
double plan_term_scatter_sd(const quality_law *law, const plan_candidate *c);

/* One-sided 95 % uncertainty (1.645 sd) of a's predicted bpb less b's: the
 * law's bootstrap replicates paired (both under each replicate), plus what
 * each run scatters on its own (plan_term_scatter_sd through the hybrid
 * relation's slope, and the relation's residual sd for a hybrid),
 * independent between the two. */
double plan_difference_margin(const quality_law *law, const quality_hybrid *hybrid, const plan_candidate *a,
                              const plan_candidate *b);

/* After a search: predict the base preset's own shape (its width, depth,
 * heads, context, batch, memory order, rates; the data's vocabulary) and make
 * it r->best[0] unless the search's best is predicted better by more than
 * plan_difference_margin of the two; r->base_* say which and by how much.
 * A run config of the base's shape is the base itself (the plan's preset
 * trains what the base trains). -1 on an error. */
int plan_keep_base(const run_config *base, const chip_profile *chip, const quality_law *law,
                   const quality_hybrid *hybrid, const plan_options *o, plan_result *r, tempo_error *err);

/* 1 when a and b are one shape of the runners-up table: the same width, depth,
 * memory order and vocabulary (the table keeps one entry per shape). */
int plan_same_shape(const plan_candidate *a, const plan_candidate *b);

/* The shape a candidate was made from (inverse of plan_predict). */
void plan_shape_of(const plan_candidate *c, int ranks, plan_shape *s);

/* The four shapes `tempo plan --validate` trains beside the plan: width one
 * step down and up the search's list of widths (skipping those that make no
 * whole heads; half of the smallest below it), each with the search's head
 * width for it; depth one less and one
 * more (with one layer there is no less: two more instead, labelled
 * "depth++"). Context, batch and memory order stay the plan's. Returns -1
 * when p's width is not in the list or is its largest. */
#define PLAN_NEIGHBOURS 4
int plan_neighbours(const plan_shape *p, plan_shape out[PLAN_NEIGHBOURS], const char *labels[PLAN_NEIGHBOURS]);

/* Search. Fails (code 2) when no candidate fits: the budget too small for
 * the minimum number of steps, or the memory limit for every shape; the
 * message says which. base supplies the optimizer settings and loop keys;
 * with o->keep_base, plan_keep_base follows the search. */
int plan_search(const run_config *base, const chip_profile *chip, const quality_law *law,
                const quality_hybrid *hybrid, const plan_options *o, plan_result *r, tempo_error *err);

/* The chosen config as a preset file (header comment with the prediction,
 * then plan_preset_keys). */
void plan_preset_text(const plan_candidate *c, const chip_profile *chip, const plan_options *o, strbuf *out);
/* Every key of cfg but vocab_size (the data's) and preset, as "key = value"
 * lines in the key table's order. */
void plan_preset_keys(const run_config *cfg, strbuf *out);

/* Why the plan is what it is: a few lines of plain text. */
void plan_explain(const plan_result *r, const chip_profile *chip, const quality_law *law, const plan_options *o,
                  strbuf *out);

/* Tokens seen, discounted for repetition beyond `unique` (the corpus):
 * Muennighoff et al. 2023 ("Scaling Data-Constrained Language Models"):
 * U (1 + R* (1 - exp(-R / R*))), R = seen / U - 1 repeated epochs, R* = 15.4.
 * An assumption taken from that paper, not fitted on this machine. */
double plan_effective_tokens(double seen, double unique);

/* Minimum optimizer steps a candidate must reach in the budget (the grid's
 * shortest runs had 50). */
#define PLAN_MIN_STEPS 50

#endif
