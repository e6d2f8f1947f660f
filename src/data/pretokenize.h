/* pretokenize.h - the pre-splitter: cuts text into pieces ("pre-tokens") so
 * that BPE merges never cross word boundaries. GPT-2-like rules over bytes,
 * applied at each position in this order:
 *   1. contraction: ' followed by s, t, m, d, re, ve or ll (any case), e.g. "'s";
 *   2. an optional single space + a run of letters (A-Z, a-z, and every byte
 *      >= 0x80, so UTF-8 words stay together and invalid UTF-8 is still cut
 *      losslessly);
 *   3. an optional single space + 1 to 3 digits (longer digit runs continue as
 *      further groups of up to 3, without the space);
 *   4. an optional single space + a run of other bytes ("punctuation": ASCII
 *      that is not a letter, digit, space or newline, control bytes included);
 *   5. a run of spaces/tabs (' ', \t, \v, \f); when it is followed by a
 *      letter, digit or punctuation byte and ends in ' ', its last space is
 *      left to the next piece (rules 2-4), e.g. "   x" -> "  ", " x";
 *   6. a run of newlines (\n and \r).
 * Every byte belongs to exactly one piece; concatenating the pieces gives the
 * text back. Nothing here knows about tokens or merges. */
#ifndef TEMPO_PRETOKENIZE_H
#define TEMPO_PRETOKENIZE_H

#include <stddef.h>
#include <stdint.h>

/* Length (1..n) of the piece starting at s[0]; n must be > 0. */
size_t pretok_next(const uint8_t *s, size_t n);

/* Number of pieces text[0..n) splits into (0 for empty text). */
size_t pretok_count(const uint8_t *s, size_t n);

#endif
