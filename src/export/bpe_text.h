/* bpe_text.h - the text form of byte-level BPE tokens used by GPT-2, GGUF's
 * "gpt2" tokenizer and Hugging Face's ByteLevel: every byte is shown as one
 * printable Unicode character (printable Latin-1 bytes as themselves, the
 * others as U+0100 onwards, so a space is "Ġ" and a newline "Ċ"), and a
 * token's text is its bytes' characters in UTF-8. Also the merge list that
 * such tokenizers expect, derived from tempo's rank-ordered vocabulary. */
#ifndef TEMPO_EXPORT_BPE_TEXT_H
#define TEMPO_EXPORT_BPE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "data/tokenizer.h"

/* Appends the text form of bytes[0..n) to out. */
void bpe_text_append(strbuf *out, const uint8_t *bytes, size_t n);

/* The inverse: decodes text[0..len) (UTF-8 of mapped characters) into out
 * (room for len bytes); returns the byte count, or -1 when text holds a
 * character that is not the image of a byte. */
long bpe_text_to_bytes(const char *text, size_t len, uint8_t *out);

/* The merge line "LEFT RIGHT" (text forms) of regular token id >= 256
 * (tok_merge_parts), appended to out. Returns 0, or -1 with err naming the
 * token when the vocabulary has no merge for it. */
int bpe_merge_text(const tokenizer *t, int32_t id, strbuf *out, tempo_error *err);

#endif
