/* safetensors.c - safetensors reader/writer (see safetensors.h); the
 * header JSON is written with core/json_write.h and read with core/json.h. */
#include "core/safetensors.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/json_write.h"
#include "core/sha256.h"
#include "core/strbuf.h"

#define ST_MAX_HEADER (100u << 20)

#define CHECKSUM_TAG "tempo-safetensors-checksum-1\n"
#define CHECKSUM_PREFIX "sha256:"

static void feed_field(sha256_ctx *c, const char *s, size_t n)
{
    sha256_update(c, s, n);
    sha256_update(c, "", 1);   /* the NUL after each field */
}

/* The header's part of the checksum (safetensors.h): the metadata but the
 * checksum, then the tensors' entries, from a parsed header whose entries
 * are well-formed (parse_header's checks, or the writer's own). */
static void header_digest(const json_value *root, sha256_ctx *c)
{
    sha256_update(c, CHECKSUM_TAG, strlen(CHECKSUM_TAG));
    for (size_t i = 0; i < root->n; i++) {
        const json_value *v = &root->items[i];
        if (strcmp(root->keys[i], "__metadata__") || v->type != JSON_OBJECT)
            continue;
        for (size_t k = 0; k < v->n; k++)
            if (strcmp(v->keys[k], ST_CHECKSUM_KEY) && v->items[k].type == JSON_STRING) {
                feed_field(c, v->keys[k], v->key_lens[k]);
                feed_field(c, v->items[k].string, v->items[k].string_len);
            }
    }
    sha256_update(c, "\n", 1);
    for (size_t i = 0; i < root->n; i++) {
        const json_value *v = &root->items[i];
        if (!strcmp(root->keys[i], "__metadata__") || v->type != JSON_OBJECT)
            continue;
        const json_value *dt = json_get(v, "dtype"), *sh = json_get(v, "shape"), *off = json_get(v, "data_offsets");
        feed_field(c, root->keys[i], root->key_lens[i]);
        feed_field(c, dt && dt->type == JSON_STRING ? dt->string : "", dt && dt->type == JSON_STRING ? dt->string_len : 0);
        char num[48];
        for (size_t d = 0; sh && sh->type == JSON_ARRAY && d < sh->n; d++) {
            int n = snprintf(num, sizeof num, "%s%.0f", d ? "," : "", sh->items[d].number);
            sha256_update(c, num, (size_t)n);
        }
        sha256_update(c, "", 1);
        if (off && off->type == JSON_ARRAY && off->n == 2) {
            int n = snprintf(num, sizeof num, "%.0f,%.0f", off->items[0].number, off->items[1].number);
            sha256_update(c, num, (size_t)n);
        }
        sha256_update(c, "", 1);
    }
    sha256_update(c, "\n", 1);
}

/* The header JSON, padded with spaces to a multiple of 8 bytes (so tensor
 * data is aligned): {"__metadata__":{...}, name:{dtype, shape,
 * data_offsets}, ...}, the metadata without any "checksum" of meta's and
 * with `checksum` last when it is not NULL. */
static int build_header(strbuf *h, const st_write_tensor *tensors, const uint16_t *const *f16, int n_tensors,
                        const st_meta *meta, int n_meta, const char *checksum, const char *path, tempo_error *err)
{
    jsonw w;
    jsonw_init(&w, h);
    jsonw_object_begin(&w);
    int any_meta = checksum != NULL;
    for (int i = 0; i < n_meta; i++)
        any_meta |= strcmp(meta[i].key, ST_CHECKSUM_KEY) != 0;
    if (any_meta) {
        jsonw_key(&w, "__metadata__");
        jsonw_object_begin(&w);
        for (int i = 0; i < n_meta; i++)
            if (strcmp(meta[i].key, ST_CHECKSUM_KEY))
                jsonw_field_string(&w, meta[i].key, meta[i].value);
        if (checksum)
            jsonw_field_string(&w, ST_CHECKSUM_KEY, checksum);
        jsonw_object_end(&w);
    }
    size_t offset = 0;
    for (int i = 0; i < n_tensors; i++) {
        const st_write_tensor *t = &tensors[i];
        size_t numel = 1, es = f16 && f16[i] ? 2 : 4;
        jsonw_key(&w, t->name);
        jsonw_object_begin(&w);
        jsonw_field_string(&w, "dtype", es == 2 ? "F16" : "F32");
        jsonw_key(&w, "shape");
        jsonw_array_begin(&w);
        for (int d = 0; d < t->ndim; d++) {
            jsonw_int(&w, (long long)t->shape[d]);
            numel *= (size_t)t->shape[d];
        }
        jsonw_array_end(&w);
        jsonw_key(&w, "data_offsets");
        jsonw_array_begin(&w);
        jsonw_uint(&w, offset);
        jsonw_uint(&w, offset + numel * es);
        jsonw_array_end(&w);
        jsonw_object_end(&w);
        offset += numel * es;
    }
    jsonw_object_end(&w);
    tempo_error je;
    if (jsonw_finish(&w, &je))
        return tempo_fail(err, "%s: building the header: %s", path, je.msg);
    while (h->len % 8) strbuf_puts(h, " ");
    if (h->oom)
        return tempo_fail(err, "%s: out of memory building the header", path);
    return 0;
}

