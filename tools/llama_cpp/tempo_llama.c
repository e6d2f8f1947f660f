/* tempo_llama.c - the llama.cpp side of tempo's proofs and comparisons: a
 * small program built against llama.h from the llama.cpp source and linked to
 * the prebuilt llama.cpp libraries of the node-llama-cpp npm package
 * (tools/llama_cpp/setup.sh builds it). It is not part of tempo: it only runs
 * a GGUF file in the real llama.cpp.
 *
 *   tempo_llama logprobs MODEL.gguf IDS_FILE [THREADS]
 *       IDS_FILE: token ids separated by white space. Evaluates them in one
 *       batch (no BOS added) and prints, for i = 0..n-2, the natural log of
 *       the probability of ids[i+1] after ids[0..i], one per line ("%.9g").
 *   tempo_llama greedy MODEL.gguf IDS_FILE N [THREADS]
 *       Greedy decoding of N tokens after the prompt ids; prints the ids.
 *   tempo_llama tokenize MODEL.gguf TEXT_FILE
 *       llama.cpp's own tokenization of the file's bytes (no BOS, special
 *       tokens not parsed); prints the ids on one line.
 *   tempo_llama bench MODEL.gguf THREADS PROMPT DECODE_PROMPT STEPS RUNS
 *       As `tempo bench infer` measures, at batch 1: the prefill of PROMPT
 *       tokens (prompt / p50 time), and STEPS single-token decode steps after
 *       a prompt of DECODE_PROMPT tokens (1 / p50 step time), RUNS times after
 *       one warm-up; prints one JSON object.
 * The KV cache is F32 (llama.cpp's default is F16) and flash attention is
 * off, so an F32 model is evaluated in F32 throughout. Errors: one line on
 * stderr, exit 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"

#ifndef TEMPO_LLAMA_LIBDIR
#define TEMPO_LLAMA_LIBDIR "."
#endif

static void quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR)
        fputs(text, stderr);
}

static int die(const char *msg, const char *what)
{
    fprintf(stderr, "tempo_llama: %s: %s\n", what, msg);
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads white-space separated ids; returns the count, or -1. */
static int read_ids(const char *path, llama_token **ids)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = 0, cap = 1024;
    *ids = malloc(sizeof **ids * (size_t)cap);
    long v;
    while (*ids && fscanf(f, "%ld", &v) == 1) {
        if (n == cap) {
            cap *= 2;
            llama_token *p = realloc(*ids, sizeof **ids * (size_t)cap);
            if (!p)
                break;
            *ids = p;
        }
        (*ids)[n++] = (llama_token)v;
    }
    fclose(f);
    return *ids ? n : -1;
}

typedef struct {
    struct llama_model *model;
    struct llama_context *ctx;
    int n_vocab;
} session;

static int open_session(session *s, const char *path, int n_ctx, int threads)
{
    llama_log_set(quiet_log, NULL);
    ggml_backend_load_all_from_path(TEMPO_LLAMA_LIBDIR);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    s->model = llama_model_load_from_file(path, mp);
    if (!s->model)
        return die("llama.cpp could not load the model", path);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)n_ctx;
    cp.n_ubatch = (uint32_t)n_ctx;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = true;
    s->ctx = llama_init_from_model(s->model, cp);
    if (!s->ctx)
        return die("llama.cpp could not create a context", path);
    s->n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(s->model));
    return 0;
}

static void close_session(session *s)
{
    if (s->ctx)
        llama_free(s->ctx);
    if (s->model)
        llama_model_free(s->model);
    llama_backend_free();
}

/* Decodes ids[0..n) at positions pos0.., logits for all (all = 1) or the last. */
static int decode(session *s, const llama_token *ids, int n, int pos0, int all)
{
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = ids[i];
        b.pos[i] = pos0 + i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = (int8_t)(all || i == n - 1);
    }
    b.n_tokens = n;
    int rc = llama_decode(s->ctx, b);
    llama_batch_free(b);
    return rc;
}

static int argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

static int cmd_logprobs(const char *model, const char *ids_path, int threads)
{
    llama_token *ids = NULL;
    int n = read_ids(ids_path, &ids);
    if (n < 2)
        return die("needs at least two token ids", ids_path);
    session s = {0};
    int rc = open_session(&s, model, n, threads);
    if (!rc && decode(&s, ids, n, 0, 1) != 0)
        rc = die("llama_decode failed", model);
    for (int i = 0; !rc && i + 1 < n; i++) {
        const float *z = llama_get_logits_ith(s.ctx, i);
        if (ids[i + 1] < 0 || ids[i + 1] >= s.n_vocab) {
            rc = die("token id out of the model's vocabulary", ids_path);
            break;
        }
        double mx = z[argmax(z, s.n_vocab)], sum = 0;
        for (int v = 0; v < s.n_vocab; v++)
            sum += exp((double)z[v] - mx);
        printf("%.9g\n", (double)z[ids[i + 1]] - mx - log(sum));
    }
    close_session(&s);
    free(ids);
    return rc;
}

static int cmd_greedy(const char *model, const char *ids_path, int n_new, int threads)
{
    llama_token *ids = NULL;
    int n = read_ids(ids_path, &ids);
    if (n < 1 || n_new < 1)
        return die("needs a prompt and a token count", ids_path);
    session s = {0};
    int rc = open_session(&s, model, n + n_new, threads);
    if (!rc && decode(&s, ids, n, 0, 0) != 0)
        rc = die("llama_decode failed", model);
    for (int i = 0; !rc && i < n_new; i++) {
        llama_token t = argmax(llama_get_logits_ith(s.ctx, -1), s.n_vocab);
        printf("%d%c", t, i + 1 < n_new ? ' ' : '\n');
        if (decode(&s, &t, 1, n + i, 0) != 0)
            rc = die("llama_decode failed", model);
    }
    close_session(&s);
    free(ids);
    return rc;
}

