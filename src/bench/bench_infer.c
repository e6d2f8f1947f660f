/* bench_infer.c - prefill / decode / bound measurements of the inference
 * engine (see bench_infer.h). Prompts are random token ids from a fixed
 * seed: speed does not depend on what the tokens say. */
#include "bench/bench_infer.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_timing.h"
#include "bench/peak.h"
#include "core/cpu_info.h"
#include "core/rng.h"
#include "core/timer.h"
#include "infer/engine.h"

void bench_infer_options_default(bench_infer_options *o)
{
    memset(o, 0, sizeof *o);
    o->runs = 5;
    o->max_batch = 64;
    o->read_probe_seconds = 0.3;
}

bench_infer_bandwidth bench_infer_bandwidth_choice(double bytes, long cache_bytes, double read_gbs,
                                                   double dram_gbs)
{
    if (!(read_gbs > 0))
        return BENCH_INFER_BW_DRAM;
    if (cache_bytes > 0 && bytes <= (double)cache_bytes)
        return BENCH_INFER_BW_CACHE;
    return read_gbs > dram_gbs ? BENCH_INFER_BW_READ_FASTER : BENCH_INFER_BW_DRAM;
}

/* Start a JSON line in the reused buffer b. */
static void line_begin(jsonw *w, strbuf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
    jsonw_init(w, b);
}

/* Finish the line and hand it to o->line. */
static int emit(const bench_infer_options *o, jsonw *w, tempo_error *err)
{
    if (jsonw_finish(w, err))
        return tempo_error_prefix(err, "bench infer");
    if (o->line)
        o->line(o->user, w->out->data);
    return 0;
}

/* Time to first token for a prompt of P tokens in slot 0, runs times. */
static int measure_prefill(infer_engine *e, infer_cache *c, const int32_t *prompt, int P, int runs,
                           float *z, double *ttft, tempo_error *err)
{
    int V = infer_engine_config(e)->vocab_size;
    for (int k = -1; k < runs; k++) { /* k = -1: warm-up */
        infer_cache_reset(c, 0);
        infer_chunk ch = {0, prompt, P, P - 1};
        double t0 = timer_now();
        if (infer_step(e, c, &ch, 1, err))
            return -1;
        infer_logits(e, 0, 1, z);
        volatile int32_t first = infer_argmax(z, V);
        (void)first;
        if (k >= 0)
            ttft[k] = timer_now() - t0;
    }
    return 0;
}

/* Decode at batch B: each slot gets a P0-token prompt, then `steps` greedy
 * steps; step times (seconds) go to lat[run * steps + s]. */
static int measure_decode(infer_engine *e, infer_cache *c, const int32_t *prompt, int P0, int B,
                          int steps, int runs, float *z, int32_t *next, infer_chunk *ch,
                          double *lat, double *total, tempo_error *err)
{
    int V = infer_engine_config(e)->vocab_size;
    *total = 0;
    for (int k = -1; k < runs; k++) {
        for (int b = 0; b < B; b++) {
            infer_cache_reset(c, b);
            ch[b] = (infer_chunk){b, prompt + b, P0, P0 - 1};
        }
        if (infer_step(e, c, ch, B, err))
            return -1;
        infer_logits(e, 0, B, z);
        for (int b = 0; b < B; b++)
            next[b] = infer_argmax(z + (size_t)b * V, V);
        for (int s = 0; s < steps; s++) {
            double t0 = timer_now();
            for (int b = 0; b < B; b++)
                ch[b] = (infer_chunk){b, &next[b], 1, 0};
            if (infer_step(e, c, ch, B, err))
                return -1;
            infer_logits(e, 0, B, z);
            for (int b = 0; b < B; b++)
                next[b] = infer_argmax(z + (size_t)b * V, V);
            double dt = timer_now() - t0;
            if (k >= 0) {
                lat[k * steps + s] = dt;
                *total += dt;
            }
        }
    }
    return 0;
}

/* {"bench":"infer","what":<what>, ... the line's own fields, then its end */
static void line_head(jsonw *w, const char *what)
{
    jsonw_object_begin(w);
    jsonw_field_string(w, "bench", "infer");
    jsonw_field_string(w, "what", what);
}

static void prefill_line(jsonw *w, const bench_infer_result *r, const bench_infer_at *a)
{
    line_head(w, "prefill");
    jsonw_field_int(w, "prompt_tokens", r->prompt_tokens);
    jsonw_field_int(w, "threads", a->threads);
    jsonw_field_number(w, "tokens_per_s", a->prefill_tokens_per_s);
    jsonw_field_number(w, "time_to_first_token_s", a->ttft_p50_s);
    jsonw_field_number(w, "time_to_first_token_p99_s", a->ttft_p99_s);
    jsonw_field_int(w, "runs", r->runs);
    jsonw_object_end(w);
}

