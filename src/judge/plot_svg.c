/* plot_svg.c - learning-curve plots as inline SVG (see plot_svg.h). */
#include "judge/plot_svg.h"

#include <math.h>
#include <string.h>

#include "core/nice_ticks.h"

#define PANEL_W 330.0
#define PANEL_H 220.0
#define MARGIN_L 52.0
#define MARGIN_R 12.0
#define MARGIN_T 24.0
#define MARGIN_B 36.0

/* Values are drawn clamped to +-PLOT_LIMIT: a submission's metrics.jsonl may
 * hold any finite number, and the frame's arithmetic (a range, its 5 % pad)
 * overflowed to inf and drew NaN coordinates for values near 1e308; a loss
 * of 1e20 still shows as a spike to the top. */
#define PLOT_LIMIT 1e15

static double plotted(double x)
{
    return x > PLOT_LIMIT ? PLOT_LIMIT : x < -PLOT_LIMIT ? -PLOT_LIMIT : x;
}

typedef struct {
    double x0, y0;           /* panel origin in the svg */
    double xmin, xmax, ymin, ymax;
} frame;

static double px(const frame *f, double t)
{
    double w = PANEL_W - MARGIN_L - MARGIN_R;
    t = plotted(t);
    return f->x0 + MARGIN_L + (f->xmax > f->xmin ? (t - f->xmin) / (f->xmax - f->xmin) : 0.5) * w;
}

static double py(const frame *f, double v)
{
    double h = PANEL_H - MARGIN_T - MARGIN_B;
    v = plotted(v);
    return f->y0 + MARGIN_T + (f->ymax > f->ymin ? (f->ymax - v) / (f->ymax - f->ymin) : 0.5) * h;
}

static void range_of(const judge_series *s, double *lo, double *hi, int use_t)
{
    for (size_t i = 0; i < s->n; i++) {
        double x = use_t ? s->t[i] : s->v[i];
        if (!isfinite(x))
            continue;
        x = plotted(x);
        if (x < *lo)
            *lo = x;
        if (x > *hi)
            *hi = x;
    }
}

static void panel(strbuf *o, double x0, const char *title, const judge_series *s, const char *color, double mark_t,
                  double mark_v)
{
    frame f = {x0, 0, INFINITY, -INFINITY, INFINITY, -INFINITY};
    range_of(s, &f.xmin, &f.xmax, 1);
    range_of(s, &f.ymin, &f.ymax, 0);
    if (isfinite(mark_t) && isfinite(mark_v)) {
        f.xmin = fmin(f.xmin, plotted(mark_t)), f.xmax = fmax(f.xmax, plotted(mark_t));
        f.ymin = fmin(f.ymin, plotted(mark_v)), f.ymax = fmax(f.ymax, plotted(mark_v));
    }
    if (!(f.xmin <= f.xmax))
        f.xmin = 0, f.xmax = 1;
    if (!(f.ymin <= f.ymax))
        f.ymin = 0, f.ymax = 1;
    if (f.xmin > 0 && (f.xmin < 0.25 * f.xmax || f.xmin == f.xmax))
        f.xmin = 0; /* elapsed time from the start when the run began near it (or there is one time only) */
    double pad = (f.ymax - f.ymin) * 0.05;
    if (pad == 0)
        pad = fabs(f.ymax) * 0.05 + 0.05;
    f.ymin -= pad, f.ymax += pad;
    if (f.xmax == f.xmin)
        f.xmax = f.xmin + 1;

    double left = x0 + MARGIN_L, right = x0 + PANEL_W - MARGIN_R, top = MARGIN_T, bottom = PANEL_H - MARGIN_B;
    strbuf_printf(o, "<g class=\"panel\"><text x=\"%.1f\" y=\"15\" font-size=\"12\" font-weight=\"bold\">%s</text>",
                  left, title);
    strbuf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\" stroke=\"#999\"/>",
                  left, top, right - left, bottom - top);
    double ticks[8];
    int nt = nice_ticks(f.ymin, f.ymax, ticks, 8);
    for (int i = 0; i < nt; i++) {
        double y = py(&f, ticks[i]);
        strbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", left, y, right, y);
        strbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%g</text>", left - 4,
                      y + 3, ticks[i]);
    }
    nt = nice_ticks(f.xmin, f.xmax, ticks, 8);
    for (int i = 0; i < nt; i++) {
        double x = px(&f, ticks[i]);
        strbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/>", x, bottom, x,
                      bottom + 4);
        strbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%g</text>", x,
                      bottom + 15, ticks[i]);
    }
    strbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">elapsed seconds</text>",
                  (left + right) / 2, bottom + 30);
    if (s->n > 0) {
        strbuf_printf(o, "<polyline class=\"curve\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
        for (size_t i = 0; i < s->n; i++)
            if (isfinite(s->t[i]) && isfinite(s->v[i]))
                strbuf_printf(o, "%s%.1f,%.1f", i ? " " : "", px(&f, s->t[i]), py(&f, s->v[i]));
        strbuf_puts(o, "\"/>");
        if (s->n == 1)
            strbuf_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", px(&f, s->t[0]),
                          py(&f, s->v[0]), color);
    } else if (!(isfinite(mark_t) && isfinite(mark_v))) {
        /* (a run evaluated only at the end has no curve here, but its judged point below) */
        strbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" fill=\"#777\">"
                         "no points</text>",
                      (left + right) / 2, (top + bottom) / 2);
    }
    if (isfinite(mark_t) && isfinite(mark_v))
        strbuf_printf(o, "<circle class=\"judged\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\">"
                         "<title>judged val bpb %.4f</title></circle>",
                      px(&f, mark_t), py(&f, mark_v), JUDGE_SVG_JUDGED_COLOR, mark_v);
    strbuf_puts(o, "</g>");
}

void judge_svg_run_plot(strbuf *o, const judge_curves *c, double judged_t, double judged_bpb, const char *id)
{
    strbuf_printf(o,
                  "<svg class=\"plot\" id=\"plot-%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                  "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" font-family=\"sans-serif\">",
                  id, 2 * PANEL_W, PANEL_H, 2 * PANEL_W, PANEL_H);
    panel(o, 0, "train loss", &c->train_loss, JUDGE_SVG_LOSS_COLOR, NAN, NAN);
    panel(o, PANEL_W, "val bpb (green: judged)", &c->val_bpb, JUDGE_SVG_BPB_COLOR, judged_t,
          judged_bpb);
    strbuf_puts(o, "</svg>");
}