static size_t tensor_bytes(const st_write_tensor *t, int is_f16)
{
    size_t numel = 1;
    for (int d = 0; d < t->ndim; d++) numel *= (size_t)t->shape[d];
    return numel * (is_f16 ? 2 : 4);
}

/* "sha256:<hex>" of what the file will hold: its header as a reader decodes
 * it (the header is parsed back, so escapes count as they will be read),
 * then the tensors' bytes in order. */
static int file_checksum(const strbuf *h, const st_write_tensor *tensors, const uint16_t *const *f16, int n_tensors,
                         char out[sizeof CHECKSUM_PREFIX + 64], const char *path, tempo_error *err)
{
    json_value *root;
    tempo_error je;
    if (json_parse(h->data, h->len, &root, &je))
        return tempo_fail(err, "%s: reading back the header: %s", path, je.msg);
    sha256_ctx c;
    sha256_init(&c);
    header_digest(root, &c);
    json_free(root);
    for (int i = 0; i < n_tensors; i++) {
        int is_f16 = f16 && f16[i];
        sha256_update(&c, is_f16 ? (const void *)f16[i] : (const void *)tensors[i].data, tensor_bytes(&tensors[i], is_f16));
    }
    uint8_t d[32];
    char hex[65];
    sha256_final(&c, d);
    sha256_hex(d, hex);
    snprintf(out, sizeof CHECKSUM_PREFIX + 64, "%s%s", CHECKSUM_PREFIX, hex);
    return 0;
}

int safetensors_write(const char *path, const st_write_tensor *tensors, int n_tensors,
                      const st_meta *meta, int n_meta, tempo_error *err)
{
    return safetensors_write_f16(path, tensors, NULL, n_tensors, meta, n_meta, err);
}

int safetensors_write_f16(const char *path, const st_write_tensor *tensors, const uint16_t *const *f16,
                          int n_tensors, const st_meta *meta, int n_meta, tempo_error *err)
{
    /* the header twice: without the checksum, to digest it, then with it */
    strbuf h = {0};
    char sum[sizeof CHECKSUM_PREFIX + 64];
    int rc = build_header(&h, tensors, f16, n_tensors, meta, n_meta, NULL, path, err) ||
             file_checksum(&h, tensors, f16, n_tensors, sum, path, err);
    strbuf_free(&h);
    memset(&h, 0, sizeof h);
    if (rc || build_header(&h, tensors, f16, n_tensors, meta, n_meta, sum, path, err)) {
        strbuf_free(&h);
        return -1;
    }
    atomic_file af;
    if (atomic_open(&af, path, err)) {
        strbuf_free(&h);
        return -1;
    }
    uint8_t len8[8];
    uint64_t hl = h.len;
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)(hl >> (8 * i));
    rc = atomic_write(&af, len8, 8, err) || atomic_write(&af, h.data, h.len, err);
    strbuf_free(&h);
    for (int i = 0; !rc && i < n_tensors; i++) {
        int is_f16 = f16 && f16[i];
        rc = atomic_write(&af, is_f16 ? (const void *)f16[i] : (const void *)tensors[i].data,
                          tensor_bytes(&tensors[i], is_f16), err);
    }
    if (rc) {
        atomic_abort(&af);
        return -1;
    }
    return atomic_commit(&af, err);
}

void safetensors_close(safetensors_file *sf)
{
    for (int i = 0; i < sf->n_meta; i++) {
        free(sf->meta_keys[i]);
        free(sf->meta_values[i]);
    }
    free(sf->meta_keys);
    free(sf->meta_values);
    free(sf->tensors);
    free(sf->file);
    memset(sf, 0, sizeof *sf);
}

