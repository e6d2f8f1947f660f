/* mixer.c - mixing weights: buckets, softmax, the online update and the
 * mixer.json file (see mixer.h). */
#include "memory/mixer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "memory/match_model.h"

const char *const mixer_component_names[MIX_N] = {"transformer", "memory", "cache", "match"};

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
    mx->n_buckets = part_slots(memory_order) * part_slots(cache_order) * (mx->match ? MATCH_LEN_BINS : 1);
    mx->lr = lr;
    mx->theta = calloc((size_t)mx->n_buckets * MIX_N, sizeof(double));
    if (!mx->theta)
        return tempo_fail(err, "mixer: out of memory");
    return 0;
}

void mixer_free(mixer *mx)
{
    free(mx->theta);
    memset(mx, 0, sizeof *mx);
}

int mixer_copy(mixer *dst, const mixer *src, tempo_error *err)
{
    if (mixer_init(dst, src->memory_order, src->cache_order, src->match, src->lr, err))
        return -1;
    memcpy(dst->theta, src->theta, sizeof(double) * (size_t)src->n_buckets * MIX_N);
    return 0;
}

static int part_index(const ngram_match *m, int order)
{
    if (!m || order == 0)
        return 0;
    int matched = m->matched > order ? order : m->matched;
    return matched * CONTEXT_BINS + (matched ? context_bin(m) : 0);
}

int mixer_bucket(const mixer *mx, const ngram_match *memory, const ngram_match *cache, int match_bin)
{
    int b = part_index(memory, mx->memory_order) * part_slots(mx->cache_order) + part_index(cache, mx->cache_order);
    if (!mx->match)
        return b;
    if (match_bin < 0) match_bin = 0;
    if (match_bin >= MATCH_LEN_BINS) match_bin = MATCH_LEN_BINS - 1;
    return b * MATCH_LEN_BINS + match_bin;
}

void mixer_weights(const mixer *mx, int bucket, const int present[MIX_N], double w[MIX_N])
{
    const double *t = mx->theta + (size_t)bucket * MIX_N;
    double top = -INFINITY, sum = 0;
    for (int i = 0; i < MIX_N; i++)
        if (present[i] && t[i] > top) top = t[i];
    for (int i = 0; i < MIX_N; i++) {
        w[i] = present[i] ? exp(t[i] - top) : 0;
        sum += w[i];
    }
    for (int i = 0; i < MIX_N; i++)
        w[i] /= sum;
}

void mixer_learn(mixer *mx, int bucket, const int present[MIX_N], const double w[MIX_N], const double p[MIX_N])
{
    double pm = 0;
    for (int i = 0; i < MIX_N; i++)
        pm += w[i] * p[i];
    if (!(pm > 0))
        return;
    double *t = mx->theta + (size_t)bucket * MIX_N;
    for (int i = 0; i < MIX_N; i++)
        if (present[i]) {
            t[i] -= mx->lr * w[i] * (1 - p[i] / pm);
            /* keep logits bounded so that no weight underflows to exactly 0 */
            if (t[i] > 30) t[i] = 30;
            if (t[i] < -30) t[i] = -30;
        }
}

int mixer_save(const mixer *mx, const char *path, tempo_error *err)
{
    strbuf s = {0};
    strbuf_printf(&s, "{\"format\":\"tempo-mixer\",\"version\":2,\"components\":[\"%s\",\"%s\",\"%s\",\"%s\"],"
                      "\"memory_order\":%d,\"cache_order\":%d,\"match\":%d,\"buckets\":%d,\"lr\":",
                  mixer_component_names[0], mixer_component_names[1], mixer_component_names[2],
                  mixer_component_names[3], mx->memory_order, mx->cache_order, mx->match, mx->n_buckets);
    strbuf_json_number(&s, mx->lr);
    strbuf_puts(&s, ",\"theta\":[");
    for (int b = 0; b < mx->n_buckets; b++) {
        strbuf_puts(&s, b ? ",[" : "[");
        for (int i = 0; i < MIX_N; i++) {
            if (i) strbuf_puts(&s, ",");
            strbuf_printf(&s, "%.17g", mx->theta[(size_t)b * MIX_N + i]);
        }
        strbuf_puts(&s, "]");
    }
    strbuf_puts(&s, "]}\n");
    int rc = file_write_atomic(path, s.data, s.len, err);
    strbuf_free(&s);
    return rc;
}

int mixer_load(mixer *mx, const char *path, tempo_error *err)
{
    memset(mx, 0, sizeof *mx);
    char *text;
    size_t len;
    if (file_read_all(path, &text, &len, 16u << 20, err))
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
    const int width = MIX_N;
    double lr = json_get_number(v, "lr", -1), nb = json_get_number(v, "buckets", -1);
    const json_value *th = json_get(v, "theta");
    if (fmt && !strcmp(fmt, "tempo-mixer") && version == 1) {
        tempo_fail(err, "%s: a mixer of an older layout (version 1: no match model, three context bins)", path);
        rc = -2;
        goto out;
    }
    if (!fmt || strcmp(fmt, "tempo-mixer") || version != 2) {
        tempo_fail(err, "%s: not a tempo mixer file (format tempo-mixer, version 2)", path);
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
    if (mixer_init(mx, (int)mo, (int)co, (int)ma, lr, err)) {
        tempo_error_prefix(err, path);
        goto out;
    }
    if (nb != mx->n_buckets || !th || th->type != JSON_ARRAY || th->n != (size_t)mx->n_buckets) {
        tempo_fail(err, "%s: expected %d buckets of logits", path, mx->n_buckets);
        goto out;
    }
    for (size_t b = 0; b < th->n; b++) {
        const json_value *row = &th->items[b];
        if (row->type != JSON_ARRAY || row->n != (size_t)width) {
            tempo_fail(err, "%s: theta[%zu]: expected %d numbers", path, b, width);
            goto out;
        }
        for (int i = 0; i < width; i++) {
            const json_value *x = &row->items[i];
            if (x->type != JSON_NUMBER || !(fabs(x->number) <= 30)) {
                tempo_fail(err, "%s: theta[%zu][%d]: expected a number in -30..30", path, b, i);
                goto out;
            }
            mx->theta[b * MIX_N + (size_t)i] = x->number;
        }
    }
    rc = 0;
out:
    json_free(v);
    if (rc)
        mixer_free(mx);
    return rc;
}
