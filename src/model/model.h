/* model.h - the tempo model: a decoder-only transformer (pre-norm RMSNorm,
 * causal GQA attention with RoPE and optional QK-norm, ReLU^2 or SwiGLU MLP,
 * final norm, tied or untied head, optional logit soft-cap, no biases),
 * its one contiguous parameter buffer, forward and backward.
 *
 *   x = tok_emb[tokens]
 *   for each layer: x = x + attn(rmsnorm(x)); x = x + mlp(rmsnorm(x))
 *   loss = cross_entropy(head(rmsnorm(x)), targets)       (mean over B*T, nats)
 *
 * The per-layer pieces are in block.h; the kernels in src/kernels/cpu. This
 * file knows nothing of files (checkpoints) or optimisers. Not thread-safe: one
 * model is used by one caller at a time; the kernels use the OpenMP team, or
 * run alone on the calling thread inside a parallel region. Threads that
 * each need a model of the same parameters use replicas
 * (model_create_replica), one a thread. */
#ifndef TEMPO_MODEL_H
#define TEMPO_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/op_profile.h"
#include "model/config.h"

/* Rows of tokens per chunk of the fused head + cross-entropy (each thread's
 * logits scratch is MODEL_HEAD_CHUNK_ROWS x V floats: 4 MiB at vocab 4097).
 * Measured on cpu-default at 2 threads, three interleaved rounds of `tempo
 * bench train`: 128 rows 0.65-0.73 s per step, 256 rows 0.59-0.65, 512 rows
 * 0.67-0.75 (longer chunks amortise streaming the packed head weights,
 * until the logits outgrow what the caches hold). */
#define MODEL_HEAD_CHUNK_ROWS 256

typedef enum { TENSOR_EMBEDDING, TENSOR_MATRIX, TENSOR_NORM, TENSOR_HEAD } tensor_kind;

/* One named tensor of the parameter buffer: floats [offset, offset + numel).
 * shape[0..ndim-1]; linear weights are [out, in] (y = x W^T).
 * Names: "tok_emb" [V, C]; per layer i: "layers.i.attn_norm" [C],
 * "layers.i.wq" [H*D, C], "layers.i.wk" [Hkv*D, C], "layers.i.wv" [Hkv*D, C],
 * "layers.i.wo" [C, H*D], "layers.i.q_norm", "layers.i.k_norm" [D] (only with
 * qk_norm), "layers.i.mlp_norm" [C], "layers.i.w_up" [F, C], "layers.i.w_gate"
 * [F, C] (only SwiGLU), "layers.i.w_down" [C, F]; "final_norm" [C]; "head"
 * [V, C] (only untied). The buffer holds them in exactly this order with no
 * padding, so offsets are not necessarily 64-byte aligned (the buffer is). */
typedef struct {
    char name[64];
    size_t offset;
    size_t numel;
    int ndim;
    int shape[2];
    tensor_kind kind;
} model_tensor;

typedef struct model model;

/* The parameter layout of cfg (validated) without building a model: writes
 * up to max tensors into tensors (NULL: count only), in buffer order, and
 * returns how many there are; *n_params (may be NULL) gets the floats they
 * cover. The table model_tensor_at gives; the GPU model (model_cuda.h)
 * uses the same one, so the files are the same on both. At most
 * MODEL_MAX_TENSORS(n_layers) tensors. */
#define MODEL_MAX_TENSORS(n_layers) (3 + 11 * (n_layers))
int model_layout(const model_config *cfg, model_tensor *tensors, int max, size_t *n_params);

/* Validates cfg (model_config_validate), then allocates parameters (ONE
 * contiguous 64-byte-aligned buffer), gradients (same layout, zeroed), the
 * RoPE table and all activation/scratch buffers for up to max_batch sequences
 * of cfg->context tokens. Parameters start at zero: call model_init (or load
 * a checkpoint). No allocation happens after this: forward and backward never
 * malloc. Returns 0, or -1 with err set (code 2 for a bad config or
 * max_batch < 1, 1 when out of memory). */
int model_create(model **out, const model_config *cfg, int max_batch, tempo_error *err);
/* A model of base's config whose parameters ARE base's buffer (not a copy:
 * a change through either shows in both), with its own gradients,
 * activations and workspaces for max_batch sequences: the threads of one
 * training step each run a replica on their share of its rows
 * (train/train_step.h). Free it before base. Returns as model_create. */
