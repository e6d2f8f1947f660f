/* attempt.c - attempt/run records: initialisation, freeing, JSON (see attempt.h). */
#include "judge/attempt.h"
#include "core/text.h"
#include "core/json_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void judge_run_record_init(judge_run_record *r)
{
    memset(r, 0, sizeof *r);
    text_fmt(r->status, sizeof r->status, JUDGE_FAILED);
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
    text_fmt(a->status, sizeof a->status, JUDGE_FAILED);
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

/* Counts and ids: a negative one (unknown) is written as null. */
static void field_count(jsonw *w, const char *k, long long v)
{
    if (v < 0)
        jsonw_field_null(w, k);
    else
        jsonw_field_int(w, k, v);
}

static void run_json(jsonw *w, const judge_run_record *r)
{
    jsonw_object_begin(w);
    field_count(w, "seed", r->seed);
    jsonw_field_string(w, "status", r->status);
    jsonw_field_string(w, "reason", r->reason);
    jsonw_field_number(w, "score", r->score); /* NaN -> null */
    jsonw_field_number(w, "bpb", r->bpb);
    jsonw_field_number(w, "val_bytes", r->val_bytes);
    jsonw_field_number(w, "val_tokens", r->val_tokens);
    jsonw_field_number(w, "core", r->core);
    jsonw_field_number(w, "decode_tokens_per_s", r->decode_tokens_per_s);
    jsonw_field_number(w, "decode_bytes_per_s", r->decode_bytes_per_s);
    jsonw_field_number(w, "icl_term", r->icl_term);
    jsonw_field_number(w, "speed_term", r->speed_term);
    jsonw_field_string(w, "phase2_reason", r->phase2_reason);
    jsonw_field_number(w, "wall_seconds", r->wall_seconds);
    jsonw_field_number(w, "overrun_seconds", r->overrun_seconds);
    jsonw_field_number(w, "train_seconds", r->train_seconds);
    jsonw_field_number(w, "eval_seconds", r->eval_seconds);
    field_count(w, "exit_code", r->exit_code);
    field_count(w, "term_signal", r->term_signal);
    field_count(w, "steps", r->steps);
    field_count(w, "tokens", r->tokens);
    field_count(w, "params", r->params);
    jsonw_field_number(w, "tokens_per_second", r->tokens_per_second);
    jsonw_field_number(w, "mfu", r->mfu);
    field_count(w, "stdout_bytes", (long long)r->stdout_bytes);
    field_count(w, "stderr_bytes", (long long)r->stderr_bytes);
    jsonw_field_string(w, "started_at", r->started_at);
    jsonw_field_string(w, "ended_at", r->ended_at);
    jsonw_field_string(w, "run_dir", r->run_dir);
    jsonw_object_end(w);
}

/* The comparison with the leader, or null when there is none. */
static void leader_json(jsonw *w, const judge_attempt *a)
{
    if (a->leader_id <= 0) {
        jsonw_null(w);
        return;
    }
    jsonw_object_begin(w);
    field_count(w, "id", a->leader_id);
    jsonw_field_string(w, "submission", a->leader_submission);
    jsonw_field_number(w, "score_mean", a->leader_mean);
    jsonw_field_number(w, "t", a->t_stat);
    jsonw_field_number(w, "df", a->df);
    jsonw_field_number(w, "p_value", a->p_value);
    if (a->beats_leader < 0)
        jsonw_field_null(w, "beats_leader");
    else
        jsonw_field_bool(w, "beats_leader", a->beats_leader);
    jsonw_object_end(w);
}

int judge_attempt_to_json(const judge_attempt *a, strbuf *o, tempo_error *err)
{
    jsonw ww, *w = &ww;
    jsonw_init(w, o);
    jsonw_object_begin(w);
    field_count(w, "id", a->id);
    jsonw_field_string(w, "submission", a->submission);
    jsonw_field_string(w, "submission_path", a->submission_path);
    jsonw_field_string(w, "submission_hash", a->submission_hash);
    field_count(w, "submission_files", a->submission_files);
    field_count(w, "submission_bytes", a->submission_bytes);
    jsonw_field_string(w, "authors", a->authors);
    jsonw_field_string(w, "method", a->method);
    field_count(w, "phase", a->phase);
    jsonw_field_number(w, "budget_s", a->budget_s);
    field_count(w, "seeds", a->seeds);
    field_count(w, "first_seed", (long long)a->first_seed);
    field_count(w, "threads", a->threads);
    field_count(w, "ranks", a->ranks > 0 ? a->ranks : 1);
    field_count(w, "memory_bytes", (long long)a->memory_bytes);
    jsonw_field_string(w, "status", a->status);
    jsonw_field_string(w, "reason", a->reason);
    field_count(w, "n_scored", a->n_scored);
    jsonw_field_number(w, "score_mean", a->score_mean);
    jsonw_field_number(w, "score_std", a->score_std);
    jsonw_field_number(w, "bpb_mean", a->bpb_mean);
    jsonw_field_number(w, "bpb_std", a->bpb_std);
    jsonw_field_string(w, "formula", a->formula);
    jsonw_key(w, "leader");
    leader_json(w, a);
    jsonw_field_string(w, "test", a->test_note);
    jsonw_field_string(w, "tempo_version", a->tempo_version);
    jsonw_field_string(w, "git_commit", a->git_commit);
    if (a->hardware_json && a->hardware_json[0])
        jsonw_field_raw(w, "hardware", a->hardware_json);
    else
        jsonw_field_null(w, "hardware");
    jsonw_field_string(w, "data_id", a->data_id);
    jsonw_field_string(w, "val_path", a->val_path);
    jsonw_field_string(w, "val_sha256", a->val_sha256);
    jsonw_field_string(w, "started_at", a->started_at);
    jsonw_field_string(w, "ended_at", a->ended_at);
    jsonw_field_string(w, "work_dir", a->work_dir);
    jsonw_field_string(w, "sandbox", a->sandbox[0] ? a->sandbox : "none");
    jsonw_key(w, "runs");
    jsonw_array_begin(w);
    for (int i = 0; i < a->n_runs; i++)
        run_json(w, &a->runs[i]);
    jsonw_array_end(w);
    jsonw_object_end(w);
    return jsonw_finish(w, err) ? tempo_error_prefix(err, "attempt record") : 0;
}