static int cmd_tokenize(const char *model, const char *text_path)
{
    FILE *f = fopen(text_path, "rb");
    if (!f)
        return die("cannot open", text_path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    int rc = !text || fread(text, 1, (size_t)n, f) != (size_t)n ? die("cannot read", text_path) : 0;
    fclose(f);
    llama_log_set(quiet_log, NULL);
    ggml_backend_load_all_from_path(TEMPO_LLAMA_LIBDIR);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *m = rc ? NULL : llama_model_load_from_file(model, mp);
    if (!rc && !m)
        rc = die("llama.cpp could not load the model", model);
    llama_token *ids = rc ? NULL : malloc(sizeof *ids * ((size_t)n + 16));
    if (!rc && !ids)
        rc = die("out of memory", text_path);
    if (!rc) {
        int k = llama_tokenize(llama_model_get_vocab(m), text, (int32_t)n, ids, (int32_t)n + 16, false, false);
        if (k < 0)
            rc = die("llama_tokenize failed", text_path);
        for (int i = 0; i < k; i++)
            printf("%d%c", ids[i], i + 1 < k ? ' ' : '\n');
    }
    if (m)
        llama_model_free(m);
    llama_backend_free();
    free(ids);
    free(text);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* tempo bench infer's definitions: prefill tokens/s = prompt / p50 of the
 * prefill times; decode tokens/s = 1 / p50 of the single-token step times,
 * each step after a prompt of decode_prompt tokens (one untimed warm-up
 * round of each first). */
static int cmd_bench(const char *model, int threads, int prompt, int decode_prompt, int steps, int runs)
{
    if (prompt < 1 || decode_prompt < 1 || steps < 1 || runs < 1)
        return die("token counts and runs must be positive", "bench");
    int n_ctx = (prompt > decode_prompt + steps ? prompt : decode_prompt + steps) + 1;
    session s = {0};
    int rc = open_session(&s, model, n_ctx, threads);
    llama_token *ids = malloc(sizeof *ids * (size_t)n_ctx);
    double *pre = malloc(sizeof *pre * (size_t)(runs + 1));
    double *step = malloc(sizeof *step * (size_t)(runs + 1) * (size_t)steps);
    if (!rc && (!ids || !pre || !step))
        rc = die("out of memory", "bench");
    for (int i = 0; !rc && i < n_ctx; i++)
        ids[i] = (llama_token)((i * 7919 + 13) % s.n_vocab);
    int n_step = 0;
    for (int r = 0; !rc && r <= runs; r++) { /* r == 0: warm-up */
        llama_memory_clear(llama_get_memory(s.ctx), true);
        double t0 = now_s();
        if (decode(&s, ids, prompt, 0, 0) != 0) {
            rc = die("llama_decode failed", model);
            break;
        }
        (void)llama_get_logits_ith(s.ctx, -1);
        if (r > 0)
            pre[r - 1] = now_s() - t0;
        llama_memory_clear(llama_get_memory(s.ctx), true);
        if (decode(&s, ids, decode_prompt, 0, 0) != 0) {
            rc = die("llama_decode failed", model);
            break;
        }
        llama_token t = argmax(llama_get_logits_ith(s.ctx, -1), s.n_vocab);
        for (int i = 0; i < steps && !rc; i++) {
            double a = now_s();
            if (decode(&s, &t, 1, decode_prompt + i, 0) != 0)
                rc = die("llama_decode failed", model);
            else
                t = argmax(llama_get_logits_ith(s.ctx, -1), s.n_vocab);
            if (r > 0)
                step[n_step++] = now_s() - a;
        }
    }
    if (!rc) {
        double p50_pre = median(pre, runs), p50_step = median(step, n_step);
        printf("{\"engine\":\"llama.cpp\",\"threads\":%d,\"prompt_tokens\":%d,\"decode_prompt\":%d,"
               "\"decode_steps\":%d,\"runs\":%d,\"prefill_tokens_per_s\":%.6g,\"time_to_first_token_s\":%.6g,"
               "\"decode_tokens_per_s\":%.6g,\"decode_p50_ms\":%.6g}\n",
               threads, prompt, decode_prompt, steps, runs, prompt / p50_pre, p50_pre, 1.0 / p50_step,
               1e3 * p50_step);
    }
    free(ids);
    free(pre);
    free(step);
    close_session(&s);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "logprobs") == 0)
        return cmd_logprobs(argv[2], argv[3], argc > 4 ? atoi(argv[4]) : 1);
    if (argc >= 5 && strcmp(argv[1], "greedy") == 0)
        return cmd_greedy(argv[2], argv[3], atoi(argv[4]), argc > 5 ? atoi(argv[5]) : 1);
    if (argc == 4 && strcmp(argv[1], "tokenize") == 0)
        return cmd_tokenize(argv[2], argv[3]);
    if (argc == 8 && strcmp(argv[1], "bench") == 0)
        return cmd_bench(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]), atoi(argv[7]));
    fprintf(stderr, "usage: tempo_llama logprobs MODEL IDS [THREADS] | greedy MODEL IDS N [THREADS] |"
                    " tokenize MODEL TEXT | bench MODEL THREADS PROMPT DECODE_PROMPT STEPS RUNS\n");
    return 2;
}
