/* icl.c - the CORE evaluation loop of one task (order, few-shot draws,
 * batching items into score calls, deciding each item), the summary and the
 * result JSON (see icl.h). Rendering/encoding is icl_prompt.c, the model is
 * behind icl_lm. */
#include "eval/icl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/timer.h"
#include "eval/icl_interval.h"
#include "eval/icl_prompt.h"
#include "eval/icl_random.h"

#define ICL_SHUFFLE_SEED 1337

void icl_options_default(icl_options *o)
{
    memset(o, 0, sizeof *o);
    o->limit = 0;
    o->shots = -1;
    o->seed = 1234;
    o->batch_tokens = 0;
}

/* Items waiting to be scored: their sequences back to back, their requests. */
typedef struct {
    int32_t *tokens;
    size_t n_tokens, tok_cap;
    icl_request *req;
    size_t *req_off;      /* token offset of each request (pointers are set before scoring) */
    icl_answer *ans;
    int n_req, req_cap;
    int *item_first;      /* [n_items + 1]: the item's requests */
    int *item_gold;       /* gold index, -1 for language modeling */
    int n_items, item_cap;
} batch;

static void batch_free(batch *b)
{
    free(b->tokens);
    free(b->req);
    free(b->req_off);
    free(b->ans);
    free(b->item_first);
    free(b->item_gold);
    memset(b, 0, sizeof *b);
}

static int grow(void **p, size_t elem, int *cap, int need)
{
    if (need <= *cap)
        return 0;
    int c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, elem * (size_t)c);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Append one built item. */
static int batch_add(batch *b, const icl_seqs *s, int gold)
{
    size_t need = b->n_tokens + (size_t)s->offset[s->n_seq];
    if (need > b->tok_cap) {
        size_t c = b->tok_cap ? b->tok_cap : 16384;
        while (c < need)
            c *= 2;
        int32_t *t = realloc(b->tokens, sizeof(int32_t) * c);
        if (!t)
            return -1;
        b->tokens = t;
        b->tok_cap = c;
    }
    int req_cap = b->req_cap;
    if (grow((void **)&b->req, sizeof(icl_request), &req_cap, b->n_req + s->n_seq))
        return -1;
    req_cap = b->req_cap;
    if (grow((void **)&b->req_off, sizeof(size_t), &req_cap, b->n_req + s->n_seq))
        return -1;
    req_cap = b->req_cap;
    if (grow((void **)&b->ans, sizeof(icl_answer), &req_cap, b->n_req + s->n_seq))
        return -1;
    b->req_cap = req_cap;
    int item_cap = b->item_cap;
    if (grow((void **)&b->item_first, sizeof(int), &item_cap, b->n_items + 2))
        return -1;
    item_cap = b->item_cap;
    if (grow((void **)&b->item_gold, sizeof(int), &item_cap, b->n_items + 2))
        return -1;
    b->item_cap = item_cap;
    memcpy(b->tokens + b->n_tokens, s->tokens, sizeof(int32_t) * (size_t)s->offset[s->n_seq]);
    b->item_first[b->n_items] = b->n_req;
    b->item_gold[b->n_items] = gold;
    for (int j = 0; j < s->n_seq; j++) {
        icl_request *r = &b->req[b->n_req];
        b->req_off[b->n_req] = b->n_tokens + (size_t)s->offset[j];
        r->n = s->offset[j + 1] - s->offset[j];
        r->start = s->start[j];
        r->end = s->end[j];
        r->group = b->n_items;
        b->n_req++;
    }
    b->n_tokens = need;
    b->n_items++;
    b->item_first[b->n_items] = b->n_req;
    return 0;
}

/* Score the batch and count the items it gets right. */
static int batch_run(batch *b, const icl_lm *lm, icl_task_result *r, tempo_error *err)
{
    if (!b->n_items)
        return 0;
    for (int i = 0; i < b->n_req; i++)
        b->req[i].tokens = b->tokens + b->req_off[i];
    if (lm->score(lm->ctx, b->req, b->n_req, b->ans, err))
        return -1;
    for (int it = 0; it < b->n_items; it++) {
        int f = b->item_first[it], n = b->item_first[it + 1] - f, correct;
        if (b->item_gold[it] < 0) {
            correct = b->ans[f].all_argmax;
        } else {
            int best = 0;
            double best_mean = INFINITY;
            for (int j = 0; j < n; j++) {
                const icl_request *q = &b->req[f + j];
                double mean = b->ans[f + j].nll_sum / (q->end - q->start);
                if (mean < best_mean) { /* strict: ties keep the first */
                    best_mean = mean;
                    best = j;
                }
            }
            correct = best == b->item_gold[it];
        }
        r->n_eval++;
        r->n_correct += correct;
    }
    r->tokens += (long long)b->n_tokens;
    b->n_tokens = 0;
    b->n_req = 0;
    b->n_items = 0;
    return 0;
}

