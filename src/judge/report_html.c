/* report_html.c - the leaderboard as one static HTML page: inline CSS,
 * inline SVG plots (judge/plot_svg.h), no JavaScript, no external files
 * (see report.h for the contract). */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "judge/curves.h"
#include "judge/plot_svg.h"
#include "judge/report.h"
#include "judge/score.h"
#include "core/text.h"

static void esc(strbuf *o, const char *s) { strbuf_markup(o, s, 0); }

static void cell_num(strbuf *o, double x, const char *fmt)
{
    strbuf_puts(o, "<td class=\"num\">");
    if (isfinite(x))
        strbuf_printf(o, fmt, x);
    else
        strbuf_puts(o, "&ndash;");
    strbuf_puts(o, "</td>");
}

static void cell_text(strbuf *o, const char *s)
{
    strbuf_puts(o, "<td>");
    esc(o, s);
    strbuf_puts(o, "</td>");
}

static double mean_field(const judge_attempt *a, size_t offset)
{
    double s = 0;
    int n = 0;
    for (int i = 0; i < a->n_runs; i++) {
        double x = *(const double *)((const char *)&a->runs[i] + offset);
        if (!strcmp(a->runs[i].status, JUDGE_OK) && isfinite(x))
            s += x, n++;
    }
    return n ? s / n : NAN;
}

static const char *style =
    "body{font-family:sans-serif;margin:2em;color:#222;max-width:1400px}"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "th,td{border:1px solid #bbb;padding:3px 8px;text-align:left;font-size:13px}"
    "th{background:#e8eef7}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.rank1 td{background:#fff7d6}.status-ok{color:#176b1e}.status-bad{color:#a11}"
    "section.run{display:inline-block;vertical-align:top;margin:0 1em 1.5em 0}"
    "section.run h4{margin:0.2em 0;font-size:13px}code{font-size:12px}td.nosandbox{color:#a11;font-weight:bold}";

static void status_cell(strbuf *o, const char *status)
{
    strbuf_printf(o, "<td class=\"%s\">", !strcmp(status, JUDGE_OK) ? "status-ok" : "status-bad");
    esc(o, status);
    strbuf_puts(o, "</td>");
}

/* The attempt's sandbox, or "none" marked as a warning. */
static void sandbox_cell(strbuf *o, const judge_attempt *a)
{
    if (a->sandbox[0] && strcmp(a->sandbox, "none") != 0)
        cell_text(o, a->sandbox);
    else
        strbuf_puts(o, "<td class=\"nosandbox\">none (unsandboxed)</td>");
}

static void ranking_table(strbuf *o, const judge_attempt *att, const judge_board_group *g, size_t k)
{
    strbuf_printf(o, "<table class=\"board\" id=\"board-%zu\"><thead><tr><th>#</th><th>submission</th>"
                     "<th>authors</th><th>score</th><th>&plusmn; std</th><th>seeds</th><th>val bpb</th>",
                  k + 1);
    if (g->phase == 2)
        strbuf_puts(o, "<th>CORE</th><th>decode B/s</th>");
    strbuf_puts(o, "<th>train s</th><th>method</th><th>commit</th><th>sandbox</th><th>date</th><th>attempt</th></tr>"
                   "</thead><tbody>");
    for (size_t j = 0; j < g->n_ranked; j++) {
        const judge_attempt *a = &att[g->ranked[j]];
        strbuf_printf(o, "<tr class=\"rank%zu\"><td class=\"num\">%zu</td>", j + 1, j + 1);
        cell_text(o, a->submission);
        cell_text(o, a->authors);
        cell_num(o, a->score_mean, "%.6f");
        cell_num(o, a->n_scored > 1 ? a->score_std : NAN, "%.6f");
        strbuf_printf(o, "<td class=\"num\">%d</td>", a->n_scored);
        cell_num(o, a->bpb_mean, "%.6f");
        if (g->phase == 2) {
            cell_num(o, mean_field(a, offsetof(judge_run_record, core)), "%.4f");
            cell_num(o, mean_field(a, offsetof(judge_run_record, decode_bytes_per_s)), "%.0f");
        }
        cell_num(o, mean_field(a, offsetof(judge_run_record, train_seconds)), "%.1f");
        cell_text(o, a->method);
        char commit[16];
        text_fmt(commit, sizeof commit, "%.10s", a->git_commit);
        cell_text(o, commit);
        sandbox_cell(o, a);
        cell_text(o, a->started_at);
        strbuf_printf(o, "<td class=\"num\"><a href=\"#attempt-%lld\">%lld</a></td></tr>", a->id, a->id);
    }
    for (size_t j = 0; j < g->n_unranked; j++) {
        const judge_attempt *a = &att[g->unranked[j]];
        strbuf_puts(o, "<tr class=\"unranked\"><td>&ndash;</td>");
        cell_text(o, a->submission);
        cell_text(o, a->authors);
        strbuf_printf(o, "<td colspan=\"%d\">", g->phase == 2 ? 9 : 7);
        esc(o, a->status);
        strbuf_puts(o, ": ");
        esc(o, a->reason);
        strbuf_puts(o, "</td>");
        sandbox_cell(o, a);
        cell_text(o, a->started_at);
        strbuf_printf(o, "<td class=\"num\"><a href=\"#attempt-%lld\">%lld</a></td></tr>", a->id, a->id);
    }
    strbuf_puts(o, "</tbody></table>");
}

