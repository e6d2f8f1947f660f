/* plan_validate.h - `tempo plan --validate`: train the plan and its four
 * neighbours (plan_neighbours) for the budget on this machine, each with
 * several seeds, by running `tempo train` as a child process (the judge's
 * runner, judge/runner.h: its own process group, a deadline, capped logs),
 * and compare the measured val bpb with the prediction. Choosing the plan
 * and predicting are plan.h's; printing the comparison and the targets is
 * here (plan_validate_report), flags are the CLI's.
 *
 * One folder per run under work_dir, named by the budget, the shape and the
 * seed (b120-d96-l1-h3-c128-r16-m5-s1): preset.conf (the keys trained),
 * train.out / train.log (the child's output), and the run's own files. A
 * folder whose result.json holds a val bpb for the same preset and budget is
 * taken as done, so an interrupted validation continues where it stopped.
 * After a run its bulky files (memory.bin, the checkpoint, the model) are
 * removed unless keep_files. */
#ifndef TEMPO_PLAN_VALIDATE_H
#define TEMPO_PLAN_VALIDATE_H

#include "core/error.h"
#include "core/strbuf.h"
#include "plan/plan.h"

#define PLAN_VALIDATE_MAX_SEEDS 8
#define PLAN_VALIDATE_ROWS (1 + PLAN_NEIGHBOURS)

typedef struct {
    const char *tempo;     /* the tempo binary to run */
    const char *data_dir;  /* a prepared corpus */
    const char *work_dir;  /* one folder per run (created) */
    double budget_s;
    int seeds;             /* seeds 1..seeds, at most PLAN_VALIDATE_MAX_SEEDS */
    int threads;
    int keep_files;
    int ranks;             /* the plan's ranks (1: validation runs one process) */
} plan_validate_options;

typedef struct {
    const char *label;     /* "plan", "width-", "width+", "depth-", "depth+" or "depth++" */
    plan_candidate pred;   /* with its interval */
    int n_runs;            /* seeds tried */
    int n_ok;              /* of them with a measured val bpb */
    double bpb[PLAN_VALIDATE_MAX_SEEDS];             /* NaN: the run failed */
    double transformer_bpb[PLAN_VALIDATE_MAX_SEEDS]; /* the transformer part of the hybrid (NaN: none) */
    double tokens_per_s[PLAN_VALIDATE_MAX_SEEDS];
    double tokens[PLAN_VALIDATE_MAX_SEEDS];
    char failure[1800];    /* the first failed run, in words ("" when none) */
} plan_validate_row;

/* The plan (rows[0]) and its neighbours, predicted for the same options;
 * fills *n_rows. A neighbour that is not a candidate (too few steps, say)
 * is predicted anyway where it makes a config, marked by pred.steps 0. */
int plan_validate_rows(const run_config *base, const chip_profile *chip, const quality_law *law,
                       const quality_hybrid *hybrid, const plan_options *o, const plan_candidate *plan,
                       plan_validate_row rows[PLAN_VALIDATE_ROWS], int *n_rows, tempo_error *err);

/* Train every row for every seed (seed by seed, so that an early stop
 * leaves every config with as many seeds as possible), printing a line to
 * stderr per run. Returns 0 when every run produced a val bpb, 1 when some
 * failed (said in the rows), -1 when nothing could be started (err). */
int plan_validate_train(const plan_validate_options *vo, const chip_profile *chip, const plan_options *po,
                        plan_validate_row *rows, int n_rows, tempo_error *err);

/* Predicted against measured per row, and the two targets: the
 * plan within 0.02 bpb of its best neighbour (mean over seeds), predicted
 * within 0.03 of measured. Plain text. */
void plan_validate_report(const plan_validate_options *vo, const plan_validate_row *rows, int n_rows, strbuf *out);

/* The same as one JSON object (validate.json in work_dir). */
int plan_validate_json(const plan_validate_options *vo, const plan_validate_row *rows, int n_rows, strbuf *out,
                       tempo_error *err);

/* Mean of the measured bpb over the row's successful seeds (NaN: none). */
double plan_validate_mean(const plan_validate_row *r);

#endif
