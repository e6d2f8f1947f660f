/* tokenizer.c - the vocabulary: building and validating it, the tiktoken-style
 * file (base64, parse, serialize, save, load), token bytes and decoding.
 * Encoding lives in bpe_encode.c, training in bpe_train.c. */
#include "data/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

/* ---------- base64 (standard alphabet, '=' padding, canonical only) ---------- */

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_encode(strbuf *out, const uint8_t *p, size_t n)
{
    char q[4];
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n) v |= p[i + 2];
        q[0] = b64_alphabet[v >> 18];
        q[1] = b64_alphabet[(v >> 12) & 63];
        q[2] = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
        q[3] = i + 2 < n ? b64_alphabet[v & 63] : '=';
        strbuf_append(out, q, 4);
    }
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decode n chars into out (room for n / 4 * 3 bytes); -1 if not canonical base64. */
static long b64_decode(const char *s, size_t n, uint8_t *out)
{
    if (n % 4)
        return -1;
    size_t len = 0;
    for (size_t i = 0; i < n; i += 4) {
        int pad = 0;
        uint32_t v = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            int d;
            if (c == '=' && i + 4 == n && k >= 2) {
                pad++;
                d = 0;
            } else {
                d = b64_value(c);
                if (d < 0 || pad) /* bad char, or data after padding */
                    return -1;
            }
            v = v << 6 | (uint32_t)d;
        }
        out[len++] = (uint8_t)(v >> 16);
        if (pad < 2) out[len++] = (uint8_t)(v >> 8);
        if (pad < 1) out[len++] = (uint8_t)v;
        if ((pad == 2 && (v & 0xFFFF)) || (pad == 1 && (v & 0xFF))) /* non-zero unused bits */
            return -1;
    }
    return (long)len;
}

/* ---------- building ---------- */

void tok_free(tokenizer *t)
{
    if (!t)
        return;
    free(t->offsets);
    free(t->bytes);
    u64_map_free(&t->pairs);
    free(t);
}

/* Where an error is: "what:LINE" when line_base > 0 (token r on line r +
 * line_base), else "what: token R". */
static int build_fail(tempo_error *err, const char *what, int line_base, int rank, const char *problem)
{
    if (line_base > 0)
        return tempo_fail(err, "%s:%d: %s", what, rank + line_base, problem);
    return tempo_fail(err, "%s: token %d: %s", what, rank, problem);
}

/* Token r (bytes p[0..len)) against the lower-ranked ones in ids: the 256 byte tokens first, then
 * merged tokens of 2+ bytes, each new and made of two lower-ranked tokens. */
static int check_token(const bytes_map *ids, const uint8_t *p, size_t len, int r, const char *what, int line_base,
                       tempo_error *err)
{
    char problem[160];
    if (r < 256) {
        if (len != 1 || p[0] != r) {
            snprintf(problem, sizeof problem, "token %d must be the single byte 0x%02x", r, r);
            return build_fail(err, what, line_base, r, problem);
        }
        return 0;
    }
    if (len < 2)
        return build_fail(err, what, line_base, r, "a merged token must have at least 2 bytes");
    uint64_t *dup = bytes_map_get(ids, p, len);
    if (dup) {
        snprintf(problem, sizeof problem, "duplicate token (same bytes as token %llu)", (unsigned long long)*dup);
        return build_fail(err, what, line_base, r, problem);
    }
    int splits = 0;
    for (size_t k = 1; k < len && !splits; k++)
        splits = bytes_map_get(ids, p, k) && bytes_map_get(ids, p + k, len - k);
    if (!splits)
        return build_fail(err, what, line_base, r, "token cannot be made from two lower-ranked tokens");
    return 0;
}

/* Every split of every merged token into two tokens, whatever their ranks, into t->pairs. */
static int add_pairs(tokenizer *t, const uint8_t *const *tokens, const size_t *lens, int n, const bytes_map *ids,
                     const char *what, tempo_error *err)
{
    for (int r = 256; r < n; r++) {
        const uint8_t *p = tokens[r];
        size_t len = lens[r];
        for (size_t k = 1; k < len; k++) {
            uint64_t *a = bytes_map_get(ids, p, k), *b;
            if (!a || !(b = bytes_map_get(ids, p + k, len - k)))
                continue;
            uint64_t *v = u64_map_put(&t->pairs, *a << 32 | *b, NULL);
            if (!v)
                return tempo_fail(err, "%s: out of memory", what);
            *v = (uint64_t)r;
        }
    }
    return 0;
}

