/* lm_head.c - fused output head + cross-entropy (see lm_head.h): per chunk of
 * rows, logits by gemm_f32, soft-cap, log-softmax and loss per row (OpenMP over
 * rows, on the row passes of lm_head_kernel.h: the plain C table below or the
 * AVX2 one), then the two gradient products; the GEMMs read w from packings
 * made once per call when the caller gives a workspace, and then the chunks
 * are shared out among the threads (see lm_head_workspace). And the plain
 * reference. */
#include "kernels/cpu/lm_head.h"
#include "core/omp_team.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_path.h"
#include "kernels/cpu/lm_head_kernel.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* The logits' row stride in the scratch: V rounded up to whole 64-byte
 * lines, so that every row starts on a line (at V = 4097 a C tile's 16-float
 * stores straddled two lines; bf16, one Zen 4 thread, `bench kernels --shape
 * 256xNx128:0:1`: N = 4097 188 GFLOP/s, 4112 195-197). */
static int logits_ld(int V)
{
    return (V + 15) / 16 * 16;
}

size_t lm_head_scratch_floats(int chunk_rows, int V)
{
    return (size_t)chunk_rows * (size_t)logits_ld(V);
}

/* ---- the plain C row passes (the portable table) ---- */

static void softcap_portable(float *z, int V, float cap)
{
    for (int v = 0; v < V; v++)
        z[v] = cap * tanhf(z[v] / cap);
}

static float max_portable(const float *z, int V)
{
    float mx = z[0];
    for (int v = 1; v < V; v++)
        mx = z[v] > mx ? z[v] : mx;
    return mx;
}

static double exp_sum_portable(float *z, int V, float mx, int store)
{
    double sum = 0;
    for (int v = 0; v < V; v++) {
        float e = expf(z[v] - mx);
        if (store)
            z[v] = e;
        sum += e;
    }
    return sum;
}

static double exp_sum_scaled_portable(const float *z, int V, float k, float mx)
{
    double sum = 0;
    for (int v = 0; v < V; v++) {
        float t = z[v] * k;
        sum += expf(t - mx);
    }
    return sum;
}

static void scale_portable(float *z, int V, float k)
{
    for (int v = 0; v < V; v++)
        z[v] *= k;
}

static void cap_grad_portable(float *z, int V, float lse, float cap, float k)
{
    for (int v = 0; v < V; v++) {
        float u = z[v] / cap;
        z[v] = expf(z[v] - lse) * k * (1.0f - u * u); /* d(cap tanh(x/cap))/dx = 1 - u^2 */
    }
}

static int index_of_portable(const float *z, int V, float x)
{
    for (int v = 0; v < V; v++)
        if (z[v] == x)
            return v;
    return V - 1;
}

const lm_head_row_ops lm_head_row_ops_portable = {softcap_portable, max_portable,
                                                  exp_sum_portable, exp_sum_scaled_portable,
                                                  scale_portable, cap_grad_portable,
                                                  index_of_portable};

/* One row n of logits z [V] (raw x.w): returns the loss; if want_grad, rewrites
 * z in place into scale * (softmax - onehot) * dcap. The loss does not depend
 * on want_grad. ws (may be NULL) says what else to write for row n (its
 * top_logprob, top_id, log_norm) and, with mix_b set (training inside a
 * mixture), multiplies the scale by a p / (a p + mix_b[n]), p the target's
 * probability: the gradient of -ln(a p + mix_b[n]). */
static float row_loss(const lm_head_row_ops *ops, float *z, int V, int target, float cap,
                      int want_grad, float scale, const lm_head_workspace *ws, int n)
{
    if (cap > 0)
        ops->softcap(z, V, cap);
    float mx = ops->max(z, V);
    if (ws && ws->top_id && !want_grad)   /* the first id holding the largest logit */
        ws->top_id[n] = ops->index_of(z, V, mx);
    float zt = z[target];
    double sum = ops->exp_sum(z, V, mx, want_grad && cap == 0); /* keep exp(z - mx) */
    float lse = mx + (float)log(sum);
    if (ws && ws->top_logprob)
        ws->top_logprob[n] = mx - lse;
    if (ws && ws->log_norm && !want_grad) {
        /* -ln sum_v p_v^beta = beta ln sum_v e^(z_v - mx) - ln sum_v e^(beta (z_v - mx));
         * z stays the logits (lm_head_workspace.logits_rows) */
        float beta = ws->beta;
        if (beta == 1.0f || !(beta > 0)) {   /* unset (0) counts as 1 */
            ws->log_norm[n] = 0;
        } else {
            ws->log_norm[n] =
                (float)(beta * log(sum) - log(ops->exp_sum_scaled(z, V, beta, beta * mx)));
        }
    }
    float mix_a = ws ? ws->mix_a : 1, mix_b = ws && ws->mix_b ? ws->mix_b[n] : -1;
    if (want_grad && mix_b >= 0) {
        double ap = mix_a * exp((double)zt - (double)lse);
        scale *= (float)(ap / (ap + mix_b));
    }
    if (want_grad && cap == 0) {
        ops->scale(z, V, (float)(1.0 / sum) * scale);
        z[target] -= scale;
    } else if (want_grad) {
        ops->cap_grad(z, V, lse, cap, scale);
        float u = zt / cap;
        z[target] -= scale * (1.0f - u * u);
    }
    return lse - zt;
}

