/* batch_encode.h - encode a batch of documents in parallel (OpenMP, one
 * tok_encoder with its cache per thread), results kept in document order.
 * The output does not depend on the thread count or scheduling: each document
 * is encoded independently. Knows nothing about files or splits. */
#ifndef TEMPO_BATCH_ENCODE_H
#define TEMPO_BATCH_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include "core/error.h"
#include "data/tokenizer.h"

typedef struct batch_encoder batch_encoder;

/* n_threads <= 0: OpenMP's default. */
int batch_encoder_new(batch_encoder **out, const tokenizer *t, int n_threads, tempo_error *err);
/* Queue a document (copied) with a caller tag (e.g. train/val). */
int batch_encoder_add(batch_encoder *b, const uint8_t *doc, size_t len, int tag, tempo_error *err);
/* Bytes and documents queued since the last clear. */
size_t batch_encoder_bytes(const batch_encoder *b);
size_t batch_encoder_count(const batch_encoder *b);
/* Encode every queued document. */
int batch_encoder_run(batch_encoder *b, tempo_error *err);
/* After run: document i's ids (n of them, no separator), its byte length and tag. */
const int32_t *batch_encoder_result(const batch_encoder *b, size_t i, size_t *n, size_t *len, int *tag);
/* Forget the queued documents (keeps memory for the next batch). */
void batch_encoder_clear(batch_encoder *b);
void batch_encoder_free(batch_encoder *b);

#endif
