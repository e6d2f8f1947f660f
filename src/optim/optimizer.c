/* optimizer.c - AdamW and Muon updates, gradient norm (see optimizer.h).
 * Newton-Schulz runs on the GEMM (through the optimizer's per-thread
 * gemm_contexts); the AdamW update and the gradient's sum of squares are the
 * vectorised kernels of kernels/cpu/optim_kernels.h; Muon's elementwise loops
 * are plain loops here. Newton-Schulz's loops use static schedules; the Muon
 * step hands out whole matrices dynamically (largest first, for balance), each
 * computed by one thread alone with its own workspace, so which thread takes
 * which does not change a result: deterministic per thread count. */
#include "optim/optimizer.h"
#include "core/omp_team.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/optim_kernels.h"

size_t optim_ns_work_len(int rows, int cols)
{
    size_t r = (size_t)(rows < cols ? rows : cols), c = (size_t)(rows < cols ? cols : rows);
    return 2 * r * c + 2 * r * r;
}

/* Size ctx's workspace for the three GEMM shapes of Newton-Schulz on a
 * rows x cols matrix (r = min, n = max; see optim_newton_schulz), run on one
 * thread as optim_step runs them. */
static int ns_reserve(gemm_context *ctx, int rows, int cols)
{
    int r = rows < cols ? rows : cols, n = rows < cols ? cols : rows;
    return gemm_context_reserve(ctx, r, r, n, 1) || gemm_context_reserve(ctx, r, r, r, 1) ||
           gemm_context_reserve(ctx, r, n, r, 1);
}

void optim_tensor_span(const optim_tensor *tensors, int t_begin, int t_end, size_t *begin, size_t *len)
{
    if (t_begin >= t_end) {
        *begin = t_begin > 0 ? tensors[t_begin - 1].offset + tensors[t_begin - 1].numel : 0;
        *len = 0;
        return;
    }
    *begin = tensors[t_begin].offset;
    *len = tensors[t_end - 1].offset + tensors[t_end - 1].numel - *begin;
}

int optim_partition(const optim_tensor *tensors, int n_tensors, int parts, int part, int *t_begin, int *t_end)
{
    size_t total = 0;
    for (int i = 0; i < n_tensors; i++) {
        if (tensors[i].offset != total)
            return -1;
        total += tensors[i].numel;
    }
    /* part p starts at the first tensor whose run so far reaches p/parts of the total */
    int bound[2];
    for (int k = 0; k < 2; k++) {
        int p = part + k, i = 0;
        if (p >= parts) {
            bound[k] = n_tensors;
            continue;
        }
        size_t target = (size_t)((double)total * p / parts + 0.5), run = 0;
        while (i < n_tensors && run + tensors[i].numel / 2 < target)
            run += tensors[i++].numel;
        bound[k] = p == 0 ? 0 : i;
    }
    *t_begin = bound[0];
    *t_end = bound[1];
    return 0;
}

int optim_create(optimizer *o, const optim_config *cfg, const optim_tensor *tensors, int n_tensors,
                 size_t n_params, tempo_error *err)
{
    return optim_create_shard(o, cfg, tensors, n_tensors, n_params, 0, n_tensors, err);
}