static void decode_line(jsonw *w, const bench_infer_result *r, const bench_infer_at *a,
                        const bench_infer_decode *d)
{
    line_head(w, "decode");
    jsonw_field_int(w, "batch", d->batch);
    jsonw_field_int(w, "threads", a->threads);
    jsonw_field_number(w, "tokens_per_s", d->tokens_per_s);
    jsonw_field_number(w, "tokens_per_s_mean", d->tokens_per_s_mean);
    jsonw_field_number(w, "step_p50_ms", d->p50_ms);
    jsonw_field_number(w, "step_p99_ms", d->p99_ms);
    jsonw_field_int(w, "prompt_tokens", r->decode_prompt);
    jsonw_field_int(w, "steps", r->decode_steps);
    jsonw_field_int(w, "runs", r->runs);
    jsonw_object_end(w);
}

/* Bytes and FLOPs of one batch-1 decode token at the mean decode position. */
static void cost_fill(bench_infer_result *r, const model_config *c, double weight_bytes, long l3_bytes)
{
    int pos = r->decode_prompt + r->decode_steps / 2;
    r->weight_bytes = weight_bytes;
    r->kv_bytes_per_token = 2.0 * sizeof(float) * c->n_layers * (pos + 1) * c->n_kv_heads *
                            ((double)c->d_model / c->n_heads);
    r->flops_per_token = infer_flops_per_token(c, pos);
    r->weights_fit_l3 = l3_bytes > 0 && weight_bytes < (double)l3_bytes;
}

/* The bound's bandwidth at a's thread count (the team is set to it): the
 * read probe's or DRAM's, as bench_infer_bandwidth_choice says. */
static int bound_bandwidth(const bench_infer_options *o, const bench_infer_result *r, bench_infer_at *a,
                           double dram_gbs, tempo_error *err)
{
    double bytes = r->weight_bytes + r->kv_bytes_per_token, mib = bytes / (1024.0 * 1024);
    a->dram_gbs = dram_gbs;
    a->read_gbs = 0;
    if (o->read_probe_seconds > 0 && bytes <= BENCH_INFER_PROBE_MAX_BYTES) {
        cpu_info ci;
        cpu_info_query(&ci);
        a->read_gbs = peak_read_gbs(cpu_kernel_path_select(&ci), (size_t)bytes, a->threads,
                                    o->read_probe_seconds, err);
        if (a->read_gbs < 0)
            return tempo_error_prefix(err, "bench infer");
    }
    switch (bench_infer_bandwidth_choice(bytes, o->l3_bytes, a->read_gbs, dram_gbs)) {
    case BENCH_INFER_BW_CACHE:
        a->bandwidth_gbs = a->read_gbs;
        snprintf(a->bandwidth_source, sizeof a->bandwidth_source,
                 "cache: read of a %.1f MiB buffer now (fits the %.0f MiB L3)", mib, o->l3_bytes / 1048576.0);
        break;
    case BENCH_INFER_BW_READ_FASTER:
        a->bandwidth_gbs = a->read_gbs;
        snprintf(a->bandwidth_source, sizeof a->bandwidth_source,
                 "cache: read of a %.1f MiB buffer now (faster than DRAM: a cache larger than the "
                 "stated %.0f MiB L3 holds it)", mib, o->l3_bytes / 1048576.0);
        break;
    default:
        a->bandwidth_gbs = dram_gbs;
        snprintf(a->bandwidth_source, sizeof a->bandwidth_source, "DRAM: %s", r->dram_source);
        break;
    }
    return 0;
}

static void bound_fill(const bench_infer_result *r, bench_infer_at *a, double gflops)
{
    double gbs = a->bandwidth_gbs;
    a->peak_gflops = gflops;
    a->bandwidth_bound = gbs > 0 ? gbs * 1e9 / (r->weight_bytes + r->kv_bytes_per_token) : NAN;
    a->flop_bound = gflops > 0 ? gflops * 1e9 / r->flops_per_token : NAN;
    int mem = !isnan(a->bandwidth_bound) && (isnan(a->flop_bound) || a->bandwidth_bound <= a->flop_bound);
    a->bound = mem ? a->bandwidth_bound : a->flop_bound;
    a->bound_kind = mem ? "memory" : "compute";
    a->ratio = a->n_decode ? a->decode[0].tokens_per_s / a->bound : NAN;
}

