/* plan_plot.c - predicted bpb against budget per chip, as SVG (see
 * plan_plot.h): the chip list, the points (plan_search per chip and budget)
 * and the drawing. No search, no law and no file writing here. */
#include "plan/plan_plot.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/nice_ticks.h"

/* ---- budgets and chips ---- */

int plan_plot_default_budgets(double *budgets, int max)
{
    static const double minutes[] = {1, 2, 5, 10, 30, 60, 120, 240, 480, 1440};
    int n = 0;
    for (int i = 0; i < (int)(sizeof minutes / sizeof minutes[0]) && n < max; i++)
        budgets[n++] = 60 * minutes[i];
    return n;
}

static int load_one(const char *path, plan_plot_chip *chips, int n, int max, tempo_error *err)
{
    if (n == max)
        return tempo_usage(err, "plan: at most %d chips on a plot", max);
    plan_plot_chip *c = &chips[n];
    snprintf(c->path, sizeof c->path, "%s", path);
    if (chip_load(&c->profile, path, err))
        return -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(chips[i].profile.name, c->profile.name))
            return tempo_usage(err, "plan: two chips named %s (%s, %s)", c->profile.name, chips[i].path, path);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* every *.conf in dir, sorted by file name */
static int load_folder(const char *dir, plan_plot_chip *chips, int max, tempo_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return tempo_usage(err, "plan: chip folder %s: %s", dir, strerror(errno));
    char *names[PLAN_PLOT_MAX_CHIPS + 1];
    int n = 0, rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len <= 5 || strcmp(e->d_name + len - 5, ".conf"))
            continue;
        if (n == max || n == PLAN_PLOT_MAX_CHIPS) {
            rc = tempo_usage(err, "plan: more than %d chip files in %s", n, dir);
            break;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = tempo_fail(err, "plan: out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    if (!rc && n == 0)
        rc = tempo_usage(err, "plan: no chip files (*.conf) in %s", dir);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    int loaded = 0;
    for (int i = 0; i < n && !rc; i++) {
        char path[1024];
        path_join(path, sizeof path, dir, names[i]);
        rc = load_one(path, chips, loaded, max, err);
        loaded += !rc;
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    return rc ? -1 : loaded;
}

int plan_plot_load_chips(const char *list, const char *dir, plan_plot_chip *chips, int max, tempo_error *err)
{
    if (!list || !*list)
        return load_folder(dir, chips, max, err);
    char buf[4096];
    if (strlen(list) >= sizeof buf)
        return tempo_usage(err, "plan: chip list longer than %zu characters", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", list);
    int n = 0;
    for (char *p = buf, *comma; p; p = comma ? comma + 1 : NULL) {
        if ((comma = strchr(p, ',')))
            *comma = 0;
        if (!*p)
            return tempo_usage(err, "plan: an empty chip file name in '%s'", list);
        if (load_one(p, chips, n, max, err))
            return -1;
        n++;
    }
    return n;
}

/* ---- points ---- */

int plan_plot_points(const run_config *base, const plan_plot_chip *chips, int n_chips, const quality_law *law,
                     const quality_hybrid *hybrid, const plan_options *o, const double *budgets, int n_budgets,
                     plan_plot_point *out, int max, tempo_error *err)
{
    if (n_chips > PLAN_PLOT_MAX_CHIPS || n_budgets > PLAN_PLOT_MAX_BUDGETS)
        return tempo_usage(err, "plan: at most %d chips and %d budgets on a plot", PLAN_PLOT_MAX_CHIPS,
                           PLAN_PLOT_MAX_BUDGETS);
    int n = 0;
    plan_result r;
    for (int ci = 0; ci < n_chips; ci++) {
        int had = n;
        tempo_error last = {{0}, 0};
        for (int bi = 0; bi < n_budgets; bi++) {
            plan_options ob = *o;
            ob.budget_s = budgets[bi];
            if (plan_search(base, &chips[ci].profile, law, hybrid, &ob, &r, &last))
                continue; /* too small a budget for this chip: no point */
            if (n == max)
                return tempo_usage(err, "plan: more than %d points on a plot", max);
            const plan_candidate *c = &r.best[0];
            out[n++] = (plan_plot_point){.chip = ci,
                                         .budget_s = budgets[bi],
                                         .memory_order = c->cfg.memory_order,
                                         .params = c->step.params,
                                         .bpb = c->bpb,
                                         .bpb_lo = c->bpb_lo,
                                         .bpb_hi = c->bpb_hi,
                                         .transformer_bpb = c->transformer_bpb};
        }
        if (n == had)
            return tempo_usage(err, "%s (no budget of the plot gives a plan on %s)",
                               n_budgets ? last.msg : "plan: no budgets", chips[ci].profile.name);
    }
    return n;
}

/* ---- drawing ---- */

#define SVG_W 800.0
#define SVG_H 480.0
#define PLOT_L 64.0
#define PLOT_R 600.0
#define PLOT_T 80.0
#define PLOT_B 420.0

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf"};
#define N_PALETTE ((int)(sizeof palette / sizeof palette[0]))

void plan_plot_budget_label(double s, char *out, size_t n)
{
    if (s < 60)
        snprintf(out, n, "%.3gs", s);
    else if (s < 3600)
        snprintf(out, n, "%.3gm", s / 60);
    else if (s <= 48 * 3600)
        snprintf(out, n, "%.3gh", s / 3600);
    else
        snprintf(out, n, "%.3gd", s / 86400);
}

/* text for an SVG text node or attribute: markup characters escaped,
 * control characters (not allowed in XML) replaced */
static void esc(strbuf *o, const char *s) { strbuf_markup(o, s, 1); }

typedef struct {
    double lx0, lx1;  /* log10 of the budget range */
    double y0, y1;    /* bpb range */
} axes;

static double px(const axes *a, double budget_s)
{
    return PLOT_L + (log10(budget_s) - a->lx0) / (a->lx1 - a->lx0) * (PLOT_R - PLOT_L);
}

static double py(const axes *a, double bpb)
{
    return PLOT_B - (bpb - a->y0) / (a->y1 - a->y0) * (PLOT_B - PLOT_T);
}

static axes axes_for(const plan_plot_point *p, int n, double mark)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < n; i++) {
        x0 = fmin(x0, p[i].budget_s), x1 = fmax(x1, p[i].budget_s);
        y0 = fmin(y0, fmin(p[i].bpb_lo, p[i].transformer_bpb));
        y1 = fmax(y1, fmax(p[i].bpb_hi, p[i].transformer_bpb));
    }
    if (mark > 0)
        x0 = fmin(x0, mark), x1 = fmax(x1, mark);
    if (!(x0 <= x1))
        x0 = 60, x1 = 86400;
    if (!(y0 <= y1))
        y0 = 0, y1 = 1;
    double pad = y1 > y0 ? 0.05 * (y1 - y0) : 0.1;
    axes a = {log10(x0), log10(x1), y0 - pad, y1 + pad};
    if (a.lx1 - a.lx0 < 0.3) /* one budget: a factor of 2 either side */
        a.lx0 -= 0.3, a.lx1 += 0.3;
    a.lx0 -= 0.02 * (a.lx1 - a.lx0), a.lx1 += 0.02 * (a.lx1 - a.lx0);
    return a;
}

static void draw_axes(strbuf *o, const axes *a)
{
    strbuf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\" stroke=\"#999\"/>\n",
                  PLOT_L, PLOT_T, PLOT_R - PLOT_L, PLOT_B - PLOT_T);
    double t[12];
    int nt = nice_ticks(a->y0, a->y1, t, 12);
    for (int i = 0; i < nt; i++) {
        double y = py(a, t[i]);
        strbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", PLOT_L, y, PLOT_R,
                      y);
        strbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n", PLOT_L - 5,
                      y + 4, t[i]);
    }
    /* budget ticks: the fine ladder when it gives at most 10 in range, else the coarse one */
    static const double fine[] = {1,    2,    5,    10,    30,    60,    120,   300,    600,    1800,
                                  3600, 7200, 14400, 28800, 86400, 172800, 604800};
    static const double coarse[] = {1, 10, 60, 600, 3600, 14400, 86400, 604800, 2592000};
    const double *ladder = fine;
    int n_ladder = (int)(sizeof fine / sizeof fine[0]), in_range = 0;
    for (int i = 0; i < n_ladder; i++)
        in_range += log10(fine[i]) >= a->lx0 && log10(fine[i]) <= a->lx1;
    if (in_range > 10)
        ladder = coarse, n_ladder = (int)(sizeof coarse / sizeof coarse[0]);
    for (int i = 0; i < n_ladder; i++) {
        if (log10(ladder[i]) < a->lx0 || log10(ladder[i]) > a->lx1)
            continue;
        double x = px(a, ladder[i]);
        char label[32];
        plan_plot_budget_label(ladder[i], label, sizeof label);
        strbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>", x, PLOT_T, x,
                      PLOT_B);
        strbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n", x,
                      PLOT_B + 16, label);
    }
    strbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">"
                     "wall-clock training budget (log scale)</text>\n",
                  (PLOT_L + PLOT_R) / 2, PLOT_B + 36);
    strbuf_printf(o, "<text x=\"16\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
                     "transform=\"rotate(-90 16 %.1f)\">predicted val bpb</text>\n",
                  (PLOT_T + PLOT_B) / 2, (PLOT_T + PLOT_B) / 2);
}

