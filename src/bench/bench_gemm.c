/* bench_gemm.c - GEMM shapes of the presets and their timing (see bench_gemm.h). */
#include "bench/bench_gemm.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/number.h"
#include "core/rng.h"
#include "model/model.h"

/* Append (M, N, K, ta, tb) named `what`, or join the name onto an equal
 * shape already listed. */
static void add_shape(bench_gemm_shape *out, int *n, int max, const char *preset, int M, int N,
                      int K, int ta, int tb, char batch_dim, const char *what)
{
    for (int i = 0; i < *n; i++) {
        bench_gemm_shape *s = &out[i];
        if (s->M == M && s->N == N && s->K == K && s->trans_a == ta && s->trans_b == tb &&
            s->batch_dim == batch_dim) {
            size_t len = strlen(s->op);
            if (strstr(s->op, what))
                return; /* the same product of another layer shape */
            if (len + strlen(what) + 2 < sizeof s->op)
                snprintf(s->op + len, sizeof s->op - len, ", %s", what);
            return;
        }
    }
    if (*n >= max)
        return;
    bench_gemm_shape *s = &out[(*n)++];
    *s = (bench_gemm_shape){.M = M, .N = N, .K = K, .trans_a = ta, .trans_b = tb, .batch_dim = batch_dim};
    snprintf(s->op, sizeof s->op, "%s %s", preset, what);
}

int bench_gemm_preset_shapes(const run_config *cfg, bench_gemm_shape *out, int max)
{
    const model_config *c = &cfg->model;
    int n = 0, T = cfg->micro_batch * c->context, C = c->d_model;
    int D = model_config_head_dim(c), HD = c->n_heads * D, KD = c->n_kv_heads * D;
    int F = c->d_ff, V = c->vocab_size, R = MODEL_HEAD_CHUNK_ROWS;
    const char *p = cfg->preset;
    /* weights [out, in]: y = x W^T, dx = dy W, dW = dy^T x */
    struct { int out, in; const char *name; } w[] = {
        {HD, C, "wq"}, {KD, C, "wk"}, {KD, C, "wv"}, {C, HD, "wo"}, {F, C, "w_up"},
        {F, C, "w_gate"}, {C, F, "w_down"},
    };
    int nw = (int)(sizeof w / sizeof w[0]);
    char what[64];
    for (int i = 0; i < nw; i++) {
        if (!strcmp(w[i].name, "w_gate") && c->mlp != MLP_SWIGLU)
            continue;
        snprintf(what, sizeof what, "fwd %s", w[i].name);
        add_shape(out, &n, max, p, T, w[i].out, w[i].in, 0, 1, 'M', what);
    }
    for (int i = 0; i < nw; i++) {
        if (!strcmp(w[i].name, "w_gate") && c->mlp != MLP_SWIGLU)
            continue;
        snprintf(what, sizeof what, "dx %s", w[i].name);
        add_shape(out, &n, max, p, T, w[i].in, w[i].out, 0, 0, 'M', what);
    }
    for (int i = 0; i < nw; i++) {
        if (!strcmp(w[i].name, "w_gate") && c->mlp != MLP_SWIGLU)
            continue;
        snprintf(what, sizeof what, "dW %s", w[i].name);
        add_shape(out, &n, max, p, w[i].out, w[i].in, T, 1, 0, 'K', what);
    }
    add_shape(out, &n, max, p, R, V, C, 0, 1, 0, "head chunk logits");
    add_shape(out, &n, max, p, R, C, V, 0, 0, 0, "head chunk dx");
    add_shape(out, &n, max, p, V, C, R, 1, 0, 0, "head chunk dW");
    if (cfg->optim.use_muon)
        for (int i = 0; i < nw; i++) {
            if (!strcmp(w[i].name, "w_gate") && c->mlp != MLP_SWIGLU)
                continue;
            int r = w[i].out < w[i].in ? w[i].out : w[i].in;
            int m = w[i].out < w[i].in ? w[i].in : w[i].out;
            snprintf(what, sizeof what, "muon X X^T %dx%d", r, m);
            add_shape(out, &n, max, p, r, r, m, 0, 1, 0, what);
            snprintf(what, sizeof what, "muon A A %dx%d", r, m);
            add_shape(out, &n, max, p, r, r, r, 0, 0, 0, what);
            snprintf(what, sizeof what, "muon B X %dx%d", r, m);
            add_shape(out, &n, max, p, r, m, r, 0, 0, 0, what);
        }
    return n;
}

