/* run_result.c - result.json written and read (see run_result.h); the key
 * names are the string literals of this file and nowhere else in C. */
#include "train/run_result.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "core/json_write.h"
#include "memory/mixer.h"

int run_result_drop_impossible_mfu(train_result *r)
{
    if (!(r->mfu > 1))
        return 0;
    r->mfu = NAN;
    return 1;
}

static void phase_seconds(jsonw *w, const train_result *r)
{
    jsonw_key(w, "phase_seconds");
    jsonw_object_begin(w);
    jsonw_field_number(w, "steps", r->phase_seconds.steps);
    jsonw_field_number(w, "val_slices", r->phase_seconds.val_slices);
    jsonw_field_number(w, "checkpoints", r->phase_seconds.checkpoints);
    jsonw_field_number(w, "snapshots", r->phase_seconds.snapshots);
    jsonw_field_number(w, "memory_build", r->phase_seconds.memory_build);
    jsonw_field_number(w, "mixer_fit", r->phase_seconds.mixer_fit);
    jsonw_field_number(w, "other", r->phase_seconds.other);
    jsonw_object_end(w);
}

static void hybrid_parts(jsonw *w, const train_result *r)
{
    jsonw_field_int(w, "memory_order", r->memory_order);
    jsonw_field_int(w, "cache_order", r->cache_order);
    jsonw_field_int(w, "match_length", r->match_length);
    jsonw_field_number(w, "adapt_lr", r->adapt_lr);
    jsonw_field_number(w, "memory_seconds", r->memory_seconds);
    jsonw_field_number(w, "memory_save_seconds", r->memory_save_seconds);
    jsonw_field_uint(w, "memory_bytes", r->memory_bytes);
    jsonw_field_uint(w, "memory_entries", r->memory_entries);
    jsonw_field_uint(w, "memory_tokens", r->memory_tokens);
    jsonw_field_bool(w, "memory_budget_capped", r->memory_budget_capped);
    jsonw_field_string(w, "memory_store", r->memory_store);
    jsonw_field_bool(w, "memory_store_reused", r->memory_store_reused);
    jsonw_field_uint(w, "mixer_tokens", r->mixer_tokens);
    jsonw_field_number(w, "mixer_seconds", r->mixer_seconds);
    jsonw_field_number(w, "val_model_seconds", r->val.model.seconds);
    jsonw_field_number(w, "val_bpb_linear", r->val.bpb_linear);
    char key[64];
    for (int k = 0; k < MIX_N; k++) {
        snprintf(key, sizeof key, "val_bpb_%s", mixer_component_names[k]);
        jsonw_field_number(w, key, r->val.bpb_component[k]);
    }
    for (int k = 0; k < MIX_N; k++) {
        snprintf(key, sizeof key, "val_weight_%s", mixer_component_names[k]);
        jsonw_field_number(w, key, r->val.mean_weight[k]);
    }
}