int optim_create_shard(optimizer *o, const optim_config *cfg, const optim_tensor *tensors, int n_tensors,
                       size_t n_params, int t_begin, int t_end, tempo_error *err)
{
    memset(o, 0, sizeof *o);
    if (t_begin < 0 || t_end > n_tensors || t_begin > t_end)
        return tempo_fail(err, "optimizer: tensors %d..%d of %d", t_begin, t_end, n_tensors);
    for (int i = t_begin + 1; i < t_end; i++)
        if (tensors[i].offset != tensors[i - 1].offset + tensors[i - 1].numel)
            return tempo_fail(err, "optimizer: a shard's tensors must be contiguous (tensor %d)", i);
    o->cfg = *cfg;
    o->n_tensors = n_tensors;
    o->n_params = n_params;
    o->t_begin = t_begin;
    o->t_end = t_end;
    if (t_begin == 0 && t_end == n_tensors) {
        o->state_base = 0;
        o->state_len = n_params;
    } else {
        optim_tensor_span(tensors, t_begin, t_end, &o->state_base, &o->state_len);
    }
    o->n_workers = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
    o->tensors = malloc(sizeof *tensors * (size_t)(n_tensors ? n_tensors : 1));
    o->m = calloc(o->state_len ? o->state_len : 1, sizeof(float));
    o->v = calloc(o->state_len ? o->state_len : 1, sizeof(float));
    o->muon_order = malloc(sizeof(int) * (size_t)(n_tensors ? n_tensors : 1));
    o->gemm = gemm_context_array_new(o->n_workers, NULL);
    size_t work = 0;
    for (int i = t_begin; i < t_end; i++)
        if (tensors[i].group == GROUP_MATRIX) {
            size_t w = optim_ns_work_len(tensors[i].rows, tensors[i].cols);
            if (w > work) work = w;
        }
    o->ns_work_len = work;
    o->ns_work = malloc(sizeof(float) * (work ? work * (size_t)o->n_workers : 1));
    int oom = !o->tensors || !o->m || !o->v || !o->ns_work || !o->muon_order || !o->gemm;
    /* Which worker takes which matrix is decided at run time (dynamic share-out), so
     * every worker's GEMM workspace is sized now for every matrix: no step allocates. */
    for (int w = 0; !oom && cfg->use_muon && w < o->n_workers; w++)
        for (int i = t_begin; !oom && i < t_end; i++)
            if (tensors[i].group == GROUP_MATRIX)
                oom = ns_reserve(&o->gemm[w], tensors[i].rows, tensors[i].cols) != 0;
    if (oom) {
        optim_free(o);
        return tempo_fail(err, "optimizer: out of memory for %zu parameters", n_params);
    }
    memcpy(o->tensors, tensors, sizeof *tensors * (size_t)n_tensors);
    /* Muon's matrices, largest first (insertion sort: a few dozen), so the
     * dynamic share-out ends with the small ones. */
    for (int i = t_begin; i < t_end; i++) {
        if (tensors[i].group != GROUP_MATRIX)
            continue;
        int j = o->n_muon++;
        while (j > 0 && tensors[o->muon_order[j - 1]].numel < tensors[i].numel) {
            o->muon_order[j] = o->muon_order[j - 1];
            j--;
        }
        o->muon_order[j] = i;
    }
    return 0;
}

void optim_free(optimizer *o)
{
    free(o->tensors);
    free(o->m);
    free(o->v);
    free(o->ns_work);
    gemm_context_array_free(o->gemm, o->n_workers);
    free(o->muon_order);
    memset(o, 0, sizeof *o);
}

double optim_grad_norm(const float *grads, size_t n)
{
    return sqrt(optim_kernel_sum_squares(grads, n));
}

/* C = A B^T etc. through ctx when given. */
static void ns_gemm(gemm_context *ctx, int ta, int tb, int M, int N, int K, const float *A,
                    int lda, const float *B, int ldb, float *C, int ldc)
{
    if (ctx)
        gemm_f32_ctx(ctx, ta, tb, M, N, K, A, lda, B, ldb, 0.0f, C, ldc);
    else
        gemm_f32(ta, tb, M, N, K, A, lda, B, ldb, 0.0f, C, ldc);
}

/* The products X X^T and A A (A symmetric) of Newton-Schulz are symmetric
 * bit for bit: element (i, j) and (j, i) sum the same products (x_ik x_jk,
 * or a_ik a_kj = a_jk a_ki) in the same order of k, and the GEMM's sums
 * depend only on how K is sliced (gemm_kernel.h), which only K decides. So
 * the upper triangle is computed, by blocks of NS_UPPER_ROWS rows from the
 * block's first row's 16-column tile on (a multiple of the 6- and 24-row
 * tiles), and the lower one copied from it: 67 % of the product's work at
 * r = 128, the same bits as the whole product. A 128 x 128 matrix's five
 * iterations took 0.655-0.658 ms against 0.743-0.845 whole on one Zen 3
 * thread, a 128 x 352 one 1.47-1.48 against 1.68-1.97 (rows of 24: 0.67 and
 * 1.51; lab notebook, 2026-12-07). */