bench_gemm_shape bench_gemm_per_thread(const bench_gemm_shape *s, int threads)
{
    bench_gemm_shape p = *s;
    if (threads > 1 && s->batch_dim == 'M')
        p.M = (s->M + threads - 1) / threads;
    else if (threads > 1 && s->batch_dim == 'K')
        p.K = (s->K + threads - 1) / threads;
    return p;
}

int bench_gemm_parse_shape(const char *text, bench_gemm_shape *s, tempo_error *err)
{
    /* "M", "N", "K" split at 'x', then optionally "ta", "tb" at ':'; each piece
     * parsed whole and checked (sscanf's %d overflows silently) */
    char buf[96], *piece[5];
    int n = 0;
    snprintf(s->op, sizeof s->op, "custom");
    s->batch_dim = 0;
    int fits = snprintf(buf, sizeof buf, "%s", text) < (int)sizeof buf;
    piece[n++] = buf;
    for (char *p = buf; fits && *p && n <= 5; p++)
        if ((*p == 'x' && n < 3) || (*p == ':' && n >= 3)) {
            *p = '\0';
            if (n < 5)
                piece[n] = p + 1;
            n++;
        }
    long long v[5] = {0, 0, 0, 0, 0};
    tempo_error e;
    int ok = fits && (n == 3 || n == 5);
    for (int i = 0; ok && i < n; i++)
        ok = number_parse_int("shape", piece[i], i < 3 ? 1 : 0, i < 3 ? 1 << 30 : 1, &v[i], &e) == 0;
    if (!ok || (double)v[0] * v[2] + (double)v[2] * v[1] + (double)v[0] * v[1] > 1e9)
        return tempo_usage(err, "shape '%s': expected MxNxK or MxNxK:ta:tb (ta, tb 0 or 1)", text);
    s->M = (int)v[0];
    s->N = (int)v[1];
    s->K = (int)v[2];
    s->trans_a = (int)v[3];
    s->trans_b = (int)v[4];
    return 0;
}

static float *random_floats(size_t n, rng_state *r)
{
    float *x = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (x)
        for (size_t i = 0; i < n; i++)
            x[i] = (float)(rng_uniform(r) - 0.5);
    return x;
}

/* One product with its operands, as bench_time_best calls it. */
typedef struct {
    bench_gemm_fn fn;
    void *ctx;
    const bench_gemm_shape *s;
    const float *A, *B;
    int lda, ldb;
    float *C;
} gemm_call;

static void run_call(void *p)
{
    const gemm_call *c = p;
    c->fn(c->ctx, c->s, c->A, c->lda, c->B, c->ldb, c->C, c->s->N);
}

int bench_gemm_time(bench_gemm_fn fn, void *ctx, const bench_gemm_shape *s, int threads,
                    double min_seconds, bench_gemm_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    rng_state rng;
    rng_seed(&rng, 1);
    size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
    float *A = random_floats(na, &rng), *B = random_floats(nb, &rng), *C = random_floats(nc, &rng);
    if (!A || !B || !C) {
        free(A); free(B); free(C);
        return tempo_fail(err, "gemm %dx%dx%d: out of memory", s->M, s->N, s->K);
    }
    int lda = s->trans_a ? s->M : s->K, ldb = s->trans_b ? s->K : s->N;
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);

    gemm_call call = {.fn = fn, .ctx = ctx, .s = s, .A = A, .B = B, .lda = lda, .ldb = ldb, .C = C};
    bench_timing t;
    bench_time_best(run_call, &call, min_seconds, &t);
    omp_set_num_threads(saved);
    free(A); free(B); free(C);
    r->best_s = t.best_s;
    r->reps = t.reps;
    r->gflops = t.best_s > 0 ? 2.0 * s->M * s->N * (double)s->K / t.best_s * 1e-9 : 0;
    r->other_load_cores = t.other_load_cores;
    r->contended = t.contended;
    return 0;
}

