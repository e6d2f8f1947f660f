/* pretokenize.c - the byte-class pre-splitter (rules in pretokenize.h). */
#include "data/pretokenize.h"

enum { C_LETTER, C_DIGIT, C_SPACE, C_NEWLINE, C_PUNCT };

static inline int byte_class(uint8_t c)
{
    if (c >= 0x80 || (uint8_t)((c | 0x20) - 'a') < 26)
        return C_LETTER;
    if ((uint8_t)(c - '0') < 10)
        return C_DIGIT;
    if (c == ' ' || c == '\t' || c == '\v' || c == '\f')
        return C_SPACE;
    if (c == '\n' || c == '\r')
        return C_NEWLINE;
    return C_PUNCT;
}

static inline uint8_t lower(uint8_t c) { return (uint8_t)(c | 0x20); }

/* Length of a contraction at s (s[0] == '\''), or 0. */
static size_t contraction(const uint8_t *s, size_t n)
{
    if (n >= 3) {
        uint8_t a = lower(s[1]), b = lower(s[2]);
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
            return 3;
    }
    if (n >= 2) {
        uint8_t a = lower(s[1]);
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return 2;
    }
    return 0;
}

size_t pretok_next(const uint8_t *s, size_t n)
{
    if (s[0] == '\'') {
        size_t c = contraction(s, n);
        if (c)
            return c;
    }
    size_t start = 0;
    int cls = byte_class(s[0]);
    if (s[0] == ' ' && n >= 2) {
        int next = byte_class(s[1]);
        if (next == C_LETTER || next == C_DIGIT || next == C_PUNCT) {
            start = 1;
            cls = next;
        }
    }
    size_t i = start;
    switch (cls) {
    case C_LETTER:
    case C_PUNCT:
    case C_NEWLINE:
        while (i < n && byte_class(s[i]) == cls)
            i++;
        return i;
    case C_DIGIT:
        while (i < n && i - start < 3 && byte_class(s[i]) == C_DIGIT)
            i++;
        return i;
    default: /* C_SPACE */
        while (i < n && byte_class(s[i]) == C_SPACE)
            i++;
        if (i >= 2 && i < n && s[i - 1] == ' ' && byte_class(s[i]) != C_NEWLINE)
            return i - 1;
        return i;
    }
}

size_t pretok_count(const uint8_t *s, size_t n)
{
    size_t count = 0;
    while (n) {
        size_t k = pretok_next(s, n);
        s += k;
        n -= k;
        count++;
    }
    return count;
}
