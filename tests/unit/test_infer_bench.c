/* test_infer_bench.c - the inference benchmark's bookkeeping, never its
 * speed (no timed assertions): weight bytes and FLOPs per token by hand for
 * a tied and an untied model; a tiny run fills every figure, emits its JSON
 * lines (prefill, one decode line per batch, bound) as they come, and the
 * summary's bound equals bandwidth / bytes per token and peak / FLOPs for
 * the thread count its decode figure came from; the bound's bandwidth is the
 * read probe's when a token's bytes fit the cache (or the probe beats DRAM),
 * DRAM's otherwise. */
#include "test.h"

#include "bench/bench_infer.h"
#include "core/json.h"
#include "infer/engine.h"

static model_config config(int tied)
{
    model_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = 30;
    c.context = 24;
    c.d_model = 16;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.d_ff = 40;
    c.mlp = MLP_SWIGLU;
    c.qk_norm = 1;
    c.tied_head = tied;
    c.rope_theta = 10000;
    c.norm_eps = 1e-5f;
    c.init_std = 0.1f;
    return c;
}

static void test_weight_bytes_and_flops(void)
{
    for (int tied = 0; tied <= 1; tied++) {
        model_config c = config(tied);
        model *m;
        tempo_error err;
        CHECK(model_create(&m, &c, 1, &err) == 0);
        infer_engine *e;
        CHECK(infer_engine_create(&e, m, 8, &err) == 0);
        /* every parameter is read per token, except the embedding table when the
         * head is untied (one row per token, not counted) */
        size_t want = model_num_params(m) - (tied ? 0 : (size_t)30 * 16);
        CHECK(infer_engine_weight_bytes(e) == 4 * want);
        infer_engine_free(e);
        model_free(m);
    }
    model_config c = config(1);
    /* per layer: wq 16x16, wk, wv 8x16, wo 16x16, up, gate, down 40x16 -> 256+128+128+256+1920 */
    double mats = 2 * (256 + 128 + 128 + 256 + 3 * 640.0) + 30 * 16;
    CHECK_NEAR(infer_flops_per_token(&c, 0), 2 * mats + 4.0 * 2 * 1 * 16, 1e-9);
    CHECK_NEAR(infer_flops_per_token(&c, 9), 2 * mats + 4.0 * 2 * 10 * 16, 1e-9);
}

typedef struct {
    int n, prefill, decode, bound, bad_json;
} lines;

static void on_line(void *user, const char *json)
{
    lines *l = user;
    l->n++;
    json_value *v = NULL;
    tempo_error err;
    if (json_parse(json, strlen(json), &v, &err)) {
        l->bad_json++;
        return;
    }
    const char *what = json_get_string(v, "what");
    l->prefill += what && !strcmp(what, "prefill");
    l->decode += what && !strcmp(what, "decode");
    l->bound += what && !strcmp(what, "bound");
    json_free(v);
}

/* Options for a tiny run at one thread: 10 GB/s DRAM, 50 GFLOP/s. */
static void tiny_options(bench_infer_options *o, lines *l)
{
    bench_infer_options_default(o);
    o->runs = 2;
    o->decode_steps = 3;
    o->max_batch = 4;
    o->n_threads = 1;
    o->threads[0] = 1;
    o->bandwidth_gbs[0] = 10;
    o->peak_gflops[0] = 50;
    o->bandwidth_source = "test";
    o->line = on_line;
    o->user = l;
}

static void test_tiny_run(void)
{
    model_config c = config(0);
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, 1, &err) == 0);
    model_init(m, 3);
    bench_infer_options o;
    lines l = {0};
    tiny_options(&o, &l);
    o.read_probe_seconds = 0;   /* DRAM only: the bound from the figures given */
    bench_infer_result r;
    CHECK(bench_infer_run(m, &o, &r, &err) == 0);
    CHECK(r.n_at == 1 && r.at[0].threads == 1);
    CHECK(r.prompt_tokens == 24 && r.decode_prompt == 6 && r.decode_steps == 3);
    const bench_infer_at *a = &r.at[0];
    CHECK(a->n_decode >= 2 && a->decode[0].batch == 1 && a->decode[1].batch == 2);
    CHECK(a->prefill_tokens_per_s > 0 && a->ttft_p50_s > 0 && a->ttft_p99_s >= a->ttft_p50_s);
    for (int i = 0; i < a->n_decode; i++)
        CHECK(a->decode[i].tokens_per_s > 0 && a->decode[i].p99_ms >= a->decode[i].p50_ms);
    CHECK(l.bad_json == 0 && l.prefill == 1 && l.decode == a->n_decode && l.bound == 1);
    double bytes = r.weight_bytes + r.kv_bytes_per_token;
    /* KV bytes at the mean decode position 6 + 3/2 = 7: 2 x 4 B x 2 layers x 8 positions x 8 */
    CHECK_NEAR(r.kv_bytes_per_token, 2.0 * 4 * 2 * 8 * 8, 1e-9);
    CHECK(a->read_gbs == 0 && strcmp(a->bandwidth_source, "DRAM: test") == 0);
    CHECK_NEAR(a->bandwidth_bound, 10e9 / bytes, 1e-6);
    CHECK_NEAR(a->flop_bound, 50e9 / r.flops_per_token, 1e-6);
    CHECK_NEAR(a->bound, fmin(a->bandwidth_bound, a->flop_bound), 1e-6);
    CHECK_NEAR(a->ratio, a->decode[0].tokens_per_s / a->bound, 1e-9);
    strbuf js = {0};
    CHECK(bench_infer_summary_json(&js, &r, &err) == 0);
    json_value *v = NULL;
    CHECK(json_parse(js.data, js.len, &v, &err) == 0);
    if (v) {
        CHECK_NEAR(json_get_number(v, "decode_tokens_per_s", -1), a->decode[0].tokens_per_s, 1e-9);
        CHECK(json_get_number(v, "decode_threads", -1) == 1);
        CHECK_NEAR(json_get_number(v, "bound_tokens_per_s", -1), a->bound, 1e-6);
        CHECK(json_get_string(v, "bandwidth_source") && !strcmp(json_get_string(v, "bandwidth_source"), "DRAM: test"));
        json_free(v);
    }
    strbuf_free(&js);
    model_free(m);
}