/* Every thread's own product, `inner` times over, in one region. */
typedef struct {
    bench_gemm_fn fn;
    void *const *ctxs;
    const bench_gemm_shape *s;
    float **A, **B, **C;
    int lda, ldb, threads, inner;
    int team;   /* the threads the region got (OMP_THREAD_LIMIT can give fewer) */
} replicas_call;

static void run_replicas(void *p)
{
    replicas_call *c = p;
#pragma omp parallel num_threads(c->threads)
    {
        int t = omp_get_thread_num();
        if (t == 0)
            c->team = omp_get_num_threads();
        for (int i = 0; i < c->inner; i++)
            c->fn(c->ctxs[t], c->s, c->A[t], c->lda, c->B[t], c->ldb, c->C[t], c->s->N);
    }
}

int bench_gemm_time_replicas(bench_gemm_fn fn, void *const *ctxs, const bench_gemm_shape *s, int threads,
                             double min_seconds, bench_gemm_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    if (threads < 1 || threads > BENCH_GEMM_REPLICAS_MAX)
        return tempo_fail(err, "gemm replicas: %d threads (1 to %d)", threads, BENCH_GEMM_REPLICAS_MAX);
    size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
    float **A = calloc((size_t)threads, sizeof *A), **B = calloc((size_t)threads, sizeof *B);
    float **C = calloc((size_t)threads, sizeof *C);
    int ok = A && B && C;
    rng_state rng;
    rng_seed(&rng, 1);
    for (int t = 0; ok && t < threads; t++) {
        A[t] = random_floats(na, &rng);
        B[t] = random_floats(nb, &rng);
        C[t] = random_floats(nc, &rng);
        ok = ok && A[t] && B[t] && C[t];
    }
    double flops = 2.0 * s->M * s->N * (double)s->K;
    double inner = ceil(2e8 / flops);   /* a millisecond or more of products a region */
    replicas_call call = {fn, ctxs, s, A, B, C, s->trans_a ? s->M : s->K, s->trans_b ? s->K : s->N, threads,
                          inner > 1000 ? 1000 : (int)inner, 0};
    int short_team = 0;
    if (ok) {
        bench_timing tm;
        bench_time_best(run_replicas, &call, min_seconds, &tm);
        short_team = call.team != threads;
        r->best_s = tm.best_s / call.inner;
        r->reps = tm.reps;
        r->gflops = r->best_s > 0 ? threads * flops / r->best_s * 1e-9 : 0;
        r->other_load_cores = tm.other_load_cores;
        r->contended = tm.contended;
        r->threads_used = 1;
    }
    for (int t = 0; t < threads && A && B && C; t++) {
        free(A[t]); free(B[t]); free(C[t]);
    }
    free(A); free(B); free(C);
    if (ok && short_team) {
        memset(r, 0, sizeof *r);
        return tempo_fail(err, "gemm %dx%dx%d: OpenMP gave %d of the %d threads asked for (OMP_THREAD_LIMIT?)",
                          s->M, s->N, s->K, call.team, threads);
    }
    return ok ? 0 : tempo_fail(err, "gemm %dx%dx%d on %d threads: out of memory", s->M, s->N, s->K, threads);
}

static void run_tempo(void *ctx, const bench_gemm_shape *s, const float *A, int lda,
                      const float *B, int ldb, float *C, int ldc)
{
    gemm_f32_ctx((gemm_context *)ctx, s->trans_a, s->trans_b, s->M, s->N, s->K, A, lda, B, ldb,
                 0, C, ldc);
}

int bench_gemm_measure(gemm_context *ctx, const bench_gemm_shape *s, int threads,
                       double min_seconds, bench_gemm_result *r, tempo_error *err)
{
    if (bench_gemm_time(run_tempo, ctx, s, threads, min_seconds, r, err))
        return -1;
    r->threads_used = gemm_split(&ctx->cfg, s->M, s->N, s->K, threads, &r->owns_b);
    r->bf16 = ctx->cfg.bf16;
    return 0;
}

