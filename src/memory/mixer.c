/* mixer.c - mixing weights: buckets, softmax, the online update and the
 * mixer.json file (see mixer.h). */
#include "memory/mixer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/json_write.h"
#include "core/strbuf.h"
#include "memory/match_model.h"

const char *const mixer_component_names[MIX_N] = {"transformer", "memory", "cache", "match"};
const char *const mixer_set_names[MIX_SETS] = {"matched", "cache", "confidence"};

/* A matched context's bin: seen once or twice; 3-15 times; more; or at
 * least 3 times and always followed by the same token (deterministic). */
#define CONTEXT_BINS 4
static int context_bin(const ngram_match *m)
{
    if (m->total <= 2) return 0;
    if (m->distinct == 1) return 3;
    return m->total <= 15 ? 1 : 2;
}

static int part_slots(int order) { return (order + 1) * CONTEXT_BINS; }

static int match_slots(const mixer *mx) { return mx->match ? MATCH_LEN_BINS : 1; }

int mixer_init(mixer *mx, int memory_order, int cache_order, int match, double lr, tempo_error *err)
{
    memset(mx, 0, sizeof *mx);
    if (memory_order < 0 || memory_order > NGRAM_MAX_ORDER || cache_order < 0 || cache_order > NGRAM_MAX_ORDER)
        return tempo_usage(err, "mixer: orders %d and %d outside 0..%d", memory_order, cache_order, NGRAM_MAX_ORDER);
    if (!(lr >= 0 && lr <= 10))
        return tempo_usage(err, "mixer: learning rate %g outside 0..10", lr);
    mx->memory_order = memory_order;
    mx->cache_order = cache_order;
    mx->match = match ? 1 : 0;
    mx->n_buckets[0] = part_slots(memory_order) * part_slots(cache_order) * match_slots(mx);
    mx->n_buckets[1] = part_slots(cache_order) * match_slots(mx);
    mx->n_buckets[2] = MIX_CONFIDENCE_BINS * (memory_order + 1) * (cache_order + 1);
    mx->n_final = MIX_CONFIDENCE_BINS * (memory_order + 1);
    mx->lr = lr;
    mx->lr_final = MIXER_LR_FINAL;
    mx->beta = 1;
    for (int s = 0; s < MIX_SETS; s++)
        mx->theta[s] = calloc((size_t)mx->n_buckets[s] * MIX_N, sizeof(double));
    mx->phi = calloc((size_t)mx->n_final * MIX_SETS, sizeof(double));
    mx->n_calib = mx->match ? MATCH_LEN_BINS : 0;
    mx->calib = malloc(sizeof(double) * CALIB_KNOTS * (size_t)(mx->n_calib ? mx->n_calib : 1));
    mx->calib_top = malloc(sizeof(double) * CALIB_KNOTS * MIX_TOP_ROWS);
    if (!mx->theta[0] || !mx->theta[1] || !mx->theta[2] || !mx->phi || !mx->calib || !mx->calib_top) {
        mixer_free(mx);
        return tempo_fail(err, "mixer: out of memory");
    }
    for (int r = 0; r < mx->n_calib; r++)
        calibration_identity(mx->calib + (size_t)r * CALIB_KNOTS);
    for (int r = 0; r < MIX_TOP_ROWS; r++)
        calibration_identity(mx->calib_top + (size_t)r * CALIB_KNOTS);
    return 0;
}

void mixer_free(mixer *mx)
{
    for (int s = 0; s < MIX_SETS; s++)
        free(mx->theta[s]);
    free(mx->phi);
    free(mx->calib);
    free(mx->calib_top);
    memset(mx, 0, sizeof *mx);
}

int mixer_copy(mixer *dst, const mixer *src, tempo_error *err)
{
    if (mixer_init(dst, src->memory_order, src->cache_order, src->match, src->lr, err))
        return -1;
    dst->lr_final = src->lr_final;
    dst->beta = src->beta;
    for (int s = 0; s < MIX_SETS; s++)
        memcpy(dst->theta[s], src->theta[s], sizeof(double) * (size_t)src->n_buckets[s] * MIX_N);
    memcpy(dst->phi, src->phi, sizeof(double) * (size_t)src->n_final * MIX_SETS);
    memcpy(dst->calib, src->calib, sizeof(double) * CALIB_KNOTS * (size_t)src->n_calib);
    memcpy(dst->calib_top, src->calib_top, sizeof(double) * CALIB_KNOTS * MIX_TOP_ROWS);
    return 0;
}

