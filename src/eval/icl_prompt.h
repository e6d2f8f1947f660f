/* icl_prompt.h - turning one ICL item (plus its few-shot examples) into the
 * token sequences a model scores, the CORE way (nanochat core_eval.py):
 *
 *   each shot:  multiple_choice  query + delim + choices[gold]
 *               schema           context_options[gold] + delim + continuation
 *               language_model.  strip(context) + delim + continuation
 *               followed by "\n\n"; then the item itself:
 *   multiple_choice  one prompt per choice:  shots + query + delim + choice
 *   schema           one prompt per option:  shots + option + delim + continuation
 *   language_model.  shots + strip(context) + delim + continuation
 * Each whole prompt is stripped of leading and trailing whitespace (Python's
 * str.strip: Unicode white space), encoded as one text, and preceded by the
 * separator token (the BOS role). The scored span ("the continuation"):
 *   multiple_choice  the tokens after the prefix common to all choices;
 *   schema           the suffix common to all options;
 *   language_model.  the tokens after those of the prompt without the
 *                    continuation (stripped); if that is not a token prefix
 *                    (a merge across the boundary), the common prefix.
 * Truncation: when the longest sequence of an item exceeds the context, the
 * same number of tokens is cut from every one of its sequences just after
 * the separator, so all of them keep the separator, the same (most recent)
 * context and their whole continuation; an item whose continuation cannot
 * fit is skipped (ICL_SKIP_TOO_LONG). Nothing here runs a model. */
#ifndef TEMPO_ICL_PROMPT_H
#define TEMPO_ICL_PROMPT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "data/tokenizer.h"
#include "eval/icl_task.h"

/* The sequences of one item (reused from item to item: no reallocation once
 * large enough). Sequence j is tokens[offset[j] .. offset[j+1]); its scored
 * span is [start[j], end[j]) within it, 1 <= start < end = its length. */
typedef struct {
    int n_seq;
    int32_t *tokens;
    int *offset, *start, *end;
    size_t tok_cap;
    int seq_cap;
    strbuf text;          /* rendering scratch */
    int32_t *ids;         /* encoding scratch */
    size_t n_ids, ids_cap;
} icl_seqs;

void icl_seqs_free(icl_seqs *s); /* zeroes s */

/* Build the sequences of items[idx] with the examples items[shots[0..n_shots)]
 * for task t, for a model of `context` positions. Returns 0 when built, 1
 * when the item is skipped (*why set: ICL_SKIP_EMPTY when no token is left to
 * score, ICL_SKIP_TOO_LONG), -1 on out of memory (err set). */
int icl_build_item(const icl_task_spec *t, const icl_item *items, int idx, const int32_t *shots,
                   int n_shots, tok_encoder *enc, int32_t sep, int context, icl_seqs *s,
                   icl_skip *why, tempo_error *err);

/* Python's str.strip() on s[0..n): sets [*a, *b) to the span without
 * leading and trailing Unicode white space (str.isspace characters). */
void icl_strip(const char *s, size_t n, size_t *a, size_t *b);

#endif
