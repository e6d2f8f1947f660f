/* corpus.c - streaming document reader over .txt/.jsonl(.xz) files (see
 * corpus.h): file listing, raw/xz byte sources, the 0x1E splitter and the
 * JSONL line reader. Nothing here tokenizes. */
#include "data/corpus.h"

#include <dirent.h>
#include <errno.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/json.h"
#include "core/sha256.h"

#define READ_CHUNK (1u << 20)   /* decompressed bytes buffered at a time */
#define XZ_IN_CHUNK (1u << 16)  /* compressed bytes read at a time */
#define RECORD_SEP 0x1E

struct corpus_reader {
    corpus_file *files;
    size_t n_files;
    int cur;                 /* index of the open file, -1 before the first */
    int failed;              /* sticky error */
    tempo_error saved_err;

    /* the open file */
    FILE *f;
    FILE *given;             /* corpus_open_stream's stream (the caller's: never closed here) */
    int xz_active;
    lzma_stream xz;
    uint8_t *xz_in;
    int xz_input_eof;
    sha256_ctx sha;
    int eof;                 /* the source has no more bytes */
    uint64_t line_no;        /* JSONL: lines consumed */

    /* decompressed bytes: buf[pos..len) are unread */
    uint8_t *buf;
    size_t pos, len, cap;
    size_t read_size;        /* at most this many bytes per read; 0 = as many as fit */

    /* the current document (txt) or parsed line (jsonl) */
    uint8_t *doc;
    size_t doc_len, doc_cap;
    json_value *line_json;
};

/* ---------- file listing ---------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

int corpus_is_input_name(const char *name)
{
    return ends_with(name, ".txt") || ends_with(name, ".jsonl") || ends_with(name, ".txt.xz") ||
           ends_with(name, ".jsonl.xz");
}

/* Fill f from a path that must be a readable regular file. */
static int describe_file(corpus_file *f, const char *path, tempo_error *err)
{
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return tempo_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc = fstat(fileno(fp), &st);
    fclose(fp);
    if (rc != 0 || !S_ISREG(st.st_mode))
        return tempo_fail(err, "%s: not a regular file", path);
    f->path = strdup(path);
    if (!f->path)
        return tempo_fail(err, "%s: out of memory", path);
    f->xz = ends_with(path, ".xz");
    size_t n = strlen(path) - (f->xz ? 3 : 0);
    f->format = n >= 6 && memcmp(path + n - 6, ".jsonl", 6) == 0 ? CORPUS_JSONL : CORPUS_TXT;
    f->file_size = (uint64_t)st.st_size;
    f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void corpus_files_free(corpus_file *files, size_t n)
{
    if (!files)
        return;
    for (size_t i = 0; i < n; i++)
        free(files[i].path);
    free(files);
}

/* Append one described file to the growing list. */
static int push_file(corpus_file **files, size_t *n, size_t *cap, const char *path, tempo_error *err)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        corpus_file *d = realloc(*files, c * sizeof *d);
        if (!d)
            return tempo_fail(err, "%s: out of memory", path);
        *files = d;
        *cap = c;
    }
    if (describe_file(&(*files)[*n], path, err))
        return -1;
    (*n)++;
    return 0;
}

/* Add a folder's corpus files, sorted by name. */
static int push_folder(corpus_file **files, size_t *n, size_t *cap, const char *dir, tempo_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return tempo_fail(err, "%s: cannot open: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n_names = 0, names_cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!corpus_is_input_name(e->d_name))
            continue;
        if (n_names == names_cap) {
            size_t c = names_cap ? names_cap * 2 : 16;
            char **p = realloc(names, c * sizeof *p);
            if (!p) {
                rc = tempo_fail(err, "%s: out of memory", dir);
                break;
            }
            names = p;
            names_cap = c;
        }
        if (!(names[n_names] = strdup(e->d_name))) {
            rc = tempo_fail(err, "%s: out of memory", dir);
            break;
        }
        n_names++;
    }
    closedir(d);
    if (rc == 0 && n_names > 1)
        qsort(names, n_names, sizeof *names, cmp_names);
    size_t added = 0;
    for (size_t i = 0; rc == 0 && i < n_names; i++) {
        char path[4096];
        size_t dl = strlen(dir);
        snprintf(path, sizeof path, dl && dir[dl - 1] == '/' ? "%s%s" : "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
            continue; /* e.g. a folder named x.txt */
        rc = push_file(files, n, cap, path, err);
        added++;
    }
    for (size_t i = 0; i < n_names; i++)
        free(names[i]);
    free(names);
    if (rc == 0 && added == 0)
        rc = tempo_fail(err, "%s: no .txt, .jsonl, .txt.xz or .jsonl.xz files", dir);
    return rc;
}

int corpus_list_files(char *const *paths, int n_paths, corpus_file **files, size_t *n,
                      tempo_error *err)
{
    *files = NULL;
    *n = 0;
    size_t cap = 0;
    for (int i = 0; i < n_paths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            tempo_fail(err, "%s: cannot open: %s", paths[i], strerror(errno));
            goto fail;
        }
        int rc = S_ISDIR(st.st_mode) ? push_folder(files, n, &cap, paths[i], err)
                                     : push_file(files, n, &cap, paths[i], err);
        if (rc)
            goto fail;
    }
    return 0;
fail:
    corpus_files_free(*files, *n);
    *files = NULL;
    *n = 0;
    return -1;
}