int run_result_json(const train_result *r, const train_options *o, int threads_pinned, strbuf *out,
                    tempo_error *err)
{
    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    jsonw_field_number(&w, "val_bpb", r->val.mixture.bpb);
    jsonw_field_number(&w, "val_loss", r->val.mixture.loss);
    jsonw_field_uint(&w, "val_bytes", r->val.mixture.bytes);
    jsonw_field_uint(&w, "val_tokens", r->val.mixture.tokens);
    jsonw_field_number(&w, "val_seconds", r->val.mixture.seconds);
    jsonw_field_number(&w, "train_seconds", r->train_seconds);
    jsonw_field_number(&w, "budget_seconds", r->budget_s);
    jsonw_field_number(&w, "overrun_seconds", r->overrun_seconds);
    jsonw_field_number(&w, "startup_seconds", r->startup_seconds);
    jsonw_field_int(&w, "steps", r->steps);
    jsonw_field_uint(&w, "tokens", r->tokens);
    jsonw_field_uint(&w, "params", r->params);
    jsonw_field_number(&w, "tokens_per_second", r->tokens_per_second);
    jsonw_field_number(&w, "mfu", r->mfu);
    jsonw_field_number(&w, "model_gflops", r->model_gflops);
    jsonw_field_number(&w, "peak_gflops", r->peak_gflops);
    jsonw_field_number(&w, "flops_per_token", r->flops_per_token);
    jsonw_field_number(&w, "step_seconds_mean", r->step_seconds_mean);
    jsonw_field_number(&w, "final_train_loss", r->final_train_loss);
    hybrid_parts(&w, r);
    phase_seconds(&w, r);
    jsonw_field_int(&w, "world_size", r->world_size);
    jsonw_field_string(&w, "device", r->device[0] ? r->device : "cpu");
    jsonw_field_string(&w, "precision", r->precision ? r->precision : "fp32");
    jsonw_field_int(&w, "ranks_threads", o->threads);
    jsonw_field_number(&w, "comm_seconds", r->comm_seconds);
    jsonw_field_bool(&w, "shard_optimizer", r->shard_optimizer);
    jsonw_field_bool(&w, "overlap_comm", r->overlap_comm);
    jsonw_key(&w, "optimizer_state_bytes_per_rank");
    jsonw_array_begin(&w);
    for (int k = 0; k < r->n_rank_report; k++)
        jsonw_number(&w, r->rank_optimizer_bytes[k]);
    jsonw_array_end(&w);
    jsonw_key(&w, "peak_rss_bytes_per_rank");
    jsonw_array_begin(&w);
    for (int k = 0; k < r->n_rank_report; k++)
        jsonw_number(&w, r->rank_peak_rss_bytes[k]);
    jsonw_array_end(&w);
    jsonw_field_int(&w, "retries", r->retries);
    jsonw_field_bool(&w, "interrupted", r->interrupted);
    jsonw_field_int(&w, "threads", o->threads);
    jsonw_field_bool(&w, "threads_pinned", threads_pinned);
    jsonw_field_uint(&w, "seed", o->seed);
    jsonw_object_end(&w);
    return jsonw_finish(&w, err) ? tempo_error_prefix(err, RUN_RESULT_FILE) : 0;
}

/* A count from the file, or -1 (absent, fractional, out of range). */
static long long count_of(const json_value *v, const char *key)
{
    double x = json_get_number(v, key, -1);
    return x >= 0 && x <= 9007199254740992.0 && x == floor(x) ? (long long)x : -1;
}

int run_result_read(const char *text, size_t len, run_result_summary *s, tempo_error *err)
{
    s->val_bpb = s->train_seconds = s->tokens_per_second = s->mfu = NAN;
    s->val_bpb_transformer = s->budget_seconds = s->memory_seconds = NAN;
    s->steps = s->tokens = s->params = -1;
    json_value *v;
    if (json_parse(text, len, &v, err))
        return tempo_error_prefix(err, RUN_RESULT_FILE);
    if (v->type != JSON_OBJECT) {
        json_free(v);
        return tempo_fail(err, RUN_RESULT_FILE ": not a JSON object");
    }
    s->val_bpb = json_get_number(v, "val_bpb", NAN);
    s->train_seconds = json_get_number(v, "train_seconds", NAN);
    s->tokens_per_second = json_get_number(v, "tokens_per_second", NAN);
    s->mfu = json_get_number(v, "mfu", NAN);
    s->val_bpb_transformer = json_get_number(v, "val_bpb_transformer", NAN);
    s->budget_seconds = json_get_number(v, "budget_seconds", NAN);
    s->memory_seconds = json_get_number(v, "memory_seconds", NAN);
    s->steps = count_of(v, "steps");
    s->tokens = count_of(v, "tokens");
    s->params = count_of(v, "params");
    json_free(v);
    return 0;
}

void run_result_scorecard(const train_result *r, char *out, size_t n)
{
    char bpb[32] = "n/a", alone[48] = "", budget[32] = "", mfu[32] = "n/a";
    if (isfinite(r->val.mixture.bpb))
        snprintf(bpb, sizeof bpb, "%.4f", r->val.mixture.bpb);
    if (r->memory_order + r->cache_order + r->match_length > 0 && isfinite(r->val.bpb_component[0]))
        snprintf(alone, sizeof alone, " (transformer alone %.4f)", r->val.bpb_component[0]);
    if (r->budget_s > 0)
        snprintf(budget, sizeof budget, " of %.0f s budget", r->budget_s);
    if (isfinite(r->mfu) && r->mfu > 0)
        snprintf(mfu, sizeof mfu, "%.1f%%", 100 * r->mfu);
    snprintf(out, n, "scorecard: val_bpb %s%s | train %.1f s%s (overrun %.2f s) | %lld steps | %.0f tokens/s | MFU %s",
             bpb, alone, r->train_seconds, budget, r->overrun_seconds, (long long)r->steps, r->tokens_per_second, mfu);
}