static int parse_tensor(safetensors_file *sf, st_tensor *t, const char *name, const json_value *v,
                        size_t data_len, const char *data, tempo_error *err)
{
    const char *p = sf->path;
    if (strlen(name) >= sizeof t->name)
        return tempo_fail(err, "%s: tensor name too long", p);
    snprintf(t->name, sizeof t->name, "%s", name);
    const json_value *dt = json_get(v, "dtype"), *sh = json_get(v, "shape"), *off = json_get(v, "data_offsets");
    if (!dt || dt->type != JSON_STRING || !sh || sh->type != JSON_ARRAY || !off || off->type != JSON_ARRAY ||
        off->n != 2)
        return tempo_fail(err, "%s: tensor %s: malformed header entry", p, name);
    if (dt->string_len != 3 || strcmp(dt->string, "F32") != 0)
        return tempo_fail(err, "%s: tensor %s: unsupported dtype %s (tempo reads F32)", p, name, dt->string);
    if (sh->n > ST_MAX_DIMS)
        return tempo_fail(err, "%s: tensor %s: too many dimensions (%zu)", p, name, sh->n);
    t->ndim = (int)sh->n;
    t->numel = 1;
    for (size_t d = 0; d < sh->n; d++) {
        double x = sh->items[d].number;
        /* the range before the cast (a double beyond int64_t is undefined behaviour there), and
         * a product of dimensions that still counts bytes in a size_t */
        if (sh->items[d].type != JSON_NUMBER || !(x >= 0 && x <= 1e12) || x != floor(x) ||
            (x > 0 && t->numel > SIZE_MAX / 4 / (size_t)x))
            return tempo_fail(err, "%s: tensor %s: bad shape", p, name);
        t->shape[d] = (int64_t)x;
        t->numel *= (size_t)x;
    }
    double b = off->items[0].number, e = off->items[1].number;
    if (off->items[0].type != JSON_NUMBER || off->items[1].type != JSON_NUMBER || !(b >= 0 && e >= b) ||
        b != floor(b) || e != floor(e))
        return tempo_fail(err, "%s: tensor %s: bad data_offsets", p, name);
    if (e > (double)data_len) /* (compared as doubles: e may be beyond any size_t) */
        return tempo_fail(err, "%s: truncated (tensor %s ends at byte %.0f of %zu data bytes)", p, name, e,
                          data_len);
    if ((size_t)(e - b) != t->numel * 4)
        return tempo_fail(err, "%s: tensor %s: data size does not match its shape", p, name);
    t->data = (const float *)(const void *)(data + (size_t)b);
    return 0;
}

/* Byte order of two header keys (qsort over pointers into the root object). */
static int cmp_keys(const void *a, const void *b)
{
    const char *const *x = a, *const *y = b;
    return strcmp(*x, *y);
}

/* Every key once, none holding a NUL byte: a name must mean one tensor (and
 * one __metadata__), and a name cut short at a NUL would alias another. */
static int check_keys(const safetensors_file *sf, const json_value *root, tempo_error *err)
{
    for (size_t i = 0; i < root->n; i++)
        if (strlen(root->keys[i]) != root->key_lens[i])
            return tempo_fail(err, "%s: a header key holds a NUL byte", sf->path);
    if (root->n < 2)
        return 0;
    const char **keys = malloc(root->n * sizeof *keys);
    if (!keys)
        return tempo_fail(err, "%s: out of memory", sf->path);
    for (size_t i = 0; i < root->n; i++)
        keys[i] = root->keys[i];
    qsort(keys, root->n, sizeof *keys, cmp_keys);
    int rc = 0;
    for (size_t i = 1; !rc && i < root->n; i++)
        if (!strcmp(keys[i - 1], keys[i]))
            rc = tempo_fail(err, "%s: header key %.200s appears twice", sf->path, keys[i]);
    free(keys);
    return rc;
}

static int parse_header(safetensors_file *sf, const json_value *root, const char *data, size_t data_len,
                        tempo_error *err)
{
    const char *p = sf->path;
    if (root->type != JSON_OBJECT)
        return tempo_fail(err, "%s: not a safetensors file (header is not a JSON object)", p);
    if (check_keys(sf, root, err))
        return -1;
    sf->tensors = calloc(root->n ? root->n : 1, sizeof *sf->tensors);
    if (!sf->tensors)
        return tempo_fail(err, "%s: out of memory", p);
    for (size_t i = 0; i < root->n; i++) {
        const json_value *v = &root->items[i];
        if (!strcmp(root->keys[i], "__metadata__")) {
            if (v->type != JSON_OBJECT)
                return tempo_fail(err, "%s: __metadata__ is not an object", p);
            sf->meta_keys = calloc(v->n ? v->n : 1, sizeof(char *));
            sf->meta_values = calloc(v->n ? v->n : 1, sizeof(char *));
            if (!sf->meta_keys || !sf->meta_values)
                return tempo_fail(err, "%s: out of memory", p);
            for (size_t k = 0; k < v->n; k++) {
                if (v->items[k].type != JSON_STRING)
                    return tempo_fail(err, "%s: __metadata__ value %s is not a string", p, v->keys[k]);
                if (strlen(v->keys[k]) != v->key_lens[k] || strlen(v->items[k].string) != v->items[k].string_len)
                    return tempo_fail(err, "%s: __metadata__ %s holds a NUL byte", p, v->keys[k]);
                sf->meta_keys[k] = strdup(v->keys[k]);
                sf->meta_values[k] = malloc(v->items[k].string_len + 1);
                sf->n_meta = (int)k + 1;
                if (!sf->meta_keys[k] || !sf->meta_values[k])
                    return tempo_fail(err, "%s: out of memory", p);
                memcpy(sf->meta_values[k], v->items[k].string, v->items[k].string_len + 1);
            }
            continue;
        }
        if (v->type != JSON_OBJECT)
            return tempo_fail(err, "%s: tensor %s: malformed header entry", p, root->keys[i]);
        if (parse_tensor(sf, &sf->tensors[sf->n_tensors], root->keys[i], v, data_len, data, err))
            return -1;
        sf->n_tensors++;
    }
    return 0;
}