static void bound_line(jsonw *w, const bench_infer_result *r, const bench_infer_at *a)
{
    line_head(w, "bound");
    jsonw_field_int(w, "threads", a->threads);
    jsonw_field_number(w, "weight_bytes", r->weight_bytes);
    jsonw_field_number(w, "kv_bytes_per_token", r->kv_bytes_per_token);
    jsonw_field_number(w, "bandwidth_gbs", a->bandwidth_gbs);
    jsonw_field_string(w, "bandwidth_source", a->bandwidth_source);
    jsonw_field_number(w, "dram_bandwidth_gbs", a->dram_gbs);
    jsonw_field_number(w, "read_bandwidth_gbs", a->read_gbs > 0 ? a->read_gbs : NAN);
    jsonw_field_number(w, "bandwidth_bound_tokens_per_s", a->bandwidth_bound);
    jsonw_field_number(w, "flops_per_token", r->flops_per_token);
    jsonw_field_number(w, "peak_gflops", a->peak_gflops);
    jsonw_field_number(w, "flop_bound_tokens_per_s", a->flop_bound);
    jsonw_field_string(w, "bound_kind", a->bound_kind);
    jsonw_field_number(w, "bound_tokens_per_s", a->bound);
    jsonw_field_number(w, "decode_batch1_tokens_per_s", a->n_decode ? a->decode[0].tokens_per_s : NAN);
    jsonw_field_number(w, "ratio", a->ratio);
    jsonw_field_bool(w, "weights_fit_l3", r->weights_fit_l3);
    jsonw_object_end(w);
}

/* Buffers shared by the measurements. */
typedef struct {
    infer_engine *e;
    infer_cache kc;
    int32_t *prompt, *next;
    float *z;
    infer_chunk *ch;
    double *lat;
} bench_bufs;

/* Prefill and decode at the current thread count into a. */
static int measure_at(bench_bufs *bb, const bench_infer_options *o, bench_infer_result *r,
                      bench_infer_at *a, int maxB, strbuf *line, tempo_error *err)
{
    int runs = r->runs, steps = r->decode_steps, P = r->prompt_tokens, P0 = r->decode_prompt;
    if (measure_prefill(bb->e, &bb->kc, bb->prompt, P, runs, bb->z, bb->lat, err))
        return -1;
    a->ttft_p50_s = bench_percentile(bb->lat, runs, 0.5);
    a->ttft_p99_s = bench_percentile(bb->lat, runs, 0.99);
    a->prefill_tokens_per_s = P / a->ttft_p50_s;
    jsonw w;
    line_begin(&w, line);
    prefill_line(&w, r, a);
    if (emit(o, &w, err))
        return -1;
    /* decode at growing batches; stop early once throughput has fallen twice */
    int worse = 0;
    for (int B = 1; B <= maxB && a->n_decode < BENCH_INFER_MAX_BATCHES && worse < 2; B *= 2) {
        double total;
        if (measure_decode(bb->e, &bb->kc, bb->prompt, P0, B, steps, runs, bb->z, bb->next, bb->ch,
                           bb->lat, &total, err))
            return -1;
        bench_infer_decode *d = &a->decode[a->n_decode++];
        d->batch = B;
        d->tokens_per_s_mean = (double)B * steps * runs / total;
        d->p50_ms = 1e3 * bench_percentile(bb->lat, runs * steps, 0.5);
        d->p99_ms = 1e3 * bench_percentile(bb->lat, runs * steps, 0.99);
        d->tokens_per_s = B / (d->p50_ms * 1e-3);
        if (d->tokens_per_s > a->best_tokens_per_s) {
            a->best_tokens_per_s = d->tokens_per_s;
            a->best_batch = B;
            worse = 0;
        } else {
            worse++;
        }
        line_begin(&w, line);
        decode_line(&w, r, a, d);
        if (emit(o, &w, err))
            return -1;
    }
    return 0;
}