#define NS_UPPER_ROWS 48

/* C (r x r, rows ldc apart) = op(A) op(B) with A r x K (not transposed) and
 * op(B) K x r, computed where column >= row and in a few tiles left of it;
 * the rest of C is left as it was. */
static void ns_gemm_upper(gemm_context *ctx, int tb, int r, int K, const float *A, int lda, const float *B,
                          int ldb, float *C, int ldc)
{
    for (int i0 = 0; i0 < r; i0 += NS_UPPER_ROWS) {
        int h = r - i0 < NS_UPPER_ROWS ? r - i0 : NS_UPPER_ROWS, j0 = i0 / 16 * 16;
        const float *Bj = tb ? B + (size_t)j0 * ldb : B + j0;   /* op(B)'s columns from j0 */
        ns_gemm(ctx, 0, tb, h, r - j0, K, A + (size_t)i0 * lda, lda, Bj, ldb, C + (size_t)i0 * ldc + j0, ldc);
    }
}

/* C = b C + c D on and above the diagonal (b = 1, c = 0: C as it is), each
 * value also written to its mirror below (r x r, rows r apart), by 32 x 32
 * blocks so that the mirrored writes stay in L1. The lower triangles of C
 * and D are not read. */
static void upper_combine_mirror(float *C, const float *D, int r, float b, float c)
{
    enum { BS = 32 };
    int plain = b == 1.0f && c == 0.0f;
    for (int i0 = 0; i0 < r; i0 += BS)
        for (int j0 = i0; j0 < r; j0 += BS)
            for (int i = i0; i < i0 + BS && i < r; i++)
                for (int j = j0 > i ? j0 : i; j < j0 + BS && j < r; j++) {
                    float v = plain ? C[(size_t)i * r + j] : b * C[(size_t)i * r + j] + c * D[(size_t)i * r + j];
                    C[(size_t)i * r + j] = v;
                    C[(size_t)j * r + i] = v;
                }
}

/* Elementwise loops are worth a team only above this many floats, and only
 * from serial code (core/omp_team.h): optim_step runs each matrix on one
 * thread of its team, where a region would be a nested team of one. */
#define NS_PAR_MIN 16384

void optim_newton_schulz(float *G, int rows, int cols, int steps, float *work,
                         gemm_context *gemm)
{
    const float a = 3.4445f, b = -4.7750f, c = 2.0315f;
    int transposed = rows > cols;
    int r = transposed ? cols : rows, n = transposed ? rows : cols;
    size_t rn = (size_t)r * n, rr = (size_t)r * r;
    float *X = work, *A = X + rn, *AA = A + rr, *Y = AA + rr;
    float inv = (float)(1.0 / (sqrt(optim_kernel_sum_squares(G, rn)) + 1e-7));
    int team_rn = omp_team_worth(rn, NS_PAR_MIN);
    if (transposed)
        OMP_TEAM_FOR(team_rn, int, j, cols,
                     for (int i = 0; i < rows; i++) X[(size_t)j * n + i] = G[(size_t)i * cols + j] * inv);
    else
        OMP_TEAM_FOR(team_rn, size_t, i, rn, X[i] = G[i] * inv);
    for (int s = 0; s < steps; s++) {
        ns_gemm_upper(gemm, 1, r, n, X, n, X, n, A, r);   /* A = X X^T: its upper triangle */
        upper_combine_mirror(A, NULL, r, 1.0f, 0.0f);     /* and the lower */
        ns_gemm_upper(gemm, 0, r, r, A, r, A, r, AA, r);  /* AA = A A: its upper triangle */
        upper_combine_mirror(A, AA, r, b, c);             /* B = bA + cA^2, symmetric too */
        ns_gemm(gemm, 0, 0, r, n, r, A, r, X, n, Y, n);   /* Y = B X */
        OMP_TEAM_FOR(team_rn, size_t, i, rn, X[i] = a * X[i] + Y[i]);
    }
    if (transposed) {
        OMP_TEAM_FOR(team_rn, int, i, rows,
                     for (int j = 0; j < cols; j++) G[(size_t)i * cols + j] = X[(size_t)j * n + i]);
    } else {
        memcpy(G, X, sizeof(float) * rn);
    }
}

