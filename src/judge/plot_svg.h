/* plot_svg.h - a run's learning curves drawn as one inline SVG element (no
 * script, no external resources): two panels side by side, train loss and
 * val bpb against elapsed seconds, each with its own axes, "nice" tick
 * labels and a polyline per series; the judge's own validation bpb is a
 * marked point on the val panel. Colours are fixed (tests look for them):
 * train loss JUDGE_SVG_LOSS_COLOR, val bpb JUDGE_SVG_BPB_COLOR, judged bpb
 * JUDGE_SVG_JUDGED_COLOR. Data come from judge/curves.h. */
#ifndef TEMPO_JUDGE_PLOT_SVG_H
#define TEMPO_JUDGE_PLOT_SVG_H

#include "core/strbuf.h"
#include "judge/curves.h"

#define JUDGE_SVG_LOSS_COLOR "#1f77b4"
#define JUDGE_SVG_BPB_COLOR "#d62728"
#define JUDGE_SVG_JUDGED_COLOR "#2ca02c"

/* Append <svg ...>...</svg> for the curves. judged_t / judged_bpb: where to
 * mark the judge's bpb (NaN: no mark). id makes element ids unique. */
void judge_svg_run_plot(strbuf *out, const judge_curves *c, double judged_t, double judged_bpb, const char *id);

#endif
