/* attempt.h - the record of one judging: an attempt (one `tempo judge`
 * invocation on one submission, over one or more seeds) and its runs (one
 * per seed). judge/judge.c fills these, judge/leaderboard_db.h stores and
 * loads them, the reports read them. Numbers that do not apply are NaN (or
 * -1 for counts) and are stored as NULL. The JSON form is what `tempo judge`
 * prints as its last stdout line. */
#ifndef TEMPO_JUDGE_ATTEMPT_H
#define TEMPO_JUDGE_ATTEMPT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/strbuf.h"

/* Run and attempt statuses (strings in the database). */
#define JUDGE_OK "ok"
#define JUDGE_FAILED "failed"
#define JUDGE_OVER_BUDGET "over_budget"
#define JUDGE_NO_MODEL "no_model"
#define JUDGE_INVALID_MODEL "invalid_model"
#define JUDGE_DIVERGED "diverged"

typedef struct {
    int seed;
    char status[16];
    char reason[512];           /* one line; empty when ok */
    double score;               /* the phase's score (NaN: none) */
    double bpb;                 /* judge's evaluation on the official val text */
    double val_bytes, val_tokens;
    /* phase-2 parts (NaN when unavailable; phase2_reason says why) */
    double core, decode_tokens_per_s, decode_bytes_per_s, icl_term, speed_term;
    char phase2_reason[256];
    /* timing: wall from the judge's clock, train/steps/... from the submission's result.json */
    double wall_seconds, overrun_seconds, train_seconds;
    double eval_seconds;        /* the judge's evaluation of the model (wall; not stored in the database yet) */
    int exit_code, term_signal;  /* -1 when not applicable */
    long long steps, tokens, params;
    double tokens_per_second, mfu;
    uint64_t stdout_bytes, stderr_bytes;
    char started_at[32], ended_at[32];
    char run_dir[1024];
    char *curves_json;          /* owned; NULL when no metrics */
} judge_run_record;

typedef struct {
    long long id;               /* database id (0 until recorded) */
    char submission[65];        /* manifest name, or the folder name when the manifest is unusable */
    char submission_path[1024];
    char submission_hash[65];   /* judge/submission.h; empty when not computed */
    long long submission_files, submission_bytes;
    char authors[512];
    char description[1024];
    char method[600];           /* "preset cpu-default (lr=0.003 ...)" or "command ./train.sh" */
    int phase;
    double budget_s;
    int seeds;                  /* runs asked for */
    uint64_t first_seed;
    int threads;
    int ranks;                  /* processes the trainer ran as (mpirun -np); 1 = one */
    uint64_t memory_bytes;
    char status[16];
    char reason[600];
    int n_scored;               /* runs with a score */
    double score_mean, score_std, bpb_mean, bpb_std;
    char formula[160];
    /* the one-sided Welch test against the leader (see judge/stats.h) */
    long long leader_id;        /* 0: no leader */
    char leader_submission[65];
    double leader_mean, p_value, t_stat, df;
    int beats_leader;           /* 1 / 0, -1: not tested */
    char test_note[256];
    char tempo_version[64], git_commit[64];
    char *hardware_json;        /* owned; NULL: unknown */
    char data_id[128];          /* which training data was handed over */
    char val_path[1024], val_sha256[65];
    char started_at[32], ended_at[32];
    char work_dir[1024];
    char sandbox[16];           /* "bwrap": runs were sandboxed (judge/sandbox.h); "none": --no-sandbox */
    int n_runs;
    judge_run_record *runs;     /* owned */
} judge_attempt;

/* A zeroed record with every number NaN / -1 and status "failed". */
void judge_run_record_init(judge_run_record *r);
void judge_attempt_init(judge_attempt *a);
/* Free what the records own (not the attempt struct itself). */
void judge_attempt_free(judge_attempt *a);

/* Current UTC time as "YYYY-MM-DDTHH:MM:SSZ". */
void judge_utc_now(char out[32]);

/* The attempt (with its runs, without curves) as one JSON object appended to
 * out (no newline); -1 with err set when it could not be written (memory).
 * Unknown counts (negative) and numbers (NaN) are null. It has
 * no C reader (the e2e scripts and people read it). */
int judge_attempt_to_json(const judge_attempt *a, strbuf *out, tempo_error *err);

#endif
