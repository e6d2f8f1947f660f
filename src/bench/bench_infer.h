/* bench_infer.h - the inference benchmark behind `tempo bench infer`: how
 * fast the KV-cache engine (infer/engine.h) runs a trained model, and how
 * close that is to what the chip allows. Figures, never pass/fail.
 *
 *   prefill: a prompt of min(512, context) random tokens into an empty
 *            cache slot, then the first token's logits and greedy choice:
 *            time to first token (p50, p99 over the runs) and prompt
 *            tokens/s (from the p50);
 *   decode:  at batch B = 1, 2, 4, ... (up to max_batch), B slots each
 *            holding a short prompt, then decode_steps greedy steps of one
 *            token per slot (forward, logits, argmax): tokens/s = B x steps
 *            / time, and the per-step latency p50/p99 over all steps of all
 *            runs (at B = 1 the per-token latency);
 *   bound:   decode at batch 1 reads every weight once per token (plus the
 *            KV cache), so tokens/s <= bandwidth / bytes per token; and
 *            <= peak FLOP/s / FLOPs per token. Both are printed; the bound
 *            is the smaller, and the ratio reached is decode(1) / bound.
 *            The bandwidth is where those bytes are read from: a working
 *            set that fits in the cache is read at the cache's rate, so at
 *            each thread count a buffer of that size is read at bench time
 *            (peak_read_gbs) and its rate is the bandwidth when the bytes
 *            fit in L3 or when it beats DRAM (a cache larger than the
 *            profile says: a VM can hide the cache sizes); otherwise the
 *            DRAM figure (the hardware profile's triad). bandwidth_source
 *            says which.
 * Each measurement runs at every thread count asked for (default: 1 and all
 * cores): on a machine shared with other work a second thread can cost more
 * in waiting than it gives, so each line says its thread count and the
 * summary takes the best per figure, saying at which count.
 * Printing belongs to the CLI; the JSON lines are built here. */
#ifndef TEMPO_BENCH_INFER_H
#define TEMPO_BENCH_INFER_H

#include "bench/sysload.h"
#include "core/error.h"
#include "core/json_write.h"
#include "eval/eval_result.h"
#include "model/model.h"

typedef struct {
    int prompt;        /* prefill tokens; 0 = min(512, context) */
    int runs;          /* repetitions of each measurement (>= 1; default 5) */
    int decode_steps;  /* steps per decode run; 0 = min(64, context - its prompt) */
    int max_batch;     /* largest decode batch (default 64) */
    int n_threads;        /* thread counts to measure at (1..BENCH_INFER_MAX_THREADS) */
    int threads[4];
    double bandwidth_gbs[4]; /* measured DRAM bandwidth at each thread count */
    const char *bandwidth_source; /* where they come from, e.g. "hardware profile triad" */
    /* > 0: at each thread count, read a buffer of a token's bytes (weights +
     * KV, at most BENCH_INFER_PROBE_MAX_BYTES) for about this long and bound
     * by its rate when it is a cache's (default 0.3 s); 0: DRAM only. */
    double read_probe_seconds;
    double peak_gflops[4];   /* measured fp32 FMA peak at each thread count */
    double train_tokens_per_s; /* the run's training speed, for comparison (0: unknown) */
    long l3_bytes;        /* for the cache-or-DRAM choice and the "weights fit in L3" flag (0: unknown) */
    /* Called with each finished JSON line (no newline) as soon as it exists,
     * so a caller can stream them; may be NULL. */
    void (*line)(void *user, const char *json);
    void *user;
} bench_infer_options;

void bench_infer_options_default(bench_infer_options *o);

/* No cache is larger: beyond this the read probe is not run (its buffer
 * would double a large model's memory for a figure that is DRAM's). */
#define BENCH_INFER_PROBE_MAX_BYTES (512.0 * 1024 * 1024)

