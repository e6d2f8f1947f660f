/* bench_infer.c - prefill / decode / bound measurements of the inference
 * engine (see bench_infer.h). Prompts are random token ids from a fixed
 * seed: speed does not depend on what the tokens say. */
#include "bench/bench_infer.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_timing.h"
#include "bench/peak.h"
#include "core/rng.h"
#include "core/timer.h"
#include "infer/engine.h"

void bench_infer_options_default(bench_infer_options *o)
{
    memset(o, 0, sizeof *o);
    o->runs = 5;
    o->max_batch = 64;
}

static void emit(const bench_infer_options *o, strbuf *b)
{
    if (o->line && b->data && !b->oom)
        o->line(o->user, b->data);
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
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

static void decode_line(strbuf *b, const bench_infer_result *r, const bench_infer_at *a,
                        const bench_infer_decode *d)
{
    strbuf_printf(b, "{\"bench\":\"infer\",\"what\":\"decode\",\"batch\":%d,\"threads\":%d,\"tokens_per_s\":",
                  d->batch, a->threads);
    strbuf_json_number(b, d->tokens_per_s);
    strbuf_puts(b, ",\"tokens_per_s_mean\":");
    strbuf_json_number(b, d->tokens_per_s_mean);
    strbuf_puts(b, ",\"step_p50_ms\":");
    strbuf_json_number(b, d->p50_ms);
    strbuf_puts(b, ",\"step_p99_ms\":");
    strbuf_json_number(b, d->p99_ms);
    strbuf_printf(b, ",\"prompt_tokens\":%d,\"steps\":%d,\"runs\":%d}", r->decode_prompt, r->decode_steps,
                  r->runs);
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

static void bound_fill(const bench_infer_result *r, bench_infer_at *a, double gbs, double gflops)
{
    a->bandwidth_gbs = gbs;
    a->peak_gflops = gflops;
    a->bandwidth_bound = gbs > 0 ? gbs * 1e9 / (r->weight_bytes + r->kv_bytes_per_token) : NAN;
    a->flop_bound = gflops > 0 ? gflops * 1e9 / r->flops_per_token : NAN;
    int mem = !isnan(a->bandwidth_bound) && (isnan(a->flop_bound) || a->bandwidth_bound <= a->flop_bound);
    a->bound = mem ? a->bandwidth_bound : a->flop_bound;
    a->bound_kind = mem ? "memory" : "compute";
    a->ratio = a->n_decode ? a->decode[0].tokens_per_s / a->bound : NAN;
}

static void bound_line(strbuf *b, const bench_infer_result *r, const bench_infer_at *a)
{
    strbuf_printf(b, "{\"bench\":\"infer\",\"what\":\"bound\",\"threads\":%d,\"weight_bytes\":", a->threads);
    strbuf_json_number(b, r->weight_bytes);
    strbuf_puts(b, ",\"kv_bytes_per_token\":");
    strbuf_json_number(b, r->kv_bytes_per_token);
    strbuf_puts(b, ",\"bandwidth_gbs\":");
    strbuf_json_number(b, a->bandwidth_gbs);
    strbuf_printf(b, ",\"bandwidth_source\":\"%s\",\"bandwidth_bound_tokens_per_s\":", r->bandwidth_source);
    strbuf_json_number(b, a->bandwidth_bound);
    strbuf_puts(b, ",\"flops_per_token\":");
    strbuf_json_number(b, r->flops_per_token);
    strbuf_puts(b, ",\"peak_gflops\":");
    strbuf_json_number(b, a->peak_gflops);
    strbuf_puts(b, ",\"flop_bound_tokens_per_s\":");
    strbuf_json_number(b, a->flop_bound);
    strbuf_printf(b, ",\"bound_kind\":\"%s\",\"bound_tokens_per_s\":", a->bound_kind);
    strbuf_json_number(b, a->bound);
    strbuf_puts(b, ",\"decode_batch1_tokens_per_s\":");
    strbuf_json_number(b, a->n_decode ? a->decode[0].tokens_per_s : NAN);
    strbuf_puts(b, ",\"ratio\":");
    strbuf_json_number(b, a->ratio);
    strbuf_printf(b, ",\"weights_fit_l3\":%s}", r->weights_fit_l3 ? "true" : "false");
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
    strbuf_printf(line, "{\"bench\":\"infer\",\"what\":\"prefill\",\"prompt_tokens\":%d,\"threads\":%d,\"tokens_per_s\":",
                  P, a->threads);
    strbuf_json_number(line, a->prefill_tokens_per_s);
    strbuf_puts(line, ",\"time_to_first_token_s\":");
    strbuf_json_number(line, a->ttft_p50_s);
    strbuf_puts(line, ",\"time_to_first_token_p99_s\":");
    strbuf_json_number(line, a->ttft_p99_s);
    strbuf_printf(line, ",\"runs\":%d}", runs);
    emit(o, line);
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
        decode_line(line, r, a, d);
        emit(o, line);
    }
    return 0;
}

int bench_infer_run(model *m, const bench_infer_options *o, bench_infer_result *r,
                    tempo_error *err)
{
    memset(r, 0, sizeof *r);
    const model_config *c = model_get_config(m);
    int ctx = c->context, V = c->vocab_size;
    int runs = o->runs > 0 ? o->runs : 5;
    int P = o->prompt > 0 ? (o->prompt < ctx ? o->prompt : ctx) : (ctx < 512 ? ctx : 512);
    int maxB = o->max_batch > 0 ? (o->max_batch < 1024 ? o->max_batch : 1024) : 64;
    int P0 = ctx / 4 < 32 ? (ctx / 4 > 0 ? ctx / 4 : 1) : 32;
    int steps = o->decode_steps > 0 ? o->decode_steps : 64;
    if (steps > ctx - P0)
        steps = ctx - P0;
    if (steps < 1)
        return tempo_usage(err, "bench infer: context %d too short to decode", ctx);
    r->context = ctx;
    r->prompt_tokens = P;
    r->runs = runs;
    r->decode_prompt = P0;
    r->decode_steps = steps;
    r->train_tokens_per_s = o->train_tokens_per_s;
    r->bandwidth_source = o->bandwidth_source ? o->bandwidth_source : "unknown";
    int rows = P > maxB * P0 ? P : maxB * P0;
    size_t n_prompt = (size_t)(P > P0 + maxB ? P : P0 + maxB);
    bench_bufs bb;
    memset(&bb, 0, sizeof bb);
    bb.prompt = malloc(sizeof(int32_t) * n_prompt);
    bb.next = malloc(sizeof(int32_t) * (size_t)maxB);
    bb.z = malloc(sizeof(float) * (size_t)maxB * V);
    bb.ch = malloc(sizeof(infer_chunk) * (size_t)maxB);
    bb.lat = malloc(sizeof(double) * (size_t)(runs * steps + runs));
    int rc = 0;
    if (!bb.prompt || !bb.next || !bb.z || !bb.ch || !bb.lat)
        rc = tempo_fail(err, "bench infer: out of memory");
    if (!rc)
        rc = infer_engine_create(&bb.e, m, rows, err);
    if (!rc)
        rc = infer_cache_create(&bb.kc, c, maxB, 0, err);
    if (!rc) {
        rng_state g;
        rng_seed(&g, 12345);
        for (size_t i = 0; i < n_prompt; i++)
            bb.prompt[i] = (int32_t)rng_below(&g, (uint64_t)V);
        cost_fill(r, c, (double)infer_engine_weight_bytes(bb.e), o->l3_bytes);
    }
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
        if (!rc) {
            bound_fill(r, a, o->n_threads > 0 ? o->bandwidth_gbs[k] : 0, o->n_threads > 0 ? o->peak_gflops[k] : 0);
            bound_line(&line, r, a);
            emit(o, &line);
        }
    }
    omp_set_num_threads(saved);
    sysload_since(&load0, &r->load);
    for (int k = 1; k < r->n_at; k++) {
        const bench_infer_at *a = &r->at[k];
        if (a->prefill_tokens_per_s > r->at[r->best_prefill].prefill_tokens_per_s)
            r->best_prefill = k;
        if (a->n_decode && a->decode[0].tokens_per_s > r->at[r->best_decode1].decode[0].tokens_per_s)
            r->best_decode1 = k;
        if (a->best_tokens_per_s > r->at[r->best_batch_at].best_tokens_per_s)
            r->best_batch_at = k;
    }
    strbuf_free(&line);
    infer_cache_free(&bb.kc);
    infer_engine_free(bb.e);
    free(bb.prompt);
    free(bb.next);
    free(bb.z);
    free(bb.ch);
    free(bb.lat);
    return rc;
}

