/* engine.h - the inference engine: the model's forward pass over new tokens
 * of many sequences at once, reading and extending a KV cache (kv_cache.h),
 * and the logits of the positions asked for. One function, infer_step, does
 * prefill (one sequence, many tokens), batched decode (many sequences, one
 * token each) and everything between (ragged chunks, e.g. several answer
 * continuations branched off one cached prompt).
 *
 * The math is exactly the training forward (model.h, block.h): the same
 * kernels (GEMM, RMSNorm, RoPE table, the tiled attention head, activations)
 * on the same weights, so logits from prefill + decode equal those of a full
 * forward over the same tokens up to float rounding (tests check this).
 * Products of many rows use the GEMM on weight matrices packed once at
 * creation (a copy: parameters changed later are not seen; make a new
 * engine); a one-row product (decode at batch 1) streams the model's own
 * weights once as dot products instead, which is what bounds decode speed.
 * The engine never writes the model, keeps its own scratch for up to
 * max_rows new tokens per step, and knows nothing of tokenizers, sampling
 * (sample.h) or files. Not thread-safe: one caller at a time; the kernels
 * use the OpenMP team.
 *
 * A model with a device attached (model_attach_device) runs its steps on
 * that GPU (engine_cuda.h), fp32, its weights read from the device: the
 * cache moves there at the first step (infer_cache_to_device), and the
 * logits come back to the host. Checked on the CPU emulator; its speed on
 * a GPU is unmeasured. */
#ifndef TEMPO_INFER_ENGINE_H
#define TEMPO_INFER_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "infer/kv_cache.h"
#include "model/model.h"

typedef struct infer_engine infer_engine;

/* Work for one cache slot in a step: n >= 0 new tokens, which take positions
 * len .. len+n-1 of the slot (len = its length before the step). Logits are
 * wanted for the chunk's rows [out_from, n): out_from = n - 1 for the next
 * token after a prompt, 0 for every row, n for none. */
typedef struct {
    int slot;
    const int32_t *tokens; /* [n] ids in [0, vocab) */
    int n;
    int out_from;
} infer_chunk;

/* An engine over model m's weights (m must outlive it and not change while
 * it is used), for at most max_rows new tokens per step. Memory: the packed
 * weight copy (about the parameters' size) plus scratch for max_rows rows.
 * Returns 0, or -1 with err set (max_rows < 1: code 2; out of memory: 1). */
int infer_engine_create(infer_engine **out, model *m, int max_rows, tempo_error *err);
void infer_engine_free(infer_engine *e); /* NULL is fine */

const model_config *infer_engine_config(const infer_engine *e);

/* Run the model over the chunks' new tokens, in one pass (all rows share each
 * weight product). Appends each chunk's keys/values to its slot and advances
 * the slot's length by n. Chunks must name distinct slots of c, with
 * len + n <= c->capacity, the rows sum to <= max_rows, and the cache must
 * have been made for this model's shape. On a bad argument returns -1 with
 * err set (code 2) and changes nothing. After success, infer_outputs() rows
 * (in chunk order, then row order) are ready for infer_logits. */
int infer_step(infer_engine *e, infer_cache *c, const infer_chunk *chunks, int n_chunks,
               tempo_error *err);

/* Rows with logits available from the last successful step. */
int infer_outputs(const infer_engine *e);

/* Logits [n, V] of output rows first .. first+n-1 of the last step (head
 * product and soft-cap, exactly as the training head computes them). On a
 * GPU that failed, NaN (and the next infer_step returns the error). */
void infer_logits(infer_engine *e, int first, int n, float *logits);

/* For one row of logits z [V]: -ln softmax(z)[target] (double precision),
 * and whether target is the greedy choice (the first index of the maximum,
 * as infer sampling and argmax take it). */
double infer_logits_nll(const float *z, int V, int32_t target, int *is_argmax);

/* First index of the maximum of z [V]. */
int32_t infer_argmax(const float *z, int V);

/* Bytes of weights one decode step reads (every matrix, norm and the head;
 * the embedding's one row per token is not counted; a tied head counts the
 * embedding once), for the memory-bandwidth bound. */
size_t infer_engine_weight_bytes(const infer_engine *e);

/* Forward FLOPs for one new token at position pos (0-based): 2 x (matrix
 * parameters + head) + attention 4 x n_layers x (pos + 1) x d_model. */
double infer_flops_per_token(const model_config *c, int pos);

#endif