/* A memory's slot: matched order x context bin (0 when absent). */
static int part_index(const ngram_match *m, int order)
{
    if (!m || order == 0)
        return 0;
    int matched = m->matched > order ? order : m->matched;
    return matched * CONTEXT_BINS + (matched ? context_bin(m) : 0);
}

static int matched_order(const ngram_match *m, int order)
{
    if (!m || order == 0)
        return 0;
    return m->matched > order ? order : m->matched;
}

static int confidence_bin(double c)
{
    if (!(c > 0))   /* also NaN */
        return 0;
    int b = (int)(c * MIX_CONFIDENCE_BINS);
    return b >= MIX_CONFIDENCE_BINS ? MIX_CONFIDENCE_BINS - 1 : b;
}

mixer_context mixer_select(const mixer *mx, const ngram_match *memory, const ngram_match *cache, int match_bin,
                           double confidence)
{
    if (!mx->match || match_bin < 0) match_bin = 0;
    if (match_bin >= MATCH_LEN_BINS) match_bin = MATCH_LEN_BINS - 1;
    int pm = part_index(memory, mx->memory_order), pc = part_index(cache, mx->cache_order);
    int om = matched_order(memory, mx->memory_order), oc = matched_order(cache, mx->cache_order);
    int cb = confidence_bin(confidence), ms = match_slots(mx);
    mixer_context c;
    c.bucket[0] = (pm * part_slots(mx->cache_order) + pc) * ms + match_bin;
    c.bucket[1] = pc * ms + match_bin;
    c.bucket[2] = (cb * (mx->memory_order + 1) + om) * (mx->cache_order + 1) + oc;
    c.final = cb * (mx->memory_order + 1) + om;
    return c;
}

/* w = softmax of t over the entries present (present == NULL: all n). */
static void softmax(const double *t, int n, const int *present, double *w)
{
    double top = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++)
        if ((!present || present[i]) && t[i] > top) top = t[i];
    for (int i = 0; i < n; i++) {
        w[i] = !present || present[i] ? exp(t[i] - top) : 0;
        sum += w[i];
    }
    for (int i = 0; i < n; i++)
        w[i] /= sum;
}

void mixer_weights(const mixer *mx, const mixer_context *c, const int present[MIX_N], mixer_blend *b)
{
    for (int s = 0; s < MIX_SETS; s++)
        softmax(mx->theta[s] + (size_t)c->bucket[s] * MIX_N, MIX_N, present, b->set[s]);
    softmax(mx->phi + (size_t)c->final * MIX_SETS, MIX_SETS, NULL, b->v);
    for (int i = 0; i < MIX_N; i++) {
        b->w[i] = 0;
        for (int s = 0; s < MIX_SETS; s++)
            b->w[i] += b->v[s] * b->set[s][i];
    }
}

/* Keep logits bounded so that no weight underflows to exactly 0. */
static double clamp_logit(double t) { return t > 30 ? 30 : t < -30 ? -30 : t; }

void mixer_learn(mixer *mx, const mixer_context *c, const int present[MIX_N], const mixer_blend *b,
                 const double p[MIX_N])
{
    double q[MIX_SETS], pm = 0;
    for (int s = 0; s < MIX_SETS; s++) {
        q[s] = 0;
        for (int i = 0; i < MIX_N; i++)
            q[s] += b->set[s][i] * p[i];
        pm += b->v[s] * q[s];
    }
    if (!(pm > 0))
        return;
    for (int s = 0; s < MIX_SETS; s++) {
        if (!(q[s] > 0))
            continue;
        double *t = mx->theta[s] + (size_t)c->bucket[s] * MIX_N;
        for (int i = 0; i < MIX_N; i++)
            if (present[i])
                t[i] = clamp_logit(t[i] - mx->lr * b->set[s][i] * (1 - p[i] / q[s]));
    }
    double *f = mx->phi + (size_t)c->final * MIX_SETS;
    for (int s = 0; s < MIX_SETS; s++)
        f[s] = clamp_logit(f[s] - mx->lr_final * b->v[s] * (1 - q[s] / pm));
}

/* rows x width logits as a JSON array of arrays (shortest text that reads
 * back as the same double) */