/* ---------- byte sources ---------- */

static void close_current(corpus_reader *r)
{
    if (r->f && r->f != r->given)
        fclose(r->f);
    r->f = NULL;
    if (r->xz_active)
        lzma_end(&r->xz);
    r->xz_active = 0;
}

static int open_file(corpus_reader *r, int i, tempo_error *err)
{
    corpus_file *cf = &r->files[i];
    r->cur = i;
    r->pos = r->len = 0;
    r->eof = 0;
    r->line_no = 0;
    r->xz_input_eof = 0;
    cf->bytes = cf->docs = cf->doc_bytes = 0;
    cf->sha256[0] = '\0';
    cf->done = 0;
    sha256_init(&r->sha);
    r->f = r->given ? r->given : fopen(cf->path, "rb");
    if (!r->f)
        return tempo_fail(err, "%s: cannot open: %s", cf->path, strerror(errno));
    if (cf->xz) {
        lzma_stream init = LZMA_STREAM_INIT;
        r->xz = init;
        lzma_ret ret = lzma_stream_decoder(&r->xz, UINT64_MAX, LZMA_CONCATENATED);
        if (ret != LZMA_OK)
            return tempo_fail(err, "%s: cannot start the xz decoder (out of memory?)", cf->path);
        r->xz_active = 1;
        r->xz.avail_in = 0;
    }
    return 0;
}

static int xz_problem(corpus_reader *r, lzma_ret ret, tempo_error *err)
{
    const char *path = r->files[r->cur].path;
    switch (ret) {
    case LZMA_FORMAT_ERROR:
        return tempo_fail(err, "%s: corrupt xz data (not in xz format)", path);
    case LZMA_DATA_ERROR:
        return tempo_fail(err, "%s: corrupt xz data", path);
    case LZMA_BUF_ERROR:
        return tempo_fail(err, "%s: corrupt xz data (truncated)", path);
    case LZMA_MEM_ERROR:
    case LZMA_MEMLIMIT_ERROR:
        return tempo_fail(err, "%s: out of memory decompressing", path);
    case LZMA_OPTIONS_ERROR:
        return tempo_fail(err, "%s: unsupported xz options", path);
    default:
        return tempo_fail(err, "%s: xz decoder error %d", path, (int)ret);
    }
}

/* Decompress into dst[0..room); returns bytes produced (0 only at the end). */
static long xz_read(corpus_reader *r, uint8_t *dst, size_t room, tempo_error *err)
{
    r->xz.next_out = dst;
    r->xz.avail_out = room;
    while (r->xz.avail_out == room) {
        if (r->xz.avail_in == 0 && !r->xz_input_eof) {
            size_t got = fread(r->xz_in, 1, XZ_IN_CHUNK, r->f);
            if (got == 0) {
                if (ferror(r->f))
                    return tempo_fail(err, "%s: read failed: %s", r->files[r->cur].path,
                                      strerror(errno));
                r->xz_input_eof = 1;
            }
            r->xz.next_in = r->xz_in;
            r->xz.avail_in = got;
        }
        lzma_ret ret = lzma_code(&r->xz, r->xz_input_eof ? LZMA_FINISH : LZMA_RUN);
        if (ret == LZMA_STREAM_END)
            break;
        if (ret != LZMA_OK)
            return xz_problem(r, ret, err);
    }
    return (long)(room - r->xz.avail_out);
}

/* Move unread bytes to the front and read more (growing the buffer when it is
 * full of unread bytes). Sets r->eof when the source is exhausted. */
