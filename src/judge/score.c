/* score.c - eval output parsing and the phase-2 combined score (see score.h). */
#include "judge/score.h"
#include "core/text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "eval/eval_result.h"
#include "train/run_result.h"

void judge_parse_run_result(const char *text, size_t len, judge_run_record *r)
{
    run_result_summary s;
    tempo_error e;
    if (run_result_read(text, len, &s, &e))
        return;
    r->train_seconds = s.train_seconds;
    if (s.steps >= 0)
        r->steps = s.steps;
    if (s.tokens >= 0)
        r->tokens = s.tokens;
    if (s.params >= 0)
        r->params = s.params;
    r->tokens_per_second = s.tokens_per_second;
    r->mfu = s.mfu;
}

void judge_phase2_init(judge_phase2 *p, const bpb_result *e)
{
    memset(p, 0, sizeof *p);
    p->bpb = e->bpb;
    p->core = p->decode_tokens_per_s = p->decode_bytes_per_s = NAN;
    p->icl_term = p->speed_term = p->combined = NAN;
    p->bytes_per_token = e->tokens > 0 && e->bytes > 0 ? (double)e->bytes / (double)e->tokens : NAN;
    text_fmt(p->reason, sizeof p->reason, "phase 2 not evaluated");
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
    tempo_error e;
    if (!line || !*line) {
        judge_phase2_unavailable(p, "phase 2: the scorecard command printed no JSON line");
        return -1;
    }
    if (eval_scorecard_read(line, &p->core, &p->decode_tokens_per_s, &e)) {
        judge_phase2_unavailable(p, "phase 2: the scorecard is not a JSON object");
        return -1;
    }
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
