/* quality.h - the planner's quality model: the fitted law
 *   bpb(N, D) = E + A / N^alpha + B / D^beta
 * for the transformer (N parameters, D training tokens seen), with bootstrap
 * replicates of the fit for an interval, and the hybrid model's relation to
 * it (docs/hybrid_model.md): the mixture with a count memory of order K is
 *   hybrid = min(t, limit_K - slope * x - curve * x^2 - calibration_gain),
 *   x = max(0, pivot - t)
 * (t: transformer bpb; the gain is the calibration stage's, memory/calibration.h;
 * curve 0 is a line: the mixture gains more per bpb of transformer the
 * better the transformer is, measured from 300 steps to 30 minutes)
 * plus the memory's build seconds and bytes per training token.
 *
 * Two corrections ride on the law, each fitted on grid runs that differ from
 * the law's own in one setting only (scripts/fit_scaling.py):
 *   vocabulary V: D counts text, D = tokens x bytes_per_token(V) /
 *     bytes_per_token(the law's vocabulary), and an offset per vocabulary
 *     (the mean residual of its runs; 0 for the law's own);
 *   learning rate x m (every rate of the preset scaled by m), S optimizer
 *     steps: + (b + b_steps log2(S / S_ref)) log2 m + c (log2 m)^2, trusted
 *     within the multipliers and the steps measured, its scatter lr_sd;
 *   shape, at aspect ratio a = d_model / n_layers and S optimizer steps:
 *     + (depth_b + depth_b_steps log2(S / depth_steps_ref)) x + depth_c x^2,
 *     x = log2(a / depth_aspect_ref), fitted on runs that differ from a
 *     reference shape of the same width and length in depth only, trusted
 *     within the aspects and depths measured (S clamped to the steps
 *     measured: outside them the term is the nearest length's), its
 *     scatter depth_sd;
 *   the family (the planner's models are cpu-default's: SwiGLU and QK-norm,
 *     where the law's grid is cpu-transformer's ReLU^2 without QK-norm), at
 *     S optimizer steps and width d_model: + family_b + family_b_steps
 *     log2(S / family_steps_ref) + family_b_width log2(d_model /
 *     family_width_ref), fitted on that family's runs read frozen on the full
 *     val set, S and d_model clamped to those measured, its scatter
 *     family_sd (the width part: wider models of the family beat the law's
 *     account of their parameters, measured up to 30-minute runs).
 * The law's runs were all of one context (`context`): it has no term for
 * another, and the search keeps to it.
 * Both files
 * are written by scripts/fit_scaling.py into configs/scaling/ as `key = value`
 * lines (`#` comments); the fit itself is not done here. */
#ifndef TEMPO_PLAN_QUALITY_H
#define TEMPO_PLAN_QUALITY_H

#include "core/error.h"

#define QUALITY_MAX_BOOT 512
#define QUALITY_MAX_ORDER 8
#define QUALITY_MAX_VOCABS 8

typedef struct {
    int vocab;                   /* ids incl. the separator (prepare --vocab V-1) */
    double bytes_per_token;      /* of the bundled corpus's training split under it */
    double offset;               /* bpb added at this vocabulary (0 at the law's own) */
    int n_runs;                  /* grid runs the offset rests on (0: the law's own) */
} quality_vocab;

typedef struct {
    double E, A, alpha, B, beta;
} quality_coef;

