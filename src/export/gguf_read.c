/* gguf_read.c - the bounds-checked GGUF parser (see gguf_read.h). */
#include "export/gguf_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/gguf_format.h"
#include "export/tensor_encode.h"

#define GGUF_MAX_KV (1u << 20)
#define GGUF_MAX_TENSORS (1u << 20)

typedef struct {
    const uint8_t *p, *end;
} cursor;

static int take(cursor *c, void *out, size_t n)
{
    if ((size_t)(c->end - c->p) < n)
        return -1;
    memcpy(out, c->p, n);
    c->p += n;
    return 0;
}

static int take_str(cursor *c, const char **s, size_t *n)
{
    uint64_t len;
    if (take(c, &len, 8) || len > (uint64_t)(c->end - c->p))
        return -1;
    *s = (const char *)c->p;
    *n = (size_t)len;
    c->p += len;
    return 0;
}

/* bytes of one scalar of type t, 0 for strings / arrays / unknown */
static size_t scalar_size(uint32_t t)
{
    static const size_t sizes[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < GGUF_TYPE_COUNT ? sizes[t] : 0;
}

static void read_scalar(gguf_kv *kv, uint32_t t, const uint8_t *p)
{
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; float f32;
    uint64_t u64; int64_t i64; double f64;
    switch (t) {
    case GGUF_TYPE_UINT8: memcpy(&u8, p, 1); kv->u = u8; kv->i = u8; kv->f = u8; break;
    case GGUF_TYPE_BOOL: memcpy(&u8, p, 1); kv->u = u8 != 0; kv->i = u8 != 0; kv->f = u8 != 0; break;
    case GGUF_TYPE_INT8: memcpy(&i8, p, 1); kv->i = i8; kv->u = (uint64_t)i8; kv->f = i8; break;
    case GGUF_TYPE_UINT16: memcpy(&u16, p, 2); kv->u = u16; kv->i = u16; kv->f = u16; break;
    case GGUF_TYPE_INT16: memcpy(&i16, p, 2); kv->i = i16; kv->u = (uint64_t)i16; kv->f = i16; break;
    case GGUF_TYPE_UINT32: memcpy(&u32, p, 4); kv->u = u32; kv->i = u32; kv->f = u32; break;
    case GGUF_TYPE_INT32: memcpy(&i32, p, 4); kv->i = i32; kv->u = (uint64_t)i32; kv->f = i32; break;
    case GGUF_TYPE_FLOAT32: memcpy(&f32, p, 4); kv->f = f32; break;
    case GGUF_TYPE_UINT64: memcpy(&u64, p, 8); kv->u = u64; kv->f = (double)u64; break;
    case GGUF_TYPE_INT64: memcpy(&i64, p, 8); kv->i = i64; kv->u = (uint64_t)i64; kv->f = (double)i64; break;
    case GGUF_TYPE_FLOAT64: memcpy(&f64, p, 8); kv->f = f64; break;
    default: break;
    }
}

static int parse_value(cursor *c, gguf_kv *kv)
{
    if (kv->type == GGUF_TYPE_STRING)
        return take_str(c, &kv->str, &kv->str_len);
    if (kv->type == GGUF_TYPE_ARRAY) {
        if (take(c, &kv->arr_type, 4) || take(c, &kv->arr_n, 8))
            return -1;
        kv->arr = c->p;
        if (kv->arr_type == GGUF_TYPE_STRING) {
            for (uint64_t i = 0; i < kv->arr_n; i++) { /* each is >= 8 bytes, so this loop is bounded */
                const char *s;
                size_t n;
                if (take_str(c, &s, &n))
                    return -1;
            }
            return 0;
        }
        size_t es = scalar_size(kv->arr_type);
        if (es == 0 || kv->arr_n > (uint64_t)(c->end - c->p) / es) /* nested arrays are not supported */
            return -1;
        c->p += kv->arr_n * es;
        return 0;
    }
    size_t es = scalar_size(kv->type);
    if (es == 0 || (size_t)(c->end - c->p) < es)
        return -1;
    read_scalar(kv, kv->type, c->p);
    c->p += es;
    return 0;
}

const char *gguf_type_name(uint32_t type, char *buf, size_t n)
{
    static const char *const names[] = {"f32", "f16", "q4_0", "q4_1", "type 4", "type 5", "q5_0", "q5_1",
                                        "q8_0", "q8_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q8_K",
                                        "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s",
                                        "iq4_xs", "i8", "i16", "i32", "i64", "f64", "iq1_m", "bf16"};
    if (type < sizeof names / sizeof names[0])
        snprintf(buf, n, "%s", names[type]);
    else
        snprintf(buf, n, "type %u", type);
    return buf;
}

static int fail(gguf_file *g, tempo_error *err, const char *problem)
{
    tempo_fail(err, "%s: %s", g->what, problem);
    gguf_free(g);
    return -1;
}

static int parse_tensor_info(cursor *c, gguf_tensor *t, uint64_t *offset, char *problem, size_t pn)
{
    const char *name;
    size_t name_len;
    if (take_str(c, &name, &name_len) || take(c, &t->n_dims, 4)) {
        snprintf(problem, pn, "truncated (in the tensor table)");
        return -1;
    }
    if (name_len == 0 || name_len >= sizeof t->name || memchr(name, 0, name_len)) {
        snprintf(problem, pn, "a tensor name is empty, too long or holds a NUL");
        return -1;
    }
    memcpy(t->name, name, name_len);
    t->name[name_len] = '\0';
    if (t->n_dims < 1 || t->n_dims > 4) {
        snprintf(problem, pn, "tensor %s has %u dimensions (1 to 4 expected)", t->name, t->n_dims);
        return -1;
    }
    t->n_elements = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (take(c, &t->ne[d], 8)) {
            snprintf(problem, pn, "truncated (in the tensor table)");
            return -1;
        }
        if (t->ne[d] == 0 || t->ne[d] > (1ull << 40) || t->n_elements > (1ull << 40) / t->ne[d]) {
            snprintf(problem, pn, "tensor %s has a bad shape", t->name);
            return -1;
        }
        t->n_elements *= t->ne[d];
    }
    if (take(c, &t->type, 4) || take(c, offset, 8)) {
        snprintf(problem, pn, "truncated (in the tensor table)");
        return -1;
    }
    char tn[32];
    if (t->type == GGML_TYPE_F32)
        t->nbytes = 4 * t->n_elements;
    else if (t->type == GGML_TYPE_F16)
        t->nbytes = 2 * t->n_elements;
    else if (t->type == GGML_TYPE_Q8_0 && t->ne[0] % Q8_0_BLOCK == 0)
        t->nbytes = t->n_elements / Q8_0_BLOCK * Q8_0_BLOCK_BYTES;
    else {
        snprintf(problem, pn, "tensor %s has type %s, which tempo does not read (f32, f16, q8_0)", t->name,
                 gguf_type_name(t->type, tn, sizeof tn));
        return -1;
    }
    return 0;
}

