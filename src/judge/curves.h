/* curves.h - a run's learning curves for the report: train loss and val bpb
 * against elapsed seconds, read from the run's metrics.jsonl (written by
 * the submission, so read defensively: bounded size, malformed lines and
 * non-finite numbers skipped), thinned to a few hundred points, and kept as
 * JSON in the leaderboard so the report does not need the run folder:
 *   {"train_loss": [[t, v], ...], "val_bpb": [[t, v], ...]}
 * The lines are read by train/metrics_log.h (which owns the format): a step
 * line counts for train_loss, a val slice or the full validation for
 * val_bpb, when its elapsed_s and figure are finite. Drawing lives in
 * judge/plot_svg.h. */
#ifndef TEMPO_JUDGE_CURVES_H
#define TEMPO_JUDGE_CURVES_H

#include <stddef.h>

#include "core/error.h"
#include "core/strbuf.h"

#define JUDGE_CURVE_MAX_POINTS 300
#define JUDGE_METRICS_MAX_BYTES (64u << 20)

typedef struct {
    double *t, *v;
    size_t n, cap;
} judge_series;

typedef struct {
    judge_series train_loss, val_bpb;
    size_t lines_skipped;   /* malformed or irrelevant lines */
} judge_curves;

/* Read path (a missing file gives empty curves and returns 0; only the first
 * JUDGE_METRICS_MAX_BYTES are read; lines over 64 KiB are skipped), then
 * thin each series to at most JUDGE_CURVE_MAX_POINTS. */
int judge_curves_read(const char *path, judge_curves *c, tempo_error *err);

/* Append one point (the series grows; returns -1 on out of memory). */
int judge_series_push(judge_series *s, double t, double v);

/* Thin s to at most max_points: consecutive points are averaged in equal
 * buckets, the last point is kept as it is. */
void judge_series_thin(judge_series *s, size_t max_points);

void judge_curves_to_json(const judge_curves *c, strbuf *out);
/* Parse what judge_curves_to_json wrote (tolerates absent series). */
int judge_curves_from_json(const char *text, judge_curves *c, tempo_error *err);
void judge_curves_free(judge_curves *c);

#endif
