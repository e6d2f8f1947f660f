/* eval_run.h - what `tempo eval` computes, as library calls: the bits per
 * byte of a loaded model (with its hybrid parts: count memory, cache, match
 * model, mixer) on a data folder's val split or on any text file, and the
 * phase-2 scorecard assembled from the bpb, the ICL summary and the
 * inference benchmark. Printing and flags live in cli/cmd_eval.c; the key
 * names of the documents in eval/eval_result.h. */
#ifndef TEMPO_EVAL_RUN_H
#define TEMPO_EVAL_RUN_H

#include <stdio.h>

#include "core/error.h"
#include "data/tokenizer.h"
#include "eval/eval_result.h"
#include "eval/icl.h"
#include "memory/hybrid.h"
#include "model/model.h"
#include "run/run_config.h"
#include "run/run_parts.h"

/* The sliding windows' stride eval reads with: stride, or context / 2 when 0. */
int eval_run_stride(const run_config *cfg, int stride);

/* bpb of DATA_DIR/val.tok (data_dir) or of a text file (text; exactly one
 * is non-NULL), scored with the run's parts from run_dir as `use` takes
 * them (run/run_parts.h: what tempo compress codes with too). stride 0 =
 * context / 2. r->documents are the text's, r->source points at data_dir
 * or text: r is the phase-1 line (eval_bpb_json). progress (may be NULL):
 * where a long reading says how far it is, a line every 10 s (core/progress.h). */
int eval_run_bpb(const char *run_dir, model *m, const tokenizer *tok, const run_config *cfg, const char *data_dir,
                 const char *text, int stride, int batch, run_parts_use use, FILE *progress,
                 hybrid_bpb_result *r, tempo_error *err);

/* The scorecard's figures from its parts: bpb_json (eval_bpb_json's
 * text, or NULL when no text was scored), the ICL summary and its JSON. The
 * inference figures are left NaN for bench_infer_scorecard (bench/bench_infer.h)
 * to fill. The strings are borrowed. */
void eval_scorecard_fill(eval_scorecard *s, const char *bpb_json, double bpb, const icl_summary *icl,
                         const char *icl_json, int icl_limit, const char *model_name, double seconds);

#endif
