/* score.c - eval output parsing and the phase-2 combined score (see score.h). */
#include "judge/score.h"
#include "judge/text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"

int judge_parse_eval(const char *line, judge_eval_result *r, tempo_error *err)
{
    json_value *v;
    if (!line || !*line)
        return tempo_fail(err, "eval output: no JSON line");
    if (json_parse(line, strlen(line), &v, err)) {
        char msg[sizeof err->msg];
        judge_fmt(msg, sizeof msg, "%s", err->msg);
        return tempo_fail(err, "eval output: not JSON: %s", msg);
    }
    int rc = 0;
    const json_value *b = json_get(v, "bpb");
    if (v->type != JSON_OBJECT || !b || (b->type != JSON_NUMBER && b->type != JSON_NULL)) {
        rc = tempo_fail(err, "eval output: no \"bpb\" number");
    } else {
        r->bpb = b->type == JSON_NUMBER ? b->number : NAN;
        r->bits = json_get_number(v, "bits", NAN);
        r->bytes = json_get_number(v, "bytes", NAN);
        r->tokens = json_get_number(v, "tokens", NAN);
        r->context = json_get_number(v, "context", NAN);
        r->stride = json_get_number(v, "stride", NAN);
        r->seconds = json_get_number(v, "seconds", NAN);
    }
    json_free(v);
    return rc;
}

/* A count from the submission's file, or -1 (absent, fractional, out of range). */
static long long count_of(const json_value *v, const char *key)
{
    double x = json_get_number(v, key, -1);
    return x >= 0 && x <= 9007199254740992.0 && x == floor(x) ? (long long)x : -1;
}

void judge_parse_run_result(const char *text, size_t len, judge_run_record *r)
{
    json_value *v;
    tempo_error e;
    /* the file is one JSON object, possibly followed by a newline */
    if (json_parse(text, len, &v, &e))
        return;
    r->train_seconds = json_get_number(v, "train_seconds", NAN);
    long long x;
    if ((x = count_of(v, "steps")) >= 0)
        r->steps = x;
    if ((x = count_of(v, "tokens")) >= 0)
        r->tokens = x;
    if ((x = count_of(v, "params")) >= 0)
        r->params = x;
    r->tokens_per_second = json_get_number(v, "tokens_per_second", NAN);
    r->mfu = json_get_number(v, "mfu", NAN);
    json_free(v);
}

void judge_phase2_init(judge_phase2 *p, const judge_eval_result *e)
{
    memset(p, 0, sizeof *p);
    p->bpb = e->bpb;
    p->core = p->decode_tokens_per_s = p->decode_bytes_per_s = NAN;
    p->icl_term = p->speed_term = p->combined = NAN;
    p->bytes_per_token = e->tokens > 0 && e->bytes > 0 ? e->bytes / e->tokens : NAN;
    judge_fmt(p->reason, sizeof p->reason, "phase 2 not evaluated");
}

void judge_phase2_unavailable(judge_phase2 *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
    p->available = 0;
    p->combined = NAN;
}

/* The first number under one of names, in obj or in an object one level down. */
static double find_number(const json_value *obj, const char *const *names, int n_names)
{
    for (int k = 0; k < n_names; k++) {
        const json_value *x = json_get(obj, names[k]);
        if (x && x->type == JSON_NUMBER)
            return x->number;
    }
    for (size_t i = 0; i < obj->n; i++) {
        const json_value *child = &obj->items[i];
        if (child->type != JSON_OBJECT)
            continue;
        for (int k = 0; k < n_names; k++) {
            const json_value *x = json_get(child, names[k]);
            if (x && x->type == JSON_NUMBER)
                return x->number;
        }
    }
    return NAN;
}

void judge_phase2_combine(judge_phase2 *p)
{
    p->decode_bytes_per_s = p->decode_tokens_per_s * p->bytes_per_token;
    if (!isfinite(p->bpb))
        return judge_phase2_unavailable(p, "phase 2: bpb is not finite");
    if (!isfinite(p->core))
        return judge_phase2_unavailable(p, "phase 2: the scorecard has no CORE score");
    if (!(p->decode_tokens_per_s > 0) || !isfinite(p->decode_tokens_per_s))
        return judge_phase2_unavailable(p, "phase 2: the scorecard has no decode speed");
    if (!(p->bytes_per_token > 0))
        return judge_phase2_unavailable(p, "phase 2: bytes per token unknown (eval gave no bytes/tokens)");
    p->icl_term = JUDGE_W_ICL * p->core;
    double s = JUDGE_W_SPEED * log2(p->decode_bytes_per_s / JUDGE_SPEED_REF_BYTES_PER_S);
    if (s > JUDGE_SPEED_TERM_CAP)
        s = JUDGE_SPEED_TERM_CAP;
    if (s < -JUDGE_SPEED_TERM_CAP)
        s = -JUDGE_SPEED_TERM_CAP;
    p->speed_term = s;
    p->combined = p->bpb - p->icl_term - p->speed_term;
    p->available = 1;
    p->reason[0] = '\0';
}

int judge_phase2_from_scorecard(judge_phase2 *p, const char *line)
{
    json_value *v;
    tempo_error e;
    if (!line || !*line) {
        judge_phase2_unavailable(p, "phase 2: the scorecard command printed no JSON line");
        return -1;
    }
    if (json_parse(line, strlen(line), &v, &e) || v->type != JSON_OBJECT) {
        if (v)
            json_free(v);
        judge_phase2_unavailable(p, "phase 2: the scorecard is not a JSON object");
        return -1;
    }
    static const char *const core_names[] = {"core", "core_score", "icl_core"};
    static const char *const speed_names[] = {"decode_tokens_per_s", "decode_batch1_tokens_per_s",
                                              "decode_tokens_per_second"};
    p->core = find_number(v, core_names, 3);
    p->decode_tokens_per_s = find_number(v, speed_names, 3);
    json_free(v);
    judge_phase2_combine(p);
    return p->available ? 0 : -1;
}

void judge_phase2_describe(const judge_phase2 *p, strbuf *out)
{
    if (!p->available) {
        strbuf_printf(out, "phase-2 score unavailable (%s); bpb %.6f", p->reason, p->bpb);
        return;
    }
    strbuf_printf(out,
                  "score %.6f = bpb %.6f - %.2g x CORE %.4f - speed %.4f (%.2g x log2(%.0f B/s / %.0f B/s), "
                  "capped at +-%.2g; decode %.1f tokens/s x %.3f bytes/token)",
                  p->combined, p->bpb, JUDGE_W_ICL, p->core, p->speed_term, JUDGE_W_SPEED, p->decode_bytes_per_s,
                  JUDGE_SPEED_REF_BYTES_PER_S, JUDGE_SPEED_TERM_CAP, p->decode_tokens_per_s, p->bytes_per_token);
}

/* The formula's text from score.h's constants themselves (one place for each). */
#define SCORE_STR_(x) #x
#define SCORE_STR(x) SCORE_STR_(x)

const char *judge_score_formula(int phase)
{
    if (phase == 2)
        return "bpb - " SCORE_STR(JUDGE_W_ICL) " * core - clamp(" SCORE_STR(JUDGE_W_SPEED) " * log2(decode_bytes_per_s / "
               SCORE_STR(JUDGE_SPEED_REF_BYTES_PER_S) "), -" SCORE_STR(JUDGE_SPEED_TERM_CAP) ", "
               SCORE_STR(JUDGE_SPEED_TERM_CAP) "); lower is better";
    return "bpb (val bits per byte on the official validation text); lower is better";
}
