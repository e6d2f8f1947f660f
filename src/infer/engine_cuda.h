/* engine_cuda.h - the inference engine's forward on a GPU (engine.h's
 * infer_step and infer_logits for a model with a device attached): the same
 * math on the same weights, read from the model's device copy, fp32
 * throughout (the projections through cuBLASLt in fp32, the attention of
 * each new row against its sequence's cached keys by
 * cuda_attention_decode). The KV cache moves to the GPU at the first step
 * (infer_cache_to_device). Used by engine.c only: it checks the step's
 * arguments first and keeps the slots' lengths. */
#ifndef TEMPO_INFER_ENGINE_CUDA_H
#define TEMPO_INFER_ENGINE_CUDA_H

#include "core/error.h"
#include "infer/engine.h"
#include "infer/kv_cache.h"
#include "model/model.h"

typedef struct infer_gpu infer_gpu;

/* The GPU side of an engine over model m (a device attached), for up to
 * max_rows new tokens a step. Refuses a context above 4096 positions or a
 * head dim above 256 (the decode attention's limits). 0, or -1 with err. */
int infer_gpu_create(infer_gpu **out, model *m, int max_rows, tempo_error *err);
void infer_gpu_free(infer_gpu *e); /* NULL is fine */

/* infer_step's work on the checked chunks (N new rows in all; the slots'
 * lengths not yet advanced): the rows' keys and values into the cache, the
 * final norm of the n_out rows whose logits are wanted. Waits for the GPU.
 * 0, or -1 with err (the GPU's error). */
int infer_gpu_step(infer_gpu *e, infer_cache *c, const infer_chunk *chunks, int n_chunks, int N, int n_out,
                   tempo_error *err);

/* The head product of output rows first .. first+n-1 of the last step:
 * logits [n, V] on the host (no soft-cap). 0, or -1 with err. */
int infer_gpu_logits(infer_gpu *e, int first, int n, float *logits, tempo_error *err);

#endif
