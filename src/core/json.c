/* json.c - recursive-descent JSON parser (see json.h). No writer here. */
#include "core/json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const unsigned char *s;
    size_t len;
    size_t pos;
    int depth;
    tempo_error *err;
} parser;

/* Report a problem at byte offset at (columns/lines count from 1). */
static int fail_at(parser *p, size_t at, const char *problem)
{
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < at && i < p->len; i++)
        if (p->s[i] == '\n') {
            line++;
            line_start = i + 1;
        }
    size_t col = at - line_start + 1;
    if (line == 1)
        return tempo_fail(p->err, "column %zu: %s", col, problem);
    return tempo_fail(p->err, "line %zu, column %zu: %s", line, col, problem);
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static void free_contents(json_value *v)
{
    switch (v->type) {
    case JSON_STRING:
        free(v->string);
        break;
    case JSON_ARRAY:
    case JSON_OBJECT:
        for (size_t i = 0; i < v->n; i++) {
            free_contents(&v->items[i]);
            if (v->keys)
                free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
        free(v->key_lens);
        break;
    default:
        break;
    }
    memset(v, 0, sizeof *v);
}

void json_free(json_value *v)
{
    if (!v)
        return;
    free_contents(v);
    free(v);
}

/* A growable byte buffer for decoding strings. */
typedef struct {
    char *data;
    size_t len, cap;
} bytes;

static int bytes_push(bytes *b, const void *src, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return -1;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static int hex4(const unsigned char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = s[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        v = v * 16 + d;
    }
    *out = v;
    return 0;
}

/* UTF-8 encoding of a code point (surrogates encoded as their 3-byte form). */
static size_t utf8_encode(unsigned cp, unsigned char out[4])
{
    if (cp < 0x80) { out[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parse a string literal at p->pos (which holds '"'); the decoded bytes go
 * to *out (malloc'd, NUL-terminated) and *out_len. */
static int parse_string(parser *p, char **out, size_t *out_len)
{
    size_t start = p->pos;
    p->pos++; /* opening quote */
    bytes b = {0};
    if (bytes_push(&b, "", 0))
        return fail_at(p, start, "out of memory");
    for (;;) {
        /* copy a run of plain bytes at once */
        size_t run = p->pos;
        while (run < p->len && p->s[run] != '"' && p->s[run] != '\\' && p->s[run] >= 0x20)
            run++;
        if (run > p->pos && bytes_push(&b, p->s + p->pos, run - p->pos)) {
            free(b.data);
            return fail_at(p, start, "out of memory");
        }
        p->pos = run;
        if (p->pos >= p->len) {
            free(b.data);
            return fail_at(p, start, "unterminated string");
        }
        unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) {
            free(b.data);
            return fail_at(p, p->pos, "control character in string (must be escaped)");
        }
        /* backslash escape */
        size_t esc_at = p->pos;
        if (p->pos + 1 >= p->len) {
            free(b.data);
            return fail_at(p, start, "unterminated string");
        }
        unsigned char e = p->s[p->pos + 1];
        unsigned char enc[4];
        size_t enc_len = 1;
        p->pos += 2;
        switch (e) {
        case '"': enc[0] = '"'; break;
        case '\\': enc[0] = '\\'; break;
        case '/': enc[0] = '/'; break;
        case 'b': enc[0] = '\b'; break;
        case 'f': enc[0] = '\f'; break;
        case 'n': enc[0] = '\n'; break;
        case 'r': enc[0] = '\r'; break;
        case 't': enc[0] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (p->pos + 4 > p->len || hex4(p->s + p->pos, &cp)) {
                free(b.data);
                return fail_at(p, esc_at, "bad \\u escape (need 4 hex digits)");
            }
            p->pos += 4;
            /* a high surrogate followed by an escaped low surrogate is one code point */
            if (cp >= 0xD800 && cp <= 0xDBFF && p->pos + 6 <= p->len && p->s[p->pos] == '\\' &&
                p->s[p->pos + 1] == 'u') {
                unsigned lo;
                if (!hex4(p->s + p->pos + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p->pos += 6;
                }
            }
            enc_len = utf8_encode(cp, enc);
            break;
        }
        default:
            free(b.data);
            return fail_at(p, esc_at, "bad escape in string");
        }
        if (bytes_push(&b, enc, enc_len)) {
            free(b.data);
            return fail_at(p, start, "out of memory");
        }
    }
    *out = b.data;
    *out_len = b.len;
    return 0;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static int parse_number(parser *p, json_value *v)
{
    size_t start = p->pos, i = p->pos;
    if (i < p->len && p->s[i] == '-')
        i++;
    if (i >= p->len || !is_digit(p->s[i]))
        return fail_at(p, start, "bad number");
    if (p->s[i] == '0') {
        i++;
        if (i < p->len && is_digit(p->s[i]))
            return fail_at(p, start, "bad number (leading zero)");
    } else {
        while (i < p->len && is_digit(p->s[i]))
            i++;
    }
    if (i < p->len && p->s[i] == '.') {
        i++;
        if (i >= p->len || !is_digit(p->s[i]))
            return fail_at(p, start, "bad number (no digit after '.')");
        while (i < p->len && is_digit(p->s[i]))
            i++;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        if (i >= p->len || !is_digit(p->s[i]))
            return fail_at(p, start, "bad number (no digit in exponent)");
        while (i < p->len && is_digit(p->s[i]))
            i++;
    }
    /* strtod needs a NUL-terminated copy: the input is not NUL-terminated */
    char small[64];
    size_t n = i - start;
    char *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf)
        return fail_at(p, start, "out of memory");
    memcpy(buf, p->s + start, n);
    buf[n] = '\0';
    v->type = JSON_NUMBER;
    v->number = strtod(buf, NULL);
    if (buf != small)
        free(buf);
    if (isinf(v->number))
        return fail_at(p, start, "number out of range");
    p->pos = i;
    return 0;
}

static int parse_value(parser *p, json_value *v);

static int literal(parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return fail_at(p, p->pos, "unexpected character");
    p->pos += n;
    return 0;
}

/* Append *item to a growable value array. */
static int push_item(json_value **items, size_t *n, size_t *cap, const json_value *item)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 4;
        json_value *d = realloc(*items, c * sizeof *d);
        if (!d)
            return -1;
        *items = d;
        *cap = c;
    }
    (*items)[(*n)++] = *item;
    return 0;
}

static int parse_array(parser *p, json_value *v)
{
    size_t cap = 0;
    v->type = JSON_ARRAY;
    p->pos++; /* '[' */
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ']') {
        p->pos++;
        return 0;
    }
    for (;;) {
        json_value item;
        memset(&item, 0, sizeof item);
        skip_ws(p);
        if (parse_value(p, &item)) {
            free_contents(&item);
            return -1;
        }
        if (push_item(&v->items, &v->n, &cap, &item)) {
            free_contents(&item);
            return fail_at(p, p->pos, "out of memory");
        }
        skip_ws(p);
        if (p->pos >= p->len)
            return fail_at(p, p->pos, "unterminated array");
        if (p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->s[p->pos] == ']') {
            p->pos++;
            return 0;
        }
        return fail_at(p, p->pos, "expected ',' or ']' in array");
    }
}

static int parse_object(parser *p, json_value *v)
{
    size_t cap = 0, key_cap = 0;
    v->type = JSON_OBJECT;
    p->pos++; /* '{' */
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        skip_ws(p);
        if (p->pos >= p->len)
            return fail_at(p, p->pos, "unterminated object");
        if (p->s[p->pos] != '"')
            return fail_at(p, p->pos, "expected a string key in object");
        char *key;
        size_t key_len;
        if (parse_string(p, &key, &key_len))
            return -1;
        if (v->n == key_cap) {
            size_t c = key_cap ? key_cap * 2 : 4;
            char **k = realloc(v->keys, c * sizeof *k);
            if (k)
                v->keys = k;
            size_t *kl = k ? realloc(v->key_lens, c * sizeof *kl) : NULL;
            if (kl)
                v->key_lens = kl;
            if (!k || !kl) {
                free(key);
                return fail_at(p, p->pos, "out of memory");
            }
            key_cap = c;
        }
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != ':') {
            free(key);
            return fail_at(p, p->pos, "expected ':' after object key");
        }
        p->pos++;
        skip_ws(p);
        json_value item;
        memset(&item, 0, sizeof item);
        if (parse_value(p, &item)) {
            free_contents(&item);
            free(key);
            return -1;
        }
        v->keys[v->n] = key;
        v->key_lens[v->n] = key_len;
        if (push_item(&v->items, &v->n, &cap, &item)) {
            free(key);
            free_contents(&item);
            return fail_at(p, p->pos, "out of memory");
        }
        skip_ws(p);
        if (p->pos >= p->len)
            return fail_at(p, p->pos, "unterminated object");
        if (p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->s[p->pos] == '}') {
            p->pos++;
            return 0;
        }
        return fail_at(p, p->pos, "expected ',' or '}' in object");
    }
}