int model_create_replica(model **out, model *base, int max_batch, tempo_error *err);
/* The rows [*first, *end) of share s of n contiguous shares of `rows`, as
 * replicas take them (the later shares the larger when n does not divide). */
void model_replica_share(int rows, int s, int n, int *first, int *end);
void model_free(model *m); /* NULL is fine */

const model_config *model_get_config(const model *m);
int model_max_batch(const model *m);
size_t model_num_params(const model *m); /* floats in the parameter buffer (all parameters) */
float *model_params(model *m);
float *model_grads(model *m);
int model_num_tensors(const model *m);
const model_tensor *model_tensor_at(const model *m, int i); /* in buffer order */
int model_find_tensor(const model *m, const char *name);    /* index, or -1 */

/* Deterministic initialisation from seed (core/rng.h, one stream per tensor):
 * norms 1; tok_emb, wq, wk, wv, w_up, w_gate, head ~ N(0, init_std^2);
 * wo, w_down ~ N(0, (init_std / sqrt(2 n_layers))^2) so the residual stream's
 * variance does not grow with depth. */
void model_init(model *m, uint64_t seed);

/* Training mode (the default, 1): a forward with targets also computes the
 * head's gradients in the same pass (logits are then never recomputed) and
 * keeps them for model_backward. With 0 (evaluation) the forward computes
 * losses only, ~3x cheaper in the head; a model_backward after such a
 * forward recomputes the head pass, so results are the same either way. */
/* Whether m's products run on bf16 operands: cfg.bf16_products on a CPU
 * with AVX-512 BF16 (and the avx512 kernel path); with bf16_products set
 * elsewhere they run in fp32 (a trainer refuses that, an evaluation reads
 * on). */
int model_products_bf16(const model *m);
/* Whether this CPU (and TEMPO_KERNELS) would run bf16_products in bf16. */
int model_bf16_available(void);
/* Whether a model of config c would run its products in bf16 on this CPU: bf16_products
 * not MODEL_PRODUCTS_FP32 and model_bf16_available(). */
int model_config_products_bf16(const model_config *c);

void model_set_training(model *m, int training);

/* Train inside a mixture (the hybrid model, docs/hybrid_model.md): until set
 * again (b = NULL: plain cross-entropy), token n of each forward's targets
 * has the objective -ln(a p_n + b[n]) in its gradient (b[n]: the other
 * components' weighted probability of the target; b holds B*T floats and
 * must stay valid through forward and backward). Losses stay the
 * transformer's own cross-entropy. */
void model_set_mixture(model *m, const float *b, float a);
/* What model_set_mixture last set (*b NULL: none). */
void model_mixture(const model *m, const float **b, float *a);

/* Attach an op profile (core/op_profile.h) that forward and backward add
 * their ops' wall time to, or NULL (the default) to stop. The model does not
 * own it. */
void model_set_profile(model *m, op_profile *prof);

/* tokens, targets: [B*T], row-major (sequence b at [b*T, (b+1)*T)); B <=
 * max_batch, T <= context, ids in [0, vocab_size). Returns the mean
 * cross-entropy in nats over all B*T positions; targets may be NULL (no loss;
 * returns 0). Per-position losses (nats) are kept and readable via
 * model_token_losses until the next forward. Bad arguments (sizes, ids out of
 * range) return NAN and leave the model ready for another forward. */
double model_forward(model *m, const int32_t *tokens, const int32_t *targets, int B, int T);
const float *model_token_losses(const model *m); /* [B*T] of the last forward */
/* [B*T] of the last forward with targets: log of the largest next-token
 * probability at each position (the model's confidence, <= 0). */
const float *model_token_top_logprob(const model *m);
/* [B*T] of the last forward with targets in evaluation mode
 * (model_set_training(m, 0)): the id of that largest probability (the first
 * of equal ones). Stale after a training forward. */
const int32_t *model_token_top_id(const model *m);
/* [B*T] of the last model_forward_eval with targets: -ln sum_v p_v^beta at
 * each position for the beta it was given (all 0 for beta 1), so the
 * sharpened distribution p^beta / sum p^beta that the hybrid model mixes
 * (memory/mixer.h) gives the target exp(-beta loss + log_norm) and the top
 * token exp(beta top_logprob + log_norm). Stale after any other forward. */
const float *model_token_log_norm(const model *m);