/* The run's sizes from the options and the model's context: 0 or a usage error. */
static int plan(const bench_infer_options *o, int ctx, bench_infer_result *r, int *maxB, tempo_error *err)
{
    int P = o->prompt > 0 ? (o->prompt < ctx ? o->prompt : ctx) : (ctx < 512 ? ctx : 512);
    int P0 = ctx / 4 < 32 ? (ctx / 4 > 0 ? ctx / 4 : 1) : 32;
    int steps = o->decode_steps > 0 ? o->decode_steps : 64;
    *maxB = o->max_batch > 0 ? (o->max_batch < 1024 ? o->max_batch : 1024) : 64;
    if (steps > ctx - P0)
        steps = ctx - P0;
    if (steps < 1)
        return tempo_usage(err, "bench infer: context %d too short to decode", ctx);
    r->context = ctx;
    r->prompt_tokens = P;
    r->runs = o->runs > 0 ? o->runs : 5;
    r->decode_prompt = P0;
    r->decode_steps = steps;
    r->train_tokens_per_s = o->train_tokens_per_s;
    r->dram_source = o->bandwidth_source ? o->bandwidth_source : "unknown";
    return 0;
}

static void bufs_free(bench_bufs *bb)
{
    infer_cache_free(&bb->kc);
    infer_engine_free(bb->e);
    free(bb->prompt);
    free(bb->next);
    free(bb->z);
    free(bb->ch);
    free(bb->lat);
}

/* The engine, a cache of maxB slots, and random prompts from a fixed seed. */
static int bufs_create(bench_bufs *bb, model *m, const bench_infer_result *r, int maxB, tempo_error *err)
{
    const model_config *c = model_get_config(m);
    int P = r->prompt_tokens, P0 = r->decode_prompt, V = c->vocab_size;
    int rows = P > maxB * P0 ? P : maxB * P0;
    size_t n_prompt = (size_t)(P > P0 + maxB ? P : P0 + maxB);
    memset(bb, 0, sizeof *bb);
    bb->prompt = malloc(sizeof(int32_t) * n_prompt);
    bb->next = malloc(sizeof(int32_t) * (size_t)maxB);
    bb->z = malloc(sizeof(float) * (size_t)maxB * V);
    bb->ch = malloc(sizeof(infer_chunk) * (size_t)maxB);
    bb->lat = malloc(sizeof(double) * (size_t)(r->runs * r->decode_steps + r->runs));
    if (!bb->prompt || !bb->next || !bb->z || !bb->ch || !bb->lat)
        return tempo_fail(err, "bench infer: out of memory");
    if (infer_engine_create(&bb->e, m, rows, err) || infer_cache_create(&bb->kc, c, maxB, 0, err))
        return -1;
    rng_state g;
    rng_seed(&g, 12345);
    for (size_t i = 0; i < n_prompt; i++)
        bb->prompt[i] = (int32_t)rng_below(&g, (uint64_t)V);
    return 0;
}

/* The best thread count per figure. */
static void pick_best(bench_infer_result *r)
{
    for (int k = 1; k < r->n_at; k++) {
        const bench_infer_at *a = &r->at[k];
        if (a->prefill_tokens_per_s > r->at[r->best_prefill].prefill_tokens_per_s)
            r->best_prefill = k;
        if (a->n_decode && a->decode[0].tokens_per_s > r->at[r->best_decode1].decode[0].tokens_per_s)
            r->best_decode1 = k;
        if (a->best_tokens_per_s > r->at[r->best_batch_at].best_tokens_per_s)
            r->best_batch_at = k;
    }
}

int bench_infer_run(model *m, const bench_infer_options *o, bench_infer_result *r,
                    tempo_error *err)
{
    memset(r, 0, sizeof *r);
    const model_config *c = model_get_config(m);
    int maxB;
    if (plan(o, c->context, r, &maxB, err))
        return -1;
    bench_bufs bb;
    int rc = bufs_create(&bb, m, r, maxB, err);
    if (!rc)
        cost_fill(r, c, (double)infer_engine_weight_bytes(bb.e), o->l3_bytes);
    int n_threads = o->n_threads > 0 ? (o->n_threads < 4 ? o->n_threads : 4) : 1;
    int saved = omp_get_max_threads();
    sysload_sample load0;
    sysload_sample_now(&load0);
    strbuf line = {0};
    for (int k = 0; !rc && k < n_threads; k++) {
        bench_infer_at *a = &r->at[r->n_at++];
        a->threads = o->n_threads > 0 ? o->threads[k] : saved;
        omp_set_num_threads(a->threads);
        rc = measure_at(&bb, o, r, a, maxB, &line, err);
        if (!rc)
            rc = bound_bandwidth(o, r, a, o->n_threads > 0 ? o->bandwidth_gbs[k] : 0, err);
        if (!rc) {
            bound_fill(r, a, o->n_threads > 0 ? o->peak_gflops[k] : 0);
            jsonw w;
            line_begin(&w, &line);
            bound_line(&w, r, a);
            rc = emit(o, &w, err);
        }
    }
    omp_set_num_threads(saved);
    sysload_since(&load0, &r->load);
    pick_best(r);
    strbuf_free(&line);
    bufs_free(&bb);
    return rc;
}

