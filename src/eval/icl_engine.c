/* icl_engine.c - ICL request scoring on the inference engine with shared
 * prefixes (see icl_engine.h). A call's requests are cut into sub-batches
 * that fit the cache slots; each sub-batch is two rounds of engine steps:
 *   round 1: per group (the requests of one item), its shared prefix
 *            tokens[0, p) into the group's first slot; a lone request runs
 *            whole (tokens[0, end - 1)) in this round;
 *   copies:  the prefix slot into the slot of every other request;
 *   round 2: each request's own tokens [p, end - 1) after its copy.
 * Every position t in [start - 1, end - 1) yields the logits that score
 * tokens[t + 1]; the last token is never run (nothing scores its output).
 * With the hybrid model attached, each target is scored by the mixture of
 * the transformer, the count memory and a cache of the request's tokens
 * before it (the mixer's weights fixed at the run's fitted ones). */
#include "eval/icl_engine.h"
#include "core/omp_team.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer/engine.h"

#define LOGIT_ROWS 64 /* rows of logits computed at once */

/* One (output row, request, target) triple of a step. */
typedef struct {
    int row, req;
    int pos;                   /* index of the target in the request's tokens */
    int32_t target;
} pair;

struct icl_engine {
    model *m;
    infer_engine *e;
    infer_cache cache;
    int context, V, max_rows;
    int32_t sep;
    long long rows;
    float *logits;             /* [LOGIT_ROWS, V] */
    infer_chunk *chunks;       /* [n_slots] */
    pair *pairs;               /* [pair_cap] */
    double *pair_nll;
    int *pair_arg;
    int pair_cap, n_pairs;
    int *prefix;               /* [n_slots] per group in a sub-batch: shared prefix length */
    /* the hybrid model (NULL: the transformer alone): the cache counts the request's tokens before each target */
    const hybrid_parts *hyb;
    mixture_stream hs;
    long long calls, hs_call;  /* score calls so far; the call and request the cache holds */
    int hs_req;
    float *z_mix;              /* [V] */
    double *p_tmp;             /* [4V] */
};

int icl_engine_create(icl_engine **out, model *m, int32_t sep, int n_slots, int max_rows,
                      tempo_error *err)
{
    *out = NULL;
    const model_config *c = model_get_config(m);
    icl_engine *x = calloc(1, sizeof *x);
    if (!x)
        return tempo_fail(err, "icl engine: out of memory");
    x->m = m;
    x->sep = sep;
    x->context = c->context;
    x->V = c->vocab_size;
    x->max_rows = max_rows > 0 ? max_rows : 2048;
    if (x->max_rows < c->context)
        x->max_rows = c->context; /* a whole sequence must fit in one step */
    if (n_slots <= 0) {
        size_t per_slot = 2 * sizeof(float) * (size_t)c->n_layers * c->context * c->n_kv_heads *
                          (c->d_model / c->n_heads);
        size_t fit = ((size_t)256 << 20) / (per_slot ? per_slot : 1);
        n_slots = fit < 4 ? 4 : fit > 64 ? 64 : (int)fit;
    }
    int rc = infer_engine_create(&x->e, m, x->max_rows, err);
    if (!rc)
        rc = infer_cache_create(&x->cache, c, n_slots, 0, err);
    if (!rc) {
        x->logits = malloc(sizeof(float) * LOGIT_ROWS * (size_t)x->V);
        x->chunks = malloc(sizeof(infer_chunk) * (size_t)n_slots);
        x->prefix = malloc(sizeof(int) * (size_t)n_slots);
        if (!x->logits || !x->chunks || !x->prefix)
            rc = tempo_fail(err, "icl engine: out of memory");
    }
    if (rc) {
        icl_engine_free(x);
        return -1;
    }
    *out = x;
    return 0;
}

void icl_engine_free(icl_engine *x)
{
    if (!x)
        return;
    infer_engine_free(x->e);
    infer_cache_free(&x->cache);
    free(x->logits);
    free(x->chunks);
    free(x->pairs);
    free(x->pair_nll);
    free(x->pair_arg);
    free(x->prefix);
    if (x->hyb)
        mixture_stream_free(&x->hs);
    free(x->z_mix);
    free(x->p_tmp);
    free(x);
}

int icl_engine_set_hybrid(icl_engine *x, const hybrid_parts *h, tempo_error *err)
{
    if (!h || !hybrid_parts_any(h))
        return 0;   /* the transformer alone */
    if (h->vocab != x->V)
        return tempo_fail(err, "icl engine: the hybrid parts have %d ids, the model %d", h->vocab, x->V);
    x->z_mix = malloc(sizeof(float) * (size_t)x->V);
    x->p_tmp = malloc(sizeof(double) * 4 * (size_t)x->V);
    if (!x->z_mix || !x->p_tmp)
        return tempo_fail(err, "icl engine: out of memory");
    mixture_options o = hybrid_parts_options(h, 0);
    if (mixture_stream_init(&x->hs, &o, &h->mx, err))
        return -1;
    x->hyb = h;
    x->hs_call = -1;
    return 0;
}