int gguf_parse(gguf_file *g, const uint8_t *buf, size_t len, const char *what, tempo_error *err)
{
    memset(g, 0, sizeof *g);
    g->buf = buf;
    g->len = len;
    snprintf(g->what, sizeof g->what, "%s", what);
    cursor c = {buf, buf + len};
    char magic[4], problem[256];
    uint64_t n_tensors, n_kv;
    if (take(&c, magic, 4) || memcmp(magic, GGUF_MAGIC, 4) != 0)
        return fail(g, err, "not a GGUF file (no GGUF magic)");
    if (take(&c, &g->version, 4) || take(&c, &n_tensors, 8) || take(&c, &n_kv, 8))
        return fail(g, err, "truncated (in the header)");
    if (g->version != 2 && g->version != 3) {
        snprintf(problem, sizeof problem, "GGUF version %u (tempo reads 2 and 3)", g->version);
        return fail(g, err, problem);
    }
    if (n_kv > GGUF_MAX_KV || n_tensors > GGUF_MAX_TENSORS || n_kv > len / 12 || n_tensors > len / 24)
        return fail(g, err, "implausible tensor or metadata count");
    g->kv = calloc(n_kv ? n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors)
        return fail(g, err, "out of memory");
    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_kv *kv = &g->kv[i];
        if (take_str(&c, &kv->key, &kv->key_len) || take(&c, &kv->type, 4))
            return fail(g, err, "truncated (in the metadata)");
        g->n_kv = i + 1;
        if (parse_value(&c, kv)) {
            snprintf(problem, sizeof problem, "metadata %.*s: truncated or of an unknown type",
                     (int)(kv->key_len < 64 ? kv->key_len : 64), kv->key);
            return fail(g, err, problem);
        }
    }
    uint64_t alignment = GGUF_ALIGNMENT;
    int64_t a;
    if (gguf_find(g, "general.alignment")) {
        if (gguf_get_int(g, "general.alignment", &a) || a < 1 || a > 65536 || (a & (a - 1)))
            return fail(g, err, "general.alignment is not a power of two up to 65536");
        alignment = (uint64_t)a;
    }
    uint64_t *offsets = calloc(n_tensors ? n_tensors : 1, sizeof *offsets);
    if (!offsets)
        return fail(g, err, "out of memory");
    for (uint64_t i = 0; i < n_tensors; i++) {
        g->n_tensors = i + 1;
        if (parse_tensor_info(&c, &g->tensors[i], &offsets[i], problem, sizeof problem)) {
            free(offsets);
            return fail(g, err, problem);
        }
        for (uint64_t j = 0; j < i; j++)
            if (strcmp(g->tensors[j].name, g->tensors[i].name) == 0) {
                free(offsets);
                snprintf(problem, sizeof problem, "tensor %s appears twice", g->tensors[i].name);
                return fail(g, err, problem);
            }
    }
    uint64_t data_start = ((uint64_t)(c.p - buf) + alignment - 1) / alignment * alignment;
    uint64_t data_len = data_start <= len ? len - data_start : 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        if (offsets[i] % alignment) {
            snprintf(problem, sizeof problem, "tensor %s is not aligned", t->name);
            free(offsets);
            return fail(g, err, problem);
        }
        if (offsets[i] > data_len || t->nbytes > data_len - offsets[i]) {
            snprintf(problem, sizeof problem, "truncated (tensor %s ends at byte %.0f of %llu data bytes)",
                     t->name, (double)offsets[i] + (double)t->nbytes, (unsigned long long)data_len);
            free(offsets);
            return fail(g, err, problem);
        }
        t->data = buf + data_start + offsets[i];
    }
    free(offsets);
    return 0;
}

