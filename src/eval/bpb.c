/* bpb.c - sliding-window bits-per-byte evaluation (see bpb.h). */
#include "eval/bpb.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/timer.h"

static int evaluate_windows(model *m, const int32_t *tokens, size_t n_tokens, uint64_t n_bytes, int stride,
                            int batch, int part, int parts, double lr, const bpb_token_out *out,
                            progress_meter *progress, bpb_result *res, tempo_error *err);

int bpb_evaluate(model *m, const int32_t *tokens, size_t n_tokens, uint64_t n_bytes, const bpb_options *o,
                 bpb_result *res, tempo_error *err)
{
    static const bpb_options plain = {0};
    if (!o)
        o = &plain;
    const int parts = o->parts > 1 ? o->parts : 1;
    if (o->lr == 0)
        return evaluate_windows(m, tokens, n_tokens, n_bytes, o->stride, o->batch, parts > 1 ? o->part : 0, parts,
                                0, o->out, o->progress, res, err);
    if (!(o->lr > 0) || !isfinite(o->lr))
        return tempo_fail(err, "evaluation: the reading learning rate must be a finite number >= 0, not %g", o->lr);
    if (model_params_save(m, err))
        return -1;
    model_set_mixture(m, NULL, 1);   /* the steps learn the plain cross-entropy, whatever training set */
    /* the windows between two steps read as one batch (the step's window first, its backward on that
     * row alone: bpb_adapt_step); on a GPU one at a time (its backward covers the whole forward) */
    int batch = model_device(m) ? 1 : o->batch < model_max_batch(m) ? o->batch : model_max_batch(m);
    int rc = evaluate_windows(m, tokens, n_tokens, n_bytes, o->stride, batch, 0, 1, o->lr, o->out, o->progress,
                              res, err);
    tempo_error e2;
    if (model_params_restore(m, rc ? &e2 : err))   /* the model as it was trained */
        rc = -1;
    model_zero_grad(m);
    return rc;
}

int bpb_windows_init(bpb_windows *w, int context, size_t n_tokens, int stride, tempo_error *err)
{
    memset(w, 0, sizeof *w);
    if (n_tokens < 2)
        return tempo_fail(err, "evaluation text: too short to score (%zu tokens)", n_tokens);
    w->T = (size_t)context > n_tokens - 1 ? (int)(n_tokens - 1) : context;
    w->stride = stride <= 0 || stride > w->T ? w->T : stride;
    w->last = n_tokens - 1;
    return 0;
}

int bpb_windows_next(bpb_windows *w, size_t *start, size_t *first, size_t *end)
{
    if (w->end >= w->last)
        return 0;
    size_t e = w->end == 0 ? (size_t)w->T : w->end + (size_t)w->stride;
    if (e > w->last)
        e = w->last;
    *start = e - (size_t)w->T;   /* inputs start..e-1, targets start+1..e */
    *first = w->end + 1;
    *end = e;
    w->end = e;
    return 1;
}

int bpb_adapt_due(const bpb_windows *w, size_t learned_end)
{
    return w->end - learned_end >= (size_t)w->T || w->end == w->last;
}

/* The backward pass reuses the last forward's activations (after an
 * evaluation-mode forward it recomputes the head's pass, model.h). */
void bpb_adapt_step(model *m, double lr)
{
    model_zero_grad(m);
    model_backward_rows(m, 1);
    /* a norm that is not finite is no step: the model stays as it is */
    model_sgd_step(m, lr, BPB_ADAPT_CLIP);
}

/* One forward's rows: windows in order, every `parts`-th one from `part`. */
typedef struct {
    int32_t *in, *tg;   /* [batch][T] inputs and targets */
    int32_t *first;     /* per row: the row offset of its first new target (the head reads from there) */
    size_t *row_start;  /* per row: the stream index of its first input */
} window_rows;

static void rows_free(window_rows *r)
{
    free(r->in); free(r->tg); free(r->first); free(r->row_start);
}

static int rows_alloc(window_rows *r, int batch, int T, tempo_error *err)
{
    r->in = malloc(sizeof(int32_t) * (size_t)batch * T);
    r->tg = malloc(sizeof(int32_t) * (size_t)batch * T);
    r->first = malloc(sizeof(int32_t) * (size_t)batch);
    r->row_start = malloc(sizeof(size_t) * (size_t)batch);
    if (r->in && r->tg && r->first && r->row_start)
        return 0;
    rows_free(r);
    return tempo_fail(err, "evaluation: out of memory");
}

