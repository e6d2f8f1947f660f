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
    if (!mx->theta[0] || !mx->theta[1] || !mx->theta[2] || !mx->phi ||
        calib_stage_init(&mx->calib, mx->match ? MATCH_LEN_BINS : 0) ||
        calib_stage_init(&mx->calib_top, MIX_TOP_ROWS)) {
        mixer_free(mx);
        return tempo_fail(err, "mixer: out of memory");
    }
    return 0;
}

void mixer_free(mixer *mx)
{
    for (int s = 0; s < MIX_SETS; s++)
        free(mx->theta[s]);
    free(mx->phi);
    calib_stage_free(&mx->calib);
    calib_stage_free(&mx->calib_top);
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
    calib_stage_copy(&dst->calib, &src->calib);
    calib_stage_copy(&dst->calib_top, &src->calib_top);
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

static void put_names(jsonw *w, const char *key, const char *const *names, int n)
{
    jsonw_key(w, key);
    jsonw_array_begin(w);
    for (int i = 0; i < n; i++)
        jsonw_string(w, names[i]);
    jsonw_array_end(w);
}

/* The linear stage's keys of mixer.json: its layout, rates, beta and logits (linear_load reads them). */
static void linear_save(const mixer *mx, jsonw *w)
{
    jsonw_field_int(w, "memory_order", mx->memory_order);
    jsonw_field_int(w, "cache_order", mx->cache_order);
    jsonw_field_int(w, "match", mx->match);
    jsonw_key(w, "buckets");
    jsonw_array_begin(w);
    for (int k = 0; k < MIX_SETS; k++)
        jsonw_int(w, mx->n_buckets[k]);
    jsonw_array_end(w);
    jsonw_field_int(w, "final_buckets", mx->n_final);
    jsonw_field_number(w, "lr", mx->lr);
    jsonw_field_number(w, "lr_final", mx->lr_final);
    jsonw_field_number(w, "model_beta", mx->beta);
    jsonw_key(w, "theta");
    jsonw_array_begin(w);
    for (int k = 0; k < MIX_SETS; k++)
        jsonw_rows(w, mx->theta[k], mx->n_buckets[k], MIX_N);
    jsonw_array_end(w);
    jsonw_key(w, "final");
    jsonw_rows(w, mx->phi, mx->n_final, MIX_SETS);
}

/* mixer.json: the stages' keys in order; mixer_load below reads them back. */
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
    linear_save(mx, &w);
    calib_stage_save(&mx->calib, "calibration", &w);
    calib_stage_save(&mx->calib_top, "calibration_top", &w);
    jsonw_object_end(&w);
    int rc = jsonw_finish(&w, err) ? tempo_error_prefix(err, path) : 0;
    if (rc == 0) {
        strbuf_puts(&s, "\n");
        rc = file_write_atomic(path, s.data, s.len, err);
    }
    strbuf_free(&s);
    return rc;
}

/* The linear stage from mixer.json's object v (every field checked, errors
 * naming path): mx initialised for its layout, every stage at its start,
 * then its rates, beta and logits read. */
static int linear_load(mixer *mx, const json_value *v, const char *path, tempo_error *err)
{
    double mo = json_get_number(v, "memory_order", -1), co = json_get_number(v, "cache_order", -1);
    double ma = json_get_number(v, "match", -1);
    double lr = json_get_number(v, "lr", -1), lr_final = json_get_number(v, "lr_final", -1);
    double nf = json_get_number(v, "final_buckets", -1);
    const json_value *jb = json_get(v, "model_beta");   /* absent: written before it existed, 1 */
    double beta = !jb ? 1 : jb->type == JSON_NUMBER ? jb->number : NAN;
    const json_value *nb = json_get(v, "buckets"), *th = json_get(v, "theta");
    if (!(mo >= 0 && mo <= NGRAM_MAX_ORDER && co >= 0 && co <= NGRAM_MAX_ORDER) || mo != (int)mo || co != (int)co)
        return tempo_fail(err, "%s: memory_order and cache_order must be integers in 0..%d", path, NGRAM_MAX_ORDER);
    if (ma != 0 && ma != 1)
        return tempo_fail(err, "%s: match must be 0 or 1", path);
    if (!(lr_final >= 0 && lr_final <= 10))
        return tempo_fail(err, "%s: lr_final must be a number in 0..10", path);
    if (!(beta >= MIXER_BETA_MIN && beta <= MIXER_BETA_MAX))
        return tempo_fail(err, "%s: model_beta must be a number in %g..%g", path, MIXER_BETA_MIN, MIXER_BETA_MAX);
    if (mixer_init(mx, (int)mo, (int)co, (int)ma, lr, err))
        return tempo_error_prefix(err, path);
    mx->lr_final = lr_final;
    mx->beta = beta;
    if (!nb || nb->type != JSON_ARRAY || nb->n != MIX_SETS || nf != mx->n_final)
        return tempo_fail(err, "%s: expected buckets [%d,%d,%d] and final_buckets %d", path, mx->n_buckets[0],
                          mx->n_buckets[1], mx->n_buckets[2], mx->n_final);
    for (int k = 0; k < MIX_SETS; k++)
        if (nb->items[k].type != JSON_NUMBER || nb->items[k].number != mx->n_buckets[k])
            return tempo_fail(err, "%s: expected buckets [%d,%d,%d]", path, mx->n_buckets[0], mx->n_buckets[1],
                              mx->n_buckets[2]);
    if (!th || th->type != JSON_ARRAY || th->n != MIX_SETS)
        return tempo_fail(err, "%s: theta: expected %d weight sets", path, MIX_SETS);
    for (int k = 0; k < MIX_SETS; k++)
        if (json_get_rows(&th->items[k], mx->theta[k], mx->n_buckets[k], MIX_N, -30, 30, mixer_set_names[k], err))
            return tempo_error_prefix(err, path);
    if (json_get_rows(json_get(v, "final"), mx->phi, mx->n_final, MIX_SETS, -30, 30, "final", err))
        return tempo_error_prefix(err, path);
    return 0;
}

/* The stages after the linear one: the calibration of the predicted token
 * (only with the match model) and the top-token stage. */
static int calibration_load(mixer *mx, const json_value *v, const char *path, tempo_error *err)
{
    if (json_get(v, "calibration") && !mx->calib.rows)
        return tempo_fail(err, "%s: calibration is for the match model, which this mixer has not", path);
    if (calib_stage_load(&mx->calib, v, "calibration", path, err) ||
        calib_stage_load(&mx->calib_top, v, "calibration_top", path, err))
        return -1;
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
    const char *fmt = json_get_string(v, "format");
    double version = json_get_number(v, "version", 0);
    if (fmt && !strcmp(fmt, "tempo-mixer") && (version == 1 || version == 2)) {
        tempo_fail(err, "%s: a mixer of an older layout (version %g: one weight set)", path, version);
        rc = -2;
    } else if (!fmt || strcmp(fmt, "tempo-mixer") || version != 3) {
        rc = tempo_fail(err, "%s: not a tempo mixer file (format tempo-mixer, version 3)", path);
    } else {
        rc = linear_load(mx, v, path, err) || calibration_load(mx, v, path, err) ? -1 : 0;
    }
    json_free(v);
    if (rc)
        mixer_free(mx);
    return rc;
}
