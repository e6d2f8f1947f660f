/* eval_result.h - the documents `tempo eval` prints, the one place that
 * knows their key names: the phase-1 result (bits per byte of a text, one
 * JSON line) and the phase-2 scorecard (bpb, ICL, inference speed). The
 * judge reads both back from the eval it runs. Computing the figures lives
 * in eval/eval_run.h; this file only writes and reads them.
 *
 * phase 1: {"bpb", "bits", "loss", "bytes", "tokens", "documents",
 *   "context", "stride", "seconds", "model_seconds", "mixture_seconds",
 *   "memory_order", "cache_order", "match_length", "adapt", "adapt_lr"
 *   (the transformer's rate while reading; 0: it read frozen), "mixer",
 *   "bpb_linear" (the mixture before its calibration stage),
 *   "components": {name: {"bpb", "weight"}}, "first_separator", "precision"
 *   (the transformer's products: "fp32", or "bf16" where the model's
 *   bf16_products and the CPU, or --precision on a GPU, had them), "source"}
 * phase 2: {"phase": 2, "bpb", "core", "core_label", "core_entries",
 *   "core_of", "icl_limit", "decode_tokens_per_s", "prefill_tokens_per_s",
 *   "time_to_first_token_s", "best_batch", "best_decode_tokens_per_s",
 *   "bpb_detail": <phase 1 object or null>, "icl": {...}, "inference":
 *   {...}, "model", "seconds"} */
#ifndef TEMPO_EVAL_RESULT_H
#define TEMPO_EVAL_RESULT_H

#include <stdint.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "eval/bpb_result.h"

/* The phase-1 line of a hybrid reading (eval_run_bpb's result). */
int eval_bpb_json(const hybrid_bpb_result *r, strbuf *out, tempo_error *err);

/* The figure the judge reads back from a phase-1 line, in bpb.h's type:
 * bpb, bits, loss and seconds NaN when absent (a null bpb, a model that
 * diverged, too); bytes, tokens, context and stride 0 when absent or not
 * a whole number that the type holds. -1 (err: "eval output: ...") unless
 * line is an object with "bpb" a number or null. */
int eval_bpb_read(const char *line, bpb_result *f, tempo_error *err);

typedef struct {
    double bpb;                    /* NaN: no text was scored */
    const char *bpb_detail;        /* the phase-1 object's JSON, or NULL */
    double core;                   /* NaN: no table entry evaluated */
    int core_entries, core_of, icl_limit;
    double decode_tokens_per_s;    /* batch 1 */
    double prefill_tokens_per_s, time_to_first_token_s;
    int best_batch;
    double best_decode_tokens_per_s;
    const char *icl_json;          /* icl_summary_json's object, or NULL */
    const char *inference_json;    /* bench_infer_summary_json's object, or NULL */
    const char *model;
    double seconds;
} eval_scorecard;

int eval_scorecard_json(const eval_scorecard *s, strbuf *out, tempo_error *err);

/* Read the two figures the phase-2 score needs from a scorecard line: NaN
 * when absent or not numbers. -1 (err: "scorecard: ...") when the line is
 * not a JSON object. */
int eval_scorecard_read(const char *line, double *core, double *decode_tokens_per_s, tempo_error *err);

#endif