static void put_rows(jsonw *w, const double *x, int rows, int width)
{
    jsonw_array_begin(w);
    for (int b = 0; b < rows; b++) {
        jsonw_array_begin(w);
        for (int i = 0; i < width; i++)
            jsonw_number(w, x[(size_t)b * width + i]);
        jsonw_array_end(w);
    }
    jsonw_array_end(w);
}

static void put_names(jsonw *w, const char *key, const char *const *names, int n)
{
    jsonw_key(w, key);
    jsonw_array_begin(w);
    for (int i = 0; i < n; i++)
        jsonw_string(w, names[i]);
    jsonw_array_end(w);
}

/* mixer.json; mixer_load below reads the same keys back. */
int mixer_save(const mixer *mx, const char *path, tempo_error *err)
{
    strbuf s = {0};
    jsonw w;
    jsonw_init(&w, &s);
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "format", "tempo-mixer");
    jsonw_field_int(&w, "version", 3);
    put_names(&w, "components", mixer_component_names, MIX_N);
    put_names(&w, "sets", mixer_set_names, MIX_SETS);
    jsonw_field_int(&w, "memory_order", mx->memory_order);
    jsonw_field_int(&w, "cache_order", mx->cache_order);
    jsonw_field_int(&w, "match", mx->match);
    jsonw_key(&w, "buckets");
    jsonw_array_begin(&w);
    for (int k = 0; k < MIX_SETS; k++)
        jsonw_int(&w, mx->n_buckets[k]);
    jsonw_array_end(&w);
    jsonw_field_int(&w, "final_buckets", mx->n_final);
    jsonw_field_number(&w, "lr", mx->lr);
    jsonw_field_number(&w, "lr_final", mx->lr_final);
    jsonw_field_number(&w, "model_beta", mx->beta);
    jsonw_key(&w, "theta");
    jsonw_array_begin(&w);
    for (int k = 0; k < MIX_SETS; k++)
        put_rows(&w, mx->theta[k], mx->n_buckets[k], MIX_N);
    jsonw_array_end(&w);
    jsonw_key(&w, "final");
    put_rows(&w, mx->phi, mx->n_final, MIX_SETS);
    if (mx->n_calib) {
        jsonw_key(&w, "calibration");
        put_rows(&w, mx->calib, mx->n_calib, CALIB_KNOTS);
    }
    jsonw_key(&w, "calibration_top");
    put_rows(&w, mx->calib_top, MIX_TOP_ROWS, CALIB_KNOTS);
    jsonw_object_end(&w);
    int rc = jsonw_finish(&w, err) ? tempo_error_prefix(err, path) : 0;
    if (rc == 0) {
        strbuf_puts(&s, "\n");
        rc = file_write_atomic(path, s.data, s.len, err);
    }
    strbuf_free(&s);
    return rc;
}

/* Read rows x width numbers in lo..hi from a JSON array of arrays into x
 * (what: the key, and what the rows hold). */
static int get_rows(const json_value *a, double *x, int rows, int width, double lo, double hi, const char *path,
                    const char *what, tempo_error *err)
{
    if (!a || a->type != JSON_ARRAY || a->n != (size_t)rows)
        return tempo_fail(err, "%s: %s: expected %d rows of %d numbers", path, what, rows, width);
    for (size_t b = 0; b < a->n; b++) {
        const json_value *row = &a->items[b];
        if (row->type != JSON_ARRAY || row->n != (size_t)width)
            return tempo_fail(err, "%s: %s[%zu]: expected %d numbers", path, what, b, width);
        for (int i = 0; i < width; i++) {
            const json_value *v = &row->items[i];
            if (v->type != JSON_NUMBER || !(v->number >= lo && v->number <= hi))
                return tempo_fail(err, "%s: %s[%zu][%d]: expected a number in %g..%g", path, what, b, i, lo, hi);
            x[b * (size_t)width + (size_t)i] = v->number;
        }
    }
    return 0;
}