/* The file's checksum against its contents, when it has one. */
static int check_checksum(safetensors_file *sf, const json_value *root, const char *data, size_t data_len,
                          tempo_error *err)
{
    const char *want = safetensors_meta(sf, ST_CHECKSUM_KEY);
    sf->checksummed = 0;
    if (!want)
        return 0;
    const size_t np = strlen(CHECKSUM_PREFIX);
    int formed = strlen(want) == np + 64 && !strncmp(want, CHECKSUM_PREFIX, np);
    for (size_t i = np; formed && i < np + 64; i++)
        formed = (want[i] >= '0' && want[i] <= '9') || (want[i] >= 'a' && want[i] <= 'f');
    if (!formed)
        return tempo_fail(err, "%s: checksum mismatch (the header's checksum is not sha256:<64 hex digits>)",
                          sf->path);
    sha256_ctx c;
    sha256_init(&c);
    header_digest(root, &c);
    sha256_update(&c, data, data_len);
    uint8_t d[32];
    char hex[65];
    sha256_final(&c, d);
    sha256_hex(d, hex);
    if (strcmp(hex, want + np))
        return tempo_fail(err, "%s: checksum mismatch (the file is damaged: its contents do not hash to the sha256 "
                          "its header records)", sf->path);
    sf->checksummed = 1;
    return 0;
}

int safetensors_open(safetensors_file *sf, const char *path, tempo_error *err)
{
    memset(sf, 0, sizeof *sf);
    snprintf(sf->path, sizeof sf->path, "%s", path);
    if (file_read_all(path, &sf->file, &sf->file_len, 0, err))
        return -1;
    if (sf->file_len < 8) {
        safetensors_close(sf);
        return tempo_fail(err, "%s: truncated (%s)", path, "shorter than the 8-byte header length");
    }
    const uint8_t *u = (const uint8_t *)sf->file;
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)u[i] << (8 * i);
    if (hl > ST_MAX_HEADER || hl < 2) {
        safetensors_close(sf);
        return tempo_fail(err, "%s: not a safetensors file (header length %llu)", path, (unsigned long long)hl);
    }
    if (hl > sf->file_len - 8) {
        safetensors_close(sf);
        return tempo_fail(err, "%s: truncated (header needs %llu bytes, file has %zu)", path,
                          (unsigned long long)hl, sf->file_len - 8);
    }
    json_value *root = NULL;
    tempo_error jerr;
    if (json_parse(sf->file + 8, (size_t)hl, &root, &jerr)) {
        safetensors_close(sf);
        return tempo_fail(err, "%s: not a safetensors file (header: %s)", path, jerr.msg);
    }
    char *data = sf->file + 8 + hl;
    size_t data_len = sf->file_len - 8 - (size_t)hl;
    int rc = parse_header(sf, root, data, data_len, err);
    if (rc == 0)
        rc = check_checksum(sf, root, data, data_len, err);
    json_free(root);
    if (rc) {
        safetensors_close(sf);
        return -1;
    }
    return 0;
}

const st_tensor *safetensors_find(const safetensors_file *sf, const char *name)
{
    for (int i = 0; i < sf->n_tensors; i++)
        if (!strcmp(sf->tensors[i].name, name))
            return &sf->tensors[i];
    return NULL;
}

const char *safetensors_meta(const safetensors_file *sf, const char *key)
{
    for (int i = 0; i < sf->n_meta; i++)
        if (!strcmp(sf->meta_keys[i], key))
            return sf->meta_values[i];
    return NULL;
}