static void free_thread_state(lm_head_workspace *ws)
{
    gemm_context_array_free(ws->thread_gemm, ws->n_threads);
    free(ws->thread_scratch);
    free(ws->dw_partial);
    ws->thread_gemm = NULL;
    ws->thread_scratch = ws->dw_partial = NULL;
    ws->n_threads = 0;
    ws->scratch_floats = ws->partial_floats = 0;
}

void lm_head_workspace_free(lm_head_workspace *ws)
{
    gemm_packed_b_free(&ws->w_t);
    gemm_packed_b_free(&ws->w_n);
    free_thread_state(ws);
}

/* Per-thread buffers for nt threads, scratch of `scratch` floats and dw
 * partials of `partial` floats (0 when not training); 0 when out of memory. */
static int ensure_thread_state(lm_head_workspace *ws, int nt, size_t scratch, size_t partial)
{
    if (ws->n_threads >= nt && ws->scratch_floats >= scratch && ws->partial_floats >= partial)
        return 1;
    if (ws->n_threads > nt)
        nt = ws->n_threads;
    if (ws->scratch_floats > scratch)
        scratch = ws->scratch_floats;
    if (ws->partial_floats > partial)
        partial = ws->partial_floats;
    free_thread_state(ws);
    ws->thread_gemm = gemm_context_array_new(nt, &ws->gemm->cfg); /* configs as the packings' */
    /* 64-byte aligned, as the caller's (the model's arena): the rows start on lines (logits_ld) */
    ws->thread_scratch = aligned_alloc(64, (sizeof(float) * scratch * (size_t)(nt - 1) + 63) / 64 * 64);
    ws->dw_partial = partial ? malloc(sizeof(float) * partial * (size_t)(nt - 1)) : NULL;
    if (!ws->thread_gemm || !ws->thread_scratch || (partial && !ws->dw_partial)) {
        free_thread_state(ws);
        return 0;
    }
    ws->n_threads = nt;
    ws->scratch_floats = scratch;
    ws->partial_floats = partial;
    return 1;
}

/* The three products of a chunk, through gemm (when not NULL: there is a
 * workspace, or the caller gave its thread's context) and ws's packings
 * when it has them. */
typedef struct {
    lm_head_workspace *ws;
    gemm_context *gemm;
    int packed; /* ws->w_t (and w_n when training) hold w */
    const float *w;
    int C, V;
    int ldz; /* the logits' row stride (logits_ld) */
} head_gemms;

static void logits(const head_gemms *h, int R, const float *xc, float *z)
{
    if (h->packed)
        gemm_f32_packed_b_ctx(h->gemm, 0, R, xc, h->C, &h->ws->w_t, 0.0f, z, h->ldz);
    else if (h->gemm)
        gemm_f32_ctx(h->gemm, 0, 1, R, h->V, h->C, xc, h->C, h->w, h->C, 0.0f, z, h->ldz);
    else
        gemm_f32(0, 1, R, h->V, h->C, xc, h->C, h->w, h->C, 0.0f, z, h->ldz);
}

static void input_grad(const head_gemms *h, int R, const float *dz, float *dxc)
{
    if (h->packed)
        gemm_f32_packed_b_ctx(h->gemm, 0, R, dz, h->ldz, &h->ws->w_n, 0.0f, dxc, h->C);
    else if (h->gemm)
        gemm_f32_ctx(h->gemm, 0, 0, R, h->C, h->V, dz, h->ldz, h->w, h->C, 0.0f, dxc, h->C);
    else
        gemm_f32(0, 0, R, h->C, h->V, dz, h->ldz, h->w, h->C, 0.0f, dxc, h->C);
}

