/* icl_prompt.c - rendering, encoding, span finding and truncation of one ICL
 * item (see icl_prompt.h). */
#include "eval/icl_prompt.h"

#include <stdlib.h>
#include <string.h>

void icl_seqs_free(icl_seqs *s)
{
    free(s->tokens);
    free(s->offset);
    free(s->start);
    free(s->end);
    strbuf_free(&s->text);
    free(s->ids);
    memset(s, 0, sizeof *s);
}

/* ---- Python str.strip ---- */

static int is_space_cp(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* The code point starting at s[i] (bytes available: n - i) and its length;
 * an invalid byte decodes as itself with length 1 (never white space). */
static uint32_t decode_at(const unsigned char *s, size_t i, size_t n, int *len)
{
    unsigned c = s[i];
    int l = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    if (i + (size_t)l > n)
        l = 1;
    uint32_t cp = l == 1 ? c : l == 2 ? (c & 0x1F) : l == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < l; k++)
        cp = cp << 6 | (s[i + k] & 0x3F);
    *len = l;
    return l == 1 && c >= 0x80 ? 0xFFFFFFFF : cp;
}

void icl_strip(const char *str, size_t n, size_t *a, size_t *b)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, j = n;
    int len;
    while (i < j && is_space_cp(decode_at(s, i, j, &len)))
        i += (size_t)len;
    while (j > i) {
        size_t k = j - 1; /* back to the start of the last code point */
        while (k > i && j - k < 4 && (s[k] & 0xC0) == 0x80)
            k--;
        uint32_t cp = decode_at(s, k, j, &len);
        if (k + (size_t)len != j || !is_space_cp(cp))
            break;
        j = k;
    }
    *a = i;
    *b = j;
}

/* ---- rendering ---- */

static void put(strbuf *b, const char *s)
{
    strbuf_append(b, s, strlen(s));
}

static void put_stripped(strbuf *b, const char *s)
{
    size_t a, e;
    icl_strip(s, strlen(s), &a, &e);
    strbuf_append(b, s + a, e - a);
}

/* The shots, each followed by a blank line. */
static void render_shots(strbuf *b, const icl_task_spec *t, const icl_item *items,
                         const int32_t *shots, int n_shots)
{
    for (int i = 0; i < n_shots; i++) {
        const icl_item *e = &items[shots[i]];
        if (t->type == ICL_MULTIPLE_CHOICE) {
            put(b, e->text);
            put(b, t->delimiter);
            put(b, e->options[e->gold]);
        } else if (t->type == ICL_SCHEMA) {
            put(b, e->options[e->gold]);
            put(b, t->delimiter);
            put(b, e->continuation);
        } else {
            put_stripped(b, e->text);
            put(b, t->delimiter);
            put(b, e->continuation);
        }
        put(b, "\n\n");
    }
}

/* Prompt j of the item (LM: j 0 = without the continuation, 1 = with). */
static void render(strbuf *b, const icl_task_spec *t, const icl_item *items, int idx,
                   const int32_t *shots, int n_shots, int j)
{
    const icl_item *it = &items[idx];
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
    render_shots(b, t, items, shots, n_shots);
    if (t->type == ICL_MULTIPLE_CHOICE) {
        put(b, it->text);
        put(b, t->delimiter);
        put(b, it->options[j]);
    } else if (t->type == ICL_SCHEMA) {
        put(b, it->options[j]);
        put(b, t->delimiter);
        put(b, it->continuation);
    } else {
        put_stripped(b, it->text);
        put(b, t->delimiter);
        if (j == 1)
            put(b, it->continuation);
    }
}

/* ---- sequences ---- */

static int reserve(icl_seqs *s, int n_seq, size_t n_tokens)
{
    if (n_seq > s->seq_cap) {
        int cap = n_seq < 8 ? 8 : n_seq;
        int *o = realloc(s->offset, sizeof(int) * (size_t)(cap + 1));
        if (o) s->offset = o;
        int *a = realloc(s->start, sizeof(int) * (size_t)cap);
        if (a) s->start = a;
        int *e = realloc(s->end, sizeof(int) * (size_t)cap);
        if (e) s->end = e;
        if (!o || !a || !e)
            return -1;
        s->seq_cap = cap;
    }
    if (n_tokens > s->tok_cap) {
        size_t cap = s->tok_cap ? s->tok_cap : 1024;
        while (cap < n_tokens)
            cap *= 2;
        int32_t *t = realloc(s->tokens, sizeof(int32_t) * cap);
        if (!t)
            return -1;
        s->tokens = t;
        s->tok_cap = cap;
    }
    return 0;
}

