/* quality.c - reading the fitted laws and evaluating them (see quality.h). */
#include "plan/quality.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "core/fileio.h"
#include "core/number.h"
#include "plan/kv_lines.h"

#define QUALITY_MAX_FILE (1 << 20)

static int real(const char *key, const char *v, double lo, double hi, double *out, const char *where,
                tempo_error *err)
{
    tempo_error e;
    if (number_parse_real(key, v, lo, hi, 0, out, &e))
        return tempo_usage(err, "%s: %s", where, e.msg);
    return 0;
}

static int integer(const char *key, const char *v, long long lo, long long hi, int *out, const char *where,
                   tempo_error *err)
{
    long long n;
    tempo_error e;
    if (number_parse_int(key, v, lo, hi, &n, &e))
        return tempo_usage(err, "%s: %s", where, e.msg);
    *out = (int)n;
    return 0;
}

/* Coefficient ranges: a law outside these is not a law of bpb. */
static int coef_parse(quality_coef *c, char *v, const char *where, tempo_error *err)
{
    double x[5];
    const char *names[5] = {"E", "A", "alpha", "B", "beta"};
    char *save = NULL, *tok = strtok_r(v, " \t", &save);
    for (int i = 0; i < 5; i++, tok = strtok_r(NULL, " \t", &save)) {
        if (!tok)
            return tempo_usage(err, "%s: boot: needs 5 numbers (E A alpha B beta)", where);
        if (real(names[i], tok, 0, i == 2 || i == 4 ? 5 : 1e12, &x[i], where, err))
            return -1;
    }
    if (tok)
        return tempo_usage(err, "%s: boot: more than 5 numbers", where);
    *c = (quality_coef){x[0], x[1], x[2], x[3], x[4]};
    return 0;
}

typedef struct {
    quality_law *q;
    uint64_t seen;   /* one bit per key: 11 required, then the optional ones */
} law_ctx;

/* One real-valued key of the law file: its field and its range. */
typedef struct {
    const char *key;
    double *dst, lo, hi;
} law_real;

/* Sets `key` when it is in keys[0..n) (seen bits first_bit + i); 1 when it is not there. */
static int law_real_key(law_ctx *c, const law_real *keys, size_t n, int first_bit, const char *key, char *v,
                        const char *where, tempo_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(key, keys[i].key)) {
            uint64_t bit = (uint64_t)1 << (first_bit + i);
            if (c->seen & bit)
                return tempo_usage(err, "%s: %s given twice", where, key);
            c->seen |= bit;
            return real(key, v, keys[i].lo, keys[i].hi, keys[i].dst, where, err);
        }
    return 1;
}

/* The law's fitted coefficients and its measured range (seen bits 0-9; n_runs is bit 10). */
static int law_required_key(law_ctx *c, const char *key, char *v, const char *where, tempo_error *err)
{
    quality_law *q = c->q;
    const law_real keys[] = {
        {"E", &q->fit.E, 0, 100},           {"A", &q->fit.A, 0, 1e12},       {"alpha", &q->fit.alpha, 0, 5},
        {"B", &q->fit.B, 0, 1e12},          {"beta", &q->fit.beta, 0, 5},    {"residual_sd", &q->residual_sd, 0, 10},
        {"n_min", &q->n_min, 1, 1e15},      {"n_max", &q->n_max, 1, 1e15},   {"d_min", &q->d_min, 1, 1e18},
        {"d_max", &q->d_max, 1, 1e18},
    };
    return law_real_key(c, keys, sizeof keys / sizeof keys[0], 0, key, v, where, err);
}

/* Optional keys (seen bits 11 and up): the batch term (none without batch_crit), the
 * learning-rate term (none without lr_b / lr_c) and the shape term (none without
 * depth_aspect_ref). */