static void weight_grad(const head_gemms *h, int R, const float *dz, const float *xc, float *dw)
{
    if (h->gemm)
        gemm_f32_ctx(h->gemm, 1, 0, h->V, h->C, R, dz, h->ldz, xc, h->C, 1.0f, dw, h->C);
    else
        gemm_f32(1, 0, h->V, h->C, R, dz, h->ldz, xc, h->C, 1.0f, dw, h->C);
}

/* An evaluation's wanted rows (lm_head_workspace.row_from): whether row n is one. */
static int row_wanted(const lm_head_workspace *ws, int n)
{
    return !ws || !ws->row_from || n % ws->row_group >= ws->row_from[n / ws->row_group];
}

/* The first wanted row of rows [n0, n0 + R), as an offset from n0 (R when none). */
static int first_wanted(const lm_head_workspace *ws, int n0, int R)
{
    int r = 0;
    while (r < R && !row_wanted(ws, n0 + r))
        r++;
    return r;
}

/* A row not wanted: its figures 0. */
static void row_skipped(const lm_head_workspace *ws, float *losses, int n)
{
    losses[n] = 0;
    if (ws->top_logprob)
        ws->top_logprob[n] = 0;
    if (ws->top_id)
        ws->top_id[n] = 0;
    if (ws->log_norm)
        ws->log_norm[n] = 0;
}

/* An evaluation chunk's rows [n0, n0 + R): their logits into z from the
 * first wanted row on, then each row's pass (or its figures 0 when not
 * wanted). Returns that first wanted row's offset (R when none). */
static int eval_chunk(const head_gemms *h, const lm_head_row_ops *ops, float *losses, const float *x,
                      const int32_t *targets, int n0, int R, float softcap, float *z)
{
    int lo = first_wanted(h->ws, n0, R);
    if (lo < R)
        logits(h, R - lo, x + (size_t)(n0 + lo) * h->C, z + (size_t)lo * h->ldz);
    OMP_TEAM_FOR(omp_team_worth((size_t)R, 1), int, r, R,
                 if (r < lo || !row_wanted(h->ws, n0 + r)) row_skipped(h->ws, losses, n0 + r);
                 else losses[n0 + r] = row_loss(ops, z + (size_t)r * h->ldz, h->V, targets[n0 + r], softcap, 0,
                                                0.0f, h->ws, n0 + r));
    return lo;
}

/* A training chunk's rows [n0, n0 + R) up to their logit gradients: the
 * logits of rows [0, from) computed into z (the rows from `from` on are
 * held there already: R when none are), then each row's pass, which leaves
 * dz in z in place of its logits. */
static void chunk_dz(const head_gemms *h, const lm_head_row_ops *ops, float *losses, const float *xc,
                     const int32_t *targets, int n0, int R, int from, float softcap, float grad_scale, float *z)
{
    if (from > 0)
        logits(h, from, xc, z);
    OMP_TEAM_FOR(omp_team_worth((size_t)R, 1), int, r, R,
                 losses[n0 + r] = row_loss(ops, z + (size_t)r * h->ldz, h->V, targets[n0 + r], softcap, 1,
                                           grad_scale, h->ws, n0 + r));
}

/* Chunks [c0, c1) on the calling thread alone: z is its logits scratch, dw
 * its gradient accumulator. Returns, in an evaluation, the first wanted row
 * of chunk c0 (the one whose logits z keeps). */
static int chunks_on_thread(const head_gemms *h, const lm_head_row_ops *ops, int c0, int c1,
                            float *losses, float *dx, float *dw, const float *x,
                            const int32_t *targets, int N, float softcap, float grad_scale,
                            float *z, int chunk_rows)
{
    int C = h->C, lo = 0;
    /* evaluation: the chunks last to first, so that z ends holding the first chunk's logits (the
     * order changes no bits: an evaluation chunk's losses depend on its rows alone) */
    for (int i = c0; i < c1; i++) {
        int c = dx ? i : c1 - 1 - (i - c0);
        int n0 = c * chunk_rows, R = N - n0 < chunk_rows ? N - n0 : chunk_rows;
        const float *xc = x + (size_t)n0 * C;
        if (!dx) {
            lo = eval_chunk(h, ops, losses, x, targets, n0, R, softcap, z);
            continue;
        }
        chunk_dz(h, ops, losses, xc, targets, n0, R, R, softcap, grad_scale, z);
        input_grad(h, R, z, dx + (size_t)n0 * C);
        weight_grad(h, R, z, xc, dw);
    }
    return lo;
}