static int refill(corpus_reader *r, tempo_error *err)
{
    if (r->eof)
        return 0;
    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    if (r->len == r->cap) {
        size_t cap = r->cap * 2;
        uint8_t *b = realloc(r->buf, cap);
        if (!b)
            return tempo_fail(err, "%s: out of memory (a line over %zu bytes)", r->files[r->cur].path,
                              r->cap);
        r->buf = b;
        r->cap = cap;
    }
    uint8_t *dst = r->buf + r->len;
    size_t room = r->cap - r->len;
    if (r->read_size && room > r->read_size)
        room = r->read_size;
    long got;
    if (r->xz_active) {
        got = xz_read(r, dst, room, err);
        if (got < 0)
            return -1;
    } else {
        got = (long)fread(dst, 1, room, r->f);
        if (got == 0 && ferror(r->f))
            return tempo_fail(err, "%s: read failed: %s", r->files[r->cur].path, strerror(errno));
    }
    if (got == 0) {
        r->eof = 1;
        return 0;
    }
    sha256_update(&r->sha, dst, (size_t)got);
    r->files[r->cur].bytes += (uint64_t)got;
    r->len += (size_t)got;
    return 0;
}

/* ---------- documents ---------- */

static int doc_append(corpus_reader *r, const uint8_t *p, size_t n, tempo_error *err)
{
    if (n == 0)
        return 0;
    if (r->doc_len + n > r->doc_cap) {
        size_t cap = r->doc_cap ? r->doc_cap : 1u << 16;
        while (cap < r->doc_len + n)
            cap *= 2;
        uint8_t *d = realloc(r->doc, cap);
        if (!d)
            return tempo_fail(err, "%s: out of memory (a document over %zu bytes)",
                              r->files[r->cur].path, r->doc_len);
        r->doc = d;
        r->doc_cap = cap;
    }
    memcpy(r->doc + r->doc_len, p, n);
    r->doc_len += n;
    return 0;
}

/* Next non-empty document of a .txt file: 1, 0 at its end, -1 on error. */
static int next_txt(corpus_reader *r, const uint8_t **doc, size_t *len, tempo_error *err)
{
    r->doc_len = 0;
    for (;;) {
        if (r->pos == r->len) {
            if (refill(r, err))
                return -1;
            if (r->pos == r->len)
                break; /* end of file */
        }
        const uint8_t *start = r->buf + r->pos;
        const uint8_t *rs = memchr(start, RECORD_SEP, r->len - r->pos);
        if (!rs) {
            if (doc_append(r, start, r->len - r->pos, err))
                return -1;
            r->pos = r->len;
            continue;
        }
        if (doc_append(r, start, (size_t)(rs - start), err))
            return -1;
        r->pos = (size_t)(rs - r->buf);
        if (r->pos + 1 >= r->len && refill(r, err)) /* need the byte after 0x1E */
            return -1;
        int at_line_start = r->doc_len == 0 || r->doc[r->doc_len - 1] == '\n';
        int line_ends = r->pos + 1 >= r->len || r->buf[r->pos + 1] == '\n';
        if (at_line_start && line_ends) {
            r->pos += r->pos + 1 < r->len ? 2 : 1;
            if (r->doc_len)
                break;
            continue; /* empty document */
        }
        if (doc_append(r, r->buf + r->pos, 1, err))
            return -1;
        r->pos++;
    }
    if (r->doc_len == 0)
        return 0;
    *doc = r->doc;
    *len = r->doc_len;
    return 1;
}

static int is_blank(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return 0;
    return 1;
}