int icl_engine_batch_tokens(const icl_engine *x)
{
    return 2 * x->cache.n_slots * x->context;
}

long long icl_engine_rows(const icl_engine *x)
{
    return x->rows;
}

static int add_pair(icl_engine *x, int row, int req, int pos, int32_t target)
{
    if (x->n_pairs == x->pair_cap) {
        int cap = x->pair_cap ? 2 * x->pair_cap : 4096;
        pair *p = realloc(x->pairs, sizeof(pair) * (size_t)cap);
        if (p) x->pairs = p;
        double *d = realloc(x->pair_nll, sizeof(double) * (size_t)cap);
        if (d) x->pair_nll = d;
        int *a = realloc(x->pair_arg, sizeof(int) * (size_t)cap);
        if (a) x->pair_arg = a;
        if (!p || !d || !a)
            return -1;
        x->pair_cap = cap;
    }
    x->pairs[x->n_pairs++] = (pair){row, req, pos, target};
    return 0;
}

/* -ln p of the pair's target under the mixture, and whether it is the
 * mixture's argmax: the cache holds the request's tokens before the target
 * (pairs of one request come in increasing positions, so it only grows;
 * another request starts it afresh). */
static double hybrid_nll(icl_engine *x, int req_index, const icl_request *r, int pos, const float *z,
                         int *is_argmax, tempo_error *err)
{
    const int V = x->V;
    if (x->hs_call != x->calls || x->hs_req != req_index) {
        if (mixture_stream_reset(&x->hs, &x->hyb->mx, err))
            return NAN;
        x->hs_call = x->calls;
        x->hs_req = req_index;
    }
    memcpy(x->z_mix, z, sizeof(float) * (size_t)V);   /* rows can be shared by requests: work on a copy */
    if (mixture_stream_logits(&x->hs, r->tokens, (size_t)pos, x->z_mix, x->p_tmp, err))
        return NAN;
    int32_t best = 0;
    for (int v = 1; v < V; v++)
        if (x->z_mix[v] > x->z_mix[best]) best = v;
    *is_argmax = best == r->tokens[pos];
    return -(double)x->z_mix[r->tokens[pos]];
}

/* Run one step and score its pairs (sorted by row) into ans. */
static int run_step(icl_engine *x, const icl_request *req, int n_chunks, icl_answer *ans, tempo_error *err)
{
    if (infer_step(x->e, &x->cache, x->chunks, n_chunks, err))
        return -1;
    for (int i = 0; i < n_chunks; i++)
        x->rows += x->chunks[i].n;
    int n_out = infer_outputs(x->e), V = x->V;
    for (int r0 = 0, p0 = 0; r0 < n_out; r0 += LOGIT_ROWS) {
        int nr = n_out - r0 < LOGIT_ROWS ? n_out - r0 : LOGIT_ROWS;
        infer_logits(x->e, r0, nr, x->logits);
        int p1 = p0;
        while (p1 < x->n_pairs && x->pairs[p1].row < r0 + nr)
            p1++;
        if (x->hyb) {
            for (int p = p0; p < p1; p++) {
                x->pair_nll[p] = hybrid_nll(x, x->pairs[p].req, &req[x->pairs[p].req], x->pairs[p].pos,
                                            x->logits + (size_t)(x->pairs[p].row - r0) * V, &x->pair_arg[p], err);
                if (isnan(x->pair_nll[p]))
                    return -1;
            }
        } else {
            OMP_TEAM_FOR(omp_team_worth((size_t)(p1 - p0), 8), int, q, p1 - p0, int p = p0 + q;
                         x->pair_nll[p] = infer_logits_nll(x->logits + (size_t)(x->pairs[p].row - r0) * V,
                                                           V, x->pairs[p].target, &x->pair_arg[p]));
        }
        for (int p = p0; p < p1; p++) { /* in order: deterministic sums */
            ans[x->pairs[p].req].nll_sum += x->pair_nll[p];
            ans[x->pairs[p].req].all_argmax &= x->pair_arg[p];
        }
        p0 = p1;
    }
    x->n_pairs = 0;
    return 0;
}

/* Shared prefix of requests [a, b), at most every request's start. */
static int group_prefix(const icl_request *req, int a, int b)
{
    int p = req[a].start;
    for (int j = a + 1; j < b; j++) {
        int k = 0, n = req[j].start < p ? req[j].start : p;
        while (k < n && req[j].tokens[k] == req[a].tokens[k])
            k++;
        p = k;
    }
    return p;
}