static int law_optional_key(law_ctx *c, const char *key, char *v, const char *where, tempo_error *err)
{
    quality_law *q = c->q;
    const law_real optional[] = {
        {"batch_crit", &q->batch_crit, 1, 1e12},          {"batch_crit_bpb", &q->batch_crit_bpb, 0.01, 100},
        {"batch_crit_exponent", &q->batch_crit_exponent, 0, 20},
        {"lr_b", &q->lr_b, -10, 10},                      {"lr_c", &q->lr_c, -10, 10},
        {"lr_b_steps", &q->lr_b_steps, -10, 10},          {"lr_sd", &q->lr_sd, 0, 10},
        {"lr_steps_ref", &q->lr_steps_ref, 1, 1e12},      {"lr_steps_min", &q->lr_steps_min, 1, 1e12},
        {"lr_steps_max", &q->lr_steps_max, 1, 1e12},      {"lr_mult_min", &q->lr_mult_min, 1e-3, 1},
        {"lr_mult_max", &q->lr_mult_max, 1, 1e3},
        {"depth_b", &q->depth_b, -10, 10},                {"depth_c", &q->depth_c, -10, 10},
        {"depth_sd", &q->depth_sd, 0, 10},                {"depth_aspect_ref", &q->depth_aspect_ref, 1, 1e5},
        {"depth_aspect_min", &q->depth_aspect_min, 1, 1e5}, {"depth_aspect_max", &q->depth_aspect_max, 1, 1e5},
        {"depth_layers_min", &q->depth_layers_min, 1, 1e4},
        {"depth_b_steps", &q->depth_b_steps, -10, 10},    {"depth_steps_ref", &q->depth_steps_ref, 1, 1e12},
        {"depth_steps_min", &q->depth_steps_min, 1, 1e12}, {"depth_steps_max", &q->depth_steps_max, 1, 1e12},
        {"family_b", &q->family_b, -10, 10},              {"family_b_steps", &q->family_b_steps, -10, 10},
        {"family_sd", &q->family_sd, 0, 10},              {"family_steps_ref", &q->family_steps_ref, 1, 1e12},
        {"family_steps_min", &q->family_steps_min, 1, 1e12}, {"family_steps_max", &q->family_steps_max, 1, 1e12},
        {"family_b_width", &q->family_b_width, -10, 10},  {"family_width_ref", &q->family_width_ref, 1, 1e6},
        {"family_width_min", &q->family_width_min, 1, 1e6}, {"family_width_max", &q->family_width_max, 1, 1e6},
        {"context", &q->context, 1, 1 << 24},
    };
    _Static_assert(11 + sizeof optional / sizeof optional[0] <= 64, "one bit of law_ctx.seen per key");
    return law_real_key(c, optional, sizeof optional / sizeof optional[0], 11, key, v, where, err);
}

/* vocab.V.bytes_per_token, vocab.V.offset, vocab.V.runs: the entry of vocabulary V, added at its first key. */
static int law_vocab_key(quality_law *q, const char *key, char *v, const char *where, tempo_error *err)
{
    char *end;
    long vv = strtol(key + 6, &end, 10);
    if (end == key + 6 || *end != '.' || vv < 2 || vv > (1 << 24))
        return tempo_usage(err, "%s: '%s': expected vocab.V.bytes_per_token, .offset or .runs", where, key);
    quality_vocab *e = NULL;
    for (int i = 0; i < q->n_vocabs; i++)
        if (q->vocabs[i].vocab == (int)vv) e = &q->vocabs[i];
    if (!e) {
        if (q->n_vocabs >= QUALITY_MAX_VOCABS)
            return tempo_usage(err, "%s: more than %d vocabularies", where, QUALITY_MAX_VOCABS);
        e = &q->vocabs[q->n_vocabs++];
        e->vocab = (int)vv;
    }
    if (!strcmp(end, ".bytes_per_token"))
        return real(key, v, 0.1, 1000, &e->bytes_per_token, where, err);
    if (!strcmp(end, ".offset"))
        return real(key, v, -10, 10, &e->offset, where, err);
    if (!strcmp(end, ".runs"))
        return integer(key, v, 0, 1000000, &e->n_runs, where, err);
    return tempo_usage(err, "%s: '%s': expected vocab.V.bytes_per_token, .offset or .runs", where, key);
}

static int law_line(void *ctx, const char *key, char *v, const char *where, tempo_error *err)
{
    law_ctx *c = ctx;
    quality_law *q = c->q;
    if (!strcmp(key, "boot")) {
        if (q->n_boot >= QUALITY_MAX_BOOT)
            return tempo_usage(err, "%s: more than %d boot lines", where, QUALITY_MAX_BOOT);
        return coef_parse(&q->boot[q->n_boot++], v, where, err);
    }
    int rc = law_required_key(c, key, v, where, err);
    if (rc != 1)
        return rc;
    rc = law_optional_key(c, key, v, where, err);
    if (rc != 1)
        return rc;
    if (!strcmp(key, "vocab_ref"))
        return integer(key, v, 2, 1 << 24, &q->vocab_ref, where, err);
    if (!strncmp(key, "vocab.", 6))
        return law_vocab_key(q, key, v, where, err);
    if (!strcmp(key, "n_runs")) {
        c->seen |= (uint64_t)1 << 10;
        return integer(key, v, 1, 1000000, &q->n_runs, where, err);
    }
    return tempo_usage(err, "%s: unknown key '%s'", where, key);
}

