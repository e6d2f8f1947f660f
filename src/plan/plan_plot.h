/* plan_plot.h - `tempo plan --plot`: the planner's prediction of val bpb
 * against the wall-clock budget, for several chips, as one self-contained
 * SVG (no script, no external resources). Three steps, each testable alone:
 * loading the chip list (a comma list of files, or every *.conf of a
 * folder), computing the points (plan_search per chip and budget: the
 * chosen plan's bpb and interval, and the same plan's transformer alone),
 * and drawing them (x: budget on a log axis, y: predicted bpb). The search
 * itself is plan/plan.h; writing the file and flags belong to the CLI. */
#ifndef TEMPO_PLAN_PLAN_PLOT_H
#define TEMPO_PLAN_PLAN_PLOT_H

#include "core/error.h"
#include "core/strbuf.h"
#include "plan/chip.h"
#include "plan/plan.h"
#include "plan/quality.h"
#include "run/run_config.h"

#define PLAN_PLOT_MAX_CHIPS 16
#define PLAN_PLOT_MAX_BUDGETS 32
#define PLAN_PLOT_MAX_POINTS (PLAN_PLOT_MAX_CHIPS * PLAN_PLOT_MAX_BUDGETS)

typedef struct {
    char path[1024];          /* the chip file ("" when made in memory) */
    chip_profile profile;     /* profile.name is the chip's name on the plot */
} plan_plot_chip;

typedef struct {
    int chip;                 /* index into the chip list */
    double budget_s;
    int memory_order;         /* the plan's count memory (0: the transformer alone) */
    double params;            /* the plan's transformer parameters */
    double bpb, bpb_lo, bpb_hi; /* the plan as chosen (hybrid when memory_order > 0), ~90 % interval */
    double transformer_bpb;   /* the same plan's transformer alone */
} plan_plot_point;

/* The default budgets, in seconds: 1m 2m 5m 10m 30m 1h 2h 4h 8h 24h.
 * Writes at most max; returns how many. */
int plan_plot_default_budgets(double *budgets, int max);

/* Load the chips: `list` a comma-separated list of chip files, or, when list
 * is NULL or empty, every `*.conf` in folder dir, sorted by file name.
 * Returns how many (at least 1) or -1: a chip file's own error (code 2), no
 * .conf in dir, an unreadable dir, more than max chips, or two chips of the
 * same name. */
int plan_plot_load_chips(const char *list, const char *dir, plan_plot_chip *chips, int max, tempo_error *err);

/* plan_search for each chip and each budget (o->budget_s is ignored), in
 * that order: chip 0's budgets, then chip 1's. A budget too small for any
 * plan on a chip (the search fails for it) is skipped; a chip with no plan
 * at any budget is an error (code 2, the chip's name and the search's last
 * message). Returns the number of points written to out (at most max) or -1. */
int plan_plot_points(const run_config *base, const plan_plot_chip *chips, int n_chips, const quality_law *law,
                     const quality_hybrid *hybrid, const plan_options *o, const double *budgets, int n_budgets,
                     plan_plot_point *out, int max, tempo_error *err);

/* Append the whole SVG document for the points: per chip (colour by index)
 * a polyline of bpb over a translucent band bpb_lo..bpb_hi, and a dashed
 * polyline of transformer_bpb; a legend with the chips' names (escaped);
 * a title saying it is a prediction. mark_budget_s > 0 draws a vertical
 * line there (the --budget asked for). */
void plan_plot_svg(const plan_plot_chip *chips, int n_chips, const plan_plot_point *p, int n_points,
                   double mark_budget_s, strbuf *out);

/* Label of a budget for the axis: "30s", "1m", "10m", "1h", "24h", "2d". */
void plan_plot_budget_label(double budget_s, char *out, size_t n);

#endif