void bench_infer_summary_fields(jsonw *w, const bench_infer_result *r)
{
    const bench_infer_at *p = &r->at[r->best_prefill], *d = &r->at[r->best_decode1],
                         *g = &r->at[r->best_batch_at];
    int have = r->n_at > 0 && d->n_decode > 0;
    jsonw_field_string(w, "bench", "infer");
    jsonw_field_string(w, "what", "summary");
    jsonw_field_number(w, "prefill_tokens_per_s", r->n_at ? p->prefill_tokens_per_s : NAN);
    jsonw_field_int(w, "prefill_threads", r->n_at ? p->threads : 0);
    jsonw_field_int(w, "prompt_tokens", r->prompt_tokens);
    jsonw_field_number(w, "time_to_first_token_s", r->n_at ? p->ttft_p50_s : NAN);
    jsonw_field_number(w, "time_to_first_token_p99_s", r->n_at ? p->ttft_p99_s : NAN);
    jsonw_field_number(w, "decode_tokens_per_s", have ? d->decode[0].tokens_per_s : NAN);
    jsonw_field_number(w, "decode_tokens_per_s_mean", have ? d->decode[0].tokens_per_s_mean : NAN);
    jsonw_field_int(w, "decode_threads", have ? d->threads : 0);
    jsonw_field_number(w, "decode_p50_ms", have ? d->decode[0].p50_ms : NAN);
    jsonw_field_number(w, "decode_p99_ms", have ? d->decode[0].p99_ms : NAN);
    jsonw_field_int(w, "best_batch", r->n_at ? g->best_batch : 0);
    jsonw_field_int(w, "best_batch_threads", r->n_at ? g->threads : 0);
    jsonw_field_number(w, "best_decode_tokens_per_s", r->n_at ? g->best_tokens_per_s : NAN);
    jsonw_field_string(w, "bound_kind", have && d->bound_kind ? d->bound_kind : "none");
    jsonw_field_string(w, "bandwidth_source", have ? d->bandwidth_source : NULL);
    jsonw_field_number(w, "bound_tokens_per_s", have ? d->bound : NAN);
    jsonw_field_number(w, "bandwidth_bound_tokens_per_s", have ? d->bandwidth_bound : NAN);
    jsonw_field_number(w, "flop_bound_tokens_per_s", have ? d->flop_bound : NAN);
    jsonw_field_number(w, "ratio", have ? d->ratio : NAN);
    if (r->train_tokens_per_s > 0 && r->n_at) {
        jsonw_field_number(w, "train_tokens_per_s", r->train_tokens_per_s);
        jsonw_field_number(w, "prefill_vs_train", p->prefill_tokens_per_s / r->train_tokens_per_s);
    }
    jsonw_field_bool(w, "weights_fit_l3", r->weights_fit_l3);
    jsonw_field_int(w, "context", r->context);
    jsonw_field_number(w, "other_load_cores", r->load.other_cores);
    jsonw_field_bool(w, "contended", r->load.contended);
}

int bench_infer_summary_json(strbuf *out, const bench_infer_result *r, tempo_error *err)
{
    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    bench_infer_summary_fields(&w, r);
    jsonw_object_end(&w);
    if (jsonw_finish(&w, err))
        return tempo_error_prefix(err, "bench infer");
    return 0;
}

double bench_infer_measure_bandwidth(int threads, double seconds)
{
    peak_triad_arrays t;
    tempo_error err;
    if (peak_triad_alloc(&t, (size_t)64 << 20, threads, &err))
        return 0;
    double g = peak_triad_gbs(&t, threads, seconds);
    peak_triad_free(&t);
    return g;
}

void bench_infer_scorecard(const bench_infer_result *r, const char *inference_json, eval_scorecard *s)
{
    const bench_infer_at *bp = &r->at[r->best_prefill], *bd = &r->at[r->best_decode1], *bg = &r->at[r->best_batch_at];
    s->decode_tokens_per_s = bd->n_decode ? bd->decode[0].tokens_per_s : NAN;
    s->prefill_tokens_per_s = bp->prefill_tokens_per_s;
    s->time_to_first_token_s = bp->ttft_p50_s;
    s->best_batch = bg->best_batch;
    s->best_decode_tokens_per_s = bg->best_tokens_per_s;
    s->inference_json = inference_json;
}
