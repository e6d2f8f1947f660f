/* score.h - what a judged model scores, and the formula that combines the
 * phase-2 parts. Lower is better in both phases.
 *
 * Phase 1: score = val bpb of the model on the official validation text, as
 * `tempo eval --text VAL` prints it (docs/architecture.md, "An evaluation").
 *
 * Phase 2: score = bpb - W_ICL * core - speed_term, where
 *   core        = the CORE score of the phase-2 scorecard (mean centered ICL
 *                 accuracy, (acc - base) / (1 - base), over the tasks present;
 *                 0 = chance, 1 = perfect),
 *   speed_term  = clamp(W_SPEED * log2(decode_bytes_per_s / SPEED_REF), -CAP, CAP)
 *   decode_bytes_per_s = decode tokens/s at batch 1 (scorecard) x bytes per
 *                 token of the model's tokenizer on the validation text
 *                 (from the bpb evaluation: bytes / tokens), so that the
 *                 speed is tokenizer-agnostic like bpb.
 * So 0.1 of CORE is worth 0.1 bpb, and each doubling of decode speed 0.05 bpb,
 * at most 0.25 either way. The constants live here and nowhere else.
 * Nothing here runs a process; judge/judge.c runs `tempo eval` and reads
 * its last stdout line (eval_bpb_read, eval/eval_result.h, into the one bpb
 * figure type, eval/bpb_result.h's bpb_result) and the scorecard's (below). */
#ifndef TEMPO_JUDGE_SCORE_H
#define TEMPO_JUDGE_SCORE_H

#include "core/error.h"
#include "core/strbuf.h"
#include "eval/bpb_result.h"
#include "judge/attempt.h"

#define JUDGE_W_ICL 1.0
#define JUDGE_W_SPEED 0.05
#define JUDGE_SPEED_REF_BYTES_PER_S 1000.0
#define JUDGE_SPEED_TERM_CAP 0.25

/* Lenient read of a submission's own result.json text (tempo's trainer
 * writes one; a custom command may write anything): sets r's
 * train_seconds, steps, tokens, params, tokens_per_second and mfu from the
 * numbers present and leaves the rest as they were. A count that is not a
 * whole number in [0, 2^53] is left unknown (-1): the file is the
 * submission's, and casting a double beyond long long is undefined. */
void judge_parse_run_result(const char *text, size_t len, judge_run_record *r);

/* The phase-2 parts and the combined score. */
typedef struct {
    int available;               /* every part present and finite: combined is valid */
    char reason[256];            /* when not available: why */
    double bpb;                  /* phase-1 bpb (judge's evaluation) */
    double core;                 /* scorecard CORE */
    double decode_tokens_per_s;  /* scorecard, batch 1 */
    double bytes_per_token;      /* val bytes / val tokens */
    double decode_bytes_per_s;
    double icl_term;             /* W_ICL * core */
    double speed_term;           /* clamped W_SPEED * log2(decode_bytes_per_s / REF) */
    double combined;             /* bpb - icl_term - speed_term */
} judge_phase2;

/* Start p for a model whose phase-1 evaluation gave e (parts unavailable;
 * bytes per token unknown when e's bytes or tokens are 0, unknown). */
void judge_phase2_init(judge_phase2 *p, const bpb_result *e);

/* Mark the parts unavailable, with a reason (printf-style). */
void judge_phase2_unavailable(judge_phase2 *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Read the scorecard line of `tempo eval --phase 2` (eval/eval_result.h
 * owns its keys: "core" and "decode_tokens_per_s") and compute the combined
 * score. A missing or non-finite part leaves p unavailable with the reason;
 * returns 0 when the combined score is valid. */
int judge_phase2_from_scorecard(judge_phase2 *p, const char *line);

/* Compute the terms and the combined score from p's parts (sets available). */
void judge_phase2_combine(judge_phase2 *p);

/* The formula with its parts, one line, e.g. "score 2.1834 = bpb 2.2634 -
 * 1.0 x CORE 0.0500 - speed 0.0300 (0.05 x log2(1520 B/s / 1000 B/s))". */
void judge_phase2_describe(const judge_phase2 *p, strbuf *out);

/* The formula in words (recorded with every attempt). */
const char *judge_score_formula(int phase);

#endif
