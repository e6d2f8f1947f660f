/* bench_llama_cpp.h - `tempo bench infer --vs-llama-cpp`: the same model run
 * in the real llama.cpp in the same invocation, at the same thread count,
 * prompt length, decode position and number of steps, measured the way
 * bench_infer.h measures tempo (prefill: prompt / p50 time; decode at batch
 * 1: 1 / p50 step time), and the ratios tempo / llama.cpp. llama.cpp runs in
 * a child process (tools/llama_cpp/tempo_llama.c, built against the
 * prebuilt libraries of the node-llama-cpp npm package by
 * tools/llama_cpp/setup.sh) on an F32 GGUF written from the loaded model, so
 * both evaluate the same F32 weights. */
#ifndef TEMPO_BENCH_LLAMA_CPP_H
#define TEMPO_BENCH_LLAMA_CPP_H

#include <stddef.h>

#include "bench/bench_infer.h"
#include "core/error.h"
#include "core/json_write.h"
#include "data/tokenizer.h"
#include "model/model.h"

typedef struct {
    int threads;
    double prefill_tokens_per_s, decode_tokens_per_s; /* llama.cpp's */
    double tempo_prefill_tokens_per_s, tempo_decode_tokens_per_s;
} bench_llama_cpp_at;

/* The helper program's path: $TEMPO_LLAMA_HELPER when set, else what
 * tools/llama_cpp/setup.sh (found beside the tempo executable, as
 * ../tools/llama_cpp/setup.sh) prints, which builds it on first use. */
int bench_llama_cpp_helper(char *out, size_t n, tempo_error *err);

/* Runs llama.cpp for each thread count of r (tempo's results, already
 * measured on m) into out[0..r->n_at). Writes the F32 GGUF to a temporary
 * file and removes it. */
int bench_llama_cpp_run(model *m, const tokenizer *tok, const bench_infer_result *r, bench_llama_cpp_at *out,
                        tempo_error *err);

/* One line per thread count: {"bench":"infer","what":"vs_llama_cpp",
 * "threads", "prompt_tokens", "decode_prompt", "decode_steps", tempo's and
 * llama.cpp's prefill and batch-1 decode tokens/s, "prefill_ratio",
 * "decode_ratio" (tempo / llama.cpp)} as one value into w. */
void bench_llama_cpp_json(jsonw *w, const bench_infer_result *r, const bench_llama_cpp_at *a);

#endif
