/* tokenizer.h - byte-level BPE tokenizer (GPT-2 / tiktoken style): the
 * vocabulary, its file format, encoding and decoding. Training lives in
 * data/bpe_train.h, the pre-splitting rules in data/pretokenize.h.
 *
 * Ids: 0..255 are the single bytes (id = byte value); 256..N-1 are merged
 * tokens in merge order (id = rank); id N is the one special token, the
 * document separator "<|sep|>", which stands for no bytes. N ("the vocab",
 * 256 <= N <= 65536) counts the regular tokens; the model vocabulary is N+1.
 *
 * File format (tiktoken convention, one file, UTF-8/ASCII, "\n" line ends):
 *     <base64 of the token's bytes> <rank>\n        for rank = 0, 1, ..., N-1
 *     !special <|sep|> <N>\n                        the last line
 * Base64 is the standard alphabet with '=' padding. '!' is not a base64
 * character, so a tiktoken-style reader told to skip lines starting with '!'
 * reads the regular tokens unchanged. The loader rejects, with
 * "<file>:<line>: <problem>": a truncated file (no special line, or a last
 * line without "\n"), bad base64, a rank other than the line number, a byte
 * token 0..255 that is not its own byte, a duplicate token, a merged token
 * whose bytes cannot be made from two lower-ranked tokens, a special line
 * with another name or id, and anything after it.
 *
 * Encoding (tiktoken semantics): the text is pre-split (pretokenize.h); within
 * each piece, starting from single bytes, the adjacent pair whose
 * concatenation is the lowest-ranked token is merged, repeatedly, until no
 * adjacent pair forms a token (ties: leftmost). For vocabularies trained by
 * bpe_train.h this equals applying the training merges in order.
 * A tokenizer is immutable once built: any number of threads may encode with
 * the same const tokenizer at once. */
#ifndef TEMPO_TOKENIZER_H
#define TEMPO_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include "core/error.h"
#include "core/strbuf.h"

#define TOK_MIN_VOCAB 256
#define TOK_MAX_VOCAB 65536
#define TOK_SEP_NAME "<|sep|>"

typedef struct tokenizer tokenizer;

/* Read a tokenizer file (errors "path:line: problem"). */
int tok_load(tokenizer **out, const char *path, tempo_error *err);
/* Parse tokenizer file text; 'what' names the source in errors, e.g.
 * "model.safetensors metadata" -> "model.safetensors metadata:12: bad base64". */
int tok_parse(tokenizer **out, const char *text, size_t len, const char *what, tempo_error *err);
/* The file text (exactly what tok_save writes), appended to out. 0 or -1 (out of memory). */
int tok_serialize(const tokenizer *t, strbuf *out);
/* Write the file atomically (temp file, fsync, rename). */
int tok_save(const tokenizer *t, const char *path, tempo_error *err);
void tok_free(tokenizer *t);

/* Total ids including the separator (N + 1). */
int tok_vocab_size(const tokenizer *t);
/* Regular tokens (N). */
int tok_n_regular(const tokenizer *t);
/* The separator id (N). */
int32_t tok_sep_id(const tokenizer *t);

/* The bytes token id stands for: sets *bytes and returns the count. The
 * separator stands for no bytes (returns 0); so does an id out of range
 * (*bytes is then NULL). */
size_t tok_token_bytes(const tokenizer *t, int32_t id, const uint8_t **bytes);

/* Build a tokenizer from its regular tokens' bytes in rank order (tokens
 * 0..255 must be the single bytes). Checks the rules of the file format
 * (errors name 'what' and the rank). Used by the trainer and by tests. */
int tok_from_tokens(tokenizer **out, const uint8_t *const *tokens, const size_t *lens, int n,
                    const char *what, tempo_error *err);

/* Append the ids of text to a growable array (*ids with *n used and *cap
 * allocated; *ids may be NULL with *n == *cap == 0). No separator is added.
 * Thread-safe. Uses a cache for this call only; for many calls use a
 * tok_encoder, which keeps its cache. Returns 0, or -1 (out of memory). */
int tok_encode(const tokenizer *t, const uint8_t *text, size_t len, int32_t **ids, size_t *n,
               size_t *cap, tempo_error *err);

/* Append the bytes of ids to out; the separator adds nothing. Returns 0, or
 * -1 on an id out of range (out then holds the bytes before it). */
int tok_decode(const tokenizer *t, const int32_t *ids, size_t n, strbuf *out);

/* An encoder: a tokenizer plus a cache of piece -> ids, owned by one thread.
 * Many encoders may share one tokenizer. Output equals tok_encode. */
typedef struct tok_encoder tok_encoder;
int tok_encoder_new(tok_encoder **out, const tokenizer *t, tempo_error *err);
int tok_encoder_encode(tok_encoder *e, const uint8_t *text, size_t len, int32_t **ids, size_t *n,
                       size_t *cap, tempo_error *err);
void tok_encoder_free(tok_encoder *e);

/* Encode one pre-split piece without any cache into out (room for len ids);
 * returns the id count. method 0 picks by length, 1 forces the quadratic
 * scan, 2 forces the heap (tests compare them). */
size_t tok_encode_piece(const tokenizer *t, const uint8_t *piece, size_t len, int32_t *out,
                        int method);

#endif