/* The page's head, its title and the paragraph on how it scores. */
static void page_head(strbuf *o, size_t n, const char *title)
{
    strbuf_puts(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    esc(o, title ? title : "tempo leaderboard");
    strbuf_printf(o, "</title><style>%s</style></head><body><h1>", style);
    esc(o, title ? title : "tempo leaderboard");
    char now[32];
    judge_utc_now(now);
    strbuf_printf(o, "</h1><p>Generated %s from %zu attempt%s. Lower scores are better; the spread is the sample "
                     "standard deviation over seeds. Phase 1 score: val bits per byte on the official validation "
                     "text. Phase 2 score: <code>",
                  now, n, n == 1 ? "" : "s");
    esc(o, judge_score_formula(2));
    strbuf_puts(o, "</code>.</p>");
}

/* One ranking per phase, budget and validation text. */
static void rankings(strbuf *o, const judge_attempt *att, size_t n)
{
    judge_board b;
    if (judge_board_build(att, n, &b) != 0)
        return;
    for (size_t k = 0; k < b.n_groups; k++) {
        const judge_board_group *g = &b.groups[k];
        char budget[32];
        judge_format_duration(g->budget_s, budget, sizeof budget);
        const char *base = strrchr(g->val_path, '/');
        strbuf_printf(o, "<h2>Phase %d &middot; budget %s &middot; validation <code>", g->phase, budget);
        esc(o, base ? base + 1 : g->val_path);
        strbuf_printf(o, "</code> <small>(sha256 %.12s)</small></h2>", g->val_sha256);
        ranking_table(o, att, g, k);
    }
    judge_board_free(&b);
}

/* One attempt's row of the attempts table. */
static void attempt_row(strbuf *o, const judge_attempt *a)
{
    char budget[32], hash[16], ver[96];
    judge_format_duration(a->budget_s, budget, sizeof budget);
    text_fmt(hash, sizeof hash, "%.12s", a->submission_hash);
    text_fmt(ver, sizeof ver, "%s %.10s", a->tempo_version, a->git_commit);
    strbuf_printf(o, "<tr id=\"attempt-%lld\"><td class=\"num\">%lld</td>", a->id, a->id);
    cell_text(o, a->submission);
    strbuf_printf(o, "<td class=\"num\">%d</td>", a->phase);
    cell_text(o, budget);
    status_cell(o, a->status);
    cell_num(o, a->score_mean, "%.6f");
    cell_num(o, a->n_scored > 1 ? a->score_std : NAN, "%.6f");
    strbuf_printf(o, "<td class=\"num\">%d/%d</td>", a->n_scored, a->seeds);
    strbuf_puts(o, "<td>");
    if (a->leader_id > 0 && a->beats_leader >= 0)
        strbuf_printf(o, "%s #%lld, p = %.3g", a->beats_leader ? "beats" : "does not beat", a->leader_id,
                      a->p_value);
    else if (a->leader_id > 0)
        strbuf_printf(o, "vs #%lld: not tested", a->leader_id);
    else
        strbuf_puts(o, "&ndash;");
    strbuf_puts(o, "</td>");
    cell_text(o, a->reason);
    strbuf_puts(o, "<td><code>");
    esc(o, hash);
    strbuf_puts(o, "</code></td>");
    cell_text(o, ver);
    sandbox_cell(o, a);
    cell_text(o, a->started_at);
    cell_text(o, a->ended_at);
    strbuf_puts(o, "</tr>");
}

/* A section with the curves of each run that has them, newest attempt first; the number of plots. */
static int run_plots(strbuf *o, const judge_attempt *att, size_t n)
{
    int plots = 0;
    for (size_t i = n; i-- > 0;) {
        const judge_attempt *a = &att[i];
        for (int j = 0; j < a->n_runs; j++) {
            const judge_run_record *r = &a->runs[j];
            judge_curves c;
            tempo_error e;
            if (!r->curves_json || judge_curves_from_json(r->curves_json, &c, &e))
                continue;
            char id[64];
            text_fmt(id, sizeof id, "%lld-%d", a->id, r->seed);
            strbuf_printf(o, "<section class=\"run\" id=\"run-%s\"><h4>", id);
            esc(o, a->submission);
            strbuf_printf(o, " &middot; attempt %lld &middot; seed %d &middot; ", a->id, r->seed);
            esc(o, r->status);
            if (isfinite(r->bpb))
                strbuf_printf(o, " &middot; judged val bpb %.4f", r->bpb);
            strbuf_puts(o, "</h4>");
            double t = isfinite(r->train_seconds) ? r->train_seconds : r->wall_seconds;
            judge_svg_run_plot(o, &c, t, r->bpb, id);
            strbuf_puts(o, "</section>");
            judge_curves_free(&c);
            plots++;
        }
    }
    return plots;
}

void judge_report_html(const judge_attempt *att, size_t n, const char *title, strbuf *o)
{
    page_head(o, n, title);
    rankings(o, att, n);
    strbuf_puts(o, "<h2>All attempts</h2><table class=\"attempts\"><thead><tr><th>attempt</th><th>submission</th>"
                   "<th>phase</th><th>budget</th><th>status</th><th>score</th><th>&plusmn; std</th><th>seeds</th>"
                   "<th>leader test</th><th>reason</th><th>hash</th><th>tempo</th><th>sandbox</th><th>started</th>"
                   "<th>ended</th>"
                   "</tr></thead><tbody>");
    for (size_t i = n; i-- > 0;)
        attempt_row(o, &att[i]);
    strbuf_puts(o, "</tbody></table><h2>Runs</h2>");
    if (!run_plots(o, att, n))
        strbuf_puts(o, "<p>No run has metrics to plot yet.</p>");
    strbuf_puts(o, "</body></html>\n");
}