static void note_skip(icl_task_result *r, const char *path, const icl_item *it, icl_skip why,
                      int context)
{
    r->skipped[why]++;
    if (r->first_skip[0])
        return;
    if (why == ICL_SKIP_TOO_LONG)
        snprintf(r->first_skip, sizeof r->first_skip,
                 "%.200s:%d: the continuation does not fit in the model's context of %d tokens", path,
                 it->line, context);
    else
        snprintf(r->first_skip, sizeof r->first_skip,
                 "%.200s:%d: nothing to score (the choices tokenize identically or one is a prefix of another)",
                 path, it->line);
}

/* The scoring loop over the first n_eval items of the shuffled order. */
static int run_items(const icl_lm *lm, const tokenizer *tok, const char *path,
                     const icl_task_spec *spec, const icl_task_data *d, const icl_options *o,
                     icl_task_result *r, tempo_error *err)
{
    int n = d->n_items, N = o->limit > 0 && o->limit < n ? o->limit : n, k = r->shots;
    int32_t *perm = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *scratch = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *fs = malloc(sizeof(int32_t) * (size_t)(k + 1));
    tok_encoder *enc = NULL;
    icl_seqs s;
    memset(&s, 0, sizeof s);
    batch b;
    memset(&b, 0, sizeof b);
    int rc = 0;
    if (!perm || !scratch || !fs)
        rc = tempo_fail(err, "icl: out of memory");
    if (!rc && tok_encoder_new(&enc, tok, err))
        rc = -1;
    if (!rc) {
        for (int i = 0; i < n; i++)
            perm[i] = i;
        icl_pyrandom pr;
        icl_pyrandom_seed(&pr, ICL_SHUFFLE_SEED);
        icl_pyrandom_shuffle(&pr, perm, n);
    }
    int batch_tokens = o->batch_tokens > 0 ? o->batch_tokens : 8192;
    for (int i = 0; !rc && i < N; i++) {
        icl_fewshot_indices(o->seed, i, n, k, fs, scratch);
        for (int j = 0; j < k; j++)
            fs[j] = perm[fs[j]];
        icl_skip why;
        int built = icl_build_item(spec, d->items, perm[i], fs, k, enc, lm->sep, lm->context, &s,
                                   &why, err);
        if (built < 0) {
            rc = -1;
        } else if (built == 1) {
            note_skip(r, path, &d->items[perm[i]], why, lm->context);
        } else {
            int gold = spec->type == ICL_LANGUAGE_MODELING ? -1 : d->items[perm[i]].gold;
            if (batch_add(&b, &s, gold))
                rc = tempo_fail(err, "icl: out of memory");
        }
        if (!rc && (b.n_tokens >= (size_t)batch_tokens || i == N - 1)) {
            rc = batch_run(&b, lm, r, err);
            if (!rc && o->progress)
                o->progress(o->user, spec->label, i + 1, N);
        }
    }
    batch_free(&b);
    icl_seqs_free(&s);
    tok_encoder_free(enc);
    free(perm);
    free(scratch);
    free(fs);
    return rc;
}

