/* bpe_train.h - learning a byte-level BPE vocabulary from sample text.
 *
 * Use: tok_trainer_add() text repeatedly (it pre-splits the text and counts
 * each distinct piece; threads may each fill their own trainer and
 * tok_trainer_absorb() them together), then tok_trainer_finish(vocab).
 * Training starts from the 256 byte tokens and repeatedly merges the most
 * frequent adjacent pair of tokens within pieces (never across pieces), so
 * every learned token lies inside one pre-split piece. Deterministic: the
 * distinct pieces are sorted by their bytes before training, and ties between
 * equally frequent pairs go to the pair with the smaller (left id, right id).
 * So the result depends only on the multiset of pieces, not on the order of
 * add/absorb calls or the number of threads. Pair counts are updated
 * incrementally (only the words holding the merged pair are touched) with a
 * lazy max-heap, so thousands of merges over millions of words take seconds.
 * Encoding and the file format live in data/tokenizer.h. */
#ifndef TEMPO_BPE_TRAIN_H
#define TEMPO_BPE_TRAIN_H

#include <stddef.h>
#include <stdint.h>
#include "core/error.h"
#include "data/tokenizer.h"

typedef struct tok_trainer tok_trainer;

int tok_trainer_new(tok_trainer **out, tempo_error *err);
/* Pre-split text and count its pieces. */
int tok_trainer_add(tok_trainer *tr, const uint8_t *text, size_t len, tempo_error *err);
/* Add from's counts into into. */
int tok_trainer_absorb(tok_trainer *into, const tok_trainer *from, tempo_error *err);
/* Bytes of text added (absorbed trainers included). */
uint64_t tok_trainer_bytes(const tok_trainer *tr);
/* Distinct pieces of 2+ bytes counted (single bytes cannot be merged and are not kept). */
size_t tok_trainer_distinct(const tok_trainer *tr);
/* Learn vocab - 256 merges (256 <= vocab <= 65536) and build the tokenizer.
 * If the text runs out of pairs to merge first, the vocabulary is smaller
 * (tok_n_regular says how many). If merges is not NULL it receives a malloc'd
 * array of 2 * (tok_n_regular - 256) ids: the (left, right) pair of each merge
 * in order (for tests). The trainer is unchanged and may be finished again. */
int tok_trainer_finish(const tok_trainer *tr, int vocab, tokenizer **out, int32_t **merges,
                       tempo_error *err);
void tok_trainer_free(tok_trainer *tr);

#endif
