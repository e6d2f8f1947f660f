/* report.h - the leaderboard as people read it: the ranking (best attempt
 * per submission, sorted by mean score, lower first, with the spread over
 * seeds), grouped by phase, budget and validation text (results are only
 * comparable within a group); the terminal table; the summary of one
 * attempt; the summary line of `tempo leaderboard` (JSON); and the HTML
 * page (judge/report_html.c). Attempts come from
 * judge/leaderboard_db.h; nothing here touches the database. */
#ifndef TEMPO_JUDGE_REPORT_H
#define TEMPO_JUDGE_REPORT_H

#include <stddef.h>

#include "core/strbuf.h"
#include "judge/attempt.h"

/* One comparable group and its ranking. Indices point into the attempts array. */
typedef struct {
    int phase;
    double budget_s;
    const char *val_sha256;
    const char *val_path;
    size_t *ranked;      /* best ok attempt per submission, best first */
    size_t n_ranked;
    size_t *unranked;    /* latest attempt of each submission without a ranked one */
    size_t n_unranked;
} judge_board_group;

typedef struct {
    judge_board_group *groups;
    size_t n_groups;
} judge_board;

/* Build the ranking of attempts[0..n). An attempt is ranked when its status
 * is ok and it has a mean score; per submission name the one with the lowest
 * mean is shown (ties: the earlier). Returns -1 on out of memory. */
int judge_board_build(const judge_attempt *attempts, size_t n, judge_board *b);
void judge_board_free(judge_board *b);

/* The summary line of `tempo leaderboard`: {"db": db_path, "attempts": n,
 * "html": html_path (only when not NULL), "leaders": [{"phase", "budget_s",
 * "submission", "score", "attempt"}, ...]}, one leader per group that has a
 * ranked attempt, in judge_board_build's group order. Appended to out (no
 * newline); -1 with err set on out of memory. */
int judge_report_summary_json(const judge_attempt *attempts, size_t n, const char *db_path, const char *html_path,
                              strbuf *out, tempo_error *err);

/* "30m", "1h30m", "7.5s": a budget as people write it. */
void judge_format_duration(double seconds, char *out, size_t n);

/* The terminal table: one section per group; all_attempts adds every
 * attempt (with status and reason) below each ranking. */
void judge_report_table(const judge_attempt *attempts, size_t n, int all_attempts, strbuf *out);

/* A few lines about one attempt: verdict, per-seed scores, mean and spread,
 * the formula with its parts, and the test against the leader. */
void judge_report_attempt(const judge_attempt *a, strbuf *out);

/* One self-contained HTML page (inline CSS and SVG, no JavaScript): the
 * rankings, every attempt, and for each run with metrics a plot of train
 * loss and val bpb against elapsed seconds. title may be NULL. */
void judge_report_html(const judge_attempt *attempts, size_t n, const char *title, strbuf *out);

#endif