/* Append SEP + the encoding of s->text as sequence j. */
static int add_sequence(icl_seqs *s, int j, tok_encoder *enc, int32_t sep, tempo_error *err)
{
    if (s->text.oom)
        return tempo_fail(err, "icl: out of memory");
    s->n_ids = 0;
    if (tok_encoder_encode(enc, (const uint8_t *)(s->text.data ? s->text.data : ""), s->text.len,
                           &s->ids, &s->n_ids, &s->ids_cap, err))
        return -1;
    size_t at = (size_t)s->offset[j];
    if (s->n_ids + 1 > (size_t)1 << 30 || reserve(s, j + 1, at + s->n_ids + 1))
        return tempo_fail(err, "icl: out of memory");
    s->tokens[at] = sep;
    if (s->n_ids) /* an empty prompt: s->ids may still be NULL */
        memcpy(s->tokens + at + 1, s->ids, sizeof(int32_t) * s->n_ids);
    s->offset[j + 1] = (int)(at + 1 + s->n_ids);
    return 0;
}

static int seq_len(const icl_seqs *s, int j) { return s->offset[j + 1] - s->offset[j]; }

static int common_prefix(const icl_seqs *s)
{
    int p = seq_len(s, 0);
    for (int j = 1; j < s->n_seq; j++) {
        const int32_t *a = s->tokens + s->offset[0], *b = s->tokens + s->offset[j];
        int n = seq_len(s, j) < p ? seq_len(s, j) : p, k = 0;
        while (k < n && a[k] == b[k])
            k++;
        p = k;
    }
    return p;
}

static int common_suffix(const icl_seqs *s)
{
    int q = seq_len(s, 0);
    for (int j = 1; j < s->n_seq; j++) {
        const int32_t *a = s->tokens + s->offset[1], *b = s->tokens + s->offset[j + 1]; /* ends */
        int n = seq_len(s, j) < q ? seq_len(s, j) : q, k = 0;
        while (k < n && a[-1 - k] == b[-1 - k])
            k++;
        q = k;
    }
    return q;
}

/* Cut `crop` tokens after the separator from every sequence, in place. */
static void crop_all(icl_seqs *s, int crop)
{
    int w = 0;
    for (int j = 0; j < s->n_seq; j++) {
        int o = s->offset[j], n = seq_len(s, j);
        s->tokens[w] = s->tokens[o];
        memmove(s->tokens + w + 1, s->tokens + o + 1 + crop, sizeof(int32_t) * (size_t)(n - 1 - crop));
        s->offset[j] = w;
        s->start[j] -= crop;
        s->end[j] -= crop;
        w += n - crop;
    }
    s->offset[s->n_seq] = w;
}

int icl_build_item(const icl_task_spec *t, const icl_item *items, int idx, const int32_t *shots,
                   int n_shots, tok_encoder *enc, int32_t sep, int context, icl_seqs *s,
                   icl_skip *why, tempo_error *err)
{
    const icl_item *it = &items[idx];
    int n_prompts = t->type == ICL_LANGUAGE_MODELING ? 2 : it->n_options;
    if (reserve(s, n_prompts, 1))
        return tempo_fail(err, "icl: out of memory");
    s->offset[0] = 0;
    for (int j = 0; j < n_prompts; j++) {
        render(&s->text, t, items, idx, shots, n_shots, j);
        size_t a, b; /* strip the whole prompt */
        icl_strip(s->text.data ? s->text.data : "", s->text.len, &a, &b);
        if (a || b < s->text.len) {
            memmove(s->text.data, s->text.data + a, b - a);
            s->text.len = b - a;
            s->text.data[s->text.len] = '\0';
        }
        if (add_sequence(s, j, enc, sep, err))
            return -1;
    }
    s->n_seq = n_prompts;
    if (t->type == ICL_MULTIPLE_CHOICE) {
        int p = common_prefix(s);
        for (int j = 0; j < s->n_seq; j++) {
            s->start[j] = p;
            s->end[j] = seq_len(s, j);
        }
    } else if (t->type == ICL_SCHEMA) {
        int q = common_suffix(s);
        for (int j = 0; j < s->n_seq; j++) {
            s->end[j] = seq_len(s, j);
            s->start[j] = s->end[j] - q;
        }
    } else { /* keep only the prompt with the continuation */
        int p = common_prefix(s);
        int n0 = seq_len(s, 0), n1 = seq_len(s, 1);
        memmove(s->tokens, s->tokens + n0, sizeof(int32_t) * (size_t)n1);
        s->offset[1] = n1;
        s->n_seq = 1;
        s->start[0] = p;
        s->end[0] = n1;
    }
    int longest = 0;
    for (int j = 0; j < s->n_seq; j++) {
        if (s->start[j] < 1 || s->start[j] >= s->end[j]) {
            *why = ICL_SKIP_EMPTY;
            return 1;
        }
        longest = seq_len(s, j) > longest ? seq_len(s, j) : longest;
    }
    if (longest > context) {
        int crop = longest - context;
        for (int j = 0; j < s->n_seq; j++)
            if (s->start[j] - crop < 1) {
                *why = ICL_SKIP_TOO_LONG;
                return 1;
            }
        crop_all(s, crop);
    }
    return 0;
}
