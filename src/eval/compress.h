/* compress.h - `tempo compress`: a text coded by the run's whole mixture,
 * the proof of its bpb. Each token is range-coded (eval/range_coder.h) with
 * the distribution eval/predictor.h gives at its position (the transformer,
 * count memory, cache and match model as eval mixes them, learning as eval
 * learns), so the code is as long as eval's bits plus a few bytes, and it
 * decodes back only if every component is a normalised distribution fixed
 * by the tokens before it (score first, then learn).
 *
 * The text: its bytes are read as `tempo eval --text` reads a .txt file
 * (documents split at lines holding only 0x1E, each tokenised, SEP d1 SEP
 * ... dn SEP) when that reading gives the bytes back exactly: the
 * documents joined by "\x1e\n", with one more after the last when the file
 * ends with it. Otherwise (an empty document, a separator line first, ...)
 * the whole input is one document, SEP bytes SEP. Either way every byte is
 * kept (byte-level BPE encodes any bytes; it is checked). Tokens 1..n-1
 * are coded, the closing SEP too: eval counts its bits.
 *
 * File layout (little-endian), COMPRESS_HEADER_BYTES of header then the
 * range coder's bytes:
 *   0   8  magic "TEMPOZ\r\n"
 *   8   4  format version (COMPRESS_VERSION)
 *   12  4  flags: 1 = documents (SEP stands for "\x1e\n" between them),
 *          2 = a separator line ends the text
 *   16  8  bytes of the original
 *   24  8  tokens of the stream, the leading SEP included
 *   32  32 sha256 of the original
 *   64  32 the model's id (compress_model_id)
 *   96  4  vocabulary
 *   100 4  threads, 104 4 kernel path (0 portable, 1 AVX2), 108 4 the GEMM's
 *          slice depth (kc): what the floats depend on (compress_float_env)
 *   112 8  the first 8 bytes of the sha256 of bytes 0..112 (the header's own check)
 *
 * Determinism: decoding repeats the encoder's arithmetic exactly, so both
 * must run the same code on the same kernel path, with the same GEMM
 * slicing and thread count; decompress refuses a machine or setting where
 * they differ, and the sha256 of the output is checked at the end. */
#ifndef TEMPO_COMPRESS_H
#define TEMPO_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "data/tokenizer.h"
#include "memory/hybrid.h"
#include "model/model.h"

#define COMPRESS_MAGIC "TEMPOZ\r\n"
#define COMPRESS_VERSION 1
#define COMPRESS_HEADER_BYTES 120
#define COMPRESS_DOCUMENTS 1u
#define COMPRESS_TRAILING_SEPARATOR 2u

/* What the floats depend on, beside the code and the model. */
typedef struct {
    uint32_t threads, kernel_path, gemm_kc;
} compress_float_env;

/* This process's: omp_get_max_threads(), the kernel path and the GEMM's kc. */
void compress_float_env_here(compress_float_env *e);

typedef struct {
    uint32_t version, flags;
    uint64_t n_bytes, n_tokens;
    uint8_t sha256[32], model_id[32];
    uint32_t vocab;
    compress_float_env env;
} compress_header;

/* Parse the header of a compressed file's bytes; `what` names it in errors
 * ("FILE: not a tempo compressed file", "FILE: damaged header", a version
 * this tempo does not read, counts that cannot be). */
int compress_header_read(const uint8_t *data, size_t len, const char *what, compress_header *h, tempo_error *err);

/* What a compressed file needs from the model: m with its tokenizer and
 * hybrid parts, read with eval's stride and adaptation. */
typedef struct {
    model *m;
    const tokenizer *tok;
    const hybrid_parts *h;
    int stride;
    int adapt;
    int eval_batch;   /* > 0: compress_text also scores the stream as eval does (hybrid_bpb_evaluate, this batch) */
    /* called every 256 tokens and at the end (may be NULL) */
    void (*progress)(void *user, size_t done, size_t total);
    void *user;
} compress_model;

/* The model's id: a sha256 of everything its predictions depend on (the
 * configuration, every weight, the tokenizer, stride and adaptation, the
 * mixer's weights, the cache and match settings, the learning rate, and the
 * count memory by its sizes, counts of counts, discounts and data id: a
 * digest of its gigabytes would cost more than coding a short text). */
void compress_model_id(const compress_model *cm, uint8_t id[32]);

typedef struct {
    uint64_t bytes_in, bytes_out;   /* the original and the compressed file */
    uint64_t tokens;                /* of the stream, the leading SEP included */
    uint64_t documents;             /* 1 when read as one document */
    int as_documents;               /* read as eval --text reads it (flag COMPRESS_DOCUMENTS), or one document */
    uint64_t document_bytes;        /* the bytes eval's bpb divides by: the documents' (no separator lines) */
    double ideal_bits;              /* sum of -log2 p of the coded tokens under the coded distributions */
    double eval_bits, eval_bpb;     /* eval's figures for the same stream (eval_batch > 0; else NaN) */
    double seconds;                 /* coding (or decoding) */
} compress_result;

/* Compress text[0..len) (named `what` in errors) into *out (malloc'd, *out_len
 * bytes: header and code). */
int compress_text(const compress_model *cm, const uint8_t *text, size_t len, const char *what, uint8_t **out,
                  size_t *out_len, compress_result *r, tempo_error *err);

/* The token stream compress_text codes for text (the reading above): *ids
 * (malloc'd), *n of them, *flags, *n_docs documents of *doc_bytes bytes.
 * Fails when the tokenizer does not give the bytes back. */
int compress_tokens(const tokenizer *tok, const uint8_t *text, size_t len, const char *what, int32_t **ids, size_t *n,
                    uint32_t *flags, uint64_t *n_docs, uint64_t *doc_bytes, tempo_error *err);

/* Decompress data[0..len) (a file named `what`) into *out (malloc'd,
 * *out_len bytes), checked against the header's length and sha256. Refuses
 * another model, another float environment, a damaged or truncated file. */
int decompress_data(const compress_model *cm, const uint8_t *data, size_t len, const char *what, uint8_t **out,
                    size_t *out_len, compress_result *r, tempo_error *err);

#endif
