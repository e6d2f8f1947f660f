/* leaderboard_db.h - the leaderboard: one SQLite database file in WAL mode
 * (synchronous=FULL) with two tables, attempts and runs (one row per seed),
 * holding every field of judge/attempt.h. An attempt and its runs are
 * written in one IMMEDIATE transaction, so a judge killed at any instant
 * leaves the attempt either wholly recorded or absent, and the file valid.
 * Concurrent judges wait for each other (busy timeout). Queries for the
 * reports load whole attempts; ranking and formatting live in
 * judge/report.h. */
#ifndef TEMPO_JUDGE_LEADERBOARD_DB_H
#define TEMPO_JUDGE_LEADERBOARD_DB_H

#include <stddef.h>

#include "core/error.h"
#include "judge/attempt.h"

#define JUDGE_DB_SCHEMA_VERSION 2

typedef struct judge_db judge_db;

/* Open (creating the file and schema if needed) path. Errors name the path.
 * create 0: fail when the file does not exist. */
int judge_db_open(judge_db **db, const char *path, int create, tempo_error *err);
void judge_db_close(judge_db *db);

/* Record a (its runs included) in one transaction and set a->id.
 * pause_in_tx_s > 0 sleeps inside the open transaction before COMMIT (a
 * test hook for kill -9; 0 in normal use). */
int judge_db_insert_attempt(judge_db *db, judge_attempt *a, double pause_in_tx_s, tempo_error *err);

/* The leader for a new attempt: among attempts with status ok, a score, the
 * same phase, budget and validation text (val_sha256), and id != exclude_id,
 * the one with the lowest mean score (ties: the earlier). Returns 1 and
 * fills *leader (with its runs) when there is one, 0 when none, -1 on error. */
int judge_db_find_leader(judge_db *db, int phase, double budget_s, const char *val_sha256, long long exclude_id,
                         judge_attempt *leader, tempo_error *err);

/* Every attempt (phase 0: all phases) in id order, with runs; curves too when
 * with_curves. *out (n of them) is owned by the caller: free each with
 * judge_attempt_free, then free(*out). */
int judge_db_load_attempts(judge_db *db, int phase, int with_curves, judge_attempt **out, size_t *n,
                           tempo_error *err);

/* PRAGMA integrity_check and row counts: *ok is 1 when the check says "ok". */
int judge_db_check(judge_db *db, int *ok, long long *n_attempts, long long *n_runs, tempo_error *err);

#endif
