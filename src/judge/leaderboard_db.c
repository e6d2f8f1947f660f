/* leaderboard_db.c - the SQLite store of attempts and runs (see
 * leaderboard_db.h). The column lists below are the single place that maps
 * judge/attempt.h fields to columns; insert and load walk them in order. */
#include "judge/leaderboard_db.h"
#include "core/text.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct judge_db {
    sqlite3 *h;
    char path[1024];
};

#define ATTEMPT_COLS                                                                                          \
    "submission, submission_path, submission_hash, submission_files, submission_bytes, authors, description, " \
    "method, phase, budget_s, seeds, first_seed, threads, memory_bytes, status, reason, n_scored, score_mean, "   \
    "score_std, bpb_mean, bpb_std, formula, leader_id, leader_submission, leader_mean, p_value, t_stat, df, "     \
    "beats_leader, test_note, tempo_version, git_commit, hardware_json, data_id, val_path, val_sha256, "         \
    "started_at, ended_at, work_dir, sandbox"
#define ATTEMPT_NCOLS 40

#define RUN_COLS                                                                                              \
    "attempt_id, seed, status, reason, score, bpb, val_bytes, val_tokens, core, decode_tokens_per_s, "         \
    "decode_bytes_per_s, icl_term, speed_term, phase2_reason, wall_seconds, overrun_seconds, train_seconds, "   \
    "exit_code, term_signal, steps, tokens, params, tokens_per_second, mfu, stdout_bytes, stderr_bytes, "       \
    "started_at, ended_at, run_dir, curves_json"
#define RUN_NCOLS 30

static const char *const schema_sql =
    "CREATE TABLE IF NOT EXISTS attempts ("
    " id INTEGER PRIMARY KEY,"
    " submission TEXT NOT NULL, submission_path TEXT, submission_hash TEXT, submission_files INTEGER,"
    " submission_bytes INTEGER, authors TEXT, description TEXT, method TEXT,"
    " phase INTEGER NOT NULL, budget_s REAL, seeds INTEGER, first_seed INTEGER, threads INTEGER,"
    " memory_bytes INTEGER,"
    " status TEXT NOT NULL CHECK (status IN ('ok','failed','over_budget','no_model','invalid_model','diverged')),"
    " reason TEXT, n_scored INTEGER, score_mean REAL, score_std REAL, bpb_mean REAL, bpb_std REAL, formula TEXT,"
    " leader_id INTEGER, leader_submission TEXT, leader_mean REAL, p_value REAL, t_stat REAL, df REAL,"
    " beats_leader INTEGER, test_note TEXT, tempo_version TEXT, git_commit TEXT, hardware_json TEXT,"
    " data_id TEXT, val_path TEXT, val_sha256 TEXT, started_at TEXT, ended_at TEXT, work_dir TEXT, sandbox TEXT);"
    "CREATE TABLE IF NOT EXISTS runs ("
    " id INTEGER PRIMARY KEY,"
    " attempt_id INTEGER NOT NULL REFERENCES attempts(id),"
    " seed INTEGER, status TEXT NOT NULL, reason TEXT, score REAL, bpb REAL, val_bytes REAL, val_tokens REAL,"
    " core REAL, decode_tokens_per_s REAL, decode_bytes_per_s REAL, icl_term REAL, speed_term REAL,"
    " phase2_reason TEXT, wall_seconds REAL, overrun_seconds REAL, train_seconds REAL, exit_code INTEGER,"
    " term_signal INTEGER, steps INTEGER, tokens INTEGER, params INTEGER, tokens_per_second REAL, mfu REAL,"
    " stdout_bytes INTEGER, stderr_bytes INTEGER, started_at TEXT, ended_at TEXT, run_dir TEXT,"
    " curves_json TEXT);"
    "CREATE INDEX IF NOT EXISTS runs_attempt ON runs(attempt_id);"
    "CREATE INDEX IF NOT EXISTS attempts_board ON attempts(phase, status, score_mean);";

static int db_fail(judge_db *db, tempo_error *err, const char *what)
{
    return tempo_fail(err, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->h));
}

static int exec_sql(judge_db *db, const char *sql, tempo_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
        tempo_fail(err, "%s: %s", db->path, msg ? msg : sqlite3_errmsg(db->h));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* Whether table has the column (a database made by an older schema may not). */
static int has_column(judge_db *db, const char *table, const char *column)
{
    char sql[160];
    text_fmt(sql, sizeof sql, "SELECT %s FROM %s LIMIT 0", column, table);
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) == SQLITE_OK;
    sqlite3_finalize(st);
    return ok;
}