/* Next non-empty document of a .jsonl file: 1, 0 at its end, -1 on error. */
static int next_jsonl(corpus_reader *r, const uint8_t **doc, size_t *len, tempo_error *err)
{
    const char *path = r->files[r->cur].path;
    for (;;) {
        json_free(r->line_json);
        r->line_json = NULL;
        size_t scanned = 0;
        const uint8_t *nl;
        while (!(nl = memchr(r->buf + r->pos + scanned, '\n', r->len - r->pos - scanned))) {
            scanned = r->len - r->pos;
            if (r->eof)
                break;
            if (refill(r, err))
                return -1;
        }
        if (!nl && r->pos == r->len)
            return 0;
        const uint8_t *line = r->buf + r->pos;
        size_t line_len = nl ? (size_t)(nl - line) : r->len - r->pos;
        r->pos += line_len + (nl ? 1 : 0);
        r->line_no++;
        if (is_blank(line, line_len))
            continue;
        tempo_error jerr;
        tempo_error_clear(&jerr);
        if (json_parse((const char *)line, line_len, &r->line_json, &jerr))
            return tempo_fail(err, "%s:%llu: malformed JSON: %s", path,
                              (unsigned long long)r->line_no, jerr.msg);
        if (r->line_json->type != JSON_OBJECT)
            return tempo_fail(err, "%s:%llu: not a JSON object", path,
                              (unsigned long long)r->line_no);
        const json_value *text = json_get(r->line_json, "text");
        if (!text || text->type != JSON_STRING)
            return tempo_fail(err, "%s:%llu: no string field \"text\"", path,
                              (unsigned long long)r->line_no);
        if (text->string_len == 0)
            continue;
        *doc = (const uint8_t *)text->string;
        *len = text->string_len;
        return 1;
    }
}

int corpus_open(corpus_reader **out, char *const *paths, int n_paths, tempo_error *err)
{
    *out = NULL;
    corpus_reader *r = calloc(1, sizeof *r);
    if (!r)
        return tempo_fail(err, "corpus: out of memory");
    r->cur = -1;
    if (corpus_list_files(paths, n_paths, &r->files, &r->n_files, err)) {
        free(r);
        return -1;
    }
    r->cap = READ_CHUNK;
    r->buf = malloc(r->cap);
    r->xz_in = malloc(XZ_IN_CHUNK);
    if (!r->buf || !r->xz_in) {
        corpus_close(r);
        return tempo_fail(err, "corpus: out of memory");
    }
    *out = r;
    return 0;
}

int corpus_open_stream(corpus_reader **out, FILE *f, const char *name, tempo_error *err)
{
    *out = NULL;
    corpus_reader *r = calloc(1, sizeof *r);
    if (!r)
        return tempo_fail(err, "%s: out of memory", name);
    r->cur = -1;
    r->given = f;
    r->files = calloc(1, sizeof *r->files);
    if (r->files) {
        r->n_files = 1;
        r->files[0].path = strdup(name);
        r->files[0].format = CORPUS_TXT;
    }
    r->cap = READ_CHUNK;
    r->buf = malloc(r->cap);
    r->xz_in = malloc(XZ_IN_CHUNK);
    if (!r->files || !r->files[0].path || !r->buf || !r->xz_in) {
        corpus_close(r);
        return tempo_fail(err, "%s: out of memory", name);
    }
    *out = r;
    return 0;
}

int corpus_next(corpus_reader *r, const uint8_t **doc, size_t *len, tempo_error *err)
{
    if (r->failed) {
        if (err)
            *err = r->saved_err;
        return -1;
    }
    for (;;) {
        if (!r->f) {
            if ((size_t)(r->cur + 1) >= r->n_files) {
                r->cur = r->n_files ? (int)r->n_files - 1 : -1;
                return 0;
            }
            if (open_file(r, r->cur + 1, &r->saved_err))
                break;
        }
        corpus_file *cf = &r->files[r->cur];
        int rc = cf->format == CORPUS_JSONL ? next_jsonl(r, doc, len, &r->saved_err)
                                            : next_txt(r, doc, len, &r->saved_err);
        if (rc < 0)
            break;
        if (rc == 1) {
            cf->docs++;
            cf->doc_bytes += *len;
            return 1;
        }
        uint8_t digest[32];
        sha256_final(&r->sha, digest);
        sha256_hex(digest, cf->sha256);
        cf->done = 1;
        close_current(r);
    }
    r->failed = 1;
    close_current(r);
    if (err)
        *err = r->saved_err;
    return -1;
}

void corpus_set_read_size(corpus_reader *r, size_t bytes) { r->read_size = bytes; }

const char *corpus_current_path(const corpus_reader *r)
{
    return r->cur >= 0 ? r->files[r->cur].path : NULL;
}

size_t corpus_n_files(const corpus_reader *r) { return r->n_files; }

const corpus_file *corpus_file_at(const corpus_reader *r, size_t i)
{
    return i < r->n_files ? &r->files[i] : NULL;
}

void corpus_close(corpus_reader *r)
{
    if (!r)
        return;
    close_current(r);
    json_free(r->line_json);
    corpus_files_free(r->files, r->n_files);
    free(r->buf);
    free(r->xz_in);
    free(r->doc);
    free(r);
}