/* one chip (p: its points only): the band, the two lines, a dot with a tooltip per point, in budget order */
static void draw_chip(strbuf *o, const axes *a, const plan_plot_chip *chip, const char *color,
                      const plan_plot_point *p, int n)
{
    int idx[PLAN_PLOT_MAX_BUDGETS], k = 0;
    for (int i = 0; i < n && k < PLAN_PLOT_MAX_BUDGETS; i++)
        idx[k++] = i;
    for (int i = 1; i < k; i++) /* insertion sort by budget */
        for (int j = i; j > 0 && p[idx[j]].budget_s < p[idx[j - 1]].budget_s; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1], idx[j - 1] = t;
        }
    strbuf_puts(o, "<g class=\"chip\"><title>");
    esc(o, chip->profile.name);
    strbuf_puts(o, "</title>\n");
    strbuf_printf(o, "<polygon class=\"band\" fill=\"%s\" fill-opacity=\"0.15\" stroke=\"none\" points=\"", color);
    for (int i = 0; i < k; i++)
        strbuf_printf(o, "%s%.1f,%.1f", i ? " " : "", px(a, p[idx[i]].budget_s), py(a, p[idx[i]].bpb_lo));
    for (int i = k - 1; i >= 0; i--)
        strbuf_printf(o, " %.1f,%.1f", px(a, p[idx[i]].budget_s), py(a, p[idx[i]].bpb_hi));
    strbuf_puts(o, "\"/>\n");
    strbuf_printf(o, "<polyline class=\"transformer\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
                     "stroke-dasharray=\"6 4\" points=\"",
                  color);
    for (int i = 0; i < k; i++)
        strbuf_printf(o, "%s%.1f,%.1f", i ? " " : "", px(a, p[idx[i]].budget_s), py(a, p[idx[i]].transformer_bpb));
    strbuf_puts(o, "\"/>\n");
    strbuf_printf(o, "<polyline class=\"plan\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\" points=\"", color);
    for (int i = 0; i < k; i++)
        strbuf_printf(o, "%s%.1f,%.1f", i ? " " : "", px(a, p[idx[i]].budget_s), py(a, p[idx[i]].bpb));
    strbuf_puts(o, "\"/>\n");
    for (int i = 0; i < k; i++) {
        const plan_plot_point *q = &p[idx[i]];
        char label[32];
        plan_plot_budget_label(q->budget_s, label, sizeof label);
        strbuf_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", px(a, q->budget_s),
                      py(a, q->bpb), color);
        esc(o, chip->profile.name);
        strbuf_printf(o, ", %s: %.3f bpb (%.3f-%.3f), %.3g parameters, ", label, q->bpb, q->bpb_lo, q->bpb_hi,
                      q->params);
        if (q->memory_order > 0)
            strbuf_printf(o, "count memory of order %d; transformer alone %.3f", q->memory_order,
                          q->transformer_bpb);
        else
            strbuf_puts(o, "no count memory");
        strbuf_puts(o, "</title></circle>\n");
    }
    strbuf_puts(o, "</g>\n");
}

