/* test_judge_db.c - judge/leaderboard_db.h (schema, WAL, round trip of every
 * field, leader lookup, atomic insert with rollback, integrity check) and
 * judge/report.h (ranking per submission and group, table, HTML page). */
#include <math.h>
#include <sqlite3.h>
#include <unistd.h>

#include "core/json.h"
#include "judge/leaderboard_db.h"
#include "judge/report.h"
#include "test.h"

static char dir[] = "/tmp/test_judge_db.XXXXXX";
static char db_path[128];

static void make_attempt(judge_attempt *a, const char *name, const char *status, int phase, double budget,
                         const double *scores, int n)
{
    judge_attempt_init(a);
    snprintf(a->submission, sizeof a->submission, "%s", name);
    snprintf(a->status, sizeof a->status, "%s", status);
    snprintf(a->authors, sizeof a->authors, "<script>alert(1)</script> & co");
    snprintf(a->val_sha256, sizeof a->val_sha256, "%064d", 7);
    snprintf(a->val_path, sizeof a->val_path, "/data/val.txt.xz");
    snprintf(a->git_commit, sizeof a->git_commit, "abc123");
    snprintf(a->submission_hash, sizeof a->submission_hash, "%064d", 1);
    a->phase = phase;
    a->budget_s = budget;
    a->seeds = n;
    a->hardware_json = strdup("{\"cores\":2}");
    a->runs = calloc((size_t)(n ? n : 1), sizeof *a->runs);
    a->n_runs = n;
    double s = 0;
    for (int i = 0; i < n; i++) {
        judge_run_record *r = &a->runs[i];
        judge_run_record_init(r);
        r->seed = i + 1;
        snprintf(r->status, sizeof r->status, "%s", status);
        r->score = r->bpb = scores[i];
        r->wall_seconds = 9.5;
        r->steps = 100 + i;
        r->stdout_bytes = 12345;
        r->curves_json = strdup("{\"train_loss\":[[0,5],[1,4],[2,3.5]],\"val_bpb\":[[1,3],[2,2.5]]}");
        s += scores[i];
    }
    if (n && !strcmp(status, JUDGE_OK)) {
        a->n_scored = n;
        a->score_mean = a->bpb_mean = s / n;
        a->score_std = 0.05;
    }
}

