/* cmd_leaderboard.c - `tempo leaderboard`: load the attempts from the
 * leaderboard database and print the table, write the HTML page, dump the
 * attempts as JSON lines, or check the database (src/judge/report.h,
 * src/judge/leaderboard_db.h). The last stdout line is a JSON summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/fileio.h"
#include "core/json_write.h"
#include "judge/leaderboard_db.h"
#include "judge/report.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo leaderboard [--db FILE] [--phase N] [--all] [--html FILE] [--json] [--check]\n"
        "  --db FILE     the leaderboard database (default leaderboard.sqlite)\n"
        "  --phase N     only phase N (default: all phases)\n"
        "  --all         list every attempt (with status and reason) below each ranking\n"
        "  --html FILE   write one self-contained HTML page (tables and per-run SVG plots)\n"
        "  --json        print every attempt (with its runs) as one JSON line each\n"
        "  --check       verify the database (SQLite integrity check, no orphan runs); exit 1 if not ok\n"
        "Rankings show the best attempt per submission with status ok, sorted by mean score (lower is better),\n"
        "separately per phase, budget and validation text.\n");
}

typedef struct {
    const char *db_path, *html;
    int phase, all, json, check;
} leaderboard_options;

/* 0, or the exit code of a usage error (already printed); -1: --help was printed. */
static int parse_flags(int argc, char **argv, leaderboard_options *o)
{
    const char *phase = NULL;
    *o = (leaderboard_options){.db_path = "leaderboard.sqlite"};
    const cli_flag flags[] = {
        CLI_F_STRING("--db", &o->db_path),
        CLI_F_STRING("--html", &o->html),
        CLI_F_CHOICE("--phase", &phase, "1|2"),
        CLI_F_SWITCH("--all", &o->all),
        CLI_F_SWITCH("--json", &o->json),
        CLI_F_SWITCH("--check", &o->check),
    };
    int help, bad = cli_parse_flags("leaderboard", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return -1; }
    o->phase = phase ? phase[0] - '0' : 0;
    return 0;
}

/* --check: the integrity verdict as the result line; exit 1 when damaged. */
static int run_check(judge_db *db, const char *db_path)
{
    tempo_error err;
    tempo_error_clear(&err);
    int ok;
    long long na, nr;
    if (judge_db_check(db, &ok, &na, &nr, &err))
        return cli_report(&err);
    strbuf out = {0};
    jsonw w;
    jsonw_init(&w, &out);
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "integrity", ok ? "ok" : "damaged");
    jsonw_field_int(&w, "attempts", na);
    jsonw_field_int(&w, "runs", nr);
    jsonw_object_end(&w);
    int rc = jsonw_finish(&w, &err) ? cli_report(&err) : cli_emit_result(&out, NULL);
    strbuf_free(&out);
    if (!ok)
        fprintf(stderr, "tempo: %s: integrity check failed\n", db_path);
    return rc ? rc : ok ? 0 : 1;
}

/* --json: one line per attempt. */
static int print_json_lines(const judge_attempt *att, size_t n)
{
    tempo_error err;
    for (size_t i = 0; i < n; i++) {
        strbuf line = {0};
        int rc = judge_attempt_to_json(&att[i], &line, &err);
        if (!rc)
            printf("%s\n", line.data);
        strbuf_free(&line);
        if (rc)
            return cli_report(&err);
    }
    return 0;
}

static int write_html(const judge_attempt *att, size_t n, const char *html)
{
    tempo_error err;
    tempo_error_clear(&err);
    strbuf page = {0};
    judge_report_html(att, n, NULL, &page);
    int rc = 0;
    if (page.oom)
        rc = cli_report((tempo_fail(&err, "%s: out of memory", html), &err));
    else if (file_write_atomic(html, page.data, page.len, &err))
        rc = cli_report(&err);
    else
        fprintf(stderr, "wrote %s (%zu bytes)\n", html, page.len);
    strbuf_free(&page);
    return rc;
}

/* The attempts as asked (JSON lines, the HTML page or the table), then the summary line. */
static int show(const judge_attempt *att, size_t n, const leaderboard_options *o)
{
    int rc = 0;
    if (o->json) {
        rc = print_json_lines(att, n);
    } else if (o->html) {
        rc = write_html(att, n, o->html);
    } else {
        strbuf table = {0};
        judge_report_table(att, n, o->all, &table);
        if (table.data)
            fputs(table.data, stdout);
        strbuf_free(&table);
    }
    if (rc)
        return rc;
    tempo_error err;
    strbuf out = {0};
    rc = judge_report_summary_json(att, n, o->db_path, o->html, &out, &err) ? cli_report(&err)
                                                                              : cli_emit_result(&out, NULL);
    strbuf_free(&out);
    return rc;
}

int cmd_leaderboard(int argc, char **argv)
{
    leaderboard_options o;
    int rc = parse_flags(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    tempo_error err;
    tempo_error_clear(&err);
    judge_db *db;
    if (judge_db_open(&db, o.db_path, 0, &err))
        return cli_report(&err);
    if (o.check) {
        rc = run_check(db, o.db_path);
        judge_db_close(db);
        return rc;
    }
    judge_attempt *att;
    size_t n;
    rc = judge_db_load_attempts(db, o.phase, o.html != NULL, &att, &n, &err);
    judge_db_close(db);
    if (rc)
        return cli_report(&err);
    rc = show(att, n, &o);
    for (size_t i = 0; i < n; i++)
        judge_attempt_free(&att[i]);
    free(att);
    return rc;
}