static void draw_legend(strbuf *o, const plan_plot_chip *chips, int n_chips, const int *n_of)
{
    double x = PLOT_R + 18, y = PLOT_T + 8;
    strbuf_printf(o, "<g class=\"legend\" font-size=\"12\">\n");
    for (int c = 0; c < n_chips; c++, y += 20) {
        const char *color = palette[c % N_PALETTE];
        strbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.5\"/>",
                      x, y, x + 24, y, color);
        strbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\">", x + 30, y + 4);
        esc(o, chips[c].profile.name);
        strbuf_puts(o, n_of[c] ? "</text>\n" : " (no plan)</text>\n");
    }
    y += 8;
    strbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-width=\"2.5\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\">the plan</text>\n",
                  x, y, x + 24, y, x + 30, y + 4);
    y += 20;
    strbuf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"10\" fill=\"#555\" fill-opacity=\"0.15\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\">~90 %% interval</text>\n",
                  x, y - 5, x + 30, y + 4);
    y += 20;
    strbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-width=\"1.5\" "
                     "stroke-dasharray=\"6 4\"/><text x=\"%.1f\" y=\"%.1f\">its transformer alone</text>\n",
                  x, y, x + 24, y, x + 30, y + 4);
    strbuf_puts(o, "</g>\n");
}