void optim_group_lr_wd(const optim_config *c, optim_group g, float *lr, float *wd)
{
    switch (g) {
    case GROUP_EMBED: *lr = c->lr_embed; *wd = 0; break;
    case GROUP_HEAD: *lr = c->lr_head; *wd = c->weight_decay; break;
    case GROUP_NORM: *lr = c->lr_scalar; *wd = 0; break;
    default: *lr = c->lr; *wd = c->weight_decay; break;
    }
}

static void adamw_range(const optim_config *c, float *p, const float *g, float *m, float *v, size_t n,
                        float lr, float wd, float gscale, double bc1, double bc2)
{
    optim_adamw_coeffs k = {
        .beta1 = c->beta1, .beta2 = c->beta2, .eps = c->eps, .step = (float)(lr / bc1),
        .inv_bc2 = (float)(1.0 / bc2), .decay = 1.0f - lr * wd, .gscale = gscale,
    };
    optim_kernel_adamw(p, g, m, v, n, &k);
}

/* Muon for one matrix, on the calling thread (the loops and GEMMs inside
 * run on a team of one when called in a parallel region). */
static void muon_tensor(optimizer *o, const optim_tensor *t, float *p, float *g, float lr, float wd,
                        float gscale, float *work, gemm_context *gemm)
{
    const optim_config *c = &o->cfg;
    float *buf = o->m + (t->offset - o->state_base);
    float *upd = o->v + (t->offset - o->state_base); /* Muon tensors have no second moment: reuse v as scratch */
    const float mu = c->muon_momentum;
    size_t n = t->numel;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * gscale;
        buf[i] = mu * buf[i] + gi;
        upd[i] = gi + mu * buf[i]; /* Nesterov */
    }
    optim_newton_schulz(upd, t->rows, t->cols, c->ns_steps, work, gemm);
    float scale = sqrtf(fmaxf(1.0f, (float)t->rows / (float)t->cols));
    const float step = lr * scale, decay = 1.0f - lr * wd;
    for (size_t i = 0; i < n; i++) {
        p[i] = p[i] * decay - step * upd[i];
        upd[i] = 0; /* keep v's Muon slots at zero so checkpoints are tidy */
    }
}

void optim_step(optimizer *o, float *params, float *grads, double grad_norm, double lr_mult)
{
    const optim_config *c = &o->cfg;
    float gscale = 1.0f;
    if (c->grad_clip > 0 && grad_norm > c->grad_clip)
        gscale = (float)(c->grad_clip / grad_norm);
    o->t++;
    double bc1 = 1.0 - pow(c->beta1, (double)o->t), bc2 = 1.0 - pow(c->beta2, (double)o->t);
    if (c->use_muon && o->n_muon > 0) {
        int nt = omp_get_max_threads();
        nt = nt < o->n_workers ? nt : o->n_workers;
        nt = nt < o->n_muon ? nt : o->n_muon;
        float muon_lr = (float)(c->lr_muon * lr_mult), muon_wd = c->weight_decay;
#pragma omp parallel num_threads(nt)
        {
            int w = omp_get_thread_num();
            float *work = o->ns_work + (size_t)w * o->ns_work_len;
#pragma omp for schedule(dynamic, 1)
            for (int k = 0; k < o->n_muon; k++) {
                const optim_tensor *t = &o->tensors[o->muon_order[k]];
                muon_tensor(o, t, params + t->offset, grads + t->offset, muon_lr, muon_wd, gscale,
                            work, &o->gemm[w]);
            }
        }
    }
    for (int i = o->t_begin; i < o->t_end; i++) {
        const optim_tensor *t = &o->tensors[i];
        if (t->group == GROUP_MATRIX && c->use_muon)
            continue;
        float lr, wd;
        optim_group_lr_wd(c, t->group, &lr, &wd);
        size_t at = t->offset - o->state_base;
        adamw_range(c, params + t->offset, grads + t->offset, o->m + at, o->v + at,
                    t->numel, (float)(lr * lr_mult), wd, gscale, bc1, bc2);
    }
}
