/* cmd_leaderboard.c - `tempo leaderboard`: load the attempts from the
 * leaderboard database and print the table, write the HTML page, dump the
 * attempts as JSON lines, or check the database (src/judge/report.h,
 * src/judge/leaderboard_db.h). The last stdout line is a JSON summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/fileio.h"
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

int cmd_leaderboard(int argc, char **argv)
{
    const char *db_path = "leaderboard.sqlite", *html = NULL;
    int phase = 0, all = 0, json = 0, check = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--all")) { all = 1; continue; }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--check")) { check = 1; continue; }
        if (!v)
            return cli_usage_error("%s: missing value (see tempo leaderboard --help)", a);
        if (!strcmp(a, "--db")) db_path = v;
        else if (!strcmp(a, "--html")) html = v;
        else if (!strcmp(a, "--phase")) {
            if (strcmp(v, "1") && strcmp(v, "2"))
                return cli_usage_error("--phase %s: 1 or 2", v);
            phase = v[0] - '0';
        } else
            return cli_usage_error("%s: unknown option (see tempo leaderboard --help)", a);
        i++;
    }
    tempo_error err;
    tempo_error_clear(&err);
    judge_db *db;
    if (judge_db_open(&db, db_path, 0, &err))
        return cli_report(&err);
    strbuf out = {0};
    int rc = 0;
    if (check) {
        int ok;
        long long na, nr;
        if (judge_db_check(db, &ok, &na, &nr, &err)) {
            judge_db_close(db);
            return cli_report(&err);
        }
        strbuf_printf(&out, "{\"integrity\":\"%s\",\"attempts\":%lld,\"runs\":%lld}", ok ? "ok" : "damaged", na, nr);
        judge_db_close(db);
        rc = cli_emit_result(&out, NULL);
        strbuf_free(&out);
        if (!ok)
            fprintf(stderr, "tempo: %s: integrity check failed\n", db_path);
        return rc ? rc : ok ? 0 : 1;
    }
    judge_attempt *att;
    size_t n;
    if (judge_db_load_attempts(db, phase, html != NULL, &att, &n, &err)) {
        judge_db_close(db);
        return cli_report(&err);
    }
    judge_db_close(db);
    if (json) {
        for (size_t i = 0; i < n; i++) {
            strbuf line = {0};
            judge_attempt_to_json(&att[i], &line);
            if (line.data)
                printf("%s\n", line.data);
            strbuf_free(&line);
        }
    } else if (html) {
        strbuf page = {0};
        judge_report_html(att, n, NULL, &page);
        if (page.oom)
            rc = cli_report((tempo_fail(&err, "%s: out of memory", html), &err));
        else if (file_write_atomic(html, page.data, page.len, &err))
            rc = cli_report(&err);
        else
            fprintf(stderr, "wrote %s (%zu bytes)\n", html, page.len);
        strbuf_free(&page);
    } else {
        strbuf table = {0};
        judge_report_table(att, n, all, &table);
        if (table.data)
            fputs(table.data, stdout);
        strbuf_free(&table);
    }
    if (rc == 0) {
        judge_board b;
        strbuf_printf(&out, "{\"db\":");
        strbuf_json_string(&out, db_path, strlen(db_path));
        strbuf_printf(&out, ",\"attempts\":%zu", n);
        if (html) {
            strbuf_puts(&out, ",\"html\":");
            strbuf_json_string(&out, html, strlen(html));
        }
        strbuf_puts(&out, ",\"leaders\":[");
        if (judge_board_build(att, n, &b) == 0) {
            int first = 1;
            for (size_t k = 0; k < b.n_groups; k++) {
                const judge_board_group *g = &b.groups[k];
                if (!g->n_ranked)
                    continue;
                const judge_attempt *a = &att[g->ranked[0]];
                strbuf_printf(&out, "%s{\"phase\":%d,\"budget_s\":", first ? "" : ",", g->phase);
                strbuf_json_number(&out, g->budget_s);
                strbuf_puts(&out, ",\"submission\":");
                strbuf_json_string(&out, a->submission, strlen(a->submission));
                strbuf_puts(&out, ",\"score\":");
                strbuf_json_number(&out, a->score_mean);
                strbuf_printf(&out, ",\"attempt\":%lld}", a->id);
                first = 0;
            }
            judge_board_free(&b);
        }
        strbuf_puts(&out, "]}");
        rc = cli_emit_result(&out, NULL);
    }
    strbuf_free(&out);
    for (size_t i = 0; i < n; i++)
        judge_attempt_free(&att[i]);
    free(att);
    return rc;
}