/* Requests [a, b) as groups of at most n_slots requests, in slots 0.. */
static int score_sub_batch(icl_engine *x, const icl_request *req, int a, int b, int *gend,
                           int n_groups, icl_answer *ans, tempo_error *err)
{
    int n_chunks = 0, row = 0, rc = 0;
    /* round 1 */
    for (int g = 0, s = a; g < n_groups; s = gend[g++]) {
        const icl_request *r = &req[s];
        infer_chunk *ch = &x->chunks[n_chunks++];
        int slot = s - a;
        infer_cache_reset(&x->cache, slot);
        if (gend[g] - s == 1) {
            *ch = (infer_chunk){slot, r->tokens, r->end - 1, r->start - 1};
            for (int t = r->start - 1; t < r->end - 1; t++)
                rc |= add_pair(x, row++, s, t + 1, r->tokens[t + 1]);
            continue;
        }
        int p = x->prefix[g] = group_prefix(req, s, gend[g]);
        int need = 0;
        for (int j = s; j < gend[g]; j++)
            need |= req[j].start == p;
        *ch = (infer_chunk){slot, r->tokens, p, need ? p - 1 : p};
        if (need) {
            for (int j = s; j < gend[g]; j++)
                if (req[j].start == p)
                    rc |= add_pair(x, row, j, p, req[j].tokens[p]);
            row++;
        }
    }
    if (rc)
        return tempo_fail(err, "icl engine: out of memory");
    if (run_step(x, req, n_chunks, ans, err))
        return -1;
    /* copies, then round 2 in steps of at most max_rows new tokens */
    n_chunks = row = 0;
    int in_rows = 0;
    for (int g = 0, s = a; g < n_groups; s = gend[g++]) {
        if (gend[g] - s == 1)
            continue;
        int p = x->prefix[g];
        for (int j = s + 1; j < gend[g]; j++) /* before the prefix slot grows */
            infer_cache_copy(&x->cache, j - a, s - a);
        for (int j = s; j < gend[g]; j++) {
            const icl_request *r = &req[j];
            int n = r->end - 1 - p;
            if (n <= 0)
                continue;
            if (in_rows + n > x->max_rows) {
                if (run_step(x, req, n_chunks, ans, err))
                    return -1;
                n_chunks = row = in_rows = 0;
            }
            int from = r->start - 1 - p > 0 ? r->start - 1 - p : 0;
            x->chunks[n_chunks++] = (infer_chunk){j - a, r->tokens + p, n, from};
            for (int t = p + from; t < r->end - 1; t++)
                rc |= add_pair(x, row + (t - p - from), j, t + 1, r->tokens[t + 1]);
            row += n - from; /* output rows of this chunk */
            in_rows += n;
        }
    }
    if (rc)
        return tempo_fail(err, "icl engine: out of memory");
    return n_chunks ? run_step(x, req, n_chunks, ans, err) : 0;
}

static int engine_score(void *ctx, const icl_request *req, int n, icl_answer *ans, tempo_error *err)
{
    icl_engine *x = ctx;
    x->calls++;
    for (int i = 0; i < n; i++) {
        const icl_request *r = &req[i];
        if (r->n > x->context || r->n < 2 || r->start < 1 || r->start >= r->end || r->end > r->n)
            return tempo_usage(err, "icl engine: request %d: %d tokens, span [%d, %d), context %d", i,
                               r->n, r->start, r->end, x->context);
        ans[i].nll_sum = 0;
        ans[i].all_argmax = 1;
    }
    int S = x->cache.n_slots;
    int *gend = malloc(sizeof(int) * (size_t)S);
    if (!gend)
        return tempo_fail(err, "icl engine: out of memory");
    int rc = 0;
    for (int a = 0; !rc && a < n;) {
        /* groups of consecutive requests with one group id, split at S requests,
         * taken while slots and round-1 rows last */
        int b = a, n_groups = 0, rows1 = 0;
        while (b < n && n_groups < S) {
            int e = b + 1;
            while (e < n && req[e].group == req[b].group && e - b < S)
                e++;
            int r1 = e - b == 1 ? req[b].end - 1 : req[b].start;
            if (e - a > S || (n_groups && rows1 + r1 > x->max_rows))
                break;
            rows1 += r1;
            gend[n_groups++] = e;
            b = e;
        }
        rc = score_sub_batch(x, req, a, b, gend, n_groups, ans, err);
        a = b;
    }
    free(gend);
    return rc;
}

icl_lm icl_engine_lm(icl_engine *x)
{
    icl_lm lm = {x, x->context, x->sep, engine_score};
    return lm;
}

int icl_engine_run(model *m, const hybrid_parts *h, const tokenizer *tok, const char *tasks_dir,
                   const char *const *names, int n_names, const icl_options *o,
                   icl_task_result **results, int *n_results, icl_summary *s, tempo_error *err)
{
    icl_engine *x;
    if (icl_engine_create(&x, m, tok_sep_id(tok), 0, 0, err))
        return -1;
    if (icl_engine_set_hybrid(x, h, err)) {
        icl_engine_free(x);
        return -1;
    }
    icl_lm lm = icl_engine_lm(x);
    icl_options opt = *o;
    if (opt.batch_tokens <= 0)
        opt.batch_tokens = icl_engine_batch_tokens(x);
    int rc = icl_run(&lm, tok, tasks_dir, names, n_names, &opt, results, n_results, s, err);
    icl_engine_free(x);
    return rc;
}
