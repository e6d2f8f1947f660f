/* range_coder.c - the range coder and the quantisation of probabilities
 * into its frequencies (see range_coder.h). */
#include "eval/range_coder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH_BITS 56                              /* the interval's width */
#define TOP ((uint64_t)1 << WIDTH_BITS)            /* low's carry bit */
#define BOTTOM ((uint64_t)1 << (WIDTH_BITS - 8))   /* renormalise below this width */
#define TAIL_BYTES (WIDTH_BITS / 8)                /* bytes that pin the final interval */

void range_encoder_init(range_encoder *e)
{
    memset(e, 0, sizeof *e);
    e->range = TOP - 1;
    e->pending = 1;   /* the held-back byte: 0, and dropped (a carry never reaches it) */
}

void range_encoder_free(range_encoder *e)
{
    free(e->out);
    memset(e, 0, sizeof *e);
}

static void put_byte(range_encoder *e, uint8_t b)
{
    if (!e->started) {   /* the first held-back byte is always 0: not written */
        e->started = 1;
        return;
    }
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 4096;
        uint8_t *o = e->oom ? NULL : realloc(e->out, cap);
        if (!o) {
            e->oom = 1;
            return;
        }
        e->out = o;
        e->cap = cap;
    }
    e->out[e->n++] = b;
}

/* Settle the interval's top byte: out when no carry can change it any more
 * (or a carry just did), else held back with the 0xFF run. */
static void shift_low(range_encoder *e)
{
    if (e->low < ((uint64_t)0xFF << (WIDTH_BITS - 8)) || e->low >= TOP) {
        uint8_t carry = (uint8_t)(e->low >> WIDTH_BITS);
        uint8_t b = e->cache;
        do {
            put_byte(e, (uint8_t)(b + carry));
            b = 0xFF;
        } while (--e->pending);
        e->cache = (uint8_t)(e->low >> (WIDTH_BITS - 8));
    }
    e->pending++;
    e->low = (e->low & (BOTTOM - 1)) << 8;
}

void range_encode(range_encoder *e, uint32_t cum, uint32_t freq)
{
    uint64_t r = e->range >> RANGE_TOTAL_BITS;
    e->low += r * cum;
    e->range = r * freq;
    while (e->range < BOTTOM) {
        e->range <<= 8;
        shift_low(e);
    }
}

int range_encoder_finish(range_encoder *e, tempo_error *err)
{
    for (int i = 0; i <= TAIL_BYTES; i++)   /* low's bytes, then the held-back ones */
        shift_low(e);
    if (e->oom)
        return tempo_fail(err, "range coder: out of memory after %zu bytes", e->n);
    return 0;
}

static uint8_t next_byte(range_decoder *d)
{
    if (d->pos < d->n)
        return d->in[d->pos++];
    d->overrun++;
    return 0;
}

void range_decoder_init(range_decoder *d, const uint8_t *in, size_t n)
{
    memset(d, 0, sizeof *d);
    d->in = in;
    d->n = n;
    d->range = TOP - 1;
    for (int i = 0; i < TAIL_BYTES; i++)
        d->code = d->code << 8 | next_byte(d);
}

uint32_t range_decode_target(range_decoder *d)
{
    d->step = d->range >> RANGE_TOTAL_BITS;
    uint64_t v = d->code / d->step;
    return v < RANGE_TOTAL ? (uint32_t)v : RANGE_TOTAL;
}

void range_decode_consume(range_decoder *d, uint32_t cum, uint32_t freq)
{
    d->code -= d->step * cum;
    d->range = d->step * freq;
    while (d->range < BOTTOM) {
        d->range <<= 8;
        d->code = d->code << 8 | next_byte(d);
    }
}

int range_decoder_exact(const range_decoder *d)
{
    return d->overrun == 0 && d->pos == d->n && d->code == 0;
}

int range_quantize(const double *p, int V, uint32_t *freq)
{
    if (V < 1 || V > RANGE_MAX_SYMBOLS)
        return -1;
    double sum = 0;
    for (int v = 0; v < V; v++) {
        if (!(p[v] >= 0) || !isfinite(p[v]))
            return -1;
        sum += p[v];
    }
    if (!(sum > 0) || !isfinite(sum))
        return -1;
    const uint32_t spare = RANGE_TOTAL - (uint32_t)V;   /* the mass beyond each symbol's 1 */
    const double scale = (double)spare / sum;
    uint64_t used = 0;
    int top = 0;
    for (int v = 0; v < V; v++) {
        double x = p[v] * scale;
        uint32_t f = x >= (double)spare ? spare : (uint32_t)x;
        freq[v] = 1 + f;
        used += freq[v];
        if (freq[v] > freq[top])
            top = v;
    }
    /* the floors leave up to V units over, or (sum rounded low) a unit or so
     * too many: the most probable symbol takes the difference */
    if (used <= RANGE_TOTAL) {
        freq[top] += (uint32_t)(RANGE_TOTAL - used);
        return 0;
    }
    uint64_t excess = used - RANGE_TOTAL;
    if (excess >= freq[top])
        return -1;   /* cannot happen: the top symbol holds at least 1/V of the mass */
    freq[top] -= (uint32_t)excess;
    return 0;
}

void range_encode_symbol(range_encoder *e, const uint32_t *freq, int V, int s)
{
    uint32_t cum = 0;
    for (int v = 0; v < s && v < V; v++)
        cum += freq[v];
    range_encode(e, cum, freq[s]);
}

int range_decode_symbol(range_decoder *d, const uint32_t *freq, int V, int *s)
{
    uint32_t target = range_decode_target(d);
    if (target >= RANGE_TOTAL)
        return -1;
    uint32_t cum = 0;
    for (int v = 0; v < V; v++) {
        if (target < cum + freq[v]) {
            range_decode_consume(d, cum, freq[v]);
            *s = v;
            return 0;
        }
        cum += freq[v];
    }
    return -1;   /* the table sums to less than its total: not range_quantize's */
}
