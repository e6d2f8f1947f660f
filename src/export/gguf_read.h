/* gguf_read.h - a GGUF (version 2 or 3) parser for outside input: checks
 * every length, count, offset and size against the buffer before using it,
 * so a truncated, damaged or hostile file is an error naming the file and
 * the problem, never a crash (tests/fuzz/fuzz_gguf.c). It knows the format
 * only (gguf_format.h); turning a file into a tempo model is gguf_import.h.
 * Tensor types other than F32, F16 and Q8_0 are refused with their name. */
#ifndef TEMPO_EXPORT_GGUF_READ_H
#define TEMPO_EXPORT_GGUF_READ_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct {
    const char *key;          /* points into the buffer; key_len bytes, no NUL */
    size_t key_len;
    uint32_t type;            /* GGUF_TYPE_* */
    /* scalars: */
    uint64_t u;               /* unsigned and bool */
    int64_t i;                /* signed */
    double f;                 /* floats */
    const char *str;          /* strings: str_len bytes, no NUL */
    size_t str_len;
    /* arrays: */
    uint32_t arr_type;
    uint64_t arr_n;
    const uint8_t *arr;       /* the first element; every element lies inside the buffer */
} gguf_kv;

typedef struct {
    char name[128];
    uint32_t n_dims;
    uint64_t ne[4];           /* innermost first */
    uint32_t type;            /* GGML_TYPE_F32, _F16, _Q8_0 */
    uint64_t n_elements;
    const uint8_t *data;      /* inside the buffer, nbytes long */
    uint64_t nbytes;
} gguf_tensor;

typedef struct {
    const uint8_t *buf;       /* not owned */
    size_t len;
    uint32_t version;
    gguf_kv *kv;
    size_t n_kv;
    gguf_tensor *tensors;
    size_t n_tensors;
    char what[512];           /* names the file in errors */
} gguf_file;

/* Parse buf[0..len) (which must outlive the result); what names it in
 * errors ("m.gguf: truncated (tensor blk.0.attn_q.weight ends at byte ...)").
 * Returns 0, or -1 with err set (code 1); *g is then empty. */
int gguf_parse(gguf_file *g, const uint8_t *buf, size_t len, const char *what, tempo_error *err);
void gguf_free(gguf_file *g); /* frees the tables, not buf */

/* The entry with this key, or NULL. */
const gguf_kv *gguf_find(const gguf_file *g, const char *key);
/* A scalar number of any numeric type as an integer / double: 0 when present
 * and numeric (an integer must be whole and fit), -1 otherwise. */
int gguf_get_int(const gguf_file *g, const char *key, int64_t *out);
int gguf_get_float(const gguf_file *g, const char *key, double *out);
/* A string value copied into out (NUL-terminated, cut to n - 1): 0, or -1
 * when absent or not a string. */
int gguf_get_str(const gguf_file *g, const char *key, char *out, size_t n);
/* Walk a string array: *p starts at kv->arr; each call returns the next
 * string (len in *n) and advances *p. Only for kv->arr_type == STRING and at
 * most kv->arr_n calls (the parser checked that they all fit). */
const char *gguf_next_str(const uint8_t **p, size_t *n);

const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name);

/* "f32", "f16", "q8_0", "q4_K", ... or "type N". */
const char *gguf_type_name(uint32_t type, char *buf, size_t n);

#endif