int mixer_load(mixer *mx, const char *path, tempo_error *err)
{
    memset(mx, 0, sizeof *mx);
    char *text;
    size_t len;
    if (file_read_all(path, &text, &len, 64u << 20, err))
        return -1;
    json_value *v;
    tempo_error je;
    int rc = json_parse(text, len, &v, &je);
    free(text);
    if (rc)
        return tempo_fail(err, "%s: %s", path, je.msg);
    rc = -1;
    const char *fmt = json_get_string(v, "format");
    double mo = json_get_number(v, "memory_order", -1), co = json_get_number(v, "cache_order", -1);
    double version = json_get_number(v, "version", 0);
    double ma = json_get_number(v, "match", -1);
    double lr = json_get_number(v, "lr", -1), lr_final = json_get_number(v, "lr_final", -1);
    double nf = json_get_number(v, "final_buckets", -1);
    const json_value *jb = json_get(v, "model_beta");   /* absent: written before it existed, 1 */
    double beta = !jb ? 1 : jb->type == JSON_NUMBER ? jb->number : NAN;
    const json_value *nb = json_get(v, "buckets"), *th = json_get(v, "theta");
    if (fmt && !strcmp(fmt, "tempo-mixer") && (version == 1 || version == 2)) {
        tempo_fail(err, "%s: a mixer of an older layout (version %g: one weight set)", path, version);
        rc = -2;
        goto out;
    }
    if (!fmt || strcmp(fmt, "tempo-mixer") || version != 3) {
        tempo_fail(err, "%s: not a tempo mixer file (format tempo-mixer, version 3)", path);
        goto out;
    }
    if (!(mo >= 0 && mo <= NGRAM_MAX_ORDER && co >= 0 && co <= NGRAM_MAX_ORDER) || mo != (int)mo || co != (int)co) {
        tempo_fail(err, "%s: memory_order and cache_order must be integers in 0..%d", path, NGRAM_MAX_ORDER);
        goto out;
    }
    if (ma != 0 && ma != 1) {
        tempo_fail(err, "%s: match must be 0 or 1", path);
        goto out;
    }
    if (!(lr_final >= 0 && lr_final <= 10)) {
        tempo_fail(err, "%s: lr_final must be a number in 0..10", path);
        goto out;
    }
    if (!(beta >= MIXER_BETA_MIN && beta <= MIXER_BETA_MAX)) {
        tempo_fail(err, "%s: model_beta must be a number in %g..%g", path, MIXER_BETA_MIN, MIXER_BETA_MAX);
        goto out;
    }
    if (mixer_init(mx, (int)mo, (int)co, (int)ma, lr, err)) {
        tempo_error_prefix(err, path);
        goto out;
    }
    mx->lr_final = lr_final;
    mx->beta = beta;
    if (!nb || nb->type != JSON_ARRAY || nb->n != MIX_SETS || nf != mx->n_final) {
        tempo_fail(err, "%s: expected buckets [%d,%d,%d] and final_buckets %d", path, mx->n_buckets[0],
                   mx->n_buckets[1], mx->n_buckets[2], mx->n_final);
        goto out;
    }
    for (int k = 0; k < MIX_SETS; k++)
        if (nb->items[k].type != JSON_NUMBER || nb->items[k].number != mx->n_buckets[k]) {
            tempo_fail(err, "%s: expected buckets [%d,%d,%d]", path, mx->n_buckets[0], mx->n_buckets[1],
                       mx->n_buckets[2]);
            goto out;
        }
    if (!th || th->type != JSON_ARRAY || th->n != MIX_SETS) {
        tempo_fail(err, "%s: theta: expected %d weight sets", path, MIX_SETS);
        goto out;
    }
    for (int k = 0; k < MIX_SETS; k++)
        if (get_rows(&th->items[k], mx->theta[k], mx->n_buckets[k], MIX_N, -30, 30, path, mixer_set_names[k], err))
            goto out;
    if (get_rows(json_get(v, "final"), mx->phi, mx->n_final, MIX_SETS, -30, 30, path, "final", err))
        goto out;
    const json_value *cal = json_get(v, "calibration");
    if (cal && !mx->n_calib) {
        tempo_fail(err, "%s: calibration is for the match model, which this mixer has not", path);
        goto out;
    }
    if (cal && get_rows(cal, mx->calib, mx->n_calib, CALIB_KNOTS, 0, 1, path, "calibration", err))
        goto out;
    const json_value *ctop = json_get(v, "calibration_top");
    if (ctop && get_rows(ctop, mx->calib_top, MIX_TOP_ROWS, CALIB_KNOTS, 0, 1, path, "calibration_top", err))
        goto out;
    rc = 0;
out:
    json_free(v);
    if (rc)
        mixer_free(mx);
    return rc;
}
