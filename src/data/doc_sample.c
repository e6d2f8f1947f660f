/* doc_sample.c - bottom-k document sample under a byte budget (see doc_sample.h):
 * a max-heap on (key, index) so the worst kept document is on top. */
#include "data/doc_sample.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t key, index;
    uint8_t *text;
    size_t len;
} sampled_doc;

struct doc_sampler {
    uint64_t budget, bytes;
    sampled_doc *docs;   /* max-heap on (key, index) until finish, then sorted by index */
    size_t n, cap;
};

static int after(const sampled_doc *a, const sampled_doc *b) /* a comes later in key order */
{
    return a->key != b->key ? a->key > b->key : a->index > b->index;
}

static void sift_up(sampled_doc *h, size_t i)
{
    sampled_doc v = h[i];
    while (i > 0 && after(&v, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static void sift_down(sampled_doc *h, size_t n, size_t i)
{
    sampled_doc v = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && after(&h[c + 1], &h[c]))
            c++;
        if (!after(&h[c], &v))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}

int doc_sampler_new(doc_sampler **out, uint64_t budget_bytes, tempo_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return tempo_fail(err, "tokenizer sample: out of memory");
    (*out)->budget = budget_bytes;
    return 0;
}

int doc_sampler_offer(doc_sampler *s, uint64_t key, uint64_t index, const uint8_t *text, size_t len,
                      tempo_error *err)
{
    sampled_doc d = {key, index, NULL, len};
    if (s->bytes >= s->budget && s->n && after(&d, &s->docs[0]))
        return 0; /* the sample is full and this one comes after all of it */
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 256;
        sampled_doc *p = realloc(s->docs, c * sizeof *p);
        if (!p)
            return tempo_fail(err, "tokenizer sample: out of memory");
        s->docs = p;
        s->cap = c;
    }
    d.text = malloc(len ? len : 1);
    if (!d.text)
        return tempo_fail(err, "tokenizer sample: out of memory (%zu-byte document)", len);
    memcpy(d.text, text, len);
    s->docs[s->n++] = d;
    sift_up(s->docs, s->n - 1);
    s->bytes += len;
    /* drop the worst while the rest still fills the budget */
    while (s->n > 1 && s->bytes - s->docs[0].len >= s->budget) {
        s->bytes -= s->docs[0].len;
        free(s->docs[0].text);
        s->docs[0] = s->docs[--s->n];
        sift_down(s->docs, s->n, 0);
    }
    return 0;
}

int doc_sampler_remove(doc_sampler *s, uint64_t index)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->docs[i].index != index)
            continue;
        s->bytes -= s->docs[i].len;
        free(s->docs[i].text);
        s->docs[i] = s->docs[--s->n];
        if (i < s->n) { /* restore the heap (harmless after finish: finish re-sorts) */
            sift_up(s->docs, i);
            sift_down(s->docs, s->n, i);
        }
        return 1;
    }
    return 0;
}

static int cmp_index(const void *a, const void *b)
{
    uint64_t x = ((const sampled_doc *)a)->index, y = ((const sampled_doc *)b)->index;
    return (x > y) - (x < y);
}

void doc_sampler_finish(doc_sampler *s)
{
    if (s->n > 1)
        qsort(s->docs, s->n, sizeof *s->docs, cmp_index);
}

size_t doc_sampler_count(const doc_sampler *s) { return s->n; }
uint64_t doc_sampler_bytes(const doc_sampler *s) { return s->bytes; }

const uint8_t *doc_sampler_doc(const doc_sampler *s, size_t i, size_t *len, uint64_t *index)
{
    *len = s->docs[i].len;
    if (index)
        *index = s->docs[i].index;
    return s->docs[i].text;
}

void doc_sampler_free(doc_sampler *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->docs[i].text);
    free(s->docs);
    free(s);
}