int quality_law_parse(quality_law *q, const char *text, size_t len, const char *path, tempo_error *err)
{
    memset(q, 0, sizeof *q);
    law_ctx c = {q, 0};
    if (kv_lines_each(text, len, path, law_line, &c, err))
        return -1;
    const char *names[] = {"E", "A", "alpha", "B", "beta", "residual_sd", "n_min", "n_max", "d_min", "d_max",
                           "n_runs"};
    for (int i = 0; i < 11; i++)
        if (!(c.seen & ((uint64_t)1 << i)))
            return tempo_usage(err, "%s: missing %s", path, names[i]);
    if (q->n_min > q->n_max || q->d_min > q->d_max)
        return tempo_usage(err, "%s: n_min > n_max or d_min > d_max", path);
    if ((q->batch_crit_bpb > 0 || q->batch_crit_exponent > 0) && !(q->batch_crit > 0))
        return tempo_usage(err, "%s: batch_crit_bpb or batch_crit_exponent without batch_crit", path);
    if (q->n_vocabs && !q->vocab_ref)
        return tempo_usage(err, "%s: vocab.V lines without vocab_ref", path);
    for (int i = 0; i < q->n_vocabs; i++)
        if (!(q->vocabs[i].bytes_per_token > 0))
            return tempo_usage(err, "%s: vocab.%d.bytes_per_token missing", path, q->vocabs[i].vocab);
    if (q->vocab_ref && !quality_vocab_find(q, q->vocab_ref))
        return tempo_usage(err, "%s: vocab_ref %d has no vocab.%d.bytes_per_token", path, q->vocab_ref, q->vocab_ref);
    if (q->vocab_ref && quality_vocab_find(q, q->vocab_ref)->offset != 0)
        return tempo_usage(err, "%s: vocab.%d.offset must be 0 (the law's own vocabulary)", path, q->vocab_ref);
    if (!q->lr_mult_min) q->lr_mult_min = 1;
    if (!q->lr_mult_max) q->lr_mult_max = 1;
    if ((q->lr_b != 0 || q->lr_c != 0) && q->lr_mult_min == 1 && q->lr_mult_max == 1)
        return tempo_usage(err, "%s: lr_b/lr_c without the multipliers measured (lr_mult_min, lr_mult_max)", path);
    if (q->lr_b_steps != 0 && !(q->lr_steps_ref > 0))
        return tempo_usage(err, "%s: lr_b_steps without lr_steps_ref", path);
    if (q->lr_steps_min > q->lr_steps_max && q->lr_steps_max > 0)
        return tempo_usage(err, "%s: lr_steps_min > lr_steps_max", path);
    int depth_any = q->depth_b != 0 || q->depth_c != 0 || q->depth_aspect_ref > 0 || q->depth_aspect_min > 0 ||
                    q->depth_aspect_max > 0 || q->depth_layers_min > 0;
    if (depth_any && !(q->depth_aspect_ref > 0 && q->depth_aspect_min > 0 && q->depth_aspect_max > 0 &&
                       q->depth_layers_min > 0))
        return tempo_usage(err, "%s: the shape term needs depth_aspect_ref, depth_aspect_min, depth_aspect_max "
                           "and depth_layers_min", path);
    if (depth_any && !(q->depth_aspect_min <= q->depth_aspect_ref && q->depth_aspect_ref <= q->depth_aspect_max))
        return tempo_usage(err, "%s: depth_aspect_ref outside depth_aspect_min..depth_aspect_max", path);
    if (q->depth_b_steps != 0 && !(q->depth_steps_ref > 0))
        return tempo_usage(err, "%s: depth_b_steps without depth_steps_ref", path);
    if (q->depth_steps_min > q->depth_steps_max && q->depth_steps_max > 0)
        return tempo_usage(err, "%s: depth_steps_min > depth_steps_max", path);
    if (q->family_b_steps != 0 && !(q->family_steps_ref > 0))
        return tempo_usage(err, "%s: family_b_steps without family_steps_ref", path);
    if (q->family_steps_min > q->family_steps_max && q->family_steps_max > 0)
        return tempo_usage(err, "%s: family_steps_min > family_steps_max", path);
    if (q->family_b_width != 0 && !(q->family_width_ref > 0))
        return tempo_usage(err, "%s: family_b_width without family_width_ref", path);
    if (q->family_width_min > q->family_width_max && q->family_width_max > 0)
        return tempo_usage(err, "%s: family_width_min > family_width_max", path);
    return 0;
}