/* model_forward in evaluation mode (model_set_training(m, 0)) whose head
 * also gives model_token_log_norm for the sharpening beta (<= 0: 1). The
 * losses, top probabilities and ids are model_forward's; beta reaches the
 * head for this call only. score_from (B entries, or NULL: all) says which
 * positions the caller reads: position t of row b when t >= score_from[b]
 * (a sliding window's targets scored by the window before). On the CPU the
 * head skips the others (their figures are 0; their logits are computed
 * later by a model_backward that needs them), and the mean returned is the
 * read positions' (0 when none); a GPU computes every position. */
double model_forward_eval(model *m, const int32_t *tokens, const int32_t *targets, int B, int T, float beta,
                          const int32_t *score_from);

/* Sets all gradients to 0. */
void model_zero_grad(model *m);

/* After model_forward with targets: ADDS d(mean loss)/d(params) into
 * model_grads (so micro-batches accumulate). Does nothing if the last forward
 * had no targets or failed. Calling it twice adds the gradient twice. */
void model_backward(model *m);

/* model_backward of the first `rows` sequences of the last forward only, as if
 * it had held just them (the mean over their rows * T positions; the same
 * bits as a forward of those rows alone, then model_backward). With a GPU
 * attached only rows = B (the whole forward) is done; other rows, or rows
 * outside [1, B], do nothing. */
void model_backward_rows(model *m, int rows);

/* Called by model_backward each time a span of the gradient buffer is final
 * for this pass (nothing later in the pass writes it), in the order the pass
 * finishes them: span 0 is the final norm and, untied, the head (to the end
 * of the buffer); span 1 + i is layer n_layers - 1 - i; the last span is the
 * embedding (with a tied head, its gradient too), from offset 0. The
 * n_layers + 2 spans are contiguous and cover the buffer once. A
 * data-parallel trainer starts reducing each span while the pass goes on. */
typedef void (*model_grad_ready_fn)(void *ctx, size_t offset, size_t count);
/* fn = NULL: none (the default). */
void model_set_grad_ready(model *m, model_grad_ready_fn fn, void *ctx);
/* The spans, in that order: model_grad_spans(m) of them; span i's offset
 * and count. */
int model_grad_spans(const model *m);
void model_grad_span(const model *m, int i, size_t *offset, size_t *count);

/* ---- running the passes on a GPU (model_cuda.h) ----
 * A model built by model_create_for_device holds parameters, gradients and
 * the per-token outputs but no activations; with a GPU model of the same
 * config attached (model_attach_device), model_forward, model_backward,
 * model_zero_grad and the calls below run there, and everything that reads
 * a model through this header (evaluation, the learning reader, ICL, the
 * mixer's fit) runs on the GPU unchanged. The host parameters are the GPU's
 * only after model_params_to_host; model_grads is not the GPU's gradient.
 * A pass that fails on the GPU returns NAN and leaves its message in
 * model_device_error. */
struct model_cuda;
int model_create_for_device(model **out, const model_config *cfg, int max_batch, tempo_error *err);
void model_attach_device(model *m, struct model_cuda *gm); /* gm NULL: the CPU again */
struct model_cuda *model_device(const model *m);
int model_params_to_host(model *m, tempo_error *err);      /* no-op without a device */
int model_params_to_device(model *m, tempo_error *err);    /* no-op without a device */
const char *model_device_error(const model *m);            /* NULL when none */

/* The learning reader's step (eval/bpb.h): the norms' gains (TENSOR_NORM)
 * keep their trained values (their gradient is zeroed: a reader that moved
 * them read 0.07-0.09 bpb worse, docs/hybrid_model.md); on the rest of the
 * last backward's gradient, its L2 norm, then (when finite) params -= lr'
 * grads, lr' = lr scaled down by clip / norm above clip. Returns the norm,
 * NaN when it was not finite (no step) or the GPU failed. */
double model_sgd_step(model *m, double lr, double clip);
/* A copy of the parameters set aside, and put back bit for bit (on the GPU
 * when one is attached). */
int model_params_save(model *m, tempo_error *err);
int model_params_restore(model *m, tempo_error *err);

/* Training FLOPs per token (see config.c for exactly
 * what is counted: the causal half of attention, the lm head even when tied). */
double model_flops_per_token(const model_config *c, int T);

/* Bytes of activations, scratch and saved state allocated by model_create
 * (everything except parameters and gradients). */
size_t model_activation_bytes(const model *m);

#endif