int judge_db_open(judge_db **out, const char *path, int create, tempo_error *err)
{
    *out = NULL;
    if (!create && access(path, F_OK) != 0)
        return tempo_fail(err, "%s: no leaderboard here (judge a submission first, or give --db)", path);
    judge_db *db = calloc(1, sizeof *db);
    if (!db)
        return tempo_fail(err, "%s: out of memory", path);
    text_fmt(db->path, sizeof db->path, "%s", path);
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &db->h, flags, NULL) != SQLITE_OK) {
        tempo_fail(err, "%s: cannot open: %s", path, db->h ? sqlite3_errmsg(db->h) : "out of memory");
        sqlite3_close(db->h);
        free(db);
        return -1;
    }
    sqlite3_busy_timeout(db->h, 60000);
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db->h, "PRAGMA journal_mode=WAL", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        rc = db_fail(db, err, "cannot use WAL mode");
    } else {
        const char *mode = (const char *)sqlite3_column_text(st, 0);
        if (!mode || strcmp(mode, "wal") != 0)
            rc = tempo_fail(err, "%s: cannot use WAL mode (journal mode is %s)", path, mode ? mode : "unknown");
    }
    sqlite3_finalize(st);
    if (rc == 0)
        rc = exec_sql(db, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", err);
    if (rc == 0)
        rc = exec_sql(db, "BEGIN IMMEDIATE", err);
    if (rc == 0) {
        int version = 0;
        if (sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            version = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        if (version > JUDGE_DB_SCHEMA_VERSION)
            rc = tempo_fail(err, "%s: made by a newer tempo (schema %d, this one knows %d)", path, version,
                            JUDGE_DB_SCHEMA_VERSION);
        if (rc == 0)
            rc = exec_sql(db, schema_sql, err);
        /* schema 1 had no sandbox column: its attempts ran unsandboxed (NULL reads as "none") */
        if (rc == 0 && version < 2 && !has_column(db, "attempts", "sandbox"))
            rc = exec_sql(db, "ALTER TABLE attempts ADD COLUMN sandbox TEXT", err);
        if (rc == 0 && version < JUDGE_DB_SCHEMA_VERSION)
            rc = exec_sql(db, "PRAGMA user_version=2", err);
        if (rc == 0)
            rc = exec_sql(db, "COMMIT", err);
        else
            sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    }
    if (rc) {
        sqlite3_close(db->h);
        free(db);
        return -1;
    }
    *out = db;
    return 0;
}

void judge_db_close(judge_db *db)
{
    if (!db)
        return;
    sqlite3_close(db->h);
    free(db);
}

/* Binding in column order: k is the next parameter index. */
static void b_text(sqlite3_stmt *st, int *k, const char *s)
{
    sqlite3_bind_text(st, (*k)++, s ? s : "", -1, SQLITE_TRANSIENT);
}

static void b_opt_text(sqlite3_stmt *st, int *k, const char *s)
{
    if (s)
        sqlite3_bind_text(st, (*k)++, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, (*k)++);
}

static void b_real(sqlite3_stmt *st, int *k, double x)
{
    if (isfinite(x))
        sqlite3_bind_double(st, (*k)++, x);
    else
        sqlite3_bind_null(st, (*k)++);
}

static void b_int(sqlite3_stmt *st, int *k, long long x)
{
    if (x < 0)
        sqlite3_bind_null(st, (*k)++);
    else
        sqlite3_bind_int64(st, (*k)++, x);
}

static void bind_attempt(sqlite3_stmt *st, const judge_attempt *a)
{
    int k = 1;
    b_text(st, &k, a->submission);
    b_text(st, &k, a->submission_path);
    b_text(st, &k, a->submission_hash);
    b_int(st, &k, a->submission_files);
    b_int(st, &k, a->submission_bytes);
    b_text(st, &k, a->authors);
    b_text(st, &k, a->description);
    b_text(st, &k, a->method);
    b_int(st, &k, a->phase);
    b_real(st, &k, a->budget_s);
    b_int(st, &k, a->seeds);
    b_int(st, &k, (long long)a->first_seed);
    b_int(st, &k, a->threads);
    b_int(st, &k, (long long)a->memory_bytes);
    b_text(st, &k, a->status);
    b_text(st, &k, a->reason);
    b_int(st, &k, a->n_scored);
    b_real(st, &k, a->score_mean);
    b_real(st, &k, a->score_std);
    b_real(st, &k, a->bpb_mean);
    b_real(st, &k, a->bpb_std);
    b_text(st, &k, a->formula);
    if (a->leader_id > 0)
        b_int(st, &k, a->leader_id);
    else
        sqlite3_bind_null(st, k++);
    b_text(st, &k, a->leader_submission);
    b_real(st, &k, a->leader_mean);
    b_real(st, &k, a->p_value);
    b_real(st, &k, a->t_stat);
    b_real(st, &k, a->df);
    b_int(st, &k, a->beats_leader);
    b_text(st, &k, a->test_note);
    b_text(st, &k, a->tempo_version);
    b_text(st, &k, a->git_commit);
    b_opt_text(st, &k, a->hardware_json);
    b_text(st, &k, a->data_id);
    b_text(st, &k, a->val_path);
    b_text(st, &k, a->val_sha256);
    b_text(st, &k, a->started_at);
    b_text(st, &k, a->ended_at);
    b_text(st, &k, a->work_dir);
    b_text(st, &k, a->sandbox);
}

static void bind_run(sqlite3_stmt *st, long long attempt_id, const judge_run_record *r)
{
    int k = 1;
    b_int(st, &k, attempt_id);
    b_int(st, &k, r->seed);
    b_text(st, &k, r->status);
    b_text(st, &k, r->reason);
    b_real(st, &k, r->score);
    b_real(st, &k, r->bpb);
    b_real(st, &k, r->val_bytes);
    b_real(st, &k, r->val_tokens);
    b_real(st, &k, r->core);
    b_real(st, &k, r->decode_tokens_per_s);
    b_real(st, &k, r->decode_bytes_per_s);
    b_real(st, &k, r->icl_term);
    b_real(st, &k, r->speed_term);
    b_text(st, &k, r->phase2_reason);
    b_real(st, &k, r->wall_seconds);
    b_real(st, &k, r->overrun_seconds);
    b_real(st, &k, r->train_seconds);
    b_int(st, &k, r->exit_code);
    b_int(st, &k, r->term_signal);
    b_int(st, &k, r->steps);
    b_int(st, &k, r->tokens);
    b_int(st, &k, r->params);
    b_real(st, &k, r->tokens_per_second);
    b_real(st, &k, r->mfu);
    b_int(st, &k, (long long)r->stdout_bytes);
    b_int(st, &k, (long long)r->stderr_bytes);
    b_text(st, &k, r->started_at);
    b_text(st, &k, r->ended_at);
    b_text(st, &k, r->run_dir);
    b_opt_text(st, &k, r->curves_json);
}

static const char *placeholders(int n)
{
    /* "?,?,...,?" for up to 64 columns (a constant, so no mutable state) */
    static const char q[] = "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                            "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?";
    return q + sizeof q - 1 - (size_t)(2 * n - 1);
}

int judge_db_insert_attempt(judge_db *db, judge_attempt *a, double pause_in_tx_s, tempo_error *err)
{
    char sql_a[1024], sql_r[1024];
    text_fmt(sql_a, sizeof sql_a, "INSERT INTO attempts (" ATTEMPT_COLS ") VALUES (%s)", placeholders(ATTEMPT_NCOLS));
    text_fmt(sql_r, sizeof sql_r, "INSERT INTO runs (" RUN_COLS ") VALUES (%s)", placeholders(RUN_NCOLS));
    if (exec_sql(db, "BEGIN IMMEDIATE", err))
        return -1;
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db->h, sql_a, -1, &st, NULL) != SQLITE_OK) {
        rc = db_fail(db, err, "insert attempt");
    } else {
        bind_attempt(st, a);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = db_fail(db, err, "insert attempt");
    }
    sqlite3_finalize(st);
    st = NULL;
    long long id = sqlite3_last_insert_rowid(db->h);
    if (rc == 0 && sqlite3_prepare_v2(db->h, sql_r, -1, &st, NULL) != SQLITE_OK)
        rc = db_fail(db, err, "insert run");
    for (int i = 0; rc == 0 && i < a->n_runs; i++) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        bind_run(st, id, &a->runs[i]);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = db_fail(db, err, "insert run");
    }
    sqlite3_finalize(st);
    if (rc == 0 && pause_in_tx_s > 0)
        usleep((useconds_t)(pause_in_tx_s * 1e6));
    if (rc == 0 && exec_sql(db, "COMMIT", err))
        rc = -1;
    if (rc) {
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    a->id = id;
    return 0;
}

