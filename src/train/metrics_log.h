/* metrics_log.h - the training metrics stream, RUN_DIR/metrics.jsonl: one
 * JSON object per line, the one place that knows its key names. The trainer
 * writes it (rank 0), the judge reads it back for learning curves.
 *
 * Every line has "step", "elapsed_s" (seconds of training so far) and
 * "tokens". A step line adds "train_loss", "lr", "tokens_per_s",
 * "grad_norm", "step_s"; an event line adds one figure under the event's
 * name ("val_bpb_slice": the periodic val slice; "val_bpb": the full final
 * validation; "diverged": the loss that tripped the guard) and may add a
 * "note". Each line goes out in one write(2) as it is logged, so a crash
 * loses at most the line being written; a write that fails (a full disk) is
 * an error for the caller, and the file is cut back to its last complete
 * line. On resume the lines after the checkpoint's step are dropped first
 * (they are logged again). */
#ifndef TEMPO_METRICS_LOG_H
#define TEMPO_METRICS_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/strbuf.h"

#define METRICS_LOG_FILE "metrics.jsonl"

typedef enum {
    METRICS_STEP = 0,
    METRICS_VAL_SLICE,   /* "val_bpb_slice" */
    METRICS_VAL_FULL,    /* "val_bpb" */
    METRICS_DIVERGED,    /* "diverged" */
    METRICS_OTHER,       /* a line of none of these kinds (read only) */
} metrics_kind;

typedef struct {
    metrics_kind kind;
    int64_t step;        /* -1 when absent (read) */
    double elapsed_s;    /* NaN when absent (read) */
    uint64_t tokens;
    double value;        /* train_loss of a step line; the event's figure; NaN when absent */
    double lr, tokens_per_s, grad_norm, step_s;   /* step lines only */
    const char *note;    /* events; NULL = none (not filled by the reader) */
} metrics_record;

/* The JSON text of one line (without the newline). */
int metrics_record_json(const metrics_record *r, strbuf *out, tempo_error *err);

/* Read one line (no newline). -1 (err: the parse error) when it is not a
 * JSON object; fields absent or of the wrong type are unknown as above.
 * The kind is the first key present (a number, or null for a non-finite
 * figure) of: "train_loss" (step), "val_bpb_slice", "val_bpb", "diverged";
 * else OTHER. */
int metrics_record_read(const char *line, size_t len, metrics_record *r, tempo_error *err);

typedef struct {
    int open;            /* 0: a log that writes nothing (ranks other than 0; zeroed or closed) */
    int fd;
    char path[1100];
} metrics_log;

/* Open RUN_DIR/metrics.jsonl: new (truncated), or, with resume_step >= 0,
 * keeping only the complete lines of steps <= resume_step and appending. */
int metrics_log_open(metrics_log *m, const char *run_dir, int64_t resume_step, tempo_error *err);
/* Append one line (a closed or NULL log ignores it and returns 0). A write
 * that fails (ENOSPC, EIO) returns -1 with err "<path>: write failed: ...",
 * the line taken back out of the file so it does not end torn. */
int metrics_log_write(metrics_log *m, const metrics_record *r, tempo_error *err);
void metrics_log_close(metrics_log *m);

#endif