/* The row passes of the kernel path this thread runs now. */
static const lm_head_row_ops *row_ops_now(void)
{
    cpu_kernel_path path = kernel_path_select_now();
    return path == CPU_KERNELS_AVX512 ? &lm_head_row_ops_avx512
           : path >= CPU_KERNELS_AVX2  ? &lm_head_row_ops_avx2
                                       : &lm_head_row_ops_portable;
}

static void head_pass(float *losses, float *dx, float *dw, const float *x,
                      const float *w, const int32_t *targets, int N, int C, int V,
                      float softcap, float grad_scale, float *scratch, int chunk_rows,
                      lm_head_workspace *ws)
{
    int want_grad = dx != NULL;
    const lm_head_row_ops *ops = row_ops_now();
    head_gemms h = {ws, ws ? ws->gemm : NULL, 0, w, C, V, logits_ld(V)};
    int n_chunks = (N + chunk_rows - 1) / chunk_rows;
    /* the first chunk's raw logits: what an evaluation call leaves in scratch (its chunks run last
     * to first) and a training call of one chunk may take from it (lm_head_workspace.logits_rows) */
    int raw_chunk = ws && softcap == 0;
    int have_logits = want_grad && raw_chunk && n_chunks == 1 && ws->logits_rows >= N;
    int held_from = have_logits ? ws->logits_from : 0;   /* rows before it: not held */
    if (ws)
        ws->logits_rows = ws->logits_from = 0;
    if (ws && n_chunks > 1) { /* one chunk: packing first would not pay */
        tempo_error err;
        h.packed = gemm_packed_b_pack(&ws->w_t, &ws->gemm->cfg, 1, C, V, w, C, &err) == 0 &&
                   (!want_grad ||
                    gemm_packed_b_pack(&ws->w_n, &ws->gemm->cfg, 0, V, C, w, C, &err) == 0);
        /* out of memory: the unpacked products below give the same sums */
    }
    int nt = omp_get_level() > 0 ? 1 : omp_get_max_threads();
    nt = nt < n_chunks ? nt : n_chunks;
    int lo0 = 0;   /* an evaluation: chunk 0's first wanted row (its logits are held from there) */
    size_t zf = lm_head_scratch_floats(chunk_rows, V), pf = want_grad ? (size_t)V * C : 0;
    if (ws && nt > 1 && ensure_thread_state(ws, nt, zf, pf)) {
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num();
            head_gemms ht = h;
            ht.gemm = &ws->thread_gemm[t];
            float *z = t == 0 ? scratch : ws->thread_scratch + (size_t)(t - 1) * zf;
            float *dwt = t == 0 || !want_grad ? dw : ws->dw_partial + (size_t)(t - 1) * pf;
            if (t > 0 && want_grad)
                memset(dwt, 0, sizeof(float) * pf);
            int lo = chunks_on_thread(&ht, ops, t * n_chunks / nt, (t + 1) * n_chunks / nt, losses, dx,
                                      dwt, x, targets, N, softcap, grad_scale, z, chunk_rows);
            if (t == 0)
                lo0 = lo;
#pragma omp barrier
            if (want_grad) {
#pragma omp for schedule(static)
                for (size_t i = 0; i < pf; i++) {
                    float s = dw[i];
                    for (int u = 1; u < nt; u++)
                        s += ws->dw_partial[(size_t)(u - 1) * pf + i];
                    dw[i] = s;
                }
            }
        }
        if (raw_chunk && !want_grad) { /* thread 0's scratch: its chunks ran last to first, the first last */
            ws->logits_rows = chunk_rows;
            ws->logits_from = lo0;
        }
        return;
    }
    for (int i = 0; i < n_chunks; i++) {
        int n0 = (want_grad ? i : n_chunks - 1 - i) * chunk_rows;   /* evaluation: last to first, as above */
        int R = N - n0 < chunk_rows ? N - n0 : chunk_rows;
        const float *xc = x + (size_t)n0 * C;
        if (!want_grad) {
            lo0 = eval_chunk(&h, ops, losses, x, targets, n0, R, softcap, scratch);
            continue;
        }
        /* the logits held from an evaluation (have_logits) but for the rows it skipped */
        chunk_dz(&h, ops, losses, xc, targets, n0, R, have_logits ? held_from : R, softcap, grad_scale, scratch);
        input_grad(&h, R, scratch, dx + (size_t)n0 * C);
        weight_grad(&h, R, scratch, xc, dw);
    }
    if (raw_chunk && !want_grad) { /* the row passes left z as it was */
        ws->logits_rows = N < chunk_rows ? N : chunk_rows;
        ws->logits_from = lo0;
    }
}

