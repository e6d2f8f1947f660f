/* icl_engine.h - the real model behind icl_lm (icl.h): scores ICL requests
 * with the inference engine (infer/engine.h). The sequences of one item
 * (one per choice) share their prompt: the shared prefix is run once into a
 * KV-cache slot, copied to one slot per choice, and only each choice's own
 * tokens are run after it, so a 4-choice item with a long few-shot prompt
 * costs little more than one sequence. Many items go through each engine
 * step together (ragged chunks), so the weight products see many rows.
 * Results equal a full forward of each sequence up to float rounding
 * (tests/unit/test_icl_engine.c checks this against model_forward). */
#ifndef TEMPO_ICL_ENGINE_H
#define TEMPO_ICL_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "eval/icl.h"
#include "data/tokenizer.h"
#include "memory/hybrid.h"
#include "model/model.h"

typedef struct icl_engine icl_engine;

/* Over model m (which must outlive it). n_slots: KV-cache slots (sequences in
 * flight; 0 = as many as fit in about 256 MB, between 4 and 64). max_rows:
 * new tokens per engine step (0 = 2048; never less than the context). */
int icl_engine_create(icl_engine **out, model *m, int32_t sep, int n_slots, int max_rows,
                      tempo_error *err);
void icl_engine_free(icl_engine *x); /* NULL is fine */

/* Score with the hybrid model h (which must outlive x): each target by the
 * mixture of the transformer, h's count memory and a cache of the request's
 * tokens before it, at h's mixer weights (not learned within a request).
 * h without memory and cache, or NULL: the transformer alone. */
int icl_engine_set_hybrid(icl_engine *x, const hybrid_parts *h, tempo_error *err);

/* The icl_lm view (ctx = x; context = the model's). */
icl_lm icl_engine_lm(icl_engine *x);

/* Tokens a good score call holds: enough to fill the slots about twice. */
int icl_engine_batch_tokens(const icl_engine *x);

/* icl_run with the engine over model m (and the hybrid parts h, or NULL):
 * slots and batch size chosen as icl_engine_create(0, 0) and
 * icl_engine_batch_tokens do (o->batch_tokens is used when > 0). */
int icl_engine_run(model *m, const hybrid_parts *h, const tokenizer *tok, const char *tasks_dir,
                   const char *const *names, int n_names, const icl_options *o,
                   icl_task_result **results, int *n_results, icl_summary *s, tempo_error *err);

/* Rows actually run through the model so far (after prefix sharing). */
long long icl_engine_rows(const icl_engine *x);

#endif