static void test_roundtrip_and_leader(void)
{
    judge_db *db;
    tempo_error err;
    CHECK(judge_db_open(&db, db_path, 0, &err) == -1 && strstr(err.msg, "no leaderboard here") != NULL);
    CHECK(judge_db_open(&db, db_path, 1, &err) == 0);
    double sa[] = {2.0, 2.1, 2.2}, sc[] = {1.5, 1.6}, sd[] = {1.7};
    judge_attempt a, b, c, d, e;
    make_attempt(&a, "alpha", JUDGE_OK, 1, 10, sa, 3);
    make_attempt(&b, "bravo", JUDGE_NO_MODEL, 1, 10, NULL, 0);
    snprintf(b.reason, sizeof b.reason, "no model.safetensors in the output folder");
    make_attempt(&c, "charlie", JUDGE_OK, 1, 10, sc, 2);
    make_attempt(&d, "charlie", JUDGE_OK, 1, 10, sd, 1);
    make_attempt(&e, "echo", JUDGE_OK, 1, 20, sd, 1); /* another budget: another group */
    judge_attempt *all[] = {&a, &b, &c, &d, &e};
    for (int i = 0; i < 5; i++) {
        CHECK(judge_db_insert_attempt(db, all[i], 0, &err) == 0);
        CHECK(all[i]->id == i + 1);
    }
    /* a bad status violates the CHECK constraint: nothing of it is kept */
    judge_attempt bad;
    make_attempt(&bad, "bad", "weird", 1, 10, sa, 2);
    CHECK(judge_db_insert_attempt(db, &bad, 0, &err) == -1);
    judge_attempt_free(&bad);
    int ok;
    long long na, nr;
    CHECK(judge_db_check(db, &ok, &na, &nr, &err) == 0);
    CHECK(ok && na == 5 && nr == 7);

    judge_attempt leader;
    CHECK(judge_db_find_leader(db, 1, 10, a.val_sha256, 0, &leader, &err) == 1);
    CHECK(leader.id == c.id && leader.n_runs == 2 && leader.runs[1].score == 1.6);
    judge_attempt_free(&leader);
    CHECK(judge_db_find_leader(db, 1, 10, a.val_sha256, c.id, &leader, &err) == 1);
    CHECK(leader.id == d.id);
    judge_attempt_free(&leader);
    CHECK(judge_db_find_leader(db, 2, 10, a.val_sha256, 0, &leader, &err) == 0);
    CHECK(judge_db_find_leader(db, 1, 30, a.val_sha256, 0, &leader, &err) == 0);
    CHECK(judge_db_find_leader(db, 1, 10, "other", 0, &leader, &err) == 0);

    judge_attempt *got;
    size_t n;
    CHECK(judge_db_load_attempts(db, 0, 1, &got, &n, &err) == 0);
    CHECK(n == 5);
    const judge_attempt *g = &got[0];
    CHECK(!strcmp(g->submission, "alpha") && !strcmp(g->status, JUDGE_OK) && g->phase == 1 && g->budget_s == 10);
    CHECK(g->n_runs == 3 && g->runs[2].score == 2.2 && g->runs[2].steps == 102 && g->runs[0].stdout_bytes == 12345);
    CHECK(isnan(g->runs[0].core) && g->runs[0].exit_code == -1 && g->beats_leader == -1 && g->leader_id == 0);
    CHECK(g->hardware_json && !strcmp(g->hardware_json, "{\"cores\":2}"));
    CHECK(g->runs[0].curves_json && strstr(g->runs[0].curves_json, "val_bpb"));
    CHECK(!strcmp(got[1].reason, "no model.safetensors in the output folder") && got[1].n_runs == 0);
    CHECK(isnan(got[1].score_mean));

    /* the ranking: charlie (best of its two attempts) before alpha; bravo unranked; echo in its own group */
    judge_board bd;
    CHECK(judge_board_build(got, n, &bd) == 0);
    CHECK(bd.n_groups == 2);
    CHECK(bd.groups[0].n_ranked == 2 && bd.groups[0].ranked[0] == 2 && bd.groups[0].ranked[1] == 0);
    CHECK(bd.groups[0].n_unranked == 1 && bd.groups[0].unranked[0] == 1);
    CHECK(bd.groups[1].n_ranked == 1 && bd.groups[1].ranked[0] == 4);
    judge_board_free(&bd);

    /* the summary line names one leader per group: charlie's better attempt, and echo */
    strbuf js = {0};
    CHECK(judge_report_summary_json(got, n, "lb \"x\".sqlite", NULL, &js, &err) == 0);
    json_value *v = NULL;
    CHECK_MSG(js.data && json_parse(js.data, js.len, &v, &err) == 0, "%s", js.data ? js.data : "(null)");
    CHECK(v && !strcmp(json_get_string(v, "db"), "lb \"x\".sqlite") && json_get_number(v, "attempts", -1) == 5);
    CHECK(v && !json_get(v, "html"));
    const json_value *L = v ? json_get(v, "leaders") : NULL;
    CHECK(L && L->type == JSON_ARRAY && L->n == 2);
    if (L && L->n == 2) {
        CHECK(!strcmp(json_get_string(&L->items[0], "submission"), "charlie"));
        CHECK(json_get_number(&L->items[0], "attempt", -1) == (double)got[2].id);
        CHECK(json_get_number(&L->items[0], "score", -1) == got[2].score_mean);
        CHECK(json_get_number(&L->items[0], "phase", -1) == 1 && json_get_number(&L->items[0], "budget_s", -1) == 10);
        CHECK(!strcmp(json_get_string(&L->items[1], "submission"), "echo"));
        CHECK(json_get_number(&L->items[1], "budget_s", -1) == 20);
    }
    json_free(v);
    js.len = 0;
    CHECK(judge_report_summary_json(got, 0, "lb", "page.html", &js, &err) == 0);
    CHECK(js.data && !strcmp(js.data, "{\"db\":\"lb\",\"attempts\":0,\"html\":\"page.html\",\"leaders\":[]}"));

    /* one attempt as JSON: unknown counts and numbers are null, the hardware kept as written */
    js.len = 0;
    CHECK(judge_attempt_to_json(&got[0], &js, &err) == 0);
    v = NULL;
    CHECK(js.data && json_parse(js.data, js.len, &v, &err) == 0);
    const json_value *runs = v ? json_get(v, "runs") : NULL;
    CHECK(runs && runs->type == JSON_ARRAY && runs->n == 3);
    if (runs && runs->n == 3) {
        CHECK(json_get(&runs->items[0], "exit_code")->type == JSON_NULL);
        CHECK(json_get(&runs->items[0], "core")->type == JSON_NULL);
        CHECK(json_get_number(&runs->items[2], "steps", -1) == 102 && json_get_number(&runs->items[2], "score", -1) == 2.2);
    }
    CHECK(v && json_get(v, "leader")->type == JSON_NULL);
    CHECK(v && json_get_number(json_get(v, "hardware"), "cores", -1) == 2);
    CHECK(v && !strcmp(json_get_string(v, "authors"), "<script>alert(1)</script> & co"));
    json_free(v);
    strbuf_free(&js);

    strbuf t = {0};
    judge_report_table(got, n, 1, &t);
    CHECK(t.data && strstr(t.data, "  1  charlie") && strstr(t.data, "  2  alpha"));
    CHECK(strstr(t.data, "bravo") && strstr(t.data, "no_model"));
    CHECK(strstr(t.data, "budget 10s") && strstr(t.data, "budget 20s"));
    strbuf_free(&t);

    strbuf h = {0};
    judge_report_html(got, n, NULL, &h);
    CHECK(h.data && !strncmp(h.data, "<!DOCTYPE html>", 15));
    CHECK(strstr(h.data, "<table class=\"board\"") && strstr(h.data, "<svg class=\"plot\""));
    CHECK(strstr(h.data, "<polyline") && !strstr(h.data, "<script>"));
    CHECK(strstr(h.data, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"));
    CHECK(strstr(h.data, "</html>"));
    strbuf_free(&h);

    strbuf s = {0};
    judge_report_attempt(&got[0], &s);
    CHECK(s.data && strstr(s.data, "alpha: phase 1, budget 10s, 3 seeds: ok"));
    strbuf_free(&s);
    for (size_t i = 0; i < n; i++)
        judge_attempt_free(&got[i]);
    free(got);
    CHECK(judge_db_load_attempts(db, 2, 0, &got, &n, &err) == 0 && n == 0);
    free(got);
    for (int i = 0; i < 5; i++)
        judge_attempt_free(all[i]);
    judge_db_close(db);
}

static void test_wal_and_schema_version(void)
{
    sqlite3 *h;
    CHECK(sqlite3_open(db_path, &h) == SQLITE_OK);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "wal"));
    sqlite3_finalize(st);
    CHECK(sqlite3_exec(h, "PRAGMA user_version=99", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    judge_db *db;
    tempo_error err;
    CHECK(judge_db_open(&db, db_path, 0, &err) == -1 && strstr(err.msg, "newer tempo") != NULL);
    CHECK(sqlite3_open(db_path, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "PRAGMA user_version=1", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CHECK(judge_db_open(&db, db_path, 0, &err) == 0);
    judge_db_close(db);
    /* not a database at all */
    char junk[160];
    snprintf(junk, sizeof junk, "%s/junk.sqlite", dir);
    FILE *f = fopen(junk, "w");
    fputs("this is not sqlite, just text that is long enough to look like a file\n", f);
    fclose(f);
    CHECK(judge_db_open(&db, junk, 0, &err) == -1 && strstr(err.msg, "junk.sqlite") != NULL);
}

/* A schema-1 database (no sandbox column) is migrated in place: its old
 * attempts read as unsandboxed ("none"), new ones keep their sandbox. */
static void test_migration_from_schema_1(void)
{
    char path[200];
    snprintf(path, sizeof path, "%s/v1.sqlite", dir);
    judge_db *db;
    tempo_error err;
    CHECK(judge_db_open(&db, path, 1, &err) == 0);
    double s1[] = {2.5};
    judge_attempt old;
    make_attempt(&old, "old", JUDGE_OK, 1, 60, s1, 1);
    snprintf(old.sandbox, sizeof old.sandbox, "bwrap");
    CHECK(judge_db_insert_attempt(db, &old, 0, &err) == 0);
    judge_attempt_free(&old);
    judge_db_close(db);
    sqlite3 *h;
    CHECK(sqlite3_open(path, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "ALTER TABLE attempts DROP COLUMN sandbox; PRAGMA user_version=1", NULL, NULL, NULL) ==
          SQLITE_OK);
    sqlite3_close(h);
    CHECK(judge_db_open(&db, path, 0, &err) == 0);
    judge_attempt neu;
    make_attempt(&neu, "new", JUDGE_OK, 1, 60, s1, 1);
    snprintf(neu.sandbox, sizeof neu.sandbox, "bwrap");
    CHECK(judge_db_insert_attempt(db, &neu, 0, &err) == 0);
    judge_attempt_free(&neu);
    judge_attempt *all = NULL;
    size_t n = 0;
    CHECK(judge_db_load_attempts(db, 0, 0, &all, &n, &err) == 0 && n == 2);
    if (n == 2) {
        CHECK(!strcmp(all[0].sandbox, "none"));
        CHECK(!strcmp(all[1].sandbox, "bwrap"));
    }
    for (size_t i = 0; i < n; i++)
        judge_attempt_free(&all[i]);
    free(all);
    judge_db_close(db);
    CHECK(sqlite3_open(path, &h) == SQLITE_OK);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == JUDGE_DB_SCHEMA_VERSION);
    sqlite3_finalize(st);
    sqlite3_close(h);
}

static void test_durations(void)
{
    char b[32];
    judge_format_duration(1800, b, sizeof b);
    CHECK(!strcmp(b, "30m"));
    judge_format_duration(5400, b, sizeof b);
    CHECK(!strcmp(b, "1h30m"));
    judge_format_duration(3.5, b, sizeof b);
    CHECK(!strcmp(b, "3.5s"));
    judge_format_duration(61, b, sizeof b);
    CHECK(!strcmp(b, "1m1s"));
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    snprintf(db_path, sizeof db_path, "%s/lb.sqlite", dir);
    RUN(test_roundtrip_and_leader);
    RUN(test_wal_and_schema_version);
    RUN(test_migration_from_schema_1);
    RUN(test_durations);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_summary("test_judge_db");
}
