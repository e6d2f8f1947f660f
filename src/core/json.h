/* json.h - a strict JSON parser (RFC 8259) into a tree of json_value.
 *
 * Used for reading JSONL corpora, meta.json, ICL task files and safetensors
 * headers. It never crashes on any input: nesting is depth-limited (JSON_MAX_DEPTH),
 * every error is reported as text. JSON *writing* lives in core/json_write.h.
 *
 * Strings: escapes are decoded; \u escapes become UTF-8 (a surrogate pair is
 * combined into one 4-byte sequence, a lone surrogate is encoded as its 3-byte
 * form); raw bytes that are not valid UTF-8 are kept byte-exact. Raw control
 * characters (< 0x20) inside strings are rejected, as the grammar says.
 * Numbers are parsed as double (grammar checked strictly: no leading '+',
 * no leading zeros, no NaN/Infinity). Duplicate object keys are kept in order;
 * json_get returns the first. */
#ifndef TEMPO_JSON_H
#define TEMPO_JSON_H

#include <stddef.h>
#include "core/error.h"

#define JSON_MAX_DEPTH 256

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value json_value;
struct json_value {
    json_type type;
    int boolean;          /* JSON_BOOL: 0 or 1 */
    double number;        /* JSON_NUMBER */
    char *string;         /* JSON_STRING: decoded bytes, NUL-terminated */
    size_t string_len;    /* JSON_STRING: byte count (may include NUL bytes from \u0000) */
    size_t n;             /* ARRAY/OBJECT: element count */
    json_value *items;    /* ARRAY elements / OBJECT values, n of them */
    char **keys;          /* OBJECT keys (decoded, NUL-terminated), n of them */
    size_t *key_lens;     /* OBJECT key byte counts */
};

/* Parse exactly one JSON value from text[0..len) (surrounding whitespace
 * allowed, nothing else). On success *out is a tree owned by the caller
 * (free with json_free) and 0 is returned. On error *out is NULL, -1 is
 * returned and err says "column C: <problem>" (or "line L, column C: ..."
 * when the problem is not on the first line); callers prefix file/line.
 * Columns count bytes from 1. */
int json_parse(const char *text, size_t len, json_value **out, tempo_error *err);

/* The value of key in an object (first match), or NULL if absent or obj is
 * not an object (obj may be NULL). */
const json_value *json_get(const json_value *obj, const char *key);

/* Convenience lookups: the string/number of key if present with that type,
 * else NULL / the fallback. */
const char *json_get_string(const json_value *obj, const char *key);
double json_get_number(const json_value *obj, const char *key, double fallback);

/* A matrix: rows x width numbers, each in lo..hi, from a JSON array of
 * arrays into x (row-major). -1 with err "WHAT: expected R rows of W
 * numbers", "WHAT[r]: expected W numbers" or "WHAT[r][i]: expected a number
 * in LO..HI" (what names the array; a may be NULL: absent). */
int json_get_rows(const json_value *a, double *x, int rows, int width, double lo, double hi, const char *what,
                  tempo_error *err);

/* Free a tree returned by json_parse (NULL is fine). */
void json_free(json_value *v);

#endif
