/* tensor_encode.h - the number formats exported tensors are stored in:
 * IEEE half precision (F16) and ggml's Q8_0 (blocks of 32 values: one F16
 * scale d = max|x| / 127, then 32 int8 q = round(x / d); x ~ d q), both ways.
 * Pure functions over buffers; nothing here knows about files. */
#ifndef TEMPO_EXPORT_TENSOR_ENCODE_H
#define TEMPO_EXPORT_TENSOR_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#define Q8_0_BLOCK 32
#define Q8_0_BLOCK_BYTES 34 /* 2 (F16 scale) + 32 */

/* Round to nearest even; overflow gives +-Inf, NaN stays NaN. */
uint16_t f32_to_f16(float x);
float f16_to_f32(uint16_t h);

/* n values (a multiple of Q8_0_BLOCK) -> n / 32 blocks, as ggml's
 * quantize_row_q8_0_ref does; and back. */
void q8_0_encode(uint8_t *dst, const float *src, size_t n);
void q8_0_decode(float *dst, const uint8_t *src, size_t n);

#endif