int bench_gemm_measure_replicas(const bench_gemm_shape *s, int threads, int bf16, double min_seconds,
                                bench_gemm_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    if (threads < 1 || threads > BENCH_GEMM_REPLICAS_MAX)
        return tempo_fail(err, "gemm replicas: %d threads (1 to %d)", threads, BENCH_GEMM_REPLICAS_MAX);
    gemm_context *ctx = calloc((size_t)threads, sizeof *ctx);
    void **ctxs = calloc((size_t)threads, sizeof *ctxs);
    if (!ctx || !ctxs) {
        free(ctx); free(ctxs);
        return tempo_fail(err, "gemm replicas: out of memory");
    }
    int rc = 0;
    for (int t = 0; t < threads; t++) {
        gemm_context_init(&ctx[t]);
        ctxs[t] = &ctx[t];
        if (!rc)
            rc = gemm_config_set_bf16(&ctx[t].cfg, bf16, err);
    }
    if (!rc)
        rc = bench_gemm_time_replicas(run_tempo, ctxs, s, threads, min_seconds, r, err);
    if (!rc)
        r->bf16 = bf16 != 0;
    for (int t = 0; t < threads; t++)
        gemm_context_free(&ctx[t]);
    free(ctx); free(ctxs);
    return rc;
}


/* "MxNxK ta tb", as the JSON lines name a shape. */
static void shape_text(const bench_gemm_shape *s, char *out, size_t n)
{
    snprintf(out, n, "%dx%dx%d %d %d", s->M, s->N, s->K, s->trans_a, s->trans_b);
}

void bench_gemm_json(jsonw *w, const bench_gemm_shape *s, int threads, const bench_gemm_result *r,
                     double peak_gflops, double peak_now_gflops, const char *path,
                     const bench_gemm_result *peer, const bench_gemm_as_trained *at)
{
    char shape[80];
    shape_text(s, shape, sizeof shape);
    jsonw_object_begin(w);
    jsonw_field_string(w, "kernel", "gemm");
    jsonw_field_string(w, "shape", shape);
    jsonw_field_string(w, "op", s->op);
    jsonw_field_int(w, "threads", threads);
    jsonw_field_string(w, "precision", r->bf16 ? "bf16" : "fp32");
    if (r->threads_used > 0) {
        jsonw_field_int(w, "threads_used", r->threads_used);
        jsonw_field_string(w, "split", r->threads_used == 1 ? "one thread"
                                       : r->owns_b          ? "owned columns"
                                                            : "shared B");
    }
    jsonw_field_digits(w, "gflops", r->gflops, 2);
    jsonw_field_digits(w, "peak_gflops", peak_gflops > 0 ? peak_gflops : 0, 2);
    jsonw_field_digits(w, "efficiency", peak_gflops > 0 ? r->gflops / peak_gflops : NAN, 3);
    if (peak_now_gflops > 0) {
        jsonw_field_digits(w, "peak_now_gflops", peak_now_gflops, 2);
        jsonw_field_digits(w, "efficiency_now", r->gflops / peak_now_gflops, 3);
    }
    if (peer && peer->gflops > 0) {
        jsonw_field_digits(w, "openblas_gflops", peer->gflops, 2);
        jsonw_field_digits(w, "ratio", r->gflops / peer->gflops, 3);
    }
    if (at) {
        char each[80];
        shape_text(&at->per_thread, each, sizeof each);
        jsonw_key(w, "as_trained");
        jsonw_object_begin(w);
        jsonw_field_string(w, "split", s->batch_dim ? "a replica's rows a thread" : "a product a thread");
        jsonw_field_string(w, "shape", each);
        jsonw_field_digits(w, "gflops", at->r.gflops, 2);
        jsonw_field_digits(w, "efficiency", peak_gflops > 0 ? at->r.gflops / peak_gflops : NAN, 3);
        if (at->peer_gflops > 0) {
            jsonw_field_digits(w, "openblas_gflops", at->peer_gflops, 2);
            jsonw_field_string(w, "openblas_way", at->peer_way ? at->peer_way : "");
            jsonw_field_digits(w, "ratio", at->r.gflops / at->peer_gflops, 3);
        }
        jsonw_object_end(w);
    }
    jsonw_field_string(w, "path", path);
    double load = r->other_load_cores;
    if (peer && peer->other_load_cores > load)
        load = peer->other_load_cores;
    if (at && at->r.other_load_cores > load)
        load = at->r.other_load_cores;
    jsonw_field_digits(w, "other_load_cores", load, 2);
    jsonw_field_bool(w, "contended", r->contended || (peer && peer->contended) || (at && at->r.contended));
    jsonw_object_end(w);
}