/* Reading in column order: k is the next column index. */
static void c_text(sqlite3_stmt *st, int *k, char *dst, size_t n)
{
    const unsigned char *s = sqlite3_column_text(st, (*k)++);
    text_fmt(dst, n, "%s", s ? (const char *)s : "");
}

static char *c_dup(sqlite3_stmt *st, int *k)
{
    const unsigned char *s = sqlite3_column_text(st, (*k)++);
    return s ? strdup((const char *)s) : NULL;
}

static double c_real(sqlite3_stmt *st, int *k)
{
    int i = (*k)++;
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static long long c_int(sqlite3_stmt *st, int *k)
{
    int i = (*k)++;
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

static void read_attempt(sqlite3_stmt *st, judge_attempt *a)
{
    judge_attempt_init(a);
    int k = 0;
    a->id = c_int(st, &k);
    c_text(st, &k, a->submission, sizeof a->submission);
    c_text(st, &k, a->submission_path, sizeof a->submission_path);
    c_text(st, &k, a->submission_hash, sizeof a->submission_hash);
    a->submission_files = c_int(st, &k);
    a->submission_bytes = c_int(st, &k);
    c_text(st, &k, a->authors, sizeof a->authors);
    c_text(st, &k, a->description, sizeof a->description);
    c_text(st, &k, a->method, sizeof a->method);
    a->phase = (int)c_int(st, &k);
    a->budget_s = c_real(st, &k);
    a->seeds = (int)c_int(st, &k);
    a->first_seed = (uint64_t)c_int(st, &k);
    a->threads = (int)c_int(st, &k);
    a->memory_bytes = (uint64_t)c_int(st, &k);
    c_text(st, &k, a->status, sizeof a->status);
    c_text(st, &k, a->reason, sizeof a->reason);
    a->n_scored = (int)c_int(st, &k);
    a->score_mean = c_real(st, &k);
    a->score_std = c_real(st, &k);
    a->bpb_mean = c_real(st, &k);
    a->bpb_std = c_real(st, &k);
    c_text(st, &k, a->formula, sizeof a->formula);
    long long lid = c_int(st, &k);
    a->leader_id = lid > 0 ? lid : 0;
    c_text(st, &k, a->leader_submission, sizeof a->leader_submission);
    a->leader_mean = c_real(st, &k);
    a->p_value = c_real(st, &k);
    a->t_stat = c_real(st, &k);
    a->df = c_real(st, &k);
    a->beats_leader = (int)c_int(st, &k);
    c_text(st, &k, a->test_note, sizeof a->test_note);
    c_text(st, &k, a->tempo_version, sizeof a->tempo_version);
    c_text(st, &k, a->git_commit, sizeof a->git_commit);
    a->hardware_json = c_dup(st, &k);
    c_text(st, &k, a->data_id, sizeof a->data_id);
    c_text(st, &k, a->val_path, sizeof a->val_path);
    c_text(st, &k, a->val_sha256, sizeof a->val_sha256);
    c_text(st, &k, a->started_at, sizeof a->started_at);
    c_text(st, &k, a->ended_at, sizeof a->ended_at);
    c_text(st, &k, a->work_dir, sizeof a->work_dir);
    c_text(st, &k, a->sandbox, sizeof a->sandbox);
    if (!a->sandbox[0])
        text_fmt(a->sandbox, sizeof a->sandbox, "none");
}

static void read_run(sqlite3_stmt *st, judge_run_record *r, int with_curves)
{
    judge_run_record_init(r);
    int k = 1; /* column 0 is attempt_id */
    r->seed = (int)c_int(st, &k);
    c_text(st, &k, r->status, sizeof r->status);
    c_text(st, &k, r->reason, sizeof r->reason);
    r->score = c_real(st, &k);
    r->bpb = c_real(st, &k);
    r->val_bytes = c_real(st, &k);
    r->val_tokens = c_real(st, &k);
    r->core = c_real(st, &k);
    r->decode_tokens_per_s = c_real(st, &k);
    r->decode_bytes_per_s = c_real(st, &k);
    r->icl_term = c_real(st, &k);
    r->speed_term = c_real(st, &k);
    c_text(st, &k, r->phase2_reason, sizeof r->phase2_reason);
    r->wall_seconds = c_real(st, &k);
    r->overrun_seconds = c_real(st, &k);
    r->train_seconds = c_real(st, &k);
    r->exit_code = (int)c_int(st, &k);
    r->term_signal = (int)c_int(st, &k);
    r->steps = c_int(st, &k);
    r->tokens = c_int(st, &k);
    r->params = c_int(st, &k);
    r->tokens_per_second = c_real(st, &k);
    r->mfu = c_real(st, &k);
    long long ob = c_int(st, &k), eb = c_int(st, &k);
    r->stdout_bytes = ob < 0 ? 0 : (uint64_t)ob;
    r->stderr_bytes = eb < 0 ? 0 : (uint64_t)eb;
    c_text(st, &k, r->started_at, sizeof r->started_at);
    c_text(st, &k, r->ended_at, sizeof r->ended_at);
    c_text(st, &k, r->run_dir, sizeof r->run_dir);
    r->curves_json = with_curves ? c_dup(st, &k) : NULL;
}

static int load_runs(judge_db *db, judge_attempt *a, int with_curves, tempo_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT " RUN_COLS " FROM runs WHERE attempt_id = ? ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return db_fail(db, err, "read runs");
    sqlite3_bind_int64(st, 1, a->id);
    int rc = 0, s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        judge_run_record *p = realloc(a->runs, (size_t)(a->n_runs + 1) * sizeof *p);
        if (!p) {
            rc = tempo_fail(err, "%s: out of memory", db->path);
            break;
        }
        a->runs = p;
        read_run(st, &a->runs[a->n_runs], with_curves);
        a->n_runs++;
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = db_fail(db, err, "read runs");
    sqlite3_finalize(st);
    return rc;
}

int judge_db_load_attempts(judge_db *db, int phase, int with_curves, judge_attempt **out, size_t *n,
                           tempo_error *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    const char *sql = phase ? "SELECT id, " ATTEMPT_COLS " FROM attempts WHERE phase = ? ORDER BY id"
                            : "SELECT id, " ATTEMPT_COLS " FROM attempts ORDER BY id";
    /* one read transaction: a consistent snapshot even while a judge writes */
    if (exec_sql(db, "BEGIN", err))
        return -1;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        return db_fail(db, err, "read attempts");
    }
    if (phase)
        sqlite3_bind_int(st, 1, phase);
    judge_attempt *list = NULL;
    size_t count = 0, cap = 0;
    int rc = 0, s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (count == cap) {
            size_t nc = cap ? 2 * cap : 16;
            judge_attempt *p = realloc(list, nc * sizeof *p);
            if (!p) {
                rc = tempo_fail(err, "%s: out of memory", db->path);
                break;
            }
            list = p;
            cap = nc;
        }
        read_attempt(st, &list[count]);
        count++;
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = db_fail(db, err, "read attempts");
    sqlite3_finalize(st);
    for (size_t i = 0; rc == 0 && i < count; i++)
        rc = load_runs(db, &list[i], with_curves, err);
    sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
    if (rc) {
        for (size_t i = 0; i < count; i++)
            judge_attempt_free(&list[i]);
        free(list);
        return -1;
    }
    *out = list;
    *n = count;
    return 0;
}

int judge_db_find_leader(judge_db *db, int phase, double budget_s, const char *val_sha256, long long exclude_id,
                         judge_attempt *leader, tempo_error *err)
{
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT id, " ATTEMPT_COLS " FROM attempts WHERE status = 'ok' AND score_mean IS NOT NULL"
                      " AND phase = ? AND abs(budget_s - ?) < 1e-6 AND val_sha256 = ? AND id <> ?"
                      " ORDER BY score_mean ASC, id ASC LIMIT 1";
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "find leader");
    sqlite3_bind_int(st, 1, phase);
    sqlite3_bind_double(st, 2, budget_s);
    sqlite3_bind_text(st, 3, val_sha256, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, exclude_id);
    int s = sqlite3_step(st), found = 0;
    if (s == SQLITE_ROW) {
        read_attempt(st, leader);
        found = 1;
    }
    sqlite3_finalize(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        return db_fail(db, err, "find leader");
    if (found && load_runs(db, leader, 0, err)) {
        judge_attempt_free(leader);
        return -1;
    }
    return found;
}

int judge_db_check(judge_db *db, int *ok, long long *n_attempts, long long *n_runs, tempo_error *err)
{
    sqlite3_stmt *st = NULL;
    *ok = 0;
    if (sqlite3_prepare_v2(db->h, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "integrity check");
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *r = (const char *)sqlite3_column_text(st, 0);
        *ok = r && !strcmp(r, "ok");
    }
    sqlite3_finalize(st);
    const char *q[2] = {"SELECT count(*) FROM attempts", "SELECT count(*) FROM runs"};
    long long *dst[2] = {n_attempts, n_runs};
    for (int i = 0; i < 2; i++) {
        if (sqlite3_prepare_v2(db->h, q[i], -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
            sqlite3_finalize(st);
            return db_fail(db, err, "count rows");
        }
        *dst[i] = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    /* every run belongs to a recorded attempt (no half-written attempt) */
    if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM runs WHERE attempt_id NOT IN (SELECT id FROM attempts)", -1,
                           &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return db_fail(db, err, "check runs");
    }
    if (sqlite3_column_int64(st, 0) != 0)
        *ok = 0;
    sqlite3_finalize(st);
    return 0;
}
