/* run_result.h - the trainer's result document, result.json: the one place
 * that knows its key names. Written by `tempo train` (the CLI prints it and
 * stores it in the run folder), read by the judge (the submission's own
 * figures) and by `tempo bench infer` (the training speed of a run).
 *
 * The writer puts every figure of train_result under a fixed key; the
 * reader is lenient, because the judge reads the file of a submission that
 * may have been written by anything: an absent or ill-typed figure is
 * unknown (NaN, or -1 for a count), never an error. Only text that is not a
 * JSON object is an error. What the keys mean: `tempo train --help`. */
#ifndef TEMPO_RUN_RESULT_H
#define TEMPO_RUN_RESULT_H

#include <stddef.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "train/trainer.h"

/* The file's name in a run folder. */
#define RUN_RESULT_FILE "result.json"

/* result.json for a finished run: r, plus the facts of how it ran from o
 * (threads, seed) and whether each thread had its own core. */
int run_result_json(const train_result *r, const train_options *o, int threads_pinned, strbuf *out,
                    tempo_error *err);

/* An MFU over 1 means the cached peak was measured while something else ran:
 * it is no figure at all. Sets r->mfu to NaN and returns 1 then, else 0. */
int run_result_drop_impossible_mfu(train_result *r);

/* The run's scorecard for people, one line: val bpb (and the transformer's
 * alone), train seconds of the budget and the overrun, steps, tokens/s, MFU.
 * NaN figures read "n/a". */
void run_result_scorecard(const train_result *r, char *out, size_t n);

/* The figures other programs read back. */
typedef struct {
    double val_bpb, train_seconds, tokens_per_second, mfu;  /* NaN when unknown */
    double val_bpb_transformer, budget_seconds, memory_seconds; /* NaN when unknown (no count memory: no split) */
    long long steps, tokens, params;                        /* -1 when unknown */
} run_result_summary;

/* Read result.json text (len bytes). -1 (err: "result.json: ...") when the
 * text is not one JSON object; otherwise 0 with unknown figures as above. A
 * count that is not a whole number in [0, 2^53] is unknown: casting a
 * larger double to long long is undefined. */
int run_result_read(const char *text, size_t len, run_result_summary *s, tempo_error *err);

#endif