/* Cache or DRAM by size: a token's bytes within the cache are read at the
 * probe's rate whatever DRAM's; beyond it only a probe faster than DRAM
 * (a cache larger than stated) replaces DRAM; no probe, no cache figure. */
static void test_bandwidth_choice(void)
{
    long l3 = 32L << 20;
    CHECK(bench_infer_bandwidth_choice(10e6, l3, 50, 20) == BENCH_INFER_BW_CACHE);
    CHECK(bench_infer_bandwidth_choice(10e6, l3, 15, 20) == BENCH_INFER_BW_CACHE);
    CHECK(bench_infer_bandwidth_choice((double)l3, l3, 50, 20) == BENCH_INFER_BW_CACHE);
    CHECK(bench_infer_bandwidth_choice((double)l3 + 1, l3, 15, 20) == BENCH_INFER_BW_DRAM);
    CHECK(bench_infer_bandwidth_choice(100e6, l3, 20, 20) == BENCH_INFER_BW_DRAM);
    CHECK(bench_infer_bandwidth_choice(100e6, l3, 50, 20) == BENCH_INFER_BW_READ_FASTER);
    CHECK(bench_infer_bandwidth_choice(10e6, 0, 50, 20) == BENCH_INFER_BW_READ_FASTER);
    CHECK(bench_infer_bandwidth_choice(10e6, 0, 15, 20) == BENCH_INFER_BW_DRAM);
    CHECK(bench_infer_bandwidth_choice(10e6, l3, 0, 20) == BENCH_INFER_BW_DRAM);
    CHECK(bench_infer_bandwidth_choice(10e6, l3, NAN, 20) == BENCH_INFER_BW_DRAM);
}

/* The probe in a run: the tiny model's bytes within a stated 1 MiB L3 are
 * bounded by the probe's read rate; with a stated L3 smaller than them and a
 * DRAM figure no read reaches, by DRAM (the probe still ran). */
static void test_tiny_run_probe(void)
{
    model_config c = config(0);
    model *m;
    tempo_error err;
    CHECK(model_create(&m, &c, 1, &err) == 0);
    model_init(m, 3);
    for (int fits = 1; fits >= 0; fits--) {
        bench_infer_options o;
        lines l = {0};
        tiny_options(&o, &l);
        o.read_probe_seconds = 0.01;
        o.l3_bytes = fits ? 1L << 20 : 1000;
        o.bandwidth_gbs[0] = fits ? 10 : 1e9;
        bench_infer_result r;
        CHECK(bench_infer_run(m, &o, &r, &err) == 0);
        const bench_infer_at *a = &r.at[0];
        double bytes = r.weight_bytes + r.kv_bytes_per_token;
        CHECK(bytes > 1000 && bytes < (1 << 20));
        CHECK(a->read_gbs > 0 && a->dram_gbs == o.bandwidth_gbs[0]);
        CHECK_MSG(!strncmp(a->bandwidth_source, fits ? "cache: " : "DRAM: ", 6), "%s", a->bandwidth_source);
        CHECK(a->bandwidth_gbs == (fits ? a->read_gbs : 1e9));
        CHECK_NEAR(a->bandwidth_bound, a->bandwidth_gbs * 1e9 / bytes, 1e-6 * a->bandwidth_bound);
        CHECK(l.bad_json == 0 && l.bound == 1);
    }
    model_free(m);
}

int main(void)
{
    RUN(test_weight_bytes_and_flops);
    RUN(test_tiny_run);
    RUN(test_bandwidth_choice);
    RUN(test_tiny_run_probe);
    return test_summary("test_infer_bench");
}
