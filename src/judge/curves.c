/* curves.c - learning curves from metrics.jsonl (see curves.h). */
#include "judge/curves.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/json_write.h"
#include "train/metrics_log.h"

#define MAX_LINE (64u << 10)

int judge_series_push(judge_series *s, double t, double v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        double *nt = realloc(s->t, cap * sizeof *nt);
        if (!nt)
            return -1;
        s->t = nt;
        double *nv = realloc(s->v, cap * sizeof *nv);
        if (!nv)
            return -1;
        s->v = nv;
        s->cap = cap;
    }
    s->t[s->n] = t;
    s->v[s->n] = v;
    s->n++;
    return 0;
}

void judge_series_thin(judge_series *s, size_t max_points)
{
    if (max_points < 2 || s->n <= max_points)
        return;
    size_t buckets = max_points - 1, body = s->n - 1, out = 0;
    for (size_t b = 0; b < buckets; b++) {
        size_t lo = b * body / buckets, hi = (b + 1) * body / buckets;
        if (hi <= lo)
            continue;
        double st = 0, sv = 0;
        for (size_t i = lo; i < hi; i++) {
            st += s->t[i];
            sv += s->v[i];
        }
        s->t[out] = st / (double)(hi - lo);
        s->v[out] = sv / (double)(hi - lo);
        out++;
    }
    s->t[out] = s->t[s->n - 1];
    s->v[out] = s->v[s->n - 1];
    s->n = out + 1;
}

static void take_line(judge_curves *c, const char *line, size_t len)
{
    metrics_record r;
    tempo_error e;
    if (len == 0)
        return;
    int used = 0;
    if (metrics_record_read(line, len, &r, &e) == 0 && isfinite(r.elapsed_s) && isfinite(r.value)) {
        if (r.kind == METRICS_STEP)
            used = judge_series_push(&c->train_loss, r.elapsed_s, r.value) == 0;
        else if (r.kind == METRICS_VAL_SLICE || r.kind == METRICS_VAL_FULL)
            used = judge_series_push(&c->val_bpb, r.elapsed_s, r.value) == 0;
    }
    if (!used)
        c->lines_skipped++;
}

int judge_curves_read(const char *path, judge_curves *c, tempo_error *err)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? 0 : tempo_fail(err, "%s: cannot open: %s", path, strerror(errno));
    char *line = malloc(MAX_LINE + 1);
    if (!line) {
        fclose(f);
        return tempo_fail(err, "%s: out of memory", path);
    }
    size_t len = 0, total = 0;
    int too_long = 0, ch;
    while (total < JUDGE_METRICS_MAX_BYTES && (ch = getc(f)) != EOF) {
        total++;
        if (ch == '\n') {
            if (too_long)
                c->lines_skipped++;
            else
                take_line(c, line, len);
            len = 0;
            too_long = 0;
        } else if (len < MAX_LINE) {
            line[len++] = (char)ch;
        } else {
            too_long = 1;
        }
    }
    if (len && !too_long && total < JUDGE_METRICS_MAX_BYTES)
        take_line(c, line, len); /* a last line without newline */
    free(line);
    fclose(f);
    judge_series_thin(&c->train_loss, JUDGE_CURVE_MAX_POINTS);
    judge_series_thin(&c->val_bpb, JUDGE_CURVE_MAX_POINTS);
    return 0;
}

static void series_json(jsonw *w, const char *key, const judge_series *s)
{
    jsonw_key(w, key);
    jsonw_array_begin(w);
    for (size_t i = 0; i < s->n; i++) {
        jsonw_array_begin(w);
        jsonw_number(w, s->t[i]);
        jsonw_number(w, s->v[i]);
        jsonw_array_end(w);
    }
    jsonw_array_end(w);
}

void judge_curves_to_json(const judge_curves *c, strbuf *out)
{
    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    series_json(&w, "train_loss", &c->train_loss);
    series_json(&w, "val_bpb", &c->val_bpb);
    jsonw_object_end(&w);
}

static int series_from(const json_value *a, judge_series *s, const char *name, tempo_error *err)
{
    if (!a)
        return 0;
    if (a->type != JSON_ARRAY)
        return tempo_fail(err, "curves: \"%s\" is not a list", name);
    for (size_t i = 0; i < a->n; i++) {
        const json_value *p = &a->items[i];
        if (p->type != JSON_ARRAY || p->n != 2 || p->items[0].type != JSON_NUMBER || p->items[1].type != JSON_NUMBER)
            continue;
        if (judge_series_push(s, p->items[0].number, p->items[1].number))
            return tempo_fail(err, "curves: out of memory");
    }
    return 0;
}

int judge_curves_from_json(const char *text, judge_curves *c, tempo_error *err)
{
    memset(c, 0, sizeof *c);
    json_value *v;
    if (!text)
        return 0;
    if (json_parse(text, strlen(text), &v, err))
        return -1;
    int rc = series_from(json_get(v, "train_loss"), &c->train_loss, "train_loss", err);
    if (rc == 0)
        rc = series_from(json_get(v, "val_bpb"), &c->val_bpb, "val_bpb", err);
    json_free(v);
    if (rc)
        judge_curves_free(c);
    return rc;
}

void judge_curves_free(judge_curves *c)
{
    free(c->train_loss.t);
    free(c->train_loss.v);
    free(c->val_bpb.t);
    free(c->val_bpb.v);
    memset(c, 0, sizeof *c);
}
