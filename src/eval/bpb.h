/* bpb.h - bits per byte of a token stream under a model (docs/architecture.md, "An evaluation").
 *
 * The stream is the token-store layout: SEP d1 SEP d2 ... dn SEP, standing for
 * n_bytes bytes of document text. Every token after the first is scored
 * exactly once, as -log2 p(token | up to `context` preceding tokens); the
 * leading SEP is given (it stands for no byte and begins every stream). The
 * separators after documents stand for no bytes either, but are predicted and
 * their bits counted, which can only make bpb larger (honest). bpb = total
 * bits / n_bytes.
 *
 * Sliding windows: window k ends at target index e_k = min(n-1, T + k*stride)
 * and starts at e_k - T; it scores the targets after e_{k-1}. stride = T gives
 * disjoint windows (each token sees 0..T-1 tokens of context); a smaller
 * stride gives every scored token at least T - stride tokens of context. */
#ifndef TEMPO_BPB_H
#define TEMPO_BPB_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/progress.h"
#include "data/tokenizer.h"
#include "eval/bpb_result.h"
#include "model/model.h"

/* Per-token outputs of an evaluation, each indexed by the stream position
 * of the scored token (i = 1..n_tokens-1; entry 0 is set to 0); any may be
 * NULL. */
typedef struct {
    double *nats;       /* -ln p of the token */
    float *top;         /* the log of the largest probability the model gave there (model_token_top_logprob) */
    int32_t *top_id;    /* that probability's id (model_token_top_id) */
    float *log_norm;    /* -ln sum_v p_v^beta there, for beta below (model_token_log_norm) */
    float beta;         /* the sharpening log_norm is of (0 or 1: none; the hybrid model's mixer beta) */
} bpb_token_out;

/* How to read: zero fields are the defaults. */
typedef struct {
    int stride;                 /* a window's new targets (outside 1..T: T, the window) */
    int batch;                  /* windows per forward (<= the model's max batch; 0: 1) */
    int part, parts;            /* data-parallel evaluation (parts >= 2): only windows k (in order) with
                                 * k % parts == part are run; out's arrays get those windows' tokens and
                                 * are left untouched elsewhere, and res holds this part's bits and tokens.
                                 * The parts' token arrays, summed from zeros, are the whole reading's. */
    double lr;                  /* > 0: the model learns as it reads (below); 0: frozen */
    const bpb_token_out *out;   /* the per-token outputs wanted, or NULL */
    progress_meter *progress;   /* told the targets scored after each forward (stage "the transformer"),
                                 * or NULL */
} bpb_options;

/* The bits per byte of tokens[0..n_tokens) (n_bytes of text) under m, read
 * in sliding windows of the model's context (or less, for short streams).
 * The model is put in evaluation mode for the duration and left in training
 * mode afterwards. On a CPU with more than one thread, a forward's windows
 * are shared out among the threads, each running a replica of the model
 * (model_create_replica) on its share alone: the same bits as one model.
 * With o->lr > 0 the model learns as it reads (dynamic evaluation; the hybrid
 * model's rule, docs/hybrid_model.md: score first, then learn): the windows
 * run in order (parts are ignored; those between two steps as one forward
 * of up to batch rows on the CPU, the step's window in row 0, one at a time
 * on a GPU: the same bits either way), and whenever
 * the scored targets reach T (the window length) past the last step's, the
 * model takes one plain SGD step of rate lr on the mean cross-entropy of the
 * T targets ending there, every one of them already scored. So a token's
 * figures depend only on the tokens before it, and each target is learned
 * from once (the first window's T, then every T/stride-th window's). A step
 * is the backward pass of the window just scored (its forward is not run
 * again), its gradient's norm clipped to BPB_ADAPT_CLIP (so an untrained
 * model's large gradients cannot make it diverge; a trained cpu-default
 * model's norms are 1.2-3.1 on val, 0.5-8.3 on C headers, where a few early
 * steps are clipped); a gradient that is not finite is no step. Training
 * inside the mixture (model_set_mixture) is switched off: the steps learn
 * the plain cross-entropy. The parameters are restored bit for bit on
 * return (the gradients are left zero). A negative or non-finite lr: -1. */
#define BPB_ADAPT_CLIP 5.0
int bpb_evaluate(model *m, const int32_t *tokens, size_t n_tokens, uint64_t n_bytes, const bpb_options *o,
                 bpb_result *res, tempo_error *err);

/* The sliding windows above, one at a time in order, for a reader that
 * walks them itself (eval/predictor.h reads the same windows token by
 * token). */
typedef struct {
    int T, stride;   /* the window and its stride, fitted to the stream */
    size_t last;     /* index of the last target (n_tokens - 1) */
    size_t end;      /* targets 1..end are scored (0 before the first window) */
} bpb_windows;

/* The windows over a stream of n_tokens for a model of `context` tokens:
 * T = min(context, n_tokens - 1), a stride outside 1..T is T. 0, or -1 when
 * the stream is too short to score (fewer than 2 tokens). */
int bpb_windows_init(bpb_windows *w, int context, size_t n_tokens, int stride, tempo_error *err);

/* The next window: 1 with its inputs tokens[*start .. *start + T) and its
 * scored targets *first .. *end (*end = *start + T); 0 after the last. */
int bpb_windows_next(bpb_windows *w, size_t *start, size_t *first, size_t *end);

/* The learning reader (bpb_evaluate with lr > 0): 1 when it steps after the
 * window that scored targets up to w->end, its last step having learned
 * targets up to learned_end. */
int bpb_adapt_due(const bpb_windows *w, size_t learned_end);

/* Its step: one plain SGD step of rate lr on the mean cross-entropy of the
 * window in the first row of the model's last forward, that forward's
 * activations reused, the norms' gains left as trained and the rest of the
 * gradient's norm clipped to BPB_ADAPT_CLIP (model_sgd_step). */
void bpb_adapt_step(model *m, double lr);

/* Bytes of text that tokens[0..n) stand for under tok (separators: none);
 * exact, so a prefix of a stream can be scored honestly. */
uint64_t bpb_count_bytes(const tokenizer *tok, const int32_t *tokens, size_t n);

#endif
