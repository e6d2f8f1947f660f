/* fuzz_tokenizer.c - libFuzzer harness for the tokenizer file reader
 * (tok_parse, src/data/tokenizer.c): any bytes must load or be refused with
 * "what:line: problem", never crash or leak. A loaded tokenizer must encode
 * and decode text back to the same bytes (the input itself is the text), the
 * quadratic and heap merge paths must agree, and its file text must read back
 * to the same file text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"

static void check_roundtrip(const tokenizer *t, const uint8_t *text, size_t len)
{
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    tempo_error err;
    if (tok_encode(t, text, len, &ids, &n, &cap, &err))
        return;
    strbuf back = {0};
    if (tok_decode(t, ids, n, &back) || back.len != len || (len && memcmp(back.data, text, len)))
        __builtin_trap(); /* decode(encode(x)) != x */
    strbuf_free(&back);
    free(ids);
    size_t piece = len < 64 ? len : 64;
    int32_t a[64], b[64];
    size_t na = tok_encode_piece(t, text, piece, a, 1), nb = tok_encode_piece(t, text, piece, b, 2);
    if (na != nb || memcmp(a, b, na * sizeof *a))
        __builtin_trap(); /* the two merge paths disagree */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tokenizer *t;
    tempo_error err;
    if (tok_parse(&t, (const char *)data, size, "fuzz", &err))
        return 0;
    check_roundtrip(t, data, size);
    static const char text[] = "Hello, world! It's 2024: \xe2\x82\xac 12.5 ok\n\n  tabs\tand  spaces ";
    check_roundtrip(t, (const uint8_t *)text, sizeof text - 1);
    strbuf file = {0}, again = {0};
    tokenizer *t2;
    if (tok_serialize(t, &file) || tok_parse(&t2, file.data, file.len, "serialized", &err))
        __builtin_trap(); /* what tok_save writes does not read back */
    if (tok_serialize(t2, &again) || again.len != file.len || memcmp(again.data, file.data, file.len))
        __builtin_trap();
    tok_free(t2);
    strbuf_free(&file);
    strbuf_free(&again);
    tok_free(t);
    return 0;
}
