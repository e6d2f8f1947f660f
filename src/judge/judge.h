/* judge.h - judging one submission: read its manifest, prepare the
 * training-only data, run it once per seed under the budget (judge/runner.h)
 * with a fresh copy of the submission, take the model that exists at the
 * deadline, score it with `tempo eval` on the official validation text (and
 * the phase-2 scorecard), aggregate over seeds, test against the leader, and
 * record the attempt in the leaderboard in one transaction.
 *
 * A run's status, in the order they are decided:
 *   failed        the command could not start, flooded its output, crashed
 *                 or exited non-zero (reason: how, and its last stderr line),
 *                 or the manifest/submission folder is unusable
 *   over_budget   still running at the deadline: stopped (SIGTERM, SIGKILL
 *                 after the grace); the model of the deadline is still scored
 *                 for information, but the attempt is not ranked
 *   no_model      no model.safetensors in the output folder at the end
 *   invalid_model truncated, foreign, not tempo's, or refused by `tempo eval`
 *                 (e.g. a vocabulary that does not match its tokenizer)
 *   diverged      non-finite weights or a non-finite bpb, or the command
 *                 failed saying "diverged" / "non-finite" (tempo's trainer
 *                 does when its divergence guard gives up)
 *   ok            scored
 * The attempt's status is ok when every run is, else the first bad run's.
 * The environment a command sees is documented in docs/submission.md. */
#ifndef TEMPO_JUDGE_JUDGE_H
#define TEMPO_JUDGE_JUDGE_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "judge/attempt.h"

typedef struct {
    const char *submission;     /* the submission folder */
    int phase;                  /* 1 or 2; 0: the manifest's */
    double budget_s;            /* wall-clock budget per run */
    int seeds;                  /* runs (>= 1) */
    uint64_t seed;              /* the first seed; run i uses seed + i */
    int threads;                /* > 0 overrides the manifest's; 0: manifest's, else all cores */
    long long steps;            /* > 0 overrides the manifest's step cap */
    int vocab;                  /* for manifests that do not say */
    uint64_t memory_bytes;      /* RLIMIT_AS of every process the judge starts, and the cap on a run's
                                 * summed resident memory; 0: 80 % of RAM */
    long max_procs;             /* processes and threads of a run at once (default 512) */
    uint64_t disk_bytes;        /* bytes in a run's writable folders (default 16 GiB) */
    int no_sandbox;             /* 1: run submissions without judge/sandbox.h (recorded as sandbox: none) */
    double grace_s;             /* SIGTERM -> SIGKILL */
    size_t log_bytes;           /* kept per stream: the first log_bytes and the last log_bytes/4 */
    uint64_t flood_bytes;       /* stdout+stderr beyond this: failed as flooding */
    double eval_timeout_s;      /* limit on each evaluation; 0 = judge_eval_cap's default */
    const char *db_path;
    const char *work_dir;       /* runs and the data cache go here */
    const char *tempo_bin;      /* NULL: this executable */
    const char *corpus_dir;     /* train* files (when data_dir is NULL) */
    const char *data_dir;       /* a prepared training folder to hand over as is, or NULL */
    const char *val_path;       /* the official validation text */
    const char *icl_dir;        /* ICL tasks for phase 2 */
    int icl_limit;              /* > 0: --limit for the ICL evaluation */
    double test_pause_in_tx_s;  /* test hook: sleep inside the leaderboard transaction */
    FILE *progress;             /* human progress (stderr), or NULL */
} judge_options;

/* Fill o with the defaults (budget 30 min, 1 seed from seed 1, vocab 4096,
 * grace 5 s, logs 1 MiB, flood 64 MiB, eval timeout 1 h, leaderboard.sqlite,
 * runs/judge, data from $TEMPO_DATA or ../shared/data). */
void judge_options_default(judge_options *o);

/* The limit on each evaluation of a model: --eval-timeout when given, else
 * the training budget (as Parameter Golf caps evaluation), at least
 * EVAL_CAP_MIN_S so that a short test budget can still score the full val
 * text (10 minutes: cpu-default's transformer learns as it reads, one
 * window at a time, and reads the 5 MB val text in 3-4 minutes on the
 * 2-core machine: 182-237 s measured). A hybrid model's memory and cache count inside it. */
#define EVAL_CAP_MIN_S 600.0
double judge_eval_cap(const judge_options *o);

/* Judge and record one attempt; *a holds it afterwards (free with
 * judge_attempt_free). Returns 0 whenever the attempt was recorded, even a
 * failed one; -1 when the judge itself could not work (no such submission
 * folder, data preparation, the database), with err set. */
int judge_run(const judge_options *o, judge_attempt *a, tempo_error *err);

#endif
