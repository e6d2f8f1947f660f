/* report.c - ranking, the terminal table and the attempt summary (see
 * report.h). The HTML page is in report_html.c. */
#include "judge/report.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_write.h"
#include "core/text.h"

static int same_group(const judge_board_group *g, const judge_attempt *a)
{
    return g->phase == a->phase && fabs(g->budget_s - a->budget_s) < 1e-6 && !strcmp(g->val_sha256, a->val_sha256);
}

static int ranked_ok(const judge_attempt *a)
{
    return !strcmp(a->status, JUDGE_OK) && isfinite(a->score_mean);
}

/* The array being sorted, for the comparison (qsort has no context argument,
 * so the indices are sorted as (score, index) pairs instead). */
typedef struct {
    double score;
    size_t index;
} scored_index;

static int cmp_scored(const void *x, const void *y)
{
    const scored_index *a = x, *b = y;
    if (a->score != b->score)
        return a->score < b->score ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int push_index(size_t **arr, size_t *n, size_t v)
{
    size_t *p = realloc(*arr, (*n + 1) * sizeof *p);
    if (!p)
        return -1;
    p[(*n)++] = v;
    *arr = p;
    return 0;
}

int judge_board_build(const judge_attempt *attempts, size_t n, judge_board *b)
{
    memset(b, 0, sizeof *b);
    for (size_t i = 0; i < n; i++) {
        const judge_attempt *a = &attempts[i];
        judge_board_group *g = NULL;
        for (size_t k = 0; k < b->n_groups && !g; k++)
            if (same_group(&b->groups[k], a))
                g = &b->groups[k];
        if (!g) {
            judge_board_group *p = realloc(b->groups, (b->n_groups + 1) * sizeof *p);
            if (!p)
                goto oom;
            b->groups = p;
            g = &b->groups[b->n_groups++];
            memset(g, 0, sizeof *g);
            g->phase = a->phase;
            g->budget_s = a->budget_s;
            g->val_sha256 = a->val_sha256;
            g->val_path = a->val_path;
        }
        /* the submission's current entry in this group, ranked or not */
        size_t *slot = NULL;
        int in_ranked = 0;
        for (size_t k = 0; k < g->n_ranked && !slot; k++)
            if (!strcmp(attempts[g->ranked[k]].submission, a->submission))
                slot = &g->ranked[k], in_ranked = 1;
        for (size_t k = 0; k < g->n_unranked && !slot; k++)
            if (!strcmp(attempts[g->unranked[k]].submission, a->submission))
                slot = &g->unranked[k];
        if (ranked_ok(a)) {
            if (slot && in_ranked) {
                if (a->score_mean < attempts[*slot].score_mean)
                    *slot = i;
            } else {
                if (slot) { /* leaves the unranked list */
                    size_t k = (size_t)(slot - g->unranked);
                    memmove(&g->unranked[k], &g->unranked[k + 1], (g->n_unranked - k - 1) * sizeof *g->unranked);
                    g->n_unranked--;
                }
                if (push_index(&g->ranked, &g->n_ranked, i))
                    goto oom;
            }
        } else if (slot && !in_ranked) {
            *slot = i; /* the latest unranked attempt */
        } else if (!slot) {
            if (push_index(&g->unranked, &g->n_unranked, i))
                goto oom;
        }
    }
    for (size_t k = 0; k < b->n_groups; k++) {
        judge_board_group *g = &b->groups[k];
        scored_index *s = malloc((g->n_ranked ? g->n_ranked : 1) * sizeof *s);
        if (!s)
            goto oom;
        for (size_t j = 0; j < g->n_ranked; j++)
            s[j] = (scored_index){attempts[g->ranked[j]].score_mean, g->ranked[j]};
        qsort(s, g->n_ranked, sizeof *s, cmp_scored);
        for (size_t j = 0; j < g->n_ranked; j++)
            g->ranked[j] = s[j].index;
        free(s);
    }
    return 0;
oom:
    judge_board_free(b);
    return -1;
}

void judge_board_free(judge_board *b)
{
    for (size_t k = 0; k < b->n_groups; k++) {
        free(b->groups[k].ranked);
        free(b->groups[k].unranked);
    }
    free(b->groups);
    memset(b, 0, sizeof *b);
}

int judge_report_summary_json(const judge_attempt *attempts, size_t n, const char *db_path, const char *html_path,
                              strbuf *out, tempo_error *err)
{
    judge_board b;
    if (judge_board_build(attempts, n, &b))
        return tempo_fail(err, "leaderboard: out of memory ranking %zu attempts", n);
    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "db", db_path);
    jsonw_field_uint(&w, "attempts", n);
    if (html_path)
        jsonw_field_string(&w, "html", html_path);
    jsonw_key(&w, "leaders");
    jsonw_array_begin(&w);
    for (size_t k = 0; k < b.n_groups; k++) {
        const judge_board_group *g = &b.groups[k];
        if (!g->n_ranked)
            continue;
        const judge_attempt *a = &attempts[g->ranked[0]];
        jsonw_object_begin(&w);
        jsonw_field_int(&w, "phase", g->phase);
        jsonw_field_number(&w, "budget_s", g->budget_s);
        jsonw_field_string(&w, "submission", a->submission);
        jsonw_field_number(&w, "score", a->score_mean);
        jsonw_field_int(&w, "attempt", a->id);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    judge_board_free(&b);
    return jsonw_finish(&w, err) ? tempo_error_prefix(err, "leaderboard summary") : 0;
}

void judge_format_duration(double s, char *out, size_t n)
{
    if (!isfinite(s)) {
        text_fmt(out, n, "?");
        return;
    }
    long long whole = (long long)s;
    if (fabs(s - (double)whole) > 1e-6 || whole < 60) {
        text_fmt(out, n, "%gs", s);
        return;
    }
    long long h = whole / 3600, m = whole % 3600 / 60, sec = whole % 60;
    char buf[64] = "";
    size_t k = 0;
    if (h)
        k += (size_t)text_fmt(buf + k, sizeof buf - k, "%lldh", h);
    if (m)
        k += (size_t)text_fmt(buf + k, sizeof buf - k, "%lldm", m);
    if (sec)
        text_fmt(buf + k, sizeof buf - k, "%llds", sec);
    text_fmt(out, n, "%s", buf);
}

static void num(strbuf *o, double x, const char *fmt, int width)
{
    if (isfinite(x))
        strbuf_printf(o, fmt, width, x);
    else
        strbuf_printf(o, "%*s", width, "-");
}

/* How the attempt's runs were confined, for the tables: its sandbox, or a
 * warning that there was none (--no-sandbox, or judged before sandboxing). */
static const char *sandbox_words(const judge_attempt *a)
{
    return !a->sandbox[0] || !strcmp(a->sandbox, "none") ? "none (unsandboxed)" : a->sandbox;
}

/* Mean of a run field over the attempt's ok runs (NaN when none). */
static double run_mean(const judge_attempt *a, size_t offset)
{
    double s = 0;
    int n = 0;
    for (int i = 0; i < a->n_runs; i++) {
        double x = *(const double *)((const char *)&a->runs[i] + offset);
        if (!strcmp(a->runs[i].status, JUDGE_OK) && isfinite(x)) {
            s += x;
            n++;
        }
    }
    return n ? s / n : NAN;
}

static void cut(char *dst, size_t n, const char *src, size_t width)
{
    size_t l = strlen(src);
    if (l <= width) {
        text_fmt(dst, n, "%s", src);
        return;
    }
    text_fmt(dst, n, "%.*s~", (int)(width - 1), src);
}

static void group_header(const judge_board_group *g, strbuf *o)
{
    char budget[32];
    judge_format_duration(g->budget_s, budget, sizeof budget);
    const char *base = strrchr(g->val_path, '/');
    strbuf_printf(o, "phase %d, budget %s, validation %s (sha256 %.12s)\n", g->phase, budget,
                  base ? base + 1 : g->val_path, g->val_sha256);
}

void judge_report_table(const judge_attempt *attempts, size_t n, int all_attempts, strbuf *o)
{
    judge_board b;
    if (n == 0) {
        strbuf_puts(o, "no attempts recorded yet\n");
        return;
    }
    if (judge_board_build(attempts, n, &b)) {
        strbuf_puts(o, "out of memory\n");
        return;
    }
    for (size_t k = 0; k < b.n_groups; k++) {
        const judge_board_group *g = &b.groups[k];
        if (k)
            strbuf_puts(o, "\n");
        group_header(g, o);
        strbuf_printf(o, "%3s  %-24s %10s %9s %5s %10s", "#", "submission", "score", "+-std", "seeds", "val bpb");
        if (g->phase == 2)
            strbuf_printf(o, " %8s %11s", "CORE", "decode B/s");
        strbuf_printf(o, " %9s %9s  %-20s %7s  %s\n", "train s", "overrun", "when", "attempt", "sandbox");
        for (size_t j = 0; j < g->n_ranked; j++) {
            const judge_attempt *a = &attempts[g->ranked[j]];
            char name[32];
            cut(name, sizeof name, a->submission, 24);
            strbuf_printf(o, "%3zu  %-24s ", j + 1, name);
            num(o, a->score_mean, "%*.6f", 10);
            strbuf_puts(o, " ");
            num(o, a->n_scored > 1 ? a->score_std : NAN, "%*.6f", 9);
            strbuf_printf(o, " %5d ", a->n_scored);
            num(o, a->bpb_mean, "%*.6f", 10);
            if (g->phase == 2) {
                strbuf_puts(o, " ");
                num(o, run_mean(a, offsetof(judge_run_record, core)), "%*.4f", 8);
                strbuf_puts(o, " ");
                num(o, run_mean(a, offsetof(judge_run_record, decode_bytes_per_s)), "%*.0f", 11);
            }
            strbuf_puts(o, " ");
            num(o, run_mean(a, offsetof(judge_run_record, train_seconds)), "%*.1f", 9);
            strbuf_puts(o, " ");
            num(o, run_mean(a, offsetof(judge_run_record, overrun_seconds)), "%*.2f", 9);
            strbuf_printf(o, "  %-20s %7lld  %s\n", a->started_at, a->id, sandbox_words(a));
        }
        if (g->n_ranked == 0)
            strbuf_puts(o, "     (no ranked attempt yet)\n");
        for (size_t j = 0; j < g->n_unranked; j++) {
            const judge_attempt *a = &attempts[g->unranked[j]];
            char name[32];
            cut(name, sizeof name, a->submission, 24);
            strbuf_printf(o, "  -  %-24s %s: %s (attempt %lld, sandbox %s)\n", name, a->status,
                          a->reason[0] ? a->reason : "-", a->id, sandbox_words(a));
        }
        if (all_attempts) {
            strbuf_puts(o, "  all attempts:\n");
            for (size_t i = 0; i < n; i++) {
                const judge_attempt *a = &attempts[i];
                if (!same_group(g, a))
                    continue;
                strbuf_printf(o, "  %5lld  %-24.24s %-13s ", a->id, a->submission, a->status);
                num(o, a->score_mean, "%*.6f", 10);
                strbuf_printf(o, "  %s  %-16s %s\n", a->started_at, sandbox_words(a), a->reason);
            }
        }
    }
    judge_board_free(&b);
}

void judge_report_attempt(const judge_attempt *a, strbuf *o)
{
    char budget[32];
    judge_format_duration(a->budget_s, budget, sizeof budget);
    strbuf_printf(o, "\n%s: phase %d, budget %s, %d seed%s: %s%s%s\n", a->submission, a->phase, budget, a->seeds,
                  a->seeds == 1 ? "" : "s", a->status, a->reason[0] ? ": " : "", a->reason);
    for (int i = 0; i < a->n_runs; i++) {
        const judge_run_record *r = &a->runs[i];
        strbuf_printf(o, "  seed %d: %-13s", r->seed, r->status);
        if (isfinite(r->bpb))
            strbuf_printf(o, " val bpb %.6f", r->bpb);
        if (a->phase == 2 && isfinite(r->score))
            strbuf_printf(o, " score %.6f (CORE %.4f, decode %.0f B/s)", r->score, r->core, r->decode_bytes_per_s);
        if (isfinite(r->wall_seconds))
            strbuf_printf(o, " wall %.2f s", r->wall_seconds);
        if (isfinite(r->train_seconds))
            strbuf_printf(o, " train %.2f s", r->train_seconds);
        if (r->overrun_seconds > 0)
            strbuf_printf(o, " overrun %.2f s", r->overrun_seconds);
        if (r->reason[0])
            strbuf_printf(o, " - %s", r->reason);
        strbuf_puts(o, "\n");
    }
    strbuf_printf(o, "  score formula: %s\n", a->formula);
    if (a->phase == 2)
        for (int i = 0; i < a->n_runs; i++) {
            const judge_run_record *r = &a->runs[i];
            if (isfinite(r->score))
                strbuf_printf(o, "  seed %d: score %.6f = bpb %.6f - CORE term %.4f - speed term %.4f\n", r->seed,
                              r->score, r->bpb, r->icl_term, r->speed_term);
            else if (r->phase2_reason[0])
                strbuf_printf(o, "  seed %d: %s\n", r->seed, r->phase2_reason);
        }
    if (isfinite(a->score_mean) && a->n_scored > 1)
        strbuf_printf(o, "  score %.6f +- %.6f (mean +- sample std over %d seeds)\n", a->score_mean, a->score_std,
                      a->n_scored);
    else if (isfinite(a->score_mean))
        strbuf_printf(o, "  score %.6f (one seed: no spread)\n", a->score_mean);
    if (a->leader_id > 0) {
        strbuf_printf(o, "  leader: %s (attempt %lld, score %.6f)", a->leader_submission, a->leader_id,
                      a->leader_mean);
        if (a->beats_leader >= 0)
            strbuf_printf(o, "; %s it: one-sided Welch t = %.3f, df = %.2f, p = %.4g (beats at p < 0.05)\n",
                          a->beats_leader ? "beats" : "does not beat", a->t_stat, a->df, a->p_value);
        else
            strbuf_puts(o, "; not tested (needs >= 2 scored seeds on both sides)\n");
    } else if (!strcmp(a->status, JUDGE_OK) && isfinite(a->score_mean)) {
        strbuf_puts(o, "  no leader yet in this phase/budget: nothing to test against\n");
    }
    if (a->id > 0)
        strbuf_printf(o, "  recorded as attempt %lld; runs in %s\n", a->id, a->work_dir);
}