typedef struct {
    quality_coef fit;
    int n_boot;
    quality_coef boot[QUALITY_MAX_BOOT];
    double residual_sd;          /* of the grid runs around the fit, bpb */
    double n_min, n_max, d_min, d_max; /* the grid's range (D as the law sees it: effective tokens) */
    double batch_crit;           /* tokens per step where a step's tokens count half (0: no batch term) */
    double batch_crit_bpb;       /* the bpb batch_crit was measured at (0: batch_crit at every bpb) */
    double batch_crit_exponent;  /* batch_crit grows as (batch_crit_bpb / bpb)^exponent */
    int n_runs;
    int vocab_ref;               /* the vocabulary of the law's own runs (0: no vocabulary term) */
    int n_vocabs;
    quality_vocab vocabs[QUALITY_MAX_VOCABS];   /* vocab_ref's among them */
    double lr_b, lr_b_steps, lr_c;  /* the learning-rate term (0, 0, 0: none) */
    double lr_steps_ref;            /* S_ref of the term's slope in steps */
    double lr_steps_min, lr_steps_max;          /* the steps measured (0, 0: any) */
    double lr_sd;                   /* the runs' scatter around the term, bpb */
    double lr_mult_min, lr_mult_max;            /* the multipliers measured (1, 1: none) */
    double depth_b, depth_c;        /* the shape term (0, 0: none) */
    double depth_b_steps;           /* its slope's change per doubling of the steps from depth_steps_ref */
    double depth_steps_ref;
    double depth_steps_min, depth_steps_max;    /* the steps measured (0, 0: any; S is clamped to them) */
    double depth_aspect_ref;        /* d_model / n_layers where the term is 0 */
    double depth_aspect_min, depth_aspect_max;  /* the aspects measured (0, 0: no term) */
    double depth_layers_min;        /* the fewest layers measured (0: no term) */
    double depth_sd;                /* the runs' scatter around the term, bpb */
    double family_b, family_b_steps;  /* the family term (0, 0: none) */
    double family_steps_ref;
    double family_steps_min, family_steps_max;  /* the steps measured (0, 0: any; S is clamped to them) */
    double family_sd;               /* the runs' scatter around the term, bpb */
    double family_b_width;          /* per doubling of d_model from family_width_ref (0: no width part) */
    double family_width_ref;
    double family_width_min, family_width_max;  /* the widths measured (0, 0: any; d_model is clamped to them) */
    double context;                 /* the context of the law's runs (0: not given) */
} quality_law;

typedef struct {
    double pivot, slope;
    double curve;                /* the x^2 term (0: a line) */
    double residual_sd;          /* of the runs around the relation, bpb (0: not given) */
    double calibration_gain;     /* bpb the calibration stage takes off the linear mixture (0: not given) */
    double save_s_per_gb;        /* writing memory.bin beside the training, seconds per GB (0: not given) */
    double save_drag;            /* the share of the steps' speed lost while it is written, [0, 1) */
    int vocab;                   /* the vocabulary of the relation's runs (0: not given, any) */
    double limit[QUALITY_MAX_ORDER + 1];       /* 0: that order not measured */
    double build_s_per_mtok[QUALITY_MAX_ORDER + 1];
    double bytes_per_token[QUALITY_MAX_ORDER + 1];
} quality_hybrid;

/* Read the law file (keys E, A, alpha, B, beta, residual_sd, n_min, n_max,
 * d_min, d_max, n_runs, optional batch_crit, and `boot = E A alpha B beta`
 * lines; optional vocab_ref with vocab.V.bytes_per_token, vocab.V.offset and
 * vocab.V.runs for each vocabulary, vocab_ref's included; optional lr_b,
 * lr_b_steps, lr_c, lr_sd, lr_steps_ref, lr_steps_min, lr_steps_max,
 * lr_mult_min, lr_mult_max; optional depth_b, depth_b_steps, depth_c,
 * depth_sd, depth_aspect_ref, depth_aspect_min, depth_aspect_max,
 * depth_layers_min, depth_steps_ref, depth_steps_min, depth_steps_max;
 * optional family_b, family_b_steps, family_sd, family_steps_ref,
 * family_steps_min, family_steps_max, family_b_width, family_width_ref,
 * family_width_min, family_width_max; optional context).
 * Errors name the
 * file and line, or the missing key (code 2). */
int quality_law_load(quality_law *q, const char *path, tempo_error *err);
int quality_law_parse(quality_law *q, const char *text, size_t len, const char *path, tempo_error *err);

