/* tensor_encode.c - F16 and Q8_0 conversions (see tensor_encode.h). */
#include "export/tensor_encode.h"

#include <math.h>
#include <string.h>

uint16_t f32_to_f16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t exp = (u >> 23) & 0xff, mant = u & 0x7fffff;
    if (exp == 0xff) /* Inf, NaN (keep a quiet NaN) */
        return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (e <= 0) { /* subnormal half or zero */
        if (e < -10)
            return sign;
        mant |= 0x800000;
        int shift = 14 - e; /* 24-bit mantissa -> 10 - (1 - e) bits */
        uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (mant >> 13), rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
        half++; /* may carry into the exponent, up to Inf: correct */
    return (uint16_t)(sign | half);
}

float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, u;
    if (exp == 0x1f)
        u = sign | 0x7f800000 | (mant << 13);
    else if (exp == 0) {
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    } else
        u = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void q8_0_encode(uint8_t *dst, const float *src, size_t n)
{
    for (size_t b = 0; b < n / Q8_0_BLOCK; b++) {
        const float *x = src + b * Q8_0_BLOCK;
        uint8_t *out = dst + b * Q8_0_BLOCK_BYTES;
        float amax = 0;
        for (int i = 0; i < Q8_0_BLOCK; i++)
            amax = fmaxf(amax, fabsf(x[i]));
        float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
        uint16_t dh = f32_to_f16(d);
        memcpy(out, &dh, 2);
        for (int i = 0; i < Q8_0_BLOCK; i++)
            out[2 + i] = (uint8_t)(int8_t)roundf(x[i] * id);
    }
}

void q8_0_decode(float *dst, const uint8_t *src, size_t n)
{
    for (size_t b = 0; b < n / Q8_0_BLOCK; b++) {
        const uint8_t *in = src + b * Q8_0_BLOCK_BYTES;
        uint16_t dh;
        memcpy(&dh, in, 2);
        float d = f16_to_f32(dh);
        for (int i = 0; i < Q8_0_BLOCK; i++)
            dst[b * Q8_0_BLOCK + i] = d * (float)(int8_t)in[2 + i];
    }
}
