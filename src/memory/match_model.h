/* match_model.h - the hybrid model's fourth component: a match model of the
 * text being read (as in lpaq and the LZ77 family). It finds the last place
 * where the most recent `min_len` tokens occurred before (a hash of them
 * points at the position after that occurrence, checked token by token), and
 * predicts that the token which followed then follows now; while predictions
 * hit, the match extends. Its distribution puts the hit rate seen so far at
 * the current match length on the predicted token and spreads the rest
 * evenly over the other V - 1 ids (uniform when there is no match): a
 * distribution over the whole vocabulary that never gives 0. It reaches
 * back over any distance, which an n-gram cache of order K cannot.
 *
 * Score first, then learn: match_model_prob reads only tokens before i and
 * the state; match_model_update(i) is called once token i is scored, for
 * every i in order. */
#ifndef TEMPO_MATCH_MODEL_H
#define TEMPO_MATCH_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define MATCH_LEN_BINS 6   /* match length bins: none, 0-3, 4-7, 8-15, 16-31, 32+ tokens agreed */

typedef struct {
    int vocab;
    int min_len;             /* tokens hashed to find a match */
    int bits;                /* table of 2^bits positions */
    uint32_t *table;         /* hash of min_len tokens -> the position after them + 1; 0 = none */
    size_t next;             /* the position whose token the match predicts + 1; 0 = no match */
    int length;              /* tokens the current match has agreed on */
    size_t seen;             /* tokens passed to match_model_update */
    uint32_t hits[MATCH_LEN_BINS], trials[MATCH_LEN_BINS];
} match_model;

int match_model_init(match_model *mm, int vocab, int min_len, tempo_error *err);
void match_model_free(match_model *mm);

/* The length bin of the current state (0 = no match). */
int match_model_bin(const match_model *mm);

/* p(tokens[i] | tokens[0..i)) under the current state (i = the next token to come). */
double match_model_prob(const match_model *mm, const int32_t *tokens, size_t i);
/* The same for any token y in [0, V). */
double match_model_prob_of(const match_model *mm, const int32_t *tokens, int32_t y);

/* The distribution after the tokens seen, in two numbers: *predicted gets
 * the id the match predicts and the result is its probability q (every
 * other id has (1 - q) / (V - 1)); with no match *predicted = -1 and the
 * result is 1/V, as for every id. */
double match_model_predict(const match_model *mm, const int32_t *tokens, int32_t *predicted);

/* Learn token i. Tokens are learned in order; positions skipped since the
 * last call (a stream's given first token) are indexed without a
 * prediction; an i already learned is ignored. */
void match_model_update(match_model *mm, const int32_t *tokens, size_t i);

#endif
