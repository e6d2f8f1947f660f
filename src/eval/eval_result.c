/* eval_result.c - eval's phase-1 result and phase-2 scorecard, written and
 * read (see eval_result.h); the key names are the string literals of this
 * file and nowhere else in C. */
#include "eval/eval_result.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "core/json_write.h"

int eval_bpb_json(const hybrid_bpb_result *r, strbuf *out, tempo_error *err)
{
    const bpb_result *f = &r->mixture;
    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    jsonw_field_number(&w, "bpb", f->bpb);
    jsonw_field_number(&w, "bits", f->bits);
    jsonw_field_number(&w, "loss", f->loss);
    jsonw_field_uint(&w, "bytes", f->bytes);
    jsonw_field_uint(&w, "tokens", f->tokens);
    jsonw_field_uint(&w, "documents", r->documents);
    jsonw_field_int(&w, "context", f->context);
    jsonw_field_int(&w, "stride", f->stride);
    jsonw_field_number(&w, "seconds", f->seconds);
    jsonw_field_number(&w, "model_seconds", r->model.seconds);
    jsonw_field_number(&w, "mixture_seconds", r->mixture_seconds);
    jsonw_field_int(&w, "memory_order", r->memory_order);
    jsonw_field_int(&w, "cache_order", r->cache_order);
    jsonw_field_int(&w, "match_length", r->match_length);
    jsonw_field_bool(&w, "adapt", r->adapt);
    jsonw_field_number(&w, "adapt_lr", r->adapt_lr);
    jsonw_field_string(&w, "mixer", r->mixer_fitted ? "fitted" : "equal");
    jsonw_field_number(&w, "bpb_linear", r->bpb_linear);
    jsonw_key(&w, "components");
    jsonw_object_begin(&w);
    for (int c = 0; c < MIX_N; c++) {
        jsonw_key(&w, mixer_component_names[c]);
        jsonw_object_begin(&w);
        jsonw_field_number(&w, "bpb", r->bpb_component[c]);
        jsonw_field_number(&w, "weight", r->mean_weight[c]);
        jsonw_object_end(&w);
    }
    jsonw_object_end(&w);
    jsonw_field_string(&w, "first_separator", "given");
    if (r->precision)
        jsonw_field_string(&w, "precision", r->precision);
    jsonw_field_string(&w, "source", r->source ? r->source : "");
    jsonw_object_end(&w);
    return jsonw_finish(&w, err) ? tempo_error_prefix(err, "eval result") : 0;
}

/* Parse line as a JSON object; on failure err says why, after prefix. */
static int parse_object(const char *line, const char *prefix, json_value **v, tempo_error *err)
{
    *v = NULL;
    if (!line || !*line)
        return tempo_fail(err, "%s: no JSON line", prefix);
    if (json_parse(line, strlen(line), v, err)) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return tempo_fail(err, "%s: not JSON: %s", prefix, msg);
    }
    if ((*v)->type != JSON_OBJECT) {
        json_free(*v);
        *v = NULL;
        return tempo_fail(err, "%s: not a JSON object", prefix);
    }
    return 0;
}

/* A count of the line: a whole number in 0..max, else 0 (absent or not one; never cast out of range). */
static uint64_t count_of(const json_value *v, const char *key, double max)
{
    double x = json_get_number(v, key, -1);
    return x >= 0 && x <= max && x == floor(x) ? (uint64_t)x : 0;
}

int eval_bpb_read(const char *line, bpb_result *f, tempo_error *err)
{
    json_value *v;
    if (parse_object(line, "eval output", &v, err))
        return -1;
    const json_value *b = json_get(v, "bpb");
    int rc = 0;
    if (!b || (b->type != JSON_NUMBER && b->type != JSON_NULL)) {
        rc = tempo_fail(err, "eval output: no \"bpb\" number");
    } else {
        memset(f, 0, sizeof *f);
        f->bpb = b->type == JSON_NUMBER ? b->number : NAN;
        f->bits = json_get_number(v, "bits", NAN);
        f->loss = json_get_number(v, "loss", NAN);
        f->bytes = count_of(v, "bytes", 9007199254740992.0);
        f->tokens = count_of(v, "tokens", 9007199254740992.0);
        f->context = (int)count_of(v, "context", INT_MAX);
        f->stride = (int)count_of(v, "stride", INT_MAX);
        f->seconds = json_get_number(v, "seconds", NAN);
    }
    json_free(v);
    return rc;
}

int eval_scorecard_json(const eval_scorecard *s, strbuf *out, tempo_error *err)
{
    char label[32] = "CORE";
    if (s->core_entries != s->core_of)
        snprintf(label, sizeof label, "CORE-%d", s->core_entries);
    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    jsonw_field_int(&w, "phase", 2);
    jsonw_field_number(&w, "bpb", s->bpb);
    jsonw_field_number(&w, "core", s->core);
    jsonw_field_string(&w, "core_label", label);
    jsonw_field_int(&w, "core_entries", s->core_entries);
    jsonw_field_int(&w, "core_of", s->core_of);
    jsonw_field_int(&w, "icl_limit", s->icl_limit);
    jsonw_field_number(&w, "decode_tokens_per_s", s->decode_tokens_per_s);
    jsonw_field_number(&w, "prefill_tokens_per_s", s->prefill_tokens_per_s);
    jsonw_field_number(&w, "time_to_first_token_s", s->time_to_first_token_s);
    jsonw_field_int(&w, "best_batch", s->best_batch);
    jsonw_field_number(&w, "best_decode_tokens_per_s", s->best_decode_tokens_per_s);
    jsonw_key(&w, "bpb_detail");
    s->bpb_detail ? jsonw_raw(&w, s->bpb_detail) : jsonw_null(&w);
    jsonw_key(&w, "icl");
    s->icl_json ? jsonw_raw(&w, s->icl_json) : jsonw_null(&w);
    jsonw_key(&w, "inference");
    s->inference_json ? jsonw_raw(&w, s->inference_json) : jsonw_null(&w);
    jsonw_field_string(&w, "model", s->model);
    jsonw_field_number(&w, "seconds", s->seconds);
    jsonw_object_end(&w);
    return jsonw_finish(&w, err) ? tempo_error_prefix(err, "scorecard") : 0;
}

int eval_scorecard_read(const char *line, double *core, double *decode_tokens_per_s, tempo_error *err)
{
    *core = *decode_tokens_per_s = NAN;
    json_value *v;
    if (parse_object(line, "scorecard", &v, err))
        return -1;
    *core = json_get_number(v, "core", NAN);
    *decode_tokens_per_s = json_get_number(v, "decode_tokens_per_s", NAN);
    json_free(v);
    return 0;
}
