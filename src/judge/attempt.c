/* attempt.c - attempt/run records: initialisation, freeing, JSON (see attempt.h). */
#include "judge/attempt.h"
#include "judge/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void judge_run_record_init(judge_run_record *r)
{
    memset(r, 0, sizeof *r);
    judge_fmt(r->status, sizeof r->status, JUDGE_FAILED);
    r->score = r->bpb = r->val_bytes = r->val_tokens = NAN;
    r->core = r->decode_tokens_per_s = r->decode_bytes_per_s = r->icl_term = r->speed_term = NAN;
    r->wall_seconds = r->overrun_seconds = r->train_seconds = r->eval_seconds = NAN;
    r->tokens_per_second = r->mfu = NAN;
    r->exit_code = r->term_signal = -1;
    r->steps = r->tokens = r->params = -1;
}

void judge_attempt_init(judge_attempt *a)
{
    memset(a, 0, sizeof *a);
    judge_fmt(a->status, sizeof a->status, JUDGE_FAILED);
    a->score_mean = a->score_std = a->bpb_mean = a->bpb_std = NAN;
    a->leader_mean = a->p_value = a->t_stat = a->df = NAN;
    a->beats_leader = -1;
    a->submission_files = a->submission_bytes = -1;
    a->budget_s = NAN;
}

void judge_attempt_free(judge_attempt *a)
{
    for (int i = 0; i < a->n_runs; i++)
        free(a->runs[i].curves_json);
    free(a->runs);
    free(a->hardware_json);
    a->runs = NULL;
    a->n_runs = 0;
    a->hardware_json = NULL;
}

void judge_utc_now(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void key(strbuf *o, const char *k, int *first)
{
    strbuf_puts(o, *first ? "\"" : ",\"");
    strbuf_puts(o, k);
    strbuf_puts(o, "\":");
    *first = 0;
}

static void kstr(strbuf *o, const char *k, const char *v, int *first)
{
    key(o, k, first);
    strbuf_json_string(o, v, strlen(v));
}

static void knum(strbuf *o, const char *k, double v, int *first)
{
    key(o, k, first);
    strbuf_json_number(o, v); /* NaN -> null */
}

static void kint(strbuf *o, const char *k, long long v, int *first)
{
    key(o, k, first);
    if (v < 0)
        strbuf_puts(o, "null");
    else
        strbuf_printf(o, "%lld", v);
}

static void run_json(const judge_run_record *r, strbuf *o)
{
    int f = 1;
    strbuf_puts(o, "{");
    kint(o, "seed", r->seed, &f);
    kstr(o, "status", r->status, &f);
    kstr(o, "reason", r->reason, &f);
    knum(o, "score", r->score, &f);
    knum(o, "bpb", r->bpb, &f);
    knum(o, "val_bytes", r->val_bytes, &f);
    knum(o, "val_tokens", r->val_tokens, &f);
    knum(o, "core", r->core, &f);
    knum(o, "decode_tokens_per_s", r->decode_tokens_per_s, &f);
    knum(o, "decode_bytes_per_s", r->decode_bytes_per_s, &f);
    knum(o, "icl_term", r->icl_term, &f);
    knum(o, "speed_term", r->speed_term, &f);
    kstr(o, "phase2_reason", r->phase2_reason, &f);
    knum(o, "wall_seconds", r->wall_seconds, &f);
    knum(o, "overrun_seconds", r->overrun_seconds, &f);
    knum(o, "train_seconds", r->train_seconds, &f);
    knum(o, "eval_seconds", r->eval_seconds, &f);
    kint(o, "exit_code", r->exit_code, &f);
    kint(o, "term_signal", r->term_signal, &f);
    kint(o, "steps", r->steps, &f);
    kint(o, "tokens", r->tokens, &f);
    kint(o, "params", r->params, &f);
    knum(o, "tokens_per_second", r->tokens_per_second, &f);
    knum(o, "mfu", r->mfu, &f);
    kint(o, "stdout_bytes", (long long)r->stdout_bytes, &f);
    kint(o, "stderr_bytes", (long long)r->stderr_bytes, &f);
    kstr(o, "started_at", r->started_at, &f);
    kstr(o, "ended_at", r->ended_at, &f);
    kstr(o, "run_dir", r->run_dir, &f);
    strbuf_puts(o, "}");
}

void judge_attempt_to_json(const judge_attempt *a, strbuf *o)
{
    int f = 1;
    strbuf_puts(o, "{");
    kint(o, "id", a->id, &f);
    kstr(o, "submission", a->submission, &f);
    kstr(o, "submission_path", a->submission_path, &f);
    kstr(o, "submission_hash", a->submission_hash, &f);
    kint(o, "submission_files", a->submission_files, &f);
    kint(o, "submission_bytes", a->submission_bytes, &f);
    kstr(o, "authors", a->authors, &f);
    kstr(o, "method", a->method, &f);
    kint(o, "phase", a->phase, &f);
    knum(o, "budget_s", a->budget_s, &f);
    kint(o, "seeds", a->seeds, &f);
    kint(o, "first_seed", (long long)a->first_seed, &f);
    kint(o, "threads", a->threads, &f);
    kint(o, "memory_bytes", (long long)a->memory_bytes, &f);
    kstr(o, "status", a->status, &f);
    kstr(o, "reason", a->reason, &f);
    kint(o, "n_scored", a->n_scored, &f);
    knum(o, "score_mean", a->score_mean, &f);
    knum(o, "score_std", a->score_std, &f);
    knum(o, "bpb_mean", a->bpb_mean, &f);
    knum(o, "bpb_std", a->bpb_std, &f);
    kstr(o, "formula", a->formula, &f);
    key(o, "leader", &f);
    if (a->leader_id > 0) {
        int g = 1;
        strbuf_puts(o, "{");
        kint(o, "id", a->leader_id, &g);
        kstr(o, "submission", a->leader_submission, &g);
        knum(o, "score_mean", a->leader_mean, &g);
        knum(o, "t", a->t_stat, &g);
        knum(o, "df", a->df, &g);
        knum(o, "p_value", a->p_value, &g);
        key(o, "beats_leader", &g);
        strbuf_puts(o, a->beats_leader < 0 ? "null" : a->beats_leader ? "true" : "false");
        strbuf_puts(o, "}");
    } else {
        strbuf_puts(o, "null");
    }
    kstr(o, "test", a->test_note, &f);
    kstr(o, "tempo_version", a->tempo_version, &f);
    kstr(o, "git_commit", a->git_commit, &f);
    key(o, "hardware", &f);
    strbuf_puts(o, a->hardware_json ? a->hardware_json : "null");
    kstr(o, "data_id", a->data_id, &f);
    kstr(o, "val_path", a->val_path, &f);
    kstr(o, "val_sha256", a->val_sha256, &f);
    kstr(o, "started_at", a->started_at, &f);
    kstr(o, "ended_at", a->ended_at, &f);
    kstr(o, "work_dir", a->work_dir, &f);
    key(o, "runs", &f);
    strbuf_puts(o, "[");
    for (int i = 0; i < a->n_runs; i++) {
        if (i)
            strbuf_puts(o, ",");
        run_json(&a->runs[i], o);
    }
    strbuf_puts(o, "]}");
}
