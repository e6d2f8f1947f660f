/* json_write.h - the one way tempo writes JSON: a streaming writer over a
 * strbuf that places commas, colons and quotes itself and escapes every
 * string. Documents that cross a process boundary (result.json, the metrics
 * stream, the phase-2 scorecard, benchmark lines) are built with it; their
 * key names live in the typed module that owns each document (for example
 * train/run_result.h), not here. Parsing lives in core/json.h.
 *
 * Misuse (a value in an object without a key, a key in an array, an end that
 * does not match its begin, nesting deeper than JSONW_MAX_DEPTH) does not
 * write broken JSON silently: the writer remembers the first misuse and
 * jsonw_finish reports it, as it reports an allocation failure. */
#ifndef TEMPO_JSON_WRITE_H
#define TEMPO_JSON_WRITE_H

#include <stddef.h>
#include "core/error.h"
#include "core/strbuf.h"

#define JSONW_MAX_DEPTH 32

typedef struct {
    strbuf *out;
    int depth;                               /* open containers */
    unsigned char in_object[JSONW_MAX_DEPTH]; /* 1: object, 0: array */
    unsigned char has_item[JSONW_MAX_DEPTH];  /* the container holds an element already */
    int want_value;                          /* a key was written; its value comes next */
    int top_done;                            /* a complete top-level value was written */
    const char *misuse;                      /* the first structural mistake, or NULL */
} jsonw;

/* Start writing one JSON value at the end of out (out keeps what it held). */
void jsonw_init(jsonw *w, strbuf *out);

void jsonw_object_begin(jsonw *w);
void jsonw_object_end(jsonw *w);
void jsonw_array_begin(jsonw *w);
void jsonw_array_end(jsonw *w);
/* A key of the open object (escaped like any string). */
void jsonw_key(jsonw *w, const char *key);

/* Values: in an array, or after jsonw_key. */
void jsonw_number(jsonw *w, double v);          /* shortest text that round-trips; NaN/Inf -> null */
void jsonw_number_digits(jsonw *w, double v, int decimals); /* rounded to `decimals` places first */
void jsonw_int(jsonw *w, long long v);
void jsonw_uint(jsonw *w, unsigned long long v);
void jsonw_bool(jsonw *w, int b);
void jsonw_null(jsonw *w);
void jsonw_string(jsonw *w, const char *s);     /* NULL -> null */
void jsonw_string_n(jsonw *w, const char *s, size_t n);
/* A value that is already JSON text (a document another module wrote with
 * its own writer); the caller vouches that it is one complete value. */
void jsonw_raw(jsonw *w, const char *json);
/* A matrix: rows x width numbers of x (row-major) as an array of arrays, each the shortest text that reads
 * back as the same double (json_get_rows reads it). */
void jsonw_rows(jsonw *w, const double *x, int rows, int width);
/* Open an object whose first members are those of object_json, a complete
 * object another module wrote (vouched for as with jsonw_raw; whitespace
 * around it is dropped): more members and jsonw_object_end follow. For
 * extending a document kept as text, where parsing and rewriting it would
 * round its large integers through double. Not an object: misuse. */
void jsonw_object_extend(jsonw *w, const char *object_json);

/* Key and value in one call, for the common object member. */
void jsonw_field_number(jsonw *w, const char *key, double v);
void jsonw_field_digits(jsonw *w, const char *key, double v, int decimals);
void jsonw_field_int(jsonw *w, const char *key, long long v);
void jsonw_field_uint(jsonw *w, const char *key, unsigned long long v);
void jsonw_field_bool(jsonw *w, const char *key, int b);
void jsonw_field_null(jsonw *w, const char *key);
void jsonw_field_string(jsonw *w, const char *key, const char *s);
void jsonw_field_raw(jsonw *w, const char *key, const char *json);

/* 0 when exactly one complete value was written without misuse or an
 * allocation failure; else -1 and err says which ("json writer: ..."). */
int jsonw_finish(jsonw *w, tempo_error *err);

#endif