void lm_head_loss_forward(float *losses, const float *x, const float *w,
                          const int32_t *targets, int N, int C, int V,
                          float softcap, float *scratch, int chunk_rows,
                          lm_head_workspace *ws)
{
    head_pass(losses, NULL, NULL, x, w, targets, N, C, V, softcap, 0.0f, scratch, chunk_rows,
              ws);
}

void lm_head_loss_forward_backward(float *losses, float *dx, float *dw,
                                   const float *x, const float *w,
                                   const int32_t *targets, int N, int C, int V,
                                   float softcap, float grad_scale, float *scratch,
                                   int chunk_rows, lm_head_workspace *ws)
{
    head_pass(losses, dx, dw, x, w, targets, N, C, V, softcap, grad_scale, scratch, chunk_rows,
              ws);
}

/* ---- one chunk's training pass in pieces (lm_head.h) ---- */

int lm_head_split_begin(lm_head_workspace *ws, int N, float softcap, int chunk_rows)
{
    if (!ws || !ws->gemm || N < 1 || N > chunk_rows)
        return -1;
    int fresh = softcap == 0 && ws->logits_rows >= N ? ws->logits_from : N;
    ws->logits_rows = ws->logits_from = 0;
    return fresh;
}

void lm_head_dz_rows(float *losses, const float *x, const float *w, const int32_t *targets, int r0, int r1,
                     int fresh, int C, int V, float softcap, float grad_scale, float *scratch,
                     lm_head_workspace *ws, gemm_context *ctx)
{
    if (r1 <= r0)
        return;
    head_gemms h = {ws, ctx, 0, w, C, V, logits_ld(V)};
    int from = fresh - r0 < 0 ? 0 : fresh - r0 > r1 - r0 ? r1 - r0 : fresh - r0;
    chunk_dz(&h, row_ops_now(), losses, x + (size_t)r0 * C, targets, r0, r1 - r0, from, softcap, grad_scale,
             scratch + (size_t)r0 * h.ldz);
}

void lm_head_dx_rows(float *dx, const float *w, int r0, int r1, int C, int V, const float *scratch,
                     gemm_context *ctx)
{
    if (r1 <= r0)
        return;
    head_gemms h = {NULL, ctx, 0, w, C, V, logits_ld(V)};
    input_grad(&h, r1 - r0, scratch + (size_t)r0 * h.ldz, dx + (size_t)r0 * C);
}

void lm_head_dw_rows(float *dw, const float *x, int N, int v0, int v1, int C, int V, const float *scratch,
                     gemm_context *ctx)
{
    if (v1 <= v0)
        return;
    head_gemms h = {NULL, ctx, 0, NULL, C, v1 - v0, logits_ld(V)};   /* the vocabulary's rows [v0, v1) */
    weight_grad(&h, N, scratch + v0, x, dw + (size_t)v0 * C);
}

void lm_head_loss_ref(float *losses, float *dx, float *dw, const float *x,
                      const float *w, const int32_t *targets, int N, int C, int V,
                      float softcap, float grad_scale, float *scratch)
{
    for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * C;
        double mx = -INFINITY;
        for (int v = 0; v < V; v++) {
            double s = 0;
            for (int c = 0; c < C; c++)
                s += (double)xn[c] * w[(size_t)v * C + c];
            if (softcap > 0)
                s = softcap * tanh(s / softcap);
            scratch[v] = (float)s;
            mx = s > mx ? s : mx;
        }
        double sum = 0;
        for (int v = 0; v < V; v++)
            sum += exp(scratch[v] - mx);
        double lse = mx + log(sum);
        losses[n] = (float)(lse - scratch[targets[n]]);
        if (!dx)
            continue;
        for (int c = 0; c < C; c++)
            dx[(size_t)n * C + c] = 0;
        for (int v = 0; v < V; v++) {
            double z = scratch[v];
            double g = exp(z - lse) - (v == targets[n]);
            if (softcap > 0)
                g *= 1.0 - (z / softcap) * (z / softcap);
            g *= grad_scale;
            for (int c = 0; c < C; c++) {
                dx[(size_t)n * C + c] += (float)(g * w[(size_t)v * C + c]);
                dw[(size_t)v * C + c] += (float)(g * xn[c]);
            }
        }
    }
}
