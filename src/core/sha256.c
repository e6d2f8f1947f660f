/* sha256.c - SHA-256: block compression (plain C and SHA-NI), padding,
 * hex output (see sha256.h). */
#include "core/sha256.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_HAVE_X86 1
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/* The FIPS 180-4 compression function over n_blocks 64-byte blocks. */
static void compress_portable(uint32_t h[8], const uint8_t *p, size_t n_blocks)
{
    for (; n_blocks; n_blocks--, p += 64) {
        uint32_t w[64];
        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
                   (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
        for (int i = 0; i < 64; i++) {
            uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
            uint32_t ch = (e & f) ^ (~e & g);
            uint32_t t1 = hh + S1 + ch + K[i] + w[i];
            uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
            uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
            uint32_t t2 = S0 + maj;
            hh = g; g = f; f = e; e = d + t1;
            d = c; c = b; b = a; a = t1 + t2;
        }
        h[0] += a; h[1] += b; h[2] += c; h[3] += d;
        h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
    }
}

#ifdef SHA256_HAVE_X86
/* The same compression with the SHA extensions. The state is kept as the two
 * vectors the instructions want: ABEF and CDGH. Each group g of 4 rounds uses
 * message words w[g%4]; msg1/msg2 compute the schedule 4 words at a time. */
__attribute__((target("sha,sse4.1,ssse3")))
static void compress_shani(uint32_t h[8], const uint8_t *p, size_t n_blocks)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_loadu_si128((const __m128i *)&h[0]);  /* DCBA */
    __m128i st1 = _mm_loadu_si128((const __m128i *)&h[4]);  /* HGFE */
    tmp = _mm_shuffle_epi32(tmp, 0xB1);                     /* CDAB */
    st1 = _mm_shuffle_epi32(st1, 0x1B);                     /* EFGH */
    __m128i st0 = _mm_alignr_epi8(tmp, st1, 8);             /* ABEF */
    st1 = _mm_blend_epi16(st1, tmp, 0xF0);                  /* CDGH */
    for (; n_blocks; n_blocks--, p += 64) {
        __m128i abef = st0, cdgh = st1;
        __m128i w[4];
        for (int i = 0; i < 4; i++)
            w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
        for (int g = 0; g < 16; g++) {
            __m128i cur = w[g & 3];
            __m128i msg = _mm_add_epi32(cur, _mm_loadu_si128((const __m128i *)&K[4 * g]));
            st1 = _mm_sha256rnds2_epu32(st1, st0, msg);
            if (g >= 3 && g <= 14) {
                __m128i t = _mm_alignr_epi8(cur, w[(g - 1) & 3], 4);
                __m128i nx = _mm_add_epi32(w[(g + 1) & 3], t);
                w[(g + 1) & 3] = _mm_sha256msg2_epu32(nx, cur);
            }
            msg = _mm_shuffle_epi32(msg, 0x0E);
            st0 = _mm_sha256rnds2_epu32(st0, st1, msg);
            if (g >= 1 && g <= 12)
                w[(g - 1) & 3] = _mm_sha256msg1_epu32(w[(g - 1) & 3], cur);
        }
        st0 = _mm_add_epi32(st0, abef);
        st1 = _mm_add_epi32(st1, cdgh);
    }
    tmp = _mm_shuffle_epi32(st0, 0x1B);        /* FEBA */
    st1 = _mm_shuffle_epi32(st1, 0xB1);        /* DCHG */
    st0 = _mm_blend_epi16(tmp, st1, 0xF0);     /* DCBA */
    st1 = _mm_alignr_epi8(st1, tmp, 8);        /* HGFE */
    _mm_storeu_si128((__m128i *)&h[0], st0);
    _mm_storeu_si128((__m128i *)&h[4], st1);
}

static int cpu_has_sha(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    int sse41 = (c >> 19) & 1, ssse3 = (c >> 9) & 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return sse41 && ssse3 && ((b >> 29) & 1);
}
#endif

static void compress(sha256_ctx *c, const uint8_t *p, size_t n_blocks)
{
#ifdef SHA256_HAVE_X86
    if (c->use_hw) {
        compress_shani(c->h, p, n_blocks);
        return;
    }
#endif
    compress_portable(c->h, p, n_blocks);
}

void sha256_init_portable(sha256_ctx *c)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, iv, sizeof iv);
    c->n_bytes = 0;
    c->buf_len = 0;
    c->use_hw = 0;
}

void sha256_init(sha256_ctx *c)
{
    sha256_init_portable(c);
#ifdef SHA256_HAVE_X86
    c->use_hw = cpu_has_sha();
#endif
}

void sha256_update(sha256_ctx *c, const void *data, size_t n)
{
    const uint8_t *p = data;
    c->n_bytes += n;
    if (c->buf_len) {
        size_t take = 64 - c->buf_len < n ? 64 - c->buf_len : n;
        memcpy(c->buf + c->buf_len, p, take);
        c->buf_len += take;
        p += take;
        n -= take;
        if (c->buf_len < 64)
            return;
        compress(c, c->buf, 1);
        c->buf_len = 0;
    }
    if (n >= 64) {
        compress(c, p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    if (n) {
        memcpy(c->buf, p, n);
        c->buf_len = n;
    }
}

void sha256_final(sha256_ctx *c, uint8_t digest[32])
{
    uint64_t bits = c->n_bytes * 8;
    uint8_t pad[72];
    size_t pad_len = (c->buf_len < 56 ? 56 : 120) - c->buf_len;
    memset(pad, 0, sizeof pad);
    pad[0] = 0x80;
    for (int i = 0; i < 8; i++)
        pad[pad_len + i] = (uint8_t)(bits >> (56 - 8 * i));
    uint64_t n_saved = c->n_bytes;
    sha256_update(c, pad, pad_len + 8);
    c->n_bytes = n_saved;
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(c->h[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        digest[4 * i + 3] = (uint8_t)c->h[i];
    }
}

void sha256(const void *data, size_t n, uint8_t digest[32])
{
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, data, n);
    sha256_final(&c, digest);
}

void sha256_hex(const uint8_t digest[32], char out[65])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[64] = '\0';
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int sha256_from_hex(const char *hex, uint8_t digest[32])
{
    uint8_t d[32];
    for (int i = 0; i < 32; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hi < 0 ? -1 : hex_digit(hex[2 * i + 1]);
        if (lo < 0)
            return -1;
        d[i] = (uint8_t)(hi << 4 | lo);
    }
    if (hex[64] != '\0')
        return -1;
    memcpy(digest, d, 32);
    return 0;
}