int icl_evaluate_task(const icl_lm *lm, const tokenizer *tok, const char *tasks_dir,
                      const icl_task_spec *spec, const icl_options *o, icl_task_result *r,
                      tempo_error *err)
{
    memset(r, 0, sizeof *r);
    r->spec = *spec;
    r->accuracy = r->centered = r->accuracy_lo = r->accuracy_hi = NAN;
    r->shots = o->shots >= 0 ? o->shots : spec->num_fewshot;
    double t0 = timer_now();
    char path[1100];
    path_join(path, sizeof path, tasks_dir, spec->file);
    if (!path_exists(path)) {
        r->status = ICL_TASK_MISSING;
        snprintf(r->error, sizeof r->error, "%.300s: no such file", path);
        return 0;
    }
    icl_task_data d;
    tempo_error le;
    tempo_error_clear(&le);
    if (icl_task_load(path, spec->type, &d, &le)) {
        r->status = ICL_TASK_FAILED;
        snprintf(r->error, sizeof r->error, "%.500s", le.msg);
        return 0;
    }
    r->n_records = d.n_items;
    memcpy(r->skipped, d.skipped, sizeof r->skipped);
    snprintf(r->first_skip, sizeof r->first_skip, "%s", d.first_skip);
    int rc = 0;
    if (d.n_items == 0) {
        r->status = ICL_TASK_FAILED;
        snprintf(r->error, sizeof r->error, "%.300s: no valid record (%d lines)", path, d.n_lines);
    } else {
        if (r->shots > d.n_items - 1)
            r->shots = d.n_items - 1; /* examples are other items: there are only so many */
        rc = run_items(lm, tok, path, spec, &d, o, r, err);
        if (!rc && r->n_eval == 0) {
            r->status = ICL_TASK_FAILED;
            snprintf(r->error, sizeof r->error, "%.300s: no item could be evaluated (see skipped)", path);
        } else if (!rc) {
            r->status = ICL_TASK_OK;
            r->accuracy = (double)r->n_correct / r->n_eval;
            r->centered = (r->accuracy - spec->random_baseline) / (1.0 - spec->random_baseline);
            icl_interval_accuracy(r->n_eval, r->n_correct, &r->accuracy_lo, &r->accuracy_hi);
        }
    }
    icl_task_free(&d);
    r->seconds = timer_now() - t0;
    return rc;
}

int icl_run(const icl_lm *lm, const tokenizer *tok, const char *tasks_dir,
            const char *const *names, int n_names, const icl_options *o,
            icl_task_result **results, int *n_results, icl_summary *s, tempo_error *err)
{
    *results = NULL;
    *n_results = 0;
    icl_task_spec *specs;
    int n_specs, n_core;
    if (icl_table_read(tasks_dir, &specs, &n_specs, &n_core, err))
        return -1;
    for (int k = 0; k < n_names; k++) {
        int found = 0;
        for (int i = 0; i < n_specs && !found; i++)
            found = !strcmp(names[k], specs[i].label);
        if (!found) {
            strbuf known = {0};
            for (int i = 0; i < n_specs; i++)
                strbuf_printf(&known, "%s%s", i ? ", " : "", specs[i].label);
            tempo_usage(err, "icl: no task '%s' in the table (known: %.400s)", names[k],
                        known.data ? known.data : "");
            strbuf_free(&known);
            free(specs);
            return -1;
        }
    }
    icl_task_result *r = calloc((size_t)n_specs, sizeof *r);
    if (!r) {
        free(specs);
        return tempo_fail(err, "icl: out of memory");
    }
    int n = 0, rc = 0;
    for (int i = 0; i < n_specs && !rc; i++) {
        int wanted = n_names == 0;
        for (int k = 0; k < n_names && !wanted; k++)
            wanted = !strcmp(names[k], specs[i].label);
        if (wanted)
            rc = icl_evaluate_task(lm, tok, tasks_dir, &specs[i], o, &r[n++], err);
    }
    free(specs);
    if (rc) {
        free(r);
        return -1;
    }
    icl_summarize(r, n, n_core, s);
    *results = r;
    *n_results = n;
    return 0;
}

void icl_summarize(const icl_task_result *r, int n, int n_table, icl_summary *s)
{
    memset(s, 0, sizeof *s);
    s->n_table = n_table;
    double sum = 0;
    int seen = 0;
    for (int i = 0; i < n; i++) {
        s->seconds += r[i].seconds;
        s->tokens += r[i].tokens;
        if (!r[i].spec.in_core)
            continue;
        seen++;
        if (r[i].status == ICL_TASK_OK) {
            sum += r[i].centered;
            s->n_core++;
        } else if (r[i].status == ICL_TASK_MISSING) {
            s->n_missing++;
        } else {
            s->n_failed++;
        }
    }
    s->n_failed += n_table - seen; /* entries not asked for */
    if (s->n_failed < 0)
        s->n_failed = 0;
    s->core = s->n_core ? sum / s->n_core : NAN;
    s->core_lo = s->core_hi = NAN;
    icl_interval_task *t = malloc(sizeof *t * (size_t)(n > 0 ? n : 1));
    int k = 0;
    for (int i = 0; t && i < n; i++)
        if (r[i].spec.in_core && r[i].status == ICL_TASK_OK)
            t[k++] = (icl_interval_task){r[i].n_eval, r[i].n_correct, r[i].spec.random_baseline};
    if (t)
        icl_interval_core(t, k, &s->core_lo, &s->core_hi);
    free(t);
}