typedef enum {
    BENCH_INFER_BW_DRAM,        /* the DRAM figure of the options */
    BENCH_INFER_BW_CACHE,       /* the read probe: the bytes fit in L3 */
    BENCH_INFER_BW_READ_FASTER, /* the read probe: larger than the L3 the profile
                                   states, yet read faster than DRAM */
} bench_infer_bandwidth;

/* Which bandwidth bounds a decode token that reads `bytes`: the probe's
 * read_gbs (0: not measured) when the bytes fit in cache_bytes (> 0:
 * known) or read_gbs beats dram_gbs; DRAM otherwise. */
bench_infer_bandwidth bench_infer_bandwidth_choice(double bytes, long cache_bytes, double read_gbs,
                                                   double dram_gbs);

#define BENCH_INFER_MAX_BATCHES 12

typedef struct {
    int batch;
    double tokens_per_s;      /* batch / p50 step time */
    double tokens_per_s_mean; /* batch x steps / total step time */
    double p50_ms, p99_ms;    /* per step */
} bench_infer_decode;

/* Everything measured at one thread count. */
typedef struct {
    int threads;
    double prefill_tokens_per_s, ttft_p50_s, ttft_p99_s; /* tokens/s = prompt / p50 */
    int n_decode;
    bench_infer_decode decode[BENCH_INFER_MAX_BATCHES];
    int best_batch;
    double best_tokens_per_s;
    double bandwidth_gbs, peak_gflops;  /* the bound's: bandwidth_gbs is dram_gbs or read_gbs */
    double dram_gbs, read_gbs;          /* read_gbs: the probe's, 0 when not run */
    char bandwidth_source[128];
    double bandwidth_bound, flop_bound, bound, ratio;  /* tokens/s; ratio = decode(1) / bound */
    const char *bound_kind;                            /* "memory" or "compute" */
} bench_infer_at;

typedef struct {
    int context, prompt_tokens, runs, decode_prompt, decode_steps;
    double weight_bytes, kv_bytes_per_token, flops_per_token; /* at batch 1, mean decode position */
    const char *dram_source;   /* the options' bandwidth_source */
    double train_tokens_per_s;
    int weights_fit_l3;
    int n_at;
    bench_infer_at at[4];
    /* the best of the thread counts, per figure (index into at[]) */
    int best_prefill, best_decode1, best_batch_at;
    sysload_report load;
} bench_infer_result;

/* Run the benchmark on model m (its weights as loaded; m is not changed).
 * Uses the OpenMP team as it is. Returns 0, or -1 with err set. */
int bench_infer_run(model *m, const bench_infer_options *o, bench_infer_result *r,
                    tempo_error *err);

/* The summary's members, into the object open in w: "bench":"infer","what":
 * "summary", prefill_tokens_per_s, time_to_first_token_s, decode_tokens_per_s
 * (batch 1), decode_p50_ms, decode_p99_ms, best_batch,
 * best_decode_tokens_per_s (each the best over the thread counts, with
 * *_threads saying where), bound_tokens_per_s, bandwidth_source and ratio
 * for the batch-1 decode's thread count, train_tokens_per_s and
 * prefill_vs_train when known, load. A caller may add members of its own
 * before closing it. */
void bench_infer_summary_fields(jsonw *w, const bench_infer_result *r);

/* The summary as one JSON object appended to out (no newline); -1 with err
 * set when the writer failed. */
int bench_infer_summary_json(strbuf *out, const bench_infer_result *r, tempo_error *err);

/* Quick triad bandwidth in GB/s at `threads` threads (3 x 64 MiB arrays,
 * about `seconds`), for when the hardware profile has none. 0 on failure. */
double bench_infer_measure_bandwidth(int threads, double seconds);

/* The scorecard's inference figures (eval_result.h) from r: decode at batch
 * 1, prefill and time to first token at the best prefill length, the best
 * batch and its decode rate; inference_json (r's summary, borrowed) too. */
void bench_infer_scorecard(const bench_infer_result *r, const char *inference_json, eval_scorecard *s);

#endif