/* Parse one value at p->pos (whitespace already skipped). On failure v may
 * hold partial contents; the caller frees them with free_contents. */
static int parse_value(parser *p, json_value *v)
{
    if (p->pos >= p->len)
        return fail_at(p, p->pos, "unexpected end of input");
    unsigned char c = p->s[p->pos];
    switch (c) {
    case '{':
    case '[': {
        if (p->depth >= JSON_MAX_DEPTH)
            return fail_at(p, p->pos, "nested too deeply");
        p->depth++;
        int rc = c == '{' ? parse_object(p, v) : parse_array(p, v);
        p->depth--;
        return rc;
    }
    case '"':
        v->type = JSON_STRING;
        return parse_string(p, &v->string, &v->string_len);
    case 't':
        v->type = JSON_BOOL;
        v->boolean = 1;
        return literal(p, "true");
    case 'f':
        v->type = JSON_BOOL;
        return literal(p, "false");
    case 'n':
        v->type = JSON_NULL;
        return literal(p, "null");
    default:
        if (c == '-' || is_digit(c))
            return parse_number(p, v);
        return fail_at(p, p->pos, "unexpected character");
    }
}

int json_parse(const char *text, size_t len, json_value **out, tempo_error *err)
{
    *out = NULL;
    parser p = {(const unsigned char *)text, len, 0, 0, err};
    json_value *v = calloc(1, sizeof *v);
    if (!v)
        return tempo_fail(err, "column 1: out of memory");
    skip_ws(&p);
    if (p.pos >= p.len) {
        free(v);
        return fail_at(&p, p.pos, "empty input (expected a JSON value)");
    }
    if (parse_value(&p, v)) {
        json_free(v);
        return -1;
    }
    skip_ws(&p);
    if (p.pos < p.len) {
        json_free(v);
        return fail_at(&p, p.pos, "unexpected text after the JSON value");
    }
    *out = v;
    return 0;
}

