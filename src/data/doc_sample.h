/* doc_sample.h - a deterministic, order-independent document sample under a
 * byte budget ("bottom-k"): every offered document carries a key (a hash of
 * its index); the sample is the documents with the smallest keys, taken in
 * key order until they hold budget bytes (the last may cross it). Offers can
 * come in any order; memory stays near the budget plus one document. Used for
 * the tokenizer's training sample; knows nothing about tokenizers. */
#ifndef TEMPO_DOC_SAMPLE_H
#define TEMPO_DOC_SAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include "core/error.h"

typedef struct doc_sampler doc_sampler;

int doc_sampler_new(doc_sampler **out, uint64_t budget_bytes, tempo_error *err);
/* Offer a document (copied if kept). Ties in key are broken by index. */
int doc_sampler_offer(doc_sampler *s, uint64_t key, uint64_t index, const uint8_t *text, size_t len,
                      tempo_error *err);
/* Drop the document with this index if it is in the sample (returns 1 if it was). */
int doc_sampler_remove(doc_sampler *s, uint64_t index);
/* Put the kept documents in index order (call once offers are done). */
void doc_sampler_finish(doc_sampler *s);
size_t doc_sampler_count(const doc_sampler *s);
uint64_t doc_sampler_bytes(const doc_sampler *s);
/* Document i (0 <= i < count) after doc_sampler_finish: its text, length and index. */
const uint8_t *doc_sampler_doc(const doc_sampler *s, size_t i, size_t *len, uint64_t *index);
void doc_sampler_free(doc_sampler *s);

#endif
