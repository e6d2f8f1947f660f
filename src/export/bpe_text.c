/* bpe_text.c - byte <-> printable character mapping of byte-level BPE, and
 * merge lines (see bpe_text.h). */
#include "export/bpe_text.h"

/* GPT-2's bytes_to_unicode: bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF are
 * their own code point; the other 68 take U+0100.. in byte order. */
static int printable(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

static unsigned code_point(int byte)
{
    if (printable(byte))
        return (unsigned)byte;
    unsigned k = 0;
    for (int b = 0; b < byte; b++)
        k += !printable(b);
    return 256 + k;
}

void bpe_text_append(strbuf *out, const uint8_t *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned cp = code_point(bytes[i]);
        char u[2];
        if (cp < 0x80) {
            u[0] = (char)cp;
            strbuf_append(out, u, 1);
        } else { /* every code point here is < 0x800: two UTF-8 bytes */
            u[0] = (char)(0xC0 | (cp >> 6));
            u[1] = (char)(0x80 | (cp & 0x3F));
            strbuf_append(out, u, 2);
        }
    }
}

long bpe_text_to_bytes(const char *text, size_t len, uint8_t *out)
{
    const uint8_t *s = (const uint8_t *)text;
    long n = 0;
    for (size_t i = 0; i < len;) {
        unsigned cp;
        if (s[i] < 0x80)
            cp = s[i++];
        else if ((s[i] & 0xE0) == 0xC0 && i + 1 < len && (s[i + 1] & 0xC0) == 0x80) {
            cp = (unsigned)(s[i] & 0x1F) << 6 | (s[i + 1] & 0x3F);
            i += 2;
        } else
            return -1;
        int byte = -1;
        if (cp < 256 && printable((int)cp))
            byte = (int)cp;
        else if (cp >= 256)
            for (int b = 0, k = 0; b < 256; b++)
                if (!printable(b) && 256 + (unsigned)k++ == cp) {
                    byte = b;
                    break;
                }
        if (byte < 0)
            return -1;
        out[n++] = (uint8_t)byte;
    }
    return n;
}

int bpe_merge_text(const tokenizer *t, int32_t id, strbuf *out, tempo_error *err)
{
    int32_t l, r;
    if (tok_merge_parts(t, id, &l, &r) != 0)
        return tempo_fail(err, "tokenizer: token %d is not one merge of two lower-ranked tokens in BPE order, "
                               "so the vocabulary has no merge list", (int)id);
    const uint8_t *b;
    size_t n = tok_token_bytes(t, l, &b);
    bpe_text_append(out, b, n);
    strbuf_append(out, " ", 1);
    n = tok_token_bytes(t, r, &b);
    bpe_text_append(out, b, n);
    return 0;
}