void plan_plot_svg(const plan_plot_chip *chips, int n_chips, const plan_plot_point *p, int n_points,
                   double mark_budget_s, strbuf *o)
{
    axes a = axes_for(p, n_points, mark_budget_s);
    strbuf_printf(o,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                  "role=\"img\" font-family=\"sans-serif\">\n",
                  SVG_W, SVG_H, SVG_W, SVG_H);
    strbuf_puts(o, "<title>tempo plan: predicted val bpb against training budget</title>\n");
    strbuf_printf(o, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", SVG_W, SVG_H);
    strbuf_printf(o, "<text x=\"%.1f\" y=\"24\" font-size=\"15\" font-weight=\"bold\">"
                     "Predicted val bpb of the best plan against the training budget</text>\n",
                  PLOT_L);
    strbuf_printf(o, "<text x=\"%.1f\" y=\"42\" font-size=\"11\" fill=\"#444\">A prediction of `tempo plan` "
                     "from the law fitted in configs/scaling/, not a measurement.</text>\n",
                  PLOT_L);
    strbuf_printf(o, "<text x=\"%.1f\" y=\"56\" font-size=\"11\" fill=\"#444\">Solid: the plan as chosen "
                     "(the hybrid when it has a count memory), with its ~90 %% interval; dashed: its transformer "
                     "alone.</text>\n",
                  PLOT_L);
    draw_axes(o, &a);
    int n_of[PLAN_PLOT_MAX_CHIPS] = {0};
    for (int c = 0; c < n_chips && c < PLAN_PLOT_MAX_CHIPS; c++) {
        plan_plot_point mine[PLAN_PLOT_MAX_BUDGETS];
        for (int i = 0; i < n_points; i++)
            if (p[i].chip == c && n_of[c] < PLAN_PLOT_MAX_BUDGETS)
                mine[n_of[c]++] = p[i];
        if (n_of[c])
            draw_chip(o, &a, &chips[c], palette[c % N_PALETTE], mine, n_of[c]);
    }
    if (mark_budget_s > 0) {
        char label[32];
        plan_plot_budget_label(mark_budget_s, label, sizeof label);
        double x = px(&a, mark_budget_s);
        strbuf_printf(o, "<g class=\"mark\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
                         "stroke-dasharray=\"2 3\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
                         "text-anchor=\"middle\">--budget %s</text></g>\n",
                      x, PLOT_T, x, PLOT_B, x, PLOT_T - 5, label);
    }
    draw_legend(o, chips, n_chips < PLAN_PLOT_MAX_CHIPS ? n_chips : PLAN_PLOT_MAX_CHIPS, n_of);
    strbuf_puts(o, "</svg>\n");
}