void bench_gemm_summary_add_trained(bench_gemm_summary *sum, int t, const bench_gemm_shape *s,
                                    const bench_gemm_as_trained *at)
{
    double flops = 2.0 * s->M * s->N * (double)s->K;
    if (at->r.gflops <= 0)
        return;
    sum->at_flops[t] += flops;
    sum->at_seconds[t] += flops / (at->r.gflops * 1e9);
    if (at->peer_gflops > 0)
        sum->at_peer_seconds[t] += flops / (at->peer_gflops * 1e9);
    sum->contended |= at->r.contended;
}

void bench_gemm_summary_add(bench_gemm_summary *sum, int t, const bench_gemm_shape *s,
                            const bench_gemm_result *r, const bench_gemm_result *peer)
{
    if (t == 0)
        sum->n_shapes++;
    sum->flops[t] += 2.0 * s->M * s->N * (double)s->K;
    sum->seconds[t] += r->best_s;
    if (peer)
        sum->peer_seconds[t] += peer->best_s;
    sum->contended |= r->contended || (peer && peer->contended);
}

void bench_gemm_summary_json(jsonw *w, const bench_gemm_summary *sum, const char *path)
{
    jsonw_object_begin(w);
    jsonw_field_string(w, "kernel", "gemm");
    jsonw_field_bool(w, "summary", 1);
    jsonw_field_int(w, "shapes", sum->n_shapes);
    jsonw_field_string(w, "path", path);
    jsonw_field_string(w, "precision", sum->bf16 ? "bf16" : "fp32");
    jsonw_key(w, "threads");
    jsonw_object_begin(w);
    for (int t = 0; t < sum->n_threads; t++) {
        double g = sum->seconds[t] > 0 ? sum->flops[t] / sum->seconds[t] * 1e-9 : 0;
        double peak = sum->peak_gflops[t] > 0 ? sum->peak_gflops[t] : 0;
        char key[16];
        snprintf(key, sizeof key, "%d", sum->threads[t]);
        jsonw_key(w, key);
        jsonw_object_begin(w);
        jsonw_field_digits(w, "gflops", g, 2);
        jsonw_field_digits(w, "peak_gflops", peak, 2);
        jsonw_field_digits(w, "efficiency", peak > 0 ? g / peak : NAN, 3);
        jsonw_field_digits(w, "peak_now_gflops", sum->peak_now_gflops[t], 2);
        if (sum->peer_seconds[t] > 0) {
            double gb = sum->flops[t] / sum->peer_seconds[t] * 1e-9;
            jsonw_field_digits(w, "openblas_gflops", gb, 2);
            jsonw_field_digits(w, "ratio", g / gb, 3);
        }
        if (sum->at_seconds[t] > 0) {
            double ga = sum->at_flops[t] / sum->at_seconds[t] * 1e-9;
            jsonw_key(w, "as_trained");
            jsonw_object_begin(w);
            jsonw_field_digits(w, "gflops", ga, 2);
            jsonw_field_digits(w, "efficiency", peak > 0 ? ga / peak : NAN, 3);
            if (sum->at_peer_seconds[t] > 0) {
                double gp = sum->at_flops[t] / sum->at_peer_seconds[t] * 1e-9;
                jsonw_field_digits(w, "openblas_gflops", gp, 2);
                jsonw_field_digits(w, "ratio", ga / gp, 3);
            }
            jsonw_object_end(w);
        }
        jsonw_object_end(w);
    }
    jsonw_object_end(w);
    jsonw_field_bool(w, "contended", sum->contended);
    jsonw_object_end(w);
}
