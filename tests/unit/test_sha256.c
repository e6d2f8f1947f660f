/* test_sha256.c - SHA-256 against the FIPS 180-4 / NIST vectors, the hardware
 * path against the portable one, and incremental feeding in random chunks. */
#include "test.h"
#include "core/rng.h"
#include "core/sha256.h"

static void hex_of(const void *data, size_t n, char out[65])
{
    uint8_t d[32];
    sha256(data, n, d);
    sha256_hex(d, out);
}

static void test_vectors(void)
{
    char hex[65];
    hex_of("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    hex_of("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(m448, strlen(m448), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    hex_of(m896, strlen(m896), hex);
    CHECK(!strcmp(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"));
    /* one million 'a', fed in uneven pieces */
    sha256_ctx c;
    sha256_init(&c);
    char a[1000];
    memset(a, 'a', sizeof a);
    size_t left = 1000000;
    for (size_t step = 1; left; step = step * 7 % 997 + 1) {
        size_t k = step < left ? step : left;
        sha256_update(&c, a, k);
        left -= k;
    }
    uint8_t d[32];
    sha256_final(&c, d);
    sha256_hex(d, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

/* Every length 0..300 and random chunking: hardware == portable == one-shot. */
static void test_paths_agree(void)
{
    rng_state r;
    rng_seed(&r, 7);
    uint8_t buf[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rng_next(&r);
    for (size_t n = 0; n <= sizeof buf; n++) {
        uint8_t d1[32], d2[32], d3[32];
        sha256(buf, n, d1);
        sha256_ctx c;
        sha256_init_portable(&c);
        sha256_update(&c, buf, n);
        sha256_final(&c, d2);
        sha256_init(&c);
        size_t pos = 0;
        while (pos < n) {
            size_t k = 1 + rng_below(&r, 80);
            if (k > n - pos)
                k = n - pos;
            sha256_update(&c, buf + pos, k);
            pos += k;
        }
        sha256_final(&c, d3);
        CHECK_MSG(!memcmp(d1, d2, 32) && !memcmp(d1, d3, 32), "length %zu", n);
    }
}

/* sha256_from_hex reverses sha256_hex and refuses anything but 64 lower-case
 * hex digits, leaving the digest as it was. */
static void test_from_hex(void)
{
    uint8_t d[32], back[32];
    char hex[65];
    sha256("abc", 3, d);
    sha256_hex(d, hex);
    CHECK(sha256_from_hex(hex, back) == 0 && memcmp(d, back, 32) == 0);
    const char *bad[] = {"", "ab", "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD",
                         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015adx",
                         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a",
                         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ag"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(back, 7, sizeof back);
        CHECK_MSG(sha256_from_hex(bad[i], back) == -1 && back[0] == 7 && back[31] == 7, "%s", bad[i]);
    }
}

int main(void)
{
    RUN(test_vectors);
    RUN(test_from_hex);
    RUN(test_paths_agree);
    return test_summary("test_sha256");
}
