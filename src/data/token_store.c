/* token_store.c - the .tok file: header, mmap reader with validation, atomic
 * streaming writer (see token_store.h). Encoding text lives in token_encode.c. */
#include "data/token_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "token_store assumes a little-endian host"
#endif

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static void encode_header(uint8_t h[TOKEN_FILE_HEADER_BYTES], uint32_t vocab, uint32_t dtype,
                          uint64_t n_tokens, uint64_t n_bytes, uint64_t n_docs)
{
    memset(h, 0, TOKEN_FILE_HEADER_BYTES);
    memcpy(h, TOKEN_FILE_MAGIC, 8);
    put32(h + 8, TOKEN_FILE_VERSION);
    put32(h + 12, vocab);
    put32(h + 16, dtype);
    put32(h + 20, TOKEN_FILE_HEADER_BYTES);
    put64(h + 24, n_tokens);
    put64(h + 32, n_bytes);
    put64(h + 40, n_docs);
}

/* ---------- reader ---------- */

void token_file_close(token_file *tf)
{
    if (tf->map_)
        munmap(tf->map_, tf->map_len_);
    memset(tf, 0, sizeof *tf);
}

/* Check ids and separators over the whole stream. */
static int validate_stream(const token_file *tf, const char *path, tempo_error *err)
{
    uint32_t sep = tf->vocab_size - 1;
    if (tf->n_tokens == 0)
        return tempo_fail(err, "%s: empty token stream (it must start with the separator)", path);
    if (token_file_at(tf, 0) != sep || token_file_at(tf, tf->n_tokens - 1) != sep)
        return tempo_fail(err, "%s: the token stream must start and end with the separator %u", path, sep);
    uint64_t seps = 0;
    for (uint64_t i = 0; i < tf->n_tokens; i++) {
        uint32_t id = token_file_at(tf, i);
        if (id >= tf->vocab_size)
            return tempo_fail(err, "%s: token %u at position %llu is out of range (vocab %u)", path, id,
                              (unsigned long long)i, tf->vocab_size);
        seps += id == sep;
    }
    if (seps != tf->n_docs + 1)
        return tempo_fail(err, "%s: header says %llu documents, the stream holds %llu separators (want %llu)",
                          path, (unsigned long long)tf->n_docs, (unsigned long long)seps,
                          (unsigned long long)tf->n_docs + 1);
    return 0;
}

int token_file_open(token_file *tf, const char *path, tempo_error *err)
{
    memset(tf, 0, sizeof *tf);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return tempo_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tempo_fail(err, "%s: not a regular file", path);
    }
    uint64_t size = (uint64_t)st.st_size;
    uint8_t h[TOKEN_FILE_HEADER_BYTES];
    ssize_t got = size >= 8 ? pread(fd, h, sizeof h, 0) : 0;
    if (got < 8 || memcmp(h, TOKEN_FILE_MAGIC, 8) != 0) {
        close(fd);
        return tempo_fail(err, "%s: not a tempo token file", path);
    }
    if (got < TOKEN_FILE_HEADER_BYTES) {
        close(fd);
        return tempo_fail(err, "%s: truncated (header of %lld bytes, need %d)", path, (long long)got,
                          TOKEN_FILE_HEADER_BYTES);
    }
    tf->version = get32(h + 8);
    tf->vocab_size = get32(h + 12);
    tf->dtype_bytes = get32(h + 16);
    uint32_t header_bytes = get32(h + 20);
    tf->n_tokens = get64(h + 24);
    tf->n_bytes = get64(h + 32);
    tf->n_docs = get64(h + 40);
    int rc = 0;
    if (tf->version != TOKEN_FILE_VERSION)
        rc = tempo_fail(err, "%s: unsupported token file version %u (this build reads %d)", path,
                        tf->version, TOKEN_FILE_VERSION);
    else if (header_bytes != TOKEN_FILE_HEADER_BYTES)
        rc = tempo_fail(err, "%s: bad header size %u", path, header_bytes);
    else if (tf->vocab_size < 2 || tf->vocab_size > TOK_MAX_VOCAB + 1)
        rc = tempo_fail(err, "%s: bad vocab size %u", path, tf->vocab_size);
    else if (tf->dtype_bytes != token_dtype_for(tf->vocab_size))
        rc = tempo_fail(err, "%s: dtype of %u bytes does not match vocab size %u", path,
                        tf->dtype_bytes, tf->vocab_size);
    else if (tf->n_tokens > (size - TOKEN_FILE_HEADER_BYTES) / tf->dtype_bytes)
        rc = tempo_fail(err, "%s: truncated (header says %llu tokens, file holds %llu)", path,
                        (unsigned long long)tf->n_tokens,
                        (unsigned long long)((size - TOKEN_FILE_HEADER_BYTES) / tf->dtype_bytes));
    else if (size != TOKEN_FILE_HEADER_BYTES + tf->n_tokens * tf->dtype_bytes)
        rc = tempo_fail(err, "%s: %llu bytes after the %llu tokens the header announces", path,
                        (unsigned long long)(size - TOKEN_FILE_HEADER_BYTES - tf->n_tokens * tf->dtype_bytes),
                        (unsigned long long)tf->n_tokens);
    if (rc) {
        close(fd);
        memset(tf, 0, sizeof *tf);
        return -1;
    }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        memset(tf, 0, sizeof *tf);
        return tempo_fail(err, "%s: cannot map: %s", path, strerror(errno));
    }
    tf->map_ = map;
    tf->map_len_ = (size_t)size;
    tf->tokens = (const uint8_t *)map + TOKEN_FILE_HEADER_BYTES;
    if (validate_stream(tf, path, err)) {
        token_file_close(tf);
        return -1;
    }
    return 0;
}

