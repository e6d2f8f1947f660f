/* range_coder.h - a range coder (arithmetic coding over integer
 * frequencies), the engine of `tempo compress`: it turns a model's
 * probabilities into a code whose length is the model's bits, so a bpb
 * figure can be checked by a file that decompresses. Nothing here knows of
 * models or tokens.
 *
 * Precision: the coder's interval is 56 bits wide (a 64-bit low holds it and
 * its carry), renormalised a byte at a time whenever its width drops below
 * 2^48; frequencies sum to 2^RANGE_TOTAL_BITS = 2^30. So each symbol's
 * interval is its frequency times floor(width / 2^30) >= 2^18: the rounding
 * loses less than 2^-18 of the width, at most 5.5e-6 bits a symbol, and
 * giving every one of V symbols a frequency of at least 1 takes at most
 * V / 2^30 of the mass (4e-6 for V = 4097). The stream ends with the 7
 * bytes of the final interval's low end; the decoder reads exactly the
 * bytes the encoder wrote, so a truncated, lengthened or altered stream is
 * noticed (range_decoder_exact).
 *
 * Carries: the encoder holds back the last byte it settled plus any run of
 * 0xFF bytes after it until a carry can no longer reach them (the LZMA
 * scheme, widened from 32 to 56 bits). */
#ifndef TEMPO_RANGE_CODER_H
#define TEMPO_RANGE_CODER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define RANGE_TOTAL_BITS 30
#define RANGE_TOTAL ((uint32_t)1 << RANGE_TOTAL_BITS)
#define RANGE_MAX_SYMBOLS (1 << 20)   /* every symbol needs a frequency of at least 1 */

typedef struct {
    uint64_t low;      /* 56 bits and a carry at bit 56 */
    uint64_t range;    /* the interval's width, in (2^48, 2^56) after a symbol */
    uint8_t cache;     /* the last settled byte, held back for a carry */
    uint64_t pending;  /* bytes held back: cache, then pending - 1 bytes of 0xFF */
    int started;       /* the first byte held back (always 0) has been dropped */
    uint8_t *out;      /* the code so far */
    size_t n, cap;
    int oom;           /* an allocation failed: range_encoder_finish reports it */
} range_encoder;

void range_encoder_init(range_encoder *e);
void range_encoder_free(range_encoder *e);

/* Code the symbol whose frequencies are [cum, cum + freq) out of
 * RANGE_TOTAL (freq >= 1, cum + freq <= RANGE_TOTAL). */
void range_encode(range_encoder *e, uint32_t cum, uint32_t freq);

/* Flush the final interval. Then e->out[0..e->n) is the code. 0, or -1
 * when memory ran out on the way. */
int range_encoder_finish(range_encoder *e, tempo_error *err);

typedef struct {
    const uint8_t *in;
    size_t n, pos;
    uint64_t code;     /* the code's offset inside the interval, < range */
    uint64_t range;
    uint64_t step;     /* range / RANGE_TOTAL of the symbol being decoded */
    uint64_t overrun;  /* bytes wanted past the end of in (read as 0) */
} range_decoder;

/* Start decoding in[0..n) (the encoder's out[0..n)). */
void range_decoder_init(range_decoder *d, const uint8_t *in, size_t n);

/* The next symbol's position in [0, RANGE_TOTAL): the symbol to decode is the
 * one whose [cum, cum + freq) holds it. A value >= RANGE_TOTAL means the
 * stream is not one this coder wrote (corrupt). */
uint32_t range_decode_target(range_decoder *d);

/* Take the decoded symbol [cum, cum + freq) out of the stream (after
 * range_decode_target, with the same frequencies as the encoder had). */
void range_decode_consume(range_decoder *d, uint32_t cum, uint32_t freq);

/* 1 when the bytes were exactly the encoder's for the symbols decoded:
 * none missing, none left over, and the code ending on the final
 * interval's low end, which is what the encoder writes (so a changed byte
 * anywhere is noticed, even one that leaves the symbols as they were).
 * Meaningful after the last symbol. */
int range_decoder_exact(const range_decoder *d);

/* Integer frequencies freq[0..V) for the probabilities p[0..V): each at least
 * 1, summing to RANGE_TOTAL, otherwise proportional to p (floor of p / sum p
 * times the mass left after the 1s, the rounding's remainder to the most
 * probable symbol, the first of equal ones). The same p gives the same
 * frequencies on any machine (IEEE doubles, no library calls). p need not
 * sum to 1. -1 when p holds a negative or non-finite entry, sums to 0 or
 * V is outside 1..RANGE_MAX_SYMBOLS. */
int range_quantize(const double *p, int V, uint32_t *freq);

/* Symbol-level helpers over a frequency table freq[0..V) (range_quantize's):
 * code symbol s; decode one into *s (0, or -1 when the stream is corrupt:
 * its position is outside the table). O(V) each. */
void range_encode_symbol(range_encoder *e, const uint32_t *freq, int V, int s);
int range_decode_symbol(range_decoder *d, const uint32_t *freq, int V, int *s);

#endif