static int load_text(const char *path, char **text, size_t *len, tempo_error *err)
{
    tempo_error e;
    if (file_read_all(path, text, len, QUALITY_MAX_FILE, &e))
        return tempo_usage(err, "scaling law %s", e.msg);
    return 0;
}

int quality_law_load(quality_law *q, const char *path, tempo_error *err)
{
    char *text;
    size_t len;
    if (load_text(path, &text, &len, err))
        return -1;
    int rc = quality_law_parse(q, text, len, path, err);
    free(text);
    return rc;
}

static int hybrid_line(void *ctx, const char *key, char *v, const char *where, tempo_error *err)
{
    quality_hybrid *h = ctx;
    if (!strcmp(key, "pivot"))
        return real(key, v, 0, 100, &h->pivot, where, err);
    if (!strcmp(key, "slope"))
        return real(key, v, 0, 10, &h->slope, where, err);
    if (!strcmp(key, "curve"))
        return real(key, v, 0, 10, &h->curve, where, err);
    if (!strcmp(key, "residual_sd"))
        return real(key, v, 0, 10, &h->residual_sd, where, err);
    if (!strcmp(key, "calibration_gain"))
        return real(key, v, 0, 1, &h->calibration_gain, where, err);
    if (!strcmp(key, "save_s_per_gb"))
        return real(key, v, 0, 1e6, &h->save_s_per_gb, where, err);
    if (!strcmp(key, "save_drag"))
        return real(key, v, 0, 0.99, &h->save_drag, where, err);
    if (!strcmp(key, "vocab")) {
        double vv;
        if (real(key, v, 2, 1 << 24, &vv, where, err))
            return -1;
        if (vv != floor(vv))
            return tempo_usage(err, "%s: vocab: %s is not a whole number", where, v);
        h->vocab = (int)vv;
        return 0;
    }
    const char *prefixes[] = {"limit.", "build_s_per_mtok.", "bytes_per_token."};
    double *arrays[] = {h->limit, h->build_s_per_mtok, h->bytes_per_token};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(key, prefixes[i], n))
            continue;
        long long order;
        tempo_error e;
        if (number_parse_int(key, key + n, 1, QUALITY_MAX_ORDER, &order, &e))
            return tempo_usage(err, "%s: %s", where, e.msg);
        return real(key, v, 0, 1e9, &arrays[i][order], where, err);
    }
    return tempo_usage(err, "%s: unknown key '%s'", where, key);
}

int quality_hybrid_load(quality_hybrid *h, const char *path, tempo_error *err)
{
    memset(h, 0, sizeof *h);
    char *text;
    size_t len;
    if (load_text(path, &text, &len, err))
        return -1;
    int rc = quality_hybrid_parse(h, text, len, path, err);
    free(text);
    return rc;
}

int quality_hybrid_parse(quality_hybrid *h, const char *text, size_t len, const char *path, tempo_error *err)
{
    memset(h, 0, sizeof *h);
    if (kv_lines_each(text, len, path, hybrid_line, h, err))
        return -1;
    if (!(h->pivot > 0))
        return tempo_usage(err, "%s: missing pivot", path);
    return 0;
}

double quality_batch_crit(const quality_law *q, double bpb)
{
    if (!(q->batch_crit > 0))
        return 0;
    if (q->batch_crit_exponent > 0 && q->batch_crit_bpb > 0 && bpb > 0)
        return q->batch_crit * pow(q->batch_crit_bpb / bpb, q->batch_crit_exponent);
    return q->batch_crit;
}

double quality_tokens_effective(const quality_law *q, double n_params, double tokens, double batch_tokens)
{
    double bc = quality_batch_crit(q, quality_bpb(&q->fit, n_params, tokens));
    return bc > 0 ? tokens / (1 + batch_tokens / bc) : tokens;
}

