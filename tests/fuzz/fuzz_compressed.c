/* fuzz_compressed.c - libFuzzer harness for tempo decompress's reader of
 * compressed files (src/eval/compress.c: the header, then the range
 * decoder driven by a whole hybrid model, tests/unit/compress_fixture.h).
 * Byte 0 even: the rest is a compressed file, read as it is (bit 1 clear)
 * or with its header made this model's and this process's (bit 1 set: the
 * model id and float settings written in, the length capped at 8 kB, the
 * header's check sealed again), so mutated payloads reach the decoder
 * whatever the seeds were made with. It must decompress or be refused with
 * an error, never crash, hang or leak; what decompresses has the header's
 * length. Byte 0 odd: up to 256 bytes of text must compress and come back
 * byte for byte. Seeds: compressed files of the fixture's model (byte 0 = 2)
 * and texts (byte 0 = 1). */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/compress_fixture.h"
#include "core/sha256.h"

static compress_fixture *fixture(void)
{
    static compress_fixture f;
    static int ready;
    if (!ready) {
        omp_set_num_threads(1);
        tempo_error err;
        if (compress_fixture_init(&f, 7, 1, &err))
            __builtin_trap();
        ready = 1;
    }
    return &f;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The header's fields that tie a file to a model and a machine, made this
 * one's (compress.h's layout), the length capped, the check sealed again. */
static void adopt(compress_fixture *f, uint8_t *b, size_t len)
{
    if (len < COMPRESS_HEADER_BYTES)
        return;
    compress_model_id(&f->cm, b + 64);
    compress_float_env env;
    compress_float_env_here(&env);
    uint32_t w[3] = {env.threads, env.kernel_path, env.gemm_kc};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++)
            b[100 + 4 * k + i] = (uint8_t)(w[k] >> (8 * i));
    uint64_t n_bytes = get64(b + 16) % 8192, n_tokens = get64(b + 24);
    put64(b + 16, n_bytes);
    put64(b + 24, n_tokens > 2 * n_bytes + 2 ? 2 * n_bytes + 2 : n_tokens);
    uint8_t d[32];
    sha256(b, 112, d);
    memcpy(b + 112, d, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    compress_fixture *f = fixture();
    tempo_error err;
    compress_result r;
    uint8_t *out = NULL, *back = NULL;
    size_t out_len = 0, back_len = 0;
    if (data[0] & 1) {
        size_t len = size - 1 < 256 ? size - 1 : 256;
        if (compress_text(&f->cm, data + 1, len, "fuzz", &out, &out_len, &r, &err) ||
            decompress_data(&f->cm, out, out_len, "fuzz", &back, &back_len, &r, &err) || back_len != len ||
            (len && memcmp(back, data + 1, len)))
            __builtin_trap();
    } else {
        uint8_t *copy = malloc(size);
        if (!copy)
            return 0;
        memcpy(copy, data + 1, size - 1);
        if (data[0] & 2)
            adopt(f, copy, size - 1);
        compress_header h;
        if (decompress_data(&f->cm, copy, size - 1, "fuzz", &back, &back_len, &r, &err) == 0 &&
            (compress_header_read(copy, size - 1, "fuzz", &h, &err) || back_len != h.n_bytes))
            __builtin_trap();
        free(copy);
    }
    free(out);
    free(back);
    return 0;
}
