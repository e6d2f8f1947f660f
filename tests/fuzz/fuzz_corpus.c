/* fuzz_corpus.c - libFuzzer harness for the corpus readers (src/data/corpus.c):
 * .txt, .jsonl and their .xz forms. The first input byte picks the format
 * (bits 0-1: txt, jsonl, txt.xz, jsonl.xz; bit 2: for .xz, compress the rest
 * here rather than hand the decoder raw bytes), the second the read size (so
 * that separators and line ends fall across read boundaries); the rest is the
 * file. Any file must read or be refused, never crash or leak, and what is
 * read must equal a plain reference split of the same content (corpus.h),
 * with the measured byte, document and sha256 counts. */
#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "core/sha256.h"
#include "data/corpus.h"

/* The reference: document k of content (txt or jsonl), or 0 when there is no
 * such document (-1: jsonl content the reader must refuse). Slow and plain. */
static int reference_doc(const uint8_t *p, size_t n, int jsonl, size_t k, uint8_t *out, size_t *out_len)
{
    size_t found = 0, i = 0;
    if (!jsonl) {
        size_t len = 0;
        while (i <= n) {
            int at_end = i == n;
            int sep = !at_end && p[i] == 0x1E && (i + 1 == n || p[i + 1] == '\n');
            if (at_end || sep) {
                if (len && found++ == k) {
                    *out_len = len;
                    return 1;
                }
                len = 0;
                if (at_end)
                    break;
                i += i + 1 < n ? 2 : 1;
                continue;
            }
            const uint8_t *nl = memchr(p + i, '\n', n - i);
            size_t line = nl ? (size_t)(nl - (p + i)) + 1 : n - i;
            memcpy(out + len, p + i, line);
            len += line;
            i += line;
        }
        return 0;
    }
    while (i < n) {
        const uint8_t *nl = memchr(p + i, '\n', n - i);
        size_t line = nl ? (size_t)(nl - (p + i)) : n - i;
        const uint8_t *l = p + i;
        i += line + (nl ? 1 : 0);
        size_t b = 0;
        while (b < line && (l[b] == ' ' || l[b] == '\t' || l[b] == '\r')) b++;
        if (b == line)
            continue;
        json_value *v;
        tempo_error err;
        if (json_parse((const char *)l, line, &v, &err))
            return -1;
        const json_value *t = json_get(v, "text");
        if (v->type != JSON_OBJECT || !t || t->type != JSON_STRING) {
            json_free(v);
            return -1;
        }
        if (t->string_len && found++ == k) {
            memcpy(out, t->string, t->string_len);
            *out_len = t->string_len;
            json_free(v);
            return 1;
        }
        json_free(v);
    }
    return 0;
}

/* Write the file; content is what the reader should decompress to (NULL: unknown). */
static int write_input(const char *path, const uint8_t *data, size_t size, int compress)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = 0;
    if (compress) {
        size_t cap = lzma_stream_buffer_bound(size), pos = 0;
        uint8_t *xz = malloc(cap);
        if (!xz || lzma_easy_buffer_encode(0, LZMA_CHECK_CRC32, NULL, data, size, xz, &pos, cap) != LZMA_OK)
            rc = -1;
        else
            rc = fwrite(xz, 1, pos, f) == pos ? 0 : -1;
        free(xz);
    } else {
        rc = fwrite(data, 1, size, f) == size ? 0 : -1;
    }
    return fclose(f) || rc ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int format = data[0] & 3, jsonl = format & 1, xz = format >> 1, compress = xz && (data[0] & 4);
    size_t read_size = data[1] ? data[1] : 0;
    const uint8_t *content = data + 2;
    size_t n = size - 2;
    static const char *suffix[4] = {"txt", "jsonl", "txt.xz", "jsonl.xz"};
    char path[96];
    snprintf(path, sizeof path, "/tmp/tempo_fuzz_corpus.%d.%s", (int)getpid(), suffix[format]);
    if (write_input(path, content, n, compress))
        return 0;
    int known = !xz || compress; /* the decompressed content is content */
    char *paths[1] = {path};
    corpus_reader *r;
    tempo_error err;
    if (corpus_open(&r, paths, 1, &err)) {
        unlink(path);
        return 0;
    }
    corpus_set_read_size(r, read_size);
    uint8_t *want = malloc(n + 1);
    const uint8_t *doc;
    size_t len, k = 0;
    uint64_t doc_bytes = 0;
    int rc;
    while ((rc = corpus_next(r, &doc, &len, &err)) == 1) {
        size_t want_len = 0;
        if (known && (reference_doc(content, n, jsonl, k, want, &want_len) != 1 || want_len != len ||
                      memcmp(want, doc, len)))
            __builtin_trap(); /* a document the reference split does not give */
        doc_bytes += len;
        k++;
    }
    if (known) {
        size_t want_len;
        int more = reference_doc(content, n, jsonl, k, want, &want_len);
        if (rc == 0 && more != 0)
            __builtin_trap(); /* the reader stopped early, or accepted a bad line */
        if (rc < 0 && more != -1)
            __builtin_trap(); /* the reader refused what the reference reads */
    }
    const corpus_file *cf = corpus_file_at(r, 0);
    if (rc == 0) {
        if (!cf->done || cf->docs != k || cf->doc_bytes != doc_bytes)
            __builtin_trap();
        if (known) {
            uint8_t digest[32];
            char hex[65];
            sha256(content, n, digest);
            sha256_hex(digest, hex);
            if (cf->bytes != n || strcmp(hex, cf->sha256))
                __builtin_trap();
        }
    }
    free(want);
    corpus_close(r);
    unlink(path);
    return 0;
}
