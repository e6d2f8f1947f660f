/* fuzz_json.c - libFuzzer harness for the JSON parser (src/core/json.c): any
 * bytes must parse or be refused with an error, never crash, hang or leak. A
 * parsed tree is walked (lookups on every object) and written back with the
 * JSON writer, which must reparse to a tree of the same shape. */
#include <stdint.h>
#include <string.h>

#include "core/json.h"
#include "core/strbuf.h"

/* Write v as JSON (numbers through strbuf_json_number, strings escaped). */
static void write_value(const json_value *v, strbuf *out)
{
    switch (v->type) {
    case JSON_NULL: strbuf_puts(out, "null"); break;
    case JSON_BOOL: strbuf_puts(out, v->boolean ? "true" : "false"); break;
    case JSON_NUMBER: strbuf_json_number(out, v->number); break;
    case JSON_STRING: strbuf_json_string(out, v->string, v->string_len); break;
    case JSON_ARRAY:
        strbuf_append(out, "[", 1);
        for (size_t i = 0; i < v->n; i++) {
            if (i) strbuf_append(out, ",", 1);
            write_value(&v->items[i], out);
        }
        strbuf_append(out, "]", 1);
        break;
    case JSON_OBJECT:
        strbuf_append(out, "{", 1);
        for (size_t i = 0; i < v->n; i++) {
            if (i) strbuf_append(out, ",", 1);
            strbuf_json_string(out, v->keys[i], v->key_lens[i]);
            strbuf_append(out, ":", 1);
            write_value(&v->items[i], out);
            (void)json_get(v, v->keys[i]);
        }
        strbuf_append(out, "}", 1);
        break;
    }
}

/* 1 when s[0..n) equals t[0..m); bytes are compared only for ASCII text
 * (the writer escapes bytes that are not UTF-8 as code points, on purpose). */
static int same_text(const char *s, size_t n, const char *t, size_t m)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80)
            return 1;
    return n == m && !memcmp(s, t, n);
}

/* 1 when a and b have the same types, sizes, keys and strings (a number that
 * overflowed to infinity is written as null). */
static int same_shape(const json_value *a, const json_value *b)
{
    if (a->type == JSON_NUMBER && b->type == JSON_NULL)
        return 1;
    if (a->type != b->type || a->n != b->n)
        return 0;
    if (a->type == JSON_STRING)
        return same_text(a->string, a->string_len, b->string, b->string_len);
    if (a->type == JSON_NUMBER)
        return a->number == b->number;
    for (size_t i = 0; i < a->n; i++) {
        if (a->type == JSON_OBJECT && !same_text(a->keys[i], a->key_lens[i], b->keys[i], b->key_lens[i]))
            return 0;
        if (!same_shape(&a->items[i], &b->items[i]))
            return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_value *v;
    tempo_error err;
    if (json_parse((const char *)data, size, &v, &err))
        return 0;
    (void)json_get_string(v, "text");
    (void)json_get_number(v, "n", 0);
    strbuf out = {0};
    write_value(v, &out);
    json_value *again;
    if (json_parse(out.data, out.len, &again, &err))
        __builtin_trap(); /* the writer wrote what the parser refuses */
    if (!same_shape(v, again))
        __builtin_trap();
    json_free(again);
    strbuf_free(&out);
    json_free(v);
    return 0;
}