void bench_infer_summary_json(strbuf *b, const bench_infer_result *r)
{
    const bench_infer_at *p = &r->at[r->best_prefill], *d = &r->at[r->best_decode1],
                         *g = &r->at[r->best_batch_at];
    int have = r->n_at > 0 && d->n_decode > 0;
    strbuf_puts(b, "{\"bench\":\"infer\",\"what\":\"summary\",\"prefill_tokens_per_s\":");
    strbuf_json_number(b, r->n_at ? p->prefill_tokens_per_s : NAN);
    strbuf_printf(b, ",\"prefill_threads\":%d,\"prompt_tokens\":%d,\"time_to_first_token_s\":",
                  r->n_at ? p->threads : 0, r->prompt_tokens);
    strbuf_json_number(b, r->n_at ? p->ttft_p50_s : NAN);
    strbuf_puts(b, ",\"time_to_first_token_p99_s\":");
    strbuf_json_number(b, r->n_at ? p->ttft_p99_s : NAN);
    strbuf_puts(b, ",\"decode_tokens_per_s\":");
    strbuf_json_number(b, have ? d->decode[0].tokens_per_s : NAN);
    strbuf_puts(b, ",\"decode_tokens_per_s_mean\":");
    strbuf_json_number(b, have ? d->decode[0].tokens_per_s_mean : NAN);
    strbuf_printf(b, ",\"decode_threads\":%d,\"decode_p50_ms\":", have ? d->threads : 0);
    strbuf_json_number(b, have ? d->decode[0].p50_ms : NAN);
    strbuf_puts(b, ",\"decode_p99_ms\":");
    strbuf_json_number(b, have ? d->decode[0].p99_ms : NAN);
    strbuf_printf(b, ",\"best_batch\":%d,\"best_batch_threads\":%d,\"best_decode_tokens_per_s\":",
                  r->n_at ? g->best_batch : 0, r->n_at ? g->threads : 0);
    strbuf_json_number(b, r->n_at ? g->best_tokens_per_s : NAN);
    strbuf_printf(b, ",\"bound_kind\":\"%s\",\"bound_tokens_per_s\":", have && d->bound_kind ? d->bound_kind : "none");
    strbuf_json_number(b, have ? d->bound : NAN);
    strbuf_puts(b, ",\"bandwidth_bound_tokens_per_s\":");
    strbuf_json_number(b, have ? d->bandwidth_bound : NAN);
    strbuf_puts(b, ",\"flop_bound_tokens_per_s\":");
    strbuf_json_number(b, have ? d->flop_bound : NAN);
    strbuf_puts(b, ",\"ratio\":");
    strbuf_json_number(b, have ? d->ratio : NAN);
    if (r->train_tokens_per_s > 0 && r->n_at) {
        strbuf_puts(b, ",\"train_tokens_per_s\":");
        strbuf_json_number(b, r->train_tokens_per_s);
        strbuf_puts(b, ",\"prefill_vs_train\":");
        strbuf_json_number(b, p->prefill_tokens_per_s / r->train_tokens_per_s);
    }
    strbuf_printf(b, ",\"weights_fit_l3\":%s,\"context\":%d,\"other_load_cores\":",
                  r->weights_fit_l3 ? "true" : "false", r->context);
    strbuf_json_number(b, r->load.other_cores);
    strbuf_printf(b, ",\"contended\":%s}", r->load.contended ? "true" : "false");
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