void gguf_free(gguf_file *g)
{
    free(g->kv);
    free(g->tensors);
    g->kv = NULL;
    g->tensors = NULL;
    g->n_kv = g->n_tensors = 0;
}

const gguf_kv *gguf_find(const gguf_file *g, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key_len == n && memcmp(g->kv[i].key, key, n) == 0)
            return &g->kv[i];
    return NULL;
}

static int is_integer_type(uint32_t t)
{
    return t <= GGUF_TYPE_INT32 || t == GGUF_TYPE_BOOL || t == GGUF_TYPE_UINT64 || t == GGUF_TYPE_INT64;
}

int gguf_get_int(const gguf_file *g, const char *key, int64_t *out)
{
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv)
        return -1;
    if (is_integer_type(kv->type)) {
        if (kv->type == GGUF_TYPE_UINT64 && kv->u > (uint64_t)INT64_MAX)
            return -1;
        *out = kv->type == GGUF_TYPE_UINT64 ? (int64_t)kv->u : kv->i;
        return 0;
    }
    return -1;
}

int gguf_get_float(const gguf_file *g, const char *key, double *out)
{
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv || kv->type == GGUF_TYPE_STRING || kv->type == GGUF_TYPE_ARRAY || kv->type >= GGUF_TYPE_COUNT)
        return -1;
    *out = kv->f;
    return 0;
}

int gguf_get_str(const gguf_file *g, const char *key, char *out, size_t n)
{
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv || kv->type != GGUF_TYPE_STRING || n == 0)
        return -1;
    size_t k = kv->str_len < n - 1 ? kv->str_len : n - 1;
    memcpy(out, kv->str, k);
    out[k] = '\0';
    return 0;
}

const char *gguf_next_str(const uint8_t **p, size_t *n)
{
    uint64_t len;
    memcpy(&len, *p, 8);
    const char *s = (const char *)*p + 8;
    *n = (size_t)len;
    *p += 8 + len;
    return s;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name)
{
    for (size_t i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0)
            return &g->tensors[i];
    return NULL;
}