/* Row k: the window whose inputs start at `start` and whose first new target is `from`. */
static void rows_put(window_rows *r, int k, int T, const int32_t *tokens, size_t start, size_t from)
{
    memcpy(r->in + (size_t)k * T, tokens + start, sizeof(int32_t) * (size_t)T);
    memcpy(r->tg + (size_t)k * T, tokens + start + 1, sizeof(int32_t) * (size_t)T);
    r->first[k] = (int32_t)(from - 1 - start);   /* row offset of target `from` (< T) */
    r->row_start[k] = start;
}

/* The next rows (up to batch) of this part's windows; returns how many. */
static int rows_fill(window_rows *r, bpb_windows *win, const int32_t *tokens, int batch, int part, int parts,
                     uint64_t *window)
{
    int rows = 0;
    size_t start, from, end;
    while (rows < batch && bpb_windows_next(win, &start, &from, &end)) {
        if ((*window)++ % (uint64_t)parts != (uint64_t)part)   /* another part's window */
            continue;
        rows_put(r, rows++, win->T, tokens, start, from);
    }
    return rows;
}

/* The learning reader's next rows: the windows up to and including the next one whose step is due
 * (at most batch), counted on a copy of the windows first; the due one goes to row 0 (the step's
 * backward reads row 0 alone) and the others follow it in order. Returns how many; *due: 1 when
 * row 0 is due (then rows_record reads row 0 last, so the sum runs in the text's order). */
static int rows_fill_learning(window_rows *r, bpb_windows *win, const int32_t *tokens, int batch,
                              size_t learned_end, int *due)
{
    bpb_windows ahead = *win;
    int rows = 0;
    size_t start, from, end;
    *due = 0;
    while (!*due && rows < batch && bpb_windows_next(&ahead, &start, &from, &end)) {
        rows++;
        *due = bpb_adapt_due(&ahead, learned_end);
    }
    for (int i = 0; i < rows; i++) {
        bpb_windows_next(win, &start, &from, &end);
        rows_put(r, *due ? (i + 1) % rows : i, win->T, tokens, start, from);
    }
    return rows;
}

/* The models one forward's rows run on: m alone, or (a CPU model, more than
 * one thread, more than one row a forward) n replicas of it, m first, each
 * on its own thread with a contiguous share of the rows (the thread
 * replicas of training, train/train_step.h): no synchronisation inside a
 * forward. Every row's figures are the same bits either way. */
typedef struct {
    int n;
    model *rep[16];
} window_models;

static void models_free(window_models *w)
{
    for (int s = 1; s < w->n; s++)
        model_free(w->rep[s]);
    w->n = 0;
}

/* The share of n that holds row k of `rows`; *a gets its first row. */
static int owner(int rows, int n, int k, int *a)
{
    int s = 0, b;
    model_replica_share(rows, 0, n, a, &b);
    while (k >= b)
        model_replica_share(rows, ++s, n, a, &b);
    return s;
}

/* m alone when replicas cannot help or cannot be made (out of memory: m
 * alone reads the same bits, only slower). */
static void models_init(window_models *w, model *m, int batch)
{
    w->n = 1;
    w->rep[0] = m;
    int n = omp_in_parallel() ? 1 : omp_get_max_threads();
    n = n < batch ? n : batch;
    n = n < 16 ? n : 16;   /* w->rep's room: more threads share the replicas' ops */
    if (n < 2 || model_device(m))
        return;
    for (int s = 1; s < n; s++) {
        tempo_error e;   /* room for any share of up to batch rows */
        if (model_create_replica(&w->rep[s], m, (batch + n - 1) / n, &e)) {
            models_free(w);
            return;
        }
        model_set_training(w->rep[s], 0);
        w->n = s + 1;
    }
}

/* The forward of rows r[0, rows): shared out among w's models when there
 * are enough rows, else on m alone. Returns how many models ran. */
static int models_forward(window_models *w, const int32_t *in, const int32_t *tg, const int32_t *from, int rows,
                          int T, float beta)
{
    int n = w->n < rows ? w->n : rows;
    if (n < 2) {
        model_forward_eval(w->rep[0], in, tg, rows, T, beta, from);
        return 1;
    }
#pragma omp parallel for schedule(static, 1) num_threads(n)
    for (int s = 0; s < n; s++) {
        int a, b;
        model_replica_share(rows, s, n, &a, &b);
        model_forward_eval(w->rep[s], in + (size_t)a * T, tg + (size_t)a * T, b - a, T, beta, from + a);
    }
    return n;
}

/* The last forward's figures for each row's new targets: their nats summed
 * into *nats, each token's into out's arrays; returns the tokens scored.
 * The forward ran on `used` of w's models, row k on the one whose share
 * holds it. */