const json_value *json_get(const json_value *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT)
        return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < obj->n; i++)
        if (obj->key_lens[i] == n && memcmp(obj->keys[i], key, n) == 0)
            return &obj->items[i];
    return NULL;
}

const char *json_get_string(const json_value *obj, const char *key)
{
    const json_value *v = json_get(obj, key);
    return v && v->type == JSON_STRING ? v->string : NULL;
}

double json_get_number(const json_value *obj, const char *key, double fallback)
{
    const json_value *v = json_get(obj, key);
    return v && v->type == JSON_NUMBER ? v->number : fallback;
}

int json_get_rows(const json_value *a, double *x, int rows, int width, double lo, double hi, const char *what,
                  tempo_error *err)
{
    if (!a || a->type != JSON_ARRAY || a->n != (size_t)rows)
        return tempo_fail(err, "%s: expected %d rows of %d numbers", what, rows, width);
    for (size_t b = 0; b < a->n; b++) {
        const json_value *row = &a->items[b];
        if (row->type != JSON_ARRAY || row->n != (size_t)width)
            return tempo_fail(err, "%s[%zu]: expected %d numbers", what, b, width);
        for (int i = 0; i < width; i++) {
            const json_value *v = &row->items[i];
            if (v->type != JSON_NUMBER || !(v->number >= lo && v->number <= hi))
                return tempo_fail(err, "%s[%zu][%d]: expected a number in %g..%g", what, b, i, lo, hi);
            x[b * (size_t)width + (size_t)i] = v->number;
        }
    }
    return 0;
}