/* "key":[lo,hi] */
static void json_interval(jsonw *w, const char *key, double lo, double hi)
{
    jsonw_key(w, key);
    jsonw_array_begin(w);
    jsonw_number(w, lo);
    jsonw_number(w, hi);
    jsonw_array_end(w);
}

static void task_json(jsonw *w, const icl_task_result *r)
{
    static const char *const status[] = {"ok", "missing", "failed"};
    jsonw_object_begin(w);
    jsonw_field_string(w, "label", r->spec.label);
    jsonw_field_string(w, "type", icl_type_name(r->spec.type));
    jsonw_field_bool(w, "in_core", r->spec.in_core);
    jsonw_field_string(w, "status", status[r->status]);
    jsonw_field_int(w, "shots", r->shots);
    jsonw_field_string(w, "delimiter", r->spec.delimiter);
    jsonw_field_number(w, "random_baseline", r->spec.random_baseline);
    jsonw_field_number(w, "accuracy", r->accuracy);
    json_interval(w, "accuracy_ci95", r->accuracy_lo, r->accuracy_hi);
    jsonw_field_number(w, "centered", r->centered);
    jsonw_field_int(w, "evaluated", r->n_eval);
    jsonw_field_int(w, "correct", r->n_correct);
    jsonw_field_int(w, "records", r->n_records);
    jsonw_key(w, "skipped");
    jsonw_object_begin(w);
    int total = 0;
    for (int k = 0; k < ICL_SKIP_COUNT; k++) {
        jsonw_field_int(w, icl_skip_name((icl_skip)k), r->skipped[k]);
        total += r->skipped[k];
    }
    jsonw_field_int(w, "total", total);
    jsonw_object_end(w);
    if (r->first_skip[0])
        jsonw_field_string(w, "first_skip", r->first_skip);
    if (r->error[0])
        jsonw_field_string(w, "error", r->error);
    jsonw_field_int(w, "tokens", r->tokens);
    jsonw_field_number(w, "seconds", r->seconds);
    jsonw_object_end(w);
}

void icl_summary_members(jsonw *w, const icl_task_result *r, int n, const icl_summary *s, const icl_options *o)
{
    jsonw_field_number(w, "core", s->core);
    json_interval(w, "core_ci95", s->core_lo, s->core_hi);
    char label[32];
    if (s->n_core == s->n_table)
        snprintf(label, sizeof label, "CORE");
    else
        snprintf(label, sizeof label, "CORE-%d", s->n_core);
    jsonw_field_string(w, "core_label", label);
    jsonw_field_int(w, "core_entries", s->n_core);
    jsonw_field_int(w, "core_of", s->n_table);
    jsonw_field_int(w, "core_missing", s->n_missing);
    jsonw_field_int(w, "core_failed_or_not_run", s->n_failed);
    jsonw_field_int(w, "limit", o->limit);
    jsonw_field_uint(w, "seed", (unsigned long long)o->seed);
    jsonw_key(w, "extra");
    jsonw_object_begin(w);
    for (int i = 0; i < n; i++) {
        if (r[i].spec.in_core)
            continue;
        jsonw_key(w, r[i].spec.label);
        jsonw_object_begin(w);
        jsonw_field_number(w, "accuracy", r[i].accuracy);
        json_interval(w, "accuracy_ci95", r[i].accuracy_lo, r[i].accuracy_hi);
        jsonw_field_number(w, "centered", r[i].centered);
        jsonw_field_number(w, "random_baseline", r[i].spec.random_baseline);
        jsonw_field_int(w, "evaluated", r[i].n_eval);
        jsonw_object_end(w);
    }
    jsonw_object_end(w);
    jsonw_key(w, "tasks");
    jsonw_array_begin(w);
    for (int i = 0; i < n; i++)
        task_json(w, &r[i]);
    jsonw_array_end(w);
    jsonw_field_int(w, "tokens", s->tokens);
    jsonw_field_number(w, "seconds", s->seconds);
}

void icl_summary_json(strbuf *out, const icl_task_result *r, int n, const icl_summary *s,
                      const icl_options *o)
{
    size_t start = out->len;
    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    icl_summary_members(&w, r, n, s, o);
    jsonw_object_end(&w);
    /* the members are fixed, so the one failure left is memory: say so as
     * strbuf does, and leave no half object behind */
    if (jsonw_finish(&w, NULL)) {
        out->oom = 1;
        if (out->data) {
            out->len = start;
            out->data[start] = '\0';
        }
    }
}