static uint64_t rows_record(const window_models *w, int used, const window_rows *r, int rows, int T,
                            int row0_last, const bpb_token_out *out, double *nats)
{
    uint64_t scored = 0;
    for (int kk = 0; kk < rows; kk++) {
        int k = row0_last ? (kk + 1) % rows : kk;   /* row0_last: row 0 is the text's latest window */
        int a = 0, s = used > 1 ? owner(rows, used, k, &a) : 0;
        const model *m = w->rep[s];
        const float *losses = model_token_losses(m), *top = model_token_top_logprob(m);
        const float *log_norm = model_token_log_norm(m);
        const int32_t *top_id = model_token_top_id(m);
        for (size_t j = r->first[k]; j < (size_t)T; j++) {
            size_t at = (size_t)(k - a) * T + j, i = r->row_start[k] + 1 + j;
            *nats += losses[at];
            if (out->nats)
                out->nats[i] = losses[at];
            if (out->top)
                out->top[i] = top[at];
            if (out->top_id)
                out->top_id[i] = top_id[at];
            if (out->log_norm)
                out->log_norm[i] = log_norm[at];
            scored++;
        }
    }
    return scored;
}

/* The windows of part `part` of `parts`; with lr > 0 (one part, one window
 * per forward) the model learns as it reads (bpb_evaluate with lr > 0). */
static int evaluate_windows(model *m, const int32_t *tokens, size_t n_tokens, uint64_t n_bytes, int stride,
                            int batch, int part, int parts, double lr, const bpb_token_out *out,
                            progress_meter *progress, bpb_result *res, tempo_error *err)
{
    static const bpb_token_out none = {NULL, NULL, NULL, NULL, 0};
    if (!out)
        out = &none;
    memset(res, 0, sizeof *res);
    double t0 = timer_now();
    bpb_windows win;
    if (bpb_windows_init(&win, model_get_config(m)->context, n_tokens, stride, err))
        return -1;
    if (n_bytes == 0)
        return tempo_fail(err, "evaluation text: holds no bytes");
    const int T = win.T;
    if (batch < 1)
        batch = 1;
    window_rows r;
    if (rows_alloc(&r, batch, T, err))
        return -1;
    model_set_training(m, 0);     /* losses only: the head skips its gradient work */
    window_models w;
    models_init(&w, m, batch);
    double nats = 0;
    uint64_t scored = 0, window = 0;
    size_t learned_end = 0;       /* lr > 0: targets 1..learned_end have been learned from */
    if (parts < 1 || part < 0 || part >= parts || lr > 0)
        parts = 1, part = 0;
    while (win.end < win.last) {
        int due = 0;
        int rows = lr > 0 ? rows_fill_learning(&r, &win, tokens, batch, learned_end, &due)
                          : rows_fill(&r, &win, tokens, batch, part, parts, &window);
        if (rows == 0)
            break;   /* the remaining windows were all another part's */
        int used = models_forward(&w, r.in, r.tg, r.first, rows, T, out->beta);
        scored += rows_record(&w, used, &r, rows, T, due, out, &nats);
        /* score first, then learn: the step reads the window just scored (row 0, targets up to
         * win.end), every target of which is scored now */
        if (due) {
            bpb_adapt_step(m, lr);
            learned_end = win.end;
        }
        if (progress)
            progress_meter_update(progress, "the transformer", win.end, win.last);
    }
    model_set_training(m, 1);
    models_free(&w);
    if (out->nats)
        out->nats[0] = 0;
    if (out->top)
        out->top[0] = 0;
    if (out->top_id)
        out->top_id[0] = 0;
    if (out->log_norm)
        out->log_norm[0] = 0;
    rows_free(&r);
    if (parts == 1 && scored != n_tokens - 1)
        return tempo_fail(err, "evaluation: internal error: scored %llu of %zu tokens",
                          (unsigned long long)scored, n_tokens - 1);
    res->bits = nats / log(2.0);
    res->bpb = res->bits / (double)n_bytes;
    res->loss = nats / (double)scored;
    res->bytes = n_bytes;
    res->tokens = scored;
    res->context = T;
    res->stride = win.stride;
    res->seconds = timer_now() - t0;
    if (!isfinite(res->bpb))
        return model_device_error(m) ? tempo_fail(err, "evaluation: %s", model_device_error(m))
                                     : tempo_fail(err, "evaluation: the model produced a non-finite loss");
    return 0;
}

uint64_t bpb_count_bytes(const tokenizer *tok, const int32_t *tokens, size_t n)
{
    uint64_t bytes = 0;
    const uint8_t *b;
    for (size_t i = 0; i < n; i++)
        bytes += tok_token_bytes(tok, tokens[i], &b);
    return bytes;
}