void token_file_read(const token_file *tf, uint64_t i, size_t n, int32_t *out)
{
    if (tf->dtype_bytes == 2) {
        const uint16_t *p = (const uint16_t *)tf->tokens + i;
        for (size_t k = 0; k < n; k++)
            out[k] = p[k];
    } else {
        const uint32_t *p = (const uint32_t *)tf->tokens + i;
        for (size_t k = 0; k < n; k++)
            out[k] = (int32_t)p[k];
    }
}

/* ---------- writer ---------- */

#define WRITE_BUF 65536

struct token_writer {
    atomic_file af;
    uint32_t vocab, dtype;
    uint64_t n_tokens, n_bytes, n_docs;
    uint8_t buf[WRITE_BUF * 4];
    size_t buf_len;              /* bytes pending in buf */
};

static int flush_buf(token_writer *w, tempo_error *err)
{
    int rc = atomic_write(&w->af, w->buf, w->buf_len, err);
    w->buf_len = 0;
    return rc;
}

static int put_token(token_writer *w, uint32_t id, tempo_error *err)
{
    if (w->buf_len + w->dtype > sizeof w->buf && flush_buf(w, err))
        return -1;
    if (w->dtype == 2) {
        uint16_t v = (uint16_t)id;
        memcpy(w->buf + w->buf_len, &v, 2);
    } else {
        memcpy(w->buf + w->buf_len, &id, 4);
    }
    w->buf_len += w->dtype;
    w->n_tokens++;
    return 0;
}

int token_writer_open(token_writer **out, const char *path, uint32_t vocab_size, tempo_error *err)
{
    *out = NULL;
    if (vocab_size < 2 || vocab_size > TOK_MAX_VOCAB + 1)
        return tempo_fail(err, "%s: bad vocab size %u", path, vocab_size);
    token_writer *w = calloc(1, sizeof *w);
    if (!w)
        return tempo_fail(err, "%s: out of memory", path);
    w->vocab = vocab_size;
    w->dtype = token_dtype_for(vocab_size);
    if (atomic_open(&w->af, path, err)) {
        free(w);
        return -1;
    }
    uint8_t h[TOKEN_FILE_HEADER_BYTES];
    encode_header(h, 0, 0, 0, 0, 0); /* placeholder: an unfinished file never looks valid */
    memset(h, 0, 8);
    if (atomic_write(&w->af, h, sizeof h, err) || put_token(w, vocab_size - 1, err)) {
        token_writer_abort(w);
        return -1;
    }
    *out = w;
    return 0;
}

int token_writer_add_doc(token_writer *w, const int32_t *ids, size_t n, uint64_t n_bytes,
                         tempo_error *err)
{
    uint32_t sep = w->vocab - 1;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint32_t)ids[i] >= sep)
            return tempo_fail(err, "%s: token %d out of range for a document (vocab %u)", w->af.path,
                              ids[i], w->vocab);
        if (put_token(w, (uint32_t)ids[i], err))
            return -1;
    }
    if (put_token(w, sep, err))
        return -1;
    w->n_docs++;
    w->n_bytes += n_bytes;
    return 0;
}

uint64_t token_writer_tokens(const token_writer *w) { return w->n_tokens; }
uint64_t token_writer_docs(const token_writer *w) { return w->n_docs; }
uint64_t token_writer_bytes(const token_writer *w) { return w->n_bytes; }

int token_writer_commit(token_writer *w, tempo_error *err)
{
    if (flush_buf(w, err)) {
        token_writer_abort(w);
        return -1;
    }
    uint8_t h[TOKEN_FILE_HEADER_BYTES];
    encode_header(h, w->vocab, w->dtype, w->n_tokens, w->n_bytes, w->n_docs);
    if (fflush(w->af.f) != 0 || fseek(w->af.f, 0, SEEK_SET) != 0) {
        tempo_fail(err, "%s: write failed: %s", w->af.path, strerror(errno));
        token_writer_abort(w);
        return -1;
    }
    if (atomic_write(&w->af, h, sizeof h, err)) {
        token_writer_abort(w);
        return -1;
    }
    int rc = atomic_commit(&w->af, err);
    free(w);
    return rc;
}

void token_writer_abort(token_writer *w)
{
    if (!w)
        return;
    atomic_abort(&w->af);
    free(w);
}