/* Read the hybrid file (pivot, slope, limit.K, build_s_per_mtok.K, bytes_per_token.K; optional
 * curve, residual_sd, calibration_gain, save_s_per_gb, save_drag, vocab). */
int quality_hybrid_load(quality_hybrid *h, const char *path, tempo_error *err);
int quality_hybrid_parse(quality_hybrid *h, const char *text, size_t len, const char *path, tempo_error *err);

/* The critical batch (tokens per step) for a model at `bpb`: batch_crit,
 * grown as the loss falls by (batch_crit_bpb / bpb)^batch_crit_exponent
 * (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section
 * 5.1: B_crit ~ L^(-1/alpha_B), alpha_B ~ 0.21, an exponent of ~4.8; an
 * assumption taken from that paper, not fitted here: this machine's runs span
 * too little loss to fit it). 0 when the law has no batch term. */
double quality_batch_crit(const quality_law *q, double bpb);

/* The tokens the law counts for `tokens` seen in steps of batch_tokens by a
 * model of n_params: tokens / (1 + batch_tokens / B_crit), the critical-batch
 * trade-off of McCandlish et al. 2018 ("An Empirical Model of Large-Batch
 * Training": the examples needed grow as 1 + B / B_noise), B_crit from
 * quality_batch_crit at the law's bpb without the batch term; tokens itself
 * when the law has no batch_crit. */
double quality_tokens_effective(const quality_law *q, double n_params, double tokens, double batch_tokens);

/* The law at (N, D). */
double quality_bpb(const quality_coef *c, double n_params, double tokens);

/* Point prediction and a ~90 % interval: the 5th and 95th percentiles over
 * the bootstrap replicates, widened by 1.645 x residual_sd. */
void quality_predict(const quality_law *q, double n_params, double tokens, double *bpb, double *lo, double *hi);

/* The law's entry for vocabulary v, or NULL when it has none. */
const quality_vocab *quality_vocab_find(const quality_law *q, int vocab);

/* Tokens under vocabulary v as the law counts them (text seen, in tokens of
 * the law's vocabulary); tokens itself without a vocabulary term or entry. */
double quality_tokens_in_law(const quality_law *q, int vocab, double tokens);

/* The corrections at vocabulary v, learning-rate multiplier m, `steps`
 * optimizer steps, aspect ratio d_model / n_layers and width d_model: the
 * vocabulary's offset plus the learning-rate, shape and family terms (0 when
 * absent; aspect 0: no shape term; d_model 0: no family width part). */
double quality_correction(const quality_law *q, int vocab, double lr_mult, double steps, double aspect,
                          double d_model);

/* Its parts: the learning-rate term at multiplier m and `steps` steps, and
 * the shape term at aspect ratio d_model / n_layers (the steps clamped to
 * those measured); each 0 when the law has none (aspect 0: no shape term). */
double quality_lr_term(const quality_law *q, double lr_mult, double steps);
double quality_shape_term(const quality_law *q, double aspect, double steps);
/* The family term at `steps` steps and width d_model (each clamped to those
 * measured; d_model 0: no width part); 0 without one. */
double quality_family_term(const quality_law *q, double steps, double d_model);

/* 1 when the law has a shape term. */
int quality_has_depth(const quality_law *q);

/* 1 when a model of this aspect ratio and depth is inside what the shape
 * term measured (always 1 without the term: the caller keeps its own
 * window). */
int quality_depth_trusted(const quality_law *q, double aspect, int n_layers);

/* 1 when the learning-rate term was measured for runs of `steps` steps (or
 * has no step range). */
int quality_lr_trusted(const quality_law *q, double steps);

/* The hybrid's bpb from the transformer's at memory order K (t itself when
 * K is 0 or not measured). */
double quality_hybrid_bpb(const quality_hybrid *h, int order, double transformer_bpb);

#endif