static int build(tokenizer **out, const uint8_t *const *tokens, const size_t *lens, int n,
                 const char *what, int line_base, tempo_error *err)
{
    *out = NULL;
    if (n < TOK_MIN_VOCAB)
        return tempo_fail(err, "%s: only %d regular tokens (the 256 byte tokens are required)", what, n);
    if (n > TOK_MAX_VOCAB)
        return tempo_fail(err, "%s: %d regular tokens (at most %d)", what, n, TOK_MAX_VOCAB);
    tokenizer *t = calloc(1, sizeof *t);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += lens[i];
    if (t) {
        t->n_regular = n;
        t->offsets = malloc(((size_t)n + 1) * sizeof *t->offsets);
        t->bytes = malloc(total ? total : 1);
    }
    if (!t || !t->offsets || !t->bytes || total >= UINT32_MAX) {
        tok_free(t);
        return tempo_fail(err, "%s: out of memory", what);
    }
    bytes_map ids = {0};
    int rc = 0;
    size_t off = 0;
    for (int r = 0; r < n && rc == 0; r++) {
        const uint8_t *p = tokens[r];
        size_t len = lens[r];
        rc = check_token(&ids, p, len, r, what, line_base, err);
        if (rc)
            break;
        uint64_t *v = bytes_map_put(&ids, p, len, NULL);
        if (!v) {
            rc = tempo_fail(err, "%s: out of memory", what);
            break;
        }
        *v = (uint64_t)r;
        t->offsets[r] = (uint32_t)off;
        memcpy(t->bytes + off, p, len);
        off += len;
    }
    t->offsets[n] = (uint32_t)off;
    if (rc == 0)
        rc = add_pairs(t, tokens, lens, n, &ids, what, err);
    bytes_map_free(&ids);
    if (rc) {
        tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int tok_from_tokens(tokenizer **out, const uint8_t *const *tokens, const size_t *lens, int n,
                    const char *what, tempo_error *err)
{
    return build(out, tokens, lens, n, what, 0, err);
}

/* ---------- the file ---------- */

int tok_serialize(const tokenizer *t, strbuf *out)
{
    for (int r = 0; r < t->n_regular; r++) {
        b64_encode(out, t->bytes + t->offsets[r], t->offsets[r + 1] - t->offsets[r]);
        strbuf_printf(out, " %d\n", r);
    }
    strbuf_printf(out, "!special %s %d\n", TOK_SEP_NAME, t->n_regular);
    return out->oom ? -1 : 0;
}

int tok_save(const tokenizer *t, const char *path, tempo_error *err)
{
    strbuf sb = {0};
    if (tok_serialize(t, &sb)) {
        strbuf_free(&sb);
        return tempo_fail(err, "%s: out of memory", path);
    }
    int rc = file_write_atomic(path, sb.data, sb.len, err);
    strbuf_free(&sb);
    return rc;
}

/* Parse a decimal number with no sign, no leading zeros; -1 if not one or > limit. */
static long parse_decimal(const char *s, size_t n, long limit)
{
    if (n == 0 || n > 9 || (n > 1 && s[0] == '0'))
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v <= limit ? v : -1;
}

/* Check the special-token line (without its "\n"). */
static int parse_special(const char *l, size_t n, int n_tokens, const char *what, int line,
                         tempo_error *err)
{
    const char prefix[] = "!special " TOK_SEP_NAME " ";
    size_t pl = sizeof prefix - 1;
    if (n < pl || memcmp(l, prefix, pl) != 0)
        return tempo_fail(err, "%s:%d: expected \"!special %s %d\"", what, line, TOK_SEP_NAME, n_tokens);
    long id = parse_decimal(l + pl, n - pl, 10000000);
    if (id < 0)
        return tempo_fail(err, "%s:%d: bad special token id", what, line);
    if (id != n_tokens)
        return tempo_fail(err, "%s:%d: special token id %ld, expected %d (the number of regular tokens)",
                          what, line, id, n_tokens);
    return 0;
}

/* The regular tokens read so far, in rank order. */
typedef struct {
    uint8_t **tokens;
    size_t *lens;
    size_t n, cap;
} token_list;

/* A "<base64> <rank>" line (without its "\n"): the next token, appended to tl. */
static int parse_token_line(token_list *tl, const char *l, size_t ll, const char *what, int line, tempo_error *err)
{
    const char *sp = memchr(l, ' ', ll);
    if (!sp)
        return tempo_fail(err, "%s:%d: expected \"<base64> <rank>\"", what, line);
    size_t b64_len = (size_t)(sp - l);
    long rank = parse_decimal(sp + 1, ll - b64_len - 1, 10000000);
    if (rank < 0)
        return tempo_fail(err, "%s:%d: bad rank (expected \"<base64> <rank>\")", what, line);
    if ((size_t)rank != tl->n)
        return tempo_fail(err, "%s:%d: rank %ld out of order (expected %zu)", what, line, rank, tl->n);
    if (tl->n >= TOK_MAX_VOCAB)
        return tempo_fail(err, "%s:%d: more than %d regular tokens", what, line, TOK_MAX_VOCAB);
    if (tl->n == tl->cap) {
        tl->cap *= 2;
        uint8_t **t2 = realloc(tl->tokens, tl->cap * sizeof *t2);
        if (t2)
            tl->tokens = t2;
        size_t *l2 = t2 ? realloc(tl->lens, tl->cap * sizeof *l2) : NULL;
        if (l2)
            tl->lens = l2;
        if (!t2 || !l2)
            return tempo_fail(err, "%s: out of memory", what);
    }
    size_t n = tl->n;
    tl->tokens[n] = malloc(b64_len / 4 * 3 + 1);
    if (!tl->tokens[n])
        return tempo_fail(err, "%s: out of memory", what);
    long dl = b64_decode(l, b64_len, tl->tokens[n]);
    tl->lens[n] = dl < 0 ? 0 : (size_t)dl;
    tl->n++;
    if (dl < 0)
        return tempo_fail(err, "%s:%d: bad base64", what, line);
    return 0;
}

int tok_parse(tokenizer **out, const char *text, size_t len, const char *what, tempo_error *err)
{
    *out = NULL;
    token_list tl = {.cap = 1024};
    tl.tokens = malloc(tl.cap * sizeof *tl.tokens);
    tl.lens = malloc(tl.cap * sizeof *tl.lens);
    int rc = 0, line = 1, saw_special = 0;
    size_t pos = 0;
    if (!tl.tokens || !tl.lens) {
        rc = tempo_fail(err, "%s: out of memory", what);
        goto done;
    }
    while (pos < len) {
        const char *l = text + pos;
        const char *nl = memchr(l, '\n', len - pos);
        if (!nl) {
            rc = tempo_fail(err, "%s:%d: truncated (the last line has no newline)", what, line);
            goto done;
        }
        size_t ll = (size_t)(nl - l);
        pos += ll + 1;
        if (saw_special) {
            rc = tempo_fail(err, "%s:%d: unexpected line after the special token", what, line);
            goto done;
        }
        if (ll > 0 && l[0] == '!') {
            if (parse_special(l, ll, (int)tl.n, what, line, err)) {
                rc = -1;
                goto done;
            }
            saw_special = 1;
        } else if (parse_token_line(&tl, l, ll, what, line, err)) {
            rc = -1;
            goto done;
        }
        line++;
    }
    if (!saw_special) {
        rc = tempo_fail(err, "%s:%d: truncated (missing the \"!special %s %zu\" line)", what, line,
                        TOK_SEP_NAME, tl.n);
        goto done;
    }
    rc = build(out, (const uint8_t *const *)tl.tokens, tl.lens, (int)tl.n, what, 1, err);
done:
    for (size_t i = 0; i < tl.n; i++)
        free(tl.tokens[i]);
    free(tl.tokens);
    free(tl.lens);
    return rc;
}

int tok_load(tokenizer **out, const char *path, tempo_error *err)
{
    char *text;
    size_t len;
    *out = NULL;
    if (file_read_all(path, &text, &len, 64u << 20, err))
        return -1;
    int rc = tok_parse(out, text, len, path, err);
    free(text);
    return rc;
}

/* ---------- queries and decoding ---------- */

int tok_vocab_size(const tokenizer *t) { return t->n_regular + 1; }
int tok_n_regular(const tokenizer *t) { return t->n_regular; }
int32_t tok_sep_id(const tokenizer *t) { return t->n_regular; }

size_t tok_token_bytes(const tokenizer *t, int32_t id, const uint8_t **bytes)
{
    if (id < 0 || id > t->n_regular) {
        *bytes = NULL;
        return 0;
    }
    if (id == t->n_regular) {
        *bytes = (const uint8_t *)"";
        return 0;
    }
    *bytes = t->bytes + t->offsets[id];
    return t->offsets[id + 1] - t->offsets[id];
}

int tok_decode(const tokenizer *t, const int32_t *ids, size_t n, strbuf *out)
{
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id > t->n_regular)
            return -1;
        if (id == t->n_regular)
            continue;
        strbuf_append(out, (const char *)t->bytes + t->offsets[id], t->offsets[id + 1] - t->offsets[id]);
    }
    return out->oom ? -1 : 0;
}
