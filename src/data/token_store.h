/* token_store.h - token streams: the .tok file format (a memory-mapped
 * reader and an atomic streaming writer) and the stream layout shared by
 * prepare, the trainer and bpb evaluation. Tokenizing lives in tokenizer.h;
 * choosing which documents go where lives in prepare.h.
 *
 * Stream layout: the stream starts with the separator token, then each
 * document's tokens followed by one separator:
 *     SEP d1 SEP d2 SEP ... dn SEP
 * so a stream of n documents holds n + 1 separators, and every document is
 * preceded by a separator (a model predicting d1's first token conditions on
 * SEP, like every other document). The separator is the last id of the
 * vocabulary: sep = vocab_size - 1. n_bytes counts the document text bytes
 * the tokens stand for (separators stand for no bytes).
 *
 * File (.tok), little-endian, a fixed 64-byte header then the tokens:
 *     offset  size  field
 *      0       8    magic "TEMPOTOK"
 *      8       4    version = 1
 *     12       4    vocab_size (total ids including the separator)
 *     16       4    dtype_bytes: 2 (uint16) when vocab_size <= 65536, else 4 (uint32)
 *     20       4    header_bytes = 64
 *     24       8    n_tokens
 *     32       8    n_bytes
 *     40       8    n_docs
 *     48      16    reserved, zero
 *     64    n_tokens * dtype_bytes: the token ids
 * The file size is exactly 64 + n_tokens * dtype_bytes. */
#ifndef TEMPO_TOKEN_STORE_H
#define TEMPO_TOKEN_STORE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include "core/error.h"
#include "data/tokenizer.h"

#define TOKEN_FILE_MAGIC "TEMPOTOK"
#define TOKEN_FILE_VERSION 1
#define TOKEN_FILE_HEADER_BYTES 64

typedef struct {
    uint32_t version, vocab_size, dtype_bytes;  /* vocab_size = total ids incl. separator; dtype 2 or 4 */
    uint64_t n_tokens, n_bytes, n_docs;         /* n_bytes = document text bytes the tokens stand for */
    const void *tokens;                         /* mmap'd, n_tokens entries of dtype_bytes */
    void *map_;
    size_t map_len_;
} token_file;

/* dtype for a vocabulary: 2 when vocab_size <= 65536, else 4. */
static inline uint32_t token_dtype_for(uint32_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

/* Map and validate a token file: magic, version, dtype, sizes, every id below
 * vocab_size, the stream starting and ending with the separator and holding
 * n_docs + 1 of them. Errors name the file: "train.tok: truncated (header says
 * 123 tokens, file holds 100)", "x: not a tempo token file". */
int token_file_open(token_file *tf, const char *path, tempo_error *err);
/* Unmap (tf is zeroed; closing a zeroed token_file is fine). */
void token_file_close(token_file *tf);

/* Token i (i < n_tokens). Assumes a little-endian host (x86, ARM). */
static inline uint32_t token_file_at(const token_file *tf, uint64_t i)
{
    if (tf->dtype_bytes == 2)
        return ((const uint16_t *)tf->tokens)[i];
    return ((const uint32_t *)tf->tokens)[i];
}

/* Read n tokens starting at i into out as int32 (i + n <= n_tokens). */
void token_file_read(const token_file *tf, uint64_t i, size_t n, int32_t *out);

/* A streaming writer: opening writes the header placeholder and the leading
 * separator, each document appends its tokens and a separator, commit patches
 * the header, fsyncs and renames into place. Until commit, only
 * "<path>.tmp.<pid>" exists; abort (or any failure) removes it. */
typedef struct token_writer token_writer;
int token_writer_open(token_writer **out, const char *path, uint32_t vocab_size, tempo_error *err);
/* Append one document (its ids, none the separator, all < vocab_size) and a separator. */
int token_writer_add_doc(token_writer *w, const int32_t *ids, size_t n, uint64_t n_bytes,
                         tempo_error *err);
uint64_t token_writer_tokens(const token_writer *w);
uint64_t token_writer_docs(const token_writer *w);
uint64_t token_writer_bytes(const token_writer *w);
/* Finish the file; w is freed whatever the outcome. */
int token_writer_commit(token_writer *w, tempo_error *err);
/* Drop the file; w is freed. NULL is fine. */
void token_writer_abort(token_writer *w);

/* Encode a text file into the stream layout above (*ids malloc'd, n of them,
 * SEP d1 SEP ... dn SEP): the file is read with the corpus reader (corpus.h),
 * so a plain text file without 0x1E separator lines is one document, and
 * .xz/.jsonl work too. *n_bytes and *n_docs receive the document byte and
 * document counts. Single-threaded (prepare.h encodes big inputs in parallel). */
int token_encode_file(const tokenizer *t, const char *path, int32_t **ids, size_t *n,
                      uint64_t *n_bytes, uint64_t *n_docs, tempo_error *err);

/* The same from an open stream read as a .txt file named `name` (corpus_open_stream). */
int token_encode_stream(const tokenizer *t, FILE *f, const char *name, int32_t **ids, size_t *n, uint64_t *n_bytes,
                        uint64_t *n_docs, tempo_error *err);

/* The same for text in memory, taken as one document: SEP text SEP (an empty
 * text gives just SEP). */
int token_encode_text(const tokenizer *t, const uint8_t *text, size_t len, int32_t **ids,
                      size_t *n, tempo_error *err);

#endif
