/* sha256.h - SHA-256 (FIPS 180-4), incremental, for the checksums that
 * meta.json records (sha256 of each decompressed source file). Uses the
 * x86 SHA extensions when the CPU has them (chosen at run time), a plain C
 * compression function otherwise; both give identical digests. Not a
 * general crypto library: no HMAC, no constant-time claims. */
#ifndef TEMPO_SHA256_H
#define TEMPO_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];       /* chaining state */
    uint64_t n_bytes;    /* total bytes fed so far */
    uint8_t buf[64];     /* pending partial block */
    size_t buf_len;
    int use_hw;          /* 1: SHA-NI compression, 0: plain C */
} sha256_ctx;

/* Start a digest (picks the hardware path when available). */
void sha256_init(sha256_ctx *c);
/* Same, forcing the plain C path (for tests comparing the two). */
void sha256_init_portable(sha256_ctx *c);
/* Feed n bytes (any split of the input gives the same digest). */
void sha256_update(sha256_ctx *c, const void *data, size_t n);
/* Finish: write the 32-byte digest; the context must be re-initialised before reuse. */
void sha256_final(sha256_ctx *c, uint8_t digest[32]);
/* One-shot digest of a buffer. */
void sha256(const void *data, size_t n, uint8_t digest[32]);
/* Lower-case hex of a digest into out (64 chars + NUL). */
void sha256_hex(const uint8_t digest[32], char out[65]);
/* The reverse: 64 lower-case hex digits into a digest; -1 (digest unchanged)
 * for anything else. */
int sha256_from_hex(const char *hex, uint8_t digest[32]);

#endif