double quality_bpb(const quality_coef *c, double n_params, double tokens)
{
    return c->E + c->A / pow(n_params, c->alpha) + c->B / pow(tokens, c->beta);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void quality_predict(const quality_law *q, double n_params, double tokens, double *bpb, double *lo, double *hi)
{
    *bpb = quality_bpb(&q->fit, n_params, tokens);
    double spread = 1.645 * q->residual_sd;
    *lo = *bpb - spread;
    *hi = *bpb + spread;
    if (q->n_boot < 2)
        return;
    double v[QUALITY_MAX_BOOT];
    for (int i = 0; i < q->n_boot; i++)
        v[i] = quality_bpb(&q->boot[i], n_params, tokens);
    qsort(v, (size_t)q->n_boot, sizeof v[0], cmp_double);
    double p5 = v[(int)floor(0.05 * (q->n_boot - 1))], p95 = v[(int)ceil(0.95 * (q->n_boot - 1))];
    *lo = fmin(*bpb, p5) - spread;
    *hi = fmax(*bpb, p95) + spread;
}

const quality_vocab *quality_vocab_find(const quality_law *q, int vocab)
{
    for (int i = 0; i < q->n_vocabs; i++)
        if (q->vocabs[i].vocab == vocab)
            return &q->vocabs[i];
    return NULL;
}

double quality_tokens_in_law(const quality_law *q, int vocab, double tokens)
{
    const quality_vocab *v = quality_vocab_find(q, vocab), *r = quality_vocab_find(q, q->vocab_ref);
    return v && r ? tokens * v->bytes_per_token / r->bytes_per_token : tokens;
}

double quality_lr_term(const quality_law *q, double lr_mult, double steps)
{
    double x = lr_mult > 0 ? log2(lr_mult) : 0;
    double b = q->lr_b + (q->lr_b_steps != 0 && steps > 0 ? q->lr_b_steps * log2(steps / q->lr_steps_ref) : 0);
    return b * x + q->lr_c * x * x;
}

double quality_shape_term(const quality_law *q, double aspect, double steps)
{
    if (!quality_has_depth(q) || !(aspect > 0))
        return 0;
    double a = log2(aspect / q->depth_aspect_ref), s = steps;
    if (q->depth_steps_min > 0 && s < q->depth_steps_min) s = q->depth_steps_min;
    if (q->depth_steps_max > 0 && s > q->depth_steps_max) s = q->depth_steps_max;
    double slope = q->depth_b + (q->depth_b_steps != 0 && s > 0 ? q->depth_b_steps * log2(s / q->depth_steps_ref) : 0);
    return slope * a + q->depth_c * a * a;
}

double quality_family_term(const quality_law *q, double steps, double d_model)
{
    double s = steps, w = d_model;
    if (q->family_steps_min > 0 && s < q->family_steps_min) s = q->family_steps_min;
    if (q->family_steps_max > 0 && s > q->family_steps_max) s = q->family_steps_max;
    if (q->family_width_min > 0 && w < q->family_width_min) w = q->family_width_min;
    if (q->family_width_max > 0 && w > q->family_width_max) w = q->family_width_max;
    double term = q->family_b + (q->family_b_steps != 0 && s > 0 ? q->family_b_steps * log2(s / q->family_steps_ref) : 0);
    if (q->family_b_width != 0 && d_model > 0)
        term += q->family_b_width * log2(w / q->family_width_ref);
    return term;
}

double quality_correction(const quality_law *q, int vocab, double lr_mult, double steps, double aspect, double d_model)
{
    const quality_vocab *v = quality_vocab_find(q, vocab);
    return (v ? v->offset : 0) + quality_lr_term(q, lr_mult, steps) + quality_shape_term(q, aspect, steps) +
           quality_family_term(q, steps, d_model);
}

int quality_has_depth(const quality_law *q)
{
    return q->depth_aspect_ref > 0;
}

int quality_depth_trusted(const quality_law *q, double aspect, int n_layers)
{
    if (!quality_has_depth(q))
        return 1;
    const double slack = 1e-9;   /* aspects are ratios of integers: 128 / 3 measured is 128 / 3 here */
    return aspect >= q->depth_aspect_min * (1 - slack) && aspect <= q->depth_aspect_max * (1 + slack) &&
           n_layers >= q->depth_layers_min;
}

int quality_lr_trusted(const quality_law *q, double steps)
{
    return !(q->lr_steps_min > 0 && steps < q->lr_steps_min) && !(q->lr_steps_max > 0 && steps > q->lr_steps_max);
}

double quality_hybrid_bpb(const quality_hybrid *h, int order, double t)
{
    if (order <= 0 || order > QUALITY_MAX_ORDER || !(h->limit[order] > 0))
        return t;
    double x = fmax(0, h->pivot - t);
    double mixed = h->limit[order] - h->slope * x - h->curve * x * x - h->calibration_gain;
    return fmin(t, mixed);
}
