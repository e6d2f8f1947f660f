/* corpus.h - streaming reader of text corpora: documents, one at a time, from
 * files and folders of .txt / .jsonl, optionally .xz-compressed.
 *
 * Formats (chosen by file name; ".xz" means liblzma-decompress first):
 *  - *.jsonl: one JSON object per line with a string field "text" (the
 *    document). Blank lines are skipped; anything else that is not such an
 *    object is an error naming the file and line.
 *  - anything else (normally *.txt): documents separated by a line holding
 *    only the byte 0x1E (the corpus convention "text\n\x1e\n"). A document is
 *    the bytes between separator lines: its final "\n" included, the
 *    "\x1e\n" framing excluded. A file without separators is one document;
 *    a last document without a separator still counts; empty documents
 *    (zero bytes) are skipped. 0x1E that is not alone on its line is text.
 * Bytes are passed through unchanged (invalid UTF-8 is never an error).
 *
 * Folders given as paths contribute their *.txt, *.jsonl, *.txt.xz and
 * *.jsonl.xz regular files (not recursive), sorted by name (byte order).
 *
 * Memory is bounded by the largest document (or JSONL line) plus a 1 MiB read
 * buffer (plus liblzma's decoder state): it does not grow with file size.
 * While reading, the reader also measures each file: decompressed bytes,
 * sha256 of the decompressed content, documents and document bytes.
 * Tokenization and splitting into train/val live elsewhere (data/prepare.h). */
#ifndef TEMPO_CORPUS_H
#define TEMPO_CORPUS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include "core/error.h"

typedef enum { CORPUS_TXT, CORPUS_JSONL } corpus_format;

/* One input file, as listed, and what reading it measured. */
typedef struct {
    char *path;            /* as given, or "<folder>/<name>" for folder entries */
    corpus_format format;
    int xz;                /* 1 if .xz-compressed */
    uint64_t file_size;    /* bytes on disk (stat) */
    int64_t mtime_ns;      /* modification time (stat), nanoseconds since the epoch */
    /* filled while reading (final once done is 1): */
    uint64_t bytes;        /* decompressed bytes read */
    uint64_t docs;         /* documents returned */
    uint64_t doc_bytes;    /* bytes of the documents returned (framing excluded) */
    char sha256[65];       /* hex sha256 of the decompressed content; "" until done */
    int done;              /* 1 once the whole file has been read */
} corpus_file;

/* 1 when a file name is one a folder contributes: *.txt, *.jsonl, *.txt.xz, *.jsonl.xz. */
int corpus_is_input_name(const char *name);

/* Expand paths (files or folders) into the list of input files, stat'ing each
 * and checking it can be opened for reading. Errors name the path:
 * "x.txt: cannot open: No such file or directory", "dir: no .txt, .jsonl,
 * .txt.xz or .jsonl.xz files". On success *files (n of them) is owned by the
 * caller: free with corpus_files_free. */
int corpus_list_files(char *const *paths, int n_paths, corpus_file **files, size_t *n,
                      tempo_error *err);
void corpus_files_free(corpus_file *files, size_t n);

typedef struct corpus_reader corpus_reader;

/* Open a reader over paths (see corpus_list_files for the checks). */
int corpus_open(corpus_reader **out, char *const *paths, int n_paths, tempo_error *err);

/* A reader over an already open stream f, read as one .txt file named
 * `name` (in errors and in the file list): documents exactly as
 * corpus_open gives them for a file of the same bytes. f stays the
 * caller's (corpus_close does not close it). */
int corpus_open_stream(corpus_reader **out, FILE *f, const char *name, tempo_error *err);

/* Next document: returns 1 and sets *doc and *len (valid until the next call or
 * corpus_close), 0 at the end of the last file, -1 on error with err set,
 * e.g. "data.jsonl:17: malformed JSON: column 5: ...", "data.jsonl:3: no
 * string field \"text\"", "x.txt.xz: corrupt xz data". After an error every
 * further call returns -1 with the same message. */
int corpus_next(corpus_reader *r, const uint8_t **doc, size_t *len, tempo_error *err);

/* Read at most bytes decompressed bytes at a time (0: fill the buffer, the
 * default). Documents do not depend on it; tests and the fuzzer use small
 * reads to put every document and line boundary across a read boundary. */
void corpus_set_read_size(corpus_reader *r, size_t bytes);

/* Path of the file the last document came from (or is being read); NULL before the first call. */
const char *corpus_current_path(const corpus_reader *r);
/* The input files and what has been measured so far. */
size_t corpus_n_files(const corpus_reader *r);
const corpus_file *corpus_file_at(const corpus_reader *r, size_t i);

void corpus_close(corpus_reader *r);

#endif
